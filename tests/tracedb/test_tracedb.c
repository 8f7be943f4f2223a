/*
 * Unit tests for the trace database's record codecs (tracedb/tracedb.c):
 * packed rows (level-of-detail records, stack nodes) and name index pairs
 * come back exactly, 64-bit extremes and double bits included, and bytes
 * that end early, never end a varint or hold counts out of range are
 * refused instead of read past.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

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

/* Rows of 1 .. LOD_CHUNK random records, at every level, read back record
 * for record, and so do rows of stack nodes. */
static void test_pack_round_trip(void **state)
{
	static uint64_t rec[LOD_CHUNK][LOD_WORDS], got[LOD_CHUNK][LOD_WORDS];
	static uint64_t nodes[TRACEDB_STACKS_CHUNK][STACKS_WORDS], gotn[TRACEDB_STACKS_CHUNK][STACKS_WORDS];
	static uint8_t buf[1 << 17];
	size_t len, n;
	int i, w, round;

	(void)state;
	assert_true(tracedb_lod_bound(LOD_CHUNK) <= sizeof(buf) && tracedb_stacks_bound(TRACEDB_STACKS_CHUNK) <= sizeof(buf));
	for (round = 0; round < 40; round++) {
		int level = round % (LOD_MAX_LEVEL + 1);

		n = round == 0 ? 1 : round == 1 ? LOD_CHUNK : 1 + next_rand() % LOD_CHUNK;
		for (i = 0; i < (int)n; i++)
			for (w = 0; w < LOD_WORDS; w++)
				rec[i][w] = any_word(i ? rec[i - 1][w] : 0);
		len = tracedb_lod_pack(buf, sizeof(buf), level, (const uint64_t(*)[LOD_WORDS])rec, n);
		assert_true(len > 0 && len <= tracedb_lod_bound(n));
		memset(got, 0, sizeof(got));
		assert_int_equal(tracedb_lod_unpack(buf, len, level, got), (int)n);
		assert_memory_equal(got, rec, n * sizeof(rec[0]));

		n = round == 0 ? 1 : round == 1 ? TRACEDB_STACKS_CHUNK : 1 + next_rand() % TRACEDB_STACKS_CHUNK;
		for (i = 0; i < (int)n; i++)
			for (w = 0; w < STACKS_WORDS; w++)
				nodes[i][w] = any_word(i ? nodes[i - 1][w] : 0);
		len = tracedb_stacks_pack(buf, sizeof(buf), (const uint64_t(*)[STACKS_WORDS])nodes, n);
		assert_true(len > 0 && len <= tracedb_stacks_bound(n));
		assert_int_equal(tracedb_stacks_unpack(buf, len, gotn), (int)n);
		assert_memory_equal(gotn, nodes, n * sizeof(nodes[0]));
	}
}

/* A run of neighbouring records takes far fewer bytes than fixed words;
 * a count out of range, a level out of range or a short buffer packs
 * nothing. */
static void test_pack_small(void **state)
{
	static uint64_t rec[LOD_CHUNK][LOD_WORDS];
	static uint8_t buf[1 << 17];
	size_t len;
	int i;

	(void)state;
	for (i = 0; i < LOD_CHUNK; i++) {
		rec[i][LODW_BUCKET] = 1000 + (uint64_t)i * 2;
		rec[i][LODW_FIRST] = 5000 + 3 * (uint64_t)i;
		rec[i][LODW_LAST] = rec[i][LODW_FIRST] + 2;
		rec[i][LODW_START] = (rec[i][LODW_BUCKET] << 10) + next_rand() % 1024;
		rec[i][LODW_END] = rec[i][LODW_START] + 900 + next_rand() % 64;
		rec[i][LODW_NAMES] = 7 | (uint64_t)3 << 32;
	}
	len = tracedb_lod_pack(buf, sizeof(buf), 10, (const uint64_t(*)[LOD_WORDS])rec, LOD_CHUNK);
	assert_true(len > 0 && len < LOD_CHUNK * 5);
	assert_int_equal(tracedb_lod_pack(buf, sizeof(buf), 10, (const uint64_t(*)[LOD_WORDS])rec, 0), 0);
	assert_int_equal(tracedb_lod_pack(buf, sizeof(buf), 10, (const uint64_t(*)[LOD_WORDS])rec, LOD_CHUNK + 1), 0);
	assert_int_equal(tracedb_lod_pack(buf, sizeof(buf), 63, (const uint64_t(*)[LOD_WORDS])rec, 1), 0);
	assert_int_equal(tracedb_lod_pack(buf, 8, 10, (const uint64_t(*)[LOD_WORDS])rec, LOD_CHUNK), 0);
}

/* The varints of a lod record: its two name words take two each. */
enum { LOD_VARINTS = LOD_WORDS + 2 };

