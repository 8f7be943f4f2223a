/*
 * Unit tests of the read cursor (query/cursor.c) and of the promise the
 * endpoints built on it make (and compare's, query/compare.c): a read that fails anywhere answers QRY_EDB,
 * never a short or altered reply.
 *
 * The cursor: after a failure it steps no more, keeps its first error,
 * and qcur_close folds the errors of a request's cursors in order.
 *
 * The endpoints: a trace with enough rows for summaries (slices, counter
 * points and cpu runs under a pixel), arguments, flows and logs is read
 * once for a reference reply of each endpoint; then the same request is
 * repeated with SQLite's progress handler interrupting the statement that
 * runs at the k-th callback, or in the k-th statement run, for k spread
 * over the whole request, in two ways: every step from there on fails (a
 * database gone bad), or only that one (a transient error, while the other
 * statements read on). Each reply must be the reference or QRY_EDB, and
 * some must be QRY_EDB; a request whose read was interrupted must answer
 * QRY_EDB, even when what it read otherwise would have made the same
 * reply (a failed read is never taken for "nothing there"). The endpoints outside the window engine are swept
 * the same way: search (through the name index, and without it), area and
 * flame graph (stored and scanned), overview, thread states, the catalog's
 * reads and the export, whose own connection gets the plan through an
 * automatic extension. The statements that only set a connection up
 * (PRAGMAs) are never interrupted.
 */
#include <inttypes.h>

#include "../testutil.h"

#include "../../query/cursor.h"
#include "../../query/query.h"

/* ---- the cursor --------------------------------------------------------- */

static int open_memory(sqlite3 **db)
{
	return sqlite3_open(":memory:", db) == SQLITE_OK &&
	       sqlite3_exec(*db, "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)", NULL, NULL, NULL) ==
		       SQLITE_OK;
}

static void test_cursor_reads_and_ends(void **state)
{
	struct qry_error err = { 0 };
	struct qcur c;
	sqlite3 *db;
	int64_t sum = 0;

	(void)state;
	assert_true(open_memory(&db));
	assert_int_equal(qcur_open(&c, db, "SELECT x FROM t ORDER BY x", &err), QRY_OK);
	while (qcur_step(&c))
		sum = sum * 10 + qcur_int(&c, 0);
	assert_int_equal(sum, 123);
	assert_int_equal(qcur_close(&c, 0), 0);
	assert_null(c.st);
	assert_int_equal(qcur_done(QRY_OK, 0, &err), QRY_OK);
	sqlite3_close(db);
}

static int interrupt_now(void *ctx)
{
	(void)ctx;
	return 1;
}

static void test_cursor_error_sticks(void **state)
{
	struct qry_error err = { 0 };
	struct qcur a, b;
	sqlite3 *db;

	(void)state;
	assert_true(open_memory(&db));
	assert_int_equal(qcur_open(&a, db, "SELECT x FROM t", &err), QRY_OK);
	assert_int_equal(qcur_open(&b, db, "SELECT x FROM t", &err), QRY_OK);
	sqlite3_progress_handler(db, 1, interrupt_now, NULL);
	assert_int_equal(qcur_step(&a), 0);
	assert_int_equal(a.err, SQLITE_INTERRUPT);
	sqlite3_progress_handler(db, 0, NULL, NULL);
	/* the database reads again, the cursor does not: its rows are not all there */
	assert_int_equal(qcur_step(&a), 0);
	assert_int_equal(a.err, SQLITE_INTERRUPT);
	qcur_fail(&a, SQLITE_CORRUPT); /* the first error stays */
	assert_int_equal(a.err, SQLITE_INTERRUPT);
	assert_int_equal(qcur_step(&b), 1);
	qcur_fail(&b, SQLITE_CORRUPT);
	assert_int_equal(qcur_step(&b), 0);
	/* closing folds the first error of the chain */
	assert_int_equal(qcur_close(&b, qcur_close(&a, 0)), SQLITE_INTERRUPT);
	assert_int_equal(qcur_done(QRY_OK, SQLITE_INTERRUPT, &err), QRY_EDB);
	assert_non_null(strstr(err.msg, "cannot be read"));
	assert_int_equal(qcur_done(QRY_ENOTFOUND, SQLITE_INTERRUPT, &err), QRY_ENOTFOUND);
	sqlite3_close(db);
}

