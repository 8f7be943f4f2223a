/*
 * Thread states: what one thread was doing over time, from the scheduling
 * records (table sched), as Perfetto draws under each thread.
 *
 * A run on a CPU is "running" (with its cpu). Between one run and the next
 * the thread is in the state its run ended in: the run's end_state, where
 * "running" (switched out while still able to run: preempted) reads as
 * "runnable"; a run without one leaves "unknown". After its last run the
 * thread stays in that state to the end of the trace (dur -1), and a run
 * still going at the end is "running" with dur -1. Before its first run
 * nothing is known, so nothing is said.
 *
 * The states overlapping a window come from the run before the window, the
 * runs starting in it and the first run after it (which ends the last
 * gap). sched has no index by thread, so each of the three reads scans the
 * table: fine at thousands of runs, a second at tens of millions.
 */
#include <stdio.h>
#include <string.h>

#include "cursor.h"

/* A run of the thread, as read. */
struct run {
	int64_t ts, dur, cpu;
	char state[32]; /* end_state, "" when NULL */
};

/* Where the states are written. */
struct states {
	struct jbuf *out;
	const struct qry_window *w;
	uint32_t n;    /* states written */
	int truncated; /* more than w->limit */
};

#define RUN_COLS "SELECT ts, dur, cpu, end_state FROM sched WHERE pid = ?1 AND tid = ?2 "

static void run_read(struct qcur *c, struct run *r)
{
	r->ts = qcur_int(c, 0);
	r->dur = qcur_int(c, 1);
	r->cpu = qcur_int(c, 2);
	snprintf(r->state, sizeof(r->state), "%s", qcur_text(c, 3));
}

/* One state, when it overlaps the window (inclusive) and the limit allows. */
static void put_state(struct states *o, int64_t ts, int64_t dur, const char *state, int64_t cpu)
{
	struct jbuf *b = o->out;

	if (ts > o->w->end || (dur >= 0 && ts + dur < o->w->start))
		return;
	if (o->n >= o->w->limit) {
		o->truncated = 1;
		return;
	}
	o->n++;
	jb_obj(b);
	jb_key(b, "ts");
	jb_i64(b, ts);
	jb_key(b, "dur");
	jb_i64(b, dur);
	jb_key(b, "state");
	jb_str(b, state);
	jb_key(b, "cpu");
	if (cpu >= 0)
		jb_i64(b, cpu);
	else
		jb_null(b);
	jb_obj_end(b);
}

/* The run's own state and the gap after it, up to next (NULL: the end). */
static void put_run(struct states *o, const struct run *r, const struct run *next)
{
	const char *gap = strcmp(r->state, "running") == 0 ? "runnable" : r->state[0] ? r->state : "unknown";

	put_state(o, r->ts, r->dur, "running", r->cpu);
	if (r->dur < 0)
		return;
	if (next == NULL)
		put_state(o, r->ts + r->dur, -1, gap, -1);
	else if (next->ts > r->ts + r->dur)
		put_state(o, r->ts + r->dur, next->ts - (r->ts + r->dur), gap, -1);
}

/* The first row of c (bound by the caller) into r: 1, or 0 when there is
 * none or the read failed (c keeps the error). */
static int one_run(struct qcur *c, struct run *r)
{
	int yes = qcur_step(c);

	if (yes)
		run_read(c, r);
	return yes;
}

/* Opens c on sql, a RUN_COLS statement, its parameters bound to v (one
 * value each: pid, tid, then the times). QRY_OK, or QRY_EDB. */
static int run_open(struct qcur *c, sqlite3 *db, const char *sql, const int64_t *v, struct qry_error *err)
{
	int i;

	if (qcur_open(c, db, sql, err) != QRY_OK)
		return err->code;
	for (i = 0; i < sqlite3_bind_parameter_count(c->st); i++)
		qcur_bind(c, i + 1, v[i]);
	return QRY_OK;
}

/* Writes the states from the runs: the one before (when have_prev), those
 * of the window (c), then the one after (when have_after). A read error is
 * left in c. */
static void put_runs(struct states *o, struct qcur *c, struct run *prev, int have_prev, const struct run *after,
		     int have_after)
{
	struct run cur;

	while (qcur_step(c)) {
		run_read(c, &cur);
		if (have_prev)
			put_run(o, prev, &cur);
		*prev = cur;
		have_prev = 1;
	}
	if (have_prev && c->err == 0)
		put_run(o, prev, have_after ? after : NULL);
}

int qry_thread_states(sqlite3 *db, int64_t pid, int64_t tid, const struct qry_window *w, struct jbuf *out,
		      struct qry_error *err)
{
	const int64_t before_v[] = { pid, tid, w->start }, in_v[] = { pid, tid, w->start, w->end },
		      next_v[] = { pid, tid, w->end };
	struct qcur before = { NULL, 0 }, in = { NULL, 0 }, next = { NULL, 0 };
	struct states o = { out, w, 0, 0 };
	struct run prev = { 0 }, after = { 0 };
	int has_prev, has_after, rc;

	if ((rc = run_open(&before, db, RUN_COLS "AND ts < ?3 ORDER BY ts DESC LIMIT 1", before_v, err)) != QRY_OK ||
	    (rc = run_open(&in, db, RUN_COLS "AND ts >= ?3 AND ts <= ?4 ORDER BY ts", in_v, err)) != QRY_OK ||
	    (rc = run_open(&next, db, RUN_COLS "AND ts > ?3 ORDER BY ts LIMIT 1", next_v, err)) != QRY_OK)
		goto out_close;
	has_prev = one_run(&before, &prev);
	has_after = one_run(&next, &after);
	if (before.err || next.err)
		goto out_close;
	jb_obj(out);
	jb_key(out, "states");
	jb_arr(out);
	put_runs(&o, &in, &prev, has_prev, &after, has_after);
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, o.truncated);
	jb_obj_end(out);
out_close:
	return qcur_done(rc, qcur_close(&next, qcur_close(&in, qcur_close(&before, 0))), err);
}
