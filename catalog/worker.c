/*
 * The catalog's worker thread: ingests queued traces in upload order,
 * indexes ready traces' names for search across traces, and removes what
 * --keep-failed and the retention bounds say must go.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "../query/query.h"
#include "catalog_internal.h"

struct job {
	struct catalog *c;
	int64_t id;
};

/* Progress of the running ingest; asks to stop when the trace was deleted. */
static int job_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct job *j = ctx;
	struct trace_rec *r;
	int gone;

	(void)total;
	(void)events;
	pthread_mutex_lock(&j->c->mu);
	r = cat_find(j->c, j->id);
	gone = r == NULL || j->c->stop;
	if (r && phase == INGEST_PHASE_DECODE)
		r->bytes_done = done;
	pthread_mutex_unlock(&j->c->mu);
	return gone;
}

static void summary_counts(struct jbuf *b, const struct ingest_result *res)
{
	const struct ingest_counts *k = &res->counts;
	const struct {
		const char *name;
		uint64_t v;
	} f[] = {
		{ "events", k->events },   { "slices", k->slices },       { "counters", k->counters },
		{ "flows", k->flows },     { "sched", k->sched },         { "logs", k->logs },
		{ "threads", k->threads }, { "processes", k->processes }, { "tracks", k->tracks },
		{ "args", k->args },       { "blobs", k->blobs },         { "objects", k->objects },
		{ "profiler", k->profiler },
	};
	size_t i;

	jb_key(b, "counts");
	jb_obj(b);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		jb_key(b, f[i].name);
		jb_u64(b, f[i].v);
	}
	jb_obj_end(b);
}

char *cat_summary_json(const struct ingest_result *res, const char *db_path)
{
	struct qry_error err = { 0 };
	const char *why;
	struct jbuf b;
	sqlite3 *db;
	unsigned i;

	jb_init(&b);
	summary_counts(&b, res);
	/* a read that fails is an error, not an empty list kept for good */
	if ((db = tracedb_open_readonly(db_path, &why)) == NULL || qry_trace_metadata(db, &b, &err) != QRY_OK) {
		fprintf(stderr, "trace-server: %s: %s\n", db_path, db ? err.msg : why);
		sqlite3_close(db);
		jb_fini(&b);
		return NULL;
	}
	sqlite3_close(db);
	jb_key(&b, "diagnostics");
	jb_obj(&b);
	for (i = 0; i < res->ndiag; i++) {
		jb_key(&b, res->diag_name[i]);
		jb_u64(&b, res->diag_value[i]);
	}
	jb_obj_end(&b);
	return jb_take(&b, NULL);
}

static const char *error_code_of(int rc)
{
	switch (rc) {
	case INGEST_ENOTTRACE:
		return "not_a_trace";
	case INGEST_EEMPTY:
		return "empty_file";
	case INGEST_ENOMEM:
		return "out_of_memory";
	case INGEST_EDB:
		return "storage_failed";
	default:
		return "ingest_failed";
	}
}

static void job_finish(struct catalog *c, int64_t id, int rc, const struct ingest_result *res, char *summary,
		       int indexed, double seconds)
{
	struct trace_rec *r;

	pthread_mutex_lock(&c->mu);
	if (rc != INGEST_ECANCEL) {
		cat_seconds_note(&c->stats.ingest, seconds);
		if (rc == INGEST_OK) {
			c->stats.ingests_ok++;
			c->stats.ingest_bytes += res->bytes;
		} else {
			c->stats.ingests_failed++;
		}
	}
	r = cat_find(c, id);
	if (r == NULL) {
		c->store.ops->remove(&c->store, id); /* deleted while ingesting */
		cat_unindex_locked(c, id);
	} else if (rc == INGEST_OK) {
		r->status = TS_READY;
		snprintf(r->format, sizeof(r->format), "%s", res->format ? res->format : "");
		r->start_ns = res->start_ns;
		r->end_ns = res->end_ns;
		free(r->summary);
		r->summary = summary;
		summary = NULL;
		r->symbols_named = (int64_t)res->symbols_named;
		free(r->symbols_error);
		r->symbols_error = res->symbols_error[0] ? strdup(res->symbols_error) : NULL;
		r->indexed = indexed;
	} else if (rc == INGEST_ECANCEL && c->stop) {
		r->status = TS_QUEUED; /* shutting down: ingest again at the next start */
	} else {
		r->status = TS_FAILED;
		snprintf(r->error_code, sizeof(r->error_code), "%s", error_code_of(rc));
		free(r->error_msg);
		r->error_msg = strdup(res->error[0] ? res->error : ingest_strerror(rc));
	}
	if (r) {
		r->stored = c->store.ops->usage(&c->store, id);
		cat_save(c, r, CATDB_STATE);
		cat_wake(c, r);
	}
	pthread_mutex_unlock(&c->mu);
	free(summary);
}

