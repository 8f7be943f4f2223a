/*
 * Helpers shared by the reliability programs that drive the real server
 * (uploads.c, soak.c, crash.c, security.c), on top of the raw-socket client
 * and server launcher of tests/server_util.h.
 *
 * Each program reports one line per check, "ok - what" or "FAIL - what:
 * why", and ends with "<program>: N passed, M failed"; rel_summary() gives
 * the exit code (0 when nothing failed). The environment names the tools:
 *   TRACE_SERVER  the server binary (default build/rel/trace-server)
 *   GEN_FXT       the FXT generator (default build/rel/gen_fxt)
 *   GEN_XRAY      the XRay generator (default build/reliability/gen_xray)
 *   REL_KEEP=1    keep the work directory (every server's stderr is in
 *                 server.log there)
 * All traffic goes to 127.0.0.1 (or other 127/8 addresses).
 *
 * Header-only, like server_util.h; every function is static inline.
 */
#ifndef TESTS_RELIABILITY_REL_UTIL_H
#define TESTS_RELIABILITY_REL_UTIL_H

#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../server_util.h"

struct rel_env {
	char exe[1100];      /* the server binary, copied into work */
	char gen_fxt[4096];
	char gen_xray[4096];
	char work[1024];     /* a fresh temporary directory */
	char log[1100];      /* work/server.log */
	char static_dir[4096];
};

static struct rel_env R;
static int rel_passed, rel_failed;

/* ---- reporting --------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static inline int rel_check(int ok, const char *fmt, ...)
{
	va_list ap;

	fputs(ok ? "ok - " : "FAIL - ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	if (ok)
		rel_passed++;
	else
		rel_failed++;
	return ok;
}

__attribute__((format(printf, 1, 2))) static inline void rel_note(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* snprintf that must fit. */
__attribute__((format(printf, 3, 4))) static inline void rel_fmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= n) {
		fprintf(stderr, "rel_fmt: %zu bytes are too few for \"%s\"\n", n, fmt);
		abort();
	}
}

/* ---- files and processes ------------------------------------------------------- */

static inline int rel_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void rel_rmrf(const char *path)
{
	nftw(path, rel_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Entries of a directory other than . and ..; -1 when it does not exist. */
static inline int rel_dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* The whole file in a malloc'd buffer (plus a NUL), or NULL. */
static inline uint8_t *rel_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *p = NULL;

	if (f == NULL)
		return NULL;
	if (fstat(fileno(f), &st) == 0 && (p = malloc((size_t)st.st_size + 1)) != NULL) {
		*n = fread(p, 1, (size_t)st.st_size, f);
		p[*n] = '\0';
	}
	fclose(f);
	return p;
}

static inline int rel_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		return -1;
	if (fwrite(p, 1, n, f) != n) {
		fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

static inline int rel_copy_file(const char *from, const char *to, mode_t mode)
{
	size_t n = 0;
	uint8_t *p = rel_read_file(from, &n);
	int rc;

	if (p == NULL)
		return -1;
	rc = rel_write_file(to, p, n);
	free(p);
	return rc == 0 ? chmod(to, mode) : -1;
}

/* Runs argv (NULL-ended) to the end, stdout and stderr to /dev/null unless
 * verbose; returns its exit code, or -1. */
static inline int rel_run(char *const argv[], int verbose)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (!verbose) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Writes a generated FXT archive; 0 or -1. */
static inline int rel_gen_fxt(const char *out, unsigned events, unsigned threads, unsigned seed)
{
	char e[32], t[32], s[32];
	char *argv[] = { R.gen_fxt, "--events", e, "--threads", t, "--seed", s, (char *)(uintptr_t)out, NULL };

	snprintf(e, sizeof(e), "%u", events);
	snprintf(t, sizeof(t), "%u", threads);
	snprintf(s, sizeof(s), "%u", seed);
	return rel_run(argv, 0) == 0 ? 0 : -1;
}

/* Writes a generated XRay log; 0 or -1. */
static inline int rel_gen_xray(const char *out, unsigned version, unsigned records, unsigned threads, unsigned seed)
{
	char v[32], r[32], t[32], s[32];
	char *argv[] = { R.gen_xray, "--version", v, "--records", r, "--threads", t, "--seed", s,
			 (char *)(uintptr_t)out, NULL };

	snprintf(v, sizeof(v), "%u", version);
	snprintf(r, sizeof(r), "%u", records);
	snprintf(t, sizeof(t), "%u", threads);
	snprintf(s, sizeof(s), "%u", seed);
	return rel_run(argv, 0) == 0 ? 0 : -1;
}

/* VmRSS of a process in KiB, or -1. */
static inline long rel_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

/* Open file descriptors of a process, or -1. */
static inline int rel_fd_count(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	return rel_dir_entries(path);
}

/* Lines of the server log holding a sanitizer report (printed), 0 when none. */
static inline int rel_log_reports(const char *log)
{
	char line[2048];
	FILE *f = fopen(log, "r");
	int n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "ERROR: AddressSanitizer") || strstr(line, "runtime error:") ||
		    strstr(line, "ERROR: LeakSanitizer") || strstr(line, "ThreadSanitizer")) {
			if (n++ < 5)
				printf("# server log: %s", line);
		}
	fclose(f);
	return n;
}

