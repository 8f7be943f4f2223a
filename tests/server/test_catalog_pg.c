/*
 * Two real servers sharing one catalog in PostgreSQL (--catalog), over
 * loopback (docs/DEPLOY.md, Catalog in PostgreSQL): a trace uploaded
 * through one is listed, searched, renamed and deleted through the other,
 * and both give the same trace object; with PostgreSQL stopped the catalog
 * requests answer 503 catalog_unavailable with Retry-After while the
 * trace's data is still served, and all of it works again once PostgreSQL
 * is back, with no restart of the servers.
 *
 * Env: TRACE_SERVER, GEN_FXT, PG_SH (default tests/catalog/pg.sh).
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
	char root[64], pg[128], url[256], fxt[128], data[2][128], log[2][128];
	struct su_server srv[2];
	int port[2];
	int64_t id;
} W;

static int pg_ctl(const char *verb)
{
	return su_pg_ctl(verb, W.pg);
}

/* Requests go to server k (0 or 1) until told otherwise. */
static void use(int k)
{
	api_port = W.port[k];
	api_log = W.log[k];
}

static void test_shared(void **state)
{
	struct su_req q = { "POST", "/api/traces?name=shared&wait=1", NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	cJSON *j, *a, *b;
	char path[128], *body, *ja, *jb;
	FILE *f;
	int i;
	long n;

	(void)state;
	f = fopen(W.fxt, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	body = malloc((size_t)n);
	assert_int_equal(fread(body, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	q.body = body;
	q.body_len = (size_t)n;
	use(0);
	assert_int_equal(su_request(api_port, &q, &r, 60000), 0);
	assert_int_equal(r.status, 201);
	j = cJSON_Parse(r.body);
	W.id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	free(body);
	/* listed and found by the other server */
	use(1);
	t_fmt(path, sizeof(path), "\"id\":%" PRId64 ",", W.id);
	assert_int_equal(api_get_until("/api/traces", 200, 1000, path), 200);
	assert_int_equal(api_get_until("/api/search?q=frame", 200, 1000, "\"name\":\"shared\""), 200);
	/* renamed through the other; the same object through both */
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, W.id);
	cJSON_Delete(t_call("PATCH", path, "{\"name\":\"renamed\",\"labels\":{\"team\":\"b\"},\"pinned\":true}", 200));
	use(0);
	assert_int_equal(api_get_until(path, 200, 1000, "\"renamed\""), 200);
	/* the source's compression, in a process of its own once the trace
	 * is ready, changes stored_bytes, which each server learns from the
	 * catalog in its own time: the two agree once both know it */
	for (i = 0;; i++) {
		use(0);
		a = t_get(path);
		use(1);
		b = t_get(path);
		ja = cJSON_PrintUnformatted(a);
		jb = cJSON_PrintUnformatted(b);
		if (strcmp(ja, jb) == 0 || i == 100)
			break;
		free(ja);
		free(jb);
		cJSON_Delete(a);
		cJSON_Delete(b);
		su_sleep_ms(100);
	}
	assert_string_equal(ja, jb);
	assert_string_equal(str(a, "status"), "ready");
	free(ja);
	free(jb);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* An edit is what the server that made it answers at once, every time:
 * its look at the catalog's changes, read while the edit was saved, never
 * brings back the older labels; and the other server comes to the same. */
static void test_edits_hold(void **state)
{
	char path[128], body[128], want[64];
	int i;

	(void)state;
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, W.id);
	for (i = 0; i < 60; i++) {
		cJSON *t;

		use(i % 2);
		t_fmt(body, sizeof(body), "{\"labels\":{\"team\":\"b\",\"edit\":\"%d\"}}", i);
		cJSON_Delete(t_call("PATCH", path, body, 200));
		t = t_get(path);
		t_fmt(want, sizeof(want), "%d", i);
		assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "labels"), "edit"), want);
		cJSON_Delete(t);
		su_sleep_ms(i % 7 * 10); /* edits at every phase of the other's looks */
	}
	use(1 - (i - 1) % 2);
	t_fmt(want, sizeof(want), "\"edit\":\"%d\"", i - 1);
	assert_int_equal(api_get_until(path, 200, 2000, want), 200);
	cJSON_Delete(t_call("PATCH", path, "{\"labels\":{\"team\":\"b\"}}", 200));
}

/* A note saved through one server is there through the other at once
 * (both read the catalog's database, no copy), edited and removed the
 * same way; the library counts it on both, and its q finds it. */
