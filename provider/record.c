/*
 * trace-server record: runs a command that links libtrace-provider and
 * leaves its trace in the server's library.
 *
 *   trace-server record [--server URL] [--mode streaming|circular|oneshot]
 *                       [--categories a,b,...] [--buffer-mb N] [--name NAME]
 *                       [--token-file F] -- command [args...]
 *
 * It plays the controller's part over the server's capture API (issue 21,
 * docs/API.md): InitializeTracing (POST /api/captures with a TraceConfig),
 * StartTracing (POST /api/captures/{id}/start), then runs the command with
 * TRACE_SERVER, TRACE_TOKEN, TRACE_PROVIDER_NAME and TRACE_START_TIMEOUT_MS
 * set, so that the library connects when it loads and waits (up to 3 s) to
 * be started before main() runs. When the command exits (its buffers sent
 * by the library's exit handler), StopTracing (POST .../stop) and terminate
 * (DELETE /api/captures/{id}) end the capture and its trace becomes ready;
 * record prints where it is and exits with the command's status.
 *
 * The server URL comes from --server, else TRACE_SERVER_URL (as for
 * `trace-server stream`), else TRACE_SERVER when it is a URL, else
 * http://127.0.0.1:8080; the token from --token-file, else TRACE_TOKEN.
 * Replies are read with a bounded reader: at most 1 MiB, Content-Length
 * or chunked.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "provider_internal.h"

int record_main(int argc, char **argv);

#define REPLY_MAX (1u << 20)

struct rec_opts {
	const char *server;
	const char *mode;
	const char *categories;
	const char *name;
	unsigned buffer_mb;
	char token[1024];
	char host[256];
	unsigned port;
	char **cmd;
	char neterr[160];   /* why the last request got no HTTP reply */
};

static int rec_usage(FILE *f, int rc)
{
	fputs("usage: trace-server record [--server URL] [--mode streaming|circular|oneshot]\n"
	      "                           [--categories a,b,...] [--buffer-mb N] [--name NAME]\n"
	      "                           [--token-file F] -- command [args...]\n",
	      f);
	return rc;
}

/* ---- A small HTTP client ------------------------------------------------------ */

