/*
 * Integration test of the HTTP API (docs/API.md): starts the real server
 * binary (env TRACE_SERVER, default build/rel/trace-server) on a free
 * loopback port with a temporary --data directory, and talks to it with the
 * raw-socket client of tests/server_util.h.
 *
 * Replies are checked against what was written: a small trace built record
 * by record (t_write_small: nested and complete slices, arguments of every
 * type, a flow across threads, an async operation, two counter series, logs
 * and context switches, 64-bit pids, tids and values above 2^63) gives exact
 * expected values; a generated trace (tests/gen_fxt.c, included) exercises
 * the level-of-detail replies. cJSON numbers are doubles, so 64-bit values
 * are compared on the raw body.
 *
 * The library (upload, wait, list, file, delete), errors, limits, a client
 * going away mid-upload, concurrent uploads, the token, static files and
 * path traversal, and recovery after kill -9 during an ingest are each a
 * test. The whole file runs in about 10 s (20 s under ASan).
 *
 * The binary is copied into the temporary directory first, so that a
 * rebuild during the run does not swap it. TS_FILTER=pattern runs only the
 * matching tests; TS_KEEP=1 keeps the temporary directory (every server's
 * stderr is in server.log there).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <zlib.h>
#include <sys/time.h>

#include <cjson/cJSON.h>

#include "../fxt_writer.h"
#include "../server_util.h"

/* The generator's main() is renamed so that its static helpers can be used. */
int gen_fxt_main(int argc, char **argv);
#define main gen_fxt_main
#include "../gen_fxt.c"
#undef main

/* ---- the small trace: every value known ------------------------------------- */

#define PID_A UINT64_C(100)
#define TID_A UINT64_C(101)
#define PID_B UINT64_C(17293822569102704641) /* 0xf000000000000001 */
#define TID_B UINT64_C(17293822569102704642)
#define FLOW_ID UINT64_C(9223372036854775815) /* 0x8000000000000007 */
#define BIG_U64 UINT64_C(18446744073709551614)
#define BIG_I64 INT64_C(-9000000000000000000)
#define BIG_COUNTER INT64_C(5000000000000000001) /* above 2^53 */
#define PTR_VAL UINT64_C(0xfedcba9876543210)

/*
 * Thread A (pid 100, tid 101):  Outer [1000, 9000] with every argument type
 * (plus "result" from its end), Inner [2000, 3000] inside it, instant Mark
 * at 3500, ten Tick [10000 + 1000k, +500]; async Load [1500, 7500]; log at
 * 2200; counter "mem" (series used, ratio) at 1000, 5000, 8000, 12000.
 * Thread B (pid and tid above 2^63): Work [4000, 6000] (category cat2), log
 * at 8800. A flow with id above 2^63 goes from Inner (2500) to Work (5000).
 * CPU 3: A runs [1000, 5000] (blocked), B [5000, 7000] (suspended), idle,
 * then A from 8000 to the end.
 */
static void t_write_small(struct fxtw *w)
{
	static const uint8_t blob[5] = { 1, 2, 3, 4, 5 };
	struct fxtw_arg pa = fxtw_arg_koid(FXTW_INL("process"), PID_A);
	struct fxtw_arg pb = fxtw_arg_koid(FXTW_INL("process"), PID_B);
	struct fxtw_arg args[11] = {
		fxtw_arg_i32(FXTW_INL("i32"), -5),
		fxtw_arg_u32(FXTW_INL("u32"), 4000000000u),
		fxtw_arg_i64(FXTW_INL("i64"), BIG_I64),
		fxtw_arg_u64(FXTW_INL("u64"), BIG_U64),
		fxtw_arg_double(FXTW_INL("dbl"), 1.5),
		fxtw_arg_str(FXTW_INL("str"), FXTW_INL("hello \"world\"")),
		fxtw_arg_ptr(FXTW_INL("ptr"), PTR_VAL),
		fxtw_arg_koid(FXTW_INL("koid"), TID_A),
		fxtw_arg_bool(FXTW_INL("flag"), 1),
		fxtw_arg_null(FXTW_INL("nothing")),
		fxtw_arg_blob(FXTW_INL("blob"), blob, sizeof(blob)),
	};
	struct fxtw_arg result = fxtw_arg_i32(FXTW_INL("result"), 1);
	struct fxtw_arg wa = fxtw_arg_i32(FXTW_INL("incoming_weight"), 5);
	struct fxtw_arg wb = fxtw_arg_i32(FXTW_INL("incoming_weight"), 7);
	struct fxtw_arg idle = fxtw_arg_i32(FXTW_INL("incoming_weight"), INT32_MIN);
	static const uint64_t cts[4] = { 1000, 5000, 8000, 12000 };
	static const int64_t used[4] = { 10, 20, 30, BIG_COUNTER };
	struct fxtw_thr a = FXTW_TIDX(1), b = FXTW_TIDX(2);
	struct fxtw_str cat = FXTW_INL("cat");
	int k;

	fxtw_init(w, 0);
	fxtw_magic(w);
	fxtw_provider_info(w, 1, "itest");
	fxtw_init_record(w, 1000000000);
	fxtw_kernel_object(w, 1, FXTW_INL("proc-a"), PID_A, NULL, 0);
	fxtw_kernel_object(w, 2, FXTW_INL("thread-a"), TID_A, &pa, 1);
	fxtw_kernel_object(w, 1, FXTW_INL("proc-b"), PID_B, NULL, 0);
	fxtw_kernel_object(w, 2, FXTW_INL("thread-b"), TID_B, &pb, 1);
	fxtw_thread(w, 1, PID_A, TID_A);
	fxtw_thread(w, 2, PID_B, TID_B);
	fxtw_context_switch(w, 3, 0, 1000, 0, TID_A, &wa, 1);
	fxtw_begin(w, a, cat, FXTW_INL("Outer"), 1000, args, 11);
	fxtw_async(w, 5, a, cat, FXTW_INL("Load"), 1500, 42, NULL, 0);
	fxtw_begin(w, a, cat, FXTW_INL("Inner"), 2000, NULL, 0);
	fxtw_log(w, a, 2200, "Hello LOG one");
	fxtw_flow(w, 8, a, cat, FXTW_INL("hop"), 2500, FLOW_ID);
	fxtw_end(w, a, cat, FXTW_INL("Inner"), 3000, NULL, 0);
	fxtw_instant(w, a, cat, FXTW_INL("Mark"), 3500, NULL, 0);
	fxtw_complete(w, b, FXTW_INL("cat2"), FXTW_INL("Work"), 4000, 6000, NULL, 0);
	fxtw_context_switch(w, 3, 3, 5000, TID_A, TID_B, &wb, 1);
	fxtw_flow(w, 10, b, cat, FXTW_INL("hop"), 5000, FLOW_ID);
	fxtw_context_switch(w, 3, 2, 7000, TID_B, 0, &idle, 1);
	fxtw_async(w, 7, a, cat, FXTW_INL("Load"), 7500, 42, NULL, 0);
	fxtw_context_switch(w, 3, 0, 8000, 0, TID_A, &wa, 1);
	fxtw_log(w, b, 8800, "second log");
	fxtw_end(w, a, cat, FXTW_INL("Outer"), 9000, &result, 1);
	for (k = 0; k < 10; k++)
		fxtw_complete(w, a, cat, FXTW_INL("Tick"), 10000 + 1000 * (uint64_t)k, 10500 + 1000 * (uint64_t)k,
			      NULL, 0);
	for (k = 0; k < 4; k++) {
		struct fxtw_arg v[2] = { fxtw_arg_i64(FXTW_INL("used"), used[k]),
					 fxtw_arg_double(FXTW_INL("ratio"), 0.25 * (k + 1)) };

		fxtw_counter(w, a, cat, FXTW_INL("mem"), cts[k], 1, v, 2);
	}
}

/* Writes a generated archive (tests/gen_fxt.c) into w; caller frees w. */
static void t_write_generated(struct fxtw *w, uint64_t events, uint64_t threads, uint64_t seed)
{
	struct opts o = { events, threads, seed, 1000000000, 0, 0, NULL, 0 };
	struct gen g;

	gen_init(&g, &o);
	write_preamble(&g, o.tps);
	run(&g);
	*w = g.w; /* the writer's buffer moves to the caller */
	memset(&g.w, 0, sizeof(g.w));
	gen_fini(&g);
}

/* ---- the world: servers and what was uploaded -------------------------------- */

struct world {
	char root[64];        /* temporary directory, removed at the end */
	char data[128];       /* --data of the main server */
	char static_dir[128]; /* --static of every server: root/a/b */
	char log[128];        /* every server's stderr */
	char exe[96];         /* a copy of the server binary */
	struct su_server srv; /* the main server */
	struct fxtw small;    /* the small trace's bytes */
	struct fxtw gen;      /* a generated trace of 200 k events */
	int64_t small_id, gen_id;
	int64_t trk_a, trk_b, trk_async, trk_used, trk_ratio; /* small trace's tracks */
	int64_t id_outer, id_inner, id_mark, id_work, id_load;
};

static struct world W;

static const char INDEX_HTML[] = "<!doctype html><title>trace viewer test page</title><p>hello</p>\n";
static const char SECRET[] = "SECRET-CONTENT-never-served\n";

/* ---- small helpers -------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void t_fmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && (size_t)k < n);
}

static void t_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void t_copy_file(const char *from, const char *to)
{
	char buf[65536];
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(chmod(to, 0755), 0);
}

/* Entries of a directory other than . and ..; -1 when it does not exist. */
static int t_dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* Uploads in progress in a spool directory: its entries but the
 * compressed copy of a source being ingested ("source-*", made there by
 * the worker while ingest runs: catalog/source.c). */
static int t_spool_uploads(const char *spool)
{
	DIR *d = opendir(spool);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		     strncmp(e->d_name, "source-", 7) != 0;
	closedir(d);
	return n;
}

/* Waits up to timeout seconds for dir/spool to hold no upload; asserts it does not. */
static void t_expect_spool_empty(const char *data, double timeout)
{
	char spool[256];
	double deadline = su_now() + timeout;
	int n;

	t_fmt(spool, sizeof(spool), "%s/spool", data);
	while ((n = t_spool_uploads(spool)) > 0 && su_now() < deadline)
		su_sleep_ms(20);
	if (n != 0)
		fail_msg("%s holds %d entries, expected none", spool, n);
}

/* Starts a server on data with --static and extra options (NULL-ended). */
static void t_start(struct su_server *s, const char *data, const char *const *extra)
{
	const char *base[] = { W.exe, "serve", "--port", "0", "--data", data, "--static", W.static_dir };
	char *argv[24];
	size_t n = 0, i;

	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		argv[n++] = strdup(base[i]);
	for (i = 0; extra && extra[i] && n < 23; i++)
		argv[n++] = strdup(extra[i]);
	argv[n] = NULL;
	if (su_server_start(s, argv, W.log, 30) != 0)
		fail_msg("cannot start %s serve --data %s (see %s)", W.exe, data, W.log);
	for (i = 0; i < n; i++)
		free(argv[i]);
}

/* ---- HTTP helpers ------------------------------------------------------------- */

/* Prints the end of the servers' log: why a server went away. */
static void t_log_tail(void)
{
	char buf[3000];
	FILE *f = fopen(W.log, "rb");
	long size;
	size_t n;

	if (f == NULL)
		return;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > (long)sizeof(buf) - 1)
		fseek(f, size - (long)sizeof(buf) + 1, SEEK_SET);
	else
		rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	print_message("---- end of %s ----\n%s\n----\n", W.log, buf);
}

/* One request with extra headers (may be NULL) and a raw body; fails the
 * test when there is no well-formed reply. */
static void t_req(int port, const char *method, const char *path, const char *headers, const void *body, size_t n,
		  struct su_resp *r)
{
	struct su_req q = { method, path, headers, body, n, 0, 0 };

	if (su_request(port, &q, r, 60000) != 0) {
		t_log_tail();
		fail_msg("%s %s: no well-formed reply", method, path);
	}
}

static cJSON *t_json(const struct su_resp *r)
{
	cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);

	if (j == NULL)
		fail_msg("the reply (status %d) is not JSON: %.300s", r->status, r->body);
	/* cJSON skips NUL bytes as white space; JSON has none */
	if (memchr(r->body, '\0', r->body_len) != NULL)
		fail_msg("the reply (status %d) holds a NUL byte at %zu: %.300s", r->status,
			 (size_t)((const char *)memchr(r->body, '\0', r->body_len) - r->body), r->body);
	return j;
}

/* GET of a formatted path that must answer 200 with JSON; caller deletes. */
__attribute__((format(printf, 2, 3))) static cJSON *t_get_json(struct su_resp *r, const char *fmt, ...)
{
	char path[1024], ct[128];
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	assert_true(k > 0 && (size_t)k < sizeof(path));
	t_req(W.srv.port, "GET", path, NULL, NULL, 0, r);
	if (r->status != 200)
		fail_msg("GET %s: status %d: %.300s", path, r->status, r->body);
	assert_non_null(su_header(r, "Content-Type", ct, sizeof(ct)));
	assert_memory_equal(ct, "application/json", 16);
	return t_json(r);
}

static cJSON *t_item(const cJSON *o, const char *key)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	if (it == NULL)
		fail_msg("no member '%s'", key);
	return it;
}

/* An integer member (exact below 2^53). */
static int64_t t_int(const cJSON *o, const char *key)
{
	const cJSON *it = t_item(o, key);

	if (!cJSON_IsNumber(it) || fabs(it->valuedouble) > 9007199254740992.0 ||
	    it->valuedouble != floor(it->valuedouble))
		fail_msg("member '%s' is not an exact integer", key);
	return (int64_t)it->valuedouble;
}

static const char *t_str(const cJSON *o, const char *key)
{
	const cJSON *it = t_item(o, key);

	if (!cJSON_IsString(it))
		fail_msg("member '%s' is not a string", key);
	return it->valuestring;
}

static int t_is_null(const cJSON *o, const char *key)
{
	return cJSON_IsNull(t_item(o, key));
}

/* The unsigned integer right after needle in s; fails when absent. */
static uint64_t t_raw_u64(const char *s, const char *needle)
{
	const char *p = strstr(s, needle);

	if (p == NULL)
		fail_msg("'%s' is not in %.400s", needle, s);
	p += strlen(needle);
	p += strspn(p, " ");
	if (*p < '0' || *p > '9')
		fail_msg("'%s' is not followed by a number", needle);
	return strtoull(p, NULL, 10);
}

/* The reply must be the error of docs/API.md: status, JSON content type,
 * {"error": {"code", "message"}} with the code (unless NULL). */
static void t_expect_error(const struct su_resp *r, int status, const char *code, const char *what)
{
	char ct[128];
	cJSON *j, *e;

	if (r->status != status)
		fail_msg("%s: expected %d, got %d: %.300s", what, status, r->status, r->body);
	if (su_header(r, "Content-Type", ct, sizeof(ct)) == NULL || strncmp(ct, "application/json", 16) != 0)
		fail_msg("%s: the error is not JSON (Content-Type %s)", what, su_header(r, "Content-Type", ct, 128));
	j = t_json(r);
	e = t_item(j, "error");
	if (code && strcmp(t_str(e, "code"), code) != 0)
		fail_msg("%s: expected error code %s, got %s", what, code, t_str(e, "code"));
	if (strlen(t_str(e, "message")) < 10)
		fail_msg("%s: the error message '%s' says too little", what, t_str(e, "message"));
	cJSON_Delete(j);
}

/* GET of path on port must be this error. */
static void t_get_error(int port, const char *method, const char *path, int status, const char *code)
{
	struct su_resp r;
	char what[512];

	t_fmt(what, sizeof(what), "%s %s", method, path);
	t_req(port, method, path, NULL, NULL, 0, &r);
	t_expect_error(&r, status, code, what);
	su_resp_free(&r);
}

