/*
 * Captures over loopback (docs/API.md "Captures", docs/PROVIDER-PROTOCOL.md):
 * the real server binary (env TRACE_SERVER), providers played by
 * `trace-server stream --provider` on archives from gen_fxt (env GEN_FXT)
 * and by a peer written here, packet by packet, where the test needs to
 * say exactly what a provider sends (alerts, broken framing, late answers).
 *
 * Streaming with two providers merges both into one trace, each in its
 * own provider section, with the rows of each archive; oneshot keeps the
 * first buffer's worth and circular the newest plus every durable record,
 * counting what they drop; the controller's errors are 4xx with its names;
 * alerts and state changes are long polls; with a token every provider
 * connection and capture request needs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "../../capture/fifo.h"
#include "api_util.h"

struct world {
	char root[64], data[128], log[128], exe[256], gen[256];
	char a[160], b[160];   /* two generated archives */
	struct su_server srv;
	pid_t providers[4];
	int nproviders;
};
static struct world W;

static void t_start(const char *const *extra)
{
	api_start(&W.srv, W.exe, W.data, W.log, extra);
}

/* Starts `trace-server stream --provider` on file; waits until the server
 * lists providers_expected providers. */
static void spawn_provider(const char *name, const char *file, int providers_expected)
{
	char port[64];
	double deadline = su_now() + 20;
	pid_t pid;

	t_fmt(port, sizeof(port), "http://127.0.0.1:%d", W.srv.port);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(W.log, O_WRONLY | O_APPEND);

		if (fd >= 0)
			dup2(fd, 2);
		execl(W.exe, W.exe, "stream", "--provider", "--server", port, "--name", name, "--categories",
		      "gfx,input", file, (char *)NULL);
		_exit(127);
	}
	W.providers[W.nproviders++] = pid;
	for (;;) {
		cJSON *j = t_get("/api/providers");
		int n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "providers"));

		cJSON_Delete(j);
		if (n >= providers_expected)
			return;
		if (su_now() > deadline)
			fail_msg("provider %s never registered (see %s)", name, W.log);
		su_sleep_ms(20);
	}
}

/* Waits for the provider processes to end (after TERMINATE). */
static void reap_providers(void)
{
	int i, status;

	for (i = 0; i < W.nproviders; i++) {
		double deadline = su_now() + 20;

		while (waitpid(W.providers[i], &status, WNOHANG) == 0) {
			if (su_now() > deadline) {
				kill(W.providers[i], SIGKILL);
				waitpid(W.providers[i], &status, 0);
				fail_msg("a provider did not end after the capture was terminated");
			}
			su_sleep_ms(20);
		}
	}
	W.nproviders = 0;
}

static int64_t wait_ready(int64_t id)
{
	double deadline = su_now() + 60;
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	for (;;) {
		cJSON *t = t_get(path);
		int ready = strcmp(str(t, "status"), "ready") == 0;

		cJSON_Delete(t);
		if (ready)
			return id;
		if (su_now() > deadline)
			fail_msg("trace %" PRId64 " never became ready", id);
		su_sleep_ms(20);
	}
}

