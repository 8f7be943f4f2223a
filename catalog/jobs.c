/*
 * Ingest as shared jobs (jobs.h): with a shared catalog and a shared store
 * (c->shared_jobs) a queued trace is a job in the catalog (catdb.h), and
 * every server's worker claims jobs for a lease, keeps the claim with a
 * heartbeat thread, publishes the database it made as its own object
 * (trace-<token>.db: never one another claim wrote) and commits with
 * job_done, which the catalog refuses when the claim's token is no longer
 * the job's; a refused claim removes its object. docs/DEPLOY.md, "Ingest
 * as shared jobs".
 *
 * The database is asked without the catalog's lock (claims, renewals),
 * but for the commit, which must change the record in the same hold as
 * the database's row, and the queueing of a job, part of the save that
 * made its trace queued (sync.h: cat_save).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "catalog_internal.h"

enum { LEASE_MS = 10000, CLAIM_POLL_MS = 200 };

/* jobs.c's state: settings read once, and the job running now (under mu). */
struct cat_jobs {
	int lease_ms;           /* a claim's lease, renewed every lease_ms / 3 */
	int commit_delay_ms;    /* test only: a pause between publish and commit */
	char owner[96];         /* this server in the jobs table: "host:pid" */
	int64_t running;        /* the trace whose job the worker runs (0: none) */
};

/* A claim of a shared ingest job, and its heartbeat. */
struct claim {
	struct catalog *c;
	struct catdb_job job;
	char db_file[32];      /* "trace-<token>.db": this claim's object */
	pthread_t beat;        /* renews the lease every lease_ms / 3 */
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* signalled when the job ends */
	int ended;             /* under mu: the heartbeat stops */
	atomic_int lost;       /* a renewal found the job claimed by another */
};

struct cat_jobs *cat_jobs_create(struct catalog *c, int shared_store)
{
	struct cat_jobs *j = calloc(1, sizeof(*j));
	char host[64] = "";

	if (j == NULL)
		return NULL;
	c->shared_jobs = c->shared && shared_store && c->db->ops->job_claim != NULL;
	/* TRACE_SERVER_JOB_LEASE_MS: docs/DEPLOY.md; the delay is for tests only */
	j->lease_ms = worker_env_int("TRACE_SERVER_JOB_LEASE_MS", LEASE_MS, 300, 3600000);
	j->commit_delay_ms = worker_env_int("TRACE_SERVER_TEST_COMMIT_DELAY_MS", 0, 0, 600000);
	gethostname(host, sizeof(host) - 1);
	snprintf(j->owner, sizeof(j->owner), "%s:%ld", host, (long)getpid());
	return j;
}

void cat_jobs_destroy(struct cat_jobs *j)
{
	free(j);
}

int64_t cat_jobs_running(const struct catalog *c)
{
	return c->jobs->running;
}

const char *claim_db_file(const struct claim *cl)
{
	return cl->db_file;
}

int claim_lost(const struct claim *cl)
{
	return atomic_load(&cl->lost);
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
	struct claim *cl = arg;
	struct catalog *c = cl->c;
	char err[512];
	int rc;

	pthread_mutex_lock(&cl->mu);
	while (!cl->ended) {
		cond_wait_ms(&cl->cv, &cl->mu, c->jobs->lease_ms / 3);
		if (cl->ended)
			break;
		pthread_mutex_unlock(&cl->mu);
		rc = c->db->ops->job_renew(c->db, &cl->job, c->jobs->lease_ms, err, sizeof(err));
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

/* Any server's worker (this one too) takes the job again. */
void claim_wait_store(struct catalog *c, struct claim *cl, const char *why)
{
	fprintf(stderr, "trace-server: trace %" PRId64 " waits for the store: %s\n", cl->job.trace, why);
	pthread_mutex_lock(&c->mu);
	worker_store_down_locked(c);
	pthread_mutex_unlock(&c->mu);
}

/* usage knows only the fixed names */
uint64_t claim_stored(struct catalog *c, int64_t id, const char *dbfile)
{
	char path[4096];
	struct stat st;

	c->store.ops->local_path(&c->store, id, dbfile, path, sizeof(path));
	return c->store.ops->usage(&c->store, id) + (stat(path, &st) == 0 ? (uint64_t)st.st_size : 0);
}

/* Tests only: a window to pause or kill this server in before a commit; a
 * deadline on the monotonic clock, which runs on while the process is
 * stopped, so a resumed server commits at once. */
static void commit_delay(int ms)
{
	struct timespec until;

	deadline_ms(CLOCK_MONOTONIC, ms, &until);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
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
int claim_commit(struct catalog *c, struct claim *cl, int rc, const struct ingest_result *res, char *summary,
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
	if (c->jobs->commit_delay_ms > 0)
		commit_delay(c->jobs->commit_delay_ms);
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) == NULL) {
		pthread_mutex_unlock(&c->mu);
		free(summary);
		c->store.ops->drop(&c->store, id, cl->db_file, err, sizeof(err));
		return 0;
	}
	/* the record as the commit writes it: r with the outcome's state; the
	 * commit under mu, so that r takes what the database took, and no
	 * save of r comes between */
	st = *r;
	rec_outcome(&st.state, &r->state, &o);
	done = c->db->ops->job_done(c->db, &cl->job, &st, err, sizeof(err));
	if (done == CATDB_OK) {
		worker_counted(c, rc, res, seconds);
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
 * server finished it). job_done writes back the record as read: under mu,
 * which keeps it as read (a rare path, a stale job). */
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
	struct trace_rec *r;
	char err[512], hint[16];
	int rc;

	memset(&cl, 0, sizeof(cl));
	cl.c = c;
	pthread_mutex_unlock(&c->mu);
	rc = c->db->ops->job_claim(c->db, c->jobs->owner, c->jobs->lease_ms, &cl.job, err, sizeof(err));
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
	c->jobs->running = r->id;
	snprintf(hint, sizeof(hint), "%s", r->state.format_hint);
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_init(&cl.mu, NULL);
	pthread_cond_init(&cl.cv, NULL);
	if (pthread_create(&cl.beat, NULL, beat_main, &cl) != 0) {
		pthread_mutex_destroy(&cl.mu);
		pthread_cond_destroy(&cl.cv);
		pthread_mutex_lock(&c->mu);
		c->jobs->running = 0;
		cat_sync_reread_locked(c); /* its state here is not the database's: read again */
		return 1;                  /* claimed again when the lease runs out */
	}
	worker_run(c, cl.job.trace, hint, &cl);
	pthread_mutex_lock(&cl.mu);
	cl.ended = 1;
	pthread_cond_signal(&cl.cv);
	pthread_mutex_unlock(&cl.mu);
	pthread_join(cl.beat, NULL);
	pthread_mutex_destroy(&cl.mu);
	pthread_cond_destroy(&cl.cv);
	pthread_mutex_lock(&c->mu);
	c->jobs->running = 0;
	/* not committed here (refused, lost, failed): the record missed what
	 * others wrote while it ran (sync.c leaves it alone), so every record
	 * is read again */
	if ((r = cat_find(c, cl.job.trace)) != NULL && r->state.status == TS_INGESTING)
		cat_sync_reread_locked(c);
	return 1;
}

/* Jobs are queued by other servers too, so the worker asks the catalog
 * every CLAIM_POLL_MS; what others changed meanwhile is the syncer's to
 * read (sync.c). */
int cat_jobs_round(struct catalog *c)
{
	if (worker_store_up_locked(c) && claim_run(c))
		return 1;
	cat_worker_nap_locked(c, CLAIM_POLL_MS);
	return 0;
}
