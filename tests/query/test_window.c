/*
 * Unit tests of the window engine's search by ordinal (query/window.c):
 * qwin_bound finds what a scan of the rows finds, on rows that come
 * evenly, in bursts, all at one time, in runs of equal times and at the
 * ends of the 64-bit range, for every bound and sub-range; and it does so
 * in few probes where rows come evenly (interpolation), and in no more
 * than about twice bisection's where they do not. qwin_bound_marked finds
 * the same from the group's time marks (tracedb.h) in fewer probes still,
 * and damaged marks are refused.
 */
#include <inttypes.h>

#include "../testutil.h"

#include "../../query/window.h"

enum { ROWS = 20000 };

/* A table "slices" (what qprobe reads: ts and dur by id) with ts[i] at id i. */
static sqlite3 *rows_db(const int64_t *ts, int64_t n)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t i;

	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE slices (id INTEGER PRIMARY KEY, ts INTEGER, dur INTEGER)", NULL,
				      NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO slices VALUES (?, ?, 0)", -1, &st, NULL), SQLITE_OK);
	for (i = 0; i < n; i++) {
		sqlite3_bind_int64(st, 1, i);
		sqlite3_bind_int64(st, 2, ts[i]);
		assert_int_equal(sqlite3_step(st), SQLITE_DONE);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	return db;
}

/* The scan qwin_bound stands for. */
static int64_t scan_bound(const int64_t *ts, int64_t lo, int64_t hi, int64_t t, int strict)
{
	int64_t i;

	for (i = lo; i <= hi; i++)
		if (strict ? ts[i] > t : ts[i] >= t)
			return i;
	return hi + 1;
}

/* Probes of the last searches (statement runs), reset. */
static int probes(struct qprobe *p)
{
	return sqlite3_stmt_status(p->cur.st, SQLITE_STMTSTATUS_RUN, 1);
}

static int ceil_log2(int64_t n)
{
	int k = 0;

	while ((INT64_C(1) << k) < n)
		k++;
	return k;
}

/* The marks of rows ts[0, n) as ingest writes them, read back. */
static void marks_of(struct qmarks *m, const int64_t *ts, int64_t n)
{
	uint64_t k, count = tracedb_marks((uint64_t)n);
	uint8_t *buf = malloc(count * TRACEDB_MARK_MAX + 1);
	size_t len = 0;
	int64_t prev = 0;

	assert_non_null(buf);
	for (k = 0; k < count; k++)
		len += tracedb_mark_put(buf + len, &prev, ts[tracedb_mark_ord((uint64_t)n, k)]);
	assert_int_equal(qmarks_read(m, buf, (int)len, n), SQLITE_OK);
	assert_int_equal(m->n, count);
	free(buf);
}

/* Every t that matters (each row's ts, one either side, the ends of the
 * range) over the whole table and some sub-ranges, both bounds, searched
 * from the group's ends and from its marks; returns the most probes one
 * search took, and sets *most_marked to the most one took from the marks. */
