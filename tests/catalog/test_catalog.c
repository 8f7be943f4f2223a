/*
 * Unit tests of the catalog's pure parts: the natural order of names,
 * label and text checks, and the retention plan (oldest first, pinned and
 * unfinished traces never); then, on a catalog in a temporary directory,
 * the listing's pages (ties by id in the sort's direction, every trace
 * once) and a patch's checks. The duration sketch it adds up has its tests
 * in tests/tracedb/test_sketch.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	assert_int_equal(cat_label_parse("bare", 0, &l, err, sizeof(err)), CAT_EINVAL);
	assert_int_equal(cat_label_parse("bare", 1, &l, err, sizeof(err)), 0);
	assert_int_equal(cat_label_parse("=v", 0, &l, err, sizeof(err)), CAT_EINVAL);
	assert_int_equal(cat_label_parse("a b=v", 0, &l, err, sizeof(err)), CAT_EINVAL);
	assert_int_equal(cat_label_parse("k=line\nbreak", 0, &l, err, sizeof(err)), CAT_EINVAL);
	assert_int_equal(cat_label_parse("k=\xc3", 0, &l, err, sizeof(err)), CAT_EINVAL); /* cut UTF-8 */
	memset(big, 'k', 65);
	strcpy(big + 65, "=v");
	assert_int_equal(cat_label_parse(big, 0, &l, err, sizeof(err)), CAT_EINVAL);
	big[64] = '=';
	assert_int_equal(cat_label_parse(big, 0, &l, err, sizeof(err)), 0);
	memset(big, 'v', sizeof(big) - 1);
	big[0] = 'k';
	big[1] = '=';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(cat_label_parse(big, 0, &l, err, sizeof(err)), CAT_EINVAL);
	assert_int_equal(cat_text_check("name", "ok name", 16, 0, err, sizeof(err)), 0);
	assert_int_equal(cat_text_check("name", "two\nlines", 16, 0, err, sizeof(err)), CAT_EINVAL);
	assert_int_equal(cat_text_check("description", "two\nlines", 16, 1, err, sizeof(err)), 0);
	assert_int_equal(cat_text_check("name", "seventeen bytes!!", 16, 0, err, sizeof(err)), CAT_EINVAL);
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
		r[i].state.status = TS_READY;
		r[i].state.stored = 100;
		r[i].state.created = now - (time_t)(10 - i) * 86400; /* 10, 9, 8, 7, 6 days old */
	}
	r[0].meta.pinned = 1;
	r[2].state.status = TS_INGESTING;
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

static struct catalog *g_cat;
static char g_dir[64];

static int64_t add(const char *name, uint64_t size)
{
	struct cat_new nw = { 0 };
	char spool[4096], err[256];
	static int k;
	FILE *f;
	int64_t id;

	cat_spool_dir(g_cat, spool, sizeof(spool));
	snprintf(spool + strlen(spool), sizeof(spool) - strlen(spool), "/t%d", k++);
	assert_non_null(f = fopen(spool, "wb"));
	fputs("not a trace", f);
	fclose(f);
	nw.name = name;
	nw.spool = spool;
	nw.size = size;
	if ((id = cat_add(g_cat, &nw, err, sizeof(err))) < 0)
		fail_msg("cat_add: %s", err);
	return id;
}

/* The ids a listing gives, page after page of `limit`, as "1,2,3". */
static void pages(enum cat_sort sort, int desc, size_t limit, char *out, size_t n)
{
	struct cat_filter f;
	char err[256], *cursor = NULL;

	out[0] = '\0';
	for (;;) {
		struct jbuf b;
		const char *p, *next;

		memset(&f, 0, sizeof(f));
		f.status = f.pinned = -1;
		f.after = INT64_MIN;
		f.before = INT64_MAX;
		f.max_size = UINT64_MAX;
		f.sort = sort;
		f.desc = desc;
		f.limit = limit;
		f.cursor = cursor;
		jb_init(&b);
		assert_int_equal(cat_list_json(g_cat, &f, &b, err, sizeof(err)), 0);
		jb_raw(&b, "", 1);
		for (p = b.p; (p = strstr(p, "{\"id\":")) != NULL; p += 6)
			snprintf(out + strlen(out), n - strlen(out), "%s%lld", out[0] ? "," : "", atoll(p + 6));
		free(cursor);
		cursor = NULL;
		next = strstr(b.p, "\"next_cursor\":\"");
		if (next) {
			next += 15;
			cursor = strndup(next, strcspn(next, "\""));
		}
		jb_fini(&b);
		if (cursor == NULL)
			break;
	}
}

/* Ties go by id in the sort's direction, and pages of any size give every
 * trace once, in the order one page of all gives. */
