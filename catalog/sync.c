/*
 * The records and the catalog's database in step (sync.h).
 *
 * Every change of a record is written through to the database (cat_save),
 * under the catalog's lock, in the same hold as the change: the database
 * then sees the writes in the order memory made them, and a shared
 * catalog's row version is the record's. A write the database could not
 * take while it was down is kept as unsaved and written again at the next
 * look, before anything is read.
 *
 * With a catalog several servers share, each server holds every record in
 * memory (lists, filters and retention read only memory), so a record
 * another server saved or deleted is stale here until read again. The
 * database numbers every save and every deletion with a version from one
 * sequence, committed in that order (catdb_pg.c); a server asks for what is
 * newer than the newest version it holds, every CAT_SYNC_MS, in its own
 * thread (the syncer), so that no request waits on the database for it; a
 * request for a trace memory lacks looks at once (forced). Either way the
 * database is read without the lock, and what was read applied under it. A
 * record this server owns (its files are in this server's store) takes
 * only its metadata from the database: its ingest state is this server's
 * to write. Another server's record takes everything.
 *
 * With catalog.db there is no other writer and nothing to read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog_internal.h"

/* sync.c's own state, under mu. */
struct cat_sync {
	int64_t seen;          /* the newest change of the database the records hold */
	int64_t look_ms;       /* monotonic time of the last look at its changes */
	int rc;                /* what that look gave: 0 or CAT_EUNAVAILABLE */
	uint64_t taken;        /* records taken out of memory so far (deleted or
				* forgotten): a load read before one may hold it */
	size_t unsaved;        /* records with unsaved bits */
	pthread_t thread;      /* the syncer: looks every CAT_SYNC_MS */
	int started;
	pthread_cond_t work;   /* signalled on stop */
};

struct cat_sync *cat_sync_create(void)
{
	struct cat_sync *s = calloc(1, sizeof(*s));

	if (s != NULL)
		pthread_cond_init(&s->work, NULL);
	return s;
}

void cat_sync_destroy(struct cat_sync *s)
{
	if (s == NULL)
		return;
	pthread_cond_destroy(&s->work);
	free(s);
}

/* ---- writing ------------------------------------------------------------- */

void cat_unsaved_mark(struct catalog *c, struct trace_rec *r, enum catdb_part part)
{
	c->sync->unsaved += r->sync.unsaved == 0;
	r->sync.unsaved |= 1u << part;
}

void cat_unsaved_clear(struct catalog *c, struct trace_rec *r, enum catdb_part part)
{
	if (r->sync.unsaved & (1u << part)) {
		r->sync.unsaved &= ~(1u << part);
		c->sync->unsaved -= r->sync.unsaved == 0;
	}
}

int cat_save(struct catalog *c, struct trace_rec *r, enum catdb_part part)
{
	char err[512];
	int rc = c->db->ops->save(c->db, r, part, &r->sync.version, err, sizeof(err));

	if (rc == CATDB_ECONFLICT)
		return CAT_ECONFLICT; /* the caller reads the record again and retries */
	if (rc != CATDB_OK)
		fprintf(stderr, "trace-server: trace %" PRId64 " was not saved: %s\n", r->id, err);
	if (rc == CATDB_EDOWN) {
		/* kept to write again when the database is back (cat_sync_locked) */
		cat_unsaved_mark(c, r, part);
		return CAT_EUNAVAILABLE;
	}
	/* written, or refused for good (a constraint, a full disk): not tried again */
	cat_unsaved_clear(c, r, part);
	/* a queued trace is a job every server's worker may claim */
	if (rc == CATDB_OK && c->shared_jobs && part != CATDB_META && r->state.status == TS_QUEUED)
		cat_job_queue_locked(c, r);
	return rc == CATDB_OK ? CAT_OK : CAT_EFAIL;
}

