/*
 * The catalog: the team's library of traces.
 *
 * It knows every trace (name, labels, description, status, what ingest
 * found), runs ingest in the background, keeps the library within its
 * retention bounds, and answers questions across traces from an index
 * built at ingest (which traces hold slices named like X, how many, how
 * long). Its records live in memory and are written through to a
 * database (catdb.h): catalog.db (schema/catalog.sql) by default, or a
 * PostgreSQL database several servers share (schema/catalog_pg.sql); the
 * trace files live behind a storage interface (storage.h). No SQL of the
 * catalog exists outside catalog/.
 */
#ifndef CATALOG_H
#define CATALOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../json/jbuf.h"

struct catalog;

enum trace_status { TS_QUEUED, TS_INGESTING, TS_READY, TS_FAILED, TS_LIVE, TS_NSTATUS };
/* "queued", "ingesting", "ready", "failed", "live" */
const char *cat_status_name(int status);

struct cat_opts {
	int64_t keep_failed;  /* seconds a failed trace stays listed; 0 = remove at once */
	int64_t retain_days;  /* 0 = keep traces whatever their age */
	uint64_t retain_bytes;/* 0 = no bound on the space used */
	const char *ingest_exe; /* ingests run as "<ingest_exe> ingest-child", each in a
			       * process of its own (ingest/child.h); NULL: in the
			       * server's own process */
	int64_t live_pause_ms;/* a live FXT stream that sent nothing for this long
			       * shows every byte received, as a file of them
			       * (ingest/grow.h); 0 = never */
	uint64_t preview_min; /* an FXT upload of this many bytes or more grows in
			       * place while the worker ingests it, readable
			       * meanwhile (grow.h); 0 = never */
	const char *catalog;  /* NULL: catalog.db under the data directory; else a
			       * PostgreSQL URL (postgres://user@host:port/db) */
	void (*db_gone)(int64_t id); /* trace id's database is no more the one to read (its
				      * ingest ended, or the trace was removed): the
				      * server closes its connections to it. Called under
				      * the catalog's lock, or not; NULL: nothing to do */
	void (*resume)(void *conn);  /* wakes a waiting connection */
	void (*suspend)(void *conn); /* puts a connection to sleep (called under the catalog's lock) */
	const char *store_url;  /* s3://... (storage.h), or NULL: the files under the data directory */
	const char *cache_dir;  /* with store_url: the local cache; NULL = <data>/cache */
	uint64_t cache_max;     /* with store_url: bytes the cache may hold; 0 = no bound */
	uint64_t store_part_size; /* with store_url: bytes of each part of a multipart
				   * upload; 0 = the client's default (8 MiB) */
};

/*
 * What the catalog's functions return besides 0 (or a new trace's id): one
 * code per thing a caller answers differently. Each function's comment
 * says which it gives; err, where a function takes one, has the sentence
 * to show. The HTTP status a code becomes is the caller's (server/): the
 * same CAT_EFAIL is a 507 for an upload and a 500 for a patch.
 */
enum cat_err {
	CAT_OK = 0,
	CAT_EFAIL = -1,        /* a file, the catalog's database or memory failed */
	CAT_ENOTRACE = -2,     /* there is no such trace */
	CAT_EINVAL = -3,       /* a name, description, label, cursor or note it does
				* not take */
	CAT_ELABELS = -4,      /* more than CAT_MAX_LABELS labels would remain */
	CAT_ENOTREADY = -5,    /* the trace is not ready (notes go on ready traces) */
	CAT_ENONOTE = -6,      /* there is no such note */
	CAT_ENOFILE = -7,      /* the trace has no such file */
	CAT_EBADTRACE = -8,    /* a live stream's bytes are not a trace: it failed */
	CAT_EUNAVAILABLE = -9, /* the catalog's database cannot be reached now (a
				* shared PostgreSQL down): answer 503 and try
				* again later; the catalog reconnects by itself */
	CAT_ESTOREDOWN = -10,  /* the trace store cannot be reached now: likewise */
	CAT_ECONFLICT = -11,   /* another server changed the record since this one
				* read it (inside the catalog: a patch reads it
				* again and retries) */
};
/* A sentence naming err (for logs; replies carry the function's own err). */
const char *cat_strerror(int err);

