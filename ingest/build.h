/*
 * The build stage: from the decoded model to the rows of schema/trace.sql.
 *
 * resolve.c gives threads their pids from kernel objects and makes tracks;
 * match.c takes events in (ns, file position) order from the sorter
 * (sorter.h, which bounds their memory; or thread after thread, model.h
 * by_thread, and then each thread's slices are written as soon as it is
 * matched) and walks them once to match
 * durations, async operations, flows and counter series (docs/API.md,
 * Meaning 3-8), handing each finished slice to the slice store
 * (slicestore.h, packed, spilled past the same budget) and each arg set to
 * the arguments' writer (args.h); its own state stays in match.c. This
 * header holds what the stages hand each other. write.c writes
 * every table in cluster order (dbwriter.h, with the level of detail of lod.h),
 * slicewrite.c the slices from the store's groups (write.h), stacks.c the
 * stack statistics as slices go by,
 * and names.c the name index and statistics from its notes; build.c runs
 * them. Only ingest.c and these
 * files include this header.
 *
 * Memory: the sorter and the slice store keep to a budget and spill to one
 * scratch file (spill.h), and so do counter points and flows, put in their
 * tables' order in runs (runsort.h, a buffer each of sorter_run_bytes());
 * the events' arguments live in a mapped scratch file of their own
 * (sorter.c, map_scratch). What stays whole is per trace object rather
 * than per event: threads, tracks, strings, the flows open at once, and (in
 * match.c) async operations from the oldest still open on.
 */
#ifndef INGEST_BUILD_H
#define INGEST_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "lod.h"
#include "model.h"
#include "runsort.h"
#include "slicestore.h"
#include "dbwriter.h"

enum track_kind { TK_THREAD, TK_ASYNC, TK_COUNTER, TK_CPU };

struct btrack {
	uint8_t kind;         /* enum track_kind */
	uint8_t has_values;   /* min and max are set */
	uint64_t pid;
	uint32_t thread;      /* thread row id - 1 (TK_THREAD) */
	uint32_t name, cat, series;
	uint64_t counter_id;
	uint32_t cpu;
	uint32_t max_depth;
	uint64_t lod_levels;  /* levels of detail stored for a counter track (lod.h) */
	double min, max;
	size_t marks_off, marks_len; /* a counter or cpu track's time marks in
				* build.track_marks (len 0: none) */
};

/* A flow arrow, 64 bytes in the runs of build.flows and flows_by_id. */
struct bflow {
	uint64_t flow_id;
	uint64_t n;       /* arrows made before it: its id - 1, the table's order */
	uint32_t cat, name;
	uint32_t from_track, from_depth; /* the from-slice's group's: with
			   * from.ord, where the slices' table has it */
	struct ss_ref from, to;
	int64_t from_ts;  /* where the from-slice ends: known when it is written */
	int64_t to_ts;    /* where the to-slice begins */
};

/* A counter point, 32 bytes in the runs of build.points. */
struct bpoint {
	int64_t ts;
	union {
		int64_t i;
		double d;
	} v;
	uint64_t order;   /* its id when ids are reserved as points come
			   * (extent_rows), else its number among all points
			   * from 1: either way, within a track, the order the
			   * points came in, time then file order */
	uint32_t track;
	uint8_t is_int;
	uint8_t is_u64;   /* v.i holds the bits of a uint64 above INT64_MAX,
			   * stored as its decimal text (tracedb.h) */
};

/* A point's value as a double (track bounds, level of detail). */
static inline double bpoint_value(const struct bpoint *p)
{
	return p->is_int ? (double)p->v.i : p->is_u64 ? (double)(uint64_t)p->v.i : p->v.d;
}

struct thread_row {
	uint64_t pid, tid;
	uint32_t track; /* thread track index + 1, 0 = none yet */
};

struct sorter;
struct matcher;
struct stacks;
struct slice_out;
struct commit;
struct ingest_opts_view;

