/*
 * The read side of the API: each endpoint's SQL and JSON.
 *
 * Bulk tables are stored in cluster order (schema/trace.sql): the slices of
 * one (track, depth), the points of one counter track, the runs of one cpu
 * and all logs are contiguous id ranges in which ts never decreases. A time
 * window is therefore found by binary search on the id, probing one row at
 * a time, and read as an id range: no secondary index, and the cost of a
 * viewport query depends on what it returns, not on the trace's size.
 * With a resolution, the level-of-detail tables replace runs of slices or
 * points shorter than a pixel by one summary each.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query.h"

const char *qry_strerror(int err)
{
	static const char *const s[] = { "ok", "not_found", "bad_request", "database_error", "limit_exceeded",
					 "out_of_memory" };

	return err >= 0 && err <= QRY_ENOMEM ? s[err] : "error";
}

__attribute__((format(printf, 3, 4))) static int fail(struct qry_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql, struct qry_error *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
		return NULL;
	}
	return st;
}

int qry_check_schema(sqlite3 *db, struct qry_error *err)
{
	sqlite3_stmt *st = prep(db, "PRAGMA user_version", err);
	int v = -1;

	if (st == NULL)
		return err->code;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (v != QRY_SCHEMA_VERSION)
		return fail(err, QRY_EDB, "the trace database has schema version %d; this server reads version %d", v,
			    QRY_SCHEMA_VERSION);
	return QRY_OK;
}

/* ---- id-range binary search ------------------------------------------- */

/* Probes ts (and dur, where the table has one) of one row by id. */
struct probe {
	sqlite3_stmt *st;
};

static int probe_open(struct probe *p, sqlite3 *db, const char *table, struct qry_error *err)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT ts, %s FROM %s WHERE id = ?",
		 strcmp(table, "slices") == 0 || strcmp(table, "sched") == 0 ? "dur" : "0", table);
	p->st = prep(db, sql, err);
	return p->st ? QRY_OK : err->code;
}

static int64_t probe_ts(struct probe *p, int64_t id, int64_t *dur)
{
	int64_t ts = INT64_MAX;

	sqlite3_bind_int64(p->st, 1, id);
	if (sqlite3_step(p->st) == SQLITE_ROW) {
		ts = sqlite3_column_int64(p->st, 0);
		if (dur)
			*dur = sqlite3_column_int64(p->st, 1);
	}
	sqlite3_reset(p->st);
	return ts;
}

/* The first id in [lo, hi] whose ts is > t (strict) or >= t; hi + 1 when none. */
static int64_t bound(struct probe *p, int64_t lo, int64_t hi, int64_t t, int strict)
{
	int64_t end = hi + 1;

	while (lo < end) {
		int64_t mid = lo + (end - lo) / 2, ts = probe_ts(p, mid, NULL);

		if (strict ? ts > t : ts >= t)
			end = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * The id range [*lo, *hi] of rows in [first, last] that can overlap [s, e]:
 * rows with ts <= e, from the one in effect at s on. With disjoint rows
 * (each ends before the next starts) only the last row starting at or before
 * s can reach into the window; otherwise any row from s - max_dur on can.
 */
static void window_ids(struct probe *p, int64_t first, int64_t last, int64_t s, int64_t e, int disjoint,
		       int64_t max_dur, int64_t *lo, int64_t *hi)
{
	int64_t dur = 0, ts;

	*hi = bound(p, first, last, e, 1) - 1;
	if (!disjoint) {
		*lo = bound(p, first, *hi, s > INT64_MIN + max_dur ? s - max_dur : INT64_MIN, 0);
		return;
	}
	*lo = bound(p, first, *hi, s, 1) - 1;
	if (*lo < first) {
		*lo = first;
		return;
	}
	ts = probe_ts(p, *lo, &dur);
	if (dur >= 0 && ts + dur < s)
		(*lo)++;
}

/* ---- names ------------------------------------------------------------ */

/* A per-request cache of string ids to text. */
struct names {
	sqlite3_stmt *st;
	int64_t id[1024];
	char *str[1024];
};

static int names_open(struct names *n, sqlite3 *db, struct qry_error *err)
{
	memset(n, 0, sizeof(*n));
	n->st = prep(db, "SELECT str FROM strings WHERE id = ?", err);
	return n->st ? QRY_OK : err->code;
}

static void names_close(struct names *n)
{
	size_t i;

	for (i = 0; i < 1024; i++)
		free(n->str[i]);
	sqlite3_finalize(n->st);
}

static void names_put(struct names *n, struct jbuf *b, int64_t id)
{
	size_t h = (size_t)id & 1023;
	const unsigned char *s;

	if (n->str[h] == NULL || n->id[h] != id) {
		free(n->str[h]);
		n->str[h] = NULL;
		sqlite3_bind_int64(n->st, 1, id);
		s = sqlite3_step(n->st) == SQLITE_ROW ? sqlite3_column_text(n->st, 0) : NULL;
		n->str[h] = strdup(s ? (const char *)s : "");
		n->id[h] = id;
		sqlite3_reset(n->st);
	}
	jb_str(b, n->str[h] ? n->str[h] : "");
}

/* ---- tracks ----------------------------------------------------------- */

/*
 * Writes the rows of st as an array of objects under key `list`, at most
 * limit of them; keys name the columns, and a 'u' in ukeys prints that
 * column as an unsigned 64-bit integer (koids, ids stored with their bits).
 * Returns 1 when rows were left out.
 */
static int put_objects(sqlite3_stmt *st, const char *list, const char *const *keys, const char *ukeys,
		       uint32_t limit, struct jbuf *out)
{
	int i, cols = sqlite3_column_count(st);
	uint32_t n = 0;

	jb_key(out, list);
	jb_arr(out);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n++ >= limit) {
			jb_arr_end(out);
			return 1;
		}
		jb_obj(out);
		for (i = 0; i < cols; i++) {
			jb_key(out, keys[i]);
			if (ukeys[i] == 'u' && sqlite3_column_type(st, i) == SQLITE_INTEGER)
				jb_u64(out, (uint64_t)sqlite3_column_int64(st, i));
			else
				jb_column(out, st, i);
		}
		jb_obj_end(out);
	}
	jb_arr_end(out);
	return 0;
}

