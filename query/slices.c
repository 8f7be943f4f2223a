/*
 * /slices: the slices of one track in a window, at a zoom (docs/API.md).
 *
 * Each depth of the track is one group (window.h): its rows in the window
 * are found by binary search, then read as id ranges, or, zoomed out,
 * through the level-of-detail records, which stand for runs of slices
 * under a pixel. Each depth's items are collected, folded per pixel column
 * and merged into the reply's, in (ts, depth, id) order, keeping the first
 * `limit`: a reply cut at its limit holds the first items in that order,
 * not those of the shallowest depths. They are written as rows or, with
 * format=columns, as columns over one string table.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "window.h"

/* One item of the reply: a slice, or a summary of slices under a pixel. */
struct sitem {
	int64_t id, ts, dur;
	int64_t name, cat;
	int64_t merged; /* 0 for a slice; the number of slices a summary stands for */
	int64_t ldur;   /* the dur of the slice id names: a summary's longest */
	uint32_t depth;
};

struct slist {
	struct sitem *v;
	size_t len, cap;
	size_t limit;  /* items kept; more set truncated */
	int truncated;
	int oom;
};

static struct sitem *slist_push(struct slist *l)
{
	if (l->len >= l->limit) {
		l->truncated = 1;
		return NULL;
	}
	if (l->len == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct sitem *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL) {
			l->oom = 1;
			return NULL;
		}
		l->v = v;
		l->cap = cap;
	}
	return &l->v[l->len++];
}

/* One (track, depth): the range of its slices (ordinals) that overlap the
 * window. */
struct depth_run {
	uint32_t depth;
	int disjoint;         /* each slice ends before the next starts */
	int64_t max_dur;      /* the longest slice of the depth */
	int64_t lo, hi;       /* ordinals that can overlap the window; empty when hi < lo */
	uint64_t levels;      /* the lod levels stored, a bit each */
	struct qextents ext;  /* ordinals to ids */
	struct qmarks marks;  /* where the searches by time start */
};

struct slice_ctx {
	struct qprobe probe;  /* ts of a slice by ordinal */
	struct qcur raw;      /* slices by id range */
	struct qcur lod;      /* lod records (QLOD_SQL) */
	struct slist items;
	struct sitem *merge;  /* scratch of merge_segments, merge_cap items */
	size_t merge_cap;
	/* the items' segments in (ts, depth, id) order, each from seg[k]: the
	 * reply so far, then the depths not yet merged into it (nseg of them);
	 * and merge_segments' scratch, as many as the depths plus one */
	size_t *seg, *seg_at, *seg_end;
	struct seg_head *seg_heap;
	size_t nseg;
	/* once the reply holds `limit` items: their keys, a max-heap (top_take) */
	struct seg_head *top;
	/* once the reply holds `limit` items, the ts of its last: an item
	 * starting later cannot enter it; INT64_MAX until then */
	int64_t cutoff;
	/* the depth being read (take_item): its first item's index, whether
	 * its short items are folded as they come (not exact), and the key
	 * (ts, id) of the item that came last, while they come in order */
	size_t depth_first;
	int fold, in_order;
	int64_t prev_ts, prev_id;
	const struct qry_window *w;
	int64_t track;
	struct depth_run *runs; /* one per depth, by depth */
	size_t nruns;
};

/* The first error any of the context's cursors met, 0 while none. */
static int slices_failed(const struct slice_ctx *c)
{
	return c->probe.cur.err ? c->probe.cur.err : c->raw.err ? c->raw.err : c->lod.err;
}

/* Whether the track exists: 1, or 0; a read error goes to *failed. */
static int tracks_has(sqlite3 *db, int64_t track, int *failed)
{
	struct qcur c;
	struct qry_error ignored;
	int rc = 0;

	if (qcur_open(&c, db, "SELECT 1 FROM tracks WHERE id = ?", &ignored) == QRY_OK) {
		qcur_bind(&c, 1, track);
		rc = qcur_step(&c);
	}
	*failed = qcur_close(&c, *failed);
	return rc;
}

