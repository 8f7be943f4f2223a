/*
 * The trace database: the one owner of what ingest writes and query reads
 * besides the table layout itself (schema/trace.sql): the schema version,
 * opening a trace database and checking that version, and the encoding of
 * level-of-detail records (table lod) and stack nodes (track_stacks).
 *
 * Level-of-detail record: LOD_WORDS 64-bit words, up to LOD_CHUNK records
 * to a row (lod.buckets), packed together (tracedb_lod_pack, "Packed rows"
 * below): on make bench's archive a record takes about 15 bytes, not 80.
 * For one (track, depth) and level L, a record summarises the group of two
 * or more consecutive rows (slices, counter points, cpu runs) whose start
 * falls in bucket ts >> L. Rows are named by ordinal, their place in the
 * (track, depth) in ts order from 0; table extents maps ordinals to ids.
 *
 *   word  slices and cpu runs               counter points
 *   0     bucket (start_ts >> L)            bucket
 *   1     first row's ordinal               first point's ordinal
 *   2     last row's ordinal                last point's ordinal
 *   3     start_ts (first row's ts)         start_ts (first point's ts)
 *   4     end: greatest ts + dur            last point's ts
 *   5     ordinal of the longest row        min (double bits)
 *   6     1 when a row never ended, else 0  max (double bits)
 *   7     longest row's ts + dur - ts       last value (int64 or double bits)
 *   8     longest row's name | cat << 32    bit 0: last value is an int;
 *         (cpu runs: its thread row)        bit 1: first value is an int;
 *                                           bit 2: min and max are ints
 *   9     first row's name | cat << 32      first value
 *         (cpu runs: its thread row)
 *
 * A row that never ended counts to the end of the trace in words 4 and 7.
 */
#ifndef TRACEDB_TRACEDB_H
#define TRACEDB_TRACEDB_H

#include <stddef.h>
#include <sqlite3.h>
#include <stdint.h>

/*
 * The layout version of a trace database (PRAGMA user_version), written by
 * tracedb_stamp() after schema/trace.sql. A server meeting a database of
 * another version ingests its trace again. 3: lod records carry an "open"
 * word and a counter group's first value. 4: name_index (below), which
 * search by name reads. 5: lod records are varint deltas, not fixed words.
 * 6: name_stats, per-name counts and duration sketches (sketch.h) written
 * by ingest, which search across traces reads instead of every slice.
 * 7: table extents locates a group's rows, which may lie in several runs
 * of ids; lod records name rows by ordinal, not id.
 * 8: track_names and track_stacks, per track the wall times of each slice
 * name and of the call stacks merged by name path, which area and flame
 * over the whole trace read instead of every slice.
 * 9: time marks (below) in track_depths and tracks, where a viewport's
 * search by time starts.
 * 10: lod and track_stacks rows are packed (column by column, then zstd).
 */
#define TRACEDB_SCHEMA_VERSION 10

enum {
	LOD_WORDS = 10,
	LOD_CHUNK = 256,            /* records per lod row */
	LOD_MIN_LEVEL = 10,         /* buckets of 1 us, 4 us, 16 us ... */
	LOD_STEP = 2,
	LOD_MAX_LEVEL = 62,
};

/* Record word indexes (see the table above). */
enum {
	LODW_BUCKET, LODW_FIRST, LODW_LAST, LODW_START,
	LODW_END, LODW_LONGEST, LODW_OPEN, LODW_LONGEST_DUR, LODW_NAMES, LODW_FIRST_NAMES,
};
enum {
	LODW_LAST_TS = 4, LODW_MIN = 5, LODW_MAX = 6, LODW_LAST_VALUE = 7, LODW_INT_FLAGS = 8, LODW_FIRST_VALUE = 9,
};