/* POSTs bytes to /api/traces<query> on port as the raw body. */
static void t_upload(int port, const char *query, const char *auth, const void *p, size_t n, struct su_resp *r)
{
	char path[256], hdr[512];

	t_fmt(path, sizeof(path), "/api/traces%s", query);
	t_fmt(hdr, sizeof(hdr), "Content-Type: application/octet-stream\r\n%s", auth ? auth : "");
	t_req(port, "POST", path, hdr, p, n, r);
}

/* The checks every trace object must pass; returns its status. */
static const char *t_check_trace_object(const cJSON *t)
{
	const cJSON *p = t_item(t, "progress");
	const char *st = t_str(t, "status");

	assert_true(t_int(t, "id") > 0);
	t_str(t, "name");
	t_str(t, "created_at");
	assert_true(strlen(t_str(t, "created_at")) >= 20); /* 2026-11-22T00:00:00Z */
	assert_true(t_int(t, "size_bytes") > 0);
	assert_true(t_int(p, "bytes_done") <= t_int(p, "bytes_total"));
	assert_int_equal(t_int(p, "bytes_total"), t_int(t, "size_bytes"));
	assert_true(strcmp(st, "queued") == 0 || strcmp(st, "ingesting") == 0 || strcmp(st, "ready") == 0 ||
		    strcmp(st, "failed") == 0);
	if (strcmp(st, "failed") == 0) {
		assert_true(strlen(t_str(t_item(t, "error"), "code")) > 0);
		assert_true(strlen(t_str(t_item(t, "error"), "message")) > 10);
	} else {
		assert_true(t_is_null(t, "error"));
	}
	if (strcmp(st, "ready") == 0) {
		assert_true(cJSON_IsObject(t_item(t, "counts")));
		assert_true(cJSON_IsArray(t_item(t, "providers")));
		assert_true(cJSON_IsObject(t_item(t, "diagnostics")));
		assert_int_equal(t_int(p, "bytes_done"), t_int(t, "size_bytes"));
		assert_string_equal(t_str(t, "format"), "fxt");
	}
	return st;
}

/* Polls GET /api/traces/{id} until ready or failed; returns the trace
 * object (caller deletes). */
static cJSON *t_wait_trace(int port, const char *auth, int64_t id, double timeout)
{
	double deadline = su_now() + timeout;
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	for (;;) {
		struct su_resp r;
		cJSON *j;
		const char *st;

		t_req(port, "GET", path, auth, NULL, 0, &r);
		if (r.status != 200)
			fail_msg("GET %s: %d %.200s", path, r.status, r.body);
		j = t_json(&r);
		su_resp_free(&r);
		st = t_check_trace_object(j);
		if (strcmp(st, "ready") == 0 || strcmp(st, "failed") == 0)
			return j;
		cJSON_Delete(j);
		if (su_now() > deadline)
			fail_msg("trace %" PRId64 " is still %s after %.0f s", id, st, timeout);
		su_sleep_ms(20);
	}
}

