/*
 * bench_ceiling: the raw SQLite ceiling for ingest.
 *
 *   bench_ceiling ROWS [DB [SCHEMA_SQL]]
 *
 * Loads ROWS slice rows into a fresh database as fast as SQLite can take
 * them, with the best settings PERFORMANCE.md measured: page_size 65536,
 * journal off, synchronous off, exclusive locking, no mutex, one
 * transaction, 64-row multi-row INSERTs, no index. (Every column of a
 * slice is an integer and is bound by value, so the SQLITE_STATIC binding
 * that matters for text and blobs has nothing to do here.) Nothing is decoded, sorted or matched, so ingest's events/s over
 * this rows/s is the share of the ceiling that ingest reaches (bench/ingest).
 *
 * The table is the `slices` table of schema/trace.sql (read at run time from
 * SCHEMA_SQL, default schema/trace.sql, so the layout is written down in one
 * place only). Rows come in cluster order, as ingest writes them: grouped by
 * track (64 tracks), ts increasing inside a track, with values of realistic
 * size (nanosecond timestamps, small ids, a parent on 3 rows in 4, an arg
 * set on 1 in 4). The clock runs from opening the database to closing it.
 *
 * DB defaults to $TMPDIR/bench_ceiling.PID.db and is removed at the end.
 * Prints "rows=N seconds=S rows_per_s=R"; exits 1 on a SQLite error, 2 on
 * usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

enum {
	BATCH = 64,       /* rows per INSERT */
	NCOLS = 9,        /* columns of slices */
	NTRACKS = 64,
	MAX_SCHEMA = 1 << 20
};

/* The values of one batch. */
struct batch {
	int64_t v[BATCH][NCOLS];
	int null[BATCH][NCOLS]; /* bind NULL instead of v */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Returns the "CREATE TABLE slices (...);" statement of the schema file as
 * a malloc'd string (the caller frees it), or NULL with a message printed.
 */
static char *ceiling_slices_sql(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf, *start, *end;
	size_t n;

	if (f == NULL) {
		perror(path);
		return NULL;
	}
	buf = malloc(MAX_SCHEMA + 1);
	n = buf ? fread(buf, 1, MAX_SCHEMA, f) : 0;
	fclose(f);
	if (buf == NULL)
		return NULL;
	buf[n] = '\0';
	start = strstr(buf, "CREATE TABLE slices (");
	end = start ? strstr(start, ");") : NULL;
	if (end == NULL) {
		fprintf(stderr, "bench_ceiling: no CREATE TABLE slices in %s\n", path);
		free(buf);
		return NULL;
	}
	end[2] = '\0';
	memmove(buf, start, (size_t)(end + 3 - start));
	return buf;
}

static int ceiling_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "bench_ceiling: %s: %s\n", sql, msg ? msg : "error");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* Prepares "INSERT INTO slices VALUES (?,...),..." for rows rows. */
static sqlite3_stmt *ceiling_prepare(sqlite3 *db, int rows)
{
	char sql[BATCH * (NCOLS * 2 + 4) + 64];
	size_t n = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO slices VALUES ");
	sqlite3_stmt *st = NULL;
	int r;

	for (r = 0; r < rows; r++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s(?,?,?,?,?,?,?,?,?)", r ? "," : "");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "bench_ceiling: prepare: %s\n", sqlite3_errmsg(db));
		return NULL;
	}
	return st;
}

