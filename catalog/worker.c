/*
 * The catalog's worker thread: ingests queued traces in upload order,
 * indexes ready traces' names for search across traces, and removes what
 * --keep-failed and the retention bounds say must go.
 *
 * With a shared catalog and a shared store (c->jobs) ingest is a job in
 * the catalog (catdb.h): a queued trace is queued there, and every
 * server's worker claims jobs for a lease, keeps the claim with a
 * heartbeat thread, publishes the database it made as its own object
 * (trace-<token>.db: never one another claim wrote) and commits with
 * job_done, which the catalog refuses when the claim's token is no longer
 * the job's; a refused claim removes its object. docs/DEPLOY.md, "Ingest
 * as shared jobs".
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ingest/child.h"
#include "../ingest/ingest.h"
#include "../query/query.h"
#include "catalog_internal.h"

/* A claim of a shared ingest job, and its heartbeat. */
struct claim {
	struct catdb_job job;
	char db_file[32];      /* "trace-<token>.db": this claim's object */
	pthread_t beat;        /* renews the lease every lease_ms / 3 */
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* signalled when the job ends */
	int ended;             /* under mu: the heartbeat stops */
	atomic_int lost;       /* a renewal found the job claimed by another */
};

struct job {
	struct catalog *c;
	int64_t id;
	struct claim *cl;      /* NULL: this server's own queue */
};

/* Progress of the running ingest; asks to stop when the trace was deleted
 * or its claim was lost. */
static int job_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct job *j = ctx;
	struct trace_rec *r;
	int gone;

	(void)events;
	pthread_mutex_lock(&j->c->mu);
	r = cat_find(j->c, j->id);
	gone = r == NULL || j->c->stop || (j->cl && atomic_load(&j->cl->lost));
	/* a first preview need not wait for the live thread's nap */
	if (r && phase == INGEST_PHASE_DECODE && r->progress.bytes_done == 0 && j->c->o.preview_min)
		pthread_cond_signal(&j->c->live_work);
	if (r)
		rec_progress(r, phase, done, total);
	pthread_mutex_unlock(&j->c->mu);
	if (j->c->ingest_delay_ms > 0 && phase == INGEST_PHASE_DECODE && !gone) {
		/* tests only: an ingest slow enough to watch its preview */
		struct timespec d = { j->c->ingest_delay_ms / 1000, (long)(j->c->ingest_delay_ms % 1000) * 1000000L };

		nanosleep(&d, NULL);
	}
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

/*
 * Reads what the first view of the whole trace reads, so that it finds it
 * in the page cache: ingest sent the database to the disk and out of the
 * cache as it wrote it (ingest/behind.h). The minimap's overview reads the
 * most (besides the level of detail, the slices of buckets that hold one,
 * a page per track and depth): on bench-large's 4 GB archive, 1.0 s from
 * the disk, 0.1 s from the cache. The window is the viewer's
 * (static/js/timeline.js: alignedWindow, OVERVIEW_MAX_BUCKETS): at most
 * 512 buckets of 2^L ns, the first at a multiple of 2^L. The reply is not
 * kept; a failure only leaves the pages where they were.
 */
enum { FIRST_VIEW_BUCKETS = 512 };

static void warm_first_view(const char *db_path, const struct ingest_result *res)
{
	int64_t s = res->start_ns, e = res->end_ns > res->start_ns ? res->end_ns : res->start_ns;
	struct qry_window w = { 0 };
	struct qry_error err = { 0 };
	const char *why;
	int64_t n, width;
	struct jbuf b;
	sqlite3 *db;
	int level = 10;

	while (level < 62 && (e >> level) - (s >> level) + 1 > FIRST_VIEW_BUCKETS)
		level++;
	width = INT64_C(1) << level;
	n = (e >> level) - (s >> level) + 1;
	w.start = s - (s & (width - 1));
	if (__builtin_mul_overflow(n, width, &w.end) || __builtin_add_overflow(w.start, w.end - 1, &w.end))
		w.end = INT64_MAX;
	w.start_given = w.end_given = 1; /* as the viewer asks: both ends */
	if ((db = tracedb_open_readonly(db_path, &why)) == NULL)
		return;
	jb_init(&b);
	qry_overview(db, &w, (uint32_t)n, &b, &err);
	jb_fini(&b);
	sqlite3_close(db);
}

