/*
 * Trends and one query over many traces, over loopback (docs/API.md
 * "Trends", "One query over many traces"): the real server binary (env
 * TRACE_SERVER) with traces from gen_fxt (env GEN_FXT), labelled with a
 * build number, checked against SQL on each trace (POST .../query), the
 * per-trace oracle.
 *
 * Trends: every filtered trace is a point, in upload order or by a label's
 * value (as numbers: 10 after 9), with count, total and max exact and p50
 * and p95 within the sketch's 1/64 of nearest rank; a regression against
 * the median of the points before. The query over many traces: the same
 * rows as each trace's own query, in the library's order; a trace's
 * error, a time bound, a statement that writes; bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <signal.h>

#include "api_util.h"

enum { NT = 5 };

static struct {
	char root[64], data[128], log[128];
	struct su_server srv;
	int64_t id[NT];       /* build 6 + i at id[i] (10 last); uploaded in the order of up[] */
} W;

static const int up[NT] = { 3, 0, 4, 1, 2 }; /* the upload order: builds 9, 6, 10, 7, 8 */

static int64_t upload(const char *gen, int build)
{
	char cmd[512], file[160], path[160], *body;
	struct su_req q = { "POST", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	cJSON *j;
	int64_t id;
	FILE *f;
	long n;

	t_fmt(file, sizeof(file), "%s/b%d.fxt", W.root, build);
	t_fmt(cmd, sizeof(cmd), "%s --events 6000 --threads 3 --seed %d %s >/dev/null", gen, 40 + build, file);
	assert_int_equal(system(cmd), 0);
	assert_non_null(f = fopen(file, "rb"));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	body = malloc((size_t)n);
	assert_int_equal(fread(body, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	t_fmt(path, sizeof(path), "/api/traces?wait=1&name=build-%d&label=build=%d%s", build, build,
	      build == 9 ? "&label=flavour=odd" : "");
	q.body = body;
	q.body_len = (size_t)n;
	assert_int_equal(su_request(api_port, &q, &r, 60000), 0);
	if (r.status != 201)
		fail_msg("upload: %d %.200s", r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	free(body);
	return id;
}

/* One integer of a trace's own SQL. */
static int64_t sql_i64(int64_t id, const char *sql)
{
	char path[96];
	cJSON *j, *v;
	int64_t out;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/query", id);
	j = t_call("POST", path, sql, 200);
	v = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0), 0);
	out = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
	cJSON_Delete(j);
	return out;
}

/* The nearest-rank percentile p of the ended durations of name in trace id. */
static int64_t exact_pct(int64_t id, const char *name, double p)
{
	char sql[512];
	int64_t n;

	t_fmt(sql, sizeof(sql), "SELECT count(*) FROM slice_view WHERE name = '%s' AND dur >= 0", name);
	n = sql_i64(id, sql);
	t_fmt(sql, sizeof(sql),
	      "SELECT dur FROM slice_view WHERE name = '%s' AND dur >= 0 ORDER BY dur LIMIT 1 OFFSET %" PRId64, name,
	      (int64_t)ceil(p * (double)n) - 1);
	return sql_i64(id, sql);
}

static void check_point(const cJSON *pt, const char *name)
{
	int64_t id = num(pt, "id"), want;
	char sql[512];

	t_fmt(sql, sizeof(sql), "SELECT count(*) FROM slice_view WHERE name = '%s'", name);
	assert_int_equal(num(pt, "count"), sql_i64(id, sql));
	t_fmt(sql, sizeof(sql), "SELECT coalesce(sum(dur), 0) FROM slice_view WHERE name = '%s' AND dur >= 0", name);
	assert_int_equal(num(pt, "total_ns"), sql_i64(id, sql));
	t_fmt(sql, sizeof(sql), "SELECT max(dur) FROM slice_view WHERE name = '%s' AND dur >= 0", name);
	assert_int_equal(num(pt, "max_ns"), sql_i64(id, sql));
	want = exact_pct(id, name, 0.5);
	assert_true(fabs((double)(num(pt, "p50_ns") - want)) <= (double)want / 64 + 1);
	want = exact_pct(id, name, 0.95);
	assert_true(fabs((double)(num(pt, "p95_ns") - want)) <= (double)want / 64 + 1);
}

static void test_trend_order_and_values(void **state)
{
	cJSON *j, *pts;
	int i;

	(void)state;
	/* by upload: the order the builds came in */
	j = t_get("/api/trends?name=Send");
	pts = cJSON_GetObjectItem(j, "points");
	assert_int_equal(cJSON_GetArraySize(pts), NT);
	for (i = 0; i < NT; i++) {
		assert_int_equal(num(cJSON_GetArrayItem(pts, i), "id"), W.id[up[i]]);
		check_point(cJSON_GetArrayItem(pts, i), "Send");
	}
	assert_string_equal(str(j, "order"), "created");
	cJSON_Delete(j);
	/* by the build label as a number: 9 before 10 */
	j = t_get("/api/trends?name=Send&order=label:build&stat=p95");
	pts = cJSON_GetObjectItem(j, "points");
	for (i = 0; i < NT; i++)
		assert_int_equal(num(cJSON_GetArrayItem(pts, i), "id"), W.id[i]);
	assert_string_equal(str(cJSON_GetArrayItem(pts, NT - 1), "order_value"), "10");
	assert_string_equal(str(j, "stat"), "p95");
	cJSON_Delete(j);
	/* a label only some traces have: they come first, the rest after, by upload */
	j = t_get("/api/trends?name=Send&order=label:flavour");
	pts = cJSON_GetObjectItem(j, "points");
	assert_string_equal(str(cJSON_GetArrayItem(pts, 0), "name"), "build-9");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 1), "order_value")));
	cJSON_Delete(j);
	/* filters: the library's */
	j = t_get("/api/trends?name=Send&label=build=9");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "points")), 1);
	cJSON_Delete(j);
	/* a name no trace has: every point, count 0, no percentiles */
	j = t_get("/api/trends?name=no-such-name");
	pts = cJSON_GetObjectItem(j, "points");
	assert_int_equal(cJSON_GetArraySize(pts), NT);
	assert_int_equal(num(cJSON_GetArrayItem(pts, 0), "count"), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 0), "p50_ns")));
	cJSON_Delete(j);
}

