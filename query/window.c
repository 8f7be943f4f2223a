/*
 * The window engine (window.h): searches by ordinal, the level-of-
 * detail iterator and the names cache, all reading through cursors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "window.h"

/* ---- search by ordinal ------------------------------------------------- */

int qprobe_open(struct qprobe *p, sqlite3 *db, const char *table, struct qry_error *err)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT ts, %s FROM %s WHERE id = ?",
		 strcmp(table, "slices") == 0 || strcmp(table, "sched") == 0 ? "dur" : "0", table);
	p->ext = NULL;
	return qcur_open(&p->cur, db, sql, err);
}

int qprobe_close(struct qprobe *p, int first)
{
	return qcur_close(&p->cur, first);
}

int64_t qprobe_ts(struct qprobe *p, int64_t ord, int64_t *dur)
{
	int64_t ts = INT64_MAX;

	qcur_bind(&p->cur, 1, p->ext ? qext_id(p->ext, ord) : ord);
	if (qcur_step(&p->cur)) {
		ts = qcur_int(&p->cur, 0);
		if (dur)
			*dur = qcur_int(&p->cur, 1);
	}
	qcur_reset(&p->cur);
	return ts;
}

static int after(int64_t ts, int64_t t, int strict)
{
	return strict ? ts > t : ts >= t;
}

/*
 * Interpolation search, with bisection as the fallback. Rows come about
 * evenly over time, so guessing where t falls between the two rows that
 * bracket it lands a few rows off: about five probes for a million rows,
 * where bisection takes twenty. Each probe is a row read, from the disk
 * on a database not in the page cache (every trace after a restart, and
 * a large one just ingested), so the probes are what a zoomed-out
 * viewport waits for on a track with dozens of depths. A guess that did
 * not halve the bracket is followed by a halving step, so bursty rows
 * cost at most about twice bisection's probes.
 *
 * The search proper runs in (a, b]: row a is known to be before t (its
 * ts va) and row b after it (vb).
 */
static int64_t bracketed(struct qprobe *p, int64_t a, int64_t va, int64_t b, int64_t vb, int64_t t, int strict)
{
	int bisect = 0;

	while (b - a > 1) {
		int64_t mid, v, span = b - a;

		if (bisect) {
			mid = a + span / 2;
		} else {
			/* va < vb, since va is before t and vb after it: both
			 * differences fit in 64 bits unsigned, and are taken
			 * there, since doubles of times near 2^60 (ns since
			 * 1970) can be equal where the times differ */
			double f = (double)((uint64_t)t - (uint64_t)va) / (double)((uint64_t)vb - (uint64_t)va);

			mid = a + 1 + (int64_t)(f * (double)(span - 1));
			if (mid <= a)
				mid = a + 1;
			if (mid >= b)
				mid = b - 1;
		}
		v = qprobe_ts(p, mid, NULL);
		if (after(v, t, strict)) {
			b = mid;
			vb = v;
		} else {
			a = mid;
			va = v;
		}
		bisect = !bisect && b - a > span / 2;
	}
	return b;
}

int64_t qwin_bound(struct qprobe *p, int64_t lo, int64_t hi, int64_t t, int strict)
{
	int64_t va, vb;

	if (lo > hi)
		return lo;
	/* the bracket: row lo is before t, row hi after it */
	if (after((va = qprobe_ts(p, lo, NULL)), t, strict))
		return lo;
	if (lo == hi || !after((vb = qprobe_ts(p, hi, NULL)), t, strict))
		return hi + 1;
	return bracketed(p, lo, va, hi, vb, t, strict);
}

int qmarks_read(struct qmarks *m, const void *blob, int n, int64_t rows)
{
	uint64_t count = rows > 0 ? tracedb_marks((uint64_t)rows) : 0;

	qmarks_free(m);
	if (rows < 0 || n < 0 || (uint64_t)n < count) /* a mark takes a byte at least */
		return SQLITE_CORRUPT;
	if (count == 0)
		return n == 0 ? SQLITE_OK : SQLITE_CORRUPT;
	if ((m->ts = malloc(count * sizeof(*m->ts))) == NULL)
		return SQLITE_NOMEM;
	if (tracedb_marks_read(blob, (size_t)n, (uint64_t)rows, m->ts) != 0) {
		qmarks_free(m);
		return SQLITE_CORRUPT;
	}
	m->n = count;
	m->rows = rows;
	return SQLITE_OK;
}

void qmarks_free(struct qmarks *m)
{
	free(m->ts);
	m->ts = NULL;
	m->n = 0;
	m->rows = 0;
}

int qwin_marks(struct qmarks *m, struct qcur *c, int col, int64_t rows)
{
	int rc;

	if (c->err || sqlite3_column_type(c->st, col) == SQLITE_NULL) {
		qmarks_free(m);
		return 0;
	}
	rc = qmarks_read(m, sqlite3_column_blob(c->st, col), sqlite3_column_bytes(c->st, col), rows);
	if (rc == SQLITE_NOMEM)
		return -1;
	if (rc != SQLITE_OK)
		qcur_fail(c, rc);
	return 0;
}

