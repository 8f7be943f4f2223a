/*
 * FXT record framing (fxtrec.h).
 */
#include <string.h>

#include "fxtrec.h"

uint64_t fxt_record_bytes(const uint8_t *p)
{
	uint64_t h = fxt_ld64(p);

	return ((h & 15) == 15 ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfff) * 8;
}

int fxt_record_is_section(const uint8_t *p)
{
	uint64_t h = fxt_ld64(p);

	return (h & 15) == 0 && (((h >> 16) & 15) == 1 || ((h >> 16) & 15) == 2);
}

int fxt_framing(const uint8_t *p, size_t n, uint64_t *records, size_t *good)
{
	size_t off = 0;

	*records = 0;
	*good = 0;
	while (off < n) {
		uint64_t bytes;

		if (n - off < 8)
			return -1;
		bytes = fxt_record_bytes(p + off);
		if (bytes == 0 || bytes > n - off)
			return -1;
		off += (size_t)bytes;
		(*records)++;
		*good = off;
	}
	return 0;
}

int fxt_record_durable(const uint8_t *p)
{
	switch (fxt_record_type(p)) {
	case 0: /* metadata */
	case 1: /* initialization */
	case 2: /* string */
	case 3: /* thread */
	case 7: /* kernel object */
		return 1;
	default:
		return 0;
	}
}

void fxt_put_magic(uint8_t out[8])
{
	fxt_st64(out, 0x0016547846040010ull);
}

size_t fxt_put_provider_info(uint8_t *out, uint32_t provider, const char *name)
{
	size_t n = strlen(name), padded;

	if (n > 255)
		n = 255;
	padded = (n + 7) & ~(size_t)7;
	fxt_st64(out, (uint64_t)(1 + padded / 8) << 4 | (uint64_t)1 << 16 | (uint64_t)provider << 20 | (uint64_t)n << 52);
	memset(out + 8, 0, padded);
	memcpy(out + 8, name, n);
	return 8 + padded;
}

size_t fxt_put_provider_section(uint8_t out[8], uint32_t provider)
{
	fxt_st64(out, (uint64_t)1 << 4 | (uint64_t)2 << 16 | (uint64_t)provider << 20);
	return 8;
}

size_t fxt_put_buffer_full(uint8_t out[8], uint32_t provider)
{
	fxt_st64(out, (uint64_t)1 << 4 | (uint64_t)3 << 16 | (uint64_t)provider << 20);
	return 8;
}

uint32_t fxt_record_provider(const uint8_t *p)
{
	return (uint32_t)(fxt_ld64(p) >> 20 & 0xffffffffu);
}
