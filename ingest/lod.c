/*
 * Level of detail: the slice_lod and counter_lod mipmaps (schema/trace.sql).
 *
 * For one (track, depth) run of slices sorted by time, level L groups the
 * slices by bucket ts >> L, for L = 10 (about 1 us), 12, 14 ... Only groups
 * of two or more are stored, and a level is stored only when it has at most
 * half the items (groups) of the last level stored (the raw items count as
 * level 0): a reader at level L uses the finest stored level at or below L,
 * which then holds at most twice the items L would, and the table holds at
 * most as many summaries as there are items. Building stops once one group
 * holds everything.
 *
 * Which levels are stored depends only on how many groups each level has,
 * and two neighbouring items share a bucket of level L exactly when the
 * highest bit in which their ts differ is below L. So one pass over the ts
 * counts the groups of every level at once (stored_levels()); groups are
 * then made only for the levels stored: the first from the items, each next
 * one by merging adjacent groups of the one before. Levels finer than the
 * slices' spacing, which would merge nothing, cost nothing. Summaries are
 * packed into blobs of up to LOD_CHUNK records: one row per chunk instead
 * of one per bucket keeps the table small and cheap to write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lod.h"

struct lod_group {
	uint64_t first, last; /* item indexes */
	int64_t start, end;   /* first ts, greatest end (or last ts) */
	uint64_t longest;     /* item index of the longest slice / last point */
	int64_t longest_dur;  /* its end - ts */
	int open;             /* an item never ended */
	double min, max;      /* counters */
	int64_t imin, imax;   /* counters, exact while every value is an int */
	int all_int;          /* counters: every value is an int */
};

static void group_from_item(struct lod_group *g, const struct lod_item *it, uint64_t i)
{
	g->first = g->last = g->longest = i;
	g->longest_dur = it[i].end - it[i].ts;
	g->start = it[i].ts;
	g->end = it[i].end;
	g->open = it[i].open;
	g->min = g->max = it[i].value;
	g->imin = g->imax = it[i].ivalue;
	g->all_int = it[i].is_int;
}

/* Adds h, the groups or items just after g's, to g; the first of the
 * longest wins a tie. */
static void group_merge(struct lod_group *g, const struct lod_group *h)
{
	g->last = h->last;
	g->open |= h->open;
	if (h->end > g->end)
		g->end = h->end;
	if (h->longest_dur > g->longest_dur) {
		g->longest = h->longest;
		g->longest_dur = h->longest_dur;
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
}

int lod_writer_init(struct lod_writer *w, struct dbwriter *s)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	return (w->st = dbw_prepare(s, "INSERT INTO " TRACEDB_STAGED("lod") " VALUES (?, ?, ?, ?, ?, ?)")) != NULL ? 0 : -1;
}

/* Packs the chunk (tracedb_lod_pack) and hands it to the store's writer
 * thread, which frees it. */
static void chunk_flush(struct lod_writer *w)
{
	struct bins_val v[6] = { { 0 } };
	size_t cap = tracedb_lod_bound((size_t)w->n), len;
	uint8_t *packed;
	int i;

	if (w->n == 0 || w->failed) {
		w->n = 0; /* after a failure records are dropped */
		return;
	}
	if ((packed = malloc(cap)) == NULL ||
	    (len = tracedb_lod_pack(packed, cap, w->level, (const uint64_t(*)[LOD_WORDS])w->recs, (size_t)w->n)) == 0) {
		free(packed);
		w->failed = 1;
		return;
	}
	for (i = 0; i < 5; i++)
		v[i].type = SQLITE_INTEGER;
	v[0].i = w->key.track_id;
	v[1].i = w->key.depth;
	v[2].i = w->level;
	v[3].i = w->first_bucket;
	v[4].i = w->last_bucket;
	v[5].type = SQLITE_BLOB;
	v[5].p = packed;
	v[5].n = (int)len;
	if (dbw_submit(w->s, w->st, v, 6, packed) != 0)
		w->failed = 1;
	w->n = 0;
}

