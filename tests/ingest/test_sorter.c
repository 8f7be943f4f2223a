/*
 * Unit tests for the sorter (ingest/sorter.c): whatever the budget and
 * wherever the checkpoints fall, the batches handed on are every event
 * appended, in the order qsort gives by (ts, seq) (or, by_thread, by
 * (thread, ts, seq)), each batch ending at a change of ts; a spill that cannot be written fails cleanly. The static
 * sort is reached by including the file.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../ingest/sorter.c"

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005u + 1442695040888963407u;
	return rnd_state >> 33;
}

/* ---- sort_events: the same total order as qsort, whatever the input ---- */

static void t_sort_case(struct mdl_ev *ev, size_t n)
{
	struct mdl_ev *want = malloc((n + 1) * sizeof(*want));
	size_t i;

	assert_non_null(want);
	for (i = 0; i < n; i++)
		ev[i].seq = (uint32_t)i; /* file order */
	memcpy(want, ev, n * sizeof(*want));
	qsort(want, n, sizeof(*want), ev_cmp);
	assert_int_equal(sort_events(ev, n, 0), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(ev[i].ts, want[i].ts);
		assert_int_equal(ev[i].seq, want[i].seq);
	}
	free(want);
}

static void test_sort_events(void **state)
{
	enum { N = 5000 };
	struct mdl_ev *ev = calloc(N, sizeof(*ev));
	uint64_t x = 12345;
	size_t i, n;

	(void)state;
	assert_non_null(ev);
	for (n = 0; n <= N; n = n ? n * 5 : 1) {
		for (i = 0; i < n; i++) /* sorted, with equal times */
			ev[i].ts = (int64_t)(i / 3);
		t_sort_case(ev, n);
		for (i = 0; i < n; i++) /* reversed: everything out of order */
			ev[i].ts = (int64_t)(n - i);
		t_sort_case(ev, n);
		for (i = 0; i < n; i++) /* a lone early spike */
			ev[i].ts = i == 1 ? 1000000 : (int64_t)i;
		t_sort_case(ev, n);
		for (i = 0; i < n; i++) /* the outermost begins appended at the end */
			ev[i].ts = i + 10 >= n ? (int64_t)(n - i) * 7 : (int64_t)(i * 3);
		t_sort_case(ev, n);
		for (i = 0; i < n; i++) { /* random, many ties */
			x = x * 6364136223846793005u + 1442695040888963407u;
			ev[i].ts = (int64_t)(x >> 58);
		}
		t_sort_case(ev, n);
		for (i = 0; i < n; i++) /* 8 threads' runs interleaved with jitter */
			ev[i].ts = (int64_t)(i * 10 + (i % 8) * 25 - (i % 13 == 0 ? 40 : 0));
		t_sort_case(ev, n);
	}
	free(ev);
}

/* ---- batches through a model ------------------------------------------- */

enum pattern { NEARLY_SORTED, REVERSED, EQUAL_TS, CALLS_AT_EXIT, BY_THREAD, PATTERNS };

/* The i-th of n timestamps of a pattern (CALLS_AT_EXIT makes its own). */
static int64_t t_ts(enum pattern p, size_t i, size_t n)
{
	switch (p) {
	case NEARLY_SORTED: /* in order, with a few late and early ones */
		return (int64_t)(i * 4) + (rnd() % 64 == 0 ? (int64_t)(rnd() % 4000) - 2000 : 0);
	case REVERSED: /* from the far end of int64_t, below zero */
		return (int64_t)(n - i) - (i % 2 ? INT64_MAX : 0);
	default: /* runs of one ts longer than a batch, with a few others */
		return (int64_t)(i / 100000 * 10 + (rnd() % 4 == 0 ? 5 : 0));
	}
}

/* Appends n events to m as writers that emit a scope when it exits do:
 * complete events, appended when their call exits, with the seq taken at
 * the enter, on a few threads taking turns. Checkpoints fall between steps
 * at random. */
