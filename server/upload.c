/*
 * Uploads: POST /api/traces (a trace, raw or multipart, with its name,
 * labels and description) and POST /api/traces/{id}/symbols. Bodies are
 * written to a spool file as they arrive, never held in memory; a client
 * that goes away leaves nothing behind. POST /api/traces?live=1 is a live
 * stream: its trace exists from the first byte, the body is appended to
 * the trace's source as it comes (catalog/live.c makes it readable), and
 * a client that goes away leaves the trace with what it sent. A big raw FXT
 * upload is recorded at its first bytes and ingested as the rest arrives
 * (upload_grow); one that does not finish still leaves nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "server.h"
#include "server_internal.h"
#include "../provider/utf8.h"

/* What one upload or live stream holds while its body comes in; only
 * requests that carry one have it (req->up). */
struct upload {
	struct spool file;     /* the trace */
	struct spool binary;   /* XRay symbols: instrumented binary or YAML */
	int64_t symbols_for;   /* POST .../symbols: the trace id; 0 for a new trace */
	struct live_up *live;  /* POST /api/traces?live=1; NULL otherwise */
	uint64_t total;        /* the body's length (Content-Length); 0: not said */
	int64_t grow_id;       /* a big upload recorded at its first bytes (a raw body's,
				* or a form's field "file"), whose ingest grows as the
				* rest arrives (cat_upload_grows); 0 otherwise */
	int grow_decided;      /* whether it is one is known */
	/* a form recorded at its file's first bytes, with the fields before
	 * it: those after it are applied when the body ends */
	size_t grow_labels;    /* labels recorded */
	int name_after;        /* a "name" field came after it was recorded */
	int desc_after;        /* a "description" field came after it was recorded */
	int multipart;
	unsigned fail_status;  /* an error found mid-body, answered when the body ends */
	uint64_t fail_at;      /* body bytes received when it was found */
	const char *fail_code, *fail_msg;
	uint64_t got;          /* body bytes received */
	int too_big;
	int write_failed;
	int suspended;         /* waiting for ingest (wait=1) */
	int64_t wait_id;
	struct MHD_PostProcessor *pp;
	char *filename;        /* multipart file name */
	char *binary_filename; /* multipart file name of field "binary" */
	char *name;            /* multipart "name" field */
	char *description;     /* multipart "description" field */
	struct cat_label *labels; /* ?label= and multipart "label" fields (REQ_MAX_LABELS),
				   * allocated with the first: most requests have none */
	size_t nlabels;
	char *pending_label;   /* the multipart "label" field being received */
	char label_err[256];   /* the first bad label, "" when none */
};

/* ---- uploads -------------------------------------------------------------- */

static int spool_open(struct server *s, struct spool *sp)
{
	char dir[2048];

	cat_spool_dir(s->cat, dir, sizeof(dir));
	snprintf(sp->path, sizeof(sp->path), "%s/upload-XXXXXX", dir);
	sp->fd = mkostemp(sp->path, O_CLOEXEC);
	if (sp->fd < 0)
		sp->path[0] = '\0';
	return sp->fd < 0 ? -1 : 0;
}

/* Closes the file; a spool whose path is still set is removed by req_free. */
static int spool_close(struct spool *sp)
{
	int rc = 0;

	if (sp->fd >= 0)
		rc = close(sp->fd);
	sp->fd = -1;
	return rc;
}

/* Appends upload bytes to a spool file, enforcing --max-upload over the
 * whole request. */
static void spool_write(struct server *s, struct req *r, struct spool *sp, const char *data, size_t n)
{
	r->up->got += n;
	if (r->up->got > s->o->max_upload)
		r->up->too_big = 1;
	if (sp->fd < 0 && !r->up->too_big && spool_open(s, sp) != 0)
		r->up->write_failed = errno ? errno : EIO;
	while (n > 0 && !r->up->too_big && !r->up->write_failed) {
		ssize_t k = write(sp->fd, data, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r->up->write_failed = errno ? errno : EIO;
			break;
		}
		data += k;
		n -= (size_t)k;
		sp->size += (uint64_t)k;
	}
}

