/*
 * Unit tests for the name index's order (ingest/names.c, order_name): a
 * name's notes come about in time order within a thread, and thread after
 * thread for an XRay log; whatever their order, they leave in (ts, id)
 * order, as qsort gives it. The static function is reached by including
 * the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../ingest/names.c"

static uint64_t rnd_state = 7;

static uint64_t rnd(uint64_t n)
{
	rnd_state = rnd_state * 6364136223846793005u + 1442695040888963407u;
	return (rnd_state >> 33) % n;
}

/* Sorts v as order_name does and as qsort does, and compares. */
static void t_case(const char *what, struct name_ent *v, size_t n, struct name_ent **tmp, size_t *tmpcap)
{
	struct name_ent *want = malloc((n + 1) * sizeof(*want));
	size_t i;

	assert_non_null(want);
	memcpy(want, v, n * sizeof(*v));
	qsort(want, n, sizeof(*want), name_ent_cmp);
	assert_int_equal(order_name(v, n, tmp, tmpcap), 0);
	for (i = 0; i < n; i++)
		if (v[i].ts != want[i].ts || v[i].id != want[i].id || v[i].dur != want[i].dur)
			fail_msg("%s, %zu notes: note %zu is (%lld, %llu), want (%lld, %llu)", what, n, i,
				 (long long)v[i].ts, (unsigned long long)v[i].id, (long long)want[i].ts,
				 (unsigned long long)want[i].id);
	free(want);
}

/* n notes of `threads` threads one after another, each in about time
 * order: a call finishing after the calls inside it (up to `reach` notes
 * back), ties in ts on other threads. */
static void t_threads(struct name_ent *v, size_t n, size_t threads, size_t reach)
{
	size_t i, t, per = n / threads + 1;

	for (i = 0; i < n; i++) {
		t = i / per;
		v[i].ts = (int64_t)((i % per) * 10 + t * 3 + (t % 2 ? 0 : 1000));
		v[i].id = (uint64_t)(t * 1000000 + i % per + 1);
		v[i].dur = (int64_t)rnd(100) - 1;
		if (reach > 0 && i >= reach && rnd(50) == 0) { /* an enclosing call, noted late */
			v[i].ts = v[i - rnd(reach)].ts - 1;
		}
	}
}

static void test_order_name(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 31, 32, 33, 1000, 50000 };
	struct name_ent *v, *tmp = NULL;
	size_t tmpcap = 0, s, i, n;

	(void)state;
	v = malloc(50000 * sizeof(*v));
	assert_non_null(v);
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		n = sizes[s];
		t_threads(v, n, 1, 0);
		t_case("in order", v, n, &tmp, &tmpcap);
		t_threads(v, n, 1, 10);
		t_case("one thread, calls noted as they end", v, n, &tmp, &tmpcap);
		t_threads(v, n, 8, 10);
		t_case("eight threads one after another", v, n, &tmp, &tmpcap);
		t_threads(v, n, 3, 500);
		t_case("calls enclosing hundreds", v, n, &tmp, &tmpcap);
		for (i = 0; i < n; i++) { /* reversed: a run per note, then qsort */
			v[i].ts = (int64_t)(n - i);
			v[i].id = i;
			v[i].dur = 0;
		}
		t_case("reversed", v, n, &tmp, &tmpcap);
		for (i = 0; i < n; i++) { /* random, with equal ts */
			v[i].ts = (int64_t)rnd(64);
			v[i].id = rnd(1u << 20) << 20 | i; /* unique: ties in ts only */
			v[i].dur = 1;
		}
		t_case("random", v, n, &tmp, &tmpcap);
	}
	free(v);
	free(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
