/*
 * A growing trace's scheduling (commit.h): the cpu runs of the context
 * switches decoded so far, written at each commit, so that a trace shows
 * its cpus (tracks, /sched, thread states) while it grows rather than at a
 * pause or the end.
 *
 * The decoder keeps each switch for the commits too (model.sched_keep).
 * A commit takes those up to the time of the last event matched (as far as
 * its logs go; and the oldest past a million waiting, so that a trace of
 * switches alone shows them too, in bounded memory), in (ts, seq) order,
 * and runs them through each cpu's run
 * (write.h, cpu_run_switch): a run's row gets its id as it starts, from
 * chunks reserved per cpu (extents.h), is written still open (dur -1,
 * end_state NULL) and replaced once it ends. Each cpu with a run is a cpu
 * track, written after the trace's other tracks in cpu order, with its
 * extents, time marks and level of detail (lod.h, built a commit at a time
 * as a slice group's is: commit.c), as a file's ingest lays out the
 * prefix. A track made later takes the ids after the others, and so may a
 * cpu seen later: the cpu tracks' ids move up, their level of detail's
 * rows with them (cms_begin, cms_write), before anything else writes rows
 * under those ids.
 *
 * What a commit leaves to the end (or a pause's layer), which removes these
 * rows (build.grown_cpu_first, grown_cpu_n) and writes the table whole as
 * a file's ingest does (write.c, write_sched): a switch that arrives
 * behind one already taken on its cpu (out of time order), which is left
 * out meanwhile and counted (ingest_result.sched_late); a thread's pid
 * revised by a later kernel object; the runs' ids in a file's layout.
 */
#ifndef INGEST_COMMIT_SCHED_H
#define INGEST_COMMIT_SCHED_H

#include <stdint.h>

#include "build.h"
#include "extents.h"
#include "write.h"

/* One cpu as the commits know it. */
struct cms_cpu {
	struct cpu_run run;   /* the run on it now (run.open), its id reserved */
	int64_t last_ts;      /* the last switch taken; INT64_MIN: none yet */
	struct id_group ids;  /* its runs' ids, by ordinal */
	struct vec marks;     /* int64_t: the ts of ordinals 0, 1024, 2048 ... */
	int64_t last_run_ts;  /* the ts of its last run (ordinal ids.count - 1) */
	int64_t track_id;     /* its track's id at this commit (0: none yet) */
	size_t marks_off, marks_len; /* its marks in build.track_marks */
	struct vec items;     /* struct lod_item: this commit's runs, from ordinal lod_n (or
			       * lod_n - 1, when lod_open) */
	uint64_t lod_n;       /* runs the level of detail holds */
	int lod_open;         /* ... the last of them open */
	struct lod_state lod; /* its level of detail so far (lod.h) */
	int lod_init;
	uint64_t lod_levels;
};

struct cm_sched {
	struct vec pending;   /* struct mdl_sched decoded, not taken yet, in (ts, seq) order */
	struct vec cpus;      /* struct cms_cpu *, by cpu number (NULL: none seen; up to 65535) */
	struct vec rows;      /* struct cms_row: this commit's */
	size_t ntracks;       /* cpus with a run */
	struct id_chunks chunks; /* the runs' ids */
};

/* Cpu i's state, or NULL when none of its switches was taken. */
static inline struct cms_cpu *cms_cpu_of(const struct cm_sched *cs, size_t i)
{
	return *VEC_AT(&cs->cpus, struct cms_cpu *, i);
}

void cms_init(struct cm_sched *cs, uint64_t extent_rows);
void cms_fini(struct cm_sched *cs);

/* At a commit's start, once matching has made the tracks it holds: removes
 * the extents of the cpu tracks the commit before wrote, and moves their
 * level of detail's rows to their ids now. 0, or -1. */
int cms_begin(struct cm_sched *cs, struct build *b);

/* At the end (or a pause's layer), before the write stage writes any
 * track's rows: removes the runs the commits wrote and their cpu tracks'
 * extents and level of detail, which write_sched writes again as a file's
 * ingest does. 0, or -1. */
int cms_drop_grown(struct build *b);

/* Takes the switches decoded up to time upto and writes the runs that
 * started or ended since the last commit, the cpu tracks' extents and
 * their marks (appended to b->track_marks, which write_small_tables
 * reads); leaves each cpu's items for its level of detail, which the
 * caller builds (from ordinal lod_n, or lod_n - 1 when lod_open). 0, or -1
 * when out of memory or the writer failed. */
int cms_write(struct cm_sched *cs, struct build *b, int64_t upto);

/* Appends the cpu tracks to b->tracks for write_small_tables, and takes
 * them off after (cms_tracks_pop). 0, or -1 when out of memory. */
int cms_tracks_push(struct cm_sched *cs, struct build *b);
void cms_tracks_pop(struct build *b);

#endif
