/*
 * Unit tests of the catalog's pure parts: the natural order of names,
 * label and text checks, and the retention plan (oldest first, pinned and
 * unfinished traces never). The duration sketch it adds up has its tests
 * in tests/tracedb/test_sketch.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../catalog/catalog_internal.h"

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
		cmocka_unit_test(test_name_order),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_retention_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
