/*
 * Storage: bulk loading into one SQLite database per trace.
 *
 * Rows are buffered and inserted 64 at a time through one prepared
 * multi-row INSERT (the fastest way SQLite loads, see PERFORMANCE.md), in
 * one transaction, with journaling off: the file is private until ingest
 * renames it into place, so a crash only ever loses a temporary file.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dbwriter.h"
#include "util.h"
#include "../tracedb/tracedb.h"


static int dbw_exec(struct dbwriter *s, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		snprintf(s->error, sizeof(s->error), "%s", msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* ---- the writer thread --------------------------------------------------- */

/*
 * Jobs are allocated with room for a full multi-row INSERT and reused: the
 * writer hands finished ones back on s->free. Signals are sent only to a
 * side that is waiting, and the writer takes the whole queue at once, so
 * that a job costs no system call when both sides keep busy.
 */
enum { JOB_VALS = BINS_ROWS * BINS_MAX_COLS };

/* A statement the writer prepares, runs and finalizes, in queue order, so
 * that the producer never waits for the connection: made by dbw_prepare,
 * freed by the writer at the finalize job. */
struct dbw_stmt {
	sqlite3_stmt *st; /* NULL until prepared, or when preparing failed */
	char *sql;
	struct bins_val *bound; /* the writer's: the number values bound last, by parameter */
	int nbound;
	struct dbw_stmt *next_orphan; /* in store.orphans */
	struct dbw_stmt *prev, *next; /* in store.stmts: every statement not freed */
	int rows;               /* an INSERT OR IGNORE of this many rows (bins_prepare):
				 * a step that inserts fewer fails */
};

/* Finalizes st and frees it; on the writer thread, or once it has stopped. */
static void stmt_free(struct dbwriter *s, struct dbw_stmt *st)
{
	pthread_mutex_lock(&s->mu);
	if (st->prev)
		st->prev->next = st->next;
	else if (s->stmts == st)
		s->stmts = st->next;
	if (st->next)
		st->next->prev = st->prev;
	pthread_mutex_unlock(&s->mu);
	sqlite3_finalize(st->st);
	free(st->bound);
	free(st->sql);
	free(st);
}

enum job_kind { JOB_INSERT, JOB_PREPARE, JOB_FINALIZE, JOB_FREE };

struct dbw_job {
	int kind;               /* enum job_kind */
	struct dbw_stmt *st;
	int n;                  /* values bound per step; n * steps <= JOB_VALS */
	int steps;              /* executions of st, each with the next n values */
	void *owned;            /* freed after the job */
	struct dbw_job *next;
	struct bins_val vals[JOB_VALS]; /* bound as ?1 .. ?n, step after step */
};

static void bind_val(sqlite3_stmt *st, int idx, const struct bins_val *x)
{
	switch (x->type) {
	case SQLITE_INTEGER:
		sqlite3_bind_int64(st, idx, x->i);
		break;
	case SQLITE_FLOAT:
		sqlite3_bind_double(st, idx, x->d);
		break;
	case SQLITE_TEXT:
		sqlite3_bind_text(st, idx, x->p, x->n, SQLITE_STATIC);
		break;
	case SQLITE_BLOB:
		sqlite3_bind_blob(st, idx, x->p, x->n, SQLITE_STATIC);
		break;
	case BINS_U64: {
		char d[24];
		int n = snprintf(d, sizeof(d), "%" PRIu64, (uint64_t)x->i);

		sqlite3_bind_text(st, idx, d, n, SQLITE_TRANSIENT);
		break;
	}
	default:
		sqlite3_bind_null(st, idx);
	}
}

/* Whether x is bound already, where b was: the same number, or NULL. */
static int bound_same(const struct bins_val *b, const struct bins_val *x)
{
	if (b->type != x->type)
		return 0;
	if (x->type == SQLITE_INTEGER)
		return b->i == x->i;
	if (x->type == SQLITE_FLOAT)
		return memcmp(&b->d, &x->d, sizeof(x->d)) == 0;
	return x->type == SQLITE_NULL;
}

