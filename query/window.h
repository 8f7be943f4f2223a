/*
 * The window engine: how a time window and a zoom become the rows of one
 * group, for the endpoints that read bulk tables (slices.c, counters.c,
 * sched.c, lists.c for logs).
 *
 * Bulk tables are stored by group (schema/trace.sql): the slices of one
 * (track, depth), the points of one counter track and the runs of one cpu
 * are numbered by ordinal in ts order and lie in extents of consecutive
 * ids (table extents); all logs are one id range in ts order. A time
 * window is therefore found by searching the ordinals (interpolation, with
 * bisection to fall back on), probing one row at a time (qwin_bound,
 * qwin_rows), and read as id ranges: no
 * secondary index, and the cost of a viewport query depends on what it
 * returns, not on the trace's size. With a resolution, the level-of-detail
 * records (qlod_iter) replace runs of rows shorter than a pixel by one
 * summary each.
 *
 * Every read goes through a cursor (cursor.h) and leaves its error there:
 * a probe that fails reads as a row past every window, an iterator that
 * fails ends, and the endpoint reports the error when it closes them.
 */
#ifndef QUERY_WINDOW_H
#define QUERY_WINDOW_H

#include <stdint.h>

#include "cursor.h"

/* ---- binary search by ordinal ------------------------------------------ */

/* Probes ts (and dur, where the table has one) of one row by ordinal in
 * the group ext, or by id when ext is NULL (logs). */
struct qprobe {
	struct qcur cur;            /* SELECT ts, dur FROM <table> WHERE id = ? */
	const struct qextents *ext; /* the group probed; NULL: ordinals are ids */
};

/* table: "slices", "sched" (rows with a dur), "counters" or "logs".
 * QRY_OK, or QRY_EDB with err filled. */
int qprobe_open(struct qprobe *p, sqlite3 *db, const char *table, struct qry_error *err);
/* Returns first, or the probe's error (qcur_close). */
int qprobe_close(struct qprobe *p, int first);
/* ts of the row at ordinal ord, and its dur when dur is not NULL;
 * INT64_MAX when there is no such row or the probe failed. */
int64_t qprobe_ts(struct qprobe *p, int64_t ord, int64_t *dur);

/* The first row in [lo, hi] whose ts is > t (strict) or >= t; hi + 1 when none. */
int64_t qwin_bound(struct qprobe *p, int64_t lo, int64_t hi, int64_t t, int strict);

/* A group's time marks (tracedb.h, "Time marks"), decoded: ts[k] is the ts
 * of the row of ordinal tracedb_mark_ord(rows, k). */
struct qmarks {
	int64_t *ts;
	uint64_t n;   /* tracedb_marks(rows); 0: none */
	int64_t rows;
};

/* Decodes the n bytes at blob as the marks of a group of rows rows into m
 * (emptied first). SQLITE_OK, SQLITE_NOMEM, or SQLITE_CORRUPT when the
 * bytes are not that group's marks (m is then empty). */
int qmarks_read(struct qmarks *m, const void *blob, int n, int64_t rows);
void qmarks_free(struct qmarks *m);
/* The same from column col of c's row (NULL: no marks): 0, or -1 when out
 * of memory; marks that do not decode are left as c's error (a damaged
 * database). */
int qwin_marks(struct qmarks *m, struct qcur *c, int col, int64_t rows);

/* qwin_bound for rows [lo, hi] of the group whose marks are m (NULL or
 * none: qwin_bound itself). The search runs between the two marks around
 * t: the rows the viewport then reads, not the group's ends. */
int64_t qwin_bound_marked(struct qprobe *p, const struct qmarks *m, int64_t lo, int64_t hi, int64_t t, int strict);

/*
 * The range [*lo, *hi] of rows in [first, last] that can overlap [s, e]:
 * rows with ts <= e, from the one in effect at s on. With disjoint rows
 * (each ends before the next starts) only the last row starting before s
 * can reach into the window; otherwise any row from s - max_dur on can.
 * Windows are inclusive: a row [ts, ts + dur] overlaps when ts <= e and
 * ts + dur >= s; a row that never ended (dur < 0) reaches every later s.
 * m: the group's time marks (qwin_bound_marked), or NULL.
 */
void qwin_rows(struct qprobe *p, const struct qmarks *m, int64_t first, int64_t last, int64_t s, int64_t e,
	       int disjoint, int64_t max_dur, int64_t *lo, int64_t *hi);

