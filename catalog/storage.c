/*
 * The local directory store: <dir>/traces/<id>/<file>, uploads in progress
 * in <dir>/spool (emptied at start: what is there was cut off by a stop).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage.h"

static void dir_path(const struct storage *s, int64_t id, const char *file, char *out, size_t n)
{
	if (file)
		snprintf(out, n, "%s/traces/%" PRId64 "/%s", s->root, id, file);
	else
		snprintf(out, n, "%s/traces/%" PRId64, s->root, id);
}

static int mkdir_p(const char *path)
{
	return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static int dir_put(struct storage *s, int64_t id, const char *file, const char *spool, char *err, size_t errlen)
{
	char dir[4096], path[4096];

	dir_path(s, id, NULL, dir, sizeof(dir));
	dir_path(s, id, file, path, sizeof(path));
	if (mkdir_p(dir) == 0 && rename(spool, path) == 0)
		return 0;
	snprintf(err, errlen, "cannot store %s: %s", path, strerror(errno));
	return STORAGE_EFAIL;
}

/* The directory is its own cache: a file is there or it is not. */
static int dir_fetch(struct storage *s, int64_t id, const char *file, char *err, size_t errlen)
{
	char path[4096];

	dir_path(s, id, file, path, sizeof(path));
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return STORAGE_EFAIL;
}

static int dir_publish(struct storage *s, int64_t id, const char *file, char *err, size_t errlen)
{
	(void)s, (void)id, (void)file, (void)err, (void)errlen;
	return 0;
}

static int dir_has(struct storage *s, int64_t id, const char *file)
{
	char path[4096];
	struct stat st;

	dir_path(s, id, file, path, sizeof(path));
	return stat(path, &st) == 0;
}

static void dir_stats(struct storage *s, struct storage_stats *out)
{
	(void)s;
	memset(out, 0, sizeof(*out));
}

/* What cat_health checks of the spool's disk is all there is to check. */
static int dir_check(struct storage *s, char *err, size_t errlen)
{
	(void)s, (void)err, (void)errlen;
	return 0;
}

/* Every file of a trace's directory, whatever ingest or SQLite left there. */
static uint64_t dir_usage(const struct storage *s, int64_t id)
{
	char dir[4096], path[4400];
	uint64_t total = 0;
	struct dirent *e;
	struct stat st;
	DIR *d;

	dir_path(s, id, NULL, dir, sizeof(dir));
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return total;
}

static void dir_remove(struct storage *s, int64_t id)
{
	char dir[4096], path[4400];
	struct dirent *e;
	DIR *d;

	dir_path(s, id, NULL, dir, sizeof(dir));
	if ((d = opendir(dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

static int dir_drop(struct storage *s, int64_t id, const char *file, char *err, size_t errlen)
{
	char path[4096];

	(void)err;
	(void)errlen;
	dir_path(s, id, file, path, sizeof(path));
	unlink(path);
	return 0;
}

static int dir_prune(struct storage *s, int64_t id, const char *prefix, const char *keep, char *err, size_t errlen)
{
	char dir[4096], path[4400];
	struct dirent *e;
	DIR *d;

	(void)err;
	(void)errlen;
	dir_path(s, id, NULL, dir, sizeof(dir));
	if ((d = opendir(dir)) == NULL)
		return 0; /* no files: none to remove */
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || strcmp(e->d_name, keep) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	return 0;
}

static void dir_spool(const struct storage *s, char *out, size_t n)
{
	snprintf(out, n, "%s/spool", s->root);
}

static void dir_close(struct storage *s)
{
	free(s->root);
	s->root = NULL;
}

static const struct storage_ops dir_ops = {
	dir_put,   dir_fetch, dir_publish, dir_has,   dir_check, dir_stats,
	dir_path,  dir_usage, dir_remove,  dir_drop,  dir_prune, dir_spool, dir_close,
};

/* Removes what uploads in progress left when the server last stopped. */
static void clean_spool(const struct storage *s)
{
	char dir[4096], path[4352];
	struct dirent *e;
	DIR *d;

	dir_spool(s, dir, sizeof(dir));
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

int storage_dir_sweep(struct storage *s, int (*owned)(void *ctx, int64_t id), void *ctx)
{
	char dir[4096];
	struct dirent *e;
	int swept = 0;
	DIR *d;

	if (s->ops != &dir_ops)
		return 0;
	snprintf(dir, sizeof(dir), "%s/traces", s->root);
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long long id = strtoll(e->d_name, &end, 10);

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end != '\0' || id <= 0 || owned(ctx, (int64_t)id))
			continue; /* not a trace's, or one a record owns */
		dir_remove(s, (int64_t)id);
		swept++;
	}
	closedir(d);
	return swept;
}

int storage_open_dir(struct storage *s, const char *dir, char *err, size_t errlen)
{
	char path[4096];

	s->ops = &dir_ops;
	s->impl = NULL;
	if ((s->root = strdup(dir)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return STORAGE_EFAIL;
	}
	snprintf(path, sizeof(path), "%s/traces", dir);
	if (mkdir_p(dir) != 0 || mkdir_p(path) != 0) {
		snprintf(err, errlen, "cannot create the data directory %s: %s", dir, strerror(errno));
		return STORAGE_EFAIL;
	}
	dir_spool(s, path, sizeof(path));
	if (mkdir_p(path) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return STORAGE_EFAIL;
	}
	clean_spool(s);
	return 0;
}

/* How long a cached file counts as in use after a fetch: far longer than
 * the gap between a fetch and the open that follows it. */
#define CACHE_GRACE_SECONDS 60

int storage_open(struct storage *s, const char *dir, const char *url, const char *cache_dir, uint64_t cache_max,
		 uint64_t part_size, char *err, size_t errlen)
{
	struct storage_s3_opts o = { 0 };
	char cache[4096];

	if (url == NULL)
		return storage_open_dir(s, dir, err, errlen);
	/* its traces' files are not in the store: a start would mark them all lost */
	snprintf(cache, sizeof(cache), "%s/traces", dir);
	if (rmdir(cache) != 0 && errno != ENOENT) {
		snprintf(err, errlen, "%s holds the traces of a library kept in the directory; --store would not find "
				      "them: move the library with `trace-server migrate` (docs/DEPLOY.md) and use another --data",
			 cache);
		s->ops = NULL;
		return STORAGE_EFAIL;
	}
	if (mkdir_p(dir) != 0) {
		snprintf(err, errlen, "cannot create the data directory %s: %s", dir, strerror(errno));
		return STORAGE_EFAIL;
	}
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	o.url = url;
	o.cache_dir = cache_dir ? cache_dir : cache;
	o.cache_max = cache_max;
	o.cache_grace = CACHE_GRACE_SECONDS;
	o.part_size = part_size;
	return storage_open_s3(s, &o, err, errlen);
}
