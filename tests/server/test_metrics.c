/*
 * Operations over loopback (docs/API.md, Operations): GET /healthz and
 * GET /metrics of the real server binary (env TRACE_SERVER).
 *
 * /metrics must be well-formed Prometheus text (every sample after its
 * HELP and TYPE, histograms cumulative with +Inf equal to _count) and
 * count what was asked: requests by route pattern, method and status,
 * the library by status, ingests and the reply cache. /healthz answers
 * without a token and says 503 when the trace store is gone; /metrics
 * needs the token when one is set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "api_util.h"

static struct {
	char root[64], data[128], log[128], exe[256];
	struct su_server srv;
} W;

/* The body of GET path with the expected status (extra headers may be NULL). */
static char *get_text(const char *path, const char *headers, int status)
{
	struct su_req q = { "GET", path, headers, NULL, 0, 0, 0 };
	struct su_resp r;
	char *body;

	if (su_request(api_port, &q, &r, 30000) != 0)
		fail_msg("GET %s: no reply (see %s)", path, api_log);
	if (r.status != status)
		fail_msg("GET %s: status %d, not %d: %.300s", path, r.status, status, r.body ? r.body : "");
	body = r.body;
	r.body = NULL;
	su_resp_free(&r);
	return body;
}

/* Every line is a HELP or TYPE comment or a sample `name{labels} value`
 * of a family declared before it; histogram buckets never decrease and
 * end at +Inf with the _count. */
static void well_formed(const char *text)
{
	char family[128] = "", type[16] = "", line[1024], last_series[512] = "";
	double last_bucket = -1;
	const char *p = text;
	int samples = 0;

	while (*p) {
		size_t k = strcspn(p, "\n");
		char name[256], *brace, *sp;

		assert_true(k < sizeof(line));
		memcpy(line, p, k);
		line[k] = '\0';
		p += k + (p[k] == '\n');
		if (strncmp(line, "# HELP ", 7) == 0)
			continue;
		if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%127s %15s", family, type), 2);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
				    strcmp(type, "histogram") == 0);
			continue;
		}
		assert_true(line[0] != '#' && line[0] != '\0');
		sp = strrchr(line, ' ');
		assert_non_null(sp);
		assert_true(strtod(sp + 1, NULL) >= 0);
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(line, "{ "), line);
		assert_true(strncmp(name, family, strlen(family)) == 0 && family[0]); /* under its family */
		if (strcmp(type, "histogram") == 0 && strstr(name, "_bucket") != NULL) {
			char series[512];
			double v = strtod(sp + 1, NULL);

			brace = strstr(line, "le=\"");
			assert_non_null(brace);
			snprintf(series, sizeof(series), "%.*s", (int)(brace - line), line);
			if (strcmp(series, last_series) != 0) {
				snprintf(last_series, sizeof(last_series), "%s", series);
				last_bucket = -1;
			}
			assert_true(v >= last_bucket);
			last_bucket = v;
		}
		samples++;
	}
	assert_true(samples > 20);
}

/* GET /metrics once series reads want: a request is counted as its answer
 * ends, just after the client has it. */
static char *metrics_when(const char *series, double want)
{
	double deadline = su_now() + 10;
	char *m;

	for (;;) {
		m = get_text("/metrics", NULL, 200);
		if (api_metric_sample(m, series) == want || su_now() > deadline)
			return m;
		free(m);
		su_sleep_ms(20);
	}
}

static void t_healthz(void **state)
{
	cJSON *h;

	(void)state;
	h = t_get("/healthz");
	assert_string_equal(str(h, "status"), "ok");
	assert_string_equal(str(h, "catalog"), "ok");
	assert_string_equal(str(h, "store"), "ok");
	cJSON_Delete(h);
}

