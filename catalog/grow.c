/*
 * Traces grown in place as their bytes arrive (grow.h).
 *
 * Each round, under mu, the live traces of this server are listed with
 * what they received; without the lock, each FXT one's growing ingest is
 * started, told of new bytes and of the stream's end, and its reports are
 * read (commits: the summary of each read back from the database); under
 * mu again, what they said goes to the records. A stream's format is told
 * by its first bytes (or its format hint): other formats are snapshotted
 * whole by live.c, as before.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ingest/grow.h"
#include "catalog_internal.h"
#include "grow.h"

enum { GROW_POLL_MS = 50, DETECT_BYTES = 33 };

/* One live trace's growing ingest: the live thread's own. */
struct grow_slot {
	int64_t id;
	struct ingest_grow *g;
	uint64_t told;            /* the size g was told */
	int end_told;
	int fxt;                  /* 1: FXT, grown; -1: not; 0: not known yet */
	/* what its reports said since the last round, for the record */
	int committed;            /* a commit came */
	uint64_t bytes;
	int exact;                /* it was a pause's (ingest/grow.h): the trace as a file */
	struct ingest_result res;
	char *summary;            /* of the last commit (cat_summary_json) */
	int ended;                /* its end came: rc and res are the result */
	int rc;
	char db[4096];
};

struct cat_grows {
	struct grow_slot *v;
	size_t n, cap;
};

/* What a round needs of a live trace, copied under mu. */
struct grow_job {
	int64_t id;
	uint64_t size;
	int ended;                /* the stream ended (its state is no more "receiving") */
	char hint[16];
	char src[4096], db[4096];
};

struct cat_grows *cat_grows_new(void)
{
	return calloc(1, sizeof(struct cat_grows));
}

static void slot_fini(struct grow_slot *s)
{
	ingest_grow_free(s->g, 0);
	free(s->summary);
}

void cat_grows_free(struct cat_grows *gs)
{
	size_t i;

	if (gs == NULL)
		return;
	for (i = 0; i < gs->n; i++)
		slot_fini(&gs->v[i]);
	free(gs->v);
	free(gs);
}

static struct grow_slot *slot_find(struct cat_grows *gs, int64_t id)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		if (gs->v[i].id == id)
			return &gs->v[i];
	return NULL;
}

static struct grow_slot *slot_add(struct cat_grows *gs, int64_t id)
{
	struct grow_slot *grown;

	if (gs->n == gs->cap) {
		size_t cap = gs->cap ? gs->cap * 2 : 8;

		if ((grown = realloc(gs->v, cap * sizeof(*grown))) == NULL)
			return NULL;
		gs->v = grown;
		gs->cap = cap;
	}
	memset(&gs->v[gs->n], 0, sizeof(gs->v[0]));
	gs->v[gs->n].id = id;
	return &gs->v[gs->n++];
}

/* The live traces this server receives, and what each received (under mu). */
static struct grow_job *list_locked(struct catalog *c, size_t *n)
{
	struct grow_job *v = NULL;
	size_t i, k = 0;

	for (i = 0; i < c->n; i++) {
		struct trace_rec *r = c->v[i];

		if (r->state.status != TS_LIVE || r->sync.foreign || r->live.growing < 0 || r->live.grown_done)
			continue;
		if (k % 16 == 0) {
			struct grow_job *more = realloc(v, (k + 16) * sizeof(*v));

			if (more == NULL)
				break;
			v = more;
		}
		v[k].id = r->id;
		v[k].size = r->state.size;
		v[k].ended = strcmp(r->state.stream, "receiving") != 0;
		snprintf(v[k].hint, sizeof(v[k].hint), "%s", r->state.format_hint);
		c->store.ops->local_path(&c->store, r->id, "source", v[k].src, sizeof(v[k].src));
		c->store.ops->local_path(&c->store, r->id, "trace.db", v[k].db, sizeof(v[k].db));
		k++;
	}
	*n = k;
	return v;
}

/* Whether the stream is FXT: 1, -1 (another format, or not a trace), 0
 * (too few bytes to tell yet). */
