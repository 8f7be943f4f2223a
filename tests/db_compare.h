/*
 * Two trace databases compared, and a growing trace's commit checked,
 * without a test framework: the rules the unit tests assert
 * (tests/ingest_util.h: tables_differ, t_check_commit) and the fuzz target
 * of a growing trace (tests/fuzz_grow.c) reports, written once.
 * Static inline, so that each file uses the ones it needs.
 */
#ifndef TESTS_DB_COMPARE_H
#define TESTS_DB_COMPARE_H

#include <inttypes.h>
#include <stdio.h>

#include <sqlite3.h>

/* The single integer sql gives on db into *v; 0, or -1 (why says what failed). */
static inline int dbc_scalar(sqlite3 *db, const char *sql, int64_t *v, char *why, size_t whylen)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(why, whylen, "%.300s: %.150s", sql, sqlite3_errmsg(db));
		return -1;
	}
	if ((rc = sqlite3_step(st)) != SQLITE_ROW)
		snprintf(why, whylen, "%.300s: no row: %.150s", sql, sqlite3_errmsg(db));
	else
		*v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

/*
 * How many tables of the database a hold other rows than b's (a table only
 * one has counts too), the first described in why: a trace ingested another
 * way (a stream, a snapshot) against the file's. -1 when a database could
 * not be read, or holds fewer than ten tables (not a trace's): why says so.
 */
