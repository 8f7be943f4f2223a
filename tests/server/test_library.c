/*
 * The team's library over loopback (docs/API.md "Library"): the real server
 * binary (env TRACE_SERVER) on a free port with a temporary --data, traces
 * written here record by record so that every figure is known.
 *
 * Labels and descriptions at upload and by PATCH, every filter, sort and
 * page of GET /api/traces, search across traces from the catalog's index,
 * search inside a trace page by page against SQL as the oracle, compare
 * with exact percentiles, retention by space across a restart, and the
 * errors of each (a bad filter, a bad label, comparing a trace that
 * failed or is unknown): a clear 4xx and nothing changed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "../fxt_writer.h"
#include "../server_util.h"

struct world {
	char root[64], data[128], log[128], exe[96], static_dir[128];
	struct su_server srv;
};
static struct world W;

__attribute__((format(printf, 3, 4))) static void t_fmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && (size_t)k < n);
}

static void t_start(struct su_server *s, const char *const *extra)
{
	const char *base[] = { W.exe, "serve", "--port", "0", "--data", W.data, "--static", W.static_dir };
	char *argv[24];
	size_t n = 0, i;

	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		argv[n++] = strdup(base[i]);
	for (i = 0; extra && extra[i] && n < 23; i++)
		argv[n++] = strdup(extra[i]);
	argv[n] = NULL;
	if (su_server_start(s, argv, W.log, 30) != 0)
		fail_msg("cannot start %s (see %s)", W.exe, W.log);
	for (i = 0; i < n; i++)
		free(argv[i]);
}

static void t_req(const char *method, const char *path, const char *headers, const void *body, size_t n,
		  struct su_resp *r)
{
	struct su_req q = { method, path, headers, body, n, 0, 0 };

	if (su_request(W.srv.port, &q, r, 60000) != 0)
		fail_msg("%s %s: no well-formed reply (see %s)", method, path, W.log);
}

/* The JSON of a reply with the expected status; fails otherwise. */
static cJSON *t_call(const char *method, const char *path, const char *body, int status)
{
	struct su_resp r;
	cJSON *j;

	t_req(method, path, body ? "Content-Type: application/json\r\n" : NULL, body, body ? strlen(body) : 0, &r);
	if (r.status != status)
		fail_msg("%s %s: status %d, not %d: %.400s", method, path, r.status, status, r.body ? r.body : "");
	j = r.body_len ? cJSON_ParseWithLength(r.body, r.body_len) : cJSON_CreateObject();
	if (j == NULL)
		fail_msg("%s %s: reply is not JSON: %.200s", method, path, r.body);
	su_resp_free(&r);
	return j;
}

static cJSON *t_get(const char *path)
{
	return t_call("GET", path, NULL, 200);
}

/* A request that must fail with status and code. */
static void t_error(const char *method, const char *path, const char *body, int status, const char *code)
{
	cJSON *j = t_call(method, path, body, status), *e = cJSON_GetObjectItem(j, "error");
	const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(e, "code"));

	if (c == NULL || strcmp(c, code) != 0)
		fail_msg("%s %s: error code %s, not %s", method, path, c ? c : "(none)", code);
	assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(e, "message")));
	cJSON_Delete(j);
}

static int64_t t_int(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("'%s' is not a number", key);
	return (int64_t)v->valuedouble;
}

static const char *t_str(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));

	if (s == NULL)
		fail_msg("'%s' is not a string", key);
	return s;
}

/* ---- traces with known durations --------------------------------------------- */

/*
 * Slices named "Query" with the given durations on thread "io" (pid 1, tid
 * 2), one after the other, "Repaint" of 100 ns on thread "ui" (tid 3) once
 * per Query, and a Query of 7 ns on "ui" too.
 */
static void t_write_queries(struct fxtw *w, const int64_t *dur, size_t n)
{
	struct fxtw_arg p = fxtw_arg_koid(FXTW_INL("process"), 1);
	struct fxtw_thr io = FXTW_TIDX(1), ui = FXTW_TIDX(2);
	struct fxtw_str cat = FXTW_INL("db");
	uint64_t ts = 1000;
	size_t i;

	fxtw_init(w, 0);
	fxtw_magic(w);
	fxtw_provider_info(w, 1, "libtest");
	fxtw_init_record(w, 1000000000);
	fxtw_kernel_object(w, 1, FXTW_INL("app"), 1, NULL, 0);
	fxtw_kernel_object(w, 2, FXTW_INL("io"), 2, &p, 1);
	fxtw_kernel_object(w, 2, FXTW_INL("ui"), 3, &p, 1);
	fxtw_thread(w, 1, 1, 2);
	fxtw_thread(w, 2, 1, 3);
	for (i = 0; i < n; i++) {
		fxtw_complete(w, io, cat, FXTW_INL("Query"), ts, ts + (uint64_t)dur[i], NULL, 0);
		fxtw_complete(w, ui, cat, FXTW_INL("Repaint"), ts, ts + 100, NULL, 0);
		ts += (uint64_t)dur[i] + 10;
	}
	fxtw_complete(w, ui, cat, FXTW_INL("Query"), ts, ts + 7, NULL, 0);
}

/* Uploads bytes with a query string and waits for ingest to end (ready or
 * failed); returns the id. */
static int64_t t_upload(const char *query, const void *p, size_t n)
{
	char path[512];
	struct su_resp r;
	cJSON *j;
	int64_t id;

	t_fmt(path, sizeof(path), "/api/traces?wait=1%s%s", query[0] ? "&" : "", query);
	t_req("POST", path, "Content-Type: application/octet-stream\r\n", p, n, &r);
	if (r.status != 201 && r.status != 422) /* 422: ingest failed, the trace is listed */
		fail_msg("upload %s: status %d: %.300s", query, r.status, r.body ? r.body : "");
	j = cJSON_ParseWithLength(r.body, r.body_len);
	id = t_int(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

static int64_t t_upload_queries(const char *query, const int64_t *dur, size_t n)
{
	struct fxtw w;
	int64_t id;

	t_write_queries(&w, dur, n);
	id = t_upload(query, w.buf, w.len);
	fxtw_fini(&w);
	return id;
}

static int64_t t_total(const char *query)
{
	char path[512];
	cJSON *j;
	int64_t n;

	t_fmt(path, sizeof(path), "/api/traces?%s", query);
	j = t_get(path);
	n = t_int(j, "total");
	cJSON_Delete(j);
	return n;
}

static void t_delete_all(void)
{
	cJSON *j = t_get("/api/traces"), *t;
	char path[64];

	cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "traces")) {
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64, t_int(t, "id"));
		cJSON_Delete(t_call("DELETE", path, NULL, 204));
	}
	cJSON_Delete(j);
}

