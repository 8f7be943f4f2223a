/*
 * Level of detail: the slice_lod and counter_lod mipmaps (schema/trace.sql).
 *
 * For one (track, depth) run of slices sorted by time, level L groups the
 * slices by bucket ts >> L, for L = 10 (about 1 us), 12, 14 ... Level 10 is
 * built from the slices; each next level merges adjacent groups of the one
 * before, so the work is proportional to the groups, which shrink as buckets
 * grow. Only groups of two or more are stored, and a level is stored only
 * when it has at most half the items (groups) of the last level stored (the
 * raw items count as level 0): a reader at level L uses the finest stored
 * level at or below L, which then holds at most twice the items L would,
 * and the table holds at most as many rows as there are items. Building
 * stops once one group holds everything.
 */
#include <stdlib.h>
#include <string.h>

#include "lod.h"

struct group {
	uint64_t first, last; /* item indexes */
	int64_t start, end;   /* first ts, greatest end (or last ts) */
	uint64_t longest;     /* item index of the longest slice / last point */
	double min, max;      /* counters */
};

static void group_from_item(struct group *g, const struct lod_item *it, uint64_t i)
{
	g->first = g->last = g->longest = i;
	g->start = it[i].ts;
	g->end = it[i].end;
	g->min = g->max = it[i].value;
}

static void group_merge(struct group *g, const struct group *h, const struct lod_item *it)
{
	g->last = h->last;
	if (h->end > g->end)
		g->end = h->end;
	if (it[h->longest].end - it[h->longest].ts > it[g->longest].end - it[g->longest].ts)
		g->longest = h->longest;
	if (h->min < g->min)
		g->min = h->min;
	if (h->max > g->max)
		g->max = h->max;
}

static void write_slice_group(struct bins *b, const struct lod_key *k, int level, const struct group *g,
			      const struct lod_item *it)
{
	const struct lod_item *l = &it[g->longest];

	bins_i64(b, k->track_id);
	bins_i64(b, k->depth);
	bins_i64(b, level);
	bins_i64(b, g->start >> level);
	bins_i64(b, (int64_t)(k->first_id + g->first));
	bins_i64(b, (int64_t)(k->first_id + g->last));
	bins_i64(b, g->end);
	bins_i64(b, (int64_t)(k->first_id + g->longest));
	bins_i64(b, l->end - l->ts);
	bins_row(b);
}

static void write_counter_group(struct bins *b, const struct lod_key *k, int level, const struct group *g)
{
	bins_i64(b, k->track_id);
	bins_i64(b, level);
	bins_i64(b, g->start >> level);
	bins_i64(b, (int64_t)(k->first_id + g->first));
	bins_i64(b, (int64_t)(k->first_id + g->last));
	bins_dbl(b, g->min);
	bins_dbl(b, g->max);
	bins_row(b);
}

/* Merges groups into buckets of 2^level ns, in place; returns the new count. */
static size_t regroup(struct group *g, size_t n, int level, const struct lod_item *it)
{
	size_t i, out = 0;

	for (i = 0; i < n; i++) {
		if (out > 0 && g[out - 1].start >> level == g[i].start >> level)
			group_merge(&g[out - 1], &g[i], it);
		else
			g[out++] = g[i];
	}
	return out;
}

int lod_build(struct bins *b, const struct lod_key *k, const struct lod_item *it, size_t n, int counters,
	      uint64_t *levels)
{
	struct group *g;
	size_t i, ng = n, stored = n;
	int level;

	*levels = 0;
	if (n < 2)
		return 0;
	if ((g = malloc(n * sizeof(*g))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		group_from_item(&g[i], it, i);
	for (level = LOD_MIN_LEVEL; level <= LOD_MAX_LEVEL && ng > 1; level += LOD_STEP) {
		ng = regroup(g, ng, level, it);
		if (ng * 2 > stored)
			continue;
		stored = ng;
		*levels |= UINT64_C(1) << level;
		for (i = 0; i < ng; i++) {
			if (g[i].last == g[i].first)
				continue;
			if (counters)
				write_counter_group(b, k, level, &g[i]);
			else
				write_slice_group(b, k, level, &g[i], it);
		}
	}
	free(g);
	return b->failed ? -1 : 0;
}