/* Records the first failure (the writer's copy in *failed too). */
static void job_fail(struct dbwriter *s, int *failed, const char *what)
{
	pthread_mutex_lock(&s->mu);
	if (!s->failed)
		snprintf(s->error, sizeof(s->error), "%s: %s", what, sqlite3_errmsg(s->db));
	s->failed = *failed = 1;
	pthread_mutex_unlock(&s->mu);
}

/* Runs one job. After a failure only finalize jobs run: every statement is
 * finalized, so that the connection closes. */
static void job_run(struct dbwriter *s, struct dbw_job *j, int *failed)
{
	const struct bins_val *v = j->vals;
	sqlite3_stmt *st;
	int i, k;

	if (j->kind == JOB_FREE) /* only its owned memory, freed after it */
		return;
	st = j->st->st;
	if (j->kind == JOB_FINALIZE) {
		stmt_free(s, j->st);
		return;
	}
	if (j->kind == JOB_PREPARE) {
		if (!*failed && sqlite3_prepare_v2(s->db, j->st->sql, -1, &j->st->st, NULL) != SQLITE_OK)
			job_fail(s, failed, "prepare");
		return;
	}
	if (j->st->bound == NULL && j->n > 0 && (j->st->bound = malloc((size_t)j->n * sizeof(*v))) != NULL) {
		j->st->nbound = j->n;
		for (i = 0; i < j->n; i++)
			j->st->bound[i].type = -1; /* nothing bound yet */
	}
	for (k = 0; k < j->steps && !*failed; k++, v += j->n) {
		for (i = 0; i < j->n; i++) {
			/* a statement keeps its bindings across a reset: a number
			 * (or NULL) already bound there is not bound again, which
			 * spares most of a row's columns (track, depth, category,
			 * NULLs repeat); text and blobs always are */
			if (i < j->st->nbound && bound_same(&j->st->bound[i], &v[i]))
				continue;
			bind_val(st, i + 1, &v[i]);
			if (i < j->st->nbound) {
				j->st->bound[i] = v[i];
				if (v[i].type == SQLITE_TEXT || v[i].type == SQLITE_BLOB)
					j->st->bound[i].type = -1;
			}
		}
		if (sqlite3_step(st) != SQLITE_DONE) {
			job_fail(s, failed, "insert");
		} else if (j->st->rows > 0 && sqlite3_changes(s->db) != j->st->rows) {
			dbw_fail(s, "insert: a row was refused (a NULL where none may be, or an id taken)");
			*failed = 1;
		}
		sqlite3_reset(st);
	}
}

/* The database grows at its end as rows go in: what SQLite wrote leaves
 * the page cache a few windows behind (behind.h). Looked at every
 * STORE_BEHIND jobs, a few MB of rows. */
enum { STORE_BEHIND = 64 };

static void dbw_behind(struct dbwriter *s)
{
	struct stat st;

	s->since_behind = 0;
	if (s->behind.fd >= 0 && fstat(s->behind.fd, &st) == 0)
		behind_wrote(&s->behind, (uint64_t)st.st_size);
}

static void *writer_main(void *arg)
{
	struct dbwriter *s = arg;
	struct dbw_job *j, *next;
	int failed;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->head == NULL && !s->stop) {
			s->writer_idle = 1;
			pthread_cond_wait(&s->work, &s->mu);
			s->writer_idle = 0;
		}
		if ((j = s->head) == NULL)
			break;
		s->head = s->tail = NULL;
		failed = s->failed;
		pthread_mutex_unlock(&s->mu);
		for (; j != NULL; j = next) {
			next = j->next;
			job_run(s, j, &failed);
			if (++s->since_behind == STORE_BEHIND)
				dbw_behind(s);
			free(j->owned);
			j->owned = NULL;
			/* hand the job back at once: a producer waiting for room
			 * wakes when half the queue is free, not when all of it is */
			pthread_mutex_lock(&s->mu);
			j->next = s->free;
			s->free = j;
			s->queued--;
			s->finished++;
			if (s->waiting && s->queued <= s->queue_max / 2) { /* producers waiting for room */
				s->waiting = 0;
				pthread_cond_broadcast(&s->done);
			} else if (s->ticket_wait != 0 && s->finished >= s->ticket_wait) {
				s->ticket_wait = 0;
				pthread_cond_broadcast(&s->done);
			}
			pthread_mutex_unlock(&s->mu);
		}
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	heap_release(); /* what the writer held (util.h) */
	return NULL;
}