/* ---- setup -------------------------------------------------------------------- */

static int group_setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER") ? getenv("TRACE_SERVER") : "build/rel/trace-server";
	char cmd[512];

	(void)state;
	snprintf(W.root, sizeof(W.root), "/tmp/test_library.XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	snprintf(W.exe, sizeof(W.exe), "%s/trace-server", W.root);
	snprintf(W.static_dir, sizeof(W.static_dir), "%s/static", W.root);
	mkdir(W.static_dir, 0755);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", exe, W.exe);
	if (system(cmd) != 0)
		return -1;
	t_start(&W.srv, NULL);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	su_server_stop(&W.srv, SIGTERM);
	if (getenv("TS_KEEP") == NULL)
		su_rm_tree(W.root);
	return 0;
}

/* ---- labels, description, PATCH ----------------------------------------------- */

static const int64_t ONE[] = { 50 };

static void test_labels_at_upload(void **state)
{
	char body[4096], path[128];
	struct su_resp r;
	struct fxtw w;
	int64_t id;
	size_t n = 0;
	cJSON *j, *l;

	(void)state;
	t_delete_all();
	id = t_upload_queries("name=run&label=build=1234&label=device=x64&description=first%20run", ONE, 1);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	j = t_get(path);
	l = cJSON_GetObjectItem(j, "labels");
	assert_string_equal(t_str(l, "build"), "1234");
	assert_string_equal(t_str(l, "device"), "x64");
	assert_string_equal(t_str(j, "description"), "first run");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(j, "pinned")));
	/* the trace's own metadata: providers and processes */
	assert_string_equal(t_str(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "providers"), 0), "name"), "libtest");
	assert_string_equal(t_str(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "processes"), 0), "name"), "app");
	cJSON_Delete(j);

	/* multipart: label fields (repeated) and a description field */
	t_write_queries(&w, ONE, 1);
	n += (size_t)snprintf(body + n, sizeof(body) - n,
			      "--XB\r\nContent-Disposition: form-data; name=\"label\"\r\n\r\nbranch=main\r\n"
			      "--XB\r\nContent-Disposition: form-data; name=\"label\"\r\n\r\nbuild=77\r\n"
			      "--XB\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\nline one\nline two\r\n"
			      "--XB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m.fxt\"\r\n\r\n");
	assert_true(n + w.len + 64 < sizeof(body));
	memcpy(body + n, w.buf, w.len);
	n += w.len;
	n += (size_t)snprintf(body + n, sizeof(body) - n, "\r\n--XB--\r\n");
	fxtw_fini(&w);
	t_req("POST", "/api/traces?wait=1", "Content-Type: multipart/form-data; boundary=XB\r\n", body, n, &r);
	assert_int_equal(r.status, 201);
	j = cJSON_ParseWithLength(r.body, r.body_len);
	su_resp_free(&r);
	l = cJSON_GetObjectItem(j, "labels");
	assert_string_equal(t_str(l, "branch"), "main");
	assert_string_equal(t_str(l, "build"), "77");
	assert_string_equal(t_str(j, "description"), "line one\nline two");
	assert_string_equal(t_str(j, "name"), "m.fxt");
	cJSON_Delete(j);

	/* bad labels: answered 400 before anything is stored */
	assert_int_equal(t_total(""), 2);
	t_req("POST", "/api/traces?label=novalue", NULL, "x", 1, &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "bad_label"));
	su_resp_free(&r);
	t_req("POST", "/api/traces?label=bad%20key=1", NULL, "x", 1, &r);
	assert_int_equal(r.status, 400);
	su_resp_free(&r);
	t_req("POST", "/api/traces?label==1", NULL, "x", 1, &r);
	assert_int_equal(r.status, 400);
	su_resp_free(&r);
	assert_int_equal(t_total(""), 2);
}

static void test_patch(void **state)
{
	char path[128], body[8192];
	int64_t id;
	size_t n, i;
	cJSON *j, *l;

	(void)state;
	t_delete_all();
	id = t_upload_queries("name=before&label=build=1&label=keep=yes", ONE, 1);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	j = t_call("PATCH", path,
		   "{\"name\":\"after\",\"description\":\"why\",\"pinned\":true,"
		   "\"labels\":{\"build\":null,\"branch\":\"main\",\"keep\":\"still\"}}",
		   200);
	assert_string_equal(t_str(j, "name"), "after");
	assert_string_equal(t_str(j, "description"), "why");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "pinned")));
	l = cJSON_GetObjectItem(j, "labels");
	assert_null(cJSON_GetObjectItem(l, "build"));
	assert_string_equal(t_str(l, "branch"), "main");
	assert_string_equal(t_str(l, "keep"), "still");
	assert_int_equal(cJSON_GetArraySize(l), 2);
	cJSON_Delete(j);

	/* errors change nothing */
	t_error("PATCH", path, "not json", 400, "bad_json");
	t_error("PATCH", path, "[1]", 400, "bad_json");
	t_error("PATCH", path, "{\"name\":\"x\",\"size_bytes\":1}", 400, "bad_patch");
	t_error("PATCH", path, "{\"name\":\"\"}", 400, "bad_patch");
	t_error("PATCH", path, "{\"name\":\"x\",\"pinned\":1}", 400, "bad_patch");
	t_error("PATCH", path, "{\"labels\":{\"a b\":\"1\"}}", 400, "bad_patch");
	t_error("PATCH", path, "{\"labels\":{\"k\":5}}", 400, "bad_patch");
	t_error("PATCH", path, "{\"labels\":[\"k=v\"]}", 400, "bad_patch");
	n = (size_t)snprintf(body, sizeof(body), "{\"labels\":{");
	for (i = 0; i < 70; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "%s\"k%zu\":\"v\"", i ? "," : "", i);
	snprintf(body + n, sizeof(body) - n, "}}");
	t_error("PATCH", path, body, 400, "too_many_labels");
	t_error("PATCH", "/api/traces/999999", "{\"name\":\"x\"}", 404, "not_found");
	j = t_get(path);
	assert_string_equal(t_str(j, "name"), "after");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "labels")), 2);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "pinned")));
	cJSON_Delete(j);
	/* a description set to null is cleared; unpinning */
	j = t_call("PATCH", path, "{\"description\":null,\"pinned\":false}", 200);
	assert_string_equal(t_str(j, "description"), "");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(j, "pinned")));
	cJSON_Delete(j);
}

