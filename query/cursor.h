/*
 * The read cursor every endpoint of query/ reads rows through: one
 * prepared statement and the first error that any bind, step or column
 * read on it met.
 *
 * The error is sticky, as in the bounded reader of the style notes: after
 * the first failure qcur_step returns 0 without stepping again, so a loop
 * ends just as it does at the last row, and the caller checks once, when
 * it closes its cursors (qcur_close folds their errors), whether what it
 * read was all there was. A busy or damaged database thus answers an error
 * and never a short list. Nothing here is kept per thread: a request's
 * cursors are its own.
 *
 * Every read of query/ steps its statement here (qcur_step), and only
 * here, but for the caller's own statement of POST /query (sql.c), whose
 * failure is the caller's to see, not the database's.
 */
#ifndef QUERY_CURSOR_H
#define QUERY_CURSOR_H

#include <sqlite3.h>
#include <stdint.h>

#include "query_internal.h"

struct qcur {
	sqlite3_stmt *st; /* NULL until qcur_open succeeds and after qcur_close */
	int err;          /* SQLite result code of the first failure, 0 while none; once set, never cleared */
};

/*
 * Prepares sql on db into c. QRY_OK, or QRY_EDB with err filled (the
 * database's message) and c->st NULL. qcur_close is safe either way.
 */
int qcur_open(struct qcur *c, sqlite3 *db, const char *sql, struct qry_error *err);

/* Finalizes c's statement. Returns first when it is non-zero, else c's
 * error (0 when c never failed): close a request's cursors in a chain,
 * failed = qcur_close(&a, failed), and report the result once. */
int qcur_close(struct qcur *c, int first);

/* Remembers code as c's error unless one is already there. */
static inline void qcur_fail(struct qcur *c, int code)
{
	if (c->err == 0)
		c->err = code;
}

/* 1 with a row; 0 at the end, on an error (remembered), or after one. */
static inline int qcur_step(struct qcur *c)
{
	int rc;

	if (c->err)
		return 0;
	rc = sqlite3_step(c->st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc != SQLITE_DONE)
		c->err = rc;
	return 0;
}

/* For a lookup whose row must be there (an id another table gave, an
 * aggregate): 1 with the row; 0 on an error, or when there is no row,
 * which is remembered as SQLITE_CORRUPT (the database contradicts itself). */
static inline int qcur_step_required(struct qcur *c)
{
	if (qcur_step(c))
		return 1;
	qcur_fail(c, SQLITE_CORRUPT);
	return 0;
}

/* Binds parameter i (from 1); a failure is remembered. */
static inline void qcur_bind(struct qcur *c, int i, int64_t v)
{
	int rc = sqlite3_bind_int64(c->st, i, v);

	if (rc != SQLITE_OK)
		qcur_fail(c, rc);
}

/* Binds text s (copied; NULL binds NULL) to parameter i; a failure is
 * remembered. */
static inline void qcur_bind_text(struct qcur *c, int i, const char *s)
{
	int rc = sqlite3_bind_text(c->st, i, s, -1, SQLITE_TRANSIENT);

	if (rc != SQLITE_OK)
		qcur_fail(c, rc);
}

/* Makes c ready to step again from its first row, keeping its bindings
 * and its error. */
static inline void qcur_reset(struct qcur *c)
{
	sqlite3_reset(c->st);
}

static inline int64_t qcur_int(struct qcur *c, int col)
{
	return sqlite3_column_int64(c->st, col);
}

static inline int qcur_is_null(struct qcur *c, int col)
{
	return sqlite3_column_type(c->st, col) == SQLITE_NULL;
}

/* A text column: "" for NULL; a text SQLite could not hand over (out of
 * memory) is remembered as an error and reads as "". Valid until the
 * cursor steps or resets. */
const char *qcur_text(struct qcur *c, int col);

/* A blob column and its size in *len: NULL with *len 0 for NULL or an
 * empty blob; a blob SQLite could not hand over (out of memory) is
 * remembered as an error and reads as empty. Valid until the cursor steps
 * or resets. */
const void *qcur_blob(struct qcur *c, int col, int *len);

/* Writes column col as JSON (jb_column), remembering a value SQLite could
 * not hand over. */
void qcur_put(struct qcur *c, struct jbuf *out, int col);

/* The reply of an endpoint that read through cursors: rc when it already
 * failed, QRY_EDB with the first cursor error (failed, a qcur_close chain)
 * when one was met, else QRY_OK. */
int qcur_done(int rc, int failed, struct qry_error *err);

#endif