/* An empty job to fill in place: *vals gets room for BINS_ROWS *
 * BINS_MAX_COLS values. NULL when out of memory. */
static struct dbw_job *job_take(struct dbwriter *s, struct bins_val **vals)
{
	struct dbw_job *j;

	pthread_mutex_lock(&s->mu);
	if ((j = s->free) != NULL)
		s->free = j->next;
	pthread_mutex_unlock(&s->mu);
	if (j == NULL && (j = malloc(sizeof(*j))) == NULL) {
		snprintf(s->error, sizeof(s->error), "out of memory");
		return NULL;
	}
	j->owned = NULL;
	j->next = NULL;
	*vals = j->vals;
	return j;
}

/* Returns a taken job unused. */
static void job_drop(struct dbwriter *s, struct dbw_job *j)
{
	pthread_mutex_lock(&s->mu);
	j->next = s->free;
	s->free = j;
	pthread_mutex_unlock(&s->mu);
}

/* Queues j, waiting while the queue is full; returns -1 once a job has
 * failed (j still runs if it finalizes, and is skipped otherwise). */
static int job_queue(struct dbwriter *s, struct dbw_job *j)
{
	int failed;

	pthread_mutex_lock(&s->mu);
	while (s->queued >= s->queue_max) {
		s->waiting = 1;
		pthread_cond_wait(&s->done, &s->mu);
	}
	failed = s->failed;
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
	s->queued++;
	s->submitted++;
	/* an idle writer is woken for a few jobs at once, not for each: the
	 * waits below (room, drain, stop) wake it for fewer */
	if (s->writer_idle && s->queued >= STORE_WAKE)
		pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->mu);
	return failed ? -1 : 0;
}

/* Queues a taken job (which then belongs to the store): st runs `steps`
 * times, each binding the next n values. -1 when a job failed before, or
 * on a programmer error (too many values). */
static int job_submit(struct dbwriter *s, struct dbw_job *j, struct dbw_stmt *st, int n, int steps)
{
	if (n < 0 || steps < 0 || (int64_t)n * steps > JOB_VALS) { /* a programmer error */
		free(j->owned);
		j->owned = NULL;
		job_drop(s, j);
		return -1;
	}
	j->kind = JOB_INSERT;
	j->st = st;
	j->n = n;
	j->steps = steps;
	return job_queue(s, j);
}

/* Queues a prepare or finalize job for st; -1 when out of memory. */
static int stmt_job(struct dbwriter *s, struct dbw_stmt *st, int kind)
{
	struct bins_val *v;
	struct dbw_job *j = job_take(s, &v);

	if (j == NULL)
		return -1;
	j->kind = kind;
	j->st = st;
	j->n = j->steps = 0;
	job_queue(s, j);
	return 0;
}

struct dbw_stmt *dbw_prepare(struct dbwriter *s, const char *sql)
{
	struct dbw_stmt *st = calloc(1, sizeof(*st));

	if (st == NULL || (st->sql = strdup(sql)) == NULL) {
		if (st != NULL)
			free(st->sql);
		free(st);
		snprintf(s->error, sizeof(s->error), "out of memory");
		return NULL;
	}
	pthread_mutex_lock(&s->mu);
	st->next = s->stmts;
	if (s->stmts)
		s->stmts->prev = st;
	s->stmts = st;
	pthread_mutex_unlock(&s->mu);
	if (stmt_job(s, st, JOB_PREPARE) != 0) {
		stmt_free(s, st);
		snprintf(s->error, sizeof(s->error), "out of memory");
		return NULL;
	}
	return st;
}

void dbw_finalize(struct dbwriter *s, struct dbw_stmt *st)
{
	if (st != NULL && stmt_job(s, st, JOB_FINALIZE) != 0) {
		/* out of memory: finalized by dbw_close, once the writer has
		 * stopped (another producer may keep it busy until then) */
		pthread_mutex_lock(&s->mu);
		st->next_orphan = s->orphans;
		s->orphans = st;
		pthread_mutex_unlock(&s->mu);
	}
}

