/*
 * The trace's overview: how many slices start in each of N equal buckets
 * of [start, end], per process, for the minimap above the timeline.
 *
 * Counting the slices table row by row costs a scan (half a second at 1M
 * slices, seconds at 10M). The level-of-detail records already hold, per
 * (track, depth), groups of consecutive slices with their start and count;
 * at the coarsest stored level whose buckets are at most an eighth of an
 * overview bucket they number a few per overview bucket and depth. A group
 * whose slices all start in one overview bucket counts there at once; the
 * rows of the others (few: groups are narrow) and those between groups
 * (slices alone in their bucket) are read one by one. The counts are the
 * exact number of slices starting in each bucket.
 *
 * A run with few rows per overview bucket (qry_overview_pass_rows) is
 * read row by row in one pass instead: its groups would be few, the rows
 * between them many, each a read of its own.
 *
 * A window narrower than the trace reads only what lies in it: its first
 * and last slice of each (track, depth) are found by bisection over the
 * rows (they are in time order) where the run passes its ends, and the
 * level-of-detail rows read are those whose buckets meet it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"

int qry_overview_pass_rows = 4;

struct ov_proc {
	int64_t pid;
	uint32_t *counts; /* buckets */
};

/* What counting reads through, and where. A read that fails, or a record
 * that does not decode, is left as its cursor's error and stops the count
 * (ov_failed). */
struct ov_ctx {
	struct qcur runs;    /* every (track, depth) with its process and levels */
	struct qcur raw;     /* ts of slices by id range */
	struct qcur lod;     /* records of one (track, depth, level) */
	struct qcur ext;     /* extents (QEXT_SQL) */
	struct qextents e;   /* where the current (track, depth)'s slices lie */
	int64_t start, end;
	uint32_t buckets;
	uint32_t *counts;    /* the current process's row */
	int narrow;          /* the window was given: bound each run's rows to it */
	int aligned;         /* buckets are 1 << aligned ns starting at a multiple of it; else -1 */
	uint64_t rec[LOD_CHUNK][LOD_WORDS]; /* the lod row being read, unpacked */
};

static int ov_failed(const struct ov_ctx *c)
{
	return c->runs.err || c->raw.err || c->lod.err || c->ext.err;
}

/* The overview bucket of ts; -1 before the window, buckets after it. */
static int64_t ov_bucket(const struct ov_ctx *c, int64_t ts)
{
	if (ts < c->start)
		return -1;
	if (ts > c->end)
		return c->buckets;
	return qry_bucket(c->start, c->end, c->buckets, ts);
}

static void ov_add(struct ov_ctx *c, int64_t ts, uint32_t n)
{
	int64_t b = ov_bucket(c, ts);

	if (b >= 0 && b < (int64_t)c->buckets)
		c->counts[b] += n;
}

/* Counts the rows [lo, hi] (ordinals) one by one. */
static void ov_raw(struct ov_ctx *c, int64_t lo, int64_t hi)
{
	int64_t a, b;

	while (!c->raw.err && qext_piece(&c->e, &lo, hi, &a, &b)) {
		qcur_bind(&c->raw, 1, a);
		qcur_bind(&c->raw, 2, b);
		while (qcur_step(&c->raw))
			ov_add(c, qcur_int(&c->raw, 0), 1);
		qcur_reset(&c->raw);
	}
}

/* The start of the row of ordinal ord; 0, with the error left in c->raw,
 * when it cannot be read. */
static int64_t ov_ts(struct ov_ctx *c, int64_t ord)
{
	int64_t lo = ord, a, b, ts = 0;

	if (!qext_piece(&c->e, &lo, ord, &a, &b)) {
		qcur_fail(&c->raw, SQLITE_CORRUPT);
		return 0;
	}
	qcur_bind(&c->raw, 1, a);
	qcur_bind(&c->raw, 2, a);
	if (qcur_step_required(&c->raw)) /* an extent names it */
		ts = qcur_int(&c->raw, 0);
	qcur_reset(&c->raw);
	return ts;
}

/* The first ordinal of the run whose row starts at or after ts (rows if
 * none): rows are in time order. */
