/*
 * The storage interface's contract (catalog/storage.h), run against every
 * backend: the data directory, and an S3-compatible store (s3rver, started
 * here on a loopback port from tests/store/s3rver.mjs). What one backend
 * does, the other must do too: put, fetch, publish, usage, remove, drop, prune, a file
 * that is not there. The S3 backend has more to prove: files of 0 bytes,
 * of exactly one part, of two and of more than ten parts come back from
 * the store byte for byte after the cache lost them; a store killed gives
 * clean errors (-2) and cached files stay readable; the cache keeps within
 * its bound, least recently used out first, and never evicts a file in
 * its grace.
 *
 * Needs node and the npm packages (make deps-e2e); S3RVER names the
 * script (default tests/store/s3rver.mjs, run from the repository root).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../catalog/storage.h"
#include "../../store/s3.h"
#include "../server_util.h"
#include "s3rver_util.h"

#define PART ((uint64_t)64 << 10) /* small parts, so that eleven of them stay small */

static char g_work[256];     /* this run's scratch directory */
static struct s3rver g_store; /* the test store, restarted on its port */
static int g_serial;         /* makes each backend's directory new */

static void store_start(void)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/s3rver", g_work);
	if (s3rver_start(&g_store, dir, "traces", g_store.port) != 0)
		fail_msg("s3rver did not start (node and `make deps-e2e` needed)");
}

/* ---- backends ------------------------------------------------------------ */

enum backend { DIR_STORE, S3_STORE };

struct fixture {
	enum backend kind;
	struct storage s;
	char root[512];
};

static void open_s3(struct fixture *fx, uint64_t cache_max, int64_t grace)
{
	struct storage_s3_opts o = { 0 };
	char url[256], err[512];

	snprintf(url, sizeof(url), "s3://traces/run%d?endpoint=http://127.0.0.1:%u&region=us-east-1", g_serial,
		 g_store.port);
	o.url = url;
	o.cache_dir = fx->root;
	o.cache_max = cache_max;
	o.cache_grace = grace;
	o.part_size = PART;
	if (storage_open_s3(&fx->s, &o, err, sizeof(err)) != 0)
		fail_msg("storage_open_s3: %s", err);
}

static int setup(void **state, enum backend kind)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char err[512];

	fx->kind = kind;
	snprintf(fx->root, sizeof(fx->root), "%s/store%d", g_work, ++g_serial);
	if (kind == DIR_STORE && storage_open_dir(&fx->s, fx->root, err, sizeof(err)) != 0)
		fail_msg("storage_open_dir: %s", err);
	if (kind == S3_STORE)
		open_s3(fx, 0, 0);
	*state = fx;
	return 0;
}

static int setup_dir(void **state)
{
	return setup(state, DIR_STORE);
}

static int setup_s3(void **state)
{
	return setup(state, S3_STORE);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	fx->s.ops->close(&fx->s);
	free(fx);
	return 0;
}

/* ---- helpers ------------------------------------------------------------- */

/* Writes n bytes of a pattern made from seed to path. */
static void write_pattern(const char *path, uint64_t n, unsigned seed)
{
	FILE *f = fopen(path, "wb");
	uint64_t i;

	assert_non_null(f);
	for (i = 0; i < n; i++)
		fputc((int)((i * 31 + seed * 7 + (i >> 9)) & 0xff), f);
	assert_int_equal(fclose(f), 0);
}

/* Whether path holds exactly write_pattern(n, seed). */
static int has_pattern(const char *path, uint64_t n, unsigned seed)
{
	FILE *f = fopen(path, "rb");
	uint64_t i;
	int ok = f != NULL;

	for (i = 0; ok && i < n; i++)
		ok = fgetc(f) == (int)((i * 31 + seed * 7 + (i >> 9)) & 0xff);
	if (ok)
		ok = fgetc(f) == EOF;
	if (f)
		fclose(f);
	return ok;
}

