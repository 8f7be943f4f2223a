/*
 * Three real servers sharing one catalog (PostgreSQL) and one store
 * (s3rver), as docs/DEPLOY.md deploys them behind a proxy: a trace
 * uploaded through one is read through the others with the replies an
 * embedded-mode server (--data alone) gives for the same file; uploads
 * at the edges of the store's multipart parts; the store and PostgreSQL
 * going away and coming back; a client leaving mid-upload. Every
 * server's /healthz is checked through each.
 *
 * The servers run with --store-part-size set to the size of the small
 * archive, so that it goes up as exactly one part and the big one (more
 * than ten times its size) in more than ten.
 *
 * Env: TRACE_SERVER, GEN_FXT (build/rel/gen_fxt), PG_SH; node and the npm
 * packages (make deps-e2e); run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>

#include "scale_util.h"

static struct {
	struct scale w;
	char part[32];        /* --store-part-size: the small archive's size */
	char small[128], big[128];
	char *bytes;          /* the small archive */
	size_t len;
	int64_t id;           /* the small archive, uploaded through server 0 */
	int64_t emb_id;       /* the same, in the embedded server */
	char slices_path[160];/* a track's slices over a window, for the store-down case */
	char *slices;         /* its reply */
	int failed;
} T;

/* POST body (len bytes) as name through the current server, waiting for
 * ingest; the reply (caller frees). */
static void upload(const char *name, const void *body, size_t len, struct su_resp *r)
{
	char path[160];
	struct su_req q = { "POST", path, NULL, body, len, 0, 0 };

	t_fmt(path, sizeof(path), "/api/traces?wait=1&name=%s", name);
	if (su_request(api_port, &q, r, 120000) != 0)
		fail_msg("upload %s: no reply (see %s)", name, api_log);
}

/* Uploads and expects 201 ready; the trace's id. */
static int64_t upload_ok(const char *name, const void *body, size_t len)
{
	struct su_resp r;
	cJSON *j;
	int64_t id;

	upload(name, body, len, &r);
	if (r.status != 201)
		fail_msg("upload %s: status %d: %.300s (see %s)", name, r.status, r.body ? r.body : "", api_log);
	j = cJSON_Parse(r.body);
	id = num(j, "id");
	assert_string_equal(str(j, "status"), "ready");
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

/* The trace object without what differs between two libraries holding
 * the same file: its id, its times, and stored_bytes (the directory
 * counts the disk blocks its files take, the store their bytes). The rest
 * (status, sizes, what ingest counted) must be equal. Caller frees. */
static char *trace_facts(int64_t id)
{
	static const char *const differ[] = { "id", "created", "created_at", "updated", "updated_at", "uploaded",
					      "ingested", "ingested_at", "version", "ingest_seconds", "stored_bytes" };
	char path[96], *s;
	cJSON *j;
	size_t i;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	j = t_get(path);
	for (i = 0; i < sizeof(differ) / sizeof(differ[0]); i++)
		cJSON_DeleteItemFromObjectCaseSensitive(j, differ[i]);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

/* GET /api/traces/<id><rest> on the current server. */
static char *trace_body(int64_t id, const char *rest)
{
	char path[256];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "%s", id, rest);
	return sc_body(path, 200, NULL);
}

/* The replies compared between servers: tracks, slices of the first
 * threads over a window in the middle, a search, the stats. */
static const char *const probes[] = {
	"/tracks",
	"/slices?track=1&start=0&end=9223372036854775807&limit=500",
	"/slices?track=2&start=1000000&end=3000000",
	"/search?q=frame",
	"/stats",
};
enum { NPROBES = sizeof(probes) / sizeof(probes[0]) };

static void t_upload_one_read_all(void **state)
{
	char *ref[NPROBES], *facts, *got, path[160];
	int k, i;

	(void)state;
	sc_use(&T.w, -1);
	T.emb_id = upload_ok("shared", T.bytes, T.len);
	facts = trace_facts(T.emb_id);
	for (i = 0; i < NPROBES; i++)
		ref[i] = trace_body(T.emb_id, probes[i]);
	assert_non_null(strstr(ref[1], "\"ts\"")); /* not an empty reply */
	sc_use(&T.w, 0);
	T.id = upload_ok("shared", T.bytes, T.len);
	for (k = 0; k < SCALE_N; k++) {
		sc_use(&T.w, k);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64, T.id);
		if (api_get_until(path, 200, 2000, "\"ready\"") != 200)
			fail_msg("server %d does not see trace %" PRId64 " ready", k, T.id);
		got = trace_facts(T.id);
		if (strcmp(got, facts) != 0) {
			fprintf(stderr, "server %d's trace object:\n%s\nthe embedded server's:\n%s\n", k, got, facts);
			fail_msg("server %d's trace object differs from the embedded server's", k);
		}
		free(got);
		for (i = 0; i < NPROBES; i++) {
			got = trace_body(T.id, probes[i]);
			if (strcmp(got, ref[i]) != 0)
				fail_msg("server %d, %s: %.300s\nembedded: %.300s", k, probes[i], got, ref[i]);
			free(got);
		}
		/* the cross-trace search finds it through every server */
		if (api_get_until("/api/search?q=frame", 200, 2000, "\"name\":\"shared\"") != 200)
			fail_msg("server %d: /api/search does not find the trace", k);
	}
	t_fmt(T.slices_path, sizeof(T.slices_path), "/api/traces/%" PRId64 "%s", T.id, probes[1]);
	T.slices = ref[1];
	for (i = 0; i < NPROBES; i++)
		if (i != 1)
			free(ref[i]);
	free(facts);
	sc_health_all(&T.w, 200, 2000);
}

