/*
 * The slice store: every slice matching makes, packed, until the write
 * stage writes them in cluster order (schema/trace.sql: by track, depth,
 * then time).
 *
 * Slices are grouped by (track, depth). A slice gets its ordinal in its
 * group when it is made, and its id from the group's extents (extents.h):
 * by default one extent per group, laid out in (track, depth) order once
 * every slice of its tracks is known (ss_order), so that the table is written in
 * cluster order; or, given extent rows (ss_extents), ids reserved a chunk
 * at a time as slices are made, known at once. Until the write stage a
 * slice is named by (group, ordinal), a struct ss_ref: a child names its
 * parent so, a flow its two ends, the name index its slices.
 *
 * A finished slice (ended, or left open at the end of the trace) is packed
 * at the end of its group's bytes as varints, each field the difference
 * from the slice before it: about 10 bytes a slice instead of the 48 of an
 * unpacked one, and no array of every slice. A group's slices finish in
 * ordinal order (a slice of a depth starts only when the one before it at
 * that depth has finished); a slice finished before an earlier one of its
 * group (damaged nesting) waits, unpacked, until they can follow in order.
 *
 * For the name index and the name statistics, the store also keeps per
 * name the (ts, dur, ref) of the name's slices, packed in the order they
 * finished (about time order).
 *
 * Given a scratch file (spill.h), the store keeps at most about `budget`
 * packed bytes in memory: past it, every group's and name's bytes so far
 * are appended to the file as a segment and freed, and read back segment by
 * segment when written. So memory is bounded whatever the trace's size.
 */
#ifndef INGEST_SLICESTORE_H
#define INGEST_SLICESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "extents.h"
#include "spill.h"
#include "util.h"

struct ss_ref {
	uint32_t group; /* MDL_NONE: no slice */
	uint32_t ord;
};

/* A finished slice, as it is handed over and read back. */
struct ss_slice {
	int64_t ts;
	int64_t dur;          /* -1: never ended */
	uint32_t name, cat;
	uint32_t set;         /* arg set id; 0 = none */
	struct ss_ref parent; /* group MDL_NONE: none */
	uint32_t anchored;    /* a flow's anchor named it (commit_flows.h): in the
			       * journal only, not packed (0 when read back) */
};

/* A part of a stream's bytes in the scratch file. */
struct ss_seg {
	uint64_t off;
	size_t len;
};

/* A stream of packed bytes: segments in the scratch file, then p[0..len). */
struct ss_bytes {
	uint8_t *p;
	size_t len, cap;
	struct ss_seg *segs;
	size_t nsegs, capsegs;
};

struct ss_group {
	uint32_t track, depth;
	int sealed;            /* handed to another thread to write (ss_seal): the store leaves it alone */
	uint32_t count;        /* ordinals handed out */
	uint32_t packed;       /* ordinals 0 .. packed - 1 are in data */
	struct ss_slice last;  /* the last one packed: deltas start from it */
	struct ss_bytes data;
	struct vec early;      /* struct ss_early, finished before their turn */
	uint64_t first_id;     /* the id of ordinal 0, once ss_order ran (one extent) */
	struct id_group ids;   /* the ids reserved so far (ss_extents) */
};

/* A name's notes, (ts, dur, group, ordinal) of each slice, packed after
 * one another: in the entry itself while they fit (a trace may have a
 * million names used once each), then in a stream of their own. 32 bytes. */
struct ss_name {
	int64_t ts;            /* the last note's, for the delta */
	uint32_t count;
	uint32_t big;          /* 0 while the notes fit in inl, else 1 + their
				* stream's index in the store's bigs */
	uint8_t len;           /* bytes in inl */
	uint8_t inl[15];
};

/* Groups are kept in blocks of SS_BLOCK that never move (ss_group), so that
 * a thread writing sealed groups (ss_seal) can hold them while new ones
 * are made. */
enum { SS_BLOCK = 256 };

struct slicestore {
	struct ss_group **blocks; /* SS_BLOCK groups each */
	size_t nblocks;
	uint32_t ngroups;
	struct kmap map;       /* (track, depth) -> group */
	uint32_t *near;        /* group + 1 of (track, depth) for the first tracks and depths, 0 unknown:
				* the map's answer without hashing, for the slices of most traces */
	size_t near_tracks;    /* tracks near has room for */
	struct ss_name *names; /* by string id, grown on use */
	struct vec bigs;       /* struct ss_bytes: the notes of names that outgrew their entry */
	int64_t note_base;     /* the first note's ts: every name's deltas start from it */
	int noted;             /* a note was made: note_base is set */
	size_t nnames;
	uint64_t count;        /* slices made */
	int oom;               /* sticky: an allocation failed */
	struct spill *spill;   /* NULL: everything stays in memory */
	size_t budget;         /* packed bytes kept in memory at most, about */
	size_t resident;       /* packed bytes in memory now, but sealed ones */
	size_t sealed;         /* packed bytes of sealed groups not yet freed: in
				* the budget too (atomic: another thread frees them) */
	struct id_chunks ids;  /* rows 0: one extent per group (ss_order) */
	struct vec *journal;   /* NULL, or where every slice packed is noted as
				* well (struct ss_packed), in the order packed:
				* a growing trace's commits read it (commit.h) */
};

