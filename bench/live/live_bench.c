/*
 * Live benchmark: a stream into POST /api/traces?live=1 at a target rate,
 * while the trace is watched.
 *
 *   live_bench SERVER_PID PORT ARCHIVE RATE_MB_S SECONDS
 *
 * One thread sends ARCHIVE (looped when the run outlasts it) as a chunked
 * body at RATE MB/s. Another polls the trace object every 20 ms and, for
 * every 256 KB sent, notes when `stream.committed_bytes` (a growing
 * trace's last commit; `visible_bytes` for a snapshot) first covered it:
 * the visibility latency of those bytes (a record is visible when the
 * database being served holds it; a growing trace's commit holds what came
 * up to its order's window, docs/API.md). A third asks for the slices of the
 * trace's busiest track in random windows at random zooms and times each
 * request from its sending to its whole reply received, as bench/query
 * does (viewport latency on a growing trace; parsing the reply is the
 * client's work and is left out). With VIEWER=0 in the environment no
 * viewport is asked for: the visibility is then the ingest's alone, with
 * the machine's cores to itself (the viewer's requests, one after another
 * without a pause, take most of a core of two). The server's RSS is read
 * from /proc every 100 ms while the stream runs (the server's own; a
 * growing trace's ingest is a process of its own), so what is compared is its largest value over
 * the first minute (or the first sixth of a shorter run) and over the
 * same length of time at the end of the stream (before its last chunk:
 * after it the trace is ingested whole).
 *
 * Printed: the rate achieved (MB sent / seconds sent), visibility latency
 * p50/p95/max over the samples (each sample: the seconds from a byte
 * offset being sent to it being visible), how many of the watcher's polls
 * found the view beginning at byte 0 (`stream.from_byte`: the whole
 * history; issue 41 wants all of them) and the furthest it began, viewport p50/p99 (each sample
 * one request, from sent to its whole reply received; also each zoom's
 * alone, the window being the trace's length over 1, 2, 4 ... 2048: a
 * zoomed-out reply holds thousands of items), the largest RSS
 * early and late and their ratio (late / early). Figures, not pass/fail.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include <cjson/cJSON.h>

#include "../../tests/server_util.h"

enum { MARK = 256 * 1024, MAX_MARKS = 1 << 20, MAX_VIEWS = 1 << 18, ZOOMS = 12 };

static struct {
	int port;
	pid_t server;
	uint8_t *bytes;
	size_t n;
	double rate, seconds, t0;
	_Atomic int64_t id;
	_Atomic uint64_t sent;
	_Atomic int done;
	double *sent_at; /* mark i: when bytes (i + 1) * MARK had been sent */
	double *seen_at; /* mark i: when they were first visible */
	double *views;
	unsigned char *zooms; /* views[i]'s zoom: its window is the trace's length >> zooms[i] */
	_Atomic size_t nviews;
	double sent_secs;
	_Atomic int ending; /* the sender is about to end the body: stop sampling */
	size_t polls, polls_whole;      /* the watcher's polls with a stream object, and of them
					 * those whose view began at byte 0 */
	double from_max, from_last;     /* the largest stream.from_byte seen, and the last */
} B;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	size_t k;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	k = (size_t)(p * (double)n + 0.999999);
	return v[k == 0 ? 0 : k > n ? n - 1 : k - 1];
}

