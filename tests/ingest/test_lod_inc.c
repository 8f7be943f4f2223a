/*
 * Unit tests for the level of detail built in commits (ingest/lod.c,
 * lod_commit): random groups (slices with random ts and dur, some left
 * open; counter points with int and double values) are split into random
 * commits, with the last item replaced at random between them (closed,
 * its end moved with the trace end, its value changed). A sink collects
 * the row operations (put, drop) as a table would, and after every commit
 * its rows must equal, blob byte for byte, those of one commit of the
 * same items, which is what the batch (lod_build) writes; test_lod.c holds
 * that one to its reference. The stored set of levels must not depend on
 * where the commits fell either.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../ingest/lod.h"
#include "../xorshift.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

/* One row as the sink holds it. */
struct row {
	int level;
	int64_t first, last;
	uint8_t *blob;
	size_t len;
};

/* A table of one group's rows, kept by put and drop, and the group's
 * items as they stand (the sink's `items`). */
struct table {
	struct lod_key key;
	struct row *rows;
	size_t n, cap;
	const struct lod_item *items; /* the group's items so far */
	uint64_t nitems;
	uint64_t below;               /* the commit's `from`: lod_sink.items asks for no item past it */
	uint64_t fetched;             /* items handed to the builder */
	uint64_t ops;                 /* puts and drops */
	uint64_t puts_bytes;          /* bytes put */
};

static int t_put(void *ctx, const struct lod_key *k, int level, int64_t first, int64_t last, uint8_t *blob,
		 size_t len)
{
	struct table *t = ctx;
	size_t i;

	assert_int_equal(k->track_id, t->key.track_id);
	assert_int_equal(k->depth, t->key.depth);
	assert_true(first <= last);
	t->ops++;
	t->puts_bytes += len;
	for (i = 0; i < t->n; i++)
		if (t->rows[i].level == level && t->rows[i].first == first)
			break;
	if (i == t->n) {
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 16;
			t->rows = realloc(t->rows, t->cap * sizeof(*t->rows));
			assert_non_null(t->rows);
		}
		t->n++;
	} else {
		free(t->rows[i].blob);
	}
	t->rows[i] = (struct row){ level, first, last, blob, len };
	return 0;
}

static int t_drop(void *ctx, const struct lod_key *k, int level, int64_t from)
{
	struct table *t = ctx;
	size_t i, out = 0;

	assert_int_equal(k->track_id, t->key.track_id);
	t->ops++;
	for (i = 0; i < t->n; i++) {
		if (t->rows[i].level == level && t->rows[i].first >= from)
			free(t->rows[i].blob);
		else
			t->rows[out++] = t->rows[i];
	}
	t->n = out;
	return 0;
}

static const struct lod_item *t_items(void *ctx, const struct lod_key *k, uint64_t first, size_t n)
{
	struct table *t = ctx;

	(void)k;
	assert_true(n >= 1 && n <= LOD_FETCH);
	assert_true(first + n <= t->nitems);
	assert_true(first + n <= t->below);
	t->fetched += n;
	return t->items + first;
}

static void table_init(struct table *t, const struct lod_key *k)
{
	memset(t, 0, sizeof(*t));
	t->key = *k;
}

static void table_fini(struct table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->rows[i].blob);
	free(t->rows);
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The rows of one commit of items[0, n), as lod_build writes them. */
static void one_commit(struct table *t, const struct lod_key *k, const struct lod_item *items, uint64_t n,
		       int counters, uint64_t *levels)
{
	const struct lod_sink sink = { t, t_put, t_drop, NULL };
	struct lod_state st;

	table_init(t, k);
	lod_state_init(&st, k, counters);
	assert_int_equal(lod_commit(&st, items, 0, (size_t)n, &sink, levels), 0);
	lod_state_fini(&st);
}