void cat_sync_unlinked_locked(struct catalog *c, const struct trace_rec *r)
{
	c->sync->unsaved -= r->sync.unsaved != 0;
	c->sync->taken++;
}

void cat_sync_reread_locked(struct catalog *c)
{
	c->sync->seen = 0;
}

/* ---- reading ------------------------------------------------------------- */

/* Whether r's ingest state is another's to write: another server's trace,
 * or with shared ingest jobs any trace but a live stream this server
 * receives and the one its worker ingests now (whichever server's worker
 * claims a job writes the result, jobs.c). */
static int theirs(const struct catalog *c, const struct trace_rec *r)
{
	if (r->sync.foreign)
		return 1;
	return c->shared_jobs && r->state.status != TS_LIVE && r->id != cat_jobs_running(c);
}

/* Applies what a load read; the batch's records are taken or freed, and
 * the records of traces deleted elsewhere put in gone (*ngone of them) for
 * cat_rec_drop without the lock. A
 * load read without mu (the syncer's) may be older than what memory holds:
 * a record saved here since keeps its newer version, and when a record was
 * taken out of memory since the load began (taken moved on: a deletion here)
 * the load's records that memory lacks are not added, as that one may be
 * among them; nor does seen move, so that the next load reads them again.
 * Seen moves only from since, the version the load read after: one set
 * meanwhile (the worker's 0, "read everything again", jobs.c) stands. */
static int apply(struct catalog *c, struct catdb_batch *b, uint64_t taken, int64_t since, struct trace_rec **gone,
		 size_t *ngone)
{
	int may_add = taken == c->sync->taken;
	size_t i;

	for (i = 0; i < b->n; i++) {
		struct trace_rec *r = cat_find(c, b->v[i]->id);

		if (r == NULL && !may_add)
			continue;
		if (r != NULL && r->sync.version > b->v[i]->sync.version)
			continue; /* saved here after the load read it */
		if (r == NULL) {
			/* a trace another server added */
			b->v[i]->sync.foreign = 1;
			if (cat_rec_insert(c, b->v[i]) != 0)
				return CAT_EFAIL;
			b->v[i] = NULL;
			continue;
		}
		rec_take(r, b->v[i], theirs(c, r) ? CATDB_STATE : CATDB_META);
		r->sync.version = b->v[i]->sync.version; /* it holds all of the row now */
		if (theirs(c, r) && r->state.status != TS_QUEUED && r->state.status != TS_INGESTING && r->state.status != TS_LIVE)
			cat_wake(c, r);
	}
	for (i = 0; i < b->ngone; i++) {
		struct trace_rec *r = cat_forget_locked(c, b->gone[i]);

		if (r != NULL && gone != NULL)
			gone[(*ngone)++] = r;
		else
			cat_rec_drop(c, r); /* no memory for the list: its files under the lock */
	}
	if (may_add && c->sync->seen == since && b->version > c->sync->seen)
		c->sync->seen = b->version;
	return 0;
}

/* Writes again what could not be saved while the database was down. */
static void resave(struct catalog *c)
{
	size_t i;
	int part;

	for (i = 0; i < c->n && c->sync->unsaved > 0; i++) {
		struct trace_rec *r = c->v[i];

		for (part = CATDB_ALL; part <= CATDB_STATE && r->sync.unsaved; part++)
			if ((r->sync.unsaved & (1 << part)) && cat_save(c, r, (enum catdb_part)part) != 0)
				return;
	}
}

/* One look (under mu, which it drops while the database is read: a
 * request that needs mu meanwhile goes on, and apply() takes what was
 * read as it finds the records then). A failure is logged every time, or
 * with quiet (the syncer, every CAT_SYNC_MS) only when the last look was
 * fine. */
