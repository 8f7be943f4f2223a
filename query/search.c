/*
 * Search inside a trace: the slices whose name contains a text, in time
 * order, a page at a time.
 *
 * The names matching the text come from the strings table (distinct
 * names, not slices). The name index that ingest writes (name_index,
 * tracedb.h) holds each name's slices in (ts, id) order, in chunks; each
 * matching name is a stream of them, and a merge of the streams reads only
 * the chunks of the page: the cost follows the page, not the trace. A
 * trace without the index (an older database) or a text matching very
 * many names is answered by one statement that sorts every match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "query_internal.h"

enum { MERGE_MAX_NAMES = 4096 };

/* One name's slices in (ts, id) order, read chunk by chunk. */
struct stream {
	sqlite3_stmt *st;      /* the name's chunks from the one holding the cursor on */
	const uint8_t *p, *end;/* the rest of the current chunk */
	int64_t left;          /* pairs left in it */
	int64_t ts, id;        /* the current slice */
	int live;
	int failed;
};

/* Moves to the next slice of the name; 0, or -1 on a database error or a
 * damaged chunk. */
static int stream_next(struct stream *s)
{
	while (s->left == 0) {
		int rc = sqlite3_step(s->st);

		if (rc == SQLITE_DONE) {
			s->live = 0;
			return 0;
		}
		if (rc != SQLITE_ROW)
			return -1;
		s->ts = sqlite3_column_int64(s->st, 0);
		s->id = sqlite3_column_int64(s->st, 1);
		s->left = sqlite3_column_int64(s->st, 2) - 1;
		s->p = sqlite3_column_blob(s->st, 3);
		s->end = s->p + sqlite3_column_bytes(s->st, 3);
		s->live = 1;
		return s->left < 0 ? -1 : 0;
	}
	s->left--;
	return tracedb_names_next(&s->p, s->end, &s->ts, &s->id);
}

/* The chunk of a name holding the cursor: the last one starting at or
 * before it. Prepared once a page, for every name of it. */
#define CURSOR_CHUNK_SQL                                                                                               \
	"SELECT first_ts, first_id FROM name_index WHERE name_id = ?1 AND (first_ts, first_id) <= (?2, ?3) "          \
	"ORDER BY first_ts DESC, first_id DESC LIMIT 1"

/* Positions the stream on the first slice after the cursor (or the first);
 * at is CURSOR_CHUNK_SQL when the page has a cursor. */
static int stream_open(sqlite3 *db, sqlite3_stmt *at, struct stream *s, int64_t name,
		       const struct qry_search_page *pg)
{
	int64_t ts0 = INT64_MIN, id0 = INT64_MIN;
	int rc;

	memset(s, 0, sizeof(*s));
	if (pg->has_cursor) {
		sqlite3_reset(at);
		sqlite3_bind_int64(at, 1, name);
		sqlite3_bind_int64(at, 2, pg->after_ts);
		sqlite3_bind_int64(at, 3, pg->after_id);
		if ((rc = sqlite3_step(at)) == SQLITE_ROW) {
			ts0 = sqlite3_column_int64(at, 0);
			id0 = sqlite3_column_int64(at, 1);
		} else if (rc != SQLITE_DONE) {
			return -1;
		}
	}
	if (sqlite3_prepare_v2(db,
			       "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 AND "
			       "(first_ts, first_id) >= (?2, ?3) ORDER BY first_ts, first_id",
			       -1, &s->st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s->st, 1, name);
	sqlite3_bind_int64(s->st, 2, ts0);
	sqlite3_bind_int64(s->st, 3, id0);
	do {
		if (stream_next(s) != 0)
			return -1;
	} while (s->live && pg->has_cursor &&
		 (s->ts < pg->after_ts || (s->ts == pg->after_ts && s->id <= pg->after_id)));
	return 0;
}

static int has_index(sqlite3 *db)
{
	sqlite3_stmt *st;
	int yes = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'name_index'", -1, &st,
			       NULL) == SQLITE_OK) {
		yes = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
	}
	return yes;
}

/* The ids of the slice names containing text (at most max + 1 of them);
 * -1 on a database error. */
