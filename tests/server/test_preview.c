/*
 * A big upload grows in place while it is ingested, over loopback
 * (docs/API.md, "A trace while its bytes arrive"): the real server binary
 * (env TRACE_SERVER) with archives from gen_fxt (env GEN_FXT), the source
 * told to the growing ingest a megabyte every TRACE_SERVER_TEST_INGEST_DELAY_MS
 * so that it can be watched.
 *
 * While a large FXT upload is ingested its trace is read from the
 * database the ingest grows, from the first byte (preview.from_byte 0):
 * every commit whole, slices only ever added, on the trace's own clock;
 * once ready the trace equals the CLI's ingest of the archive with a
 * stream's layout (--extent-rows 4096), out of WAL mode. An upload below
 * --preview-min is ingested in one go and is not readable before it is
 * ready; deleting a trace mid-ingest leaves no file; a server killed
 * mid-ingest ingests it again when it starts, or fails it when its source
 * is gone, leaving no database behind. An upload whose body still arrives
 * grows from its first bytes; one whose client leaves, or whose server is
 * killed, leaves nothing ingested.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "api_util.h"
#include "window_util.h" /* same_tables, t_check_commit */

/* The server's settings: growing for 4 MB and more, the source told a
 * megabyte every 300 ms (the big archive takes about 3 s). */
#define PREVIEW_MIN (4u << 20)
#define DELAY_MS "300"

struct archive {
	char path[160];
	uint8_t *bytes;
	size_t n;
};

struct world {
	char root[64], data[128], log[128], exe[256], gen[256];
	struct archive big;   /* past --preview-min: about 10 MB */
	struct archive small; /* below it: about 1.4 MB */
	const char *const *extra; /* the server's options */
	struct su_server srv;
};
static struct world W;

static void trace_file(int64_t id, const char *file, char *out, size_t n)
{
	t_fmt(out, n, "%s/traces/%" PRId64 "/%s", W.data, id, file);
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Ingests path into out with the CLI (extent_rows: its --extent-rows, 0
 * for none). */
static void cli_ingest(const char *path, const char *out, int extent_rows)
{
	char cmd[800];

	t_fmt(cmd, sizeof(cmd), "%s ingest %s -o %s --extent-rows %d >/dev/null 2>&1", W.exe, path, out, extent_rows);
	if (extent_rows == 0)
		t_fmt(cmd, sizeof(cmd), "%s ingest %s -o %s >/dev/null 2>&1", W.exe, path, out);
	assert_int_equal(system(cmd), 0);
}

/* Uploads a (no wait): the new trace's id. */
static int64_t upload(const struct archive *a, const char *name)
{
	char path[200];
	struct su_req q = { "POST", path, "Content-Type: application/octet-stream\r\n", a->bytes, a->n, 0, 0 };
	struct su_resp r;
	cJSON *j;
	int64_t id;

	t_fmt(path, sizeof(path), "/api/traces?name=%s", name);
	if (su_request(api_port, &q, &r, 60000) != 0 || r.status != 202)
		fail_msg("upload %s: status %d: %.300s", name, r.status, r.body ? r.body : "");
	assert_non_null(j = cJSON_ParseWithLength(r.body, r.body_len));
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

/* The CLI's ingest of the big archive with a stream's layout, which a
 * grown upload of it equals once ready: made once, its path to ref. */
static void big_ref(char *ref, size_t n)
{
	t_fmt(ref, n, "%s/big.db", W.root);
	if (!exists(ref))
		cli_ingest(W.big.path, ref, 4096);
}

/* Trace id, ready, is the big archive's CLI ingest, row for row. */
static void same_as_big(int64_t id)
{
	char ref[200], db[200];

	big_ref(ref, sizeof(ref));
	trace_file(id, "trace.db", db, sizeof(db));
	same_tables(db, ref);
}

static cJSON *trace_obj(int64_t id)
{
	char path[64];

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	return t_get(path);
}

static int is_status(const cJSON *t, const char *status)
{
	const char *s = str(t, "status");

	return s && strcmp(s, status) == 0;
}

/* The trace object once it is ingesting with a commit of fewer bytes than
 * the upload (one made mid-ingest). */
static cJSON *wait_preview(int64_t id, uint64_t size)
{
	double deadline = su_now() + 60;

	while (su_now() < deadline) {
		cJSON *t = trace_obj(id);
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "preview");

		if (is_status(t, "ingesting") && cJSON_IsObject(p) && (uint64_t)num(p, "visible_bytes") < size)
			return t;
		if (is_status(t, "ready") || is_status(t, "failed"))
			fail_msg("trace %" PRId64 " became %s with no commit seen mid-ingest", id, str(t, "status"));
		cJSON_Delete(t);
		su_sleep_ms(20);
	}
	fail_msg("trace %" PRId64 " was never readable mid-ingest", id);
	return NULL;
}

/* The trace object once its status is status. */
static cJSON *wait_status(int64_t id, const char *status)
{
	double deadline = su_now() + 120;

	char last[600] = "";

	while (su_now() < deadline) {
		cJSON *t = trace_obj(id);
		char *text;

		if (is_status(t, status))
			return t;
		if ((text = cJSON_PrintUnformatted(t)) != NULL) /* said if it never does */
			snprintf(last, sizeof(last), "%s", text);
		free(text);
		if (strcmp(status, "failed") != 0 && is_status(t, "failed"))
			fail_msg("trace %" PRId64 " failed instead of becoming %s: %s", id, status, last);
		cJSON_Delete(t);
		su_sleep_ms(50);
	}
	fail_msg("trace %" PRId64 " never became %s: %s", id, status, last);
	return NULL;
}

/* GETs path on the trace: its JSON when 200, NULL when 409 not_ready. */
static cJSON *get_data(const char *path)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	cJSON *j = NULL;

	if (su_request(api_port, &q, &r, 60000) != 0)
		fail_msg("GET %s: no reply (see %s)", path, api_log);
	if (r.status == 200)
		assert_non_null(j = cJSON_ParseWithLength(r.body, r.body_len));
	else if (r.status != 409 || strstr(r.body, "not_ready") == NULL)
		fail_msg("GET %s: status %d: %.300s", path, r.status, r.body ? r.body : "");
	su_resp_free(&r);
	return j;
}

