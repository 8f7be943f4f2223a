/*
 * Unit tests of the read endpoints' queries in query/ (lists.c, slice.c, sql.c): qry_tracks,
 * qry_slice, qry_flows and qry_sql, on a database ingested from a trace
 * written here, against the edges docs/API.md names: 64-bit pids, tids,
 * counter ids, flow ids and argument values printed exactly; a thread
 * without slices (track_id null); a slice that never ended (dur -1);
 * arguments of a begin and its end joined in record order; flows' from_ts
 * (where the from-slice ends, its start when it never ended) and to_ts
 * (where the to-slice begins), and the window holding an arrow when
 * either end lies inside it; SQL refused for writes, ATTACH, PRAGMA and
 * extension loading, more than one statement, and cut at 10000 rows;
 * and jb_column (query/column.c), a SQLite value by its type.
 *
 * Trace (ns), process 5 "proc-five":
 *   tid 50 "main": A [100, 200) (flow 1 begins at 150); C from 500, never
 *                  ends (flow 1 ends at 550), with E [700, 800) in it
 *                  (flow 2 ends at 750); counter "mem"/"used" 5 then -3
 *   tid 51:        B [300, 400) > B2 [320, 340) (flow 1 steps at 350);
 *                  D from 600, never ends (flow 2 begins at 650)
 *   tid 52 "idle-logger": a log record only
 * process 2^64 - 3 "big", tid 2^63 + 1: async "load" [100, 900)
 * cpu 2: tid 50 switched in at 100.
 */
#include "../testutil.h"

#include <cjson/cJSON.h>
#include <math.h>

#include "../../query/query.h"
#include "../xorshift.h"

#define BIG_PID (UINT64_MAX - 2)
#define BIG_TID ((UINT64_C(1) << 63) + 1)
#define FLOW1 UINT64_MAX
#define FLOW2 7
#define COUNTER_ID ((UINT64_C(1) << 63) + 7)

static struct tdb db;

static void write_trace(struct fxtw *w)
{
	const struct fxtw_thr t50 = FXTW_TIDX(1), t51 = FXTW_TIDX(2), big = FXTW_TIDX(3);
	const struct fxtw_str c = FXTW_INL("c");
	static const uint8_t blob[3] = { 1, 2, 3 };
	struct fxtw_arg a[10];

	fxtw_init(w, 0);
	fxtw_magic(w);
	fxtw_provider_info(w, 1, "test");
	fxtw_init_record(w, 1000000000);
	fxtw_thread(w, 1, 5, 50);
	fxtw_thread(w, 2, 5, 51);
	fxtw_thread(w, 3, BIG_PID, BIG_TID);
	fxtw_kernel_object(w, 1, FXTW_INL("proc-five"), 5, NULL, 0);
	fxtw_kernel_object(w, 1, FXTW_INL("big"), BIG_PID, NULL, 0);
	a[0] = fxtw_arg_koid(FXTW_INL("process"), 5);
	fxtw_kernel_object(w, 2, FXTW_INL("main"), 50, a, 1);
	fxtw_kernel_object(w, 2, FXTW_INL("idle-logger"), 52, a, 1);
	a[0] = fxtw_arg_koid(FXTW_INL("process"), BIG_PID);
	fxtw_kernel_object(w, 2, FXTW_INL("big-thread"), BIG_TID, a, 1);

	a[0] = fxtw_arg_i32(FXTW_INL("i32"), -1);
	a[1] = fxtw_arg_u32(FXTW_INL("u32"), UINT32_MAX);
	a[2] = fxtw_arg_i64(FXTW_INL("i64"), INT64_MIN);
	a[3] = fxtw_arg_double(FXTW_INL("dbl"), 0.5);
	a[4] = fxtw_arg_str(FXTW_INL("str"), FXTW_INL("s\"\x01"));
	a[5] = fxtw_arg_ptr(FXTW_INL("ptr"), UINT64_C(0xfedcba9876543210));
	a[6] = fxtw_arg_koid(FXTW_INL("koid"), BIG_TID);
	a[7] = fxtw_arg_bool(FXTW_INL("yes"), 1);
	a[8] = fxtw_arg_null(FXTW_INL("nil"));
	a[9] = fxtw_arg_blob(FXTW_INL("blob"), blob, 3);
	fxtw_begin(w, t50, c, FXTW_INL("A"), 100, a, 10);
	fxtw_flow(w, 8, t50, c, FXTW_INL("f"), 150, FLOW1);
	a[0] = fxtw_arg_u64(FXTW_INL("end"), UINT64_MAX);
	a[1] = fxtw_arg_double(FXTW_INL("nan"), NAN);
	a[2] = fxtw_arg_double(FXTW_INL("inf"), -INFINITY);
	fxtw_end(w, t50, c, FXTW_INL("A"), 200, a, 3);
	fxtw_begin(w, t51, c, FXTW_INL("B"), 300, NULL, 0);
	fxtw_begin(w, t51, c, FXTW_INL("B2"), 320, NULL, 0);
	fxtw_end(w, t51, c, FXTW_INL("B2"), 340, NULL, 0);
	fxtw_flow(w, 9, t51, c, FXTW_INL("f"), 350, FLOW1);
	fxtw_end(w, t51, c, FXTW_INL("B"), 400, NULL, 0);
	fxtw_begin(w, t50, c, FXTW_INL("C"), 500, NULL, 0);
	fxtw_flow(w, 10, t50, c, FXTW_INL("f"), 550, FLOW1);
	fxtw_begin(w, t51, c, FXTW_INL("D"), 600, NULL, 0);
	fxtw_flow(w, 8, t51, c, FXTW_INL("g"), 650, FLOW2);
	fxtw_begin(w, t50, c, FXTW_INL("E"), 700, NULL, 0);
	fxtw_flow(w, 10, t50, c, FXTW_INL("g"), 750, FLOW2);
	fxtw_end(w, t50, c, FXTW_INL("E"), 800, NULL, 0);

	a[0] = fxtw_arg_i64(FXTW_INL("used"), 5);
	fxtw_counter(w, t50, FXTW_INL("m"), FXTW_INL("mem"), 100, COUNTER_ID, a, 1);
	a[0] = fxtw_arg_i64(FXTW_INL("used"), -3);
	fxtw_counter(w, t50, FXTW_INL("m"), FXTW_INL("mem"), 200, COUNTER_ID, a, 1);
	fxtw_async(w, 5, big, FXTW_INL("io"), FXTW_INL("load"), 100, 9, NULL, 0);
	fxtw_async(w, 7, big, FXTW_INL("io"), FXTW_INL("load"), 900, 9, NULL, 0);
	fxtw_log(w, FXTW_TINL(5, 52), 120, "hello");
	fxtw_context_switch(w, 2, 3, 100, 0, 50, NULL, 0);
}