/* The tracks of one process: st is bound to its pid and reset after. */
static void put_process_list(sqlite3_stmt *st, int64_t pid, const char *list, const char *const *keys,
			     const char *ukeys, struct jbuf *out)
{
	sqlite3_bind_int64(st, 1, pid);
	put_objects(st, list, keys, ukeys, UINT32_MAX, out);
	sqlite3_reset(st);
}

static const char *const thread_keys[] = { "tid", "name", "track_id", "max_depth" };
static const char *const async_keys[] = { "track_id", "name", "category", "max_depth" };
static const char *const counter_keys[] = { "track_id", "name", "series", "counter_id", "min", "max" };
static const char *const cpu_keys[] = { "cpu", "track_id" };

int qry_tracks(sqlite3 *db, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *st[5] = {
		prep(db, "SELECT pid, name FROM processes ORDER BY pid", err),
		prep(db,
		     "SELECT th.tid, th.name, t.id, t.max_depth FROM threads th LEFT JOIN tracks t "
		     "ON t.kind = 'thread' AND t.thread_id = th.id WHERE th.pid = ? ORDER BY th.tid",
		     err),
		prep(db,
		     "SELECT t.id, n.str, c.str, t.max_depth FROM tracks t JOIN strings n ON n.id = t.name_id "
		     "JOIN strings c ON c.id = t.category_id WHERE t.kind = 'async' AND t.pid = ? ORDER BY n.str, t.id",
		     err),
		prep(db,
		     "SELECT t.id, n.str, s.str, t.counter_id, t.min_value, t.max_value FROM tracks t "
		     "JOIN strings n ON n.id = t.name_id JOIN strings s ON s.id = t.series_id "
		     "WHERE t.kind = 'counter' AND t.pid = ? ORDER BY n.str, s.str, t.counter_id",
		     err),
		prep(db, "SELECT cpu, id FROM tracks WHERE kind = 'cpu' ORDER BY cpu", err),
	};
	int i, rc = QRY_OK;

	for (i = 0; i < 5; i++)
		if (st[i] == NULL)
			rc = err->code;
	if (rc == QRY_OK) {
		jb_obj(out);
		jb_key(out, "processes");
		jb_arr(out);
		while (sqlite3_step(st[0]) == SQLITE_ROW) {
			int64_t pid = sqlite3_column_int64(st[0], 0);

			jb_obj(out);
			jb_key(out, "pid");
			jb_u64(out, (uint64_t)pid);
			jb_key(out, "name");
			jb_column(out, st[0], 1);
			put_process_list(st[1], pid, "threads", thread_keys, "u...", out);
			put_process_list(st[2], pid, "async_tracks", async_keys, "....", out);
			put_process_list(st[3], pid, "counter_tracks", counter_keys, "...u..", out);
			jb_obj_end(out);
		}
		jb_arr_end(out);
		put_objects(st[4], "cpus", cpu_keys, "..", UINT32_MAX, out);
		jb_obj_end(out);
	}
	for (i = 0; i < 5; i++)
		sqlite3_finalize(st[i]);
	return rc;
}

/* ---- level of detail ------------------------------------------------- */

/* One summary record of the lod table (schema/trace.sql has the layouts). */
enum { LOD_WORDS = 10, LOD_RECORD = 8 * LOD_WORDS };
struct lod_rec {
	int64_t bucket;
	int64_t first_id, last_id;
	int64_t start_ts;
	uint64_t w[LOD_WORDS - 4]; /* the words after start_ts */
};

/* Walks the summaries of one (track, depth, level) from bucket lo to hi. */
struct lod_iter {
	sqlite3_stmt *st;
	const uint8_t *p; /* the current chunk's records */
	int n, i;
	int64_t hi;
	int done;
};

static const char lod_sql[] = "SELECT buckets FROM lod WHERE track_id = ? AND depth = ? AND level = ? "
			      "AND first_bucket <= ?4 AND last_bucket >= ?5 ORDER BY first_bucket";

static int64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return (int64_t)v;
}

static void lod_iter_start(struct lod_iter *it, sqlite3_stmt *st, int64_t track, int64_t depth, int level,
			   int64_t lo, int64_t hi)
{
	memset(it, 0, sizeof(*it));
	it->st = st;
	it->hi = hi;
	sqlite3_bind_int64(st, 1, track);
	sqlite3_bind_int64(st, 2, depth);
	sqlite3_bind_int64(st, 3, level);
	sqlite3_bind_int64(st, 4, hi);
	sqlite3_bind_int64(st, 5, lo);
}

/* The next record, 1; 0 at the end (the statement is then reset). */
static int lod_iter_next(struct lod_iter *it, struct lod_rec *r)
{
	const uint8_t *q;
	int k;

	while (!it->done && it->i >= it->n) {
		if (sqlite3_step(it->st) != SQLITE_ROW) {
			it->done = 1;
			break;
		}
		it->p = sqlite3_column_blob(it->st, 0);
		it->n = sqlite3_column_bytes(it->st, 0) / LOD_RECORD;
		it->i = 0;
	}
	if (it->done)
		goto out_end;
	q = it->p + LOD_RECORD * it->i++;
	r->bucket = get64(q);
	if (r->bucket > it->hi)
		goto out_end;
	r->first_id = get64(q + 8);
	r->last_id = get64(q + 16);
	r->start_ts = get64(q + 24);
	for (k = 0; k < LOD_WORDS - 4; k++)
		r->w[k] = (uint64_t)get64(q + 32 + 8 * k);
	return 1;
out_end:
	it->done = 1;
	sqlite3_reset(it->st);
	return 0;
}

