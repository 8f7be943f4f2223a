/*
 * The catalog's records: memory under one mutex, written through to the
 * catalog's database (catdb.h), so that a restarted server knows every
 * trace: a ready trace is served as it was, and one whose ingest was
 * interrupted is queued again from its source file (or marked failed with
 * a reason when that is gone).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "catalog_internal.h"
#include "../provider/utf8.h"

const char *const cat_status_names[TS_NSTATUS] = { "queued", "ingesting", "ready", "failed", "live" };

const char *cat_strerror(int err)
{
	switch (err) {
	case CAT_OK:
		return "no error";
	case CAT_EFAIL:
		return "a file, the catalog's database or memory failed";
	case CAT_ENOTRACE:
		return "there is no such trace";
	case CAT_EINVAL:
		return "a name, description, label, cursor or note the catalog does not take";
	case CAT_ELABELS:
		return "a trace has at most 64 labels";
	case CAT_ENOTREADY:
		return "the trace is not ready";
	case CAT_ENONOTE:
		return "there is no such note";
	case CAT_ENOFILE:
		return "the trace has no such file";
	case CAT_EBADTRACE:
		return "the trace's bytes are not a trace";
	case CAT_EUNAVAILABLE:
		return "the catalog's database cannot be reached now";
	case CAT_ESTOREDOWN:
		return "the trace store cannot be reached now";
	case CAT_ECONFLICT:
		return "another server changed the trace since it was read";
	default:
		return "unknown catalog error";
	}
}

int cat_storage_err(int rc)
{
	return rc == STORAGE_OK ? CAT_OK : rc == STORAGE_EDOWN ? CAT_ESTOREDOWN : CAT_ENOFILE;
}

const char *cat_status_name(int status)
{
	return status >= 0 && status < TS_NSTATUS ? cat_status_names[status] : "failed";
}

int cat_status_parse(const char *s)
{
	int i;

	for (i = 0; i < TS_NSTATUS; i++)
		if (s && strcmp(s, cat_status_names[i]) == 0)
			return i;
	return TS_FAILED;
}

const char *cat_db_file(const struct trace_rec *r)
{
	return r->state.db_file[0] ? r->state.db_file : "trace.db";
}

/* The stored name of file: "trace.db" is the trace's database, whichever
 * object holds it (the one its record names: a shared ingest job's result
 * is trace-<token>.db); other names are themselves. Takes mu. */
static void file_name(struct catalog *c, int64_t id, const char *file, char *out, size_t n)
{
	struct trace_rec *r;

	snprintf(out, n, "%s", file);
	if (strcmp(file, "trace.db") != 0)
		return;
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL)
		snprintf(out, n, "%s", cat_db_file(r));
	pthread_mutex_unlock(&c->mu);
}

void cat_path(struct catalog *c, int64_t id, const char *file, char *out, size_t n)
{
	char name[32];

	file_name(c, id, file, name, sizeof(name));
	c->store.ops->local_path(&c->store, id, name, out, n);
}

int cat_fetch(struct catalog *c, int64_t id, const char *file, char *err, size_t errlen)
{
	char name[32];

	file_name(c, id, file, name, sizeof(name));
	return cat_storage_err(c->store.ops->fetch(&c->store, id, name, err, errlen));
}

void cat_spool_dir(const struct catalog *c, char *out, size_t n)
{
	c->store.ops->spool_dir(&c->store, out, n);
}

/* ---- the records ----------------------------------------------------------- */

enum { PATCH_TRIES = 16 }; /* a patch refused as stale is read again and retried this often */

static int rec_push(struct catalog *c, struct trace_rec *r)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct trace_rec **v = realloc(c->v, cap * sizeof(*v));

		if (v == NULL)
			return CAT_EFAIL;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = r;
	return 0;
}

int cat_rec_insert(struct catalog *c, struct trace_rec *r)
{
	size_t i;

	if (rec_push(c, r) != 0)
		return CAT_EFAIL;
	for (i = c->n - 1; i > 0 && c->v[i - 1]->id > r->id; i--)
		c->v[i] = c->v[i - 1];
	c->v[i] = r;
	return 0;
}

