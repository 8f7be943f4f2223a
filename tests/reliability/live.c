/*
 * Live streams under stress (docs/API.md "Live traces"; issue 21):
 *
 *   trickle   streams sending one byte a second hold no server thread: other
 *             requests are answered at once while they run, and each ends
 *             with a well-formed reply;
 *   crowd     16 live streams at once beside 32 readers asking for the
 *             growing traces: every reply is well formed (200, or a JSON
 *             error), and every trace ends ready with the archive's rows;
 *   disk      a stream that fills the disk (a tmpfs of 8 MiB; root only,
 *             skipped otherwise) ends with 507, the trace keeps what came
 *             before it, and the server goes on answering.
 *
 * A cut mid-record and kill -9 mid-stream are tests/server/test_live.c's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mount.h>

#include "rel_util.h"

static struct su_server S;
static uint8_t *ARCH;
static size_t ARCH_LEN;
static int FULL;

static int stream_open(int port, const char *name)
{
	char head[512];
	int fd = su_connect(port);
	size_t off = 0;

	if (fd < 0)
		return -1;
	rel_fmt(head, sizeof(head),
		"POST /api/traces?live=1&name=%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		"Connection: close\r\n\r\n",
		name);
	while (off < strlen(head)) {
		ssize_t k = write(fd, head + off, strlen(head) - off);

		if (k <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)k;
	}
	return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int stream_chunk(int fd, const void *p, size_t n)
{
	char h[32];

	rel_fmt(h, sizeof(h), "%zx\r\n", n);
	return send_all(fd, h, strlen(h)) || send_all(fd, p, n) || send_all(fd, "\r\n", 2) ? -1 : 0;
}

/* Ends the body (when it can) and reads the reply; its status, and whether
 * the body is a JSON object in *json_ok. */
static int stream_end(int fd, int *json_ok)
{
	char buf[16384], *body;
	size_t len = 0;
	int status = 0;
	cJSON *j;

	send_all(fd, "0\r\n\r\n", 5);
	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t k;

		if (poll(&pf, 1, 60000) <= 0)
			break;
		k = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (k <= 0 || (len += (size_t)k) == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	close(fd);
	sscanf(buf, "HTTP/1.1 %d", &status);
	body = strstr(buf, "\r\n\r\n");
	j = body ? cJSON_Parse(body + 4) : NULL;
	*json_ok = j != NULL && cJSON_IsObject(j);
	cJSON_Delete(j);
	return status;
}

/* Waits until trace id is ready or failed (a live trace is not done yet). */
static int wait_ended(int port, int64_t id, double timeout, char *status, size_t n)
{
	double deadline = su_now() + timeout;

	for (;;) {
		cJSON *j = rel_trace(port, id, NULL);

		snprintf(status, n, "%s", j ? rel_str(j, "status") : "gone");
		cJSON_Delete(j);
		if (strcmp(status, "ready") == 0 || strcmp(status, "failed") == 0 || strcmp(status, "gone") == 0)
			return 0;
		if (su_now() > deadline)
			return -1;
		su_sleep_ms(20);
	}
}

/* ---- trickle ----------------------------------------------------------------- */

enum { TRICKLERS = 6 };

static void *trickle_main(void *arg)
{
	int *status = arg, fd = stream_open(S.port, "trickle"), json = 0;
	size_t i, n = FULL ? 70 : 10;

	if (fd < 0) {
		*status = -1;
		return NULL;
	}
	for (i = 0; i < n && i < ARCH_LEN; i++) {
		if (stream_chunk(fd, ARCH + i, 1) != 0)
			break;
		su_sleep_ms(1000);
	}
	*status = stream_end(fd, &json);
	if (!json)
		*status = -2;
	return NULL;
}

static void test_trickle(void)
{
	pthread_t t[TRICKLERS];
	int status[TRICKLERS], i, slow = 0, answered = 0;
	double worst = 0, until;

	for (i = 0; i < TRICKLERS; i++)
		pthread_create(&t[i], NULL, trickle_main, &status[i]);
	su_sleep_ms(500);
	until = su_now() + (FULL ? 65 : 8);
	while (su_now() < until) {
		struct su_resp r;
		double t0 = su_now(), dt;

		if (rel_req(S.port, "GET", "/api/traces", NULL, NULL, 0, &r, 30000) == 0 && r.status == 200)
			answered++;
		su_resp_free(&r);
		dt = su_now() - t0;
		worst = dt > worst ? dt : worst;
		slow += dt > 1.0;
		su_sleep_ms(100);
	}
	for (i = 0; i < TRICKLERS; i++)
		pthread_join(t[i], NULL);
	rel_check(slow == 0 && answered > 20,
		  "trickle: %d streams at 1 byte/s (more than the server's threads) beside %d other requests, "
		  "the slowest %.3f s",
		  TRICKLERS, answered, worst);
	for (i = 0; i < TRICKLERS; i++)
		if (!rel_check(status[i] == 202, "trickle: stream %d ends with a well-formed 202 (got %d)", i,
			       status[i]))
			break;
}

/* ---- crowd --------------------------------------------------------------------- */

enum { STREAMS = 16, READERS = 32 };

static _Atomic int crowd_done, bad_replies, replies;
static _Atomic int64_t crowd_ids[STREAMS];

struct streamer {
	int index, status;
};

static void *streamer_main(void *arg)
{
	struct streamer *s = arg;
	uint64_t rng = 1234567u + (uint64_t)s->index * 7919u;
	char name[32];
	size_t off = 0;
	int fd, json;

	rel_fmt(name, sizeof(name), "crowd-%d", s->index);
	if ((fd = stream_open(S.port, name)) < 0) {
		s->status = -1;
		return NULL;
	}
	while (off < ARCH_LEN) {
		size_t k;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		k = 1 + (size_t)(rng % 65536);
		if (k > ARCH_LEN - off)
			k = ARCH_LEN - off;
		if (stream_chunk(fd, ARCH + off, k) != 0)
			break;
		off += k;
		if (rng % 8 == 0)
			su_sleep_ms(20);
	}
	s->status = stream_end(fd, &json);
	if (!json)
		s->status = -2;
	return NULL;
}

static void *reader_main(void *arg)
{
	uint64_t rng = 99u + (uint64_t)(intptr_t)arg;
	static const char *const what[] = { "", "/tracks", "/slices?track=1&resolution=100000", "/overview",
					    "/search?q=a", "/stats" };

	while (!atomic_load(&crowd_done)) {
		struct su_resp r;
		char path[160];
		int64_t id;
		cJSON *j;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		id = atomic_load(&crowd_ids[rng % STREAMS]);
		if (id <= 0) {
			su_sleep_ms(10);
			continue;
		}
		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "%s", id, what[(rng >> 8) % 6]);
		if (rel_req(S.port, "GET", path, NULL, NULL, 0, &r, 30000) != 0) {
			atomic_fetch_add(&bad_replies, 1);
			continue;
		}
		j = r.body ? cJSON_Parse(r.body) : NULL;
		if ((r.status != 200 && r.status != 409) || j == NULL)
			atomic_fetch_add(&bad_replies, 1);
		atomic_fetch_add(&replies, 1);
		cJSON_Delete(j);
		su_resp_free(&r);
	}
	return NULL;
}

