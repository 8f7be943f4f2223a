/*
 * /slices/{id}: one slice with its place (track, thread), its arguments
 * by their stored type (schema/trace.sql, args) and the flows that start
 * or end at it (docs/API.md).
 */
#include <inttypes.h>
#include <stdio.h>

#include "../tracedb/tracedb.h"
#include "cursor.h"

/* An argument value by its stored type (schema/trace.sql, args). */
static void put_arg_value(struct jbuf *out, struct qcur *c)
{
	char hex[24];
	int64_t v = qcur_int(c, 2);

	switch (qcur_int(c, 1)) {
	case 2: /* u32 */
	case 4: /* u64 */
	case 8: /* koid */
		jb_u64(out, (uint64_t)v);
		break;
	case 1:
	case 3:
		jb_i64(out, v);
		break;
	case 5: /* SQLite stores a NaN as NULL: it prints as null, as jb_dbl prints it */
		if (qcur_is_null(c, 3))
			jb_null(out);
		else
			jb_dbl(out, sqlite3_column_double(c->st, 3));
		break;
	case 6:
		qcur_put(c, out, 4);
		break;
	case 7:
		snprintf(hex, sizeof(hex), "0x%" PRIx64, (uint64_t)v);
		jb_str(out, hex);
		break;
	case 9:
		jb_bool(out, v != 0);
		break;
	case 10:
		qcur_put(c, out, 5);
		break;
	default:
		jb_null(out);
	}
}

/* "args" of the argument set; returns failed, or the read's error. */
static int put_args(sqlite3 *db, int64_t set, struct jbuf *out, int failed)
{
	struct qcur c;
	struct qry_error ignored;

	jb_key(out, "args");
	jb_obj(out);
	if (qcur_open(&c, db,
		      "SELECT k.str, a.type, a.int_value, a.real_value, v.str, a.blob_value FROM args a "
		      "JOIN strings k ON k.id = a.key_id LEFT JOIN strings v ON v.id = a.string_id "
		      "WHERE a.id BETWEEN ?1 AND ?1 + 511 AND a.arg_set_id = ?1 ORDER BY a.id",
		      &ignored) == QRY_OK) {
		qcur_bind(&c, 1, set);
		while (qcur_step(&c)) {
			jb_key(out, qcur_text(&c, 0));
			put_arg_value(out, &c);
		}
	}
	jb_obj_end(out);
	return qcur_close(&c, failed);
}

/*
 * "flows" from or to the slice; returns failed, or the read's error. An
 * arrow leaves where its from-slice ends (its start when it never ended)
 * and reaches where its to-slice begins (schema/trace.sql), so the
 * indexes on those times find a slice's arrows: flows has no index on
 * slice ids, which would cost ingest more than they save here.
 */
static int put_slice_flows(sqlite3 *db, int64_t id, int64_t ts, int64_t dur, struct jbuf *out, int failed)
{
	struct qcur c;
	struct qry_error ignored;

	jb_key(out, "flows");
	jb_arr(out);
	if (qcur_open(&c, db,
		      "SELECT flow_id, from_slice_id, to_slice_id FROM flows WHERE from_ts = ?2 AND from_slice_id = ?1 "
		      "UNION ALL SELECT flow_id, from_slice_id, to_slice_id FROM flows WHERE to_ts = ?3 AND "
		      "to_slice_id = ?1",
		      &ignored) == QRY_OK) {
		qcur_bind(&c, 1, id);
		qcur_bind(&c, 2, tracedb_flow_from_ts(ts, dur));
		qcur_bind(&c, 3, ts);
		while (qcur_step(&c)) {
			jb_obj(out);
			jb_key(out, "flow_id");
			jb_u64(out, (uint64_t)qcur_int(&c, 0));
			jb_key(out, "from_slice");
			qcur_put(&c, out, 1);
			jb_key(out, "to_slice");
			qcur_put(&c, out, 2);
			jb_obj_end(out);
		}
	}
	jb_arr_end(out);
	return qcur_close(&c, failed);
}

