/*
 * uploads: hostile clients against the real server, beyond what
 * tests/server/test_server.c already covers (empty bodies, --max-upload with
 * Content-Length, chunked and multipart, not a trace, a client gone with
 * FIN or RST mid-body, the common bad parameters, unknown routes and
 * methods, junk request lines, keep-alive).
 *
 *   uploads [--full]
 *
 * Groups of checks, each against one server (--max-upload 4M):
 *   cut      uploads cut off mid-transfer: chunked mid-chunk (FIN, RST),
 *            multipart mid-part, half-closed with a body still owed, a
 *            symbols upload cut off; a ?wait=1 client gone while it waits;
 *            a trace deleted while a ?wait=1 client waits on it; a multipart
 *            body found malformed mid-way answered 400 at its end; 413 with
 *            Expect: 100-continue before any byte is sent; Content-Length
 *            and chunked together. Nothing may stay in the spool and no
 *            trace may appear from a cut upload.
 *   params   parameters out of range, negative, non-numeric, enormous,
 *            with whitespace, repeated; ids at and past 2^63; search text
 *            with LIKE wildcards, invalid UTF-8 and 20 KB; names with
 *            control characters, quotes, invalid UTF-8 and path separators;
 *            two requests that differ only in escaping ("&" inside a value)
 *            must not share a cached reply.
 *            Every reply is the documented status with JSON (valid UTF-8).
 *   routes   unknown routes and methods, odd paths: 404/405 JSON.
 *   big      100 KB request lines (API and static; they fit MHD's 128 KiB
 *            per connection, so they may be served), a 300 KB request
 *            line, a 200 KB header, 4000 headers, a header block that never
 *            ends, an upload behind a 200 KB header: a 4xx answer
 *            (400/413/414/431) or a close, never a crash, nothing stored,
 *            and the server answers the next client.
 *   slow     slowloris: 24 connections from 127.0.0.2 sending their
 *            headers a byte every 250 ms while 127.0.0.1 is served (every
 *            reply 200, p99 under 1 s); 300 stalled connections from
 *            127.0.0.3 (over the per-address limit) while 127.0.0.1 is
 *            served; a connection that stops mid-header is closed by the
 *            server's timeout (60 s + 15 s slack; it is opened first and
 *            checked last). --full adds a connection that trickles a byte
 *            every 10 s for 150 s, which the timeout should also close.
 * The server's stderr must hold no sanitizer report (run it under ASan
 * with TRACE_SERVER=build/asan/trace-server) and it must stop cleanly.
 *
 * Environment: see rel_util.h. Ends with "uploads: N passed, M failed".
 */
#include <math.h>
#include <pthread.h>

#include "rel_util.h"

static struct su_server S;
static char DATA[4300];
static int64_t FXT_ID, TRACK_ID;
static uint8_t *BIG;      /* a generated FXT trace that takes a while to ingest */
static size_t BIG_LEN;
static uint8_t *SMALL;    /* a small generated FXT trace */
static size_t SMALL_LEN;
static int FULL;

/* ---- raw connections ---------------------------------------------------------- */

/* Connects to 127.0.0.1:port from the loopback address src ("127.0.0.2"),
 * or from any when src is NULL. Returns the socket or -1. */
static int raw_connect(int port, const char *src)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (src) {
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		inet_pton(AF_INET, src, &a.sin_addr);
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
			close(fd);
			return -1;
		}
	}
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Sends n bytes (as far as the server takes them) and reads until a status
 * line and headers arrived, the server closed, or timeout_ms passed.
 * Returns the status (> 0), 0 when the server closed without a reply, -1 on
 * timeout or error.
 */
static int raw_exchange(int fd, const void *p, size_t n, int timeout_ms)
{
	double deadline = su_now() + timeout_ms / 1000.0;
	struct su_buf in = { 0 };
	size_t sent = 0;
	int dead = 0, rc = -1;
	char tmp[16384];

	for (;;) {
		struct pollfd pf = { fd, (short)(POLLIN | (sent < n && !dead ? POLLOUT : 0)), 0 };
		int ms = (int)((deadline - su_now()) * 1000), k;
		ssize_t got;

		if (ms <= 0 || (k = poll(&pf, 1, ms)) < 0)
			break;
		if (k == 0)
			break;
		if ((pf.revents & POLLOUT) && sent < n && !dead) {
			got = send(fd, (const char *)p + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (got > 0)
				sent += (size_t)got;
			else if (got < 0 && errno != EAGAIN && errno != EINTR)
				dead = 1;
		}
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		got = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got <= 0) {
			rc = in.len >= 12 && strncmp(in.p, "HTTP/1.", 7) == 0 ? atoi(in.p + 9) : 0;
			break;
		}
		su_buf_add(&in, tmp, (size_t)got);
		if (memmem(in.p, in.len, "\r\n\r\n", 4) && in.len >= 12 && strncmp(in.p, "HTTP/1.", 7) == 0) {
			rc = atoi(in.p + 9);
			break;
		}
	}
	free(in.p);
	return rc;
}

/* Waits up to timeout s for the server to close fd (recv gives 0 or an
 * error); 1 when it did. Bytes it sends are read and dropped. */
static int raw_closed_within(int fd, double timeout)
{
	double deadline = su_now() + timeout;
	char tmp[4096];

	while (su_now() < deadline) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int k = poll(&pf, 1, 200);

		if (k > 0) {
			ssize_t got = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);

			if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
				return 1;
		}
	}
	return 0;
}