/*
 * Reads the trace's level of detail once the trace is ready, so that the
 * first requests of each zoom find it in the page cache too. Measured on
 * the 1 GB bench archive with the page cache emptied: the first viewport
 * requests of a zoom took 20 to 90 ms (a 140 ms window: 35 to 40 ms for
 * one in twenty at random places), where with the lod table read first
 * (300 MB, 1.1 s) none above 15 ms but for noise. On bench-large's 4 GB
 * archive the table is 1.1 GB. It runs on the worker after the trace is
 * ready (the next queued ingest waits for it), and stops when the
 * catalog does; a failure only leaves the pages where they were.
 */
static int warm_stop(void *ctx)
{
	struct catalog *c = ctx;
	int stop;

	pthread_mutex_lock(&c->mu);
	stop = c->stop;
	pthread_mutex_unlock(&c->mu);
	return stop;
}

static void warm_lod(struct catalog *c, const char *db_path)
{
	const char *why;
	sqlite3 *db = tracedb_open_readonly(db_path, &why);

	if (db == NULL)
		return;
	sqlite3_progress_handler(db, 100000, warm_stop, c);
	/* whole pages read, not just the bytes a memory map would touch */
	sqlite3_exec(db, "PRAGMA mmap_size=0; SELECT sum(length(buckets)) FROM lod", NULL, NULL, NULL);
	sqlite3_close(db);
}

/* Counts an ingest that ended (under mu): in /metrics' figures. */
static void ingest_counted(struct catalog *c, int rc, const struct ingest_result *res, double seconds)
{
	cat_seconds_note(&c->stats.ingest, seconds);
	if (rc == INGEST_OK) {
		c->stats.ingests_ok++;
		c->stats.ingest_bytes += res->bytes;
	} else {
		c->stats.ingests_failed++;
	}
}

/* Ends this server's own ingest of trace id: its record takes the
 * outcome. Returns 1 when the trace is ready now. Takes summary. */
static int job_finish(struct catalog *c, int64_t id, int rc, const struct ingest_result *res, char *summary,
		      int indexed, double seconds)
{
	struct rec_outcome o = { rc, res, summary, indexed, NULL, c->store.ops->usage(&c->store, id) };
	struct trace_rec *r;
	int ready = 0;

	pthread_mutex_lock(&c->mu);
	if (rc != INGEST_ECANCEL)
		ingest_counted(c, rc, res, seconds);
	r = cat_find(c, id);
	if (r != NULL)
		cat_preview_drop_locked(c, r); /* before the state below: it clears what the preview told */
	if (r == NULL) {
		c->store.ops->remove(&c->store, id); /* deleted while ingesting */
		cat_unindex_locked(c, id);
	} else if (rc == INGEST_ECANCEL && c->stop) {
		rec_queue(r); /* shutting down: ingest again at the next start */
		rec_stored(r, o.stored);
	} else {
		struct rec_state st;

		rec_outcome(&st, &r->state, &o);
		summary = NULL;
		rec_outcome_take(r, &st);
	}
	if (r) {
		cat_save(c, r, CATDB_STATE);
		cat_wake(c, r);
		ready = r->state.status == TS_READY;
	}
	pthread_mutex_unlock(&c->mu);
	free(summary);
	return ready;
}

/* A live trace whose stream did not end cleanly is marked as a damaged
 * archive is: a diagnostic says its end is missing. */
static void mark_stream(struct catalog *c, int64_t id, struct ingest_result *res)
{
	struct trace_rec *r;
	int cut;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	cut = r && (strcmp(r->state.stream, "dropped") == 0 || strcmp(r->state.stream, "interrupted") == 0);
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
		cat_preview_drop_locked(c, r);
		rec_queue(r);
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
	live = r && r->state.stream[0] != '\0';
	pthread_mutex_unlock(&c->mu);
	return live;
}

