/*
 * Unit tests for the ingest driver (ingest/ingest.c) on damaged input
 * (docs/API.md, Meaning 10): unresolved references, unknown records, a
 * zero-size record, an archive cut short and files that are not traces.
 * What came before the damage is kept; the rest is counted.
 */
#include "ingest_util.h"

/* ---- 10. Damage ----------------------------------------------------------- */

static void test_damage_unresolved(void **state)
{
	struct fxtw_arg arg = fxtw_arg_i32(FXTW_IDX(12), 1);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_instant(&w, FXTW_TIDX(5), C, FXTW_IDX(9), 10, &arg, 1);
	fxtw_instant(&w, FXTW_TINL(1, 1), FXTW_IDX(3), FXTW_INL("ok"), 20, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(t_slices(&t), "<unknown string 9>|10|0|0|-|0|0\nok|20|0|0|-|1|1");
	assert_string_equal(tdb_rows(&t, "SELECT category FROM slice_view ORDER BY ts"), "c\n<unknown string 3>");
	assert_string_equal(t_args(&t, "<unknown string 9>"), "<unknown string 12>=1");
	assert_int_equal(tdb_diag(&t, "unresolved_string_refs"), 3);
	assert_int_equal(tdb_diag(&t, "unresolved_thread_refs"), 1);
	assert_string_equal(tdb_rows(&t, "SELECT pid, tid FROM threads ORDER BY id"), "0|0\n1|1");
	tdb_close(&t);
}

static void test_damage_unknown_types(void **state)
{
	struct fxtw_arg args[3] = { fxtw_arg_i32(FXTW_INL("before"), 1), fxtw_arg_null(FXTW_INL("weird")),
				    fxtw_arg_i32(FXTW_INL("after"), 2) };
	struct fxtw w;
	struct tdb t;

	(void)state;
	args[1].type = 12; /* an unknown argument type, written as header and name */
	t_open(&w);
	fxtw_instant(&w, FXTW_TINL(1, 1), C, FXTW_INL("first"), 10, NULL, 0);
	fxtw_word(&w, 11 | 3 << 4); /* record type 11, 3 words */
	fxtw_word(&w, 0x1234);
	fxtw_word(&w, 0x5678);
	fxtw_word(&w, 12 | 1 << 4); /* record type 12, 1 word */
	fxtw_event(&w, 13, FXTW_TINL(1, 1), C, FXTW_INL("evtype13"), 15, NULL, 0, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(1, 1), C, FXTW_INL("argy"), 20, args, 3);
	fxtw_instant(&w, FXTW_TINL(1, 1), C, FXTW_INL("last"), 30, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT name, ts FROM slice_view ORDER BY ts"), "first|10\nargy|20\nlast|30");
	assert_string_equal(t_args(&t, "argy"), "before=1,after=2");
	assert_int_equal(tdb_diag(&t, "unknown_records"), 3);
	assert_int_equal(tdb_diag(&t, "unknown_args"), 1);
	assert_int_equal(tdb_diag(&t, "malformed_records"), 0);
	assert_int_equal(tdb_diag(&t, "truncated_bytes"), 0);
	tdb_close(&t);
}

/* A zero-size record ends the archive: earlier records are kept, the rest
 * counts as truncated, and the trace is still good. */
static void test_damage_zero_size(void **state)
{
	struct fxtw w;
	struct tdb t;
	size_t mark;

	(void)state;
	t_open(&w);
	fxtw_instant(&w, FXTW_TINL(1, 1), C, FXTW_INL("kept"), 10, NULL, 0);
	mark = fxtw_mark(&w);
	fxtw_word(&w, 4); /* an event record header of size 0 */
	fxtw_instant(&w, FXTW_TINL(1, 1), C, FXTW_INL("lost"), 20, NULL, 0);
	fxtw_log(&w, FXTW_TINL(1, 1), 30, "lost too");
	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(tdb_diag(&t, "truncated_bytes"), (int64_t)(w.len - mark));
	assert_string_equal(tdb_rows(&t, "SELECT name FROM slice_view"), "kept");
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM logs"), 0);
	fxtw_fini(&w);
	tdb_close(&t);
}

/* A record running past the end of the data ends the archive there. */
static void test_damage_cut_short(void **state)
{
	struct fxtw w;
	struct tdb t;
	size_t mark;

	(void)state;
	t_open(&w);
	fxtw_instant(&w, FXTW_TINL(1, 1), C, FXTW_INL("kept"), 10, NULL, 0);
	fxtw_log(&w, FXTW_TINL(1, 1), 11, "kept too");
	mark = fxtw_mark(&w);
	fxtw_instant(&w, FXTW_TINL(1, 1), C, FXTW_INL("a-long-name-for-the-cut-record"), 20, NULL, 0);
	w.len -= 8;
	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(tdb_diag(&t, "truncated_bytes"), (int64_t)(w.len - mark));
	assert_true(w.len - mark > 8);
	assert_string_equal(tdb_rows(&t, "SELECT name FROM slice_view"), "kept");
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM logs"), 1);
	fxtw_fini(&w);
	tdb_close(&t);
}

/* Input that is not a trace fails with a sentence, and leaves no database. */
static void t_not_a_trace(const void *p, size_t n, int want)
{
	struct tdb t;

	tdb_ingest_bytes(&t, p, n);
	assert_int_equal(t.rc, want);
	assert_null(t.db);
	assert_true(strlen(t.res.error) > 10);
	assert_int_not_equal(access(t.path, F_OK), 0);
	tdb_close(&t);
}

static void test_damage_not_a_trace(void **state)
{
	static const char text[] = "this is not a trace, just some text\n";
	static const uint8_t zeros[64];
	uint8_t junk[256];
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	t_not_a_trace(text, sizeof(text) - 1, INGEST_ENOTTRACE);
	t_not_a_trace(zeros, sizeof(zeros), INGEST_ENOTTRACE);
	t_not_a_trace(junk, sizeof(junk), INGEST_ENOTTRACE);
	t_not_a_trace("\x10\x00\x04", 3, INGEST_ENOTTRACE);
	t_not_a_trace("", 0, INGEST_EEMPTY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_damage_unresolved),
		cmocka_unit_test(test_damage_unknown_types),
		cmocka_unit_test(test_damage_zero_size),
		cmocka_unit_test(test_damage_cut_short),
		cmocka_unit_test(test_damage_not_a_trace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
