/*
 * Query benchmark: latency of /slices viewport requests against a running
 * server, at zoom levels from the whole trace down to 1 us windows.
 *
 *   query_bench --port P --trace ID [--samples N] [--seed S] [--tracks K]
 *               [--typical-window NS] [--typical-out FILE.json]
 *   query_bench --port P --trace ID --against P2 --against-trace ID2 [--samples N] ...
 *   query_bench --free-port
 *
 * For every zoom level (the whole trace, then each tenth of it, down to
 * 1 us) it sends N requests at random positions on one of K busy thread
 * tracks, once with resolution = window / 1500 (a 1500-pixel viewport) and
 * once without, one at a time on one keep-alive connection, as a viewer
 * would. It prints p50/p95/p99/max latency, the items and bytes of the
 * replies and the target (p99 <= 20 ms at every zoom with a resolution).
 *
 * Then it prints the "typical" request used for the throughput run of
 * run.sh (a window of --typical-window ns in the middle of the busiest
 * track, with a resolution) as "typical_path=..." and "typical_bytes=...",
 * and writes its reply to --typical-out so that nginx can serve the same
 * bytes. --free-port prints a free loopback port and exits.
 *
 * With --against, two servers holding the same trace (ingested from the
 * same file: the same tracks and times) are compared like for like: each
 * viewport request (with a resolution) goes to both, one right after the
 * other, the order alternating, each on its own keep-alive connection, so
 * that whatever else the machine does falls on both alike. Per zoom it
 * prints each server's p50 and p99, p99 against / p99 first, and the
 * median over the pairs of (against - first), the cost one server adds to
 * a request whatever the noise; then the sum of the zooms' p99s, against
 * / first, and the worst of the zooms' ratios.
 *
 * The client is tests/server_util.h; replies are parsed with cJSON only for
 * the trace object and the track list.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../../tests/server_util.h"

enum { MAX_TRACKS = 64, MAX_ZOOMS = 32 };

struct opts {
	int port;
	int64_t trace;
	unsigned samples;     /* requests per zoom level and mode */
	uint64_t seed;
	unsigned ntracks;     /* busiest thread tracks to use */
	int64_t typical_ns;   /* window of the typical request */
	const char *typical_out;
	int against;          /* a second server to compare with (0: none) */
	int64_t against_trace;
};

struct bench {
	const struct opts *o;
	int port;                 /* the server: o->port, or o->against */
	int64_t trace;            /* its trace: o->trace, or o->against_trace */
	int fd;                   /* the keep-alive connection */
	uint64_t rng;
	int64_t start, end;       /* the trace's time range */
	int64_t track[MAX_TRACKS];
	int64_t weight[MAX_TRACKS]; /* slices on the track */
	unsigned ntrack;
};

/* One zoom level and mode: what the requests saw. */
struct sample_set {
	double *ms;        /* latency of each request */
	unsigned n;
	double items, bytes; /* sums over the replies */
	unsigned truncated;  /* replies that said "truncated": true */
	unsigned errors;     /* replies other than 200 */
};

static uint64_t rng_next(struct bench *b)
{
	uint64_t z = (b->rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void die(const char *what)
{
	fprintf(stderr, "query_bench: %s\n", what);
	exit(1);
}

/* GET on the keep-alive connection (reconnecting when the server closed
 * it); returns the reply, which the caller frees. */
static void get(struct bench *b, const char *path, struct su_resp *r)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 1 };
	int attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (b->fd < 0 && (b->fd = su_connect(b->port)) < 0)
			die("cannot connect to the server");
		if (su_exchange(b->fd, &q, r, 60000) == 0) {
			if (r->closing) {
				close(b->fd);
				b->fd = -1;
			}
			return;
		}
		close(b->fd);
		b->fd = -1;
	}
	fprintf(stderr, "query_bench: GET %s: no reply\n", path);
	exit(1);
}