static int64_t scalar(const char *db_path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* Rows of table in an archive ingested alone. */
static int64_t archive_rows(const char *archive, const char *table)
{
	char cmd[700], out[200], sql[128];

	t_fmt(out, sizeof(out), "%s.db", archive);
	if (access(out, R_OK) != 0) {
		t_fmt(cmd, sizeof(cmd), "%s ingest %s -o %s >/dev/null 2>&1", W.exe, archive, out);
		assert_int_equal(system(cmd), 0);
	}
	t_fmt(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	return scalar(out, sql);
}

static cJSON *stats_of(cJSON *reply, const char *name)
{
	cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItem(reply, "provider_stats")) if (strcmp(str(it, "name"), name) == 0) return it;
	fail_msg("no provider_stats for %s", name);
	return NULL;
}

/* ---- a provider played packet by packet ------------------------------------- */

struct peer {
	int fd;
	uint8_t buf[1 << 16];
	size_t n;
	char data[16384]; /* the last DATA payload read (as a string, cut to fit) */
};

/* Connects with the query string q ("name=...&pid=..."). */
static void peer_connect_q(struct peer *p, const char *q, const char *auth, int expect_status)
{
	char head[1024];
	char *end;
	int status = 0;

	memset(p, 0, sizeof(*p));
	assert_true((p->fd = su_connect(W.srv.port)) >= 0);
	t_fmt(head, sizeof(head),
	      "GET /api/providers/connect?%s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
	      "Upgrade: fxt-provider/1\r\n%s\r\n",
	      q, auth ? auth : "");
	assert_int_equal(write(p->fd, head, strlen(head)), (ssize_t)strlen(head));
	while ((end = memmem(p->buf, p->n, "\r\n\r\n", 4)) == NULL) {
		ssize_t k = read(p->fd, p->buf + p->n, sizeof(p->buf) - p->n);

		assert_true(k > 0);
		p->n += (size_t)k;
	}
	sscanf((char *)p->buf, "HTTP/1.1 %d", &status);
	assert_int_equal(status, expect_status);
	p->n -= (size_t)((uint8_t *)end + 4 - p->buf);
	memmove(p->buf, end + 4, p->n);
}

static void peer_connect(struct peer *p, const char *name, const char *auth, int expect_status)
{
	char q[256];

	t_fmt(q, sizeof(q), "name=%s&pid=7", name);
	peer_connect_q(p, q, auth, expect_status);
}

/* The next packet from the server (its DATA payload skipped); fails after
 * 10 s. */
static void peer_read(struct peer *p, struct fifo_packet *pk)
{
	double deadline = su_now() + 10;

	for (;;) {
		if (p->n >= FIFO_PACKET_SIZE) {
			size_t need;

			fifo_decode(p->buf, pk);
			need = FIFO_PACKET_SIZE + (pk->request == FIFO_DATA ? (size_t)pk->data64 : 0);
			if (p->n >= need) {
				if (pk->request == FIFO_DATA)
					snprintf(p->data, sizeof(p->data), "%.*s", (int)(need - FIFO_PACKET_SIZE),
						 (const char *)p->buf + FIFO_PACKET_SIZE);
				memmove(p->buf, p->buf + need, p->n - need);
				p->n -= need;
				return;
			}
		}
		{
			struct pollfd pf = { p->fd, POLLIN, 0 };
			ssize_t k;

			assert_true(su_now() < deadline);
			if (poll(&pf, 1, 100) <= 0)
				continue;
			k = read(p->fd, p->buf + p->n, sizeof(p->buf) - p->n);
			assert_true(k > 0);
			p->n += (size_t)k;
		}
	}
}

/* Reads packets until one with request req. */
static void peer_expect(struct peer *p, uint16_t req, struct fifo_packet *pk)
{
	do
		peer_read(p, pk);
	while (pk->request != req);
}

static void peer_send(struct peer *p, uint16_t req, uint32_t d32, uint64_t d64, const void *pay, size_t n)
{
	struct fifo_packet pk = { req, 0, d32, d64 };
	uint8_t raw[FIFO_PACKET_SIZE];

	fifo_encode(raw, &pk);
	assert_int_equal(write(p->fd, raw, sizeof(raw)), (ssize_t)sizeof(raw));
	if (n)
		assert_int_equal(write(p->fd, pay, n), (ssize_t)n);
}

/* ---- the tests ---------------------------------------------------------------- */

/* Providers and categories are listed; two providers stream one capture
 * whose trace holds both archives' rows, each under its provider. */
static void t_streaming_two_providers(void **state)
{
	cJSON *j, *c;
	int64_t id, trace;
	char path[96], db[200];

	(void)state;
	spawn_provider("alpha", W.a, 1);
	spawn_provider("beta", W.b, 2);
	j = t_get("/api/categories");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "categories")), 2); /* gfx, input once each */
	cJSON_Delete(j);
	c = t_call("POST", "/api/captures",
		   "{\"name\": \"two\", \"buffering_mode\": \"streaming\", \"labels\": {\"run\": \"1\"},"
		   " \"buffer_size_megabytes_hint\": 1}",
		   201);
	id = num(c, "id");
	assert_string_equal(str(c, "state"), "initialized");
	cJSON_Delete(c);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	c = t_call("POST", path, NULL, 200);
	assert_string_equal(str(c, "state"), "started");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(stats_of(c, "alpha"), "started")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(stats_of(c, "beta"), "started")));
	trace = num(c, "trace_id");
	cJSON_Delete(c);
	t_error("POST", path, NULL, 409, "already_started");
	t_error("POST", "/api/captures", "{}", 409, "session_exists");
	/* the providers send their whole archives; then stop */
	{
		double deadline = su_now() + 30;
		char tpath[64];

		t_fmt(tpath, sizeof(tpath), "/api/traces/%" PRId64, trace);
		for (;;) {
			cJSON *t = t_get(tpath);
			int64_t size = num(t, "size_bytes");
			struct stat sa, sb;

			cJSON_Delete(t);
			stat(W.a, &sa);
			stat(W.b, &sb);
			if (size >= sa.st_size + sb.st_size)
				break;
			assert_true(su_now() < deadline);
			su_sleep_ms(50);
		}
	}
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/stop", id);
	c = t_call("POST", path, "{\"write_results\": true}", 200);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(stats_of(c, "alpha"), "stopped")));
	assert_int_equal(num(stats_of(c, "alpha"), "records_dropped"), 0);
	cJSON_Delete(c);
	t_error("POST", path, NULL, 409, "not_started");
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	c = t_call("DELETE", path, NULL, 200);
	assert_int_equal(num(c, "trace_id"), trace);
	cJSON_Delete(c);
	t_error("DELETE", path, NULL, 409, "not_initialized");
	reap_providers();
	wait_ready(trace);
	t_fmt(db, sizeof(db), "%s/traces/%" PRId64 "/trace.db", W.data, trace);
	assert_int_equal(scalar(db, "SELECT count(*) FROM slices"),
			 archive_rows(W.a, "slices") + archive_rows(W.b, "slices"));
	assert_int_equal(scalar(db, "SELECT count(*) FROM counters"),
			 archive_rows(W.a, "counters") + archive_rows(W.b, "counters"));
	assert_int_equal(scalar(db, "SELECT count(*) FROM providers WHERE name IN ('alpha', 'beta')"), 2);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, trace);
	c = t_get(path);
	assert_string_equal(str(c, "name"), "two");
	assert_string_equal(str(cJSON_GetObjectItem(c, "labels"), "run"), "1");
	assert_int_equal(num(cJSON_GetObjectItem(c, "diagnostics"), "unresolved_string_refs"), 0);
	cJSON_Delete(c);
}

/* Oneshot keeps the first buffer's worth; circular the newest buffer's
 * worth plus every durable record. Both count what they drop. */
static void t_oneshot_and_circular(void **state)
{
	const char *modes[] = { "oneshot", "circular" };
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		char body[200], path[96], db[200], ref[200];
		int64_t id, trace, dropped;
		cJSON *c;

		spawn_provider("gamma", W.a, 1);
		t_fmt(body, sizeof(body), "{\"name\": \"%s\", \"buffering_mode\": \"%s\", \"buffer_size_megabytes_hint\": 1}",
		      modes[i], modes[i]);
		c = t_call("POST", "/api/captures", body, 201);
		id = num(c, "id");
		cJSON_Delete(c);
		t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
		c = t_call("POST", path, "{\"buffer_disposition\": \"clear_entire\"}", 200);
		trace = num(c, "trace_id");
		cJSON_Delete(c);
		su_sleep_ms(1500); /* the provider sends its archive (5 MB, far over 1 MB) */
		t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/stop", id);
		c = t_call("POST", path, NULL, 200);
		dropped = num(stats_of(c, "gamma"), "records_dropped_by_server");
		assert_true(dropped > 0);
		/* circular: what the server's buffer let go for newer records was overwritten */
		assert_int_equal(num(stats_of(c, "gamma"), "records_overwritten"), i == 0 ? 0 : dropped);
		assert_true(num(stats_of(c, "gamma"), "non_durable_bytes_written") <= (1 << 20));
		cJSON_Delete(c);
		t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
		cJSON_Delete(t_call("DELETE", path, NULL, 200));
		reap_providers();
		wait_ready(trace);
		t_fmt(db, sizeof(db), "%s/traces/%" PRId64 "/trace.db", W.data, trace);
		assert_true(scalar(db, "SELECT count(*) FROM slices") > 0);
		assert_true(scalar(db, "SELECT count(*) FROM slices") < archive_rows(W.a, "slices"));
		/* the provider reported its buffer as overflowed */
		assert_int_equal(scalar(db, "SELECT buffer_overflows > 0 FROM providers WHERE name = 'gamma'"), 1);
		archive_rows(W.a, "slices");
		t_fmt(ref, sizeof(ref), "%s.db", W.a);
		if (i == 0) {
			/* oneshot: the first records sent */
			assert_true(scalar(db, "SELECT max(ts) FROM slices") < scalar(ref, "SELECT max(ts) FROM slices"));
		} else {
			/* circular: the newest records, with the strings and threads they need */
			assert_int_equal(scalar(db, "SELECT max(ts) FROM slices"), scalar(ref, "SELECT max(ts) FROM slices"));
			assert_int_equal(scalar(db, "SELECT count(*) FROM slice_view WHERE name IS NULL OR name = ''"), 0);
			assert_int_equal(scalar(db, "SELECT count(*) FROM threads WHERE tid IS NULL"), 0);
		}
	}
}

