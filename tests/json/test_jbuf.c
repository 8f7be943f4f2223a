/*
 * Unit tests of the JSON writer (json/jbuf.c): 64-bit integers printed
 * exactly, doubles with the fewest digits that read back the same (NaN
 * and infinities as null), strings escaped so that any bytes give valid
 * JSON (control characters as \u00XX, invalid UTF-8 as U+FFFD), commas
 * between values at every level, and the buffer's hand-over. Every text
 * made here must also parse (cJSON).
 */
#include "../testutil.h"

#include <inttypes.h>
#include <math.h>

#include <cjson/cJSON.h>

#include "../../json/jbuf.h"

/* The text of b (taken: b is empty after), which must be valid JSON. */
static char *take(struct jbuf *b)
{
	size_t len = 0;
	char *s = jb_take(b, &len);
	cJSON *j;

	assert_non_null(s);
	assert_int_equal(strlen(s), len);
	assert_null(b->p);
	assert_int_equal(b->len, 0);
	if ((j = cJSON_ParseWithLength(s, len)) == NULL)
		fail_msg("not valid JSON: %s", s);
	cJSON_Delete(j);
	return s;
}

static void expect(struct jbuf *b, const char *want)
{
	char *s = take(b);

	assert_string_equal(s, want);
	free(s);
}

static void test_integers(void **state)
{
	struct jbuf b;

	(void)state;
	jb_init(&b);
	jb_arr(&b);
	jb_i64(&b, INT64_MIN);
	jb_i64(&b, INT64_MAX);
	jb_i64(&b, 0);
	jb_i64(&b, -1);
	jb_u64(&b, UINT64_MAX);
	jb_u64(&b, (UINT64_C(1) << 63) + 1);
	jb_u64(&b, UINT64_C(9007199254740993)); /* 2^53 + 1: no double holds it */
	jb_arr_end(&b);
	expect(&b, "[-9223372036854775808,9223372036854775807,0,-1,18446744073709551615,9223372036854775809,"
		   "9007199254740993]");
}

/* Every digit count, odd and even (jb_digits writes two at a time), each
 * power of ten and the numbers either side of it, against printf. */
static void test_integers_every_length(void **state)
{
	char want[64];
	uint64_t p = 1;
	int k, d;

	(void)state;
	for (k = 0; k < 20; k++, p *= 10)
		for (d = -1; d <= 1; d++) {
			uint64_t u = p + (uint64_t)(int64_t)d;
			int64_t i = (int64_t)u;
			struct jbuf b;

			jb_init(&b);
			jb_arr(&b);
			jb_u64(&b, u);
			jb_i64(&b, i);
			jb_i64(&b, i == INT64_MIN ? INT64_MIN : -i);
			jb_arr_end(&b);
			snprintf(want, sizeof(want), "[%" PRIu64 ",%" PRId64 ",%" PRId64 "]", u, i,
				 i == INT64_MIN ? INT64_MIN : -i);
			expect(&b, want);
		}
}

static void test_doubles(void **state)
{
	static const double round[] = { 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1.0 / 3, -1e-7,
					9007199254740993.0, 0.1 + 0.2 };
	struct jbuf b;
	size_t i;

	(void)state;
	jb_init(&b);
	jb_arr(&b);
	jb_dbl(&b, 0.1);
	jb_dbl(&b, 1.0);
	jb_dbl(&b, -2.5);
	jb_dbl(&b, 1e300);
	jb_dbl(&b, 0.30000000000000004);
	jb_dbl(&b, NAN);
	jb_dbl(&b, INFINITY);
	jb_dbl(&b, -INFINITY);
	jb_dbl(&b, 123456789012345678.0);
	jb_arr_end(&b);
	expect(&b, "[0.1,1.0,-2.5,1e+300,0.30000000000000004,null,null,null,"
		   "1.2345678901234568e+17]");
	jb_init(&b);
	jb_dbl(&b, -0.0); /* reads back as -0 */
	expect(&b, "-0");
	for (i = 0; i < sizeof(round) / sizeof(round[0]); i++) {
		char *s;

		jb_init(&b);
		jb_dbl(&b, round[i]);
		s = take(&b);
		if (strtod(s, NULL) != round[i])
			fail_msg("%s does not read back as %.17g", s, round[i]);
		free(s);
	}
}