static void test_paging_ties(void **state)
{
	static const struct {
		enum cat_sort sort;
		int desc;
		const char *want;
	} cases[] = {
		{ CAT_SORT_NAME, 0, "6,1,2,3,4,5" },  /* "a" < "same" x4 by id < "z" */
		{ CAT_SORT_NAME, 1, "5,4,3,2,1,6" },
		{ CAT_SORT_SIZE, 0, "6,1,3,5,2,4" },  /* sizes 10, 20, 10, 20, 10, 5 */
		{ CAT_SORT_SIZE, 1, "4,2,5,3,1,6" },
	};
	char all[256], paged[256];
	size_t i, limit;

	(void)state;
	assert_int_equal(add("same", 10), 1);
	assert_int_equal(add("same", 20), 2);
	assert_int_equal(add("same", 10), 3);
	assert_int_equal(add("same", 20), 4);
	assert_int_equal(add("z", 10), 5);
	assert_int_equal(add("a", 5), 6);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pages(cases[i].sort, cases[i].desc, 1000, all, sizeof(all));
		assert_string_equal(all, cases[i].want);
		for (limit = 1; limit <= 4; limit++) {
			pages(cases[i].sort, cases[i].desc, limit, paged, sizeof(paged));
			if (strcmp(paged, all) != 0)
				fail_msg("sort %d desc %d, pages of %zu: %s, not %s", cases[i].sort, cases[i].desc, limit,
					 paged, all);
		}
	}
}

/* A patch is checked as an upload is: a name over 1024 bytes, an empty
 * one, a description with a control character, a bad label key are
 * refused and change nothing. */
static void test_patch_checks(void **state)
{
	struct cat_patch p = { .pinned = -1 };
	struct cat_label l;
	char err[256], big[1100];
	struct jbuf b;

	(void)state;
	memset(big, 'n', 1025);
	big[1025] = '\0';
	p.name = big;
	assert_int_equal(cat_patch(g_cat, 1, &p, err, sizeof(err)), CAT_EINVAL);
	p.name = "";
	assert_int_equal(cat_patch(g_cat, 1, &p, err, sizeof(err)), CAT_EINVAL);
	p.name = NULL;
	p.description = "a bell \a rings";
	assert_int_equal(cat_patch(g_cat, 1, &p, err, sizeof(err)), CAT_EINVAL);
	p.description = NULL;
	memset(&l, 0, sizeof(l));
	snprintf(l.key, sizeof(l.key), "bad key");
	snprintf(l.value, sizeof(l.value), "v");
	p.set = &l;
	p.nset = 1;
	assert_int_equal(cat_patch(g_cat, 1, &p, err, sizeof(err)), CAT_EINVAL);
	jb_init(&b);
	assert_int_equal(cat_json(g_cat, 1, &b), 0);
	jb_raw(&b, "", 1);
	assert_non_null(strstr(b.p, "\"name\":\"same\",\"description\":\"\",\"labels\":{}"));
	jb_fini(&b);
	big[1024] = '\0'; /* 1024 bytes: taken */
	p.name = big;
	p.set = NULL;
	p.nset = 0;
	assert_int_equal(cat_patch(g_cat, 1, &p, err, sizeof(err)), 0);
}

/* Files under traces/ that no record owns (a server killed between storing
 * a new trace's files and recording it) go when the catalog opens; a
 * recorded trace's stay, and so does what is not a trace's directory. */
static void test_unrecorded_files_go(void **state)
{
	struct cat_opts o = { 0 };
	char err[256], path[600];
	int64_t kept = 0, i;
	FILE *f;

	(void)state;
	for (i = 1; i < 100 && kept == 0; i++) /* a recorded trace with files */
		if (cat_status(g_cat, i) >= 0) {
			snprintf(path, sizeof(path), "%s/traces/%" PRId64, g_dir, i);
			if (access(path, F_OK) == 0)
				kept = i;
		}
	assert_true(kept > 0);
	snprintf(path, sizeof(path), "mkdir -p '%s/traces/4242' '%s/traces/notes'", g_dir, g_dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/traces/4242/source", g_dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("never recorded", f);
	fclose(f);
	cat_close(g_cat);
	o.keep_failed = 86400;
	assert_non_null(g_cat = cat_open(g_dir, &o, err, sizeof(err)));
	snprintf(path, sizeof(path), "%s/traces/4242", g_dir);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/traces/notes", g_dir);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/traces/%" PRId64, g_dir, kept);
	assert_int_equal(access(path, F_OK), 0);
	assert_true(cat_status(g_cat, kept) >= 0);
}

static int cat_setup(void **state)
{
	struct cat_opts o = { 0 };
	char err[256];

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/test_catalog.XXXXXX");
	if (mkdtemp(g_dir) == NULL)
		return -1;
	o.keep_failed = 86400;
	g_cat = cat_open(g_dir, &o, err, sizeof(err));
	return g_cat ? 0 : -1;
}

static int cat_teardown(void **state)
{
	char cmd[128];

	(void)state;
	cat_close(g_cat);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_order),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_retention_plan),
	};
	const struct CMUnitTest on_disk[] = {
		cmocka_unit_test(test_paging_ties),
		cmocka_unit_test(test_patch_checks),
		cmocka_unit_test(test_unrecorded_files_go),
	};

	return cmocka_run_group_tests(tests, NULL, NULL) | cmocka_run_group_tests(on_disk, cat_setup, cat_teardown);
}
