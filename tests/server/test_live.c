/*
 * Live traces over loopback (docs/API.md "Live traces"): the real server
 * binary (env TRACE_SERVER) and archives from gen_fxt (env GEN_FXT),
 * streamed as chunked bodies in odd-sized pieces with pauses.
 *
 * At every pause the trace's database must hold exactly the rows that
 * ingesting the same bytes as a file gives (every table compared), and
 * once the body ends, exactly those of the whole archive. A connection cut
 * mid-record keeps every whole record; a server killed mid-stream restarts
 * with the trace holding what it received, marked interrupted; bytes that
 * are not a trace fail the trace; with a token, a stream needs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "../xorshift.h"
#include "api_util.h"
#include "window_util.h"

struct world {
	char root[64], data[128], log[128], exe[256], gen[256];
	char archive[160];  /* the generated archive */
	uint8_t *bytes;     /* its bytes */
	size_t n;
	int64_t last_id;    /* the newest trace a test has seen */
	struct su_server srv;
};
static struct world W;

static void t_start(const char *const *extra)
{
	api_start(&W.srv, W.exe, W.data, W.log, extra);
}

/* ---- a live stream: a chunked body sent piece by piece ------------------ */

static int ls_open(const char *path, const char *headers)
{
	char head[1024];
	int fd = su_connect(W.srv.port);
	size_t off = 0;

	assert_true(fd >= 0);
	t_fmt(head, sizeof(head),
	      "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n%s\r\n", path,
	      headers ? headers : "");
	while (off < strlen(head)) {
		ssize_t k = write(fd, head + off, strlen(head) - off);

		assert_true(k > 0);
		off += (size_t)k;
	}
	return fd;
}

static void ls_write(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = write(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		assert_true(k > 0);
		c += k;
		n -= (size_t)k;
	}
}

static void ls_chunk(int fd, const uint8_t *p, size_t n)
{
	char h[32];

	t_fmt(h, sizeof(h), "%zx\r\n", n);
	ls_write(fd, h, strlen(h));
	ls_write(fd, p, n);
	ls_write(fd, "\r\n", 2);
}

/* Sends bytes [from, to) of buf in odd-sized chunks (1 to 7919 bytes,
 * pseudo-random). */
static void ls_send_buf(int fd, const uint8_t *buf, size_t from, size_t to, uint64_t *rng)
{
	while (from < to) {
		size_t k = 1 + (size_t)(xorshift64(rng) % 7919);

		if (k > to - from)
			k = to - from;
		ls_chunk(fd, buf + from, k);
		from += k;
	}
}

/* The same, of the archive. */
static void ls_send(int fd, size_t from, size_t to, uint64_t *rng)
{
	ls_send_buf(fd, W.bytes, from, to, rng);
}

/* Reads the reply's status (and body into out) to the end. */
static int ls_reply(int fd, char *out, size_t n)
{
	char buf[8192];
	size_t len = 0;
	int status = 0;

	for (;;) {
		ssize_t k = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (len += (size_t)k) == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	close(fd);
	sscanf(buf, "HTTP/1.1 %d", &status);
	if (out) {
		const char *b = strstr(buf, "\r\n\r\n");

		snprintf(out, n, "%s", b ? b + 4 : "");
	}
	return status;
}

/* Ends the body and reads the reply. */
static int ls_finish(int fd, char *out, size_t n)
{
	ls_write(fd, "0\r\n\r\n", 5);
	return ls_reply(fd, out, n);
}

/* The id of the trace a stream just made, named name: newer than any
 * seen before; waits for it. The name tells it from a trace another test
 * made without noting its id (t_token's): the request making this one may
 * not have reached the server yet. */
static int64_t new_id(const char *name)
{
	double deadline = su_now() + 30;

	while (su_now() < deadline) {
		cJSON *j = t_get("/api/traces?limit=1");
		cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "traces"), 0);
		int64_t id = t ? num(t, "id") : 0;
		const char *nm = str(t, "name");
		int named = nm && strcmp(nm, name) == 0;

		cJSON_Delete(j);
		if (id > W.last_id && named)
			return W.last_id = id;
		su_sleep_ms(20);
	}
	fail_msg("no trace named %s appeared", name);
	return 0;
}