/* Uploads with ?wait=1 and requires 201 with a ready trace; returns its id. */
static int64_t t_upload_ready(int port, const char *name, const void *p, size_t n)
{
	struct su_resp r;
	char q[256], loc[128], want[64];
	cJSON *j;
	int64_t id;

	t_fmt(q, sizeof(q), "?wait=1&name=%s", name);
	t_upload(port, q, NULL, p, n, &r);
	if (r.status != 201)
		fail_msg("upload %s: expected 201, got %d: %.300s", name, r.status, r.body);
	j = t_json(&r);
	assert_string_equal(t_check_trace_object(j), "ready");
	assert_string_equal(t_str(j, "name"), name);
	assert_int_equal(t_int(j, "size_bytes"), n);
	id = t_int(j, "id");
	t_fmt(want, sizeof(want), "/api/traces/%" PRId64, id);
	assert_non_null(su_header(&r, "Location", loc, sizeof(loc)));
	assert_string_equal(loc, want);
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

/* The ids of /api/traces in reply order. */
static size_t t_list_ids(int port, const char *auth, int64_t *ids, size_t max)
{
	struct su_resp r;
	const cJSON *t;
	cJSON *j;
	size_t n = 0;

	t_req(port, "GET", "/api/traces", auth, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	j = t_json(&r);
	cJSON_ArrayForEach(t, t_item(j, "traces"))
	{
		t_check_trace_object(t);
		if (n < max)
			ids[n++] = t_int(t, "id");
	}
	cJSON_Delete(j);
	su_resp_free(&r);
	return n;
}

static int t_list_has(int port, const char *auth, int64_t id)
{
	int64_t ids[256];
	size_t n = t_list_ids(port, auth, ids, 256), i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* A multipart/form-data body: an optional "name" field before or after
 * the "file" part. */
static void t_multipart(struct su_buf *b, const char *boundary, const char *name, int name_first, const char *filename,
			const void *p, size_t n)
{
	char part[512];

	if (name && name_first) {
		t_fmt(part, sizeof(part), "--%s\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n%s\r\n", boundary,
		      name);
		su_buf_add(b, part, strlen(part));
	}
	if (filename) {
		t_fmt(part, sizeof(part),
		      "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
		      "Content-Type: application/octet-stream\r\n\r\n",
		      boundary, filename);
		su_buf_add(b, part, strlen(part));
		su_buf_add(b, p, n);
		su_buf_add(b, "\r\n", 2);
	}
	if (name && !name_first) {
		t_fmt(part, sizeof(part), "--%s\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n%s\r\n", boundary,
		      name);
		su_buf_add(b, part, strlen(part));
	}
	t_fmt(part, sizeof(part), "--%s--\r\n", boundary);
	su_buf_add(b, part, strlen(part));
}

/* ---- setup -------------------------------------------------------------------- */

/* Finds the small trace's track and slice ids through the API. */
static void t_find_small_ids(void)
{
	struct su_resp r;
	cJSON *j;
	const cJSON *p, *x;

	j = t_get_json(&r, "/api/traces/%" PRId64 "/tracks", W.small_id);
	cJSON_ArrayForEach(p, t_item(j, "processes"))
	{
		cJSON_ArrayForEach(x, t_item(p, "threads"))
		{
			if (strcmp(cJSON_IsString(t_item(x, "name")) ? t_str(x, "name") : "", "thread-a") == 0)
				W.trk_a = t_int(x, "track_id");
			if (strcmp(cJSON_IsString(t_item(x, "name")) ? t_str(x, "name") : "", "thread-b") == 0)
				W.trk_b = t_int(x, "track_id");
		}
		cJSON_ArrayForEach(x, t_item(p, "async_tracks"))
		{
			W.trk_async = t_int(x, "track_id");
		}
		cJSON_ArrayForEach(x, t_item(p, "counter_tracks"))
		{
			if (strcmp(t_str(x, "series"), "used") == 0)
				W.trk_used = t_int(x, "track_id");
			if (strcmp(t_str(x, "series"), "ratio") == 0)
				W.trk_ratio = t_int(x, "track_id");
		}
	}
	cJSON_Delete(j);
	su_resp_free(&r);
	assert_true(W.trk_a > 0 && W.trk_b > 0 && W.trk_async > 0 && W.trk_used > 0 && W.trk_ratio > 0);

	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices?track=%" PRId64, W.small_id, W.trk_a);
	cJSON_ArrayForEach(x, t_item(j, "slices"))
	{
		if (strcmp(t_str(x, "name"), "Outer") == 0)
			W.id_outer = t_int(x, "id");
		if (strcmp(t_str(x, "name"), "Inner") == 0)
			W.id_inner = t_int(x, "id");
		if (strcmp(t_str(x, "name"), "Mark") == 0)
			W.id_mark = t_int(x, "id");
	}
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices?track=%" PRId64, W.small_id, W.trk_b);
	W.id_work = t_int(cJSON_GetArrayItem(t_item(j, "slices"), 0), "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices?track=%" PRId64, W.small_id, W.trk_async);
	W.id_load = t_int(cJSON_GetArrayItem(t_item(j, "slices"), 0), "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	assert_true(W.id_outer > 0 && W.id_inner > 0 && W.id_mark > 0 && W.id_work > 0 && W.id_load > 0);
}

static int group_setup(void **state)
{
	char path[256];
	const char *exe = getenv("TRACE_SERVER");

	(void)state;
	memset(&W, 0, sizeof(W));
	if (exe == NULL || *exe == '\0')
		exe = "build/rel/trace-server";
	if (access(exe, X_OK) != 0)
		fail_msg("the server binary %s is missing (set TRACE_SERVER)", exe);
	t_fmt(W.root, sizeof(W.root), "/tmp/ts-server-test-XXXXXX");
	assert_non_null(mkdtemp(W.root));
	/* run a copy: a rebuild during the test must not swap the binary */
	t_fmt(W.exe, sizeof(W.exe), "%s/trace-server", W.root);
	t_copy_file(exe, W.exe);
	t_fmt(W.data, sizeof(W.data), "%s/data", W.root);
	t_fmt(W.log, sizeof(W.log), "%s/server.log", W.root);
	/* the static dir root/a/b, with secrets where traversal would lead */
	t_fmt(path, sizeof(path), "%s/a", W.root);
	assert_int_equal(mkdir(path, 0755), 0);
	t_fmt(W.static_dir, sizeof(W.static_dir), "%s/a/b", W.root);
	assert_int_equal(mkdir(W.static_dir, 0755), 0);
	t_fmt(path, sizeof(path), "%s/index.html", W.static_dir);
	t_write_file(path, INDEX_HTML, strlen(INDEX_HTML));
	t_fmt(path, sizeof(path), "%s/a/Makefile", W.root);
	t_write_file(path, SECRET, strlen(SECRET));
	t_fmt(path, sizeof(path), "%s/a/etc", W.root);
	assert_int_equal(mkdir(path, 0755), 0);
	t_fmt(path, sizeof(path), "%s/a/etc/passwd", W.root);
	t_write_file(path, SECRET, strlen(SECRET));
	t_fmt(path, sizeof(path), "%s/link.html", W.static_dir);
	assert_int_equal(symlink("../Makefile", path), 0);

	t_start(&W.srv, W.data, NULL);
	t_write_small(&W.small);
	W.small_id = t_upload_ready(W.srv.port, "small", W.small.buf, W.small.len);
	t_write_generated(&W.gen, 200000, 8, 7);
	W.gen_id = t_upload_ready(W.srv.port, "gen200k", W.gen.buf, W.gen.len);
	t_find_small_ids();
	return 0;
}

static int group_teardown(void **state)
{
	int rc = 0;

	(void)state;
	if (W.srv.pid > 0 && (rc = su_server_stop(&W.srv, SIGTERM)) != 0)
		fprintf(stderr, "the server exited with %d after SIGTERM (expected 0)\n", rc);
	fxtw_fini(&W.small);
	fxtw_fini(&W.gen);
	if (getenv("TS_KEEP") == NULL && W.root[0])
		su_rm_tree(W.root);
	else if (W.root[0])
		fprintf(stderr, "kept %s\n", W.root);
	return rc;
}

/* ---- the library ------------------------------------------------------------------ */

/* Raw upload without wait: 202, Location, then polling to ready with the
 * progress fields; the trace object describes the small trace exactly. */
static void test_upload_raw_and_poll(void **state)
{
	struct su_resp r;
	char loc[128], want[64];
	cJSON *j, *c, *d;
	const cJSON *it;
	int64_t id;

	(void)state;
	t_upload(W.srv.port, "?name=raw%20upload", NULL, W.small.buf, W.small.len, &r);
	if (r.status != 202)
		fail_msg("expected 202, got %d: %.300s", r.status, r.body);
	j = t_json(&r);
	id = t_int(j, "id");
	assert_true(strcmp(t_str(j, "status"), "queued") == 0 || strcmp(t_str(j, "status"), "ingesting") == 0);
	t_fmt(want, sizeof(want), "/api/traces/%" PRId64, id);
	assert_non_null(su_header(&r, "Location", loc, sizeof(loc)));
	assert_string_equal(loc, want);
	cJSON_Delete(j);
	su_resp_free(&r);

	j = t_wait_trace(W.srv.port, NULL, id, 60);
	assert_string_equal(t_str(j, "status"), "ready");
	assert_string_equal(t_str(j, "name"), "raw upload");
	assert_int_equal(t_int(j, "size_bytes"), W.small.len);
	assert_int_equal(t_int(j, "start_ns"), 1000);
	assert_int_equal(t_int(j, "end_ns"), 19500);
	c = t_item(j, "counts");
	assert_int_equal(t_int(c, "slices"), 15); /* Outer Inner Mark Work Load, 10 Tick */
	assert_int_equal(t_int(c, "flows"), 1);
	assert_int_equal(t_int(c, "counters"), 8);
	assert_int_equal(t_int(c, "logs"), 2);
	assert_int_equal(t_int(c, "sched"), 3);
	it = cJSON_GetArrayItem(t_item(j, "providers"), 0);
	assert_non_null(it);
	assert_int_equal(t_int(it, "id"), 1);
	assert_string_equal(t_str(it, "name"), "itest");
	assert_int_equal(t_int(it, "ticks_per_second"), 1000000000);
	assert_int_equal(t_int(it, "buffer_overflows"), 0);
	d = t_item(j, "diagnostics");
	{
		static const char *const names[] = { "unknown_records",	       "malformed_records",
						     "truncated_bytes",	       "unresolved_string_refs",
						     "unresolved_thread_refs", "unmatched_ends",
						     "unterminated_slices",    "flow_no_enclosing_slice",
						     "negative_durations" };
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (t_int(d, names[i]) != 0)
				fail_msg("diagnostic %s is %" PRId64 " on a clean trace", names[i], t_int(d, names[i]));
	}
	cJSON_Delete(j);
}

/* GET /file must return exactly these bytes. */
static void t_expect_file(int port, int64_t id, const void *p, size_t n)
{
	struct su_resp r;
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/file", id);
	t_req(port, "GET", path, NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, n);
	assert_memory_equal(r.body, p, n);
	su_resp_free(&r);
}

/* Multipart uploads: the file part is stored without its framing; the name
 * comes from ?name=, else the "name" field (before or after the file),
 * else the file name. */
static void test_upload_multipart(void **state)
{
	static const char *const bnd = "----ts-boundary-7MA4YWxkTrZu0gW";
	struct {
		const char *query, *field, *expect;
		int field_first;
	} cases[] = {
		{ "?wait=1", "field-name", "field-name", 1 },
		{ "?wait=1", "late-name", "late-name", 0 },
		{ "?wait=1", NULL, "small.fxt", 0 },
		{ "?wait=1&name=query-wins", "field-name", "query-wins", 1 },
	};
	char hdr[160];
	size_t i;

	(void)state;
	t_fmt(hdr, sizeof(hdr), "Content-Type: multipart/form-data; boundary=%s\r\n", bnd);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct su_buf b = { 0 };
		struct su_resp r;
		char path[128];
		cJSON *j;
		int64_t id;

		t_multipart(&b, bnd, cases[i].field, cases[i].field_first, "small.fxt", W.small.buf, W.small.len);
		t_fmt(path, sizeof(path), "/api/traces%s", cases[i].query);
		t_req(W.srv.port, "POST", path, hdr, b.p, b.len, &r);
		if (r.status != 201)
			fail_msg("multipart case %zu: expected 201, got %d: %.300s", i, r.status, r.body);
		j = t_json(&r);
		assert_string_equal(t_check_trace_object(j), "ready");
		assert_string_equal(t_str(j, "name"), cases[i].expect);
		assert_int_equal(t_int(j, "size_bytes"), W.small.len);
		assert_int_equal(t_int(t_item(j, "counts"), "slices"), 15);
		id = t_int(j, "id");
		cJSON_Delete(j);
		su_resp_free(&r);
		t_expect_file(W.srv.port, id, W.small.buf, W.small.len);
		free(b.p);
	}
}

/* ?wait=1 gives 201 with the whole trace object; the list is newest first
 * and holds every trace. */
static void test_wait_and_list(void **state)
{
	int64_t ids[256], a, b;
	size_t n, i;

	(void)state;
	a = t_upload_ready(W.srv.port, "first", W.small.buf, W.small.len);
	b = t_upload_ready(W.srv.port, "second", W.small.buf, W.small.len);
	assert_true(b > a);
	n = t_list_ids(W.srv.port, NULL, ids, 256);
	assert_true(n >= 4);
	assert_int_equal(ids[0], b);
	assert_int_equal(ids[1], a);
	for (i = 1; i < n; i++)
		if (ids[i] >= ids[i - 1])
			fail_msg("the list is not newest first: %" PRId64 " after %" PRId64, ids[i], ids[i - 1]);
	assert_true(t_list_has(W.srv.port, NULL, W.small_id));
	assert_true(t_list_has(W.srv.port, NULL, W.gen_id));
}

/* /file returns the upload byte for byte; DELETE removes the trace, its
 * files and its directory. */
static void test_file_and_delete(void **state)
{
	struct su_resp r;
	char path[128], dir[256];
	struct stat st;
	int64_t id;

	(void)state;
	t_expect_file(W.srv.port, W.small_id, W.small.buf, W.small.len);
	t_expect_file(W.srv.port, W.gen_id, W.gen.buf, W.gen.len);
	id = t_upload_ready(W.srv.port, "doomed", W.small.buf, W.small.len);
	t_fmt(dir, sizeof(dir), "%s/traces/%" PRId64, W.data, id);
	assert_int_equal(stat(dir, &st), 0);
	{ /* read through the server's connections, several threads' */
		int i;

		for (i = 0; i < 16; i++) {
			cJSON_Delete(t_get_json(&r, "/api/traces/%" PRId64 "/slices?track=1&start=0&end=%d", id,
						1000000000 + i));
			su_resp_free(&r);
		}
	}
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	t_req(W.srv.port, "DELETE", path, NULL, NULL, 0, &r);
	assert_int_equal(r.status, 204);
	assert_int_equal(r.body_len, 0);
	su_resp_free(&r);
	t_get_error(W.srv.port, "GET", path, 404, "not_found");
	t_get_error(W.srv.port, "DELETE", path, 404, "not_found");
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/file", id);
	t_get_error(W.srv.port, "GET", path, 404, "not_found");
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	t_get_error(W.srv.port, "GET", path, 404, "not_found");
	assert_int_equal(stat(dir, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_false(t_list_has(W.srv.port, NULL, id));
	{ /* no connection of any thread holds the deleted database open */
		char maps[64], line[1024], needle[256];
		FILE *f;

		t_fmt(maps, sizeof(maps), "/proc/%d/fd", (int)W.srv.pid);
		t_fmt(needle, sizeof(needle), "/traces/%" PRId64 "/trace.db", id);
		{
			char cmd[160];

			t_fmt(cmd, sizeof(cmd), "ls -l %s 2>/dev/null", maps);
			assert_non_null(f = popen(cmd, "r"));
		}
		while (fgets(line, sizeof(line), f))
			if (strstr(line, needle))
				fail_msg("the server still holds the deleted database: %s", line);
		pclose(f);
	}
}

/* Deleting a trace while it is queued or ingesting: 204 at once, and the
 * worker throws its result away (directory gone, never listed again). */
static void test_delete_while_ingesting(void **state)
{
	struct su_resp r;
	char path[64], dir[256];
	double deadline;
	cJSON *j;
	int64_t id;

	(void)state;
	t_upload(W.srv.port, "?name=deleted-early", NULL, W.gen.buf, W.gen.len, &r);
	assert_int_equal(r.status, 202);
	j = t_json(&r);
	id = t_int(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	t_req(W.srv.port, "DELETE", path, NULL, NULL, 0, &r);
	assert_int_equal(r.status, 204);
	su_resp_free(&r);
	t_get_error(W.srv.port, "GET", path, 404, "not_found");
	t_fmt(dir, sizeof(dir), "%s/traces/%" PRId64, W.data, id);
	deadline = su_now() + 30;
	while (t_dir_entries(dir) >= 0 && su_now() < deadline)
		su_sleep_ms(20);
	if (t_dir_entries(dir) >= 0)
		fail_msg("%s still exists after the trace was deleted", dir);
	assert_false(t_list_has(W.srv.port, NULL, id));
	/* the worker is free again */
	t_upload_ready(W.srv.port, "after-delete", W.small.buf, W.small.len);
}

/* ---- the small trace, endpoint by endpoint ------------------------------------- */

static void test_tracks(void **state)
{
	struct su_resp r;
	const cJSON *p, *x;
	cJSON *j;
	int seen_a = 0, seen_b = 0, seen_cpu = 0;

	(void)state;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/tracks", W.small_id);
	/* 64-bit pids and tids are printed exactly */
	assert_non_null(strstr(r.body, "\"pid\":17293822569102704641,"));
	assert_non_null(strstr(r.body, "\"tid\":17293822569102704642,"));
	cJSON_ArrayForEach(p, t_item(j, "processes"))
	{
		const char *name = cJSON_IsString(t_item(p, "name")) ? t_str(p, "name") : "";

		if (strcmp(name, "proc-a") == 0) {
			seen_a = 1;
			assert_int_equal(t_int(p, "pid"), PID_A);
			x = cJSON_GetArrayItem(t_item(p, "threads"), 0);
			assert_non_null(x);
			assert_int_equal(cJSON_GetArraySize(t_item(p, "threads")), 1);
			assert_int_equal(t_int(x, "tid"), TID_A);
			assert_string_equal(t_str(x, "name"), "thread-a");
			assert_int_equal(t_int(x, "track_id"), W.trk_a);
			assert_int_equal(t_int(x, "max_depth"), 1);
			assert_int_equal(cJSON_GetArraySize(t_item(p, "async_tracks")), 1);
			x = cJSON_GetArrayItem(t_item(p, "async_tracks"), 0);
			assert_string_equal(t_str(x, "name"), "Load");
			assert_string_equal(t_str(x, "category"), "cat");
			assert_int_equal(t_int(x, "max_depth"), 0);
			assert_int_equal(cJSON_GetArraySize(t_item(p, "counter_tracks")), 2);
			cJSON_ArrayForEach(x, t_item(p, "counter_tracks"))
			{
				assert_string_equal(t_str(x, "name"), "mem");
				assert_int_equal(t_int(x, "counter_id"), 1);
				if (strcmp(t_str(x, "series"), "ratio") == 0) {
					assert_true(t_item(x, "min")->valuedouble == 0.25);
					assert_true(t_item(x, "max")->valuedouble == 1.0);
				} else {
					assert_string_equal(t_str(x, "series"), "used");
					assert_true(t_item(x, "min")->valuedouble == 10.0);
				}
			}
		} else if (strcmp(name, "proc-b") == 0) {
			seen_b = 1;
			x = cJSON_GetArrayItem(t_item(p, "threads"), 0);
			assert_non_null(x);
			assert_string_equal(t_str(x, "name"), "thread-b");
			assert_int_equal(t_int(x, "track_id"), W.trk_b);
			assert_int_equal(t_int(x, "max_depth"), 0);
			assert_int_equal(cJSON_GetArraySize(t_item(p, "async_tracks")), 0);
			assert_int_equal(cJSON_GetArraySize(t_item(p, "counter_tracks")), 0);
		}
	}
	cJSON_ArrayForEach(x, t_item(j, "cpus"))
	{
		assert_int_equal(t_int(x, "cpu"), 3);
		assert_true(t_int(x, "track_id") > 0);
		seen_cpu++;
	}
	assert_true(seen_a && seen_b);
	assert_int_equal(seen_cpu, 1);
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* Compares a /slices reply with "name ts dur depth category" lines. */
static void t_expect_slices(const char *query, const char *const *want, size_t n)
{
	struct su_resp r;
	const cJSON *x;
	cJSON *j;
	size_t i = 0;

	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices?%s", W.small_id, query);
	assert_false(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_ArrayForEach(x, t_item(j, "slices"))
	{
		char got[256];

		t_fmt(got, sizeof(got), "%s %" PRId64 " %" PRId64 " %" PRId64 " %s", t_str(x, "name"), t_int(x, "ts"),
		      t_int(x, "dur"), t_int(x, "depth"), t_str(x, "category"));
		if (i >= n)
			fail_msg("slices?%s: unexpected item %zu: %s", query, i, got);
		if (strcmp(got, want[i]) != 0)
			fail_msg("slices?%s: item %zu is '%s', expected '%s'", query, i, got, want[i]);
		assert_true(t_int(x, "id") > 0);
		assert_null(cJSON_GetObjectItemCaseSensitive(x, "merged"));
		i++;
	}
	if (i != n)
		fail_msg("slices?%s: %zu items, expected %zu", query, i, n);
	cJSON_Delete(j);
	su_resp_free(&r);
}

static void test_slices(void **state)
{
	static const char *const all[] = {
		"Outer 1000 8000 0 cat", "Inner 2000 1000 1 cat", "Mark 3500 0 1 cat",	"Tick 10000 500 0 cat",
		"Tick 11000 500 0 cat",	 "Tick 12000 500 0 cat",  "Tick 13000 500 0 cat", "Tick 14000 500 0 cat",
		"Tick 15000 500 0 cat",	 "Tick 16000 500 0 cat",  "Tick 17000 500 0 cat", "Tick 18000 500 0 cat",
		"Tick 19000 500 0 cat",
	};
	static const char *const edge[] = { "Tick 12000 500 0 cat", "Tick 13000 500 0 cat", "Tick 14000 500 0 cat" };
	static const char *const inside[] = { "Outer 1000 8000 0 cat", "Inner 2000 1000 1 cat" };
	static const char *const work[] = { "Work 4000 2000 0 cat2" };
	static const char *const load[] = { "Load 1500 6000 0 cat" };
	char q[256];

	(void)state;
	t_fmt(q, sizeof(q), "track=%" PRId64, W.trk_a);
	t_expect_slices(q, all, 13);
	t_fmt(q, sizeof(q), "track=%" PRId64 "&start=0&end=100000", W.trk_a);
	t_expect_slices(q, all, 13);
	/* a slice overlapping the start is in; one starting at the end is in */
	t_fmt(q, sizeof(q), "track=%" PRId64 "&start=12200&end=14000", W.trk_a);
	t_expect_slices(q, edge, 3);
	/* a window inside Outer and across Inner's end */
	t_fmt(q, sizeof(q), "track=%" PRId64 "&start=2500&end=3200", W.trk_a);
	t_expect_slices(q, inside, 2);
	t_fmt(q, sizeof(q), "track=%" PRId64 "&start=9001&end=9999", W.trk_a);
	t_expect_slices(q, NULL, 0);
	t_fmt(q, sizeof(q), "track=%" PRId64 "&start=3499&end=3501", W.trk_a);
	{
		static const char *const mark[] = { "Outer 1000 8000 0 cat", "Mark 3500 0 1 cat" };

		t_expect_slices(q, mark, 2);
	}
	t_fmt(q, sizeof(q), "track=%" PRId64 "&start=5999&end=5999", W.trk_b);
	t_expect_slices(q, work, 1);
	t_fmt(q, sizeof(q), "track=%" PRId64 "&start=7000&end=8000", W.trk_async);
	t_expect_slices(q, load, 1);
	/* resolution below 1024 ns returns every slice */
	t_fmt(q, sizeof(q), "track=%" PRId64 "&resolution=1000", W.trk_a);
	t_expect_slices(q, all, 13);
	/* limit cuts the list and says so */
	{
		struct su_resp r;
		cJSON *j = t_get_json(&r, "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&limit=4", W.small_id,
				      W.trk_a);

		assert_int_equal(cJSON_GetArraySize(t_item(j, "slices")), 4);
		assert_true(cJSON_IsTrue(t_item(j, "truncated")));
		cJSON_Delete(j);
		su_resp_free(&r);
	}
}

/* The flow of the small trace as seen from one of its slices. */
static void t_expect_flow(const cJSON *slice)
{
	const cJSON *f = t_item(slice, "flows");

	assert_int_equal(cJSON_GetArraySize(f), 1);
	f = cJSON_GetArrayItem(f, 0);
	assert_int_equal(t_int(f, "from_slice"), W.id_inner);
	assert_int_equal(t_int(f, "to_slice"), W.id_work);
}

static void test_slice_detail(void **state)
{
	static const char *const keys[] = { "i32", "u32", "i64",  "u64",     "dbl",  "str",
					    "ptr", "koid", "flag", "nothing", "blob", "result" };
	struct su_resp r;
	const cJSON *a, *x;
	cJSON *j;
	size_t i = 0;

	(void)state;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices/%" PRId64, W.small_id, W.id_outer);
	assert_int_equal(t_int(j, "id"), W.id_outer);
	assert_int_equal(t_int(j, "ts"), 1000);
	assert_int_equal(t_int(j, "dur"), 8000);
	assert_int_equal(t_int(j, "depth"), 0);
	assert_string_equal(t_str(j, "name"), "Outer");
	assert_string_equal(t_str(j, "category"), "cat");
	assert_int_equal(t_int(j, "track_id"), W.trk_a);
	assert_string_equal(t_str(j, "track_kind"), "thread");
	assert_int_equal(t_int(j, "pid"), PID_A);
	assert_int_equal(t_int(j, "tid"), TID_A);
	assert_true(t_is_null(j, "parent_id"));
	assert_int_equal(cJSON_GetArraySize(t_item(j, "flows")), 0);
	/* arguments in record order, the end's joining at the end, each typed */
	a = t_item(j, "args");
	cJSON_ArrayForEach(x, a)
	{
		if (i >= sizeof(keys) / sizeof(keys[0]) || strcmp(x->string, keys[i]) != 0)
			fail_msg("argument %zu is '%s'", i, x->string);
		i++;
	}
	assert_int_equal(i, 12);
	assert_int_equal(t_int(a, "i32"), -5);
	assert_int_equal(t_int(a, "u32"), 4000000000u);
	assert_int_equal(t_raw_u64(r.body, "\"u64\":"), BIG_U64);
	assert_non_null(strstr(r.body, "\"i64\":-9000000000000000000,"));
	assert_true(t_item(a, "dbl")->valuedouble == 1.5);
	assert_string_equal(t_str(a, "str"), "hello \"world\"");
	assert_string_equal(t_str(a, "ptr"), "0xfedcba9876543210");
	assert_int_equal(t_int(a, "koid"), TID_A);
	assert_true(cJSON_IsTrue(t_item(a, "flag")));
	assert_true(t_is_null(a, "nothing"));
	assert_int_equal(t_int(t_item(a, "blob"), "blob_bytes"), 5);
	assert_int_equal(t_int(a, "result"), 1);
	cJSON_Delete(j);
	su_resp_free(&r);

	/* Inner: parent Outer, the flow leaves it */
	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices/%" PRId64, W.small_id, W.id_inner);
	assert_int_equal(t_int(j, "parent_id"), W.id_outer);
	assert_int_equal(t_int(j, "depth"), 1);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "args")), 0);
	t_expect_flow(j);
	assert_int_equal(t_raw_u64(r.body, "\"flow_id\":"), FLOW_ID);
	cJSON_Delete(j);
	su_resp_free(&r);

	/* Work: on thread B, whose ids are above 2^63; the flow arrives */
	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices/%" PRId64, W.small_id, W.id_work);
	assert_int_equal(t_raw_u64(r.body, "\"pid\":"), PID_B);
	assert_int_equal(t_raw_u64(r.body, "\"tid\":"), TID_B);
	assert_string_equal(t_str(j, "category"), "cat2");
	assert_true(t_is_null(j, "parent_id"));
	t_expect_flow(j);
	assert_int_equal(t_raw_u64(r.body, "\"flow_id\":"), FLOW_ID);
	cJSON_Delete(j);
	su_resp_free(&r);

	/* Mark: an instant, parent Outer */
	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices/%" PRId64, W.small_id, W.id_mark);
	assert_int_equal(t_int(j, "dur"), 0);
	assert_int_equal(t_int(j, "parent_id"), W.id_outer);
	cJSON_Delete(j);
	su_resp_free(&r);

	/* Load: async, no tid */
	j = t_get_json(&r, "/api/traces/%" PRId64 "/slices/%" PRId64, W.small_id, W.id_load);
	assert_string_equal(t_str(j, "track_kind"), "async");
	assert_int_equal(t_int(j, "track_id"), W.trk_async);
	assert_int_equal(t_int(j, "pid"), PID_A);
	assert_true(t_is_null(j, "tid"));
	assert_int_equal(t_int(j, "dur"), 6000);
	cJSON_Delete(j);
	su_resp_free(&r);

	{
		char path[128];

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices/999999", W.small_id);
		t_get_error(W.srv.port, "GET", path, 404, "not_found");
	}
}

/* Compares a /counters reply with "ts=value" items (value as printed). */
static void t_expect_points(int64_t track, const char *query, const char *want)
{
	struct su_resp r;
	char got[1024] = "";
	const char *p, *q;
	size_t n = 0;
	cJSON *j;

	j = t_get_json(&r, "/api/traces/%" PRId64 "/counters?track=%" PRId64 "%s", W.small_id, track, query);
	assert_false(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_Delete(j);
	/* read the raw body, so that 64-bit values are compared exactly */
	for (p = strstr(r.body, "\"ts\":"); p; p = strstr(q, "\"ts\":")) {
		long long ts = strtoll(p + 5, NULL, 10);

		q = strstr(p, "\"value\":");
		assert_non_null(q);
		q += 8;
		n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%lld=%.*s", n ? " " : "", ts, (int)strcspn(q, ",}"),
				      q);
	}
	if (strcmp(got, want) != 0)
		fail_msg("counters?track=%" PRId64 "%s: '%s', expected '%s'", track, query, got, want);
	su_resp_free(&r);
}

static void test_counters(void **state)
{
	(void)state;
	t_expect_points(W.trk_used, "", "1000=10 5000=20 8000=30 12000=5000000000000000001");
	/* the last point before the start comes first */
	t_expect_points(W.trk_used, "&start=6000&end=12000", "5000=20 8000=30 12000=5000000000000000001");
	/* strictly before: a point at the start does not replace it */
	t_expect_points(W.trk_used, "&start=5000&end=7999", "1000=10 5000=20");
	t_expect_points(W.trk_used, "&start=5001&end=7999", "5000=20");
	t_expect_points(W.trk_used, "&start=0&end=999", "");
	t_expect_points(W.trk_used, "&start=20000&end=30000", "12000=5000000000000000001");
	t_expect_points(W.trk_ratio, "", "1000=0.25 5000=0.5 8000=0.75 12000=1.0");
	{
		char path[128];

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/counters?track=%" PRId64, W.small_id, W.trk_a);
		t_get_error(W.srv.port, "GET", path, 404, "not_found");
	}
}

/* GET /flows on [s, e] of the small trace: the number of arrows. */
static int t_flow_count(int64_t s, int64_t e)
{
	struct su_resp r;
	cJSON *j;
	int n;

	j = t_get_json(&r, "/api/traces/%" PRId64 "/flows?start=%" PRId64 "&end=%" PRId64, W.small_id, s, e);
	n = cJSON_GetArraySize(t_item(j, "flows"));
	cJSON_Delete(j);
	su_resp_free(&r);
	return n;
}

/* The flow from Inner to Work. Where on its slices an arrow starts and ends
 * is not in the contract (the slices' starts or ends, or the flow events'
 * times 2500 and 5000), so the window checks use the ends the reply gives. */
static void test_flows(void **state)
{
	struct su_resp r;
	const cJSON *f;
	int64_t from, to;
	cJSON *j;

	(void)state;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/flows?start=0&end=100000", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "flows")), 1);
	f = cJSON_GetArrayItem(t_item(j, "flows"), 0);
	assert_int_equal(t_raw_u64(r.body, "\"flow_id\":"), FLOW_ID);
	assert_int_equal(t_int(f, "from_slice"), W.id_inner);
	assert_int_equal(t_int(f, "to_slice"), W.id_work);
	assert_int_equal(t_int(f, "from_track"), W.trk_a);
	assert_int_equal(t_int(f, "to_track"), W.trk_b);
	from = t_int(f, "from_ts");
	to = t_int(f, "to_ts");
	if (from != 2000 && from != 2500 && from != 3000)
		fail_msg("from_ts %" PRId64 " is neither on Inner [2000, 3000] nor the flow event (2500)", from);
	if (to != 4000 && to != 5000)
		fail_msg("to_ts %" PRId64 " is neither Work's start (4000) nor the flow event (5000)", to);
	assert_false(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_Delete(j);
	su_resp_free(&r);
	/* arrows with an end inside the window, inclusive */
	assert_int_equal(t_flow_count(to, to + 100), 1);
	assert_int_equal(t_flow_count(from - 100, from), 1);
	assert_int_equal(t_flow_count(from + 1, to - 1), 0);
	assert_int_equal(t_flow_count(to + 1, 100000), 0);
}

/* One sched item as "ts dur cpu pid tid priority state". */
static void t_sched_line(const char *body, const cJSON *x, size_t idx, char *out, size_t n)
{
	const cJSON *st = t_item(x, "end_state");
	const char *p = body;
	uint64_t pid, tid;
	size_t i;

	/* 64-bit pid and tid from the raw body: the idx-th item's */
	for (i = 0; i <= idx; i++) {
		p = strstr(p, "\"pid\":");
		assert_non_null(p);
		pid = t_raw_u64(p, "\"pid\":");
		tid = t_raw_u64(p, "\"tid\":");
		p++;
	}
	t_fmt(out, n, "%" PRId64 " %" PRId64 " %" PRId64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %s", t_int(x, "ts"),
	      t_int(x, "dur"), t_int(x, "cpu"), pid, tid, t_int(x, "priority"),
	      cJSON_IsNull(st) ? "null" : t_str(x, "end_state"));
}

static void t_expect_sched(const char *query, const char *const *want, size_t n)
{
	struct su_resp r;
	const cJSON *x;
	cJSON *j;
	size_t i = 0;

	j = t_get_json(&r, "/api/traces/%" PRId64 "/sched?%s", W.small_id, query);
	cJSON_ArrayForEach(x, t_item(j, "slices"))
	{
		char got[256];

		t_sched_line(r.body, x, i, got, sizeof(got));
		if (i >= n || strcmp(got, want[i]) != 0)
			fail_msg("sched?%s: item %zu is '%s', expected '%s'", query, i, got, i < n ? want[i] : "none");
		i++;
	}
	if (i != n)
		fail_msg("sched?%s: %zu items, expected %zu", query, i, n);
	assert_false(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* The states of one thread over a window, as "ts dur state cpu;..." */
static void t_expect_states(const char *query, const char *want)
{
	char got[512] = "", item[96];
	struct su_resp r;
	const cJSON *x;
	cJSON *j;

	j = t_get_json(&r, "/api/traces/%" PRId64 "/thread_states?%s", W.small_id, query);
	cJSON_ArrayForEach(x, t_item(j, "states"))
	{
		const cJSON *cpu = t_item(x, "cpu");

		snprintf(item, sizeof(item), "%s%" PRId64 " %" PRId64 " %s %s", got[0] ? ";" : "", t_int(x, "ts"),
			 t_int(x, "dur"), t_str(x, "state"), cJSON_IsNull(cpu) ? "-" : cpu->valuedouble == 3 ? "3" : "?");
		assert_true(strlen(got) + strlen(item) < sizeof(got));
		strcat(got, item);
	}
	if (strcmp(got, want) != 0)
		fail_msg("thread_states?%s: '%s', expected '%s'", query, got, want);
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* Thread states from the small trace's runs on cpu 3: (100, 101) runs
 * [1000, 5000) and ends blocked, runs again from 8000 to the end; the
 * other thread runs [5000, 7000) and stays suspended. */
static void test_thread_states(void **state)
{
	struct su_resp r;
	cJSON *j;
	char path[256];
	size_t i;
	static const char *const bad[][2] = {
		{ "tid=101", "missing_parameter" },
		{ "pid=100", "missing_parameter" },
		{ "pid=-1&tid=101", "bad_parameter" },
		{ "pid=18446744073709551616&tid=101", "bad_parameter" },
		{ "pid=1x&tid=101", "bad_parameter" },
		{ "pid=100&tid=101&start=10&end=9", "bad_parameter" },
	};

	(void)state;
	t_expect_states("pid=100&tid=101", "1000 4000 running 3;5000 3000 blocked -;8000 -1 running 3");
	t_expect_states("pid=100&tid=101&start=5500&end=7000", "5000 3000 blocked -");
	t_expect_states("pid=100&tid=101&start=5000&end=5000", "1000 4000 running 3;5000 3000 blocked -");
	t_expect_states("pid=100&tid=101&start=100000&end=200000", "8000 -1 running 3");
	t_expect_states("pid=100&tid=101&start=0&end=999", "");
	t_expect_states("pid=17293822569102704641&tid=17293822569102704642", "5000 2000 running 3;7000 -1 suspended -");
	t_expect_states("pid=17293822569102704641&tid=17293822569102704642&start=9000&end=9500", "7000 -1 suspended -");
	t_expect_states("pid=100&tid=999", "");
	j = t_get_json(&r, "/api/traces/%" PRId64 "/thread_states?pid=100&tid=101&limit=2", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "states")), 2);
	assert_true(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_Delete(j);
	su_resp_free(&r);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(path, sizeof(path), "/api/traces/%" PRId64 "/thread_states?%s", W.small_id, bad[i][0]);
		t_get_error(W.srv.port, "GET", path, 400, bad[i][1]);
	}
}

/* The Chrome JSON export carries CPU scheduling: a "CPU scheduling" process
 * with a thread per CPU, and each run as a complete event ("B" while still
 * running at the end) named after its thread, with pid, tid, priority and
 * end state. */
static void test_export_sched(void **state)
{
	static const char *const want[] = {
		"X 1 4 3 100 101 5 blocked",
		"X 5 2 3 17293822569102704641 17293822569102704642 7 suspended",
		"B 8 -1 3 100 101 5 null",
	};
	const cJSON *ev, *procs = NULL, *cpu3 = NULL;
	struct su_resp r;
	cJSON *j;
	size_t n = 0;
	double pid = -1;
	char line[160];

	(void)state;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/export?format=chrome-json", W.small_id);
	cJSON_ArrayForEach(ev, t_item(j, "traceEvents"))
	{
		const char *ph = t_str(ev, "ph"), *name = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "name"));
		const cJSON *args = cJSON_GetObjectItem(ev, "args");

		if (strcmp(ph, "M") == 0 && strcmp(name, "process_name") == 0 &&
		    strcmp(t_str(args, "name"), "CPU scheduling") == 0) {
			procs = ev;
			pid = cJSON_GetObjectItem(ev, "pid")->valuedouble;
		}
		if (strcmp(ph, "M") == 0 && strcmp(name, "thread_name") == 0 && strcmp(t_str(args, "name"), "CPU 3") == 0)
			cpu3 = ev;
		if (!cJSON_IsString(cJSON_GetObjectItem(ev, "cat")) || strcmp(t_str(ev, "cat"), "sched") != 0)
			continue;
		assert_true(n < 3);
		assert_non_null(procs); /* named before its runs */
		assert_true(cJSON_GetObjectItem(ev, "pid")->valuedouble == pid);
		snprintf(line, sizeof(line), "%s %g %g %g", ph, cJSON_GetObjectItem(ev, "ts")->valuedouble,
			 cJSON_IsNumber(cJSON_GetObjectItem(ev, "dur")) ? cJSON_GetObjectItem(ev, "dur")->valuedouble : -1,
			 cJSON_GetObjectItem(ev, "tid")->valuedouble);
		assert_memory_equal(line, want[n], strlen(line));
		assert_true(strlen(t_str(ev, "name")) > 0);
		n++;
	}
	assert_int_equal(n, 3);
	assert_non_null(cpu3);
	assert_true(cJSON_GetObjectItem(cpu3, "pid")->valuedouble == pid && cJSON_GetObjectItem(cpu3, "tid")->valuedouble == 3);
	/* pids and tids as the text has them (beyond a double's 53 bits) */
	assert_non_null(strstr(r.body, "\"args\":{\"pid\":17293822569102704641,\"tid\":17293822569102704642,\"priority\":7,"
					"\"end_state\":\"suspended\"}"));
	assert_non_null(strstr(r.body, "\"args\":{\"pid\":100,\"tid\":101,\"priority\":5,\"end_state\":null}"));
	cJSON_Delete(j);
	su_resp_free(&r);
}

static void test_sched(void **state)
{
	static const char *const all[] = {
		"1000 4000 3 100 101 5 blocked",
		"5000 2000 3 17293822569102704641 17293822569102704642 7 suspended",
		"8000 -1 3 100 101 5 null",
	};

	(void)state;
	t_expect_sched("cpu=3", all, 3);
	t_expect_sched("cpu=3&start=5500&end=7500", all + 1, 1);
	t_expect_sched("cpu=3&start=7100&end=7900", NULL, 0);
	t_expect_sched("cpu=3&start=100000&end=200000", all + 2, 1);
}

static void test_logs(void **state)
{
	struct su_resp r;
	const cJSON *x;
	cJSON *j;

	(void)state;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/logs", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "logs")), 2);
	x = cJSON_GetArrayItem(t_item(j, "logs"), 0);
	assert_int_equal(t_int(x, "ts"), 2200);
	assert_int_equal(t_int(x, "pid"), PID_A);
	assert_int_equal(t_int(x, "tid"), TID_A);
	assert_string_equal(t_str(x, "message"), "Hello LOG one");
	x = cJSON_GetArrayItem(t_item(j, "logs"), 1);
	assert_int_equal(t_int(x, "ts"), 8800);
	assert_string_equal(t_str(x, "message"), "second log");
	assert_int_equal(t_raw_u64(strstr(r.body, "8800"), "\"pid\":"), PID_B);
	assert_int_equal(t_raw_u64(strstr(r.body, "8800"), "\"tid\":"), TID_B);
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/logs?start=2000&end=3000", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "logs")), 1);
	assert_string_equal(t_str(cJSON_GetArrayItem(t_item(j, "logs"), 0), "message"), "Hello LOG one");
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/logs?start=2201&end=8799", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "logs")), 0);
	cJSON_Delete(j);
	su_resp_free(&r);
}

static void test_search(void **state)
{
	struct su_resp r;
	const cJSON *x;
	cJSON *j;
	int64_t last = -1;
	int n = 0;

	(void)state;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/search?q=tICK", W.small_id);
	cJSON_ArrayForEach(x, t_item(j, "slices"))
	{
		assert_string_equal(t_str(x, "name"), "Tick");
		assert_string_equal(t_str(x, "category"), "cat");
		assert_int_equal(t_int(x, "track_id"), W.trk_a);
		assert_int_equal(t_int(x, "dur"), 500);
		assert_int_equal(t_int(x, "ts"), 10000 + 1000 * n);
		assert_true(t_int(x, "ts") > last);
		last = t_int(x, "ts");
		n++;
	}
	assert_int_equal(n, 10);
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/search?q=OUT", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "slices")), 1);
	x = cJSON_GetArrayItem(t_item(j, "slices"), 0);
	assert_int_equal(t_int(x, "id"), W.id_outer);
	assert_string_equal(t_str(x, "name"), "Outer");
	assert_int_equal(t_int(x, "ts"), 1000);
	assert_int_equal(t_int(x, "dur"), 8000);
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/search?q=no%%20such%%20name", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "slices")), 0);
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/search?q=ick&limit=3", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "slices")), 3);
	assert_true(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* One /stats name as "count total max" (or NULL when absent). */
static const cJSON *t_stat(const cJSON *j, const char *name, char *out, size_t n)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, t_item(j, "names"))
	{
		if (strcmp(t_str(x, "name"), name) == 0) {
			t_fmt(out, n, "%" PRId64 " %" PRId64 " %" PRId64 " %s", t_int(x, "count"), t_int(x, "total_dur"),
			      t_int(x, "max_dur"), t_str(x, "category"));
			return x;
		}
	}
	return NULL;
}

static void test_stats(void **state)
{
	struct su_resp r;
	char s[128];
	cJSON *j;

	(void)state;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/stats", W.small_id);
	assert_non_null(t_stat(j, "Tick", s, sizeof(s)));
	assert_string_equal(s, "10 5000 500 cat");
	assert_non_null(t_stat(j, "Outer", s, sizeof(s)));
	assert_string_equal(s, "1 8000 8000 cat");
	assert_non_null(t_stat(j, "Work", s, sizeof(s)));
	assert_string_equal(s, "1 2000 2000 cat2");
	assert_non_null(t_stat(j, "Mark", s, sizeof(s)));
	assert_string_equal(s, "1 0 0 cat");
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_get_json(&r, "/api/traces/%" PRId64 "/stats?start=10000&end=12000", W.small_id);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "names")), 1);
	assert_non_null(t_stat(j, "Tick", s, sizeof(s)));
	assert_string_equal(s, "3 1500 500 cat");
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* A request from another thread, while the test moves files. */
struct t_later {
	char path[256];
	struct su_resp r;
	int ok;
};

static void *t_later_get(void *arg)
{
	struct t_later *l = arg;
	struct su_req q = { "GET", l->path, NULL, NULL, 0, 0, 0 };

	l->ok = su_request(W.srv.port, &q, &l->r, 60000) == 0;
	return NULL;
}

/* A trace's database missing from its name for a moment, as while an
 * ingest that started again at its end renames the new one into place:
 * a request in that moment waits for it, never answers 500. */
static void test_database_replaced(void **state)
{
	char db[600], away[620];
	struct t_later l = { { 0 }, { 0 }, 0 };
	pthread_t t;
	cJSON *j;

	(void)state;
	t_fmt(db, sizeof(db), "%s/traces/%" PRId64 "/trace.db", W.data, W.small_id);
	t_fmt(away, sizeof(away), "%s.away", db);
	assert_int_equal(rename(db, away), 0);
	/* a window no earlier request asked for: not from the reply cache */
	t_fmt(l.path, sizeof(l.path), "/api/traces/%" PRId64 "/stats?start=10001&end=12000", W.small_id);
	assert_int_equal(pthread_create(&t, NULL, t_later_get, &l), 0);
	su_sleep_ms(100);
	assert_int_equal(rename(away, db), 0);
	pthread_join(t, NULL);
	assert_true(l.ok);
	if (l.r.status != 200)
		fail_msg("a database missing a moment answered %d: %.300s", l.r.status, l.r.body);
	j = t_json(&l.r);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "names")), 1);
	cJSON_Delete(j);
	su_resp_free(&l.r);
}