/* The number of traces the current server lists. */
static int64_t listed(void)
{
	cJSON *j = t_get("/api/traces?limit=1000");
	int64_t n = num(j, "total");

	cJSON_Delete(j);
	return n;
}

/* The total once it is n, or what it is after ms: a trace uploaded
 * through another server is listed here at this server's next look at
 * the catalog (every 100 ms, docs/DEPLOY.md). */
static int64_t listed_when(int64_t n, int ms)
{
	double until = su_now() + ms / 1e3;
	int64_t got;

	while ((got = listed()) != n && su_now() < until)
		su_sleep_ms(20);
	return got;
}

/* Read after write across servers: a trace uploaded through one server
 * with ?wait=1 is readable through another at once, every time (it looks
 * at the catalog when its copy says not ready, rather than answering 409
 * until its next look). */
static void t_read_after_write(void **state)
{
	char path[128];
	int64_t n;
	int i, k;

	(void)state;
	sc_use(&T.w, 0);
	n = listed();
	for (i = 0; i < 6; i++) {
		int64_t id;
		char *body;

		sc_use(&T.w, i % SCALE_N);
		id = upload_ok("raw", T.bytes, T.len);
		sc_use(&T.w, (i + 1) % SCALE_N);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
		body = sc_body(path, 200, NULL);
		free(body);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
		cJSON_Delete(t_call("DELETE", path, NULL, 204));
	}
	/* every server has seen the deletions before the next test counts */
	for (k = 0; k < SCALE_N; k++) {
		sc_use(&T.w, k);
		assert_int_equal(listed_when(n, 2000), n);
	}
}

/* Waits up to 30 s for every ready trace's source to be kept compressed:
 * the compression, after the trace is ready, puts "source.zst" and drops
 * "source", which a count of the bucket's objects would see change. */
static void sources_compressed(void)
{
	double deadline = su_now() + 30;

	for (;;) {
		char *keys = sc_bucket_keys(&T.w, "lib/"), *p = keys;
		int raw = 0;

		while (p != NULL && (p = strstr(p, "/source\n")) != NULL) {
			raw++;
			p++;
		}
		free(keys);
		if (raw == 0 || su_now() > deadline)
			return;
		su_sleep_ms(100);
	}
}

/* The bucket's object count under prefix once it stays the same for
 * 0.6 s (up to 10 s): a trace deleted by the test before has its objects
 * removed after its DELETE is answered, by whichever server held it. */
