/*
 * Inside client/: the one HTTP client the commands share (http.c, over
 * libcurl, replies read with cJSON), and the provider's upgraded socket
 * (provide.c), which the rest of the tree does not need.
 */
#ifndef CLIENT_CLIENT_INTERNAL_H
#define CLIENT_CLIENT_INTERNAL_H

#include <signal.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The most of a reply's body kept; the rest is read and dropped. */
#define CL_REPLY_MAX (1u << 20)

/* A server: its address from "http://host[:port][/]" (port 80 by default;
 * no TLS) and its token (from --token-file or $TRACE_TOKEN, "" for none). */
struct cl_server {
	char host[256];  /* as in a URL: an IPv6 address keeps its brackets */
	int port;        /* 1..65535 */
	char token[1024]; /* sent as "Authorization: Bearer" when not "" */
};

/* A reply. cl_reply_fini frees it; a zeroed one may be finished. */
struct cl_reply {
	int status;  /* the HTTP status, or -1 when no HTTP reply came */
	char *body;  /* the body, NUL-terminated (at most CL_REPLY_MAX bytes); never NULL after a request */
	size_t len;  /* bytes in body */
	cJSON *json; /* the body parsed, or NULL when it is not JSON */
	char why[256]; /* when the transfer failed: why ("Connection refused", ...); else "" */
	int unreachable; /* no connection was made (refused, unknown host) */
};

/* What a streamed body's reader returns besides a count of bytes (> 0) or
 * 0 at the body's end: none yet (asked again within 100 ms), or a failure
 * that cuts the request. */
enum { CL_READ_AGAIN = -1, CL_READ_FAIL = -2 };
typedef long (*cl_read_fn)(void *arg, char *buf, size_t cap);

/* Parses url into s (the token left as it is): "http://host[:port][/]", or
 * "host[:port]". 0, or -1 with err set. */
int cl_parse_url(const char *url, struct cl_server *s, char *err, size_t errlen);
/* Reads the first line of path as the token; 0, or -1 with err set. */
int cl_read_token(const char *path, struct cl_server *s, char *err, size_t errlen);
/* Appends s percent-encoded for a query string to out (of size n); 0, or -1
 * when it does not fit or memory ran out. */
int cl_query_escape(char *out, size_t n, const char *s);

/*
 * One request to s: method ("GET", "POST", "DELETE") on path (from "/"),
 * with json as its body (Content-Type: application/json), or no body when
 * json is NULL. The reply in *r (fini it, whatever this returns). Returns
 * r->status.
 */
int cl_request(const struct cl_server *s, const char *method, const char *path, const char *json,
	       struct cl_reply *r);
/*
 * A POST to path whose body is read from read(arg, ...) as it comes and
 * sent chunked (as `curl -T -` does) until read returns 0; the reply in *r
 * as for cl_request. Returns r->status; -1 also when read failed or the
 * connection broke before the reply (r->why says which).
 */
int cl_upload(const struct cl_server *s, const char *path, const char *content_type, cl_read_fn read, void *arg,
	      struct cl_reply *r);
void cl_reply_fini(struct cl_reply *r);
/* libcurl's global state, once per command, before any request and before
 * a second thread; 0, or -1. */
int cl_global_init(void);
void cl_global_fini(void);

/* Plays a provider (provide.c): registers as name (announcing categories,
 * comma-separated), and sends in's records into every capture that starts
 * it until TERMINATE, the connection's end or *stop. The exit status. */
int cl_provide(const struct cl_server *s, const char *name, const char *categories, int in, int follow,
	       volatile sig_atomic_t *stop);

#endif