/* Packs a content (as tracedb.c does, before zstd) into buf; its size. */
static size_t frame(uint8_t *buf, size_t cap, const uint8_t *content, size_t n)
{
	size_t len = ZSTD_compress(buf, cap, content, n, 1);

	assert_false(ZSTD_isError(len));
	return len;
}

/* Damaged blobs are refused, never read past: cut short anywhere, bytes
 * flipped, not zstd, a frame without its size, and contents whose count
 * is 0 or above the chunk, whose varints end early or never end, or with
 * bytes left over. */
static void test_pack_damaged(void **state)
{
	static uint64_t rec[LOD_CHUNK][LOD_WORDS], got[LOD_CHUNK][LOD_WORDS];
	static uint8_t buf[1 << 17], content[4096];
	size_t len, cut, n;
	int i, w;
	ZSTD_CCtx *cc;

	(void)state;
	for (i = 0; i < 40; i++)
		for (w = 0; w < LOD_WORDS; w++)
			rec[i][w] = any_word(i ? rec[i - 1][w] : 0);
	len = tracedb_lod_pack(buf, sizeof(buf), 12, (const uint64_t(*)[LOD_WORDS])rec, 40);
	assert_true(len > 0);
	for (cut = 0; cut < len; cut++)
		assert_int_equal(tracedb_lod_unpack(buf, cut, 12, got), -1);
	for (cut = 0; cut < len; cut++) { /* a flipped byte: refused, or read as other words, never past */
		buf[cut] ^= 0x5a;
		assert_true(tracedb_lod_unpack(buf, len, 12, got) <= 40);
		buf[cut] ^= 0x5a;
	}
	assert_int_equal(tracedb_lod_unpack(buf, len, 12, got), 40);
	assert_int_equal(tracedb_lod_unpack(buf, len, -1, got), -1);
	assert_int_equal(tracedb_lod_unpack(buf, len, 64, got), -1);
	memset(content, 0x01, sizeof(content));
	assert_int_equal(tracedb_lod_unpack(content, sizeof(content), 12, got), -1);
	/* count 0; count LOD_CHUNK + 1 with its words; a varint that never ends;
	 * one record short of a word; one byte left over */
	content[0] = 0;
	assert_int_equal(tracedb_lod_unpack(buf, frame(buf, sizeof(buf), content, 1), 12, got), -1);
	n = tracedb_put_varint(content, LOD_CHUNK + 1);
	memset(content + n, 0, (LOD_CHUNK + 1) * LOD_WORDS);
	assert_int_equal(tracedb_lod_unpack(buf, frame(buf, sizeof(buf), content, n + (LOD_CHUNK + 1) * LOD_WORDS), 12, got), -1);
	content[0] = 1;
	memset(content + 1, 0xff, LOD_VARINTS);
	assert_int_equal(tracedb_lod_unpack(buf, frame(buf, sizeof(buf), content, 1 + LOD_VARINTS), 12, got), -1);
	memset(content + 1, 0x00, LOD_VARINTS + 1);
	assert_int_equal(tracedb_lod_unpack(buf, frame(buf, sizeof(buf), content, LOD_VARINTS), 12, got), -1);
	assert_int_equal(tracedb_lod_unpack(buf, frame(buf, sizeof(buf), content, 2 + LOD_VARINTS), 12, got), -1);
	assert_int_equal(tracedb_lod_unpack(buf, frame(buf, sizeof(buf), content, 1 + LOD_VARINTS), 12, got), 1);
	/* a name half above 32 bits */
	content[1 + LODW_NAMES] = 0x80;
	content[2 + LODW_NAMES] = 0x80;
	content[3 + LODW_NAMES] = 0x80;
	content[4 + LODW_NAMES] = 0x80;
	content[5 + LODW_NAMES] = 0x10;
	assert_int_equal(tracedb_lod_unpack(buf, frame(buf, sizeof(buf), content, 1 + LOD_VARINTS + 4), 12, got), -1);
	/* the same content in a frame that does not give its size */
	assert_non_null(cc = ZSTD_createCCtx());
	assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
	len = ZSTD_compress2(cc, buf, sizeof(buf), content, 1 + LOD_WORDS);
	assert_false(ZSTD_isError(len));
	assert_int_equal(tracedb_lod_unpack(buf, len, 12, got), -1);
	ZSTD_freeCCtx(cc);
	/* a stack row whose count is above its chunk */
	n = tracedb_put_varint(content, TRACEDB_STACKS_CHUNK + 1);
	assert_int_equal(tracedb_stacks_unpack(buf, frame(buf, sizeof(buf), content, n), (uint64_t(*)[STACKS_WORDS])got), -1);
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
		cmocka_unit_test(test_pack_round_trip),
		cmocka_unit_test(test_pack_small),
		cmocka_unit_test(test_pack_damaged),
		cmocka_unit_test(test_names_pairs),
		cmocka_unit_test(test_door),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
