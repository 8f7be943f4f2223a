/* An open-addressing map from 64-bit keys to group indexes (keymap.h). */
#include <stdlib.h>

#include "keymap.h"

static size_t qkm_hash(uint64_t key, size_t mask)
{
	key *= 0x9E3779B97F4A7C15ull;
	return (size_t)(key ^ key >> 29) & mask;
}

static int qkm_grow(struct qkeymap *m)
{
	size_t slots = m->mask ? (m->mask + 1) * 2 : 256, i, j;
	uint64_t *key = malloc(slots * sizeof(*key));
	uint32_t *val = calloc(slots, sizeof(*val));

	if (key == NULL || val == NULL) {
		free(key);
		free(val);
		return -1;
	}
	for (i = 0; m->mask && i <= m->mask; i++) {
		if (m->val[i] == 0)
			continue;
		for (j = qkm_hash(m->key[i], slots - 1); val[j]; j = (j + 1) & (slots - 1))
			;
		key[j] = m->key[i];
		val[j] = m->val[i];
	}
	qkm_free(m);
	m->key = key;
	m->val = val;
	m->mask = slots - 1;
	return 0;
}

uint32_t qkm_find(const struct qkeymap *m, uint64_t key)
{
	size_t j;

	if (m->mask == 0)
		return 0;
	for (j = qkm_hash(key, m->mask); m->val[j]; j = (j + 1) & m->mask)
		if (m->key[j] == key)
			return m->val[j];
	return 0;
}

uint32_t qkm_intern(struct qkeymap *m, uint64_t key, uint32_t val)
{
	size_t j;

	if ((m->n + 1) * 2 > m->mask + 1 && qkm_grow(m) != 0)
		return 0;
	for (j = qkm_hash(key, m->mask); m->val[j]; j = (j + 1) & m->mask)
		if (m->key[j] == key)
			return m->val[j];
	m->key[j] = key;
	m->val[j] = val;
	m->n++;
	return val;
}

void qkm_free(struct qkeymap *m)
{
	free(m->key);
	free(m->val);
	m->key = NULL;
	m->val = NULL;
}
