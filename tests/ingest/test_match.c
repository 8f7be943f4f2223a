/*
 * Unit tests for the build stage's matching (ingest/match.c), through
 * ingest_file(): event order (docs/API.md, Meaning 3), durations (4), async
 * operations (5), flows (6) and counters (7), with exact expected values;
 * the cluster-order invariants of schema/trace.sql are checked after every
 * ingest that makes slices.
 */
#include "../ingest_util.h"

/* The sort of events is static: reached by including the file. */
#include "../../ingest/match.c"

/* ---- 3. Order ----------------------------------------------------------- */

/* The outermost begin at ts 0 is written at the very end of the file, after
 * its own end, as some real writers do. */
static void test_order_late_root(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 2);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_begin(&w, th, C, FXTW_INL("inner"), 10, NULL, 0);
	fxtw_end(&w, th, C, FXTW_INL("inner"), 20, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("i"), 30, NULL, 0);
	fxtw_end(&w, th, C, FXTW_INL("outer"), 100, NULL, 0);
	fxtw_begin(&w, th, C, FXTW_INL("outer"), 0, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(t_slices(&t), "outer|0|100|0|-|1|2\ninner|10|10|1|outer|1|2\ni|30|0|1|outer|1|2");
	assert_int_equal(tdb_diag(&t, "unmatched_ends"), 0);
	assert_int_equal(tdb_diag(&t, "unterminated_slices"), 0);
	t_check_layout(&t);
	tdb_close(&t);
}

/* Equal timestamps keep file order: instants, nested begins, counter points. */
static void test_order_stable(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 2), th2 = FXTW_TINL(1, 3);
	struct fxtw_arg v1 = fxtw_arg_i64(FXTW_INL("v"), 1), v2 = fxtw_arg_i64(FXTW_INL("v"), 2);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_instant(&w, th, C, FXTW_INL("a"), 50, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("x"), 40, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("b"), 50, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("c"), 50, NULL, 0);
	fxtw_begin(&w, th, C, FXTW_INL("A"), 60, NULL, 0);
	fxtw_begin(&w, th, C, FXTW_INL("B"), 60, NULL, 0);
	fxtw_end(&w, th, C, FXTW_EMPTY, 70, NULL, 0);
	fxtw_end(&w, th, C, FXTW_EMPTY, 80, NULL, 0);
	fxtw_begin(&w, th2, C, FXTW_INL("B2"), 60, NULL, 0);
	fxtw_begin(&w, th2, C, FXTW_INL("A2"), 60, NULL, 0);
	fxtw_end(&w, th2, C, FXTW_EMPTY, 70, NULL, 0);
	fxtw_end(&w, th2, C, FXTW_EMPTY, 80, NULL, 0);
	fxtw_counter(&w, th, C, FXTW_INL("ctr"), 90, 1, &v1, 1);
	fxtw_counter(&w, th, C, FXTW_INL("ctr"), 90, 1, &v2, 1);
	fxtw_instant(&w, th, C, FXTW_INL("early"), 1, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT group_concat(name) FROM (SELECT name FROM slice_view "
					 "WHERE ts = 50 ORDER BY id)"),
			    "a,b,c");
	assert_string_equal(tdb_rows(&t, "SELECT name, ts, dur, depth FROM slice_view WHERE ts = 60 ORDER BY name"),
			    "A|60|20|0\nA2|60|10|1\nB|60|10|1\nB2|60|20|0");
	assert_string_equal(tdb_rows(&t, "SELECT ts, value FROM counters ORDER BY id"), "90|1\n90|2");
	t_check_layout(&t);
	tdb_close(&t);
}

/* Many events out of order, with runs of equal timestamps: the result is
 * sorted by (ts, file position), both when most of the file is in order
 * (a late tail) and when it is not. */
