/*
 * Where a trace's files live: the uploaded bytes ("source"), for XRay the
 * instrumented binary or symbol map ("binary"), and the database ingest
 * made of them ("trace.db").
 *
 * The catalog reaches files only through this interface, so that a store
 * shared by several servers (an S3-compatible bucket, say) can replace the
 * local directory without the catalog changing. Such a store would keep
 * local copies under local_path (ingest and SQLite need a file); the
 * local directory simply is one.
 */
#ifndef CATALOG_STORAGE_H
#define CATALOG_STORAGE_H

#include <stddef.h>
#include <stdint.h>

struct storage;

struct storage_ops {
	/* Takes the file at spool (moved, not copied) as file of trace id;
	 * 0, or -1 with errno set. */
	int (*put)(struct storage *s, int64_t id, const char *file, const char *spool);
	/* A path where file of trace id can be read (and, for "trace.db",
	 * written by ingest). Never fails; the file may not exist. */
	void (*local_path)(const struct storage *s, int64_t id, const char *file, char *out, size_t n);
	/* Bytes stored for trace id, all files together. */
	uint64_t (*usage)(const struct storage *s, int64_t id);
	/* Removes every file of trace id. */
	void (*remove)(struct storage *s, int64_t id);
	/* A directory for uploads in progress, on the same file system as
	 * what put moves them to. */
	void (*spool_dir)(const struct storage *s, char *out, size_t n);
	void (*close)(struct storage *s);
};

struct storage {
	const struct storage_ops *ops;
	char *root; /* the local directory */
};

/* The default store: traces/<id>/<file> and spool/ under dir (created).
 * 0, or -1 with a sentence in err. */
int storage_open_dir(struct storage *s, const char *dir, char *err, size_t errlen);

#endif
