/*
 * Unit tests for the external sort of records (ingest/runsort.c): whatever
 * the size of a run (one record, a few, more than a piece read back at a
 * time, everything in memory), the records come back every one, in the
 * order qsort gives; nothing pushed gives nothing; a scratch file that
 * cannot be made fails the push cleanly, with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../ingest/runsort.h"

static uint64_t rnd_state = 11;

static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)((rnd_state >> 33) % n);
}

/* 24 bytes: a key with many ties, and the push order to break them. */
struct rec {
	uint32_t key;
	uint32_t seq;
	uint64_t check; /* a function of the two, to see the bytes come back whole */
	uint64_t pad;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Pushes n records with keys below nkeys through runs of run_bytes (0: no
 * scratch file) and checks what the merge gives. */
static void t_case(size_t n, uint32_t nkeys, size_t run_bytes)
{
	struct rec *want = malloc((n ? n : 1) * sizeof(*want)), *r;
	const struct rec *got;
	struct runsort rs;
	struct spill sp;
	size_t i;

	assert_non_null(want);
	assert_int_equal(spill_init(&sp, "/tmp", "test records"), 0);
	rs_init(&rs, sizeof(struct rec), rec_cmp);
	if (run_bytes)
		rs_spill_to(&rs, &sp, run_bytes);
	for (i = 0; i < n; i++) {
		assert_non_null(r = rs_push(&rs));
		r->key = rnd(nkeys);
		r->seq = (uint32_t)i;
		r->check = r->key * UINT64_C(0x9E3779B97F4A7C15) ^ i;
		want[i] = *r;
	}
	assert_int_equal(rs.count, n);
	if (run_bytes && n * sizeof(struct rec) > run_bytes)
		assert_true(rs.runs.len > 0);
	qsort(want, n, sizeof(*want), rec_cmp);
	assert_int_equal(rs_finish(&rs), 0);
	for (i = 0; (got = rs_next(&rs)) != NULL; i++) {
		assert_true(i < n);
		if (memcmp(got, &want[i], sizeof(*got)) != 0)
			fail_msg("record %zu of %zu (runs of %zu bytes): key %u seq %u, want key %u seq %u", i, n,
				 run_bytes, got->key, got->seq, want[i].key, want[i].seq);
	}
	assert_int_equal(i, n);
	assert_false(rs.failed);
	assert_null(rs_next(&rs)); /* and stays at the end */
	rs_fini(&rs);
	spill_fini(&sp);
	free(want);
}

static void test_runs(void **state)
{
	(void)state;
	t_case(0, 3, 0);
	t_case(0, 3, 100);
	t_case(1, 3, 100);
	t_case(1000, 5, 0);                /* in memory */
	t_case(1000, 5, 1 << 20);          /* one run's worth: never spilled */
	t_case(500, 5, sizeof(struct rec)); /* a run a record */
	t_case(5000, 40, 7 * sizeof(struct rec));
	t_case(5000, 40, 7 * sizeof(struct rec) + 5); /* not a whole number of records */
	t_case(300000, 1000, 2 << 20);     /* runs read back in dozens of pieces */
	t_case(300000, 3, 3 << 20);        /* and ties everywhere */
}

/* A scratch file that cannot be made: the push that would spill fails,
 * and the spill says why. */
static void test_spill_fails(void **state)
{
	struct runsort rs;
	struct spill sp;
	size_t i;

	(void)state;
	assert_int_equal(spill_init(&sp, "/nonexistent/dir", "test records"), 0);
	rs_init(&rs, sizeof(struct rec), rec_cmp);
	rs_spill_to(&rs, &sp, 4 * sizeof(struct rec));
	for (i = 0; i < 4; i++)
		assert_non_null(rs_push(&rs));
	assert_null(rs_push(&rs));
	assert_true(rs.failed);
	assert_true(sp.failed);
	assert_non_null(strstr(sp.why, "test records"));
	assert_null(rs_push(&rs));
	assert_int_equal(rs_finish(&rs), -1);
	assert_null(rs_next(&rs));
	rs_fini(&rs);
	spill_fini(&sp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs),
		cmocka_unit_test(test_spill_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