static void t_order_many(const uint64_t *ts, unsigned n)
{
	struct fxtw_thr th = FXTW_TINL(1, 2);
	char name[16], *want = calloc(n, 16), *p = want;
	unsigned i, k, *idx = calloc(n, sizeof(unsigned));
	struct fxtw w;
	struct tdb t;

	assert_non_null(want);
	assert_non_null(idx);
	t_open(&w);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "e%u", i);
		fxtw_instant(&w, th, C, FXTW_INL(name), ts[i], NULL, 0);
		idx[i] = i;
	}
	/* insertion sort by (ts, position): stable by construction */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && ts[idx[k - 1]] > ts[idx[k]]; k--) {
			unsigned tmp = idx[k];

			idx[k] = idx[k - 1];
			idx[k - 1] = tmp;
		}
	for (i = 0; i < n; i++)
		p += sprintf(p, "%se%u", i ? "," : "", idx[i]);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT group_concat(name) FROM (SELECT name FROM slice_view ORDER BY id)"),
			    want);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view a JOIN slice_view b ON b.id = a.id + 1 "
				     "WHERE b.ts < a.ts"),
			 0);
	tdb_close(&t);
	free(want);
	free(idx);
}

static void test_order_many(void **state)
{
	uint64_t ts[300];
	unsigned i;

	(void)state;
	for (i = 0; i < 300; i++) /* mostly backwards, pairs of equal ts */
		ts[i] = (300 - i) / 2;
	t_order_many(ts, 300);
	for (i = 0; i < 280; i++) /* in order, then a late tail */
		ts[i] = i;
	for (i = 280; i < 300; i++)
		ts[i] = (i - 280) * 13;
	t_order_many(ts, 300);
}

/* ---- 4. Durations ------------------------------------------------------- */

static void test_durations(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 2), tu = FXTW_TINL(1, 3), tc = FXTW_TINL(1, 4);
	struct fxtw_arg a = fxtw_arg_i32(FXTW_INL("a"), 1), e = fxtw_arg_i32(FXTW_INL("e"), 2);
	struct fxtw_arg x[2] = { fxtw_arg_str(FXTW_INL("x"), FXTW_INL("y")), fxtw_arg_bool(FXTW_INL("ok"), 1) };
	struct fxtw_arg k = fxtw_arg_i32(FXTW_INL("k"), 3);
	uint64_t scope = 1;
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_begin(&w, th, C, FXTW_INL("A"), 0, &a, 1);
	fxtw_begin(&w, th, C, FXTW_INL("B"), 10, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("I"), 15, NULL, 0);
	fxtw_end(&w, th, C, FXTW_INL("B"), 20, &e, 1);
	fxtw_end(&w, th, C, FXTW_INL("zzz"), 30, x, 2); /* closes A whatever its name */
	fxtw_end(&w, th, C, FXTW_INL("A"), 40, NULL, 0); /* nothing open */
	fxtw_begin(&w, tu, C, FXTW_INL("U"), 50, NULL, 0);
	fxtw_complete(&w, tc, C, FXTW_INL("D"), 60, 90, NULL, 0);
	fxtw_complete(&w, tc, C, FXTW_INL("E"), 65, 70, NULL, 0);
	fxtw_begin(&w, tc, C, FXTW_INL("F"), 70, NULL, 0);
	fxtw_end(&w, tc, C, FXTW_INL("F"), 80, NULL, 0);
	fxtw_instant(&w, tc, C, FXTW_INL("J"), 95, NULL, 0);
	fxtw_complete(&w, tc, C, FXTW_INL("N"), 100, 90, NULL, 0); /* negative */
	fxtw_event(&w, 0, tc, C, FXTW_INL("K"), 100, &k, 1, &scope, 1); /* instant with a scope word */
	t_ingest(&t, &w);
	assert_string_equal(t_slices(&t), "A|0|30|0|-|1|2\n"
					  "B|10|10|1|A|1|2\n"
					  "I|15|0|2|B|1|2\n"
					  "U|50|-1|0|-|1|3\n"
					  "D|60|30|0|-|1|4\n"
					  "E|65|5|1|D|1|4\n"
					  "F|70|10|1|D|1|4\n"
					  "J|95|0|0|-|1|4\n"
					  "K|100|0|0|-|1|4");
	assert_string_equal(t_args(&t, "A"), "a=1,x=y,ok=1");
	assert_string_equal(t_args(&t, "B"), "e=2");
	assert_string_equal(t_args(&t, "K"), "k=3");
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name IN ('I', 'D', 'E', 'F', 'J', 'U') "
				     "AND arg_set_id IS NOT NULL"),
			 0);
	assert_int_equal(tdb_diag(&t, "unmatched_ends"), 1);
	assert_int_equal(tdb_diag(&t, "unterminated_slices"), 1);
	assert_int_equal(tdb_diag(&t, "negative_durations"), 1);
	assert_int_equal(tdb_diag(&t, "unknown_records"), 0);
	assert_int_equal(tdb_diag(&t, "malformed_records"), 0);
	/* the unterminated slice counts up to the trace end in max_dur */
	assert_int_equal(tdb_int(&t, "SELECT max_dur FROM track_depths d JOIN slice_view v ON v.track_id = d.track_id "
				     "AND v.depth = d.depth WHERE v.name = 'U'"),
			 50);
	assert_int_equal(tdb_int(&t, "SELECT max_dur FROM track_depths d JOIN slice_view v ON v.track_id = d.track_id "
				     "AND v.depth = d.depth WHERE v.name = 'E'"),
			 10);
	assert_int_equal(t.res.counts.slices, 9);
	t_check_layout(&t);
	tdb_close(&t);
}