/* Fills row r of the batch with slice i of n, in cluster order. */
static void ceiling_row(struct batch *b, int r, uint64_t i, uint64_t n)
{
	uint64_t per = (n + NTRACKS - 1) / NTRACKS, track = i / per, k = i % per;
	int64_t *v = b->v[r];
	int *null = b->null[r];

	v[0] = (int64_t)i + 1;                             /* id */
	v[1] = (int64_t)track + 1;                         /* track_id */
	v[2] = INT64_C(1000000000) + (int64_t)k * 1733;    /* ts, ns */
	v[3] = 400 + (int64_t)(k * 7919 % 250000);         /* dur */
	v[4] = (int64_t)(k % 4);                           /* depth */
	v[5] = 9 + (int64_t)(k % 30);                      /* name_id */
	v[6] = 1 + (int64_t)(k % 8);                       /* category_id */
	v[7] = (int64_t)i;                                 /* parent_id */
	v[8] = (int64_t)i + 1;                             /* arg_set_id */
	memset(null, 0, NCOLS * sizeof(*null));
	null[7] = k % 4 == 0;
	null[8] = k % 4 != 0;
}

/* Binds rows [0, rows) of the batch and steps the statement once. */
static int ceiling_step(sqlite3 *db, sqlite3_stmt *st, const struct batch *b, int rows)
{
	int r, c, p = 1;

	for (r = 0; r < rows; r++)
		for (c = 0; c < NCOLS; c++, p++) {
			if (b->null[r][c])
				sqlite3_bind_null(st, p);
			else
				sqlite3_bind_int64(st, p, b->v[r][c]);
		}
	if (sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st) != SQLITE_OK) {
		fprintf(stderr, "bench_ceiling: insert: %s\n", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* Inserts n rows: full batches through multi, the rest through one. */
static int ceiling_load(sqlite3 *db, uint64_t n)
{
	sqlite3_stmt *multi = ceiling_prepare(db, BATCH), *one = ceiling_prepare(db, 1);
	static struct batch b;
	uint64_t i;
	int r = 0, rc = multi && one ? 0 : -1;

	for (i = 0; i < n && rc == 0; i++) {
		ceiling_row(&b, r++, i, n);
		if (r == BATCH) {
			rc = ceiling_step(db, multi, &b, BATCH);
			r = 0;
		}
	}
	for (i = 0; i < (uint64_t)r && rc == 0; i++) {
		memcpy(b.v[0], b.v[i], sizeof(b.v[0]));
		memcpy(b.null[0], b.null[i], sizeof(b.null[0]));
		rc = ceiling_step(db, one, &b, 1);
	}
	sqlite3_finalize(multi);
	sqlite3_finalize(one);
	return rc;
}

static int ceiling_run(const char *path, const char *create, uint64_t n)
{
	sqlite3 *db = NULL;
	int rc = -1;

	remove(path);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "bench_ceiling: %s: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
		goto out_close;
	}
	if (ceiling_exec(db, "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
			     "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;") ||
	    ceiling_exec(db, create) || ceiling_exec(db, "BEGIN"))
		goto out_close;
	if (ceiling_load(db, n) == 0 && ceiling_exec(db, "COMMIT") == 0)
		rc = 0;
out_close:
	sqlite3_close(db);
	return rc;
}

int main(int argc, char **argv)
{
	char def[4096], *end = NULL, *create;
	const char *path = argc > 2 ? argv[2] : def, *schema = argc > 3 ? argv[3] : "schema/trace.sql";
	const char *tmp = getenv("TMPDIR");
	unsigned long long n;
	double t0, secs;
	int rc;

	n = argc > 1 ? strtoull(argv[1], &end, 10) : 0;
	if (argc < 2 || argc > 4 || *end != '\0' || n == 0 || n > UINT64_C(1) << 40) {
		fprintf(stderr, "usage: bench_ceiling ROWS [DB [SCHEMA_SQL]]\n");
		return 2;
	}
	snprintf(def, sizeof(def), "%s/bench_ceiling.%ld.db", tmp && *tmp ? tmp : "/tmp", (long)getpid());
	if ((create = ceiling_slices_sql(schema)) == NULL)
		return 1;
	t0 = now_s();
	rc = ceiling_run(path, create, n);
	secs = now_s() - t0;
	free(create);
	remove(path);
	if (rc != 0)
		return 1;
	printf("rows=%llu seconds=%.3f rows_per_s=%.0f\n", n, secs, secs > 0 ? (double)n / secs : 0);
	return 0;
}
