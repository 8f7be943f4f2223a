/*
 * Unit tests of the area selection endpoints' queries (query/area.c,
 * query/flame.c) on a database ingested from a trace written by the test
 * writer: every figure clipped to the range, self time less the children's
 * part, zero-length and edge slices included, an unterminated slice running
 * to the trace's end, only the chosen tracks, and the flame graph merged by
 * name path.
 *
 * Trace (ns), pid 1:
 *   tid 11: Outer [0, 1000) > K [100, 300) > C [150, 200); Outer > L [500, 700);
 *           a second Outer [1200, 1300) > K [1200, 1250)
 *   tid 12: U begun at 800, never ended; an instant "End" at 2000 ends the trace
 *
 * Every test runs twice: on the default layout (one extent of ids per
 * track and depth) and with ids reserved one row at a time (every slice an
 * extent of its own, the groups interleaved; schema/trace.sql, extents).
 *
 * A selection of the whole trace is answered from what ingest stored per
 * track (track_names, track_stacks): on generated traces (deep stacks, a
 * name recurring at several depths, zero-length and unterminated slices,
 * async lanes, a counter track) its replies must be byte for byte the
 * scan's (qry_area_stored = 0), for several track sets and limits, and
 * must not read a slice (the slices are deleted before).
 */
#include <inttypes.h>

#include <cjson/cJSON.h>

#include "../ingest_util.h"
#include "../xorshift.h"

#include "../../query/query.h"
#include "../../query/query_internal.h"

enum { T_A = 1, T_B = 2 };

static struct tdb db;
static int64_t track_a, track_b;

