/*
 * The API's routes: one table of (method, path pattern, handler), and the
 * handlers. A pattern's "{id}" segment is a positive 64-bit id (params.c
 * matches them); a path that matches a pattern under another method is
 * answered 405, a bad id 404.
 *
 * Two kinds of handler: plain ones answer by themselves; query ones run on
 * a ready trace's database (opened here, read-only, per thread) and append
 * JSON, which is answered and kept in the reply cache for the same GET.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "server_internal.h"
#include "../ingest/util.h"
#include "../provider/utf8.h"

/* One request on its way through a route. */
enum { ANSWERED = -1 }; /* a query handler answered (a bad parameter) itself */

struct route {
	const char *method;
	const char *pattern;
	enum MHD_Result (*fn)(struct call *x);                             /* plain */
	int (*query)(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e); /* on a ready trace */
	/* a route whose body is streamed (uploads, live streams): called on the
	 * request's first call, before any byte of the body; the pieces then go
	 * to srv_upload_data (http.c) */
	enum MHD_Result (*stream)(struct call *x);
};

static const char *arg(const struct call *x, const char *key)
{
	return MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, key);
}

/* ---- query handlers ------------------------------------------------------- */

static int q_tracks(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	(void)x;
	return qry_tracks(db, b, e);
}

static int q_slice(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	return qry_slice(db, x->ids[1], b, e);
}

static int q_track_window(struct call *x, int64_t *track, struct qry_window *w)
{
	return srv_param_i64(x->c, x->r, "track", 0, 1, INT64_MAX, track, 1) != 0 ||
			       srv_param_window(x->c, x->r, w) != 0 ?
		       -1 :
		       0;
}

/* format=rows (the default) or format=columns; answers 400 itself. */
static int slice_format(struct call *x, struct qry_window *w)
{
	const char *f = arg(x, "format");

	if (f == NULL || strcmp(f, "rows") == 0)
		return 0;
	if (strcmp(f, "columns") == 0) {
		w->columns = 1;
		return 0;
	}
	srv_send_error(x->c, x->r, 400, "bad_parameter", "'format' must be rows or columns");
	return -1;
}

/* Several tracks in one request: {"tracks": [reply of each, in the order
 * asked]}, the window and its limit applying to each. */
static int q_slices_batch(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };
	size_t n = 0, i;
	int64_t *tracks = srv_param_tracks(x->c, x->r, &n);
	int rc = QRY_OK;

	if (tracks == NULL || srv_param_window(x->c, x->r, &w) != 0 || slice_format(x, &w) != 0) {
		free(tracks);
		return ANSWERED;
	}
	jb_obj(b);
	jb_key(b, "tracks");
	jb_arr(b);
	for (i = 0; i < n && rc == QRY_OK; i++)
		rc = qry_slices(db, tracks[i], &w, b, e);
	jb_arr_end(b);
	jb_obj_end(b);
	free(tracks);
	return rc;
}

static int q_slices(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };
	int64_t track;

	if (arg(x, "tracks") != NULL && arg(x, "track") == NULL)
		return q_slices_batch(x, db, b, e);
	return q_track_window(x, &track, &w) != 0 || slice_format(x, &w) != 0 ? ANSWERED
									       : qry_slices(db, track, &w, b, e);
}

static int q_counters(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };
	int64_t track;

	return q_track_window(x, &track, &w) != 0 ? ANSWERED : qry_counters(db, track, &w, b, e);
}

static int q_flows(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };

	return srv_param_window(x->c, x->r, &w) != 0 ? ANSWERED : qry_flows(db, &w, b, e);
}

static int q_logs(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };

	return srv_param_window(x->c, x->r, &w) != 0 ? ANSWERED : qry_logs(db, &w, b, e);
}

static int q_stats(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };

	return srv_param_window(x->c, x->r, &w) != 0 ? ANSWERED : qry_stats(db, &w, b, e);
}

static int q_selection(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e, int flame)
{
	struct qry_window w = { 0 };
	size_t nt = 0;
	int64_t *tracks = srv_param_tracks(x->c, x->r, &nt);
	int rc;

	if (tracks == NULL || srv_param_window(x->c, x->r, &w) != 0) {
		free(tracks);
		return ANSWERED;
	}
	rc = flame ? qry_flame(db, tracks, nt, &w, b, e) : qry_area(db, tracks, nt, &w, arg(x, "name"), b, e);
	free(tracks);
	return rc;
}

static int q_area(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	return q_selection(x, db, b, e, 0);
}

static int q_flame(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	return q_selection(x, db, b, e, 1);
}

static int q_overview(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };
	int64_t n;

	if (srv_param_i64(x->c, x->r, "buckets", 400, 1, QRY_OVERVIEW_MAX_BUCKETS, &n, 0) != 0 ||
	    srv_param_window(x->c, x->r, &w) != 0)
		return ANSWERED;
	return qry_overview(db, &w, (uint32_t)n, b, e);
}

