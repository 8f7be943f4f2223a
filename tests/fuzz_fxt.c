/*
 * libFuzzer target for the whole FXT pipeline: the decoder (ingest/fxt.c)
 * and then the build stage into SQLite. It asserts properties, not only
 * "no crash". The decoder alone, at decoder speed, has its own target
 * (tests/fuzz_fxt_decode.c); this one is for the rules that span stages.
 *
 * Each input first goes through the decoder's checks P1-P3
 * (tests/fuzz_fxt_check.h: three decodes that must agree, framing and
 * accounting), then:
 *   P4 Build, for inputs under FZ_BUILD_MAX bytes: model_build() into a
 *      fresh SQLite file succeeds, the counts it reports match the rows, and
 *      the layout the queries rely on (schema/trace.sql) holds: extents
 *      ranges tile the slices, ts never decreases inside a range, max_dur
 *      bounds every slice up to the trace end, every reference resolves,
 *      and counters, sched and logs keep their documented order. The slice
 *      store spills every few slices (a tiny budget), so its scratch file
 *      is on the path.
 *
 * A build costs about a hundred decodes (SQLite prepares its schema and
 * statements each time), so under libFuzzer (LLVMFuzzerInitialize) P4 runs
 * on one small input in FZ_BUILD_EVERY, chosen by the input's hash, or one
 * in $FUZZ_FXT_BUILD_EVERY; tests/fuzz_replay.c, which runs this target
 * over a corpus without libFuzzer, builds every small input. The database
 * goes to $FUZZ_TMPDIR, else /dev/shm, else /tmp, under a name holding the
 * process id, and is removed after each input.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ingest/build.h"
#include "../ingest/fxt.h"
#include "../ingest/reader.h"
#include "../ingest/sorter.h"
#include "../ingest/dbwriter.h"
#define FZ_NAME "fuzz_fxt"
#include "fuzz_util.h"
#include "fuzz_fxt_check.h"

enum {
	FZ_BUILD_MAX = 4096, /* inputs this small also run the build stage */
	FZ_BUILD_EVERY = 16  /* ...one in this many of them, under libFuzzer */
};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Build one small input in this many; 1 unless libFuzzer initialized us. */
static unsigned long fz_build_every = 1;

/* ---- build stage ----------------------------------------------------------- */

/* A count the build reports, and the query giving the rows it wrote. */
struct fz_count {
	const char *sql;
	uint64_t want;
};

