/*
 * Level of detail: the lod table's mipmaps (schema/trace.sql), built for
 * one group (a (track, depth) of slices, a counter track's points, a cpu's
 * runs) in commits, as its items arrive.
 *
 * For a group's items sorted by time, level L groups the items by bucket
 * ts >> L, for L = 10 (about 1 us), 12, 14 ... A bucket of two or more
 * items is stored as one summary record (tracedb.h), up to LOD_CHUNK
 * records to a row in bucket order.
 *
 * Which levels are stored (the rule): with n items, P the greatest power
 * of two at or below n (P >= 2; none below 2 items), a level is stored
 * when, among the first P items, it has at most half the groups of the
 * last level stored (the raw items count as level 0), looking no further
 * than the first level that holds all P items in one group. So the set is
 * decided when the count reaches 2, 4, 8 ... and kept until it doubles,
 * whatever the commits were: a reader at level L uses the finest stored
 * level at or below L, which then held at most twice the groups L would
 * over the first P items. The items past P may space otherwise, so the
 * bound a rule over all n items would give (no more summaries than items)
 * holds for the first P only; a level stored still holds at most n / 2
 * records (make bench's lod rows kept their size). Neighbouring items
 * share a bucket of level L exactly when the highest bit in which their
 * ts differ is below L, so counting, per bit, the neighbours that differ
 * first there (bounds[], O(1) to keep up as items come) gives every
 * level's count of groups at once (levels_of()).
 *
 * The build keeps, per stored level, the aggregate of the items settled
 * so far (all but the last item, which a later commit may replace) in the
 * level's last bucket that no finer stored level holds (tail): settling
 * an item merges it into the finest level's tail, or closes that tail
 * and passes it up, each coarser level closing its own when the item
 * leaves its bucket too. A closed bucket's record is final; it joins the
 * level's last row, which holds up to LOD_CHUNK - 1 final records and is
 * written out whole once full. At the end of a commit each level's last
 * row is its final records plus at most one record still open (the
 * tails up to the level, with the last item when in their bucket), and is
 * handed to the sink only when it changed. When the set changes at a
 * doubling, the rows of a level that left are dropped and the stored
 * levels are made again from item 0 (fetched through the sink), handing
 * out only the rows not in the sink already; levels that stayed come out
 * the same, record for record, since records depend on the items alone.
 * A doubling to n costs at most one pass over n items: O(1) per item over
 * the group's life, however its commits fall.
 * Levels finer than the items' spacing, which would merge nothing, are
 * not stored and cost nothing.
 *
 * The batch (lod_build) is one commit of every item: the same code and
 * so the same rows, which go to the staged lod table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lod.h"

/* The aggregate of consecutive items [first, last] of one bucket, with
 * what a record takes of its first, last and longest item. */
struct lod_group {
	uint64_t first, last;    /* item ordinals */
	int64_t start, end;      /* first ts, greatest end */
	uint64_t longest;        /* ordinal of the longest item; the first of them wins a tie */
	int64_t longest_dur;     /* its end - ts */
	uint64_t longest_names;  /* its name | cat << 32 */
	uint64_t first_names;    /* the first item's name | cat << 32 */
	int open;                /* an item never ended */
	int all_int;             /* counters: every value is an int */
	int first_int, last_int; /* counters: the first, the last value is an int */
	double min, max;         /* counters */
	int64_t imin, imax;      /* counters, exact while every value is an int */
	int64_t last_ts;         /* counters */
	uint64_t first_value, last_value; /* counters: int64 or double bits */
};

/* One stored level of a group. */
struct lod_level {
	int level;
	int has_tail;
	struct lod_group tail;   /* see the top of this file; in the bucket of the last item settled */
	uint64_t (*recs)[LOD_WORDS]; /* the last row's final records, m of them, and room for one more */
	int m;                   /* < LOD_CHUNK: a full row is written out at once */
	int cap;                 /* records recs has room for, up to LOD_CHUNK */
	uint64_t rows;           /* full rows made, since the level was last made from item 0 */
	uint64_t rows_put;       /* full rows in the sink: rows below it are not handed out again */
	int put;                 /* the last row is in the sink: the following four say as what */
	int put_m;               /* its final records */
	int put_virt;            /* whether an open record followed them */
	int64_t put_first;       /* its first bucket */
	uint64_t put_rec[LOD_WORDS]; /* that open record */
};