static int q_sched(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };
	int64_t cpu;

	if (srv_param_i64(x->c, x->r, "cpu", 0, 0, 65535, &cpu, 1) != 0 || srv_param_window(x->c, x->r, &w) != 0)
		return ANSWERED;
	return qry_sched(db, cpu, &w, b, e);
}

/* A required pid or tid: a decimal from 0 to 2^64 - 1 (FXT koids), kept
 * as its 64 bits; answers 400 itself. */
static int param_id(struct call *x, const char *key, int64_t *out)
{
	const char *s = arg(x, key);
	char msg[128];
	uint64_t v;

	if (s == NULL) {
		snprintf(msg, sizeof(msg), "the query parameter '%s' is required", key);
		srv_send_error(x->c, x->r, 400, "missing_parameter", msg);
		return -1;
	}
	if (srv_parse_u64(s, &v) != 0) {
		snprintf(msg, sizeof(msg), "the query parameter '%s' must be an integer from 0 to 18446744073709551615", key);
		srv_send_error(x->c, x->r, 400, "bad_parameter", msg);
		return -1;
	}
	*out = (int64_t)v;
	return 0;
}

/* GET /thread_states?pid=&tid=: one thread's states from its CPU runs. */
static int q_thread_states(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_window w = { 0 };
	int64_t pid, tid;

	if (param_id(x, "pid", &pid) != 0 || param_id(x, "tid", &tid) != 0 || srv_param_window(x->c, x->r, &w) != 0)
		return ANSWERED;
	return qry_thread_states(db, pid, tid, &w, b, e);
}

