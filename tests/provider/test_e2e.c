/*
 * End to end: a multi-threaded program (e2e_prog.c) linked with the
 * provider library is recorded through the real server by `trace-server
 * record` (cl_record_main, in this process), and its trace in the library must
 * be what the program did: every event, on its thread, in order, with its
 * names and arguments, and every counter sample.
 *
 *   E2E_SERVER=build/rel/trace-server E2E_PROG=build/rel/tests/provider/e2e_prog test_e2e
 *
 * Each buffering mode is recorded once; in circular and oneshot the buffer
 * is made big enough for the whole run, so nothing may be missing.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <pthread.h>

#include "../server_util.h"
#include "../../provider/trace.h"

#include "../../client/client.h"

#define THREADS 4
#define STEPS 300

static struct su_server S;
static char url[64], prog[512], tmpdir[64], server_bin[512];
static int failures;

#define CHECK(c, ...)                                                                                                  \
	do {                                                                                                           \
		if (!(c)) {                                                                                            \
			fprintf(stderr, "test_e2e: %s:%d: ", __FILE__, __LINE__);                                      \
			fprintf(stderr, __VA_ARGS__);                                                                  \
			fputc('\n', stderr);                                                                           \
			failures++;                                                                                    \
			return -1;                                                                                     \
		}                                                                                                      \
	} while (0)

/* One SQL query's single value as text (the API's {"columns", "rows"});
 * the caller frees it. NULL on error. */
static char *sql_value(int64_t trace, const char *sql)
{
	char path[64];
	struct su_req q = {"POST", path, "Content-Type: text/plain\r\n", sql, strlen(sql), 0, 0};
	struct su_resp r = {0};
	cJSON *j, *rows, *v;
	char *out = NULL;

	snprintf(path, sizeof(path), "/api/traces/%lld/query", (long long)trace);
	if (su_request(S.port, &q, &r, 60000) != 0 || r.status != 200) {
		fprintf(stderr, "test_e2e: query failed (%d): %s\n%s\n", r.status, r.body ? r.body : "", sql);
		su_resp_free(&r);
		return NULL;
	}
	j = cJSON_Parse(r.body);
	rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
	v = cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 0), 0);
	if (cJSON_IsString(v))
		out = strdup(v->valuestring);
	else if (cJSON_IsNumber(v) && asprintf(&out, "%lld", (long long)v->valuedouble) < 0)
		out = NULL;
	cJSON_Delete(j);
	su_resp_free(&r);
	return out;
}

/* The newest trace named name, once ready: its id, or -1. */
static int64_t ready_trace(const char *name)
{
	double deadline = su_now() + 60;

	while (su_now() < deadline) {
		struct su_req q = {"GET", "/api/traces", NULL, NULL, 0, 0, 0};
		struct su_resp r = {0};
		cJSON *j, *t;
		int64_t id = -1;

		if (su_request(S.port, &q, &r, 30000) == 0 && r.status == 200 && (j = cJSON_Parse(r.body))) {
			cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(j, "traces"))
			{
				const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
				const cJSON *st = cJSON_GetObjectItemCaseSensitive(t, "status");

				if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0 && cJSON_IsString(st) &&
				    strcmp(st->valuestring, "ready") == 0) {
					id = (int64_t)cJSON_GetObjectItemCaseSensitive(t, "id")->valuedouble;
					break;
				}
			}
			cJSON_Delete(j);
		}
		su_resp_free(&r);
		if (id >= 0)
			return id;
		su_sleep_ms(200);
	}
	return -1;
}

