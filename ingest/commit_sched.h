/*
 * A growing trace's scheduling (commit.h): the cpu runs of the context
 * switches decoded so far, written at each commit, so that a trace shows
 * its cpus (tracks, /sched, thread states) while it grows rather than at a
 * pause or the end.
 *
 * The decoder keeps each switch for the commits too (model.sched_keep).
 * A commit takes those up to the time of the last event matched (as far as
 * its logs go), in (ts, seq) order, and runs them through each cpu's run
 * (write.h, cpu_run_switch): a run's row gets its id as it starts, from
 * chunks reserved per cpu (extents.h), is written still open (dur -1,
 * end_state NULL) and replaced once it ends. Each cpu with a run is a cpu
 * track, written after the trace's other tracks in cpu order, with its
 * extents and time marks, as a file's ingest lays out the prefix; a track
 * made later takes the ids after it, so the cpu tracks' ids move up and
 * their extents are written again at each commit. They have no level of
 * detail until the end: /sched reads and folds their runs themselves.
 *
 * What a commit leaves to the end (or a pause's layer), which removes these
 * rows (build.grown_cpu_first, grown_cpu_n) and writes the table whole as
 * a file's ingest does (write.c, write_sched): a switch that arrives
 * behind one already taken on its cpu (out of time order), which is left
 * out meanwhile and counted; a thread's pid revised by a later kernel
 * object; the runs' ids in a file's layout; their level of detail.
 */
#ifndef INGEST_COMMIT_SCHED_H
#define INGEST_COMMIT_SCHED_H

#include <stdint.h>

#include "build.h"
#include "extents.h"
#include "write.h"

/* One cpu as the commits know it. */
struct cms_cpu {
	struct cpu_run run;  /* the run on it now (run.open), its id reserved */
	int64_t last_ts;     /* the last switch taken; INT64_MIN: none yet */
	struct id_group ids; /* its runs' ids, by ordinal */
	struct vec marks;    /* int64_t: the ts of ordinals 0, 1024, 2048 ... */
	int64_t last_run_ts; /* the ts of its last run (ordinal ids.count - 1) */
};

struct cm_sched {
	struct vec pending;	 /* struct mdl_sched decoded, not taken yet, in (ts, seq) order */
	struct vec cpus;	 /* struct cms_cpu, by cpu number */
	struct vec rows;	 /* struct cms_row: this commit's */
	struct vec tracks;	 /* struct btrack: the cpu tracks of this commit */
	struct id_chunks chunks; /* the runs' ids */
	uint64_t late;		 /* switches left to the end: behind their cpu's */
};

void cms_init(struct cm_sched *cs, uint64_t extent_rows);
void cms_fini(struct cm_sched *cs);

/* At a commit's start: removes the extents of the cpu tracks the commit
 * before wrote (tracks made since take their ids). 0, or -1. */
int cms_clear(struct cm_sched *cs, struct build *b);

/* Takes the switches decoded up to time upto and writes the runs that
 * started or ended since the last commit, the cpu tracks' extents and
 * their marks (appended to b->track_marks, which write_small_tables
 * reads). 0, or -1 when out of memory or the writer failed. */
int cms_write(struct cm_sched *cs, struct build *b, int64_t upto);

/* Appends the cpu tracks to b->tracks for write_small_tables, and takes
 * them off after (cms_tracks_pop). 0, or -1 when out of memory. */
int cms_tracks_push(struct cm_sched *cs, struct build *b);
void cms_tracks_pop(struct cm_sched *cs, struct build *b);

#endif
