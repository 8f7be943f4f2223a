/*
 * Unit tests for the ingest driver (ingest/ingest.c) on damaged input
 * (docs/API.md, Meaning 10): unresolved references, unknown records, a
 * zero-size record, an archive cut short and files that are not traces.
 * What came before the damage is kept; the rest is counted. And the
 * sorter's budget (opts.sort_budget) changes nothing in the database, and
 * the name statistics (table name_stats) are those of the slices written.
 */
#include <inttypes.h>

#include "../../tracedb/sketch.h"
#include "../ingest_util.h"
#include "../xray_writer.h"

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

/* ---- the sorter's budget ------------------------------------------------- */

static uint64_t rnd_state = 7;

static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 6364136223846793005u + 1442695040888963407u;
	return (unsigned)((rnd_state >> 33) % n);
}

/* Every row of every table of the database at path, as text. */
static char *t_all_rows(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st, *rows;
	char sql[256], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int i;

	assert_non_null(f);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1,
					    &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\"", name);
		fprintf(f, "table %s\n", name);
		assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &rows, NULL), SQLITE_OK);
		while (sqlite3_step(rows) == SQLITE_ROW) {
			for (i = 0; i < sqlite3_column_count(rows); i++) {
				const unsigned char *v = sqlite3_column_text(rows, i);

				fprintf(f, "%s%s", i ? "|" : "", v ? (const char *)v : "NULL");
			}
			fputc('\n', f);
		}
		sqlite3_finalize(rows);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	fclose(f);
	return out;
}

/* The sketch of the durations st reads, encoded. */
static size_t t_sketch_of(sqlite3_stmt *st, uint8_t *out)
{
	struct sketch *sk = calloc(1, sizeof(*sk));
	size_t n;

	assert_non_null(sk);
	while (sqlite3_step(st) == SQLITE_ROW)
		sketch_add(sk, sqlite3_column_int64(st, 0));
	n = sketch_encode(sk, out);
	free(sk);
	return n;
}

/* name_stats of the database at path holds, for every name of a slice and
 * no other, what its slices say: counted from the slices table itself. */
static void t_name_stats(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *want, *got, *durs;
	uint8_t *sk = malloc(SKETCH_MAX_BYTES);
	int i, rows = 0;

	assert_non_null(sk);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT name_id, count(*), count(CASE WHEN dur >= 0 THEN 1 END), "
					    "coalesce(sum(CASE WHEN dur >= 0 THEN dur END), 0), "
					    "coalesce(max(CASE WHEN dur >= 0 THEN dur END), 0) FROM slices "
					    "GROUP BY name_id ORDER BY name_id",
					    -1, &want, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT name_id, count, ended, total_ns, max_ns, sketch FROM name_stats "
					    "ORDER BY name_id",
					    -1, &got, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT dur FROM slices WHERE name_id = ? AND dur >= 0", -1, &durs,
					    NULL),
			 SQLITE_OK);
	while (sqlite3_step(want) == SQLITE_ROW) {
		size_t n;

		assert_int_equal(sqlite3_step(got), SQLITE_ROW);
		for (i = 0; i < 5; i++)
			if (sqlite3_column_int64(want, i) != sqlite3_column_int64(got, i))
				fail_msg("name %lld, column %d: %lld in name_stats, %lld from the slices",
					 (long long)sqlite3_column_int64(want, 0), i,
					 (long long)sqlite3_column_int64(got, i), (long long)sqlite3_column_int64(want, i));
		sqlite3_bind_int64(durs, 1, sqlite3_column_int64(want, 0));
		n = t_sketch_of(durs, sk);
		sqlite3_reset(durs);
		assert_int_equal(sqlite3_column_bytes(got, 5), n);
		assert_memory_equal(sqlite3_column_blob(got, 5), sk, n);
		rows++;
	}
	assert_int_equal(sqlite3_step(got), SQLITE_DONE);
	assert_true(rows > 0);
	sqlite3_finalize(want);
	sqlite3_finalize(got);
	sqlite3_finalize(durs);
	sqlite3_close(db);
	free(sk);
}