static cJSON *get_json(struct bench *b, const char *path)
{
	struct su_resp r;
	cJSON *j;

	get(b, path, &r);
	if (r.status != 200 || (j = cJSON_ParseWithLength(r.body, r.body_len)) == NULL) {
		fprintf(stderr, "query_bench: GET %s: %d %.200s\n", path, r.status, r.body ? r.body : "");
		exit(1);
	}
	su_resp_free(&r);
	return j;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(it) ? it->valuedouble : 0;
}

/* Slices per track, through POST /query: from track_depths, which ingest
 * fills per (track, depth); a count(*) over slices scans the whole table
 * (no index by track), which on a 4 GB trace outlasts the query time limit. */
static int64_t track_slices(struct bench *b, int64_t track)
{
	char path[64], sql[128];
	struct su_req q = { "POST", path, NULL, sql, 0, 0, 1 };
	struct su_resp r;
	int64_t n = 0;
	const char *p;

	snprintf(path, sizeof(path), "/api/traces/%" PRId64 "/query", b->trace);
	snprintf(sql, sizeof(sql), "SELECT coalesce(sum(count), 0) FROM track_depths WHERE track_id = %" PRId64, track);
	q.body_len = strlen(sql);
	if (b->fd < 0 && (b->fd = su_connect(b->port)) < 0)
		die("cannot connect to the server");
	if (su_exchange(b->fd, &q, &r, 60000) != 0)
		die("POST query: no reply");
	if (r.status == 200 && (p = strstr(r.body, "[[")) != NULL)
		n = strtoll(p + 2, NULL, 10);
	if (r.closing) {
		close(b->fd);
		b->fd = -1;
	}
	su_resp_free(&r);
	return n;
}

