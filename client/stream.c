/*
 * trace-server stream: plays the provider's part for any FXT producer. It
 * sends a file as it grows (or standard input) to a server as a live trace
 * (POST /api/traces?live=1, chunked), so a tool that writes FXT can be
 * watched while it records, unchanged.
 *
 * A file is followed like `tail -f`: its new bytes are sent as they appear,
 * until the stream is stopped (SIGINT or SIGTERM: the body is ended
 * cleanly, and the trace becomes ready) or, with --idle S, until the file
 * has not grown for S seconds. Standard input is sent until its end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../provider/utf8.h"
#include "client.h"

enum { CHUNK = 256 * 1024, POLL_MS = 100, OBJECT_MAX = 1 << 20 };

static volatile sig_atomic_t g_stop;

static void on_stop(int sig)
{
	(void)sig;
	g_stop = 1;
}

static int usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: trace-server stream [--server URL] [--name NAME] [--label K=V]... [--description TEXT]\n"
		"                           [--format fxt|xray] [--token-file F] [--idle SECONDS] FILE|-\n"
		"       trace-server stream --provider [--name NAME] [--categories A,B] [--server URL] FILE|-\n"
		"  Sends FILE as it grows (or standard input, '-') to the server as a live trace; with\n"
		"  --provider, registers as a provider and sends it into the captures that start it.\n"
		"  --server defaults to $TRACE_SERVER_URL, else http://127.0.0.1:8080; the token to\n"
		"  $TRACE_TOKEN. A file is followed until Ctrl-C (or --idle seconds without growth).\n");
	return rc;
}

struct opts {
	struct cl_server srv;
	const char *name, *description, *format, *input, *categories;
	int provider; /* --provider: into captures, as a provider */
	const char *labels[64];
	int nlabels;
	double idle; /* seconds; 0 = follow until stopped */
};

static int parse(int argc, char **argv, struct opts *o)
{
	const char *url = getenv("TRACE_SERVER_URL"), *tok = getenv("TRACE_TOKEN");
	char err[512];
	int i;

	memset(o, 0, sizeof(*o));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return usage(0) - 1;
		if (strcmp(a, "--provider") == 0) {
			o->provider = 1;
			continue;
		}
		if (a[0] == '-' && a[1] != '\0' && v == NULL) {
			fprintf(stderr, "trace-server stream: %s needs a value\n", a);
			return usage(2);
		}
		if (strcmp(a, "--server") == 0)
			url = v;
		else if (strcmp(a, "--name") == 0)
			o->name = v;
		else if (strcmp(a, "--categories") == 0)
			o->categories = v;
		else if (strcmp(a, "--description") == 0)
			o->description = v;
		else if (strcmp(a, "--format") == 0)
			o->format = v;
		else if (strcmp(a, "--label") == 0 && o->nlabels < 64)
			o->labels[o->nlabels++] = v;
		else if (strcmp(a, "--idle") == 0)
			o->idle = atof(v);
		else if (strcmp(a, "--token-file") == 0) {
			if (cl_read_token(v, &o->srv, err, sizeof(err)) != 0) {
				fprintf(stderr, "trace-server stream: %s\n", err);
				return 2;
			}
		} else if ((a[0] != '-' || a[1] == '\0') && o->input == NULL) {
			o->input = a;
			continue;
		} else {
			return usage(2);
		}
		i++;
	}
	if (o->input == NULL)
		return usage(2);
	if (cl_parse_url(url ? url : "http://127.0.0.1:8080", &o->srv, err, sizeof(err)) != 0) {
		fprintf(stderr, "trace-server stream: %s\n", err);
		return 2;
	}
	if (!o->srv.token[0] && tok)
		snprintf(o->srv.token, sizeof(o->srv.token), "%s", tok);
	return 0;
}

/* The request line's path: /api/traces?live=1 and the trace's metadata. */
static int request_path(const struct opts *o, char *out, size_t n)
{
	int i, rc = 0;

	snprintf(out, n, "/api/traces?live=1&name=");
	rc |= cl_query_escape(out, n, o->name);
	if (o->description) {
		strncat(out, "&description=", n - strlen(out) - 1);
		rc |= cl_query_escape(out, n, o->description);
	}
	if (o->format) {
		strncat(out, "&format=", n - strlen(out) - 1);
		rc |= cl_query_escape(out, n, o->format);
	}
	for (i = 0; i < o->nlabels; i++) {
		strncat(out, "&label=", n - strlen(out) - 1);
		rc |= cl_query_escape(out, n, o->labels[i]);
	}
	return rc;
}

static int send_chunk(int fd, const void *p, size_t n)
{
	char h[32];

	snprintf(h, sizeof(h), "%zx\r\n", n);
	return cl_write_all(fd, h, strlen(h)) || cl_write_all(fd, p, n) || cl_write_all(fd, "\r\n", 2) ? -1 : 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* Sends the input until its end (stdin), the stop signal or the idle time.
 * Returns the bytes sent, or -1 when the connection failed. */
static int64_t pump(const struct opts *o, int in, int sock, int follow)
{
	char *buf = malloc(CHUNK);
	int64_t sent = 0;
	double idle = 0;

	if (buf == NULL)
		return -1;
	while (!g_stop) {
		ssize_t k = read(in, buf, CHUNK);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			fprintf(stderr, "trace-server stream: reading %s: %s\n", o->input, strerror(errno));
			break;
		}
		if (k == 0) {
			if (!follow)
				break;
			if (o->idle > 0 && (idle += POLL_MS / 1000.0) >= o->idle)
				break;
			sleep_ms(POLL_MS);
			continue;
		}
		idle = 0;
		if (send_chunk(sock, buf, (size_t)k) != 0) {
			free(buf);
			return -1;
		}
		sent += k;
	}
	free(buf);
	return sent;
}