/* The slices of every thread track of a /tracks reply, each asked for. */
static int count_slices(int64_t id, const cJSON *tracks)
{
	const cJSON *p, *th;
	char path[200];
	int n = 0;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(tracks, "processes"))
		cJSON_ArrayForEach(th, cJSON_GetObjectItemCaseSensitive(p, "threads"))
		{
			cJSON *slices;

			if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(th, "track_id")))
				continue; /* a thread without slices (the idle thread of scheduling records) */
			t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, id,
			      num(th, "track_id"));
			if ((slices = get_data(path)) == NULL)
				fail_msg("trace %" PRId64 ": slices not readable while it grows", id);
			n += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(slices, "slices"));
			cJSON_Delete(slices);
		}
	return n;
}

/* The track of the first thread with slices in the trace's /tracks. */
static int64_t first_thread_track(int64_t id)
{
	const cJSON *p, *th;
	char path[200];
	int64_t k = -1;
	cJSON *tracks;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	if ((tracks = get_data(path)) == NULL)
		fail_msg("trace %" PRId64 ": tracks not readable", id);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(tracks, "processes"))
		cJSON_ArrayForEach(th, cJSON_GetObjectItemCaseSensitive(p, "threads"))
			if (k < 0 && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(th, "track_id")))
				k = num(th, "track_id");
	cJSON_Delete(tracks);
	if (k < 0)
		fail_msg("trace %" PRId64 ": no thread track", id);
	return k;
}

/* Reads the growing trace as a client does: tracks, then their slices,
 * both answered (200) and not empty. */
static void read_preview(int64_t id)
{
	char path[200];
	cJSON *tracks;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	if ((tracks = get_data(path)) == NULL)
		fail_msg("trace %" PRId64 ": tracks not readable while it grows", id);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(tracks, "processes")) > 0);
	assert_true(count_slices(id, tracks) > 0);
	cJSON_Delete(tracks);
}

