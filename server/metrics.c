/*
 * Operations: GET /healthz and GET /metrics (docs/API.md, Operations).
 *
 * Every request is counted by route (the pattern of the route table that
 * answered it, so that the labels stay few whatever ids are asked for),
 * method and status, and its wall time goes to a histogram per route and
 * method. The catalog adds the library by status, the ingest queue and
 * the ingest work done; the reply cache its hits and bytes; the process
 * its memory. /metrics writes the Prometheus text format (version 0.0.4).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server_internal.h"

enum { MAX_SERIES = 256, MAX_STATUSES = 16, LAT_BUCKETS = 12 };

static const double lat_bounds[LAT_BUCKETS] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
						0.1,   0.25,   0.5,   1,    2.5,   10 };

struct series {
	const char *route;  /* a static string: a route pattern or a name of this file's */
	char method[8];
	unsigned status[MAX_STATUSES];
	uint64_t by_status[MAX_STATUSES];
	uint64_t le[LAT_BUCKETS];
	uint64_t count;
	double sum;
};

struct srv_metrics {
	pthread_mutex_t mu;
	struct series s[MAX_SERIES];
	size_t n;          /* past MAX_SERIES (methods a client made up), requests go uncounted */
	time_t started;
};

struct srv_metrics *srv_metrics_new(void)
{
	struct srv_metrics *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	pthread_mutex_init(&m->mu, NULL);
	m->started = time(NULL);
	return m;
}

void srv_metrics_free(struct srv_metrics *m)
{
	if (m == NULL)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static struct series *series_of(struct srv_metrics *m, const char *route, const char *method)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->s[i].route, route) == 0 && strcmp(m->s[i].method, method) == 0)
			return &m->s[i];
	if (m->n == MAX_SERIES)
		return NULL;
	m->s[m->n].route = route;
	snprintf(m->s[m->n].method, sizeof(m->s[m->n].method), "%s", method);
	return &m->s[m->n++];
}

void srv_metrics_request(struct srv_metrics *m, const char *route, const char *method, unsigned status,
			 double seconds)
{
	struct series *x;
	int i;

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	if ((x = series_of(m, route ? route : "other", method)) == NULL) {
		pthread_mutex_unlock(&m->mu);
		return;
	}
	for (i = 0; i < MAX_STATUSES && x->status[i] != 0 && x->status[i] != status; i++)
		;
	if (i < MAX_STATUSES) {
		x->status[i] = status;
		x->by_status[i]++;
	}
	for (i = 0; i < LAT_BUCKETS && seconds > lat_bounds[i]; i++)
		;
	if (i < LAT_BUCKETS)
		x->le[i]++;
	x->count++;
	x->sum += seconds;
	pthread_mutex_unlock(&m->mu);
}

/* ---- the text format ---------------------------------------------------- */