static int look(struct catalog *c, int quiet)
{
	struct cat_sync *s = c->sync;
	struct trace_rec **gone = NULL;
	struct catdb_batch b;
	size_t ngone = 0, i;
	char err[512];
	uint64_t taken;
	int64_t since;
	int rc;

	s->look_ms = cat_now_ms();
	/* unsaved changes first: a load would take the database's older values
	 * over them; written under mu, as every save is */
	if (s->unsaved > 0)
		resave(c);
	if (s->unsaved > 0)
		return s->rc = CAT_EUNAVAILABLE;
	since = s->seen;
	taken = s->taken;
	pthread_mutex_unlock(&c->mu);
	rc = c->db->ops->load(c->db, since, &b, err, sizeof(err));
	if (rc == CATDB_OK && b.ngone > 0)
		gone = calloc(b.ngone, sizeof(*gone));
	pthread_mutex_lock(&c->mu);
	if (rc == CATDB_OK && apply(c, &b, taken, since, gone, &ngone) != 0) {
		snprintf(err, sizeof(err), "out of memory");
		rc = CATDB_EFAIL;
	}
	catdb_batch_free(&b);
	if (ngone > 0) { /* the files of traces deleted elsewhere, without the lock */
		pthread_mutex_unlock(&c->mu);
		for (i = 0; i < ngone; i++)
			cat_rec_drop(c, gone[i]);
		pthread_mutex_lock(&c->mu);
	}
	free(gone);
	if (rc != CATDB_OK) {
		/* a failed read is retried at the next look, from the same version */
		if (!quiet || s->rc == 0)
			fprintf(stderr, "trace-server: the catalog's changes were not read: %s\n", err);
		return s->rc = CAT_EUNAVAILABLE;
	}
	return s->rc = 0;
}

int cat_sync_locked(struct catalog *c, int force)
{
	struct cat_sync *s = c->sync;

	if (!c->shared)
		return 0;
	if (!force && (s->started || (s->look_ms != 0 && cat_now_ms() - s->look_ms < CAT_SYNC_MS)))
		return s->rc;
	return look(c, 0);
}

static void *sync_main(void *arg)
{
	struct catalog *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		look(c, 1);
		if (!c->stop)
			cond_wait_ms(&c->sync->work, &c->mu, CAT_SYNC_MS);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int cat_sync_start(struct catalog *c)
{
	if (!c->shared)
		return 0;
	if (pthread_create(&c->sync->thread, NULL, sync_main, c) != 0)
		return CAT_EFAIL;
	c->sync->started = 1;
	return 0;
}

void cat_sync_wake(struct catalog *c)
{
	pthread_cond_broadcast(&c->sync->work);
}

void cat_sync_join(struct catalog *c)
{
	if (c->sync->started)
		pthread_join(c->sync->thread, NULL);
	c->sync->started = 0;
}

int cat_sync_first(struct catalog *c, char *err, size_t errlen)
{
	struct catdb_batch b;
	size_t i;
	int rc = c->db->ops->load(c->db, 0, &b, err, errlen);

	for (i = 0; rc == CATDB_OK && i < b.n; i++) {
		/* in a shared catalog a trace whose files this server's store
		 * does not hold is another server's: listed and searched here,
		 * never recovered (its source is elsewhere) */
		if (c->shared && c->store.ops->usage(&c->store, b.v[i]->id) == 0)
			b.v[i]->sync.foreign = 1;
		if (cat_rec_insert(c, b.v[i]) != 0) {
			snprintf(err, errlen, "out of memory reading the catalog");
			rc = CATDB_EFAIL;
			break;
		}
		b.v[i] = NULL;
	}
	if (rc == CATDB_OK)
		c->sync->seen = b.version;
	catdb_batch_free(&b);
	return rc == CATDB_OK ? CAT_OK : CAT_EFAIL;
}

void catdb_batch_free(struct catdb_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		cat_rec_free(b->v[i]);
	free(b->v);
	free(b->gone);
	memset(b, 0, sizeof(*b));
}

struct trace_rec *catdb_batch_find(const struct catdb_batch *b, int64_t id)
{
	return cat_rec_search(b->v, b->n, id);
}