static int setup_with(size_t extent_rows)
{
	struct ingest_opts o = { 0 };
	struct fxtw w;
	const struct fxtw_thr a = FXTW_TIDX(T_A), b = FXTW_TIDX(T_B);

	o.extent_rows = extent_rows;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "test");
	fxtw_init_record(&w, 1000000000);
	fxtw_thread(&w, T_A, 1, 11);
	fxtw_thread(&w, T_B, 1, 12);
	fxtw_begin(&w, a, FXTW_INL("c"), FXTW_INL("Outer"), 0, NULL, 0);
	fxtw_complete(&w, a, FXTW_INL("c"), FXTW_INL("K"), 100, 300, NULL, 0);
	fxtw_complete(&w, a, FXTW_INL("c"), FXTW_INL("C"), 150, 200, NULL, 0);
	fxtw_complete(&w, a, FXTW_INL("c"), FXTW_INL("L"), 500, 700, NULL, 0);
	fxtw_begin(&w, b, FXTW_INL("c"), FXTW_INL("U"), 800, NULL, 0);
	fxtw_end(&w, a, FXTW_INL("c"), FXTW_INL("Outer"), 1000, NULL, 0);
	fxtw_begin(&w, a, FXTW_INL("c"), FXTW_INL("Outer"), 1200, NULL, 0);
	fxtw_complete(&w, a, FXTW_INL("c"), FXTW_INL("K"), 1200, 1250, NULL, 0);
	fxtw_end(&w, a, FXTW_INL("c"), FXTW_INL("Outer"), 1300, NULL, 0);
	fxtw_instant(&w, FXTW_TIDX(T_B), FXTW_INL("c"), FXTW_INL("End"), 2000, NULL, 0);
	tdb_ingest_opts(&db, w.buf, w.len, &o);
	fxtw_fini(&w);
	if (db.rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", db.rc, db.res.error);
	if (extent_rows)
		assert_int_equal(tdb_int(&db, "SELECT count(*) FROM extents"), tdb_int(&db, "SELECT count(*) FROM slices"));
	track_a = tdb_int(&db, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id WHERE th.tid = 11");
	track_b = tdb_int(&db, "SELECT t.id FROM tracks t JOIN threads th ON th.id = t.thread_id WHERE th.tid = 12");
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return setup_with(0);
}

static int setup_extents(void **state)
{
	(void)state;
	return setup_with(1);
}

static int teardown(void **state)
{
	(void)state;
	tdb_close(&db);
	return 0;
}

/* Runs fn's query into a string (freed by the caller); requires QRY_OK. */
static char *run_area(const int64_t *tracks, size_t n, int64_t s, int64_t e, const char *name)
{
	struct qry_window w = { s, e, 0, 10000, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;
	size_t len;

	jb_init(&b);
	if (qry_area(db.db, tracks, n, &w, name, &b, &err) != QRY_OK)
		fail_msg("qry_area: %s", err.msg);
	return jb_take(&b, &len);
}

static char *run_flame(const int64_t *tracks, size_t n, int64_t s, int64_t e)
{
	struct qry_window w = { s, e, 0, 10000, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;
	size_t len;

	jb_init(&b);
	if (qry_flame(db.db, tracks, n, &w, &b, &err) != QRY_OK)
		fail_msg("qry_flame: %s", err.msg);
	return jb_take(&b, &len);
}

static void expect(const char *json, const char *part)
{
	if (strstr(json, part) == NULL)
		fail_msg("missing %s in %s", part, json);
}

static void test_area_clipped(void **state)
{
	char *j;

	(void)state;
	j = run_area(&track_a, 1, 200, 600, NULL);
	/* Outer counts 400 of itself; K and L 100 each inside: 200 of its own */
	expect(j, "{\"name\":\"Outer\",\"count\":1,\"wall\":400,\"self\":200,\"avg\":400.0,\"max\":400}");
	/* K [100, 300): 100 inside; C [150, 200) touches 200: counted, 0 ns */
	expect(j, "{\"name\":\"K\",\"count\":1,\"wall\":100,\"self\":100,\"avg\":100.0,\"max\":100}");
	expect(j, "{\"name\":\"C\",\"count\":1,\"wall\":0,\"self\":0,");
	expect(j, "{\"name\":\"L\",\"count\":1,\"wall\":100,\"self\":100,");
	assert_null(strstr(j, "\"U\"")); /* another track */
	free(j);
}

static void test_area_whole_and_unterminated(void **state)
{
	const int64_t both[] = { track_a, track_b };
	char *j;

	(void)state;
	j = run_area(both, 2, 0, 2000, NULL);
	expect(j, "{\"name\":\"Outer\",\"count\":2,\"wall\":1100,\"self\":650,\"avg\":550.0,\"max\":1000}");
	expect(j, "{\"name\":\"K\",\"count\":2,\"wall\":250,\"self\":200,\"avg\":125.0,\"max\":200}");
	expect(j, "{\"name\":\"U\",\"count\":1,\"wall\":1200,\"self\":1200,");
	free(j);
	j = run_area(&track_b, 1, 900, 1500, NULL);
	expect(j, "{\"name\":\"U\",\"count\":1,\"wall\":600,");
	free(j);
}

/* Only the part of each depth that can reach the range is read: slices
 * that start long before it still count, by their part inside. */
static void test_area_narrow(void **state)
{
	const int64_t both[] = { track_a, track_b };
	char *j;

	(void)state;
	j = run_area(both, 2, 900, 950, NULL);
	expect(j, "{\"name\":\"Outer\",\"count\":1,\"wall\":50,\"self\":50,");
	expect(j, "{\"name\":\"U\",\"count\":1,\"wall\":50,");
	assert_null(strstr(j, "\"K\""));
	assert_null(strstr(j, "\"L\""));
	free(j);
	j = run_area(&track_a, 1, 1250, 1250, NULL); /* a point: K ends there, Outer goes on */
	expect(j, "{\"name\":\"Outer\",\"count\":1,\"wall\":0,");
	expect(j, "{\"name\":\"K\",\"count\":1,\"wall\":0,");
	free(j);
	j = run_area(&track_a, 1, 2100, 3000, NULL); /* after everything on the track */
	assert_string_equal(j, "{\"names\":[],\"truncated\":false}");
	free(j);
}

static void test_area_list_name(void **state)
{
	char *j;

	(void)state;
	j = run_area(&track_a, 1, 200, 1220, "K");
	expect(j, "\"ts\":100,\"dur\":200,\"depth\":1,\"wall\":100}");
	expect(j, "\"ts\":1200,\"dur\":50,\"depth\":1,\"wall\":20}");
	free(j);
	j = run_area(&track_a, 1, 0, 2000, "no such name");
	assert_string_equal(j, "{\"slices\":[],\"truncated\":false}");
	free(j);
}

static void test_flame_paths(void **state)
{
	char *j;

	(void)state;
	j = run_flame(&track_a, 1, 0, 2000);
	/* both Outers merge into one root; K under it is both Ks; C under K */
	expect(j, "{\"id\":0,\"parent\":-1,\"depth\":0,\"name\":\"Outer\",\"total\":1100,\"self\":650,\"count\":2}");
	expect(j, "\"parent\":0,\"depth\":1,\"name\":\"K\",\"total\":250,\"self\":200,\"count\":2}");
	expect(j, "\"depth\":2,\"name\":\"C\",\"total\":50,\"self\":50,\"count\":1}");
	expect(j, "\"parent\":0,\"depth\":1,\"name\":\"L\",\"total\":200,\"self\":200,\"count\":1}");
	free(j);
	/* clipped: only the part of each frame inside [150, 550] */
	j = run_flame(&track_a, 1, 150, 550);
	expect(j, "\"name\":\"Outer\",\"total\":400,\"self\":200,\"count\":1}");
	expect(j, "\"name\":\"K\",\"total\":150,\"self\":100,\"count\":1}");
	expect(j, "\"name\":\"L\",\"total\":50,\"self\":50,\"count\":1}");
	free(j);
}

static void test_bad_range(void **state)
{
	struct qry_window w = { 10, 5, 0, 100, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;

	(void)state;
	jb_init(&b);
	assert_int_equal(qry_area(db.db, &track_a, 1, &w, NULL, &b, &err), QRY_EINVAL);
	assert_int_equal(qry_flame(db.db, &track_a, 1, &w, &b, &err), QRY_EINVAL);
	jb_fini(&b);
}

/* ---- whole trace: stored figures against the scan --------------------------- */

/* area (flame 0) or flame of tracks over [s, e] on d, limit rows or nodes;
 * the JSON, freed by the caller. */
static char *run_on(sqlite3 *d, int flame, const int64_t *tracks, size_t n, int64_t s, int64_t e, uint32_t limit)
{
	struct qry_window w = { s, e, 0, limit, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;
	size_t len;
	int rc;

	jb_init(&b);
	rc = flame ? qry_flame(d, tracks, n, &w, &b, &err) : qry_area(d, tracks, n, &w, NULL, &b, &err);
	if (rc != QRY_OK)
		fail_msg("%s: %s", flame ? "qry_flame" : "qry_area", err.msg);
	return jb_take(&b, &len);
}

/* A trace from seed: nthreads threads doing nested begins and ends (up to
 * 12 deep, four names, so a name recurs at several depths), completes and
 * instants (some of zero length), async operations with instants (async
 * lanes: roots below depth 0) and a counter; some slices never end. */
static void gen_trace(struct fxtw *w, uint64_t seed, unsigned nthreads, unsigned nevents)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	unsigned depth[8] = { 0 }, i, t;
	uint64_t r = seed, ts = 100;

	t_open(w);
	for (i = 0; i < nevents; i++) {
		struct fxtw_thr th;

		t = (unsigned)(xorshift64(&r) % nthreads);
		th = FXTW_TINL(1 + t % 2, 10 + t);
		ts += xorshift64(&r) % 4;
		switch (xorshift64(&r) % 10) {
		case 0:
		case 1:
		case 2:
			if (depth[t] < 12) {
				fxtw_begin(w, th, C, FXTW_INL(names[xorshift64(&r) % 4]), ts, NULL, 0);
				depth[t]++;
			}
			break;
		case 3:
		case 4:
			if (depth[t] > 0) {
				fxtw_end(w, th, C, FXTW_EMPTY, ts, NULL, 0);
				depth[t]--;
			}
			break;
		case 5:
			fxtw_complete(w, th, C, FXTW_INL(names[xorshift64(&r) % 4]), ts, ts + xorshift64(&r) % 3, NULL, 0);
			break;
		case 6:
			fxtw_instant(w, th, C, FXTW_INL(names[xorshift64(&r) % 4]), ts, NULL, 0);
			break;
		case 7:
			fxtw_async(w, 5 + (unsigned)(xorshift64(&r) % 3), th, C, FXTW_INL("op"), ts, xorshift64(&r) % 4, NULL,
				   0);
			break;
		case 8:
			fxtw_counter(w, th, C, FXTW_INL("ctr"), ts, 1, NULL, 0);
			break;
		default:
			fxtw_complete(w, th, C, FXTW_INL(names[xorshift64(&r) % 4]), ts, ts, NULL, 0);
		}
	}
	/* every thread's open slices stay unterminated */
}

/* The track ids of d, and which ones are thread tracks with slices. */
static size_t all_tracks(sqlite3 *d, int64_t *ids, size_t max)
{
	sqlite3_stmt *st;
	size_t n = 0;

	assert_int_equal(sqlite3_prepare_v2(d, "SELECT id FROM tracks ORDER BY id", -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && n < max)
		ids[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

enum { N_SETS = 4, N_LIMITS = 3, N_CASES = N_SETS * N_LIMITS * 2 * 2 };

/* Track sets: every track, every other one (reversed), the first thread
 * track alone, a counter track alone (no slices). */
static size_t track_set(sqlite3 *d, int k, int64_t *out)
{
	int64_t ids[64];
	size_t n = all_tracks(d, ids, 64), i, m = 0;

	switch (k) {
	case 0:
		memcpy(out, ids, n * sizeof(*ids));
		return n;
	case 1:
		for (i = n; i-- > 0;)
			if (i % 2 == 0)
				out[m++] = ids[i];
		return m;
	case 2:
		out[0] = tdb_int(&(struct tdb){ .db = d }, "SELECT min(id) FROM tracks WHERE kind = 'thread'");
		return 1;
	default:
		out[0] = tdb_int(&(struct tdb){ .db = d }, "SELECT min(id) FROM tracks WHERE kind = 'counter'");
		return 1;
	}
}

/* Every case's reply on d: area and flame, each track set, limits 10000,
 * 7 and 1, the trace's exact range and one wider by 5 ns. */
static void run_cases(sqlite3 *d, char **out)
{
	static const uint32_t limits[N_LIMITS] = { 10000, 7, 1 };
	struct tdb t = { .db = d };
	int64_t s = tdb_int(&t, "SELECT value FROM meta WHERE key = 'start_ns'");
	int64_t e = tdb_int(&t, "SELECT value FROM meta WHERE key = 'end_ns'");
	int64_t tracks[64];
	int k, l, wide, flame, c = 0;

	for (k = 0; k < N_SETS; k++)
		for (l = 0; l < N_LIMITS; l++)
			for (wide = 0; wide < 2; wide++)
				for (flame = 0; flame < 2; flame++) {
					size_t n = track_set(d, k, tracks);

					out[c++] = run_on(d, flame, tracks, n, s - 5 * wide, e + 5 * wide, limits[l]);
				}
}

/* The trace in w ingested (ids reserved extent_rows at a time, 0: one
 * extent a group): every case's stored reply is the scan's, and needs no
 * slice when `no_slices` (the track's stacks are all stored). */
static void t_stored_as_scanned(struct fxtw *w, size_t extent_rows, int no_slices)
{
	struct ingest_opts o = { 0 };
	char *scanned[N_CASES], *stored[N_CASES];
	struct tdb t;
	int i;

	o.extent_rows = extent_rows;
	tdb_ingest_opts(&t, w->buf, w->len, &o);
	if (t.rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", t.rc, t.res.error);
	assert_true(tdb_int(&t, "SELECT count(*) FROM slices") > 0);
	sqlite3_close(t.db);
	assert_int_equal(sqlite3_open(t.path, &t.db), SQLITE_OK);
	qry_area_stored = 0;
	run_cases(t.db, scanned);
	qry_area_stored = 1;
	if (no_slices)
		assert_int_equal(sqlite3_exec(t.db, "DELETE FROM slices", NULL, NULL, NULL), SQLITE_OK);
	run_cases(t.db, stored);
	for (i = 0; i < N_CASES; i++) {
		if (strcmp(scanned[i], stored[i]) != 0)
			fail_msg("case %d differs:\n%.1500s\n----\n%.1500s", i, scanned[i], stored[i]);
		free(scanned[i]);
		free(stored[i]);
	}
	tdb_close(&t);
}

static void test_whole_generated(void **state)
{
	static const struct {
		uint64_t seed;
		unsigned threads, events;
	} traces[] = { { 1, 1, 400 }, { 2, 3, 3000 }, { 3, 8, 6000 }, { 4, 5, 20000 } };
	struct fxtw w;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
		gen_trace(&w, traces[i].seed, traces[i].threads, traces[i].events);
		t_stored_as_scanned(&w, 0, 1);
		t_stored_as_scanned(&w, 3, 1);
		fxtw_fini(&w);
	}
}

/*
 * A track with more distinct stacks than ingest keeps (66000 paths root >
 * a<i> > b<j>: 66265 nodes, past the 65536 it is told to keep,
 * ingest_opts.stack_nodes): only depths 0 and 1 are
 * stored. A flame graph whose limit fills it above depth 2 comes from them
 * (no slice read); one that could use depth 2 reads the slices: both as
 * scanned.
 */
/* Ingest keeps 65536 paths a track (a million by default: as many as a
 * graph builds), so that a track of 66000 paths passes it. */
static const struct ingest_opts wide_opts = { .stack_nodes = 65536 };

/* Thread tid of pid 1: root > a<i> > b<j>, 66000 paths (see below). */
static void put_wide(struct fxtw *w, uint64_t tid)
{
	char a[16], b[16];
	uint64_t ts = 10;
	unsigned k;

	fxtw_begin(w, FXTW_TINL(1, tid), C, FXTW_INL("root"), 0, NULL, 0);
	for (k = 0; k < 66000; k++, ts += 10) {
		snprintf(a, sizeof(a), "a%u", k / 250);
		snprintf(b, sizeof(b), "b%u", k % 250);
		fxtw_complete(w, FXTW_TINL(1, tid), C, FXTW_INL(a), ts, ts + 5 + k % 3, NULL, 0);
		fxtw_complete(w, FXTW_TINL(1, tid), C, FXTW_INL(b), ts + 1, ts + 2, NULL, 0);
	}
	fxtw_end(w, FXTW_TINL(1, tid), C, FXTW_EMPTY, ts, NULL, 0);
}

static void test_whole_beyond_stored(void **state)
{
	char *scanned[2], *stored[2];
	int64_t track, s, e;
	struct tdb t;
	struct fxtw w;
	unsigned k;

	(void)state;
	t_open(&w);
	put_wide(&w, 2);
	/* by default a track keeps every path up to a million: all of them */
	tdb_ingest_opts(&t, w.buf, w.len, NULL);
	assert_int_equal(t.rc, INGEST_OK);
	track = tdb_int(&t, "SELECT min(id) FROM tracks WHERE kind = 'thread'");
	assert_int_equal(tdb_int(&t, "SELECT sum(count) FROM track_stacks WHERE track_id = %" PRId64, track), 66265);
	tdb_close(&t);
	tdb_ingest_opts(&t, w.buf, w.len, &wide_opts);
	fxtw_fini(&w);
	assert_int_equal(t.rc, INGEST_OK);
	track = tdb_int(&t, "SELECT min(id) FROM tracks WHERE kind = 'thread'");
	/* the root and the 264 a<i> */
	assert_int_equal(tdb_int(&t, "SELECT sum(count) FROM track_stacks WHERE track_id = %" PRId64, track), 265);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM track_names WHERE track_id = %" PRId64, track), 1 + 264 + 250);
	s = tdb_int(&t, "SELECT value FROM meta WHERE key = 'start_ns'");
	e = tdb_int(&t, "SELECT value FROM meta WHERE key = 'end_ns'");
	qry_area_stored = 0;
	scanned[0] = run_on(t.db, 1, &track, 1, s, e, 100);
	scanned[1] = run_on(t.db, 1, &track, 1, s, e, 10000);
	qry_area_stored = 1;
	stored[1] = run_on(t.db, 1, &track, 1, s, e, 10000);
	sqlite3_close(t.db);
	assert_int_equal(sqlite3_open(t.path, &t.db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(t.db, "DELETE FROM slices", NULL, NULL, NULL), SQLITE_OK);
	stored[0] = run_on(t.db, 1, &track, 1, s, e, 100);
	for (k = 0; k < 2; k++) {
		assert_string_equal(scanned[k], stored[k]);
		free(scanned[k]);
		free(stored[k]);
	}
	tdb_close(&t);
}

/*
 * A whole-trace flame graph is built track by track: a track whose stored
 * nodes fall short (the wide one) reads its slices, the others keep to
 * their nodes. With the small track's slices deleted, the graph is still
 * the scan's, byte for byte, whichever track comes first and whatever the
 * limit.
 */
static void test_whole_mixed(void **state)
{
	static const uint32_t limits[] = { 3, 100, 10000, 1000000 };
	char *scanned[2][4], *got;
	int64_t tracks[2], s, e;
	struct tdb t;
	struct fxtw w;
	size_t k, l;

	(void)state;
	t_open(&w);
	put_wide(&w, 2);
	fxtw_begin(&w, FXTW_TINL(1, 3), C, FXTW_INL("root"), 5, NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 3), C, FXTW_INL("a0"), 6, 40, NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 3), C, FXTW_INL("b1"), 7, 9, NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 3), C, FXTW_INL("small"), 50, 90, NULL, 0);
	fxtw_end(&w, FXTW_TINL(1, 3), C, FXTW_EMPTY, 100, NULL, 0);
	tdb_ingest_opts(&t, w.buf, w.len, &wide_opts);
	fxtw_fini(&w);
	assert_int_equal(t.rc, INGEST_OK);
	tracks[0] = tdb_int(&t, "SELECT t.id FROM tracks t JOIN threads h ON t.thread_id = h.id WHERE h.tid = 2");
	tracks[1] = tdb_int(&t, "SELECT t.id FROM tracks t JOIN threads h ON t.thread_id = h.id WHERE h.tid = 3");
	s = tdb_int(&t, "SELECT value FROM meta WHERE key = 'start_ns'");
	e = tdb_int(&t, "SELECT value FROM meta WHERE key = 'end_ns'");
	qry_area_stored = 0;
	for (k = 0; k < 2; k++) {
		int64_t order[2] = { tracks[k], tracks[1 - k] };

		for (l = 0; l < 4; l++)
			scanned[k][l] = run_on(t.db, 1, order, 2, s, e, limits[l]);
	}
	qry_area_stored = 1;
	sqlite3_close(t.db);
	assert_int_equal(sqlite3_open(t.path, &t.db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(t.db, "DELETE FROM slices WHERE track_id = (SELECT t.id FROM tracks t JOIN "
					    "threads h ON t.thread_id = h.id WHERE h.tid = 3)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	for (k = 0; k < 2; k++) {
		int64_t order[2] = { tracks[k], tracks[1 - k] };

		for (l = 0; l < 4; l++) {
			got = run_on(t.db, 1, order, 2, s, e, limits[l]);
			if (strcmp(got, scanned[k][l]) != 0)
				fail_msg("order %zu, limit %u:\n%.800s\n----\n%.800s", k, limits[l], scanned[k][l], got);
			free(got);
			free(scanned[k][l]);
		}
	}
	tdb_close(&t);
}

/* Slices of 2^62 ns (146 years; anything past 2^63 / 20000 ns, 5.3 days,
 * did it): a node's total times 20000 overflowed 64 bits and the graph
 * hid every node. The root is shown, its tiny child hidden. */
static void test_flame_long_totals(void **state)
{
	static const char want[] = "{\"nodes\":[{\"id\":0,\"parent\":-1,\"depth\":0,\"name\":\"long\","
				   "\"total\":4611686018427387904,\"self\":4611686018427387894,\"count\":1}],"
				   "\"hidden\":1,\"truncated\":false}";
	char *got[2];
	int64_t track, s, e;
	struct tdb t;
	struct fxtw w;
	int k;

	(void)state;
	t_open(&w);
	fxtw_complete(&w, FXTW_TINL(1, 2), C, FXTW_INL("long"), 10, 10 + ((uint64_t)1 << 62), NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 2), C, FXTW_INL("tiny"), 20, 30, NULL, 0);
	tdb_ingest_opts(&t, w.buf, w.len, NULL);
	fxtw_fini(&w);
	assert_int_equal(t.rc, INGEST_OK);
	track = tdb_int(&t, "SELECT min(id) FROM tracks WHERE kind = 'thread'");
	s = tdb_int(&t, "SELECT value FROM meta WHERE key = 'start_ns'");
	e = tdb_int(&t, "SELECT value FROM meta WHERE key = 'end_ns'");
	for (k = 0; k < 2; k++) { /* from the slices, and from the stored stacks */
		qry_area_stored = k;
		got[k] = run_on(t.db, 1, &track, 1, s, e, 10000);
		assert_string_equal(got[k], want);
		free(got[k]);
	}
	qry_area_stored = 1;
	tdb_close(&t);
}

/* ---- every figure against SQL over the same selection ------------------------ */

/*
 * The selection as SQL sees it: the slices of the tracks in `in` (a SQL
 * list) meeting [s, e], each with its part inside (an unterminated slice
 * runs to the trace's end). A slice without a parent is a root, whatever
 * its depth: an async lane is a layout row, not a call depth (Perfetto's
 * slice flame graph counts every slice so).
 */
#define SEL_SQL                                                                                                        \
	"WITH sel AS (SELECT s.id, s.parent_id, s.name_id, n.str AS name, "                                           \
	"max(0, min(CASE WHEN s.dur < 0 THEN (SELECT value FROM meta WHERE key = 'end_ns') ELSE s.ts + s.dur END, "  \
	"%1$" PRId64 ") - max(s.ts, %2$" PRId64 ")) AS wall FROM slices s JOIN strings n ON n.id = s.name_id "       \
	"WHERE s.track_id IN (%3$s) AND s.ts <= %1$" PRId64 " AND (s.dur < 0 OR s.ts + s.dur >= %2$" PRId64 ")) "

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* lines (n of them, each ending '\n') sorted and joined; frees them. */
static char *joined_sorted(char **lines, size_t n)
{
	char *out = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&out, &len);

	qsort(lines, n, sizeof(*lines), line_cmp);
	for (i = 0; i < n; i++) {
		fputs(lines[i], f);
		free(lines[i]);
	}
	fclose(f);
	free(lines);
	return out;
}

/* Every row of the statement as "a|b|c" lines, each ended by '\n', sorted
 * as the replies' lines are (freed by the caller). */
static char *sql_lines(sqlite3 *d, const char *sql)
{
	sqlite3_stmt *st;
	char **lines = NULL;
	size_t n = 0, cap = 0;

	if (sqlite3_prepare_v2(d, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("bad SQL: %s: %s", sql, sqlite3_errmsg(d));
	while (sqlite3_step(st) == SQLITE_ROW) {
		char *line = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&line, &len);
		int i;

		for (i = 0; i < sqlite3_column_count(st); i++)
			fprintf(f, "%s%c", (const char *)sqlite3_column_text(st, i),
				i + 1 < sqlite3_column_count(st) ? '|' : '\n');
		fclose(f);
		if (n == cap && (lines = realloc(lines, (cap = cap * 2 + 64) * sizeof(*lines))) == NULL)
			fail_msg("out of memory");
		lines[n++] = line;
	}
	sqlite3_finalize(st);
	return joined_sorted(lines, n);
}

/* Fails with what and the first line where want and got differ. */
static void lines_equal(const char *what, const char *want, const char *got)
{
	size_t i = 0, line = 0;

	for (; want[i] == got[i] && want[i] != '\0'; i++)
		if (want[i] == '\n')
			line = i + 1;
	if (want[i] != '\0' || got[i] != '\0')
		fail_msg("%s, first difference:\nSQL:   %.200s\nreply: %.200s", what, want + line, got + line);
}

/* The rows (path, count, total) of the statement, parents first, as
 * "path|count|total" lines sorted as the reply's are, without the paths
 * under 1/20000 of all or under one that is (freed by the caller);
 * *hidden: how many were left out. */
static char *sql_flame_lines(sqlite3 *d, const char *sql, int64_t all, int64_t *hidden)
{
	sqlite3_stmt *st;
	char **lines = NULL;
	size_t n = 0, cap = 0, k;

	*hidden = 0;
	if (sqlite3_prepare_v2(d, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("bad SQL: %s: %s", sql, sqlite3_errmsg(d));
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *path = (const char *)sqlite3_column_text(st, 0);
		const char *up = strrchr(path, '/');
		int shown = up == NULL;

		for (k = 0; k < n && !shown; k++) /* the parent's line is kept */
			shown = strncmp(lines[k], path, (size_t)(up - path)) == 0 && lines[k][up - path] == '|';
		if (!shown || sqlite3_column_int64(st, 2) * 20000 < all) {
			++*hidden;
			continue;
		}
		if (n == cap && (lines = realloc(lines, (cap = cap * 2 + 64) * sizeof(*lines))) == NULL)
			fail_msg("out of memory");
		assert_true(asprintf(&lines[n++], "%s|%lld|%lld\n", path, (long long)sqlite3_column_int64(st, 1),
				     (long long)sqlite3_column_int64(st, 2)) > 0);
	}
	sqlite3_finalize(st);
	return joined_sorted(lines, n);
}

/* /area's rows as "name|count|wall|self|max" lines, by name. */
static char *area_lines(const char *json)
{
	cJSON *root = cJSON_Parse(json), *r;
	char **lines = calloc(1 + (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(root, "names")), sizeof(*lines));
	size_t n = 0;

	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(root, "truncated")));
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(root, "names"))
	{
		assert_true(asprintf(&lines[n++], "%s|%.0f|%.0f|%.0f|%.0f\n", cJSON_GetObjectItem(r, "name")->valuestring,
				     cJSON_GetObjectItem(r, "count")->valuedouble,
				     cJSON_GetObjectItem(r, "wall")->valuedouble,
				     cJSON_GetObjectItem(r, "self")->valuedouble,
				     cJSON_GetObjectItem(r, "max")->valuedouble) > 0);
	}
	cJSON_Delete(root);
	return joined_sorted(lines, n);
}

/* /flame's nodes as "path|count|total" lines (names joined by '/'), by path;
 * *hidden: the reply's hidden count. */
static char *flame_lines(const char *json, int64_t *hidden)
{
	cJSON *root = cJSON_Parse(json), *nodes = cJSON_GetObjectItem(root, "nodes"), *r;
	size_t cap = 1 + (size_t)cJSON_GetArraySize(nodes), n = 0;
	char **lines = calloc(cap, sizeof(*lines)), **path = calloc(cap, sizeof(*path));
	int *ids = calloc(cap, sizeof(*ids));
	size_t i, k;

	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(root, "truncated")));
	*hidden = (int64_t)cJSON_GetObjectItem(root, "hidden")->valuedouble;
	cJSON_ArrayForEach(r, nodes)
	{
		int parent = cJSON_GetObjectItem(r, "parent")->valueint;
		const char *up = "";

		for (k = 0; k < n && parent >= 0; k++) /* parents come first */
			if (ids[k] == parent)
				up = path[k];
		ids[n] = cJSON_GetObjectItem(r, "id")->valueint;
		assert_true(asprintf(&path[n], "%s%s%s", up, *up ? "/" : "",
				     cJSON_GetObjectItem(r, "name")->valuestring) > 0);
		assert_true(asprintf(&lines[n], "%s|%.0f|%.0f\n", path[n], cJSON_GetObjectItem(r, "count")->valuedouble,
				     cJSON_GetObjectItem(r, "total")->valuedouble) > 0);
		n++;
	}
	for (i = 0; i < n; i++)
		free(path[i]);
	free(path);
	free(ids);
	cJSON_Delete(root);
	return joined_sorted(lines, n);
}

/* area and flame of the tracks `in` (a SQL list) over [s, e] on d, each
 * against the SQL over the same slices. */
static void t_panels_as_sql(sqlite3 *d, const char *in, int64_t s, int64_t e)
{
	int64_t tracks[64], hidden, want_hidden, all;
	char sql[4096], *want, *got, *j;
	size_t n = 0;
	sqlite3_stmt *st;

	snprintf(sql, sizeof(sql), "SELECT id FROM tracks WHERE id IN (%s) ORDER BY id", in);
	assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && n < 64)
		tracks[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	assert_true(n > 0);

	snprintf(sql, sizeof(sql),
		 SEL_SQL "SELECT p.name, count(*), sum(p.wall), sum(p.wall) - ifnull((SELECT sum(c.wall) FROM sel c "
			 "JOIN sel up ON up.id = c.parent_id WHERE up.name_id = p.name_id), 0), max(p.wall) "
			 "FROM sel p GROUP BY p.name_id ORDER BY p.name",
		 e, s, in);
	want = sql_lines(d, sql);
	j = run_on(d, 0, tracks, n, s, e, 1000000);
	got = area_lines(j);
	snprintf(sql, sizeof(sql), "area of (%s) over [%" PRId64 ", %" PRId64 "]", in, s, e);
	lines_equal(sql, want, got);
	free(want);
	free(got);
	free(j);

	/* the flame graph: a node per name path from a parentless slice;
	 * nodes under 1/20000 of the roots' time are hidden, and so are their
	 * children */
	snprintf(sql, sizeof(sql), SEL_SQL "SELECT ifnull(sum(wall), 0) FROM sel WHERE parent_id IS NULL", e, s, in);
	all = tdb_int(&(struct tdb){ .db = d }, "%s", sql);
	snprintf(sql, sizeof(sql),
		 SEL_SQL ", p(id, path, wall, depth) AS (SELECT id, name, wall, 0 FROM sel WHERE parent_id IS NULL "
			 "UNION ALL SELECT sel.id, p.path || '/' || sel.name, sel.wall, p.depth + 1 FROM sel JOIN p "
			 "ON sel.parent_id = p.id) SELECT path, count(*), sum(wall) FROM p GROUP BY path ORDER BY "
			 "min(depth)",
		 e, s, in);
	want = sql_flame_lines(d, sql, all, &want_hidden);
	j = run_on(d, 1, tracks, n, s, e, 1000000);
	got = flame_lines(j, &hidden);
	snprintf(sql, sizeof(sql), "flame of (%s) over [%" PRId64 ", %" PRId64 "], stored %d", in, s, e,
		 qry_area_stored);
	lines_equal(sql, want, got);
	assert_int_equal(hidden, want_hidden);
	free(want);
	free(got);
	free(j);
}

/*
 * Thread tracks, async tracks (operations on many lanes, instants inside
 * them one lane deeper) and both, over the whole trace (from what ingest
 * stored), over the whole trace read slice by slice, and over a window
 * inside it: every /area row and /flame node is what SQL says of the same
 * slices. The flame graph once read lane 0 of an async track only: a
 * slice on a lower lane has no parent one level up, and was taken for one
 * whose parent was cut.
 */
static void test_panels_as_sql(void **state)
{
	static const char *const sets[] = {
		"SELECT id FROM tracks WHERE kind = 'thread'",
		"SELECT id FROM tracks WHERE kind = 'async'",
		"SELECT id FROM tracks WHERE kind IN ('thread', 'async')",
	};
	struct fxtw w;
	struct tdb t;
	int64_t s, e;
	size_t k;
	int stored;

	(void)state;
	gen_trace(&w, 7, 4, 4000);
	tdb_ingest_opts(&t, w.buf, w.len, NULL);
	fxtw_fini(&w);
	assert_int_equal(t.rc, INGEST_OK);
	/* the generator's async operations overlap: they take several lanes */
	assert_true(tdb_int(&t, "SELECT count(DISTINCT s.depth) FROM slices s JOIN tracks k ON k.id = s.track_id "
				"WHERE k.kind = 'async' AND s.parent_id IS NULL") > 2);
	s = tdb_int(&t, "SELECT value FROM meta WHERE key = 'start_ns'");
	e = tdb_int(&t, "SELECT value FROM meta WHERE key = 'end_ns'");
	for (k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		for (stored = 0; stored <= 1; stored++) {
			qry_area_stored = stored;
			t_panels_as_sql(t.db, sets[k], s, e);
		}
		t_panels_as_sql(t.db, sets[k], s + (e - s) / 3, e - (e - s) / 3);
	}
	qry_area_stored = 1;
	tdb_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_area_clipped),
		cmocka_unit_test(test_area_whole_and_unterminated),
		cmocka_unit_test(test_area_narrow),
		cmocka_unit_test(test_area_list_name),
		cmocka_unit_test(test_flame_paths),
		cmocka_unit_test(test_bad_range),
	};
	const struct CMUnitTest whole[] = {
		cmocka_unit_test(test_whole_generated),
		cmocka_unit_test(test_whole_beyond_stored),
		cmocka_unit_test(test_whole_mixed),
		cmocka_unit_test(test_flame_long_totals),
		cmocka_unit_test(test_panels_as_sql),
	};

	return cmocka_run_group_tests_name("one extent a depth", tests, setup, teardown) |
	       cmocka_run_group_tests_name("an extent a slice", tests, setup_extents, teardown) |
	       cmocka_run_group_tests_name("whole trace: stored as scanned", whole, NULL, NULL);
}
