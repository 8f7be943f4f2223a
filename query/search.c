/*
 * Search inside a trace: the slices whose name contains a text, in (ts, id)
 * order, a page at a time from any position and in either direction, with
 * the number of all matches, the page's rank among them and, when asked,
 * how the matches spread over a window (the viewer's ticks).
 *
 * The names matching the text come from the strings table (distinct
 * names, not slices). The name index that ingest writes (name_index,
 * tracedb.h) holds each name's slices in (ts, id) order, in chunks; each
 * matching name is a stream of them, forward or backward, and a merge of
 * the streams reads only the chunks of the page. Counting needs no slice
 * either: a name's slices before a position are the counts of its chunks
 * before the one holding it plus part of that one. So the cost follows the
 * page and the number of names, not the trace. A trace without the index
 * (an older database) or a text matching very many names is answered by
 * statements over slices that sort and count every match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "query_internal.h"

enum { MERGE_MAX_NAMES = 4096 };

/* One name's slices in (ts, id) order (or its reverse), a chunk at a time. */
struct stream {
	sqlite3_stmt *st; /* the name's chunks, in the stream's direction */
	int64_t *ts, *id; /* the current chunk, decoded: TRACEDB_NAMES_CHUNK slots each */
	int n;            /* pairs in the current chunk */
	int i;            /* the current pair, 0 <= i < n while live */
	int backward;     /* walks from the latest slice to the earliest */
	int live;         /* 0 once every chunk is used up */
};

/* Decodes a chunk (its first pair, its count n and the packed others, len
 * bytes at p) into ts/id; returns the pairs, or -1 when it is damaged. */
static int chunk_decode_bytes(int64_t first_ts, int64_t first_id, int64_t n, const uint8_t *p, int len, int64_t *ts,
			      int64_t *id)
{
	const uint8_t *end = p + len;
	int64_t i;

	if (n < 1 || n > TRACEDB_NAMES_CHUNK)
		return -1;
	ts[0] = first_ts;
	id[0] = first_id;
	for (i = 1; i < n; i++) {
		ts[i] = ts[i - 1];
		id[i] = id[i - 1];
		if (tracedb_names_next(&p, end, &ts[i], &id[i]) != 0)
			return -1;
	}
	return (int)n;
}

/* Decodes the chunk row st stands on (first_ts, first_id, count, data) into
 * ts/id; returns the pairs, or -1 when the row is damaged. */
static int chunk_decode(sqlite3_stmt *st, int64_t *ts, int64_t *id)
{
	return chunk_decode_bytes(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
				  sqlite3_column_blob(st, 3), sqlite3_column_bytes(st, 3), ts, id);
}

/* Moves to the next slice in the stream's direction; 0, or -1 on a
 * database error or a damaged chunk. */
static int stream_next(struct stream *s)
{
	int rc;

	if (s->live && (s->backward ? --s->i >= 0 : ++s->i < s->n))
		return 0;
	if ((rc = sqlite3_step(s->st)) == SQLITE_DONE) {
		s->live = 0;
		return 0;
	}
	if (rc != SQLITE_ROW || (s->n = chunk_decode(s->st, s->ts, s->id)) < 0)
		return -1;
	s->i = s->backward ? s->n - 1 : 0;
	s->live = 1;
	return 0;
}

/* (ts, id) against (ts2, id2): <0, 0, >0. */
static int pos_cmp(int64_t ts, int64_t id, int64_t ts2, int64_t id2)
{
	return ts != ts2 ? (ts < ts2 ? -1 : 1) : id != id2 ? (id < id2 ? -1 : 1) : 0;
}

/* The first chunk of a name at or before a position: the last one starting
 * at or before it. */
#define HOLDING_CHUNK_SQL                                                                                              \
	"SELECT first_ts, first_id FROM name_index WHERE name_id = ?1 AND (first_ts, first_id) <= (?2, ?3) "          \
	"ORDER BY first_ts DESC, first_id DESC LIMIT 1"

/*
 * Positions a stream of a name: forward on its first slice strictly after
 * (ts, id) (everything when from is QRY_SEARCH_FIRST), backward on its last
 * slice strictly before (ts, id). hold is HOLDING_CHUNK_SQL, prepared once
 * for every name. 0, or -1 on a database error or a damaged chunk.
 */
