/*
 * Where a trace's files live: the uploaded bytes ("source", and once the
 * trace is ready "source.zst" in its place: source.c), for XRay the
 * instrumented binary or symbol map ("binary"), and the database ingest
 * made of them ("trace.db").
 *
 * The catalog reaches files only through this interface, so that a store
 * shared by several servers (an S3-compatible bucket, storage_s3.c) can
 * replace the local directory (storage.c) without the catalog changing.
 *
 * The contract: ingest and SQLite need a file, so every file is read and
 * written at local_path. A shared store keeps a cache there: put sends
 * the file to the store and keeps it in the cache; fetch makes sure a
 * file is in the cache, downloading it if not, and must come before every
 * read of local_path; publish sends a file written at local_path (ingest's
 * trace.db) to the store. Files are immutable once put or published: a
 * store never rewrites an object in place, so no cache ever needs to be
 * told that a file changed. Two exceptions, both by the server that owns
 * the trace: a live trace's source grows after its put and is published
 * whole when its stream ends, and symbols posted to a ready XRay trace
 * name its trace.db, which is then published again. The local directory is its own cache: fetch
 * only checks that the file is there and publish does nothing.
 *
 * Errors (enum storage_err): STORAGE_EFAIL is a file that does not exist
 * or a local failure, STORAGE_EDOWN a store that cannot be reached now (the
 * caller may answer 503 and try later).
 */
#ifndef CATALOG_STORAGE_H
#define CATALOG_STORAGE_H

#include <stddef.h>
#include <stdint.h>

struct storage;

enum storage_err {
	STORAGE_OK = 0,
	STORAGE_EFAIL = -1, /* no such file, or a local failure */
	STORAGE_EDOWN = -2, /* the store cannot be reached now */
};

/* What a store counted since the start (all zero for the directory). */
struct storage_stats {
	uint64_t fetch_hits;    /* fetches the cache answered */
	uint64_t fetch_misses;  /* fetches that downloaded the file */
	uint64_t fetched_bytes; /* bytes those downloads brought */
	uint64_t errors;        /* calls to the store that failed ("no such object" aside) */
	uint64_t cache_bytes;   /* bytes the cache holds now */
};

struct storage_ops {
	/* Takes the file at spool (moved, not copied) as file of trace id;
	 * 0, or STORAGE_EFAIL / STORAGE_EDOWN with a sentence in err. On
	 * error spool is left where it was. */
	int (*put)(struct storage *s, int64_t id, const char *file, const char *spool, char *err, size_t errlen);
	/* Makes local_path of file of trace id hold the file (and counts it
	 * as used now, for the cache's eviction); 0, or STORAGE_EFAIL (no
	 * such file) / STORAGE_EDOWN with a sentence in err. */
	int (*fetch)(struct storage *s, int64_t id, const char *file, char *err, size_t errlen);
	/* Sends the file ingest wrote at local_path to the store; 0, or
	 * STORAGE_EFAIL / STORAGE_EDOWN with a sentence in err. Called once
	 * per file: never to replace. */
	int (*publish)(struct storage *s, int64_t id, const char *file, char *err, size_t errlen);
	/* Whether file of trace id is stored, in the cache or not: 1, 0, or
	 * STORAGE_EDOWN when the store cannot be reached (the caller cannot
	 * tell). */
	int (*has)(struct storage *s, int64_t id, const char *file);
	/* Whether the store answers now: 0, or STORAGE_EFAIL / STORAGE_EDOWN
	 * with a sentence in err. */
	int (*check)(struct storage *s, char *err, size_t errlen);
	void (*stats)(struct storage *s, struct storage_stats *out);
	/* A path where file of trace id can be read (and, for "trace.db",
	 * written by ingest). Never fails; the file may not exist. */
	void (*local_path)(const struct storage *s, int64_t id, const char *file, char *out, size_t n);
	/* Bytes stored for trace id, all files together. */
	uint64_t (*usage)(const struct storage *s, int64_t id);
	/* Removes every file of trace id, from the store and the cache. */
	void (*remove)(struct storage *s, int64_t id);
	/* Removes one file of trace id, from the store and the cache: a
	 * shared ingest job's result whose commit was refused (jobs.c).
	 * 0, or STORAGE_EFAIL / STORAGE_EDOWN with a sentence in err (the
	 * object stays). */
	int (*drop)(struct storage *s, int64_t id, const char *file, char *err, size_t errlen);
	/* Removes every file of trace id whose name starts with prefix but
	 * keep, from the store and the cache: the results of a shared ingest
	 * job's other claims, once keep's is committed (a server killed between
	 * its publish and its commit leaves one). 0, or STORAGE_EFAIL /
	 * STORAGE_EDOWN with a sentence in err (what was not removed stays). */
	int (*prune)(struct storage *s, int64_t id, const char *prefix, const char *keep, char *err, size_t errlen);
	/* A directory for uploads in progress, on the same file system as
	 * what put moves them to. */
	void (*spool_dir)(const struct storage *s, char *out, size_t n);
	void (*close)(struct storage *s);
};

struct storage {
	const struct storage_ops *ops;
	char *root; /* the local directory: the data, or the cache of a shared store */
	void *impl; /* the backend's own state; NULL for the directory */
};

/* The default store: traces/<id>/<file> and spool/ under dir (created).
 * 0, or STORAGE_EFAIL with a sentence in err. */
int storage_open_dir(struct storage *s, const char *dir, char *err, size_t errlen);

/* The directory store's traces/<id> directories that keep(ctx, id) says
 * no record owns: what a server killed between storing a new trace's files
 * and recording it (or between forgetting a trace and removing them) left.
 * Removed, counted in the return; nothing for another store (a shared one
 * is other servers' too). Call before anything new is stored. */
int storage_dir_sweep(struct storage *s, int (*owned)(void *ctx, int64_t id), void *ctx);

/* The store the options name: url NULL, the directory dir; else the
 * S3-compatible store at url, cached in cache_dir (NULL = <dir>/cache)
 * up to cache_max bytes (0 = no bound), uploads sent in parts of part_size
 * bytes (0 = the client's default). 0, or STORAGE_EFAIL with a sentence
 * in err. */
int storage_open(struct storage *s, const char *dir, const char *url, const char *cache_dir, uint64_t cache_max,
		 uint64_t part_size, char *err, size_t errlen);

/* An S3-compatible store (storage_s3.c). */
struct storage_s3_opts {
	const char *url;        /* s3://bucket/prefix?endpoint=...&region=... */
	const char *cache_dir;  /* the local cache (created); spool/ is under it */
	uint64_t cache_max;     /* bytes the cache may hold; 0 = no bound */
	int64_t cache_grace;    /* seconds after its last use a file may not be evicted */
	uint64_t part_size;     /* bytes of each part of an upload; 0 = the client's default */
};
/* 0, or STORAGE_EFAIL with a sentence in err (a bad URL, keys missing from the
 * environment, a cache directory that cannot be made). The bucket is not
 * contacted: a store down at start is a store down, not a refusal to start. */
int storage_open_s3(struct storage *s, const struct storage_s3_opts *o, char *err, size_t errlen);

#endif
