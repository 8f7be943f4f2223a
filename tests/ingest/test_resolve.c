/*
 * Unit tests for the build stage's resolution (ingest/resolve.c), through
 * ingest_file(): string and thread references resolve per provider
 * (docs/API.md, Meaning 1) and threads and processes get their names from
 * kernel objects (Meaning 2).
 */
#include "../ingest_util.h"

/* ---- 1. Providers ------------------------------------------------------ */

/* Two providers with colliding string and thread indexes: each reference
 * resolves against the provider whose section it is in. */
static void test_providers_collide(void **state)
{
	struct fxtw w;
	struct tdb t;
	int i;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "A");
	fxtw_string(&w, 1, "alpha");
	fxtw_thread(&w, 1, 10, 11);
	fxtw_provider_info(&w, 2, "B");
	fxtw_string(&w, 1, "beta");
	fxtw_thread(&w, 1, 20, 21);
	for (i = 0; i < 4; i++) {
		fxtw_provider_section(&w, i % 2 ? 2 : 1);
		fxtw_instant(&w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(1), 100 * (uint64_t)(i + 1), NULL, 0);
	}
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT v.name, v.category, v.ts, th.pid, th.tid FROM slice_view v JOIN tracks tr ON "
					 "tr.id = v.track_id JOIN threads th ON th.id = tr.thread_id ORDER BY ts"),
			    "alpha|alpha|100|10|11\nbeta|beta|200|20|21\nalpha|alpha|300|10|11\nbeta|beta|400|20|21");
	assert_string_equal(tdb_rows(&t, "SELECT * FROM providers ORDER BY id"),
			    "1|A|1000000000|0\n2|B|1000000000|0");
	assert_int_equal(tdb_diag(&t, "unresolved_string_refs"), 0);
	assert_int_equal(tdb_diag(&t, "unresolved_thread_refs"), 0);
	assert_int_equal(t.res.nproviders, 2);
	t_check_layout(&t);
	tdb_close(&t);
}

/* A provider-info record for a known provider registers it anew: its string
 * and thread tables are empty (and it has no initialization record yet). */
static void test_provider_info_clears(void **state)
{
	struct fxtw w;
	struct tdb t;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "A");
	fxtw_init_record(&w, 1000);
	fxtw_string(&w, 1, "alpha");
	fxtw_thread(&w, 1, 10, 11);
	fxtw_instant(&w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(1), 5, NULL, 0);
	fxtw_provider_info(&w, 1, "A2");
	fxtw_instant(&w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(1), 7000000, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(t_slices(&t), "alpha|5000000|0|0|-|10|11\n<unknown string 1>|7000000|0|0|-|0|0");
	assert_string_equal(tdb_rows(&t, "SELECT category FROM slice_view ORDER BY ts"),
			    "alpha\n<unknown string 1>");
	assert_int_equal(tdb_diag(&t, "unresolved_string_refs"), 2);
	assert_int_equal(tdb_diag(&t, "unresolved_thread_refs"), 1);
	assert_string_equal(tdb_rows(&t, "SELECT * FROM providers"), "1|A2|1000000000|0");
	tdb_close(&t);
}

/* A section naming a provider never described registers an empty one. */
static void test_provider_unknown_section(void **state)
{
	struct fxtw w;
	struct tdb t;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "A");
	fxtw_string(&w, 1, "alpha");
	fxtw_thread(&w, 1, 10, 11);
	fxtw_provider_section(&w, 7);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_IDX(1), 10, NULL, 0);
	fxtw_string(&w, 1, "seven");
	fxtw_thread(&w, 1, 70, 71);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_IDX(1), 20, NULL, 0);
	fxtw_provider_section(&w, 1);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_IDX(1), 30, NULL, 0);
	fxtw_provider_section(&w, 7);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_IDX(1), 40, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(t_slices(&t), "<unknown string 1>|10|0|0|-|0|0\nseven|20|0|0|-|70|71\n"
					  "alpha|30|0|0|-|10|11\nseven|40|0|0|-|70|71");
	assert_string_equal(tdb_rows(&t, "SELECT * FROM providers ORDER BY id"),
			    "1|A|1000000000|0\n7||1000000000|0");
	assert_int_equal(tdb_diag(&t, "unresolved_string_refs"), 1);
	assert_int_equal(tdb_diag(&t, "unresolved_thread_refs"), 1);
	tdb_close(&t);
}