/* Runs e2e_prog under record_main; reads its "thread INDEX TID" lines. */
static int record_prog(const char *mode, const char *name, long tids[THREADS])
{
	char out[] = "/tmp/e2e-out-XXXXXX", threads[8], steps[8], line[128], m[16], nm[64];
	char *argv[] = {"trace-server", "record", "--server", url, "--mode", m, "--buffer-mb", "16",
			"--name", nm, "--", prog, threads, steps, NULL};
	int fd = mkstemp(out), saved = dup(1), rc;
	FILE *f;

	snprintf(m, sizeof(m), "%s", mode);
	snprintf(nm, sizeof(nm), "%s", name);
	snprintf(threads, sizeof(threads), "%d", THREADS);
	snprintf(steps, sizeof(steps), "%d", STEPS);
	fflush(stdout);
	dup2(fd, 1);
	rc = cl_record_main(14, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(fd);
	CHECK(rc == 0, "record exited %d", rc);
	f = fopen(out, "r");
	while (f && fgets(line, sizeof(line), f)) {
		int t;
		long tid;

		if (sscanf(line, "thread %d %ld", &t, &tid) == 2 && t >= 0 && t < THREADS)
			tids[t] = tid;
	}
	if (f)
		fclose(f);
	remove(out);
	return 0;
}

/* What the program did, as the query below renders it. */
static char *expected(const long tids[THREADS])
{
	size_t cap = 1 << 22, n = 0;
	char *s = malloc(cap);
	int order[THREADS], t, i, k;

	for (t = 0; t < THREADS; t++) /* threads in tid order */
		order[t] = t;
	for (t = 0; t < THREADS; t++)
		for (k = t + 1; k < THREADS; k++)
			if (tids[order[k]] < tids[order[t]]) {
				int x = order[t];

				order[t] = order[k];
				order[k] = x;
			}
	s[0] = '\0';
	for (k = 0; k < THREADS; k++) {
		t = order[k];
		for (i = 0; i < STEPS; i++) {
			n += (size_t)snprintf(s + n, cap - n, "%sstep|%ld|e2e-%d|0|thread=%d,seq=%d,label=t%d-s%d", n ? ";" : "",
					      tids[t], t, t, i, t, i);
			if (i % 5 == 0)
				n += (size_t)snprintf(s + n, cap - n,
						      ";inner|%ld|e2e-%d|1|seq=%d;tick|%ld|e2e-%d|2|seq=%d,half=%.1f", tids[t], t,
						      i, tids[t], t, i, i / 2.0);
		}
	}
	return s;
}

#define EVENTS_SQL                                                                                                     \
	"SELECT group_concat(x, ';') FROM (SELECT s.name || '|' || th.tid || '|' || ifnull(th.name, '') || '|' || "   \
	"s.depth || '|' || (SELECT group_concat(key || '=' || (CASE WHEN type = 5 THEN printf('%.1f', value) ELSE "   \
	"value END), ',') FROM (SELECT * FROM arg_view a WHERE a.arg_set_id = s.arg_set_id ORDER BY seq)) AS x "       \
	"FROM slice_view s JOIN tracks tr ON tr.id = s.track_id JOIN threads th ON th.id = tr.thread_id "            \
	"ORDER BY th.tid, s.ts, s.depth)"

static int check_trace(const char *mode, int64_t id, const long tids[THREADS])
{
	char *got = sql_value(id, EVENTS_SQL), *want = expected(tids), *v;
	char sql[512];
	int t;

	CHECK(got != NULL, "%s: no events", mode);
	if (strcmp(got, want) != 0) {
		size_t i = 0;

		while (got[i] && got[i] == want[i])
			i++;
		fprintf(stderr, "test_e2e: %s: events differ at byte %zu:\n  got  ...%.120s\n  want ...%.120s\n", mode, i,
			got + (i > 40 ? i - 40 : 0), want + (i > 40 ? i - 40 : 0));
		failures++;
		free(got);
		free(want);
		return -1;
	}
	free(got);
	free(want);
	/* each thread's counter: STEPS samples 1..STEPS in order */
	for (t = 0; t < THREADS; t++) {
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) || ':' || min(value) || ':' || max(value) || ':' || sum(value) FROM counters c "
			 "JOIN tracks tr ON tr.id = c.track_id WHERE tr.counter_id = %d",
			 t);
		v = sql_value(id, sql);
		snprintf(sql, sizeof(sql), "%d:1:%d:%d", STEPS, STEPS, STEPS * (STEPS + 1) / 2);
		CHECK(v && strcmp(v, sql) == 0, "%s: counter %d: %s, want %s", mode, t, v ? v : "(null)", sql);
		free(v);
	}
	/* each flow from a step to the next step on its thread: the flow's
	 * events, first statements of their zones, bound inside them */
	snprintf(sql, sizeof(sql), "%d", THREADS * ((STEPS - 2) / 5 + 1));
	v = sql_value(id, "SELECT count(*) FROM flows f JOIN slice_view a ON a.id = f.from_slice_id "
			  "JOIN slice_view b ON b.id = f.to_slice_id WHERE a.name = 'step' AND b.name = 'step' "
			  "AND a.track_id = b.track_id AND (SELECT value FROM arg_view WHERE arg_set_id = b.arg_set_id "
			  "AND key = 'seq') = (SELECT value FROM arg_view WHERE arg_set_id = a.arg_set_id AND key = 'seq') + 1");
	CHECK(v && strcmp(v, sql) == 0, "%s: flows from a step to the next %s, want %s", mode, v ? v : "(null)", sql);
	free(v);
	v = sql_value(id, "SELECT count(*) FROM flows");
	CHECK(v && strcmp(v, sql) == 0, "%s: flows %s, want %s", mode, v ? v : "(null)", sql);
	free(v);
	v = sql_value(id, "SELECT name FROM processes WHERE name IS NOT NULL LIMIT 1");
	CHECK(v && strcmp(v, "e2e_prog") == 0, "%s: process name %s", mode, v ? v : "(null)");
	free(v);
	v = sql_value(id, "SELECT ifnull(sum(value), 0) FROM diagnostics");
	CHECK(v && strcmp(v, "0") == 0, "%s: diagnostics %s", mode, v ? v : "(null)");
	free(v);
	return 0;
}

