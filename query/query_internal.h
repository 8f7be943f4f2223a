/*
 * What the files of query/ share and nothing outside needs.
 */
#ifndef QUERY_QUERY_INTERNAL_H
#define QUERY_QUERY_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "query.h"

/* Sets err to code and the formatted message; returns code. */
__attribute__((format(printf, 3, 4))) int qry_fail(struct qry_error *err, int code, const char *fmt, ...);

/*
 * Where the rows of one group lie (table extents, schema/trace.sql): the
 * group's rows by ordinal (their place in ts order from 0) map to ids
 * through extents of consecutive ids. Searches run on ordinals and read
 * rows an extent at a time (extents.c).
 */
struct qext {
	int64_t ord, id, count;
};

struct qextents {
	struct qext *v;
	size_t n, cap;
	int64_t rows; /* ordinals 0 .. rows - 1 */
};

/* The statement qext_read steps: bound to (track_id, depth). */
#define QEXT_SQL "SELECT first_ord, first_id, count FROM extents WHERE track_id = ?1 AND depth = ?2 ORDER BY first_ord"

struct qcur;

/* Reads the extents of (track, depth) into e (emptied first) through c
 * (QEXT_SQL, cursor.h), and resets c: 0, or -1 when out of memory. A
 * database error, or extents that leave a gap (SQLITE_CORRUPT), are left
 * as c's error, and the group then has no rows. */
int qext_read(struct qextents *e, struct qcur *c, int64_t track, int64_t depth);
/* Appends the group's next extent: SQLITE_DONE, SQLITE_NOMEM, or
 * SQLITE_CORRUPT when it does not start at ordinal e->rows. */
int qext_add(struct qextents *e, int64_t ord, int64_t id, int64_t count);
void qext_free(struct qextents *e);
/* The id of ordinal ord, which must be below e->rows. */
int64_t qext_id(const struct qextents *e, int64_t ord);
/* The ids [*a, *b] of the ordinals from *lo on, up to hi, that lie in one
 * extent, and moves *lo past them: 1, or 0 when *lo > hi. */
int qext_piece(const struct qextents *e, int64_t *lo, int64_t hi, int64_t *a, int64_t *b);

/* The bucket floor((ts - start) * n / (end - start + 1)) of a ts inside
 * [start, end] (docs/API.md: overview and search histograms), exact for
 * every 64-bit window: the product is taken on 128 bits, where doubles
 * rounded a ts within 2^-53 of a bucket's edge into the next bucket. */
uint32_t qry_bucket(int64_t start, int64_t end, uint32_t n, int64_t ts);

/*
 * Whether [start, end] covers the whole trace (meta start_ns .. end_ns),
 * the selection whose area and flame graph ingest stored per track
 * (schema/trace.sql, track_names and track_stacks): *whole is set to 1 or
 * 0. Returns QRY_OK or QRY_EDB.
 */
int qry_area_whole(sqlite3 *db, int64_t start, int64_t end, int *whole, struct qry_error *err);
/* 1 (the default): area and flame read what ingest stored for a whole-trace
 * selection. Tests set it to 0 to compare with the scan of every slice. */
extern int qry_area_stored;
/* Rows per bucket under which the overview counts a run row by row in one
 * pass rather than from its level of detail (query/overview.c); tests set
 * 0 to count every run from it. */
extern int qry_overview_pass_rows;

#endif
