/*
 * Server internals shared by http.c and library.c.
 */
#ifndef SERVER_INTERNAL_H
#define SERVER_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "../query/query.h"

enum trace_status { TS_QUEUED, TS_INGESTING, TS_READY, TS_FAILED };

/* Someone waiting for a trace's ingest to end (a suspended connection). */
struct waiter {
	void *conn;
	struct waiter *next;
};

struct trace_rec {
	int64_t id;
	char *name;
	char format[16];      /* "" until known */
	char format_hint[16]; /* "" = detect */
	uint64_t size;
	int status;           /* enum trace_status */
	uint64_t bytes_done;  /* ingest progress */
	char error_code[32];
	char *error_msg;      /* NULL when none */
	char created_at[32];
	time_t created;       /* created_at, parsed */
	int64_t start_ns, end_ns;
	char *summary;        /* JSON members: "counts":{},"providers":[],"diagnostics":{} */
	int64_t symbols_named;/* XRay: functions named; -1 before ingest */
	char *symbols_error;  /* XRay: why the symbols given were not usable; NULL when none */
	char *binary_name;    /* XRay: base name of the ELF binary given as symbols; NULL when none */
	struct waiter *waiters;
};

/* The catalog: the list of traces in memory, written through to catalog.db.
 * Every field of every record is guarded by mu. */
struct library {
	char *dir;
	sqlite3 *catalog;
	pthread_mutex_t mu;
	pthread_cond_t work;   /* signalled when a trace is queued or on stop */
	struct trace_rec **v;  /* oldest first */
	size_t n, cap;
	int64_t next_id;
	int stop;
	pthread_t worker;
	int worker_started;
	int64_t keep_failed;   /* seconds a failed trace stays listed; 0 = remove at once */
	void (*resume)(void *conn);  /* wakes a waiting connection */
	void (*suspend)(void *conn); /* puts a connection to sleep (called under mu) */
};

int lib_open(struct library *l, const char *dir, char *err, size_t errlen);
/* Stops the worker and wakes every waiting connection. */
void lib_stop(struct library *l);
void lib_close(struct library *l);
/* Starts the ingest worker. */
int lib_start(struct library *l);
/* Takes a spooled upload (moved, not copied) as a new trace and queues it.
 * Returns the id, or -1 with err set. */
int64_t lib_add(struct library *l, const char *name, const char *spool, uint64_t size, const char *format_hint,
		const char *binary_spool, const char *binary_filename, char *err, size_t errlen);
/* Takes a spooled instrumented binary or symbol map for an XRay trace (moved)
 * and names its functions now if the trace is ready, else at ingest.
 * Returns 0, or -1 with err set (the file is then left to the caller). */
int lib_symbols(struct library *l, int64_t id, const char *spool, const char *filename, char *err, size_t errlen);
/* Appends the trace object; 0, or -1 when there is no such trace. */
int lib_json(struct library *l, int64_t id, struct jbuf *out);
void lib_json_list(struct library *l, struct jbuf *out);
int lib_delete(struct library *l, int64_t id);
/* Status of a trace, or -1 when unknown. */
int lib_status(struct library *l, int64_t id);
/* Registers a connection to resume when ingest ends and suspends it; 0, or
 * -1 when the trace has already ended (or does not exist): answer at once. */
int lib_wait(struct library *l, int64_t id, void *conn);
/* Paths of a trace's files. */
void lib_path(const struct library *l, int64_t id, const char *file, char *out, size_t n);
/* The spool directory for uploads in progress. */
void lib_spool_dir(const struct library *l, char *out, size_t n);
size_t lib_count(struct library *l);

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

/* ---- parameters (params.c) ---- */

/* Parses a decimal integer in [min, max] (no sign '+', no spaces, no
 * trailing bytes); 0 on success, -1 otherwise. */
int srv_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* /api/traces[/{id}[/{sub}[/{sub_id}]]] */
struct srv_route {
	int64_t id;      /* trace id, -1 when none */
	const char *sub; /* the part after /api/traces/{id}/, "" when none; points into the caller's buffer */
	int64_t sub_id;  /* /slices/{sub_id}, -1 when none */
};

/* Splits an API path; 0, -1 when it is not one of ours, -2 for a bad id.
 * sub (subn bytes) receives the sub-resource name. */
int srv_route_parse(const char *url, struct srv_route *rt, char *sub, size_t subn);

#endif
