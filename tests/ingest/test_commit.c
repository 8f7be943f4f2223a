/*
 * Unit tests of a growing trace's commits (ingest/commit.h): an archive
 * ingested with a commit every k events matched ends with the very tables
 * of the same archive ingested in one go, row for row, whatever k (ids
 * reserved as rows are made, extents.h), and a commit is readable while
 * the next is written.
 */
#include <sys/stat.h>

#include "../ingest_util.h"
#include "../xorshift.h"

static char dir[64];

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/*
 * A random trace: threads of two processes with nested durations (begin
 * and end, complete events, instants), counters with int and double
 * values, flows between threads, async operations, a log; each thread's
 * events written in blocks, so that threads interleave out of time order;
 * some slices never end.
 */
static void write_random(const char *path, uint64_t seed, int events)
{
	static const char *const names[] = { "a", "b", "c", "draw", "layout", "io" };
	struct fxtw w;
	uint64_t r = seed, now[6] = { 0 };
	int depth[6] = { 0 }, i;

	t_open(&w);
	for (i = 0; i < events; i++) {
		int th = (int)(xorshift64(&r) % 6);
		struct fxtw_thr t = FXTW_TINL(1 + (uint64_t)th / 3, 10 + (uint64_t)th);
		struct fxtw_str name = FXTW_INL(names[xorshift64(&r) % 6]);
		struct fxtw_arg a = fxtw_arg_i64(FXTW_INL("n"), (int64_t)(xorshift64(&r) % 100));
		unsigned k = (unsigned)(xorshift64(&r) % 20);
		uint64_t ts;

		/* a block of events on one thread: its clock runs ahead of others' */
		now[th] += 1 + xorshift64(&r) % 500;
		ts = 1000 + now[th];
		if (k < 6 && depth[th] < 12) {
			fxtw_begin(&w, t, C, name, ts, &a, k & 1);
			depth[th]++;
		} else if (k < 11 && depth[th] > 0) {
			fxtw_end(&w, t, C, name, ts, &a, k & 1);
			depth[th]--;
		} else if (k == 11) {
			fxtw_complete(&w, t, C, name, ts, ts + xorshift64(&r) % 300, NULL, 0);
		} else if (k == 12) {
			fxtw_instant(&w, t, C, name, ts, &a, 1);
		} else if (k == 13) {
			struct fxtw_arg v = (xorshift64(&r) & 1) ? fxtw_arg_i64(FXTW_INL("v"), (int64_t)(xorshift64(&r) % 1000))
								  : fxtw_arg_double(FXTW_INL("v"), (double)(xorshift64(&r) % 1000) / 7);

			fxtw_counter(&w, t, C, FXTW_INL("load"), ts, (uint64_t)th % 2, &v, 1);
		} else if (k == 14 && depth[th] > 0) {
			fxtw_flow(&w, 8 + (unsigned)(xorshift64(&r) % 3), t, C, FXTW_INL("f"), ts, xorshift64(&r) % 4);
		} else if (k == 15) {
			fxtw_async(&w, 5 + (unsigned)(xorshift64(&r) % 3), t, C, FXTW_INL("op"), ts, xorshift64(&r) % 5, NULL, 0);
		} else if (k == 16) {
			fxtw_log(&w, t, ts, "hello");
		} else {
			fxtw_instant(&w, t, C, FXTW_INL("tick"), ts, NULL, 0);
		}
	}
	assert_int_equal(fxtw_save(&w, path), 0);
	fxtw_fini(&w);
}

static void ingest(const char *in, const char *out, uint64_t extent_rows, uint64_t commit_every)
{
	struct ingest_opts o = { 0 };
	struct ingest_result res;

	o.extent_rows = extent_rows;
	o.commit_every = commit_every;
	o.sort_budget = 256; /* the sorter spills, as a big trace's does */
	if (ingest_file(in, out, &o, &res) != INGEST_OK)
		fail_msg("ingest %s: %s", in, res.error);
}

/* Commits every k events end where one go does, for several traces and k. */
static void t_commits_end_as_batch(void **state)
{
	static const uint64_t every[] = { 1, 3, 17, 100, 1000 };
	char in[96], a[96], b[96];
	uint64_t seed;
	size_t k;

	(void)state;
	path_of(in, sizeof(in), "in.fxt");
	path_of(a, sizeof(a), "a.db");
	path_of(b, sizeof(b), "b.db");
	for (seed = 1; seed <= 4; seed++) {
		write_random(in, seed * 7919, 3000);
		ingest(in, a, 16, 0);
		for (k = 0; k < sizeof(every) / sizeof(every[0]); k++) {
			ingest(in, b, 16, every[k]);
			same_tables(b, a);
		}
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_commit.XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_commits_end_as_batch),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