/* ---- listing ------------------------------------------------------------------ */

/* The ids of a listing, in order; follows next_cursor through every page. */
static size_t t_list_all(const char *query, int64_t *ids, size_t max, size_t *pages)
{
	char path[1024], cursor[512] = "";
	size_t n = 0;

	*pages = 0;
	for (;;) {
		cJSON *j, *t;
		const char *next;

		t_fmt(path, sizeof(path), "/api/traces?%s%s%s", query, cursor[0] ? "&cursor=" : "", cursor);
		j = t_get(path);
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "traces")) {
			assert_true(n < max);
			ids[n++] = t_int(t, "id");
		}
		(*pages)++;
		next = cJSON_GetStringValue(cJSON_GetObjectItem(j, "next_cursor"));
		if (next == NULL) {
			cJSON_Delete(j);
			return n;
		}
		snprintf(cursor, sizeof(cursor), "%s", next);
		cJSON_Delete(j);
	}
}

static void test_list_filters(void **state)
{
	static const int64_t d2[] = { 50, 60 }, d3[] = { 50, 60, 70 };
	int64_t a, b, c, d, ids[16];
	size_t n, pages;
	char path[128];

	(void)state;
	t_delete_all();
	a = t_upload_queries("name=nightly-arm&label=build=10&label=device=arm", ONE, 1);
	b = t_upload_queries("name=Nightly-x64&label=build=11&label=device=x64", d2, 2);
	c = t_upload_queries("name=release&label=build=12&label=device=x64&label=branch=rel", d3, 3);
	d = t_upload("name=garbage", "not a trace at all", 18); /* fails, stays listed */
	assert_true(a < b && b < c && c < d);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, b);
	cJSON_Delete(t_call("PATCH", path, "{\"pinned\":true}", 200));

	assert_int_equal(t_total(""), 4);
	assert_int_equal(t_total("q=NIGHTLY"), 2);   /* name contains, any case */
	assert_int_equal(t_total("q=branch=rel"), 1); /* a label's key=value contains */
	assert_int_equal(t_total("label=device=x64"), 2);
	assert_int_equal(t_total("label=device=x64&label=build=11"), 1);
	assert_int_equal(t_total("label=branch"), 1); /* the key alone: present */
	assert_int_equal(t_total("label=device=x6"), 0); /* equals, not contains */
	assert_int_equal(t_total("format=fxt"), 3);
	assert_int_equal(t_total("status=failed"), 1);
	assert_int_equal(t_total("status=ready"), 3);
	assert_int_equal(t_total("pinned=true"), 1);
	assert_int_equal(t_total("pinned=false"), 3);
	assert_int_equal(t_total("uploaded_after=2000-01-01"), 4);
	assert_int_equal(t_total("uploaded_before=2000-01-01"), 0);
	assert_int_equal(t_total("uploaded_after=2999-01-01T00:00:00Z"), 0);
	assert_int_equal(t_total("min_size=19"), 3);
	assert_int_equal(t_total("max_size=18"), 1);

	/* sorts, and every page of two in order without a repeat */
	n = t_list_all("limit=2", ids, 16, &pages);
	assert_int_equal(n, 4);
	assert_int_equal(pages, 2);
	assert_true(ids[0] == d && ids[1] == c && ids[2] == b && ids[3] == a); /* newest first */
	n = t_list_all("limit=1&sort=created", ids, 16, &pages);
	assert_int_equal(n, 4);
	assert_true(ids[0] == a && ids[3] == d);
	n = t_list_all("limit=3&sort=name", ids, 16, &pages);
	assert_int_equal(n, 4);
	assert_true(ids[0] == b && ids[1] == d && ids[2] == a && ids[3] == c); /* byte order: N < g < n < r */
	n = t_list_all("limit=2&sort=-size&status=ready", ids, 16, &pages);
	assert_int_equal(n, 3);
	assert_true(ids[0] == c && ids[1] == b && ids[2] == a);
	n = t_list_all("limit=1&sort=duration&status=ready", ids, 16, &pages);
	assert_true(n == 3 && ids[0] == a && ids[2] == c);

	/* bad filters: 400 with a sentence */
	t_error("GET", "/api/traces?sort=age", NULL, 400, "bad_parameter");
	t_error("GET", "/api/traces?status=done", NULL, 400, "bad_parameter");
	t_error("GET", "/api/traces?format=json", NULL, 400, "bad_parameter");
	t_error("GET", "/api/traces?pinned=yes", NULL, 400, "bad_parameter");
	t_error("GET", "/api/traces?uploaded_after=yesterday", NULL, 400, "bad_parameter");
	t_error("GET", "/api/traces?limit=0", NULL, 400, "bad_parameter");
	t_error("GET", "/api/traces?min_size=-1", NULL, 400, "bad_parameter");
	t_error("GET", "/api/traces?label=a%20b", NULL, 400, "bad_label");
	t_error("GET", "/api/traces?cursor=zz", NULL, 400, "bad_cursor");
	t_error("GET", "/api/traces?cursor=6e616d652e312e78", NULL, 400, "bad_cursor"); /* a name cursor */
	/* a cursor of sort=name is not one of sort=-name: the direction is the sort's */
	{
		cJSON *j = t_get("/api/traces?sort=name&limit=1");
		const char *next = cJSON_GetStringValue(cJSON_GetObjectItem(j, "next_cursor"));

		assert_non_null(next);
		t_fmt(path, sizeof(path), "/api/traces?sort=-name&limit=1&cursor=%s", next);
		t_error("GET", path, NULL, 400, "bad_cursor");
		t_fmt(path, sizeof(path), "/api/traces?sort=name&limit=1&cursor=%s", next);
		cJSON_Delete(t_get(path));
		cJSON_Delete(j);
	}
}

