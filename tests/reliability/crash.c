/*
 * crash: kill -9 at random moments, and a full disk.
 *
 *   crash [--rounds N] [--seed S] [--no-disk-full]
 *         (defaults: env CRASH_ROUNDS, else 8; env CRASH_SEED, else the time)
 *
 * Kill rounds, all on one --data directory: each round starts the server,
 * sets work in motion, sleeps a random 0..2500 ms and sends SIGKILL. The
 * work of a round is drawn from the seed:
 *   - a large FXT upload (1.5M events, 36 MB, about a second to ingest)
 *     without ?wait, so the kill lands while it is being received, queued,
 *     ingested or stored;
 *   - an upload stopped half-way (its client still connected);
 *   - an XRay upload with its symbol map as a multipart field, or symbols
 *     posted to an XRay trace that is already there;
 *   - a DELETE of a ready trace;
 *   - a small upload with ?wait=1.
 * Then the server is started again on the same directory and must hold:
 *   - the spool is empty and every directory under traces/ belongs to a
 *     listed trace (no orphans);
 *   - every listed trace is queued, ingesting, ready or failed; a failed
 *     one has an error code and message;
 *   - every trace that was ready before the kill (and not deleted) is still
 *     ready and answers /tracks and a /slices query with the same bytes;
 *     a trace whose DELETE was answered 204 is gone;
 *   - the interrupted ones end ready or failed with a reason (within 120 s),
 *     and leave no temporary database behind;
 *   - a new upload gets an id above every id seen so far.
 *
 * Disk full: a tmpfs of 8 MiB is mounted (root only; skipped with a message
 * when mount is not permitted) and used as --data. Traces are uploaded until
 * the disk is full. Every refusal must be the API's JSON error (507
 * storage_failed for an upload that cannot be stored, 422 with the failed
 * trace when its database cannot be written; 507 for an upload larger than
 * the free space, while it is spooled); the server keeps answering;
 * the traces ready before stay ready with the same replies; deleting one
 * makes room for a new upload; and the server restarts on the full disk.
 *
 * Environment: see rel_util.h. Ends with "crash: N passed, M failed".
 */
#include <sys/mount.h>
#include <sys/statvfs.h>

#include "rel_util.h"

enum { MAX_TRACES = 256 };

struct known {
	int64_t id;
	char *tracks;  /* /tracks reply when ready */
	char *slices;  /* a /slices reply when ready */
	int deleted;   /* DELETE answered 204 */
	int reported;  /* its failure was printed */
};

static struct known K[MAX_TRACES];
static size_t NK;
static int64_t MAX_ID;
static int INTERRUPTED; /* traces found queued or ingesting after a restart */
static uint64_t RNG;

static uint8_t *BIG, *SMALL, *XRAY, *YAML;
static size_t BIG_LEN, SMALL_LEN, XRAY_LEN, YAML_LEN;