/* regression: above (1 + threshold) times the median of the points before */
static void test_trend_regressions(void **state)
{
	cJSON *j, *pts, *p;
	int64_t vals[NT];
	int i, k, n = 0;

	(void)state;
	j = t_get("/api/trends?name=Send&order=label:build&threshold=0.05");
	pts = cJSON_GetObjectItem(j, "points");
	for (i = 0; i < NT; i++) {
		int64_t v, base;
		int flagged;

		p = cJSON_GetArrayItem(pts, i);
		v = num(p, "p50_ns");
		flagged = cJSON_IsTrue(cJSON_GetObjectItem(p, "regression"));
		if (n == 0) {
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(p, "baseline_ns")));
			assert_false(flagged);
		} else {
			int64_t s[NT];

			memcpy(s, vals, (size_t)n * sizeof(*s));
			for (k = 1; k < n; k++) { /* insertion sort: the lower middle is the median */
				int64_t t = s[k];
				int m = k;

				for (; m > 0 && s[m - 1] > t; m--)
					s[m] = s[m - 1];
				s[m] = t;
			}
			base = s[(n - 1) / 2];
			assert_int_equal(num(p, "baseline_ns"), base);
			assert_int_equal(flagged, (double)v > (double)base * 1.05);
		}
		vals[n++] = v;
	}
	cJSON_Delete(j);
	t_error("GET", "/api/trends", NULL, 400, "missing_parameter");
	t_error("GET", "/api/trends?name=Send&order=size", NULL, 400, "bad_parameter");
	t_error("GET", "/api/trends?name=Send&stat=p99", NULL, 400, "bad_parameter");
	t_error("GET", "/api/trends?name=Send&threshold=-1", NULL, 400, "bad_parameter");
	t_error("GET", "/api/trends?name=Send&label=bad%20key", NULL, 400, "bad_label");
}

