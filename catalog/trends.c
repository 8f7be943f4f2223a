/*
 * Trends (docs/API.md, Trends): one slice name across the traces the
 * library's filters select, a point per trace, from the catalog's name
 * index alone (never a trace's database): count, total, p50, p95 and max,
 * ordered by upload or by a label's value, with the points that regressed
 * flagged against the median of the points before them.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_internal.h"
#include "../tracedb/sketch.h"

/* A trace's figures for the name (from its one row of the index). */
struct trend_row {
	int64_t trace;
	int64_t count, ended, total, max, p50, p95;
};

struct trend_rows {
	struct trend_row *v;
	size_t n, cap;
	struct sketch *sk;
};

static int row_add(void *ctx, const struct catdb_name_row *r)
{
	struct trend_rows *k = ctx;
	struct trend_row *t;

	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		struct trend_row *v = realloc(k->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		k->v = v;
		k->cap = cap;
	}
	t = &k->v[k->n++];
	t->trace = r->trace;
	t->count = r->count;
	t->ended = r->ended;
	t->total = r->total_ns;
	t->max = r->max_ns;
	memset(k->sk, 0, sizeof(*k->sk));
	if (sketch_merge(k->sk, r->sketch, r->sketch_len) != 0)
		return -1;
	t->p50 = sketch_quantile(k->sk, 0.50, 0, t->max);
	t->p95 = sketch_quantile(k->sk, 0.95, 0, t->max);
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct trend_row *x = a, *y = b;

	return x->trace < y->trace ? -1 : x->trace > y->trace;
}

/* A point: a trace the filters select, with its row (NULL: the name is
 * not in it). */
struct point {
	const struct trace_rec *r;
	const struct trend_row *row;
	const char *key;    /* the order label's value; NULL when the trace has none */
	double num;         /* key as a number */
	int is_num;
};

/* By the label's value (numbers before other values, numbers by value,
 * others in byte order, traces without it last), else by upload; ties by
 * upload, then id. */
static int point_cmp(const void *a, const void *b, void *arg)
{
	const struct point *x = a, *y = b;
	const struct cat_trend_opts *o = arg;

	if (o->order_label) {
		if ((x->key == NULL) != (y->key == NULL))
			return x->key == NULL ? 1 : -1;
		if (x->key && x->is_num != y->is_num)
			return x->is_num ? -1 : 1;
		if (x->key && x->is_num && x->num != y->num)
			return x->num < y->num ? -1 : 1;
		if (x->key && !x->is_num) {
			int c = strcmp(x->key, y->key);

			if (c)
				return c;
		}
	}
	if (x->r->state.created != y->r->state.created)
		return x->r->state.created < y->r->state.created ? -1 : 1;
	return x->r->id < y->r->id ? -1 : x->r->id > y->r->id;
}

static int64_t stat_of(const struct trend_row *t, enum cat_trend_stat s)
{
	switch (s) {
	case CAT_TREND_P95:
		return t->p95;
	case CAT_TREND_MAX:
		return t->max;
	case CAT_TREND_AVG:
		return t->ended ? t->total / t->ended : 0;
	default:
		return t->p50;
	}
}

/* Puts v into the sorted s[0 .. n). */
static void sorted_insert(int64_t *s, size_t n, int64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(s + lo + 1, s + lo, (n - lo) * sizeof(*s));
	s[lo] = v;
}

static void point_json(const struct point *p, const struct cat_trend_opts *o, int64_t baseline, int has_base,
		       struct jbuf *out)
{
	const struct trend_row *t = p->row;

	jb_obj(out);
	JB_KEY(out, "id");
	jb_i64(out, p->r->id);
	JB_KEY(out, "name");
	jb_str(out, p->r->meta.name);
	JB_KEY(out, "created_at");
	jb_str(out, p->r->state.created_at);
	JB_KEY(out, "labels");
	cat_labels_json(p->r, out);
	JB_KEY(out, "order_value");
	jb_str(out, o->order_label ? p->key : p->r->state.created_at);
	JB_KEY(out, "count");
	jb_i64(out, t ? t->count : 0);
	JB_KEY(out, "ended");
	jb_i64(out, t ? t->ended : 0);
	JB_KEY(out, "total_ns");
	jb_i64(out, t ? t->total : 0);
	if (t && t->ended) {
		JB_KEY(out, "p50_ns");
		jb_i64(out, t->p50);
		JB_KEY(out, "p95_ns");
		jb_i64(out, t->p95);
		JB_KEY(out, "max_ns");
		jb_i64(out, t->max);
	} else {
		static const char none[] = ",\"p50_ns\":null,\"p95_ns\":null,\"max_ns\":null";

		jb_raw(out, none, sizeof(none) - 1);
	}
	JB_KEY(out, "baseline_ns");
	if (has_base)
		jb_i64(out, baseline);
	else
		jb_null(out);
	JB_KEY(out, "regression");
	jb_bool(out, has_base && t && t->ended && (double)stat_of(t, o->stat) > (double)baseline * (1 + o->threshold));
	jb_obj_end(out);
}