static int tell_fxt(const struct grow_job *j)
{
	uint8_t head[64];
	const char *f;
	ssize_t k;
	int fd;

	if (strcmp(j->hint, "fxt") == 0)
		return 1;
	if (j->hint[0] != '\0')
		return -1;
	if (j->size < DETECT_BYTES && !j->ended)
		return 0;
	if ((fd = open(j->src, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	k = pread(fd, head, sizeof(head), 0);
	close(fd);
	f = k > 0 ? ingest_detect(head, (size_t)k) : NULL;
	return f != NULL && strcmp(f, "fxt") == 0 ? 1 : -1;
}

/* Starts, tells and reads one trace's growing ingest (without mu). */
static void slot_run(struct catalog *c, struct grow_slot *s, const struct grow_job *j)
{
	struct ingest_result res;
	enum grow_report rep;
	uint64_t bytes;
	int rc, exact;

	if (s->fxt == 0 && (s->fxt = tell_fxt(j)) <= 0)
		return;
	if (s->g == NULL && !s->ended) {
		struct ingest_opts o = { 0 };
		char err[256];

		o.format = "fxt";
		o.extent_rows = CAT_GROW_EXTENT_ROWS;
		snprintf(s->db, sizeof(s->db), "%s", j->db);
		if ((s->g = ingest_grow_start(c->o.ingest_exe ? c->o.ingest_exe : "/proc/self/exe", j->src, j->db, &o,
					      c->o.live_pause_ms, -1, err, sizeof(err))) == NULL) {
			memset(&s->res, 0, sizeof(s->res));
			s->res.format = "fxt";
			snprintf(s->res.error, sizeof(s->res.error), "%s", err);
			s->rc = INGEST_EIO;
			s->ended = 1;
			return;
		}
	}
	if (s->g == NULL)
		return;
	if (j->size > s->told && ingest_grow_size(s->g, j->size) == 0)
		s->told = j->size;
	if (j->ended && !s->end_told && s->told == j->size && ingest_grow_end(s->g) == 0)
		s->end_told = 1;
	while ((rep = ingest_grow_read(s->g, 0, &res, &bytes, &exact, &rc)) == GROW_COMMIT) {
		s->committed = 1;
		s->bytes = bytes;
		s->exact = exact;
		s->res = res;
	}
	if (rep == GROW_DONE || rep == GROW_DIED) {
		s->ended = 1;
		s->rc = rc;
		s->res = res;
		if (rc != INGEST_OK) /* the stream falls back to snapshots (live.c): said why */
			fprintf(stderr, "trace-server: live trace %" PRId64 ": its growing ingest ended: %s\n", s->id,
				res.error[0] ? res.error : ingest_strerror(rc));
		ingest_grow_free(s->g, 0);
		s->g = NULL;
	}
	if (s->committed) {
		free(s->summary);
		s->summary = cat_summary_json(&s->res, s->db); /* NULL: read next time */
	}
}

/* Takes what slot s found into its trace's record (under mu); 1 when its
 * readers must open the database again (it was made anew). */
static int slot_take_locked(struct catalog *c, struct grow_slot *s)
{
	struct trace_rec *r = cat_find(c, s->id);
	int reopen = 0;

	if (r == NULL || r->state.status != TS_LIVE)
		return 0;
	if (s->fxt != 0 && r->live.growing == 0)
		r->live.growing = s->fxt;
	if (s->committed && s->summary != NULL) {
		r->live.snapshot = 1;
		r->live.grown_bytes = s->bytes;
		if (s->exact) /* a pause's: the trace as a file of these bytes */
			r->live.snap_visible = s->bytes;
		reopen = s->res.order_restarts != r->live.grown_restarts;
		r->live.grown_restarts = s->res.order_restarts;
		rec_view(r, s->res.format ? s->res.format : "fxt", s->res.start_ns, s->res.end_ns, &s->summary);
		s->committed = 0;
	}
	if (s->ended && !r->live.grown_done) {
		free(r->live.grown);
		if ((r->live.grown = malloc(sizeof(*r->live.grown))) != NULL)
			*r->live.grown = s->res;
		r->live.grown_rc = s->rc;
		r->live.grown_done = 1;
		cat_live_wake(c); /* the live thread hands it to the worker */
	}
	return reopen;
}

int64_t cat_grows_service_locked(struct catalog *c, struct cat_grows *gs)
{
	struct grow_job *jobs;
	int64_t *reopen;
	size_t n, i, k = 0, nreopen = 0;
	int running = 0;

	jobs = list_locked(c, &n);
	/* the slots of traces no longer live (ended and taken, deleted) go */
	for (i = 0; i < gs->n;) {
		struct trace_rec *r = cat_find(c, gs->v[i].id);

		if (r != NULL && r->state.status == TS_LIVE && !r->live.grown_done) {
			i++;
			continue;
		}
		slot_fini(&gs->v[i]);
		gs->v[i] = gs->v[--gs->n];
	}
	if (n == 0) {
		free(jobs);
		return -1;
	}
	reopen = calloc(n, sizeof(*reopen));
	pthread_mutex_unlock(&c->mu);
	for (i = 0; i < n; i++) {
		struct grow_slot *s = slot_find(gs, jobs[i].id);

		if (s == NULL && (s = slot_add(gs, jobs[i].id)) == NULL)
			continue;
		slot_run(c, s, &jobs[i]);
		running |= s->g != NULL;
	}
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < n; i++) {
		struct grow_slot *s = slot_find(gs, jobs[i].id);

		if (s != NULL && slot_take_locked(c, s) && reopen != NULL)
			reopen[nreopen++] = s->id;
		if (s != NULL && s->fxt < 0) { /* snapshotted whole instead (live.c) */
			struct trace_rec *r = cat_find(c, s->id);

			if (r != NULL)
				r->live.growing = -1;
		}
	}
	if (nreopen > 0 && c->o.db_gone) {
		pthread_mutex_unlock(&c->mu);
		for (k = 0; k < nreopen; k++)
			c->o.db_gone(reopen[k]);
		pthread_mutex_lock(&c->mu);
	}
	free(reopen);
	free(jobs);
	return running ? GROW_POLL_MS : -1;
}

int cat_grown_take(struct catalog *c, int64_t id, struct ingest_result *res, int *rc)
{
	struct trace_rec *r;
	int taken = 0;

	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL && r->live.grown != NULL) {
		*res = *r->live.grown;
		*rc = r->live.grown_rc;
		free(r->live.grown);
		r->live.grown = NULL;
		taken = 1;
	}
	pthread_mutex_unlock(&c->mu);
	return taken;
}

/* ---- an upload grown from its first byte ----------------------------------- */

int cat_upload_grows(struct catalog *c, uint64_t total, const char *hint, const uint8_t *head, size_t n)
{
	const char *f;

	if (c->shared_jobs || c->o.preview_min == 0 || total < c->o.preview_min || n >= total)
		return 0;
	if (hint != NULL)
		return strcmp(hint, "fxt") == 0 && n > 0;
	f = n >= DETECT_BYTES ? ingest_detect(head, n) : NULL;
	return f != NULL && strcmp(f, "fxt") == 0;
}

int cat_upload_grew(struct catalog *c, int64_t id, uint64_t size)
{
	struct trace_rec *r;

	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL && r->live.arriving && size > r->live.arrived)
		r->live.arrived = size;
	pthread_mutex_unlock(&c->mu);
	return r != NULL ? 0 : CAT_ENOTRACE;
}

