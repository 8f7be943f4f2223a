/*
 * security: what a hostile client must not be able to do.
 *
 *   security
 *
 * SQL (POST /api/traces/{id}/query): statements that write, ATTACH (also
 * '/etc/passwd' and file: URIs), load extensions, PRAGMA statements and
 * pragma table-valued functions, functions that touch files (readfile,
 * writefile, fsdir, edit), fts3_tokenizer (which hands out and takes code
 * pointers), VACUUM INTO, transactions and virtual tables are all refused
 * with a 4xx JSON error; values of hundreds of MB (memory one request can
 * make the server allocate: randomblob, zeroblob, printf widths, replace)
 * are refused or NULL; afterwards the trace's database and the catalog are
 * byte for byte what they were, and no file was created.
 *
 * Static files (with a copy of static/ holding a symlink to /etc/passwd
 * and a symlinked directory to /etc): no path outside the directory is
 * reachable through "..", percent-encoded dots and slashes (also double
 * encoded and overlong UTF-8), backslashes, NUL, absolute paths or
 * symlinks; every such request is 404 (or 400; "/index.html%00.png" may
 * serve index.html, as MHD ends the path at the decoded NUL) and never
 * shows /etc/passwd or a marker file placed next to the static directory.
 *
 * Token (--token-file): every /api route and method (list, trace, each
 * query endpoint, file, export, query, symbols, upload, delete, unknown
 * routes) answers 401 with WWW-Authenticate without the token, with a
 * wrong token of the same length, with the token in the query string,
 * with a lower-case scheme or a doubled space; an upload refused so stores
 * nothing and a delete refused so deletes nothing; with the token the same
 * requests are not 401.
 *
 * Bind: without a token the server refuses 0.0.0.0, :: and a non-loopback
 * address with exit code 2 and a message naming --token-file and
 * --insecure-public; it accepts 127.0.0.2, ::1 and localhost; with
 * --insecure-public (or a token) it starts on 0.0.0.0 and is stopped at
 * once (no traffic is sent to a non-loopback address).
 *
 * Environment: see rel_util.h. Ends with "security: N passed, M failed".
 */
#include <sys/stat.h>

#include "rel_util.h"

static struct su_server S;
static char DATA[1200];
static int64_t ID;
static uint8_t *SMALL;
static size_t SMALL_LEN;

/* ---- SQL ---------------------------------------------------------------------- */

static int sql(int port, int64_t id, const char *stmt, struct su_resp *r)
{
	char path[96];

	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/query", id);
	return rel_req(port, "POST", path, "Content-Type: text/plain\r\n", stmt, strlen(stmt), r, 60000);
}

/* A digest of a file's bytes (FNV-1a), or 0 when it cannot be read. */
static uint64_t file_digest(const char *path)
{
	size_t n = 0, i;
	uint8_t *p = rel_read_file(path, &n);
	uint64_t h = UINT64_C(1469598103934665603);

	if (p == NULL)
		return 0;
	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	free(p);
	return h;
}

