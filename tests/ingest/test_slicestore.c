/*
 * Unit tests for the slice store (ingest/slicestore.c): what goes in comes
 * back, field for field, in ordinal order per (track, depth) group, whatever
 * the values (64-bit extremes, open slices, no parent, no arg set) and the
 * order slices finish in, in memory or spilled to a scratch file past a
 * budget; ids follow (track, depth) order from 1; a slice never finished is
 * caught; the name notes come back as noted; two stores ordered at once
 * (two ingests in one server) each get their own order.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../ingest/slicestore.h"
#include "../xorshift.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	return xorshift64(&rng);
}

/* A value that is often small, sometimes an extreme of 64 bits. */
static int64_t any_i64(void)
{
	switch (next_rand() % 6) {
	case 0:
		return INT64_MIN;
	case 1:
		return INT64_MAX;
	case 2:
		return -(int64_t)(next_rand() % 1000);
	case 3:
		return (int64_t)next_rand();
	default:
		return (int64_t)(next_rand() % 100000);
	}
}

static uint32_t any_u32(void)
{
	return next_rand() % 4 == 0 ? (uint32_t)next_rand() : (uint32_t)(next_rand() % 300);
}

struct made {
	struct ss_ref ref;
	struct ss_slice s;
	uint32_t track, depth;
	int finished;
};

static void assert_slice_equal(const struct ss_slice *a, const struct ss_slice *b)
{
	assert_true(a->ts == b->ts);
	assert_true(a->dur == b->dur);
	assert_int_equal(a->name, b->name);
	assert_int_equal(a->cat, b->cat);
	assert_int_equal(a->set, b->set);
	assert_int_equal(a->parent.group, b->parent.group);
	if (a->parent.group != MDL_NONE)
		assert_int_equal(a->parent.ord, b->parent.ord);
}

/* Random slices over a few groups, finished in a shuffled order; with a
 * scratch file, past budget packed bytes go to it. */
static void round_trip(struct spill *sp, size_t budget)
{
	enum { N = 20000 };
	struct made *m = calloc(N, sizeof(*m));
	struct slicestore st;
	uint32_t *order, i, k;
	uint64_t expect_id = 1;

	assert_non_null(m);
	ss_init(&st);
	if (sp != NULL)
		ss_spill_to(&st, sp, budget);
	for (i = 0; i < N; i++) {
		m[i].track = (uint32_t)(next_rand() % 5);
		m[i].depth = (uint32_t)(next_rand() % 4);
		m[i].ref = ss_new(&st, m[i].track, m[i].depth);
		assert_int_not_equal(m[i].ref.group, MDL_NONE);
		m[i].s.ts = any_i64();
		m[i].s.dur = next_rand() % 5 == 0 ? -1 : any_i64();
		/* names are string ids, which the store indexes its notes by */
		m[i].s.name = next_rand() % 8 == 0 ? MDL_NONE : (uint32_t)(next_rand() % 3000);
		m[i].s.cat = any_u32();
		m[i].s.set = next_rand() % 3 == 0 ? 0 : any_u32();
		if (i > 0 && next_rand() % 3) {
			m[i].s.parent = m[next_rand() % i].ref;
		} else {
			m[i].s.parent.group = MDL_NONE;
			m[i].s.parent.ord = 0;
		}
	}
	/* finish in a random order: most in ordinal order, some early */
	for (i = 0; i < N; i++) {
		k = next_rand() % 4 == 0 ? (uint32_t)(next_rand() % N) : i;
		if (m[k].finished)
			k = i;
		if (!m[k].finished) {
			assert_int_equal(ss_finish(&st, m[k].ref, &m[k].s), 0);
			m[k].finished = 1;
		}
		if (k != i && !m[i].finished) {
			assert_int_equal(ss_finish(&st, m[i].ref, &m[i].s), 0);
			m[i].finished = 1;
		}
	}
	assert_int_equal(st.count, N);
	order = ss_order(&st, 0, &(uint64_t){ 1 });
	assert_non_null(order);
	for (k = 0; k < st.ngroups; k++) {
		const struct ss_group *g = ss_group(&st, order[k]);
		struct ss_reader rd;
		struct ss_slice s;
		uint32_t ord = 0;

		if (k > 0) {
			const struct ss_group *p = ss_group(&st, order[k - 1]);

			assert_true(p->track < g->track || (p->track == g->track && p->depth < g->depth));
		}
		assert_true(g->first_id == expect_id);
		expect_id += g->count;
		ss_read_group(&rd, &st, g);
		for (i = 0; i < N; i++) {
			if (m[i].ref.group != order[k])
				continue;
			assert_int_equal(m[i].ref.ord, ord++);
			assert_int_equal(ss_read(&rd, &s), 1);
			assert_slice_equal(&s, &m[i].s);
			assert_true(ss_id(&st, m[i].ref) == g->first_id + m[i].ref.ord);
		}
		assert_int_equal(ss_read(&rd, &s), 0);
		ss_read_done(&rd);
		assert_int_equal(ord, g->count);
	}
	assert_true(expect_id == N + 1);
	if (sp != NULL)
		assert_true(sp->len > 0 && st.resident <= budget + 100);
	free(order);
	ss_fini(&st);
	free(m);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(NULL, 0);
}

