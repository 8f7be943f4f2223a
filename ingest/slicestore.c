/*
 * The slice store (slicestore.h): slices packed per (track, depth) group as
 * varint deltas, and the name index's notes per name.
 */
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "slicestore.h"

enum { SLICE_MAX_BYTES = 7 * 10, NOTE_MAX_BYTES = 4 * 10 };

/* A slice finished before its turn, waiting for the ones before it. */
struct ss_early {
	uint32_t ord;
	struct ss_slice s;
};

/* Room for n more bytes, the first allocation of `first` bytes, doubling
 * from there; 0, or -1 when out of memory. */
static int bytes_room(struct ss_bytes *b, size_t n, size_t first)
{
	size_t cap;
	uint8_t *p;

	if (b->cap - b->len >= n)
		return 0;
	for (cap = b->cap ? b->cap : first; cap - b->len < n; cap *= 2)
		;
	if ((p = realloc(b->p, cap)) == NULL)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

void ss_init(struct slicestore *st)
{
	memset(st, 0, sizeof(*st));
	vec_init(&st->bigs, sizeof(struct ss_bytes));
	kmap_init(&st->map);
}

void ss_spill_to(struct slicestore *st, struct spill *sp, size_t budget)
{
	st->spill = sp;
	st->budget = budget;
}

void ss_extents(struct slicestore *st, uint64_t rows)
{
	st->ids.rows = rows;
	st->ids.next = 1;
}

/* Moves a stream's bytes in memory to the scratch file as its next segment. */
static int stream_spill(struct slicestore *st, struct ss_bytes *b)
{
	struct ss_seg *grown;

	if (b->len == 0)
		return 0;
	if (b->nsegs == b->capsegs) {
		size_t cap = b->capsegs ? 2 * b->capsegs : 4;

		if ((grown = realloc(b->segs, cap * sizeof(*grown))) == NULL) {
			st->oom = 1;
			return -1;
		}
		b->segs = grown;
		b->capsegs = cap;
	}
	if (spill_write(st->spill, b->p, b->len, &b->segs[b->nsegs].off) != 0)
		return -1;
	b->segs[b->nsegs++].len = b->len;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	return 0;
}

/* Past the budget, every stream's bytes go to the scratch file. */
static int spill_all(struct slicestore *st)
{
	size_t i;

	for (i = 0; i < st->ngroups; i++) {
		struct ss_group *g = ss_group(st, (uint32_t)i);

		if (!g->sealed && stream_spill(st, &g->data) != 0)
			return -1;
	}
	for (i = 0; i < st->bigs.len; i++)
		if (stream_spill(st, VEC_AT(&st->bigs, struct ss_bytes, i)) != 0)
			return -1;
	st->resident = 0;
	return 0;
}

/* Counts n more bytes in memory, spilling past the budget. Sealed bytes
 * count but cannot be spilled: at least an eighth of the budget goes at a
 * spill, however many of them there are. */
static int resident_add(struct slicestore *st, size_t n)
{
	st->resident += n;
	if (st->spill == NULL || st->resident <= st->budget / 8 ||
	    st->resident + __atomic_load_n(&st->sealed, __ATOMIC_RELAXED) <= st->budget)
		return 0;
	return spill_all(st);
}

void ss_fini(struct slicestore *st)
{
	size_t i;

	for (i = 0; i < st->ngroups; i++) {
		struct ss_group *g = ss_group(st, (uint32_t)i);

		free(g->data.p);
		free(g->data.segs);
		vec_fini(&g->early);
		idg_fini(&g->ids);
	}
	for (i = 0; i < st->nblocks; i++)
		free(st->blocks[i]);
	free(st->blocks);
	kmap_fini(&st->map);
	free(st->near);
	for (i = 0; i < st->bigs.len; i++) {
		struct ss_bytes *big = VEC_AT(&st->bigs, struct ss_bytes, i);

		free(big->p);
		free(big->segs);
	}
	vec_fini(&st->bigs);
	free(st->names);
	memset(st, 0, sizeof(*st));
}

enum { SS_NEAR_TRACKS = 4096, SS_NEAR_DEPTH = 32 };

/* The slot of (track, depth) in st->near, grown to hold it; NULL when it
 * is not near (or out of memory: the map answers then). */
static uint32_t *near_slot(struct slicestore *st, uint32_t track, uint32_t depth)
{
	size_t n;
	uint32_t *p;

	if (track >= SS_NEAR_TRACKS || depth >= SS_NEAR_DEPTH)
		return NULL;
	if (track >= st->near_tracks) {
		n = st->near_tracks ? st->near_tracks : 16;
		while (n <= track)
			n *= 2;
		if ((p = realloc(st->near, n * SS_NEAR_DEPTH * sizeof(*p))) == NULL)
			return NULL;
		memset(p + st->near_tracks * SS_NEAR_DEPTH, 0, (n - st->near_tracks) * SS_NEAR_DEPTH * sizeof(*p));
		st->near = p;
		st->near_tracks = n;
	}
	return &st->near[(size_t)track * SS_NEAR_DEPTH + depth];
}

/* A new group, zeroed, in its block; NULL when out of memory. */
static struct ss_group *group_new(struct slicestore *st)
{
	struct ss_group **grown;

	if (st->ngroups >= MDL_NONE - 1)
		return NULL;
	if (st->ngroups == st->nblocks * SS_BLOCK) {
		if ((grown = realloc(st->blocks, (st->nblocks + 1) * sizeof(*grown))) == NULL)
			return NULL;
		st->blocks = grown;
		if ((st->blocks[st->nblocks] = calloc(SS_BLOCK, sizeof(struct ss_group))) == NULL)
			return NULL;
		st->nblocks++;
	}
	return ss_group(st, st->ngroups++);
}

/* The group of (track, depth), made when new; MDL_NONE when out of memory. */
static uint32_t group_of(struct slicestore *st, uint32_t track, uint32_t depth)
{
	uint32_t *near = near_slot(st, track, depth);
	struct kmap_entry *e;
	struct ss_group *g;

	if (near != NULL && *near != 0)
		return *near - 1;
	if ((e = kmap_get(&st->map, track, depth, 0, 0)) == NULL)
		return MDL_NONE;
	if (e->val == MDL_NONE) {
		if ((g = group_new(st)) == NULL)
			return MDL_NONE;
		g->track = track;
		g->depth = depth;
		g->last.parent.group = MDL_NONE;
		vec_init(&g->early, sizeof(struct ss_early));
		idg_init(&g->ids);
		e->val = st->ngroups - 1;
	}
	if (near != NULL)
		*near = e->val + 1;
	return e->val;
}

struct ss_ref ss_new(struct slicestore *st, uint32_t track, uint32_t depth)
{
	struct ss_ref r = { MDL_NONE, 0 };
	uint32_t gi = group_of(st, track, depth);
	struct ss_group *g;

	if (gi == MDL_NONE) {
		st->oom = 1;
		return r;
	}
	g = ss_group(st, gi);
	if (g->count == MDL_NONE) {
		st->oom = 1; /* ids would run past what a ref holds */
		return r;
	}
	if (st->ids.rows != 0 && idg_take(&st->ids, &g->ids) == 0) {
		st->oom = 1;
		return r;
	}
	r.group = gi;
	r.ord = g->count++;
	st->count++;
	return r;
}

/* One note at o: the slice r, at ts (after a note at prev) for dur; its bytes. */
static size_t put_note(uint8_t *o, int64_t ts, int64_t prev, int64_t dur, struct ss_ref r)
{
	size_t k = 0;

	k += tracedb_put_varint(o + k, tracedb_zigzag((uint64_t)ts - (uint64_t)prev));
	k += tracedb_put_varint(o + k, (uint64_t)dur + 1);
	k += tracedb_put_varint(o + k, r.group);
	k += tracedb_put_varint(o + k, r.ord);
	return k;
}

/* Notes the slice r, named name, at ts for dur, under its name; 0, or -1
 * when out of memory (or the scratch file failed). */
static int note(struct slicestore *st, uint32_t name, int64_t ts, int64_t dur, struct ss_ref r)
{
	struct ss_name *n;
	struct ss_bytes *big;
	uint8_t buf[NOTE_MAX_BYTES];
	size_t k;

	if (name == MDL_NONE) /* no name to find it by */
		return 0;
	if (name >= st->nnames) {
		size_t cap = st->nnames ? st->nnames : 256;
		struct ss_name *grown;

		while (cap <= name)
			cap *= 2;
		if ((grown = realloc(st->names, cap * sizeof(*grown))) == NULL)
			goto out_oom;
		memset(grown + st->nnames, 0, (cap - st->nnames) * sizeof(*grown));
		st->names = grown;
		st->nnames = cap;
	}
	n = &st->names[name];
	if (!st->noted) {
		st->note_base = ts;
		st->noted = 1;
	}
	if (n->count == 0)
		n->ts = st->note_base;
	if (n->big != 0) { /* the common case once a name is used: straight into its stream */
		big = VEC_AT(&st->bigs, struct ss_bytes, n->big - 1);
		if (bytes_room(big, NOTE_MAX_BYTES, 32) != 0)
			goto out_oom;
		k = put_note(big->p + big->len, ts, n->ts, dur, r);
		big->len += k;
		n->ts = ts;
		n->count++;
		return resident_add(st, k);
	}
	k = put_note(buf, ts, n->ts, dur, r);
	n->ts = ts;
	n->count++;
	if (n->len + k <= sizeof(n->inl)) {
		memcpy(n->inl + n->len, buf, k);
		n->len = (uint8_t)(n->len + k);
		return 0;
	}
	/* outgrown: the notes so far move to a stream of their own */
	if (st->bigs.len >= UINT32_MAX - 1 || (big = vec_push(&st->bigs)) == NULL)
		goto out_oom;
	memset(big, 0, sizeof(*big));
	n->big = (uint32_t)st->bigs.len;
	if (bytes_room(big, n->len + k, 32) != 0)
		goto out_oom;
	memcpy(big->p, n->inl, n->len);
	memcpy(big->p + n->len, buf, k);
	big->len = n->len + k;
	k = big->len;
	n->len = 0;
	return resident_add(st, k);
out_oom:
	st->oom = 1;
	return -1;
}

/* Packs s after g's last slice; 0, or -1 when out of memory. */
static int pack(struct slicestore *st, uint32_t group, struct ss_group *g, const struct ss_slice *s)
{
	struct ss_slice *l = &g->last;
	uint8_t *o;
	size_t n;

	if (st->journal != NULL) {
		struct ss_packed *j = vec_push(st->journal);

		if (j == NULL) {
			st->oom = 1;
			return -1;
		}
		j->group = group;
		j->ord = g->packed;
		j->s = *s;
	}

	if (bytes_room(&g->data, SLICE_MAX_BYTES, 64) != 0) {
		st->oom = 1;
		return -1;
	}
	o = g->data.p + g->data.len;
	o += tracedb_put_varint(o, tracedb_zigzag((uint64_t)s->ts - (uint64_t)l->ts));
	o += tracedb_put_varint(o, (uint64_t)s->dur + 1);
	o += tracedb_put_varint(o, s->name);
	o += tracedb_put_varint(o, s->cat);
	if (s->set == 0) {
		*o++ = 0;
	} else {
		o += tracedb_put_varint(o, tracedb_zigzag((uint64_t)s->set - l->set) + 1);
		l->set = s->set;
	}
	if (s->parent.group == MDL_NONE) {
		*o++ = 0;
	} else {
		o += tracedb_put_varint(o, tracedb_zigzag((uint64_t)s->parent.group - l->parent.group) + 1);
		o += tracedb_put_varint(o, tracedb_zigzag((uint64_t)s->parent.ord - l->parent.ord));
		l->parent = s->parent;
	}
	l->ts = s->ts;
	n = (size_t)(o - g->data.p) - g->data.len;
	g->data.len += n;
	g->packed++;
	return resident_add(st, n);
}

int ss_finish(struct slicestore *st, struct ss_ref r, const struct ss_slice *s)
{
	struct ss_group *g = ss_group(st, r.group);
	struct ss_early *e;
	size_t i;

	if (note(st, s->name, s->ts, s->dur, r) != 0)
		return -1;
	if (r.ord != g->packed) {
		/* keep the early ones sorted by ordinal: they are few */
		if ((e = vec_push(&g->early)) == NULL)
			goto out_oom;
		e = g->early.data;
		for (i = g->early.len - 1; i > 0 && e[i - 1].ord > r.ord; i--)
			e[i] = e[i - 1];
		e[i].ord = r.ord;
		e[i].s = *s;
		return 0;
	}
	/* packing may spill every stream: g's bytes among them */
	if (pack(st, r.group, g, s) != 0)
		goto out_fail;
	e = g->early.data;
	for (i = 0; i < g->early.len && e[i].ord == g->packed; i++)
		if (pack(st, r.group, g, &e[i].s) != 0)
			goto out_fail;
	if (i > 0) {
		memmove(e, e + i, (g->early.len - i) * sizeof(*e));
		g->early.len -= i;
	}
	return 0;
out_oom:
	st->oom = 1;
out_fail:
	return -1;
}

/* A group's place in cluster order; sorted without a pointer to the store,
 * which two ingests running at once would share if it were a global. */
struct group_key {
	uint32_t track, depth, group;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group_key *x = a, *y = b;

	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

uint32_t *ss_order(struct slicestore *st, size_t from, uint64_t *next_id)
{
	size_t i, n = st->ngroups - from;
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
	struct group_key *keys = malloc((n ? n : 1) * sizeof(*keys));

	if (order == NULL || keys == NULL) {
		free(order);
		free(keys);
		st->oom = 1;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const struct ss_group *g = ss_group(st, (uint32_t)(from + i));

		if (g->packed != g->count || g->early.len != 0) {
			free(order);
			free(keys);
			return NULL;
		}
		keys[i] = (struct group_key){ g->track, g->depth, (uint32_t)(from + i) };
	}
	qsort(keys, n, sizeof(*keys), group_cmp);
	for (i = 0; i < n; i++)
		order[i] = keys[i].group;
	free(keys);
	for (i = 0; i < n && st->ids.rows == 0; i++) {
		struct ss_group *g = ss_group(st, order[i]);

		g->first_id = *next_id;
		*next_id += g->count;
	}
	return order;
}

static void reader_open(struct ss_reader *rd, const struct slicestore *st, const struct ss_bytes *b)
{
	memset(rd, 0, sizeof(*rd));
	rd->b = b;
	rd->spill = st->spill;
	rd->last.parent.group = MDL_NONE;
}

/* Moves to the stream's next piece with bytes left: 1, or 0 at its end or
 * on a failed read (rd->failed). */
static int reader_more(struct ss_reader *rd)
{
	const struct ss_bytes *b = rd->b;

	while (rd->p >= rd->end) {
		if (b == NULL || rd->failed) {
			return 0;
		} else if (rd->seg < b->nsegs) {
			const struct ss_seg *sg = &b->segs[rd->seg++];

			if (sg->len > rd->bufcap) {
				uint8_t *grown = realloc(rd->buf, sg->len);

				if (grown == NULL) {
					rd->failed = 1;
					return 0;
				}
				rd->buf = grown;
				rd->bufcap = sg->len;
			}
			if (rd->why != NULL ? spill_read_apart(rd->spill, rd->buf, sg->len, sg->off, rd->why, rd->whylen) != 0
					    : spill_read(rd->spill, rd->buf, sg->len, sg->off) != 0) {
				rd->failed = 1;
				return 0;
			}
			rd->p = rd->buf;
			rd->end = rd->buf + sg->len;
		} else if (!rd->tail) {
			rd->tail = 1;
			rd->p = b->p;
			rd->end = b->p + b->len;
		} else {
			return 0;
		}
	}
	return 1;
}

void ss_read_done(struct ss_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	rd->bufcap = 0;
}

void ss_read_group(struct ss_reader *rd, const struct slicestore *st, const struct ss_group *g)
{
	reader_open(rd, st, &g->data);
}

void ss_read_group_apart(struct ss_reader *rd, const struct slicestore *st, const struct ss_group *g, char *why,
			 size_t whylen)
{
	reader_open(rd, st, &g->data);
	rd->why = why;
	rd->whylen = whylen;
}

int ss_read(struct ss_reader *rd, struct ss_slice *s)
{
	struct ss_slice *l = &rd->last;
	uint64_t v[6];

	if (!reader_more(rd))
		return 0;
	if (tracedb_get_varint(&rd->p, rd->end, &v[0]) != 0 || tracedb_get_varint(&rd->p, rd->end, &v[1]) != 0 ||
	    tracedb_get_varint(&rd->p, rd->end, &v[2]) != 0 || tracedb_get_varint(&rd->p, rd->end, &v[3]) != 0 ||
	    tracedb_get_varint(&rd->p, rd->end, &v[4]) != 0 || tracedb_get_varint(&rd->p, rd->end, &v[5]) != 0)
		return 0;
	s->ts = l->ts = (int64_t)((uint64_t)l->ts + tracedb_unzigzag(v[0]));
	s->dur = (int64_t)(v[1] - 1);
	s->name = (uint32_t)v[2];
	s->cat = (uint32_t)v[3];
	s->set = v[4] == 0 ? 0 : (l->set = (uint32_t)(l->set + tracedb_unzigzag(v[4] - 1)));
	s->anchored = 0;
	if (v[5] == 0) {
		s->parent.group = MDL_NONE;
		s->parent.ord = 0;
		return 1;
	}
	if (tracedb_get_varint(&rd->p, rd->end, &v[0]) != 0)
		return 0;
	l->parent.group = (uint32_t)(l->parent.group + tracedb_unzigzag(v[5] - 1));
	l->parent.ord = (uint32_t)(l->parent.ord + tracedb_unzigzag(v[0]));
	s->parent = l->parent;
	return 1;
}

void ss_drop(struct slicestore *st, struct ss_group *g)
{
	if (g->sealed)
		__atomic_sub_fetch(&st->sealed, g->data.len, __ATOMIC_RELAXED);
	else if (st->resident >= g->data.len)
		st->resident -= g->data.len;
	free(g->data.p);
	free(g->data.segs);
	memset(&g->data, 0, sizeof(g->data));
}

void ss_seal(struct slicestore *st, uint32_t group)
{
	struct ss_group *g = ss_group(st, group);

	if (st->resident >= g->data.len)
		st->resident -= g->data.len;
	__atomic_add_fetch(&st->sealed, g->data.len, __ATOMIC_RELAXED);
	g->sealed = 1;
}

void ss_read_name(struct ss_reader *rd, const struct slicestore *st, uint32_t name)
{
	const struct ss_name *n = name < st->nnames ? &st->names[name] : NULL;

	reader_open(rd, st, n != NULL && n->big ? VEC_AT(&st->bigs, struct ss_bytes, n->big - 1) : NULL);
	if (n != NULL && n->big == 0) { /* the notes in the entry: the reader's only piece */
		rd->p = n->inl;
		rd->end = n->inl + n->len;
	}
	rd->last.ts = st->note_base;
}

int ss_read_note(struct ss_reader *rd, int64_t *ts, int64_t *dur, struct ss_ref *r)
{
	uint64_t d, u, g, o;

	if (!reader_more(rd) || tracedb_get_varint(&rd->p, rd->end, &d) != 0 ||
	    tracedb_get_varint(&rd->p, rd->end, &u) != 0 || tracedb_get_varint(&rd->p, rd->end, &g) != 0 ||
	    tracedb_get_varint(&rd->p, rd->end, &o) != 0)
		return 0;
	*ts = rd->last.ts = (int64_t)((uint64_t)rd->last.ts + tracedb_unzigzag(d));
	*dur = (int64_t)(u - 1);
	r->group = (uint32_t)g;
	r->ord = (uint32_t)o;
	return 1;
}