/*
 * Packed rows: the blob of a lod row or a track_stacks row holds its
 * records, 1 to LOD_CHUNK (TRACEDB_STACKS_CHUNK), as one zstd frame whose
 * header gives its content's size. The content:
 *
 *   size      meaning
 *   varint    n, the count of records (1 .. the chunk)
 *   varints   the residuals of word 0 of records 0 .. n - 1, then of word
 *             1 ... then of the last word: n * words varints, the last
 *             ending the content
 *
 * A residual is the zigzag of the word's difference from its prediction,
 * taken from the record before (zeros before the first) and the record's
 * own words before it: for lod records, word LODW_FIRST is predicted by
 * the last ordinal before + 1, LODW_LAST by LODW_FIRST, LODW_START by the
 * bucket's start (bucket << level) and LODW_END (counters: LODW_LAST_TS)
 * by LODW_START; a stack node's STACKW_TOTAL and STACKW_CHILD by 0 and
 * STACKW_MAX by STACKW_TOTAL (equal for a node of one slice); any other
 * word by the same word of the record before. A lod record's two name words (a name id | a
 * category id << 32) are taken in halves: each half's residual is the
 * zigzag of its 32-bit difference, and the low half's varint comes first,
 * so those words take two varints each. Column by column, the words of one kind follow one
 * another and zstd (TRACEDB_PACK_LEVEL) finds what repeats in them: on
 * make bench's archive lod rows take 0.64 of the bytes record-by-record
 * varint deltas took, stack rows 0.58.
 */
enum { TRACEDB_PACK_LEVEL = 3 };

/* The room tracedb_lod_pack needs for n records. */
size_t tracedb_lod_bound(size_t n);
/* Packs records v[0 .. n) (n from 1 to LOD_CHUNK) of a row of level `level`
 * at out (cap bytes); returns the bytes written, 0 when n or level is out
 * of range, memory ran out or cap is short. */
size_t tracedb_lod_pack(uint8_t *out, size_t cap, int level, const uint64_t (*v)[LOD_WORDS], size_t n);
/* Frees the decompression contexts unpacking keeps for the next row: for
 * the end of an ingest and a deletion, with heap_release (ingest/util.h). */
void tracedb_release_cache(void);
/* Unpacks a lod row's blob of level `level` into v (room for LOD_CHUNK
 * records); returns the count of records, or -1 when the blob is damaged
 * (any length or count out of bounds, bytes left over or missing) or
 * memory ran out. */
int tracedb_lod_unpack(const void *blob, size_t len, int level, uint64_t (*v)[LOD_WORDS]);

/*
 * The stack statistics' nodes (table track_stacks, schema/trace.sql): a
 * track's nodes in order, up to TRACEDB_STACKS_CHUNK to a row, each a
 * record of STACKS_WORDS words, packed as lod records are ("Packed rows"
 * above). Node i of a track is the row's first_node plus its place in the
 * row.
 *
 *   word  meaning
 *   0     parent node + 1 (0: none)
 *   1     depth
 *   2     name_id
 *   3     count of slices
 *   4     total wall time, ns
 *   5     the children's part of it, ns
 *   6     the longest slice's wall time, ns
 */
enum { STACKS_WORDS = 7, TRACEDB_STACKS_CHUNK = 1024 };
enum { STACKW_PARENT, STACKW_DEPTH, STACKW_NAME, STACKW_COUNT, STACKW_TOTAL, STACKW_CHILD, STACKW_MAX };

/* As tracedb_lod_bound, _pack and _unpack, for stack nodes (n from 1 to
 * TRACEDB_STACKS_CHUNK; v of unpack has room for TRACEDB_STACKS_CHUNK). */
size_t tracedb_stacks_bound(size_t n);
size_t tracedb_stacks_pack(uint8_t *out, size_t cap, const uint64_t (*v)[STACKS_WORDS], size_t n);
int tracedb_stacks_unpack(const void *blob, size_t len, uint64_t (*v)[STACKS_WORDS]);

/*
 * Time marks (track_depths.marks, and tracks.marks of counter and cpu
 * tracks; schema/trace.sql): the ts of the rows of ordinal 0,
 * TRACEDB_MARK_ROWS, 2 * TRACEDB_MARK_ROWS ... of a group, and of its last
 * row when that is not one of them; each the varint of the zigzag of its
 * difference from the mark before (from zero for the first). A search by
 * time then starts between the two marks around it, at most
 * TRACEDB_MARK_ROWS rows on a page or two, instead of between the group's
 * ends, which a database out of the page cache reads from the disk: a
 * viewport on a track of 40 depths made about 200 page reads, three
 * quarters of them the searches' probes, and makes 130.
 */