/* A provider that alerts, answers late, and sends broken framing. */
static void t_alerts_and_errors(void **state)
{
	struct peer p;
	struct fifo_packet pk;
	uint8_t raw[FIFO_PACKET_SIZE];
	uint64_t bad[2] = { 0x0000000000000ff4ull /* 255 words: past the payload */, 0 };
	char path[96];
	int64_t id, version;
	cJSON *c;

	(void)state;
	t_error("POST", "/api/captures", "{\"buffering_mode\": \"sometimes\"}", 400, "bad_config");
	t_error("POST", "/api/captures", "{\"buffer_size_megabytes_hint\": 0}", 400, "bad_config");
	/* a uint64 (fuchsia-trace-controller.txt), 0 to 60000: 1.5 is not one
	 * (it used to be taken as 1) */
	t_error("POST", "/api/captures", "{\"start_timeout_milliseconds\": 1.5}", 400, "bad_config");
	t_error("POST", "/api/captures", "{\"start_timeout_milliseconds\": 60001}", 400, "bad_config");
	t_error("POST", "/api/captures", "{\"unknown\": 1}", 400, "bad_config");
	t_error("POST", "/api/captures", "[1]", 400, "bad_json");
	t_error("GET", "/api/captures/999", NULL, 404, "not_found");
	t_error("POST", "/api/captures/999/start", NULL, 404, "not_found");
	t_error("GET", "/api/providers/connect?name=x&pid=1", NULL, 400, "bad_upgrade");

	peer_connect(&p, "peer", NULL, 101);
	c = t_call("POST", "/api/captures", "{\"start_timeout_milliseconds\": 300}", 201);
	id = num(c, "id");
	version = num(c, "state_version");
	cJSON_Delete(c);
	peer_expect(&p, FIFO_INITIALIZE, &pk);
	assert_int_equal(pk.data32, FIFO_MODE_STREAMING);
	assert_int_equal(pk.data64, 4u << 20);
	/* the peer does not answer START: StartTracing answers at its timeout */
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	c = t_call("POST", path, NULL, 200);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(stats_of(c, "peer"), "started")));
	cJSON_Delete(c);
	/* the state changed since initialize: the long poll answers at once */
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/state?after=%" PRId64 "&timeout=5", id, version);
	c = t_get(path);
	assert_string_equal(str(c, "state"), "started");
	cJSON_Delete(c);
	peer_expect(&p, FIFO_START, &pk);
	peer_send(&p, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0, NULL, 0);
	/* an alert, delivered by WatchAlert; then none within the timeout */
	fifo_alert_encode(raw, "low-memory");
	assert_int_equal(write(p.fd, raw, sizeof(raw)), (ssize_t)sizeof(raw));
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/alerts?timeout=10", id);
	c = t_get(path);
	assert_string_equal(str(c, "alert"), "low-memory");
	cJSON_Delete(c);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/alerts?timeout=1", id);
	c = t_get(path);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "alert")));
	cJSON_Delete(c);
	/* SAVE_BUFFER is answered with the same fields */
	peer_send(&p, FIFO_SAVE_BUFFER, 3, 4096, NULL, 0);
	peer_expect(&p, FIFO_BUFFER_SAVED, &pk);
	assert_int_equal(pk.data32, 3);
	assert_int_equal(pk.data64, 4096);
	/* broken framing ends the provider's part; the capture goes on */
	peer_send(&p, FIFO_DATA, FIFO_DATA_ROLLING, sizeof(bad), bad, sizeof(bad));
	{
		double deadline = su_now() + 10;

		t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
		for (;;) {
			const cJSON *ps;

			c = t_get(path);
			ps = stats_of(c, "peer");
			if (!cJSON_IsTrue(cJSON_GetObjectItem(ps, "connected")) && str(ps, "error") != NULL)
				break;
			cJSON_Delete(c);
			assert_true(su_now() < deadline);
			su_sleep_ms(20);
		}
		cJSON_Delete(c);
	}
	close(p.fd);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/stop", id);
	cJSON_Delete(t_call("POST", path, NULL, 200)); /* no provider left to wait for */
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	t_error("POST", path, NULL, 409, "not_initialized");
	c = t_get("/api/captures");
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(c, "captures")) >= 1);
	cJSON_Delete(c);
}

/* A stop request made on a thread of its own: it waits for providers. */
struct stop_call {
	const char *method; /* NULL: POST */
	const char *body;
	char path[96];
	struct su_resp r;
	int rc;
};

static void *stop_thread(void *arg)
{
	struct stop_call *sc = arg;
	struct su_req q = { sc->method ? sc->method : "POST", sc->path, NULL, sc->body, sc->body ? strlen(sc->body) : 0,
			    0, 0 };

	sc->rc = su_request(api_port, &q, &sc->r, 60000);
	return NULL;
}

/* Initializes a capture with config and starts it, p playing its only
 * provider (which is sent INITIALIZE and START, and does not answer);
 * returns the capture's id. */
static int64_t peer_capture(struct peer *p, const char *config)
{
	struct fifo_packet pk;
	char path[96];
	int64_t id;
	cJSON *c;

	c = t_call("POST", "/api/captures", config, 201);
	id = num(c, "id");
	cJSON_Delete(c);
	peer_expect(p, FIFO_INITIALIZE, &pk);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	cJSON_Delete(t_call("POST", path, NULL, 200));
	peer_expect(p, FIFO_START, &pk);
	return id;
}

/* Sends the capture's stop from a thread of its own (it waits for the
 * provider), into sc; join th for the reply. */
