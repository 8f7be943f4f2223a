/*
 * Notes on traces over loopback (docs/API.md "Notes"): the real server
 * binary (env TRACE_SERVER) on a free port with a temporary --data, a trace
 * written here whose times pass 2^62 ns, so that every range is checked to
 * the nanosecond beyond what a double holds.
 *
 * Each kind of note (whole trace, range, range on a track, slice), the
 * order of a trace's list and of the library's (newest first, paged),
 * edits, removal, the library's count and q, every bad input (a clear 4xx,
 * nothing changed), a note on a trace that is not ready (409), notes kept
 * across a restart and gone with their trace. Notes in a PostgreSQL
 * catalog shared by two servers: test_catalog_pg.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>

#include "../fxt_writer.h"
#include "api_util.h"

#define BASE (((int64_t)1 << 62) + 123456789) /* beyond 2^53: exact only as 64-bit integers */

static struct {
	char root[64], data[128], log[128];
	const char *exe;
	struct su_server srv;
	int64_t trace, failed, slice, track;
} W;

static int64_t t_upload(const char *name, const void *p, size_t n, int want)
{
	char path[256];
	struct su_req q = { "POST", path, "Content-Type: application/octet-stream\r\n", p, n, 0, 0 };
	struct su_resp r;
	cJSON *j;
	int64_t id;

	t_fmt(path, sizeof(path), "/api/traces?wait=1&name=%s", name);
	assert_int_equal(su_request(api_port, &q, &r, 60000), 0);
	if (r.status != want)
		fail_msg("upload %s: status %d: %.300s", name, r.status, r.body ? r.body : "");
	j = cJSON_ParseWithLength(r.body, r.body_len);
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

static int count(const char *path, const char *member)
{
	cJSON *j = t_get(path);
	int n = cJSON_GetArraySize(cJSON_GetObjectItem(j, member));

	cJSON_Delete(j);
	return n;
}

static void test_kinds(void **state)
{
	char path[128], body[512], *raw, want[160];
	cJSON *l, *n;

	(void)state;
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", W.trace);
	/* the whole trace; text kept as given, HTML and all */
	raw = t_body("POST", path, "{\"text\":\"<img src=x onerror=alert(1)> see https://bugs/1234\",\"author\":\"ana\"}",
		    201);
	assert_non_null(strstr(raw, "\"kind\":\"trace\",\"start_ns\":null,\"end_ns\":null,\"track_id\":null"));
	assert_non_null(strstr(raw, "\"text\":\"<img src=x onerror=alert(1)> see https://bugs/1234\""));
	free(raw);
	/* a range, to the nanosecond past 2^53, on a track */
	t_fmt(body, sizeof(body),
	      "{\"text\":\"the stall\",\"author\":\"bo\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64
	      ",\"track_id\":%" PRId64 "}",
	      BASE + 101, BASE + 303, W.track);
	raw = t_body("POST", path, body, 201);
	t_fmt(want, sizeof(want), "\"kind\":\"range\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"track_id\":%" PRId64,
	      BASE + 101, BASE + 303, W.track);
	if (strstr(raw, want) == NULL)
		fail_msg("%s lacks %s", raw, want);
	free(raw);
	/* a range of one instant, at the trace's very start */
	t_fmt(body, sizeof(body), "{\"text\":\"start\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", BASE, BASE);
	cJSON_Delete(t_call("POST", path, body, 201));
	/* a slice: its range and track come from the trace */
	t_fmt(body, sizeof(body), "{\"text\":\"this call\",\"slice_id\":%" PRId64 "}", W.slice);
	raw = t_body("POST", path, body, 201);
	t_fmt(want, sizeof(want), "\"kind\":\"slice\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64, BASE + 100,
	      BASE + 400);
	if (strstr(raw, want) == NULL || strstr(raw, "\"author\":\"\"") == NULL)
		fail_msg("%s lacks %s", raw, want);
	free(raw);
	/* the trace's list: whole-trace notes first, then by start */
	l = t_get(path);
	n = cJSON_GetObjectItem(l, "notes");
	assert_int_equal(cJSON_GetArraySize(n), 4);
	assert_string_equal(str(cJSON_GetArrayItem(n, 0), "kind"), "trace");
	assert_string_equal(str(cJSON_GetArrayItem(n, 1), "text"), "start");
	assert_string_equal(str(cJSON_GetArrayItem(n, 2), "text"), "this call");
	assert_string_equal(str(cJSON_GetArrayItem(n, 3), "text"), "the stall");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(l, "next_before")));
	cJSON_Delete(l);
}

