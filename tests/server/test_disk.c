/*
 * What the library keeps of a trace on its disk, and that it gives back
 * what was uploaded (catalog/source.c), over loopback with the real server
 * binary (env TRACE_SERVER, GEN_FXT):
 *
 *  - a ready trace keeps its source compressed (source.zst, no source;
 *    made just after it is ready), FXT and XRay, tiny and of several MB:
 *    GET .../file gives the bytes
 *    uploaded with their Content-Length, size_bytes stays the upload's and
 *    stored_bytes counts the files as they are; a tiny trace takes at most
 *    100 KB beyond its source;
 *  - XRay symbols, given with the upload or after it, still name the
 *    functions, and the source still downloads;
 *  - a failed upload keeps its bytes as they came;
 *  - a live stream's source is kept as it grows, and compressed once the
 *    stream ended and the trace is ready;
 *  - a library written before (sources kept as uploaded) is served as it
 *    is, and its sources are compressed once the worker is idle (a trace
 *    of it ingested again, for a newer schema, when that ends);
 *  - a trace ingested again from its compressed source (a newer schema)
 *    answers as before and leaves no copy behind, the compressed file
 *    untouched;
 *  - a damaged compressed source fails its download (short of its
 *    Content-Length) and the server goes on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "../fxt_writer.h"
#include "../xray_writer.c"
#include "api_util.h"

struct blob {
	uint8_t *p;
	size_t n;
};

static struct {
	char root[64], data[160], log[160], exe[256];
	struct su_server srv;
	struct blob fxt_tiny, fxt_big, xray_tiny, xray_big;
	int64_t id_tiny, id_big, id_xray_tiny, id_xray_big;
} W;

/* ---- the traces ---------------------------------------------------------- */

static void fxt_tiny(struct blob *b)
{
	const struct fxtw_thr th = FXTW_TIDX(1);
	struct fxtw w;

	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "disk");
	fxtw_init_record(&w, 1000000000);
	fxtw_thread(&w, 1, 5, 50);
	fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL("first"), 100, 200, NULL, 0);
	fxtw_complete(&w, th, FXTW_INL("c"), FXTW_INL("second"), 300, 400, NULL, 0);
	b->p = w.buf;
	b->n = w.len;
}

/* An XRay log of fn 1 enclosing fn 2, nrep times on each of nthreads
 * threads, in buffers of at most 64 KiB. */
static void xray_log(struct blob *b, unsigned nthreads, unsigned nrep)
{
	struct xrw w;
	unsigned t, i;

	xrw_init(&w, 5, 65536);
	xrw_header(&w, 1000000000u);
	for (t = 0; t < nthreads; t++) {
		uint64_t tsc = 1000;

		for (i = 0; i < nrep; i++) {
			if (i % 1000 == 0) {
				if (i)
					xrw_buffer_end(&w);
				xrw_buffer_begin(&w, 100 + t, 7, 10, 5, (uint16_t)(t % 4), tsc);
			}
			xrw_enter(&w, 1, tsc);
			xrw_enter(&w, 2, tsc + 100 + i % 37);
			xrw_exit(&w, 2, tsc + 300 + i % 53);
			xrw_exit(&w, 1, tsc + 1000);
			tsc += 1500 + i % 91;
		}
		xrw_buffer_end(&w);
	}
	b->p = w.buf;
	b->n = w.len;
}

static const char SYMBOLS_YAML[] =
	"---\n"
	"- { id: 1, address: 0x401000, function: 0x401000, kind: function-enter, always-instrument: false, "
	"function-name: main, version: 2 }\n"
	"- { id: 2, address: 0x401020, function: 0x401020, kind: function-enter, always-instrument: false, "
	"function-name: 'work(int)', version: 2 }\n"
	"...\n";