/* ---- search ------------------------------------------------------------------- */

static void test_search_across(void **state)
{
	static const int64_t da[] = { 100, 200, 300, 400, 1000 }, db[] = { 5000, 6000 };
	int64_t a, b, c;
	char path[128];
	cJSON *j, *t;

	(void)state;
	t_delete_all();
	a = t_upload_queries("name=A", da, 5);
	b = t_upload_queries("name=B", db, 2);
	c = t_upload("name=bad", "garbage!", 8);
	(void)c;
	j = t_get("/api/search?q=quer");
	assert_string_equal(t_str(j, "query"), "quer");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "traces")), 2);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0); /* newest first */
	assert_int_equal(t_int(t, "id"), b);
	assert_int_equal(t_int(t, "count"), 3);
	assert_int_equal(t_int(t, "total_ns"), 5000 + 6000 + 7);
	assert_int_equal(t_int(t, "max_ns"), 6000);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 1);
	assert_int_equal(t_int(t, "id"), a);
	assert_int_equal(t_int(t, "count"), 6);
	assert_int_equal(t_int(t, "total_ns"), 2007);
	assert_int_equal(t_int(t, "max_ns"), 1000);
	/* durations 7 100 200 300 400 1000: nearest-rank p50 = 200, p95 = 1000,
	 * each within the sketch's 1/64 */
	assert_true(llabs(t_int(t, "p50_ns") - 200) <= 200 / 64 + 1);
	assert_true(llabs(t_int(t, "p95_ns") - 1000) <= 1000 / 64 + 1);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "names"), 0)->valuestring, "Query");
	cJSON_Delete(j);
	j = t_get("/api/search?q=REPAINT&limit=1");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "traces")), 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")));
	cJSON_Delete(j);
	j = t_get("/api/search?q=no-such-name");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "traces")), 0);
	cJSON_Delete(j);
	t_error("GET", "/api/search", NULL, 400, "missing_parameter");
	t_error("GET", "/api/search?q=x&limit=0", NULL, 400, "bad_parameter");
	/* a deleted trace leaves the index */
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, b);
	cJSON_Delete(t_call("DELETE", path, NULL, 204));
	j = t_get("/api/search?q=query");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "traces")), 1);
	cJSON_Delete(j);
}

/* A name whose every slice never ended has an empty duration sketch: the
 * trace is still indexed (it was left out whole, and counted in
 * "unindexed" for ever), with count 1, ended 0. */
static void test_search_across_unterminated(void **state)
{
	struct fxtw w;
	int64_t id;
	cJSON *j, *t;

	(void)state;
	t_delete_all();
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "libtest");
	fxtw_complete(&w, FXTW_TINL(1, 2), FXTW_INL("db"), FXTW_INL("Query"), 100, 200, NULL, 0);
	fxtw_begin(&w, FXTW_TINL(1, 2), FXTW_INL("db"), FXTW_INL("Pending"), 300, NULL, 0);
	id = t_upload("name=open", w.buf, w.len);
	fxtw_fini(&w);
	j = t_get("/api/search?q=pend");
	assert_int_equal(t_int(j, "unindexed"), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "traces")), 1);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0);
	assert_int_equal(t_int(t, "id"), id);
	assert_int_equal(t_int(t, "count"), 1);
	assert_int_equal(t_int(t, "ended"), 0);
	assert_int_equal(t_int(t, "total_ns"), 0);
	cJSON_Delete(j);
	j = t_get("/api/search?q=query");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "traces")), 1);
	assert_int_equal(t_int(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0), "max_ns"), 100);
	cJSON_Delete(j);
}

/* Buckets are floor((ts - S) * N / (E - S + 1)) exactly (docs/API.md,
 * overview and the search histogram): with S = 0, N = 3, E = 3 * 2^58 - 1,
 * ts 2^58 - 1 is the last of bucket 0 and 2^58 the first of bucket 1;
 * doubles rounded 2^58 - 1 up into bucket 1. */
static void test_buckets_exact(void **state)
{
	struct fxtw w;
	int64_t id, e = 3 * (INT64_C(1) << 58) - 1;
	char path[256];
	cJSON *j, *h;

	(void)state;
	t_delete_all();
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "libtest");
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("edge"), (UINT64_C(1) << 58) - 1, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("edge"), UINT64_C(1) << 58, NULL, 0);
	id = t_upload("name=edges", w.buf, w.len);
	fxtw_fini(&w);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=edge&buckets=3&start=0&end=%" PRId64, id, e);
	j = t_get(path);
	h = cJSON_GetObjectItem(j, "histogram");
	assert_int_equal(cJSON_GetArraySize(h), 3);
	assert_int_equal(cJSON_GetArrayItem(h, 0)->valuedouble, 1);
	assert_int_equal(cJSON_GetArrayItem(h, 1)->valuedouble, 1);
	assert_int_equal(cJSON_GetArrayItem(h, 2)->valuedouble, 0);
	cJSON_Delete(j);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/overview?buckets=3&start=0&end=%" PRId64, id, e);
	j = t_get(path);
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "processes"), 0), "counts");
	assert_int_equal(cJSON_GetArraySize(h), 3);
	assert_int_equal(cJSON_GetArrayItem(h, 0)->valuedouble, 1);
	assert_int_equal(cJSON_GetArrayItem(h, 1)->valuedouble, 1);
	assert_int_equal(cJSON_GetArrayItem(h, 2)->valuedouble, 0);
	cJSON_Delete(j);
	/* bounds given are used as given, the extremes included: over
	 * [INT64_MIN, INT64_MAX] both starts fall in the upper half (taken
	 * for the trace's own bounds, they would split 1 and 1) */
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/overview?buckets=2&start=%" PRId64 "&end=%" PRId64, id,
	      INT64_MIN, INT64_MAX);
	j = t_get(path);
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "processes"), 0), "counts");
	assert_int_equal(cJSON_GetArraySize(h), 2);
	assert_int_equal(cJSON_GetArrayItem(h, 0)->valuedouble, 0);
	assert_int_equal(cJSON_GetArrayItem(h, 1)->valuedouble, 2);
	cJSON_Delete(j);
	/* not given, they are the first and last slice starts */
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/overview?buckets=2", id);
	j = t_get(path);
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "processes"), 0), "counts");
	assert_int_equal(cJSON_GetArrayItem(h, 0)->valuedouble, 1);
	assert_int_equal(cJSON_GetArrayItem(h, 1)->valuedouble, 1);
	cJSON_Delete(j);
}