/* POST /query with sql; returns the reply (caller frees). */
static void t_sql(const char *sql, struct su_resp *r)
{
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/query", W.small_id);
	t_req(W.srv.port, "POST", path, "Content-Type: text/plain\r\n", sql, strlen(sql), r);
}

static void test_query(void **state)
{
	static const char *const refused[] = {
		"INSERT INTO meta VALUES ('x', 1)",
		"DELETE FROM slices",
		"UPDATE slices SET dur = 0",
		"DROP TABLE slices",
		"ATTACH DATABASE ':memory:' AS other",
		"ATTACH DATABASE '/tmp/ts-server-test-attach.db' AS other",
		"PRAGMA user_version = 7",
		"PRAGMA table_info(slices)",
		"CREATE TABLE t (x)",
		"CREATE TEMP TABLE t (x)",
		"CREATE TEMP VIEW v AS SELECT 1",
		"SELECT load_extension('/tmp/nothing.so')",
		"SELECT 1; SELECT 2",
		"SELECT 1; DELETE FROM slices",
		"",
	};
	struct su_resp r;
	const cJSON *row;
	cJSON *j;
	size_t i;

	(void)state;
	t_sql("SELECT name, ts, dur FROM slice_view WHERE name = 'Tick' ORDER BY ts LIMIT 2", &r);
	assert_int_equal(r.status, 200);
	j = t_json(&r);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "columns")), 3);
	assert_string_equal(cJSON_GetArrayItem(t_item(j, "columns"), 0)->valuestring, "name");
	assert_string_equal(cJSON_GetArrayItem(t_item(j, "columns"), 2)->valuestring, "dur");
	assert_int_equal(cJSON_GetArraySize(t_item(j, "rows")), 2);
	row = cJSON_GetArrayItem(t_item(j, "rows"), 1);
	assert_string_equal(cJSON_GetArrayItem(row, 0)->valuestring, "Tick");
	assert_true(cJSON_GetArrayItem(row, 1)->valuedouble == 11000);
	assert_true(cJSON_GetArrayItem(row, 2)->valuedouble == 500);
	assert_false(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_Delete(j);
	su_resp_free(&r);
	/* a trailing semicolon is still one statement; 64-bit values exact */
	t_sql("SELECT value FROM counters WHERE value > 1000000;\n", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "[[5000000000000000001]]"));
	su_resp_free(&r);
	/* the row limit */
	t_sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) SELECT x FROM c", &r);
	assert_int_equal(r.status, 200);
	j = t_json(&r);
	assert_int_equal(cJSON_GetArraySize(t_item(j, "rows")), 10000);
	assert_true(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_Delete(j);
	su_resp_free(&r);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char what[160];

		t_fmt(what, sizeof(what), "POST query '%s'", refused[i]);
		t_sql(refused[i], &r);
		if (r.status < 400 || r.status >= 500)
			fail_msg("%s: expected a 4xx refusal, got %d: %.200s", what, r.status, r.body);
		t_expect_error(&r, r.status, NULL, what);
		su_resp_free(&r);
	}
	t_sql("SELEC 1", &r);
	t_expect_error(&r, 400, NULL, "bad SQL");
	su_resp_free(&r);
	t_sql("SELECT * FROM no_such_table", &r);
	t_expect_error(&r, 400, NULL, "unknown table");
	su_resp_free(&r);
	/* nothing was written */
	t_sql("SELECT count(*) FROM slices", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "[[15]]"));
	su_resp_free(&r);
	assert_int_equal(access("/tmp/ts-server-test-attach.db", F_OK), -1);
	/* a body over 64 KiB */
	{
		size_t n = 70000;
		char *big = malloc(n + 1);

		assert_non_null(big);
		memset(big, ' ', n);
		memcpy(big, "SELECT 1", 8);
		big[n] = '\0';
		t_sql(big, &r);
		t_expect_error(&r, 413, NULL, "a 70 kB statement");
		su_resp_free(&r);
		free(big);
	}
}

