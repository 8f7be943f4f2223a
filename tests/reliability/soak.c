/*
 * soak: the server under the viewer's load for a bounded time, with the
 * library changing underneath.
 *
 *   soak [--seconds N]      (default: env SOAK_SECONDS, else 60)
 *
 * Starts the server (TRACE_SERVER) with a fresh --data, uploads four traces
 * (three generated FXT archives and one generated XRay log) and learns
 * their tracks, CPUs, time ranges, names and slice ids. Then for N seconds:
 *   - 32 client threads, each on its own keep-alive connection, issue the
 *     viewer's query mix against those traces at random: the library list
 *     and trace object, tracks, slices with resolution at four zoom levels
 *     (whole trace, 1/10, 1/100, 1/1000, as the viewer asks while zooming),
 *     counters with resolution, flows, sched, logs, search, stats, slice
 *     details, and now and then a small read-only SQL query; a third of
 *     their requests go to traces the churn thread adds and deletes;
 *   - one churn thread uploads a small trace (with ?wait=1 or without),
 *     queries it, deletes it, again and again; sometimes it deletes a
 *     trace while it is still being ingested.
 * Every reply must be 2xx with valid JSON; for a churned trace 404 (deleted)
 * and 409 (not ready yet) are expected too. The server's VmRSS and open
 * descriptors (/proc/PID/status, /proc/PID/fd) are read after a warm-up (a
 * tenth of the run, at least 5 s) and again when the load has stopped;
 * they may grow by at most 25 % + 80 MiB (the reply cache alone may fill
 * its 64 MiB budget after the warm-up) and 16 descriptors. The replies
 * to a fixed set of queries must be the same at the end as at the start.
 * Prints latency p50/p95/p99/max per endpoint and the totals, then
 * "soak: N passed, M failed". Stops by itself.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "rel_util.h"

enum { NCLIENTS = 32, NTRACES = 4, MAX_TRACKS = 256, MAX_SAMPLES = 4000000 };

enum endpoint {
	E_LIST, E_TRACE, E_TRACKS, E_SLICES, E_COUNTERS, E_FLOWS, E_SCHED, E_LOGS, E_SEARCH, E_STATS, E_DETAIL,
	E_SQL, E_CHURN, E_N
};
static const char *const ep_names[E_N] = { "list",  "trace",  "tracks", "slices", "counters", "flows", "sched",
					   "logs",  "search", "stats",  "detail", "query",   "churned" };

struct tinfo {
	int64_t id, start, end;
	int64_t threads[MAX_TRACKS], counters[MAX_TRACKS], cpus[64], slice_ids[64];
	int nthreads, ncounters, ncpus, nslices;
	char names[16][64];
	int nnames;
};

static struct tinfo T[NTRACES];
static struct su_server S;
static _Atomic int g_stop;
static _Atomic int64_t g_churn_id = -1; /* the churned trace now, -1 none */

struct sample {
	float ms;
	uint8_t ep;
};

struct client {
	int idx;
	uint64_t rng;
	struct sample *s;
	size_t ns;
	unsigned long errors, requests;
	char first_error[512];
};

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* ---- learning the traces ----------------------------------------------------- */

static cJSON *get_json(int port, const char *path, int *status)
{
	struct su_resp r;
	cJSON *j = NULL;

	*status = 0;
	if (rel_req(port, "GET", path, NULL, NULL, 0, &r, 60000) == 0) {
		*status = r.status;
		j = rel_json(&r);
	}
	su_resp_free(&r);
	return j;
}