static int take_item(struct slice_ctx *c, const struct sitem *x);

/* The slices with ids [lo, hi], which lie in one extent. */
static void raw_slice_ids(struct slice_ctx *c, int64_t lo, int64_t hi)
{
	struct sitem x;

	qcur_bind(&c->raw, 1, lo);
	qcur_bind(&c->raw, 2, hi);
	while (qcur_step(&c->raw)) {
		int64_t ts = qcur_int(&c->raw, 1), dur = qcur_int(&c->raw, 2);

		if (dur >= 0 && ts + dur < c->w->start)
			continue; /* ended before the window (rows that need not be disjoint) */
		x.id = qcur_int(&c->raw, 0);
		x.ts = ts;
		x.dur = dur;
		x.depth = (uint32_t)qcur_int(&c->raw, 3);
		x.name = qcur_int(&c->raw, 4);
		x.cat = qcur_int(&c->raw, 5);
		x.merged = 0;
		x.ldur = dur;
		if (take_item(c, &x) != 0)
			break;
	}
	qcur_reset(&c->raw);
}

/* The slices [lo, hi] (ordinals) of one depth, as they are. */
static void raw_slices(struct slice_ctx *c, const struct depth_run *d, int64_t lo, int64_t hi)
{
	int64_t a, b;

	while (!c->items.truncated && !c->items.oom && qext_piece(&d->ext, &lo, hi, &a, &b))
		raw_slice_ids(c, a, b);
}

/* A group of slices under a pixel as one summary, named after its longest. */
static void summary_item(struct slice_ctx *c, const struct qlod_rec *r, const struct depth_run *d)
{
	struct sitem x;
	int64_t start = (int64_t)r->v[LODW_START], end = (int64_t)r->v[LODW_END];
	int64_t longest = (int64_t)r->v[LODW_LONGEST];

	if (longest < 0 || longest >= d->ext.rows) {
		qcur_fail(&c->lod, SQLITE_CORRUPT); /* a record naming a row that is not there */
		return;
	}
	x.id = qext_id(&d->ext, longest);
	x.ts = start;
	x.dur = end > start ? end - start : 0;
	x.depth = d->depth;
	x.name = (int64_t)(uint32_t)r->v[LODW_NAMES];
	x.cat = (int64_t)(r->v[LODW_NAMES] >> 32);
	x.merged = qlod_last(r) - qlod_first(r) + 1;
	x.ldur = (int64_t)r->v[LODW_LONGEST_DUR];
	take_item(c, &x);
}

/* Rows [*lo, *hi] of a depth held back (lod_slices) are read; none then. */
static void raw_flush(struct slice_ctx *c, const struct depth_run *d, int64_t *lo, int64_t *hi)
{
	if (*hi >= *lo)
		raw_slices(c, d, *lo, *hi);
	*lo = 0;
	*hi = -1;
}

/* Rows [a, b] of a depth to read after those held back, [*lo, *hi]: held
 * back with them when they follow on, else after reading those. */
static void raw_hold(struct slice_ctx *c, const struct depth_run *d, int64_t a, int64_t b, int64_t *lo, int64_t *hi)
{
	if (b < a)
		return;
	if (*hi >= *lo && a == *hi + 1) {
		*hi = b;
		return;
	}
	raw_flush(c, d, lo, hi);
	*lo = a;
	*hi = b;
}

/* The slices [lo, hi] of one depth: summaries where a group allows, rows
 * elsewhere, in ordinal order. Rows that follow on from record to record
 * (slices a pixel long or more, zoomed out a little: thousands of records
 * of a row or two) are read in one query, not one a record. */