static int rec_connect(struct rec_opts *o)
{
	struct addrinfo hints = {0}, *res, *ai;
	char port[16];
	int fd = -1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%u", o->port);
	if (getaddrinfo(o->host, port, &hints, &res) != 0) {
		snprintf(o->neterr, sizeof(o->neterr), "cannot resolve the host name");
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		if ((fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol)) < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		snprintf(o->neterr, sizeof(o->neterr), "%s", strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Decodes a chunked body in place; returns its length, or -1. */
static long rec_unchunk(char *b, size_t n)
{
	size_t in = 0, out = 0;

	for (;;) {
		char *end;
		unsigned long len = strtoul(b + in, &end, 16);
		char *eol = memchr(b + in, '\n', n - in);

		if (end == b + in || eol == NULL)
			return -1;
		in = (size_t)(eol - b) + 1;
		if (len == 0)
			return (long)out;
		if (len > n - in)
			return -1;
		memmove(b + out, b + in, len);
		out += len;
		in += len;
		if (in < n && b[in] == '\r')
			in++;
		if (in < n && b[in] == '\n')
			in++;
	}
}

/*
 * One request; the reply's JSON body parsed into *json (NULL when it is
 * not JSON). Returns the HTTP status, or -1 when the server could not be
 * reached or the reply is not HTTP.
 */
static int rec_http(struct rec_opts *o, const char *method, const char *path, const char *body, cJSON **json)
{
	char head[2048], *buf = NULL, *p;
	size_t n = 0, blen = body ? strlen(body) : 0;
	int fd, status = -1, hl;
	long len;

	*json = NULL;
	if ((fd = rec_connect(o)) < 0)
		return -1;
	hl = snprintf(head, sizeof(head),
		      "%s %s HTTP/1.1\r\nHost: %s:%u\r\nConnection: close\r\nContent-Type: application/json\r\n"
		      "Content-Length: %zu\r\n%s%s%s\r\n",
		      method, path, o->host, o->port, blen, o->token[0] ? "Authorization: Bearer " : "", o->token,
		      o->token[0] ? "\r\n" : "");
	snprintf(o->neterr, sizeof(o->neterr), "the connection failed while sending");
	if (hl <= 0 || (size_t)hl >= sizeof(head) || send(fd, head, (size_t)hl, MSG_NOSIGNAL) != hl ||
	    (blen && send(fd, body, blen, MSG_NOSIGNAL) != (ssize_t)blen))
		goto out_close;
	snprintf(o->neterr, sizeof(o->neterr), "the reply was not HTTP (or the connection closed first)");
	if ((buf = malloc(REPLY_MAX + 1)) == NULL)
		goto out_close;
	for (;;) {
		ssize_t k = recv(fd, buf + n, REPLY_MAX - n, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == REPLY_MAX)
			break;
	}
	buf[n] = '\0';
	if (n < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || (p = strstr(buf, "\r\n\r\n")) == NULL)
		goto out_free;
	status = atoi(buf + 9);
	*p = '\0';
	p += 4;
	len = (long)(buf + n - p);
	if (strcasestr(buf, "\r\ntransfer-encoding: chunked"))
		len = rec_unchunk(p, (size_t)len);
	if (len > 0) {
		p[len] = '\0';
		*json = cJSON_Parse(p);
	}
out_free:
	free(buf);
out_close:
	close(fd);
	return status;
}

/*
 * What failed, for a request that answered st (rec_http's status) and j:
 * "no answer from URL (why)", or "HTTP st code: message" with the server's
 * error (docs/API.md: {"error": {"code", "message"}}), or "HTTP st".
 * Written into buf (cap bytes), which it returns.
 */
static const char *rec_why(const struct rec_opts *o, int st, const cJSON *j, char *buf, size_t cap)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");

	if (st < 0)
		snprintf(buf, cap, "no answer from %s (%s)", o->server, o->neterr);
	else if (cJSON_IsString(code) && cJSON_IsString(msg))
		snprintf(buf, cap, "HTTP %d %s: %s", st, code->valuestring, msg->valuestring);
	else
		snprintf(buf, cap, "HTTP %d", st);
	return buf;
}

/* Sends one request of the capture's lifecycle; says on stderr what failed
 * ("doing" is what the request was for). The reply's status; *j as for
 * rec_http. */
static int rec_step(struct rec_opts *o, const char *method, const char *path, const char *body, const char *doing,
		    int64_t id, cJSON **j)
{
	char why[512];
	int st = rec_http(o, method, path, body, j);

	if (st < 200 || st > 299)
		fprintf(stderr, "trace-server record: %s capture %lld: %s\n", doing, (long long)id,
			rec_why(o, st, *j, why, sizeof(why)));
	return st;
}

/* ---- The command ------------------------------------------------------------------ */

static int rec_parse(int argc, char **argv, struct rec_opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	/* as `trace-server stream` does; TRACE_SERVER too, the library's name for it */
	o->server = "http://127.0.0.1:8080";
	if (getenv("TRACE_SERVER_URL") && getenv("TRACE_SERVER_URL")[0])
		o->server = getenv("TRACE_SERVER_URL");
	else if (getenv("TRACE_SERVER") && strncmp(getenv("TRACE_SERVER"), "http://", 7) == 0)
		o->server = getenv("TRACE_SERVER");
	o->mode = "streaming";
	o->categories = "";
	o->buffer_mb = 4;
	snprintf(o->token, sizeof(o->token), "%s", getenv("TRACE_TOKEN") ? getenv("TRACE_TOKEN") : "");
	for (i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (v == NULL)
			return -1;
		if (strcmp(a, "--server") == 0) {
			o->server = v;
		} else if (strcmp(a, "--mode") == 0) {
			if (strcmp(v, "streaming") && strcmp(v, "circular") && strcmp(v, "oneshot"))
				return -1;
			o->mode = v;
		} else if (strcmp(a, "--categories") == 0) {
			o->categories = v;
		} else if (strcmp(a, "--name") == 0) {
			o->name = v;
		} else if (strcmp(a, "--buffer-mb") == 0) {
			char *end;
			unsigned long mb = strtoul(v, &end, 10);

			if (*end || mb < 1 || mb > 64)
				return -1;
			o->buffer_mb = (unsigned)mb;
		} else if (strcmp(a, "--token-file") == 0) {
			FILE *f = fopen(v, "r");

			if (f == NULL || fgets(o->token, sizeof(o->token), f) == NULL) {
				fprintf(stderr, "trace-server record: cannot read %s\n", v);
				if (f)
					fclose(f);
				return -1;
			}
			fclose(f);
			o->token[strcspn(o->token, "\r\n")] = '\0';
		} else {
			return -1;
		}
		i++;
	}
	if (i >= argc)
		return -1;
	o->cmd = argv + i;
	if (o->name == NULL) {
		const char *slash = strrchr(o->cmd[0], '/');

		o->name = slash ? slash + 1 : o->cmd[0];
	}
	if (wire_parse_url(o->server, o->host, sizeof(o->host), &o->port) != 0) {
		fprintf(stderr, "trace-server record: --server must be http://host[:port], not \"%s\"\n", o->server);
		return -1;
	}
	return 0;
}

/* The TraceConfig of docs/API.md as JSON; the caller frees it. */
static char *rec_config(const struct rec_opts *o)
{
	cJSON *cfg = cJSON_CreateObject(), *cats = cJSON_AddArrayToObject(cfg, "categories");
	const char *p = o->categories;
	char *s;

	while (*p) {
		size_t n = strcspn(p, ",");
		char one[256];

		if (n > 0 && n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = '\0';
			cJSON_AddItemToArray(cats, cJSON_CreateString(one));
		}
		p += n;
		if (*p == ',')
			p++;
	}
	cJSON_AddStringToObject(cfg, "name", o->name);
	cJSON_AddStringToObject(cfg, "buffering_mode", o->mode);
	cJSON_AddNumberToObject(cfg, "buffer_size_megabytes_hint", o->buffer_mb);
	cJSON_AddNumberToObject(cfg, "start_timeout_milliseconds", 3000);
	s = cJSON_PrintUnformatted(cfg);
	cJSON_Delete(cfg);
	return s;
}

/* Runs the command with the provider's environment; its exit status for a
 * shell (128 + signal when killed), or 127 when it could not be run. */
static int rec_run(const struct rec_opts *o)
{
	struct sigaction ign = {0}, old_int, old_quit;
	int status = 0;
	pid_t pid;

	ign.sa_handler = SIG_IGN; /* ^C goes to the command; we go on to stop the capture */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	if ((pid = fork()) == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		setenv("TRACE_SERVER", o->server, 1);
		setenv("TRACE_PROVIDER_NAME", o->name, 1);
		setenv("TRACE_START_TIMEOUT_MS", "3000", 1);
		if (o->token[0])
			setenv("TRACE_TOKEN", o->token, 1);
		execvp(o->cmd[0], o->cmd);
		fprintf(stderr, "trace-server record: %s: %s\n", o->cmd[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		status = -1;
	else
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (pid < 0)
		return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int64_t rec_json_id(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	if (cJSON_IsObject(v)) /* {"trace": {"id": ...}} */
		v = cJSON_GetObjectItemCaseSensitive(v, "id");
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

int record_main(int argc, char **argv)
{
	struct rec_opts o;
	char path[128], why[512], *body;
	cJSON *j = NULL;
	int64_t id, trace;
	int st, rc;

	if (rec_parse(argc, argv, &o) != 0)
		return rec_usage(stderr, 2);
	if ((body = rec_config(&o)) == NULL)
		return 1;
	st = rec_http(&o, "POST", "/api/captures", body, &j);
	free(body);
	if (st < 200 || st > 299 || (id = rec_json_id(j, "id")) < 0) {
		fprintf(stderr, "trace-server record: could not make a capture (%s); running %s untraced\n",
			rec_why(&o, st, j, why, sizeof(why)), o.cmd[0]);
		cJSON_Delete(j);
		return rec_run(&(struct rec_opts){.server = "", .name = o.name, .cmd = o.cmd});
	}
	trace = rec_json_id(j, "trace_id");
	if (trace < 0)
		trace = rec_json_id(j, "trace");
	cJSON_Delete(j);
	snprintf(path, sizeof(path), "/api/captures/%lld/start", (long long)id);
	rec_step(&o, "POST", path, "{}", "starting", id, &j);
	if (trace < 0)
		trace = rec_json_id(j, "trace_id");
	cJSON_Delete(j);
	rc = rec_run(&o);
	snprintf(path, sizeof(path), "/api/captures/%lld/stop", (long long)id);
	rec_step(&o, "POST", path, "{\"write_results\": true}", "stopping", id, &j);
	if (trace < 0)
		trace = rec_json_id(j, "trace_id");
	cJSON_Delete(j);
	snprintf(path, sizeof(path), "/api/captures/%lld", (long long)id);
	rec_step(&o, "DELETE", path, NULL, "ending", id, &j);
	if (trace < 0)
		trace = rec_json_id(j, "trace_id");
	cJSON_Delete(j);
	if (trace >= 0)
		fprintf(stderr, "trace-server record: the trace of %s is %s/?trace=%lld\n", o.name, o.server,
			(long long)trace);
	else
		fprintf(stderr, "trace-server record: the trace of %s is in capture %lld (%s/api/captures/%lld)\n",
			o.name, (long long)id, o.server, (long long)id);
	return rc;
}