static void test_crowd(int64_t slices)
{
	pthread_t ts[STREAMS], tr[READERS];
	struct streamer s[STREAMS];
	int i, ok = 1, found = 0;
	double deadline;

	for (i = 0; i < STREAMS; i++) {
		s[i].index = i;
		pthread_create(&ts[i], NULL, streamer_main, &s[i]);
	}
	for (i = 0; i < READERS; i++)
		pthread_create(&tr[i], NULL, reader_main, (void *)(intptr_t)i);
	/* the streams' traces, as the library lists them */
	deadline = su_now() + 30;
	while (found < STREAMS && su_now() < deadline) {
		struct su_resp r;
		cJSON *j, *t;

		if (rel_req(S.port, "GET", "/api/traces?q=crowd-", NULL, NULL, 0, &r, 30000) == 0 && (j = rel_json(&r))) {
			found = 0;
			cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "traces"))
			{
				int k = atoi(rel_str(t, "name") + 6);

				if (k >= 0 && k < STREAMS) {
					atomic_store(&crowd_ids[k], rel_int(t, "id"));
					found++;
				}
			}
			cJSON_Delete(j);
		}
		su_resp_free(&r);
		su_sleep_ms(50);
	}
	for (i = 0; i < STREAMS; i++) {
		pthread_join(ts[i], NULL);
		ok &= s[i].status == 202;
	}
	rel_check(ok && found == STREAMS, "crowd: %d live streams at once, each answered 202 at its end", STREAMS);
	for (i = 0; i < STREAMS; i++) {
		char st[32];
		cJSON *t;

		if (wait_ended(S.port, atomic_load(&crowd_ids[i]), 120, st, sizeof(st)) != 0 || strcmp(st, "ready") != 0) {
			ok = 0;
			continue;
		}
		t = rel_trace(S.port, atomic_load(&crowd_ids[i]), NULL);
		ok &= t && rel_int(rel_get(t, "counts"), "slices") == slices &&
		      (size_t)rel_int(t, "size_bytes") == ARCH_LEN;
		cJSON_Delete(t);
	}
	atomic_store(&crowd_done, 1);
	for (i = 0; i < READERS; i++)
		pthread_join(tr[i], NULL);
	rel_check(ok, "crowd: every stream's trace ends ready with the archive's %" PRId64 " slices", slices);
	rel_check(atomic_load(&bad_replies) == 0 && atomic_load(&replies) > 100,
		  "crowd: %d readers beside them got %d replies, %d not well formed (200 or 409 with JSON)", READERS,
		  atomic_load(&replies), atomic_load(&bad_replies));
}

