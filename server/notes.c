/*
 * Notes on traces over HTTP (docs/API.md, Notes): /api/traces/{id}/notes
 * and /api/notes. The catalog keeps them (catalog/notes.h); this file
 * parses, looks up in the trace's database the slice or track a note
 * names (the catalog never opens a trace's database), and answers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server_internal.h"
#include "../provider/utf8.h"

static const char *arg(const struct call *x, const char *key)
{
	return MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result note_error(struct call *x, int rc, const char *err)
{
	switch (rc) {
	case CAT_ENOTRACE:
		return srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
	case CAT_ENONOTE:
		return srv_send_error(x->c, x->r, 404, "not_found", "there is no note with this id");
	case CAT_ENOTREADY:
		return srv_send_error(x->c, x->r, 409, "not_ready", err);
	case CAT_EINVAL:
		return srv_send_error(x->c, x->r, 400, "bad_note", err);
	case CAT_EUNAVAILABLE:
		return srv_send_error(x->c, x->r, 503, "catalog_unavailable", err);
	default:
		return srv_send_error(x->c, x->r, 500, "storage_failed", err);
	}
}

/*
 * The raw text of member key of the JSON object in body (which cJSON has
 * parsed as one), when its value is a number: cJSON keeps numbers as
 * doubles, exact only up to 2^53, and times are 64-bit. NULL when absent.
 */
static const char *raw_number(const char *body, size_t len, const char *key, size_t *n)
{
	size_t i = 0, klen = strlen(key);
	int depth = 0;

	while (i < len) {
		char ch = body[i];

		if (ch == '"') {
			size_t s = ++i;

			while (i < len && body[i] != '"')
				i += body[i] == '\\' ? 2 : 1;
			if (i >= len)
				return NULL;
			i++;
			if (depth == 1 && i - 1 - s == klen && memcmp(body + s, key, klen) == 0) {
				while (i < len && strchr(" \t\r\n", body[i]))
					i++;
				if (i < len && body[i] == ':') {
					for (i++; i < len && strchr(" \t\r\n", body[i]); i++)
						;
					for (*n = 0; i + *n < len && strchr("-+0123456789.eE", body[i + *n]); (*n)++)
						;
					return *n ? body + i : NULL;
				}
			}
			continue;
		}
		depth += ch == '{' || ch == '[';
		depth -= ch == '}' || ch == ']';
		i++;
	}
	return NULL;
}

/* Member key as a 64-bit integer: 1 found (*v set), 0 absent (or null),
 * -1 not an integer (err says so). */
static int json_i64(const char *body, size_t len, cJSON *root, const char *key, int64_t *v, char *err, size_t errlen)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
	const char *raw;
	char buf[32], *end;
	size_t n;

	if (it == NULL || cJSON_IsNull(it))
		return 0;
	if (cJSON_IsNumber(it) && (raw = raw_number(body, len, key, &n)) != NULL && n < sizeof(buf)) {
		memcpy(buf, raw, n);
		buf[n] = '\0';
		errno = 0;
		*v = strtoll(buf, &end, 10);
		if (*end == '\0' && errno == 0)
			return 1;
	}
	snprintf(err, errlen, "'%s' must be an integer (nanoseconds or an id, 64-bit)", key);
	return -1;
}

static const char *json_str(cJSON *root, const char *key, int *bad)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);

	if (it == NULL || cJSON_IsNull(it))
		return NULL;
	if (!cJSON_IsString(it)) {
		*bad = 1;
		return NULL;
	}
	return it->valuestring;
}

/* The JSON object of the request's body, or NULL having answered 400/413. */
static cJSON *body_object(struct call *x, const char *example, enum MHD_Result *ret)
{
	cJSON *root = NULL;

	if (x->r->body_too_big) {
		*ret = srv_send_error(x->c, x->r, 413, "body_too_large", "the note is longer than 64 KiB");
		return NULL;
	}
	if (x->r->body == NULL || (root = cJSON_ParseWithLength(x->r->body, x->r->body_len)) == NULL ||
	    !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		*ret = srv_send_error(x->c, x->r, 400, "bad_json", example);
		return NULL;
	}
	return root;
}

/* Answers 400 when root has a member not in known. */
static int unknown_member(struct call *x, cJSON *root, const char *const *known, size_t n, const char *list,
			  enum MHD_Result *ret)
{
	char err[256];
	cJSON *it;
	size_t i;