static int check_rows_marked(const char *what, const int64_t *ts, int64_t n, int *most_marked)
{
	static const int64_t subs[][2] = { { 0, -1 }, { 0, 0 }, { 1, 7 }, { 3, -3 }, { -5, -1 } };
	struct qry_error err = { 0 };
	struct qprobe p;
	sqlite3 *db = rows_db(ts, n);
	int most = 0, strict;
	struct qmarks m = { 0 };
	size_t s;

	*most_marked = 0;
	marks_of(&m, ts, n);
	assert_int_equal(qprobe_open(&p, db, "slices", &err), QRY_OK);
	probes(&p);
	for (s = 0; s < sizeof(subs) / sizeof(subs[0]); s++) {
		int64_t lo = subs[s][0] < 0 ? n + subs[s][0] : subs[s][0];
		int64_t hi = subs[s][1] < 0 ? n + subs[s][1] : subs[s][1];
		int64_t i, step = n > 400 ? n / 397 : 1;

		if (lo < 0 || hi >= n || lo > hi)
			continue;
		for (strict = 0; strict <= 1; strict++) {
			for (i = -1; i <= n; i = i < 0 || i >= n - 1 ? i + 1 : i + step < n - 1 ? i + step : n - 1) {
				int64_t base = i < 0 ? INT64_MIN : i >= n ? INT64_MAX : ts[i];
				int64_t d;

				for (d = -1; d <= 1; d++) {
					int64_t t = base, want, got;
					int k;

					if ((d < 0 && t == INT64_MIN) || (d > 0 && t == INT64_MAX))
						continue;
					t += d;
					want = scan_bound(ts, lo, hi, t, strict);
					got = qwin_bound(&p, lo, hi, t, strict);
					if (got != want)
						fail_msg("%s: rows [%" PRId64 ", %" PRId64 "], t %" PRId64 ", strict %d: %" PRId64
							 ", a scan finds %" PRId64,
							 what, lo, hi, t, strict, got, want);
					k = probes(&p);
					if (k > most)
						most = k;
					got = qwin_bound_marked(&p, &m, lo, hi, t, strict);
					if (got != want)
						fail_msg("%s, from the marks: rows [%" PRId64 ", %" PRId64 "], t %" PRId64
							 ", strict %d: %" PRId64 ", a scan finds %" PRId64,
							 what, lo, hi, t, strict, got, want);
					k = probes(&p);
					if (k > *most_marked)
						*most_marked = k;
				}
			}
		}
	}
	assert_int_equal(qprobe_close(&p, 0), 0);
	qmarks_free(&m);
	sqlite3_close(db);
	return most;
}

static int check_rows(const char *what, const int64_t *ts, int64_t n)
{
	int most_marked, most = check_rows_marked(what, ts, n, &most_marked);

	if (most_marked > most)
		fail_msg("%s: a search from the marks took %d probes, from the ends %d", what, most_marked, most);
	return most;
}

static void test_bound_matches_a_scan(void **state)
{
	int64_t *ts = malloc(ROWS * sizeof(*ts));
	int64_t i, t;
	int most, most_marked;

	(void)state;
	assert_non_null(ts);
	/* evenly: interpolation lands next to the answer; from the marks, the
	 * rows around it are all a search reads */
	for (i = 0; i < ROWS; i++)
		ts[i] = 1000 + i * 37 + (i * 7919) % 23;
	most = check_rows_marked("even", ts, ROWS, &most_marked);
	if (most > 8)
		fail_msg("rows that come evenly took %d probes in one search (bisection: about %d)", most,
			 ceil_log2(ROWS) + 2);
	if (most_marked > 4)
		fail_msg("rows that come evenly took %d probes in one search from the marks", most_marked);

	/* in bursts: a thousand rows within a few ns, then a long gap */
	for (i = 0, t = -5000000; i < ROWS; i++) {
		t += i % 1000 == 0 ? INT64_C(1) << 40 : (i * 31) % 3;
		ts[i] = t;
	}
	most = check_rows("bursts", ts, ROWS);
	if (most > 2 * ceil_log2(ROWS) + 4)
		fail_msg("bursty rows took %d probes in one search, more than twice bisection's", most);

	/* one time only, runs of equal times, and both ends of the range */
	for (i = 0; i < ROWS; i++)
		ts[i] = 42;
	check_rows("one time", ts, ROWS);
	for (i = 0; i < ROWS; i++)
		ts[i] = (i / 500) * 10;
	check_rows("runs", ts, ROWS);
	for (i = 0; i < ROWS; i++)
		ts[i] = i < ROWS / 2 ? INT64_MIN + i : INT64_MAX - (ROWS - i);
	most = check_rows("range ends", ts, ROWS);
	if (most > 2 * ceil_log2(ROWS) + 4)
		fail_msg("rows at both ends of the range took %d probes in one search", most);
	/* ns since 1970, a few apart: as doubles, neighbours are equal */
	for (i = 0; i < ROWS; i++)
		ts[i] = INT64_C(1764000000000000000) + i * 3 + (i % 7 == 0);
	most = check_rows("epoch times", ts, ROWS);
	if (most > 2 * ceil_log2(ROWS) + 4)
		fail_msg("times near 2^60 took %d probes in one search", most);
	/* one row, two rows; a mark on the last row, and none after it */
	ts[0] = 5;
	ts[1] = 9;
	check_rows("one row", ts, 1);
	check_rows("two rows", ts, 2);
	for (i = 0; i < 2 * TRACEDB_MARK_ROWS + 2; i++)
		ts[i] = i * 3;
	check_rows("a mark and one row", ts, TRACEDB_MARK_ROWS + 1);
	check_rows("a mark and two rows", ts, TRACEDB_MARK_ROWS + 2);
	check_rows("marks only", ts, 2 * TRACEDB_MARK_ROWS + 1);
	free(ts);
}

