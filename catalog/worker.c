/*
 * The catalog's worker thread (jobs.h): ingests queued traces in upload
 * order, one at a time, each in a process of its own; indexes ready
 * traces' names for search across traces; keeps their sources compressed;
 * and removes what --keep-failed and the retention bounds say must go.
 * With shared jobs (c->shared_jobs) it claims them instead of taking its
 * own queue (jobs.c).
 *
 * Nothing slow runs under the catalog's lock: an ingest, the index, the
 * store and the files are worked on with the lock released, and taken
 * again only to change the record (record.c) and write it through
 * (cat_save) in one hold.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
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
#include "grow.h"

/* After the store could not be reached, no ingest starts for this long, so
 * that a store that is down fails no trace and the worker does not spin. */
enum { STORE_RETRY_SECONDS = 5 };

/* worker.c's state, under mu. */
struct cat_worker {
	pthread_t thread;
	int started;
	pthread_cond_t work;   /* signalled when a trace is queued or pinned,
				* its names change, or on stop */
	unsigned wakes;        /* cat_worker_wake calls so far */
	unsigned seen;         /* wakes when the worker's round began: a wake
				* that came while its round had the lock
				* released is not lost, the next nap is skipped */
	time_t store_retry_at; /* no ingest starts before: the store was down */
	int ingest_delay_ms;   /* test only: a pause after each piece a local
				* ingest decodes (read once) */
};

int worker_env_int(const char *name, int def, int lo, int hi)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL || v[0] == '\0')
		return def;
	n = strtol(v, &end, 10);
	return *end == '\0' && n >= lo && n <= hi ? (int)n : def;
}

struct cat_worker *cat_worker_create(void)
{
	struct cat_worker *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	pthread_cond_init(&w->work, NULL);
	w->ingest_delay_ms = worker_env_int("TRACE_SERVER_TEST_INGEST_DELAY_MS", 0, 0, 60000);
	return w;
}

void cat_worker_destroy(struct cat_worker *w)
{
	if (w == NULL)
		return;
	pthread_cond_destroy(&w->work);
	free(w);
}

void cat_worker_wake(struct catalog *c)
{
	c->worker->wakes++;
	pthread_cond_broadcast(&c->worker->work);
}

void cat_worker_nap_locked(struct catalog *c, int64_t ms)
{
	if (c->worker->wakes == c->worker->seen)
		cond_wait_ms(&c->worker->work, &c->mu, ms);
}

void worker_store_down_locked(struct catalog *c)
{
	c->worker->store_retry_at = time(NULL) + STORE_RETRY_SECONDS;
}

int worker_store_up_locked(const struct catalog *c)
{
	return time(NULL) >= c->worker->store_retry_at;
}

void worker_counted(struct catalog *c, int rc, const struct ingest_result *res, double seconds)
{
	cat_seconds_note(&c->stats.ingest, seconds);
	if (rc == INGEST_OK) {
		c->stats.ingests_ok++;
		c->stats.ingest_bytes += res->bytes;
	} else {
		c->stats.ingests_failed++;
	}
}

/* ---- what an ingest leaves ----------------------------------------------- */

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

/* ---- one ingest ----------------------------------------------------------- */

/* One ingest: its trace, its files and what it found. */
struct run {
	struct catalog *c;
	int64_t id;
	struct claim *cl;      /* a shared job's claim; NULL: this server's own queue */
	const char *dbfile;    /* the database it writes: "trace.db", or the claim's */
	char src[4096], db[4096], bin[4096];
	struct ingest_result *res;
	char *summary;         /* cat_summary_json, once ingested */
	int restored;          /* "source" is a copy of "source.zst" made for it */
	double t0, t_ingest, t_index, t_warm; /* when it began; seconds of each step */
};

/* Progress of the running ingest; asks to stop when the trace was deleted,
 * its claim was lost or the catalog stops. */