static void stop_begin(struct stop_call *sc, pthread_t *th, int64_t id)
{
	memset(sc, 0, sizeof(*sc));
	t_fmt(sc->path, sizeof(sc->path), "/api/captures/%" PRId64 "/stop", id);
	assert_int_equal(pthread_create(th, NULL, stop_thread, sc), 0);
}

/* A provider whose STARTED the server has not read when the capture is
 * stopped (a program that ends right after it started, its frames all in
 * the socket): the stop sends it STOP and waits for its STOPPED, and what
 * it sent is in the trace. The stop used to count it as never started:
 * done at once, and the STARTED read later refused with all its data. */
static void t_stop_waits_for_late_started(void **state)
{
	uint64_t rec[2] = { 2 | 2u << 4 | 1u << 16 | 4ull << 32, 0x64636261 }; /* string record 1, "abcd" */
	struct stop_call sc;
	struct fifo_packet pk;
	struct peer p;
	pthread_t th;
	char path[96];
	int64_t id;
	cJSON *c, *ps;

	(void)state;
	peer_connect(&p, "late", NULL, 101);
	id = peer_capture(&p, "{\"start_timeout_milliseconds\": 100}"); /* start answered at its timeout */
	stop_begin(&sc, &th, id);
	peer_expect(&p, FIFO_STOP, &pk); /* started, so told to stop */
	peer_send(&p, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0, NULL, 0);
	peer_send(&p, FIFO_DATA, FIFO_DATA_DURABLE, sizeof(rec), rec, sizeof(rec));
	peer_send(&p, FIFO_STATS, 0, 0, NULL, 0);
	peer_send(&p, FIFO_STOPPED, 0, 0, NULL, 0);
	pthread_join(th, NULL);
	assert_int_equal(sc.rc, 0);
	assert_int_equal(sc.r.status, 200);
	c = cJSON_ParseWithLength(sc.r.body, sc.r.body_len);
	su_resp_free(&sc.r);
	ps = stats_of(c, "late");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ps, "started")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ps, "stopped")));
	assert_int_equal(num(ps, "durable_bytes_written"), sizeof(rec));
	cJSON_Delete(c);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
	close(p.fd);
}

/* Terminate while started stops first, as StopTracing does: it waits for
 * the providers' STOPPED, so what they send after STOP (all of a oneshot
 * buffer) is in the trace. It used to end the trace at once, empty. */
static void t_terminate_while_started(void **state)
{
	uint64_t rec[4] = { 4 | 4u << 4 | 0ull << 16, 1000, 1, 2 }; /* an instant, inline thread, no names */
	struct stop_call sc;
	struct fifo_packet pk;
	struct peer p;
	pthread_t th;
	char path[96];
	int64_t id, trace;
	cJSON *c, *ps;

	(void)state;
	peer_connect(&p, "term", NULL, 101);
	c = t_call("POST", "/api/captures", "{\"buffering_mode\": \"oneshot\", \"start_timeout_milliseconds\": 100}", 201);
	id = num(c, "id");
	cJSON_Delete(c);
	peer_expect(&p, FIFO_INITIALIZE, &pk);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	c = t_call("POST", path, NULL, 200);
	trace = num(c, "trace_id");
	cJSON_Delete(c);
	peer_expect(&p, FIFO_START, &pk);
	peer_send(&p, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0, NULL, 0);
	memset(&sc, 0, sizeof(sc));
	sc.method = "DELETE";
	t_fmt(sc.path, sizeof(sc.path), "/api/captures/%" PRId64, id);
	assert_int_equal(pthread_create(&th, NULL, stop_thread, &sc), 0);
	peer_expect(&p, FIFO_STOP, &pk);
	su_sleep_ms(300); /* a provider taking its time to send its buffer */
	peer_send(&p, FIFO_DATA, FIFO_DATA_ROLLING, sizeof(rec), rec, sizeof(rec));
	peer_send(&p, FIFO_STATS, 0, 0, NULL, 0);
	peer_send(&p, FIFO_STOPPED, 0, 0, NULL, 0);
	pthread_join(th, NULL);
	assert_int_equal(sc.rc, 0);
	assert_int_equal(sc.r.status, 200);
	c = cJSON_ParseWithLength(sc.r.body, sc.r.body_len);
	su_resp_free(&sc.r);
	ps = stats_of(c, "term");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ps, "stopped")));
	assert_int_equal(num(ps, "non_durable_bytes_written"), sizeof(rec));
	assert_int_equal(num(c, "trace_id"), trace);
	cJSON_Delete(c);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	c = t_get(path);
	assert_string_equal(str(c, "state"), "ready");
	cJSON_Delete(c);
	wait_ready(trace);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, trace);
	c = t_get(path);
	assert_int_equal(num(cJSON_GetObjectItem(c, "counts"), "events"), 1);
	cJSON_Delete(c);
	/* terminating a capture never started needs no wait */
	c = t_call("POST", "/api/captures", "{}", 201);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, num(c, "id"));
	cJSON_Delete(c);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
	t_error("DELETE", path, NULL, 409, "not_initialized");
	close(p.fd);
}

/* StartOptions.buffer_disposition: after a Stop that wrote the results it
 * is overridden to clear the entire buffer (the controller's rule, so that
 * no data is saved twice); after one with write_results false it is sent
 * as asked. It used to be sent as asked always. */
static void do_stop(struct peer *p, const char *path, const char *body)
{
	struct stop_call sc;
	struct fifo_packet pk;
	pthread_t th;

	memset(&sc, 0, sizeof(sc));
	t_fmt(sc.path, sizeof(sc.path), "%s", path);
	sc.body = body;
	assert_int_equal(pthread_create(&th, NULL, stop_thread, &sc), 0);
	peer_expect(p, FIFO_STOP, &pk);
	peer_send(p, FIFO_STATS, 0, 0, NULL, 0);
	peer_send(p, FIFO_STOPPED, 0, 0, NULL, 0);
	pthread_join(th, NULL);
	assert_int_equal(sc.rc, 0);
	assert_int_equal(sc.r.status, 200);
	su_resp_free(&sc.r);
}

