/*
 * /counters: the points of one counter track in a window, at a zoom
 * (docs/API.md). The point in effect at the window's start comes first;
 * zoomed out, a group of points wholly inside the window becomes one
 * bucket (first and last value, min, max, how many) from the track's
 * level-of-detail records (window.h).
 */
#include <string.h>

#include "window.h"

static void put_point(struct jbuf *out, struct qcur *raw)
{
	uint64_t u;

	jb_obj(out);
	jb_key(out, "ts");
	qcur_put(raw, out, 0);
	jb_key(out, "value");
	if (tracedb_counter_u64(raw->st, 1, &u))
		jb_u64(out, u);
	else
		qcur_put(raw, out, 1);
	jb_obj_end(out);
}

/* Emits the raw points [lo, hi] (ordinals in ext); returns how many. */
static size_t raw_points(struct qcur *raw, const struct qextents *ext, int64_t lo, int64_t hi, size_t room,
			 struct jbuf *out, int *truncated)
{
	size_t n = 0;
	int64_t a, b;

	while (!*truncated && qext_piece(ext, &lo, hi, &a, &b)) {
		qcur_bind(raw, 1, a);
		qcur_bind(raw, 2, b);
		while (qcur_step(raw)) {
			if (n >= room) {
				*truncated = 1;
				break;
			}
			put_point(out, raw);
			n++;
		}
		qcur_reset(raw);
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
static void put_bucket(struct jbuf *out, const struct qlod_rec *rec)
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
	jb_i64(out, qlod_last(rec) - qlod_first(rec) + 1);
	jb_obj_end(out);
}

struct counter_ctx {
	struct qcur raw;        /* points by id range */
	struct qcur lod;        /* lod records (QLOD_SQL) */
	struct qcur track;      /* the track's stored lod levels */
	struct qcur ext;        /* extents (QEXT_SQL) */
	struct qprobe probe;    /* ts of a point by ordinal in points */
	struct qextents points; /* the track's */
	struct qmarks marks;    /* where the searches by time start */
};

/* Returns first, or the first error of c's cursors. */
static int counters_close(struct counter_ctx *c, int first)
{
	first = qcur_close(&c->raw, first);
	first = qcur_close(&c->lod, first);
	first = qcur_close(&c->track, first);
	first = qcur_close(&c->ext, first);
	first = qprobe_close(&c->probe, first);
	qext_free(&c->points);
	qmarks_free(&c->marks);
	return first;
}

static int counters_open(struct counter_ctx *c, sqlite3 *db, struct qry_error *err)
{
	memset(c, 0, sizeof(*c));
	if (qcur_open(&c->raw, db, "SELECT ts, value FROM counters WHERE id BETWEEN ? AND ?", err) != QRY_OK ||
	    qcur_open(&c->lod, db, QLOD_SQL, err) != QRY_OK ||
	    qcur_open(&c->track, db, "SELECT lod_levels, marks FROM tracks WHERE id = ? AND kind = 'counter'", err) != QRY_OK ||
	    qcur_open(&c->ext, db, QEXT_SQL, err) != QRY_OK || qprobe_open(&c->probe, db, "counters", err) != QRY_OK)
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
	struct qlod_iter it;
	struct qlod_rec rec;
	size_t n = 0;

	qlod_start(&it, &c->lod, track, 0, level, qprobe_ts(&c->probe, lo, NULL) >> level, w->end >> level);
	while (qlod_next(&it, &rec)) {
		int64_t a = qlod_first(&rec) > cur ? qlod_first(&rec) : cur;
		int64_t b = qlod_last(&rec) < hi ? qlod_last(&rec) : hi;

		if (*truncated || qlod_first(&rec) > hi) {
			qlod_stop(&it);
			break;
		}
		if (qlod_last(&rec) < cur)
			continue;
		n += raw_points(&c->raw, &c->points, cur, a - 1, w->limit - n, out, truncated);
		if (n >= w->limit) {
			*truncated = 1;
			continue;
		}
		if (a == qlod_first(&rec) && b == qlod_last(&rec)) {
			put_bucket(out, &rec);
			n++;
		} else {
			n += raw_points(&c->raw, &c->points, a, b, w->limit - n, out, truncated);
		}
		cur = b + 1;
	}
	if (n < w->limit)
		raw_points(&c->raw, &c->points, cur, hi, w->limit - n, out, truncated);
	else if (cur <= hi)
		*truncated = 1;
}

/* The points of the window, [lo, hi] found, into out's "points". */
static void put_points(struct counter_ctx *c, int64_t track, const struct qry_window *w, int level, struct jbuf *out,
		       int *truncated)
{
	struct qry_window left = *w; /* what remains of the limit */
	int64_t last = c->points.rows - 1, lo, hi;

	/* the last point before the window, then every point up to its end */
	lo = qwin_bound_marked(&c->probe, &c->marks, 0, last, w->start, 0) - 1;
	lo = lo < 0 ? 0 : lo;
	hi = qwin_bound_marked(&c->probe, &c->marks, 0, last, w->end, 1) - 1;
	if (lo <= hi && qprobe_ts(&c->probe, lo, NULL) < w->start) {
		/* the point before the window always comes as itself */
		left.limit -= (uint32_t)raw_points(&c->raw, &c->points, lo, lo, w->limit, out, truncated);
		lo++;
	}
	if (!qlod_exact(w, hi - lo + 1) && level >= 0 && hi - lo >= 2)
		lod_points(c, track, &left, lo, hi, level, out, truncated);
	else
		raw_points(&c->raw, &c->points, lo, hi, left.limit, out, truncated);
}

int qry_counters(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct counter_ctx c;
	int rc = QRY_OK, truncated = 0, level;

	if (counters_open(&c, db, err) != QRY_OK) {
		rc = err->code;
		goto out_close;
	}
	qcur_bind(&c.track, 1, track);
	if (!qcur_step(&c.track)) {
		if (c.track.err == 0)
			rc = qry_fail(err, QRY_ENOTFOUND, "there is no counter track with this id in the trace");
		goto out_close;
	}
	level = qlod_level(w->resolution, (uint64_t)qcur_int(&c.track, 0));
	if (qext_read(&c.points, &c.ext, track, 0) != 0 || qwin_marks(&c.marks, &c.track, 1, c.points.rows) != 0) {
		rc = qry_fail(err, QRY_ENOMEM, "out of memory");
		goto out_close;
	}
	jb_obj(out);
	jb_key(out, "points");
	jb_arr(out);
	put_points(&c, track, w, level, out, &truncated);
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, truncated);
	jb_obj_end(out);
out_close:
	return qcur_done(rc, counters_close(&c, 0), err);
}
