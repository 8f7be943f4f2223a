/*
 * Inside the catalog: the records, the lock, and what every piece of the
 * catalog shares. The pieces, each with what it owns:
 *
 *   catalog.c    the records' list, open/close, add, patch, delete (here)
 *   record.c     every change of a record's meta, state and progress (here)
 *   sync.c       the records and the database in step (sync.h)
 *   worker.c     the ingest worker, jobs.c the shared ingest jobs (jobs.h)
 *   live.c       live traces' snapshots and ingests' previews (live.h)
 *   catdb_*.c    the database the records are kept in (catdb.h)
 *   storage*.c   the traces' files (storage.h); source.c their sources
 *   list.c, json.c, names.c, trends.c, notes.c, retention.c, stats.c:
 *                what the records answer (they only read them)
 *
 * The lock (mu) is held around the records themselves and nothing slow:
 * ingest, the store and the traces' files are worked on without it, and
 * the lock taken again to change a record. What does run under it, each
 * said where it is, is what must go in the same hold as a record's change:
 * the write of that change to the database (sync.h: cat_save, a shared
 * job's queueing and commit in jobs.c), a record's removal from it
 * (cat_remove_locked), and what a growing ingest's commit tells of a trace
 * with the status that allows it (grow.h). A function named _locked is called
 * under mu; the others take it themselves.
 */
#ifndef CATALOG_INTERNAL_H
#define CATALOG_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#include "catalog.h"
#include "catdb.h"
#include "jobs.h"
#include "live.h"
#include "storage.h"
#include "sync.h"
#include "../ingest/util.h"

/* Someone waiting for a trace's ingest to end (a suspended connection). */
struct waiter {
	void *conn;
	struct waiter *next;
};

/*
 * A trace's record, its fields grouped by who writes them. Every field is
 * guarded by the catalog's lock (mu), and each group has one writer:
 *
 *   meta, state, progress  record.c, through the changes it names (rec_*):
 *                          whoever changes a trace (an upload, a patch, an
 *                          ingest's end, a stream) asks record.c to;
 *   live                   live.c (snapshots and previews; memory only);
 *   sync                   sync.c (a shared catalog's bookkeeping);
 *   waiters                catalog.c (cat_wait, cat_wake);
 *   source_seen            worker.c.
 *
 * A record read from the database is filled whole by its backend's loader
 * (catdb_*.c) before it joins the records; from then on only the owners
 * write. json.c, list.c and the others only read.
 */

/* What a trace's uploader and PATCH say of it: the catalog's database
 * keeps it as CATDB_META. */
struct rec_meta {
	char *name;
	char *description;    /* "" when none */
	struct cat_label *labels; /* sorted by key */
	size_t nlabels;
	int pinned;
};

/* What the trace is and what its ingest found: CATDB_STATE. */
struct rec_state {
	int status;           /* enum trace_status */
	char format[16];      /* "" until known */
	char format_hint[16]; /* "" = detect */
	uint64_t size;        /* uploaded bytes (a stream's: received so far) */
	uint64_t stored;      /* bytes on disk, every file; 0 until known */
	char error_code[32];
	char *error_msg;      /* NULL when none */
	char created_at[32];
	time_t created;       /* created_at, parsed */
	int64_t start_ns, end_ns;
	char *summary;        /* JSON members: "counts":{},"providers":[],"diagnostics":{},"processes":[] */
	int indexed;          /* the name index holds this trace: 1; 0 not yet;
			       * -1 being indexed, 2 failed (memory only, saved as 0) */
	int64_t symbols_named;/* XRay: functions named; -1 before ingest */
	char *symbols_error;  /* XRay: why the symbols given were not usable; NULL when none */
	char *binary_name;    /* XRay: base name of the ELF binary given as symbols; NULL when none */
	char stream[16];      /* "" an upload; "receiving", "complete", "dropped", "interrupted" */
	char db_file[32];     /* the file (object) holding the trace's database:
			       * "" = "trace.db"; a shared ingest job's result is
			       * "trace-<token>.db", one object per claim (jobs.c) */
};

/* How far the running ingest is (memory only). */
struct rec_progress {
	uint64_t bytes_done;  /* bytes ingest decoded; a live stream's: received */
	uint8_t phase;        /* enum ingest_phase + 1; 0 before the first report */
	uint64_t done, total; /* within the phase */
};