int cat_upload_length(struct catalog *c, int64_t id, uint64_t size)
{
	struct trace_rec *r;

	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL && r->live.arriving) {
		rec_size(r, size);
		r->live.arrived = size;
		cat_save(c, r, CATDB_STATE);
	}
	pthread_mutex_unlock(&c->mu);
	return r != NULL ? 0 : CAT_ENOTRACE;
}

void cat_upload_close(struct catalog *c, int64_t id, int complete)
{
	struct trace_rec *r;
	int gone;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	gone = r != NULL && r->live.arriving && (!complete || r->live.arrived != r->state.size);
	if (r != NULL)
		r->live.arriving = 0;
	pthread_mutex_unlock(&c->mu);
	if (gone) /* an upload that did not finish leaves nothing behind */
		cat_delete(c, id);
}

/* What of upload r's source is there to read (under mu): its bytes so
 * far; *whole whether those are all (its body ended). */
static uint64_t avail_locked(const struct trace_rec *r, int *whole)
{
	*whole = !r->live.arriving;
	return r->live.arriving ? r->live.arrived : r->state.size;
}

/* The same of upload id, and its whole size when total is not NULL; -1
 * when the trace is gone. */
static int upload_avail(struct catalog *c, int64_t id, uint64_t *size, int *whole, uint64_t *total)
{
	struct trace_rec *r;

	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL) {
		*size = avail_locked(r, whole);
		if (total != NULL)
			*total = r->state.size;
	}
	pthread_mutex_unlock(&c->mu);
	return r != NULL ? 0 : -1;
}

void cat_upload_wait(struct catalog *c, int64_t id)
{
	uint64_t size;
	int whole = 0;

	while (upload_avail(c, id, &size, &whole, NULL) == 0 && !whole && !c->stop)
		usleep(50 * 1000);
}

/* ---- an upload grown while the worker ingests it ------------------------- */

int cat_grows_upload(struct catalog *c, int64_t id, const char *src, const char *hint)
{
	struct grow_job j = { 0 };
	struct trace_rec *r;
	int big;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	big = r != NULL && r->state.stream[0] == '\0' && !r->sync.foreign && !c->shared_jobs && c->o.preview_min > 0 &&
	      r->state.size >= c->o.preview_min;
	if (big)
		j.size = avail_locked(r, &j.ended);
	pthread_mutex_unlock(&c->mu);
	if (!big)
		return 0;
	j.id = id;
	snprintf(j.hint, sizeof(j.hint), "%s", hint ? hint : "");
	snprintf(j.src, sizeof(j.src), "%s", src);
	return tell_fxt(&j) == 1;
}