static int run_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct run *j = ctx;
	struct catalog *c = j->c;
	struct trace_rec *r;
	int gone, delay = c->worker->ingest_delay_ms;

	(void)events;
	pthread_mutex_lock(&c->mu);
	r = cat_find(c, j->id);
	gone = r == NULL || c->stop || (j->cl && claim_lost(j->cl));
	if (r)
		rec_progress(r, phase, done, total);
	pthread_mutex_unlock(&c->mu);
	if (delay > 0 && phase == INGEST_PHASE_DECODE && !gone) {
		/* tests only: an ingest slow enough to watch it run */
		struct timespec d = { delay / 1000, (long)(delay % 1000) * 1000000L };

		nanosleep(&d, NULL);
	}
	return gone;
}

/* Ends this server's own ingest of trace id: its record takes the
 * outcome. Returns 1 when the trace is ready now. Takes summary. A trace
 * deleted while it was ingested leaves its files and index rows to the
 * worker, removed here without the lock (no other thread touches them:
 * an id is never given again). */
static int worker_finish(struct catalog *c, int64_t id, int rc, const struct ingest_result *res, char *summary,
			 int indexed, double seconds)
{
	struct rec_outcome o = { rc, res, summary, indexed, NULL, c->store.ops->usage(&c->store, id) };
	struct trace_rec *r;
	int ready = 0;

	pthread_mutex_lock(&c->mu);
	if (rc != INGEST_ECANCEL)
		worker_counted(c, rc, res, seconds);
	if ((r = cat_find(c, id)) != NULL)
		cat_preview_drop_locked(r); /* before the state below: it clears what the commits told */
	if (r != NULL && rc == INGEST_ECANCEL && c->stop) {
		rec_queue(r); /* shutting down: ingest again at the next start */
		rec_stored(r, o.stored);
	} else if (r != NULL) {
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
	if (r == NULL) {
		c->store.ops->remove(&c->store, id);
		cat_unindex(c, id);
	}
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
 * the queue, and no ingest starts for STORE_RETRY_SECONDS. */
static void run_wait_store(struct catalog *c, int64_t id, const char *why)
{
	struct trace_rec *r;

	fprintf(stderr, "trace-server: trace %" PRId64 " waits for the store: %s\n", id, why);
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL) {
		cat_preview_drop_locked(r);
		rec_queue(r);
		cat_save(c, r, CATDB_STATE);
	}
	worker_store_down_locked(c);
	pthread_mutex_unlock(&c->mu);
	if (r == NULL) { /* deleted while ingesting: as worker_finish */
		c->store.ops->remove(&c->store, id);
		cat_unindex(c, id);
	}
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
 * trace can always be fetched: its database, and a live trace's source,
 * which grew after its put (with shared jobs, its server stored it whole
 * before queueing it: live.c). 0, or CAT_EFAIL / CAT_ESTOREDOWN with
 * res->error. */
static int run_publish(struct run *j)
{
	struct catalog *c = j->c;
	char *err = j->res->error;
	int rc = c->store.ops->publish(&c->store, j->id, j->dbfile, err, sizeof(j->res->error));

	if (rc == STORAGE_OK && !j->cl && was_live(c, j->id))
		rc = c->store.ops->publish(&c->store, j->id, "source", err, sizeof(j->res->error));
	return rc == STORAGE_OK ? CAT_OK : rc == STORAGE_EDOWN ? CAT_ESTOREDOWN : CAT_EFAIL;
}

/* A grown trace's database (grow.h) whole in its file, and out of WAL
 * mode: its readers let go of it first (db_gone), and every commit is
 * checkpointed into the file (waiting a while for a request still
 * reading), so that the file alone is the trace, as the store keeps it. A
 * reader that opened it again meanwhile leaves it in WAL mode, which
 * reads the same; 0, or -1 when the checkpoint could not be made. */
static int grown_settle(struct catalog *c, int64_t id, const char *db_path)
{
	sqlite3 *db = NULL;
	int rc = -1, tries;

	if (c->o.db_gone)
		c->o.db_gone(id);
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(db, 5000);
		/* the log is opened by a first read (a connection that read
		 * nothing checkpoints nothing, and says so with a log of -1);
		 * FULL waits for readers of older commits only (TRUNCATE would
		 * wait for every reader), up to six times its busy timeout */
		if (sqlite3_exec(db, "SELECT count(*) FROM main.sqlite_master", NULL, NULL, NULL) == SQLITE_OK)
			for (tries = 0; tries < 6 && rc != 0; tries++) {
				int nlog = -1, nck = -1;

				if (sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_FULL, &nlog, &nck) == SQLITE_OK)
					rc = nlog == nck ? 0 : -1;
			}
		sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
	}
	sqlite3_close(db);
	return rc;
}

