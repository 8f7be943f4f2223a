/*
 * Tests of capture/modes.c, the buffering modes the trace manager enforces
 * (docs/PROVIDER-PROTOCOL.md), on hand-made FXT records: circular mode
 * keeps every durable record and the newest rolling ones that fit, letting
 * the oldest go whole and counting them; oneshot mode keeps the first
 * buffer's worth of whole records and counts the rest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../capture/modes.h"

enum { EVENT = 4, STRING = 2 };

/* Writes a record of type and words 8-byte words at out, its second word
 * (when it has one) holding tag; returns its bytes. */
static size_t rec(uint8_t *out, unsigned type, unsigned words, uint8_t tag)
{
	uint64_t h = type | (uint64_t)words << 4;

	memset(out, 0, words * 8u);
	memcpy(out, &h, 8); /* little-endian, as FXT */
	if (words > 1)
		out[8] = tag;
	return words * 8u;
}

/* The tags of the rolling records r holds, oldest first, into out. */
static void ring_tags(const struct cap_ring *r, char *out)
{
	size_t off = r->roff;

	while (off < r->rlen) {
		uint64_t h;

		memcpy(&h, r->ring + off, 8);
		*out++ = (char)r->ring[off + 8];
		off += (size_t)((h >> 4) & 0xfff) * 8;
	}
	*out = '\0';
}

static void test_circular_keeps_newest(void **state)
{
	struct cap_ring r = { 0 };
	uint8_t b[256];
	size_t n = 0;
	char tags[16];

	(void)state;
	n += rec(b + n, EVENT, 2, 'a');
	n += rec(b + n, STRING, 3, 's');
	n += rec(b + n, EVENT, 2, 'b');
	n += rec(b + n, EVENT, 2, 'c');
	/* a buffer of 32 bytes holds two 16-byte events: a goes */
	assert_int_equal(cap_ring_add(&r, 32, b, n), 1);
	ring_tags(&r, tags);
	assert_string_equal(tags, "bc");
	assert_int_equal(r.dlen, 24); /* the string, kept whatever the buffer */
	assert_int_equal(r.durable[8], 's');
	assert_int_equal(r.evicted, 1);
	assert_int_equal(r.wraps, 1);
	/* two more: b and c go; each record that let older ones go is a wrap */
	n = rec(b, EVENT, 2, 'd');
	n += rec(b + n, EVENT, 2, 'e');
	assert_int_equal(cap_ring_add(&r, 32, b, n), 2);
	ring_tags(&r, tags);
	assert_string_equal(tags, "de");
	assert_int_equal(r.evicted, 3);
	assert_int_equal(r.wraps, 3);
	cap_ring_free(&r);
	assert_null(r.ring);
}

/* cap_ring_take moves the records out (the session writes them without
 * the manager's lock) and leaves the counts, which the API reports. */
static void test_circular_take(void **state)
{
	struct cap_ring r = { 0 }, out;
	uint8_t b[256];
	size_t n = 0;
	char tags[16];

	(void)state;
	n += rec(b + n, STRING, 3, 's');
	n += rec(b + n, EVENT, 2, 'a');
	n += rec(b + n, EVENT, 2, 'b');
	n += rec(b + n, EVENT, 2, 'c');
	assert_int_equal(cap_ring_add(&r, 32, b, n), 1);
	cap_ring_take(&r, &out);
	ring_tags(&out, tags);
	assert_string_equal(tags, "bc");
	assert_int_equal(out.dlen, 24);
	assert_int_equal(out.durable[8], 's');
	assert_int_equal(out.evicted + out.wraps, 0);
	assert_null(r.ring);
	assert_null(r.durable);
	assert_int_equal(r.dlen + r.rlen + r.roff, 0);
	assert_int_equal(r.evicted, 1);
	assert_int_equal(r.wraps, 1);
	/* r takes records again, in memory of its own */
	n = rec(b, EVENT, 2, 'd');
	assert_int_equal(cap_ring_add(&r, 32, b, n), 0);
	ring_tags(&r, tags);
	assert_string_equal(tags, "d");
	cap_ring_free(&out);
	cap_ring_free(&r);
}

static void test_circular_refuses_larger_than_buffer(void **state)
{
	struct cap_ring r = { 0 };
	uint8_t b[128];
	size_t n = 0;
	char tags[16];

	(void)state;
	n += rec(b + n, EVENT, 2, 'a');
	n += rec(b + n, EVENT, 6, 'X'); /* 48 bytes: never fits in 32 */
	assert_int_equal(cap_ring_add(&r, 32, b, n), 1);
	ring_tags(&r, tags);
	assert_string_equal(tags, "a"); /* nothing was let go for it */
	assert_int_equal(r.evicted, 0);
	cap_ring_clear(&r);
	ring_tags(&r, tags);
	assert_string_equal(tags, "");
	assert_int_equal(r.dlen, 0);
	cap_ring_free(&r);
}

/* Many adds: the ring compacts itself and still holds the newest. */
static void test_circular_long_run(void **state)
{
	struct cap_ring r = { 0 };
	uint8_t b[16];
	char tags[16];
	int i;

	(void)state;
	for (i = 0; i < 100000; i++)
		cap_ring_add(&r, 48, b, rec(b, EVENT, 2, (uint8_t)('a' + i % 26)));
	ring_tags(&r, tags);
	assert_string_equal(tags, "bcd"); /* 99997..99999 are b, c, d */
	assert_int_equal(r.evicted, 100000 - 3);
	assert_true(r.rcap <= 65536 * 2);
	cap_ring_free(&r);
}

static void test_oneshot_first_buffer(void **state)
{
	uint8_t b[256];
	size_t n = 0, kept;
	uint64_t refused = 0;
	int full = 0;

	(void)state;
	n += rec(b + n, EVENT, 2, 'a');
	n += rec(b + n, STRING, 3, 's');
	n += rec(b + n, EVENT, 2, 'b');
	/* 40 of 48 bytes fit after 8 the run already had: a and s; b does not */
	kept = cap_oneshot_take(8, 48, &full, &refused, b, n);
	assert_int_equal(kept, 40);
	assert_true(full);
	assert_int_equal(refused, 1);
	/* once full, everything after is refused, even what would fit */
	n = rec(b, EVENT, 1, 0);
	assert_int_equal(cap_oneshot_take(48, 48, &full, &refused, b, n), 0);
	assert_int_equal(refused, 2);
	/* a new run (full cleared by START): records are taken again */
	full = 0;
	assert_int_equal(cap_oneshot_take(0, 48, &full, &refused, b, n), 8);
	assert_false(full);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_circular_keeps_newest),
		cmocka_unit_test(test_circular_take),
		cmocka_unit_test(test_circular_refuses_larger_than_buffer),
		cmocka_unit_test(test_circular_long_run),
		cmocka_unit_test(test_oneshot_first_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
