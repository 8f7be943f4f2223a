/*
 * A trace's record and every change to what it says: the one writer of its
 * meta, state and progress (catalog_internal.h says who writes the other
 * groups). Whoever changes a trace (an upload, a patch, the worker ending
 * an ingest, a stream growing or ending, the syncer reading another
 * server's change) asks for the change by name here, so that a trace's
 * life can be read in one file: queued -> ingesting -> ready or failed,
 * and for a stream live -> queued first.
 *
 * Every function is called under the catalog's lock, or on a record no
 * other thread can see yet (a new upload's, a load's). None allocates but
 * rec_new and rec_outcome, and none fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ingest/ingest.h"
#include "catalog_internal.h"

#define SWAP(a, b)                      \
	do {                            \
		__typeof__(a) t_ = (a); \
		(a) = (b);              \
		(b) = t_;               \
	} while (0)

void rec_meta_fini(struct rec_meta *m)
{
	free(m->name);
	free(m->description);
	free(m->labels);
	memset(m, 0, sizeof(*m));
}

static void state_fini(struct rec_state *s)
{
	free(s->error_msg);
	free(s->summary);
	free(s->symbols_error);
	free(s->binary_name);
	memset(s, 0, sizeof(*s));
}

void cat_rec_free(struct trace_rec *r)
{
	if (r == NULL)
		return;
	rec_meta_fini(&r->meta);
	state_fini(&r->state);
	free(r->live.grown);
	free(r);
}

struct trace_rec *rec_new(const struct cat_new *nw, int status, char *binary_name)
{
	struct trace_rec *r = calloc(1, sizeof(*r));

	if (r == NULL || (r->meta.name = strdup(nw->name)) == NULL ||
	    (r->meta.description = strdup(nw->description ? nw->description : "")) == NULL ||
	    cat_labels_apply(NULL, 0, nw->labels, nw->nlabels, NULL, 0, &r->meta.labels, &r->meta.nlabels) != 0) {
		cat_rec_free(r);
		free(binary_name);
		return NULL;
	}
	r->state.status = status;
	r->state.size = nw->size;
	r->live.arriving = nw->arrived > 0 && nw->arrived < nw->size;
	r->live.arrived = nw->arrived;
	r->state.symbols_named = -1;
	r->state.binary_name = binary_name;
	if (status == TS_LIVE)
		snprintf(r->state.stream, sizeof(r->state.stream), "receiving");
	snprintf(r->state.format_hint, sizeof(r->state.format_hint), "%s", nw->format_hint ? nw->format_hint : "");
	return r;
}

void rec_stamp(struct trace_rec *r, int64_t id, uint64_t stored, time_t created)
{
	r->id = id;
	r->state.stored = stored;
	r->state.created = created;
	cat_rfc3339(created, r->state.created_at, sizeof(r->state.created_at));
}

void rec_meta_swap(struct trace_rec *r, struct rec_meta *m)
{
	SWAP(r->meta, *m);
}

/* Every column of the database's row is meta or state: a part's group is
 * taken whole (src keeps dst's old one, freed with it). */
void rec_take(struct trace_rec *dst, struct trace_rec *src, enum catdb_part part)
{
	SWAP(dst->meta, src->meta);
	if (part != CATDB_META)
		SWAP(dst->state, src->state);
}

/* ---- the state ------------------------------------------------------------ */

void rec_queue(struct trace_rec *r)
{
	r->state.status = TS_QUEUED;
}

void rec_start_ingest(struct trace_rec *r)
{
	r->state.status = TS_INGESTING;
	memset(&r->progress, 0, sizeof(r->progress));
}

void rec_fail(struct trace_rec *r, const char *code, const char *msg)
{
	r->state.status = TS_FAILED;
	snprintf(r->state.error_code, sizeof(r->state.error_code), "%s", code);
	free(r->state.error_msg);
	r->state.error_msg = strdup(msg);
}

void rec_stored(struct trace_rec *r, uint64_t bytes)
{
	r->state.stored = bytes;
}

void rec_indexed(struct trace_rec *r, int indexed)
{
	r->state.indexed = indexed;
}

