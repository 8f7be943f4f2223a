/*
 * Tests of client/record.c (trace-server record) against a fake server on
 * a loopback port that answers the capture API and keeps the requests: the
 * order of the calls, the TraceConfig sent, the environment the command
 * gets, and the command's exit status passed on.
 */
#include <pthread.h>

#include "../ingest_util.h"
#include "../provider/peer.h"

#include "../../client/client.h"

static struct peer S;
static char requests[8][8192];
static int nreq;

/* Answers 4 requests (initialize, start, stop, terminate), one per connection. */
static void *fake_server(void *arg)
{
	static const char *const replies[] = {
		"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n"
		"{\"id\": 5, \"state\": \"init\"}\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 27\r\n\r\n{\"id\": 5, \"trace_id\": 9}   ",
	};
	int i;

	(void)arg;
	for (i = 0; i < 4; i++) {
		size_t n;

		if (peer_accept(&S, 10000, replies[i]) != 0)
			return NULL;
		while (peer_wait(S.fd, 100) && peer_fill(&S, 100) == 0) /* the body, if any */
			;
		n = strlen(S.request);
		memcpy(requests[i], S.request, n);
		memcpy(requests[i] + n, "\n\n", 2);
		memcpy(requests[i] + n + 2, S.buf, S.len < 2048 ? S.len : 2048);
		nreq++;
		peer_hangup(&S);
	}
	return NULL;
}

static void test_record_calls(void **state)
{
	char out[] = "/tmp/record-test-XXXXXX", cmd[256], got[512] = "";
	char *argv[] = {"trace-server", "record", "--server", S.url, "--mode", "circular", "--categories", "a,b",
			"--", "/bin/sh", "-c", cmd, NULL};
	pthread_t th;
	FILE *f;
	int fd = mkstemp(out);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "printf '%%s|%%s|%%s' \"$TRACE_SERVER\" \"$TRACE_PROVIDER_NAME\" "
		 "\"$TRACE_START_TIMEOUT_MS\" > %s; exit 3", out);
	pthread_create(&th, NULL, fake_server, NULL);
	assert_int_equal(cl_record_main(12, argv), 3);
	pthread_join(th, NULL);
	assert_int_equal(nreq, 4);
	assert_true(strncmp(requests[0], "POST /api/captures HTTP/1.1\r\n", 29) == 0);
	assert_non_null(strstr(requests[0], "\"categories\":[\"a\",\"b\"]"));
	assert_non_null(strstr(requests[0], "\"buffering_mode\":\"circular\""));
	assert_non_null(strstr(requests[0], "\"name\":\"sh\""));
	assert_true(strncmp(requests[1], "POST /api/captures/5/start HTTP/1.1\r\n", 37) == 0);
	assert_true(strncmp(requests[2], "POST /api/captures/5/stop HTTP/1.1\r\n", 36) == 0);
	assert_true(strncmp(requests[3], "DELETE /api/captures/5 HTTP/1.1\r\n", 33) == 0);
	f = fopen(out, "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	remove(out);
	snprintf(cmd, sizeof(cmd), "%s|sh|3000", S.url);
	assert_string_equal(got, cmd);
}

/* No server: the command still runs, untraced, and its status comes back. */
static void test_record_no_server(void **state)
{
	struct peer dead;
	char url[64];
	char *argv[] = {"trace-server", "record", "--server", url, "--", "/bin/sh", "-c",
			"test -z \"$TRACE_SERVER\" && exit 4", NULL};

	(void)state;
	assert_int_equal(peer_listen(&dead), 0);
	snprintf(url, sizeof(url), "%s", dead.url);
	peer_fini(&dead);
	assert_int_equal(cl_record_main(8, argv), 4);
}

/* Answers initialize and start, then replies[2] to the stop (NULL: the
 * server is gone, its port closed) and replies[3] to the terminate. */
static void *vanishing_server(void *arg)
{
	const char **replies = arg;
	struct peer *p = &S;
	int i;

	for (i = 0; i < 4 && replies[i]; i++) {
		if (peer_accept(p, 10000, replies[i]) != 0)
			return NULL;
		while (peer_wait(p->fd, 100) && peer_fill(p, 100) == 0)
			;
		peer_hangup(p);
	}
	if (i < 4) { /* gone: later connections are refused */
		close(p->lfd);
		p->lfd = -1;
	}
	return NULL;
}

/* Runs record against vanishing_server with replies; its stderr into err. */
static void record_errors(const char **replies, char *err, size_t cap)
{
	char path[] = "/tmp/record-err-XXXXXX";
	char *argv[] = {"trace-server", "record", "--server", S.url, "--", "/bin/true", NULL};
	int fd = mkstemp(path), saved = dup(2);
	pthread_t th;
	FILE *f;
	size_t n;

	assert_true(fd >= 0 && saved >= 0);
	pthread_create(&th, NULL, vanishing_server, replies);
	dup2(fd, 2);
	cl_record_main(6, argv);
	dup2(saved, 2);
	close(saved);
	close(fd);
	pthread_join(th, NULL);
	assert_non_null(f = fopen(path, "r"));
	n = fread(err, 1, cap - 1, f);
	err[n] = '\0';
	fclose(f);
	remove(path);
}

/* When a stop or terminate fails, record says what failed: no answer (and
 * why), or the server's own error, never "-1: no reason given". */
static void test_record_says_what_failed(void **state)
{
	static const char init[] = "HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\n{\"id\": 5}\n";
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
	static const char gone[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 78\r\n\r\n"
				   "{\"error\":{\"code\":\"not_found\",\"message\":\"there is no capture with this id\"}}";
	const char *vanish[] = {init, ok, NULL, NULL};
	const char *restarted[] = {init, ok, gone, gone};
	char err[4096];

	(void)state;
	record_errors(vanish, err, sizeof(err));
	assert_null(strstr(err, "no reason given"));
	assert_non_null(strstr(err, "stopping capture 5: no answer from http://127.0.0.1:"));
	assert_non_null(strstr(err, "Connection refused"));
	peer_fini(&S);
	assert_int_equal(peer_listen(&S), 0); /* a new port for the next run */
	record_errors(restarted, err, sizeof(err));
	assert_null(strstr(err, "no reason given"));
	assert_non_null(strstr(err, "stopping capture 5: HTTP 404 not_found: there is no capture with this id"));
}

static void test_record_usage(void **state)
{
	char *a1[] = {"trace-server", "record", NULL};
	char *a2[] = {"trace-server", "record", "--mode", "sideways", "--", "true", NULL};
	char *a3[] = {"trace-server", "record", "--buffer-mb", "0", "--", "true", NULL};

	(void)state;
	assert_int_equal(cl_record_main(2, a1), 2);
	assert_int_equal(cl_record_main(6, a2), 2);
	assert_int_equal(cl_record_main(6, a3), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_calls),
		cmocka_unit_test(test_record_no_server),
		cmocka_unit_test(test_record_usage),
		cmocka_unit_test(test_record_says_what_failed),
	};

	if (peer_listen(&S) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