/* Stores what an ingest made before its trace is ready, so that a ready
 * trace can always be fetched: its database (dbfile), and a live trace's
 * source, which grew after its put (with shared jobs, its server stored it
 * whole before queueing it: live.c). 0, or CAT_EFAIL / CAT_ESTOREDOWN with
 * err. */
static int job_publish(struct catalog *c, int64_t id, const char *dbfile, int shared, char *err, size_t errlen)
{
	int rc = c->store.ops->publish(&c->store, id, dbfile, err, errlen);

	if (rc == STORAGE_OK && !shared && was_live(c, id))
		rc = c->store.ops->publish(&c->store, id, "source", err, errlen);
	return rc == STORAGE_OK ? CAT_OK : rc == STORAGE_EDOWN ? CAT_ESTOREDOWN : CAT_EFAIL;
}

static int job_commit(struct catalog *c, struct claim *cl, int rc, const struct ingest_result *res, char *summary,
		      int indexed, double seconds);
static void claim_wait_store(struct catalog *c, struct claim *cl, const char *why);
static void source_compress(struct catalog *c, int64_t id, int restored, const char *dbfile);

/* Ingests trace id into its database: "trace.db" for this server's own
 * queue, the claim's own file for a shared job (cl not NULL). */
static void job_run(struct catalog *c, int64_t id, const char *hint, struct claim *cl)
{
	struct ingest_result *res = calloc(1, sizeof(*res));
	struct ingest_opts o = { 0 };
	struct job j = { c, id, cl };
	const char *dbfile = cl ? cl->db_file : "trace.db";
	char src[4096], db[4096], bin[4096];
	char *summary = NULL;
	double t0 = ingest_now_s(), t_ingest, t_index = 0, t_warm = 0, secs;
	int rc, indexed = 0, store = 0, restored = 0, ready;

	if (res == NULL)
		return;
	cat_path(c, id, "source", src, sizeof(src));
	c->store.ops->local_path(&c->store, id, dbfile, db, sizeof(db));
	cat_path(c, id, "binary", bin, sizeof(bin));
	/* the cache may have let the files go since the upload (or a restart lost it) */
	c->store.ops->fetch(&c->store, id, "binary", res->error, sizeof(res->error));
	o.symbols = access(bin, R_OK) == 0 ? bin : NULL;
	o.progress = job_progress;
	o.progress_ctx = &j;
	o.format = hint[0] ? hint : NULL;
	res->error[0] = '\0';
	if ((store = cat_source_restore(c, id, &restored, res->error, sizeof(res->error))) != 0)
		rc = INGEST_EDB;
	else
		rc = ingest_file_apart(c->o.ingest_exe, src, db, &o, res);
	t_ingest = ingest_now_s();
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
	if (rc == INGEST_OK && (store = job_publish(c, id, dbfile, cl != NULL, res->error, sizeof(res->error))) != 0)
		rc = INGEST_EDB;
	if (store == CAT_ESTOREDOWN) {
		if (cl)
			claim_wait_store(c, cl, res->error);
		else
			job_wait_store(c, id, res->error);
		free(summary);
		free(res);
		return;
	}
	/* indexed before the trace is ready, so search never misses a ready trace */
	if (rc == INGEST_OK) {
		double t = ingest_now_s();

		indexed = cat_index_trace(c, id, db) == 0;
		t_index = ingest_now_s() - t;
		warm_first_view(db, res);
		t_warm = ingest_now_s() - t - t_index;
	}
	secs = ingest_now_s() - t0;
	/* where an ingest's time went, as the CLI's summary says it */
	if (rc == INGEST_OK)
		fprintf(stderr,
			"trace-server: trace %" PRId64 " ingested in %.1f s (%.1f MB/s): seconds decoding %.1f, "
			"matching %.1f, writing %.1f, indexing %.1f; then storing %.1f, search index %.1f, "
			"first view %.1f; its process peaked at %.0f MB\n",
			id, secs, (double)res->bytes / 1e6 / (secs > 0 ? secs : 1), res->phase_seconds[INGEST_PHASE_DECODE],
			res->phase_seconds[INGEST_PHASE_BUILD], res->phase_seconds[INGEST_PHASE_WRITE],
			res->phase_seconds[INGEST_PHASE_INDEX],
			secs - (t_ingest - t0) - t_index - t_warm, t_index, t_warm, (double)res->peak_rss / 1048576);
	if (cl)
		ready = job_commit(c, cl, rc, res, summary, indexed, secs);
	else
		ready = job_finish(c, id, rc, res, summary, indexed, secs);
	if (ready)
		warm_lod(c, db);
	/* the source kept compressed from now on (the next ingest waits for
	 * it); a copy restored for this ingest goes either way */
	if (ready)
		source_compress(c, id, restored, dbfile);
	else if (restored)
		cat_source_drop_copy(c, id);
	free(res);
	/* what the ingest held goes back to the system (its threads gave
	 * theirs as they ended) */
	heap_release();
}