static long rss_kb(void)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)B.server);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = write(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *sender(void *arg)
{
	char head[256], h[32];
	size_t off = 0, chunk = 64 * 1024, next = 0;
	uint64_t sent = 0;
	int fd = su_connect(B.port);

	(void)arg;
	snprintf(head, sizeof(head),
		 "POST /api/traces?live=1&name=bench-live HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		 "Connection: close\r\n\r\n");
	if (fd < 0 || write_all(fd, head, strlen(head)) != 0) {
		fprintf(stderr, "cannot stream to the server\n");
		exit(1);
	}
	while (su_now() - B.t0 < B.seconds) {
		size_t k = B.n - off < chunk ? B.n - off : chunk;
		double due;

		snprintf(h, sizeof(h), "%zx\r\n", k);
		if (write_all(fd, h, strlen(h)) || write_all(fd, B.bytes + off, k) || write_all(fd, "\r\n", 2))
			break;
		sent += k;
		for (; next < MAX_MARKS && (next + 1) * MARK <= sent; next++)
			B.sent_at[next] = su_now();
		atomic_store(&B.sent, sent);
		off = off + k == B.n ? 0 : off + k;
		due = B.t0 + (double)sent / (B.rate * 1e6);
		if (due > su_now())
			su_sleep_ms((unsigned)((due - su_now()) * 1000));
	}
	B.sent_secs = su_now() - B.t0;
	atomic_store(&B.ending, 1); /* RSS is sampled no more: the whole stream is ingested next */
	su_sleep_ms(150);
	write_all(fd, "0\r\n\r\n", 5);
	atomic_store(&B.done, 1);
	close(fd);
	return NULL;
}

static cJSON *get(const char *path)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	cJSON *j = NULL;

	if (su_request(B.port, &q, &r, 60000) == 0) {
		if (r.status == 200)
			j = cJSON_ParseWithLength(r.body, r.body_len);
		su_resp_free(&r);
	}
	return j;
}

/* Finds the live trace, then follows its visible bytes. */
static void *watcher(void *arg)
{
	size_t marks_seen = 0;
	char path[64];

	(void)arg;
	while (atomic_load(&B.id) == 0) {
		cJSON *j = get("/api/traces?status=live&limit=1");
		cJSON *t = j ? cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0) : NULL;

		if (t)
			atomic_store(&B.id, (int64_t)cJSON_GetObjectItem(t, "id")->valuedouble);
		cJSON_Delete(j);
		su_sleep_ms(20);
	}
	snprintf(path, sizeof(path), "/api/traces/%" PRId64, atomic_load(&B.id));
	while (!atomic_load(&B.done)) {
		cJSON *t = get(path);
		cJSON *s = t ? cJSON_GetObjectItem(t, "stream") : NULL;
		/* what the database being served holds the records of: a growing
		 * trace's last commit (committed_bytes), else a snapshot's bytes */
		cJSON *v = s ? cJSON_GetObjectItem(s, "committed_bytes") : NULL;

		if (!cJSON_IsNumber(v) && s != NULL)
			v = cJSON_GetObjectItem(s, "visible_bytes");
		double now = su_now();

		cJSON *f = s ? cJSON_GetObjectItem(s, "from_byte") : NULL;

		if (cJSON_IsNumber(v) && !atomic_load(&B.ending)) {
			double from = cJSON_IsNumber(f) ? f->valuedouble : 0;

			B.polls++;
			B.polls_whole += from == 0;
			B.from_last = from;
			if (from > B.from_max)
				B.from_max = from;
		}
		if (cJSON_IsNumber(v)) {
			size_t marks = (size_t)(v->valuedouble / MARK);

			for (; marks_seen < marks && marks_seen < MAX_MARKS; marks_seen++)
				B.seen_at[marks_seen] = now;
		}
		cJSON_Delete(t);
		su_sleep_ms(20);
	}
	return NULL;
}

