/*
 * A live FXT trace's view window (window.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ingest/fxtrec.h"
#include "window.h"

enum { SCAN_CHUNK = 1 << 20 };

enum { DEFAULT_TPS = 1000000000 }; /* without an initialization record, 1 tick = 1 ns */

void lw_init(struct live_window *w, uint64_t mark_bytes)
{
	memset(w, 0, sizeof(*w));
	w->ctx = w->dctx = LW_NONE;
	w->mark_bytes = mark_bytes ? mark_bytes : 1;
	w->tps = DEFAULT_TPS;
}

void lw_free(struct live_window *w)
{
	free(w->durable);
	free(w->marks);
	free(w->rates);
	lw_init(w, w->mark_bytes);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	if ((q = realloc(*p, n * size)) == NULL)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

static int durable_add(struct live_window *w, const uint8_t *p, size_t n)
{
	if (grow((void **)&w->durable, &w->dcap, w->dlen + n, 1) != 0)
		return -1;
	memcpy(w->durable + w->dlen, p, n);
	w->dlen += n;
	return 0;
}

/* The tick rate the provider last set (DEFAULT_TPS when none). */
static struct lw_rate *rate_of(struct live_window *w, uint64_t provider)
{
	size_t i;

	for (i = 0; i < w->nrates; i++)
		if (w->rates[i].provider == provider)
			return &w->rates[i];
	if (grow((void **)&w->rates, &w->rcap, w->nrates + 1, sizeof(*w->rates)) != 0)
		return NULL;
	w->rates[w->nrates] = (struct lw_rate){ provider, DEFAULT_TPS };
	return &w->rates[w->nrates++];
}

/* Follows the tick rates (docs/API.md, Meaning 1: per provider, set by
 * its initialization record, reset by its provider info) and notes the
 * earliest time of a timed record: events, scheduling and log records
 * have their timestamp in their second word. */
static int note_time(struct live_window *w, const uint8_t *p, size_t n)
{
	unsigned type = fxt_record_type(p);
	struct lw_rate *r;

	if (fxt_record_is_section(p)) {
		if ((r = rate_of(w, w->ctx)) == NULL)
			return -1;
		if (fxt_metadata_type(p) == 1)
			r->tps = DEFAULT_TPS;
		w->tps = r->tps;
		return 0;
	}
	if (n < 16)
		return 0;
	if (type == 1) { /* initialization: the current provider's rate */
		uint64_t tps = fxt_ld64(p + 8);

		if (tps == 0) /* malformed: ingest ignores it too */
			return 0;
		if ((r = rate_of(w, w->ctx)) == NULL)
			return -1;
		r->tps = w->tps = tps;
		return 0;
	}
	if (type == 4 || type == 8 || type == 9) {
		unsigned __int128 ns = (unsigned __int128)fxt_ld64(p + 8) * 1000000000u / w->tps;
		int64_t t = ns > INT64_MAX ? INT64_MAX : (int64_t)ns;

		if (!w->have_first || t < w->first_ns)
			w->first_ns = t;
		w->have_first = 1;
	}
	return 0;
}

/* One record, whole in p[0..n): its durable bytes kept under the provider
 * it was written for. */
static int take(struct live_window *w, const uint8_t *p, size_t n)
{
	uint8_t sec[8];

	if (fxt_record_is_section(p)) /* provider info or section: changes the provider */
		w->ctx = fxt_record_provider(p);
	if (note_time(w, p, n) != 0)
		return -1;
	if (fxt_record_is_section(p)) {
		if (fxt_metadata_type(p) != 1)
			return 0; /* a section is written again only where a durable record needs it */
		w->dctx = w->ctx; /* provider info names the provider: kept */
		return durable_add(w, p, n);
	}
	if (!fxt_record_durable(p))
		return 0;
	if (w->ctx != w->dctx) { /* the durable records last named another provider */
		if (durable_add(w, sec, fxt_put_provider_section(sec, (uint32_t)w->ctx)) != 0)
			return -1;
		w->dctx = w->ctx;
	}
	return durable_add(w, p, n);
}

/* Notes the record boundary pos when it starts a new mark's stretch. */
static int mark(struct live_window *w, uint64_t pos)
{
	if (pos < w->next_mark)
		return 0;
	if (grow((void **)&w->marks, &w->mcap, w->nmarks + 1, sizeof(*w->marks)) != 0)
		return -1;
	w->marks[w->nmarks++] = (struct lw_mark){ pos, w->dlen, w->ctx, w->dctx };
	w->next_mark = (pos / w->mark_bytes + 1) * w->mark_bytes;
	return 0;
}

int lw_scan(struct live_window *w, int fd, uint64_t size)
{
	uint64_t left = size > w->scanned ? size - w->scanned : 0;
	uint8_t *buf;
	int rc = 0;

	if (w->broken || left < 8)
		return 0;
	/* room for what is new, up to a chunk: a short call reads little */
	if ((buf = malloc(left < SCAN_CHUNK ? (size_t)left : SCAN_CHUNK)) == NULL)
		return -1;
	while (rc == 0 && !w->broken && w->scanned + 8 <= size) {
		size_t want, have, off = 0;
		ssize_t got;

		left = size - w->scanned;
		want = left < SCAN_CHUNK ? (size_t)left : SCAN_CHUNK;
		got = pread(fd, buf, want, (off_t)w->scanned);

		if (got < 8) {
			rc = got < 0 ? -1 : 0;
			break;
		}
		have = (size_t)got;
		while (rc == 0 && off + 8 <= have) {
			uint64_t n = fxt_record_bytes(buf + off), pos = w->scanned + off;

			if (n == 0) {
				w->broken = 1;
				break;
			}
			if (n > have - off && (off > 0 || n <= SCAN_CHUNK || pos + n > size))
				break; /* read again from its start, or wait for its rest */
			if (mark(w, pos) != 0) {
				rc = -1;
				break;
			}
			if (n > have - off) { /* larger than a chunk (a large blob): never durable, skipped unread */
				off = (size_t)-1;
				w->scanned = pos + n;
				break;
			}
			if (take(w, buf + off, (size_t)n) != 0)
				rc = -1;
			off += (size_t)n;
		}
		if (off == (size_t)-1)
			continue;
		if (off == 0)
			break; /* a record cut by size: the next call reads it */
		w->scanned += off;
	}
	free(buf);
	return rc;
}

int lw_input(const struct live_window *w, uint64_t size, uint64_t window, uint64_t *from, uint8_t **prefix,
	     size_t *plen)
{
	const struct lw_mark *m = NULL;
	uint8_t sec[8];
	size_t i, n;

	*from = 0;
	*prefix = NULL;
	*plen = 0;
	if (window == 0 || size <= window || w->broken)
		return 0;
	for (i = 0; i < w->nmarks; i++) /* the first mark within the window */
		if (w->marks[i].off >= size - window && w->marks[i].off <= w->scanned) {
			m = &w->marks[i];
			break;
		}
	if (m == NULL || m->off == 0)
		return 0;
	n = m->dlen + (m->ctx != m->dctx ? sizeof(sec) : 0);
	if ((*prefix = malloc(n ? n : 1)) == NULL)
		return -1;
	if (m->dlen > 0) /* none kept yet: durable may be NULL */
		memcpy(*prefix, w->durable, m->dlen);
	if (m->ctx != m->dctx)
		memcpy(*prefix + m->dlen, sec, fxt_put_provider_section(sec, (uint32_t)m->ctx));
	*plen = n;
	*from = m->off;
	return 0;
}