void dbw_fail(struct dbwriter *s, const char *why)
{
	pthread_mutex_lock(&s->mu);
	if (!s->failed)
		snprintf(s->error, sizeof(s->error), "%s", why);
	s->failed = 1;
	pthread_mutex_unlock(&s->mu);
}

int dbw_failed(struct dbwriter *s)
{
	int failed;

	pthread_mutex_lock(&s->mu);
	failed = s->failed;
	pthread_mutex_unlock(&s->mu);
	return failed;
}

int dbw_submit(struct dbwriter *s, struct dbw_stmt *st, const struct bins_val *vals, int n, void *owned)
{
	struct bins_val *v;
	struct dbw_job *j = job_take(s, &v);

	if (j == NULL) {
		free(owned);
		return -1;
	}
	j->owned = owned;
	if (n > 0 && n <= JOB_VALS)
		memcpy(v, vals, (size_t)n * sizeof(*vals));
	return job_submit(s, j, st, n, 1);
}

uint64_t dbw_ticket(struct dbwriter *s)
{
	uint64_t t;

	pthread_mutex_lock(&s->mu);
	t = s->submitted;
	pthread_mutex_unlock(&s->mu);
	return t;
}

int dbw_wait(struct dbwriter *s, uint64_t ticket)
{
	int failed;

	pthread_mutex_lock(&s->mu);
	if (s->writer_idle && s->queued > 0)
		pthread_cond_signal(&s->work);
	while (s->finished < ticket) {
		if (s->ticket_wait == 0 || ticket < s->ticket_wait)
			s->ticket_wait = ticket;
		pthread_cond_wait(&s->done, &s->mu);
	}
	failed = s->failed;
	pthread_mutex_unlock(&s->mu);
	return failed ? -1 : 0;
}

int dbw_reached(struct dbwriter *s, uint64_t ticket)
{
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = s->failed ? -1 : s->finished >= ticket;
	if (rc == 0 && s->writer_idle && s->queued > 0) /* a few jobs, left for more: run them */
		pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int dbw_drain(struct dbwriter *s)
{
	return dbw_wait(s, dbw_ticket(s));
}

/* ---- the database --------------------------------------------------------- */

/* Creates the database at path (tracedb_create), runs the statements of
 * set (NULL-terminated), begins a transaction and starts the writer, whose
 * queue holds queue_max jobs at most. */
static int dbw_start(struct dbwriter *s, const char *path, unsigned page_size, const char *const *set, int behind,
		     unsigned queue_max, int indexes)
{
	memset(s, 0, sizeof(*s));
	s->queue_max = queue_max;
	behind_init(&s->behind, -1);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done, NULL);
	if ((s->db = tracedb_create(path, page_size, s->error, sizeof(s->error))) == NULL)
		return -1;
	for (; set != NULL && *set != NULL; set++)
		if (dbw_exec(s, *set) != 0)
			return -1;
	if (dbw_exec(s, "BEGIN") != 0)
		return -1;
	if (indexes && tracedb_index_early(s->db) != 0) {
		snprintf(s->error, sizeof(s->error), "indexes: %s", sqlite3_errmsg(s->db));
		return -1;
	}
	if (behind) /* -1: no write-behind, nothing else */
		behind_init(&s->behind, open(path, O_RDONLY | O_CLOEXEC));
	if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
		snprintf(s->error, sizeof(s->error), "cannot start the writer thread");
		return -1;
	}
	s->writer_started = 1;
	return 0;
}

int dbw_open(struct dbwriter *s, const char *path, unsigned page_size)
{
	return dbw_start(s, path, page_size, NULL, 1, STORE_QUEUE, 0);
}

/* A growing database's log is copied back into it once it holds this
 * much (wal_autocheckpoint, counted in pages of its size). */
#define GROW_CHECKPOINT_BYTES ((uint64_t)64 << 20)

