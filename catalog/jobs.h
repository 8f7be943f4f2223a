/*
 * Ingest jobs. The worker thread (worker.c) ingests queued traces one at
 * a time, in upload order, each in a process of its own (ingest/child.h),
 * then indexes the names of ready traces, keeps their sources compressed
 * and removes what --keep-failed and the retention bounds give up. With a
 * shared catalog and a shared store (c->shared_jobs) a queued trace is a
 * job in the catalog that any server's worker claims for a lease, keeps
 * with a heartbeat and commits under a fencing token (jobs.c; docs/
 * DEPLOY.md, "Ingest as shared jobs"). Either way one ingest's outcome
 * reaches its record through record.c's rec_outcome.
 *
 * State: struct cat_worker (worker.c: the thread, its condition, when the
 * store may be tried again) and struct cat_jobs (jobs.c: the shared jobs'
 * settings, the trace whose job runs now), both opaque and under the
 * catalog's lock. Of a record the worker writes only source_seen; every
 * other change goes through record.c.
 */
#ifndef CATALOG_JOBS_H
#define CATALOG_JOBS_H

#include <stddef.h>
#include <stdint.h>

struct catalog;
struct trace_rec;
struct ingest_result;

/* ---- the worker (worker.c) ---- */

struct cat_worker;

/* worker.c's state; NULL when out of memory. */
struct cat_worker *cat_worker_create(void);
void cat_worker_destroy(struct cat_worker *w);
/* Starts the worker thread: 0 or CAT_EFAIL. cat_worker_wake (under mu)
 * tells it a trace was queued or pinned, symbols renamed a trace's
 * functions, or the catalog stops; cat_worker_join waits for it to end. */
int cat_worker_start(struct catalog *c);
void cat_worker_wake(struct catalog *c);
void cat_worker_join(struct catalog *c);
/* The JSON members kept in a record's summary column, from ingest's result
 * and the trace's metadata (qry_trace_metadata); NULL when out of memory or
 * when the database cannot be read. For the worker's ingests and live.c's
 * snapshots. */
char *cat_summary_json(const struct ingest_result *res, const char *db_path);

/* ---- shared ingest jobs (jobs.c) ---- */

struct cat_jobs;

/* jobs.c's state, and c->shared_jobs set (a shared catalog and
 * shared_store: files every server reaches); after c->db is open. NULL
 * when out of memory. */
struct cat_jobs *cat_jobs_create(struct catalog *c, int shared_store);
void cat_jobs_destroy(struct cat_jobs *j);
/* Queues trace r's ingest job in the shared catalog (under mu); when the
 * database cannot be reached the record is kept unsaved, so that cat_sync
 * saves it, and queues it, again. */
void cat_job_queue_locked(struct catalog *c, struct trace_rec *r);
/* The trace whose shared job this server's worker runs now, 0 when none
 * (under mu): sync.c leaves its state to the worker. */
int64_t cat_jobs_running(const struct catalog *c);

/* ---- between worker.c and jobs.c ---- */

struct claim;

/* Ingests trace id into its database: "trace.db" for this server's own
 * queue, the claim's own file for a shared job (cl not NULL); not under
 * mu. Its end reaches the record by worker_finish or cat_claim_commit. */
void worker_run(struct catalog *c, int64_t id, const char *hint, struct claim *cl);
/* Counts an ingest that ended (under mu): in /metrics' figures. */
void worker_counted(struct catalog *c, int rc, const struct ingest_result *res, double seconds);
/* The store could not be reached: no ingest starts for a while (under mu). */
void worker_store_down_locked(struct catalog *c);
/* Whether a claim may be made now (the store is not known to be down;
 * under mu). */
int worker_store_up_locked(const struct catalog *c);
/* Waits on the worker's condition for at most ms (under mu). */
void cat_worker_nap_locked(struct catalog *c, int64_t ms);
/* An integer from the environment within [lo, hi], else def. */
int worker_env_int(const char *name, int def, int lo, int hi);

/* One round of the worker with shared jobs (under mu): a job claimed and
 * run (1), or none free (0; the worker waits a little). */
int cat_jobs_round(struct catalog *c);
/* A claim's database file ("trace-<token>.db"), and whether another server
 * has claimed its job since (the ingest stops). */
const char *claim_db_file(const struct claim *cl);
int claim_lost(const struct claim *cl);
/* Ends a claimed job with the ingest's outcome (not under mu). Takes
 * summary. 1 when this claim committed the trace ready. */
int claim_commit(struct catalog *c, struct claim *cl, int rc, const struct ingest_result *res, char *summary,
		 int indexed, double seconds);
/* The store could not be reached: the job stays claimed until its lease
 * runs out, then any server takes it again (not under mu). */
void claim_wait_store(struct catalog *c, struct claim *cl, const char *why);
/* Bytes of trace id's files, its claim's database dbfile among them. */
uint64_t claim_stored(struct catalog *c, int64_t id, const char *dbfile);

#endif
