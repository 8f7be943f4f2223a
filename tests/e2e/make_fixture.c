/*
 * make_fixture: writes the small FXT archive that the viewer's end-to-end
 * test (tests/e2e/viewer.test.mjs) knows by heart, so that it can check
 * exact names, places and arguments on screen.
 *
 *   make_fixture [--damaged] OUT.fxt
 *
 * Content (1 tick = 1 ns; every time below is in ns):
 *   process "fixture-proc" (pid 100)
 *     thread "main-thread" (tid 101)
 *       Outer        [0, 8000000)        depth 0, category app
 *       KnownSlice   [1000000, 3000000)  depth 1, category test, args
 *                    answer=42, label="hello", ratio=0.5, big=2^64-1;
 *                    a flow (id 7) leaves it at 2000000
 *       ChildA       [1200000, 1700000)  depth 2
 *       After        [4000000, 6000000)  depth 1
 *       Marker       instant at 7000000  depth 1
 *     thread "worker-thread" (tid 102)
 *       <img src=x onerror=alert(1)>  [2500000, 5000000) depth 0, category
 *                    xss, arg html="<b>bold</b>"; the flow arrives at 3000000
 *     async "Download" (category net) [500000, 7000000)
 *     counter "queue_depth" series "items": 0, 1, 2, ... every ms
 *   process "render-proc" (pid 200)
 *     thread "render-main" (tid 201): Frame i at i ms, 400 us long, i = 0..9
 *   context switches on cpu 0 and 1, one log message at 2000000, and the
 *   trace ends at 10000000.
 * With --damaged, an end event with nothing open follows (unmatched_ends = 1),
 * so the viewer's diagnostics banner shows.
 *
 * With --deep, another trace: process "deep-proc" (pid 300), thread
 * "deep-main" (tid 301) with DEEP_STACKS stacks 25 deep; stack k starts at
 * k * 1000 ns and its slice at depth d (0..23) is "s<k>_d<d>" over
 * [k*1000 + 4d, k*1000 + 500 - 4d); depth 24 holds leaf_a [k*1000+100,
 * +151), leaf_b [+160, +211) and leaf_c [+220, +300); cpu 0 runs tid 301
 * over [k*1000, +200) and [+350, +500), tid 302 over [+200, +350). Whole,
 * the trace is
 * 2 ms of stacks far under a pixel: the server summarises them.
 *
 * With --tiny, three slices "a" [0, 100), "b" [100, 200), "c" [200, 300)
 * on one thread (pid 400, tid 401): a trace 300 ns long.
 *
 * Build: cc -std=c11 -O2 -o build/make_fixture tests/e2e/make_fixture.c tests/fxt_writer.c
 * Exits 0, 1 on I/O error, 2 on usage.
 */
#include "../fxt_writer.h"

#include <stdio.h>
#include <string.h>

enum { MS = 1000000 };

/* Thread table indexes. */
enum { T_MAIN = 1, T_WORKER = 2, T_RENDER = 3 };

static void names(struct fxtw *w)
{
	struct fxtw_arg arg;

	fxtw_kernel_object(w, 1, FXTW_INL("fixture-proc"), 100, NULL, 0);
	fxtw_kernel_object(w, 1, FXTW_INL("render-proc"), 200, NULL, 0);
	arg = fxtw_arg_koid(FXTW_INL("process"), 100);
	fxtw_kernel_object(w, 2, FXTW_INL("main-thread"), 101, &arg, 1);
	fxtw_kernel_object(w, 2, FXTW_INL("worker-thread"), 102, &arg, 1);
	arg = fxtw_arg_koid(FXTW_INL("process"), 200);
	fxtw_kernel_object(w, 2, FXTW_INL("render-main"), 201, &arg, 1);
	fxtw_thread(w, T_MAIN, 100, 101);
	fxtw_thread(w, T_WORKER, 100, 102);
	fxtw_thread(w, T_RENDER, 200, 201);
}

static void main_thread(struct fxtw *w)
{
	const struct fxtw_arg args[] = {
		fxtw_arg_i32(FXTW_INL("answer"), 42),
		fxtw_arg_str(FXTW_INL("label"), FXTW_INL("hello")),
		fxtw_arg_double(FXTW_INL("ratio"), 0.5),
		fxtw_arg_u64(FXTW_INL("big"), UINT64_MAX),
	};
	const struct fxtw_thr th = FXTW_TIDX(T_MAIN);

	fxtw_begin(w, th, FXTW_INL("app"), FXTW_INL("Outer"), 0, NULL, 0);
	fxtw_complete(w, th, FXTW_INL("test"), FXTW_INL("KnownSlice"), 1 * MS, 3 * MS, args, 4);
	fxtw_complete(w, th, FXTW_INL("test"), FXTW_INL("ChildA"), 1200000, 1700000, NULL, 0);
	fxtw_flow(w, 8, th, FXTW_INL("flow"), FXTW_INL("handoff"), 2 * MS, 7);
	fxtw_complete(w, th, FXTW_INL("app"), FXTW_INL("After"), 4 * MS, 6 * MS, NULL, 0);
	fxtw_instant(w, th, FXTW_INL("app"), FXTW_INL("Marker"), 7 * MS, NULL, 0);
	fxtw_end(w, th, FXTW_INL("app"), FXTW_INL("Outer"), 8 * MS, NULL, 0);
}