/* A label given at upload ("k=v"); the first bad one is kept to answer. */
static void add_label(struct req *r, const char *s)
{
	char err[256];

	if (r->up->label_err[0])
		return;
	if (r->up->nlabels == REQ_MAX_LABELS) {
		snprintf(r->up->label_err, sizeof(r->up->label_err), "a trace has at most %d labels", REQ_MAX_LABELS);
		return;
	}
	if (r->up->labels == NULL && (r->up->labels = calloc(REQ_MAX_LABELS, sizeof(*r->up->labels))) == NULL) {
		snprintf(r->up->label_err, sizeof(r->up->label_err), "the server ran out of memory reading the labels");
		return;
	}
	if (cat_label_parse(s, 0, &r->up->labels[r->up->nlabels], err, sizeof(err)) != 0) {
		snprintf(r->up->label_err, sizeof(r->up->label_err), "%s", err);
		return;
	}
	r->up->nlabels++;
}

/* Multipart text fields: name, description and label (repeatable). MHD
 * may hand a field over in pieces (off > 0): they are appended. */
static void small_field(struct req *r, const char *key, const char *data, uint64_t off, size_t size)
{
	char **dst = strcmp(key, "name") == 0 ? &r->up->name : strcmp(key, "description") == 0 ? &r->up->description
											     : &r->up->pending_label;
	size_t have = *dst && off ? strlen(*dst) : 0;
	char *p;

	if (have + size > CAT_MAX_DESCRIPTION + 1) {
		if (dst == &r->up->pending_label && off == 0)
			snprintf(r->up->label_err, sizeof(r->up->label_err), "a label is at most %d bytes", CAT_MAX_VALUE);
		return;
	}
	if (off == 0 && dst == &r->up->pending_label && r->up->pending_label) {
		add_label(r, r->up->pending_label); /* the previous label field is complete */
		free(r->up->pending_label);
		r->up->pending_label = NULL;
		have = 0;
	}
	if (off == 0 && *dst) {
		free(*dst);
		*dst = NULL;
	}
	if (off == 0 && r->up->grow_id > 0) { /* the last of a field wins, as at an upload's end */
		r->up->name_after |= dst == &r->up->name;
		r->up->desc_after |= dst == &r->up->description;
	}
	if ((p = realloc(*dst, have + size + 1)) == NULL)
		return;
	memcpy(p + have, data, size);
	p[have + size] = '\0';
	*dst = p;
}

/* Multipart fields: "file" (the trace) and "binary" (an XRay instrumented
 * binary or symbol map) are streamed to spool files; "name", "description"
 * and "label" describe the trace. */
static enum MHD_Result post_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
				  const char *content_type, const char *encoding, const char *data, uint64_t off,
				  size_t size)
{
	struct req *r = cls;
	struct spool *sp = strcmp(key, "file") == 0 ? &r->up->file : strcmp(key, "binary") == 0 ? &r->up->binary : NULL;

	(void)kind;
	(void)content_type;
	(void)encoding;
	if (sp) {
		if (sp == &r->up->file && r->up->filename == NULL && filename)
			r->up->filename = strdup(filename);
		if (sp == &r->up->binary && r->up->binary_filename == NULL && filename)
			r->up->binary_filename = strdup(filename);
		sp->seen = 1;
		spool_write(r->srv, r, sp, data, size);
		return r->up->too_big || r->up->write_failed ? MHD_NO : MHD_YES;
	}
	if (strcmp(key, "name") == 0 || strcmp(key, "description") == 0 || strcmp(key, "label") == 0)
		small_field(r, key, data, off, size);
	return MHD_YES;
}

static enum MHD_Result send_too_big(struct server *s, struct MHD_Connection *c, struct req *r)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "the upload is larger than this server's limit of %" PRIu64 " bytes",
		 s->o->max_upload);
	return srv_send_error(c, r, 413, "upload_too_large", msg);
}

static enum MHD_Result query_label(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	(void)kind;
	if (strcmp(k, "label") == 0)
		add_label(cls, v ? v : "");
	return MHD_YES;
}

/* POST /api/traces?live=1: the trace is made now, from the query's name,
 * description and labels, and listed with status "live". */
