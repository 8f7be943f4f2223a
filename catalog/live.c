/*
 * Live traces: a stream ingested while it arrives.
 *
 * The bytes received are appended to the trace's source as they come (by
 * the connection that receives them, server/upload.c). This file's thread
 * keeps the trace's database following them: whenever a live trace's source
 * has grown, it ingests the whole source received so far into a new
 * database and renames it over the old one. A reader holds the file it
 * opened, so every request reads one consistent snapshot, and each
 * snapshot is exactly what ingesting the same bytes as a file gives
 * (records out of time order, slices still open, a record cut at the end:
 * all as for an archive). When the stream ends the trace goes to the
 * worker's queue and is ingested whole once more, as an upload is.
 *
 * A snapshot of an FXT stream reads at most a window of its newest bytes,
 * with the durable records before them (window.h): its cost then stays
 * the same however long the stream runs. The window is --live-window, or
 * else what this thread ingested in WINDOW_MS at its last snapshot's pace
 * (at least WINDOW_MIN), so that bytes are visible within about a second
 * at any rate a stream arrives. Other formats are read whole.
 *
 * Snapshots are spaced: SNAP_MIN_MS after a window's, and after a whole
 * stream's (whose cost grows with it) no sooner than it took, which keeps
 * the live thread's share of a core near half. A stream that pauses is
 * visible (within its window) in one snapshot's time, and once it has sent
 * nothing for --live-pause, whole: its window's snapshot is followed by
 * one of every byte received (paused()), so that a stream at rest shows
 * its whole history, exactly as ingesting those bytes as a file does. The
 * first byte that arrives meanwhile cancels that one (snap_progress): a
 * stream that flows again is shown by its window at once.
 *
 * The same thread previews a large FXT upload while the worker ingests it
 * (--preview-min): the bytes ingest has read so far are a stream that
 * grows, so their window is snapshotted the same way, into preview.db
 * (trace.db is the worker's to write), which requests read while the
 * status is "ingesting". A preview is put in place under the catalog's
 * lock only while the ingest runs, and the worker removes it under the
 * same lock as it ends the ingest (cat_preview_drop_locked): none
 * outlives it, and the trace's database is the worker's alone. Previews
 * are spaced PREVIEW_GAP_MS at least, and PREVIEW_SHARE times what the
 * last one took, so that they take at most a fifth of a core from the
 * ingest they show: on the 4 GB benchmark, previews a second apart took
 * 12.6 s of the 24 s of decoding, on a machine of two cores. Shared
 * ingest jobs (c->shared_jobs) have none: another server may be ingesting.
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
#include "window.h"

/* live.c's state, under mu (each stream's window scan is the thread's
 * own: struct live_slot below). */
struct cat_live {
	pthread_t thread;
	int started;
	pthread_cond_t work;   /* signalled when a live trace gets bytes or ends,
				* an ingest begins decoding, or on stop */
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
enum { SNAP_MIN_MS = 100, IDLE_WAIT_MS = 500, DETECT_BYTES = 33, WINDOW_MS = 200, PREVIEW_GAP_MS = 1000,
       PREVIEW_SHARE = 4, PAUSE_MAX_MS = 30000 };
#define WINDOW_MIN ((uint64_t)2 << 20)

/* The live thread's own state of one live trace: its window's scan. */
struct live_slot {
	int64_t id;
	struct live_window w;
	double bytes_per_ms;   /* the last snapshot's pace; 0 before one */
	int fxt;               /* the stream is FXT (only FXT has windows) */
	int preview;           /* an upload's ingest: snapshots go to preview.db */
};

struct live_slots {
	struct live_slot *v;
	size_t n, cap;
};

static void slot_free(struct live_slot *s)
{
	lw_free(&s->w);
}

/* The slot of trace id, made when new; NULL when out of memory. */
static struct live_slot *slot_of(struct live_slots *ls, int64_t id, uint64_t mark_bytes)
{
	struct live_slot *grown;
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (ls->v[i].id == id)
			return &ls->v[i];
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 8;

