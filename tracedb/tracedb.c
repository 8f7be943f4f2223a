/*
 * The trace database's version check and the encoding of level-of-detail
 * and stack records (tracedb.h). Ingest writes through it; query and the catalog read
 * through it, so the record layout and the version are written once.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "tracedb.h"

/*
 * Packed rows. The content, before zstd: the varint of the record count n,
 * then column by column (word 0 of every record, then word 1 ...) the
 * varint of each word's residual: the zigzag of its difference from what
 * the records before predict (predict()). A column's words differ little
 * from one record to the next, and zstd finds what repeats in them.
 */
enum { VARINT_MAX = 10 /* bytes */ };

struct pack_kind {
	int words;    /* words a record */
	size_t max;   /* records a row holds at most */
	int lod;      /* 1: lod records (predict() knows their words), 0: deltas */
};

static const struct pack_kind LOD_KIND = { LOD_WORDS, LOD_CHUNK, 1 };
static const struct pack_kind STACKS_KIND = { STACKS_WORDS, TRACEDB_STACKS_CHUNK, 0 };

/* What record v's word j is predicted to be from the record before it
 * (prev, zeros for the first) and v's own words before j: lod records
 * follow one another in ordinals, and start in their bucket and end after
 * they start; a stack node's times are its own (its longest is its total
 * when it has one slice); any other word is predicted by the same word of
 * the record before. */
static uint64_t predict(const struct pack_kind *k, int level, const uint64_t *prev, const uint64_t *v, int j)
{
	if (!k->lod)
		return j == STACKW_MAX ? v[STACKW_TOTAL] : j == STACKW_TOTAL || j == STACKW_CHILD ? 0 : prev[j];
	switch (j) {
	case LODW_FIRST:
		return prev[LODW_LAST] + 1;
	case LODW_LAST:
		return v[LODW_FIRST];
	case LODW_START:
		return v[LODW_BUCKET] << level;
	case LODW_END: /* counters: LODW_LAST_TS */
		return v[LODW_START];
	default:
		return prev[j];
	}
}

/* Whether word j's residual is taken in two halves, each the zigzag of
 * the difference of its 32 bits, stored as two varints: a lod record's
 * names are a name and a category id, which change apart. */
static int split(const struct pack_kind *k, int j)
{
	return k->lod && (j == LODW_NAMES || j == LODW_FIRST_NAMES);
}

static uint32_t zigzag32(uint32_t d)
{
	return (d << 1) ^ (uint32_t)((int32_t)d >> 31);
}