/* Limits on what a trace's metadata may hold. */
enum {
	CAT_MAX_LABELS = 64,
	CAT_MAX_KEY = 64,     /* bytes of a label key */
	CAT_MAX_VALUE = 256,  /* bytes of a label value */
	CAT_MAX_NAME = 1024,
	CAT_MAX_DESCRIPTION = 4096,
};

struct cat_label {
	char key[CAT_MAX_KEY + 1];
	char value[CAT_MAX_VALUE + 1];
};

/*
 * Splits "key=value" into l: key 1 to 64 bytes of letters, digits and
 * "_.-/:", value up to 256 bytes of printable UTF-8 (no control bytes).
 * "key" alone gives an empty value only when allow_bare. 0, or CAT_EINVAL
 * with a sentence in err.
 */
int cat_label_parse(const char *s, int allow_bare, struct cat_label *l, char *err, size_t errlen);
/* Checks a name or description: not longer than max bytes, no control
 * bytes other than tab and newline (description) . 0, or CAT_EINVAL with
 * err. */
int cat_text_check(const char *what, const char *s, size_t max, int multiline, char *err, size_t errlen);

struct catalog *cat_open(const char *dir, const struct cat_opts *o, char *err, size_t errlen);
/* Starts the ingest worker; 0 or CAT_EFAIL. */
int cat_start(struct catalog *c);
/* Stops the worker and wakes every waiting connection. */
void cat_stop(struct catalog *c);
void cat_close(struct catalog *c);

/* A new trace from a spooled upload. */
struct cat_new {
	const char *name;
	const char *description;      /* may be NULL */
	const struct cat_label *labels;
	size_t nlabels;
	const char *spool;            /* moved, not copied */
	uint64_t size;
	const char *format_hint;      /* NULL = detect */
	const char *binary_spool;     /* XRay symbols, moved; may be NULL */
	const char *binary_filename;  /* its name as uploaded; may be NULL */
	uint64_t arrived;             /* an upload recorded before its body ended
				       * (cat_upload_grows): the bytes of size spool
				       * holds so far; else 0 */
};
/* Records and queues it; the id, or with err set CAT_EFAIL (storing it
 * failed), CAT_EINVAL (a name, description or label it does not take),
 * CAT_ESTOREDOWN or CAT_EUNAVAILABLE. */
int64_t cat_add(struct catalog *c, const struct cat_new *n, char *err, size_t errlen);

/* A change to a trace's metadata; NULL / -1 members are left as they are. */
struct cat_patch {
	const char *name;
	const char *description;
	int pinned;                   /* -1 = unchanged */
	const struct cat_label *set;  /* labels set (added or replaced) */
	size_t nset;
	const char *const *unset;     /* label keys removed */
	size_t nunset;
};
/* 0; CAT_ENOTRACE; CAT_ELABELS (err says so); CAT_EFAIL (the catalog could
 * not be written); CAT_EINVAL (a name, description or label it does not
 * take, as cat_add; err says which); CAT_EUNAVAILABLE. Nothing changes on
 * error. */
int cat_patch(struct catalog *c, int64_t id, const struct cat_patch *p, char *err, size_t errlen);

enum cat_sort { CAT_SORT_CREATED, CAT_SORT_NAME, CAT_SORT_SIZE, CAT_SORT_DURATION };
/* Names in natural order (digit runs as numbers): the order of sort=name. */
int cat_name_cmp(const char *a, const char *b);

#define CAT_MAX_FILTER_LABELS 16
#define CAT_LIST_MAX 1000
struct cat_filter {
	const char *q;                /* name, description or a label's key=value contains (any case) */
	struct cat_label labels[CAT_MAX_FILTER_LABELS]; /* equal; an empty value with bare = key present */
	int bare[CAT_MAX_FILTER_LABELS];
	size_t nlabels;
	const char *format;           /* NULL = any */
	int status;                   /* -1 = any */
	int pinned;                   /* -1 = any */
	int64_t after, before;        /* uploaded within [after, before] (Unix seconds) */
	uint64_t min_size, max_size;  /* bytes, inclusive */
	enum cat_sort sort;
	int desc;
	size_t limit;                 /* 1 .. CAT_LIST_MAX */
	const char *cursor;           /* from a previous page; NULL = first */
};
/* Appends {"traces": [...], "total", "next_cursor"}; 0, or CAT_EINVAL when
 * the cursor is not one of this listing's, CAT_EFAIL or CAT_EUNAVAILABLE
 * (err says why). */