/* The trace's range and its busiest thread tracks. */
static void load_trace(struct bench *b)
{
	const cJSON *p, *t;
	char path[96];
	cJSON *j;
	unsigned i, k;

	snprintf(path, sizeof(path), "/api/traces/%" PRId64, b->trace);
	j = get_json(b, path);
	b->start = (int64_t)num(j, "start_ns");
	b->end = (int64_t)num(j, "end_ns");
	printf("trace %" PRId64 " on port %d: %.0f slices over %.3f s\n", b->trace, b->port,
	       num(cJSON_GetObjectItemCaseSensitive(j, "counts"), "slices"), (double)(b->end - b->start) / 1e9);
	cJSON_Delete(j);
	snprintf(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", b->trace);
	j = get_json(b, path);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "processes"))
	{
		cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(p, "threads"))
		{
			if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "track_id")) && b->ntrack < MAX_TRACKS)
				b->track[b->ntrack++] = (int64_t)num(t, "track_id");
		}
	}
	cJSON_Delete(j);
	if (b->ntrack == 0)
		die("the trace has no thread tracks");
	for (i = 0; i < b->ntrack; i++)
		b->weight[i] = track_slices(b, b->track[i]);
	for (i = 1; i < b->ntrack; i++) { /* busiest first */
		for (k = i; k > 0 && b->weight[k] > b->weight[k - 1]; k--) {
			int64_t t0 = b->track[k], w0 = b->weight[k];

			b->track[k] = b->track[k - 1];
			b->weight[k] = b->weight[k - 1];
			b->track[k - 1] = t0;
			b->weight[k - 1] = w0;
		}
	}
	if (b->ntrack > b->o->ntracks)
		b->ntrack = b->o->ntracks;
	printf("tracks:");
	for (i = 0; i < b->ntrack; i++)
		printf(" %" PRId64 " (%" PRId64 " slices)", b->track[i], b->weight[i]);
	printf("\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, unsigned n, double q)
{
	unsigned i = (unsigned)ceil(q * n);

	return v[i ? i - 1 : 0];
}

/* Counts the items of a /slices reply ("id" keys). */
static unsigned count_items(const char *body)
{
	unsigned n = 0;

	for (; (body = strstr(body, "{\"id\":")) != NULL; body++)
		n++;
	return n;
}

static void path_for(struct bench *b, char *out, size_t n, int64_t track, int64_t s, int64_t w, int with_res)
{
	int64_t res = w / 1500 > 0 ? w / 1500 : 1;

	if (with_res)
		snprintf(out, n,
			 "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=%" PRId64 "&end=%" PRId64
			 "&resolution=%" PRId64,
			 b->trace, track, s, s + w, res);
	else
		snprintf(out, n, "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=%" PRId64 "&end=%" PRId64,
			 b->trace, track, s, s + w);
}

/* n requests of window w at random positions; fills set (set->ms is the
 * caller's to free). */
static void run_set(struct bench *b, int64_t w, int with_res, unsigned n, struct sample_set *set)
{
	unsigned i;

	memset(set, 0, sizeof(*set));
	set->ms = calloc(n, sizeof(double));
	if (set->ms == NULL)
		die("out of memory");
	for (i = 0; i < n; i++) {
		int64_t span = b->end - b->start - w, s = b->start + (span > 0 ? (int64_t)(rng_next(b) % (uint64_t)span) : 0);
		int64_t track = b->track[rng_next(b) % b->ntrack];
		char path[256];
		struct su_resp r;
		double t0;

		path_for(b, path, sizeof(path), track, s, w, with_res);
		t0 = su_now();
		get(b, path, &r);
		set->ms[set->n++] = (su_now() - t0) * 1e3;
		if (r.status != 200)
			set->errors++;
		else if (strstr(r.body, "\"truncated\":true"))
			set->truncated++;
		set->items += count_items(r.body);
		set->bytes += (double)r.body_len;
		su_resp_free(&r);
	}
	qsort(set->ms, set->n, sizeof(double), cmp_double);
}

/* One request of b's for the window [s, s + w) of track (with a
 * resolution): its latency in ms; the reply must be a 200. */
static double timed(struct bench *b, int64_t track, int64_t s, int64_t w)
{
	char path[256];
	struct su_resp r;
	double t0, ms;

	path_for(b, path, sizeof(path), track, s, w, 1);
	t0 = su_now();
	get(b, path, &r);
	ms = (su_now() - t0) * 1e3;
	if (r.status != 200) {
		fprintf(stderr, "query_bench: GET %s on port %d: %d\n", path, b->port, r.status);
		exit(1);
	}
	su_resp_free(&r);
	return ms;
}

/* n requests of window w at random positions, each sent to a and to b
 * (a first on even ones, b first on odd ones); fills ma and mb, sorted,
 * and d (when not NULL) with each pair's b - a, sorted. */
static void run_pair(struct bench *a, struct bench *b, int64_t w, unsigned n, double *ma, double *mb, double *d)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		int64_t span = a->end - a->start - w, s = a->start + (span > 0 ? (int64_t)(rng_next(a) % (uint64_t)span) : 0);
		int64_t track = a->track[rng_next(a) % a->ntrack];

		if (i % 2 == 0) {
			ma[i] = timed(a, track, s, w);
			mb[i] = timed(b, track, s, w);
		} else {
			mb[i] = timed(b, track, s, w);
			ma[i] = timed(a, track, s, w);
		}
		if (d)
			d[i] = mb[i] - ma[i];
	}
	if (d)
		qsort(d, n, sizeof(double), cmp_double);
	qsort(ma, n, sizeof(double), cmp_double);
	qsort(mb, n, sizeof(double), cmp_double);
}

