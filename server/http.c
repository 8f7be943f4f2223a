/*
 * The HTTP side: libmicrohttpd with its own thread pool, routing, uploads
 * streamed to disk, the query API and the viewer's static files.
 *
 * Each request gets a struct req on its first call; GET requests are
 * answered on the second call (queueing on the first makes MHD close the
 * connection, see PERFORMANCE.md). Uploads are written to a spool file as
 * they arrive, never held in memory; a client that goes away leaves nothing
 * behind. Trace databases are opened read-only, one connection per worker
 * thread, cached per thread.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "../ingest/ingest.h"
#include "server.h"
#include "server_internal.h"
#include "gzip.h"

struct server {
	struct library lib;
	struct rcache cache;  /* rendered replies of ready traces */
	struct MHD_Daemon *d;
	const struct srv_opts *o;
	char token[256];     /* "" = no token required */
	char static_dir[4400];
};

enum req_kind { RQ_OTHER, RQ_UPLOAD };

/* An upload being written to disk. */
struct spool {
	int fd;          /* -1 when not open */
	char path[4096]; /* "" when there is no file to remove */
	uint64_t size;   /* bytes written */
	int seen;        /* the field was in the request */
};

struct req {
	struct server *srv;
	char method[8];        /* for the request log */
	char path[160];        /* for the request log, cut */
	int kind;
	int calls;             /* how many times the handler ran */
	struct timespec t0;
	unsigned status;       /* answered status, for the log */
	size_t bytes;          /* answered body bytes */
	/* uploads */
	struct spool file;     /* the trace */
	struct spool binary;   /* XRay symbols: instrumented binary or YAML */
	int64_t symbols_for;   /* POST .../symbols: the trace id; 0 for a new trace */
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
	/* small bodies (SQL) */
	char *body;
	size_t body_len;
	int body_too_big;
};

enum { MAX_SMALL_BODY = 65536 };

static volatile sig_atomic_t g_stop;

/* ---- responses ---------------------------------------------------------- */

static int wants_gzip(struct MHD_Connection *c)
{
	return srv_gzip_accepted(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
}

/*
 * A response for body (ownership passes to it), gzip-compressed when the
 * client takes gzip and the body is large enough to gain from it.
 */
static struct MHD_Response *make_response(struct MHD_Connection *c, char *body, size_t *len)
{
	struct MHD_Response *resp;
	char *z;
	size_t zn;
	int gz = *len >= SRV_GZIP_MIN && wants_gzip(c) && srv_gzip(body, *len, &z, &zn) == 0;

	if (gz) {
		free(body);
		body = z;
		*len = zn;
	}
	if ((resp = MHD_create_response_from_buffer(*len, body, MHD_RESPMEM_MUST_FREE)) == NULL) {
		free(body);
		return NULL;
	}
	if (gz)
		MHD_add_response_header(resp, "Content-Encoding", "gzip");
	MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	return resp;
}

static enum MHD_Result send_body(struct MHD_Connection *c, struct req *r, unsigned status, char *body, size_t len,
				 const char *type)
{
	struct MHD_Response *resp = make_response(c, body, &len);
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	r->status = status;
	r->bytes = len;
	return ret;
}

/* {"error": {"code", "message"}}: small and nested, so cJSON builds it. */
static enum MHD_Result send_error(struct MHD_Connection *c, struct req *r, unsigned status, const char *code,
				  const char *msg)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	char *body;

	cJSON_AddItemToObject(root, "error", e);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	body = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (body == NULL)
		return MHD_NO;
	return send_body(c, r, status, body, strlen(body), "application/json");
}

static enum MHD_Result send_json(struct MHD_Connection *c, struct req *r, unsigned status, struct jbuf *b)
{
	size_t len;
	char *body = jb_take(b, &len);

	if (body == NULL)
		return send_error(c, r, 500, "out_of_memory", "the server ran out of memory building the reply");
	return send_body(c, r, status, body, len, "application/json");
}

static enum MHD_Result send_qry_error(struct MHD_Connection *c, struct req *r, const struct qry_error *e)
{
	static const unsigned status[] = { 200, 404, 400, 500, 422, 500 };

	return send_error(c, r, e->code >= 0 && e->code <= QRY_ENOMEM ? status[e->code] : 500, qry_strerror(e->code),
			  e->msg);
}

/* ---- parameters ---------------------------------------------------------- */

/* Reads an optional integer query parameter; answers 400 itself on error. */
static int param_i64(struct MHD_Connection *c, struct req *r, const char *key, int64_t def, int64_t min,
		     int64_t max, int64_t *out, int required)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char msg[256];

	if (s == NULL && !required) {
		*out = def;
		return 0;
	}
	if (s == NULL) {
		snprintf(msg, sizeof(msg), "the query parameter '%s' is required", key);
		send_error(c, r, 400, "missing_parameter", msg);
		return -1;
	}
	if (srv_parse_i64(s, min, max, out) != 0) {
		snprintf(msg, sizeof(msg), "the query parameter '%s' must be an integer from %" PRId64 " to %" PRId64,
			 key, min, max);
		send_error(c, r, 400, "bad_parameter", msg);
		return -1;
	}
	return 0;
}

