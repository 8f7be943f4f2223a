/*
 * Server behaviour that only shows across requests, over loopback with the
 * real server binary (env TRACE_SERVER): issue 20 found that each of these
 * could break with every other C test still passing.
 *
 *  - The reply cache forgets a trace's replies when symbols name its
 *    functions (POST /api/traces/{id}/symbols; server/upload.c drops them):
 *    a reply read and cached before the symbols came must not come back
 *    after them.
 *  - The database pool (server/dbpool.c) keeps a connection per trace per
 *    worker thread, and must open the file again once it was replaced: a
 *    live trace's snapshot renamed into place, and the database of its
 *    final ingest. Reads go over keep-alive connections that read the
 *    trace before the change, so each lands on a worker thread whose pool
 *    holds the old file.
 *
 * The server runs with --threads 2; the traces are written here (XRay with
 * tests/xray_writer, FXT with tests/fxt_writer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sys/stat.h>

#include "../fxt_writer.h"
#include "../xray_writer.c"
#include "api_util.h"

struct world {
	char root[64], data[128], log[128], exe[256];
	struct su_server srv;
};
static struct world W;

/* ---- requests ---------------------------------------------------------- */

/* A request with a binary body (or none) and the JSON of its reply, which
 * must have the given status. fd >= 0: on that keep-alive connection. */
static cJSON *t_send(int fd, const char *method, const char *path, const void *body, size_t n, int status)
{
	struct su_req q = { method, path, NULL, body, n, 0, fd >= 0 };
	struct su_resp r;
	cJSON *j;
	int rc = fd >= 0 ? su_exchange(fd, &q, &r, 60000) : su_request(api_port, &q, &r, 60000);

	if (rc != 0)
		fail_msg("%s %s: no well-formed reply (see %s)", method, path, api_log);
	if (r.status != status)
		fail_msg("%s %s: status %d, not %d: %.400s", method, path, r.status, status, r.body ? r.body : "");
	if ((j = cJSON_ParseWithLength(r.body, r.body_len)) == NULL)
		fail_msg("%s %s: reply is not JSON: %.200s", method, path, r.body);
	su_resp_free(&r);
	return j;
}

/* The slices' names of a reply, in order, as "a,b,c". */
static void names_of(const cJSON *j, char *out, size_t n)
{
	const cJSON *s;
	size_t len = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(j, "slices")) {
		const char *name = str(s, "name");

		assert_non_null(name);
		len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", name);
		assert_true(len < n);
	}
}

/* GET path (on fd when >= 0) and its slices' names. */
static void get_names(int fd, const char *path, char *out, size_t n)
{
	cJSON *j = t_send(fd, "GET", path, NULL, 0, 200);

	names_of(j, out, n);
	cJSON_Delete(j);
}

/* The track id of thread tid in a tracks reply. */
static int64_t thread_track(int64_t id, int64_t tid)
{
	char path[64];
	cJSON *j, *p, *t;
	int64_t track = -1;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	j = t_get(path);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "processes"))
		cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(p, "threads"))
			if (num(t, "tid") == tid && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "track_id")))
				track = num(t, "track_id");
	cJSON_Delete(j);
	if (track < 0)
		fail_msg("trace %" PRId64 " has no track for tid %" PRId64, id, tid);
	return track;
}

/* ---- the reply cache and symbols ---------------------------------------- */

/* Thread 100 of process 7: fn 1 encloses fn 2, twice. */
static void write_xray(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, 1000000000u);
	xrw_buffer_begin(w, 100, 7, 10, 5, 3, 1000);
	xrw_enter(w, 1, 1000);
	xrw_enter(w, 2, 1100);
	xrw_exit(w, 2, 1300);
	xrw_exit(w, 1, 2000);
	xrw_enter(w, 1, 3000);
	xrw_exit(w, 1, 3500);
	xrw_buffer_end(w);
}

static const char SYMBOLS_YAML[] =
	"---\n"
	"- { id: 1, address: 0x401000, function: 0x401000, kind: function-enter, always-instrument: false, "
	"function-name: main, version: 2 }\n"
	"- { id: 2, address: 0x401020, function: 0x401020, kind: function-enter, always-instrument: false, "
	"function-name: 'work(int)', version: 2 }\n"
	"...\n";

