/*
 * Where the catalog keeps its records: one interface over the database
 * behind it, so that catalog.c, names.c and the worker never write SQL.
 *
 * Two backends: catdb_sqlite.c, catalog.db under --data (the default, one
 * server), and catdb_pg.c, a PostgreSQL database shared by several servers
 * (--catalog postgres://...). With a shared database another server may
 * change a record at any time, so the catalog asks for what changed since
 * it last looked (load with a version); SQLite has no other writer and
 * answers that with nothing.
 *
 * Every operation returns CATDB_OK, or CATDB_EFAIL (the statement failed:
 * a bug, a full disk, a constraint) or CATDB_EDOWN (the database cannot be
 * reached now; the backend reconnects by itself on a later call), with a
 * sentence in err; remove also CATDB_ENOENT (another server removed it),
 * save CATDB_ECONFLICT (below), and the jobs' operations CATDB_ENOENT as
 * they say. The catalog maps EDOWN to CAT_EUNAVAILABLE (503).
 *
 * Each backend serializes the use of its connections itself (catdb_pg.c's
 * lanes, catdb_sqlite.c's two locks): any thread may call any operation,
 * without the catalog's lock. The catalog saves and removes records under
 * it all the same, for their order (sync.h: cat_save).
 */
#ifndef CATALOG_CATDB_H
#define CATALOG_CATDB_H

#include <stddef.h>
#include <stdint.h>

#include "notes.h"

struct trace_rec;

enum catdb_err { CATDB_OK = 0, CATDB_EFAIL = -1, CATDB_EDOWN = -2, CATDB_ENOENT = -3, CATDB_ECONFLICT = -4 };

/* Which columns of a record a save writes. SQLite writes them all every
 * time (it is the only writer); PostgreSQL writes only the part named, so
 * that a server renaming another server's trace does not write back that
 * trace's ingest state as it last saw it, nor the owner its old name. */
enum catdb_part {
	CATDB_ALL,   /* a new record */
	CATDB_META,  /* name, description, pinned, labels: what PATCH changes */
	CATDB_STATE, /* everything else: what ingest and live streams change */
};

/* What a load read: records (with their labels) and deletions. */
struct catdb_batch {
	struct trace_rec **v;  /* in id order; each the caller's to free */
	size_t n;
	int64_t *gone;         /* ids of records deleted since; the caller's */
	size_t ngone;
	int64_t version;       /* the newest change read: the next load's since */
};
void catdb_batch_free(struct catdb_batch *b);
/* The record of id in b (a binary search: they are in id order); NULL when none. */
struct trace_rec *catdb_batch_find(const struct catdb_batch *b, int64_t id);

/* One row of a search across traces: a name of a trace that contains the
 * text. Rows come in trace order, a trace's names in any order. */
struct catdb_name_row {
	int64_t trace;
	const char *name;
	int64_t count, ended, total_ns, max_ns;
	const void *sketch;    /* tracedb/sketch.h's serialized form */
	size_t sketch_len;
};

/* A claimed ingest job (shared ingest, below). */
struct catdb_job {
	int64_t trace;         /* the trace to ingest */
	int64_t token;         /* fencing token: larger for every claim of any job */
	int attempts;          /* claims of this job so far, this one included */
};

/* A note on a trace (docs/API.md, Notes). has_range 0: on the whole
 * trace; else on [start_ns, end_ns], on track (0: none) and slice (0:
 * none). Strings are the caller's (in) or valid during a row callback. */
struct catdb_note {
	int64_t id, trace;
	int has_range;
	int64_t start_ns, end_ns;
	int64_t track, slice;
	const char *text, *author;
	const char *created_at, *edited_at; /* edited_at NULL: never edited */
};

struct catdb;