/* Budgets from a few bytes (every slice spills) to a few pages. */
static void test_round_trip_spilled(void **state)
{
	size_t budgets[] = { 1, 100, 4096, 65536 };
	struct spill sp;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++) {
		assert_int_equal(spill_init(&sp, "/tmp", "packed slices"), 0);
		round_trip(&sp, budgets[i]);
		assert_int_equal(sp.failed, 0);
		spill_fini(&sp);
	}
}

/* A scratch file that cannot be made fails the store, with a sentence. */
static void test_spill_fails(void **state)
{
	struct slicestore st;
	struct spill sp;
	struct ss_slice s = { 5, 1, 1, 1, 0, { MDL_NONE, 0 }, 0 };
	struct ss_ref r;

	(void)state;
	assert_int_equal(spill_init(&sp, "/nonexistent/dir", "packed slices"), 0);
	ss_init(&st);
	ss_spill_to(&st, &sp, 1);
	r = ss_new(&st, 0, 0);
	assert_int_equal(ss_finish(&st, r, &s), -1);
	assert_int_equal(sp.failed, 1);
	assert_non_null(strstr(sp.why, "/nonexistent/dir"));
	assert_int_equal(st.oom, 0);
	ss_fini(&st);
	spill_fini(&sp);
}

/* A slice made and never finished stops the write stage. */
static void test_unfinished(void **state)
{
	struct slicestore st;
	struct ss_slice s = { 5, 1, 1, 1, 0, { MDL_NONE, 0 }, 0 };
	struct ss_ref a, b;
	uint32_t *order;

	(void)state;
	ss_init(&st);
	a = ss_new(&st, 0, 0);
	b = ss_new(&st, 0, 0);
	assert_int_equal(ss_finish(&st, b, &s), 0); /* early: waits for a */
	assert_null(ss_order(&st, 0, &(uint64_t){ 1 }));
	assert_int_equal(st.oom, 0);
	assert_int_equal(ss_finish(&st, a, &s), 0);
	order = ss_order(&st, 0, &(uint64_t){ 1 }); /* whole now */
	assert_non_null(order);
	free(order);
	ss_fini(&st);
}

/* A finished slice of name at ts for dur. */
static void finish_named(struct slicestore *st, struct ss_ref r, uint32_t name, int64_t ts, int64_t dur)
{
	struct ss_slice s = { ts, dur, name, 1, 0, { MDL_NONE, 0 }, 0 };

	assert_int_equal(ss_finish(st, r, &s), 0);
}

/* Finished slices are noted under their names, and come back in the order
 * they finished, with 64-bit times and durations (-1: never ended). */
static void test_names(void **state)
{
	struct slicestore st;
	struct ss_reader rd;
	struct ss_ref r, got;
	int64_t ts[] = { 0, -5, INT64_MAX, INT64_MIN, 7, 7 };
	int64_t durs[] = { 5, -1, 0, INT64_MAX, 1, 123456789 };
	int64_t t, d;
	size_t i;

	(void)state;
	ss_init(&st);
	for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		r = ss_new(&st, (uint32_t)i, 2);
		finish_named(&st, r, 1000, ts[i], durs[i]);
	}
	r = ss_new(&st, 0, 3);
	finish_named(&st, r, MDL_NONE, 9, 9); /* no name: not noted */
	assert_int_equal(st.names[1000].count, 6);
	ss_read_name(&rd, &st, 1000);
	for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		assert_int_equal(ss_read_note(&rd, &t, &d, &got), 1);
		assert_true(t == ts[i]);
		assert_true(d == durs[i]);
		assert_int_equal(got.group, (uint32_t)i);
		assert_int_equal(got.ord, 0);
	}
	assert_int_equal(ss_read_note(&rd, &t, &d, &got), 0);
	ss_read_done(&rd);
	ss_read_name(&rd, &st, 999999); /* never noted */
	assert_int_equal(ss_read_note(&rd, &t, &d, &got), 0);
	ss_read_done(&rd);
	ss_fini(&st);
}

/*
 * Many names, each with one to a few notes (kept in the name's entry while
 * they fit, then in a stream of its own), some far in time from the first
 * note (too long for the entry at once): every note comes back, in order,
 * with or without a scratch file for the streams.
 */