struct build {
	struct model *m;
	struct sorter *so;     /* hands the model's events on in order (sorter.h) */
	struct dbwriter *s;
	struct ingest_result *res;
	uint32_t *row_of;      /* model thread -> thread row */
	struct vec rows;       /* struct thread_row */
	struct kmap row_map;   /* (pid, tid) -> thread row */
	struct kmap kobj_map;  /* koid -> last kernel object record */
	struct vec tracks;     /* struct btrack */
	struct kmap track_map; /* (kind | a, b, c, d) -> track */
	struct slicestore ss;  /* every slice once made: thread ones as they
				* close, async ones as their lanes are known */
	struct runsort flows;  /* struct bflow, by from-slice as the slices are
				* written (from_track, from_depth, from.ord,
				* n), spilled in runs (runsort.h) */
	struct runsort flows_by_id; /* the same with from_ts, by n, as the
				* slices' writing passes their from-slices */
	struct runsort points; /* struct bpoint, by (track, order) as they are
				* written, spilled in runs (runsort.h) */
	struct id_chunks point_chunks; /* extent_rows: the counters' ids */
	struct vec point_ids;  /* struct id_group by track, grown on use: each
				* counter track's ids so far (extent_rows) */
	struct arg_writer args;/* the args table, open from matching on: arg sets
				* are written as slices close, overlapping the
				* writer thread's SQLite work with matching */
	int64_t start_ns, end_ns;  /* the events' time range, set by matching
				* (by_thread: known before, from the decoder) */
	uint64_t extent_rows;  /* ids reserved this many rows at a time; 0: one
				* extent per group (extents.h, ingest_opts) */
	struct stacks *stacks; /* stacks.c: the stack statistics, while slices are written */
	struct vec track_marks; /* bytes: the counter and cpu tracks' time marks
				* (tracedb.h), one track's after another */
	struct slice_out *out; /* slicewrite.c: the slices' writing, from their ordering on */
	struct ingest_opts_view *pv; /* progress, for writing during matching */
	struct vec *journal_points; /* NULL, or where counter points go instead
				* of b->points: a growing trace's (commit.h) */
	int committed;         /* a growing trace's: slices, counter points and
				* their groups' facts are written by its commits
				* (commit.h); the write stage writes the rest */
	size_t strings_written; /* strings in the database already (committed) */
	struct commit *commit; /* a growing trace's commits (commit.h), or NULL */
	uint64_t commit_every; /* events matched between two commits */
	size_t commit_rows;    /* slices a commit holds in memory at most (0: COMMIT_ROWS_MAX) */
	size_t stack_nodes;    /* a track's call paths kept at most (0: STACKS_MAX_NODES, stacks.c) */
	int layer;             /* a pause's copy (ingest_stream_pause): its commits
				* write but do not COMMIT, which it does once, after
				* what undoes its changes is kept */
	int64_t matched_ts;    /* the time of the last event matched (its logs go as far) */
	uint32_t grown_cpu_first, grown_cpu_n; /* the cpu tracks (ids) a growing trace's
				* last commit wrote for its runs so far
				* (commit_sched.h), which the write stage
				* removes before it writes them all */
	struct matcher *mt;    /* match.c's state, between build_match_begin
				* and build_match_end */
	size_t kobjs_done;     /* m->kobjs indexed so far (build_kobjs) */
	size_t threads_done;   /* m->threads given rows so far (build_threads) */
	size_t row_cap;        /* row_of's room, in threads */
	int oom;
	int cancel;    /* the progress callback asked to stop; read by the name index's thread */
	int write_failed; /* writing during matching failed (not for memory): the store says why */
};


struct ingest_opts_view {
	ingest_progress_fn fn;
	void *ctx;
	uint64_t total; /* rows to write, for the progress bar */
	uint64_t base;  /* rows written before the current table */
};


/* build.c: matches the events so hands on (so is attached to m, decoding
 * is over) and writes everything; returns INGEST_OK or an error
 * (INGEST_EDB: the reason is in s->error; INGEST_EIO: the sorter's spill
 * file failed, sorter_failed() says why). Of o (which may be NULL) it reads
 * the progress callback and extent_rows. */
int model_build(struct model *m, struct sorter *so, struct dbwriter *s, struct ingest_result *res,
		const struct ingest_opts *o);

/*
 * The same in steps, for an input still arriving (ingest.h, streams):
 * open makes the build (NULL, with *rc the error, on failure) and resolves
 * what is decoded; step resolves the threads and kernel objects decoded
 * since and matches the events the sorter has released (sorter.h); close
 * matches the rest (the sorter released for the last time, or not
 * streaming), settles the threads' rows and writes everything, then frees
 * the build. step and close return INGEST_OK or an error as model_build;
 * *restart is set (with INGEST_OK, nothing written) when a thread's pid
 * that matching drew on was revised by a later record (resolve.c,
 * build_threads_final): the caller starts again from the first byte. free
 * frees a build that is not closed.
 */
struct build *model_build_open(struct model *m, struct sorter *so, struct dbwriter *s, struct ingest_result *res,
			       const struct ingest_opts *o, int *rc);