static void t_counts(void **state)
{
	char body[4096], *m, path[64];
	struct su_req up = { "POST", "/api/traces?wait=1&name=m", NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	double inf, count;
	int i;

	(void)state;
	/* a tiny FXT archive: the magic record alone */
	memcpy(body, "\x10\x00\x04\x46\x78\x54\x16\x00", 8);
	up.body = body;
	up.body_len = 8;
	assert_int_equal(su_request(api_port, &up, &r, 30000), 0);
	assert_int_equal(r.status, 201);
	su_resp_free(&r);
	for (i = 0; i < 3; i++)
		cJSON_Delete(t_get("/api/traces/1"));
	t_error("GET", "/api/traces/999", NULL, 404, "not_found");
	t_error("GET", "/api/nothing/here", NULL, 404, "not_found");
	/* each request is counted by the thread that answered it, in no
	 * set order: every count this test reads is waited for */
	free(metrics_when("trace_server_http_requests_total{route=\"/api/traces/{id}\",method=\"GET\",status=\"200\"}", 3));
	free(metrics_when("trace_server_http_requests_total{route=\"/api/traces/{id}\",method=\"GET\",status=\"404\"}", 1));
	free(metrics_when("trace_server_http_requests_total{route=\"/api/traces\",method=\"POST\",status=\"201\"}", 1));
	m = metrics_when("trace_server_http_requests_total{route=\"other\",method=\"GET\",status=\"404\"}", 1);
	well_formed(m);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"/api/traces/{id}\",method=\"GET\",status=\"200\"}") == 3);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"/api/traces/{id}\",method=\"GET\",status=\"404\"}") == 1);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"/api/traces\",method=\"POST\",status=\"201\"}") == 1);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"other\",method=\"GET\",status=\"404\"}") == 1);
	/* a route's histogram: +Inf is every request of it */
	inf = api_metric_sample(m, "trace_server_http_request_duration_seconds_bucket{route=\"/api/traces/{id}\",method=\"GET\",le=\"+Inf\"}");
	count = api_metric_sample(m, "trace_server_http_request_duration_seconds_count{route=\"/api/traces/{id}\",method=\"GET\"}");
	assert_true(inf == 4 && count == 4);
	assert_true(api_metric_sample(m, "trace_server_traces{status=\"ready\"}") == 1);
	assert_true(api_metric_sample(m, "trace_server_traces{status=\"failed\"}") == 0);
	assert_true(api_metric_sample(m, "trace_server_ingest_queue_depth") == 0);
	assert_true(api_metric_sample(m, "trace_server_ingests_total{result=\"ok\"}") == 1);
	assert_true(api_metric_sample(m, "trace_server_ingest_bytes_total") == 8);
	assert_true(api_metric_sample(m, "trace_server_ingest_duration_seconds_count") == 1);
	assert_true(api_metric_sample(m, "trace_server_stored_bytes") > 0);
	assert_true(api_metric_sample(m, "process_resident_memory_bytes") > 1e6);
	assert_true(api_metric_sample(m, "trace_server_cache_requests_total{result=\"hit\"}") >= 0);
	free(m);
	/* a query reply is cached: the second read is a hit */
	t_fmt(path, sizeof(path), "/api/traces/%d/tracks", 1);
	cJSON_Delete(t_get(path));
	cJSON_Delete(t_get(path));
	m = metrics_when("trace_server_http_requests_total{route=\"/api/traces/{id}/tracks\",method=\"GET\",status=\"200\"}", 2);
	assert_true(api_metric_sample(m, "trace_server_cache_requests_total{result=\"hit\"}") >= 1);
	assert_true(api_metric_sample(m, "trace_server_cache_bytes") > 0);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"/metrics\",method=\"GET\",status=\"200\"}") >= 1);
	free(m);
}

/* A wrong method on a path a route knows is counted under that route's
 * pattern ("other" is for a path no route knows); the reply is the
 * Prometheus text format's Content-Type, as docs/API.md writes it. */