static uint64_t dbl_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static uint64_t name_cat(const struct lod_item *x)
{
	return (uint64_t)x->name | (uint64_t)x->cat << 32;
}

static uint64_t value_bits(const struct lod_item *x)
{
	return x->is_int ? (uint64_t)x->ivalue : dbl_bits(x->value);
}

static void group_from_item(struct lod_group *g, const struct lod_item *x, uint64_t i)
{
	g->first = g->last = g->longest = i;
	g->start = x->ts;
	g->end = x->end;
	g->longest_dur = x->end - x->ts;
	g->longest_names = g->first_names = name_cat(x);
	g->open = x->open;
	g->all_int = g->first_int = g->last_int = x->is_int;
	g->min = g->max = x->value;
	g->imin = g->imax = x->ivalue;
	g->last_ts = x->ts;
	g->first_value = g->last_value = value_bits(x);
}

/* Adds item i, just after g's items, to g; only what the records of
 * slices (counters: of points) take. */
static void group_add_item(struct lod_group *g, const struct lod_item *x, uint64_t i, int counters)
{
	g->last = i;
	if (!counters) {
		g->open |= x->open;
		if (x->end > g->end)
			g->end = x->end;
		if (x->end - x->ts > g->longest_dur) {
			g->longest = i;
			g->longest_dur = x->end - x->ts;
			g->longest_names = name_cat(x);
		}
		return;
	}
	if (x->ivalue < g->imin)
		g->imin = x->ivalue;
	if (x->ivalue > g->imax)
		g->imax = x->ivalue;
	g->all_int &= x->is_int;
	if (x->value < g->min)
		g->min = x->value;
	if (x->value > g->max)
		g->max = x->value;
	g->last_int = x->is_int;
	g->last_ts = x->ts;
	g->last_value = value_bits(x);
}

/* Adds h, the items just after g's, to g; as group_add_item. */
static void group_merge(struct lod_group *g, const struct lod_group *h, int counters)
{
	g->last = h->last;
	if (!counters) {
		g->open |= h->open;
		if (h->end > g->end)
			g->end = h->end;
		if (h->longest_dur > g->longest_dur) {
			g->longest = h->longest;
			g->longest_dur = h->longest_dur;
			g->longest_names = h->longest_names;
		}
		return;
	}
	if (h->imin < g->imin)
		g->imin = h->imin;
	if (h->imax > g->imax)
		g->imax = h->imax;
	g->all_int &= h->all_int;
	if (h->min < g->min)
		g->min = h->min;
	if (h->max > g->max)
		g->max = h->max;
	g->last_int = h->last_int;
	g->last_ts = h->last_ts;
	g->last_value = h->last_value;
}

/* The record of g at level `level`; the layout is in tracedb/tracedb.h. */
static void group_record(const struct lod_group *g, int level, int counters, uint64_t v[LOD_WORDS])
{
	v[LODW_BUCKET] = (uint64_t)(g->start >> level);
	v[LODW_FIRST] = g->first;
	v[LODW_LAST] = g->last;
	v[LODW_START] = (uint64_t)g->start;
	if (counters) {
		v[LODW_LAST_TS] = (uint64_t)g->last_ts;
		v[LODW_MIN] = g->all_int ? (uint64_t)g->imin : dbl_bits(g->min);
		v[LODW_MAX] = g->all_int ? (uint64_t)g->imax : dbl_bits(g->max);
		v[LODW_LAST_VALUE] = g->last_value;
		v[LODW_INT_FLAGS] = (uint64_t)(g->last_int != 0) | (uint64_t)(g->first_int != 0) << 1 |
				    (uint64_t)(g->all_int != 0) << 2;
		v[LODW_FIRST_VALUE] = g->first_value;
	} else {
		v[LODW_END] = (uint64_t)g->end;
		v[LODW_LONGEST] = g->longest;
		v[LODW_OPEN] = (uint64_t)g->open;
		v[LODW_LONGEST_DUR] = (uint64_t)g->longest_dur;
		v[LODW_NAMES] = g->longest_names;
		v[LODW_FIRST_NAMES] = g->first_names;
	}
}

