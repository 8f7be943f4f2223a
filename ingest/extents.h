/*
 * Where the rows of a group lie (schema/trace.sql, table extents): a
 * group's rows (one track and depth's slices, one counter track's points,
 * one cpu's runs) are numbered by ordinal in ts order from 0 and lie in
 * extents of consecutive ids.
 *
 * An archive read whole lays each group out as one extent, the groups one
 * after another in (track, depth) order, once every row is known: the
 * table is then in cluster order and SQLite appends every row. That needs
 * the whole input first. So ids may instead be reserved a chunk of
 * `rows` at a time, as a group's rows come, from a counter shared by the
 * groups of a table: an extent per chunk, the groups' extents interleaved
 * in the order their rows came, and a row's id known as soon as the row is
 * made. That is the layout a capture written while it streams in needs
 * (ingest_opts.extent_rows asks for it; tests use it to read every query
 * through interleaved extents). A group's later extents always have
 * greater ids.
 */
#ifndef INGEST_EXTENTS_H
#define INGEST_EXTENTS_H

#include <stdint.h>

#include "dbwriter.h"
#include "util.h"

/* A table's id counter. rows 0: one extent per group, laid out by the
 * caller; the functions below are for rows > 0. */
struct id_chunks {
	uint64_t rows; /* ids reserved at a time */
	uint64_t next; /* the next id not reserved */
};

/* One group's chunks: their first ids, in ordinal order. */
struct id_group {
	struct vec first; /* uint64_t */
	uint64_t count;   /* rows made */
};

void idg_init(struct id_group *g);
void idg_fini(struct id_group *g);
/* Empties g for another group, keeping its memory. */
void idg_clear(struct id_group *g);

/* A new row of g: its id, reserving a chunk when g's last one is full; 0
 * when out of memory. */
uint64_t idg_take(struct id_chunks *c, struct id_group *g);

/* The chunks reserved so far, numbered from 0 in the order they were
 * reserved (the first id is 1); and the number of the one holding id. */
static inline uint64_t idc_count(const struct id_chunks *c)
{
	return (c->next - 1) / c->rows;
}

static inline uint64_t idc_of(const struct id_chunks *c, uint64_t id)
{
	return (id - 1) / c->rows;
}

/* The id of row ord (< g->count) of g. */
static inline uint64_t idg_id(const struct id_chunks *c, const struct id_group *g, uint64_t ord)
{
	return ((const uint64_t *)g->first.data)[ord / c->rows] + ord % c->rows;
}

/* Writes the extents of a group's first count rows to eb (table extents)
 * under (track_id, depth): with chunks (c->rows > 0), g's (count <=
 * g->count: a growing trace's rows so far); else the one extent of count
 * rows from first_id (g is not read, and may be NULL). */
void extents_write(struct bins *eb, int64_t track_id, int64_t depth, const struct id_chunks *c,
		   const struct id_group *g, uint64_t first_id, uint64_t count);
/* With chunks: the ordinal where the extents of a group's first count rows
 * start to differ from those of its first had rows (had != count; the first
 * of a chunk),
 * and the extents of its first count rows from there on, which a growing
 * trace's commit writes in place of those from there on (commit.c). */
uint64_t extents_changed_from(const struct id_chunks *c, uint64_t had, uint64_t count);
void extents_write_from(struct bins *eb, int64_t track_id, int64_t depth, const struct id_chunks *c,
			const struct id_group *g, uint64_t from, uint64_t count);

#endif
