/*
 * POST /sql: one read-only statement of the caller's, run against the
 * trace's own tables with a time and a row limit (docs/API.md). An
 * authorizer allows reading main and temp and nothing else; a progress
 * handler stops a statement past QRY_SQL_MAX_MS.
 */
#include <string.h>
#include <time.h>

#include "query_internal.h"

/* Allows reading the trace's own tables and nothing else. */
static int sql_authorizer(void *ctx, int action, const char *a, const char *b, const char *db_name,
			  const char *trigger)
{
	(void)ctx;
	(void)a;
	(void)trigger;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_READ:
		return db_name == NULL || strcmp(db_name, "main") == 0 || strcmp(db_name, "temp") == 0 ? SQLITE_OK
												 : SQLITE_DENY;
	case SQLITE_FUNCTION: /* the function's name is the fourth argument */
		return b && (strcmp(b, "load_extension") == 0 || strncmp(b, "fts3_", 5) == 0 ||
			     strcmp(b, "readfile") == 0 || strcmp(b, "writefile") == 0) ?
			       SQLITE_DENY :
			       SQLITE_OK;
	default:
		return SQLITE_DENY;
	}
}

struct sql_clock {
	struct timespec t0;
	int64_t max_ms;
	int64_t max_rows;
	int expired;
};

static int sql_progress(void *ctx)
{
	struct sql_clock *c = ctx;
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	if ((t.tv_sec - c->t0.tv_sec) * 1000 + (t.tv_nsec - c->t0.tv_nsec) / 1000000 > c->max_ms)
		c->expired = 1;
	return c->expired;
}

static int sql_rows(sqlite3 *db, sqlite3_stmt *st, struct sql_clock *clk, struct jbuf *out, struct qry_error *err)
{
	int i, cols = sqlite3_column_count(st), rc, rows = 0, truncated = 0;

	jb_obj(out);
	jb_key(out, "columns");
	jb_arr(out);
	for (i = 0; i < cols; i++)
		jb_str(out, sqlite3_column_name(st, i));
	jb_arr_end(out);
	jb_key(out, "rows");
	jb_arr(out);
	/* The one statement of query/ stepped here rather than through a
	 * cursor (cursor.h): it is the caller's, prepared from the request
	 * with its tail and under the authorizer, and a failure to step it is
	 * the statement's, told back with SQLite's own message as a bad
	 * request, or as the time limit when the progress handler stopped it
	 * (QRY_EINVAL, QRY_ELIMIT), where a cursor's error is the trace
	 * database's (QRY_EDB). Only SQLITE_DONE, or the row limit, ends the
	 * rows as a reply. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (rows++ >= clk->max_rows) {
			truncated = 1;
			break;
		}
		jb_arr(out);
		for (i = 0; i < cols; i++)
			jb_column(out, st, i);
		jb_arr_end(out);
	}
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, truncated);
	jb_obj_end(out);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		if (clk->expired)
			return qry_fail(err, QRY_ELIMIT, "the query ran longer than the limit of %lld ms and was stopped",
					(long long)clk->max_ms);
		return qry_fail(err, QRY_EINVAL, "the query failed: %s", sqlite3_errmsg(db));
	}
	return QRY_OK;
}

/* 1 when the text after the statement holds no other (only blanks,
 * semicolons and comments: "SELECT 1; -- why" is one statement), else 0.
 * The tail is compiled, never run, under the same authorizer. */
static int tail_is_empty(sqlite3 *db, const char *tail, size_t len)
{
	sqlite3_stmt *st = NULL;
	const char *rest = NULL;

	while (len > 0) {
		if (sqlite3_prepare_v2(db, tail, (int)len, &st, &rest) != SQLITE_OK || st != NULL) {
			sqlite3_finalize(st);
			return 0;
		}
		if (rest == NULL || rest == tail)
			break;
		len -= (size_t)(rest - tail);
		tail = rest;
	}
	return 1;
}

int qry_sql(sqlite3 *db, const char *sql, size_t len, struct jbuf *out, struct qry_error *err)
{
	return qry_sql_limited(db, sql, len, QRY_SQL_MAX_ROWS, QRY_SQL_MAX_MS, out, err);
}

int qry_sql_limited(sqlite3 *db, const char *sql, size_t len, int64_t max_rows, int64_t max_ms, struct jbuf *out,
		    struct qry_error *err)
{
	struct sql_clock clk = { .max_ms = max_ms, .max_rows = max_rows };
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	int rc;

	int old_len = sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 64 << 20); /* no value a statement makes may pass 64 MiB */

	clock_gettime(CLOCK_MONOTONIC, &clk.t0);
	sqlite3_set_authorizer(db, sql_authorizer, NULL);
	sqlite3_progress_handler(db, 10000, sql_progress, &clk);
	if (sqlite3_prepare_v2(db, sql, (int)len, &st, &tail) != SQLITE_OK) {
		rc = qry_fail(err, QRY_EINVAL, "the statement cannot run: %s", sqlite3_errmsg(db));
	} else if (st == NULL) {
		rc = qry_fail(err, QRY_EINVAL, "the body holds no SQL statement");
	} else if (tail != NULL && !tail_is_empty(db, tail, (size_t)(sql + len - tail))) {
		rc = qry_fail(err, QRY_EINVAL, "send one statement at a time");
	} else if (!sqlite3_stmt_readonly(st)) {
		rc = qry_fail(err, QRY_EINVAL, "only statements that read are allowed");
	} else {
		rc = sql_rows(db, st, &clk, out, err);
	}
	sqlite3_finalize(st);
	sqlite3_progress_handler(db, 0, NULL, NULL);
	sqlite3_set_authorizer(db, NULL, NULL);
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, old_len);
	return rc;
}
