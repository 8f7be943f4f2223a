/*
 * Level-of-detail builder (ingest internal): see lod.c and the `lod` table
 * in schema/trace.sql.
 *
 * One group (a (track, depth) of slices, a counter track's points, a cpu's
 * runs) is built in commits: each commit appends items and may replace the
 * last item of the one before (lod_commit), and hands out, through a sink,
 * only the row operations that bring the group's lod rows up to date. The
 * batch ingest commits every item at once (lod_build), so a group grown
 * commit by commit ends with the same rows, byte for byte.
 */
#ifndef INGEST_LOD_H
#define INGEST_LOD_H

#include <stddef.h>
#include <stdint.h>

#include "dbwriter.h"
#include "../tracedb/tracedb.h" /* levels, record layout */

/* One slice (ts, end, name, category) or counter point (ts, value). */
struct lod_item {
	int64_t ts;
	int64_t end;       /* slice end (ts + dur; the trace end when unterminated); ts for points */
	uint32_t name, cat;/* slices: string ids */
	int open;          /* slices, runs: never ended (end is then the trace end) */
	int is_int;        /* points: the value is ivalue, else value */
	int64_t ivalue;
	double value;
};

/* Items are the group's rows in ts order: item i is ordinal i. */
struct lod_key {
	int64_t track_id;
	int64_t depth;     /* slices only; 0 for counters */
};

/*
 * Where a commit's row operations go, in the order given; rows are keyed
 * by (key, level, first_bucket), as table lod is.
 *
 * put: writes the row (a new one, or in place of the row of that key),
 * its records packed by tracedb_lod_pack into blob (len bytes). The sink
 * owns blob from the call on, and frees it on every path. Returns 0, or
 * -1 when the write failed.
 *
 * drop: removes the rows of (key, level) whose first bucket is
 * from_bucket or later: INT64_MIN removes the level. Returns 0 or -1.
 *
 * items: the group's items [first, first + n) as they stand in the commit
 * under way (n at most LOD_FETCH), for a level the rule adds to the
 * stored set, which is rebuilt from the group's first item. The builder
 * asks only for items committed before (below lod_commit's `from`). The
 * pointer is the sink's, valid until its next call; NULL on failure. May
 * be NULL when every commit starts at item 0, as the batch's one does.
 */
struct lod_sink {
	void *ctx;
	int (*put)(void *ctx, const struct lod_key *k, int level, int64_t first_bucket, int64_t last_bucket,
		   uint8_t *blob, size_t len);
	int (*drop)(void *ctx, const struct lod_key *k, int level, int64_t from_bucket);
	const struct lod_item *(*items)(void *ctx, const struct lod_key *k, uint64_t first, size_t n);
};

enum { LOD_FETCH = 4096 }; /* items asked of lod_sink.items at a time */

struct lod_level;

/*
 * A group's state between commits: O(levels), whatever its count of
 * items. Caller-owned (lod_state_init / lod_state_fini).
 */
struct lod_state {
	struct lod_key key;
	int counters;           /* items are counter points, else slices or cpu runs */
	uint64_t n;             /* items committed */
	struct lod_item last;   /* item n - 1, which the next commit may replace */
	int64_t prev_ts;        /* item n - 2's ts, when n >= 2 */
	uint64_t bounds[64];    /* of the neighbours among items [0, n): how many differ first in bit b */
	uint64_t levels;        /* the stored set (bit L: level L), decided at the last doubling of n */
	struct lod_level *lv;   /* the stored levels, finest first, nlv of them */
	int nlv;
};

void lod_state_init(struct lod_state *st, const struct lod_key *k, int counters);
/* Frees what the state holds; the sink's rows stay. */
void lod_state_fini(struct lod_state *st);
/* Starts another group in the same state: lod_state_fini, then
 * lod_state_init. */
void lod_state_reset(struct lod_state *st, const struct lod_key *k, int counters);

/*
 * One commit of the group: items it[0 .. m) are the group's items from,
 * from + 1 ...: from is st->n (they are appended) or st->n - 1 (it[0]
 * replaces the last item committed, whose ts it must not precede). Items
 * come in ts order. Hands the sink the row operations that make the
 * group's rows those of lod_build over all its items so far, and sets
 * *levels (bit L: level L is stored) for track_depths.lod_levels or
 * tracks.lod_levels. Returns 0, or -1 when memory ran out, the sink
 * failed or the arguments break the rules above; the state is then only
 * good for lod_state_fini.
 */
int lod_commit(struct lod_state *st, const struct lod_item *it, uint64_t from, size_t m, const struct lod_sink *sink,
	       uint64_t *levels);

/* The sinks' own row operations, on statements of the store s: a row
 * (put: st binds track_id, depth, level, first_bucket, last_bucket and
 * the blob, which it owns from the call on) and a drop (st binds
 * track_id, depth, level and the first bucket from which rows go).
 * 0, or -1. */
int lod_submit_put(struct dbwriter *s, struct dbw_stmt *st, const struct lod_key *k, int level, int64_t first_bucket,
		   int64_t last_bucket, uint8_t *blob, size_t len);
int lod_submit_drop(struct dbwriter *s, struct dbw_stmt *st, const struct lod_key *k, int level, int64_t from_bucket);

/* The batch: inserts every group's rows into the staged lod table. */
struct lod_writer {
	struct lod_state st;      /* one group's at a time, its memory reused */
	struct lod_item *items;   /* the caller's, from lod_items(), reused likewise */
	size_t items_cap;
	struct dbw_stmt *ins;     /* INSERT into the staged lod */
	struct dbw_stmt *del;     /* DELETE from it (lod_sink.drop; one commit never drops) */
	struct dbwriter *s;
	int failed;               /* sticky; the reason is in s->error */
};

int lod_writer_init(struct lod_writer *w, struct dbwriter *s);
/* Returns -1 if any write failed. */
int lod_writer_fini(struct lod_writer *w);
/* Room for n items to fill and hand to lod_build, reused from run to run;
 * NULL when out of memory. */
struct lod_item *lod_items(struct lod_writer *w, size_t n);

/*
 * Summarises n items sorted by ts (slices, or counter points when counters)
 * as one commit of a new group (lod_commit) and sets *levels to the set of
 * levels stored (bit L for level L). Returns 0, or -1 when out of memory
 * or a write failed.
 */
int lod_build(struct lod_writer *w, const struct lod_key *k, const struct lod_item *it, size_t n, int counters,
	      uint64_t *levels);

#endif