/* Room in l->recs for `need` records; 0, or -1 when out of memory. */
static int level_room(struct lod_level *l, int need)
{
	uint64_t(*grown)[LOD_WORDS];
	int cap = l->cap ? l->cap : 8;

	if (need <= l->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > LOD_CHUNK)
		cap = LOD_CHUNK;
	if ((grown = realloc(l->recs, (size_t)cap * sizeof(*grown))) == NULL)
		return -1;
	l->recs = grown;
	l->cap = cap;
	return 0;
}

/* Packs records v[0 .. n) of level l into a row and hands it to the sink. */
static int row_put(const struct lod_state *st, const struct lod_level *l, const uint64_t (*v)[LOD_WORDS], int n,
		   const struct lod_sink *sk)
{
	size_t cap = tracedb_lod_bound((size_t)n), len;
	uint8_t *blob = malloc(cap);

	if (blob == NULL || (len = tracedb_lod_pack(blob, cap, l->level, v, (size_t)n)) == 0) {
		free(blob);
		return -1;
	}
	return sk->put(sk->ctx, &st->key, l->level, (int64_t)v[0][LODW_BUCKET], (int64_t)v[n - 1][LODW_BUCKET], blob,
		       len);
}

/* The sink's last row of l, when it starts at another bucket than the row
 * about to take its place (first), goes: the row's first record vanished
 * when the last item moved or was settled apart. */
static int row_unput(const struct lod_state *st, const struct lod_level *l, int64_t first, const struct lod_sink *sk)
{
	if (!l->put || l->put_first == first)
		return 0;
	return sk->drop(sk->ctx, &st->key, l->level, l->put_first);
}

/* l's last row is full: it goes to the sink, unless the sink has it
 * already (l made again from item 0, or the row was put with its last
 * record open and that record closed as it was), and a new row starts. */
static int row_full(const struct lod_state *st, struct lod_level *l, const struct lod_sink *sk)
{
	int64_t first = (int64_t)l->recs[0][LODW_BUCKET];
	int rc = 0;

	l->m = 0;
	if (l->rows++ < l->rows_put)
		return 0;
	if (!(l->put && l->put_first == first && l->put_m == LOD_CHUNK - 1 && l->put_virt &&
	      memcmp(l->put_rec, l->recs[LOD_CHUNK - 1], sizeof(l->put_rec)) == 0) &&
	    (row_unput(st, l, first, sk) != 0 ||
	     row_put(st, l, (const uint64_t(*)[LOD_WORDS])l->recs, LOD_CHUNK, sk) != 0))
		rc = -1;
	l->put = 0;
	l->rows_put = l->rows;
	return rc;
}

/* A bucket of l closed with g: its record, if it holds two items or more,
 * is final and joins l's last row. */
static int level_close(const struct lod_state *st, struct lod_level *l, const struct lod_group *g,
		       const struct lod_sink *sk)
{
	if (g->last == g->first)
		return 0;
	if (level_room(l, l->m + 1) != 0)
		return -1;
	group_record(g, l->level, st->counters, l->recs[l->m++]);
	return l->m == LOD_CHUNK ? row_full(st, l, sk) : 0;
}

/*
 * Settles item i (x), the one after the last settled: it joins the finest
 * level's tail, or that tail closes and goes up, merged into the next
 * level's, which closes in turn when x leaves its bucket too (top of file).
 */
static int settle(const struct lod_state *st, const struct lod_item *x, uint64_t i, const struct lod_sink *sk)
{
	struct lod_level *l = st->lv;
	struct lod_group c;
	int j;

	if (l->has_tail && l->tail.start >> l->level == x->ts >> l->level) {
		group_add_item(&l->tail, x, i, st->counters);
		return 0;
	}
	c = l->tail;
	group_from_item(&l->tail, x, i);
	if (!l->has_tail) {
		l->has_tail = 1; /* the first item settled: every tail was empty */
		return 0;
	}
	if (level_close(st, l, &c, sk) != 0)
		return -1;
	for (j = 1; j < st->nlv; j++) {
		l = &st->lv[j];
		if (l->has_tail)
			group_merge(&l->tail, &c, st->counters);
		else
			l->tail = c;
		l->has_tail = 1;
		if (l->tail.start >> l->level == x->ts >> l->level)
			return 0;
		c = l->tail;
		l->has_tail = 0;
		if (level_close(st, l, &c, sk) != 0)
			return -1;
	}
	return 0;
}

/* Settles items first .. first + n - 1, at p. */
static int settle_run(const struct lod_state *st, const struct lod_item *p, uint64_t first, size_t n,
		      const struct lod_sink *sk)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (settle(st, &p[k], first + k, sk) != 0)
			return -1;
	return 0;
}

