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
 * Its requests go through client/http.c (libcurl; replies read with cJSON).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "client.h"
#include "client_internal.h"

struct rec_opts {
	const char *server;
	const char *mode;
	const char *categories;
	const char *name;
	unsigned buffer_mb;
	struct cl_server srv; /* from server; its token from --token-file or TRACE_TOKEN */
	char **cmd;
};

static int rec_usage(FILE *f, int rc)
{
	fputs("usage: trace-server record [--server URL] [--mode streaming|circular|oneshot]\n"
	      "                           [--categories a,b,...] [--buffer-mb N] [--name NAME]\n"
	      "                           [--token-file F] -- command [args...]\n",
	      f);
	return rc;
}

/*
 * What failed, for the reply r: "no answer from URL (why)", or "HTTP st
 * code: message" with the server's error (docs/API.md: {"error": {"code",
 * "message"}}), or "HTTP st". Written into buf (cap bytes), which it
 * returns.
 */
static const char *rec_why(const struct rec_opts *o, const struct cl_reply *r, char *buf, size_t cap)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(r->json, "error");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");

	if (r->status < 0)
		snprintf(buf, cap, "no answer from %s (%s)", o->server, r->why);
	else if (cJSON_IsString(code) && cJSON_IsString(msg))
		snprintf(buf, cap, "HTTP %d %s: %s", r->status, code->valuestring, msg->valuestring);
	else
		snprintf(buf, cap, "HTTP %d", r->status);
	return buf;
}

/* Sends one request of the capture's lifecycle; says on stderr what failed
 * ("doing" is what the request was for). The reply in *r (the caller
 * finishes it); its status. */
static int rec_step(const struct rec_opts *o, const char *method, const char *path, const char *body,
		    const char *doing, int64_t id, struct cl_reply *r)
{
	char why[512];
	int st = cl_request(&o->srv, method, path, body, r);

	if (st < 200 || st > 299)
		fprintf(stderr, "trace-server record: %s capture %lld: %s\n", doing, (long long)id,
			rec_why(o, r, why, sizeof(why)));
	return st;
}

/* ---- The command ------------------------------------------------------------------ */

static int rec_parse(int argc, char **argv, struct rec_opts *o)
{
	char err[512];
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
	snprintf(o->srv.token, sizeof(o->srv.token), "%s", getenv("TRACE_TOKEN") ? getenv("TRACE_TOKEN") : "");
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
			if (cl_read_token(v, &o->srv, err, sizeof(err)) != 0) {
				fprintf(stderr, "trace-server record: %s\n", err);
				return -1;
			}
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
	/* http:// as the provider library, which is given the same URL, wants */
	if (strncmp(o->server, "http://", 7) != 0 || cl_parse_url(o->server, &o->srv, err, sizeof(err)) != 0) {
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
		if (o->srv.token[0])
			setenv("TRACE_TOKEN", o->srv.token, 1);
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

int cl_record_main(int argc, char **argv)
{
	struct rec_opts o;
	struct cl_reply r;
	char path[128], why[512], *body;
	int64_t id, trace;
	int st, rc;

	if (rec_parse(argc, argv, &o) != 0)
		return rec_usage(stderr, 2);
	if ((body = rec_config(&o)) == NULL || cl_global_init() != 0) {
		free(body);
		return 1;
	}
	st = cl_request(&o.srv, "POST", "/api/captures", body, &r);
	free(body);
	if (st < 200 || st > 299 || (id = rec_json_id(r.json, "id")) < 0) {
		fprintf(stderr, "trace-server record: could not make a capture (%s); running %s untraced\n",
			rec_why(&o, &r, why, sizeof(why)), o.cmd[0]);
		cl_reply_fini(&r);
		cl_global_fini();
		return rec_run(&(struct rec_opts){.server = "", .name = o.name, .cmd = o.cmd});
	}
	trace = rec_json_id(r.json, "trace_id");
	if (trace < 0)
		trace = rec_json_id(r.json, "trace");
	cl_reply_fini(&r);
	snprintf(path, sizeof(path), "/api/captures/%lld/start", (long long)id);
	rec_step(&o, "POST", path, "{}", "starting", id, &r);
	if (trace < 0)
		trace = rec_json_id(r.json, "trace_id");
	cl_reply_fini(&r);
	rc = rec_run(&o);
	snprintf(path, sizeof(path), "/api/captures/%lld/stop", (long long)id);
	rec_step(&o, "POST", path, "{\"write_results\": true}", "stopping", id, &r);
	if (trace < 0)
		trace = rec_json_id(r.json, "trace_id");
	cl_reply_fini(&r);
	snprintf(path, sizeof(path), "/api/captures/%lld", (long long)id);
	rec_step(&o, "DELETE", path, NULL, "ending", id, &r);
	if (trace < 0)
		trace = rec_json_id(r.json, "trace_id");
	cl_reply_fini(&r);
	cl_global_fini();
	if (trace >= 0)
		fprintf(stderr, "trace-server record: the trace of %s is %s/?trace=%lld\n", o.name, o.server,
			(long long)trace);
	else
		fprintf(stderr, "trace-server record: the trace of %s is in capture %lld (%s/api/captures/%lld)\n",
			o.name, (long long)id, o.server, (long long)id);
	return rc;
}