/* Layout rules of schema/trace.sql: each query counts the rows breaking one. */
static const struct {
	const char *rule;
	const char *sql;
} fz_rules[] = {
	{ "every slice lies in an extent of its (track, depth)",
	  "SELECT count(*) FROM slices s WHERE NOT EXISTS (SELECT 1 FROM extents x WHERE x.track_id = s.track_id"
	  " AND x.depth = s.depth AND s.id BETWEEN x.first_id AND x.first_id + x.count - 1)" },
	{ "track_depths counts match their extents and add up to the slices",
	  "SELECT (SELECT count(*) FROM track_depths d WHERE count != (SELECT total(count) FROM extents x"
	  " WHERE x.track_id = d.track_id AND x.depth = d.depth))"
	  " + ((SELECT total(count) FROM track_depths) != (SELECT count(*) FROM slices))" },
	{ "ts never decreases inside a (track, depth) range",
	  "SELECT count(*) FROM slices a JOIN slices b ON b.id = a.id + 1 AND b.track_id = a.track_id"
	  " AND b.depth = a.depth WHERE b.ts < a.ts" },
	{ "max_dur bounds every slice, an unterminated one up to the trace end",
	  "SELECT count(*) FROM slices s JOIN track_depths d ON d.track_id = s.track_id AND d.depth = s.depth"
	  " WHERE (CASE WHEN s.dur < 0 THEN (SELECT value FROM meta WHERE key = 'end_ns') - s.ts ELSE s.dur END)"
	  " > d.max_dur" },
	{ "slices lie inside the trace's time range, dur >= -1",
	  "SELECT count(*) FROM slices, (SELECT (SELECT value FROM meta WHERE key = 'start_ns') AS t0,"
	  " (SELECT value FROM meta WHERE key = 'end_ns') AS t1)"
	  " WHERE ts < t0 OR ts > t1 OR dur < -1 OR (dur >= 0 AND ts + dur > t1)" },
	{ "a slice's parent exists, on the same track, starting no later",
	  "SELECT count(*) FROM slices s LEFT JOIN slices p ON p.id = s.parent_id WHERE s.parent_id IS NOT NULL"
	  " AND (p.id IS NULL OR p.track_id != s.track_id OR p.ts > s.ts)" },
	{ "slice tracks, names and categories resolve, depth <= the track's max_depth",
	  "SELECT count(*) FROM slices s LEFT JOIN tracks t ON t.id = s.track_id WHERE t.id IS NULL"
	  " OR s.depth > t.max_depth OR s.name_id NOT IN (SELECT id FROM strings)"
	  " OR s.category_id NOT IN (SELECT id FROM strings)" },
	{ "a slice's arg set has args",
	  "SELECT count(*) FROM slices s WHERE s.arg_set_id IS NOT NULL"
	  " AND NOT EXISTS (SELECT 1 FROM args a WHERE a.arg_set_id = s.arg_set_id)" },
	{ "arg keys and string values resolve",
	  "SELECT count(*) FROM args WHERE key_id NOT IN (SELECT id FROM strings)"
	  " OR (type = 6 AND string_id NOT IN (SELECT id FROM strings))" },
	{ "flow ends are slices: from the from-slice's end (its start if open) to the to-slice's start",
	  "SELECT count(*) FROM flows f LEFT JOIN slices a ON a.id = f.from_slice_id"
	  " LEFT JOIN slices b ON b.id = f.to_slice_id"
	  " WHERE a.id IS NULL OR b.id IS NULL OR b.ts != f.to_ts"
	  " OR f.from_ts != CASE WHEN a.dur < 0 THEN a.ts ELSE a.ts + a.dur END" },
	{ "counters lie in their counter track's row range, in ts order",
	  "SELECT (SELECT count(*) FROM counters c LEFT JOIN tracks t ON t.id = c.track_id WHERE t.id IS NULL"
	  " OR t.kind != 'counter' OR NOT EXISTS (SELECT 1 FROM extents x WHERE x.track_id = t.id AND x.depth = 0"
	  " AND c.id BETWEEN x.first_id AND x.first_id + x.count - 1))"
	  " + (SELECT count(*) FROM counters a JOIN counters b ON b.id = a.id + 1 AND b.track_id = a.track_id"
	  " WHERE b.ts < a.ts)" },
	{ "sched rows are ordered by (cpu, ts) and lie in their cpu track's row range",
	  "SELECT (SELECT count(*) FROM sched a JOIN sched b ON b.id = a.id + 1"
	  " WHERE b.cpu < a.cpu OR (b.cpu = a.cpu AND b.ts < a.ts))"
	  " + (SELECT count(*) FROM sched s WHERE NOT EXISTS (SELECT 1 FROM tracks t JOIN extents x ON"
	  " x.track_id = t.id WHERE t.kind = 'cpu' AND t.cpu = s.cpu"
	  " AND s.id BETWEEN x.first_id AND x.first_id + x.count - 1))" },
	{ "logs are in ts order",
	  "SELECT count(*) FROM logs a JOIN logs b ON b.id = a.id + 1 WHERE b.ts < a.ts" },
	{ "thread ids of tracks, sched and logs resolve",
	  "SELECT (SELECT count(*) FROM tracks WHERE kind = 'thread' AND thread_id NOT IN (SELECT id FROM threads))"
	  " + (SELECT count(*) FROM sched WHERE thread_id NOT IN (SELECT id FROM threads))"
	  " + (SELECT count(*) FROM logs WHERE thread_id NOT IN (SELECT id FROM threads))" },
	{ "counters, sched and logs lie inside the trace's time range",
	  "SELECT count(*) FROM (SELECT ts FROM counters UNION ALL SELECT ts FROM sched UNION ALL"
	  " SELECT ts FROM logs), (SELECT (SELECT value FROM meta WHERE key = 'start_ns') AS t0,"
	  " (SELECT value FROM meta WHERE key = 'end_ns') AS t1) WHERE ts < t0 OR ts > t1" },
};

