/*
 * The catalog in catalog.db (schema/catalog.sql), the default: one SQLite
 * file under --data, written by this server alone.
 *
 * Two connections, each under a lock of its own: one for the records
 * (write_mu), and a reader for searches, notes and health checks
 * (read_mu), so that a search never waits for ingest's writes. The name
 * index is written through a connection of its own, opened for each trace
 * (worker thread, not under the catalog's lock). There is no other
 * writer: a load with a version reads nothing.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../query/query.h"
#include "../tracedb/tracedb.h"
#include "catdb_sqlite.h"

extern const char schema_catalog_sql[];

int sq_fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s in the catalog failed: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
	return CATDB_EFAIL;
}

static char *dup_or_null(const unsigned char *s)
{
	return s ? strdup((const char *)s) : NULL;
}

static int exec_bound(sqlite3 *db, const char *sql, int64_t id)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return CATDB_EFAIL;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st) == SQLITE_DONE ? CATDB_OK : CATDB_EFAIL;
	sqlite3_finalize(st);
	return rc;
}

/* ---- records ---------------------------------------------------------------- */

static int save_labels(sqlite3 *db, const struct trace_rec *r)
{
	sqlite3_stmt *st;
	size_t i;
	int rc = 0;

	if (exec_bound(db, "DELETE FROM labels WHERE trace_id = ?", r->id) != 0)
		return CATDB_EFAIL;
	if (r->meta.nlabels == 0)
		return 0;
	if (sqlite3_prepare_v2(db, "INSERT INTO labels (trace_id, key, value) VALUES (?, ?, ?)", -1, &st, NULL) !=
	    SQLITE_OK)
		return CATDB_EFAIL;
	for (i = 0; i < r->meta.nlabels && rc == 0; i++) {
		sqlite3_bind_int64(st, 1, r->id);
		sqlite3_bind_text(st, 2, r->meta.labels[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, r->meta.labels[i].value, -1, SQLITE_STATIC);
		rc = sqlite3_step(st) == SQLITE_DONE ? CATDB_OK : CATDB_EFAIL;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc;
}

/* The whole record whatever part says: this server is the only writer. */
static int sq_save_held(struct catdb *d, const struct trace_rec *r, enum catdb_part part, int64_t *version, char *err,
		   size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3_stmt *st;
	int rc;

	(void)part;
	(void)version;
	if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return sq_fail(s->db, "saving a trace", err, errlen);
	if (sqlite3_prepare_v2(s->db,
			       "INSERT OR REPLACE INTO traces (id, name, format, format_hint, size_bytes, status, "
			       "error_code, error_message, created_at, start_ns, end_ns, summary, symbols_named, "
			       "symbols_error, binary_name, description, pinned, stored_bytes, indexed, stream, db_file) "
			       "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK) {
		sq_fail(s->db, "saving a trace", err, errlen);
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return CATDB_EFAIL;
	}
	sqlite3_bind_int64(st, 1, r->id);
	sqlite3_bind_text(st, 2, r->meta.name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, r->state.format[0] ? r->state.format : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, r->state.format_hint[0] ? r->state.format_hint : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)r->state.size);
	sqlite3_bind_text(st, 6, cat_status_names[r->state.status], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, r->state.error_code[0] ? r->state.error_code : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, r->state.error_msg, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, r->state.created_at, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 10, r->state.start_ns);
	sqlite3_bind_int64(st, 11, r->state.end_ns);
	sqlite3_bind_text(st, 12, r->state.summary, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 13, r->state.symbols_named);
	sqlite3_bind_text(st, 14, r->state.symbols_error, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 15, r->state.binary_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 16, r->meta.description, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 17, r->meta.pinned);
	sqlite3_bind_int64(st, 18, (int64_t)r->state.stored);
	sqlite3_bind_int(st, 19, r->state.indexed == 1);
	sqlite3_bind_text(st, 20, r->state.stream[0] ? r->state.stream : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 21, r->state.db_file[0] ? r->state.db_file : NULL, -1, SQLITE_STATIC);
	rc = sqlite3_step(st) == SQLITE_DONE ? CATDB_OK : CATDB_EFAIL;
	sqlite3_finalize(st);
	if (rc == 0)
		rc = save_labels(s->db, r);
	if (rc != 0)
		sq_fail(s->db, "saving a trace", err, errlen);
	if (sqlite3_exec(s->db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK && rc == 0)
		rc = sq_fail(s->db, "saving a trace", err, errlen);
	return rc == 0 ? CATDB_OK : CATDB_EFAIL;
}

static int sq_remove_held(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;

	if (exec_bound(s->db, "DELETE FROM traces WHERE id = ?", id) != 0 ||
	    exec_bound(s->db, "DELETE FROM labels WHERE trace_id = ?", id) != 0 ||
	    exec_bound(s->db, "DELETE FROM name_stats WHERE trace_id = ?", id) != 0 ||
	    exec_bound(s->db, "DELETE FROM notes WHERE trace_id = ?", id) != 0)
		return sq_fail(s->db, "removing a trace", err, errlen);
	return CATDB_OK;
}

static int sq_next_id_held(struct catdb *d, int64_t *id, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	char sql[128];

	/* written before the trace is: an id given once is never given again */
	snprintf(sql, sizeof(sql), "INSERT OR REPLACE INTO sequence VALUES ('trace', %" PRId64 ")", s->next_id + 1);
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_fail(s->db, "taking a trace id", err, errlen);
	*id = s->next_id++;
	return CATDB_OK;
}

static int64_t seq_load(sqlite3 *db)
{
	sqlite3_stmt *st;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, "SELECT value FROM sequence WHERE name = 'trace'", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return v;
}

static int load_labels(sqlite3 *db, struct catdb_batch *b)
{
	sqlite3_stmt *st;
	struct trace_rec *r;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "SELECT trace_id, key, value FROM labels ORDER BY trace_id, key", -1, &st, NULL) !=
	    SQLITE_OK)
		return CATDB_EFAIL;
	while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		struct cat_label *v;

		if ((r = catdb_batch_find(b, sqlite3_column_int64(st, 0))) == NULL || r->meta.nlabels >= CAT_MAX_LABELS)
			continue;
		if ((v = realloc(r->meta.labels, (r->meta.nlabels + 1) * sizeof(*v))) == NULL) {
			rc = CATDB_EFAIL;
			break;
		}
		r->meta.labels = v;
		snprintf(v[r->meta.nlabels].key, sizeof(v->key), "%s", (const char *)sqlite3_column_text(st, 1) ?: "");
		snprintf(v[r->meta.nlabels].value, sizeof(v->value), "%s", (const char *)sqlite3_column_text(st, 2) ?: "");
		r->meta.nlabels++;
	}
	sqlite3_finalize(st);
	return rc;
}