static int setup(void **state)
{
	struct fxtw w;

	(void)state;
	write_trace(&w);
	tdb_ingest(&db, &w);
	fxtw_fini(&w);
	if (db.rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", db.rc, db.res.error);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tdb_close(&db);
	return 0;
}

static int64_t slice_id(const char *name)
{
	return tdb_int(&db, "SELECT id FROM slice_view WHERE name = '%s'", name);
}

/* The JSON a query function wrote (QRY_OK required), as text and parsed. */
struct reply {
	char *text;
	cJSON *j;
};

static void reply_of(struct jbuf *b, int rc, const struct qry_error *err, struct reply *r)
{
	if (rc != QRY_OK)
		fail_msg("query failed: %d %s", rc, err->msg);
	r->text = jb_take(b, NULL);
	assert_non_null(r->text);
	if ((r->j = cJSON_Parse(r->text)) == NULL)
		fail_msg("not JSON: %s", r->text);
}

static void reply_free(struct reply *r)
{
	cJSON_Delete(r->j);
	free(r->text);
}

static void has(const struct reply *r, const char *part)
{
	if (strstr(r->text, part) == NULL)
		fail_msg("missing %s in %s", part, r->text);
}

static int64_t num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("no number %s", key);
	return (int64_t)v->valuedouble;
}