static enum MHD_Result live_begin(struct server *s, struct MHD_Connection *c, struct req *r, const char *fmt)
{
	const char *qname = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
	const char *qdesc = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "description");
	struct cat_new nw = { 0 };
	char err[256];

	if (qdesc && cat_text_check("description", qdesc, CAT_MAX_DESCRIPTION, 1, err, sizeof(err)) != 0)
		return srv_send_error(c, r, 400, "bad_parameter", err);
	if ((r->up->live = calloc(1, sizeof(*r->up->live))) == NULL)
		return MHD_NO;
	r->up->live->fd = -1;
	nw.name = qname ? qname : "live";
	nw.description = qdesc;
	nw.labels = r->up->labels;
	nw.nlabels = r->up->nlabels;
	nw.format_hint = fmt && strcmp(fmt, "xray") == 0 ? "xray-fdr" : fmt;
	if ((r->up->live->id = cat_live_open(s->cat, &nw, &r->up->live->fd, err, sizeof(err))) < 0) {
		snprintf(r->up->live->err, sizeof(r->up->live->err), "%s", err);
		if (r->up->live->id == CAT_EUNAVAILABLE)
			return srv_send_error(c, r, 503, "catalog_unavailable", r->up->live->err);
		return srv_send_error(c, r, r->up->live->id == CAT_EINVAL ? 400 : 507,
				      r->up->live->id == CAT_EINVAL ? "bad_parameter" : "storage_failed", r->up->live->err);
	}
	return MHD_YES;
}

/* The first call of POST /api/traces or POST /api/traces/{id}/symbols. */
enum MHD_Result srv_upload_begin(struct server *s, struct MHD_Connection *c, struct req *r, int64_t symbols_for)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	const char *live;
	int64_t n;

	r->kind = RQ_UPLOAD;
	if ((r->up = calloc(1, sizeof(*r->up))) == NULL)
		return MHD_NO;
	r->up->file.fd = -1;
	r->up->binary.fd = -1;
	r->up->symbols_for = symbols_for;
	if (symbols_for == 0) {
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_label, r);
		if (r->up->label_err[0])
			return srv_send_error(c, r, 400, "bad_label", r->up->label_err);
	}
	if (symbols_for > 0 && cat_status(s->cat, symbols_for) < 0)
		return srv_send_error(c, r, 404, "not_found", "there is no trace with this id");
	if (fmt && strcmp(fmt, "fxt") != 0 && strcmp(fmt, "xray") != 0)
		return srv_send_error(c, r, 400, "bad_parameter", "'format' must be fxt or xray");
	if (len && srv_parse_i64(len, 0, INT64_MAX, &n) == 0 && (uint64_t)n > s->o->max_upload) {
		r->up->too_big = 1;
		return send_too_big(s, c, r);
	}
	if (len && srv_parse_i64(len, 0, INT64_MAX, &n) == 0)
		r->up->total = (uint64_t)n;
	if (symbols_for == 0 && (live = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "live")) != NULL &&
	    strcmp(live, "0") != 0) {
		if (strcmp(live, "1") != 0)
			return srv_send_error(c, r, 400, "bad_parameter", "'live' must be 1 or 0");
		if (type && strncasecmp(type, "multipart/form-data", 19) == 0)
			return srv_send_error(c, r, 400, "bad_parameter",
					  "a live stream is the trace's bytes as the body, not a multipart form");
		return live_begin(s, c, r, fmt);
	}
	if (type && strncasecmp(type, "multipart/form-data", 19) == 0) {
		if ((r->up->pp = MHD_create_post_processor(c, 65536, post_field, r)) == NULL)
			return srv_send_error(c, r, 400, "bad_multipart",
					  "the multipart/form-data body has no usable boundary");
		r->up->multipart = 1;
	}
	return MHD_YES;
}

/* MHD cannot answer before the body is read (it would drop the connection
 * without a reply), so an error found mid-body drops the files at once and
 * is answered when the body ends; the rest of the body is read and thrown
 * away, up to a bound past which the connection is closed. */
static void live_end(struct req *r, int complete)
{
	if (r->up == NULL || r->up->live == NULL || r->up->live->fd < 0)
		return;
	close(r->up->live->fd);
	r->up->live->fd = -1;
	cat_live_close(r->srv->cat, r->up->live->id, complete);
}

/* A growing upload's body ended (complete), or did not: its trace is
 * then deleted. */
static void upload_grow_end(struct req *r, int complete)
{
	if (r->up == NULL || r->up->grow_id == 0)
		return;
	spool_close(&r->up->file);
	cat_upload_close(r->srv->cat, r->up->grow_id, complete);
	r->up->grow_id = 0;
}