int lod_writer_fini(struct lod_writer *w)
{
	chunk_flush(w);
	if (dbw_failed(w->s))
		w->failed = 1;
	dbw_finalize(w->s, w->st);
	w->st = NULL;
	free(w->recs);
	w->recs = NULL;
	free(w->groups);
	w->groups = NULL;
	w->groups_cap = 0;
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

static uint64_t dbl_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

/* Appends one summary record (LOD_WORDS words, the first the bucket) of
 * the current (track, depth, level). */
static void record(struct lod_writer *w, const uint64_t v[LOD_WORDS])
{
	if (w->n == LOD_CHUNK)
		chunk_flush(w);
	if (w->recs == NULL && (w->recs = malloc(LOD_CHUNK * sizeof(*w->recs))) == NULL) {
		w->failed = 1;
		return;
	}
	if (w->n == 0)
		w->first_bucket = (int64_t)v[0];
	w->last_bucket = (int64_t)v[0];
	memcpy(w->recs[w->n], v, sizeof(w->recs[0]));
	w->n++;
}

static uint64_t name_cat(const struct lod_item *x)
{
	return (uint64_t)x->name | (uint64_t)x->cat << 32;
}

/* The record layout is in tracedb/tracedb.h. */
static void write_group(struct lod_writer *w, const struct lod_group *g, const struct lod_item *it, int counters)
{
	const struct lod_item *l = &it[g->longest], *last = &it[g->last], *first = &it[g->first];
	uint64_t v[LOD_WORDS] = { 0 };

	v[LODW_BUCKET] = (uint64_t)(g->start >> w->level);
	v[LODW_FIRST] = g->first;
	v[LODW_LAST] = g->last;
	v[LODW_START] = (uint64_t)g->start;
	if (counters) {
		v[LODW_LAST_TS] = (uint64_t)last->ts;
		v[LODW_MIN] = g->all_int ? (uint64_t)g->imin : dbl_bits(g->min);
		v[LODW_MAX] = g->all_int ? (uint64_t)g->imax : dbl_bits(g->max);
		v[LODW_LAST_VALUE] = last->is_int ? (uint64_t)last->ivalue : dbl_bits(last->value);
		v[LODW_INT_FLAGS] = (uint64_t)(last->is_int != 0) | (uint64_t)(first->is_int != 0) << 1 |
					 (uint64_t)(g->all_int != 0) << 2;
		v[LODW_FIRST_VALUE] = first->is_int ? (uint64_t)first->ivalue : dbl_bits(first->value);
	} else {
		v[LODW_END] = (uint64_t)g->end;
		v[LODW_LONGEST] = g->longest;
		v[LODW_OPEN] = (uint64_t)g->open;
		v[LODW_LONGEST_DUR] = (uint64_t)(l->end - l->ts);
		v[LODW_NAMES] = name_cat(l);
		v[LODW_FIRST_NAMES] = name_cat(first);
	}
	record(w, v);
}

/* Merges groups into buckets of 2^level ns, in place; returns the new count. */
static size_t regroup(struct lod_group *g, size_t n, int level)
{
	size_t i, out = 0;

	for (i = 0; i < n; i++) {
		if (out > 0 && g[out - 1].start >> level == g[i].start >> level)
			group_merge(&g[out - 1], &g[i]);
		else if (out++ != i)
			g[out - 1] = g[i];
	}
	return out;
}

/* Groups the items into buckets of 2^level ns; returns the count. */
static size_t group_items(struct lod_group *g, const struct lod_item *it, size_t n, int level)
{
	size_t i, out = 0;

	for (i = 0; i < n; i++) {
		struct lod_group one;

		group_from_item(&one, it, i);
		if (out > 0 && g[out - 1].start >> level == one.start >> level)
			group_merge(&g[out - 1], &one);
		else
			g[out++] = one;
	}
	return out;
}

/*
 * The levels to store (bit L for level L) and the groups of the first of
 * them (*first_groups). bounds[b] counts the neighbours whose ts differ
 * first in bit b: they fall in different buckets at every level up to b,
 * so level L has 1 + (the bounds at bits L and up) groups.
 */
static uint64_t stored_levels(const struct lod_item *it, size_t n, size_t *first_groups)
{
	uint64_t bounds[64] = { 0 }, set = 0;
	size_t i, above = 0, stored = n, groups;
	int level, b;

	for (i = 1; i < n; i++) {
		uint64_t d = (uint64_t)it[i].ts ^ (uint64_t)it[i - 1].ts;

		if (d != 0)
			bounds[63 - __builtin_clzll(d)]++;
	}
	for (b = 63; b >= LOD_MIN_LEVEL; b--)
		above += bounds[b];
	*first_groups = 0;
	/* at each level, whether to go on is decided by the level before (the
	 * first: by itself), and a level with one group is the last looked at */
	for (level = LOD_MIN_LEVEL, groups = 1 + above; level <= LOD_MAX_LEVEL && groups > 1; level += LOD_STEP) {
		for (b = level - LOD_STEP; b < level && level > LOD_MIN_LEVEL; b++)
			above -= bounds[b];
		groups = 1 + above;
		if (groups * 2 > stored)
			continue;
		stored = groups;
		if (set == 0)
			*first_groups = groups;
		set |= UINT64_C(1) << level;
	}
	return set;
}

int lod_build(struct lod_writer *w, const struct lod_key *k, const struct lod_item *it, size_t n, int counters,
	      uint64_t *levels)
{
	struct lod_group *g;
	size_t i, ng = 0;
	uint64_t set;
	int level;

	*levels = 0;
	if (n < 2)
		return w->failed ? -1 : 0;
	if ((set = stored_levels(it, n, &ng)) == 0)
		return w->failed ? -1 : 0;
	if (ng > w->groups_cap) { /* the first level stored has the most groups */
		if ((g = realloc(w->groups, ng * sizeof(*g))) == NULL)
			return -1;
		w->groups = g;
		w->groups_cap = ng;
	}
	g = w->groups;
	*levels = set;
	w->key = *k;
	ng = 0;
	for (level = LOD_MIN_LEVEL; level <= LOD_MAX_LEVEL; level += LOD_STEP) {
		if (!(set >> level & 1))
			continue;
		ng = ng == 0 ? group_items(g, it, n, level) : regroup(g, ng, level);
		w->level = level;
		for (i = 0; i < ng; i++)
			if (g[i].last != g[i].first)
				write_group(w, &g[i], it, counters);
		chunk_flush(w);
	}
	return w->failed ? -1 : 0;
}