static int t_strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The name index of db as sorted lines "name|ts|id", ids through map
 * (old id -> new, by index; NULL: as they are); checks that each name's
 * entries come in (ts, id) order. */
static char *t_name_entries(sqlite3 *db, const int64_t *map, size_t nmap)
{
	sqlite3_stmt *st;
	char **lines = NULL, *out = NULL;
	size_t n = 0, cap = 0, len = 0, i;
	FILE *f;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT name_id, first_ts, first_id, count, data FROM name_index "
						"ORDER BY name_id, first_ts, first_id",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t name = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 1), id = sqlite3_column_int64(st, 2);
		int64_t count = sqlite3_column_int64(st, 3), k, pts = ts, pid = id;
		const uint8_t *p = sqlite3_column_blob(st, 4), *end = p + sqlite3_column_bytes(st, 4);

		for (k = 0; k < count; k++) {
			if (k > 0) {
				assert_int_equal(tracedb_names_next(&p, end, &ts, &id), 0);
				assert_true(ts > pts || (ts == pts && id > pid));
				pts = ts;
				pid = id;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				assert_non_null(lines = realloc(lines, cap * sizeof(*lines)));
			}
			if (map)
				assert_true(id > 0 && (size_t)id < nmap);
			assert_true(asprintf(&lines[n++], "%" PRId64 "|%" PRId64 "|%" PRId64, name, ts, map ? map[id] : id) > 0);
		}
	}
	sqlite3_finalize(st);
	qsort(lines, n, sizeof(*lines), t_strcmp_p);
	assert_non_null(f = open_memstream(&out, &len));
	for (i = 0; i < n; i++) {
		fprintf(f, "%s\n", lines[i]);
		free(lines[i]);
	}
	fclose(f);
	free(lines);
	return out;
}

/* Ids in the default layout, from a database whose ids were reserved a
 * chunk at a time: row_number in (group, ordinal) order (extents). */
static const char *const renumber_sql[] = {
	"CREATE TEMP TABLE smap (old INTEGER PRIMARY KEY, new INTEGER)",
	"INSERT INTO smap SELECT s.id, row_number() OVER (ORDER BY x.track_id, x.depth, x.first_ord + s.id - x.first_id) "
	"FROM slices s JOIN extents x ON x.track_id = s.track_id AND x.depth = s.depth "
	"AND s.id BETWEEN x.first_id AND x.first_id + x.count - 1",
	"CREATE TEMP TABLE cmap (old INTEGER PRIMARY KEY, new INTEGER)",
	"INSERT INTO cmap SELECT c.id, row_number() OVER (ORDER BY x.track_id, x.first_ord + c.id - x.first_id) "
	"FROM counters c JOIN extents x ON x.track_id = c.track_id AND x.depth = 0 "
	"AND c.id BETWEEN x.first_id AND x.first_id + x.count - 1",
	"CREATE TEMP TABLE rmap (old INTEGER PRIMARY KEY, new INTEGER)",
	"INSERT INTO rmap SELECT r.id, row_number() OVER (ORDER BY r.cpu, x.first_ord + r.id - x.first_id) "
	"FROM sched r JOIN tracks k ON k.kind = 'cpu' AND k.cpu = r.cpu JOIN extents x ON x.track_id = k.id "
	"AND x.depth = 0 AND r.id BETWEEN x.first_id AND x.first_id + x.count - 1",
	"UPDATE slices SET parent_id = (SELECT new FROM smap WHERE old = parent_id) WHERE parent_id IS NOT NULL",
	"UPDATE slices SET id = -(SELECT new FROM smap WHERE old = id)",
	"UPDATE slices SET id = -id",
	"UPDATE flows SET from_slice_id = (SELECT new FROM smap WHERE old = from_slice_id), "
	"to_slice_id = (SELECT new FROM smap WHERE old = to_slice_id)",
	"UPDATE counters SET id = -(SELECT new FROM cmap WHERE old = id)",
	"UPDATE counters SET id = -id",
	"UPDATE sched SET id = -(SELECT new FROM rmap WHERE old = id)",
	"UPDATE sched SET id = -id",
	"DELETE FROM extents",
	"INSERT INTO extents SELECT track_id, depth, 0, min(id), count(*) FROM slices GROUP BY 1, 2",
	"INSERT INTO extents SELECT track_id, 0, 0, min(id), count(*) FROM counters GROUP BY 1",
	"INSERT INTO extents SELECT k.id, 0, 0, min(r.id), count(*) FROM sched r JOIN tracks k ON k.kind = 'cpu' "
	"AND k.cpu = r.cpu GROUP BY 1",
	"DELETE FROM name_index",
};

