/*
 * Tests of client/http.c, the command line's one HTTP client, against a
 * fake server on a loopback port (tests/provider/peer.h): the URL rules
 * `trace-server stream` always had, what a request carries (the bearer
 * token, a JSON body, no Expect), a chunked reply read whole and parsed,
 * a streamed body whose headers reach the server before its first byte
 * (the live trace is made then), and why a refused connection failed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../client/client_internal.h"
#include "../provider/peer.h"

static struct peer S;
static char body[4096]; /* the request body the fake server read, decoded */
static atomic_int head_seen, reader_called; /* set by the server thread, read by the source */

static void test_parse_url(void **state)
{
	struct cl_server s = { 0 };
	char err[256];

	(void)state;
	assert_int_equal(cl_parse_url("http://127.0.0.1:8080", &s, err, sizeof(err)), 0);
	assert_string_equal(s.host, "127.0.0.1");
	assert_int_equal(s.port, 8080);
	assert_int_equal(cl_parse_url("http://traces.example/", &s, err, sizeof(err)), 0);
	assert_string_equal(s.host, "traces.example");
	assert_int_equal(s.port, 80);
	assert_int_equal(cl_parse_url("localhost:9", &s, err, sizeof(err)), 0); /* no scheme: http */
	assert_string_equal(s.host, "localhost");
	assert_int_equal(s.port, 9);
	assert_int_equal(cl_parse_url("http://[::1]:9/x", &s, err, sizeof(err)), 0);
	assert_string_equal(s.host, "[::1]");
	assert_int_equal(cl_parse_url("https://h", &s, err, sizeof(err)), -1);
	assert_string_equal(err, "https://h: only http:// servers are supported");
	assert_int_equal(cl_parse_url("http://h:0", &s, err, sizeof(err)), -1);
	assert_string_equal(err, "http://h:0: bad port");
	assert_int_equal(cl_parse_url("http://h:65536", &s, err, sizeof(err)), -1);
	assert_string_equal(err, "http://h:65536: bad port");
	assert_int_equal(cl_parse_url("http://:80", &s, err, sizeof(err)), -1);
}

static void test_query_escape(void **state)
{
	char out[32] = "q=";

	(void)state;
	assert_int_equal(cl_query_escape(out, sizeof(out), "a b&c~\xc3\xa9"), 0);
	assert_string_equal(out, "q=a%20b%26c~%C3%A9");
	assert_int_equal(cl_query_escape(out, sizeof(out), "0123456789012345"), -1); /* does not fit */
}

/* Reads a chunked body from S into body; 0, or -1. */
static int read_chunked(void)
{
	size_t in = 0, out = 0;

	for (;;) {
		char *eol;
		unsigned long n;

		while ((eol = memmem(S.buf + in, S.len - in, "\r\n", 2)) == NULL)
			if (peer_fill(&S, 5000) != 0)
				return -1;
		n = strtoul((char *)S.buf + in, NULL, 16);
		while (S.len < (size_t)((uint8_t *)eol - S.buf) + 2 + n + 2)
			if (peer_fill(&S, 5000) != 0)
				return -1;
		if (n == 0)
			return 0;
		if (out + n >= sizeof(body))
			return -1;
		memcpy(body + out, eol + 2, n);
		body[out += n] = '\0';
		in = (size_t)((uint8_t *)eol - S.buf) + 2 + n + 2;
	}
}

/* Answers one request with a chunked JSON reply; keeps its body. */
static void *json_server(void *arg)
{
	static const char reply[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				    "7\r\n{\"id\": \r\n3\r\n42}\r\n0\r\n\r\n";
	size_t want = 0;
	char *cl;

	(void)arg;
	if (peer_accept(&S, 10000, "") != 0)
		return NULL;
	if ((cl = strcasestr(S.request, "Content-Length: ")) != NULL)
		want = strtoul(cl + 16, NULL, 10);
	while (S.len < want && peer_fill(&S, 5000) == 0)
		;
	snprintf(body, sizeof(body), "%.*s", (int)S.len, (char *)S.buf);
	send(S.fd, reply, strlen(reply), MSG_NOSIGNAL);
	peer_hangup(&S);
	return NULL;
}

static void test_request(void **state)
{
	struct cl_server s = { .host = "127.0.0.1", .token = "sekrit" };
	struct cl_reply r;
	pthread_t th;

	(void)state;
	s.port = (int)S.port;
	pthread_create(&th, NULL, json_server, NULL);
	assert_int_equal(cl_request(&s, "POST", "/api/captures", "{\"a\":1}", &r), 200);
	pthread_join(th, NULL);
	assert_true(strncmp(S.request, "POST /api/captures HTTP/1.1\r\n", 29) == 0);
	assert_non_null(strstr(S.request, "\r\nAuthorization: Bearer sekrit"));
	assert_non_null(strstr(S.request, "\r\nContent-Type: application/json"));
	assert_null(strcasestr(S.request, "Expect:"));
	assert_string_equal(body, "{\"a\":1}");
	assert_string_equal(r.body, "{\"id\": 42}");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(r.json, "id")->valueint, 42);
	assert_string_equal(r.why, "");
	cl_reply_fini(&r);
}

