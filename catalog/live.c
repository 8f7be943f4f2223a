/*
 * Live traces: a stream ingested while it arrives.
 *
 * The bytes received are appended to the trace's source as they come (by
 * the connection that receives them, server/upload.c). An FXT stream is
 * grown in place by an ingest of its own (grow.c), run from this file's
 * thread each round (cat_grows_service_locked); when its stream ends the
 * worker takes that ingest's result.
 *
 * Any other stream (XRay, whose per-thread buffers are only whole at the
 * end), or an FXT stream whose growing ingest ended before the stream did,
 * is *snapshotted*: whenever its source has grown, this thread ingests the
 * whole source received so far into a new database and renames it over
 * the old one. A reader holds the file it opened, so every request reads
 * one consistent snapshot, and each snapshot is exactly what ingesting the
 * same bytes as a file gives. Snapshots are spaced: no sooner than the
 * last one took (their cost grows with the stream), which keeps this
 * thread's share of a core near half. When the stream ends the trace goes
 * to the worker's queue and is ingested whole once more, as an upload is.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/child.h"
#include "../ingest/ingest.h"
#include "catalog_internal.h"
#include "grow.h"

/* live.c's state, under mu. */
struct cat_live {
	pthread_t thread;
	int started;
	pthread_cond_t work;   /* signalled when a live trace gets bytes or ends,
				* or on stop */
};

struct cat_live *cat_live_create(void)
{
	struct cat_live *l = calloc(1, sizeof(*l));

	if (l != NULL)
		pthread_cond_init(&l->work, NULL);
	return l;
}

void cat_live_destroy(struct cat_live *l)
{
	if (l == NULL)
		return;
	pthread_cond_destroy(&l->work);
	free(l);
}

void cat_live_wake(struct catalog *c)
{
	pthread_cond_broadcast(&c->live->work);
}

/* DETECT_BYTES: the most a format needs to be told from other bytes (an
 * XRay header and its first record's first byte); fewer that are not a
 * trace yet may become one. */
enum { SNAP_MIN_MS = 100, IDLE_WAIT_MS = 500, DETECT_BYTES = 33 };