/* A later map that names only function 2, as before. */
static const char SYMBOLS_YAML_AGAIN[] =
	"---\n"
	"- { id: 2, address: 0x401020, function: 0x401020, kind: function-enter, always-instrument: false, "
	"function-name: 'work(int)', version: 2 }\n"
	"...\n";

/* The stats reply holds has and not hasnt. */
static void expect_stats(const char *path, const char *has, const char *hasnt)
{
	cJSON *t = t_get(path);
	char *s = cJSON_PrintUnformatted(t);

	if (strstr(s, has) == NULL || strstr(s, hasnt) != NULL)
		fail_msg("%s: %s, expected %s and no %s", path, s, has, hasnt);
	free(s);
	cJSON_Delete(t);
}

static void t_symbols_drop_cached_replies(void **state)
{
	char slices[160], stats[96], got[256], got_symbols[96];
	struct xrw w;
	cJSON *t;
	int64_t id, track;
	int i;

	(void)state;
	write_xray(&w);
	t = t_send(-1, "POST", "/api/traces?name=xr&wait=1", w.buf, w.len, 201);
	xrw_fini(&w);
	id = num(t, "id");
	assert_string_equal(str(t, "format"), "xray-fdr");
	cJSON_Delete(t);
	track = thread_track(id, 100);
	t_fmt(slices, sizeof(slices), "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=0&end=100000", id, track);
	t_fmt(stats, sizeof(stats), "/api/traces/%" PRId64 "/stats", id);

	for (i = 0; i < 3; i++) { /* the first reply is cached, the others come from the cache */
		get_names(-1, slices, got, sizeof(got));
		assert_string_equal(got, "fn#1,fn#2,fn#1");
	}
	expect_stats(stats, "\"fn#2\"", "\"main\"");

	t_fmt(got_symbols, sizeof(got_symbols), "/api/traces/%" PRId64 "/symbols", id);
	t = t_send(-1, "POST", got_symbols, SYMBOLS_YAML, strlen(SYMBOLS_YAML), 200);
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(t, "symbols"), "named"), 2);
	cJSON_Delete(t);

	/* the same URLs: the new names, not the replies cached before */
	get_names(-1, slices, got, sizeof(got));
	assert_string_equal(got, "main,work(int),main");
	expect_stats(stats, "\"work(int)\"", "fn#");

	/* a second map names nothing new: the functions stay named, and the
	 * trace object still says so (no hint "functions are named fn#<id>") */
	t = t_send(-1, "POST", got_symbols, SYMBOLS_YAML_AGAIN, strlen(SYMBOLS_YAML_AGAIN), 200);
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(t, "symbols"), "named"), 2);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "symbols"), "hint"));
	cJSON_Delete(t);
	get_names(-1, slices, got, sizeof(got));
	assert_string_equal(got, "main,work(int),main");
}

/* ---- the database pool and replaced files -------------------------------- */

/* A chunked live upload: the request head, then chunks as they are sent. */
static int live_open(void)
{
	static const char head[] = "POST /api/traces?live=1&name=pool HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				   "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
	int fd = su_connect(W.srv.port);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, head, strlen(head)), (ssize_t)strlen(head));
	return fd;
}

static void live_chunk(int fd, const void *p, size_t n)
{
	char h[32];

	t_fmt(h, sizeof(h), "%zx\r\n", n);
	assert_int_equal(write(fd, h, strlen(h)), (ssize_t)strlen(h));
	if (n)
		assert_int_equal(write(fd, p, n), (ssize_t)n);
	assert_int_equal(write(fd, "\r\n", 2), 2);
}

/* The newest trace's id. */
static int64_t newest_id(void)
{
	cJSON *j = t_get("/api/traces?limit=1");
	cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "traces"), 0);
	int64_t id;

	assert_non_null(t);
	id = num(t, "id");
	cJSON_Delete(j);
	return id;
}

