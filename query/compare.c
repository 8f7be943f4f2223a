/*
 * Comparing two traces: per slice name (or per thread name and slice
 * name), the count, total, p50, p95 and max duration in each trace and the
 * difference b - a, largest regression first.
 *
 * Each side is read once: the slices starting inside its window, keyed by
 * name id (and thread), sorted by (key, duration), so that every group's
 * percentiles are exact (nearest rank) and its slowest slice is its last.
 * The groups of the two sides are then joined by their text, since the
 * two databases number their strings differently.
 */
#include <stdlib.h>
#include <string.h>

#include "cursor.h"

struct row {
	uint64_t key; /* thread id << 32 | name id, or name id */
	int64_t dur;  /* -1: never ended */
	int64_t id;
};

struct group {
	char *text;   /* "name", or "thread\x1fname" */
	uint64_t count, ended;
	int64_t total, p50, p95, max;
	int64_t slowest; /* slice id, 0 when none ended */
};

struct side {
	struct group *g;
	size_t n;
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur < y->dur ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int group_cmp(const void *a, const void *b)
{
	return strcmp(((const struct group *)a)->text, ((const struct group *)b)->text);
}

static void side_free(struct side *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->g[i].text);
	free(s->g);
}

/* The nearest-rank q-quantile of sorted v[0..n). */
static int64_t nearest_rank(const struct row *v, size_t n, unsigned pct)
{
	size_t rank = (n * pct + 99) / 100;

	return n ? v[(rank ? rank : 1) - 1].dur : 0;
}

/* One row's text column through st (bound by the caller, reset here):
 * "" when there is no row; NULL on a read error, which goes to *failed. */
static const char *row_text(sqlite3_stmt *st, int *failed)
{
	int rc = sqlite3_step(st);
	const unsigned char *s;

	if (rc == SQLITE_DONE)
		return "";
	if (rc != SQLITE_ROW) {
		*failed = rc;
		return NULL;
	}
	s = sqlite3_column_text(st, 0);
	return s ? (const char *)s : "";
}

/* The text of a group's key (the caller frees it); NULL when out of
 * memory or when a read failed (then *failed holds its error). */
static char *key_text(sqlite3_stmt *name, sqlite3_stmt *thread, uint64_t key, int by_thread, int *failed)
{
	const char *n, *t = "";
	char *out = NULL;
	size_t ln, lt;

	sqlite3_bind_int64(name, 1, (int64_t)(key & 0xffffffffu));
	n = row_text(name, failed);
	if (by_thread) {
		sqlite3_bind_int64(thread, 1, (int64_t)(key >> 32));
		t = row_text(thread, failed);
	}
	if (n == NULL || t == NULL)
		goto out_reset;
	ln = strlen(n);
	lt = by_thread ? strlen(t) + 1 : 0;
	if ((out = malloc(lt + ln + 1)) != NULL) {
		if (by_thread) {
			memcpy(out, t, lt - 1);
			out[lt - 1] = '\x1f';
		}
		memcpy(out + lt, n, ln + 1);
	}
out_reset:
	sqlite3_reset(name);
	if (by_thread)
		sqlite3_reset(thread);
	return out;
}