struct trace_rec {
	int64_t id;           /* never changes */
	struct rec_meta meta;
	struct rec_state state;
	struct rec_progress progress;
	struct rec_live live;
	struct rec_sync sync;
	struct waiter *waiters;
	int source_seen;      /* the worker has kept this ready trace's source
			       * compressed, or found it so: not looked at again
			       * until a restart */
};

struct catalog {
	pthread_mutex_t mu;    /* the records: v, n, cap and every field of every
				* record; the modules' own state (sync, worker,
				* jobs, live) besides */
	struct trace_rec **v;  /* in id order, which is upload order */
	size_t n, cap;
	int stop;              /* under mu: the catalog stops; every thread ends */
	struct storage store;  /* the traces' files (thread-safe on its own) */
	char *dir;
	struct catdb *db;      /* where the records are kept (catdb.h; thread-safe
				* on its own): saves and removals under mu, for
				* their order (sync.h), the rest without it */
	int shared;            /* 1: other servers write db too (PostgreSQL) */
	int shared_jobs;       /* 1: ingest is a job in the catalog any server
				* claims (a shared catalog and store: jobs.h) */
	struct cat_opts o;     /* set at the open, read only after */
	struct cat_stats stats; /* the work done since the start (stats.c), under mu */
	struct cat_sync *sync;     /* sync.c's */
	struct cat_worker *worker; /* worker.c's */
	struct cat_jobs *jobs;     /* jobs.c's */
	struct cat_live *live;     /* live.c's */
};

extern const char *const cat_status_names[TS_NSTATUS];

struct trace_rec *cat_find(struct catalog *c, int64_t id);
/* The record of id in v[0..n), kept in id order (a binary search), or NULL. */
struct trace_rec *cat_rec_search(struct trace_rec *const *v, size_t n, int64_t id);
/* Whether r is not ready yet but its database can be read: a live trace
 * with a commit, or an upload growing (live.c; under mu). */
int cat_rec_growing_locked(const struct trace_rec *r);
/* The file holding r's database: "trace.db", or a shared ingest job's own. */
const char *cat_db_file(const struct trace_rec *r);
/* Inserts r into the records in id order (under mu); 0 or CAT_EFAIL (no
 * memory). */
int cat_rec_insert(struct catalog *c, struct trace_rec *r);
/* A storage call's result (storage.h) as the catalog's: STORAGE_EDOWN is
 * CAT_ESTOREDOWN, any other failure CAT_ENOFILE. */
int cat_storage_err(int rc);
/* The status named s; TS_FAILED when none is. */
int cat_status_parse(const char *s);
/* The time of "YYYY-MM-DDTHH:MM:SSZ"; 0 when it does not parse. */
time_t cat_rfc3339_parse(const char *s);
void cat_rec_json(const struct trace_rec *r, int64_t notes, struct jbuf *out);

/* Notes per trace (notes.c), for the library's listing: in trace order,
 * of every trace (trace 0) or of that one; with q, matches marks the
 * traces with a note whose text contains q. */
struct cat_note_count {
	int64_t trace, count;
	int matches;
};
struct cat_note_counts {
	struct cat_note_count *v;
	size_t n, cap;
};
/* 0, or CAT_EFAIL or CAT_EUNAVAILABLE (err says why); nc is then empty. */
int cat_note_counts(struct catalog *c, int64_t trace, const char *q, struct cat_note_counts *nc, char *err,
		    size_t errlen);
const struct cat_note_count *cat_note_count_find(const struct cat_note_counts *nc, int64_t trace);
void cat_note_counts_free(struct cat_note_counts *nc);

/* meta.c: what the catalog stores, it checks, whoever asks (an upload, a
 * patch, a migration), so that paging and search hold for every value it
 * takes: name and description may be NULL (unchanged). 0, or CAT_EINVAL
 * with err. */
int cat_meta_check(const char *name, const char *description, const struct cat_label *labels, size_t nlabels,
		   char *err, size_t errlen);
/* Labels cur with set added (or replaced) and the keys unset removed, into
 * a new sorted array *out (*nout); 0, CAT_EFAIL when out of memory,
 * CAT_ELABELS when more than CAT_MAX_LABELS would remain. */
int cat_labels_apply(const struct cat_label *cur, size_t ncur, const struct cat_label *set, size_t nset,
		     const char *const *unset, size_t nunset, struct cat_label **out, size_t *nout);