/* ---- slices ----------------------------------------------------------- */

/* Whether the track exists: 1, 0, or -1 on a database error. */
static int tracks_has(sqlite3 *db, int64_t track)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM tracks WHERE id = ?", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, track);
		rc = sqlite3_step(st) == SQLITE_ROW;
	}
	sqlite3_finalize(st);
	return rc;
}

struct sitem {
	int64_t id, ts, dur;
	int64_t name, cat;
	int64_t merged; /* 0 for a slice; the number of slices a summary stands for */
	uint32_t depth;
};

struct slist {
	struct sitem *v;
	size_t len, cap;
	size_t limit;  /* items kept; more set truncated */
	int truncated;
	int oom;
};

static struct sitem *slist_push(struct slist *l)
{
	if (l->len >= l->limit) {
		l->truncated = 1;
		return NULL;
	}
	if (l->len == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct sitem *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL) {
			l->oom = 1;
			return NULL;
		}
		l->v = v;
		l->cap = cap;
	}
	return &l->v[l->len++];
}

struct slice_ctx {
	sqlite3 *db;
	struct probe probe;
	sqlite3_stmt *raw;  /* slices by id range */
	sqlite3_stmt *lod;  /* slice_lod buckets */
	struct slist items;
	const struct qry_window *w;
	int64_t track;
};

static void raw_slices(struct slice_ctx *c, int64_t lo, int64_t hi)
{
	struct sitem *it;

	if (lo > hi)
		return;
	sqlite3_bind_int64(c->raw, 1, lo);
	sqlite3_bind_int64(c->raw, 2, hi);
	while (sqlite3_step(c->raw) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(c->raw, 1), dur = sqlite3_column_int64(c->raw, 2);

		if (dur >= 0 && ts + dur < c->w->start)
			continue; /* ended before the window (rows that need not be disjoint) */
		if ((it = slist_push(&c->items)) == NULL)
			break;
		it->id = sqlite3_column_int64(c->raw, 0);
		it->ts = ts;
		it->dur = dur;
		it->depth = (uint32_t)sqlite3_column_int64(c->raw, 3);
		it->name = sqlite3_column_int64(c->raw, 4);
		it->cat = sqlite3_column_int64(c->raw, 5);
		it->merged = 0;
	}
	sqlite3_reset(c->raw);
}

/* The finest stored level of detail at or below the level whose buckets are
 * at least a pixel wide (levels 10, 12, 14 ..., ingest/lod.h); -1 when none
 * is stored there and the raw rows are the best summary. */
static int lod_level(int64_t resolution, uint64_t levels)
{
	int level = 10;

	while (level < 62 && (INT64_C(1) << level) < resolution)
		level += 2;
	for (; level >= 10; level--)
		if (levels & (UINT64_C(1) << level))
			return level;
	return -1;
}

static struct sitem *push_item(struct slice_ctx *c, int64_t id, int64_t ts, int64_t dur, uint32_t depth)
{
	struct sitem *it = slist_push(&c->items);

	if (it == NULL)
		return NULL;
	it->id = id;
	it->ts = ts;
	it->dur = dur;
	it->depth = depth;
	it->merged = 0;
	return it;
}

/*
 * A bucket of the mipmap: its longest slice as itself when it is at least a
 * pixel long, and the others as one summary item beside it (before it, or
 * after it when it comes first), at most a bucket wide. A summary carries
 * the id, name and category of a slice it stands for: the longest, or when
 * that is drawn by itself, the first of the others. Everything comes from
 * the record: no row is read.
 */
static void lod_item(struct slice_ctx *c, const struct lod_rec *rec, uint32_t depth, int level)
{
	int64_t first = rec->first_id, count = rec->last_id - first + 1, start = rec->start_ts;
	int64_t end = (int64_t)rec->w[0], rep = (int64_t)rec->w[1], lts = (int64_t)rec->w[2];
	int64_t ldur = (int64_t)rec->w[3], width = INT64_C(1) << level;
	uint64_t names = rec->w[4];
	struct sitem *it;

	if (ldur >= c->w->resolution || ldur < 0) {
		if ((it = push_item(c, rep, lts, ldur, depth)) == NULL)
			return;
		it->name = (int64_t)(uint32_t)names;
		it->cat = (int64_t)(names >> 32);
		if (--count <= 0 || ldur < 0)
			return;
		if (lts > start)
			end = lts;
		else
			start = lts + ldur;
		rep = rep == first ? first + 1 : first;
		names = rec->w[5];
	}
	if ((it = push_item(c, rep, start, end - start < width ? (end > start ? end - start : 0) : width, depth)) ==
	    NULL)
		return;
	it->name = (int64_t)(uint32_t)names;
	it->cat = (int64_t)(names >> 32);
	it->merged = count;
}

static void lod_slices(struct slice_ctx *c, uint32_t depth, int64_t lo, int64_t hi, int level)
{
	int64_t cur = lo, lo_ts = probe_ts(&c->probe, lo, NULL);
	struct lod_iter it;
	struct lod_rec rec;

	lod_iter_start(&it, c->lod, c->track, depth, level, lo_ts >> level, c->w->end >> level);
	while (lod_iter_next(&it, &rec)) {
		if (c->items.truncated || rec.first_id > hi) {
			sqlite3_reset(c->lod);
			break;
		}
		if (rec.last_id < cur)
			continue;
		raw_slices(c, cur, rec.first_id - 1);
		lod_item(c, &rec, depth, level);
		cur = rec.last_id + 1;
	}
	raw_slices(c, cur, hi);
}

