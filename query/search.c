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
#include "cursor.h"

enum { MERGE_MAX_NAMES = 4096 };

/* One name's slices in (ts, id) order (or its reverse), a chunk at a time. */
struct stream {
	struct qcur cur;  /* the name's chunks, in the stream's direction */
	int64_t *ts, *id; /* the current chunk, decoded: TRACEDB_NAMES_CHUNK slots each */
	int n;            /* pairs in the current chunk */
	int i;            /* the current pair, 0 <= i < n while live */
	int backward;     /* walks from the latest slice to the earliest */
	int live;         /* 0 once every chunk is used up, or a read failed */
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

/* Decodes the chunk row c stands on (first_ts, first_id, count, data) into
 * ts/id; returns the pairs, or -1 when the row is damaged, which is left as
 * c's error. */
static int chunk_decode(struct qcur *c, int64_t *ts, int64_t *id)
{
	int len, n;
	const uint8_t *p = qcur_blob(c, 3, &len);

	n = chunk_decode_bytes(qcur_int(c, 0), qcur_int(c, 1), qcur_int(c, 2), p, len, ts, id);
	if (n < 0)
		qcur_fail(c, SQLITE_CORRUPT);
	return n;
}

/* Moves to the next slice in the stream's direction. The stream ends (live
 * 0) after its last chunk, and on a read error or a damaged chunk, which
 * are left as its cursor's error. */
static void stream_next(struct stream *s)
{
	if (s->live && (s->backward ? --s->i >= 0 : ++s->i < s->n))
		return;
	s->live = 0;
	if (!qcur_step(&s->cur) || (s->n = chunk_decode(&s->cur, s->ts, s->id)) < 0)
		return;
	s->i = s->backward ? s->n - 1 : 0;
	s->live = 1;
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

/* The first (ts, id) of the chunk of name holding (ts, id), through hold
 * (HOLDING_CHUNK_SQL), into *ts0, *id0; left as they are when there is
 * none (or the read failed: hold keeps the error). */
static void holding_chunk(struct qcur *hold, int64_t name, int64_t ts, int64_t id, int64_t *ts0, int64_t *id0)
{
	qcur_bind(hold, 1, name);
	qcur_bind(hold, 2, ts);
	qcur_bind(hold, 3, id);
	if (qcur_step(hold)) {
		*ts0 = qcur_int(hold, 0);
		*id0 = qcur_int(hold, 1);
	}
	qcur_reset(hold);
}

/*
 * Positions a stream of a name: forward on its first slice strictly after
 * (ts, id) (everything when from is QRY_SEARCH_FIRST), backward on its last
 * slice strictly before (ts, id). hold is HOLDING_CHUNK_SQL, open once for
 * every name. QRY_OK, or QRY_EDB when the stream's statement cannot be
 * prepared; read errors are left in the cursors.
 */
static int stream_open(sqlite3 *db, struct qcur *hold, struct stream *s, int64_t name,
		       enum qry_search_from from, int64_t ts, int64_t id, struct qry_error *err)
{
	int64_t ts0 = INT64_MIN, id0 = INT64_MIN;

	s->backward = from == QRY_SEARCH_BEFORE;
	if (from == QRY_SEARCH_AFTER)
		holding_chunk(hold, name, ts, id, &ts0, &id0);
	if (qcur_open(&s->cur, db,
		      s->backward ? "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 "
				    "AND (first_ts, first_id) < (?2, ?3) ORDER BY first_ts DESC, first_id DESC"
				  : "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 "
				    "AND (first_ts, first_id) >= (?2, ?3) ORDER BY first_ts, first_id",
		      err) != QRY_OK)
		return err->code;
	qcur_bind(&s->cur, 1, name);
	qcur_bind(&s->cur, 2, s->backward ? ts : ts0);
	qcur_bind(&s->cur, 3, s->backward ? id : id0);
	do
		stream_next(s);
	while (s->live && from != QRY_SEARCH_FIRST &&
	       (s->backward ? pos_cmp(s->ts[s->i], s->id[s->i], ts, id) >= 0
			    : pos_cmp(s->ts[s->i], s->id[s->i], ts, id) <= 0));
	return QRY_OK;
}

/* Streams for every name, with their chunk buffers and no statement yet;
 * NULL when out of memory. */
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

/* Frees the streams; returns first, or the first error of their cursors
 * (qcur_close). */
static int streams_destroy(struct stream *s, long n, int first)
{
	long i;

	for (i = 0; s && i < n; i++) {
		first = qcur_close(&s[i].cur, first);
		free(s[i].ts);
	}
	free(s);
	return first;
}

/* Whether the trace has the name index: *yes 1 or 0. QRY_OK or QRY_EDB.
 * A trace that grows (docs/API.md, "A trace while its bytes arrive") has
 * the table empty while it has slices: ingest writes the index at a pause
 * and at the end, and a commit in between holds none of it. */
static int has_index(sqlite3 *db, int *yes, struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'name_index'", err);

	*yes = rc == QRY_OK && qcur_step(&c);
	rc = qcur_done(rc, qcur_close(&c, 0), err);
	if (rc != QRY_OK || !*yes)
		return rc;
	rc = qcur_open(&c, db,
		       "SELECT EXISTS (SELECT 1 FROM name_index) OR NOT EXISTS (SELECT 1 FROM slices)", err);
	*yes = rc == QRY_OK && qcur_step(&c) && qcur_int(&c, 0) != 0;
	return qcur_done(rc, qcur_close(&c, 0), err);
}

/* The ids of the slice names containing text, at most max + 1 of them,
 * into ids, and their number into *n. QRY_OK or QRY_EDB. */
static int matching_names(sqlite3 *db, const char *text, int64_t *ids, long max, long *n, struct qry_error *err)
{
	struct qcur c;
	int rc;

	*n = 0;
	/* only names that slices carry, one row each in name_stats (written
	 * with the name index): the strings table also holds log messages and
	 * argument values, which may match by the thousand, and scanning it
	 * took 260 ms on the 4 GB bench trace's 466 K strings (35 names) */
	rc = qcur_open(&c, db,
		       "SELECT s.id FROM name_stats n CROSS JOIN strings s ON s.id = n.name_id "
		       "WHERE instr(lower(s.str), lower(?1)) > 0 ORDER BY n.name_id",
		       err);
	if (rc == QRY_OK) {
		qcur_bind_text(&c, 1, text);
		while (*n <= max && qcur_step(&c))
			ids[(*n)++] = qcur_int(&c, 0);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
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
 * stream per name, into out, and their number into *n. QRY_OK, or an
 * error.
 */
static int idx_page(const struct search *q, int64_t *out, long *n, struct qry_error *err)
{
	const struct qry_search_page *pg = q->pg;
	struct stream *s = streams_create(q->nnames);
	struct qcur hold;
	long i;
	int rc, dir = pg->from == QRY_SEARCH_BEFORE ? -1 : 1;

	*n = 0;
	if (s == NULL)
		return qry_fail(err, QRY_ENOMEM, "out of memory");
	rc = qcur_open(&hold, q->db, HOLDING_CHUNK_SQL, err);
	for (i = 0; i < q->nnames && rc == QRY_OK; i++)
		rc = stream_open(q->db, &hold, &s[i], q->names[i], pg->from, pg->at_ts, pg->at_id, err);
	while (rc == QRY_OK && *n <= (long)pg->limit) {
		long best = -1;

		for (i = 0; i < q->nnames; i++)
			if (s[i].live && (best < 0 || dir * pos_cmp(s[i].ts[s[i].i], s[i].id[s[i].i], s[best].ts[s[best].i],
								    s[best].id[s[best].i]) < 0))
				best = i;
		if (best < 0)
			break;
		out[(*n)++] = s[best].id[s[best].i];
		stream_next(&s[best]);
	}
	return qcur_done(rc, streams_destroy(s, q->nnames, qcur_close(&hold, 0)), err);
}

/*
 * The slices of one name strictly before (ts, id): the counts of its
 * chunks before the one holding the position, and that chunk's pairs
 * before it. c[0] is HOLDING_CHUNK_SQL's twin that returns the chunk, c[1]
 * sums counts; a read error or a damaged chunk is left in them.
 */
static int64_t idx_name_before(struct qcur *c, int64_t name, int64_t ts, int64_t id, int64_t *ts_buf,
			       int64_t *id_buf)
{
	int64_t n = 0;
	int k, i;

	qcur_bind(&c[0], 1, name);
	qcur_bind(&c[0], 2, ts);
	qcur_bind(&c[0], 3, id);
	k = qcur_step(&c[0]) ? chunk_decode(&c[0], ts_buf, id_buf) : 0;
	qcur_reset(&c[0]);
	if (k <= 0)
		return 0;
	for (i = 0; i < k && pos_cmp(ts_buf[i], id_buf[i], ts, id) < 0; i++)
		n++;
	qcur_bind(&c[1], 1, name);
	qcur_bind(&c[1], 2, ts_buf[0]);
	qcur_bind(&c[1], 3, id_buf[0]);
	if (qcur_step_required(&c[1])) /* an aggregate: always a row */
		n += qcur_int(&c[1], 0);
	qcur_reset(&c[1]);
	return n;
}

/* How many matches lie strictly before (ts, id), through the name index,
 * into *total. QRY_OK, or an error. */
static int idx_before(const struct search *q, int64_t ts, int64_t id, int64_t *total, struct qry_error *err)
{
	struct qcur c[2] = { { NULL, 0 }, { NULL, 0 } };
	int64_t *buf = malloc(2 * TRACEDB_NAMES_CHUNK * sizeof(*buf));
	long i;
	int rc;

	*total = 0;
	if (buf == NULL)
		return qry_fail(err, QRY_ENOMEM, "out of memory");
	rc = qcur_open(&c[0], q->db,
		       "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 AND "
		       "(first_ts, first_id) < (?2, ?3) ORDER BY first_ts DESC, first_id DESC LIMIT 1",
		       err);
	if (rc == QRY_OK)
		rc = qcur_open(&c[1], q->db,
			       "SELECT coalesce(sum(count), 0) FROM name_index WHERE name_id = ?1 AND "
			       "(first_ts, first_id) < (?2, ?3)",
			       err);
	for (i = 0; i < q->nnames && rc == QRY_OK && !c[0].err && !c[1].err; i++)
		*total += idx_name_before(c, q->names[i], ts, id, buf, buf + TRACEDB_NAMES_CHUNK);
	free(buf);
	return qcur_done(rc, qcur_close(&c[1], qcur_close(&c[0], 0)), err);
}

/* The matches by name, for the statements over slices. */
#define MATCH_SQL "name_id IN (SELECT id FROM strings WHERE instr(lower(str), lower(?1)) > 0)"

/* The page by one statement that sorts every match; as idx_page. */
static int sql_page(const struct search *q, int64_t *out, long *n, struct qry_error *err)
{
	const struct qry_search_page *pg = q->pg;
	struct qcur c;
	int rc;

	*n = 0;
	rc = qcur_open(&c, q->db,
		       pg->from == QRY_SEARCH_BEFORE
			       ? "SELECT id FROM slices WHERE " MATCH_SQL " AND (ts, id) < (?2, ?3) "
				 "ORDER BY ts DESC, id DESC LIMIT ?4"
			       : "SELECT id FROM slices WHERE " MATCH_SQL " AND (?5 OR (ts, id) > (?2, ?3)) "
				 "ORDER BY ts, id LIMIT ?4",
		       err);
	if (rc == QRY_OK) {
		qcur_bind_text(&c, 1, q->text);
		qcur_bind(&c, 2, pg->at_ts);
		qcur_bind(&c, 3, pg->at_id);
		qcur_bind(&c, 4, (int64_t)pg->limit + 1);
		if (pg->from != QRY_SEARCH_BEFORE)
			qcur_bind(&c, 5, pg->from == QRY_SEARCH_FIRST);
		while (qcur_step(&c))
			out[(*n)++] = qcur_int(&c, 0);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

/* As idx_before, by counting the matching slices. */
static int sql_before(const struct search *q, int64_t ts, int64_t id, int64_t *n, struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, q->db, "SELECT count(*) FROM slices WHERE " MATCH_SQL " AND (ts, id) < (?2, ?3)", err);

	*n = 0;
	if (rc == QRY_OK) {
		qcur_bind_text(&c, 1, q->text);
		qcur_bind(&c, 2, ts);
		qcur_bind(&c, 3, id);
		if (qcur_step_required(&c)) /* an aggregate: always a row */
			*n = qcur_int(&c, 0);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

/* Every match through the name index, into *total: the names' counts in
 * name_stats, not their chunks' (a common name's are megabytes). Each name
 * came from name_stats, so its row is there. QRY_OK, or an error. */
static int idx_total(const struct search *q, int64_t *total, struct qry_error *err)
{
	struct qcur c;
	long i;
	int rc = qcur_open(&c, q->db, "SELECT count FROM name_stats WHERE name_id = ?1", err);

	*total = 0;
	for (i = 0; i < q->nnames && rc == QRY_OK && !c.err; i++) {
		qcur_bind(&c, 1, q->names[i]);
		if (qcur_step_required(&c))
			*total += qcur_int(&c, 0);
		qcur_reset(&c);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

static int matches_before(const struct search *q, int64_t ts, int64_t id, int64_t *n, struct qry_error *err)
{
	return q->names ? idx_before(q, ts, id, n, err) : sql_before(q, ts, id, n, err);
}

/* Every match, into *n. */
static int matches_total(const struct search *q, int64_t *n, struct qry_error *err)
{
	return q->names ? idx_total(q, n, err) : sql_before(q, INT64_MAX, INT64_MAX, n, err);
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

/* Counts one name's chunks from the one holding the window's start to the
 * last starting inside it (idx_histogram): hold is HOLDING_CHUNK_SQL, st
 * the chunks from a position; a read error or a damaged chunk is left in
 * them. */
static void hist_name(const struct qry_search_page *pg, struct qcur *hold, struct qcur *st, struct hist_chunk *c,
		      uint32_t *counts, int64_t name)
{
	int64_t ts0 = INT64_MIN, id0 = INT64_MIN;
	int have = 0, bad = 0;

	holding_chunk(hold, name, pg->hist_start, INT64_MIN /* before every slice at the start */, &ts0, &id0);
	qcur_bind(st, 1, name);
	qcur_bind(st, 2, ts0);
	qcur_bind(st, 3, id0);
	qcur_bind(st, 4, pg->hist_end);
	while (!bad && qcur_step(st)) {
		int len;
		const void *p = qcur_blob(st, 3, &len);

		if (have)
			bad = hist_chunk(pg, counts, c, qcur_int(st, 0), 1) != 0;
		if (len > TRACEDB_NAMES_CHUNK * TRACEDB_NAMES_PAIR_MAX) {
			bad = 1;
			break;
		}
		c->first_ts = qcur_int(st, 0);
		c->first_id = qcur_int(st, 1);
		c->count = qcur_int(st, 2);
		c->len = len;
		if (len > 0)
			memcpy(c->data, p, (size_t)len);
		have = 1;
	}
	if (!bad && have && st->err == 0)
		bad = hist_chunk(pg, counts, c, 0, 0) != 0;
	if (bad)
		qcur_fail(st, SQLITE_CORRUPT);
	qcur_reset(st);
}

/*
 * The histogram through the name index: each name's chunks from the one
 * holding the window's start to the last starting inside it, most counted
 * whole (hist_chunk): on the 4 GB bench trace, a name of 12.6 M slices over
 * 1000 buckets took 270 ms decoding every slice (warm). QRY_OK, or an
 * error.
 */
static int idx_histogram(const struct search *q, uint32_t *counts, struct qry_error *err)
{
	struct hist_chunk c = { 0 };
	struct qcur hold = { NULL, 0 }, st = { NULL, 0 };
	long i;
	int rc = QRY_OK;

	c.data = malloc((size_t)TRACEDB_NAMES_CHUNK * TRACEDB_NAMES_PAIR_MAX);
	c.ts = malloc(2 * TRACEDB_NAMES_CHUNK * sizeof(*c.ts));
	c.id = c.ts ? c.ts + TRACEDB_NAMES_CHUNK : NULL;
	if (c.data == NULL || c.ts == NULL)
		rc = qry_fail(err, QRY_ENOMEM, "out of memory");
	if (rc == QRY_OK)
		rc = qcur_open(&hold, q->db, HOLDING_CHUNK_SQL, err);
	if (rc == QRY_OK)
		rc = qcur_open(&st, q->db,
			       "SELECT first_ts, first_id, count, data FROM name_index WHERE name_id = ?1 AND "
			       "(first_ts, first_id) >= (?2, ?3) AND first_ts <= ?4 ORDER BY first_ts, first_id",
			       err);
	for (i = 0; i < q->nnames && rc == QRY_OK && !hold.err && !st.err; i++)
		hist_name(q->pg, &hold, &st, &c, counts, q->names[i]);
	free(c.data);
	free(c.ts);
	return qcur_done(rc, qcur_close(&st, qcur_close(&hold, 0)), err);
}

static int sql_histogram(const struct search *q, uint32_t *counts, struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, q->db, "SELECT ts FROM slices WHERE " MATCH_SQL " AND ts BETWEEN ?2 AND ?3", err);

	if (rc == QRY_OK) {
		qcur_bind_text(&c, 1, q->text);
		qcur_bind(&c, 2, q->pg->hist_start);
		qcur_bind(&c, 3, q->pg->hist_end);
		while (qcur_step(&c))
			counts[hist_bucket(q->pg, qcur_int(&c, 0))]++;
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

/* "histogram": [pg->buckets counts]; QRY_OK, or an error. */
static int put_histogram(const struct search *q, struct jbuf *out, struct qry_error *err)
{
	uint32_t *counts = calloc(q->pg->buckets, sizeof(*counts)), i;
	int rc;

	if (counts == NULL)
		return qry_fail(err, QRY_ENOMEM, "out of memory");
	rc = q->names ? idx_histogram(q, counts, err) : sql_histogram(q, counts, err);
	if (rc == QRY_OK) {
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
 * records the first and last in *pl. A slice that is not there is a
 * damaged database. */
static int put_slices(sqlite3 *db, const int64_t *ids, long n, struct page_place *pl, struct jbuf *out,
		      struct qry_error *err)
{
	struct qcur c;
	long i;

	if (qcur_open(&c, db,
		      "SELECT s.id, s.track_id, s.ts, s.dur, n.str, c.str FROM slices s JOIN strings n ON "
		      "n.id = s.name_id JOIN strings c ON c.id = s.category_id WHERE s.id = ?1",
		      err) != QRY_OK)
		return err->code;
	jb_key(out, "slices");
	jb_arr(out);
	for (i = 0; i < n; i++) {
		qcur_bind(&c, 1, ids[i]);
		if (!qcur_step_required(&c))
			break;
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, pl->last_id = ids[i]);
		jb_key(out, "track_id");
		jb_i64(out, qcur_int(&c, 1));
		jb_key(out, "ts");
		jb_i64(out, pl->last_ts = qcur_int(&c, 2));
		jb_key(out, "dur");
		jb_i64(out, qcur_int(&c, 3));
		jb_key(out, "name");
		qcur_put(&c, out, 4);
		jb_key(out, "category");
		qcur_put(&c, out, 5);
		jb_obj_end(out);
		if (i == 0) {
			pl->first_ts = pl->last_ts;
			pl->first_id = pl->last_id;
		}
		qcur_reset(&c);
	}
	jb_arr_end(out);
	return qcur_done(QRY_OK, qcur_close(&c, 0), err);
}

/*
 * Where the page lies: its index among all matches (from the position it
 * was asked at: what lies before an AFTER position, what lies before a
 * BEFORE position less the page) and the total. QRY_OK, or an error.
 */
static int page_place(const struct search *q, long shown, struct page_place *pl, struct qry_error *err)
{
	const struct qry_search_page *pg = q->pg;
	int rc = matches_total(q, &pl->total, err);

	pl->index = 0;
	if (rc != QRY_OK || pg->from == QRY_SEARCH_FIRST)
		return rc;
	if (pg->from == QRY_SEARCH_AFTER) /* at or before the position: before the next id */
		return matches_before(q, pg->at_ts, pg->at_id == INT64_MAX ? INT64_MAX : pg->at_id + 1, &pl->index, err);
	if ((rc = matches_before(q, pg->at_ts, pg->at_id, &pl->index, err)) != QRY_OK)
		return rc;
	if ((pl->index -= shown) < 0) /* the page's matches were not counted before it */
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errstr(SQLITE_CORRUPT));
	return QRY_OK;
}

/* The reply of a page whose ids (limit + 1 at most) are in out, in the
 * page's direction. */
static int put_page(const struct search *q, int64_t *ids, long n, struct jbuf *out, struct qry_error *err)
{
	const struct qry_search_page *pg = q->pg;
	struct page_place pl = { 0 };
	long shown = n > (long)pg->limit ? (long)pg->limit : n, i;
	int more, rc;

	for (i = 0; pg->from == QRY_SEARCH_BEFORE && i < shown / 2; i++) {
		int64_t t = ids[i];

		ids[i] = ids[shown - 1 - i];
		ids[shown - 1 - i] = t;
	}
	if ((rc = page_place(q, shown, &pl, err)) != QRY_OK)
		return rc;
	jb_obj(out);
	if ((rc = put_slices(q->db, ids, shown, &pl, out, err)) != QRY_OK)
		return rc;
	more = shown > 0 && pl.index + shown < pl.total;
	jb_key(out, "truncated");
	jb_bool(out, more);
	put_cursor(out, "next_cursor", more, pl.last_ts, pl.last_id);
	put_cursor(out, "prev_cursor", shown > 0 && pl.index > 0, pl.first_ts, pl.first_id);
	jb_key(out, "total");
	jb_i64(out, pl.total);
	jb_key(out, "index");
	jb_i64(out, pl.index);
	if (pg->buckets > 0 && (rc = put_histogram(q, out, err)) != QRY_OK)
		return rc;
	jb_obj_end(out);
	return QRY_OK;
}

int qry_search(sqlite3 *db, const char *text, const struct qry_search_page *pg, struct jbuf *out,
	       struct qry_error *err)
{
	int64_t names[MERGE_MAX_NAMES + 1], *ids;
	struct search q = { db, text, pg, names, MERGE_MAX_NAMES + 1 };
	long n;
	int rc, indexed;

	if ((rc = has_index(db, &indexed, err)) != QRY_OK ||
	    (indexed && (rc = matching_names(db, text, names, MERGE_MAX_NAMES, &q.nnames, err)) != QRY_OK))
		return rc;
	if (q.nnames > MERGE_MAX_NAMES)
		q.names = NULL;
	if ((ids = malloc(((size_t)pg->limit + 1) * sizeof(*ids))) == NULL)
		return qry_fail(err, QRY_ENOMEM, "out of memory");
	rc = q.names ? idx_page(&q, ids, &n, err) : sql_page(&q, ids, &n, err);
	if (rc == QRY_OK)
		rc = put_page(&q, ids, n, out, err);
	free(ids);
	return rc;
}