/* Marks are counted by the group's rows: one every TRACEDB_MARK_ROWS and
 * the last; bytes that are not exactly those marks are refused. */
static void test_marks_read(void **state)
{
	static const int64_t ts[] = { INT64_MIN, -1, 0, INT64_MAX };
	uint8_t buf[4 * TRACEDB_MARK_MAX];
	struct qmarks m = { 0 };
	size_t len = 0;
	int64_t prev = 0;
	int k;

	(void)state;
	assert_int_equal(tracedb_marks(0), 0);
	assert_int_equal(tracedb_marks(1), 1);
	assert_int_equal(tracedb_marks(2), 2);
	assert_int_equal(tracedb_marks(TRACEDB_MARK_ROWS), 2);
	assert_int_equal(tracedb_marks(TRACEDB_MARK_ROWS + 1), 2);
	assert_int_equal(tracedb_marks(TRACEDB_MARK_ROWS + 2), 3);
	assert_int_equal(tracedb_mark_ord(TRACEDB_MARK_ROWS + 2, 1), TRACEDB_MARK_ROWS);
	assert_int_equal(tracedb_mark_ord(TRACEDB_MARK_ROWS + 2, 2), TRACEDB_MARK_ROWS + 1);
	assert_int_equal(tracedb_mark_ord(TRACEDB_MARK_ROWS, 1), TRACEDB_MARK_ROWS - 1);
	/* the 64-bit range's ends round trip */
	for (k = 0; k < 4; k++)
		len += tracedb_mark_put(buf + len, &prev, ts[k]);
	assert_int_equal(qmarks_read(&m, buf, (int)len, 2 * TRACEDB_MARK_ROWS + 2), SQLITE_OK);
	for (k = 0; k < 4; k++)
		assert_true(m.ts[k] == ts[k]);
	/* too few, too many, cut inside a varint, another group's */
	assert_int_equal(qmarks_read(&m, buf, (int)len, 3 * TRACEDB_MARK_ROWS + 2), SQLITE_CORRUPT);
	assert_int_equal(m.n, 0);
	assert_int_equal(qmarks_read(&m, buf, (int)len, 2), SQLITE_CORRUPT);
	assert_int_equal(qmarks_read(&m, buf, (int)len - 1, 2 * TRACEDB_MARK_ROWS + 2), SQLITE_CORRUPT);
	assert_int_equal(qmarks_read(&m, buf, (int)len, 0), SQLITE_CORRUPT);
	assert_int_equal(qmarks_read(&m, buf, 0, 0), SQLITE_OK);
	assert_int_equal(qmarks_read(&m, buf, (int)len, -1), SQLITE_CORRUPT);
	qmarks_free(&m);
}

/* A probe that fails reads as a row past every window: the search ends
 * (window.h), whatever it finds. */
static void test_bound_on_a_missing_row(void **state)
{
	struct qry_error err = { 0 };
	int64_t ts[64], i;
	struct qprobe p;
	sqlite3 *db;

	(void)state;
	for (i = 0; i < 64; i++)
		ts[i] = i * 10;
	db = rows_db(ts, 64);
	assert_int_equal(sqlite3_exec(db, "DELETE FROM slices WHERE id = 40", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(qprobe_open(&p, db, "slices", &err), QRY_OK);
	for (i = -5; i < 700; i += 5) {
		int64_t got = qwin_bound(&p, 0, 63, i, 0);

		assert_true(got >= 0 && got <= 64);
		/* up to the missing row's time every probe reads true */
		if (i <= 400)
			assert_int_equal(got, scan_bound(ts, 0, 63, i, 0));
	}
	assert_int_equal(qprobe_close(&p, 0), 0);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound_matches_a_scan),
		cmocka_unit_test(test_bound_on_a_missing_row),
		cmocka_unit_test(test_marks_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
