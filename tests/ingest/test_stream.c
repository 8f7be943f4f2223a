/*
 * Unit tests of an ingest fed in pieces (ingest.h, ingest_stream_*): the
 * same archive cut into random pieces, with ingest_stream_match called at
 * random points, gives a database equal, row for row in every table, to
 * ingest_file of the same bytes. The archives: several providers with
 * their own string and thread tables, threads interleaved out of time
 * order, records cut at a piece's end, async operations and flows that
 * span pieces (written here), and the generator's (tests/gen_fxt.c,
 * included so that it runs in memory), whose root slices begin at time 0
 * in records at the very end: a disorder wider than any window, whose
 * late events make the stream start again (counted). A deliberate break
 * of the watermark (sorter.h, the test hooks) must make the comparison fail.
 */
#include "../ingest_util.h"
#include "../xorshift.h"
#include "../xray_writer.h"
#include "../../ingest/sorter.h"

/* The generator's main() is renamed so that its static helpers can be used. */
int gen_fxt_main(int argc, char **argv);
#define main gen_fxt_main
#include "../gen_fxt.c"
#undef main

static char dir[64];

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* ---- archives ------------------------------------------------------------ */

enum { NPROV = 3, NTHR = 3, NCPU_T = 2 };

/* What the writer of one provider keeps: its clock and its threads' open
 * slices. */
struct prov {
	uint64_t t;             /* its clock, ns */
	int depth[NTHR];        /* open begins per thread */
};

static uint64_t tid_of(int p, int k)
{
	return 1000 + (uint64_t)p * 10 + (uint64_t)k;
}

/* Thread k of provider p: indexed (its own table) or inline, at random. */
static struct fxtw_thr thr(int p, int k, uint64_t *rng)
{
	return xorshift64(rng) % 2 ? FXTW_TIDX(k + 1) : FXTW_TINL(100 + (uint64_t)p, tid_of(p, k));
}

/* A name: one of the provider's indexed strings (each provider gives its
 * indexes other strings) or an inline one. */
static struct fxtw_str name_of(uint64_t *rng)
{
	static const char *const inl[] = { "draw", "load", "wait", "parse" };
	uint64_t r = xorshift64(rng) % 8;

	return r < 4 ? FXTW_IDX(r + 1) : FXTW_INL(inl[r - 4]);
}

/* The tables of provider p, in its section. */
static void prov_tables(struct fxtw *w, int p)
{
	char s[32];
	int k;

	for (k = 1; k <= 4; k++) {
		snprintf(s, sizeof(s), "p%d-name%d", p, k);
		fxtw_string(w, (uint16_t)k, s);
	}
	for (k = 0; k < NTHR; k++)
		fxtw_thread(w, (uint8_t)(k + 1), 100 + (uint64_t)p, tid_of(p, k));
}

/* One event of provider p's thread k at its clock, or a little before
 * (written late, as a scope's complete event is). */
