/*
 * Unit tests of comparing two traces (query/compare.c): the percentiles
 * are exact nearest rank, the ceil(p/100 * n)-th smallest of the ended
 * slices (docs/API.md, GET /api/compare).
 *
 * The sizes are those where nearest rank and its usual off-by-one
 * readings (floor(p/100 * n) + 1, round, the rank taken as an index) part
 * ways: n = 21 alone, where they agree, let such a break pass. Each name
 * "nN" has N slices on one thread whose durations are 10, 20, ... 10 N ns
 * in a shuffled order, so that the k-th smallest is 10 k; trace b has the
 * same slices three times as long. Every name also has one slice that
 * never ends, on a thread of its own: counted, not ended, in no figure.
 */
#include "../testutil.h"

#include <cjson/cJSON.h>

#include "../../query/query.h"
#include "../xorshift.h"

/* n, then the expected rank of p50 and p95 (worked out by hand). */
static const struct {
	int n, p50, p95;
} sizes[] = {
	{ 1, 1, 1 },    { 2, 1, 2 },    { 3, 2, 3 },    { 4, 2, 4 },     { 5, 3, 5 },    { 10, 5, 10 },
	{ 19, 10, 19 }, { 20, 10, 19 }, { 21, 11, 20 }, { 40, 20, 38 }, { 99, 50, 95 }, { 100, 50, 95 },
};
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };

static struct tdb ta, tb;

/* Every name's slices, durations scaled by scale, in one shuffled order. */
static void write_trace(struct tdb *t, int64_t scale)
{
	struct { int size; int k; } v[512];
	size_t n = 0, i;
	uint64_t rng = 0x9e3779b97f4a7c15u, ts = 1000;
	struct fxtw w;
	char name[16];

	for (i = 0; i < NSIZES; i++) {
		int k;

		for (k = 1; k <= sizes[i].n; k++) {
			assert_true(n < sizeof(v) / sizeof(v[0]));
			v[n].size = sizes[i].n;
			v[n++].k = k;
		}
	}
	for (i = n - 1; i > 0; i--) { /* Fisher-Yates */
		size_t j = (size_t)(xorshift64(&rng) % (i + 1));
		int s = v[i].size, k = v[i].k;

		v[i] = v[j];
		v[j].size = s;
		v[j].k = k;
	}
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "test");
	fxtw_init_record(&w, 1000000000);
	fxtw_thread(&w, 1, 1, 11);
	fxtw_thread(&w, 2, 1, 12);
	for (i = 0; i < n; i++) {
		uint64_t dur = (uint64_t)(10 * v[i].k * scale);

		snprintf(name, sizeof(name), "n%d", v[i].size);
		fxtw_complete(&w, FXTW_TIDX(1), FXTW_INL("c"), FXTW_INL(name), ts, ts + dur, NULL, 0);
		ts += dur + 5;
	}
	/* one unterminated slice of every name, nested on thread 12 */
	for (i = 0; i < NSIZES; i++) {
		snprintf(name, sizeof(name), "n%d", sizes[i].n);
		fxtw_begin(&w, FXTW_TIDX(2), FXTW_INL("c"), FXTW_INL(name), 100 + i, NULL, 0);
	}
	tdb_ingest(t, &w);
	fxtw_fini(&w);
	if (t->rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", t->rc, t->res.error);
}

static int setup(void **state)
{
	(void)state;
	write_trace(&ta, 1);
	write_trace(&tb, 3);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tdb_close(&ta);
	tdb_close(&tb);
	return 0;
}

static cJSON *run_compare(enum qry_compare_sort sort)
{
	struct qry_compare_opts o = { { INT64_MIN, INT64_MAX, 0, 0, 0, 0, 0 },
				      { INT64_MIN, INT64_MAX, 0, 0, 0, 0, 0 },
				      0, sort, 1000 };
	struct qry_error err = { 0 };
	struct jbuf b;
	cJSON *j;
	char *s;

	jb_init(&b);
	if (qry_compare(ta.db, tb.db, &o, &b, &err) != QRY_OK)
		fail_msg("qry_compare: %s", err.msg);
	s = jb_take(&b, NULL);
	if ((j = cJSON_Parse(s)) == NULL)
		fail_msg("not JSON: %s", s);
	free(s);
	return j;
}

static int64_t num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("no number %s", key);
	return (int64_t)v->valuedouble;
}

static const cJSON *row_named(const cJSON *j, const char *name)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "rows")) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(r, "name");

		if (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0)
			return r;
	}
	fail_msg("no row %s", name);
	return NULL;
}

