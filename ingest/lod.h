/*
 * Level-of-detail builder (ingest internal): see lod.c and the `lod` table
 * in schema/trace.sql.
 */
#ifndef INGEST_LOD_H
#define INGEST_LOD_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Levels are LOD_MIN_LEVEL, + LOD_STEP, ... : buckets of 1 us, 4 us, 16 us ... */
enum { LOD_MIN_LEVEL = 10, LOD_STEP = 2, LOD_MAX_LEVEL = 62, LOD_CHUNK = 256, LOD_WORDS = 10, LOD_RECORD = 80 };

/* One slice (ts, end, name, category) or counter point (ts, value). */
struct lod_item {
	int64_t ts;
	int64_t end;       /* slice end (ts + dur; the trace end when unterminated); ts for points */
	uint32_t name, cat;/* slices: string ids */
	int is_int;        /* points: the value is ivalue, else value */
	int64_t ivalue;
	double value;
};

struct lod_key {
	int64_t track_id;
	int64_t depth;     /* slices only; 0 for counters */
	uint64_t first_id; /* row id of item 0; items have consecutive ids */
};

/* Writes packed summaries, a chunk of up to LOD_CHUNK records per row. */
struct lod_writer {
	sqlite3_stmt *st;
	struct store *s;
	uint8_t buf[LOD_CHUNK * LOD_RECORD];
	int n;                  /* records in buf */
	int64_t first_bucket, last_bucket;
	struct lod_key key;
	int level;
	int failed;             /* sticky; the reason is in s->error */
};

int lod_writer_init(struct lod_writer *w, struct store *s);
/* Returns -1 if any write failed. */
int lod_writer_fini(struct lod_writer *w);

/*
 * Summarises n items sorted by ts (slices, or counter points when counters)
 * and sets *levels to the set of levels stored (bit L for level L). Returns
 * 0, or -1 when out of memory or a write failed.
 */
int lod_build(struct lod_writer *w, const struct lod_key *k, const struct lod_item *it, size_t n, int counters,
	      uint64_t *levels);

#endif