/* A 64-bit id stored with its bits, or null. */
static void put_u64_or_null(struct jbuf *out, struct qcur *c, int col)
{
	if (qcur_is_null(c, col))
		jb_null(out);
	else
		jb_u64(out, (uint64_t)qcur_int(c, col));
}

/* The reply from the slice's row in c; returns failed, or a read's error. */
static int put_slice(sqlite3 *db, struct qcur *c, int64_t slice_id, struct jbuf *out, int failed)
{
	static const char *const keys[] = { "id", "ts", "dur", "depth", "name", "category", "track_id" };
	int i;

	jb_obj(out);
	for (i = 0; i < 7; i++) {
		jb_key(out, keys[i]);
		qcur_put(c, out, i);
	}
	jb_key(out, "track_kind");
	qcur_put(c, out, 11);
	jb_key(out, "pid");
	put_u64_or_null(out, c, 7);
	jb_key(out, "tid");
	put_u64_or_null(out, c, 8);
	jb_key(out, "parent_id");
	qcur_put(c, out, 9);
	if (qcur_is_null(c, 10)) {
		jb_key(out, "args");
		jb_obj(out);
		jb_obj_end(out);
	} else {
		failed = put_args(db, qcur_int(c, 10), out, failed);
	}
	if (failed == 0)
		failed = put_slice_flows(db, slice_id, qcur_int(c, 1), qcur_int(c, 2), out, failed);
	jb_obj_end(out);
	return failed;
}

int qry_slice(sqlite3 *db, int64_t slice_id, struct jbuf *out, struct qry_error *err)
{
	struct qcur c;
	int rc, failed = 0;

	rc = qcur_open(&c, db,
		       "SELECT s.id, s.ts, s.dur, s.depth, n.str, c.str, s.track_id, t.pid, th.tid, "
		       "s.parent_id, s.arg_set_id, t.kind FROM slices s JOIN strings n ON n.id = s.name_id "
		       "JOIN strings c ON c.id = s.category_id JOIN tracks t ON t.id = s.track_id "
		       "LEFT JOIN threads th ON th.id = t.thread_id WHERE s.id = ?",
		       err);
	if (rc == QRY_OK) {
		qcur_bind(&c, 1, slice_id);
		if (qcur_step(&c))
			failed = put_slice(db, &c, slice_id, out, 0);
		else if (c.err == 0)
			rc = qry_fail(err, QRY_ENOTFOUND, "there is no slice with this id in the trace");
	}
	return qcur_done(rc, qcur_close(&c, failed), err);
}

int qry_slice_span(sqlite3 *db, int64_t slice_id, int64_t *track, int64_t *ts, int64_t *end, struct qry_error *err)
{
	struct qcur c;
	int rc;

	rc = qcur_open(&c, db,
		       "SELECT s.track_id, s.ts, CASE WHEN s.dur >= 0 THEN s.ts + s.dur ELSE max(s.ts, coalesce(("
		       "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'end_ns'), s.ts)) END "
		       "FROM slices s WHERE s.id = ?",
		       err);
	if (rc == QRY_OK) {
		qcur_bind(&c, 1, slice_id);
		if (qcur_step(&c)) {
			*track = qcur_int(&c, 0);
			*ts = qcur_int(&c, 1);
			*end = qcur_int(&c, 2);
		} else if (c.err == 0) {
			rc = qry_fail(err, QRY_ENOTFOUND, "there is no slice with this id in the trace");
		}
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

int qry_track_exists(sqlite3 *db, int64_t track_id, struct qry_error *err)
{
	struct qcur c;
	int rc;

	rc = qcur_open(&c, db, "SELECT 1 FROM tracks WHERE id = ?", err);
	if (rc == QRY_OK) {
		qcur_bind(&c, 1, track_id);
		if (!qcur_step(&c) && c.err == 0)
			rc = qry_fail(err, QRY_ENOTFOUND, "there is no track with this id in the trace");
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}
