/*
 * `trace-server migrate` (catalog/migrate.c): a --data library of three
 * traces (labels, a description, a pin; one's source uncompressed, as an
 * older server kept it) moved into PostgreSQL and s3rver,
 * then served by a server on the shared catalog and store with the
 * replies the library's own server gave: the same ids, names, labels,
 * status, what ingest found, the same data and search. A second run
 * skips everything; a library whose ids the target holds for other traces
 * is refused with nothing written; a new upload takes a new id.
 *
 * Env: TRACE_SERVER, GEN_FXT, PG_SH; node and the npm packages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <inttypes.h>

#include "scale_util.h"

enum { NTRACES = 3 };

static struct {
	struct scale w;
	char fxt[NTRACES][128];
	int64_t id[NTRACES];
	char *before[NTRACES][3]; /* trace object, tracks, slices of track 1 */
	char *search;             /* /api/search?q=frame */
	char *notes;              /* /api/traces/{id[0]}/notes */
} T;

/* GET path, parsed, without what a store counts differently (the
 * directory counts disk blocks, the store bytes); printed, caller frees. */
static char *trace_object(int64_t id)
{
	char path[96], *s;
	cJSON *j;

	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
	j = t_get(path);
	cJSON_DeleteItemFromObjectCaseSensitive(j, "stored_bytes");
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

static void replies(int64_t id, char *out[3])
{
	char path[160];

	out[0] = trace_object(id);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	out[1] = sc_body(path, 200, NULL);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=1&limit=300", id);
	out[2] = sc_body(path, 200, NULL);
}

/* Runs `trace-server migrate --from from` against the shared stores; its
 * exit status, its output in out (caller frees). */
static int migrate(const char *from, char **out)
{
	char cmd[1024], buf[4096];
	struct su_buf b = { 0 };
	FILE *p;
	size_t n;
	int rc;

	t_fmt(cmd, sizeof(cmd), "'%s' migrate --from '%s' --catalog '%s' --store '%s' 2>&1", T.w.exe, from,
	      T.w.pg_url, T.w.store_url);
	p = popen(cmd, "r");
	assert_non_null(p);
	su_buf_add(&b, "", 0);
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		su_buf_add(&b, buf, n);
	rc = pclose(p);
	*out = b.p;
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int64_t upload(int k)
{
	char path[96];
	struct su_req q = { "POST", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	size_t len;
	char *body = sc_read_file(T.fxt[k], &len);
	cJSON *j;
	int64_t id;

	t_fmt(path, sizeof(path), "/api/traces?wait=1&name=lib-%d", k);
	q.body = body;
	q.body_len = len;
	assert_int_equal(su_request(api_port, &q, &r, 120000), 0);
	if (r.status != 201)
		fail_msg("upload %d: %d %.300s", k, r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	id = num(j, "id");
	cJSON_Delete(j);
	su_resp_free(&r);
	free(body);
	return id;
}

/* Trace id's source as a library written before sources were kept
 * compressed holds it: the uploaded file fxt as "source", no source.zst. */
static void old_source(int64_t id, const char *fxt)
{
	char cmd[1024];

	t_fmt(cmd, sizeof(cmd), "cd '%s/traces/%" PRId64 "' && test -f source.zst && rm source.zst && cp '%s' source",
	      T.w.emb_data, id, fxt);
	assert_int_equal(system(cmd), 0);
}

/* Every trace's source is in the store compressed alone, and downloads
 * through the server as it was uploaded (the old library's one was
 * compressed on its way). */
static void sources_moved(void)
{
	char prefix[64], want[96], path[96], *keys, *body, *bytes;
	size_t n, len;
	int k;

	for (k = 0; k < NTRACES; k++) {
		t_fmt(prefix, sizeof(prefix), "lib/traces/%" PRId64 "/", T.id[k]);
		keys = sc_bucket_keys(&T.w, prefix);
		t_fmt(want, sizeof(want), "%ssource.zst\n", prefix);
		if (strstr(keys, want) == NULL)
			fail_msg("trace %" PRId64 ": no source.zst in the store: %s", T.id[k], keys);
		t_fmt(want, sizeof(want), "%ssource\n", prefix);
		if (strstr(keys, want) != NULL)
			fail_msg("trace %" PRId64 ": an uncompressed source in the store: %s", T.id[k], keys);
		free(keys);
		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/file", T.id[k]);
		body = sc_body(path, 200, &n);
		bytes = sc_read_file(T.fxt[k], &len);
		assert_int_equal(n, len);
		assert_memory_equal(body, bytes, len);
		free(body);
		free(bytes);
	}
}

/* The library under the embedded server: three traces, labelled, one
 * pinned and described; its replies kept. Trace 2's source is then made
 * as an older server kept it (uncompressed). */
static void t_library(void **state)
{
	char path[96];
	int k;

	(void)state;
	sc_embedded_start(&T.w);
	for (k = 0; k < NTRACES; k++)
		T.id[k] = upload(k);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, T.id[0]);
	cJSON_Delete(t_call("PATCH", path, "{\"labels\":{\"team\":\"a\",\"run\":\"7\"},\"pinned\":true,"
				       "\"description\":\"the first\"}", 200));
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, T.id[2]);
	cJSON_Delete(t_call("PATCH", path, "{\"labels\":{\"team\":\"b\"},\"name\":\"renamed\"}", 200));
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", T.id[0]);
	cJSON_Delete(t_call("POST", path, "{\"text\":\"the whole run\",\"author\":\"ana\"}", 201));
	cJSON_Delete(t_call("POST", path, "{\"text\":\"its first slice\",\"slice_id\":1}", 201));
	T.notes = sc_body(path, 200, NULL);
	for (k = 0; k < NTRACES; k++)
		replies(T.id[k], T.before[k]);
	assert_non_null(strstr(T.before[0][0], "\"notes\":2"));
	assert_non_null(strstr(T.before[0][0], "\"pinned\":true"));
	assert_non_null(strstr(T.before[0][0], "\"team\":\"a\""));
	T.search = sc_body("/api/search?q=frame", 200, NULL);
	assert_non_null(strstr(T.search, "\"renamed\"")); /* it finds names in the traces */
	assert_int_equal(su_server_stop(&T.w.emb, SIGTERM), 0);
	old_source(T.id[1], T.fxt[1]);
}

static void t_migrate_and_serve(void **state)
{
	char *out, *after[3], *s;
	int k, i;

	(void)state;
	assert_int_equal(migrate(T.w.emb_data, &out), 0);
	if (strstr(out, "3 migrated, 0 skipped") == NULL)
		fail_msg("migrate said: %s", out);
	free(out);
	assert_int_equal(sc_bucket_count(&T.w, "lib/"), 2 * NTRACES); /* a source.zst and a trace.db each */
	sc_server_start(&T.w, 0);
	sources_moved();
	for (k = 0; k < NTRACES; k++) {
		replies(T.id[k], after);
		for (i = 0; i < 3; i++) {
			if (strcmp(after[i], T.before[k][i]) != 0)
				fail_msg("trace %" PRId64 " after the move: %.400s\nbefore: %.400s", T.id[k], after[i],
					 T.before[k][i]);
			free(after[i]);
		}
	}
	s = sc_body("/api/search?q=frame", 200, NULL);
	assert_string_equal(s, T.search);
	free(s);
	{ /* notes move with their trace (into an empty catalog: the same ids) */
		char path[96];

		t_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/notes", T.id[0]);
		s = sc_body(path, 200, NULL);
		assert_string_equal(s, T.notes);
		free(s);
	}
	sc_health_all_n(&T.w, 1, 200, 2000);
}

static void t_twice(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(migrate(T.w.emb_data, &out), 0);
	if (strstr(out, "0 migrated, 3 skipped") == NULL || strstr(out, "skipped, already in the catalog") == NULL)
		fail_msg("the second run said: %s", out);
	free(out);
	assert_int_equal(sc_bucket_count(&T.w, "lib/"), 2 * NTRACES);
}

/* Another library, its trace 1 not the migrated one: refused, nothing
 * written; then a new upload takes an id after every migrated one. */
static void t_refused_and_new_ids(void **state)
{
	char other[192], *out, path[96];
	struct su_server s;
	int64_t id;
	cJSON *j;

	(void)state;
	t_fmt(other, sizeof(other), "%s/other", T.w.root);
	su_sleep_ms(1100); /* another second: its trace is created at another time */
	api_start(&s, T.w.exe, other, T.w.emb_log, NULL);
	assert_int_equal(upload(1), T.id[0]);
	assert_int_equal(su_server_stop(&s, SIGTERM), 0);
	assert_int_equal(migrate(other, &out), 1);
	if (strstr(out, "already holds another trace with id") == NULL)
		fail_msg("migrate said: %s", out);
	free(out);
	sc_use(&T.w, 0);
	j = t_get("/api/traces");
	assert_int_equal(num(j, "total"), NTRACES);
	cJSON_Delete(j);
	assert_int_equal(sc_bucket_count(&T.w, "lib/"), 2 * NTRACES);
	id = upload(0);
	assert_true(id > T.id[NTRACES - 1]);
	t_fmt(path, sizeof(path), "/api/traces/%" PRId64, T.id[0]);
	free(sc_body(path, 200, NULL));
}

static int setup(void **state)
{
	const char *exe = getenv("TRACE_SERVER"), *gen = getenv("GEN_FXT");
	char cmd[512], root[64];
	int k;

	(void)state;
	if (exe == NULL || gen == NULL) {
		fprintf(stderr, "set TRACE_SERVER and GEN_FXT\n");
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (sc_setup_stores(&T.w, exe, NULL) != 0)
		return -1;
	snprintf(root, sizeof(root), "%s", T.w.root); /* a copy: GCC sees T's members overlap */
	for (k = 0; k < NTRACES; k++) {
		snprintf(T.fxt[k], sizeof(T.fxt[k]), "%s/t%d.fxt", root, k);
		snprintf(cmd, sizeof(cmd), "%s --events %d --threads 3 --seed %d %s >/dev/null", gen, 3000 + 1000 * k,
			 40 + k, T.fxt[k]);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	int k, i;

	(void)state;
	sc_teardown(&T.w, getenv("KEEP") != NULL);
	for (k = 0; k < NTRACES; k++)
		for (i = 0; i < 3; i++)
			free(T.before[k][i]);
	free(T.search);
	free(T.notes);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_library),
		cmocka_unit_test(t_migrate_and_serve),
		cmocka_unit_test(t_twice),
		cmocka_unit_test(t_refused_and_new_ids),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