static int stream_open(sqlite3 *db, sqlite3_stmt *hold, struct stream *s, int64_t name,
		       enum qry_search_from from, int64_t ts, int64_t id)
{
	int64_t ts0 = INT64_MIN, id0 = INT64_MIN;
	int rc;

	s->backward = from == QRY_SEARCH_BEFORE;
	if (from == QRY_SEARCH_AFTER) {
		sqlite3_reset(hold);
		sqlite3_bind_int64(hold, 1, name);
		sqlite3_bind_int64(hold, 2, ts);
		sqlite3_bind_int64(hold, 3, id);
		if ((rc = sqlite3_step(hold)) == SQLITE_ROW) {
			ts0 = sqlite3_column_int64(hold, 0);
			id0 = sqlite3_column_int64(hold, 1);
		} else if (rc != SQLITE_DONE) {
			return -1;
		}
	}
	if (sqlite3_prepare_v2(db,
			       s->backward ? "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 "
					     "AND (first_ts, first_id) < (?2, ?3) ORDER BY first_ts DESC, first_id DESC"
					   : "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 "
					     "AND (first_ts, first_id) >= (?2, ?3) ORDER BY first_ts, first_id",
			       -1, &s->st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s->st, 1, name);
	sqlite3_bind_int64(s->st, 2, s->backward ? ts : ts0);
	sqlite3_bind_int64(s->st, 3, s->backward ? id : id0);
	do {
		if (stream_next(s) != 0)
			return -1;
	} while (s->live && from != QRY_SEARCH_FIRST &&
		 (s->backward ? pos_cmp(s->ts[s->i], s->id[s->i], ts, id) >= 0
			      : pos_cmp(s->ts[s->i], s->id[s->i], ts, id) <= 0));
	return 0;
}

/* Streams for every name, with their chunk buffers; NULL when out of memory. */
static struct stream *streams_create(long n)
{
	struct stream *s = calloc((size_t)n + 1, sizeof(*s));
	long i;