static void t_disposition_after_stop(void **state)
{
	const char *stops[] = { NULL, "{\"write_results\": false}" };
	const uint32_t want[] = { FIFO_CLEAR_ENTIRE, FIFO_RETAIN };
	struct fifo_packet pk;
	struct peer p;
	char path[96], stop[96];
	int64_t id;
	cJSON *c;
	int i;

	(void)state;
	peer_connect(&p, "disp", NULL, 101);
	c = t_call("POST", "/api/captures", "{\"start_timeout_milliseconds\": 50}", 201);
	id = num(c, "id");
	cJSON_Delete(c);
	peer_expect(&p, FIFO_INITIALIZE, &pk);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	t_fmt(stop, sizeof(stop), "/api/captures/%" PRId64 "/stop", id);
	/* the first start: nothing was saved before, sent as asked */
	cJSON_Delete(t_call("POST", path, "{\"buffer_disposition\": \"retain\"}", 200));
	peer_expect(&p, FIFO_START, &pk);
	assert_int_equal(pk.data32, FIFO_RETAIN);
	for (i = 0; i < 2; i++) {
		do_stop(&p, stop, stops[i]);
		cJSON_Delete(t_call("POST", path, "{\"buffer_disposition\": \"retain\"}", 200));
		peer_expect(&p, FIFO_START, &pk);
		assert_int_equal(pk.data32, want[i]);
	}
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	close(p.fd);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
}

/* Oneshot keeps a buffer's worth per run: a second start after a stop has
 * the whole buffer again (the provider's was cleared). The budget used to
 * count the first run's bytes, dropping the second run's records. */
static void t_oneshot_restart(void **state)
{
	enum { N = 20000 }; /* 640000 bytes of instants: over half of 1 MB */
	uint64_t *recs = calloc(N, 4 * sizeof(uint64_t));
	char path[96], stop[96];
	struct fifo_packet pk;
	struct peer p;
	int64_t id;
	cJSON *c, *ps;
	int run, i;

	(void)state;
	assert_non_null(recs);
	for (i = 0; i < N; i++) {
		recs[4 * i] = 4 | 4u << 4;
		recs[4 * i + 1] = 1000 + (uint64_t)i;
		recs[4 * i + 2] = 1;
		recs[4 * i + 3] = 2;
	}
	peer_connect(&p, "once", NULL, 101);
	c = t_call("POST", "/api/captures",
		   "{\"buffering_mode\": \"oneshot\", \"buffer_size_megabytes_hint\": 1, \"start_timeout_milliseconds\": 50}",
		   201);
	id = num(c, "id");
	cJSON_Delete(c);
	peer_expect(&p, FIFO_INITIALIZE, &pk);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	t_fmt(stop, sizeof(stop), "/api/captures/%" PRId64 "/stop", id);
	for (run = 0; run < 2; run++) {
		cJSON_Delete(t_call("POST", path, NULL, 200));
		peer_expect(&p, FIFO_START, &pk);
		peer_send(&p, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0, NULL, 0);
		peer_send(&p, FIFO_DATA, FIFO_DATA_ROLLING, N * 32, recs, N * 32);
		do_stop(&p, stop, NULL);
	}
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	c = t_get(path);
	ps = stats_of(c, "once");
	assert_int_equal(num(ps, "records_dropped_by_server"), 0);
	assert_int_equal(num(ps, "non_durable_bytes_written"), 2 * N * 32);
	cJSON_Delete(c);
	close(p.fd);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
	free(recs);
}

/* A capture object's config.categories, an array (docs/API.md), joined
 * with commas ("" when it is empty); fails when it is not an array. */
static const char *config_categories(const cJSON *c)
{
	static char out[16384];
	const cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "config"), "categories"), *it;
	size_t n = 0;

	if (!cJSON_IsArray(a))
		fail_msg("config.categories is not an array");
	out[0] = '\0';
	cJSON_ArrayForEach(it, a) {
		assert_true(cJSON_IsString(it));
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", n ? "," : "", it->valuestring);
		assert_true(n < sizeof(out));
	}
	return out;
}

/* A circular provider's OVERWRITTEN (records its buffer wrote over) is in
 * its ProviderStats as records_overwritten. */
static void t_circular_overwritten(void **state)
{
	uint64_t rec[4] = { 4 | 4u << 4, 1000, 1, 2 };
	char path[96];
	struct fifo_packet pk;
	struct stop_call sc;
	struct peer p;
	pthread_t th;
	int64_t id;
	cJSON *c;

	(void)state;
	peer_connect(&p, "ring", NULL, 101);
	id = peer_capture(&p, "{\"buffering_mode\": \"circular\", \"start_timeout_milliseconds\": 50}");
	peer_send(&p, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0, NULL, 0);
	stop_begin(&sc, &th, id);
	peer_expect(&p, FIFO_STOP, &pk);
	peer_send(&p, FIFO_DATA, FIFO_DATA_ROLLING, sizeof(rec), rec, sizeof(rec));
	peer_send(&p, FIFO_OVERWRITTEN, 0, 1234, NULL, 0);
	peer_send(&p, FIFO_STATS, 3, 0, NULL, 0);
	peer_send(&p, FIFO_STOPPED, 0, 0, NULL, 0);
	pthread_join(th, NULL);
	assert_int_equal(sc.r.status, 200);
	su_resp_free(&sc.r);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	c = t_get(path);
	assert_int_equal(num(stats_of(c, "ring"), "records_overwritten"), 1234);
	assert_int_equal(num(stats_of(c, "ring"), "non_durable_bytes_written"), sizeof(rec));
	cJSON_Delete(c);
	close(p.fd);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
}

/* Reads the categories DATA and the packet after it, which must be want. */
static void peer_categories(struct peer *p, const char *cats, uint16_t want)
{
	struct fifo_packet pk;

	peer_read(p, &pk);
	assert_int_equal(pk.request, FIFO_DATA);
	assert_int_equal(pk.data32, FIFO_DATA_CATEGORIES);
	assert_string_equal(p->data, cats);
	peer_read(p, &pk);
	assert_int_equal(pk.request, want);
}

/* additional_categories are added to the config's for that start only
 * (sent before START, with no second INITIALIZE, which would make the
 * provider drop its buffer), and past 100 categories in all the extra ones
 * are discarded; 100 names of 100 bytes are a valid config. They used to
 * pile up from start to start, be sent with a new INITIALIZE, and a config
 * of more than 4 KB of names was refused as "more than 100 categories". */