/* ---- shared ingest jobs ------------------------------------------------------ */

enum { LEASE_MS = 10000, CLAIM_POLL_MS = 200 };

/* An integer from the environment within [lo, hi], else def. */
static int env_int(const char *name, int def, int lo, int hi)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL || v[0] == '\0')
		return def;
	n = strtol(v, &end, 10);
	return *end == '\0' && n >= lo && n <= hi ? (int)n : def;
}

void cat_jobs_init(struct catalog *c, int shared_store)
{
	char host[64] = "";

	c->jobs = c->shared && shared_store && c->db->ops->job_claim != NULL;
	/* TRACE_SERVER_JOB_LEASE_MS: docs/DEPLOY.md; the delays are for tests only */
	c->lease_ms = env_int("TRACE_SERVER_JOB_LEASE_MS", LEASE_MS, 300, 3600000);
	c->commit_delay_ms = env_int("TRACE_SERVER_TEST_COMMIT_DELAY_MS", 0, 0, 600000);
	c->ingest_delay_ms = env_int("TRACE_SERVER_TEST_INGEST_DELAY_MS", 0, 0, 60000);
	gethostname(host, sizeof(host) - 1);
	snprintf(c->owner, sizeof(c->owner), "%s:%ld", host, (long)getpid());
}

void cat_job_queue_locked(struct catalog *c, struct trace_rec *r)
{
	char err[512];
	int rc = c->db->ops->job_queue(c->db, r->id, err, sizeof(err));

	if (rc == CATDB_OK)
		return;
	fprintf(stderr, "trace-server: trace %" PRId64 "'s ingest job was not queued: %s\n", r->id, err);
	if (rc == CATDB_EDOWN) {
		/* saved and queued again by cat_sync when the database is back */
		cat_unsaved_mark(c, r, CATDB_STATE);
	}
}

/* The heartbeat: renews the claim's lease every lease / 3 until the job
 * ends, or until a renewal finds the job claimed by another server. */
static void *beat_main(void *arg)
{
	struct job *j = arg;
	struct claim *cl = j->cl;
	char err[512];
	int rc;

	pthread_mutex_lock(&cl->mu);
	while (!cl->ended) {
		cond_wait_ms(&cl->cv, &cl->mu, j->c->lease_ms / 3);
		if (cl->ended)
			break;
		pthread_mutex_unlock(&cl->mu);
		rc = j->c->db->ops->job_renew(j->c->db, &cl->job, j->c->lease_ms, err, sizeof(err));
		pthread_mutex_lock(&cl->mu);
		if (rc == CATDB_ENOENT) {
			fprintf(stderr, "trace-server: trace %" PRId64 ": the ingest job's claim (token %" PRId64
					") was lost: another server claimed it since\n",
				cl->job.trace, cl->job.token);
			atomic_store(&cl->lost, 1);
			break;
		}
	}
	pthread_mutex_unlock(&cl->mu);
	return NULL;
}

/* The store could not be reached: the job stays claimed until its lease
 * runs out, then any server's worker (this one too) takes it again. */
static void claim_wait_store(struct catalog *c, struct claim *cl, const char *why)
{
	fprintf(stderr, "trace-server: trace %" PRId64 " waits for the store: %s\n", cl->job.trace, why);
	pthread_mutex_lock(&c->mu);
	c->store_retry_at = time(NULL) + STORE_RETRY_SECONDS;
	pthread_mutex_unlock(&c->mu);
}