static void upload_fail(struct req *r, unsigned status, const char *code, const char *msg)
{
	if (r->up->fail_status)
		return;
	live_end(r, 0); /* the trace keeps what was received */
	upload_grow_end(r, 0); /* an upload's does not */
	r->up->fail_status = status;
	r->up->fail_at = r->up->got;
	r->up->fail_code = code;
	r->up->fail_msg = msg;
	spool_close(&r->up->file);
	spool_close(&r->up->binary);
	if (r->up->file.path[0])
		unlink(r->up->file.path);
	if (r->up->binary.path[0])
		unlink(r->up->binary.path);
	r->up->file.path[0] = r->up->binary.path[0] = '\0';
}

enum { DISCARD_MAX = 256 << 20 };

/* A piece of a live stream: appended to the trace's source, and the catalog
 * told. Bytes that cannot be written end the stream; the trace keeps what
 * it had. */
static void live_chunk(struct server *s, struct req *r, const char *data, size_t n)
{
	struct live_up *lv = r->up->live;
	int rc;

	r->up->got += n;
	if (r->up->got > s->o->max_upload) {
		upload_fail(r, 413, "upload_too_large",
			    "the stream is longer than this server's limit (--max-upload); the trace keeps what came "
			    "before");
		return;
	}
	while (n > 0) {
		ssize_t k = write(lv->fd, data, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = errno;

			upload_fail(r, e == ENOSPC ? 507 : 500, "storage_failed",
				    e == ENOSPC ? "the server's disk is full; the trace keeps what came before"
						: "the server could not write the stream; the trace keeps what came before");
			return;
		}
		data += k;
		n -= (size_t)k;
		lv->size += (uint64_t)k;
	}
	rc = cat_live_grew(s->cat, lv->id, lv->size, lv->err, sizeof(lv->err));
	if (rc == CAT_ENOTRACE)
		upload_fail(r, 404, "not_found", "the trace was deleted while it was streamed");
	else if (rc == CAT_EBADTRACE)
		upload_fail(r, 422, "not_a_trace", lv->err);
}

/* The name a new upload takes: ?name=, else its form's "name" field, else
 * the file's name (cut to what a name holds), else "upload". */
static const char *upload_name(struct MHD_Connection *c, struct req *r)
{
	const char *qname = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");

	if (qname)
		return qname;
	if (r->up->name)
		return r->up->name;
	if (r->up->filename == NULL)
		return "upload";
	if (strlen(r->up->filename) > CAT_MAX_NAME) /* a file's name, not one the user gave */
		r->up->filename[utf8_cut(r->up->filename, strlen(r->up->filename), CAT_MAX_NAME)] = '\0';
	return r->up->filename;
}

/* Its form's "label" field still being received is whole. */
static void label_done(struct req *r)
{
	if (r->up->pending_label) {
		add_label(r, r->up->pending_label);
		free(r->up->pending_label);
		r->up->pending_label = NULL;
	}
}

/*
 * An upload's trace bytes so far (a raw body's, or its form's "file"
 * field's): once its first bytes are there, whether it grows from them
 * (catalog.h, cat_upload_grows), recorded then; after, the catalog is told
 * how far it got. A form's length is its body's, fields and all, until
 * the body ends (upload_grow_done).
 */
static void upload_grow(struct server *s, struct MHD_Connection *c, struct req *r)
{
	enum { HEAD = 64 }; /* bytes its format is told from (cat_upload_grows) */
	struct upload *up = r->up;
	char err[256];

	if (up->grow_id > 0) {
		/* a failed ingest is said when the body ends, as an upload's is */
		if (cat_upload_grew(s->cat, up->grow_id, up->file.size) == CAT_ENOTRACE)
			upload_fail(r, 404, "not_found", "the trace was deleted while it was uploaded");
		return;
	}
	if (up->grow_decided || up->file.size < HEAD || up->total == 0)
		return;
	up->grow_decided = 1;
	if (up->multipart)
		label_done(r); /* the file's part began: a label field before it is whole */
	{
		const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
		const char *qdesc = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "description");
		const char *desc = qdesc ? qdesc : up->description;
		const char *hint = fmt && strcmp(fmt, "xray") == 0 ? "xray-fdr" : fmt;
		struct cat_new nw = { 0 };
		uint8_t head[HEAD];
		int64_t id;

		if (up->binary.seen || pread(up->file.fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
		    !cat_upload_grows(s->cat, up->total, hint, head, sizeof(head)) || up->label_err[0] ||
		    (desc && cat_text_check("description", desc, CAT_MAX_DESCRIPTION, 1, err, sizeof(err)) != 0))
			return; /* recorded when it ends, as any upload (which answers what was wrong) */
		nw.name = upload_name(c, r);
		nw.description = desc;
		nw.labels = up->labels;
		nw.nlabels = up->nlabels;
		nw.spool = up->file.path;
		nw.size = up->total;
		nw.arrived = up->file.size;
		nw.format_hint = hint;
		if ((id = cat_add(s->cat, &nw, err, sizeof(err))) < 0)
			return; /* tried again as a whole upload at its end */
		up->grow_id = id;
		up->grow_labels = up->nlabels;
		up->file.path[0] = '\0'; /* the trace's source now: appended to through the same descriptor */
	}
}