/* Ticks per second belong to the provider: ns = ticks * 1e9 / tps,
 * truncated and exact even where ticks * 1e9 needs more than 64 bits. */
static void test_provider_ticks(void **state)
{
	struct fxtw w;
	struct tdb t;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "A");
	fxtw_init_record(&w, 1000000000);
	fxtw_thread(&w, 1, 1, 1);
	fxtw_provider_info(&w, 2, "B");
	fxtw_init_record(&w, 24000000);
	fxtw_thread(&w, 1, 2, 2);
	fxtw_provider_section(&w, 1);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_INL("a1"), 123456789, NULL, 0);
	fxtw_provider_section(&w, 2);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_INL("b1"), 1000, NULL, 0);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_INL("b2"), UINT64_C(24000000000001), NULL, 0);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_INL("b3"), UINT64_C(221360928884514619), NULL, 0);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_INL("b5"), 7, NULL, 0);
	fxtw_provider_section(&w, 1);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_INL("a2"), 2000, NULL, 0);
	fxtw_provider_section(&w, 2);
	fxtw_complete(&w, FXTW_TIDX(1), C, FXTW_INL("b4"), 24, 48, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT name, ts, dur FROM slice_view ORDER BY name"),
			    "a1|123456789|0\na2|2000|0\nb1|41666|0\nb2|1000000000000041|0\n"
			    "b3|9223372036854775791|0\nb4|1000|1000\nb5|291|0");
	assert_string_equal(tdb_rows(&t, "SELECT id, ticks_per_second FROM providers ORDER BY id"),
			    "1|1000000000\n2|24000000");
	assert_int_equal(tdb_diag(&t, "timestamp_overflows"), 0);
	assert_int_equal(t.res.start_ns, 291);
	assert_int_equal(t.res.end_ns, INT64_C(9223372036854775791));
	tdb_close(&t);
}

/* A string or thread index redefined mid-stream: each event uses the
 * definition current at its position in the file, not at its time. */
static void test_provider_redefine(void **state)
{
	struct fxtw_arg arg = fxtw_arg_i32(FXTW_IDX(2), 1);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_string(&w, 1, "first");
	fxtw_string(&w, 2, "key1");
	fxtw_thread(&w, 1, 1, 2);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_IDX(1), 10, &arg, 1);
	fxtw_string(&w, 1, "second");
	fxtw_string(&w, 2, "key2");
	fxtw_thread(&w, 1, 3, 4);
	fxtw_instant(&w, FXTW_TIDX(1), C, FXTW_IDX(1), 5, &arg, 1);
	t_ingest(&t, &w);
	assert_string_equal(t_slices(&t), "second|5|0|0|-|3|4\nfirst|10|0|0|-|1|2");
	assert_string_equal(t_args(&t, "first"), "key1=1");
	assert_string_equal(t_args(&t, "second"), "key2=1");
	tdb_close(&t);
}

/* ---- 2. Names ----------------------------------------------------------- */