/* ---- the tests ---------------------------------------------------------- */

/* What a reader of the trace's database finds mid-ingest: every commit
 * whole (ingest_util.h), read where the ingest writes it. */
static void check_db(int64_t id)
{
	char db[200];

	trace_file(id, "trace.db", db, sizeof(db));
	t_check_commit(db);
}

/*
 * A big upload grows while it is ingested: readable from its first byte
 * through the API, each commit whole, its slices only added and its start
 * its own; once ready it is the CLI's ingest of the archive with a
 * stream's layout, and its database is out of WAL mode.
 */
static void t_preview(void **state)
{
	char ref[200], db[200], path[200];
	int64_t id = upload(&W.big, "big"), slices = 0, start = -1;
	cJSON *t = wait_preview(id, W.big.n);
	int looks = 0;

	(void)state;
	read_preview(id);
	while (is_status(t, "ingesting")) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "preview");
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(t, "progress");

		if (cJSON_IsObject(p)) {
			int64_t n = num(cJSON_GetObjectItemCaseSensitive(t, "counts"), "slices");

			assert_int_equal(num(p, "from_byte"), 0); /* from its first byte, always */
			assert_true((uint64_t)num(p, "visible_bytes") <= W.big.n);
			assert_true(num(p, "visible_bytes") <= num(g, "bytes_done"));
			assert_true(n >= slices); /* what it showed stays */
			slices = n;
			if (start < 0)
				start = num(t, "start_ns");
			assert_int_equal(num(t, "start_ns"), start); /* the trace's own clock */
			check_db(id);
			looks++;
			if (n > 0) { /* search finds what the commit holds (no name index yet) */
				char q[120];
				cJSON *found;

				t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/search?q=Present&limit=5", id);
				if ((found = get_data(q)) == NULL)
					fail_msg("trace %" PRId64 ": search not readable while it grows", id);
				assert_true(num(found, "total") > 0);
				assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(found, "slices")) > 0);
				cJSON_Delete(found);
				/* and an area over the whole trace adds up the
				 * committed slices (no stored statistics yet) */
				t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/area?tracks=%" PRId64 "&start=0&end=%" PRId64, id,
				      first_thread_track(id), (int64_t)1000000000000000000);
				if ((found = get_data(q)) == NULL)
					fail_msg("trace %" PRId64 ": area not readable while it grows", id);
				assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(found, "names")) > 0);
				cJSON_Delete(found);
				/* and search across traces holds it, as it grows
				 * (or ready, if it became so meanwhile) */
				if ((found = get_data("/api/search?q=present")) == NULL)
					fail_msg("search across traces failed while trace %" PRId64 " grows", id);
				{
					const cJSON *h, *hit = NULL;

					cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(found, "traces"))
						if (num(h, "id") == id)
							hit = h;
					if (hit == NULL) {
						char *all = cJSON_PrintUnformatted(found);

						fail_msg("search across traces does not hold growing trace %" PRId64 ": %s", id,
							 all);
					}
					assert_true(strcmp(str(hit, "status"), "ingesting") == 0 ||
						    strcmp(str(hit, "status"), "ready") == 0);
					assert_true(num(hit, "count") > 0);
				}
				cJSON_Delete(found);
				/* and the logs matched so far */
				t_fmt(q, sizeof(q), "/api/traces/%" PRId64 "/logs?start=0&end=%" PRId64, id,
				      (int64_t)1000000000000000000);
				if ((found = get_data(q)) == NULL)
					fail_msg("trace %" PRId64 ": logs not readable while it grows", id);
				assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(found, "logs")) > 0);
				cJSON_Delete(found);
			}
		}
		cJSON_Delete(t);
		su_sleep_ms(100);
		t = trace_obj(id);
	}
	assert_true(looks >= 3); /* seen growing */
	assert_true(slices > 0);
	cJSON_Delete(t);
	t = wait_status(id, "ready");
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "preview")));
	/* gen_fxt's roots begin at time 0, at the end of the file: the start
	 * may be earlier now */
	assert_true(num(t, "start_ns") <= start);
	cJSON_Delete(t);
	/* its file alone is the whole trace (as a store keeps it): every
	 * commit checkpointed into it, whether or not a reader kept it in WAL
	 * mode (this test's reads may) */
	trace_file(id, "trace.db", path, sizeof(path));
	t_fmt(db, sizeof(db), "%s/big-file.db", W.root);
	{
		char cmd[600];

		t_fmt(cmd, sizeof(cmd), "cp %s %s", path, db);
		assert_int_equal(system(cmd), 0);
	}
	big_ref(ref, sizeof(ref));
	same_tables(db, ref);
	same_tables(path, ref);
}