static void read_blob(const char *path, struct blob *b)
{
	FILE *f = fopen(path, "rb");
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	assert_non_null(b->p = malloc((size_t)n));
	assert_int_equal(fread(b->p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	b->n = (size_t)n;
}

/* ---- requests and files ------------------------------------------------- */

/* POST body (headers may be NULL) to path; the reply's JSON, which must
 * have status. */
static cJSON *post(const char *path, const char *headers, const void *body, size_t n, int status)
{
	struct su_req q = { "POST", path, headers, body, n, 0, 0 };
	struct su_resp r;
	cJSON *j;

	if (su_request(api_port, &q, &r, 120000) != 0)
		fail_msg("POST %s: no reply (see %s)", path, api_log);
	if (r.status != status)
		fail_msg("POST %s: status %d, not %d: %.300s", path, r.status, status, r.body ? r.body : "");
	assert_non_null(j = cJSON_ParseWithLength(r.body, r.body_len));
	su_resp_free(&r);
	return j;
}

static int64_t upload(const char *name, const struct blob *b)
{
	char path[128];
	cJSON *j;
	int64_t id;

	t_fmt(path, sizeof(path), "/api/traces?wait=1&name=%s", name);
	j = post(path, NULL, b->p, b->n, 201);
	assert_string_equal(str(j, "status"), "ready");
	id = num(j, "id");
	cJSON_Delete(j);
	return id;
}

static cJSON *trace(int64_t id)
{
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	return t_get(path);
}

/* Polls the trace until its status is status (60 s). */
static cJSON *wait_status(int64_t id, const char *status)
{
	double deadline = su_now() + 60;
	cJSON *j;

	for (;;) {
		j = trace(id);
		if (strcmp(str(j, "status"), status) == 0)
			return j;
		if (su_now() > deadline)
			fail_msg("trace %" PRId64 " is %s, never %s", id, str(j, "status"), status);
		cJSON_Delete(j);
		su_sleep_ms(20);
	}
}

/* GET .../file gives exactly b, with b's length as its Content-Length. */
static void expect_download(int64_t id, const struct blob *b)
{
	struct su_req q = { "GET", NULL, NULL, NULL, 0, 0, 0 };
	char path[64], len[32];
	struct su_resp r;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/file", id);
	q.path = path;
	if (su_request(api_port, &q, &r, 60000) != 0)
		fail_msg("GET %s: no whole reply (see %s)", path, api_log);
	assert_int_equal(r.status, 200);
	assert_non_null(su_header(&r, "Content-Length", len, sizeof(len)));
	assert_int_equal(strtoull(len, NULL, 10), b->n);
	assert_int_equal(r.body_len, b->n);
	if (memcmp(r.body, b->p, b->n) != 0)
		fail_msg("trace %" PRId64 ": the download differs from the upload", id);
	su_resp_free(&r);
}

static void trace_file(int64_t id, const char *file, char *out, size_t n)
{
	t_fmt(out, n, "%s/traces/%" PRId64 "/%s", W.data, id, file);
}

static int has_file(int64_t id, const char *file)
{
	char path[256];

	trace_file(id, file, path, sizeof(path));
	return access(path, F_OK) == 0;
}

/* The bytes the trace's files take on the disk (what stored_bytes counts). */
static int64_t disk_bytes(int64_t id)
{
	static const char *const files[] = { "source", "source.zst", "binary", "trace.db" };
	char path[256];
	struct stat st;
	int64_t total = 0;
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		trace_file(id, files[i], path, sizeof(path));
		if (stat(path, &st) == 0)
			total += (int64_t)st.st_blocks * 512;
	}
	return total;
}

/* The trace is ready with its source kept compressed (done once it is
 * ready: waited for), stored_bytes its files, size_bytes the upload's;
 * its download is b. */
static void expect_compressed(int64_t id, const struct blob *b)
{
	double deadline = su_now() + 30;
	int64_t stored;
	cJSON *j;

	for (;;) {
		j = trace(id);
		assert_string_equal(str(j, "status"), "ready");
		assert_int_equal(num(j, "size_bytes"), b->n);
		stored = num(j, "stored_bytes");
		cJSON_Delete(j);
		if (has_file(id, "source.zst") && !has_file(id, "source") && stored == disk_bytes(id))
			break;
		if (su_now() > deadline)
			fail_msg("trace %" PRId64 ": source.zst %d, source %d, stored_bytes %" PRId64 " for %" PRId64
				 " on the disk",
				 id, has_file(id, "source.zst"), has_file(id, "source"), stored, disk_bytes(id));
		su_sleep_ms(20);
	}
	expect_download(id, b);
}

static int64_t file_size(int64_t id, const char *file)
{
	char path[256];
	struct stat st;

	trace_file(id, file, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	return (int64_t)st.st_size;
}

/* Bytes the trace's "source" holds now, -1 when it has none. */
static int64_t source_bytes(int64_t id)
{
	char path[256];
	struct stat st;

	trace_file(id, "source", path, sizeof(path));
	return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Writes the trace.db of a trace as an older server would have: a schema
 * version this one does not read, so a start ingests it again. */
static void make_db_old(int64_t id)
{
	char path[256];
	sqlite3 *db;

	trace_file(id, "trace.db", path, sizeof(path));
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 1", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* ---- the tests ---------------------------------------------------------- */

/* FXT and XRay, tiny and of several MB: kept compressed, downloaded whole. */
static void t_kept_compressed(void **state)
{
	(void)state;
	W.id_tiny = upload("fxt-tiny", &W.fxt_tiny);
	W.id_big = upload("fxt-big", &W.fxt_big);
	W.id_xray_tiny = upload("xray-tiny", &W.xray_tiny);
	W.id_xray_big = upload("xray-big", &W.xray_big);
	expect_compressed(W.id_tiny, &W.fxt_tiny);
	expect_compressed(W.id_big, &W.fxt_big);
	expect_compressed(W.id_xray_tiny, &W.xray_tiny);
	expect_compressed(W.id_xray_big, &W.xray_big);
	/* the generated archive's source takes under half its size */
	assert_true(file_size(W.id_big, "source.zst") * 2 < (int64_t)W.fxt_big.n);
	assert_true(file_size(W.id_xray_big, "source.zst") * 2 < (int64_t)W.xray_big.n);
	/* a tiny trace: at most 100 KB beyond its source */
	assert_true(disk_bytes(W.id_tiny) <= (int64_t)W.fxt_tiny.n + 100 * 1024);
	assert_true(disk_bytes(W.id_xray_tiny) <= (int64_t)W.xray_tiny.n + 100 * 1024);
}

/* XRay symbols with the upload (multipart "binary") and after it: the
 * functions are named, and the source still downloads as uploaded. */
static void t_xray_symbols(void **state)
{
	static const char bnd[] = "----disk-boundary-91c";
	char hdr[128], part[256], path[96];
	struct su_buf b = { 0 };
	cJSON *j;
	int64_t id;

	(void)state;
	t_fmt(part, sizeof(part),
	      "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.xray\"\r\n\r\n", bnd);
	su_buf_add(&b, part, strlen(part));
	su_buf_add(&b, W.xray_big.p, W.xray_big.n);
	t_fmt(part, sizeof(part),
	      "\r\n--%s\r\nContent-Disposition: form-data; name=\"binary\"; filename=\"x.yaml\"\r\n\r\n", bnd);
	su_buf_add(&b, part, strlen(part));
	su_buf_add(&b, SYMBOLS_YAML, strlen(SYMBOLS_YAML));
	t_fmt(part, sizeof(part), "\r\n--%s--\r\n", bnd);
	su_buf_add(&b, part, strlen(part));
	t_fmt(hdr, sizeof(hdr), "Content-Type: multipart/form-data; boundary=%s\r\n", bnd);
	j = post("/api/traces?wait=1&name=xray-symbols", hdr, b.p, b.len, 201);
	free(b.p);
	id = num(j, "id");
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(j, "symbols"), "named"), 2);
	cJSON_Delete(j);
	expect_compressed(id, &W.xray_big);
	assert_true(has_file(id, "binary"));
	/* and symbols posted to a ready trace whose source is compressed */
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/symbols", W.id_xray_tiny);
	j = post(path, NULL, SYMBOLS_YAML, strlen(SYMBOLS_YAML), 200);
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(j, "symbols"), "named"), 2);
	cJSON_Delete(j);
	expect_compressed(W.id_xray_tiny, &W.xray_tiny);
}

