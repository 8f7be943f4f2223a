/*
 * /stats: per (slice name, category), the slices overlapping a window, how
 * many, their total and their longest duration (docs/API.md).
 *
 * One pass over the window's slices into a hash of (name, category)
 * groups, then the groups sorted: SQL's GROUP BY sorted every slice first
 * (37 s for the 23M slices of the 1 GB benchmark trace; this takes the
 * scan's 7 s), and its sum() failed the request with "integer overflow"
 * where durations add up past 2^63 - 1. A total stops there instead, as
 * name_stats' does (docs/SCHEMA.md).
 */
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "cursor.h"
#include "keymap.h"
#include "query_internal.h"

struct stat_group {
	int64_t name, cat;      /* string ids */
	uint64_t count;
	int64_t total, longest;
	const char *name_s, *cat_s; /* into the group strings, once read */
};

struct stat_table {
	struct stat_group *g;
	size_t n, cap;
	struct qkeymap map;     /* (name << 32 | category) -> group + 1 (string
				 * ids are 32 bits: the model's) */
	char *strs;             /* the groups' names and categories, NUL after each */
	size_t slen, scap;
};

/* The group of (name, cat), made when new; NULL when out of memory. */
static struct stat_group *stat_group(struct stat_table *t, int64_t name, int64_t cat)
{
	uint64_t key = (uint64_t)(uint32_t)name << 32 | (uint32_t)cat;
	uint32_t i;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct stat_group *grown = cap < UINT32_MAX ? realloc(t->g, cap * sizeof(*grown)) : NULL;

		if (grown == NULL)
			return NULL;
		t->g = grown;
		t->cap = cap;
	}
	if ((i = qkm_intern(&t->map, key, (uint32_t)t->n + 1)) == 0)
		return NULL;
	if (i == t->n + 1) /* new */
		t->g[t->n++] = (struct stat_group){ name, cat, 0, 0, INT64_MIN, NULL, NULL };
	return &t->g[i - 1];
}

/* Copies s into the table's strings; its offset, or -1 when out of memory. */
static int64_t stat_str(struct stat_table *t, const char *s)
{
	size_t n = strlen(s) + 1, at = t->slen;

	if (t->slen + n > t->scap) {
		size_t cap = t->scap ? t->scap : 4096;
		char *grown;

		while (cap < t->slen + n)
			cap *= 2;
		if ((grown = realloc(t->strs, cap)) == NULL)
			return -1;
		t->strs = grown;
		t->scap = cap;
	}
	memcpy(t->strs + at, s, n);
	t->slen += n;
	return (int64_t)at;
}

/* By total, largest first, then by name and category (bytes, as SQLite's
 * BINARY collation orders them). */
static int stat_cmp(const void *a, const void *b)
{
	const struct stat_group *x = a, *y = b;
	int c;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if ((c = strcmp(x->name_s, y->name_s)) != 0)
		return c;
	return strcmp(x->cat_s, y->cat_s);
}

/* Every slice meeting the window [start, end] into its group (tested here
 * rather than in the statement: a fifth less work). 0, or -1 when out of
 * memory. */
static int stat_scan(struct stat_table *t, struct qcur *c, int64_t start, int64_t end)
{
	while (qcur_step(c)) {
		int64_t ts = qcur_int(c, 3), dur = qcur_int(c, 2);
		struct stat_group *g;

		if (!tracedb_slice_meets(ts, dur, start, end))
			continue;
		if ((g = stat_group(t, qcur_int(c, 0), qcur_int(c, 1))) == NULL)
			return -1;
		g->count++;
		if (dur > 0)
			g->total = dur > INT64_MAX - g->total ? INT64_MAX : g->total + dur;
		if (dur > g->longest)
			g->longest = dur;
	}
	return 0;
}

/* Gives each group its strings; a group whose name or category has no
 * string is dropped (the join of the statement this replaces). 0, or -1
 * when out of memory. */
static int stat_names(struct stat_table *t, struct qcur *s)
{
	size_t i, kept = 0;
	int64_t *off = malloc((t->n ? t->n : 1) * 2 * sizeof(*off));

	if (off == NULL)
		return -1;
	for (i = 0; i < t->n; i++) {
		int k;

		for (k = 0; k < 2; k++) {
			qcur_bind(s, 1, k == 0 ? t->g[i].name : t->g[i].cat);
			off[2 * i + k] = qcur_step(s) ? stat_str(t, qcur_text(s, 0)) : -2;
			qcur_reset(s);
			if (off[2 * i + k] == -1) {
				free(off);
				return -1;
			}
		}
	}
	/* the strings moved as they grew: point into them once all are in */
	for (i = 0; i < t->n; i++) {
		if (off[2 * i] < 0 || off[2 * i + 1] < 0)
			continue;
		t->g[kept] = t->g[i];
		t->g[kept].name_s = t->strs + off[2 * i];
		t->g[kept].cat_s = t->strs + off[2 * i + 1];
		kept++;
	}
	t->n = kept;
	free(off);
	return 0;
}

static void stat_put(const struct stat_table *t, uint32_t limit, struct jbuf *out)
{
	size_t i;

	jb_obj(out);
	jb_key(out, "names");
	jb_arr(out);
	for (i = 0; i < t->n && i < limit; i++) {
		const struct stat_group *g = &t->g[i];

		jb_obj(out);
		jb_key(out, "name");
		jb_str(out, g->name_s);
		jb_key(out, "category");
		jb_str(out, g->cat_s);
		jb_key(out, "count");
		jb_u64(out, g->count);
		jb_key(out, "total_dur");
		jb_i64(out, g->total);
		jb_key(out, "max_dur");
		jb_i64(out, g->longest);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, t->n > limit);
	jb_obj_end(out);
}

int qry_stats(sqlite3 *db, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	struct stat_table t = { 0 };
	struct qcur c = { 0 }, s = { 0 };
	int rc = QRY_OK, failed;

	if (qcur_open(&c, db, "SELECT name_id, category_id, dur, ts FROM slices", err) != QRY_OK ||
	    qcur_open(&s, db, "SELECT str FROM strings WHERE id = ?", err) != QRY_OK) {
		rc = err->code;
		goto out;
	}
	if (stat_scan(&t, &c, w->start, w->end) != 0 || stat_names(&t, &s) != 0) {
		rc = qry_fail(err, QRY_ENOMEM, "out of memory while summing the slices");
		goto out;
	}
	if (c.err == 0 && s.err == 0) {
		if (t.n > 1)
			qsort(t.g, t.n, sizeof(*t.g), stat_cmp);
		stat_put(&t, w->limit, out);
	}
out:
	failed = qcur_close(&c, 0);
	failed = qcur_close(&s, failed);
	free(t.g);
	qkm_free(&t.map);
	free(t.strs);
	return qcur_done(rc, failed, err);
}