static long matching_names(sqlite3 *db, const char *text, int64_t *ids, long max)
{
	sqlite3_stmt *st;
	long n = 0;
	int rc;

	/* only names that slices carry: the strings table also holds log
	 * messages and argument values, which may match by the thousand */
	if (sqlite3_prepare_v2(db,
			       "SELECT id FROM strings s WHERE instr(lower(str), lower(?1)) > 0 AND "
			       "EXISTS (SELECT 1 FROM name_index n WHERE n.name_id = s.id)",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n <= max)
		ids[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? n : -1;
}

/* The first limit + 1 slice ids of the page, merged from one stream per
 * name. Returns how many, or -1 on a database error. */
static long merge_page(sqlite3 *db, const int64_t *names, long nnames, const struct qry_search_page *pg,
		       int64_t *out)
{
	struct stream *s = calloc((size_t)nnames + 1, sizeof(*s));
	sqlite3_stmt *at = NULL;
	long i, n = 0;
	int bad = s == NULL || (pg->has_cursor && sqlite3_prepare_v2(db, CURSOR_CHUNK_SQL, -1, &at, NULL) != SQLITE_OK);

	for (i = 0; i < nnames && !bad; i++)
		bad = stream_open(db, at, &s[i], names[i], pg) != 0;
	sqlite3_finalize(at);
	while (!bad && n <= (long)pg->limit) {
		long best = -1;

		for (i = 0; i < nnames; i++)
			if (s[i].live && (best < 0 || s[i].ts < s[best].ts || (s[i].ts == s[best].ts && s[i].id < s[best].id)))
				best = i;
		if (best < 0)
			break;
		out[n++] = s[best].id;
		bad = stream_next(&s[best]) != 0;
	}
	for (i = 0; s && i < nnames; i++)
		sqlite3_finalize(s[i].st);
	free(s);
	return bad ? -1 : n;
}

/* The same page by one statement that sorts every match. */
static long sorted_page(sqlite3 *db, const char *text, const struct qry_search_page *pg, int64_t *out)
{
	sqlite3_stmt *st;
	long n = 0;
	int rc;

	if (sqlite3_prepare_v2(db,
			       "SELECT id FROM slices WHERE name_id IN (SELECT id FROM strings WHERE "
			       "instr(lower(str), lower(?1)) > 0) AND (?2 = 0 OR ts > ?3 OR (ts = ?3 AND id > ?4)) "
			       "ORDER BY ts, id LIMIT ?5",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, pg->has_cursor);
	sqlite3_bind_int64(st, 3, pg->after_ts);
	sqlite3_bind_int64(st, 4, pg->after_id);
	sqlite3_bind_int64(st, 5, (int64_t)pg->limit + 1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		out[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? n : -1;
}

/* {"slices": [{id, track_id, ts, dur, name, category}], "truncated", "next_cursor"} */
static int put_page(sqlite3 *db, const int64_t *ids, long n, uint32_t limit, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *st;
	int64_t last_ts = 0, last_id = 0;
	long i, shown = n > (long)limit ? (long)limit : n;
	char cursor[64];

	if (sqlite3_prepare_v2(db,
			       "SELECT s.id, s.track_id, s.ts, s.dur, n.str, c.str FROM slices s JOIN strings n ON "
			       "n.id = s.name_id JOIN strings c ON c.id = s.category_id WHERE s.id = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	jb_obj(out);
	jb_key(out, "slices");
	jb_arr(out);
	for (i = 0; i < shown; i++) {
		int rc;

		sqlite3_bind_int64(st, 1, ids[i]);
		if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
			sqlite3_finalize(st);
			return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s",
					rc == SQLITE_DONE ? "a slice is missing" : sqlite3_errstr(rc));
		}
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, sqlite3_column_int64(st, 0));
		jb_key(out, "track_id");
		jb_i64(out, sqlite3_column_int64(st, 1));
		jb_key(out, "ts");
		jb_i64(out, last_ts = sqlite3_column_int64(st, 2));
		jb_key(out, "dur");
		jb_i64(out, sqlite3_column_int64(st, 3));
		jb_key(out, "name");
		jb_column(out, st, 4);
		jb_key(out, "category");
		jb_column(out, st, 5);
		jb_obj_end(out);
		last_id = ids[i];
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, n > (long)limit);
	jb_key(out, "next_cursor");
	if (n > (long)limit) {
		snprintf(cursor, sizeof(cursor), "%lld:%lld", (long long)last_ts, (long long)last_id);
		jb_str(out, cursor);
	} else {
		jb_null(out);
	}
	jb_obj_end(out);
	return QRY_OK;
}

int qry_search(sqlite3 *db, const char *text, const struct qry_search_page *pg, struct jbuf *out,
	       struct qry_error *err)
{
	int64_t names[MERGE_MAX_NAMES + 1], *ids;
	long nnames = has_index(db) ? matching_names(db, text, names, MERGE_MAX_NAMES) : MERGE_MAX_NAMES + 1;
	long n;
	int rc;

	if (nnames < 0)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	if ((ids = malloc(((size_t)pg->limit + 1) * sizeof(*ids))) == NULL)
		return qry_fail(err, QRY_ENOMEM, "out of memory");
	n = nnames <= MERGE_MAX_NAMES ? merge_page(db, names, nnames, pg, ids) : sorted_page(db, text, pg, ids);
	if (n < 0) {
		free(ids);
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	}
	rc = put_page(db, ids, n, pg->limit, out, err);
	free(ids);
	return rc;
}
