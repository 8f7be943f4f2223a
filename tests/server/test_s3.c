/*
 * The real server with its files in an S3-compatible store (--store,
 * s3rver on loopback): an upload goes to the store, and a server that lost
 * its whole cache (restarted with the same --data and --store) reads the
 * trace back from the store and answers exactly as before. The store
 * killed: /healthz says so, an upload answers 503 with Retry-After, a
 * cached trace stays readable; the store back: uploads work again. A
 * large upload grows in place while it is ingested, and the store gets
 * its database whole once it is ready. A
 * ready trace's source is kept in the store compressed (source.zst), and
 * downloads as it was uploaded.
 *
 * Env: TRACE_SERVER, GEN_FXT (build/rel/gen_fxt); node and the npm
 * packages (make deps-e2e); run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../store/s3rver_util.h"
#include "api_util.h"

static struct {
	char root[64], data[128], cache[160], log[128], exe[256], fxt[128], big[128], url[256];
	struct su_server srv;
	struct s3rver store;
	char *bytes;      /* the generated archive */
	size_t len;
	int64_t id;
	int64_t live_id;  /* the same archive sent as a live stream */
	char *slices[3];  /* /slices replies of three tracks, before the cache was lost */
	char paths[3][160];
} W;

static void server_start(void)
{
	const char *extra[] = { "--store", W.url, NULL };

	api_start(&W.srv, W.exe, W.data, W.log, extra);
}

static char *get_body(const char *path, int status, size_t *len)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	char *b;

	if (su_request(api_port, &q, &r, 60000) != 0)
		fail_msg("GET %s: no reply (see %s)", path, W.log);
	if (r.status != status)
		fail_msg("GET %s: status %d, not %d: %.300s", path, r.status, status, r.body ? r.body : "");
	b = r.body;
	if (len)
		*len = r.body_len;
	r.body = NULL;
	su_resp_free(&r);
	return b;
}

/* POST the archive; the reply (caller frees with su_resp_free). */
static void upload(struct su_resp *r)
{
	struct su_req q = { "POST", "/api/traces?wait=1&name=s3-test", NULL, W.bytes, W.len, 0, 0 };

	if (su_request(api_port, &q, r, 60000) != 0)
		fail_msg("upload: no reply (see %s)", W.log);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* The value of a /metrics sample named exactly series, or -1. */
static double metric(const char *series)
{
	char *m = get_body("/metrics", 200, NULL);
	double v = m ? api_metric_sample(m, series) : -1;

	free(m);
	return v;
}

/* Upload, ingest, and the first three threads' slices as the reference. */
static void t_upload_and_read(void **state)
{
	struct su_resp r;
	cJSON *j, *t;
	const cJSON *p, *x;
	int n = 0;

	(void)state;
	upload(&r);
	if (r.status != 201)
		fail_msg("upload: status %d: %.300s", r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	W.id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	t_fmt(W.paths[0], sizeof(W.paths[0]), "/api/traces/%" PRId64, W.id);
	j = t_get(W.paths[0]);
	assert_string_equal(str(j, "status"), "ready");
	cJSON_Delete(j);
	t_fmt(W.paths[0], sizeof(W.paths[0]), "/api/traces/%" PRId64 "/tracks", W.id);
	t = t_get(W.paths[0]);
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(t, "processes"))
		cJSON_ArrayForEach(x, cJSON_GetObjectItem(p, "threads"))
			if (n < 3 && cJSON_IsNumber(cJSON_GetObjectItem(x, "track_id")))
				t_fmt(W.paths[n++], sizeof(W.paths[0]), "/api/traces/%" PRId64 "/slices?track=%" PRId64,
				      W.id, num(x, "track_id"));
	cJSON_Delete(t);
	assert_int_equal(n, 3);
	for (n = 0; n < 3; n++) {
		W.slices[n] = get_body(W.paths[n], 200, NULL);
		assert_non_null(strstr(W.slices[n], "\"ts\"")); /* not an empty reply */
	}
}

/* The same archive as a live stream: its source grows after the put, and
 * must reach the store whole when the stream ends. */
static void t_live_stream(void **state)
{
	struct su_req q = { "POST", "/api/traces?live=1&name=s3-live", NULL, NULL, 0, 1, 0 };
	char path[128];
	struct su_resp r;
	double deadline = su_now() + 60;
	cJSON *j;

	(void)state;
	q.body = W.bytes;
	q.body_len = W.len;
	if (su_request(api_port, &q, &r, 60000) != 0 || r.status < 200 || r.status > 299)
		fail_msg("live stream: status %d: %.300s", r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	W.live_id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, W.live_id);
	for (;;) {
		const char *st;

		j = t_get(path);
		st = str(j, "status");
		if (strcmp(st, "ready") == 0 || su_now() > deadline) {
			assert_string_equal(st, "ready");
			cJSON_Delete(j);
			break;
		}
		cJSON_Delete(j);
		su_sleep_ms(50);
	}
}

/* The keys the bucket holds under prefix, one per line (caller frees): the
 * test's own look, let through unsigned (tests/store/s3rver.mjs). */
static char *bucket_keys(const char *prefix)
{
	struct su_req q = { "GET", NULL, "x-test-inspect: unsigned\r\n", NULL, 0, 0, 0 };
	struct su_buf out = { 0 };
	struct su_resp r;
	char path[256];
	const char *p, *e;

	t_fmt(path, sizeof(path), "/traces?list-type=2&prefix=%s", prefix);
	q.path = path;
	if (su_request((int)W.store.port, &q, &r, 10000) != 0 || r.status != 200)
		fail_msg("listing the bucket: status %d", r.status);
	su_buf_add(&out, "", 0);
	for (p = r.body; (p = strstr(p, "<Key>")) != NULL; p = e) {
		p += 5;
		if ((e = strstr(p, "</Key>")) == NULL)
			break;
		su_buf_add(&out, p, (size_t)(e - p));
		su_buf_add(&out, "\n", 1);
	}
	su_resp_free(&r);
	return out.p;
}

/* Both ready traces keep their source compressed in the store, as the
 * compressed object alone: an upload's and a live stream's (whose source
 * grew after its put). */
static void t_store_objects(void **state)
{
	char prefix[64], zst[96], raw[96], *keys;
	double deadline = su_now() + 30;
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		int64_t id = i ? W.live_id : W.id;

		t_fmt(prefix, sizeof(prefix), "lib/traces/%" PRId64 "/", id);
		t_fmt(zst, sizeof(zst), "%ssource.zst\n", prefix);
		t_fmt(raw, sizeof(raw), "%ssource\n", prefix);
		/* compressed once the trace is ready: waited for */
		while ((keys = bucket_keys(prefix)) != NULL && (strstr(keys, zst) == NULL || strstr(keys, raw) != NULL) &&
		       su_now() < deadline) {
			free(keys);
			su_sleep_ms(50);
		}
		if (strstr(keys, zst) == NULL || strstr(keys, raw) != NULL)
			fail_msg("trace %" PRId64 "'s source is not kept compressed alone in the store: %s", id, keys);
		free(keys);
	}
}

