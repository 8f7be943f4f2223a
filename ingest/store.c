/*
 * Storage: bulk loading into one SQLite database per trace.
 *
 * Rows are buffered and inserted 64 at a time through one prepared
 * multi-row INSERT (the fastest way SQLite loads, see PERFORMANCE.md), in
 * one transaction, with journaling off: the file is private until ingest
 * renames it into place, so a crash only ever loses a temporary file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

extern const char schema_trace_sql[];

static int store_exec(struct store *s, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		snprintf(s->error, sizeof(s->error), "%s", msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int store_open(struct store *s, const char *path)
{
	memset(s, 0, sizeof(*s));
	remove(path);
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(s->error, sizeof(s->error), "cannot create %s: %s", path,
			 s->db ? sqlite3_errmsg(s->db) : "out of memory");
		return -1;
	}
	if (store_exec(s, "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
			  "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-8192; PRAGMA temp_store=MEMORY;") != 0 ||
	    store_exec(s, schema_trace_sql) != 0 || store_exec(s, "BEGIN") != 0)
		return -1;
	return 0;
}

int store_commit(struct store *s)
{
	return store_exec(s, "COMMIT");
}

int store_index(struct store *s)
{
	return store_exec(s, "CREATE INDEX flows_from ON flows(from_slice_id);"
			     "CREATE INDEX flows_to ON flows(to_slice_id);"
			     "CREATE INDEX flows_from_ts ON flows(from_ts);"
			     "CREATE INDEX flows_to_ts ON flows(to_ts);"
			     "CREATE INDEX userspace_objects_ptr ON userspace_objects(pid, pointer);");
}

void store_close(struct store *s)
{
	if (s->db) {
		sqlite3_close(s->db);
		s->db = NULL;
	}
}

int store_meta(struct store *s, const char *key, const char *text, int64_t num)
{
	struct bins b;

	if (bins_init(&b, s, "meta", 2) != 0)
		return -1;
	bins_text(&b, key, -1);
	if (text)
		bins_text(&b, text, -1);
	else
		bins_i64(&b, num);
	bins_row(&b);
	return bins_fini(&b);
}

static sqlite3_stmt *bins_prepare(struct bins *b, const char *table, int rows)
{
	char sql[16384];
	size_t n;
	int r, c;
	sqlite3_stmt *st = NULL;

	n = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES ", table);
	for (r = 0; r < rows && n < sizeof(sql) - 8; r++) {
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s(", r ? "," : "");
		for (c = 0; c < b->ncols && n < sizeof(sql) - 8; c++)
			n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s?", c ? "," : "");
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ")");
	}
	if (n >= sizeof(sql) - 8 || sqlite3_prepare_v2(b->s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(b->s->error, sizeof(b->s->error), "prepare %s: %s", table, sqlite3_errmsg(b->s->db));
		return NULL;
	}
	return st;
}

int bins_init(struct bins *b, struct store *s, const char *table, int ncols)
{
	memset(b, 0, sizeof(*b));
	b->s = s;
	b->ncols = ncols;
	if (ncols > BINS_MAX_COLS) {
		snprintf(s->error, sizeof(s->error), "too many columns for %s", table);
		return -1;
	}
	b->multi = bins_prepare(b, table, BINS_ROWS);
	b->one = bins_prepare(b, table, 1);
	if (b->multi == NULL || b->one == NULL) {
		sqlite3_finalize(b->multi);
		sqlite3_finalize(b->one);
		b->multi = b->one = NULL;
		return -1;
	}
	return 0;
}

static struct bins_val *bins_next(struct bins *b)
{
	if (b->col >= b->ncols) /* more values than columns: a programmer error */
		b->col = b->ncols - 1;
	return &b->vals[b->rows * b->ncols + b->col++];
}

void bins_i64(struct bins *b, int64_t v)
{
	struct bins_val *x = bins_next(b);

	x->type = SQLITE_INTEGER;
	x->i = v;
}

void bins_dbl(struct bins *b, double v)
{
	struct bins_val *x = bins_next(b);

	x->type = SQLITE_FLOAT;
	x->d = v;
}

void bins_null(struct bins *b)
{
	bins_next(b)->type = SQLITE_NULL;
}

void bins_text(struct bins *b, const char *p, int n)
{
	struct bins_val *x = bins_next(b);

	x->type = SQLITE_TEXT;
	x->p = p;
	x->n = n;
}

void bins_blob(struct bins *b, const void *p, int n)
{
	struct bins_val *x = bins_next(b);

	x->type = SQLITE_BLOB;
	x->p = p;
	x->n = n;
}

static void bins_bind(sqlite3_stmt *st, int idx, const struct bins_val *x)
{
	switch (x->type) {
	case SQLITE_INTEGER:
		sqlite3_bind_int64(st, idx, x->i);
		break;
	case SQLITE_FLOAT:
		sqlite3_bind_double(st, idx, x->d);
		break;
	case SQLITE_TEXT:
		sqlite3_bind_text(st, idx, x->p, x->n, SQLITE_STATIC);
		break;
	case SQLITE_BLOB:
		sqlite3_bind_blob(st, idx, x->p, x->n, SQLITE_STATIC);
		break;
	default:
		sqlite3_bind_null(st, idx);
	}
}

static int bins_step(struct bins *b, sqlite3_stmt *st, int first_row, int rows)
{
	int i, n = rows * b->ncols;

	for (i = 0; i < n; i++)
		bins_bind(st, i + 1, &b->vals[first_row * b->ncols + i]);
	if (sqlite3_step(st) != SQLITE_DONE) {
		snprintf(b->s->error, sizeof(b->s->error), "insert: %s", sqlite3_errmsg(b->s->db));
		b->failed = 1;
	}
	sqlite3_reset(st);
	return b->failed ? -1 : 0;
}

int bins_row(struct bins *b)
{
	b->col = 0;
	if (++b->rows < BINS_ROWS)
		return b->failed ? -1 : 0;
	b->rows = 0;
	if (b->failed)
		return -1;
	return bins_step(b, b->multi, 0, BINS_ROWS);
}

int bins_fini(struct bins *b)
{
	int i;

	for (i = 0; i < b->rows && !b->failed; i++)
		bins_step(b, b->one, i, 1);
	b->rows = 0;
	sqlite3_finalize(b->multi);
	sqlite3_finalize(b->one);
	b->multi = b->one = NULL;
	return b->failed ? -1 : 0;
}
