/*
 * Helpers shared by the fuzz targets (tests/fuzz_*.c): reporting a broken
 * property, hashing the input, and a seeded sequence for choosing chunk cuts.
 * The including file defines FZ_NAME (its name, for the report) first.
 */
#ifndef TESTS_FUZZ_UTIL_H
#define TESTS_FUZZ_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Reports a violated property and aborts, so that libFuzzer keeps the input. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs(FZ_NAME ": property violated: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* FNV-1a over n bytes. */
static inline uint64_t fz_hash(const uint8_t *p, size_t n)
{
	uint64_t h = UINT64_C(1469598103934665603);
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

/* splitmix64: the next number of the sequence seeded by *s. */
static inline uint64_t fz_next(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Where a target's scratch files go: $FUZZ_TMPDIR, else /dev/shm, else /tmp. */
static inline const char *fz_db_dir(void)
{
	const char *dir = getenv("FUZZ_TMPDIR");

	if (dir == NULL || *dir == '\0')
		dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	return dir;
}

/* The scratch file `what` of this process: fz_db_dir()/FZ_NAME.PID.what. */
static inline void fz_scratch_path(char *buf, size_t n, const char *what)
{
	snprintf(buf, n, "%s/" FZ_NAME ".%ld.%s", fz_db_dir(), (long)getpid(), what);
}

/* qsort order of size_t. */
static inline int fz_size_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

#endif