/* An end skips complete events still open above the begin it closes; what
 * opens next nests in the complete event, one level below it. */
static void test_durations_end_under_complete(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 5);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_begin(&w, th, C, FXTW_INL("A"), 0, NULL, 0);
	fxtw_complete(&w, th, C, FXTW_INL("C"), 5, 20, NULL, 0);
	fxtw_end(&w, th, C, FXTW_EMPTY, 10, NULL, 0);
	fxtw_begin(&w, th, C, FXTW_INL("B"), 12, NULL, 0);
	fxtw_end(&w, th, C, FXTW_EMPTY, 15, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("I"), 16, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("J"), 25, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(t_slices(&t), "A|0|10|0|-|1|5\nC|5|15|1|A|1|5\nB|12|3|2|C|1|5\nI|16|0|2|C|1|5\n"
					  "J|25|0|0|-|1|5");
	assert_int_equal(tdb_diag(&t, "unmatched_ends"), 0);
	t_check_layout(&t);
	tdb_close(&t);
}

/* Writers that emit complete events when a scope exits write the inner one
 * first; when both start at the same time the later-ending one encloses. */
static void test_durations_complete_same_start(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 6), other = FXTW_TINL(1, 7);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_complete(&w, th, C, FXTW_INL("in"), 200, 250, NULL, 0);
	fxtw_begin(&w, other, C, FXTW_INL("o"), 200, NULL, 0);
	fxtw_complete(&w, th, C, FXTW_INL("mid"), 200, 280, NULL, 0);
	fxtw_complete(&w, other, C, FXTW_INL("o2"), 200, 400, NULL, 0);
	fxtw_complete(&w, th, C, FXTW_INL("out"), 200, 300, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("i"), 260, NULL, 0);
	fxtw_end(&w, other, C, FXTW_EMPTY, 300, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, SLICES_SQL "WHERE th.tid = 6 ORDER BY v.ts, v.depth"),
			    "out|200|100|0|-|1|6\nmid|200|80|1|out|1|6\nin|200|50|2|mid|1|6\ni|260|0|2|mid|1|6");
	/* events of another thread keep their places */
	assert_string_equal(tdb_rows(&t, SLICES_SQL "WHERE th.tid = 7 ORDER BY v.ts, v.depth"),
			    "o|200|100|0|-|1|7\no2|200|200|1|o|1|7");
	t_check_layout(&t);
	tdb_close(&t);
}

/*
 * A provider whose clock ticks faster than 1 GHz: events one tick apart
 * can fall in one nanosecond. A zone is written at its end, after what it
 * holds, yet what the program did first comes first (Meaning 3: a tie in
 * ns is broken by the sub-nanosecond remainder of the ticks): an instant,
 * a flow and a counter as a zone's first statement land inside it, one
 * tick after its last statement too, and a zone starting one tick after its
 * sibling ends is its sibling, not its child. At several tick rates.
 */
