/*
 * What a trace's database must hold, for tests over loopback that compare
 * a snapshot the server made (a live trace's, an ingest's preview) with
 * the CLI's ingest of the same bytes (test_live.c, test_preview.c): every
 * table compared, and the bytes a window snapshot reads (docs/API.md,
 * "The window of an FXT stream"), worked out independently of
 * catalog/window.c.
 */
#ifndef TESTS_SERVER_WINDOW_UTIL_H
#define TESTS_SERVER_WINDOW_UTIL_H

#include <sqlite3.h>

#include "../../ingest/fxtrec.h"
#include "../ingest_util.h" /* same_tables */
#include "api_util.h"

/* ---- a stream's window, read independently ------------------------------ */

/* The bytes of the FXT record at p: its size word in 8-byte words (bits
 * 4..15; 4..35 for a large record, type 15). */
static inline size_t rec_bytes(const uint8_t *p)
{
	uint64_t h = fxt_ld64(p);

	return (size_t)((h & 15) == 15 ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfff) * 8;
}

/* A provider info (1) or provider section (2) metadata record: its
 * provider id, else -1. */
static inline int64_t rec_provider(const uint8_t *p)
{
	uint64_t h = fxt_ld64(p);

	if ((h & 15) != 0 || (((h >> 16) & 15) != 1 && ((h >> 16) & 15) != 2))
		return -1;
	return (int64_t)((h >> 20) & 0xffffffffu);
}

static inline size_t put_section(uint8_t *out, int64_t provider)
{
	uint64_t h = (uint64_t)1 << 4 | (uint64_t)2 << 16 | (uint64_t)provider << 20;
	int i;

	for (i = 0; i < 8; i++, h >>= 8)
		out[i] = (uint8_t)h;
	return 8;
}

/*
 * What a snapshot reads of s[0..at) whose window starts at from: every
 * durable record (metadata but provider sections, initialization, string,
 * thread, kernel object) before from, each under the provider it came
 * under (a provider section written before it when the last provider
 * named is another), then a section for the provider in effect at from if
 * the last named is another, then s[from..at). Returns the bytes written
 * to out.
 */
static inline size_t window_input(const uint8_t *s, size_t from, size_t at, uint8_t *out)
{
	int64_t ctx = -1, written = -1, p;
	size_t off = 0, n = 0;

	while (off < from) {
		size_t k = rec_bytes(s + off);
		unsigned type = s[off] & 15u;

		assert_true(k > 0 && off + k <= from); /* from is a record boundary */
		if ((p = rec_provider(s + off)) >= 0 && ((fxt_ld64(s + off) >> 16) & 15) == 2) {
			ctx = p; /* a section: written again only where a durable record needs it */
		} else if (p >= 0) { /* provider info: kept, and names the provider */
			ctx = written = p;
			memcpy(out + n, s + off, k);
			n += k;
		} else if (type == 0 || type == 1 || type == 2 || type == 3 || type == 7) {
			if (ctx != written) {
				n += put_section(out + n, ctx);
				written = ctx;
			}
			memcpy(out + n, s + off, k);
			n += k;
		}
		off += k;
	}
	if (ctx != written)
		n += put_section(out + n, ctx);
	memcpy(out + n, s + from, at - from);
	return n + (at - from);
}

#endif
