/*
 * Unit tests of the stack statistics (ingest/stacks.c; schema/trace.sql,
 * track_names and track_stacks) on a trace written by the test writer,
 * every figure worked out by hand: nodes merged by name path in the order
 * a scan meets them, a name recurring one level under itself, children's
 * totals, an unterminated slice running to the trace's end, a zero-length
 * instant; the same with the events spilled and with ids reserved a row at
 * a time.
 *
 * Trace (ns), pid 1:
 *   tid 11: Outer [0, 1000) > K [100, 300) > C [150, 200); Outer > L [500, 700);
 *           Outer [1200, 1300) > K [1200, 1250); K [1400, 1600) > K [1450, 1500)
 *   tid 12: U begun at 800, never ended > instant End at 2000 (the trace's end)
 */
#include <inttypes.h>

#include "../../tracedb/tracedb.h"
#include "../ingest_util.h"

/* Every stored node as "tid|node|parent|depth|name|count|total|child|max",
 * by thread and node; freed by the caller. */
static char *t_nodes(struct tdb *t)
{
	sqlite3_stmt *st;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	assert_int_equal(sqlite3_prepare_v2(t->db, "SELECT th.tid, s.first_node, s.count, s.nodes FROM track_stacks s "
						   "JOIN tracks tr ON tr.id = s.track_id JOIN threads th ON "
						   "th.id = tr.thread_id ORDER BY th.tid, s.first_node",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		static uint64_t rec[TRACEDB_STACKS_CHUNK][STACKS_WORDS];
		int n = tracedb_stacks_unpack(sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3), rec);
		int64_t k;

		assert_int_equal(n, sqlite3_column_int64(st, 2));
		for (k = 0; k < n; k++) {
			const uint64_t *v = rec[k];

			fprintf(f, "%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRIu64 "|%s|%" PRIu64 "|%" PRIu64 "|%" PRIu64
				   "|%" PRIu64 "\n",
				(int64_t)sqlite3_column_int64(st, 0), (int64_t)sqlite3_column_int64(st, 1) + k,
				(int64_t)v[STACKW_PARENT] - 1,
				v[STACKW_DEPTH],
				tdb_rows(t, "SELECT str FROM strings WHERE id = %" PRIu64, v[STACKW_NAME]), v[STACKW_COUNT],
				v[STACKW_TOTAL], v[STACKW_CHILD], v[STACKW_MAX]);
		}
	}
	sqlite3_finalize(st);
	fclose(f);
	return out;
}

static void t_expect_stacks(const struct ingest_opts *o)
{
	const struct fxtw_thr a = FXTW_TINL(1, 11), b = FXTW_TINL(1, 12);
	struct fxtw w;
	struct tdb t;
	char *nodes;

	t_open(&w);
	fxtw_begin(&w, a, C, FXTW_INL("Outer"), 0, NULL, 0);
	fxtw_complete(&w, a, C, FXTW_INL("K"), 100, 300, NULL, 0);
	fxtw_complete(&w, a, C, FXTW_INL("C"), 150, 200, NULL, 0);
	fxtw_complete(&w, a, C, FXTW_INL("L"), 500, 700, NULL, 0);
	fxtw_begin(&w, b, C, FXTW_INL("U"), 800, NULL, 0);
	fxtw_end(&w, a, C, FXTW_INL("Outer"), 1000, NULL, 0);
	fxtw_begin(&w, a, C, FXTW_INL("Outer"), 1200, NULL, 0);
	fxtw_complete(&w, a, C, FXTW_INL("K"), 1200, 1250, NULL, 0);
	fxtw_end(&w, a, C, FXTW_INL("Outer"), 1300, NULL, 0);
	fxtw_complete(&w, a, C, FXTW_INL("K"), 1400, 1600, NULL, 0);
	fxtw_complete(&w, a, C, FXTW_INL("K"), 1450, 1500, NULL, 0);
	fxtw_instant(&w, b, C, FXTW_INL("End"), 2000, NULL, 0);
	tdb_ingest_opts(&t, w.buf, w.len, o);
	fxtw_fini(&w);
	assert_int_equal(t.rc, INGEST_OK);
	nodes = t_nodes(&t);
	assert_string_equal(nodes,
			    "11|0|-1|0|Outer|2|1100|450|1000\n"
			    "11|1|-1|0|K|1|200|50|200\n"
			    "11|2|0|1|K|2|250|50|200\n"
			    "11|3|0|1|L|1|200|0|200\n"
			    "11|4|1|1|K|1|50|0|50\n"
			    "11|5|2|2|C|1|50|0|50\n"
			    "12|0|-1|0|U|1|1200|0|1200\n"
			    "12|1|0|1|End|1|0|0|0\n");
	free(nodes);
	/* tid|name|count|wall|self|max */
	assert_string_equal(tdb_rows(&t, "SELECT th.tid, n.str, s.count, s.wall_ns, s.self_ns, s.max_ns FROM "
					 "track_names s JOIN tracks tr ON tr.id = s.track_id JOIN threads th ON "
					 "th.id = tr.thread_id JOIN strings n ON n.id = s.name_id ORDER BY th.tid, n.str"),
			    "11|C|1|50|50|50\n"
			    "11|K|4|500|400|200\n"
			    "11|L|1|200|200|200\n"
			    "11|Outer|2|1100|650|1000\n"
			    "12|End|1|0|0|0\n"
			    "12|U|1|1200|1200|1200");
	tdb_close(&t);
}

static void test_stacks(void **state)
{
	(void)state;
	t_expect_stacks(NULL);
}

static void test_stacks_spilled(void **state)
{
	struct ingest_opts o = { 0 };

	(void)state;
	o.sort_budget = 2;
	t_expect_stacks(&o);
	o.extent_rows = 1;
	t_expect_stacks(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stacks),
		cmocka_unit_test(test_stacks_spilled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
