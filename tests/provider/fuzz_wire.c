/*
 * libFuzzer target for everything the provider library parses from the
 * network (provider/wire.c): the server's reply to the upgrade request and
 * the server's packets. It asserts properties against oracles written here
 * from docs/PROVIDER-PROTOCOL.md, not only "no crash".
 *
 * Input: the first byte picks what the rest is:
 *   0xfe  a category list as DATA kind 1 carries it, a NUL, and a category
 *         name (wire_category_match)
 *   even  an HTTP reply head (wire_parse_upgrade)
 *   odd   a stream of server frames (wire_decode_server), also cut in two
 *         at the position the first byte gives
 *   Properties (a violation abort()s with a message):
 *   U1 The reply parses WIRE_OK exactly when the oracle finds a complete
 *      head (an empty line within the first 8 KiB) whose status line is
 *      "HTTP/1.x 101" and that holds "Upgrade: fxt-provider/1", and no
 *      X-Provider-Id that is not a decimal; *used is then one past the
 *      empty line, and appending bytes after it changes nothing.
 *   U2 WIRE_MORE exactly when no empty line is in the bytes given (and
 *      they are fewer than the limit); WIRE_ETOOBIG when none is within it.
 *   F1 A frame decodes WIRE_OK exactly when its code is one the server may
 *      send, its reserved field is 0, and a DATA's length is at most 64
 *      MiB and all there; then used is 16 (+ length for DATA), and
 *      encoding the packet again gives its 16 bytes.
 *   F2 Decoding the stream whole and in two pieces (the way the
 *      transport's receive loop keeps an incomplete frame) gives the same
 *      packets and the same final verdict.
 *   C1 A category is enabled exactly when the list is empty or one of its
 *      comma-separated items, spaces and tabs around it taken off, equals
 *      it, or ends in '*' and is a prefix of it (the rest of the item).
 *
 * Build with libFuzzer (clang):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
 *     tests/provider/fuzz_wire.c provider/wire.c
 * or replay a corpus without it: link tests/fuzz_replay.c and run it on
 * tests/corpus/provider_wire.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../provider/provider_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD_MAX 8192

__attribute__((format(printf, 1, 2), noreturn)) static void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_wire: property violated: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---- The reply oracle ------------------------------------------------------ */

/* Offset one past the first empty line (a line end, then an optional CR,
 * then LF), within n bytes; 0 when none. */
static size_t oracle_head_end(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] != '\n')
			continue;
		if (i + 1 < n && s[i + 1] == '\n')
			return i + 2;
		if (i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The line [a, b) without its CR; returns its length. */
static size_t oracle_line(const char *s, size_t a, size_t b)
{
	size_t n = b - a;

	return n > 0 && s[a + n - 1] == '\r' ? n - 1 : n;
}

static int oracle_header(const char *line, size_t n, const char *name, const char **v, size_t *vn)
{
	size_t k = strlen(name), a, b;

	if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0)
		return 0;
	for (a = k + 1; a < n && (line[a] == ' ' || line[a] == '\t'); a++)
		;
	for (b = n; b > a && (line[b - 1] == ' ' || line[b - 1] == '\t'); b--)
		;
	*v = line + a;
	*vn = b - a;
	return 1;
}

/* 1 when the head [0, end) is an accepted upgrade. */
static int oracle_upgrade_ok(const char *s, size_t end)
{
	size_t a = 0, b, n;
	int ok = 0, line = 0;

	for (; a < end; a = b + 1, line++) {
		const char *v;
		size_t vn, i;

		b = (size_t)((const char *)memchr(s + a, '\n', end - a) - s);
		n = oracle_line(s, a, b);
		if (line == 0) {
			if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || s[8] != ' ' || memcmp(s + 9, "101", 3) != 0 ||
			    (n > 12 && s[12] != ' '))
				return 0;
			continue;
		}
		if (n == 0)
			break;
		if (oracle_header(s + a, n, "Upgrade", &v, &vn) && vn == 14 && strncasecmp(v, "fxt-provider/1", 14) == 0) {
			ok = 1;
		} else if (oracle_header(s + a, n, "X-Provider-Id", &v, &vn)) {
			if (vn < 1 || vn > 20)
				return 0;
			for (i = 0; i < vn; i++)
				if (v[i] < '0' || v[i] > '9')
					return 0;
			if (vn == 20 && memcmp(v, "18446744073709551615", 20) > 0)
				return 0;
		}
	}
	return ok;
}