/* One side's figures for size i with durations scaled by scale. */
static void expect_side(const cJSON *s, size_t i, int64_t scale, const char *name)
{
	int64_t n = sizes[i].n;

	if (num_of(s, "p50") != 10 * sizes[i].p50 * scale || num_of(s, "p95") != 10 * sizes[i].p95 * scale)
		fail_msg("%s: n=%lld p50 %lld p95 %lld, expected %lld and %lld (nearest rank)", name, (long long)n,
			 (long long)num_of(s, "p50"), (long long)num_of(s, "p95"),
			 (long long)(10 * sizes[i].p50 * scale), (long long)(10 * sizes[i].p95 * scale));
	assert_int_equal(num_of(s, "count"), n + 1);
	assert_int_equal(num_of(s, "ended"), n);
	assert_int_equal(num_of(s, "total"), 10 * scale * n * (n + 1) / 2);
	assert_int_equal(num_of(s, "max"), 10 * scale * n);
	assert_int_equal(num_of(cJSON_GetObjectItemCaseSensitive(s, "slowest"), "dur"), 10 * scale * n);
}

static void test_nearest_rank(void **state)
{
	cJSON *j = run_compare(QRY_CMP_TOTAL);
	char name[16];
	size_t i;

	(void)state;
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "rows")), NSIZES);
	for (i = 0; i < NSIZES; i++) {
		const cJSON *r, *d;

		snprintf(name, sizeof(name), "n%d", sizes[i].n);
		r = row_named(j, name);
		expect_side(cJSON_GetObjectItemCaseSensitive(r, "a"), i, 1, name);
		expect_side(cJSON_GetObjectItemCaseSensitive(r, "b"), i, 3, name);
		d = cJSON_GetObjectItemCaseSensitive(r, "delta");
		assert_int_equal(num_of(d, "p50"), 20 * sizes[i].p50);
		assert_int_equal(num_of(d, "p95"), 20 * sizes[i].p95);
		assert_int_equal(num_of(d, "count"), 0);
	}
	cJSON_Delete(j);
}

/* Durations adding up past 2^63 - 1 (two of 2^62 ns): the total stops
 * there, as name_stats' does, instead of wrapping to -2^63. */
static void test_total_stops_at_int64_max(void **state)
{
	struct qry_compare_opts o = { { INT64_MIN, INT64_MAX, 0, 0, 0, 0, 0 },
				      { INT64_MIN, INT64_MAX, 0, 0, 0, 0, 0 },
				      0, QRY_CMP_TOTAL, 1000 };
	struct qry_error err = { 0 };
	struct tdb t;
	struct fxtw w;
	struct jbuf b;
	char *s;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 1000000000);
	fxtw_complete(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("long"), 10, 10 + ((uint64_t)1 << 62), NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 3), FXTW_INL("c"), FXTW_INL("long"), 40, 40 + ((uint64_t)1 << 62), NULL, 0);
	tdb_ingest(&t, &w);
	fxtw_fini(&w);
	assert_int_equal(t.rc, INGEST_OK);
	jb_init(&b);
	assert_int_equal(qry_compare(t.db, ta.db, &o, &b, &err), QRY_OK);
	s = jb_take(&b, NULL);
	if (strstr(s, "{\"name\":\"long\",\"a\":{\"count\":2,\"ended\":2,\"total\":9223372036854775807,") == NULL)
		fail_msg("%s", s);
	free(s);
	tdb_close(&t);
}

/* A window with no slice in it, on either side: no rows, by name or by
 * thread (the groups' array is never made then, and is not sorted). */
static void test_empty_window(void **state)
{
	int by;

	(void)state;
	for (by = 0; by < 2; by++) {
		struct qry_compare_opts o = { { INT64_MAX - 10, INT64_MAX, 0, 0, 0, 0, 0 },
					      { INT64_MAX - 10, INT64_MAX, 0, 0, 0, 0, 0 },
					      by, QRY_CMP_TOTAL, 1000 };
		struct qry_error err = { 0 };
		struct jbuf b;
		char *s;

		jb_init(&b);
		assert_int_equal(qry_compare(ta.db, ta.db, &o, &b, &err), QRY_OK);
		s = jb_take(&b, NULL);
		if (strstr(s, "\"rows\":[]") == NULL)
			fail_msg("%s", s);
		free(s);
	}
}

/* ---- against a reference: every slice read and sorted ------------------ */

struct ref {
	char text[64];
	uint64_t count, ended;
	int64_t total, p50, p95, max, slowest;
};

/* The groups of db's slices starting in [s, e] (by process name, thread
 * name and name when by_thread), as docs/API.md defines them, read the
 * plain way. */