/* Bytes of trace id's files, its claim's database among them (usage knows
 * only the fixed names). */
static uint64_t claim_stored(struct catalog *c, int64_t id, const char *dbfile)
{
	char path[4096];
	struct stat st;

	c->store.ops->local_path(&c->store, id, dbfile, path, sizeof(path));
	return c->store.ops->usage(&c->store, id) + (stat(path, &st) == 0 ? (uint64_t)st.st_size : 0);
}

/* Keeps ready trace id's source compressed (restored: "source" is a copy
 * made for its ingest), then counts its stored bytes again, dbfile its
 * database's file. Not under mu. */
static void source_compress(struct catalog *c, int64_t id, int restored, const char *dbfile)
{
	int kept = cat_source_compress(c, id, restored);
	uint64_t stored = 0;
	struct trace_rec *r;

	if (kept)
		stored = strcmp(dbfile, "trace.db") == 0 ? c->store.ops->usage(&c->store, id)
							 : claim_stored(c, id, dbfile);
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL && r->state.status == TS_READY) {
		r->source_seen = 1;
		if (kept && r->state.stored != stored) {
			rec_stored(r, stored);
			cat_save(c, r, CATDB_STATE);
		}
	}
	pthread_mutex_unlock(&c->mu);
}

/*
 * Ends a claimed job: the result is committed with job_done, which the
 * catalog refuses when another server claimed the job since (this one's
 * lease ran out); the refused claim's object is removed from the store,
 * and a committed claim removes every other claim's.
 * A commit that fails otherwise (the database down) leaves the job to be
 * claimed again when its lease runs out. Takes summary. Returns 1 when
 * this claim committed the trace ready.
 */
static int job_commit(struct catalog *c, struct claim *cl, int rc, const struct ingest_result *res, char *summary,
		      int indexed, double seconds)
{
	int64_t id = cl->job.trace;
	struct rec_outcome o = { rc, res, summary, indexed, cl->db_file, claim_stored(c, id, cl->db_file) };
	struct trace_rec *r, st;
	char err[512];
	int done, ready = 0;

	if (rc == INGEST_ECANCEL) {
		/* lost, deleted or stopping: another claim (or the next start) ends it */
		free(summary);
		c->store.ops->drop(&c->store, id, cl->db_file, err, sizeof(err));
		return 0;
	}
	if (c->commit_delay_ms > 0) {
		/* tests only: a window to pause or kill this server in; a
		 * deadline on the monotonic clock, which runs on while the
		 * process is stopped, so a resumed server commits at once */
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += c->commit_delay_ms / 1000;
		until.tv_nsec += (long)(c->commit_delay_ms % 1000) * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
	}
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) == NULL) {
		pthread_mutex_unlock(&c->mu);
		free(summary);
		c->store.ops->drop(&c->store, id, cl->db_file, err, sizeof(err));
		return 0;
	}
	/* the record as the commit writes it: r with the outcome's state */
	st = *r;
	rec_outcome(&st.state, &r->state, &o);
	done = c->db->ops->job_done(c->db, &cl->job, &st, err, sizeof(err));
	if (done == CATDB_OK) {
		ingest_counted(c, rc, res, seconds);
		rec_outcome_take(r, &st.state);
		cat_wake(c, r);
		ready = r->state.status == TS_READY;
		fprintf(stderr, "trace-server: trace %" PRId64 ": ingest job committed (token %" PRId64
				", attempt %d, %s)\n",
			id, cl->job.token, cl->job.attempts, cat_status_names[r->state.status]);
	} else {
		rec_outcome_drop(&st.state);
	}
	pthread_mutex_unlock(&c->mu);
	/* the trace is this claim's now: what other claims published (a
	 * server killed between its publish and its commit) goes; a stale
	 * claim still running is refused at its commit all the same */
	if (done == CATDB_OK && c->store.ops->prune(&c->store, id, "trace-", cl->db_file, err, sizeof(err)) != 0)
		fprintf(stderr, "trace-server: trace %" PRId64 ": other claims' objects stay in the store: %s\n", id, err);
	if (done == CATDB_ENOENT) {
		int gone = c->store.ops->drop(&c->store, id, cl->db_file, err, sizeof(err)) == 0;

		fprintf(stderr, "trace-server: trace %" PRId64 ": commit refused (token %" PRId64
				" lost its lease to another server); its object %s %s\n",
			id, cl->job.token, cl->db_file, gone ? "was removed" : "stays in the store");
	} else if (done != CATDB_OK) {
		fprintf(stderr, "trace-server: trace %" PRId64 ": ingest job not committed: %s\n", id, err);
	}
	return ready;
}

