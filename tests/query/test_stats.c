/*
 * Unit tests of /stats (query/stats.c, docs/API.md): per (name, category),
 * the slices overlapping the window (both ends inclusive, an unterminated
 * slice from its ts on), their count, total and longest duration, by total
 * then name. Random windows over a random trace are checked against the
 * SQL statement that defines it; durations adding up past 2^63 - 1 give a
 * total of 2^63 - 1, not an error.
 */
#include "../testutil.h"

#include <cjson/cJSON.h>

#include "../../query/query.h"
#include "../xorshift.h"

static struct tdb T, big;
static uint64_t rng;

static int64_t rnd_in(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(xorshift64(&rng) % (uint64_t)(hi - lo + 1));
}

/* Names n0..n11 in categories c0..c2 on three threads: nested begins and
 * ends, complete events, instants, zero-length slices, async operations
 * (on many lanes), and a few never ended. */
static void write_trace(struct tdb *t)
{
	struct fxtw w;
	uint64_t ts = 1000;
	char name[8], cat[8];
	int i;

	rng = 0x2545F4914F6CDD1Du;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 1000000000);
	for (i = 0; i < 3000; i++) {
		struct fxtw_thr th = FXTW_TINL(1, 10 + (uint64_t)(i % 3));
		int64_t dur = rnd_in(0, 4) == 0 ? 0 : rnd_in(1, 5000);

		snprintf(name, sizeof(name), "n%d", (int)rnd_in(0, 11));
		snprintf(cat, sizeof(cat), "c%d", (int)rnd_in(0, 2));
		switch (rnd_in(0, 4)) {
		case 4: /* an async operation: they overlap, on many lanes */
			fxtw_async(&w, 5, th, FXTW_INL(cat), FXTW_INL(name), ts, (uint64_t)i, NULL, 0);
			if (i < 2990)
				fxtw_async(&w, 7, th, FXTW_INL(cat), FXTW_INL(name), ts + (uint64_t)dur * 3, (uint64_t)i,
					   NULL, 0);
			break;
		case 0:
			fxtw_instant(&w, th, FXTW_INL(cat), FXTW_INL(name), ts, NULL, 0);
			break;
		case 1:
			fxtw_complete(&w, th, FXTW_INL(cat), FXTW_INL(name), ts, ts + (uint64_t)dur, NULL, 0);
			break;
		default:
			fxtw_begin(&w, th, FXTW_INL(cat), FXTW_INL(name), ts, NULL, 0);
			fxtw_complete(&w, th, FXTW_INL(cat), FXTW_INL("inner"), ts + 1, ts + 2, NULL, 0);
			if (i < 2990)
				fxtw_end(&w, th, FXTW_INL(cat), FXTW_INL(name), ts + (uint64_t)dur + 3, NULL, 0);
		}
		ts += (uint64_t)rnd_in(0, 3000);
	}
	tdb_ingest(t, &w);
	fxtw_fini(&w);
	if (t->rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", t->rc, t->res.error);
}

static int setup(void **state)
{
	struct fxtw w;

	(void)state;
	write_trace(&T);
	/* "big" twice 2^62 ns long: 2^63 in all */
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 1000000000);
	fxtw_complete(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("big"), 10, 10 + ((uint64_t)1 << 62), NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("small"), 20, 30, NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 3), FXTW_INL("c"), FXTW_INL("big"), 40, 40 + ((uint64_t)1 << 62), NULL, 0);
	tdb_ingest(&big, &w);
	fxtw_fini(&w);
	assert_int_equal(big.rc, INGEST_OK);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tdb_close(&T);
	tdb_close(&big);
	return 0;
}