	for (i = 0; s && i < n; i++) {
		s[i].ts = malloc(2 * TRACEDB_NAMES_CHUNK * sizeof(int64_t));
		if (s[i].ts == NULL) {
			while (i-- > 0)
				free(s[i].ts);
			free(s);
			return NULL;
		}
		s[i].id = s[i].ts + TRACEDB_NAMES_CHUNK;
	}
	return s;
}

static void streams_destroy(struct stream *s, long n)
{
	long i;

	for (i = 0; s && i < n; i++) {
		sqlite3_finalize(s[i].st);
		free(s[i].ts);
	}
	free(s);
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

	/* only names that slices carry, one row each in name_stats (written
	 * with the name index): the strings table also holds log messages and
	 * argument values, which may match by the thousand, and scanning it
	 * took 260 ms on the 4 GB bench trace's 466 K strings (35 names) */
	if (sqlite3_prepare_v2(db,
			       "SELECT s.id FROM name_stats n CROSS JOIN strings s ON s.id = n.name_id "
			       "WHERE instr(lower(s.str), lower(?1)) > 0 ORDER BY n.name_id",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n <= max)
		ids[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? n : -1;
}

/* What a search reads its matches from. */
struct search {
	sqlite3 *db;
	const char *text;
	const struct qry_search_page *pg;
	const int64_t *names; /* the matching names, read through the name index; NULL: by SQL over slices */
	long nnames;
};

/*
 * The first limit + 1 slice ids of the page from the name index, in the
 * page's direction (latest first for QRY_SEARCH_BEFORE), merged from one
 * stream per name. Returns how many, or -1 on a database error.
 */
static long idx_page(const struct search *q, int64_t *out)
{
	const struct qry_search_page *pg = q->pg;
	struct stream *s = streams_create(q->nnames);
	sqlite3_stmt *hold = NULL;
	long i, n = 0;
	int bad = s == NULL || sqlite3_prepare_v2(q->db, HOLDING_CHUNK_SQL, -1, &hold, NULL) != SQLITE_OK;
	int dir = pg->from == QRY_SEARCH_BEFORE ? -1 : 1;

	for (i = 0; i < q->nnames && !bad; i++)
		bad = stream_open(q->db, hold, &s[i], q->names[i], pg->from, pg->at_ts, pg->at_id) != 0;
	sqlite3_finalize(hold);
	while (!bad && n <= (long)pg->limit) {
		long best = -1;

		for (i = 0; i < q->nnames; i++)
			if (s[i].live && (best < 0 || dir * pos_cmp(s[i].ts[s[i].i], s[i].id[s[i].i], s[best].ts[s[best].i],
								    s[best].id[s[best].i]) < 0))
				best = i;
		if (best < 0)
			break;
		out[n++] = s[best].id[s[best].i];
		bad = stream_next(&s[best]) != 0;
	}
	streams_destroy(s, q->nnames);
	return bad ? -1 : n;
}

/*
 * The slices of one name strictly before (ts, id) into *n: the counts of its
 * chunks before the one holding the position, and that chunk's pairs before
 * it. st[0] is HOLDING_CHUNK_SQL's twin that returns the chunk, st[1] sums
 * counts. 0, or -1 on a database error or a damaged chunk.
 */
static int idx_name_before(sqlite3_stmt *const st[2], int64_t name, int64_t ts, int64_t id, int64_t *ts_buf,
			   int64_t *id_buf, int64_t *n)
{
	int rc, k, i;

	*n = 0;
	sqlite3_reset(st[0]);
	sqlite3_bind_int64(st[0], 1, name);
	sqlite3_bind_int64(st[0], 2, ts);
	sqlite3_bind_int64(st[0], 3, id);
	if ((rc = sqlite3_step(st[0])) == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW || (k = chunk_decode(st[0], ts_buf, id_buf)) < 0)
		return -1;
	for (i = 0; i < k && pos_cmp(ts_buf[i], id_buf[i], ts, id) < 0; i++)
		(*n)++;
	sqlite3_reset(st[1]);
	sqlite3_bind_int64(st[1], 1, name);
	sqlite3_bind_int64(st[1], 2, ts_buf[0]);
	sqlite3_bind_int64(st[1], 3, id_buf[0]);
	if (sqlite3_step(st[1]) != SQLITE_ROW)
		return -1;
	*n += sqlite3_column_int64(st[1], 0);
	return 0;
}

/* How many matches lie strictly before (ts, id), through the name index;
 * -1 on a database error. */
static int64_t idx_before(const struct search *q, int64_t ts, int64_t id)
{
	sqlite3_stmt *st[2] = { NULL, NULL };
	int64_t *buf = malloc(2 * TRACEDB_NAMES_CHUNK * sizeof(*buf)), total = 0, n;
	long i;
	int bad = buf == NULL ||
		  sqlite3_prepare_v2(q->db,
				     "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 AND "
				     "(first_ts, first_id) < (?2, ?3) ORDER BY first_ts DESC, first_id DESC LIMIT 1",
				     -1, &st[0], NULL) != SQLITE_OK ||
		  sqlite3_prepare_v2(q->db,
				     "SELECT coalesce(sum(count), 0) FROM name_index WHERE name_id = ?1 AND "
				     "(first_ts, first_id) < (?2, ?3)",
				     -1, &st[1], NULL) != SQLITE_OK;

	for (i = 0; i < q->nnames && !bad; i++) {
		bad = idx_name_before(st, q->names[i], ts, id, buf, buf + TRACEDB_NAMES_CHUNK, &n) != 0;
		total += n;
	}
	sqlite3_finalize(st[0]);
	sqlite3_finalize(st[1]);
	free(buf);
	return bad ? -1 : total;
}

/* The matches by name, for the statements over slices. */
#define MATCH_SQL "name_id IN (SELECT id FROM strings WHERE instr(lower(str), lower(?1)) > 0)"

/* The page by one statement that sorts every match; as idx_page. */
static long sql_page(const struct search *q, int64_t *out)
{
	const struct qry_search_page *pg = q->pg;
	sqlite3_stmt *st;
	long n = 0;
	int rc;

	if (sqlite3_prepare_v2(q->db,
			       pg->from == QRY_SEARCH_BEFORE
				       ? "SELECT id FROM slices WHERE " MATCH_SQL " AND (ts, id) < (?2, ?3) "
					 "ORDER BY ts DESC, id DESC LIMIT ?4"
				       : "SELECT id FROM slices WHERE " MATCH_SQL " AND (?5 OR (ts, id) > (?2, ?3)) "
					 "ORDER BY ts, id LIMIT ?4",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, q->text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pg->at_ts);
	sqlite3_bind_int64(st, 3, pg->at_id);
	sqlite3_bind_int64(st, 4, (int64_t)pg->limit + 1);
	if (pg->from != QRY_SEARCH_BEFORE)
		sqlite3_bind_int(st, 5, pg->from == QRY_SEARCH_FIRST);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		out[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? n : -1;
}

/* As idx_before, by counting the matching slices. */
static int64_t sql_before(const struct search *q, int64_t ts, int64_t id)
{
	sqlite3_stmt *st;
	int64_t n = -1;

	if (sqlite3_prepare_v2(q->db, "SELECT count(*) FROM slices WHERE " MATCH_SQL " AND (ts, id) < (?2, ?3)", -1,
			       &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, q->text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, ts);
	sqlite3_bind_int64(st, 3, id);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Every match through the name index: the names' counts in name_stats,
 * not their chunks' (a common name's are megabytes); -1 on a database
 * error. */
static int64_t idx_total(const struct search *q)
{
	sqlite3_stmt *st;
	int64_t total = 0;
	long i;
	int rc = SQLITE_ROW;

	if (sqlite3_prepare_v2(q->db, "SELECT count FROM name_stats WHERE name_id = ?1", -1, &st, NULL) != SQLITE_OK)
		return -1;
	for (i = 0; i < q->nnames && rc == SQLITE_ROW; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, q->names[i]);
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			total += sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? total : -1;
}

static int64_t matches_before(const struct search *q, int64_t ts, int64_t id)
{
	return q->names ? idx_before(q, ts, id) : sql_before(q, ts, id);
}

/* Every match; -1 on a database error. */
static int64_t matches_total(const struct search *q)
{
	return q->names ? idx_total(q) : sql_before(q, INT64_MAX, INT64_MAX);
}

/* The histogram's bucket of ts (as the overview's): -1 outside the window. */
static int64_t hist_bucket(const struct qry_search_page *pg, int64_t ts)
{
	if (ts < pg->hist_start || ts > pg->hist_end)
		return -1;
	return qry_bucket(pg->hist_start, pg->hist_end, pg->buckets, ts);
}

/* A name index chunk read ahead of its decision (idx_histogram). */
struct hist_chunk {
	int64_t first_ts, first_id, count;
	uint8_t *data;    /* a copy: the row is gone once the next one is read */
	int len;
	int64_t *ts, *id; /* room to decode it: TRACEDB_NAMES_CHUNK each */
};

/* Counts chunk c's slices inside the window. Its slices lie between its
 * first ts and next_ts (the next chunk's first; has_next 0: the name's
 * last chunk read), so when both are inside the window and in one bucket
 * its count goes there whole; otherwise it is decoded. 0, or -1 when the
 * chunk is damaged. */
static int hist_chunk(const struct qry_search_page *pg, uint32_t *counts, const struct hist_chunk *c,
		      int64_t next_ts, int has_next)
{
	int64_t b = hist_bucket(pg, c->first_ts);
	int i, n;

	if (has_next && b >= 0 && b == hist_bucket(pg, next_ts) && c->count >= 1 && c->count <= TRACEDB_NAMES_CHUNK) {
		counts[b] += (uint32_t)c->count;
		return 0;
	}
	if ((n = chunk_decode_bytes(c->first_ts, c->first_id, c->count, c->data, c->len, c->ts, c->id)) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if ((b = hist_bucket(pg, c->ts[i])) >= 0)
			counts[b]++;
	return 0;
}

/*
 * The histogram through the name index: each name's chunks from the one
 * holding the window's start to the last starting inside it, most counted
 * whole (hist_chunk): on the 4 GB bench trace, a name of 12.6 M slices over
 * 1000 buckets took 270 ms decoding every slice (warm). 0, or -1 on a
 * database error or a damaged chunk.
 */
static int idx_histogram(const struct search *q, uint32_t *counts)
{
	const struct qry_search_page *pg = q->pg;
	struct hist_chunk c = { 0 };
	sqlite3_stmt *hold = NULL, *st = NULL;
	long i;
	int bad, rc, have;

	c.data = malloc((size_t)TRACEDB_NAMES_CHUNK * TRACEDB_NAMES_PAIR_MAX);
	c.ts = malloc(2 * TRACEDB_NAMES_CHUNK * sizeof(*c.ts));
	c.id = c.ts ? c.ts + TRACEDB_NAMES_CHUNK : NULL;
	bad = c.data == NULL || c.ts == NULL || sqlite3_prepare_v2(q->db, HOLDING_CHUNK_SQL, -1, &hold, NULL) != SQLITE_OK ||
	      sqlite3_prepare_v2(q->db,
				 "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 AND "
				 "(first_ts, first_id) >= (?2, ?3) AND first_ts <= ?4 ORDER BY first_ts, first_id",
				 -1, &st, NULL) != SQLITE_OK;
	for (i = 0; i < q->nnames && !bad; i++) {
		int64_t ts0 = INT64_MIN, id0 = INT64_MIN;

		sqlite3_reset(hold);
		sqlite3_bind_int64(hold, 1, q->names[i]);
		sqlite3_bind_int64(hold, 2, pg->hist_start);
		sqlite3_bind_int64(hold, 3, INT64_MIN); /* before every slice at the start */
		if ((rc = sqlite3_step(hold)) == SQLITE_ROW) {
			ts0 = sqlite3_column_int64(hold, 0);
			id0 = sqlite3_column_int64(hold, 1);
		} else if (rc != SQLITE_DONE) {
			bad = 1;
			break;
		}
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, q->names[i]);
		sqlite3_bind_int64(st, 2, ts0);
		sqlite3_bind_int64(st, 3, id0);
		sqlite3_bind_int64(st, 4, pg->hist_end);
		have = 0;
		while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			int len = sqlite3_column_bytes(st, 3);

			if (have)
				bad = hist_chunk(pg, counts, &c, sqlite3_column_int64(st, 0), 1) != 0;
			if (len > TRACEDB_NAMES_CHUNK * TRACEDB_NAMES_PAIR_MAX) {
				bad = 1;
				break;
			}
			c.first_ts = sqlite3_column_int64(st, 0);
			c.first_id = sqlite3_column_int64(st, 1);
			c.count = sqlite3_column_int64(st, 2);
			c.len = len;
			if (len > 0)
				memcpy(c.data, sqlite3_column_blob(st, 3), (size_t)len);
			have = 1;
		}
		if (!bad && rc != SQLITE_DONE)
			bad = 1;
		if (!bad && have)
			bad = hist_chunk(pg, counts, &c, 0, 0) != 0;
	}
	sqlite3_finalize(hold);
	sqlite3_finalize(st);
	free(c.data);
	free(c.ts);
	return bad ? -1 : 0;
}

static int sql_histogram(const struct search *q, uint32_t *counts)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(q->db, "SELECT ts FROM slices WHERE " MATCH_SQL " AND ts BETWEEN ?2 AND ?3", -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, q->text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, q->pg->hist_start);
	sqlite3_bind_int64(st, 3, q->pg->hist_end);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		counts[hist_bucket(q->pg, sqlite3_column_int64(st, 0))]++;
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* "histogram": [pg->buckets counts]; 0, or -1 on a database error. */
static int put_histogram(const struct search *q, struct jbuf *out)
{
	uint32_t *counts = calloc(q->pg->buckets, sizeof(*counts)), i;
	int rc = counts == NULL ? -1 : q->names ? idx_histogram(q, counts) : sql_histogram(q, counts);

	if (rc == 0) {
		jb_key(out, "histogram");
		jb_arr(out);
		for (i = 0; i < q->pg->buckets; i++)
			jb_i64(out, counts[i]);
		jb_arr_end(out);
	}
	free(counts);
	return rc;
}

/* What a page says about where it lies among all matches. */
struct page_place {
	int64_t total;              /* every match */
	int64_t index;              /* matches before the page's first slice */
	int64_t first_ts, first_id; /* the page's first slice */
	int64_t last_ts, last_id;   /* its last */
};

static void put_cursor(struct jbuf *out, const char *key, int yes, int64_t ts, int64_t id)
{
	char cursor[64];

	jb_key(out, key);
	if (!yes) {
		jb_null(out);
		return;
	}
	snprintf(cursor, sizeof(cursor), "%lld:%lld", (long long)ts, (long long)id);
	jb_str(out, cursor);
}

/* "slices": [{id, track_id, ts, dur, name, category}] for ids (ascending);
 * records the first and last in *pl. */
static int put_slices(sqlite3 *db, const int64_t *ids, long n, struct page_place *pl, struct jbuf *out,
		      struct qry_error *err)
{
	sqlite3_stmt *st;
	long i;

	if (sqlite3_prepare_v2(db,
			       "SELECT s.id, s.track_id, s.ts, s.dur, n.str, c.str FROM slices s JOIN strings n ON "
			       "n.id = s.name_id JOIN strings c ON c.id = s.category_id WHERE s.id = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	jb_key(out, "slices");
	jb_arr(out);
	for (i = 0; i < n; i++) {
		int rc;

		sqlite3_bind_int64(st, 1, ids[i]);
		if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
			sqlite3_finalize(st);
			return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s",
					rc == SQLITE_DONE ? "a slice is missing" : sqlite3_errstr(rc));
		}
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, pl->last_id = ids[i]);
		jb_key(out, "track_id");
		jb_i64(out, sqlite3_column_int64(st, 1));
		jb_key(out, "ts");
		jb_i64(out, pl->last_ts = sqlite3_column_int64(st, 2));
		jb_key(out, "dur");
		jb_i64(out, sqlite3_column_int64(st, 3));
		jb_key(out, "name");
		jb_column(out, st, 4);
		jb_key(out, "category");
		jb_column(out, st, 5);
		jb_obj_end(out);
		if (i == 0) {
			pl->first_ts = pl->last_ts;
			pl->first_id = pl->last_id;
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	jb_arr_end(out);
	return QRY_OK;
}

/*
 * Where the page lies: its index among all matches (from the position it
 * was asked at: what lies before an AFTER position, what lies before a
 * BEFORE position less the page) and the total. -1 on a database error.
 */
static int page_place(const struct search *q, long shown, struct page_place *pl)
{
	const struct qry_search_page *pg = q->pg;

	pl->total = matches_total(q);
	if (pg->from == QRY_SEARCH_FIRST)
		pl->index = 0;
	else if (pg->from == QRY_SEARCH_AFTER) /* at or before the position: before the next id */
		pl->index = matches_before(q, pg->at_ts, pg->at_id == INT64_MAX ? INT64_MAX : pg->at_id + 1);
	else
		pl->index = matches_before(q, pg->at_ts, pg->at_id) - shown;
	return pl->total < 0 || pl->index < 0 ? -1 : 0;
}

/* The reply of a page whose ids (limit + 1 at most) are in out, in the
 * page's direction. */
static int put_page(const struct search *q, int64_t *ids, long n, struct jbuf *out, struct qry_error *err)
{
	const struct qry_search_page *pg = q->pg;
	struct page_place pl = { 0 };
	long shown = n > (long)pg->limit ? (long)pg->limit : n, i;
	int more;

	for (i = 0; pg->from == QRY_SEARCH_BEFORE && i < shown / 2; i++) {
		int64_t t = ids[i];

		ids[i] = ids[shown - 1 - i];
		ids[shown - 1 - i] = t;
	}
	if (page_place(q, shown, &pl) != 0)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(q->db));
	jb_obj(out);
	if (put_slices(q->db, ids, shown, &pl, out, err) != QRY_OK)
		return err->code;
	more = shown > 0 && pl.index + shown < pl.total;
	jb_key(out, "truncated");
	jb_bool(out, more);
	put_cursor(out, "next_cursor", more, pl.last_ts, pl.last_id);
	put_cursor(out, "prev_cursor", shown > 0 && pl.index > 0, pl.first_ts, pl.first_id);
	jb_key(out, "total");
	jb_i64(out, pl.total);
	jb_key(out, "index");
	jb_i64(out, pl.index);
	if (pg->buckets > 0 && put_histogram(q, out) != 0)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(q->db));
	jb_obj_end(out);
	return QRY_OK;
}

int qry_search(sqlite3 *db, const char *text, const struct qry_search_page *pg, struct jbuf *out,
	       struct qry_error *err)
{
	int64_t names[MERGE_MAX_NAMES + 1], *ids;
	struct search q = { db, text, pg, names, 0 };
	long n;
	int rc;

	q.nnames = has_index(db) ? matching_names(db, text, names, MERGE_MAX_NAMES) : MERGE_MAX_NAMES + 1;
	if (q.nnames < 0)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	if (q.nnames > MERGE_MAX_NAMES)
		q.names = NULL;
	if ((ids = malloc(((size_t)pg->limit + 1) * sizeof(*ids))) == NULL)
		return qry_fail(err, QRY_ENOMEM, "out of memory");
	n = q.names ? idx_page(&q, ids) : sql_page(&q, ids);
	if (n < 0) {
		free(ids);
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	}
	rc = put_page(&q, ids, n, out, err);
	free(ids);
	return rc;
}
