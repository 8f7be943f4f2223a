/*
 * The groups a query builds as it reads rows (stats.c, compare.c): an
 * open-addressing map from a 64-bit key to a non-zero 32-bit value (a
 * group's index + 1), at most half full, doubled as it fills.
 */
#ifndef QUERY_KEYMAP_H
#define QUERY_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

struct qkeymap {
	uint64_t *key;
	uint32_t *val; /* 0: an empty slot */
	size_t mask;   /* slots - 1; 0 before the first insertion */
	size_t n;
};

/* The value of key, 0 when it has none. */
uint32_t qkm_find(const struct qkeymap *m, uint64_t key);
/* The value of key, made val (non-zero) when it has none; 0 when out of
 * memory. */
uint32_t qkm_intern(struct qkeymap *m, uint64_t key, uint32_t val);
void qkm_free(struct qkeymap *m);

#endif
