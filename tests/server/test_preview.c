/*
 * Previews over loopback (docs/API.md "Previews"): the real server binary
 * (env TRACE_SERVER) with archives from gen_fxt (env GEN_FXT), its ingest
 * slowed by TRACE_SERVER_TEST_INGEST_DELAY_MS so that it can be watched.
 *
 * While a large FXT upload is ingested the trace's data is read from its
 * preview, which must hold exactly what ingesting its window's input as a
 * file gives (every table, window_util.h); once ready, the trace is the
 * whole archive's and the preview's file is gone. An upload below
 * --preview-min never has one; deleting a trace mid-ingest leaves no file,
 * nor does a server killed mid-ingest once it starts again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "api_util.h"
#include "window_util.h"

/* The server's settings: a preview for 4 MB and more, a window of 512 KB,
 * an ingest pausing 300 ms a megabyte (the big archive takes about 3 s). */
#define PREVIEW_MIN (4u << 20)
#define WINDOW (512u << 10)
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

static void write_file(const char *path, const uint8_t *p, size_t n)
{
	FILE *f;

	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Copies from to to; 0, or -1 when from cannot be read (it went). */
static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out;
	char buf[65536];
	size_t k;

	if (in == NULL)
		return -1;
	assert_non_null(out = fopen(to, "wb"));
	while ((k = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, k, out), k);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	return 0;
}

/* Ingests path into out with the CLI. */
static void cli_ingest(const char *path, const char *out)
{
	char cmd[800];

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

/* The trace object once it is ingesting with a preview of fewer bytes
 * than the upload (one made mid-ingest). */
static cJSON *wait_preview(int64_t id, uint64_t size)
{
	double deadline = su_now() + 60;

	while (su_now() < deadline) {
		cJSON *t = trace_obj(id);
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "preview");

		if (is_status(t, "ingesting") && cJSON_IsObject(p) && (uint64_t)num(p, "visible_bytes") < size)
			return t;
		if (is_status(t, "ready") || is_status(t, "failed"))
			fail_msg("trace %" PRId64 " became %s with no preview seen", id, str(t, "status"));
		cJSON_Delete(t);
		su_sleep_ms(20);
	}
	fail_msg("trace %" PRId64 " never had a preview", id);
	return NULL;
}

/* The trace object once its status is status. */
static cJSON *wait_status(int64_t id, const char *status)
{
	double deadline = su_now() + 120;

	while (su_now() < deadline) {
		cJSON *t = trace_obj(id);

		if (is_status(t, status))
			return t;
		cJSON_Delete(t);
		su_sleep_ms(50);
	}
	fail_msg("trace %" PRId64 " never became %s", id, status);
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

			t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64, id,
			      num(th, "track_id"));
			if ((slices = get_data(path)) == NULL)
				fail_msg("trace %" PRId64 ": slices not readable while it has a preview", id);
			n += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(slices, "slices"));
			cJSON_Delete(slices);
		}
	return n;
}

/* Reads the preview as a client does: tracks, then their slices, both
 * answered (200) and not empty. */
static void read_preview(int64_t id)
{
	char path[200];
	cJSON *tracks;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	if ((tracks = get_data(path)) == NULL)
		fail_msg("trace %" PRId64 ": tracks not readable while it has a preview", id);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(tracks, "processes")) > 0);
	assert_true(count_slices(id, tracks) > 0);
	cJSON_Delete(tracks);
}

/*
 * A copy (at out) of the preview the trace object t describes: copied,
 * then the trace asked again; the copy is that preview when the trace
 * still shows the same one (a new one is renamed into place with the
 * record's change, under one lock). Returns the trace object the copy
 * belongs to, or NULL when the preview changed or ended meanwhile.
 */
static cJSON *copy_preview(int64_t id, const cJSON *t, const char *out)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "preview"), *q;
	char path[200];
	cJSON *again;

	trace_file(id, "preview.db", path, sizeof(path));
	if (copy_file(path, out) != 0)
		return NULL;
	again = trace_obj(id);
	q = cJSON_GetObjectItemCaseSensitive(again, "preview");
	if (is_status(again, "ingesting") && cJSON_IsObject(q) && num(q, "visible_bytes") == num(p, "visible_bytes") &&
	    num(q, "from_byte") == num(p, "from_byte"))
		return again;
	cJSON_Delete(again);
	return NULL;
}

/* ---- the tests ---------------------------------------------------------- */