static int bucket_settled(const char *prefix)
{
	double deadline = su_now() + 10;
	int n = sc_bucket_count(&T.w, prefix), same = 0;

	while (same < 3 && su_now() < deadline) {
		int m;

		su_sleep_ms(200);
		m = sc_bucket_count(&T.w, prefix);
		same = m == n ? same + 1 : 0;
		n = m;
	}
	return n;
}

static void t_empty_upload(void **state)
{
	int64_t before;
	int objects;

	(void)state;
	sources_compressed();
	objects = bucket_settled("lib/");
	sc_use(&T.w, 1);
	before = listed();
	t_error("POST", "/api/traces?name=empty", NULL, 400, "empty_upload");
	assert_int_equal(listed(), before);
	sc_use(&T.w, 2);
	assert_int_equal(listed(), before);
	assert_int_equal(sc_bucket_count(&T.w, "lib/"), objects);
	sc_health_all(&T.w, 200, 2000);
}

/* The source object of trace id read back through server k (whose cache
 * lacks it) equals body. */
static void source_through(int k, int64_t id, const char *body, size_t len)
{
	char path[96], *got;
	size_t n;

	sc_use(&T.w, k);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/file", id);
	got = sc_body(path, 200, &n);
	assert_int_equal(n, len);
	assert_memory_equal(got, body, len);
	free(got);
}

/* How the source of trace id went to the store: 0 parts for one PUT,
 * else the number of multipart parts (never both). */
static int source_parts(int64_t id)
{
	char key[96];
	int single, parts;

	t_fmt(key, sizeof(key), "lib/traces/%" PRId64 "/source", id);
	sc_store_puts(&T.w, key, &single, &parts);
	assert_int_equal(single + (parts > 0), 1);
	return parts;
}

/* Waits until trace id's source is kept in the store compressed alone
 * (source.zst, no source): done once the trace is ready (30 s). */
static void source_compressed(int64_t id)
{
	char prefix[64], zst[96], raw[96], *keys = NULL;
	double deadline = su_now() + 30;

	t_fmt(prefix, sizeof(prefix), "lib/traces/%" PRId64 "/", id);
	t_fmt(zst, sizeof(zst), "%ssource.zst\n", prefix);
	t_fmt(raw, sizeof(raw), "%ssource\n", prefix);
	for (;;) {
		free(keys);
		keys = sc_bucket_keys(&T.w, prefix);
		if (strstr(keys, zst) != NULL && strstr(keys, raw) == NULL)
			break;
		if (su_now() > deadline)
			fail_msg("trace %" PRId64 "'s source is not kept compressed alone in the store: %s", id, keys);
		su_sleep_ms(50);
	}
	free(keys);
}

/* The small archive is exactly one part: one PUT, read back whole. */
static void t_one_part(void **state)
{
	(void)state;
	assert_int_equal((size_t)atol(T.part), T.len);
	assert_int_equal(source_parts(T.id), 0);
	source_through(2, T.id, T.bytes, T.len);
	sc_health_all(&T.w, 200, 2000);
}

/* More than ten parts: uploaded through server 2, read back through 1. */
static void t_many_parts(void **state)
{
	size_t len;
	char *big = sc_read_file(T.big, &len);
	int64_t id;

	(void)state;
	assert_true(len > 10 * T.len);
	sc_use(&T.w, 2);
	id = upload_ok("big", big, len);
	assert_true(source_parts(id) > 10);
	assert_int_equal(source_parts(id), (int)((len + T.len - 1) / T.len));
	source_through(1, id, big, len);
	source_compressed(id); /* the claim's server sent it compressed, in parts too */
	source_through(0, id, big, len);
	assert_int_equal(sc_bucket_open_uploads(&T.w), 0);
	free(big);
	sc_health_all(&T.w, 200, 2000);
}