/* A new server with no cache at all: everything comes from the store. */
static void t_cache_lost(void **state)
{
	char path[256], *body, dbpath[256];
	struct stat st;
	size_t len;
	int i;

	(void)state;
	assert_int_equal(su_server_stop(&W.srv, SIGTERM), 0);
	assert_int_equal(su_rm_tree(W.cache), 0);
	server_start();
	t_fmt(dbpath, sizeof(dbpath), "%s/traces/%" PRId64 "/trace.db", W.cache, W.id);
	assert_int_not_equal(stat(dbpath, &st), 0);
	for (i = 0; i < 3; i++) {
		body = get_body(W.paths[i], 200, NULL);
		assert_string_equal(body, W.slices[i]);
		free(body);
	}
	assert_int_equal(stat(dbpath, &st), 0); /* fetched into the cache */
	for (i = 0; i < 2; i++) {
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/file", i ? W.live_id : W.id);
		body = get_body(path, 200, &len);
		assert_int_equal(len, W.len);
		assert_memory_equal(body, W.bytes, len);
		free(body);
	}
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=1", W.live_id);
	free(get_body(path, 200, NULL));
	/* two trace.db and two sources came down; the other reads found them cached */
	assert_true(metric("trace_server_store_cache_requests_total{result=\"miss\"}") == 4);
	assert_true(metric("trace_server_store_cache_requests_total{result=\"hit\"}") >= 2);
	assert_true(metric("trace_server_store_fetched_bytes_total") > (double)(2 * W.len));
	assert_true(metric("trace_server_store_cache_bytes") > (double)(2 * W.len));
	assert_true(metric("trace_server_store_errors_total") == 0);
}

/* GET path answers 503 store_unavailable with a Retry-After. */
static void expect_retry(const char *path)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	char retry[16];

	if (su_request(api_port, &q, &r, 60000) != 0)
		fail_msg("GET %s: no reply (see %s)", path, W.log);
	if (r.status != 503)
		fail_msg("GET %s with the store down: status %d: %.300s", path, r.status, r.body ? r.body : "");
	assert_non_null(su_header(&r, "Retry-After", retry, sizeof(retry)));
	assert_non_null(strstr(r.body, "store_unavailable"));
	su_resp_free(&r);
}

/* The store killed: health says so, uploads answer 503 with Retry-After,
 * what is cached stays readable; the store back, uploads work again. */