/* The trace object's "processes" are the first 64 by pid, pids being
 * unsigned 64-bit: 2^63 + 5 comes after 1, not before it. */
static void test_processes_by_unsigned_pid(void **state)
{
	struct fxtw w;
	int64_t id;
	char path[64];
	cJSON *j, *p;

	(void)state;
	t_delete_all();
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "libtest");
	fxtw_instant(&w, FXTW_TINL((UINT64_C(1) << 63) + 5, 2), FXTW_INL("c"), FXTW_INL("hi"), 10, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(1, 3), FXTW_INL("c"), FXTW_INL("lo"), 20, NULL, 0);
	id = t_upload("name=pids", w.buf, w.len);
	fxtw_fini(&w);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	j = t_get(path);
	p = cJSON_GetObjectItem(j, "processes");
	assert_int_equal(cJSON_GetArraySize(p), 2);
	assert_int_equal(t_int(cJSON_GetArrayItem(p, 0), "pid"), 1);
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(p, 1), "pid")->valuedouble > 9.2e18);
	cJSON_Delete(j);
}

/* The slice ids a SQL statement's first column gives, in order. */
static size_t t_sql_ids(int64_t trace, const char *sql, int64_t *out, size_t max)
{
	char path[128];
	struct su_resp r;
	cJSON *j, *row;
	size_t n = 0;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/query", trace);
	t_req("POST", path, NULL, sql, strlen(sql), &r);
	assert_int_equal(r.status, 200);
	j = cJSON_ParseWithLength(r.body, r.body_len);
	su_resp_free(&r);
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(j, "rows")) {
		assert_true(n < max);
		out[n++] = (int64_t)cJSON_GetArrayItem(row, 0)->valuedouble;
	}
	cJSON_Delete(j);
	return n;
}

/* One search page: its slice ids appended to out (n so far, at most max),
 * its total and index checked against the oracle (want, nwant); returns
 * the JSON (freed by the caller). */
static cJSON *t_search_page(const char *path, const int64_t *want, size_t nwant, int64_t *out, size_t *n, size_t max)
{
	cJSON *j = t_get(path), *row;
	int64_t index = t_int(j, "index");
	const char *next = cJSON_GetStringValue(cJSON_GetObjectItem(j, "next_cursor"));
	const char *prev = cJSON_GetStringValue(cJSON_GetObjectItem(j, "prev_cursor"));
	int k = cJSON_GetArraySize(cJSON_GetObjectItem(j, "slices")), i = 0;

	assert_int_equal(t_int(j, "total"), nwant);
	assert_true(index >= 0 && (size_t)index + (size_t)k <= nwant);
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(j, "slices")) {
		assert_true(*n < max);
		assert_int_equal(t_int(row, "id"), want[index + i++]);
		out[(*n)++] = t_int(row, "id");
	}
	/* truncated and next_cursor: matches follow; prev_cursor: matches precede */
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")) == (next != NULL));
	assert_true((next != NULL) == (k > 0 && (size_t)index + (size_t)k < nwant));
	assert_true((prev != NULL) == (k > 0 && index > 0));
	return j;
}

/* Every page of /search?q= inside a trace, limit slices a page, following
 * next_cursor from the first page (or prev_cursor back from before=, the
 * end of time, when backward); each page says where it lies among the
 * nwant matches of the oracle. */
static size_t t_search_walk(int64_t trace, const char *q, int limit, int backward, const int64_t *want, size_t nwant,
			    int64_t *out, size_t max)
{
	char path[256], cursor[64] = "";
	size_t n = 0, i;

	if (backward)
		snprintf(cursor, sizeof(cursor), "%" PRId64 ":%" PRId64, INT64_MAX, INT64_MAX);
	for (;;) {
		const char *c;
		size_t before = n;
		cJSON *j;

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=%s&limit=%d%s%s", trace, q, limit,
		      cursor[0] ? (backward ? "&before=" : "&cursor=") : "", cursor);
		j = t_search_page(path, want, nwant, out, &n, max);
		for (i = 0; backward && i < (n - before) / 2; i++) { /* pages come in (ts, id) order */
			int64_t t = out[before + i];

			out[before + i] = out[n - 1 - i];
			out[n - 1 - i] = t;
		}
		c = cJSON_GetStringValue(cJSON_GetObjectItem(j, backward ? "prev_cursor" : "next_cursor"));
		if (c == NULL) {
			cJSON_Delete(j);
			break;
		}
		snprintf(cursor, sizeof(cursor), "%s", c);
		cJSON_Delete(j);
	}
	for (i = 0; backward && i < n / 2; i++) { /* latest first: back to (ts, id) order */
		int64_t t = out[i];

		out[i] = out[n - 1 - i];
		out[n - 1 - i] = t;
	}
	return n;
}

static size_t t_search_pages(int64_t trace, const char *q, int limit, int64_t *out, size_t max)
{
	int64_t *want = malloc(max * sizeof(*want));
	size_t n, nwant;
	char sql[512];

	assert_non_null(want);
	t_fmt(sql, sizeof(sql),
	      "SELECT s.id FROM slices s JOIN strings n ON n.id = s.name_id "
	      "WHERE instr(lower(n.str), lower('%s')) > 0 ORDER BY s.ts, s.id",
	      q);
	nwant = t_sql_ids(trace, sql, want, max);
	n = t_search_walk(trace, q, limit, 0, want, nwant, out, max);
	free(want);
	return n;
}

/*
 * Everything a search inside a trace answers, against SQL: walking forward
 * with next_cursor, and back from the end with prev_cursor, gives every
 * match; from=TS starts at
 * the first match at or after TS with its index; the histogram counts the
 * matches of each bucket (floor((ts - start) * N / (end - start + 1))).
 */