/* Ends a claim found with nothing to do: its trace was deleted, or it is
 * ready or failed already (a job queued again at a start, while another
 * server finished it). job_done writes back the record as read. */
static void claim_drop(struct catalog *c, struct claim *cl, struct trace_rec *r)
{
	struct trace_rec gone;
	char err[512];

	if (r == NULL) {
		memset(&gone, 0, sizeof(gone));
		gone.id = cl->job.trace; /* no row: job_done's write changes nothing */
		gone.state.status = TS_FAILED;
		r = &gone;
	}
	if (c->db->ops->job_done(c->db, &cl->job, r, err, sizeof(err)) != CATDB_OK)
		fprintf(stderr, "trace-server: trace %" PRId64 ": stale ingest job not ended: %s\n", cl->job.trace,
			err);
}

/*
 * Claims a job and runs it (called and returning under mu). 1 when a job
 * was claimed, 0 when none was free or the database cannot be reached.
 */
static int claim_run(struct catalog *c)
{
	struct claim cl;
	struct job beat = { c, 0, &cl };
	struct trace_rec *r;
	char err[512], hint[16];
	int rc;

	memset(&cl, 0, sizeof(cl));
	pthread_mutex_unlock(&c->mu);
	rc = c->db->ops->job_claim(c->db, c->owner, c->lease_ms, &cl.job, err, sizeof(err));
	pthread_mutex_lock(&c->mu);
	if (rc != CATDB_OK) {
		if (rc != CATDB_ENOENT)
			fprintf(stderr, "trace-server: no ingest job claimed: %s\n", err);
		return 0;
	}
	/* the record as the database holds it now (another server's upload, or a deletion) */
	if (cat_sync_locked(c, 1) != 0)
		return 1; /* unknown: the lease runs out and the job is claimed again */
	r = cat_find(c, cl.job.trace);
	if (r == NULL || (r->state.status != TS_QUEUED && r->state.status != TS_INGESTING)) {
		claim_drop(c, &cl, r);
		return 1;
	}
	snprintf(cl.db_file, sizeof(cl.db_file), "trace-%" PRId64 ".db", cl.job.token);
	rec_start_ingest(r); /* here only: the record's state is written at the commit */
	c->running = r->id;
	snprintf(hint, sizeof(hint), "%s", r->state.format_hint);
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_init(&cl.mu, NULL);
	pthread_cond_init(&cl.cv, NULL);
	beat.id = cl.job.trace;
	if (pthread_create(&cl.beat, NULL, beat_main, &beat) != 0) {
		pthread_mutex_destroy(&cl.mu);
		pthread_cond_destroy(&cl.cv);
		pthread_mutex_lock(&c->mu);
		c->running = 0;
		c->seen = 0; /* its state here is not the database's: read again */
		return 1;    /* claimed again when the lease runs out */
	}
	job_run(c, cl.job.trace, hint, &cl);
	pthread_mutex_lock(&cl.mu);
	cl.ended = 1;
	pthread_cond_signal(&cl.cv);
	pthread_mutex_unlock(&cl.mu);
	pthread_join(cl.beat, NULL);
	pthread_mutex_destroy(&cl.mu);
	pthread_cond_destroy(&cl.cv);
	pthread_mutex_lock(&c->mu);
	c->running = 0;
	/* not committed here (refused, lost, failed): the record missed what
	 * others wrote while it ran (sync.c leaves it alone), so every record
	 * is read again */
	if ((r = cat_find(c, cl.job.trace)) != NULL && r->state.status == TS_INGESTING)
		c->seen = 0;
	return 1;
}