int64_t qwin_bound_marked(struct qprobe *p, const struct qmarks *m, int64_t lo, int64_t hi, int64_t t, int strict)
{
	uint64_t l = 0, r;
	int64_t x;

	if (m == NULL || m->n == 0 || lo > hi)
		return qwin_bound(p, lo, hi, t, strict);
	/* the first mark after t: the group's answer is at or before it and
	 * after the mark before */
	r = m->n;
	while (l < r) {
		uint64_t mid = l + (r - l) / 2;

		if (after(m->ts[mid], t, strict))
			r = mid;
		else
			l = mid + 1;
	}
	if (l == 0)
		x = 0;
	else if (l == m->n)
		x = m->rows;
	else
		x = bracketed(p, (int64_t)tracedb_mark_ord((uint64_t)m->rows, l - 1), m->ts[l - 1],
			      (int64_t)tracedb_mark_ord((uint64_t)m->rows, l), m->ts[l], t, strict);
	/* ts never decreases with the ordinal: in [lo, hi] the answer is the
	 * group's, or lo when the group's is before it */
	return x < lo ? lo : x > hi ? hi + 1 : x;
}

void qwin_rows(struct qprobe *p, const struct qmarks *m, int64_t first, int64_t last, int64_t s, int64_t e,
	       int disjoint, int64_t max_dur, int64_t *lo, int64_t *hi)
{
	int64_t dur = 0, ts;

	*hi = qwin_bound_marked(p, m, first, last, e, 1) - 1;
	if (!disjoint) {
		*lo = qwin_bound_marked(p, m, first, *hi, s > INT64_MIN + max_dur ? s - max_dur : INT64_MIN, 0);
		return;
	}
	/* the first row starting at s or later, and the one before it when
	 * it reaches s (every zero-length row at s is in) */
	*lo = qwin_bound_marked(p, m, first, *hi, s, 0);
	if (*lo > first) {
		ts = qprobe_ts(p, *lo - 1, &dur);
		if (dur < 0 || ts + dur >= s)
			(*lo)--;
	}
}

/* ---- level of detail --------------------------------------------------- */

void qlod_start(struct qlod_iter *it, struct qcur *cur, int64_t track, int64_t depth, int level, int64_t lo,
		int64_t hi)
{
	it->cur = cur;
	it->level = level;
	it->n = it->k = 0;
	it->hi = hi;
	it->done = 0;
	qcur_bind(cur, 1, track);
	qcur_bind(cur, 2, depth);
	qcur_bind(cur, 3, level);
	qcur_bind(cur, 4, hi);
	qcur_bind(cur, 5, lo);
}

void qlod_stop(struct qlod_iter *it)
{
	it->done = 1;
	qcur_reset(it->cur);
}

int qlod_next(struct qlod_iter *it, struct qlod_rec *r)
{
	while (!it->done && it->k >= it->n) {
		if (!qcur_step(it->cur)) {
			it->done = 1;
			break;
		}
		it->k = 0;
		it->n = tracedb_lod_unpack(sqlite3_column_blob(it->cur->st, 0),
					   (size_t)sqlite3_column_bytes(it->cur->st, 0), it->level, it->rec);
		if (it->n < 0) {
			qcur_fail(it->cur, SQLITE_CORRUPT);
			goto out_end;
		}
	}
	if (it->done)
		goto out_end;
	memcpy(r->v, it->rec[it->k++], sizeof(r->v));
	if ((int64_t)r->v[LODW_BUCKET] > it->hi)
		goto out_end;
	return 1;
out_end:
	qlod_stop(it);
	return 0;
}

/*
 * The finest stored level at or below the first whose buckets are at
 * least a pixel wide (levels 10, 12, 14 ...).
 */
int qlod_level(int64_t resolution, uint64_t levels)
{
	int level = LOD_MIN_LEVEL;

	while (level < LOD_MAX_LEVEL && (INT64_C(1) << level) < resolution)
		level += LOD_STEP;
	for (; level >= LOD_MIN_LEVEL; level--)
		if (levels & (UINT64_C(1) << level))
			return level;
	return -1;
}

/* ---- names ------------------------------------------------------------- */

int qnames_open(struct qnames *n, sqlite3 *db, struct qry_error *err)
{
	memset(n, 0, sizeof(*n));
	return qcur_open(&n->cur, db, "SELECT str FROM strings WHERE id = ?", err);
}

int qnames_close(struct qnames *n, int first)
{
	size_t i;

	for (i = 0; i < QNAMES_SLOTS; i++)
		free(n->str[i]);
	return qcur_close(&n->cur, first);
}

void qnames_put(struct qnames *n, struct jbuf *b, int64_t id)
{
	size_t h = (size_t)id & (QNAMES_SLOTS - 1);

	if (n->str[h] == NULL || n->id[h] != id) {
		free(n->str[h]);
		qcur_bind(&n->cur, 1, id);
		n->str[h] = jb_quote(qcur_step(&n->cur) ? qcur_text(&n->cur, 0) : "", &n->len[h]);
		n->id[h] = id;
		qcur_reset(&n->cur);
	}
	if (n->str[h])
		jb_json(b, n->str[h], n->len[h]);
	else
		jb_str(b, "");
}
