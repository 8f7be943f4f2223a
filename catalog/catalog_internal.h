/*
 * Inside the catalog: the records, the lock, and the pieces that share
 * them (catalog.c: records and catalog.db; list.c: filters and pages;
 * worker.c: ingest; names.c: the name index and search across traces;
 * retention.c: what the bounds remove).
 */
#ifndef CATALOG_INTERNAL_H
#define CATALOG_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#include "catalog.h"
#include "storage.h"

/* Someone waiting for a trace's ingest to end (a suspended connection). */
struct waiter {
	void *conn;
	struct waiter *next;
};

struct trace_rec {
	int64_t id;
	char *name;
	char *description;    /* "" when none */
	struct cat_label *labels; /* sorted by key */
	size_t nlabels;
	int pinned;
	char format[16];      /* "" until known */
	char format_hint[16]; /* "" = detect */
	uint64_t size;        /* uploaded bytes */
	uint64_t stored;      /* bytes on disk, every file; 0 until known */
	int status;           /* enum trace_status */
	uint64_t bytes_done;  /* ingest progress */
	char error_code[32];
	char *error_msg;      /* NULL when none */
	char created_at[32];
	time_t created;       /* created_at, parsed */
	int64_t start_ns, end_ns;
	char *summary;        /* JSON members: "counts":{},"providers":[],"diagnostics":{},"processes":[] */
	int indexed;          /* the name index holds this trace */
	int64_t symbols_named;/* XRay: functions named; -1 before ingest */
	char *symbols_error;  /* XRay: why the symbols given were not usable; NULL when none */
	char *binary_name;    /* XRay: base name of the ELF binary given as symbols; NULL when none */
	struct waiter *waiters;
	/* live traces (live.c) */
	char stream[16];      /* "" an upload; "receiving", "complete", "dropped", "interrupted" */
	uint64_t snap_size;   /* bytes the newest snapshot tried to hold */
	uint64_t snap_visible;/* bytes the snapshot being served holds */
	uint64_t snap_from;   /* the first byte of the source it holds (window.h) */
	int64_t snap_due_ms;  /* monotonic time before which no new snapshot starts */
	int snapshot;         /* 1: trace.db holds a snapshot (or the whole trace) */
};

/* Every field of every record is guarded by mu. */
struct catalog {
	struct storage store;
	char *dir;
	sqlite3 *db;           /* catalog.db, written under mu */
	sqlite3 *reader;       /* catalog.db for searches, under read_mu */
	pthread_mutex_t read_mu;
	pthread_mutex_t mu;
	pthread_cond_t work;   /* signalled when a trace is queued or on stop */
	struct trace_rec **v;  /* oldest first */
	size_t n, cap;
	int64_t next_id;
	int stop;
	pthread_t worker;
	int worker_started;
	pthread_t live;        /* makes live traces' snapshots (live.c) */
	int live_started;
	pthread_cond_t live_work; /* signalled when a live trace gets bytes or ends */
	struct cat_opts o;
	struct cat_stats stats; /* the work done since the start (stats.c) */
	time_t store_retry_at;  /* no ingest starts before: the store was down (worker.c) */
};

extern const char *const cat_status_names[TS_NSTATUS];

struct trace_rec *cat_find(struct catalog *c, int64_t id);
/* Writes one record (and its labels) to catalog.db; under mu. */
int cat_save(struct catalog *c, const struct trace_rec *r);
void cat_rec_json(const struct trace_rec *r, struct jbuf *out);
/* The labels object {"key": "value", ...}, keys in byte order. */
void cat_labels_json(const struct trace_rec *r, struct jbuf *out);
/* t as "YYYY-MM-DDTHH:MM:SSZ" (UTC), the catalog's time format. */
void cat_rfc3339(time_t t, char *out, size_t n);
void cat_rec_free(struct trace_rec *r);
/* Takes trace id out of the list, catalog.db and storage (under mu);
 * returns the record for the caller to free, NULL when there is none. */
struct trace_rec *cat_remove_locked(struct catalog *c, int64_t id);
void cat_wake(struct catalog *c, struct trace_rec *r);

/* Records a new trace in status (TS_QUEUED, or TS_LIVE receiving). */
int64_t cat_add_as(struct catalog *c, const struct cat_new *nw, int status, char *err, size_t errlen);

/* worker.c */
void *cat_worker_main(void *arg);
struct ingest_result;
/* The JSON members kept in a record's summary column, from ingest's result
 * and the trace's metadata (qry_trace_metadata); NULL when out of memory or
 * when the database cannot be read. */
char *cat_summary_json(const struct ingest_result *res, const char *db_path);

/* live.c */
void *cat_live_main(void *arg);
/* A live trace caught by a restart: its stream was interrupted (under mu). */
void cat_live_recover(struct trace_rec *r);

/* names.c: the per-trace name index, kept in catalog.db. */
/* Reads a ready trace's database and writes its index rows (not under
 * mu: it only touches the index tables, through its own connection). */
int cat_index_trace(struct catalog *c, int64_t id, const char *db_path);
/* Drops a trace's index rows; under mu. */
void cat_unindex_locked(struct catalog *c, int64_t id);

/* retention.c */
struct cat_removal {
	int64_t id;
	const char *reason; /* "age", "space" */
};
/*
 * What the retention bounds remove now, oldest first: unpinned ready or
 * failed traces older than retain_days, then while the space used exceeds
 * retain_bytes the oldest unpinned ready or failed ones. Pure: reads the
 * records only (under mu). Returns how many were put in out (at most max).
 */
size_t cat_retention_plan(struct trace_rec *const *v, size_t n, const struct cat_opts *o, time_t now,
			  struct cat_removal *out, size_t max);

#endif