/* The reply of qry_stats as text (caller frees). */
static char *stats_text(sqlite3 *db, int64_t s, int64_t e, uint32_t limit)
{
	struct qry_window w = { s, e, 0, limit, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;

	jb_init(&b);
	if (qry_stats(db, &w, &b, &err) != QRY_OK)
		fail_msg("qry_stats: %s", err.msg);
	return jb_take(&b, NULL);
}

/* The same rows from the statement /stats is defined by, as the reply
 * writes them. */
static char *stats_sql(sqlite3 *db, int64_t s, int64_t e, uint32_t limit)
{
	static const char sql[] =
		"SELECT n.str, c.str, x.cnt, x.total, x.longest, count(*) OVER () FROM (SELECT name_id, category_id, "
		"count(*) AS cnt, sum(max(dur, 0)) AS total, max(dur) AS longest FROM slices WHERE ts <= ?2 AND "
		"(dur < 0 OR ts + dur >= ?1) GROUP BY name_id, category_id) x JOIN strings n ON n.id = x.name_id "
		"JOIN strings c ON c.id = x.category_id ORDER BY x.total DESC, n.str, c.str";
	sqlite3_stmt *st;
	struct jbuf b;
	uint32_t n = 0;
	int64_t all = 0;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, s);
	sqlite3_bind_int64(st, 2, e);
	jb_init(&b);
	jb_obj(&b);
	jb_key(&b, "names");
	jb_arr(&b);
	while (sqlite3_step(st) == SQLITE_ROW) {
		all = sqlite3_column_int64(st, 5);
		if (n++ >= limit)
			continue;
		jb_obj(&b);
		jb_key(&b, "name");
		jb_str(&b, (const char *)sqlite3_column_text(st, 0));
		jb_key(&b, "category");
		jb_str(&b, (const char *)sqlite3_column_text(st, 1));
		jb_key(&b, "count");
		jb_i64(&b, sqlite3_column_int64(st, 2));
		jb_key(&b, "total_dur");
		jb_i64(&b, sqlite3_column_int64(st, 3));
		jb_key(&b, "max_dur");
		jb_i64(&b, sqlite3_column_int64(st, 4));
		jb_obj_end(&b);
	}
	sqlite3_finalize(st);
	jb_arr_end(&b);
	jb_key(&b, "truncated");
	jb_bool(&b, all > (int64_t)limit);
	jb_obj_end(&b);
	return jb_take(&b, NULL);
}

static void test_windows_match_the_statement(void **state)
{
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM slices"), hi = tdb_int(&T, "SELECT max(ts) FROM slices");
	int k;

	(void)state;
	rng = 7;
	for (k = 0; k < 400; k++) {
		int64_t s = rnd_in(lo - 100, hi + 100), e = k % 5 == 0 ? s : s + rnd_in(0, (hi - lo) / 4);
		uint32_t limit = k % 3 == 0 ? (uint32_t)rnd_in(1, 20) : 1000000;
		char *got, *want;

		if (k % 7 == 0) { /* a window edge on a slice's end */
			s = tdb_int(&T, "SELECT ts + dur FROM slices WHERE dur >= 0 LIMIT 1 OFFSET %d", k);
			e = s + rnd_in(0, 1000);
		}
		if (k == 1) { /* the whole trace */
			s = INT64_MIN;
			e = INT64_MAX;
		}
		got = stats_text(T.db, s, e, limit);
		want = stats_sql(T.db, s, e, limit);
		if (strcmp(got, want) != 0)
			fail_msg("window [%lld, %lld] limit %u:\n got  %s\n want %s", (long long)s, (long long)e, limit,
				 got, want);
		free(got);
		free(want);
	}
}

/* Slices never ended count, and add nothing to the total; max_dur is -1
 * when none of a group ended. */
static void test_unterminated(void **state)
{
	char *got = stats_text(T.db, INT64_MIN, INT64_MAX, 1000000);
	cJSON *j = cJSON_Parse(got);
	const cJSON *x;
	int open = 0;

	(void)state;
	assert_non_null(j);
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "names")) {
		open += cJSON_GetObjectItemCaseSensitive(x, "count")->valueint;
	}
	assert_int_equal(open, tdb_int(&T, "SELECT count(*) FROM slices"));
	assert_true(tdb_int(&T, "SELECT count(*) FROM slices s JOIN tracks k ON k.id = s.track_id WHERE k.kind = "
				"'async' AND s.depth > 0") > 0);
	assert_true(tdb_int(&T, "SELECT count(*) FROM slices WHERE dur < 0") > 0);
	cJSON_Delete(j);
	free(got);
}

/* 2^63 ns in all: the total stops at 2^63 - 1 (a reply, not an error). */
static void test_total_stops_at_int64_max(void **state)
{
	char *got = stats_text(big.db, INT64_MIN, INT64_MAX, 1000000);

	(void)state;
	assert_string_equal(got, "{\"names\":[{\"name\":\"big\",\"category\":\"c\",\"count\":2,"
				 "\"total_dur\":9223372036854775807,\"max_dur\":4611686018427387904},"
				 "{\"name\":\"small\",\"category\":\"c\",\"count\":1,\"total_dur\":10,\"max_dur\":10}],"
				 "\"truncated\":false}");
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows_match_the_statement),
		cmocka_unit_test(test_unterminated),
		cmocka_unit_test(test_total_stops_at_int64_max),
	};

	return cmocka_run_group_tests_name("stats", tests, setup, teardown);
}
