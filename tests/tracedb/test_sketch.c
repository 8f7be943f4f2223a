/*
 * Unit tests of the duration sketch (tracedb/sketch.h) that ingest writes
 * per slice name and the catalog adds up across traces: its buckets, its
 * encoding, and quantiles within 1/64 of the exact nearest rank.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../tracedb/sketch.h"

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_sketch_buckets(void **state)
{
	uint64_t lo, width, prev_end = 0;
	unsigned i;

	(void)state;
	/* buckets tile [0, 2^63) without gaps, each at most 1/32 of its start wide */
	for (i = 0; i < SKETCH_BUCKETS; i++) {
		sketch_bounds(i, &lo, &width);
		assert_int_equal(lo, prev_end);
		assert_true(width >= 1);
		assert_true(lo < SKETCH_SUB || width * 32 <= lo);
		assert_int_equal(sketch_bucket((int64_t)lo), i);
		assert_int_equal(sketch_bucket((int64_t)(lo + width - 1)), i);
		prev_end = lo + width;
	}
	assert_int_equal(prev_end, UINT64_C(1) << 63);
	assert_int_equal(sketch_bucket(-1), 0);
	assert_int_equal(sketch_bucket(INT64_MAX), SKETCH_BUCKETS - 1);
}

/* The sketch of a few durations, encoded from the durations themselves, is
 * the bytes of the dense sketch's encoding: what a name with few slices
 * stores is what it always stored. */
static void test_sketch_values(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 7, 100, 1023, 1024, 5000 };
	struct sketch *s = calloc(1, sizeof(*s));
	uint8_t *want = malloc(SKETCH_MAX_BYTES), *got = malloc(SKETCH_MAX_BYTES);
	int64_t *d = malloc(5000 * sizeof(*d));
	uint64_t x = 12345;
	size_t k, i, wn, gn;

	(void)state;
	assert_non_null(s);
	assert_non_null(want);
	assert_non_null(got);
	assert_non_null(d);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		memset(s, 0, sizeof(*s));
		for (i = 0; i < sizes[k]; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			d[i] = i % 7 == 0 ? INT64_MAX : i % 11 == 0 ? -5 : (int64_t)(x >> (x % 60));
			sketch_add(s, d[i]);
		}
		wn = sketch_encode(s, want);
		gn = sketch_encode_values(d, sizes[k], got);
		assert_int_equal(gn, wn);
		assert_memory_equal(got, want, wn);
	}
	free(s);
	free(want);
	free(got);
	free(d);
}

static void test_sketch_quantiles(void **state)
{
	enum { N = 5000 };
	int64_t *v = malloc(N * sizeof(*v));
	struct sketch *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	uint8_t *blob = malloc(SKETCH_MAX_BYTES);
	static const double qs[] = { 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0 };
	size_t len, i, k;

	(void)state;
	srand(7);
	for (i = 0; i < N; i++) {
		/* spread over many powers of two, zero included */
		v[i] = i % 97 == 0 ? 0 : (int64_t)((uint64_t)rand() % 1000 + 1) << (rand() % 40);
		sketch_add(i % 2 ? a : b, v[i]);
	}
	/* the halves merge through their encoding */
	len = sketch_encode(a, blob);
	assert_true(len <= SKETCH_MAX_BYTES);
	assert_int_equal(sketch_merge(b, blob, len), 0);
	assert_int_equal(b->n, N);
	qsort(v, N, sizeof(*v), i64_cmp);
	for (k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		size_t rank = (size_t)(qs[k] * N + 0.999999);
		int64_t exact = v[(rank ? rank : 1) - 1], got = sketch_quantile(b, qs[k], v[0], v[N - 1]);

		assert_true(llabs(got - exact) <= exact / 64 + 1);
	}
	/* damaged encodings are refused */
	assert_int_equal(sketch_merge(b, (const uint8_t *)"\xff", 1), -1);
	assert_int_equal(sketch_merge(b, (const uint8_t *)"\xff\xff\x7f\x01", 4), -1); /* bucket out of range */
	free(v);
	free(a);
	free(b);
	free(blob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sketch_buckets),
		cmocka_unit_test(test_sketch_values),
		cmocka_unit_test(test_sketch_quantiles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
