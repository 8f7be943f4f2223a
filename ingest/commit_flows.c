/*
 * A growing trace's flows (commit_flows.h).
 */
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "commit_flows.h"
#include "write.h"

/* A slice an anchor names, or arrows waiting name. */
struct cmf_note {
	int64_t from_ts; /* where it ends (tracedb_flow_from_ts), once final */
	uint32_t refs;   /* anchors and arrows made that name it */
	int final;
};

void cmf_init(struct cm_flows *f)
{
	memset(f, 0, sizeof(*f));
	kmap_init(&f->noted);
	vec_init(&f->notes, sizeof(struct cmf_note));
	vec_init(&f->free, sizeof(uint32_t));
	vec_init(&f->made, sizeof(struct bflow));
	vec_init(&f->waiting, sizeof(struct bflow));
	vec_init(&f->bits, sizeof(uint64_t));
}

void cmf_fini(struct cm_flows *f)
{
	kmap_fini(&f->noted);
	vec_fini(&f->notes);
	vec_fini(&f->free);
	vec_fini(&f->made);
	vec_fini(&f->waiting);
	vec_fini(&f->bits);
}

int cmf_written(const struct cm_flows *f, uint64_t n)
{
	return n / 64 < f->bits.len && (*VEC_AT(&f->bits, uint64_t, n / 64) >> (n % 64) & 1);
}

/* Notes arrow n written; 0, or -1 when out of memory. */
static int mark_written(struct cm_flows *f, uint64_t n)
{
	uint64_t *w;

	while (f->bits.len <= n / 64) {
		if ((w = vec_push(&f->bits)) == NULL)
			return -1;
		*w = 0;
	}
	*VEC_AT(&f->bits, uint64_t, n / 64) |= UINT64_C(1) << (n % 64);
	return 0;
}

/* The note of slice r; NULL when it has none. */
static struct cmf_note *note_of(struct cm_flows *f, struct ss_ref r)
{
	struct kmap_entry *e;

	if (f->live == 0 || (e = kmap_find(&f->noted, r.group, r.ord, 0, 0)) == NULL || e->val == MDL_NONE)
		return NULL;
	return VEC_AT(&f->notes, struct cmf_note, e->val);
}

/* One name of r fewer: its note goes with the last. */
static void unref(struct cm_flows *f, struct ss_ref r)
{
	struct kmap_entry *e;
	uint32_t *slot;

	if (f->live == 0 || (e = kmap_find(&f->noted, r.group, r.ord, 0, 0)) == NULL || e->val == MDL_NONE)
		return;
	if (--VEC_AT(&f->notes, struct cmf_note, e->val)->refs > 0)
		return;
	if ((slot = vec_push(&f->free)) == NULL) {
		f->oom = 1;
		return;
	}
	*slot = e->val;
	e->val = MDL_NONE;
	f->live--;
	f->dead++;
}

void cmf_anchor(struct cm_flows *f, struct ss_ref r, int delta)
{
	struct kmap_entry *e;

	if (delta < 0) {
		unref(f, r);
		return;
	}
	if ((e = kmap_get(&f->noted, r.group, r.ord, 0, 0)) == NULL) {
		f->oom = 1;
		return;
	}
	if (e->val == MDL_NONE) {
		if (f->free.len > 0) {
			e->val = *VEC_AT(&f->free, uint32_t, --f->free.len);
		} else if (vec_push(&f->notes) != NULL) {
			e->val = (uint32_t)(f->notes.len - 1);
		} else {
			f->oom = 1;
			return;
		}
		*VEC_AT(&f->notes, struct cmf_note, e->val) = (struct cmf_note){ 0, 0, 0 };
		f->live++;
	}
	VEC_AT(&f->notes, struct cmf_note, e->val)->refs++;
}

void cmf_made(struct cm_flows *f, const struct bflow *a)
{
	struct bflow *m;

	cmf_anchor(f, a->from, 1); /* named by the arrow until it is written */
	if ((m = vec_push(&f->made)) == NULL) {
		f->oom = 1;
		return;
	}
	*m = *a;
}

void cmf_final(struct cm_flows *f, const struct ss_packed *j)
{
	struct cmf_note *n = j->s.anchored ? note_of(f, (struct ss_ref){ j->group, j->ord }) : NULL;

	if (n == NULL)
		return;
	n->final = 1;
	n->from_ts = tracedb_flow_from_ts(j->s.ts, j->s.dur);
	f->ended++;
}

/* Whether arrow a's from-slice is final: then a goes to ready, with its
 * from_ts, and no longer names it. */
static int take_if_final(struct cm_flows *f, struct vec *ready, const struct bflow *a)
{
	struct cmf_note *n = note_of(f, a->from);
	struct bflow *r;

	if (n == NULL || !n->final)
		return 0;
	if ((r = vec_push(ready)) == NULL) {
		f->oom = 1;
		return 0;
	}
	*r = *a;
	r->from_ts = n->from_ts;
	unref(f, a->from);
	return 1;
}

static int by_n(const void *x, const void *y)
{
	const struct bflow *a = x, *b = y;

	return a->n < b->n ? -1 : a->n > b->n;
}

int cmf_write(struct cm_flows *f, struct build *b)
{
	struct vec ready;
	struct bins fb;
	size_t i, k;
	int rc = 0;

	vec_init(&ready, sizeof(struct bflow));
	if (f->ended > 0) { /* the waiting whose from-slice became final */
		for (i = k = 0; i < f->waiting.len; i++) {
			const struct bflow *a = VEC_AT(&f->waiting, struct bflow, i);

			if (!take_if_final(f, &ready, a))
				*VEC_AT(&f->waiting, struct bflow, k++) = *a;
		}
		f->waiting.len = k;
		f->ended = 0;
	}
	for (i = 0; i < f->made.len; i++) {
		const struct bflow *a = VEC_AT(&f->made, struct bflow, i);
		struct bflow *w;

		if (take_if_final(f, &ready, a))
			continue;
		if ((w = vec_push(&f->waiting)) == NULL) {
			f->oom = 1;
			break;
		}
		*w = *a;
	}
	f->made.len = 0;
	if (f->dead > f->live) { /* the map's dropped entries go */
		kmap_prune(&f->noted);
		f->dead = 0;
	}
	if (f->oom) {
		vec_fini(&ready);
		b->oom = 1;
		return -1;
	}
	if (ready.len > 0) {
		qsort(ready.data, ready.len, sizeof(struct bflow), by_n);
		if (bins_init(&fb, b->s, "flows", 8) != 0) {
			vec_fini(&ready);
			return -1;
		}
		for (i = 0; i < ready.len; i++) {
			const struct bflow *a = VEC_AT(&ready, struct bflow, i);

			write_flow_row(&fb, b, a, 1);
			if (mark_written(f, a->n) != 0)
				f->oom = b->oom = 1;
		}
		rc = bins_fini(&fb);
		f->written += ready.len;
	}
	vec_fini(&ready);
	return rc;
}
