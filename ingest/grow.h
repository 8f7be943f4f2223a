/*
 * A trace that grows as its bytes arrive, ingested once, in a process of
 * its own (issue 41; docs/API.md, "A trace while its bytes arrive").
 *
 * "<exe> grow-child" follows a source file that another process appends
 * to: its parent tells it how long the file is ("size N") and when it
 * ends ("end"), and it feeds the new bytes to a stream (ingest.h,
 * ingest_stream_*) that decodes, orders and matches them as they come and
 * commits the database in place, in WAL mode, so that readers read each
 * commit whole (commit.h) while the next is written. It reports each
 * commit (what the trace holds then: its time range, counts and the
 * source's bytes it holds), how far it has read every few megabytes, and
 * at the end the ingest's result, in child.c's line protocol. The database it ends with is the one ingesting
 * the same bytes as a file with the same options gives, row for row.
 *
 * Commits come at most every commit_ms while bytes arrive (and take at
 * most a fifth of the time), and at once when they stop. Events are
 * matched as the order's window allows (sorter.h), so a commit holds what
 * came up to a little before the newest bytes, and slices still open show
 * as open. Once bytes stop for pause_ms, a copy of the process (fork)
 * writes the rest as the end of the input would, in a layer of its own
 * that the next commit undoes (ingest.h, ingest_stream_pause): a paused
 * trace equals ingesting the bytes received as a file, row for row.
 */
#ifndef INGEST_GROW_H
#define INGEST_GROW_H

#include <stdint.h>

#include "ingest.h"

struct ingest_grow;

/* What ingest_grow_read found. */
enum grow_report {
	GROW_NONE = 0,  /* nothing new yet */
	GROW_COMMIT,    /* a commit: *res and *bytes say what the trace holds;
			 * *exact 1: a pause's, the trace as a file of *bytes */
	GROW_DONE,      /* the end: *res is the result, *rc ingest_file's return */
	GROW_DIED,      /* the process ended without a result (*rc says how, res->error why) */
};

/* Starts following src into db (created; opts as for ingest_file, of
 * which it reads format, sort_budget, extent_rows, order_window and
 * expect_bytes); exe
 * as for ingest_file_apart. After pause_ms without new bytes (0: never;
 * -1: the default, 300 ms) the trace shows every byte received, as a file
 * of them would (ingest.h, ingest_stream_pause). Commits come at most
 * every commit_ms while bytes arrive (-1: the default, 200 ms; 0: after
 * every piece matched, whatever the machine's speed: tests that need
 * commits at given points). NULL with a sentence in err on failure. */
struct ingest_grow *ingest_grow_start(const char *exe, const char *src, const char *db, const struct ingest_opts *o,
				      int64_t pause_ms, int64_t commit_ms, char *err, size_t errlen);
/* The source now holds size bytes; 0, or -1 when the process is gone. */
int ingest_grow_size(struct ingest_grow *g, uint64_t size);
/* The source ends at the size told last; 0, or -1. */
int ingest_grow_end(struct ingest_grow *g);
/* The file descriptor its reports come on (poll it for reading). */
int ingest_grow_fd(const struct ingest_grow *g);
/* Reads what the process reported: GROW_NONE (nothing whole yet), a commit
 * (GROW_COMMIT), or its end (GROW_DONE, GROW_DIED). Does not block unless
 * wait_ms > 0, then waits up to that for a report. */
enum grow_report ingest_grow_read(struct ingest_grow *g, int wait_ms, struct ingest_result *res, uint64_t *bytes,
				  int *exact, int *rc);
/* The bytes of the source it has read so far (decoded; its commits hold
 * those up to the order's window before them), as of its last report: at
 * least what its last commit holds. */
uint64_t ingest_grow_fed(const struct ingest_grow *g);
/* Stops it (killed unless it ended) and frees it; kill: the database is
 * removed too, else left as it is. */
void ingest_grow_free(struct ingest_grow *g, int kill);

/* The child's side ("grow-child"): returns the process's exit status. */
int ingest_grow_child_main(void);

#endif
