/*
 * Unit tests of an ingest in a process of its own (ingest/child.h): the
 * same database and the same result as ingest_file in this process, its
 * progress reported, a cancel that stops it, and a child that dies (a
 * crash, the kernel's kill) failing the ingest with a sentence and no file.
 * This program is its own child: run as "<it> ingest-child" it answers
 * with ingest_child_main(), unless TEST_CHILD_DIE says how to die first.
 */
#include <signal.h>
#include <sys/stat.h>

#include "../../ingest/child.h"
#include "../ingest_util.h"

#define SELF "/proc/self/exe"

static char dir[64];

/* A trace with slices, arguments, a counter, a flow, an async operation, a
 * log and an unmatched end (a diagnostic), saved as dir/in.fxt. */
static void write_trace(const char *path)
{
	struct fxtw_arg a = fxtw_arg_i64(FXTW_INL("n"), 5);
	struct fxtw w;
	int i;

	t_open(&w);
	for (i = 0; i < 200; i++) {
		uint64_t t = 1000 + (uint64_t)i * 100;

		fxtw_begin(&w, FXTW_TINL(1, 2), C, FXTW_INL("outer"), t, &a, 1);
		fxtw_instant(&w, FXTW_TINL(1, 2), C, FXTW_INL("mark"), t + 10, NULL, 0);
		fxtw_flow(&w, 8 + (i > 0), FXTW_TINL(1, 2), C, FXTW_INL("f"), t + 11, 7);
		fxtw_end(&w, FXTW_TINL(1, 2), C, FXTW_INL("outer"), t + 50, NULL, 0);
		fxtw_counter(&w, FXTW_TINL(1, 3), C, FXTW_INL("load"), t, 0, &a, 1);
	}
	fxtw_async(&w, 5, FXTW_TINL(1, 3), C, FXTW_INL("op"), 1500, 9, NULL, 0);
	fxtw_async(&w, 7, FXTW_TINL(1, 3), C, FXTW_INL("op"), 9000, 9, NULL, 0);
	fxtw_log(&w, FXTW_TINL(1, 2), 2000, "hello");
	fxtw_end(&w, FXTW_TINL(1, 4), C, FXTW_INL("stray"), 30000, NULL, 0);
	assert_int_equal(fxtw_save(&w, path), 0);
	fxtw_fini(&w);
}

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static int exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

struct progress {
	int calls;
	int cancel_at; /* 0: never */
	uint64_t last_events; /* the most events a report gave */
};

static int on_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct progress *p = ctx;

	(void)phase;
	(void)done;
	(void)total;
	if (events > p->last_events)
		p->last_events = events;
	return ++p->calls == p->cancel_at;
}

/* The same database and result as in this process, progress included. */
static void t_same_as_in_process(void **state)
{
	char in[96], a[96], b[96];
	struct ingest_result ra, rb;
	struct progress p = { 0 };
	struct ingest_opts o = { 0 };
	unsigned i;

	(void)state;
	path_of(in, sizeof(in), "in.fxt");
	path_of(a, sizeof(a), "a.db");
	path_of(b, sizeof(b), "b.db");
	write_trace(in);
	assert_int_equal(ingest_file(in, a, NULL, &ra), INGEST_OK);
	o.progress = on_progress;
	o.progress_ctx = &p;
	assert_int_equal(ingest_file_apart(SELF, in, b, &o, &rb), INGEST_OK);
	assert_true(p.calls > 0);
	assert_int_equal(p.last_events, ra.counts.events);
	same_tables(a, b);
	assert_string_equal(ra.format, rb.format);
	assert_int_equal(ra.start_ns, rb.start_ns);
	assert_int_equal(ra.end_ns, rb.end_ns);
	assert_int_equal(ra.bytes, rb.bytes);
	assert_memory_equal(&ra.counts, &rb.counts, sizeof(ra.counts));
	assert_int_equal(ra.nproviders, rb.nproviders);
	assert_int_equal(ra.ndiag, rb.ndiag);
	for (i = 0; i < ra.ndiag; i++) {
		assert_string_equal(ra.diag_name[i], rb.diag_name[i]);
		assert_int_equal(ra.diag_value[i], rb.diag_value[i]);
	}
	assert_true(rb.ndiag > 0);
	assert_true(rb.phase_seconds[INGEST_PHASE_DECODE] >= 0);
	assert_int_equal(ra.peak_rss, 0);
	assert_true(rb.peak_rss > 1000000); /* the child's own, at least its program */
	assert_false(exists(b) && !exists(a));
}

