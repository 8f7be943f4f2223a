/*
 * Unit tests of the catalog's pure parts: the duration sketch (buckets,
 * encoding, quantiles within 1/64 of the exact nearest rank), label and
 * text checks, and the retention plan (oldest first, pinned and unfinished
 * traces never).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../catalog/catalog_internal.h"
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

/* Natural order of names, the order of sort=name: numbers by value, and a
 * total order (antisymmetric, transitive over a sorted sample). */
static void test_name_order(void **state)
{
	static const char *const sorted[] = {
		"", "0", "00", "1", "01", "2", "9", "10", "run", "run-2", "run-9", "run-10", "run-10a", "run-10b",
		"run-99", "run-099", "run-215", "run-1000", "run-18446744073709551616", "runa", "z9", "z10", "\xc3\xa9",
	};
	size_t n = sizeof(sorted) / sizeof(sorted[0]), i, j;

	(void)state;
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			int c = cat_name_cmp(sorted[i], sorted[j]);

			if ((i < j && c >= 0) || (i > j && c <= 0) || (i == j && c != 0))
				fail_msg("'%s' vs '%s': %d", sorted[i], sorted[j], c);
		}
}

static void test_labels(void **state)
{
	struct cat_label l;
	char err[256], big[400];

	(void)state;
	assert_int_equal(cat_label_parse("build=1234", 0, &l, err, sizeof(err)), 0);
	assert_string_equal(l.key, "build");
	assert_string_equal(l.value, "1234");
	assert_int_equal(cat_label_parse("a.b/c:d-e_f=x=y", 0, &l, err, sizeof(err)), 0);
	assert_string_equal(l.value, "x=y");
	assert_int_equal(cat_label_parse("empty=", 0, &l, err, sizeof(err)), 0);
	assert_string_equal(l.value, "");
	assert_int_equal(cat_label_parse("utf=caf\xc3\xa9", 0, &l, err, sizeof(err)), 0);
	assert_int_equal(cat_label_parse("bare", 0, &l, err, sizeof(err)), -1);
	assert_int_equal(cat_label_parse("bare", 1, &l, err, sizeof(err)), 0);
	assert_int_equal(cat_label_parse("=v", 0, &l, err, sizeof(err)), -1);
	assert_int_equal(cat_label_parse("a b=v", 0, &l, err, sizeof(err)), -1);
	assert_int_equal(cat_label_parse("k=line\nbreak", 0, &l, err, sizeof(err)), -1);
	assert_int_equal(cat_label_parse("k=\xc3", 0, &l, err, sizeof(err)), -1); /* cut UTF-8 */
	memset(big, 'k', 65);
	strcpy(big + 65, "=v");
	assert_int_equal(cat_label_parse(big, 0, &l, err, sizeof(err)), -1);
	big[64] = '=';
	assert_int_equal(cat_label_parse(big, 0, &l, err, sizeof(err)), 0);
	memset(big, 'v', sizeof(big) - 1);
	big[0] = 'k';
	big[1] = '=';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(cat_label_parse(big, 0, &l, err, sizeof(err)), -1);
	assert_int_equal(cat_text_check("name", "ok name", 16, 0, err, sizeof(err)), 0);
	assert_int_equal(cat_text_check("name", "two\nlines", 16, 0, err, sizeof(err)), -1);
	assert_int_equal(cat_text_check("description", "two\nlines", 16, 1, err, sizeof(err)), 0);
	assert_int_equal(cat_text_check("name", "seventeen bytes!!", 16, 0, err, sizeof(err)), -1);
}

static void test_retention_plan(void **state)
{
	struct trace_rec r[5];
	struct trace_rec *v[5];
	struct cat_removal out[8];
	struct cat_opts o = { 0 };
	time_t now = 100 * 86400;
	size_t n, i;

	(void)state;
	memset(r, 0, sizeof(r));
	for (i = 0; i < 5; i++) {
		v[i] = &r[i];
		r[i].id = (int64_t)i + 1;
		r[i].status = TS_READY;
		r[i].stored = 100;
		r[i].created = now - (time_t)(10 - i) * 86400; /* 10, 9, 8, 7, 6 days old */
	}
	r[0].pinned = 1;
	r[2].status = TS_INGESTING;
	/* no bounds: nothing */
	assert_int_equal(cat_retention_plan(v, 5, &o, now, out, 8), 0);
	/* by age: 9 days or more, not the pinned one, not the one ingesting */
	o.retain_days = 8;
	n = cat_retention_plan(v, 5, &o, now, out, 8);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].id, 2);
	assert_string_equal(out[0].reason, "age");
	/* by space: 500 used, 250 allowed: the oldest removable first */
	o.retain_days = 0;
	o.retain_bytes = 250;
	n = cat_retention_plan(v, 5, &o, now, out, 8);
	assert_int_equal(n, 3); /* 2, 4, 5: then 200 remain (pinned 1 and ingesting 3) */
	assert_int_equal(out[0].id, 2);
	assert_int_equal(out[1].id, 4);
	assert_int_equal(out[2].id, 5);
	assert_string_equal(out[2].reason, "space");
	/* both: age first, then space, no trace twice; max respected */
	o.retain_days = 8;
	o.retain_bytes = 350;
	n = cat_retention_plan(v, 5, &o, now, out, 8);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].id, 2);
	assert_int_equal(out[1].id, 4);
	assert_int_equal(cat_retention_plan(v, 5, &o, now, out, 1), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sketch_buckets),
		cmocka_unit_test(test_sketch_values),
		cmocka_unit_test(test_sketch_quantiles),
		cmocka_unit_test(test_name_order),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_retention_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