static int parse_window(struct MHD_Connection *c, struct req *r, struct qry_window *w)
{
	int64_t v;

	if (param_i64(c, r, "start", INT64_MIN, INT64_MIN, INT64_MAX, &w->start, 0) != 0 ||
	    param_i64(c, r, "end", INT64_MAX, INT64_MIN, INT64_MAX, &w->end, 0) != 0 ||
	    param_i64(c, r, "resolution", 0, 0, INT64_C(1) << 62, &w->resolution, 0) != 0 ||
	    param_i64(c, r, "limit", QRY_DEFAULT_LIMIT, 1, QRY_MAX_LIMIT, &v, 0) != 0)
		return -1;
	w->limit = (uint32_t)v;
	if (w->end < w->start) {
		send_error(c, r, 400, "bad_parameter", "'end' must not be before 'start'");
		return -1;
	}
	return 0;
}

/* The required "tracks=1,2,3" list (at most 4096 ids) into a new array;
 * answers 400 itself on error. */
static int64_t *param_tracks(struct MHD_Connection *c, struct req *r, size_t *n)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tracks");
	int64_t *ids = NULL;
	char item[32];

	*n = 0;
	if (s == NULL || *s == '\0') {
		send_error(c, r, 400, "missing_parameter", "the query parameter 'tracks' is required (ids, comma-separated)");
		return NULL;
	}
	if ((ids = malloc(4096 * sizeof(*ids))) == NULL) {
		send_error(c, r, 500, "out_of_memory", "the server ran out of memory");
		return NULL;
	}
	while (*s != '\0') {
		size_t len = strcspn(s, ",");

		if (*n == 4096 || len == 0 || len >= sizeof(item) ||
		    (memcpy(item, s, len), item[len] = '\0', srv_parse_i64(item, 1, INT64_MAX, &ids[*n]) != 0)) {
			send_error(c, r, 400, "bad_parameter", "'tracks' must be 1 to 4096 track ids, comma-separated");
			free(ids);
			return NULL;
		}
		(*n)++;
		s += len + (s[len] == ',');
	}
	return ids;
}

/* ---- trace databases, one read-only connection per worker thread -------- */

struct db_slot {
	int64_t id;
	sqlite3 *db;
	ino_t ino;    /* of trace.db when opened: a re-ingested trace is a new file */
	time_t mtime;
};

enum { DB_SLOTS = 8 };
static pthread_key_t g_db_key;
static pthread_once_t g_db_once = PTHREAD_ONCE_INIT;

/* Closes a worker thread's connections when the thread ends. */
static void db_slots_free(void *p)
{
	struct db_slot *slots = p;
	int i;

	for (i = 0; i < DB_SLOTS; i++)
		if (slots[i].db)
			sqlite3_close(slots[i].db);
	free(slots);
}

static void db_key_init(void)
{
	pthread_key_create(&g_db_key, db_slots_free);
}

static struct db_slot *db_slots(void)
{
	struct db_slot *slots;

	pthread_once(&g_db_once, db_key_init);
	if ((slots = pthread_getspecific(g_db_key)) == NULL && (slots = calloc(DB_SLOTS, sizeof(*slots))) != NULL)
		pthread_setspecific(g_db_key, slots);
	return slots;
}

/* Trace databases are read through memory maps: pages come straight from
 * the OS cache instead of being copied into SQLite's own. */
static sqlite3 *db_open(const char *path)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_exec(db, "PRAGMA mmap_size=17179869184; PRAGMA cache_size=-4096;", NULL, NULL, NULL);
	sqlite3_busy_timeout(db, 5000); /* symbols being written: wait for the rename */
	return db;
}

static sqlite3 *trace_db(struct server *s, int64_t id)
{
	struct db_slot *slots = db_slots(), *slot;
	char path[4096];
	struct stat st;

	if (slots == NULL)
		return NULL;
	slot = &slots[(uint64_t)id % DB_SLOTS];
	lib_path(&s->lib, id, "trace.db", path, sizeof(path));
	if (stat(path, &st) != 0)
		return NULL;
	if (slot->db && slot->id == id && slot->ino == st.st_ino && slot->mtime == st.st_mtime)
		return slot->db;
	if (slot->db)
		sqlite3_close(slot->db);
	if ((slot->db = db_open(path)) == NULL)
		return NULL;
	slot->id = id;
	slot->ino = st.st_ino;
	slot->mtime = st.st_mtime;
	return slot->db;
}

/* ---- routes --------------------------------------------------------------- */

static enum MHD_Result method_not_allowed(struct MHD_Connection *c, struct req *r, const char *method)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "this path does not accept %s", method);
	return send_error(c, r, 405, "method_not_allowed", msg);
}

struct cache_key {
	char buf[1024];
	size_t len;
	int overflow; /* too long to cache */
};

static enum MHD_Result key_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct cache_key *key = cls;
	/* lengths first: "&" or "=" inside a value cannot make two requests look alike */
	int n = snprintf(key->buf + key->len, sizeof(key->buf) - key->len, "&%zu:%s=%zu:%s", strlen(k), k,
			 v ? strlen(v) : 0, v ? v : "");

	(void)kind;
	if (n < 0 || (size_t)n >= sizeof(key->buf) - key->len)
		key->overflow = 1;
	else
		key->len += (size_t)n;
	return key->overflow ? MHD_NO : MHD_YES;
}

/* The cache key of a GET: its path and arguments in the order sent, and
 * whether the reply is gzip-compressed. */