/* The phase an ingesting trace's progress names: 1 decoding, 2 matching,
 * 3 writing, 4 indexing; 0 none (checks its figures and unit). */
static int phase_of(const cJSON *t)
{
	static const char *const names[] = { "decoding", "matching", "writing", "indexing" };
	static const char *const units[] = { "bytes", "events", "rows", "steps" };
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(t, "progress");
	const char *ph = str(g, "phase");
	int i;

	if (ph == NULL)
		return 0;
	for (i = 0; i < 4 && strcmp(ph, names[i]) != 0; i++)
		;
	assert_true(i < 4);
	assert_string_equal(str(g, "phase_unit"), units[i]);
	assert_true(num(g, "phase_done") <= num(g, "phase_total") || num(g, "phase_total") == 0);
	if (i == 0)
		assert_int_equal(num(g, "phase_done"), num(g, "bytes_done"));
	return i + 1;
}

/* An upload below --preview-min is ingested in one go: never a preview,
 * and its data is not readable (409 not_ready) until it is ready, then
 * with an upload's layout (one extent per group). While it ingests, its
 * progress names the phase (decoding is the slowed one here), and a ready
 * trace names none. */
static void t_small(void **state)
{
	int64_t id = upload(&W.small, "small");
	double deadline = su_now() + 60;
	int ingesting = 0, refused = 0, decoding = 0;
	char tracks[200], ref[200], db[200];

	(void)state;
	t_fmt(tracks, sizeof(tracks), "/api/traces/%" PRId64 "/tracks", id);
	while (su_now() < deadline) {
		cJSON *t = trace_obj(id), *d;
		int ready = is_status(t, "ready");

		assert_false(is_status(t, "failed"));
		assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "preview")));
		ingesting |= is_status(t, "ingesting");
		if (is_status(t, "ingesting"))
			decoding |= phase_of(t) == 1;
		else
			assert_int_equal(phase_of(t), 0);
		cJSON_Delete(t);
		if (ready)
			break;
		if ((d = get_data(tracks)) == NULL) {
			refused = 1;
		} else { /* answered: only once it became ready */
			cJSON_Delete(d);
			t = trace_obj(id);
			assert_true(is_status(t, "ready"));
			cJSON_Delete(t);
		}
		su_sleep_ms(20);
	}
	assert_true(ingesting); /* seen mid-ingest, which lasts 0.6 s at least */
	assert_true(decoding);
	assert_true(refused);
	cJSON_Delete(wait_status(id, "ready"));
	t_fmt(ref, sizeof(ref), "%s/small.db", W.root);
	cli_ingest(W.small.path, ref, 0);
	trace_file(id, "trace.db", db, sizeof(db));
	same_tables(db, ref);
}

/* A trace deleted while it grows: its files all go, its growing database
 * among them, and none comes back. */
static void t_delete(void **state)
{
	int64_t id = upload(&W.big, "deleted");
	char dir[200], path[200];
	double deadline;

	(void)state;
	cJSON_Delete(wait_preview(id, W.big.n));
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	cJSON_Delete(t_call("DELETE", path, NULL, 204));
	t_fmt(dir, sizeof(dir), "%s/traces/%" PRId64, W.data, id);
	deadline = su_now() + 30;
	while (exists(dir) && su_now() < deadline)
		su_sleep_ms(50);
	if (exists(dir))
		fail_msg("trace %" PRId64 "'s directory is still there after its deletion", id);
	su_sleep_ms(1500); /* a commit's time: none made after the deletion */
	trace_file(id, "trace.db", path, sizeof(path));
	assert_false(exists(path));
	assert_false(exists(dir));
}