static uint32_t unzigzag32(uint32_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* Word x's residual from its prediction p. */
static uint64_t residual(const struct pack_kind *k, int j, uint64_t x, uint64_t p)
{
	if (!split(k, j))
		return tracedb_zigzag(x - p);
	return zigzag32((uint32_t)x - (uint32_t)p) |
	       (uint64_t)zigzag32((uint32_t)(x >> 32) - (uint32_t)(p >> 32)) << 32;
}

/* The word whose residual from prediction p is r. */
static uint64_t restore(const struct pack_kind *k, int j, uint64_t r, uint64_t p)
{
	if (!split(k, j))
		return tracedb_unzigzag(r) + p;
	return (uint32_t)((uint32_t)p + unzigzag32((uint32_t)r)) |
	       (uint64_t)((uint32_t)(p >> 32) + unzigzag32((uint32_t)(r >> 32))) << 32;
}

/* The content's bytes at most for n records. */
static size_t pack_content_max(const struct pack_kind *k, size_t n)
{
	return VARINT_MAX + n * (size_t)k->words * VARINT_MAX;
}

static size_t pack_bound(const struct pack_kind *k, size_t n)
{
	return ZSTD_compressBound(pack_content_max(k, n));
}

static ZSTD_CCtx *cctx_take(void);
static void cctx_give(ZSTD_CCtx *cc);

static size_t pack(const struct pack_kind *k, int level, const uint64_t *v, size_t n, uint8_t *out, size_t cap)
{
	static const uint64_t zeros[LOD_WORDS]; /* LOD_WORDS > STACKS_WORDS */
	ZSTD_CCtx *cc;
	uint8_t *content;
	size_t len, i, w = (size_t)k->words;
	int j;

	if (n == 0 || n > k->max || level < 0 || level > LOD_MAX_LEVEL ||
	    (content = malloc(pack_content_max(k, n))) == NULL)
		return 0;
	len = tracedb_put_varint(content, n);
	for (j = 0; j < k->words; j++)
		for (i = 0; i < n; i++) {
			const uint64_t *rec = v + i * w, *prev = i == 0 ? zeros : rec - w;

			uint64_t r = residual(k, j, rec[j], predict(k, level, prev, rec, j));

			if (split(k, j)) {
				len += tracedb_put_varint(content + len, (uint32_t)r);
				r >>= 32;
			}
			len += tracedb_put_varint(content + len, r);
		}
	cc = cctx_take();
	len = cc == NULL ? 0 : ZSTD_compressCCtx(cc, out, cap, content, len, TRACEDB_PACK_LEVEL);
	cctx_give(cc);
	free(content);
	return len == 0 || ZSTD_isError(len) ? 0 : len;
}

/*
 * Decompression contexts kept for the next row read: making one cost 9.5 us
 * a row (12.8 against 3.3 us on make bench's lod rows), 1 to 3 ms of a
 * viewport that reads a few hundred. Compression contexts likewise, for the
 * rows packed: making one for each (ZSTD_compress) was a quarter of a
 * growing trace's packing time. A user takes one and gives it back; at most
 * a pool's `cap` wait in it (one per request thread at a time), and
 * tracedb_release_cache frees them.
 */
struct ctx_pool {
	void *kept[8];
	int n, cap;
};

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_pool dctx_pool = { { NULL }, 0, 8 };
static struct ctx_pool cctx_pool = { { NULL }, 0, 4 };

/* A context kept in p, or NULL when none waits. */
static void *pool_take(struct ctx_pool *p)
{
	void *x = NULL;

	pthread_mutex_lock(&pool_mu);
	if (p->n > 0)
		x = p->kept[--p->n];
	pthread_mutex_unlock(&pool_mu);
	return x;
}

/* Keeps x (not NULL) in p: 1, or 0 when p is full (the caller frees it). */
static int pool_keep(struct ctx_pool *p, void *x)
{
	int kept;

	pthread_mutex_lock(&pool_mu);
	if ((kept = p->n < p->cap))
		p->kept[p->n++] = x;
	pthread_mutex_unlock(&pool_mu);
	return kept;
}

static ZSTD_DCtx *dctx_take(void)
{
	ZSTD_DCtx *dc = pool_take(&dctx_pool);

	return dc ? dc : ZSTD_createDCtx();
}

static void dctx_give(ZSTD_DCtx *dc)
{
	if (dc != NULL && !pool_keep(&dctx_pool, dc))
		ZSTD_freeDCtx(dc);
}

static ZSTD_CCtx *cctx_take(void)
{
	ZSTD_CCtx *cc = pool_take(&cctx_pool);

	return cc ? cc : ZSTD_createCCtx();
}

static void cctx_give(ZSTD_CCtx *cc)
{
	if (cc != NULL && !pool_keep(&cctx_pool, cc))
		ZSTD_freeCCtx(cc);
}

void tracedb_release_cache(void)
{
	void *x;

	while ((x = pool_take(&dctx_pool)) != NULL)
		ZSTD_freeDCtx(x);
	while ((x = pool_take(&cctx_pool)) != NULL)
		ZSTD_freeCCtx(x);
}

/* The next varint, most often a byte (a residual is small): that byte
 * without the loop of tracedb_get_varint. */
static inline int next_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	if (*p < end && **p < 0x80) {
		*v = *(*p)++;
		return 0;
	}
	return tracedb_get_varint(p, end, v);
}

/* Lod records' words from their residuals, record by record: restore()
 * and predict() written out for each word (the loop over words, its
 * switch and its split test were most of a zoomed-out viewport's
 * unpacking). */
static void restore_lod(int level, uint64_t *v, size_t n)
{
	static const uint64_t zeros[LOD_WORDS];
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t *r = v + i * LOD_WORDS;
		const uint64_t *prev = i == 0 ? zeros : r - LOD_WORDS;

		r[LODW_BUCKET] = tracedb_unzigzag(r[LODW_BUCKET]) + prev[LODW_BUCKET];
		r[LODW_FIRST] = tracedb_unzigzag(r[LODW_FIRST]) + prev[LODW_LAST] + 1;
		r[LODW_LAST] = tracedb_unzigzag(r[LODW_LAST]) + r[LODW_FIRST];
		r[LODW_START] = tracedb_unzigzag(r[LODW_START]) + (r[LODW_BUCKET] << level);
		r[LODW_END] = tracedb_unzigzag(r[LODW_END]) + r[LODW_START];
		r[LODW_LONGEST] = tracedb_unzigzag(r[LODW_LONGEST]) + prev[LODW_LONGEST];
		r[LODW_OPEN] = tracedb_unzigzag(r[LODW_OPEN]) + prev[LODW_OPEN];
		r[LODW_LONGEST_DUR] = tracedb_unzigzag(r[LODW_LONGEST_DUR]) + prev[LODW_LONGEST_DUR];
		r[LODW_NAMES] = restore(&LOD_KIND, LODW_NAMES, r[LODW_NAMES], prev[LODW_NAMES]);
		r[LODW_FIRST_NAMES] = restore(&LOD_KIND, LODW_FIRST_NAMES, r[LODW_FIRST_NAMES], prev[LODW_FIRST_NAMES]);
	}
}

