/*
 * The ingest module's database writer (not the object store of store/, nor
 * the catalog's storage of trace files): a database being loaded and a
 * batched inserter. Only ingest/ uses this header.
 */
#ifndef INGEST_DBWRITER_H
#define INGEST_DBWRITER_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "behind.h"

struct dbw_job;
struct dbw_stmt;

/*
 * A database being loaded. Inserts run on a writer thread of their own, fed
 * through a bounded queue of jobs, so that building rows and SQLite's work on
 * them overlap (two cores halve the write phase's wall time at best). While
 * jobs are queued the connection belongs to the writer: everything else that
 * uses it (preparing, executing, finalizing) drains the queue first. A job
 * owns copies of its values.
 */
struct dbwriter {
	sqlite3 *db;
	char error[512];         /* the first failure, a sentence for the log */
	int failed;              /* sticky, set by the writer thread; under mu */
	pthread_t writer;
	int writer_started;
	pthread_mutex_t mu;      /* guards everything below */
	pthread_cond_t work;     /* jobs queued or stop: the writer wakes */
	pthread_cond_t done;     /* jobs finished: producers and drains wake */
	struct dbw_job *head, *tail;
	struct dbw_job *free;  /* finished jobs kept for reuse, each of full size */
	struct dbw_stmt *orphans; /* statements finalize could not queue (no memory): dbw_close's */
	struct dbw_stmt *stmts;  /* every statement made and not yet freed (dbw_reopen_child) */
	unsigned queued;         /* jobs not yet finished, bounded by queue_max */
	unsigned queue_max;      /* STORE_QUEUE, or STORE_QUEUE_GROWING (dbw_open_growing) */
	uint64_t submitted;      /* jobs queued so far, and finished so far: tickets */
	uint64_t finished;
	uint64_t ticket_wait;    /* a producer waits until finished reaches it (0: none) */
	int writer_idle;         /* the writer waits on work: signal it */
	int waiting;             /* a producer waits on done for room: signal it */
	int stop;
	struct behind behind;    /* the file's written pages leave the cache (behind.h); the writer's */
	unsigned since_behind;   /* jobs run since the writer last looked at the file's size */
	int growing;             /* dbw_open_growing's. Its bins insert OR IGNORE and
				  * count the rows each step inserted: in WAL mode a
				  * multi-row INSERT that may abort midway keeps a
				  * statement journal, a copy of every page it changes
				  * that was in the file, so that it can be undone
				  * alone; one that cannot abort keeps none. A row
				  * refused (NULL in a NOT NULL column, an id taken)
				  * fails the writer as an aborted insert would: on
				  * the 200 MB archive, 0.89 of the time growing.
				  * And its bins copy every text and blob they are
				  * given, which the job frees once it ran: a growing
				  * trace's commit does not wait for the writer
				  * (commit.h), and the texts of its small tables lie
				  * where decoding moves them */
};

/* Jobs queued at most: a batch's rows come steadily; a growing trace's
 * come in bursts (a commit's, its rows bound), which the queue takes whole
 * so that matching goes on while the writer writes them (on a 200 MB
 * archive, 7.2 s against 8.9 s with the batch's queue; about 50 MB more
 * at most, each job holding BINS_ROWS rows). */
enum { STORE_QUEUE = 256, STORE_QUEUE_GROWING = 2048, STORE_WAKE = 8 };

enum { BINS_ROWS = 64, BINS_MAX_COLS = 16 };
/* A value's type beside SQLite's: a uint64 bound as its decimal text (bins_u64). */
enum { BINS_U64 = 100 };

/* One value to bind; 16 bytes, since millions pass from thread to thread. */
struct bins_val {
	int type;      /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL,
			* BINS_U64 */
	int n;         /* text or blob bytes; -1 for a NUL-terminated text */
	union {
		int64_t i;     /* SQLITE_INTEGER; BINS_U64: the bits */
		double d;      /* SQLITE_FLOAT */
		const void *p; /* text or blob; must stay valid until the next dbw_drain() */
	};
};

/*
 * A multi-row INSERT into one table: values are bound column by column,
 * bins_row() ends a row, and every BINS_ROWS rows go to SQLite at once.
 * Values are written straight into a job of the store's queue, which goes
 * to the writer thread whole: nothing is copied on the way.
 */
struct bins {
	struct dbwriter *s;
	struct dbw_stmt *multi; /* BINS_ROWS rows */
	struct dbw_stmt *one;   /* one row, for the rest at the end */
	int ncols;
	int rows;                /* complete rows buffered */
	int col;                 /* next column of the current row */
	int failed;              /* sticky; the reason is in s->error */
	int replace;             /* INSERT OR REPLACE (bins_init_replace) */
	char *copies;            /* the job's texts and blobs, copied (growing) */
	size_t copied, copies_cap;
	struct dbw_job *job;   /* the job being filled; NULL once failed */
	struct bins_val *vals;   /* its values, or spare once failed */
	struct bins_val spare[BINS_MAX_COLS]; /* where values go once failed */
};

