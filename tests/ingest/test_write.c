/*
 * Unit tests for the build stage's writing (ingest/write.c), through
 * ingest_file(): scheduling rows (docs/API.md, Meaning 8), logs, blobs,
 * objects and profiler records (9), and the cluster order of
 * schema/trace.sql on archives from the generator (tests/gen_fxt.c,
 * included so that it runs in memory).
 */
#include "../ingest_util.h"

#include <math.h>

/* The generator's main() is renamed so that its static helpers can be used. */
int gen_fxt_main(int argc, char **argv);
#define main gen_fxt_main
#include "../gen_fxt.c"
#undef main

/* ---- 8. Scheduling ------------------------------------------------------ */

static void test_sched(void **state)
{
	struct fxtw_arg p10 = fxtw_arg_koid(FXTW_INL("process"), 10);
	struct fxtw_arg p20 = fxtw_arg_koid(FXTW_INL("process"), 20);
	struct fxtw_arg w3 = fxtw_arg_i32(FXTW_INL("incoming_weight"), 3);
	struct fxtw_arg w4 = fxtw_arg_i32(FXTW_INL("incoming_weight"), 4);
	struct fxtw_arg w6 = fxtw_arg_i32(FXTW_INL("incoming_weight"), 6);
	struct fxtw_arg idle = fxtw_arg_i32(FXTW_INL("incoming_weight"), INT32_MIN);
	struct fxtw_arg extra = fxtw_arg_i32(FXTW_INL("extra"), 1);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_kernel_object(&w, 2, FXTW_INL("t101"), 101, &p10, 1);
	fxtw_kernel_object(&w, 2, FXTW_INL("t102"), 102, &p10, 1);
	fxtw_kernel_object(&w, 2, FXTW_INL("t103"), 103, &p20, 1);
	fxtw_kernel_object(&w, 2, FXTW_INL("t104"), 104, &p20, 1);
	fxtw_context_switch(&w, 1, 0, 15, 0, 103, NULL, 0);
	fxtw_context_switch(&w, 0, 0, 10, 0, 101, &w3, 1);
	fxtw_context_switch(&w, 0, 2, 20, 101, 102, &w4, 1);
	fxtw_context_switch(&w, 1, 5, 25, 103, 104, &w6, 1);
	fxtw_context_switch(&w, 0, 0, 40, 0, 101, &w3, 1);
	fxtw_context_switch(&w, 0, 3, 30, 102, 0, &idle, 1); /* to the idle thread */
	fxtw_wakeup(&w, 2, 12, 102, &extra, 1);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT cpu, ts, dur, pid, tid, priority, ifnull(end_state, 'NULL') "
					 "FROM sched ORDER BY id"),
			    "0|10|10|10|101|3|suspended\n"
			    "0|20|10|10|102|4|blocked\n"
			    "0|40|-1|10|101|3|NULL\n"
			    "1|15|10|20|103|0|dead\n"
			    "1|25|-1|20|104|6|NULL");
	assert_string_equal(tdb_rows(&t, "SELECT sc.tid, th.pid, th.tid FROM sched sc JOIN threads th ON "
					 "th.id = sc.thread_id ORDER BY sc.id"),
			    "101|10|101\n102|10|102\n101|10|101\n103|20|103\n104|20|104");
	assert_string_equal(tdb_rows(&t, "SELECT k.cpu, x.first_id, x.first_id + x.count - 1 FROM tracks k "
					 "JOIN extents x ON x.track_id = k.id WHERE k.kind = 'cpu' ORDER BY cpu"),
			    "0|1|3\n1|4|5");
	assert_string_equal(t_slices(&t), "wakeup|12|0|0|-|10|102");
	assert_string_equal(tdb_rows(&t, "SELECT category FROM slice_view"), "sched");
	assert_string_equal(tdb_rows(&t, "SELECT type, value FROM arg_view WHERE key = 'cpu'"), "2|2");
	assert_string_equal(tdb_rows(&t, "SELECT value FROM arg_view WHERE key = 'extra'"), "1");
	assert_int_equal(t.res.counts.sched, 5);
	t_check_layout(&t);
	tdb_close(&t);
}

/* Legacy context switches: the idle thread is pid 0 with priority 0 (either
 * alone is an ordinary thread). */
