/*
 * Inside capture/: the buffering modes the trace manager enforces on the
 * records a provider sends (modes.c). They are pure: whole FXT records in
 * (framed on arrival, fxt_framing), what to keep out, with no lock, file or
 * connection; capture.c writes what they keep to the capture's trace.
 * And a session's record as capture.c keeps it under its lock, which
 * json.c renders for the API.
 */
#ifndef CAPTURE_CAPTURE_INTERNAL_H
#define CAPTURE_CAPTURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"

enum { CAP_MAX_ALERTS = 64 };

/* Circular mode's buffers for one provider: every durable record (those
 * others refer to, fxt_record_durable) kept whole, and the newest rolling
 * records that fit in the provider's buffer size. Zeroed is empty. */
struct cap_ring {
	uint8_t *durable; /* durable records in arrival order; dlen bytes used of dcap */
	size_t dlen, dcap;
	uint8_t *ring;    /* whole rolling records, oldest first from roff to rlen; rcap allocated */
	size_t roff, rlen, rcap;
	uint64_t wraps;   /* rolling records whose adding let older ones go */
	uint64_t evicted; /* rolling records let go for newer ones */
};

/* Adds the whole records p[0..n) to r, whose rolling part holds at most
 * buffer_bytes; the oldest rolling records go first. Returns how many
 * records were not kept or were let go (evicted, larger than the buffer,
 * or memory ran out). */
uint64_t cap_ring_add(struct cap_ring *r, uint64_t buffer_bytes, const uint8_t *p, size_t n);
/* Empties r, keeping its memory. */
void cap_ring_clear(struct cap_ring *r);
/* Frees r's memory; r is empty after. */
void cap_ring_free(struct cap_ring *r);

/* Oneshot mode: of the whole records p[0..n), those that fit in the
 * buffer's worth (buffer_bytes) after the run's have bytes. Returns the
 * bytes to keep (a prefix of p); once a record does not fit, *full is set
 * and it and every later one are counted in *refused. */
size_t cap_oneshot_take(uint64_t have, uint64_t buffer_bytes, int *full, uint64_t *refused, const uint8_t *p,
			size_t n);

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
	struct pstat *ps;
	size_t nps, cap_ps;
	char alerts[CAP_MAX_ALERTS][FIFO_ALERT_MAX + 1];
	size_t alert_head, nalerts;
	char error[256];
};


/* The capture object of docs/API.md (GET /api/captures/{id}), s read under
 * the manager's lock. */
void cap_session_json(const struct session *s, struct jbuf *b);
/* "provider_stats": [...] of s (a key and its array, inside an object). */
void cap_stats_json_of(const struct session *s, struct jbuf *b);

#endif