/* The sink's rows equal one commit's of the same items, byte for byte. */
static void check_equal(struct table *got, const struct lod_item *items, uint64_t n, int counters,
			uint64_t levels)
{
	struct table want;
	uint64_t want_levels;
	size_t i;

	one_commit(&want, &got->key, items, n, counters, &want_levels);
	assert_int_equal(levels, want_levels);
	assert_int_equal(got->n, want.n);
	if (want.n == 0) { /* rows NULL, which qsort must not be given */
		table_fini(&want);
		return;
	}
	qsort(got->rows, got->n, sizeof(*got->rows), row_cmp);
	qsort(want.rows, want.n, sizeof(*want.rows), row_cmp);
	for (i = 0; i < want.n; i++) {
		assert_int_equal(got->rows[i].level, want.rows[i].level);
		assert_int_equal(got->rows[i].first, want.rows[i].first);
		assert_int_equal(got->rows[i].last, want.rows[i].last);
		assert_int_equal(got->rows[i].len, want.rows[i].len);
		assert_memory_equal(got->rows[i].blob, want.rows[i].blob, want.rows[i].len);
	}
	table_fini(&want);
}

/* ---- random groups ------------------------------------------------------ */

/* A gap between neighbours: equal ts, ns, us, ms and up to seconds, in a
 * mix that the group's `shape` picks (so levels come and go). */
static int64_t gap(int shape)
{
	switch (shape == 4 ? rnd() % 4 : (uint64_t)shape) {
	case 0:
		return (int64_t)(rnd() % 300);
	case 1:
		return (int64_t)(rnd() % 40000);
	case 2:
		return rnd() % 8 == 0 ? (int64_t)(rnd() % (UINT64_C(1) << (20 + rnd() % 14))) : (int64_t)(rnd() % 2000);
	default:
		return rnd() % 3 == 0 ? 0 : (int64_t)(rnd() % 1000000);
	}
}

/* Item i of a group: a slice that ends before the next starts (or,
 * rarely, never ends: open, to the trace end), or a counter point. */
static void make_item(struct lod_item *x, int64_t ts, int counters, int64_t trace_end)
{
	memset(x, 0, sizeof(*x));
	x->ts = ts;
	if (counters) {
		x->end = ts;
		x->is_int = (int)(rnd() & 1);
		if (x->is_int)
			x->ivalue = rnd() % 40 == 0 ? (rnd() & 1 ? INT64_MAX : INT64_MIN) : (int64_t)(rnd() % 1000) - 500;
		else
			x->value = (double)(int64_t)(rnd() % 100000) / 7.0 - 5000;
		x->value = x->is_int ? (double)x->ivalue : x->value;
		return;
	}
	x->name = (uint32_t)(rnd() % 9);
	x->cat = (uint32_t)(rnd() % 3);
	x->open = rnd() % 5 == 0;
	x->end = x->open ? trace_end : ts + (int64_t)(rnd() % 5000);
}

/* What a later commit may make of the last item: the slice closes, or its
 * end moves with the trace end, or (rarely) it is not there but a later
 * one is (ts moves, never before the item before); a point's value
 * changes. */
static void replace_last(struct lod_item *items, uint64_t n, int counters, int64_t *trace_end)
{
	struct lod_item *x = &items[n - 1];
	int64_t floor = n >= 2 ? items[n - 2].ts : x->ts;

	*trace_end += (int64_t)(rnd() % 100000);
	switch (rnd() % 4) {
	case 0:
		make_item(x, floor + (int64_t)(rnd() % 3000000), counters, *trace_end);
		break;
	case 1:
		if (!counters) {
			x->open = 0;
			x->end = x->ts + (int64_t)(rnd() % 200000);
			break;
		}
		/* fall through */
	default:
		make_item(x, x->ts, counters, *trace_end);
		break;
	}
	if (x->ts > *trace_end)
		*trace_end = x->ts;
	if (x->open)
		x->end = *trace_end;
}

/*
 * Grows one group of n items in random commits: each appends a random
 * count (often 1, sometimes many, now and then none) and may first replace
 * the last item; after each, the sink's rows equal one commit's.
 */
