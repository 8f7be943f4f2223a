/*
 * The catalog in PostgreSQL (schema/catalog_pg.sql), shared by several
 * servers: the same records and name index as catdb_sqlite.c, with the
 * same answers, plus versions so that each server can read what the others
 * changed (sync.c).
 *
 * Three connections (struct catdb_pg, catdb_pg.h), each used by one thread
 * at a time. This file holds them and the records; the name index is in
 * catdb_pg_index.c, notes in catdb_pg_notes.c, shared ingest jobs in
 * catdb_pg_jobs.c.
 * Every statement that carries a value is parameterized (PQexecParams);
 * the schema's DDL, which carries none, runs as plain text. Writes of several statements run in a
 * transaction. When the server goes away (a restart, a network cut) the
 * failing call answers CATDB_EDOWN and later calls reconnect (PQreset), at
 * most every RECONNECT_MS; a call that finds the connection dead before it
 * changed anything reconnects at once and goes on.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../json/jbuf.h"
#include "../query/query.h"
#include "../tracedb/tracedb.h"
#include "catdb_pg.h"
#include "../provider/utf8.h"

extern const char schema_catalog_pg_sql[];

#define CONNECT_TIMEOUT "3"


/* Advisory lock keys (any numbers no other user of the database takes):
 * one held by the writers of versions to their commit (catdb_pg.h), one by
 * a server applying the schema. */
#define LOCK_SCHEMA "SELECT pg_advisory_lock(7975436174951202)"
#define UNLOCK_SCHEMA "SELECT pg_advisory_unlock(7975436174951202)"


/* libpq's message on one line, without its trailing newline. */
void pg_message(const char *m, char *out, size_t n)
{
	size_t len;

	snprintf(out, n, "%s", m && m[0] ? m : "no reason given");
	len = strlen(out);
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		out[--len] = '\0';
	for (; len > 0; len--) /* one line in the log: libpq's hints come on lines of their own */
		if (out[len - 1] == '\n' || out[len - 1] == '\t')
			out[len - 1] = ' ';
}

/*
 * Reports a failed statement (res may be NULL) as a sentence, rolls back
 * an open transaction and clears res. CATDB_EDOWN when the connection is
 * gone, else CATDB_EFAIL.
 */
int pg_fail(struct pg_lane *p, const char *what, PGresult *res, char *err, size_t errlen)
{
	char msg[400];
	int down = PQstatus(p->conn) != CONNECTION_OK;

	pg_message(res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res) : PQerrorMessage(p->conn), msg,
		   sizeof(msg));
	snprintf(err, errlen, "%s in the catalog's PostgreSQL database failed%s: %s", what,
		 down ? " (the database cannot be reached)" : "", msg);
	PQclear(res);
	if (!down && PQtransactionStatus(p->conn) != PQTRANS_IDLE)
		PQclear(PQexec(p->conn, "ROLLBACK"));
	return down ? CATDB_EDOWN : CATDB_EFAIL;
}

/* A statement with text parameters (NULL = SQL NULL); its result. */
PGresult *pg_run(struct pg_lane *p, const char *sql, int n, const char *const *vals, int binary)
{
	return PQexecParams(p->conn, sql, n, NULL, vals, NULL, NULL, binary);
}

/* Runs sql (no parameters), expecting ok; 0 or -1 (res kept in *out). */
int pg_simple(struct pg_lane *p, const char *sql, ExecStatusType ok, PGresult **out)
{
	PGresult *res = PQexec(p->conn, sql);

	if (PQresultStatus(res) == ok) {
		PQclear(res);
		return 0;
	}
	*out = res;
	return CATDB_EFAIL;
}

/*
 * Takes the connection (locks mu) and runs first, the opening statement
 * of a call (BEGIN, or a query with no effect). A connection found dead
 * here is reset and first run again: nothing was done yet. CATDB_OK with
 * mu held, or an error with mu released and err set.
 */