/* "ts:id" of a search page's last slice. */
static int parse_cursor(const char *s, int64_t *ts, int64_t *id)
{
	char buf[64];
	const char *colon = strchr(s, ':');

	if (colon == NULL || (size_t)(colon - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(colon - s));
	buf[colon - s] = '\0';
	return srv_parse_i64(buf, INT64_MIN, INT64_MAX, ts) == 0 && srv_parse_i64(colon + 1, 0, INT64_MAX, id) == 0
		       ? 0
		       : -1;
}

/* Where a search page starts: cursor=, before= or from= (at most one). */
static int search_position(struct call *x, struct qry_search_page *pg)
{
	const char *cur = arg(x, "cursor"), *before = arg(x, "before"), *from = arg(x, "from");

	if ((cur != NULL) + (before != NULL) + (from != NULL) > 1) {
		srv_send_error(x->c, x->r, 400, "bad_parameter", "give at most one of 'cursor', 'before' and 'from'");
		return -1;
	}
	if ((cur && parse_cursor(cur, &pg->at_ts, &pg->at_id) != 0) ||
	    (before && parse_cursor(before, &pg->at_ts, &pg->at_id) != 0)) {
		srv_send_error(x->c, x->r, 400, "bad_parameter",
			       "'cursor' and 'before' must be a next_cursor or prev_cursor of a previous page");
		return -1;
	}
	if (from && srv_param_i64(x->c, x->r, "from", 0, INT64_MIN, INT64_MAX, &pg->at_ts, 1) != 0)
		return -1;
	pg->at_id = from ? -1 : pg->at_id; /* strictly after (ts, -1): from ts on */
	pg->from = before ? QRY_SEARCH_BEFORE : cur || from ? QRY_SEARCH_AFTER : QRY_SEARCH_FIRST;
	return 0;
}

/* buckets=N with start= and end=: the histogram of the matches. */
static int search_histogram(struct call *x, struct qry_search_page *pg)
{
	int64_t n;

	if (srv_param_i64(x->c, x->r, "buckets", 0, 1, QRY_OVERVIEW_MAX_BUCKETS, &n, 0) != 0)
		return -1;
	if (arg(x, "buckets") == NULL)
		return 0;
	if (srv_param_i64(x->c, x->r, "start", 0, INT64_MIN, INT64_MAX, &pg->hist_start, 1) != 0 ||
	    srv_param_i64(x->c, x->r, "end", 0, INT64_MIN, INT64_MAX, &pg->hist_end, 1) != 0)
		return -1;
	if (pg->hist_end < pg->hist_start) {
		srv_send_error(x->c, x->r, 400, "bad_parameter", "'end' must not be before 'start'");
		return -1;
	}
	pg->buckets = (uint32_t)n;
	return 0;
}

static int q_search(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	struct qry_search_page pg = { 0 };
	const char *q = arg(x, "q");
	int64_t v;

	if (q == NULL || *q == '\0') {
		srv_send_error(x->c, x->r, 400, "missing_parameter", "the query parameter 'q' is required");
		return ANSWERED;
	}
	if (srv_param_i64(x->c, x->r, "limit", 1000, 1, QRY_MAX_LIMIT, &v, 0) != 0 || search_position(x, &pg) != 0 ||
	    search_histogram(x, &pg) != 0)
		return ANSWERED;
	pg.limit = (uint32_t)v;
	return qry_search(db, q, &pg, b, e);
}

static int q_sql(struct call *x, sqlite3 *db, struct jbuf *b, struct qry_error *e)
{
	if (x->r->body_too_big) {
		srv_send_error(x->c, x->r, 413, "body_too_large", "the SQL statement is longer than 64 KiB");
		return ANSWERED;
	}
	return qry_sql(db, x->r->body ? x->r->body : "", x->r->body_len, b, e);
}

/* The status of trace id when its database can be read (ready, or live
 * with a snapshot); else answers 404 or 409 and returns -1. */
static int need_readable(struct call *x, int64_t id)
{
	int readable, st = cat_readable(x->s->cat, id, &readable);

	if (st < 0) {
		srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
		return -1;
	}
	if (!readable) {
		srv_send_error(x->c, x->r, 409, "not_ready",
			       st == TS_FAILED ? "this trace failed to ingest; see its error"
			       : st == TS_LIVE ? "this live trace has received no whole record yet"
					       : "this trace is still being ingested");
		return -1;
	}
	return st;
}

/* Runs a query handler on the ready trace ids[0], through the reply cache. */
static enum MHD_Result run_query(struct call *x, const struct route *rt)
{
	struct qry_error err = { 0 };
	struct cache_key key;
	struct jbuf b;
	sqlite3 *db;
	int rc, began, cacheable = 0, st;

	if ((st = need_readable(x, x->ids[0])) < 0)
		return MHD_YES;
	/* a live trace's replies change with every snapshot: never cached */
	if (st == TS_READY && strcmp(x->method, "GET") == 0 && srv_cache_key(x->c, x->r->path, &key) == 0) {
		size_t bytes = 0;
		int served = rc_serve(&x->s->cache, key.buf, x->c, &bytes);

		if (served != 0) {
			x->r->status = served > 0 ? 200 : 0;
			x->r->bytes = bytes;
			return served > 0 ? MHD_YES : MHD_NO;
		}
		cacheable = 1;
	}
	if ((db = srv_trace_db(x->s, x->ids[0], &st)) == NULL) {
		if (cat_status(x->s->cat, x->ids[0]) < 0) /* deleted since we looked */
			return srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
		if (st)
			return srv_send_retry(x->c, x->r, "store_unavailable",
					      "the trace is not cached here and the object store cannot be reached");
		return srv_send_error(x->c, x->r, 500, "database_error", "the trace's database cannot be opened");
	}
	jb_init(&b);
	began = qry_read_begin(db); /* every statement of the reply reads one snapshot */
	rc = rt->query(x, db, &b, &err);
	qry_read_end(db, began);
	srv_trace_db_done(db);
	if (rc != QRY_OK) {
		jb_fini(&b);
		return rc == ANSWERED ? MHD_YES : srv_send_qry_error(x->c, x->r, &err);
	}
	return srv_send_cached_json(x->s, x->c, x->r, x->ids[0], cacheable ? &key : NULL, &b);
}

/* ---- traces ----------------------------------------------------------------- */

/* GET /api/traces: filters, sort, pages (docs/API.md). */
static enum MHD_Result h_list(struct call *x)
{
	struct cat_filter *f = calloc(1, sizeof(*f));
	const char *s;
	char err[256];
	struct jbuf b;
	int64_t v;
	enum MHD_Result ret;
	int rc;

	if (f == NULL)
		return srv_send_error(x->c, x->r, 500, "out_of_memory", "the server ran out of memory");
	if (srv_library_filter(x, f) != 0)
		goto answered;
	if (srv_param_i64(x->c, x->r, "limit", CAT_LIST_MAX, 1, CAT_LIST_MAX, &v, 0) != 0)
		goto answered;
	f->limit = (size_t)v;
	if ((s = arg(x, "sort")) == NULL)
		s = "-created";
	f->desc = s[0] == '-';
	s += f->desc;
	if (strcmp(s, "created") == 0)
		f->sort = CAT_SORT_CREATED;
	else if (strcmp(s, "name") == 0)
		f->sort = CAT_SORT_NAME;
	else if (strcmp(s, "size") == 0)
		f->sort = CAT_SORT_SIZE;
	else if (strcmp(s, "duration") == 0)
		f->sort = CAT_SORT_DURATION;
	else {
		ret = srv_send_error(x->c, x->r, 400, "bad_parameter",
				     "'sort' must be created, name, size or duration, with '-' before it for "
				     "descending");
		goto out;
	}
	f->cursor = arg(x, "cursor");
	jb_init(&b);
	if ((rc = cat_list_json(x->s->cat, f, &b, err, sizeof(err))) != 0) {
		jb_fini(&b);
		/* CAT_EINVAL, and also (as it always was) CAT_EFAIL: the notes'
		 * counts that could not be read, or memory */
		ret = rc == CAT_EUNAVAILABLE ? srv_send_error(x->c, x->r, 503, "catalog_unavailable", err)
					     : srv_send_error(x->c, x->r, 400, "bad_cursor", err);
		goto out;
	}
	ret = srv_send_json(x->c, x->r, 200, &b);
out:
	free(f);
	return ret;
answered:
	free(f);
	return MHD_YES;
}

static enum MHD_Result h_trace(struct call *x)
{
	struct jbuf b;

	int rc;

	jb_init(&b);
	if ((rc = cat_json(x->s->cat, x->ids[0], &b)) != 0) {
		jb_fini(&b);
		return srv_send_trace_error(x->c, x->r, rc, "there is no trace with this id");
	}
	return srv_send_json(x->c, x->r, 200, &b);
}

static enum MHD_Result h_delete(struct call *x)
{
	int rc = cat_delete(x->s->cat, x->ids[0]);

	if (rc == CAT_EUNAVAILABLE)
		return srv_send_error(x->c, x->r, 503, "catalog_unavailable", CATALOG_DOWN);
	if (rc == CAT_EFAIL)
		return srv_send_error(x->c, x->r, 500, "storage_failed", "the catalog could not be written");
	if (rc != 0)
		return srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
	rc_drop_trace(&x->s->cache, x->ids[0]); /* its connections went with its record (db_gone) */
	/* what its connections, its cached replies and the requests that read
	 * it held goes back to the system now, not at the arenas' trim
	 * threshold (main.c) */
	tracedb_release_cache();
	heap_release();
	return srv_send_body(x->c, x->r, 204, strdup(""), 0, "application/json");
}

/*
 * PATCH /api/traces/{id}: a JSON merge patch (RFC 7396) of name,
 * description, pinned and labels (a label set to null is removed). Every
 * member is checked before anything changes.
 */
static enum MHD_Result h_patch(struct call *x)
{
	static const char *const known[] = { "name", "description", "pinned", "labels" };
	struct cat_patch p = { .pinned = -1 };
	struct cat_label *set = NULL;
	const char **unset = NULL;
	char err[256] = "", buf[CAT_MAX_KEY + CAT_MAX_VALUE + 2];
	cJSON *root = NULL, *it;
	enum MHD_Result ret;
	size_t i;
	int rc;

	if (x->r->body_too_big)
		return srv_send_error(x->c, x->r, 413, "body_too_large", "the patch is longer than 64 KiB");
	if (x->r->body == NULL || (root = cJSON_ParseWithLength(x->r->body, x->r->body_len)) == NULL ||
	    !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return srv_send_error(x->c, x->r, 400, "bad_json", "send a JSON object, e.g. {\"name\": \"nightly\", "
								    "\"labels\": {\"build\": \"1234\"}}");
	}
	cJSON_ArrayForEach(it, root) {
		for (i = 0; i < sizeof(known) / sizeof(known[0]) && strcmp(it->string, known[i]) != 0; i++)
			;
		if (i == sizeof(known) / sizeof(known[0])) {
			snprintf(err, sizeof(err), "'%.*s' cannot be changed: send name, description, pinned or labels",
				 (int)utf8_cut(it->string, strlen(it->string), 64), it->string);
			goto bad;
		}
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "name")) != NULL) {
		if (!cJSON_IsString(it) || it->valuestring[0] == '\0') {
			snprintf(err, sizeof(err), "'name' must be a non-empty string");
			goto bad;
		}
		if (strlen(it->valuestring) > CAT_MAX_NAME) {
			snprintf(err, sizeof(err), "'name' is longer than %d bytes", CAT_MAX_NAME);
			goto bad;
		}
		p.name = it->valuestring;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "description")) != NULL) {
		if (!cJSON_IsString(it) && !cJSON_IsNull(it)) {
			snprintf(err, sizeof(err), "'description' must be a string (or null to clear it)");
			goto bad;
		}
		p.description = cJSON_IsNull(it) ? "" : it->valuestring;
		if (cat_text_check("description", p.description, CAT_MAX_DESCRIPTION, 1, err, sizeof(err)) != 0)
			goto bad;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "pinned")) != NULL) {
		if (!cJSON_IsBool(it)) {
			snprintf(err, sizeof(err), "'pinned' must be true or false");
			goto bad;
		}
		p.pinned = cJSON_IsTrue(it);
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "labels")) != NULL) {
		size_t n = (size_t)cJSON_GetArraySize(it);
		cJSON *l;

		if (!cJSON_IsObject(it)) {
			snprintf(err, sizeof(err), "'labels' must be an object of key: value (null removes a label)");
			goto bad;
		}
		set = calloc(n + 1, sizeof(*set));
		unset = calloc(n + 1, sizeof(*unset));
		if (set == NULL || unset == NULL) {
			snprintf(err, sizeof(err), "out of memory");
			goto bad;
		}
		cJSON_ArrayForEach(l, it) {
			if (cJSON_IsNull(l)) {
				struct cat_label tmp;

				if (cat_label_parse(l->string, 1, &tmp, err, sizeof(err)) != 0)
					goto bad;
				unset[p.nunset++] = l->string;
				continue;
			}
			if (!cJSON_IsString(l)) {
				snprintf(err, sizeof(err), "the value of label '%.*s' must be a string or null",
					 (int)utf8_cut(l->string, strlen(l->string), 64), l->string);
				goto bad;
			}
			snprintf(buf, sizeof(buf), "%s=%s", l->string, l->valuestring);
			if (strlen(l->string) > CAT_MAX_KEY || strlen(l->valuestring) > CAT_MAX_VALUE ||
			    cat_label_parse(buf, 0, &set[p.nset], err, sizeof(err)) != 0) {
				if (err[0] == '\0')
					snprintf(err, sizeof(err), "label keys have at most %d bytes, values %d",
						 CAT_MAX_KEY, CAT_MAX_VALUE);
				goto bad;
			}
			p.nset++;
		}
		p.set = set;
		p.unset = unset;
	}
	rc = cat_patch(x->s->cat, x->ids[0], &p, err, sizeof(err));
	if (rc == CAT_ENOTRACE)
		ret = srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
	else if (rc == CAT_ELABELS)
		ret = srv_send_error(x->c, x->r, 400, "too_many_labels", err);
	else if (rc == CAT_EINVAL)
		ret = srv_send_error(x->c, x->r, 400, "bad_patch", err);
	else if (rc == CAT_EUNAVAILABLE)
		ret = srv_send_error(x->c, x->r, 503, "catalog_unavailable", err);
	else if (rc != 0)
		ret = srv_send_error(x->c, x->r, 500, "storage_failed", err);
	else
		ret = h_trace(x);
	goto out;
