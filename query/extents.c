/*
 * A group's ordinals to row ids (query_internal.h, table extents).
 */
#include <stdlib.h>

#include "query_internal.h"

int qext_add(struct qextents *e, int64_t ord, int64_t id, int64_t count)
{
	if (ord != e->rows || count <= 0 || id <= 0 || count > INT64_MAX - e->rows || id > INT64_MAX - count)
		return SQLITE_CORRUPT;
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 4;
		struct qext *v = realloc(e->v, cap * sizeof(*v));

		if (v == NULL)
			return SQLITE_NOMEM;
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n++] = (struct qext){ ord, id, count };
	e->rows += count;
	return SQLITE_DONE;
}

int qext_read(struct qextents *e, sqlite3_stmt *st, int64_t track, int64_t depth)
{
	int rc;

	e->n = 0;
	e->rows = 0;
	sqlite3_bind_int64(st, 1, track);
	sqlite3_bind_int64(st, 2, depth);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		rc = qext_add(e, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
		if (rc != SQLITE_DONE)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

void qext_free(struct qextents *e)
{
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
	e->rows = 0;
}

/* The extent holding ordinal ord (< e->rows). */
static const struct qext *find(const struct qextents *e, int64_t ord)
{
	size_t lo = 0, hi = e->n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->v[mid].ord <= ord)
			lo = mid;
		else
			hi = mid;
	}
	return &e->v[lo];
}

int64_t qext_id(const struct qextents *e, int64_t ord)
{
	const struct qext *x = find(e, ord);

	return x->id + (ord - x->ord);
}

int qext_piece(const struct qextents *e, int64_t *lo, int64_t hi, int64_t *a, int64_t *b)
{
	const struct qext *x;
	int64_t end;

	if (*lo > hi || *lo < 0 || *lo >= e->rows)
		return 0;
	if (hi >= e->rows)
		hi = e->rows - 1;
	x = find(e, *lo);
	end = x->ord + x->count - 1 < hi ? x->ord + x->count - 1 : hi;
	*a = x->id + (*lo - x->ord);
	*b = x->id + (end - x->ord);
	*lo = end + 1;
	return 1;
}
