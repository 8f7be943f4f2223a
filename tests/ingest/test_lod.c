/*
 * Unit tests for the level-of-detail builder (ingest/lod.c): on runs of
 * many shapes (spacings from nanoseconds to minutes, equal and negative
 * timestamps, one bucket for all, unterminated slices, counters with int
 * and double values), the records written to table lod are decoded and
 * compared, word by word, with a reference that follows the rules of
 * lod.c's header the slow way: every level's groups counted (over the
 * first power of two of the items, as the rule says) and made from the
 * items themselves. test_lod_inc.c builds the same groups in commits.
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

#include "../../ingest/lod.h"
#include "../xorshift.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

static uint64_t dbl_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

/* The groups of level L: runs of items with the same ts >> L. */
static size_t count_groups(const struct lod_item *it, size_t n, int level)
{
	size_t i, c = n > 0;

	for (i = 1; i < n; i++)
		c += it[i].ts >> level != it[i - 1].ts >> level;
	return c;
}

/* The record of items [a, b] at level L, as lod.c's header lays it out. */
static void ref_record(const struct lod_item *it, size_t a, size_t b, int level, int counters, uint64_t v[LOD_WORDS])
{
	size_t i, longest = a;
	int64_t end = it[a].end, imin = it[a].ivalue, imax = it[a].ivalue;
	double min = it[a].value, max = it[a].value;
	int open = 0, all_int = 1;

	for (i = a; i <= b; i++) {
		if (it[i].end > end)
			end = it[i].end;
		if (it[i].end - it[i].ts > it[longest].end - it[longest].ts)
			longest = i;
		open |= it[i].open;
		all_int &= it[i].is_int;
		if (it[i].ivalue < imin)
			imin = it[i].ivalue;
		if (it[i].ivalue > imax)
			imax = it[i].ivalue;
		if (it[i].value < min)
			min = it[i].value;
		if (it[i].value > max)
			max = it[i].value;
	}
	memset(v, 0, LOD_WORDS * sizeof(*v));
	v[LODW_BUCKET] = (uint64_t)(it[a].ts >> level);
	v[LODW_FIRST] = a;
	v[LODW_LAST] = b;
	v[LODW_START] = (uint64_t)it[a].ts;
	if (counters) {
		v[LODW_LAST_TS] = (uint64_t)it[b].ts;
		v[LODW_MIN] = all_int ? (uint64_t)imin : dbl_bits(min);
		v[LODW_MAX] = all_int ? (uint64_t)imax : dbl_bits(max);
		v[LODW_LAST_VALUE] = it[b].is_int ? (uint64_t)it[b].ivalue : dbl_bits(it[b].value);
		v[LODW_INT_FLAGS] = (uint64_t)(it[b].is_int != 0) | (uint64_t)(it[a].is_int != 0) << 1 |
				    (uint64_t)all_int << 2;
		v[LODW_FIRST_VALUE] = it[a].is_int ? (uint64_t)it[a].ivalue : dbl_bits(it[a].value);
	} else {
		v[LODW_END] = (uint64_t)end;
		v[LODW_LONGEST] = longest;
		v[LODW_OPEN] = (uint64_t)open;
		v[LODW_LONGEST_DUR] = (uint64_t)(it[longest].end - it[longest].ts);
		v[LODW_NAMES] = (uint64_t)it[longest].name | (uint64_t)it[longest].cat << 32;
		v[LODW_FIRST_NAMES] = (uint64_t)it[a].name | (uint64_t)it[a].cat << 32;
	}
}

/* Every record the rules ask for, level by level, and the set of levels:
 * decided over the first P items, P the greatest power of two at or below
 * n, and made over all n. */
static uint64_t *reference(const struct lod_item *it, size_t n, int counters, size_t *nrec, uint64_t *set)
{
	uint64_t *rec;
	size_t stored, groups, a, b, p = 1, room = 1;
	int level;

	*nrec = 0;
	*set = 0;
	while (p * 2 <= n)
		p *= 2;
	stored = p;
	groups = n >= 2 ? count_groups(it, p, LOD_MIN_LEVEL) : 1;
	for (level = LOD_MIN_LEVEL; level <= LOD_MAX_LEVEL && groups > 1; level += LOD_STEP) {
		groups = count_groups(it, p, level);
		if (groups * 2 > stored)
			continue;
		stored = groups;
		*set |= UINT64_C(1) << level;
		room += count_groups(it, n, level);
	}
	rec = malloc(room * LOD_WORDS * sizeof(*rec));
	assert_non_null(rec);
	for (level = LOD_MIN_LEVEL; level <= LOD_MAX_LEVEL; level += LOD_STEP) {
		if (!(*set >> level & 1))
			continue;
		for (a = 0; a < n; a = b + 1) {
			for (b = a; b + 1 < n && it[b + 1].ts >> level == it[a].ts >> level; b++)
				;
			if (b > a)
				ref_record(it, a, b, level, counters, rec + (*nrec)++ * LOD_WORDS);
		}
	}
	return rec;
}

/* Builds the run's summaries into a new database and compares every record
 * read back with the reference. */