static inline int dbc_tables_differ(const char *a, const char *b, char *why, size_t whylen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char sql[1024], err[512];
	int64_t v, na, nb;
	int tables = 0, differ = 0, failed = 0, step = SQLITE_ROW;

	why[0] = '\0';
	snprintf(sql, sizeof(sql), "ATTACH '%s' AS b", b);
	if (sqlite3_open_v2(a, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(why, whylen, "cannot open %.150s with %.150s: %.100s", a, b, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -1;
	}
	/* tables that only one of them has */
	failed = dbc_scalar(db, "SELECT count(*) FROM (SELECT name FROM main.sqlite_master WHERE type = 'table' "
			    "EXCEPT SELECT name FROM b.sqlite_master WHERE type = 'table')", &na, err, sizeof(err)) ||
		 dbc_scalar(db, "SELECT count(*) FROM (SELECT name FROM b.sqlite_master WHERE type = 'table' "
			    "EXCEPT SELECT name FROM main.sqlite_master WHERE type = 'table')", &nb, err, sizeof(err));
	if (!failed && sqlite3_prepare_v2(db,
					  "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT "
					  "LIKE 'sqlite_%' AND name IN (SELECT name FROM b.sqlite_master) ORDER BY name",
					  -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, sizeof(err), "%s", sqlite3_errmsg(db));
		failed = 1;
	}
	if (failed) {
		snprintf(why, whylen, "%s", err);
		sqlite3_close(db);
		return -1;
	}
	differ = (int)(na + nb);
	if (differ)
		snprintf(why, whylen, "the tables are not the same");
	while (!failed && (step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);

		snprintf(sql, sizeof(sql), "SELECT count(*) FROM main.\"%s\"", t);
		failed = dbc_scalar(db, sql, &na, err, sizeof(err));
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM b.\"%s\"", t);
		failed = failed ? failed : dbc_scalar(db, sql, &nb, err, sizeof(err));
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM (SELECT * FROM main.\"%s\" EXCEPT SELECT * FROM b.\"%s\")", t, t);
		failed = failed ? failed : dbc_scalar(db, sql, &v, err, sizeof(err));
		if (!failed && (na != nb || v != 0)) {
			if (!differ)
				snprintf(why, whylen, "table %s: %" PRId64 " rows, %" PRId64 " ingested as a file%s", t,
					 na, nb, na == nb ? ", but not the same rows" : "");
			differ++;
		}
		tables++;
	}
	if (!failed && step != SQLITE_DONE) { /* the list of tables ended early: not a short success */
		snprintf(err, sizeof(err), "the tables' list: %.300s", sqlite3_errmsg(db));
		failed = 1;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (failed)
		snprintf(why, whylen, "%s", err);
	else if (tables < 10)
		snprintf(why, whylen, "%.200s and %.200s share %d tables: not two traces", a, b, tables);
	return failed || tables < 10 ? -1 : differ;
}

/*
 * What a reader of a growing trace's commit must find whole
 * (ingest/commit.h): every group's rows as track_depths counts them, lying
 * in its extents, every parent there, every slice's track and name, every
 * arrow's from-slice final, ending where the arrow starts, and its to-slice
 * there. Each statement counts what breaks the rule its sentence says.
 */
static const char *const dbc_commit_rules[][2] = {
	{ "SELECT count(*) FROM track_depths d WHERE count != "
	  "(SELECT count(*) FROM slices s WHERE s.track_id = d.track_id AND s.depth = d.depth)",
	  "a group's count is not its rows'" },
	{ "SELECT count(*) FROM slices s WHERE parent_id IS NOT NULL AND "
	  "NOT EXISTS (SELECT 1 FROM slices p WHERE p.id = s.parent_id)",
	  "a slice's parent is not there" },
	{ "SELECT count(*) FROM slices s WHERE NOT EXISTS (SELECT 1 FROM extents e WHERE "
	  "e.track_id = s.track_id AND e.depth = s.depth AND s.id BETWEEN e.first_id AND e.first_id + e.count - 1)",
	  "a slice lies outside its group's extents" },
	{ "SELECT count(*) FROM track_depths d WHERE count != "
	  "(SELECT coalesce(sum(count), 0) FROM extents e WHERE e.track_id = d.track_id AND e.depth = d.depth)",
	  "a group's extents do not add up to its count" },
	{ "SELECT count(*) FROM slices WHERE track_id NOT IN (SELECT id FROM tracks) OR "
	  "name_id NOT IN (SELECT id FROM strings)",
	  "a slice's track or name is not there" },
	{ "SELECT count(*) FROM logs a JOIN logs b ON b.id = a.id + 1 WHERE b.ts < a.ts",
	  "the logs' ids are not 1, 2 ... in time order" },
	{ "SELECT count(*) != coalesce(max(id), 0) OR coalesce(min(id), 1) != 1 FROM logs",
	  "the logs' ids are not 1, 2 ... in time order" },
	{ "SELECT count(*) FROM logs WHERE thread_id NOT IN (SELECT id FROM threads) OR "
	  "message_id NOT IN (SELECT id FROM strings)",
	  "a log's thread or message is not there" },
	{ "SELECT count(*) FROM sched s WHERE NOT EXISTS (SELECT 1 FROM tracks t JOIN extents e ON e.track_id = t.id "
	  "AND e.depth = 0 WHERE t.kind = 'cpu' AND t.cpu = s.cpu AND s.id BETWEEN e.first_id AND "
	  "e.first_id + e.count - 1)",
	  "a cpu run lies outside its cpu track's extents" },
	{ "SELECT count(*) FROM tracks t WHERE kind = 'cpu' AND (SELECT count(*) FROM sched s WHERE s.cpu = t.cpu) != "
	  "(SELECT coalesce(sum(count), 0) FROM extents e WHERE e.track_id = t.id AND e.depth = 0)",
	  "a cpu track's extents do not add up to its runs" },
	{ "SELECT count(*) FROM sched WHERE thread_id NOT IN (SELECT id FROM threads)",
	  "a cpu run's thread is not there" },
	{ "SELECT count(*) FROM extents e WHERE NOT EXISTS (SELECT 1 FROM tracks t WHERE t.id = e.track_id AND "
	  "(t.kind IN ('cpu', 'counter') OR EXISTS (SELECT 1 FROM track_depths d WHERE d.track_id = e.track_id "
	  "AND d.depth = e.depth)))",
	  "extents of no group" },
	{ "SELECT count(*) FROM flows f WHERE NOT EXISTS (SELECT 1 FROM slices s WHERE s.id = f.from_slice_id AND "
	  "s.dur >= 0 AND s.ts + s.dur = f.from_ts)",
	  "an arrow's from-slice is not there, not final, or does not end where the arrow starts" },
	{ "SELECT count(*) FROM flows f WHERE NOT EXISTS (SELECT 1 FROM slices s WHERE s.id = f.to_slice_id AND "
	  "s.ts = f.to_ts)",
	  "an arrow's to-slice is not there, or does not start where the arrow ends" },
};

/* The commit of the growing trace at db_path, read in one read transaction
 * (one commit throughout): 0 when it keeps every rule above, 1 when it
 * breaks one (why names it), -1 when it could not be read (why says so). A
 * reader waits while the writer holds the file whole (the end's checkpoint
 * and change of journal mode), as the server's do. */
static inline int dbc_commit_broken(const char *db_path, char *why, size_t whylen)
{
	sqlite3 *db = NULL;
	int64_t v = 0;
	size_t i;
	int rc = 0;

	why[0] = '\0';
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_busy_timeout(db, 10000) != SQLITE_OK || sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(why, whylen, "cannot read %.300s: %.150s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -1;
	}
	for (i = 0; rc == 0 && i < sizeof(dbc_commit_rules) / sizeof(dbc_commit_rules[0]); i++) {
		if (dbc_scalar(db, dbc_commit_rules[i][0], &v, why, whylen) != 0) {
			rc = -1;
		} else if (v != 0) {
			rc = 1;
			snprintf(why, whylen, "%s", dbc_commit_rules[i][1]);
		}
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

#endif
