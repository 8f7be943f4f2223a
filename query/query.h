/*
 * Query: reads one trace database and renders the API's JSON replies.
 *
 * Every function takes an open (read-only) connection to a trace database
 * and typed, already-validated parameters; it appends JSON to a jbuf and
 * returns QRY_OK or an error with a sentence for the user. Nothing here
 * knows about HTTP or about file formats. Bulk rows go through the JSON
 * writer (json/jbuf.h) so that 64-bit values are printed exactly and 100 k
 * rows render in milliseconds.
 */
#ifndef QUERY_H
#define QUERY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "../json/jbuf.h"
#include "../tracedb/tracedb.h"

/* Writes a SQLite column value (integer, real, text, blob as {"blob_bytes"}, null). */
void jb_column(struct jbuf *b, sqlite3_stmt *st, int col);

enum qry_err {
	QRY_OK = 0,
	QRY_ENOTFOUND, /* the thing asked for does not exist: 404 */
	QRY_EINVAL,    /* a parameter is wrong: 400 */
	QRY_EDB,       /* the database failed: 500 */
	QRY_ELIMIT,    /* a time or row limit was hit: 422 */
	QRY_ENOMEM,
};

struct qry_error {
	int code;
	char msg[256];
};

const char *qry_strerror(int err);

/* Limits of list endpoints. */
enum {
	QRY_DEFAULT_LIMIT = 10000,
	QRY_MAX_LIMIT = 1000000,
	QRY_SQL_MAX_ROWS = 10000,
	QRY_SQL_MAX_MS = 5000,
};

struct qry_window {
	int64_t start, end; /* inclusive window in ns */
	int64_t resolution; /* ns per pixel; 0 = every item */
	uint32_t limit;     /* maximum items */
	int columns;        /* slices: the columnar reply (docs/API.md, format=columns) */
	/* overview: start and end were asked for. An end not asked for (left
	 * at INT64_MIN or INT64_MAX) becomes the first or last slice start;
	 * one asked for stays, INT64_MIN and INT64_MAX included. */
	int start_given, end_given;
};

/*
 * Level of detail (docs/API.md): a window asked at a resolution below
 * QRY_EXACT_RESOLUTION ns per pixel, or holding at most QRY_EXACT_MAX rows
 * of the track (slices over all depths, counter points, cpu runs), is
 * answered with the exact list; otherwise rows under a pixel may come back
 * summarised.
 */
enum { QRY_EXACT_RESOLUTION = 1024, QRY_EXACT_MAX = 4096 };


/*
 * One read transaction around a request's statements, so that they share
 * one lock of the file instead of taking and checking it each (a binary
 * search steps a statement per probe) and read one snapshot. The read
 * functions below hold none themselves: their caller holds one around all
 * it asks of a trace (the server, for every request: routes.c run_query).
 * Begins only when the connection is in none; returns whether it began,
 * which qry_read_end takes.
 */
int qry_read_begin(sqlite3 *db);
void qry_read_end(sqlite3 *db, int began);

int qry_tracks(sqlite3 *db, struct jbuf *out, struct qry_error *err);
/* Members "providers": [{"id", "name", "ticks_per_second", "buffer_overflows"}]
 * and "processes": [{"pid", "name"}] (the first 64 by pid), for the
 * catalog's summary of a trace (query/meta.c). */
int qry_trace_metadata(sqlite3 *db, struct jbuf *out, struct qry_error *err);
/* A name's statistics as ingest wrote them (table name_stats). */
struct qry_name_stat {
	const char *name;
	int64_t count, ended, total_ns, max_ns;
	const void *sketch; /* tracedb/sketch.h */
	size_t sketch_len;
};
/* Calls fn for every name of the trace (fn returns non-zero to fail);
 * QRY_OK, or QRY_EDB (a read or fn failed). */
int qry_name_stats(sqlite3 *db, int (*fn)(void *ctx, const struct qry_name_stat *s), void *ctx,
		   struct qry_error *err);
/* The same for the names that contain q (ASCII case-insensitive, as
 * search across traces matches), whether the trace has its name_stats
 * (ready, or a growing trace at a pause) or not yet (a growing trace
 * between pauses: made from its committed slices, as ingest would make
 * them from the same slices). QRY_OK, or QRY_EDB. */
int qry_name_stats_matching(sqlite3 *db, const char *q, int (*fn)(void *ctx, const struct qry_name_stat *s),
			    void *ctx, struct qry_error *err);
int qry_slices(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err);
int qry_slice(sqlite3 *db, int64_t slice_id, struct jbuf *out, struct qry_error *err);
/* Where slice_id lies: its track and [ts, end] (an unterminated slice's
 * end is the trace's); QRY_ENOTFOUND when there is none. */
int qry_slice_span(sqlite3 *db, int64_t slice_id, int64_t *track, int64_t *ts, int64_t *end, struct qry_error *err);
/* QRY_OK when track_id is one of the trace's tracks, else QRY_ENOTFOUND. */
int qry_track_exists(sqlite3 *db, int64_t track_id, struct qry_error *err);
int qry_counters(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err);
int qry_flows(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err);
int qry_sched(sqlite3 *db, int64_t cpu, const struct qry_window *w, struct jbuf *out, struct qry_error *err);
int qry_logs(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err);
/* One thread's states over the window, from its runs on CPUs: running,
 * then the state each run ended in (threadstate.c; docs/API.md). */