/*
 * The end of a commit: l's last row, its final records and the record of
 * the bucket still open (tails, the items settled in l's last bucket, all
 * in v or NULL, with the last item when in that bucket), is handed to the
 * sink when it is not there as it is.
 */
static int row_out(const struct lod_state *st, struct lod_level *l, const struct lod_group *v,
		   const struct lod_sink *sk)
{
	struct lod_group w;
	int virt = 0;
	int64_t first;

	if (level_room(l, l->m + 1) != 0)
		return -1;
	if (v != NULL) {
		w = *v;
		if (w.start >> l->level == st->last.ts >> l->level)
			group_add_item(&w, &st->last, st->n - 1, st->counters);
		if (w.last != w.first) {
			group_record(&w, l->level, st->counters, l->recs[l->m]);
			virt = 1;
		}
	}
	if (l->m + virt == 0) {
		if (l->put && sk->drop(sk->ctx, &st->key, l->level, l->put_first) != 0)
			return -1;
		l->put = 0;
		return 0;
	}
	first = (int64_t)l->recs[0][LODW_BUCKET];
	if (l->put && l->put_first == first && l->put_m == l->m && l->put_virt == virt &&
	    (!virt || memcmp(l->put_rec, l->recs[l->m], sizeof(l->put_rec)) == 0))
		return 0; /* as in the sink */
	if (row_unput(st, l, first, sk) != 0 ||
	    row_put(st, l, (const uint64_t(*)[LOD_WORDS])l->recs, l->m + virt, sk) != 0)
		return -1;
	l->put = 1;
	l->put_first = first;
	l->put_m = l->m;
	l->put_virt = virt;
	if (virt)
		memcpy(l->put_rec, l->recs[l->m], sizeof(l->put_rec));
	return 0;
}

/* Every stored level's last row, at the end of a commit. */
static int rows_out(struct lod_state *st, const struct lod_sink *sk)
{
	struct lod_group v, t;
	int j, has_v = 0;

	for (j = 0; j < st->nlv; j++) {
		struct lod_level *l = &st->lv[j];

		if (l->has_tail) { /* v: the tails up to l, in item order */
			t = l->tail;
			if (has_v)
				group_merge(&t, &v, st->counters);
			v = t;
			has_v = 1;
		}
		if (row_out(st, l, has_v ? &v : NULL, sk) != 0)
			return -1;
	}
	return 0;
}

/*
 * The levels to store (bit L for level L) for the first n items, whose
 * neighbours differ first in bit b bounds[b] times: those neighbours fall
 * in different buckets at every level up to b, so level L has 1 + (the
 * bounds at bits L and up) groups.
 */
static uint64_t levels_of(const uint64_t bounds[64], uint64_t n)
{
	uint64_t set = 0, above = 0, stored = n, groups;
	int level, b;

	for (b = 63; b >= LOD_MIN_LEVEL; b--)
		above += bounds[b];
	/* at each level, whether to go on is decided by the level before (the
	 * first: by itself), and a level with one group is the last looked at */
	for (level = LOD_MIN_LEVEL, groups = 1 + above; level <= LOD_MAX_LEVEL && groups > 1; level += LOD_STEP) {
		for (b = level - LOD_STEP; b < level && level > LOD_MIN_LEVEL; b++)
			above -= bounds[b];
		groups = 1 + above;
		if (groups * 2 > stored)
			continue;
		stored = groups;
		set |= UINT64_C(1) << level;
	}
	return set;
}

static void bound(uint64_t bounds[64], int64_t a, int64_t b, uint64_t add)
{
	uint64_t d = (uint64_t)a ^ (uint64_t)b;

	if (d != 0)
		bounds[63 - __builtin_clzll(d)] += add;
}

/*
 * Counts the commit's neighbours into st->bounds and sets *set to what
 * the rule stores after it: decided anew each time the count reaches a
 * power of two, the last item replaced included. Returns -1 when the
 * items are not in ts order.
 */