static const char *const stat_names[] = { "p50", "p95", "max", "avg" };

int cat_trend_stat_parse(const char *s, enum cat_trend_stat *out)
{
	size_t i;

	for (i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++)
		if (strcmp(s, stat_names[i]) == 0) {
			*out = (enum cat_trend_stat)i;
			return 0;
		}
	return CAT_EINVAL;
}

/* Writes the points, under mu. */
static void trend_json_locked(struct catalog *c, const struct cat_filter *f, const struct cat_trend_opts *o,
			      const struct cat_note_counts *nc, const struct trend_rows *rows, struct point *pts,
			      int64_t *vals, struct jbuf *out)
{
	size_t i, n = 0, nv = 0, unindexed = 0;

	for (i = 0; i < c->n; i++) {
		const struct trace_rec *r = c->v[i];
		struct trend_row key = { .trace = r->id };
		struct point *p;
		char *end;

		if (r->state.status != TS_READY || !cat_filter_matches(r, f, nc))
			continue;
		if (r->state.indexed != 1) {
			unindexed++;
			continue;
		}
		p = &pts[n++];
		p->r = r;
		p->row = rows->n ? bsearch(&key, rows->v, rows->n, sizeof(*rows->v), row_cmp) : NULL;
		p->key = o->order_label ? cat_label_value(r, o->order_label) : NULL;
		p->is_num = 0;
		if (p->key && p->key[0]) {
			p->num = strtod(p->key, &end);
			p->is_num = *end == '\0' && isfinite(p->num);
		}
	}
	qsort_r(pts, n, sizeof(*pts), point_cmp, (void *)(uintptr_t)o);
	jb_obj(out);
	JB_KEY(out, "name");
	jb_str(out, o->name);
	JB_KEY(out, "order");
	if (o->order_label) {
		char ord[CAT_MAX_KEY + 8];

		snprintf(ord, sizeof(ord), "label:%s", o->order_label);
		jb_str(out, ord);
	} else {
		jb_str(out, "created");
	}
	JB_KEY(out, "stat");
	jb_str(out, stat_names[o->stat]);
	JB_KEY(out, "threshold");
	jb_dbl(out, o->threshold);
	JB_KEY(out, "points");
	jb_arr(out);
	for (i = 0; i < n; i++) {
		/* the baseline: the median (the lower middle) of the points
		 * before, among those with slices of the name that ended; vals
		 * keeps their figures sorted */
		point_json(&pts[i], o, nv ? vals[(nv - 1) / 2] : 0, nv > 0, out);
		if (pts[i].row && pts[i].row->ended)
			sorted_insert(vals, nv++, stat_of(pts[i].row, o->stat));
	}
	jb_arr_end(out);
	JB_KEY(out, "unindexed");
	jb_u64(out, unindexed);
	jb_obj_end(out);
}

int cat_trends_json(struct catalog *c, const struct cat_filter *f, const struct cat_trend_opts *o, struct jbuf *out,
		    char *err, size_t errlen)
{
	struct trend_rows rows = { NULL, 0, 0, malloc(sizeof(struct sketch)) };
	struct cat_note_counts nc;
	struct point *pts = NULL;
	int64_t *vals = NULL;
	int rc;

	if (rows.sk == NULL) {
		snprintf(err, errlen, "out of memory");
		return CAT_EFAIL;
	}
	/* the database first, without the lock */
	rc = c->db->ops->name_exact(c->db, o->name, row_add, &rows, err, errlen);
	free(rows.sk);
	if (rc != CATDB_OK) {
		free(rows.v);
		return rc == CATDB_EDOWN ? CAT_EUNAVAILABLE : CAT_EFAIL;
	}
	if (rows.n > 1)
		qsort(rows.v, rows.n, sizeof(*rows.v), row_cmp);
	if ((rc = cat_note_counts(c, 0, f->q, &nc, err, errlen)) != 0) {
		free(rows.v);
		return rc;
	}
	pthread_mutex_lock(&c->mu);
	if (cat_sync_locked(c, 0) != 0) {
		snprintf(err, errlen, "the catalog's database cannot be reached now; try again shortly");
		rc = CAT_EUNAVAILABLE;
	} else if ((pts = malloc((c->n + 1) * sizeof(*pts))) == NULL ||
		   (vals = malloc((c->n + 1) * sizeof(*vals))) == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = CAT_EFAIL;
	} else {
		trend_json_locked(c, f, o, &nc, &rows, pts, vals, out);
	}
	pthread_mutex_unlock(&c->mu);
	free(pts);
	free(vals);
	free(rows.v);
	cat_note_counts_free(&nc);
	return rc;
}