/* The duration of note j of name k: some never ended, some long. */
#define NOTE_DUR(k, j) (((k) + (j)) % 5 == 0 ? -1 : (k) % 11 == 0 ? INT64_MAX - (int64_t)(j) : (int64_t)((k) * 3 + (j)))

static void names_case(struct spill *sp, size_t budget)
{
	enum { NAMES = 3000 };
	struct slicestore st;
	struct ss_reader rd;
	struct ss_ref r, got;
	int64_t t, d, want;
	size_t k, j;

	ss_init(&st);
	if (sp != NULL)
		ss_spill_to(&st, sp, budget);
	for (j = 0; j < 6; j++) /* notes interleaved across names, as a trace makes them */
		for (k = 0; k < NAMES; k++) {
			if (j > k % 6)
				continue;
			r = ss_new(&st, (uint32_t)(k % 7), (uint32_t)j);
			want = k % 97 == 0 ? INT64_MAX - (int64_t)(k + j) : (int64_t)(1000000 + k * 10 + j);
			finish_named(&st, r, (uint32_t)(k + 1), want, NOTE_DUR(k, j));
		}
	assert_int_equal(st.oom, 0);
	for (k = 0; k < NAMES; k++) {
		assert_int_equal(st.names[k + 1].count, k % 6 + 1);
		ss_read_name(&rd, &st, (uint32_t)(k + 1));
		for (j = 0; j <= k % 6; j++) {
			want = k % 97 == 0 ? INT64_MAX - (int64_t)(k + j) : (int64_t)(1000000 + k * 10 + j);
			assert_int_equal(ss_read_note(&rd, &t, &d, &got), 1);
			assert_true(t == want);
			assert_true(d == NOTE_DUR(k, j));
			assert_int_equal(ss_group(&st, got.group)->track, k % 7);
			assert_int_equal(ss_group(&st, got.group)->depth, j);
		}
		assert_int_equal(ss_read_note(&rd, &t, &d, &got), 0);
		ss_read_done(&rd);
	}
	ss_fini(&st);
}

static void test_names_many(void **state)
{
	struct spill sp;

	(void)state;
	names_case(NULL, 0);
	assert_int_equal(spill_init(&sp, "/tmp", "packed slices"), 0);
	names_case(&sp, 64); /* the streams spill again and again */
	assert_int_equal(sp.failed, 0);
	spill_fini(&sp);
}

/* A store of n groups, made in an order of (track, depth) that depends on
 * salt, each with one finished slice. */
static void groups_store(struct slicestore *st, uint32_t n, uint32_t salt)
{
	struct ss_slice s = { 5, 1, MDL_NONE, 1, 0, { MDL_NONE, 0 }, 0 };
	uint32_t i;

	ss_init(st);
	for (i = 0; i < n; i++) {
		uint32_t k = (i * 7919u + salt) % n; /* 7919 is prime: a permutation */
		struct ss_ref r = ss_new(st, k / 8, salt % 2 ? 7 - k % 8 : k % 8);

		assert_int_not_equal(r.group, MDL_NONE);
		assert_int_equal(ss_finish(st, r, &s), 0);
	}
}

struct order_run {
	struct slicestore *st;
	int bad; /* orders that were not (track, depth) order */
};

static void *order_many(void *arg)
{
	struct order_run *o = arg;
	int round;
	size_t i;

	for (round = 0; round < 40; round++) {
		uint32_t *order = ss_order(o->st, 0, &(uint64_t){ 1 });

		if (order == NULL) {
			o->bad++;
			continue;
		}
		for (i = 1; i < o->st->ngroups; i++) {
			const struct ss_group *p = ss_group(o->st, order[i - 1]);
			const struct ss_group *g = ss_group(o->st, order[i]);

			if (!(p->track < g->track || (p->track == g->track && p->depth < g->depth))) {
				o->bad++;
				break;
			}
		}
		free(order);
	}
	return NULL;
}

/* Two stores ordered at the same time, as two ingests of one server do:
 * the sort once kept its store in a global, so one ingest's groups could
 * be sorted by the other's (track, depth), a table written out of order. */
static void test_order_concurrent(void **state)
{
	enum { N = 40000 };
	struct slicestore a, b;
	struct order_run ra = { &a, 0 }, rb = { &b, 0 };
	pthread_t ta, tb;

	(void)state;
	groups_store(&a, N, 1);
	groups_store(&b, N, 2);
	assert_int_equal(pthread_create(&ta, NULL, order_many, &ra), 0);
	assert_int_equal(pthread_create(&tb, NULL, order_many, &rb), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(ra.bad, 0);
	assert_int_equal(rb.bad, 0);
	ss_fini(&a);
	ss_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_spilled),
		cmocka_unit_test(test_spill_fails),
		cmocka_unit_test(test_unfinished),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_names_many),
		cmocka_unit_test(test_order_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