	cJSON_ArrayForEach(it, root) {
		for (i = 0; i < n && strcmp(it->string, known[i]) != 0; i++)
			;
		if (i == n) {
			snprintf(err, sizeof(err), "a note has no member '%.*s': send %s",
				 (int)utf8_cut(it->string, strlen(it->string), 64), it->string, list);
			*ret = srv_send_error(x->c, x->r, 400, "bad_note", err);
			return 1;
		}
	}
	return 0;
}

/* Fills the range of a slice or track note from the trace's database;
 * 0, or -1 having answered. */
static int resolve_target(struct call *x, struct cat_note_in *n, enum MHD_Result *ret)
{
	struct qry_error e = { 0 };
	int64_t start, end;
	int down = 0, rc, began;
	sqlite3 *db;

	if ((rc = cat_note_target(x->s->cat, x->ids[0], &start, &end)) != 0) {
		*ret = note_error(x, rc, "notes go on a ready trace; this one is not ready");
		return -1;
	}
	if ((db = srv_trace_db(x->s, x->ids[0], &down)) == NULL) {
		*ret = down ? srv_send_retry(x->c, x->r, "store_unavailable", "the trace's database cannot be fetched")
			    : srv_send_error(x->c, x->r, 500, "io_error", "the trace's database cannot be opened");
		return -1;
	}
	began = qry_read_begin(db);
	if (n->slice)
		rc = qry_slice_span(db, n->slice, &n->track, &n->start_ns, &n->end_ns, &e);
	else
		rc = qry_track_exists(db, n->track, &e);
	qry_read_end(db, began);
	srv_trace_db_done(db);
	if (rc == QRY_ENOTFOUND) {
		*ret = srv_send_error(x->c, x->r, 400, "bad_note", e.msg);
		return -1;
	}
	if (rc != QRY_OK) {
		*ret = srv_send_error(x->c, x->r, 500, "query_failed", e.msg);
		return -1;
	}
	return 0;
}

/* POST /api/traces/{id}/notes */
enum MHD_Result srv_h_note_create(struct call *x)
{
	static const char *const known[] = { "text", "author", "start_ns", "end_ns", "track_id", "slice_id" };
	struct cat_note_in n = { 0 };
	const char *body = x->r->body;
	char err[256] = "";
	int got_s, got_e, got_t, got_sl, bad = 0, rc;
	enum MHD_Result ret;
	struct jbuf b;
	cJSON *root;

	if ((root = body_object(x, "send a JSON object, e.g. {\"text\": \"the GC stalls here\", \"author\": \"ana\", "
				   "\"start_ns\": 100, \"end_ns\": 200}",
				&ret)) == NULL)
		return ret;
	if (unknown_member(x, root, known, sizeof(known) / sizeof(known[0]),
			   "text, author, and start_ns and end_ns (with track_id) or slice_id", &ret))
		goto out;
	n.text = json_str(root, "text", &bad);
	n.author = json_str(root, "author", &bad);
	if (bad) {
		ret = srv_send_error(x->c, x->r, 400, "bad_note", "'text' and 'author' are strings");
		goto out;
	}
	if ((got_s = json_i64(body, x->r->body_len, root, "start_ns", &n.start_ns, err, sizeof(err))) < 0 ||
	    (got_e = json_i64(body, x->r->body_len, root, "end_ns", &n.end_ns, err, sizeof(err))) < 0 ||
	    (got_t = json_i64(body, x->r->body_len, root, "track_id", &n.track, err, sizeof(err))) < 0 ||
	    (got_sl = json_i64(body, x->r->body_len, root, "slice_id", &n.slice, err, sizeof(err))) < 0) {
		ret = srv_send_error(x->c, x->r, 400, "bad_note", err);
		goto out;
	}
	if (got_sl ? got_s || got_e || got_t : got_s != got_e || (got_t && !got_s)) {
		ret = srv_send_error(x->c, x->r, 400, "bad_note",
				     "a note is on the whole trace (no range), on start_ns and end_ns (both, with "
				     "an optional track_id), or on a slice_id alone");
		goto out;
	}
	if ((got_t && n.track <= 0) || (got_sl && n.slice <= 0)) {
		ret = srv_send_error(x->c, x->r, 400, "bad_note", "track and slice ids are positive integers");
		goto out;
	}
	n.has_range = got_s || got_sl;
	if ((got_sl || got_t) && resolve_target(x, &n, &ret) != 0)
		goto out;
	jb_init(&b);
	if ((rc = cat_note_add(x->s->cat, x->ids[0], &n, &b, err, sizeof(err))) != 0) {
		jb_fini(&b);
		ret = note_error(x, rc, err);
	} else {
		ret = srv_send_json(x->c, x->r, 201, &b);
	}
out:
	cJSON_Delete(root);
	return ret;
}

