/*
 * Server internals shared by its files: the server, one request, the reply
 * helpers (reply.c), the route table (routes.c, matched by params.c),
 * uploads (upload.c), static files (static.c), trace databases (dbpool.c)
 * and the reply cache (cache.c).
 */
#ifndef SERVER_INTERNAL_H
#define SERVER_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <microhttpd.h>

#include "../capture/capture.h"
#include "../catalog/catalog.h"
#include "../catalog/notes.h"
#include "../query/query.h"

/* The catalog's database cannot be reached (a shared PostgreSQL down):
 * 503, and the server reconnects by itself. */
#define CATALOG_DOWN "the catalog's database cannot be reached now; try again shortly"

/* ---- reply cache (cache.c) ---- */

struct rc_entry;
struct rcache {
	pthread_mutex_t mu;
	struct rc_entry **buckets;
	size_t nbuckets;
	struct rc_entry *head, *tail; /* LRU order */
	size_t bytes, budget;
	uint64_t hits, misses;
};

int rc_init(struct rcache *c, size_t budget);
void rc_fini(struct rcache *c);
/* Queues the reply cached under key with status 200: 1 served, 0 not
 * cached, -1 MHD refused. *bytes gets the reply's size for the log. */
int rc_serve(struct rcache *c, const char *key, struct MHD_Connection *conn, size_t *bytes);
/* Keeps resp (the cache takes over the caller's reference) for trace. */
void rc_put(struct rcache *c, const char *key, int64_t trace, struct MHD_Response *resp, size_t bytes);
/* Forgets every reply of a trace (deleted or renamed). */
void rc_drop_trace(struct rcache *c, int64_t trace);

/* ---- the server and one request ---- */

struct srv_opts;

struct srv_metrics;