/* ---- level of detail --------------------------------------------------- */

/*
 * Exact replies (docs/API.md, "Level of detail"). For a window at
 * resolution r, per track (cpu, counter track):
 *   - below QRY_EXACT_RESOLUTION ns per pixel, or when the window holds at
 *     most QRY_EXACT_MAX rows of the track, the reply is every row;
 *   - otherwise rows under a pixel may be summarised: a summary item
 *     stands for the consecutive rows of one depth it counts ("merged"),
 *     and its ts/dur cover them. A row a pixel long or longer, and one
 *     that never ended, always comes back as itself.
 * Summaries come from the lod table (tracedb/tracedb.h): a group whose
 * rows all lie in the window and are all under a pixel becomes one
 * summary; any other group is read row by row. Each row is visited once
 * (a cursor walks the id range), so none comes back twice.
 */

/* The statement a qlod_iter steps: (track, depth, level, hi, lo). */
#define QLOD_SQL                                                                                                     \
	"SELECT buckets FROM lod WHERE track_id = ? AND depth = ? AND level = ? "                                    \
	"AND first_bucket <= ?4 AND last_bucket >= ?5 ORDER BY first_bucket"

/* One decoded lod record. */
struct qlod_rec {
	uint64_t v[LOD_WORDS];
};

static inline int64_t qlod_first(const struct qlod_rec *r)
{
	return (int64_t)r->v[LODW_FIRST];
}

static inline int64_t qlod_last(const struct qlod_rec *r)
{
	return (int64_t)r->v[LODW_LAST];
}

/* Walks the records of one (track, depth, level) from bucket lo to hi. */
struct qlod_iter {
	struct qcur *cur;       /* QLOD_SQL; the caller's, reset when the walk stops */
	int level;              /* of the rows read (tracedb_lod_unpack) */
	int n, k;               /* records in rec, and the next one to return; k <= n */
	int64_t hi;             /* the last bucket wanted */
	int done;               /* stopped: no more records are read */
	uint64_t rec[LOD_CHUNK][LOD_WORDS]; /* the current row's records, unpacked */
};

void qlod_start(struct qlod_iter *it, struct qcur *cur, int64_t track, int64_t depth, int level, int64_t lo,
		int64_t hi);
void qlod_stop(struct qlod_iter *it);
/* The next record, 1; 0 at the end or on an error (left as the cursor's;
 * a chunk that does not decode is a damaged database, SQLITE_CORRUPT). */
int qlod_next(struct qlod_iter *it, struct qlod_rec *r);

/* The level to read at this resolution among the stored ones (a bit per
 * level); -1 when none is stored there and the raw rows are the best
 * summary. */
int qlod_level(int64_t resolution, uint64_t levels);

/* Whether the reply for `rows` rows of a window is the exact list. */
static inline int qlod_exact(const struct qry_window *w, int64_t rows)
{
	return w->resolution < QRY_EXACT_RESOLUTION || rows <= QRY_EXACT_MAX;
}

/* Whether a group of slices or runs may become one summary: all of it in
 * [cur, hi], every row ended and under a pixel. */
static inline int qlod_summarises(const struct qlod_rec *r, int64_t cur, int64_t hi, int64_t resolution)
{
	return qlod_first(r) >= cur && qlod_last(r) <= hi && r->v[LODW_OPEN] == 0 &&
	       (int64_t)r->v[LODW_LONGEST_DUR] < resolution;
}

/* ---- names ------------------------------------------------------------- */

enum { QNAMES_SLOTS = 1024 };

/* A per-request cache of string ids to text. */
struct qnames {
	struct qcur cur;             /* SELECT str FROM strings WHERE id = ? */
	int64_t id[QNAMES_SLOTS];    /* the id whose text str holds, by id % slots */
	char *str[QNAMES_SLOTS];     /* owned, as a JSON string (quoted, escaped);
				      * NULL: empty slot (or out of memory) */
	size_t len[QNAMES_SLOTS];    /* of str */
};

/* QRY_OK, or QRY_EDB with err filled; qnames_close either way. */
int qnames_open(struct qnames *n, sqlite3 *db, struct qry_error *err);
/* Returns first, or the cache's read error. */
int qnames_close(struct qnames *n, int first);
/* Writes the text of string id as a JSON string ("" when there is none). */
void qnames_put(struct qnames *n, struct jbuf *b, int64_t id);

#endif