static void t_store_down(void **state)
{
	char *body, retry[16];
	struct su_resp r;
	cJSON *h;
	int i;

	(void)state;
	/* the live trace's files leave the cache, then the store goes */
	t_fmt(retry, sizeof(retry), "%" PRId64, W.live_id);
	{
		char dir[256], path[160];

		t_fmt(dir, sizeof(dir), "%s/traces/%s", W.cache, retry);
		assert_int_equal(su_rm_tree(dir), 0);
		s3rver_stop(&W.store);
		t_fmt(path, sizeof(path), "/api/traces/%s/slices?track=2", retry); /* not in the reply cache */
		expect_retry(path);
		t_fmt(path, sizeof(path), "/api/traces/%s/file", retry);
		expect_retry(path);
	}
	assert_true(metric("trace_server_store_errors_total") >= 2);
	body = get_body("/healthz", 503, NULL);
	h = cJSON_Parse(body);
	assert_string_equal(str(h, "catalog"), "ok");
	assert_non_null(strstr(str(h, "store"), "cannot be reached"));
	cJSON_Delete(h);
	free(body);
	upload(&r);
	if (r.status != 503)
		fail_msg("upload with the store down: status %d: %.300s", r.status, r.body ? r.body : "");
	assert_non_null(su_header(&r, "Retry-After", retry, sizeof(retry)));
	assert_true(atoi(retry) > 0);
	assert_non_null(strstr(r.body, "store_unavailable"));
	su_resp_free(&r);
	for (i = 0; i < 3; i++) {
		body = get_body(W.paths[i], 200, NULL);
		assert_string_equal(body, W.slices[i]);
		free(body);
	}
	{
		char dir[200];

		t_fmt(dir, sizeof(dir), "%s/s3rver", W.root);
		assert_int_equal(s3rver_start(&W.store, dir, "traces", W.store.port), 0);
	}
	cJSON_Delete(t_get("/healthz"));
	upload(&r);
	assert_int_equal(r.status, 201);
	su_resp_free(&r);
}