/* The trace object once stream.visible_bytes reaches bytes (and, when
 * status is given, the trace has that status; when whole, its view holds
 * the stream from its start: stream.from_byte 0). */
static cJSON *wait_stream(int64_t id, uint64_t bytes, const char *status, int whole)
{
	double deadline = su_now() + 60;
	char path[64], last[600] = "";

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	while (su_now() < deadline) {
		cJSON *t = t_get(path);
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "stream");
		char *was;

		if (cJSON_IsObject(s) && (uint64_t)num(s, "visible_bytes") == bytes && (!whole || num(s, "from_byte") == 0) &&
		    (status == NULL || (str(t, "status") && strcmp(str(t, "status"), status) == 0)))
			return t;
		if ((was = cJSON_PrintUnformatted(s)) != NULL) {
			snprintf(last, sizeof(last), "status %s, stream %s", str(t, "status") ? str(t, "status") : "?", was);
			free(was);
		}
		cJSON_Delete(t);
		su_sleep_ms(20);
	}
	fail_msg("trace %" PRId64 " never showed %" PRIu64 " bytes%s%s%s (last: %s)", id, bytes, whole ? " whole" : "",
		 status ? " as " : "", status ? status : "", last);
	return NULL;
}

static cJSON *wait_visible(int64_t id, uint64_t bytes, const char *status)
{
	return wait_stream(id, bytes, status, 0);
}

/* ---- the same bytes ingested by the CLI (compared: window_util.h) -------- */

/* Ingests the archive's first n bytes as a file into out with the CLI. */
static void ingest_prefix(size_t n, const char *out)
{
	char in[200], cmd[800];
	FILE *f;

	t_fmt(in, sizeof(in), "%s/prefix.fxt", W.root);
	assert_non_null(f = fopen(in, "wb"));
	assert_int_equal(fwrite(W.bytes, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	/* a stream's layout: ids reserved as rows come (catalog/grow.h) */
	t_fmt(cmd, sizeof(cmd), "%s ingest %s -o %s --extent-rows 4096 >/dev/null 2>&1", W.exe, in, out);
	assert_int_equal(system(cmd), 0);
}

static void trace_db(int64_t id, char *out, size_t n)
{
	t_fmt(out, n, "%s/traces/%" PRId64 "/trace.db", W.data, id);
}

/* ---- the tests ---------------------------------------------------------- */

/* A stream with pauses: at each, the snapshot equals the bytes so far
 * ingested as a file; at the end, the whole archive's. */
static void t_pauses_and_end(void **state)
{
	size_t cuts[] = { 1, 4096 + 13, W.n / 3 + 5, W.n / 2 + 1 }; /* odd places, mid-record */
	uint64_t rng = 42;
	char ref[200], db[200], body[2048];
	size_t at = 0, i;
	int64_t id = 0;
	cJSON *t;
	int fd;

	(void)state;
	fd = ls_open("/api/traces?live=1&name=paused&label=kind=live", NULL);
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		ls_send(fd, at, cuts[i], &rng);
		at = cuts[i];
		if (id == 0)
			id = new_id("paused");
		if (at < 16)
			continue; /* not a whole record yet: nothing to read */
		t = wait_visible(id, at, "live");
		assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "stream"), "state"), "receiving");
		cJSON_Delete(t);
		/* readable through the API while live */
		{
			char path[96];

			t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
			cJSON_Delete(t_get(path));
		}
		t_fmt(ref, sizeof(ref), "%s/ref-%zu.db", W.root, i);
		ingest_prefix(at, ref);
		trace_db(id, db, sizeof(db));
		same_tables(db, ref);
	}
	ls_send(fd, at, W.n, &rng);
	assert_int_equal(ls_finish(fd, body, sizeof(body)), 202);
	t = wait_visible(id, W.n, "ready");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "stream"), "state"), "complete");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "labels"), "kind"), "live");
	assert_string_equal(str(t, "name"), "paused");
	assert_int_equal(num(t, "size_bytes"), (int64_t)W.n);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "diagnostics"),
						     "stream_incomplete"));
	cJSON_Delete(t);
	t_fmt(ref, sizeof(ref), "%s/ref-all.db", W.root);
	ingest_prefix(W.n, ref);
	trace_db(id, db, sizeof(db));
	same_tables(db, ref);
}

