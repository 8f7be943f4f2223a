/*
 * Unit tests of the bounded reader (ingest/reader.h) every decoder reads
 * untrusted bytes through: reads never pass the end, the error is sticky,
 * sub-readers are bounded by their own end, bit fields are extracted as
 * the FXT specification numbers them, and both byte orders load alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../ingest/reader.h"

static const uint8_t seq16[16] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
				   0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10 };

static void test_little_endian(void **state)
{
	struct rd r;

	(void)state;
	rd_init(&r, seq16, sizeof(seq16), 0);
	assert_int_equal(rd_left(&r), 16);
	assert_int_equal(rd_u64(&r), UINT64_C(0x0807060504030201));
	assert_int_equal(rd_u32(&r), 0x0c0b0a09);
	assert_int_equal(rd_u16(&r), 0x0e0d);
	assert_int_equal(rd_u8(&r), 0x0f);
	assert_int_equal(rd_u8(&r), 0x10);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(r.err, 0);
}

static void test_big_endian(void **state)
{
	struct rd r;

	(void)state;
	rd_init(&r, seq16, sizeof(seq16), 1);
	assert_int_equal(rd_u64(&r), UINT64_C(0x0102030405060708));
	assert_int_equal(rd_u32(&r), 0x090a0b0c);
	assert_int_equal(rd_u16(&r), 0x0d0e);
	assert_int_equal(rd_u8(&r), 0x0f);
	assert_int_equal(rd_u8(&r), 0x10);
	assert_int_equal(r.err, 0);
}

/* The load helpers agree with a byte-by-byte reference for every byte order. */
static void test_loads(void **state)
{
	static const uint8_t hi[8] = { 0xff, 0x80, 0x7f, 0x00, 0xfe, 0x01, 0xaa, 0x55 };

	(void)state;
	assert_int_equal(rd_load64(hi, 0), UINT64_C(0x55aa01fe007f80ff));
	assert_int_equal(rd_load64(hi, 1), UINT64_C(0xff807f00fe01aa55));
	assert_int_equal(rd_load32(hi, 0), 0x007f80ffu);
	assert_int_equal(rd_load32(hi, 1), 0xff807f00u);
	assert_int_equal(rd_load16(hi, 0), 0x80ff);
	assert_int_equal(rd_load16(hi, 1), 0xff80);
}

/* A read that does not fit fails without consuming, and every later read
 * returns zero even when it would fit. */
static void test_sticky_error(void **state)
{
	struct rd r;

	(void)state;
	rd_init(&r, seq16, 10, 0);
	assert_int_equal(rd_u64(&r), UINT64_C(0x0807060504030201));
	assert_int_equal(rd_left(&r), 2);
	assert_int_equal(rd_u32(&r), 0); /* 4 > 2 */
	assert_int_equal(r.err, 1);
	assert_ptr_equal(r.p, seq16 + 8); /* nothing consumed */
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(rd_u8(&r), 0); /* would fit, but the error sticks */
	assert_int_equal(rd_u16(&r), 0);
	assert_null(rd_bytes(&r, 0));
	assert_int_equal(r.err, 1);
	assert_ptr_equal(r.p, seq16 + 8);

	/* each width fails on its own at one byte short */
	rd_init(&r, seq16, 7, 0);
	assert_int_equal(rd_u64(&r), 0);
	assert_int_equal(r.err, 1);
	rd_init(&r, seq16, 3, 1);
	assert_int_equal(rd_u32(&r), 0);
	assert_int_equal(r.err, 1);
	rd_init(&r, seq16, 1, 0);
	assert_int_equal(rd_u16(&r), 0);
	assert_int_equal(r.err, 1);
	rd_init(&r, seq16, 0, 0);
	assert_int_equal(rd_u8(&r), 0);
	assert_int_equal(r.err, 1);
}

static void test_bytes(void **state)
{
	struct rd r;

	(void)state;
	rd_init(&r, seq16, 16, 0);
	assert_ptr_equal(rd_bytes(&r, 0), seq16); /* an empty read succeeds */
	assert_ptr_equal(rd_bytes(&r, 5), seq16);
	assert_ptr_equal(rd_bytes(&r, 11), seq16 + 5);
	assert_ptr_equal(rd_bytes(&r, 0), seq16 + 16);
	assert_int_equal(r.err, 0);
	assert_null(rd_bytes(&r, 1));
	assert_int_equal(r.err, 1);

	/* huge lengths cannot wrap the pointer past the check */
	rd_init(&r, seq16, 16, 0);
	assert_null(rd_bytes(&r, SIZE_MAX));
	assert_int_equal(r.err, 1);
	rd_init(&r, seq16 + 8, 8, 0);
	assert_null(rd_bytes(&r, (size_t)-8));
	assert_null(rd_bytes(&r, 1));
	assert_ptr_equal(r.p, seq16 + 8);
}