static void check_reply(const char *s, size_t n)
{
	size_t used = 0, end = oracle_head_end(s, n < HEAD_MAX ? n : HEAD_MAX), used2 = 0;
	uint64_t id, id2;
	int status, status2, rc = wire_parse_upgrade(s, n, HEAD_MAX, &used, &id, &status);
	char *more;

	if (end == 0) {
		int want = n >= HEAD_MAX ? WIRE_ETOOBIG : WIRE_MORE;

		/* a status line that is not even complete cannot be judged */
		if (rc != want)
			fz_fail("U2: no head end in %zu bytes, got %d, want %d", n, rc, want);
		return;
	}
	if ((rc == WIRE_OK) != oracle_upgrade_ok(s, end))
		fz_fail("U1: wire_parse_upgrade said %d, the oracle %d", rc, oracle_upgrade_ok(s, end));
	if (rc != WIRE_OK) {
		if (rc != WIRE_EHTTP)
			fz_fail("U1: a complete head refused with %d", rc);
		return;
	}
	if (used != end || status != 101)
		fz_fail("U1: used %zu (want %zu), status %d", used, end, status);
	/* U1: bytes after the head change nothing */
	more = malloc(n + 5);
	memcpy(more, s, n);
	memcpy(more + n, "\0\1xyz", 5);
	if (wire_parse_upgrade(more, n + 5, HEAD_MAX, &used2, &id2, &status2) != WIRE_OK || used2 != used || id2 != id)
		fz_fail("U1: appending bytes changed the verdict");
	free(more);
}

/* ---- The frame oracle --------------------------------------------------------- */

struct verdict {
	uint8_t raw[16];
	int rc;
};

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | p[n];
	return v;
}

/* F1 for the frame at buf[0..n); returns the verdict and *used. */
static int check_frame(const uint8_t *buf, size_t n, size_t *used)
{
	struct fifo_packet pkt;
	const uint8_t *payload;
	uint8_t again[16];
	int rc = wire_decode_server(buf, n, &pkt, &payload, used), want;
	uint16_t code;

	if (n < 16) {
		if (rc != WIRE_MORE)
			fz_fail("F1: %zu bytes decoded as %d", n, rc);
		return rc;
	}
	code = (uint16_t)le(buf, 2);
	if (code != 0x0100 && code != 0x8000 && (code < 0x8100 || code > 0x8103))
		want = WIRE_EUNKNOWN;
	else if (le(buf + 2, 2) != 0)
		want = WIRE_ERESERVED;
	else if (code == 0x8000 && le(buf + 8, 8) > (UINT64_C(64) << 20))
		want = WIRE_EPAYLOAD;
	else if (code == 0x8000 && le(buf + 8, 8) > n - 16)
		want = WIRE_MORE;
	else
		want = WIRE_OK;
	if (rc != want)
		fz_fail("F1: frame 0x%04x decoded as %d, want %d", code, rc, want);
	if (rc != WIRE_OK)
		return rc;
	if (*used != 16 + (code == 0x8000 ? le(buf + 8, 8) : 0) || *used > n)
		fz_fail("F1: used %zu", *used);
	if ((code == 0x8000) != (payload != NULL) || (payload && payload != buf + 16))
		fz_fail("F1: payload pointer");
	fifo_encode(again, &pkt);
	if (memcmp(again, buf, 16) != 0)
		fz_fail("F1: re-encoding differs");
	return rc;
}