static int read_side(sqlite3 *db, const struct qry_window *w, int by_thread, struct side *out, struct qry_error *err)
{
	sqlite3_stmt *st = NULL, *name = NULL, *thread = NULL;
	struct row *v = NULL;
	size_t n = 0, cap = 0, i, j;
	int rc, failed = 0;

	memset(out, 0, sizeof(*out));
	if (sqlite3_prepare_v2(db,
			       by_thread ? "SELECT coalesce(k.thread_id, -1), s.name_id, s.dur, s.id FROM slices s JOIN "
					   "tracks k ON k.id = s.track_id WHERE s.ts BETWEEN ?1 AND ?2"
					 : "SELECT 0, name_id, dur, id FROM slices WHERE ts BETWEEN ?1 AND ?2",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT str FROM strings WHERE id = ?", -1, &name, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT name FROM threads WHERE id = ?", -1, &thread, NULL) != SQLITE_OK)
		goto db_fail;
	sqlite3_bind_int64(st, 1, w->start);
	sqlite3_bind_int64(st, 2, w->end);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			struct row *nv = realloc(v, (cap = cap ? cap * 2 : 4096) * sizeof(*v));

			if (nv == NULL)
				goto nomem;
			v = nv;
		}
		v[n].key = (uint64_t)(uint32_t)sqlite3_column_int64(st, 0) << 32 | (uint32_t)sqlite3_column_int64(st, 1);
		v[n].dur = sqlite3_column_int64(st, 2);
		v[n].id = sqlite3_column_int64(st, 3);
		n++;
	}
	if (rc != SQLITE_DONE)
		goto db_fail;
	qsort(v, n, sizeof(*v), row_cmp);
	for (i = 0; i < n; i = j) {
		struct group *g;
		size_t k;

		for (j = i; j < n && v[j].key == v[i].key; j++)
			;
		if (out->n % 256 == 0) {
			struct group *ng = realloc(out->g, (out->n + 256) * sizeof(*ng));

			if (ng == NULL)
				goto nomem;
			out->g = ng;
		}
		g = &out->g[out->n];
		memset(g, 0, sizeof(*g));
		if ((g->text = key_text(name, thread, v[i].key, by_thread, &failed)) == NULL)
			goto out_fail;
		out->n++;
		g->count = j - i;
		for (k = i; k < j && v[k].dur < 0; k++)
			; /* unterminated slices sort first */
		g->ended = j - k;
		for (; k < j; k++) /* stops at 2^63 - 1, as name_stats' total does */
			g->total = v[k].dur > INT64_MAX - g->total ? INT64_MAX : g->total + v[k].dur;
		if (g->ended) {
			const struct row *e = &v[j - g->ended];

			g->p50 = nearest_rank(e, g->ended, 50);
			g->p95 = nearest_rank(e, g->ended, 95);
			g->max = v[j - 1].dur;
			g->slowest = v[j - 1].id;
		}
	}
	free(v);
	sqlite3_finalize(st);
	sqlite3_finalize(name);
	sqlite3_finalize(thread);
	qsort(out->g, out->n, sizeof(*out->g), group_cmp);
	return QRY_OK;
out_fail:
	if (failed == 0)
		goto nomem;
	qry_fail(err, QRY_EDB, "a trace database cannot be read: %s", sqlite3_errstr(failed));
	goto out;
db_fail:
	qry_fail(err, QRY_EDB, "a trace database cannot be read: %s", sqlite3_errmsg(db));
	goto out;
nomem:
	qry_fail(err, QRY_ENOMEM, "out of memory comparing the traces");
out:
	free(v);
	sqlite3_finalize(st);
	sqlite3_finalize(name);
	sqlite3_finalize(thread);
	side_free(out);
	return err->code;
}

struct pair {
	const struct group *a, *b;
	int64_t delta;
};

static int64_t figure(const struct group *g, enum qry_compare_sort s)
{
	if (g == NULL)
		return 0;
	switch (s) {
	case QRY_CMP_COUNT:
		return (int64_t)g->count;
	case QRY_CMP_P50:
		return g->p50;
	case QRY_CMP_P95:
		return g->p95;
	case QRY_CMP_MAX:
		return g->max;
	default:
		return g->total;
	}
}

static int pair_cmp(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;

	if (a->delta != b->delta)
		return a->delta > b->delta ? -1 : 1;
	return strcmp(a->a ? a->a->text : a->b->text, b->a ? b->a->text : b->b->text);
}

int qry_compare_sort(const char *s, enum qry_compare_sort *out)
{
	static const char *const names[] = { "total", "count", "p50", "p95", "max" };
	int i;

	if (s == NULL) {
		*out = QRY_CMP_TOTAL;
		return 0;
	}
	for (i = 0; i < 5; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum qry_compare_sort)i;
			return 0;
		}
	}
	return -1;
}

/* The slowest slice of a group: {id, track_id, ts, dur}, or null when the
 * group has none. Returns failed, or the read's SQLite error. */