/* Whether r passes the library's filters (list.c); notes: cat_note_counts
 * of f->q. Under mu. */
int cat_filter_matches(const struct trace_rec *r, const struct cat_filter *f, const struct cat_note_counts *notes);
/* The value of r's label key; NULL when it has none. */
const char *cat_label_value(const struct trace_rec *r, const char *key);
/* The labels object {"key": "value", ...}, keys in byte order. */
void cat_labels_json(const struct trace_rec *r, struct jbuf *out);
/* t as "YYYY-MM-DDTHH:MM:SSZ" (UTC), the catalog's time format. */
void cat_rfc3339(time_t t, char *out, size_t n);
/* Takes trace id out of the records and the database (under mu), its
 * waiters woken: the record, for the caller to give to cat_rec_drop once
 * the lock is released, also when another server had removed it already
 * (*rc CAT_ENOTRACE); NULL when there is none (CAT_ENOTRACE) or the
 * database could not remove it (CAT_EUNAVAILABLE or CAT_EFAIL). */
struct trace_rec *cat_remove_locked(struct catalog *c, int64_t id, int *rc);
/* Takes trace id out of the records only (another server removed it from
 * the database), its waiters woken (under mu): the record for
 * cat_rec_drop, or NULL when there is none. */
struct trace_rec *cat_forget_locked(struct catalog *c, int64_t id);
/* Removes the files of a record taken out of the records (when they are
 * this server's to remove) and frees it; not under mu. r may be NULL. */
void cat_rec_drop(struct catalog *c, struct trace_rec *r);
void cat_wake(struct catalog *c, struct trace_rec *r);

/* ---- record.c: every change of a record's meta, state and progress ---- */

void cat_rec_free(struct trace_rec *r);
/* A new trace's record from nw, in status (TS_QUEUED, or TS_LIVE with its
 * stream "receiving"), its binary_name taken (freed on failure); NULL when
 * out of memory. */
struct trace_rec *rec_new(const struct cat_new *nw, int status, char *binary_name);
/* The id, the bytes stored and the time of an upload, once stored. */
void rec_stamp(struct trace_rec *r, int64_t id, uint64_t stored, time_t created);
void rec_meta_fini(struct rec_meta *m);
/* Exchanges r's meta with m (a patch puts its new meta in, and the old one
 * back when it cannot be saved). */
void rec_meta_swap(struct trace_rec *r, struct rec_meta *m);
/* Takes what the database holds of part (META, or STATE: both groups) from
 * src, a record just loaded, into dst; src keeps dst's old groups, to be
 * freed with it. */
void rec_take(struct trace_rec *dst, struct trace_rec *src, enum catdb_part part);
/* The status changes: back to the queue (the next start, a store down, a
 * stream ended); the worker starts its ingest (progress from zero); it
 * failed, with a code and message of docs/API.md. */
void rec_queue(struct trace_rec *r);
void rec_start_ingest(struct trace_rec *r);
void rec_fail(struct trace_rec *r, const char *code, const char *msg);
void rec_stored(struct trace_rec *r, uint64_t bytes);
void rec_indexed(struct trace_rec *r, int indexed);
/* A stream's bytes: received (size and progress), or found at a restart. */
void rec_grew(struct trace_rec *r, uint64_t size);
void rec_size(struct trace_rec *r, uint64_t size);
/* A stream's state: "complete", "dropped", "interrupted". */
void rec_stream(struct trace_rec *r, const char *state);
/* Symbols given for an XRay trace: the binary's name (taken), and when the
 * trace is ready, the functions they named (to be indexed again). */
void rec_symbols(struct trace_rec *r, char *binary_name, int ready, uint64_t named);
/* The running ingest's progress (enum ingest_phase). */
void rec_progress(struct trace_rec *r, int phase, uint64_t done, uint64_t total);
/* What a snapshot or a growing ingest's commit shows of the trace before
 * it is ready (live.c, grow.c): its format, time range and summary (*summary taken when not
 * NULL); rec_view_clear forgets it. */
