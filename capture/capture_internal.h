/*
 * Inside capture/: the trace manager's record (struct captures), which
 * capture.c makes and ends, its two locks and their order, and the
 * wake-ups of the requests that wait on it. The sessions are session.h's, the providers reader.h's, the trace
 * file writer.h's and the buffering modes modes.h's.
 */
#ifndef CAPTURE_CAPTURE_INTERNAL_H
#define CAPTURE_CAPTURE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "writer.h"

enum { CAP_MAX_ENDED = 16 };

struct waiter {
	void *conn;
	int64_t deadline;
	struct waiter *next;
};

struct captures {
	/* The manager's lock: guards the manager's fields below, every
	 * session and every provider record. Never held while a file is
	 * written: see w. */
	pthread_mutex_t mu;
	struct catalog *cat;                /* set at cap_open */
	struct cap_hooks h;                 /* set at cap_open */
	struct provider *providers;         /* connected, newest first (reader.c) */
	size_t nproviders;                  /* reader threads alive: cap_close waits for 0 */
	int64_t next_provider;              /* the last provider id given out */
	struct session *cur;                /* the session not yet terminated, or NULL */
	struct session *ended[CAP_MAX_ENDED]; /* newest first; the oldest is freed (only with w held) */
	size_t nended;
	struct waiter *waiters;             /* requests suspended until a change or their deadline */
	int stop;                           /* cap_close ran: no new waiter or provider */
	pthread_t ticker;                   /* resumes waiters whose deadline passed */
	pthread_cond_t tick;                /* wakes the ticker at cap_close */

	/* The trace writer, with its own lock (writer.h): taken before mu,
	 * never while mu is held. Whoever may write (a start making the
	 * trace, a stop or terminate, a reader with DATA or STOPPED or whose
	 * provider left) holds it throughout, so that m->cur is neither ended
	 * nor freed while mu is let go for the write. */
	struct cap_writer w;

	/* Capture ids: ids_mu guards these two only, so that the file is
	 * written outside mu. */
	pthread_mutex_t ids_mu;
	int64_t last_session;               /* the last id handed out, as in ids_path */
	char ids_path[4096];                /* <data>/capture-id: the last id, so that ids outlive a restart */
};

/* Wakes every waiter (under the manager's lock): something changed. */
void cap_changed(struct captures *m);
/*
 * A capture id never given out before, by this server or an earlier one
 * on the same data directory: the id is on disk before anyone sees it.
 * Returns it, or CAP_ESTORAGE (err says why). An id taken by a request
 * that then fails is not given out again: ids increase, with gaps.
 */
int64_t cap_next_id(struct captures *m, char *err, size_t errlen);

#endif
