/*
 * Area selection: the slices of chosen tracks inside a time range, every
 * figure clipped to the range.
 *
 * qry_area_scan walks the slices of each track that overlap [start, end]
 * depth by depth (a depth's slices are numbered by ordinal in ts order and
 * lie in extents of ascending ids, so a binary search on ordinals finds the
 * part that can overlap, however big the track) and hands them to a
 * visitor in batches, each with its clipped wall time and the tag the
 * visitor gave the slice's parent; the parent of a slice in the range is in
 * the range too and was visited one depth earlier. A slice without one
 * (an async operation, on whatever lane) is a root of its own: a lane is a
 * layout row, not a call depth. The per-name aggregate
 * (qry_area) and the flame graph (flame.c) are visitors.
 *
 * A selection of the whole trace needs no slice: the per-name aggregate
 * adds up the rows ingest stored per track and name (track_names), the
 * flame graph the track's merged stacks (track_stacks, flame.c); the
 * figures are the ones a scan would give, slice by slice.
 */
#include "cursor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (slice id, tag) of one depth, ids ascending. */
struct tagged {
	int64_t *id;
	int32_t *tag;
	size_t n, cap;
};

static int tagged_push(struct tagged *t, int64_t id, int32_t tag)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		int64_t *ids = realloc(t->id, cap * sizeof(*ids));
		int32_t *tags;

		if (ids == NULL)
			return -1;
		t->id = ids;
		tags = realloc(t->tag, cap * sizeof(*tags));
		if (tags == NULL)
			return -1;
		t->tag = tags;
		t->cap = cap;
	}
	t->id[t->n] = id;
	t->tag[t->n] = tag;
	t->n++;
	return 0;
}

/* The tag of slice id in t, or QRY_AREA_ROOT when it is not there.
 * Children come in the order of their parents, so the search starts where
 * the last one ended (*at). */
static int32_t tagged_find(const struct tagged *t, int64_t id, size_t *at)
{
	size_t lo = 0, hi = t->n;

	if (*at < t->n && t->id[*at] == id)
		return t->tag[*at];
	if (*at + 1 < t->n && t->id[*at + 1] == id)
		return t->tag[++*at];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n && t->id[lo] == id) {
		*at = lo;
		return t->tag[lo];
	}
	return QRY_AREA_ROOT;
}

static void tagged_free(struct tagged *t)
{
	free(t->id);
	free(t->tag);
	memset(t, 0, sizeof(*t));
}

int qry_area_stored = 1;

