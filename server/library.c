/*
 * The trace library: the catalog of traces and the background ingest.
 *
 * Records live in memory under one mutex and are written through to
 * catalog.db, so that a restarted server knows every trace: a ready trace
 * is served as it was, and one whose ingest was interrupted is queued again
 * from its source file (or marked failed with a reason when that is gone).
 * One worker thread ingests queued traces in upload order.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "server_internal.h"

extern const char schema_catalog_sql[];

static const char *const status_names[] = { "queued", "ingesting", "ready", "failed" };

static int status_parse(const char *s)
{
	int i;

	for (i = 0; i < 4; i++)
		if (s && strcmp(s, status_names[i]) == 0)
			return i;
	return TS_FAILED;
}

void lib_path(const struct library *l, int64_t id, const char *file, char *out, size_t n)
{
	if (file)
		snprintf(out, n, "%s/traces/%" PRId64 "/%s", l->dir, id, file);
	else
		snprintf(out, n, "%s/traces/%" PRId64, l->dir, id);
}

void lib_spool_dir(const struct library *l, char *out, size_t n)
{
	snprintf(out, n, "%s/spool", l->dir);
}

static char *dup_or_null(const unsigned char *s)
{
	return s ? strdup((const char *)s) : NULL;
}

static void rec_free(struct trace_rec *r)
{
	if (r == NULL)
		return;
	free(r->name);
	free(r->error_msg);
	free(r->summary);
	free(r->symbols_error);
	free(r->binary_name);
	free(r);
}

/* Writes one record to the catalog; called with mu held. */
static int rec_save(struct library *l, const struct trace_rec *r)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(l->catalog,
			       "INSERT OR REPLACE INTO traces (id, name, format, format_hint, size_bytes, status, "
			       "error_code, error_message, created_at, start_ns, end_ns, summary, symbols_named, "
			       "symbols_error, binary_name) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, r->id);
	sqlite3_bind_text(st, 2, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, r->format[0] ? r->format : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, r->format_hint[0] ? r->format_hint : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)r->size);
	sqlite3_bind_text(st, 6, status_names[r->status], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, r->error_code[0] ? r->error_code : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, r->error_msg, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, r->created_at, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 10, r->start_ns);
	sqlite3_bind_int64(st, 11, r->end_ns);
	sqlite3_bind_text(st, 12, r->summary, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 13, r->symbols_named);
	sqlite3_bind_text(st, 14, r->symbols_error, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 15, r->binary_name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(st);
	return rc;
}

static int lib_push(struct library *l, struct trace_rec *r)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct trace_rec **v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = r;
	if (r->id >= l->next_id)
		l->next_id = r->id + 1;
	return 0;
}

static struct trace_rec *lib_find(struct library *l, int64_t id)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i]->id == id)
			return l->v[i];
	return NULL;
}

static void rec_fail(struct trace_rec *r, const char *code, const char *msg)
{
	r->status = TS_FAILED;
	snprintf(r->error_code, sizeof(r->error_code), "%s", code);
	free(r->error_msg);
	r->error_msg = strdup(msg);
}

/* After a restart: a trace caught mid-ingest goes back in the queue when its
 * source is still there; a ready trace without its database has failed, and
 * one whose database an older server wrote is ingested again. */
static void rec_recover(struct library *l, struct trace_rec *r)
{
	char path[4096];
	struct stat st;

	if (r->status == TS_READY) {
		lib_path(l, r->id, "trace.db", path, sizeof(path));
		if (stat(path, &st) == 0 && tracedb_file_version(path) != TRACEDB_SCHEMA_VERSION)
			r->status = TS_QUEUED;
	}

	if (r->status == TS_QUEUED || r->status == TS_INGESTING) {
		lib_path(l, r->id, "source", path, sizeof(path));
		if (stat(path, &st) == 0) {
			r->status = TS_QUEUED;
		} else {
			rec_fail(r, "source_lost", "the server stopped during ingest and the uploaded file is gone; "
						   "upload it again");
		}
	} else if (r->status == TS_READY) {
		lib_path(l, r->id, "trace.db", path, sizeof(path));
		if (stat(path, &st) != 0)
			rec_fail(r, "database_lost", "the trace's database is missing; upload the trace again");
	}
	rec_save(l, r);
}

