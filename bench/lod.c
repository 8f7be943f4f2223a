/*
 * bench/lod.c: the level of detail's own cost, which make bench's ingest
 * figure drowns in its noise (lod is about 1.5% of the ingest's CPU).
 *
 * Reads every (track, depth) of slices and every counter track of a trace
 * database (one that make bench's archive gives: `trace-server ingest IN
 * -o DB`), then, ROUNDS times, builds their level of detail as the batch
 * does (lod_build, into the staged table of a scratch database), and
 * prints the best round's CPU seconds on the building thread (SQLite's
 * inserts run on the writer's own thread and are not counted), the rows
 * and the blob bytes written.
 *
 *   cc $(make -s print-ALL_CFLAGS) -o build/rel/bench_lod bench/lod.c \
 *      build/rel/libtrace.a $(make -s print-LIBS)
 *   build/rel/bench_lod DB [ROUNDS]
 *
 * Built against another commit's ingest/lod.c and lod.h (their lod_writer
 * API is the same), it gives that commit's figure on the same machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/lod.h"

struct group {
	struct lod_key key;
	int counters;
	size_t first, n; /* items[first .. first + n) */
};

static struct lod_item *items;
static size_t nitems, items_cap;
static struct group *groups;
static size_t ngroups, groups_cap;

static struct lod_item *item_push(void)
{
	if (nitems == items_cap) {
		items_cap = items_cap ? 2 * items_cap : 65536;
		if ((items = realloc(items, items_cap * sizeof(*items))) == NULL)
			exit(2);
	}
	return &items[nitems++];
}

/* Items of one query, rows (track, depth, ts, end or value, name, cat,
 * open), ordered by (track, depth) then ts, grouped. */
static void load(sqlite3 *db, const char *sql, int counters)
{
	sqlite3_stmt *st;
	struct group *g = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "bench_lod: %s\n", sqlite3_errmsg(db));
		exit(1);
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct lod_item *x = item_push();
		int64_t track = sqlite3_column_int64(st, 0), depth = sqlite3_column_int64(st, 1);

		if (g == NULL || g->key.track_id != track || g->key.depth != depth) {
			if (ngroups == groups_cap) {
				groups_cap = groups_cap ? 2 * groups_cap : 1024;
				if ((groups = realloc(groups, groups_cap * sizeof(*groups))) == NULL)
					exit(2);
			}
			g = &groups[ngroups++];
			*g = (struct group){ { track, depth }, counters, nitems - 1, 0 };
		}
		g->n++;
		memset(x, 0, sizeof(*x));
		x->ts = sqlite3_column_int64(st, 2);
		if (counters) {
			x->end = x->ts;
			x->is_int = sqlite3_column_type(st, 3) == SQLITE_INTEGER;
			x->ivalue = x->is_int ? sqlite3_column_int64(st, 3) : 0;
			x->value = sqlite3_column_double(st, 3);
		} else {
			x->end = sqlite3_column_int64(st, 3);
			x->name = (uint32_t)sqlite3_column_int64(st, 4);
			x->cat = (uint32_t)sqlite3_column_int64(st, 5);
			x->open = sqlite3_column_int(st, 6);
		}
	}
	sqlite3_finalize(st);
}

static double thread_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One round: every group's lod_build into a new scratch database; its CPU
 * seconds, and the rows and bytes when asked. */
static double round_once(const char *path, int64_t *rows, int64_t *bytes)
{
	struct dbwriter s;
	struct lod_writer w;
	sqlite3 *db;
	sqlite3_stmt *st;
	double t0, t;
	uint64_t levels;
	size_t i;

	unlink(path);
	if (dbw_open(&s, path, 65536) != 0 || lod_writer_init(&w, &s) != 0)
		exit(1);
	t0 = thread_seconds();
	for (i = 0; i < ngroups; i++)
		if (lod_build(&w, &groups[i].key, items + groups[i].first, groups[i].n, groups[i].counters, &levels) != 0)
			exit(1);
	t = thread_seconds() - t0;
	if (lod_writer_fini(&w) != 0 || dbw_index(&s) != 0 || dbw_commit(&s) != 0)
		exit(1);
	dbw_close(&s);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT count(*), sum(length(buckets)) FROM lod", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW)
		exit(1);
	*rows = sqlite3_column_int64(st, 0);
	*bytes = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	unlink(path);
	return t;
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/bench_lod_XXXXXX";
	int rounds = argc > 2 ? atoi(argv[2]) : 7, r, fd;
	int64_t rows = 0, bytes = 0;
	double best = 1e9;
	sqlite3 *db;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: bench_lod DB [ROUNDS]\n");
		return 1;
	}
	if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return 1;
	/* ordinal order: ts, then id (the order ingest wrote them in) */
	load(db,
	     "SELECT track_id, depth, ts, CASE WHEN dur < 0 THEN (SELECT max(ts + max(dur, 0)) FROM slices) "
	     "ELSE ts + dur END, name_id, category_id, dur < 0 FROM slices ORDER BY track_id, depth, ts, id",
	     0);
	load(db, "SELECT track_id, 0, ts, value FROM counters ORDER BY track_id, ts, id", 1);
	sqlite3_close(db);
	if ((fd = mkstemp(path)) < 0)
		return 1;
	close(fd);
	for (r = 0; r < rounds; r++) {
		double t = round_once(path, &rows, &bytes);

		if (t < best)
			best = t;
	}
	printf("lod: %zu groups, %zu items: best of %d %.3f s CPU building; %lld rows, %lld blob bytes\n", ngroups,
	       nitems, rounds, best, (long long)rows, (long long)bytes);
	return 0;
}