/*
 * A growing upload's body ended whole: its trace is told its length, and a
 * form's fields that came after its file (name, description, labels) are
 * applied, as they would have been had it been recorded now. NULL, or the
 * error to answer (*status, *code; the message in err), the trace then
 * deleted.
 */
static const char *upload_grow_done(struct MHD_Connection *c, struct req *r, unsigned *status, char *err,
				    size_t errlen)
{
	struct upload *up = r->up;
	const char *qname = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
	const char *qdesc = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "description");
	struct cat_patch p = { .pinned = -1 };
	int rc;

	*status = 400;
	if (!up->multipart)
		return NULL;
	label_done(r);
	if (up->label_err[0]) {
		snprintf(err, errlen, "%s", up->label_err);
		return "bad_label";
	}
	if (!qname && up->name_after && up->name)
		p.name = up->name;
	if (!qdesc && up->desc_after && up->description)
		p.description = up->description;
	p.set = up->labels + up->grow_labels;
	p.nset = up->nlabels - up->grow_labels;
	if ((p.name || p.description || p.nset) && (rc = cat_patch(r->srv->cat, up->grow_id, &p, err, errlen)) != 0) {
		/* as the same fields would be answered at an upload's end (upload_end) */
		*status = rc == CAT_EINVAL || rc == CAT_ELABELS ? 400 : rc == CAT_ENOTRACE ? 404
			: rc == CAT_EUNAVAILABLE ? 503 : 507;
		return rc == CAT_EINVAL ? "bad_parameter" : rc == CAT_ELABELS ? "bad_label"
			: rc == CAT_ENOTRACE ? "not_found" : rc == CAT_EUNAVAILABLE ? "catalog_unavailable"
			: "storage_failed";
	}
	if (cat_upload_length(r->srv->cat, up->grow_id, up->file.size) != 0) {
		*status = 404;
		snprintf(err, errlen, "the trace was deleted while it was uploaded");
		return "not_found";
	}
	return NULL;
}

static enum MHD_Result upload_chunk(struct server *s, struct MHD_Connection *c, struct req *r, const char *data,
				    size_t n)
{
	if (r->status)
		return MHD_YES; /* answered before the body: MHD discards it */
	if (r->up->fail_status) {
		r->up->got += n;
		return r->up->got - r->up->fail_at > DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	if (r->up->live) {
		live_chunk(s, r, data, n);
		return MHD_YES;
	}
	if (r->up->pp) {
		if (MHD_post_process(r->up->pp, data, n) != MHD_YES && !r->up->too_big && !r->up->write_failed)
			upload_fail(r, 400, "bad_multipart", "the multipart/form-data body is malformed");
		else if (r->up->file.seen && r->up->symbols_for == 0 && !r->up->too_big && !r->up->write_failed &&
			 !r->up->fail_status)
			upload_grow(s, c, r);
	} else {
		r->up->file.seen = 1;
		spool_write(s, r, r->up->symbols_for > 0 ? &r->up->binary : &r->up->file, data, n);
		if (r->up->symbols_for == 0 && !r->up->too_big && !r->up->write_failed)
			upload_grow(s, c, r);
	}
	if (r->up->too_big)
		upload_fail(r, 413, "upload_too_large", "the upload is larger than this server's limit (--max-upload)");
	if (r->up->write_failed)
		upload_fail(r, r->up->write_failed == ENOSPC ? 507 : 500, "storage_failed",
			    r->up->write_failed == ENOSPC ? "the server's disk is full; the upload was not stored"
						     : "the server could not write the upload");
	return MHD_YES;
}

static enum MHD_Result upload_answer(struct server *s, struct MHD_Connection *c, struct req *r, int64_t id)
{
	struct MHD_Response *resp;
	struct jbuf b;
	char loc[64];
	int st = cat_status(s->cat, id);
	size_t len;
	char *body;
	enum MHD_Result ret;
	unsigned code;

	jb_init(&b);
	if (r->up->suspended || MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait")) {
		/* gone before its status, or between its status and its object
		 * (a failed trace past --keep-failed is removed at any moment) */
		int rc = st < 0 ? CAT_ENOTRACE : cat_json(s->cat, id, &b);

		if (rc != CAT_OK) {
			jb_fini(&b);
			return srv_send_trace_error(c, r, rc, "the trace was deleted before its ingest ended");
		}
		code = st == TS_READY ? 201 : st == TS_FAILED ? 422 : 202;
	} else {
		jb_obj(&b);
		jb_key(&b, "id");
		jb_i64(&b, id);
		jb_key(&b, "status");
		jb_str(&b, cat_status_name(st));
		jb_obj_end(&b);
		code = 202;
	}
	if ((body = jb_take(&b, &len)) == NULL ||
	    (resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)) == NULL) {
		free(body);
		return MHD_NO;
	}
	snprintf(loc, sizeof(loc), "/api/traces/%" PRId64, id);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Location", loc);
	ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	r->status = code;
	r->bytes = len;
	return ret;
}