static void fmt_ns(char *out, size_t n, double ns)
{
	if (ns >= 1e9)
		snprintf(out, n, "%.3g s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(out, n, "%.3g ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(out, n, "%.3g us", ns / 1e3);
	else
		snprintf(out, n, "%.0f ns", ns);
}

static void print_set(int64_t w, int with_res, const struct sample_set *s, int *all_ok)
{
	char win[32], res[32];
	int ok = pct(s->ms, s->n, 0.99) <= 20.0 && s->errors == 0;

	fmt_ns(win, sizeof(win), (double)w);
	if (with_res)
		fmt_ns(res, sizeof(res), (double)(w / 1500 > 0 ? w / 1500 : 1));
	else
		snprintf(res, sizeof(res), "-");
	printf("%-10s %-10s %8.2f %8.2f %8.2f %8.2f %9.0f %9.1f %6u%s", win, res, pct(s->ms, s->n, 0.5),
	       pct(s->ms, s->n, 0.95), pct(s->ms, s->n, 0.99), s->ms[s->n - 1], s->items / s->n,
	       s->bytes / s->n / 1024, s->truncated, s->errors ? " ERRORS" : "");
	if (with_res) {
		printf("  %s\n", ok ? "ok (p99 <= 20 ms)" : "MISSED (p99 <= 20 ms)");
		*all_ok &= ok;
	} else {
		printf("\n");
	}
}

/* The typical request: a window in the middle of the busiest track. */
static void typical(struct bench *b)
{
	int64_t w = b->o->typical_ns, s = b->start + (b->end - b->start) / 2 - w / 2;
	char path[256];
	struct su_resp r;
	FILE *f;

	path_for(b, path, sizeof(path), b->track[0], s, w, 1);
	get(b, path, &r);
	if (r.status != 200)
		die("the typical request failed");
	printf("typical_path=%s\ntypical_bytes=%zu\ntypical_items=%u\n", path, r.body_len, count_items(r.body));
	if (b->o->typical_out) {
		if ((f = fopen(b->o->typical_out, "wb")) == NULL || fwrite(r.body, 1, r.body_len, f) != r.body_len ||
		    fclose(f) != 0)
			die("cannot write --typical-out");
	}
	su_resp_free(&r);
}

static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		die("cannot find a free port");
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void usage(void)
{
	fprintf(stderr, "usage: query_bench --port P --trace ID [--samples N] [--seed S] [--tracks K]\n"
			"                   [--typical-window NS] [--typical-out FILE]\n"
			"                   [--against P2 --against-trace ID2]\n"
			"       query_bench --free-port\n");
	exit(2);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--free-port") == 0) {
			printf("%d\n", free_port());
			exit(0);
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--port") == 0)
			o->port = atoi(v);
		else if (strcmp(a, "--trace") == 0)
			o->trace = strtoll(v, NULL, 10);
		else if (strcmp(a, "--samples") == 0)
			o->samples = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--seed") == 0)
			o->seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--tracks") == 0)
			o->ntracks = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--typical-window") == 0)
			o->typical_ns = strtoll(v, NULL, 10);
		else if (strcmp(a, "--typical-out") == 0)
			o->typical_out = v;
		else if (strcmp(a, "--against") == 0)
			o->against = atoi(v);
		else if (strcmp(a, "--against-trace") == 0)
			o->against_trace = strtoll(v, NULL, 10);
		else
			usage();
	}
	if (o->port <= 0 || o->trace <= 0 || o->samples == 0 || o->ntracks == 0 || o->typical_ns <= 0 ||
	    (o->against != 0) != (o->against_trace != 0))
		usage();
}

