/*
 * The catalog in PostgreSQL (catdb_pg.h): notes on traces (catalog/notes.h),
 * read and written straight in the database on a connection of their own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catdb_pg.h"

/* ---- notes ------------------------------------------------------------------ */

/* Notes go through a connection of their own (struct catdb_pg). Each
 * call is one statement in a transaction of its own; its result in *out
 * (NULL: cleared). */
static int note_exec(struct pg_lane *p, const char *what, const char *sql, int n, const char *const *vals,
		     ExecStatusType ok, PGresult **out, char *err, size_t errlen)
{
	PGresult *res;
	int rc;

	if ((rc = pg_enter(p, "BEGIN", what, err, errlen)) != CATDB_OK)
		return rc;
	res = pg_run(p, sql, n, vals, 0);
	if (PQresultStatus(res) != ok)
		return pg_leave(p, pg_fail(p, what, res, err, errlen), what, err, errlen);
	if (out)
		*out = res;
	else
		PQclear(res);
	return pg_leave(p, CATDB_OK, what, err, errlen);
}

int pg_note_add(struct catdb *d, struct catdb_note *n, char *err, size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->notes;
	char num[5][24];
	const char *vals[8];
	PGresult *res = NULL;
	int rc;

	i64_text(n->trace, num[0], sizeof(num[0]));
	i64_text(n->start_ns, num[1], sizeof(num[1]));
	i64_text(n->end_ns, num[2], sizeof(num[2]));
	i64_text(n->track, num[3], sizeof(num[3]));
	i64_text(n->slice, num[4], sizeof(num[4]));
	vals[0] = num[0];
	vals[1] = n->has_range ? num[1] : NULL;
	vals[2] = n->has_range ? num[2] : NULL;
	vals[3] = n->track ? num[3] : NULL;
	vals[4] = n->slice ? num[4] : NULL;
	vals[5] = n->text;
	vals[6] = n->author;
	vals[7] = n->created_at;
	rc = note_exec(p, "saving a note",
		       "INSERT INTO notes (trace_id, start_ns, end_ns, track_id, slice_id, text, author, created_at) "
		       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
		       8, vals, PGRES_TUPLES_OK, &res, err, errlen);
	if (rc == CATDB_OK)
		n->id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return rc;
}

/* An UPDATE or DELETE of one note: CATDB_ENOENT when it was not there. */
static int note_change(struct pg_lane *p, const char *what, const char *sql, int n, const char *const *vals,
		       int64_t id, char *err, size_t errlen)
{
	PGresult *res = NULL;
	int rc = note_exec(p, what, sql, n, vals, PGRES_COMMAND_OK, &res, err, errlen);

	if (rc == CATDB_OK && strcmp(PQcmdTuples(res), "0") == 0) {
		snprintf(err, errlen, "there is no note %" PRId64, id);
		rc = CATDB_ENOENT;
	}
	PQclear(res);
	return rc;
}

int pg_note_edit(struct catdb *d, int64_t id, const char *text, const char *author, const char *edited_at,
			char *err, size_t errlen)
{
	char num[24];
	const char *vals[4] = { num, text, author, edited_at };

	i64_text(id, num, sizeof(num));
	return note_change(&((struct catdb_pg *)d)->notes, "editing a note",
			   "UPDATE notes SET text = coalesce($2, text), author = coalesce($3, author), "
			   "edited_at = $4 WHERE id = $1",
			   4, vals, id, err, errlen);
}

int pg_note_remove(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	char num[24];
	const char *vals[1] = { num };

	i64_text(id, num, sizeof(num));
	return note_change(&((struct catdb_pg *)d)->notes, "removing a note", "DELETE FROM notes WHERE id = $1", 1,
			   vals, id, err, errlen);
}

int pg_note_list(struct catdb *d, const struct cat_note_query *q,
			int (*row)(void *ctx, const struct catdb_note *n), void *ctx, char *err, size_t errlen)
{
	static const char sel[] =
		"SELECT id, trace_id, start_ns, end_ns, track_id, slice_id, text, author, created_at, edited_at "
		"FROM notes WHERE ($1::bigint = 0 OR id = $1) AND ($2::bigint = 0 OR trace_id = $2) "
		"AND ($3::text IS NULL OR author = $3) AND ($4::text IS NULL OR "
		"strpos(translate(text, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), "
		"translate($4, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) > 0) "
		"AND ($5::bigint = 0 OR id < $5) ";
	struct pg_lane *p = &((struct catdb_pg *)d)->notes;
	char sql[sizeof(sel) + 96], num[4][24];
	const char *vals[6] = { num[0], num[1], q->author, q->q, num[2], q->limit > 0 ? num[3] : NULL };
	struct catdb_note n;
	PGresult *res = NULL;
	int i, rows, rc;

	snprintf(sql, sizeof(sql), "%s%s", sel,
		 q->by_time ? "ORDER BY start_ns NULLS FIRST, id LIMIT $6" : "ORDER BY id DESC LIMIT $6");
	i64_text(q->id, num[0], sizeof(num[0]));
	i64_text(q->trace, num[1], sizeof(num[1]));
	i64_text(q->before, num[2], sizeof(num[2]));
	i64_text(q->limit, num[3], sizeof(num[3]));
	if ((rc = note_exec(p, "reading notes", sql, 6, vals, PGRES_TUPLES_OK, &res, err, errlen)) != CATDB_OK)
		return rc;
	rows = PQntuples(res);
	for (i = 0; i < rows && rc == CATDB_OK; i++) {
		n.id = col_i64(res, i, 0);
		n.trace = col_i64(res, i, 1);
		n.has_range = !PQgetisnull(res, i, 2);
		n.start_ns = col_i64(res, i, 2);
		n.end_ns = col_i64(res, i, 3);
		n.track = col_i64(res, i, 4);
		n.slice = col_i64(res, i, 5);
		n.text = PQgetvalue(res, i, 6);
		n.author = PQgetvalue(res, i, 7);
		n.created_at = PQgetvalue(res, i, 8);
		n.edited_at = PQgetisnull(res, i, 9) ? NULL : PQgetvalue(res, i, 9);
		if (row(ctx, &n) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = CATDB_EFAIL;
		}
	}
	PQclear(res);
	return rc;
}

int pg_note_counts(struct catdb *d, int64_t trace, int (*row)(void *ctx, int64_t trace, int64_t count), void *ctx,
		   char *err, size_t errlen)
{
	PGresult *res = NULL;
	char num[24];
	const char *vals[1] = { num };
	int i, rows, rc;

	i64_text(trace, num, sizeof(num));
	if ((rc = note_exec(&((struct catdb_pg *)d)->notes, "counting notes",
			    "SELECT trace_id, count(*) FROM notes WHERE $1::bigint = 0 OR trace_id = $1 GROUP BY trace_id", 1,
			    vals, PGRES_TUPLES_OK, &res, err, errlen)) != CATDB_OK)
		return rc;
	rows = PQntuples(res);
	for (i = 0; i < rows && rc == CATDB_OK; i++)
		if (row(ctx, col_i64(res, i, 0), col_i64(res, i, 1)) != 0) {
			snprintf(err, errlen, "out of memory");
			rc = CATDB_EFAIL;
		}
	PQclear(res);
	return rc;
}
