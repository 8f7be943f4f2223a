/*
 * The buffering modes at the trace manager (modes.h), as pure
 * functions over whole FXT records: circular mode's ring of the newest
 * rolling records beside every durable one, and oneshot mode's first
 * buffer's worth. Streaming mode keeps everything and needs nothing here.
 * Their records were framed on arrival (session.c, cap_session_data): each size
 * word is nonzero and each record lies within its frame.
 */
#include <stdlib.h>
#include <string.h>

#include "../ingest/fxtrec.h"
#include "modes.h"

/* Appends p[0..n) to the buffer b (len used of cap); 0, or -1 when memory
 * ran out (b unchanged). */
static int buf_add(uint8_t **b, size_t *len, size_t *cap, const uint8_t *p, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 65536;
		uint8_t *q;

		while (c < *len + n)
			c *= 2;
		if ((q = realloc(*b, c)) == NULL)
			return -1;
		*b = q;
		*cap = c;
	}
	if (n > 0) /* *b may still be NULL: memcpy may not be given it */
		memcpy(*b + *len, p, n);
	*len += n;
	return 0;
}

/* Adds one rolling record of k bytes, letting the oldest go until it fits;
 * the records not kept or let go. */
static uint64_t ring_add_rolling(struct cap_ring *r, uint64_t buffer_bytes, const uint8_t *p, size_t k)
{
	uint64_t lost = 0;

	if (k > buffer_bytes)
		return 1;
	while (r->rlen - r->roff + k > buffer_bytes) {
		r->roff += (size_t)fxt_record_bytes(r->ring + r->roff);
		r->evicted++;
		lost++;
	}
	r->wraps += lost > 0;
	if (r->roff > r->rcap / 2) {
		memmove(r->ring, r->ring + r->roff, r->rlen - r->roff);
		r->rlen -= r->roff;
		r->roff = 0;
	}
	return lost + (buf_add(&r->ring, &r->rlen, &r->rcap, p, k) != 0);
}

uint64_t cap_ring_add(struct cap_ring *r, uint64_t buffer_bytes, const uint8_t *p, size_t n)
{
	uint64_t lost = 0;
	size_t off = 0;

	while (off < n) {
		size_t k = (size_t)fxt_record_bytes(p + off);

		if (fxt_record_durable(p + off))
			lost += buf_add(&r->durable, &r->dlen, &r->dcap, p + off, k) != 0;
		else
			lost += ring_add_rolling(r, buffer_bytes, p + off, k);
		off += k;
	}
	return lost;
}

void cap_ring_clear(struct cap_ring *r)
{
	r->dlen = 0;
	r->roff = r->rlen = 0;
}

void cap_ring_free(struct cap_ring *r)
{
	free(r->durable);
	free(r->ring);
	r->durable = r->ring = NULL;
	r->dlen = r->dcap = 0;
	r->roff = r->rlen = r->rcap = 0;
}

void cap_ring_take(struct cap_ring *r, struct cap_ring *out)
{
	memset(out, 0, sizeof(*out));
	out->durable = r->durable;
	out->dlen = r->dlen;
	out->dcap = r->dcap;
	out->ring = r->ring;
	out->roff = r->roff;
	out->rlen = r->rlen;
	out->rcap = r->rcap;
	r->durable = r->ring = NULL;
	r->dlen = r->dcap = 0;
	r->roff = r->rlen = r->rcap = 0;
}

size_t cap_oneshot_take(uint64_t have, uint64_t buffer_bytes, int *full, uint64_t *refused, const uint8_t *p,
			size_t n)
{
	size_t off = 0, rest;

	while (off < n && !*full) {
		size_t k = (size_t)fxt_record_bytes(p + off);

		if (have + off + k > buffer_bytes) {
			*full = 1;
			break;
		}
		off += k;
	}
	for (rest = off; rest < n; rest += (size_t)fxt_record_bytes(p + rest))
		(*refused)++;
	return off;
}
