/*
 * The tests' pseudo-random numbers: xorshift64 (Marsaglia), a fixed
 * sequence per seed, so a failing case comes back on every run.
 */
#ifndef TESTS_XORSHIFT_H
#define TESTS_XORSHIFT_H

#include <stdint.h>

/* The next number of the sequence in *state (never 0). */
static inline uint64_t xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