/* ---- helpers ---------------------------------------------------------------------- */

static int server_answers(void)
{
	struct su_resp r;
	int ok = rel_req(S.port, "GET", "/api/traces", NULL, NULL, 0, &r, 20000) == 0 && r.status == 200;

	su_resp_free(&r);
	return ok;
}

static size_t trace_count(void)
{
	struct su_resp r;
	cJSON *j;
	size_t n = (size_t)-1;

	if (rel_req(S.port, "GET", "/api/traces", NULL, NULL, 0, &r, 20000) == 0 && (j = rel_json(&r)) != NULL) {
		n = (size_t)cJSON_GetArraySize(rel_get(j, "traces"));
		cJSON_Delete(j);
	}
	su_resp_free(&r);
	return n;
}

/* Waits up to timeout s for the spool to be empty. */
static int spool_empty(double timeout)
{
	char spool[4400];
	double deadline = su_now() + timeout;

	rel_fmt(spool, sizeof(spool), "%s/spool", DATA);
	while (rel_dir_entries(spool) > 0 && su_now() < deadline)
		su_sleep_ms(20);
	return rel_dir_entries(spool) == 0;
}

/* Whether the trace directory dir holds its upload: "source", or
 * "source.zst" once the server kept it compressed. */
static int has_upload(const char *dir)
{
	char path[4400];

	rel_fmt(path, sizeof(path), "%s/source", dir);
	if (access(path, F_OK) == 0)
		return 1;
	rel_fmt(path, sizeof(path), "%s/source.zst", dir);
	return access(path, F_OK) == 0;
}

static void send_all(int fd, const void *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t k = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);

		if (k <= 0)
			return;
		off += (size_t)k;
	}
}

/* ---- cut ---------------------------------------------------------------------------- */

/* Starts an upload, sends part of the body, then ends the connection the
 * given way: 0 FIN, 1 RST, 2 half-close (and wait for the server to close). */
static void cut_upload(const char *what, const char *head, const void *body, size_t sent, int how)
{
	size_t before = trace_count();
	int fd = raw_connect(S.port, NULL), closed = 1;

	if (fd < 0) {
		rel_check(0, "cut: %s: cannot connect", what);
		return;
	}
	send_all(fd, head, strlen(head));
	send_all(fd, body, sent);
	su_sleep_ms(150); /* let the server spool what it got */
	if (how == 1) {
		struct linger lg = { 1, 0 };

		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	} else if (how == 2) {
		shutdown(fd, SHUT_WR);
		closed = raw_closed_within(fd, 75);
	}
	close(fd);
	rel_check(closed && spool_empty(5) && trace_count() == before && server_answers(),
		  "cut: %s leaves nothing behind (spool empty, no new trace, server answers)%s", what,
		  closed ? "" : " [the server never closed the half-closed connection]");
}

struct waiter {
	int64_t id;
	int status;
	double took;
	const uint8_t *body;
	size_t len;
};

static void *wait_upload_main(void *arg)
{
	struct waiter *w = arg;
	struct su_resp r;
	double t0 = su_now();

	w->id = rel_upload(S.port, "?wait=1&name=waiter", w->body, w->len, NULL, &r, 120000);
	w->status = r.status;
	w->took = su_now() - t0;
	su_resp_free(&r);
	return NULL;
}

/* The newest trace's id, or -1. */
static int64_t newest_id(void)
{
	struct su_resp r;
	cJSON *j;
	int64_t id = -1;

	if (rel_req(S.port, "GET", "/api/traces", NULL, NULL, 0, &r, 20000) == 0 && (j = rel_json(&r)) != NULL) {
		id = rel_int(cJSON_GetArrayItem(rel_get(j, "traces"), 0), "id");
		cJSON_Delete(j);
	}
	su_resp_free(&r);
	return id;
}

