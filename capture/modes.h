/*
 * The buffering modes the trace manager enforces on the records a provider
 * sends (modes.c). They are pure: whole FXT records in (framed on arrival,
 * fxt_framing), what to keep out, with no lock, file or connection; the
 * session (session.c) hands what they keep to the trace writer (writer.c).
 */
#ifndef CAPTURE_MODES_H
#define CAPTURE_MODES_H

#include <stddef.h>
#include <stdint.h>

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
/* Moves r's records, and the memory that holds them, into *out (zeroed
 * first; its counts are zero); r is empty after and keeps its counts.
 * The caller frees out (cap_ring_free). */
void cap_ring_take(struct cap_ring *r, struct cap_ring *out);

/* Oneshot mode: of the whole records p[0..n), those that fit in the
 * buffer's worth (buffer_bytes) after the run's have bytes. Returns the
 * bytes to keep (a prefix of p); once a record does not fit, *full is set
 * and it and every later one are counted in *refused. */
size_t cap_oneshot_take(uint64_t have, uint64_t buffer_bytes, int *full, uint64_t *refused, const uint8_t *p,
			size_t n);

#endif