/* A server killed while an upload grows: started again, it ingests the
 * upload again from its first byte, and the trace ends as the CLI's
 * ingest of it; nothing is corrupt. */
static void t_killed(void **state)
{
	int64_t id = upload(&W.big, "killed");
	cJSON *t;

	(void)state;
	cJSON_Delete(wait_preview(id, W.big.n));
	su_server_stop(&W.srv, SIGKILL);
	api_start(&W.srv, W.exe, W.data, W.log, W.extra);
	t = wait_status(id, "ready");
	assert_int_equal(num(t, "size_bytes"), W.big.n);
	cJSON_Delete(t);
	same_as_big(id);
}

/* A server killed while an upload grows, and whose upload is gone when it
 * starts again: the trace fails (source_lost) and the database the killed
 * ingest left is removed at the start, never read. */
static void t_restart(void **state)
{
	int64_t id = upload(&W.big, "lost");
	char path[200], tracks[200];
	cJSON *t;

	(void)state;
	cJSON_Delete(wait_preview(id, W.big.n));
	su_server_stop(&W.srv, SIGKILL);
	trace_file(id, "trace.db", path, sizeof(path));
	assert_true(exists(path)); /* what the killed server left */
	trace_file(id, "source", tracks, sizeof(tracks));
	assert_int_equal(unlink(tracks), 0);
	api_start(&W.srv, W.exe, W.data, W.log, W.extra);
	t = wait_status(id, "failed");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "error"), "code"), "source_lost");
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "preview")));
	cJSON_Delete(t);
	assert_false(exists(path));
	t_fmt(tracks, sizeof(tracks), "/api/traces/%" PRId64 "/tracks", id);
	t_error("GET", tracks, NULL, 409, "not_ready");
}

/* ---- an upload whose body still arrives ------------------------------- */

/* Starts POSTing body b (n bytes of Content-Type type) to /api/traces with
 * query on a connection of its own: the request's head and b's first
 * `first` bytes; the connection. */
static int post_begin(const char *query, const char *type, const uint8_t *b, size_t n, size_t first)
{
	char head[400];
	int fd = su_connect(api_port);
	size_t sent = 0;

	assert_true(fd >= 0);
	t_fmt(head, sizeof(head),
	      "POST /api/traces%s HTTP/1.1\r\nHost: localhost\r\nContent-Type: %s\r\n"
	      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	      query, type, n);
	assert_int_equal(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
	while (sent < first) {
		ssize_t k = send(fd, b + sent, first - sent, MSG_NOSIGNAL);

		assert_true(k > 0);
		sent += (size_t)k;
	}
	return fd;
}

/* Sends the rest of b (n bytes) from byte `from` and reads the reply. */
static void post_end(int fd, const uint8_t *b, size_t n, size_t from, struct su_resp *r)
{
	struct su_buf in = { 0 };
	char tmp[4096];
	ssize_t k;

	while (from < n) {
		k = send(fd, b + from, n - from, MSG_NOSIGNAL);
		assert_true(k > 0);
		from += (size_t)k;
	}
	while ((k = recv(fd, tmp, sizeof(tmp), 0)) > 0)
		assert_int_equal(su_buf_add(&in, tmp, (size_t)k), 0);
	close(fd);
	memset(r, 0, sizeof(*r));
	assert_int_equal(su_parse(&in, 1, 0, r), 1);
	free(in.p);
}

/* Starts uploading a as a raw body named name (post_begin). */
static int arrive_begin(const struct archive *a, const char *name, size_t first)
{
	char query[200];

	t_fmt(query, sizeof(query), "?name=%s", name);
	return post_begin(query, "application/octet-stream", a->bytes, a->n, first);
}

/* Sends the rest of a from byte `from` and reads the reply: the id it gives. */
static int64_t arrive_end(int fd, const struct archive *a, size_t from)
{
	struct su_resp r;
	int64_t id;
	cJSON *j;

	post_end(fd, a->bytes, a->n, from, &r);
	if (r.status != 202)
		fail_msg("the upload ended with status %d: %.300s", r.status, r.body ? r.body : "");
	assert_non_null(j = cJSON_ParseWithLength(r.body, r.body_len));
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	return id;
}

/* The status of GET path. */
static int get_status(const char *path)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	int st;

	if (su_request(api_port, &q, &r, 10000) != 0)
		return -1;
	st = r.status;
	su_resp_free(&r);
	return st;
}