static void group_cut(void)
{
	char head[512], path[128];
	struct su_buf mp = { 0 };
	struct su_resp r;
	int fd, st;

	/* chunked, cut inside the second chunk */
	rel_fmt(head, sizeof(head),
		"POST /api/traces?name=cut HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", 65536);
	{
		struct su_buf b = { 0 };

		su_buf_add(&b, BIG, 65536);
		su_buf_add(&b, "\r\n10000\r\n", 9);
		su_buf_add(&b, BIG + 65536, 30000);
		cut_upload("chunked, FIN inside a chunk", head, b.p, b.len, 0);
		cut_upload("chunked, RST inside a chunk", head, b.p, b.len, 1);
		cut_upload("chunked, half-closed inside a chunk", head, b.p, b.len, 2);
		free(b.p);
	}
	/* multipart, cut inside the file part */
	su_buf_add(&mp, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.fxt\"\r\n"
			"Content-Type: application/octet-stream\r\n\r\n", 112);
	su_buf_add(&mp, BIG, 200000);
	rel_fmt(head, sizeof(head),
		"POST /api/traces HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
		"Content-Length: %zu\r\n\r\n",
		mp.len + 1000000);
	cut_upload("multipart, FIN inside the file part", head, mp.p, mp.len, 0);
	cut_upload("multipart, half-closed inside the file part", head, mp.p, mp.len, 2);
	free(mp.p);
	/* raw body with Content-Length, half-closed with bytes owed */
	rel_fmt(head, sizeof(head), "POST /api/traces HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", BIG_LEN);
	cut_upload("Content-Length, half-closed with 3/4 of the body owed", head, BIG, BIG_LEN / 4, 2);
	/* a symbols upload cut off */
	rel_fmt(head, sizeof(head), "POST /api/traces/%" PRId64 "/symbols HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
		FXT_ID);
	cut_upload("symbols upload, FIN mid-body", head, BIG, 5000, 0);

	/* an error found mid-body is answered when the body ends, not dropped:
	 * a multipart body malformed after 600 KB, a raw body over the limit */
	{
		struct su_buf b = { 0 };
		const char *part = "--MB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n";
		const char *bad = "\r\n--MBX\r\nBAD\r\n\r\n";
		char why[512];
		size_t before = trace_count();

		su_buf_add(&b, part, strlen(part));
		su_buf_add(&b, BIG, 600000);
		su_buf_add(&b, bad, strlen(bad));
		su_buf_add(&b, BIG, 600000);
		rel_req(S.port, "POST", "/api/traces", "Content-Type: multipart/form-data; boundary=MB\r\n", b.p, b.len, &r,
			60000);
		rel_check(rel_is_error(&r, 400, NULL, why, sizeof(why)) && trace_count() == before && spool_empty(5),
			  "cut: a multipart body malformed after 600 KB: 400 JSON error at the end, nothing stored (%s)",
			  r.status == 400 ? "ok" : why);
		su_resp_free(&r);
		free(b.p);
		b.p = calloc(1, 5u << 20);
		rel_req(S.port, "POST", "/api/traces", NULL, b.p, 5u << 20, &r, 60000);
		free(b.p);
		rel_check(rel_is_error(&r, 413, "upload_too_large", why, sizeof(why)) && spool_empty(5),
			  "cut: 5 MB with Content-Length over --max-upload 4M: 413 (%s)", r.status == 413 ? "ok" : why);
		su_resp_free(&r);
	}

	/* 413 comes before the body with Expect: 100-continue */
	fd = raw_connect(S.port, NULL);
	rel_fmt(head, sizeof(head),
		"POST /api/traces HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %u\r\n\r\n", 64u << 20);
	st = raw_exchange(fd, head, strlen(head), 10000);
	close(fd);
	rel_check(st == 413, "cut: Expect: 100-continue over --max-upload answers 413 before the body (got %d)", st);

	/* Content-Length and chunked together: chunked wins (RFC 9112 6.3) or 400 */
	rel_fmt(head, sizeof(head),
		"POST /api/traces?wait=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"
		"Connection: close\r\n\r\n");
	{
		struct su_buf b = { 0 };
		char line[32];

		su_buf_add(&b, head, strlen(head));
		snprintf(line, sizeof(line), "%zx\r\n", SMALL_LEN);
		su_buf_add(&b, line, strlen(line));
		su_buf_add(&b, SMALL, SMALL_LEN);
		su_buf_add(&b, "\r\n0\r\n\r\n", 7);
		fd = raw_connect(S.port, NULL);
		st = raw_exchange(fd, b.p, b.len, 30000);
		close(fd);
		free(b.p);
		rel_check(st == 201 || st == 400, "cut: Content-Length with chunked: 201 (chunked read) or 400 (got %d)", st);
	}

	/* a ?wait=1 client that goes away while it waits: the trace is still ingested */
	{
		char status[32];
		int64_t id;
		size_t before = trace_count(), k;

		rel_fmt(head, sizeof(head), "POST /api/traces?wait=1&name=gone-waiter HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
			BIG_LEN);
		fd = raw_connect(S.port, NULL);
		send_all(fd, head, strlen(head));
		send_all(fd, BIG, BIG_LEN);
		for (k = 0; k < 2000 && trace_count() != before + 1; k++) /* the upload is in: it waits now */
			su_sleep_ms(10);
		close(fd);
		id = trace_count() == before + 1 ? newest_id() : -1;
		rel_check(id > 0 && rel_wait_done(S.port, id, 120, status, sizeof(status)) == 0 &&
				  strcmp(status, "ready") == 0 && server_answers(),
			  "cut: a ?wait=1 client gone while waiting: the trace still ends ready (%s) and the server answers",
			  id > 0 ? status : "no trace");
	}

	/* a trace deleted while a ?wait=1 client waits on it: the waiter hears 404 */
	{
		struct waiter w = { -1, 0, 0, BIG, BIG_LEN };
		pthread_t th;
		int64_t id = -1;
		double deadline;
		size_t before = trace_count();

		pthread_create(&th, NULL, wait_upload_main, &w);
		deadline = su_now() + 30;
		while (trace_count() != before + 1 && su_now() < deadline)
			su_sleep_ms(5);
		id = newest_id();
		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
		if (rel_req(S.port, "DELETE", path, NULL, NULL, 0, &r, 20000) != 0)
			r.status = 0;
		st = r.status;
		su_resp_free(&r);
		pthread_join(th, NULL);
		rel_check(st == 204 && (w.status == 404 || w.status == 201) && server_answers() && spool_empty(5),
			  "cut: a trace deleted while its ?wait=1 uploader waits: DELETE %d, the waiter hears %d after %.1f s",
			  st, w.status, w.took);
	}
}

/* ---- params ------------------------------------------------------------------------- */

/* GET path; checks the status and, for errors, the JSON error object; the
 * body must be valid UTF-8 JSON. */
