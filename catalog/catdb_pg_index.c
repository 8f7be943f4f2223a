/*
 * The catalog in PostgreSQL (catdb_pg.h): the name index, filled from each
 * ready trace's name statistics, and the searches that read it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../provider/utf8.h"
#include "../query/query.h"
#include "../tracedb/tracedb.h"
#include "catdb_pg.h"

/* ---- the name index ------------------------------------------------------- */

/* A trace's name statistics as array literals, one element per name. */
struct rows {
	struct jbuf names, count, ended, total, max, sketch;
	size_t n, skipped;
};

static void array_i64(struct jbuf *b, int64_t v)
{
	char num[24];

	if (b->len > 1)
		jb_raw(b, ",", 1);
	i64_text(v, num, sizeof(num));
	jb_raw(b, num, strlen(num));
}

static int row_add(void *ctx, const struct qry_name_stat *s)
{
	static const char hex[] = "0123456789abcdef";
	struct rows *k = ctx;
	const unsigned char *p = s->sketch;
	size_t i;

	if (!utf8_valid(s->name, strlen(s->name))) { /* what a text column of a UTF8 database takes */
		k->skipped++;
		return 0;
	}
	array_text(&k->names, s->name);
	array_i64(&k->count, s->count);
	array_i64(&k->ended, s->ended);
	array_i64(&k->total, s->total_ns);
	array_i64(&k->max, s->max_ns);
	/* bytea in hex, inside an array literal: "\\x0a1b..." */
	jb_raw(&k->sketch, k->sketch.len > 1 ? ",\"\\\\x" : "\"\\\\x", k->sketch.len > 1 ? 5 : 4);
	for (i = 0; i < s->sketch_len; i++) {
		char two[2] = { hex[p[i] >> 4], hex[p[i] & 15] };

		jb_raw(&k->sketch, two, 2);
	}
	jb_raw(&k->sketch, "\"", 1);
	k->n++;
	return 0;
}

static int rows_read(const char *db_path, struct rows *k, char *err, size_t errlen)
{
	struct qry_error qe = { 0 };
	struct jbuf *all[] = { &k->names, &k->count, &k->ended, &k->total, &k->max, &k->sketch };
	const char *why;
	sqlite3 *db;
	size_t i;
	int rc;

	if ((db = tracedb_open_readonly(db_path, &why)) == NULL) {
		snprintf(err, errlen, "the trace's database cannot be read: %s", why);
		return CATDB_EFAIL;
	}
	for (i = 0; i < 6; i++)
		jb_raw(all[i], "{", 1);
	rc = qry_name_stats(db, row_add, k, &qe);
	sqlite3_close(db);
	for (i = 0; i < 6; i++) {
		jb_raw(all[i], "}", 1);
		jb_raw(all[i], "", 1);
		if (all[i]->oom)
			rc = QRY_EDB;
	}
	if (rc != QRY_OK)
		snprintf(err, errlen, "the trace's names cannot be read: %s", qe.msg[0] ? qe.msg : "out of memory");
	return rc == QRY_OK ? 0 : -1;
}

static void rows_fini(struct rows *k)
{
	jb_fini(&k->names);
	jb_fini(&k->count);
	jb_fini(&k->ended);
	jb_fini(&k->total);
	jb_fini(&k->max);
	jb_fini(&k->sketch);
}

/*
 * Three statements in one transaction: the old rows out, the new names in
 * (a name another server adds at the same time is taken as it is), then
 * the statistics joined to the names' ids. The names go in sorted (byte
 * order) so that two servers indexing at once lock them in the same order.
 * Runs inside the open transaction; rolled back on failure.
 */
static int index_tx(struct pg_lane *p, const char *id, const struct rows *k, char *err, size_t errlen)
{
	static const char *const sql[] = {
		"DELETE FROM name_stats WHERE trace_id = $1",
		"INSERT INTO names (name) SELECT u FROM unnest($1::text[]) AS u ORDER BY u COLLATE \"C\" "
		"ON CONFLICT (name) DO NOTHING",
		"INSERT INTO name_stats (name_id, trace_id, count, ended, total_ns, max_ns, sketch) "
		"SELECT n.id, $2, u.c, u.e, u.t, u.m, u.s FROM unnest($1::text[], $3::bigint[], $4::bigint[], "
		"$5::bigint[], $6::bigint[], $7::bytea[]) AS u(name, c, e, t, m, s) JOIN names n ON n.name = u.name",
	};
	const char *vals[7] = { k->names.p, id, k->count.p, k->ended.p, k->total.p, k->max.p, k->sketch.p };
	/* each statement takes the parameters it names: the first only the id */
	static const int first[] = { 1, 0, 0 }, count[] = { 1, 1, 7 };
	PGresult *res;
	size_t i;

	for (i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		res = pg_run(p, sql[i], count[i], vals + first[i], 0);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			return pg_fail(p, "indexing a trace's names", res, err, errlen);
		PQclear(res);
	}
	return CATDB_OK;
}