/* Bytes that are no trace: the trace fails and keeps them as they came. */
static void t_failed_kept_raw(void **state)
{
	static const char junk[] = "no trace here, only text that no decoder takes for FXT or XRay\n";
	struct blob b = { (uint8_t *)(uintptr_t)junk, sizeof(junk) - 1 };
	cJSON *j;
	int64_t id;

	(void)state;
	j = post("/api/traces?name=junk", NULL, junk, b.n, 202);
	id = num(j, "id");
	cJSON_Delete(j);
	cJSON_Delete(wait_status(id, "failed"));
	assert_true(has_file(id, "source"));
	assert_false(has_file(id, "source.zst"));
	expect_download(id, &b);
}

/* A chunked live upload: the request head, then chunks as they are sent. */
static int live_open(void)
{
	static const char head[] = "POST /api/traces?live=1&name=live HTTP/1.1\r\nHost: 127.0.0.1\r\n"
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

static int64_t newest_id(void)
{
	cJSON *j = t_get("/api/traces?limit=1");
	int64_t id = num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "traces"), 0), "id");

	cJSON_Delete(j);
	return id;
}

/* A live stream's source grows as it is: never compressed while it is
 * live, compressed once the stream ended and the trace is ready. */
static void t_live(void **state)
{
	size_t half = W.fxt_big.n / 2;
	int64_t before = newest_id(), id;
	double deadline = su_now() + 30;
	char reply[256];
	int fd, i;
	cJSON *j;

	(void)state;
	fd = live_open();
	live_chunk(fd, W.fxt_big.p, half);
	while ((id = newest_id()) == before && su_now() < deadline)
		su_sleep_ms(10);
	assert_true(id > before);
	for (i = 0; i < 3000 && source_bytes(id) < (int64_t)half; i++)
		su_sleep_ms(10);
	j = trace(id);
	assert_string_equal(str(j, "status"), "live");
	cJSON_Delete(j);
	assert_true(has_file(id, "source"));
	assert_false(has_file(id, "source.zst"));
	live_chunk(fd, W.fxt_big.p + half, W.fxt_big.n - half);
	live_chunk(fd, NULL, 0);
	assert_true(su_read_line(fd, reply, sizeof(reply), 60) == 0); /* the reply's status line */
	close(fd);
	cJSON_Delete(wait_status(id, "ready"));
	expect_compressed(id, &W.fxt_big);
}