static void group_sql(void)
{
	static const char *const refused[] = {
		/* writes */
		"INSERT INTO meta VALUES ('pwned', 1)",
		"UPDATE strings SET str = 'pwned'",
		"DELETE FROM slices",
		"REPLACE INTO meta VALUES ('pwned', 1)",
		"DROP VIEW slice_view",
		"ALTER TABLE slices RENAME TO s2",
		"CREATE INDEX i ON slices(dur)",
		"CREATE TEMP TRIGGER t AFTER INSERT ON meta BEGIN SELECT 1; END",
		"WITH x(a) AS (SELECT 1) INSERT INTO meta SELECT 'pwned', a FROM x",
		"VACUUM",
		"VACUUM INTO '/tmp/ts-sec-vacuum.db'",
		"REINDEX",
		"ANALYZE",
		"BEGIN",
		"BEGIN IMMEDIATE",
		"SAVEPOINT s",
		"RELEASE s",
		"COMMIT",
		/* other files */
		"ATTACH '/etc/passwd' AS p",
		"ATTACH DATABASE 'file:/etc/passwd?mode=ro' AS p",
		"ATTACH 'file:/tmp/ts-sec-attach.db?mode=rwc' AS p",
		"ATTACH ':memory:' AS m",
		"DETACH main",
		"SELECT readfile('/etc/passwd')",
		"SELECT writefile('/tmp/ts-sec-write', 'x')",
		"SELECT * FROM fsdir('/etc')",
		"SELECT edit('x', 'vi')",
		"SELECT * FROM zipfile('/tmp/x.zip')",
		/* extensions */
		"SELECT load_extension('libc.so.6')",
		"SELECT load_extension('/usr/lib/x86_64-linux-gnu/libsqlite3.so.0', 'sqlite3_fileio_init')",
		/* PRAGMA */
		"PRAGMA database_list",
		"PRAGMA writable_schema = 1",
		"PRAGMA query_only = 0",
		"PRAGMA journal_mode = DELETE",
		"PRAGMA temp_store_directory = '/tmp'",
		"SELECT * FROM pragma_database_list",
		"SELECT * FROM pragma_table_info('slices')",
		"SELECT * FROM pragma_compile_options",
		"SELECT * FROM pragma_function_list",
		/* code pointers */
		"SELECT fts3_tokenizer('simple')",
		"SELECT hex(fts3_tokenizer('simple'))",
		"SELECT fts3_tokenizer('simple', x'4141414141414141')",
		"SELECT fts3_tokenizer('porter', fts3_tokenizer('simple'))",
		/* virtual tables */
		"CREATE VIRTUAL TABLE temp.v USING fts4(x)",
		"CREATE VIRTUAL TABLE temp.r USING rtree(id, a, b)",
	};
	/* memory one request can make the server allocate: refused, or a NULL */
	static const char *const bombs[] = {
		"SELECT length(randomblob(200000000))",
		"SELECT length(hex(zeroblob(100000000)))",
		"SELECT length(printf('%.*c', 200000000, 'x'))",
		"SELECT length(replace(hex(zeroblob(1000000)), '0', hex(zeroblob(200))))",
	};
	char why[512], db[1300], cat[1300];
	uint64_t d0, c0;
	struct su_resp r;
	struct stat st0, st1;
	size_t i;

	rel_fmt(db, sizeof(db), "%s/traces/%" PRId64 "/trace.db", DATA, ID);
	rel_fmt(cat, sizeof(cat), "%s/catalog.db", DATA);
	d0 = file_digest(db);
	c0 = file_digest(cat);
	stat(db, &st0);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		int ok = sql(S.port, ID, refused[i], &r) == 0 && rel_is_error(&r, 0, NULL, why, sizeof(why));

		rel_check(ok, "sql: refused: %s%s%s", refused[i], ok ? "" : ": ", ok ? "" : why);
		su_resp_free(&r);
	}
	for (i = 0; i < sizeof(bombs) / sizeof(bombs[0]); i++) {
		int ok;

		sql(S.port, ID, bombs[i], &r);
		ok = rel_is_error(&r, 0, NULL, why, sizeof(why)) || (r.status == 200 && r.body && strstr(r.body, "[[null]]"));
		rel_check(ok, "sql: bounded (an error or NULL, not hundreds of MB): %s%s%.200s", bombs[i], ok ? "" : ": got ",
			  ok ? "" : r.body ? r.body : "");
		su_resp_free(&r);
	}
	/* reads still work, nothing changed, no file appeared */
	sql(S.port, ID, "SELECT count(*) FROM slices", &r);
	rel_check(r.status == 200, "sql: a plain SELECT still answers 200");
	su_resp_free(&r);
	stat(db, &st1);
	rel_check(d0 != 0 && d0 == file_digest(db) && st0.st_mtime == st1.st_mtime,
		  "sql: the trace's database is byte for byte unchanged");
	rel_check(c0 != 0 && c0 == file_digest(cat), "sql: the catalog is unchanged");
	rel_check(access("/tmp/ts-sec-vacuum.db", F_OK) != 0 && access("/tmp/ts-sec-attach.db", F_OK) != 0 &&
			  access("/tmp/ts-sec-write", F_OK) != 0,
		  "sql: no file was created by VACUUM INTO, ATTACH or writefile");
	unlink("/tmp/ts-sec-vacuum.db");
	unlink("/tmp/ts-sec-attach.db");
	unlink("/tmp/ts-sec-write");
}

