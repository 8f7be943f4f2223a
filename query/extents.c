/*
 * A group's ordinals to row ids (query_internal.h, table extents).
 */
#include <stdlib.h>

#include "cursor.h"

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

int qext_read(struct qextents *e, struct qcur *c, int64_t track, int64_t depth)
{
	int rc = SQLITE_DONE;

	e->n = 0;
	e->rows = 0;
	qcur_bind(c, 1, track);
	qcur_bind(c, 2, depth);
	while (rc == SQLITE_DONE && qcur_step(c))
		rc = qext_add(e, qcur_int(c, 0), qcur_int(c, 1), qcur_int(c, 2));
	qcur_reset(c);
	if (rc == SQLITE_NOMEM)
		return -1;
	if (rc != SQLITE_DONE)
		qcur_fail(c, rc);
	if (c->err) {
		e->n = 0;
		e->rows = 0;
	}
	return 0;
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