/* Takes trace id out of the records (under mu): its record, or NULL. */
static struct trace_rec *rec_unlink(struct catalog *c, int64_t id)
{
	struct trace_rec *r = NULL;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (c->v[i]->id == id) {
			r = c->v[i];
			memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof(*c->v));
			c->n--;
			cat_sync_unlinked_locked(c, r);
			break;
		}
	}
	if (r && c->o.db_gone) /* its readers let its database go now */
		c->o.db_gone(id);
	return r;
}

struct trace_rec *cat_rec_search(struct trace_rec *const *v, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo]->id == id ? v[lo] : NULL;
}

/* Records are kept in id order. */
struct trace_rec *cat_find(struct catalog *c, int64_t id)
{
	return cat_rec_search(c->v, c->n, id);
}

/* After a restart: a trace caught mid-ingest goes back in the queue when its
 * source is still there; a ready trace without its database has failed, and
 * one whose database an older server wrote is ingested again. */
static void rec_recover(struct catalog *c, struct trace_rec *r)
{
	int status = r->state.status, indexed = r->state.indexed;
	uint64_t stored = r->state.stored;
	char path[4096];
	struct stat st;

	if (r->state.status == TS_LIVE)
		cat_live_recover(c, r);
	if (r->state.status == TS_READY) {
		c->store.ops->local_path(&c->store, r->id, cat_db_file(r), path, sizeof(path));
		if (stat(path, &st) == 0 && tracedb_file_version(path) != TRACEDB_SCHEMA_VERSION) {
			rec_queue(r);
			rec_indexed(r, 0);
		}
	}
	/* what a growing upload's commits told (grow.h) is not read again:
	 * its ingest starts over, and the database it grew (and left, in WAL
	 * mode) goes, whatever becomes of the trace */
	if (r->state.status == TS_QUEUED || r->state.status == TS_INGESTING) {
		cat_preview_drop_locked(r);
		if (r->state.stream[0] == '\0' && !c->shared_jobs) {
			c->store.ops->local_path(&c->store, r->id, "trace.db", path, sizeof(path));
			tracedb_remove(path);
		}
	}
	/* a shared store that cannot be reached now loses nothing: has() says -2 */
	if ((r->state.status == TS_QUEUED || r->state.status == TS_INGESTING) && c->shared_jobs) {
		/* another server may be ingesting it now: its job says whose it
		 * is, and the status stays; queued again in case it was lost */
		cat_job_queue_locked(c, r);
	} else if (r->state.status == TS_QUEUED || r->state.status == TS_INGESTING) {
		c->store.ops->local_path(&c->store, r->id, "source", path, sizeof(path));
		if (r->state.stream[0] == '\0' && stat(path, &st) == 0 && (uint64_t)st.st_size < r->state.size) {
			/* recorded at its first bytes (cat_upload_grows), its body
			 * never ended: its client was told nothing but an error */
			rec_fail(r, "upload_incomplete", "the server stopped while the trace was uploaded; upload it again");
		} else if (cat_source_has(c, r->id) != 0) {
			rec_queue(r);
		} else {
			rec_fail(r, "source_lost", "the server stopped during ingest and the uploaded file is gone; "
						   "upload it again");
		}
	} else if (r->state.status == TS_READY) {
		if (c->store.ops->has(&c->store, r->id, cat_db_file(r)) == 0)
			rec_fail(r, "database_lost", "the trace's database is missing; upload the trace again");
	}
	if (r->state.stored == 0)
		rec_stored(r, c->store.ops->usage(&c->store, r->id));
	/* written back only when it changed: a start-up does not rewrite the catalog */
	if (r->state.status != status || r->state.indexed != indexed || r->state.stored != stored || status == TS_LIVE)
		cat_save(c, r, CATDB_STATE);
}

time_t cat_rfc3339_parse(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end && *end == '\0' ? timegm(&tm) : 0;
}

/* Whether a record owns trace id's files (storage_dir_sweep). */
static int rec_owns(void *ctx, int64_t id)
{
	return cat_find(ctx, id) != NULL;
}

/*
 * The records at the start. In a shared catalog a trace whose files this
 * server's store does not hold is another server's: it is listed and
 * searched here, never recovered (its source is elsewhere). Alone, the
 * server owns its data directory: files no record owns (a kill between
 * storing a new trace's files and recording it, cat_add_as) go.
 */