static void test_cursor_open_fails(void **state)
{
	struct qry_error err = { 0 };
	struct qcur c;
	sqlite3 *db;

	(void)state;
	assert_true(open_memory(&db));
	assert_int_equal(qcur_open(&c, db, "SELECT x FROM nowhere", &err), QRY_EDB);
	if (strstr(err.msg, "nowhere") == NULL)
		fail_msg("the message does not name the statement's error: %s", err.msg);
	assert_null(c.st);
	assert_int_equal(qcur_step(&c), 0); /* never touches the missing statement */
	assert_int_not_equal(qcur_close(&c, 0), 0);
	sqlite3_close(db);
}

/* ---- every endpoint, failing anywhere ------------------------------------ */

#define CAT FXTW_IDX(1)
#define NAME(i) FXTW_IDX(2 + (i) % 4)

static void write_trace(struct fxtw *w)
{
	const struct fxtw_thr a = FXTW_TINL(1, 10), b = FXTW_TINL(1, 11);
	struct fxtw_arg arg[3];
	uint64_t t, k;

	fxtw_init(w, 0);
	fxtw_magic(w);
	fxtw_string(w, 1, "cat");
	fxtw_string(w, 2, "alpha");
	fxtw_string(w, 3, "beta");
	fxtw_string(w, 4, "gamma");
	fxtw_string(w, 5, "delta");
	fxtw_string(w, 6, "v");
	/* a long slice over many tiny ones, some with arguments */
	fxtw_begin(w, a, CAT, NAME(0), 1000, NULL, 0);
	for (t = 1010, k = 0; k < 6000; k++, t += 37) {
		arg[0] = fxtw_arg_i64(FXTW_INL("k"), (int64_t)k);
		arg[1] = fxtw_arg_str(FXTW_INL("s"), FXTW_INL("text"));
		arg[2] = fxtw_arg_u64(FXTW_INL("u"), UINT64_MAX - k);
		fxtw_complete(w, a, CAT, NAME(k), t, t + 5 + k % 20, arg, k % 50 == 0 ? 3 : 0);
		if (k % 500 == 0) {
			fxtw_flow(w, 8, a, CAT, FXTW_INL("f"), t + 1, k + 1);
			fxtw_flow(w, 10, a, CAT, FXTW_INL("f"), t + 38, k + 1);
		}
		if (k % 400 == 0)
			fxtw_log(w, a, t, "a log line");
	}
	fxtw_end(w, a, CAT, NAME(0), t + 10, NULL, 0);
	for (t = 1000, k = 0; k < 3000; k++, t += 71)
		fxtw_complete(w, b, CAT, NAME(k + 1), t, t + 3, NULL, 0);
	for (t = 1000, k = 0; k < 6000; k++, t += 40) {
		arg[0] = fxtw_arg_i64(FXTW_IDX(6), (int64_t)(k * 7919 % 1000));
		fxtw_counter(w, a, CAT, FXTW_INL("ctr"), t, 1, arg, 1);
	}
	for (t = 1000, k = 0; k < 6000; k++, t += 40)
		fxtw_context_switch(w, 0, 3, t, k % 2 ? 10 : 11, k % 2 ? 11 : 10, NULL, 0);
}

static struct tdb T;

static int plan_attach(sqlite3 *db, const char **msg, const struct sqlite3_api_routines *api);