static void test_kernel_object_names(void **state)
{
	struct fxtw_arg p100 = fxtw_arg_koid(FXTW_INL("process"), 100);
	struct fxtw_arg p200 = fxtw_arg_koid(FXTW_INL("process"), 200);
	struct fxtw_arg p300 = fxtw_arg_koid(FXTW_INL("process"), 300);
	struct fxtw_arg w5 = fxtw_arg_i32(FXTW_INL("incoming_weight"), 5);
	struct fxtw_arg size = fxtw_arg_u64(FXTW_INL("size"), 4096);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_kernel_object(&w, 1, FXTW_INL("proc-old"), 100, NULL, 0);
	fxtw_kernel_object(&w, 2, FXTW_INL("thr-old"), 101, &p100, 1);
	fxtw_instant(&w, FXTW_TINL(100, 101), C, FXTW_INL("ev"), 10, NULL, 0);
	fxtw_kernel_object(&w, 1, FXTW_INL("proc-new"), 100, NULL, 0);
	fxtw_kernel_object(&w, 2, FXTW_INL("thr-new"), 101, &p100, 1);
	/* threads known only by tid: the pid comes from the thread object */
	fxtw_context_switch(&w, 0, 0, 20, 0, 102, &w5, 1);
	fxtw_wakeup(&w, 1, 15, 102, NULL, 0);
	fxtw_kernel_object(&w, 2, FXTW_INL("worker-old"), 102, &p300, 1);
	fxtw_kernel_object(&w, 2, FXTW_INL("worker"), 102, &p200, 1);
	fxtw_kernel_object(&w, 1, FXTW_INL("other"), 200, NULL, 0);
	fxtw_kernel_object(&w, 5, FXTW_INL("vmo"), 500, &size, 1);
	/* no thread object: pid 0 */
	fxtw_wakeup(&w, 1, 16, 103, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT pid, tid, ifnull(name, 'NULL') FROM threads WHERE tid > 0 "
					 "ORDER BY tid"),
			    "100|101|thr-new\n200|102|worker\n0|103|NULL");
	assert_string_equal(tdb_rows(&t, "SELECT pid, ifnull(name, 'NULL') FROM processes WHERE pid > 0 "
					 "ORDER BY pid"),
			    "100|proc-new\n200|other");
	assert_string_equal(tdb_rows(&t, "SELECT koid, type, name, ifnull(process_koid, 'NULL') FROM "
					 "kernel_objects ORDER BY koid"),
			    "100|1|proc-new|NULL\n101|2|thr-new|100\n102|2|worker|200\n200|1|other|NULL\n500|5|vmo|NULL");
	assert_string_equal(t_args_of_set(&t, "SELECT arg_set_id FROM kernel_objects WHERE koid = 500"), "size=4096");
	assert_string_equal(t_args_of_set(&t, "SELECT arg_set_id FROM kernel_objects WHERE koid = 102"),
			    "process=200");
	assert_string_equal(tdb_rows(&t, "SELECT cpu, ts, dur, pid, tid, priority FROM sched"), "0|20|-1|200|102|5");
	assert_string_equal(t_slices(&t), "ev|10|0|0|-|100|101\nwakeup|15|0|0|-|200|102\nwakeup|16|0|0|-|0|103");
	t_check_layout(&t);
	tdb_close(&t);
}

/* A thread known by its koid alone (context switches, wakeups) takes the pid
 * the events' thread references give its tid when no kernel object gives
 * one, and none when the references give it two; a kernel object's comes
 * first. */
static void test_sched_pid_from_events(void **state)
{
	struct fxtw_arg p12 = fxtw_arg_koid(FXTW_INL("process"), 12);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_instant(&w, FXTW_TINL(5, 6), C, FXTW_INL("ev"), 10, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(7, 8), C, FXTW_INL("ev"), 11, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(9, 8), C, FXTW_INL("ev"), 12, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(11, 10), C, FXTW_INL("ev"), 13, NULL, 0);
	fxtw_kernel_object(&w, 2, FXTW_INL("t10"), 10, &p12, 1);
	fxtw_context_switch(&w, 0, 0, 20, 0, 6, NULL, 0);
	fxtw_context_switch(&w, 0, 0, 30, 6, 8, NULL, 0);
	fxtw_context_switch(&w, 0, 0, 40, 8, 10, NULL, 0);
	fxtw_wakeup(&w, 1, 25, 6, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT pid, tid FROM threads WHERE tid > 0 ORDER BY tid, pid"),
			    "5|6\n0|8\n7|8\n9|8\n11|10\n12|10");
	assert_string_equal(tdb_rows(&t, "SELECT cpu, ts, dur, pid, tid FROM sched ORDER BY ts"),
			    "0|20|10|5|6\n0|30|10|0|8\n0|40|-1|12|10");
	assert_string_equal(tdb_rows(&t, "SELECT th.pid FROM sched s JOIN threads th ON th.id = s.thread_id "
					 "ORDER BY s.ts"),
			    "5\n0\n12");
	assert_string_equal(t_slices(&t), "ev|10|0|0|-|5|6\nev|11|0|0|-|7|8\nev|12|0|0|-|9|8\nev|13|0|0|-|11|10\n"
					  "wakeup|25|0|0|-|5|6");
	t_check_layout(&t);
	tdb_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_providers_collide),
		cmocka_unit_test(test_provider_info_clears),
		cmocka_unit_test(test_provider_unknown_section),
		cmocka_unit_test(test_provider_ticks),
		cmocka_unit_test(test_provider_redefine),
		cmocka_unit_test(test_kernel_object_names),
		cmocka_unit_test(test_sched_pid_from_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
