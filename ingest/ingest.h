/*
 * Ingest: turns a trace archive into one SQLite database.
 *
 * The pipeline, one stage per header: the driver (ingest.c) maps the
 * archive and feeds it to a decoder (fxt.h, xray.h), which fills a neutral
 * model (model.h); the build stage (build.h) resolves threads and kernel
 * objects (resolve.c), sorts events by (time, file position) and matches
 * durations, async operations, flows and counters (match.c), and writes
 * every table in cluster order with its level of detail (write.c, lod.h)
 * through the database writer (dbwriter.h), whose own thread runs SQLite while the build
 * goes on. The layout is schema/trace.sql. The database is written under a
 * temporary name and renamed into place only when complete, so a crash
 * never leaves a half-written trace behind.
 *
 * Threads, so that both cores work in every phase: while decoding, the
 * sorter sorts and spills a run on a thread of its own; while matching, it
 * merges the spilled runs a batch ahead on another; while writing, the
 * store's writer runs SQLite and the name index and name statistics are
 * built beside the slices (names.c). An XRay log's threads are matched one
 * after another, and each thread's slices are written by a thread of their
 * own while the next is matched (slicewrite.c). Each hands data over whole,
 * under a mutex; nothing else is shared while they run.
 *
 * Memory does not follow the archive's size: events, slices and name notes
 * spill to a scratch file past a budget, and arguments live in a mapped
 * one (sorter.h, slicestore.h).
 *
 * Ingesting a file while it is written (issue 41): the decoders are push
 * parsers and keep nothing of a record once fed, and ingest_file is itself
 * a stream fed the file and ended (ingest_stream_*, below), so there is
 * one path. A stream decodes pieces as they come; the sorter hands on the
 * events below a watermark instead of merging at the end (sorter.h, the
 * rule, and how late events make the stream start again); threads and
 * kernel objects are resolved as they are decoded (build.h, resolve.c)
 * and matching resumes where it stopped (match.c), its arg sets written
 * as slices close. A row's id no longer needs the whole input: with
 * opts->extent_rows, ids are reserved a chunk at a time as slices,
 * counter points and cpu runs are made (extents.h), and the database and
 * every query find a group's rows through its extents
 * (schema/trace.sql). With opts->growing the database is written in
 * place, in WAL mode, a commit at a time (commit.h): what became final,
 * in id order, the slices still open as open, and the level of detail a
 * commit at a time (lod.h); what reads the whole trace (flows, names,
 * stacks...) waits for the end, or a pause, whose layer a copy of the
 * process writes and the stream undoes when it grows again
 * (ingest_stream_pause). grow.h runs it in a process of its own that
 * follows a growing file. An upload is still written at the end (one
 * extent per group: the same rows, but for their ids). XRay is matched
 * at the end (ingest.c says why).
 *
 * A stream's memory while bytes arrive: the events not yet handed on
 * (about the window's, sorter.h); per trace object rather than per event,
 * threads, strings, kernel and userspace objects, tracks, the flows and
 * async operations open; slices, counter points and flows spill past
 * their budgets (build.h) and arguments live in a mapped scratch file.
 * Growing with the input and held until the end: the log records
 * (m->logs, 24 bytes each, written with the tables), the blobs' and
 * profiler records' payloads (m->bytes), and, on the disk, the copy of
 * the input a restart reads and the arguments' scratch file.
 */
#ifndef INGEST_H
#define INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "../tracedb/tracedb.h"

enum ingest_err {
	INGEST_OK = 0,
	INGEST_ENOTTRACE, /* the input is not a trace this server reads */
	INGEST_EIO,       /* reading the input failed */
	INGEST_ENOMEM,    /* out of memory */
	INGEST_EDB,       /* writing the database failed */
	INGEST_ECANCEL,   /* the progress callback asked to stop */
	INGEST_EEMPTY,    /* the input is empty */
	INGEST_ECRASH,    /* the process ingesting it ended without a result (child.h) */
};

const char *ingest_strerror(int err);

enum ingest_phase { INGEST_PHASE_DECODE, INGEST_PHASE_BUILD, INGEST_PHASE_WRITE, INGEST_PHASE_INDEX, INGEST_PHASES };

/* Called now and then; return non-zero to cancel. done/total are bytes while
 * decoding and rows while writing; events counts the events decoded so far. */
typedef int (*ingest_progress_fn)(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total,
				  uint64_t events);

struct ingest_counts {
	uint64_t events, slices, counters, flows, sched, logs, threads, processes;
	uint64_t blobs, objects, profiler, args, tracks;
};