void rec_size(struct trace_rec *r, uint64_t size)
{
	r->state.size = size;
}

void rec_grew(struct trace_rec *r, uint64_t size)
{
	r->state.size = r->progress.bytes_done = size;
}

void rec_stream(struct trace_rec *r, const char *state)
{
	snprintf(r->state.stream, sizeof(r->state.stream), "%s", state);
}

void rec_symbols(struct trace_rec *r, char *binary_name, int ready, uint64_t named)
{
	free(r->state.binary_name);
	r->state.binary_name = binary_name;
	if (!ready)
		return;
	r->state.symbols_named = (int64_t)named;
	free(r->state.symbols_error);
	r->state.symbols_error = NULL;
	r->state.indexed = 0; /* names changed: index them again */
}

void rec_progress(struct trace_rec *r, int phase, uint64_t done, uint64_t total)
{
	r->progress.phase = (uint8_t)(phase + 1);
	r->progress.done = done;
	r->progress.total = total;
	if (phase == INGEST_PHASE_DECODE)
		r->progress.bytes_done = done;
}

void rec_view(struct trace_rec *r, const char *format, int64_t start_ns, int64_t end_ns, char **summary)
{
	snprintf(r->state.format, sizeof(r->state.format), "%s", format);
	r->state.start_ns = start_ns;
	r->state.end_ns = end_ns;
	if (*summary) {
		free(r->state.summary);
		r->state.summary = *summary;
		*summary = NULL;
	}
}

void rec_view_clear(struct trace_rec *r)
{
	free(r->state.summary);
	r->state.summary = NULL;
	r->state.format[0] = '\0';
	r->state.start_ns = r->state.end_ns = 0;
}

/* ---- an ingest's outcome ---------------------------------------------------- */

static const char *error_code_of(int rc)
{
	switch (rc) {
	case INGEST_ENOTTRACE:
		return "not_a_trace";
	case INGEST_EEMPTY:
		return "empty_file";
	case INGEST_ENOMEM:
		return "out_of_memory";
	case INGEST_EDB:
		return "storage_failed";
	default:
		return "ingest_failed";
	}
}

void rec_outcome(struct rec_state *out, const struct rec_state *cur, const struct rec_outcome *o)
{
	const struct ingest_result *res = o->res;

	*out = *cur;
	out->summary = NULL;
	out->error_msg = NULL;
	out->symbols_error = NULL;
	out->stored = o->stored;
	if (o->rc == INGEST_OK) {
		out->status = TS_READY;
		snprintf(out->format, sizeof(out->format), "%s", res->format ? res->format : "");
		out->start_ns = res->start_ns;
		out->end_ns = res->end_ns;
		out->summary = o->summary;
		out->symbols_named = (int64_t)res->symbols_named;
		out->symbols_error = res->symbols_error[0] ? strdup(res->symbols_error) : NULL;
		if (res->symbols_error[0])
			out->binary_name = NULL; /* refused: it names nothing, nor the process (cur's string) */
		out->indexed = o->indexed;
		if (o->db_file)
			snprintf(out->db_file, sizeof(out->db_file), "%s", o->db_file);
		out->error_code[0] = '\0';
	} else {
		free(o->summary);
		out->status = TS_FAILED;
		snprintf(out->error_code, sizeof(out->error_code), "%s", error_code_of(o->rc));
		out->error_msg = strdup(res->error[0] ? res->error : ingest_strerror(o->rc));
	}
}

void rec_outcome_take(struct trace_rec *r, struct rec_state *st)
{
	struct rec_state *s = &r->state;

	free(s->summary);
	free(s->error_msg);
	free(s->symbols_error);
	if (st->binary_name == NULL) { /* symbols refused (rec_outcome): no binary names the process */
		free(s->binary_name);
		s->binary_name = NULL;
	}
	*s = *st;
	memset(st, 0, sizeof(*st));
}

void rec_outcome_drop(struct rec_state *st)
{
	free(st->summary);
	free(st->error_msg);
	free(st->symbols_error);
	memset(st, 0, sizeof(*st));
}