/* A spooled file of n bytes, put as file of trace id; the put's result. */
static int put_pattern(struct storage *s, int64_t id, const char *file, uint64_t n, unsigned seed, char *err,
		       size_t errlen)
{
	char spool[512], path[600];
	int fd, rc;

	s->ops->spool_dir(s, spool, sizeof(spool));
	snprintf(path, sizeof(path), "%s/up-XXXXXX", spool);
	assert_true((fd = mkstemp(path)) >= 0);
	close(fd);
	write_pattern(path, n, seed);
	err[0] = '\0';
	if ((rc = s->ops->put(s, id, file, path, err, errlen)) != 0) {
		assert_true(err[0] != '\0');
		assert_int_equal(access(path, F_OK), 0); /* left where it was */
		unlink(path);
		return rc;
	}
	assert_int_not_equal(access(path, F_OK), 0); /* moved */
	return 0;
}

/* ---- the contract -------------------------------------------------------- */

/* Put, then read back at local_path; for a shared store also after the
 * cache lost it (fetched from the store). */
static void check_roundtrip(struct fixture *fx, int64_t id, uint64_t n)
{
	char path[600], err[512];

	if (put_pattern(&fx->s, id, "source", n, (unsigned)id, err, sizeof(err)) != 0)
		fail_msg("put of %" PRIu64 " bytes: %s", n, err);
	fx->s.ops->local_path(&fx->s, id, "source", path, sizeof(path));
	assert_int_equal(fx->s.ops->fetch(&fx->s, id, "source", err, sizeof(err)), 0);
	assert_true(has_pattern(path, n, (unsigned)id));
	if (fx->kind == S3_STORE) {
		assert_int_equal(unlink(path), 0);
		if (fx->s.ops->fetch(&fx->s, id, "source", err, sizeof(err)) != 0)
			fail_msg("fetch of %" PRIu64 " bytes: %s", n, err);
		assert_true(has_pattern(path, n, (unsigned)id));
	}
}

static void test_roundtrip_sizes(void **state)
{
	struct fixture *fx = *state;

	check_roundtrip(fx, 1, 0);                  /* 0 bytes */
	check_roundtrip(fx, 2, 1000);
	check_roundtrip(fx, 3, PART);               /* exactly one part: a single PUT */
	check_roundtrip(fx, 4, PART + 1);           /* two parts, the last of one byte */
	check_roundtrip(fx, 5, 10 * PART + 12345);  /* eleven parts */
}

/* Ingest writes trace.db at local_path; publish stores it. */
static void test_publish_usage_remove(void **state)
{
	struct fixture *fx = *state;
	char path[600], err[512];
	uint64_t used;

	assert_int_equal(put_pattern(&fx->s, 7, "source", 5000, 1, err, sizeof(err)), 0);
	fx->s.ops->local_path(&fx->s, 7, "trace.db", path, sizeof(path));
	write_pattern(path, 3 * PART, 2);
	if (fx->s.ops->publish(&fx->s, 7, "trace.db", err, sizeof(err)) != 0)
		fail_msg("publish: %s", err);
	assert_int_equal(fx->s.ops->has(&fx->s, 7, "trace.db"), 1);
	assert_int_equal(fx->s.ops->has(&fx->s, 7, "binary"), 0);
	used = fx->s.ops->usage(&fx->s, 7);
	assert_true(used >= 5000 + 3 * PART);
	if (fx->kind == S3_STORE) {
		assert_int_equal(used, 5000 + 3 * PART); /* the objects' sizes */
		assert_int_equal(unlink(path), 0);
		assert_int_equal(fx->s.ops->has(&fx->s, 7, "trace.db"), 1);
		assert_int_equal(fx->s.ops->usage(&fx->s, 7), used); /* the store's word for what is not cached */
		assert_int_equal(fx->s.ops->fetch(&fx->s, 7, "trace.db", err, sizeof(err)), 0);
		assert_true(has_pattern(path, 3 * PART, 2));
	}
	fx->s.ops->remove(&fx->s, 7);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(fx->s.ops->usage(&fx->s, 7), 0);
	assert_int_equal(fx->s.ops->has(&fx->s, 7, "trace.db"), 0);
	assert_int_equal(fx->s.ops->has(&fx->s, 7, "source"), 0);
	assert_int_equal(fx->s.ops->fetch(&fx->s, 7, "trace.db", err, sizeof(err)), -1);
	assert_int_equal(fx->s.ops->fetch(&fx->s, 7, "source", err, sizeof(err)), -1);
}