int dbw_open_growing(struct dbwriter *s, const char *path, unsigned page_size)
{
	/* readers open the file while it grows: a write-ahead log and shared
	 * locks, each commit a consistent prefix (the log is not synced: a
	 * crash of the machine, unlike one of the process, may lose the
	 * last commits, which the source still holds); a commit's pages stay
	 * in the cache rather than spill to the log before it ends, and the
	 * log is copied back in larger steps (GROW_CHECKPOINT_BYTES); its
	 * indexes are there from the start, for the flows its commits write */
	char checkpoint[64];
	const char *const set[] = { "PRAGMA main.locking_mode=NORMAL", "PRAGMA main.journal_mode=WAL",
				    "PRAGMA main.synchronous=OFF", "PRAGMA main.cache_size=-65536", checkpoint, NULL };
	int rc;

	snprintf(checkpoint, sizeof(checkpoint), "PRAGMA main.wal_autocheckpoint=%u",
		 (unsigned)(GROW_CHECKPOINT_BYTES / (page_size ? page_size : 4096)));
	rc = dbw_start(s, path, page_size, set, 0, STORE_QUEUE_GROWING, 1);

	s->growing = 1; /* before any bins (dbwriter.h) */
	return rc;
}

int dbw_reopen_child(struct dbwriter *s, const char *path)
{
	struct dbw_stmt *st;

	/* the parent's connection is left as it is, never used again: closing
	 * it here could touch the files the parent still writes; its writer
	 * thread does not exist in this process, and its queue was empty */
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done, NULL);
	s->writer_started = 0;
	s->head = s->tail = NULL;
	s->queued = 0;
	s->finished = s->submitted;
	s->ticket_wait = 0;
	s->writer_idle = s->waiting = s->stop = 0;
	s->failed = 0;
	s->error[0] = '\0';
	s->behind.fd = -1;
	if ((s->db = tracedb_open_growing(path, s->error, sizeof(s->error))) == NULL)
		return -1;
	if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
		snprintf(s->error, sizeof(s->error), "cannot start the writer thread");
		return -1;
	}
	s->writer_started = 1;
	/* every statement made on the parent's connection is made again on
	 * this one, before anything runs it */
	for (st = s->stmts; st != NULL; st = st->next) {
		st->st = NULL;
		free(st->bound);
		st->bound = NULL;
		st->nbound = 0;
		if (stmt_job(s, st, JOB_PREPARE) != 0)
			return -1;
	}
	return 0;
}

int dbw_release(struct dbwriter *s, void *p)
{
	struct bins_val *v;
	struct dbw_job *j;

	if (p == NULL)
		return 0;
	if ((j = job_take(s, &v)) == NULL)
		return -1;
	j->kind = JOB_FREE;
	j->st = NULL;
	j->n = j->steps = 0;
	j->owned = p;
	job_queue(s, j); /* queued: p is freed even when a job failed (the next wait says so) */
	return 0;
}

/* Queues one run of sql with n (0 to 2) integers bound. */
static int queue_sql(struct dbwriter *s, const char *sql, int n, int64_t a, int64_t b)
{
	struct dbw_stmt *st = dbw_prepare(s, sql);
	struct bins_val v[2] = { { 0 } };
	int rc;

	if (st == NULL)
		return -1;
	v[0].type = v[1].type = SQLITE_INTEGER;
	v[0].i = a;
	v[1].i = b;
	rc = dbw_submit(s, st, n ? v : NULL, n, NULL);
	dbw_finalize(s, st);
	return rc;
}

int dbw_queue_sql(struct dbwriter *s, const char *sql)
{
	return queue_sql(s, sql, 0, 0, 0);
}

int dbw_queue_sql2(struct dbwriter *s, const char *sql, int64_t a, int64_t b)
{
	return queue_sql(s, sql, 2, a, b);
}

int dbw_commit(struct dbwriter *s)
{
	return dbw_drain(s) != 0 ? -1 : dbw_exec(s, "COMMIT");
}

int dbw_index(struct dbwriter *s)
{
	if (dbw_drain(s) != 0)
		return -1;
	if (tracedb_index(s->db) != 0) {
		snprintf(s->error, sizeof(s->error), "cannot create the indexes: %s", sqlite3_errmsg(s->db));
		return -1;
	}
	return 0;
}

void dbw_close(struct dbwriter *s)
{
	if (s->writer_started) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_signal(&s->work);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->writer, NULL);
		s->writer_started = 0;
	}
	while (s->free != NULL) {
		struct dbw_job *j = s->free;

		s->free = j->next;
		free(j);
	}
	while (s->orphans != NULL) {
		struct dbw_stmt *st = s->orphans;

		s->orphans = st->next_orphan;
		stmt_free(s, st);
	}
	if (s->behind.fd >= 0)
		close(s->behind.fd);
	s->behind.fd = -1;
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->done);
	if (s->db) {
		sqlite3_close(s->db);
		s->db = NULL;
	}
}

