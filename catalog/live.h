/*
 * Live traces and previews (live.c): the live thread keeps a streaming
 * trace's database following the bytes received, and previews a large FXT
 * upload while the worker ingests it. The public side (cat_live_open,
 * cat_live_grew, cat_live_close, cat_readable) is in catalog.h.
 *
 * live.c owns the records' live group (struct rec_live: written by live.c
 * only) and its own state (struct cat_live, opaque: the thread and its
 * condition), both under the catalog's lock; each stream's window scan is
 * the thread's alone (live.c, struct live_slot), never shared.
 */
#ifndef CATALOG_LIVE_H
#define CATALOG_LIVE_H

#include <stdint.h>

struct catalog;
struct trace_rec;
struct ingest_result;

/* A live trace's snapshots, or an upload's preview while it is ingested
 * (memory only). */
struct rec_live {
	uint64_t snap_size;   /* bytes the newest snapshot tried to hold */
	uint64_t snap_visible;/* bytes the snapshot being served holds */
	uint64_t snap_from;   /* the first byte of the source it holds (window.h) */
	int64_t snap_due_ms;  /* monotonic time before which no new snapshot starts */
	int64_t grew_ms;      /* monotonic time its stream last grew (cat_live_grew) */
	int64_t pause_ms;     /* the pause before a whole snapshot (live.c, paused());
			       * 0: --live-pause */
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
	int preview;          /* an upload being ingested here: 1 preview.db holds
			       * a window of the bytes ingest has read
			       * (snap_visible, snap_from), served while the status
			       * is ingesting; -1 none is made (not FXT); 0 none
			       * yet. Reset, and the file removed, when an ingest
			       * starts or ends (cat_preview_drop_locked) */
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
/* Ends the preview of upload r's ingest (under mu, in the same hold as the
 * status change that starts or ends the ingest, so that no snapshot in
 * flight puts one back): its file removed, what it told of r cleared. A
 * live trace's own snapshot (trace.db) is left alone. */
void cat_preview_drop_locked(struct catalog *c, struct trace_rec *r);

#endif
