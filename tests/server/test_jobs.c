/*
 * Ingest as shared jobs (docs/DEPLOY.md): real servers sharing one catalog
 * in PostgreSQL and one S3-compatible store (s3rver), both on loopback and
 * started here. A server killed (-9) with a job claimed leaves it to
 * another, which finishes it with the same answers as the embedded mode; a
 * server paused (SIGSTOP) past its lease and resumed has its commit
 * refused and its object removed from the bucket, the winner's result
 * kept; a live stream that ended on one server is ingested whole by
 * another; 20 uploads at once over three servers are each ingested
 * exactly once.
 *
 * A short lease (TRACE_SERVER_JOB_LEASE_MS) keeps the test quick; the
 * test-only TRACE_SERVER_TEST_COMMIT_DELAY_MS holds a server between the
 * publish of its database and its commit, the window in which it is
 * killed or paused.
 *
 * Env: TRACE_SERVER, GEN_FXT, PG_SH (default tests/catalog/pg.sh), S3RVER;
 * node and the npm packages (make deps-e2e); run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../store/s3rver_util.h"
#include "api_util.h"

enum { NSRV = 3, EMBEDDED = NSRV, LEASE_MS = 1500, DELAY_MS = 6000, UPLOADS = 20 };

static struct {
	char root[64], exe[256], fxt[128], pg[128], pgurl[256], s3url[256];
	char data[NSRV + 1][128], log[NSRV + 1][128];
	struct su_server srv[NSRV + 1];
	struct s3rver store;
	char *bytes;
	size_t len;
} W;

static int pg_ctl(const char *verb)
{
	return su_pg_ctl(verb, W.pg);
}

static void use(int k)
{
	api_port = W.srv[k].port;
	api_log = W.log[k];
}

/* Server k on the shared catalog and store (its own data and cache),
 * held delay_ms between publish and commit when delay_ms > 0. */
static void start(int k, int delay_ms)
{
	/* --preview-min 1: every upload would have a preview but for shared jobs */
	const char *extra[] = { "--catalog", W.pgurl, "--store", W.s3url, "--preview-min", "1", NULL };
	char v[16];

	if (W.srv[k].pid) { /* left by a test that failed */
		kill(W.srv[k].pid, SIGCONT);
		su_server_stop(&W.srv[k], SIGKILL);
	}
	static int starts;
	char old[160];

	/* each start's log is its own; the last ones kept for KEEP_TMP */
	t_fmt(old, sizeof(old), "%s.%d", W.log[k], ++starts);
	if (rename(W.log[k], old) != 0 && errno != ENOENT)
		fail_msg("cannot move %s", W.log[k]);
	snprintf(v, sizeof(v), "%d", delay_ms);
	if (delay_ms > 0)
		setenv("TRACE_SERVER_TEST_COMMIT_DELAY_MS", v, 1);
	else
		unsetenv("TRACE_SERVER_TEST_COMMIT_DELAY_MS");
	api_start(&W.srv[k], W.exe, W.data[k], W.log[k], extra);
	unsetenv("TRACE_SERVER_TEST_COMMIT_DELAY_MS");
}

/* A clean stop: exit code 0 (under ASan, no leak and no error). */
static void stop(int k)
{
	int rc;

	if (W.srv[k].pid && (rc = su_server_stop(&W.srv[k], SIGTERM)) != 0)
		fail_msg("server %d exited with %d (see %s)", k, rc, W.log[k]);
}

