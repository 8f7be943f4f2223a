/*
 * The trace manager (capture.h): its record, made and ended here, the
 * capture ids that outlive a restart, and the requests that wait. The
 * sessions are session.c's, the providers and their reader threads
 * reader.c's, the capture's trace file writer.c's, the buffering modes
 * modes.c's and a capture's JSON json.c's.
 *
 * One lock (mu) guards the manager, its sessions and its providers; the
 * trace writer has its own, taken first (capture_internal.h), so that no
 * file is written while mu is held. A
 * request that waits (StartTracing until the providers have started,
 * StopTracing until they have stopped, WatchAlert, state changes) does not
 * hold a thread: it suspends its connection (cap_wait) and is resumed on
 * any change (cap_changed), or at its deadline by the ticker thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "capture_internal.h"
#include "reader.h"
#include "session.h"
#include "../ingest/util.h"

enum { TICK_MS = 100 };

int64_t cap_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

const char *cap_state_name(int state)
{
	static const char *const names[] = { "ready",   "initialized", "starting",   "started",
					     "stopping", "stopped",     "terminating" };

	return state >= CAP_READY && state <= CAP_TERMINATING ? names[state - CAP_READY] : "ready";
}

/* ---- waiting ---------------------------------------------------------------- */

void cap_changed(struct captures *m)
{
	struct waiter *w = m->waiters, *next;

	m->waiters = NULL;
	for (; w; w = next) {
		next = w->next;
		m->h.resume(w->conn);
		free(w);
	}
}

int cap_wait(struct captures *m, void *conn, int64_t deadline_ms)
{
	struct waiter *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -1;
	pthread_mutex_lock(&m->mu);
	if (m->stop) {
		pthread_mutex_unlock(&m->mu);
		free(w);
		return -1;
	}
	w->conn = conn;
	w->deadline = deadline_ms;
	w->next = m->waiters;
	m->waiters = w;
	m->h.suspend(conn);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

/* Resumes the waiters whose deadline passed. */
static void *ticker_main(void *arg)
{
	struct captures *m = arg;

	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		struct waiter **pw = &m->waiters;
		int64_t now = cap_now_ms();

		while (*pw) {
			struct waiter *w = *pw;

			if (w->deadline <= now) {
				*pw = w->next;
				m->h.resume(w->conn);
				free(w);
			} else {
				pw = &w->next;
			}
		}
		cond_wait_ms(&m->tick, &m->mu, TICK_MS);
	}
	cap_changed(m);
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

/* ---- capture ids ---------------------------------------------------------------- */

/* The last capture id handed out before this server started: the number
 * in path, or 0 when there is none (a new data directory). */
static int64_t ids_load(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%lld", &v) != 1 || v < 0)
		v = 0;
	fclose(f);
	return (int64_t)v;
}

/* Writes id into path through a file renamed over it (never half
 * written). 0, or -1 with errno set. */
static int ids_save(const char *path, int64_t id)
{
	char tmp[4200];
	FILE *f;
	int ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		return -1;
	ok = fprintf(f, "%" PRId64 "\n", id) > 0;
	ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int64_t cap_next_id(struct captures *m, char *err, size_t errlen)
{
	int64_t id;

	pthread_mutex_lock(&m->ids_mu);
	id = m->last_session + 1;
	if (ids_save(m->ids_path, id) != 0) {
		pthread_mutex_unlock(&m->ids_mu);
		snprintf(err, errlen, "cannot record the capture id in %s: %s", m->ids_path, strerror(errno));
		return CAP_ESTORAGE;
	}
	m->last_session = id;
	pthread_mutex_unlock(&m->ids_mu);
	return id;
}

/* ---- the manager ------------------------------------------------------------------ */

struct captures *cap_open(struct catalog *cat, const char *dir, const struct cap_hooks *h, char *err, size_t errlen)
{
	struct captures *m = calloc(1, sizeof(*m));

	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((size_t)snprintf(m->ids_path, sizeof(m->ids_path), "%s/capture-id", dir) >= sizeof(m->ids_path)) {
		snprintf(err, errlen, "the data directory's path is too long");
		free(m);
		return NULL;
	}
	m->last_session = ids_load(m->ids_path);
	pthread_mutex_init(&m->mu, NULL);
	pthread_mutex_init(&m->ids_mu, NULL);
	pthread_cond_init(&m->tick, NULL);
	m->cat = cat;
	m->h = *h;
	cap_writer_init(&m->w, cat);
	if (pthread_create(&m->ticker, NULL, ticker_main, m) != 0) {
		snprintf(err, errlen, "cannot start the capture manager's thread");
		cap_writer_fini(&m->w);
		free(m);
		return NULL;
	}
	return m;
}

void cap_close(struct captures *m)
{
	struct provider *p;
	size_t i;

	if (m == NULL)
		return;
	cap_writer_lock(&m->w);
	pthread_mutex_lock(&m->mu);
	m->stop = 1;
	if (m->cur)
		cap_session_end(m, m->cur);
	for (p = m->providers; p; p = p->next)
		shutdown(p->sock, SHUT_RDWR);
	pthread_cond_broadcast(&m->tick);
	pthread_mutex_unlock(&m->mu);
	cap_writer_unlock(&m->w);
	pthread_join(m->ticker, NULL);
	/* the readers end as their sockets do */
	for (i = 0; i < 500 && cap_provider_count(m) > 0; i++)
		usleep(10000);
}

void cap_free(struct captures *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->nended; i++)
		cap_session_free(m->ended[i]);
	cap_writer_fini(&m->w);
	pthread_cond_destroy(&m->tick);
	pthread_mutex_destroy(&m->ids_mu);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