/* Creates the file (replacing one there) with pages of page_size bytes
 * (tracedb_page_size), the schema, opens a transaction and starts the
 * writer thread. */
int dbw_open(struct dbwriter *s, const char *path, unsigned page_size);
/*
 * Statements are prepared, run and finalized by the writer thread, in queue
 * order, so that nothing waits for the connection between tables. The
 * returned handle is valid until dbw_finalize(); NULL when out of memory.
 * A statement that fails to prepare fails the store (s->error).
 */
struct dbw_stmt *dbw_prepare(struct dbwriter *s, const char *sql);
void dbw_finalize(struct dbwriter *s, struct dbw_stmt *st);
/* Fails the store for a reason of its caller's (a sentence), unless it
 * failed already: later jobs are skipped, and s->error says why. */
void dbw_fail(struct dbwriter *s, const char *why);
/* Whether a job has failed so far (without waiting for the queue). */
int dbw_failed(struct dbwriter *s);
/* Queues one execution of st with these values (copied; text and blobs are
 * not: they must outlive the job, that is the next dbw_drain(), except
 * `owned`, freed after it). */
int dbw_submit(struct dbwriter *s, struct dbw_stmt *st, const struct bins_val *vals, int n, void *owned);
/* Waits until every job queued so far has run (dbw_wait on a ticket
 * taken now); returns -1 if any failed. */
int dbw_drain(struct dbwriter *s);
/*
 * A ticket for the jobs queued so far, and a wait until those have run,
 * whatever other producers queue meanwhile. Values the jobs pointed to
 * may then be reused. dbw_wait returns -1 if a job failed.
 */
uint64_t dbw_ticket(struct dbwriter *s);
int dbw_wait(struct dbwriter *s, uint64_t ticket);
/* Without waiting: 1 once the jobs of the ticket have run, 0 while they
 * have not, -1 once a job failed. */
int dbw_reached(struct dbwriter *s, uint64_t ticket);
int dbw_commit(struct dbwriter *s);
/* As dbw_open, for a database read while it grows (a growing trace,
 * commit.h): in WAL mode with shared locks, so that readers read the last
 * commit while the writer writes the next. */
int dbw_open_growing(struct dbwriter *s, const char *path, unsigned page_size);
/* In a process forked from the one that opened s, with s drained then:
 * gives s a connection of its own to the database at path (WAL mode, a
 * stage of its own, in a transaction) and a writer thread, and makes
 * every statement of s again on it. 0, or -1 with s->error. */
int dbw_reopen_child(struct dbwriter *s, const char *path);
/* Frees p (malloc'd) once every job queued so far has run: memory those
 * jobs read (blobs), handed over instead of waiting for them. 0, or -1
 * (out of memory: p is still the caller's, who must drain first). */
int dbw_release(struct dbwriter *s, void *p);
/* Queues one run of a statement without values (a DELETE, COMMIT, BEGIN):
 * it runs in queue order on the writer thread. 0, or -1 (out of memory). */
int dbw_queue_sql(struct dbwriter *s, const char *sql);
/* The same with two integers bound, ?1 and ?2. */
int dbw_queue_sql2(struct dbwriter *s, const char *sql, int64_t a, int64_t b);
int dbw_index(struct dbwriter *s);
/* Stops the writer thread and closes the database. */
void dbw_close(struct dbwriter *s);
int dbw_meta(struct dbwriter *s, const char *key, const char *text, int64_t num);

int bins_init(struct bins *b, struct dbwriter *s, const char *table, int ncols);
/* The same with INSERT OR REPLACE: a row whose key is there replaces it. */
int bins_init_replace(struct bins *b, struct dbwriter *s, const char *table, int ncols);
void bins_i64(struct bins *b, int64_t v);
void bins_dbl(struct bins *b, double v);
/* A uint64 past INT64_MAX, which SQLite's integers cannot hold: stored as its
 * decimal text, exactly (tracedb.h, "Counter values"). */
void bins_u64(struct bins *b, uint64_t v);
void bins_null(struct bins *b);
void bins_text(struct bins *b, const char *p, int n);
void bins_blob(struct bins *b, const void *p, int n);
/* Ends a row; returns -1 once an insert has failed. */
int bins_row(struct bins *b);
/* Queues the rows buffered so far; returns -1 once an insert has failed. */
int bins_flush(struct bins *b);
/* Flushes the remaining rows and finalizes; returns -1 if any insert failed. */
int bins_fini(struct bins *b);

#endif
