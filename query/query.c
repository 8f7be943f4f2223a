/*
 * The read side of the API: each endpoint's SQL and JSON.
 *
 * Bulk tables are stored by group (schema/trace.sql): the slices of one
 * (track, depth), the points of one counter track and the runs of one cpu
 * are numbered by ordinal in ts order and lie in extents of consecutive
 * ids (table extents); all logs are one id range in ts order. A time
 * window is therefore found by binary search on the ordinal, probing one
 * row at a time, and read as id ranges: no secondary index, and the cost
 * of a viewport query depends on what it returns, not on the trace's size.
 * With a resolution, the level-of-detail tables replace runs of slices or
 * points shorter than a pixel by one summary each.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static sqlite3_stmt *prep(sqlite3 *db, const char *sql, struct qry_error *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
		return NULL;
	}
	return st;
}

/*
 * Every read steps through qstep(): a row is 1, the end 0, and an error is
 * 0 too but remembered for the request (per thread), so that a busy or
 * damaged database answers an error instead of a short list. The public
 * functions clear it when they start (qstep_begin) and turn it into
 * QRY_EDB when they end (qstep_end).
 */
static _Thread_local int qstep_failed;

static int qstep(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc != SQLITE_DONE && qstep_failed == 0)
		qstep_failed = rc;
	return 0;
}

static void qstep_begin(void)
{
	qstep_failed = 0;
}

static int qstep_end(int rc, struct qry_error *err)
{
	if (rc == QRY_OK && qstep_failed)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errstr(qstep_failed));
	return rc;
}

int qry_check_schema(sqlite3 *db, struct qry_error *err)
{
	int v = tracedb_version(db);

	if (v != TRACEDB_SCHEMA_VERSION)
		return qry_fail(err, QRY_EDB, "the trace database has schema version %d; this server reads version %d", v,
			    TRACEDB_SCHEMA_VERSION);
	return QRY_OK;
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

/* ---- binary search by ordinal ------------------------------------------ */

/* Probes ts (and dur, where the table has one) of one row by ordinal in
 * the group ext, or by id when ext is NULL (logs). */
struct probe {
	sqlite3_stmt *st;
	const struct qextents *ext;
};

static int probe_open(struct probe *p, sqlite3 *db, const char *table, struct qry_error *err)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT ts, %s FROM %s WHERE id = ?",
		 strcmp(table, "slices") == 0 || strcmp(table, "sched") == 0 ? "dur" : "0", table);
	p->st = prep(db, sql, err);
	return p->st ? QRY_OK : err->code;
}

static int64_t probe_ts(struct probe *p, int64_t ord, int64_t *dur)
{
	int64_t ts = INT64_MAX;

	sqlite3_bind_int64(p->st, 1, p->ext ? qext_id(p->ext, ord) : ord);
	if (qstep(p->st)) {
		ts = sqlite3_column_int64(p->st, 0);
		if (dur)
			*dur = sqlite3_column_int64(p->st, 1);
	}
	sqlite3_reset(p->st);
	return ts;
}

/* The first row in [lo, hi] whose ts is > t (strict) or >= t; hi + 1 when none. */
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
 * The range [*lo, *hi] of rows in [first, last] that can overlap [s, e]:
 * rows with ts <= e, from the one in effect at s on. With disjoint rows
 * (each ends before the next starts) only the last row starting before s
 * can reach into the window; otherwise any row from s - max_dur on can.
 * Windows are inclusive: a row [ts, ts + dur] overlaps when ts <= e and
 * ts + dur >= s; a row that never ended (dur < 0) reaches every later s.
 */
static void window_rows(struct probe *p, int64_t first, int64_t last, int64_t s, int64_t e, int disjoint,
		       int64_t max_dur, int64_t *lo, int64_t *hi)
{
	int64_t dur = 0, ts;

	*hi = bound(p, first, last, e, 1) - 1;
	if (!disjoint) {
		*lo = bound(p, first, *hi, s > INT64_MIN + max_dur ? s - max_dur : INT64_MIN, 0);
		return;
	}
	/* the first row starting at s or later, and the one before it when
	 * it reaches s (every zero-length row at s is in) */
	*lo = bound(p, first, *hi, s, 0);
	if (*lo > first) {
		ts = probe_ts(p, *lo - 1, &dur);
		if (dur < 0 || ts + dur >= s)
			(*lo)--;
	}
}