/* A live trace whose stream did not end cleanly is marked as a damaged
 * archive is: a diagnostic says its end is missing. */
static void mark_stream(struct catalog *c, int64_t id, struct ingest_result *res)
{
	struct trace_rec *r;
	int cut;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	cut = r && (strcmp(r->stream, "dropped") == 0 || strcmp(r->stream, "interrupted") == 0);
	pthread_mutex_unlock(&c->mu);
	if (cut && res->ndiag < INGEST_MAX_DIAG) {
		res->diag_name[res->ndiag] = "stream_incomplete";
		res->diag_value[res->ndiag++] = 1;
	}
}

/* The store could not be reached for trace id's ingest: it goes back in
 * the queue, and no ingest starts for STORE_RETRY_SECONDS, so that a store
 * that is down fails no trace and the worker does not spin on it. */
#define STORE_RETRY_SECONDS 5
static void job_wait_store(struct catalog *c, int64_t id, const char *why)
{
	struct trace_rec *r;

	fprintf(stderr, "trace-server: trace %" PRId64 " waits for the store: %s\n", id, why);
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL) {
		r->status = TS_QUEUED;
		cat_save(c, r, CATDB_STATE);
	} else {
		c->store.ops->remove(&c->store, id); /* deleted while ingesting */
		cat_unindex_locked(c, id);
	}
	c->store_retry_at = time(NULL) + STORE_RETRY_SECONDS;
	pthread_mutex_unlock(&c->mu);
}

/* Whether trace id came as a live stream (its stream state is set). */
static int was_live(struct catalog *c, int64_t id)
{
	struct trace_rec *r;
	int live;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	live = r && r->stream[0] != '\0';
	pthread_mutex_unlock(&c->mu);
	return live;
}

