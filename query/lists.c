/*
 * The list endpoints: the trace's tracks (/tracks), and the rows of a
 * window that come back as a plain list with "truncated" (/flows, /logs).
 * Rows are written as they are stored; each column has its key, and the
 * ids stored with their 64 bits (pids, tids, koids) print as unsigned.
 */
#include <stdint.h>

#include "window.h"

/*
 * Writes the columns of c's row as members of the object being written:
 * keys name them, and a 'u' in ukeys prints that column as an unsigned
 * 64-bit integer (koids, ids stored with their bits).
 */
static void put_columns(struct qcur *c, const char *const *keys, const char *ukeys, struct jbuf *out)
{
	int i, cols = sqlite3_column_count(c->st);

	for (i = 0; i < cols; i++) {
		jb_key(out, keys[i]);
		if (ukeys[i] == 'u' && sqlite3_column_type(c->st, i) == SQLITE_INTEGER)
			jb_u64(out, (uint64_t)qcur_int(c, i));
		else
			qcur_put(c, out, i);
	}
}

/*
 * Writes the rows of c as an array of objects under key `list`, at most
 * limit of them (put_columns). Returns 1 when rows were left out.
 */
static int put_objects(struct qcur *c, const char *list, const char *const *keys, const char *ukeys, uint32_t limit,
		       struct jbuf *out)
{
	uint32_t n = 0;

