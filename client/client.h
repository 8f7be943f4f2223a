/*
 * The command line's clients of a running server: `trace-server stream`
 * (stream.c) sends a growing file or standard input as a live trace, over
 * a small HTTP/1.1 client of its own (conn.c). They talk to the server
 * only through its documented API (docs/API.md), as any other client.
 */
#ifndef CLIENT_CLIENT_H
#define CLIENT_CLIENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* A server's address, from "http://host[:port][/]" (the default port 80;
 * no TLS) and its token (from --token-file or $TRACE_TOKEN, "" for none). */
struct cl_server {
	char host[256];
	int port;
	char token[256];
};

/* Parses url into s (the token left as it is); 0, or -1 with err set. */
int cl_parse_url(const char *url, struct cl_server *s, char *err, size_t errlen);
/* Reads the first line of path as the token; 0, or -1 with err set. */
int cl_read_token(const char *path, struct cl_server *s, char *err, size_t errlen);
/* A connected TCP socket to the server, or -1 with err set. */
int cl_connect(const struct cl_server *s, char *err, size_t errlen);
/* Writes all n bytes; 0, or -1. */
int cl_write_all(int fd, const void *p, size_t n);
/* Appends s percent-encoded for a query string to out (of size n); 0, or -1
 * when it does not fit. */
int cl_query_escape(char *out, size_t n, const char *s);
/* One request without a body (GET, DELETE) and its reply: status, and up
 * to n - 1 bytes of body in out. The status, or -1 with err set. */
int cl_get(const struct cl_server *s, const char *method, const char *path, char *out, size_t n, char *err,
	   size_t errlen);

/* Plays a provider (provide.c): registers as name (announcing categories,
 * comma-separated), and sends in's records into every capture that starts
 * it until TERMINATE, the connection's end or *stop. The exit status. */
int cl_provide(const struct cl_server *s, const char *name, const char *categories, int in, int follow,
	       volatile sig_atomic_t *stop);

/* trace-server stream ...; argv[0] is "stream". The exit status. */
int cl_stream_main(int argc, char **argv);

#endif