static void t_additional_categories(void **state)
{
	struct fifo_packet pk;
	struct peer p;
	char path[96], stop[96], *body, *want;
	size_t len;
	int64_t id;
	cJSON *c;
	int i;

	(void)state;
	peer_connect(&p, "cats", NULL, 101);
	c = t_call("POST", "/api/captures", "{\"categories\": [\"a\"], \"start_timeout_milliseconds\": 50}", 201);
	id = num(c, "id");
	cJSON_Delete(c);
	peer_categories(&p, "a", FIFO_INITIALIZE);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	t_fmt(stop, sizeof(stop), "/api/captures/%" PRId64 "/stop", id);
	c = t_call("POST", path, "{\"additional_categories\": [\"b\", \"a\"]}", 200);
	assert_string_equal(config_categories(c), "a,b");
	cJSON_Delete(c);
	peer_categories(&p, "a,b", FIFO_START);
	do_stop(&p, stop, NULL);
	cJSON_Delete(t_call("POST", path, "{\"additional_categories\": [\"c\"]}", 200));
	peer_categories(&p, "a,c", FIFO_START);
	do_stop(&p, stop, NULL);
	c = t_call("POST", path, NULL, 200);
	assert_string_equal(config_categories(c), "a");
	cJSON_Delete(c);
	peer_categories(&p, "a", FIFO_START);
	do_stop(&p, stop, NULL);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
	peer_expect(&p, FIFO_TERMINATE, &pk);

	/* 100 categories of 100 bytes; one more in additional_categories is
	 * discarded */
	assert_non_null(body = malloc(16384));
	assert_non_null(want = malloc(16384));
	len = (size_t)sprintf(body, "{\"start_timeout_milliseconds\": 50, \"categories\": [");
	want[0] = '\0';
	for (i = 0; i < 100; i++) {
		char name[101];

		memset(name, 'a' + i % 26, 100);
		sprintf(name + 96, "%04d", i);
		len += (size_t)sprintf(body + len, "%s\"%s\"", i ? ", " : "", name);
		sprintf(want + strlen(want), "%s%s", i ? "," : "", name);
	}
	strcpy(body + len, "]}");
	c = t_call("POST", "/api/captures", body, 201);
	id = num(c, "id");
	assert_string_equal(config_categories(c), want);
	cJSON_Delete(c);
	peer_categories(&p, want, FIFO_INITIALIZE);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	c = t_call("POST", path, "{\"additional_categories\": [\"x\"]}", 200);
	assert_string_equal(config_categories(c), want);
	cJSON_Delete(c);
	peer_categories(&p, want, FIFO_START);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	close(p.fd);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
	strcpy(body + len, ", \"y\"]}");
	t_error("POST", "/api/captures", body, 400, "bad_config"); /* 101 */
	free(body);
	free(want);
}

/* The provider's ProviderStats.error of a provider whose data the server
 * refuses: it must say why (docs/API.md: "null, or why the provider's data
 * was refused"). */
static const char *provider_error(int64_t id, const char *name)
{
	static char why[256];
	double deadline = su_now() + 10;
	char path[64];

	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	for (;;) {
		cJSON *c = t_get(path);
		const cJSON *ps = stats_of(c, name);
		const char *e = str(ps, "error");
		int gone = !cJSON_IsTrue(cJSON_GetObjectItem(ps, "connected"));

		why[0] = '\0';
		if (e)
			t_fmt(why, sizeof(why), "%s", e);
		cJSON_Delete(c);
		if (gone)
			return why[0] ? why : NULL;
		assert_true(su_now() < deadline);
		su_sleep_ms(20);
	}
}

/* A STARTED of a FIFO protocol version the server does not speak (spec:
 * it "closes its side of the FIFO and ignores all trace data from the
 * provider") and a packet the protocol does not define (PROVIDER-PROTOCOL:
 * the peer closes the connection) end the provider's part with an error
 * that says why. They used to leave "error" null: no reason anywhere. */
static void t_provider_errors(void **state)
{
	struct fifo_packet pk;
	struct peer p, q;
	char path[96];
	const char *e;
	int64_t id;
	cJSON *c;

	(void)state;
	peer_connect(&p, "v2", NULL, 101);
	peer_connect(&q, "odd", NULL, 101);
	c = t_call("POST", "/api/captures", "{\"start_timeout_milliseconds\": 50}", 201);
	id = num(c, "id");
	cJSON_Delete(c);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	cJSON_Delete(t_call("POST", path, NULL, 200));
	peer_expect(&p, FIFO_START, &pk);
	peer_expect(&q, FIFO_START, &pk);
	peer_send(&p, FIFO_STARTED, 2, 0, NULL, 0);
	peer_send(&q, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0, NULL, 0);
	peer_send(&q, 0x0005, 0, 0, NULL, 0);
	e = provider_error(id, "v2");
	assert_non_null(e);
	assert_non_null(strstr(e, "version 2"));
	e = provider_error(id, "odd");
	assert_non_null(e);
	assert_non_null(strstr(e, "0x0005"));
	close(p.fd);
	close(q.fd);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
}

/* The connect request's parameters as docs/PROVIDER-PROTOCOL.md has them:
 * pid "a decimal 64-bit unsigned integer", name "1 to 100 bytes of UTF-8".
 * A pid above INT64_MAX used to be refused, a name not UTF-8 taken. */
static void t_connect_parameters(void **state)
{
	struct peer p;
	cJSON *j, *it;
	int found = 0;

	(void)state;
	peer_connect_q(&p, "name=big&pid=18446744073709551615", NULL, 101);
	for (double deadline = su_now() + 10; !found; su_sleep_ms(20)) {
		j = t_get("/api/providers");
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "providers")) if (strcmp(str(it, "name"), "big") == 0)
		{
			assert_true(cJSON_GetObjectItem(it, "pid")->valuedouble == 18446744073709551615.0);
			found = 1;
		}
		cJSON_Delete(j);
		assert_true(su_now() < deadline);
	}
	close(p.fd);
	peer_connect_q(&p, "name=big&pid=18446744073709551616", NULL, 400);
	close(p.fd);
	peer_connect_q(&p, "name=big&pid=-1", NULL, 400);
	close(p.fd);
	peer_connect_q(&p, "name=%FF%FE&pid=1", NULL, 400);
	close(p.fd);
	peer_connect_q(&p, "name=caf%C3%A9&pid=1", NULL, 101);
	close(p.fd);
}

