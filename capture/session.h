/*
 * Inside capture/: a capture session (the controller's session) and what
 * each provider did in it, as session.c keeps them under the manager's
 * lock; json.c renders them for the API, reader.c feeds them what each
 * provider sends.
 */
#ifndef CAPTURE_SESSION_H
#define CAPTURE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "modes.h"

struct captures;
struct provider;

enum { CAP_MAX_ALERTS = 64 };

/* What one provider did in one capture (ProviderStats). */
struct pstat {
	int64_t provider;
	char name[CAP_MAX_NAME + 1];
	uint64_t pid;
	int mode;
	uint64_t buffer_bytes;
	int start_sent;                     /* it was sent START: it owes STARTED, and STOPPED once stopped */
	int started, stopped, gone, failed;
	char why[160];                      /* failed: why its data was refused */
	uint64_t wrapped, dropped;          /* as the provider reported them (STATS) */
	uint64_t refused;                   /* records the manager dropped (oneshot full, circular wrap) */
	uint64_t overwritten;               /* circular: records the provider's buffers wrote over (OVERWRITTEN) */
	uint64_t durable_bytes, rolling_bytes; /* written to the trace */
	uint64_t run_base;                  /* oneshot: their sum at the last START */
	int described;                      /* its provider info record is in the trace */
	struct cap_ring ring;               /* circular mode: held until the provider stops (modes.c); its
					       evictions are also in refused */
	int full;                           /* oneshot: the buffer's worth was received */
};

struct session {
	int64_t id;
	int state;
	uint64_t version;
	struct cap_config cfg;              /* strings below owned */
	char *name, *description;
	struct cat_label *labels;
	char categories[CAP_CATEGORIES_SIZE]; /* this start's: the config's and additional_categories */
	int extended;                       /* the last start added additional_categories */
	int64_t trace;                      /* the live trace; 0 before the first start */
	int fd;                             /* its source, appended to; -1 */
	uint64_t size;
	int write_results;
	struct pstat **ps;                  /* nps of cap_ps used, in the order providers joined; each
					       allocated alone, so that a pstat stays where it is while
					       the array grows (a reader may hold it) until the session
					       is freed */
	size_t nps, cap_ps;
	char alerts[CAP_MAX_ALERTS][FIFO_ALERT_MAX + 1];
	size_t alert_head, nalerts;
	char error[256];
};

/* The session with this id, current or ended; NULL. Under the lock. */
struct session *cap_session_find(struct captures *m, int64_t id);
/* Frees s and everything it owns. */
void cap_session_free(struct session *s);
/* Ends session s (under the lock): providers told, the trace complete, s
 * moved to the ended ones. */
void cap_session_end(struct captures *m, struct session *s);
/* Provider's stats in s (s may be NULL); NULL when it has none. */
struct pstat *cap_session_pstat(struct session *s, int64_t provider);
/* Brings provider p into s: its stats entry, its categories and
 * INITIALIZE. The entry, or NULL when memory ran out. */
struct pstat *cap_session_join(struct session *s, struct provider *p);
/* Sends START to p, whose stats are ps. */
void cap_session_start_one(struct provider *p, struct pstat *ps, int disposition);
/* A DATA frame's records p[0..n) from ps's provider, by the session's
 * buffering mode. */
void cap_session_data(struct captures *m, struct session *s, struct pstat *ps, const uint8_t *p, size_t n,
		      int durable);
/* Writes what a circular provider's buffers hold (if the stop writes
 * results) and empties them. */
void cap_session_flush(struct captures *m, struct session *s, struct pstat *ps);

/* The capture object of docs/API.md (GET /api/captures/{id}), s read under
 * the manager's lock (json.c). */
void cap_session_json(const struct session *s, struct jbuf *b);
/* "provider_stats": [...] of s (a key and its array, inside an object). */
void cap_stats_json_of(const struct session *s, struct jbuf *b);

#endif