int cat_list_json(struct catalog *c, const struct cat_filter *f, struct jbuf *out, char *err, size_t errlen);
/* Appends the trace object; 0, CAT_ENOTRACE, CAT_EFAIL (its notes could not
 * be counted) or CAT_EUNAVAILABLE. */
int cat_json(struct catalog *c, int64_t id, struct jbuf *out);
/* Space used, the retention bounds and what they will remove next. */
void cat_usage_json(struct catalog *c, struct jbuf *out);

/*
 * Search across traces: the traces holding slices whose name contains q
 * (any case), per trace the count, total, p50/p95 (estimated from the
 * ingest index, see docs/API.md) and max of their durations. Ready traces
 * come from the catalog's index; those still growing (not ready, but
 * readable: cat_readable) from their own databases, which reader reads
 * (NULL: none shown): it calls fn for each matching name of trace id
 * (qry_name_stats_matching) and returns 0; 1 when the trace is no longer
 * one to read so (deleted, ready or failed meanwhile: what it handed on is
 * dropped, and a trace ready now is asked for once more); -1 with err set
 * when it could not be read.
 * 0, CAT_EFAIL or CAT_EUNAVAILABLE (err says why).
 */
struct qry_name_stat;
typedef int (*cat_name_reader)(void *ctx, int64_t id, const char *q,
			       int (*fn)(void *fctx, const struct qry_name_stat *s), void *fctx, char *err,
			       size_t errlen);
int cat_search_json(struct catalog *c, const char *q, size_t limit, cat_name_reader reader, void *rctx,
		    struct jbuf *out, char *err, size_t errlen);

/* The ready traces f selects (its sort, limit and cursor unused), newest
 * first: for running something on each. 0, CAT_EFAIL or CAT_EUNAVAILABLE
 * (err). */
struct cat_match {
	int64_t id;
	char *name;
	char *labels_json; /* the trace's labels as a JSON object */
};
int cat_matching(struct catalog *c, const struct cat_filter *f, struct cat_match **out, size_t *n, char *err,
		 size_t errlen);
void cat_matching_free(struct cat_match *v, size_t n);

/* Trends (trends.c): one slice name across the traces f selects (its
 * sort, limit and cursor unused). */
enum cat_trend_stat { CAT_TREND_P50, CAT_TREND_P95, CAT_TREND_MAX, CAT_TREND_AVG };
struct cat_trend_opts {
	const char *name;         /* the slice name, exactly */
	const char *order_label;  /* order by this label's value; NULL: by upload */
	enum cat_trend_stat stat; /* what a regression is measured on */
	double threshold;         /* a point more than this share above the median
				   * of the points before it is a regression */
};
/* "p50", "p95", "max", "avg"; 0, or CAT_EINVAL for another. */
int cat_trend_stat_parse(const char *s, enum cat_trend_stat *out);
/* Appends {"name", "order", "stat", "threshold", "points": [...],
 * "unindexed"}; 0, CAT_EFAIL or CAT_EUNAVAILABLE (err says why). */
int cat_trends_json(struct catalog *c, const struct cat_filter *f, const struct cat_trend_opts *o, struct jbuf *out,
		    char *err, size_t errlen);

/*
 * Live traces: a stream ingested while it arrives (docs/API.md, Live
 * traces). cat_live_open records a trace with status "live" and an empty
 * source, and gives the caller that source open for appending (*fd, the
 * caller's to write and close). After each write the caller says how many
 * bytes the source holds (cat_live_grew); the catalog's live thread then
 * makes a new snapshot of the trace's database from those bytes, so
 * readers see them within about a second. cat_live_close ends the stream,
 * complete or dropped; its trace is then ingested whole and becomes ready.
 */
