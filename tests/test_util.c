/*
 * Unit tests for the ingest containers (ingest/util.c): the map finds what
 * was put whatever its growth, and pruning drops exactly the closed
 * entries (val MDL_NONE), keeps the others' values and order, gives memory
 * back, and leaves a map that still finds and inserts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../ingest/util.h"

enum { N = 200000 };

/* Entry i's value: every third entry is closed. */
static uint32_t val_of(uint64_t i)
{
	return i % 3 == 0 ? MDL_NONE : (uint32_t)(i * 7);
}

static void test_kmap_prune(void **state)
{
	struct kmap m;
	struct kmap_entry *e;
	uint64_t i;
	size_t live = 0, cap;

	(void)state;
	kmap_init(&m);
	for (i = 0; i < N; i++) {
		assert_non_null(e = kmap_get(&m, i, i * 3, 5, i ^ 99));
		assert_int_equal(e->val, MDL_NONE);
		e->val = val_of(i);
		live += val_of(i) != MDL_NONE;
	}
	cap = m.ents.cap;
	kmap_prune(&m);
	assert_int_equal(m.ents.len, live);
	assert_true(m.ents.cap < cap);
	for (i = 0; i < N; i++) {
		e = kmap_find(&m, i, i * 3, 5, i ^ 99);
		if (val_of(i) == MDL_NONE) {
			assert_null(e);
		} else {
			assert_non_null(e);
			assert_int_equal(e->val, val_of(i));
		}
	}
	/* order kept: entries in insertion order */
	for (i = 1; i < m.ents.len; i++)
		assert_true(VEC_AT(&m.ents, struct kmap_entry, i - 1)->k[0] < VEC_AT(&m.ents, struct kmap_entry, i)->k[0]);
	/* a pruned key comes back as new; others grow the map again */
	assert_non_null(e = kmap_get(&m, 0, 0, 5, 99));
	assert_int_equal(e->val, MDL_NONE);
	for (i = N; i < 2 * N; i++)
		assert_non_null(kmap_get(&m, i, i * 3, 5, i ^ 99));
	assert_int_equal(kmap_find(&m, 1, 3, 5, 1 ^ 99)->val, val_of(1));
	kmap_prune(&m); /* everything new is closed */
	assert_int_equal(m.ents.len, live);
	kmap_fini(&m);
}

static void test_kmap_prune_empty(void **state)
{
	struct kmap m;

	(void)state;
	kmap_init(&m);
	kmap_prune(&m); /* never used */
	assert_null(kmap_find(&m, 1, 2, 3, 4));
	assert_non_null(kmap_get(&m, 1, 2, 3, 4));
	kmap_prune(&m); /* only a closed entry */
	assert_int_equal(m.ents.len, 0);
	assert_null(kmap_find(&m, 1, 2, 3, 4));
	kmap_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kmap_prune),
		cmocka_unit_test(test_kmap_prune_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