static long long tick_ns(uint64_t ticks, uint64_t tps)
{
	return (long long)((unsigned __int128)ticks * 1000000000u / tps);
}

static void test_order_ticks_within_ns(void **state)
{
	static const uint64_t rates[] = { 3000000000u, 2400000000u, 5000000000u, 100000000000u };
	struct fxtw_thr th = FXTW_TINL(1, 2);
	struct fxtw_arg v = fxtw_arg_i64(FXTW_INL("v"), 1);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		/* one second in; the zone 1 us long and a tick, so that its end
		 * shares its nanosecond with the tick before */
		uint64_t tps = rates[i], t0 = tps, tn = t0 + tps / 1000000 + 1;
		struct fxtw w;
		struct tdb t;
		char want[512];

		t_open(&w);
		fxtw_init_record(&w, tps);
		/* the first zone: its first statements are an instant, a flow
		 * begin and a counter, each a tick after the one before, and its
		 * last an instant one tick before its end */
		fxtw_instant(&w, th, C, FXTW_INL("first"), t0 + 1, NULL, 0);
		fxtw_flow(&w, 8, th, C, FXTW_INL("f"), t0 + 2, 7);
		fxtw_counter(&w, th, C, FXTW_INL("ctr"), t0 + 3, 1, &v, 1);
		fxtw_instant(&w, th, C, FXTW_INL("last"), tn - 1, NULL, 0);
		fxtw_complete(&w, th, C, FXTW_INL("zone"), t0, tn, NULL, 0);
		/* its sibling starts one tick after it ends; the flow ends in it */
		fxtw_flow(&w, 10, th, C, FXTW_INL("f"), tn + 2, 7);
		fxtw_complete(&w, th, C, FXTW_INL("next"), tn + 1, tn + 5, NULL, 0);
		t_ingest(&t, &w);
		assert_true(tick_ns(t0 + 1, tps) == tick_ns(t0, tps));
		assert_true(tick_ns(tn - 1, tps) == tick_ns(tn, tps));
		assert_true(tick_ns(tn + 1, tps) == tick_ns(tn, tps));
		snprintf(want, sizeof(want),
			 "first|%lld|0|1|zone|1|2\nlast|%lld|0|1|zone|1|2\nnext|%lld|%lld|0|-|1|2\nzone|%lld|%lld|0|-|1|2",
			 tick_ns(t0 + 1, tps), tick_ns(tn - 1, tps), tick_ns(tn + 1, tps),
			 tick_ns(tn + 5, tps) - tick_ns(tn + 1, tps), tick_ns(t0, tps), tick_ns(tn, tps) - tick_ns(t0, tps));
		assert_string_equal(tdb_rows(&t, SLICES_SQL "ORDER BY v.name"), want);
		assert_int_equal(tdb_diag(&t, "flow_no_enclosing_slice"), 0);
		assert_string_equal(tdb_rows(&t, "SELECT a.name, b.name FROM flows f JOIN slice_view a ON "
						 "a.id = f.from_slice_id JOIN slice_view b ON b.id = f.to_slice_id"),
				    "zone|next");
		assert_int_equal(t.res.counts.counters, 1);
		t_check_layout(&t);
		tdb_close(&t);
	}
}

/* An unterminated slice's max_dur reaches the trace end, which records
 * other than events (here a log record) may set. */
static void test_unterminated_to_trace_end(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 2);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_begin(&w, th, C, FXTW_INL("U"), 50, NULL, 0);
	fxtw_instant(&w, th, C, FXTW_INL("i"), 60, NULL, 0);
	fxtw_log(&w, th, 1000, "late");
	t_ingest(&t, &w);
	assert_int_equal(t.res.end_ns, 1000);
	assert_int_equal(tdb_int(&t, "SELECT value FROM meta WHERE key = 'end_ns'"), 1000);
	assert_string_equal(t_slices(&t), "U|50|-1|0|-|1|2\ni|60|0|1|U|1|2");
	assert_int_equal(tdb_int(&t, "SELECT max_dur FROM track_depths WHERE depth = 0"), 950);
	t_check_layout(&t);
	tdb_close(&t);
}