int64_t cat_live_open(struct catalog *c, const struct cat_new *n, int *fd, char *err, size_t errlen); /* as cat_add */
/* 0; CAT_ENOTRACE (deleted); CAT_EBADTRACE, the trace failed: its bytes
 * are not a trace (err says why). */
int cat_live_grew(struct catalog *c, int64_t id, uint64_t size, char *err, size_t errlen);
void cat_live_close(struct catalog *c, int64_t id, int complete);

/*
 * An upload of --preview-min bytes or more grows from its first byte
 * (grow.h), as a stream that arrives fast: a raw body, or a form's file
 * field (cat_upload_length), whose body's length says it is big enough
 * and whose first bytes are FXT
 * (cat_upload_grows: total its length, head its first n bytes) is
 * recorded before the rest arrives (cat_add, with n->spool holding
 * n->arrived bytes of n->size). The connection appends the rest to the
 * trace's source, saying how far it got (cat_upload_grew: CAT_ENOTRACE
 * when the trace was deleted meanwhile, else 0), and cat_upload_close
 * ends it: complete, or not (the client went away, a write failed), which
 * deletes the trace, as an upload that does not finish leaves nothing.
 * Meanwhile the worker's growing ingest follows the bytes that came, and
 * the list shows the trace "queued" or "ingesting" with its whole length
 * as its size. A server that stops meanwhile fails it when it starts
 * again (upload_incomplete): its body never ended.
 */
int cat_upload_grows(struct catalog *c, uint64_t total, const char *hint, const uint8_t *head, size_t n);
int cat_upload_grew(struct catalog *c, int64_t id, uint64_t size);
/* A form's upload (multipart/form-data) is recorded with its body's length
 * and its file field's first bytes: once its body ended, its file's length
 * is told (size: every byte of it arrived) before it is closed. 0, or
 * CAT_ENOTRACE (deleted meanwhile). */
int cat_upload_length(struct catalog *c, int64_t id, uint64_t size);
void cat_upload_close(struct catalog *c, int64_t id, int complete);

/* The trace's status, and *readable set when its database can be read now:
 * ready, or a live trace (or one whose stream ended and is ingested whole)
 * with a snapshot. CAT_ENOTRACE when there is no such trace. */
int cat_readable(struct catalog *c, int64_t id, int *readable);

/*
 * Operations (docs/API.md, Operations): durations kept as a histogram of
 * CAT_SECONDS_BUCKETS upper bounds (cat_seconds_bounds, seconds; le[i]
 * counts those in (bound i-1, bound i], the rest only count and sum).
 */
enum { CAT_SECONDS_BUCKETS = 10 };
extern const double cat_seconds_bounds[CAT_SECONDS_BUCKETS];
struct cat_seconds {
	uint64_t le[CAT_SECONDS_BUCKETS];
	uint64_t count;
	double sum;
};
void cat_seconds_note(struct cat_seconds *h, double s);

struct cat_stats {
	uint64_t traces[TS_NSTATUS]; /* the library now, by status */
	uint64_t stored_bytes;       /* every trace's files */
	/* since the server started */
	uint64_t ingests_ok, ingests_failed;
	uint64_t ingest_bytes;       /* source bytes of ingests that ended well */
	struct cat_seconds ingest;   /* whole ingests, ended well or not */
	struct cat_seconds snapshot; /* live traces' snapshots and ingests' previews */
	/* the object store (--store; all zero without one), since the start */
	uint64_t store_hits, store_misses; /* reads the cache answered, reads that downloaded */
	uint64_t store_fetched_bytes;
	uint64_t store_errors;             /* failed calls to the store */
	uint64_t store_cache_bytes;        /* bytes the cache holds now */
};
void cat_stats(struct catalog *c, struct cat_stats *out);
/* Whether the catalog's database answers and the trace store takes files: 0,
 * or CAT_EFAIL with a sentence in cat_err and/or store_err ("" for the one
 * that is fine). */
int cat_health(struct catalog *c, char *cat_err, size_t cat_errlen, char *store_err, size_t store_errlen);