static void one_event(struct fxtw *w, struct prov *pv, int p, uint64_t *rng)
{
	struct fxtw_arg a = fxtw_arg_i64(FXTW_INL("n"), (int64_t)(xorshift64(rng) % 100));
	int k = (int)(xorshift64(rng) % NTHR);
	uint64_t t = pv->t, r = xorshift64(rng) % 16;

	switch (r) {
	case 0:
	case 1:
	case 2:
		if (pv->depth[k] < 5) {
			fxtw_begin(w, thr(p, k, rng), C, name_of(rng), t, &a, r == 0);
			pv->depth[k]++;
			break;
		}
		/* fall through */
	case 3:
	case 4:
		if (pv->depth[k] > 0) {
			fxtw_end(w, thr(p, k, rng), C, name_of(rng), t, NULL, 0);
			pv->depth[k]--;
		} else {
			fxtw_instant(w, thr(p, k, rng), C, name_of(rng), t, NULL, 0);
		}
		break;
	case 5: /* two complete events of one start: the longer encloses (ties) */
		fxtw_complete(w, thr(p, k, rng), C, FXTW_INL("inner"), t - 30, t - 10, NULL, 0);
		fxtw_complete(w, thr(p, k, rng), C, FXTW_INL("outer"), t - 30, t - 5, &a, 1);
		break;
	case 6:
		fxtw_instant(w, thr(p, k, rng), C, name_of(rng), t - xorshift64(rng) % 200, &a, 1);
		break;
	case 7:
		fxtw_counter(w, thr(p, k, rng), C, FXTW_INL("load"), t, (uint64_t)p, &a, 1);
		break;
	case 8: /* async operations of a few ids, across threads and pieces */
	case 9:
		fxtw_async(w, 5 + (unsigned)(xorshift64(rng) % 3), thr(p, k, rng), C, FXTW_INL("op"), t,
			   xorshift64(rng) % 4, NULL, 0);
		break;
	case 10: /* flows of a few ids, bound to the slice open on the thread */
	case 11:
		fxtw_flow(w, 8 + (unsigned)(xorshift64(rng) % 3), thr(p, k, rng), C, FXTW_INL("f"), t,
			  xorshift64(rng) % 3);
		break;
	case 12:
		fxtw_log(w, thr(p, k, rng), t, "hello");
		break;
	case 13:
		fxtw_context_switch(w, (uint16_t)(xorshift64(rng) % NCPU_T), 0, t, tid_of(p, k),
				    tid_of((p + 1) % NPROV, k), NULL, 0);
		break;
	case 14:
		fxtw_wakeup(w, (uint16_t)(xorshift64(rng) % NCPU_T), t, tid_of(p, (k + 1) % NTHR), NULL, 0);
		break;
	default:
		fxtw_instant(w, thr(p, k, rng), C, name_of(rng), t, NULL, 0);
	}
	pv->t += 1 + xorshift64(rng) % 40;
}

/*
 * An archive of n events or so from NPROV providers, whose sections take
 * turns: the provider whose clock is behind writes the next block of up to
 * 16 events, so that providers run out of time order by about a block
 * (a few hundred bytes), and each block interleaves its threads. Kernel
 * objects name every process and thread first.
 */
static void write_providers(struct fxtw *w, uint64_t seed, int n)
{
	struct fxtw_arg proc;
	struct prov pv[NPROV];
	uint64_t rng = seed * 2654435761u + 1;
	char s[32];
	int p, k, i, m, best;

	memset(pv, 0, sizeof(pv));
	fxtw_init(w, 0);
	fxtw_magic(w);
	for (p = 0; p < NPROV; p++) {
		snprintf(s, sizeof(s), "provider%d", p);
		fxtw_provider_info(w, (uint32_t)p + 1, s);
		prov_tables(w, p);
		pv[p].t = 1000 + xorshift64(&rng) % 300;
	}
	for (p = 0; p < NPROV; p++) {
		proc = fxtw_arg_koid(FXTW_INL("process"), 100 + (uint64_t)p);
		snprintf(s, sizeof(s), "proc%d", p);
		fxtw_kernel_object(w, 1, FXTW_INL(s), 100 + (uint64_t)p, NULL, 0);
		for (k = 0; k < NTHR; k++)
			fxtw_kernel_object(w, 2, FXTW_INL("worker"), tid_of(p, k), &proc, 1);
	}
	for (i = 0; i < n; i += m) {
		for (best = 0, p = 1; p < NPROV; p++)
			if (pv[p].t < pv[best].t)
				best = p;
		fxtw_provider_section(w, (uint32_t)best + 1);
		m = 1 + (int)(xorshift64(&rng) % 16);
		for (k = 0; k < m; k++)
			one_event(w, &pv[best], best, &rng);
	}
}

/* The generator's archive (tests/gen_fxt.c) at path. */
static void write_gen(const char *path, int events, int threads, int seed)
{
	char ev[16], th[16], sd[16], out[96];
	char *argv[] = { "gen_fxt", "--events", ev, "--threads", th, "--seed", sd, out, NULL };

	snprintf(ev, sizeof(ev), "%d", events);
	snprintf(th, sizeof(th), "%d", threads);
	snprintf(sd, sizeof(sd), "%d", seed);
	snprintf(out, sizeof(out), "%s", path);
	assert_int_equal(gen_fxt_main(8, argv), 0);
}

/* ---- the comparison ------------------------------------------------------ */

/* How to feed a stream. */
struct feed {
	uint64_t seed;     /* of the cuts and the calls to match */
	size_t max_piece;  /* pieces of 1 to this many bytes (some tiny) */
	uint64_t window;   /* opts.order_window */
	size_t budget;     /* opts.sort_budget, for both ingests (0: the default) */
};