static int is_null(const cJSON *o, const char *key)
{
	return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const char *text(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- qry_tracks ------------------------------------------------------- */

static const cJSON *find(const cJSON *list, const char *key, const char *value)
{
	const cJSON *o;

	cJSON_ArrayForEach(o, list) {
		const char *s = text(o, key);

		if (s && strcmp(s, value) == 0)
			return o;
	}
	fail_msg("nothing with %s = %s", key, value);
	return NULL;
}

static void test_tracks(void **state)
{
	struct qry_error err = { 0 };
	const cJSON *procs, *five, *big, *th, *ct;
	struct reply r;
	struct jbuf b;

	(void)state;
	jb_init(&b);
	reply_of(&b, qry_tracks(db.db, &b, &err), &err, &r);
	procs = cJSON_GetObjectItemCaseSensitive(r.j, "processes");
	five = find(procs, "name", "proc-five");
	big = find(procs, "name", "big");
	assert_int_equal(num(five, "pid"), 5);
	has(&r, "{\"pid\":18446744073709551613,\"name\":\"big\",");
	/* in unsigned pid order: the big pid (stored negative) comes last */
	assert_string_equal(text(cJSON_GetArrayItem(procs, cJSON_GetArraySize(procs) - 1), "name"), "big");

	/* threads: named or not; one without slices has no track */
	th = cJSON_GetObjectItemCaseSensitive(five, "threads");
	assert_int_equal(cJSON_GetArraySize(th), 3);
	assert_int_equal(num(find(th, "name", "main"), "track_id"),
			 tdb_int(&db, "SELECT track_id FROM slice_view WHERE name = 'A'"));
	assert_int_equal(num(find(th, "name", "main"), "max_depth"), 1);
	assert_true(is_null(find(th, "name", "idle-logger"), "track_id"));
	assert_int_equal(num(find(th, "name", "idle-logger"), "tid"), 52);
	has(&r, "{\"tid\":51,\"name\":null,");
	th = cJSON_GetObjectItemCaseSensitive(big, "threads");
	has(&r, "{\"tid\":9223372036854775809,\"name\":\"big-thread\",\"track_id\":null");

	/* the async track of the big process, the counter track of 5 */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(five, "async_tracks")), 0);
	has(&r, "\"async_tracks\":[{\"track_id\":");
	assert_int_equal(num(find(cJSON_GetObjectItemCaseSensitive(big, "async_tracks"), "name", "load"), "track_id"),
			 tdb_int(&db, "SELECT track_id FROM slice_view WHERE name = 'load'"));
	assert_string_equal(text(find(cJSON_GetObjectItemCaseSensitive(big, "async_tracks"), "name", "load"), "category"),
			    "io");
	ct = find(cJSON_GetObjectItemCaseSensitive(five, "counter_tracks"), "name", "mem");
	assert_string_equal(text(ct, "series"), "used");
	assert_int_equal(num(ct, "min"), -3);
	assert_int_equal(num(ct, "max"), 5);
	has(&r, "\"series\":\"used\",\"counter_id\":9223372036854775815,");

	/* cpus */
	ct = cJSON_GetObjectItemCaseSensitive(r.j, "cpus");
	assert_int_equal(cJSON_GetArraySize(ct), 1);
	assert_int_equal(num(cJSON_GetArrayItem(ct, 0), "cpu"), 2);
	assert_int_equal(num(cJSON_GetArrayItem(ct, 0), "track_id"),
			 tdb_int(&db, "SELECT id FROM tracks WHERE kind = 'cpu' AND cpu = 2"));
	reply_free(&r);
}

/* ---- qry_slice --------------------------------------------------------- */

static void run_slice(int64_t id, struct reply *r)
{
	struct qry_error err = { 0 };
	struct jbuf b;

	jb_init(&b);
	reply_of(&b, qry_slice(db.db, id, &b, &err), &err, r);
}

/* Every argument type by the API's rules, the end's arguments after the
 * begin's. */
static void test_slice_args(void **state)
{
	struct reply r;

	(void)state;
	run_slice(slice_id("A"), &r);
	has(&r, "\"args\":{\"i32\":-1,\"u32\":4294967295,\"i64\":-9223372036854775808,\"dbl\":0.5,"
		"\"str\":\"s\\\"\\u0001\",\"ptr\":\"0xfedcba9876543210\",\"koid\":9223372036854775809,"
		"\"yes\":true,\"nil\":null,\"blob\":{\"blob_bytes\":3},\"end\":18446744073709551615,"
		"\"nan\":null,\"inf\":null}");
	assert_int_equal(num(r.j, "ts"), 100);
	assert_int_equal(num(r.j, "dur"), 100);
	assert_int_equal(num(r.j, "depth"), 0);
	assert_string_equal(text(r.j, "name"), "A");
	assert_string_equal(text(r.j, "category"), "c");
	assert_string_equal(text(r.j, "track_kind"), "thread");
	assert_int_equal(num(r.j, "pid"), 5);
	assert_int_equal(num(r.j, "tid"), 50);
	assert_true(is_null(r.j, "parent_id"));
	assert_int_equal(num(r.j, "id"), slice_id("A"));
	assert_int_equal(num(r.j, "track_id"), tdb_int(&db, "SELECT track_id FROM slice_view WHERE name = 'A'"));
	reply_free(&r);
}

/* Flows in both directions, with the 64-bit flow id exact. */
/* A counter's uint64 values above INT64_MAX read back exactly, from
 * /counters and the export (stored as their decimal text, tracedb.h), and
 * the values SQLite holds keep their type. */