static int learn(struct tinfo *t)
{
	char path[160];
	const cJSON *p, *x;
	cJSON *j, *k;
	int st;

	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64, t->id);
	if ((j = get_json(S.port, path, &st)) == NULL)
		return -1;
	t->start = rel_int(j, "start_ns");
	t->end = (int64_t)cJSON_GetNumberValue(rel_get(j, "end_ns"));
	cJSON_Delete(j);
	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", t->id);
	if ((j = get_json(S.port, path, &st)) == NULL)
		return -1;
	cJSON_ArrayForEach(p, rel_get(j, "processes"))
	{
		cJSON_ArrayForEach(x, rel_get(p, "threads"))
			if (cJSON_IsNumber(rel_get(x, "track_id")) && t->nthreads < MAX_TRACKS)
				t->threads[t->nthreads++] = rel_int(x, "track_id");
		cJSON_ArrayForEach(x, rel_get(p, "async_tracks"))
			if (t->nthreads < MAX_TRACKS)
				t->threads[t->nthreads++] = rel_int(x, "track_id");
		cJSON_ArrayForEach(x, rel_get(p, "counter_tracks"))
			if (t->ncounters < MAX_TRACKS)
				t->counters[t->ncounters++] = rel_int(x, "track_id");
	}
	cJSON_ArrayForEach(x, rel_get(j, "cpus"))
		if (t->ncpus < 64)
			t->cpus[t->ncpus++] = rel_int(x, "cpu");
	cJSON_Delete(j);
	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/stats?limit=16", t->id);
	if ((k = get_json(S.port, path, &st)) != NULL) {
		cJSON_ArrayForEach(x, rel_get(k, "names"))
			if (t->nnames < 16)
				snprintf(t->names[t->nnames++], sizeof(t->names[0]), "%.6s", rel_str(x, "name"));
		cJSON_Delete(k);
	}
	if (t->nthreads > 0) {
		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&limit=64", t->id,
			t->threads[0]);
		if ((k = get_json(S.port, path, &st)) != NULL) {
			cJSON_ArrayForEach(x, rel_get(k, "slices"))
				if (t->nslices < 64)
					t->slice_ids[t->nslices++] = rel_int(x, "id");
			cJSON_Delete(k);
		}
	}
	return t->nthreads > 0 && t->end > t->start ? 0 : -1;
}

/* ---- the viewer's mix ---------------------------------------------------------- */

/* A window at one of four zoom levels; res = ns per pixel at 1500 pixels. */
static void window(const struct tinfo *t, uint64_t *rng, int64_t *s, int64_t *e, int64_t *res)
{
	static const int64_t zoom[] = { 1, 10, 100, 1000 };
	int64_t span = t->end - t->start, w = span / zoom[rnd(rng) % 4];

	if (w < 1)
		w = 1;
	*s = t->start + (span > w ? (int64_t)(rnd(rng) % (uint64_t)(span - w + 1)) : 0);
	*e = *s + w;
	*res = w / 1500 > 0 ? w / 1500 : 1;
}

/* The path of one request of the mix; returns its endpoint. */
static int make_request(const struct tinfo *t, uint64_t *rng, char *path, size_t n)
{
	int64_t s, e, res;
	unsigned pick = (unsigned)(rnd(rng) % 100);

	window(t, rng, &s, &e, &res);
	if (pick < 4) {
		rel_fmt(path, n, "/api/traces");
		return E_LIST;
	}
	if (pick < 8) {
		rel_fmt(path, n, "/api/traces/%" PRId64, t->id);
		return E_TRACE;
	}
	if (pick < 14) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/tracks", t->id);
		return E_TRACKS;
	}
	if (pick < 54 && t->nthreads) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&start=%" PRId64 "&end=%" PRId64
				 "&resolution=%" PRId64,
			t->id, t->threads[rnd(rng) % (uint64_t)t->nthreads], s, e, res);
		return E_SLICES;
	}
	if (pick < 64 && t->ncounters) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/counters?track=%" PRId64 "&start=%" PRId64 "&end=%" PRId64
				 "&resolution=%" PRId64,
			t->id, t->counters[rnd(rng) % (uint64_t)t->ncounters], s, e, res);
		return E_COUNTERS;
	}
	if (pick < 70) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/flows?start=%" PRId64 "&end=%" PRId64, t->id, s, e);
		return E_FLOWS;
	}
	if (pick < 76 && t->ncpus) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/sched?cpu=%" PRId64 "&start=%" PRId64 "&end=%" PRId64, t->id,
			t->cpus[rnd(rng) % (uint64_t)t->ncpus], s, e);
		return E_SCHED;
	}
	if (pick < 80) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/logs?start=%" PRId64 "&end=%" PRId64 "&limit=1000", t->id, s, e);
		return E_LOGS;
	}
	if (pick < 85 && t->nnames) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/search?q=%s&limit=200", t->id,
			t->names[rnd(rng) % (uint64_t)t->nnames]);
		return E_SEARCH;
	}
	if (pick < 90) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/stats?start=%" PRId64 "&end=%" PRId64, t->id, s, e);
		return E_STATS;
	}
	if (pick < 99 && t->nslices) {
		rel_fmt(path, n, "/api/traces/%" PRId64 "/slices/%" PRId64, t->id, t->slice_ids[rnd(rng) % (uint64_t)t->nslices]);
		return E_DETAIL;
	}
	rel_fmt(path, n, "/api/traces/%" PRId64 "/query", t->id);
	return E_SQL;
}