/* Streams in.fxt in pieces into stream.db (its result in *res), and
 * ingests it whole into file.db. */
static int stream_and_file_rc(const struct feed *fd, struct ingest_result *res)
{
	char in[96], a[96], b[96];
	struct ingest_opts o = { 0 };
	struct ingest_result fres;
	struct ingest_stream *s;
	uint64_t rng = fd->seed * 0x9e3779b97f4a7c15u + 7;
	uint8_t *buf;
	size_t n, off, k;

	path_of(in, sizeof(in), "in.fxt");
	path_of(a, sizeof(a), "stream.db");
	path_of(b, sizeof(b), "file.db");
	o.sort_budget = fd->budget;
	assert_int_equal(ingest_file(in, b, &o, &fres), INGEST_OK);
	o.order_window = fd->window;
	buf = t_read_file(in, &n);
	s = ingest_stream_open(a, &o, res);
	assert_non_null(s);
	for (off = 0; off < n; off += k) {
		k = xorshift64(&rng) % 8 == 0 ? 1 + xorshift64(&rng) % 7 : 1 + xorshift64(&rng) % fd->max_piece;
		if (k > n - off)
			k = n - off;
		assert_int_equal(ingest_stream_feed(s, buf + off, k), INGEST_OK);
		if (xorshift64(&rng) % 3 == 0)
			assert_int_equal(ingest_stream_match(s), INGEST_OK);
	}
	if (ingest_stream_end(s) != INGEST_OK) {
		ingest_stream_free(s);
		free(buf);
		return -1;
	}
	ingest_stream_free(s);
	free(buf);
	assert_int_equal(res->counts.events, fres.counts.events);
	assert_int_equal(res->counts.slices, fres.counts.slices);
	assert_int_equal(res->bytes, fres.bytes);
	return 0;
}

static void stream_and_file(const struct feed *fd, struct ingest_result *res)
{
	if (stream_and_file_rc(fd, res) != 0)
		fail_msg("stream: %s", res->error);
}

static void same_dbs(void)
{
	char a[96], b[96];

	path_of(a, sizeof(a), "stream.db");
	path_of(b, sizeof(b), "file.db");
	same_tables(a, b);
}

static void save(struct fxtw *w)
{
	char in[96];

	path_of(in, sizeof(in), "in.fxt");
	assert_int_equal(fxtw_save(w, in), 0);
	fxtw_fini(w);
}

/* ---- tests ---------------------------------------------------------------- */

/* Several providers, their threads out of time order by less than the
 * window: matched as the pieces come (events handed on before the end),
 * never started again, and equal to the file's ingest, whatever the cuts. */
static void test_stream_providers(void **state)
{
	struct ingest_result res;
	struct fxtw w;
	uint64_t seed;

	(void)state;
	for (seed = 1; seed <= 12; seed++) {
		struct feed fd = { seed, seed % 3 ? 700 : 5000, 16384, seed % 4 == 0 ? 512 : 0 };

		write_providers(&w, seed, 3000);
		save(&w);
		stream_and_file(&fd, &res);
		same_dbs();
		assert_int_equal(res.order_restarts, 0);
		assert_true(res.order_streamed > 1000);
	}
}

/* The generator's archive: its roots' begins come last with time 0, behind
 * everything matched: late, so the stream starts again (counted) and still
 * equals the file's ingest; spilled runs (a small budget) too. */
static void test_stream_late_roots(void **state)
{
	struct ingest_result res;
	char in[96];
	int i;

	(void)state;
	path_of(in, sizeof(in), "in.fxt");
	write_gen(in, 20000, 8, 3);
	for (i = 0; i < 3; i++) {
		struct feed fd = { (uint64_t)i + 40, 4096, 8192, i == 1 ? 1024 : 0 };

		stream_and_file(&fd, &res);
		same_dbs();
		assert_true(res.order_restarts >= 1);
		assert_true(res.order_late >= 8); /* a root begin per thread at least */
	}
}

/* Events far behind the watermark in the middle of an archive: each is
 * late, and ends where the file's ingest puts it. The first widens the
 * window to hold them all (sorter.h, LATE), so the stream starts again
 * once; with the widest window below that disorder, each starts it again. */
