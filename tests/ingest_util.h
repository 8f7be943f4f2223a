/*
 * Helpers of the ingest unit tests (tests/ingest/test_resolve.c, test_match.c,
 * test_write.c, test_ingest.c): archives written bit for bit with the test
 * writer go through ingest_file(), and the database is read back with SQL.
 * Static inline so that each test file uses the ones it needs.
 */
#ifndef TESTS_INGEST_UTIL_H
#define TESTS_INGEST_UTIL_H

#include <inttypes.h>

/* testutil.h's snprintf of t->path can in principle truncate (64-byte
 * buffers); GCC's -Wformat-truncation rejects it at -O2. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include "testutil.h"
#pragma GCC diagnostic pop
#include "db_compare.h"

#define C FXTW_INL("c")

/* A fresh writer with the magic record and provider 1 "test". */
static inline void t_open(struct fxtw *w)
{
	fxtw_init(w, 0);
	fxtw_magic(w);
	fxtw_provider_info(w, 1, "test");
}

/* Ingests w (then freed) and requires success. */
static inline void t_ingest(struct tdb *t, struct fxtw *w)
{
	tdb_ingest(t, w);
	fxtw_fini(w);
	if (t->rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", t->rc, t->res.error);
}

/* Every slice as "name|ts|dur|depth|parent name|pid|tid" (pid only for
 * tracks without a thread), in (ts, id) order. */
#define SLICES_SQL                                                                                                     \
	"SELECT v.name, v.ts, v.dur, v.depth, ifnull(p.name, '-'), ifnull(th.pid, tr.pid), ifnull(th.tid, '-') "       \
	"FROM slice_view v JOIN tracks tr ON tr.id = v.track_id LEFT JOIN threads th ON th.id = tr.thread_id "        \
	"LEFT JOIN slice_view p ON p.id = v.parent_id "

static inline char *t_slices(struct tdb *t)
{
	return tdb_rows(t, SLICES_SQL "ORDER BY v.ts, v.id");
}

/* The args of the arg set as "key=value,..." in seq order; "" when none. */
static inline char *t_args_of_set(struct tdb *t, const char *set_sql)
{
	return tdb_rows(t,
			"SELECT ifnull(group_concat(kv, ','), '') FROM (SELECT key || '=' || ifnull(value, 'null') AS kv "
			"FROM arg_view WHERE arg_set_id = (%s) ORDER BY seq)",
			set_sql);
}

/* The args of the one slice named name. */
static inline char *t_args(struct tdb *t, const char *name)
{
	char sql[256];

	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slice_view WHERE name = '%s'", name), 1);
	snprintf(sql, sizeof(sql), "SELECT arg_set_id FROM slice_view WHERE name = '%s'", name);
	return t_args_of_set(t, sql);
}

/* The rows of table `table` with their group (track_id, depth: `grp` is
 * the SQL of both for a row r) and ordinal, by table extents. */
#define T_ORDS(table, grp)                                                                                             \
	"WITH o AS (SELECT r.*, x.track_id AS g_track, x.depth AS g_depth, x.first_ord + r.id - x.first_id AS ord "    \
	"FROM " table " r JOIN extents x ON (x.track_id, x.depth) = (" grp ") "                                          \
	"AND r.id BETWEEN x.first_id AND x.first_id + x.count - 1) "

/*
 * Where a grouped table's rows lie (schema/trace.sql, table extents), for
 * the groups of `table` (nrows rows in all; grp gives a row's group): a
 * group's extents follow one another in ordinals from 0 and in ids; each
 * row lies in exactly one extent of its group; ts never decreases with the
 * ordinal.
 */
static inline void t_check_extents(struct tdb *t, const char *table, const char *grp, const char *groups)
{
	int64_t n = tdb_int(t, "SELECT count(*) FROM %s", table);

	/* extents in order without gaps: each starts where the one before ended */
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM extents x WHERE (x.track_id, x.depth) IN (%s) AND "
				    "x.first_ord != ifnull((SELECT y.first_ord + y.count FROM extents y WHERE "
				    "y.track_id = x.track_id AND y.depth = x.depth AND y.first_ord < x.first_ord "
				    "ORDER BY y.first_ord DESC LIMIT 1), 0)", groups),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM extents x JOIN extents y ON y.track_id = x.track_id AND "
				    "y.depth = x.depth AND y.first_ord > x.first_ord WHERE (x.track_id, x.depth) IN (%s) "
				    "AND y.first_id < x.first_id + x.count", groups),
			 0);
	assert_int_equal(tdb_int(t, "SELECT ifnull(sum(count), 0) FROM extents WHERE (track_id, depth) IN (%s)", groups),
			 n);
	assert_int_equal(tdb_int(t, T_ORDS("%s", "%s") "SELECT count(*) FROM o", table, grp), n);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM %s r WHERE (SELECT count(*) FROM extents x WHERE "
				    "(x.track_id, x.depth) IN (%s) AND r.id BETWEEN x.first_id AND x.first_id + x.count - 1) "
				    "!= 1", table, groups),
			 0);
	assert_int_equal(tdb_int(t, T_ORDS("%s", "%s") "SELECT count(*) FROM o a JOIN o b ON b.g_track = a.g_track "
				    "AND b.g_depth = a.g_depth AND b.ord = a.ord + 1 WHERE b.ts < a.ts", table, grp),
			 0);
}