bad:
	ret = srv_send_error(x->c, x->r, 400, "bad_patch", err);
out:
	cJSON_Delete(root);
	free(set);
	free(unset);
	return ret;
}

static ssize_t source_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	long n = cat_source_read(cls, buf, max);

	(void)pos;
	return n > 0 ? (ssize_t)n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void source_free(void *cls)
{
	cat_source_close(cls);
}

/* GET /api/traces/{id}/file: the bytes as uploaded, sent from the file
 * when the source is kept so, else decompressed as they are sent
 * (constant memory). */
static enum MHD_Result h_file(struct call *x)
{
	char disp[320], err[512];
	struct MHD_Response *resp;
	struct cat_source *src = NULL;
	enum MHD_Result ret;
	uint64_t size;
	int fd, rc = CAT_ENOTRACE;

	if (cat_status(x->s->cat, x->ids[0]) >= 0)
		src = cat_source_open(x->s->cat, x->ids[0], &rc, err, sizeof(err));
	if (src == NULL && rc == CAT_ESTOREDOWN)
		return srv_send_retry(x->c, x->r, "store_unavailable", err);
	if (src == NULL && rc == CAT_EFAIL)
		fprintf(stderr, "trace-server: trace %" PRId64 "'s source: %s\n", x->ids[0], err);
	if (src == NULL && rc == CAT_EFAIL)
		return srv_send_error(x->c, x->r, 500, "io_error", "the trace's file cannot be read");
	if (src == NULL || cat_status(x->s->cat, x->ids[0]) < 0) {
		cat_source_close(src);
		return srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id");
	}
	size = cat_source_size(src);
	if ((fd = cat_source_take_fd(src)) >= 0) {
		cat_source_close(src);
		resp = MHD_create_response_from_fd(size, fd);
		if (resp == NULL)
			close(fd);
	} else {
		resp = MHD_create_response_from_callback(size == UINT64_MAX ? MHD_SIZE_UNKNOWN : size, 65536,
							 source_read, src, source_free);
		if (resp == NULL)
			cat_source_close(src);
	}
	if (resp == NULL)
		return srv_send_error(x->c, x->r, 500, "io_error", "the trace's file cannot be read");
	snprintf(disp, sizeof(disp), "attachment; filename=\"trace-%" PRId64 ".bin\"", x->ids[0]);
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	MHD_add_response_header(resp, "Content-Disposition", disp);
	x->r->status = 200;
	x->r->bytes = (size_t)size;
	ret = MHD_queue_response(x->c, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static ssize_t export_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	long n = qry_export_read(cls, buf, max);

	(void)pos;
	return n > 0 ? (ssize_t)n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void export_free(void *cls)
{
	qry_export_close(cls);
}

/* The name of the binary that named an XRay trace's functions (caller
 * frees), or NULL: the export names the unnamed process by it, as the
 * viewer does. */
static char *xray_program(struct call *x)
{
	struct jbuf b;
	cJSON *j;
	const char *fmt, *bin;
	char *out = NULL;

	jb_init(&b);
	if (cat_json(x->s->cat, x->ids[0], &b) == 0 && !b.oom && (j = cJSON_ParseWithLength(b.p, b.len)) != NULL) {
		fmt = cJSON_GetStringValue(cJSON_GetObjectItem(j, "format"));
		bin = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "symbols"), "binary"));
		if (fmt && strcmp(fmt, "xray-fdr") == 0 && bin)
			out = strdup(bin);
		cJSON_Delete(j);
	}
	jb_fini(&b);
	return out;
}