static void out(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends one formatted line (lines here are short). */
static void out(struct jbuf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		jb_raw(b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void help(struct jbuf *b, const char *name, const char *type, const char *text)
{
	out(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* A histogram's buckets (cumulative), sum and count; labels may be "". */
static void histogram(struct jbuf *b, const char *name, const char *labels, const double *bounds,
		      const uint64_t *le, int n, uint64_t count, double sum)
{
	uint64_t acc = 0;
	int i;

	for (i = 0; i < n; i++) {
		acc += le[i];
		out(b, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, labels[0] ? "," : "", bounds[i],
			  acc);
	}
	out(b, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, labels[0] ? "," : "", count);
	out(b, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "", sum);
	out(b, "%s_count%s%s%s %" PRIu64 "\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "", count);
}

/* A route's label: its pattern without the optional trailing slash. */
static void route_label(const char *route, char *out, size_t n)
{
	size_t len = strlen(route);

	if (len > 2 && strcmp(route + len - 2, "/?") == 0)
		len -= 2;
	snprintf(out, n, "%.*s", (int)len, route);
}

static void requests(struct jbuf *b, struct srv_metrics *m)
{
	char labels[256], route[128];
	size_t i;
	int k;

	pthread_mutex_lock(&m->mu);
	help(b, "trace_server_http_requests_total", "counter", "HTTP requests answered, by route, method and status.");
	for (i = 0; i < m->n; i++) {
		route_label(m->s[i].route, route, sizeof(route));
		for (k = 0; k < MAX_STATUSES && m->s[i].status[k]; k++)
			out(b, "trace_server_http_requests_total{route=\"%s\",method=\"%s\",status=\"%u\"} %" PRIu64 "\n",
			    route, m->s[i].method, m->s[i].status[k], m->s[i].by_status[k]);
	}
	help(b, "trace_server_http_request_duration_seconds", "histogram",
	     "Wall time from a request's headers to its answer's end, by route and method.");
	for (i = 0; i < m->n; i++) {
		route_label(m->s[i].route, route, sizeof(route));
		snprintf(labels, sizeof(labels), "route=\"%s\",method=\"%s\"", route, m->s[i].method);
		histogram(b, "trace_server_http_request_duration_seconds", labels, lat_bounds, m->s[i].le, LAT_BUCKETS,
			  m->s[i].count, m->s[i].sum);
	}
	pthread_mutex_unlock(&m->mu);
}

static void library(struct jbuf *b, struct catalog *cat)
{
	struct cat_stats st;
	int i;

	cat_stats(cat, &st);
	help(b, "trace_server_traces", "gauge", "Traces in the library, by status.");
	for (i = 0; i < TS_NSTATUS; i++)
		out(b, "trace_server_traces{status=\"%s\"} %" PRIu64 "\n", cat_status_name(i), st.traces[i]);
	help(b, "trace_server_ingest_queue_depth", "gauge", "Traces waiting for or in ingest.");
	out(b, "trace_server_ingest_queue_depth %" PRIu64 "\n", st.traces[TS_QUEUED] + st.traces[TS_INGESTING]);
	help(b, "trace_server_stored_bytes", "gauge", "Bytes the library's files take.");
	out(b, "trace_server_stored_bytes %" PRIu64 "\n", st.stored_bytes);
	help(b, "trace_server_ingests_total", "counter", "Ingests ended since the start, by result.");
	out(b, "trace_server_ingests_total{result=\"ok\"} %" PRIu64 "\n", st.ingests_ok);
	out(b, "trace_server_ingests_total{result=\"failed\"} %" PRIu64 "\n", st.ingests_failed);
	help(b, "trace_server_ingest_bytes_total", "counter", "Source bytes of the ingests that ended well.");
	out(b, "trace_server_ingest_bytes_total %" PRIu64 "\n", st.ingest_bytes);
	help(b, "trace_server_ingest_duration_seconds", "histogram", "Wall time of whole ingests.");
	histogram(b, "trace_server_ingest_duration_seconds", "", cat_seconds_bounds, st.ingest.le, CAT_SECONDS_BUCKETS,
		  st.ingest.count, st.ingest.sum);
	help(b, "trace_server_store_cache_requests_total", "counter",
	     "Reads of trace files from the object store's local cache, by whether it held the file.");
	out(b, "trace_server_store_cache_requests_total{result=\"hit\"} %" PRIu64 "\n", st.store_hits);
	out(b, "trace_server_store_cache_requests_total{result=\"miss\"} %" PRIu64 "\n", st.store_misses);
	help(b, "trace_server_store_fetched_bytes_total", "counter", "Bytes downloaded from the object store.");
	out(b, "trace_server_store_fetched_bytes_total %" PRIu64 "\n", st.store_fetched_bytes);
	help(b, "trace_server_store_cache_bytes", "gauge", "Bytes the object store's local cache holds.");
	out(b, "trace_server_store_cache_bytes %" PRIu64 "\n", st.store_cache_bytes);
	help(b, "trace_server_store_errors_total", "counter", "Calls to the object store that failed.");
	out(b, "trace_server_store_errors_total %" PRIu64 "\n", st.store_errors);
	help(b, "trace_server_live_snapshot_duration_seconds", "histogram", "Wall time of live traces' snapshots and ingests' previews.");
	histogram(b, "trace_server_live_snapshot_duration_seconds", "", cat_seconds_bounds, st.snapshot.le,
		  CAT_SECONDS_BUCKETS, st.snapshot.count, st.snapshot.sum);
}

static void cache(struct jbuf *b, struct rcache *c)
{
	uint64_t hits, misses;
	size_t bytes, budget;

	pthread_mutex_lock(&c->mu);
	hits = c->hits;
	misses = c->misses;
	bytes = c->bytes;
	budget = c->budget;
	pthread_mutex_unlock(&c->mu);
	help(b, "trace_server_cache_requests_total", "counter", "Reply cache lookups, by result.");
	out(b, "trace_server_cache_requests_total{result=\"hit\"} %" PRIu64 "\n", hits);
	out(b, "trace_server_cache_requests_total{result=\"miss\"} %" PRIu64 "\n", misses);
	help(b, "trace_server_cache_bytes", "gauge", "Bytes of replies the cache holds.");
	out(b, "trace_server_cache_bytes %zu\n", bytes);
	help(b, "trace_server_cache_budget_bytes", "gauge", "The most the reply cache holds.");
	out(b, "trace_server_cache_budget_bytes %zu\n", budget);
}

static void process(struct jbuf *b, struct srv_metrics *m)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f != NULL) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	help(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	out(b, "process_resident_memory_bytes %ld\n", resident * sysconf(_SC_PAGESIZE));
	help(b, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds.");
	out(b, "process_start_time_seconds %lld\n", (long long)m->started);
}

enum MHD_Result srv_h_metrics(struct server *s, struct MHD_Connection *c, struct req *r)
{
	struct jbuf b;
	size_t len;
	char *body;

	jb_init(&b);
	if (s->metrics != NULL)
		requests(&b, s->metrics);
	library(&b, s->cat);
	cache(&b, &s->cache);
	if (s->metrics != NULL)
		process(&b, s->metrics);
	if ((body = jb_take(&b, &len)) == NULL)
		return srv_send_error(c, r, 500, "out_of_memory", "the server ran out of memory building the reply");
	return srv_send_body(c, r, 200, body, len, "text/plain; version=0.0.4");
}

enum MHD_Result srv_h_healthz(struct server *s, struct MHD_Connection *c, struct req *r)
{
	char cat_err[256], store_err[256];
	int ok = cat_health(s->cat, cat_err, sizeof(cat_err), store_err, sizeof(store_err)) == 0;
	struct jbuf b;

	jb_init(&b);
	jb_obj(&b);
	jb_key(&b, "status");
	jb_str(&b, ok ? "ok" : "unavailable");
	jb_key(&b, "catalog");
	jb_str(&b, cat_err[0] ? cat_err : "ok");
	jb_key(&b, "store");
	jb_str(&b, store_err[0] ? store_err : "ok");
	jb_obj_end(&b);
	return srv_send_json(c, r, ok ? 200 : 503, &b);
}