/* ---- 5. Async ----------------------------------------------------------- */

static void test_async(void **state)
{
	struct fxtw_thr t12 = FXTW_TINL(1, 2), t13 = FXTW_TINL(1, 3), t22 = FXTW_TINL(2, 2);
	struct fxtw_arg a = fxtw_arg_i32(FXTW_INL("a"), 1), s = fxtw_arg_i32(FXTW_INL("s"), 2);
	struct fxtw_arg b = fxtw_arg_i32(FXTW_INL("b"), 3);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_async(&w, 5, t12, C, FXTW_INL("load"), 10, 7, &a, 1);
	fxtw_async(&w, 5, t12, C, FXTW_INL("save"), 12, 7, NULL, 0);
	fxtw_async(&w, 7, t12, C, FXTW_INL("save"), 14, 7, NULL, 0);
	fxtw_async(&w, 5, t22, C, FXTW_INL("load"), 15, 7, NULL, 0);
	fxtw_async(&w, 6, t12, C, FXTW_INL("load"), 20, 7, &s, 1);
	fxtw_async(&w, 7, t22, C, FXTW_INL("load"), 25, 7, NULL, 0);
	fxtw_async(&w, 5, t13, C, FXTW_INL("load"), 30, 8, NULL, 0);
	fxtw_async(&w, 7, t13, C, FXTW_INL("load"), 50, 7, &b, 1); /* same pid, other thread */
	fxtw_async(&w, 7, t12, C, FXTW_INL("load"), 60, 8, NULL, 0);
	fxtw_async(&w, 5, t12, C, FXTW_INL("load"), 70, 9, NULL, 0); /* never ends */
	fxtw_async(&w, 5, t12, FXTW_INL("d"), FXTW_INL("load"), 80, 7, NULL, 0); /* other category */
	fxtw_async(&w, 7, t12, FXTW_INL("d"), FXTW_INL("load"), 90, 7, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT tr.kind, tr.pid, n.str, c.str, tr.thread_id IS NULL FROM tracks tr "
					 "JOIN strings n ON n.id = tr.name_id JOIN strings c ON c.id = tr.category_id "
					 "WHERE tr.kind = 'async' ORDER BY tr.pid, n.str, c.str"),
			    "async|1|load|c|1\nasync|1|load|d|1\nasync|1|save|c|1\nasync|2|load|c|1");
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices s JOIN tracks tr ON tr.id = s.track_id "
				     "WHERE tr.kind != 'async'"),
			 0);
	assert_string_equal(tdb_rows(&t, "SELECT tr.pid, v.name, v.category, v.ts, v.dur, v.depth, ifnull(p.ts, '-') "
					 "FROM slice_view v JOIN tracks tr ON tr.id = v.track_id LEFT JOIN slices p "
					 "ON p.id = v.parent_id ORDER BY tr.pid, v.name, v.category, v.ts, v.depth"),
			    "1|load|c|10|40|0|-\n1|load|c|20|0|1|10\n1|load|c|30|30|2|-\n1|load|c|70|-1|0|-\n"
			    "1|load|d|80|10|0|-\n"
			    "1|save|c|12|2|0|-\n"
			    "2|load|c|15|10|0|-");
	assert_string_equal(t_args_of_set(&t, "SELECT arg_set_id FROM slices WHERE ts = 10"), "a=1,b=3");
	assert_string_equal(t_args_of_set(&t, "SELECT arg_set_id FROM slices WHERE ts = 20"), "s=2");
	assert_int_equal(tdb_diag(&t, "unterminated_slices"), 1);
	assert_int_equal(tdb_diag(&t, "unmatched_ends"), 0);
	t_check_layout(&t);
	tdb_close(&t);
}

/* Overlapping operations on one track take lanes; an instant inside an
 * operation is drawn one lane deeper and nothing overlaps in a lane. */
