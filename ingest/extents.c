/*
 * Ids reserved a chunk at a time (extents.h).
 */
#include "extents.h"

void idg_init(struct id_group *g)
{
	vec_init(&g->first, sizeof(uint64_t));
	g->count = 0;
}

void idg_fini(struct id_group *g)
{
	vec_fini(&g->first);
}

void idg_clear(struct id_group *g)
{
	g->first.len = 0;
	g->count = 0;
}

uint64_t idg_take(struct id_chunks *c, struct id_group *g)
{
	uint64_t ord = g->count;

	if (ord % c->rows == 0) {
		uint64_t *f = vec_push(&g->first);

		if (f == NULL)
			return 0;
		*f = c->next;
		c->next += c->rows;
	}
	g->count++;
	return idg_id(c, g, ord);
}

/* One extent: (track_id, depth, first_ord, first_id, count). */
static void extent_row(struct bins *eb, int64_t track_id, int64_t depth, uint64_t first_ord, uint64_t first_id,
		       uint64_t count)
{
	bins_i64(eb, track_id);
	bins_i64(eb, depth);
	bins_i64(eb, (int64_t)first_ord);
	bins_i64(eb, (int64_t)first_id);
	bins_i64(eb, (int64_t)count);
	bins_row(eb);
}

void extents_write(struct bins *eb, int64_t track_id, int64_t depth, const struct id_chunks *c,
		   const struct id_group *g, uint64_t first_id, uint64_t count)
{
	if (c->rows == 0) {
		extent_row(eb, track_id, depth, 0, first_id, count);
		return;
	}
	extents_write_from(eb, track_id, depth, c, g, 0, count);
}

uint64_t extents_changed_from(const struct id_chunks *c, uint64_t had, uint64_t count)
{
	uint64_t same = had < count ? had : count; /* rows both cover */

	/* the chunk holding the row after them */
	return same / c->rows * c->rows;
}

void extents_write_from(struct bins *eb, int64_t track_id, int64_t depth, const struct id_chunks *c,
			const struct id_group *g, uint64_t from, uint64_t count)
{
	uint64_t ord;

	for (ord = from; ord < count; ord += c->rows) {
		uint64_t n = count - ord < c->rows ? count - ord : c->rows;

		extent_row(eb, track_id, depth, ord, idg_id(c, g, ord), n);
	}
}
