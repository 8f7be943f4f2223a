/*
 * Level-of-detail builder (ingest internal): see lod.c and schema/trace.sql.
 */
#ifndef INGEST_LOD_H
#define INGEST_LOD_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Levels are LOD_MIN_LEVEL, + LOD_STEP, ... : buckets of 1 us, 4 us, 16 us ... */
enum { LOD_MIN_LEVEL = 10, LOD_STEP = 2, LOD_MAX_LEVEL = 62 };

/* One slice (ts, end, name, category) or counter point (ts, value). */
struct lod_item {
	int64_t ts;
	int64_t end;       /* slice end (ts + dur; the trace end when unterminated); ts for points */
	uint32_t name, cat;
	double value;      /* counter points */
};

struct lod_key {
	int64_t track_id;
	int64_t depth;     /* slices only */
	uint64_t first_id; /* row id of item 0; items have consecutive ids */
};

/*
 * Writes the summaries of n items sorted by ts (rows of slice_lod, or of
 * counter_lod when counters) through b, and sets *levels to the set of
 * levels stored (bit L for level L). Returns 0, or -1 when out of memory or
 * an insert failed.
 */
int lod_build(struct bins *b, const struct lod_key *k, const struct lod_item *it, size_t n, int counters,
	      uint64_t *levels);

#endif