void rec_view(struct trace_rec *r, const char *format, int64_t start_ns, int64_t end_ns, char **summary);
void rec_view_clear(struct trace_rec *r);
/* The outcome of an ingest, for rec_outcome. */
struct ingest_result;
struct rec_outcome {
	int rc;                           /* enum ingest_err */
	const struct ingest_result *res;
	char *summary;                    /* cat_summary_json; taken (freed on failure) */
	int indexed;                      /* the name index holds it (1) or not */
	const char *db_file;              /* a shared job's claim's database; NULL: the record's own */
	uint64_t stored;                  /* bytes of the trace's files now */
};
/*
 * The one mapping of an ingest's outcome onto a record, for this server's
 * jobs and shared ones (worker.c, jobs.c): the state cur takes, in out, ready or
 * failed. out's strings are cur's but summary, error_msg and symbols_error,
 * which are out's own: rec_outcome_take moves them into the record (in the
 * same hold of mu as the call that made out), rec_outcome_drop frees them
 * (a commit the database refused).
 */
void rec_outcome(struct rec_state *out, const struct rec_state *cur, const struct rec_outcome *o);
void rec_outcome_take(struct trace_rec *r, struct rec_state *st);
void rec_outcome_drop(struct rec_state *st);

/* ---- catalog.c: the records ---- */

/* Records a new trace in status (TS_QUEUED, or TS_LIVE receiving); as
 * cat_add. */
int64_t cat_add_as(struct catalog *c, const struct cat_new *nw, int status, char *err, size_t errlen);

/* source.c: a trace's source, kept compressed once ingested. */
/* Keeps trace id's source compressed, its ingest having ended well (the
 * trace is ready): "source" (fetched, at its local path) is compressed
 * and put as "source.zst", then dropped. restored: "source" is a copy of
 * "source.zst" made for the ingest (cat_source_restore), only dropped.
 * Stops early when the catalog stops or the trace is deleted. Returns 1
 * when the source is kept compressed now, 0 when it stays as uploaded (a
 * failure is only logged: the trace is served either way). Not under mu. */
int cat_source_compress(struct catalog *c, int64_t id, int restored);
/* Reads what a ready trace's first view reads (before it is ready), and
 * its level of detail (after), into the page cache: in a process of its
 * own when c->o.ingest_exe is set (warm.c). */
void cat_warm_first_view(struct catalog *c, const char *db_path, int64_t start_ns, int64_t end_ns);
void cat_warm_lod(struct catalog *c, const char *db_path);
/* Drops the copy of "source" restored for an ingest that did not end well. */
void cat_source_drop_copy(struct catalog *c, int64_t id);
/* Compresses the file at from into a new file in spool_dir (its name in
 * spool, n bytes; "" on failure), synced to the disk. 0, or CAT_EFAIL with err;
 * stop(ctx), when stop is not NULL, is asked before each block and stops
 * it early when it says so. */
int cat_source_compress_file(const char *from, const char *spool_dir, char *spool, size_t n, int (*stop)(void *),
			     void *ctx, uint64_t *in_bytes, uint64_t *out_bytes, char *err, size_t errlen);
/* A reader of the file at path, compressed (zst) or as uploaded; NULL
 * with err. */
struct cat_source *cat_source_open_file(const char *path, int zst, char *err, size_t errlen);
/* Makes "source" of trace id readable at its local path for an ingest: it
 * is fetched, or when only "source.zst" is kept, decompressed there
 * (*restored set: the copy goes after the ingest, cat_source_compress or
 * cat_source_drop_copy).
 * 0, CAT_ENOFILE (neither), CAT_EFAIL (a damaged file, a failed write) or
 * CAT_ESTOREDOWN, with err. Not under mu. */
int cat_source_restore(struct catalog *c, int64_t id, int *restored, char *err, size_t errlen);
/* Whether trace id's source is stored, compressed or not: 1, 0, or
 * CAT_ESTOREDOWN when the store cannot tell now. */
int cat_source_has(struct catalog *c, int64_t id);

/* names.c: the per-trace name index, kept in the catalog's database. */
/* Reads a ready trace's database and writes its index rows (not under
 * mu: it only touches the index tables). 0 or CAT_EFAIL (logged). */
int cat_index_trace(struct catalog *c, int64_t id, const char *db_path);
/* Drops a deleted trace's index rows (written after its removal); not
 * under mu. */
void cat_unindex(struct catalog *c, int64_t id);

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

/* stats.c: the monotonic clock in ms, for durations and deadlines */
int64_t cat_now_ms(void);

#endif
