/*
 * Notes in catalog.db (catdb.h's note calls): read and written through the
 * reader's connection, under read_mu, not the records' one, so that a
 * note never waits for the records' writes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "catdb_sqlite.h"

static void bind_i64_or_null(sqlite3_stmt *st, int i, int64_t v, int null)
{
	if (null)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

/* Runs a prepared note statement that writes; the rows it changed, or -1. */
static int note_step(struct catdb_sqlite *s, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
	int rc = sqlite3_step(st), changed = sqlite3_changes(s->reader);

	if (rc != SQLITE_DONE) {
		sq_fail(s->reader, what, err, errlen);
		changed = -1;
	}
	sqlite3_finalize(st);
	return changed;
}

int sq_note_add(struct catdb *d, struct catdb_note *n, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3_stmt *st;
	int rc = CATDB_OK;

	pthread_mutex_lock(&s->read_mu);
	if (sqlite3_prepare_v2(s->reader,
			       "INSERT INTO notes (trace_id, start_ns, end_ns, track_id, slice_id, text, author, "
			       "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = sq_fail(s->reader, "saving a note", err, errlen);
		goto out;
	}
	sqlite3_bind_int64(st, 1, n->trace);
	bind_i64_or_null(st, 2, n->start_ns, !n->has_range);
	bind_i64_or_null(st, 3, n->end_ns, !n->has_range);
	bind_i64_or_null(st, 4, n->track, n->track == 0);
	bind_i64_or_null(st, 5, n->slice, n->slice == 0);
	sqlite3_bind_text(st, 6, n->text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, n->author, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, n->created_at, -1, SQLITE_STATIC);
	if (note_step(s, st, "saving a note", err, errlen) < 0)
		rc = CATDB_EFAIL;
	else
		n->id = sqlite3_last_insert_rowid(s->reader);
out:
	pthread_mutex_unlock(&s->read_mu);
	return rc;
}

int sq_note_edit(struct catdb *d, int64_t id, const char *text, const char *author, const char *edited_at,
			char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3_stmt *st;
	int changed;

	pthread_mutex_lock(&s->read_mu);
	if (sqlite3_prepare_v2(s->reader,
			       "UPDATE notes SET text = coalesce(?2, text), author = coalesce(?3, author), "
			       "edited_at = ?4 WHERE id = ?1",
			       -1, &st, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->read_mu);
		return sq_fail(s->reader, "editing a note", err, errlen);
	}
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, author, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, edited_at, -1, SQLITE_STATIC);
	changed = note_step(s, st, "editing a note", err, errlen);
	pthread_mutex_unlock(&s->read_mu);
	if (changed == 0)
		snprintf(err, errlen, "there is no note %" PRId64, id);
	return changed < 0 ? CATDB_EFAIL : changed == 0 ? CATDB_ENOENT : CATDB_OK;
}

int sq_note_remove(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3_stmt *st;
	int changed;

	pthread_mutex_lock(&s->read_mu);
	if (sqlite3_prepare_v2(s->reader, "DELETE FROM notes WHERE id = ?", -1, &st, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->read_mu);
		return sq_fail(s->reader, "removing a note", err, errlen);
	}
	sqlite3_bind_int64(st, 1, id);
	changed = note_step(s, st, "removing a note", err, errlen);
	pthread_mutex_unlock(&s->read_mu);
	if (changed == 0)
		snprintf(err, errlen, "there is no note %" PRId64, id);
	return changed < 0 ? CATDB_EFAIL : changed == 0 ? CATDB_ENOENT : CATDB_OK;
}

int sq_note_list(struct catdb *d, const struct cat_note_query *q,
			int (*row)(void *ctx, const struct catdb_note *n), void *ctx, char *err, size_t errlen)
{
	static const char sel[] =
		"SELECT id, trace_id, start_ns, end_ns, track_id, slice_id, text, author, created_at, edited_at "
		"FROM notes WHERE (?1 = 0 OR id = ?1) AND (?2 = 0 OR trace_id = ?2) AND (?3 IS NULL OR author = ?3) "
		"AND (?4 IS NULL OR instr(lower(text), lower(?4)) > 0) AND (?5 = 0 OR id < ?5) ";
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	char sql[sizeof(sel) + 96];
	struct catdb_note n;
	sqlite3_stmt *st;
	int rc;

	snprintf(sql, sizeof(sql), "%s%s", sel,
		 q->by_time ? "ORDER BY start_ns IS NOT NULL, start_ns, id LIMIT ?6" : "ORDER BY id DESC LIMIT ?6");
	pthread_mutex_lock(&s->read_mu);
	if (sqlite3_prepare_v2(s->reader, sql, -1, &st, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->read_mu);
		return sq_fail(s->reader, "reading notes", err, errlen);
	}
	sqlite3_bind_int64(st, 1, q->id);
	sqlite3_bind_int64(st, 2, q->trace);
	sqlite3_bind_text(st, 3, q->author, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, q->q, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, q->before);
	sqlite3_bind_int64(st, 6, q->limit > 0 ? q->limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		n.id = sqlite3_column_int64(st, 0);
		n.trace = sqlite3_column_int64(st, 1);
		n.has_range = sqlite3_column_type(st, 2) != SQLITE_NULL;
		n.start_ns = sqlite3_column_int64(st, 2);
		n.end_ns = sqlite3_column_int64(st, 3);
		n.track = sqlite3_column_int64(st, 4);
		n.slice = sqlite3_column_int64(st, 5);
		n.text = (const char *)sqlite3_column_text(st, 6);
		n.author = (const char *)sqlite3_column_text(st, 7);
		n.created_at = (const char *)sqlite3_column_text(st, 8);
		n.edited_at = (const char *)sqlite3_column_text(st, 9);
		if (row(ctx, &n) != 0) {
			snprintf(err, errlen, "out of memory");
			break;
		}
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		sq_fail(s->reader, "reading notes", err, errlen);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->read_mu);
	return rc == SQLITE_DONE ? CATDB_OK : CATDB_EFAIL;
}

int sq_note_counts(struct catdb *d, int64_t trace, int (*row)(void *ctx, int64_t trace, int64_t count),
			  void *ctx, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->read_mu);
	if (sqlite3_prepare_v2(s->reader,
			       "SELECT trace_id, count(*) FROM notes WHERE ?1 = 0 OR trace_id = ?1 GROUP BY trace_id", -1,
			       &st, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->read_mu);
		return sq_fail(s->reader, "counting notes", err, errlen);
	}
	sqlite3_bind_int64(st, 1, trace);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (row(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) != 0) {
			snprintf(err, errlen, "out of memory");
			break;
		}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		sq_fail(s->reader, "counting notes", err, errlen);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->read_mu);
	return rc == SQLITE_DONE ? CATDB_OK : CATDB_EFAIL;
}