/* GET path on the current server: 503 store_unavailable with Retry-After. */
static void expect_store_503(const char *method, const char *path, const void *body, size_t len)
{
	struct su_req q = { method, path, NULL, body, len, 0, 0 };
	struct su_resp r;
	char retry[16];

	if (su_request(api_port, &q, &r, 60000) != 0)
		fail_msg("%s %s: no reply (see %s)", method, path, api_log);
	if (r.status != 503)
		fail_msg("%s %s with the store down: %d: %.300s", method, path, r.status, r.body ? r.body : "");
	assert_non_null(su_header(&r, "Retry-After", retry, sizeof(retry)));
	assert_true(atoi(retry) > 0);
	assert_non_null(strstr(r.body, "store_unavailable"));
	su_resp_free(&r);
}

static void t_store_down(void **state)
{
	char *got;
	int64_t before;
	int k;

	(void)state;
	sc_use(&T.w, 0);
	before = listed();
	s3rver_stop(&T.w.store);
	sc_health_all(&T.w, 503, 3000);
	for (k = 0; k < SCALE_N; k++) {
		sc_use(&T.w, k);
		expect_store_503("POST", "/api/traces?name=down", T.bytes, T.len);
		/* every server read the trace in the first case: it is cached */
		got = sc_body(T.slices_path, 200, NULL);
		assert_string_equal(got, T.slices);
		free(got);
	}
	assert_int_equal(listed(), before); /* the refused uploads left no row */
	assert_int_equal(sc_store_start(&T.w), 0);
	sc_health_all(&T.w, 200, 5000);
	for (k = 0; k < SCALE_N; k++) {
		sc_use(&T.w, k);
		upload_ok("after-store", T.bytes, T.len);
	}
	sc_use(&T.w, 1);
	assert_int_equal(listed_when(before + SCALE_N, 2000), before + SCALE_N);
}

static void t_pg_restart(void **state)
{
	char path[96];
	int k;

	(void)state;
	assert_int_equal(sc_pg(&T.w, "stop"), 0);
	su_sleep_ms(150); /* past the 100 ms a server trusts what it last read */
	for (k = 0; k < SCALE_N; k++) {
		sc_use(&T.w, k);
		t_error("GET", "/api/traces", NULL, 503, "catalog_unavailable");
		t_error("GET", "/api/search?q=frame", NULL, 503, "catalog_unavailable");
	}
	sc_health_all(&T.w, 503, 3000);
	assert_int_equal(sc_pg(&T.w, "start"), 0);
	for (k = 0; k < SCALE_N; k++) {
		sc_use(&T.w, k);
		if (api_get_until("/api/traces", 200, 10000, "\"shared\"") != 200)
			fail_msg("server %d: the listing did not come back after PostgreSQL (see %s)", k, T.w.log[k]);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64, T.id);
		if (api_get_until(path, 200, 5000, "\"ready\"") != 200)
			fail_msg("server %d: the trace did not come back", k);
	}
	sc_health_all(&T.w, 200, 5000);
	sc_use(&T.w, 2);
	upload_ok("after-pg", T.bytes, T.len);
}

/* Sends a request head announcing len bytes and the first sent of them,
 * then closes the connection. */