static void expect_get(const char *method, const char *path, int status, const char *code, const char *what)
{
	struct su_resp r;
	char why[512] = "";
	int ok;
	cJSON *j;

	if (rel_req(S.port, method, path, NULL, NULL, 0, &r, 60000) != 0) {
		rel_check(0, "%s: %s %.100s: no reply", what, method, path);
		return;
	}
	j = rel_json(&r);
	if (status >= 400)
		ok = rel_is_error(&r, status, code, why, sizeof(why));
	else if (!(ok = r.status == status && j != NULL))
		snprintf(why, sizeof(why), "got %d %.200s", r.status, r.body);
	if (ok && !rel_utf8_ok(r.body, r.body_len)) {
		ok = 0;
		snprintf(why, sizeof(why), "the reply is not valid UTF-8");
	}
	rel_check(ok, "%s: %s %.90s%s -> %d%s%s", what, method, path, strlen(path) > 90 ? "..." : "", status,
		  ok ? "" : ": ", why);
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* Search for q (percent-encoded) must find exactly the slices whose name
 * contains the decoded text (counted with SQL instr, case-folded ASCII). */
static void expect_search_literal(const char *q_enc, const char *q_sql, const char *what)
{
	char path[256], sql[512];
	struct su_resp r, s;
	cJSON *j = NULL, *k = NULL;
	int got = -1, want = -2;

	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=%s&limit=1000000", FXT_ID, q_enc);
	if (rel_req(S.port, "GET", path, NULL, NULL, 0, &r, 60000) == 0 && (j = rel_json(&r)) != NULL)
		got = cJSON_GetArraySize(rel_get(j, "slices"));
	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/query", FXT_ID);
	rel_fmt(sql, sizeof(sql), "SELECT count(*) FROM slices s JOIN strings n ON n.id = s.name_id WHERE instr(lower(n.str), lower('%s')) > 0",
		q_sql);
	if (rel_req(S.port, "POST", path, NULL, sql, strlen(sql), &s, 60000) == 0 && (k = rel_json(&s)) != NULL)
		want = (int)cJSON_GetArrayItem(cJSON_GetArrayItem(rel_get(k, "rows"), 0), 0)->valuedouble;
	rel_check(got == want, "params: %s: search finds %d slices, names holding it: %d%s", what, got, want,
		  want == -2 ? (s.body ? s.body : "") : "");
	cJSON_Delete(j);
	cJSON_Delete(k);
	su_resp_free(&r);
	su_resp_free(&s);
}

/* Appends n copies of c to the string s (which has room for them and a
 * NUL). The length is taken once: after the memset s has no terminator. */
static void repeat_tail(char *s, char c, size_t n)
{
	size_t len = strlen(s);

	memset(s + len, c, n);
	s[len + n] = '\0';
}

static void group_params(void)
{
	static const struct {
		const char *q; /* after /api/traces/{id}/ ; %T = a track */
		int status;
		const char *code;
	} cases[] = {
		{ "slices?track=%T&start=%0910", 400, "bad_parameter" },
		{ "slices?track=%T&start=%0a10", 400, "bad_parameter" },
		{ "slices?track=%T&start=%0d10", 400, "bad_parameter" },
		{ "slices?track=%T&start=%2010", 400, "bad_parameter" },
		{ "slices?track=%T&start=+10", 400, "bad_parameter" },
		{ "slices?track=%T&start=10%20", 400, "bad_parameter" },
		{ "slices?track=%T&start=1.5", 400, "bad_parameter" },
		{ "slices?track=%T&start=--1", 400, "bad_parameter" },
		{ "slices?track=%T&start=-", 400, "bad_parameter" },
		{ "slices?track=%T&start=%E2%80%8B1", 400, "bad_parameter" },
		{ "slices?track=%T&start=-9223372036854775808&end=9223372036854775807", 200, NULL },
		{ "slices?track=%T&start=-9223372036854775808&end=-9223372036854775808", 200, NULL },
		{ "slices?track=%T&start=9223372036854775807&end=9223372036854775807", 200, NULL },
		{ "slices?track=%T&start=-9223372036854775809", 400, "bad_parameter" },
		{ "slices?track=%T&end=9223372036854775808", 400, "bad_parameter" },
		{ "slices?track=%T&start=000000000000000000000000000000000000000000010", 200, NULL },
		{ "slices?track=%T&resolution=4611686018427387904", 200, NULL },
		{ "slices?track=%T&resolution=4611686018427387905", 400, "bad_parameter" },
		{ "slices?track=%T&resolution=1&limit=1000000", 200, NULL },
		{ "slices?track=%T&resolution=0", 200, NULL },
		{ "slices?track=%T&limit=1000000&start=0&end=1", 200, NULL },
		{ "slices?track=1.0", 400, "bad_parameter" },
		{ "slices?track=1e3", 400, "bad_parameter" },
		{ "slices?track=0x1", 400, "bad_parameter" },
		{ "slices?track=9223372036854775807", 404, "not_found" },
		{ "slices?track=9223372036854775808", 400, "bad_parameter" },
		{ "counters?track=%T&start=-1&end=-2", 400, "bad_parameter" },
		{ "counters?track=%T&resolution=-5", 400, "bad_parameter" },
		{ "sched?cpu=65535", 200, NULL },
		{ "sched?cpu=65536", 400, "bad_parameter" },
		{ "sched?cpu=0&start=9223372036854775807", 200, NULL },
		{ "logs?limit=1&start=-9223372036854775808", 200, NULL },
		{ "flows?start=abc", 400, "bad_parameter" },
		{ "stats?end=-9223372036854775808", 200, NULL },
		{ "search?q=%ff%fe%00", 200, NULL },
		{ "search?q=a&limit=1000001", 400, "bad_parameter" },
		{ "search?q=a&limit=99999999999999999999999999", 400, "bad_parameter" },
		{ "slices/9223372036854775807", 404, "not_found" },
		{ "slices/9223372036854775808", 404, "not_found" },
		{ "slices/-1", 404, "not_found" },
	};
	char path[512], *big;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = strstr(cases[i].q, "%T");

		if (t)
			rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/%.*s%" PRId64 "%s", FXT_ID, (int)(t - cases[i].q),
				cases[i].q, TRACK_ID, t + 2);
		else
			rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/%s", FXT_ID, cases[i].q);
		expect_get("GET", path, cases[i].status, cases[i].code, "params");
	}
	/* enormous values: a prefix, then 20000 copies of one byte */
	big = malloc(30000);
	rel_fmt(big, 30000, "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=", FXT_ID, TRACK_ID);
	repeat_tail(big, '9', 20000);
	expect_get("GET", big, 400, "bad_parameter", "params: a 20000-digit start");
	rel_fmt(big, 30000, "/api/traces/%" PRId64 "/search?q=", FXT_ID);
	repeat_tail(big, 'a', 20000);
	expect_get("GET", big, 200, NULL, "params: a 20 KB search text");
	free(big);
	/* search text is literal: LIKE wildcards and escapes match themselves */
	expect_search_literal("%25", "%", "q=% (a LIKE wildcard)");
	expect_search_literal("_", "_", "q=_ (a LIKE wildcard)");
	expect_search_literal("%5C", "\\", "q=\\ (an escape)");
	expect_search_literal("slice", "slice", "q=slice");
	/* the reply cache keeps requests apart that differ only in escaping:
	 * q=NAME&limit=1 and q=NAME%26limit%3D1 (a search for "NAME&limit=1") */
	{
		char name[64] = "", p1[256], p2[256];
		struct su_resp r1, r2;
		cJSON *j;

		rel_fmt(p1, sizeof(p1), "/api/traces/%" PRId64 "/stats?limit=1", FXT_ID);
		if (rel_req(S.port, "GET", p1, NULL, NULL, 0, &r1, 20000) == 0 && (j = rel_json(&r1)) != NULL) {
			snprintf(name, sizeof(name), "%s", rel_str(cJSON_GetArrayItem(rel_get(j, "names"), 0), "name"));
			cJSON_Delete(j);
		}
		su_resp_free(&r1);
		name[strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")] = '\0';
		rel_fmt(p1, sizeof(p1), "/api/traces/%" PRId64 "/search?q=%s&limit=1", FXT_ID, name);
		rel_fmt(p2, sizeof(p2), "/api/traces/%" PRId64 "/search?q=%s%%26limit%%3D1", FXT_ID, name);
		rel_req(S.port, "GET", p1, NULL, NULL, 0, &r1, 20000);
		rel_req(S.port, "GET", p2, NULL, NULL, 0, &r2, 20000);
		rel_check(name[0] && r1.status == 200 && r2.status == 200 && r2.body && strstr(r2.body, "\"slices\":[]") != NULL,
			  "params: the reply cache tells q=%s&limit=1 from q=%s%%26limit%%3D1 (got %.120s)", name, name,
			  r2.body ? r2.body : "");
		su_resp_free(&r1);
		su_resp_free(&r2);
	}
}