/* Says where the live trace can be watched: the newest live trace of this
 * name (made when the request's headers arrived). Best effort. */
static void announce(const struct opts *o)
{
	char path[2048] = "/api/traces?status=live&limit=1&q=", reply[8192], err[256];
	const char *id;
	int tries;

	if (cl_query_escape(path, sizeof(path), o->name) != 0)
		return;
	for (tries = 0; tries < 20; tries++) {
		if (cl_get(&o->srv, "GET", path, reply, sizeof(reply), err, sizeof(err)) == 200 &&
		    (id = strstr(reply, "\"id\":")) != NULL) {
			fprintf(stderr, "trace-server stream: watch it at http://%s:%d/?trace=%ld\n", o->srv.host,
				o->srv.port, strtol(id + 5, NULL, 10));
			return;
		}
		sleep_ms(50);
	}
}

/* Reads the reply to the end; its status, and its body in out. */
static int read_reply(int sock, char *out, size_t n)
{
	char buf[8192], *body;
	size_t len = 0;
	int status = -1;

	for (;;) {
		ssize_t k = read(sock, buf + len, sizeof(buf) - 1 - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (len += (size_t)k) == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
	body = strstr(buf, "\r\n\r\n");
	snprintf(out, n, "%s", body ? body + 4 : "");
	return status;
}

/* Prints the trace object of the trace the reply at the body's end names
 * ({"id", "status"}), as docs/API.md promises; the reply itself when the
 * object cannot be read. */
static void print_trace(const struct opts *o, const char *reply)
{
	const char *id = strstr(reply, "\"id\":");
	char path[64], err[256], *obj = malloc(OBJECT_MAX);

	if (id != NULL && obj != NULL) {
		snprintf(path, sizeof(path), "/api/traces/%ld", strtol(id + 5, NULL, 10));
		if (cl_get(&o->srv, "GET", path, obj, OBJECT_MAX, err, sizeof(err)) == 200 && obj[0] == '{') {
			printf("%s\n", obj);
			free(obj);
			return;
		}
	}
	free(obj);
	printf("%s\n", reply);
}

int cl_stream_main(int argc, char **argv)
{
	char path[8192], head[9000], reply[4096], err[512], defname[128];
	struct sigaction sa = { 0 };
	struct opts o;
	int in, sock, status, follow, rc = parse(argc, argv, &o);
	int64_t sent;

	if (rc)
		return rc < 0 ? 0 : rc;
	follow = strcmp(o.input, "-") != 0;
	in = follow ? open(o.input, O_RDONLY | O_CLOEXEC) : 0;
	if (in < 0) {
		fprintf(stderr, "trace-server stream: %s: %s\n", o.input, strerror(errno));
		return 1;
	}
	if (o.name == NULL) {
		const char *base = strrchr(o.input, '/');

		utf8_copy(defname, sizeof(defname), follow ? (base ? base + 1 : o.input) : "stdin");
		o.name = defname;
	}
	if (o.provider) {
		struct sigaction pa = { 0 };

		pa.sa_handler = on_stop;
		sigaction(SIGINT, &pa, NULL);
		sigaction(SIGTERM, &pa, NULL);
		signal(SIGPIPE, SIG_IGN);
		rc = cl_provide(&o.srv, o.name, o.categories, in, follow, &g_stop);
		if (follow)
			close(in);
		return rc;
	}
	if (request_path(&o, path, sizeof(path)) != 0) {
		fprintf(stderr, "trace-server stream: the name, labels and description are too long\n");
		return 2;
	}
	if ((sock = cl_connect(&o.srv, err, sizeof(err))) < 0) {
		fprintf(stderr, "trace-server stream: %s\n", err);
		return 1;
	}
	snprintf(head, sizeof(head),
		 "POST %s HTTP/1.1\r\nHost: %s:%d\r\nTransfer-Encoding: chunked\r\n"
		 "Content-Type: application/octet-stream\r\nConnection: close\r\n%s%s%s\r\n",
		 path, o.srv.host, o.srv.port, o.srv.token[0] ? "Authorization: Bearer " : "", o.srv.token,
		 o.srv.token[0] ? "\r\n" : "");
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (cl_write_all(sock, head, strlen(head)) != 0) {
		fprintf(stderr, "trace-server stream: the server closed the connection\n");
		return 1;
	}
	fprintf(stderr, "trace-server stream: streaming %s to http://%s:%d/ as \"%s\"%s\n", o.input, o.srv.host,
		o.srv.port, o.name, follow ? (o.idle > 0 ? "" : " (Ctrl-C ends it)") : "");
	announce(&o);
	sent = pump(&o, in, sock, follow);
	if (follow)
		close(in);
	if (sent < 0 || cl_write_all(sock, "0\r\n\r\n", 5) != 0) {
		/* the server answered early (an error) or went away */
		status = read_reply(sock, reply, sizeof(reply));
		fprintf(stderr, "trace-server stream: the stream was cut%s%s\n", status > 0 ? ": " : "",
			status > 0 ? reply : "");
		close(sock);
		return 1;
	}
	status = read_reply(sock, reply, sizeof(reply));
	close(sock);
	if (status < 200 || status > 299) {
		fprintf(stderr, "trace-server stream: the server answered %d: %s\n", status, reply);
		return 1;
	}
	print_trace(&o, reply);
	fprintf(stderr, "trace-server stream: sent %" PRId64 " bytes\n", sent);
	return 0;
}