static int sitem_cmp(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int sitem_depth_cmp(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/*
 * Folds the short items (slices under a pixel and summaries) that start in
 * the same pixel column of one depth into one summary: the level of detail
 * read may be up to two levels finer than a pixel, and raw slices fall
 * between its buckets. Slices a pixel long or more stay as they are, so a
 * column holds one summary and the few long slices that start in it.
 */
static void fold_columns(struct slist *l, int64_t resolution)
{
	struct sitem *v = l->v, *agg = NULL;
	size_t i, out = 0;

	qsort(v, l->len, sizeof(*v), sitem_depth_cmp);
	for (i = 0; i < l->len; i++) {
		struct sitem x = v[i];
		int64_t end = x.ts + (x.dur > 0 ? x.dur : 0);

		if (x.merged == 0 && (x.dur < 0 || x.dur >= resolution)) {
			v[out++] = x;
			continue;
		}
		if (agg && agg->depth == x.depth && agg->ts / resolution == x.ts / resolution) {
			agg->merged = (agg->merged ? agg->merged : 1) + (x.merged ? x.merged : 1);
			if (end > agg->ts + agg->dur)
				agg->dur = end - agg->ts;
			continue;
		}
		v[out] = x;
		agg = &v[out++];
	}
	l->len = out;
}

static void put_slices(struct slice_ctx *c, struct names *n, struct jbuf *out)
{
	size_t i;

	if (c->w->resolution > 0 && c->items.len > 1)
		fold_columns(&c->items, c->w->resolution);
	if (c->items.len > 1) /* v is NULL when there are none */
		qsort(c->items.v, c->items.len, sizeof(struct sitem), sitem_cmp);
	jb_obj(out);
	jb_key(out, "slices");
	jb_arr(out);
	for (i = 0; i < c->items.len; i++) {
		struct sitem *it = &c->items.v[i];

		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, it->id);
		jb_key(out, "ts");
		jb_i64(out, it->ts);
		jb_key(out, "dur");
		jb_i64(out, it->dur);
		jb_key(out, "depth");
		jb_i64(out, it->depth);
		jb_key(out, "name");
		names_put(n, out, it->name);
		jb_key(out, "category");
		names_put(n, out, it->cat);
		if (it->merged) {
			jb_key(out, "merged");
			jb_i64(out, it->merged);
		}
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, c->items.truncated);
	jb_obj_end(out);
}

static int slices_open(struct slice_ctx *c, sqlite3 *db, struct qry_error *err)
{
	if (probe_open(&c->probe, db, "slices", err) != QRY_OK)
		return err->code;
	c->raw = prep(db, "SELECT id, ts, dur, depth, name_id, category_id FROM slices WHERE id BETWEEN ? AND ?", err);
	c->lod = prep(db, lod_sql, err);
	return c->raw && c->lod ? QRY_OK : err->code;
}

static void slices_close(struct slice_ctx *c)
{
	sqlite3_finalize(c->probe.st);
	sqlite3_finalize(c->raw);
	sqlite3_finalize(c->lod);
	free(c->items.v);
}

int qry_slices(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct slice_ctx c = { 0 };
	struct names n;
	sqlite3_stmt *d;
	int rc = QRY_OK, found = 0;

	c.db = db;
	c.w = w;
	c.track = track;
	c.items.limit = w->limit;
	d = prep(db, "SELECT depth, first_id, last_id, max_dur, disjoint, lod_levels FROM track_depths "
		     "WHERE track_id = ?",
		 err);
	if (d == NULL || slices_open(&c, db, err) != QRY_OK || names_open(&n, db, err) != QRY_OK) {
		sqlite3_finalize(d);
		slices_close(&c);
		return err->code;
	}
	sqlite3_bind_int64(d, 1, track);
	while (sqlite3_step(d) == SQLITE_ROW && !c.items.truncated) {
		uint32_t depth = (uint32_t)sqlite3_column_int64(d, 0);
		int level = lod_level(w->resolution, (uint64_t)sqlite3_column_int64(d, 5));
		int64_t lo, hi;

		found = 1;
		window_ids(&c.probe, sqlite3_column_int64(d, 1), sqlite3_column_int64(d, 2), w->start, w->end,
			   sqlite3_column_int(d, 4), sqlite3_column_int64(d, 3), &lo, &hi);
		if (w->resolution > 0 && level >= 0 && hi - lo >= 2)
			lod_slices(&c, depth, lo, hi, level);
		else
			raw_slices(&c, lo, hi);
	}
	sqlite3_finalize(d);
	if (!found && tracks_has(db, track) == 0)
		rc = fail(err, QRY_ENOTFOUND, "there is no track %" PRId64 " in this trace", track);
	else if (c.items.oom)
		rc = fail(err, QRY_ENOMEM, "out of memory");
	else
		put_slices(&c, &n, out);
	names_close(&n);
	slices_close(&c);
	return rc;
}

/* ---- one slice -------------------------------------------------------- */

/* An argument value by its stored type (schema/trace.sql, args). */
static void put_arg_value(struct jbuf *out, sqlite3_stmt *st)
{
	char hex[24];
	int64_t v = sqlite3_column_int64(st, 2);

	switch (sqlite3_column_int(st, 1)) {
	case 2: /* u32 */
	case 4: /* u64 */
	case 8: /* koid */
		jb_u64(out, (uint64_t)v);
		break;
	case 1:
	case 3:
		jb_i64(out, v);
		break;
	case 5:
		jb_dbl(out, sqlite3_column_double(st, 3));
		break;
	case 6:
		jb_column(out, st, 4);
		break;
	case 7:
		snprintf(hex, sizeof(hex), "0x%" PRIx64, (uint64_t)v);
		jb_str(out, hex);
		break;
	case 9:
		jb_bool(out, v != 0);
		break;
	case 10:
		jb_column(out, st, 5);
		break;
	default:
		jb_null(out);
	}
}

static int put_args(sqlite3 *db, int64_t set, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *st = prep(db,
				"SELECT k.str, a.type, a.int_value, a.real_value, v.str, a.blob_value FROM args a "
				"JOIN strings k ON k.id = a.key_id LEFT JOIN strings v ON v.id = a.string_id "
				"WHERE a.id BETWEEN ?1 AND ?1 + 511 AND a.arg_set_id = ?1 ORDER BY a.id",
				err);

	if (st == NULL)
		return err->code;
	sqlite3_bind_int64(st, 1, set);
	jb_key(out, "args");
	jb_obj(out);
	while (sqlite3_step(st) == SQLITE_ROW) {
		jb_key(out, (const char *)sqlite3_column_text(st, 0));
		put_arg_value(out, st);
	}
	jb_obj_end(out);
	sqlite3_finalize(st);
	return QRY_OK;
}

static int put_slice_flows(sqlite3 *db, int64_t id, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *st = prep(db,
				"SELECT flow_id, from_slice_id, to_slice_id FROM flows WHERE from_slice_id = ?1 "
				"UNION ALL SELECT flow_id, from_slice_id, to_slice_id FROM flows WHERE to_slice_id = ?1",
				err);

	if (st == NULL)
		return err->code;
	sqlite3_bind_int64(st, 1, id);
	jb_key(out, "flows");
	jb_arr(out);
	while (sqlite3_step(st) == SQLITE_ROW) {
		jb_obj(out);
		jb_key(out, "flow_id");
		jb_u64(out, (uint64_t)sqlite3_column_int64(st, 0));
		jb_key(out, "from_slice");
		jb_column(out, st, 1);
		jb_key(out, "to_slice");
		jb_column(out, st, 2);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	sqlite3_finalize(st);
	return QRY_OK;
}

int qry_slice(sqlite3 *db, int64_t slice_id, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *st = prep(db,
				"SELECT s.id, s.ts, s.dur, s.depth, n.str, c.str, s.track_id, t.pid, th.tid, "
				"s.parent_id, s.arg_set_id, t.kind FROM slices s JOIN strings n ON n.id = s.name_id "
				"JOIN strings c ON c.id = s.category_id JOIN tracks t ON t.id = s.track_id "
				"LEFT JOIN threads th ON th.id = t.thread_id WHERE s.id = ?",
				err);
	static const char *const keys[] = { "id", "ts", "dur", "depth", "name", "category", "track_id" };
	int i, rc = QRY_OK;

	if (st == NULL)
		return err->code;
	sqlite3_bind_int64(st, 1, slice_id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return fail(err, QRY_ENOTFOUND, "there is no slice with this id in the trace");
	}
	jb_obj(out);
	for (i = 0; i < 7; i++) {
		jb_key(out, keys[i]);
		jb_column(out, st, i);
	}
	jb_key(out, "track_kind");
	jb_column(out, st, 11);
	jb_key(out, "pid");
	if (sqlite3_column_type(st, 7) == SQLITE_NULL)
		jb_null(out);
	else
		jb_u64(out, (uint64_t)sqlite3_column_int64(st, 7));
	jb_key(out, "tid");
	if (sqlite3_column_type(st, 8) == SQLITE_NULL)
		jb_null(out);
	else
		jb_u64(out, (uint64_t)sqlite3_column_int64(st, 8));
	jb_key(out, "parent_id");
	jb_column(out, st, 9);
	if (sqlite3_column_type(st, 10) == SQLITE_NULL) {
		jb_key(out, "args");
		jb_obj(out);
		jb_obj_end(out);
	} else {
		rc = put_args(db, sqlite3_column_int64(st, 10), out, err);
	}
	if (rc == QRY_OK)
		rc = put_slice_flows(db, slice_id, out, err);
	jb_obj_end(out);
	sqlite3_finalize(st);
	return rc;
}

/* ---- counters --------------------------------------------------------- */

static void put_point(struct jbuf *out, sqlite3_stmt *raw)
{
	jb_obj(out);
	jb_key(out, "ts");
	jb_column(out, raw, 0);
	jb_key(out, "value");
	jb_column(out, raw, 1);
	jb_obj_end(out);
}

/* Emits raw points with ids in [lo, hi]; returns how many. */
static size_t raw_points(sqlite3_stmt *raw, int64_t lo, int64_t hi, size_t room, struct jbuf *out, int *truncated)
{
	size_t n = 0;

	if (lo > hi)
		return 0;
	sqlite3_bind_int64(raw, 1, lo);
	sqlite3_bind_int64(raw, 2, hi);
	while (sqlite3_step(raw) == SQLITE_ROW) {
		if (n >= room) {
			*truncated = 1;
			break;
		}
		put_point(out, raw);
		n++;
	}
	sqlite3_reset(raw);
	return n;
}

/* A bucket: its first point's time, last point's value and time, min, max. */
static void put_bucket(struct jbuf *out, const struct lod_rec *rec)
{
	double min, max, last;

	memcpy(&min, &rec->w[1], sizeof(min));
	memcpy(&max, &rec->w[2], sizeof(max));
	memcpy(&last, &rec->w[3], sizeof(last));
	jb_obj(out);
	jb_key(out, "ts");
	jb_i64(out, rec->start_ts);
	jb_key(out, "value");
	if (rec->w[4])
		jb_i64(out, (int64_t)rec->w[3]);
	else
		jb_dbl(out, last);
	jb_key(out, "last_ts");
	jb_i64(out, (int64_t)rec->w[0]);
	jb_key(out, "min");
	jb_dbl(out, min);
	jb_key(out, "max");
	jb_dbl(out, max);
	jb_key(out, "merged");
	jb_i64(out, rec->last_id - rec->first_id + 1);
	jb_obj_end(out);
}

struct counter_ctx {
	sqlite3_stmt *raw, *lod, *track;
	struct probe probe;
};

static void counters_close(struct counter_ctx *c)
{
	sqlite3_finalize(c->raw);
	sqlite3_finalize(c->lod);
	sqlite3_finalize(c->track);
	sqlite3_finalize(c->probe.st);
}

static int counters_open(struct counter_ctx *c, sqlite3 *db, struct qry_error *err)
{
	memset(c, 0, sizeof(*c));
	c->raw = prep(db, "SELECT ts, value FROM counters WHERE id BETWEEN ? AND ?", err);
	c->lod = prep(db, lod_sql, err);
	c->track = prep(db, "SELECT first_row, last_row, lod_levels FROM tracks WHERE id = ? AND kind = 'counter'",
			err);
	if (c->raw == NULL || c->lod == NULL || c->track == NULL || probe_open(&c->probe, db, "counters", err))
		return err->code;
	return QRY_OK;
}

/* Points of [lo, hi] through the mipmap: buckets, and raw points between. */
static void lod_points(struct counter_ctx *c, int64_t track, const struct qry_window *w, int64_t lo, int64_t hi,
		       int level, struct jbuf *out, int *truncated)
{
	int64_t cur = lo;
	struct lod_iter it;
	struct lod_rec rec;
	size_t n = 0;

	lod_iter_start(&it, c->lod, track, 0, level, probe_ts(&c->probe, lo, NULL) >> level, w->end >> level);
	while (lod_iter_next(&it, &rec)) {
		if (*truncated || rec.first_id > hi) {
			sqlite3_reset(c->lod);
			break;
		}
		if (rec.last_id < cur)
			continue;
		n += raw_points(c->raw, cur, rec.first_id - 1, w->limit - n, out, truncated);
		if (n >= w->limit) {
			*truncated = 1;
			continue;
		}
		put_bucket(out, &rec);
		n++;
		cur = rec.last_id + 1;
	}
	if (!*truncated)
		raw_points(c->raw, cur, hi, w->limit - n, out, truncated);
}

int qry_counters(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct counter_ctx c;
	int64_t first, last, lo, hi;
	int truncated = 0, level;

	if (counters_open(&c, db, err) != QRY_OK) {
		counters_close(&c);
		return err->code;
	}
	sqlite3_bind_int64(c.track, 1, track);
	if (sqlite3_step(c.track) != SQLITE_ROW) {
		counters_close(&c);
		return fail(err, QRY_ENOTFOUND, "there is no counter track with this id in the trace");
	}
	first = sqlite3_column_int64(c.track, 0);
	last = sqlite3_column_int64(c.track, 1);
	level = lod_level(w->resolution, (uint64_t)sqlite3_column_int64(c.track, 2));
	/* the last point before the window, then every point up to its end */
	lo = bound(&c.probe, first, last, w->start, 0) - 1;
	lo = lo < first ? first : lo;
	hi = bound(&c.probe, first, last, w->end, 1) - 1;
	jb_obj(out);
	jb_key(out, "points");
	jb_arr(out);
	if (first > 0 && w->resolution > 0 && level >= 0 && hi - lo >= 2)
		lod_points(&c, track, w, lo, hi, level, out, &truncated);
	else if (first > 0)
		raw_points(c.raw, lo, hi, w->limit, out, &truncated);
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, truncated);
	jb_obj_end(out);
	counters_close(&c);
	return QRY_OK;
}

/* ---- flows, sched, logs ------------------------------------------------ */

/* A list reply: {"<list>": [rows of st, bound by the caller], "truncated"}. */
static int put_rows(sqlite3_stmt *st, const char *list, const char *const *keys, const char *ukeys, uint32_t limit,
		    struct jbuf *out)
{
	int truncated;

	jb_obj(out);
	truncated = put_objects(st, list, keys, ukeys, limit, out);
	jb_key(out, "truncated");
	jb_bool(out, truncated);
	jb_obj_end(out);
	return QRY_OK;
}

/* A window list: the statement takes ?1 start, ?2 end, ?3 limit + 1. */
static int window_list(sqlite3 *db, const char *sql, const struct qry_window *w, const char *list,
		       const char *const *keys, const char *ukeys, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *st = prep(db, sql, err);
	int rc;

	if (st == NULL)
		return err->code;
	sqlite3_bind_int64(st, 1, w->start);
	sqlite3_bind_int64(st, 2, w->end);
	sqlite3_bind_int64(st, 3, (int64_t)w->limit + 1);
	rc = put_rows(st, list, keys, ukeys, w->limit, out);
	sqlite3_finalize(st);
	return rc;
}

int qry_flows(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	static const char *const keys[] = { "flow_id", "from_slice", "to_slice", "from_track",
					    "to_track", "from_ts",    "to_ts" };

	return window_list(db,
			   "SELECT f.flow_id, f.from_slice_id, f.to_slice_id, a.track_id, b.track_id, f.from_ts, "
			   "f.to_ts FROM flows f JOIN slices a ON a.id = f.from_slice_id JOIN slices b ON "
			   "b.id = f.to_slice_id WHERE f.from_ts BETWEEN ?1 AND ?2 OR f.to_ts BETWEEN ?1 AND ?2 "
			   "ORDER BY f.from_ts LIMIT ?3",
			   w, "flows", keys, "u......", out, err);
}

/* Reading one cpu's runs: raw rows, and summaries from its level of detail. */
struct sched_ctx {
	sqlite3_stmt *raw;    /* runs by id range, those reaching the window */
	sqlite3_stmt *thread; /* pid, tid of a thread row */
	sqlite3_stmt *lod;
	struct probe probe;
	const struct qry_window *w;
	int64_t cpu;
	size_t n;             /* items written */
	int truncated;
};

static const char *const sched_keys[] = { "ts", "dur", "cpu", "pid", "tid", "priority", "end_state" };

static void sched_raw(struct sched_ctx *c, int64_t lo, int64_t hi, struct jbuf *out)
{
	int i;

	if (lo > hi || c->truncated)
		return;
	sqlite3_bind_int64(c->raw, 1, lo);
	sqlite3_bind_int64(c->raw, 2, hi);
	sqlite3_bind_int64(c->raw, 3, c->w->start);
	while (sqlite3_step(c->raw) == SQLITE_ROW) {
		if (c->n >= c->w->limit) {
			c->truncated = 1;
			break;
		}
		jb_obj(out);
		for (i = 0; i < 7; i++) {
			jb_key(out, sched_keys[i]);
			if ((i == 3 || i == 4) && sqlite3_column_type(c->raw, i) == SQLITE_INTEGER)
				jb_u64(out, (uint64_t)sqlite3_column_int64(c->raw, i));
			else
				jb_column(out, c->raw, i);
		}
		jb_obj_end(out);
		c->n++;
	}
	sqlite3_reset(c->raw);
}

/* A bucket: its longest run as itself when a pixel long, the others as one
 * summary carrying the thread of the first of them. */
static void sched_bucket(struct sched_ctx *c, const struct lod_rec *rec, int level, struct jbuf *out)
{
	int64_t first = rec->first_id, count = rec->last_id - first + 1, start = rec->start_ts;
	int64_t end = (int64_t)rec->w[0], lid = (int64_t)rec->w[1], lts = (int64_t)rec->w[2];
	int64_t ldur = (int64_t)rec->w[3], width = INT64_C(1) << level;
	uint64_t thread = rec->w[4];

	if (ldur >= c->w->resolution || ldur < 0) {
		sched_raw(c, lid, lid, out);
		if (--count <= 0 || ldur < 0)
			return;
		if (lts > start)
			end = lts;
		else
			start = lts + ldur;
		thread = rec->w[5];
	}
	if (c->n >= c->w->limit) {
		c->truncated = 1;
		return;
	}
	jb_obj(out);
	jb_key(out, "ts");
	jb_i64(out, start);
	jb_key(out, "dur");
	jb_i64(out, end - start < width ? (end > start ? end - start : 0) : width);
	jb_key(out, "cpu");
	jb_i64(out, c->cpu);
	sqlite3_bind_int64(c->thread, 1, (int64_t)(uint32_t)thread);
	if (sqlite3_step(c->thread) == SQLITE_ROW) {
		jb_key(out, "pid");
		jb_u64(out, (uint64_t)sqlite3_column_int64(c->thread, 0));
		jb_key(out, "tid");
		jb_u64(out, (uint64_t)sqlite3_column_int64(c->thread, 1));
	}
	sqlite3_reset(c->thread);
	jb_key(out, "merged");
	jb_i64(out, count);
	jb_obj_end(out);
	c->n++;
}

static void sched_lod(struct sched_ctx *c, int64_t track, int64_t lo, int64_t hi, int level, struct jbuf *out)
{
	int64_t cur = lo;
	struct lod_iter it;
	struct lod_rec rec;

	lod_iter_start(&it, c->lod, track, 0, level, probe_ts(&c->probe, lo, NULL) >> level, c->w->end >> level);
	while (lod_iter_next(&it, &rec)) {
		if (c->truncated || rec.first_id > hi) {
			sqlite3_reset(c->lod);
			break;
		}
		if (rec.last_id < cur)
			continue;
		sched_raw(c, cur, rec.first_id - 1, out);
		sched_bucket(c, &rec, level, out);
		cur = rec.last_id + 1;
	}
	sched_raw(c, cur, hi, out);
}

int qry_sched(sqlite3 *db, int64_t cpu, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *t = prep(db, "SELECT id, first_row, last_row, lod_levels FROM tracks WHERE kind = 'cpu' AND cpu = ?",
			       err);
	struct sched_ctx c = { 0 };
	int64_t lo = 1, hi = 0, track = 0;
	int rc = QRY_OK, level = -1;

	c.w = w;
	c.cpu = cpu;
	c.raw = prep(db,
		     "SELECT ts, dur, cpu, pid, tid, priority, end_state FROM sched WHERE id BETWEEN ? AND ? "
		     "AND (dur < 0 OR ts + dur >= ?)",
		     err);
	c.thread = prep(db, "SELECT pid, tid FROM threads WHERE id = ?", err);
	c.lod = prep(db, lod_sql, err);
	if (t == NULL || c.raw == NULL || c.thread == NULL || c.lod == NULL ||
	    probe_open(&c.probe, db, "sched", err) != QRY_OK) {
		rc = err->code;
		goto out_finalize;
	}
	sqlite3_bind_int64(t, 1, cpu);
	if (sqlite3_step(t) == SQLITE_ROW) {
		track = sqlite3_column_int64(t, 0);
		window_ids(&c.probe, sqlite3_column_int64(t, 1), sqlite3_column_int64(t, 2), w->start, w->end, 1, 0, &lo,
			   &hi);
		level = lod_level(w->resolution, (uint64_t)sqlite3_column_int64(t, 3));
	}
	jb_obj(out);
	jb_key(out, "slices");
	jb_arr(out);
	if (w->resolution > 0 && level >= 0 && hi - lo >= 2)
		sched_lod(&c, track, lo, hi, level, out);
	else
		sched_raw(&c, lo, hi, out);
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, c.truncated);
	jb_obj_end(out);
out_finalize:
	sqlite3_finalize(t);
	sqlite3_finalize(c.raw);
	sqlite3_finalize(c.thread);
	sqlite3_finalize(c.lod);
	sqlite3_finalize(c.probe.st);
	return rc;
}