static void t_fill_calls(struct model *m, size_t n)
{
	struct mdl_ev stack[4][64], *e;
	size_t depth[4] = { 0 }, made = 0, t;
	int64_t now = 0;

	while (made < n) {
		t = rnd() % 4;
		now += (int64_t)(rnd() % 3); /* often equal times */
		if (depth[t] < 64 && (depth[t] == 0 || rnd() % 2 == 0)) {
			e = &stack[t][depth[t]++];
			memset(e, 0, sizeof(*e));
			e->ts = now;
			e->thread = (uint32_t)t;
			e->kind = MDL_EV_COMPLETE;
			e->seq = m->seq++;
			continue;
		}
		stack[t][--depth[t]].extra = (uint64_t)now;
		assert_non_null(e = model_event(m));
		*e = stack[t][depth[t]]; /* with the seq of its enter */
		made++;
		if (rnd() % 5 == 0)
			model_checkpoint(m);
	}
}

/* A by_thread model (model.h): five threads one after another, not in
 * thread order, each starting at its own time, their times overlapping,
 * nearly in order with ties and a few out of place (a run moves back in
 * time at each new thread). */
static void t_fill_by_thread(struct model *m, size_t n)
{
	struct mdl_ev *e;
	size_t i, t;

	m->by_thread = 1;
	for (t = 0; t < 5; t++) {
		int64_t now = (int64_t)(rnd() % 1000);

		for (i = t * n / 5; i < (t + 1) * n / 5; i++) {
			assert_non_null(e = model_event(m));
			now += (int64_t)(rnd() % 3);
			e->ts = now + (rnd() % 50 == 0 ? (int64_t)(rnd() % 40) - 20 : 0);
			e->thread = (uint32_t)((t * 3 + 1) % 5);
			e->kind = (uint8_t)(rnd() % MDL_EV_KIND_COUNT);
			e->name = (uint32_t)(rnd() % 3000);
			e->args = (uint32_t)i;
			if (rnd() % 3 == 0)
				model_checkpoint(m);
		}
	}
}

static void t_fill(struct model *m, enum pattern p, size_t n)
{
	struct mdl_ev *e;
	size_t i;

	if (p == CALLS_AT_EXIT) {
		t_fill_calls(m, n);
		return;
	}
	if (p == BY_THREAD) {
		t_fill_by_thread(m, n);
		return;
	}
	for (i = 0; i < n; i++) {
		assert_non_null(e = model_event(m));
		e->ts = t_ts(p, i, n);
		e->kind = (uint8_t)(rnd() % MDL_EV_KIND_COUNT);
		e->extra = rnd() % 4 == 0 ? (uint64_t)-(int64_t)(rnd() % 1000) : rnd() << (rnd() % 32);
		e->thread = (uint32_t)(rnd() % 5);
		/* every field survives a spill, the extremes too */
		e->cat = rnd() % 8 == 0 ? UINT32_MAX : (uint32_t)rnd();
		e->name = (uint32_t)(rnd() % 3000);
		e->args = rnd() % 8 == 0 ? UINT32_MAX - (uint32_t)(rnd() % 4) : (uint32_t)(i * 2 + rnd() % 5);
		e->nargs = (uint8_t)rnd();
		/* a clock faster than 1 GHz: ties in ts broken by sub */
		e->sub = rnd() % 4 == 0 ? (uint8_t)rnd() : 0;
		e->end_sub = rnd() % 4 == 0 ? (uint8_t)rnd() : 0;
		if (rnd() % 3 == 0) /* checkpoints at random points */
			model_checkpoint(m);
	}
}

/* Every event the model was given, in the order the sorter must keep. */
static struct mdl_ev *t_want(const struct mdl_ev *all, size_t n, int by_thread)
{
	struct mdl_ev *want = malloc((n + 1) * sizeof(*want));