/* W's bytes to server k: an upload, or (chunked) a live stream's body. */
static int64_t send_bytes(int k, const char *query, int chunked)
{
	struct su_req q = { "POST", query, NULL, W.bytes, W.len, chunked, 0 };
	struct su_resp r;
	cJSON *j;
	int64_t id;

	if (su_request(W.srv[k].port, &q, &r, 60000) != 0)
		fail_msg("upload to server %d: no reply (see %s)", k, W.log[k]);
	if (r.status != 201 && r.status != 202)
		fail_msg("upload to server %d: status %d: %.300s", k, r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

static int64_t upload(int k, const char *query)
{
	return send_bytes(k, query, 0);
}

/* Trace id's status through server k, waited for until it is want (or
 * failed, or secs ran out); the last status seen ("absent" while the
 * server has not read the trace another server added: within about
 * 100 ms, docs/DEPLOY.md), the caller's to free. */
static char *wait_status(int k, int64_t id, const char *want, double secs)
{
	double until = su_now() + secs;
	char path[64], *st;
	struct su_resp r;
	cJSON *j;

	use(k);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	for (;;) {
		struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };

		if (su_request(W.srv[k].port, &q, &r, 60000) != 0 || (r.status != 200 && r.status != 404))
			fail_msg("GET %s through server %d: status %d (see %s)", path, k, r.status, W.log[k]);
		j = r.status == 200 ? cJSON_ParseWithLength(r.body, r.body_len) : NULL;
		st = strdup(j ? str(j, "status") : "absent");
		cJSON_Delete(j);
		su_resp_free(&r);
		if (strcmp(st, want) == 0 || strcmp(st, "failed") == 0 || su_now() > until)
			return st;
		free(st);
		su_sleep_ms(50);
	}
}

/* The database objects of trace id in the bucket (s3rver keeps
 * <bucket>/<key>._S3rver_object files): how many, their names in names. */
static int db_objects(int64_t id, char names[][64], int max)
{
	char dir[256];
	struct dirent *e;
	DIR *d;
	int n = 0;

	t_fmt(dir, sizeof(dir), "%s/s3rver/traces/lib/traces/%" PRId64, W.root, id);
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		static const char suffix[] = ".db._S3rver_object";
		size_t len = strlen(e->d_name);

		if (strncmp(e->d_name, "trace-", 6) != 0 || len < sizeof(suffix) ||
		    strcmp(e->d_name + len - (sizeof(suffix) - 1), suffix) != 0)
			continue;
		len -= sizeof(suffix) - 1;
		if (n < max)
			snprintf(names[n], 64, "%.*s.db", (int)len, e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/* Waits until trace id has n database objects, within secs. */
static int wait_objects(int64_t id, int n, double secs)
{
	char names[8][64];
	double until = su_now() + secs;
	int got;

	while ((got = db_objects(id, names, 8)) != n && su_now() < until)
		su_sleep_ms(20);
	return got;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	if (f == NULL)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = calloc(1, (size_t)n + 1);
	if (fread(b, 1, (size_t)n, f) != (size_t)n)
		b[0] = '\0';
	fclose(f);
	return b;
}

/* How many lines of server k's log contain needle. */
static int log_count(int k, const char *needle)
{
	char *log = slurp(W.log[k]), *p;
	int n = 0;

	for (p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(log);
	return n;
}

static char *body_of(int k, const char *path)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	char *b;

	if (su_request(W.srv[k].port, &q, &r, 60000) != 0 || r.status != 200)
		fail_msg("GET %s through server %d: status %d (see %s)", path, k, r.status, W.log[k]);
	b = r.body;
	r.body = NULL;
	su_resp_free(&r);
	return b;
}

/* The slices of the first three threads of trace id through server k, in
 * out[3] (the caller frees them). */
static void slices_of(int k, int64_t id, char *out[3])
{
	char path[128];
	const cJSON *p, *x;
	cJSON *t;
	int n = 0;

	use(k);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	t = t_get(path);
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(t, "processes"))
		cJSON_ArrayForEach(x, cJSON_GetObjectItem(p, "threads"))
			if (n < 3 && cJSON_IsNumber(cJSON_GetObjectItem(x, "track_id"))) {
				t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, id,
				      num(x, "track_id"));
				out[n] = body_of(k, path);
				assert_non_null(strstr(out[n], "\"ts\""));
				n++;
			}
	cJSON_Delete(t);
	assert_int_equal(n, 3);
}

/* Trace id, read through server k, answers as the embedded mode does for
 * the same file: the slices of its first three threads. */
static void same_as_embedded(int k, int64_t id, int live)
{
	char *st, *emb[3], *got[3];
	/* a live trace's rows take their ids as a stream's do (docs/API.md,
	 * "Layout"): the embedded server's is streamed too */
	int64_t eid = send_bytes(EMBEDDED, live ? "/api/traces?live=1&name=embedded&wait=1" : "/api/traces?name=embedded&wait=1",
				 live);
	int i;

	st = wait_status(EMBEDDED, eid, "ready", 60);
	assert_string_equal(st, "ready");
	free(st);
	slices_of(EMBEDDED, eid, emb);
	slices_of(k, id, got);
	for (i = 0; i < 3; i++) {
		assert_string_equal(got[i], emb[i]);
		free(got[i]);
		free(emb[i]);
	}
}

/* Trace id, ingesting on server k as a shared job for longer than a
 * preview takes, has none (docs/DEPLOY.md): its data waits for the commit. */
static void no_preview(int k, int64_t id)
{
	char path[96];
	cJSON *t;

	use(k);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	t = t_get(path);
	assert_string_equal(str(t, "status"), "ingesting");
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "preview")));
	cJSON_Delete(t);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	t_error("GET", path, NULL, 409, "not_ready");
}