#define INGEST_MAX_DIAG 24
struct ingest_result {
	const char *format;                 /* "fxt", "xray-fdr" */
	int64_t start_ns, end_ns;           /* time range of the events; 0, 0 when none */
	uint64_t bytes;                     /* input bytes */
	struct ingest_counts counts;
	unsigned nproviders;
	unsigned ndiag;
	const char *diag_name[INGEST_MAX_DIAG];
	uint64_t diag_value[INGEST_MAX_DIAG];
	char error[256];                    /* a sentence for the user when the result is not INGEST_OK */
	uint64_t symbols_named;             /* XRay: functions named from opts->symbols */
	char symbols_error[256];            /* why opts->symbols could not be used; "" when it could */
	uint64_t peak_rss;                  /* bytes: the peak resident size of the process that
					     * ingested it, when that was a process of its own
					     * (child.h); 0 in the caller's process */
	double phase_seconds[INGEST_PHASES]; /* wall time of each phase (ingest_now_s), from its
					       * first progress report to the next phase's (the
					       * last to the return) */
	uint64_t order_restarts;            /* a stream (ingest_stream_*) started again from
					     * its first byte: late events (sorter.h), or a
					     * thread's pid revised under matched slices */
	uint64_t order_late;                /* the late events that made it start again */
	uint64_t sched_late;                /* context switches a growing trace's commits left
					     * to the end: behind one already taken on their
					     * cpu (commit_sched.h) */
	uint64_t order_streamed;            /* events a stream matched before its input
					     * ended (in its last start) */
};

struct ingest_opts {
	ingest_progress_fn progress; /* may be NULL */
	void *progress_ctx;
	const char *format;          /* NULL: detect by content; "fxt" or "xray-fdr" to force */
	const char *symbols;         /* XRay: instrumented binary or llvm-xray YAML naming functions; may be NULL */
	size_t sort_budget;          /* events held in memory before they are sorted and spilled to a
				      * temporary file next to out_db (sorter.h); 0 = the default.
				      * Tests set it small to make every trace spill */
	size_t extent_rows;          /* 0: each group of rows (a track and depth's slices, a
				      * counter track's points, a cpu's runs) gets one
				      * extent of ids, in cluster order, once all are known.
				      * Else ids are reserved this many at a time as rows are
				      * made, the layout a capture streamed in needs
				      * (schema/trace.sql, extents); tests read every query
				      * through it */
	uint64_t max_bytes;          /* 0: the whole input; else only its first max_bytes
				      * (a live trace's snapshot of the bytes received,
				      * while more are appended) */
	int growing;                 /* a stream (ingest_stream_*) of FXT with extent_rows:
				      * the database is written in place at out_db, in WAL
				      * mode, and readable from its first commit on
				      * (ingest_stream_commit); else under a temporary name,
				      * renamed into place at the end */
	uint64_t commit_every;       /* FXT with extent_rows: 0, one database written at the
				      * end; else it grows, committed every this many
				      * events matched (commit.h), as a trace read while
				      * its bytes arrive is; tests set it to check that the
				      * commits end where the batch does */
	size_t commit_rows;          /* growing: the slices matched that a commit holds in
				      * memory at most before they are written unseen
				      * (commit.h, publish 0); 0 = 256 K. Tests set it small */
	const char *follows;         /* a stream's (ingest_stream_*) input is this file's
				      * bytes from its first, fed as the file grows (it
				      * only grows): a restart reads them from it again
				      * rather than from a copy kept of every byte fed
				      * (a growing upload's would double its disk) */
	size_t stack_nodes;          /* a track's call paths that ingest keeps at most
				      * (track_stacks, stacks.c); 0 = 1 M, as many as a
				      * flame graph builds. Tests set it small */
	uint64_t order_window;       /* a stream's (ingest_stream_*) window B to start
				      * with, in bytes (sorter.h); 0 = 4 MiB. Tests set it
				      * small */
	uint64_t expect_bytes;       /* growing: the input's whole size when known ahead
				      * (an upload's body); its database then has a file's
				      * pages (tracedb_page_size) up to 16 KB, which a
				      * commit writes again less of than 64 KB ones
				      * (ingest.c, stream_open_db). 0: not known (a live
				      * stream), 16 KB pages */
};

/* The monotonic clock, in seconds, that phase_seconds are measured on: for
 * callers timing what surrounds an ingest on the same scale. */
double ingest_now_s(void);

/* The database is written under out_db's name with this added, and renamed
 * into place only when complete. */
#define INGEST_TMP_SUFFIX ".tmp"

/*
 * Ingests the trace in file in_path into a new database out_db (replaced if
 * it exists). Returns INGEST_OK or an error; res->error then holds a
 * sentence for the user. On error no file is left at out_db.
 */
int ingest_file(const char *in_path, const char *out_db, const struct ingest_opts *opts, struct ingest_result *res);