static int cache_key(struct MHD_Connection *c, const char *path, struct cache_key *key)
{
	int n = snprintf(key->buf, sizeof(key->buf), "%s%s?", wants_gzip(c) ? "gz:" : "", path);

	key->overflow = n < 0 || (size_t)n >= sizeof(key->buf);
	key->len = key->overflow ? 0 : (size_t)n;
	if (!key->overflow)
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, key_arg, key);
	return key->overflow ? -1 : 0;
}

/* Answers 200 with the JSON and keeps the reply for the same request again. */
static enum MHD_Result send_cached_json(struct server *s, struct MHD_Connection *c, struct req *r, int64_t trace,
					const struct cache_key *key, struct jbuf *b)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len;
	char *body = jb_take(b, &len);

	if (body == NULL)
		return send_error(c, r, 500, "out_of_memory", "the server ran out of memory building the reply");
	if ((resp = make_response(c, body, &len)) == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, 200, resp);
	r->status = 200;
	r->bytes = len;
	if (key)
		rc_put(&s->cache, key->buf, trace, resp, len);
	else
		MHD_destroy_response(resp);
	return ret;
}

/* Runs a query endpoint on a ready trace. */
static enum MHD_Result api_query(struct server *s, struct MHD_Connection *c, struct req *r, const struct srv_route *rt,
				 const char *body, size_t body_len)
{
	struct qry_error err = { 0 };
	struct qry_window w = { 0 };
	struct cache_key key;
	struct jbuf b;
	int64_t v = 0;
	sqlite3 *db;
	int rc, cacheable = 0, st = lib_status(&s->lib, rt->id);

	if (st < 0)
		return send_error(c, r, 404, "not_found", "there is no trace with this id");
	if (st != TS_READY)
		return send_error(c, r, 409, "not_ready", st == TS_FAILED ? "this trace failed to ingest; see its error"
									 : "this trace is still being ingested");
	if (body == NULL && cache_key(c, r->path, &key) == 0) {
		size_t bytes = 0;
		int served = rc_serve(&s->cache, key.buf, c, &bytes);

		if (served != 0) {
			r->status = served > 0 ? 200 : 0;
			r->bytes = bytes;
			return served > 0 ? MHD_YES : MHD_NO;
		}
		cacheable = 1;
	}
	if ((db = trace_db(s, rt->id)) == NULL) {
		if (lib_status(&s->lib, rt->id) < 0) /* deleted since we looked */
			return send_error(c, r, 404, "not_found", "there is no trace with this id");
		return send_error(c, r, 500, "database_error", "the trace's database cannot be opened");
	}
	jb_init(&b);
	if (strcmp(rt->sub, "tracks") == 0) {
		rc = qry_tracks(db, &b, &err);
	} else if (strcmp(rt->sub, "slices") == 0 && rt->sub_id > 0) {
		rc = qry_slice(db, rt->sub_id, &b, &err);
	} else if (strcmp(rt->sub, "slices") == 0 || strcmp(rt->sub, "counters") == 0) {
		if (param_i64(c, r, "track", 0, 1, INT64_MAX, &v, 1) != 0 || parse_window(c, r, &w) != 0)
			goto out_answered;
		rc = rt->sub[0] == 's' ? qry_slices(db, v, &w, &b, &err) : qry_counters(db, v, &w, &b, &err);
	} else if (strcmp(rt->sub, "flows") == 0 || strcmp(rt->sub, "logs") == 0 || strcmp(rt->sub, "stats") == 0) {
		if (parse_window(c, r, &w) != 0)
			goto out_answered;
		rc = rt->sub[0] == 'f' ? qry_flows(db, &w, &b, &err)
		     : rt->sub[0] == 'l' ? qry_logs(db, &w, &b, &err)
					 : qry_stats(db, &w, &b, &err);
	} else if (strcmp(rt->sub, "area") == 0 || strcmp(rt->sub, "flame") == 0) {
		size_t nt = 0;
		int64_t *tracks = param_tracks(c, r, &nt);

		if (tracks == NULL || parse_window(c, r, &w) != 0) {
			free(tracks);
			goto out_answered;
		}
		rc = rt->sub[0] == 'f' ? qry_flame(db, tracks, nt, &w, &b, &err)
				       : qry_area(db, tracks, nt, &w,
						  MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name"), &b, &err);
		free(tracks);
	} else if (strcmp(rt->sub, "overview") == 0) {
		if (param_i64(c, r, "buckets", 400, 1, QRY_OVERVIEW_MAX_BUCKETS, &v, 0) != 0 || parse_window(c, r, &w) != 0)
			goto out_answered;
		rc = qry_overview(db, &w, (uint32_t)v, &b, &err);
	} else if (strcmp(rt->sub, "sched") == 0) {
		if (param_i64(c, r, "cpu", 0, 0, 65535, &v, 1) != 0 || parse_window(c, r, &w) != 0)
			goto out_answered;
		rc = qry_sched(db, v, &w, &b, &err);
	} else if (strcmp(rt->sub, "search") == 0) {
		const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "q");

		if (q == NULL || *q == '\0') {
			jb_fini(&b);
			return send_error(c, r, 400, "missing_parameter", "the query parameter 'q' is required");
		}
		if (param_i64(c, r, "limit", 1000, 1, QRY_MAX_LIMIT, &v, 0) != 0)
			goto out_answered;
		rc = qry_search(db, q, (uint32_t)v, &b, &err);
	} else if (strcmp(rt->sub, "query") == 0) {
		rc = qry_sql(db, body ? body : "", body_len, &b, &err);
	} else {
		jb_fini(&b);
		return send_error(c, r, 404, "not_found", "there is no such endpoint; see docs/API.md");
	}
	if (rc != QRY_OK) {
		jb_fini(&b);
		return send_qry_error(c, r, &err);
	}
	return send_cached_json(s, c, r, rt->id, cacheable ? &key : NULL, &b);
out_answered:
	jb_fini(&b);
	return MHD_YES;
}