static void test_stream_late_middle(void **state)
{
	struct ingest_result res;
	struct fxtw w;
	int i;

	(void)state;
	t_open(&w);
	for (i = 0; i < 4000; i++) {
		uint64_t t = 100000 + (uint64_t)i * 50;

		fxtw_begin(&w, FXTW_TINL(1, 2), C, FXTW_INL("tick"), t, NULL, 0);
		fxtw_end(&w, FXTW_TINL(1, 2), C, FXTW_INL("tick"), t + 20, NULL, 0);
		if (i % 1000 == 999) { /* a complete event from far back, on another thread */
			fxtw_complete(&w, FXTW_TINL(1, 3), C, FXTW_INL("old"), 1000 + (uint64_t)i, 2000 + (uint64_t)i,
				      NULL, 0);
			fxtw_flow(&w, 8, FXTW_TINL(1, 3), C, FXTW_INL("f"), 1500 + (uint64_t)i, 77);
		}
	}
	save(&w);
	for (i = 0; i < 3; i++) {
		struct feed fd = { (uint64_t)i + 7, 2000, 4096, 0 };

		sorter_test_widen_max = i == 2 ? 8192 : 0;
		stream_and_file(&fd, &res);
		sorter_test_widen_max = 0;
		same_dbs();
		if (i < 2)
			assert_int_equal(res.order_restarts, 1);
		else
			assert_true(res.order_restarts >= 3);
		assert_true(res.order_late >= 1);
	}
}

/*
 * Scopes written at their end, as a program's scope macros write them:
 * each frame's complete event comes after the 2,000 of its inner scopes
 * (with their leaves), some 60 KB behind its start, on two threads. Its
 * begin is late for a 4 KB window. The stream starts again once, with a
 * window as wide as the first frame's disorder (sorter.h, LATE), and the
 * later frames fit it: doubling would start again at frame after frame.
 * The same with the history of the input's times kept coarse.
 */
static void test_stream_scopes_at_exit(void **state)
{
	struct ingest_result res;
	struct fxtw w;
	int run;

	(void)state;
	t_open(&w);
	t_write_scopes(&w, 6, 1000);
	save(&w);
	for (run = 0; run < 3; run++) {
		struct feed fd = { (uint64_t)run + 21, 3000, 4096, run == 2 ? 2048 : 0 };

		sorter_test_hist_max = run == 1 ? 64 : 0; /* made coarser, by halves, again and again */
		stream_and_file(&fd, &res);
		sorter_test_hist_max = 0;
		same_dbs();
		assert_int_equal(res.order_restarts, 1);
		assert_int_equal(res.order_late, 2); /* the first frame's two */
		assert_true(res.order_streamed > 0);
	}
}

/* A wakeup's thread (known by its tid alone) matched before the kernel
 * object naming its process: the end revises its pid, so the stream
 * starts again and equals the file's ingest. */
static void test_stream_revised_pid(void **state)
{
	struct fxtw_arg proc = fxtw_arg_koid(FXTW_INL("process"), 55);
	struct ingest_result res;
	struct feed fd = { 3, 300, 1024, 0 };
	struct fxtw w;
	int i;

	(void)state;
	t_open(&w);
	fxtw_wakeup(&w, 0, 500, 77, NULL, 0);
	for (i = 0; i < 2000; i++)
		fxtw_instant(&w, FXTW_TINL(1, 2), C, FXTW_INL("tick"), 1000 + (uint64_t)i * 10, NULL, 0);
	fxtw_kernel_object(&w, 2, FXTW_INL("late thread"), 77, &proc, 1);
	fxtw_begin(&w, FXTW_TINL(55, 77), C, FXTW_INL("work"), 30000, NULL, 0);
	fxtw_end(&w, FXTW_TINL(55, 77), C, FXTW_INL("work"), 30010, NULL, 0);
	save(&w);
	stream_and_file(&fd, &res);
	same_dbs();
	assert_int_equal(res.order_restarts, 1);
	assert_int_equal(res.order_late, 0);
}

/* A stream fed whole, and one fed a byte at a time, matched only at the end. */
static void test_stream_extremes(void **state)
{
	struct ingest_result res;
	struct fxtw w;
	struct feed one = { 5, 1, 4096, 0 };
	struct feed big = { 6, 1 << 30, 0, 0 };

	(void)state;
	write_providers(&w, 99, 400);
	save(&w);
	stream_and_file(&one, &res);
	same_dbs();
	stream_and_file(&big, &res);
	same_dbs();
}

