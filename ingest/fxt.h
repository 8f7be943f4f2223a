/*
 * The FXT decoder (fxt.c): a push parser that appends an archive's records
 * to the model. Its format table and departures from the specification are
 * in fxt.c's header comment.
 */
#ifndef INGEST_FXT_H
#define INGEST_FXT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* The FXT decoder: a push parser fed with chunks of any size. */
struct fxt_stats {
	uint64_t records[16];      /* by record type */
	uint64_t events[16];       /* by event type */
	uint64_t metadata[16];     /* by metadata type */
	uint64_t sched[16];        /* by scheduling record type */
	uint64_t profiler[16];     /* by profiler record subtype */
	uint64_t args;             /* arguments decoded */
	uint64_t bytes;            /* bytes consumed */
};

struct fxt_decoder {
	struct model *m;
	struct mdl_provider *cur;  /* current provider; tables resolve against it */
	uint8_t *carry;            /* a record split across chunks */
	size_t carry_len, carry_cap;
	uint64_t need;             /* bytes of the current record; 0 until its header is known */
	uint64_t skip;             /* bytes of an oversized record still to be skipped */
	uint64_t skip_done;        /* bytes of that record skipped so far */
	uint64_t pos;              /* file offset of the next byte fed */
	int started;               /* the first word has been seen */
	int big_endian;
	int ended;                 /* a zero-size record ended the archive */
	int not_trace;             /* the first record is not a trace's */
	int forced;                /* the caller named the format: the first
				    * record is not checked (set after fxt_init) */
	struct fxt_stats st;
};

enum { FXT_MAX_RECORD = 64 << 20 }; /* larger records are skipped, not buffered */

void fxt_init(struct fxt_decoder *d, struct model *m);
void fxt_fini(struct fxt_decoder *d);
/* Decodes what it can of buf; keeps an incomplete record for the next call.
 * Returns INGEST_OK, or INGEST_ENOTTRACE / INGEST_ENOMEM (sticky). */
int fxt_feed(struct fxt_decoder *d, const uint8_t *buf, size_t n);
/* Ends the input: a partial record left over counts as truncated. */
int fxt_finish(struct fxt_decoder *d);
/* Whether the first bytes look like an FXT archive. */
int fxt_detect(const uint8_t *buf, size_t n);

#endif
