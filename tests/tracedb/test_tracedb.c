/*
 * Unit tests for the trace database's record codecs (tracedb/tracedb.c):
 * level-of-detail records and name index pairs come back exactly, 64-bit
 * extremes and double bits included, and bytes that end early or never
 * end a varint are refused instead of read past.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../query/query.h"
#include "../../tracedb/tracedb.h"
#include "../xorshift.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void)
{
	return xorshift64(&rng);
}

static uint64_t any_word(uint64_t prev)
{
	switch (next_rand() % 5) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
		return next_rand();
	case 3:
		return (uint64_t)INT64_MIN;
	default:
		return prev + next_rand() % 300 - 100;
	}
}

/* A row of LOD_CHUNK random records reads back record for record. */
static void test_lod_round_trip(void **state)
{
	static uint64_t rec[LOD_CHUNK][LOD_WORDS];
	static uint8_t buf[LOD_CHUNK * LOD_RECORD_MAX];
	uint64_t prev[LOD_WORDS] = { 0 }, v[LOD_WORDS] = { 0 };
	const uint8_t *p = buf;
	size_t len = 0, n;
	int i, w, round;

	(void)state;
	for (round = 0; round < 20; round++) {
		memset(prev, 0, sizeof(prev));
		len = 0;
		for (i = 0; i < LOD_CHUNK; i++) {
			for (w = 0; w < LOD_WORDS; w++)
				rec[i][w] = any_word(i ? rec[i - 1][w] : 0);
			n = tracedb_lod_put(buf + len, prev, rec[i]);
			assert_true(n >= LOD_WORDS && n <= LOD_RECORD_MAX);
			len += n;
		}
		p = buf;
		memset(v, 0, sizeof(v));
		for (i = 0; i < LOD_CHUNK; i++) {
			assert_int_equal(tracedb_lod_next(&p, buf + len, v), 0);
			assert_memory_equal(v, rec[i], sizeof(v));
		}
		assert_ptr_equal(p, buf + len);
	}
}

/* Neighbouring records of a run take far fewer bytes than fixed words. */
static void test_lod_small(void **state)
{
	uint64_t prev[LOD_WORDS] = { 0 }, v[LOD_WORDS] = { 0 };
	uint8_t buf[LOD_RECORD_MAX];
	size_t total = 0;
	int i;

	(void)state;
	for (i = 0; i < 100; i++) {
		v[LODW_BUCKET] = 1000 + (uint64_t)i;
		v[LODW_FIRST] = 5000 + 3 * (uint64_t)i;
		v[LODW_LAST] = v[LODW_FIRST] + 2;
		v[LODW_START] = (1000 + (uint64_t)i) << 10;
		v[LODW_END] = v[LODW_START] + 900;
		total += tracedb_lod_put(buf, prev, v);
	}
	assert_true(total < 100 * 16);
}

/* A record cut short, or a varint that never ends, is refused. */
static void test_lod_damaged(void **state)
{
	uint64_t prev[LOD_WORDS] = { 0 }, v[LOD_WORDS] = { 0 }, w[LOD_WORDS];
	uint8_t buf[LOD_RECORD_MAX], ones[LOD_RECORD_MAX];
	const uint8_t *p;
	size_t n;

	(void)state;
	memset(v, 0xab, sizeof(v));
	n = tracedb_lod_put(buf, prev, v);
	memset(w, 0, sizeof(w));
	p = buf;
	assert_int_equal(tracedb_lod_next(&p, buf + n - 1, w), -1);
	assert_true(p <= buf + n - 1);
	memset(ones, 0xff, sizeof(ones));
	p = ones;
	memset(w, 0, sizeof(w));
	assert_int_equal(tracedb_lod_next(&p, ones + sizeof(ones), w), -1);
	assert_true(p <= ones + sizeof(ones));
}

/* Name index pairs at 64-bit extremes. */
/* Every open goes through tracedb: a database it creates has the schema and
 * this version; one of another version is refused by both opens; the
 * metadata the catalog keeps reads from what was created. */
static void test_door(void **state)
{
	char path[] = "/tmp/test-tracedb-XXXXXX", err[256];
	struct qry_error qe = { 0 };
	const char *why = NULL;
	struct jbuf b;
	sqlite3 *db;
	char *json;
	int fd;

	(void)state;
	assert_true((fd = mkstemp(path)) >= 0);
	close(fd);
	assert_non_null(db = tracedb_create(path, 65536, err, sizeof(err)));
	assert_int_equal(tracedb_version(db), TRACEDB_SCHEMA_VERSION);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO providers (id, name, ticks_per_second, buffer_overflows) "
					  "VALUES (3, 'p', 1000, 2)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_non_null(db = tracedb_open_readonly(path, &why));
	jb_init(&b);
	jb_obj(&b);
	assert_int_equal(qry_trace_metadata(db, &b, &qe), QRY_OK);
	jb_obj_end(&b);
	json = jb_take(&b, NULL);
	assert_non_null(strstr(json, "\"providers\":[{\"id\":3,\"name\":\"p\",\"ticks_per_second\":1000,"
				     "\"buffer_overflows\":2}]"));
	assert_non_null(strstr(json, "\"processes\":[]"));
	free(json);
	sqlite3_close(db);
	/* another version: refused, with a reason */
	assert_non_null(db = tracedb_open_readwrite(path, &why));
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 1", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_null(tracedb_open_readonly(path, &why));
	assert_non_null(strstr(why, "version"));
	assert_null(tracedb_open_readwrite(path, &why));
	unlink(path);
	assert_null(tracedb_open_readonly(path, &why));
	assert_non_null(strstr(why, "cannot open"));
}

static void test_names_pairs(void **state)
{
	int64_t ts[] = { INT64_MIN, -1, 0, 0, 5, INT64_MAX };
	int64_t id[] = { 7, 1, INT64_MAX, 2, 2, 1 };
	uint8_t buf[6 * TRACEDB_NAMES_PAIR_MAX];
	const uint8_t *p = buf;
	int64_t t = ts[0], d = id[0];
	size_t len = 0;
	int i;

	(void)state;
	for (i = 1; i < 6; i++)
		len += tracedb_names_put(buf + len, ts[i - 1], id[i - 1], ts[i], id[i]);
	for (i = 1; i < 6; i++) {
		assert_int_equal(tracedb_names_next(&p, buf + len, &t, &d), 0);
		assert_true(t == ts[i]);
		assert_true(d == id[i]);
	}
	assert_int_equal(tracedb_names_next(&p, buf + len, &t, &d), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lod_round_trip),
		cmocka_unit_test(test_lod_small),
		cmocka_unit_test(test_lod_damaged),
		cmocka_unit_test(test_names_pairs),
		cmocka_unit_test(test_door),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