/* Reads the residuals into v column by column, then turns them into words
 * record by record (a prediction may use any word of the record before). */
static int unpack(const struct pack_kind *k, int level, const void *blob, size_t len, uint64_t *v)
{
	static const uint64_t zeros[LOD_WORDS]; /* LOD_WORDS > STACKS_WORDS */
	unsigned long long size = ZSTD_getFrameContentSize(blob, len);
	size_t got, i, w = (size_t)k->words;
	const uint8_t *p, *end;
	uint8_t *content;
	uint64_t n = 0, z;
	ZSTD_DCtx *dc;
	int j, rc = -1;

	if (level < 0 || level > LOD_MAX_LEVEL || size == ZSTD_CONTENTSIZE_UNKNOWN ||
	    size == ZSTD_CONTENTSIZE_ERROR || size == 0 || size > pack_content_max(k, k->max) ||
	    (content = malloc((size_t)size)) == NULL)
		return -1;
	if ((dc = dctx_take()) == NULL)
		goto out_free;
	got = ZSTD_decompressDCtx(dc, content, (size_t)size, blob, len);
	dctx_give(dc);
	if (ZSTD_isError(got) || got != size)
		goto out_free;
	p = content;
	end = content + got;
	if (tracedb_get_varint(&p, end, &n) != 0 || n == 0 || n > k->max)
		goto out_free;
	for (j = 0; j < k->words; j++) {
		uint64_t *col = v + j;

		if (!split(k, j)) {
			for (i = 0; i < n; i++, col += w)
				if (next_varint(&p, end, col) != 0)
					goto out_free;
			continue;
		}
		for (i = 0; i < n; i++, col += w) {
			uint64_t hi;

			if (next_varint(&p, end, &z) != 0 || next_varint(&p, end, &hi) != 0 || z > UINT32_MAX ||
			    hi > UINT32_MAX)
				goto out_free;
			*col = z | hi << 32;
		}
	}
	if (p != end)
		goto out_free;
	if (k->lod) {
		restore_lod(level, v, (size_t)n);
	} else {
		for (i = 0; i < n; i++) {
			uint64_t *rec = v + i * w;
			const uint64_t *prev = i == 0 ? zeros : rec - w;

			for (j = 0; j < k->words; j++)
				rec[j] = restore(k, j, rec[j], predict(k, level, prev, rec, j));
		}
	}
	rc = (int)n;
out_free:
	free(content);
	return rc;
}

size_t tracedb_lod_bound(size_t n)
{
	return pack_bound(&LOD_KIND, n);
}

size_t tracedb_lod_pack(uint8_t *out, size_t cap, int level, const uint64_t (*v)[LOD_WORDS], size_t n)
{
	return pack(&LOD_KIND, level, v[0], n, out, cap);
}

int tracedb_lod_unpack(const void *blob, size_t len, int level, uint64_t (*v)[LOD_WORDS])
{
	return unpack(&LOD_KIND, level, blob, len, v[0]);
}

size_t tracedb_stacks_bound(size_t n)
{
	return pack_bound(&STACKS_KIND, n);
}

size_t tracedb_stacks_pack(uint8_t *out, size_t cap, const uint64_t (*v)[STACKS_WORDS], size_t n)
{
	return pack(&STACKS_KIND, 0, v[0], n, out, cap);
}