static void test_counter_u64(void **state)
{
	struct fxtw_thr th = FXTW_TINL(7, 8);
	struct fxtw_arg a;
	struct qry_window w = { INT64_MIN, INT64_MAX, 0, 100, 0, 0, 0 };
	struct qry_error err;
	struct qry_export *ex;
	struct reply r;
	struct jbuf b;
	struct fxtw fw;
	struct tdb t;
	char buf[8192];
	long n;
	size_t len = 0;

	(void)state;
	fxtw_init(&fw, 0);
	fxtw_magic(&fw);
	a = fxtw_arg_u64(FXTW_INL("v"), UINT64_MAX);
	fxtw_counter(&fw, th, FXTW_INL("c"), FXTW_INL("big"), 10, 0, &a, 1);
	a = fxtw_arg_u64(FXTW_INL("v"), (UINT64_C(1) << 63) + 1);
	fxtw_counter(&fw, th, FXTW_INL("c"), FXTW_INL("big"), 20, 0, &a, 1);
	a = fxtw_arg_u64(FXTW_INL("v"), INT64_MAX);
	fxtw_counter(&fw, th, FXTW_INL("c"), FXTW_INL("big"), 30, 0, &a, 1);
	a = fxtw_arg_double(FXTW_INL("v"), 1.5);
	fxtw_counter(&fw, th, FXTW_INL("c"), FXTW_INL("big"), 40, 0, &a, 1);
	tdb_ingest(&t, &fw);
	fxtw_fini(&fw);
	assert_int_equal(t.rc, INGEST_OK);
	assert_string_equal(tdb_rows(&t, "SELECT typeof(value), value FROM counters ORDER BY ts"),
			    "text|18446744073709551615\ntext|9223372036854775809\ninteger|9223372036854775807\n"
			    "real|1.5");
	jb_init(&b);
	reply_of(&b, qry_counters(t.db, tdb_int(&t, "SELECT track_id FROM counters LIMIT 1"), &w, &b, &err), &err, &r);
	assert_non_null(strstr(r.text, "{\"ts\":10,\"value\":18446744073709551615}"));
	assert_non_null(strstr(r.text, "{\"ts\":20,\"value\":9223372036854775809}"));
	assert_non_null(strstr(r.text, "{\"ts\":30,\"value\":9223372036854775807}"));
	assert_non_null(strstr(r.text, "{\"ts\":40,\"value\":1.5}"));
	free(r.text);
	cJSON_Delete(r.j);
	jb_fini(&b);
	assert_non_null(ex = qry_export_open(t.path, NULL, &err));
	while ((n = qry_export_read(ex, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	assert_true(n == 0);
	buf[len] = '\0';
	qry_export_close(ex);
	assert_non_null(strstr(buf, "\"v\":18446744073709551615}"));
	assert_non_null(strstr(buf, "\"v\":9223372036854775809}"));
	tdb_close(&t);
}

static void test_slice_flows_and_nesting(void **state)
{
	struct reply r;
	char want[200];

	(void)state;
	run_slice(slice_id("B"), &r);
	snprintf(want, sizeof(want),
		 "\"flows\":[{\"flow_id\":18446744073709551615,\"from_slice\":%lld,\"to_slice\":%lld},"
		 "{\"flow_id\":18446744073709551615,\"from_slice\":%lld,\"to_slice\":%lld}]",
		 (long long)slice_id("B"), (long long)slice_id("C"), (long long)slice_id("A"), (long long)slice_id("B"));
	has(&r, want);
	has(&r, "\"args\":{}");
	reply_free(&r);

	run_slice(slice_id("B2"), &r);
	assert_int_equal(num(r.j, "parent_id"), slice_id("B"));
	assert_int_equal(num(r.j, "depth"), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.j, "flows")), 0);
	reply_free(&r);
}

/* Each slice's "flows" in t, as "flow_id:from>to," in reply order. */
static void slice_flows_text(struct tdb *t, int64_t id, char *out, size_t n)
{
	struct qry_error err = { 0 };
	struct reply r;
	struct jbuf b;
	const cJSON *f;
	size_t len = 0;

	jb_init(&b);
	reply_of(&b, qry_slice(t->db, id, &b, &err), &err, &r);
	out[0] = '\0';
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(r.j, "flows")) {
		const cJSON *fid = cJSON_GetObjectItemCaseSensitive(f, "flow_id");

		len += (size_t)snprintf(out + len, n - len, "%.0f:%lld>%lld,", cJSON_IsNumber(fid) ? fid->valuedouble : -1.0,
					(long long)num(f, "from_slice"), (long long)num(f, "to_slice"));
	}
	reply_free(&r);
}

/* Every slice's arrows, which the query finds by time (where the from-slice
 * ends, where the to-slice begins), are the ones a scan by slice id finds,
 * in the same order. Flow ids pass through a double on both sides, as
 * cJSON reads them. */
static void check_slice_flows(struct tdb *t)
{
	int64_t n = tdb_int(t, "SELECT count(*) FROM slices"), i, flows = 0;
	char got[1024], want[1024];
	sqlite3_stmt *st;

	assert_true(n > 0);
	assert_int_equal(sqlite3_prepare_v2(t->db,
					    "SELECT flow_id, from_slice_id, to_slice_id FROM (SELECT 0 AS k, * FROM "
					    "flows WHERE from_slice_id = ?1 UNION ALL SELECT 1, * FROM flows WHERE "
					    "to_slice_id = ?1) ORDER BY k, id",
					    -1, &st, NULL),
			 SQLITE_OK);
	for (i = 1; i <= n; i++) {
		size_t len = 0;
		int rc;

		sqlite3_bind_int64(st, 1, i);
		want[0] = '\0';
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			len += (size_t)snprintf(want + len, sizeof(want) - len, "%.0f:%lld>%lld,",
						(double)(uint64_t)sqlite3_column_int64(st, 0),
						(long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2));
			flows++;
		}
		assert_int_equal(rc, SQLITE_DONE);
		sqlite3_reset(st);
		slice_flows_text(t, i, got, sizeof(got));
		if (strcmp(got, want) != 0)
			fail_msg("slice %lld: flows \"%s\", a scan finds \"%s\"", (long long)i, got, want);
	}
	sqlite3_finalize(st);
	assert_true(flows > 0);
}

