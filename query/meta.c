/*
 * What the catalog keeps of a trace, read from the trace's own tables here,
 * the one module that reads them: its providers and the names of its first
 * processes (the summary the library lists), and its per-name statistics
 * (copied into the catalog's index for search across traces).
 */
#include <stdio.h>

#include "cursor.h"

enum { META_PROCESSES = 64 }; /* processes named in the summary, by pid */

/* Appends one array of rows (key: name) from sql, each column as the given
 * JSON member; QRY_OK, or QRY_EDB when a step fails. */
static int rows_json(sqlite3 *db, const char *key, const char *sql, const char *const *members, const int *is_u64,
		     int ncol, struct jbuf *b, struct qry_error *err)
{
	struct qcur c;
	int i;

	jb_key(b, key);
	jb_arr(b);
	if (qcur_open(&c, db, sql, err) != QRY_OK)
		return err->code;
	while (qcur_step(&c)) {
		jb_obj(b);
		for (i = 0; i < ncol; i++) {
			jb_key(b, members[i]);
			if (is_u64[i])
				jb_u64(b, (uint64_t)qcur_int(&c, i));
			else
				qcur_put(&c, b, i);
		}
		jb_obj_end(b);
	}
	jb_arr_end(b);
	return qcur_done(QRY_OK, qcur_close(&c, 0), err);
}

int qry_trace_metadata(sqlite3 *db, struct jbuf *b, struct qry_error *err)
{
	static const char *const prov[] = { "id", "name", "ticks_per_second", "buffer_overflows" };
	static const int prov_u64[] = { 1, 0, 1, 1 };
	static const char *const proc[] = { "pid", "name" };
	static const int proc_u64[] = { 1, 0 };
	char sql[96];
	int rc;

	rc = rows_json(db, "providers", "SELECT id, name, ticks_per_second, buffer_overflows FROM providers ORDER BY id",
		       prov, prov_u64, 4, b, err);
	if (rc != QRY_OK)
		return rc;
	/* pids are unsigned (docs/API.md): those of 2^63 and more, stored
	 * negative, come after the others */
	snprintf(sql, sizeof(sql), "SELECT pid, name FROM processes ORDER BY pid < 0, pid LIMIT %d", META_PROCESSES);
	return rows_json(db, "processes", sql, proc, proc_u64, 2, b, err);
}

int qry_name_stats(sqlite3 *db, int (*fn)(void *ctx, const struct qry_name_stat *s), void *ctx,
		   struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, db,
			   "SELECT s.str, n.count, n.ended, n.total_ns, n.max_ns, n.sketch FROM name_stats n "
			   "JOIN strings s ON s.id = n.name_id",
			   err);

	while (rc == QRY_OK && qcur_step(&c)) {
		struct qry_name_stat n;
		int len;

		if (qcur_is_null(&c, 0))
			continue;
		n.name = qcur_text(&c, 0);
		n.count = qcur_int(&c, 1);
		n.ended = qcur_int(&c, 2);
		n.total_ns = qcur_int(&c, 3);
		n.max_ns = qcur_int(&c, 4);
		n.sketch = qcur_blob(&c, 5, &len);
		n.sketch_len = (size_t)len;
		if (c.err == 0 && fn(ctx, &n) != 0) /* a value SQLite could not hand over is not handed on */
			rc = qry_fail(err, QRY_EDB, "the name statistics could not be kept");
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}
