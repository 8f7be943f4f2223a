/*
 * bench_ceiling: the raw SQLite ceiling for ingest, on the rows ingest wrote.
 *
 *   bench_ceiling FROM_DB [DB [SCHEMA_SQL]]
 *
 * Reads every row of every table of FROM_DB (a database `trace-server
 * ingest` wrote) into memory, untimed, then times a minimal loader writing
 * exactly those rows, value for value, into a fresh database DB: the schema
 * SCHEMA_SQL (default schema/trace.sql, the one ingest runs), the best
 * settings PERFORMANCE.md measured (page_size 65536, journal off,
 * synchronous off, exclusive locking, no mutex, one transaction, 64-row
 * multi-row INSERTs, text and blobs bound SQLITE_STATIC, a number bound
 * again only where it changed (bindings outlive a reset), no index during
 * the load), every table in the order of its rows in FROM_DB (rowid order,
 * or key order for WITHOUT ROWID tables: the order that loads fastest), and
 * then the same indexes FROM_DB holds (ingest builds them after the load
 * too). Nothing is decoded, sorted or matched, so ingest's time over this
 * one is the share of the ceiling that ingest reaches (bench/ingest).
 *
 * The clock runs from opening DB to closing it. DB defaults to
 * $TMPDIR/bench_ceiling.PID.db and is removed at the end. Prints one line
 * "table=NAME rows=N" per table with rows, then
 * "rows=N seconds=S rows_per_s=R"; exits 1 on a SQLite or memory error, 2
 * on usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

enum {
	BATCH = 64,      /* rows per INSERT */
	MAX_COLS = 32,   /* columns of the widest table */
	MAX_TABLES = 64,
	MAX_SCHEMA = 1 << 20
};

/* One value of a row, as read from FROM_DB. */
struct cval {
	int type;       /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL */
	int n;          /* text or blob bytes */
	union {
		int64_t i;
		double d;
		const void *p; /* text or blob, in the table's byte arena */
	} v;
};

/* The rows of one table. */
struct ctable {
	char name[64];
	int ncols;
	int rowid_col;     /* the INTEGER PRIMARY KEY column, or -1 */
	size_t nrows;
	struct cval *vals; /* nrows * ncols, row by row */
	char *bytes;       /* every text and blob of the table */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Returns the tables of the schema file (what precedes its "-- @indexes"
 * mark: the indexes after it come from FROM_DB, after the load, as ingest
 * builds them) as a malloc'd string, or NULL with a message printed. */
static char *read_schema(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf, *mark;
	size_t n;

	if (f == NULL) {
		perror(path);
		return NULL;
	}
	buf = malloc(MAX_SCHEMA + 1);
	n = buf ? fread(buf, 1, MAX_SCHEMA, f) : 0;
	fclose(f);
	if (buf != NULL)
		buf[n] = '\0';
	if (buf != NULL && (mark = strstr(buf, "-- @indexes")) != NULL)
		*mark = '\0';
	return buf;
}

static int ceiling_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "bench_ceiling: %s\n", msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* Sizes the table: rows, columns and the bytes of its texts and blobs. */
static int table_size(sqlite3 *src, struct ctable *t, size_t *bytes)
{
	char sql[256];
	sqlite3_stmt *st = NULL;
	int c, rc = -1;

	snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\"", t->name);
	if (sqlite3_prepare_v2(src, sql, -1, &st, NULL) != SQLITE_OK)
		goto out;
	t->ncols = sqlite3_column_count(st);
	*bytes = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		t->nrows++;
		for (c = 0; c < t->ncols; c++)
			if (sqlite3_column_type(st, c) == SQLITE_TEXT || sqlite3_column_type(st, c) == SQLITE_BLOB)
				*bytes += (size_t)sqlite3_column_bytes(st, c) + 1;
	}
	rc = t->ncols <= MAX_COLS ? 0 : -1;