static int load(struct catalog *c, char *err, size_t errlen)
{
	size_t i;
	int swept;

	if (cat_sync_first(c, err, errlen) != 0)
		return CAT_EFAIL;
	for (i = 0; i < c->n; i++) {
		struct trace_rec *r = c->v[i];

		if (!r->sync.foreign)
			rec_recover(c, r);
	}
	if (!c->shared && (swept = storage_dir_sweep(&c->store, rec_owns, c)) > 0)
		fprintf(stderr, "trace-server: removed the files of %d trace%s never recorded (a stop while stored)\n",
			swept, swept == 1 ? "" : "s");
	return 0;
}

struct catalog *cat_open(const char *dir, const struct cat_opts *o, char *err, size_t errlen)
{
	struct catalog *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->o = *o;
	c->o.catalog = NULL; /* the caller's string: not kept */
	c->o.store_url = c->o.cache_dir = NULL; /* likewise */
	if ((c->sync = cat_sync_create()) == NULL || (c->worker = cat_worker_create()) == NULL ||
	    (c->live = cat_live_create()) == NULL || (c->dir = strdup(dir)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out_close;
	}
	if (storage_open(&c->store, dir, o->store_url, o->cache_dir, o->cache_max, o->store_part_size, err, errlen) !=
	    0)
		goto out_close;
	if (o->catalog)
		c->db = catdb_pg_open(o->catalog, err, errlen);
	else
		c->db = catdb_sqlite_open(dir, err, errlen);
	c->shared = o->catalog != NULL;
	if (c->db == NULL)
		goto out_close;
	if ((c->jobs = cat_jobs_create(c, o->store_url != NULL)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out_close;
	}
	if (load(c, err, errlen) != 0)
		goto out_close;
	return c;
out_close:
	cat_close(c);
	return NULL;
}

void cat_wake(struct catalog *c, struct trace_rec *r)
{
	struct waiter *w = r->waiters, *next;

	r->waiters = NULL;
	for (; w; w = next) {
		next = w->next;
		if (c->o.resume)
			c->o.resume(w->conn);
		free(w);
	}
}

void cat_stop(struct catalog *c)
{
	size_t i;

	if (c->sync == NULL || c->worker == NULL || c->live == NULL)
		return; /* a catalog not opened whole never started */
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	cat_worker_wake(c);
	cat_live_wake(c);
	cat_sync_wake(c);
	pthread_mutex_unlock(&c->mu);
	cat_sync_join(c);
	cat_worker_join(c);
	cat_live_join(c);
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < c->n; i++)
		cat_wake(c, c->v[i]);
	pthread_mutex_unlock(&c->mu);
}

void cat_close(struct catalog *c)
{
	size_t i;

	if (c == NULL)
		return;
	cat_stop(c);
	for (i = 0; i < c->n; i++)
		cat_rec_free(c->v[i]);
	free(c->v);
	if (c->db)
		c->db->ops->close(c->db);
	if (c->store.ops)
		c->store.ops->close(&c->store);
	free(c->dir);
	cat_jobs_destroy(c->jobs);
	cat_live_destroy(c->live);
	cat_worker_destroy(c->worker);
	cat_sync_destroy(c->sync);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int cat_start(struct catalog *c)
{
	if (cat_worker_start(c) != 0 || cat_live_start(c) != 0 || cat_sync_start(c) != 0)
		return CAT_EFAIL;
	return 0;
}

size_t cat_count(struct catalog *c)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = c->n;
	pthread_mutex_unlock(&c->mu);
	return n;
}

void cat_rfc3339(time_t t, char *out, size_t n)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * The name to keep for a symbols file: the base name of filename when the
 * file at path is an ELF binary (a symbol map names no program), at most
 * 255 bytes; NULL otherwise or when out of memory.
 */
static char *binary_name_of(const char *path, const char *filename)
{
	unsigned char magic[4] = { 0 };
	const char *base;
	FILE *f;
	size_t got = 0;

	if (path == NULL || filename == NULL || (f = fopen(path, "rb")) == NULL)
		return NULL;
	got = fread(magic, 1, 4, f);
	fclose(f);
	if (got != 4 || memcmp(magic, "\x7f" "ELF", 4) != 0)
		return NULL;
	base = strrchr(filename, '/');
	base = base ? base + 1 : filename;
	return base[0] ? strndup(base, 255) : NULL;
}

/* Records a new trace in status (queued, or live with stream "receiving").
 * Its id, its files and their size are had without the lock (an upload to
 * a shared store takes seconds, and every request needs the lock), which
 * is taken only to put the record among the others and save it. */
int64_t cat_add_as(struct catalog *c, const struct cat_new *nw, int status, char *err, size_t errlen)
{
	struct trace_rec *r;
	int64_t id = CAT_EFAIL, new_id;
	uint64_t stored;
	int rc;

	if (nw->name == NULL) {
		snprintf(err, errlen, "a trace's name is 1 to %d bytes", CAT_MAX_NAME);
		return CAT_EINVAL;
	}
	if (cat_meta_check(nw->name, nw->description, nw->labels, nw->nlabels, err, errlen) != 0)
		return CAT_EINVAL;
	if ((r = rec_new(nw, status, binary_name_of(nw->binary_spool, nw->binary_filename))) == NULL) {
		snprintf(err, errlen, "out of memory or more than %d labels", CAT_MAX_LABELS);
		return CAT_EFAIL;
	}
	if ((rc = c->db->ops->next_id(c->db, &new_id, err, errlen)) != CATDB_OK) {
		cat_rec_free(r);
		return rc == CATDB_EDOWN ? CAT_EUNAVAILABLE : CAT_EFAIL;
	}
	if ((rc = c->store.ops->put(&c->store, new_id, "source", nw->spool, err, errlen)) != 0 ||
	    (nw->binary_spool &&
	     (rc = c->store.ops->put(&c->store, new_id, "binary", nw->binary_spool, err, errlen)) != 0)) {
		id = rc == STORAGE_EDOWN ? CAT_ESTOREDOWN : CAT_EFAIL;
		goto out_remove;
	}
	stored = c->store.ops->usage(&c->store, new_id);
	pthread_mutex_lock(&c->mu);
	rec_stamp(r, new_id, stored, time(NULL));
	if ((rc = cat_rec_insert(c, r)) == 0 && (rc = cat_save(c, r, CATDB_ALL)) != 0)
		rec_unlink(c, r->id); /* not kept: the upload fails */
	if (rc == 0)
		cat_worker_wake(c);
	pthread_mutex_unlock(&c->mu);
	if (rc == 0)
		return new_id;
	snprintf(err, errlen, "cannot record the trace in the catalog%s",
		 rc == CAT_EUNAVAILABLE ? ": its database cannot be reached" : "");
	id = rc == CAT_EUNAVAILABLE ? CAT_EUNAVAILABLE : CAT_EFAIL;
out_remove:
	c->store.ops->remove(&c->store, new_id);
	cat_rec_free(r);
	return id;
}

int64_t cat_add(struct catalog *c, const struct cat_new *nw, char *err, size_t errlen)
{
	return cat_add_as(c, nw, TS_QUEUED, err, errlen);
}

/* One try of a patch (under mu): cat_patch's codes, or CAT_ECONFLICT when
 * another server changed the record since this one read it (nothing
 * changed). */
static int patch_locked(struct catalog *c, int64_t id, const struct cat_patch *p, char *err, size_t errlen)
{
	struct rec_meta m = { 0 };
	struct trace_rec *r;
	int rc;

	if ((r = cat_find(c, id)) == NULL)
		return CAT_ENOTRACE;
	rc = cat_labels_apply(r->meta.labels, r->meta.nlabels, p->set, p->nset, p->unset, p->nunset, &m.labels,
			      &m.nlabels);
	if (rc == 0 && ((m.name = strdup(p->name ? p->name : r->meta.name)) == NULL ||
			(m.description = strdup(p->description ? p->description : r->meta.description)) == NULL))
		rc = CAT_EFAIL;
	if (rc != 0) {
		snprintf(err, errlen, rc == CAT_ELABELS ? "a trace has at most 64 labels" : "out of memory");
		goto out;
	}
	m.pinned = p->pinned >= 0 ? p->pinned != 0 : r->meta.pinned;
	rec_meta_swap(r, &m); /* m holds the old meta now */
	if ((rc = cat_save(c, r, CATDB_META)) != 0) {
		/* nothing changes when it cannot be kept: not even later */
		cat_unsaved_clear(c, r, CATDB_META);
		rec_meta_swap(r, &m);
		snprintf(err, errlen, "the catalog could not be written%s",
			 rc == CAT_EUNAVAILABLE ? ": its database cannot be reached" : "");
		if (rc != CAT_EUNAVAILABLE && rc != CAT_ECONFLICT)
			rc = CAT_EFAIL;
		goto out;
	}
	cat_worker_wake(c); /* pinning changes what retention removes */
out:
	rec_meta_fini(&m);
	return rc;
}

/* The labels set and unset apply to the newest labels: in a shared
 * catalog a patch made on a record another server changed meanwhile is
 * refused by the database, and made again on the record read afresh. */
int cat_patch(struct catalog *c, int64_t id, const struct cat_patch *p, char *err, size_t errlen)
{
	int rc, tries = 0;

	if (cat_meta_check(p->name, p->description, p->set, p->nset, err, errlen) != 0)
		return CAT_EINVAL;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		if (cat_sync_locked(c, 1) != 0) {
			snprintf(err, errlen, "the catalog's database cannot be reached");
			rc = CAT_EUNAVAILABLE;
			break;
		}
		rc = patch_locked(c, id, p, err, errlen);
		if (rc != CAT_ECONFLICT || ++tries == PATCH_TRIES)
			break;
		/* another server won the race: let it finish, a little longer each time, not under mu */
		pthread_mutex_unlock(&c->mu);
		nanosleep(&(struct timespec){ 0, (long)(tries * 1000 + rand() % 2000) * 1000L }, NULL);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	if (rc == CAT_ECONFLICT) {
		snprintf(err, errlen, "the trace kept changing through other servers; try again");
		rc = CAT_EFAIL;
	}
	return rc;
}

int cat_status(struct catalog *c, int64_t id)
{
	struct trace_rec *r;
	int s;

	pthread_mutex_lock(&c->mu);
	cat_sync_locked(c, 0); /* a trace read goes on from memory while the database is down */
	r = cat_find(c, id);
	s = r ? r->state.status : CAT_ENOTRACE;
	pthread_mutex_unlock(&c->mu);
	return s;
}

int cat_wait(struct catalog *c, int64_t id, void *conn)
{
	struct trace_rec *r;
	struct waiter *w;
	int waits = 0;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	if (r && (r->state.status == TS_QUEUED || r->state.status == TS_INGESTING || r->state.status == TS_LIVE) &&
	    (w = calloc(1, sizeof(*w))) != NULL) {
		w->conn = conn;
		w->next = r->waiters;
		r->waiters = w;
		if (c->o.suspend)
			c->o.suspend(conn); /* under mu, so no wake-up can come before it */
		waits = 1;
	}
	pthread_mutex_unlock(&c->mu);
	return waits;
}

/* Whether this server removes r's files when r goes: its own trace, or
 * any trace with a shared store (docs/DEPLOY.md, "Deleting a trace ...
 * deletes its objects and its cached files"): there every server reaches
 * the objects, and each holds its own cached copies, which no other
 * server would ever remove. The server that uploaded it may be gone. */
static int files_here(const struct catalog *c, const struct trace_rec *r)
{
	return !r->sync.foreign || c->shared_jobs;
}

/* A trace being ingested leaves its files to the worker: it sees the
 * record gone, throws its result away and removes them. r is out of the
 * records: no other thread reaches it, and the lock is not needed. */
void cat_rec_drop(struct catalog *c, struct trace_rec *r)
{
	if (r == NULL)
		return;
	if (r->state.status != TS_INGESTING && files_here(c, r))
		c->store.ops->remove(&c->store, r->id);
	cat_rec_free(r);
}

/* Nothing changes when a shared database cannot remove it: a record kept
 * there but gone here would never come back to the other servers. The
 * database's removal goes in the same hold as the record's, so that no
 * save of the record can come between them. */
struct trace_rec *cat_remove_locked(struct catalog *c, int64_t id, int *rc)
{
	struct trace_rec *r;
	char err[512];
	int dbrc;