static enum MHD_Result api_file(struct server *s, struct MHD_Connection *c, struct req *r, int64_t id)
{
	char path[4096], disp[320];
	struct MHD_Response *resp;
	struct stat st;
	int fd;

	lib_path(&s->lib, id, "source", path, sizeof(path));
	if (lib_status(&s->lib, id) < 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return send_error(c, r, 404, "not_found", "there is no trace with this id");
	if (fstat(fd, &st) != 0 || (resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd)) == NULL) {
		close(fd);
		return send_error(c, r, 500, "io_error", "the trace's file cannot be read");
	}
	snprintf(disp, sizeof(disp), "attachment; filename=\"trace-%" PRId64 ".bin\"", id);
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	MHD_add_response_header(resp, "Content-Disposition", disp);
	r->status = 200;
	r->bytes = (size_t)st.st_size;
	{
		enum MHD_Result ret = MHD_queue_response(c, 200, resp);

		MHD_destroy_response(resp);
		return ret;
	}
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

/* GET /api/traces/{id}/export?format=chrome-json: streamed, constant memory. */
static enum MHD_Result api_export(struct server *s, struct MHD_Connection *c, struct req *r, int64_t id)
{
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	struct qry_error err = { 0 };
	struct MHD_Response *resp;
	struct qry_export *e;
	char path[4096], disp[96];
	enum MHD_Result ret;
	int st = lib_status(&s->lib, id);

	if (st < 0)
		return send_error(c, r, 404, "not_found", "there is no trace with this id");
	if (st != TS_READY)
		return send_error(c, r, 409, "not_ready", "this trace is not ready");
	if (fmt && strcmp(fmt, "chrome-json") != 0)
		return send_error(c, r, 400, "bad_parameter", "'format' must be chrome-json");
	lib_path(&s->lib, id, "trace.db", path, sizeof(path));
	if ((e = qry_export_open(path, &err)) == NULL)
		return lib_status(&s->lib, id) < 0 ? send_error(c, r, 404, "not_found", "there is no trace with this id")
						   : send_qry_error(c, r, &err);
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, export_read, e, export_free);
	if (resp == NULL) {
		qry_export_close(e);
		return MHD_NO;
	}
	snprintf(disp, sizeof(disp), "attachment; filename=\"trace-%" PRId64 ".json\"", id);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Content-Disposition", disp);
	ret = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	r->status = 200;
	return ret;
}

static enum MHD_Result api_trace(struct server *s, struct MHD_Connection *c, struct req *r, const char *method,
				 const struct srv_route *rt)
{
	struct jbuf b;

	if (rt->sub[0] == '\0') {
		if (strcmp(method, "DELETE") == 0) {
			if (lib_delete(&s->lib, rt->id) != 0)
				return send_error(c, r, 404, "not_found", "there is no trace with this id");
			rc_drop_trace(&s->cache, rt->id);
			return send_body(c, r, 204, strdup(""), 0, "application/json");
		}
		if (strcmp(method, "GET") != 0)
			return method_not_allowed(c, r, method);
		jb_init(&b);
		if (lib_json(&s->lib, rt->id, &b) != 0) {
			jb_fini(&b);
			return send_error(c, r, 404, "not_found", "there is no trace with this id");
		}
		return send_json(c, r, 200, &b);
	}
	if (strcmp(rt->sub, "file") == 0)
		return strcmp(method, "GET") == 0 ? api_file(s, c, r, rt->id) : method_not_allowed(c, r, method);
	if (strcmp(rt->sub, "symbols") == 0)
		return method_not_allowed(c, r, method); /* POST is an upload, handled before */
	if (strcmp(rt->sub, "export") == 0)
		return strcmp(method, "GET") == 0 ? api_export(s, c, r, rt->id) : method_not_allowed(c, r, method);
	if (strcmp(rt->sub, "query") == 0 && strcmp(method, "POST") != 0)
		return method_not_allowed(c, r, method);
	if (strcmp(rt->sub, "query") != 0 && strcmp(method, "GET") != 0)
		return method_not_allowed(c, r, method);
	if (r->body_too_big)
		return send_error(c, r, 413, "body_too_large", "the SQL statement is longer than 64 KiB");
	return api_query(s, c, r, rt, r->body, r->body_len);
}

/* ---- uploads -------------------------------------------------------------- */

static int spool_open(struct server *s, struct spool *sp)
{
	char dir[2048];

	lib_spool_dir(&s->lib, dir, sizeof(dir));
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
	r->got += n;
	if (r->got > s->o->max_upload)
		r->too_big = 1;
	if (sp->fd < 0 && !r->too_big && spool_open(s, sp) != 0)
		r->write_failed = errno ? errno : EIO;
	while (n > 0 && !r->too_big && !r->write_failed) {
		ssize_t k = write(sp->fd, data, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r->write_failed = errno ? errno : EIO;
			break;
		}
		data += k;
		n -= (size_t)k;
		sp->size += (uint64_t)k;
	}
}