static void test_slice_flows_found_by_time(void **state)
{
	const struct fxtw_thr t1 = FXTW_TIDX(1), t2 = FXTW_TIDX(2);
	const struct fxtw_str c = FXTW_INL("c");
	struct fxtw w;
	struct tdb z;
	uint64_t k;

	(void)state;
	check_slice_flows(&db); /* ended, never-ended and nested from-slices */

	/* Zero-length slices, all at ts 1000, each the start or the end of
	 * an arrow: every arrow has the same from_ts and to_ts. Then arrows
	 * leaving a slice and its child, which end at the same time, for the
	 * same slice. */
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "test");
	fxtw_init_record(&w, 1000000000);
	fxtw_thread(&w, 1, 5, 50);
	fxtw_thread(&w, 2, 5, 51);
	for (k = 0; k < 4; k++) {
		fxtw_begin(&w, t1, c, FXTW_INL("Z"), 1000, NULL, 0);
		fxtw_flow(&w, 8, t1, c, FXTW_INL("f"), 1000, 100 + k);
		fxtw_end(&w, t1, c, FXTW_INL("Z"), 1000, NULL, 0);
	}
	for (k = 0; k < 4; k++) {
		fxtw_begin(&w, t2, c, FXTW_INL("Y"), 1000, NULL, 0);
		fxtw_flow(&w, k & 1 ? 10 : 9, t2, c, FXTW_INL("f"), 1000, 100 + k);
		fxtw_end(&w, t2, c, FXTW_INL("Y"), 1000, NULL, 0);
	}
	fxtw_begin(&w, t1, c, FXTW_INL("P"), 2000, NULL, 0);
	fxtw_flow(&w, 8, t1, c, FXTW_INL("f"), 2500, 200);
	fxtw_begin(&w, t1, c, FXTW_INL("Q"), 3000, NULL, 0);
	fxtw_flow(&w, 8, t1, c, FXTW_INL("f"), 3000, 201);
	fxtw_end(&w, t1, c, FXTW_INL("Q"), 3000, NULL, 0);
	fxtw_end(&w, t1, c, FXTW_INL("P"), 3000, NULL, 0);
	fxtw_begin(&w, t2, c, FXTW_INL("R"), 3000, NULL, 0);
	fxtw_flow(&w, 10, t2, c, FXTW_INL("f"), 3000, 200);
	fxtw_flow(&w, 10, t2, c, FXTW_INL("f"), 3000, 201);
	fxtw_end(&w, t2, c, FXTW_INL("R"), 4000, NULL, 0);
	tdb_ingest(&z, &w);
	fxtw_fini(&w);
	if (z.rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", z.rc, z.res.error);
	assert_int_equal(tdb_int(&z, "SELECT count(*) FROM flows"), 6);
	assert_int_equal(tdb_int(&z, "SELECT count(*) FROM flows WHERE from_ts = 1000 AND to_ts = 1000"), 4);
	check_slice_flows(&z);
	tdb_close(&z);
}

static void test_slice_unterminated_and_async(void **state)
{
	struct qry_error err = { 0 };
	struct reply r;
	struct jbuf b;

	(void)state;
	run_slice(slice_id("C"), &r);
	assert_int_equal(num(r.j, "dur"), -1);
	assert_int_equal(num(r.j, "ts"), 500);
	reply_free(&r);

	run_slice(slice_id("load"), &r);
	assert_string_equal(text(r.j, "track_kind"), "async");
	has(&r, "\"pid\":18446744073709551613,\"tid\":null");
	assert_int_equal(num(r.j, "dur"), 800);
	reply_free(&r);

	jb_init(&b);
	assert_int_equal(qry_slice(db.db, 999999, &b, &err), QRY_ENOTFOUND);
	assert_true(strlen(err.msg) > 0);
	jb_fini(&b);
}

/* ---- qry_flows ------------------------------------------------------- */