/* Ingests the source into j's database, names it with symbols that came
 * while it ran, reads back its summary and publishes it: the ingest's
 * result (enum ingest_err), *store how the store answered (0, or
 * CAT_ESTOREDOWN: the ingest waits for it). */
static int run_ingest(struct run *j, const char *hint, int *store)
{
	struct ingest_result *res = j->res;
	struct ingest_opts o = { 0 };
	struct catalog *c = j->c;
	int rc, grown = 0;

	/* the cache may have let the files go since the upload (or a restart lost it) */
	c->store.ops->fetch(&c->store, j->id, "binary", res->error, sizeof(res->error));
	o.symbols = access(j->bin, R_OK) == 0 ? j->bin : NULL;
	o.progress = run_progress;
	o.progress_ctx = j;
	o.format = hint[0] ? hint : NULL;
	/* a trace that came as a stream has a growing trace's layout, whether
	 * it grew in place or is ingested whole after a restart (grow.h) */
	o.extent_rows = was_live(c, j->id) ? CAT_GROW_EXTENT_ROWS : 0;
	res->error[0] = '\0';
	if (!j->cl && cat_grown_take(c, j->id, res, &rc)) {
		/* its growing ingest made the database as its bytes came: no
		 * second ingest */
		grown = 1;
	} else if ((*store = cat_source_restore(c, j->id, &j->restored, res->error, sizeof(res->error))) != 0) {
		rc = INGEST_EDB;
	} else if (!j->cl && cat_grows_upload(c, j->id, j->src, hint)) {
		/* a big FXT upload grows in place as it is ingested (grow.h):
		 * read from its first byte meanwhile, with a stream's layout */
		rc = cat_grow_upload(c, j->id, j->src, j->db, c->worker->ingest_delay_ms, res);
		grown = 1;
	} else {
		cat_upload_wait(c, j->id); /* an upload whose body still arrives is read whole */
		rc = ingest_file_apart(c->o.ingest_exe, j->src, j->db, &o, res);
	}
	/* a grown database, which nothing writes now, is made whole in its
	 * file (and leaves WAL mode) as one ingested whole is: the store keeps
	 * that file alone */
	if (rc == INGEST_OK && grown && grown_settle(c, j->id, j->db) != 0) {
		rc = INGEST_EDB;
		snprintf(res->error, sizeof(res->error), "the trace's database could not be checkpointed into its file");
		tracedb_remove(j->db); /* a failed trace has no database (docs/API.md) */
	}
	j->t_ingest = ingest_now_s();
	/* symbols that arrived while ingest ran (POST .../symbols) name it now */
	if (rc == INGEST_OK && o.symbols == NULL && access(j->bin, R_OK) == 0 &&
	    ingest_symbolize(j->db, j->bin, &res->symbols_named, res->symbols_error, sizeof(res->symbols_error)) != 0)
		res->symbols_named = 0;
	if (rc == INGEST_OK)
		mark_stream(c, j->id, res);
	if (rc == INGEST_OK && (j->summary = cat_summary_json(res, j->db)) == NULL) {
		rc = INGEST_EDB;
		snprintf(res->error, sizeof(res->error), "the trace's database could not be read back after ingest");
	}
	if (rc == INGEST_OK && (*store = run_publish(j)) != 0)
		rc = INGEST_EDB;
	return rc;
}

/* Indexes a ready trace's names before it is ready, so that search never
 * misses a ready trace, and warms its first view: 1 when indexed. */
static int run_index(struct run *j)
{
	double t = ingest_now_s();
	int indexed = cat_index_trace(j->c, j->id, j->db) == 0;

	j->t_index = ingest_now_s() - t;
	cat_warm_first_view(j->c, j->db, j->res->start_ns, j->res->end_ns);
	j->t_warm = ingest_now_s() - t - j->t_index;
	return indexed;
}