static int batch_push(struct catdb_batch *b, struct trace_rec *r, size_t *cap)
{
	if (b->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct trace_rec **v = realloc(b->v, ncap * sizeof(*v));

		if (v == NULL)
			return CATDB_EFAIL;
		b->v = v;
		*cap = ncap;
	}
	b->v[b->n++] = r;
	return 0;
}

/* One row of traces into r; CATDB_EFAIL when out of memory. */
static int rec_read(sqlite3_stmt *st, struct trace_rec *r)
{
	r->id = sqlite3_column_int64(st, 0);
	r->meta.name = dup_or_null(sqlite3_column_text(st, 1));
	snprintf(r->state.format, sizeof(r->state.format), "%s", (const char *)sqlite3_column_text(st, 2) ?: "");
	snprintf(r->state.format_hint, sizeof(r->state.format_hint), "%s", (const char *)sqlite3_column_text(st, 3) ?: "");
	r->state.size = (uint64_t)sqlite3_column_int64(st, 4);
	r->state.status = cat_status_parse((const char *)sqlite3_column_text(st, 5));
	snprintf(r->state.error_code, sizeof(r->state.error_code), "%s", (const char *)sqlite3_column_text(st, 6) ?: "");
	r->state.error_msg = dup_or_null(sqlite3_column_text(st, 7));
	snprintf(r->state.created_at, sizeof(r->state.created_at), "%s", (const char *)sqlite3_column_text(st, 8) ?: "");
	r->state.created = cat_rfc3339_parse(r->state.created_at);
	r->state.start_ns = sqlite3_column_int64(st, 9);
	r->state.end_ns = sqlite3_column_int64(st, 10);
	r->state.summary = dup_or_null(sqlite3_column_text(st, 11));
	r->state.symbols_named = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 12);
	r->state.symbols_error = dup_or_null(sqlite3_column_text(st, 13));
	r->state.binary_name = dup_or_null(sqlite3_column_text(st, 14));
	r->meta.description = dup_or_null(sqlite3_column_text(st, 15));
	r->meta.pinned = sqlite3_column_int(st, 16) != 0;
	r->state.stored = (uint64_t)sqlite3_column_int64(st, 17);
	r->state.indexed = sqlite3_column_int(st, 18) != 0;
	snprintf(r->state.stream, sizeof(r->state.stream), "%s", (const char *)sqlite3_column_text(st, 19) ?: "");
	snprintf(r->state.db_file, sizeof(r->state.db_file), "%s", (const char *)sqlite3_column_text(st, 20) ?: "");
	if (r->meta.name == NULL)
		r->meta.name = strdup("");
	if (r->meta.description == NULL)
		r->meta.description = strdup("");
	return r->meta.name && r->meta.description ? CATDB_OK : CATDB_EFAIL;
}

