/*
 * Inside the catalog: the records, the lock, and the pieces that share
 * them (catalog.c: records; catdb_*.c: the database they are kept in;
 * sync.c: records other servers changed; list.c: filters and pages;
 * worker.c: ingest; names.c: the name index and search across traces;
 * retention.c: what the bounds remove).
 */
#ifndef CATALOG_INTERNAL_H
#define CATALOG_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#include "catalog.h"
#include "catdb.h"
#include "storage.h"
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
			       * "trace-<token>.db", one object per claim (worker.c) */
};

/* How far the running ingest is (memory only). */
struct rec_progress {
	uint64_t bytes_done;  /* bytes ingest decoded; a live stream's: received */
	uint8_t phase;        /* enum ingest_phase + 1; 0 before the first report */
	uint64_t done, total; /* within the phase */
};

/* A live trace's snapshots, or an upload's preview while it is ingested
 * (live.c; memory only). */
struct rec_live {
	uint64_t snap_size;   /* bytes the newest snapshot tried to hold */
	uint64_t snap_visible;/* bytes the snapshot being served holds */
	uint64_t snap_from;   /* the first byte of the source it holds (window.h) */
	int64_t snap_due_ms;  /* monotonic time before which no new snapshot starts */
	int64_t grew_ms;      /* monotonic time its stream last grew (cat_live_grew) */
	int64_t pause_ms;     /* the pause before a whole snapshot (live.c, paused());
			       * 0: --live-pause */
	int snapshot;         /* 1: trace.db holds a snapshot (or the whole trace) */
	int preview;          /* an upload being ingested here: 1 preview.db holds
			       * a window of the bytes ingest has read
			       * (snap_visible, snap_from), served while the status
			       * is ingesting; -1 none is made (not FXT); 0 none
			       * yet. Reset, and the file removed, when an ingest
			       * starts or ends (cat_preview_drop_locked) */
};

