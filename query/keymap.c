/* An open-addressing map from 64-bit keys to group indexes (keymap.h). */
#include <stdlib.h>

#include "keymap.h"

static int qkm_grow(struct qkeymap *m)
{
	size_t slots = m->mask ? (m->mask + 1) * 2 : 256, i, j;
	struct qkm_slot *slot = calloc(slots, sizeof(*slot));

	if (slot == NULL)
		return -1;
	for (i = 0; m->mask && i <= m->mask; i++) {
		if (m->slot[i].val == 0)
			continue;
		for (j = qkm_hash(m->slot[i].key, slots - 1); slot[j].val; j = (j + 1) & (slots - 1))
			;
		slot[j] = m->slot[i];
	}
	qkm_free(m);
	m->slot = slot;
	m->mask = slots - 1;
	return 0;
}

uint32_t qkm_find(const struct qkeymap *m, uint64_t key)
{
	size_t j;

	if (m->mask == 0)
		return 0;
	for (j = qkm_hash(key, m->mask); m->slot[j].val; j = (j + 1) & m->mask)
		if (m->slot[j].key == key)
			return m->slot[j].val;
	return 0;
}

uint32_t qkm_intern(struct qkeymap *m, uint64_t key, uint32_t val)
{
	size_t j;

	if ((m->n + 1) * 2 > m->mask + 1 && qkm_grow(m) != 0)
		return 0;
	for (j = qkm_hash(key, m->mask); m->slot[j].val; j = (j + 1) & m->mask)
		if (m->slot[j].key == key)
			return m->slot[j].val;
	m->slot[j].key = key;
	m->slot[j].val = val;
	m->n++;
	return val;
}

void qkm_free(struct qkeymap *m)
{
	free(m->slot);
	m->slot = NULL;
}
