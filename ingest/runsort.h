/*
 * Records of a fixed size put into an order with bounded memory: the
 * counter points, flows and context switches of a trace, which arrive in
 * time order but are written in their tables' order (write.c).
 *
 * Records are pushed into a buffer; given a scratch file (spill.h), a full
 * buffer is sorted and appended to it as a run, so that memory stays at
 * one buffer however many records come. After the last push, rs_finish()
 * sorts what the buffer holds and rs_next() merges it with the runs, a
 * read buffer a run, handing records on in order. Without a scratch file,
 * or when every record fits the buffer, nothing touches the disk. A stage
 * of its own spills to the file it shares only from the thread that
 * appends to it (spill.h: appends are not locked).
 */
#ifndef INGEST_RUNSORT_H
#define INGEST_RUNSORT_H

#include <stddef.h>
#include <stdint.h>

#include "spill.h"
#include "util.h"

/* Where a run merged lies and how far it has been read. */
struct rs_src {
	uint8_t *buf;       /* records read back, or the runsort's buffer */
	size_t pos, len;    /* the head is record pos; len records in buf */
	uint64_t off;       /* the next bytes to read in the scratch file */
	uint64_t left;      /* records of the run not read yet */
};

struct runsort {
	size_t size;        /* bytes a record */
	int (*cmp)(const void *, const void *); /* the order; ties must not
			     * happen (no two records compare equal), since
			     * the sort of a run is not stable */
	uint8_t *buf;       /* the records since the last run */
	size_t len, cap;    /* records in buf, room for */
	size_t run_max;     /* records a run holds; 0: no scratch file, buf grows */
	struct spill *sp;   /* NULL: everything stays in memory */
	struct vec runs;    /* struct rs_run, in the order written */
	uint64_t count;     /* records pushed */
	struct rs_src *src; /* the merge: a source a run, then buf */
	uint32_t *heap;     /* sources by their heads, the least first */
	size_t nheap;
	uint32_t last;      /* the source of the record rs_next() gave last,
			     * MDL_NONE: none; moved on at the next call */
	int failed;         /* sticky: out of memory, or the scratch file
			     * failed (sp->failed says so, and why) */
};

void rs_init(struct runsort *rs, size_t size, int (*cmp)(const void *, const void *));
/* From now on, spills runs of `bytes` (at least one record) to sp, which
 * must outlive rs; before the first push. */
void rs_spill_to(struct runsort *rs, struct spill *sp, size_t bytes);
/* Room for a new record (zeroed), to be filled before the next call; NULL
 * when out of memory or the scratch file failed (rs->failed). */
void *rs_push(struct runsort *rs);
/* After the last push: prepares the merge; 0, or -1 (rs->failed). */
int rs_finish(struct runsort *rs);
/* The next record in order, valid until the next call; NULL after the
 * last one, or when reading the scratch file failed (rs->failed). */
const void *rs_next(struct runsort *rs);
/* Frees everything; the runs stay in the scratch file. */
void rs_fini(struct runsort *rs);

#endif