/* Reads the extents of (track, depth) (qext_read): 0, or -1 when out of
 * memory; a database error or damaged extents are remembered as qstep's
 * (the group then has no rows). */
static int ext_read(struct qextents *e, sqlite3_stmt *st, int64_t track, int64_t depth)
{
	int rc = qext_read(e, st, track, depth);

	if (rc == SQLITE_NOMEM)
		return -1;
	if (rc != SQLITE_DONE) {
		if (qstep_failed == 0)
			qstep_failed = rc;
		e->n = 0;
		e->rows = 0;
	}
	return 0;
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
		s = qstep(n->st) ? sqlite3_column_text(n->st, 0) : NULL;
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
	while (qstep(st)) {
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

	qstep_begin();
	for (i = 0; i < 5; i++)
		if (st[i] == NULL)
			rc = err->code;
	if (rc == QRY_OK) {
		jb_obj(out);
		jb_key(out, "processes");
		jb_arr(out);
		while (qstep(st[0])) {
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
	return qstep_end(rc, err);
}

/* ---- level of detail ------------------------------------------------- */

/*
 * Exact replies (docs/API.md, "Level of detail"). For a window at
 * resolution r, per track (cpu, counter track):
 *   - below QRY_EXACT_RESOLUTION ns per pixel, or when the window holds at
 *     most QRY_EXACT_MAX rows of the track, the reply is every row;
 *   - otherwise rows under a pixel may be summarised: a summary item
 *     stands for the consecutive rows of one depth it counts ("merged"),
 *     and its ts/dur cover them. A row a pixel long or longer, and one
 *     that never ended, always comes back as itself.
 * Summaries come from the lod table (tracedb/tracedb.h): a group whose
 * rows all lie in the window and are all under a pixel becomes one
 * summary; any other group is read row by row. Each row is visited once
 * (a cursor walks the id range), so none comes back twice.
 */

/* One decoded lod record. */
struct lod_rec {
	uint64_t v[LOD_WORDS];
};

static int64_t rec_first(const struct lod_rec *r)
{
	return (int64_t)r->v[LODW_FIRST];
}

static int64_t rec_last(const struct lod_rec *r)
{
	return (int64_t)r->v[LODW_LAST];
}

/* Walks the records of one (track, depth, level) from bucket lo to hi. */
struct lod_iter {
	sqlite3_stmt *st;
	const uint8_t *p, *end; /* the rest of the current chunk */
	uint64_t v[LOD_WORDS];  /* the record before (tracedb_lod_next) */
	int64_t hi;
	int done;
};

static const char lod_sql[] = "SELECT buckets FROM lod WHERE track_id = ? AND depth = ? AND level = ? "
			      "AND first_bucket <= ?4 AND last_bucket >= ?5 ORDER BY first_bucket";

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

static void lod_iter_stop(struct lod_iter *it)
{
	it->done = 1;
	sqlite3_reset(it->st);
}

/* The next record, 1; 0 at the end or on an error (then qstep remembers
 * it; a chunk that does not decode is a damaged database). */
static int lod_iter_next(struct lod_iter *it, struct lod_rec *r)
{
	while (!it->done && it->p >= it->end) {
		if (!qstep(it->st)) {
			it->done = 1;
			break;
		}
		it->p = sqlite3_column_blob(it->st, 0);
		it->end = it->p + sqlite3_column_bytes(it->st, 0);
		memset(it->v, 0, sizeof(it->v));
	}
	if (it->done)
		goto out_end;
	if (tracedb_lod_next(&it->p, it->end, it->v) != 0) {
		if (qstep_failed == 0)
			qstep_failed = SQLITE_CORRUPT;
		goto out_end;
	}
	memcpy(r->v, it->v, sizeof(it->v));
	if ((int64_t)r->v[LODW_BUCKET] > it->hi)
		goto out_end;
	return 1;
out_end:
	lod_iter_stop(it);
	return 0;
}

/*
 * The level to read at resolution r: the finest stored level at or below
 * the first whose buckets are at least a pixel wide (levels 10, 12, 14 ...);
 * -1 when none is stored there and the raw rows are the best summary.
 */
static int lod_level(int64_t resolution, uint64_t levels)
{
	int level = LOD_MIN_LEVEL;

	while (level < LOD_MAX_LEVEL && (INT64_C(1) << level) < resolution)
		level += LOD_STEP;
	for (; level >= LOD_MIN_LEVEL; level--)
		if (levels & (UINT64_C(1) << level))
			return level;
	return -1;
}

/* Whether the reply for `rows` rows at this resolution is the exact list. */
static int exact_reply(const struct qry_window *w, int64_t rows)
{
	return w->resolution < QRY_EXACT_RESOLUTION || rows <= QRY_EXACT_MAX;
}

/* Whether a group of slices or runs may become one summary: all of it in
 * [cur, hi], every row ended and under a pixel. */
static int rec_summarises(const struct lod_rec *r, int64_t cur, int64_t hi, int64_t resolution)
{
	return rec_first(r) >= cur && rec_last(r) <= hi && r->v[LODW_OPEN] == 0 &&
	       (int64_t)r->v[LODW_LONGEST_DUR] < resolution;
}

/* ---- slices ----------------------------------------------------------- */

/* Whether the track exists: 1, 0, or -1 on a database error. */
static int tracks_has(sqlite3 *db, int64_t track)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM tracks WHERE id = ?", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, track);
		rc = qstep(st);
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

/* One (track, depth): the range of its slices (ordinals) that overlap the
 * window. */
struct depth_run {
	uint32_t depth;
	int disjoint;
	int64_t max_dur;
	int64_t lo, hi;
	uint64_t levels;
	struct qextents ext;
};

struct slice_ctx {
	sqlite3 *db;
	struct probe probe;
	sqlite3_stmt *raw;  /* slices by id range */
	sqlite3_stmt *lod;  /* lod records */
	struct slist items;
	const struct qry_window *w;
	int64_t track;
	struct depth_run *runs;
	size_t nruns;
};

/* The slices with ids [lo, hi], which lie in one extent. */
static void raw_slice_ids(struct slice_ctx *c, int64_t lo, int64_t hi)
{
	struct sitem *it;

	sqlite3_bind_int64(c->raw, 1, lo);
	sqlite3_bind_int64(c->raw, 2, hi);
	while (qstep(c->raw)) {
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

/* The slices [lo, hi] (ordinals) of one depth, as they are. */
static void raw_slices(struct slice_ctx *c, const struct depth_run *d, int64_t lo, int64_t hi)
{
	int64_t a, b;

	while (!c->items.truncated && !c->items.oom && qext_piece(&d->ext, &lo, hi, &a, &b))
		raw_slice_ids(c, a, b);
}

/* A group of slices under a pixel as one summary, named after its longest. */
static void summary_item(struct slice_ctx *c, const struct lod_rec *r, const struct depth_run *d)
{
	struct sitem *it;
	int64_t start = (int64_t)r->v[LODW_START], end = (int64_t)r->v[LODW_END];
	int64_t longest = (int64_t)r->v[LODW_LONGEST];

	if (longest < 0 || longest >= d->ext.rows) {
		if (qstep_failed == 0)
			qstep_failed = SQLITE_CORRUPT; /* a record naming a row that is not there */
		return;
	}
	if ((it = slist_push(&c->items)) == NULL)
		return;
	it->id = qext_id(&d->ext, longest);
	it->ts = start;
	it->dur = end > start ? end - start : 0;
	it->depth = d->depth;
	it->name = (int64_t)(uint32_t)r->v[LODW_NAMES];
	it->cat = (int64_t)(r->v[LODW_NAMES] >> 32);
	it->merged = rec_last(r) - rec_first(r) + 1;
}

/* The slices [lo, hi] of one depth: summaries where a group allows, rows
 * elsewhere. */
static void lod_slices(struct slice_ctx *c, const struct depth_run *d, int level)
{
	int64_t cur = d->lo;
	struct lod_iter it;
	struct lod_rec rec;

	c->probe.ext = &d->ext;
	lod_iter_start(&it, c->lod, c->track, d->depth, level, probe_ts(&c->probe, d->lo, NULL) >> level,
		       c->w->end >> level);
	while (lod_iter_next(&it, &rec)) {
		int64_t a = rec_first(&rec) > cur ? rec_first(&rec) : cur;
		int64_t b = rec_last(&rec) < d->hi ? rec_last(&rec) : d->hi;

		if (c->items.truncated || rec_first(&rec) > d->hi) {
			lod_iter_stop(&it);
			break;
		}
		if (rec_last(&rec) < cur)
			continue;
		raw_slices(c, d, cur, a - 1);
		if (rec_summarises(&rec, cur, d->hi, c->w->resolution))
			summary_item(c, &rec, d);
		else
			raw_slices(c, d, a, b);
		cur = b + 1;
	}
	raw_slices(c, d, cur, d->hi);
}

static int sitem_cmp(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int sitem_depth_cmp(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Folds the short items (slices under a pixel and summaries) that start in
 * the same pixel column of one depth, with no long slice between them, into
 * one summary: the level of detail read may be finer than a pixel, and rows
 * fall between its groups. Slices a pixel long or more, and those that
 * never ended, stay as they are.
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
			agg = NULL;
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

/* The index of string id in the reply's string table, adding it; -1 when
 * out of memory. The table is open addressing over (id + 1), 0 = empty. */
struct strtab {
	int64_t *key;
	uint32_t *idx;
	size_t mask, n;
	int64_t *order; /* ids by index */
};

static int64_t strtab_index(struct strtab *t, int64_t id)
{
	size_t h = ((uint64_t)id * 0x9e3779b97f4a7c15u) >> 20 & t->mask;

	while (t->key[h] != 0 && t->key[h] != id + 1)
		h = (h + 1) & t->mask;
	if (t->key[h] == 0) {
		t->key[h] = id + 1;
		t->idx[h] = (uint32_t)t->n;
		t->order[t->n++] = id;
	}
	return t->idx[h];
}

/*
 * The columnar form: every column an array, names and categories indexes
 * into one "strings" array (each string once). Same items, same order.
 */
static int put_slice_columns(struct slice_ctx *c, struct names *n, struct jbuf *out)
{
	static const char *const cols[] = { "id", "ts", "dur", "depth", "name", "category", "merged" };
	size_t len = c->items.len, cap = 64, i, k;
	struct strtab t = { 0 };
	int64_t *sidx;

	while (cap < 4 * len + 4)
		cap *= 2;
	t.key = calloc(cap, sizeof(*t.key));
	t.idx = calloc(cap, sizeof(*t.idx));
	t.order = calloc(2 * len + 1, sizeof(*t.order));
	sidx = calloc(2 * len + 1, sizeof(*sidx));
	t.mask = cap - 1;
	if (t.key == NULL || t.idx == NULL || t.order == NULL || sidx == NULL)
		goto out_free; /* the caller writes the row form instead */
	for (i = 0; i < len; i++) {
		sidx[2 * i] = strtab_index(&t, c->items.v[i].name);
		sidx[2 * i + 1] = strtab_index(&t, c->items.v[i].cat);
	}
	jb_obj(out);
	jb_key(out, "columns");
	jb_bool(out, 1);
	jb_key(out, "strings");
	jb_arr(out);
	for (i = 0; i < t.n; i++)
		names_put(n, out, t.order[i]);
	jb_arr_end(out);
	for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
		jb_key(out, cols[k]);
		jb_arr(out);
		for (i = 0; i < len; i++) {
			const struct sitem *it = &c->items.v[i];
			int64_t v = k == 0 ? it->id : k == 1 ? it->ts : k == 2 ? it->dur : k == 3 ? (int64_t)it->depth
				  : k == 4 ? sidx[2 * i] : k == 5 ? sidx[2 * i + 1] : (int64_t)it->merged;

			jb_i64(out, v);
		}
		jb_arr_end(out);
	}
	jb_key(out, "truncated");
	jb_bool(out, c->items.truncated);
	jb_obj_end(out);
	cap = 0; /* written */
out_free:
	free(t.key);
	free(t.idx);
	free(t.order);
	free(sidx);
	return cap == 0 ? 0 : -1;
}

static void put_slices(struct slice_ctx *c, struct names *n, int exact, struct jbuf *out)
{
	size_t i;

	if (!exact && c->items.len > 1)
		fold_columns(&c->items, c->w->resolution);
	if (c->items.len > 1) /* v is NULL when there are none */
		qsort(c->items.v, c->items.len, sizeof(struct sitem), sitem_cmp);
	if (c->w->columns && put_slice_columns(c, n, out) == 0)
		return;
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
	size_t i;

	sqlite3_finalize(c->probe.st);
	sqlite3_finalize(c->raw);
	sqlite3_finalize(c->lod);
	free(c->items.v);
	for (i = 0; i < c->nruns; i++)
		qext_free(&c->runs[i].ext);
	free(c->runs);
}

/* Reads the track's depths and the id range of each in the window; sets
 * *rows to the slices found. Returns 0, or -1 when out of memory. */
static int read_depths(struct slice_ctx *c, sqlite3_stmt *d, int64_t *rows)
{
	size_t cap = 0, i;
	struct depth_run *r = NULL;
	int rc;

	*rows = 0;
	sqlite3_bind_int64(d, 1, c->track);
	while (qstep(d)) {
		uint32_t depth = (uint32_t)sqlite3_column_int64(d, 0);

		if (r == NULL || r->depth != depth) {
			if (c->nruns == cap) {
				size_t ncap = cap ? cap * 2 : 32;
				struct depth_run *v = realloc(c->runs, ncap * sizeof(*v));

				if (v == NULL)
					return -1;
				c->runs = v;
				cap = ncap;
			}
			r = &c->runs[c->nruns++];
			memset(r, 0, sizeof(*r));
			r->depth = depth;
			r->max_dur = sqlite3_column_int64(d, 1);
			r->disjoint = sqlite3_column_int(d, 2);
			r->levels = (uint64_t)sqlite3_column_int64(d, 3);
		}
		rc = qext_add(&r->ext, sqlite3_column_int64(d, 4), sqlite3_column_int64(d, 5), sqlite3_column_int64(d, 6));
		if (rc == SQLITE_NOMEM)
			return -1;
		if (rc != SQLITE_DONE && qstep_failed == 0)
			qstep_failed = rc; /* damaged extents */
	}
	for (i = 0; i < c->nruns && !qstep_failed; i++) {
		r = &c->runs[i];
		c->probe.ext = &r->ext;
		window_rows(&c->probe, 0, r->ext.rows - 1, c->w->start, c->w->end, r->disjoint, r->max_dur, &r->lo,
			    &r->hi);
		if (r->hi >= r->lo)
			*rows += r->hi - r->lo + 1;
	}
	return 0;
}

int qry_slices(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct slice_ctx c = { 0 };
	struct names n;
	sqlite3_stmt *d;
	int64_t rows;
	size_t i;
	int rc = QRY_OK, exact;

	qstep_begin();
	c.db = db;
	c.w = w;
	c.track = track;
	c.items.limit = w->limit;
	d = prep(db, "SELECT d.depth, d.max_dur, d.disjoint, d.lod_levels, x.first_ord, x.first_id, x.count "
		     "FROM track_depths d JOIN extents x ON x.track_id = d.track_id AND x.depth = d.depth "
		     "WHERE d.track_id = ? ORDER BY d.depth, x.first_ord",
		 err);
	if (d == NULL || slices_open(&c, db, err) != QRY_OK || names_open(&n, db, err) != QRY_OK) {
		sqlite3_finalize(d);
		slices_close(&c);
		return err->code;
	}
	if (read_depths(&c, d, &rows) != 0)
		c.items.oom = 1;
	sqlite3_finalize(d);
	exact = exact_reply(w, rows);
	for (i = 0; i < c.nruns && !c.items.truncated && !c.items.oom; i++) {
		const struct depth_run *r = &c.runs[i];
		int level = exact || !r->disjoint ? -1 : lod_level(w->resolution, r->levels);

		if (level >= 0 && r->hi - r->lo >= 2)
			lod_slices(&c, r, level);
		else
			raw_slices(&c, r, r->lo, r->hi);
	}
	if (qstep_failed)
		rc = QRY_OK; /* qstep_end reports it */
	else if (c.nruns == 0 && tracks_has(db, track) == 0 && !qstep_failed)
		rc = qry_fail(err, QRY_ENOTFOUND, "there is no track %" PRId64 " in this trace", track);
	else if (c.items.oom)
		rc = qry_fail(err, QRY_ENOMEM, "out of memory");
	if (rc == QRY_OK && !qstep_failed)
		put_slices(&c, &n, exact, out);
	names_close(&n);
	slices_close(&c);
	return qstep_end(rc, err);
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
	while (qstep(st)) {
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
	while (qstep(st)) {
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

	qstep_begin();
	if (st == NULL)
		return err->code;
	sqlite3_bind_int64(st, 1, slice_id);
	if (!qstep(st)) {
		sqlite3_finalize(st);
		if (qstep_failed)
			return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errstr(qstep_failed));
		return qry_fail(err, QRY_ENOTFOUND, "there is no slice with this id in the trace");
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
	return qstep_end(rc, err);
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

/* Emits the raw points [lo, hi] (ordinals in ext); returns how many. */
static size_t raw_points(sqlite3_stmt *raw, const struct qextents *ext, int64_t lo, int64_t hi, size_t room,
			 struct jbuf *out, int *truncated)
{
	size_t n = 0;
	int64_t a, b;

	while (!*truncated && qext_piece(ext, &lo, hi, &a, &b)) {
		sqlite3_bind_int64(raw, 1, a);
		sqlite3_bind_int64(raw, 2, b);
		while (qstep(raw)) {
			if (n >= room) {
				*truncated = 1;
				break;
			}
			put_point(out, raw);
			n++;
		}
		sqlite3_reset(raw);
	}
	return n;
}

/* A value word of a counter record: an int when flag is set, else double bits. */
static void put_word(struct jbuf *out, uint64_t word, int is_int)
{
	double d;

	if (is_int) {
		jb_i64(out, (int64_t)word);
		return;
	}
	memcpy(&d, &word, sizeof(d));
	jb_dbl(out, d);
}

/* A group of points: first point's time and value, last point's time and
 * value, min, max, and how many. */
static void put_bucket(struct jbuf *out, const struct lod_rec *rec)
{
	uint64_t flags = rec->v[LODW_INT_FLAGS];

	jb_obj(out);
	jb_key(out, "ts");
	jb_i64(out, (int64_t)rec->v[LODW_START]);
	jb_key(out, "value");
	put_word(out, rec->v[LODW_LAST_VALUE], flags & 1);
	jb_key(out, "first_value");
	put_word(out, rec->v[LODW_FIRST_VALUE], (flags >> 1) & 1);
	jb_key(out, "last_ts");
	jb_i64(out, (int64_t)rec->v[LODW_LAST_TS]);
	jb_key(out, "min");
	put_word(out, rec->v[LODW_MIN], (flags >> 2) & 1);
	jb_key(out, "max");
	put_word(out, rec->v[LODW_MAX], (flags >> 2) & 1);
	jb_key(out, "merged");
	jb_i64(out, rec_last(rec) - rec_first(rec) + 1);
	jb_obj_end(out);
}

struct counter_ctx {
	sqlite3_stmt *raw, *lod, *track, *ext;
	struct probe probe;
	struct qextents points; /* the track's */
};

static void counters_close(struct counter_ctx *c)
{
	sqlite3_finalize(c->raw);
	sqlite3_finalize(c->lod);
	sqlite3_finalize(c->track);
	sqlite3_finalize(c->ext);
	sqlite3_finalize(c->probe.st);
	qext_free(&c->points);
}

static int counters_open(struct counter_ctx *c, sqlite3 *db, struct qry_error *err)
{
	memset(c, 0, sizeof(*c));
	c->raw = prep(db, "SELECT ts, value FROM counters WHERE id BETWEEN ? AND ?", err);
	c->lod = prep(db, lod_sql, err);
	c->track = prep(db, "SELECT lod_levels FROM tracks WHERE id = ? AND kind = 'counter'", err);
	c->ext = prep(db, QEXT_SQL, err);
	if (c->raw == NULL || c->lod == NULL || c->track == NULL || c->ext == NULL ||
	    probe_open(&c->probe, db, "counters", err))
		return err->code;
	c->probe.ext = &c->points;
	return QRY_OK;
}

/* Points [lo, hi] through the mipmap: a group wholly inside becomes one
 * item, every other point comes as itself. */
static void lod_points(struct counter_ctx *c, int64_t track, const struct qry_window *w, int64_t lo, int64_t hi,
		       int level, struct jbuf *out, int *truncated)
{
	int64_t cur = lo;
	struct lod_iter it;
	struct lod_rec rec;
	size_t n = 0;

	lod_iter_start(&it, c->lod, track, 0, level, probe_ts(&c->probe, lo, NULL) >> level, w->end >> level);
	while (lod_iter_next(&it, &rec)) {
		int64_t a = rec_first(&rec) > cur ? rec_first(&rec) : cur;
		int64_t b = rec_last(&rec) < hi ? rec_last(&rec) : hi;

		if (*truncated || rec_first(&rec) > hi) {
			lod_iter_stop(&it);
			break;
		}
		if (rec_last(&rec) < cur)
			continue;
		n += raw_points(c->raw, &c->points, cur, a - 1, w->limit - n, out, truncated);
		if (n >= w->limit) {
			*truncated = 1;
			continue;
		}
		if (a == rec_first(&rec) && b == rec_last(&rec)) {
			put_bucket(out, &rec);
			n++;
		} else {
			n += raw_points(c->raw, &c->points, a, b, w->limit - n, out, truncated);
		}
		cur = b + 1;
	}
	if (n < w->limit)
		raw_points(c->raw, &c->points, cur, hi, w->limit - n, out, truncated);
	else if (cur <= hi)
		*truncated = 1;
}

int qry_counters(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct counter_ctx c;
	struct qry_window left = *w; /* what remains of the limit */
	int64_t last, lo, hi;
	int truncated = 0, level;

	qstep_begin();
	if (counters_open(&c, db, err) != QRY_OK) {
		counters_close(&c);
		return err->code;
	}
	sqlite3_bind_int64(c.track, 1, track);
	if (!qstep(c.track)) {
		counters_close(&c);
		if (qstep_failed)
			return qstep_end(QRY_OK, err);
		return qry_fail(err, QRY_ENOTFOUND, "there is no counter track with this id in the trace");
	}
	level = lod_level(w->resolution, (uint64_t)sqlite3_column_int64(c.track, 0));
	if (ext_read(&c.points, c.ext, track, 0) != 0) {
		counters_close(&c);
		return qry_fail(err, QRY_ENOMEM, "out of memory");
	}
	last = c.points.rows - 1;
	/* the last point before the window, then every point up to its end */
	lo = bound(&c.probe, 0, last, w->start, 0) - 1;
	lo = lo < 0 ? 0 : lo;
	hi = bound(&c.probe, 0, last, w->end, 1) - 1;
	jb_obj(out);
	jb_key(out, "points");
	jb_arr(out);
	if (lo <= hi && probe_ts(&c.probe, lo, NULL) < w->start) {
		/* the point before the window always comes as itself */
		left.limit -= (uint32_t)raw_points(c.raw, &c.points, lo, lo, w->limit, out, &truncated);
		lo++;
	}
	if (!exact_reply(w, hi - lo + 1) && level >= 0 && hi - lo >= 2)
		lod_points(&c, track, &left, lo, hi, level, out, &truncated);
	else
		raw_points(c.raw, &c.points, lo, hi, left.limit, out, &truncated);
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, truncated);
	jb_obj_end(out);
	counters_close(&c);
	return qstep_end(QRY_OK, err);
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

	qstep_begin();
	if (st == NULL)
		return err->code;
	sqlite3_bind_int64(st, 1, w->start);
	sqlite3_bind_int64(st, 2, w->end);
	sqlite3_bind_int64(st, 3, (int64_t)w->limit + 1);
	rc = put_rows(st, list, keys, ukeys, w->limit, out);
	sqlite3_finalize(st);
	return qstep_end(rc, err);
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
	sqlite3_stmt *ext;    /* extents (QEXT_SQL) */
	struct probe probe;
	struct qextents runs; /* where the cpu's runs lie */
	const struct qry_window *w;
	int64_t cpu;
	size_t n;             /* items written */
	int truncated;
};

static const char *const sched_keys[] = { "ts", "dur", "cpu", "pid", "tid", "priority", "end_state" };

/* The runs with ids [lo, hi], which lie in one extent. */
static void sched_raw_ids(struct sched_ctx *c, int64_t lo, int64_t hi, struct jbuf *out)
{
	int i;

	sqlite3_bind_int64(c->raw, 1, lo);
	sqlite3_bind_int64(c->raw, 2, hi);
	sqlite3_bind_int64(c->raw, 3, c->w->start);
	while (qstep(c->raw)) {
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

/* The runs [lo, hi] (ordinals) of the cpu, as they are. */
static void sched_raw(struct sched_ctx *c, int64_t lo, int64_t hi, struct jbuf *out)
{
	int64_t a, b;

	while (!c->truncated && qext_piece(&c->runs, &lo, hi, &a, &b))
		sched_raw_ids(c, a, b, out);
}

/* A group of runs under a pixel as one summary, with the thread of its
 * first run. */
static void sched_summary(struct sched_ctx *c, const struct lod_rec *rec, struct jbuf *out)
{
	int64_t start = (int64_t)rec->v[LODW_START], end = (int64_t)rec->v[LODW_END];

	if (c->n >= c->w->limit) {
		c->truncated = 1;
		return;
	}
	jb_obj(out);
	jb_key(out, "ts");
	jb_i64(out, start);
	jb_key(out, "dur");
	jb_i64(out, end > start ? end - start : 0);
	jb_key(out, "cpu");
	jb_i64(out, c->cpu);
	sqlite3_bind_int64(c->thread, 1, (int64_t)(uint32_t)rec->v[LODW_FIRST_NAMES]);
	if (qstep(c->thread)) {
		jb_key(out, "pid");
		jb_u64(out, (uint64_t)sqlite3_column_int64(c->thread, 0));
		jb_key(out, "tid");
		jb_u64(out, (uint64_t)sqlite3_column_int64(c->thread, 1));
	}
	sqlite3_reset(c->thread);
	jb_key(out, "merged");
	jb_i64(out, rec_last(rec) - rec_first(rec) + 1);
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
		int64_t a = rec_first(&rec) > cur ? rec_first(&rec) : cur;
		int64_t b = rec_last(&rec) < hi ? rec_last(&rec) : hi;

		if (c->truncated || rec_first(&rec) > hi) {
			lod_iter_stop(&it);
			break;
		}
		if (rec_last(&rec) < cur)
			continue;
		sched_raw(c, cur, a - 1, out);
		if (rec_summarises(&rec, cur, hi, c->w->resolution))
			sched_summary(c, &rec, out);
		else
			sched_raw(c, a, b, out);
		cur = b + 1;
	}
	sched_raw(c, cur, hi, out);
}

int qry_sched(sqlite3 *db, int64_t cpu, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	sqlite3_stmt *t = prep(db, "SELECT id, lod_levels FROM tracks WHERE kind = 'cpu' AND cpu = ?", err);
	struct sched_ctx c = { 0 };
	int64_t lo = 1, hi = 0, track = 0;
	int rc = QRY_OK, level = -1;

	qstep_begin();
	c.w = w;
	c.cpu = cpu;
	c.raw = prep(db,
		     "SELECT ts, dur, cpu, pid, tid, priority, end_state FROM sched WHERE id BETWEEN ? AND ? "
		     "AND (dur < 0 OR ts + dur >= ?)",
		     err);
	c.thread = prep(db, "SELECT pid, tid FROM threads WHERE id = ?", err);
	c.lod = prep(db, lod_sql, err);
	c.ext = prep(db, QEXT_SQL, err);
	c.probe.ext = &c.runs;
	if (t == NULL || c.raw == NULL || c.thread == NULL || c.lod == NULL || c.ext == NULL ||
	    probe_open(&c.probe, db, "sched", err) != QRY_OK) {
		rc = err->code;
		goto out_finalize;
	}
	sqlite3_bind_int64(t, 1, cpu);
	if (qstep(t)) {
		track = sqlite3_column_int64(t, 0);
		level = lod_level(w->resolution, (uint64_t)sqlite3_column_int64(t, 1));
		if (ext_read(&c.runs, c.ext, track, 0) != 0) {
			rc = qry_fail(err, QRY_ENOMEM, "out of memory");
			goto out_finalize;
		}
		window_rows(&c.probe, 0, c.runs.rows - 1, w->start, w->end, 1, 0, &lo, &hi);
	}
	jb_obj(out);
	jb_key(out, "slices");
	jb_arr(out);
	if (!exact_reply(w, hi - lo + 1) && level >= 0 && hi - lo >= 2)
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
	sqlite3_finalize(c.ext);
	sqlite3_finalize(c.probe.st);
	qext_free(&c.runs);
	return qstep_end(rc, err);
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

	qstep_begin();
	if (n == NULL || st == NULL || probe_open(&p, db, "logs", err) != QRY_OK) {
		rc = err->code;
		goto out_finalize;
	}
	if (qstep(n))
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
	return qstep_end(rc, err);
}

/* ---- search and stats ------------------------------------------------- */

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
			return qry_fail(err, QRY_ELIMIT, "the query ran longer than the limit of %s and was stopped",
				    "5 seconds");
		return qry_fail(err, QRY_EINVAL, "the query failed: %s", sqlite3_errmsg(db));
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
		rc = qry_fail(err, QRY_EINVAL, "the statement cannot run: %s", sqlite3_errmsg(db));
	} else if (st == NULL) {
		rc = qry_fail(err, QRY_EINVAL, "the body holds no SQL statement");
	} else if (tail && tail + strspn(tail, " \t\r\n;") < sql + len) {
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