/* A library written before: its sources as uploaded. Served as they are,
 * and compressed by the worker when it has nothing else to do; a trace of
 * it ingested again (a newer schema) gets its source compressed too. */
static void t_old_library(void **state)
{
	char raw[256], zst[256];
	FILE *f;

	(void)state;
	assert_int_equal(su_server_stop(&W.srv, SIGTERM), 0);
	trace_file(W.id_tiny, "source", raw, sizeof(raw));
	trace_file(W.id_tiny, "source.zst", zst, sizeof(zst));
	assert_non_null(f = fopen(raw, "wb"));
	assert_int_equal(fwrite(W.fxt_tiny.p, 1, W.fxt_tiny.n, f), W.fxt_tiny.n);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(unlink(zst), 0);
	trace_file(W.id_xray_big, "source", raw, sizeof(raw));
	trace_file(W.id_xray_big, "source.zst", zst, sizeof(zst));
	assert_non_null(f = fopen(raw, "wb"));
	assert_int_equal(fwrite(W.xray_big.p, 1, W.xray_big.n, f), W.xray_big.n);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(unlink(zst), 0);
	make_db_old(W.id_xray_big);
	api_start(&W.srv, W.exe, W.data, W.log, NULL);
	expect_download(W.id_tiny, &W.fxt_tiny); /* as it is, or compressed by now */
	cJSON_Delete(wait_status(W.id_xray_big, "ready"));
	expect_compressed(W.id_xray_big, &W.xray_big);
	expect_compressed(W.id_tiny, &W.fxt_tiny); /* the worker's look once idle */
}

/* Ingested again from its compressed source (a newer schema): the same
 * answers, no copy of the source left, source.zst not rewritten. */