int pg_index(struct catdb *d, int64_t id, const char *db_path, char *err, size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->idx;
	struct rows k;
	char num[24];
	int rc;

	memset(&k, 0, sizeof(k));
	jb_init(&k.names);
	jb_init(&k.count);
	jb_init(&k.ended);
	jb_init(&k.total);
	jb_init(&k.max);
	jb_init(&k.sketch);
	if (rows_read(db_path, &k, err, errlen) != 0) {
		rows_fini(&k);
		return CATDB_EFAIL;
	}
	i64_text(id, num, sizeof(num));
	if ((rc = pg_enter(p, "BEGIN", "indexing a trace's names", err, errlen)) == CATDB_OK)
		rc = pg_leave(p, index_tx(p, num, &k, err, errlen), "indexing a trace's names", err, errlen);
	if (rc == CATDB_OK && k.skipped > 0)
		fprintf(stderr, "trace-server: trace %" PRId64 ": %zu names that are not UTF-8 text are left out of "
				"the name index (PostgreSQL keeps text as UTF-8)\n", id, k.skipped);
	rows_fini(&k);
	return rc;
}

int pg_unindex(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->idx;
	const char *vals[1];
	char num[24];
	PGresult *res;
	int rc;

	if ((rc = pg_enter(p, "BEGIN", "dropping a trace's name index", err, errlen)) != CATDB_OK)
		return rc;
	i64_text(id, num, sizeof(num));
	vals[0] = num;
	res = pg_run(p, "DELETE FROM name_stats WHERE trace_id = $1", 1, vals, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = pg_fail(p, "dropping a trace's name index", res, err, errlen);
	else
		PQclear(res);
	return pg_leave(p, rc, "dropping a trace's name index", err, errlen);
}

static int64_t be64(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | u[i];
	return (int64_t)v;
}

/* q as a LIKE pattern "%q%", ASCII letters lowered as SQLite's lower()
 * does, the pattern's own characters (% _ \) escaped. NULL when out of
 * memory. */
static char *like_pattern(const char *q)
{
	size_t n = strlen(q), i, j = 0;
	char *s = malloc(2 * n + 3);

	if (s == NULL)
		return NULL;
	s[j++] = '%';
	for (i = 0; i < n; i++) {
		char ch = q[i];

		if (ch == '%' || ch == '_' || ch == '\\')
			s[j++] = '\\';
		s[j++] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
	}
	s[j++] = '%';
	s[j] = '\0';
	return s;
}

/* Binary results: the numbers come as 8 big-endian bytes, the sketch as
 * its bytes, the name as text. Rows in trace order only: names.c picks
 * each trace's first names itself, cheaper than a sort by name here. */
/* Rows of the name index that sql (its one parameter param) selects. */
static int name_rows(struct catdb *d, const char *sql, const char *param,
		     int (*row)(void *ctx, const struct catdb_name_row *r), void *ctx, char *err, size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->idx;
	struct catdb_name_row h;
	const char *vals[1] = { param };
	PGresult *res;
	int i, n, rc;

	if ((rc = pg_enter(p, "BEGIN READ ONLY", "a search", err, errlen)) != CATDB_OK)
		return rc;
	res = PQexecParams(p->conn, sql, 1, NULL, vals, NULL, NULL, 1);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_leave(p, pg_fail(p, "a search", res, err, errlen), "a search", err, errlen);
	n = PQntuples(res);
	for (i = 0; i < n && rc == CATDB_OK; i++) {
		h.trace = be64(PQgetvalue(res, i, 0));
		h.name = PQgetvalue(res, i, 1);
		h.count = be64(PQgetvalue(res, i, 2));
		h.ended = be64(PQgetvalue(res, i, 3));
		h.total_ns = be64(PQgetvalue(res, i, 4));
		h.max_ns = be64(PQgetvalue(res, i, 5));
		h.sketch = PQgetvalue(res, i, 6);
		h.sketch_len = (size_t)PQgetlength(res, i, 6);
		if (row(ctx, &h) != 0) {
			snprintf(err, errlen, "a row of the name index is damaged or memory ran out");
			rc = CATDB_EFAIL;
		}
	}
	PQclear(res);
	return pg_leave(p, rc, "a search", err, errlen);
}

int pg_search(struct catdb *d, const char *q, int (*row)(void *ctx, const struct catdb_name_row *r), void *ctx,
		     char *err, size_t errlen)
{
	char *pat = like_pattern(q);
	int rc;

	if (pat == NULL) {
		snprintf(err, errlen, "out of memory");
		return CATDB_EFAIL;
	}
	rc = name_rows(d,
		       "SELECT s.trace_id, n.name, s.count, s.ended, s.total_ns, s.max_ns, s.sketch "
		       "FROM names n JOIN name_stats s ON s.name_id = n.id "
		       "WHERE translate(n.name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') LIKE $1 "
		       "ORDER BY s.trace_id",
		       pat, row, ctx, err, errlen);
	free(pat);
	return rc;
}

int pg_name_exact(struct catdb *d, const char *name, int (*row)(void *ctx, const struct catdb_name_row *r),
			 void *ctx, char *err, size_t errlen)
{
	return name_rows(d,
			 "SELECT s.trace_id, n.name, s.count, s.ended, s.total_ns, s.max_ns, s.sketch "
			 "FROM names n JOIN name_stats s ON s.name_id = n.id WHERE n.name = $1 ORDER BY s.trace_id",
			 name, row, ctx, err, errlen);
}
