/*
 * Live traces (live.c): the live thread grows a live FXT stream's database
 * in place (grow.c) and snapshots any other stream's whole as its bytes
 * come. The public side (cat_live_open, cat_live_grew, cat_live_close,
 * cat_readable) is in catalog.h.
 *
 * live.c and grow.c own the records' live group (struct rec_live: written
 * by them only), under the catalog's lock.
 */
#ifndef CATALOG_LIVE_H
#define CATALOG_LIVE_H

#include <stdint.h>

struct catalog;
struct trace_rec;
struct ingest_result;

/* What a trace shows before it is ready: a live trace's snapshots or
 * commits, or a growing upload's commits while it is ingested (memory
 * only). */
struct rec_live {
	uint64_t snap_size;   /* bytes the newest snapshot tried to hold */
	uint64_t snap_visible;/* bytes the database being served equals, as a file
			       * (a stream's); the bytes a growing upload's last
			       * commit holds the records of */
	int64_t snap_due_ms;  /* monotonic time before which no new snapshot starts */
	int64_t handover_ms;  /* a stream that ended, the store down (shared jobs):
			       * monotonic time it is handed to the worker again */
	int snapshot;         /* 1: trace.db holds a snapshot (or the whole trace) */
	int growing;          /* 1: an FXT stream grown in place by its own ingest
			       * (grow.c), not snapshotted; -1: not FXT; 0: not known yet */
	int grown_done;       /* its growing ingest ended: grown holds the result */
	struct ingest_result *grown; /* ... until the worker takes it (cat_grown_take) */
	int grown_rc;
	uint64_t grown_restarts; /* the order's restarts its commits reported (ingest.h) */
	uint64_t grown_bytes; /* the bytes its last commit holds the records of */
	int arriving;         /* an upload whose body still arrives (cat_upload_grows):
			       * its source holds `arrived` bytes of state.size */
	uint64_t arrived;
	int preview;          /* an upload being ingested here grows in place
			       * (grow.h): 1 once trace.db holds a commit, served
			       * while the status is ingesting; 0 before. Reset
			       * when an ingest starts or ends
			       * (cat_preview_drop_locked) */
};

struct cat_live;

/* live.c's state; NULL when out of memory. */
struct cat_live *cat_live_create(void);
void cat_live_destroy(struct cat_live *l);
/* Starts the live thread: 0 or CAT_EFAIL. cat_live_wake (under mu) tells
 * it a trace got bytes, an ingest began decoding, or the catalog stops;
 * cat_live_join waits for it to end. */
int cat_live_start(struct catalog *c);
void cat_live_wake(struct catalog *c);
void cat_live_join(struct catalog *c);

/* A live trace caught by a restart: its stream was interrupted, what it
 * received is ingested whole (under mu, or before any thread runs). */
void cat_live_recover(struct catalog *c, struct trace_rec *r);
/* Forgets what upload r's growing ingest told of it (under mu, in the
 * same hold as the status change that starts or ends the ingest): what its
 * commits showed is cleared, and its database is no more read until the
 * trace is ready. A live trace's own is left alone. */
void cat_preview_drop_locked(struct trace_rec *r);

#endif