static void job_run(struct catalog *c, int64_t id, const char *hint)
{
	struct ingest_result *res = calloc(1, sizeof(*res));
	struct ingest_opts o = { 0 };
	struct job j = { c, id };
	char src[4096], db[4096], bin[4096];
	char *summary = NULL;
	struct timespec t0, t1;
	int rc, indexed = 0, store = 0;

	if (res == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cat_path(c, id, "source", src, sizeof(src));
	cat_path(c, id, "trace.db", db, sizeof(db));
	cat_path(c, id, "binary", bin, sizeof(bin));
	/* the cache may have let the files go since the upload (or a restart lost it) */
	c->store.ops->fetch(&c->store, id, "binary", res->error, sizeof(res->error));
	o.symbols = access(bin, R_OK) == 0 ? bin : NULL;
	o.progress = job_progress;
	o.progress_ctx = &j;
	o.format = hint[0] ? hint : NULL;
	res->error[0] = '\0';
	if ((store = c->store.ops->fetch(&c->store, id, "source", res->error, sizeof(res->error))) != 0)
		rc = INGEST_EDB;
	else
		rc = ingest_file(src, db, &o, res);
	/* symbols that arrived while ingest ran (POST .../symbols) name it now */
	if (rc == INGEST_OK && o.symbols == NULL && access(bin, R_OK) == 0 &&
	    ingest_symbolize(db, bin, &res->symbols_named, res->symbols_error, sizeof(res->symbols_error)) != 0)
		res->symbols_named = 0;
	if (rc == INGEST_OK)
		mark_stream(c, id, res);
	if (rc == INGEST_OK && (summary = cat_summary_json(res, db)) == NULL) {
		rc = INGEST_EDB;
		snprintf(res->error, sizeof(res->error), "the trace's database could not be read back after ingest");
	}
	/* stored before the trace is ready, so a ready trace can always be fetched;
	 * a live trace's source grew after its put, so it is stored again whole */
	if (rc == INGEST_OK && ((store = c->store.ops->publish(&c->store, id, "trace.db", res->error,
								   sizeof(res->error))) != 0 ||
				(was_live(c, id) && (store = c->store.ops->publish(&c->store, id, "source", res->error,
										     sizeof(res->error))) != 0)))
		rc = INGEST_EDB;
	if (store == -2) {
		job_wait_store(c, id, res->error);
		free(summary);
		free(res);
		return;
	}
	/* indexed before the trace is ready, so search never misses a ready trace */
	if (rc == INGEST_OK)
		indexed = cat_index_trace(c, id, db) == 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	job_finish(c, id, rc, res, summary, indexed,
		   (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	free(res);
}

/* Removes failed traces older than keep_failed and what the retention
 * bounds give up (under mu). */
static void prune(struct catalog *c)
{
	struct cat_removal plan[64];
	time_t now = time(NULL);
	size_t i = 0, n;

	while (i < c->n) {
		struct trace_rec *r = c->v[i], *gone;

		if (r->status == TS_FAILED && !r->foreign && r->waiters == NULL &&
		    (int64_t)(now - r->created) >= c->o.keep_failed) {
			fprintf(stderr, "trace-server: removing failed trace %" PRId64 " (older than --keep-failed)\n",
				r->id);
			if ((gone = cat_remove_locked(c, r->id, NULL)) == NULL)
				return; /* the database is down: the next round tries again */
			cat_rec_free(gone);
			continue;
		}
		i++;
	}
	n = cat_retention_plan(c->v, c->n, &c->o, now, plan, sizeof(plan) / sizeof(plan[0]));
	for (i = 0; i < n; i++) {
		fprintf(stderr, "trace-server: retention removes trace %" PRId64 " (%s)\n", plan[i].id,
			strcmp(plan[i].reason, "age") == 0 ? "older than --retain-days" : "over --retain-bytes");
		cat_rec_free(cat_remove_locked(c, plan[i].id, NULL));
	}
}

/* A ready trace the name index does not hold yet (an older catalog's, or
 * renamed functions); NULL when none. */
static struct trace_rec *next_unindexed(struct catalog *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i]->status == TS_READY && !c->v[i]->indexed && !c->v[i]->foreign)
			return c->v[i];
	return NULL;
}

static void index_one(struct catalog *c, struct trace_rec *r)
{
	char db[4096];
	int64_t id = r->id;
	int ok;

	cat_path(c, id, "trace.db", db, sizeof(db));
	r->indexed = -1; /* being indexed: not picked again */
	pthread_mutex_unlock(&c->mu);
	ok = cat_fetch(c, id, "trace.db", NULL, 0) == 0 && cat_index_trace(c, id, db) == 0;
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) == NULL) {
		cat_unindex_locked(c, id);
		return;
	}
	r->indexed = ok ? 1 : 2; /* 2: failed, not tried again until restart */
	if (ok)
		cat_save(c, r, CATDB_STATE);
}

void *cat_worker_main(void *arg)
{
	struct catalog *c = arg;
	char hint[16];
	int64_t id;
	size_t i;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct trace_rec *next = NULL, *unindexed;

		prune(c);
		for (i = 0; i < c->n && next == NULL; i++)
			if (c->v[i]->status == TS_QUEUED && !c->v[i]->foreign)
				next = c->v[i];
		if (next == NULL && (unindexed = next_unindexed(c)) != NULL) {
			index_one(c, unindexed);
			continue;
		}
		if (next == NULL) {
			/* wake at least once a minute (sooner for a short
			 * --keep-failed) to remove old traces */
			struct timespec until;
			int64_t keep = c->o.keep_failed;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += keep < 60 ? (keep > 0 ? keep : 1) : 60;
			pthread_cond_timedwait(&c->work, &c->mu, &until);
			continue;
		}
		if (time(NULL) < c->store_retry_at) {
			struct timespec until = { c->store_retry_at, 0 };

			pthread_cond_timedwait(&c->work, &c->mu, &until);
			continue;
		}
		next->status = TS_INGESTING;
		next->bytes_done = 0;
		cat_save(c, next, CATDB_STATE);
		snprintf(hint, sizeof(hint), "%s", next->format_hint);
		id = next->id;
		pthread_mutex_unlock(&c->mu);
		job_run(c, id, hint);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}