/* Not a trace: the child's sentence reaches the caller as in process. */
static void t_not_a_trace(void **state)
{
	char in[96], a[96], b[96];
	struct ingest_result ra, rb;
	FILE *f;

	(void)state;
	path_of(in, sizeof(in), "junk.bin");
	path_of(a, sizeof(a), "junk-a.db");
	path_of(b, sizeof(b), "junk-b.db");
	assert_non_null(f = fopen(in, "wb"));
	fputs("this is not a trace, not at all, no\n", f);
	fclose(f);
	assert_int_equal(ingest_file(in, a, NULL, &ra), INGEST_ENOTTRACE);
	assert_int_equal(ingest_file_apart(SELF, in, b, NULL, &rb), INGEST_ENOTTRACE);
	assert_string_equal(ra.error, rb.error);
	assert_false(exists(b));
}

/* A progress callback asking to stop kills the child: nothing is left. */
static void t_cancel(void **state)
{
	char in[96], b[96], tmp[120];
	struct ingest_result rb;
	struct progress p = { 0, 1, 0 };
	struct ingest_opts o = { 0 };

	(void)state;
	path_of(in, sizeof(in), "in.fxt");
	path_of(b, sizeof(b), "cancelled.db");
	write_trace(in);
	o.progress = on_progress;
	o.progress_ctx = &p;
	assert_int_equal(ingest_file_apart(SELF, in, b, &o, &rb), INGEST_ECANCEL);
	assert_int_equal(p.calls, 1);
	snprintf(tmp, sizeof(tmp), "%s%s", b, INGEST_TMP_SUFFIX);
	assert_false(exists(b));
	assert_false(exists(tmp));
}

/* A child that dies without a result fails the ingest, saying how. */
static void t_child_dies(void **state)
{
	char in[96], b[96];
	struct ingest_result rb;

	(void)state;
	path_of(in, sizeof(in), "in.fxt");
	path_of(b, sizeof(b), "dead.db");
	write_trace(in);
	setenv("TEST_CHILD_DIE", "segv", 1);
	assert_int_equal(ingest_file_apart(SELF, in, b, NULL, &rb), INGEST_ECRASH);
	assert_non_null(strstr(rb.error, "signal 11"));
	assert_false(exists(b));
	setenv("TEST_CHILD_DIE", "kill", 1);
	assert_int_equal(ingest_file_apart(SELF, in, b, NULL, &rb), INGEST_ENOMEM);
	assert_non_null(strstr(rb.error, "out of memory"));
	setenv("TEST_CHILD_DIE", "exit", 1);
	assert_int_equal(ingest_file_apart(SELF, in, b, NULL, &rb), INGEST_ECRASH);
	assert_non_null(strstr(rb.error, "exit status 3"));
	unsetenv("TEST_CHILD_DIE");
	assert_false(exists(b));
}

static int setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN); /* as the server does (child.h) */
	snprintf(dir, sizeof(dir), "/tmp/test-child-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_same_as_in_process),
		cmocka_unit_test(t_not_a_trace),
		cmocka_unit_test(t_cancel),
		cmocka_unit_test(t_child_dies),
	};

	if (argc > 1 && strcmp(argv[1], "ingest-child") == 0) {
		const char *die = getenv("TEST_CHILD_DIE");

		if (die && strcmp(die, "segv") == 0) {
			signal(SIGSEGV, SIG_DFL); /* not a sanitizer's report: the signal itself */
			raise(SIGSEGV);
		}
		if (die && strcmp(die, "kill") == 0)
			raise(SIGKILL);
		if (die && strcmp(die, "exit") == 0)
			_exit(3);
		return ingest_child_main();
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
