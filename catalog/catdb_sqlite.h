/*
 * What the files of the catalog in catalog.db share (catdb_sqlite.c, the
 * records, the name index and the opening; catdb_sqlite_notes.c, notes):
 * the connections and their locks. Nothing outside these files includes it.
 */
#ifndef CATALOG_CATDB_SQLITE_H
#define CATALOG_CATDB_SQLITE_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "catalog_internal.h"

struct catdb_sqlite {
	struct catdb base;
	char *path;            /* catalog.db */
	sqlite3 *db;           /* the records, under write_mu */
	pthread_mutex_t write_mu; /* db and next_id: the catalog saves under its
				   * own lock, but takes ids and drops index rows
				   * without it */
	sqlite3 *reader;       /* searches and pings, under read_mu */
	pthread_mutex_t read_mu;
	int64_t next_id;       /* the next id to give: past every id loaded and the sequence row */
};

/* A statement of what failed, with db's message, in err: CATDB_EFAIL. */
int sq_fail(sqlite3 *db, const char *what, char *err, size_t errlen);

/* catdb_sqlite_notes.c: catdb.h's note calls, through the reader. */
int sq_note_add(struct catdb *d, struct catdb_note *n, char *err, size_t errlen);
int sq_note_edit(struct catdb *d, int64_t id, const char *text, const char *author, const char *edited_at, char *err,
		 size_t errlen);
int sq_note_remove(struct catdb *d, int64_t id, char *err, size_t errlen);
int sq_note_list(struct catdb *d, const struct cat_note_query *q, int (*row)(void *ctx, const struct catdb_note *n),
		 void *ctx, char *err, size_t errlen);
int sq_note_counts(struct catdb *d, int64_t trace, int (*row)(void *ctx, int64_t trace, int64_t count), void *ctx,
		   char *err, size_t errlen);

#endif
