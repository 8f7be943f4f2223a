/*
 * The provider transport's wire format (docs/PROVIDER-PROTOCOL.md): the
 * 16-byte FIFO packets of fuchsia-trace-fifo-packets.txt with the codes
 * this transport adds. The framing check the trace manager applies to the
 * records a provider sends, and the FXT metadata records it writes around
 * each provider's records, are FXT's own (ingest/fxtrec.h). Pure
 * functions: the fuzz target reaches them alone.
 */
#ifndef CAPTURE_FIFO_H
#define CAPTURE_FIFO_H

#include <stddef.h>
#include <stdint.h>

#include "../ingest/fxtrec.h" /* the records the manager checks and writes */

enum fifo_request {
	FIFO_STARTED = 0x0001,      /* provider -> manager: data32 = protocol version */
	FIFO_SAVE_BUFFER = 0x0002,  /* data32 = wrap count, data64 = durable data end */
	FIFO_STOPPED = 0x0003,
	FIFO_ALERT = 0x0004,        /* name in bytes 2..15 */
	FIFO_BUFFER_SAVED = 0x0100, /* manager -> provider */
	FIFO_DATA = 0x8000,         /* data32 = kind, data64 = payload bytes that follow */
	FIFO_STATS = 0x8001,        /* data32 = wrapped count, data64 = records dropped */
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

void fifo_encode(uint8_t out[FIFO_PACKET_SIZE], const struct fifo_packet *p);
void fifo_decode(const uint8_t in[FIFO_PACKET_SIZE], struct fifo_packet *p);
/* An ALERT packet's name (bytes 2..15, NUL-padded) into name (15 bytes);
 * 0, or -1 when it is empty or holds a byte that is not printable ASCII. */
int fifo_alert_name(const uint8_t in[FIFO_PACKET_SIZE], char name[FIFO_ALERT_MAX + 1]);
void fifo_alert_encode(uint8_t out[FIFO_PACKET_SIZE], const char *name);
/* Whether a packet from a provider is one this protocol defines, with the
 * fields it requires (reserved zero but in ALERT; DATA kinds 2 and 3 with
 * a payload of at most FIFO_MAX_PAYLOAD that is a multiple of 8). */
int fifo_provider_packet_ok(const struct fifo_packet *p, const uint8_t raw[FIFO_PACKET_SIZE]);

#endif