/* The id of the trace named name, once listed. */
static int64_t wait_named(const char *name)
{
	double deadline = su_now() + 30;

	while (su_now() < deadline) {
		cJSON *l = t_get("/api/traces?limit=200"), *t;
		int64_t id = 0;

		cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(l, "traces"))
			if (str(t, "name") && strcmp(str(t, "name"), name) == 0)
				id = num(t, "id");
		cJSON_Delete(l);
		if (id > 0)
			return id;
		su_sleep_ms(20);
	}
	fail_msg("no trace named %s was listed while its upload arrived", name);
	return 0;
}

/*
 * A big upload grows from its first bytes: listed with its whole length
 * before its body ended, readable from byte 0 with no more than what
 * arrived, and once the rest came and it is ready, the CLI's ingest of it.
 */
static void t_arriving(void **state)
{
	size_t first = W.big.n * 6 / 10;
	int fd = arrive_begin(&W.big, "arriving", first);
	int64_t id = wait_named("arriving");
	cJSON *t;
	int i;

	(void)state;
	t = trace_obj(id);
	assert_true(is_status(t, "queued") || is_status(t, "ingesting"));
	assert_int_equal(num(t, "size_bytes"), W.big.n); /* its whole length, said by the request */
	cJSON_Delete(t);
	t = wait_preview(id, first);
	cJSON_Delete(t);
	read_preview(id);
	for (i = 0; i < 5; i++) { /* nothing past what arrived is read */
		const cJSON *g;

		t = trace_obj(id);
		assert_true(is_status(t, "ingesting"));
		g = cJSON_GetObjectItemCaseSensitive(t, "progress");
		assert_true((uint64_t)num(g, "bytes_done") <= first);
		assert_int_equal(num(g, "bytes_total"), W.big.n);
		assert_true((uint64_t)num(cJSON_GetObjectItemCaseSensitive(t, "preview"), "visible_bytes") <= first);
		cJSON_Delete(t);
		check_db(id);
		su_sleep_ms(100);
	}
	assert_int_equal(arrive_end(fd, &W.big, first), id);
	cJSON_Delete(wait_status(id, "ready"));
	same_as_big(id);
}

/* A client that goes away mid-upload leaves nothing: the trace recorded
 * at its first bytes is deleted, its files with it. */
static void t_arriving_left(void **state)
{
	int fd = arrive_begin(&W.big, "left", W.big.n / 2);
	int64_t id = wait_named("left");
	char dir[200], path[64];
	double deadline;

	(void)state;
	cJSON_Delete(wait_preview(id, W.big.n / 2));
	close(fd);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	t_fmt(dir, sizeof(dir), "%s/traces/%" PRId64, W.data, id);
	deadline = su_now() + 30;
	while ((exists(dir) || get_status(path) != 404) && su_now() < deadline)
		su_sleep_ms(50);
	t_error("GET", path, NULL, 404, "not_found");
	assert_false(exists(dir));
}

/* A server killed mid-upload: started again, it fails the trace whose
 * body never ended (upload_incomplete), and ingests nothing of it. */