/* Waits until the trace shows visible_bytes bytes (and status, if given). */
static void wait_visible(int64_t id, size_t bytes, const char *status)
{
	double deadline = su_now() + 60;
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	while (su_now() < deadline) {
		cJSON *t = t_get(path);
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "stream");
		int done = cJSON_IsObject(s) && (size_t)num(s, "visible_bytes") == bytes &&
			   (status == NULL || strcmp(str(t, "status"), status) == 0);

		cJSON_Delete(t);
		if (done)
			return;
		su_sleep_ms(20);
	}
	fail_msg("trace %" PRId64 " never showed %zu bytes", id, bytes);
}

enum { NCONN = 6 };

/* Every keep-alive connection reads the slices: each must see want. */
static void read_all(const int *fd, const char *path, const char *want, const char *when)
{
	char got[256];
	int i;

	for (i = 0; i < NCONN; i++) {
		get_names(fd[i], path, got, sizeof(got));
		if (strcmp(got, want) != 0)
			fail_msg("%s, connection %d read \"%s\", not \"%s\"", when, i, got, want);
	}
	get_names(-1, path, got, sizeof(got)); /* and a new connection */
	if (strcmp(got, want) != 0)
		fail_msg("%s, a new connection read \"%s\", not \"%s\"", when, got, want);
}

static void t_pool_reopens_replaced_files(void **state)
{
	const struct fxtw_thr th = FXTW_TIDX(1);
	struct fxtw w;
	size_t first, second;
	char path[160];
	int fd[NCONN], live, i;
	int64_t id, track;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "pool");
	fxtw_init_record(&w, 1000000000);
	fxtw_thread(&w, 1, 5, 50);
	fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL("first"), 100, 200, NULL, 0);
	first = w.len;
	fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL("second"), 300, 400, NULL, 0);
	second = w.len;
	fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL("third"), 500, 600, NULL, 0);

	id = newest_id();
	live = live_open();
	live_chunk(live, w.buf, first);
	for (i = 0; i < 1000 && newest_id() == id; i++)
		su_sleep_ms(10);
	assert_true((id = newest_id()) > 0);
	wait_visible(id, first, NULL);
	track = thread_track(id, 50);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, id, track);
	for (i = 0; i < NCONN; i++)
		assert_true((fd[i] = su_connect(W.srv.port)) >= 0);
	read_all(fd, path, "first", "the first snapshot");

	/* a new snapshot is renamed over the database the pool holds open */
	live_chunk(live, w.buf + first, second - first);
	wait_visible(id, second, NULL);
	read_all(fd, path, "first,second", "after a new snapshot");

	/* the stream ends: ingested whole once more, the file replaced again */
	live_chunk(live, w.buf + second, w.len - second);
	wait_visible(id, w.len, NULL);
	read_all(fd, path, "first,second,third", "after the last snapshot");
	live_chunk(live, NULL, 0);
	{
		char buf[512];
		ssize_t k = read(live, buf, sizeof(buf) - 1);

		assert_true(k > 0);
		buf[k] = '\0';
		assert_non_null(strstr(buf, " 202 "));
	}
	close(live);
	wait_visible(id, w.len, "ready");
	read_all(fd, path, "first,second,third", "once ready");
	for (i = 0; i < NCONN; i++)
		close(fd[i]);
	fxtw_fini(&w);
}

/* ---- the server ----------------------------------------------------------- */

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER");
	char *argv[] = { W.exe, "serve", "--port", "0", "--threads", "2", "--data", W.data, NULL };

	(void)state;
	if (exe == NULL) {
		fprintf(stderr, "set TRACE_SERVER\n");
		return -1;
	}
	if (realpath(exe, W.exe) == NULL)
		return -1;
	snprintf(W.root, sizeof(W.root), "/tmp/test-gaps-XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	signal(SIGPIPE, SIG_IGN);
	if (su_server_start(&W.srv, argv, W.log, 30) != 0) {
		fprintf(stderr, "cannot start %s (see %s)\n", W.exe, W.log);
		return -1;
	}
	api_port = W.srv.port;
	api_log = W.log;
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
		cmocka_unit_test(t_symbols_drop_cached_replies),
		cmocka_unit_test(t_pool_reopens_replaced_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
