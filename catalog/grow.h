/*
 * Traces grown in place as their bytes arrive (grow.c), as the catalog
 * runs them: a live FXT stream is ingested once, by a process of its own
 * that follows its source (ingest/grow.h) and commits trace.db in place;
 * requests read its last commit (records: live.snapshot, snap_visible).
 * When the stream ends that process finishes the database, and the worker
 * takes its result (cat_grown_take) instead of ingesting again.
 *
 * The live thread calls cat_grows_service_locked each round; the state of
 * each growing ingest (struct cat_grows) is that thread's own, and what it
 * learns goes to the records' live group under mu (live.h).
 */
#ifndef CATALOG_GROW_H
#define CATALOG_GROW_H

#include <stdint.h>

#include "../ingest/ingest.h"

struct catalog;
struct cat_grows;

/* The ids reserved at a time for a growing trace's rows (extents.h): the
 * layout every trace that came as a stream is ingested with. */
enum { CAT_GROW_EXTENT_ROWS = 4096 };

struct cat_grows *cat_grows_new(void);
/* Stops every growing ingest still running (their databases stay: a
 * restart ingests those traces whole, cat_live_recover) and frees gs. */
void cat_grows_free(struct cat_grows *gs);

/*
 * One round (under mu, released meanwhile): every live trace of this
 * server found to be FXT gets its growing ingest, told what arrived and
 * when the stream ended; commits go to the records, and an ingest that
 * ended leaves its result in the record (live.grown_done) for the live
 * thread to hand the trace to the worker. Returns how soon, in ms, to
 * look again (-1: no ingest runs).
 */
int64_t cat_grows_service_locked(struct catalog *c, struct cat_grows *gs);

/* The worker, about to ingest trace id: 1 when a growing ingest made its
 * database already (*res and *rc its result, taken), else 0. Takes mu. */
int cat_grown_take(struct catalog *c, int64_t id, struct ingest_result *res, int *rc);

/*
 * An upload grown while it is ingested: an FXT upload of --preview-min
 * bytes or more, ingested by this server's own worker (not a shared job),
 * is ingested by a growing ingest that follows its (whole) source as a
 * stream that arrives fast, so that the trace is read from its first byte
 * while it is ingested (records: live.preview 1, snap_visible; trace.db,
 * in WAL mode, is read where it is written). cat_grows_upload says whether
 * trace id's ingest is one (hint: its format hint). cat_grow_upload runs
 * it into db, each commit going to the record while its status is
 * ingesting; returns ingest_file's codes, with *res its result
 * (INGEST_ECANCEL when the trace went or the catalog stops). A failed
 * ingest leaves no database. step_ms > 0 (tests only): the source is told
 * a megabyte at a time, that often.
 */
int cat_grows_upload(struct catalog *c, int64_t id, const char *src, const char *hint);
/* The worker, about to ingest trace id, an upload whose body still
 * arrives that does not grow (catalog.h, cat_upload_grows): waits until
 * its body ended. */
void cat_upload_wait(struct catalog *c, int64_t id);
int cat_grow_upload(struct catalog *c, int64_t id, const char *src, const char *db, int step_ms,
		    struct ingest_result *res);

#endif
