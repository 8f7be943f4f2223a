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

#include "query_internal.h"

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

static void run_read(sqlite3_stmt *st, struct run *r)
{
	const unsigned char *s = sqlite3_column_text(st, 3);

	r->ts = sqlite3_column_int64(st, 0);
	r->dur = sqlite3_column_int64(st, 1);
	r->cpu = sqlite3_column_int64(st, 2);
	snprintf(r->state, sizeof(r->state), "%s", s ? (const char *)s : "");
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

/* The first row of st (bound by the caller) into r: 1, 0 when none, -1 on
 * a database error. */
static int one_run(sqlite3_stmt *st, struct run *r)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		run_read(st, r);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

static sqlite3_stmt *prep_run(sqlite3 *db, const char *sql, int64_t pid, int64_t tid, int64_t a, int64_t b)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, tid);
	sqlite3_bind_int64(st, 3, a);
	if (sqlite3_bind_parameter_count(st) >= 4)
		sqlite3_bind_int64(st, 4, b);
	return st;
}

/* Writes the states from the runs: the one before (when have_prev), those
 * of the window (st), then the one after (when have_after). 0 or -1. */
static int put_runs(struct states *o, sqlite3_stmt *st, struct run *prev, int have_prev, const struct run *after,
		    int have_after)
{
	struct run cur;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		run_read(st, &cur);
		if (have_prev)
			put_run(o, prev, &cur);
		*prev = cur;
		have_prev = 1;
	}
	if (rc != SQLITE_DONE)
		return -1;
	if (have_prev)
		put_run(o, prev, have_after ? after : NULL);
	return 0;
}

int qry_thread_states(sqlite3 *db, int64_t pid, int64_t tid, const struct qry_window *w, struct jbuf *out,
		      struct qry_error *err)
{
	sqlite3_stmt *before = prep_run(db, RUN_COLS "AND ts < ?3 ORDER BY ts DESC LIMIT 1", pid, tid,
					w->start, 0);
	sqlite3_stmt *in = prep_run(db, RUN_COLS "AND ts >= ?3 AND ts <= ?4 ORDER BY ts", pid, tid, w->start, w->end);
	sqlite3_stmt *next = prep_run(db, RUN_COLS "AND ts > ?3 ORDER BY ts LIMIT 1", pid, tid, w->end, 0);
	struct states o = { out, w, 0, 0 };
	struct run prev = { 0 }, after = { 0 };
	int has_prev, has_after, rc = QRY_OK;

	if (before == NULL || in == NULL || next == NULL) {
		rc = qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
		goto out_finalize;
	}
	has_prev = one_run(before, &prev);
	has_after = one_run(next, &after);
	if (has_prev < 0 || has_after < 0) {
		rc = qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
		goto out_finalize;
	}
	jb_obj(out);
	jb_key(out, "states");
	jb_arr(out);
	if (put_runs(&o, in, &prev, has_prev, &after, has_after) != 0) {
		rc = qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
		goto out_finalize;
	}
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, o.truncated);
	jb_obj_end(out);
out_finalize:
	sqlite3_finalize(before);
	sqlite3_finalize(in);
	sqlite3_finalize(next);
	return rc;
}