/* A connection cut mid-record: the trace keeps every whole record and says
 * its stream was dropped. */
static void t_dropped(void **state)
{
	size_t cut = W.n / 2 + 3;
	uint64_t rng = 7;
	char ref[200], db[200];
	int64_t id;
	cJSON *t, *d;
	int fd;

	(void)state;
	fd = ls_open("/api/traces?live=1&name=dropped", NULL);
	ls_send(fd, 0, cut, &rng);
	id = new_id("dropped");
	cJSON_Delete(wait_visible(id, cut, "live"));
	close(fd);
	t = wait_visible(id, cut, "ready");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "stream"), "state"), "dropped");
	d = cJSON_GetObjectItemCaseSensitive(t, "diagnostics");
	assert_int_equal(num(d, "stream_incomplete"), 1);
	assert_true(num(d, "truncated_bytes") > 0); /* cut mid-record, as a damaged archive */
	cJSON_Delete(t);
	t_fmt(ref, sizeof(ref), "%s/ref-dropped.db", W.root);
	ingest_prefix(cut, ref);
	trace_db(id, db, sizeof(db));
	same_tables(db, ref);
}

/* kill -9 mid-stream: after a restart the trace holds what it received,
 * marked interrupted, and becomes ready. */
static void t_killed(void **state)
{
	size_t cut = W.n / 3 + 1;
	uint64_t rng = 9;
	char ref[200], db[200];
	int64_t id;
	cJSON *t;
	int fd;

	(void)state;
	fd = ls_open("/api/traces?live=1&name=killed", NULL);
	ls_send(fd, 0, cut, &rng);
	id = new_id("killed");
	cJSON_Delete(wait_visible(id, cut, "live"));
	assert_int_equal(su_server_stop(&W.srv, SIGKILL), 128 + SIGKILL);
	close(fd);
	t_start(NULL);
	t = wait_visible(id, cut, "ready");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "stream"), "state"), "interrupted");
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(t, "diagnostics"), "stream_incomplete"), 1);
	cJSON_Delete(t);
	t_fmt(ref, sizeof(ref), "%s/ref-killed.db", W.root);
	ingest_prefix(cut, ref);
	trace_db(id, db, sizeof(db));
	same_tables(db, ref);
}

/* Bytes that are not a trace fail it (422 at the body's end); a stream that
 * sends nothing leaves nothing; live is a raw body only. */
static void t_refused(void **state)
{
	static const uint8_t junk[4096] = { 'n', 'o', 't', ' ', 'a', ' ', 't', 'r', 'a', 'c', 'e' };
	char body[2048];
	int64_t id;
	cJSON *t;
	int fd;

	(void)state;
	fd = ls_open("/api/traces?live=1&name=junk", NULL);
	ls_chunk(fd, junk, sizeof(junk));
	id = new_id("junk");
	{
		double deadline = su_now() + 30;
		char path[64];

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
		for (;;) {
			t = t_get(path);
			if (strcmp(str(t, "status"), "failed") == 0)
				break;
			cJSON_Delete(t);
			assert_true(su_now() < deadline);
			su_sleep_ms(20);
		}
		assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "error"), "code"), "not_a_trace");
		cJSON_Delete(t);
	}
	ls_chunk(fd, junk, sizeof(junk));
	assert_int_equal(ls_finish(fd, body, sizeof(body)), 422);
	assert_non_null(strstr(body, "not_a_trace"));

	fd = ls_open("/api/traces?live=1&name=empty", NULL);
	assert_int_equal(ls_finish(fd, body, sizeof(body)), 400);
	assert_non_null(strstr(body, "empty_upload"));
	t = t_get("/api/traces?q=empty");
	assert_int_equal(num(t, "total"), 0); /* made at the stream's start, gone at its empty end */
	cJSON_Delete(t);
	W.last_id++;

	fd = ls_open("/api/traces?live=2", NULL);
	assert_int_equal(ls_finish(fd, body, sizeof(body)), 400);
}