static int run_mode(const char *mode)
{
	long tids[THREADS] = {0};
	char name[64];
	int64_t id;
	int t;

	snprintf(name, sizeof(name), "e2e-%s", mode);
	if (record_prog(mode, name, tids) != 0)
		return -1;
	for (t = 0; t < THREADS; t++)
		CHECK(tids[t] > 0, "%s: the program did not report thread %d", mode, t);
	id = ready_trace(name);
	CHECK(id >= 0, "%s: no ready trace named %s", mode, name);
	if (check_trace(mode, id, tids) == 0)
		fprintf(stderr, "test_e2e: %s: trace %lld matches the program\n", mode, (long long)id);
	return 0;
}

/* A capture request; its reply parsed (the caller deletes it), or NULL
 * when the status is not want. */
static cJSON *capture_call(const char *method, const char *path, const char *body, int want)
{
	struct su_req q = {method, path, NULL, body, body ? strlen(body) : 0, 0, 0};
	struct su_resp r = {0};
	cJSON *j = NULL;

	if (su_request(S.port, &q, &r, 30000) == 0 && r.status == want)
		j = cJSON_Parse(r.body ? r.body : "");
	else
		fprintf(stderr, "test_e2e: %s %s: %d %s\n", method, path, r.status, r.body ? r.body : "");
	su_resp_free(&r);
	return j;
}

/* The capture's first provider's non_durable_bytes_written, or -1. */
static double capture_rolling_bytes(const char *path)
{
	cJSON *c = capture_call("GET", path, NULL, 200);
	const cJSON *ps = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "provider_stats"), 0);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ps, "non_durable_bytes_written");
	double n = cJSON_IsNumber(v) ? v->valuedouble : -1;

	cJSON_Delete(c);
	return n;
}

/* A thread named with 66 bytes whose 63rd and 64th are one character. */
static void *long_named_thread(void *arg)
{
	char name[67];

	(void)arg;
	memset(name, 'a', 62);
	memcpy(name + 62, "\xc3\xa9zz", 5);
	trace_set_thread_name(name);
	TRACE_INSTANT("slow", "named");
	return NULL;
}

/* The trace's /tracks names that thread by its first 62 bytes: the cut
 * left the whole character out, no lone 0xC3 shown as U+FFFD. */