static size_t reference(sqlite3 *db, int by_thread, int64_t s, int64_t e, struct ref *out, size_t max)
{
	sqlite3_stmt *st;
	int64_t *d = malloc(200000 * sizeof(*d));
	size_t n = 0, nd = 0;
	char cur[64] = "";
	int rc;

	assert_non_null(d);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT CASE WHEN ?3 THEN coalesce(p.name, '') || char(31) || "
					    "coalesce(th.name, '') || char(31) ELSE '' END || n.str AS k, s.dur, s.id "
					    "FROM slices s JOIN tracks t ON t.id = s.track_id LEFT JOIN threads th ON "
					    "th.id = t.thread_id LEFT JOIN processes p ON p.pid = t.pid JOIN strings n ON "
					    "n.id = s.name_id WHERE s.ts BETWEEN ?1 AND ?2 ORDER BY k, s.dur, s.id",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(st, 1, s);
	sqlite3_bind_int64(st, 2, e);
	sqlite3_bind_int(st, 3, by_thread);
	for (;;) {
		const char *k;
		struct ref *r;
		int64_t dur;

		rc = sqlite3_step(st);
		k = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : "";
		if (n > 0 && (rc != SQLITE_ROW || strcmp(k, cur) != 0) && nd > 0) { /* the group before ends */
			r = &out[n - 1];
			r->p50 = d[(r->ended * 50 + 99) / 100 - 1];
			r->p95 = d[(r->ended * 95 + 99) / 100 - 1];
		}
		if (rc != SQLITE_ROW)
			break;
		if (n == 0 || strcmp(k, cur) != 0) {
			assert_true(n < max && strlen(k) < sizeof(cur));
			strcpy(cur, k);
			r = &out[n++];
			memset(r, 0, sizeof(*r));
			strcpy(r->text, k);
			nd = 0;
		}
		r = &out[n - 1];
		dur = sqlite3_column_int64(st, 1);
		r->count++;
		if (dur < 0)
			continue;
		r->ended++;
		r->total += dur;
		r->max = dur;
		r->slowest = sqlite3_column_int64(st, 2);
		assert_true(nd < 200000);
		d[nd++] = dur;
	}
	assert_int_equal(rc, SQLITE_DONE);
	sqlite3_finalize(st);
	free(d);
	return n;
}

/* Threads sharing names (a pool of "worker"s in one process, a "main" in
 * each of two: two rows by thread, not one), names of a few slices and of
 * thousands (past what a group keeps before its histogram), durations
 * spread over nine decades with repeats, and slices that never end, async
 * operations on many lanes (thread "", in their process); random windows,
 * by name and by thread: every figure as the reference has it, one row per
 * text. */
