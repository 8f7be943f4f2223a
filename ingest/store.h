/*
 * Storage internals of the ingest module: a database being loaded and a
 * batched inserter. Only ingest/ uses this header.
 */
#ifndef INGEST_STORE_H
#define INGEST_STORE_H

#include <sqlite3.h>
#include <stdint.h>

struct store {
	sqlite3 *db;
	char error[512]; /* the last failure, a sentence for the log */
};

enum { BINS_ROWS = 64, BINS_MAX_COLS = 16 };

struct bins_val {
	int type;      /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL */
	int n;         /* text or blob bytes; -1 for a NUL-terminated text */
	int64_t i;
	double d;
	const void *p; /* text or blob; must stay valid until the row is flushed (bins_fini) */
};

/* A multi-row INSERT into one table: values are bound column by column,
 * bins_row() ends a row, and every BINS_ROWS rows go to SQLite at once. */
struct bins {
	struct store *s;
	sqlite3_stmt *multi; /* BINS_ROWS rows */
	sqlite3_stmt *one;   /* one row, for the rest at the end */
	int ncols;
	int rows;            /* complete rows buffered */
	int col;             /* next column of the current row */
	int failed;          /* sticky; the reason is in s->error */
	struct bins_val vals[BINS_ROWS * BINS_MAX_COLS];
};

/* Creates the file (replacing one there), the schema, and opens a transaction. */
int store_open(struct store *s, const char *path);
int store_commit(struct store *s);
int store_index(struct store *s);
void store_close(struct store *s);
int store_meta(struct store *s, const char *key, const char *text, int64_t num);

int bins_init(struct bins *b, struct store *s, const char *table, int ncols);
void bins_i64(struct bins *b, int64_t v);
void bins_dbl(struct bins *b, double v);
void bins_null(struct bins *b);
void bins_text(struct bins *b, const char *p, int n);
void bins_blob(struct bins *b, const void *p, int n);
/* Ends a row; returns -1 once an insert has failed. */
int bins_row(struct bins *b);
/* Flushes the remaining rows and finalizes; returns -1 if any insert failed. */
int bins_fini(struct bins *b);

#endif