static void grow_group(uint64_t n, int counters, int shape, uint64_t *level_changes)
{
	struct lod_key key = { 3 + (int64_t)(rnd() % 5), counters ? 0 : (int64_t)(rnd() % 4) };
	struct lod_item *items = calloc(n + 1, sizeof(*items));
	struct lod_sink sink;
	struct lod_state st;
	struct table t;
	int64_t ts = (int64_t)(rnd() % (UINT64_C(1) << 40)) - (INT64_C(1) << 39), trace_end = ts;
	uint64_t have = 0, levels = 0, before;

	assert_non_null(items);
	table_init(&t, &key);
	t.items = items;
	sink = (struct lod_sink){ &t, t_put, t_drop, t_items };
	lod_state_init(&st, &key, counters);
	while (have < n) {
		uint64_t from = have, m, k;

		if (have > 0 && rnd() % 3 == 0) {
			replace_last(items, have, counters, &trace_end);
			from = have - 1;
			if (items[from].ts > ts)
				ts = items[from].ts;
		}
		switch (rnd() % 4) {
		case 0:
			m = rnd() % 3;
			break;
		case 1:
			m = rnd() % 40;
			break;
		case 2:
			m = rnd() % 700;
			break;
		default:
			m = 1;
			break;
		}
		if (m > n - have)
			m = n - have;
		for (k = 0; k < m; k++) {
			if (have + k > 0)
				ts += gap(shape);
			make_item(&items[have + k], ts, counters, trace_end);
			if (ts > trace_end)
				trace_end = ts;
		}
		have += m;
		t.nitems = have;
		t.below = from;
		before = levels;
		assert_int_equal(lod_commit(&st, items + from, from, (size_t)(have - from), &sink, &levels), 0);
		*level_changes += levels != before;
		check_equal(&t, items, have, counters, levels);
	}
	lod_state_fini(&st);
	table_fini(&t);
	free(items);
}

static void test_random_slices(void **state)
{
	uint64_t changes = 0;
	int g;

	(void)state;
	rng_state = 11;
	for (g = 0; g < 60; g++)
		grow_group(1 + rnd() % (g % 3 == 0 ? 6000 : 900), 0, g % 5, &changes);
	assert_true(changes > 60); /* the levels stored did change as groups grew */
}

static void test_random_counters(void **state)
{
	uint64_t changes = 0;
	int g;

	(void)state;
	rng_state = 12;
	for (g = 0; g < 60; g++)
		grow_group(1 + rnd() % (g % 3 == 0 ? 6000 : 900), 1, g % 5, &changes);
	assert_true(changes > 60);
}

/* ---- shapes chosen ------------------------------------------------------ */

/*
 * A group whose spacing changes as it grows: dense (10 ns apart), then
 * sparse (a few us), then dense again, so the set the rule decides at
 * the doublings changes several times, levels entering (made again from
 * item 0, through the sink's items) and leaving (dropped). Committed an
 * item at a time and in odd pieces.
 */
static void test_doublings(void **state)
{
	const uint64_t n = 40000;
	struct lod_item *items = calloc(n, sizeof(*items));
	struct lod_key key = { 1, 0 };
	uint64_t i, levels = 0, prev = 0, changes = 0, entered = 0, left = 0;
	int pass;

	(void)state;
	assert_non_null(items);
	rng_state = 5;
	for (i = 0; i < n; i++) {
		int64_t step = i < 300 ? 10 : i < 5000 ? 3000 + (int64_t)(rnd() % 3000) : i < 20000 ? 7 : 1 << 16;

		items[i].ts = i == 0 ? 0 : items[i - 1].ts + step;
		items[i].end = items[i].ts + (int64_t)(rnd() % 50);
		items[i].name = (uint32_t)(i % 7);
	}
	for (pass = 0; pass < 2; pass++) {
		struct table t;
		struct lod_state st;
		const struct lod_sink sink = { &t, t_put, t_drop, t_items };
		uint64_t have = 0;

		table_init(&t, &key);
		t.items = items;
		lod_state_init(&st, &key, 0);
		while (have < n) {
			uint64_t m = pass == 0 ? 1 : 1 + rnd() % 1500;

			if (m > n - have)
				m = n - have;
			t.nitems = have + m;
			t.below = have;
			assert_int_equal(lod_commit(&st, items + have, have, (size_t)m, &sink, &levels), 0);
			have += m;
			if (levels != prev) {
				changes++;
				entered += (levels & ~prev) != 0;
				left += (prev & ~levels) != 0;
			}
			prev = levels;
			if (pass == 1 || (have & (have - 1)) == 0 || have == n)
				check_equal(&t, items, have, 0, levels);
		}
		assert_true(t.fetched > 0); /* levels entered after item 0 were made again */
		lod_state_fini(&st);
		table_fini(&t);
	}
	assert_true(changes >= 4);
	assert_true(entered >= 2);
	assert_true(left >= 1);
	free(items);
}