/* Whether the dump of t_all_rows has rows of table `table`. */
static int t_has_rows(const char *rows, const char *table)
{
	char head[64];
	const char *p;

	snprintf(head, sizeof(head), "table %s\n", table);
	p = strstr(rows, head);
	return p != NULL && p[strlen(head)] != '\0' && strncmp(p + strlen(head), "table ", 6) != 0;
}

/* Writes the n bytes at p to a new file named from in (a mkstemp()
 * template, filled in), and, when out is not NULL, names its database
 * "<in>.db" there. */
static void t_input(char *in, const void *p, size_t n, char *out, size_t outlen)
{
	FILE *f;
	int fd;

	assert_true((fd = mkstemp(in)) >= 0);
	assert_non_null(f = fdopen(fd, "wb"));
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	if (out != NULL)
		snprintf(out, outlen, "%s.db", in);
}

/*
 * Ingests the bytes with the default budget, with a budget of 100 events
 * (the events then go through dozens of spilled runs), and with that
 * budget and ids reserved 3 rows at a time (ingest_opts.extent_rows): the
 * first two databases must hold the same rows (stack statistics too); the
 * third must keep the layout rules and, its ids renumbered into the
 * default layout, hold the same rows again, its name index naming the
 * same slices. The small budget's result goes to *spilled when it is not
 * NULL.
 */
