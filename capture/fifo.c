/*
 * The provider transport's wire format: packets, record framing and the
 * manager's metadata records (fifo.h).
 */
#include <string.h>

#include "fifo.h"

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void st64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

void fifo_encode(uint8_t out[FIFO_PACKET_SIZE], const struct fifo_packet *p)
{
	st64(out, (uint64_t)p->request | (uint64_t)p->reserved << 16 | (uint64_t)p->data32 << 32);
	st64(out + 8, p->data64);
}

void fifo_decode(const uint8_t in[FIFO_PACKET_SIZE], struct fifo_packet *p)
{
	uint64_t w = ld64(in);

	p->request = (uint16_t)w;
	p->reserved = (uint16_t)(w >> 16);
	p->data32 = (uint32_t)(w >> 32);
	p->data64 = ld64(in + 8);
}

int fifo_alert_name(const uint8_t in[FIFO_PACKET_SIZE], char name[FIFO_ALERT_MAX + 1])
{
	size_t i, n = 0;

	while (n < FIFO_ALERT_MAX && in[2 + n] != 0)
		n++;
	for (i = n; i < FIFO_ALERT_MAX; i++)
		if (in[2 + i] != 0)
			return -1; /* padding must be zeros */
	for (i = 0; i < n; i++)
		if (in[2 + i] < 0x20 || in[2 + i] > 0x7e)
			return -1;
	memcpy(name, in + 2, n);
	name[n] = '\0';
	return n ? 0 : -1;
}

void fifo_alert_encode(uint8_t out[FIFO_PACKET_SIZE], const char *name)
{
	size_t n = strlen(name);

	memset(out, 0, FIFO_PACKET_SIZE);
	out[0] = (uint8_t)FIFO_ALERT;
	memcpy(out + 2, name, n < FIFO_ALERT_MAX ? n : FIFO_ALERT_MAX);
}

int fifo_provider_packet_ok(const struct fifo_packet *p, const uint8_t raw[FIFO_PACKET_SIZE])
{
	char name[FIFO_ALERT_MAX + 1];

	switch (p->request) {
	case FIFO_ALERT:
		return fifo_alert_name(raw, name) == 0;
	case FIFO_STARTED:
	case FIFO_SAVE_BUFFER:
	case FIFO_STOPPED:
	case FIFO_STATS:
		return p->reserved == 0;
	case FIFO_DATA:
		return p->reserved == 0 && (p->data32 == FIFO_DATA_DURABLE || p->data32 == FIFO_DATA_ROLLING) &&
		       p->data64 <= FIFO_MAX_PAYLOAD && p->data64 % 8 == 0;
	default:
		return 0;
	}
}

uint64_t fxt_record_bytes(const uint8_t *p)
{
	uint64_t h = ld64(p);

	return ((h & 15) == 15 ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfff) * 8;
}

int fxt_record_is_section(const uint8_t *p)
{
	uint64_t h = ld64(p);

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
	st64(out, 0x0016547846040010ull);
}

size_t fxt_put_provider_info(uint8_t *out, uint32_t provider, const char *name)
{
	size_t n = strlen(name), padded;

	if (n > 255)
		n = 255;
	padded = (n + 7) & ~(size_t)7;
	st64(out, (uint64_t)(1 + padded / 8) << 4 | (uint64_t)1 << 16 | (uint64_t)provider << 20 | (uint64_t)n << 52);
	memset(out + 8, 0, padded);
	memcpy(out + 8, name, n);
	return 8 + padded;
}

size_t fxt_put_provider_section(uint8_t out[8], uint32_t provider)
{
	st64(out, (uint64_t)1 << 4 | (uint64_t)2 << 16 | (uint64_t)provider << 20);
	return 8;
}

size_t fxt_put_buffer_full(uint8_t out[8], uint32_t provider)
{
	st64(out, (uint64_t)1 << 4 | (uint64_t)3 << 16 | (uint64_t)provider << 20);
	return 8;
}
