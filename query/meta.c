/*
 * What the catalog keeps of a trace, read from the trace's own tables here,
 * the one module that reads them: its providers and the names of its first
 * processes (the summary the library lists), and its per-name statistics
 * (copied into the catalog's index for search across traces).
 */
#include <stdio.h>

#include "query_internal.h"

enum { META_PROCESSES = 64 }; /* processes named in the summary, by pid */

/* Appends one array of rows (key: name) from sql, each column as the given
 * JSON member; QRY_OK, or QRY_EDB when a step fails. */
static int rows_json(sqlite3 *db, const char *key, const char *sql, const char *const *members, const int *is_u64,
		     int ncol, struct jbuf *b, struct qry_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc, i;

	jb_key(b, key);
	jb_arr(b);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		jb_obj(b);
		for (i = 0; i < ncol; i++) {
			jb_key(b, members[i]);
			if (is_u64[i])
				jb_u64(b, (uint64_t)sqlite3_column_int64(st, i));
			else
				jb_column(b, st, i);
		}
		jb_obj_end(b);
	}
	sqlite3_finalize(st);
	jb_arr_end(b);
	if (rc != SQLITE_DONE)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errstr(rc));
	return QRY_OK;
}

int qry_trace_metadata(sqlite3 *db, struct jbuf *b, struct qry_error *err)
{
	static const char *const prov[] = { "id", "name", "ticks_per_second", "buffer_overflows" };
	static const int prov_u64[] = { 1, 0, 1, 1 };
	static const char *const proc[] = { "pid", "name" };
	static const int proc_u64[] = { 1, 0 };
	char sql[96];
	int rc;

	rc = rows_json(db, "providers", "SELECT id, name, ticks_per_second, buffer_overflows FROM providers ORDER BY id",
		       prov, prov_u64, 4, b, err);
	if (rc != QRY_OK)
		return rc;
	/* pids are unsigned (docs/API.md): those of 2^63 and more, stored
	 * negative, come after the others */
	snprintf(sql, sizeof(sql), "SELECT pid, name FROM processes ORDER BY pid < 0, pid LIMIT %d", META_PROCESSES);
	return rows_json(db, "processes", sql, proc, proc_u64, 2, b, err);
}

int qry_name_stats(sqlite3 *db, int (*fn)(void *ctx, const struct qry_name_stat *s), void *ctx,
		   struct qry_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(db,
			       "SELECT s.str, n.count, n.ended, n.total_ns, n.max_ns, n.sketch FROM name_stats n "
			       "JOIN strings s ON s.id = n.name_id",
			       -1, &st, NULL) != SQLITE_OK)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct qry_name_stat n;

		if ((n.name = (const char *)sqlite3_column_text(st, 0)) == NULL)
			continue;
		n.count = sqlite3_column_int64(st, 1);
		n.ended = sqlite3_column_int64(st, 2);
		n.total_ns = sqlite3_column_int64(st, 3);
		n.max_ns = sqlite3_column_int64(st, 4);
		n.sketch = sqlite3_column_blob(st, 5);
		n.sketch_len = (size_t)sqlite3_column_bytes(st, 5);
		if (fn(ctx, &n) != 0) {
			sqlite3_finalize(st);
			return qry_fail(err, QRY_EDB, "the name statistics could not be kept");
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errstr(rc));
	return QRY_OK;
}