static void test_strings_escaped(void **state)
{
	static const char ctl[] = "\x01\x02\x08\t\n\x0b\x0c\r\x1b\x1f";
	struct jbuf b;

	(void)state;
	jb_init(&b);
	jb_arr(&b);
	jb_str(&b, "plain / text");
	jb_str(&b, "q\"b\\e");
	jb_str(&b, ctl);
	jb_strn(&b, "a\0b", 3); /* a NUL inside */
	jb_str(&b, "\x7f");     /* DEL needs no escape */
	jb_str(&b, "");
	jb_str(&b, NULL); /* null */
	jb_arr_end(&b);
	expect(&b, "[\"plain / text\",\"q\\\"b\\\\e\",\"\\u0001\\u0002\\u0008\\u0009\\u000a\\u000b\\u000c\\u000d"
		   "\\u001b\\u001f\",\"a\\u0000b\",\"\x7f\",\"\",null]");
}

#define FFFD "\xef\xbf\xbd"

static void test_strings_utf8(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" }, /* valid */
		{ "a\x80z", "a" FFFD "z" },                     /* a lone continuation byte */
		{ "\xc0\x80", FFFD FFFD },                      /* overlong NUL */
		{ "\xe0\x80\xaf", FFFD FFFD FFFD },             /* overlong 3-byte */
		{ "\xed\xa0\x80", FFFD FFFD FFFD },             /* a surrogate */
		{ "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD },    /* past U+10FFFF */
		{ "\xf5\x80", FFFD FFFD },                      /* no such lead byte */
		{ "x\xe2\x82", "x" FFFD FFFD },                 /* cut at the end */
		{ "\xe2\x82z", FFFD FFFD "z" },                 /* cut before an ASCII byte */
		{ "\xff\xfe", FFFD FFFD },
	};
	char want[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jbuf b;
		char *s;

		jb_init(&b);
		jb_str(&b, cases[i].in);
		snprintf(want, sizeof(want), "\"%s\"", cases[i].out);
		s = take(&b);
		if (strcmp(s, want) != 0)
			fail_msg("case %zu: %s, not %s", i, s, want);
		free(s);
	}
}

/* Commas between values at every level; keys escaped like strings. */
static void test_structure(void **state)
{
	struct jbuf b;

	(void)state;
	jb_init(&b);
	jb_obj(&b);
	jb_key(&b, "a");
	jb_i64(&b, 1);
	jb_key(&b, "b");
	jb_arr(&b);
	jb_i64(&b, 1);
	jb_arr(&b);
	jb_arr_end(&b);
	jb_obj(&b);
	jb_obj_end(&b);
	jb_bool(&b, 1);
	jb_bool(&b, 0);
	jb_null(&b);
	jb_arr_end(&b);
	jb_key(&b, "k\"\n");
	jb_obj(&b);
	jb_key(&b, "x");
	jb_str(&b, "y");
	jb_obj_end(&b);
	jb_key(&b, "raw");
	jb_raw(&b, "[7]", 3); /* raw text: no separator of its own */
	jb_obj_end(&b);
	expect(&b, "{\"a\":1,\"b\":[1,[],{},true,false,null],\"k\\\"\\u000a\":{\"x\":\"y\"},\"raw\":[7]}");
}

/* A long text grows the buffer; an allocation failure is sticky and
 * take gives NULL. */
static void test_growth_and_oom(void **state)
{
	struct jbuf b;
	size_t len, i;
	char *s;

	(void)state;
	jb_init(&b);
	jb_arr(&b);
	for (i = 0; i < 100000; i++)
		jb_u64(&b, UINT64_MAX - i);
	jb_arr_end(&b);
	s = take(&b);
	len = strlen(s);
	assert_true(len > 100000 * 20);
	assert_memory_equal(s, "[18446744073709551615,18446744073709551614,", 43);
	assert_string_equal(s + len - 22, ",18446744073709451616]");
	free(s);

	jb_init(&b);
	jb_str(&b, "x");
	b.oom = 1;
	jb_str(&b, "y");
	assert_null(jb_take(&b, &len));
	jb_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integers),    cmocka_unit_test(test_integers_every_length),    cmocka_unit_test(test_doubles),   cmocka_unit_test(test_strings_escaped),
		cmocka_unit_test(test_strings_utf8), cmocka_unit_test(test_structure), cmocka_unit_test(test_growth_and_oom),
	};

	return cmocka_run_group_tests_name("jbuf", tests, NULL, NULL);
}