	assert_non_null(want);
	if (n > 0) /* all is NULL in an empty model */
		memcpy(want, all, n * sizeof(*want));
	qsort(want, n, sizeof(*want), by_thread ? ev_cmp_by_thread : ev_cmp);
	return want;
}

/* Fills a model without a sorter, then one with a sorter of this budget,
 * from the same seed: the second's batches must be the first's events,
 * sorted, and end at changes of ts. */
static void t_case(const char *dir, enum pattern p, size_t n, size_t budget)
{
	struct model m, ref;
	struct sorter *so;
	struct mdl_ev *want, *ev;
	uint64_t seed = rnd_state;
	size_t got = 0;
	long k;

	assert_int_equal(model_init(&ref), 0);
	t_fill(&ref, p, n); /* no spill hook: every event stays */
	assert_int_equal(ref.events.len, n);
	want = t_want(ref.events.data, n, ref.by_thread);
	rnd_state = seed; /* the same events again, through the sorter */
	assert_int_equal(model_init(&m), 0);
	assert_non_null(so = sorter_attach(&m, dir, budget));
	t_fill(&m, p, n);
	assert_int_equal(m.events_total, n);
	assert_false(sorter_failed(so, NULL));
	assert_int_equal(sorter_finish(so), 0);
	while ((k = sorter_next(so, &ev)) > 0) {
		assert_true(got + (size_t)k <= n);
		if (memcmp(ev, want + got, (size_t)k * sizeof(*ev)) != 0)
			fail_msg("pattern %d, %zu events, budget %zu: batch at %zu out of order", p, n, budget, got);
		if (got + (size_t)k < n && want[got + (size_t)k].ts == ev[k - 1].ts)
			fail_msg("pattern %d, budget %zu: a batch ends inside ts %lld", p, budget, (long long)ev[k - 1].ts);
		ev[0].name = 7; /* batches are writable */
		got += (size_t)k;
	}
	assert_int_equal(k, 0);
	assert_int_equal(got, n);
	assert_int_equal(sorter_next(so, &ev), 0);
	sorter_free(so);
	assert_null(m.spill);
	model_fini(&m);
	model_fini(&ref);
	free(want);
}

static void test_batches(void **state)
{
	static const size_t budgets[] = { 1, 7, 1000, SORTER_BUDGET };
	char dir[] = "/tmp/ts-sorter-XXXXXX";
	size_t b, p, n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	rnd_state = 42;
	for (p = 0; p < PATTERNS; p++) {
		for (b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
			for (n = 0; n <= 3000; n = n ? n * 10 : 3)
				t_case(dir, (enum pattern)p, n, budgets[b]);
			if (budgets[b] != 1) /* batches of 64K and more: ties past a batch */
				t_case(dir, (enum pattern)p, 200000, budgets[b]);
		}
	}
	assert_int_equal(rmdir(dir), 0); /* the spill files were unlinked */
}

/* ---- failure ----------------------------------------------------------- */

static void test_spill_unwritable(void **state)
{
	struct model m;
	struct sorter *so;
	struct mdl_ev *ev;
	const char *why = NULL;
	size_t i;

	(void)state;
	assert_int_equal(model_init(&m), 0);
	assert_non_null(so = sorter_attach(&m, "/nonexistent/ts-sorter", 2));
	for (i = 0; i < 5; i++) {
		assert_non_null(model_event(&m));
		model_checkpoint(&m);
	}
	assert_true(sorter_failed(so, &why));
	assert_non_null(why);
	assert_non_null(strstr(why, "/nonexistent/ts-sorter"));
	assert_non_null(strstr(why, strerror(ENOENT)));
	/* the failed run's 2 events went with it (ingest fails with the spill's
	 * sentence); the spill is off, and the events after it stay */
	assert_int_equal(m.events.len, 3);
	assert_int_equal(m.events_total, 5);
	assert_int_equal(sorter_finish(so), -1);
	assert_int_equal(sorter_next(so, &ev), -1);
	sorter_free(so);
	model_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sort_events),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_spill_unwritable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
