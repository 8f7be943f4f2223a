/*
 * libFuzzer target for a trace that grows as its bytes arrive (ingest.h,
 * "A trace while its bytes arrive"): the same input ingested as a file and
 * as a growing stream, fed in pieces cut where the input's hash says and
 * committed between pieces, must come to the same database. Properties:
 *
 *   G1 Each commit a reader sees keeps the rules of a commit
 *      (tests/db_compare.h, dbc_commit_rules): groups, extents, parents,
 *      arrows, logs and cpu runs read whole.
 *   G2 A pause (at one commit the input's hash picks): the layer that a
 *      copy of the stream's process writes (ingest_stream_pause, in a fork,
 *      as ingest/grow.c does) is written exactly when the bytes fed so far
 *      ingest as a file, and then every table equals that file's; the
 *      stream then goes on (ingest_stream_unpause).
 *   G3 The stream fails exactly when the file's ingest fails; when both
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
 * FZ_GROW_MAX bytes are skipped (three ingests into SQLite each). Files go to
 * $FUZZ_TMPDIR, else /dev/shm, else /tmp, under names holding the process
 * id, and are removed after each input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "../tracedb/tracedb.h"
#define FZ_NAME "fuzz_grow"
#include "fuzz_util.h"
#include "db_compare.h"

enum { FZ_GROW_MAX = 65536 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

/* Paths of one input's files. */
struct fz_paths {
	char in[512], a[512], b[512], prefix[512], c[512], undo[512];
};

/* G2: the stream s into p->b paused after its commit of data[0, fed),
 * then goes on; INGEST_OK, or the unpause's error. */
static int fz_pause(struct ingest_stream *s, const struct fz_paths *p, const struct ingest_opts *file,
		    const uint8_t *data, size_t fed)
{
	struct ingest_result res;
	char why[512];
	int status, rc, layer;
	pid_t pid;
	FILE *f;

	if (ingest_stream_pause_mark(s) != INGEST_OK)
		return INGEST_OK; /* no layer: the trace shows its last commit */
	if ((pid = fork()) < 0)
		fz_fail("fork"); /* the environment, not the input */
	if (pid == 0)
		_exit(ingest_stream_pause(s, p->undo) == INGEST_OK ? 0 : 1); /* nothing of the parent's is flushed */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			fz_fail("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		fz_fail("the pause's layer died of signal %d", WTERMSIG(status));
	layer = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if ((f = fopen(p->prefix, "wb")) == NULL || fwrite(data, 1, fed, f) != fed || fclose(f) != 0)
		fz_fail("cannot write %s", p->prefix);
	rc = ingest_file(p->prefix, p->c, file, &res);
	if (layer != (rc == INGEST_OK))
		fz_fail("paused after %zu bytes: the layer %s, the file of those bytes %s (%s)", fed,
			layer ? "was written" : "failed", ingest_strerror(rc), rc == INGEST_OK ? "" : res.error);
	if (layer && dbc_tables_differ(p->b, p->c, why, sizeof(why)) != 0) /* or unreadable: why says */
		fz_fail("paused after %zu bytes, the trace is not the file of those bytes: %s", fed, why);
	tracedb_remove(p->c);
	unlink(p->prefix);
	return ingest_stream_unpause(s, p->undo);
}

/* The input as a growing stream into p->b; what ingest_stream_end
 * returned, or the first error before it. */
static int fz_stream(const uint8_t *data, size_t size, const struct fz_paths *p, const struct ingest_opts *o,
		     const struct ingest_opts *file, uint64_t seed)
{
	struct ingest_result res;
	struct ingest_stream *s;
	size_t off = 0;
	int rc = INGEST_OK, committed, commits = 0, pause_at = (int)(fz_next(&seed) % 4);
	const char *db = p->b;

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
			if (rc == INGEST_OK && commits++ == pause_at)
				rc = fz_pause(s, p, file, data, off);
		}
	}
	if (rc == INGEST_OK)
		rc = ingest_stream_end(s);
	ingest_stream_free(s);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_paths p;
	struct ingest_opts o = { 0 }, file;
	struct ingest_result res;
	uint64_t seed = fz_hash(data, size);
	char why[512];
	int ra, rb;
	FILE *f;

	if (size > FZ_GROW_MAX)
		return 0;
	fz_scratch_path(p.in, sizeof(p.in), "in");
	fz_scratch_path(p.a, sizeof(p.a), "a.db");
	fz_scratch_path(p.b, sizeof(p.b), "b.db");
	fz_scratch_path(p.prefix, sizeof(p.prefix), "prefix");
	fz_scratch_path(p.c, sizeof(p.c), "c.db");
	fz_scratch_path(p.undo, sizeof(p.undo), "undo");
	if ((f = fopen(p.in, "wb")) == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		fz_fail("cannot write %s", p.in); /* the environment, not the input */
	o.extent_rows = 1 + (size_t)(fz_next(&seed) % 64);
	o.sort_budget = 64 << (fz_next(&seed) % 4);
	file = o;
	ra = ingest_file(p.in, p.a, &file, &res);
	o.growing = 1;
	o.commit_rows = fz_next(&seed) % 2 ? 1 + (size_t)(fz_next(&seed) % 16) : 0;
	rb = fz_stream(data, size, &p, &o, &file, seed);
	if ((ra == INGEST_OK) != (rb == INGEST_OK))
		fz_fail("the file's ingest %s (%s), the growing stream's %s", ingest_strerror(ra),
			ra == INGEST_OK ? "" : res.error, ingest_strerror(rb));
	if (ra == INGEST_OK && dbc_tables_differ(p.b, p.a, why, sizeof(why)) != 0) /* or unreadable: why says */
		fz_fail("the growing stream's database is not the file's: %s", why);
	tracedb_remove(p.a);
	tracedb_remove(p.b);
	unlink(p.in);
	unlink(p.undo);
	return 0;
}