/* GET /api/traces/{id}/export?format=chrome-json: streamed, constant memory. */
static enum MHD_Result h_export(struct call *x)
{
	const char *fmt = arg(x, "format");
	struct qry_error err = { 0 };
	struct MHD_Response *resp;
	struct qry_export *e;
	char path[4096], disp[96], *program;
	enum MHD_Result ret;

	if (need_readable(x, x->ids[0]) < 0)
		return MHD_YES;
	if (fmt && strcmp(fmt, "chrome-json") != 0)
		return srv_send_error(x->c, x->r, 400, "bad_parameter", "'format' must be chrome-json");
	cat_path(x->s->cat, x->ids[0], "trace.db", path, sizeof(path));
	if (cat_fetch(x->s->cat, x->ids[0], "trace.db", disp, sizeof(disp)) == CAT_ESTOREDOWN)
		return srv_send_retry(x->c, x->r, "store_unavailable", disp);
	program = xray_program(x);
	e = qry_export_open(path, program, &err);
	free(program);
	if (e == NULL)
		return cat_status(x->s->cat, x->ids[0]) < 0
			       ? srv_send_error(x->c, x->r, 404, "not_found", "there is no trace with this id")
			       : srv_send_qry_error(x->c, x->r, &err);
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, export_read, e, export_free);
	if (resp == NULL) {
		qry_export_close(e);
		return MHD_NO;
	}
	snprintf(disp, sizeof(disp), "attachment; filename=\"trace-%" PRId64 ".json\"", x->ids[0]);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Content-Disposition", disp);
	ret = MHD_queue_response(x->c, 200, resp);
	MHD_destroy_response(resp);
	x->r->status = 200;
	return ret;
}