/*
 * A big upload: a preview appears while it is ingested, its window within
 * the bytes ingest has read and at most WINDOW long, readable through the
 * API, and holding exactly what the CLI makes of its window's input; once
 * ready the trace is the whole archive's, and the preview is gone.
 */
static void t_preview(void **state)
{
	uint8_t *in = malloc(2 * W.big.n + 4096);
	char copy[200], ref[200], path[200], db[200];
	int64_t id = upload(&W.big, "big");
	cJSON *t = wait_preview(id, W.big.n), *same = NULL;
	uint64_t visible = 0, from = 0;
	int tries;
	size_t k;

	(void)state;
	assert_non_null(in);
	read_preview(id);
	t_fmt(copy, sizeof(copy), "%s/preview-copy.db", W.root);
	for (tries = 0; tries < 20 && same == NULL; tries++) {
		if ((same = copy_preview(id, t, copy)) == NULL) {
			cJSON_Delete(t);
			t = wait_preview(id, W.big.n);
		}
	}
	if (same == NULL)
		fail_msg("trace %" PRId64 ": no preview stayed put for its copy", id);
	{
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(same, "preview");
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(same, "progress");

		visible = (uint64_t)num(p, "visible_bytes");
		from = (uint64_t)num(p, "from_byte");
		assert_true(visible > 0 && visible < W.big.n);
		assert_true(visible <= (uint64_t)num(g, "bytes_done")); /* what ingest has read */
		assert_true(from > 0);             /* far past the window: a window */
		assert_true(from < visible);
		assert_true(from + WINDOW >= visible); /* of at most WINDOW bytes */
		assert_int_equal(num(same, "size_bytes"), W.big.n);
	}
	cJSON_Delete(t);
	cJSON_Delete(same);
	k = window_input(W.big.bytes, (size_t)from, (size_t)visible, in);
	t_fmt(path, sizeof(path), "%s/window.fxt", W.root);
	write_file(path, in, k);
	t_fmt(ref, sizeof(ref), "%s/window.db", W.root);
	cli_ingest(path, ref);
	same_tables(copy, ref);

	t = wait_status(id, "ready");
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "preview")));
	cJSON_Delete(t);
	trace_file(id, "preview.db", path, sizeof(path));
	assert_false(exists(path));
	trace_file(id, "preview-new.db", path, sizeof(path));
	assert_false(exists(path));
	t_fmt(ref, sizeof(ref), "%s/big.db", W.root);
	cli_ingest(W.big.path, ref);
	trace_file(id, "trace.db", db, sizeof(db));
	same_tables(db, ref);
	free(in);
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

/* An upload below --preview-min: never a preview, and its data is not
 * readable (409 not_ready) until it is ready. While it ingests, its
 * progress names the phase (decoding is the slowed one here), and a ready
 * trace names none. */
static void t_small(void **state)
{
	int64_t id = upload(&W.small, "small");
	double deadline = su_now() + 60;
	int ingesting = 0, refused = 0, decoding = 0;
	char path[200], tracks[200];

	(void)state;
	trace_file(id, "preview.db", path, sizeof(path));
	t_fmt(tracks, sizeof(tracks), "/api/traces/%" PRId64 "/tracks", id);
	while (su_now() < deadline) {
		cJSON *t = trace_obj(id), *d;
		int ready = is_status(t, "ready");

		assert_false(is_status(t, "failed"));
		assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "preview")));
		assert_false(exists(path));
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
}

/* A trace deleted while a preview of it exists: its files all go, the
 * preview's among them, and none comes back. */
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
	su_sleep_ms(1500); /* a preview's time: none made after the deletion */
	trace_file(id, "preview.db", path, sizeof(path));
	assert_false(exists(path));
	assert_false(exists(dir));
}

/* A server killed while a preview exists, and whose upload is gone when it
 * starts again: the trace fails (source_lost) and the preview left on disk
 * is removed at the start, never read. */
static void t_restart(void **state)
{
	int64_t id = upload(&W.big, "killed");
	char path[200], tracks[200];
	cJSON *t;

	(void)state;
	cJSON_Delete(wait_preview(id, W.big.n));
	su_server_stop(&W.srv, SIGKILL);
	trace_file(id, "preview.db", path, sizeof(path));
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
	static const char *const extra[] = { "--preview-min", "4M", "--live-window", "512K", NULL };

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
	if (W.big.n < PREVIEW_MIN + 4 * WINDOW || W.small.n >= PREVIEW_MIN) {
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
		cmocka_unit_test(t_restart),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