static int decide(struct lod_state *st, const struct lod_item *it, uint64_t from, size_t m, uint64_t *set)
{
	uint64_t n = from;
	int64_t prev = from + 1 == st->n ? st->prev_ts : st->last.ts;
	size_t k;

	*set = st->levels;
	if (from + 1 == st->n && from >= 1)
		bound(st->bounds, st->prev_ts, st->last.ts, (uint64_t)-1);
	for (k = 0; k < m; k++, n++) {
		if (n >= 1) {
			if (it[k].ts < prev)
				return -1;
			bound(st->bounds, prev, it[k].ts, 1);
		}
		prev = it[k].ts;
		if (n >= 1 && ((n + 1) & n) == 0)
			*set = levels_of(st->bounds, n + 1);
	}
	return 0;
}

/*
 * The set changed to `set`: the rows of the levels that left go, and the
 * levels of the new set start again from item 0, a level that stays
 * keeping what the sink holds of it (rows_put, put...). Returns 0 or -1.
 */
static int levels_reset(struct lod_state *st, uint64_t set, const struct lod_sink *sk)
{
	struct lod_level *nl = NULL, *old = st->lv;
	int j, k = 0, level, nold = st->nlv, rc = 0;

	if (set != 0 && (nl = calloc((size_t)__builtin_popcountll(set), sizeof(*nl))) == NULL)
		return -1;
	for (level = LOD_MIN_LEVEL; level <= LOD_MAX_LEVEL; level += LOD_STEP) {
		if (!(set >> level & 1))
			continue;
		for (j = 0; j < nold && old[j].level != level; j++)
			;
		if (j < nold) {
			nl[k] = old[j];
			nl[k].has_tail = nl[k].m = 0;
			nl[k].rows = 0;
			old[j].recs = NULL;
			old[j].level = -1; /* taken */
		}
		nl[k++].level = level;
	}
	for (j = 0; j < nold; j++) {
		if (old[j].level >= 0 && (old[j].rows_put > 0 || old[j].put) && rc == 0)
			rc = sk->drop(sk->ctx, &st->key, old[j].level, INT64_MIN);
		free(old[j].recs);
	}
	free(old);
	st->lv = nl;
	st->nlv = k;
	st->levels = set;
	return rc;
}

/*
 * The set changed: the stored levels are made again from item 0 (the
 * sink's items before `from`, the commit's after), handing out only rows
 * the sink lacks. Returns 0 or -1.
 */
static int rebuild(struct lod_state *st, uint64_t set, const struct lod_item *it, uint64_t from, size_t m,
		   const struct lod_sink *sk)
{
	uint64_t i, settled = from + m - 1; /* the last item stays apart */
	const struct lod_item *p;
	size_t n;

	if (levels_reset(st, set, sk) != 0)
		return -1;
	for (i = 0; i < settled && st->nlv > 0; i += n) {
		if (i < from) {
			n = from - i < LOD_FETCH ? (size_t)(from - i) : LOD_FETCH;
			if (sk->items == NULL || (p = sk->items(sk->ctx, &st->key, i, n)) == NULL)
				return -1;
		} else {
			n = (size_t)(settled - i);
			p = it + (i - from);
		}
		if (settle_run(st, p, i, n, sk) != 0)
			return -1;
	}
	return 0;
}

void lod_state_init(struct lod_state *st, const struct lod_key *k, int counters)
{
	memset(st, 0, sizeof(*st));
	st->key = *k;
	st->counters = counters;
}

void lod_state_fini(struct lod_state *st)
{
	int j;

	for (j = 0; j < st->nlv; j++)
		free(st->lv[j].recs);
	free(st->lv);
	st->lv = NULL;
	st->nlv = 0;
}

void lod_state_reset(struct lod_state *st, const struct lod_key *k, int counters)
{
	lod_state_fini(st);
	lod_state_init(st, k, counters);
}

int lod_commit(struct lod_state *st, const struct lod_item *it, uint64_t from, size_t m, const struct lod_sink *sink,
	       uint64_t *levels)
{
	int64_t prev_ts;
	uint64_t set;
	int rc = 0;

	*levels = st->levels;
	if (from != st->n && !(st->n >= 1 && from == st->n - 1))
		return -1;
	if (m == 0)
		return 0;
	prev_ts = m >= 2 ? it[m - 2].ts : from + 1 == st->n ? st->prev_ts : st->last.ts;
	if (decide(st, it, from, m, &set) != 0)
		return -1;
	if (set != st->levels)
		rc = rebuild(st, set, it, from, m, sink);
	else if (st->nlv > 0) {
		if (from == st->n && from >= 1)
			rc = settle(st, &st->last, from - 1, sink);
		if (rc == 0)
			rc = settle_run(st, it, from, m - 1, sink);
	}
	st->n = from + m;
	st->last = it[m - 1];
	st->prev_ts = prev_ts;
	*levels = st->levels;
	return rc != 0 ? -1 : rows_out(st, sink);
}