/* ---- the library ------------------------------------------------------------ */

/* Whether trace id is no longer one to read as growing (deleted, ready
 * now, or failed): a read of it that failed meanwhile is not an error. */
static int growing_gone(struct server *s, int64_t id)
{
	int readable, st = cat_readable(s->cat, id, &readable);

	return st < 0 || st == TS_READY || !readable;
}

/* A growing trace's names matching q, read from its database (the
 * catalog's index holds a trace once it is ready): cat_name_reader. */
static int search_growing(void *ctx, int64_t id, const char *q, int (*fn)(void *fctx, const struct qry_name_stat *s),
			  void *fctx, char *err, size_t errlen)
{
	struct qry_error e = { 0 };
	sqlite3 *db;
	int began, rc, st;

	if ((db = srv_trace_db(ctx, id, &st)) == NULL) {
		if (growing_gone(ctx, id))
			return 1;
		snprintf(err, errlen, "the database of trace %" PRId64 " cannot be opened", id);
		return -1;
	}
	began = qry_read_begin(db); /* one commit, from its first name to its last */
	rc = qry_name_stats_matching(db, q, fn, fctx, &e);
	qry_read_end(db, began);
	srv_trace_db_done(db);
	if (rc != QRY_OK) {
		if (growing_gone(ctx, id))
			return 1;
		snprintf(err, errlen, "trace %" PRId64 ": %s", id, e.msg);
		return -1;
	}
	return 0;
}

/* GET /api/search?q=: search across traces, from the catalog's name index
 * (and the growing traces' own databases). */
static enum MHD_Result h_search(struct call *x)
{
	const char *q = arg(x, "q");
	char err[256];
	struct jbuf b;
	int64_t limit;
	int rc;

	if (q == NULL || *q == '\0')
		return srv_send_error(x->c, x->r, 400, "missing_parameter", "the query parameter 'q' is required");
	if (strlen(q) > CAT_MAX_NAME)
		return srv_send_error(x->c, x->r, 400, "bad_parameter", "'q' is longer than 1024 bytes");
	if (srv_param_i64(x->c, x->r, "limit", 100, 1, CAT_LIST_MAX, &limit, 0) != 0)
		return MHD_YES;
	jb_init(&b);
	if ((rc = cat_search_json(x->s->cat, q, (size_t)limit, search_growing, x->s, &b, err, sizeof(err))) != 0) {
		jb_fini(&b);
		return rc == CAT_EUNAVAILABLE ? srv_send_error(x->c, x->r, 503, "catalog_unavailable", err)
					      : srv_send_error(x->c, x->r, 500, "catalog_error", err);
	}
	return srv_send_json(x->c, x->r, 200, &b);
}

static enum MHD_Result h_library(struct call *x)
{
	struct jbuf b;

	jb_init(&b);
	cat_usage_json(x->s->cat, &b);
	return srv_send_json(x->c, x->r, 200, &b);
}