static void t_wrong_method_and_type(void **state)
{
	struct su_req q = { "GET", "/metrics", NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	char type[128], *m;

	(void)state;
	t_error("GET", "/api/traces/1/query", NULL, 405, "method_not_allowed");
	t_error("DELETE", "/api/traces/1/tracks", NULL, 405, "method_not_allowed");
	/* each request is counted as its own answer ends, on whichever event
	 * loop served it: the second may be counted before the first */
	free(metrics_when("trace_server_http_requests_total{route=\"/api/traces/{id}/query\",method=\"GET\",status=\"405\"}", 1));
	m = metrics_when("trace_server_http_requests_total{route=\"/api/traces/{id}/tracks\",method=\"DELETE\",status=\"405\"}", 1);
	well_formed(m);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"/api/traces/{id}/query\",method=\"GET\",status=\"405\"}") == 1);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"/api/traces/{id}/tracks\",method=\"DELETE\",status=\"405\"}") == 1);
	assert_true(api_metric_sample(m, "trace_server_http_requests_total{route=\"other\",method=\"GET\",status=\"405\"}") < 0);
	free(m);
	assert_int_equal(su_request(api_port, &q, &r, 30000), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(su_header(&r, "Content-Type", type, sizeof(type)));
	assert_string_equal(type, "text/plain; version=0.0.4");
	su_resp_free(&r);
}

/* The trace store's directory gone: 503, saying which part is down. */
static void t_store_gone(void **state)
{
	char spool[200], *body;
	cJSON *h;

	(void)state;
	t_fmt(spool, sizeof(spool), "%s/spool", W.data);
	assert_int_equal(su_rm_tree(spool), 0);
	body = get_text("/healthz", NULL, 503);
	h = cJSON_Parse(body);
	assert_non_null(h);
	assert_string_equal(str(h, "status"), "unavailable");
	assert_string_equal(str(h, "catalog"), "ok");
	assert_true(strcmp(str(h, "store"), "ok") != 0);
	cJSON_Delete(h);
	free(body);
	assert_int_equal(mkdir(spool, 0755), 0);
	cJSON_Delete(t_get("/healthz"));
}

/* With a token: /metrics needs it, /healthz does not. */
static void t_token(void **state)
{
	char tok[200], *body;
	FILE *f;
	int i;

	(void)state;
	t_fmt(tok, sizeof(tok), "%s/token", W.root);
	assert_non_null(f = fopen(tok, "w"));
	fputs("metrics-token-0123456789\n", f);
	fclose(f);
	su_server_stop(&W.srv, SIGTERM);
	{
		const char *extra[] = { "--token-file", tok, NULL };

		api_start(&W.srv, W.exe, W.data, W.log, extra);
	}
	free(get_text("/metrics", NULL, 401));
	free(get_text("/api/traces", NULL, 401));
	/* counted under the route asked for, which answered 401, as it ends */
	for (i = 0;; i++) {
		body = get_text("/metrics", "Authorization: Bearer metrics-token-0123456789\r\n", 200);
		if (api_metric_sample(body, "trace_server_http_requests_total{route=\"/api/traces\",method=\"GET\",status=\"401\"}") == 1)
			break;
		free(body);
		if (i == 500)
			fail_msg("GET /api/traces without the token is not counted under /api/traces");
		su_sleep_ms(20);
	}
	well_formed(body);
	free(body);
	cJSON_Delete(t_get("/healthz"));
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER");

	(void)state;
	if (exe == NULL || realpath(exe, W.exe) == NULL) {
		fprintf(stderr, "set TRACE_SERVER\n");
		return -1;
	}
	snprintf(W.root, sizeof(W.root), "/tmp/test-metrics-XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	signal(SIGPIPE, SIG_IGN);
	api_start(&W.srv, W.exe, W.data, W.log, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	su_server_stop(&W.srv, SIGTERM);
	if (getenv("KEEP") == NULL)
		su_rm_tree(W.root);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_healthz),
		cmocka_unit_test(t_counts),
		cmocka_unit_test(t_wrong_method_and_type),
		cmocka_unit_test(t_store_gone),
		cmocka_unit_test(t_token),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