enum { TRACEDB_MARK_ROWS = 1024, TRACEDB_MARK_MAX = 10 /* bytes a mark takes at most */ };

/* How many marks a group of `rows` rows has. */
static inline uint64_t tracedb_marks(uint64_t rows)
{
	return rows == 0 ? 0 : (rows - 1) / TRACEDB_MARK_ROWS + 1 + ((rows - 1) % TRACEDB_MARK_ROWS != 0);
}

/* The ordinal of mark k (below tracedb_marks(rows)) of a group of rows. */
static inline uint64_t tracedb_mark_ord(uint64_t rows, uint64_t k)
{
	return k * TRACEDB_MARK_ROWS < rows ? k * TRACEDB_MARK_ROWS : rows - 1;
}

/* Writes the mark ts after the mark *prev (0 before the first) at out and
 * sets *prev to ts; returns the bytes written (at most TRACEDB_MARK_MAX). */
size_t tracedb_mark_put(uint8_t *out, int64_t *prev, int64_t ts);
/* Reads the marks of a group of rows rows from p[0, n) into ts (room for
 * tracedb_marks(rows)); 0, or -1 when the bytes are not exactly that many
 * marks. */
int tracedb_marks_read(const uint8_t *p, size_t n, uint64_t rows, int64_t *ts);

/*
 * The name index (table name_index, schema/trace.sql): per slice name, every
 * slice of that name in (ts, id) order, in chunks of at most
 * TRACEDB_NAMES_CHUNK. A chunk's first (ts, id) are its key columns; the
 * others follow in its blob as pairs of varints: ts minus the previous ts
 * (never negative), then id minus the previous id, zigzag-encoded.
 */
enum { TRACEDB_NAMES_CHUNK = 256, TRACEDB_NAMES_PAIR_MAX = 20 /* bytes */ };

/* LEB128 varints, as the name index packs them (at most 10 bytes each):
 * put returns the bytes written; get returns 0, or -1 when the bytes end
 * first or run past 64 bits. Inline: ingest packs every slice with them. */
static inline size_t tracedb_put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static inline int tracedb_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

/* A slice's end, ts + dur (dur >= 0), at most INT64_MAX: damaged archives
 * hold slices that would end past it. */
static inline int64_t tracedb_slice_end(int64_t ts, int64_t dur)
{
	return ts > 0 && dur > INT64_MAX - ts ? INT64_MAX : ts + dur;
}

/* Whether a slice [ts, ts + dur] meets the inclusive window [s, e]: it
 * starts by e and ends at s or later; one that never ended (dur < 0)
 * reaches every later time. */
static inline int tracedb_slice_meets(int64_t ts, int64_t dur, int64_t s, int64_t e)
{
	return ts <= e && (dur < 0 || tracedb_slice_end(ts, dur) >= s);
}

/* Where a flow arrow leaves its from-slice (table flows, from_ts): its end,
 * or its start when it never ended (dur < 0). Ingest writes it and the
 * slice query finds a slice's arrows by it. */
static inline int64_t tracedb_flow_from_ts(int64_t ts, int64_t dur)
{
	return dur < 0 ? ts : tracedb_slice_end(ts, dur);
}

/* b - a when b > a, else 0; at most INT64_MAX. */
static inline int64_t tracedb_span(int64_t a, int64_t b)
{
	return b <= a ? 0 : (uint64_t)b - (uint64_t)a > (uint64_t)INT64_MAX ? INT64_MAX : b - a;
}

/* Sums of slices' times (area, flame, their statistics stored at ingest)
 * wrap around instead of overflowing, so that a sum taken in parts (per
 * track at ingest, then across tracks) equals the sum taken at once. */
static inline int64_t tracedb_wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static inline int64_t tracedb_wrap_sub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* Zigzag: a signed difference (taken in uint64_t) as an unsigned number
 * whose varint is short when the difference is small either way. */
