/*
 * The read cursor (cursor.h): what of it is not inline.
 */
#include "cursor.h"

int qcur_open(struct qcur *c, sqlite3 *db, const char *sql, struct qry_error *err)
{
	c->st = NULL;
	c->err = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &c->st, NULL) != SQLITE_OK) {
		c->st = NULL; /* sqlite3_prepare_v2 leaves none on an error */
		c->err = sqlite3_errcode(db);
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errmsg(db));
	}
	return QRY_OK;
}

int qcur_close(struct qcur *c, int first)
{
	sqlite3_finalize(c->st);
	c->st = NULL;
	return first ? first : c->err;
}

const char *qcur_text(struct qcur *c, int col)
{
	const unsigned char *s = sqlite3_column_text(c->st, col);

	if (s != NULL)
		return (const char *)s;
	if (sqlite3_column_type(c->st, col) != SQLITE_NULL)
		qcur_fail(c, SQLITE_NOMEM);
	return "";
}

const void *qcur_blob(struct qcur *c, int col, int *len)
{
	const void *p = sqlite3_column_blob(c->st, col);

	/* NULL for NULL, an empty blob, or a value SQLite could not convert,
	 * which only the connection's error code tells apart (sqlite3.h,
	 * sqlite3_column_blob) */
	if (p == NULL && sqlite3_errcode(sqlite3_db_handle(c->st)) == SQLITE_NOMEM) {
		qcur_fail(c, SQLITE_NOMEM);
		*len = 0;
		return NULL;
	}
	*len = sqlite3_column_bytes(c->st, col);
	return p;
}

void qcur_put(struct qcur *c, struct jbuf *out, int col)
{
	if (sqlite3_column_type(c->st, col) == SQLITE_TEXT && sqlite3_column_text(c->st, col) == NULL) {
		qcur_fail(c, SQLITE_NOMEM);
		jb_null(out);
		return;
	}
	jb_column(out, c->st, col);
}

int qcur_done(int rc, int failed, struct qry_error *err)
{
	if (rc == QRY_OK && failed)
		return qry_fail(err, QRY_EDB, "the trace database cannot be read: %s", sqlite3_errstr(failed));
	return rc;
}