int dbw_meta(struct dbwriter *s, const char *key, const char *text, int64_t num)
{
	struct bins b;

	if (bins_init(&b, s, "meta", 2) != 0)
		return -1;
	bins_text(&b, key, -1);
	if (text)
		bins_text(&b, text, -1);
	else
		bins_i64(&b, num);
	bins_row(&b);
	return bins_fini(&b);
}

static struct dbw_stmt *bins_prepare(struct bins *b, const char *table, int rows)
{
	char sql[16384];
	size_t n;
	int r, c;
	struct dbw_stmt *st;
	const char *verb = b->replace ? "OR REPLACE " : b->s->growing ? "OR IGNORE " : "";

	n = (size_t)snprintf(sql, sizeof(sql), "INSERT %sINTO %s VALUES ", verb, table);
	for (r = 0; r < rows && n < sizeof(sql) - 8; r++) {
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s(", r ? "," : "");
		for (c = 0; c < b->ncols && n < sizeof(sql) - 8; c++)
			n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s?", c ? "," : "");
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ")");
	}
	if (n >= sizeof(sql) - 8) {
		snprintf(b->s->error, sizeof(b->s->error), "prepare %s: too many columns", table);
		return NULL;
	}
	/* set before any job runs it: the queue's lock orders the two */
	if ((st = dbw_prepare(b->s, sql)) != NULL && !b->replace && b->s->growing)
		st->rows = rows;
	return st;
}

static int bins_open(struct bins *b, struct dbwriter *s, const char *table, int ncols, int replace)
{
	memset(b, 0, sizeof(*b));
	b->replace = replace;
	b->vals = b->spare;
	b->s = s;
	b->ncols = ncols;
	if (ncols > BINS_MAX_COLS) {
		snprintf(s->error, sizeof(s->error), "too many columns for %s", table);
		return -1;
	}
	b->multi = bins_prepare(b, table, BINS_ROWS);
	b->one = bins_prepare(b, table, 1);
	if (b->multi == NULL || b->one == NULL || (b->job = job_take(s, &b->vals)) == NULL) {
		dbw_finalize(s, b->multi);
		dbw_finalize(s, b->one);
		b->multi = b->one = NULL;
		b->vals = b->spare;
		return -1;
	}
	return 0;
}

int bins_init(struct bins *b, struct dbwriter *s, const char *table, int ncols)
{
	return bins_open(b, s, table, ncols, 0);
}

int bins_init_replace(struct bins *b, struct dbwriter *s, const char *table, int ncols)
{
	return bins_open(b, s, table, ncols, 1);
}

/* Frees the copies of the job being filled (dbwriter.h, growing). */
static void bins_copies_free(struct bins *b)
{
	free(b->copies);
	b->copies = NULL;
	b->copied = b->copies_cap = 0;
}

/* Once an insert has failed, values go to the spare row and nowhere. */
static void bins_fail(struct bins *b)
{
	bins_copies_free(b);
	b->failed = 1;
	b->job = NULL;
	b->vals = b->spare;
	b->rows = 0;
}

static struct bins_val *bins_next(struct bins *b)
{
	if (b->col >= b->ncols) /* more values than columns: a programmer error */
		b->col = b->ncols - 1;
	return &b->vals[b->rows * b->ncols + b->col++];
}

void bins_i64(struct bins *b, int64_t v)
{
	struct bins_val *x = bins_next(b);

	x->type = SQLITE_INTEGER;
	x->i = v;
}

void bins_dbl(struct bins *b, double v)
{
	struct bins_val *x = bins_next(b);

	x->type = SQLITE_FLOAT;
	x->d = v;
}

void bins_u64(struct bins *b, uint64_t v)
{
	struct bins_val *x = bins_next(b);

	x->type = BINS_U64;
	x->i = (int64_t)v;
}

void bins_null(struct bins *b)
{
	bins_next(b)->type = SQLITE_NULL;
}