/* A ready trace's source kept compressed (catalog/source.c): source.zst
 * put, then source dropped. Usage counts it, the raw one is gone from the
 * store too, the compressed one comes back after the cache lost it, and a
 * removal takes it. */
static void test_source_compressed(void **state)
{
	struct fixture *fx = *state;
	char path[600], err[512];

	assert_int_equal(put_pattern(&fx->s, 30, "source", 5000, 1, err, sizeof(err)), 0);
	assert_int_equal(put_pattern(&fx->s, 30, "source.zst", 1000, 2, err, sizeof(err)), 0);
	assert_int_equal(fx->s.ops->drop(&fx->s, 30, "source", err, sizeof(err)), 0);
	assert_int_equal(fx->s.ops->has(&fx->s, 30, "source"), 0);
	assert_int_equal(fx->s.ops->has(&fx->s, 30, "source.zst"), 1);
	assert_int_equal(fx->s.ops->fetch(&fx->s, 30, "source", err, sizeof(err)), -1);
	if (fx->kind == S3_STORE)
		assert_int_equal(fx->s.ops->usage(&fx->s, 30), 1000); /* the objects' sizes */
	else
		assert_true(fx->s.ops->usage(&fx->s, 30) >= 1000);
	fx->s.ops->local_path(&fx->s, 30, "source.zst", path, sizeof(path));
	if (fx->kind == S3_STORE) {
		assert_int_equal(unlink(path), 0);
		assert_int_equal(fx->s.ops->usage(&fx->s, 30), 1000); /* the store's word */
	}
	assert_int_equal(fx->s.ops->fetch(&fx->s, 30, "source.zst", err, sizeof(err)), 0);
	assert_true(has_pattern(path, 1000, 2));
	fx->s.ops->remove(&fx->s, 30);
	assert_int_equal(fx->s.ops->has(&fx->s, 30, "source.zst"), 0);
	assert_int_equal(fx->s.ops->usage(&fx->s, 30), 0);
}

/* A shared ingest job's result under its own name (trace-<token>.db),
 * dropped when its commit is refused: gone from the cache and the store,
 * the trace's other files kept; dropping it again is no error. */
static void test_drop_one(void **state)
{
	struct fixture *fx = *state;
	char path[600], err[512];

	assert_int_equal(put_pattern(&fx->s, 8, "source", 5000, 1, err, sizeof(err)), 0);
	fx->s.ops->local_path(&fx->s, 8, "trace-12.db", path, sizeof(path));
	write_pattern(path, 4000, 3);
	if (fx->s.ops->publish(&fx->s, 8, "trace-12.db", err, sizeof(err)) != 0)
		fail_msg("publish: %s", err);
	assert_int_equal(fx->s.ops->has(&fx->s, 8, "trace-12.db"), 1);
	if (fx->s.ops->drop(&fx->s, 8, "trace-12.db", err, sizeof(err)) != 0)
		fail_msg("drop: %s", err);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(fx->s.ops->has(&fx->s, 8, "trace-12.db"), 0);
	assert_int_equal(fx->s.ops->fetch(&fx->s, 8, "trace-12.db", err, sizeof(err)), -1);
	assert_int_equal(fx->s.ops->has(&fx->s, 8, "source"), 1);
	assert_int_equal(fx->s.ops->drop(&fx->s, 8, "trace-12.db", err, sizeof(err)), 0);
	fx->s.ops->remove(&fx->s, 8);
}

/* Every other claim's result goes once one is committed (prune): the kept
 * one, the trace's other files and other traces' files stay; pruning
 * again, or a trace with no files, is no error. */