static int64_t ov_lower(struct ov_ctx *c, int64_t ts)
{
	int64_t lo = 0, hi = c->e.rows;

	while (lo < hi && !ov_failed(c)) {
		int64_t mid = lo + (hi - lo) / 2;

		if (ov_ts(c, mid) < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The coarsest stored level whose buckets are at most width ns (so that a
 * group falls in one or two overview buckets), else the finest stored one;
 * -1 when none is stored. */
static int ov_level(uint64_t levels, int64_t width)
{
	int level;

	for (level = LOD_MAX_LEVEL; level >= LOD_MIN_LEVEL; level--)
		if ((levels & (UINT64_C(1) << level)) && (INT64_C(1) << level) <= width)
			return level;
	for (level = LOD_MIN_LEVEL; level <= LOD_MAX_LEVEL; level++)
		if (levels & (UINT64_C(1) << level))
			return level;
	return -1;
}

/* L when the window is buckets of 2^L ns, L >= LOD_MIN_LEVEL, the first
 * starting at a multiple of 2^L: level-of-detail buckets of level L or finer
 * then each lie in one overview bucket. Else -1. */
static int ov_aligned(const struct ov_ctx *c)
{
	uint64_t span = (uint64_t)c->end - (uint64_t)c->start + 1, w;
	int level;

	if (span == 0 || span % c->buckets != 0)
		return -1;
	w = span / c->buckets;
	if ((w & (w - 1)) != 0 || (uint64_t)c->start % w != 0)
		return -1;
	level = __builtin_ctzll(w);
	return level >= LOD_MIN_LEVEL && level <= LOD_MAX_LEVEL ? level : -1;
}

/* The slices of one (track, depth). */
static void ov_run(struct ov_ctx *c, int64_t track, int64_t depth, uint64_t levels)
{
	/* groups at most an eighth of an overview bucket wide: few straddle;
	 * none does when the buckets are aligned to a level at least as fine */
	double width = ((double)c->end - (double)c->start + 1) / c->buckets / 8;
	int level = c->aligned >= 0 ? ov_level(levels, INT64_C(1) << c->aligned)
				    : ov_level(levels, width > (double)(INT64_C(1) << 62) ? INT64_C(1) << 62 : (int64_t)width);
	int64_t cur = 0, last;

	if (qext_read(&c->e, &c->ext, track, depth) != 0)
		qcur_fail(&c->ext, SQLITE_NOMEM);
	if (c->ext.err)
		return;
	last = c->e.rows - 1;
	if (c->narrow) { /* only the rows that start in the window (searched
			  * for only past the run's ends: the minimap's window
			  * holds every run, and a search is a dozen row reads) */
		cur = last >= 0 && ov_ts(c, 0) >= c->start ? 0 : ov_lower(c, c->start);
		if (c->end != INT64_MAX && !(last >= 0 && ov_ts(c, last) <= c->end))
			last = ov_lower(c, c->end + 1) - 1;
		if (cur > last)
			return;
	}
	/* a run of few rows a bucket is read in one pass: its level-of-detail
	 * groups would be few and its lone rows between them many, each read
	 * alone (on 500 threads of sparse runs, 145k reads for 348k rows: the
	 * pass takes a third less time) */
	if (level < 0 || last - cur + 1 <= qry_overview_pass_rows * (int64_t)c->buckets) {
		ov_raw(c, cur, last);
		return;
	}
	qcur_bind(&c->lod, 1, track);
	qcur_bind(&c->lod, 2, depth);
	qcur_bind(&c->lod, 3, level);
	qcur_bind(&c->lod, 4, c->start >> level);
	qcur_bind(&c->lod, 5, c->end >> level);
	while (qcur_step(&c->lod)) {
		int len, n, k;
		const void *blob = qcur_blob(&c->lod, 0, &len);

		if ((n = tracedb_lod_unpack(blob, (size_t)len, level, c->rec)) < 0) {
			qcur_fail(&c->lod, SQLITE_CORRUPT); /* and the walk ends */
			break;
		}
		for (k = 0; k < n; k++) {
			const uint64_t *v = c->rec[k];
			int64_t last_start;

			if ((int64_t)v[LODW_LAST] < cur)
				continue; /* before the window (or counted) */
			if ((int64_t)v[LODW_FIRST] > last)
				break; /* after it */
			ov_raw(c, cur, (int64_t)v[LODW_FIRST] - 1);
			/* every slice of the group starts in lod bucket v[0]: */
			last_start = (int64_t)(((v[LODW_BUCKET] + 1) << level) - 1);
			if ((int64_t)v[LODW_FIRST] >= cur && (int64_t)v[LODW_LAST] <= last &&
			    ov_bucket(c, (int64_t)v[LODW_START]) == ov_bucket(c, last_start))
				ov_add(c, (int64_t)v[LODW_START], (uint32_t)(v[LODW_LAST] - v[LODW_FIRST] + 1));
			else /* it may straddle an edge: count its rows (those in the window) */
				ov_raw(c, (int64_t)v[LODW_FIRST] > cur ? (int64_t)v[LODW_FIRST] : cur,
				       (int64_t)v[LODW_LAST] < last ? (int64_t)v[LODW_LAST] : last);
			cur = (int64_t)v[LODW_LAST] + 1;
		}
	}
	qcur_reset(&c->lod);
	ov_raw(c, cur, last);
}

/* The ends of the window not asked for (qry_window) become the first and
 * last slice starts (each run's first and last row: no scan). QRY_OK, or
 * QRY_EDB. */
static int ov_bounds(sqlite3 *db, struct ov_ctx *c, int def_start, int def_end, struct qry_error *err)
{
	struct qcur q;
	/* a group's first row starts first, its last one last */
	int rc = qcur_open(&q, db,
			   "SELECT min(a.ts), max(b.ts) FROM track_depths d "
			   "JOIN extents x ON x.track_id = d.track_id AND x.depth = d.depth "
			   "JOIN slices a ON a.id = x.first_id JOIN slices b ON b.id = x.first_id + x.count - 1",
			   err);

	if (rc == QRY_OK && qcur_step(&q) && !qcur_is_null(&q, 0)) {
		if (def_start)
			c->start = qcur_int(&q, 0);
		if (def_end)
			c->end = qcur_int(&q, 1);
	}
	if (c->end < c->start)
		c->end = c->start;
	return qcur_done(rc, qcur_close(&q, 0), err);
}

static void ov_put(const struct ov_proc *v, size_t n, uint32_t buckets, struct jbuf *out)
{
	size_t i;
	uint32_t b;

	jb_obj(out);
	jb_key(out, "buckets");
	jb_i64(out, buckets);
	jb_key(out, "processes");
	jb_arr(out);
	for (i = 0; i < n; i++) {
		jb_obj(out);
		jb_key(out, "pid");
		jb_u64(out, (uint64_t)v[i].pid);
		jb_key(out, "counts");
		jb_arr(out);
		for (b = 0; b < buckets; b++)
			jb_i64(out, v[i].counts[b]);
		jb_arr_end(out);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_obj_end(out);
}

static int ov_open(struct ov_ctx *c, sqlite3 *db, struct qry_error *err)
{
	if (qcur_open(&c->raw, db, "SELECT ts FROM slices WHERE id BETWEEN ? AND ?", err) != QRY_OK ||
	    /* the chunks that meet buckets [?4, ?5]: from the last one starting
	     * at or before ?4 on (chunks do not overlap) */
	    qcur_open(&c->lod, db,
		      "SELECT buckets FROM lod WHERE track_id = ?1 AND depth = ?2 AND level = ?3 "
		      "AND first_bucket <= ?5 AND first_bucket >= coalesce((SELECT max(first_bucket) "
		      "FROM lod WHERE track_id = ?1 AND depth = ?2 AND level = ?3 AND first_bucket <= ?4), ?4) "
		      "ORDER BY first_bucket",
		      err) != QRY_OK ||
	    qcur_open(&c->ext, db, QEXT_SQL, err) != QRY_OK ||
	    qcur_open(&c->runs, db,
		      "SELECT coalesce(t.pid, 0), d.track_id, d.depth, d.lod_levels "
		      "FROM track_depths d JOIN tracks t ON t.id = d.track_id "
		      "ORDER BY coalesce(t.pid, 0) < 0, 1, 2, 3", /* pids unsigned */
		      err) != QRY_OK)
		return err->code;
	return QRY_OK;
}

/* Returns first, or the first error of c's cursors. */
static int ov_close(struct ov_ctx *c, int first)
{
	first = qcur_close(&c->runs, first);
	first = qcur_close(&c->raw, first);
	first = qcur_close(&c->lod, first);
	first = qcur_close(&c->ext, first);
	qext_free(&c->e);
	return first;
}

/* Appends process pid, its counts zeroed: 0, or -1 when out of memory. */
static int ov_proc_add(struct ov_proc **v, size_t *n, int64_t pid, uint32_t buckets)
{
	struct ov_proc *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (nv == NULL)
		return -1;
	*v = nv;
	if ((nv[*n].counts = calloc(buckets, sizeof(uint32_t))) == NULL)
		return -1;
	nv[(*n)++].pid = pid;
	return 0;
}

int qry_overview(sqlite3 *db, const struct qry_window *w, uint32_t buckets, struct jbuf *out, struct qry_error *err)
{
	struct ov_ctx c = { 0 };
	struct ov_proc *v = NULL;
	size_t n = 0, i;
	int rc = QRY_OK, def_start, def_end;

	c.start = w->start;
	c.end = w->end;
	c.buckets = buckets;
	def_start = c.start == INT64_MIN && !w->start_given;
	def_end = c.end == INT64_MAX && !w->end_given;
	c.narrow = !def_start || !def_end;
	if ((def_start || def_end) && (rc = ov_bounds(db, &c, def_start, def_end, err)) != QRY_OK)
		return rc;
	rc = ov_open(&c, db, err);
	c.aligned = ov_aligned(&c);
	while (rc == QRY_OK && !ov_failed(&c) && qcur_step(&c.runs)) {
		int64_t pid = qcur_int(&c.runs, 0);

		if ((n == 0 || v[n - 1].pid != pid) && ov_proc_add(&v, &n, pid, buckets) != 0) {
			rc = qry_fail(err, QRY_ENOMEM, "out of memory");
			break;
		}
		c.counts = v[n - 1].counts;
		ov_run(&c, qcur_int(&c.runs, 1), qcur_int(&c.runs, 2), (uint64_t)qcur_int(&c.runs, 3));
	}
	if ((rc = qcur_done(rc, ov_close(&c, 0), err)) == QRY_OK)
		ov_put(v, n, buckets, out);
	for (i = 0; i < n; i++)
		free(v[i].counts);
	free(v);
	return rc;
}
