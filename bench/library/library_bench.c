/*
 * Library benchmark client: latency of search across traces and of search
 * inside a trace against a running server, and the same answers computed
 * the way a tool without the catalog's index must (baselines).
 *
 *   library_bench across --port P --q TEXT [--samples N]
 *   library_bench inside --port P --trace ID --q TEXT [--samples N]
 *   library_bench base-across --data DIR --q TEXT [--samples N]
 *   library_bench base-inside --db TRACE.DB --q TEXT [--samples N]
 *   library_bench trend --port P --q NAME [--samples N]
 *   library_bench many --port P --q SQL [--samples N]
 *   library_bench base-many --data DIR --q SQL [--samples N]
 *   library_bench notes --port P --trace ID [--samples N]
 *
 * across: GET /api/search?q=TEXT, N times on one keep-alive connection.
 * inside: GET /api/traces/ID/search?q=TEXT&limit=1000 (the first page), N
 * times with a fresh q letter case each time so that the reply cache never
 * answers.
 * base-across: opens every DIR/traces/N/trace.db and computes what
 * /api/search answers per trace (count, total, max; the ended durations
 * read and sorted for exact percentiles): what answering without the
 * catalog's index costs.
 * base-inside: the first page by a scan of the slices table (NOT INDEXED),
 * as the server did before the name index.
 * trend: GET /api/trends?name=NAME&order=label:build (the catalog's index
 * alone; rows = points).
 * many: POST /api/query with the statement SQL on every trace, a worker per
 * core (rows = traces answered); base-many: the same statement on every
 * DIR/traces/N/trace.db, opened one after another in this process.
 * notes: GET /api/traces/ID/notes, a note added before each request (so
 * that no reply is cached and each sees the one just saved: rows = notes).
 *
 * Prints "<mode> q=TEXT n=N p50_ms=X p95_ms=Y max_ms=Z rows=R". The
 * across/inside figures include the HTTP round trip on loopback.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "../../tests/server_util.h"

static volatile int64_t g_sink;

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *mode, const char *q, double *ms, unsigned n, long rows)
{
	qsort(ms, n, sizeof(*ms), cmp_d);
	printf("%-12s q=%-10s n=%-4u p50_ms=%-9.2f p95_ms=%-9.2f max_ms=%-9.2f rows=%ld\n", mode, q, n, ms[n / 2],
	       ms[(n * 95 + 99) / 100 - 1], ms[n - 1], rows);
}

/* Counts occurrences of needle in the body: the rows of a reply. */
static long count_of(const char *body, size_t len, const char *needle)
{
	long n = 0;
	const char *p = body, *end = body + len;
	size_t k = strlen(needle);

	while (p && p < end && (p = memmem(p, (size_t)(end - p), needle, k)) != NULL) {
		n++;
		p += k;
	}
	return n;
}

enum http_kind { H_ACROSS, H_INSIDE, H_TREND, H_MANY, H_NOTES };