static void test_async_lanes(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 2);
	struct fxtw w;
	struct tdb t;
	unsigned i;

	(void)state;
	t_open(&w);
	for (i = 0; i < 40; i++) {
		fxtw_async(&w, 5, th, C, FXTW_INL("op"), 10 * i, i, NULL, 0);
		if (i % 3 == 0)
			fxtw_async(&w, 6, th, C, FXTW_INL("op"), 10 * i + 5, i, NULL, 0);
	}
	for (i = 0; i < 40; i++)
		fxtw_async(&w, 7, th, C, FXTW_INL("op"), 10 * i + 25 + (i % 4) * 10, i, NULL, 0);
	t_ingest(&t, &w);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices"), 40 + 14);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices WHERE dur = 0 AND parent_id IS NULL"), 0);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices s JOIN slices p ON p.id = s.parent_id "
				     "WHERE s.dur != 0 OR s.ts < p.ts OR s.ts > p.ts + p.dur"),
			 0);
	/* the first operation, with an instant, on lanes 0 and 1; the next on 2 */
	assert_string_equal(tdb_rows(&t, "SELECT ts, dur, depth FROM slices WHERE ts < 20 ORDER BY ts"),
			    "0|25|0\n5|0|1\n10|35|2");
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM tracks WHERE kind = 'async'"), 1);
	t_check_layout(&t);
	tdb_close(&t);
}

/* ---- 6. Flows ----------------------------------------------------------- */

static void test_flows(void **state)
{
	struct fxtw_thr x = FXTW_TINL(1, 1), y = FXTW_TINL(1, 2);
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_begin(&w, x, C, FXTW_INL("S1"), 10, NULL, 0);
	fxtw_flow(&w, 8, x, C, FXTW_INL("f"), 15, 5);
	fxtw_flow(&w, 8, x, C, FXTW_INL("g"), 16, 5);
	fxtw_end(&w, x, C, FXTW_EMPTY, 20, NULL, 0);
	fxtw_begin(&w, y, C, FXTW_INL("S2"), 30, NULL, 0);
	fxtw_complete(&w, y, C, FXTW_INL("C2"), 32, 38, NULL, 0);
	fxtw_flow(&w, 9, y, C, FXTW_INL("f"), 35, 5); /* innermost: C2, not S2 */
	fxtw_end(&w, y, C, FXTW_EMPTY, 40, NULL, 0);
	fxtw_complete(&w, x, C, FXTW_INL("S3"), 50, 60, NULL, 0);
	fxtw_flow(&w, 10, x, C, FXTW_INL("f"), 55, 5);
	fxtw_flow(&w, 10, x, C, FXTW_INL("g"), 56, 5);
	fxtw_flow(&w, 9, x, C, FXTW_INL("f"), 70, 6); /* no slice open */
	fxtw_complete(&w, x, C, FXTW_INL("S4"), 80, 90, NULL, 0);
	fxtw_flow(&w, 8, x, C, FXTW_INL("h"), 90, 1); /* S4 has ended */
	fxtw_begin(&w, x, C, FXTW_INL("S5"), 100, NULL, 0);
	fxtw_flow(&w, 8, x, C, FXTW_INL("h"), 100, 2);
	fxtw_end(&w, x, C, FXTW_EMPTY, 110, NULL, 0);
	fxtw_begin(&w, y, C, FXTW_INL("S6"), 120, NULL, 0);
	fxtw_flow(&w, 10, y, C, FXTW_INL("h"), 120, 2);
	fxtw_end(&w, y, C, FXTW_EMPTY, 130, NULL, 0);
	t_ingest(&t, &w);
	assert_string_equal(tdb_rows(&t, "SELECT f.flow_id, c.str, n.str, a.name, b.name, f.from_ts, f.to_ts "
					 "FROM flows f JOIN strings c ON c.id = f.category_id JOIN strings n ON "
					 "n.id = f.name_id JOIN slice_view a ON a.id = f.from_slice_id JOIN slice_view b "
					 "ON b.id = f.to_slice_id ORDER BY f.id"),
			    "5|c|f|S1|C2|20|32\n5|c|f|C2|S3|38|50\n5|c|g|S1|S3|20|50\n2|c|h|S5|S6|110|120");
	assert_int_equal(tdb_diag(&t, "flow_no_enclosing_slice"), 2);
	assert_int_equal(t.res.counts.flows, 4);
	t_check_layout(&t);
	tdb_close(&t);
}