static void t_search_check(int64_t trace, const char *q, int limit)
{
	enum { MAX = 5000, B = 7 };
	int64_t *want = malloc(MAX * sizeof(*want)), *ts = malloc(MAX * sizeof(*ts)), *got = malloc(MAX * sizeof(*got));
	int64_t hist[B] = { 0 }, lo, hi;
	size_t nwant, n, i, k;
	char sql[512], path[256];
	const cJSON *x;
	cJSON *j;

	assert_true(want && ts && got);
	for (k = 0; k < 2; k++) {
		t_fmt(sql, sizeof(sql),
		      "SELECT s.%s FROM slices s JOIN strings n ON n.id = s.name_id "
		      "WHERE instr(lower(n.str), lower('%s')) > 0 ORDER BY s.ts, s.id",
		      k ? "ts" : "id", q);
		nwant = t_sql_ids(trace, sql, k ? ts : want, MAX);
	}
	assert_true(nwant > 2);
	for (k = 0; k < 2; k++) {
		n = t_search_walk(trace, q, limit, (int)k, want, nwant, got, MAX);
		assert_int_equal(n, nwant);
		for (i = 0; i < nwant; i++)
			assert_int_equal(got[i], want[i]);
	}
	/* from=TS: at the first ts, between two, past the last */
	for (k = 0; k < 5; k++) {
		int64_t at = k == 0 ? ts[0] - 1 : k == 1 ? ts[nwant / 2] : k == 2 ? ts[nwant / 3] + 1 : k == 3 ? ts[nwant - 1]
												      : ts[nwant - 1] + 1;
		size_t first = 0, m = 0;

		while (first < nwant && ts[first] < at)
			first++;
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=%s&limit=%d&from=%" PRId64, trace, q, limit, at);
		j = t_search_page(path, want, nwant, got, &m, MAX);
		assert_int_equal(t_int(j, "index"), first);
		assert_int_equal(m, nwant - first < (size_t)limit ? nwant - first : (size_t)limit);
		cJSON_Delete(j);
	}
	/* the histogram over a window that cuts the matches at both ends */
	lo = ts[1];
	hi = ts[nwant - 2] - 1;
	for (i = 0; i < nwant; i++) {
		if (ts[i] >= lo && ts[i] <= hi) {
			int64_t b = (int64_t)(((double)ts[i] - (double)lo) * B / ((double)hi - (double)lo + 1));

			hist[b >= B ? B - 1 : b]++;
		}
	}
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=%s&limit=1&buckets=%d&start=%" PRId64 "&end=%" PRId64,
	      trace, q, B, lo, hi);
	j = t_get(path);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "histogram")), B);
	k = 0;
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(j, "histogram"))
		assert_int_equal((int64_t)x->valuedouble, hist[k++]);
	cJSON_Delete(j);
	free(want);
	free(ts);
	free(got);
}

/* Every page of /search inside a trace, against SQL ordering every match. */
static void test_search_in_trace(void **state)
{
	int64_t dur[300], id, got[700], want[700];
	size_t ngot, nwant, i;
	char path[256];

	(void)state;
	for (i = 0; i < 300; i++)
		dur[i] = 50 + (int64_t)(i % 7) * 30;
	id = t_upload_queries("name=paged", dur, 300);
	nwant = t_sql_ids(id,
			  "SELECT s.id FROM slices s JOIN strings n ON n.id = s.name_id "
			  "WHERE instr(lower(n.str), 'e') > 0 ORDER BY s.ts, s.id",
			  want, 700);
	assert_int_equal(nwant, 601); /* Query and Repaint both hold an 'e' */
	ngot = t_search_pages(id, "E", 64, got, 700);
	assert_int_equal(ngot, nwant);
	for (i = 0; i < nwant; i++)
		assert_int_equal(got[i], want[i]);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=E&cursor=12", id);
	t_error("GET", path, NULL, 400, "bad_parameter");
	t_search_check(id, "E", 64);
	t_search_check(id, "repaint", 7);
	{
		static const char *const bad[][2] = {
			{ "before=12", "bad_parameter" },
			{ "before=1:2&cursor=1:2", "bad_parameter" },
			{ "from=5&cursor=1:2", "bad_parameter" },
			{ "from=5&before=1:2", "bad_parameter" },
			{ "from=x", "bad_parameter" },
			{ "buckets=4", "missing_parameter" },
			{ "buckets=4&start=1", "missing_parameter" },
			{ "buckets=4&start=10&end=9", "bad_parameter" },
			{ "buckets=0&start=1&end=2", "bad_parameter" },
			{ "buckets=4097&start=1&end=2", "bad_parameter" },
		};
		size_t e;

		for (e = 0; e < sizeof(bad) / sizeof(bad[0]); e++) {
			t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=E&%s", id, bad[e][0]);
			t_error("GET", path, NULL, 400, bad[e][1]);
		}
	}
}

/* Names of thousands of slices, so of many name index chunks (256 each):
 * the histogram counts most chunks whole, one bucket each, and decodes
 * those across a bucket's edge or the window's; every bucket must still
 * hold what SQL counts. */
static void test_search_histogram_chunks(void **state)
{
	enum { N = 2400 };
	int64_t *dur = malloc(N * sizeof(*dur)), id;
	size_t i;

	(void)state;
	assert_non_null(dur);
	for (i = 0; i < N; i++)
		dur[i] = 40 + (int64_t)(i % 11) * 20;
	id = t_upload_queries("name=chunks", dur, N);
	t_search_check(id, "E", 700);
	t_search_check(id, "repaint", 300);
	free(dur);
}

/* More names match than the name index is merged for (4096): the same
 * answers from the statements over slices. */
static void test_search_many_names(void **state)
{
	struct fxtw w;
	char name[32];
	int64_t id;
	int i;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "many");
	fxtw_init_record(&w, 1000000000);
	fxtw_thread(&w, 1, 1, 2);
	fxtw_thread(&w, 2, 1, 3);
	for (i = 0; i < 4200; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		fxtw_instant(&w, FXTW_TIDX(1 + (i % 2)), FXTW_INL("c"), FXTW_INL(name), 1000 + (i / 3), NULL, 0);
	}
	id = t_upload("name=many", w.buf, w.len);
	fxtw_fini(&w);
	t_search_check(id, "n", 500);
	t_search_check(id, "n41", 9);
}

/* Ties: 700 slices of one name at the same ts (on two threads, so ids
 * interleave with another name's), paged 50 at a time: the (ts, id) order
 * of SQL, across the index's chunk boundaries. */