int qry_logs(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	static const char *const keys[] = { "ts", "pid", "tid", "message" };
	sqlite3_stmt *n = prep(db, "SELECT max(id) FROM logs", err);
	sqlite3_stmt *st = prep(db,
				"SELECT l.ts, l.pid, l.tid, s.str FROM logs l JOIN strings s ON s.id = l.message_id "
				"WHERE l.id BETWEEN ? AND ?",
				err);
	struct probe p = { 0 };
	int64_t last = 0, lo, hi;
	int rc = QRY_OK;

	if (n == NULL || st == NULL || probe_open(&p, db, "logs", err) != QRY_OK) {
		rc = err->code;
		goto out_finalize;
	}
	if (sqlite3_step(n) == SQLITE_ROW)
		last = sqlite3_column_int64(n, 0);
	lo = bound(&p, 1, last, w->start, 0);
	hi = bound(&p, 1, last, w->end, 1) - 1;
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	rc = put_rows(st, "logs", keys, ".uu.", w->limit, out);
out_finalize:
	sqlite3_finalize(n);
	sqlite3_finalize(st);
	sqlite3_finalize(p.st);
	return rc;
}

/* ---- search and stats ------------------------------------------------- */

int qry_search(sqlite3 *db, const char *text, uint32_t limit, struct jbuf *out, struct qry_error *err)
{
	static const char *const keys[] = { "id", "track_id", "ts", "dur", "name", "category" };
	sqlite3_stmt *st = prep(db,
				"SELECT s.id, s.track_id, s.ts, s.dur, n.str, c.str FROM slices s "
				"JOIN strings n ON n.id = s.name_id JOIN strings c ON c.id = s.category_id "
				"WHERE s.name_id IN (SELECT id FROM strings WHERE instr(lower(str), lower(?1)) > 0) "
				"ORDER BY s.ts, s.id LIMIT ?2",
				err);
	int rc;

	if (st == NULL)
		return err->code;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)limit + 1);
	rc = put_rows(st, "slices", keys, "......", limit, out);
	sqlite3_finalize(st);
	return rc;
}

