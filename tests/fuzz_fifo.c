/*
 * libFuzzer target for what the trace manager parses from a provider
 * (provider/protocol.h, docs/PROVIDER-PROTOCOL.md): the 16-byte packets and the
 * framing of the FXT records in a DATA payload. The input is read as a
 * provider's byte stream: packets, and after a DATA packet its payload.
 * Properties, not only "no crash":
 *   F1 decode then encode gives the same 16 bytes back (every field kept).
 *   F2 a packet the manager accepts is one the protocol defines: STARTED,
 *      SAVE_BUFFER, STOPPED, STATS, OVERWRITTEN with reserved zero; ALERT with a name of
 *      1 to 14 printable bytes and zero padding (and the name encodes back
 *      to the same packet); DATA of kind 2 or 3, a payload of at most
 *      64 MiB that is a multiple of 8.
 *   F3 fxt_framing: the good prefix is a multiple of 8, within the bytes,
 *      and ends on a record boundary (framing it alone succeeds with the
 *      same count); success means the good prefix is all of it.
 * Build with libFuzzer (clang):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
 *     tests/fuzz_fifo.c ingest/fxtrec.c
 * or replay a corpus without it: link tests/fuzz_replay.c instead.
 */
#include <stdint.h>
#include <string.h>

#include "../capture/fifo.h"
#define FZ_NAME "fuzz_fifo"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_framing(const uint8_t *p, size_t n)
{
	uint64_t records, again;
	size_t good, good2;
	int rc = fxt_framing(p, n, &records, &good);

	if (good % 8 != 0 || good > n)
		fz_fail("framing: good prefix %zu of %zu bytes", good, n);
	if (rc == 0 && good != n)
		fz_fail("framing succeeded with %zu of %zu bytes good", good, n);
	if (fxt_framing(p, good, &again, &good2) != 0 || again != records || good2 != good)
		fz_fail("framing: the good prefix does not frame alone to the same records");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	check_framing(data, size - size % 8);
	while (size - off >= FIFO_PACKET_SIZE) {
		struct fifo_packet pk;
		uint8_t again[FIFO_PACKET_SIZE];
		const uint8_t *raw = data + off;

		fifo_decode(raw, &pk);
		fifo_encode(again, &pk);
		if (memcmp(again, raw, FIFO_PACKET_SIZE) != 0)
			fz_fail("decode/encode does not give the packet back");
		off += FIFO_PACKET_SIZE;
		if (!fifo_provider_packet_ok(&pk, raw))
			break; /* the manager closes the connection here */
		switch (pk.request) {
		case FIFO_STARTED:
		case FIFO_SAVE_BUFFER:
		case FIFO_STOPPED:
		case FIFO_STATS:
		case FIFO_OVERWRITTEN:
			if (pk.reserved != 0)
				fz_fail("accepted a packet with reserved bits set");
			break;
		case FIFO_ALERT: {
			char name[FIFO_ALERT_MAX + 1];
			uint8_t enc[FIFO_PACKET_SIZE];

			if (fifo_alert_name(raw, name) != 0 || strlen(name) == 0)
				fz_fail("accepted an alert without a name");
			fifo_alert_encode(enc, name);
			if (memcmp(enc, raw, FIFO_PACKET_SIZE) != 0)
				fz_fail("an alert's name does not encode back to its packet");
			break;
		}
		case FIFO_DATA:
			if ((pk.data32 != FIFO_DATA_DURABLE && pk.data32 != FIFO_DATA_ROLLING) ||
			    pk.data64 > FIFO_MAX_PAYLOAD || pk.data64 % 8 != 0)
				fz_fail("accepted a DATA packet the protocol refuses");
			{
				size_t n = pk.data64 < size - off ? (size_t)pk.data64 : size - off;

				check_framing(data + off, n - n % 8);
				off += n;
			}
			break;
		default:
			fz_fail("accepted request 0x%x", pk.request);
		}
	}
	return 0;
}