static int sq_load_held(struct catdb *d, int64_t since, struct catdb_batch *out, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3_stmt *st;
	size_t cap = 0;
	int64_t seq;

	memset(out, 0, sizeof(*out));
	if (since > 0)
		return CATDB_OK; /* no other writer: nothing changed behind our back */
	if (sqlite3_prepare_v2(s->db,
			       "SELECT id, name, format, format_hint, size_bytes, status, error_code, error_message, "
			       "created_at, start_ns, end_ns, summary, symbols_named, symbols_error, binary_name, "
			       "description, pinned, stored_bytes, indexed, stream, db_file FROM traces ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return sq_fail(s->db, "reading the traces", err, errlen);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct trace_rec *r = calloc(1, sizeof(*r));

		if (r == NULL || batch_push(out, r, &cap) != 0) {
			cat_rec_free(r);
			sqlite3_finalize(st);
			snprintf(err, errlen, "out of memory reading the catalog");
			return CATDB_EFAIL;
		}
		if (rec_read(st, r) != 0) {
			sqlite3_finalize(st);
			snprintf(err, errlen, "out of memory reading the catalog");
			return CATDB_EFAIL;
		}
		if (r->id >= s->next_id)
			s->next_id = r->id + 1;
	}
	sqlite3_finalize(st);
	if (load_labels(s->db, out) != 0)
		return sq_fail(s->db, "reading the labels", err, errlen);
	seq = seq_load(s->db);
	if (seq > s->next_id)
		s->next_id = seq;
	out->version = 1; /* anything above 0: later loads ask only for changes */
	return CATDB_OK;
}

/* ---- the name index ------------------------------------------------------- */

struct copy {
	sqlite3_stmt *ins_name, *get_name, *ins;
	int64_t trace;
};

/* One name's statistics into the catalog (a row of names, one of name_stats). */
static int copy_one(void *ctx, const struct qry_name_stat *n)
{
	struct copy *k = ctx;
	int ok;

	sqlite3_bind_text(k->ins_name, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(k->get_name, 1, n->name, -1, SQLITE_STATIC);
	if (sqlite3_step(k->ins_name) != SQLITE_DONE || sqlite3_step(k->get_name) != SQLITE_ROW) {
		sqlite3_reset(k->ins_name);
		sqlite3_reset(k->get_name);
		return CATDB_EFAIL;
	}
	sqlite3_bind_int64(k->ins, 1, sqlite3_column_int64(k->get_name, 0));
	sqlite3_reset(k->ins_name);
	sqlite3_reset(k->get_name);
	sqlite3_bind_int64(k->ins, 2, k->trace);
	sqlite3_bind_int64(k->ins, 3, n->count);
	sqlite3_bind_int64(k->ins, 4, n->ended);
	sqlite3_bind_int64(k->ins, 5, n->total_ns);
	sqlite3_bind_int64(k->ins, 6, n->max_ns);
	/* a name whose slices all never ended has an empty sketch, which SQLite
	 * reads back as NULL: bound as NULL it would break sketch's NOT NULL
	 * and leave the whole trace out of the index */
	if (n->sketch_len == 0)
		sqlite3_bind_zeroblob(k->ins, 7, 0);
	else
		sqlite3_bind_blob(k->ins, 7, n->sketch, (int)n->sketch_len, SQLITE_STATIC);
	/* strings are distinct (ingest interns them): one row per name */
	ok = sqlite3_step(k->ins) == SQLITE_DONE;
	sqlite3_reset(k->ins);
	return ok ? CATDB_OK : CATDB_EFAIL;
}

/* Copies the trace's name statistics (qry_name_stats) into the catalog,
 * in one transaction. */
static int write_rows(sqlite3 *cat, sqlite3 *db, int64_t trace)
{
	struct copy k = { NULL, NULL, NULL, trace };
	struct qry_error err = { 0 };
	sqlite3_stmt *del = NULL;
	int rc = CATDB_EFAIL;

	if (sqlite3_exec(cat, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return CATDB_EFAIL;
	if (sqlite3_prepare_v2(cat, "INSERT OR IGNORE INTO names (name) VALUES (?)", -1, &k.ins_name, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(cat, "SELECT id FROM names WHERE name = ?", -1, &k.get_name, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(cat, "DELETE FROM name_stats WHERE trace_id = ?", -1, &del, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(cat,
			       "INSERT INTO name_stats (name_id, trace_id, count, ended, total_ns, max_ns, sketch) "
			       "VALUES (?, ?, ?, ?, ?, ?, ?)",
			       -1, &k.ins, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(del, 1, trace);
	if (sqlite3_step(del) != SQLITE_DONE)
		goto out;
	rc = qry_name_stats(db, copy_one, &k, &err) == QRY_OK ? CATDB_OK : CATDB_EFAIL;
out:
	sqlite3_finalize(k.ins_name);
	sqlite3_finalize(k.get_name);
	sqlite3_finalize(k.ins);
	sqlite3_finalize(del);
	if (sqlite3_exec(cat, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		rc = CATDB_EFAIL;
	return rc;
}

static int sq_index(struct catdb *d, int64_t id, const char *db_path, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3 *db = NULL, *cat = NULL;
	const char *why = "cannot open";
	int rc = CATDB_EFAIL;

	if ((db = tracedb_open_readonly(db_path, &why)) != NULL &&
	    sqlite3_open_v2(s->path, &cat, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(cat, 10000);
		rc = write_rows(cat, db, id) == 0 ? CATDB_OK : CATDB_EFAIL;
	}
	if (rc != CATDB_OK)
		snprintf(err, errlen, "%s", db == NULL ? why : cat ? sqlite3_errmsg(cat) : "cannot open");
	sqlite3_close(db);
	sqlite3_close(cat);
	return rc;
}

static int sq_unindex_held(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;

	if (exec_bound(s->db, "DELETE FROM name_stats WHERE trace_id = ?", id) != 0)
		return sq_fail(s->db, "dropping a trace's name index", err, errlen);
	return CATDB_OK;
}

/* CROSS JOIN keeps names the outer loop: left to itself the planner walks
 * name_stats in trace order to spare the sort, reading every row. */
/* Rows of the name index that sql (its one parameter q) selects. */
static int name_rows(struct catdb *d, const char *sql, const char *q,
		     int (*row)(void *ctx, const struct catdb_name_row *r), void *ctx, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	struct catdb_name_row h;
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->read_mu);
	if (sqlite3_prepare_v2(s->reader, sql, -1, &st, NULL) != SQLITE_OK) {
		sq_fail(s->reader, "a search", err, errlen);
		pthread_mutex_unlock(&s->read_mu);
		return CATDB_EFAIL;
	}
	sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		h.trace = sqlite3_column_int64(st, 0);
		h.name = (const char *)sqlite3_column_text(st, 1);
		h.count = sqlite3_column_int64(st, 2);
		h.ended = sqlite3_column_int64(st, 3);
		h.total_ns = sqlite3_column_int64(st, 4);
		h.max_ns = sqlite3_column_int64(st, 5);
		h.sketch = sqlite3_column_blob(st, 6);
		h.sketch_len = (size_t)sqlite3_column_bytes(st, 6);
		if (row(ctx, &h) != 0) {
			snprintf(err, errlen, "a row of the name index is damaged or memory ran out");
			break;
		}
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		sq_fail(s->reader, "a search", err, errlen);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->read_mu);
	return rc == SQLITE_DONE ? CATDB_OK : CATDB_EFAIL;
}

static int sq_search(struct catdb *d, const char *q, int (*row)(void *ctx, const struct catdb_name_row *r), void *ctx,
		     char *err, size_t errlen)
{
	return name_rows(d,
			 "SELECT s.trace_id, n.name, s.count, s.ended, s.total_ns, s.max_ns, s.sketch "
			 "FROM names n CROSS JOIN name_stats s ON s.name_id = n.id "
			 "WHERE instr(lower(n.name), lower(?1)) > 0 ORDER BY s.trace_id, n.name",
			 q, row, ctx, err, errlen);
}

static int sq_name_exact(struct catdb *d, const char *name, int (*row)(void *ctx, const struct catdb_name_row *r),
			 void *ctx, char *err, size_t errlen)
{
	return name_rows(d,
			 "SELECT s.trace_id, n.name, s.count, s.ended, s.total_ns, s.max_ns, s.sketch "
			 "FROM names n CROSS JOIN name_stats s ON s.name_id = n.id WHERE n.name = ?1 ORDER BY s.trace_id",
			 name, row, ctx, err, errlen);
}

static int sq_ping(struct catdb *d, char *err, size_t errlen)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;
	sqlite3_stmt *st = NULL;
	int rc = CATDB_OK;

	pthread_mutex_lock(&s->read_mu);
	if (sqlite3_prepare_v2(s->reader, "SELECT count(*) FROM traces", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		snprintf(err, errlen, "catalog.db cannot be read: %s", sqlite3_errmsg(s->reader));
		rc = CATDB_EFAIL;
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->read_mu);
	return rc;
}

static void sq_close(struct catdb *d)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;

	if (s == NULL)
		return;
	sqlite3_close(s->reader);
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->read_mu);
	pthread_mutex_destroy(&s->write_mu);
	free(s->path);
	free(s);
}

/* ---- opening ---------------------------------------------------------------- */

/* Brings a catalog an older server made up to date: columns added since. */
static int upgrade(sqlite3 *db)
{
	static const char *const cols[][2] = {
		{ "format_hint", "TEXT" },
		{ "symbols_named", "INTEGER" },
		{ "symbols_error", "TEXT" },
		{ "binary_name", "TEXT" },
		{ "description", "TEXT" },
		{ "pinned", "INTEGER NOT NULL DEFAULT 0" },
		{ "stored_bytes", "INTEGER" },
		{ "indexed", "INTEGER NOT NULL DEFAULT 0" },
		{ "stream", "TEXT" },
		{ "db_file", "TEXT" },
	};
	char sql[160];
	sqlite3_stmt *st;
	size_t i;
	int found;

	for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('traces') WHERE name = ?", -1, &st, NULL) !=
		    SQLITE_OK)
			return CATDB_EFAIL;
		sqlite3_bind_text(st, 1, cols[i][0], -1, SQLITE_STATIC);
		found = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		snprintf(sql, sizeof(sql), "ALTER TABLE traces ADD COLUMN %s %s", cols[i][0], cols[i][1]);
		if (!found && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return CATDB_EFAIL;
	}
	return 0;
}

/* The version schema/catalog.sql stamps (its "PRAGMA user_version = N"). */
static int schema_version(void)
{
	const char *p = strstr(schema_catalog_sql, "user_version = ");

	return p ? atoi(p + 15) : -1;
}

/* Creates the catalog's tables, or brings an older catalog up to date; a
 * catalog of this version is only read, so that a server stopped on a
 * full disk starts again (a write there would need room). */
static int schema_up(sqlite3 *db)
{
	sqlite3_stmt *st;
	int v = -1;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return CATDB_EFAIL;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (v == schema_version() && v > 0)
		return 0;
	if (sqlite3_exec(db, schema_catalog_sql, NULL, NULL, NULL) != SQLITE_OK || upgrade(db) != 0 ||
	    sqlite3_exec(db, schema_catalog_sql, NULL, NULL, NULL) != SQLITE_OK)
		return CATDB_EFAIL;
	return 0;
}

/* The WAL and its index stay on disk when the catalog closes, so that a
 * server stopped on a full disk opens it again: it needs no new room to
 * read, only to write. */
static int persist_wal(sqlite3 *db)
{
	int on = 1;

	return sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on) == SQLITE_OK ? CATDB_OK : CATDB_EFAIL;
}

/* The records' connection, one call at a time: enter() takes write_mu,
 * leave() gives it back (the call between them is argument evaluation
 * order: enter before the call, leave after). */
static struct catdb *enter(struct catdb *d)
{
	pthread_mutex_lock(&((struct catdb_sqlite *)d)->write_mu);
	return d;
}

static int leave(struct catdb *d, int rc)
{
	pthread_mutex_unlock(&((struct catdb_sqlite *)d)->write_mu);
	return rc;
}

static int sq_save(struct catdb *d, const struct trace_rec *r, enum catdb_part part, int64_t *version, char *err,
		   size_t errlen)
{
	return leave(d, sq_save_held(enter(d), r, part, version, err, errlen));
}

static int sq_remove(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	return leave(d, sq_remove_held(enter(d), id, err, errlen));
}

static int sq_next_id(struct catdb *d, int64_t *id, char *err, size_t errlen)
{
	return leave(d, sq_next_id_held(enter(d), id, err, errlen));
}

static int sq_load(struct catdb *d, int64_t since, struct catdb_batch *out, char *err, size_t errlen)
{
	return leave(d, sq_load_held(enter(d), since, out, err, errlen));
}

static int sq_unindex(struct catdb *d, int64_t id, char *err, size_t errlen)
{
	return leave(d, sq_unindex_held(enter(d), id, err, errlen));
}

static void sq_release(struct catdb *d)
{
	struct catdb_sqlite *s = (struct catdb_sqlite *)d;

	pthread_mutex_lock(&s->write_mu);
	sqlite3_db_release_memory(s->db);
	pthread_mutex_unlock(&s->write_mu);
	pthread_mutex_lock(&s->read_mu);
	sqlite3_db_release_memory(s->reader);
	pthread_mutex_unlock(&s->read_mu);
}

static const struct catdb_ops sqlite_ops = {
	sq_load, sq_save, sq_remove, sq_next_id, sq_index, sq_unindex, sq_search, sq_ping,
	NULL, NULL, NULL, NULL, /* no shared jobs: one server, its queue in memory */
	sq_note_add, sq_note_edit, sq_note_remove, sq_note_list, sq_note_counts, sq_name_exact,
	sq_close, sq_release,
};

struct catdb *catdb_sqlite_open(const char *dir, char *err, size_t errlen)
{
	struct catdb_sqlite *s = calloc(1, sizeof(*s));
	size_t n = strlen(dir) + sizeof("/catalog.db");

	if (s == NULL || (s->path = malloc(n)) == NULL) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base.ops = &sqlite_ops;
	s->next_id = 1;
	pthread_mutex_init(&s->read_mu, NULL);
	pthread_mutex_init(&s->write_mu, NULL);
	snprintf(s->path, n, "%s/catalog.db", dir);
	if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
			    NULL) != SQLITE_OK ||
	    persist_wal(s->db) != 0 ||
	    sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, NULL) != SQLITE_OK ||
	    schema_up(s->db) != 0 ||
	    sqlite3_open_v2(s->path, &s->reader, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
	    persist_wal(s->reader) != 0) {
		snprintf(err, errlen, "cannot open the catalog %s: %s", s->path,
			 s->db ? sqlite3_errmsg(s->db) : "out of memory");
		sq_close(&s->base);
		return NULL;
	}
	sqlite3_busy_timeout(s->reader, 5000);
	sqlite3_busy_timeout(s->db, 5000);
	return &s->base;
}