/* (a) A dies with the job claimed (its database published, not
 * committed): after its lease B claims the job and finishes it, and B
 * answers as the embedded mode does for the same file. */
static void test_kill_mid_ingest(void **state)
{
	char names[8][64], *st;
	int64_t id;

	(void)state;
	start(0, DELAY_MS);
	id = upload(0, "/api/traces?name=killed");
	/* A claimed it, ingested and published: it waits to commit */
	assert_int_equal(wait_objects(id, 1, 30), 1);
	st = wait_status(0, id, "ingesting", 5);
	assert_string_equal(st, "ingesting");
	free(st);
	/* A alive: its heartbeat keeps the job A's past twice the lease */
	start(1, 0);
	su_sleep_ms(2 * LEASE_MS);
	no_preview(0, id);
	assert_int_equal(log_count(1, "ingest job committed"), 0);
	assert_int_equal(db_objects(id, names, 8), 1);
	assert_int_equal(su_server_stop(&W.srv[0], SIGKILL), 128 + SIGKILL);
	st = wait_status(1, id, "ready", 60);
	assert_string_equal(st, "ready");
	free(st);
	assert_int_equal(log_count(1, "ingest job committed"), 1);
	assert_int_equal(log_count(1, "attempt 2,"), 1); /* the second claim of the job */
	assert_int_equal(log_count(0, "ingest job committed"), 0);
	/* A's object (it died before it could know) goes at B's commit: B's
	 * alone is the trace's */
	assert_int_equal(wait_objects(id, 1, 10), 1);
	{
		char left[8][64];

		assert_int_equal(db_objects(id, left, 8), 1);
		assert_string_not_equal(left[0], names[0]);
	}
	/* the same answers as the embedded mode */
	same_as_embedded(1, id, 0);
	stop(1);
}

/* (b) A paused past its lease while it holds a finished, published
 * ingest; B claims the job and is held before its commit too, so that A,
 * resumed, commits while the job is B's: the token refuses A (not merely
 * a job already gone), A removes its object, and B's result is the trace. */
static void test_pause_past_lease(void **state)
{
	char before[8][64], after[8][64], *st, *ga[3], *gb[3];
	int64_t id;
	int i, n;

	(void)state;
	start(0, DELAY_MS);
	id = upload(0, "/api/traces?name=paused");
	assert_int_equal(wait_objects(id, 1, 30), 1);
	assert_int_equal(db_objects(id, before, 8), 1); /* A's object */
	su_sleep_ms(500); /* A past its publish (the store has the object before A has the reply) */
	assert_int_equal(kill(W.srv[0].pid, SIGSTOP), 0);
	start(1, 2 * DELAY_MS);
	assert_int_equal(wait_objects(id, 2, 30), 2); /* B claimed, ingested and published */
	assert_int_equal(log_count(1, "ingest job committed"), 0);
	assert_int_equal(kill(W.srv[0].pid, SIGCONT), 0);
	/* A wakes past its delay, commits, is refused and cleans up, while B waits */
	for (i = 0; i < 300 && log_count(0, "commit refused") == 0; i++)
		su_sleep_ms(20);
	assert_int_equal(log_count(0, "commit refused"), 1);
	assert_int_equal(log_count(0, "was removed"), 1);
	assert_int_equal(log_count(0, "ingest job committed"), 0);
	assert_int_equal(log_count(1, "ingest job committed"), 0); /* the job was B's all along */
	st = wait_status(1, id, "ready", 60);
	assert_string_equal(st, "ready");
	free(st);
	assert_int_equal(log_count(1, "ingest job committed"), 1);
	n = db_objects(id, after, 8);
	assert_int_equal(n, 1);
	assert_string_not_equal(after[0], before[0]); /* the winner's */
	/* the trace is B's through both servers */
	st = wait_status(0, id, "ready", 10);
	assert_string_equal(st, "ready");
	free(st);
	slices_of(0, id, ga);
	slices_of(1, id, gb);
	for (i = 0; i < 3; i++) {
		assert_string_equal(ga[i], gb[i]);
		free(ga[i]);
		free(gb[i]);
	}
	stop(0);
	stop(1);
}