/* ---- disk full ------------------------------------------------------------------- */

static void test_disk(void)
{
	struct su_server d;
	char mnt[1200], data[1300];
	uint8_t *big;
	size_t big_len, off = 0;
	int fd, status, json;
	int64_t id;

	rel_fmt(mnt, sizeof(mnt), "%s/tmpfs", R.work);
	mkdir(mnt, 0755);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=8m") != 0) {
		printf("skip - disk: cannot mount a tmpfs on %s (%s); run as root to fill a disk mid-stream\n", mnt,
		       strerror(errno));
		return;
	}
	rel_fmt(data, sizeof(data), "%s/data", mnt);
	{
		char path[1300];

		rel_fmt(path, sizeof(path), "%s/big.fxt", R.work);
		if (rel_gen_fxt(path, 600000, 6, 3) != 0 || (big = rel_read_file(path, &big_len)) == NULL) {
			rel_check(0, "disk: the archive is generated");
			umount2(mnt, MNT_DETACH);
			return;
		}
	}
	if (rel_start(&d, data, NULL) != 0) {
		rel_check(0, "disk: the server starts on the tmpfs");
		umount2(mnt, MNT_DETACH);
		free(big);
		return;
	}
	fd = stream_open(d.port, "filler");
	while (fd >= 0 && off < big_len) {
		size_t k = big_len - off < 65536 ? big_len - off : 65536;

		if (stream_chunk(fd, big + off, k) != 0)
			break;
		off += k;
	}
	status = fd >= 0 ? stream_end(fd, &json) : -1;
	rel_check(status == 507 && json, "disk: a stream that fills the disk ends with a well-formed 507 (got %d)",
		  status);
	{
		struct su_resp r;
		cJSON *j;

		id = 0;
		if (rel_req(d.port, "GET", "/api/traces", NULL, NULL, 0, &r, 30000) == 0 && (j = rel_json(&r))) {
			cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "traces"), 0);

			id = t ? rel_int(t, "id") : 0;
			cJSON_Delete(j);
		}
		su_resp_free(&r);
	}
	{
		char st[32] = "";
		cJSON *t;

		wait_ended(d.port, id, 60, st, sizeof(st));
		t = rel_trace(d.port, id, NULL);
		rel_check(t && rel_int(t, "size_bytes") > 0 && (strcmp(st, "ready") == 0 || strcmp(st, "failed") == 0),
			  "disk: the trace keeps the %" PRId64 " bytes that came before the disk filled and ends %s",
			  t ? rel_int(t, "size_bytes") : 0, st);
		cJSON_Delete(t);
	}
	{
		struct su_resp r;
		char path[64];

		rel_fmt(path, sizeof(path), "/api/traces/%" PRId64, id);
		rel_req(d.port, "DELETE", path, NULL, NULL, 0, &r, 30000);
		su_resp_free(&r);
		rel_check(rel_upload(d.port, "?name=after&wait=1", ARCH, ARCH_LEN, NULL, &r, 60000) > 0,
			  "disk: once the trace is deleted, an upload is stored again");
		su_resp_free(&r);
	}
	su_server_stop(&d, SIGTERM);
	free(big);
	if (umount2(mnt, MNT_DETACH) != 0)
		printf("# cannot unmount %s: %s\n", mnt, strerror(errno));
}

int main(int argc, char **argv)
{
	char path[1200], data[1200];
	int64_t slices = 0;

	FULL = argc > 1 && strcmp(argv[1], "--full") == 0;
	rel_setup("live");
	rel_fmt(path, sizeof(path), "%s/a.fxt", R.work);
	rel_fmt(data, sizeof(data), "%s/data", R.work);
	if (rel_gen_fxt(path, 40000, 4, 21) != 0 || (ARCH = rel_read_file(path, &ARCH_LEN)) == NULL ||
	    rel_start(&S, data, NULL) != 0) {
		rel_check(0, "setup: archive and server");
		return rel_summary("live");
	}
	{
		struct su_resp r;
		int64_t id = rel_upload(S.port, "?name=reference&wait=1", ARCH, ARCH_LEN, NULL, &r, 60000);
		cJSON *t = id > 0 ? rel_trace(S.port, id, NULL) : NULL;

		su_resp_free(&r);

		slices = t ? rel_int(rel_get(t, "counts"), "slices") : -1;
		cJSON_Delete(t);
	}
	test_trickle();
	test_crowd(slices);
	rel_check(su_server_stop(&S, SIGTERM) == 0, "the server stops cleanly after the streams");
	test_disk();
	free(ARCH);
	return rel_summary("live");
}