static void test_search_ties(void **state)
{
	struct fxtw_arg p = fxtw_arg_koid(FXTW_INL("process"), 1);
	int64_t id, got[800], want[800];
	size_t ngot, nwant, i;
	struct fxtw w;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "ties");
	fxtw_init_record(&w, 1000000000);
	fxtw_kernel_object(&w, 2, FXTW_INL("t1"), 2, &p, 1);
	fxtw_kernel_object(&w, 2, FXTW_INL("t2"), 3, &p, 1);
	fxtw_thread(&w, 1, 1, 2);
	fxtw_thread(&w, 2, 1, 3);
	for (i = 0; i < 700; i++)
		fxtw_instant(&w, FXTW_TIDX(1 + (i % 2)), FXTW_INL("c"), FXTW_INL(i % 3 ? "Tie" : "Other"), 1000 + (i / 350),
			     NULL, 0);
	id = t_upload("name=ties", w.buf, w.len);
	fxtw_fini(&w);
	nwant = t_sql_ids(id,
			  "SELECT s.id FROM slices s JOIN strings n ON n.id = s.name_id "
			  "WHERE n.str = 'Tie' ORDER BY s.ts, s.id",
			  want, 800);
	assert_true(nwant > 400);
	ngot = t_search_pages(id, "tie", 50, got, 800);
	assert_int_equal(ngot, nwant);
	for (i = 0; i < nwant; i++)
		assert_int_equal(got[i], want[i]);
	t_search_check(id, "tie", 50);
}

/* ---- compare ------------------------------------------------------------------ */

static const cJSON *t_row(const cJSON *j, const char *name, const char *thread)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(j, "rows")) {
		if (strcmp(t_str(row, "name"), name) == 0 &&
		    (thread == NULL || strcmp(t_str(row, "thread"), thread) == 0))
			return row;
	}
	fail_msg("no row %s/%s", thread ? thread : "", name);
	return NULL;
}

static void test_compare(void **state)
{
	/* a: 20 Queries of 100..2000; b: the same plus 20 slower ones */
	int64_t da[20], db[40], a, b, bad;
	const cJSON *row, *x;
	char path[256];
	cJSON *j;
	int i;

	(void)state;
	t_delete_all();
	for (i = 0; i < 20; i++)
		da[i] = db[i] = 100 * (i + 1);
	for (i = 20; i < 40; i++)
		db[i] = 10000 + i;
	a = t_upload_queries("name=base", da, 20);
	b = t_upload_queries("name=new", db, 40);
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=%" PRId64, a, b);
	j = t_get(path);
	row = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0); /* the largest regression first */
	assert_string_equal(t_str(row, "name"), "Query");
	x = cJSON_GetObjectItem(row, "a");
	assert_int_equal(t_int(x, "count"), 21);
	assert_int_equal(t_int(x, "total"), 21000 + 7);
	/* 7, 100 .. 2000: rank ceil(0.5 * 21) = 11 -> 1000; ceil(0.95 * 21) = 20 -> 1900 */
	assert_int_equal(t_int(x, "p50"), 1000);
	assert_int_equal(t_int(x, "p95"), 1900);
	assert_int_equal(t_int(x, "max"), 2000);
	assert_int_equal(t_int(cJSON_GetObjectItem(x, "slowest"), "dur"), 2000);
	x = cJSON_GetObjectItem(row, "b");
	assert_int_equal(t_int(x, "count"), 41);
	assert_int_equal(t_int(x, "max"), 10039);
	assert_int_equal(t_int(cJSON_GetObjectItem(row, "delta"), "count"), 20);
	assert_int_equal(t_int(cJSON_GetObjectItem(row, "delta"), "max"), 10039 - 2000);
	row = t_row(j, "Repaint", NULL);
	assert_int_equal(t_int(cJSON_GetObjectItem(row, "delta"), "total"), 2000);
	cJSON_Delete(j);

	/* per thread: the 7 ns Query on "ui" is its own row */
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=%" PRId64 "&by=thread&sort=count", a, b);
	j = t_get(path);
	row = t_row(j, "Query", "ui");
	assert_int_equal(t_int(cJSON_GetObjectItem(row, "a"), "count"), 1);
	assert_int_equal(t_int(cJSON_GetObjectItem(row, "delta"), "count"), 0);
	row = t_row(j, "Query", "io");
	assert_int_equal(t_int(cJSON_GetObjectItem(row, "a"), "count"), 20);
	cJSON_Delete(j);

	/* a window on one side: only a's first Query */
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=%" PRId64 "&a_end=1000", a, b);
	j = t_get(path);
	assert_int_equal(t_int(cJSON_GetObjectItem(t_row(j, "Query", NULL), "a"), "count"), 1);
	cJSON_Delete(j);

	/* errors */
	bad = t_upload("name=bad", "garbage!", 8);
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=%" PRId64, a, bad);
	t_error("GET", path, NULL, 409, "not_ready");
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=987654", a);
	t_error("GET", path, NULL, 404, "not_found");
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64, a);
	t_error("GET", path, NULL, 400, "missing_parameter");
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=%" PRId64 "&by=process", a, b);
	t_error("GET", path, NULL, 400, "bad_parameter");
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=%" PRId64 "&sort=speed", a, b);
	t_error("GET", path, NULL, 400, "bad_parameter");
	t_fmt(path, sizeof(path), "/api/compare?a=%" PRId64 "&b=%" PRId64 "&a_start=5&a_end=4", a, b);
	t_error("GET", path, NULL, 400, "bad_parameter");
}

/* ---- routes ------------------------------------------------------------------- */

/* Long names: the catalog refuses a name over 1024 bytes at upload as at
 * PATCH, and pages by name hold for the longest it takes (names that share
 * a 1000-byte prefix: a cursor that cut them would never advance). */