/* (d) A live stream that ends on A while A's worker holds another job:
 * B ingests it from the store, so A must have sent its source there whole
 * (it was put when the stream began, empty). */
static void test_live_elsewhere(void **state)
{
	struct su_req q = { "POST", "/api/traces?live=1&name=live", NULL, NULL, 0, 1, 0 };
	char line[96], path[96], *st, *file;
	struct su_resp r;
	int64_t busy, id;
	cJSON *j;

	(void)state;
	start(0, DELAY_MS);
	busy = upload(0, "/api/traces?name=busy");
	assert_int_equal(wait_objects(busy, 1, 30), 1); /* A's worker waits to commit it */
	start(1, 0);
	q.body = W.bytes;
	q.body_len = W.len;
	if (su_request(W.srv[0].port, &q, &r, 60000) != 0 || r.status < 200 || r.status > 299)
		fail_msg("live stream: status %d: %.300s", r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	st = wait_status(1, id, "ready", 60);
	assert_string_equal(st, "ready");
	free(st);
	t_fmt(line, sizeof(line), "trace %" PRId64 ": ingest job committed", id);
	assert_int_equal(log_count(1, line), 1);
	assert_int_equal(log_count(0, line), 0);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/file", id);
	{
		struct su_req g = { "GET", path, NULL, NULL, 0, 0, 0 };

		assert_int_equal(su_request(W.srv[1].port, &g, &r, 60000), 0);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, W.len); /* the whole stream, from the store */
		file = r.body;
		assert_memory_equal(file, W.bytes, W.len);
		su_resp_free(&r);
	}
	same_as_embedded(1, id, 1);
	stop(0);
	stop(1);
}

struct uploader {
	int k;
	int64_t id;
};

static void *upload_one(void *arg)
{
	struct uploader *u = arg;
	struct su_req q = { "POST", "/api/traces?name=many", NULL, W.bytes, W.len, 0, 0 };
	struct su_resp r;
	cJSON *j;

	if (su_request(W.srv[u->k].port, &q, &r, 60000) == 0 && r.status == 202 && (j = cJSON_Parse(r.body)) != NULL) {
		u->id = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "id"));
		cJSON_Delete(j);
	}
	su_resp_free(&r);
	return NULL;
}

/* The value of a /metrics sample of server k named exactly series, or -1. */
static double metric(int k, const char *series)
{
	char *m = body_of(k, "/metrics");
	double v = m ? api_metric_sample(m, series) : -1;

	free(m);
	return v;
}

/* (c) 20 uploads at once over three servers: every trace ready, each
 * committed exactly once, by whichever server claimed it. */