static void t_arriving_killed(void **state)
{
	int fd = arrive_begin(&W.big, "cut", W.big.n / 2);
	int64_t id = wait_named("cut");
	char path[200];
	cJSON *t;

	(void)state;
	su_server_stop(&W.srv, SIGKILL);
	close(fd);
	api_start(&W.srv, W.exe, W.data, W.log, W.extra);
	t = wait_status(id, "failed");
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(t, "error"), "code"), "upload_incomplete");
	cJSON_Delete(t);
	trace_file(id, "trace.db", path, sizeof(path));
	assert_false(exists(path));
}

/* ---- a form whose file field grows -------------------------------------- */

#define FORM_BOUNDARY "----growing-form-7f3a"
#define FORM_TYPE "multipart/form-data; boundary=" FORM_BOUNDARY

/* A multipart/form-data body: the fields `before` (name, value, ...;
 * NULL-terminated), the field "file" holding a's bytes, then the fields
 * `after`. Its length in *n; *file_at where the file's bytes begin in it. */
static uint8_t *form_body(const struct archive *a, const char *const *before, const char *const *after, size_t *n,
			  size_t *file_at)
{
	char head[1200], tail[1200];
	size_t hn = 0, tn = 0;
	uint8_t *b;

	for (; before[0] != NULL; before += 2)
		hn += (size_t)snprintf(head + hn, sizeof(head) - hn,
				       "--" FORM_BOUNDARY "\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n",
				       before[0], before[1]);
	hn += (size_t)snprintf(head + hn, sizeof(head) - hn,
			       "--" FORM_BOUNDARY "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.fxt\"\r\n"
			       "Content-Type: application/octet-stream\r\n\r\n");
	assert_true(hn < sizeof(head));
	for (; after[0] != NULL; after += 2)
		tn += (size_t)snprintf(tail + tn, sizeof(tail) - tn,
				       "\r\n--" FORM_BOUNDARY "\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s",
				       after[0], after[1]);
	tn += (size_t)snprintf(tail + tn, sizeof(tail) - tn, "\r\n--" FORM_BOUNDARY "--\r\n");
	assert_true(tn < sizeof(tail));
	assert_non_null(b = malloc(hn + a->n + tn));
	memcpy(b, head, hn);
	memcpy(b + hn, a->bytes, a->n);
	memcpy(b + hn + a->n, tail, tn);
	*n = hn + a->n + tn;
	*file_at = hn;
	return b;
}

/*
 * A big form upload grows from its file field's first bytes, as a raw one
 * does: listed under the name of the fields before its file, with the
 * body's length, while it arrives, readable from byte 0; once its body
 * ended, the fields after the file apply (the last name, a description, a
 * label beside the one before), its size is the file's, and ready it is
 * the CLI's ingest of the file.
 */
static void t_arriving_form(void **state)
{
	static const char *const before[] = { "label", "before=file", "name", "form-early", NULL };
	static const char *const after[] = { "name", "form-grown", "description", "after the file",
					     "label", "after=file", NULL };
	size_t n, at, first;
	uint8_t *b = form_body(&W.big, before, after, &n, &at);
	const cJSON *labels;
	struct su_resp r;
	int64_t id;
	cJSON *t, *j;
	int fd;

	(void)state;
	first = at + W.big.n * 6 / 10;
	fd = post_begin("", FORM_TYPE, b, n, first);
	id = wait_named("form-early"); /* the name after the file has not come yet */
	t = trace_obj(id);
	assert_true(is_status(t, "queued") || is_status(t, "ingesting"));
	assert_int_equal(num(t, "size_bytes"), n); /* the body's length, until it ends */
	cJSON_Delete(t);
	t = wait_preview(id, W.big.n * 6 / 10);
	assert_true((uint64_t)num(cJSON_GetObjectItemCaseSensitive(t, "preview"), "visible_bytes") <= W.big.n * 6 / 10);
	cJSON_Delete(t);
	read_preview(id);
	check_db(id);
	post_end(fd, b, n, first, &r);
	if (r.status != 202)
		fail_msg("the form upload ended with status %d: %.300s", r.status, r.body ? r.body : "");
	assert_non_null(j = cJSON_ParseWithLength(r.body, r.body_len));
	assert_int_equal(num(j, "id"), id);
	cJSON_Delete(j);
	su_resp_free(&r);
	t = wait_status(id, "ready");
	assert_string_equal(str(t, "name"), "form-grown");
	assert_string_equal(str(t, "description"), "after the file");
	assert_int_equal(num(t, "size_bytes"), W.big.n);
	labels = cJSON_GetObjectItemCaseSensitive(t, "labels");
	assert_string_equal(str(labels, "before"), "file");
	assert_string_equal(str(labels, "after"), "file");
	cJSON_Delete(t);
	same_as_big(id);
	free(b);
}