int pg_enter(struct pg_lane *p, const char *first, const char *what, char *err, size_t errlen)
{
	PGresult *res = NULL;
	int tries;

	pthread_mutex_lock(&p->mu);
	for (tries = 0; tries < 2; tries++) {
		if (PQstatus(p->conn) != CONNECTION_OK) {
			if (cat_now_ms() < p->retry_ms) {
				snprintf(err, errlen, "%s: the catalog's PostgreSQL database cannot be reached "
						      "(the server tries again shortly)", what);
				pthread_mutex_unlock(&p->mu);
				return CATDB_EDOWN;
			}
			PQreset(p->conn);
			if (PQstatus(p->conn) != CONNECTION_OK) {
				p->retry_ms = cat_now_ms() + RECONNECT_MS;
				break;
			}
		}
		if (pg_simple(p, first, PGRES_COMMAND_OK, &res) == 0)
			return CATDB_OK;
		if (PQstatus(p->conn) == CONNECTION_OK)
			break; /* the statement failed, not the connection */
		PQclear(res);
		res = NULL;
	}
	{
		int rc = pg_fail(p, what, res, err, errlen);

		pthread_mutex_unlock(&p->mu);
		return rc;
	}
}

/* Ends a call: commits when rc is CATDB_OK (a failed commit becomes the
 * error), else leaves the rollback done by pg_fail; releases mu. */
