/*
 * demo: a small multi-threaded program built with XRay instrumentation, for
 * the real-program test (tests/xray/run.sh). It writes a Flight Data
 * Recorder log the way a user of clang's runtime gets one: it selects and
 * initialises FDR mode itself, patches the sleds, runs work on three
 * threads with nested and recursive calls, a tail call, a call whose
 * argument is logged and a custom event, then finalises and flushes.
 *
 *   clang -O2 -fxray-instrument -fxray-instruction-threshold=1 -o demo \
 *         tests/xray/demo.c -lpthread
 *   XRAY_OPTIONS="patch_premain=false xray_mode=xray-fdr verbosity=0 \
 *                 xray_logfile_base=DIR/prefix-" ./demo [ITERATIONS [FDR_OPTIONS]]
 *
 * FDR_OPTIONS is the mode's configuration string, for example
 * "buffer_size=4096 buffer_max=8 func_duration_threshold_us=0" (small
 * buffers so that the ring wraps and threads begin mid-stack; no calls
 * elided). The log goes to DIR/prefix-demo.XXXXXX. Typed events are not
 * used: the clang 14 runtime's __xray_TypedEvent trampoline calls the
 * handler with a misaligned stack and the process dies in a movaps.
 *
 * The XRay headers are C++; the few functions used are declared here with
 * their C linkage (the enums they return are ints). Exits 0, or 1 when a
 * step of the XRay API fails.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int __xray_log_select_mode(const char *mode);
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_patch(void);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);

enum {
	XRAY_REGISTRATION_OK = 0,
	XRAY_LOG_INITIALIZED = 2,
	XRAY_LOG_FINALIZED = 4,
	XRAY_LOG_FLUSHED = 2,
	XRAY_PATCH_SUCCESS = 1
};

static volatile unsigned long sink;
static int iterations = 200;

__attribute__((noinline)) static void leaf(int n)
{
	int i;

	for (i = 0; i < n * 50; i++)
		sink += (unsigned long)i;
}

__attribute__((noinline)) static void middle(int n)
{
	leaf(n);
	leaf(n + 2);
}

__attribute__((noinline)) static int recurse(int depth)
{
	leaf(2);
	return depth > 0 ? recurse(depth - 1) + 1 : 0;
}

__attribute__((noinline)) static void finish(int n)
{
	leaf(n);
}

/* Ends in a tail call: the runtime records a tail exit of tail_caller. */
__attribute__((noinline)) static void tail_caller(int n)
{
	sink += (unsigned long)n;
	finish(n + 1);
}

/* clang 14 writes a log-args sled only when the function is also always
 * instrumented. */
__attribute__((noinline, xray_always_instrument, xray_log_args(1))) static void with_argument(long n)
{
	middle((int)(n % 5));
}

__attribute__((noinline)) static void *work(void *arg)
{
	static const char event[] = "checkpoint";
	int k = (int)(intptr_t)arg, i;

	for (i = 0; i < iterations; i++) {
		middle(k + 1);
		with_argument(i);
		recurse(3 + k);
		tail_caller(k);
		if (i % 50 == 0)
			__xray_customevent(event, sizeof(event) - 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *config = argc > 2 ? argv[2] : "";
	pthread_t t[3];
	int i;

	if (argc > 1)
		iterations = atoi(argv[1]);
	if (__xray_log_select_mode("xray-fdr") != XRAY_REGISTRATION_OK ||
	    __xray_log_init_mode("xray-fdr", config) != XRAY_LOG_INITIALIZED || __xray_patch() != XRAY_PATCH_SUCCESS) {
		fprintf(stderr, "demo: cannot set up XRay FDR mode\n");
		return 1;
	}
	for (i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, work, (void *)(intptr_t)i) != 0)
			return 1;
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	if (__xray_log_finalize() != XRAY_LOG_FINALIZED || __xray_log_flushLog() != XRAY_LOG_FLUSHED) {
		fprintf(stderr, "demo: cannot finalize or flush the XRay log\n");
		return 1;
	}
	return 0;
}