static const char SQL[] = "SELECT name, count(*), sum(dur) FROM slice_view GROUP BY 1 ORDER BY 2 DESC LIMIT 10";

/* One request on the client's keep-alive connection (reconnecting when the
 * server closed it). Returns 0 with r filled, -1 when there was no reply. */
static int keep_alive_req(int *fd, const char *method, const char *path, const char *body, struct su_resp *r)
{
	struct su_req q = { method, path, NULL, body, body ? strlen(body) : 0, 0, 1 };
	int tries;

	for (tries = 0; tries < 2; tries++) {
		if (*fd < 0 && (*fd = su_connect(S.port)) < 0)
			return -1;
		if (su_exchange(*fd, &q, r, 60000) == 0) {
			if (r->closing) {
				close(*fd);
				*fd = -1;
			}
			return 0;
		}
		close(*fd); /* the server closed an idle connection: try once more */
		*fd = -1;
	}
	return -1;
}

static void client_error(struct client *c, const char *path, const struct su_resp *r, const char *why)
{
	if (c->errors++ == 0)
		snprintf(c->first_error, sizeof(c->first_error), "%.150s: %.40s: %d %.300s", path, why, r ? r->status : 0,
			 r && r->body ? r->body : "");
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	char path[512];
	int fd = -1;

	while (!atomic_load(&g_stop)) {
		int64_t churn = atomic_load(&g_churn_id);
		int use_churn = churn > 0 && rnd(&c->rng) % 3 == 0, ep;
		const struct tinfo *t = &T[rnd(&c->rng) % NTRACES];
		struct su_resp r;
		double t0;
		cJSON *j;

		if (use_churn) {
			static const char *const sub[] = { "", "/tracks", "/stats", "/flows?limit=100" };

			rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "%s", churn, sub[rnd(&c->rng) % 4]);
			ep = E_CHURN;
		} else {
			ep = make_request(t, &c->rng, path, sizeof(path));
		}
		t0 = su_now();
		if (keep_alive_req(&fd, ep == E_SQL ? "POST" : "GET", path, ep == E_SQL ? SQL : NULL, &r) != 0) {
			client_error(c, path, NULL, "no reply");
			c->requests++;
			continue;
		}
		if (c->ns < MAX_SAMPLES / NCLIENTS)
			c->s[c->ns++] = (struct sample){ (float)((su_now() - t0) * 1e3), (uint8_t)ep };
		c->requests++;
		j = rel_json(&r);
		if (ep == E_CHURN && (r.status == 404 || r.status == 409)) {
			char why[256];

			if (!rel_is_error(&r, r.status, NULL, why, sizeof(why)))
				client_error(c, path, &r, "an error reply that is not the API's");
		} else if (r.status < 200 || r.status >= 300 || j == NULL) {
			client_error(c, path, &r, j ? "status" : "not JSON");
		}
		cJSON_Delete(j);
		su_resp_free(&r);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* ---- churn ------------------------------------------------------------------------ */

struct churn {
	uint8_t *trace[3];
	size_t len[3];
	unsigned long added, deleted, errors, cancelled;
	char first_error[512];
};

static void churn_error(struct churn *ch, const char *what, const struct su_resp *r)
{
	if (ch->errors++ == 0)
		snprintf(ch->first_error, sizeof(ch->first_error), "%s: %d %.300s", what, r ? r->status : 0,
			 r && r->body ? r->body : "");
}

static void *churn_main(void *arg)
{
	struct churn *ch = arg;
	unsigned i;

	for (i = 0; !atomic_load(&g_stop); i++) {
		int wait = i % 3 != 2;
		struct su_resp r;
		char path[128];
		int64_t id;

		id = rel_upload(S.port, wait ? "?wait=1&name=churn" : "?name=churn", ch->trace[i % 3], ch->len[i % 3],
				NULL, &r, 60000);
		if (id <= 0 || r.status != (wait ? 201 : 202)) {
			churn_error(ch, "upload", &r);
			su_resp_free(&r);
			continue;
		}
		su_resp_free(&r);
		ch->added++;
		atomic_store(&g_churn_id, id);
		su_sleep_ms(wait ? 300 : (unsigned)(i % 50));
		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
		if (rel_req(S.port, "DELETE", path, NULL, NULL, 0, &r, 60000) != 0 || r.status != 204)
			churn_error(ch, "delete", &r);
		else
			ch->deleted++;
		ch->cancelled += !wait;
		su_resp_free(&r);
		if (rel_req(S.port, "GET", path, NULL, NULL, 0, &r, 60000) != 0 || r.status != 404)
			churn_error(ch, "get after delete", &r);
		su_resp_free(&r);
	}
	return NULL;
}

/* ---- report -------------------------------------------------------------------------- */

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static void report_latency(struct client *cl, double seconds)
{
	float *v = malloc(sizeof(float) * MAX_SAMPLES);
	unsigned long total = 0;
	int ep, i;

	printf("# %-9s %8s %8s %8s %8s %8s   (ms)\n", "endpoint", "requests", "p50", "p95", "p99", "max");
	for (ep = 0; ep < E_N; ep++) {
		size_t n = 0, k;

		for (i = 0; i < NCLIENTS; i++)
			for (k = 0; k < cl[i].ns; k++)
				if (cl[i].s[k].ep == ep)
					v[n++] = cl[i].s[k].ms;
		if (n == 0)
			continue;
		qsort(v, n, sizeof(float), cmp_float);
		printf("# %-9s %8zu %8.2f %8.2f %8.2f %8.2f\n", ep_names[ep], n, v[n / 2], v[(n * 95) / 100],
		       v[(n * 99) / 100], v[n - 1]);
		total += n;
	}
	printf("# all       %8lu requests in %.0f s: %.0f per second\n", total, seconds, total / seconds);
	free(v);
}

/* Replies to fixed queries, to compare the start with the end. */
static char *fingerprint(void)
{
	struct su_buf b = { 0 };
	int i;

	for (i = 0; i < NTRACES; i++) {
		char path[256];
		struct su_resp r;

		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&resolution=%" PRId64, T[i].id,
			T[i].threads[0], (T[i].end - T[i].start) / 1000 + 1);
		if (rel_req(S.port, "GET", path, NULL, NULL, 0, &r, 60000) == 0)
			su_buf_add(&b, r.body, r.body_len);
		su_resp_free(&r);
		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/stats", T[i].id);
		if (rel_req(S.port, "GET", path, NULL, NULL, 0, &r, 60000) == 0)
			su_buf_add(&b, r.body, r.body_len);
		su_resp_free(&r);
	}
	return b.p;
}