/* Uploads bytes with query (no wait): the queued trace's id. */
static int64_t upload_queued(const char *query, char *bytes, size_t len)
{
	struct su_req q = { "POST", query, NULL, bytes, len, 0, 0 };
	struct su_resp r;
	int64_t id;
	cJSON *j;

	if (su_request(api_port, &q, &r, 60000) != 0 || r.status != 202)
		fail_msg("upload: status %d: %.300s", r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

/* The store killed while a trace ingests: the trace waits in the queue
 * (never ready without its trace.db in the store, never failed), and is
 * ingested once the store is back. */
static void t_store_down_during_ingest(void **state)
{
	size_t len;
	char *bytes = read_file(W.big, &len), path[96], dir[200];
	double until;
	int64_t id;
	cJSON *j;

	(void)state;
	id = upload_queued("/api/traces?name=s3-big", bytes, len);
	s3rver_stop(&W.store);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	for (until = su_now() + 3; su_now() < until; su_sleep_ms(100)) {
		j = t_get(path);
		if (strcmp(str(j, "status"), "queued") != 0 && strcmp(str(j, "status"), "ingesting") != 0)
			fail_msg("with the store down the trace is %s", str(j, "status"));
		cJSON_Delete(j);
	}
	t_fmt(dir, sizeof(dir), "%s/s3rver", W.root);
	assert_int_equal(s3rver_start(&W.store, dir, "traces", W.store.port), 0);
	for (until = su_now() + 60;; su_sleep_ms(100)) {
		j = t_get(path);
		if (strcmp(str(j, "status"), "ready") == 0)
			break;
		if (su_now() > until || strcmp(str(j, "status"), "failed") == 0)
			fail_msg("after the store came back the trace is %s", str(j, "status"));
		cJSON_Delete(j);
	}
	cJSON_Delete(j);
	free(bytes);
}

/* Whether s3rver's directory holds an object traces/<id>/<file>, under
 * whatever name it gives it on disk. */
static int in_store(int64_t id, const char *file)
{
	char cmd[400], line[600];
	FILE *f;
	int found;

	t_fmt(cmd, sizeof(cmd), "find %s/s3rver -path '*traces/%" PRId64 "/%s*'", W.root, id, file);
	assert_non_null(f = popen(cmd, "r"));
	found = fgets(line, sizeof(line), f) != NULL;
	pclose(f);
	return found;
}

/* With a store but no shared catalog this server ingests its own uploads,
 * so a large one grows in place while it is ingested (docs/API.md,
 * "Uploads that grow while they are ingested"): readable meanwhile from
 * the cache, and once ready its database goes to the store whole (every
 * commit in the file, none left in a log beside it): a server that lost
 * its cache reads back the same slices. The server runs with
 * --preview-min 4M and a slowed ingest for this test only. */
static void t_preview(void **state)
{
	const char *extra[] = { "--store", W.url, "--preview-min", "4M", NULL };
	size_t len;
	char *bytes = read_file(W.big, &len), path[96], tracks[120], slices[120], *before, *after;
	double until;
	int64_t id;
	cJSON *j;

	(void)state;
	su_server_stop(&W.srv, SIGTERM);
	setenv("TRACE_SERVER_TEST_INGEST_DELAY_MS", "300", 1);
	api_start(&W.srv, W.exe, W.data, W.log, extra);
	unsetenv("TRACE_SERVER_TEST_INGEST_DELAY_MS");
	id = upload_queued("/api/traces?name=s3-preview", bytes, len);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	for (until = su_now() + 60;; su_sleep_ms(20)) {
		j = t_get(path);
		if (strcmp(str(j, "status"), "ingesting") == 0 && cJSON_IsObject(cJSON_GetObjectItem(j, "preview")))
			break;
		if (su_now() > until || (strcmp(str(j, "status"), "ingesting") != 0 && strcmp(str(j, "status"), "queued") != 0))
			fail_msg("no commit seen mid-ingest; the trace is %s", str(j, "status"));
		cJSON_Delete(j);
	}
	assert_int_equal(num(cJSON_GetObjectItem(j, "preview"), "from_byte"), 0);
	cJSON_Delete(j);
	t_fmt(tracks, sizeof(tracks), "/api/traces/%" PRId64 "/tracks", id);
	t_fmt(slices, sizeof(slices), "/api/traces/%" PRId64 "/slices?track=1", id);
	free(get_body(tracks, 200, NULL));
	free(get_body(slices, 200, NULL)); /* a reader of the growing database, kept by the server */
	for (until = su_now() + 60;; su_sleep_ms(100)) {
		j = t_get(path);
		if (strcmp(str(j, "status"), "ready") == 0)
			break;
		if (su_now() > until)
			fail_msg("the growing trace is %s", str(j, "status"));
		cJSON_Delete(j);
	}
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "preview")));
	cJSON_Delete(j);
	assert_true(in_store(id, "trace.db"));
	before = get_body(slices, 200, NULL);
	/* the cache lost: what the store holds is the whole trace */
	assert_int_equal(su_server_stop(&W.srv, SIGTERM), 0);
	assert_int_equal(su_rm_tree(W.cache), 0);
	api_start(&W.srv, W.exe, W.data, W.log, extra);
	after = get_body(slices, 200, NULL);
	assert_string_equal(after, before);
	free(before);
	free(after);
	free(bytes);
	su_server_stop(&W.srv, SIGTERM);
	server_start();
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[512], dir[200];

	(void)state;
	if (exe == NULL || gen == NULL || realpath(exe, W.exe) == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	snprintf(W.root, sizeof(W.root), "/tmp/test-s3-XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.cache, sizeof(W.cache), "%s/cache", W.data);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	snprintf(W.fxt, sizeof(W.fxt), "%s/t.fxt", W.root);
	snprintf(dir, sizeof(dir), "%s/s3rver", W.root);
	snprintf(cmd, sizeof(cmd), "%s --events 20000 --threads 4 --seed 11 %s >/dev/null", gen, W.fxt);
	if (system(cmd) != 0)
		return -1;
	/* big enough that ingest outlasts the few milliseconds it takes to kill the store */
	snprintf(W.big, sizeof(W.big), "%s/big.fxt", W.root);
	snprintf(cmd, sizeof(cmd), "%s --events 600000 --threads 8 --seed 12 %s >/dev/null", gen, W.big);
	if (system(cmd) != 0)
		return -1;
	W.bytes = read_file(W.fxt, &W.len);
	signal(SIGPIPE, SIG_IGN);
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	if (s3rver_start(&W.store, dir, "traces", 0) != 0) {
		fprintf(stderr, "s3rver did not start (node and `make deps-e2e` needed)\n");
		return -1;
	}
	snprintf(W.url, sizeof(W.url), "s3://traces/lib?endpoint=http://127.0.0.1:%u&region=us-east-1", W.store.port);
	server_start();
	return 0;
}

static int teardown(void **state)
{
	int i;

	(void)state;
	su_server_stop(&W.srv, SIGTERM);
	s3rver_stop(&W.store);
	for (i = 0; i < 3; i++)
		free(W.slices[i]);
	free(W.bytes);
	su_rm_tree(W.root);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_upload_and_read),
		cmocka_unit_test(t_live_stream),
		cmocka_unit_test(t_store_objects),
		cmocka_unit_test(t_cache_lost),
		cmocka_unit_test(t_store_down),
		cmocka_unit_test(t_store_down_during_ingest),
		cmocka_unit_test(t_preview),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