static int http_mode(enum http_kind kind, int port, int64_t trace, const char *q, unsigned samples)
{
	static const char *const names[] = { "across", "inside", "trend", "many", "notes" };
	static const char *const needles[] = { "\"p95_ns\"", "\"track_id\"", "\"regression\"", "\"labels\"",
					       "\"author\"" };
	const int inside = kind == H_INSIDE;
	double *ms = calloc(samples, sizeof(*ms));
	char path[512], qq[256];
	long rows = 0;
	unsigned i;
	int fd = su_connect(port);

	if (fd < 0 || ms == NULL) {
		fprintf(stderr, "library_bench: cannot connect to port %d\n", port);
		return 1;
	}
	for (i = 0; i < samples; i++) {
		struct su_req rq = { "GET", path, NULL, NULL, 0, 0, 1 };
		struct su_resp r;
		size_t k;
		double t0;

		if (kind == H_MANY || kind == H_NOTES) {
			if (kind == H_MANY) {
				snprintf(path, sizeof(path), "/api/query?n=%u", i);
				rq.method = "POST";
				rq.body = q;
				rq.body_len = strlen(q);
			} else {
				struct su_req add = { "POST", path, NULL, "{\"text\":\"bench note\",\"author\":\"b\"}", 0, 0, 1 };

				snprintf(path, sizeof(path), "/api/traces/%" PRId64 "/notes", trace);
				add.body_len = strlen(add.body);
				if (su_exchange(fd, &add, &r, 60000) != 0 || r.status != 201) {
					fprintf(stderr, "library_bench: adding a note failed (status %d)\n", r.status);
					return 1;
				}
				su_resp_free(&r);
			}
			t0 = su_now();
			if (su_exchange(fd, &rq, &r, 600000) != 0 || r.status != 200) {
				fprintf(stderr, "library_bench: %s failed (status %d)\n", path, r.status);
				return 1;
			}
			ms[i] = (su_now() - t0) * 1e3;
			rows = count_of(r.body, r.body_len, needles[kind]);
			su_resp_free(&r);
			continue;
		}
		/* vary the letter case: the same search, never a cached reply */
		snprintf(qq, sizeof(qq), "%s", q);
		for (k = 0; qq[k]; k++)
			if ((i >> (k % 16)) & 1)
				qq[k] = (char)(qq[k] >= 'a' && qq[k] <= 'z' ? qq[k] - 32 : qq[k]);
		if (inside)
			snprintf(path, sizeof(path), "/api/traces/%" PRId64 "/search?q=%s&limit=1000&n=%u", trace, qq, i);
		else if (kind == H_TREND)
			snprintf(path, sizeof(path), "/api/trends?name=%s&order=label:build&n=%u", q, i);
		else
			snprintf(path, sizeof(path), "/api/search?q=%s&n=%u", qq, i);
		t0 = su_now();
		if (su_exchange(fd, &rq, &r, 60000) != 0 || r.status != 200) {
			fprintf(stderr, "library_bench: %s failed (status %d)\n", path, r.status);
			return 1;
		}
		ms[i] = (su_now() - t0) * 1e3;
		rows = count_of(r.body, r.body_len, needles[kind]);
		su_resp_free(&r);
	}
	report(names[kind], kind == H_MANY ? "sql" : kind == H_NOTES ? "-" : q, ms, samples, rows);
	free(ms);
	return 0;
}

/* What /api/search computes for one trace, from its own database. */
static int base_one(sqlite3 *db, const char *q, long *found)
{
	sqlite3_stmt *st;
	int64_t *v = NULL, total = 0, mx = 0, p50 = 0, p95 = 0;
	size_t n = 0, cap = 0, count = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT dur FROM slices WHERE name_id IN (SELECT id FROM strings WHERE "
			       "instr(lower(str), lower(?1)) > 0)",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t d = sqlite3_column_int64(st, 0);

		count++;
		if (d < 0)
			continue;
		if (n == cap && (v = realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof(*v))) == NULL)
			return -1;
		v[n++] = d;
		total += d;
	}
	sqlite3_finalize(st);
	if (n) {
		qsort(v, n, sizeof(*v), cmp_i64);
		p50 = v[(n + 1) / 2 - 1];
		p95 = v[(n * 95 + 99) / 100 - 1];
		mx = v[n - 1];
	}
	*found += count > 0;
	free(v);
	g_sink += total + p50 + p95 + mx; /* computed as the server does; not printed */
	return 0;
}

/* The statement sql on one trace database: 1 when it ran. */
static int many_one(sqlite3 *db, const char *sql, long *found)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW)
		g_sink += sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	++*found;
	return 0;
}

/* Opens every DIR/traces/N/trace.db one after another, samples times, and
 * runs one(db, q, &found) on each: what a tool without the server pays. */
