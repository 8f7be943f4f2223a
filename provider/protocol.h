/*
 * The provider protocol's packets (docs/PROVIDER-PROTOCOL.md), written
 * once: the codes, the 16-byte packet and its codec, and which packets
 * each side may receive. Both ends include this header: the provider
 * library (provider/wire.c, transport.c) and the trace manager (capture/,
 * and the `trace-server stream --provider` client), so that a change made
 * here reaches both and they cannot drift.
 *
 * Header-only (static inline): the provider library links nothing of the
 * server's.
 *
 * Packet (little-endian, exactly trace_provider_packet_t of
 * fuchsia-trace-fifo-packets.txt):
 *   offset size field
 *   0      2    request
 *   2      2    reserved (zero; part of the alert name in ALERT)
 *   4      4    data32
 *   8      8    data64
 * Only DATA (0x8000) carries a payload, data64 bytes, at most 64 MiB.
 */
#ifndef PROVIDER_PROTOCOL_H
#define PROVIDER_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum fifo_request {
	FIFO_STARTED = 0x0001,      /* provider -> manager: data32 = protocol version */
	FIFO_SAVE_BUFFER = 0x0002,  /* data32 = wrap count, data64 = durable data end */
	FIFO_STOPPED = 0x0003,
	FIFO_ALERT = 0x0004,        /* name in bytes 2..15 */
	FIFO_BUFFER_SAVED = 0x0100, /* manager -> provider */
	FIFO_DATA = 0x8000,         /* data32 = kind, data64 = payload bytes that follow (both ways) */
	FIFO_STATS = 0x8001,        /* data32 = wrapped count, data64 = records dropped */
	FIFO_OVERWRITTEN = 0x8002,  /* circular: data64 = records the buffers wrote over; just before STATS */
	FIFO_INITIALIZE = 0x8100,   /* data32 = buffering mode, data64 = buffer bytes */
	FIFO_START = 0x8101,        /* data32 = buffer disposition */
	FIFO_STOP = 0x8102,
	FIFO_TERMINATE = 0x8103,
};

enum { FIFO_PROTOCOL_VERSION = 1, FIFO_PACKET_SIZE = 16, FIFO_ALERT_MAX = 14 };
enum { FIFO_DATA_CATEGORIES = 1, FIFO_DATA_DURABLE = 2, FIFO_DATA_ROLLING = 3 };
/* fuchsia.tracing.BufferingMode and BufferDisposition */
enum { FIFO_MODE_ONESHOT = 1, FIFO_MODE_CIRCULAR = 2, FIFO_MODE_STREAMING = 3 };
enum { FIFO_CLEAR_ENTIRE = 1, FIFO_CLEAR_NONDURABLE = 2, FIFO_RETAIN = 3 };
/* The largest DATA payload a peer accepts. */
#define FIFO_MAX_PAYLOAD ((uint64_t)64 << 20)

struct fifo_packet {
	uint16_t request;
	uint16_t reserved;
	uint32_t data32;
	uint64_t data64;
};

static inline uint64_t fifo_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | p[n];
	return v;
}

static inline void fifo_put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline void fifo_encode(uint8_t out[FIFO_PACKET_SIZE], const struct fifo_packet *p)
{
	fifo_put_le(out, p->request, 2);
	fifo_put_le(out + 2, p->reserved, 2);
	fifo_put_le(out + 4, p->data32, 4);
	fifo_put_le(out + 8, p->data64, 8);
}

static inline void fifo_decode(const uint8_t in[FIFO_PACKET_SIZE], struct fifo_packet *p)
{
	p->request = (uint16_t)fifo_le(in, 2);
	p->reserved = (uint16_t)fifo_le(in + 2, 2);
	p->data32 = (uint32_t)fifo_le(in + 4, 4);
	p->data64 = fifo_le(in + 8, 8);
}

/* An ALERT packet's name (bytes 2..15, NUL-padded) into name (15 bytes);
 * 0, or -1 when it is empty or holds a byte that is not printable ASCII. */
static inline int fifo_alert_name(const uint8_t in[FIFO_PACKET_SIZE], char name[FIFO_ALERT_MAX + 1])
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

/* An ALERT packet for name (its first 14 bytes). */
static inline void fifo_alert_encode(uint8_t out[FIFO_PACKET_SIZE], const char *name)
{
	size_t n = strnlen(name, FIFO_ALERT_MAX);

	memset(out, 0, FIFO_PACKET_SIZE);
	fifo_put_le(out, FIFO_ALERT, 2);
	memcpy(out + 2, name, n);
}

/* Whether a packet from a provider is one this protocol defines, with the
 * fields it requires (reserved zero but in ALERT; DATA kinds 2 and 3 with
 * a payload of at most FIFO_MAX_PAYLOAD that is a multiple of 8). */
static inline int fifo_provider_packet_ok(const struct fifo_packet *p, const uint8_t raw[FIFO_PACKET_SIZE])
{
	char name[FIFO_ALERT_MAX + 1];

	switch (p->request) {
	case FIFO_ALERT:
		return fifo_alert_name(raw, name) == 0;
	case FIFO_STARTED:
	case FIFO_SAVE_BUFFER:
	case FIFO_STOPPED:
	case FIFO_STATS:
	case FIFO_OVERWRITTEN:
		return p->reserved == 0;
	case FIFO_DATA:
		return p->reserved == 0 && (p->data32 == FIFO_DATA_DURABLE || p->data32 == FIFO_DATA_ROLLING) &&
		       p->data64 <= FIFO_MAX_PAYLOAD && p->data64 % 8 == 0;
	default:
		return 0;
	}
}

/* 1 when request is a code the manager sends a provider. */
static inline int fifo_server_request(uint16_t request)
{
	switch (request) {
	case FIFO_BUFFER_SAVED:
	case FIFO_DATA:
	case FIFO_INITIALIZE:
	case FIFO_START:
	case FIFO_STOP:
	case FIFO_TERMINATE:
		return 1;
	default:
		return 0;
	}
}

#endif