static void check_run(const struct lod_item *it, size_t n, int counters)
{
	char path[] = "/tmp/test_lod_XXXXXX";
	struct lod_key key = { 7, counters ? 0 : 3 };
	struct lod_writer w;
	struct dbwriter s;
	sqlite3 *db;
	sqlite3_stmt *st;
	uint64_t levels = 99, want_set, *want, v[LOD_WORDS];
	size_t nrec, got = 0;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dbw_open(&s, path, 65536), 0);
	assert_int_equal(lod_writer_init(&w, &s), 0);
	assert_int_equal(lod_build(&w, &key, it, n, counters, &levels), 0);
	assert_int_equal(lod_writer_fini(&w), 0);
	assert_int_equal(dbw_index(&s), 0); /* moves the staged lod rows in */
	assert_int_equal(dbw_commit(&s), 0);
	dbw_close(&s);

	want = reference(it, n, counters, &nrec, &want_set);
	assert_int_equal(levels, want_set);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT track_id, depth, level, first_bucket, last_bucket, buckets FROM lod "
					    "ORDER BY level, first_bucket",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		static uint64_t rec[LOD_CHUNK][LOD_WORDS];
		int level = sqlite3_column_int(st, 2);
		int rows = tracedb_lod_unpack(sqlite3_column_blob(st, 5), (size_t)sqlite3_column_bytes(st, 5), level, rec);
		int k;

		assert_int_equal(sqlite3_column_int64(st, 0), key.track_id);
		assert_int_equal(sqlite3_column_int64(st, 1), key.depth);
		assert_true(want_set >> level & 1);
		assert_true(rows >= 1 && rows <= LOD_CHUNK);
		for (k = 0; k < rows; k++) {
			memcpy(v, rec[k], sizeof(v));
			assert_true(got < nrec);
			assert_memory_equal(v, want + got * LOD_WORDS, sizeof(v));
			if (k == 0)
				assert_int_equal(sqlite3_column_int64(st, 3), (int64_t)v[LODW_BUCKET]);
			got++;
		}
		assert_int_equal(sqlite3_column_int64(st, 4), (int64_t)v[LODW_BUCKET]);
	}
	assert_int_equal(got, nrec);
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(want);
	unlink(path);
}

/* n slices starting at ts0, gaps drawn from gap() */
static struct lod_item *slices(size_t n, int64_t ts0, uint64_t (*gap)(void))
{
	struct lod_item *it = calloc(n ? n : 1, sizeof(*it));
	int64_t ts = ts0;
	size_t i;

	assert_non_null(it);
	for (i = 0; i < n; i++) {
		ts += i ? (int64_t)gap() : 0;
		it[i].ts = ts;
		it[i].end = ts + (int64_t)(rnd() % 5000);
		it[i].open = rnd() % 97 == 0;
		if (it[i].open)
			it[i].end = INT64_C(1) << 50;
		it[i].name = (uint32_t)(rnd() % 9);
		it[i].cat = (uint32_t)(rnd() % 3);
	}
	return it;
}

/* counter points: some int, some double, equal values among them */
static struct lod_item *points(size_t n, int64_t ts0, uint64_t (*gap)(void), int ints)
{
	struct lod_item *it = slices(n, ts0, gap);
	size_t i;

	for (i = 0; i < n; i++) {
		it[i].end = it[i].ts;
		it[i].open = 0;
		it[i].name = it[i].cat = 0;
		it[i].is_int = ints == 2 ? 1 : ints == 1 ? (int)(rnd() & 1) : 0;
		if (it[i].is_int) {
			it[i].ivalue = (int64_t)(rnd() % 1000) - 500;
			if (rnd() % 50 == 0)
				it[i].ivalue = rnd() & 1 ? INT64_MAX : INT64_MIN;
		} else {
			it[i].value = (double)(int64_t)(rnd() % 100000) / 7.0 - 5000;
		}
	}
	return it;
}

static uint64_t gap_ns(void)
{
	return rnd() % 300; /* many share every bucket, equal ts among them */
}

static uint64_t gap_us(void)
{
	return rnd() % 40000;
}

static uint64_t gap_mixed(void)
{
	switch (rnd() % 4) {
	case 0:
		return 0;
	case 1:
		return rnd() % 1000;
	case 2:
		return rnd() % 1000000;
	default:
		return rnd() % (UINT64_C(1) << (20 + rnd() % 20));
	}
}

static uint64_t gap_none(void)
{
	return 0;
}

static uint64_t gap_huge(void)
{
	return UINT64_C(1) << (40 + rnd() % 16);
}

static void test_slices(void **state)
{
	uint64_t (*gaps[])(void) = { gap_ns, gap_us, gap_mixed, gap_none, gap_huge };
	const size_t sizes[] = { 0, 1, 2, 3, 17, 1000, 30000 };
	const int64_t starts[] = { 0, 123456789, -(INT64_C(1) << 45), INT64_C(1) << 55 };
	size_t g, z, t;

	(void)state;
	rng_state = 42;
	for (g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++)
		for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
			for (t = 0; t < sizeof(starts) / sizeof(starts[0]); t++) {
				struct lod_item *it;

				if (gaps[g] == gap_huge && (starts[t] > 0 || sizes[z] > 17))
					continue; /* stay within int64 */
				it = slices(sizes[z], starts[t], gaps[g]);
				check_run(it, sizes[z], 0);
				free(it);
			}
}

static void test_counters(void **state)
{
	uint64_t (*gaps[])(void) = { gap_ns, gap_us, gap_mixed, gap_none };
	size_t g;
	int ints;

	(void)state;
	rng_state = 7;
	for (g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++)
		for (ints = 0; ints <= 2; ints++) {
			struct lod_item *it = points(20000, 5000, gaps[g], ints);

			check_run(it, 20000, 1);
			free(it);
		}
}

/* One group at the first level: nothing is stored, whatever the count. */
static void test_one_bucket(void **state)
{
	struct lod_item *it;

	(void)state;
	rng_state = 3;
	it = slices(5000, 1 << 20, gap_none);
	check_run(it, 5000, 0);
	free(it);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slices),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_one_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
