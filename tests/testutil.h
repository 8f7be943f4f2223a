/*
 * Helpers shared by the unit tests: ingest an in-memory archive written by
 * the test writer into a temporary database and read values back with SQL.
 * Header-only so each test program stays one file plus the writer.
 */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "../ingest/ingest.h"
#include "fxt_writer.h"

struct tdb {
	sqlite3 *db;
	struct ingest_result res;
	int rc;                 /* ingest_file's return */
	char fxt[64], path[80]; /* temporary files */
};

/* Writes bytes to a temporary file and ingests it with opts (may be NULL);
 * t->rc holds the result. */
static inline void tdb_ingest_opts(struct tdb *t, const void *p, size_t n, const struct ingest_opts *opts)
{
	FILE *f;
	int fd;

	memset(t, 0, sizeof(*t));
	snprintf(t->fxt, sizeof(t->fxt), "/tmp/ts-test-XXXXXX");
	fd = mkstemp(t->fxt);
	assert_true(fd >= 0);
	f = fdopen(fd, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
	snprintf(t->path, sizeof(t->path), "%s.db", t->fxt);
	t->rc = ingest_file(t->fxt, t->path, opts, &t->res);
	if (t->rc == INGEST_OK)
		assert_int_equal(sqlite3_open_v2(t->path, &t->db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
}

static inline void tdb_ingest_bytes(struct tdb *t, const void *p, size_t n)
{
	tdb_ingest_opts(t, p, n, NULL);
}

static inline void tdb_ingest(struct tdb *t, const struct fxtw *w)
{
	tdb_ingest_bytes(t, w->buf, w->len);
}

static inline void tdb_close(struct tdb *t)
{
	if (t->db)
		sqlite3_close(t->db);
	t->db = NULL;
	remove(t->fxt);
	remove(t->path);
}

/* Runs a query that yields one integer (NULL reads as INT64_MIN). */
static inline int64_t tdb_int(struct tdb *t, const char *fmt, ...)
{
	char sql[2048];
	sqlite3_stmt *st;
	va_list ap;
	int64_t v = INT64_MIN;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("bad SQL: %s: %s", sql, sqlite3_errmsg(t->db));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Runs a query and renders every row as "a|b|c" lines joined by '\n'. */
static inline char *tdb_rows(struct tdb *t, const char *fmt, ...)
{
	static char out[65536];
	char sql[2048];
	sqlite3_stmt *st;
	size_t n = 0;
	va_list ap;
	int i;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	out[0] = '\0';
	if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("bad SQL: %s: %s", sql, sqlite3_errmsg(t->db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (i = 0; i < sqlite3_column_count(st) && n < sizeof(out) - 64; i++) {
			const unsigned char *s = sqlite3_column_text(st, i);

			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", i ? "|" : (n ? "\n" : ""),
					      s ? (const char *)s : "NULL");
		}
	}
	sqlite3_finalize(st);
	return out;
}

/* The value of a named diagnostic counter. */
static inline int64_t tdb_diag(struct tdb *t, const char *name)
{
	return tdb_int(t, "SELECT value FROM diagnostics WHERE name = '%s'", name);
}

#endif