/* 0, CAT_ENOTRACE, CAT_EFAIL (the catalog could not be written) or
 * CAT_EUNAVAILABLE. */
int cat_delete(struct catalog *c, int64_t id);
/* Status of a trace, or CAT_ENOTRACE when unknown. */
int cat_status(struct catalog *c, int64_t id);
/* Registers a connection to resume when ingest ends and suspends it: 1, or
 * 0 when the trace has already ended (or does not exist): answer at once. */
int cat_wait(struct catalog *c, int64_t id, void *conn);
/* Takes a spooled instrumented binary or symbol map for an XRay trace (moved)
 * and names its functions now if the trace is ready, else at ingest.
 * Returns 0, or CAT_ENOTRACE or CAT_EFAIL with err set (the file is then
 * left to the caller). */
int cat_symbols(struct catalog *c, int64_t id, const char *spool, const char *filename, char *err, size_t errlen);
/* A readable path of a trace's file ("source", "trace.db"), once
 * cat_fetch made sure it is there. "trace.db" names the trace's database
 * whichever object holds it (a shared ingest job's own, jobs.c). Both
 * take the catalog's lock: never call them under it. */
void cat_path(struct catalog *c, int64_t id, const char *file, char *out, size_t n);
/* Makes cat_path's file hold the file (downloaded from a shared store if
 * the local cache lacks it); call right before opening it. 0, CAT_ENOFILE
 * or CAT_ESTOREDOWN, with err set. */
int cat_fetch(struct catalog *c, int64_t id, const char *file, char *err, size_t errlen);
/*
 * A trace's source read as it was uploaded, whether the library keeps it
 * compressed or not (source.c). cat_source_open gives the reader, or NULL
 * with *rc CAT_ENOFILE, CAT_ESTOREDOWN or CAT_EFAIL (it cannot be read;
 * err says why). It takes the catalog's lock: never
 * call it under it.
 */
/* The process a server's source compression runs in (source.c): "<exe>
 * source-child FROM SPOOL", answered by this; its exit status. */
int cat_source_child_main(int argc, char **argv);
/* The process a server warms a ready trace's pages in (warm.c): "<exe>
 * warm-child first DB START_NS END_NS | lod DB"; its exit status. */
int cat_warm_child_main(int argc, char **argv);
struct cat_source;
struct cat_source *cat_source_open(struct catalog *c, int64_t id, int *rc, char *err, size_t errlen);
/* The bytes as uploaded (a download's Content-Length); UINT64_MAX when
 * unknown. */
uint64_t cat_source_size(const struct cat_source *s);
/* A source kept as uploaded: its descriptor, now the caller's, at offset 0
 * (for sendfile). -1 for a compressed one, which cat_source_read gives. */
int cat_source_take_fd(struct cat_source *s);
/* Reads up to n bytes of the source as uploaded, in order: how many, 0 at
 * its end, -1 on an error (a read that failed, a damaged or cut file: what
 * was read is not the whole source). */
long cat_source_read(struct cat_source *s, void *buf, size_t n);
/* Frees s and closes its file; s may be NULL. */
void cat_source_close(struct cat_source *s);
/* The spool directory for uploads in progress. */
void cat_spool_dir(const struct catalog *c, char *out, size_t n);
size_t cat_count(struct catalog *c);

/* What cat_migrate did. */
struct cat_migrate_stats {
	unsigned migrated;  /* traces recorded in the target */
	unsigned skipped;   /* already there (a second run) */
	unsigned left_out;  /* queued, ingesting or live: not moved */
	uint64_t bytes;     /* file bytes sent to the store */
};
/*
 * Moves the library under from (catalog.db, traces/<id>/) into the
 * PostgreSQL catalog at catalog_url and the store at store_url (migrate.c),
 * a line per trace on out. 0, or CAT_EFAIL with err: a target holding another
 * trace under one of the ids (nothing written), or a failure part way (what
 * was done stays, a new run carries on from there).
 */
int cat_migrate(const char *from, const char *catalog_url, const char *store_url, FILE *out,
		struct cat_migrate_stats *st, char *err, size_t errlen);

#endif