/* Decodes the whole stream; records each packet's bytes. Returns the count
 * and *final the last verdict. */
static size_t decode_all(const uint8_t *buf, size_t n, struct verdict *out, size_t max, int *final)
{
	size_t off = 0, used, k = 0;
	int rc;

	while ((rc = check_frame(buf + off, n - off, &used)) == WIRE_OK) {
		if (k < max)
			memcpy(out[k].raw, buf + off, 16);
		k++;
		off += used;
	}
	*final = rc;
	return k;
}

/* F2: the same stream arriving in two pieces, decoded as receive() does. */
static void check_split(const uint8_t *buf, size_t n, size_t cut, const struct verdict *whole, size_t nwhole,
			int final)
{
	uint8_t *rx = malloc(n ? n : 1);
	size_t have = 0, off = 0, used, k = 0, piece;
	int rc = WIRE_MORE;

	for (piece = 0; piece < 2 && rc == WIRE_MORE; piece++) {
		size_t add = piece == 0 ? cut : n - cut;

		memcpy(rx + have, buf + (piece == 0 ? 0 : cut), add);
		have += add;
		while ((rc = check_frame(rx + off, have - off, &used)) == WIRE_OK) {
			if (k < nwhole && k < 64 && memcmp(whole[k].raw, rx + off, 16) != 0)
				fz_fail("F2: packet %zu differs when split at %zu", k, cut);
			k++;
			off += used;
		}
	}
	if (k != nwhole || rc != final)
		fz_fail("F2: split at %zu: %zu packets, verdict %d; whole: %zu, %d", cut, k, rc, nwhole, final);
	free(rx);
}

/* ---- The category oracle -------------------------------------------------------- */

static int oracle_category(const char *list, const char *cat)
{
	size_t n = strlen(list), a = 0;

	if (n == 0)
		return 1;
	while (a <= n) {
		size_t b = a, lo, hi;

		while (b < n && list[b] != ',')
			b++;
		for (lo = a; lo < b && (list[lo] == ' ' || list[lo] == '\t'); lo++)
			;
		for (hi = b; hi > lo && (list[hi - 1] == ' ' || list[hi - 1] == '\t'); hi--)
			;
		if (hi > lo) {
			size_t len = hi - lo;

			if (list[hi - 1] == '*') {
				if (strlen(cat) >= len - 1 && strncmp(list + lo, cat, len - 1) == 0)
					return 1;
			} else if (strlen(cat) == len && strncmp(list + lo, cat, len) == 0) {
				return 1;
			}
		}
		a = b + 1;
	}
	return 0;
}

static void check_categories(const uint8_t *p, size_t n)
{
	char *list = malloc(n + 1), *cat;
	const uint8_t *nul = memchr(p, 0, n);
	size_t ln = nul ? (size_t)(nul - p) : n;

	memcpy(list, p, ln);
	list[ln] = '\0';
	cat = strndup(nul ? (const char *)nul + 1 : "", nul ? n - ln - 1 : 0);
	if (wire_category_match(list, cat) != oracle_category(list, cat))
		fz_fail("C1: category \"%s\" in \"%s\": %d", cat, list, wire_category_match(list, cat));
	free(cat);
	free(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct verdict whole[64];
	size_t n, cut;
	int final;
	uint8_t *copy;

	if (size < 1)
		return 0;
	n = size - 1;
	copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past them */
	memcpy(copy, data + 1, n);
	if (data[0] == 0xfe) {
		check_categories(copy, n);
	} else if ((data[0] & 1) == 0) {
		check_reply((const char *)copy, n);
	} else {
		size_t k = decode_all(copy, n, whole, 64, &final);

		cut = n ? (size_t)(data[0] >> 1) * 131 % (n + 1) : 0;
		check_split(copy, n, cut, whole, k, final);
	}
	free(copy);
	return 0;
}
