/*
 * Unit tests for the ingest pipeline as a whole: archives written bit for bit
 * with the test writer go through ingest_file(), and the database is read
 * back with SQL. Each test holds the pipeline to one rule of the "Meaning"
 * section of docs/API.md (rules 1-10), with exact expected values; the
 * cluster-order invariants of schema/trace.sql are checked after every
 * ingest that makes slices, and on archives from the generator
 * (tests/gen_fxt.c, included so that it runs in memory).
 */
/* testutil.h's snprintf of t->path can in principle truncate (64-byte
 * buffers); GCC's -Wformat-truncation rejects it at -O2. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include "testutil.h"
#pragma GCC diagnostic pop

#include <math.h>

/* The generator's main() is renamed so that its static helpers can be used. */
int gen_fxt_main(int argc, char **argv);
#define main gen_fxt_main
#include "gen_fxt.c"
#undef main

#define C FXTW_INL("c")

/* A fresh writer with the magic record and provider 1 "test". */
static void t_open(struct fxtw *w)
{
	fxtw_init(w, 0);
	fxtw_magic(w);
	fxtw_provider_info(w, 1, "test");
}

/* Ingests w (then freed) and requires success. */
static void t_ingest(struct tdb *t, struct fxtw *w)
{
	tdb_ingest(t, w);
	fxtw_fini(w);
	if (t->rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", t->rc, t->res.error);
}

/* Every slice as "name|ts|dur|depth|parent name|pid|tid" (pid only for
 * tracks without a thread), in (ts, id) order. */
#define SLICES_SQL                                                                                                     \
	"SELECT v.name, v.ts, v.dur, v.depth, ifnull(p.name, '-'), ifnull(th.pid, tr.pid), ifnull(th.tid, '-') "       \
	"FROM slice_view v JOIN tracks tr ON tr.id = v.track_id LEFT JOIN threads th ON th.id = tr.thread_id "        \
	"LEFT JOIN slice_view p ON p.id = v.parent_id "

static char *t_slices(struct tdb *t)
{
	return tdb_rows(t, SLICES_SQL "ORDER BY v.ts, v.id");
}

/* The args of the arg set as "key=value,..." in seq order; "" when none. */
static char *t_args_of_set(struct tdb *t, const char *set_sql)
{
	return tdb_rows(t,
			"SELECT ifnull(group_concat(kv, ','), '') FROM (SELECT key || '=' || ifnull(value, 'null') AS kv "
			"FROM arg_view WHERE arg_set_id = (%s) ORDER BY seq)",
			set_sql);
}

/* The args of the one slice named name. */
static char *t_args(struct tdb *t, const char *name)
{
	char sql[256];

	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slice_view WHERE name = '%s'", name), 1);
	snprintf(sql, sizeof(sql), "SELECT arg_set_id FROM slice_view WHERE name = '%s'", name);
	return t_args_of_set(t, sql);
}

/*
 * The layout invariants of schema/trace.sql and of Meaning 4-5: slices are
 * ids 1..n in (track, depth, ts) order; track_depths ranges cover them
 * exactly, with max_dur at least every dur (an unterminated slice counting
 * up to the trace end); no two slices of one (track, depth) overlap (an
 * instant must not fall inside another slice of its depth); a parent is one
 * level up on the same track; tracks.max_depth is the deepest depth; counter
 * and cpu tracks' first_row..last_row cover exactly their rows, in ts order.
 */
static void t_check_layout(struct tdb *t)
{
	int64_t n = tdb_int(t, "SELECT count(*) FROM slices");

	assert_int_equal(tdb_int(t, "SELECT ifnull(max(id), 0) FROM slices"), n);
	assert_int_equal(tdb_int(t, "SELECT ifnull(sum(count), 0) FROM track_depths"), n);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM track_depths d WHERE d.last_id - d.first_id + 1 != d.count "
				    "OR d.count != (SELECT count(*) FROM slices s WHERE s.id BETWEEN d.first_id AND "
				    "d.last_id AND s.track_id = d.track_id AND s.depth = d.depth)"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices s WHERE (SELECT count(*) FROM track_depths d "
				    "WHERE s.id BETWEEN d.first_id AND d.last_id) != 1"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices a JOIN slices b ON b.id = a.id + 1 "
				    "AND b.track_id = a.track_id AND b.depth = a.depth WHERE b.ts < a.ts"),
			 0);
	/* sorted by start, no overlap anywhere iff none between neighbours */
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices a JOIN slices b ON b.id = a.id + 1 "
				    "AND b.track_id = a.track_id AND b.depth = a.depth "
				    "WHERE a.dur < 0 OR b.ts < a.ts + a.dur"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices s JOIN track_depths d ON d.track_id = s.track_id "
				    "AND d.depth = s.depth WHERE d.max_dur < CASE WHEN s.dur < 0 THEN "
				    "(SELECT value FROM meta WHERE key = 'end_ns') - s.ts ELSE s.dur END"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices s JOIN slices p ON p.id = s.parent_id "
				    "WHERE p.track_id != s.track_id OR p.depth != s.depth - 1 OR p.ts > s.ts"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM slices WHERE parent_id IS NULL AND depth > 0 AND "
				    "track_id IN (SELECT id FROM tracks WHERE kind = 'thread')"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM tracks tr WHERE tr.max_depth != "
				    "(SELECT ifnull(max(depth), 0) FROM slices s WHERE s.track_id = tr.id)"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM tracks tr WHERE tr.kind = 'counter' AND "
				    "(tr.last_row - tr.first_row + 1 != (SELECT count(*) FROM counters c WHERE "
				    "c.track_id = tr.id) OR (SELECT count(*) FROM counters c WHERE c.id BETWEEN "
				    "tr.first_row AND tr.last_row AND c.track_id = tr.id) != tr.last_row - tr.first_row + 1)"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM counters a JOIN counters b ON b.id = a.id + 1 "
				    "AND b.track_id = a.track_id WHERE b.ts < a.ts"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM tracks tr WHERE tr.kind = 'cpu' AND "
				    "(tr.last_row - tr.first_row + 1 != (SELECT count(*) FROM sched x WHERE x.cpu = tr.cpu) "
				    "OR (SELECT count(*) FROM sched x WHERE x.id BETWEEN tr.first_row AND tr.last_row "
				    "AND x.cpu = tr.cpu) != tr.last_row - tr.first_row + 1)"),
			 0);
	assert_int_equal(tdb_int(t, "SELECT count(*) FROM sched a JOIN sched b ON b.id = a.id + 1 "
				    "WHERE b.cpu < a.cpu OR (b.cpu = a.cpu AND b.ts < a.ts)"),
			 0);
}

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
	assert_string_equal(tdb_rows(&t, "SELECT cpu, first_row, last_row FROM tracks WHERE kind = 'cpu' "
					 "ORDER BY cpu"),
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
	assert_string_equal(tdb_rows(&t, "SELECT cpu, first_row, last_row FROM tracks WHERE kind = 'cpu'"), "2|1|5");
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

/* ---- cluster order on generated traces ------------------------------------- */

static void t_generated(uint64_t events, uint64_t threads, uint64_t seed, uint64_t tps)
{
	struct opts o = { events, threads, seed, tps, 0, NULL };
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
		cmocka_unit_test(test_providers_collide),
		cmocka_unit_test(test_provider_info_clears),
		cmocka_unit_test(test_provider_unknown_section),
		cmocka_unit_test(test_provider_ticks),
		cmocka_unit_test(test_provider_redefine),
		cmocka_unit_test(test_kernel_object_names),
		cmocka_unit_test(test_order_late_root),
		cmocka_unit_test(test_order_stable),
		cmocka_unit_test(test_order_many),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_durations_end_under_complete),
		cmocka_unit_test(test_durations_complete_same_start),
		cmocka_unit_test(test_unterminated_to_trace_end),
		cmocka_unit_test(test_async),
		cmocka_unit_test(test_async_lanes),
		cmocka_unit_test(test_flows),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_sched),
		cmocka_unit_test(test_sched_legacy),
		cmocka_unit_test(test_other_records),
		cmocka_unit_test(test_damage_unresolved),
		cmocka_unit_test(test_damage_unknown_types),
		cmocka_unit_test(test_damage_zero_size),
		cmocka_unit_test(test_damage_cut_short),
		cmocka_unit_test(test_damage_not_a_trace),
		cmocka_unit_test(test_generated_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