/* ---- static files ---------------------------------------------------------------- */

static void group_static(void)
{
	static const char *const paths[] = {
		"/../secret.txt",
		"/%2e%2e/secret.txt",
		"/%2E%2E/secret.txt",
		"/.%2e/secret.txt",
		"/%2e%2e%2fsecret.txt",
		"/..%2fsecret.txt",
		"/%252e%252e/secret.txt",
		"/%252e%252e%252fsecret.txt",
		"/..%5csecret.txt",
		"/..\\secret.txt",
		"/%c0%ae%c0%ae/secret.txt",
		"/%c0%ae%c0%ae%c0%afsecret.txt",
		"/js/../../secret.txt",
		"/js/%2e%2e/%2e%2e/secret.txt",
		"/./index.html/../../secret.txt",
		"/index.html%00.png",
		"/index.html%00",
		"/etc/passwd",
		"//etc/passwd",
		"/%2fetc%2fpasswd",
		"/%2Fetc/passwd",
		"/../../../../../../../../../../etc/passwd",
		"/evil.html",
		"/evil-dir/passwd",
		"/evil-dir/./passwd",
		"/evil-up/secret.txt",
		"/.hidden",
		"/js/.hidden",
		"/api/../secret.txt",
		"/api/%2e%2e/secret.txt",
	};
	char sdir[1300], link[1400], marker[1300], path[256];
	struct su_server s;
	struct su_resp r;
	size_t i;
	int started;
	char *extra[3];

	/* a copy of the static directory with symlinks out of it, and a secret next to it */
	rel_fmt(sdir, sizeof(sdir), "%s/static", R.work);
	rel_fmt(marker, sizeof(marker), "%s/secret.txt", R.work);
	rel_write_file(marker, "SECRET-MARKER\n", 14);
	{
		char cmd[3000];

		rel_fmt(cmd, sizeof(cmd), "cp -R '%s/.' '%s/'", R.static_dir, sdir);
		mkdir(sdir, 0755);
		if (system(cmd) != 0)
			printf("# cannot copy %s\n", R.static_dir);
	}
	rel_fmt(link, sizeof(link), "%s/evil.html", sdir);
	symlink("/etc/passwd", link);
	rel_fmt(link, sizeof(link), "%s/evil-dir", sdir);
	symlink("/etc", link);
	rel_fmt(link, sizeof(link), "%s/evil-up", sdir);
	symlink("..", link);
	rel_fmt(link, sizeof(link), "%s/.hidden", sdir);
	rel_write_file(link, "SECRET-MARKER\n", 14);
	rel_fmt(link, sizeof(link), "%s/js/.hidden", sdir);
	rel_write_file(link, "SECRET-MARKER\n", 14);
	extra[0] = "--static";
	extra[1] = sdir;
	extra[2] = NULL;
	{
		char data[1300];

		rel_fmt(data, sizeof(data), "%s/data-static", R.work);
		started = rel_start(&s, data, (const char *const *)extra) == 0;
	}
	if (!rel_check(started, "static: a server with a static directory holding symlinks starts"))
		return;
	rel_req(s.port, "GET", "/", NULL, NULL, 0, &r, 20000);
	rel_check(r.status == 200, "static: / is served (%d)", r.status);
	su_resp_free(&r);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const char *methods[] = { "GET", "HEAD" };
		int m;

		for (m = 0; m < 2; m++) {
			int leak, ok;

			if (rel_req_long(s.port, methods[m], paths[i], NULL, NULL, 0, &r, 20000) != 0) {
				rel_check(1, "static: %s %s: connection closed without a reply", methods[m], paths[i]);
				continue;
			}
			leak = r.body && (strstr(r.body, "SECRET-MARKER") || strstr(r.body, "root:"));
			/* "%00" ends the path where MHD decodes it: index.html itself may be served */
			ok = !leak && (r.status == 404 || r.status == 400 || (r.status == 200 && strstr(paths[i], "index.html%00")));
			rel_check(ok, "static: %s %s -> %d%s", methods[m], paths[i], r.status,
				  leak ? " and it showed a file from outside the static directory" : "");
			su_resp_free(&r);
		}
	}
	(void)path;
	su_server_stop(&s, SIGTERM);
}