int64_t cat_live_open(struct catalog *c, const struct cat_new *n, int *fd, char *err, size_t errlen)
{
	struct cat_new nw = *n;
	char spool[4096], dir[2048], src[4096];
	int64_t id;
	int tmp;

	*fd = -1;
	cat_spool_dir(c, dir, sizeof(dir));
	snprintf(spool, sizeof(spool), "%s/live-XXXXXX", dir);
	if ((tmp = mkostemp(spool, O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot create the trace's file: %s", strerror(errno));
		return CAT_EFAIL;
	}
	close(tmp);
	nw.spool = spool;
	nw.size = 0;
	nw.binary_spool = NULL;
	nw.binary_filename = NULL;
	if ((id = cat_add_as(c, &nw, TS_LIVE, err, errlen)) < 0) {
		unlink(spool);
		return id;
	}
	cat_path(c, id, "source", src, sizeof(src));
	if ((*fd = open(src, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot open the trace's file: %s", strerror(errno));
		cat_delete(c, id);
		return CAT_EFAIL;
	}
	return id;
}

int cat_live_grew(struct catalog *c, int64_t id, uint64_t size, char *err, size_t errlen)
{
	struct trace_rec *r;
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	if (r == NULL) {
		rc = CAT_ENOTRACE;
	} else if (r->state.status == TS_FAILED) {
		snprintf(err, errlen, "%s", r->state.error_msg ? r->state.error_msg : "the trace failed");
		rc = CAT_EBADTRACE;
	} else if (r->state.status == TS_LIVE) {
		rec_grew(r, size);
		cat_live_wake(c);
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

void cat_live_close(struct catalog *c, int64_t id, int complete)
{
	struct trace_rec *r;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	if (r && strcmp(r->state.stream, "receiving") == 0) {
		rec_stream(r, complete ? "complete" : "dropped");
		cat_save(c, r, CATDB_STATE);
		cat_live_wake(c);
	}
	pthread_mutex_unlock(&c->mu);
}

void cat_live_recover(struct catalog *c, struct trace_rec *r)
{
	char path[4096];
	struct stat st;

	if (strcmp(r->state.stream, "receiving") == 0)
		rec_stream(r, "interrupted");
	rec_queue(r); /* ingested whole from what it had received */
	cat_path(c, r->id, "source", path, sizeof(path));
	if (stat(path, &st) == 0) /* what it received: the catalog is told of sizes only now and then */
		rec_size(r, (uint64_t)st.st_size);
	cat_path(c, r->id, "trace.db", path, sizeof(path));
	r->live.snapshot = stat(path, &st) == 0; /* readable while ingested whole */
}

int cat_rec_growing_locked(const struct trace_rec *r)
{
	int st = r->state.status;

	return (r->state.stream[0] && r->live.snapshot && st != TS_FAILED) || (st == TS_INGESTING && r->live.preview == 1);
}

int cat_readable(struct catalog *c, int64_t id, int *readable)
{
	struct trace_rec *r;
	int st;

	int looked = 0;

	pthread_mutex_lock(&c->mu);
	cat_sync_locked(c, 0); /* a trace read goes on from memory while the database is down */
	for (;;) {
		r = cat_find(c, id);
		st = r ? r->state.status : CAT_ENOTRACE;
		*readable = r && (st == TS_READY || cat_rec_growing_locked(r));
		/* with a shared catalog, another server may have made it ready (or
		 * added it) since this one last looked: look now, once, rather
		 * than answer 404 or 409 for a trace it already answered 201 for */
		if (*readable || looked || !c->shared || cat_sync_locked(c, 1) != 0)
			break;
		looked = 1;
	}
	pthread_mutex_unlock(&c->mu);
	return st;
}

void cat_preview_drop_locked(struct trace_rec *r)
{
	if (r->state.stream[0])
		return;
	if (r->live.preview == 1) /* what its commits told goes; a ready trace's own comes next */
		rec_view_clear(r);
	r->live.preview = 0;
	r->live.snap_visible = 0;
}

struct snap_job {
	struct catalog *c;
	int64_t id;
	uint64_t size; /* the bytes it reads */
};

/* Stops a snapshot when its trace is deleted or the server stops. */
static int snap_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct snap_job *j = ctx;
	struct trace_rec *r;
	int gone;

	(void)phase;
	(void)done;
	(void)total;
	(void)events;
	pthread_mutex_lock(&j->c->mu);
	r = cat_find(j->c, j->id);
	gone = r == NULL || j->c->stop;
	pthread_mutex_unlock(&j->c->mu);
	return gone;
}

/* Takes what a snapshot of a live trace found into its record (under mu);
 * stored: the bytes of its files, read before the lock. */
static void live_take_locked(struct catalog *c, int64_t id, int rc, uint64_t size, const struct ingest_result *res,
			     char **summary, uint64_t stored)
{
	struct trace_rec *r = cat_find(c, id);

	if (r && r->state.status == TS_LIVE && rc == INGEST_OK) {
		r->live.snapshot = 1;
		r->live.snap_visible = size;
		rec_view(r, res->format ? res->format : "", res->start_ns, res->end_ns, summary);
	} else if (r && r->state.status == TS_LIVE && rc == INGEST_ENOTTRACE && size >= DETECT_BYTES) {
		/* not a trace: it will not become one with more bytes */
		rec_fail(r, "not_a_trace", res->error[0] ? res->error : ingest_strerror(rc));
		rec_stored(r, stored);
		cat_save(c, r, CATDB_STATE);
		cat_wake(c, r);
	}
	/* any other failure (a full disk, say) keeps the last snapshot; the
	 * same bytes are tried again (live_main) */
}

/* Ingests live trace id's source received so far (size bytes) into its
 * database, whole, as a file; returns the ingest's result (INGEST_ENOMEM
 * when none ran). */
static int snapshot(struct catalog *c, int64_t id, uint64_t size, const char *hint, int64_t *took_ms)
{
	struct snap_job j = { c, id, size };
	struct ingest_result *res = calloc(1, sizeof(*res));
	struct ingest_opts o = { 0 };
	char src[4096], db[4096];
	char *summary = NULL;
	int64_t t0 = cat_now_ms();
	uint64_t stored = 0;
	int rc;

	if (res == NULL)
		return INGEST_ENOMEM;
	cat_path(c, id, "source", src, sizeof(src));
	cat_path(c, id, "trace.db", db, sizeof(db));
	o.progress = snap_progress;
	o.progress_ctx = &j;
	o.format = hint[0] ? hint : NULL;
	o.max_bytes = size; /* exactly the bytes the catalog was told of */
	rc = ingest_file_apart(c->o.ingest_exe, src, db, &o, res);
	if (rc == INGEST_OK)
		summary = cat_summary_json(res, db);
	*took_ms = cat_now_ms() - t0;
	if (rc == INGEST_ENOTTRACE) /* it may fail for good: its files counted without the lock */
		stored = c->store.ops->usage(&c->store, id);
	pthread_mutex_lock(&c->mu);
	if (rc != INGEST_ECANCEL)
		cat_seconds_note(&c->stats.snapshot, (double)*took_ms / 1e3);
	live_take_locked(c, id, rc, size, res, &summary, stored);
	pthread_mutex_unlock(&c->mu);
	free(summary);
	free(res);
	return rc;
}

/* A live trace whose stream ended: handed to the worker, to be ingested
 * whole as an upload is (called and returning under mu; the store is
 * asked without it). With shared jobs any server may ingest it from the
 * store: its source goes there whole first, and a store that is down keeps
 * it for a later round. */
static void stream_ended(struct catalog *c, int64_t id)
{
	struct trace_rec *r;
	uint64_t stored = 0;
	char err[512];
	int rc = 0;

	pthread_mutex_unlock(&c->mu);
	if (c->shared_jobs && (rc = c->store.ops->publish(&c->store, id, "source", err, sizeof(err))) != 0)
		fprintf(stderr, "trace-server: live trace %" PRId64 " waits for the store: %s\n", id, err);
	else
		stored = c->store.ops->usage(&c->store, id);
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) == NULL || r->state.status != TS_LIVE)
		return;
	if (rc != 0) {
		r->live.handover_ms = cat_now_ms() + IDLE_WAIT_MS;
		return;
	}
	rec_queue(r);
	rec_stored(r, stored);
	cat_save(c, r, CATDB_STATE);
	cat_worker_wake(c);
}

/* The next trace to work on (under mu): a live one whose stream ended
 * (*ended: to be handed to the worker at once), else the snapshotted one
 * longest due whose bytes grew. *wait_ms gets how long until one is due
 * when none is. */
static struct trace_rec *next_live(struct catalog *c, int64_t now, int64_t *wait_ms, int64_t *ended)
{
	struct trace_rec *due = NULL;
	size_t i;

	*wait_ms = IDLE_WAIT_MS;
	*ended = 0;
	for (i = 0; i < c->n; i++) {
		struct trace_rec *r = c->v[i];
		int live = r->state.status == TS_LIVE && !r->sync.foreign; /* not another server's stream */

		if (live && r->live.growing >= 0 && !r->live.grown_done)
			continue; /* grown in place (grow.c), or not known yet: no snapshot */
		if (live && strcmp(r->state.stream, "receiving") != 0) {
			if (r->live.handover_ms <= now) {
				*ended = r->id;
				return NULL;
			}
			if (r->live.handover_ms - now < *wait_ms)
				*wait_ms = r->live.handover_ms - now;
			continue;
		}
		if (!live || r->state.size == r->live.snap_size)
			continue;
		if (r->live.snap_due_ms > now) {
			if (r->live.snap_due_ms - now < *wait_ms)
				*wait_ms = r->live.snap_due_ms - now;
			continue;
		}
		if (due == NULL || r->live.snap_due_ms < due->live.snap_due_ms)
			due = r;
	}
	return due;
}

/* After a snapshot of size bytes that gave rc and took took ms: when r's
 * next may start (under mu). Its cost grows with the stream: the next is
 * spaced by what it took. */
static void snap_schedule(struct trace_rec *r, int rc, uint64_t size, int64_t took)
{
	int64_t gap = took < SNAP_MIN_MS ? SNAP_MIN_MS : took;

	if (rc == INGEST_OK || rc == INGEST_ENOTTRACE || rc == INGEST_EEMPTY)
		r->live.snap_size = size; /* done, or waiting for more bytes */
	else
		gap = IDLE_WAIT_MS * 2; /* it failed: the same bytes again in a while */
	r->live.snap_due_ms = cat_now_ms() + gap;
}

static void *live_main(void *arg)
{
	struct catalog *c = arg;
	struct cat_grows *gs = cat_grows_new();

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		int64_t wait_ms, took = 0, id, ended, poll_ms;
		struct trace_rec *r;
		uint64_t size;
		char hint[16];
		int rc;

		poll_ms = gs != NULL ? cat_grows_service_locked(c, gs) : -1;
		if (c->stop)
			break; /* it came while the service had mu released */
		r = next_live(c, cat_now_ms(), &wait_ms, &ended);
		if (ended) {
			stream_ended(c, ended);
			continue;
		}
		if (r == NULL) {
			cond_wait_ms(&c->live->work, &c->mu, poll_ms >= 0 && poll_ms < wait_ms ? poll_ms : wait_ms);
			continue;
		}
		id = r->id;
		size = r->state.size;
		snprintf(hint, sizeof(hint), "%s", r->state.format_hint);
		pthread_mutex_unlock(&c->mu);
		rc = snapshot(c, id, size, hint, &took);
		/* what the snapshot's ingest freed goes back to the system: one
		 * every fraction of a second must not hold a stream's peak, nor a
		 * heap's scattered holes, for good (trimming only past a slack
		 * of the resident size let it creep: 1.13 over five minutes), and
		 * this thread's arena's top too (util.h) */
		heap_release_own();
		pthread_mutex_lock(&c->mu);
		if ((r = cat_find(c, id)) != NULL)
			snap_schedule(r, rc, size, took);
	}
	pthread_mutex_unlock(&c->mu);
	cat_grows_free(gs);
	return NULL;
}

int cat_live_start(struct catalog *c)
{
	if (pthread_create(&c->live->thread, NULL, live_main, c) != 0)
		return CAT_EFAIL;
	c->live->started = 1;
	return 0;
}

void cat_live_join(struct catalog *c)
{
	if (c->live->started)
		pthread_join(c->live->thread, NULL);
	c->live->started = 0;
}
