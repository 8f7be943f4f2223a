/*
 * The name index and search across traces.
 *
 * When a trace becomes ready, its per-name statistics (the count, the
 * total and longest duration and a duration sketch, tracedb/sketch.h),
 * which ingest wrote into the trace's own name_stats table, are copied
 * into the catalog's database (names, name_stats), a row per name. A search
 * reads only them: the names table is scanned for the text (a few
 * thousand distinct names, not millions of slices) and name_stats is read
 * by name, so it costs the same whatever the traces' sizes.
 *
 * A trace still growing (a live one, or a big upload being ingested) is
 * not in the index until it is ready: its figures are read from its own
 * database, through the caller (cat_name_reader: the server's pool of
 * trace connections), and cost a read of its committed slices.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../query/query.h"
#include "../tracedb/tracedb.h"
#include "catalog_internal.h"
#include "../tracedb/sketch.h"

int cat_index_trace(struct catalog *c, int64_t id, const char *db_path)
{
	char err[512];

	if (c->db->ops->index(c->db, id, db_path, err, sizeof(err)) == CATDB_OK)
		return 0;
	fprintf(stderr, "trace-server: the name index of trace %" PRId64 " was not built: %s\n", id, err);
	return CAT_EFAIL;
}

void cat_unindex(struct catalog *c, int64_t id)
{
	char err[512];

	if (c->db->ops->unindex(c->db, id, err, sizeof(err)) != CATDB_OK)
		fprintf(stderr, "trace-server: the name index of trace %" PRId64 " keeps its rows: %s\n", id, err);
}

/* ---- search --------------------------------------------------------------- */

enum { SEARCH_NAMES_SHOWN = 10 };

struct hit {
	int64_t trace;
	uint64_t count, ended;
	int64_t total, max;
	int64_t p50, p95;
	char *names[SEARCH_NAMES_SHOWN];
	size_t nnames, more_names;
	int growing; /* read from the trace's own database, not the index */
};

static void hit_free(struct hit *h, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < h[i].nnames; j++)
			free(h[i].names[j]);
	free(h);
}

struct hits {
	struct hit *v;
	size_t n, cap;
	struct sketch *sk;  /* the durations of the trace being read */
	int ended;          /* the last hit's percentiles are made: sk is no longer its */
};

static void hit_end(struct hits *k)
{
	struct hit *h = k->n ? &k->v[k->n - 1] : NULL;

	if (h && !k->ended) {
		h->p50 = sketch_quantile(k->sk, 0.50, 0, h->max);
		h->p95 = sketch_quantile(k->sk, 0.95, 0, h->max);
	}
	k->ended = 1;
}

/* Keeps the SEARCH_NAMES_SHOWN smallest names of a hit in byte order,
 * whatever order they come in (PostgreSQL sends a trace's rows unsorted:
 * sorting them there cost more than the search); counts the others.
 * 0, or -1 when out of memory. */
static int names_keep(struct hit *h, const char *name)
{
	size_t i;
	char *s;

	if (h->nnames == SEARCH_NAMES_SHOWN && strcmp(name, h->names[h->nnames - 1]) > 0) {
		h->more_names++;
		return 0;
	}
	if ((s = strdup(name)) == NULL)
		return -1;
	if (h->nnames == SEARCH_NAMES_SHOWN) {
		free(h->names[--h->nnames]); /* the largest gives its place */
		h->more_names++;
	}
	for (i = h->nnames; i > 0 && strcmp(h->names[i - 1], s) > 0; i--)
		h->names[i] = h->names[i - 1];
	h->names[i] = s;
	h->nnames++;
	return 0;
}

/* One matching row into the hit of its trace (rows come in trace order). */
static int hit_add(void *ctx, const struct catdb_name_row *row)
{
	struct hits *k = ctx;
	struct hit *h = k->n ? &k->v[k->n - 1] : NULL;

	if (h == NULL || h->trace != row->trace) {
		hit_end(k);
		if (k->n == k->cap) {
			size_t cap = k->cap ? k->cap * 2 : 64;
			struct hit *nv = realloc(k->v, cap * sizeof(*nv));

			if (nv == NULL)
				return -1;
			k->v = nv;
			k->cap = cap;
		}
		h = &k->v[k->n++];
		memset(h, 0, sizeof(*h));
		memset(k->sk, 0, sizeof(*k->sk));
		k->ended = 0;
		h->trace = row->trace;
	}
	h->count += (uint64_t)row->count;
	h->ended += (uint64_t)row->ended;
	h->total += row->total_ns;
	if (row->max_ns > h->max)
		h->max = row->max_ns;
	if (sketch_merge(k->sk, row->sketch, row->sketch_len) != 0)
		return -1;
	return names_keep(h, row->name);
}

