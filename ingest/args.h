/*
 * The arguments' writer: the one owner of the args table (schema/trace.sql).
 *
 * An arg set is the arguments of one row (a slice, an object, a blob),
 * written as consecutive rows whose first id is the set's id. Matching
 * writes a slice's set as the slice closes (a duration's end's arguments
 * join its begin's), so the writer is open from matching on and its rows
 * go to the store's writer thread while matching goes on; the write stage
 * adds the sets of objects and blobs. Rows go in id order from 1, so
 * SQLite appends every one.
 */
#ifndef INGEST_ARGS_H
#define INGEST_ARGS_H

#include <stdint.h>

#include "model.h"
#include "dbwriter.h"

struct arg_writer {
	const struct model *m; /* the arguments' values and blob bytes */
	struct bins *rows;     /* the args table */
	uint64_t count;        /* rows written */
	int overflow;          /* ids ran past 32 bits: nothing more was written */
	/* blob bytes copied out of m->bytes (which moves as decoding goes
	 * on), in blocks, for rows the store has not run yet: each block is
	 * freed by its writer once they ran (argw_settle) */
	void **blocks;
	size_t nblocks, capblocks;
	size_t used, room;     /* of the last block */
};

/* Opens the table through s; 0, or -1 (out of memory, or s->error says
 * what failed). */
int argw_open(struct arg_writer *w, struct dbwriter *s, const struct model *m);

/*
 * Writes one arg set: the n1 arguments of m->args from first1 on, then the
 * n2 from first2 on. Returns its id, or 0 when there are none; 0 too once
 * ids would pass 32 bits (w->overflow is then set).
 */
uint32_t argw_set(struct arg_writer *w, uint32_t first1, unsigned n1, uint32_t first2, unsigned n2);

/* Hands the rows buffered so far to the store (a growing trace's commit,
 * commit.h); 0, or -1 when a write failed. */
int argw_flush(struct arg_writer *w);
/* Before the model's byte arena may move (a stream decodes on while its
 * args are written: ingest.h): the rows buffered are queued, and the
 * copies of the blobs they hold are freed once the store ran them (not
 * waited for). 0, or -1 when a write failed. */
int argw_settle(struct arg_writer *w);

/* Hands the last rows to the store and closes the table; 0, or -1 when a
 * write failed. A second call does nothing. */
int argw_close(struct arg_writer *w);

#endif