/* Upload names: control characters, quotes, invalid UTF-8, path separators;
 * the list stays valid JSON and the name is kept as text. */
static void group_names(void)
{
	static const struct {
		const char *enc, *want; /* want NULL: only the JSON must stay valid */
	} names[] = {
		{ "a%22b%5Cc%2Fd", "a\"b\\c/d" },
		{ "ctl%01%02%0a%0d%09%7f", "ctl\x01\x02\n\r\t\x7f" },
		{ "..%2F..%2F..%2Fetc%2Fpasswd", "../../../etc/passwd" },
		{ "%3Cscript%3Ealert(1)%3C%2Fscript%3E", "<script>alert(1)</script>" },
		{ "bad-utf8-%ff%fe%c0%80%ed%a0%80", NULL },
		{ "nul%00after", NULL },
		{ "u%E2%80%AEtxt.exe", "u\xe2\x80\xaetxt.exe" },
	};
	char q[256], why[256], dir[4500];
	struct su_resp r;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int64_t id;
		cJSON *t;

		rel_fmt(q, sizeof(q), "?wait=1&name=%s", names[i].enc);
		id = rel_upload(S.port, q, SMALL, SMALL_LEN, NULL, &r, 60000);
		t = id > 0 ? rel_trace(S.port, id, NULL) : NULL;
		snprintf(why, sizeof(why), "status %d", r.status);
		rel_check(r.status == 201 && t != NULL && rel_utf8_ok(r.body, r.body_len) &&
				  (names[i].want == NULL || strcmp(rel_str(t, "name"), names[i].want) == 0),
			  "names: upload named %s is ready, its name kept as text (%s)", names[i].enc, why);
		cJSON_Delete(t);
		su_resp_free(&r);
	}
	if (rel_req(S.port, "GET", "/api/traces", NULL, NULL, 0, &r, 20000) == 0) {
		cJSON *j = rel_json(&r);

		rel_check(j != NULL && rel_utf8_ok(r.body, r.body_len), "names: the library list is valid UTF-8 JSON");
		cJSON_Delete(j);
	}
	su_resp_free(&r);
	/* a multipart file name with path separators stays a name */
	{
		struct su_buf b = { 0 };
		const char *h = "--B0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../../../../tmp/evil.fxt\"\r\n\r\n";
		int64_t id;

		su_buf_add(&b, h, strlen(h));
		su_buf_add(&b, SMALL, SMALL_LEN);
		su_buf_add(&b, "\r\n--B0--\r\n", 10);
		rel_req(S.port, "POST", "/api/traces?wait=1", "Content-Type: multipart/form-data; boundary=B0\r\n", b.p,
			b.len, &r, 60000);
		{
			cJSON *j = rel_json(&r);

			id = rel_int(j, "id");
			/* the upload in the trace's own directory: "source", or
			 * "source.zst" once compressed (just after ready) */
			rel_fmt(dir, sizeof(dir), "%s/traces/%" PRId64, DATA, id);
			rel_check(r.status == 201 && strcmp(rel_str(j, "name"), "../../../../tmp/evil.fxt") == 0 &&
					  has_upload(dir) && access("/tmp/evil.fxt", F_OK) != 0,
				  "names: a multipart file name ../../../../tmp/evil.fxt is only a name (status %d)", r.status);
			cJSON_Delete(j);
		}
		su_resp_free(&r);
		free(b.p);
	}
	/* symbols for a trace that is not XRay, for no trace, empty, garbage */
	{
		char path[128];

		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/symbols", FXT_ID);
		rel_req(S.port, "POST", path, NULL, "garbage that is no ELF", 22, &r, 20000);
		rel_check(rel_is_error(&r, 422, "bad_symbols", why, sizeof(why)), "names: garbage symbols: 422 bad_symbols (%s)",
			  r.status == 422 ? "ok" : why);
		su_resp_free(&r);
		rel_req(S.port, "POST", path, NULL, "", 0, &r, 20000);
		rel_check(rel_is_error(&r, 400, NULL, why, sizeof(why)), "names: empty symbols: 400 (%s)",
			  r.status == 400 ? "ok" : why);
		su_resp_free(&r);
		rel_req(S.port, "POST", "/api/traces/99999999/symbols", NULL, "x", 1, &r, 20000);
		rel_check(rel_is_error(&r, 404, NULL, why, sizeof(why)), "names: symbols for no trace: 404 (%s)",
			  r.status == 404 ? "ok" : why);
		su_resp_free(&r);
	}
}