/* With a token, a live stream without it is refused and makes no trace. */
static void t_token(void **state)
{
	char tok[200], body[2048], auth[128];
	uint64_t rng = 3;
	FILE *f;
	int fd;

	(void)state;
	t_fmt(tok, sizeof(tok), "%s/token", W.root);
	assert_non_null(f = fopen(tok, "w"));
	fputs("live-token-0123456789abcdef\n", f);
	fclose(f);
	su_server_stop(&W.srv, SIGTERM);
	{
		const char *extra[] = { "--token-file", tok, NULL };

		t_start(extra);
	}
	fd = ls_open("/api/traces?live=1&name=notoken", NULL);
	/* answered at the headers: the body may not even be taken */
	assert_int_equal(ls_reply(fd, body, sizeof(body)), 401);
	t_fmt(auth, sizeof(auth), "Authorization: Bearer live-token-0123456789abcdef\r\n");
	fd = ls_open("/api/traces?live=1&name=withtoken", auth);
	ls_send(fd, 0, W.n, &rng);
	assert_int_equal(ls_finish(fd, body, sizeof(body)), 202);
	su_server_stop(&W.srv, SIGTERM);
	t_start(NULL);
}

/* The JSON document in file path (fails the test when it is not one). */
static cJSON *read_json_file(const char *path)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;
	cJSON *j;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((j = cJSON_Parse(buf)) == NULL)
		fail_msg("%s is not JSON: %.300s", path, buf);
	return j;
}

/* trace-server stream: standard input, and a file followed as it grows
 * (until --idle), each ends as the same rows as the archive's. */
static void t_stream_command(void **state)
{
	char cmd[2048], ref[200], db[200], out[200];
	size_t half = W.n / 2 + 1;
	int64_t id;
	cJSON *t;

	(void)state;
	t_fmt(ref, sizeof(ref), "%s/ref-cmd.db", W.root);
	ingest_prefix(W.n, ref);
	t_fmt(out, sizeof(out), "%s/stream.out", W.root);
	t_fmt(cmd, sizeof(cmd), "%s stream --server http://127.0.0.1:%d --name piped - < %s > %s 2>> %s",
	      W.exe, W.srv.port, W.archive, out, W.log);
	assert_int_equal(system(cmd), 0);
	id = new_id("piped");
	/* it prints the trace object once the trace is received whole */
	t = read_json_file(out);
	assert_int_equal(num(t, "id"), id);
	assert_string_equal(str(t, "name"), "piped");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "stream"), "state"), "complete");
	assert_int_equal(num(t, "size_bytes"), W.n);
	cJSON_Delete(t);
	t = wait_visible(id, W.n, "ready");
	assert_string_equal(str(t, "name"), "piped");
	cJSON_Delete(t);
	trace_db(id, db, sizeof(db));
	same_tables(db, ref);

	t_fmt(cmd, sizeof(cmd),
	      "cd %s && head -c %zu g.fxt > grow.fxt && (sleep 0.5; tail -c +%zu g.fxt >> grow.fxt) & "
	      "%s stream --server http://127.0.0.1:%d --idle 2 --label src=file %s/grow.fxt > /dev/null 2>> %s",
	      W.root, half, half + 1, W.exe, W.srv.port, W.root, W.log);
	assert_int_equal(system(cmd), 0);
	id = new_id("grow.fxt");
	t = wait_visible(id, W.n, "ready");
	assert_string_equal(str(t, "name"), "grow.fxt");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "labels"), "src"), "file");
	cJSON_Delete(t);
	trace_db(id, db, sizeof(db));
	same_tables(db, ref);

	/* a file name longer than the default name keeps, with a 2-byte
	 * character across the cut: the name loses the whole character */
	{
		char file[300], want[130];

		memset(want, 'a', 126);
		want[126] = '\0';
		t_fmt(file, sizeof(file), "%s/%s\xc3\xa9zz.fxt", W.root, want);
		t_fmt(cmd, sizeof(cmd), "cp %s/g.fxt '%s' && %s stream --server http://127.0.0.1:%d --idle 1 '%s' > /dev/null 2>> %s",
		      W.root, file, W.exe, W.srv.port, file, W.log);
		assert_int_equal(system(cmd), 0);
		id = new_id(want);
		cJSON_Delete(wait_visible(id, W.n, "ready"));
	}

	/* a server that is not there: a clear error, exit status 1 */
	t_fmt(cmd, sizeof(cmd), "%s stream --server http://127.0.0.1:1 - < /dev/null 2>/dev/null", W.exe);
	assert_int_equal(WEXITSTATUS(system(cmd)), 1);
}