/* POST /api/traces/{id}/symbols has ended: name the trace's functions. */
/* The symbols file's name: the multipart file name, else ?filename= (a raw
 * body has none). */
static const char *symbols_filename(struct MHD_Connection *c, const struct req *r)
{
	const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "filename");

	return r->up->binary_filename ? r->up->binary_filename : q;
}

static enum MHD_Result symbols_end(struct server *s, struct MHD_Connection *c, struct req *r)
{
	char err[256];
	struct jbuf b;

	if (r->up->binary.size == 0)
		return srv_send_error(c, r, 400, "empty_upload",
				  "send the instrumented binary or the YAML of llvm-xray extract --symbolize as the "
				  "body (or as multipart field 'binary')");
	if (cat_symbols(s->cat, r->up->symbols_for, r->up->binary.path, symbols_filename(c, r), err, sizeof(err)) != 0)
		return srv_send_error(c, r, 422, "bad_symbols", err);
	rc_drop_trace(&s->cache, r->up->symbols_for); /* names changed */
	r->up->binary.path[0] = '\0'; /* the catalog owns the file now */
	jb_init(&b);
	if (cat_json(s->cat, r->up->symbols_for, &b) != 0) {
		jb_fini(&b);
		return srv_send_error(c, r, 404, "not_found", "there is no trace with this id");
	}
	return srv_send_json(c, r, 200, &b);
}

/* The trace id was stored: answered now, or with ?wait=1 when its ingest
 * ends (the connection sleeps until then). */
static enum MHD_Result answer_or_wait(struct server *s, struct MHD_Connection *c, struct req *r, int64_t id)
{
	if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait")) {
		r->up->suspended = 1;
		r->up->wait_id = id;
		if (cat_wait(s->cat, id, c))
			return MHD_YES;
	}
	return upload_answer(s, c, r, id);
}

/* A live stream's body ended: its trace is ingested whole and becomes
 * ready (?wait=1 answers then). A stream that sent nothing leaves nothing. */
static enum MHD_Result live_body_end(struct server *s, struct MHD_Connection *c, struct req *r)
{
	int64_t id = r->up->live->id;

	if (r->up->live->size == 0) {
		close(r->up->live->fd);
		r->up->live->fd = -1;
		cat_delete(s->cat, id);
		return srv_send_error(c, r, 400, "empty_upload", "the stream ended before its first byte");
	}
	live_end(r, 1);
	return answer_or_wait(s, c, r, id);
}