/* A commit of upload id's growing ingest into its record (under mu), as
 * long as the ingest runs: 1 when the trace's readers must open its
 * database again (it was made anew: the order's restarts), -1 when the
 * ingest is to stop (the trace deleted, the catalog stopping). */
static int upload_commit_locked(struct catalog *c, int64_t id, const struct ingest_result *res, uint64_t bytes,
				char **summary, uint64_t *restarts)
{
	struct trace_rec *r = cat_find(c, id);
	int reopen;

	if (r == NULL || c->stop || r->state.status != TS_INGESTING)
		return -1;
	if (*summary == NULL) /* read next time */
		return 0;
	r->live.preview = 1;
	r->live.snap_visible = bytes;
	reopen = res->order_restarts != *restarts;
	*restarts = res->order_restarts;
	rec_view(r, res->format ? res->format : "fxt", res->start_ns, res->end_ns, summary);
	return reopen;
}

int cat_grow_upload(struct catalog *c, int64_t id, const char *src, const char *db, int step_ms,
		    struct ingest_result *res)
{
	enum { PIECE = 1 << 20 };
	struct ingest_opts o = { 0 };
	struct ingest_grow *g;
	struct ingest_result got;
	uint64_t size = 0, told = 0, bytes, restarts = 0;
	int64_t tell_ms = 0;
	int rc = INGEST_ECANCEL, exact, ended = 0, stop = 0, whole = 0, said_end = 0;
	struct trace_rec *r;
	char err[256];

	if (upload_avail(c, id, &size, &whole, &o.expect_bytes) != 0)
		return INGEST_ECANCEL;
	memset(res, 0, sizeof(*res));
	res->format = "fxt";
	o.format = "fxt";
	o.extent_rows = CAT_GROW_EXTENT_ROWS;
	/* a whole source has no pauses; one still arriving shows, once its
	 * bytes stop a moment, the trace as a file of them, as a live stream */
	if ((g = ingest_grow_start(c->o.ingest_exe ? c->o.ingest_exe : "/proc/self/exe", src, db, &o,
				   whole ? 0 : c->o.live_pause_ms, -1, err, sizeof(err))) == NULL) {
		snprintf(res->error, sizeof(res->error), "%s", err);
		return INGEST_EIO;
	}
	while (!ended && !stop) {
		enum grow_report rep;
		char *summary;
		int take;

		/* an upload whose body still arrives is told its bytes as they
		 * come, and its end once they all came */
		if (!whole && upload_avail(c, id, &size, &whole, NULL) != 0)
			whole = 1; /* gone: the next look stops it */
		/* step_ms (tests only): the source told a megabyte at a time,
		 * an ingest slow enough to watch it grow */
		if (told < size && cat_now_ms() >= tell_ms) {
			told = step_ms > 0 && size - told > PIECE ? told + PIECE : size;
			tell_ms = cat_now_ms() + step_ms;
			if (ingest_grow_size(g, told) != 0)
				told = size, whole = 1; /* gone: its report says why */
		}
		if (whole && told == size && !said_end) {
			said_end = 1;
			ingest_grow_end(g);
		}
		rep = ingest_grow_read(g, told < size ? (int)(tell_ms - cat_now_ms() > 0 ? tell_ms - cat_now_ms() : 0)
						      : whole ? 200 : 20,
				       &got, &bytes, &exact, &rc);
		if (rep == GROW_DONE || rep == GROW_DIED) {
			*res = got;
			ended = 1;
			break;
		}
		take = 0;
		summary = NULL;
		if (rep == GROW_COMMIT)
			summary = cat_summary_json(&got, db);
		pthread_mutex_lock(&c->mu);
		if (rep == GROW_COMMIT)
			take = upload_commit_locked(c, id, &got, bytes, &summary, &restarts);
		if ((r = cat_find(c, id)) == NULL || c->stop || r->state.status != TS_INGESTING)
			take = -1;
		else /* what it has read, ahead of what its commits hold */
			rec_progress(r, INGEST_PHASE_DECODE, ingest_grow_fed(g), r->state.size);
		pthread_mutex_unlock(&c->mu);
		free(summary);
		if (take > 0 && c->o.db_gone)
			c->o.db_gone(id);
		stop = take < 0;
	}
	ingest_grow_free(g, !ended);
	if (!ended) {
		snprintf(res->error, sizeof(res->error), "the ingest was cancelled");
		return INGEST_ECANCEL;
	}
	if (rc != INGEST_OK) /* what it committed goes: a failed trace has no database */
		tracedb_remove(db);
	return rc;
}