static void t_reingest_compressed(void **state)
{
	char path[256], *before, *after, q[96];
	struct stat st0, st1;
	cJSON *j;

	(void)state;
	t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/tracks", W.id_big);
	before = t_body("GET", q, NULL, 200);
	trace_file(W.id_big, "source.zst", path, sizeof(path));
	assert_int_equal(stat(path, &st0), 0);
	assert_int_equal(su_server_stop(&W.srv, SIGTERM), 0);
	make_db_old(W.id_big);
	api_start(&W.srv, W.exe, W.data, W.log, NULL);
	j = wait_status(W.id_big, "ready");
	assert_true(num(cJSON_GetObjectItemCaseSensitive(j, "counts"), "slices") > 100000);
	cJSON_Delete(j);
	after = t_body("GET", q, NULL, 200);
	assert_string_equal(after, before);
	expect_compressed(W.id_big, &W.fxt_big);
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(st1.st_ino, st0.st_ino);
	assert_int_equal(st1.st_mtime, st0.st_mtime);
	free(before);
	free(after);
}

/* A damaged compressed source: the download stops short of its length,
 * and the server answers the next request. */
static void t_damaged(void **state)
{
	struct su_req q = { "GET", NULL, NULL, NULL, 0, 0, 0 };
	char path[256], url[64];
	struct su_resp r;
	int fd;
	off_t n;
	uint8_t c;

	(void)state;
	trace_file(W.id_xray_tiny, "source.zst", path, sizeof(path));
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	n = lseek(fd, 0, SEEK_END);
	assert_int_equal(pread(fd, &c, 1, n / 2), 1);
	c ^= 0x10;
	assert_int_equal(pwrite(fd, &c, 1, n / 2), 1);
	close(fd);
	t_fmt(url, sizeof(url), "/api/traces/%" PRId64 "/file", W.id_xray_tiny);
	q.path = url;
	if (su_request(api_port, &q, &r, 30000) == 0 && r.body_len == W.xray_tiny.n)
		fail_msg("a damaged source downloaded whole (status %d)", r.status);
	su_resp_free(&r);
	cJSON_Delete(trace(W.id_xray_tiny));
	expect_download(W.id_tiny, &W.fxt_tiny);
}

/* ---- the world ---------------------------------------------------------- */

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[512], path[128];

	(void)state;
	if (exe == NULL || gen == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	snprintf(W.root, sizeof(W.root), "/tmp/ts-disk-test-XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.exe, sizeof(W.exe), "%s/trace-server", W.root);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", exe, W.exe); /* a rebuild must not swap it under us */
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	snprintf(path, sizeof(path), "%s/big.fxt", W.root);
	if (system(cmd) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "'%s' --events 300000 --threads 8 --seed 5 '%s' >/dev/null", gen, path);
	if (system(cmd) != 0)
		return -1;
	read_blob(path, &W.fxt_big);
	fxt_tiny(&W.fxt_tiny);
	xray_log(&W.xray_tiny, 1, 3);
	xray_log(&W.xray_big, 4, 40000);
	api_start(&W.srv, W.exe, W.data, W.log, NULL);
	return 0;
}

static int teardown(void **state)
{
	int rc = 0;

	(void)state;
	if (W.srv.pid > 0 && (rc = su_server_stop(&W.srv, SIGTERM)) != 0)
		fprintf(stderr, "the server exited with %d after SIGTERM (expected 0)\n", rc);
	free(W.fxt_tiny.p);
	free(W.fxt_big.p);
	free(W.xray_tiny.p);
	free(W.xray_big.p);
	if (getenv("KEEP") == NULL)
		su_rm_tree(W.root);
	else
		fprintf(stderr, "kept %s\n", W.root);
	return rc;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_kept_compressed),	 cmocka_unit_test(t_xray_symbols),
		cmocka_unit_test(t_failed_kept_raw),	 cmocka_unit_test(t_live),
		cmocka_unit_test(t_old_library),	 cmocka_unit_test(t_reingest_compressed),
		cmocka_unit_test(t_damaged),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