static int64_t fz_sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		fz_fail("query failed (%s): %s", sqlite3_errmsg(db), sql);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void fz_check_db(sqlite3 *db, const struct ingest_result *r)
{
	const struct ingest_counts *c = &r->counts;
	const struct fz_count counts[] = {
		{ "SELECT count(*) FROM slices", c->slices },
		{ "SELECT count(*) FROM counters", c->counters },
		{ "SELECT count(*) FROM flows", c->flows },
		{ "SELECT count(*) FROM sched", c->sched },
		{ "SELECT count(*) FROM logs", c->logs },
		{ "SELECT count(*) FROM threads", c->threads },
		{ "SELECT count(*) FROM processes", c->processes },
		{ "SELECT count(*) FROM tracks", c->tracks },
		{ "SELECT count(*) FROM args", c->args },
		{ "SELECT count(*) FROM blobs", c->blobs },
		{ "SELECT count(*) FROM profiler", c->profiler },
		{ "SELECT (SELECT count(*) FROM kernel_objects) + (SELECT count(*) FROM userspace_objects)",
		  c->objects },
		{ "SELECT value FROM meta WHERE key = 'events'", c->events },
	};
	size_t i;
	int64_t v;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if ((v = fz_sql_int(db, counts[i].sql)) < 0 || (uint64_t)v != counts[i].want)
			fz_fail("the build reports %llu for \"%s\", the database holds %lld",
				(unsigned long long)counts[i].want, counts[i].sql, (long long)v);
	for (i = 0; i < sizeof(fz_rules) / sizeof(fz_rules[0]); i++)
		if ((v = fz_sql_int(db, fz_rules[i].sql)) != 0)
			fz_fail("%lld rows break the rule: %s", (long long)v, fz_rules[i].rule);
}


/* P4: builds decode A's model into a fresh database and checks it. */
static void fz_build(struct model *m, size_t n)
{
	struct ingest_result res;
	struct sorter *so;
	struct dbwriter s;
	char path[512];
	int rc;

	memset(&res, 0, sizeof(res));
	res.format = "fxt";
	res.bytes = n;
	fz_scratch_path(path, sizeof(path), "db");
	if (dbw_open(&s, path, 65536) != 0)
		fz_fail("dbw_open %s: %s", path, s.error); /* the environment, not the input */
	/* attached after decoding: the events are sorted in memory, as an
	 * input under the budget always is; the budget of a few events makes
	 * the slice store, which keeps to it too, spill its packed slices to
	 * the scratch file every few slices, so the build's rules are checked
	 * on slices read back from it */
	if ((so = sorter_attach(m, fz_db_dir(), 4)) == NULL)
		fz_fail("sorter_attach: out of memory");
	rc = model_build(m, so, &s, &res, NULL);
	sorter_free(so);
	if (rc != INGEST_OK)
		fz_fail("model_build: %s: %s", ingest_strerror(rc), s.error);
	if (dbw_index(&s) != 0 || dbw_commit(&s) != 0)
		fz_fail("index or commit: %s", s.error);
	fz_check_db(s.db, &res);
	dbw_close(&s);
	remove(path);
}

/* Called by libFuzzer only, before the first input. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *every = getenv("FUZZ_FXT_BUILD_EVERY");

	(void)argc;
	(void)argv;
	fz_build_every = every && strtoul(every, NULL, 10) > 0 ? strtoul(every, NULL, 10) : FZ_BUILD_EVERY;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_decode a;

	fz_fxt_check(data, size, &a);
	if (a.rc == INGEST_OK && size < FZ_BUILD_MAX && fz_hash(data, size) % fz_build_every == 0)
		fz_build(&a.m, size);
	model_fini(&a.m);
	return 0;
}