static int hit_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct hit *)a)->trace, y = ((const struct hit *)b)->trace;

	return x < y ? -1 : x > y;
}

/* A growing trace's name, as a row of the index. */
struct grow_rows {
	struct hits *k;
	int64_t trace;
};

static int grow_row(void *ctx, const struct qry_name_stat *s)
{
	struct grow_rows *g = ctx;
	struct catdb_name_row row;

	row.trace = g->trace;
	row.name = s->name;
	row.count = s->count;
	row.ended = s->ended;
	row.total_ns = s->total_ns;
	row.max_ns = s->max_ns;
	row.sketch = s->sketch;
	row.sketch_len = s->sketch_len;
	return hit_add(g->k, &row);
}

/* The ids of the traces growing now, in id order. */
static int64_t *growing_ids(struct catalog *c, size_t *n)
{
	int64_t *ids;
	size_t i;

	*n = 0;
	pthread_mutex_lock(&c->mu);
	ids = malloc((c->n + 1) * sizeof(*ids));
	for (i = 0; ids != NULL && i < c->n; i++)
		if (c->v[i]->state.status != TS_READY && cat_rec_growing_locked(c->v[i]))
			ids[(*n)++] = c->v[i]->id;
	pthread_mutex_unlock(&c->mu);
	return ids;
}

/* Reads trace id's matching names through reader into a hit of its own:
 * 0, or -1 (err set). A trace that became ready while it was read is read
 * again, once, as it is now; one deleted or failed meanwhile gives no hit. */
static int grow_hit(struct catalog *c, struct hits *k, int64_t id, const char *q, cat_name_reader reader,
		    void *rctx, char *err, size_t errlen)
{
	int tries;

	for (tries = 0; tries < 2; tries++) {
		struct grow_rows g = { k, id };
		size_t before = k->n;
		int got = reader(rctx, id, q, grow_row, &g, err, errlen);

		if (got < 0)
			return -1;
		if (got == 0) {
			hit_end(k);
			if (k->n > before)
				k->v[k->n - 1].growing = 1;
			return 0;
		}
		if (k->n > before) { /* what it handed on is dropped whole */
			struct hit *h = &k->v[--k->n];

			while (h->nnames > 0)
				free(h->names[--h->nnames]);
			h->more_names = 0;
		}
		k->ended = 1; /* the hit before keeps its percentiles */
		if (cat_status(c, id) != TS_READY)
			break;
	}
	return 0;
}

/* Reads every matching row, one hit per trace in id order: the index's,
 * then the growing traces' through reader (may be NULL: none). The traces
 * growing are listed before the index is read: a trace that becomes ready
 * meanwhile (its index rows are written before it is ready) is then either
 * in the index's rows or read from its own database, never in neither. */
static int search_rows(struct catalog *c, const char *q, cat_name_reader reader, void *rctx, struct hit **out,
		       size_t *nout, char *err, size_t errlen)
{
	struct hits k = { NULL, 0, 0, calloc(1, sizeof(struct sketch)), 0 };
	int64_t *ids = NULL;
	size_t n = 0, nindex, i;
	int rc = CATDB_OK;

	if (k.sk == NULL || (reader != NULL && (ids = growing_ids(c, &n)) == NULL)) {
		free(k.sk);
		snprintf(err, errlen, "out of memory");
		return CATDB_EFAIL;
	}
	rc = c->db->ops->search(c->db, q, hit_add, &k, err, errlen);
	hit_end(&k);
	nindex = k.n; /* in id order */
	for (i = 0; rc == CATDB_OK && i < n; i++) {
		struct hit key;

		key.trace = ids[i];
		if (nindex > 0 && bsearch(&key, k.v, nindex, sizeof(*k.v), hit_cmp) != NULL)
			continue; /* ready and indexed since it was listed */
		if (grow_hit(c, &k, ids[i], q, reader, rctx, err, errlen) != 0)
			rc = CATDB_EFAIL;
	}
	free(ids);
	free(k.sk);
	if (rc != CATDB_OK) {
		hit_free(k.v, k.n);
		return rc;
	}
	if (k.n > nindex && k.n > 1)
		qsort(k.v, k.n, sizeof(*k.v), hit_cmp);
	*out = k.v;
	*nout = k.n;
	return CATDB_OK;
}