/* The record against a shared catalog (sync.c). */
struct rec_sync {
	int foreign;          /* 1: another server's trace, its files not in this
			       * server's store: never ingested, indexed or removed
			       * by retention here, its state taken from the database */
	int64_t version;      /* the version of its row in a shared catalog that
			       * this record holds (catdb.h save); 0 with catalog.db */
	unsigned unsaved;     /* bits of 1 << enum catdb_part that could not be
			       * written (database down): written again by cat_sync */
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

/* Every field of every record is guarded by mu. */
struct catalog {
	struct storage store;
	char *dir;
	struct catdb *db;      /* where the records are kept (catdb.h); its
				* writes and loads under mu, but the syncer's loads,
				* index, search and ping not (catdb_pg.c's lanes) */
	int shared;            /* 1: other servers write db too (PostgreSQL) */
	int64_t seen;          /* the newest change of db the records hold */
	int64_t sync_ms;       /* monotonic time of the last look at db's changes */
	int sync_rc;           /* what it gave: 0 or CAT_EUNAVAILABLE */
	pthread_t syncer;      /* looks at db's changes off the requests' path (sync.c) */
	int syncer_started;
	pthread_cond_t sync_work; /* signalled on stop */
	uint64_t taken;        /* records taken out of memory so far (deleted or
				* forgotten): a load read before one may hold it */
	size_t unsaved;        /* records with unsaved bits */
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
	/* shared ingest jobs (worker.c): a shared catalog and a shared store */
	int jobs;               /* 1: ingest is a job in the catalog any server claims */
	int lease_ms;           /* a claim's lease, renewed every lease_ms / 3 */
	int commit_delay_ms;    /* test only: a pause between publish and commit */
	int ingest_delay_ms;    /* test only: a pause after each piece a local ingest decodes */
	char owner[96];         /* this server in the jobs table: "host:pid" */
	int64_t running;        /* the trace whose job the worker runs (0: none):
				 * sync leaves its state to the worker */
};

extern const char *const cat_status_names[TS_NSTATUS];

struct trace_rec *cat_find(struct catalog *c, int64_t id);
/* The record of id in v[0..n), kept in id order (a binary search), or NULL. */
struct trace_rec *cat_rec_search(struct trace_rec *const *v, size_t n, int64_t id);
/* The file holding r's database: "trace.db", or a shared ingest job's own. */
const char *cat_db_file(const struct trace_rec *r);
/* Writes part of a record (with its labels) to the catalog's database;
 * under mu. 0, or CAT_EUNAVAILABLE (then kept as unsaved, written again
 * when the database is back), or CAT_ECONFLICT (META only: another server
 * changed the record since it was read), or CAT_EFAIL; failures are
 * logged. */
int cat_save(struct catalog *c, struct trace_rec *r, enum catdb_part part);
/* Marks part of r unsaved (the database down: cat_sync writes it again),
 * or no longer (written, or given up); under mu. */
void cat_unsaved_mark(struct catalog *c, struct trace_rec *r, enum catdb_part part);
void cat_unsaved_clear(struct catalog *c, struct trace_rec *r, enum catdb_part part);
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
/* Takes trace id out of the list, the database and storage (under mu);
 * returns the record for the caller to free, NULL when there is none or
 * when the database could not remove it (*rc says which: CAT_ENOTRACE,
 * CAT_EUNAVAILABLE or CAT_EFAIL; rc may be NULL). */
struct trace_rec *cat_remove_locked(struct catalog *c, int64_t id, int *rc);
/* Takes trace id out of the list only (another server removed it from the
 * database): wakes its waiters and removes its files here (under mu). */
void cat_forget_locked(struct catalog *c, int64_t id);
void cat_wake(struct catalog *c, struct trace_rec *r);

/* ---- record.c: every change of a record's meta, state and progress ---- */

void cat_rec_free(struct trace_rec *r);
/* A new trace's record from nw, in status (TS_QUEUED, or TS_LIVE with its
 * stream "receiving"), its binary_name taken; NULL when out of memory. */
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
/* What a snapshot or a preview shows of the trace before it is ready
 * (live.c): its format, time range and summary (*summary taken when not
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
 * jobs and shared ones (worker.c): the state cur takes, in out, ready or
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

/* worker.c */
void *cat_worker_main(void *arg);
/* Sets c->jobs (a shared catalog and shared_store: files every server
 * reaches) and the jobs' settings; after c->db is open. */
void cat_jobs_init(struct catalog *c, int shared_store);
/* Queues trace r's ingest job in the shared catalog (under mu); when the
 * database cannot be reached the record is kept unsaved, so that cat_sync
 * saves it, and queues it, again. */
void cat_job_queue_locked(struct catalog *c, struct trace_rec *r);
struct ingest_result;
/* The JSON members kept in a record's summary column, from ingest's result
 * and the trace's metadata (qry_trace_metadata); NULL when out of memory or
 * when the database cannot be read. */
char *cat_summary_json(const struct ingest_result *res, const char *db_path);

/* live.c */
void *cat_live_main(void *arg);
/* A live trace caught by a restart: its stream was interrupted, what it
 * received is ingested whole (under mu, or before any thread runs). */
void cat_live_recover(struct catalog *c, struct trace_rec *r);
/* Ends the preview of upload r's ingest (under mu, in the same hold as the
 * status change that starts or ends the ingest, so that no snapshot in
 * flight puts one back): its file removed, what it told of r cleared. A
 * live trace's own snapshot (trace.db) is left alone. */
void cat_preview_drop_locked(struct catalog *c, struct trace_rec *r);

/* source.c: a trace's source, kept compressed once ingested. */
/* Keeps trace id's source compressed, its ingest having ended well (the
 * trace is ready): "source" (fetched, at its local path) is compressed
 * and put as "source.zst", then dropped. restored: "source" is a copy of
 * "source.zst" made for the ingest (cat_source_restore), only dropped.
 * Stops early when the catalog stops or the trace is deleted. Returns 1
 * when the source is kept compressed now, 0 when it stays as uploaded (a
 * failure is only logged: the trace is served either way). Not under mu. */
int cat_source_compress(struct catalog *c, int64_t id, int restored);
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
/* Drops a trace's index rows; under mu. */
void cat_unindex_locked(struct catalog *c, int64_t id);

/* sync.c */
/* Brings the records up to date with what other servers wrote to a shared
 * catalog, at most every CAT_SYNC_MS unless force (under mu); writes again
 * what could not be saved. 0, or CAT_EUNAVAILABLE when the database cannot
 * be reached. Nothing to do (0) with catalog.db. Once the syncer runs, a
 * look that is not forced is its last result: the requests never wait on
 * the database for it. */
enum { CAT_SYNC_MS = 100 };
int cat_sync_locked(struct catalog *c, int force);
/* The syncer (cat_start, shared catalogs only): a look every CAT_SYNC_MS,
 * the database read without mu. */
void *cat_sync_main(void *arg);
/* The records read at the start (under mu, or before any thread runs),
 * another server's marked foreign: 0, or CAT_EFAIL with err. */
int cat_sync_first(struct catalog *c, char *err, size_t errlen);

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