static void test_concurrent_once(void **state)
{
	struct uploader u[UPLOADS];
	pthread_t t[UPLOADS];
	char line[96], names[8][64], *st;
	double ok = 0;
	int i, k, commits;

	(void)state;
	for (k = 0; k < NSRV; k++)
		start(k, 0);
	for (i = 0; i < UPLOADS; i++) {
		u[i].k = i % NSRV;
		u[i].id = 0;
		assert_int_equal(pthread_create(&t[i], NULL, upload_one, &u[i]), 0);
	}
	for (i = 0; i < UPLOADS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < UPLOADS; i++) {
		assert_true(u[i].id > 0);
		st = wait_status((i + 1) % NSRV, u[i].id, "ready", 120); /* read through another server */
		assert_string_equal(st, "ready");
		free(st);
	}
	for (i = 0; i < UPLOADS; i++) {
		t_fmt(line, sizeof(line), "trace %" PRId64 ": ingest job committed", u[i].id);
		for (commits = 0, k = 0; k < NSRV; k++)
			commits += log_count(k, line);
		if (commits != 1)
			fail_msg("trace %" PRId64 " committed %d times", u[i].id, commits);
		assert_int_equal(db_objects(u[i].id, names, 8), 1);
	}
	for (k = 0; k < NSRV; k++)
		ok += metric(k, "trace_server_ingests_total{result=\"ok\"}");
	if (ok != UPLOADS)
		fail_msg("%g ingests counted over the servers, not %d", ok, UPLOADS);
	for (k = 0; k < NSRV; k++)
		stop(k);
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[512], path[256], dir[200], root[64];
	const char *extra[] = { NULL };
	FILE *f;
	int k;

	(void)state;
	if (exe == NULL || gen == NULL || realpath(exe, W.exe) == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	snprintf(W.root, sizeof(W.root), "/tmp/test_jobs.XXXXXX");
	if (mkdtemp(W.root) == NULL || chmod(W.root, 0711) != 0)
		return -1;
	snprintf(W.pg, sizeof(W.pg), "%s/pg", W.root);
	snprintf(W.fxt, sizeof(W.fxt), "%s/t.fxt", W.root);
	snprintf(cmd, sizeof(cmd), "%s --events 20000 --threads 4 --seed 21 %s >/dev/null", gen, W.fxt);
	if (system(cmd) != 0 || pg_ctl("start") != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/url", W.pg);
	if ((f = fopen(path, "r")) == NULL || fgets(W.pgurl, sizeof(W.pgurl), f) == NULL) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	W.pgurl[strcspn(W.pgurl, "\n")] = '\0';
	W.bytes = slurp(W.fxt);
	{
		struct stat sb;

		if (stat(W.fxt, &sb) != 0)
			return -1;
		W.len = (size_t)sb.st_size;
	}
	signal(SIGPIPE, SIG_IGN);
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	t_fmt(dir, sizeof(dir), "%s/s3rver", W.root);
	if (s3rver_start(&W.store, dir, "traces", 0) != 0) {
		fprintf(stderr, "s3rver did not start (node and `make deps-e2e` needed)\n");
		return -1;
	}
	snprintf(W.s3url, sizeof(W.s3url), "s3://traces/lib?endpoint=http://127.0.0.1:%u&region=us-east-1",
		 W.store.port);
	snprintf(cmd, sizeof(cmd), "%d", LEASE_MS);
	setenv("TRACE_SERVER_JOB_LEASE_MS", cmd, 1);
	snprintf(root, sizeof(root), "%s", W.root); /* a copy: GCC sees W's members overlap */
	for (k = 0; k <= NSRV; k++) {
		snprintf(W.data[k], sizeof(W.data[k]), "%s/data%d", root, k);
		snprintf(W.log[k], sizeof(W.log[k]), "%s/server%d.log", root, k);
	}
	/* the embedded mode's server, for the reference answers */
	api_start(&W.srv[EMBEDDED], W.exe, W.data[EMBEDDED], W.log[EMBEDDED], extra);
	return 0;
}

static int teardown(void **state)
{
	int k;

	(void)state;
	for (k = 0; k <= NSRV; k++)
		if (W.srv[k].pid) {
			kill(W.srv[k].pid, SIGCONT);
			su_server_stop(&W.srv[k], SIGTERM);
		}
	s3rver_stop(&W.store);
	pg_ctl("kill");
	free(W.bytes);
	if (getenv("KEEP_TMP")) { /* the servers' logs, to read after a failure */
		fprintf(stderr, "kept %s\n", W.root);
		return 0;
	}
	return su_rm_tree(W.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_mid_ingest),
		cmocka_unit_test(test_pause_past_lease),
		cmocka_unit_test(test_live_elsewhere),
		cmocka_unit_test(test_concurrent_once),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