/* A form whose fields after its file are refused (a bad label) is
 * answered as an upload's would be, and leaves nothing: the trace it grew
 * is deleted. */
static void t_arriving_form_bad(void **state)
{
	static const char *const before[] = { NULL };
	static const char *const after[] = { "label", "no equals sign", NULL };
	size_t n, at;
	uint8_t *b = form_body(&W.big, before, after, &n, &at);
	char path[64];
	struct su_resp r;
	double deadline;
	int64_t id;
	int fd;

	(void)state;
	fd = post_begin("?name=form-bad", FORM_TYPE, b, n, at + W.big.n / 2);
	id = wait_named("form-bad"); /* ?name= */
	post_end(fd, b, n, at + W.big.n / 2, &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "bad_label"));
	su_resp_free(&r);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	deadline = su_now() + 30;
	while (get_status(path) != 404 && su_now() < deadline)
		su_sleep_ms(50);
	t_error("GET", path, NULL, 404, "not_found");
	free(b);
}

/* ---- the world ---------------------------------------------------------- */

static int make_archive(struct archive *a, const char *name, const char *args)
{
	char cmd[700];
	FILE *f;
	long n;

	snprintf(a->path, sizeof(a->path), "%s/%s.fxt", W.root, name);
	snprintf(cmd, sizeof(cmd), "%s %s %s >/dev/null", W.gen, args, a->path);
	if (system(cmd) != 0 || (f = fopen(a->path, "rb")) == NULL)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	a->n = (size_t)n;
	if ((a->bytes = malloc(a->n)) == NULL || fread(a->bytes, 1, a->n, f) != a->n) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	static const char *const extra[] = { "--preview-min", "4M", NULL };

	(void)state;
	if (exe == NULL || gen == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	if (realpath(exe, W.exe) == NULL || realpath(gen, W.gen) == NULL)
		return -1;
	snprintf(W.root, sizeof(W.root), "/tmp/test-preview-XXXXXX");
	if (mkdtemp(W.root) == NULL)
		return -1;
	snprintf(W.data, sizeof(W.data), "%s/data", W.root);
	snprintf(W.log, sizeof(W.log), "%s/server.log", W.root);
	if (make_archive(&W.big, "big", "--events 400000 --threads 4 --seed 5") != 0 ||
	    make_archive(&W.small, "small", "--events 60000 --threads 3 --seed 11") != 0)
		return -1;
	if (W.big.n < PREVIEW_MIN + (4u << 20) || W.small.n >= PREVIEW_MIN) {
		fprintf(stderr, "the archives' sizes (%zu, %zu) do not suit the test\n", W.big.n, W.small.n);
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	setenv("TRACE_SERVER_TEST_INGEST_DELAY_MS", DELAY_MS, 1);
	W.extra = extra;
	api_start(&W.srv, W.exe, W.data, W.log, W.extra);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	su_server_stop(&W.srv, SIGTERM);
	if (getenv("KEEP") == NULL)
		su_rm_tree(W.root);
	free(W.big.bytes);
	free(W.small.bytes);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_preview),
		cmocka_unit_test(t_small),
		cmocka_unit_test(t_delete),
		cmocka_unit_test(t_killed),
		cmocka_unit_test(t_restart),
		cmocka_unit_test(t_arriving),
		cmocka_unit_test(t_arriving_left),
		cmocka_unit_test(t_arriving_killed),
		cmocka_unit_test(t_arriving_form),
		cmocka_unit_test(t_arriving_form_bad),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