/* An XRay log streamed: ingest_stream_match does nothing for it (ingest.c
 * says why), and the end equals the file's ingest. */
static void test_stream_xray(void **state)
{
	struct ingest_result res;
	struct feed fd = { 8, 500, 1024, 0 };
	struct xrw w;
	char in[96];
	uint64_t tsc = 1000;
	int b, i;

	(void)state;
	xrw_init(&w, 5, 0);
	xrw_header(&w, 1000000000);
	for (b = 0; b < 12; b++) { /* buffers of three threads, taking turns */
		xrw_buffer_begin(&w, 100 + (uint32_t)(b % 3), 7, 1, (uint32_t)b, 0, tsc);
		for (i = 0; i < 50; i++) {
			xrw_enter(&w, 1 + (i % 4), tsc += 3);
			xrw_exit(&w, 1 + (i % 4), tsc += 5);
		}
		xrw_buffer_end(&w);
	}
	path_of(in, sizeof(in), "in.fxt");
	assert_int_equal(xrw_save(&w, in), 0);
	xrw_fini(&w);
	stream_and_file(&fd, &res);
	same_dbs();
	assert_string_equal(res.format, "xray-fdr");
	assert_int_equal(res.order_streamed, 0);
	assert_int_equal(res.order_restarts, 0);
}

/* Not a trace, and nothing at all: the errors of ingest_file. */
static void test_stream_errors(void **state)
{
	struct ingest_result res;
	struct ingest_stream *s;
	char a[96];
	static const uint8_t junk[100] = { 1, 2, 3 };

	(void)state;
	path_of(a, sizeof(a), "bad.db");
	s = ingest_stream_open(a, NULL, &res);
	assert_non_null(s);
	assert_int_equal(ingest_stream_feed(s, junk, sizeof(junk)), INGEST_ENOTTRACE);
	assert_int_equal(ingest_stream_match(s), INGEST_ENOTTRACE);
	assert_int_equal(ingest_stream_end(s), INGEST_ENOTTRACE);
	ingest_stream_free(s);
	assert_int_equal(access(a, F_OK), -1);
	s = ingest_stream_open(a, NULL, &res);
	assert_non_null(s);
	assert_int_equal(ingest_stream_end(s), INGEST_EEMPTY);
	ingest_stream_free(s);
	assert_int_equal(access(a, F_OK), -1);
}

/* The watermark broken on purpose (events handed on up to W plus a second,
 * and late ones matched where they come): the comparison must fail. */
static void test_stream_break(void **state)
{
	struct ingest_result res;
	struct feed fd = { 11, 700, 16384, 0 };
	struct fxtw w;
	char a[96], b[96], why[512];

	(void)state;
	path_of(a, sizeof(a), "stream.db");
	path_of(b, sizeof(b), "file.db");
	write_providers(&w, 5, 3000);
	save(&w);
	sorter_test_skew = 1000000000;
	sorter_test_no_late = 1;
	/* events out of order fail the ingest (a group's level of detail
	 * takes its rows in time order only, lod.h), or give other rows */
	if (stream_and_file_rc(&fd, &res) != 0)
		snprintf(why, sizeof(why), "the stream failed: %s", res.error);
	else
		assert_true(tables_differ(a, b, why, sizeof(why)) > 0);
	sorter_test_skew = 0;
	sorter_test_no_late = 0;
	print_message("broken on purpose: %s\n", why);
	stream_and_file(&fd, &res); /* and mended */
	same_dbs();
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ts-stream-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	static const char *const files[] = { "in.fxt", "stream.db", "file.db", "bad.db" };
	char p[96];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		path_of(p, sizeof(p), files[i]);
		remove(p);
	}
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_providers),   cmocka_unit_test(test_stream_late_roots),
		cmocka_unit_test(test_stream_late_middle), cmocka_unit_test(test_stream_revised_pid),
		cmocka_unit_test(test_stream_extremes),    cmocka_unit_test(test_stream_xray),
		cmocka_unit_test(test_stream_errors),      cmocka_unit_test(test_stream_scopes_at_exit),
		cmocka_unit_test(test_stream_break),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