static enum MHD_Result upload_end(struct server *s, struct MHD_Connection *c, struct req *r)
{
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	const char *qdesc = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "description");
	struct cat_new nw = { 0 };
	char err[256];
	int64_t id;

	if (r->up->suspended)
		return upload_answer(s, c, r, r->up->wait_id);
	if (r->status)
		return MHD_YES;
	if (r->up->pp)
		MHD_destroy_post_processor(r->up->pp);
	r->up->pp = NULL;
	if (r->up->fail_status)
		return srv_send_error(c, r, r->up->fail_status, r->up->fail_code, r->up->fail_msg);
	if (r->up->live)
		return live_body_end(s, c, r);
	if (r->up->grow_id > 0) { /* recorded at its first bytes: its body ended */
		unsigned status;
		const char *code;

		id = r->up->grow_id;
		if (spool_close(&r->up->file) != 0 || (!r->up->multipart && r->up->file.size != r->up->total)) {
			upload_grow_end(r, 0);
			return srv_send_error(c, r, 507, "storage_failed", "the server could not store the upload");
		}
		if ((code = upload_grow_done(c, r, &status, err, sizeof(err))) != NULL) {
			upload_grow_end(r, 0);
			return srv_send_error(c, r, status, code, err);
		}
		upload_grow_end(r, 1);
		return answer_or_wait(s, c, r, id);
	}
	if ((spool_close(&r->up->file) != 0 || spool_close(&r->up->binary) != 0) && !r->up->write_failed)
		r->up->write_failed = errno;
	if (r->up->write_failed)
		return srv_send_error(c, r, 507, "storage_failed", "the server could not store the upload");
	if (r->up->symbols_for > 0)
		return symbols_end(s, c, r);
	if (r->up->multipart && !r->up->file.seen)
		return srv_send_error(c, r, 400, "missing_file", "the multipart upload has no 'file' field");
	if (r->up->file.size == 0)
		return srv_send_error(c, r, 400, "empty_upload", "the upload is empty: send the trace file as the body");
	label_done(r);
	if (r->up->label_err[0])
		return srv_send_error(c, r, 400, "bad_label", r->up->label_err);
	nw.name = upload_name(c, r);
	nw.description = qdesc ? qdesc : r->up->description;
	/* a name is taken as it comes (it is only ever shown as text) */
	if (nw.description &&
	    cat_text_check("description", nw.description, CAT_MAX_DESCRIPTION, 1, err, sizeof(err)) != 0)
		return srv_send_error(c, r, 400, "bad_parameter", err);
	nw.labels = r->up->labels;
	nw.nlabels = r->up->nlabels;
	nw.spool = r->up->file.path;
	nw.size = r->up->file.size;
	nw.format_hint = fmt && strcmp(fmt, "xray") == 0 ? "xray-fdr" : fmt;
	nw.binary_spool = r->up->binary.size ? r->up->binary.path : NULL;
	nw.binary_filename = r->up->binary_filename;
	id = cat_add(s->cat, &nw, err, sizeof(err));
	if (id == CAT_EINVAL)
		return srv_send_error(c, r, 400, "bad_parameter", err);
	if (id == CAT_EUNAVAILABLE)
		return srv_send_error(c, r, 503, "catalog_unavailable", err);
	if (id == CAT_ESTOREDOWN)
		return srv_send_retry(c, r, "store_unavailable", err);
	if (id < 0) /* CAT_EFAIL */
		return srv_send_error(c, r, 507, "storage_failed", err);
	r->up->file.path[0] = '\0'; /* the catalog owns the files now */
	r->up->binary.path[0] = '\0';
	return answer_or_wait(s, c, r, id);
}


enum MHD_Result srv_upload_data(struct server *s, struct MHD_Connection *c, struct req *r, const char *data,
				size_t n)
{
	return n ? upload_chunk(s, c, r, data, n) : upload_end(s, c, r);
}

void srv_upload_cleanup(struct req *r)
{
	if (r->up == NULL)
		return;
	live_end(r, 0); /* the connection went away mid-stream */
	upload_grow_end(r, 0); /* ... or mid-upload: nothing is left */
	free(r->up->live);
	r->up->live = NULL;
	spool_close(&r->up->file);
	spool_close(&r->up->binary);
	if (r->up->file.path[0])
		unlink(r->up->file.path); /* an upload that did not finish leaves nothing behind */
	if (r->up->binary.path[0])
		unlink(r->up->binary.path);
	if (r->up->pp)
		MHD_destroy_post_processor(r->up->pp);
	r->up->pp = NULL;
	free(r->up->pending_label);
	r->up->pending_label = NULL;
	free(r->up->labels);
	free(r->up->filename);
	free(r->up->binary_filename);
	free(r->up->name);
	free(r->up->description);
	free(r->up);
	r->up = NULL;
}