static enum MHD_Result send_notes(struct call *x, const struct cat_note_query *q)
{
	char err[256] = "";
	struct jbuf b;
	int rc;

	jb_init(&b);
	if ((rc = cat_notes_json(x->s->cat, q, &b, err, sizeof(err))) != 0) {
		jb_fini(&b);
		return note_error(x, rc, err);
	}
	return srv_send_json(x->c, x->r, 200, &b);
}

/* GET /api/traces/{id}/notes */
enum MHD_Result srv_h_notes_of_trace(struct call *x)
{
	struct cat_note_query q = { .trace = x->ids[0], .by_time = 1 };

	if (cat_status(x->s->cat, x->ids[0]) < 0)
		return srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
	return send_notes(x, &q);
}

/* GET /api/notes */
enum MHD_Result srv_h_notes(struct call *x)
{
	struct cat_note_query q = { 0 };

	if (srv_param_i64(x->c, x->r, "trace", 0, 1, INT64_MAX, &q.trace, 0) != 0 ||
	    srv_param_i64(x->c, x->r, "before", 0, 1, INT64_MAX, &q.before, 0) != 0 ||
	    srv_param_i64(x->c, x->r, "limit", CAT_NOTES_LIMIT, 1, CAT_NOTES_MAX, &q.limit, 0) != 0)
		return MHD_YES;
	q.author = arg(x, "author");
	q.q = arg(x, "q");
	if (q.q && q.q[0] == '\0')
		q.q = NULL;
	if (q.trace && cat_status(x->s->cat, q.trace) < 0)
		return srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
	return send_notes(x, &q);
}

/* GET /api/notes/{id} */
enum MHD_Result srv_h_note(struct call *x)
{
	char err[256] = "";
	struct jbuf b;
	int rc;

	jb_init(&b);
	if ((rc = cat_note_json(x->s->cat, x->ids[0], &b, err, sizeof(err))) != 0) {
		jb_fini(&b);
		return note_error(x, rc, err);
	}
	return srv_send_json(x->c, x->r, 200, &b);
}

/* PATCH /api/notes/{id}: {"text"} and/or {"author"} */
enum MHD_Result srv_h_note_edit(struct call *x)
{
	static const char *const known[] = { "text", "author" };
	const char *text, *author;
	char err[256] = "";
	enum MHD_Result ret;
	struct jbuf b;
	cJSON *root;
	int bad = 0, rc;

	if ((root = body_object(x, "send a JSON object, e.g. {\"text\": \"the GC, see bug 1234\"}", &ret)) == NULL)
		return ret;
	if (unknown_member(x, root, known, 2, "text and/or author (a note's place does not change)", &ret))
		goto out;
	text = json_str(root, "text", &bad);
	author = json_str(root, "author", &bad);
	if (bad) {
		ret = srv_send_error(x->c, x->r, 400, "bad_note", "'text' and 'author' are strings");
		goto out;
	}
	jb_init(&b);
	if ((rc = cat_note_edit(x->s->cat, x->ids[0], text, author, &b, err, sizeof(err))) != 0) {
		jb_fini(&b);
		ret = note_error(x, rc, err);
	} else {
		ret = srv_send_json(x->c, x->r, 200, &b);
	}
out:
	cJSON_Delete(root);
	return ret;
}

/* DELETE /api/notes/{id} */
enum MHD_Result srv_h_note_delete(struct call *x)
{
	char err[256] = "";
	int rc = cat_note_delete(x->s->cat, x->ids[0], err, sizeof(err));

	if (rc != 0)
		return note_error(x, rc, err);
	return srv_send_body(x->c, x->r, 204, strdup(""), 0, "application/json");
}
