/*
 * Level-of-detail builder (ingest internal): see lod.c and the `lod` table
 * in schema/trace.sql.
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

struct lod_group;

/* Writes packed summaries, a chunk of up to LOD_CHUNK records per row. */
struct lod_writer {
	struct lod_group *groups; /* lod_build's scratch, grown to the largest run and reused */
	size_t groups_cap;
	struct lod_item *items;   /* the caller's, from lod_items(), reused likewise */
	size_t items_cap;
	struct dbw_stmt *st;
	struct dbwriter *s;
	uint64_t (*recs)[LOD_WORDS]; /* room for LOD_CHUNK records, packed into a row when full */
	int n;                  /* records in recs */
	int64_t first_bucket, last_bucket;
	struct lod_key key;
	int level;
	int failed;             /* sticky; the reason is in s->error */
};

int lod_writer_init(struct lod_writer *w, struct dbwriter *s);
/* Returns -1 if any write failed. */
int lod_writer_fini(struct lod_writer *w);
/* Room for n items to fill and hand to lod_build, reused from run to run;
 * NULL when out of memory. */
struct lod_item *lod_items(struct lod_writer *w, size_t n);

/*
 * Summarises n items sorted by ts (slices, or counter points when counters)
 * and sets *levels to the set of levels stored (bit L for level L). Returns
 * 0, or -1 when out of memory or a write failed.
 */
int lod_build(struct lod_writer *w, const struct lod_key *k, const struct lod_item *it, size_t n, int counters,
	      uint64_t *levels);

#endif
