/*
 * The scale tests' world (tests/scale/test_scale.c, docs/DEPLOY.md): a
 * throwaway PostgreSQL (tests/catalog/pg.sh) and s3rver
 * (tests/store/s3rver.mjs) on loopback, and SCALE_N real trace-servers
 * sharing that one catalog (--catalog) and that one store (--store), each
 * with its own --data and --cache-dir, as a deployment behind a proxy
 * runs them. One more server in embedded mode (--data alone) gives the
 * replies the shared servers must match.
 *
 * The test store checks no signatures, so sc_bucket_keys lists the
 * bucket with a plain unsigned GET: what is in the store is seen as it
 * is, not through the server under test.
 *
 * Header-only, on top of tests/server/api_util.h (cmocka asserts).
 */
#ifndef TESTS_SCALE_SCALE_UTIL_H
#define TESTS_SCALE_SCALE_UTIL_H

#include <dirent.h>
#include <sys/stat.h>

#include "../server/api_util.h"
#include "../store/s3rver_util.h"

enum { SCALE_N = 3 };

struct scale {
	char root[64];                /* the test's directory under /tmp */
	char pg[128];                 /* pg.sh's directory */
	char pg_url[256];             /* postgres://trace@127.0.0.1:PORT/trace */
	char s3dir[128];              /* s3rver's objects */
	char s3log[128];              /* s3rver's requests, one "METHOD URL" a line */
	char store_url[256];          /* s3://traces/lib?endpoint=... */
	const char *part_size;        /* --store-part-size, or NULL for the default */
	char exe[256];                /* the trace-server under test */
	struct s3rver store;
	struct su_server srv[SCALE_N];
	int port[SCALE_N];
	char data[SCALE_N][128], cache[SCALE_N][128], log[SCALE_N][128];
	struct su_server emb;         /* the embedded-mode server */
	int emb_port;
	char emb_data[128], emb_log[128];
};

/* Runs `sh pg.sh verb DIR`; its exit status. */
static inline int sc_pg(struct scale *w, const char *verb)
{
	return su_pg_ctl(verb, w->pg);
}

/* Requests go to shared server k, or to the embedded one when k < 0. */
static inline void sc_use(struct scale *w, int k)
{
	api_port = k < 0 ? w->emb_port : w->port[k];
	api_log = k < 0 ? w->emb_log : w->log[k];
}

/* Starts shared server k on a new port. */
static inline void sc_server_start(struct scale *w, int k)
{
	const char *extra[] = { "--catalog", w->pg_url, "--store", w->store_url, "--cache-dir", w->cache[k],
				w->part_size ? "--store-part-size" : NULL, w->part_size, NULL };

	api_start(&w->srv[k], w->exe, w->data[k], w->log[k], extra);
	w->port[k] = api_port;
}

/* (Re)starts s3rver on its port (a free one the first time). 0 or -1. */
static inline int sc_store_start(struct scale *w)
{
	return s3rver_start(&w->store, w->s3dir, "traces", w->store.port);
}

/*
 * Makes the stores under a new /tmp directory: PostgreSQL and s3rver, no
 * server yet. part_size is the servers' --store-part-size (NULL: their
 * default). 0, or -1 with the reason on stderr.
 */
static inline int sc_setup_stores(struct scale *w, const char *exe, const char *part_size)
{
	char path[192], root[64];
	FILE *f;
	int k;

	memset(w, 0, sizeof(*w));
	w->part_size = part_size;
	if (realpath(exe, w->exe) == NULL) {
		fprintf(stderr, "no trace-server at %s\n", exe);
		return -1;
	}
	snprintf(w->root, sizeof(w->root), "/tmp/test_scale.XXXXXX");
	if (mkdtemp(w->root) == NULL || chmod(w->root, 0711) != 0) /* pg.sh's postgres user goes through it */
		return -1;
	snprintf(root, sizeof(root), "%s", w->root);
	snprintf(w->pg, sizeof(w->pg), "%s/pg", root);
	snprintf(w->s3dir, sizeof(w->s3dir), "%s/s3rver", root);
	snprintf(path, sizeof(path), "%s/url", w->pg);
	if (sc_pg(w, "start") != 0 || (f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "PostgreSQL did not start (tests/catalog/pg.sh)\n");
		return -1;
	}
	if (fgets(w->pg_url, sizeof(w->pg_url), f) == NULL) {
		fclose(f);
		return -1;
	}
	fclose(f);
	w->pg_url[strcspn(w->pg_url, "\n")] = '\0';
	snprintf(w->s3log, sizeof(w->s3log), "%s/s3rver.log", root);
	setenv("S3RVER_LOG", w->s3log, 1);
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	if (sc_store_start(w) != 0) {
		fprintf(stderr, "s3rver did not start (node and `make deps-e2e` needed)\n");
		return -1;
	}
	snprintf(w->store_url, sizeof(w->store_url), "s3://traces/lib?endpoint=http://127.0.0.1:%u&region=us-east-1",
		 w->store.port);
	for (k = 0; k < SCALE_N; k++) {
		snprintf(w->data[k], sizeof(w->data[k]), "%s/data%d", root, k);
		snprintf(w->cache[k], sizeof(w->cache[k]), "%s/cache%d", root, k);
		snprintf(w->log[k], sizeof(w->log[k]), "%s/server%d.log", root, k);
	}
	snprintf(w->emb_data, sizeof(w->emb_data), "%s/embedded", root);
	snprintf(w->emb_log, sizeof(w->emb_log), "%s/embedded.log", root);
	return 0;
}

