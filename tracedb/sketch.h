/*
 * A duration sketch: a log-linear histogram of nanosecond durations.
 *
 * Durations below 32 ns have a bucket each; above, every power of two is
 * cut into 32 buckets of equal width, so a bucket's width is at most 1/32
 * of its lower bound and a quantile read from the middle of its bucket is
 * within 1/64 (1.6%) of the exact one. Sketches of the same name in
 * different traces add up bucket by bucket, which is what search across
 * traces does. Stored as pairs of varints (bucket gap, count; the varint
 * of tracedb.h), empty buckets left out: a few hundred bytes per name.
 * Ingest writes one per slice name (table name_stats of schema/trace.sql);
 * the catalog adds them up across traces.
 */
#ifndef TRACEDB_SKETCH_H
#define TRACEDB_SKETCH_H

#include <stddef.h>
#include <stdint.h>

enum { SKETCH_SUB = 32, SKETCH_BUCKETS = SKETCH_SUB + (63 - 5) * SKETCH_SUB };

struct sketch {
	uint64_t n;
	uint64_t b[SKETCH_BUCKETS];
};

unsigned sketch_bucket(int64_t dur);
/* The lower bound and width of bucket i. */
void sketch_bounds(unsigned i, uint64_t *lo, uint64_t *width);
void sketch_add(struct sketch *s, int64_t dur);
/*
 * The q-quantile (0 < q <= 1) by nearest rank: the value of the
 * ceil(q * n)-th smallest duration, estimated as its bucket's middle and
 * clamped to [min, max] (exact when they are known). 0 when empty.
 */
int64_t sketch_quantile(const struct sketch *s, double q, int64_t min, int64_t max);
/* Bytes needed to encode s (at most SKETCH_MAX_BYTES). */
#define SKETCH_MAX_BYTES ((size_t)SKETCH_BUCKETS * 14)
size_t sketch_encode(const struct sketch *s, uint8_t *out);
/* Encodes the sketch of the n durations d (reordered: they become bucket
 * numbers) as sketch_encode would, without a dense sketch: a name with few
 * slices costs its durations, not SKETCH_BUCKETS words. */
size_t sketch_encode_values(int64_t *d, size_t n, uint8_t *out);
/* Adds an encoded sketch to s; 0, or -1 when the bytes are not one. */
int sketch_merge(struct sketch *s, const uint8_t *p, size_t n);

#endif