/* How many files server k's cache holds for trace id. */
static int cached_files(int k, int64_t id)
{
	char dir[192];
	struct dirent *e;
	DIR *d;
	int n = 0;

	t_fmt(dir, sizeof(dir), "%s/traces/%" PRId64, T.w.cache[k], id);
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * "Deleting a trace ... deletes its objects and its cached files"
 * (docs/DEPLOY.md), whichever server it goes through: a trace uploaded
 * through server 0 and read through server 1, deleted through server 1
 * while server 0 is stopped, leaves nothing in the bucket nor in server
 * 1's cache. Server 0 is started again (on a new port).
 */
static void t_delete_elsewhere(void **state)
{
	char prefix[64], path[64];
	int64_t id;

	(void)state;
	sc_use(&T.w, 0);
	id = upload_ok("deleted-elsewhere", T.bytes, T.len);
	t_fmt(prefix, sizeof(prefix), "lib/traces/%" PRId64 "/", id);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	sc_use(&T.w, 1);
	assert_int_equal(api_get_until(path, 200, 2000, NULL), 200); /* ready there within a sync */
	assert_true(cached_files(1, id) > 0);
	assert_int_equal(su_server_stop(&T.w.srv[0], SIGTERM), 0);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	cJSON_Delete(t_call("DELETE", path, NULL, 204));
	if (sc_bucket_count(&T.w, prefix) != 0)
		fail_msg("trace %" PRId64 "'s objects stayed in the store: %s", id, sc_bucket_keys(&T.w, prefix));
	assert_int_equal(cached_files(1, id), 0);
	sc_server_start(&T.w, 0);
	sc_health_all(&T.w, 200, 5000);
}

static void leave_mid_upload(int port, const char *body, size_t len, size_t sent)
{
	char head[256];
	int fd = su_connect(port);
	size_t off = 0;
	ssize_t n;

	assert_true(fd >= 0);
	t_fmt(head, sizeof(head), "POST /api/traces?name=gone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n",
	      len);
	assert_int_equal(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
	while (off < sent && (n = send(fd, body + off, sent - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)n;
	su_sleep_ms(300); /* the server has spooled what came */
	close(fd);
}

static void t_client_leaves(void **state)
{
	size_t len;
	char *big = sc_read_file(T.big, &len), spool[192];
	int64_t before;
	int objects = sc_bucket_count(&T.w, "lib/"), k;

	(void)state;
	sc_use(&T.w, 0);
	before = listed();
	for (k = 0; k < SCALE_N; k++)
		leave_mid_upload(T.w.port[k], big, len, len / 2);
	su_sleep_ms(500);
	for (k = 0; k < SCALE_N; k++) {
		DIR *d;
		struct dirent *e;
		int files = 0;

		sc_use(&T.w, k);
		assert_int_equal(listed(), before);
		t_fmt(spool, sizeof(spool), "%s/spool", T.w.cache[k]);
		if ((d = opendir(spool)) != NULL) {
			while ((e = readdir(d)) != NULL)
				files += e->d_name[0] != '.';
			closedir(d);
		}
		if (files)
			fail_msg("server %d left %d files in %s", k, files, spool);
	}
	assert_int_equal(sc_bucket_count(&T.w, "lib/"), objects);
	assert_int_equal(sc_bucket_open_uploads(&T.w), 0);
	free(big);
	sc_health_all(&T.w, 200, 2000);
}

/* Every server stops cleanly. */
static void t_clean_stop(void **state)
{
	int k, rc;

	(void)state;
	for (k = 0; k < SCALE_N; k++) {
		rc = su_server_stop(&T.w.srv[k], SIGTERM);
		if (rc != 0)
			fail_msg("server %d ended with %d (see %s)", k, rc, T.w.log[k]);
	}
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[512], dir[] = "/tmp/test_scale_fxt.XXXXXX";

	(void)state;
	if (exe == NULL || gen == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(T.small, sizeof(T.small), "%s/small.fxt", dir);
	snprintf(T.big, sizeof(T.big), "%s/big.fxt", dir);
	snprintf(cmd, sizeof(cmd), "%s --events 6000 --threads 3 --seed 25 %s >/dev/null && "
				   "%s --events 120000 --threads 6 --seed 26 %s >/dev/null", gen, T.small, gen, T.big);
	if (system(cmd) != 0)
		return -1;
	T.bytes = sc_read_file(T.small, &T.len);
	snprintf(T.part, sizeof(T.part), "%zu", T.len);
	return sc_setup(&T.w, exe, T.part);
}

static int teardown(void **state)
{
	char dir[128];

	(void)state;
	sc_teardown(&T.w, getenv("KEEP") != NULL);
	snprintf(dir, sizeof(dir), "%s", T.small);
	*strrchr(dir, '/') = '\0';
	su_rm_tree(dir);
	free(T.bytes);
	free(T.slices);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_upload_one_read_all),
		cmocka_unit_test(t_read_after_write),
		cmocka_unit_test(t_empty_upload),
		cmocka_unit_test(t_one_part),
		cmocka_unit_test(t_many_parts),
		cmocka_unit_test(t_store_down),
		cmocka_unit_test(t_pg_restart),
		cmocka_unit_test(t_delete_elsewhere),
		cmocka_unit_test(t_client_leaves),
		cmocka_unit_test(t_clean_stop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