static void lod_slices(struct slice_ctx *c, const struct depth_run *d, int level)
{
	int64_t cur = d->lo, lo = 0, hi = -1; /* rows [lo, hi] held back */
	struct qlod_iter it;
	struct qlod_rec rec;

	c->probe.ext = &d->ext;
	qlod_start(&it, &c->lod, c->track, d->depth, level, qprobe_ts(&c->probe, d->lo, NULL) >> level,
		   c->w->end >> level);
	while (qlod_next(&it, &rec)) {
		int64_t a = qlod_first(&rec) > cur ? qlod_first(&rec) : cur;
		int64_t b = qlod_last(&rec) < d->hi ? qlod_last(&rec) : d->hi;

		if (c->items.truncated || qlod_first(&rec) > d->hi) {
			qlod_stop(&it);
			break;
		}
		if (qlod_last(&rec) < cur)
			continue;
		raw_hold(c, d, cur, a - 1, &lo, &hi);
		if ((int64_t)rec.v[LODW_START] > c->cutoff)
			raw_flush(c, d, &lo, &hi); /* the reply is full before this record: cut it as before */
		if (qlod_summarises(&rec, cur, d->hi, c->w->resolution)) {
			raw_flush(c, d, &lo, &hi);
			summary_item(c, &rec, d);
		} else {
			raw_hold(c, d, a, b, &lo, &hi);
		}
		cur = b + 1;
	}
	raw_hold(c, d, cur, d->hi, &lo, &hi);
	raw_flush(c, d, &lo, &hi);
}

/* The reply's order, (ts, depth, id): whether a comes before b, written
 * here alone, for items (sitem_cmp) and for the keys the merges' heaps
 * hold (head_before). */
static int order_before(int64_t ts_a, uint32_t depth_a, int64_t id_a, int64_t ts_b, uint32_t depth_b, int64_t id_b)
{
	if (ts_a != ts_b)
		return ts_a < ts_b;
	if (depth_a != depth_b)
		return depth_a < depth_b;
	return id_a < id_b;
}

static int sitem_cmp(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (order_before(x->ts, x->depth, x->id, y->ts, y->depth, y->id))
		return -1;
	return order_before(y->ts, y->depth, y->id, x->ts, x->depth, x->id);
}

