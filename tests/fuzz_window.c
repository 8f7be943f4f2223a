/*
 * libFuzzer target for a live FXT stream's window scan (catalog/window.c):
 * the stream's bytes are hostile, and the live thread walks their record
 * framing as they arrive. The input is the stream, read from a file as the
 * live thread reads it. Properties, not only "no crash":
 *   W1 scanning in pieces (as bytes arrive) gives the same state as one
 *      scan of the same bytes: position, durable records, marks.
 *   W2 the position reached is a record boundary: walking record sizes
 *      from 0 lands on it (unless the framing broke), within the bytes.
 *   W3 the durable records kept frame whole (fxt_framing succeeds), and
 *      every mark is a boundary at or before the position with no more
 *      durable bytes than there are.
 *   W4 a window: from is 0 or a mark within `window` bytes of the end, and
 *      the prefix is the durable records before that mark, plus one
 *      provider section when the mark's provider is not the last named.
 * Build with libFuzzer (clang):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
 *     tests/fuzz_window.c catalog/window.c ingest/fxtrec.c
 * or replay a corpus without it: link tests/fuzz_replay.c instead.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../catalog/window.h"
#include "../ingest/fxtrec.h"
#define FZ_NAME "fuzz_window"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const struct live_window *a, const struct live_window *b)
{
	if (a->scanned != b->scanned || a->broken != b->broken || a->dlen != b->dlen || a->nmarks != b->nmarks ||
	    a->ctx != b->ctx || a->dctx != b->dctx)
		fz_fail("a scan in pieces differs from one scan (at %llu / %llu)", (unsigned long long)a->scanned,
			(unsigned long long)b->scanned);
	if (a->dlen && memcmp(a->durable, b->durable, a->dlen) != 0)
		fz_fail("a scan in pieces kept other durable records");
	if (a->nmarks && memcmp(a->marks, b->marks, a->nmarks * sizeof(*a->marks)) != 0)
		fz_fail("a scan in pieces marked other boundaries");
}

static void boundary(const uint8_t *p, size_t size, const struct live_window *w)
{
	uint64_t off = 0, records;
	size_t good, i;

	if (w->scanned > size)
		fz_fail("scanned %llu of %zu bytes", (unsigned long long)w->scanned, size);
	while (!w->broken && off < w->scanned) {
		uint64_t n = fxt_record_bytes(p + off);

		if (n == 0 || off + n > w->scanned)
			fz_fail("the position %llu is not a record boundary", (unsigned long long)w->scanned);
		off += n;
	}
	if (w->dlen && fxt_framing(w->durable, w->dlen, &records, &good) != 0)
		fz_fail("the durable records do not frame whole (%zu of %zu bytes)", good, w->dlen);
	for (i = 0; i < w->nmarks; i++)
		if (w->marks[i].off > w->scanned || w->marks[i].dlen > w->dlen ||
		    (i > 0 && w->marks[i].off <= w->marks[i - 1].off))
			fz_fail("mark %zu is out of place", i);
}

static void window(const struct live_window *w, uint64_t size, uint64_t win)
{
	uint8_t *prefix = NULL;
	uint64_t from = 0;
	size_t plen = 0, i;

	if (lw_input(w, size, win, &from, &prefix, &plen) != 0)
		return; /* out of memory */
	if (from == 0) {
		if (prefix != NULL)
			fz_fail("a prefix for the whole stream");
		return;
	}
	for (i = 0; i < w->nmarks && w->marks[i].off != from; i++)
		;
	if (i == w->nmarks || from + win < size || from > size)
		fz_fail("the window starts at %llu: not a mark within %llu bytes of %llu", (unsigned long long)from,
			(unsigned long long)win, (unsigned long long)size);
	if (plen != w->marks[i].dlen + (w->marks[i].ctx != w->marks[i].dctx ? 8 : 0) ||
	    (w->marks[i].dlen > 0 && memcmp(prefix, w->durable, w->marks[i].dlen) != 0))
		fz_fail("the prefix is not the durable records before the window");
	free(prefix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct live_window one, parts;
	uint64_t seed = fz_hash(data, size), cut = 0;
	int fd = memfd_create("stream", 0);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	lw_init(&one, 64);
	lw_init(&parts, 64);
	if (lw_scan(&one, fd, size) == 0) {
		while (cut < size) { /* the same bytes as they would arrive */
			cut += 1 + fz_next(&seed) % (size - cut < 300 ? size - cut : 300);
			if (lw_scan(&parts, fd, cut) != 0)
				fz_fail("a scan in pieces failed where one did not");
		}
		same(&parts, &one);
		boundary(data, size, &one);
		window(&one, size, 16 + fz_next(&seed) % 512);
		window(&one, one.scanned, 64 + fz_next(&seed) % 4096);
	}
	lw_free(&one);
	lw_free(&parts);
	close(fd);
	return 0;
}