int tracedb_stacks_unpack(const void *blob, size_t len, uint64_t (*v)[STACKS_WORDS])
{
	return unpack(&STACKS_KIND, 0, blob, len, v[0]);
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
	sqlite3_stmt *st = NULL;
	int wal = 0;

	/* pages straight from the OS cache instead of copies in SQLite's own;
	 * but for a database still growing (WAL mode, ingest/commit.h): a
	 * reader held for a while would map ever more of it, counted as the
	 * server's own */
	if (db && sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		wal = strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
	sqlite3_finalize(st);
	if (db)
		sqlite3_exec(db, wal ? "PRAGMA cache_size=-4096;" : "PRAGMA mmap_size=17179869184; PRAGMA cache_size=-4096;",
			     NULL, NULL, NULL);
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
 * The staged tables (tracedb.h, TRACEDB_STAGED): each made in the stage
 * with the layout schema/trace.sql gives it in main, so that
 * "INSERT INTO main.t SELECT * FROM stage.t" copies cells as they are
 * into pages filled to the brim (SQLite's transfer optimization loads an
 * empty table in bulk). Rows inserted one by one, even in key order,
 * leave a WITHOUT ROWID table's pages an eighth empty: on make bench's
 * archive the three tables took 1.4 MB more that way.
 */
static const char *const STAGED[] = { "lod", "track_stacks", "name_index" };

static int stage(sqlite3 *db, const char *path, unsigned page_size)
{
	char *sql;
	size_t i;
	int rc = 0;

	if ((sql = sqlite3_mprintf("%s-stage", path)) == NULL)
		return -1;
	remove(sql);
	sqlite3_free(sql);
	if ((sql = sqlite3_mprintf("ATTACH '%q-stage' AS stage; PRAGMA stage.page_size=%u; "
				   "PRAGMA stage.journal_mode=OFF; PRAGMA stage.synchronous=OFF; "
				   "PRAGMA stage.cache_size=-2048",
				   path, page_size)) == NULL)
		return -1;
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	sqlite3_free(sql);
	/* the stage lives while the connection does, and no crash leaves it */
	if ((sql = sqlite3_mprintf("%s-stage", path)) == NULL)
		return -1;
	remove(sql);
	sqlite3_free(sql);
	for (i = 0; i < sizeof(STAGED) / sizeof(STAGED[0]) && rc == 0; i++) {
		sqlite3_stmt *st = NULL;

		rc = -1;
		if (sqlite3_prepare_v2(db, "SELECT 'CREATE TABLE stage.' || substr(sql, 14) FROM main.sqlite_schema "
					   "WHERE name = ?1 AND sql LIKE 'CREATE TABLE ' || ?1 || ' %'",
				       -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_bind_text(st, 1, STAGED[i], -1, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
			rc = sqlite3_exec(db, (const char *)sqlite3_column_text(st, 0), NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
		sqlite3_finalize(st);
	}
	return rc;
}

static int unstage(sqlite3 *db)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(STAGED) / sizeof(STAGED[0]) && rc == 0; i++) {
		char *sql = sqlite3_mprintf("INSERT INTO main.%s SELECT * FROM stage.%s", STAGED[i], STAGED[i]);

		rc = sql != NULL && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
		sqlite3_free(sql);
	}
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
	if (sqlite3_exec(db, "PRAGMA temp_store=FILE; PRAGMA threads=2", NULL, NULL, NULL) != SQLITE_OK ||
	    unstage(db) != 0)
		return -1;
	return run_schema(db, 1);
}

int tracedb_index_early(sqlite3 *db)
{
	return run_schema(db, 1);
}

unsigned tracedb_page_size(uint64_t input_bytes)
{
	return input_bytes < ((uint64_t)1 << 20) ? 1024 : input_bytes < ((uint64_t)16 << 20) ? 4096 : 65536;
}

void tracedb_remove(const char *path)
{
	char side[4200];

	remove(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	remove(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	remove(side);
}

sqlite3 *tracedb_create(const char *path, unsigned page_size, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	char pragmas[256];

	tracedb_remove(path); /* a new database must not take an old one's log for its own */
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA page_size=%u; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
		 "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-8192; PRAGMA temp_store=MEMORY;",
		 page_size);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
	    run_schema(db, 0) != 0 || tracedb_stamp(db) != 0 || stage(db, path, page_size) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

sqlite3 *tracedb_open_growing(const char *path, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	unsigned page_size = 4096;

	if (access(path, F_OK) != 0 || /* it exists: CREATE is for its stage, which ATTACH makes */
	    sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA main.locking_mode=NORMAL; PRAGMA main.synchronous=OFF; PRAGMA cache_size=-8192; "
			     "PRAGMA temp_store=MEMORY;", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(db, "PRAGMA main.page_size", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		page_size = (unsigned)sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (stage(db, path, page_size) != 0 || sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	return db;
fail:
	snprintf(err, errlen, "cannot open %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
	sqlite3_close(db);
	return NULL;
}

int tracedb_unstage(sqlite3 *db)
{
	return unstage(db);
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