/* With a token, provider connections and capture requests need it. */
static void t_token(void **state)
{
	char tok[200], auth[128];
	struct peer p;
	FILE *f;

	(void)state;
	t_fmt(tok, sizeof(tok), "%s/token", W.root);
	assert_non_null(f = fopen(tok, "w"));
	fputs("capture-token-0123456789abcdef\n", f);
	fclose(f);
	su_server_stop(&W.srv, SIGTERM);
	{
		const char *extra[] = { "--token-file", tok, NULL };

		t_start(extra);
	}
	peer_connect(&p, "p", NULL, 401);
	close(p.fd);
	t_error("POST", "/api/captures", "{}", 401, "unauthorized");
	t_error("GET", "/api/providers", NULL, 401, "unauthorized");
	t_error("GET", "/api/categories", NULL, 401, "unauthorized");
	t_error("GET", "/api/captures", NULL, 401, "unauthorized");
	t_fmt(auth, sizeof(auth), "Authorization: Bearer capture-token-0123456789abcdef\r\n");
	peer_connect(&p, "p", auth, 101);
	close(p.fd);
	su_server_stop(&W.srv, SIGTERM);
	t_start(NULL);
}

/* trace-server record runs the example program (it links provider/) as a
 * provider of a capture of its own; its trace ends ready in the library
 * with the slices the program recorded. */
static void t_record_example(void **state)
{
	const char *example = getenv("EXAMPLE_HELLO");
	char cmd[1200], out[1200];
	cJSON *list, *t;
	int64_t id;

	(void)state;
	if (example == NULL || access(example, X_OK) != 0) {
		fail_msg("set EXAMPLE_HELLO to build/rel/examples/hello");
		return;
	}
	t_fmt(out, sizeof(out), "%s/record.out", W.root);
	t_fmt(cmd, sizeof(cmd), "%s record --server http://127.0.0.1:%d --name recorded -- %s > %s 2>&1", W.exe,
	      W.srv.port, example, out);
	assert_int_equal(system(cmd), 0);
	list = t_get("/api/traces?q=recorded");
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(list, "traces"), 0);
	assert_non_null(t);
	id = wait_ready(num(t, "id"));
	cJSON_Delete(list);
	{
		char path[64];

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
		t = t_get(path);
		assert_true(num(cJSON_GetObjectItem(t, "counts"), "slices") > 0);
		assert_string_equal(str(cJSON_GetObjectItem(t, "stream"), "state"), "complete");
		cJSON_Delete(t);
	}
}

/* Capture ids outlive the server (docs/API.md, Captures): a capture made
 * after a restart does not take the id of one made before it, so a client
 * that made the first (record, whose program outlived the server) and now
 * stops it by id gets 404 and leaves the new capture alone. */
static void t_capture_ids_survive_restart(void **state)
{
	char path[96], stale[96];
	int64_t before, after;
	cJSON *c;

	(void)state;
	c = t_call("POST", "/api/captures", "{\"name\": \"before-restart\"}", 201);
	before = num(c, "id");
	cJSON_Delete(c);
	su_server_stop(&W.srv, SIGTERM);
	t_start(NULL);
	c = t_call("POST", "/api/captures", "{\"name\": \"after-restart\"}", 201);
	after = num(c, "id");
	cJSON_Delete(c);
	assert_true(after > before);
	t_fmt(stale, sizeof(stale), "/api/captures/%" PRId64 "/stop", before);
	t_error("POST", stale, "{}", 404, "not_found");
	t_fmt(stale, sizeof(stale), "/api/captures/%" PRId64, before);
	t_error("DELETE", stale, NULL, 404, "not_found");
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, after);
	c = t_get(path);
	assert_string_equal(str(c, "state"), "initialized");
	cJSON_Delete(c);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
}

/* ---- many providers at once ------------------------------------------------- */

enum { MANY = 40, MANY_FRAMES = 200, MANY_RECS = 64 };

/* One provider of t_many_providers, on a thread of its own: it has no
 * cmocka asserts (they may only run on the test's thread); ok says how it
 * went. */
struct many {
	int idx;
	int ok;           /* 1 when it sent everything and saw TERMINATE */
	uint64_t sent;    /* DATA payload bytes sent */
	struct peer p;
};

/* The next packet, as peer_read, or -1 at the deadline or end of file. */
static int many_read(struct peer *p, struct fifo_packet *pk, double deadline)
{
	for (;;) {
		struct pollfd pf = { p->fd, POLLIN, 0 };
		ssize_t k;

		if (p->n >= FIFO_PACKET_SIZE) {
			size_t need;

			fifo_decode(p->buf, pk);
			need = FIFO_PACKET_SIZE + (pk->request == FIFO_DATA ? (size_t)pk->data64 : 0);
			if (need > sizeof(p->buf))
				return -1;
			if (p->n >= need) {
				memmove(p->buf, p->buf + need, p->n - need);
				p->n -= need;
				return 0;
			}
		}
		if (su_now() > deadline)
			return -1;
		if (poll(&pf, 1, 100) <= 0)
			continue;
		if ((k = read(p->fd, p->buf + p->n, sizeof(p->buf) - p->n)) <= 0)
			return -1;
		p->n += (size_t)k;
	}
}

static int many_send(struct peer *p, uint16_t req, uint32_t d32, uint64_t d64, const void *pay, size_t n)
{
	struct fifo_packet pk = { req, 0, d32, d64 };
	uint8_t raw[FIFO_PACKET_SIZE];

	fifo_encode(raw, &pk);
	return write(p->fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw) || (n && write(p->fd, pay, n) != (ssize_t)n) ? -1
															     : 0;
}

/* Connects, waits for START, streams its frames of instants, stops on its
 * own and waits for TERMINATE. */