/* ---- streams of several providers (docs/API.md, Live streams) ----------- */

/*
 * Two archives' records interleaved a few hundred bytes at a time (so that
 * their string and thread records interleave too), the second
 * under a provider of its own (id 2), as a trace manager writes several
 * providers' buffers. *n gets the bytes.
 */
static uint8_t *two_providers(size_t *n)
{
	static const uint8_t info2[16] = { 0x20, 0x00, 0x21, 0x00, 0x00, 0x00, 0x30, 0x00, /* provider info, id 2, name 3 bytes */
					   't',  'w',  'o',  0,    0,    0,    0,    0 };
	uint8_t *out = malloc(3 * W.n); /* both, and a section every few hundred bytes */
	size_t a = 0, b = 0, o = 0, skip = 0;

	assert_non_null(out);
	while (skip < W.n && rec_provider(W.bytes + skip) != 1) /* the second copy's own magic and provider info go */
		skip += rec_bytes(W.bytes + skip);
	skip += rec_bytes(W.bytes + skip);
	b = skip;
	while (a < W.n || b < W.n) {
		size_t end;

		for (end = a; end < W.n && end - a < 700;)
			end += rec_bytes(W.bytes + end);
		if (a > 0 && end > a)
			o += put_section(out + o, 1);
		memcpy(out + o, W.bytes + a, end - a);
		o += end - a;
		a = end;
		for (end = b; end < W.n && end - b < 500;)
			end += rec_bytes(W.bytes + end);
		if (b == skip) {
			memcpy(out + o, info2, sizeof(info2));
			o += sizeof(info2);
		} else if (end > b) {
			o += put_section(out + o, 2);
		}
		memcpy(out + o, W.bytes + b, end - b);
		o += end - b;
		b = end;
	}
	*n = o;
	return out;
}

/* The start_ns a file ingest of s[0 .. n) gives: the trace's own clock. */
static int64_t prefix_start(const uint8_t *s, size_t n)
{
	char path[200], db[200], cmd[800];
	sqlite3 *h;
	sqlite3_stmt *st;
	int64_t v = -1;
	FILE *f;

	t_fmt(path, sizeof(path), "%s/prefix.fxt", W.root);
	t_fmt(db, sizeof(db), "%s/prefix.db", W.root);
	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(s, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	t_fmt(cmd, sizeof(cmd), "%s ingest %s -o %s >/dev/null 2>&1", W.exe, path, db);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'start_ns'", -1, &st,
					    NULL),
			 SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

/* The trace object once stream.committed_bytes reaches bytes. */
static cJSON *wait_committed(int64_t id, uint64_t bytes)
{
	double deadline = su_now() + 60;
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	while (su_now() < deadline) {
		cJSON *t = t_get(path);
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "stream");

		if (cJSON_IsObject(s) && (uint64_t)num(s, "committed_bytes") >= bytes)
			return t;
		cJSON_Delete(t);
		su_sleep_ms(20);
	}
	fail_msg("trace %" PRId64 " never held %" PRIu64 " bytes", id, bytes);
	return NULL;
}