/* Where an ingest's time went, as the CLI's summary says it. */
static void run_log(const struct run *j, double secs)
{
	const struct ingest_result *res = j->res;

	fprintf(stderr,
		"trace-server: trace %" PRId64 " ingested in %.1f s (%.1f MB/s): seconds decoding %.1f, "
		"matching %.1f, writing %.1f, indexing %.1f; then storing %.1f, search index %.1f, "
		"first view %.1f; its process peaked at %.0f MB\n",
		j->id, secs, (double)res->bytes / 1e6 / (secs > 0 ? secs : 1), res->phase_seconds[INGEST_PHASE_DECODE],
		res->phase_seconds[INGEST_PHASE_BUILD], res->phase_seconds[INGEST_PHASE_WRITE],
		res->phase_seconds[INGEST_PHASE_INDEX], secs - (j->t_ingest - j->t0) - j->t_index - j->t_warm,
		j->t_index, j->t_warm, (double)res->peak_rss / 1048576);
}

static void source_compress(struct catalog *c, int64_t id, int restored, const char *dbfile);

void worker_run(struct catalog *c, int64_t id, const char *hint, struct claim *cl)
{
	struct run j = { .c = c, .id = id, .cl = cl, .dbfile = cl ? claim_db_file(cl) : "trace.db" };
	int rc, indexed = 0, store = 0, ready;
	double secs;

	if ((j.res = calloc(1, sizeof(*j.res))) == NULL)
		return;
	j.t0 = ingest_now_s();
	cat_path(c, id, "source", j.src, sizeof(j.src));
	c->store.ops->local_path(&c->store, id, j.dbfile, j.db, sizeof(j.db));
	cat_path(c, id, "binary", j.bin, sizeof(j.bin));
	rc = run_ingest(&j, hint, &store);
	if (store == CAT_ESTOREDOWN) {
		if (cl)
			claim_wait_store(c, cl, j.res->error);
		else
			run_wait_store(c, id, j.res->error);
		free(j.summary);
		free(j.res);
		return;
	}
	if (rc == INGEST_OK)
		indexed = run_index(&j);
	secs = ingest_now_s() - j.t0;
	if (rc == INGEST_OK)
		run_log(&j, secs);
	if (cl)
		ready = claim_commit(c, cl, rc, j.res, j.summary, indexed, secs);
	else
		ready = worker_finish(c, id, rc, j.res, j.summary, indexed, secs);
	/* the level of detail warmed, then the source kept compressed from
	 * now on (the next ingest waits for both); a copy restored for this
	 * ingest goes either way */
	if (ready)
		cat_warm_lod(c, j.db);
	if (ready)
		source_compress(c, id, j.restored, j.dbfile);
	else if (j.restored)
		cat_source_drop_copy(c, id);
	free(j.res);
	/* readers of its growing database (or of one ingested before) open
	 * the new one at their next request; what they held goes now */
	if (c->o.db_gone)
		c->o.db_gone(id);
	/* what the ingest held goes back to the system (its threads gave
	 * theirs as they ended), and what the catalog's connections cached of
	 * the writes it made */
	if (c->db->ops->release)
		c->db->ops->release(c->db);
	tracedb_release_cache();
	heap_release();
}

/* ---- the thread ----------------------------------------------------------- */

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

enum { PRUNE_MAX = 64 };

/* Takes out of the records (under mu) failed traces older than
 * keep_failed and what the retention bounds give up, at most max of them,
 * into gone; stops early when the database cannot remove one (the next
 * round tries again). Returns how many. */