static void test_edit_delete(void **state)
{
	char path[128], npath[128];
	cJSON *n;
	int64_t id;

	(void)state;
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", W.trace);
	n = t_call("POST", path, "{\"text\":\"first words\",\"author\":\"cy\"}", 201);
	id = num(n, "id");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(n, "edited_at")));
	cJSON_Delete(n);
	t_fmt(npath, sizeof(npath), "/api/notes/%" PRId64, id);
	n = t_call("PATCH", npath, "{\"text\":\"better words\\non two lines\"}", 200);
	assert_string_equal(str(n, "text"), "better words\non two lines");
	assert_string_equal(str(n, "author"), "cy");
	assert_non_null(str(n, "edited_at"));
	cJSON_Delete(n);
	n = t_call("PATCH", npath, "{\"author\":\"dee\"}", 200);
	assert_string_equal(str(n, "text"), "better words\non two lines");
	assert_string_equal(str(n, "author"), "dee");
	cJSON_Delete(n);
	t_error("PATCH", npath, "{}", 400, "bad_note");
	t_error("PATCH", npath, "{\"start_ns\":1}", 400, "bad_note");
	t_error("PATCH", npath, "{\"text\":\"  \\n \"}", 400, "bad_note");
	cJSON_Delete(t_call("DELETE", npath, NULL, 204));
	t_error("GET", npath, NULL, 404, "not_found");
	t_error("PATCH", npath, "{\"text\":\"x\"}", 404, "not_found");
	t_error("DELETE", npath, NULL, 404, "not_found");
	t_error("GET", "/api/notes/999999", NULL, 404, "not_found");
}

static void test_bad_input(void **state)
{
	char path[128], body[6000], big[4200];
	int before;

	(void)state;
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", W.trace);
	before = count(path, "notes");
	/* ranges outside the trace, reversed, half given */
	t_fmt(body, sizeof(body), "{\"text\":\"x\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", BASE - 1, BASE + 5);
	t_error("POST", path, body, 400, "bad_note");
	t_fmt(body, sizeof(body), "{\"text\":\"x\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", BASE + 5,
	      BASE + 100001);
	t_error("POST", path, body, 400, "bad_note");
	t_fmt(body, sizeof(body), "{\"text\":\"x\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", BASE + 9, BASE + 8);
	t_error("POST", path, body, 400, "bad_note");
	t_fmt(body, sizeof(body), "{\"text\":\"x\",\"start_ns\":%" PRId64 "}", BASE + 9);
	t_error("POST", path, body, 400, "bad_note");
	t_error("POST", path, "{\"text\":\"x\",\"start_ns\":1.5,\"end_ns\":2}", 400, "bad_note");
	t_error("POST", path, "{\"text\":\"x\",\"start_ns\":\"1\",\"end_ns\":2}", 400, "bad_note");
	/* a track or slice that is not there, a track alone, both kinds at once */
	t_fmt(body, sizeof(body), "{\"text\":\"x\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"track_id\":9999}",
	      BASE, BASE + 1);
	t_error("POST", path, body, 400, "bad_note");
	t_error("POST", path, "{\"text\":\"x\",\"slice_id\":987654}", 400, "bad_note");
	t_error("POST", path, "{\"text\":\"x\",\"slice_id\":0}", 400, "bad_note");
	t_error("POST", path, "{\"text\":\"x\",\"track_id\":1}", 400, "bad_note");
	t_fmt(body, sizeof(body), "{\"text\":\"x\",\"slice_id\":%" PRId64 ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}",
	      W.slice, BASE, BASE + 1);
	t_error("POST", path, body, 400, "bad_note");
	/* text: missing, blank, over 4096 bytes, not a string; author over 100
	 * bytes or on two lines; a member that is not a note's; not JSON */
	t_error("POST", path, "{\"author\":\"ana\"}", 400, "bad_note");
	t_error("POST", path, "{\"text\":\" \\t\\n\"}", 400, "bad_note");
	memset(big, 'a', 4097);
	big[4097] = '\0';
	t_fmt(body, sizeof(body), "{\"text\":\"%s\"}", big);
	t_error("POST", path, body, 400, "bad_note");
	big[4096] = '\0'; /* exactly the limit is taken */
	t_fmt(body, sizeof(body), "{\"text\":\"%s\"}", big);
	cJSON_Delete(t_call("POST", path, body, 201));
	before++;
	t_error("POST", path, "{\"text\":12}", 400, "bad_note");
	big[101] = '\0';
	t_fmt(body, sizeof(body), "{\"text\":\"x\",\"author\":\"%s\"}", big);
	t_error("POST", path, body, 400, "bad_note");
	t_error("POST", path, "{\"text\":\"x\",\"author\":\"a\\nb\"}", 400, "bad_note");
	t_error("POST", path, "{\"text\":\"x\",\"colour\":\"red\"}", 400, "bad_note");
	t_error("POST", path, "not json", 400, "bad_json");
	t_error("POST", path, "[1]", 400, "bad_json");
	/* no such trace; a trace that is not ready */
	t_error("POST", "/api/traces/99999/notes", "{\"text\":\"x\"}", 404, "not_found");
	t_error("GET", "/api/traces/99999/notes", NULL, 404, "not_found");
	t_fmt(body, sizeof(body), "/api/traces/%" PRId64 "/notes", W.failed);
	t_error("POST", body, "{\"text\":\"x\"}", 409, "not_ready");
	assert_int_equal(count(body, "notes"), 0);
	/* nothing changed */
	assert_int_equal(count(path, "notes"), before);
}