static void test_notes_shared(void **state)
{
	char path[128], body[256], npath[128];
	cJSON *n, *l;
	int64_t id;

	(void)state;
	use(0);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", W.id);
	n = t_call("POST", path, "{\"text\":\"the GC stalls here, bug 1234\",\"author\":\"ana\"}", 201);
	id = num(n, "id");
	cJSON_Delete(n);
	use(1);
	l = t_get(path);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "notes")), 1);
	assert_string_equal(str(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "notes"), 0), "author"), "ana");
	cJSON_Delete(l);
	t_fmt(npath, sizeof(npath), "/api/notes/%" PRId64, id);
	t_fmt(body, sizeof(body), "{\"text\":\"the GC, see bug 1234\"}");
	cJSON_Delete(t_call("PATCH", npath, body, 200));
	use(0);
	n = t_get(npath);
	assert_string_equal(str(n, "text"), "the GC, see bug 1234");
	assert_non_null(str(n, "edited_at"));
	cJSON_Delete(n);
	l = t_get("/api/traces?q=BUG%201234");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "traces")), 1);
	assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "traces"), 0), "notes"), 1);
	cJSON_Delete(l);
	cJSON_Delete(t_call("DELETE", npath, NULL, 204));
	use(1);
	t_error("GET", npath, NULL, 404, "not_found");
	t_error("DELETE", npath, NULL, 404, "not_found");
}

static void test_down_and_back(void **state)
{
	struct su_req q = { "GET", "/api/traces", NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	char path[128], hdr[32];

	(void)state;
	assert_int_equal(pg_ctl("stop"), 0);
	use(0);
	/* the server's next look at the catalog (every 100 ms) finds it down */
	assert_int_equal(api_get_until("/api/traces", 503, 5000, "\"catalog_unavailable\""), 503);
	assert_int_equal(su_request(api_port, &q, &r, 10000), 0);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "\"catalog_unavailable\""));
	assert_non_null(su_header(&r, "Retry-After", hdr, sizeof(hdr)));
	su_resp_free(&r);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, W.id);
	t_error("GET", path, NULL, 503, "catalog_unavailable");
	t_error("PATCH", path, "{\"name\":\"x\"}", 503, "catalog_unavailable");
	t_error("DELETE", path, NULL, 503, "catalog_unavailable");
	t_error("GET", "/api/search?q=frame", NULL, 503, "catalog_unavailable");
	assert_int_equal(api_get_until("/healthz", 503, 1000, "\"status\":\"unavailable\""), 503);
	/* the trace's data is still served, from what the server knew */
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", W.id);
	cJSON_Delete(t_get(path));
	assert_int_equal(pg_ctl("start"), 0);
	assert_int_equal(api_get_until("/api/traces", 200, 5000, "\"renamed\""), 200);
	assert_int_equal(api_get_until("/healthz", 200, 2000, NULL), 200);
	/* deleted through the other: gone from this one */
	use(1);
	assert_int_equal(api_get_until("/api/traces", 200, 5000, NULL), 200);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, W.id);
	cJSON_Delete(t_call("DELETE", path, NULL, 204));
	use(0);
	assert_int_equal(api_get_until(path, 404, 1000, NULL), 404);
}

/* Both servers stop cleanly (under ASan: no leak, no error at exit). */
static void test_clean_stop(void **state)
{
	int k, rc;

	(void)state;
	for (k = 0; k < 2; k++) {
		rc = su_server_stop(&W.srv[k], SIGTERM);
		if (rc != 0)
			fail_msg("server %d ended with %d (see %s)", k, rc, W.log[k]);
		W.srv[k].pid = 0;
	}
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[512], path[160], root[64];
	FILE *f;
	int k;

	(void)state;
	if (exe == NULL || gen == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	snprintf(W.root, sizeof(W.root), "/tmp/test_catalog_pg.XXXXXX");
	if (mkdtemp(W.root) == NULL || chmod(W.root, 0711) != 0)
		return -1;
	snprintf(W.pg, sizeof(W.pg), "%s/pg", W.root);
	snprintf(W.fxt, sizeof(W.fxt), "%s/t.fxt", W.root);
	snprintf(path, sizeof(path), "%s/url", W.pg);
	snprintf(cmd, sizeof(cmd), "%s --events 4000 --threads 3 --seed 5 %s >/dev/null", gen, W.fxt);
	if (system(cmd) != 0 || pg_ctl("start") != 0 || (f = fopen(path, "r")) == NULL)
		return -1;
	if (fgets(W.url, sizeof(W.url), f) == NULL) {
		fclose(f);
		return -1;
	}
	fclose(f);
	W.url[strcspn(W.url, "\n")] = '\0';
	snprintf(root, sizeof(root), "%s", W.root); /* a copy: GCC sees W's members overlap */
	for (k = 0; k < 2; k++) {
		const char *extra[] = { "--catalog", W.url, NULL };

		snprintf(W.data[k], sizeof(W.data[k]), "%s/data%d", root, k);
		snprintf(W.log[k], sizeof(W.log[k]), "%s/server%d.log", root, k);
		api_start(&W.srv[k], exe, W.data[k], W.log[k], extra);
		W.port[k] = api_port;
	}
	return 0;
}

static int teardown(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < 2; k++)
		if (W.srv[k].pid)
			su_server_stop(&W.srv[k], SIGTERM);
	pg_ctl("kill");
	return su_rm_tree(W.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_edits_hold),
		cmocka_unit_test(test_notes_shared),
		cmocka_unit_test(test_down_and_back),
		cmocka_unit_test(test_clean_stop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
