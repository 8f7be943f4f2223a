/*
 * The trace database's version check and the encoding of level-of-detail
 * and stack records (tracedb.h). Ingest writes through it; query and the catalog read
 * through it, so the record layout and the version are written once.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracedb.h"

/* A record of n words after prev (set to v), each the varint of the zigzag
 * of its difference: the layout of lod and track_stacks records. */
static size_t words_put(uint8_t *out, uint64_t *prev, const uint64_t *v, int n)
{
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++) {
		len += tracedb_put_varint(out + len, tracedb_zigzag(v[i] - prev[i]));
		prev[i] = v[i];
	}
	return len;
}

static int words_next(const uint8_t **p, const uint8_t *end, uint64_t *v, int n)
{
	uint64_t z;
	int i;

	for (i = 0; i < n; i++) {
		if (tracedb_get_varint(p, end, &z) != 0)
			return -1;
		v[i] += tracedb_unzigzag(z);
	}
	return 0;
}

size_t tracedb_lod_put(uint8_t *out, uint64_t prev[LOD_WORDS], const uint64_t v[LOD_WORDS])
{
	return words_put(out, prev, v, LOD_WORDS);
}

int tracedb_lod_next(const uint8_t **p, const uint8_t *end, uint64_t v[LOD_WORDS])
{
	return words_next(p, end, v, LOD_WORDS);
}

size_t tracedb_stacks_put(uint8_t *out, uint64_t prev[STACKS_WORDS], const uint64_t v[STACKS_WORDS])
{
	return words_put(out, prev, v, STACKS_WORDS);
}

int tracedb_stacks_next(const uint8_t **p, const uint8_t *end, uint64_t v[STACKS_WORDS])
{
	return words_next(p, end, v, STACKS_WORDS);
}

size_t tracedb_names_put(uint8_t *out, int64_t prev_ts, int64_t prev_id, int64_t ts, int64_t id)
{
	uint64_t d = (uint64_t)id - (uint64_t)prev_id;
	size_t n = tracedb_put_varint(out, (uint64_t)ts - (uint64_t)prev_ts);

	return n + tracedb_put_varint(out + n, tracedb_zigzag(d));
}

int tracedb_names_next(const uint8_t **p, const uint8_t *end, int64_t *ts, int64_t *id)
{
	uint64_t dts, z;

	if (tracedb_get_varint(p, end, &dts) != 0 || tracedb_get_varint(p, end, &z) != 0)
		return -1;
	*ts = (int64_t)((uint64_t)*ts + dts);
	*id = (int64_t)((uint64_t)*id + tracedb_unzigzag(z));
	return 0;
}

size_t tracedb_mark_put(uint8_t *out, int64_t *prev, int64_t ts)
{
	size_t n = tracedb_put_varint(out, tracedb_zigzag((uint64_t)ts - (uint64_t)*prev));

	*prev = ts;
	return n;
}

int tracedb_marks_read(const uint8_t *p, size_t n, uint64_t rows, int64_t *ts)
{
	const uint8_t *end = p + n;
	uint64_t k, count = tracedb_marks(rows), z, prev = 0;

	for (k = 0; k < count; k++) {
		if (tracedb_get_varint(&p, end, &z) != 0)
			return -1;
		prev += tracedb_unzigzag(z);
		ts[k] = (int64_t)prev;
	}
	return p == end ? 0 : -1;
}

int tracedb_version(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int v = -1;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

static sqlite3 *open_checked(const char *path, int flags, const char **why)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		*why = "cannot open the trace database";
		goto out_close;
	}
	sqlite3_busy_timeout(db, 10000); /* a writer renaming a new file in, or naming symbols */
	if (tracedb_version(db) != TRACEDB_SCHEMA_VERSION) {
		*why = "the trace database has another schema version";
		goto out_close;
	}
	return db;
out_close:
	sqlite3_close(db);
	return NULL;
}

sqlite3 *tracedb_open_readonly(const char *path, const char **why)
{
	sqlite3 *db = open_checked(path, SQLITE_OPEN_READONLY, why);

	/* pages straight from the OS cache instead of copies in SQLite's own */
	if (db)
		sqlite3_exec(db, "PRAGMA mmap_size=17179869184; PRAGMA cache_size=-4096;", NULL, NULL, NULL);
	return db;
}

sqlite3 *tracedb_open_readwrite(const char *path, const char **why)
{
	return open_checked(path, SQLITE_OPEN_READWRITE, why);
}

extern const char schema_trace_sql[];

/* schema/trace.sql: the tables, then, after this line, the indexes. */
static const char INDEXES_MARK[] = "-- @indexes";

/* Runs the statements of schema/trace.sql before the mark (indexes 0) or
 * after it (indexes 1). */
static int run_schema(sqlite3 *db, int indexes)
{
	const char *mark = strstr(schema_trace_sql, INDEXES_MARK);
	char *tables;
	int rc;

	if (mark == NULL)
		return -1;
	if (indexes)
		return sqlite3_exec(db, mark, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	if ((tables = strndup(schema_trace_sql, (size_t)(mark - schema_trace_sql))) == NULL)
		return -1;
	rc = sqlite3_exec(db, tables, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	free(tables);
	return rc;
}

/*
 * The indexes are built with their sort spilled to temporary files
 * (SQLite's temporary directory), not held in memory: with
 * temp_store=MEMORY SQLite keeps every key and merges its runs from
 * in-memory journals, which it reads back slowly. On a 4 GB archive's
 * 7.8 M flows, one index took 18 s that way and 5 s through files, in
 * 30 MB instead of 630. Two helper threads sort while the connection's
 * own reads the table: nothing else of ingest runs then, and on the 4 GB
 * bench trace's three indexes (tables out of the cache, as ingest leaves
 * them) that took 9.9-10.3 s instead of 13.2.
 */
int tracedb_index(sqlite3 *db)
{
	if (sqlite3_exec(db, "PRAGMA temp_store=FILE; PRAGMA threads=2", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	return run_schema(db, 1);
}

unsigned tracedb_page_size(uint64_t input_bytes)
{
	return input_bytes < ((uint64_t)1 << 20) ? 1024 : input_bytes < ((uint64_t)16 << 20) ? 4096 : 65536;
}

sqlite3 *tracedb_create(const char *path, unsigned page_size, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	char pragmas[256];

	remove(path);
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA page_size=%u; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
		 "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-8192; PRAGMA temp_store=MEMORY;",
		 page_size);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
	    run_schema(db, 0) != 0 || tracedb_stamp(db) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

int tracedb_stamp(sqlite3 *db)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", TRACEDB_SCHEMA_VERSION);
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

int tracedb_file_version(const char *path)
{
	sqlite3 *db = NULL;
	int v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
		v = tracedb_version(db);
	sqlite3_close(db);
	return v;
}

int tracedb_counter_u64(sqlite3_stmt *st, int col, uint64_t *v)
{
	const unsigned char *s;
	uint64_t x = 0;
	int i, n;

	if (sqlite3_column_type(st, col) != SQLITE_TEXT || (s = sqlite3_column_text(st, col)) == NULL)
		return 0;
	n = sqlite3_column_bytes(st, col);
	if (n < 1 || n > 20)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return 0;
		x = x * 10 + d;
	}
	*v = x;
	return 1;
}
