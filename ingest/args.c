/*
 * The arguments' writer (args.h).
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"

int argw_open(struct arg_writer *w, struct dbwriter *s, const struct model *m)
{
	memset(w, 0, sizeof(*w));
	w->m = m;
	if ((w->rows = calloc(1, sizeof(*w->rows))) == NULL)
		return -1;
	if (bins_init(w->rows, s, "args", 9) != 0) {
		free(w->rows);
		w->rows = NULL;
		return -1;
	}
	return 0;
}

enum { BLOCK = 64 << 10 }; /* bytes of a block of blob copies, at least */

/* Room for n bytes in the blocks, holding a copy of p; NULL when out of
 * memory. */
static void *blob_copy(struct arg_writer *w, const void *p, size_t n)
{
	char *at;

	if (w->nblocks == 0 || w->room - w->used < n) {
		size_t room = n > BLOCK ? n : BLOCK;

		if (w->nblocks == w->capblocks) {
			size_t cap = w->capblocks ? 2 * w->capblocks : 8;
			void **grown = realloc(w->blocks, cap * sizeof(*grown));

			if (grown == NULL)
				return NULL;
			w->blocks = grown;
			w->capblocks = cap;
		}
		if ((w->blocks[w->nblocks] = malloc(room)) == NULL)
			return NULL;
		w->nblocks++;
		w->used = 0;
		w->room = room;
	}
	at = (char *)w->blocks[w->nblocks - 1] + w->used;
	memcpy(at, p, n);
	w->used += n;
	return at;
}

static void put_arg(struct arg_writer *w, uint64_t set, uint32_t seq, const struct mdl_arg *x)
{
	struct bins *a = w->rows;

	w->count++;
	bins_null(a); /* the id: SQLite's next rowid, rows go in id order */
	bins_i64(a, (int64_t)set);
	bins_i64(a, seq);
	bins_i64(a, x->key);
	bins_i64(a, x->type);
	if (x->type == MDL_ARG_NULL || x->type == MDL_ARG_DOUBLE || x->type == MDL_ARG_STRING ||
	    x->type == MDL_ARG_BLOB)
		bins_null(a);
	else
		bins_i64(a, x->v.i);
	if (x->type == MDL_ARG_DOUBLE)
		bins_dbl(a, x->v.d);
	else
		bins_null(a);
	if (x->type == MDL_ARG_STRING)
		bins_i64(a, x->v.str);
	else
		bins_null(a);
	if (x->type == MDL_ARG_BLOB) {
		/* a copy: the arena moves as decoding goes on, while the row
		 * waits in the store's queue (argw_settle) */
		void *copy = blob_copy(w, (const char *)w->m->bytes.data + x->v.u, x->len);

		if (copy != NULL) {
			bins_blob(a, copy, (int)x->len);
		} else {
			dbw_fail(a->s, "out of memory");
			bins_null(a);
		}
	} else {
		bins_null(a);
	}
	bins_row(a);
}

/* Writes args[first .. first + n) into set from seq on; the next seq. */
static uint32_t put_args(struct arg_writer *w, uint64_t set, uint32_t seq, uint32_t first, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		put_arg(w, set, seq++, VEC_AT(&w->m->args, struct mdl_arg, first + i));
	return seq;
}

uint32_t argw_set(struct arg_writer *w, uint32_t first1, unsigned n1, uint32_t first2, unsigned n2)
{
	uint64_t set = w->count + 1;

	if (n1 + n2 == 0 || w->overflow)
		return 0;
	if (set + n1 + n2 > UINT32_MAX) {
		w->overflow = 1;
		return 0;
	}
	put_args(w, set, put_args(w, set, 0, first1, n1), first2, n2);
	return (uint32_t)set;
}

int argw_flush(struct arg_writer *w)
{
	return w->rows != NULL ? bins_flush(w->rows) : 0;
}

/* The blocks go to the writer, freed once every job queued so far ran;
 * when that cannot be queued, after waiting for them. 0, or -1. */
static int release_blocks(struct arg_writer *w)
{
	int rc = 0;
	size_t i;

	for (i = 0; i < w->nblocks; i++)
		if (dbw_release(w->rows->s, w->blocks[i]) != 0)
			break;
	if (i < w->nblocks) { /* out of memory */
		rc = dbw_drain(w->rows->s);
		for (; i < w->nblocks; i++)
			free(w->blocks[i]);
	}
	w->nblocks = 0;
	return rc;
}

int argw_settle(struct arg_writer *w)
{
	int rc;

	if (w->nblocks == 0 || w->rows == NULL)
		return 0;
	rc = bins_flush(w->rows);
	return release_blocks(w) | rc;
}

int argw_close(struct arg_writer *w)
{
	int rc = 0;

	if (w->rows != NULL) {
		rc = bins_fini(w->rows);
		rc |= release_blocks(w);
		free(w->rows);
		w->rows = NULL;
	}
	free(w->blocks);
	w->blocks = NULL;
	w->capblocks = 0;
	return rc;
}
