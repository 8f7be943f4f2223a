/*
 * trace-server: the command line.
 *
 *   trace-server ingest FILE [-o OUT.db] [--extent-rows N]   ingest an archive into a database
 *   trace-server info FILE                 record statistics, nothing stored
 *   trace-server serve [options]           the HTTP server (server/http.c)
 *   trace-server stream FILE|-             a growing file or stdin as a live trace (client/)
 *   trace-server record -- cmd args        a program linking provider/ recorded (client/)
 *   trace-server migrate --from DIR --catalog URL --store URL
 *                                          a --data library into PostgreSQL and S3 (catalog/migrate.c)
 *
 * On a terminal, ingest draws a progress bar (bytes, events/s, ETA) on
 * stderr and ends with a summary: counts per kind, providers, diagnostics.
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../catalog/catalog.h"
#include "../client/client.h"
#include "../ingest/child.h"
#include "../ingest/grow.h"
#include "../ingest/ingest.h"
#include "../ingest/util.h"
#include "server.h"

struct bar {
	int tty;
	double t0;
	double last;
	uint64_t total_bytes;
};

static const char *const phase_names[INGEST_PHASES] = { "decoding", "matching", "writing", "indexing" };

static int bar_update(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct bar *b = ctx;
	double t = ingest_now_s(), el = t - b->t0, frac = total ? (double)done / (double)total : 0;
	char fill[31];
	int i, w;

	if (!b->tty || (t - b->last < 0.1 && done != total))
		return 0;
	b->last = t;
	w = (int)(frac * 30);
	for (i = 0; i < 30; i++)
		fill[i] = i < w ? '#' : '.';
	fill[30] = '\0';
	if (phase == INGEST_PHASE_DECODE)
		fprintf(stderr, "\r%-9s [%s] %5.1f%% %7.1f MB  %8.0f events/s  ETA %4.0fs ", phase_names[phase],
			fill, frac * 100, (double)done / 1e6, el > 0 ? (double)events / el : 0,
			frac > 0 ? el / frac - el : 0);
	else
		fprintf(stderr, "\r%-9s [%s] %5.1f%% %10" PRIu64 " rows %40s", phase_names[phase], fill, frac * 100,
			done, "");
	fflush(stderr);
	return 0;
}

static void print_summary(const char *out, const struct ingest_result *r, double secs)
{
	const struct ingest_counts *c = &r->counts;
	unsigned i;

	printf("ingested %s (%.1f MB) into %s in %.2f s: %.0f events/s, %.1f MB/s\n", r->format,
	       (double)r->bytes / 1e6, out, secs, secs > 0 ? (double)c->events / secs : 0,
	       secs > 0 ? (double)r->bytes / 1e6 / secs : 0);
	printf("  time       %" PRId64 " .. %" PRId64 " ns\n", r->start_ns, r->end_ns);
	printf("  events %" PRIu64 "  slices %" PRIu64 "  counters %" PRIu64 "  flows %" PRIu64 "  sched %" PRIu64
	       "  logs %" PRIu64 "\n",
	       c->events, c->slices, c->counters, c->flows, c->sched, c->logs);
	printf("  processes %" PRIu64 "  threads %" PRIu64 "  tracks %" PRIu64 "  args %" PRIu64 "  blobs %" PRIu64
	       "  objects %" PRIu64 "  profiler %" PRIu64 "  providers %u\n",
	       c->processes, c->threads, c->tracks, c->args, c->blobs, c->objects, c->profiler, r->nproviders);
	printf("  seconds   ");
	for (i = 0; i < INGEST_PHASES; i++)
		printf(" %s %.1f", phase_names[i], r->phase_seconds[i]);
	printf("\n");
	for (i = 0; i < r->ndiag; i++)
		if (r->diag_value[i])
			printf("  diagnostic %s: %" PRIu64 "\n", r->diag_name[i], r->diag_value[i]);
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: trace-server serve [--port N] [--bind ADDR] [--data DIR] [--token-file F]\n"
		   "                          [--max-upload SIZE] (see trace-server serve --help)\n"
		   "       trace-server ingest FILE [-o OUT.db] [--extent-rows N]\n"
		   "       trace-server info FILE\n"
		   "       trace-server stream [--server URL] [--name NAME] FILE|-   (see trace-server stream --help)\n"
		   "       trace-server record [--server URL] [--mode streaming|circular|oneshot] -- command [args...]\n"
		   "       trace-server migrate --from DIR --catalog postgres://... --store s3://...\n");
	return rc;
}

static int cmd_ingest(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	char def[4096];
	struct ingest_opts o = { 0 };
	struct ingest_result r;
	struct bar b = { 0 };
	double t0;
	int i, rc;

	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--extent-rows") == 0 && i + 1 < argc)
			o.extent_rows = strtoul(argv[++i], NULL, 10); /* a live trace's layout (docs/API.md) */
		else if (argv[i][0] != '-' && in == NULL)
			in = argv[i];
		else
			return usage(stderr, 2);
	}
	if (in == NULL)
		return usage(stderr, 2);
	if (out == NULL) {
		snprintf(def, sizeof(def), "%s.db", in);
		out = def;
	}
	b.tty = isatty(2);
	b.t0 = t0 = ingest_now_s();
	o.progress = bar_update;
	o.progress_ctx = &b;
	rc = ingest_file(in, out, &o, &r);
	if (b.tty)
		fprintf(stderr, "\r%100s\r", "");
	if (rc != INGEST_OK) {
		fprintf(stderr, "trace-server: %s: %s\n", in, r.error);
		return 1;
	}
	print_summary(out, &r, ingest_now_s() - t0);
	return 0;
}

