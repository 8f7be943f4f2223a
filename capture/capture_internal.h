/*
 * Inside capture/: the trace manager's record (struct captures), which
 * capture.c makes and ends, and the wake-ups of the requests that wait on
 * it. The sessions are session.h's, the providers reader.h's, the trace
 * file writer.h's and the buffering modes modes.h's.
 */
#ifndef CAPTURE_CAPTURE_INTERNAL_H
#define CAPTURE_CAPTURE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

enum { CAP_MAX_ENDED = 16 };

struct waiter {
	void *conn;
	int64_t deadline;
	struct waiter *next;
};

struct captures {
	pthread_mutex_t mu;
	struct catalog *cat;
	struct cap_hooks h;
	struct provider *providers;
	size_t nproviders;
	int64_t next_provider;
	/* capture ids: ids_mu guards these two only, so that the file is
	 * written outside mu */
	pthread_mutex_t ids_mu;
	int64_t last_session;               /* the last id handed out, as in ids_path */
	char ids_path[4096];                /* <data>/capture-id: the last id, so that ids outlive a restart */
	struct session *cur;                /* the session not yet terminated, or NULL */
	struct session *ended[CAP_MAX_ENDED]; /* newest first */
	size_t nended;
	struct waiter *waiters;
	int stop;
	pthread_t ticker;
	pthread_cond_t tick;
};

/* Wakes every waiter (under mu): something changed. */
void cap_changed(struct captures *m);
/*
 * A capture id never given out before, by this server or an earlier one
 * on the same data directory: the id is on disk before anyone sees it.
 * Returns it, or CAP_ESTORAGE (err says why). An id taken by a request
 * that then fails is not given out again: ids increase, with gaps.
 */
int64_t cap_next_id(struct captures *m, char *err, size_t errlen);

#endif
