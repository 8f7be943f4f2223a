/*
 * The S3-compatible store: every file of a trace is an object
 * <prefix>/traces/<id>/<file> in one bucket, and this server keeps a cache
 * of them at <cache>/traces/<id>/<file> (uploads in progress in
 * <cache>/spool, on the same file system so that put can move them).
 * Objects are written once (put, publish) and never rewritten, so a cached
 * file is never stale and the cache needs no invalidation.
 *
 * Eviction, when the cache holds more than cache_max bytes: whole files,
 * least recently used first, where "used" is the last put, fetch or
 * publish of the file. A file used in the last cache_grace seconds is
 * never evicted, even if the cache stays over its bound: every reader
 * fetches right before it opens, so the grace covers the gap between the
 * two. A reader that already holds the file open keeps reading it after
 * the unlink (POSIX keeps the inode), and the next fetch downloads it
 * again. Only files this index knows are evicted: a trace.db that ingest
 * is still writing is not known until it is published. A file whose size
 * on disk is no longer the size stored is still being written (a live
 * trace's source, which grows after its put) and is not evicted either,
 * nor is an empty file (it frees nothing).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../store/s3.h"
#include "storage.h"

struct cached {
	int64_t id;
	char file[32];  /* "source", "source.zst", "binary", "trace.db" or a job's "trace-<token>.db" */
	uint64_t size;
	time_t used;    /* last put, fetch or publish: for the grace */
	uint64_t seq;   /* the same as a count of uses: the order of eviction, finer than seconds */
};

struct s3_store {
	struct s3 *s3;
	pthread_mutex_t mu;   /* guards the index below; never held across a transfer */
	struct cached *v;     /* every file in the cache, in no order */
	size_t n, cap;
	uint64_t bytes;       /* the sum of v[].size */
	uint64_t max;         /* 0 = no bound */
	int64_t grace;
	uint64_t uses;        /* counts every use; the next cached.seq */
	struct storage_stats stats; /* but cache_bytes, which is bytes above */
};

static struct s3_store *st_of(const struct storage *s)
{
	return s->impl;
}

static void cache_path(const struct storage *s, int64_t id, const char *file, char *out, size_t n)
{
	if (file)
		snprintf(out, n, "%s/traces/%" PRId64 "/%s", s->root, id, file);
	else
		snprintf(out, n, "%s/traces/%" PRId64, s->root, id);
}

static void object_key(const struct storage *s, int64_t id, const char *file, char *out, size_t n)
{
	const char *prefix = s3_config_of(st_of(s)->s3)->prefix;

	snprintf(out, n, "%s%straces/%" PRId64 "/%s", prefix, prefix[0] ? "/" : "", id, file ? file : "");
}

/* The interface's error for e, counted when the store failed. */
static int fail(struct storage *s, int e)
{
	struct s3_store *st = st_of(s);

	if (e != S3_ENOTFOUND) {
		pthread_mutex_lock(&st->mu);
		st->stats.errors++;
		pthread_mutex_unlock(&st->mu);
	}
	return e == S3_EUNAVAILABLE ? STORAGE_EDOWN : STORAGE_EFAIL;
}

/* ---- the cache's index (under mu) --------------------------------------- */

static struct cached *index_find(struct s3_store *st, int64_t id, const char *file)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->v[i].id == id && strcmp(st->v[i].file, file) == 0)
			return &st->v[i];
	return NULL;
}

static void index_drop(struct s3_store *st, size_t i)
{
	st->bytes -= st->v[i].size;
	st->v[i] = st->v[--st->n];
}

/* Records file as in the cache with size bytes, used at `used`. A file
 * the index cannot hold (out of memory) is simply never evicted. */
static void index_note(struct s3_store *st, int64_t id, const char *file, uint64_t size, time_t used)
{
	struct cached *c = index_find(st, id, file);

	if (c == NULL) {
		if (st->n == st->cap) {
			size_t cap = st->cap ? st->cap * 2 : 64;
			struct cached *v = realloc(st->v, cap * sizeof(*v));

			if (v == NULL)
				return;
			st->v = v;
			st->cap = cap;
		}
		c = &st->v[st->n++];
		c->id = id;
		snprintf(c->file, sizeof(c->file), "%s", file);
		c->size = 0;
	}
	st->bytes = st->bytes - c->size + size;
	c->size = size;
	c->used = used;
	c->seq = ++st->uses;
}

