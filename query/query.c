/*
 * Query: the read side of the API (query.h), one file per thing served.
 *
 *   cursor.c      the read cursor every endpoint steps through: a statement
 *                 and its sticky error, checked once at the end
 *   window.c      the window engine: a time window and a zoom to the rows
 *                 of a group (binary search by ordinal, level of detail,
 *                 the names cache)
 *   slices.c      /slices              slice.c    /slices/{id}
 *   counters.c    /counters            sched.c    /sched
 *   lists.c       /tracks, /flows, /logs, /stats
 *   sql.c         /sql
 *   threadstate.c, search.c, overview.c, area.c, flame.c, compare.c,
 *   export.c, meta.c: the endpoints of those names; extents.c, column.c:
 *   helpers they share (query_internal.h).
 *
 * This file holds what belongs to the module as a whole: its errors, the
 * schema check and the read transaction around a request.
 */
#include <stdarg.h>
#include <stdio.h>

#include "query_internal.h"

const char *qry_strerror(int err)
{
	static const char *const s[] = { "ok", "not_found", "bad_request", "database_error", "limit_exceeded",
					 "out_of_memory" };

	return err >= 0 && err <= QRY_ENOMEM ? s[err] : "error";
}

int qry_fail(struct qry_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int qry_read_begin(sqlite3 *db)
{
	return sqlite3_get_autocommit(db) && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
}

void qry_read_end(sqlite3 *db, int began)
{
	if (began && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

uint32_t qry_bucket(int64_t start, int64_t end, uint32_t n, int64_t ts)
{
	uint64_t off = (uint64_t)ts - (uint64_t)start, last = (uint64_t)end - (uint64_t)start;

	/* off <= last: when last * n fits in 64 bits so does off * n, and the
	 * division is a 64-bit one (every window under 52 days at 4096 buckets) */
	if (last < UINT64_MAX / n)
		return (uint32_t)(off * n / (last + 1));
	return (uint32_t)((unsigned __int128)off * n / ((unsigned __int128)last + 1));
}