static void test_long_names(void **state)
{
	static const int64_t dur[] = { 5 };
	char query[4200], name[1400], seen[3][8];
	const char *cursor = NULL;
	cJSON *page = NULL;
	struct fxtw w;
	int i;

	(void)state;
	t_write_queries(&w, dur, 1);
	for (i = -1; i < 3; i++) {
		static const char head[] = "Content-Type: multipart/form-data; boundary=XyZ\r\n";
		char *body = malloc(4096 + w.len);
		size_t n;
		struct su_resp r;

		assert_non_null(body);
		memset(name, 'l', 1300);
		if (i >= 0)
			t_fmt(name + 1021, 4, "%03d", i); /* 1024 bytes */
		else
			name[1300] = '\0';
		n = (size_t)snprintf(body, 4096,
				     "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n%s\r\n"
				     "--XyZ\r\nContent-Disposition: form-data; name=\"label\"\r\n\r\nlongname=%d\r\n"
				     "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.fxt\"\r\n\r\n",
				     name, i);
		memcpy(body + n, w.buf, w.len);
		n += w.len;
		n += (size_t)snprintf(body + n, 64, "\r\n--XyZ--\r\n");
		t_req("POST", "/api/traces?wait=1", head, body, n, &r);
		if (i < 0) /* over 1024 bytes: refused, nothing stored */
			assert_int_equal(r.status, 400);
		else
			assert_int_equal(r.status, 201);
		su_resp_free(&r);
		free(body);
	}
	fxtw_fini(&w);
	(void)query;
	for (i = 0; i < 4; i++) {
		char path[4200];
		cJSON *t;

		t_fmt(path, sizeof(path), "/api/traces?label=longname&sort=name&limit=1%s%s", cursor ? "&cursor=" : "",
		      cursor ? cursor : "");
		cJSON_Delete(page);
		page = t_get(path);
		t = cJSON_GetArrayItem(cJSON_GetObjectItem(page, "traces"), 0);
		if (i == 3) {
			assert_null(t);
			break;
		}
		assert_non_null(t);
		assert_int_equal(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"))), 1024);
		t_fmt(seen[i], sizeof(seen[i]), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")) + 1021);
		if (i > 0)
			assert_true(strcmp(seen[i - 1], seen[i]) < 0); /* each page the next one */
		cursor = cJSON_GetStringValue(cJSON_GetObjectItem(page, "next_cursor"));
		if (i < 2)
			assert_non_null(cursor);
		else if (cursor == NULL)
			break; /* the last page says so */
	}
	cJSON_Delete(page);
}

static void test_routes(void **state)
{
	(void)state;
	t_error("PUT", "/api/traces", NULL, 405, "method_not_allowed");
	t_error("POST", "/api/search?q=x", NULL, 405, "method_not_allowed");
	t_error("DELETE", "/api/traces/1/slices", NULL, 405, "method_not_allowed");
	t_error("GET", "/api/traces/abc", NULL, 404, "not_found");
	t_error("GET", "/api/traces/1/nosuch", NULL, 404, "not_found");
	t_error("GET", "/api/nosuch", NULL, 404, "not_found");
}

/* ---- retention ---------------------------------------------------------------- */

static void test_retention(void **state)
{
	static const int64_t d[] = { 10, 20, 30 };
	char bound[32], path[128];
	const char *extra[] = { "--retain-bytes", bound, NULL };
	int64_t a, b, c, stored = 0;
	cJSON *j, *t;

	(void)state;
	t_delete_all();
	a = t_upload_queries("name=a", d, 3);
	b = t_upload_queries("name=b", d, 3);
	c = t_upload_queries("name=c", d, 3);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, a);
	cJSON_Delete(t_call("PATCH", path, "{\"pinned\":true}", 200));
	j = t_get("/api/library");
	stored = t_int(j, "stored_bytes");
	assert_true(stored > 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "retain_bytes")));
	cJSON_Delete(j);
	/* room for a little more than two of the three: the oldest unpinned (b) goes */
	su_server_stop(&W.srv, SIGTERM);
	t_fmt(bound, sizeof(bound), "%" PRId64, stored * 3 / 4);
	t_start(&W.srv, extra);
	for (int tries = 0; tries < 100 && t_total("") != 2; tries++)
		su_sleep_ms(50);
	j = t_get("/api/traces");
	assert_int_equal(t_int(j, "total"), 2);
	assert_int_equal(t_int(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0), "id"), c);
	assert_int_equal(t_int(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 1), "id"), a);
	cJSON_Delete(j);
	(void)b;
	j = t_get("/api/library");
	assert_int_equal(t_int(j, "retain_bytes"), stored * 3 / 4);
	assert_true(t_int(j, "stored_bytes") <= stored * 3 / 4);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "next_removals"), 0);
	assert_int_equal(t_int(t, "id"), c); /* the pinned one never */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "next_removals")), 1);
	cJSON_Delete(j);
	su_server_stop(&W.srv, SIGTERM);
	t_start(&W.srv, NULL);
}

/* A catalog from before the name index (or one whose index was lost):
 * after a restart the worker indexes the ready traces in the background,
 * and search finds them; until then "unindexed" says how many wait. */
static void test_index_built_after_upgrade(void **state)
{
	static const int64_t d[] = { 300, 100, 200 };
	char path[256];
	sqlite3 *db = NULL;
	int64_t id;
	cJSON *j;
	int tries;

	(void)state;
	t_delete_all();
	id = t_upload_queries("name=old", d, 3);
	su_server_stop(&W.srv, SIGTERM);
	t_fmt(path, sizeof(path), "%s/catalog.db", W.data);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE traces SET indexed = 0; DELETE FROM name_stats;", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	t_start(&W.srv, NULL);
	for (tries = 0; tries < 200; tries++) {
		j = t_get("/api/search?q=query");
		if (t_int(j, "unindexed") == 0 && cJSON_GetArraySize(cJSON_GetObjectItem(j, "traces")) == 1)
			break;
		cJSON_Delete(j);
		j = NULL;
		su_sleep_ms(50);
	}
	assert_non_null(j);
	assert_int_equal(t_int(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0), "id"), id);
	assert_int_equal(t_int(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0), "count"), 4);
	assert_int_equal(t_int(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0), "max_ns"), 300);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_labels_at_upload),
		cmocka_unit_test(test_patch),
		cmocka_unit_test(test_list_filters),
		cmocka_unit_test(test_search_across),
		cmocka_unit_test(test_search_across_unterminated),
		cmocka_unit_test(test_search_in_trace),
		cmocka_unit_test(test_search_histogram_chunks),
		cmocka_unit_test(test_buckets_exact),
		cmocka_unit_test(test_processes_by_unsigned_pid),
		cmocka_unit_test(test_search_ties),
		cmocka_unit_test(test_search_many_names),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_index_built_after_upgrade),
		cmocka_unit_test(test_long_names),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