/* A statement running past the time limit is stopped: 422. */
static void test_query_time_limit(void **state)
{
	struct su_resp r;
	double t0 = su_now();

	(void)state;
	t_sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", &r);
	t_expect_error(&r, 422, "limit_exceeded", "an endless query");
	su_resp_free(&r);
	assert_true(su_now() - t0 < 15);
	/* the server still answers */
	t_sql("SELECT 1", &r);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
}

/* ---- level of detail on the generated trace ----------------------------------- */

/* Items of one depth starting in one pixel column that a summarised reply
 * may hold: a bucket gives at most two (its longest slice and a summary),
 * and a column can touch the edges of two buckets. */
#ifndef MAX_PER_COLUMN
#define MAX_PER_COLUMN 3
#endif

struct lod_check {
	int64_t track, s, e, res;
	int whole;         /* the window is the whole trace: totals must match */
	size_t items;      /* items returned */
	size_t merged;     /* of which summaries */
	int max_per_col;   /* most items of one depth in one pixel column */
};

/* Slices per depth of a track of the generated trace, through POST /query. */
static void t_depth_counts(int64_t track, int64_t *counts, int max)
{
	struct su_resp r;
	char sql[200], path[64];
	const cJSON *row;
	cJSON *j;

	t_fmt(sql, sizeof(sql), "SELECT depth, count(*) FROM slices WHERE track_id = %" PRId64 " GROUP BY depth", track);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/query", W.gen_id);
	t_req(W.srv.port, "POST", path, NULL, sql, strlen(sql), &r);
	assert_int_equal(r.status, 200);
	j = t_json(&r);
	memset(counts, 0, sizeof(*counts) * (size_t)max);
	cJSON_ArrayForEach(row, t_item(j, "rows"))
	{
		int d = (int)cJSON_GetArrayItem(row, 0)->valuedouble;

		assert_true(d >= 0 && d < max);
		counts[d] = (int64_t)cJSON_GetArrayItem(row, 1)->valuedouble;
	}
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* Column of an item: 0 for one starting before the window, else 1 + pixel. */
static size_t t_col(const struct lod_check *c, int64_t ts)
{
	return ts < c->s ? 0 : (size_t)((ts - c->s) / c->res) + 1;
}

/* Prints the items of one depth starting in one pixel column. */
static void t_print_column(const cJSON *j, const struct lod_check *c, int64_t depth, size_t col)
{
	const cJSON *x;

	print_message("track %" PRId64 " [%" PRId64 ", %" PRId64 "] res %" PRId64 ", depth %" PRId64 " column %zu:\n",
		      c->track, c->s, c->e, c->res, depth, col);
	cJSON_ArrayForEach(x, t_item(j, "slices"))
	{
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "merged");

		if (t_int(x, "depth") == depth && t_col(c, t_int(x, "ts")) == col)
			print_message("  id %" PRId64 " ts %" PRId64 " dur %" PRId64 " merged %d %s\n", t_int(x, "id"),
				      t_int(x, "ts"), t_int(x, "dur"), m ? (int)m->valuedouble : 0, t_str(x, "name"));
	}
}

/*
 * /slices with resolution = window / 1000: items ordered by ts, each
 * overlapping the window, at most 3 of one depth starting in one pixel
 * column; over the whole trace every slice is counted exactly once
 * (a summary counts "merged").
 */
static void t_check_lod_slices(struct lod_check *c)
{
	enum { MAXD = 256 };
	int64_t want[MAXD], got[MAXD] = { 0 }, last_ts = INT64_MIN;
	size_t ncol = (size_t)((c->e - c->s) / c->res) + 3;
	unsigned char *cnt = calloc(MAXD * ncol, 1);
	struct su_resp r;
	const cJSON *x;
	cJSON *j;
	int d;

	assert_non_null(cnt);
	j = t_get_json(&r,
		       "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=%" PRId64 "&end=%" PRId64
		       "&resolution=%" PRId64 "&limit=1000000",
		       W.gen_id, c->track, c->s, c->e, c->res);
	assert_false(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_ArrayForEach(x, t_item(j, "slices"))
	{
		int64_t ts = t_int(x, "ts"), dur = t_int(x, "dur"), depth = t_int(x, "depth");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "merged");
		size_t col = t_col(c, ts);

		assert_true(depth >= 0 && depth < MAXD);
		if (ts < last_ts)
			fail_msg("track %" PRId64 ": items out of ts order (%" PRId64 " after %" PRId64 ")", c->track, ts,
				 last_ts);
		last_ts = ts;
		if (ts > c->e || (dur >= 0 && ts + dur < c->s))
			fail_msg("track %" PRId64 " window [%" PRId64 ", %" PRId64 "] res %" PRId64 ": item %s ts %" PRId64
				 " dur %" PRId64 " depth %" PRId64 " merged %d lies outside",
				 c->track, c->s, c->e, c->res, t_str(x, "name"), ts, dur, depth,
				 m ? (int)m->valuedouble : 0);
		if (m) {
			assert_true(t_int(x, "merged") >= 1);
			c->merged++;
		}
		got[depth] += m ? t_int(x, "merged") : 1;
		if (col < ncol && ++cnt[(size_t)depth * ncol + col] > c->max_per_col)
			c->max_per_col = cnt[(size_t)depth * ncol + col];
		if (col < ncol && cnt[(size_t)depth * ncol + col] > MAX_PER_COLUMN)
			t_print_column(j, c, depth, col);
		c->items++;
	}
	if (c->whole) {
		t_depth_counts(c->track, want, MAXD);
		for (d = 0; d < MAXD; d++)
			if (want[d] != got[d])
				fail_msg("track %" PRId64 " depth %d: the reply stands for %" PRId64 " slices, the trace has %" PRId64,
					 c->track, d, got[d], want[d]);
	}
	cJSON_Delete(j);
	su_resp_free(&r);
	free(cnt);
}

/*
 * /counters with resolution: the first item may be the point before the
 * window; every other lies in it (a summary from ts to last_ts), at most 3
 * start in one pixel column, and over the whole trace the items stand for
 * every point.
 */
static void t_check_lod_counters(struct lod_check *c)
{
	size_t ncol = (size_t)((c->e - c->s) / c->res) + 3, i = 0;
	unsigned char *cnt = calloc(ncol, 1);
	int64_t total = 0, last_ts = INT64_MIN;
	struct su_resp r;
	const cJSON *x;
	cJSON *j;

	assert_non_null(cnt);
	j = t_get_json(&r,
		       "/api/traces/%" PRId64 "/counters?track=%" PRId64 "&start=%" PRId64 "&end=%" PRId64
		       "&resolution=%" PRId64 "&limit=1000000",
		       W.gen_id, c->track, c->s, c->e, c->res);
	assert_false(cJSON_IsTrue(t_item(j, "truncated")));
	cJSON_ArrayForEach(x, t_item(j, "points"))
	{
		int64_t ts = t_int(x, "ts");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "merged");
		int64_t last = m ? t_int(x, "last_ts") : ts;
		size_t col = t_col(c, ts);

		if (ts < last_ts)
			fail_msg("counter track %" PRId64 ": points out of order", c->track);
		last_ts = last;
		if ((i > 0 && ts < c->s) || last > c->e)
			fail_msg("counter track %" PRId64 " window [%" PRId64 ", %" PRId64 "] res %" PRId64 ": item %zu [%" PRId64
				 ", %" PRId64 "] merged %d lies outside",
				 c->track, c->s, c->e, c->res, i, ts, last, m ? (int)m->valuedouble : 0);
		if (m) {
			double lo = t_item(x, "min")->valuedouble, hi = t_item(x, "max")->valuedouble;
			double v = t_item(x, "value")->valuedouble;

			assert_true(t_int(x, "merged") >= 2);
			assert_true(lo <= v && v <= hi);
			c->merged++;
		}
		total += m ? t_int(x, "merged") : 1;
		if (col < ncol && ++cnt[col] > c->max_per_col)
			c->max_per_col = cnt[col];
		c->items++;
		i++;
	}
	if (c->whole) {
		struct su_resp q;
		char sql[128], path[64], want[64];

		t_fmt(sql, sizeof(sql), "SELECT count(*) FROM counters WHERE track_id = %" PRId64, c->track);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/query", W.gen_id);
		t_req(W.srv.port, "POST", path, NULL, sql, strlen(sql), &q);
		t_fmt(want, sizeof(want), "[[%" PRId64 "]]", total);
		if (strstr(q.body, want) == NULL)
			fail_msg("counter track %" PRId64 ": the reply stands for %" PRId64 " points, the trace has %s",
				 c->track, total, q.body);
		su_resp_free(&q);
	}
	cJSON_Delete(j);
	su_resp_free(&r);
	free(cnt);
}