static size_t prune_locked(struct catalog *c, struct trace_rec **gone, size_t max)
{
	struct cat_removal plan[PRUNE_MAX];
	time_t now = time(NULL);
	size_t i = 0, n = 0, k;
	int rc;

	while (i < c->n && n < max) {
		struct trace_rec *r = c->v[i];

		if (r->state.status == TS_FAILED && !r->sync.foreign && r->waiters == NULL &&
		    (int64_t)(now - r->state.created) >= c->o.keep_failed) {
			fprintf(stderr, "trace-server: removing failed trace %" PRId64 " (older than --keep-failed)\n",
				r->id);
			if ((gone[n] = cat_remove_locked(c, r->id, &rc)) == NULL)
				return n; /* the database is down: the next round tries again */
			n++;
			continue;
		}
		i++;
	}
	k = cat_retention_plan(c->v, c->n, &c->o, now, plan, max - n);
	for (i = 0; i < k; i++) {
		fprintf(stderr, "trace-server: retention removes trace %" PRId64 " (%s)\n", plan[i].id,
			strcmp(plan[i].reason, "age") == 0 ? "older than --retain-days" : "over --retain-bytes");
		if ((gone[n] = cat_remove_locked(c, plan[i].id, &rc)) != NULL)
			n++;
	}
	return n;
}

/* Removes what prune_locked gives up (called and returning under mu; the
 * files are removed without it), until nothing more is. */
static void prune(struct catalog *c)
{
	struct trace_rec *gone[PRUNE_MAX];
	size_t n, i;

	while ((n = prune_locked(c, gone, PRUNE_MAX)) > 0) {
		pthread_mutex_unlock(&c->mu);
		for (i = 0; i < n; i++)
			cat_rec_drop(c, gone[i]);
		pthread_mutex_lock(&c->mu);
		if (n < PRUNE_MAX)
			break;
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
	if (n == 0)
		return 0;
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
	if ((r = cat_find(c, id)) != NULL) {
		rec_indexed(r, ok ? 1 : 2); /* 2: failed, not tried again until restart */
		if (ok)
			cat_save(c, r, CATDB_STATE);
		return;
	}
	/* deleted meanwhile: rows written after its removal go */
	pthread_mutex_unlock(&c->mu);
	cat_unindex(c, id);
	pthread_mutex_lock(&c->mu);
}

/* The next trace of this server's own queue (under mu), or NULL. */
static struct trace_rec *next_queued(struct catalog *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i]->state.status == TS_QUEUED && !c->v[i]->sync.foreign)
			return c->v[i];
	return NULL;
}

static void *worker_main(void *arg)
{
	struct catalog *c = arg;
	char hint[16];
	int64_t id;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct trace_rec *next = NULL, *unindexed;

		c->worker->seen = c->worker->wakes;
		prune(c);
		if (!c->shared_jobs)
			next = next_queued(c);
		if (next == NULL && (unindexed = next_unindexed(c)) != NULL) {
			index_one(c, unindexed);
			continue;
		}
		if (c->shared_jobs) {
			cat_jobs_round(c);
			continue;
		}
		if (next == NULL && source_catch_up(c))
			continue;
		if (next == NULL) {
			/* wake at least once a minute (sooner for a short
			 * --keep-failed) to remove old traces */
			int64_t keep = c->o.keep_failed;

			cat_worker_nap_locked(c, 1000 * (keep < 60 ? (keep > 0 ? keep : 1) : 60));
			continue;
		}
		if (!worker_store_up_locked(c)) {
			struct timespec until = { c->worker->store_retry_at, 0 };

			if (c->worker->wakes == c->worker->seen)
				pthread_cond_timedwait(&c->worker->work, &c->mu, &until);
			continue;
		}
		cat_preview_drop_locked(next); /* one left by an ingest a stop cut short */
		rec_start_ingest(next);
		cat_save(c, next, CATDB_STATE);
		snprintf(hint, sizeof(hint), "%s", next->state.format_hint);
		id = next->id;
		pthread_mutex_unlock(&c->mu);
		worker_run(c, id, hint, NULL);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int cat_worker_start(struct catalog *c)
{
	if (pthread_create(&c->worker->thread, NULL, worker_main, c) != 0)
		return CAT_EFAIL;
	c->worker->started = 1;
	return 0;
}

void cat_worker_join(struct catalog *c)
{
	if (c->worker->started)
		pthread_join(c->worker->thread, NULL);
	c->worker->started = 0;
}