/* ---- token --------------------------------------------------------------------------- */

struct route {
	const char *method, *path; /* %I = the trace id */
	int body;                  /* sends the small trace (uploads) or SQL */
};

static const struct route ROUTES[] = {
	{ "GET", "/api", 0 },
	{ "GET", "/api/", 0 },
	{ "GET", "/api/traces", 0 },
	{ "GET", "/api/traces/", 0 },
	{ "POST", "/api/traces", 1 },
	{ "POST", "/api/traces?wait=1", 1 },
	{ "GET", "/api/traces/%I", 0 },
	{ "DELETE", "/api/traces/%I", 0 },
	{ "GET", "/api/traces/%I/tracks", 0 },
	{ "GET", "/api/traces/%I/slices?track=1", 0 },
	{ "GET", "/api/traces/%I/slices/1", 0 },
	{ "GET", "/api/traces/%I/counters?track=1", 0 },
	{ "GET", "/api/traces/%I/flows", 0 },
	{ "GET", "/api/traces/%I/sched?cpu=0", 0 },
	{ "GET", "/api/traces/%I/logs", 0 },
	{ "GET", "/api/traces/%I/search?q=a", 0 },
	{ "GET", "/api/traces/%I/stats", 0 },
	{ "GET", "/api/traces/%I/file", 0 },
	{ "GET", "/api/traces/%I/export?format=chrome-json", 0 },
	{ "POST", "/api/traces/%I/query", 2 },
	{ "POST", "/api/traces/%I/symbols", 1 },
	{ "PUT", "/api/traces/%I", 0 },
	{ "PATCH", "/api/traces/%I", 0 },
	{ "OPTIONS", "/api/traces", 0 },
	{ "HEAD", "/api/traces", 0 },
	{ "GET", "/api/nope", 0 },
	{ "GET", "/api/traces/999999/tracks", 0 },
};

static void route_path(const struct route *rt, int64_t id, const char *suffix, char *out, size_t n)
{
	const char *p = strstr(rt->path, "%I");

	if (p)
		rel_fmt(out, n, "%.*s%" PRId64 "%s%s", (int)(p - rt->path), rt->path, id, p + 2, suffix);
	else
		rel_fmt(out, n, "%s%s", rt->path, suffix);
}

static int do_route(int port, const struct route *rt, int64_t id, const char *auth, const char *suffix,
		    struct su_resp *r)
{
	static const char q[] = "SELECT count(*) FROM slices";
	char path[256], hdr[512];

	route_path(rt, id, suffix, path, sizeof(path));
	rel_fmt(hdr, sizeof(hdr), "%s%s", auth ? auth : "", rt->body == 1 ? "Content-Type: application/octet-stream\r\n" : "");
	return rel_req(port, rt->method, path, hdr[0] ? hdr : NULL, rt->body == 1 ? (const void *)SMALL : rt->body == 2 ? q : NULL,
		       rt->body == 1 ? SMALL_LEN : rt->body == 2 ? strlen(q) : 0, r, 60000);
}