/* The generated trace's time range and its slice and counter tracks. */
static void t_gen_tracks(int64_t *s, int64_t *e, int64_t *slice_tracks, size_t *ns, int64_t *counter_tracks,
			 size_t *nc)
{
	struct su_resp r;
	const cJSON *p, *x;
	cJSON *j;

	j = t_get_json(&r, "/api/traces/%" PRId64, W.gen_id);
	*s = t_int(j, "start_ns");
	*e = t_int(j, "end_ns");
	cJSON_Delete(j);
	su_resp_free(&r);
	*ns = *nc = 0;
	j = t_get_json(&r, "/api/traces/%" PRId64 "/tracks", W.gen_id);
	cJSON_ArrayForEach(p, t_item(j, "processes"))
	{
		cJSON_ArrayForEach(x, t_item(p, "threads"))
		{
			if (!t_is_null(x, "track_id") && *ns < 32)
				slice_tracks[(*ns)++] = t_int(x, "track_id");
		}
		cJSON_ArrayForEach(x, t_item(p, "async_tracks"))
		{
			if (*ns < 32)
				slice_tracks[(*ns)++] = t_int(x, "track_id");
		}
		cJSON_ArrayForEach(x, t_item(p, "counter_tracks"))
		{
			if (*nc < 32)
				counter_tracks[(*nc)++] = t_int(x, "track_id");
		}
	}
	cJSON_Delete(j);
	su_resp_free(&r);
	assert_true(*ns >= 8 && *nc >= 2);
}

/* slices?tracks=A,B,...: each element is byte for byte the reply of
 * slices?track= with the same window, resolution and limit, in order. */
static void test_slices_batch(void **state)
{
	int64_t s, e, st[32], ct[32];
	size_t ns, nc, i, z;
	const int64_t res[] = { 0, 1000, 100000 };
	char list[512], path[768];
	struct su_resp r, one;
	size_t off, at;

	(void)state;
	t_gen_tracks(&s, &e, st, &ns, ct, &nc);
	for (z = 0; z < sizeof(res) / sizeof(res[0]); z++) {
		off = 0;
		for (i = 0; i < ns; i++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%" PRId64, i ? "," : "", st[ns - 1 - i]);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?tracks=%s&start=%" PRId64 "&end=%" PRId64
		      "&resolution=%" PRId64 "&limit=5000", W.gen_id, list, s + (e - s) / 3, s + (e - s) / 2, res[z]);
		t_req(W.srv.port, "GET", path, NULL, NULL, 0, &r);
		assert_int_equal(r.status, 200);
		assert_true(r.body_len > 12 && memcmp(r.body, "{\"tracks\":[", 11) == 0);
		at = 11;
		for (i = 0; i < ns; i++) {
			t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=%" PRId64
			      "&end=%" PRId64 "&resolution=%" PRId64 "&limit=5000", W.gen_id, st[ns - 1 - i],
			      s + (e - s) / 3, s + (e - s) / 2, res[z]);
			t_req(W.srv.port, "GET", path, NULL, NULL, 0, &one);
			assert_int_equal(one.status, 200);
			if (at + one.body_len > r.body_len || memcmp(r.body + at, one.body, one.body_len) != 0)
				fail_msg("batch element %zu (track %" PRId64 ", resolution %" PRId64 ") differs from its own reply",
					 i, st[ns - 1 - i], res[z]);
			at += one.body_len + (i + 1 < ns);
			su_resp_free(&one);
		}
		assert_true(at + 2 == r.body_len && memcmp(r.body + at, "]}", 2) == 0);
		su_resp_free(&r);
	}
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?tracks=1,,2", W.gen_id);
	t_get_error(W.srv.port, "GET", path, 400, "bad_parameter");
}

/* format=columns holds the same items as the row form, in the same order:
 * each column an array, names and categories indexes into "strings". */
static void test_slices_columns(void **state)
{
	int64_t s, e, st[32], ct[32];
	size_t ns, nc, i, z;
	const int64_t res[] = { 0, 5000, 1000000 };
	struct su_resp r1, r2;

	(void)state;
	t_gen_tracks(&s, &e, st, &ns, ct, &nc);
	for (z = 0; z < sizeof(res) / sizeof(res[0]); z++) {
		for (i = 0; i < ns; i += 3) {
#define SLICES_Q "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=%" PRId64 "&end=%" PRId64 "&resolution=%" PRId64 "&limit=3000%s"
			cJSON *rows = t_get_json(&r1, SLICES_Q, W.gen_id, st[i], s, s + (e - s) / 4, res[z], "");
			cJSON *cols = t_get_json(&r2, SLICES_Q, W.gen_id, st[i], s, s + (e - s) / 4, res[z], "&format=columns");
#undef SLICES_Q
			const cJSON *list = t_item(rows, "slices"), *strs = t_item(cols, "strings"), *x;
			int k = 0;

			assert_true(cJSON_IsTrue(t_item(cols, "columns")));
			assert_int_equal(cJSON_IsTrue(t_item(rows, "truncated")), cJSON_IsTrue(t_item(cols, "truncated")));
			assert_int_equal(cJSON_GetArraySize(t_item(cols, "id")), cJSON_GetArraySize(list));
			cJSON_ArrayForEach(x, list)
			{
				int name = cJSON_GetArrayItem(t_item(cols, "name"), k)->valueint;
				int cat = cJSON_GetArrayItem(t_item(cols, "category"), k)->valueint;
				int64_t merged = cJSON_GetObjectItem(x, "merged") ? t_int(x, "merged") : 0;

				assert_int_equal(t_int(x, "id"), (int64_t)cJSON_GetArrayItem(t_item(cols, "id"), k)->valuedouble);
				assert_int_equal(t_int(x, "ts"), (int64_t)cJSON_GetArrayItem(t_item(cols, "ts"), k)->valuedouble);
				assert_int_equal(t_int(x, "dur"), (int64_t)cJSON_GetArrayItem(t_item(cols, "dur"), k)->valuedouble);
				assert_int_equal(t_int(x, "depth"), cJSON_GetArrayItem(t_item(cols, "depth"), k)->valueint);
				assert_int_equal(merged, cJSON_GetArrayItem(t_item(cols, "merged"), k)->valueint);
				assert_string_equal(t_str(x, "name"), cJSON_GetArrayItem(strs, name)->valuestring);
				assert_string_equal(t_str(x, "category"), cJSON_GetArrayItem(strs, cat)->valuestring);
				k++;
			}
			cJSON_Delete(rows);
			cJSON_Delete(cols);
			su_resp_free(&r1);
			su_resp_free(&r2);
		}
	}
}

static void test_resolution_slices(void **state)
{
	int64_t s, e, st[32], ct[32];
	size_t ns, nc, i, merged = 0, items = 0;
	int worst = 0, k;

	(void)state;
	t_gen_tracks(&s, &e, st, &ns, ct, &nc);
	for (i = 0; i < ns; i++) {
		/* the whole trace, then two windows inside it */
		for (k = 0; k < 3; k++) {
			int64_t span = e - s, ws = k == 0 ? s : s + span / 3 + k * 7919;
			int64_t we = k == 0 ? e : ws + span / (k == 1 ? 20 : 400);
			struct lod_check c = { st[i], ws, we, (we - ws) / 1000, k == 0, 0, 0, 0 };

			t_check_lod_slices(&c);
			/* a reply without summaries is the exact list, however dense */
			if (c.merged > 0 && c.max_per_col > MAX_PER_COLUMN)
				fail_msg("track %" PRId64 " window [%" PRId64 ", %" PRId64 "]: %d items of one depth in one "
					 "pixel column",
					 c.track, ws, we, c.max_per_col);
			if (c.max_per_col > worst)
				worst = c.max_per_col;
			merged += c.merged;
			items += c.items;
		}
	}
	print_message("resolution: %zu tracks x 3 windows, %zu items, %zu merged, at most %d per pixel column\n", ns,
		      items, merged, worst);
	assert_true(merged > 0);
}

static void test_resolution_counters(void **state)
{
	int64_t s, e, st[32], ct[32];
	size_t ns, nc, i, merged = 0;
	int k;

	(void)state;
	t_gen_tracks(&s, &e, st, &ns, ct, &nc);
	for (i = 0; i < nc; i++) {
		for (k = 0; k < 3; k++) {
			int64_t span = e - s, ws = k == 0 ? s : s + span / 3 + k * 7919;
			int64_t we = k == 0 ? e : ws + span / (k == 1 ? 20 : 400);
			struct lod_check c = { ct[i], ws, we, (we - ws) / 1000, k == 0, 0, 0, 0 };

			t_check_lod_counters(&c);
			if (c.merged > 0 && c.max_per_col > MAX_PER_COLUMN)
				fail_msg("counter track %" PRId64 " window [%" PRId64 ", %" PRId64 "]: %d items in one pixel "
					 "column",
					 c.track, ws, we, c.max_per_col);
			/* up to 4096 points (docs/API.md) come back exactly */
			if (c.items > 4097 && c.merged == 0)
				fail_msg("counter track %" PRId64 ": %zu points and no summary", c.track, c.items);
			merged += c.merged;
		}
	}
	(void)merged;
}

/* ---- errors ------------------------------------------------------------------- */

