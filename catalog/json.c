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

/* The trace object of docs/API.md, with notes the count of its notes;
 * called with mu held. */
void cat_rec_json(const struct trace_rec *r, int64_t notes, struct jbuf *out)
{
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
	if (r->state.format[0])
		jb_str(out, r->state.format);
	else
		jb_null(out);
	jb_key(out, "size_bytes");
	jb_u64(out, r->state.size);
	jb_key(out, "stored_bytes");
	jb_u64(out, r->state.stored);
	jb_key(out, "status");
	jb_str(out, cat_status_names[r->state.status]);
	jb_key(out, "progress");
	jb_obj(out);
	jb_key(out, "bytes_done");
	jb_u64(out, r->state.status == TS_READY ? r->state.size : r->progress.bytes_done);
	jb_key(out, "bytes_total");
	jb_u64(out, r->state.size);
	if (r->state.status == TS_INGESTING && r->progress.phase > 0 && r->progress.phase <= INGEST_PHASES) {
		/* this server's ingest, phase by phase (docs/API.md) */
		static const char *const phases[] = { "decoding", "matching", "writing", "indexing" };
		static const char *const units[] = { "bytes", "events", "rows", "steps" };

		jb_key(out, "phase");
		jb_str(out, phases[r->progress.phase - 1]);
		jb_key(out, "phase_unit");
		jb_str(out, units[r->progress.phase - 1]);
		jb_key(out, "phase_done");
		jb_u64(out, r->progress.done);
		jb_key(out, "phase_total");
		jb_u64(out, r->progress.total);
	}
	jb_obj_end(out);
	jb_key(out, "preview");
	if (r->state.status == TS_INGESTING && r->live.preview == 1) { /* live.c: read while the ingest runs */
		jb_obj(out);
		jb_key(out, "visible_bytes"); /* bytes of the source the preview holds */
		jb_u64(out, r->live.snap_visible);
		jb_key(out, "from_byte"); /* where its window starts */
		jb_u64(out, r->live.snap_from);
		jb_obj_end(out);
	} else {
		jb_null(out);
	}
	jb_key(out, "error");
	if (r->state.status == TS_FAILED) {
		jb_obj(out);
		jb_key(out, "code");
		jb_str(out, r->state.error_code);
		jb_key(out, "message");
		jb_str(out, r->state.error_msg ? r->state.error_msg : "");
		jb_obj_end(out);
	} else {
		jb_null(out);
	}
	jb_key(out, "created_at");
	jb_str(out, r->state.created_at);
	jb_key(out, "notes");
	jb_i64(out, notes);
	jb_key(out, "stream");
	if (r->state.stream[0]) {
		jb_obj(out);
		jb_key(out, "state");
		jb_str(out, r->state.stream);
		jb_key(out, "visible_bytes"); /* what the database being served holds */
		jb_u64(out, r->state.status == TS_READY ? r->state.size : r->live.snap_visible);
		jb_key(out, "from_byte"); /* where its window of the stream starts */
		jb_u64(out, r->state.status == TS_READY ? 0 : r->live.snap_from);
		jb_obj_end(out);
	} else {
		jb_null(out);
	}
	if (strcmp(r->state.format, "xray-fdr") == 0 || strcmp(r->state.format_hint, "xray-fdr") == 0)
		rec_symbols_json(r, out);
	jb_key(out, "start_ns");
	jb_i64(out, r->state.start_ns);
	jb_key(out, "end_ns");
	jb_i64(out, r->state.end_ns);
	if (r->state.summary && r->state.summary[0]) {
		jb_raw(out, ",", 1);
		jb_raw(out, r->state.summary, strlen(r->state.summary));
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
