/*
 * The provider transport's wire format (docs/PROVIDER-PROTOCOL.md): the
 * 16-byte FIFO packets of fuchsia-trace-fifo-packets.txt with the codes
 * this transport adds, the framing check the trace manager applies to the
 * records a provider sends, and the FXT metadata records the manager
 * writes around each provider's records. Pure functions: the fuzz target
 * reaches them alone.
 */
#ifndef CAPTURE_FIFO_H
#define CAPTURE_FIFO_H

#include <stddef.h>
#include <stdint.h>

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

#endif