static void test_query_many(void **state)
{
	cJSON *j, *tr, *t;
	char sql[256];
	int i;

	(void)state;
	/* the same rows as each trace's own query, newest first */
	j = t_call("POST", "/api/query?label=build", "SELECT count(*), sum(dur) FROM slice_view WHERE name = 'Send'", 200);
	tr = cJSON_GetObjectItem(j, "traces");
	assert_int_equal(num(j, "count"), NT);
	assert_int_equal(cJSON_GetArraySize(tr), NT);
	for (i = 0; i < NT; i++) {
		t = cJSON_GetArrayItem(tr, i);
		assert_int_equal(num(t, "id"), W.id[up[NT - 1 - i]]);
		assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "labels"), "build"));
		t_fmt(sql, sizeof(sql), "SELECT count(*) FROM slice_view WHERE name = 'Send'");
		assert_int_equal((int64_t)cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "rows"), 0), 0)
					  ->valuedouble,
				 sql_i64(num(t, "id"), sql));
	}
	cJSON_Delete(j);
	/* a trace's error is its own; the others go on */
	j = t_call("POST", "/api/query",
		   "SELECT CASE WHEN (SELECT count(*) FROM slice_view) % 2 = 0 THEN 1 ELSE abs(-9223372036854775807 - 1) END",
		   200);
	tr = cJSON_GetObjectItem(j, "traces");
	for (i = 0; i < cJSON_GetArraySize(tr); i++) {
		t = cJSON_GetArrayItem(tr, i);
		assert_true(cJSON_GetObjectItem(t, "error") != NULL || cJSON_GetObjectItem(t, "rows") != NULL);
	}
	cJSON_Delete(j);
	j = t_call("POST", "/api/query", "SELECT no_such_column FROM slices", 200);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0);
	assert_string_equal(str(cJSON_GetObjectItem(t, "error"), "code"), "bad_query");
	cJSON_Delete(j);
	/* the time bound, per trace */
	j = t_call("POST", "/api/query?timeout_ms=20",
		   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", 200);
	tr = cJSON_GetObjectItem(j, "traces");
	assert_int_equal(cJSON_GetArraySize(tr), NT);
	for (i = 0; i < NT; i++)
		assert_string_equal(str(cJSON_GetObjectItem(cJSON_GetArrayItem(tr, i), "error"), "code"), "query_limit");
	cJSON_Delete(j);
	/* read-only, and nothing changed */
	j = t_call("POST", "/api/query", "DELETE FROM slices", 200);
	assert_string_equal(str(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0), "error"),
				"code"),
			    "bad_query");
	cJSON_Delete(j);
	assert_true(sql_i64(W.id[0], "SELECT count(*) FROM slices") > 0);
	/* rows per trace bounded */
	j = t_call("POST", "/api/query?limit=2&label=build=6", "SELECT id FROM slices", 200);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "rows")), 2);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(t, "truncated")));
	cJSON_Delete(j);
	/* nothing selected */
	j = t_call("POST", "/api/query?q=no-trace-is-called-this", "SELECT 1", 200);
	assert_int_equal(num(j, "count"), 0);
	cJSON_Delete(j);
	t_error("POST", "/api/query", NULL, 400, "missing_body");
	t_error("POST", "/api/query?timeout_ms=0", "SELECT 1", 400, "bad_parameter");
	t_error("POST", "/api/query?limit=10001", "SELECT 1", 400, "bad_parameter");
	t_error("POST", "/api/query?status=nope", "SELECT 1", 400, "bad_parameter");
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	int i;

	(void)state;
	if (exe == NULL || gen == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	snprintf(W.root, sizeof(W.root), "/tmp/test_trends.XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	api_start(&W.srv, exe, W.data, W.log, NULL);
	for (i = 0; i < NT; i++) {
		int k = up[i];

		W.id[k] = upload(gen, k == NT - 1 ? 10 : k + 6); /* builds 6, 7, 8, 9, 10 */
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (W.srv.pid && su_server_stop(&W.srv, SIGTERM) != 0)
		return -1;
	return su_rm_tree(W.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trend_order_and_values),
		cmocka_unit_test(test_trend_regressions),
		cmocka_unit_test(test_query_many),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