/* Once the client has asked its source for bytes (and got none), reads a
 * chunked upload, its head first, then answers 202. */
static void *upload_server(void *arg)
{
	static const char reply[] = "HTTP/1.1 202 Accepted\r\nContent-Length: 9\r\n\r\n{\"id\":3}\n";
	int i;

	(void)arg;
	for (i = 0; i < 1000 && !reader_called; i++)
		usleep(10000);
	if (peer_accept(&S, 10000, "") != 0)
		return NULL;
	head_seen = 1;
	if (read_chunked() == 0)
		send(S.fd, reply, strlen(reply), MSG_NOSIGNAL);
	peer_hangup(&S);
	return NULL;
}

struct src {
	int calls; /* reads so far */
	int waits; /* CL_READ_AGAIN answers */
};

/* Nothing until the server has the request's head (at most 50 asks, about
 * 5 s), then two pieces, then the end. */
static long src_read(void *arg, char *buf, size_t cap)
{
	static const char *const pieces[] = { "hello ", "world" };
	struct src *x = arg;
	int seen = head_seen; /* before reader_called: the first call always finds none */

	reader_called = 1;
	if (!seen)
		return ++x->waits > 50 ? CL_READ_FAIL : CL_READ_AGAIN;
	if (x->calls >= 2)
		return 0;
	assert_true(cap >= strlen(pieces[x->calls]));
	memcpy(buf, pieces[x->calls], strlen(pieces[x->calls]));
	return (long)strlen(pieces[x->calls++]);
}

static void test_upload_headers_first(void **state)
{
	struct cl_server s = { .host = "127.0.0.1" };
	struct src x = { 0, 0 };
	struct cl_reply r;
	pthread_t th;

	(void)state;
	s.port = (int)S.port;
	head_seen = reader_called = 0;
	body[0] = '\0';
	pthread_create(&th, NULL, upload_server, NULL);
	assert_int_equal(cl_upload(&s, "/api/traces?live=1", "application/octet-stream", src_read, &x, &r), 202);
	pthread_join(th, NULL);
	assert_true(x.waits > 0); /* the head went out while the source had nothing */
	assert_true(strncmp(S.request, "POST /api/traces?live=1 HTTP/1.1\r\n", 34) == 0);
	assert_non_null(strcasestr(S.request, "\r\nTransfer-Encoding: chunked"));
	assert_null(strcasestr(S.request, "Authorization:")); /* no token, no header */
	assert_string_equal(body, "hello world");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(r.json, "id")->valueint, 3);
	cl_reply_fini(&r);
}

/* No server: -1, unreachable, and why in the system's words. */
static void test_refused(void **state)
{
	struct cl_server s = { .host = "127.0.0.1" };
	struct peer dead;
	struct cl_reply r;

	(void)state;
	assert_int_equal(peer_listen(&dead), 0);
	s.port = (int)dead.port;
	peer_fini(&dead);
	assert_int_equal(cl_request(&s, "GET", "/api/traces", NULL, &r), -1);
	assert_int_equal(r.status, -1);
	assert_true(r.unreachable);
	assert_string_equal(r.why, "Connection refused");
	assert_non_null(r.body); /* "" */
	cl_reply_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_url),
		cmocka_unit_test(test_query_escape),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_upload_headers_first),
		cmocka_unit_test(test_refused),
	};
	int rc;

	if (peer_listen(&S) != 0 || cl_global_init() != 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	cl_global_fini();
	peer_fini(&S);
	return rc;
}
