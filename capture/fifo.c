/*
 * The provider transport's wire format: packets, record framing and the
 * manager's metadata records (fifo.h).
 */
#include <string.h>

#include "fifo.h"

void fifo_encode(uint8_t out[FIFO_PACKET_SIZE], const struct fifo_packet *p)
{
	fxt_st64(out, (uint64_t)p->request | (uint64_t)p->reserved << 16 | (uint64_t)p->data32 << 32);
	fxt_st64(out + 8, p->data64);
}

void fifo_decode(const uint8_t in[FIFO_PACKET_SIZE], struct fifo_packet *p)
{
	uint64_t w = fxt_ld64(in);

	p->request = (uint16_t)w;
	p->reserved = (uint16_t)(w >> 16);
	p->data32 = (uint32_t)(w >> 32);
	p->data64 = fxt_ld64(in + 8);
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