static void test_library(void **state)
{
	char path[160], tpath[128];
	cJSON *l, *t;
	int64_t before, other;
	int total, i;

	(void)state;
	t_fmt(tpath, sizeof(tpath), "/api/traces/%" PRId64, W.trace);
	t = t_get(tpath);
	total = (int)num(t, "notes");
	assert_true(total >= 4);
	cJSON_Delete(t);
	/* the library lists each trace's count, and q finds a note's words */
	l = t_get("/api/traces?q=ONERROR");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "traces")), 1);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "traces"), 0);
	assert_int_equal(num(t, "id"), W.trace);
	assert_int_equal(num(t, "notes"), total);
	cJSON_Delete(l);
	assert_int_equal(count("/api/traces?q=no-note-says-this", "traces"), 0);
	/* every note of the library, newest first, paged */
	for (i = 0; i < 5; i++) {
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", W.trace);
		cJSON_Delete(t_call("POST", path, "{\"text\":\"paged\",\"author\":\"pat\"}", 201));
	}
	l = t_get("/api/notes?author=pat&limit=3");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "notes")), 3);
	before = num(l, "next_before");
	other = num(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "notes"), 0), "id");
	assert_true(other > num(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "notes"), 2), "id"));
	assert_int_equal(before, num(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "notes"), 2), "id"));
	cJSON_Delete(l);
	t_fmt(path, sizeof(path), "/api/notes?author=pat&limit=3&before=%" PRId64, before);
	l = t_get(path);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "notes")), 2);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(l, "next_before")));
	cJSON_Delete(l);
	assert_int_equal(count("/api/notes?q=PAGED", "notes"), 5);
	t_fmt(path, sizeof(path), "/api/notes?trace=%" PRId64 "&q=stall", W.trace);
	assert_int_equal(count(path, "notes"), 1);
	t_error("GET", "/api/notes?limit=0", NULL, 400, "bad_parameter");
	t_error("GET", "/api/notes?limit=1001", NULL, 400, "bad_parameter");
	t_error("GET", "/api/notes?trace=99999", NULL, 404, "not_found");
}

/* Kept across a restart; gone with their trace. */
static void test_restart_and_delete(void **state)
{
	char path[128];
	int n;

	(void)state;
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", W.trace);
	n = count(path, "notes");
	assert_int_equal(su_server_stop(&W.srv, SIGTERM), 0);
	api_start(&W.srv, W.exe, W.data, W.log, NULL);
	assert_int_equal(count(path, "notes"), n);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, W.trace);
	cJSON_Delete(t_call("DELETE", path, NULL, 204));
	t_fmt(path, sizeof(path), "/api/notes?trace=%" PRId64, W.trace);
	t_error("GET", path, NULL, 404, "not_found");
	assert_int_equal(count("/api/notes?limit=1000", "notes"), 0);
}

static int setup(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 2);
	struct fxtw w;

	(void)state;
	if ((W.exe = getenv("TRACE_SERVER")) == NULL) {
		fprintf(stderr, "set TRACE_SERVER\n");
		return -1;
	}
	snprintf(W.root, sizeof(W.root), "/tmp/test_notes.XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	api_start(&W.srv, W.exe, W.data, W.log, NULL);
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "notes");
	fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL("inner"), (uint64_t)BASE + 150, (uint64_t)BASE + 160, NULL, 0);
	fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL("call"), (uint64_t)BASE + 100, (uint64_t)BASE + 400, NULL, 0);
	fxtw_instant(&w, th, FXTW_INL("c"), FXTW_INL("first"), (uint64_t)BASE, NULL, 0);
	fxtw_instant(&w, th, FXTW_INL("c"), FXTW_INL("last"), (uint64_t)BASE + 100000, NULL, 0);
	W.trace = t_upload("notes", w.buf, w.len, 201);
	fxtw_fini(&w);
	W.failed = t_upload("junk", "this is not a trace at all", 26, 422);
	{
		char q[256];
		cJSON *r, *row;

		/* the slice "call" and its track, by SQL */
		t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/query", W.trace);
		r = t_call("POST", q, "SELECT id, track_id FROM slice_view WHERE name = 'call'", 200);
		row = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "rows"), 0);
		W.slice = (int64_t)cJSON_GetArrayItem(row, 0)->valuedouble;
		W.track = (int64_t)cJSON_GetArrayItem(row, 1)->valuedouble;
		cJSON_Delete(r);
	}
	return W.slice > 0 && W.track > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (W.srv.pid && su_server_stop(&W.srv, SIGTERM) != 0) {
		fprintf(stderr, "the server did not stop cleanly (see %s)\n", W.log);
		return -1;
	}
	return su_rm_tree(W.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_edit_delete),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_library),
		cmocka_unit_test(test_restart_and_delete),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