/* One round of the worker with shared jobs (under mu): a job claimed and
 * run, or a short wait (jobs are queued by other servers too, so the
 * worker asks the catalog every CLAIM_POLL_MS; what others changed
 * meanwhile is the syncer's to read, sync.c). */
static void jobs_round(struct catalog *c)
{
	if (time(NULL) >= c->store_retry_at && claim_run(c))
		return;
	cond_wait_ms(&c->work, &c->mu, CLAIM_POLL_MS);
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

		if (r->state.status == TS_FAILED && !r->sync.foreign && r->waiters == NULL &&
		    (int64_t)(now - r->state.created) >= c->o.keep_failed) {
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
		if (c->v[i]->state.status == TS_READY && !c->v[i]->state.indexed && !c->v[i]->sync.foreign)
			return c->v[i];
	return NULL;
}

/*
 * Sources a ready trace keeps as uploaded although its ingest ended well:
 * a library an older server wrote, or a server stopped before it had
 * compressed one. Looks at up to SOURCE_LOOKS ready traces not looked at
 * since the start and compresses the first whose source is so (called and
 * returning under mu). 1 when it looked at any, 0 when none is left. Not
 * with shared jobs: another server may be doing the same.
 */
enum { SOURCE_LOOKS = 64 };
static int source_catch_up(struct catalog *c)
{
	int64_t ids[SOURCE_LOOKS];
	char dbfile[SOURCE_LOOKS][32];
	struct trace_rec *r;
	size_t i, n = 0, looked;

	for (i = 0; i < c->n && n < SOURCE_LOOKS; i++) {
		r = c->v[i];
		if (r->state.status == TS_READY && !r->sync.foreign && !r->source_seen) {
			snprintf(dbfile[n], sizeof(dbfile[n]), "%s", cat_db_file(r));
			ids[n++] = r->id;
		}
	}
	pthread_mutex_unlock(&c->mu);
	for (looked = 0; looked < n;)
		if (c->store.ops->has(&c->store, ids[looked++], "source") == 1) {
			source_compress(c, ids[looked - 1], 0, dbfile[looked - 1]);
			break;
		}
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < looked; i++)
		if ((r = cat_find(c, ids[i])) != NULL)
			r->source_seen = 1;
	return n > 0;
}

static void index_one(struct catalog *c, struct trace_rec *r)
{
	char db[4096];
	int64_t id = r->id;
	int ok;

	c->store.ops->local_path(&c->store, id, cat_db_file(r), db, sizeof(db));
	rec_indexed(r, -1); /* being indexed: not picked again */
	pthread_mutex_unlock(&c->mu);
	ok = cat_fetch(c, id, "trace.db", NULL, 0) == 0 && cat_index_trace(c, id, db) == 0;
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) == NULL) {
		cat_unindex_locked(c, id);
		return;
	}
	rec_indexed(r, ok ? 1 : 2); /* 2: failed, not tried again until restart */
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
		for (i = 0; i < c->n && next == NULL && !c->jobs; i++)
			if (c->v[i]->state.status == TS_QUEUED && !c->v[i]->sync.foreign)
				next = c->v[i];
		if (next == NULL && (unindexed = next_unindexed(c)) != NULL) {
			index_one(c, unindexed);
			continue;
		}
		if (c->jobs) {
			jobs_round(c);
			continue;
		}
		if (next == NULL && source_catch_up(c))
			continue;
		if (next == NULL) {
			/* wake at least once a minute (sooner for a short
			 * --keep-failed) to remove old traces */
			int64_t keep = c->o.keep_failed;

			cond_wait_ms(&c->work, &c->mu, 1000 * (keep < 60 ? (keep > 0 ? keep : 1) : 60));
			continue;
		}
		if (time(NULL) < c->store_retry_at) {
			struct timespec until = { c->store_retry_at, 0 };

			pthread_cond_timedwait(&c->work, &c->mu, &until);
			continue;
		}
		cat_preview_drop_locked(c, next); /* one left by an ingest a stop cut short */
		rec_start_ingest(next);
		cat_save(c, next, CATDB_STATE);
		snprintf(hint, sizeof(hint), "%s", next->state.format_hint);
		id = next->id;
		pthread_mutex_unlock(&c->mu);
		job_run(c, id, hint, NULL);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}