/* The next trace id kept in the catalog (0 when none yet). */
static int64_t seq_load(struct library *l)
{
	sqlite3_stmt *st;
	int64_t v = 0;

	if (sqlite3_prepare_v2(l->catalog, "SELECT value FROM sequence WHERE name = 'trace'", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return v;
}

static int seq_save(struct library *l)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "INSERT OR REPLACE INTO sequence VALUES ('trace', %" PRId64 ")", l->next_id);
	return sqlite3_exec(l->catalog, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* The time of "YYYY-MM-DDTHH:MM:SSZ"; 0 when it does not parse. */
static time_t rfc3339_parse(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end && *end == '\0' ? timegm(&tm) : 0;
}

static int lib_load(struct library *l)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(l->catalog,
			       "SELECT id, name, format, format_hint, size_bytes, status, error_code, error_message, "
			       "created_at, start_ns, end_ns, summary, symbols_named, symbols_error, binary_name FROM traces ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct trace_rec *r = calloc(1, sizeof(*r));

		if (r == NULL || lib_push(l, r) != 0) {
			rec_free(r);
			sqlite3_finalize(st);
			return -1;
		}
		r->id = sqlite3_column_int64(st, 0);
		if (r->id >= l->next_id)
			l->next_id = r->id + 1; /* ids are never reused, across restarts too */
		r->name = dup_or_null(sqlite3_column_text(st, 1));
		snprintf(r->format, sizeof(r->format), "%s", (const char *)sqlite3_column_text(st, 2) ?: "");
		snprintf(r->format_hint, sizeof(r->format_hint), "%s", (const char *)sqlite3_column_text(st, 3) ?: "");
		r->size = (uint64_t)sqlite3_column_int64(st, 4);
		r->status = status_parse((const char *)sqlite3_column_text(st, 5));
		snprintf(r->error_code, sizeof(r->error_code), "%s", (const char *)sqlite3_column_text(st, 6) ?: "");
		r->error_msg = dup_or_null(sqlite3_column_text(st, 7));
		snprintf(r->created_at, sizeof(r->created_at), "%s", (const char *)sqlite3_column_text(st, 8) ?: "");
		r->created = rfc3339_parse(r->created_at);
		r->start_ns = sqlite3_column_int64(st, 9);
		r->end_ns = sqlite3_column_int64(st, 10);
		r->summary = dup_or_null(sqlite3_column_text(st, 11));
		r->symbols_named = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 12);
		r->symbols_error = dup_or_null(sqlite3_column_text(st, 13));
		r->binary_name = dup_or_null(sqlite3_column_text(st, 14));
		if (r->name == NULL)
			r->name = strdup("");
		rec_recover(l, r);
	}
	sqlite3_finalize(st);
	if (seq_load(l) > l->next_id)
		l->next_id = seq_load(l);
	return 0;
}

/* Brings a catalog an older server made up to date: columns added since. */
static int catalog_upgrade(sqlite3 *db)
{
	static const char *const cols[][2] = {
		{ "format_hint", "TEXT" },
		{ "symbols_named", "INTEGER" },
		{ "symbols_error", "TEXT" },
		{ "binary_name", "TEXT" },
	};
	char sql[160];
	sqlite3_stmt *st;
	size_t i;
	int found;

	for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('traces') WHERE name = ?", -1, &st, NULL) !=
		    SQLITE_OK)
			return -1;
		sqlite3_bind_text(st, 1, cols[i][0], -1, SQLITE_STATIC);
		found = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		snprintf(sql, sizeof(sql), "ALTER TABLE traces ADD COLUMN %s %s", cols[i][0], cols[i][1]);
		if (!found && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return -1;
	}
	return 0;
}

