/*
 * Keeping the records true to a catalog several servers share.
 *
 * Each server holds every record in memory (lists, filters and retention
 * read only memory), so a record another server saved or deleted is stale
 * here until read again. The database numbers every save and every
 * deletion with a version from one sequence, committed in that order
 * (catdb_pg.c); a server asks for what is newer than the newest version it
 * holds, every CAT_SYNC_MS, in its own thread (the syncer), so that no
 * request waits on the database for it; a request for a trace memory lacks
 * looks at once (forced). A record this server owns (its files are in this
 * server's store) takes only its metadata from the database: its ingest
 * state is this server's to write. Another server's record takes
 * everything.
 *
 * With catalog.db there is no other writer and nothing to do.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog_internal.h"

/* Whether r's ingest state is another's to write: another server's trace,
 * or with shared ingest jobs any trace but a live stream this server
 * receives and the one its worker ingests now (whichever server's worker
 * claims a job writes the result, worker.c). */
static int theirs(const struct catalog *c, const struct trace_rec *r)
{
	if (r->sync.foreign)
		return 1;
	return c->jobs && r->state.status != TS_LIVE && r->id != c->running;
}

/* Applies what a load read; the batch's records are taken or freed. A
 * load read without mu (the syncer's) may be older than what memory holds:
 * a record saved here since keeps its newer version, and when a record was
 * taken out of memory since the load began (taken moved on: a deletion here)
 * the load's records that memory lacks are not added, as that one may be
 * among them; nor does seen move, so that the next load reads them again.
 * Seen moves only from since, the version the load read after: one set
 * meanwhile (the worker's 0, "read everything again", worker.c) stands. */
static int apply(struct catalog *c, struct catdb_batch *b, uint64_t taken, int64_t since)
{
	int may_add = taken == c->taken;
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
	for (i = 0; i < b->ngone; i++)
		cat_forget_locked(c, b->gone[i]);
	if (may_add && c->seen == since && b->version > c->seen)
		c->seen = b->version;
	return 0;
}

/* Writes again what could not be saved while the database was down. */
static void resave(struct catalog *c)
{
	size_t i;
	int part;

	for (i = 0; i < c->n && c->unsaved > 0; i++) {
		struct trace_rec *r = c->v[i];

		for (part = CATDB_ALL; part <= CATDB_STATE && r->sync.unsaved; part++)
			if ((r->sync.unsaved & (1 << part)) && cat_save(c, r, (enum catdb_part)part) != 0)
				return;
	}
}

int cat_sync_locked(struct catalog *c, int force)
{
	struct catdb_batch b;
	char err[512];
	int64_t now;
	int rc;

	if (!c->shared)
		return 0;
	now = cat_now_ms();
	if (!force && (c->syncer_started || (c->sync_ms != 0 && now - c->sync_ms < CAT_SYNC_MS)))
		return c->sync_rc;
	c->sync_ms = now;
	/* unsaved changes first: a load would take the database's older values over them */
	if (c->unsaved > 0)
		resave(c);
	if (c->unsaved > 0) {
		c->sync_rc = CAT_EUNAVAILABLE;
		return c->sync_rc;
	}
	rc = c->db->ops->load(c->db, c->seen, &b, err, sizeof(err));
	if (rc == CATDB_OK && apply(c, &b, c->taken, c->seen) != 0) {
		snprintf(err, sizeof(err), "out of memory");
		rc = CATDB_EFAIL;
	}
	catdb_batch_free(&b);
	if (rc != CATDB_OK) {
		fprintf(stderr, "trace-server: the catalog's changes were not read: %s\n", err);
		/* a failed read is retried at the next look, from the same version */
		c->sync_rc = CAT_EUNAVAILABLE;
		return c->sync_rc;
	}
	c->sync_rc = 0;
	return 0;
}

/* One look of the syncer (under mu, which it drops while the database is
 * read: a request that needs mu meanwhile goes on). */
static void sync_round(struct catalog *c)
{
	struct catdb_batch b;
	char err[512];
	uint64_t taken;
	int64_t since;
	int rc;

	c->sync_ms = cat_now_ms();
	if (c->unsaved > 0)
		resave(c); /* its writes under mu, as every save's */
	if (c->unsaved > 0) {
		c->sync_rc = CAT_EUNAVAILABLE;
		return;
	}
	since = c->seen;
	taken = c->taken;
	pthread_mutex_unlock(&c->mu);
	rc = c->db->ops->load(c->db, since, &b, err, sizeof(err));
	pthread_mutex_lock(&c->mu);
	if (rc == CATDB_OK && apply(c, &b, taken, since) != 0) {
		snprintf(err, sizeof(err), "out of memory");
		rc = CATDB_EFAIL;
	}
	catdb_batch_free(&b);
	if (rc != CATDB_OK) {
		if (c->sync_rc == 0) /* said once, not every look while it is down */
			fprintf(stderr, "trace-server: the catalog's changes were not read: %s\n", err);
		c->sync_rc = CAT_EUNAVAILABLE;
		return;
	}
	c->sync_rc = 0;
}

void *cat_sync_main(void *arg)
{
	struct catalog *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		sync_round(c);
		if (!c->stop)
			cond_wait_ms(&c->sync_work, &c->mu, CAT_SYNC_MS);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
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
		c->seen = b.version;
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