/* Multipart fields: "file" (the trace) and "binary" (an XRay instrumented
 * binary or symbol map) are streamed to spool files, "name" names the trace. */
static enum MHD_Result post_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
				  const char *content_type, const char *encoding, const char *data, uint64_t off,
				  size_t size)
{
	struct req *r = cls;
	struct spool *sp = strcmp(key, "file") == 0 ? &r->file : strcmp(key, "binary") == 0 ? &r->binary : NULL;

	(void)kind;
	(void)content_type;
	(void)encoding;
	if (sp) {
		if (sp == &r->file && r->filename == NULL && filename)
			r->filename = strdup(filename);
		if (sp == &r->binary && r->binary_filename == NULL && filename)
			r->binary_filename = strdup(filename);
		sp->seen = 1;
		spool_write(r->srv, r, sp, data, size);
		return r->too_big || r->write_failed ? MHD_NO : MHD_YES;
	}
	if (strcmp(key, "name") == 0 && off == 0 && size < 1024) {
		free(r->name);
		r->name = strndup(data, size);
	}
	return MHD_YES;
}

static enum MHD_Result send_too_big(struct server *s, struct MHD_Connection *c, struct req *r)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "the upload is larger than this server's limit of %" PRIu64 " bytes",
		 s->o->max_upload);
	return send_error(c, r, 413, "upload_too_large", msg);
}

/* The first call of POST /api/traces or POST /api/traces/{id}/symbols. */
static enum MHD_Result upload_begin(struct server *s, struct MHD_Connection *c, struct req *r, int64_t symbols_for)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	int64_t n;

	r->kind = RQ_UPLOAD;
	r->symbols_for = symbols_for;
	if (symbols_for > 0 && lib_status(&s->lib, symbols_for) < 0)
		return send_error(c, r, 404, "not_found", "there is no trace with this id");
	if (fmt && strcmp(fmt, "fxt") != 0 && strcmp(fmt, "xray") != 0)
		return send_error(c, r, 400, "bad_parameter", "'format' must be fxt or xray");
	if (len && srv_parse_i64(len, 0, INT64_MAX, &n) == 0 && (uint64_t)n > s->o->max_upload) {
		r->too_big = 1;
		return send_too_big(s, c, r);
	}
	if (type && strncasecmp(type, "multipart/form-data", 19) == 0) {
		if ((r->pp = MHD_create_post_processor(c, 65536, post_field, r)) == NULL)
			return send_error(c, r, 400, "bad_multipart",
					  "the multipart/form-data body has no usable boundary");
		r->multipart = 1;
	}
	return MHD_YES;
}

/* MHD cannot answer before the body is read (it would drop the connection
 * without a reply), so an error found mid-body drops the files at once and
 * is answered when the body ends; the rest of the body is read and thrown
 * away, up to a bound past which the connection is closed. */
static void upload_fail(struct req *r, unsigned status, const char *code, const char *msg)
{
	if (r->fail_status)
		return;
	r->fail_status = status;
	r->fail_at = r->got;
	r->fail_code = code;
	r->fail_msg = msg;
	spool_close(&r->file);
	spool_close(&r->binary);
	if (r->file.path[0])
		unlink(r->file.path);
	if (r->binary.path[0])
		unlink(r->binary.path);
	r->file.path[0] = r->binary.path[0] = '\0';
}

enum { DISCARD_MAX = 256 << 20 };