static void run_flows(int64_t s, int64_t e, uint32_t limit, struct reply *r)
{
	struct qry_window w = { s, e, 0, limit, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;

	jb_init(&b);
	reply_of(&b, qry_flows(db.db, &w, &b, &err), &err, r);
}

/* The arrows of a window as "from>to@from_ts-to_ts" by slice name. */
static void flows_in(int64_t s, int64_t e, uint32_t limit, const char *want, int truncated)
{
	const cJSON *f;
	struct reply r;
	char got[256] = "", one[64];
	size_t len = 0;

	run_flows(s, e, limit, &r);
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(r.j, "flows")) {
		const char *from = tdb_rows(&db, "SELECT name FROM slice_view WHERE id = %lld",
					    (long long)num(f, "from_slice"));

		snprintf(one, sizeof(one), "%s>", from);
		snprintf(one + strlen(one), sizeof(one) - strlen(one), "%s@%lld-%lld",
			 tdb_rows(&db, "SELECT name FROM slice_view WHERE id = %lld", (long long)num(f, "to_slice")),
			 (long long)num(f, "from_ts"), (long long)num(f, "to_ts"));
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", len ? " " : "", one);
		assert_int_equal(num(f, "from_track"),
				 tdb_int(&db, "SELECT track_id FROM slices WHERE id = %lld", (long long)num(f, "from_slice")));
		assert_int_equal(num(f, "to_track"),
				 tdb_int(&db, "SELECT track_id FROM slices WHERE id = %lld", (long long)num(f, "to_slice")));
	}
	if (strcmp(got, want) != 0)
		fail_msg("flows in [%lld, %lld]: \"%s\", not \"%s\"", (long long)s, (long long)e, got, want);
	assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.j, "truncated")), truncated);
	reply_free(&r);
}

static void test_flows(void **state)
{
	struct reply r;

	(void)state;
	/* from_ts: the from-slice's end (D never ended: its start); to_ts: the to-slice's start */
	flows_in(0, 1000, 100, "A>B@200-300 B>C@400-500 D>E@600-700", 0);
	flows_in(INT64_MIN, INT64_MAX, 100, "A>B@200-300 B>C@400-500 D>E@600-700", 0);
	/* an arrow is in when either end is, ends inclusive */
	flows_in(200, 200, 100, "A>B@200-300", 0);
	flows_in(300, 300, 100, "A>B@200-300", 0);
	flows_in(300, 400, 100, "A>B@200-300 B>C@400-500", 0);
	flows_in(500, 600, 100, "B>C@400-500 D>E@600-700", 0);
	/* inside an arrow but at neither end; after every one */
	flows_in(201, 299, 100, "", 0);
	flows_in(401, 499, 100, "", 0);
	flows_in(701, 5000, 100, "", 0);
	/* the limit cuts the list and says so */
	flows_in(0, 1000, 2, "A>B@200-300 B>C@400-500", 1);
	flows_in(0, 1000, 3, "A>B@200-300 B>C@400-500 D>E@600-700", 0);

	run_flows(0, 1000, 100, &r);
	has(&r, "{\"flow_id\":18446744073709551615,");
	has(&r, "{\"flow_id\":7,");
	reply_free(&r);
}

/* Many arrows, ties in from_ts, arrows pointing back in time: every window
 * (the whole trace, which reads the from_ts index in order, and parts of
 * it) and limit give what the defining statement gives, in (from_ts, id)
 * order. */
