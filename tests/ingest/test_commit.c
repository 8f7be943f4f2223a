/*
 * Unit tests of a growing trace's commits (ingest/commit.h): an archive
 * ingested with a commit every k events matched ends with the very tables
 * of the same archive ingested in one go, row for row, whatever k (ids
 * reserved as rows are made, extents.h), and a commit is readable while
 * the next is written.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "../../ingest/grow.h"
#include "../../ingest/lod.h"
#include "../ingest_util.h"
#include "../xorshift.h"

#define SELF "/proc/self/exe"

static char dir[64];

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/*
 * A random trace: threads of two processes with nested durations (begin
 * and end, complete events, instants), counters with int and double
 * values, flows between threads, async operations, a log, context switches
 * on 3 cpus (unless switches is 0); each thread's events written in
 * blocks, so that threads interleave out of time order; some slices never
 * end.
 */
static void write_random_roots(const char *path, uint64_t seed, int events, int roots, int switches)
{
	static const char *const names[] = { "a", "b", "c", "draw", "layout", "io" };
	struct fxtw w;
	uint64_t r = seed, now[6] = { 0 }, on_cpu[3] = { 0 };
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
		} else if (k == 17 && switches) {
			/* the thread comes onto one of 3 cpus (now and then the
			 * idle thread, weight INT32_MIN), from the one there:
			 * switches out of time order across threads, as the
			 * blocks are */
			uint16_t cpu = (uint16_t)(xorshift64(&r) % 3);
			int idle = xorshift64(&r) % 5 == 0;
			struct fxtw_arg wt = fxtw_arg_i32(FXTW_INL("incoming_weight"),
							  idle ? INT32_MIN : (int32_t)(xorshift64(&r) % 64));

			fxtw_context_switch(&w, cpu, 2 + (unsigned)(xorshift64(&r) % 2), ts, on_cpu[cpu],
					    idle ? 0 : 10 + (uint64_t)th, &wt, 1);
			on_cpu[cpu] = idle ? 0 : 10 + (uint64_t)th;
		} else {
			fxtw_instant(&w, t, C, FXTW_INL("tick"), ts, NULL, 0);
		}
	}
	/* each thread's whole-run root, written last as gen_fxt's are: its end
	 * after everything, then its begin before everything (late for any
	 * order's window) */
	for (i = 0; roots && i < 6; i++) {
		struct fxtw_thr t = FXTW_TINL(1 + (uint64_t)i / 3, 10 + (uint64_t)i);

		fxtw_end(&w, t, C, FXTW_INL("root"), 1000 + now[i] + 10, NULL, 0);
	}
	for (i = 0; roots && i < 6; i++) {
		struct fxtw_thr t = FXTW_TINL(1 + (uint64_t)i / 3, 10 + (uint64_t)i);

		fxtw_begin(&w, t, C, FXTW_INL("root"), 1, NULL, 0);
	}
	assert_int_equal(fxtw_save(&w, path), 0);
	fxtw_fini(&w);
}

static void write_random(const char *path, uint64_t seed, int events)
{
	write_random_roots(path, seed, events, 0, 1);
}

static void ingest_rows(const char *in, const char *out, uint64_t extent_rows, uint64_t commit_every, size_t commit_rows)
{
	struct ingest_opts o = { 0 };
	struct ingest_result res;

	o.extent_rows = extent_rows;
	o.commit_every = commit_every;
	o.commit_rows = commit_rows;
	o.sort_budget = 256; /* the sorter spills, as a big trace's does */
	if (ingest_file(in, out, &o, &res) != INGEST_OK)
		fail_msg("ingest %s: %s", in, res.error);
}

static void ingest(const char *in, const char *out, uint64_t extent_rows, uint64_t commit_every)
{
	ingest_rows(in, out, extent_rows, commit_every, 0);
}