out:
	sqlite3_finalize(st);
	return rc;
}

static void read_value(sqlite3_stmt *st, int c, struct cval *x, char **arena)
{
	x->type = sqlite3_column_type(st, c);
	switch (x->type) {
	case SQLITE_INTEGER:
		x->v.i = sqlite3_column_int64(st, c);
		break;
	case SQLITE_FLOAT:
		x->v.d = sqlite3_column_double(st, c);
		break;
	case SQLITE_TEXT:
	case SQLITE_BLOB:
		x->n = sqlite3_column_bytes(st, c);
		memcpy(*arena, x->type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, c)
						      : sqlite3_column_blob(st, c),
		       (size_t)x->n);
		x->v.p = *arena;
		*arena += x->n + 1;
		break;
	}
}

/* Reads the table's rows into memory, in the order a full scan gives them. */
static int table_read(sqlite3 *src, struct ctable *t)
{
	char sql[256], *arena;
	sqlite3_stmt *st = NULL;
	size_t bytes, r = 0;
	int c, rc = -1;

	if (table_size(src, t, &bytes) != 0)
		return -1;
	t->vals = calloc(t->nrows * (size_t)t->ncols + 1, sizeof(*t->vals));
	t->bytes = arena = malloc(bytes + 1);
	snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\"", t->name);
	if (t->vals == NULL || arena == NULL || sqlite3_prepare_v2(src, sql, -1, &st, NULL) != SQLITE_OK)
		goto out;
	while (r < t->nrows && sqlite3_step(st) == SQLITE_ROW) {
		for (c = 0; c < t->ncols; c++)
			read_value(st, c, &t->vals[r * (size_t)t->ncols + (size_t)c], &arena);
		r++;
	}
	rc = r == t->nrows ? 0 : -1;
out:
	sqlite3_finalize(st);
	return rc;
}