static void test_against_reference(void **state)
{
	static const char *const threads[] = { "main", "worker", "worker", "", "io", "main" };
	static struct ref want[4096];
	uint64_t rng = 0x853c49e6748fea9bu, ts = 1000;
	struct tdb t;
	struct fxtw w;
	int i, k;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 1000000000);
	fxtw_kernel_object(&w, 1, FXTW_INL("app"), 1, NULL, 0);
	fxtw_kernel_object(&w, 1, FXTW_INL("compositor"), 2, NULL, 0);
	for (i = 0; i < 6; i++) {
		fxtw_thread(&w, (uint8_t)(i + 1), (uint64_t)(1 + i / 3), (uint64_t)(10 + i));
		if (threads[i][0])
			fxtw_kernel_object(&w, 2, FXTW_INL(threads[i]), (uint64_t)(10 + i), NULL, 0);
	}
	for (i = 0; i < 30000; i++) {
		uint64_t r = xorshift64(&rng), dur;
		char name[16];
		struct fxtw_thr th = FXTW_TIDX((uint8_t)(1 + r % 6));

		snprintf(name, sizeof(name), "s%u", (unsigned)(r >> 8) % 4 == 0 ? (unsigned)(r >> 12) % 40 : (unsigned)(r >> 12) % 3);
		dur = (r >> 20) % 5 == 0 ? (uint64_t)((r >> 24) % 7) * 1000 : (uint64_t)1 << ((r >> 24) % 30);
		dur += (r >> 40) % 3 == 0 ? 0 : (r >> 44) % (dur + 1);
		if ((r >> 50) % 97 == 0) {
			fxtw_begin(&w, th, FXTW_INL("c"), FXTW_INL(name), ts, NULL, 0);
		} else if ((r >> 50) % 97 < 8) { /* an async operation: they overlap, on many lanes */
			fxtw_async(&w, 5, th, FXTW_INL("c"), FXTW_INL(name), ts, (uint64_t)i, NULL, 0);
			fxtw_async(&w, 7, th, FXTW_INL("c"), FXTW_INL(name), ts + dur, (uint64_t)i, NULL, 0);
		} else
			fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL(name), ts, ts + dur, NULL, 0);
		ts += 1 + (r >> 56);
	}
	tdb_ingest(&t, &w);
	fxtw_fini(&w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM threads WHERE name = 'worker'"), 2);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM threads WHERE name = 'main'"), 2);
	assert_int_equal(tdb_int(&t, "SELECT count(DISTINCT pid) FROM threads WHERE name = 'main'"), 2);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM processes WHERE name IN ('app', 'compositor')"), 2);
	assert_true(tdb_int(&t, "SELECT max(c) FROM (SELECT count(*) AS c FROM slices GROUP BY name_id)") > 1000);
	assert_true(tdb_int(&t, "SELECT count(*) FROM slices s JOIN tracks k ON k.id = s.track_id WHERE k.kind = "
				"'async' AND s.depth > 2") > 0);
	for (k = 0; k < 40; k++) {
		int by_thread = k % 2;
		int64_t s = k < 2 ? INT64_MIN : 1000 + (int64_t)(xorshift64(&rng) % ts);
		int64_t e = k < 2 ? INT64_MAX : s + (int64_t)(xorshift64(&rng) % (ts / 2));
		struct qry_compare_opts o = { { s, e, 0, 0, 0, 0, 0 }, { s, e, 0, 0, 0, 0, 0 }, by_thread, QRY_CMP_TOTAL,
					      1000000 };
		struct qry_error err = { 0 };
		size_t n = reference(t.db, by_thread, s, e, want, sizeof(want) / sizeof(want[0])), j;
		const cJSON *row;
		struct jbuf b;
		cJSON *got;
		char *txt;

		jb_init(&b);
		assert_int_equal(qry_compare(t.db, t.db, &o, &b, &err), QRY_OK);
		txt = jb_take(&b, NULL);
		got = cJSON_Parse(txt);
		free(txt);
		assert_non_null(got);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(got, "rows")), (int)n);
		cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(got, "rows")) {
			const cJSON *a = cJSON_GetObjectItemCaseSensitive(row, "a");
			const cJSON *th = cJSON_GetObjectItemCaseSensitive(row, "thread");
			const cJSON *pr = cJSON_GetObjectItemCaseSensitive(row, "process");
			char text[64];

			if (by_thread && (!cJSON_IsString(th) || !cJSON_IsString(pr)))
				fail_msg("a row by thread without its process and thread");
			snprintf(text, sizeof(text), "%s%s%s%s%s", by_thread ? pr->valuestring : "", by_thread ? "\x1f" : "",
				 by_thread ? th->valuestring : "", by_thread ? "\x1f" : "",
				 cJSON_GetObjectItemCaseSensitive(row, "name")->valuestring);
			for (j = 0; j < n && strcmp(want[j].text, text) != 0; j++)
				;
			if (j == n)
				fail_msg("a row %s the reference does not have", text);
			if (num_of(a, "count") != (int64_t)want[j].count || num_of(a, "ended") != (int64_t)want[j].ended ||
			    num_of(a, "total") != want[j].total ||
			    (want[j].ended && (num_of(a, "p50") != want[j].p50 || num_of(a, "p95") != want[j].p95 ||
					       num_of(a, "max") != want[j].max ||
					       num_of(cJSON_GetObjectItemCaseSensitive(a, "slowest"), "id") != want[j].slowest)))
				fail_msg("window %d row %s: got count %lld ended %lld total %lld p50 %lld p95 %lld max %lld; "
					 "want %llu %llu %lld %lld %lld %lld",
					 k, text, (long long)num_of(a, "count"), (long long)num_of(a, "ended"),
					 (long long)num_of(a, "total"), (long long)num_of(a, "p50"), (long long)num_of(a, "p95"),
					 (long long)num_of(a, "max"), (unsigned long long)want[j].count,
					 (unsigned long long)want[j].ended, (long long)want[j].total, (long long)want[j].p50,
					 (long long)want[j].p95, (long long)want[j].max);
			want[j].text[0] = '\0'; /* one row per text */
		}
		cJSON_Delete(got);
	}
	tdb_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nearest_rank),
		cmocka_unit_test(test_total_stops_at_int64_max),
		cmocka_unit_test(test_empty_window),
		cmocka_unit_test(test_against_reference),
	};

	return cmocka_run_group_tests_name("compare", tests, setup, teardown);
}