/* ---- setup --------------------------------------------------------------------- */

static inline void rel_env_path(char *out, size_t n, const char *var, const char *def)
{
	const char *v = getenv(var);

	snprintf(out, n, "%s", v && *v ? v : def);
}

/* Fills R: a fresh work directory with a copy of the server binary (so a
 * rebuild during the run does not swap it). Exits 1 when that fails. */
static inline void rel_setup(const char *prog)
{
	char tmpl[256], exe[4096];

	snprintf(tmpl, sizeof(tmpl), "%s/rel-%s.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", prog);
	if (mkdtemp(tmpl) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(R.work, sizeof(R.work), "%s", tmpl);
	snprintf(R.log, sizeof(R.log), "%s/server.log", R.work);
	rel_env_path(exe, sizeof(exe), "TRACE_SERVER", "build/rel/trace-server");
	rel_env_path(R.gen_fxt, sizeof(R.gen_fxt), "GEN_FXT", "build/rel/gen_fxt");
	rel_env_path(R.gen_xray, sizeof(R.gen_xray), "GEN_XRAY", "build/reliability/gen_xray");
	rel_env_path(R.static_dir, sizeof(R.static_dir), "STATIC_DIR", "static");
	snprintf(R.exe, sizeof(R.exe), "%s/trace-server", R.work);
	if (rel_copy_file(exe, R.exe, 0755) != 0) {
		fprintf(stderr, "%s: cannot copy the server binary %s (set TRACE_SERVER)\n", prog, exe);
		exit(1);
	}
	signal(SIGPIPE, SIG_IGN);
}

/* Prints the summary line and removes the work directory (unless REL_KEEP=1
 * or something failed). Returns the exit code. */
static inline int rel_summary(const char *prog)
{
	int keep = (getenv("REL_KEEP") && strcmp(getenv("REL_KEEP"), "1") == 0) || rel_failed > 0;

	if (rel_failed)
		printf("# kept %s (server stderr in server.log)\n", R.work);
	else if (!keep)
		rel_rmrf(R.work);
	printf("%s: %d passed, %d failed\n", prog, rel_passed, rel_failed);
	return rel_failed ? 1 : 0;
}

/*
 * Starts `trace-server serve --port 0 --data DATA --static STATIC extra...`
 * (extra NULL-ended, may be NULL), stderr appended to R.log. Returns 0, or -1
 * (reported).
 */
static inline int rel_start(struct su_server *s, const char *data, const char *const *extra)
{
	const char *base[] = { R.exe, "serve", "--port", "0", "--data", data, "--static", R.static_dir };
	char *argv[32];
	size_t n = 0, i;
	int rc;

	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		argv[n++] = strdup(base[i]);
	for (i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = strdup(extra[i]);
	argv[n] = NULL;
	rc = su_server_start(s, argv, R.log, 60);
	if (rc != 0)
		printf("# cannot start %s serve --data %s (see %s)\n", R.exe, data, R.log);
	for (i = 0; i < n; i++)
		free(argv[i]);
	return rc;
}

/* ---- HTTP ------------------------------------------------------------------------ */

/* One request of any length on a new connection ("Connection: close"):
 * sends it all, reads to the close. 0 or -1 (no well-formed reply). */
static inline int rel_req_long(int port, const char *method, const char *path, const char *headers, const void *body,
			       size_t n, struct su_resp *r, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	struct su_buf w = { 0 }, in = { 0 };
	char line[128], tmp[65536];
	size_t off = 0;
	int fd = su_connect(port), rc = -1;
	ssize_t k;

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	su_buf_add(&w, method, strlen(method));
	su_buf_add(&w, " ", 1);
	su_buf_add(&w, path, strlen(path));
	snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
	su_buf_add(&w, line, strlen(line));
	if (headers)
		su_buf_add(&w, headers, strlen(headers));
	snprintf(line, sizeof(line), "Content-Length: %zu\r\n\r\n", n);
	if (body || strcmp(method, "POST") == 0)
		su_buf_add(&w, line, strlen(line));
	else
		su_buf_add(&w, "\r\n", 2);
	if (n)
		su_buf_add(&w, body, n);
	while (off < w.len && (k = send(fd, w.p + off, w.len - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)k;
	while ((k = recv(fd, tmp, sizeof(tmp), 0)) > 0)
		su_buf_add(&in, tmp, (size_t)k);
	if (in.len && su_parse(&in, 1, strcmp(method, "HEAD") == 0, r) == 1)
		rc = 0;
	else
		su_resp_free(r);
	close(fd);
	free(w.p);
	free(in.p);
	return rc;
}

/* One request on a new connection; 0 or -1 (no well-formed reply). */
static inline int rel_req(int port, const char *method, const char *path, const char *headers, const void *body,
			  size_t n, struct su_resp *r, int timeout_ms)
{
	struct su_req q = { method, path, headers, body, n, 0, 0 };

	if (strlen(path) > 400)
		return rel_req_long(port, method, path, headers, body, n, r, timeout_ms);
	return su_request(port, &q, r, timeout_ms);
}

static inline cJSON *rel_json(const struct su_resp *r)
{
	return r->body ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
}

static inline const cJSON *rel_get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static inline int64_t rel_int(const cJSON *o, const char *k)
{
	const cJSON *x = rel_get(o, k);

	return cJSON_IsNumber(x) ? (int64_t)x->valuedouble : -1;
}

static inline const char *rel_str(const cJSON *o, const char *k)
{
	const cJSON *x = rel_get(o, k);

	return cJSON_IsString(x) ? x->valuestring : "";
}

/* The first thread track with slices (track_id not null) in a /tracks
 * reply, or -1. */
static inline int64_t rel_first_track(const cJSON *tracks)
{
	const cJSON *p, *t;

	cJSON_ArrayForEach(p, rel_get(tracks, "processes"))
		cJSON_ArrayForEach(t, rel_get(p, "threads"))
			if (cJSON_IsNumber(rel_get(t, "track_id")))
				return (int64_t)rel_get(t, "track_id")->valuedouble;
	return -1;
}

/* Whether the bytes are valid UTF-8 (JSON must be). */
static inline int rel_utf8_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;

	while (p < e) {
		unsigned c = *p, k, i;
		uint32_t v;

		if (c < 0x80) {
			p++;
			continue;
		}
		k = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xc2 && c <= 0xdf ? 1 : 0;
		if (k == 0 || (size_t)(e - p) <= k)
			return 0;
		v = c & (0x3f >> k);
		for (i = 1; i <= k; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			v = v << 6 | (p[i] & 0x3f);
		}
		if ((k == 2 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (k == 3 && (v < 0x10000 || v > 0x10ffff)))
			return 0;
		p += k + 1;
	}
	return 1;
}

/*
 * Whether r is an error reply of the API: the status (any 4xx when status
 * is 0), a JSON body {"error": {"code", "message"}} with a non-empty message,
 * and the code when code is not NULL. why (n bytes) says what is wrong.
 */
static inline int rel_is_error(const struct su_resp *r, int status, const char *code, char *why, size_t n)
{
	cJSON *j = rel_json(r);
	const cJSON *e = rel_get(j, "error");
	int ok = j != NULL && cJSON_IsString(rel_get(e, "code")) && cJSON_IsString(rel_get(e, "message")) &&
		 rel_str(e, "message")[0] != '\0' && (code == NULL || strcmp(rel_str(e, "code"), code) == 0) &&
		 (status ? r->status == status : r->status >= 400 && r->status < 500);

	if (!ok)
		snprintf(why, n, "got %d %.200s", r->status, r->body ? r->body : "(no body)");
	cJSON_Delete(j);
	return ok;
}

/* POST /api/traces?QUERY with the bytes; auth is a header line or NULL.
 * Returns the id from the reply (or -1); r holds the reply. */
static inline int64_t rel_upload(int port, const char *query, const void *p, size_t n, const char *auth,
				 struct su_resp *r, int timeout_ms)
{
	char path[512], hdr[512];
	cJSON *j;
	int64_t id;

	rel_fmt(path, sizeof(path), "/api/traces%s", query ? query : "");
	rel_fmt(hdr, sizeof(hdr), "Content-Type: application/octet-stream\r\n%s", auth ? auth : "");
	if (rel_req(port, "POST", path, hdr, p, n, r, timeout_ms) != 0)
		return -1;
	j = rel_json(r);
	id = rel_int(j, "id");
	cJSON_Delete(j);
	return id;
}

/* GET /api/traces/{id}: the trace object, or NULL (404 or no reply). */
static inline cJSON *rel_trace(int port, int64_t id, const char *auth)
{
	char path[64];
	struct su_resp r;
	cJSON *j = NULL;

	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	if (rel_req(port, "GET", path, auth, NULL, 0, &r, 30000) == 0 && r.status == 200)
		j = rel_json(&r);
	su_resp_free(&r);
	return j;
}

/* Waits up to timeout s for a trace to leave queued/ingesting; copies its
 * status ("gone" when it is not there). 0 when it ended, -1 on timeout. */
static inline int rel_wait_done(int port, int64_t id, double timeout, char *status, size_t n)
{
	double deadline = su_now() + timeout;

	for (;;) {
		cJSON *j = rel_trace(port, id, NULL);
		const char *st = j ? rel_str(j, "status") : "gone";

		snprintf(status, n, "%s", st);
		cJSON_Delete(j);
		if (strcmp(status, "queued") != 0 && strcmp(status, "ingesting") != 0)
			return 0;
		if (su_now() > deadline)
			return -1;
		su_sleep_ms(20);
	}
}

#endif /* TESTS_RELIABILITY_REL_UTIL_H */