static void *many_main(void *arg)
{
	struct many *m = arg;
	struct peer *p = &m->p;
	uint64_t frame[MANY_RECS * 4];
	struct fifo_packet pk;
	double deadline = su_now() + 60;
	char head[256];
	char *end;
	int f, i;

	if ((p->fd = su_connect(W.srv.port)) < 0)
		return NULL;
	t_fmt(head, sizeof(head),
	      "GET /api/providers/connect?name=many%d&pid=%d HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
	      "Upgrade: fxt-provider/1\r\n\r\n",
	      m->idx, 1000 + m->idx);
	if (write(p->fd, head, strlen(head)) != (ssize_t)strlen(head))
		return NULL;
	while ((end = memmem(p->buf, p->n, "\r\n\r\n", 4)) == NULL) {
		ssize_t k = read(p->fd, p->buf + p->n, sizeof(p->buf) - p->n);

		if (k <= 0)
			return NULL;
		p->n += (size_t)k;
	}
	if (strncmp((char *)p->buf, "HTTP/1.1 101", 12) != 0)
		return NULL;
	p->n -= (size_t)((uint8_t *)end + 4 - p->buf);
	memmove(p->buf, end + 4, p->n);
	do
		if (many_read(p, &pk, deadline) != 0)
			return NULL;
	while (pk.request != FIFO_START);
	if (many_send(p, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0, NULL, 0) != 0)
		return NULL;
	for (f = 0; f < MANY_FRAMES; f++) {
		for (i = 0; i < MANY_RECS; i++) { /* an instant, inline thread (pid, tid), no names */
			frame[i * 4] = 4 | 4u << 4;
			frame[i * 4 + 1] = 1000 + (uint64_t)f * MANY_RECS + (uint64_t)i;
			frame[i * 4 + 2] = 1000 + (uint64_t)m->idx;
			frame[i * 4 + 3] = 1;
		}
		if (many_send(p, FIFO_DATA, FIFO_DATA_ROLLING, sizeof(frame), frame, sizeof(frame)) != 0)
			return NULL;
		m->sent += sizeof(frame);
	}
	if (many_send(p, FIFO_STATS, 0, 0, NULL, 0) != 0 || many_send(p, FIFO_STOPPED, 0, 0, NULL, 0) != 0)
		return NULL;
	do
		if (many_read(p, &pk, deadline) != 0)
			return NULL;
	while (pk.request != FIFO_TERMINATE);
	m->ok = 1;
	return NULL;
}

/* The sum of a field over the provider stats of this test's providers
 * ("many<i>"), and how many there are: a provider an earlier test left
 * connected joins a capture that starts too, which is not this test's. */
static uint64_t stats_sum_n(const cJSON *c, const char *field, int *n)
{
	const cJSON *it;
	uint64_t sum = 0;

	*n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(c, "provider_stats")) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));

		if (name == NULL || strncmp(name, "many", 4) != 0)
			continue;
		sum += (uint64_t)num(it, field);
		(*n)++;
	}
	return sum;
}

static uint64_t stats_sum(const cJSON *c, const char *field)
{
	int n;

	return stats_sum_n(c, field, &n);
}

/* Forty providers connect at once to a capture that is running: each
 * joins it (the session's provider table grows under the readers of those
 * already streaming) and streams its frames. Every frame of every provider
 * is in the trace, none refused. Under ASan or TSan (integration-asan,
 * integration-tsan) a reader that held a provider's entry while the table
 * moved is a use after free. */
static void t_many_providers(void **state)
{
	struct many *ms = calloc(MANY, sizeof(*ms));
	pthread_t th[MANY];
	char path[96];
	double deadline;
	int64_t id, trace;
	uint64_t want = 0;
	cJSON *c;
	int i;

	(void)state;
	assert_non_null(ms);
	c = t_call("POST", "/api/captures", "{\"name\": \"many\", \"buffering_mode\": \"streaming\"}", 201);
	id = num(c, "id");
	cJSON_Delete(c);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/start", id);
	c = t_call("POST", path, NULL, 200); /* no provider yet: started at once */
	trace = num(c, "trace_id");
	cJSON_Delete(c);
	for (i = 0; i < MANY; i++) { /* a few at a time: the table grows while the first ones stream */
		ms[i].idx = i;
		assert_int_equal(pthread_create(&th[i], NULL, many_main, &ms[i]), 0);
		if (i % 4 == 3)
			su_sleep_ms(5);
	}
	want = (uint64_t)MANY * MANY_FRAMES * MANY_RECS * 32;
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	for (deadline = su_now() + 60;; su_sleep_ms(50)) {
		uint64_t have;

		c = t_get(path);
		have = stats_sum(c, "non_durable_bytes_written");
		cJSON_Delete(c);
		if (have >= want)
			break;
		if (su_now() > deadline)
			fail_msg("%" PRIu64 " of %" PRIu64 " bytes reached the trace", have, want);
	}
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64 "/stop", id);
	c = t_call("POST", path, NULL, 200);
	{
		int n;

		assert_int_equal(stats_sum_n(c, "non_durable_bytes_written", &n), want);
		assert_int_equal(n, MANY);
	}
	assert_int_equal(stats_sum(c, "records_dropped"), 0);
	cJSON_Delete(c);
	t_fmt(path, sizeof(path), "/api/captures/%" PRId64, id);
	cJSON_Delete(t_call("DELETE", path, NULL, 200));
	for (i = 0; i < MANY; i++) {
		pthread_join(th[i], NULL);
		assert_true(ms[i].ok);
		assert_int_equal(ms[i].sent, (uint64_t)MANY_FRAMES * MANY_RECS * 32);
		close(ms[i].p.fd);
	}
	free(ms);
	wait_ready(trace);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, trace);
	c = t_get(path);
	assert_int_equal(num(cJSON_GetObjectItem(c, "counts"), "events"), MANY * MANY_FRAMES * MANY_RECS);
	cJSON_Delete(c);
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[1400];

	(void)state;
	if (exe == NULL || gen == NULL || realpath(exe, W.exe) == NULL || realpath(gen, W.gen) == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	snprintf(W.root, sizeof(W.root), "/tmp/test-capture-XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	snprintf(W.a, sizeof(W.a), "%s/a.fxt", W.root);
	snprintf(W.b, sizeof(W.b), "%s/b.fxt", W.root);
	snprintf(cmd, sizeof(cmd), "%s --events 200000 --threads 3 --seed 5 %s >/dev/null && %s --events 30000 --seed 6 %s >/dev/null",
		 W.gen, W.a, W.gen, W.b);
	if (system(cmd) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	t_start(NULL);
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
		cmocka_unit_test(t_streaming_two_providers),
		cmocka_unit_test(t_oneshot_and_circular),
		cmocka_unit_test(t_alerts_and_errors),
		cmocka_unit_test(t_stop_waits_for_late_started),
		cmocka_unit_test(t_terminate_while_started),
		cmocka_unit_test(t_disposition_after_stop),
		cmocka_unit_test(t_oneshot_restart),
		cmocka_unit_test(t_additional_categories),
		cmocka_unit_test(t_provider_errors),
		cmocka_unit_test(t_connect_parameters),
		cmocka_unit_test(t_record_example),
		cmocka_unit_test(t_token),
		cmocka_unit_test(t_capture_ids_survive_restart),
		cmocka_unit_test(t_circular_overwritten),
		cmocka_unit_test(t_many_providers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