static void test_sched_legacy(void **state)
{
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_legacy_switch(&w, 2, 0, FXTW_TINL(0, 0), FXTW_TINL(5, 51), 0, 20, 100);
	fxtw_legacy_switch(&w, 2, 4, FXTW_TINL(5, 51), FXTW_TINL(0, 0), 20, 0, 110);
	fxtw_legacy_switch(&w, 2, 0, FXTW_TINL(0, 0), FXTW_TINL(5, 52), 0, 10, 120);
	fxtw_legacy_switch(&w, 2, 1, FXTW_TINL(5, 52), FXTW_TINL(0, 7), 10, 9, 130);
	fxtw_legacy_switch(&w, 2, 0, FXTW_TINL(0, 7), FXTW_TINL(6, 61), 9, 0, 140);
	fxtw_legacy_switch(&w, 2, 2, FXTW_TINL(6, 61), FXTW_TINL(6, 62), 0, 1, 150);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT cpu, ts, dur, pid, tid, priority, ifnull(end_state, 'NULL') "
					 "FROM sched ORDER BY id"),
			    "2|100|10|5|51|20|dying\n"
			    "2|120|10|5|52|10|running\n"
			    "2|130|10|0|7|9|new\n"
			    "2|140|10|6|61|0|suspended\n"
			    "2|150|-1|6|62|1|NULL");
	assert_string_equal(tdb_rows(&t, "SELECT k.cpu, x.first_id, x.first_id + x.count - 1 FROM tracks k "
					 "JOIN extents x ON x.track_id = k.id WHERE k.kind = 'cpu'"),
			    "2|1|5");
	t_check_layout(&t);
	tdb_close(&t);
}

/* ---- 9. Logs, blobs, objects, profiler, overflows ------------------------ */

static void test_other_records(void **state)
{
	static const uint8_t small[5] = { 1, 2, 0, 3, 0xff };
	static const uint8_t large[13] = { 'l', 'a', 'r', 'g', 'e', 0, 'b', 'l', 'o', 'b', 0xfe, 1, 2 };
	static const uint8_t raw[9] = { 0, 0, 9, 8, 7, 0, 0, 0, 0xaa };
	uint8_t build_id[20];
	const uint64_t frames[3] = { 0x1111, UINT64_MAX, 0x2222 };
	struct fxtw_arg k = fxtw_arg_i32(FXTW_INL("k"), 1);
	struct fxtw_arg kind = fxtw_arg_str(FXTW_INL("kind"), FXTW_INL("widget"));
	struct fxtw_arg size = fxtw_arg_u64(FXTW_INL("size"), 4096);
	struct fxtw w;
	struct tdb t;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(build_id); i++)
		build_id[i] = (uint8_t)i;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "A");
	fxtw_thread(&w, 1, 1, 2);
	fxtw_log(&w, FXTW_TIDX(1), 30, "hello");
	fxtw_log(&w, FXTW_TINL(1, 3), 10, "first");
	fxtw_blob(&w, FXTW_INL("b1"), 1, small, sizeof(small));
	fxtw_large_blob_meta(&w, FXTW_INL("cat"), FXTW_INL("lb"), FXTW_TIDX(1), 40, &k, 1, large, sizeof(large));
	fxtw_large_blob(&w, FXTW_INL("cat"), FXTW_INL("raw"), raw, sizeof(raw));
	fxtw_userspace_object(&w, FXTW_TINL(7, 0), FXTW_INL("obj"), UINT64_C(0xffff800000001000), &kind, 1);
	fxtw_userspace_object(&w, FXTW_TIDX(1), FXTW_INL("obj2"), 0x10, NULL, 0);
	fxtw_kernel_object(&w, 5, FXTW_INL("vmo"), 500, &size, 1);
	fxtw_prof_module(&w, FXTW_TIDX(1), 3, 50, "libfoo.so", build_id, sizeof(build_id));
	fxtw_prof_mmap(&w, FXTW_TIDX(1), 3, 5, 51, 0x1000, 0x2000, UINT64_C(0xffffffff80000000));
	fxtw_prof_backtrace(&w, FXTW_TIDX(1), 52, frames, 3);
	fxtw_provider_event(&w, 1, 0);
	fxtw_provider_info(&w, 2, "B");
	fxtw_provider_event(&w, 2, 0);
	fxtw_provider_event(&w, 1, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT l.ts, l.pid, l.tid, s.str, th.pid || '/' || th.tid FROM logs l "
					 "JOIN strings s ON s.id = l.message_id JOIN threads th ON th.id = l.thread_id "
					 "ORDER BY l.id"),
			    "10|1|3|first|1/3\n30|1|2|hello|1/2");
	assert_string_equal(tdb_rows(&t, "SELECT b.kind, ifnull(b.blob_type, '-'), ifnull(b.ts, '-'), "
					 "ifnull(th.pid || '/' || th.tid, '-'), ifnull(c.str, '-'), n.str, b.size, "
					 "hex(b.data) FROM blobs b LEFT JOIN threads th ON th.id = b.thread_id LEFT JOIN "
					 "strings c ON c.id = b.category_id JOIN strings n ON n.id = b.name_id ORDER BY b.id"),
			    "blob|1|-|-|-|b1|5|01020003FF\n"
			    "large_blob|-|40|1/2|cat|lb|13|6C6172676500626C6F62FE0102\n"
			    "large_blob_data|-|-|-|cat|raw|9|0000090807000000AA");
	assert_string_equal(t_args_of_set(&t, "SELECT arg_set_id FROM blobs WHERE kind = 'large_blob'"), "k=1");
	assert_string_equal(tdb_rows(&t, "SELECT pid, pointer, name FROM userspace_objects ORDER BY id"),
			    "7|-140737488351232|obj\n1|16|obj2");
	assert_string_equal(t_args_of_set(&t, "SELECT arg_set_id FROM userspace_objects WHERE name = 'obj'"),
			    "kind=widget");
	assert_string_equal(tdb_rows(&t, "SELECT koid, type, name FROM kernel_objects"), "500|5|vmo");
	assert_string_equal(t_args_of_set(&t, "SELECT arg_set_id FROM kernel_objects"), "size=4096");
	assert_string_equal(tdb_rows(&t, "SELECT p.kind, p.ts, th.pid || '/' || th.tid, ifnull(module_id, '-'), "
					 "ifnull(p.name, '-'), CASE WHEN build_id IS NULL THEN '-' ELSE hex(build_id) END, ifnull(flags, '-'), "
					 "ifnull(start_address, '-'), ifnull(address_range, '-'), ifnull(vaddr, '-'), "
					 "CASE WHEN frames IS NULL THEN '-' ELSE hex(frames) END FROM profiler p JOIN threads th ON th.id = p.thread_id "
					 "ORDER BY p.id"),
			    "module|50|1/2|3|libfoo.so|000102030405060708090A0B0C0D0E0F10111213|-|-|-|-|-\n"
			    "mmap|51|1/2|3|-|-|5|4096|8192|-2147483648|-\n"
			    "backtrace|52|1/2|-|-|-|-|-|-|-|1111000000000000FFFFFFFFFFFFFFFF2222000000000000");
	assert_string_equal(tdb_rows(&t, "SELECT * FROM providers ORDER BY id"), "1|A|1000000000|2\n2|B|1000000000|1");
	assert_int_equal(tdb_diag(&t, "buffer_overflows"), 3);
	assert_int_equal(t.res.counts.logs, 2);
	assert_int_equal(t.res.counts.blobs, 3);
	assert_int_equal(t.res.counts.profiler, 3);
	assert_int_equal(t.res.counts.objects, 3);
	assert_int_equal(tdb_diag(&t, "unknown_records"), 0);
	assert_int_equal(tdb_diag(&t, "malformed_records"), 0);
	tdb_close(&t);
}

