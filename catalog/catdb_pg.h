/*
 * What the files of the catalog in PostgreSQL share (catdb_pg.c, the
 * connections and the records; catdb_pg_index.c, the name index and
 * search; catdb_pg_notes.c; catdb_pg_jobs.c): the connections and the
 * calls that take one, and the text forms of values. Nothing outside
 * these files includes it.
 */
#ifndef CATALOG_CATDB_PG_H
#define CATALOG_CATDB_PG_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdint.h>

#include "../json/jbuf.h"
#include "catalog_internal.h"

enum { RECONNECT_MS = 500 };

/* Held by the writers of versions to their commit (any number no other
 * user of the database takes). */
#define LOCK_VERSIONS "SELECT pg_advisory_xact_lock(7975436174951201)"

/* A connection and the lock of the one thread using it. */
struct pg_lane {
	PGconn *conn;          /* under mu */
	pthread_mutex_t mu;
	int64_t retry_ms;      /* monotonic: no reconnect attempt before it */
};

/* Three connections: the records' (used under the catalog's lock), the
 * name index's, searches' and health checks', so that neither a search nor
 * the index of a big trace holds the catalog's lock waiting for the
 * database, and the notes', which every listing of the library reads, so
 * that it never waits behind an index either. */
struct catdb_pg {
	struct catdb base;
	struct pg_lane rec;    /* load, save, remove, next_id */
	struct pg_lane idx;    /* index, unindex, search, ping, jobs */
	struct pg_lane notes;  /* notes */
};

/* libpq's message on one line, without its trailing newline. */
void pg_message(const char *m, char *out, size_t n);
/* Reports a failed statement (res may be NULL) as a sentence, rolls back an
 * open transaction and clears res: CATDB_EDOWN when the connection is gone,
 * else CATDB_EFAIL. */
int pg_fail(struct pg_lane *p, const char *what, PGresult *res, char *err, size_t errlen);
/* A statement with text parameters (NULL = SQL NULL); its result. */
PGresult *pg_run(struct pg_lane *p, const char *sql, int n, const char *const *vals, int binary);
/* Runs sql (no parameters), expecting ok; 0 or -1 (res kept in *out). */
int pg_simple(struct pg_lane *p, const char *sql, ExecStatusType ok, PGresult **out);
/* Takes the connection and runs first, the opening statement of a call;
 * CATDB_OK with the lane's lock held, or an error with it released. */
int pg_enter(struct pg_lane *p, const char *first, const char *what, char *err, size_t errlen);
/* Ends a call: commits when rc is CATDB_OK; releases the lane's lock. */
int pg_leave(struct pg_lane *p, int rc, const char *what, char *err, size_t errlen);

/* Text forms of values, and of a result's columns. */
void i64_text(int64_t v, char *out, size_t n);
const char *empty_null(const char *s);
void array_text(struct jbuf *b, const char *s);
char *col_dup(const PGresult *res, int row, int col);
const char *col_text(const PGresult *res, int row, int col);
int64_t col_i64(const PGresult *res, int row, int col);

/* Writes part of r in the open transaction of p (catdb.h, save); a shared
 * job's end writes its trace's state this way (catdb_pg_jobs.c). */
int pg_save_tx(struct pg_lane *p, const struct trace_rec *r, enum catdb_part part, int64_t *version, char *err,
	       size_t errlen);

/* The operations of the other files (catdb.h says what each does). */
int pg_index(struct catdb *d, int64_t id, const char *db_path, char *err, size_t errlen);
int pg_unindex(struct catdb *d, int64_t id, char *err, size_t errlen);
int pg_search(struct catdb *d, const char *q, int (*row)(void *ctx, const struct catdb_name_row *r), void *ctx,
	      char *err, size_t errlen);
int pg_name_exact(struct catdb *d, const char *name, int (*row)(void *ctx, const struct catdb_name_row *r), void *ctx,
		  char *err, size_t errlen);
int pg_note_add(struct catdb *d, struct catdb_note *n, char *err, size_t errlen);
int pg_note_edit(struct catdb *d, int64_t id, const char *text, const char *author, const char *edited_at, char *err,
		 size_t errlen);
int pg_note_remove(struct catdb *d, int64_t id, char *err, size_t errlen);
int pg_note_list(struct catdb *d, const struct cat_note_query *q, int (*row)(void *ctx, const struct catdb_note *n),
		 void *ctx, char *err, size_t errlen);
int pg_note_counts(struct catdb *d, int64_t trace, int (*row)(void *ctx, int64_t trace, int64_t count), void *ctx,
		   char *err, size_t errlen);
int pg_job_queue(struct catdb *d, int64_t trace, char *err, size_t errlen);
int pg_job_claim(struct catdb *d, const char *owner, int lease_ms, struct catdb_job *out, char *err, size_t errlen);
int pg_job_renew(struct catdb *d, const struct catdb_job *j, int lease_ms, char *err, size_t errlen);
int pg_job_done(struct catdb *d, const struct catdb_job *j, const struct trace_rec *r, char *err, size_t errlen);

#endif