/* Each group's time marks (tracedb.h) are the ts of its rows of ordinals
 * tracedb_mark_ord(count, k), in order. groups: (track_id, depth, count,
 * marks) of each group; ts: a row's ts by (?1 track, ?2 depth, ?3 ordinal). */
static inline void t_check_marks_of(struct tdb *t, const char *groups, const char *ts_sql)
{
	sqlite3_stmt *st, *ts;
	int64_t *want = NULL;

	if (sqlite3_prepare_v2(t->db, groups, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(t->db, ts_sql, -1, &ts, NULL) != SQLITE_OK)
		fail_msg("bad SQL: %s", sqlite3_errmsg(t->db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t rows = (uint64_t)sqlite3_column_int64(st, 2), k, n = tracedb_marks(rows);

		want = realloc(want, (n + 1) * sizeof(*want));
		assert_non_null(want);
		if (sqlite3_column_type(st, 3) != SQLITE_BLOB && rows > 0)
			fail_msg("track %lld depth %lld has no marks", (long long)sqlite3_column_int64(st, 0),
				 (long long)sqlite3_column_int64(st, 1));
		if (tracedb_marks_read(sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3), rows, want) != 0)
			fail_msg("the marks of track %lld depth %lld do not decode as %llu rows' marks",
				 (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
				 (unsigned long long)rows);
		for (k = 0; k < n; k++) {
			sqlite3_bind_int64(ts, 1, sqlite3_column_int64(st, 0));
			sqlite3_bind_int64(ts, 2, sqlite3_column_int64(st, 1));
			sqlite3_bind_int64(ts, 3, (int64_t)tracedb_mark_ord(rows, k));
			assert_int_equal(sqlite3_step(ts), SQLITE_ROW);
			if (sqlite3_column_int64(ts, 0) != want[k])
				fail_msg("mark %llu of track %lld depth %lld: %lld, its row's ts is %lld",
					 (unsigned long long)k, (long long)sqlite3_column_int64(st, 0),
					 (long long)sqlite3_column_int64(st, 1), (long long)want[k],
					 (long long)sqlite3_column_int64(ts, 0));
			sqlite3_reset(ts);
		}
	}
	sqlite3_finalize(ts);
	sqlite3_finalize(st);
	free(want);
}

/* The time marks of slices by (track, depth), of counter points and of
 * cpu runs by track. */
static inline void t_check_marks(struct tdb *t)
{
#define T_TRACK_GROUPS(kind)                                                                                           \
	"SELECT id, 0, (SELECT ifnull(sum(count), 0) FROM extents x WHERE x.track_id = k.id), marks FROM tracks k "    \
	"WHERE kind = '" kind "'"
#define T_TS_AT "SELECT ts FROM o WHERE g_track = ?1 AND g_depth = ?2 AND ord = ?3"
	t_check_marks_of(t, "SELECT track_id, depth, count, marks FROM track_depths",
			 T_ORDS("slices", "r.track_id, r.depth") T_TS_AT);
	t_check_marks_of(t, T_TRACK_GROUPS("counter"), T_ORDS("counters", "r.track_id, 0") T_TS_AT);
	t_check_marks_of(t, T_TRACK_GROUPS("cpu"),
			 T_ORDS("sched", "SELECT id, 0 FROM tracks k WHERE k.kind = 'cpu' AND k.cpu = r.cpu") T_TS_AT);
#undef T_TRACK_GROUPS
#undef T_TS_AT
}

/*
 * The layout invariants of schema/trace.sql and of Meaning 4-5: extents
 * locate every slice, counter point and cpu run (t_check_extents), and
 * track_depths counts the slices of each (track, depth), with max_dur at
 * least every dur (an unterminated slice counting up to the trace end); no
 * two slices of one (track, depth) overlap (an instant must not fall inside
 * another slice of its depth); a parent is one level up on the same track;
 * tracks.max_depth is the deepest depth; time marks (t_check_marks). With one extent per group (the
 * default, `clustered`) ids run from 1 without gaps in (track, depth, ts)
 * order.
 */
static inline void t_check_layout_of(struct tdb *t, int clustered)
{
	int64_t n = tdb_int(t, "SELECT count(*) FROM slices");

	t_check_extents(t, "slices", "r.track_id, r.depth", "SELECT track_id, depth FROM track_depths");
	t_check_extents(t, "counters", "r.track_id, 0", "SELECT id, 0 FROM tracks WHERE kind = 'counter'");
	t_check_extents(t, "sched", "SELECT id, 0 FROM tracks k WHERE k.kind = 'cpu' AND k.cpu = r.cpu",
			"SELECT id, 0 FROM tracks WHERE kind = 'cpu'");
	assert_int_equal(tdb_int(t, "SELECT ifnull(sum(count), 0) FROM track_depths"), n);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM track_depths d WHERE d.count != (SELECT count(*) FROM "
				    "slices s WHERE s.track_id = d.track_id AND s.depth = d.depth)"),
			 0);
	t_check_marks(t);
	if (clustered) {
		assert_int_equal(tdb_int(t, "SELECT ifnull(max(id), 0) FROM slices"), n);
		assert_int_equal(tdb_int(t, "SELECT count(*) FROM extents WHERE first_ord != 0"), 0);
		assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices a JOIN slices b ON b.id = a.id + 1 "
					    "WHERE (b.track_id, b.depth, b.ts) < (a.track_id, a.depth, a.ts)"),
				 0);
		assert_int_equal(tdb_int(t, "SELECT count(*) FROM counters a JOIN counters b ON b.id = a.id + 1 "
					    "WHERE (b.track_id, b.ts) < (a.track_id, a.ts)"),
				 0);
		assert_int_equal(tdb_int(t, "SELECT count(*) FROM sched a JOIN sched b ON b.id = a.id + 1 "
					    "WHERE b.cpu < a.cpu OR (b.cpu = a.cpu AND b.ts < a.ts)"),
				 0);
	}
	/* sorted by start, no overlap anywhere iff none between neighbours */
	assert_int_equal(tdb_int(t, T_ORDS("slices", "r.track_id, r.depth") "SELECT count(*) FROM o a JOIN o b ON "
				    "b.g_track = a.g_track AND b.g_depth = a.g_depth AND b.ord = a.ord + 1 "
				    "WHERE a.dur < 0 OR b.ts < a.ts + a.dur"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices s JOIN track_depths d ON d.track_id = s.track_id "
				    "AND d.depth = s.depth WHERE d.max_dur < CASE WHEN s.dur < 0 THEN "
				    "(SELECT value FROM meta WHERE key = 'end_ns') - s.ts ELSE s.dur END"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices s JOIN slices p ON p.id = s.parent_id "
				    "WHERE p.track_id != s.track_id OR p.depth != s.depth - 1 OR p.ts > s.ts"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices WHERE parent_id IS NULL AND depth > 0 AND "
				    "track_id IN (SELECT id FROM tracks WHERE kind = 'thread')"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM tracks tr WHERE tr.max_depth != "
				    "(SELECT ifnull(max(depth), 0) FROM slices s WHERE s.track_id = tr.id)"),
			 0);
}