static int cmd_info(int argc, char **argv)
{
	char err[512];

	if (argc != 3)
		return usage(stderr, 2);
	if (ingest_info(argv[2], stdout, err, sizeof(err)) != INGEST_OK) {
		fprintf(stderr, "trace-server: %s: %s\n", argv[2], err);
		return 1;
	}
	return 0;
}

/*
 * trace-server migrate --from DIR --catalog URL --store URL: the library
 * under DIR into a shared catalog and store (docs/DEPLOY.md). Keys come
 * from the environment as for serve. 0, 1 on failure, 2 on bad usage.
 */
static int cmd_migrate(int argc, char **argv)
{
	const char *from = NULL, *catalog = NULL, *store = NULL;
	struct cat_migrate_stats st;
	char err[1024];
	int i;

	for (i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--from") == 0)
			from = argv[i + 1];
		else if (strcmp(argv[i], "--catalog") == 0)
			catalog = argv[i + 1];
		else if (strcmp(argv[i], "--store") == 0)
			store = argv[i + 1];
		else
			return usage(stderr, 2);
	}
	if (i != argc || !from || !catalog || !store || strncmp(store, "s3://", 5) != 0)
		return usage(stderr, 2);
	if (srv_catalog_url_ok(catalog) != 0) {
		fprintf(stderr, "trace-server migrate: --catalog must be postgres://user@host:port/db, its password in "
				"PGPASSWORD or ~/.pgpass\n");
		return 2;
	}
	if (cat_migrate(from, catalog, store, stdout, &st, err, sizeof(err)) != 0) {
		fprintf(stderr, "trace-server migrate: %s\n", err);
		return 1;
	}
	printf("%u migrated, %u skipped (already there), %u left out; %.1f MB sent to the store\n", st.migrated,
	       st.skipped, st.left_out, (double)st.bytes / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	/* Big arrays (events, slices) grow by realloc: a fixed mmap threshold
	 * keeps them in their own mappings, which grow in place (mremap) instead
	 * of being copied, so peak memory is what is used, not twice that.
	 * Below it, what a thread frees stays in its arena for its next request
	 * (up to the trim threshold) instead of going back to the system at
	 * each free: a reply of a megabyte would otherwise be paid again in
	 * page faults by every request that builds one, the most of a zoomed-out
	 * viewport's time on this machine. */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, (int)HEAP_TRIM_THRESHOLD);
	/* SQLite's memory statistics take a global lock on every allocation,
	 * which every query thread would contend on; we never read them. */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	if (argc < 2)
		return usage(stderr, 2);
	if (strcmp(argv[1], "serve") == 0) {
		struct srv_opts o;
		int rc = srv_parse_args(argc, argv, &o);

		return rc == 1 ? 0 : rc ? rc : srv_run(&o);
	}
	if (strcmp(argv[1], "ingest") == 0)
		return cmd_ingest(argc, argv);
	if (strcmp(argv[1], "ingest-child") == 0) /* the server's own ingests (ingest/child.h) */
		return ingest_child_main();
	if (strcmp(argv[1], "grow-child") == 0) /* a trace ingested as its bytes arrive (ingest/grow.h) */
		return ingest_grow_child_main();
	if (strcmp(argv[1], "source-child") == 0) /* the server's compression of a source (catalog/source.c) */
		return cat_source_child_main(argc, argv);
	if (strcmp(argv[1], "warm-child") == 0) /* the server's warming of a ready trace (catalog/warm.c) */
		return cat_warm_child_main(argc, argv);
	if (strcmp(argv[1], "info") == 0)
		return cmd_info(argc, argv);
	if (strcmp(argv[1], "stream") == 0)
		return cl_stream_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "migrate") == 0)
		return cmd_migrate(argc, argv);
	if (strcmp(argv[1], "record") == 0)
		return cl_record_main(argc, argv); /* argv[1] is "record" */
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return usage(stdout, 0);
	return usage(stderr, 2);
}