static void test_flows_against_the_statement(void **state)
{
	static const char ref[] =
		"SELECT f.flow_id, f.from_slice_id, f.to_slice_id, a.track_id, b.track_id, f.from_ts, f.to_ts FROM flows f "
		"JOIN slices a ON a.id = f.from_slice_id JOIN slices b ON b.id = f.to_slice_id WHERE f.from_ts BETWEEN ?1 "
		"AND ?2 OR f.to_ts BETWEEN ?1 AND ?2 ORDER BY f.from_ts, f.id";
	const struct fxtw_str c = FXTW_INL("c");
	uint64_t rng = 99, ts = 1000, k;
	struct fxtw w;
	struct tdb z;
	int i;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 1000000000);
	for (k = 0; k < 3000; k++) {
		struct fxtw_thr th = FXTW_TINL(1, 2 + xorshift64(&rng) % 4);
		uint64_t r = xorshift64(&rng), d = r % 4 == 0 ? 0 : r % 300;

		fxtw_begin(&w, th, c, FXTW_INL("s"), ts, NULL, 0);
		/* flow ids reused, so that steps and ends land on earlier begins */
		fxtw_flow(&w, (unsigned)(8 + (r >> 8) % 3), th, c, FXTW_INL("f"), ts + d / 2, (r >> 16) % 40);
		fxtw_end(&w, th, c, FXTW_INL("s"), ts + d, NULL, 0);
		ts += (r >> 32) % 3 == 0 ? 0 : (r >> 40) % 200;
	}
	tdb_ingest(&z, &w);
	fxtw_fini(&w);
	assert_int_equal(z.rc, INGEST_OK);
	assert_true(tdb_int(&z, "SELECT count(*) FROM flows") > 1000);
	assert_true(tdb_int(&z, "SELECT count(*) FROM flows WHERE to_ts < from_ts") > 0);
	for (i = 0; i < 300; i++) {
		int64_t s = i < 3 ? INT64_MIN : (int64_t)(xorshift64(&rng) % (ts + 200));
		int64_t e = i < 3 ? INT64_MAX : s + (int64_t)(xorshift64(&rng) % (i % 2 ? 500 : ts));
		uint32_t limit = i % 3 == 0 ? 1000000 : (uint32_t)(1 + xorshift64(&rng) % 50);
		struct qry_window win = { s, e, 0, limit, 0, 0, 0 };
		struct qry_error err = { 0 };
		struct jbuf b, want;
		sqlite3_stmt *st;
		uint32_t n = 0;
		int more = 0;
		char *got;

		if (i == 1) /* exactly the first and last from_ts */
			s = tdb_int(&z, "SELECT min(from_ts) FROM flows"), e = tdb_int(&z, "SELECT max(from_ts) FROM flows");
		if (i == 2) /* one short of them */
			s = tdb_int(&z, "SELECT min(from_ts) FROM flows") + 1, e = tdb_int(&z, "SELECT max(from_ts) FROM flows");
		win.start = s;
		win.end = e;
		jb_init(&b);
		assert_int_equal(qry_flows(z.db, &win, &b, &err), QRY_OK);
		got = jb_take(&b, NULL);
		assert_int_equal(sqlite3_prepare_v2(z.db, ref, -1, &st, NULL), SQLITE_OK);
		sqlite3_bind_int64(st, 1, s);
		sqlite3_bind_int64(st, 2, e);
		jb_init(&want);
		jb_obj(&want);
		jb_key(&want, "flows");
		jb_arr(&want);
		while (sqlite3_step(st) == SQLITE_ROW) {
			static const char *const keys[] = { "flow_id", "from_slice", "to_slice", "from_track", "to_track", "from_ts", "to_ts" };
			int col;

			if (n++ == limit) {
				more = 1;
				break;
			}
			jb_obj(&want);
			for (col = 0; col < 7; col++) {
				jb_key(&want, keys[col]);
				if (col == 0)
					jb_u64(&want, (uint64_t)sqlite3_column_int64(st, col));
				else
					jb_i64(&want, sqlite3_column_int64(st, col));
			}
			jb_obj_end(&want);
		}
		sqlite3_finalize(st);
		jb_arr_end(&want);
		jb_key(&want, "truncated");
		jb_bool(&want, more);
		jb_obj_end(&want);
		jb_raw(&want, "", 1);
		if (strcmp(got, want.p) != 0)
			fail_msg("window [%lld, %lld] limit %u:\n got  %.300s\n want %.300s", (long long)s, (long long)e, limit,
				 got, want.p);
		free(got);
		jb_fini(&want);
	}
	tdb_close(&z);
}

/* ---- qry_sql ------------------------------------------------------------ */

static int sql(const char *q, struct reply *r, struct qry_error *err)
{
	struct jbuf b;
	int rc;

	memset(err, 0, sizeof(*err));
	jb_init(&b);
	rc = qry_sql(db.db, q, strlen(q), &b, err);
	if (rc == QRY_OK) {
		reply_of(&b, rc, err, r);
	} else {
		jb_fini(&b);
		memset(r, 0, sizeof(*r));
	}
	return rc;
}

static void sql_ok(const char *q, const char *want)
{
	struct qry_error err;
	struct reply r;

	if (sql(q, &r, &err) != QRY_OK)
		fail_msg("%s: refused: %s", q, err.msg);
	if (strcmp(r.text, want) != 0)
		fail_msg("%s:\n  %s\nnot\n  %s", q, r.text, want);
	reply_free(&r);
}

static void sql_refused(const char *q)
{
	struct qry_error err;
	struct reply r;
	int rc = sql(q, &r, &err);

	if (rc == QRY_OK) {
		fail_msg("%s: ran: %s", q, r.text);
		reply_free(&r);
	}
	assert_int_equal(rc, QRY_EINVAL);
	assert_int_equal(err.code, QRY_EINVAL);
	assert_true(strlen(err.msg) > 0);
}

static void test_sql_values(void **state)
{
	(void)state;
	sql_ok("SELECT 1 AS one", "{\"columns\":[\"one\"],\"rows\":[[1]],\"truncated\":false}");
	sql_ok("SELECT -9223372036854775808 AS lo, 9223372036854775807 AS hi, 0.5 AS d, 'a' || char(1) || '\"' AS s, "
	       "x'0102' AS b, NULL AS n;  \n",
	       "{\"columns\":[\"lo\",\"hi\",\"d\",\"s\",\"b\",\"n\"],\"rows\":[[-9223372036854775808,"
	       "9223372036854775807,0.5,\"a\\u0001\\\"\",{\"blob_bytes\":2},null]],\"truncated\":false}");
	sql_ok("SELECT name, ts, dur FROM slice_view WHERE name IN ('A', 'C') ORDER BY ts",
	       "{\"columns\":[\"name\",\"ts\",\"dur\"],\"rows\":[[\"A\",100,100],[\"C\",500,-1]],\"truncated\":false}");
	sql_ok("SELECT 1 WHERE 0", "{\"columns\":[\"1\"],\"rows\":[],\"truncated\":false}");
	/* one statement, then only comments and semicolons */
	sql_ok("SELECT 1 AS one; -- the answer\n", "{\"columns\":[\"one\"],\"rows\":[[1]],\"truncated\":false}");
	sql_ok("SELECT 1 AS one /* a */ ; /* b */ ;\n-- c", "{\"columns\":[\"one\"],\"rows\":[[1]],\"truncated\":false}");
	/* reading the schema is reading */
	sql_ok("SELECT count(*) > 0 FROM sqlite_master", "{\"columns\":[\"count(*) > 0\"],\"rows\":[[1]],\"truncated\":false}");
}