	*rc = CAT_ENOTRACE;
	if ((r = cat_find(c, id)) == NULL)
		return NULL;
	dbrc = c->db->ops->remove(c->db, id, err, sizeof(err));
	if (dbrc == CATDB_EFAIL && !c->shared && r->state.status != TS_INGESTING) {
		/* catalog.db could not be written, most likely a full disk:
		 * the trace's files go first, which gives room back, and the
		 * removal is tried again (under the lock: the two go together,
		 * and a full disk is rare). Else a full disk could never be
		 * emptied through the API. Still refused, the trace goes from
		 * the library anyway, as it has no files left: were the record
		 * found again at a restart, recovery marks it failed. */
		c->store.ops->remove(&c->store, id);
		if ((dbrc = c->db->ops->remove(c->db, id, err, sizeof(err))) == CATDB_EFAIL) {
			fprintf(stderr, "trace-server: trace %" PRId64 " was removed but stays in catalog.db: %s\n", id, err);
			dbrc = CATDB_OK;
		}
	}
	if (dbrc == CATDB_ENOENT)
		return cat_forget_locked(c, id); /* as the next look at the database would */
	if (dbrc != CATDB_OK) {
		fprintf(stderr, "trace-server: trace %" PRId64 " was not removed: %s\n", id, err);
		*rc = dbrc == CATDB_EDOWN ? CAT_EUNAVAILABLE : CAT_EFAIL;
		return NULL;
	}
	*rc = CAT_OK;
	return cat_forget_locked(c, id);
}

struct trace_rec *cat_forget_locked(struct catalog *c, int64_t id)
{
	struct trace_rec *r = rec_unlink(c, id);