		if ((grown = realloc(ls->v, cap * sizeof(*grown))) == NULL)
			return NULL;
		ls->v = grown;
		ls->cap = cap;
	}
	ls->v[ls->n] = (struct live_slot){ .id = id };
	lw_init(&ls->v[ls->n].w, mark_bytes);
	return &ls->v[ls->n++];
}

/* Whether trace r's ingest is previewed (under mu): an upload (not a
 * stream) this server's own worker ingests, of --preview-min bytes or
 * more, that may be FXT and was not found to be anything else. */
static int previewed(const struct catalog *c, const struct trace_rec *r)
{
	return r->state.status == TS_INGESTING && r->state.stream[0] == '\0' && !r->sync.foreign && !c->shared_jobs && c->o.preview_min > 0 &&
	       r->state.size >= c->o.preview_min && r->live.preview >= 0 &&
	       (r->state.format_hint[0] == '\0' || strcmp(r->state.format_hint, "fxt") == 0);
}

/* The bytes of source a snapshot of r holds: a stream's received, an
 * ingest's read so far. */
static uint64_t snap_bytes(const struct trace_rec *r)
{
	return r->state.status == TS_LIVE ? r->state.size : r->progress.bytes_done;
}

/* Drops the slots of traces no longer live or previewed (under mu); how
 * many. */
static size_t slots_sweep(struct catalog *c, struct live_slots *ls)
{
	size_t i = 0, freed = 0;

	while (i < ls->n) {
		struct trace_rec *r = cat_find(c, ls->v[i].id);

		if (r != NULL && (r->state.status == TS_LIVE || previewed(c, r))) {
			i++;
			continue;
		}
		slot_free(&ls->v[i]);
		ls->v[i] = ls->v[--ls->n];
		freed++;
	}
	return freed;
}

/* The bytes of stream a snapshot may read. */
static uint64_t window_bytes(const struct catalog *c, const struct live_slot *s)
{
	double paced = s->bytes_per_ms * WINDOW_MS;

	if (c->o.live_window)
		return c->o.live_window;
	return paced > (double)WINDOW_MIN ? (uint64_t)paced : WINDOW_MIN;
}

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
		if (size != r->state.size)
			r->live.grew_ms = cat_now_ms();
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
		*readable = r && (st == TS_READY || (r->state.stream[0] && r->live.snapshot && st != TS_FAILED) ||
				  (st == TS_INGESTING && r->live.preview == 1));
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

void cat_preview_drop_locked(struct catalog *c, struct trace_rec *r)
{
	char path[4096];

	if (r->state.stream[0])
		return;
	if (r->live.preview == 1) /* what the preview told goes with it; a ready trace's own comes next */
		rec_view_clear(r);
	r->live.preview = 0;
	r->live.snap_size = r->live.snap_visible = r->live.snap_from = 0;
	r->live.snap_due_ms = 0;
	c->store.ops->local_path(&c->store, r->id, "preview.db", path, sizeof(path));
	unlink(path);
	c->store.ops->local_path(&c->store, r->id, "preview-new.db", path, sizeof(path));
	unlink(path);
}

struct snap_job {
	struct catalog *c;
	int64_t id;
	int preview;
	int whole;     /* a paused stream's whole snapshot (paused()) */
	uint64_t size; /* the bytes it reads */
};

/* Stops a snapshot when its trace is deleted, the server stops, or the
 * ingest a preview shows has ended; and a paused stream's whole snapshot
 * when bytes arrive again (the window's comes first then). */
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
	gone = r == NULL || j->c->stop || (j->preview && r->state.status != TS_INGESTING) ||
	       (j->whole && r->state.size != j->size);
	pthread_mutex_unlock(&j->c->mu);
	return gone;
}

/* Chooses what a snapshot of the first size bytes of an FXT stream reads
 * (window.h): fills o's prefix and from_byte, and returns the prefix
 * (malloc'd) or NULL. A window that cannot be had reads the whole stream. */