/* ---- the batch: rows into the staged lod table --------------------------- */

int lod_submit_put(struct dbwriter *s, struct dbw_stmt *st, const struct lod_key *k, int level, int64_t first_bucket,
		   int64_t last_bucket, uint8_t *blob, size_t len)
{
	struct bins_val v[6] = { { 0 } };
	int i;

	for (i = 0; i < 5; i++)
		v[i].type = SQLITE_INTEGER;
	v[0].i = k->track_id;
	v[1].i = k->depth;
	v[2].i = level;
	v[3].i = first_bucket;
	v[4].i = last_bucket;
	v[5].type = SQLITE_BLOB;
	v[5].p = blob;
	v[5].n = (int)len;
	return dbw_submit(s, st, v, 6, blob); /* which frees blob once run, or now */
}

int lod_submit_drop(struct dbwriter *s, struct dbw_stmt *st, const struct lod_key *k, int level, int64_t from_bucket)
{
	struct bins_val v[4] = { { 0 } };
	int i;

	for (i = 0; i < 4; i++)
		v[i].type = SQLITE_INTEGER;
	v[0].i = k->track_id;
	v[1].i = k->depth;
	v[2].i = level;
	v[3].i = from_bucket;
	return dbw_submit(s, st, v, 4, NULL);
}

static int batch_put(void *ctx, const struct lod_key *k, int level, int64_t first_bucket, int64_t last_bucket,
		     uint8_t *blob, size_t len)
{
	struct lod_writer *w = ctx;

	if (w->failed) {
		free(blob);
		return -1;
	}
	if (lod_submit_put(w->s, w->ins, k, level, first_bucket, last_bucket, blob, len) != 0)
		w->failed = 1;
	return w->failed ? -1 : 0;
}

static int batch_drop(void *ctx, const struct lod_key *k, int level, int64_t from_bucket)
{
	struct lod_writer *w = ctx;

	if (w->failed || lod_submit_drop(w->s, w->del, k, level, from_bucket) != 0)
		w->failed = 1;
	return w->failed ? -1 : 0;
}

int lod_writer_init(struct lod_writer *w, struct dbwriter *s)
{
	static const struct lod_key none = { 0, 0 };

	memset(w, 0, sizeof(*w));
	w->s = s;
	lod_state_init(&w->st, &none, 0);
	w->ins = dbw_prepare(s, "INSERT INTO " TRACEDB_STAGED("lod") " VALUES (?, ?, ?, ?, ?, ?)");
	w->del = dbw_prepare(s, "DELETE FROM " TRACEDB_STAGED("lod") " WHERE track_id = ? AND depth = ? AND level = ? "
				"AND first_bucket >= ?");
	return w->ins != NULL && w->del != NULL ? 0 : -1;
}

int lod_writer_fini(struct lod_writer *w)
{
	if (dbw_failed(w->s))
		w->failed = 1;
	if (w->ins != NULL)
		dbw_finalize(w->s, w->ins);
	if (w->del != NULL)
		dbw_finalize(w->s, w->del);
	w->ins = w->del = NULL;
	lod_state_fini(&w->st);
	free(w->items);
	w->items = NULL;
	w->items_cap = 0;
	return w->failed ? -1 : 0;
}

struct lod_item *lod_items(struct lod_writer *w, size_t n)
{
	struct lod_item *grown;

	if (n <= w->items_cap && w->items != NULL)
		return w->items;
	if (n == 0)
		n = 1;
	if ((grown = realloc(w->items, n * sizeof(*grown))) == NULL)
		return NULL;
	w->items = grown;
	w->items_cap = n;
	return grown;
}

int lod_build(struct lod_writer *w, const struct lod_key *k, const struct lod_item *it, size_t n, int counters,
	      uint64_t *levels)
{
	const struct lod_sink sink = { w, batch_put, batch_drop, NULL };

	lod_state_reset(&w->st, k, counters);
	if (lod_commit(&w->st, it, 0, n, &sink, levels) != 0)
		w->failed = 1;
	return w->failed ? -1 : 0;
}