struct server {
	struct catalog *cat;
	struct srv_metrics *metrics; /* requests counted for /metrics (metrics.c) */
	struct captures *cap; /* the trace manager: captures and providers */
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

enum { REQ_MAX_LABELS = CAT_MAX_LABELS };

/* A live stream being received (POST /api/traces?live=1). */
struct live_up {
	int64_t id;     /* the live trace */
	int fd;         /* its source, appended to; -1 once closed */
	uint64_t size;  /* bytes appended */
	char err[256];  /* why the stream was refused mid-body */
};

struct req {
	struct server *srv;
	char method[8];        /* for the request log */
	char path[160];        /* for the request log, cut */
	int kind;
	int calls;             /* how many times the handler ran */
	struct timespec t0;
	unsigned status;       /* answered status, for the log */
	const char *route;     /* the route pattern that answered (a static string), for /metrics; NULL: none */
	size_t bytes;          /* answered body bytes */
	struct upload *up;     /* an upload or live stream's own state (upload.c); NULL otherwise */
	int64_t wait_deadline; /* a capture request waiting (captures.c); 0 before it acts */
	/* small bodies (SQL, PATCH) */
	char *body;
	size_t body_len;
	int body_too_big;
};

enum { MAX_SMALL_BODY = 65536 };

/* ---- replies and parameters (reply.c) ---- */

enum MHD_Result srv_send_body(struct MHD_Connection *c, struct req *r, unsigned status, char *body, size_t len,
			      const char *type);
/* {"error": {"code", "message"}} */
/* 503 with Retry-After: the object store cannot be reached now; the same
 * request later may well succeed. */
#define SRV_RETRY_AFTER "5"
enum MHD_Result srv_send_retry(struct MHD_Connection *c, struct req *r, const char *code, const char *msg);
enum MHD_Result srv_send_error(struct MHD_Connection *c, struct req *r, unsigned status, const char *code,
			       const char *msg);
/* A trace's object the catalog did not give (cat_json's rc): 503 when its
 * database cannot be reached, 500 when it could not be read, else 404
 * saying `gone`. */
enum MHD_Result srv_send_trace_error(struct MHD_Connection *c, struct req *r, int rc, const char *gone);
enum MHD_Result srv_send_json(struct MHD_Connection *c, struct req *r, unsigned status, struct jbuf *b);
enum MHD_Result srv_send_qry_error(struct MHD_Connection *c, struct req *r, const struct qry_error *e);
enum MHD_Result srv_method_not_allowed(struct MHD_Connection *c, struct req *r, const char *method);
/* Reads an optional integer query parameter; answers 400 itself and
 * returns -1 on error. */
int srv_param_i64(struct MHD_Connection *c, struct req *r, const char *key, int64_t def, int64_t min, int64_t max,
		  int64_t *out, int required);
/* start, end, resolution and limit; answers 400 itself on error. */
int srv_param_window(struct MHD_Connection *c, struct req *r, struct qry_window *w);
/* The required "tracks=1,2,3" list (at most 4096 ids) into a new array;
 * answers 400 itself on error. */
int64_t *srv_param_tracks(struct MHD_Connection *c, struct req *r, size_t *n);

struct cache_key {
	char buf[1024];
	size_t len;
	int overflow; /* too long to cache */
};
/* The cache key of a GET: its path and arguments in the order sent, and
 * whether the reply is gzip-compressed. 0, or -1 when too long to cache. */
int srv_cache_key(struct MHD_Connection *c, const char *path, struct cache_key *key);
/* Answers 200 with the JSON and keeps the reply under key (when not NULL). */
enum MHD_Result srv_send_cached_json(struct server *s, struct MHD_Connection *c, struct req *r, int64_t trace,
				     const struct cache_key *key, struct jbuf *b);

/* ---- parameters (params.c: pure, reached by tests/fuzz_http.c) ---- */

/* Parses a decimal integer in [min, max] (no sign '+', no spaces, no
 * trailing bytes); 0 on success, -1 otherwise. */
int srv_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* A decimal from 0 to 2^64 - 1, digits only (no sign, nothing after): 0,
 * or -1. */
int srv_parse_u64(const char *s, uint64_t *out);

enum { SRV_ROUTE_MAX_IDS = 2 };
/*
 * Matches an API path against a route pattern: segments separated by '/',
 * literal or "{id}" (a decimal from 1 to INT64_MAX, no sign, no leading
 * '+'), ids stored in order. A pattern ending in "/?" also matches the path
 * with one trailing '/' (no other pattern does). Returns
 * 0 on a match, -2 when the literal segments match but an {id} segment is
 * not an id, -1 otherwise.
 */
int srv_route_match(const char *pattern, const char *path, int64_t *ids);

/* ---- routes (routes.c) ---- */

/* One API request as a route handler sees it. */
struct call {
	struct server *s;
	struct MHD_Connection *c;
	struct req *r;
	const char *method;
	int64_t ids[SRV_ROUTE_MAX_IDS];
};

/* On a request's first call: when the route takes its body as a stream
 * (uploads, live streams), starts it, sets *ret and returns 1; else 0. */
int srv_api_stream(struct server *s, struct MHD_Connection *c, struct req *r, const char *url, const char *method,
		   enum MHD_Result *ret);
/* Answers an /api/ request, its body (if any) already read. */
/* The pattern of the route that answers method on url: the route of
 * both, else the first route of the path (which answers 405), else NULL
 * (a path no route knows). A static string. */
const char *srv_api_route(const char *url, const char *method);
enum MHD_Result srv_api(struct server *s, struct MHD_Connection *c, struct req *r, const char *url,
			const char *method);

/* ---- uploads (upload.c) ---- */

/* The first call of POST /api/traces (symbols_for 0) or POST
 * /api/traces/{id}/symbols. */
enum MHD_Result srv_upload_begin(struct server *s, struct MHD_Connection *c, struct req *r, int64_t symbols_for);
/* A piece of the body (n > 0) or its end (n == 0). */
enum MHD_Result srv_upload_data(struct server *s, struct MHD_Connection *c, struct req *r, const char *data,
				size_t n);
/* Closes and removes what an upload left, and frees its state (the request
 * ended); nothing for a request that carried none. */
void srv_upload_cleanup(struct req *r);

/* ---- captures and providers (captures.c) ---- */

enum MHD_Result srv_h_capture_new(struct call *x);
enum MHD_Result srv_h_capture_list(struct call *x);
enum MHD_Result srv_h_capture(struct call *x);
enum MHD_Result srv_h_capture_start(struct call *x);
enum MHD_Result srv_h_capture_stop(struct call *x);
enum MHD_Result srv_h_capture_delete(struct call *x);
enum MHD_Result srv_h_capture_alerts(struct call *x);
enum MHD_Result srv_h_capture_state(struct call *x);
enum MHD_Result srv_h_providers(struct call *x);
enum MHD_Result srv_h_categories(struct call *x);
enum MHD_Result srv_h_provider_connect(struct call *x);
/* Closes a provider's upgraded connection (the manager's close hook; http.c
 * gives it the suspend and resume hooks the catalog uses too). */
void srv_close_upgraded(void *handle);

/* ---- the library (library.c) ---- */

/* The library's filters of GET /api/traces (docs/API.md) from the query
 * string into f (sort by creation, no limit); 0, or -1 having answered
 * 400. */
int srv_library_filter(struct call *x, struct cat_filter *f);
enum MHD_Result srv_h_trends(struct call *x);
enum MHD_Result srv_h_query_many(struct call *x);

/* ---- notes (notes.c) ---- */

enum MHD_Result srv_h_note_create(struct call *x);
enum MHD_Result srv_h_notes_of_trace(struct call *x);
enum MHD_Result srv_h_notes(struct call *x);
enum MHD_Result srv_h_note(struct call *x);
enum MHD_Result srv_h_note_edit(struct call *x);
enum MHD_Result srv_h_note_delete(struct call *x);

/* ---- static files (static.c) ---- */

enum MHD_Result srv_static(struct server *s, struct MHD_Connection *c, struct req *r, const char *url,
			   const char *method);

/* ---- trace databases (dbpool.c) ---- */

/* The calling thread's read-only connection to a trace's database; NULL
 * when it cannot be opened, with *store_down 1 when that is for want of
 * the object store (--store) that holds it. Owned by the thread's pool. */
sqlite3 *srv_trace_db(struct server *s, int64_t id, int *store_down);
/* The request is done with the connection srv_trace_db gave. */
void srv_trace_db_done(sqlite3 *db);
/* Trace id's database is no more the one to read (the catalog's db_gone:
 * deleted, or ingested anew): every thread's connection to it is closed (at
 * once, or by its thread when it is done with it); what they held is
 * free, for the caller's heap_release (ingest/util.h) to give back. */
void srv_trace_db_forget(int64_t id);
/* A private read-only connection to a trace's database, for the caller to
 * close; NULL when it cannot be opened. */
sqlite3 *srv_trace_db_open(struct server *s, int64_t id);

/* ---- operations (metrics.c) ---- */

struct srv_metrics *srv_metrics_new(void);
void srv_metrics_free(struct srv_metrics *m);
/* Counts one answered request under route (NULL: "other"). */
void srv_metrics_request(struct srv_metrics *m, const char *route, const char *method, unsigned status,
			 double seconds);
/* GET /metrics (Prometheus text) and GET /healthz. */
enum MHD_Result srv_h_metrics(struct server *s, struct MHD_Connection *c, struct req *r);
enum MHD_Result srv_h_healthz(struct server *s, struct MHD_Connection *c, struct req *r);

#endif