static void test_prune(void **state)
{
	struct fixture *fx = *state;
	static const char *const results[] = { "trace-3.db", "trace-4.db", "trace-5.db" };
	char path[600], err[512];
	size_t i;

	assert_int_equal(put_pattern(&fx->s, 9, "source", 5000, 1, err, sizeof(err)), 0);
	for (i = 0; i < 3; i++) {
		fx->s.ops->local_path(&fx->s, 9, results[i], path, sizeof(path));
		write_pattern(path, 3000, (int)i + 2);
		if (fx->s.ops->publish(&fx->s, 9, results[i], err, sizeof(err)) != 0)
			fail_msg("publish: %s", err);
	}
	assert_int_equal(put_pattern(&fx->s, 10, "source", 1000, 4, err, sizeof(err)), 0);
	fx->s.ops->local_path(&fx->s, 10, "trace-3.db", path, sizeof(path));
	write_pattern(path, 2000, 7);
	if (fx->s.ops->publish(&fx->s, 10, "trace-3.db", err, sizeof(err)) != 0)
		fail_msg("publish: %s", err);
	if (fx->s.ops->prune(&fx->s, 9, "trace-", "trace-4.db", err, sizeof(err)) != 0)
		fail_msg("prune: %s", err);
	assert_int_equal(fx->s.ops->has(&fx->s, 9, "trace-3.db"), 0);
	assert_int_equal(fx->s.ops->has(&fx->s, 9, "trace-5.db"), 0);
	fx->s.ops->local_path(&fx->s, 9, "trace-5.db", path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(fx->s.ops->has(&fx->s, 9, "trace-4.db"), 1);
	assert_int_equal(fx->s.ops->fetch(&fx->s, 9, "trace-4.db", err, sizeof(err)), 0);
	assert_int_equal(fx->s.ops->has(&fx->s, 9, "source"), 1);
	assert_int_equal(fx->s.ops->has(&fx->s, 10, "trace-3.db"), 1);
	assert_int_equal(fx->s.ops->prune(&fx->s, 9, "trace-", "trace-4.db", err, sizeof(err)), 0);
	assert_int_equal(fx->s.ops->prune(&fx->s, 11, "trace-", "trace-1.db", err, sizeof(err)), 0);
	fx->s.ops->remove(&fx->s, 9);
	fx->s.ops->remove(&fx->s, 10);
}

static void test_missing(void **state)
{
	struct fixture *fx = *state;
	char err[512] = "";

	assert_int_equal(fx->s.ops->fetch(&fx->s, 99, "trace.db", err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	if (fx->kind == S3_STORE)
		assert_non_null(strstr(err, "HTTP 404"));
	assert_int_equal(fx->s.ops->check(&fx->s, err, sizeof(err)), 0);
}

/* The store killed: clean errors that say "try later", cached files still
 * readable, nothing left half-written; and back to work once it returns. */
static void test_store_down(void **state)
{
	struct fixture *fx = *state;
	char path[600], err[512];

	assert_int_equal(put_pattern(&fx->s, 11, "source", 2 * PART + 5, 3, err, sizeof(err)), 0);
	assert_int_equal(put_pattern(&fx->s, 12, "source", 100, 4, err, sizeof(err)), 0);
	fx->s.ops->local_path(&fx->s, 12, "source", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	s3rver_stop(&g_store);
	assert_int_equal(fx->s.ops->check(&fx->s, err, sizeof(err)), -2);
	assert_non_null(strstr(err, "cannot be reached"));
	assert_int_equal(put_pattern(&fx->s, 13, "source", 3 * PART, 5, err, sizeof(err)), -2);
	assert_int_equal(put_pattern(&fx->s, 14, "source", 10, 5, err, sizeof(err)), -2);
	assert_int_equal(fx->s.ops->fetch(&fx->s, 12, "source", err, sizeof(err)), -2);
	assert_int_equal(fx->s.ops->has(&fx->s, 12, "source"), -2); /* cannot tell: not "gone" */
	assert_int_equal(fx->s.ops->has(&fx->s, 11, "source"), 1);
	assert_int_equal(access(path, F_OK), -1); /* no partial download kept */
	assert_int_equal(fx->s.ops->fetch(&fx->s, 11, "source", err, sizeof(err)), 0); /* cached */
	store_start();
	assert_int_equal(fx->s.ops->check(&fx->s, err, sizeof(err)), 0);
	assert_int_equal(fx->s.ops->fetch(&fx->s, 12, "source", err, sizeof(err)), 0);
	assert_true(has_pattern(path, 100, 4));
}

/* A put that fails must say "try later" (-2) when the store is down. */
static void test_put_store_down_code(void **state)
{
	struct fixture *fx = *state;
	char spool[512], path[600], err[512];
	int fd;

	fx->s.ops->spool_dir(&fx->s, spool, sizeof(spool));
	snprintf(path, sizeof(path), "%s/up-XXXXXX", spool);
	assert_true((fd = mkstemp(path)) >= 0);
	close(fd);
	write_pattern(path, 10, 1);
	s3rver_stop(&g_store);
	assert_int_equal(fx->s.ops->put(&fx->s, 21, "source", path, err, sizeof(err)), -2);
	assert_int_equal(access(path, F_OK), 0);
	store_start();
	assert_int_equal(fx->s.ops->put(&fx->s, 21, "source", path, err, sizeof(err)), 0);
}

static int cached(struct fixture *fx, int64_t id)
{
	char path[600];

	fx->s.ops->local_path(&fx->s, id, "source", path, sizeof(path));
	return access(path, F_OK) == 0;
}

/* Over --cache-max, least recently used files go first; a fetch counts as
 * a use; everything stays fetchable from the store. */
static void test_eviction(void **state)
{
	struct fixture *fx = *state;
	char err[512];
	int64_t id;

	fx->s.ops->close(&fx->s);
	open_s3(fx, 3 * 1000, 0);
	for (id = 1; id <= 4; id++)
		assert_int_equal(put_pattern(&fx->s, id, "source", 1000, (unsigned)id, err, sizeof(err)), 0);
	assert_false(cached(fx, 1));
	assert_true(cached(fx, 2) && cached(fx, 3) && cached(fx, 4));
	assert_int_equal(fx->s.ops->fetch(&fx->s, 2, "source", err, sizeof(err)), 0); /* 2 used again */
	assert_int_equal(put_pattern(&fx->s, 5, "source", 1000, 5, err, sizeof(err)), 0);
	assert_false(cached(fx, 3));
	assert_true(cached(fx, 2) && cached(fx, 4) && cached(fx, 5));
	assert_int_equal(fx->s.ops->fetch(&fx->s, 1, "source", err, sizeof(err)), 0); /* back from the store */
	assert_true(cached(fx, 1));
	assert_false(cached(fx, 4));
	/* a cache opened again starts within its bound */
	fx->s.ops->close(&fx->s);
	open_s3(fx, 2 * 1000, 0);
	assert_int_equal(cached(fx, 1) + cached(fx, 2) + cached(fx, 5), 2);
}

/* A file still being written (a live trace's source grows after its put)
 * is never evicted; once published whole it may be. */
static void test_eviction_growing(void **state)
{
	struct fixture *fx = *state;
	char path[600], err[512];
	FILE *f;

	fx->s.ops->close(&fx->s);
	open_s3(fx, 1500, 0);
	assert_int_equal(put_pattern(&fx->s, 1, "source", 1000, 1, err, sizeof(err)), 0);
	fx->s.ops->local_path(&fx->s, 1, "source", path, sizeof(path));
	assert_non_null(f = fopen(path, "ab"));
	fputs("more bytes", f);
	fclose(f);
	assert_int_equal(put_pattern(&fx->s, 2, "source", 1000, 2, err, sizeof(err)), 0);
	assert_true(cached(fx, 1));
	assert_int_equal(fx->s.ops->publish(&fx->s, 1, "source", err, sizeof(err)), 0);
	assert_int_equal(put_pattern(&fx->s, 3, "source", 1000, 3, err, sizeof(err)), 0);
	assert_false(cached(fx, 1) && cached(fx, 2));
	assert_true(cached(fx, 3));
	/* what was published whole comes back whole */
	assert_int_equal(fx->s.ops->fetch(&fx->s, 1, "source", err, sizeof(err)), 0);
	assert_non_null(f = fopen(path, "rb"));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	assert_int_equal(ftell(f), 1010);
	fclose(f);
}

/* Files within their grace are never evicted, even over the bound. */
static void test_eviction_grace(void **state)
{
	struct fixture *fx = *state;
	char err[512];
	int64_t id;

	fx->s.ops->close(&fx->s);
	open_s3(fx, 1000, 3600);
	for (id = 1; id <= 3; id++)
		assert_int_equal(put_pattern(&fx->s, id, "source", 1000, (unsigned)id, err, sizeof(err)), 0);
	assert_true(cached(fx, 1) && cached(fx, 2) && cached(fx, 3));
}

/* A shared ingest job's database, trace-<token>.db, left in the cache by an
 * earlier run is evicted as any other file once the cache is opened again
 * (docs/DEPLOY.md, --cache-max: "Past it, whole files go"), whatever the
 * token's length: tokens only grow. */
static void test_eviction_job_db_reopened(void **state)
{
	static const char job_db[] = "trace-1000000000.db"; /* token 10^9 */
	struct fixture *fx = *state;
	char path[600], err[512];

	fx->s.ops->close(&fx->s);
	open_s3(fx, 0, 0);
	assert_int_equal(put_pattern(&fx->s, 1, job_db, 1000, 1, err, sizeof(err)), 0);
	fx->s.ops->close(&fx->s);
	open_s3(fx, 1500, 0);
	assert_int_equal(put_pattern(&fx->s, 2, "source", 1000, 2, err, sizeof(err)), 0);
	fx->s.ops->local_path(&fx->s, 1, job_db, path, sizeof(path));
	if (access(path, F_OK) == 0)
		fail_msg("%s stayed in the cache past its bound", job_db);
	assert_true(cached(fx, 2));
}

/* --store URLs: what is taken, and what is refused with a sentence. */
static void test_parse_url(void **state)
{
	static const char *const bad[] = {
		"http://b?endpoint=http://h", "s3://bucket", "s3://bucket/p", "s3://bu?endpoint=http://h",
		"s3://Bucket?endpoint=http://h", "s3://bucket?endpoint=ftp://h", "s3://bucket?region=x",
	};
	struct s3_config c;
	char err[512];
	size_t i;

	(void)state;
	assert_int_equal(s3_parse_url("s3://traces/team/a/?endpoint=http://127.0.0.1:9000/&region=eu-west-3", &c, err,
				      sizeof(err)), S3_OK);
	assert_string_equal(c.bucket, "traces");
	assert_string_equal(c.prefix, "team/a");
	assert_string_equal(c.endpoint, "http://127.0.0.1:9000");
	assert_string_equal(c.region, "eu-west-3");
	assert_int_equal(c.part_size, S3_DEFAULT_PART_SIZE);
	assert_int_equal(s3_parse_url("s3://traces?endpoint=https://s3.example", &c, err, sizeof(err)), S3_OK);
	assert_string_equal(c.prefix, "");
	assert_string_equal(c.region, "us-east-1");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (s3_parse_url(bad[i], &c, err, sizeof(err)) != S3_EBADURL)
			fail_msg("took %s", bad[i]);
		assert_non_null(strstr(err, "s3://bucket"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_url),
		cmocka_unit_test_setup_teardown(test_roundtrip_sizes, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_publish_usage_remove, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_source_compressed, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_drop_one, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_prune, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip_sizes, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_publish_usage_remove, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_source_compressed, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_drop_one, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_prune, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_store_down, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_put_store_down_code, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_eviction, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_eviction_grace, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_eviction_growing, setup_s3, teardown),
		cmocka_unit_test_setup_teardown(test_eviction_job_db_reopened, setup_s3, teardown),
	};
	int rc;

	snprintf(g_work, sizeof(g_work), "/tmp/ts-storage-XXXXXX");
	if (mkdtemp(g_work) == NULL)
		return 1;
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	store_start();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	s3rver_stop(&g_store);
	su_rm_tree(g_work);
	return rc;
}