/* Search across traces (GET /api/search) holds the growing trace id, its
 * figures for q those of its committed slices as its own SQL reads them;
 * once two searches around the SQL agree (no commit between). */
static void growing_in_search(int64_t id, const char *q)
{
	char path[200], sql[600], qpath[64];
	int tries;

	t_fmt(path, sizeof(path), "/api/search?q=%s", q);
	t_fmt(qpath, sizeof(qpath), "/api/traces/%" PRId64 "/query", id);
	t_fmt(sql, sizeof(sql),
	      "SELECT count(*), coalesce(sum(dur >= 0), 0), coalesce(sum(CASE WHEN dur >= 0 THEN dur END), 0), "
	      "coalesce(max(max(dur), 0), 0) FROM slices WHERE name_id IN "
	      "(SELECT id FROM strings WHERE instr(lower(str), lower('%s')) > 0)",
	      q);
	for (tries = 0; tries < 50; tries++) {
		cJSON *a = t_get(path), *r = t_call("POST", qpath, sql, 200), *b = t_get(path);
		const cJSON *e, *ha = NULL, *hb = NULL, *row;

		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(a, "traces"))
			if (num(e, "id") == id)
				ha = e;
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(b, "traces"))
			if (num(e, "id") == id)
				hb = e;
		assert_non_null(ha); /* a growing trace is searched too */
		assert_non_null(hb);
		row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "rows"), 0);
		if (num(ha, "count") == num(hb, "count") && num(ha, "total_ns") == num(hb, "total_ns") &&
		    strcmp(str(hb, "status"), "live") == 0) {
			assert_string_equal(str(ha, "status"), "live");
			assert_int_equal(num(ha, "count"), (int64_t)cJSON_GetArrayItem(row, 0)->valuedouble);
			assert_int_equal(num(ha, "ended"), (int64_t)cJSON_GetArrayItem(row, 1)->valuedouble);
			assert_int_equal(num(ha, "total_ns"), (int64_t)cJSON_GetArrayItem(row, 2)->valuedouble);
			assert_int_equal(num(ha, "max_ns"), (int64_t)cJSON_GetArrayItem(row, 3)->valuedouble);
			assert_true(num(ha, "count") > 0);
			assert_true(num(ha, "p50_ns") <= num(ha, "p95_ns") && num(ha, "p95_ns") <= num(ha, "max_ns"));
			assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ha, "names")) > 0);
			tries = -1;
		}
		cJSON_Delete(a);
		cJSON_Delete(b);
		cJSON_Delete(r);
		if (tries < 0)
			return;
		su_sleep_ms(20);
	}
	fail_msg("search for %s never agreed with itself on trace %" PRId64, q, id);
}

/* A stream that never pauses (--live-pause 0) grows in place, from its
 * first byte: after each piece its view starts at byte 0, holds more
 * slices than before (none goes: the history stays), on the trace's own
 * clock; at its end it equals the file's ingest (the stream's layout).
 * The first provider's copy of gen_fxt's archive ends with its threads'
 * first begins (time 0), late for any window: from there the trace is
 * ingested again and its view shows that as it catches up (ingest.h), so
 * the pieces looked at are those before it. Flow arrows are there before
 * the end, every one from a slice that ended (commit_flows.h), and so are
 * the cpus' runs (commit_sched.h). */
