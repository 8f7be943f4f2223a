/*
 * FXT record framing: the one reading of a record's size and kind outside
 * the decoder, for those who handle records whole without decoding them
 * (the trace manager checking what providers send, the live view choosing
 * which records a snapshot reads), and the metadata records they write.
 * Pure functions on bytes; every p has at least 8 readable bytes.
 */
#ifndef INGEST_FXTREC_H
#define INGEST_FXTREC_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

/* FXT's words (and the FIFO packets') are 64-bit little-endian. */
static inline uint64_t fxt_ld64(const uint8_t *p)
{
	return rd_load64(p, 0);
}

static inline void fxt_st64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/*
 * The framing of FXT records in p[0..n): each record's size word (bits
 * 4..15 of its header, in 8-byte words; bits 4..35 for large records,
 * type 15) is nonzero and the record lies within the bytes. Returns 0 with
 * *records counting them, or -1 at the first record whose framing is
 * broken (*records counts those before it, *good their bytes).
 */
int fxt_framing(const uint8_t *p, size_t n, uint64_t *records, size_t *good);
/* The size in bytes of the record whose header is at p (8 bytes readable):
 * bits 4..15 of the header in words, bits 4..35 for a large record (type
 * 15); 0 when the size word is 0. */
uint64_t fxt_record_bytes(const uint8_t *p);
/* Whether the record at p is a provider info or provider section metadata
 * record: the manager writes those, not a provider. */
int fxt_record_is_section(const uint8_t *p);
/* The record type (bits 0..3) of the record at p. */
static inline unsigned fxt_record_type(const uint8_t *p)
{
	return p[0] & 15u;
}
/* A metadata record's kind (bits 16..19): 1 provider info, 2 provider
 * section, 3 provider event, 4 trace info. */
static inline unsigned fxt_metadata_type(const uint8_t *p)
{
	return p[2] & 15u;
}
/* Whether a record is one the others refer to (metadata, initialization,
 * string, thread, kernel object): kept whole in circular mode. */
int fxt_record_durable(const uint8_t *p);

/* The FXT magic number record (8 bytes) that begins an archive. */
void fxt_put_magic(uint8_t out[8]);
/* Metadata records the manager writes for a provider; they return the bytes
 * written to out (at most 8 + 256 for provider info). */
size_t fxt_put_provider_info(uint8_t *out, uint32_t provider, const char *name);
size_t fxt_put_provider_section(uint8_t out[8], uint32_t provider);
/* A provider event "buffer full" (records were dropped). */
size_t fxt_put_buffer_full(uint8_t out[8], uint32_t provider);

/* The provider id of a provider info or provider section record (see
 * fxt_record_is_section). */
uint32_t fxt_record_provider(const uint8_t *p);

#endif
