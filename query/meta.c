/*
 * A trace's own metadata for the catalog's summary: its providers and the
 * names of its first processes. The catalog keeps these next to what ingest
 * counted, so the library lists traces without opening their databases;
 * it reads them here, the one module that reads a trace's tables.
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
	snprintf(sql, sizeof(sql), "SELECT pid, name FROM processes ORDER BY pid LIMIT %d", META_PROCESSES);
	return rows_json(db, "processes", sql, proc, proc_u64, 2, b, err);
}
