/*
 * libFuzzer target for a trace that grows as its bytes arrive (ingest.h,
 * "A trace while its bytes arrive"): the same input ingested as a file and
 * as a growing stream, fed in pieces cut where the input's hash says and
 * committed between pieces, must come to the same database. Properties:
 *
 *   G1 Each commit a reader sees keeps the rules of a commit
 *      (tests/db_compare.h, dbc_commit_rules): groups, extents, parents,
 *      arrows, logs and cpu runs read whole.
 *   G2 The stream fails exactly when the file's ingest fails; when both
 *      succeed, every table of the stream's database holds the file's
 *      rows (dbc_tables_differ).
 *
 * Hostile bytes reach this path on every live stream and every large
 * upload, so it is fuzzed as the decoders are: its seeds are the committed
 * FXT corpus (tests/corpus/fxt) and a few gen_fxt archives of some
 * thousand events, late root begins included (tests/corpus/grow), which
 * `make unit` replays (fuzz_replay_grow). The options vary with the input's hash: chunks of ids
 * of 1 to 64 rows, a sorter that spills every 64 to 512 events, commits
 * that write their slices unseen every few rows or not. Inputs over
 * FZ_GROW_MAX bytes are skipped (two ingests into SQLite each). Files go to
 * $FUZZ_TMPDIR, else /dev/shm, else /tmp, under names holding the process
 * id, and are removed after each input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "../tracedb/tracedb.h"
#define FZ_NAME "fuzz_grow"
#include "fuzz_util.h"
#include "db_compare.h"

enum { FZ_GROW_MAX = 65536 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fz_dir(void)
{
	const char *d = getenv("FUZZ_TMPDIR");

	if (d != NULL && *d)
		return d;
	return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

/* G1: the commit just made, as a reader sees it. */
static void fz_check_commit(const char *db)
{
	char why[512];
	int rc = dbc_commit_broken(db, why, sizeof(why));

	if (rc > 0)
		fz_fail("a commit breaks a rule: %s", why);
	if (rc < 0)
		fz_fail("a commit cannot be read: %s", why);
}

/* The input as a growing stream into db; what ingest_stream_end returned,
 * or the first error before it. */
static int fz_stream(const uint8_t *data, size_t size, const char *db, const struct ingest_opts *o, uint64_t seed)
{
	struct ingest_result res;
	struct ingest_stream *s;
	size_t off = 0;
	int rc = INGEST_OK, committed;

	if ((s = ingest_stream_open(db, o, &res)) == NULL)
		fz_fail("ingest_stream_open: %s", res.error); /* the environment, not the input */
	while (rc == INGEST_OK && off < size) {
		size_t piece = 1 + (size_t)(fz_next(&seed) % (size / 4 + 16));

		if (piece > size - off)
			piece = size - off;
		rc = ingest_stream_feed(s, data + off, piece);
		off += piece;
		if (rc == INGEST_OK && fz_next(&seed) % 2 == 0) {
			rc = ingest_stream_commit(s, &committed);
			if (rc == INGEST_OK && committed)
				fz_check_commit(db);
		}
	}
	if (rc == INGEST_OK)
		rc = ingest_stream_end(s);
	ingest_stream_free(s);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[512], a[512], b[512], why[512];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	uint64_t seed = fz_hash(data, size);
	int ra, rb, differ;
	FILE *f;

	if (size > FZ_GROW_MAX)
		return 0;
	snprintf(in, sizeof(in), "%s/fuzz_grow.%ld.in", fz_dir(), (long)getpid());
	snprintf(a, sizeof(a), "%s/fuzz_grow.%ld.a.db", fz_dir(), (long)getpid());
	snprintf(b, sizeof(b), "%s/fuzz_grow.%ld.b.db", fz_dir(), (long)getpid());
	if ((f = fopen(in, "wb")) == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		fz_fail("cannot write %s", in); /* the environment, not the input */
	o.extent_rows = 1 + (size_t)(fz_next(&seed) % 64);
	o.sort_budget = 64 << (fz_next(&seed) % 4);
	ra = ingest_file(in, a, &o, &res);
	o.growing = 1;
	o.commit_rows = fz_next(&seed) % 2 ? 1 + (size_t)(fz_next(&seed) % 16) : 0;
	rb = fz_stream(data, size, b, &o, seed);
	if ((ra == INGEST_OK) != (rb == INGEST_OK))
		fz_fail("the file's ingest %s (%s), the growing stream's %s", ingest_strerror(ra),
			ra == INGEST_OK ? "" : res.error, ingest_strerror(rb));
	if (ra == INGEST_OK) {
		differ = dbc_tables_differ(b, a, why, sizeof(why));
		if (differ != 0)
			fz_fail("the growing stream's database is not the file's: %s", why);
	}
	tracedb_remove(a);
	tracedb_remove(b);
	unlink(in);
	return 0;
}