/* A sub-reader covers exactly n bytes; the parent moves past them. */
static void test_sub_bounds(void **state)
{
	struct rd r, s, t;

	(void)state;
	rd_init(&r, seq16, 16, 1);
	assert_int_equal(rd_u16(&r), 0x0102);
	s = rd_sub(&r, 4);
	assert_int_equal(s.err, 0);
	assert_int_equal(s.big_endian, 1);
	assert_ptr_equal(s.p, seq16 + 2);
	assert_ptr_equal(s.end, seq16 + 6);
	assert_int_equal(rd_left(&s), 4);
	assert_int_equal(rd_left(&r), 10);
	assert_int_equal(rd_u8(&r), 0x07); /* parent continues after the sub range */

	/* reading past the sub's end fails in the sub only, though the parent
	 * buffer has more bytes */
	assert_int_equal(rd_u16(&s), 0x0304);
	assert_int_equal(rd_u32(&s), 0);
	assert_int_equal(s.err, 1);
	assert_int_equal(rd_u8(&s), 0); /* sticky in the sub too */
	assert_int_equal(r.err, 0);
	assert_int_equal(rd_u8(&r), 0x08);

	/* a sub of a sub stays inside both */
	rd_init(&r, seq16, 16, 0);
	s = rd_sub(&r, 8);
	t = rd_sub(&s, 3);
	assert_int_equal(t.err, 0);
	assert_int_equal(rd_left(&t), 3);
	assert_int_equal(rd_left(&s), 5);
	t = rd_sub(&s, 6); /* 6 > 5 */
	assert_int_equal(t.err, 1);
	assert_int_equal(rd_left(&t), 0);
	assert_null(rd_bytes(&t, 0));
	assert_int_equal(s.err, 1);
	assert_int_equal(r.err, 0);
	assert_int_equal(rd_left(&r), 8);

	/* a sub too large: both fail, the parent consumes nothing */
	rd_init(&r, seq16, 16, 0);
	rd_u64(&r);
	s = rd_sub(&r, 9);
	assert_int_equal(s.err, 1);
	assert_int_equal(rd_left(&s), 0);
	assert_int_equal(rd_u8(&s), 0);
	assert_int_equal(r.err, 1);
	assert_ptr_equal(r.p, seq16 + 8);

	/* a sub from a failed parent is failed and empty */
	s = rd_sub(&r, 0);
	assert_int_equal(s.err, 1);
	assert_int_equal(rd_left(&s), 0);

	/* an empty sub is fine */
	rd_init(&r, seq16, 16, 0);
	s = rd_sub(&r, 0);
	assert_int_equal(s.err, 0);
	assert_int_equal(rd_left(&s), 0);
	assert_int_equal(rd_left(&r), 16);
	s = rd_sub(&r, 16);
	assert_int_equal(s.err, 0);
	assert_int_equal(rd_left(&s), 16);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(r.err, 0);
}

static void test_bits(void **state)
{
	const uint64_t w = UINT64_C(0xfedcba9876543210);
	unsigned lo;

	(void)state;
	assert_int_equal(rd_bits(w, 0, 63), w);
	assert_int_equal(rd_bits(w, 0, 3), 0x0);
	assert_int_equal(rd_bits(w, 4, 15), 0x321);
	assert_int_equal(rd_bits(w, 16, 31), 0x7654);
	assert_int_equal(rd_bits(w, 32, 63), 0xfedcba98u);
	assert_int_equal(rd_bits(w, 60, 63), 0xf);
	assert_int_equal(rd_bits(w, 63, 63), 1);
	assert_int_equal(rd_bits(w, 0, 0), 0);
	assert_int_equal(rd_bits(w, 4, 4), 1);
	assert_int_equal(rd_bits(w, 1, 63), w >> 1);
	assert_int_equal(rd_bits(w, 4, 35), 0x87654321u); /* large record size: 32 bits */
	assert_int_equal(rd_bits(UINT64_MAX, 0, 62), UINT64_MAX >> 1);
	assert_int_equal(rd_bits(UINT64_MAX, 20, 51), 0xffffffffu);
	for (lo = 0; lo < 64; lo++) {
		assert_int_equal(rd_bits(UINT64_MAX, lo, 63), UINT64_MAX >> lo);
		assert_int_equal(rd_bits(UINT64_MAX, 0, lo), lo == 63 ? UINT64_MAX : (UINT64_C(2) << lo) - 1);
		assert_int_equal(rd_bits(UINT64_C(1) << lo, lo, lo), 1);
		assert_int_equal(rd_bits(~(UINT64_C(1) << lo), lo, lo), 0);
	}
}

/* The FXT magic word reads back as itself in its own byte order only. */
static void test_magic_word(void **state)
{
	static const uint8_t le[8] = { 0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00 };
	uint8_t be[8];
	struct rd r;
	int i;

	(void)state;
	for (i = 0; i < 8; i++)
		be[i] = le[7 - i];
	rd_init(&r, le, 8, 0);
	assert_int_equal(rd_u64(&r), UINT64_C(0x0016547846040010));
	rd_init(&r, be, 8, 1);
	assert_int_equal(rd_u64(&r), UINT64_C(0x0016547846040010));
	rd_init(&r, le, 8, 1);
	assert_int_not_equal(rd_u64(&r), UINT64_C(0x0016547846040010));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_little_endian), cmocka_unit_test(test_big_endian),
		cmocka_unit_test(test_loads),         cmocka_unit_test(test_sticky_error),
		cmocka_unit_test(test_bytes),         cmocka_unit_test(test_sub_bounds),
		cmocka_unit_test(test_bits),          cmocka_unit_test(test_magic_word),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