/* The trace's time meta.key ('start_ns' or 'end_ns'), dflt when missing. */
static int area_trace_time(sqlite3 *db, const char *key, int64_t dflt, int64_t *t, struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", err);

	*t = dflt;
	if (rc == QRY_OK) {
		qcur_bind_text(&c, 1, key);
		if (qcur_step(&c))
			*t = qcur_int(&c, 0);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

/* The trace's last time, where unterminated slices end. */
static int area_trace_end(sqlite3 *db, int64_t *end, struct qry_error *err)
{
	return area_trace_time(db, "end_ns", 0, end, err);
}

int qry_area_whole(sqlite3 *db, int64_t start, int64_t end, int *whole, struct qry_error *err)
{
	int64_t first, last;
	int rc;

	*whole = 0;
	if ((rc = area_trace_time(db, "start_ns", INT64_MIN, &first, err)) != QRY_OK ||
	    (rc = area_trace_time(db, "end_ns", INT64_MAX, &last, err)) != QRY_OK)
		return rc;
	/* every slice lies in [first, last]: each figure is then its whole
	 * wall time, an unterminated one running to last */
	*whole = qry_area_stored && start <= first && end >= last && start <= end;
	if (*whole) { /* stored, that is: a growing trace's commit has none until a pause or its end */
		struct qcur c;

		rc = qcur_open(&c, db,
			       "SELECT EXISTS (SELECT 1 FROM track_names) OR NOT EXISTS (SELECT 1 FROM slices)", err);
		*whole = rc == QRY_OK && qcur_step(&c) && qcur_int(&c, 0) != 0;
		rc = qcur_done(rc, qcur_close(&c, 0), err);
	}
	return rc;
}

/* The cursors of one scan and what it reports to. A read error stays in
 * its cursor and stops the scan, as running out of memory does (oom). */
struct scan {
	struct qcur depths;      /* depth, max_dur of a track's depths */
	struct qcur probe;       /* ts of a slice by id */
	struct qcur range;       /* the slices of an id range */
	struct qcur ext;         /* extents (QEXT_SQL) */
	struct qextents e;       /* where the current depth's slices lie */
	int64_t start, end, trace_end;
	qry_area_visit fn;
	void *ctx;
	struct tagged prev, cur; /* the last depth's slices and this one's */
	size_t at;               /* where in prev the last parent was found */
	struct qry_area_slice batch[QRY_AREA_BATCH]; /* for the visitor */
	int32_t tag[QRY_AREA_BATCH];
	size_t nbatch;
	int oom;                 /* out of memory (or a visitor's tag below -1): the scan stopped */
};

/* Whether the scan must stop: out of memory, or a read failed. */
static int scan_failed(const struct scan *sc)
{
	return sc->oom || sc->depths.err || sc->probe.err || sc->range.err || sc->ext.err;
}

/* Hands the batch to the visitor and keeps the tags it gave; sets oom when
 * they cannot be kept. */
static void scan_flush(struct scan *sc)
{
	size_t i;

	if (sc->nbatch == 0)
		return;
	if (sc->fn(sc->ctx, sc->batch, sc->nbatch, sc->tag) != 0) {
		sc->oom = 1;
		return;
	}
	for (i = 0; i < sc->nbatch; i++)
		if (sc->tag[i] < -1 || tagged_push(&sc->cur, sc->batch[i].id, sc->tag[i]) != 0) {
			sc->oom = 1;
			return;
		}
	sc->nbatch = 0;
}

/* The first ordinal in [lo, hi] whose ts >= t (ts never decreases over a
 * depth's ordinals), hi + 1 if none. A slice that cannot be read, or is
 * not there (its extent names it), is left as the probe's error. */
static int64_t first_at(struct scan *sc, int64_t lo, int64_t hi, int64_t t)
{
	int64_t a = lo, b = hi + 1;

	while (a < b && !sc->probe.err) {
		int64_t mid = a + (b - a) / 2;

		qcur_bind(&sc->probe, 1, qext_id(&sc->e, mid));
		if (qcur_step_required(&sc->probe) && qcur_int(&sc->probe, 0) < t)
			a = mid + 1;
		else
			b = mid;
		qcur_reset(&sc->probe);
	}
	return a;
}

/* Visits the slices with ids [lo, hi] (in one extent) that overlap the range. */
static void scan_ids(struct scan *sc, int64_t track, int64_t depth, int64_t lo, int64_t hi)
{
	qcur_bind(&sc->range, 1, lo);
	qcur_bind(&sc->range, 2, hi);
	while (!sc->oom && qcur_step(&sc->range)) {
		struct qry_area_slice *s = &sc->batch[sc->nbatch];
		int64_t e, a, b, parent;

		/* overlapping [start, end]; an unterminated slice runs to the end
		 * (tested here rather than in the statement: a fifth less work) */
		s->ts = qcur_int(&sc->range, 1);
		s->dur = qcur_int(&sc->range, 2);
		if (!tracedb_slice_meets(s->ts, s->dur, sc->start, sc->end))
			continue;
		s->id = qcur_int(&sc->range, 0);
		s->name_id = qcur_int(&sc->range, 3);
		s->depth = depth;
		s->track = track;
		e = s->dur < 0 ? sc->trace_end : tracedb_slice_end(s->ts, s->dur);
		a = s->ts > sc->start ? s->ts : sc->start;
		b = e < sc->end ? e : sc->end;
		s->wall = tracedb_span(a, b);
		parent = qcur_int(&sc->range, 4); /* 0 for NULL: asked then only */
		s->parent_tag = parent == 0 && qcur_is_null(&sc->range, 4) ? QRY_AREA_ROOT
									: tagged_find(&sc->prev, parent, &sc->at);
		if (++sc->nbatch == QRY_AREA_BATCH)
			scan_flush(sc);
	}
	qcur_reset(&sc->range);
}

/* Visits the slices of one depth overlapping the range: only those
 * starting in [start - max_dur, end] can. */
static void scan_depth(struct scan *sc, int64_t track, int64_t depth, int64_t max_dur)
{
	int64_t from = sc->start > INT64_MIN + max_dur ? sc->start - max_dur : INT64_MIN;
	int64_t lo, past, last, a, b;

	if (qext_read(&sc->e, &sc->ext, track, depth) != 0) {
		sc->oom = 1;
		return;
	}
	last = sc->e.rows - 1;
	lo = first_at(sc, 0, last, from);
	past = sc->end == INT64_MAX ? last + 1 : first_at(sc, lo, last, sc->end + 1);
	sc->at = 0;
	while (!scan_failed(sc) && qext_piece(&sc->e, &lo, past - 1, &a, &b))
		scan_ids(sc, track, depth, a, b);
	if (!scan_failed(sc))
		scan_flush(sc); /* the next depth needs this one's tags */
}

/* Every depth of the track, parents' depth first. */
static void scan_track(struct scan *sc, int64_t track)
{
	int64_t last_depth = -2;

	qcur_bind(&sc->depths, 1, track);
	while (!scan_failed(sc) && qcur_step(&sc->depths)) {
		int64_t depth = qcur_int(&sc->depths, 0);
		struct tagged tmp = sc->prev;

		sc->prev = sc->cur;
		sc->cur = tmp;
		sc->cur.n = 0;
		if (depth != last_depth + 1)
			sc->prev.n = 0; /* a gap in depths: no parents known */
		last_depth = depth;
		scan_depth(sc, track, depth, qcur_int(&sc->depths, 1));
	}
	qcur_reset(&sc->depths);
	sc->prev.n = sc->cur.n = 0;
}

static int scan_open(struct scan *sc, sqlite3 *db, struct qry_error *err)
{
	static const char depths[] =
		"SELECT depth, max_dur FROM track_depths WHERE track_id = ? ORDER BY depth";
	static const char probe[] = "SELECT ts FROM slices WHERE id = ?";
	static const char range[] = "SELECT id, ts, dur, name_id, parent_id FROM slices WHERE id BETWEEN ?1 AND ?2 "
				    "ORDER BY id";

	if (qcur_open(&sc->depths, db, depths, err) != QRY_OK || qcur_open(&sc->probe, db, probe, err) != QRY_OK ||
	    qcur_open(&sc->range, db, range, err) != QRY_OK || qcur_open(&sc->ext, db, QEXT_SQL, err) != QRY_OK)
		return err->code;
	return QRY_OK;
}

/* Returns first, or the first error of the scan's cursors. */
static int scan_close(struct scan *sc, int first)
{
	first = qcur_close(&sc->depths, first);
	first = qcur_close(&sc->probe, first);
	first = qcur_close(&sc->range, first);
	first = qcur_close(&sc->ext, first);
	qext_free(&sc->e);
	tagged_free(&sc->prev);
	tagged_free(&sc->cur);
	return first;
}

int qry_area_scan(sqlite3 *db, const int64_t *tracks, size_t ntracks, int64_t start, int64_t end,
		  qry_area_visit fn, void *ctx, struct qry_error *err)
{
	struct scan sc = { 0 };
	size_t i;
	int rc;

	if (end < start)
		return qry_fail(err, QRY_EINVAL, "the range ends before it starts");
	sc.start = start;
	sc.end = end;
	sc.fn = fn;
	sc.ctx = ctx;
	if ((rc = area_trace_end(db, &sc.trace_end, err)) == QRY_OK)
		rc = scan_open(&sc, db, err);
	for (i = 0; i < ntracks && rc == QRY_OK && !scan_failed(&sc); i++)
		scan_track(&sc, tracks[i]);
	if (rc == QRY_OK && sc.oom)
		rc = qry_fail(err, QRY_ENOMEM, "out of memory while reading the selection");
	return qcur_done(rc, scan_close(&sc, 0), err);
}

/* ---- the per-name table -------------------------------------------------- */

struct name_row {
	int64_t name_id;
	int64_t count, wall, self, max;
};

struct area_ctx {
	struct name_row *rows; /* open addressing on name_id */
	size_t cap, used;
	int64_t name_filter; /* -1: every name */
	struct jbuf *list;   /* the slices of name_filter, when listing */
	uint32_t limit, listed;
	int truncated, oom;
};

static struct name_row *row_get(struct area_ctx *a, int64_t name_id)
{
	size_t i;

	if (a->used * 2 >= a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256, j;
		struct name_row *rows = calloc(cap, sizeof(*rows));

		if (rows == NULL)
			return NULL;
		for (j = 0; j < a->cap; j++) {
			if (a->rows[j].count == 0 && a->rows[j].name_id == 0)
				continue;
			for (i = (size_t)a->rows[j].name_id * 2654435761u & (cap - 1); rows[i].count || rows[i].name_id;
			     i = (i + 1) & (cap - 1))
				;
			rows[i] = a->rows[j];
		}
		free(a->rows);
		a->rows = rows;
		a->cap = cap;
	}
	for (i = (size_t)name_id * 2654435761u & (a->cap - 1); a->rows[i].count || a->rows[i].name_id;
	     i = (i + 1) & (a->cap - 1)) {
		if (a->rows[i].name_id == name_id)
			return &a->rows[i];
	}
	a->rows[i].name_id = name_id;
	a->used++;
	return &a->rows[i];
}

/* Tags are the name rows' name ids, which fit: string ids are row numbers. */
static int32_t area_slice(void *ctx, const struct qry_area_slice *s)
{
	struct area_ctx *a = ctx;
	struct name_row *r;

	if (a->list != NULL) {
		if (s->name_id == a->name_filter) {
			if (a->listed == a->limit) {
				a->truncated = 1;
			} else {
				a->listed++;
				jb_obj(a->list);
				jb_key(a->list, "id");
				jb_i64(a->list, s->id);
				jb_key(a->list, "track_id");
				jb_i64(a->list, s->track);
				jb_key(a->list, "ts");
				jb_i64(a->list, s->ts);
				jb_key(a->list, "dur");
				jb_i64(a->list, s->dur);
				jb_key(a->list, "depth");
				jb_i64(a->list, s->depth);
				jb_key(a->list, "wall");
				jb_i64(a->list, s->wall);
				jb_obj_end(a->list);
			}
		}
		return 0;
	}
	if (s->parent_tag >= 0) {
		struct name_row *p = row_get(a, s->parent_tag);

		if (p == NULL)
			return -2;
		p->self = tracedb_wrap_sub(p->self, s->wall);
	}
	if ((r = row_get(a, s->name_id)) == NULL)
		return -2;
	r->count++;
	r->wall = tracedb_wrap_add(r->wall, s->wall);
	r->self = tracedb_wrap_add(r->self, s->wall);
	if (s->wall > r->max)
		r->max = s->wall;
	return s->name_id > INT32_MAX ? -1 : (int32_t)s->name_id;
}

static int area_visit(void *ctx, const struct qry_area_slice *s, size_t n, int32_t *tag)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((tag[i] = area_slice(ctx, &s[i])) == -2)
			return -1;
	return 0;
}

/* Adds the tracks' stored rows per name (track_names): what area_visit
 * makes of their slices over the whole trace. */
static int area_stored(sqlite3 *db, struct area_ctx *a, const int64_t *tracks, size_t ntracks, struct qry_error *err)
{
	struct qcur c;
	size_t i;
	int rc = qcur_open(&c, db, "SELECT name_id, count, wall_ns, self_ns, max_ns FROM track_names WHERE track_id = ?",
			   err);

	for (i = 0; i < ntracks && rc == QRY_OK && !c.err; i++) {
		qcur_bind(&c, 1, tracks[i]);
		while (rc == QRY_OK && qcur_step(&c)) {
			struct name_row *r = row_get(a, qcur_int(&c, 0));

			if (r == NULL) {
				rc = qry_fail(err, QRY_ENOMEM, "out of memory while reading the selection");
				break;
			}
			r->count += qcur_int(&c, 1);
			r->wall = tracedb_wrap_add(r->wall, qcur_int(&c, 2));
			r->self = tracedb_wrap_add(r->self, qcur_int(&c, 3));
			if (qcur_int(&c, 4) > r->max)
				r->max = qcur_int(&c, 4);
		}
		qcur_reset(&c);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

static int row_cmp(const void *x, const void *y)
{
	const struct name_row *a = x, *b = y;

	if (a->wall != b->wall)
		return a->wall > b->wall ? -1 : 1;
	return a->name_id < b->name_id ? -1 : a->name_id > b->name_id;
}

static int put_names(sqlite3 *db, struct area_ctx *a, struct jbuf *out, struct qry_error *err)
{
	struct qcur c;
	size_t i, n = 0;

	for (i = 0; i < a->cap; i++)
		if (a->rows[i].count > 0)
			a->rows[n++] = a->rows[i];
	if (n > 1)
		qsort(a->rows, n, sizeof(*a->rows), row_cmp);
	if (qcur_open(&c, db, "SELECT str FROM strings WHERE id = ?", err) != QRY_OK)
		return err->code;
	jb_obj(out);
	jb_key(out, "names");
	jb_arr(out);
	for (i = 0; i < n && i < a->limit && !c.err; i++) {
		const struct name_row *r = &a->rows[i];

		qcur_bind(&c, 1, r->name_id);
		jb_obj(out);
		jb_key(out, "name");
		jb_str(out, qcur_step(&c) ? qcur_text(&c, 0) : "");
		qcur_reset(&c);
		jb_key(out, "count");
		jb_i64(out, r->count);
		jb_key(out, "wall");
		jb_i64(out, r->wall);
		jb_key(out, "self");
		jb_i64(out, r->self);
		jb_key(out, "avg");
		jb_dbl(out, (double)r->wall / (double)r->count);
		jb_key(out, "max");
		jb_i64(out, r->max);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, n > a->limit);
	jb_obj_end(out);
	return qcur_done(QRY_OK, qcur_close(&c, 0), err);
}

/* The name's string id, or QRY_ENOTFOUND-free -1 when no slice has it. */
static int name_lookup(sqlite3 *db, const char *name, int64_t *id, struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, db, "SELECT id FROM strings WHERE str = ? LIMIT 1", err);

	*id = -1;
	if (rc == QRY_OK) {
		qcur_bind_text(&c, 1, name);
		if (qcur_step(&c))
			*id = qcur_int(&c, 0);
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

int qry_area(sqlite3 *db, const int64_t *tracks, size_t ntracks, const struct qry_window *w, const char *name,
	     struct jbuf *out, struct qry_error *err)
{
	struct area_ctx a = { 0 };
	int rc, whole;

	a.limit = w->limit;
	if (name != NULL) {
		if ((rc = name_lookup(db, name, &a.name_filter, err)) != QRY_OK)
			return rc;
		a.list = out;
		jb_obj(out);
		jb_key(out, "slices");
		jb_arr(out);
		if (a.name_filter >= 0 &&
		    (rc = qry_area_scan(db, tracks, ntracks, w->start, w->end, area_visit, &a, err)) != QRY_OK)
			return rc;
		jb_arr_end(out);
		jb_key(out, "truncated");
		jb_bool(out, a.truncated);
		jb_obj_end(out);
		return QRY_OK;
	}
	if ((rc = qry_area_whole(db, w->start, w->end, &whole, err)) == QRY_OK)
		rc = whole ? area_stored(db, &a, tracks, ntracks, err)
			   : qry_area_scan(db, tracks, ntracks, w->start, w->end, area_visit, &a, err);
	if (rc == QRY_OK)
		rc = put_names(db, &a, out, err);
	free(a.rows);
	return rc;
}