/* Viewport requests on the growing trace: random windows and zooms. */
static void *viewer(void *arg)
{
	uint64_t rng = 88172645463325252ull;
	char path[256];

	(void)arg;
	while (atomic_load(&B.id) == 0 && !atomic_load(&B.done))
		su_sleep_ms(20);
	while (!atomic_load(&B.done)) {
		struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
		struct su_resp r;
		cJSON *t;
		int64_t end, start, span, res;
		double t0, dt;
		unsigned zoom;
		int ok;

		snprintf(path, sizeof(path), "/api/traces/%" PRId64, atomic_load(&B.id));
		t = get(path);
		end = t && cJSON_IsNumber(cJSON_GetObjectItem(t, "end_ns")) ? (int64_t)cJSON_GetObjectItem(t, "end_ns")->valuedouble : 0;
		cJSON_Delete(t);
		if (end <= 0) {
			su_sleep_ms(50);
			continue;
		}
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		zoom = (unsigned)(rng % ZOOMS);
		span = end >> zoom;
		if (span < 1000)
			span = 1000;
		start = (int64_t)((rng >> 12) % (uint64_t)(end - span + 1 > 0 ? end - span + 1 : 1));
		res = span / 1600 > 0 ? span / 1600 : 1;
		snprintf(path, sizeof(path),
			 "/api/traces/%" PRId64 "/slices?track=1&start=%" PRId64 "&end=%" PRId64 "&resolution=%" PRId64,
			 atomic_load(&B.id), start, start + span, res);
		/* timed as bench/query times a viewport: from the request sent
		 * to its whole reply received; reading the JSON is the
		 * client's work, not the server's (a zoomed-out reply of ten
		 * thousand slices takes cJSON several milliseconds) */
		t0 = su_now();
		ok = su_request(B.port, &q, &r, 60000) == 0;
		dt = su_now() - t0;
		if (ok && r.status == 200 && atomic_load(&B.nviews) < MAX_VIEWS) {
			size_t k = atomic_fetch_add(&B.nviews, 1);

			B.views[k] = dt * 1e3;
			B.zooms[k] = (unsigned char)zoom;
		}
		if (ok)
			su_resp_free(&r);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t ts, tw, tv;
	double *lat, early_at, *rss_t;
	long early = 0, late = 0, *rss_v;
	size_t nrss = 0, cap_rss;
	size_t i, nlat = 0, marks;
	FILE *f;
	int viewing;

	if (argc != 6) {
		fprintf(stderr, "usage: live_bench SERVER_PID PORT ARCHIVE RATE_MB_S SECONDS\n");
		return 2;
	}
	B.server = (pid_t)atoi(argv[1]);
	B.port = atoi(argv[2]);
	B.rate = atof(argv[4]);
	B.seconds = atof(argv[5]);
	if ((f = fopen(argv[3], "rb")) == NULL)
		return 1;
	fseek(f, 0, SEEK_END);
	B.n = (size_t)ftell(f);
	rewind(f);
	B.bytes = malloc(B.n);
	if (B.bytes == NULL || fread(B.bytes, 1, B.n, f) != B.n)
		return 1;
	fclose(f);
	B.sent_at = calloc(MAX_MARKS, sizeof(double));
	B.seen_at = calloc(MAX_MARKS, sizeof(double));
	B.views = calloc(MAX_VIEWS, sizeof(double));
	B.zooms = calloc(MAX_VIEWS, 1);
	if (B.sent_at == NULL || B.seen_at == NULL || B.views == NULL || B.zooms == NULL) {
		fprintf(stderr, "live_bench: out of memory\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	B.t0 = su_now();
	viewing = getenv("VIEWER") == NULL || strcmp(getenv("VIEWER"), "0") != 0;
	early_at = B.seconds >= 360 ? 60 : B.seconds / 6;
	pthread_create(&ts, NULL, sender, NULL);
	pthread_create(&tw, NULL, watcher, NULL);
	if (viewing)
		pthread_create(&tv, NULL, viewer, NULL);
	cap_rss = (size_t)(B.seconds * 10) + 100;
	rss_t = calloc(cap_rss, sizeof(double));
	rss_v = calloc(cap_rss, sizeof(long));
	while (!atomic_load(&B.done)) {
		if (!atomic_load(&B.ending) && nrss < cap_rss && rss_t && rss_v) {
			rss_t[nrss] = su_now() - B.t0;
			rss_v[nrss++] = rss_kb();
		}
		su_sleep_ms(100);
	}
	pthread_join(ts, NULL);
	for (i = 0; i < nrss; i++) {
		if (rss_t[i] <= early_at && rss_v[i] > early)
			early = rss_v[i];
		if (rss_t[i] >= rss_t[nrss - 1] - early_at && rss_v[i] > late)
			late = rss_v[i];
	}
	pthread_join(tw, NULL);
	if (viewing)
		pthread_join(tv, NULL);
	marks = atomic_load(&B.sent) / MARK;
	lat = calloc(marks + 1, sizeof(double));
	for (i = 0; i < marks && i < MAX_MARKS; i++)
		if (B.seen_at[i] > 0)
			lat[nlat++] = B.seen_at[i] - B.sent_at[i];
	printf("streamed:   %.1f MB in %.1f s = %.1f MB/s (target %.0f MB/s)\n", (double)atomic_load(&B.sent) / 1e6,
	       B.sent_secs, (double)atomic_load(&B.sent) / 1e6 / B.sent_secs, B.rate);
	{
		double p50 = pct(lat, nlat, 0.5), p95 = pct(lat, nlat, 0.95); /* sorts lat */

		printf("visibility: %zu of %zu marks (%d KB each) visible before the stream ended; p50 %.2f s, "
		       "p95 %.2f s, max %.2f s (target: p95 <= 1 s, max 2 s)\n",
		       nlat, marks, MARK / 1024, p50, p95, nlat ? lat[nlat - 1] : 0.0);
	}
	printf("history:    the view began at byte 0 in %zu of %zu polls; it began at most %.1f MB in, %.1f MB in at "
	       "the last (target: byte 0 throughout: %s)\n",
	       B.polls_whole, B.polls, B.from_max / 1e6, B.from_last / 1e6,
	       B.polls > 0 && B.polls_whole == B.polls ? "met" : "MISSED");
	if (viewing) {
		/* each zoom's alone first (pct sorts what it is given), then all */
		size_t n = atomic_load(&B.nviews), z, k, m;
		double *zv = malloc((n ? n : 1) * sizeof(*zv));

		printf("viewport by zoom (window = the trace's length >> z; requests, p50, p99 ms):");
		for (z = 0; zv != NULL && z < ZOOMS; z++) {
			for (k = m = 0; k < n; k++)
				if (B.zooms[k] == z)
					zv[m++] = B.views[k];
			printf("%s z%zu %zu %.1f %.1f", z ? "," : "", z, m, pct(zv, m, 0.5), pct(zv, m, 0.99));
		}
		printf("\n");
		free(zv);
	}
	if (viewing)
		printf("viewport:   %zu requests on the growing trace; p50 %.2f ms, p99 %.2f ms (target: p99 <= 20 ms)\n",
		       atomic_load(&B.nviews), pct(B.views, atomic_load(&B.nviews), 0.5),
		       pct(B.views, atomic_load(&B.nviews), 0.99));
	else
		printf("viewport:   not asked (VIEWER=0): the figures above are the ingest's alone\n");
	printf("memory:     server RSS at most %.1f MB in the first %.0f s, %.1f MB in the last %.0f s of the stream; "
	       "ratio %.2f (target: within 10%%)\n",
	       early / 1024.0, early_at, late / 1024.0, early_at, early > 0 ? (double)late / (double)early : 0.0);
	return 0;
}