	if (r != NULL)
		cat_wake(c, r);
	return r;
}

int cat_delete(struct catalog *c, int64_t id)
{
	struct trace_rec *r;
	int rc;

	pthread_mutex_lock(&c->mu);
	/* a trace another server added a moment ago is one to delete too */
	rc = cat_find(c, id) ? 0 : cat_sync_locked(c, 1);
	r = rc == 0 ? cat_remove_locked(c, id, &rc) : NULL;
	pthread_mutex_unlock(&c->mu);
	cat_rec_drop(c, r); /* its files, without the lock */
	return rc;
}

int cat_symbols(struct catalog *c, int64_t id, const char *spool, const char *filename, char *err, size_t errlen)
{
	char db[4096], name[32], *bname = binary_name_of(spool, filename);
	struct trace_rec *r;
	uint64_t named = 0, stored;
	int st, rc = 0;

	pthread_mutex_lock(&c->mu);
	r = cat_find(c, id);
	st = r ? r->state.status : CAT_ENOTRACE;
	pthread_mutex_unlock(&c->mu);
	if (st < 0) {
		snprintf(err, errlen, "there is no trace with this id");
		free(bname);
		return CAT_ENOTRACE;
	}
	cat_path(c, id, "trace.db", db, sizeof(db));
	file_name(c, id, "trace.db", name, sizeof(name));
	/* the one place a stored file changes: trace.db named, published again */
	if (st == TS_READY && (cat_fetch(c, id, "trace.db", err, errlen) != 0 ||
			       ingest_symbolize(db, spool, &named, err, errlen) != 0 ||
			       c->store.ops->publish(&c->store, id, name, err, errlen) != 0)) {
		free(bname);
		return CAT_EFAIL;
	}
	if (c->store.ops->put(&c->store, id, "binary", spool, err, errlen) != 0) {
		free(bname);
		return CAT_EFAIL;
	}
	stored = c->store.ops->usage(&c->store, id); /* the files' sizes: read before the lock */
	pthread_mutex_lock(&c->mu);
	if ((r = cat_find(c, id)) != NULL) {
		rec_symbols(r, bname, st == TS_READY, named);
		bname = NULL;
		rec_stored(r, stored);
	}
	if (r != NULL && st == TS_READY)
		cat_worker_wake(c); /* to be indexed again */
	if (r != NULL && (rc = cat_save(c, r, CATDB_STATE)) != 0) {
		snprintf(err, errlen, "the catalog could not be written: %s", cat_strerror(rc));
		rc = CAT_EFAIL;
	}
	pthread_mutex_unlock(&c->mu);
	free(bname);
	return rc;
}