static void group_token(void)
{
	static const char token[] = "c0ffee-0123456789-abcdef-9876543210";
	char tf[1300], data[1300], good[256], spool[1400];
	const char *bad[6];
	char bad_buf[6][256], *extra[3];
	struct su_server s;
	struct su_resp r;
	int64_t id, count_before;
	size_t i, k;

	rel_fmt(tf, sizeof(tf), "%s/token", R.work);
	rel_fmt(data, sizeof(data), "%s/data-token", R.work);
	rel_fmt(spool, sizeof(spool), "%s/spool", data);
	rel_write_file(tf, token, strlen(token));
	chmod(tf, 0600);
	extra[0] = "--token-file";
	extra[1] = tf;
	extra[2] = NULL;
	if (!rel_check(rel_start(&s, data, (const char *const *)extra) == 0, "token: the server starts with --token-file"))
		return;
	rel_fmt(good, sizeof(good), "Authorization: Bearer %s\r\n", token);
	id = rel_upload(s.port, "?wait=1&name=guarded", SMALL, SMALL_LEN, good, &r, 60000);
	su_resp_free(&r);
	rel_check(id > 0, "token: an upload with the token works");
	/* the server compresses its source once it is ready, through a file in
	 * the spool: done before the refused uploads, whose spool is checked */
	{
		char zst[1500];
		double deadline = su_now() + 60;

		rel_fmt(zst, sizeof(zst), "%s/traces/%" PRId64 "/source.zst", data, id);
		while (access(zst, F_OK) != 0 && su_now() < deadline)
			su_sleep_ms(20);
	}
	/* wrong tokens: same length one byte off, first byte off, none, query string, lower-case scheme, two spaces */
	rel_fmt(bad_buf[0], 256, "Authorization: Bearer %.*sX\r\n", (int)strlen(token) - 1, token);
	rel_fmt(bad_buf[1], 256, "Authorization: Bearer X%s\r\n", token + 1);
	rel_fmt(bad_buf[2], 256, "Authorization: bearer %s\r\n", token);
	rel_fmt(bad_buf[3], 256, "Authorization: Bearer  %s\r\n", token);
	rel_fmt(bad_buf[4], 256, "Authorization: Bearer %s\r\nAuthorization: Bearer x\r\n", "x");
	rel_fmt(bad_buf[5], 256, "X-Authorization: Bearer %s\r\n", token);
	for (k = 0; k < 6; k++)
		bad[k] = bad_buf[k];
	count_before = -1;
	{
		cJSON *j;

		rel_req(s.port, "GET", "/api/traces", good, NULL, 0, &r, 20000);
		if ((j = rel_json(&r)) != NULL)
			count_before = cJSON_GetArraySize(rel_get(j, "traces"));
		cJSON_Delete(j);
		su_resp_free(&r);
	}
	for (i = 0; i < sizeof(ROUTES) / sizeof(ROUTES[0]); i++) {
		int all_401 = 1, got = 0;
		char hv[64], qs[160];

		for (k = 0; k <= 6; k++) {
			const char *auth = k < 6 ? bad[k] : NULL;
			int is401;

			if (do_route(s.port, &ROUTES[i], id, auth, "", &r) != 0) {
				all_401 = 0;
				continue;
			}
			is401 = r.status == 401 && su_header(&r, "WWW-Authenticate", hv, sizeof(hv)) != NULL &&
				(strcmp(ROUTES[i].method, "HEAD") == 0 || strstr(r.body, "unauthorized") != NULL);
			if (!is401) {
				all_401 = 0;
				got = r.status;
			}
			su_resp_free(&r);
		}
		/* the token in the query string is not a token */
		rel_fmt(qs, sizeof(qs), "%stoken=%s&access_token=%s", strchr(ROUTES[i].path, '?') ? "&" : "?", token, token);
		if (do_route(s.port, &ROUTES[i], id, NULL, qs, &r) != 0 || r.status != 401) {
			all_401 = 0;
			got = r.status;
		}
		su_resp_free(&r);
		rel_check(all_401, "token: %s %s: 401 without the right token (7 wrong ways and the query string)%s%d",
			  ROUTES[i].method, ROUTES[i].path, all_401 ? "" : "; got ", all_401 ? 0 : got);
	}
	{
		cJSON *j, *t = rel_trace(s.port, id, good);
		int64_t count_after = -1;

		rel_req(s.port, "GET", "/api/traces", good, NULL, 0, &r, 20000);
		if ((j = rel_json(&r)) != NULL)
			count_after = cJSON_GetArraySize(rel_get(j, "traces"));
		cJSON_Delete(j);
		su_resp_free(&r);
		rel_check(t != NULL && count_after == count_before && rel_dir_entries(spool) == 0,
			  "token: refused uploads stored nothing and the refused DELETE deleted nothing (%" PRId64 " traces)",
			  count_after);
		cJSON_Delete(t);
	}
	/* with the token: not 401 (the DELETE last) */
	for (i = 0; i < sizeof(ROUTES) / sizeof(ROUTES[0]); i++) {
		if (strcmp(ROUTES[i].method, "DELETE") == 0)
			continue;
		if (do_route(s.port, &ROUTES[i], id, good, "", &r) == 0)
			rel_check(r.status != 401, "token: %s %s with the token: %d", ROUTES[i].method, ROUTES[i].path, r.status);
		else
			rel_check(0, "token: %s %s with the token: no reply", ROUTES[i].method, ROUTES[i].path);
		su_resp_free(&r);
	}
	do_route(s.port, &ROUTES[7], id, good, "", &r);
	rel_check(r.status == 204, "token: DELETE with the token: %d", r.status);
	su_resp_free(&r);
	/* static files need no token */
	rel_req(s.port, "GET", "/", NULL, NULL, 0, &r, 20000);
	rel_check(r.status == 200, "token: the viewer's page needs no token (%d)", r.status);
	su_resp_free(&r);
	su_server_stop(&s, SIGTERM);
}