static uint64_t rnd(void)
{
	uint64_t z = (RNG += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static struct known *known_get(int64_t id)
{
	size_t i;

	for (i = 0; i < NK; i++)
		if (K[i].id == id)
			return &K[i];
	if (NK == MAX_TRACES)
		return NULL;
	K[NK].id = id;
	if (id > MAX_ID)
		MAX_ID = id;
	return &K[NK++];
}

/* The replies a ready trace must keep: /tracks and the first track's slices. */
static int fingerprint(int port, int64_t id, char **tracks, char **slices)
{
	char path[160];
	struct su_resp r;
	cJSON *j;
	int64_t t;

	*tracks = *slices = NULL;
	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/tracks", id);
	if (rel_req(port, "GET", path, NULL, NULL, 0, &r, 60000) != 0 || r.status != 200 || (j = rel_json(&r)) == NULL) {
		su_resp_free(&r);
		return -1;
	}
	t = rel_first_track(j);
	cJSON_Delete(j);
	*tracks = strdup(r.body);
	su_resp_free(&r);
	rel_fmt(path, sizeof(path), "/api/traces/%" PRId64 "/slices?track=%" PRId64 "&resolution=100000", id, t);
	if (rel_req(port, "GET", path, NULL, NULL, 0, &r, 60000) != 0 || r.status != 200) {
		su_resp_free(&r);
		return -1;
	}
	*slices = strdup(r.body);
	su_resp_free(&r);
	return 0;
}

/* The library: ids and statuses (up to max). */
static int list_traces(int port, int64_t *ids, char (*status)[16], size_t max, size_t *n)
{
	struct su_resp r;
	const cJSON *t;
	cJSON *j;

	*n = 0;
	if (rel_req(port, "GET", "/api/traces", NULL, NULL, 0, &r, 60000) != 0 || r.status != 200 ||
	    (j = rel_json(&r)) == NULL) {
		su_resp_free(&r);
		return -1;
	}
	cJSON_ArrayForEach(t, rel_get(j, "traces"))
	{
		if (*n < max) {
			ids[*n] = rel_int(t, "id");
			snprintf(status[*n], 16, "%s", rel_str(t, "status"));
			(*n)++;
		}
	}
	cJSON_Delete(j);
	su_resp_free(&r);
	return 0;
}

/* ---- work in flight --------------------------------------------------------- */

struct inflight {
	int port;
	int kind;
	int64_t target; /* delete / symbols: the trace */
	int fd;         /* a connection left open */
	int status;     /* the reply, when one came */
	int64_t id;
};

/* Sends request bytes on a new connection without waiting for the reply. */
static int send_raw(int port, const void *head, size_t hn, const void *body, size_t bn)
{
	int fd = su_connect(port);
	size_t off = 0;
	ssize_t k;

	if (fd < 0)
		return -1;
	while (off < hn && (k = send(fd, (const char *)head + off, hn - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)k;
	off = 0;
	while (off < bn && (k = send(fd, (const char *)body + off, bn - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)k;
	return fd;
}

static int multipart_xray(struct su_buf *b)
{
	static const char a[] = "--KB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.xray\"\r\n\r\n";
	static const char m[] = "\r\n--KB\r\nContent-Disposition: form-data; name=\"binary\"; filename=\"map.yaml\"\r\n\r\n";

	su_buf_add(b, a, sizeof(a) - 1);
	su_buf_add(b, XRAY, XRAY_LEN);
	su_buf_add(b, m, sizeof(m) - 1);
	su_buf_add(b, YAML, YAML_LEN);
	return su_buf_add(b, "\r\n--KB--\r\n", 10);
}

/* A ready trace known to the test, not deleted, or -1. */
static int64_t pick_ready(void)
{
	size_t i, n = 0, want;

	for (i = 0; i < NK; i++)
		n += K[i].tracks != NULL && !K[i].deleted;
	if (n == 0)
		return -1;
	want = (size_t)(rnd() % n);
	for (i = 0; i < NK; i++)
		if (K[i].tracks != NULL && !K[i].deleted && want-- == 0)
			return K[i].id;
	return -1;
}

/* Starts this round's work; the kill follows. */
static void start_work(int port, struct inflight *w, size_t nw)
{
	char head[512];
	size_t i;

	for (i = 0; i < nw; i++) {
		w[i] = (struct inflight){ port, (int)(rnd() % 6), -1, -1, 0, -1 };
		switch (w[i].kind) {
		case 0: /* large upload, no wait: sent whole, not waited for */
		case 5:
			rel_fmt(head, sizeof(head), "POST /api/traces?name=big HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
				BIG_LEN);
			w[i].fd = send_raw(port, head, strlen(head), BIG, BIG_LEN);
			break;
		case 1: /* half an upload, the client still there */
			rel_fmt(head, sizeof(head), "POST /api/traces?name=half HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
				BIG_LEN);
			w[i].fd = send_raw(port, head, strlen(head), BIG, BIG_LEN / 2);
			break;
		case 2: { /* XRay with its symbols, or symbols for an XRay trace there */
			struct su_buf b = { 0 };

			multipart_xray(&b);
			rel_fmt(head, sizeof(head),
				"POST /api/traces?name=xray HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=KB\r\n"
				"Content-Length: %zu\r\n\r\n",
				b.len);
			w[i].fd = send_raw(port, head, strlen(head), b.p, b.len);
			free(b.p);
			break;
		}
		case 3: /* delete a ready trace */
			if ((w[i].target = pick_ready()) > 0) {
				rel_fmt(head, sizeof(head), "DELETE /api/traces/%" PRId64 " HTTP/1.1\r\nHost: x\r\n\r\n", w[i].target);
				w[i].fd = send_raw(port, head, strlen(head), NULL, 0);
			}
			break;
		default: /* a small upload with ?wait=1 */
			rel_fmt(head, sizeof(head), "POST /api/traces?wait=1&name=small HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
				SMALL_LEN);
			w[i].fd = send_raw(port, head, strlen(head), SMALL, SMALL_LEN);
		}
	}
}

/* Reads whatever reply came before the kill: a DELETE answered 204 must
 * hold after the restart. */
static void collect(struct inflight *w, size_t nw)
{
	size_t i;

	for (i = 0; i < nw; i++) {
		char buf[4096];
		ssize_t k;

		if (w[i].fd < 0)
			continue;
		k = recv(w[i].fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (k > 12 && strncmp(buf, "HTTP/1.", 7) == 0) {
			w[i].status = atoi(buf + 9);
			if (w[i].kind == 3 && w[i].status == 204) {
				struct known *kn = known_get(w[i].target);

				if (kn)
					kn->deleted = 1;
			}
		}
		close(w[i].fd);
	}
}

/* ---- checks after a restart ---------------------------------------------------- */

/* Entries of the spool but a source being compressed there ("source-*":
 * the worker's, from the start on, catalog/source.c). */
static int spool_strays(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		     strncmp(e->d_name, "source-", 7) != 0;
	closedir(d);
	return n;
}

/* Directories under traces/ that no listed trace owns; stray files in the
 * spool; temporary databases. Returns the count (reported). */
static int orphans(const char *data, const int64_t *ids, size_t n, int final)
{
	char dir[1300], path[2600];
	struct dirent *e;
	int bad = 0;
	size_t i;
	DIR *d;

	rel_fmt(dir, sizeof(dir), "%s/spool", data);
	if (spool_strays(dir) > 0) {
		printf("# the spool holds %d entries\n", spool_strays(dir));
		bad++;
	}
	rel_fmt(dir, sizeof(dir), "%s/traces", data);
	if ((d = opendir(dir)) == NULL)
		return 1;
	while ((e = readdir(d)) != NULL) {
		int64_t id = strtoll(e->d_name, NULL, 10);
		int found = 0;

		if (e->d_name[0] == '.')
			continue;
		for (i = 0; i < n; i++)
			found |= ids[i] == id;
		if (!found) {
			printf("# orphan: %s/%s (no listed trace)\n", dir, e->d_name);
			bad++;
		}
		rel_fmt(path, sizeof(path), "%s/%s/trace.db.tmp", dir, e->d_name);
		if (final && access(path, F_OK) == 0) {
			printf("# a temporary database was left: %s\n", path);
			bad++;
		}
	}
	closedir(d);
	return bad;
}

static int restart_checks(struct su_server *s, const char *data, int round)
{
	int64_t ids[MAX_TRACES];
	char st[MAX_TRACES][16];
	size_t n, i, bad_status = 0, changed = 0, lost = 0, resurrected = 0;
	double deadline;
	int pending;

	if (!rel_check(rel_start(s, data, NULL) == 0, "round %d: the server restarts on the same --data", round))
		return -1;
	if (!rel_check(list_traces(s->port, ids, st, MAX_TRACES, &n) == 0, "round %d: the library lists", round))
		return -1;
	rel_check(orphans(data, ids, n, 0) == 0, "round %d: spool empty, no orphan trace directories after the restart",
		  round);
	for (i = 0; i < n; i++)
		INTERRUPTED += !strcmp(st[i], "queued") || !strcmp(st[i], "ingesting");
	for (i = 0; i < n; i++)
		if (strcmp(st[i], "ready") && strcmp(st[i], "failed") && strcmp(st[i], "queued") && strcmp(st[i], "ingesting"))
			bad_status++;
	for (i = 0; i < NK; i++) {
		size_t k;
		int listed = 0;

		for (k = 0; k < n; k++)
			listed |= ids[k] == K[i].id;
		if (K[i].deleted && listed)
			resurrected++;
		if (K[i].tracks && !K[i].deleted) {
			char *t = NULL, *sl = NULL;

			if (!listed || fingerprint(s->port, K[i].id, &t, &sl) != 0) {
				printf("# trace %" PRId64 " was ready before the kill and is %s now\n", K[i].id,
				       listed ? "not answering" : "gone");
				lost++;
			} else if (strcmp(t, K[i].tracks) != 0 || strcmp(sl, K[i].slices) != 0) {
				printf("# trace %" PRId64 " answers differently after the kill\n", K[i].id);
				changed++;
			}
			free(t);
			free(sl);
		}
	}
	rel_check(bad_status == 0, "round %d: %zu traces listed, each queued, ingesting, ready or failed", round, n);
	rel_check(lost == 0 && changed == 0, "round %d: every trace ready before the kill answers the same (%zu lost, %zu changed)",
		  round, lost, changed);
	rel_check(resurrected == 0, "round %d: no trace whose DELETE was answered comes back (%zu did)", round, resurrected);
	/* the interrupted ones end */
	deadline = su_now() + 120;
	do {
		pending = 0;
		list_traces(s->port, ids, st, MAX_TRACES, &n);
		for (i = 0; i < n; i++)
			pending += !strcmp(st[i], "queued") || !strcmp(st[i], "ingesting");
		if (pending)
			su_sleep_ms(50);
	} while (pending && su_now() < deadline);
	{
		size_t failed_bad = 0, ready = 0, failed = 0;

		for (i = 0; i < n; i++) {
			cJSON *t = rel_trace(s->port, ids[i], NULL);
			const cJSON *e = rel_get(t, "error");

			if (strcmp(rel_str(t, "status"), "ready") == 0) {
				struct known *kn = known_get(ids[i]);

				ready++;
				if (kn && kn->tracks == NULL && fingerprint(s->port, ids[i], &kn->tracks, &kn->slices) != 0) {
					printf("# trace %" PRId64 " is ready but does not answer\n", ids[i]);
					failed_bad++;
				}
			} else if (strcmp(rel_str(t, "status"), "failed") == 0) {
				failed++;
				if (rel_str(e, "code")[0] == '\0' || strlen(rel_str(e, "message")) < 10) {
					printf("# trace %" PRId64 " failed without a reason\n", ids[i]);
					failed_bad++;
				} else {
					struct known *kn = known_get(ids[i]);

					if (kn && !kn->reported)
						printf("# trace %" PRId64 " failed: %s: %s\n", ids[i], rel_str(e, "code"),
						       rel_str(e, "message"));
					if (kn)
						kn->reported = 1;
				}
			}
			cJSON_Delete(t);
		}
		rel_check(pending == 0 && failed_bad == 0,
			  "round %d: interrupted traces end ready or failed with a reason (%zu ready, %zu failed, %d pending)",
			  round, ready, failed, pending);
	}
	rel_check(orphans(data, ids, n, 1) == 0, "round %d: no temporary database or orphan once ingests ended", round);
	return 0;
}

/* ---- kill rounds ------------------------------------------------------------------- */

static void kill_rounds(int rounds)
{
	char data[1200];
	struct su_server s;
	int round;

	rel_fmt(data, sizeof(data), "%s/data", R.work);
	for (round = 1; round <= rounds; round++) {
		struct inflight w[3];
		size_t nw = 1 + (size_t)(rnd() % 3);
		unsigned delay = (unsigned)(rnd() % 2500);
		double t0;
		int rc;

		if (rel_start(&s, data, NULL) != 0) {
			rel_check(0, "round %d: the server starts", round);
			return;
		}
		if (round == 1) { /* something ready to keep an eye on */
			struct su_resp r;
			int64_t id = rel_upload(s.port, "?wait=1&name=first", SMALL, SMALL_LEN, NULL, &r, 60000);
			struct known *kn = id > 0 ? known_get(id) : NULL;

			su_resp_free(&r);
			if (kn)
				fingerprint(s.port, id, &kn->tracks, &kn->slices);
		}
		start_work(s.port, w, nw);
		t0 = su_now();
		su_sleep_ms(delay);
		collect(w, nw);
		rc = su_server_stop(&s, SIGKILL);
		rel_note("round %d: %zu jobs (kinds %d %d %d), killed %.0f ms after they started (exit %d)", round, nw,
			 w[0].kind, nw > 1 ? w[1].kind : -1, nw > 2 ? w[2].kind : -1, (su_now() - t0) * 1e3, rc);
		if (restart_checks(&s, data, round) != 0)
			return;
		{
			struct su_resp r;
			int64_t before = MAX_ID, id = rel_upload(s.port, "?wait=1&name=after", SMALL, SMALL_LEN, NULL, &r, 60000);
			struct known *kn = id > 0 ? known_get(id) : NULL;

			rel_check(r.status == 201 && id > before, "round %d: a new upload gets a new id (%" PRId64 " > %" PRId64 ")",
				  round, id, before);
			su_resp_free(&r);
			if (kn)
				fingerprint(s.port, id, &kn->tracks, &kn->slices);
		}
		su_server_stop(&s, SIGTERM);
	}
}

/* ---- disk full ------------------------------------------------------------------------ */

/* An upload's outcome on a filling disk: 0 ready, 1 a clear refusal (507
 * storage_failed, or 422 with the failed trace and its reason), -1 else.
 * why says which. */
static int upload_outcome(const struct su_resp *r, char *why, size_t n)
{
	cJSON *j = rel_json(r);
	const cJSON *e = rel_get(j, "error");
	int rc = -1;

	if (r->status == 201 && strcmp(rel_str(j, "status"), "ready") == 0) {
		rc = 0;
		snprintf(why, n, "ready");
	} else if (r->status == 507 && strcmp(rel_str(e, "code"), "storage_failed") == 0 && strlen(rel_str(e, "message")) >= 10) {
		rc = 1;
		snprintf(why, n, "507 %s", rel_str(e, "message"));
	} else if (r->status == 422 && strcmp(rel_str(j, "status"), "failed") == 0 && strlen(rel_str(e, "message")) >= 10) {
		rc = 1;
		snprintf(why, n, "422, the trace failed: %s: %s", rel_str(e, "code"), rel_str(e, "message"));
	} else {
		snprintf(why, n, "unexpected %d %.300s", r->status, r->body ? r->body : "(no reply)");
	}
	cJSON_Delete(j);
	return rc;
}

static int spool_is_empty(const char *data)
{
	char dir[1300];
	double deadline = su_now() + 5;

	rel_fmt(dir, sizeof(dir), "%s/spool", data);
	while (rel_dir_entries(dir) > 0 && su_now() < deadline)
		su_sleep_ms(20);
	return rel_dir_entries(dir) == 0;
}

static void disk_full(void)
{
	char mnt[1200], why[512];
	struct su_server s;
	struct su_resp r;
	int64_t first = -1, other[2] = { -1, -1 };
	char *t0 = NULL, *s0 = NULL, *t1 = NULL, *s1 = NULL;
	int i, full = 0, bad = 0, ready = 0, rc;

	rel_fmt(mnt, sizeof(mnt), "%s/full", R.work);
	mkdir(mnt, 0755);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=8m") != 0) {
		printf("skip - disk full: cannot mount a tmpfs on %s (%s); run as root to test a full disk\n", mnt,
		       strerror(errno));
		return;
	}
	if (rel_start(&s, mnt, NULL) != 0) {
		rel_check(0, "disk full: the server starts on the tmpfs");
		umount2(mnt, MNT_DETACH);
		return;
	}
	for (i = 0; i < 40 && !full; i++) {
		int64_t id = rel_upload(s.port, "?wait=1&name=fill", SMALL, SMALL_LEN, NULL, &r, 60000);
		int o = upload_outcome(&r, why, sizeof(why));

		if (o == 0) {
			ready++;
			if (first < 0 && fingerprint(s.port, id, &t0, &s0) == 0)
				first = id;
			else if (other[0] < 0)
				other[0] = id;
			else if (other[1] < 0)
				other[1] = id;
		} else {
			full = o == 1;
			bad += o < 0;
			rel_note("disk full: upload %d: %s", i + 1, why);
		}
		su_resp_free(&r);
		if (rel_req(s.port, "GET", "/api/traces", NULL, NULL, 0, &r, 20000) != 0 || r.status != 200)
			bad++;
		su_resp_free(&r);
	}
	rel_check(full && bad == 0, "disk full: %d uploads ready, then a clear JSON refusal; the server kept answering", ready);
	for (i = 0; i < 3; i++) { /* more while full */
		rel_upload(s.port, "?wait=1&name=more", SMALL, SMALL_LEN, NULL, &r, 60000);
		bad += upload_outcome(&r, why, sizeof(why)) < 0;
		rel_note("disk full: another upload: %s", why);
		su_resp_free(&r);
	}
	rel_check(bad == 0, "disk full: more uploads while full get a clear JSON error too");
	/* an upload larger than the free space fails while it is spooled: 507 */
	rel_upload(s.port, "?wait=1&name=too-big-for-the-disk", BIG, BIG_LEN, NULL, &r, 60000);
	rel_check(rel_is_error(&r, 507, "storage_failed", why, sizeof(why)) && spool_is_empty(mnt),
		  "disk full: an upload larger than the free space: 507 storage_failed, spool empty (%s)",
		  r.status == 507 ? rel_str(NULL, "") : why);
	su_resp_free(&r);
	rel_check(first > 0 && fingerprint(s.port, first, &t1, &s1) == 0 && strcmp(t0, t1) == 0 && strcmp(s0, s1) == 0,
		  "disk full: the first trace still answers the same");
	free(t1);
	free(s1);
	t1 = s1 = NULL;
	/* deleting makes room: two traces, as a trace kept keeps its upload
	 * compressed, in less room than a new upload takes while it is
	 * ingested (its upload as it came, its database) */
	{
		char path[64];
		int64_t id;
		int k;

		for (k = 0, rc = 204; k < 2; k++) {
			rel_fmt(path, sizeof(path), "/api/traces/%" PRId64, other[k]);
			rel_req(s.port, "DELETE", path, NULL, NULL, 0, &r, 20000);
			rc = rc == 204 ? r.status : rc;
			su_resp_free(&r);
		}
		id = rel_upload(s.port, "?wait=1&name=again", SMALL, SMALL_LEN, NULL, &r, 60000);
		rel_check(rc == 204 && r.status == 201 && id > 0,
			  "disk full: after two DELETEs (%d) an upload fits again (%d)", rc, r.status);
		su_resp_free(&r);
	}
	/* fill it up again, then restart on the full disk */
	for (i = 0; i < 10; i++) {
		rel_upload(s.port, "?wait=1&name=refill", SMALL, SMALL_LEN, NULL, &r, 60000);
		su_resp_free(&r);
	}
	rc = su_server_stop(&s, SIGTERM);
	rel_check(rc == 0, "disk full: the server stops cleanly (exit %d)", rc);
	if (rel_check(rel_start(&s, mnt, NULL) == 0, "disk full: the server restarts on the full disk")) {
		rel_check(fingerprint(s.port, first, &t1, &s1) == 0 && strcmp(t0, t1) == 0 && strcmp(s0, s1) == 0,
			  "disk full: after the restart the first trace answers the same");
		su_server_stop(&s, SIGTERM);
	}
	free(t0);
	free(s0);
	free(t1);
	free(s1);
	if (umount2(mnt, MNT_DETACH) != 0)
		printf("# cannot unmount %s: %s\n", mnt, strerror(errno));
}

/*
 * An aimed round, run when the random ones happened to miss every ingest
 * (a fast machine finishes the big upload before the kill): upload the big
 * trace, poll its status and kill the moment it reads "ingesting". Up to
 * three tries; an ingest that ends between the poll and the kill is missed.
 */
static void aimed_rounds(int first_round)
{
	char data[1200];
	struct su_server s;
	int round;

	rel_fmt(data, sizeof(data), "%s/data", R.work);
	for (round = first_round; round < first_round + 3 && INTERRUPTED == 0; round++) {
		struct su_resp r;
		int64_t id;
		double deadline;
		int seen = 0;

		if (!rel_check(rel_start(&s, data, NULL) == 0, "round %d: the server starts", round))
			return;
		id = rel_upload(s.port, "?name=aimed", BIG, BIG_LEN, NULL, &r, 60000);
		su_resp_free(&r);
		for (deadline = su_now() + 60; id > 0 && !seen && su_now() < deadline;) {
			cJSON *t = rel_trace(s.port, id, NULL);

			seen = strcmp(rel_str(t, "status"), "ingesting") == 0;
			cJSON_Delete(t);
		}
		su_server_stop(&s, SIGKILL);
		rel_note("round %d (aimed): trace %" PRId64 " %s when killed", round, id,
			 seen ? "was ingesting" : "was never seen ingesting");
		if (restart_checks(&s, data, round) != 0)
			return;
		su_server_stop(&s, SIGTERM);
	}
}

/* ---- main -------------------------------------------------------------------------------- */

static int setup(void)
{
	char path[1200];
	size_t i;

	rel_fmt(path, sizeof(path), "%s/big.fxt", R.work);
	if (rel_gen_fxt(path, 1500000, 8, 21) != 0 || (BIG = rel_read_file(path, &BIG_LEN)) == NULL)
		return -1;
	rel_fmt(path, sizeof(path), "%s/small.fxt", R.work);
	if (rel_gen_fxt(path, 20000, 4, 22) != 0 || (SMALL = rel_read_file(path, &SMALL_LEN)) == NULL)
		return -1;
	rel_fmt(path, sizeof(path), "%s/x.xray", R.work);
	if (rel_gen_xray(path, 5, 60000, 4, 23) != 0 || (XRAY = rel_read_file(path, &XRAY_LEN)) == NULL)
		return -1;
	/* a symbol map naming every function id the generator uses */
	{
		struct su_buf b = { 0 };
		char line[128];

		su_buf_add(&b, "---\n", 4);
		for (i = 1; i <= 2000; i++) {
			snprintf(line, sizeof(line), "- { id: %zu, function-name: 'fn_%zu(int)' }\n", i, i);
			su_buf_add(&b, line, strlen(line));
		}
		YAML = (uint8_t *)b.p;
		YAML_LEN = b.len;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = getenv("CRASH_ROUNDS") ? atoi(getenv("CRASH_ROUNDS")) : 8, a, diskfull = 1;
	uint64_t seed = getenv("CRASH_SEED") ? strtoull(getenv("CRASH_SEED"), NULL, 10) : (uint64_t)time(NULL);
	size_t i;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc)
			rounds = atoi(argv[++a]);
		else if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc)
			seed = strtoull(argv[++a], NULL, 10);
		else if (strcmp(argv[a], "--no-disk-full") == 0)
			diskfull = 0;
	}
	RNG = seed;
	rel_setup("crash");
	rel_note("seed %" PRIu64 " (CRASH_SEED=%" PRIu64 " repeats this run), %d rounds", seed, seed, rounds);
	if (!rel_check(setup() == 0, "setup: traces generated"))
		return rel_summary("crash");
	kill_rounds(rounds);
	if (rounds >= 4 && INTERRUPTED == 0)
		aimed_rounds(rounds + 1);
	rel_note("%d traces were caught by a kill before their ingest ended and were taken up again", INTERRUPTED);
	if (rounds >= 4)
		rel_check(INTERRUPTED > 0, "the kills hit at least one ingest in progress (%d)", INTERRUPTED);
	if (diskfull)
		disk_full();
	rel_check(rel_log_reports(R.log) == 0, "no sanitizer report in the server log");
	for (i = 0; i < NK; i++) {
		free(K[i].tracks);
		free(K[i].slices);
	}
	free(BIG);
	free(SMALL);
	free(XRAY);
	free(YAML);
	return rel_summary("crash");
}
