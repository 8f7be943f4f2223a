/*
 * Warming a ready trace's pages: ingest sent its database to the disk and
 * out of the page cache as it wrote it (ingest/behind.h), so the worker
 * reads what the first requests will read before they come. The page cache
 * is the system's, not a process's: the reading runs in a process of its
 * own ("<exe> warm-child", as ingests and the source's compression do), so
 * the server keeps none of what it took (the decoders' code and buffers,
 * SQLite's cache), and a stop kills it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../query/query.h"
#include "catalog_internal.h"

/*
 * Reads what the first view of the whole trace reads. The minimap's
 * overview reads the most (besides the level of detail, the slices of
 * buckets that hold one, a page per track and depth): on bench-large's 4 GB
 * archive, 1.0 s from the disk, 0.1 s from the cache. The window is the
 * viewer's (static/js/timeline.js: alignedWindow, OVERVIEW_MAX_BUCKETS): at
 * most 512 buckets of 2^L ns, the first at a multiple of 2^L. The reply is
 * not kept; a failure only leaves the pages where they were.
 */
enum { FIRST_VIEW_BUCKETS = 512 };

static void warm_first_view(const char *db_path, int64_t s, int64_t e)
{
	struct qry_window w = { 0 };
	struct qry_error err = { 0 };
	const char *why;
	int64_t n, width;
	struct jbuf b;
	sqlite3 *db;
	int level = 10;

	if (e < s)
		e = s;
	while (level < 62 && (e >> level) - (s >> level) + 1 > FIRST_VIEW_BUCKETS)
		level++;
	width = INT64_C(1) << level;
	n = (e >> level) - (s >> level) + 1;
	w.start = s - (s & (width - 1));
	if (__builtin_mul_overflow(n, width, &w.end) || __builtin_add_overflow(w.start, w.end - 1, &w.end))
		w.end = INT64_MAX;
	w.start_given = w.end_given = 1; /* as the viewer asks: both ends */
	if ((db = tracedb_open_readonly(db_path, &why)) == NULL)
		return;
	jb_init(&b);
	qry_overview(db, &w, (uint32_t)n, &b, &err);
	jb_fini(&b);
	sqlite3_close(db);
}

/*
 * Reads the trace's level of detail once the trace is ready, so that the
 * first requests of each zoom find it in the page cache too. Measured on
 * the 1 GB bench archive with the page cache emptied: the first viewport
 * requests of a zoom took 20 to 90 ms (a 140 ms window: 35 to 40 ms for
 * one in twenty at random places), where with the lod table read first
 * (300 MB, 1.1 s) none above 15 ms but for noise. On bench-large's 4 GB
 * archive the table is 1.1 GB. It runs on the worker after the trace is
 * ready (the next queued ingest waits for it); a failure only leaves the
 * pages where they were.
 */
static void warm_lod(const char *db_path, int (*stop)(void *), void *ctx)
{
	const char *why;
	sqlite3 *db = tracedb_open_readonly(db_path, &why);

	if (db == NULL)
		return;
	if (stop)
		sqlite3_progress_handler(db, 100000, stop, ctx);
	/* whole pages read, not just the bytes a memory map would touch */
	sqlite3_exec(db, "PRAGMA mmap_size=0; SELECT sum(length(buckets)) FROM lod", NULL, NULL, NULL);
	sqlite3_close(db);
}

int cat_warm_child_main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[2], "first") == 0) {
		warm_first_view(argv[3], strtoll(argv[4], NULL, 10), strtoll(argv[5], NULL, 10));
		return 0;
	}
	if (argc == 4 && strcmp(argv[2], "lod") == 0) {
		warm_lod(argv[3], NULL, NULL);
		return 0;
	}
	fprintf(stderr, "usage: trace-server warm-child first DB START_NS END_NS | lod DB (the server runs it)\n");
	return 2;
}

static int warm_stop(void *ctx)
{
	struct catalog *c = ctx;
	int stop;

	pthread_mutex_lock(&c->mu);
	stop = c->stop;
	pthread_mutex_unlock(&c->mu);
	return stop;
}

/* Runs "<exe> warm-child WHAT DB [START END]" (argv from argv[2] on) to its
 * end or the catalog's stop; a failure is logged, nothing else. */
static void warm_apart(struct catalog *c, char **args, int nargs)
{
	static char arg1[] = "warm-child";
	char exe[4096], said[64], *argv[8] = { exe, arg1 };
	int status = 0, i;

	if ((size_t)snprintf(exe, sizeof(exe), "%s", c->o.ingest_exe) >= sizeof(exe))
		return;
	for (i = 0; i < nargs && i < 5; i++)
		argv[2 + i] = args[i];
	argv[2 + i] = NULL;
	if (run_apart(exe, argv, warm_stop, c, said, sizeof(said), &status) < 0)
		fprintf(stderr, "trace-server: cannot start warming %s: %s\n", args[1], strerror(errno));
}

void cat_warm_first_view(struct catalog *c, const char *db_path, int64_t start_ns, int64_t end_ns)
{
	static char what[] = "first";
	char db[4096], s[24], e[24], *args[] = { what, db, s, e };

	if (c->o.ingest_exe == NULL || (size_t)snprintf(db, sizeof(db), "%s", db_path) >= sizeof(db)) {
		warm_first_view(db_path, start_ns, end_ns);
		return;
	}
	snprintf(s, sizeof(s), "%" PRId64, start_ns);
	snprintf(e, sizeof(e), "%" PRId64, end_ns);
	warm_apart(c, args, 4);
}

void cat_warm_lod(struct catalog *c, const char *db_path)
{
	static char what[] = "lod";
	char db[4096], *args[] = { what, db };

	if (c->o.ingest_exe == NULL || (size_t)snprintf(db, sizeof(db), "%s", db_path) >= sizeof(db)) {
		warm_lod(db_path, warm_stop, c);
		return;
	}
	warm_apart(c, args, 2);
}