static int mkdir_p(const char *path)
{
	return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Removes what uploads in progress left when the server last stopped. */
static void clean_spool(const struct library *l)
{
	char dir[4096], path[4352];
	struct dirent *e;
	DIR *d;

	lib_spool_dir(l, dir, sizeof(dir));
	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
}

int lib_open(struct library *l, const char *dir, char *err, size_t errlen)
{
	char path[4096];

	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->work, NULL);
	l->next_id = 1;
	l->dir = strdup(dir);
	snprintf(path, sizeof(path), "%s/traces", dir);
	if (l->dir == NULL || mkdir_p(dir) != 0 || mkdir_p(path) != 0) {
		snprintf(err, errlen, "cannot create the data directory %s: %s", dir, strerror(errno));
		return -1;
	}
	lib_spool_dir(l, path, sizeof(path));
	if (mkdir_p(path) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	clean_spool(l);
	snprintf(path, sizeof(path), "%s/catalog.db", dir);
	if (sqlite3_open_v2(path, &l->catalog, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
			    NULL) != SQLITE_OK ||
	    sqlite3_exec(l->catalog, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(l->catalog, schema_catalog_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    catalog_upgrade(l->catalog) != 0 || lib_load(l) != 0) {
		snprintf(err, errlen, "cannot open the catalog %s: %s", path,
			 l->catalog ? sqlite3_errmsg(l->catalog) : "out of memory");
		return -1;
	}
	return 0;
}

static void wake_waiters(struct library *l, struct trace_rec *r)
{
	struct waiter *w = r->waiters, *next;

	r->waiters = NULL;
	for (; w; w = next) {
		next = w->next;
		if (l->resume)
			l->resume(w->conn);
		free(w);
	}
}

void lib_stop(struct library *l)
{
	size_t i;

	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	if (l->worker_started)
		pthread_join(l->worker, NULL);
	l->worker_started = 0;
	pthread_mutex_lock(&l->mu);
	for (i = 0; i < l->n; i++)
		wake_waiters(l, l->v[i]);
	pthread_mutex_unlock(&l->mu);
}

void lib_close(struct library *l)
{
	size_t i;

	lib_stop(l);
	for (i = 0; i < l->n; i++)
		rec_free(l->v[i]);
	free(l->v);
	if (l->catalog)
		sqlite3_close(l->catalog);
	free(l->dir);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->work);
}

size_t lib_count(struct library *l)
{
	size_t n;

	pthread_mutex_lock(&l->mu);
	n = l->n;
	pthread_mutex_unlock(&l->mu);
	return n;
}

static void rfc3339_now(char *out, size_t n, time_t *t)
{
	struct tm tm;

	*t = time(NULL);
	gmtime_r(t, &tm);
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

int64_t lib_add(struct library *l, const char *name, const char *spool, uint64_t size, const char *format_hint,
		const char *binary_spool, const char *binary_filename, char *err, size_t errlen)
{
	char *bname = binary_name_of(binary_spool, binary_filename);

	struct trace_rec *r = calloc(1, sizeof(*r));
	char dir[4096], src[4160], bin[4160];
	int64_t id = -1;

	pthread_mutex_lock(&l->mu);
	if (r == NULL || (r->name = strdup(name)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out_unlock;
	}
	r->id = l->next_id;
	lib_path(l, r->id, NULL, dir, sizeof(dir));
	lib_path(l, r->id, "source", src, sizeof(src));
	lib_path(l, r->id, "binary", bin, sizeof(bin));
	if (mkdir_p(dir) != 0 || rename(spool, src) != 0 || (binary_spool && rename(binary_spool, bin) != 0)) {
		snprintf(err, errlen, "cannot store the upload: %s", strerror(errno));
		unlink(src);
		rmdir(dir);
		goto out_unlock;
	}
	r->size = size;
	r->binary_name = bname;
	bname = NULL;
	r->symbols_named = -1;
	r->status = TS_QUEUED;
	snprintf(r->format_hint, sizeof(r->format_hint), "%s", format_hint ? format_hint : "");
	rfc3339_now(r->created_at, sizeof(r->created_at), &r->created);
	if (lib_push(l, r) != 0 || rec_save(l, r) != 0 || seq_save(l) != 0) {
		snprintf(err, errlen, "cannot record the trace in the catalog");
		if (l->n && l->v[l->n - 1] == r)
			l->n--;
		unlink(src);
		unlink(bin);
		rmdir(dir);
		goto out_unlock;
	}
	id = r->id;
	r = NULL;
	pthread_cond_broadcast(&l->work);
out_unlock:
	pthread_mutex_unlock(&l->mu);
	rec_free(r);
	free(bname);
	return id;
}

/* XRay traces say whether their functions have names and how to add them. */
static void rec_symbols_json(const struct trace_rec *r, struct jbuf *out)
{
	jb_key(out, "symbols");
	jb_obj(out);
	jb_key(out, "named");
	jb_i64(out, r->symbols_named < 0 ? 0 : r->symbols_named);
	jb_key(out, "error");
	jb_str(out, r->symbols_error);
	jb_key(out, "binary");
	jb_str(out, r->binary_name);
	if (r->symbols_named <= 0) {
		jb_key(out, "hint");
		jb_str(out, "functions are named fn#<id>: POST the instrumented binary (or the YAML of "
			    "'llvm-xray extract --symbolize') to /api/traces/{id}/symbols, or upload it with the "
			    "trace as multipart field 'binary'");
	}
	jb_obj_end(out);
}

/* The trace object of docs/API.md; called with mu held. */
static void rec_json(const struct trace_rec *r, struct jbuf *out)
{
	jb_obj(out);
	jb_key(out, "id");
	jb_i64(out, r->id);
	jb_key(out, "name");
	jb_str(out, r->name);
	jb_key(out, "format");
	if (r->format[0])
		jb_str(out, r->format);
	else
		jb_null(out);
	jb_key(out, "size_bytes");
	jb_u64(out, r->size);
	jb_key(out, "status");
	jb_str(out, status_names[r->status]);
	jb_key(out, "progress");
	jb_obj(out);
	jb_key(out, "bytes_done");
	jb_u64(out, r->status == TS_READY ? r->size : r->bytes_done);
	jb_key(out, "bytes_total");
	jb_u64(out, r->size);
	jb_obj_end(out);
	jb_key(out, "error");
	if (r->status == TS_FAILED) {
		jb_obj(out);
		jb_key(out, "code");
		jb_str(out, r->error_code);
		jb_key(out, "message");
		jb_str(out, r->error_msg ? r->error_msg : "");
		jb_obj_end(out);
	} else {
		jb_null(out);
	}
	jb_key(out, "created_at");
	jb_str(out, r->created_at);
	if (strcmp(r->format, "xray-fdr") == 0 || strcmp(r->format_hint, "xray-fdr") == 0)
		rec_symbols_json(r, out);
	jb_key(out, "start_ns");
	jb_i64(out, r->start_ns);
	jb_key(out, "end_ns");
	jb_i64(out, r->end_ns);
	if (r->summary && r->summary[0]) {
		jb_raw(out, ",", 1);
		jb_raw(out, r->summary, strlen(r->summary));
	} else {
		static const char none[] = ",\"counts\":null,\"providers\":[],\"diagnostics\":{}";

		jb_raw(out, none, sizeof(none) - 1);
	}
	jb_obj_end(out);
}

int lib_json(struct library *l, int64_t id, struct jbuf *out)
{
	struct trace_rec *r;

	pthread_mutex_lock(&l->mu);
	r = lib_find(l, id);
	if (r)
		rec_json(r, out);
	pthread_mutex_unlock(&l->mu);
	return r ? 0 : -1;
}

void lib_json_list(struct library *l, struct jbuf *out)
{
	size_t i;

	pthread_mutex_lock(&l->mu);
	jb_obj(out);
	jb_key(out, "traces");
	jb_arr(out);
	for (i = l->n; i > 0; i--)
		rec_json(l->v[i - 1], out);
	jb_arr_end(out);
	jb_obj_end(out);
	pthread_mutex_unlock(&l->mu);
}

int lib_status(struct library *l, int64_t id)
{
	struct trace_rec *r;
	int s;

	pthread_mutex_lock(&l->mu);
	r = lib_find(l, id);
	s = r ? r->status : -1;
	pthread_mutex_unlock(&l->mu);
	return s;
}

int lib_wait(struct library *l, int64_t id, void *conn)
{
	struct trace_rec *r;
	struct waiter *w;
	int rc = -1;

	pthread_mutex_lock(&l->mu);
	r = lib_find(l, id);
	if (r && (r->status == TS_QUEUED || r->status == TS_INGESTING) && (w = calloc(1, sizeof(*w))) != NULL) {
		w->conn = conn;
		w->next = r->waiters;
		r->waiters = w;
		if (l->suspend)
			l->suspend(conn); /* under mu, so no wake-up can come before it */
		rc = 0;
	}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

static void remove_tree(const struct library *l, int64_t id)
{
	static const char *const files[] = { "source", "binary", "trace.db", "trace.db.tmp", "trace.db-journal",
					     "trace.db-wal", "trace.db-shm", "binary.new" };
	char path[4096];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		lib_path(l, id, files[i], path, sizeof(path));
		unlink(path);
	}
	lib_path(l, id, NULL, path, sizeof(path));
	rmdir(path);
}

/* Deleting a trace being ingested waits for the worker to let go of it: the
 * worker sees the record gone and throws its result away. */
/* Takes trace id out of the list, the catalog and the disk (under mu);
 * returns the record for the caller to free, NULL when there is none. */
static struct trace_rec *remove_locked(struct library *l, int64_t id)
{
	struct trace_rec *r = NULL;
	sqlite3_stmt *st;
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (l->v[i]->id == id) {
			r = l->v[i];
			memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(*l->v));
			l->n--;
			break;
		}
	}
	if (r && sqlite3_prepare_v2(l->catalog, "DELETE FROM traces WHERE id = ?", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (r) {
		wake_waiters(l, r);
		if (r->status != TS_INGESTING)
			remove_tree(l, id);
	}
	return r;
}

int lib_delete(struct library *l, int64_t id)
{
	struct trace_rec *r;

	pthread_mutex_lock(&l->mu);
	r = remove_locked(l, id);
	pthread_mutex_unlock(&l->mu);
	rec_free(r);
	return r ? 0 : -1;
}

/* Removes failed traces older than keep_failed (under mu). */
static void prune_failed(struct library *l)
{
	time_t now = time(NULL);
	size_t i = 0;

	while (i < l->n) {
		struct trace_rec *r = l->v[i];

		if (r->status == TS_FAILED && r->waiters == NULL && (int64_t)(now - r->created) >= l->keep_failed) {
			fprintf(stderr, "trace-server: removing failed trace %" PRId64 " (older than --keep-failed)\n", r->id);
			rec_free(remove_locked(l, r->id));
			continue;
		}
		i++;
	}
}

/* ---- the ingest worker -------------------------------------------------- */

struct job {
	struct library *l;
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
	pthread_mutex_lock(&j->l->mu);
	r = lib_find(j->l, j->id);
	gone = r == NULL || j->l->stop;
	if (r && phase == INGEST_PHASE_DECODE)
		r->bytes_done = done;
	pthread_mutex_unlock(&j->l->mu);
	return gone;
}

static void summary_counts(struct jbuf *b, const struct ingest_result *res)
{
	const struct ingest_counts *c = &res->counts;

	jb_key(b, "counts");
	jb_obj(b);
	jb_key(b, "events");
	jb_u64(b, c->events);
	jb_key(b, "slices");
	jb_u64(b, c->slices);
	jb_key(b, "counters");
	jb_u64(b, c->counters);
	jb_key(b, "flows");
	jb_u64(b, c->flows);
	jb_key(b, "sched");
	jb_u64(b, c->sched);
	jb_key(b, "logs");
	jb_u64(b, c->logs);
	jb_key(b, "threads");
	jb_u64(b, c->threads);
	jb_key(b, "processes");
	jb_u64(b, c->processes);
	jb_key(b, "tracks");
	jb_u64(b, c->tracks);
	jb_key(b, "args");
	jb_u64(b, c->args);
	jb_key(b, "blobs");
	jb_u64(b, c->blobs);
	jb_key(b, "objects");
	jb_u64(b, c->objects);
	jb_key(b, "profiler");
	jb_u64(b, c->profiler);
	jb_obj_end(b);
}

static void summary_providers(struct jbuf *b, const char *db_path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	jb_key(b, "providers");
	jb_arr(b);
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT id, name, ticks_per_second, buffer_overflows FROM providers ORDER BY id",
			       -1, &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			jb_obj(b);
			jb_key(b, "id");
			jb_u64(b, (uint64_t)sqlite3_column_int64(st, 0));
			jb_key(b, "name");
			jb_column(b, st, 1);
			jb_key(b, "ticks_per_second");
			jb_u64(b, (uint64_t)sqlite3_column_int64(st, 2));
			jb_key(b, "buffer_overflows");
			jb_u64(b, (uint64_t)sqlite3_column_int64(st, 3));
			jb_obj_end(b);
		}
	}
	jb_arr_end(b);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The JSON members kept in the catalog's summary column. */
static char *summary_json(const struct ingest_result *res, const char *db_path)
{
	struct jbuf b;
	unsigned i;

	jb_init(&b);
	summary_counts(&b, res);
	summary_providers(&b, db_path);
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

static void job_finish(struct library *l, int64_t id, int rc, const struct ingest_result *res, char *summary)
{
	struct trace_rec *r;

	pthread_mutex_lock(&l->mu);
	r = lib_find(l, id);
	if (r == NULL) {
		remove_tree(l, id); /* deleted while ingesting */
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
	} else if (rc == INGEST_ECANCEL && l->stop) {
		r->status = TS_QUEUED; /* shutting down: ingest again at the next start */
	} else {
		rec_fail(r, error_code_of(rc), res->error[0] ? res->error : ingest_strerror(rc));
	}
	if (r) {
		rec_save(l, r);
		wake_waiters(l, r);
	}
	pthread_mutex_unlock(&l->mu);
	free(summary);
}

static void job_run(struct library *l, int64_t id, const char *hint)
{
	struct ingest_result *res = calloc(1, sizeof(*res));
	struct ingest_opts o = { 0 };
	struct job j = { l, id };
	char src[4096], db[4096], bin[4096];
	char *summary = NULL;
	int rc;

	if (res == NULL)
		return;
	lib_path(l, id, "source", src, sizeof(src));
	lib_path(l, id, "trace.db", db, sizeof(db));
	lib_path(l, id, "binary", bin, sizeof(bin));
	o.symbols = access(bin, R_OK) == 0 ? bin : NULL;
	o.progress = job_progress;
	o.progress_ctx = &j;
	o.format = hint[0] ? hint : NULL;
	rc = ingest_file(src, db, &o, res);
	/* symbols that arrived while ingest ran (POST .../symbols) name it now */
	if (rc == INGEST_OK && o.symbols == NULL && access(bin, R_OK) == 0 &&
	    ingest_symbolize(db, bin, &res->symbols_named, res->symbols_error, sizeof(res->symbols_error)) != 0)
		res->symbols_named = 0;
	if (rc == INGEST_OK && (summary = summary_json(res, db)) == NULL)
		rc = INGEST_ENOMEM;
	job_finish(l, id, rc, res, summary);
	free(res);
}

static void *worker_main(void *arg)
{
	struct library *l = arg;
	char hint[16];
	int64_t id;
	size_t i;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		struct trace_rec *next = NULL;

		prune_failed(l);
		for (i = 0; i < l->n && next == NULL; i++)
			if (l->v[i]->status == TS_QUEUED)
				next = l->v[i];
		if (next == NULL) {
			/* wake at least once a minute (sooner for a short
			 * --keep-failed) to remove old failed traces */
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += l->keep_failed < 60 ? (l->keep_failed > 0 ? l->keep_failed : 1) : 60;
			pthread_cond_timedwait(&l->work, &l->mu, &until);
			continue;
		}
		next->status = TS_INGESTING;
		next->bytes_done = 0;
		rec_save(l, next);
		snprintf(hint, sizeof(hint), "%s", next->format_hint);
		id = next->id;
		pthread_mutex_unlock(&l->mu);
		job_run(l, id, hint);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int lib_start(struct library *l)
{
	if (pthread_create(&l->worker, NULL, worker_main, l) != 0)
		return -1;
	l->worker_started = 1;
	return 0;
}

int lib_symbols(struct library *l, int64_t id, const char *spool, const char *filename, char *err, size_t errlen)
{
	char bin[4096], db[4096], *bname = binary_name_of(spool, filename);
	struct trace_rec *r;
	uint64_t named = 0;
	int st, rc = 0;

	pthread_mutex_lock(&l->mu);
	r = lib_find(l, id);
	st = r ? r->status : -1;
	pthread_mutex_unlock(&l->mu);
	if (st < 0) {
		snprintf(err, errlen, "there is no trace with this id");
		free(bname);
		return -1;
	}
	lib_path(l, id, "binary", bin, sizeof(bin));
	lib_path(l, id, "trace.db", db, sizeof(db));
	if (st == TS_READY && ingest_symbolize(db, spool, &named, err, errlen) != 0) {
		free(bname);
		return -1;
	}
	if (rename(spool, bin) != 0) {
		snprintf(err, errlen, "cannot store the symbols: %s", strerror(errno));
		free(bname);
		return -1;
	}
	pthread_mutex_lock(&l->mu);
	if ((r = lib_find(l, id)) != NULL) {
		free(r->binary_name);
		r->binary_name = bname;
		bname = NULL;
	}
	if (r != NULL && st == TS_READY) {
		r->symbols_named = (int64_t)named;
		free(r->symbols_error);
		r->symbols_error = NULL;
	}
	if (r != NULL)
		rc = rec_save(l, r);
	pthread_mutex_unlock(&l->mu);
	free(bname);
	return rc;
}