static uint8_t *choose_window(struct catalog *c, struct live_slot *s, const char *src, uint64_t size,
			      struct ingest_opts *o)
{
	uint8_t *prefix = NULL;
	uint64_t from = 0;
	size_t plen = 0;
	int fd, rc;

	/* opened for each snapshot, never held between them: a deleted
	 * trace's file must give its room back at once (a full disk) */
	if ((fd = open(src, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (!s->fxt) { /* windows are FXT's: told by the stream's first bytes */
		uint8_t head[64];
		ssize_t k = pread(fd, head, sizeof(head), 0);
		const char *f = k > 0 ? ingest_detect(head, (size_t)k) : NULL;

		if (f == NULL || strcmp(f, "fxt") != 0) {
			close(fd);
			return NULL;
		}
		s->fxt = 1;
	}
	rc = lw_scan(&s->w, fd, size);
	close(fd);
	if (rc != 0) {
		s->w.broken = 1; /* a read failed or memory ran out: whole snapshots from now on */
		return NULL;
	}
	if (lw_input(&s->w, size, window_bytes(c, s), &from, &prefix, &plen) != 0)
		return NULL;
	o->prefix = prefix;
	o->prefix_len = plen;
	o->from_byte = from;
	return prefix;
}

/* Notes in r what a snapshot (or a preview) holds: the bytes, where its
 * window starts, the format, the time range and the summary (taken). A
 * window's time range starts where the trace does (the earliest time the
 * scan of the whole stream saw, window.h), so that every time the view
 * shows is measured as in the finished trace. */
static void snap_note(struct trace_rec *r, uint64_t size, uint64_t from, const struct live_window *w,
		      const struct ingest_result *res, char **summary)
{
	int64_t start_ns = res->start_ns;

	r->live.snap_visible = size;
	r->live.snap_from = from;
	if (from > 0 && w->have_first && (res->start_ns != 0 || res->end_ns != 0) && w->first_ns < start_ns)
		start_ns = w->first_ns;
	rec_view(r, res->format ? res->format : "", start_ns, res->end_ns, summary);
}

/* Takes what a snapshot of a live trace found into its record (under mu);
 * stored: the bytes of its files, read before the lock. */
static void live_take_locked(struct catalog *c, int64_t id, int rc, uint64_t size, uint64_t from,
			     const struct live_window *w, const struct ingest_result *res, char **summary,
			     uint64_t stored)
{
	struct trace_rec *r = cat_find(c, id);

	if (r && r->state.status == TS_LIVE && rc == INGEST_OK) {
		r->live.snapshot = 1;
		snap_note(r, size, from, w, res, summary);
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

/* Puts a preview made in the file fresh in place (under mu), only while
 * the ingest it shows runs: once the worker ended it (and removed the
 * preview, cat_preview_drop_locked) or the trace went, fresh is removed.
 * 1 when the trace is gone, else 0. */
static int preview_take_locked(struct catalog *c, int64_t id, int rc, uint64_t size, uint64_t from,
			       const struct live_window *w, const struct ingest_result *res, char **summary,
			       const char *fresh)
{
	struct trace_rec *r = cat_find(c, id);
	char path[4096];

	if (r == NULL || r->state.status != TS_INGESTING || rc != INGEST_OK) {
		unlink(fresh);
		if (r && r->state.status == TS_INGESTING && (rc == INGEST_ENOTTRACE || rc == INGEST_EEMPTY))
			r->live.preview = -1; /* not FXT (or no window): none for this ingest */
		return r == NULL; /* any other failure keeps the last preview; tried again with more bytes */
	}
	c->store.ops->local_path(&c->store, id, "preview.db", path, sizeof(path));
	if (rename(fresh, path) != 0) {
		unlink(fresh);
		return 0;
	}
	r->live.preview = 1;
	snap_note(r, size, from, w, res, summary);
	return 0;
}

/* Ingests the source received so far (or its window, for FXT, unless
 * whole: a paused stream's) into the trace's database, or for a preview (s->preview) the window of what its
 * ingest has read into preview.db; returns the ingest's result
 * (INGEST_ENOMEM when none ran; INGEST_ENOTTRACE for a preview of what is
 * not FXT or has no window). */
static int snapshot(struct catalog *c, struct live_slot *s, uint64_t size, const char *hint, int whole,
		    int64_t *took_ms)
{
	struct snap_job j = { c, s->id, s->preview, whole, size };
	struct ingest_result *res = calloc(1, sizeof(*res));
	struct ingest_opts o = { 0 };
	char src[4096], db[4096];
	char *summary = NULL;
	int64_t t0 = cat_now_ms();
	uint8_t *prefix = NULL;
	uint64_t stored = 0;
	int rc, gone = 0;

	if (res == NULL)
		return INGEST_ENOMEM;
	cat_path(c, s->id, "source", src, sizeof(src));
	cat_path(c, s->id, s->preview ? "preview-new.db" : "trace.db", db, sizeof(db));
	o.progress = snap_progress;
	o.progress_ctx = &j;
	o.format = hint[0] ? hint : NULL;
	o.max_bytes = size; /* exactly the bytes the catalog was told of */
	if (!whole && (hint[0] == '\0' || strcmp(hint, "fxt") == 0))
		prefix = choose_window(c, s, src, size, &o);
	if (s->preview && (!s->fxt || s->w.broken))
		rc = INGEST_ENOTTRACE; /* a preview reads a window, never the whole of a growing input */
	else
		rc = ingest_file_apart(c->o.ingest_exe, src, db, &o, res);
	if (rc == INGEST_OK)
		summary = cat_summary_json(res, db);
	*took_ms = cat_now_ms() - t0;
	if (rc == INGEST_OK && *took_ms > 0)
		s->bytes_per_ms = (double)(size - o.from_byte + o.prefix_len) / (double)*took_ms;
	free(prefix);
	if (rc == INGEST_ENOTTRACE && !s->preview) /* it may fail for good: its files counted without the lock */
		stored = c->store.ops->usage(&c->store, s->id);
	pthread_mutex_lock(&c->mu);
	if (rc != INGEST_ECANCEL)
		cat_seconds_note(&c->stats.snapshot, (double)*took_ms / 1e3);
	if (s->preview)
		gone = preview_take_locked(c, s->id, rc, size, o.from_byte, &s->w, res, &summary, db);
	else
		live_take_locked(c, s->id, rc, size, o.from_byte, &s->w, res, &summary, stored);
	pthread_mutex_unlock(&c->mu);
	if (gone) /* deleted meanwhile: the worker's removal of its files may have met this one's */
		c->store.ops->remove(&c->store, s->id);
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

/* Whether live trace r has paused (under mu): its view is a window of
 * every byte received so far, and none came for --live-pause, so that its
 * next snapshot reads the whole stream. When it will have, *wait_ms is
 * cut to then. */
static int paused(const struct catalog *c, const struct trace_rec *r, int64_t now, int64_t *wait_ms)
{
	int64_t at = r->live.grew_ms + (r->live.pause_ms > 0 ? r->live.pause_ms : c->o.live_pause_ms);

	if (c->o.live_pause_ms <= 0 || r->live.snap_from == 0 || r->live.snap_size != r->state.size)
		return 0;
	if (at <= now)
		return 1;
	if (at - now < *wait_ms)
		*wait_ms = at - now;
	return 0;
}

/* The next trace to work on (under mu): a live one whose stream ended
 * (*ended: to be handed to the worker at once), else the one longest due,
 * live or previewed, whose bytes grew. *wait_ms gets how long until one is
 * due when none is. */
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
		if ((!live && !previewed(c, r)) || (snap_bytes(r) == r->live.snap_size && !(live && paused(c, r, now, wait_ms))))
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

/* After a snapshot of size bytes (whole: a paused stream's) that gave rc
 * and took took ms: when r's next may start (under mu). */
static void snap_schedule(const struct catalog *c, struct trace_rec *r, int preview, int whole, int rc, uint64_t size,
			  int64_t took)
{
	/* a snapshot of a window costs the same each time: the next may
	 * follow at once; a whole one is spaced by what it took, as its cost
	 * grows with the stream */
	int64_t gap = r->live.snap_from > 0 || whole || took < SNAP_MIN_MS ? SNAP_MIN_MS : took;

	if (rc == INGEST_OK || rc == INGEST_ENOTTRACE || rc == INGEST_EEMPTY)
		r->live.snap_size = size; /* done, or waiting for more bytes */
	else if (!(whole && rc == INGEST_ECANCEL)) /* bytes came: a window at once */
		gap = IDLE_WAIT_MS * 2; /* it failed: the same bytes again in a while */
	/* a stream whose pauses are shorter than its whole snapshot takes
	 * would start one at each and cancel it: its pause doubles at each
	 * cancel, up to PAUSE_MAX_MS, and is the server's again once one is
	 * made */
	if (whole && rc == INGEST_ECANCEL)
		r->live.pause_ms = 2 * (r->live.pause_ms > 0 ? r->live.pause_ms : c->o.live_pause_ms);
	if (r->live.pause_ms > PAUSE_MAX_MS)
		r->live.pause_ms = PAUSE_MAX_MS;
	if (whole && rc == INGEST_OK)
		r->live.pause_ms = 0;
	if (preview && gap < PREVIEW_GAP_MS)
		gap = PREVIEW_GAP_MS; /* the ingest it shows comes first */
	if (preview && gap < PREVIEW_SHARE * took)
		gap = PREVIEW_SHARE * took;
	r->live.snap_due_ms = cat_now_ms() + gap;
}

static void *live_main(void *arg)
{
	struct catalog *c = arg;
	struct live_slots ls = { 0 };
	uint64_t mark_bytes = c->o.live_window ? c->o.live_window / 8 : (uint64_t)1 << 20;
	size_t i;

	struct cat_grows *gs = cat_grows_new();

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		int64_t wait_ms, took = 0, id, ended, poll_ms;
		struct trace_rec *r;
		struct live_slot *s;
		uint64_t size;
		char hint[16];
		int rc, whole;

		if (slots_sweep(c, &ls) > 0) {
			/* a window's buffers went: this thread's arena keeps its
			 * top up to the trim threshold unless told otherwise
			 * (util.h); trimmed without the catalog's lock */
			pthread_mutex_unlock(&c->mu);
			heap_release();
			pthread_mutex_lock(&c->mu);
			continue;
		}
		poll_ms = gs != NULL ? cat_grows_service_locked(c, gs) : -1;
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
		size = snap_bytes(r);
		snprintf(hint, sizeof(hint), "%s", r->state.format_hint);
		if ((s = slot_of(&ls, id, mark_bytes)) == NULL) {
			r->live.snap_due_ms = cat_now_ms() + IDLE_WAIT_MS; /* out of memory: try again later */
			continue;
		}
		s->preview = r->state.status == TS_INGESTING;
		/* no new bytes: it paused; or its growing ingest ended before its
		 * stream did (grow.c): every snapshot reads it whole, as a file */
		whole = !s->preview && (size == r->live.snap_size || r->live.grown_done);
		pthread_mutex_unlock(&c->mu);
		rc = snapshot(c, s, size, hint, whole, &took);
		/* what the snapshot's ingest freed goes back to the system: one
		 * every fraction of a second must not hold a stream's peak, nor a
		 * heap's scattered holes, for good (trimming only past a slack
		 * of the resident size let it creep: 1.13 over five minutes), and
		 * this thread's arena's top too (util.h) */
		heap_release_own();
		pthread_mutex_lock(&c->mu);
		if ((r = cat_find(c, id)) != NULL)
			snap_schedule(c, r, s->preview, whole, rc, size, took);
	}
	pthread_mutex_unlock(&c->mu);
	cat_grows_free(gs);
	for (i = 0; i < ls.n; i++)
		slot_free(&ls.v[i]);
	free(ls.v);
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