static void t_history(void **state)
{
	size_t n, cuts[5], i, at = 0;
	uint8_t *s = two_providers(&n);
	char ref[200], db[200], path[200], body[2048];
	int64_t id = 0, slices = 0, start = -1, arrows = 0, runs = 0;
	uint64_t rng = 99;
	int cpus_seen = 0;
	int fd;

	(void)state;
	cuts[0] = n / 5 + 3;
	cuts[1] = n / 3 + 1;
	cuts[2] = n / 2 + 7;
	cuts[3] = n - 5;
	cuts[4] = n;
	su_server_stop(&W.srv, SIGTERM);
	{
		const char *extra[] = { "--live-pause", "0", NULL };

		t_start(extra);
	}
	fd = ls_open("/api/traces?live=1&name=growing", NULL);
	for (i = 0; i < 5; i++) {
		const cJSON *st;
		cJSON *t;

		ls_send_buf(fd, s, at, cuts[i], &rng);
		at = cuts[i];
		if (id == 0)
			id = new_id("growing");
		if (i >= 3)
			continue; /* past the late begins (above) */
		t = wait_committed(id, at);
		st = cJSON_GetObjectItemCaseSensitive(t, "stream");
		assert_int_equal(num(st, "from_byte"), 0); /* from its first byte, always */
		assert_string_equal(str(t, "status"), "live");
		/* what it showed stays: more slices each time */
		assert_true(num(cJSON_GetObjectItemCaseSensitive(t, "counts"), "slices") >= slices);
		slices = num(cJSON_GetObjectItemCaseSensitive(t, "counts"), "slices");
		/* its start is the trace's (the first events are matched first) */
		if (slices > 0 && start < 0)
			start = num(t, "start_ns");
		if (start >= 0)
			assert_int_equal(num(t, "start_ns"), start);
		arrows = num(cJSON_GetObjectItemCaseSensitive(t, "counts"), "flows");
		runs = num(cJSON_GetObjectItemCaseSensitive(t, "counts"), "sched");
		cJSON_Delete(t);
		if (slices > 0) { /* search across traces reads it as it grows */
			growing_in_search(id, "LoAd");
			growing_in_search(id, "er");
		}
		if (runs > 0) { /* the cpus' runs so far, as tracks and sched read them (commit_sched.h) */
			cJSON *tr, *sc;
			const cJSON *cpu;
			char q[160];

			t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/tracks", id);
			tr = t_get(q);
			cpu = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(tr, "cpus"), 0);
			assert_non_null(cpu);
			t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/sched?cpu=%" PRId64 "&start=0&end=%" PRId64, id,
			      num(cpu, "cpu"), INT64_MAX);
			sc = t_get(q);
			assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(sc, "slices")) > 0);
			cJSON_Delete(sc);
			cJSON_Delete(tr);
			cpus_seen = 1;
		}
		if (arrows > 0) { /* as the flows endpoint has them, each from where its from-slice ends */
			cJSON *fl, *sl;
			const cJSON *a;
			char q[160];

			t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/flows?start=0&end=%" PRId64, id, INT64_MAX);
			fl = t_get(q);
			a = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(fl, "flows"), 0);
			assert_non_null(a);
			t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/slices/%" PRId64, id, num(a, "from_slice"));
			sl = t_get(q);
			assert_true(num(sl, "dur") >= 0);
			assert_int_equal(num(sl, "ts") + num(sl, "dur"), num(a, "from_ts"));
			cJSON_Delete(sl);
			cJSON_Delete(fl);
		}
	}
	assert_true(slices > 0);
	assert_true(arrows > 0); /* before its end, and no pause */
	assert_true(cpus_seen);  /* so are the cpus' runs */
	assert_int_equal(ls_finish(fd, body, sizeof(body)), 202);
	{
		FILE *f;
		cJSON *t = wait_visible(id, n, "ready");

		assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(t, "stream"), "from_byte"), 0);
		/* (its start may be earlier now: the late begins, at time 0) */
		assert_true(num(t, "start_ns") <= start);
		cJSON_Delete(t);
		t_fmt(path, sizeof(path), "%s/two.fxt", W.root);
		assert_non_null(f = fopen(path, "wb"));
		assert_int_equal(fwrite(s, 1, n, f), n);
		assert_int_equal(fclose(f), 0);
		{
			char cmd[800];

			t_fmt(ref, sizeof(ref), "%s/two.db", W.root);
			t_fmt(cmd, sizeof(cmd), "%s ingest %s -o %s --extent-rows 4096 >/dev/null 2>&1", W.exe, path, ref);
			assert_int_equal(system(cmd), 0);
		}
		trace_db(id, db, sizeof(db));
		same_tables(db, ref);
	}
	free(s);
	su_server_stop(&W.srv, SIGTERM);
	t_start(NULL);
}

