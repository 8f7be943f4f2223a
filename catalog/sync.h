/*
 * The records and the catalog's database in step (sync.c): every write of
 * a record to the database (cat_save), the writes a database that was down
 * missed (unsaved, written again), and with a shared catalog what other
 * servers changed, read every CAT_SYNC_MS by the syncer thread.
 *
 * sync.c owns the records' sync group (struct rec_sync) and its own state
 * (struct cat_sync, opaque: the newest change read, the records taken out
 * since, the unsaved count, the syncer thread). Both are guarded by the
 * catalog's lock (mu), as the records are: what a load read is applied to
 * them in one hold.
 */
#ifndef CATALOG_SYNC_H
#define CATALOG_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "catdb.h"

struct catalog;
struct trace_rec;

/* A record against the database (written by sync.c only; a loader fills a
 * new record's). */
struct rec_sync {
	int foreign;          /* 1: another server's trace, its files not in this
			       * server's store: never ingested, indexed or removed
			       * by retention here, its state taken from the database */
	int64_t version;      /* the version of its row in a shared catalog that
			       * this record holds (catdb.h save); 0 with catalog.db */
	unsigned unsaved;     /* bits of 1 << enum catdb_part that could not be
			       * written (database down): written again by cat_sync */
};

struct cat_sync;

/* sync.c's state; NULL when out of memory. */
struct cat_sync *cat_sync_create(void);
void cat_sync_destroy(struct cat_sync *s);
/* The records read at the start (before any thread runs), another server's
 * marked foreign: 0, or CAT_EFAIL with err. */
int cat_sync_first(struct catalog *c, char *err, size_t errlen);
/* Starts the syncer (shared catalogs only; nothing to do with catalog.db):
 * 0 or CAT_EFAIL. cat_sync_wake (under mu) tells it the catalog stops,
 * cat_sync_join waits for it. */
int cat_sync_start(struct catalog *c);
void cat_sync_wake(struct catalog *c);
void cat_sync_join(struct catalog *c);

/*
 * Brings the records up to date with what other servers wrote to a shared
 * catalog, at most every CAT_SYNC_MS unless force (under mu); writes again
 * what could not be saved. 0, or CAT_EUNAVAILABLE when the database cannot
 * be reached. Nothing to do (0) with catalog.db. Once the syncer runs, a
 * look that is not forced is its last result: the requests never wait on
 * the database for it.
 */
enum { CAT_SYNC_MS = 100 };
int cat_sync_locked(struct catalog *c, int force);
/* Every record is read again at the next look (the worker's record of a
 * job it did not commit missed what others wrote meanwhile); under mu. */
void cat_sync_reread_locked(struct catalog *c);
/* r left the records (deleted, forgotten, or an upload not kept): its
 * unsaved writes are given up, and a load read before may still hold it;
 * under mu. */
void cat_sync_unlinked_locked(struct catalog *c, const struct trace_rec *r);

/* Writes part of a record (with its labels) to the catalog's database;
 * under mu. 0, or CAT_EUNAVAILABLE (then kept as unsaved, written again
 * when the database is back), or CAT_ECONFLICT (META only: another server
 * changed the record since it was read), or CAT_EFAIL; failures are
 * logged. A queued trace's save queues its shared job too (jobs.h). */
int cat_save(struct catalog *c, struct trace_rec *r, enum catdb_part part);
/* Marks part of r unsaved (the database down: cat_sync writes it again),
 * or no longer (written, or given up); under mu. */
void cat_unsaved_mark(struct catalog *c, struct trace_rec *r, enum catdb_part part);
void cat_unsaved_clear(struct catalog *c, struct trace_rec *r, enum catdb_part part);

#endif