static void test_bad_parameters(void **state)
{
	static const struct {
		const char *query;
		const char *code;
	} cases[] = {
		{ "slices?track=%T&start=abc", "bad_parameter" },
		{ "slices?track=%T&start=12x", "bad_parameter" },
		{ "slices?track=%T&start=", "bad_parameter" },
		{ "slices?track=%T&start=99999999999999999999", "bad_parameter" },
		{ "slices?track=%T&start=-99999999999999999999", "bad_parameter" },
		{ "slices?track=%T&end=1e5", "bad_parameter" },
		{ "slices?track=%T&start=0x10", "bad_parameter" },
		{ "slices?track=%T&start=10&end=5", "bad_parameter" },
		{ "slices?track=%T&limit=0", "bad_parameter" },
		{ "slices?track=%T&limit=1000001", "bad_parameter" },
		{ "slices?track=%T&limit=-1", "bad_parameter" },
		{ "slices?track=%T&resolution=-1", "bad_parameter" },
		{ "slices?track=%T&resolution=abc", "bad_parameter" },
		{ "slices", "missing_parameter" },
		{ "slices?start=0&end=10", "missing_parameter" },
		{ "slices?track=abc", "bad_parameter" },
		{ "slices?track=0", "bad_parameter" },
		{ "slices?track=-3", "bad_parameter" },
		{ "counters", "missing_parameter" },
		{ "counters?track=%U&start=zz", "bad_parameter" },
		{ "sched", "missing_parameter" },
		{ "sched?cpu=70000", "bad_parameter" },
		{ "sched?cpu=-1", "bad_parameter" },
		{ "logs?start=5&end=4", "bad_parameter" },
		{ "flows?end=abc", "bad_parameter" },
		{ "stats?limit=0", "bad_parameter" },
		{ "search", "missing_parameter" },
		{ "search?q=", "missing_parameter" },
		{ "search?q=a&limit=0", "bad_parameter" },
		/* a malformed tracks list: an empty id anywhere, the last one too */
		{ "slices?tracks=%T,", "bad_parameter" },
		{ "slices?tracks=,%T", "bad_parameter" },
		{ "area?tracks=%T,", "bad_parameter" },
		{ "flame?tracks=%T,,%T", "bad_parameter" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char q[256], path[320];
		const char *t = strstr(cases[i].query, "%T"), *u = strstr(cases[i].query, "%U");

		if (t || u)
			t_fmt(q, sizeof(q), "%.*s%" PRId64 "%s", (int)((t ? t : u) - cases[i].query), cases[i].query,
			      t ? W.trk_a : W.trk_used, (t ? t : u) + 2);
		else
			t_fmt(q, sizeof(q), "%s", cases[i].query);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/%s", W.small_id, q);
		t_get_error(W.srv.port, "GET", path, 400, cases[i].code);
	}
	/* unknown tracks are 404, not 400 */
	{
		char path[128];

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=999999", W.small_id);
		t_get_error(W.srv.port, "GET", path, 404, "not_found");
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/counters?track=999999", W.small_id);
		t_get_error(W.srv.port, "GET", path, 404, "not_found");
	}
}

static void test_not_found_and_methods(void **state)
{
	static const struct {
		const char *method, *path;
		int status;
	} cases[] = {
		{ "GET", "/api/traces/999999", 404 },
		{ "GET", "/api/traces/999999/tracks", 404 },
		{ "GET", "/api/traces/999999/slices?track=1", 404 },
		{ "GET", "/api/traces/999999/file", 404 },
		{ "DELETE", "/api/traces/999999", 404 },
		{ "POST", "/api/traces/999999/query", 404 },
		{ "GET", "/api/traces/abc", 404 },
		{ "GET", "/api/traces/0", 404 },
		{ "GET", "/api/traces/-1", 404 },
		{ "GET", "/api/traces/99999999999999999999999", 404 },
		{ "GET", "/api/nope", 404 },
		{ "GET", "/api", 404 },
		{ "GET", "/api/traces/%S/nope", 404 },
		{ "GET", "/api/traces/%S/slices/abc", 404 },
		{ "GET", "/api/traces/%S/slices/1/more", 404 },
		{ "GET", "/api/traces/%S/tracks/1", 404 },
		{ "GET", "/no-such-page.html", 404 },
		{ "PUT", "/api/traces", 405 },
		{ "DELETE", "/api/traces", 405 },
		{ "PATCH", "/api/traces", 405 },
		{ "PUT", "/api/traces/%S", 405 },
		{ "POST", "/api/traces/%S", 405 },
		{ "DELETE", "/api/traces/%S/tracks", 405 },
		{ "POST", "/api/traces/%S/slices?track=1", 405 },
		{ "DELETE", "/api/traces/%S/slices/1", 405 },
		{ "GET", "/api/traces/%S/query", 405 },
		{ "PUT", "/api/traces/%S/file", 405 },
		{ "POST", "/index.html", 405 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *s = strstr(cases[i].path, "%S");
		char path[256];

		if (s)
			t_fmt(path, sizeof(path), "%.*s%" PRId64 "%s", (int)(s - cases[i].path), cases[i].path, W.small_id,
			      s + 2);
		else
			t_fmt(path, sizeof(path), "%s", cases[i].path);
		t_get_error(W.srv.port, cases[i].method, path, cases[i].status,
			    cases[i].status == 404 ? "not_found" : "method_not_allowed");
	}
}

/* Bytes that are not HTTP get an error or a closed connection, and the
 * server goes on. */
static void test_garbage_request(void **state)
{
	static const struct {
		const char *p;
		size_t n;
	} junk[] = {
#define J(s) { s, sizeof(s) - 1 }
		J("NOT HTTP AT ALL\r\n\r\n"),
		J("GET /api/traces HTTP/9.9\r\n\r\n"),
		J("GET /api/traces HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
		J("POST /api/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
		J("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 tls hello\r\n\r\n"),
#undef J
	};
	struct timeval tv = { 10, 0 };
	struct su_resp r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		int fd = su_connect(W.srv.port);
		char buf[4096];
		ssize_t n;

		assert_true(fd >= 0);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		assert_int_equal(send(fd, junk[i].p, junk[i].n, MSG_NOSIGNAL), (ssize_t)junk[i].n);
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			fail_msg("junk request %zu: no answer and no close within 10 s", i);
		if (n > 12 && strncmp(buf, "HTTP/1.", 7) == 0) {
			int status = atoi(buf + 9);

			if ((status < 400 || status >= 500) && status != 505)
				fail_msg("junk request %zu: status %d", i, status);
		}
		close(fd);
	}
	t_req(W.srv.port, "GET", "/api/traces", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
}

/* Several requests on one connection (keep-alive). */
static void test_keep_alive(void **state)
{
	int fd = su_connect(W.srv.port), i;
	char path[128];

	(void)state;
	assert_true(fd >= 0);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, W.small_id, W.trk_a);
	for (i = 0; i < 5; i++) {
		struct su_req q = { "GET", i % 2 ? "/api/traces" : path, NULL, NULL, 0, 0, 1 };
		struct su_resp r;

		assert_int_equal(su_exchange(fd, &q, &r, 10000), 0);
		assert_int_equal(r.status, 200);
		assert_false(r.closing);
		su_resp_free(&r);
	}
	close(fd);
}

/* ---- uploads that go wrong ----------------------------------------------------- */

static void t_req_chunked(int port, const char *path, const char *headers, const void *body, size_t n,
			  struct su_resp *r)
{
	struct su_req q = { "POST", path, headers, body, n, 1, 0 };

	if (su_request(port, &q, r, 60000) != 0)
		fail_msg("chunked POST %s: no well-formed reply", path);
}

static void test_empty_and_bad_uploads(void **state)
{
	static const char *const bnd = "ts-bnd-0123456789";
	static const char junk[] = "this is a text file, not a trace at all; nothing in here is FXT or XRay\n";
	char mp[128];
	struct su_buf b = { 0 };
	struct su_resp r;
	int64_t first_before, ids[4];
	cJSON *j;

	(void)state;
	assert_true(t_list_ids(W.srv.port, NULL, ids, 1) == 1);
	first_before = ids[0];
	t_fmt(mp, sizeof(mp), "Content-Type: multipart/form-data; boundary=%s\r\n", bnd);

	t_upload(W.srv.port, "", NULL, "", 0, &r);
	t_expect_error(&r, 400, "empty_upload", "an empty body");
	su_resp_free(&r);
	t_req_chunked(W.srv.port, "/api/traces", NULL, "", 0, &r);
	t_expect_error(&r, 400, "empty_upload", "an empty chunked body");
	su_resp_free(&r);
	t_multipart(&b, bnd, "x", 1, "empty.fxt", "", 0);
	t_req(W.srv.port, "POST", "/api/traces", mp, b.p, b.len, &r);
	t_expect_error(&r, 400, "empty_upload", "a multipart body with an empty file");
	su_resp_free(&r);
	b.len = 0;
	t_multipart(&b, bnd, "only-a-name", 1, NULL, NULL, 0);
	t_req(W.srv.port, "POST", "/api/traces", mp, b.p, b.len, &r);
	t_expect_error(&r, 400, "missing_file", "a multipart body without a file");
	su_resp_free(&r);
	free(b.p);
	t_req(W.srv.port, "POST", "/api/traces", "Content-Type: multipart/form-data\r\n", "abc", 3, &r);
	t_expect_error(&r, 400, NULL, "multipart without a boundary");
	su_resp_free(&r);
	t_upload(W.srv.port, "?format=pdf", NULL, W.small.buf, W.small.len, &r);
	t_expect_error(&r, 400, "bad_parameter", "format=pdf");
	su_resp_free(&r);
	assert_true(t_list_ids(W.srv.port, NULL, ids, 1) == 1);
	assert_int_equal(ids[0], first_before);
	t_expect_spool_empty(W.data, 5);

	/* not a trace: 422 with the failed trace object, a reason, and the
	 * trace stays listed as failed; its data endpoints say not ready */
	t_upload(W.srv.port, "?wait=1&name=junk", NULL, junk, strlen(junk), &r);
	if (r.status != 422)
		fail_msg("not a trace: expected 422, got %d: %.300s", r.status, r.body);
	j = t_json(&r);
	assert_string_equal(t_check_trace_object(j), "failed");
	print_message("not a trace: %s: %s\n", t_str(t_item(j, "error"), "code"),
		      t_str(t_item(j, "error"), "message"));
	ids[0] = t_int(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	j = t_wait_trace(W.srv.port, NULL, ids[0], 5);
	assert_string_equal(t_str(j, "status"), "failed");
	cJSON_Delete(j);
	{
		char path[128];

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", ids[0]);
		t_get_error(W.srv.port, "GET", path, 409, "not_ready");
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=1", ids[0]);
		t_get_error(W.srv.port, "GET", path, 409, "not_ready");
	}
	t_expect_file(W.srv.port, ids[0], junk, strlen(junk));

	/* a trace cut inside its last record is ready, with truncated_bytes */
	t_upload(W.srv.port, "?wait=1&name=cut", NULL, W.small.buf, W.small.len - 12, &r);
	if (r.status != 201)
		fail_msg("a cut trace: expected 201, got %d: %.300s", r.status, r.body);
	j = t_json(&r);
	assert_true(t_int(t_item(j, "diagnostics"), "truncated_bytes") > 0);
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* A second server with --max-upload 1K: 413 before reading (Content-Length
 * known) and while streaming (chunked), nothing left behind. */
static void test_upload_limit(void **state)
{
	static const char *const extra[] = { "--max-upload", "1K", NULL };
	static const char *const bnd = "ts-bnd-limit";
	char data[128], mp[128];
	struct su_buf b = { 0 };
	struct su_server s;
	struct su_resp r;
	uint8_t *big = malloc(65536);
	int64_t ids[8];
	double t0;
	cJSON *j;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', 65536);
	t_fmt(data, sizeof(data), "%s/data-limit", W.root);
	t_start(&s, data, extra);
	t_fmt(mp, sizeof(mp), "Content-Type: multipart/form-data; boundary=%s\r\n", bnd);

	t_upload(s.port, "", NULL, big, 65536, &r);
	t_expect_error(&r, 413, "upload_too_large", "64 KiB with Content-Length");
	su_resp_free(&r);
	t_upload(s.port, "", NULL, big, 1025, &r);
	t_expect_error(&r, 413, "upload_too_large", "1025 bytes with Content-Length");
	su_resp_free(&r);
	t_req_chunked(s.port, "/api/traces", NULL, big, 65536, &r);
	t_expect_error(&r, 413, "upload_too_large", "64 KiB chunked");
	su_resp_free(&r);
	t_req_chunked(s.port, "/api/traces", NULL, big, 1025, &r);
	t_expect_error(&r, 413, "upload_too_large", "1025 bytes chunked");
	su_resp_free(&r);
	t_multipart(&b, bnd, "n", 1, "big.fxt", big, 4096);
	t_req(s.port, "POST", "/api/traces", mp, b.p, b.len, &r);
	t_expect_error(&r, 413, "upload_too_large", "multipart 4 KiB");
	su_resp_free(&r);
	t_req_chunked(s.port, "/api/traces", mp, b.p, b.len, &r);
	t_expect_error(&r, 413, "upload_too_large", "multipart 4 KiB chunked");
	su_resp_free(&r);
	free(b.p);
	/* the refusal comes before the body is read */
	t0 = su_now();
	t_upload(s.port, "", NULL, W.gen.buf, W.gen.len, &r);
	t_expect_error(&r, 413, "upload_too_large", "4.8 MB");
	su_resp_free(&r);
	assert_true(su_now() - t0 < 5);
	t_expect_spool_empty(data, 5);
	assert_int_equal(t_list_ids(s.port, NULL, ids, 8), 0);
	/* exactly the limit is accepted (and fails as not a trace) */
	t_upload(s.port, "?wait=1", NULL, big, 1024, &r);
	if (r.status != 422)
		fail_msg("1024 bytes: expected 422, got %d: %.300s", r.status, r.body);
	j = t_json(&r);
	assert_string_equal(t_check_trace_object(j), "failed");
	cJSON_Delete(j);
	su_resp_free(&r);
	assert_int_equal(t_list_ids(s.port, NULL, ids, 8), 1);
	t_expect_spool_empty(data, 5);
	assert_int_equal(su_server_stop(&s, SIGTERM), 0);
	free(big);
}

/* Starts an upload that promises len bytes and sends only part of them;
 * returns the socket, still open. */
static int t_partial_upload(int port, size_t len, const void *p, size_t sent)
{
	char hdr[256];
	int fd = su_connect(port);

	assert_true(fd >= 0);
	t_fmt(hdr, sizeof(hdr),
	      "POST /api/traces?name=partial HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	      "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
	      len);
	assert_int_equal(send(fd, hdr, strlen(hdr), MSG_NOSIGNAL), (ssize_t)strlen(hdr));
	assert_int_equal(send(fd, p, sent, MSG_NOSIGNAL), (ssize_t)sent);
	return fd;
}

/* A client that goes away mid-upload (FIN or RST) leaves nothing behind. */
static void test_disconnect_mid_upload(void **state)
{
	int64_t before[4], after[4];
	char spool[256];
	int k;

	(void)state;
	assert_int_equal(t_list_ids(W.srv.port, NULL, before, 1), 1);
	t_fmt(spool, sizeof(spool), "%s/spool", W.data);
	for (k = 0; k < 2; k++) {
		int fd = t_partial_upload(W.srv.port, 1 << 20, W.gen.buf, 100 * 1024);
		double deadline = su_now() + 5;

		/* the upload is being spooled */
		while (t_spool_uploads(spool) < 1 && su_now() < deadline)
			su_sleep_ms(10);
		assert_int_equal(t_spool_uploads(spool), 1);
		if (k == 1) {
			struct linger lg = { 1, 0 }; /* close with RST */

			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(fd);
		t_expect_spool_empty(W.data, 5);
	}
	assert_int_equal(t_list_ids(W.srv.port, NULL, after, 1), 1);
	assert_int_equal(after[0], before[0]);
}

/* ---- concurrency -------------------------------------------------------------- */

struct conc_upload {
	int port;
	struct fxtw w;
	char name[32];
	struct su_resp r;
	int rc;
};

static void *conc_upload_main(void *arg)
{
	struct conc_upload *u = arg;
	char path[64];
	struct su_req q = { "POST", path, "Content-Type: application/octet-stream\r\n", NULL, 0, 0, 0 };

	snprintf(path, sizeof(path), "/api/traces?wait=1&name=%s", u->name);
	q.body = u->w.buf;
	q.body_len = u->w.len;
	u->rc = su_request(u->port, &q, &u->r, 120000);
	return NULL;
}

struct conc_query {
	int port;
	const char *path;
	const char *want; /* the reply body every answer must equal */
	int bad;          /* answers that differed */
};

static void *conc_query_main(void *arg)
{
	struct conc_query *c = arg;
	int i;

	for (i = 0; i < 40; i++) {
		struct su_req q = { "GET", c->path, NULL, NULL, 0, 0, 0 };
		struct su_resp r;

		if (su_request(c->port, &q, &r, 30000) != 0 || r.status != 200 || strcmp(r.body, c->want) != 0)
			c->bad++;
		su_resp_free(&r);
	}
	return NULL;
}

/* Four uploads at once all end ready with their own bytes, while other
 * clients read another trace and always get the same reply. */
static void test_concurrent_uploads(void **state)
{
	struct conc_upload up[4];
	struct conc_query cq[2];
	pthread_t th[6];
	struct su_resp ref;
	char path[160];
	int64_t ids[4];
	int i, k;

	(void)state;
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=1&resolution=100000", W.gen_id);
	t_req(W.srv.port, "GET", path, NULL, NULL, 0, &ref);
	assert_int_equal(ref.status, 200);
	for (i = 0; i < 4; i++) {
		memset(&up[i], 0, sizeof(up[i]));
		up[i].port = W.srv.port;
		t_write_generated(&up[i].w, 30000, 4, 100 + (uint64_t)i);
		snprintf(up[i].name, sizeof(up[i].name), "conc-%d", i);
	}
	for (i = 0; i < 2; i++)
		cq[i] = (struct conc_query){ W.srv.port, path, ref.body, 0 };
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, conc_upload_main, &up[i]), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[4 + i], NULL, conc_query_main, &cq[i]), 0);
	for (i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 4; i++) {
		cJSON *j;

		if (up[i].rc != 0 || up[i].r.status != 201)
			fail_msg("concurrent upload %d: rc %d status %d: %.300s", i, up[i].rc, up[i].r.status,
				 up[i].r.body ? up[i].r.body : "");
		j = t_json(&up[i].r);
		assert_string_equal(t_check_trace_object(j), "ready");
		assert_string_equal(t_str(j, "name"), up[i].name);
		assert_int_equal(t_int(j, "size_bytes"), up[i].w.len);
		ids[i] = t_int(j, "id");
		for (k = 0; k < i; k++)
			assert_true(ids[k] != ids[i]);
		cJSON_Delete(j);
		t_expect_file(W.srv.port, ids[i], up[i].w.buf, up[i].w.len);
		su_resp_free(&up[i].r);
		fxtw_fini(&up[i].w);
	}
	for (i = 0; i < 2; i++)
		if (cq[i].bad)
			fail_msg("reader %d: %d of 40 replies differed from the first", i, cq[i].bad);
	su_resp_free(&ref);
}

/* ---- token -------------------------------------------------------------------- */

static void test_token(void **state)
{
	static const char token[] = "0123456789abcdef-sesame";
	static const char *const wrong[] = {
		"Authorization: Bearer 0123456789abcdef-sesamE\r\n",
		"Authorization: Bearer 0123456789abcdef-sesame-and-more\r\n",
		"Authorization: Bearer 0123456789abcdef\r\n",
		"Authorization: Bearer \r\n",
		"Authorization: Basic MDEyMzQ1Njc4OWFiY2RlZi1zZXNhbWU=\r\n",
		"Authorization: 0123456789abcdef-sesame\r\n",
	};
	const char *good = "Authorization: Bearer 0123456789abcdef-sesame\r\n";
	char data[128], tf[128], opt[160], hv[64];
	const char *extra[3] = { "--token-file", tf, NULL };
	struct su_server s;
	struct su_resp r;
	int64_t ids[4];
	size_t i;
	cJSON *j;

	(void)state;
	t_fmt(data, sizeof(data), "%s/data-token", W.root);
	t_fmt(tf, sizeof(tf), "%s/token", W.root);
	t_fmt(opt, sizeof(opt), "%s\n", token);
	t_write_file(tf, opt, strlen(opt));
	t_start(&s, data, extra);

	t_req(s.port, "GET", "/api/traces", NULL, NULL, 0, &r);
	t_expect_error(&r, 401, "unauthorized", "no token");
	assert_non_null(su_header(&r, "WWW-Authenticate", hv, sizeof(hv)));
	assert_non_null(strstr(hv, "Bearer"));
	su_resp_free(&r);
	for (i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		t_req(s.port, "GET", "/api/traces", wrong[i], NULL, 0, &r);
		t_expect_error(&r, 401, "unauthorized", wrong[i]);
		su_resp_free(&r);
	}
	t_req(s.port, "GET", "/api/traces", good, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
	/* an upload without the token stores nothing */
	t_upload(s.port, "?wait=1", NULL, W.small.buf, W.small.len, &r);
	t_expect_error(&r, 401, "unauthorized", "upload without a token");
	su_resp_free(&r);
	t_expect_spool_empty(data, 5);
	assert_int_equal(t_list_ids(s.port, good, ids, 4), 0);
	t_upload(s.port, "?wait=1", good, W.small.buf, W.small.len, &r);
	assert_int_equal(r.status, 201);
	j = t_json(&r);
	t_fmt(opt, sizeof(opt), "/api/traces/%" PRId64 "/tracks", t_int(j, "id"));
	cJSON_Delete(j);
	su_resp_free(&r);
	t_req(s.port, "GET", opt, good, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
	t_req(s.port, "GET", opt, NULL, NULL, 0, &r);
	t_expect_error(&r, 401, "unauthorized", "tracks without a token");
	su_resp_free(&r);
	/* static files need no token */
	t_req(s.port, "GET", "/", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, INDEX_HTML);
	su_resp_free(&r);
	assert_int_equal(su_server_stop(&s, SIGTERM), 0);

	/* a token shorter than 16 characters is refused at start */
	t_write_file(tf, "short\n", 6);
	{
		const char *argv0[] = { W.exe, "serve", "--port", "0", "--data", data, "--token-file", tf };
		char *argv[9];

		for (i = 0; i < 8; i++)
			argv[i] = strdup(argv0[i]);
		argv[8] = NULL;
		assert_int_equal(su_server_start(&s, argv, W.log, 10), -1);
		for (i = 0; i < 8; i++)
			free(argv[i]);
	}
}

/* ---- static files ----------------------------------------------------------- */

static void test_static(void **state)
{
	static const char *const refused[] = {
		"/../Makefile",
		"/%2e%2e/Makefile",
		"/%2E%2E/Makefile",
		"/..%2fMakefile",
		"/%2e%2e%2fMakefile",
		"/.%2e/Makefile",
		"/static/../../etc/passwd",
		"/../etc/passwd",
		"/%2e%2e/etc/passwd",
		"//etc/passwd",
		"/%2fetc/passwd",
		"/../../../../../../../../etc/passwd",
		"/link.html",
		"/index.html/",
		"/.",
		"/..",
	};
	char ct[128], etag[128], hdr[200];
	struct su_resp r;
	size_t i;

	(void)state;
	t_req(W.srv.port, "GET", "/", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(su_header(&r, "Content-Type", ct, sizeof(ct)));
	assert_memory_equal(ct, "text/html", 9);
	assert_int_equal(r.body_len, strlen(INDEX_HTML));
	assert_memory_equal(r.body, INDEX_HTML, r.body_len);
	assert_non_null(su_header(&r, "ETag", etag, sizeof(etag)));
	su_resp_free(&r);
	t_req(W.srv.port, "GET", "/index.html", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, INDEX_HTML);
	su_resp_free(&r);
	t_fmt(hdr, sizeof(hdr), "If-None-Match: %s\r\n", etag);
	t_req(W.srv.port, "GET", "/index.html", hdr, NULL, 0, &r);
	assert_int_equal(r.status, 304);
	assert_int_equal(r.body_len, 0);
	su_resp_free(&r);
	t_req(W.srv.port, "HEAD", "/", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		t_req(W.srv.port, "GET", refused[i], NULL, NULL, 0, &r);
		if (strstr(r.body, "SECRET") || strstr(r.body, "root:"))
			fail_msg("GET %s served a file outside the static directory", refused[i]);
		if (r.status != 404)
			fail_msg("GET %s: expected 404, got %d", refused[i], r.status);
		su_resp_free(&r);
	}
}

/* ---- crash recovery ------------------------------------------------------------ */

/* kill -9 during a long ingest (and an upload in progress); after a restart
 * the catalog still lists both traces, the interrupted one is ingested again
 * (or failed with a reason), the spool is clean and the ready trace answers
 * exactly as before. */
static void test_crash_recovery(void **state)
{
	char data[128], path[192], dir[192];
	struct su_server s;
	struct su_resp r, before, before_detail;
	struct fxtw big;
	double deadline;
	int64_t small, id, ids[8];
	const char *st = "";
	cJSON *j;
	int fd, rc;

	(void)state;
	t_fmt(data, sizeof(data), "%s/data-crash", W.root);
	t_start(&s, data, NULL);
	small = t_upload_ready(s.port, "survivor", W.small.buf, W.small.len);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, small, W.trk_a);
	t_req(s.port, "GET", path, NULL, NULL, 0, &before);
	assert_int_equal(before.status, 200);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices/%" PRId64, small, W.id_outer);
	t_req(s.port, "GET", path, NULL, NULL, 0, &before_detail);
	assert_int_equal(before_detail.status, 200);

	t_write_generated(&big, 1000000, 8, 3);
	t_upload(s.port, "?name=big", NULL, big.buf, big.len, &r);
	assert_int_equal(r.status, 202);
	j = t_json(&r);
	id = t_int(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	deadline = su_now() + 30;
	while (su_now() < deadline) {
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
		t_req(s.port, "GET", path, NULL, NULL, 0, &r);
		j = t_json(&r);
		st = strcmp(t_check_trace_object(j), "queued") == 0 ? "queued" : strcmp(t_str(j, "status"), "ingesting") == 0 ? "ingesting" : "done";
		rc = strcmp(st, "queued") != 0;
		if (rc && strcmp(st, "ingesting") == 0 && t_int(t_item(j, "progress"), "bytes_done") == 0)
			rc = 0; /* wait for progress to show */
		cJSON_Delete(j);
		su_resp_free(&r);
		if (rc)
			break;
		su_sleep_ms(10);
	}
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	t_req(s.port, "GET", path, NULL, NULL, 0, &r);
	if (strcmp(st, "ingesting") == 0)
		t_expect_error(&r, 409, "not_ready", "tracks while ingesting");
	else
		print_message("crash: the big trace was %s before the kill; the kill hit no ingest\n", st);
	su_resp_free(&r);
	fd = t_partial_upload(s.port, 1 << 20, big.buf, 100 * 1024);
	su_sleep_ms(100);
	assert_int_equal(su_server_stop(&s, SIGKILL), 128 + SIGKILL);
	close(fd);

	t_start(&s, data, NULL);
	t_expect_spool_empty(data, 0.5);
	assert_int_equal(t_list_ids(s.port, NULL, ids, 8), 2);
	assert_int_equal(ids[0], id);
	assert_int_equal(ids[1], small);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, small, W.trk_a);
	t_req(s.port, "GET", path, NULL, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, before.body_len);
	assert_memory_equal(r.body, before.body, r.body_len);
	su_resp_free(&r);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices/%" PRId64, small, W.id_outer);
	t_req(s.port, "GET", path, NULL, NULL, 0, &r);
	assert_string_equal(r.body, before_detail.body);
	su_resp_free(&r);

	j = t_wait_trace(s.port, NULL, id, 120);
	if (strcmp(t_str(j, "status"), "ready") == 0) {
		assert_true(t_int(t_item(j, "counts"), "slices") > 500000);
		t_expect_file(s.port, id, big.buf, big.len);
		t_fmt(dir, sizeof(dir), "%s/traces/%" PRId64 "/trace.db.tmp", data, id);
		assert_int_equal(access(dir, F_OK), -1);
	} else {
		print_message("crash: the interrupted trace failed: %s\n", t_str(t_item(j, "error"), "message"));
	}
	cJSON_Delete(j);
	/* ids are not reused: a new upload neither takes an old id nor touches
	 * an old trace's files */
	{
		struct fxtw other;
		int64_t nid;

		t_write_generated(&other, 5000, 2, 9);
		nid = t_upload_ready(s.port, "after-crash", other.buf, other.len);
		assert_true(nid > id);
		t_expect_file(s.port, nid, other.buf, other.len);
		fxtw_fini(&other);
	}
	t_expect_file(s.port, small, W.small.buf, W.small.len);
	j = t_wait_trace(s.port, NULL, small, 1);
	assert_string_equal(t_str(j, "name"), "survivor");
	assert_string_equal(t_str(j, "status"), "ready");
	cJSON_Delete(j);
	assert_int_equal(su_server_stop(&s, SIGTERM), 0);
	su_resp_free(&before);
	su_resp_free(&before_detail);
	fxtw_fini(&big);
}

static double g_t0;

static int test_setup(void **state)
{
	(void)state;
	g_t0 = su_now();
	return 0;
}

/* Reports slow tests: the whole file should stay well under a minute. */
static int test_teardown(void **state)
{
	(void)state;
	if (su_now() - g_t0 > 3)
		print_message("(took %.1f s)\n", su_now() - g_t0);
	return 0;
}

/* ---- compression --------------------------------------------------------------- */

/* Inflates a gzip member into a new buffer; returns its length, or -1. */
static long t_gunzip(const char *in, size_t n, char **out)
{
	z_stream z = { 0 };
	size_t cap = n * 16 + 1024;
	long len = -1;

	*out = malloc(cap);
	if (*out == NULL || inflateInit2(&z, 15 + 16) != Z_OK)
		return -1;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = (Bytef *)*out;
	z.avail_out = (uInt)cap;
	if (inflate(&z, Z_FINISH) == Z_STREAM_END)
		len = (long)z.total_out;
	inflateEnd(&z);
	return len;
}

static void test_gzip(void **state)
{
	int64_t s, e, st[32], ct[32];
	size_t ns, nc;
	char path[160], *plain_body, *unz = NULL;
	struct su_req q = { 0 };
	struct su_resp plain = { 0 }, gz = { 0 }, again = { 0 }, small = { 0 };
	long n;

	(void)state;
	t_gen_tracks(&s, &e, st, &ns, ct, &nc);
	snprintf(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, W.gen_id, st[0]);
	q.method = "GET";
	q.path = path;
	assert_int_equal(su_request(W.srv.port, &q, &plain, 20000), 0);
	assert_int_equal(plain.status, 200);
	assert_true(plain.body_len > 4096);
	assert_null(strcasestr(plain.head, "Content-Encoding"));
	q.headers = "Accept-Encoding: gzip, deflate\r\n";
	assert_int_equal(su_request(W.srv.port, &q, &gz, 20000), 0);
	assert_int_equal(gz.status, 200);
	assert_non_null(strcasestr(gz.head, "Content-Encoding: gzip"));
	assert_true(gz.body_len < plain.body_len / 2);
	n = t_gunzip(gz.body, gz.body_len, &unz);
	plain_body = plain.body;
	assert_int_equal(n, (long)plain.body_len);
	assert_memory_equal(unz, plain_body, plain.body_len);
	/* cached: the same compressed bytes again */
	assert_int_equal(su_request(W.srv.port, &q, &again, 20000), 0);
	assert_int_equal(again.body_len, gz.body_len);
	assert_memory_equal(again.body, gz.body, gz.body_len);
	/* q=0 refuses, and small replies stay plain */
	q.headers = "Accept-Encoding: gzip;q=0\r\n";
	su_resp_free(&again);
	assert_int_equal(su_request(W.srv.port, &q, &again, 20000), 0);
	assert_null(strcasestr(again.head, "Content-Encoding"));
	snprintf(path, sizeof(path), "/api/traces/%" PRId64, W.gen_id);
	q.headers = "Accept-Encoding: gzip\r\n";
	assert_int_equal(su_request(W.srv.port, &q, &small, 20000), 0);
	assert_true(small.body_len < 4096);
	assert_null(strcasestr(small.head, "Content-Encoding"));
	free(unz);
	su_resp_free(&plain);
	su_resp_free(&gz);
	su_resp_free(&again);
	su_resp_free(&small);
}

/* ---- failed uploads do not stay forever -------------------------------------------- */

static void test_keep_failed(void **state)
{
	static const char junk[] = "this is not a trace, just some text that goes on for a while";
	char data[128], path[64], dir[200];
	/* 2 s: ages are whole seconds since the upload was made, so at 1 s a
	 * trace made late in a second and failed early in the next could go
	 * before its upload's answer (then 404: upload.c, upload_answer) */
	const char *extra[3] = { "--keep-failed", "2s", NULL };
	struct su_server s;
	struct su_resp r;
	double deadline;
	int64_t id;
	int gone = 0;

	(void)state;
	t_fmt(data, sizeof(data), "%s/data-keep", W.root);
	t_start(&s, data, extra);
	t_req(s.port, "POST", "/api/traces?wait=1&name=junk", NULL, junk, sizeof(junk) - 1, &r);
	assert_int_equal(r.status, 422);
	{
		cJSON *j = cJSON_Parse(r.body);

		assert_non_null(j);
		id = t_int(j, "id");
		cJSON_Delete(j);
	}
	su_resp_free(&r);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	t_fmt(dir, sizeof(dir), "%s/traces/%" PRId64, data, id);
	/* listed while younger than the age, removed (with its files) after */
	for (deadline = su_now() + 10; !gone && su_now() < deadline; su_sleep_ms(100)) {
		t_req(s.port, "GET", path, NULL, NULL, 0, &r);
		gone = r.status == 404;
		su_resp_free(&r);
	}
	assert_true(gone);
	assert_int_not_equal(access(dir, F_OK), 0);
	su_server_stop(&s, SIGTERM);
}

/* ---- stopping ---------------------------------------------------------------------- */

/* Whether thread tid of pid is one of libmicrohttpd's (named MHD-*): not
 * the main one, and not a sanitizer's own (TSan's background thread defers
 * a signal to a point it never reaches, which no server thread does). */
static int is_http_thread(pid_t pid, const char *tid)
{
	char path[96], comm[32] = "";
	FILE *f;

	t_fmt(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, tid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(comm, sizeof(comm), f) == NULL)
		comm[0] = '\0';
	fclose(f);
	return strncmp(comm, "MHD-", 4) == 0;
}

/*
 * A SIGTERM or SIGINT that one of the server's other threads takes stops it
 * too, and cleanly (exit 0). The kernel gives a process's signal to any
 * thread that does not block it; a main thread that checked a flag and then
 * slept in pause() slept on while another thread had taken it.
 */
static void test_stop_signal_any_thread(void **state)
{
	char data[128], task[64];
	struct su_server s;
	struct dirent *e;
	DIR *d;
	int rc, sig;

	(void)state;
	for (sig = 0; sig < 2; sig++) {
		long tid = 0;
		int tries;

		t_fmt(data, sizeof(data), "%s/data-signal-%d", W.root, sig);
		t_start(&s, data, NULL);
		t_fmt(task, sizeof(task), "/proc/%d/task", (int)s.pid);
		/* libmicrohttpd's threads name themselves once they run, which
		 * may come after "listening" (slowly under ASan): looked for
		 * for up to 10 s */
		for (tries = 0; tid <= 0 && tries < 200; tries++) {
			if (tries > 0)
				su_sleep_ms(50);
			assert_non_null(d = opendir(task));
			while ((e = readdir(d)) != NULL && tid <= 0)
				if (is_http_thread(s.pid, e->d_name))
					tid = atol(e->d_name);
			closedir(d);
		}
		assert_true(tid > 0); /* a thread the server's HTTP daemon started */
		su_sleep_ms(200); /* its main thread past "listening", waiting to stop */
		assert_int_equal(syscall(SYS_tgkill, (int)s.pid, (int)tid, sig ? SIGINT : SIGTERM), 0);
		if ((rc = su_server_wait(&s, 10)) < 0) {
			su_print_stacks(s.pid);
			su_server_stop(&s, SIGKILL);
			fail_msg("a %s taken by thread %ld did not stop the server", sig ? "SIGINT" : "SIGTERM", tid);
		}
		assert_int_equal(rc, 0);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, test_setup, test_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_upload_raw_and_poll),
		T(test_upload_multipart),
		T(test_wait_and_list),
		T(test_file_and_delete),
		T(test_delete_while_ingesting),
		T(test_tracks),
		T(test_slices),
		T(test_slice_detail),
		T(test_counters),
		T(test_flows),
		T(test_sched),
		T(test_export_sched),
		T(test_thread_states),
		T(test_logs),
		T(test_search),
		T(test_stats),
		T(test_database_replaced),
		T(test_query),
		T(test_query_time_limit),
		T(test_resolution_slices),
		T(test_slices_batch),
		T(test_slices_columns),
		T(test_resolution_counters),
		T(test_bad_parameters),
		T(test_not_found_and_methods),
		T(test_garbage_request),
		T(test_keep_alive),
		T(test_empty_and_bad_uploads),
		T(test_upload_limit),
		T(test_disconnect_mid_upload),
		T(test_concurrent_uploads),
		T(test_token),
		T(test_static),
		T(test_gzip),
		T(test_keep_failed),
		T(test_stop_signal_any_thread),
		T(test_crash_recovery),
	};

	if (getenv("TS_FILTER"))
		cmocka_set_test_filter(getenv("TS_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