static void t_same_with_budget(const void *p, size_t n, uint64_t min_events, struct ingest_result *spilled)
{
	char in[] = "/tmp/ts-test-XXXXXX", db[3][64];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	char *rows[3], *names[2] = { NULL, NULL };
	struct tdb t = { 0 };
	int64_t *map;
	size_t nmap, k;
	sqlite3_stmt *st;
	int i;

	t_input(in, p, n, NULL, 0);
	for (i = 0; i < 3; i++) {
		snprintf(db[i], sizeof(db[i]), "%s.%d.db", in, i);
		o.sort_budget = i ? 100 : 0;
		o.extent_rows = i == 2 ? 3 : 0;
		if (ingest_file(in, db[i], &o, &res) != INGEST_OK)
			fail_msg("budget %zu: %s", o.sort_budget, res.error);
		if (res.counts.events < min_events)
			fail_msg("%" PRIu64 " events, %" PRIu64 " slices", res.counts.events, res.counts.slices);
		if (i == 1 && spilled != NULL)
			*spilled = res;
		if (i < 2)
			rows[i] = t_all_rows(db[i]);
		t_name_stats(db[i]);
	}
	assert_true(strstr(rows[0], "table slices\n1|") != NULL); /* slices were made */
	/* and their stack statistics, which spilling must not change either */
	assert_true(t_has_rows(rows[0], "track_names"));
	assert_true(t_has_rows(rows[0], "track_stacks"));
	if (strcmp(rows[0], rows[1]) != 0)
		fail_msg("the databases differ:\n%.2000s\n----\n%.2000s", rows[0], rows[1]);

	/* the chunked one */
	assert_int_equal(sqlite3_open(db[2], &t.db), SQLITE_OK);
	t_check_layout_of(&t, 0);
	assert_true(tdb_int(&t, "SELECT count(*) FROM extents WHERE first_ord > 0") > 0);
	nmap = (size_t)tdb_int(&t, "SELECT max(id) FROM slices") + 1;
	assert_non_null(map = calloc(nmap, sizeof(*map)));
	for (i = 0; i < (int)(sizeof(renumber_sql) / sizeof(renumber_sql[0])); i++) {
		if (sqlite3_exec(t.db, renumber_sql[i], NULL, NULL, NULL) != SQLITE_OK)
			fail_msg("%s: %s", renumber_sql[i], sqlite3_errmsg(t.db));
		if (i == 1) { /* smap is made: the name index, through it */
			assert_int_equal(sqlite3_prepare_v2(t.db, "SELECT old, new FROM smap", -1, &st, NULL), SQLITE_OK);
			while (sqlite3_step(st) == SQLITE_ROW)
				map[sqlite3_column_int64(st, 0)] = sqlite3_column_int64(st, 1);
			sqlite3_finalize(st);
			names[1] = t_name_entries(t.db, map, nmap);
		}
	}
	t_check_layout(&t);
	sqlite3_close(t.db);
	rows[2] = t_all_rows(db[2]);
	assert_int_equal(sqlite3_open(db[0], &t.db), SQLITE_OK);
	names[0] = t_name_entries(t.db, NULL, 0);
	assert_int_equal(sqlite3_exec(t.db, "DELETE FROM name_index", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(t.db);
	free(rows[0]);
	rows[0] = t_all_rows(db[0]);
	if (strcmp(rows[0], rows[2]) != 0) {
		for (k = 0; rows[0][k] == rows[2][k]; k++)
			;
		fail_msg("with ids reserved 3 at a time, the rows differ at byte %zu:\n%.800s\n----\n%.800s", k,
			 rows[0] + (k > 200 ? k - 200 : 0), rows[2] + (k > 200 ? k - 200 : 0));
	}
	assert_string_equal(names[0], names[1]);
	for (i = 0; i < 3; i++) {
		free(rows[i]);
		remove(db[i]);
	}
	free(names[0]);
	free(names[1]);
	free(map);
	remove(in);
}

/* Nested begins and ends, completes, instants, counters, async operations
 * and flows on a few threads, with many equal timestamps. */
static void test_budget_fxt(void **state)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	struct fxtw_thr th[3] = { FXTW_TINL(1, 2), FXTW_TINL(1, 3), FXTW_TINL(4, 5) };
	unsigned depth[3] = { 0 }, i, t, k;
	uint64_t ts = 1000;
	struct fxtw_arg arg;
	struct fxtw w;

	(void)state;
	t_open(&w);
	for (i = 0; i < 6000; i++) {
		t = rnd(3);
		ts += rnd(3);
		arg = fxtw_arg_i64(FXTW_INL("v"), (int64_t)i);
		switch (k = rnd(9)) {
		case 0:
		case 1:
			fxtw_begin(&w, th[t], C, FXTW_INL(names[rnd(4)]), ts, &arg, 1);
			depth[t]++;
			break;
		case 2:
		case 3:
			if (depth[t] > 0) {
				fxtw_end(&w, th[t], C, FXTW_EMPTY, ts, NULL, 0);
				depth[t]--;
			}
			break;
		case 4:
			fxtw_complete(&w, th[t], C, FXTW_INL(names[rnd(4)]), ts, ts + rnd(40), &arg, 1);
			break;
		case 5:
			fxtw_counter(&w, th[t], C, FXTW_INL("ctr"), ts, rnd(2), &arg, 1);
			break;
		case 6:
			fxtw_async(&w, 5 + rnd(3), th[t], C, FXTW_INL("op"), ts, rnd(4), &arg, 1);
			break;
		case 7:
			fxtw_flow(&w, 8 + rnd(3), th[t], C, FXTW_INL("f"), ts, rnd(3));
			break;
		default:
			fxtw_instant(&w, th[t], C, FXTW_INL(names[rnd(4)]), ts - rnd(20), NULL, 0);
		}
	}
	fxtw_begin(&w, th[0], C, FXTW_INL("late root"), 10, NULL, 0); /* appended last, sorts first */
	t_same_with_budget(w.buf, w.len, 4000, NULL);
	fxtw_fini(&w);
}

/*
 * The records put in their tables' order in runs (runsort.h): with the
 * budget of 100 events, runs of 1000 bytes, so each of these goes through
 * dozens of them. Counter events of three series (pid, name, argument,
 * counter id) each, integer and double, many at one timestamp; flows
 * stepped and ended on every thread, so that their from-slices are written
 * in another order than they are made, some from slices that end before
 * the arrow, some after, some never; context switches on four cpus, many
 * at one timestamp, written in another order than the file's.
 */
static void test_budget_records(void **state)
{
	static const uint64_t tids[4] = { 2, 3, 5, 6 };
	struct fxtw_thr th[4] = { FXTW_TINL(1, 2), FXTW_TINL(1, 3), FXTW_TINL(4, 5), FXTW_TINL(4, 6) };
	struct fxtw_arg a[3];
	struct ingest_result res;
	unsigned depth[4] = { 0 }, i, t;
	uint64_t ts = 1000;
	struct fxtw w;

	(void)state;
	t_open(&w);
	for (i = 0; i < 12000; i++) {
		t = rnd(4);
		ts += rnd(2);
		a[0] = fxtw_arg_i64(FXTW_INL("x"), (int64_t)i - 5000);
		a[1] = fxtw_arg_double(FXTW_INL("y"), i / 3.0);
		a[2] = fxtw_arg_i64(FXTW_INL("z"), (int64_t)rnd(7));
		switch (rnd(8)) {
		case 0:
			fxtw_begin(&w, th[t], C, FXTW_INL(rnd(2) ? "a" : "b"), ts, NULL, 0);
			depth[t]++;
			break;
		case 1:
			if (depth[t] > 0) {
				fxtw_end(&w, th[t], C, FXTW_EMPTY, ts, NULL, 0);
				depth[t]--;
			}
			break;
		case 2:
			fxtw_complete(&w, th[t], C, FXTW_INL("c"), ts, ts + rnd(30), NULL, 0);
			break;
		case 3:
			fxtw_counter(&w, th[t], C, FXTW_INL(rnd(2) ? "mem" : "cpu"), ts, rnd(3), a, 1 + rnd(3));
			break;
		case 4:
		case 5:
			fxtw_flow(&w, 8 + rnd(3), th[t], C, FXTW_INL("f"), ts - rnd(8), rnd(6));
			break;
		default:
			fxtw_context_switch(&w, (uint16_t)rnd(4), rnd(4), ts - rnd(3), tids[rnd(4)], tids[t], NULL, 0);
		}
	}
	t_same_with_budget(w.buf, w.len, 8000, &res);
	/* dozens of runs each: 32-byte points and switches, 64-byte flows */
	if (res.counts.counters < 40 * 31 || res.counts.flows < 40 * 15 || res.counts.sched < 40 * 31)
		fail_msg("%" PRIu64 " points, %" PRIu64 " flows, %" PRIu64 " switches", res.counts.counters,
			 res.counts.flows, res.counts.sched);
	fxtw_fini(&w);
}

/* Calls nested on a few threads, some with arguments, some never exited,
 * with custom events, over several buffers per thread. */
static void test_budget_xray(void **state)
{
	uint32_t stack[4][32];
	unsigned depth[4] = { 0 }, b, i, t;
	uint64_t tsc = 100000, args[2] = { 11, 22 };
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 0);
	xrw_header(&w, 1000000000);
	for (b = 0; b < 12; b++) {
		t = b % 4;
		xrw_buffer_begin(&w, 100 + t, 7, 1, b, (uint16_t)t, tsc);
		for (i = 0; i < 400; i++) {
			tsc += rnd(3);
			if (depth[t] < 32 && (depth[t] == 0 || rnd(2) == 0)) {
				stack[t][depth[t]] = 1 + rnd(20);
				if (rnd(4) == 0)
					xrw_enter_args(&w, stack[t][depth[t]], tsc, args, 1 + rnd(2));
				else
					xrw_enter(&w, stack[t][depth[t]], tsc);
				depth[t]++;
			} else if (rnd(20) == 0) {
				xrw_custom(&w, tsc, (uint16_t)t, "hello", 5);
			} else {
				xrw_exit(&w, stack[t][--depth[t]], tsc);
			}
		}
		xrw_buffer_end(&w);
		tsc -= 900; /* the next thread's buffer overlaps this one in time */
	}
	t_same_with_budget(w.buf, w.len, 2000, NULL);
	xrw_fini(&w);
}

