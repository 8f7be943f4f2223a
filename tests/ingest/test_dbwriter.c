/*
 * Unit tests for the database writer (ingest/dbwriter.c): rows go in 64 at
 * a time and one at a time, and a row SQLite refuses (an id already there,
 * a NULL in a NOT NULL column) fails the writer with a sentence, in the
 * batch's writer (journaling off: the INSERT aborts) and in a growing
 * trace's (WAL mode: the INSERT ignores the row, and the writer counts the
 * rows each step inserted). Nothing refused is ever a short success. A
 * growing trace's writer copies what its rows point at.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../ingest/dbwriter.h"
#include "../../tracedb/tracedb.h"

enum { PAGE = 16384 };

/* A writer on a fresh temporary file: growing (WAL mode) or the batch's. */
static void open_writer(struct dbwriter *s, char *path, int growing)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	if (growing)
		assert_int_equal(dbw_open_growing(s, path, PAGE), 0);
	else
		assert_int_equal(dbw_open(s, path, PAGE), 0);
}

static int64_t count_rows(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t n = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* The database, WAL mode's files beside it, and its stage. */
static void remove_db(const char *path)
{
	char stage[4200];

	tracedb_remove(path);
	snprintf(stage, sizeof(stage), "%s-stage", path);
	unlink(stage);
}

/* n strings, ids from first, through bins: full batches of 64 and the rest
 * one at a time. */
static void put_strings(struct bins *b, int64_t first, int n)
{
	char text[32];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(text, sizeof(text), "s%lld", (long long)(first + i));
		bins_i64(b, first + i);
		bins_text(b, text, -1);
		bins_row(b);
	}
}

static void rows_go_in(int growing)
{
	char path[] = "/tmp/test_dbwriter_XXXXXX";
	struct dbwriter s;
	struct bins b;

	open_writer(&s, path, growing);
	assert_int_equal(bins_init(&b, &s, "strings", 2), 0);
	put_strings(&b, 1, 64 * 3 + 5); /* three full inserts, five single ones */
	assert_int_equal(bins_fini(&b), 0);
	assert_int_equal(dbw_commit(&s), 0);
	dbw_close(&s);
	assert_int_equal(count_rows(path, "SELECT count(*) FROM strings"), 64 * 3 + 5);
	assert_int_equal(count_rows(path, "SELECT sum(id) FROM strings"), (64 * 3 + 5) * (64 * 3 + 6) / 2);
	remove_db(path);
}

static void t_rows_growing(void **state)
{
	(void)state;
	rows_go_in(1);
}

static void t_rows_batch(void **state)
{
	(void)state;
	rows_go_in(0);
}

/* A row refused inside a full insert of 64 (dup: an id already there;
 * else a NULL text), or as one of the rest: the writer fails, says why,
 * and every later call says so. */
static void refused(int growing, int dup, int in_full)
{
	char path[] = "/tmp/test_dbwriter_XXXXXX";
	struct dbwriter s;
	struct bins b;
	int i;

	open_writer(&s, path, growing);
	assert_int_equal(bins_init(&b, &s, "strings", 2), 0);
	put_strings(&b, 1, 10);
	assert_int_equal(bins_flush(&b), 0); /* ten single rows */
	assert_int_equal(dbw_drain(&s), 0);
	for (i = 0; i < (in_full ? 64 : 3); i++) {
		if (i == 1 && dup) {
			bins_i64(&b, 5); /* taken */
			bins_text(&b, "again", -1);
		} else if (i == 1) {
			bins_i64(&b, 1000 + i);
			bins_null(&b); /* strings.str is NOT NULL */
		} else {
			bins_i64(&b, 1000 + i);
			bins_text(&b, "fine", -1);
		}
		bins_row(&b);
	}
	bins_fini(&b); /* queued: the writer finds the refusal later */
	assert_int_equal(dbw_drain(&s), -1);
	assert_true(dbw_failed(&s));
	if (growing)
		assert_non_null(strstr(s.error, "refused"));
	else
		assert_non_null(strstr(s.error, dup ? "UNIQUE" : "NOT NULL"));
	dbw_close(&s);
	remove_db(path);
}

static void t_refused_growing(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) /* a taken id or a NULL, in a full insert or a single one */
		refused(1, k & 1, k >> 1);
}

static void t_refused_batch(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) /* a taken id or a NULL, in a full insert or a single one */
		refused(0, k & 1, k >> 1);
}

/* A growing trace's writer copies the texts and blobs it is given: the
 * caller's memory may change as soon as the rows are handed on (a commit
 * does not wait for them), here before the writer ran them (an idle
 * writer is woken by a few jobs or a wait, not by one job). */
static void t_copies_growing(void **state)
{
	char path[] = "/tmp/test_dbwriter_XXXXXX";
	struct dbwriter s;
	struct bins b;
	char *text = strdup("moved-away"), blob[4] = { 1, 2, 3, 4 };
	sqlite3 *db;
	sqlite3_stmt *st;

	(void)state;
	assert_non_null(text);
	open_writer(&s, path, 1);
	assert_int_equal(bins_init(&b, &s, "strings", 2), 0);
	bins_i64(&b, 1);
	bins_text(&b, text, -1);
	bins_row(&b);
	assert_int_equal(bins_flush(&b), 0);
	assert_int_equal(bins_fini(&b), 0);
	assert_int_equal(bins_init(&b, &s, "meta", 2), 0);
	bins_text(&b, "key", 3);
	bins_blob(&b, blob, 4);
	bins_row(&b);
	assert_int_equal(bins_fini(&b), 0);
	memset(text, 'x', strlen(text)); /* before the writer ran the rows */
	free(text);
	memset(blob, 9, sizeof(blob));
	assert_int_equal(dbw_commit(&s), 0);
	dbw_close(&s);

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT str FROM strings WHERE id = 1", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "moved-away");
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'key'", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_bytes(st, 0), 4);
	assert_memory_equal(sqlite3_column_blob(st, 0), "\1\2\3\4", 4);
	sqlite3_finalize(st);
	sqlite3_close(db);
	remove_db(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_rows_growing),
		cmocka_unit_test(t_rows_batch),
		cmocka_unit_test(t_refused_growing),
		cmocka_unit_test(t_refused_batch),
		cmocka_unit_test(t_copies_growing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