/*
 * The same ingest, fed the input in pieces as it arrives, so that
 * matching runs while bytes still come (issue 41): decoding, ordering by
 * a watermark (sorter.h), resolving and matching go on as pieces come;
 * the database is written at the end.
 *
 * ingest_stream_open makes a stream writing out_db (under its temporary
 * name; of o it reads what ingest_file does, but max_bytes, which is a
 * file's); NULL on failure, with res->error set.
 * res is the stream's until ingest_stream_free. A copy of every byte fed
 * is kept in a scratch file next to out_db (unlinked), to start again
 * from when the order needs it (below).
 *
 * ingest_stream_feed decodes the next n bytes: any cut, records may be
 * split across pieces. ingest_stream_match orders and matches what the
 * watermark allows now (sorter.h): call it as often as wanted, e.g.
 * between pieces. An event that arrives behind what was matched (LATE,
 * sorter.h), or a thread whose pid a later record revises under slices
 * already matched (build.h), makes the stream start again from the first
 * byte with a wider window (res->order_restarts, order_late; doubled, or
 * widened to the late events' disorder, sorter.h, LATE): it is
 * never dropped nor misplaced. For XRay it does nothing (ingest.c says
 * why): that format is matched at the end.
 *
 * ingest_stream_end decodes and matches the rest, writes every table and
 * renames the database into place: out_db then equals ingest_file's of
 * the same bytes, row for row. Each returns INGEST_OK or an error (the
 * sentence in res->error); after an error, every later call returns it,
 * and after ingest_stream_end every later call returns INGEST_ECANCEL.
 * ingest_stream_free frees the stream, and removes the temporary
 * database unless ingest_stream_end succeeded.
 */
struct ingest_stream;
struct ingest_stream *ingest_stream_open(const char *out_db, const struct ingest_opts *o, struct ingest_result *res);
int ingest_stream_feed(struct ingest_stream *s, const uint8_t *p, size_t n);
int ingest_stream_match(struct ingest_stream *s);
/* 1 unless the stream's last start again took a window that may not hold
 * the disorder that made it (late events wider than sorter.h's
 * SORTER_WIDEN_MAX, or a pid revised): then it may well start again, and
 * matching more before the end may be work done twice (grow.c). */
int ingest_stream_settled(const struct ingest_stream *s);
int ingest_stream_end(struct ingest_stream *s);
/* A growing stream's commit (o->growing; commit.h): matches what the
 * watermark allows and commits it, with the slices still open, so that
 * readers of out_db see it; res then says what the database holds (time
 * range, counts; bytes: the input fed so far), and *committed is 1.
 * Nothing (*committed 0) for a stream not growing, or that has matched
 * nothing yet (since its start, or since it started again: late events;
 * the commit that follows then replaces the last one whole, holding the
 * trace made again so far). INGEST_OK or an error, as the others. */
int ingest_stream_commit(struct ingest_stream *s, int *committed);
/* The same, giving the commit's ticket: readers see it once
 * ingest_stream_published says so of *ticket, which waits for it when
 * asked to (wait 1) and sets *seen 1 once it is in the file; meanwhile
 * decoding and matching go on while the writer writes it. Each returns
 * INGEST_OK or an error, as the others. */
int ingest_stream_commit_queued(struct ingest_stream *s, int *committed, uint64_t *ticket);
int ingest_stream_published(struct ingest_stream *s, uint64_t ticket, int wait, int *seen);

/*
 * A growing stream that paused: its database is to equal, row for row,
 * ingesting the bytes fed so far as a file (every event matched, what is
 * open finished as the end of the input finishes it), without disturbing
 * the stream, which goes on when bytes come again. So the stream's
 * process notes where its database stands (ingest_stream_pause_mark),
 * and a copy of it (fork, right after a commit, nothing in flight) calls
 * ingest_stream_pause: on a connection of its own it ends that copy of
 * the stream as ingest_stream_end would but for the indexes, recording
 * every change; it writes what undoes them to the file undo, then commits
 * them (readers see the trace as a file's), and the copy exits. Before it
 * matches or commits again, the stream calls ingest_stream_unpause, which
 * undoes that layer in its own next commit when it was committed (a copy
 * killed first left nothing). INGEST_OK or an error, as the others.
 */
int ingest_stream_pause_mark(struct ingest_stream *s); /* the stream's process, before the fork */
int ingest_stream_pause(struct ingest_stream *s, const char *undo);
int ingest_stream_unpause(struct ingest_stream *s, const char *undo);
void ingest_stream_free(struct ingest_stream *s);

/*
 * Names the XRay functions ("fn#<id>") of an ingested trace from an
 * instrumented ELF binary or the YAML of `llvm-xray extract --symbolize`.
 * Returns 0 with *named set, or -1 with a sentence in err.
 */
int ingest_symbolize(const char *db_path, const char *symbols_path, uint64_t *named, char *err, size_t errlen);

/* Record statistics of an FXT file without storing anything; prints to out. */
int ingest_info(const char *in_path, void *out_file, char *err, size_t errlen);

/* Detects the format by the first bytes: "fxt", or NULL when unknown. */
const char *ingest_detect(const uint8_t *buf, size_t n);

#endif