/* Whether v may be evicted now (the rule in the file's comment). */
static int evictable(const struct storage *s, const struct cached *v, time_t now)
{
	char path[4096];
	struct stat sb;

	if ((int64_t)(now - v->used) < st_of(s)->grace || v->size == 0)
		return 0;
	cache_path(s, v->id, v->file, path, sizeof(path));
	return stat(path, &sb) != 0 || (uint64_t)sb.st_size == v->size;
}

/* Evicts least recently used files until the cache fits or none may go. */
static void evict(const struct storage *s)
{
	struct s3_store *st = st_of(s);
	time_t now = time(NULL);
	char path[4096];

	while (st->max && st->bytes > st->max) {
		size_t i, old = st->n;

		for (i = 0; i < st->n; i++)
			if ((old == st->n || st->v[i].seq < st->v[old].seq) && evictable(s, &st->v[i], now))
				old = i;
		if (old == st->n)
			break; /* everything left is in use */
		cache_path(s, st->v[old].id, st->v[old].file, path, sizeof(path));
		unlink(path);
		index_drop(st, old);
	}
}

/* Notes a file now in the cache and makes room for it. */
static void cache_added(struct storage *s, int64_t id, const char *file)
{
	struct s3_store *st = st_of(s);
	char path[4096];
	struct stat sb;

	cache_path(s, id, file, path, sizeof(path));
	if (stat(path, &sb) != 0)
		return;
	pthread_mutex_lock(&st->mu);
	index_note(st, id, file, (uint64_t)sb.st_size, time(NULL));
	evict(s);
	pthread_mutex_unlock(&st->mu);
}

/* ---- the operations ------------------------------------------------------ */

static int mkdir_trace(const struct storage *s, int64_t id, char *err, size_t errlen)
{
	char dir[4096];

	cache_path(s, id, NULL, dir, sizeof(dir));
	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return 0;
	snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
	return STORAGE_EFAIL;
}

static int s3s_put(struct storage *s, int64_t id, const char *file, const char *spool, char *err, size_t errlen)
{
	char key[1024], path[4096];
	int e;

	object_key(s, id, file, key, sizeof(key));
	cache_path(s, id, file, path, sizeof(path));
	if (mkdir_trace(s, id, err, errlen) != 0)
		return STORAGE_EFAIL;
	if ((e = s3_put_file(st_of(s)->s3, key, spool, err, errlen)) != S3_OK)
		return fail(s, e);
	if (rename(spool, path) != 0) {
		snprintf(err, errlen, "cannot keep %s in the cache: %s", path, strerror(errno));
		return STORAGE_EFAIL;
	}
	cache_added(s, id, file);
	return 0;
}

static int s3s_fetch(struct storage *s, int64_t id, const char *file, char *err, size_t errlen)
{
	struct s3_store *st = st_of(s);
	char key[1024], path[4096];
	struct cached *c;
	struct stat sb;
	int e;

	cache_path(s, id, file, path, sizeof(path));
	pthread_mutex_lock(&st->mu);
	if ((c = index_find(st, id, file)) != NULL) {
		c->used = time(NULL);
		c->seq = ++st->uses;
	}
	pthread_mutex_unlock(&st->mu);
	/* a file the index does not know may still be here: one ingest is writing */
	if (access(path, R_OK) == 0) {
		pthread_mutex_lock(&st->mu);
		st->stats.fetch_hits++;
		pthread_mutex_unlock(&st->mu);
		return 0;
	}
	object_key(s, id, file, key, sizeof(key));
	if (mkdir_trace(s, id, err, errlen) != 0)
		return STORAGE_EFAIL;
	if ((e = s3_get_file(st->s3, key, path, err, errlen)) != S3_OK)
		return fail(s, e);
	cache_added(s, id, file);
	if (stat(path, &sb) == 0) {
		pthread_mutex_lock(&st->mu);
		st->stats.fetch_misses++;
		st->stats.fetched_bytes += (uint64_t)sb.st_size;
		pthread_mutex_unlock(&st->mu);
	}
	return 0;
}

static int s3s_publish(struct storage *s, int64_t id, const char *file, char *err, size_t errlen)
{
	char key[1024], path[4096];
	int e;

	object_key(s, id, file, key, sizeof(key));
	cache_path(s, id, file, path, sizeof(path));
	if ((e = s3_put_file(st_of(s)->s3, key, path, err, errlen)) != S3_OK)
		return fail(s, e);
	cache_added(s, id, file);
	return 0;
}

