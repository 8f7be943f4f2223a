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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../provider/utf8.h"
#include "client.h"
#include "client_internal.h"

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

static void sleep_ms(unsigned ms)
{
	struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The body's source: the input, until its end (stdin), the stop signal or
 * the idle time. */
struct pump {
	const struct opts *o;
	atomic_int announced; /* announce() is done: until then the body waits, so the trace is live */
	int in;
	int follow;    /* a file followed as it grows: its end is not the body's */
	int reading;   /* the input has been read (after the announcement) */
	double last;   /* when the input last gave bytes, or was first read (now_s) */
	int64_t sent;  /* bytes given to the request */
};

/* cl_read_fn: bytes read, 0 at the body's end, or CL_READ_AGAIN while a
 * followed file has not grown. */
static long pump_read(void *arg, char *buf, size_t cap)
{
	struct pump *p = arg;
	ssize_t k;

	if (g_stop)
		return 0;
	if (!atomic_load(&p->announced))
		return CL_READ_AGAIN;
	if (!p->reading) {
		p->reading = 1;
		p->last = now_s();
	}
	while ((k = read(p->in, buf, cap)) < 0 && errno == EINTR)
		;
	if (k < 0) {
		fprintf(stderr, "trace-server stream: reading %s: %s\n", p->o->input, strerror(errno));
		return 0;
	}
	if (k > 0) {
		p->last = now_s();
		p->sent += k;
		return (long)k;
	}
	if (!p->follow || (p->o->idle > 0 && now_s() - p->last >= p->o->idle))
		return 0;
	return CL_READ_AGAIN;
}

/* Says where the live trace can be watched: the newest live trace of this
 * name (made when the request's headers arrived). Best effort; it runs on
 * a thread of its own while the upload, its headers sent, waits for it. */
static void announce(const struct opts *o)
{
	char path[2048] = "/api/traces?status=live&limit=1&q=";
	struct cl_reply r;
	int tries;

	if (cl_query_escape(path, sizeof(path), o->name) != 0)
		return;
	for (tries = 0; tries < 20 && !g_stop; tries++) {
		const cJSON *t, *id;

		cl_request(&o->srv, "GET", path, NULL, &r);
		t = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r.json, "traces"), 0);
		id = cJSON_GetObjectItemCaseSensitive(t, "id");
		if (r.status == 200 && cJSON_IsNumber(id))
			fprintf(stderr, "trace-server stream: watch it at http://%s:%d/?trace=%.0f\n", o->srv.host,
				o->srv.port, id->valuedouble);
		if ((r.status == 200 && cJSON_IsNumber(id)) || r.unreachable) {
			cl_reply_fini(&r);
			return;
		}
		cl_reply_fini(&r);
		sleep_ms(50);
	}
}

static void *announce_thread(void *arg)
{
	struct pump *p = arg;

	announce(p->o);
	atomic_store(&p->announced, 1);
	return NULL;
}

/* Prints the trace object of the trace the upload's reply names ({"id",
 * "status"}), as docs/API.md promises; the reply itself when the object
 * cannot be read. */
static void print_trace(const struct opts *o, const struct cl_reply *reply)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(reply->json, "id");
	struct cl_reply r = { 0 };
	char path[64];

	if (cJSON_IsNumber(id)) {
		snprintf(path, sizeof(path), "/api/traces/%.0f", id->valuedouble);
		if (cl_request(&o->srv, "GET", path, NULL, &r) == 200 && r.body[0] == '{') {
			printf("%s\n", r.body);
			cl_reply_fini(&r);
			return;
		}
	}
	cl_reply_fini(&r);
	printf("%s\n", reply->body);
}

/* Sends the input as a live trace; the exit status. */
static int stream_live(struct opts *o, int in, int follow)
{
	char path[8192];
	struct pump p = { o, 0, in, follow, 0, 0, 0 };
	struct cl_reply r;
	pthread_t th;
	int st, announcing;

	if (request_path(o, path, sizeof(path)) != 0) {
		fprintf(stderr, "trace-server stream: the name, labels and description are too long\n");
		return 2;
	}
	fprintf(stderr, "trace-server stream: streaming %s to http://%s:%d/ as \"%s\"%s\n", o->input, o->srv.host,
		o->srv.port, o->name, follow ? (o->idle > 0 ? "" : " (Ctrl-C ends it)") : "");
	if (!(announcing = pthread_create(&th, NULL, announce_thread, &p) == 0))
		atomic_store(&p.announced, 1);
	st = cl_upload(&o->srv, path, "application/octet-stream", pump_read, &p, &r);
	if (announcing)
		pthread_join(th, NULL);
	if (r.unreachable)
		fprintf(stderr, "trace-server stream: cannot connect to %s:%d: %s\n", o->srv.host, o->srv.port, r.why);
	else if (st < 0) /* the server answered early (an error) or went away */
		fprintf(stderr, "trace-server stream: the stream was cut%s%s\n", r.status > 0 ? ": " : "",
			r.status > 0 ? r.body : "");
	else if (st < 200 || st > 299)
		fprintf(stderr, "trace-server stream: the server answered %d: %s\n", st, r.body);
	else {
		print_trace(o, &r);
		fprintf(stderr, "trace-server stream: sent %" PRId64 " bytes\n", p.sent);
	}
	cl_reply_fini(&r);
	return st >= 200 && st <= 299 ? 0 : 1;
}

int cl_stream_main(int argc, char **argv)
{
	char defname[128];
	struct sigaction sa = { 0 };
	struct opts o;
	int in, follow, rc = parse(argc, argv, &o);

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
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (cl_global_init() != 0) {
		fprintf(stderr, "trace-server stream: libcurl would not start\n");
		rc = 1;
	} else {
		rc = o.provider ? cl_provide(&o.srv, o.name, o.categories, in, follow, &g_stop)
				: stream_live(&o, in, follow);
		cl_global_fini();
	}
	if (follow)
		close(in);
	return rc;
}