/* The column that aliases the rowid (INTEGER PRIMARY KEY of a rowid table), or -1. */
static int rowid_column(sqlite3 *src, const char *table, const char *create)
{
	char sql[256];
	sqlite3_stmt *st = NULL;
	int col = -1, pks = 0;

	if (create == NULL || strstr(create, "WITHOUT ROWID") != NULL)
		return -1;
	snprintf(sql, sizeof(sql), "PRAGMA table_info(\"%s\")", table);
	if (sqlite3_prepare_v2(src, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (sqlite3_column_int(st, 5) == 0)
			continue;
		pks++;
		if (sqlite3_stricmp((const char *)sqlite3_column_text(st, 2), "INTEGER") == 0)
			col = sqlite3_column_int(st, 0);
	}
	sqlite3_finalize(st);
	return pks == 1 ? col : -1;
}

/* Reads every table of FROM_DB; returns the number of tables, or -1. */
static int ceiling_read(const char *path, struct ctable *t, char ***indexes)
{
	sqlite3 *src = NULL;
	sqlite3_stmt *st = NULL;
	int n = 0, ni = 0, rc = -1;

	*indexes = calloc(MAX_TABLES + 1, sizeof(char *));
	if (*indexes == NULL || sqlite3_open_v2(path, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(src, "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'index')"
				    " AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	while (sqlite3_step(st) == SQLITE_ROW && n < MAX_TABLES && ni < MAX_TABLES) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *sql = (const char *)sqlite3_column_text(st, 2);

		if (strcmp(type, "index") == 0) {
			if (sql != NULL && ((*indexes)[ni++] = strdup(sql)) == NULL)
				goto out;
			continue;
		}
		snprintf(t[n].name, sizeof(t[n].name), "%s", (const char *)sqlite3_column_text(st, 1));
		t[n].rowid_col = rowid_column(src, t[n].name, sql);
		if (table_read(src, &t[n++]) != 0)
			goto out;
	}
	rc = n;
out:
	if (rc < 0)
		fprintf(stderr, "bench_ceiling: cannot read %s: %s\n", path, src ? sqlite3_errmsg(src) : "out of memory");
	sqlite3_finalize(st);
	sqlite3_close(src);
	return rc;
}

static sqlite3_stmt *prepare_insert(sqlite3 *db, const struct ctable *t, int rows)
{
	size_t cap = (size_t)rows * ((size_t)t->ncols * 2 + 4) + 128, n;
	char *sql = malloc(cap);
	sqlite3_stmt *st = NULL;
	int r, c;

	if (sql == NULL)
		return NULL;
	n = (size_t)snprintf(sql, cap, "INSERT INTO \"%s\" VALUES ", t->name);
	for (r = 0; r < rows; r++) {
		sql[n++] = r ? ',' : ' ';
		sql[n++] = '(';
		for (c = 0; c < t->ncols; c++) {
			if (c)
				sql[n++] = ',';
			sql[n++] = '?';
		}
		sql[n++] = ')';
	}
	sql[n] = '\0';
	if (sqlite3_prepare_v2(db, sql, (int)n, &st, NULL) != SQLITE_OK)
		fprintf(stderr, "bench_ceiling: prepare %s: %s\n", t->name, sqlite3_errmsg(db));
	free(sql);
	return st;
}

static void bind_value(sqlite3_stmt *st, int idx, const struct cval *x)
{
	switch (x->type) {
	case SQLITE_INTEGER:
		sqlite3_bind_int64(st, idx, x->v.i);
		break;
	case SQLITE_FLOAT:
		sqlite3_bind_double(st, idx, x->v.d);
		break;
	case SQLITE_TEXT:
		sqlite3_bind_text(st, idx, x->v.p, x->n, SQLITE_STATIC);
		break;
	case SQLITE_BLOB:
		sqlite3_bind_blob(st, idx, x->v.p, x->n, SQLITE_STATIC);
		break;
	default:
		sqlite3_bind_null(st, idx);
	}
}

/* Whether x is bound already, where b was: the same number, or NULL. A
 * statement keeps its bindings across a reset, so ingest's writer binds
 * only what changed (ingest/dbwriter.c), and so does this loader. */
static int bound_same(const struct cval *b, const struct cval *x)
{
	if (b->type != x->type)
		return 0;
	if (x->type == SQLITE_INTEGER)
		return b->v.i == x->v.i;
	if (x->type == SQLITE_FLOAT)
		return memcmp(&b->v.d, &x->v.d, sizeof(x->v.d)) == 0;
	return x->type == SQLITE_NULL;
}

/*
 * Binds `rows` rows from vals on and runs st once; bound holds what st has
 * bound by parameter (type -1: nothing, or text and blobs, bound again).
 * A rowid one past the last one (*last) is bound as NULL: SQLite then
 * appends without looking the key up, which is what ingest does for its
 * ids from 1.
 */
static int insert_rows(sqlite3 *db, sqlite3_stmt *st, struct cval *bound, const struct ctable *t, size_t first,
		       int rows, int64_t *last)
{
	static const struct cval null = { SQLITE_NULL, 0, { 0 } };
	const struct cval *vals = &t->vals[first * (size_t)t->ncols];
	int i, rc;

	for (i = 0; i < rows * t->ncols; i++) {
		const struct cval *x = &vals[i];

		if (i % t->ncols == t->rowid_col && x->type == SQLITE_INTEGER && x->v.i == *last + 1)
			x = &null;
		if (i % t->ncols == t->rowid_col && vals[i].type == SQLITE_INTEGER)
			*last = vals[i].v.i;
		if (bound_same(&bound[i], x))
			continue;
		bind_value(st, i + 1, x);
		bound[i] = *x;
		if (x->type == SQLITE_TEXT || x->type == SQLITE_BLOB)
			bound[i].type = -1;
	}
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "bench_ceiling: insert: %s\n", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

static int table_load(sqlite3 *db, const struct ctable *t)
{
	sqlite3_stmt *multi = NULL, *one = NULL;
	struct cval *bound = calloc((size_t)(BATCH + 1) * (size_t)t->ncols, sizeof(*bound));
	int64_t last = 0; /* the last rowid inserted; an empty table appends from 1 */
	size_t r = 0, i;
	int rc = -1;

	if (t->nrows == 0 || bound == NULL) {
		free(bound);
		return t->nrows == 0 ? 0 : -1;
	}
	for (i = 0; i < (size_t)(BATCH + 1) * (size_t)t->ncols; i++)
		bound[i].type = -1; /* multi's parameters, then one's */
	if ((multi = prepare_insert(db, t, BATCH)) == NULL || (one = prepare_insert(db, t, 1)) == NULL)
		goto out_finalize;
	for (; r + BATCH <= t->nrows; r += BATCH)
		if (insert_rows(db, multi, bound, t, r, BATCH, &last) != 0)
			goto out_finalize;
	for (; r < t->nrows; r++)
		if (insert_rows(db, one, bound + (size_t)BATCH * (size_t)t->ncols, t, r, 1, &last) != 0)
			goto out_finalize;
	rc = 0;
out_finalize:
	sqlite3_finalize(multi);
	sqlite3_finalize(one);
	free(bound);
	return rc;
}

static int ceiling_run(const char *path, const char *schema, const struct ctable *t, int nt, char **indexes)
{
	sqlite3 *db = NULL;
	int i, rc = -1;

	remove(path);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "bench_ceiling: %s: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
		goto out_close;
	}
	if (ceiling_exec(db, "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
			     "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;") ||
	    ceiling_exec(db, schema) || ceiling_exec(db, "BEGIN"))
		goto out_close;
	for (i = 0; i < nt; i++)
		if (table_load(db, &t[i]) != 0)
			goto out_close;
	for (i = 0; indexes[i] != NULL; i++)
		if (ceiling_exec(db, indexes[i]) != 0)
			goto out_close;
	if (ceiling_exec(db, "COMMIT") == 0)
		rc = 0;
out_close:
	sqlite3_close(db);
	return rc;
}

int main(int argc, char **argv)
{
	static struct ctable tables[MAX_TABLES];
	char def[4096], *schema, **indexes = NULL;
	const char *path = argc > 2 ? argv[2] : def, *schema_path = argc > 3 ? argv[3] : "schema/trace.sql";
	const char *tmp = getenv("TMPDIR");
	size_t rows = 0;
	double t0, secs;
	int i, nt, rc;

	/* one thread: no memory statistics, hence no global mutex per allocation */
	sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: bench_ceiling FROM_DB [DB [SCHEMA_SQL]]\n");
		return 2;
	}
	snprintf(def, sizeof(def), "%s/bench_ceiling.%ld.db", tmp && *tmp ? tmp : "/tmp", (long)getpid());
	if ((schema = read_schema(schema_path)) == NULL || (nt = ceiling_read(argv[1], tables, &indexes)) < 0)
		return 1;
	for (i = 0; i < nt; i++) {
		rows += tables[i].nrows;
		if (tables[i].nrows)
			printf("table=%s rows=%zu\n", tables[i].name, tables[i].nrows);
	}
	t0 = now_s();
	rc = ceiling_run(path, schema, tables, nt, indexes);
	secs = now_s() - t0;
	remove(path);
	for (i = 0; i < nt; i++) {
		free(tables[i].vals);
		free(tables[i].bytes);
	}
	for (i = 0; indexes[i] != NULL; i++)
		free(indexes[i]);
	free(indexes);
	free(schema);
	if (rc != 0)
		return 1;
	printf("rows=%zu seconds=%.3f rows_per_s=%.0f\n", rows, secs, secs > 0 ? (double)rows / secs : 0);
	return 0;
}