static int check_long_name(void)
{
	int64_t id = ready_trace("e2e-slow");
	char path[64], want[80];
	struct su_req q = {"GET", path, NULL, NULL, 0, 0, 0};
	struct su_resp r = {0};
	int ok;

	CHECK(id >= 0, "slow: no ready trace");
	snprintf(path, sizeof(path), "/api/traces/%lld/tracks", (long long)id);
	memset(want, 'a', 62);
	snprintf(want + 62, sizeof(want) - 62, "\"");
	ok = su_request(S.port, &q, &r, 30000) == 0 && r.status == 200 && r.body && strstr(r.body, want) &&
	     !strstr(r.body, "\xef\xbf\xbd") && !strstr(r.body, "\\ufffd");
	su_resp_free(&r);
	CHECK(ok, "slow: /tracks does not name the thread with its name cut cleanly at 62 bytes");
	return 0;
}

/* A slow program in a streaming capture of 4 MB (a buffer fills in a
 * minute at 40 KB/s): its records show in the capture's statistics within
 * 2 s of its first one, long before any buffer is full or the capture
 * stops. This process is the program (the library is linked in). */
static int run_slow_streaming(void)
{
	static const char cfg[] = "{\"name\": \"e2e-slow\", \"buffering_mode\": \"streaming\", "
				  "\"buffer_size_megabytes_hint\": 4}";
	struct trace_provider_config pc = {url, NULL, "e2e-slow", 0};
	static char payload[1001];
	char path[96];
	double t0, bytes = 0;
	pthread_t th;
	cJSON *c;
	int64_t id;

	memset(payload, 'x', sizeof(payload) - 1);
	c = capture_call("POST", "/api/captures", cfg, 201);
	CHECK(c != NULL, "slow: no capture");
	id = (int64_t)cJSON_GetObjectItemCaseSensitive(c, "id")->valuedouble;
	cJSON_Delete(c);
	snprintf(path, sizeof(path), "/api/captures/%lld/start", (long long)id);
	cJSON_Delete(capture_call("POST", path, "{}", 200));
	CHECK(trace_provider_start(&pc) == 0 && trace_provider_wait_started(5000), "slow: the provider did not start");
	snprintf(path, sizeof(path), "/api/captures/%lld", (long long)id);
	pthread_create(&th, NULL, long_named_thread, NULL);
	pthread_join(th, NULL);
	for (t0 = su_now(); su_now() - t0 < 2.0 && bytes <= 0;) {
		TRACE_INSTANT("slow", "tick", TA_STRING("pad", payload)); /* 1 KB every 25 ms: 40 KB/s */
		su_sleep_ms(25);
		bytes = capture_rolling_bytes(path);
	}
	trace_provider_stop();
	cJSON_Delete(capture_call("DELETE", path, NULL, 200));
	CHECK(bytes > 0, "slow: nothing reached the capture within 2 s (streaming waited for a full buffer)");
	fprintf(stderr, "test_e2e: slow streaming: records seen after %.2f s\n", su_now() - t0);
	return check_long_name();
}

int main(void)
{
	const char *bin = getenv("E2E_SERVER"), *p = getenv("E2E_PROG");
	char *argv[] = {server_bin, "serve", "--port", "0", "--data", tmpdir, NULL};
	char rm[128];

	if (bin == NULL || p == NULL) {
		fprintf(stderr, "usage: E2E_SERVER=trace-server E2E_PROG=e2e_prog test_e2e\n");
		return 2;
	}
	snprintf(prog, sizeof(prog), "%s", p);
	snprintf(server_bin, sizeof(server_bin), "%s", bin);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/e2e-data-XXXXXX");
	if (mkdtemp(tmpdir) == NULL || su_server_start(&S, argv, NULL, 30) != 0) {
		fprintf(stderr, "test_e2e: cannot start %s\n", bin);
		return 1;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", S.port);
	run_mode("streaming");
	run_mode("circular");
	run_mode("oneshot");
	run_slow_streaming();
	su_server_stop(&S, SIGTERM);
	snprintf(rm, sizeof(rm), "rm -rf %s", tmpdir);
	if (system(rm) != 0)
		fprintf(stderr, "test_e2e: could not remove %s\n", tmpdir);
	fprintf(stderr, "test_e2e: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