static int put_slowest(sqlite3 *db, int64_t id, struct jbuf *out, int failed)
{
	struct qry_error ignored;
	struct qcur c;

	if (id == 0 || qcur_open(&c, db, "SELECT track_id, ts, dur FROM slices WHERE id = ?", &ignored) != QRY_OK) {
		jb_null(out);
		return id == 0 ? failed : qcur_close(&c, failed);
	}
	qcur_bind(&c, 1, id);
	if (qcur_step(&c)) {
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, id);
		jb_key(out, "track_id");
		jb_i64(out, qcur_int(&c, 0));
		jb_key(out, "ts");
		jb_i64(out, qcur_int(&c, 1));
		jb_key(out, "dur");
		jb_i64(out, qcur_int(&c, 2));
		jb_obj_end(out);
	} else {
		jb_null(out);
	}
	return qcur_close(&c, failed);
}

/* Returns failed, or a read's SQLite error. */
static int put_group(sqlite3 *db, const struct group *g, struct jbuf *out, int failed)
{
	if (g == NULL) {
		jb_null(out);
		return failed;
	}
	jb_obj(out);
	jb_key(out, "count");
	jb_u64(out, g->count);
	jb_key(out, "ended");
	jb_u64(out, g->ended);
	jb_key(out, "total");
	jb_i64(out, g->total);
	jb_key(out, "p50");
	jb_i64(out, g->p50);
	jb_key(out, "p95");
	jb_i64(out, g->p95);
	jb_key(out, "max");
	jb_i64(out, g->max);
	jb_key(out, "slowest");
	failed = put_slowest(db, g->slowest, out, failed);
	jb_obj_end(out);
	return failed;
}

int qry_compare(sqlite3 *a, sqlite3 *b, const struct qry_compare_opts *o, struct jbuf *out, struct qry_error *err)
{
	static const enum qry_compare_sort figs[] = { QRY_CMP_COUNT, QRY_CMP_TOTAL, QRY_CMP_P50, QRY_CMP_P95,
						       QRY_CMP_MAX };
	static const char *const fig_names[] = { "count", "total", "p50", "p95", "max" };
	struct side sa, sb;
	struct pair *p;
	size_t i = 0, j = 0, n = 0, k, f;
	int failed = 0;

	if (read_side(a, &o->wa, o->by_thread, &sa, err) != QRY_OK)
		return err->code;
	if (read_side(b, &o->wb, o->by_thread, &sb, err) != QRY_OK) {
		side_free(&sa);
		return err->code;
	}
	if ((p = malloc((sa.n + sb.n + 1) * sizeof(*p))) == NULL) {
		side_free(&sa);
		side_free(&sb);
		return qry_fail(err, QRY_ENOMEM, "out of memory comparing the traces");
	}
	while (i < sa.n || j < sb.n) {
		int c = i == sa.n ? 1 : j == sb.n ? -1 : strcmp(sa.g[i].text, sb.g[j].text);

		p[n].a = c <= 0 ? &sa.g[i++] : NULL;
		p[n].b = c >= 0 ? &sb.g[j++] : NULL;
		p[n].delta = figure(p[n].b, o->sort) - figure(p[n].a, o->sort);
		n++;
	}
	qsort(p, n, sizeof(*p), pair_cmp);
	jb_obj(out);
	jb_key(out, "rows");
	jb_arr(out);
	for (k = 0; k < n && k < o->limit; k++) {
		const char *text = p[k].a ? p[k].a->text : p[k].b->text, *sep = strchr(text, '\x1f');

		jb_obj(out);
		if (o->by_thread) {
			jb_key(out, "thread");
			jb_strn(out, text, (size_t)(sep - text));
			text = sep + 1;
		}
		jb_key(out, "name");
		jb_str(out, text);
		jb_key(out, "a");
		failed = put_group(a, p[k].a, out, failed);
		jb_key(out, "b");
		failed = put_group(b, p[k].b, out, failed);
		jb_key(out, "delta");
		jb_obj(out);
		for (f = 0; f < sizeof(figs) / sizeof(figs[0]); f++) {
			jb_key(out, fig_names[f]);
			jb_i64(out, figure(p[k].b, figs[f]) - figure(p[k].a, figs[f]));
		}
		jb_obj_end(out);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_key(out, "truncated");
	jb_bool(out, n > o->limit);
	jb_obj_end(out);
	free(p);
	side_free(&sa);
	side_free(&sb);
	return qcur_done(QRY_OK, failed, err);
}