/* ---- main ----------------------------------------------------------------------------- */

static int setup(struct churn *ch)
{
	static const unsigned ev[3] = { 200000, 80000, 30000 }, th[3] = { 12, 6, 3 };
	char path[1200];
	int i;

	for (i = 0; i < NTRACES; i++) {
		struct su_resp r;
		uint8_t *p;
		size_t n;

		rel_fmt(path, sizeof(path), "%s/t%d", R.work, i);
		if ((i < 3 ? rel_gen_fxt(path, ev[i], th[i], 10 + (unsigned)i) : rel_gen_xray(path, 5, 200000, 8, 7)) != 0 ||
		    (p = rel_read_file(path, &n)) == NULL)
			return -1;
		T[i].id = rel_upload(S.port, "?wait=1&name=soak", p, n, NULL, &r, 300000);
		free(p);
		if (r.status != 201 || learn(&T[i]) != 0) {
			printf("# trace %d: %d %.200s\n", i, r.status, r.body ? r.body : "");
			su_resp_free(&r);
			return -1;
		}
		su_resp_free(&r);
		rel_note("trace %" PRId64 ": %d slice tracks, %d counter tracks, %d cpus, %d names, [%" PRId64 ", %" PRId64 "]",
			 T[i].id, T[i].nthreads, T[i].ncounters, T[i].ncpus, T[i].nnames, T[i].start, T[i].end);
	}
	for (i = 0; i < 3; i++) {
		rel_fmt(path, sizeof(path), "%s/churn%d", R.work, i);
		if (rel_gen_fxt(path, 3000 + 4000 * (unsigned)i, 2 + (unsigned)i, 50 + (unsigned)i) != 0 ||
		    (ch->trace[i] = rel_read_file(path, &ch->len[i])) == NULL)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct client cl[NCLIENTS];
	struct churn ch = { 0 };
	pthread_t th[NCLIENTS + 1];
	double seconds = getenv("SOAK_SECONDS") ? atof(getenv("SOAK_SECONDS")) : 60, warm, t0;
	long rss0, rss1, rss_max = 0;
	int fd0, fd1, i, rc;
	char data[1200], *fp0, *fp1;
	unsigned long req = 0, err = 0;

	if (argc > 2 && strcmp(argv[1], "--seconds") == 0)
		seconds = atof(argv[2]);
	if (seconds < 5)
		seconds = 5;
	warm = seconds / 10 > 5 ? seconds / 10 : 5;
	rel_setup("soak");
	rel_fmt(data, sizeof(data), "%s/data", R.work);
	if (!rel_check(rel_start(&S, data, NULL) == 0 && setup(&ch) == 0, "setup: 4 traces uploaded and ready"))
		return rel_summary("soak");
	fp0 = fingerprint();
	t0 = su_now();
	for (i = 0; i < NCLIENTS; i++) {
		cl[i].idx = i;
		cl[i].rng = UINT64_C(0x5eed) + (uint64_t)i * 7919;
		cl[i].s = malloc(sizeof(struct sample) * (MAX_SAMPLES / NCLIENTS));
		pthread_create(&th[i], NULL, client_main, &cl[i]);
	}
	pthread_create(&th[NCLIENTS], NULL, churn_main, &ch);
	su_sleep_ms((unsigned)(warm * 1000));
	rss0 = rel_rss_kb(S.pid);
	fd0 = rel_fd_count(S.pid);
	rel_note("after %.0f s of warm-up: VmRSS %ld KiB, %d fds", warm, rss0, fd0);
	{
		double next = su_now() + (seconds - warm) / 5;

		while (su_now() - t0 < seconds) {
			long r = rel_rss_kb(S.pid);

			if (r > rss_max)
				rss_max = r;
			if (su_now() >= next) {
				rel_note("at %.0f s: VmRSS %ld KiB, %d fds", su_now() - t0, r, rel_fd_count(S.pid));
				next += (seconds - warm) / 5;
			}
			su_sleep_ms(500);
		}
	}
	atomic_store(&g_stop, 1);
	for (i = 0; i <= NCLIENTS; i++)
		pthread_join(th[i], NULL);
	su_sleep_ms(1000);
	rss1 = rel_rss_kb(S.pid);
	fd1 = rel_fd_count(S.pid);
	rel_note("at the end: VmRSS %ld KiB (max %ld during the run), %d fds", rss1, rss_max, fd1);
	report_latency(cl, su_now() - t0);
	for (i = 0; i < NCLIENTS; i++) {
		req += cl[i].requests;
		err += cl[i].errors;
		if (cl[i].errors)
			printf("# client %d: %lu errors, the first: %s\n", i, cl[i].errors, cl[i].first_error);
	}
	rel_check(err == 0, "queries: %lu requests, %lu errors", req, err);
	rel_check(ch.errors == 0 && ch.added > 0, "churn: %lu traces added, %lu deleted (%lu while ingesting), %lu errors%s%s",
		  ch.added, ch.deleted, ch.cancelled, ch.errors, ch.errors ? ", the first: " : "", ch.first_error);
	rel_check(rss1 >= 0 && rss1 <= rss0 + rss0 / 4 + 80 * 1024, "memory: VmRSS %ld KiB after warm-up, %ld KiB at the end",
		  rss0, rss1);
	rel_check(fd1 >= 0 && fd1 <= fd0 + 16, "descriptors: %d after warm-up, %d at the end", fd0, fd1);
	fp1 = fingerprint();
	rel_check(fp0 && fp1 && strcmp(fp0, fp1) == 0, "the same queries give the same replies after the run");
	free(fp0);
	free(fp1);
	rc = su_server_stop(&S, SIGTERM);
	rel_check(rc == 0, "the server stops cleanly on SIGTERM (exit %d)", rc);
	rel_check(rel_log_reports(R.log) == 0, "no sanitizer report in the server log");
	for (i = 0; i < NCLIENTS; i++)
		free(cl[i].s);
	for (i = 0; i < 3; i++)
		free(ch.trace[i]);
	return rel_summary("soak");
}