static int s3s_has(struct storage *s, int64_t id, const char *file)
{
	char key[1024], path[4096], err[512];
	int e;

	cache_path(s, id, file, path, sizeof(path));
	if (access(path, F_OK) == 0)
		return 1;
	object_key(s, id, file, key, sizeof(key));
	if ((e = s3_head(st_of(s)->s3, key, NULL, err, sizeof(err))) == S3_OK)
		return 1;
	if (e == S3_ENOTFOUND)
		return 0;
	fail(s, e);
	return STORAGE_EDOWN; /* refused or unreachable: either way the caller cannot tell */
}

static int s3s_check(struct storage *s, char *err, size_t errlen)
{
	int e = s3_head_bucket(st_of(s)->s3, err, errlen);

	return e == S3_OK ? 0 : fail(s, e);
}

static void s3s_stats(struct storage *s, struct storage_stats *out)
{
	struct s3_store *st = st_of(s);

	pthread_mutex_lock(&st->mu);
	*out = st->stats;
	out->cache_bytes = st->bytes;
	pthread_mutex_unlock(&st->mu);
}

/* The bytes of the trace's objects: the cached copies' sizes, the store's
 * word (HEAD) for what the cache does not hold. */
static uint64_t s3s_usage(const struct storage *s, int64_t id)
{
	static const char *const files[] = { "source", "source.zst", "binary", "trace.db" };
	char path[4096], key[1024], err[256];
	uint64_t total = 0, n;
	struct stat sb;
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		cache_path(s, id, files[i], path, sizeof(path));
		object_key(s, id, files[i], key, sizeof(key));
		if (stat(path, &sb) == 0)
			total += (uint64_t)sb.st_size;
		else if (s3_head(st_of(s)->s3, key, &n, err, sizeof(err)) == S3_OK)
			total += n;
	}
	return total;
}

/* Empties dir of regular files (all of them, or only partial downloads). */
static void clean_dir(const char *dir, int partial_only)
{
	char path[4352];
	struct dirent *e;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || (partial_only && strstr(e->d_name, ".part-") == NULL))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
}

static void s3s_remove(struct storage *s, int64_t id)
{
	struct s3_store *st = st_of(s);
	char dir[4096], key[1024], err[512];
	size_t i = 0;

	pthread_mutex_lock(&st->mu);
	while (i < st->n)
		if (st->v[i].id == id)
			index_drop(st, i);
		else
			i++;
	pthread_mutex_unlock(&st->mu);
	cache_path(s, id, NULL, dir, sizeof(dir));
	clean_dir(dir, 0);
	rmdir(dir);
	object_key(s, id, NULL, key, sizeof(key));
	if (s3_delete_prefix(st->s3, key, NULL, err, sizeof(err)) != S3_OK) {
		fail(s, S3_EUNAVAILABLE);
		fprintf(stderr, "trace-server: trace %" PRId64 "'s objects stay in the store: %s\n", id, err);
	}
}

