/*
 * A live FXT trace's view window: which of the bytes received a snapshot
 * reads, so that making one costs the same however long the stream has run.
 *
 * A snapshot of a stream up to the window's size reads every byte. Past
 * that it reads the newest bytes, from a record boundary at most `window`
 * bytes before the end, preceded by every durable record (metadata,
 * initialization, string, thread and kernel object records: the ones other
 * records refer to, fxtrec.h) that came before that boundary, in the order
 * they came, each under the provider it was written for. That is exactly
 * what circular buffering keeps of a provider's buffer (the spec's
 * buffering modes), applied to the live view: every name, thread and
 * object the window's records refer to resolves as it did in the stream,
 * and what lies before the window is not shown until the stream ends and
 * the trace is ingested whole.
 *
 * The scan is incremental: each call reads only the bytes received since
 * the last, record by record (headers only, and the durable records whole).
 * Memory is the durable records plus a mark (a record boundary where a
 * window may start) per mark_bytes of stream.
 *
 * The scan also keeps the earliest time of the timed records it passes
 * (events, scheduling and log records, at each provider's tick rate), so
 * that a view of a window still measures time from the trace's own start:
 * a slice shows the start it has in the finished trace.
 */
#ifndef CATALOG_WINDOW_H
#define CATALOG_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#define LW_NONE UINT64_MAX /* no provider seen yet */

/* A record boundary, and what the durable records before it were. */
struct lw_mark {
	uint64_t off;      /* a record boundary of the source */
	size_t dlen;       /* durable bytes before it */
	uint64_t ctx;      /* the provider in effect there (LW_NONE: none) */
	uint64_t dctx;     /* the provider in effect after durable[0 .. dlen) */
};

struct live_window {
	uint64_t scanned;  /* the source is scanned up to here: a record boundary */
	uint64_t mark_bytes;
	uint64_t next_mark;/* the next mark goes at the first record boundary from here */
	int broken;        /* framing broke (not FXT, or damaged): no window */
	uint64_t ctx;      /* the provider in effect at `scanned` */
	uint64_t dctx;     /* the provider in effect at the end of durable */
	uint8_t *durable;  /* durable records, with provider sections between */
	size_t dlen, dcap;
	struct lw_mark *marks;
	size_t nmarks, mcap;
	/* the earliest time scanned (first_ns valid when have_first) */
	int have_first;
	int64_t first_ns;
	uint64_t tps;      /* ticks per second of the provider at `scanned` */
	struct lw_rate { uint64_t provider, tps; } *rates; /* each provider's, once set */
	size_t nrates, rcap;
};

/* A window with a mark about every mark_bytes (> 0) of stream. */
void lw_init(struct live_window *w, uint64_t mark_bytes);
void lw_free(struct live_window *w);

/* Scans the source's bytes from w->scanned up to size (a record cut by
 * size waits for the next call). 0, or -1 when the file cannot be read or
 * memory runs out (the window is then unusable: lw_input gives the whole
 * stream). */
int lw_scan(struct live_window *w, int fd, uint64_t size);

/*
 * What a snapshot of the first size bytes reads with at most `window`
 * bytes of the stream (0: no bound): *from, the first byte of the source it
 * reads, and *prefix (malloc'd, *plen bytes) the durable records to read
 * before it. *from 0 and *prefix NULL: the whole stream. 0, or -1 when out
 * of memory.
 */
int lw_input(const struct live_window *w, uint64_t size, uint64_t window, uint64_t *from, uint8_t **prefix,
	     size_t *plen);

#endif
