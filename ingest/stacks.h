/*
 * The stack statistics (schema/trace.sql, track_stacks): per track, its
 * call stacks merged by name path with their wall times over the whole
 * trace, built from the slices as slicewrite.c writes them, which is all an area
 * or flame graph of the whole trace needs (query/area.c).
 *
 * The slices come group by group in (track, depth) order, each group's in
 * ordinal (ts) order, and a slice's parent is one level up on its track:
 * so the node of every slice of the previous depth, by ordinal, is all
 * that is kept besides the track's tree. Only ingest/slicewrite.c calls
 * these, on one thread at a time (for XRay, its writer thread).
 */
#ifndef INGEST_STACKS_H
#define INGEST_STACKS_H

#include <stdint.h>

#include "slicestore.h"

struct build;
struct stacks;

/* Before the first group: sets b->stacks. Returns 0, or -1 when out of
 * memory (b->oom set) or the table could not be started. */
int stacks_begin(struct build *b);
/* The next group, (track, depth) of the slice store's group `group`, of
 * count slices; sk may be NULL (stacks_begin failed: nothing is done). */
void stacks_group(struct stacks *sk, uint32_t track, uint32_t depth, uint32_t group, uint64_t count);
/* The group's next slice, in ordinal order. */
void stacks_slice(struct stacks *sk, const struct ss_slice *s);
/* Writes the last track's rows and frees b->stacks (NULL after it; a NULL
 * one is fine). Returns 0, or -1 when out of memory (b->oom set) or an
 * insert failed (the store's error says why). */
int stacks_end(struct build *b);

#endif
