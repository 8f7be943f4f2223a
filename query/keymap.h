/*
 * The groups a query builds as it reads rows (stats.c, compare.c): an
 * open-addressing map from a 64-bit key to a non-zero 32-bit value (a
 * group's index + 1), at most half full, doubled as it fills.
 */
#ifndef QUERY_KEYMAP_H
#define QUERY_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

/* A key and its value side by side: a probe touches one cache line. */
struct qkm_slot {
	uint64_t key;
	uint32_t val; /* 0: an empty slot */
};

struct qkeymap {
	struct qkm_slot *slot;
	size_t mask; /* slots - 1; 0 before the first insertion */
	size_t n;
};

/* The value of key, 0 when it has none. */
uint32_t qkm_find(const struct qkeymap *m, uint64_t key);
/* The value of key, made val (non-zero) when it has none; 0 when out of
 * memory. */
uint32_t qkm_intern(struct qkeymap *m, uint64_t key, uint32_t val);
static inline size_t qkm_hash(uint64_t key, size_t mask)
{
	key *= 0x9E3779B97F4A7C15ull;
	return (size_t)(key ^ key >> 29) & mask;
}

/* Starts loading the slot where a search for key begins. */
static inline void qkm_prefetch(const struct qkeymap *m, uint64_t key)
{
	if (m->mask != 0)
		__builtin_prefetch(&m->slot[qkm_hash(key, m->mask)]);
}

/* Frees the map's memory and leaves it empty, ready for use again. */
void qkm_free(struct qkeymap *m);

#endif
