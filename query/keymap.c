/* An open-addressing map from 64-bit keys to group indexes (keymap.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "keymap.h"

enum { QKM_HUGE = 2 << 20 };

/* slots zeroed; a table of 2 MB or more on huge pages where the kernel
 * gives them (its probes are random: one TLB entry covers 2 MB, not 4 KB) */
static struct qkm_slot *qkm_slots(size_t slots)
{
	size_t bytes = slots * sizeof(struct qkm_slot);
	struct qkm_slot *slot;

	if (bytes < QKM_HUGE)
		return calloc(slots, sizeof(*slot));
	if ((slot = aligned_alloc(QKM_HUGE, bytes)) == NULL)
		return NULL;
	madvise(slot, bytes, MADV_HUGEPAGE);
	memset(slot, 0, bytes);
	return slot;
}

static int qkm_grow(struct qkeymap *m)
{
	size_t slots = m->mask ? (m->mask + 1) * 2 : 256, i, j;
	struct qkm_slot *slot = qkm_slots(slots);

	if (slot == NULL)
		return -1;
	for (i = 0; m->mask && i <= m->mask; i++) {
		if (m->slot[i].val == 0)
			continue;
		for (j = qkm_hash(m->slot[i].key, slots - 1); slot[j].val; j = (j + 1) & (slots - 1))
			;
		slot[j] = m->slot[i];
	}
	free(m->slot);
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
	*m = (struct qkeymap){ 0 };
}