static inline uint64_t tracedb_zigzag(uint64_t d)
{
	return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t tracedb_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/*
 * Counter values (counters.value): an integer, a real, or, for a uint64
 * argument above INT64_MAX (which SQLite's integers cannot hold), its
 * decimal text, so that it reads back exactly. tracedb_counter_u64 reads
 * the last: 1 with *v set when column col of st holds such a text, else 0.
 */
int tracedb_counter_u64(sqlite3_stmt *st, int col, uint64_t *v);

/* Writes the pair (ts, id) following (prev_ts, prev_id) at out; returns
 * the bytes written (at most TRACEDB_NAMES_PAIR_MAX). ts >= prev_ts. */
size_t tracedb_names_put(uint8_t *out, int64_t prev_ts, int64_t prev_id, int64_t ts, int64_t id);
/* Reads the pair after (*ts, *id) from *p (below end), updating both and
 * *p; 0, or -1 when the bytes end or are damaged. */
int tracedb_names_next(const uint8_t **p, const uint8_t *end, int64_t *ts, int64_t *id);

/*
 * The schema version of an open trace database (PRAGMA user_version);
 * -1 when it cannot be read (not a database, damaged, busy).
 */
int tracedb_version(sqlite3 *db);

/*
 * The one door to a trace database: every open goes through these, and
 * each checks the schema version of what it opens.
 *
 * tracedb_open_readonly: for readers; pages come through a memory map, and
 * a writer renaming a new file into place is waited for. Returns the
 * handle, or NULL with *why set to a static reason ("cannot open the
 * trace database", "... another schema version"). The caller closes it.
 * tracedb_open_readwrite: the same for changing an ingested database in
 * place (functions named by symbols).
 * tracedb_create: a new database at path (any file there is replaced) with
 * the tables of schema/trace.sql, stamped with this version, set up for
 * one writer (no journal: a failed ingest removes the file); NULL with err.
 */
sqlite3 *tracedb_open_readonly(const char *path, const char **why);
sqlite3 *tracedb_open_readwrite(const char *path, const char **why);
sqlite3 *tracedb_create(const char *path, unsigned page_size, char *err, size_t errlen);
/* The page size for the database of an input of this many bytes: every
 * table and index takes a page at least (about 30 of them), so a tiny
 * trace's database is kept small with small pages (1 KiB under 1 MiB of
 * input: some 40 KiB in all), a big one's reads and writes large ones
 * (64 KiB from 16 MiB; 4 KiB between). */
unsigned tracedb_page_size(uint64_t input_bytes);
/* Once the rows are in: moves the staged tables (TRACEDB_STAGED) into the
 * database, then creates the indexes of schema/trace.sql (those after its
 * "@indexes" mark): 0, or -1. */
int tracedb_index(sqlite3 *db);
/* The same indexes at once, in a new database that is read while it grows
 * (its commits write flows): tracedb_index then makes none again. 0, or -1. */
int tracedb_index_early(sqlite3 *db);

/* Where ingest writes lod, track_stacks and name_index: tracedb_create
 * makes them in a stage (a file beside the database, removed at once and
 * gone with the connection), and tracedb_index moves them whole into the
 * database, their pages full. */
#define TRACEDB_STAGED(table) "stage." table

/* Sets the schema version on a database being created: 0, or -1. */
int tracedb_stamp(sqlite3 *db);
/* Removes the database at path and the files WAL mode keeps beside it
 * (-wal, -shm): what a growing trace's database leaves (ingest/commit.h). */
void tracedb_remove(const char *path);
/* Opens an existing database for writing beside the process that made it
 * (a growing trace's, in WAL mode, ingest/commit.h): shared locks, a
 * stage of its own, in a transaction. NULL with a sentence in err. */
sqlite3 *tracedb_open_growing(const char *path, char *err, size_t errlen);
/* Moves the staged tables into main, without building the indexes (which
 * tracedb_index does after it): 0, or -1. */
int tracedb_unstage(sqlite3 *db);

/* The schema version of the file at path, -1 when unreadable. */
int tracedb_file_version(const char *path);

#endif