struct catdb_ops {
	/*
	 * Every record when since is 0; otherwise those saved or deleted
	 * after the change numbered since. out is the caller's to free with
	 * catdb_batch_free, also on error.
	 */
	int (*load)(struct catdb *db, int64_t since, struct catdb_batch *out, char *err, size_t errlen);
	/*
	 * Writes part of r (and its labels with META or ALL), atomically.
	 * *version (NULL: not tracked) is the row's version the caller's
	 * record holds: a META save is refused with CATDB_ECONFLICT when the
	 * row changed since (another server wrote it: read it again, apply
	 * the change again). After a save *version is the row's new version
	 * when the caller held the one before (it now holds all of the row),
	 * else it stays (the next load brings the rest). catalog.db has no
	 * other writer and leaves *version alone.
	 */
	int (*save)(struct catdb *db, const struct trace_rec *r, enum catdb_part part, int64_t *version, char *err,
		    size_t errlen);
	/* Removes record id, its labels and its name-index rows. */
	int (*remove)(struct catdb *db, int64_t id, char *err, size_t errlen);
	/* A new trace id, never given before (not even for a deleted trace). */
	int (*next_id)(struct catdb *db, int64_t *id, char *err, size_t errlen);
	/* Replaces trace id's name-index rows with the name statistics of the
	 * trace database at db_path (qry_name_stats), in one transaction. Not
	 * called under the catalog's lock: it may take a while. */
	int (*index)(struct catdb *db, int64_t id, const char *db_path, char *err, size_t errlen);
	/* Drops trace id's name-index rows. */
	int (*unindex)(struct catdb *db, int64_t id, char *err, size_t errlen);
	/* Calls row for each name-index row whose name contains q (ASCII
	 * letters in any case); a row callback returning nonzero stops it
	 * with CATDB_EFAIL. */
	int (*search)(struct catdb *db, const char *q, int (*row)(void *ctx, const struct catdb_name_row *r),
		      void *ctx, char *err, size_t errlen);
	/* Whether the database answers now. */
	int (*ping)(struct catdb *db, char *err, size_t errlen);
	/*
	 * Shared ingest jobs, for servers sharing one catalog: a job is
	 * queued once, claimed by one server at a time for lease_ms (FOR
	 * UPDATE SKIP LOCKED), kept by renewing the lease (a heartbeat), and
	 * ends with job_done, which writes the trace's state only while the
	 * claim's token is still the job's: a server paused past its lease,
	 * whose job another server claimed since, is refused (fencing). NULL
	 * with catalog.db, whose one server queues in memory (worker.c).
	 * job_claim answers CATDB_ENOENT when no job is free; job_renew and
	 * job_done CATDB_ENOENT when the claim was lost.
	 */
	int (*job_queue)(struct catdb *db, int64_t trace, char *err, size_t errlen);
	int (*job_claim)(struct catdb *db, const char *owner, int lease_ms, struct catdb_job *out, char *err,
			 size_t errlen);
	int (*job_renew)(struct catdb *db, const struct catdb_job *j, int lease_ms, char *err, size_t errlen);
	int (*job_done)(struct catdb *db, const struct catdb_job *j, const struct trace_rec *r, char *err,
			size_t errlen);
	/*
	 * Notes, read and written straight in the database (no copy in
	 * memory), so that every server sharing it sees a note at once.
	 * note_add sets n->id; note_edit changes text and author where not
	 * NULL, and edited_at; note_edit and note_remove answer CATDB_ENOENT
	 * for a note that is not there. note_counts calls row once per
	 * trace with notes (trace 0), or for that trace only when it has
	 * some. remove() takes a trace's notes with it.
	 */
	int (*note_add)(struct catdb *db, struct catdb_note *n, char *err, size_t errlen);
	int (*note_edit)(struct catdb *db, int64_t id, const char *text, const char *author, const char *edited_at,
			 char *err, size_t errlen);
	int (*note_remove)(struct catdb *db, int64_t id, char *err, size_t errlen);
	int (*note_list)(struct catdb *db, const struct cat_note_query *q,
			 int (*row)(void *ctx, const struct catdb_note *n), void *ctx, char *err, size_t errlen);
	int (*note_counts)(struct catdb *db, int64_t trace, int (*row)(void *ctx, int64_t trace, int64_t count),
			   void *ctx, char *err, size_t errlen);
	/* As search, the rows of exactly this name, in trace order (trends). */
	int (*name_exact)(struct catdb *db, const char *name, int (*row)(void *ctx, const struct catdb_name_row *r),
			  void *ctx, char *err, size_t errlen);
	void (*close)(struct catdb *db);
	/* Gives back the memory its connections cache, for the end of an
	 * ingest (worker.c); NULL where the catalog's cache is not this
	 * process's (PostgreSQL). */
	void (*release)(struct catdb *db);
};

struct catdb {
	const struct catdb_ops *ops;
};

/* catalog.db under dir, created or brought up to date. NULL with err. */
struct catdb *catdb_sqlite_open(const char *dir, char *err, size_t errlen);
/* A PostgreSQL catalog at url (a libpq connection string or URI; the
 * password, if any, from PGPASSWORD or ~/.pgpass, never the command line):
 * its schema created or migrated under an advisory lock. NULL with err. */
struct catdb *catdb_pg_open(const char *url, char *err, size_t errlen);

#endif