/* ---- bind ------------------------------------------------------------------------------- */

/* Runs serve with args. Returns its exit code, or -1 when it said it is
 * listening (it is then stopped at once with SIGTERM) and *listening is
 * set. Its stderr goes to out (n bytes). */
static int run_serve(const char *const *args, double timeout, char *out, size_t n, int *listening)
{
	char data[1300], *argv[16], errf[1300], line[512];
	size_t k = 0, i, len = 0;
	int pfd[2], status, rc = -2;
	uint8_t *p;
	pid_t pid;

	rel_fmt(data, sizeof(data), "%s/data-bind", R.work);
	rel_fmt(errf, sizeof(errf), "%s/bind.err", R.work);
	argv[k++] = R.exe;
	argv[k++] = "serve";
	argv[k++] = "--port";
	argv[k++] = "0";
	argv[k++] = "--data";
	argv[k++] = data;
	for (i = 0; args[i] && k < 15; i++)
		argv[k++] = (char *)(uintptr_t)args[i];
	argv[k] = NULL;
	*listening = 0;
	if (pipe2(pfd, O_CLOEXEC) != 0 || (pid = fork()) < 0)
		return -3;
	if (pid == 0) {
		int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(pfd[1], 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	if (su_read_line(pfd[0], line, sizeof(line), timeout) == 0 && strstr(line, "listening on http://")) {
		*listening = 1;
		kill(pid, SIGTERM);
	}
	for (i = 0; i < 200; i++) { /* 10 s */
		if (waitpid(pid, &status, WNOHANG) == pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
		su_sleep_ms(50);
	}
	if (rc == -2) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(pfd[0]);
	p = rel_read_file(errf, &len);
	snprintf(out, n, "%s", p ? (char *)p : "");
	free(p);
	return *listening ? -1 : rc;
}

/* Whether [::1] can be bound here (containers often have no IPv6). */
static int ipv6_loopback(void)
{
	struct sockaddr_in6 a;
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_addr = in6addr_loopback;
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

static void group_bind(void)
{
	static const char *const refused[][3] = {
		{ "--bind", "0.0.0.0", NULL },
		{ "--bind", "::", NULL },
		{ "--bind", "10.255.255.1", NULL },
		{ "--bind", "::ffff:0.0.0.0", NULL },
	};
	static const char *const loopback[][3] = {
		{ "--bind", "127.0.0.2", NULL },
		{ "--bind", "::1", NULL },
		{ "--bind", "localhost", NULL },
	};
	char msg[4096], tf[1300];
	size_t i;
	int rc, listening;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		rc = run_serve(refused[i], 10, msg, sizeof(msg), &listening);
		rel_check(rc == 2 && !listening && strstr(msg, "--token-file") && strstr(msg, "--insecure-public"),
			  "bind: --bind %s without a token is refused: exit %d, \"%.*s\"", refused[i][1], rc,
			  (int)strcspn(msg, "\n"), msg);
	}
	for (i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		if (strchr(loopback[i][1], ':') && !ipv6_loopback()) {
			printf("skip - bind: --bind %s: this machine has no IPv6 loopback\n", loopback[i][1]);
			continue;
		}
		rc = run_serve(loopback[i], 20, msg, sizeof(msg), &listening);
		rel_check(listening, "bind: --bind %s (loopback) starts without a token%s%.*s", loopback[i][1],
			  listening ? "" : ": ", listening ? 0 : (int)strcspn(msg, "\n"), msg);
	}
	{
		static const char *const pub[] = { "--bind", "0.0.0.0", "--insecure-public", NULL };
		const char *tok[] = { "--bind", "0.0.0.0", "--token-file", tf, NULL };

		rc = run_serve(pub, 20, msg, sizeof(msg), &listening);
		rel_check(listening, "bind: --bind 0.0.0.0 --insecure-public starts (stopped at once, no traffic)");
		rel_fmt(tf, sizeof(tf), "%s/token-bind", R.work);
		rel_write_file(tf, "0123456789abcdef0123\n", 21);
		rc = run_serve(tok, 20, msg, sizeof(msg), &listening);
		rel_check(listening, "bind: --bind 0.0.0.0 with --token-file starts (stopped at once, no traffic)");
		rel_write_file(tf, "short\n", 6);
		rc = run_serve(tok, 10, msg, sizeof(msg), &listening);
		rel_check(!listening && rc == 2, "bind: a token shorter than 16 characters is refused (exit %d)", rc);
	}
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void)
{
	char path[1300];
	struct su_resp r;
	int rc;

	rel_setup("security");
	rel_fmt(DATA, sizeof(DATA), "%s/data", R.work);
	rel_fmt(path, sizeof(path), "%s/small.fxt", R.work);
	if (!rel_check(rel_gen_fxt(path, 5000, 3, 31) == 0 && (SMALL = rel_read_file(path, &SMALL_LEN)) != NULL &&
			       rel_start(&S, DATA, NULL) == 0,
		       "setup: server started"))
		return rel_summary("security");
	ID = rel_upload(S.port, "?wait=1&name=target", SMALL, SMALL_LEN, NULL, &r, 60000);
	su_resp_free(&r);
	rel_check(ID > 0, "setup: a trace is ready");
	group_sql();
	rc = su_server_stop(&S, SIGTERM);
	rel_check(rc == 0, "sql: the server stops cleanly after the SQL checks (exit %d)", rc);
	group_static();
	group_token();
	group_bind();
	rel_check(rel_log_reports(R.log) == 0, "no sanitizer report in the server logs");
	free(SMALL);
	return rel_summary("security");
}