/*
 * A commit hands out only what changed: none without items, none when the
 * last item is replaced by itself, and, between doublings, no more than a
 * row per level stored, a row that filled and a row moved (dropped).
 */
static void test_few_ops(void **state)
{
	const uint64_t n = 20000;
	struct lod_item *items = calloc(n, sizeof(*items));
	struct lod_key key = { 2, 1 };
	struct lod_state st;
	struct table t;
	const struct lod_sink sink = { &t, t_put, t_drop, t_items };
	uint64_t i, levels = 0, ops;

	(void)state;
	assert_non_null(items);
	rng_state = 9;
	for (i = 0; i < n; i++) {
		items[i].ts = i == 0 ? 1000 : items[i - 1].ts + (int64_t)(rnd() % 3000);
		items[i].end = items[i].ts + 100;
	}
	table_init(&t, &key);
	t.items = items;
	lod_state_init(&st, &key, 0);
	t.nitems = 5000;
	assert_int_equal(lod_commit(&st, items, 0, 5000, &sink, &levels), 0);
	assert_true(levels != 0);
	ops = t.ops;
	assert_int_equal(lod_commit(&st, items + 5000, 5000, 0, &sink, &levels), 0);
	assert_int_equal(t.ops, ops);
	assert_int_equal(lod_commit(&st, items + 4999, 4999, 1, &sink, &levels), 0);
	assert_int_equal(t.ops, ops);
	for (i = 5000; i < 8000; i++) { /* no doubling between 4096 and 8192 */
		ops = t.ops;
		t.nitems = i + 1;
		assert_int_equal(lod_commit(&st, items + i, i, 1, &sink, &levels), 0);
		assert_true(t.ops - ops <= (uint64_t)__builtin_popcountll(levels) * 3);
	}
	assert_int_equal(t.fetched, 0);
	check_equal(&t, items, 8000, 0, levels);
	lod_state_fini(&st);
	table_fini(&t);
	free(items);
}

/* Items out of ts order, or a commit that starts elsewhere than the end,
 * are refused. */
static void test_refused(void **state)
{
	struct lod_item items[3] = { { .ts = 100, .end = 100 }, { .ts = 50, .end = 60 }, { .ts = 200, .end = 300 } };
	struct lod_key key = { 1, 0 };
	struct lod_state st;
	struct table t;
	const struct lod_sink sink = { &t, t_put, t_drop, t_items };
	uint64_t levels;

	(void)state;
	table_init(&t, &key);
	lod_state_init(&st, &key, 0);
	assert_int_equal(lod_commit(&st, items, 0, 2, &sink, &levels), -1);
	lod_state_fini(&st);
	lod_state_init(&st, &key, 0);
	assert_int_equal(lod_commit(&st, items, 0, 1, &sink, &levels), 0);
	assert_int_equal(lod_commit(&st, items + 2, 3, 1, &sink, &levels), -1);
	lod_state_fini(&st);
	table_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_slices),
		cmocka_unit_test(test_random_counters),
		cmocka_unit_test(test_doublings),
		cmocka_unit_test(test_few_ops),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
