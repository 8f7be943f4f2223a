/*
 * The duration sketch (sketch.h).
 */
#include <stdlib.h>
#include <string.h>

#include "tracedb.h"
#include "sketch.h"

unsigned sketch_bucket(int64_t dur)
{
	uint64_t d = dur < 0 ? 0 : (uint64_t)dur;
	unsigned e;

	if (d < SKETCH_SUB)
		return (unsigned)d;
	e = 63u - (unsigned)__builtin_clzll(d); /* 5 .. 62 */
	return SKETCH_SUB + (e - 5) * SKETCH_SUB + (unsigned)((d >> (e - 5)) & (SKETCH_SUB - 1));
}

void sketch_bounds(unsigned i, uint64_t *lo, uint64_t *width)
{
	unsigned e;

	if (i < SKETCH_SUB) {
		*lo = i;
		*width = 1;
		return;
	}
	e = (i - SKETCH_SUB) / SKETCH_SUB + 5;
	*width = (uint64_t)1 << (e - 5);
	*lo = ((uint64_t)1 << e) + (uint64_t)((i - SKETCH_SUB) % SKETCH_SUB) * *width;
}

void sketch_add(struct sketch *s, int64_t dur)
{
	s->b[sketch_bucket(dur)]++;
	s->n++;
}

int64_t sketch_quantile(const struct sketch *s, double q, int64_t min, int64_t max)
{
	uint64_t rank, seen = 0, lo, width;
	unsigned i;
	int64_t v;

	if (s->n == 0)
		return 0;
	rank = (uint64_t)(q * (double)s->n);
	if ((double)rank < q * (double)s->n)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	for (i = 0; i < SKETCH_BUCKETS; i++) {
		seen += s->b[i];
		if (seen >= rank)
			break;
	}
	if (i == SKETCH_BUCKETS)
		i = SKETCH_BUCKETS - 1;
	sketch_bounds(i, &lo, &width);
	v = (int64_t)(lo + (width - 1) / 2);
	if (v < min)
		v = min;
	if (v > max)
		v = max;
	return v;
}

size_t sketch_encode(const struct sketch *s, uint8_t *out)
{
	size_t n = 0;
	unsigned i, last = 0;

	for (i = 0; i < SKETCH_BUCKETS; i++) {
		if (s->b[i] == 0)
			continue;
		n += tracedb_put_varint(out + n, i - last);
		n += tracedb_put_varint(out + n, s->b[i]);
		last = i;
	}
	return n;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

size_t sketch_encode_values(int64_t *d, size_t n, uint8_t *out)
{
	size_t i, j, len = 0;
	int64_t last = 0;

	for (i = 0; i < n; i++)
		d[i] = sketch_bucket(d[i]);
	if (n > 1)
		qsort(d, n, sizeof(*d), i64_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && d[j] == d[i]; j++)
			;
		len += tracedb_put_varint(out + len, (uint64_t)(d[i] - last));
		len += tracedb_put_varint(out + len, j - i);
		last = d[i];
	}
	return len;
}

int sketch_merge(struct sketch *s, const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	uint64_t gap, count, i = 0;

	while (p < end) {
		if (tracedb_get_varint(&p, end, &gap) != 0 || tracedb_get_varint(&p, end, &count) != 0)
			return -1;
		i += gap;
		if (i >= SKETCH_BUCKETS)
			return -1;
		s->b[i] += count;
		s->n += count;
	}
	return 0;
}