/* The embedded-mode server on w->emb_data. */
static inline void sc_embedded_start(struct scale *w)
{
	api_start(&w->emb, w->exe, w->emb_data, w->emb_log, NULL);
	w->emb_port = api_port;
}

/* The stores, the SCALE_N shared servers and the embedded one. */
static inline int sc_setup(struct scale *w, const char *exe, const char *part_size)
{
	int k;

	if (sc_setup_stores(w, exe, part_size) != 0)
		return -1;
	for (k = 0; k < SCALE_N; k++)
		sc_server_start(w, k);
	sc_embedded_start(w);
	return 0;
}

/* Stops everything and removes the directory (kept when keep is set, for
 * a failed run's logs). */
static inline void sc_teardown(struct scale *w, int keep)
{
	int k;

	for (k = 0; k < SCALE_N; k++)
		if (w->srv[k].pid)
			su_server_stop(&w->srv[k], SIGTERM);
	if (w->emb.pid)
		su_server_stop(&w->emb, SIGTERM);
	s3rver_stop(&w->store);
	sc_pg(w, "stop");
	if (keep)
		fprintf(stderr, "the servers' logs are kept in %s\n", w->root);
	else
		su_rm_tree(w->root);
}

/* The body of GET path on the current server, which must answer status. */
static inline char *sc_body(const char *path, int status, size_t *len)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	char *b;

	if (su_request(api_port, &q, &r, 60000) != 0)
		fail_msg("GET %s: no reply (see %s)", path, api_log);
	if (r.status != status)
		fail_msg("GET %s: status %d, not %d: %.300s", path, r.status, status, r.body ? r.body : "");
	b = r.body;
	if (len)
		*len = r.body_len;
	r.body = NULL;
	su_resp_free(&r);
	return b;
}

/*
 * The keys in the bucket under prefix, one per line (caller frees), as
 * s3rver's ListObjectsV2 answers them (up to 1000: the tests hold fewer).
 */
static inline char *sc_bucket_keys(struct scale *w, const char *prefix)
{
	/* the test's own look: the store lets it through unsigned (s3rver.mjs) */
	struct su_req q = { "GET", NULL, "x-test-inspect: unsigned\r\n", NULL, 0, 0, 0 };
	struct su_buf out = { 0 };
	struct su_resp r;
	char path[256];
	const char *p, *e;

	snprintf(path, sizeof(path), "/traces?list-type=2&prefix=%s", prefix);
	q.path = path;
	if (su_request((int)w->store.port, &q, &r, 10000) != 0 || r.status != 200)
		fail_msg("listing the bucket: status %d", r.status);
	su_buf_add(&out, "", 0);
	for (p = r.body; (p = strstr(p, "<Key>")) != NULL; p = e) {
		p += 5;
		if ((e = strstr(p, "</Key>")) == NULL)
			break;
		su_buf_add(&out, p, (size_t)(e - p));
		su_buf_add(&out, "\n", 1);
	}
	su_resp_free(&r);
	return out.p;
}

/* How many multipart uploads the bucket holds begun and neither completed
 * nor aborted. s3rver answers ListMultipartUploads with 501, so this reads
 * its directory: one directory per open upload under
 * BUCKET/._S3rver_uploads (node_modules/s3rver/lib/stores/filesystem.js),
 * removed when the upload completes or is aborted. */
static inline int sc_bucket_open_uploads(struct scale *w)
{
	char path[192];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/traces/._S3rver_uploads", w->s3dir);
	if ((d = opendir(path)) == NULL)
		return 0; /* made at the first upload */
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* How many objects the bucket holds under prefix. */
static inline int sc_bucket_count(struct scale *w, const char *prefix)
{
	char *keys = sc_bucket_keys(w, prefix), *p;
	int n = 0;

	for (p = keys; (p = strchr(p, '\n')) != NULL; p++)
		n++;
	free(keys);
	return n;
}

/*
 * What the store was sent for key (bucket-relative, "lib/traces/1/source")
 * by s3rver's log: *single the plain PUTs, *parts the PUTs of multipart
 * parts (UploadPart, "?partNumber=").
 */
static inline void sc_store_puts(struct scale *w, const char *key, int *single, int *parts)
{
	char line[1024], want[300];
	FILE *f = fopen(w->s3log, "r");
	size_t n;

	*single = *parts = 0;
	if (f == NULL)
		fail_msg("no s3rver log at %s", w->s3log);
	n = (size_t)snprintf(want, sizeof(want), "PUT /traces/%s", key);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, n) != 0)
			continue;
		if (line[n] == '\n')
			(*single)++;
		else if (line[n] == '?' && strstr(line + n, "partNumber="))
			(*parts)++;
	}
	fclose(f);
}

/* The first n shared servers' /healthz answer status (within ms, as a
 * server notices a change at its next check). */
static inline void sc_health_all_n(struct scale *w, int n, int status, int ms)
{
	int k, got;

	for (k = 0; k < n; k++) {
		sc_use(w, k);
		got = api_get_until("/healthz", status, ms, NULL);
		if (got != status)
			fail_msg("server %d: /healthz answered %d, not %d (see %s)", k, got, status, w->log[k]);
	}
}

/* Every shared server's /healthz answers status. */
static inline void sc_health_all(struct scale *w, int status, int ms)
{
	sc_health_all_n(w, SCALE_N, status, ms);
}

/* A whole file read into memory (caller frees). */
static inline char *sc_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	if (f == NULL)
		fail_msg("cannot read %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

#endif
