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
 */
#include "../testutil.h"

#include "../../query/query.h"

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
	struct qry_window w = { s, e, 0, 10000, 0 };
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
	struct qry_window w = { s, e, 0, 10000, 0 };
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
	struct qry_window w = { 10, 5, 0, 100, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;

	(void)state;
	jb_init(&b);
	assert_int_equal(qry_area(db.db, &track_a, 1, &w, NULL, &b, &err), QRY_EINVAL);
	assert_int_equal(qry_flame(db.db, &track_a, 1, &w, &b, &err), QRY_EINVAL);
	jb_fini(&b);
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

	return cmocka_run_group_tests_name("one extent a depth", tests, setup, teardown) |
	       cmocka_run_group_tests_name("an extent a slice", tests, setup_extents, teardown);
}