int qry_thread_states(sqlite3 *db, int64_t pid, int64_t tid, const struct qry_window *w, struct jbuf *out,
		      struct qry_error *err);
/* A page of a search inside a trace (docs/API.md): the first matches, those
 * strictly after a position, or the last ones strictly before it; with
 * buckets > 0, how all matches spread over [hist_start, hist_end]. */
enum qry_search_from { QRY_SEARCH_FIRST, QRY_SEARCH_AFTER, QRY_SEARCH_BEFORE };
struct qry_search_page {
	uint32_t limit;
	enum qry_search_from from;
	int64_t at_ts, at_id;         /* the position of AFTER and BEFORE, in (ts, id) order */
	uint32_t buckets;             /* 0: no histogram; at most QRY_OVERVIEW_MAX_BUCKETS */
	int64_t hist_start, hist_end; /* inclusive; hist_start <= hist_end */
};
/* Slices whose name contains text (any case), in (ts, id) order, from the
 * name index (name_index, tracedb.h) when the trace has it (search.c). */
int qry_search(sqlite3 *db, const char *text, const struct qry_search_page *pg, struct jbuf *out,
	       struct qry_error *err);

/* Comparing two traces (compare.c): per name (or process, thread and name). */
enum qry_compare_sort { QRY_CMP_TOTAL, QRY_CMP_COUNT, QRY_CMP_P50, QRY_CMP_P95, QRY_CMP_MAX };
struct qry_compare_opts {
	struct qry_window wa, wb; /* the slices of each trace that start inside its window */
	int by_thread;            /* key rows by (process name, thread name, name) */
	enum qry_compare_sort sort;
	uint32_t limit;
};
/* "total" (default when s is NULL), "count", "p50", "p95", "max"; 0 or -1. */
int qry_compare_sort(const char *s, enum qry_compare_sort *out);
int qry_compare(sqlite3 *a, sqlite3 *b, const struct qry_compare_opts *o, struct jbuf *out, struct qry_error *err);
int qry_stats(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err);
/* Runs one read-only statement with time and row limits. */
int qry_sql(sqlite3 *db, const char *sql, size_t len, struct jbuf *out, struct qry_error *err);
/* The same with a row limit and a time limit of the caller's. */
int qry_sql_limited(sqlite3 *db, const char *sql, size_t len, int64_t max_rows, int64_t max_ms, struct jbuf *out,
		    struct qry_error *err);


/* Chrome Trace Event JSON export, streamed: open, read until 0, close.
 * process_name (may be NULL; copied) names the processes the trace leaves
 * unnamed: an XRay trace's program, from the binary that named it.
 * qry_export_read returns bytes written to buf, 0 at the end, -1 on error. */
struct qry_export;
struct qry_export *qry_export_open(const char *db_path, const char *process_name, struct qry_error *err);
long qry_export_read(struct qry_export *e, char *buf, size_t max);
void qry_export_close(struct qry_export *e);

/*
 * The overview: per process, how many slices start in each of `buckets`
 * equal parts of [w->start, w->end] (query/overview.c). QRY_OK, or an error.
 */
enum { QRY_OVERVIEW_MAX_BUCKETS = 4096 };
int qry_overview(sqlite3 *db, const struct qry_window *w, uint32_t buckets, struct jbuf *out, struct qry_error *err);

/* ---- area selection and flame graph (area.c, flame.c) -------------------- */

/* One slice of an area scan; wall is the part of it inside the range. */
struct qry_area_slice {
	int64_t id, track, ts, dur, depth, name_id, wall;
	int32_t parent_tag; /* what the visitor returned for the parent (-1 or
			     * more), or QRY_AREA_ROOT when the slice has no
			     * parent one level up: a root of its own, at any
			     * depth (an async operation on a lower lane) */
};
enum { QRY_AREA_ROOT = -2 };

/* Visits n slices of one depth of one track, ids ascending, in batches of
 * at most QRY_AREA_BATCH (so a visitor can fetch ahead what they need):
 * sets each slice's tag for its children, tag[i] >= 0, or -1 for none.
 * Returns 0, or -1 to stop (out of memory). */
typedef int (*qry_area_visit)(void *ctx, const struct qry_area_slice *s, size_t n, int32_t *tag);
enum { QRY_AREA_BATCH = 256 };

/* Visits the slices of the tracks overlapping [start, end], each track depth
 * by depth (parents before children), ids ascending within a depth. */
int qry_area_scan(sqlite3 *db, const int64_t *tracks, size_t ntracks, int64_t start, int64_t end,
		  qry_area_visit fn, void *ctx, struct qry_error *err);
/* {"names": [{"name", "count", "wall", "self", "avg", "max"}]} clipped to the
 * window, by wall time; with name, {"slices": [{"id", "track_id", "ts", "dur",
 * "depth", "wall"}]} of that name instead. At most w->limit rows. */
int qry_area(sqlite3 *db, const int64_t *tracks, size_t ntracks, const struct qry_window *w, const char *name,
	     struct jbuf *out, struct qry_error *err);
/* {"nodes": [{"id", "parent", "depth", "name", "total", "self", "count"}]}:
 * the stacks merged by name path, parents before children, at most
 * w->limit nodes built; nodes under 1/20000 of the total are left out
 * and counted in "hidden". */
int qry_flame(sqlite3 *db, const int64_t *tracks, size_t ntracks, const struct qry_window *w, struct jbuf *out,
	      struct qry_error *err);

#endif