/* The window of one side of a comparison: a_start/a_end or b_start/b_end. */
static int compare_window(struct call *x, char side, struct qry_window *w)
{
	char ks[16], ke[16];

	snprintf(ks, sizeof(ks), "%c_start", side);
	snprintf(ke, sizeof(ke), "%c_end", side);
	if (srv_param_i64(x->c, x->r, ks, INT64_MIN, INT64_MIN, INT64_MAX, &w->start, 0) != 0 ||
	    srv_param_i64(x->c, x->r, ke, INT64_MAX, INT64_MIN, INT64_MAX, &w->end, 0) != 0)
		return -1;
	if (w->end < w->start) {
		srv_send_error(x->c, x->r, 400, "bad_parameter", "a window's end must not be before its start");
		return -1;
	}
	return 0;
}

/* GET /api/compare?a=ID&b=ID: per name, the two traces side by side. */
static enum MHD_Result h_compare(struct call *x)
{
	struct qry_compare_opts o = { 0 };
	struct qry_error err = { 0 };
	const char *by = arg(x, "by"), *sort = arg(x, "sort");
	sqlite3 *da = NULL, *db = NULL;
	int64_t a, b, limit;
	struct jbuf out;
	int rc;

	if (srv_param_i64(x->c, x->r, "a", 0, 1, INT64_MAX, &a, 1) != 0 ||
	    srv_param_i64(x->c, x->r, "b", 0, 1, INT64_MAX, &b, 1) != 0 ||
	    srv_param_i64(x->c, x->r, "limit", 1000, 1, QRY_MAX_LIMIT, &limit, 0) != 0 ||
	    compare_window(x, 'a', &o.wa) != 0 || compare_window(x, 'b', &o.wb) != 0)
		return MHD_YES;
	if (by && strcmp(by, "name") != 0 && strcmp(by, "thread") != 0)
		return srv_send_error(x->c, x->r, 400, "bad_parameter", "'by' must be name or thread");
	o.by_thread = by && strcmp(by, "thread") == 0;
	o.limit = (uint32_t)limit;
	if (qry_compare_sort(sort, &o.sort) != 0)
		return srv_send_error(x->c, x->r, 400, "bad_parameter",
				      "'sort' must be total, count, p50, p95 or max (the difference b - a, largest "
				      "first)");
	if (need_readable(x, a) < 0 || need_readable(x, b) < 0)
		return MHD_YES;
	/* private connections: the thread's pool may hold only one of the two */
	if ((da = srv_trace_db_open(x->s, a)) == NULL || (db = srv_trace_db_open(x->s, b)) == NULL) {
		sqlite3_close(da);
		return srv_send_error(x->c, x->r, 500, "database_error", "a trace's database cannot be opened");
	}
	jb_init(&out);
	rc = qry_compare(da, db, &o, &out, &err);
	sqlite3_close(da);
	sqlite3_close(db);
	if (rc != QRY_OK) {
		jb_fini(&out);
		return srv_send_qry_error(x->c, x->r, &err);
	}
	return srv_send_json(x->c, x->r, 200, &out);
}

static enum MHD_Result s_upload(struct call *x)
{
	return srv_upload_begin(x->s, x->c, x->r, 0);
}

/* PUT /api/traces?live=1 is taken as POST, so that `curl -T -` (a live
 * stream from a pipe) works as it is; any other PUT is a wrong method. */
static enum MHD_Result s_put(struct call *x)
{
	if (arg(x, "live") == NULL)
		return srv_method_not_allowed(x->c, x->r, "PUT");
	return srv_upload_begin(x->s, x->c, x->r, 0);
}

static enum MHD_Result s_symbols(struct call *x)
{
	return srv_upload_begin(x->s, x->c, x->r, x->ids[0]);
}

/* ---- the table ------------------------------------------------------------- */

