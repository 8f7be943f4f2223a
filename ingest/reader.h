/*
 * A bounded reader over untrusted bytes, shared by every decoder.
 *
 * Every read checks the remaining length before touching memory. The error
 * is sticky: after the first failed read every further read returns zero and
 * the caller checks rd.err once, at the end of a record. A record is decoded
 * through a sub-reader whose end is the record's declared end, so that a
 * record consumes exactly its declared size whatever its fields say.
 */
#ifndef INGEST_READER_H
#define INGEST_READER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct rd {
	const uint8_t *p;   /* next byte to read */
	const uint8_t *end; /* one past the last readable byte; every read is checked against it */
	int err;            /* sticky: set by the first read that would pass end */
	int big_endian;     /* words are stored most significant byte first */
};

static inline void rd_init(struct rd *r, const void *p, size_t n, int big_endian)
{
	r->p = p;
	r->end = r->p + n;
	r->err = 0;
	r->big_endian = big_endian;
}

static inline size_t rd_left(const struct rd *r)
{
	return r->err ? 0 : (size_t)(r->end - r->p);
}

/* Returns a pointer to the next n bytes and consumes them, or NULL (and sets
 * err) when fewer than n remain. */
static inline const uint8_t *rd_bytes(struct rd *r, size_t n)
{
	const uint8_t *q;

	if (r->err || n > (size_t)(r->end - r->p)) {
		r->err = 1;
		return NULL;
	}
	q = r->p;
	r->p += n;
	return q;
}

/* One unaligned load and at most one byte swap: GCC left the byte-by-byte
 * form as a loop, a tenth of FXT decoding's time. */
static inline uint64_t rd_load64(const uint8_t *q, int big_endian)
{
	uint64_t v;

	memcpy(&v, q, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return big_endian ? v : __builtin_bswap64(v);
#else
	return big_endian ? __builtin_bswap64(v) : v;
#endif
}

static inline uint32_t rd_load32(const uint8_t *q, int big_endian)
{
	if (big_endian)
		return (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
	return (uint32_t)q[3] << 24 | (uint32_t)q[2] << 16 | (uint32_t)q[1] << 8 | q[0];
}

static inline uint16_t rd_load16(const uint8_t *q, int big_endian)
{
	if (big_endian)
		return (uint16_t)(q[0] << 8 | q[1]);
	return (uint16_t)(q[1] << 8 | q[0]);
}

static inline uint64_t rd_u64(struct rd *r)
{
	const uint8_t *q = rd_bytes(r, 8);

	return q ? rd_load64(q, r->big_endian) : 0;
}

static inline uint32_t rd_u32(struct rd *r)
{
	const uint8_t *q = rd_bytes(r, 4);

	return q ? rd_load32(q, r->big_endian) : 0;
}

static inline uint16_t rd_u16(struct rd *r)
{
	const uint8_t *q = rd_bytes(r, 2);

	return q ? rd_load16(q, r->big_endian) : 0;
}

static inline uint8_t rd_u8(struct rd *r)
{
	const uint8_t *q = rd_bytes(r, 1);

	return q ? q[0] : 0;
}

/* Splits the next n bytes off as a sub-reader and consumes them. */
static inline struct rd rd_sub(struct rd *r, size_t n)
{
	struct rd s;
	const uint8_t *q = rd_bytes(r, n);

	rd_init(&s, q ? q : r->p, q ? n : 0, r->big_endian);
	s.err = q == NULL;
	return s;
}

/* Bits [lo .. hi] of a word, inclusive, as in the FXT specification. */
static inline uint64_t rd_bits(uint64_t w, unsigned lo, unsigned hi)
{
	unsigned n = hi - lo + 1;

	return n >= 64 ? w : (w >> lo) & ((UINT64_C(1) << n) - 1);
}

#endif