static int setup(void **state)
{
	struct fxtw w;

	(void)state;
	write_trace(&w);
	tdb_ingest(&T, &w);
	fxtw_fini(&w);
	if (T.rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", T.rc, T.res.error);
	sqlite3_auto_extension((void (*)(void))plan_attach);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sqlite3_reset_auto_extension();
	tdb_close(&T);
	return 0;
}

/* One request of the sweep. */
struct req {
	const char *what;
	int kind;           /* which endpoint, see ask() */
	int64_t key;        /* track, cpu or slice id; a thread's tid (states) */
	struct qry_window w;
	const char *text;   /* search: the text; area: the name listed (NULL: none) */
	struct qry_search_page pg;
	int plain;          /* read the copy of the trace without its name index */
};

enum {
	ASK_TRACKS,
	ASK_SLICES,
	ASK_SLICE,
	ASK_COUNTERS,
	ASK_SCHED,
	ASK_FLOWS,
	ASK_LOGS,
	ASK_STATS,
	ASK_COMPARE,
	ASK_SEARCH,
	ASK_AREA,
	ASK_FLAME,
	ASK_OVERVIEW,
	ASK_STATES,
	ASK_META,
	ASK_NAME_STATS,
	ASK_NAME_MATCH,
	ASK_EXPORT,
};

/* The two thread tracks, the areas' and flame graphs' selection (setup). */
static int64_t area_tracks[2];

/* qry_name_stats's visitor: each name's figures, one line each. */
static int put_name_stat(void *ctx, const struct qry_name_stat *s)
{
	struct jbuf *out = ctx;

	jb_arr(out);
	jb_str(out, s->name);
	jb_i64(out, s->count);
	jb_i64(out, s->ended);
	jb_i64(out, s->total_ns);
	jb_i64(out, s->max_ns);
	jb_u64(out, s->sketch_len);
	jb_arr_end(out);
	return 0;
}

/* The whole export of the trace's file into out: QRY_OK, or QRY_EDB when
 * it cannot be opened or a read fails. */
static int ask_export(struct jbuf *out, struct qry_error *err)
{
	struct qry_export *e = qry_export_open(T.path, NULL, err);
	char buf[4096];
	long n;

	if (e == NULL)
		return err->code;
	while ((n = qry_export_read(e, buf, sizeof(buf))) > 0)
		jb_raw(out, buf, (size_t)n);
	qry_export_close(e);
	if (n == 0)
		return QRY_OK;
	err->code = QRY_EDB; /* qry_export_read says no more than -1 */
	return QRY_EDB;
}

static int ask(sqlite3 *db, const struct req *r, struct jbuf *out, struct qry_error *err)
{
	/* the trace against itself, one half against the other, by thread when key is set */
	const struct qry_compare_opts cmp = { { 0, 100000, 0, 0, 0, 0, 0 },
					      { 100001, INT64_MAX, 0, 0, 0, 0, 0 },
					      (int)r->key,
					      QRY_CMP_TOTAL, 100 };

	switch (r->kind) {
	case ASK_COMPARE:
		return qry_compare(db, db, &cmp, out, err);
	case ASK_TRACKS:
		return qry_tracks(db, out, err);
	case ASK_SLICES:
		return qry_slices(db, r->key, &r->w, out, err);
	case ASK_SLICE:
		return qry_slice(db, r->key, out, err);
	case ASK_COUNTERS:
		return qry_counters(db, r->key, &r->w, out, err);
	case ASK_SCHED:
		return qry_sched(db, r->key, &r->w, out, err);
	case ASK_FLOWS:
		return qry_flows(db, &r->w, out, err);
	case ASK_LOGS:
		return qry_logs(db, &r->w, out, err);
	case ASK_SEARCH:
		return qry_search(db, r->text, &r->pg, out, err);
	case ASK_AREA:
		return qry_area(db, area_tracks, 2, &r->w, r->text, out, err);
	case ASK_FLAME:
		return qry_flame(db, area_tracks, 2, &r->w, out, err);
	case ASK_OVERVIEW:
		return qry_overview(db, &r->w, 100, out, err);
	case ASK_STATES:
		return qry_thread_states(db, 1, r->key, &r->w, out, err);
	case ASK_META:
		return qry_trace_metadata(db, out, err);
	case ASK_NAME_STATS:
		return qry_name_stats(db, put_name_stat, out, err);
	case ASK_NAME_MATCH:
		return qry_name_stats_matching(db, r->text, put_name_stat, out, err);
	case ASK_EXPORT:
		return ask_export(out, err);
	default:
		return qry_stats(db, &r->w, out, err);
	}
}

/*
 * Where to interrupt: at the fail_at-th progress callback (every 8 VM
 * instructions) of the request, or, by statement, in the fail_at-th run of
 * a statement (counted where each begins, SQLITE_TRACE_STMT), so that even
 * the shortest lookups are hit; from there on, or only there.
 */
struct plan {
	long calls;   /* progress callbacks, or statement runs, so far */
	long fail_at; /* 0: never */
	int once;
	int by_stmt;
	long hit;     /* the statement run last interrupted */
	long fired;   /* interrupts delivered in this request */
	int pragma;   /* the statement running sets up the connection (a PRAGMA): not interrupted */
};

static int plan_tick(void *ctx)
{
	struct plan *p = ctx;
	int stop;

	if (p->pragma)
		return 0;
	if (p->by_stmt) {
		if (p->fail_at == 0 || p->calls < p->fail_at || (p->once && p->calls > p->fail_at))
			return 0;
		if (p->once && p->hit == p->calls)
			return 0;
		p->hit = p->calls;
		p->fired++;
		return 1;
	}
	p->calls++;
	stop = p->fail_at > 0 && (p->once ? p->calls == p->fail_at : p->calls >= p->fail_at);
	p->fired += stop;
	return stop;
}

static int plan_trace(unsigned what, void *ctx, void *a, void *b)
{
	struct plan *p = ctx;

	(void)a;
	if (what != SQLITE_TRACE_STMT)
		return 0;
	p->pragma = strncmp((const char *)b, "PRAGMA", 6) == 0;
	if (p->by_stmt && !p->pragma)
		p->calls++;
	return 0;
}

/* The plan of the request running, for the connections it opens itself
 * (the export's): plan_attach puts it on each. NULL between requests. */
static struct plan *attach_plan;

static void plan_put(sqlite3 *db, struct plan *p)
{
	sqlite3_progress_handler(db, p ? (p->by_stmt ? 1 : 8) : 0, p ? plan_tick : NULL, p);
	sqlite3_trace_v2(db, p ? SQLITE_TRACE_STMT : 0, p ? plan_trace : NULL, p);
}

/* An automatic extension (sqlite3_auto_extension): runs on every
 * connection opened in the process. */
static int plan_attach(sqlite3 *db, const char **msg, const struct sqlite3_api_routines *api)
{
	(void)msg;
	(void)api;
	if (attach_plan != NULL)
		plan_put(db, attach_plan);
	return SQLITE_OK;
}

/* The reply of r under plan p: its text (owned), or NULL when it failed
 * with QRY_EDB; any other result fails the test. */
static char *reply_under(sqlite3 *db, const struct req *r, struct plan *p)
{
	struct qry_error err = { 0 };
	struct jbuf b;
	int rc;

	jb_init(&b);
	p->calls = 0;
	p->hit = 0;
	p->fired = 0;
	p->pragma = 0;
	plan_put(db, p);
	attach_plan = p;
	rc = ask(db, r, &b, &err);
	attach_plan = NULL;
	plan_put(db, NULL);
	if (rc == QRY_EDB) {
		jb_fini(&b);
		return NULL;
	}
	if (rc != QRY_OK)
		fail_msg("%s: result %d (%s) under an interrupt at %ld", r->what, rc, err.msg, p->fail_at);
	return jb_take(&b, NULL);
}

/* Sweeps interrupts over the whole of request r (mode: bit 0 once, bit 1
 * by statement): returns how many of them answered QRY_EDB; every other
 * reply must equal the reference. */
static int sweep(sqlite3 *db, const struct req *r, int mode)
{
	struct plan p = { 0 };
	char *ref, *got;
	long total, k, step;
	int errors = 0;

	p.by_stmt = mode >> 1 & 1;
	ref = reply_under(db, r, &p);
	total = p.calls;
	assert_non_null(ref);
	assert_true(total > 0);
	step = total / 97 + 1;
	for (k = 1; k <= total; k += step) {
		p.fail_at = k;
		p.once = mode & 1;
		if ((got = reply_under(db, r, &p)) == NULL) {
			errors++;
			continue;
		}
		if (strcmp(got, ref) != 0)
			fail_msg("%s: an interrupt at %ld of %ld (%s%s) answered a different reply:\n%.300s\nnot\n%.300s",
				 r->what, k, total, p.by_stmt ? "statement runs, " : "", p.once ? "once" : "from then on",
				 got, ref);
		if (p.fired > 0)
			fail_msg("%s: an interrupt at %ld of %ld (%s%s) stopped a read, yet the request answered",
				 r->what, k, total, p.by_stmt ? "statement runs, " : "", p.once ? "once" : "from then on");
		free(got);
	}
	free(ref);
	return errors;
}

static void test_a_failed_read_is_never_a_reply(void **state)
{
	int64_t ta = tdb_int(&T, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id WHERE th.tid = 10");
	int64_t tc = tdb_int(&T, "SELECT id FROM tracks WHERE kind = 'counter'");
	int64_t args = tdb_int(&T, "SELECT min(id) FROM slices WHERE arg_set_id IS NOT NULL");
	int64_t flow = tdb_int(&T, "SELECT min(from_slice_id) FROM flows");
	const struct req reqs[] = {
		{ "tracks", ASK_TRACKS, 0, { 0 }, NULL, { 0 }, 0 },
		{ "slices, exact", ASK_SLICES, ta, { 0, INT64_MAX, 0, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "slices, summaries", ASK_SLICES, ta, { 0, INT64_MAX, 4096, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "slices, summaries, columns", ASK_SLICES, ta, { 0, INT64_MAX, 4096, 1000000, 1, 0, 0 }, NULL, { 0 }, 0 },
		{ "slices, a window, cut", ASK_SLICES, ta, { 50000, 90000, 2048, 300, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "slice with arguments", ASK_SLICE, args, { 0 }, NULL, { 0 }, 0 },
		{ "slice with a flow", ASK_SLICE, flow, { 0 }, NULL, { 0 }, 0 },
		{ "counters, exact", ASK_COUNTERS, tc, { 30000, 60000, 0, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "counters, summaries", ASK_COUNTERS, tc, { 0, INT64_MAX, 4096, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "sched, exact", ASK_SCHED, 0, { 30000, 60000, 0, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "sched, summaries", ASK_SCHED, 0, { 0, INT64_MAX, 4096, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "flows", ASK_FLOWS, 0, { 0, INT64_MAX, 0, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "logs", ASK_LOGS, 0, { 0, INT64_MAX, 0, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "stats", ASK_STATS, 0, { 0, INT64_MAX, 0, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 },
		{ "compare", ASK_COMPARE, 0, { 0 }, NULL, { 0 }, 0 },
		{ "compare by thread", ASK_COMPARE, 1, { 0 }, NULL, { 0 }, 0 },
	};
	size_t i;

	(void)state;
	assert_true(ta > 0 && tc > 0 && args > 0 && flow > 0);
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		int mode;

		for (mode = 0; mode < 4; mode++)
			if (sweep(T.db, &reqs[i], mode) == 0)
				fail_msg("%s: no interrupt was met (mode %d)", reqs[i].what, mode);
	}
}

/* A copy of the trace in memory with sql run on it (the caller closes
 * it). */
static sqlite3 *copy_with(const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_backup *b;

	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	b = sqlite3_backup_init(db, "main", T.db, "main");
	assert_non_null(b);
	assert_int_equal(sqlite3_backup_step(b, -1), SQLITE_DONE);
	assert_int_equal(sqlite3_backup_finish(b), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	return db;
}

/* The copy without its name index, which search then answers by
 * statements over slices (search.c). */
static sqlite3 *copy_without_index(void)
{
	return copy_with("DROP TABLE name_index");
}

/* The endpoints outside the window engine (search, area, flame, overview,
 * thread states, the catalog's reads, export): an interrupt anywhere is
 * QRY_EDB, never a shorter page, count, histogram, table or file. */
static void test_a_failed_read_is_never_a_reply_elsewhere(void **state)
{
	const struct qry_window all = { INT64_MIN, INT64_MAX, 0, 1000, 0, 0, 0 };
	const struct qry_window part = { 50000, 90000, 0, 1000, 0, 0, 0 };
	const struct qry_window few = { INT64_MIN, INT64_MAX, 0, 3, 0, 0, 0 };
	const struct qry_window ov_part = { 50000, 90000, 0, 0, 0, 1, 1 };
	const struct qry_search_page first = { 50, QRY_SEARCH_FIRST, 0, 0, 0, 0, 0 };
	const struct qry_search_page after = { 40, QRY_SEARCH_AFTER, 60000, 0, 25, 1000, 250000 };
	const struct qry_search_page before = { 40, QRY_SEARCH_BEFORE, 120000, 0, 7, 50000, 90000 };
	const struct req reqs[] = {
		{ "search, first page", ASK_SEARCH, 0, { 0 }, "a", first, 0 },
		{ "search, after, histogram", ASK_SEARCH, 0, { 0 }, "a", after, 0 },
		{ "search, before, histogram", ASK_SEARCH, 0, { 0 }, "ET", before, 0 },
		{ "search without the index, after", ASK_SEARCH, 0, { 0 }, "a", after, 1 },
		{ "search without the index, before", ASK_SEARCH, 0, { 0 }, "ET", before, 1 },
		{ "area, whole trace (stored)", ASK_AREA, 0, all, NULL, { 0 }, 0 },
		{ "area, a window (scan)", ASK_AREA, 0, part, NULL, { 0 }, 0 },
		{ "area, one name", ASK_AREA, 0, part, "beta", { 0 }, 0 },
		{ "flame, whole trace (stored)", ASK_FLAME, 0, all, NULL, { 0 }, 0 },
		{ "flame, whole trace, few nodes", ASK_FLAME, 0, few, NULL, { 0 }, 0 },
		{ "flame, a window (scan)", ASK_FLAME, 0, part, NULL, { 0 }, 0 },
		{ "overview, whole trace", ASK_OVERVIEW, 0, all, NULL, { 0 }, 0 },
		{ "overview, a window", ASK_OVERVIEW, 0, ov_part, NULL, { 0 }, 0 },
		{ "thread states", ASK_STATES, 10, part, NULL, { 0 }, 0 },
		{ "trace metadata", ASK_META, 0, { 0 }, NULL, { 0 }, 0 },
		{ "name statistics", ASK_NAME_STATS, 0, { 0 }, NULL, { 0 }, 0 },
		{ "name statistics matching (stored)", ASK_NAME_MATCH, 0, { 0 }, "a", { 0 }, 0 },
		{ "name statistics matching (from the slices)", ASK_NAME_MATCH, 0, { 0 }, "a", { 0 }, 2 },
		{ "export", ASK_EXPORT, 0, { 0 }, NULL, { 0 }, 0 },
	};
	sqlite3 *plain = copy_without_index(), *unstated = copy_with("DELETE FROM name_stats");
	size_t i;

	(void)state;
	area_tracks[0] = tdb_int(&T, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id WHERE th.tid = 10");
	area_tracks[1] = tdb_int(&T, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id WHERE th.tid = 11");
	assert_true(area_tracks[0] > 0 && area_tracks[1] > 0);
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		int mode;

		for (mode = 0; mode < 4; mode++)
			if (sweep(reqs[i].plain == 1 ? plain : reqs[i].plain == 2 ? unstated : T.db, &reqs[i], mode) == 0)
				fail_msg("%s: no interrupt was met (mode %d)", reqs[i].what, mode);
	}
	sqlite3_close(plain);
	sqlite3_close(unstated);
}

/* A name's figures as one line, its sketch's bytes in hex. */
static int name_stat_line(void *ctx, const struct qry_name_stat *s)
{
	struct jbuf *out = ctx;
	char line[256];
	size_t i;

	snprintf(line, sizeof(line), "%s %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " ", s->name, s->count, s->ended,
		 s->total_ns, s->max_ns);
	jb_raw(out, line, strlen(line));
	for (i = 0; i < s->sketch_len; i++) {
		snprintf(line, sizeof(line), "%02x", ((const unsigned char *)s->sketch)[i]);
		jb_raw(out, line, 2);
	}
	jb_raw(out, "\n", 1);
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of names matching q on db, sorted: one string, "" for none. */
static char *name_lines(sqlite3 *db, const char *q)
{
	struct qry_error err = { 0 };
	struct jbuf b, out;
	char *lines[4096], *p, *r, *save = NULL;
	size_t n = 0, i;

	jb_init(&b);
	assert_int_equal(qry_name_stats_matching(db, q, name_stat_line, &b, &err), QRY_OK);
	jb_raw(&b, "", 1);
	for (p = strtok_r(b.p, "\n", &save); p != NULL && n < 4096; p = strtok_r(NULL, "\n", &save))
		lines[n++] = p;
	qsort(lines, n, sizeof(*lines), line_cmp);
	jb_init(&out);
	for (i = 0; i < n; i++) {
		jb_raw(&out, lines[i], strlen(lines[i]));
		jb_raw(&out, "\n", 1);
	}
	jb_raw(&out, "", 1);
	r = strdup(out.p);
	jb_fini(&out);
	jb_fini(&b);
	return r;
}

/* A growing trace between pauses has no name_stats: the figures made from
 * its slices are those ingest stored, sketch bytes included; names match
 * in any case, and a text no name holds has none. */
static void test_name_stats_from_slices_are_the_stored_ones(void **state)
{
	const char *qs[] = { "a", "ET", "e", "zzz-none" };
	sqlite3 *unstated = copy_with("DELETE FROM name_stats");
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		char *a = name_lines(T.db, qs[i]), *b = name_lines(unstated, qs[i]);

		if (strcmp(a, b) != 0)
			fail_msg("names matching %s: stored\n%s\nfrom the slices\n%s", qs[i], a, b);
		if (i == 0)
			assert_true(strchr(a, '\n') != NULL && strchr(a, '\n') != strrchr(a, '\n')); /* two names or more */
		if (i == 3)
			assert_string_equal(a, "");
		free(a);
		free(b);
	}
	sqlite3_close(unstated);
}

/* A database that contradicts itself (a chunk, a record or a row of nodes
 * that does not decode, a slice an extent names that is not there) is
 * QRY_EDB, never a reply made of what could be read. */
static void test_a_damaged_database_is_never_a_reply(void **state)
{
	const struct qry_window all = { INT64_MIN, INT64_MAX, 0, 1000, 0, 0, 0 };
	const struct qry_window part = { 50000, 90000, 0, 1000, 0, 0, 0 };
	const struct qry_search_page after = { 40, QRY_SEARCH_AFTER, 60000, 0, 25, 1000, 250000 };
	const struct {
		const char *damage;
		struct req r;
	} cases[] = {
		{ "UPDATE name_index SET data = x'ff' WHERE count > 1",
		  { "search", ASK_SEARCH, 0, { 0 }, "a", after, 0 } },
		{ "UPDATE name_index SET count = 0", { "search, counts", ASK_SEARCH, 0, { 0 }, "a", after, 0 } },
		{ "DELETE FROM slices WHERE depth = 1", { "area, a window", ASK_AREA, 0, part, NULL, { 0 }, 0 } },
		{ "DELETE FROM slices WHERE depth = 1", { "flame, a window", ASK_FLAME, 0, part, NULL, { 0 }, 0 } },
		{ "UPDATE track_stacks SET nodes = x'ff'", { "flame, stored", ASK_FLAME, 0, all, NULL, { 0 }, 0 } },
		{ "UPDATE lod SET buckets = x'ff'", { "overview", ASK_OVERVIEW, 0, all, NULL, { 0 }, 0 } },
		{ "DELETE FROM slices WHERE depth = 1", { "overview, a window", ASK_OVERVIEW, 0, part, NULL, { 0 }, 0 } },
	};
	size_t i;

	(void)state;
	area_tracks[0] = tdb_int(&T, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id WHERE th.tid = 10");
	area_tracks[1] = tdb_int(&T, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id WHERE th.tid = 11");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sqlite3 *db = copy_with(cases[i].damage);
		struct qry_error err = { 0 };
		struct jbuf b;
		int rc;

		jb_init(&b);
		rc = ask(db, &cases[i].r, &b, &err);
		if (rc != QRY_EDB)
			fail_msg("%s after %s: result %d (%s), not QRY_EDB", cases[i].r.what, cases[i].damage, rc, err.msg);
		assert_non_null(strstr(err.msg, "cannot be read"));
		jb_fini(&b);
		sqlite3_close(db);
	}
}

/* The replies the sweep compares hold what they should: summaries where
 * asked, arguments, flows. */
static void test_the_sweep_reads_what_it_means_to(void **state)
{
	const struct req r = { "slices", ASK_SLICES,
			       tdb_int(&T, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id "
					   "WHERE th.tid = 10"),
			       { 0, INT64_MAX, 4096, 1000000, 0, 0, 0 }, NULL, { 0 }, 0 };
	struct plan p = { 0 };
	char *s;

	(void)state;
	s = reply_under(T.db, &r, &p);
	assert_non_null(s);
	assert_non_null(strstr(s, "\"merged\""));
	free(s);
	assert_true(tdb_int(&T, "SELECT count(*) FROM flows") >= 10);
	assert_true(tdb_int(&T, "SELECT count(*) FROM logs") >= 10);
	assert_true(tdb_int(&T, "SELECT count(*) FROM sched") >= 5000);
}

int main(void)
{
	const struct CMUnitTest cursor[] = {
		cmocka_unit_test(test_cursor_reads_and_ends),
		cmocka_unit_test(test_cursor_error_sticks),
		cmocka_unit_test(test_cursor_open_fails),
	};
	const struct CMUnitTest endpoints[] = {
		cmocka_unit_test(test_the_sweep_reads_what_it_means_to),
		cmocka_unit_test(test_a_failed_read_is_never_a_reply),
		cmocka_unit_test(test_a_failed_read_is_never_a_reply_elsewhere),
		cmocka_unit_test(test_a_damaged_database_is_never_a_reply),
		cmocka_unit_test(test_name_stats_from_slices_are_the_stored_ones),
	};

	return cmocka_run_group_tests_name("the cursor", cursor, NULL, NULL) |
	       cmocka_run_group_tests_name("every endpoint, failing anywhere", endpoints, setup, teardown);
}