/* A copy of n bytes (and a NUL after them) in b->copies, for a growing
 * trace's writer (dbwriter.h): its offset there, which bins_rebase
 * makes a pointer when the job is handed on; NULL (b failed) when out of
 * memory. */
static const void *bins_copy(struct bins *b, const void *p, int n)
{
	size_t off = b->copied;

	if (b->copied + (size_t)n + 1 > b->copies_cap) {
		size_t cap = b->copies_cap ? b->copies_cap : 256;
		char *grown;

		while (cap < b->copied + (size_t)n + 1)
			cap *= 2;
		if ((grown = realloc(b->copies, cap)) == NULL) {
			dbw_fail(b->s, "out of memory");
			job_drop(b->s, b->job);
			bins_fail(b);
			return NULL;
		}
		b->copies = grown;
		b->copies_cap = cap;
	}
	if (n > 0)
		memcpy(b->copies + off, p, (size_t)n);
	b->copies[off + (size_t)n] = '\0';
	b->copied += (size_t)n + 1;
	return (const void *)(uintptr_t)off;
}

static void bins_bytes(struct bins *b, int type, const void *p, int n)
{
	struct bins_val *x;

	if (b->s->growing && !b->failed) {
		if (type == SQLITE_TEXT && n < 0)
			n = (int)strlen(p);
		p = bins_copy(b, p, n);
	}
	x = bins_next(b); /* the spare row once failed */
	x->type = type;
	x->n = n;
	x->p = p;
}

void bins_text(struct bins *b, const char *p, int n)
{
	bins_bytes(b, SQLITE_TEXT, p, n);
}

void bins_blob(struct bins *b, const void *p, int n)
{
	bins_bytes(b, SQLITE_BLOB, p, n);
}

/* The job being filled (nvals values) takes its copies with it: their
 * offsets become pointers into them, freed once it ran. */
static void bins_rebase(struct bins *b, int nvals)
{
	int i;

	if (b->copies == NULL)
		return;
	for (i = 0; i < nvals; i++)
		if (b->vals[i].type == SQLITE_TEXT || b->vals[i].type == SQLITE_BLOB)
			b->vals[i].p = b->copies + (uintptr_t)b->vals[i].p;
	b->job->owned = b->copies;
	b->copies = NULL;
	b->copied = b->copies_cap = 0;
}

/* Queues the job being filled (st run `steps` times, n values each) and
 * takes the next one; 0, or -1 (b has failed). */
static int bins_hand_on(struct bins *b, struct dbw_stmt *st, int n, int steps)
{
	bins_rebase(b, n * steps);
	if (job_submit(b->s, b->job, st, n, steps) != 0 || (b->job = job_take(b->s, &b->vals)) == NULL) {
		bins_fail(b);
		return -1;
	}
	b->rows = 0;
	return 0;
}

int bins_row(struct bins *b)
{
	b->col = 0;
	if (b->failed) {
		b->rows = 0;
		return -1;
	}
	if (++b->rows < BINS_ROWS)
		return 0;
	return bins_hand_on(b, b->multi, BINS_ROWS * b->ncols, 1);
}

/* Queues the rows buffered so far, one INSERT each in one job. */
int bins_flush(struct bins *b)
{
	if (b->failed)
		return -1;
	return b->rows == 0 ? 0 : bins_hand_on(b, b->one, b->ncols, b->rows);
}

/* Queues the rows left (one INSERT each, in one job) and the finalizing
 * of the statements, without waiting for them; returns -1 if an insert has
 * failed so far (dbw_drain and dbw_commit see the later ones). Calling
 * it again does nothing more. */
int bins_fini(struct bins *b)
{
	if (b->job != NULL) {
		if (b->rows > 0 && !b->failed) {
			bins_rebase(b, b->ncols * b->rows);
			b->failed = job_submit(b->s, b->job, b->one, b->ncols, b->rows) != 0;
		} else {
			job_drop(b->s, b->job);
		}
		b->job = NULL;
		b->vals = b->spare;
	}
	b->rows = 0;
	bins_copies_free(b);
	if (b->s != NULL) {
		dbw_finalize(b->s, b->multi);
		dbw_finalize(b->s, b->one);
		if (dbw_failed(b->s))
			b->failed = 1;
	}
	b->multi = b->one = NULL;
	return b->failed ? -1 : 0;
}