/* A name of thousands of slices (a dense sketch) next to names of a few,
 * zero-length, very long and never-ended slices among them. */
static void test_name_stats(void **state)
{
	struct fxtw_thr th[2] = { FXTW_TINL(1, 2), FXTW_TINL(1, 3) };
	uint64_t ts = 1000;
	struct fxtw w;
	unsigned i;

	(void)state;
	t_open(&w);
	fxtw_begin(&w, th[1], C, FXTW_INL("never ends"), 5, NULL, 0);
	fxtw_complete(&w, th[1], C, FXTW_INL("long"), 6, 6 + (UINT64_C(1) << 40), NULL, 0);
	for (i = 0; i < 3000; i++, ts += 1000) {
		fxtw_complete(&w, th[0], C, FXTW_INL("many"), ts, ts + (i % 7 == 0 ? 0 : rnd(900)), NULL, 0);
		if (i % 500 == 0)
			fxtw_instant(&w, th[0], C, FXTW_INL("few"), ts + 950, NULL, 0);
	}
	fxtw_begin(&w, th[0], C, FXTW_INL("many"), ts, NULL, 0); /* and one of them never ends */
	t_same_with_budget(w.buf, w.len, 3000, NULL);
	fxtw_fini(&w);
}

/* ---- cancelling ------------------------------------------------------------ */