int qry_stats(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	static const char *const keys[] = { "name", "category", "count", "total_dur", "max_dur" };

	return window_list(db,
			   "SELECT n.str, c.str, x.cnt, x.total, x.longest FROM (SELECT name_id, category_id, "
			   "count(*) AS cnt, sum(max(dur, 0)) AS total, max(dur) AS longest FROM slices "
			   "WHERE ts <= ?2 AND (dur < 0 OR ts + dur >= ?1) GROUP BY name_id, category_id) x "
			   "JOIN strings n ON n.id = x.name_id JOIN strings c ON c.id = x.category_id "
			   "ORDER BY x.total DESC, n.str LIMIT ?3",
			   w, "names", keys, ".....", out, err);
}

/* ---- read-only SQL ----------------------------------------------------- */

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
	int expired;
};

static int sql_progress(void *ctx)
{
	struct sql_clock *c = ctx;
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	if ((t.tv_sec - c->t0.tv_sec) * 1000 + (t.tv_nsec - c->t0.tv_nsec) / 1000000 > QRY_SQL_MAX_MS)
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
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (rows++ >= QRY_SQL_MAX_ROWS) {
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
			return fail(err, QRY_ELIMIT, "the query ran longer than the limit of %s and was stopped",
				    "5 seconds");
		return fail(err, QRY_EINVAL, "the query failed: %s", sqlite3_errmsg(db));
	}
	return QRY_OK;
}