/* ---- routes --------------------------------------------------------------------------- */

static void group_routes(void)
{
	static const struct {
		const char *method, *path;
		int status;
	} cases[] = {
		{ "GET", "/api/traces/%S/", 200 },
		{ "GET", "/api//traces", 404 },
		{ "GET", "/API/traces", 404 },
		{ "GET", "/api/traces/%S//tracks", 404 },
		{ "GET", "/api/traces//", 404 },
		{ "GET", "/api/traces/%S/tracks/", 404 },
		{ "GET", "/api/traces/%S/slices/", 404 },
		{ "GET", "/api/traces/%S/slices//", 404 },
		{ "GET", "/api/traces/%S/..", 404 },
		{ "GET", "/api/traces/%S/%2e%2e/%2e%2e/catalog.db", 404 },
		{ "GET", "/api/traces/%S/file/..", 404 },
		{ "GET", "/api/traces/1%2F2", 404 },
		{ "GET", "/api/traces/%S/export?format=csv", 400 },
		{ "GET", "/api/traces/%S/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 404 },
		{ "GET", "/api/traces/000000000000000000000000000000000000001", 404 },
		{ "OPTIONS", "/api/traces", 405 },
		{ "TRACE", "/api/traces", 405 },
		{ "HEAD", "/api/traces/%S/query", 405 },
		{ "DELETE", "/api/traces/%S/file", 405 },
		{ "POST", "/api/traces/%S/export", 405 },
		{ "PUT", "/api/traces/%S/symbols", 405 },
	};
	char path[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *s = strstr(cases[i].path, "%S");

		if (s)
			rel_fmt(path, sizeof(path), "%.*s%" PRId64 "%s", (int)(s - cases[i].path), cases[i].path, FXT_ID, s + 2);
		else
			rel_fmt(path, sizeof(path), "%s", cases[i].path);
		if (strcmp(cases[i].method, "HEAD") == 0) {
			struct su_resp r;
			int ok = rel_req(S.port, "HEAD", path, NULL, NULL, 0, &r, 20000) == 0 && r.status == cases[i].status;

			rel_check(ok, "routes: HEAD %s -> %d (got %d)", path, cases[i].status, r.status);
			su_resp_free(&r);
			continue;
		}
		expect_get(cases[i].method, path, cases[i].status,
			   cases[i].status == 404 ? "not_found" : cases[i].status == 405 ? "method_not_allowed" : NULL,
			   "routes");
	}
	/* a method name of 200 letters and one that is not a token */
	{
		char req[512];
		int fd = raw_connect(S.port, NULL), st;

		memset(req, 'X', 200);
		rel_fmt(req + 200, sizeof(req) - 200, " /api/traces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
		st = raw_exchange(fd, req, strlen(req), 10000);
		close(fd);
		rel_check(st == 0 || (st >= 400 && st < 600), "routes: a 200-letter method: an error or a close (got %d)", st);
		fd = raw_connect(S.port, NULL);
		rel_fmt(req, sizeof(req), "G\x01T /api/traces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
		st = raw_exchange(fd, req, strlen(req), 10000);
		close(fd);
		rel_check((st == 0 || (st >= 400 && st < 600)) && server_answers(),
			  "routes: a method with a control byte: an error or a close (got %d)", st);
	}
}

/* ---- big ----------------------------------------------------------------------------------- */

/* Sends a request of n bytes on a new connection; ok when the server
 * answers one of the given statuses (0 = closed without a reply) and then
 * serves the next client. */
static void expect_status(const char *what, const char *p, size_t n, const int *ok_status, size_t nok)
{
	int fd = raw_connect(S.port, NULL), st, ok = 0;
	size_t i;

	st = fd < 0 ? -2 : raw_exchange(fd, p, n, 20000);
	if (fd >= 0)
		close(fd);
	for (i = 0; i < nok; i++)
		ok |= st == ok_status[i];
	rel_check(ok && server_answers(), "big: %s: answered %d, and the server answers the next client", what, st);
}

static const int REFUSED[] = { 0, 400, 413, 414, 431 };
#define NREFUSED (sizeof(REFUSED) / sizeof(REFUSED[0]))

/* A request line with a path of len bytes under prefix. */
static size_t long_line(char *p, const char *prefix, size_t len, const char *suffix)
{
	size_t off = (size_t)sprintf(p, "GET %s", prefix);

	memset(p + off, 'a', len);
	off += len;
	return off + (size_t)sprintf(p + off, "%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", suffix);
}

static void group_big(void)
{
	static const int served_or_refused[] = { 0, 200, 404, 400, 413, 414, 431 };
	size_t n = 320000, off;
	char *p = malloc(n + 256);

	/* 100 KB request lines fit the connection's 128 KiB: served or refused */
	off = long_line(p, "/api/traces?x=", 100000, "");
	expect_status("a 100 KB request line (API)", p, off, served_or_refused, 7);
	off = long_line(p, "/", 100000, ".html");
	expect_status("a 100 KB request line (static)", p, off, served_or_refused, 7);
	/* 300 KB ones do not: refused */
	off = long_line(p, "/api/traces?x=", 300000, "");
	expect_status("a 300 KB request line (API)", p, off, REFUSED, NREFUSED);
	/* one 200 KB header */
	off = (size_t)snprintf(p, 64, "GET /api/traces HTTP/1.1\r\nHost: x\r\nX-Big: ");
	memset(p + off, 'c', 200000);
	off += 200000;
	off += (size_t)snprintf(p + off, 64, "\r\n\r\n");
	expect_status("a 200 KB header", p, off, REFUSED, NREFUSED);
	/* 4000 headers */
	off = (size_t)snprintf(p, 64, "GET /api/traces HTTP/1.1\r\nHost: x\r\n");
	while (off < 180000)
		off += (size_t)snprintf(p + off, 64, "X-H%zu: %040zu\r\n", off, off);
	off += (size_t)snprintf(p + off, 64, "\r\n");
	expect_status("4000 headers", p, off, REFUSED, NREFUSED);
	/* a header block that never ends (no blank line), 200 KB */
	off = (size_t)snprintf(p, 64, "GET /api/traces HTTP/1.1\r\nHost: x\r\n");
	while (off < 200000)
		off += (size_t)snprintf(p + off, 64, "X-N: %050zu\r\n", off);
	expect_status("a 200 KB header block without its end", p, off, REFUSED, NREFUSED);
	/* an upload with a 200 KB header and a body */
	off = (size_t)snprintf(p, 128, "POST /api/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nX-Big: ");
	memset(p + off, 'd', 200000);
	off += 200000;
	off += (size_t)snprintf(p + off, 64, "\r\n\r\n0123456789");
	{
		size_t before = trace_count();

		expect_status("an upload with a 200 KB header", p, off, REFUSED, NREFUSED);
		rel_check(trace_count() == before && spool_empty(5), "big: ... and it stored nothing");
	}
	free(p);
}

/* ---- slow ------------------------------------------------------------------------------------ */

struct loris {
	const char *src;
	int conns;
	double seconds;
	int gap_ms;
	int opened, refused;
};

/* Opens conns connections from src and sends a request a byte every
 * gap_ms, round robin, for seconds. */
static void *loris_main(void *arg)
{
	struct loris *l = arg;
	static const char req[] = "GET /api/traces HTTP/1.1\r\nHost: x\r\nUser-Agent: slowloris-slowloris-slowloris\r\n"
				  "X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
	int *fd = calloc((size_t)l->conns, sizeof(int));
	size_t *pos = calloc((size_t)l->conns, sizeof(size_t));
	double end = su_now() + l->seconds;
	int i;

	for (i = 0; i < l->conns; i++) {
		fd[i] = raw_connect(S.port, l->src);
		l->opened += fd[i] >= 0;
	}
	while (su_now() < end) {
		for (i = 0; i < l->conns; i++) {
			if (fd[i] < 0)
				continue;
			if (send(fd[i], req + pos[i] % (sizeof(req) - 1), 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
				close(fd[i]);
				fd[i] = -1;
				l->refused++;
				continue;
			}
			pos[i]++;
		}
		su_sleep_ms((unsigned)l->gap_ms);
	}
	for (i = 0; i < l->conns; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	free(fd);
	free(pos);
	return NULL;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Normal requests from 127.0.0.1 while others misbehave: all 200, p99. */
static void serve_while(const char *what, double seconds)
{
	double lat[4000], end = su_now() + seconds;
	int n = 0, bad = 0;
	char path[128];

	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&resolution=100000", FXT_ID,
		TRACK_ID);
	while (su_now() < end && n < 4000) {
		struct su_resp r;
		double t0 = su_now();

		if (rel_req(S.port, "GET", n % 2 ? "/api/traces" : path, NULL, NULL, 0, &r, 10000) != 0 || r.status != 200)
			bad++;
		lat[n++] = su_now() - t0;
		su_resp_free(&r);
		su_sleep_ms(20);
	}
	qsort(lat, (size_t)n, sizeof(double), cmp_dbl);
	rel_check(n > 0 && bad == 0 && lat[(n * 99) / 100] < 1.0,
		  "slow: %s: %d requests from 127.0.0.1 served, %d failed, p50 %.1f ms p99 %.1f ms", what, n, bad,
		  n ? lat[n / 2] * 1e3 : 0, n ? lat[(n * 99) / 100] * 1e3 : 0);
}

static void group_slow(int idle_fd, double idle_since)
{
	struct loris trickle = { "127.0.0.2", 24, 12, 250, 0, 0 };
	struct loris stall = { "127.0.0.3", 300, 12, 3000, 0, 0 };
	pthread_t th;

	pthread_create(&th, NULL, loris_main, &trickle);
	su_sleep_ms(500);
	serve_while("24 slowloris clients on 127.0.0.2 (a byte every 250 ms)", 10);
	pthread_join(th, NULL);
	rel_check(trickle.opened == 24, "slow: the 24 slowloris connections were accepted (%d)", trickle.opened);

	pthread_create(&th, NULL, loris_main, &stall);
	su_sleep_ms(1500);
	serve_while("300 stalled clients on 127.0.0.3 (past the per-address limit)", 8);
	pthread_join(th, NULL);
	rel_note("slow: of 300 connections from 127.0.0.3, %d were accepted and %d cut (per-address limit)",
		 stall.opened, stall.refused);

	{
		double left = 75 - (su_now() - idle_since);
		int closed = raw_closed_within(idle_fd, left > 0 ? left : 0.1);

		rel_check(closed, "slow: a client stalled mid-header is dropped by the timeout (%s %.0f s after it stalled)",
			  closed ? "closed" : "still open", su_now() - idle_since);
		close(idle_fd);
	}
	if (FULL) {
		int fd = raw_connect(S.port, "127.0.0.4"), i, dropped = 0;
		const char *req = "GET /api/traces HTTP/1.1\r\nHost: x\r\nX-Trickle: abcdefghijklmnopqrstuvwxyz\r\n";
		double t0 = su_now();

		for (i = 0; fd >= 0 && su_now() - t0 < 150; i++) {
			if (send(fd, req + i % (int)strlen(req), 1, MSG_NOSIGNAL) != 1 || raw_closed_within(fd, 10)) {
				dropped = 1;
				break;
			}
		}
		rel_check(dropped, "slow: a client trickling a header byte every 10 s is dropped (%s after %.0f s)",
			  dropped ? "dropped" : "still open", su_now() - t0);
		if (fd >= 0)
			close(fd);
	}
}

/* ---- main ------------------------------------------------------------------------------------ */

static int setup(void)
{
	static const char *const extra[] = { "--max-upload", "4M", NULL };
	char path[4400];
	struct su_resp r;
	cJSON *j;
	size_t n;

	rel_fmt(DATA, sizeof(DATA), "%s/data", R.work);
	rel_fmt(path, sizeof(path), "%s/big.fxt", R.work);
	if (rel_gen_fxt(path, 150000, 6, 3) != 0 || (BIG = rel_read_file(path, &BIG_LEN)) == NULL)
		return -1;
	rel_fmt(path, sizeof(path), "%s/small.fxt", R.work);
	if (rel_gen_fxt(path, 3000, 3, 4) != 0 || (SMALL = rel_read_file(path, &SMALL_LEN)) == NULL)
		return -1;
	if (rel_start(&S, DATA, extra) != 0)
		return -1;
	FXT_ID = rel_upload(S.port, "?wait=1&name=base", SMALL, SMALL_LEN, NULL, &r, 60000);
	su_resp_free(&r);
	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", FXT_ID);
	if (FXT_ID < 0 || rel_req(S.port, "GET", path, NULL, NULL, 0, &r, 20000) != 0 || (j = rel_json(&r)) == NULL)
		return -1;
	TRACK_ID = rel_first_track(j);
	cJSON_Delete(j);
	su_resp_free(&r);
	n = BIG_LEN;
	rel_note("server on port %d, pid %d; base trace %" PRId64 " (track %" PRId64 "), big trace %zu bytes", S.port,
		 (int)S.pid, FXT_ID, TRACK_ID, n);
	return TRACK_ID > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	int idle_fd, rc;
	double idle_since;
	const char *stall = "GET /api/traces HTTP/1.1\r\nHost: x\r\nX-Stalled: ";

	FULL = argc > 1 && strcmp(argv[1], "--full") == 0;
	rel_setup("uploads");
	if (!rel_check(setup() == 0, "setup: server started, base trace ready"))
		return rel_summary("uploads");
	idle_fd = raw_connect(S.port, "127.0.0.5");
	send_all(idle_fd, stall, strlen(stall));
	idle_since = su_now();
	group_cut();
	group_params();
	group_names();
	group_routes();
	group_big();
	group_slow(idle_fd, idle_since);
	rel_check(server_answers(), "the server still answers at the end");
	rc = su_server_stop(&S, SIGTERM);
	rel_check(rc == 0, "the server stops cleanly on SIGTERM (exit %d)", rc);
	rel_check(rel_log_reports(R.log) == 0, "no sanitizer report in the server log");
	free(BIG);
	free(SMALL);
	return rel_summary("uploads");
}
