/*
 * The trace object of docs/API.md: a record as JSON, with its labels, its
 * XRay symbols' state and its count of notes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../ingest/ingest.h"
#include "catalog_internal.h"

/* XRay traces say whether their functions have names and how to add them. */
static void rec_symbols_json(const struct trace_rec *r, struct jbuf *out)
{
	jb_key(out, "symbols");
	jb_obj(out);
	jb_key(out, "named");
	jb_i64(out, r->state.symbols_named < 0 ? 0 : r->state.symbols_named);
	jb_key(out, "error");
	jb_str(out, r->state.symbols_error);
	jb_key(out, "binary");
	jb_str(out, r->state.binary_name);
	if (r->state.symbols_named <= 0) {
		jb_key(out, "hint");
		jb_str(out, "functions are named fn#<id>: POST the instrumented binary (or the YAML of "
			    "'llvm-xray extract --symbolize') to /api/traces/{id}/symbols, or upload it with the "
			    "trace as multipart field 'binary'");
	}
	jb_obj_end(out);
}

void cat_labels_json(const struct trace_rec *r, struct jbuf *out)
{
	size_t i;

	jb_obj(out);
	for (i = 0; i < r->meta.nlabels; i++) {
		jb_key(out, r->meta.labels[i].key);
		jb_str(out, r->meta.labels[i].value);
	}
	jb_obj_end(out);
}

/* "progress": the bytes read of the upload, and this server's ingest
 * phase by phase (docs/API.md). */
static void rec_progress_json(const struct trace_rec *r, struct jbuf *out)
{
	static const char *const phases[] = { "decoding", "matching", "writing", "indexing" };
	static const char *const units[] = { "bytes", "events", "rows", "steps" };
	const struct rec_progress *p = &r->progress;

	jb_key(out, "progress");
	jb_obj(out);
	jb_key(out, "bytes_done");
	jb_u64(out, r->state.status == TS_READY ? r->state.size : p->bytes_done);
	jb_key(out, "bytes_total");
	jb_u64(out, r->state.size);
	if (r->state.status == TS_INGESTING && p->phase > 0 && p->phase <= INGEST_PHASES) {
		jb_key(out, "phase");
		jb_str(out, phases[p->phase - 1]);
		jb_key(out, "phase_unit");
		jb_str(out, units[p->phase - 1]);
		jb_key(out, "phase_done");
		jb_u64(out, p->done);
		jb_key(out, "phase_total");
		jb_u64(out, p->total);
	}
	jb_obj_end(out);
}

/* "preview": what a growing upload's last commit holds (grow.h), read
 * while the ingest runs, or null. */
static void rec_preview_json(const struct trace_rec *r, struct jbuf *out)
{
	jb_key(out, "preview");
	if (r->state.status != TS_INGESTING || r->live.preview < 1) {
		jb_null(out);
		return;
	}
	jb_obj(out);
	jb_key(out, "visible_bytes"); /* bytes of the source its last commit holds */
	jb_u64(out, r->live.snap_visible);
	jb_key(out, "from_byte"); /* where its view starts: always its first byte */
	jb_u64(out, 0);
	jb_obj_end(out);
}

/* "error": a failed trace's code and message, or null. */
static void rec_error_json(const struct trace_rec *r, struct jbuf *out)
{
	jb_key(out, "error");
	if (r->state.status != TS_FAILED) {
		jb_null(out);
		return;
	}
	jb_obj(out);
	jb_key(out, "code");
	jb_str(out, r->state.error_code);
	jb_key(out, "message");
	jb_str(out, r->state.error_msg ? r->state.error_msg : "");
	jb_obj_end(out);
}

/* "stream": a live trace's state and what its served database holds, or
 * null for an upload. */
static void rec_stream_json(const struct trace_rec *r, struct jbuf *out)
{
	int ready = r->state.status == TS_READY;

	jb_key(out, "stream");
	if (r->state.stream[0] == '\0') {
		jb_null(out);
		return;
	}
	jb_obj(out);
	jb_key(out, "state");
	jb_str(out, r->state.stream);
	jb_key(out, "visible_bytes"); /* the bytes the database being served equals, as a file */
	jb_u64(out, ready ? r->state.size : r->live.snap_visible);
	jb_key(out, "from_byte"); /* where its view of the stream starts: always its first byte */
	jb_u64(out, 0);
	jb_key(out, "committed_bytes"); /* the bytes whose records it holds, growing (catalog/grow.h) */
	jb_u64(out, ready ? r->state.size : r->live.growing > 0 ? r->live.grown_bytes : r->live.snap_visible);
	jb_obj_end(out);
}

/* The trace object of docs/API.md, with notes the count of its notes;
 * called with mu held. */
void cat_rec_json(const struct trace_rec *r, int64_t notes, struct jbuf *out)
{
	const struct rec_state *s = &r->state;

	jb_obj(out);
	jb_key(out, "id");
	jb_i64(out, r->id);
	jb_key(out, "name");
	jb_str(out, r->meta.name);
	jb_key(out, "description");
	jb_str(out, r->meta.description);
	jb_key(out, "labels");
	cat_labels_json(r, out);
	jb_key(out, "pinned");
	jb_bool(out, r->meta.pinned);
	jb_key(out, "format");
	if (s->format[0])
		jb_str(out, s->format);
	else
		jb_null(out);
	jb_key(out, "size_bytes");
	jb_u64(out, s->size);
	jb_key(out, "stored_bytes");
	jb_u64(out, s->stored);
	jb_key(out, "status");
	jb_str(out, cat_status_names[s->status]);
	rec_progress_json(r, out);
	rec_preview_json(r, out);
	rec_error_json(r, out);
	jb_key(out, "created_at");
	jb_str(out, s->created_at);
	jb_key(out, "notes");
	jb_i64(out, notes);
	rec_stream_json(r, out);
	if (strcmp(s->format, "xray-fdr") == 0 || strcmp(s->format_hint, "xray-fdr") == 0)
		rec_symbols_json(r, out);
	jb_key(out, "start_ns");
	jb_i64(out, s->start_ns);
	jb_key(out, "end_ns");
	jb_i64(out, s->end_ns);
	if (s->summary && s->summary[0]) {
		jb_raw(out, ",", 1);
		jb_raw(out, s->summary, strlen(s->summary));
	} else {
		static const char none[] = ",\"counts\":null,\"providers\":[],\"diagnostics\":{}";

		jb_raw(out, none, sizeof(none) - 1);
	}
	jb_obj_end(out);
}

int cat_json(struct catalog *c, int64_t id, struct jbuf *out)
{
	struct cat_note_counts nc;
	const struct cat_note_count *hit;
	struct trace_rec *r;
	char err[256];
	int rc;

	/* asked before the lock is taken: the database is never asked under it */
	if ((rc = cat_note_counts(c, id, NULL, &nc, err, sizeof(err))) != 0)
		return rc;
	hit = cat_note_count_find(&nc, id);
	pthread_mutex_lock(&c->mu);
	rc = cat_sync_locked(c, 0);
	r = rc == 0 ? cat_find(c, id) : NULL;
	if (r)
		cat_rec_json(r, hit ? hit->count : 0, out);
	pthread_mutex_unlock(&c->mu);
	cat_note_counts_free(&nc);
	return rc ? rc : r ? CAT_OK : CAT_ENOTRACE;
}