int qry_sql(sqlite3 *db, const char *sql, size_t len, struct jbuf *out, struct qry_error *err)
{
	struct sql_clock clk = { 0 };
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	int rc;

	int old_len = sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 64 << 20); /* no value a statement makes may pass 64 MiB */

	clock_gettime(CLOCK_MONOTONIC, &clk.t0);
	sqlite3_set_authorizer(db, sql_authorizer, NULL);
	sqlite3_progress_handler(db, 10000, sql_progress, &clk);
	if (sqlite3_prepare_v2(db, sql, (int)len, &st, &tail) != SQLITE_OK) {
		rc = fail(err, QRY_EINVAL, "the statement cannot run: %s", sqlite3_errmsg(db));
	} else if (st == NULL) {
		rc = fail(err, QRY_EINVAL, "the body holds no SQL statement");
	} else if (tail && tail + strspn(tail, " \t\r\n;") < sql + len) {
		rc = fail(err, QRY_EINVAL, "send one statement at a time");
	} else if (!sqlite3_stmt_readonly(st)) {
		rc = fail(err, QRY_EINVAL, "only statements that read are allowed");
	} else {
		rc = sql_rows(db, st, &clk, out, err);
	}
	sqlite3_finalize(st);
	sqlite3_progress_handler(db, 0, NULL, NULL);
	sqlite3_set_authorizer(db, NULL, NULL);
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, old_len);
	return rc;
}