static void test_sql_row_limit(void **state)
{
	struct qry_error err;
	struct reply r;

	(void)state;
	assert_int_equal(sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000) "
			     "SELECT x FROM c",
			     &r, &err),
			 QRY_OK);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.j, "rows")), QRY_SQL_MAX_ROWS);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r.j, "truncated")));
	reply_free(&r);
	assert_int_equal(sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10001) "
			     "SELECT x FROM c",
			     &r, &err),
			 QRY_OK);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.j, "rows")), 10000);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.j, "truncated")));
	assert_non_null(strstr(r.text, "[9999],[10000]],\"truncated\":true}"));
	reply_free(&r);
}

static void test_sql_refused(void **state)
{
	static const char *const refused[] = {
		/* writes */
		"DELETE FROM slices",
		"INSERT INTO meta VALUES ('k', 1)",
		"UPDATE slices SET dur = 0",
		"DROP TABLE slices",
		"CREATE TABLE t (x)",
		"CREATE TEMP TABLE t (x)",
		"CREATE INDEX i ON slices(ts)",
		"REPLACE INTO meta VALUES ('k', 1)",
		/* other databases, settings, extensions */
		"ATTACH DATABASE ':memory:' AS other",
		"ATTACH DATABASE '/tmp/ts-test-attach.db' AS other",
		"DETACH DATABASE main",
		"PRAGMA user_version",
		"PRAGMA table_info(slices)",
		"PRAGMA writable_schema = 1",
		"PRAGMA query_only = 0",
		"SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')",
		"VACUUM",
		"VACUUM INTO '/tmp/ts-test-vacuum.db'",
		"BEGIN",
		"ANALYZE",
		/* one statement at a time, and one at least */
		"SELECT 1; SELECT 2",
		"SELECT 1; DELETE FROM slices",
		"SELECT 1; -- then\nSELECT 2",
		"SELECT 1; /* then */ SELECT 2",
		"SELECT 1; garbage",
		"",
		"  ;  ",
		"-- nothing",
		/* not SQL */
		"SELECT * FROM pragma_table_info('slices')",
		"SELECT * FROM pragma_user_version",
		"SELEKT 1",
		"SELECT * FROM no_such_table",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		sql_refused(refused[i]);
	assert_int_equal(access("/tmp/ts-test-attach.db", F_OK), -1);
	assert_int_equal(access("/tmp/ts-test-vacuum.db", F_OK), -1);
	/* nothing was changed, and the connection still reads */
	assert_int_equal(tdb_int(&db, "SELECT count(*) FROM slices"), 7);
	sql_ok("SELECT count(*) AS n FROM slices", "{\"columns\":[\"n\"],\"rows\":[[7]],\"truncated\":false}");
}

/* ---- the JSON of a column ------------------------------------------------- */

/* jb_column: SQLite values by their type: blobs as {"blob_bytes": N}. */
static void test_column(void **state)
{
	sqlite3 *mem;
	sqlite3_stmt *st;
	struct jbuf b;
	char *s;
	int i;

	(void)state;
	assert_int_equal(sqlite3_open(":memory:", &mem), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(mem,
					    "SELECT -9223372036854775808, 9223372036854775807, 0.25, 2.0, "
					    "'t\"x' || char(1), x'00010203', NULL, ''",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	jb_init(&b);
	jb_arr(&b);
	for (i = 0; i < sqlite3_column_count(st); i++)
		jb_column(&b, st, i);
	jb_arr_end(&b);
	sqlite3_finalize(st);
	sqlite3_close(mem);
	s = jb_take(&b, NULL);
	assert_string_equal(s, "[-9223372036854775808,9223372036854775807,0.25,2.0,\"t\\\"x\\u0001\","
			       "{\"blob_bytes\":4},null,\"\"]");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracks),
		cmocka_unit_test(test_slice_args),
		cmocka_unit_test(test_counter_u64),
		cmocka_unit_test(test_slice_flows_and_nesting),
		cmocka_unit_test(test_slice_flows_found_by_time),
		cmocka_unit_test(test_slice_unterminated_and_async),
		cmocka_unit_test(test_flows),
		cmocka_unit_test(test_flows_against_the_statement),
		cmocka_unit_test(test_sql_values),
		cmocka_unit_test(test_sql_row_limit),
		cmocka_unit_test(test_sql_refused),
		cmocka_unit_test(test_column),
	};

	return cmocka_run_group_tests_name("query", tests, setup, teardown);
}