static inline void t_check_layout(struct tdb *t)
{
	t_check_layout_of(t, 1);
}

/*
 * Scopes written at their end, as a program's scope macros write them:
 * frames of 10 ms on two threads, each with `inner` scopes holding a leaf,
 * then the frame's own complete event, whose begin comes after all of
 * them in the file (late for a window narrower than a frame).
 */
static inline void t_write_scopes(struct fxtw *w, uint64_t frames, uint64_t inner)
{
	uint64_t step = 9000000 / inner, f, i, k;

	for (f = 0; f < frames; f++) {
		uint64_t fs = 1000 + f * 10000000;

		for (i = 0; i < inner; i++)
			for (k = 0; k < 2; k++) {
				uint64_t is = fs + 100 + i * step + k;

				fxtw_complete(w, FXTW_TINL(1, 2 + k), C, FXTW_INL("leaf"), is + 10, is + step / 3, NULL, 0);
				fxtw_complete(w, FXTW_TINL(1, 2 + k), C, FXTW_INL("inner"), is, is + step * 5 / 6, NULL, 0);
			}
		for (k = 0; k < 2; k++)
			fxtw_complete(w, FXTW_TINL(1, 2 + k), C, FXTW_INL("frame"), fs + k, fs + 9500000, NULL, 0);
	}
}

/* ---- two databases compared ---------------------------------------- */

/* The single integer sql gives (db_compare.h); fails the test when it cannot. */
static inline int64_t scalar(sqlite3 *db, const char *sql)
{
	char why[512];
	int64_t v = 0;

	if (dbc_scalar(db, sql, &v, why, sizeof(why)) != 0)
		fail_msg("%s", why);
	return v;
}

/* How many tables of a hold other rows than b's, the first described in
 * why (db_compare.h); fails the test when they cannot be read. */
static inline int tables_differ(const char *a, const char *b, char *why, size_t whylen)
{
	int n = dbc_tables_differ(a, b, why, whylen);

	if (n < 0)
		fail_msg("%s", why);
	return n;
}

/* Every table of a and b holds the same rows (and they have the same tables). */
static inline void same_tables(const char *a, const char *b)
{
	char why[512];

	if (tables_differ(a, b, why, sizeof(why)) != 0)
		fail_msg("%s", why);
}

/* A growing trace's commit keeps every rule of db_compare.h
 * (dbc_commit_rules), read in one read transaction: one commit throughout. */
static inline void t_check_commit(const char *db_path)
{
	char why[512];

	if (dbc_commit_broken(db_path, why, sizeof(why)) != 0)
		fail_msg("%s", why);
}

/* The whole file at path (malloc'd), its length in *n; fails the test when it cannot be read. */
static inline uint8_t *t_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

#endif