static const struct route routes[] = {
	{ "GET", "/api/traces/?", h_list, NULL, NULL },
	{ "POST", "/api/traces/?", NULL, NULL, s_upload },
	{ "PUT", "/api/traces/?", NULL, NULL, s_put },
	{ "GET", "/api/traces/{id}/?", h_trace, NULL, NULL },
	{ "PATCH", "/api/traces/{id}/?", h_patch, NULL, NULL },
	{ "DELETE", "/api/traces/{id}/?", h_delete, NULL, NULL },
	{ "GET", "/api/traces/{id}/file", h_file, NULL, NULL },
	{ "GET", "/api/traces/{id}/export", h_export, NULL, NULL },
	{ "POST", "/api/traces/{id}/symbols", NULL, NULL, s_symbols },
	{ "GET", "/api/traces/{id}/tracks", NULL, q_tracks, NULL },
	{ "GET", "/api/traces/{id}/slices", NULL, q_slices, NULL },
	{ "GET", "/api/traces/{id}/slices/{id}", NULL, q_slice, NULL },
	{ "GET", "/api/traces/{id}/counters", NULL, q_counters, NULL },
	{ "GET", "/api/traces/{id}/flows", NULL, q_flows, NULL },
	{ "GET", "/api/traces/{id}/logs", NULL, q_logs, NULL },
	{ "GET", "/api/traces/{id}/stats", NULL, q_stats, NULL },
	{ "GET", "/api/traces/{id}/area", NULL, q_area, NULL },
	{ "GET", "/api/traces/{id}/flame", NULL, q_flame, NULL },
	{ "GET", "/api/traces/{id}/overview", NULL, q_overview, NULL },
	{ "GET", "/api/traces/{id}/sched", NULL, q_sched, NULL },
	{ "GET", "/api/traces/{id}/search", NULL, q_search, NULL },
	{ "GET", "/api/traces/{id}/thread_states", NULL, q_thread_states, NULL },
	{ "POST", "/api/traces/{id}/query", NULL, q_sql, NULL },
	{ "GET", "/api/traces/{id}/notes", srv_h_notes_of_trace, NULL, NULL },
	{ "POST", "/api/traces/{id}/notes", srv_h_note_create, NULL, NULL },
	{ "GET", "/api/notes/?", srv_h_notes, NULL, NULL },
	{ "GET", "/api/notes/{id}/?", srv_h_note, NULL, NULL },
	{ "PATCH", "/api/notes/{id}/?", srv_h_note_edit, NULL, NULL },
	{ "DELETE", "/api/notes/{id}/?", srv_h_note_delete, NULL, NULL },
	{ "GET", "/api/trends", srv_h_trends, NULL, NULL },
	{ "POST", "/api/query", srv_h_query_many, NULL, NULL },
	{ "GET", "/api/search", h_search, NULL, NULL },
	{ "GET", "/api/compare", h_compare, NULL, NULL },
	{ "GET", "/api/library", h_library, NULL, NULL },
	{ "GET", "/api/captures/?", srv_h_capture_list, NULL, NULL },
	{ "POST", "/api/captures/?", srv_h_capture_new, NULL, NULL },
	{ "GET", "/api/captures/{id}/?", srv_h_capture, NULL, NULL },
	{ "DELETE", "/api/captures/{id}/?", srv_h_capture_delete, NULL, NULL },
	{ "POST", "/api/captures/{id}/start", srv_h_capture_start, NULL, NULL },
	{ "POST", "/api/captures/{id}/stop", srv_h_capture_stop, NULL, NULL },
	{ "GET", "/api/captures/{id}/alerts", srv_h_capture_alerts, NULL, NULL },
	{ "GET", "/api/captures/{id}/state", srv_h_capture_state, NULL, NULL },
	{ "GET", "/api/providers/?", srv_h_providers, NULL, NULL },
	{ "GET", "/api/providers/connect", srv_h_provider_connect, NULL, NULL },
	{ "GET", "/api/categories/?", srv_h_categories, NULL, NULL },
};

int srv_api_stream(struct server *s, struct MHD_Connection *c, struct req *r, const char *url, const char *method,
		   enum MHD_Result *ret)
{
	struct call x = { s, c, r, method, { -1, -1 } };
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (routes[i].stream == NULL || strcmp(routes[i].method, method) != 0 ||
		    srv_route_match(routes[i].pattern, url, x.ids) != 0)
			continue;
		r->route = routes[i].pattern;
		*ret = routes[i].stream(&x);
		return 1;
	}
	return 0;
}

const char *srv_api_route(const char *url, const char *method)
{
	const char *known = NULL;
	int64_t ids[SRV_ROUTE_MAX_IDS];
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (srv_route_match(routes[i].pattern, url, ids) != 0)
			continue;
		if (strcmp(routes[i].method, method) == 0)
			return routes[i].pattern;
		if (known == NULL)
			known = routes[i].pattern;
	}
	return known;
}

enum MHD_Result srv_api(struct server *s, struct MHD_Connection *c, struct req *r, const char *url,
			const char *method)
{
	struct call x = { s, c, r, method, { -1, -1 } };
	int path_known = 0, bad_id = 0;
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		int rc = srv_route_match(routes[i].pattern, url, x.ids);

		if (rc == -2)
			bad_id = 1;
		if (rc != 0)
			continue;
		path_known = 1;
		if (strcmp(routes[i].method, method) != 0)
			continue;
		r->route = routes[i].pattern;
		return routes[i].fn ? routes[i].fn(&x) : run_query(&x, &routes[i]); /* a stream route never gets here */
	}
	if (path_known) {
		r->route = srv_api_route(url, method); /* the path's route answers 405, as docs/API.md labels it */
		return srv_method_not_allowed(c, r, method);
	}
	if (bad_id)
		return srv_send_error(c, r, 404, "not_found", "trace ids are positive integers");
	return srv_send_error(c, r, 404, "not_found", "there is no such endpoint; see docs/API.md");
}
