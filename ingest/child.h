/*
 * An ingest in a process of its own.
 *
 * A server ingests for as long as it runs, archives of every size one
 * after another; whatever an ingest allocates (the sorter's budget, the
 * slice store, SQLite's caches, the heaps of its threads) should go back to
 * the system when it ends, whatever malloc keeps, and a decoder that
 * crashes on a hostile file should take nothing else down. So the server
 * runs each ingest as "<exe> ingest-child": the parent writes the request
 * (ingest_file's arguments) to the child's standard input and reads its
 * progress and result from its standard output, in the line protocol of
 * child.c, which both sides of it share. To the caller it is ingest_file:
 * the same arguments, the same result, progress through the same callback
 * (a non-zero return kills the child, as cancelling an ingest in process
 * stops it), and on any failure no file left at out_db.
 */
#ifndef INGEST_CHILD_H
#define INGEST_CHILD_H

#include <stdio.h>

#include "ingest.h"

/*
 * ingest_file in a child process running exe (on Linux "/proc/self/exe":
 * this very program, which must answer "ingest-child" with
 * ingest_child_main()); exe NULL runs it in this process. A child that
 * dies without a result fails the ingest: INGEST_ENOMEM when it was killed
 * (the kernel's answer to memory running out), else INGEST_ECRASH. The
 * caller ignores SIGPIPE (a child that died early closes its input).
 */
int ingest_file_apart(const char *exe, const char *in_path, const char *out_db, const struct ingest_opts *opts,
		      struct ingest_result *res);

/* The child's side: reads a request on standard input, ingests, and
 * reports on standard output. Returns the process's exit status. */
int ingest_child_main(void);

/* The protocol's result lines ("r <field> <value>"), shared with grow.c:
 * writes every field of r; takes one line (without "r ") into r. */
void ingest_result_put(FILE *out, const struct ingest_result *r);
void ingest_result_take(struct ingest_result *r, char *line);
/* A number of the protocol. */
uint64_t ingest_child_num(const char *s);

#endif
