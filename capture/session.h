/*
 * Inside capture/: a capture session (the controller's session) and what
 * each provider did in it, as session.c keeps them under the manager's
 * lock; json.c renders them for the API, reader.c feeds them what each
 * provider sends. What a provider's records add to the trace travels from
 * the session to the trace writer (writer.h) as a struct cap_out.
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
	uint64_t durable_bytes, rolling_bytes; /* written to the trace (counted once written: cap_session_put) */
	uint64_t run_base;                  /* oneshot: their sum at the last START */
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
	int64_t trace;                      /* the live trace (the writer's while s is current); 0 before the
					       first start */
	int write_results;
	struct pstat **ps;                  /* nps of cap_ps used, in the order providers joined; each
					       allocated alone, so that a pstat stays where it is while
					       the array grows (a reader may hold it) until the session
					       is freed */
	size_t nps, cap_ps;
	char alerts[CAP_MAX_ALERTS][FIFO_ALERT_MAX + 1];
	size_t alert_head, nalerts;
	char error[256];                    /* the trace's failure (the writer's error, copied); "" none */
};

/*
 * Records of one provider bound for the trace: decided under the manager's
 * lock (cap_session_data, cap_session_flush), written with it let go and
 * the writer's lock held, then counted into ps (cap_session_put). Zeroed
 * by cap_out_init.
 */
struct cap_out {
	struct pstat *ps;                   /* whose; NULL for none (grew only). Stays put while the
					       writer's lock is held: see struct session */
	struct cap_ring ring;               /* circular: the records taken out of ps->ring; freed once
					       written */
	const uint8_t *p;                   /* a frame's records to keep (streaming, oneshot): n bytes,
					       owned by the caller until cap_session_put returns */
	size_t n;
	int durable;                        /* the frame's kind: durable (1) or rolling records */
	int buffer_full;                    /* then a buffer-full record: the provider dropped records */
	int grew;                           /* then tell the catalog the trace grew */
	uint64_t durable_written, rolling_written; /* what was written, counted into ps */
};

/* The session with this id, current or ended; NULL. Under the lock. */
struct session *cap_session_find(struct captures *m, int64_t id);
/* Frees s and everything it owns. */
void cap_session_free(struct session *s);
/* Ends session s (both locks held; the manager's let go while the trace
 * is written and closed): circular buffers written, providers sent
 * TERMINATE, the trace complete, s moved to the ended ones. */
void cap_session_end(struct captures *m, struct session *s);
/* Provider's stats in s (s may be NULL); NULL when it has none. */
struct pstat *cap_session_pstat(struct session *s, int64_t provider);
/* Brings provider p into s: its stats entry, its categories and
 * INITIALIZE. The entry, or NULL when memory ran out. */
struct pstat *cap_session_join(struct session *s, struct provider *p);
/* Sends START to p, whose stats are ps (under the manager's lock, with the
 * writer's held or ps new: its counts are final). */
void cap_session_start_one(struct provider *p, struct pstat *ps, int disposition);
/* An empty o for the records of ps (NULL: none). */
void cap_out_init(struct cap_out *o, struct pstat *ps);
/* A DATA frame's records p[0..n) from ps's provider, by the session's
 * buffering mode (under the manager's lock): circular keeps them in
 * ps->ring; oneshot and streaming put what they keep in o. A frame whose
 * framing is broken fails the provider (what came before the break
 * stays). */
void cap_session_data(struct pstat *ps, const uint8_t *p, size_t n, int durable, struct cap_out *o);
/* What a circular provider's buffers hold goes into o, when the stop
 * writes results; ps->ring is empty after. Under the manager's lock. */
void cap_session_flush(struct session *s, struct pstat *ps, struct cap_out *o);
/*
 * Writes o to the trace and counts it into o->ps, copying the writer's
 * error into s->error, if any. Called with both the writer's and the
 * manager's lock held; lets the manager's go while it writes and takes it
 * again, so the caller looks again at anything it read before. o's ring is
 * freed.
 */
void cap_session_put(struct captures *m, struct session *s, struct cap_out *o);

/* The capture object of docs/API.md (GET /api/captures/{id}), s read under
 * the manager's lock (json.c). */
void cap_session_json(const struct session *s, struct jbuf *b);
/* "provider_stats": [...] of s (a key and its array, inside an object). */
void cap_stats_json_of(const struct session *s, struct jbuf *b);

#endif