/* One trace's element of a search's reply (under mu). */
static void hit_json(const struct trace_rec *r, const struct hit *h, struct jbuf *out)
{
	size_t j;

	jb_obj(out);
	jb_key(out, "id");
	jb_i64(out, r->id);
	jb_key(out, "name");
	jb_str(out, r->meta.name);
	jb_key(out, "created_at");
	jb_str(out, r->state.created_at);
	jb_key(out, "status");
	jb_str(out, cat_status_name(r->state.status));
	jb_key(out, "labels");
	cat_labels_json(r, out);
	jb_key(out, "count");
	jb_u64(out, h->count);
	jb_key(out, "ended");
	jb_u64(out, h->ended);
	jb_key(out, "total_ns");
	jb_i64(out, h->total);
	jb_key(out, "p50_ns");
	jb_i64(out, h->p50);
	jb_key(out, "p95_ns");
	jb_i64(out, h->p95);
	jb_key(out, "max_ns");
	jb_i64(out, h->max);
	jb_key(out, "names");
	jb_arr(out);
	for (j = 0; j < h->nnames; j++)
		jb_str(out, h->names[j]);
	jb_arr_end(out);
	jb_key(out, "more_names");
	jb_u64(out, h->more_names);
	jb_obj_end(out);
}

/* Whether a hit is shown: its trace ready, growing (indexed already: its
 * ingest ended and it becomes ready next), or read while it grew and not
 * failed since (under mu). */
static int hit_shown(const struct trace_rec *r, const struct hit *h)
{
	return r != NULL && (r->state.status == TS_READY || cat_rec_growing_locked(r) ||
			     (h->growing && r->state.status != TS_FAILED));
}

/* The reply from the hits, newest trace first (under mu): only ready and
 * growing traces are shown, at most limit. */
static void hits_json_locked(struct catalog *c, const char *q, const struct hit *hits, size_t n, size_t limit,
			     struct jbuf *out)
{
	size_t i, shown = 0, unindexed = 0;

	for (i = 0; i < c->n; i++)
		unindexed += c->v[i]->state.status == TS_READY && c->v[i]->state.indexed != 1;
	jb_obj(out);
	jb_key(out, "query");
	jb_str(out, q);
	jb_key(out, "traces");
	jb_arr(out);
	/* newest trace first: rows came in id order */
	for (i = n; i > 0 && shown < limit; i--) {
		const struct trace_rec *r = cat_find(c, hits[i - 1].trace);

		if (!hit_shown(r, &hits[i - 1]))
			continue;
		hit_json(r, &hits[i - 1], out);
		shown++;
	}
	jb_arr_end(out);
	/* cut only when a ready trace is left over: others are never shown */
	for (; i > 0; i--) {
		const struct trace_rec *r = cat_find(c, hits[i - 1].trace);

		if (hit_shown(r, &hits[i - 1]))
			break;
	}
	jb_key(out, "truncated");
	jb_bool(out, i > 0);
	jb_key(out, "unindexed");
	jb_u64(out, unindexed);
	jb_obj_end(out);
}

int cat_search_json(struct catalog *c, const char *q, size_t limit, cat_name_reader reader, void *rctx,
		    struct jbuf *out, char *err, size_t errlen)
{
	struct hit *hits = NULL;
	char why[512];
	size_t n = 0;
	int rc;

	/* the index read without the lock */
	if ((rc = search_rows(c, q, reader, rctx, &hits, &n, why, sizeof(why))) != CATDB_OK) {
		snprintf(err, errlen, "the catalog could not be searched: %s", why);
		return rc == CATDB_EDOWN ? CAT_EUNAVAILABLE : CAT_EFAIL;
	}
	pthread_mutex_lock(&c->mu);
	/* the traces the rows name, as they are now (another server may have added them) */
	if ((rc = cat_sync_locked(c, 0)) == 0)
		hits_json_locked(c, q, hits, n, limit, out);
	else
		snprintf(err, errlen, "the catalog's database cannot be reached");
	pthread_mutex_unlock(&c->mu);
	hit_free(hits, n);
	return rc;
}