/* Cancels at the first report of the given phase. */
static int cancel_at(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	(void)done;
	(void)total;
	(void)events;
	return phase == *(const enum ingest_phase *)ctx;
}

/*
 * A cancel while the slices are written (the name index then builds on a
 * thread of its own) or while matching stops the ingest with INGEST_ECANCEL
 * and leaves no database; without one, the same archive ingests, and
 * res.phase_seconds times each phase within the call's wall time.
 */
static void test_cancel(void **state)
{
	static const enum ingest_phase phases[] = { INGEST_PHASE_BUILD, INGEST_PHASE_WRITE };
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	enum ingest_phase at;
	char name[32], in[] = "/tmp/ts-cancel-XXXXXX", out[64];
	struct fxtw w;
	double t0, wall, sum = 0;
	size_t i;

	(void)state;
	t_open(&w);
	for (i = 0; i < 20000; i++) { /* many names, so that the name index has work */
		snprintf(name, sizeof(name), "n%zu", i % 5000);
		fxtw_complete(&w, FXTW_TINL(1, 2 + i % 3), C, FXTW_INL(name), 10 * i, 10 * i + 5, NULL, 0);
	}
	t_input(in, w.buf, w.len, out, sizeof(out));
	fxtw_fini(&w);
	o.progress = cancel_at;
	o.progress_ctx = &at;
	o.sort_budget = 1000; /* spilled runs: the merge runs on its thread */
	for (i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		at = phases[i];
		assert_int_equal(ingest_file(in, out, &o, &res), INGEST_ECANCEL);
		assert_int_not_equal(access(out, F_OK), 0);
	}
	at = (enum ingest_phase)-1; /* never */
	t0 = ingest_now_s();
	assert_int_equal(ingest_file(in, out, &o, &res), INGEST_OK);
	wall = ingest_now_s() - t0;
	assert_int_equal(access(out, F_OK), 0);
	assert_int_equal(res.counts.slices, 20000);
	for (i = 0; i < INGEST_PHASES; i++) {
		if (!(res.phase_seconds[i] > 0))
			fail_msg("phase %zu was not timed: %g s", i, res.phase_seconds[i]);
		sum += res.phase_seconds[i];
	}
	if (sum > wall)
		fail_msg("the phases add up to %g s, more than the call's %g s", sum, wall);
	remove(out);
	remove(in);
}

/* An XRay thread with no call (its buffer's cpu record alone) before one
 * with calls: the first thread's writing has no slice group at all. */