static enum MHD_Result upload_chunk(struct server *s, struct MHD_Connection *c, struct req *r, const char *data,
				    size_t n)
{
	(void)c;
	if (r->status)
		return MHD_YES; /* answered before the body: MHD discards it */
	if (r->fail_status) {
		r->got += n;
		return r->got - r->fail_at > DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	if (r->pp) {
		if (MHD_post_process(r->pp, data, n) != MHD_YES && !r->too_big && !r->write_failed)
			upload_fail(r, 400, "bad_multipart", "the multipart/form-data body is malformed");
	} else {
		r->file.seen = 1;
		spool_write(s, r, r->symbols_for > 0 ? &r->binary : &r->file, data, n);
	}
	if (r->too_big)
		upload_fail(r, 413, "upload_too_large", "the upload is larger than this server's limit (--max-upload)");
	if (r->write_failed)
		upload_fail(r, r->write_failed == ENOSPC ? 507 : 500, "storage_failed",
			    r->write_failed == ENOSPC ? "the server's disk is full; the upload was not stored"
						     : "the server could not write the upload");
	return MHD_YES;
}

static enum MHD_Result upload_answer(struct server *s, struct MHD_Connection *c, struct req *r, int64_t id)
{
	struct MHD_Response *resp;
	struct jbuf b;
	char loc[64];
	int st = lib_status(&s->lib, id);
	size_t len;
	char *body;
	enum MHD_Result ret;
	unsigned code;

	jb_init(&b);
	if (r->suspended || MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait")) {
		if (st < 0) {
			jb_fini(&b);
			return send_error(c, r, 404, "not_found", "the trace was deleted before its ingest ended");
		}
		lib_json(&s->lib, id, &b);
		code = st == TS_READY ? 201 : st == TS_FAILED ? 422 : 202;
	} else {
		jb_obj(&b);
		jb_key(&b, "id");
		jb_i64(&b, id);
		jb_key(&b, "status");
		jb_str(&b, st == TS_INGESTING ? "ingesting" : "queued");
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

	return r->binary_filename ? r->binary_filename : q;
}

static enum MHD_Result symbols_end(struct server *s, struct MHD_Connection *c, struct req *r)
{
	char err[256];
	struct jbuf b;

	if (r->binary.size == 0)
		return send_error(c, r, 400, "empty_upload",
				  "send the instrumented binary or the YAML of llvm-xray extract --symbolize as the "
				  "body (or as multipart field 'binary')");
	if (lib_symbols(&s->lib, r->symbols_for, r->binary.path, symbols_filename(c, r), err, sizeof(err)) != 0)
		return send_error(c, r, 422, "bad_symbols", err);
	rc_drop_trace(&s->cache, r->symbols_for); /* names changed */
	r->binary.path[0] = '\0'; /* the library owns the file now */
	jb_init(&b);
	if (lib_json(&s->lib, r->symbols_for, &b) != 0) {
		jb_fini(&b);
		return send_error(c, r, 404, "not_found", "there is no trace with this id");
	}
	return send_json(c, r, 200, &b);
}

static enum MHD_Result upload_end(struct server *s, struct MHD_Connection *c, struct req *r)
{
	const char *qname = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	char err[256];
	int64_t id;

	if (r->suspended)
		return upload_answer(s, c, r, r->wait_id);
	if (r->status)
		return MHD_YES;
	if (r->pp)
		MHD_destroy_post_processor(r->pp);
	r->pp = NULL;
	if (r->fail_status)
		return send_error(c, r, r->fail_status, r->fail_code, r->fail_msg);
	if ((spool_close(&r->file) != 0 || spool_close(&r->binary) != 0) && !r->write_failed)
		r->write_failed = errno;
	if (r->write_failed)
		return send_error(c, r, 507, "storage_failed", "the server could not store the upload");
	if (r->symbols_for > 0)
		return symbols_end(s, c, r);
	if (r->multipart && !r->file.seen)
		return send_error(c, r, 400, "missing_file", "the multipart upload has no 'file' field");
	if (r->file.size == 0)
		return send_error(c, r, 400, "empty_upload", "the upload is empty: send the trace file as the body");
	id = lib_add(&s->lib, qname ? qname : r->name ? r->name : r->filename ? r->filename : "upload", r->file.path,
		     r->file.size, fmt && strcmp(fmt, "xray") == 0 ? "xray-fdr" : fmt,
		     r->binary.size ? r->binary.path : NULL, r->binary_filename, err, sizeof(err));
	if (id < 0)
		return send_error(c, r, 507, "storage_failed", err);
	r->file.path[0] = '\0'; /* the library owns the files now */
	r->binary.path[0] = '\0';
	if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait")) {
		r->suspended = 1;
		r->wait_id = id;
		if (lib_wait(&s->lib, id, c) == 0)
			return MHD_YES;
	}
	return upload_answer(s, c, r, id);
}

/* ---- static files ---------------------------------------------------------- */

static const char *mime_type(const char *path)
{
	static const char *const map[][2] = {
		{ ".html", "text/html; charset=utf-8" },  { ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },    { ".svg", "image/svg+xml" },
		{ ".png", "image/png" },                  { ".ico", "image/x-icon" },
		{ ".json", "application/json" },          { ".txt", "text/plain; charset=utf-8" },
	};
	const char *dot = strrchr(path, '.');
	size_t i;

	for (i = 0; dot && i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(dot, map[i][0]) == 0)
			return map[i][1];
	return "application/octet-stream";
}

/* A request path is served only if it names a regular file inside the
 * static directory through plain names: letters, digits, '-', '_', '.', one
 * '/' between names, and no name starting with '.'. */
static int static_path_ok(const char *p)
{
	const char *q;

	if (*p == '\0' || strlen(p) > 200)
		return 0;
	for (q = p; *q; q++) {
		int ok = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '-' ||
			 *q == '_' || *q == '.' || *q == '/';

		if (!ok || (*q == '/' && q[1] == '/') || ((q == p || q[-1] == '/') && (*q == '.' || *q == '/')))
			return 0;
	}
	return q[-1] != '/';
}

/* Opens rel (a path static_path_ok accepted) inside dir, following no
 * symbolic link on the way: a link anywhere in rel is "not found". */
static int open_beneath(const char *dir, const char *rel)
{
	char part[256];
	const char *p = rel, *slash;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), next;

	while (fd >= 0 && (slash = strchr(p, '/')) != NULL) {
		snprintf(part, sizeof(part), "%.*s", (int)(slash - p), p);
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		p = slash + 1;
	}
	if (fd < 0)
		return -1;
	next = openat(fd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	return next;
}

static enum MHD_Result serve_static(struct server *s, struct MHD_Connection *c, struct req *r, const char *url,
				    const char *method)
{
	const char *rel = strcmp(url, "/") == 0 ? "index.html" : url + 1;
	const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	char path[4700], etag[64];
	struct MHD_Response *resp;
	enum MHD_Result ret;
	struct stat st;
	int fd;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return method_not_allowed(c, r, method);
	snprintf(path, sizeof(path), "%s/%s", s->static_dir, rel);
	if (!static_path_ok(rel) || (fd = open_beneath(s->static_dir, rel)) < 0)
		return send_error(c, r, 404, "not_found", "there is no such page");
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return send_error(c, r, 404, "not_found", "there is no such page");
	}
	snprintf(etag, sizeof(etag), "\"%llx-%llx\"", (unsigned long long)st.st_mtime,
		 (unsigned long long)st.st_size);
	if (inm && strcmp(inm, etag) == 0) {
		close(fd);
		resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		r->status = 304;
	} else {
		resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
		r->status = 200;
		r->bytes = (size_t)st.st_size;
	}
	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", mime_type(rel));
	MHD_add_response_header(resp, "ETag", etag);
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
	ret = MHD_queue_response(c, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- the handler --------------------------------------------------------- */

/* Compares in time independent of where the strings differ. */
static int token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i;
	unsigned char d = (unsigned char)(la != lb);

	for (i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0 && lb > 0;
}

static int authorized(struct server *s, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	if (s->token[0] == '\0')
		return 1;
	return h && strncmp(h, "Bearer ", 7) == 0 && token_equal(s->token, h + 7);
}

static enum MHD_Result send_unauthorized(struct MHD_Connection *c, struct req *r)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *body;

	cJSON_AddItemToObject(root, "error", e);
	cJSON_AddStringToObject(e, "code", "unauthorized");
	cJSON_AddStringToObject(e, "message", "this server needs a token: send 'Authorization: Bearer <token>'");
	body = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (body == NULL || (resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)) == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
	r->status = 401;
	r->bytes = strlen(body);
	ret = MHD_queue_response(c, 401, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result api_dispatch(struct server *s, struct MHD_Connection *c, struct req *r, const char *url,
				    const char *method)
{
	struct srv_route rt;
	char sub[64];
	struct jbuf b;
	int rc = srv_route_parse(url, &rt, sub, sizeof(sub));

	if (rc == -2)
		return send_error(c, r, 404, "not_found", "trace ids are positive integers");
	if (rc != 0)
		return send_error(c, r, 404, "not_found", "there is no such endpoint; see docs/API.md");
	if (rt.id < 0) {
		if (strcmp(method, "GET") != 0)
			return method_not_allowed(c, r, method);
		jb_init(&b);
		lib_json_list(&s->lib, &b);
		return send_json(c, r, 200, &b);
	}
	return api_trace(s, c, r, method, &rt);
}

static void small_body(struct req *r, const char *data, size_t n)
{
	char *p;

	if (r->body_too_big || r->body_len + n > MAX_SMALL_BODY) {
		r->body_too_big = 1;
		return;
	}
	if ((p = realloc(r->body, r->body_len + n + 1)) == NULL) {
		r->body_too_big = 1;
		return;
	}
	memcpy(p + r->body_len, data, n);
	r->body = p;
	r->body_len += n;
	r->body[r->body_len] = '\0';
}

/* The trace id of POST /api/traces/{id}/symbols, or 0. */
static int64_t symbols_route(const char *url)
{
	struct srv_route rt;
	char sub[64];

	if (srv_route_parse(url, &rt, sub, sizeof(sub)) != 0 || rt.id <= 0 || strcmp(rt.sub, "symbols") != 0)
		return 0;
	return rt.id;
}

static struct req *req_new(struct server *s, const char *method, const char *url)
{
	struct req *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	snprintf(r->method, sizeof(r->method), "%s", method);
	snprintf(r->path, sizeof(r->path), "%s", url);
	r->srv = s;
	r->file.fd = -1;
	r->binary.fd = -1;
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct req *r = *con_cls;
	int api = strncmp(url, "/api/", 5) == 0 || strcmp(url, "/api") == 0;

	(void)version;
	if (r == NULL) {
		if ((r = req_new(s, method, url)) == NULL)
			return MHD_NO;
		*con_cls = r;
		if (api && !authorized(s, c))
			return send_unauthorized(c, r);
		if (strcmp(method, "POST") == 0 && (strcmp(url, "/api/traces") == 0 || strcmp(url, "/api/traces/") == 0))
			return upload_begin(s, c, r, 0);
		if (strcmp(method, "POST") == 0 && symbols_route(url) > 0)
			return upload_begin(s, c, r, symbols_route(url));
		return MHD_YES;
	}
	if (r->kind == RQ_UPLOAD) {
		size_t n = *upload_size;

		*upload_size = 0;
		return n ? upload_chunk(s, c, r, upload_data, n) : upload_end(s, c, r);
	}
	if (r->status)
		return MHD_YES;
	if (*upload_size) {
		small_body(r, upload_data, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (api)
		return api_dispatch(s, c, r, url, method);
	return serve_static(s, c, r, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;
	struct timespec t;

	(void)cls;
	(void)c;
	if (r == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t);
	spool_close(&r->file);
	spool_close(&r->binary);
	if (r->file.path[0])
		unlink(r->file.path); /* an upload that did not finish leaves nothing behind */
	if (r->binary.path[0])
		unlink(r->binary.path);
	if (r->pp)
		MHD_destroy_post_processor(r->pp);
	fprintf(stderr, "%s %s %u %zu %.1fms%s\n", r->method, r->path, r->status, r->bytes,
		(double)(t.tv_sec - r->t0.tv_sec) * 1e3 + (double)(t.tv_nsec - r->t0.tv_nsec) / 1e6,
		toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
	free(r->filename);
	free(r->binary_filename);
	free(r->name);
	free(r->body);
	free(r);
	*con_cls = NULL;
}

/* ---- start and stop ---------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void conn_resume(void *conn)
{
	MHD_resume_connection(conn);
}

static void conn_suspend(void *conn)
{
	MHD_suspend_connection(conn);
}

static int read_token(const char *path, char *out, size_t n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t len;

	if (f == NULL) {
		snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
		return -1;
	}
	len = fread(out, 1, n - 1, f);
	fclose(f);
	out[len] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	if (strlen(out) < 16) {
		snprintf(err, errlen, "the token in %s is shorter than 16 characters", path);
		return -1;
	}
	return 0;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static int parse_bind(const char *host, unsigned port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (strcmp(host, "localhost") == 0)
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		return 0;
	}
	return -1;
}

/* The viewer's files: --static, else ./static, else next to the binary. */
static void find_static(struct server *s)
{
	char exe[4096], cand[4200];
	ssize_t n;
	char *slash;

	if (s->o->static_dir) {
		snprintf(s->static_dir, sizeof(s->static_dir), "%s", s->o->static_dir);
		return;
	}
	snprintf(s->static_dir, sizeof(s->static_dir), "static");
	if (access("static/index.html", R_OK) == 0)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) != NULL)
		*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/../share/trace-server/static", exe);
	if (access(cand, R_OK) == 0)
		snprintf(s->static_dir, sizeof(s->static_dir), "%s", cand);
}

static void add_demo(struct server *s)
{
	char spool[4096], dir[2048], err[256], buf[65536];
	struct stat st;
	FILE *in, *out;
	size_t n;
	int fd;

	if (s->o->demo == NULL || lib_count(&s->lib) > 0 || (in = fopen(s->o->demo, "rb")) == NULL)
		return;
	lib_spool_dir(&s->lib, dir, sizeof(dir));
	snprintf(spool, sizeof(spool), "%s/demo-XXXXXX", dir);
	if ((fd = mkstemp(spool)) < 0 || (out = fdopen(fd, "wb")) == NULL) {
		fclose(in);
		return;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	if (fclose(out) != 0 || stat(spool, &st) != 0 ||
	    lib_add(&s->lib, "demo", spool, (uint64_t)st.st_size, NULL, NULL, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "trace-server: the demo trace was not added\n");
		unlink(spool);
	}
}

static struct MHD_Daemon *start_daemon(struct server *s, const struct sockaddr_storage *ss)
{
	unsigned threads = s->o->threads ? s->o->threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);

	if (threads < 2)
		threads = 2;
	/* poll, not epoll: with epoll MHD 0.9.75 can miss a client that closes
	 * mid-upload until the connection timeout (tests/test_server.c) */
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
					MHD_USE_ERROR_LOG | (ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, ss, MHD_OPTION_THREAD_POOL_SIZE,
				threads, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_CONNECTION_LIMIT, 1000u,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, 256u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)128 * 1024, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
}

int srv_run(const struct srv_opts *o)
{
	static struct server s;
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	char err[512];

	memset(&s, 0, sizeof(s));
	s.o = o;
	if (parse_bind(o->bind, o->port, &ss) != 0) {
		fprintf(stderr, "trace-server: --bind %s is not an IPv4 or IPv6 address\n", o->bind);
		return 2;
	}
	if (o->token_file && read_token(o->token_file, s.token, sizeof(s.token), err, sizeof(err)) != 0) {
		fprintf(stderr, "trace-server: %s\n", err);
		return 2;
	}
	if (!is_loopback(&ss) && s.token[0] == '\0' && !o->insecure_public) {
		fprintf(stderr, "trace-server: refusing to listen on %s without --token-file; anyone who can reach it "
				"could read and delete every trace (use --insecure-public to do it anyway)\n",
			o->bind);
		return 2;
	}
	find_static(&s);
	if (lib_open(&s.lib, o->data_dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "trace-server: %s\n", err);
		lib_close(&s.lib);
		return 1;
	}
	s.lib.keep_failed = o->keep_failed;
	s.lib.resume = conn_resume;
	s.lib.suspend = conn_suspend;
	if (rc_init(&s.cache, (size_t)64 << 20) != 0)
		fprintf(stderr, "trace-server: no memory for the reply cache; running without it\n");
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (lib_start(&s.lib) != 0 || (s.d = start_daemon(&s, &ss)) == NULL) {
		fprintf(stderr, "trace-server: cannot listen on %s port %u: %s\n", o->bind, o->port, strerror(errno));
		lib_close(&s.lib);
		return 1;
	}
	add_demo(&s);
	info = MHD_get_daemon_info(s.d, MHD_DAEMON_INFO_BIND_PORT);
	printf("trace-server: listening on http://%s%s%s:%u/ (data in %s)\n", ss.ss_family == AF_INET6 ? "[" : "",
	       o->bind, ss.ss_family == AF_INET6 ? "]" : "", info ? info->port : o->port, o->data_dir);
	fflush(stdout);
	while (!g_stop)
		pause();
	fprintf(stderr, "trace-server: stopping\n");
	lib_stop(&s.lib);
	MHD_stop_daemon(s.d);
	rc_fini(&s.cache);
	lib_close(&s.lib);
	return 0;
}