static void worker_thread(struct fxtw *w)
{
	const struct fxtw_arg arg = fxtw_arg_str(FXTW_INL("html"), FXTW_INL("<b>bold</b>"));
	const struct fxtw_thr th = FXTW_TIDX(T_WORKER);

	fxtw_complete(w, th, FXTW_INL("xss"), FXTW_INL("<img src=x onerror=alert(1)>"), 2500000, 5 * MS, &arg, 1);
	fxtw_flow(w, 10, th, FXTW_INL("flow"), FXTW_INL("handoff"), 3 * MS, 7);
	fxtw_async(w, 5, th, FXTW_INL("net"), FXTW_INL("Download"), 500000, 1, NULL, 0);
	fxtw_async(w, 7, th, FXTW_INL("net"), FXTW_INL("Download"), 7 * MS, 1, NULL, 0);
}

static void others(struct fxtw *w)
{
	struct fxtw_arg a;
	int i;

	for (i = 0; i < 10; i++) {
		fxtw_complete(w, FXTW_TIDX(T_RENDER), FXTW_INL("gfx"), FXTW_INL("Frame"), (uint64_t)i * MS,
			      (uint64_t)i * MS + 400000, NULL, 0);
		a = fxtw_arg_i64(FXTW_INL("items"), i % 4 + i / 3);
		fxtw_counter(w, FXTW_TIDX(T_MAIN), FXTW_INL("stats"), FXTW_INL("queue_depth"), (uint64_t)i * MS, 1,
			     &a, 1);
	}
	fxtw_context_switch(w, 0, 3, 0, 0, 101, NULL, 0);
	fxtw_context_switch(w, 0, 3, 3 * MS, 101, 201, NULL, 0);
	fxtw_context_switch(w, 0, 2, 6 * MS, 201, 102, NULL, 0);
	fxtw_context_switch(w, 0, 3, 9 * MS, 102, 101, NULL, 0);
	fxtw_context_switch(w, 1, 3, 1 * MS, 0, 102, NULL, 0);
	fxtw_context_switch(w, 1, 4, 5 * MS, 102, 201, NULL, 0);
	fxtw_log(w, FXTW_TIDX(T_MAIN), 2 * MS, "hello from the log");
	fxtw_instant(w, FXTW_TIDX(T_RENDER), FXTW_INL("gfx"), FXTW_INL("End"), 10 * MS, NULL, 0);
}

enum { DEEP_STACKS = 2000, DEEP_DEPTH = 24 };

static void deep(struct fxtw *w)
{
	const struct fxtw_thr th = FXTW_TIDX(1);
	char name[32];
	uint64_t base;
	int k;
	int d;

	fxtw_kernel_object(w, 1, FXTW_INL("deep-proc"), 300, NULL, 0);
	fxtw_thread(w, 1, 300, 301);
	for (k = 0; k < DEEP_STACKS; k++) {
		base = (uint64_t)k * 1000;
		for (d = 0; d < DEEP_DEPTH; d++) {
			snprintf(name, sizeof(name), "s%d_d%d", k, d);
			fxtw_begin(w, th, FXTW_INL("deep"), FXTW_INL(name), base + 4 * (uint64_t)d, NULL, 0);
		}
		fxtw_complete(w, th, FXTW_INL("deep"), FXTW_INL("leaf_a"), base + 100, base + 151, NULL, 0);
		fxtw_complete(w, th, FXTW_INL("deep"), FXTW_INL("leaf_b"), base + 160, base + 211, NULL, 0);
		fxtw_complete(w, th, FXTW_INL("deep"), FXTW_INL("leaf_c"), base + 220, base + 300, NULL, 0);
		for (d = DEEP_DEPTH - 1; d >= 0; d--) {
			snprintf(name, sizeof(name), "s%d_d%d", k, d);
			fxtw_end(w, th, FXTW_INL("deep"), FXTW_INL(name), base + 500 - 4 * (uint64_t)d, NULL, 0);
		}
		/* cpu 0 runs tid 301 for the stack, lends the cpu to 302 for a
		 * while, then nothing (tid 0): 6000 runs, more than the server
		 * sends as an exact list, so the whole view summarises them */
		fxtw_context_switch(w, 0, 3, base, 0, 301, NULL, 0);
		fxtw_context_switch(w, 0, 3, base + 200, 301, 302, NULL, 0);
		fxtw_context_switch(w, 0, 3, base + 350, 302, 301, NULL, 0);
		fxtw_context_switch(w, 0, 3, base + 500, 301, 0, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	struct fxtw w;
	int damaged = argc == 3 && strcmp(argv[1], "--damaged") == 0;
	int deep_only = argc == 3 && strcmp(argv[1], "--deep") == 0;
	int tiny = argc == 3 && strcmp(argv[1], "--tiny") == 0;
	int rc = 0;

	if (argc != 2 && !damaged && !deep_only && !tiny) {
		fprintf(stderr, "usage: make_fixture [--damaged|--deep|--tiny] OUT.fxt\n");
		return 2;
	}
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "fixture");
	fxtw_init_record(&w, 1000000000);
	if (deep_only) {
		deep(&w);
	} else if (tiny) {
		fxtw_thread(&w, 1, 400, 401);
		fxtw_complete(&w, FXTW_TIDX(1), FXTW_INL("t"), FXTW_INL("a"), 0, 100, NULL, 0);
		fxtw_complete(&w, FXTW_TIDX(1), FXTW_INL("t"), FXTW_INL("b"), 100, 200, NULL, 0);
		fxtw_complete(&w, FXTW_TIDX(1), FXTW_INL("t"), FXTW_INL("c"), 200, 300, NULL, 0);
	} else {
		names(&w);
		main_thread(&w);
		worker_thread(&w);
		others(&w);
	}
	if (damaged)
		fxtw_end(&w, FXTW_TIDX(T_RENDER), FXTW_INL("gfx"), FXTW_INL("Stray"), 9500000, NULL, 0);
	if (fxtw_save(&w, argv[argc - 1]) != 0) {
		perror(argv[argc - 1]);
		rc = 1;
	}
	fxtw_fini(&w);
	return rc;
}