/* --against: the two servers compared request by request (header). */
static int compare(struct bench *a, const struct opts *o, const int64_t *zoom, unsigned nz)
{
	struct bench b;
	double *ma = calloc(o->samples, sizeof(double)), *mb = calloc(o->samples, sizeof(double)), worst = 0;
	double *d = calloc(o->samples, sizeof(double)), sa = 0, sb = 0;
	unsigned z, i;

	if (ma == NULL || mb == NULL || d == NULL)
		die("out of memory");
	memset(&b, 0, sizeof(b));
	b.o = o;
	b.port = o->against;
	b.trace = o->against_trace;
	b.fd = -1;
	load_trace(&b);
	if (b.start != a->start || b.end != a->end || b.ntrack != a->ntrack)
		die("the two traces differ: not the same file ingested");
	for (i = 0; i < a->ntrack; i++)
		if (b.track[i] != a->track[i])
			die("the two traces' tracks differ: not the same file ingested");
	for (i = 0; i < 2 * nz; i++) /* warm up both */
		run_pair(a, &b, zoom[i % nz], 1, ma, mb, NULL);
	printf("\n%u requests per row to each, in pairs (the order alternating), random positions on %u tracks\n",
	       o->samples, a->ntrack);
	printf("%-10s %10s %10s %10s %10s %7s %12s\n", "window", "p50 ms", "p99 ms", "p50 ms", "p99 ms", "p99",
	       "pair diff");
	printf("%-10s %10s %10s %10s %10s %7s %12s\n", "", "(port)", "", "(against)", "", "ratio", "median us");
	for (z = 0; z < nz; z++) {
		char win[32];
		double r;

		run_pair(a, &b, zoom[z], o->samples, ma, mb, d);
		r = pct(mb, o->samples, 0.99) / pct(ma, o->samples, 0.99);
		worst = r > worst ? r : worst;
		sa += pct(ma, o->samples, 0.99);
		sb += pct(mb, o->samples, 0.99);
		fmt_ns(win, sizeof(win), (double)zoom[z]);
		printf("%-10s %10.2f %10.2f %10.2f %10.2f %7.2f %12.1f\n", win, pct(ma, o->samples, 0.5),
		       pct(ma, o->samples, 0.99), pct(mb, o->samples, 0.5), pct(mb, o->samples, 0.99), r,
		       pct(d, o->samples, 0.5) * 1e3);
	}
	printf("sum of the p99s over the zooms, against / port: %.2f\n", sb / sa);
	printf("worst p99 ratio (against / port): %.2f\n", worst);
	free(ma);
	free(mb);
	free(d);
	if (b.fd >= 0)
		close(b.fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { 0, 0, 200, 1, 4, 10000000, NULL, 0, 0 };
	struct bench b;
	int64_t zoom[MAX_ZOOMS], w;
	unsigned nz = 0, z, i;
	int all_ok = 1, mode;

	parse_args(argc, argv, &o);
	memset(&b, 0, sizeof(b));
	b.o = &o;
	b.port = o.port;
	b.trace = o.trace;
	b.fd = -1;
	b.rng = o.seed;
	load_trace(&b);
	for (w = b.end - b.start; w > 1000 && nz < MAX_ZOOMS - 1; w /= 10)
		zoom[nz++] = w;
	zoom[nz++] = 1000;
	if (o.against)
		return compare(&b, &o, zoom, nz);
	/* warm up: the first requests of a fresh server open the database */
	for (i = 0; i < 2 * nz; i++) {
		struct sample_set s;

		run_set(&b, zoom[i % nz], 1, 1, &s);
		free(s.ms);
	}
	printf("\n%u requests per row, one at a time on a keep-alive connection, random positions on %u tracks\n",
	       o.samples, b.ntrack);
	printf("%-10s %-10s %8s %8s %8s %8s %9s %9s %6s\n", "window", "resolution", "p50 ms", "p95 ms", "p99 ms",
	       "max ms", "items", "KB", "trunc");
	for (mode = 1; mode >= 0; mode--) {
		for (z = 0; z < nz; z++) {
			struct sample_set s;

			run_set(&b, zoom[z], mode, o.samples, &s);
			print_set(zoom[z], mode, &s, &all_ok);
			free(s.ms);
		}
		if (mode)
			printf("\n");
	}
	printf("\ntarget p99 <= 20 ms at every zoom with resolution: %s\n\n", all_ok ? "MET" : "MISSED");
	typical(&b);
	if (b.fd >= 0)
		close(b.fd);
	return 0;
}