static int base_walk(const char *mode, const char *data, const char *q, unsigned samples,
		     int (*one)(sqlite3 *db, const char *q, long *found))
{
	double *ms = calloc(samples, sizeof(*ms));
	char dir[4096], path[4400];
	long found = 0;
	unsigned i;

	snprintf(dir, sizeof(dir), "%s/traces", data);
	for (i = 0; i < samples; i++) {
		double t0 = su_now();
		struct dirent *e;
		DIR *d = opendir(dir);

		found = 0;
		while (d && (e = readdir(d)) != NULL) {
			sqlite3 *db = NULL;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/trace.db", dir, e->d_name);
			if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
				one(db, q, &found);
			sqlite3_close(db);
		}
		if (d)
			closedir(d);
		ms[i] = (su_now() - t0) * 1e3;
	}
	report(mode, strcmp(mode, "base-many") == 0 ? "sql" : q, ms, samples, found);
	free(ms);
	return 0;
}

static int base_inside(const char *dbpath, const char *q, unsigned samples)
{
	double *ms = calloc(samples, sizeof(*ms));
	sqlite3 *db = NULL;
	long rows = 0;
	unsigned i;

	if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return 1;
	sqlite3_exec(db, "PRAGMA mmap_size=17179869184", NULL, NULL, NULL);
	for (i = 0; i < samples; i++) {
		sqlite3_stmt *st;
		double t0 = su_now();

		if (sqlite3_prepare_v2(db,
				       "SELECT s.id, s.track_id, s.ts, s.dur, n.str, c.str FROM slices s NOT INDEXED "
				       "JOIN strings n ON n.id = s.name_id JOIN strings c ON c.id = s.category_id "
				       "WHERE s.name_id IN (SELECT id FROM strings WHERE instr(lower(str), lower(?1)) > 0) "
				       "ORDER BY s.ts, s.id LIMIT 1001",
				       -1, &st, NULL) != SQLITE_OK)
			return 1;
		sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
		for (rows = 0; sqlite3_step(st) == SQLITE_ROW; rows++)
			;
		sqlite3_finalize(st);
		ms[i] = (su_now() - t0) * 1e3;
	}
	sqlite3_close(db);
	report("base-inside", q, ms, samples, rows > 1000 ? 1000 : rows);
	free(ms);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *q = NULL, *data = NULL, *db = NULL;
	unsigned samples = 20;
	int64_t trace = 0;
	int port = 0, i;

	for (i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port") == 0)
			port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--trace") == 0)
			trace = strtoll(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--q") == 0)
			q = argv[i + 1];
		else if (strcmp(argv[i], "--samples") == 0)
			samples = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--data") == 0)
			data = argv[i + 1];
		else if (strcmp(argv[i], "--db") == 0)
			db = argv[i + 1];
	}
	if (strcmp(mode, "notes") == 0 && port && trace && samples)
		return http_mode(H_NOTES, port, trace, "", samples);
	if (q == NULL || samples == 0)
		goto usage;
	if (strcmp(mode, "across") == 0 && port)
		return http_mode(H_ACROSS, port, 0, q, samples);
	if (strcmp(mode, "inside") == 0 && port && trace)
		return http_mode(H_INSIDE, port, trace, q, samples);
	if (strcmp(mode, "trend") == 0 && port)
		return http_mode(H_TREND, port, 0, q, samples);
	if (strcmp(mode, "many") == 0 && port)
		return http_mode(H_MANY, port, 0, q, samples);
	if (strcmp(mode, "base-many") == 0 && data)
		return base_walk("base-many", data, q, samples, many_one);
	if (strcmp(mode, "base-across") == 0 && data)
		return base_walk("base-across", data, q, samples, base_one);
	if (strcmp(mode, "base-inside") == 0 && db)
		return base_inside(db, q, samples);
usage:
	fprintf(stderr, "usage: library_bench across|inside|base-across|base-inside|trend|many|base-many|notes ... (see "
			"the header)\n");
	return 2;
}