/* ---- 7. Counters -------------------------------------------------------- */

static void test_counters(void **state)
{
	struct fxtw_thr th = FXTW_TINL(1, 2), other = FXTW_TINL(2, 3);
	struct fxtw_arg a1[4] = { fxtw_arg_i64(FXTW_INL("used"), 100), fxtw_arg_double(FXTW_INL("free"), 1.5),
				  fxtw_arg_str(FXTW_INL("label"), FXTW_INL("x")), fxtw_arg_bool(FXTW_INL("ok"), 1) };
	struct fxtw_arg a2[2] = { fxtw_arg_i32(FXTW_INL("used"), -5), fxtw_arg_double(FXTW_INL("free"), 2.25) };
	struct fxtw_arg a3 = fxtw_arg_u32(FXTW_INL("used"), 7), a4 = fxtw_arg_u64(FXTW_INL("used"), 1);
	struct fxtw_arg a5 = fxtw_arg_i64(FXTW_INL("used"), INT64_C(9000000000)), a6 = fxtw_arg_i32(FXTW_INL("used"), 3);
	struct fxtw_arg a7 = fxtw_arg_null(FXTW_INL("nothing"));
	struct fxtw w;
	struct tdb t;

	(void)state;
	t_open(&w);
	fxtw_counter(&w, th, C, FXTW_INL("mem"), 10, 1, a1, 4);
	fxtw_counter(&w, th, C, FXTW_INL("mem"), 20, 1, a2, 2);
	fxtw_counter(&w, th, C, FXTW_INL("mem"), 15, 2, &a3, 1);
	fxtw_counter(&w, other, C, FXTW_INL("mem"), 12, 1, &a4, 1);
	fxtw_counter(&w, th, C, FXTW_INL("cpu"), 10, 1, &a6, 1);
	fxtw_counter(&w, th, C, FXTW_INL("mem"), 11, 1, &a7, 1);
	fxtw_counter(&w, th, C, FXTW_INL("mem"), 5, 1, &a5, 1); /* late in the file, earliest in time */
	t_ingest(&t, &w);
	assert_string_equal(
		tdb_rows(&t, "SELECT tr.pid, n.str, s.str, tr.counter_id, printf('%%.17g', tr.min_value), "
			     "printf('%%.17g', tr.max_value), (SELECT group_concat(p, ',') FROM (SELECT "
			     "c.ts || ':' || c.value || ':' || typeof(c.value) AS p FROM counters c WHERE "
			     "c.track_id = tr.id ORDER BY c.id)) FROM tracks tr JOIN strings n ON n.id = tr.name_id "
			     "JOIN strings s ON s.id = tr.series_id WHERE tr.kind = 'counter' "
			     "ORDER BY tr.pid, n.str, s.str, tr.counter_id"),
		"1|cpu|used|1|3|3|10:3:integer\n"
		"1|mem|free|1|1.5|2.25|10:1.5:real,20:2.25:real\n"
		"1|mem|used|1|-5|9000000000|5:9000000000:integer,10:100:integer,20:-5:integer\n"
		"1|mem|used|2|7|7|15:7:integer\n"
		"2|mem|used|1|1|1|12:1:integer");
	assert_int_equal(tdb_diag(&t, "non_numeric_counter_args"), 3);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM counters"), 8);
	assert_int_equal(t.res.counts.counters, 8);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices"), 0);
	t_check_layout(&t);
	tdb_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_late_root),
		cmocka_unit_test(test_order_stable),
		cmocka_unit_test(test_order_many),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_durations_end_under_complete),
		cmocka_unit_test(test_durations_complete_same_start),
		cmocka_unit_test(test_order_ticks_within_ns),
		cmocka_unit_test(test_unterminated_to_trace_end),
		cmocka_unit_test(test_async),
		cmocka_unit_test(test_async_lanes),
		cmocka_unit_test(test_flows),
		cmocka_unit_test(test_counters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