/* Commits every k events end where one go does, for several traces and k,
 * with or without the unseen writes of slices between them (commit_rows:
 * every 5 slices matched). */
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
			ingest_rows(in, b, 16, every[k], 5);
			same_tables(b, a);
		}
	}
}

/* The rows of table in the database at path, as its last commit has them. */
static int64_t t_count(const char *path, const char *table)
{
	char sql[128];
	sqlite3 *db;
	int64_t n;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	n = scalar(db, sql);
	sqlite3_close(db);
	return n;
}

static int64_t t_max(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* The cpu runs that a commit of the growing trace at path shows ended but
 * that the finished trace (final) does not hold: none, as its switches came
 * in time order on each cpu (commit_sched.h). */
static int64_t t_runs_not_final(const char *path, const char *final)
{
	char sql[512];
	sqlite3 *db;
	int64_t n;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	snprintf(sql, sizeof(sql), "ATTACH '%s' AS f", final);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	n = scalar(db, "SELECT count(*) FROM (SELECT cpu, ts, dur, pid, tid, priority, end_state FROM main.sched "
		       "WHERE dur >= 0 EXCEPT SELECT cpu, ts, dur, pid, tid, priority, end_state FROM f.sched)");
	sqlite3_close(db);
	return n;
}

/* A stream fed in random pieces, committed at random points: each commit
 * reads whole, and the end is the batch's. On odd seeds the commits are
 * queued (ingest_stream_commit_queued), and looked at once published: at
 * once, or after more pieces went on behind them. Arrows are there
 * before the end (commit_flows.h). */
static void t_growing_stream(void **state)
{
	char in[96], a[96], b[96];
	uint64_t seed, r;

	(void)state;
	path_of(in, sizeof(in), "in.fxt");
	path_of(a, sizeof(a), "a.db");
	path_of(b, sizeof(b), "b.db");
	for (seed = 1; seed <= 4; seed++) {
		struct ingest_opts o = { 0 };
		struct ingest_result res;
		struct ingest_stream *s;
		uint8_t *bytes;
		size_t n, off = 0;
		int commits = 0, queued = (int)(seed % 2), pending = 0;
		int64_t arrows = 0, runs = 0; /* the most a commit held */
		uint64_t ticket = 0;

		r = seed * 104729;
		write_random_roots(in, seed * 31, 4000, 0, seed != 4); /* the last without a context switch */
		ingest(in, a, 16, 0);
		bytes = t_read_file(in, &n);
		o.extent_rows = 16;
		o.growing = 1;
		o.sort_budget = 256;
		o.order_window = 4096 << (seed % 3);
		o.commit_rows = seed % 2 ? 9 : 0; /* unseen writes between commits */
		assert_non_null(s = ingest_stream_open(b, &o, &res));
		while (off < n) {
			size_t piece = 1 + (size_t)(xorshift64(&r) % 3000);

			if (piece > n - off)
				piece = n - off;
			assert_int_equal(ingest_stream_feed(s, bytes + off, piece), INGEST_OK);
			off += piece;
			if (xorshift64(&r) % 3 == 0) {
				int committed, seen;

				if (pending) { /* the one queued before is in the file */
					assert_int_equal(ingest_stream_published(s, ticket, 1, &seen), INGEST_OK);
					assert_int_equal(seen, 1);
					pending = 0;
				}
				if (queued) {
					assert_int_equal(ingest_stream_commit_queued(s, &committed, &ticket), INGEST_OK);
					if (committed && xorshift64(&r) % 2) {
						assert_int_equal(ingest_stream_published(s, ticket, 1, &seen), INGEST_OK);
						assert_int_equal(seen, 1);
						t_check_commit(b);
						arrows = t_max(arrows, t_count(b, "flows"));
						runs = t_max(runs, t_count(b, "sched"));
						assert_int_equal(t_runs_not_final(b, a), 0);
					} else if (committed) {
						pending = 1;
					}
				} else {
					assert_int_equal(ingest_stream_commit(s, &committed), INGEST_OK);
					if (committed) {
						t_check_commit(b);
						arrows = t_max(arrows, t_count(b, "flows"));
						runs = t_max(runs, t_count(b, "sched"));
						assert_int_equal(t_runs_not_final(b, a), 0);
					}
				}
				commits += committed;
			}
		}
		assert_true(commits > 0);
		assert_true(arrows > 0);
		assert_true(runs > 0 || seed == 4); /* cpu runs before the end (commit_sched.h) */
		assert_int_equal(ingest_stream_end(s), INGEST_OK);
		ingest_stream_free(s);
		free(bytes);
		same_tables(b, a);
	}
}

/* A database's page size. */
static int page_size_of(const char *path)
{
	sqlite3 *h;
	int size;

	assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	size = (int)scalar(h, "PRAGMA page_size");
	sqlite3_close(h);
	return size;
}

/* The same through grow-child (grow.h): the source appended to piece by
 * piece as its parent tells the child, every commit reported read whole,
 * and the end the batch's. Its whole size is told ahead, as an upload's
 * is: its database has a file's pages, not a live stream's. */
static void t_grow_child(void **state)
{
	char in[96], a[96], src[96], b[96], err[256];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	struct ingest_grow *g;
	uint64_t r = 77, bytes = 0, off = 0;
	uint8_t *all;
	size_t n;
	FILE *out;
	int rc = -1, commits = 0, exact;
	enum grow_report rep;

	(void)state;
	path_of(in, sizeof(in), "in.fxt");
	path_of(a, sizeof(a), "a.db");
	path_of(src, sizeof(src), "source");
	path_of(b, sizeof(b), "grown.db");
	write_random(in, 4242, 6000);
	ingest(in, a, 16, 0);
	all = t_read_file(in, &n);
	assert_non_null(out = fopen(src, "wb"));
	o.extent_rows = 16;
	o.sort_budget = 256;
	o.order_window = 4096; /* events matched while it grows */
	o.expect_bytes = n;
	assert_non_null(g = ingest_grow_start(SELF, src, b, &o, 0, -1, err, sizeof(err)));
	while (off < n) {
		size_t piece = 1 + (size_t)(xorshift64(&r) % 20000);

		if (piece > n - off)
			piece = n - off;
		assert_int_equal(fwrite(all + off, 1, piece, out), piece);
		fflush(out);
		off += piece;
		assert_int_equal(ingest_grow_size(g, off), 0);
		while ((rep = ingest_grow_read(g, xorshift64(&r) % 2 ? 30 : 0, &res, &bytes, &exact, &rc)) == GROW_COMMIT) {
			assert_true(bytes <= off);
			t_check_commit(b);
			commits++;
		}
		assert_int_equal(rep, GROW_NONE);
	}
	fclose(out);
	assert_int_equal(ingest_grow_end(g), 0);
	while ((rep = ingest_grow_read(g, 1000, &res, &bytes, &exact, &rc)) != GROW_DONE) {
		assert_int_not_equal(rep, GROW_DIED);
		if (rep == GROW_COMMIT)
			commits++;
	}
	assert_int_equal(rc, INGEST_OK);
	assert_true(commits > 0);
	ingest_grow_free(g, 0);
	free(all);
	same_tables(b, a);
	assert_int_equal(page_size_of(b), tracedb_page_size(n));
}

/* A growing database's page size: a file's for an upload known to be
 * small, never more than 16 KB (each commit writes again the pages it
 * touched: ingest.c, stream_open_db), 16 KB for a stream of unknown size. */
static void t_grow_page_size(void **state)
{
	char in[96], b[96], err[256];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	struct ingest_grow *g;
	uint64_t bytes = 0, expect[3];
	int rc = -1, exact, want[3];
	enum grow_report rep;
	size_t i, n;

	(void)state;
	path_of(in, sizeof(in), "pages.fxt");
	path_of(b, sizeof(b), "pages.db");
	write_random(in, 4243, 3000);
	free(t_read_file(in, &n));
	assert_true(tracedb_page_size(n) < 16384); /* a small file's own pages */
	expect[0] = n, want[0] = (int)tracedb_page_size(n);
	expect[1] = 0, want[1] = 16384;                    /* a live stream */
	expect[2] = (uint64_t)64 << 20, want[2] = 16384;   /* told more than the file: a big upload's */
	for (i = 0; i < 3; i++) {
		o.extent_rows = 16;
		o.expect_bytes = expect[i];
		assert_non_null(g = ingest_grow_start(SELF, in, b, &o, 0, -1, err, sizeof(err)));
		assert_int_equal(ingest_grow_size(g, n), 0);
		assert_int_equal(ingest_grow_end(g), 0);
		while ((rep = ingest_grow_read(g, 1000, &res, &bytes, &exact, &rc)) != GROW_DONE)
			assert_int_not_equal(rep, GROW_DIED);
		assert_int_equal(rc, INGEST_OK);
		ingest_grow_free(g, 0);
		assert_int_equal(page_size_of(b), want[i]);
	}
}

/* A whole file told at once (an upload, catalog/grow.h) whose threads'
 * first begins come last, late for any window: its commits are whole while
 * it grows, it starts again at its end and writes the rest into a new
 * database renamed into place (ingest.c, stream_fresh), and it ends as the
 * batch does, with nothing left beside it. */
static void t_grow_late_end(void **state)
{
	char in[96], a[96], b[96], tmp[112], err[256];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	struct ingest_grow *g;
	uint64_t bytes = 0;
	int rc = -1, commits = 0, exact;
	enum grow_report rep;
	struct stat st;
	size_t n;
	uint8_t *all;

	(void)state;
	path_of(in, sizeof(in), "late.fxt");
	path_of(a, sizeof(a), "late-batch.db");
	path_of(b, sizeof(b), "late-grown.db");
	write_random_roots(in, 9091, 20000, 1, 1);
	ingest(in, a, 16, 0);
	all = t_read_file(in, &n);
	free(all);
	o.extent_rows = 16;
	o.sort_budget = 256;
	o.order_window = 4096;
	assert_non_null(g = ingest_grow_start(SELF, in, b, &o, 0, -1, err, sizeof(err)));
	assert_int_equal(ingest_grow_size(g, n), 0);
	assert_int_equal(ingest_grow_end(g), 0);
	while ((rep = ingest_grow_read(g, 1000, &res, &bytes, &exact, &rc)) != GROW_DONE) {
		assert_int_not_equal(rep, GROW_DIED);
		if (rep == GROW_COMMIT) {
			t_check_commit(b);
			commits++;
		}
	}
	assert_int_equal(rc, INGEST_OK);
	assert_true(commits > 0);             /* it grew before its end */
	assert_true(res.order_restarts >= 1); /* and started again there */
	ingest_grow_free(g, 0);
	same_tables(b, a);
	snprintf(tmp, sizeof(tmp), "%s%s", b, INGEST_TMP_SUFFIX);
	assert_int_not_equal(stat(tmp, &st), 0);
}

/* An upload (told whole at once) whose scopes are written at their end,
 * frames of them wider than the window: it starts again once, at the
 * first frame, with a window that holds the frames (sorter.h, LATE), and
 * goes on growing, with commits, to its end, the batch's. (Once it
 * stopped matching at the first restart until the end: a view that froze
 * for the rest of the upload.) */
static void t_grow_scopes_upload(void **state)
{
	char in[96], a[96], b[96], err[256];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	struct ingest_grow *g;
	struct fxtw w;
	uint64_t bytes = 0;
	int rc = -1, after = 0, exact;
	enum grow_report rep;
	struct stat st;

	(void)state;
	path_of(in, sizeof(in), "scopes.fxt");
	path_of(a, sizeof(a), "scopes-batch.db");
	path_of(b, sizeof(b), "scopes-grown.db");
	t_open(&w);
	t_write_scopes(&w, 24, 3000);
	assert_int_equal(fxtw_save(&w, in), 0);
	fxtw_fini(&w);
	ingest(in, a, 4096, 0);
	assert_int_equal(stat(in, &st), 0);
	o.extent_rows = 4096;
	o.order_window = 65536;
	o.expect_bytes = (uint64_t)st.st_size;
	/* a commit after every piece: on a fast machine the rest of the
	 * ingest takes less than the default's spacing */
	assert_non_null(g = ingest_grow_start(SELF, in, b, &o, 0, 0, err, sizeof(err)));
	assert_int_equal(ingest_grow_size(g, (uint64_t)st.st_size), 0);
	assert_int_equal(ingest_grow_end(g), 0);
	while ((rep = ingest_grow_read(g, 1000, &res, &bytes, &exact, &rc)) != GROW_DONE) {
		assert_int_not_equal(rep, GROW_DIED);
		if (rep == GROW_COMMIT) {
			t_check_commit(b);
			after += res.order_restarts > 0;
		}
	}
	assert_int_equal(rc, INGEST_OK);
	assert_int_equal(res.order_restarts, 1);
	assert_true(after > 0); /* it grew on after it started again */
	ingest_grow_free(g, 0);
	same_tables(b, a);
}

/* Writes the first n bytes of all to path. */
static void write_prefix(const char *path, const uint8_t *all, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(all, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Another writer's change to what a pause's layer wrote (which the server
 * never makes): the layer can no more be undone as it was made. */
static void tamper(const char *db)
{
	sqlite3 *h;

	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	sqlite3_busy_timeout(h, 5000);
	if (sqlite3_exec(h, "BEGIN IMMEDIATE; DELETE FROM slices; DELETE FROM track_depths; DELETE FROM meta; COMMIT", NULL,
			 NULL, NULL) != SQLITE_OK)
		fail_msg("tamper: %s", sqlite3_errmsg(h));
	sqlite3_close(h);
}

/* Pauses: once bytes stop, the trace equals a file of the bytes received,
 * row for row (cut records, open slices, held events and all), and
 * growing again undoes that layer; the end is the batch's. With tampered,
 * the first layer is changed by another writer before bytes come again:
 * the stream, unable to undo it, starts again from its first byte (never
 * an error), and its next pause and its end are as exact. */
static void write_cpus(const char *path, uint64_t seed, int switches);
static int t_check_cpu_lod(const char *path);

/* cpus: the archive is write_cpus', whose cpu tracks have their level of
 * detail at the pauses (each pause's layer removes it and writes the
 * file's; the next bytes undo that). */
static void grow_pauses(uint64_t seed, int tampered, int cpus)
{
	char in[96], a[96], src[96], b[96], pre[96], ref[96], err[256];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	struct ingest_grow *g;
	uint64_t r = seed, bytes = 0, off = 0;
	uint8_t *all;
	size_t n;
	FILE *out;
	int rc = -1, pauses = 0, exact = 0, with_levels = 0;
	enum grow_report rep;

	path_of(in, sizeof(in), "in.fxt");
	path_of(a, sizeof(a), "a.db");
	path_of(src, sizeof(src), "source");
	path_of(b, sizeof(b), "paused.db");
	path_of(pre, sizeof(pre), "prefix.fxt");
	path_of(ref, sizeof(ref), "prefix.db");
	if (cpus)
		write_cpus(in, 5, 20000);
	else
		write_random(in, 777, 8000);
	ingest(in, a, 16, 0);
	all = t_read_file(in, &n);
	assert_non_null(out = fopen(src, "wb"));
	o.extent_rows = 16;
	o.sort_budget = 256;
	o.order_window = 8192; /* events held back at each pause */
	assert_non_null(g = ingest_grow_start(SELF, src, b, &o, 50, -1, err, sizeof(err)));
	while (off < n) {
		size_t piece = 1 + (size_t)(xorshift64(&r) % (n / 5));

		if (piece > n - off)
			piece = n - off;
		if (off + piece == n)
			piece--; /* the last pause cuts the last record */
		assert_int_equal(fwrite(all + off, 1, piece, out), piece);
		fflush(out);
		off += piece;
		assert_int_equal(ingest_grow_size(g, off), 0);
		/* wait for the pause's commit: it holds every byte */
		do {
			rep = ingest_grow_read(g, 2000, &res, &bytes, &exact, &rc);
			if (rep == GROW_DIED || rep == GROW_DONE)
				fail_msg("the ingest ended: %d %s", rc, res.error);
			if (cpus && rep == GROW_COMMIT && !exact) /* a commit while growing, after a pause undone */
				with_levels += t_check_cpu_lod(b);
		} while (!(rep == GROW_COMMIT && bytes == off && exact));
		write_prefix(pre, all, off);
		ingest(pre, ref, 16, 0);
		same_tables(b, ref);
		if (tampered && pauses == 0)
			tamper(b);
		pauses++;
		if (off == n - 1)
			break;
	}
	assert_int_equal(fwrite(all + off, 1, n - off, out), n - off);
	fclose(out);
	assert_int_equal(ingest_grow_size(g, n), 0);
	assert_int_equal(ingest_grow_end(g), 0);
	while ((rep = ingest_grow_read(g, 1000, &res, &bytes, &exact, &rc)) != GROW_DONE)
		assert_int_not_equal(rep, GROW_DIED);
	assert_int_equal(rc, INGEST_OK);
	assert_true(pauses >= 2);
	if (cpus)
		assert_true(with_levels > 0);
	if (tampered) /* it started again once: the undo refused */
		assert_true(res.order_restarts >= 1);
	ingest_grow_free(g, 0);
	free(all);
	same_tables(b, a);
}

static void t_grow_pauses(void **state)
{
	(void)state;
	grow_pauses(991, 0, 0);
}

static void t_grow_pauses_cpus(void **state)
{
	(void)state;
	grow_pauses(17, 0, 1);
}

static void t_grow_undo_refused(void **state)
{
	(void)state;
	grow_pauses(991, 1, 0);
}

/* Rows of the level of detail, as a sink collects them (lod.h). */
struct t_lod {
	struct t_lod_row {
		int level;
		int64_t first, last;
		uint8_t *blob;
		size_t len;
	} *rows;
	size_t n;
};

static int t_lod_put(void *ctx, const struct lod_key *k, int level, int64_t first, int64_t last, uint8_t *blob,
		     size_t len)
{
	struct t_lod *t = ctx;

	(void)k;
	t->rows = realloc(t->rows, (t->n + 1) * sizeof(*t->rows));
	assert_non_null(t->rows);
	t->rows[t->n++] = (struct t_lod_row){ level, first, last, blob, len };
	return 0;
}

static int t_lod_drop(void *ctx, const struct lod_key *k, int level, int64_t from)
{
	(void)ctx, (void)k, (void)level, (void)from;
	return 0; /* one commit of a new group drops nothing */
}

static int t_lod_cmp(const void *x, const void *y)
{
	const struct t_lod_row *a = x, *b = y;

	if (a->level != b->level)
		return a->level < b->level ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* Every cpu track of a commit has the level of detail of the runs it
 * holds, as one commit of them makes it (lod_build's rows): its runs read
 * by ordinal through its extents, one still on its cpu lasting to the
 * trace's end. Returns the cpu tracks with levels stored. */
static int t_check_cpu_lod(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *tr, *runs, *rows;
	int with_levels = 0;
	int64_t end;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	end = scalar(db, "SELECT value FROM meta WHERE key = 'end_ns'");
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, coalesce(lod_levels, 0) FROM tracks WHERE kind = 'cpu'", -1,
					    &tr, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT s.ts, s.dur, s.thread_id FROM extents e JOIN sched s ON s.id "
						"BETWEEN e.first_id AND e.first_id + e.count - 1 WHERE e.track_id = ?1 "
						"AND e.depth = 0 ORDER BY e.first_ord, s.id",
					    -1, &runs, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT level, first_bucket, last_bucket, buckets FROM lod WHERE "
						"track_id = ?1 AND depth = 0 ORDER BY level, first_bucket",
					    -1, &rows, NULL), SQLITE_OK);
	while (sqlite3_step(tr) == SQLITE_ROW) {
		struct lod_key key = { sqlite3_column_int64(tr, 0), 0 };
		uint64_t levels = 0, n = 0;
		struct lod_item *items = NULL;
		struct t_lod want = { 0 };
		const struct lod_sink sink = { &want, t_lod_put, t_lod_drop, NULL };
		struct lod_state st;
		size_t i = 0;

		sqlite3_bind_int64(runs, 1, key.track_id);
		while (sqlite3_step(runs) == SQLITE_ROW) {
			int64_t ts = sqlite3_column_int64(runs, 0), dur = sqlite3_column_int64(runs, 1);

			items = realloc(items, (n + 1) * sizeof(*items));
			assert_non_null(items);
			items[n++] = (struct lod_item){ .ts = ts, .end = dur < 0 ? (end > ts ? end : ts) : ts + dur,
							.open = dur < 0,
							.name = (uint32_t)sqlite3_column_int64(runs, 2) };
		}
		sqlite3_reset(runs);
		lod_state_init(&st, &key, 0);
		assert_int_equal(lod_commit(&st, items, 0, (size_t)n, &sink, &levels), 0);
		lod_state_fini(&st);
		assert_int_equal((int64_t)levels, sqlite3_column_int64(tr, 1));
		with_levels += levels != 0;
		if (want.n > 1)
			qsort(want.rows, want.n, sizeof(*want.rows), t_lod_cmp);
		sqlite3_bind_int64(rows, 1, key.track_id);
		for (; sqlite3_step(rows) == SQLITE_ROW; i++) {
			assert_true(i < want.n);
			assert_int_equal(sqlite3_column_int(rows, 0), want.rows[i].level);
			assert_int_equal(sqlite3_column_int64(rows, 1), want.rows[i].first);
			assert_int_equal(sqlite3_column_int64(rows, 2), want.rows[i].last);
			assert_int_equal((size_t)sqlite3_column_bytes(rows, 3), want.rows[i].len);
			assert_memory_equal(sqlite3_column_blob(rows, 3), want.rows[i].blob, want.rows[i].len);
		}
		sqlite3_reset(rows);
		assert_int_equal(i, want.n);
		for (i = 0; i < want.n; i++)
			free(want.rows[i].blob);
		free(want.rows);
		free(items);
	}
	sqlite3_finalize(tr);
	sqlite3_finalize(runs);
	sqlite3_finalize(rows);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return with_levels;
}

/* A trace busy on its cpus: thousands of switches on 4 cpus among threads
 * that keep coming (each new thread's track moves the cpu tracks' ids up),
 * cpu 0 used only from halfway (so is every cpu track's id after it), now
 * and then the idle thread, and 3 switches on cpu 2 written at the end with
 * times at its start; slices on the threads carry the time matched. */
static void write_cpus(const char *path, uint64_t seed, int switches)
{
	struct fxtw w;
	uint64_t r = seed, on[4] = { 0 }, ts = 1000;
	int i, threads = 2;

	t_open(&w);
	for (i = 0; i < switches; i++) {
		uint16_t cpu = (uint16_t)(i < switches / 2 ? 1 + xorshift64(&r) % 3 : xorshift64(&r) % 4);
		uint64_t tid = 100 + xorshift64(&r) % (uint64_t)threads;
		int idle = xorshift64(&r) % 7 == 0;
		struct fxtw_arg wt = fxtw_arg_i32(FXTW_INL("incoming_weight"), idle ? INT32_MIN : (int32_t)(i % 50));
		struct fxtw_thr t = FXTW_TINL(7, tid);

		ts += 1 + xorshift64(&r) % 2000;
		if (i % 400 == 0)
			threads++;
		fxtw_context_switch(&w, cpu, 2 + (unsigned)(xorshift64(&r) % 3), ts, on[cpu], idle ? 0 : tid, &wt, 1);
		on[cpu] = idle ? 0 : tid;
		if (!idle) {
			fxtw_begin(&w, t, C, FXTW_INL("work"), ts + 1, NULL, 0);
			fxtw_end(&w, t, C, FXTW_INL("work"), ts + 2, NULL, 0);
		}
	}
	for (i = 1; i <= 3; i++) { /* written last, far behind their cpu's: left to the end */
		struct fxtw_arg wt = fxtw_arg_i32(FXTW_INL("incoming_weight"), 9);

		fxtw_context_switch(&w, 2, 3, 1000 + 100 * (uint64_t)i, 100, 101, &wt, 1);
	}
	assert_int_equal(fxtw_save(&w, path), 0);
	fxtw_fini(&w);
}

/* A growing trace's cpus at every commit: their runs in their tracks'
 * extents, their level of detail that of the runs committed, through the
 * tracks' ids moving up; the switches written late left out and counted;
 * the end is the file's ingest, table for table. */
static void t_grow_cpus(void **state)
{
	char in[96], a[96], b[96];
	uint64_t seed, r;

	(void)state;
	path_of(in, sizeof(in), "cpus.fxt");
	path_of(a, sizeof(a), "cpus_a.db");
	path_of(b, sizeof(b), "cpus_b.db");
	for (seed = 1; seed <= 2; seed++) {
		struct ingest_opts o = { 0 };
		struct ingest_result res;
		struct ingest_stream *s;
		uint8_t *bytes;
		size_t n, off = 0;
		int commits = 0, with_levels = 0;

		r = seed * 6007;
		write_cpus(in, seed, 40000);
		ingest(in, a, 16, 0);
		bytes = t_read_file(in, &n);
		o.extent_rows = 16;
		o.growing = 1;
		o.sort_budget = 256;
		assert_non_null(s = ingest_stream_open(b, &o, &res));
		while (off < n) {
			size_t piece = 1 + (size_t)(xorshift64(&r) % 60000);
			int committed;

			if (piece > n - off)
				piece = n - off;
			assert_int_equal(ingest_stream_feed(s, bytes + off, piece), INGEST_OK);
			off += piece;
			if (xorshift64(&r) % 4 != 0)
				continue;
			assert_int_equal(ingest_stream_commit(s, &committed), INGEST_OK);
			if (committed) {
				t_check_commit(b);
				if (res.sched_late == 0) /* none left out yet: every run shown is final */
					assert_int_equal(t_runs_not_final(b, a), 0);
				with_levels += t_check_cpu_lod(b);
				commits++;
			}
		}
		assert_true(commits > 5);
		assert_true(with_levels > 0);
		assert_int_equal(ingest_stream_end(s), INGEST_OK);
		assert_true(res.sched_late > 0); /* left out, counted, and in their place at the end: */
		ingest_stream_free(s);
		free(bytes);
		same_tables(b, a);
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

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_commits_end_as_batch),
		cmocka_unit_test(t_growing_stream),
		cmocka_unit_test(t_grow_child),
		cmocka_unit_test(t_grow_page_size),
		cmocka_unit_test(t_grow_late_end), cmocka_unit_test(t_grow_scopes_upload),
		cmocka_unit_test(t_grow_pauses),
		cmocka_unit_test(t_grow_undo_refused),
		cmocka_unit_test(t_grow_cpus),
		cmocka_unit_test(t_grow_pauses_cpus),
	};

	if (argc > 1 && strcmp(argv[1], "grow-child") == 0) /* this program is its own child */
		return ingest_grow_child_main();
	(void)argv;
	return cmocka_run_group_tests(tests, setup, teardown);
}