/* A slice as it was packed: its group's ordinals up to ord are packed. */
struct ss_packed {
	uint32_t group, ord;
	struct ss_slice s;
};

void ss_init(struct slicestore *st);
/* From now on, keeps about budget packed bytes in memory and the rest in
 * sp (which must outlive the store). A failure to write or read it fails
 * the store (st->oom stays 0; sp->why says why). */
void ss_spill_to(struct slicestore *st, struct spill *sp, size_t budget);
void ss_fini(struct slicestore *st);
/* Before the first slice: reserves ids `rows` at a time as slices are made
 * (extents.h), the first id being 1. */
void ss_extents(struct slicestore *st, uint64_t rows);

/* A new slice of (track, depth): its ref (group MDL_NONE when out of
 * memory, and st->oom set). */
struct ss_ref ss_new(struct slicestore *st, uint32_t track, uint32_t depth);

/* Hands over the finished slice r, and notes it under its name (the name
 * index's and the name statistics' data); 0, or -1 when out of memory. */
int ss_finish(struct slicestore *st, struct ss_ref r, const struct ss_slice *s);

/*
 * Once every slice of the groups from `from` on is finished: gives each of
 * them its first id, groups in (track, depth) order from *next_id on
 * (unless ids were reserved as slices were made), moving *next_id past
 * them, and returns their indexes in that order (the caller frees it).
 * Every slice is ordered by one call from 0 with *next_id 1, or (a model
 * whose events come thread after thread, model.h by_thread) by a call per
 * thread for the groups made since the last, each after the tracks of the
 * one before. NULL when out of memory, or when a slice was made and never
 * finished (a bug; st->oom is not set then).
 */
uint32_t *ss_order(struct slicestore *st, size_t from, uint64_t *next_id);

static inline struct ss_group *ss_group(const struct slicestore *st, uint32_t group)
{
	return &st->blocks[group / SS_BLOCK][group % SS_BLOCK];
}

static inline uint64_t ss_id(const struct slicestore *st, struct ss_ref r)
{
	const struct ss_group *g = ss_group(st, r.group);

	return st->ids.rows ? idg_id(&st->ids, &g->ids, r.ord) : g->first_id + r.ord;
}

/* Reads a group's slices back, in ordinal order. */
struct ss_reader {
	const uint8_t *p, *end;
	struct ss_slice last;
	const struct ss_bytes *b;
	struct spill *spill;
	size_t seg;            /* the next segment to read; nsegs: then the bytes in memory */
	int tail;              /* the bytes in memory were taken */
	uint8_t *buf;          /* a segment read back */
	size_t bufcap;
	int failed;            /* reading the scratch file failed */
	char *why;             /* apart: where the failure's sentence goes (spill.h, spill_read_apart) */
	size_t whylen;
};

void ss_read_group(struct ss_reader *rd, const struct slicestore *st, const struct ss_group *g);
/* The same from a thread other than the store's (a sealed group): the
 * scratch file is read apart, a failure's sentence going to why. */
void ss_read_group_apart(struct ss_reader *rd, const struct slicestore *st, const struct ss_group *g, char *why,
			 size_t whylen);
/* The next slice: 1, or 0 after the last, or when the scratch file could
 * not be read (rd->failed) or the bytes do not decode (which the store
 * never writes). */
int ss_read(struct ss_reader *rd, struct ss_slice *s);
/* Frees what a reader holds. */
void ss_read_done(struct ss_reader *rd);
/* Frees a group's bytes once it is written (again: nothing); a sealed
 * one's from the thread it was handed to. */
void ss_drop(struct slicestore *st, struct ss_group *g);
/* Hands a group whose slices are all finished to another thread, which
 * reads it (ss_read_group_apart) and frees its bytes (ss_drop), while this
 * one makes and finishes slices of other groups: the store no longer
 * spills or touches its bytes, and counts them in its budget (st->sealed)
 * until they are freed. */
void ss_seal(struct slicestore *st, uint32_t group);

/* Reads a name's (ts, dur, ref) back, in the order they were noted. */
void ss_read_name(struct ss_reader *rd, const struct slicestore *st, uint32_t name);
int ss_read_note(struct ss_reader *rd, int64_t *ts, int64_t *dur, struct ss_ref *r);

#endif