static int s3s_prune(struct storage *s, int64_t id, const char *prefix, const char *keep, char *err, size_t errlen)
{
	struct s3_store *st = st_of(s);
	char key[1024], keep_key[1024], path[4096];
	size_t i = 0;
	int e;

	pthread_mutex_lock(&st->mu);
	while (i < st->n) {
		struct cached *c = &st->v[i];

		if (c->id == id && strncmp(c->file, prefix, strlen(prefix)) == 0 && strcmp(c->file, keep) != 0) {
			cache_path(s, id, c->file, path, sizeof(path));
			unlink(path);
			index_drop(st, i);
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&st->mu);
	object_key(s, id, prefix, key, sizeof(key));
	object_key(s, id, keep, keep_key, sizeof(keep_key));
	if ((e = s3_delete_prefix(st->s3, key, keep_key, err, errlen)) != S3_OK)
		return fail(s, e);
	return 0;
}

static int s3s_drop(struct storage *s, int64_t id, const char *file, char *err, size_t errlen)
{
	struct s3_store *st = st_of(s);
	char key[1024], path[4096];
	size_t i;
	int e;

	pthread_mutex_lock(&st->mu);
	for (i = 0; i < st->n; i++)
		if (st->v[i].id == id && strcmp(st->v[i].file, file) == 0) {
			index_drop(st, i);
			break;
		}
	pthread_mutex_unlock(&st->mu);
	cache_path(s, id, file, path, sizeof(path));
	unlink(path);
	object_key(s, id, file, key, sizeof(key));
	if ((e = s3_delete(st->s3, key, err, errlen)) != S3_OK && e != S3_ENOTFOUND)
		return fail(s, e);
	return 0;
}

static void s3s_spool(const struct storage *s, char *out, size_t n)
{
	snprintf(out, n, "%s/spool", s->root);
}

static void s3s_close(struct storage *s)
{
	struct s3_store *st = st_of(s);

	if (st) {
		s3_destroy(st->s3);
		pthread_mutex_destroy(&st->mu);
		free(st->v);
		free(st);
	}
	s->impl = NULL;
	free(s->root);
	s->root = NULL;
}

static const struct storage_ops s3_ops = {
	.put = s3s_put,
	.fetch = s3s_fetch,
	.publish = s3s_publish,
	.has = s3s_has,
	.check = s3s_check,
	.stats = s3s_stats,
	.local_path = cache_path,
	.usage = s3s_usage,
	.remove = s3s_remove,
	.drop = s3s_drop,
	.prune = s3s_prune,
	.spool_dir = s3s_spool,
	.close = s3s_close,
};

static int by_use(const void *a, const void *b)
{
	const struct cached *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

/* Indexes what an earlier run left in the cache, last used when written
 * (the order of eviction follows), and drops its partial downloads. */
static void index_load(struct storage *s)
{
	struct s3_store *st = st_of(s);
	char dir[4096], path[4400];
	struct dirent *e, *f;
	struct stat sb;
	DIR *d, *t;
	size_t i;

	snprintf(dir, sizeof(dir), "%s/traces", s->root);
	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		int64_t id = strtoll(e->d_name, NULL, 10);

		if (e->d_name[0] == '.' || id <= 0)
			continue;
		cache_path(s, id, NULL, path, sizeof(path));
		clean_dir(path, 1);
		if ((t = opendir(path)) == NULL)
			continue;
		while ((f = readdir(t)) != NULL) {
			cache_path(s, id, f->d_name, path, sizeof(path));
			if (f->d_name[0] != '.' && strlen(f->d_name) < sizeof(st->v[0].file) && stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
				index_note(st, id, f->d_name, (uint64_t)sb.st_size, sb.st_mtime);
		}
		closedir(t);
	}
	closedir(d);
	if (st->n > 0) /* qsort's array may not be NULL, even empty */
		qsort(st->v, st->n, sizeof(*st->v), by_use);
	for (i = 0; i < st->n; i++)
		st->v[i].seq = i + 1;
	st->uses = st->n;
}

static int make_dirs(const char *root, char *err, size_t errlen)
{
	static const char *const sub[] = { "", "/traces", "/spool" };
	char path[4096];
	size_t i;

	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", root, sub[i]);
		if (mkdir(path, 0755) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create the cache directory %s: %s", path, strerror(errno));
			return STORAGE_EFAIL;
		}
	}
	return 0;
}

int storage_open_s3(struct storage *s, const struct storage_s3_opts *o, char *err, size_t errlen)
{
	struct s3_config c;
	struct s3_store *st;
	char spool[4096];

	s->ops = &s3_ops;
	s->impl = NULL;
	if ((s->root = strdup(o->cache_dir)) == NULL || (st = calloc(1, sizeof(*st))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return STORAGE_EFAIL;
	}
	s->impl = st;
	pthread_mutex_init(&st->mu, NULL);
	st->max = o->cache_max;
	st->grace = o->cache_grace;
	if (s3_parse_url(o->url, &c, err, errlen) != S3_OK)
		return STORAGE_EFAIL;
	if (o->part_size)
		c.part_size = o->part_size;
	if ((st->s3 = s3_create(&c, err, errlen)) == NULL || make_dirs(s->root, err, errlen) != 0)
		return STORAGE_EFAIL;
	s3s_spool(s, spool, sizeof(spool));
	clean_dir(spool, 0);
	index_load(s);
	pthread_mutex_lock(&st->mu);
	evict(s);
	pthread_mutex_unlock(&st->mu);
	return 0;
}
