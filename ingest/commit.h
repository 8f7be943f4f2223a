/*
 * A growing trace's commits: the writing half of ingesting a trace while
 * its bytes arrive (ingest.h, "A trace while its bytes arrive").
 *
 * The build matches events a batch at a time (build.h) into the slice
 * store, counter points and arg sets; between two batches the driver may
 * commit. A commit writes what became final since the last one, so that
 * each commit is a consistent prefix that readers read whole (the
 * database is in WAL mode: dbw_open_growing):
 *
 *   - slices finished since the last commit (the store's journal), and the
 *     slices still open, each as a row with dur -1 and no arg set, which a
 *     later commit replaces once it closes;
 *   - their groups' facts: track_depths (count, longest, disjoint, levels
 *     of detail, time marks), extents, and the level of detail;
 *   - counter points made since, with their tracks' extents, marks and
 *     level of detail;
 *   - the arrows whose from-slice is final (commit_flows.h), the logs up to
 *     the time matched, and the cpu runs so far (commit_sched.h);
 *   - strings new since, and the small tables whole (threads, processes,
 *     tracks, providers, diagnostics, meta).
 *
 * Row ids do not depend on where commits fall: slices and points take ids
 * from chunks reserved as they are made (extents.h), arg sets as slices
 * close; within a commit rows go to SQLite in id order, so that it appends
 * them.
 *
 * What waits for the end (commit_end, then the build's write stage in its
 * committed mode): objects, blobs, the profiler's records, the name index
 * and statistics, and the stack statistics (track_names, track_stacks).
 * They read the whole trace, or take ids (arg sets of objects) after every
 * slice's. The end also writes the arrows not written yet (commit_flows.h)
 * and writes every log and every cpu run again, as a file's ingest does.
 */
#ifndef INGEST_COMMIT_H
#define INGEST_COMMIT_H

#include <stdint.h>

#include "build.h"

struct commit;

/* A slice open at a commit (matching's stacks): written with dur -1. */
struct commit_open {
	struct ss_ref ref, parent;
	int64_t ts;
	uint32_t name, cat;
};

/* Starts committing the build b: the store and matching note what they
 * make from now on. NULL when out of memory. */
struct commit *commit_new(struct build *b);
void commit_free(struct commit *c);

/* Before commit_write: a slice open now (in any order). 0, or -1 when out
 * of memory. */
int commit_open_slice(struct commit *c, const struct commit_open *o);

/* Matching's flows (commit_flows.h): an anchor names slice r from now on
 * (delta 1) or no longer (-1); an arrow was made. Out of memory fails the
 * next commit_write. */
void commit_anchor(struct commit *c, struct ss_ref r, int delta);
void commit_flow(struct commit *c, const struct bflow *f);
/* Whether a commit wrote arrow n (its id - 1): the end writes the others. */
int commit_flow_written(const struct commit *c, uint64_t n);

/* Writes what became final since the last commit and, but for
 * COMMIT_ROWS, the open slices given, and commits (enum commit_how).
 * *queued (COMMIT_QUEUED; may be NULL otherwise): the writer's ticket of
 * the commit. COMMIT_PUBLISH returns once the writer ran it, COMMIT_QUEUED
 * once it is queued (commit.c says why it may); a pause's layer
 * (build.layer) commits nothing itself. 0, or -1 (b->oom, or the store's
 * error). */
int commit_write(struct commit *c, enum commit_how how, uint64_t *queued);


#endif