static void test_xray_thread_without_calls(void **state)
{
	char in[] = "/tmp/ts-xray-nocall-XXXXXX", out[64];
	struct ingest_result res;
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 0);
	xrw_header(&w, 1000000000);
	xrw_buffer_begin(&w, 100, 7, 1, 0, 0, 1000); /* cpu only */
	xrw_buffer_end(&w);
	xrw_buffer_begin(&w, 101, 7, 1, 1, 0, 2000);
	xrw_enter(&w, 1, 2001);
	xrw_enter(&w, 2, 2002);
	xrw_exit(&w, 2, 2003);
	xrw_exit(&w, 1, 2004);
	xrw_buffer_end(&w);
	t_input(in, w.buf, w.len, out, sizeof(out));
	xrw_fini(&w);
	if (ingest_file(in, out, NULL, &res) != INGEST_OK)
		fail_msg("%s", res.error);
	assert_int_equal(res.counts.slices, 2);
	assert_int_equal(res.counts.counters, 2);
	remove(out);
	remove(in);
}

/* Cancels at the third report of matching: after a few of an XRay log's
 * threads were matched and handed to the writer thread. */
static int cancel_matching(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	int *reports = ctx;

	(void)done;
	(void)total;
	(void)events;
	return phase == INGEST_PHASE_BUILD && ++*reports == 3;
}

/*
 * An XRay log's slices are written thread by thread, on a thread of their
 * own, while the next thread is matched (model.h, by_thread): a cancel
 * while matching goes on, or at the first report of writing, stops that
 * thread too, with INGEST_ECANCEL and no database; without one the log
 * ingests whole.
 */
static void test_cancel_xray(void **state)
{
	char in[] = "/tmp/ts-cancel-xray-XXXXXX", out[64];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	enum ingest_phase at = INGEST_PHASE_WRITE;
	uint64_t tsc = 1000, calls = 0;
	unsigned b, i, depth;
	int reports = 0;
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 0);
	xrw_header(&w, 1000000000);
	for (b = 0; b < 48; b++) { /* 6 threads of 8 buffers of 2000 records and more */
		xrw_buffer_begin(&w, 100 + b % 6, 7, 1, b, 0, tsc);
		for (i = 0, depth = 0; i < 2000; i++) {
			tsc += 1 + rnd(5);
			if (depth < 8 && (depth == 0 || rnd(2) == 0)) {
				xrw_enter(&w, 1 + depth, tsc);
				depth++;
				calls++;
			} else {
				xrw_exit(&w, depth, tsc);
				depth--;
			}
		}
		while (depth > 0)
			xrw_exit(&w, depth--, ++tsc);
		xrw_buffer_end(&w);
	}
	t_input(in, w.buf, w.len, out, sizeof(out));
	xrw_fini(&w);
	o.progress = cancel_at;
	o.progress_ctx = &at;
	o.sort_budget = 5000; /* spilled events and slices: held slices wait for the writer */
	assert_int_equal(ingest_file(in, out, &o, &res), INGEST_ECANCEL);
	assert_int_not_equal(access(out, F_OK), 0);
	o.progress = cancel_matching;
	o.progress_ctx = &reports;
	assert_int_equal(ingest_file(in, out, &o, &res), INGEST_ECANCEL);
	assert_int_equal(reports, 3);
	assert_int_not_equal(access(out, F_OK), 0);
	o.progress = cancel_at;
	o.progress_ctx = &at;
	at = (enum ingest_phase)-1; /* never */
	assert_int_equal(ingest_file(in, out, &o, &res), INGEST_OK);
	assert_string_equal(res.format, "xray-fdr");
	assert_int_equal(res.counts.slices, calls);
	remove(out);
	remove(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_damage_unresolved),
		cmocka_unit_test(test_damage_unknown_types),
		cmocka_unit_test(test_damage_zero_size),
		cmocka_unit_test(test_damage_cut_short),
		cmocka_unit_test(test_damage_not_a_trace),
		cmocka_unit_test(test_budget_fxt),
		cmocka_unit_test(test_budget_xray),
		cmocka_unit_test(test_cancel_xray),
		cmocka_unit_test(test_xray_thread_without_calls),
		cmocka_unit_test(test_budget_records),
		cmocka_unit_test(test_name_stats),
		cmocka_unit_test(test_cancel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