/* A stream of two providers that pauses: once it has sent nothing for
 * --live-pause, its view is every byte received, equal to ingesting them
 * as a file, table for table, with the file's time range; when bytes flow
 * again it grows on from there, and a pause shows the whole again. (The
 * old --live-window is still accepted, and changes nothing.) */
static void t_paused_whole(void **state)
{
	size_t n, cuts[3], i, at = 0;
	uint8_t *s = two_providers(&n);
	char ref[200], db[200], path[200], body[2048];
	uint64_t rng = 7;
	int64_t id = 0;
	int fd;

	(void)state;
	cuts[0] = n / 4 + 3;
	cuts[1] = n / 2 + 7;
	cuts[2] = n - 5;
	su_server_stop(&W.srv, SIGTERM);
	{
		const char *extra[] = { "--live-window", "64K", "--live-pause", "200", NULL };

		t_start(extra);
	}
	fd = ls_open("/api/traces?live=1&name=paused-whole", NULL);
	for (i = 0; i < 3; i++) {
		cJSON *t, *tr;
		FILE *f;
		char cmd[800], q[100];

		ls_send_buf(fd, s, at, cuts[i], &rng);
		at = cuts[i];
		if (id == 0)
			id = new_id("paused-whole");
		t = wait_stream(id, at, NULL, 1); /* a paused stream's whole snapshot */
		assert_string_equal(str(t, "status"), "live");
		cJSON_Delete(t);
		t_fmt(path, sizeof(path), "%s/paused-%zu.fxt", W.root, i);
		assert_non_null(f = fopen(path, "wb"));
		assert_int_equal(fwrite(s, 1, at, f), at);
		assert_int_equal(fclose(f), 0);
		t_fmt(ref, sizeof(ref), "%s/paused-%zu.db", W.root, i);
		t_fmt(cmd, sizeof(cmd), "%s ingest %s -o %s --extent-rows 4096 >/dev/null 2>&1", W.exe, path, ref);
		assert_int_equal(system(cmd), 0);
		trace_db(id, db, sizeof(db));
		same_tables(db, ref);
		t_fmt(q, sizeof(q), "/api/traces/%" PRId64, id);
		tr = t_get(q);
		assert_int_equal(num(tr, "start_ns"), prefix_start(s, at));
		cJSON_Delete(tr);
	}
	ls_send_buf(fd, s, at, n, &rng);
	assert_int_equal(ls_finish(fd, body, sizeof(body)), 202);
	cJSON_Delete(wait_visible(id, n, "ready"));
	free(s);
	su_server_stop(&W.srv, SIGTERM);
	t_start(NULL);
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[600];
	FILE *f;
	long n;

	(void)state;
	if (exe == NULL || gen == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	if (realpath(exe, W.exe) == NULL || realpath(gen, W.gen) == NULL)
		return -1;
	snprintf(W.root, sizeof(W.root), "/tmp/test-live-XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	snprintf(W.archive, sizeof(W.archive), "%s/g.fxt", W.root);
	snprintf(cmd, sizeof(cmd), "%s --events 60000 --threads 3 --seed 11 %s >/dev/null", W.gen, W.archive);
	if (system(cmd) != 0 || (f = fopen(W.archive, "rb")) == NULL)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	W.n = (size_t)n;
	if ((W.bytes = malloc(W.n)) == NULL || fread(W.bytes, 1, W.n, f) != W.n) {
		fclose(f);
		return -1;
	}
	fclose(f);
	signal(SIGPIPE, SIG_IGN);
	t_start(NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	su_server_stop(&W.srv, SIGTERM);
	if (getenv("KEEP") == NULL)
		su_rm_tree(W.root);
	free(W.bytes);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_pauses_and_end), cmocka_unit_test(t_dropped), cmocka_unit_test(t_killed),
		cmocka_unit_test(t_refused),        cmocka_unit_test(t_stream_command), cmocka_unit_test(t_token),
		cmocka_unit_test(t_history),         cmocka_unit_test(t_paused_whole),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