/* ---- cluster order on generated traces ------------------------------------- */

static void t_generated(uint64_t events, uint64_t threads, uint64_t seed, uint64_t tps)
{
	struct opts o = { events, threads, seed, tps, 0, 0, NULL, 0 };
	struct gen g;
	struct tdb t;

	gen_init(&g, &o);
	write_preamble(&g, o.tps);
	run(&g);
	tdb_ingest(&t, &g.w);
	gen_fini(&g);
	if (t.rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", t.rc, t.res.error);
	assert_true(tdb_int(&t, "SELECT count(*) FROM slices") > (int64_t)events / 4);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices"), (int64_t)t.res.counts.slices);
	t_check_layout(&t);
	/* well-nested input: each child lies inside its parent */
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices s JOIN slices p ON p.id = s.parent_id "
				     "WHERE p.dur >= 0 AND (s.dur < 0 OR s.ts + s.dur > p.ts + p.dur)"),
			 0);
	/* the root slices written last are the outermost ones */
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name = 'whole-run' AND depth = 0 "
				     "AND ts = 0 AND parent_id IS NULL"),
			 (int64_t)threads);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices s JOIN tracks tr ON tr.id = s.track_id "
				     "WHERE tr.kind = 'thread' AND s.depth = 0"),
			 (int64_t)threads);
	assert_int_equal(tdb_diag(&t, "unmatched_ends"), 0);
	assert_int_equal(tdb_diag(&t, "unterminated_slices"), 0);
	assert_int_equal(tdb_diag(&t, "unresolved_string_refs"), 0);
	assert_int_equal(tdb_diag(&t, "unresolved_thread_refs"), 0);
	assert_int_equal(tdb_diag(&t, "malformed_records"), 0);
	assert_int_equal(tdb_diag(&t, "unknown_records"), 0);
	assert_int_equal(tdb_diag(&t, "truncated_bytes"), 0);
	tdb_close(&t);
}

static void test_generated_layout(void **state)
{
	(void)state;
	t_generated(20000, 8, 1, 1000000000);
	t_generated(6000, 3, 7, 24000000);
	t_generated(4000, 300, 3, 1000000000); /* inline and shared thread refs */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sched),
		cmocka_unit_test(test_sched_legacy),
		cmocka_unit_test(test_other_records),
		cmocka_unit_test(test_generated_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
