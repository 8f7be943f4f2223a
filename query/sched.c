/*
 * /sched: one cpu's runs in a window, at a zoom (docs/API.md). The runs of
 * a cpu are one group (window.h) and never overlap; zoomed out, a group of
 * runs under a pixel becomes one summary with the thread of its first run.
 */
#include "window.h"

/* Reading one cpu's runs: raw rows, and summaries from its level of detail. */
struct sched_ctx {
	struct qcur raw;      /* runs by id range, those reaching the window */
	struct qcur thread;   /* pid, tid of a thread row */
	struct qcur lod;      /* lod records (QLOD_SQL) */
	struct qcur ext;      /* extents (QEXT_SQL) */
	struct qprobe probe;  /* ts, dur of a run by ordinal in runs */
	struct qextents runs; /* where the cpu's runs lie */
	struct qmarks marks;  /* where the searches by time start */
	const struct qry_window *w;
	int64_t cpu;
	size_t n;             /* items written; at most w->limit */
	int truncated;
};

static const char *const sched_keys[] = { "ts", "dur", "cpu", "pid", "tid", "priority", "end_state" };

/* The runs with ids [lo, hi], which lie in one extent. */
static void sched_raw_ids(struct sched_ctx *c, int64_t lo, int64_t hi, struct jbuf *out)
{
	int i;

	qcur_bind(&c->raw, 1, lo);
	qcur_bind(&c->raw, 2, hi);
	qcur_bind(&c->raw, 3, c->w->start);
	while (qcur_step(&c->raw)) {
		if (c->n >= c->w->limit) {
			c->truncated = 1;
			break;
		}
		jb_obj(out);
		for (i = 0; i < 7; i++) {
			jb_key(out, sched_keys[i]);
			if ((i == 3 || i == 4) && sqlite3_column_type(c->raw.st, i) == SQLITE_INTEGER)
				jb_u64(out, (uint64_t)qcur_int(&c->raw, i));
			else
				qcur_put(&c->raw, out, i);
		}
		jb_obj_end(out);
		c->n++;
	}
	qcur_reset(&c->raw);
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
static void sched_summary(struct sched_ctx *c, const struct qlod_rec *rec, struct jbuf *out)
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
	qcur_bind(&c->thread, 1, (int64_t)(uint32_t)rec->v[LODW_FIRST_NAMES]);
	if (qcur_step(&c->thread)) {
		jb_key(out, "pid");
		jb_u64(out, (uint64_t)qcur_int(&c->thread, 0));
		jb_key(out, "tid");
		jb_u64(out, (uint64_t)qcur_int(&c->thread, 1));
	}
	qcur_reset(&c->thread);
	jb_key(out, "merged");
	jb_i64(out, qlod_last(rec) - qlod_first(rec) + 1);
	jb_obj_end(out);
	c->n++;
}

static void sched_lod(struct sched_ctx *c, int64_t track, int64_t lo, int64_t hi, int level, struct jbuf *out)
{
	int64_t cur = lo;
	struct qlod_iter it;
	struct qlod_rec rec;

	qlod_start(&it, &c->lod, track, 0, level, qprobe_ts(&c->probe, lo, NULL) >> level, c->w->end >> level);
	while (qlod_next(&it, &rec)) {
		int64_t a = qlod_first(&rec) > cur ? qlod_first(&rec) : cur;
		int64_t b = qlod_last(&rec) < hi ? qlod_last(&rec) : hi;

		if (c->truncated || qlod_first(&rec) > hi) {
			qlod_stop(&it);
			break;
		}
		if (qlod_last(&rec) < cur)
			continue;
		sched_raw(c, cur, a - 1, out);
		if (qlod_summarises(&rec, cur, hi, c->w->resolution))
			sched_summary(c, &rec, out);
		else
			sched_raw(c, a, b, out);
		cur = b + 1;
	}
	sched_raw(c, cur, hi, out);
}

static int sched_open(struct sched_ctx *c, sqlite3 *db, struct qry_error *err)
{
	if (qcur_open(&c->raw, db,
		      "SELECT ts, dur, cpu, pid, tid, priority, end_state FROM sched WHERE id BETWEEN ? AND ? "
		      "AND (dur < 0 OR ts + dur >= ?)",
		      err) != QRY_OK ||
	    qcur_open(&c->thread, db, "SELECT pid, tid FROM threads WHERE id = ?", err) != QRY_OK ||
	    qcur_open(&c->lod, db, QLOD_SQL, err) != QRY_OK || qcur_open(&c->ext, db, QEXT_SQL, err) != QRY_OK ||
	    qprobe_open(&c->probe, db, "sched", err) != QRY_OK)
		return err->code;
	c->probe.ext = &c->runs;
	return QRY_OK;
}

/* Returns first, or the first error of c's cursors. */
static int sched_close(struct sched_ctx *c, int first)
{
	first = qcur_close(&c->raw, first);
	first = qcur_close(&c->thread, first);
	first = qcur_close(&c->lod, first);
	first = qcur_close(&c->ext, first);
	first = qprobe_close(&c->probe, first);
	qext_free(&c->runs);
	qmarks_free(&c->marks);
	return first;
}

int qry_sched(sqlite3 *db, int64_t cpu, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct sched_ctx c = { 0 };
	struct qcur t = { 0 };
	int64_t lo = 1, hi = 0, track = 0;
	int rc = QRY_OK, level = -1;

	c.w = w;
	c.cpu = cpu;
	if (qcur_open(&t, db, "SELECT id, lod_levels, marks FROM tracks WHERE kind = 'cpu' AND cpu = ?", err) != QRY_OK ||
	    sched_open(&c, db, err) != QRY_OK) {
		rc = err->code;
		goto out_close;
	}
	qcur_bind(&t, 1, cpu);
	if (qcur_step(&t)) {
		track = qcur_int(&t, 0);
		level = qlod_level(w->resolution, (uint64_t)qcur_int(&t, 1));
		if (qext_read(&c.runs, &c.ext, track, 0) != 0 || qwin_marks(&c.marks, &t, 2, c.runs.rows) != 0) {
			rc = qry_fail(err, QRY_ENOMEM, "out of memory");
			goto out_close;
		}
		qwin_rows(&c.probe, &c.marks, 0, c.runs.rows - 1, w->start, w->end, 1, 0, &lo, &hi);
	}
	jb_obj(out);
	jb_key(out, "slices");
	jb_arr(out);
	if (!qlod_exact(w, hi - lo + 1) && level >= 0 && hi - lo >= 2)
		sched_lod(&c, track, lo, hi, level, out);
	else
		sched_raw(&c, lo, hi, out);
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, c.truncated);
	jb_obj_end(out);
out_close:
	return qcur_done(rc, sched_close(&c, qcur_close(&t, 0)), err);
}