int model_build_step(struct build *b);
int model_build_close(struct build *b, int *restart);
void model_build_free(struct build *b);

/* resolve.c */
/* The last kernel object record for koid, or NULL. */
const struct mdl_kobj *build_kobj_find(const struct build *b, uint64_t koid);
/* Indexes kernel objects by koid; returns 0, or -1 when out of memory. */
int build_kobjs(struct build *b);
/* Gives every model thread decoded since the last call its row; returns 0,
 * or -1 when out of memory. */
int build_threads(struct build *b);
/* After matching, the rows a batch makes; 0, 1 when matching drew on a
 * row whose pid the end revised (start again), -1 when out of memory. */
int build_threads_final(struct build *b);
/* The track for proto's kind and the keys, made from proto when new; sets
 * b->oom (and returns 0) when out of memory. */
/* Whether a build with options o commits as it matches (commit.h): a
 * growing trace's, or one told to commit every so many events; the
 * decoder then keeps what the commits take (model.sched_keep). */
static inline int build_commits(const struct ingest_opts *o)
{
	return o != NULL && o->extent_rows && (o->commit_every || o->growing);
}

uint32_t build_track(struct build *b, struct btrack *proto, uint64_t k1, uint64_t k2, uint64_t k3);
/* The thread track of a thread row, made when new. */
uint32_t build_thread_track(struct build *b, uint32_t row);

/* match.c */
/* Matches the events, in order from b->so, into slices, flows and counter
 * points, and sets the time range, in steps, its state kept in b->mt
 * between them (a batch: begin, sorter_finish, end): begin (0, or
 * -1 when out of memory); more matches every event the sorter hands on
 * now (sorter.h: streaming, those below the watermark of the last
 * release), and may be called again once more are released; end matches
 * the rest (the sorter finished, or released for the last time), then
 * finishes what never closed, flushes the async operations and notes the
 * time records. more and end return 0, or -1 when out of memory, the
 * sorter failed or writing failed (b->write_failed); end frees the state
 * either way, and abandon frees it after a failure elsewhere. */
int build_match_begin(struct build *b);
int build_match_more(struct build *b);
int build_match_end(struct build *b);
/* What a growing trace's commit does (commit.h, commit_write). */
enum commit_how {
	COMMIT_ROWS = 0,    /* only the final slices' rows (and args) go to the
			     * writer, in the open transaction, not waited for:
			     * memory does not hold them meanwhile, and the next
			     * commit published writes the rest */
	COMMIT_PUBLISH = 1, /* commits, returning once that is in the file
			     * (readers see the commit) */
	COMMIT_QUEUED = 2,  /* commits, and gives the writer's ticket of it in
			     * *queued (dbwriter.h, dbw_reached) without waiting
			     * for the writer to run it (its writer copies what
			     * the rows point at: commit.c, commit_write) */
};

/* A growing trace's commit (commit.h, commit_write: how, *queued) of what
 * matching made so far, with the slices open now; 0, or -1
 * (b->write_failed, or out of memory). */
int build_commit(struct build *b, enum commit_how how, uint64_t *queued);
void build_match_abandon(struct build *b);

/* write.c, slicewrite.c (write.h) */
/* Writes every table; returns 0, or -1 (b->oom: out of memory, else the
 * reason is in the store's error). */
int build_write(struct build *b, struct ingest_opts_view *pv);
/* By_thread (model.h): a thread is matched, and every slice made so far
 * finished. Writes the slices of the groups made since the last call (the
 * thread's tracks, after those of the threads before), reporting progress
 * to b->pv; 0, or -1 as build_write. build_write writes the rest. */
int build_write_thread(struct build *b);
/* Frees the slices' writing left open by a failure. */
void build_write_abandon(struct build *b);

/* names.c: the name index and the name statistics (schema/trace.sql
 * name_index, name_stats), from the slice store's notes once slice ids are
 * known, on a thread of their own beside the slices (the build's thread
 * waits for the writer most of that time); they share only the store's
 * queue with it, and read the slice store, which nothing changes then but
 * the groups' packed bytes they never read. */
struct name_index {
	struct build *b;
	pthread_t th;
	int started;
	int rc;  /* 0, or -1: failed (oom says whether for memory) */
	int oom;
};
/* Starts writing them; without a thread, they are written by name_index_end(). */
void name_index_start(struct name_index *ni, struct build *b);
/* Waits for them (or writes them now); 0, or -1 when it failed. */
int name_index_end(struct name_index *ni);

#endif
