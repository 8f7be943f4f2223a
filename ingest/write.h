/*
 * The write stage's two parts (build.h) and what they share: write.c writes
 * every table but the slices' own, which slicewrite.c writes (slices,
 * track_depths, their extents, stack statistics), all at once after
 * matching or, for a model whose events come thread after thread (model.h,
 * by_thread), on a thread of its own while matching goes on.
 */
#ifndef INGEST_WRITE_H
#define INGEST_WRITE_H

#include "build.h"

/* Appends the time marks (tracedb.h) of the items (ts order) it[0, n) to
 * mb, a vec of bytes, and notes where in *off and *len; -1 when out of
 * memory. */
int write_marks(struct vec *mb, const struct lod_item *it, uint64_t n, size_t *off, size_t *len);
/* The same, of n rows whose ts the caller gives by ordinal: ts_of(ctx, ord)
 * is asked only of the ordinals marks keep. write_marks is this over an
 * array of items; a growing trace's commits keep only those ordinals. */
int write_marks_of(struct vec *mb, uint64_t n, int64_t (*ts_of)(const void *ctx, uint64_t ord), const void *ctx,
		   size_t *off, size_t *len);
/* The same, of n rows whose every 1024th ts is in marks (int64_t) and
 * whose last ts is last: what a growing trace's commits keep of a group. */
int write_marks_kept(struct vec *mb, const struct vec *marks, uint64_t n, int64_t last, size_t *off, size_t *len);

/* Where a slice (or a cpu run) ends for the level of detail and the
 * longest: one that never ended (dur < 0) lasts to the trace's end, or to
 * its own start when that is later (a trace whose end is not known yet). */
static inline int64_t write_item_end(const struct build *b, int64_t ts, int64_t dur)
{
	return dur < 0 ? (b->end_ns > ts ? b->end_ns : ts) : tracedb_slice_end(ts, dur);
}

/* A (track, depth) group's facts in its row of track_depths
 * (schema/trace.sql), taken slice after slice in ordinal order: the
 * longest (an open one up to the trace's end), and whether one starts
 * before the one before it ends (then it is not disjoint). The batch
 * (slicewrite.c) and a growing trace's commits (commit.c) both keep them
 * so. */
struct depth_facts {
	int64_t max_dur;
	int64_t prev_end;  /* where the last one ends; INT64_MAX: never; INT64_MIN: none yet */
	int overlap;
};

static inline void depth_facts_init(struct depth_facts *f)
{
	f->max_dur = 0;
	f->prev_end = INT64_MIN;
	f->overlap = 0;
}

/* Takes the next slice into f; its level-of-detail item (lod.h). */
static inline struct lod_item depth_facts_add(struct depth_facts *f, const struct build *b, int64_t ts, int64_t dur,
					      uint32_t name, uint32_t cat)
{
	int64_t end = write_item_end(b, ts, dur);

	if (end - ts > f->max_dur)
		f->max_dur = end - ts;
	if (ts < f->prev_end)
		f->overlap = 1;
	f->prev_end = dur < 0 ? INT64_MAX : end;
	return (struct lod_item){ .ts = ts, .end = end, .name = name, .cat = cat, .open = dur < 0 };
}
/* Reports rows written; a cancel request sticks in b->cancel, which it
 * returns. */
int write_progress(struct build *b, struct ingest_opts_view *v, uint64_t done);
/* Whether records merged from their runs (runsort.h) failed to come; a
 * failure not of the scratch file (which sorter_failed() reports) is one of
 * memory (b->oom). 0, or -1. */
int write_sorted_failed(struct build *b, const struct runsort *rs);

/* One arrow's row of table flows to fb (bins of 8 columns), its from_ts
 * set: with its id (n + 1) when rows do not go in id order from 1 (a
 * growing trace's, commit_flows.h), else SQLite's next rowid. */
void write_flow_row(struct bins *fb, const struct build *b, const struct bflow *f, int with_id);

/* Writes strings from id `from` on; 0, or -1 as build_write. */
int write_strings_from(struct build *b, size_t from);
/* A growing trace's logs (commit.h): the logs a commit has written (as ids
 * 1, 2 ... in (ts, seq) order), and those decoded that wait. */
struct logs_grown {
	size_t seen;          /* m->logs taken into pending so far */
	struct vec pending;   /* struct mdl_log, in (ts, seq) order */
	uint64_t written;
	struct mdl_log last;  /* the last written */
};
/* Writes the logs decoded so far up to time upto (the events matched go
 * that far: logs decoded later come after it, as events do, but for the
 * late), after those written before; the end's build_write makes them
 * all again, so that a late one is in its place. 0, or -1. */
int write_logs_growing(struct build *b, struct logs_grown *g, int64_t upto);
/* The run of a thread on a cpu (Meaning 8): a context switch on the cpu
 * starts the incoming thread's run (none for the idle thread), and the next
 * switch on it ends that run with the switch's outgoing state. The batch
 * (write_sched) and a growing trace's commits (commit_sched.h) both take
 * switches so, a cpu's in (ts, seq) order. */
struct cpu_run {
	int open;          /* a thread runs (else the cpu is idle, or none came yet) */
	int64_t ts;
	uint32_t row;      /* its thread row */
	int32_t priority;
	uint64_t id;       /* its row's id, for those who reserve it as the run starts (0 else) */
};

/* Takes switch x on run's cpu: returns 1, with the run it ended in *ended
 * and that run's end_state in *state, when a thread's run ended; 0 else. */
int cpu_run_switch(const struct build *b, struct cpu_run *run, const struct mdl_sched *x, struct cpu_run *ended,
		   const char **state);
/* A run's item for its cpu's level of detail (lod.h): the thread row
 * (sched.thread_id) stands in for a name; end < 0: still on the cpu. */
static inline struct lod_item write_run_item(const struct build *b, const struct cpu_run *r, int64_t end)
{
	return (struct lod_item){ .ts = r->ts, .end = end < 0 ? write_item_end(b, r->ts, -1) : end, .open = end < 0,
				  .name = r->row + 1 };
}

/* A run's row of table sched to sb (9 columns): id 0 for SQLite's next
 * rowid; end < 0 for a run still on the cpu (dur -1, end_state NULL). */
void write_sched_row(struct bins *sb, const struct build *b, uint64_t id, uint16_t cpu, const struct cpu_run *r,
		     int64_t end, const char *state);

/* Writes threads, processes, tracks, providers, diagnostics and meta whole
 * (again: each emptied first, as a growing trace's commits write them);
 * 0, or -1 as build_write. */
int write_small_tables(struct build *b, int again);

/* slicewrite.c */
/* Puts the groups made since the last call in order and gives them their
 * ids (ss_order); 0, or -1 when out of memory. */
int slices_order(struct build *b);
/* Writes the slices ordered and not yet written, then the tables that
 * follow from all of them; 0, or -1 as build_write. */
int write_slices(struct build *b, struct ingest_opts_view *pv);
/* Whether the slices are being written already (build_write_thread). */
int slices_begun(const struct build *b);

#endif
