/*
 * A growing trace's flows (commit.h): each arrow's row is written at the
 * first commit after its from-slice ended, rather than at the end.
 *
 * An arrow (struct bflow) is made when matching meets a flow's step or end:
 * it runs from the slice that enclosed the flow's event before (its
 * anchor, matching's flow_last) to the slice enclosing this one. Its row
 * needs where the from-slice ends (from_ts), known once that slice is
 * final, which may be before or after the arrow is made. So the slices
 * that anchors name are noted (cmf_anchor), with a count of the anchors and
 * the arrows waiting that name them; as slices become final (the store's
 * journal, cmf_final) a noted one keeps its end; and at each commit
 * (cmf_write) every arrow whose from-slice is final goes to the writer with
 * its id (n + 1: ids do not depend on where commits fall), the others
 * waiting for a later commit. A note goes once nothing names it: memory is
 * that of the flows open and the arrows waiting.
 *
 * The end (or a pause's layer) writes the other arrows, as a file's
 * ingest writes them (write.c, write_flows, which asks cmf_written): those
 * whose from-slice ended since, or never did.
 */
#ifndef INGEST_COMMIT_FLOWS_H
#define INGEST_COMMIT_FLOWS_H

#include <stdint.h>

#include "build.h"

struct cm_flows {
	struct kmap noted;      /* (group, ord) -> index in notes */
	struct vec notes;       /* struct cmf_note */
	struct vec free;        /* uint32_t: indexes of notes unused */
	size_t live, dead;      /* entries of `noted` in use, and dropped since the last prune */
	struct vec made;        /* struct bflow: made since the last commit */
	struct vec waiting;     /* struct bflow: made, their from-slice not final then */
	uint64_t ended;         /* notes that became final since the last commit */
	uint64_t written;       /* arrows written */
	struct vec bits;        /* uint64_t: bit n set once arrow n is written */
	int oom;
};

void cmf_init(struct cm_flows *f);
void cmf_fini(struct cm_flows *f);
/* An anchor names slice r from now on (delta 1), or no longer (-1). */
void cmf_anchor(struct cm_flows *f, struct ss_ref r, int delta);
/* An arrow made (its from-slice is named by an anchor now). */
void cmf_made(struct cm_flows *f, const struct bflow *a);
/* A slice became final (the store's journal, in the order packed). */
void cmf_final(struct cm_flows *f, const struct ss_packed *j);
/* Hands the writer the rows of the arrows whose from-slice is final, in
 * id order; 0, or -1 (f->oom, or the store's error). */
int cmf_write(struct cm_flows *f, struct build *b);
/* Whether arrow n (its id - 1) is written. */
int cmf_written(const struct cm_flows *f, uint64_t n);

#endif