int pg_leave(struct pg_lane *p, int rc, const char *what, char *err, size_t errlen)
{
	PGresult *res = NULL;

	if (rc == CATDB_OK && PQtransactionStatus(p->conn) == PQTRANS_INTRANS &&
	    pg_simple(p, "COMMIT", PGRES_COMMAND_OK, &res) != 0)
		rc = pg_fail(p, what, res, err, errlen);
	else if (rc != CATDB_OK && PQstatus(p->conn) == CONNECTION_OK && PQtransactionStatus(p->conn) != PQTRANS_IDLE)
		PQclear(PQexec(p->conn, "ROLLBACK")); /* an error of ours, not the database's */
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* ---- text forms of values --------------------------------------------------- */

void i64_text(int64_t v, char *out, size_t n)
{
	snprintf(out, n, "%" PRId64, v);
}

const char *empty_null(const char *s)
{
	return s && s[0] ? s : NULL;
}

/* Appends s as an element of a text array literal: "..." with " and \
 * escaped. */
void array_text(struct jbuf *b, const char *s)
{
	const char *p;

	jb_raw(b, b->len > 1 ? ",\"" : "\"", b->len > 1 ? 2 : 1);
	for (p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			jb_raw(b, "\\", 1);
		jb_raw(b, p, 1);
	}
	jb_raw(b, "\"", 1);
}

/* ---- records ---------------------------------------------------------------- */

static const char cols[] = "id, name, format, format_hint, size_bytes, status, error_code, error_message, created_at, "
			   "start_ns, end_ns, summary, symbols_named, symbols_error, binary_name, description, pinned, "
			   "stored_bytes, indexed, stream, db_file";

/* Replaces r's labels: two arrays, keys and values. */
static int save_labels(struct pg_lane *p, const struct trace_rec *r, char *err, size_t errlen)
{
	struct jbuf k, v;
	char id[24];
	const char *vals[3];
	PGresult *res;
	size_t i;
	int rc = CATDB_OK;

	i64_text(r->id, id, sizeof(id));
	vals[0] = id;
	res = pg_run(p, "DELETE FROM labels WHERE trace_id = $1", 1, vals, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		return pg_fail(p, "saving a trace's labels", res, err, errlen);
	PQclear(res);
	if (r->meta.nlabels == 0)
		return CATDB_OK;
	jb_init(&k);
	jb_init(&v);
	jb_raw(&k, "{", 1);
	jb_raw(&v, "{", 1);
	for (i = 0; i < r->meta.nlabels; i++) {
		array_text(&k, r->meta.labels[i].key);
		array_text(&v, r->meta.labels[i].value);
	}
	jb_raw(&k, "}", 1);
	jb_raw(&v, "}", 1);
	jb_raw(&k, "", 1); /* NUL-terminated for libpq */
	jb_raw(&v, "", 1);
	if (k.oom || v.oom) {
		snprintf(err, errlen, "out of memory saving a trace's labels");
		rc = pg_fail(p, "saving a trace's labels", NULL, err, errlen);
		goto out;
	}
	vals[1] = k.p;
	vals[2] = v.p;
	res = pg_run(p, "INSERT INTO labels (trace_id, key, value) SELECT $1, k, v FROM unnest($2::text[], $3::text[]) AS u(k, v)",
		     3, vals, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = pg_fail(p, "saving a trace's labels", res, err, errlen);
	else
		PQclear(res);
out:
	jb_fini(&k);
	jb_fini(&v);
	return rc;
}

/* The record's columns as text, in the order of cols; num holds the numbers. */
static void rec_values(const struct trace_rec *r, const char **vals, char num[7][24])
{
	i64_text(r->id, num[0], sizeof(num[0]));
	i64_text((int64_t)r->state.size, num[1], sizeof(num[1]));
	i64_text(r->state.start_ns, num[2], sizeof(num[2]));
	i64_text(r->state.end_ns, num[3], sizeof(num[3]));
	i64_text(r->state.symbols_named, num[4], sizeof(num[4]));
	i64_text((int64_t)r->state.stored, num[5], sizeof(num[5]));
	vals[0] = num[0];
	vals[1] = r->meta.name;
	vals[2] = empty_null(r->state.format);
	vals[3] = empty_null(r->state.format_hint);
	vals[4] = num[1];
	vals[5] = cat_status_names[r->state.status];
	vals[6] = empty_null(r->state.error_code);
	vals[7] = r->state.error_msg;
	vals[8] = r->state.created_at;
	vals[9] = num[2];
	vals[10] = num[3];
	vals[11] = r->state.summary;
	vals[12] = num[4];
	vals[13] = r->state.symbols_error;
	vals[14] = r->state.binary_name;
	vals[15] = r->meta.description;
	vals[16] = r->meta.pinned ? "true" : "false";
	vals[17] = num[5];
	vals[18] = r->state.indexed == 1 ? "true" : "false";
	vals[19] = empty_null(r->state.stream);
	vals[20] = empty_null(r->state.db_file);
}

/* Each part's statement and which of rec_values' columns it takes, in
 * the order of its parameters. */
static const struct {
	const char *sql;
	int n;
	int cols[21];
} save_sql[] = {
	[CATDB_ALL] = { "INSERT INTO traces (id, name, format, format_hint, size_bytes, status, error_code, "
			"error_message, created_at, start_ns, end_ns, summary, symbols_named, symbols_error, "
			"binary_name, description, pinned, stored_bytes, indexed, stream, db_file, version) "
			"VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21, "
			"nextval('catalog_versions')) "
			"ON CONFLICT (id) DO UPDATE SET name = $2, format = $3, format_hint = $4, size_bytes = $5, "
			"status = $6, error_code = $7, error_message = $8, created_at = $9, start_ns = $10, "
			"end_ns = $11, summary = $12, symbols_named = $13, symbols_error = $14, binary_name = $15, "
			"description = $16, pinned = $17, stored_bytes = $18, indexed = $19, stream = $20, "
			"db_file = $21, version = EXCLUDED.version RETURNING version",
			21, { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 } },
	/* an UPDATE: a record another server deleted meanwhile is not brought back */
	[CATDB_META] = { "UPDATE traces SET name = $2, description = $3, pinned = $4, "
			 "version = nextval('catalog_versions') WHERE id = $1 RETURNING version",
			 4, { 0, 1, 15, 16 } },
	[CATDB_STATE] = { "UPDATE traces SET format = $2, format_hint = $3, size_bytes = $4, status = $5, "
			  "error_code = $6, error_message = $7, created_at = $8, start_ns = $9, end_ns = $10, "
			  "summary = $11, symbols_named = $12, symbols_error = $13, binary_name = $14, "
			  "stored_bytes = $15, indexed = $16, stream = $17, db_file = $18, "
			  "version = nextval('catalog_versions') WHERE id = $1 RETURNING version",
			  18, { 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17, 18, 19, 20 } },
};

/* The version of row id now (under LOCK_VERSIONS: no writer moves it
 * meanwhile); 0 when there is no row, -1 on failure (res in *out). */
static int64_t row_version(struct pg_lane *p, const char *id, PGresult **out)
{
	const char *vals[1] = { id };
	PGresult *res = pg_run(p, "SELECT version FROM traces WHERE id = $1", 1, vals, 0);
	int64_t v;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		*out = res;
		return -1;
	}
	v = PQntuples(res) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
	PQclear(res);
	return v;
}

/*
 * Writes part of r inside the open transaction; on failure it is rolled
 * back (pg_fail). Versions are taken in commit order: the lock is held
 * until COMMIT. *version as catdb.h's save says (may be NULL).
 */
int pg_save_tx(struct pg_lane *p, const struct trace_rec *r, enum catdb_part part, int64_t *version, char *err,
		   size_t errlen)
{
	const char *all[21], *vals[21];
	char num[7][24];
	PGresult *res = NULL;
	int64_t before = 0;
	int rc, i;

	rec_values(r, all, num);
	for (i = 0; i < save_sql[part].n; i++)
		vals[i] = all[save_sql[part].cols[i]];
	res = PQexec(p->conn, LOCK_VERSIONS);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_fail(p, "saving a trace", res, err, errlen);
	PQclear(res);
	if (part != CATDB_ALL && (before = row_version(p, all[0], &res)) < 0)
		return pg_fail(p, "saving a trace", res, err, errlen);
	if (part == CATDB_META && version && before != 0 && before != *version) {
		PQclear(PQexec(p->conn, "ROLLBACK"));
		snprintf(err, errlen, "trace %" PRId64 " was changed by another server since it was read", r->id);
		return CATDB_ECONFLICT;
	}
	res = pg_run(p, save_sql[part].sql, save_sql[part].n, vals, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_fail(p, "saving a trace", res, err, errlen);
	/* the new version is this record's only when it held the one before */
	if (version && PQntuples(res) == 1 && (part == CATDB_ALL || before == *version))
		*version = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	/* labels only with the row they belong to */
	rc = part != CATDB_STATE && PQntuples(res) == 1 ? save_labels(p, r, err, errlen) : CATDB_OK;
	PQclear(res);
	return rc;
}

static int pg_save(struct catdb *d, const struct trace_rec *r, enum catdb_part part, int64_t *version, char *err,
		   size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->rec;
	int rc;

	if ((rc = pg_enter(p, "BEGIN", "saving a trace", err, errlen)) != CATDB_OK)
		return rc;
	return pg_leave(p, pg_save_tx(p, r, part, version, err, errlen), "saving a trace", err, errlen);
}

static int pg_remove(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	static const char *const sql[] = {
		"DELETE FROM traces WHERE id = $1",
		"DELETE FROM labels WHERE trace_id = $1",
		"DELETE FROM name_stats WHERE trace_id = $1",
		"DELETE FROM notes WHERE trace_id = $1",
		"INSERT INTO deleted (trace_id, version) VALUES ($1, nextval('catalog_versions')) "
		"ON CONFLICT (trace_id) DO NOTHING",
	};
	struct pg_lane *p = &((struct catdb_pg *)d)->rec;
	const char *vals[1];
	char num[24];
	PGresult *res;
	size_t i;
	int rc;

	if ((rc = pg_enter(p, "BEGIN", "removing a trace", err, errlen)) != CATDB_OK)
		return rc;
	i64_text(id, num, sizeof(num));
	vals[0] = num;
	res = PQexec(p->conn, LOCK_VERSIONS);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_leave(p, pg_fail(p, "removing a trace", res, err, errlen), "removing a trace", err, errlen);
	PQclear(res);
	for (i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		res = pg_run(p, sql[i], 1, vals, 0);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			return pg_leave(p, pg_fail(p, "removing a trace", res, err, errlen), "removing a trace", err,
					errlen);
		if (i == 0 && strcmp(PQcmdTuples(res), "0") == 0) {
			/* another server removed it first: its deletion stands */
			PQclear(res);
			snprintf(err, errlen, "trace %" PRId64 " was removed by another server", id);
			return pg_leave(p, CATDB_ENOENT, "removing a trace", err, errlen);
		}
		PQclear(res);
	}
	return pg_leave(p, CATDB_OK, "removing a trace", err, errlen);
}

static int pg_next_id(struct catdb *d, int64_t *id, char *err, size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->rec;
	PGresult *res;
	int rc;

	if ((rc = pg_enter(p, "BEGIN", "taking a trace id", err, errlen)) != CATDB_OK)
		return rc;
	res = PQexec(p->conn, "SELECT nextval('trace_ids')");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		return pg_leave(p, pg_fail(p, "taking a trace id", res, err, errlen), "taking a trace id", err, errlen);
	*id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return pg_leave(p, CATDB_OK, "taking a trace id", err, errlen);
}

/* ---- loading ---------------------------------------------------------------- */

char *col_dup(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : strdup(PQgetvalue(res, row, col));
}

const char *col_text(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col);
}

int64_t col_i64(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* Row i of a traces query into a new record; NULL when out of memory. */
static struct trace_rec *rec_read(const PGresult *res, int i)
{
	struct trace_rec *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->id = col_i64(res, i, 0);
	r->meta.name = strdup(col_text(res, i, 1));
	snprintf(r->state.format, sizeof(r->state.format), "%s", col_text(res, i, 2));
	snprintf(r->state.format_hint, sizeof(r->state.format_hint), "%s", col_text(res, i, 3));
	r->state.size = (uint64_t)col_i64(res, i, 4);
	r->state.status = cat_status_parse(col_text(res, i, 5));
	snprintf(r->state.error_code, sizeof(r->state.error_code), "%s", col_text(res, i, 6));
	r->state.error_msg = col_dup(res, i, 7);
	snprintf(r->state.created_at, sizeof(r->state.created_at), "%s", col_text(res, i, 8));
	r->state.created = cat_rfc3339_parse(r->state.created_at);
	r->state.start_ns = col_i64(res, i, 9);
	r->state.end_ns = col_i64(res, i, 10);
	r->state.summary = col_dup(res, i, 11);
	r->state.symbols_named = PQgetisnull(res, i, 12) ? -1 : col_i64(res, i, 12);
	r->state.symbols_error = col_dup(res, i, 13);
	r->state.binary_name = col_dup(res, i, 14);
	r->meta.description = strdup(col_text(res, i, 15));
	r->meta.pinned = strcmp(col_text(res, i, 16), "t") == 0;
	r->state.stored = (uint64_t)col_i64(res, i, 17);
	r->state.indexed = strcmp(col_text(res, i, 18), "t") == 0;
	snprintf(r->state.stream, sizeof(r->state.stream), "%s", col_text(res, i, 19));
	snprintf(r->state.db_file, sizeof(r->state.db_file), "%s", col_text(res, i, 20));
	if (r->meta.name == NULL || r->meta.description == NULL) {
		cat_rec_free(r);
		return NULL;
	}
	return r;
}

static int load_records(struct pg_lane *p, const char *since, struct catdb_batch *out, char *err, size_t errlen)
{
	char sql[512];
	const char *vals[1] = { since };
	PGresult *res;
	int i, n;

	snprintf(sql, sizeof(sql), "SELECT %s, version FROM traces WHERE version > $1 ORDER BY id", cols);
	res = pg_run(p, sql, 1, vals, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_fail(p, "reading the traces", res, err, errlen);
	n = PQntuples(res);
	if (n > 0 && (out->v = calloc((size_t)n, sizeof(*out->v))) == NULL) {
		PQclear(res);
		snprintf(err, errlen, "out of memory reading the catalog");
		return CATDB_EFAIL;
	}
	for (i = 0; i < n; i++) {
		int64_t v = col_i64(res, i, 21);

		if ((out->v[i] = rec_read(res, i)) == NULL) {
			PQclear(res);
			snprintf(err, errlen, "out of memory reading the catalog");
			return CATDB_EFAIL;
		}
		out->v[i]->sync.version = v;
		out->n++;
		if (v > out->version)
			out->version = v;
	}
	PQclear(res);
	return CATDB_OK;
}

static int load_labels(struct pg_lane *p, const char *since, struct catdb_batch *out, char *err, size_t errlen)
{
	const char *vals[1] = { since };
	PGresult *res;
	int i, n;

	res = pg_run(p,
		     "SELECT l.trace_id, l.key, l.value FROM labels l JOIN traces t ON t.id = l.trace_id "
		     "WHERE t.version > $1 ORDER BY l.trace_id, l.key COLLATE \"C\"",
		     1, vals, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_fail(p, "reading the labels", res, err, errlen);
	n = PQntuples(res);
	for (i = 0; i < n; i++) {
		struct trace_rec *r = catdb_batch_find(out, col_i64(res, i, 0));
		struct cat_label *v;

		if (r == NULL || r->meta.nlabels >= CAT_MAX_LABELS)
			continue;
		if ((v = realloc(r->meta.labels, (r->meta.nlabels + 1) * sizeof(*v))) == NULL) {
			PQclear(res);
			snprintf(err, errlen, "out of memory reading the catalog");
			return CATDB_EFAIL;
		}
		r->meta.labels = v;
		snprintf(v[r->meta.nlabels].key, sizeof(v->key), "%s", col_text(res, i, 1));
		snprintf(v[r->meta.nlabels].value, sizeof(v->value), "%s", col_text(res, i, 2));
		r->meta.nlabels++;
	}
	PQclear(res);
	return CATDB_OK;
}

static int load_gone(struct pg_lane *p, const char *since, struct catdb_batch *out, char *err, size_t errlen)
{
	const char *vals[1] = { since };
	PGresult *res;
	int i, n;

	res = pg_run(p, "SELECT trace_id, version FROM deleted WHERE version > $1 ORDER BY trace_id", 1, vals, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_fail(p, "reading the deleted traces", res, err, errlen);
	n = PQntuples(res);
	if (n > 0 && (out->gone = calloc((size_t)n, sizeof(*out->gone))) == NULL) {
		PQclear(res);
		snprintf(err, errlen, "out of memory reading the catalog");
		return CATDB_EFAIL;
	}
	for (i = 0; i < n; i++) {
		int64_t v = col_i64(res, i, 1);

		out->gone[out->ngone++] = col_i64(res, i, 0);
		if (v > out->version)
			out->version = v;
	}
	PQclear(res);
	return CATDB_OK;
}

/* The three reads see one snapshot: a record saved between them is read
 * whole or not at all. */
static int pg_load(struct catdb *d, int64_t since, struct catdb_batch *out, char *err, size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->rec;
	char s[24];
	int rc;

	memset(out, 0, sizeof(*out));
	out->version = since;
	i64_text(since, s, sizeof(s));
	if ((rc = pg_enter(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "reading the catalog", err, errlen)) !=
	    CATDB_OK)
		return rc;
	rc = load_records(p, s, out, err, errlen);
	if (rc == CATDB_OK)
		rc = load_labels(p, s, out, err, errlen);
	if (rc == CATDB_OK)
		rc = load_gone(p, s, out, err, errlen);
	return pg_leave(p, rc, "reading the catalog", err, errlen);
}

static int pg_ping(struct catdb *d, char *err, size_t errlen)
{
	struct pg_lane *p = &((struct catdb_pg *)d)->idx;
	int rc = pg_enter(p, "BEGIN READ ONLY", "a health check", err, errlen);

	return rc == CATDB_OK ? pg_leave(p, rc, "a health check", err, errlen) : rc;
}

static void pg_close(struct catdb *d)
{
	struct catdb_pg *p = (struct catdb_pg *)d;

	if (p == NULL)
		return;
	PQfinish(p->rec.conn);
	PQfinish(p->idx.conn);
	PQfinish(p->notes.conn);
	pthread_mutex_destroy(&p->rec.mu);
	pthread_mutex_destroy(&p->idx.mu);
	pthread_mutex_destroy(&p->notes.mu);
	free(p);
}

/* ---- the schema ------------------------------------------------------------- */

static int schema_version(void)
{
	const char *s = strstr(schema_catalog_pg_sql, "schema_version = ");

	return s ? atoi(s + 17) : -1;
}

/* The optional part (pg_trgm): a database without the extension works
 * without the index. Its own transaction, so its failure undoes nothing
 * else. */
static void schema_optional(struct pg_lane *p)
{
	const char *opt = strstr(schema_catalog_pg_sql, "-- optional:");
	char msg[400];
	PGresult *res = NULL;

	if (opt == NULL)
		return;
	if (pg_simple(p, "BEGIN", PGRES_COMMAND_OK, &res) != 0 || pg_simple(p, opt, PGRES_COMMAND_OK, &res) != 0) {
		pg_message(PQresultErrorMessage(res), msg, sizeof(msg));
		fprintf(stderr, "trace-server: the catalog's search runs without a trigram index (%s)\n", msg);
		PQclear(res);
		PQclear(PQexec(p->conn, "ROLLBACK"));
		return;
	}
	if (pg_simple(p, "COMMIT", PGRES_COMMAND_OK, &res) != 0)
		PQclear(res);
}

/* Reads the version the database holds; -1 on failure (*res set). */
static int schema_read(struct pg_lane *p, PGresult **out)
{
	PGresult *res = PQexec(p->conn, "SELECT coalesce(max(version), 0) FROM schema_version");
	int v;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		*out = res;
		return -1;
	}
	v = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

/* Creates or migrates the schema under a session advisory lock, so that
 * servers starting together apply it once, one after the other. */
static int schema_up(struct pg_lane *p, char *err, size_t errlen)
{
	const char *opt = strstr(schema_catalog_pg_sql, "-- optional:");
	size_t body = opt ? (size_t)(opt - schema_catalog_pg_sql) : strlen(schema_catalog_pg_sql);
	int want = schema_version(), have, rc = CATDB_OK;
	char *sql = strndup(schema_catalog_pg_sql, body), num[24];
	const char *vals[1] = { num };
	PGresult *res = NULL;

	if (sql == NULL) {
		snprintf(err, errlen, "out of memory");
		return CATDB_EFAIL;
	}
	if (pg_simple(p, LOCK_SCHEMA, PGRES_TUPLES_OK, &res) != 0) {
		free(sql);
		return pg_fail(p, "taking the schema lock", res, err, errlen);
	}
	if (pg_simple(p, "CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)", PGRES_COMMAND_OK,
		      &res) != 0 ||
	    (have = schema_read(p, &res)) < 0) {
		rc = pg_fail(p, "reading the schema version", res, err, errlen);
	} else if (have > want) {
		snprintf(err, errlen, "the catalog's database has schema version %d, newer than this server's %d: "
				      "run a newer trace-server", have, want);
		rc = CATDB_EFAIL;
	} else if (have < want) {
		i64_text(want, num, sizeof(num));
		if (pg_simple(p, "BEGIN", PGRES_COMMAND_OK, &res) != 0 || pg_simple(p, sql, PGRES_COMMAND_OK, &res) != 0 ||
		    pg_simple(p, "DELETE FROM schema_version", PGRES_COMMAND_OK, &res) != 0 ||
		    PQresultStatus(res = pg_run(p, "INSERT INTO schema_version (version) VALUES ($1)", 1, vals, 0)) !=
			    PGRES_COMMAND_OK) {
			rc = pg_fail(p, "creating the catalog's tables", res, err, errlen);
		} else {
			PQclear(res);
			res = NULL;
			if (pg_simple(p, "COMMIT", PGRES_COMMAND_OK, &res) != 0)
				rc = pg_fail(p, "creating the catalog's tables", res, err, errlen);
			else
				schema_optional(p);
		}
	}
	if (PQstatus(p->conn) == CONNECTION_OK)
		PQclear(PQexec(p->conn, UNLOCK_SCHEMA));
	free(sql);
	return rc;
}

/* The server's notices ("relation ... already exists, skipping") are
 * not for the log: errors come back with the calls that made them. */
static void pg_notice_drop(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static const struct catdb_ops pg_ops = {
	pg_load, pg_save, pg_remove, pg_next_id, pg_index, pg_unindex, pg_search, pg_ping,
	pg_job_queue, pg_job_claim, pg_job_renew, pg_job_done,
	pg_note_add, pg_note_edit, pg_note_remove, pg_note_list, pg_note_counts, pg_name_exact, pg_close,
	NULL, /* its cache is the PostgreSQL server's */
};

/*
 * The connection is made (and remade by PQreset) while the catalog's lock
 * is held, so it must not wait long for a host that does not answer: a
 * connect_timeout of CONNECT_TIMEOUT seconds unless the URL names its own
 * (values of the URL, expanded in place of dbname, override those before
 * it).
 */
struct catdb *catdb_pg_open(const char *url, char *err, size_t errlen)
{
	static const char *const keys[] = { "connect_timeout", "dbname", NULL };
	const char *vals[] = { CONNECT_TIMEOUT, url, NULL };
	struct catdb_pg *p = calloc(1, sizeof(*p));
	char msg[400];
	int i;

	if (p == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->base.ops = &pg_ops;
	pthread_mutex_init(&p->rec.mu, NULL);
	pthread_mutex_init(&p->idx.mu, NULL);
	pthread_mutex_init(&p->notes.mu, NULL);
	for (i = 0; i < 3; i++) {
		struct pg_lane *l = i == 2 ? &p->notes : i ? &p->idx : &p->rec;

		l->conn = PQconnectdbParams(keys, vals, 1);
		if (l->conn == NULL || PQstatus(l->conn) != CONNECTION_OK) {
			pg_message(l->conn ? PQerrorMessage(l->conn) : "out of memory", msg, sizeof(msg));
			snprintf(err, errlen, "cannot connect to the catalog's PostgreSQL database: %s", msg);
			pg_close(&p->base);
			return NULL;
		}
		PQsetNoticeProcessor(l->conn, pg_notice_drop, NULL);
	}
	if (schema_up(&p->rec, msg, sizeof(msg)) != CATDB_OK) {
		snprintf(err, errlen, "%s", msg);
		pg_close(&p->base);
		return NULL;
	}
	return &p->base;
}