static int sitem_depth_cmp(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Whether an item is short: a summary, or a slice under a pixel that
 * ended (fold_columns). */
static int item_short(const struct sitem *x, int64_t resolution)
{
	return x->merged > 0 || (x->dur >= 0 && x->dur < resolution);
}

/* Whether short items agg and x (after it) fold into one summary: one
 * depth, x starting in the pixel column agg starts in. */
static int item_folds(const struct sitem *agg, const struct sitem *x, int64_t resolution)
{
	return agg->depth == x->depth && item_short(agg, resolution) && item_short(x, resolution) &&
	       agg->ts / resolution == x->ts / resolution;
}

/* Folds x into the summary agg: the slices of both, up to the later end,
 * named after the longest slice of both (the first of them on a tie, as
 * the level of detail's records are). */
static void fold_into(struct sitem *agg, const struct sitem *x)
{
	int64_t end = x->ts + (x->dur > 0 ? x->dur : 0);

	agg->merged = (agg->merged ? agg->merged : 1) + (x->merged ? x->merged : 1);
	if (end > agg->ts + agg->dur)
		agg->dur = end - agg->ts;
	if (x->ldur > agg->ldur) {
		agg->id = x->id;
		agg->name = x->name;
		agg->cat = x->cat;
		agg->ldur = x->ldur;
	}
}

/*
 * Folds the short items (slices under a pixel and summaries) that start in
 * the same pixel column of one depth, with no long slice between them, into
 * one summary: the level of detail read may be finer than a pixel, and rows
 * fall between its groups. Slices a pixel long or more, and those that
 * never ended, stay as they are. take_item folds items that come in order
 * already; this folds the depths whose items did not.
 */
static size_t fold_columns(struct sitem *v, size_t len, int64_t resolution)
{
	struct sitem *agg = NULL;
	size_t i, out = 0;

	for (i = 1; i < len && sitem_depth_cmp(&v[i - 1], &v[i]) <= 0; i++)
		;
	if (i < len) /* a depth's items come in ordinal order: mostly sorted already */
		qsort(v, len, sizeof(*v), sitem_depth_cmp);
	for (i = 0; i < len; i++) {
		struct sitem x = v[i];

		if (!item_short(&x, resolution)) {
			v[out++] = x;
			agg = NULL;
			continue;
		}
		if (agg && item_folds(agg, &x, resolution)) {
			fold_into(agg, &x);
			continue;
		}
		v[out] = x;
		agg = &v[out++];
	}
	return out;
}

/*
 * The depth's next item x, in ordinal order. When the reply is not exact
 * and x folds into the item before it (fold_columns' rule), it does so at
 * once: a summary is whole however far the depth is read, and what fills
 * the reply is items, not rows. Else x is added, unless it starts after
 * the cutoff (the reply is full before it) or the depth alone holds
 * w->limit items: then c->items.truncated is set and the depth is read no
 * further. Returns 0, or -1 when reading the depth stops (truncated, or
 * out of memory). Items that come out of (ts, id) order are folded by
 * fold_columns instead, from the first such one on.
 */
static int take_item(struct slice_ctx *c, const struct sitem *x)
{
	struct sitem *it;

	if (c->fold && c->in_order && c->items.len > c->depth_first) {
		if (x->ts < c->prev_ts || (x->ts == c->prev_ts && x->id < c->prev_id))
			c->in_order = 0;
		else if (item_folds(&c->items.v[c->items.len - 1], x, c->w->resolution)) {
			fold_into(&c->items.v[c->items.len - 1], x);
			c->prev_ts = x->ts;
			c->prev_id = x->id;
			return 0;
		}
	}
	if (x->ts > c->cutoff) {
		c->items.truncated = 1; /* after the last item the reply can hold */
		return -1;
	}
	if ((it = slist_push(&c->items)) == NULL)
		return -1;
	*it = *x;
	c->prev_ts = x->ts;
	c->prev_id = x->id;
	return 0;
}

/* A segment's next item as merge_segments' heap holds it: its sort key
 * (sitem_cmp's) beside it, so that sifting reads the heap alone, not an
 * item in every segment (a zoomed-out reply merges a hundred depths). */
struct seg_head {
	int64_t ts, id;
	uint32_t depth;
	uint32_t seg;
};

static void head_set(struct seg_head *h, const struct sitem *x, size_t seg)
{
	h->ts = x->ts;
	h->id = x->id;
	h->depth = x->depth;
	h->seg = (uint32_t)seg;
}

/* Whether a's item comes before b's (sitem_cmp). */
static int head_before(const struct seg_head *a, const struct seg_head *b)
{
	return order_before(a->ts, a->depth, a->id, b->ts, b->depth, b->id);
}

/* Restores the heap h[0..n) from i down: a min-heap, the first item on
 * top (merge_segments), or with last_first a max-heap, the last item on
 * top (top_take). */
static inline void heads_down(struct seg_head *h, size_t n, size_t i, int last_first)
{
	struct seg_head x = h[i];

	for (;;) {
		size_t m = 2 * i + 1;

		if (m >= n)
			break;
		if (m + 1 < n && (last_first ? head_before(&h[m], &h[m + 1]) : head_before(&h[m + 1], &h[m])))
			m++;
		if (last_first ? !head_before(&x, &h[m]) : !head_before(&h[m], &x))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = x;
}

/*
 * Merges the items collected so far, c->items.v[0..len) in segments that
 * each begin at c->seg[k] (the reply so far, then a depth's items each)
 * and are each in (ts, depth, id) order, into one in that order, and keeps
 * the first w->limit; returns whether any was left out. One merge of all
 * the depths, not one per depth: a zoomed-out reply over many depths was
 * copied whole once per depth. Out of memory sets c->items.oom.
 */
static int merge_segments(struct slice_ctx *c)
{
	struct sitem *v = c->items.v, *m;
	size_t len = c->items.len, limit = c->w->limit, n = 0, out = 0, k;
	size_t *at = c->seg_at, *end = c->seg_end;
	struct seg_head *h = c->seg_heap;

	for (k = 0; k < c->nseg; k++) { /* the segments not empty */
		at[n] = c->seg[k];
		end[n] = k + 1 < c->nseg ? c->seg[k + 1] : len;
		if (at[n] < end[n])
			n++;
	}
	c->nseg = 1;
	c->seg[0] = 0;
	if (n <= 1) { /* nothing to interleave */
		c->items.len = len < limit ? len : limit;
		return len > limit;
	}
	if (c->merge_cap < len) {
		free(c->merge); /* nothing in it to keep */
		if ((c->merge = malloc(len * sizeof(*c->merge))) == NULL) {
			c->merge_cap = 0;
			c->items.oom = 1;
			return 0;
		}
		c->merge_cap = len;
	}
	m = c->merge;
	if (n == 2) { /* the reply and one depth: side by side */
		size_t i = at[0], j = at[1];

		while (out < limit && (i < end[0] || j < end[1]))
			m[out++] = j == end[1] || (i < end[0] && sitem_cmp(&v[i], &v[j]) <= 0) ? v[i++] : v[j++];
		n = i < end[0] || j < end[1];
	} else {
		for (k = 0; k < n; k++)
			head_set(&h[k], &v[at[k]], k);
		for (k = n / 2; k-- > 0;)
			heads_down(h, n, k, 0);
		while (out < limit && n > 0) {
			size_t s = h[0].seg;

			m[out++] = v[at[s]++];
			if (at[s] == end[s])
				h[0] = h[--n];
			else
				head_set(&h[0], &v[at[s]], s);
			heads_down(h, n, 0, 0);
		}
	}
	/* the merged items become the reply's, the reply's buffer the scratch */
	c->merge = v;
	c->items.v = m;
	k = c->items.cap;
	c->items.cap = c->merge_cap;
	c->merge_cap = k;
	c->items.len = out;
	return n > 0;
}

/* The reply, v[0..limit), is full: from now on c->top is a max-heap of its
 * items' keys (each naming its item's place, seg), the last item on top.
 * Returns -1 when out of memory. */
static int top_start(struct slice_ctx *c)
{
	size_t limit = c->w->limit, i;

	if ((c->top = malloc(limit * sizeof(*c->top))) == NULL)
		return -1;
	for (i = 0; i < limit; i++)
		head_set(&c->top[i], &c->items.v[i], i);
	for (i = limit / 2; i-- > 0;)
		heads_down(c->top, limit, i, 1);
	c->cutoff = c->top[0].ts;
	return 0;
}

/*
 * A full reply, v[0..limit) with its keys' max-heap c->top, takes one more
 * depth's items, v[limit..len) in (ts, id) order: each that comes before
 * the reply's last takes its place, and the rest are left out. The reply
 * is then the first `limit` of both, as a merge would give, without
 * copying it whole for every depth; the heap sifts keys, not items.
 * Returns whether any item was left out.
 */
static int top_take(struct slice_ctx *c)
{
	struct sitem *v = c->items.v;
	size_t limit = c->w->limit, i;
	struct seg_head key;

	for (i = limit; i < c->items.len; i++) {
		head_set(&key, &v[i], c->top[0].seg);
		if (!head_before(&key, &c->top[0]))
			break;
		v[key.seg] = v[i];
		c->top[0] = key;
		heads_down(c->top, limit, 0, 1);
	}
	i = i > limit || i < c->items.len; /* one replaced, or one did not enter */
	c->items.len = limit;
	c->cutoff = c->top[0].ts;
	return (int)i;
}

/* The index of string id in the reply's string table, adding it; -1 when
 * out of memory. The table is open addressing over (id + 1), 0 = empty. */
struct strtab {
	int64_t *key;
	uint32_t *idx;
	size_t mask, n;
	int64_t *order; /* ids by index */
};

static int64_t strtab_index(struct strtab *t, int64_t id)
{
	size_t h = ((uint64_t)id * 0x9e3779b97f4a7c15u) >> 20 & t->mask;

	while (t->key[h] != 0 && t->key[h] != id + 1)
		h = (h + 1) & t->mask;
	if (t->key[h] == 0) {
		t->key[h] = id + 1;
		t->idx[h] = (uint32_t)t->n;
		t->order[t->n++] = id;
	}
	return t->idx[h];
}


/*
 * The columnar form: every column an array, names and categories indexes
 * into one "strings" array (each string once). Same items, same order.
 */
static int put_slice_columns(struct slice_ctx *c, struct qnames *n, struct jbuf *out)
{
	static const char *const cols[] = { "id", "ts", "dur", "depth", "name", "category", "merged" };
	size_t len = c->items.len, cap = 64, i, k;
	struct strtab t = { 0 };
	int64_t *sidx;

	while (cap < 4 * len + 4)
		cap *= 2;
	t.key = calloc(cap, sizeof(*t.key));
	t.idx = calloc(cap, sizeof(*t.idx));
	t.order = calloc(2 * len + 1, sizeof(*t.order));
	sidx = calloc(2 * len + 1, sizeof(*sidx));
	t.mask = cap - 1;
	if (t.key == NULL || t.idx == NULL || t.order == NULL || sidx == NULL)
		goto out_free; /* the caller writes the row form instead */
	for (i = 0; i < len; i++) {
		sidx[2 * i] = strtab_index(&t, c->items.v[i].name);
		sidx[2 * i + 1] = strtab_index(&t, c->items.v[i].cat);
	}
	jb_obj(out);
	jb_key(out, "columns");
	jb_bool(out, 1);
	jb_key(out, "strings");
	jb_arr(out);
	for (i = 0; i < t.n; i++)
		qnames_put(n, out, t.order[i]);
	jb_arr_end(out);
	for (k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
		jb_key(out, cols[k]);
		jb_arr(out);
		for (i = 0; i < len; i++) {
			const struct sitem *it = &c->items.v[i];
			int64_t v = k == 0 ? it->id : k == 1 ? it->ts : k == 2 ? it->dur : k == 3 ? (int64_t)it->depth
				  : k == 4 ? sidx[2 * i] : k == 5 ? sidx[2 * i + 1] : (int64_t)it->merged;

			jb_i64(out, v);
		}
		jb_arr_end(out);
	}
	jb_key(out, "truncated");
	jb_bool(out, c->items.truncated);
	jb_obj_end(out);
	cap = 0; /* written */
out_free:
	free(t.key);
	free(t.idx);
	free(t.order);
	free(sidx);
	return cap == 0 ? 0 : -1;
}

static void put_slices(struct slice_ctx *c, struct qnames *n, struct jbuf *out)
{
	size_t i;

	if (c->w->columns && put_slice_columns(c, n, out) == 0)
		return;
	/* about what a slice takes, so that a zoomed-out reply (thousands
	 * of slices) is not copied as it grows */
	jb_grow(out, c->items.len * 112);
	jb_obj(out);
	jb_key(out, "slices");
	jb_arr(out);
	for (i = 0; i < c->items.len; i++) {
		struct sitem *it = &c->items.v[i];

		jb_obj(out);
		JB_KEY(out, "id");
		jb_i64(out, it->id);
		JB_KEY(out, "ts");
		jb_i64(out, it->ts);
		JB_KEY(out, "dur");
		jb_i64(out, it->dur);
		JB_KEY(out, "depth");
		jb_i64(out, it->depth);
		JB_KEY(out, "name");
		qnames_put(n, out, it->name);
		JB_KEY(out, "category");
		qnames_put(n, out, it->cat);
		if (it->merged) {
			JB_KEY(out, "merged");
			jb_i64(out, it->merged);
		}
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, c->items.truncated);
	jb_obj_end(out);
}

static int slices_open(struct slice_ctx *c, sqlite3 *db, struct qry_error *err)
{
	if (qprobe_open(&c->probe, db, "slices", err) != QRY_OK ||
	    qcur_open(&c->raw, db, "SELECT id, ts, dur, depth, name_id, category_id FROM slices WHERE id BETWEEN ? AND ?",
		      err) != QRY_OK ||
	    qcur_open(&c->lod, db, QLOD_SQL, err) != QRY_OK)
		return err->code;
	return QRY_OK;
}

/* Returns first, or the first error of c's cursors. */
static int slices_close(struct slice_ctx *c, int first)
{
	size_t i;

	first = qprobe_close(&c->probe, first);
	first = qcur_close(&c->raw, first);
	first = qcur_close(&c->lod, first);
	free(c->items.v);
	free(c->merge);
	free(c->seg);
	free(c->seg_heap);
	free(c->top);
	for (i = 0; i < c->nruns; i++) {
		qext_free(&c->runs[i].ext);
		qmarks_free(&c->runs[i].marks);
	}
	free(c->runs);
	return first;
}

/* The depth_run of the row of d, a new one when the row starts a depth;
 * NULL when out of memory. Marks that do not decode are left as d's error
 * (a damaged database). */
static struct depth_run *depth_of(struct slice_ctx *c, struct qcur *d, struct depth_run *r, size_t *cap)
{
	uint32_t depth = (uint32_t)qcur_int(d, 0);

	if (r != NULL && r->depth == depth)
		return r;
	if (c->nruns == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct depth_run *v = realloc(c->runs, ncap * sizeof(*v));

		if (v == NULL)
			return NULL;
		c->runs = v;
		*cap = ncap;
	}
	r = &c->runs[c->nruns++];
	memset(r, 0, sizeof(*r));
	r->depth = depth;
	r->max_dur = qcur_int(d, 1);
	r->disjoint = (int)qcur_int(d, 2);
	r->levels = (uint64_t)qcur_int(d, 3);
	return qwin_marks(&r->marks, d, 8, qcur_int(d, 7)) == 0 ? r : NULL;
}

/* Reads the track's depths through d and the id range of each in the
 * window; sets *rows to the slices found. Returns 0, or -1 when out of
 * memory; damaged extents are left as d's error. */
static int read_depths(struct slice_ctx *c, struct qcur *d, int64_t *rows)
{
	size_t cap = 0, i;
	struct depth_run *r = NULL;
	int rc;

	*rows = 0;
	qcur_bind(d, 1, c->track);
	while (qcur_step(d)) {
		if ((r = depth_of(c, d, r, &cap)) == NULL)
			return -1;
		rc = qext_add(&r->ext, qcur_int(d, 4), qcur_int(d, 5), qcur_int(d, 6));
		if (rc == SQLITE_NOMEM)
			return -1;
		if (rc != SQLITE_DONE)
			qcur_fail(d, rc); /* damaged extents */
	}
	for (i = 0; i < c->nruns && !d->err && !slices_failed(c); i++) {
		r = &c->runs[i];
		if (r->marks.n > 0 && r->marks.rows != r->ext.rows) {
			qcur_fail(d, SQLITE_CORRUPT); /* the depth's count is not its extents' */
			break;
		}
		c->probe.ext = &r->ext;
		qwin_rows(&c->probe, &r->marks, 0, r->ext.rows - 1, c->w->start, c->w->end, r->disjoint, r->max_dur,
			  &r->lo, &r->hi);
		if (r->hi >= r->lo)
			*rows += r->hi - r->lo + 1;
	}
	return 0;
}

/* Collects the items of every depth, each folded per pixel column (when
 * the reply is not exact) and merged into the reply's first w->limit:
 * summaries only when the reply is not exact and the depth's slices are
 * disjoint. The depths are merged once, at the end, unless they hold
 * w->limit items first: the reply is then full, its last item bounds what
 * may still enter it (cutoff), and each later depth only displaces the
 * last items (top_take). Sets c->items.truncated when an item was left
 * out. */
static void collect(struct slice_ctx *c, int exact)
{
	size_t i, mid;
	int cut = 0, full = 0;

	c->cutoff = INT64_MAX;
	c->nseg = 1;
	if ((c->seg = malloc(3 * (c->nruns + 1) * sizeof(*c->seg))) == NULL ||
	    (c->seg_heap = malloc((c->nruns + 1) * sizeof(*c->seg_heap))) == NULL) {
		c->items.oom = 1;
		return;
	}
	c->seg[0] = 0;
	c->seg_at = c->seg + c->nruns + 1;
	c->seg_end = c->seg_at + c->nruns + 1;
	for (i = 0; i < c->nruns && !c->items.oom && !slices_failed(c); i++) {
		const struct depth_run *r = &c->runs[i];
		int level = exact || !r->disjoint ? -1 : qlod_level(c->w->resolution, r->levels);

		mid = c->items.len;
		c->items.limit = mid + c->w->limit; /* a depth alone may fill the reply */
		c->items.truncated = 0;
		c->depth_first = mid;
		c->fold = !exact;
		c->in_order = 1;
		if (level >= 0 && r->hi - r->lo >= 2)
			lod_slices(c, r, level);
		else
			raw_slices(c, r, r->lo, r->hi);
		cut |= c->items.truncated;
		if (!exact && c->items.len - mid > 1)
			c->items.len = mid + fold_columns(c->items.v + mid, c->items.len - mid, c->w->resolution);
		else if (c->items.len - mid > 1)
			qsort(c->items.v + mid, c->items.len - mid, sizeof(struct sitem), sitem_cmp);
		if (full) { /* the reply is full: a depth's items only displace its last */
			cut |= top_take(c);
			continue;
		}
		if (c->items.len > mid)
			c->seg[c->nseg++] = mid;
		if (c->items.len >= c->w->limit) {
			cut |= merge_segments(c);
			if (c->items.len == c->w->limit) {
				if (top_start(c) != 0)
					c->items.oom = 1;
				full = 1;
			}
		}
	}
	if (full)
		qsort(c->items.v, c->items.len, sizeof(struct sitem), sitem_cmp);
	else if (!c->items.oom)
		cut |= merge_segments(c);
	c->items.truncated = cut;
}

static const char depths_sql[] =
	"SELECT d.depth, d.max_dur, d.disjoint, d.lod_levels, x.first_ord, x.first_id, x.count, d.count, d.marks "
	"FROM track_depths d JOIN extents x ON x.track_id = d.track_id AND x.depth = d.depth "
	"WHERE d.track_id = ? ORDER BY d.depth, x.first_ord";

int qry_slices(sqlite3 *db, int64_t track, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct slice_ctx c = { 0 };
	struct qnames n;
	struct qcur d;
	int64_t rows = 0;
	int rc = QRY_OK, failed = 0, exact;

	c.w = w;
	c.track = track;
	c.items.limit = w->limit;
	memset(&n, 0, sizeof(n));
	if (qcur_open(&d, db, depths_sql, err) != QRY_OK || slices_open(&c, db, err) != QRY_OK ||
	    qnames_open(&n, db, err) != QRY_OK) {
		rc = err->code;
		goto out_close;
	}
	if (read_depths(&c, &d, &rows) != 0)
		c.items.oom = 1;
	failed = qcur_close(&d, 0);
	exact = qlod_exact(w, rows);
	collect(&c, exact);
	failed = failed ? failed : slices_failed(&c);
	if (failed == 0 && c.nruns == 0 && tracks_has(db, track, &failed) == 0 && failed == 0)
		rc = qry_fail(err, QRY_ENOTFOUND, "there is no track %" PRId64 " in this trace", track);
	else if (failed == 0 && c.items.oom)
		rc = qry_fail(err, QRY_ENOMEM, "out of memory");
	if (rc == QRY_OK && failed == 0)
		put_slices(&c, &n, out);
out_close:
	failed = qcur_close(&d, failed);
	failed = qnames_close(&n, failed);
	failed = slices_close(&c, failed);
	return qcur_done(rc, failed, err);
}
