/*
 * The HTTP glue: libmicrohttpd with its own thread pool, one struct req per
 * request, the token check, and start and stop. What a request asks for is
 * answered elsewhere: routes.c (the API), upload.c (uploads), static.c (the
 * viewer's files), through reply.c.
 *
 * Each request gets a struct req on its first call; GET requests are
 * answered on the second call (queueing on the first makes MHD close the
 * connection, see PERFORMANCE.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "server.h"
#include "server_internal.h"
#include "../ingest/util.h"

/* SIGINT and SIGTERM write a byte here; the main thread waits reading it.
 * A flag checked before pause() would miss a signal that came between the
 * check and the call, and one another thread took. */
static int g_stop_pipe[2] = { -1, -1 };

/* Compares in time independent of where the strings differ. */
static int token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i;
	unsigned char d = (unsigned char)(la != lb);

	for (i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0 && lb > 0;
}

static int authorized(struct server *s, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	if (s->token[0] == '\0')
		return 1;
	return h && strncmp(h, "Bearer ", 7) == 0 && token_equal(s->token, h + 7);
}

static enum MHD_Result send_unauthorized(struct MHD_Connection *c, struct req *r)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *body;

	cJSON_AddItemToObject(root, "error", e);
	cJSON_AddStringToObject(e, "code", "unauthorized");
	cJSON_AddStringToObject(e, "message", "this server needs a token: send 'Authorization: Bearer <token>'");
	body = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (body == NULL || (resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)) == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
	r->status = 401;
	r->bytes = strlen(body);
	ret = MHD_queue_response(c, 401, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void small_body(struct req *r, const char *data, size_t n)
{
	char *p;

	if (r->body_too_big || r->body_len + n > MAX_SMALL_BODY) {
		r->body_too_big = 1;
		return;
	}
	if ((p = realloc(r->body, r->body_len + n + 1)) == NULL) {
		r->body_too_big = 1;
		return;
	}
	memcpy(p + r->body_len, data, n);
	r->body = p;
	r->body_len += n;
	r->body[r->body_len] = '\0';
}

static struct req *req_new(struct server *s, const char *method, const char *url)
{
	struct req *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	snprintf(r->method, sizeof(r->method), "%s", method);
	snprintf(r->path, sizeof(r->path), "%s", url);
	r->srv = s;
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct req *r = *con_cls;
	int api = strncmp(url, "/api/", 5) == 0 || strcmp(url, "/api") == 0;
	enum MHD_Result ret;

	(void)version;
	if (r == NULL) {
		if ((r = req_new(s, method, url)) == NULL)
			return MHD_NO;
		*con_cls = r;
		if (api && !authorized(s, c)) {
			r->route = srv_api_route(url, method); /* counted under the route it asked for */
			return send_unauthorized(c, r);
		}
		if (api && srv_api_stream(s, c, r, url, method, &ret))
			return ret;
		return MHD_YES;
	}
	if (r->kind == RQ_UPLOAD) {
		size_t n = *upload_size;

		*upload_size = 0;
		return srv_upload_data(s, c, r, upload_data, n);
	}
	if (r->status)
		return MHD_YES;
	if (*upload_size) {
		small_body(r, upload_data, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (api)
		return srv_api(s, c, r, url, method);
	if (strcmp(url, "/healthz") == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)) {
		r->route = "/healthz"; /* no token: a load balancer asks it */
		return srv_h_healthz(s, c, r);
	}
	if (strcmp(url, "/metrics") == 0 && strcmp(method, "GET") == 0) {
		r->route = "/metrics";
		return authorized(s, c) ? srv_h_metrics(s, c, r) : send_unauthorized(c, r);
	}
	if (strcmp(url, "/healthz") == 0 || strcmp(url, "/metrics") == 0) {
		r->route = strcmp(url, "/healthz") == 0 ? "/healthz" : "/metrics";
		return srv_method_not_allowed(c, r, method);
	}
	r->route = "static";
	return srv_static(s, c, r, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;
	struct timespec t;
	double ms;
	int upload;

	(void)cls;
	(void)c;
	if (r == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t);
	upload = r->up != NULL;
	srv_upload_cleanup(r);
	ms = (double)(t.tv_sec - r->t0.tv_sec) * 1e3 + (double)(t.tv_nsec - r->t0.tv_nsec) / 1e6;
	fprintf(stderr, "%s %s %u %zu %.1fms%s\n", r->method, r->path, r->status, r->bytes, ms,
		toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
	srv_metrics_request(r->srv->metrics, r->route, r->method, r->status, ms / 1e3);
	free(r->body);
	free(r);
	*con_cls = NULL;
	/* an upload's buffers were freed in this thread's arena, whose top the
	 * trim threshold keeps for replies (main.c): a big upload's must not
	 * stay held once it is in; and the next heap_release (an ingest's end,
	 * a deletion) trims what this thread's replies left (util.h) */
	if (upload)
		heap_release_own();
	heap_probe();
}

/* ---- start and stop ---------------------------------------------------- */

static void on_signal(int sig)
{
	int saved = errno;
	char b = (char)sig;

	(void)!write(g_stop_pipe[1], &b, 1); /* full: a stop is already on its way */
	errno = saved;
}

/* Waits for SIGINT or SIGTERM. */
static void wait_for_stop(void)
{
	char b;

	while (read(g_stop_pipe[0], &b, 1) < 0 && errno == EINTR)
		;
}

static void conn_resume(void *conn)
{
	MHD_resume_connection(conn);
}

static void conn_suspend(void *conn)
{
	MHD_suspend_connection(conn);
}

static int read_token(const char *path, char *out, size_t n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t len;

	if (f == NULL) {
		snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
		return -1;
	}
	len = fread(out, 1, n - 1, f);
	fclose(f);
	out[len] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	if (strlen(out) < 16) {
		snprintf(err, errlen, "the token in %s is shorter than 16 characters", path);
		return -1;
	}
	return 0;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static int parse_bind(const char *host, unsigned port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (strcmp(host, "localhost") == 0)
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		return 0;
	}
	return -1;
}

/* The viewer's files: --static, else ./static, else next to the binary. */
static void find_static(struct server *s)
{
	char exe[4096], cand[4200];
	ssize_t n;
	char *slash;

	if (s->o->static_dir) {
		snprintf(s->static_dir, sizeof(s->static_dir), "%s", s->o->static_dir);
		return;
	}
	snprintf(s->static_dir, sizeof(s->static_dir), "static");
	if (access("static/index.html", R_OK) == 0)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) != NULL)
		*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/../share/trace-server/static", exe);
	if (access(cand, R_OK) == 0)
		snprintf(s->static_dir, sizeof(s->static_dir), "%s", cand);
}

static void add_demo(struct server *s)
{
	char spool[4096], dir[2048], err[256], buf[65536];
	struct stat st;
	FILE *in, *out;
	size_t n;
	int fd;

	struct cat_new nw = { 0 };

	if (s->o->demo == NULL || cat_count(s->cat) > 0 || (in = fopen(s->o->demo, "rb")) == NULL)
		return;
	cat_spool_dir(s->cat, dir, sizeof(dir));
	snprintf(spool, sizeof(spool), "%s/demo-XXXXXX", dir);
	if ((fd = mkstemp(spool)) < 0 || (out = fdopen(fd, "wb")) == NULL) {
		fclose(in);
		return;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	nw.name = "demo";
	nw.spool = spool;
	if (fclose(out) != 0 || stat(spool, &st) != 0 || (nw.size = (uint64_t)st.st_size, 0) ||
	    cat_add(s->cat, &nw, err, sizeof(err)) < 0) {
		fprintf(stderr, "trace-server: the demo trace was not added\n");
		unlink(spool);
	}
}

static struct MHD_Daemon *start_daemon(struct server *s, const struct sockaddr_storage *ss)
{
	/* each thread polls its own connections, so a long request (an
	 * overview of 90M slices takes seconds) holds up the others of its
	 * thread: more threads than cores keep the rest of a page answering */
	unsigned threads = s->o->threads ? s->o->threads : 4 * (unsigned)sysconf(_SC_NPROCESSORS_ONLN);

	if (threads < 2)
		threads = 2;
	if (!s->o->threads && threads < 8)
		threads = 8;
	/* poll, not epoll: with epoll MHD 0.9.75 can miss a client that closes
	 * mid-upload until the connection timeout (tests/server/test_server.c) */
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
					MHD_USE_ERROR_LOG | (ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, ss, MHD_OPTION_THREAD_POOL_SIZE,
				threads, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_CONNECTION_LIMIT, 1000u,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, 256u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)128 * 1024, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
}

int srv_run(const struct srv_opts *o)
{
	static struct server s;
	struct cat_opts co = { 0 };
	const struct cap_hooks cap_hooks = { conn_suspend, conn_resume, srv_close_upgraded };
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	char err[512];

	memset(&s, 0, sizeof(s));
	s.o = o;
	if (parse_bind(o->bind, o->port, &ss) != 0) {
		fprintf(stderr, "trace-server: --bind %s is not an IPv4 or IPv6 address\n", o->bind);
		return 2;
	}
	if (o->token_file && read_token(o->token_file, s.token, sizeof(s.token), err, sizeof(err)) != 0) {
		fprintf(stderr, "trace-server: %s\n", err);
		return 2;
	}
	if (!is_loopback(&ss) && s.token[0] == '\0' && !o->insecure_public) {
		fprintf(stderr, "trace-server: refusing to listen on %s without --token-file; anyone who can reach it "
				"could read and delete every trace (use --insecure-public to do it anyway)\n",
			o->bind);
		return 2;
	}
	/* the reader blocks; the handler's writes never do */
	if (g_stop_pipe[0] < 0 &&
	    (pipe2(g_stop_pipe, O_CLOEXEC) != 0 || fcntl(g_stop_pipe[1], F_SETFL, O_NONBLOCK) != 0)) {
		fprintf(stderr, "trace-server: cannot make the pipe that signals stop the server on: %s\n",
			strerror(errno));
		return 1;
	}
	find_static(&s);
	co.keep_failed = o->keep_failed;
	co.retain_days = o->retain_days;
	co.retain_bytes = o->retain_bytes;
	co.preview_min = o->preview_min;
	co.live_pause_ms = o->live_pause_ms;
	co.ingest_exe = "/proc/self/exe"; /* this program: it answers "ingest-child" (main.c) */
	co.catalog = o->catalog;
	co.store_url = o->store_url;
	co.cache_dir = o->cache_dir;
	co.cache_max = o->cache_max;
	co.store_part_size = o->store_part_size;
	co.db_gone = srv_trace_db_forget;
	co.resume = conn_resume;
	co.suspend = conn_suspend;
	if ((s.cat = cat_open(o->data_dir, &co, err, sizeof(err))) == NULL) {
		fprintf(stderr, "trace-server: %s\n", err);
		return 1;
	}
	if ((s.cap = cap_open(s.cat, o->data_dir, &cap_hooks, err, sizeof(err))) == NULL) {
		fprintf(stderr, "trace-server: %s\n", err);
		cat_close(s.cat);
		return 1;
	}
	if (rc_init(&s.cache, (size_t)64 << 20) != 0)
		fprintf(stderr, "trace-server: no memory for the reply cache; running without it\n");
	if ((s.metrics = srv_metrics_new()) == NULL)
		fprintf(stderr, "trace-server: no memory for metrics; /metrics counts no requests\n");
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (cat_start(s.cat) != 0 || (s.d = start_daemon(&s, &ss)) == NULL) {
		fprintf(stderr, "trace-server: cannot listen on %s port %u: %s\n", o->bind, o->port, strerror(errno));
		cat_close(s.cat);
		return 1;
	}
	add_demo(&s);
	info = MHD_get_daemon_info(s.d, MHD_DAEMON_INFO_BIND_PORT);
	printf("trace-server: listening on http://%s%s%s:%u/ (data in %s)\n", ss.ss_family == AF_INET6 ? "[" : "",
	       o->bind, ss.ss_family == AF_INET6 ? "]" : "", info ? info->port : o->port, o->data_dir);
	fflush(stdout);
	wait_for_stop();
	fprintf(stderr, "trace-server: stopping\n");
	cap_close(s.cap); /* captures end, their traces kept; providers disconnected */
	cat_stop(s.cat);
	MHD_stop_daemon(s.d);
	cap_free(s.cap);
	rc_fini(&s.cache);
	srv_metrics_free(s.metrics);
	cat_close(s.cat);
	return 0;
}