	jb_key(out, list);
	jb_arr(out);
	while (qcur_step(c)) {
		if (n++ >= limit) {
			jb_arr_end(out);
			return 1;
		}
		jb_obj(out);
		put_columns(c, keys, ukeys, out);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	return 0;
}

/* ---- tracks ------------------------------------------------------------- */

/* The tracks of one process: c is bound to its pid and reset after. */
static void put_process_list(struct qcur *c, int64_t pid, const char *list, const char *const *keys,
			     const char *ukeys, struct jbuf *out)
{
	qcur_bind(c, 1, pid);
	put_objects(c, list, keys, ukeys, UINT32_MAX, out);
	qcur_reset(c);
}

static const char *const thread_keys[] = { "tid", "name", "track_id", "max_depth" };
static const char *const async_keys[] = { "track_id", "name", "category", "max_depth" };
static const char *const counter_keys[] = { "track_id", "name", "series", "counter_id", "min", "max" };
static const char *const cpu_keys[] = { "cpu", "track_id" };

/* pids, tids and counter ids are unsigned (docs/API.md): those of 2^63 and
 * more, stored negative, come after the others */
static const char *const tracks_sql[] = {
	"SELECT pid, name FROM processes ORDER BY pid < 0, pid",
	"SELECT th.tid, th.name, t.id, t.max_depth FROM threads th LEFT JOIN tracks t "
	"ON t.kind = 'thread' AND t.thread_id = th.id WHERE th.pid = ? ORDER BY th.tid < 0, th.tid",
	"SELECT t.id, n.str, c.str, t.max_depth FROM tracks t JOIN strings n ON n.id = t.name_id "
	"JOIN strings c ON c.id = t.category_id WHERE t.kind = 'async' AND t.pid = ? ORDER BY n.str, t.id",
	"SELECT t.id, n.str, s.str, t.counter_id, t.min_value, t.max_value FROM tracks t "
	"JOIN strings n ON n.id = t.name_id JOIN strings s ON s.id = t.series_id "
	"WHERE t.kind = 'counter' AND t.pid = ? ORDER BY n.str, s.str, t.counter_id < 0, t.counter_id",
	"SELECT cpu, id FROM tracks WHERE kind = 'cpu' ORDER BY cpu",
};

enum { TRACKS_NSQL = sizeof(tracks_sql) / sizeof(tracks_sql[0]) };

/* The reply of /tracks from its cursors (tracks_sql, in that order). */
static void put_tracks(struct qcur *c, struct jbuf *out)
{
	jb_obj(out);
	jb_key(out, "processes");
	jb_arr(out);
	while (qcur_step(&c[0])) {
		int64_t pid = qcur_int(&c[0], 0);

		jb_obj(out);
		jb_key(out, "pid");
		jb_u64(out, (uint64_t)pid);
		jb_key(out, "name");
		qcur_put(&c[0], out, 1);
		put_process_list(&c[1], pid, "threads", thread_keys, "u...", out);
		put_process_list(&c[2], pid, "async_tracks", async_keys, "....", out);
		put_process_list(&c[3], pid, "counter_tracks", counter_keys, "...u..", out);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	put_objects(&c[4], "cpus", cpu_keys, "..", UINT32_MAX, out);
	jb_obj_end(out);
}

int qry_tracks(sqlite3 *db, struct jbuf *out, struct qry_error *err)
{
	struct qcur c[TRACKS_NSQL];
	int i, rc = QRY_OK, failed = 0;

	for (i = 0; i < TRACKS_NSQL; i++)
		if (qcur_open(&c[i], db, tracks_sql[i], err) != QRY_OK)
			rc = err->code;
	if (rc == QRY_OK)
		put_tracks(c, out);
	for (i = 0; i < TRACKS_NSQL; i++)
		failed = qcur_close(&c[i], failed);
	return qcur_done(rc, failed, err);
}

/* ---- window lists ------------------------------------------------------- */

/* A list reply: {"<list>": [rows of c, bound by the caller], "truncated"}. */
static void put_rows(struct qcur *c, const char *list, const char *const *keys, const char *ukeys, uint32_t limit,
		     struct jbuf *out)
{
	int truncated;

	jb_obj(out);
	truncated = put_objects(c, list, keys, ukeys, limit, out);
	jb_key(out, "truncated");
	jb_bool(out, truncated);
	jb_obj_end(out);
}

/* A window list: the statement takes ?1 start, ?2 end, ?3 limit + 1. */
static int window_list(sqlite3 *db, const char *sql, const struct qry_window *w, const char *list,
		       const char *const *keys, const char *ukeys, struct jbuf *out, struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, db, sql, err);

	if (rc == QRY_OK) {
		qcur_bind(&c, 1, w->start);
		qcur_bind(&c, 2, w->end);
		qcur_bind(&c, 3, (int64_t)w->limit + 1);
		put_rows(&c, list, keys, ukeys, w->limit, out);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

/* The flows statements: an arrow starting in the window, and the order. */
#define FLOWS_FROM_IN                                                                                  \
	"SELECT f.flow_id, f.from_slice_id, f.to_slice_id, a.track_id, b.track_id, f.from_ts, f.to_ts FROM " \
	"flows f JOIN slices a ON a.id = f.from_slice_id JOIN slices b ON b.id = f.to_slice_id WHERE "     \
	"f.from_ts BETWEEN ?1 AND ?2 "
#define FLOWS_ORDER "ORDER BY f.from_ts, f.id LIMIT ?3"

/*
 * Flows with an end in the window, by from_ts (then id). The statement
 * with the OR reads every such flow and sorts them all for the first
 * `limit`: 6.9 s for the 2M flows of the 1 GB benchmark trace with the
 * default (whole) window. When every flow starts inside the window (the
 * first and last from_ts, two probes of its index) the OR adds nothing,
 * and the index gives the order: the first `limit` are all that is read.
 */
int qry_flows(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	static const char *const keys[] = { "flow_id", "from_slice", "to_slice", "from_track",
					    "to_track", "from_ts",    "to_ts" };
	struct qcur c;
	int64_t first = 0, last = 0;
	int rc, none = 0;

	if ((rc = qcur_open(&c, db, "SELECT (SELECT min(from_ts) FROM flows), (SELECT max(from_ts) FROM flows)", err)) !=
	    QRY_OK)
		return rc;
	if (qcur_step(&c)) {
		none = qcur_is_null(&c, 0); /* no arrow at all */
		first = qcur_int(&c, 0);
		last = qcur_int(&c, 1);
	}
	if ((rc = qcur_done(QRY_OK, qcur_close(&c, 0), err)) != QRY_OK)
		return rc;
	return window_list(db,
			   none || (w->start <= first && w->end >= last)
				   ? FLOWS_FROM_IN FLOWS_ORDER
				   : FLOWS_FROM_IN "OR f.to_ts BETWEEN ?1 AND ?2 " FLOWS_ORDER,
			   w, "flows", keys, "u......", out, err);
}

/* A log's members, and which print as unsigned (pid, tid). */
static const char *const log_keys[] = { "ts", "pid", "tid", "message" };
#define LOG_UKEYS ".uu."

/* A log of the window as itself, or summarising the logs of its pixel
 * column after it: its row is st's, bound to its id. */
static int put_log(struct qcur *st, int64_t merged, int64_t last_ts, struct jbuf *out)
{
	if (!qcur_step(st))
		return 0;
	jb_obj(out);
	put_columns(st, log_keys, LOG_UKEYS, out);
	if (merged >= 2) {
		jb_key(out, "last_ts");
		jb_i64(out, last_ts);
		jb_key(out, "merged");
		jb_i64(out, merged);
	}
	jb_obj_end(out);
	qcur_reset(st);
	return 1;
}

/*
 * The logs of ids [lo, hi] at resolution res (docs/API.md, level of
 * detail): per pixel column (floor(ts / res)), its first log, standing for
 * all of the column's when there are more ("merged", "last_ts"). A column's
 * end is a binary search, so the cost follows the columns, not the logs.
 * Returns 1 when logs were left out.
 */
static int put_log_columns(struct qcur *st, struct qprobe *p, int64_t lo, int64_t hi, int64_t res, uint32_t limit,
			   struct jbuf *out)
{
	int64_t i = lo;
	uint32_t n = 0;

	while (i <= hi && n < limit) {
		int64_t ts = qprobe_ts(p, i, NULL), m = ts % res, j;

		if (p->cur.err)
			break;
		if (m < 0)
			m += res;
		/* the next column starts at ts - m + res, when that is a time */
		j = ts > INT64_MAX - (res - m) ? hi + 1 : qwin_bound(p, i + 1, hi, ts + (res - m), 0);
		qcur_bind(st, 1, i);
		qcur_bind(st, 2, i);
		if (!put_log(st, j - i, j - i >= 2 ? qprobe_ts(p, j - 1, NULL) : ts, out))
			break;
		n++;
		i = j;
	}
	return i <= hi;
}

/* Logs are one id range in ts order: the window is two binary searches. */
int qry_logs(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct qcur n = { 0 }, st = { 0 };
	struct qprobe p = { 0 };
	int64_t last = 0, lo, hi;
	int rc = QRY_OK, failed;

	if (qcur_open(&n, db, "SELECT max(id) FROM logs", err) != QRY_OK ||
	    qcur_open(&st, db,
		      "SELECT l.ts, l.pid, l.tid, s.str FROM logs l JOIN strings s ON s.id = l.message_id "
		      "WHERE l.id BETWEEN ? AND ?",
		      err) != QRY_OK ||
	    qprobe_open(&p, db, "logs", err) != QRY_OK) {
		rc = err->code;
		goto out_finalize;
	}
	if (qcur_step(&n))
		last = qcur_int(&n, 0);
	lo = qwin_bound(&p, 1, last, w->start, 0);
	hi = qwin_bound(&p, 1, last, w->end, 1) - 1;
	if (w->resolution >= QRY_EXACT_RESOLUTION && hi - lo + 1 > QRY_EXACT_MAX) {
		int truncated;

		jb_obj(out);
		jb_key(out, "logs");
		jb_arr(out);
		truncated = put_log_columns(&st, &p, lo, hi, w->resolution, w->limit, out);
		jb_arr_end(out);
		jb_key(out, "truncated");
		jb_bool(out, truncated);
		jb_obj_end(out);
	} else {
		qcur_bind(&st, 1, lo);
		qcur_bind(&st, 2, hi);
		put_rows(&st, "logs", log_keys, LOG_UKEYS, w->limit, out);
	}
out_finalize:
	failed = qcur_close(&n, 0);
	failed = qcur_close(&st, failed);
	failed = qprobe_close(&p, failed);
	return qcur_done(rc, failed, err);
}
