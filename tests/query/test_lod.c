/*
 * Property test of the level-of-detail rules (docs/API.md, "Level of
 * detail"): traces from our own writer with deep stacks (30 levels), many
 * tiny slices beside long ones, zero-length slices, slices at window edges,
 * unterminated slices, counters with 64-bit values and cpu runs are
 * ingested; thousands of random windows at random resolutions are asked
 * through query/ and every reply is checked against the exact rows read
 * from the database:
 *   - every row overlapping the window (both ends inclusive) is in the reply
 *     exactly once, as itself or counted in one summary whose ts/dur cover
 *     it; nothing else is;
 *   - a row at least a pixel long, or never ended, comes back as itself;
 *   - below QRY_EXACT_RESOLUTION, or with at most QRY_EXACT_MAX rows, there
 *     are no summaries;
 *   - a counter summary has the true first and last point and min and max.
 * And a database that cannot be read answers an error, not a short list.
 * Every test runs on the default layout (one extent of ids per group) and
 * on ids reserved 7 rows at a time (schema/trace.sql, extents).
 */
#include "../testutil.h"

#include <cjson/cJSON.h>

#include "../../query/query.h"
#include "../../query/query_internal.h"
#include "../xorshift.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

static int64_t rnd_in(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

#define CAT FXTW_IDX(1)
#define NAME(i) FXTW_IDX(2 + (i) % 8)

/* A run of slices in [t0, t1) at one depth, children nested in the long
 * ones (some starting at their parent's ts: replies order ties by depth);
 * returns where it ended. */
static uint64_t gen_run(struct fxtw *w, struct fxtw_thr th, int depth, uint64_t t0, uint64_t t1)
{
	uint64_t t = t0;

	while (t < t1) {
		uint64_t gap = rnd() % 4 == 0 ? (uint64_t)rnd_in(0, 3) : (uint64_t)rnd_in(1, 400);
		unsigned kind = (unsigned)(rnd() % 10);
		uint64_t dur;

		t += gap;
		if (t >= t1)
			break;
		if (kind < 2) { /* zero-length */
			fxtw_instant(w, th, CAT, NAME(rnd()), t, NULL, 0);
			continue;
		}
		dur = kind < 7 ? (uint64_t)rnd_in(1, 60) : (uint64_t)rnd_in(200, depth < 4 ? 200000 : 8000);
		if (t + dur > t1)
			dur = t1 - t;
		if (kind == 6) {
			fxtw_complete(w, th, CAT, NAME(rnd()), t, t + dur, NULL, 0);
		} else {
			fxtw_begin(w, th, CAT, NAME(rnd()), t, NULL, 0);
			if (dur > 100 && depth < 30) /* at odd depths, a child may start with its parent */
				gen_run(w, th, depth + 1, t + (uint64_t)(depth % 2 == 0), t + dur - 1);
			fxtw_end(w, th, CAT, NAME(0), t + dur, NULL, 0);
		}
		t += dur;
	}
	return t;
}

/* A deep stack: one chain of 32 nested begins with tiny slices at each level. */
static void gen_deep(struct fxtw *w, struct fxtw_thr th, uint64_t t)
{
	int d;

	for (d = 0; d < 32; d++) {
		fxtw_begin(w, th, CAT, NAME(d), t + (uint64_t)d * 10, NULL, 0);
		fxtw_complete(w, th, CAT, NAME(d + 1), t + (uint64_t)d * 10 + 1, t + (uint64_t)d * 10 + 3, NULL, 0);
	}
	for (d = 31; d >= 0; d--)
		fxtw_end(w, th, CAT, NAME(0), t + 1000 - (uint64_t)d * 10, NULL, 0);
}

static void gen_trace(struct fxtw *w, uint64_t seed)
{
	struct fxtw_thr a = FXTW_TINL(1, 10), b = FXTW_TINL(1, 11);
	uint64_t t, k;
	int i;

	rng_state = seed;
	fxtw_init(w, 0);
	fxtw_magic(w);
	fxtw_string(w, 1, "cat");
	for (i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		fxtw_string(w, (uint16_t)(2 + i), name);
	}
	fxtw_string(w, 10, "ctr");
	fxtw_string(w, 11, "v");
	t = gen_run(w, a, 0, 1000, 2000000);
	gen_deep(w, a, t + 10);
	gen_run(w, b, 0, 500, 1500000);
	/* never closed, in b */
	fxtw_begin(w, b, CAT, NAME(1), 1600000, NULL, 0);
	fxtw_begin(w, b, CAT, NAME(2), 1600005, NULL, 0);
	fxtw_instant(w, b, CAT, NAME(3), 1600006, NULL, 0);
	/* counters: int and double series, 64-bit values */
	for (t = 1000, k = 0; t < 2000000; t += (uint64_t)rnd_in(0, 300), k++) {
		struct fxtw_arg arg = k % 3 == 0 ? fxtw_arg_i64(FXTW_IDX(11), INT64_MAX - (int64_t)(rnd() % 1000))
						 : fxtw_arg_i64(FXTW_IDX(11), (int64_t)(rnd() % 2000) - 1000);
		struct fxtw_arg darg = fxtw_arg_double(FXTW_IDX(11), (double)(rnd() % 100000) / 7.0);

		fxtw_counter(w, a, CAT, FXTW_IDX(10), t, 1, &arg, 1);
		fxtw_counter(w, b, CAT, FXTW_IDX(10), t, 2, &darg, 1);
	}
	/* cpu runs: tiny and long, with idle gaps */
	for (t = 1000, k = 0; t < 2000000; k++) {
		t += rnd() % 3 == 0 ? (uint64_t)rnd_in(0, 5) : (uint64_t)rnd_in(5, rnd() % 64 == 0 ? 20000 : 300);
		fxtw_context_switch(w, 0, 3, t, k % 2 ? 10 : 11, k % 5 == 4 ? 0 : (k % 2 ? 11 : 10), NULL, 0);
	}
	/* logs: bursts at one ts, dense runs and sparse ones */
	for (t = 2000, k = 0; t < 2000000; k++) {
		char msg[32];

		t += rnd() % 4 == 0 ? 0 : (uint64_t)rnd_in(1, rnd() % 64 == 0 ? 5000 : 100);
		snprintf(msg, sizeof(msg), "log %llu", (unsigned long long)k);
		fxtw_log(w, k % 2 ? a : b, t, msg);
	}
}

struct row {
	int64_t id, ts, dur, depth;
};

struct rows {
	struct row *v;
	size_t n;
	int64_t *by_id; /* indexes into v, ordered by id */
};

static const struct rows *sort_rows;

static int by_id_cmp(const void *a, const void *b)
{
	int64_t x = sort_rows->v[*(const int64_t *)a].id, y = sort_rows->v[*(const int64_t *)b].id;

	return x < y ? -1 : x > y;
}

static void rows_index(struct rows *r)
{
	size_t i;

	r->by_id = malloc((r->n ? r->n : 1) * sizeof(*r->by_id));
	assert_non_null(r->by_id);
	for (i = 0; i < r->n; i++)
		r->by_id[i] = (int64_t)i;
	sort_rows = r;
	qsort(r->by_id, r->n, sizeof(*r->by_id), by_id_cmp);
}

/* The index in v of the row with this id, n when none. */
static size_t rows_find(const struct rows *r, int64_t id)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->v[r->by_id[mid]].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n && r->v[r->by_id[lo]].id == id ? (size_t)r->by_id[lo] : r->n;
}

struct summary {
	int64_t id, ts, end, depth, merged;
};

static int summary_cmp(const void *a, const void *b)
{
	const struct summary *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void rows_read(sqlite3 *db, const char *sql, int64_t key, struct rows *r)
{
	sqlite3_stmt *st;
	size_t cap = 0;

	r->v = NULL;
	r->n = 0;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, key);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (r->n == cap) {
			cap = cap ? cap * 2 : 1024;
			r->v = realloc(r->v, cap * sizeof(*r->v));
			assert_non_null(r->v);
		}
		r->v[r->n].id = sqlite3_column_int64(st, 0);
		r->v[r->n].ts = sqlite3_column_int64(st, 1);
		r->v[r->n].dur = sqlite3_column_int64(st, 2);
		r->v[r->n].depth = sqlite3_column_int64(st, 3);
		r->n++;
	}
	sqlite3_finalize(st);
}

static int overlaps(const struct row *x, int64_t s, int64_t e)
{
	return x->ts <= e && (x->dur < 0 || x->ts + x->dur >= s);
}

static int64_t num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_non_null(v);
	return (int64_t)v->valuedouble;
}

/* A random window: often starting or ending exactly on a row's edge. */
static void rnd_window(const struct rows *r, int64_t lo, int64_t hi, int64_t *s, int64_t *e, int64_t *res)
{
	static const int64_t res_choices[] = { 0, 1, 7, 100, 1023, 1024, 3000, 20000, 150000, 1000000, 5000000 };
	const struct row *x = &r->v[rnd() % r->n];
	int64_t len = rnd() % 4 == 0 ? rnd_in(0, 2000) : rnd_in(0, hi - lo);

	switch (rnd() % 4) {
	case 0:
		*s = x->ts;
		break;
	case 1:
		*s = x->dur > 0 ? x->ts + x->dur : x->ts;
		break;
	default:
		*s = rnd_in(lo - 100, hi);
	}
	*e = rnd() % 8 == 0 ? *s : *s + len;
	if (rnd() % 6 == 0)
		*e = x->ts; /* ends on a row's start */
	if (*e < *s)
		*e = *s;
	*res = rnd() % 3 ? res_choices[rnd() % (sizeof(res_choices) / sizeof(res_choices[0]))]
			 : (*e - *s) / 1600 + 1;
}

/*
 * Checks one slices reply against the exact rows of the track. Summaries of
 * one depth take the rows not returned as themselves, in order.
 */
static void check_slices(const struct rows *r, const cJSON *reply, int64_t s, int64_t e, int64_t res)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(reply, "slices"), *it;
	size_t i, expected = 0, individual = 0, merged_total = 0, summaries = 0;
	char *seen = calloc(r->n ? r->n : 1, 1);

	assert_non_null(seen);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "truncated")));
	cJSON_ArrayForEach(it, items) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "merged");

		if (m) {
			summaries++;
			merged_total += (size_t)m->valuedouble;
			continue;
		}
		/* a row as itself: it exists, overlaps, and comes once */
		i = rows_find(r, num(it, "id"));
		if (i == r->n)
			fail_msg("slice %lld is not a row of the track", (long long)num(it, "id"));
		if (!overlaps(&r->v[i], s, e))
			fail_msg("slice %lld [%lld +%lld] is outside [%lld, %lld]", (long long)r->v[i].id,
				 (long long)r->v[i].ts, (long long)r->v[i].dur, (long long)s, (long long)e);
		if (seen[i])
			fail_msg("slice %lld comes back twice (res %lld)", (long long)r->v[i].id, (long long)res);
		assert_int_equal(num(it, "ts"), r->v[i].ts);
		assert_int_equal(num(it, "dur"), r->v[i].dur);
		assert_int_equal(num(it, "depth"), r->v[i].depth);
		seen[i] = 1;
		individual++;
	}
	for (i = 0; i < r->n; i++) {
		if (!overlaps(&r->v[i], s, e))
			continue;
		expected++;
		if (!seen[i] && (res <= 0 || r->v[i].dur < 0 || r->v[i].dur >= res))
			fail_msg("slice %lld (dur %lld) at resolution %lld in [%lld, %lld] is not returned as itself",
				 (long long)r->v[i].id, (long long)r->v[i].dur, (long long)res, (long long)s, (long long)e);
	}
	if (individual + merged_total != expected)
		fail_msg("[%lld, %lld] at %lld: %zu rows overlap; %zu returned and %zu in summaries", (long long)s,
			 (long long)e, (long long)res, expected, individual, merged_total);
	if (summaries && (res < QRY_EXACT_RESOLUTION || expected <= QRY_EXACT_MAX))
		fail_msg("summaries in an exact reply ([%lld, %lld] at %lld, %zu rows)", (long long)s, (long long)e,
			 (long long)res, expected);
	/* each summary covers the next rows of its depth not returned as themselves */
	{
		struct summary *sv = calloc(summaries ? summaries : 1, sizeof(*sv));
		size_t ns = 0, j = 0;

		assert_non_null(sv);
		cJSON_ArrayForEach(it, items) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "merged");

			if (!m)
				continue;
			sv[ns].id = num(it, "id");
			sv[ns].ts = num(it, "ts");
			sv[ns].end = sv[ns].ts + num(it, "dur");
			sv[ns].depth = num(it, "depth");
			sv[ns++].merged = (int64_t)m->valuedouble;
		}
		qsort(sv, ns, sizeof(*sv), summary_cmp);
		for (i = 0; i < ns; i++) {
			int64_t n, longest = -1, named = -2; /* the longest dur; that of the slice the id names */

			for (n = sv[i].merged; n > 0; j++) {
				const struct row *x;

				assert_true(j < r->n);
				x = &r->v[j];
				if (x->depth < sv[i].depth || seen[j] || !overlaps(x, s, e))
					continue;
				if (x->depth != sv[i].depth || x->dur < 0 || x->ts < sv[i].ts || x->ts + x->dur > sv[i].end)
					fail_msg("a summary [%lld, %lld] at depth %lld (res %lld) counts slice %lld "
						 "[%lld +%lld] at depth %lld it does not cover",
						 (long long)sv[i].ts, (long long)sv[i].end, (long long)sv[i].depth,
						 (long long)res, (long long)x->id, (long long)x->ts, (long long)x->dur,
						 (long long)x->depth);
				if (x->dur > longest)
					longest = x->dur;
				if (x->id == sv[i].id)
					named = x->dur;
				n--;
			}
			/* a summary is named after the longest slice it stands for */
			if (named != longest)
				fail_msg("a summary at %lld, depth %lld (res %lld) is slice %lld (dur %lld), "
					 "not one of its longest (dur %lld)",
					 (long long)sv[i].ts, (long long)sv[i].depth, (long long)res,
					 (long long)sv[i].id, (long long)named, (long long)longest);
		}
		free(sv);
	}
	free(seen);
}

static cJSON *ask(int (*fn)(sqlite3 *, int64_t, const struct qry_window *, struct jbuf *, struct qry_error *),
		  sqlite3 *db, int64_t key, int64_t s, int64_t e, int64_t res)
{
	struct qry_window w = { s, e, res, 1000000, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;
	cJSON *j;

	jb_init(&b);
	if (fn(db, key, &w, &b, &err) != QRY_OK)
		fail_msg("query failed: %s", err.msg);
	jb_raw(&b, "", 1);
	j = cJSON_Parse(b.p);
	assert_non_null(j);
	jb_fini(&b);
	return j;
}

static struct tdb T;

static int setup_with(size_t extent_rows)
{
	struct ingest_opts o = { 0 };
	struct fxtw w;

	o.extent_rows = extent_rows;
	gen_trace(&w, 0x9e3779b97f4a7c15ULL);
	tdb_ingest_opts(&T, w.buf, w.len, &o);
	fxtw_fini(&w);
	assert_int_equal(T.rc, INGEST_OK);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return setup_with(0);
}

/* Ids reserved 7 rows at a time as rows are made: every group lies in
 * many extents, interleaved with the other groups' (schema/trace.sql). */
static int setup_extents(void **state)
{
	(void)state;
	if (setup_with(7) == 0)
		assert_true(tdb_int(&T, "SELECT count(*) FROM extents WHERE first_ord > 0") > 100);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tdb_close(&T);
	return 0;
}

/* Item i of a slices reply, in either form. */
struct item {
	int64_t id, ts, dur, depth, merged;
	const char *name, *cat;
};

/* The items of a slices reply, in either form (an array walk: cJSON's
 * lists are not indexed). */
static struct item *reply_items(const cJSON *j, int columns, size_t *n)
{
	const char *const keys[] = { "id", "ts", "dur", "depth", "merged", "name", "category" };
	const cJSON *cur[7], *str = cJSON_GetObjectItemCaseSensitive(j, "strings"), *it;
	const cJSON **strings = NULL;
	struct item *v;
	size_t i, k, ns = 0;

	*n = (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, columns ? "id" : "slices"));
	v = calloc(*n ? *n : 1, sizeof(*v));
	assert_non_null(v);
	if (!columns) {
		i = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "slices")) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "merged");

			v[i].id = num(it, "id");
			v[i].ts = num(it, "ts");
			v[i].dur = num(it, "dur");
			v[i].depth = num(it, "depth");
			v[i].merged = m ? (int64_t)m->valuedouble : 0;
			v[i].name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
			v[i].cat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "category"));
			assert_non_null(v[i].name);
			assert_non_null(v[i++].cat);
		}
		return v;
	}
	strings = calloc((size_t)cJSON_GetArraySize(str) + 1, sizeof(*strings));
	assert_non_null(strings);
	cJSON_ArrayForEach(it, str)
		strings[ns++] = it;
	for (k = 0; k < 7; k++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, keys[k]);

		assert_int_equal(cJSON_GetArraySize(a), *n);
		cur[k] = a->child;
	}
	for (i = 0; i < *n; i++) {
		int64_t x[7];

		for (k = 0; k < 7; k++) {
			assert_true(cJSON_IsNumber(cur[k]));
			x[k] = (int64_t)cur[k]->valuedouble;
			cur[k] = cur[k]->next;
		}
		v[i].id = x[0];
		v[i].ts = x[1];
		v[i].dur = x[2];
		v[i].depth = x[3];
		v[i].merged = x[4];
		assert_true(x[5] >= 0 && (size_t)x[5] < ns && x[6] >= 0 && (size_t)x[6] < ns);
		v[i].name = cJSON_GetStringValue(strings[x[5]]);
		v[i].cat = cJSON_GetStringValue(strings[x[6]]);
		assert_non_null(v[i].name);
		assert_non_null(v[i].cat);
	}
	free(strings);
	return v;
}

static cJSON *ask_slices(int64_t track, const struct qry_window *w)
{
	struct qry_error err = { 0 };
	struct jbuf b;
	cJSON *j;

	jb_init(&b);
	if (qry_slices(T.db, track, w, &b, &err) != QRY_OK)
		fail_msg("query failed: %s", err.msg);
	jb_raw(&b, "", 1);
	j = cJSON_Parse(b.p);
	jb_fini(&b);
	assert_non_null(j);
	return j;
}

/* Item i of two replies is the same item: a slice, or a summary of the
 * same slices with the same name. */
static void same_item(const struct item *a, const struct item *b, size_t i, const struct qry_window *w)
{
	if (a->id != b->id || a->ts != b->ts || a->dur != b->dur || a->depth != b->depth || a->merged != b->merged ||
	    strcmp(a->name, b->name) != 0 || strcmp(a->cat, b->cat) != 0)
		fail_msg("[%lld, %lld] res %lld limit %u%s: item %zu is %lld [%lld +%lld] depth %lld merged %lld %s, "
			 "not %lld [%lld +%lld] depth %lld merged %lld %s",
			 (long long)w->start, (long long)w->end, (long long)w->resolution, w->limit,
			 w->columns ? " (columns)" : "", i, (long long)a->id, (long long)a->ts, (long long)a->dur,
			 (long long)a->depth, (long long)a->merged, a->name, (long long)b->id, (long long)b->ts,
			 (long long)b->dur, (long long)b->depth, (long long)b->merged, b->name);
}

/* The items of a window asked with a limit of L are the first L of the
 * same reply without the limit, in its (ts, depth, id) order, each whole (a
 * summary stands for the same slices as in the full reply), in both forms,
 * and "truncated" says whether any was left out: a cut reply is not the
 * rows of the shallowest depths (docs/API.md: "ordered by ts", cut at
 * `limit`). */
static void test_slices_limit_keeps_first(void **state)
{
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM slices"), hi = tdb_int(&T, "SELECT max(ts) FROM slices");
	int64_t track;
	size_t cut_summaries = 0;
	int k;

	(void)state;
	for (track = 1; track <= tdb_int(&T, "SELECT max(id) FROM tracks"); track++) {
		struct rows r;

		if (tdb_int(&T, "SELECT count(*) FROM slices WHERE track_id = %lld", (long long)track) == 0)
			continue;
		rows_read(T.db, "SELECT id, ts, dur, depth FROM slices WHERE track_id = ? ORDER BY ts", track, &r);
		for (k = 0; k < 300; k++) {
			struct qry_window w = { 0, 0, 0, 1000000, 0, 0, 0 };
			struct item *all, *allc;
			size_t n, nc, i, m;
			int form;
			cJSON *full, *fullc;

			rnd_window(&r, lo, hi, &w.start, &w.end, &w.resolution);
			if (k % 3 == 0)
				w.resolution %= QRY_EXACT_RESOLUTION; /* exact replies */
			full = ask_slices(track, &w);
			all = reply_items(full, 0, &n);
			for (i = 1; w.resolution < QRY_EXACT_RESOLUTION && i < n; i++) { /* (ts, depth, id), strictly */
				const struct item *x = &all[i - 1], *y = &all[i];

				if (x->ts > y->ts ||
				    (x->ts == y->ts && (x->depth > y->depth || (x->depth == y->depth && x->id >= y->id))))
					fail_msg("[%lld, %lld]: item %zu (ts %lld, depth %lld) after (ts %lld, depth %lld)",
						 (long long)w.start, (long long)w.end, i, (long long)y->ts,
						 (long long)y->depth, (long long)x->ts, (long long)x->depth);
			}
			w.columns = 1;
			fullc = ask_slices(track, &w);
			allc = reply_items(fullc, 1, &nc);
			assert_int_equal(nc, n);
			for (i = 0; i < n; i++)
				same_item(&allc[i], &all[i], i, &w);
			for (form = 0; form < 2; form++) {
				struct item *got;
				cJSON *part;

				w.columns = form;
				w.limit = (uint32_t)rnd_in(1, (int64_t)n + 2);
				part = ask_slices(track, &w);
				got = reply_items(part, form, &m);
				assert_int_equal(m, n < w.limit ? n : w.limit);
				assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(part, "truncated")),
						 n > w.limit);
				for (i = 0; i < m; i++) {
					same_item(&got[i], &all[i], i, &w);
					cut_summaries += n > w.limit && got[i].merged > 0;
				}
				free(got);
				cJSON_Delete(part);
			}
			free(all);
			free(allc);
			cJSON_Delete(full);
			cJSON_Delete(fullc);
		}
		free(r.v);
	}
	assert_true(cut_summaries > 1000); /* the cut replies held summaries */
}

static void test_slices_property(void **state)
{
	static const char sql[] = "SELECT id, ts, dur, depth FROM slices WHERE track_id = ? ORDER BY depth, ts, id";
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM slices"), hi = tdb_int(&T, "SELECT max(ts) FROM slices");
	int64_t track, deepest = tdb_int(&T, "SELECT max(depth) FROM slices");
	int k;

	(void)state;
	assert_true(deepest >= 25);
	assert_true(tdb_int(&T, "SELECT count(*) FROM slices WHERE dur < 0") >= 2);
	assert_true(tdb_int(&T, "SELECT count(*) FROM slices WHERE dur = 0") > 100);
	for (track = 1; track <= tdb_int(&T, "SELECT max(id) FROM tracks"); track++) {
		struct rows r;

		if (tdb_int(&T, "SELECT count(*) FROM slices WHERE track_id = %lld", (long long)track) == 0)
			continue;
		rows_read(T.db, sql, track, &r);
		rows_index(&r);
		for (k = 0; k < 1000; k++) {
			int64_t s, e, res;
			cJSON *j;

			rnd_window(&r, lo, hi, &s, &e, &res);
			j = ask(qry_slices, T.db, track, s, e, res);
			check_slices(&r, j, s, e, res);
			cJSON_Delete(j);
		}
		free(r.v);
		free(r.by_id);
	}
}

/* The window of the issue: a zoom of a few hundred ns deep in the stack at
 * one ns per pixel is the exact list. */
static void test_slices_small_window_exact(void **state)
{
	int64_t ts = tdb_int(&T, "SELECT ts FROM slices WHERE depth = 25 LIMIT 1");
	int64_t track = tdb_int(&T, "SELECT track_id FROM slices WHERE depth = 25 LIMIT 1");
	cJSON *j, *it;
	int n = 0;

	(void)state;
	j = ask(qry_slices, T.db, track, ts - 140, ts + 280, 1);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "slices")) {
		assert_null(cJSON_GetObjectItemCaseSensitive(it, "merged"));
		n += num(it, "depth") == 25;
	}
	assert_true(n >= 1);
	cJSON_Delete(j);
}

struct point {
	int64_t ts;
	double v;
};

static void check_counters(const struct point *p, size_t n, const cJSON *reply, int64_t s, int64_t e, int64_t res)
{
	const cJSON *it;
	size_t i = 0, summaries = 0, count;

	/* the last point before s, then the points of [s, e] */
	while (i < n && p[i].ts < s)
		i++;
	if (i > 0)
		i--;
	count = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(reply, "points")) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "merged");

		if (!m) {
			assert_true(i < n && p[i].ts <= e);
			assert_int_equal(num(it, "ts"), p[i].ts);
			assert_true(cJSON_GetObjectItemCaseSensitive(it, "value")->valuedouble == p[i].v);
			i++;
		} else {
			size_t k, merged = (size_t)m->valuedouble;
			double mn = p[i].v, mx = p[i].v;

			summaries++;
			assert_true(i + merged <= n && p[i + merged - 1].ts <= e && p[i].ts >= s);
			for (k = i; k < i + merged; k++) {
				mn = p[k].v < mn ? p[k].v : mn;
				mx = p[k].v > mx ? p[k].v : mx;
			}
			assert_int_equal(num(it, "ts"), p[i].ts);
			assert_int_equal(num(it, "last_ts"), p[i + merged - 1].ts);
			assert_true(cJSON_GetObjectItemCaseSensitive(it, "first_value")->valuedouble == p[i].v);
			assert_true(cJSON_GetObjectItemCaseSensitive(it, "value")->valuedouble == p[i + merged - 1].v);
			assert_true(cJSON_GetObjectItemCaseSensitive(it, "min")->valuedouble == mn);
			assert_true(cJSON_GetObjectItemCaseSensitive(it, "max")->valuedouble == mx);
			i += merged;
		}
		count++;
	}
	/* nothing left over */
	if (i < n && p[i].ts <= e)
		fail_msg("counter point at %lld in [%lld, %lld] at %lld is missing", (long long)p[i].ts, (long long)s,
			 (long long)e, (long long)res);
	if (summaries && res < QRY_EXACT_RESOLUTION)
		fail_msg("counter summaries at resolution %lld", (long long)res);
	(void)count;
}

static void test_counters_property(void **state)
{
	int64_t track, lo = tdb_int(&T, "SELECT min(ts) FROM counters"), hi = tdb_int(&T, "SELECT max(ts) FROM counters");
	int k;

	(void)state;
	for (track = 1; track <= tdb_int(&T, "SELECT max(id) FROM tracks"); track++) {
		struct point *p;
		sqlite3_stmt *st;
		size_t n = 0, cap = 1024;
		struct rows fake = { 0 };

		if (tdb_int(&T, "SELECT count(*) FROM tracks WHERE id = %lld AND kind = 'counter'", (long long)track) != 1)
			continue;
		p = malloc(cap * sizeof(*p));
		assert_int_equal(sqlite3_prepare_v2(T.db, "SELECT ts, value FROM counters WHERE track_id = ? ORDER BY id",
						    -1, &st, NULL),
				 SQLITE_OK);
		sqlite3_bind_int64(st, 1, track);
		while (sqlite3_step(st) == SQLITE_ROW) {
			if (n == cap)
				p = realloc(p, (cap *= 2) * sizeof(*p));
			p[n].ts = sqlite3_column_int64(st, 0);
			p[n++].v = sqlite3_column_double(st, 1);
		}
		sqlite3_finalize(st);
		assert_true(n > QRY_EXACT_MAX);
		fake.v = calloc(n, sizeof(*fake.v));
		fake.n = n;
		for (k = 0; k < (int)n; k++)
			fake.v[k].ts = p[k].ts;
		for (k = 0; k < 1000; k++) {
			int64_t s, e, res;
			cJSON *j;

			rnd_window(&fake, lo, hi, &s, &e, &res);
			j = ask(qry_counters, T.db, track, s, e, res);
			check_counters(p, n, j, s, e, res);
			cJSON_Delete(j);
		}
		free(fake.v);
		free(p);
	}
}

/* 64-bit values come back exactly: in rows and in summaries' min and max. */
static void test_counters_64bit(void **state)
{
	struct qry_window w = { 0, INT64_MAX, 2000000, 1000000, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;
	int64_t track = tdb_int(&T, "SELECT track_id FROM counters WHERE value > 9000000000000000000 LIMIT 1");
	int64_t top = tdb_int(&T, "SELECT max(value) FROM counters WHERE track_id = %lld", (long long)track);
	char digits[32];

	(void)state;
	jb_init(&b);
	assert_int_equal(qry_counters(T.db, track, &w, &b, &err), QRY_OK);
	jb_raw(&b, "", 1);
	snprintf(digits, sizeof(digits), "\"max\":%lld", (long long)top);
	assert_non_null(strstr(b.p, digits));
	assert_non_null(strstr(b.p, "\"merged\""));
	jb_fini(&b);
}

static void test_sched_property(void **state)
{
	static const char sql[] = "SELECT id, ts, dur, 0 FROM sched WHERE cpu = ? ORDER BY id";
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM sched"), hi = tdb_int(&T, "SELECT max(ts) FROM sched");
	struct rows r;
	int k;

	(void)state;
	rows_read(T.db, sql, 0, &r);
	assert_true(r.n > QRY_EXACT_MAX);
	for (k = 0; k < 1000; k++) {
		int64_t s, e, res;
		size_t i = 0, summaries = 0, expected = 0;
		const cJSON *it;
		cJSON *j;

		rnd_window(&r, lo, hi, &s, &e, &res);
		j = ask(qry_sched, T.db, 0, s, e, res);
		while (i < r.n && !overlaps(&r.v[i], s, e))
			i++;
		for (size_t q = 0; q < r.n; q++)
			expected += (size_t)overlaps(&r.v[q], s, e);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "slices")) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "merged");
			int64_t ts = num(it, "ts"), dur = num(it, "dur");

			assert_true(i < r.n && overlaps(&r.v[i], s, e));
			if (!m) {
				assert_int_equal(ts, r.v[i].ts);
				assert_int_equal(dur, r.v[i].dur);
				i++;
				continue;
			}
			summaries++;
			for (int64_t n = (int64_t)m->valuedouble; n > 0; n--, i++) {
				assert_true(i < r.n && overlaps(&r.v[i], s, e));
				if (r.v[i].dur < 0 || r.v[i].dur >= res || r.v[i].ts < ts || r.v[i].ts + r.v[i].dur > ts + dur)
					fail_msg("a cpu summary [%lld +%lld] at %lld holds run [%lld +%lld]", (long long)ts,
						 (long long)dur, (long long)res, (long long)r.v[i].ts, (long long)r.v[i].dur);
			}
		}
		if (i < r.n && overlaps(&r.v[i], s, e))
			fail_msg("cpu run at %lld in [%lld, %lld] at %lld is missing", (long long)r.v[i].ts, (long long)s,
				 (long long)e, (long long)res);
		if (summaries && (res < QRY_EXACT_RESOLUTION || expected <= QRY_EXACT_MAX))
			fail_msg("cpu summaries in an exact reply");
		cJSON_Delete(j);
	}
	free(r.v);
}

static int logs_of(sqlite3 *db, int64_t key, const struct qry_window *w, struct jbuf *out, struct qry_error *err)
{
	(void)key;
	return qry_logs(db, w, out, err);
}

/* Logs at a resolution: every log of the window once, as itself or in the
 * summary of its pixel column (floor(ts / R)), which starts at the
 * column's first log and says how many there are and the last one's ts. */
static void test_logs_property(void **state)
{
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM logs"), hi = tdb_int(&T, "SELECT max(ts) FROM logs");
	struct rows r;
	int k;

	(void)state;
	rows_read(T.db, "SELECT id, ts, 0, 0 FROM logs ORDER BY id", 0, &r);
	assert_true(r.n > 4 * QRY_EXACT_MAX);
	for (k = 0; k < 1000; k++) {
		int64_t s, e, res, prev_col = INT64_MIN;
		size_t i = 0, summaries = 0, expected = 0;
		const cJSON *it;
		cJSON *j;

		rnd_window(&r, lo, hi, &s, &e, &res);
		j = ask(logs_of, T.db, 0, s, e, res);
		assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "truncated")));
		while (i < r.n && r.v[i].ts < s)
			i++;
		for (size_t q = 0; q < r.n; q++)
			expected += (size_t)(r.v[q].ts >= s && r.v[q].ts <= e);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "logs")) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "merged");
			int64_t ts = num(it, "ts"), col;

			assert_true(i < r.n && r.v[i].ts <= e);
			assert_int_equal(ts, r.v[i].ts);
			if (!m) {
				assert_null(cJSON_GetObjectItemCaseSensitive(it, "last_ts"));
				i++;
				continue;
			}
			summaries++;
			assert_true(m->valuedouble >= 2);
			col = ts / res - (ts % res < 0);
			if (col == prev_col)
				fail_msg("two log summaries in column %lld at %lld", (long long)col, (long long)res);
			prev_col = col;
			for (int64_t n = (int64_t)m->valuedouble; n > 0; n--, i++) {
				assert_true(i < r.n && r.v[i].ts <= e);
				if (r.v[i].ts / res != col)
					fail_msg("a log summary of column %lld at %lld holds a log at %lld", (long long)col,
						 (long long)res, (long long)r.v[i].ts);
				if (n == 1)
					assert_int_equal(num(it, "last_ts"), r.v[i].ts);
			}
			/* a column is summarised whole: its next log is in another */
			assert_true(i == r.n || r.v[i].ts > e || r.v[i].ts / res != col);
		}
		if (i < r.n && r.v[i].ts <= e)
			fail_msg("log at %lld in [%lld, %lld] at %lld is missing", (long long)r.v[i].ts, (long long)s,
				 (long long)e, (long long)res);
		if (summaries && (res < QRY_EXACT_RESOLUTION || expected <= QRY_EXACT_MAX))
			fail_msg("log summaries in an exact reply");
		cJSON_Delete(j);
	}
	free(r.v);
}

/* The whole trace at a thousand pixels: at most an item a column, which
 * together count every log. */
static void test_logs_columns(void **state)
{
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM logs"), hi = tdb_int(&T, "SELECT max(ts) FROM logs");
	int64_t res = (hi - lo) / 1000 + 1, logs = 0;
	const cJSON *it;
	cJSON *j;

	(void)state;
	assert_true(res >= QRY_EXACT_RESOLUTION);
	j = ask(logs_of, T.db, 0, lo, hi, res);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "logs")) <= 1001);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "logs")) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "merged");

		logs += m ? (int64_t)m->valuedouble : 1;
	}
	assert_int_equal(logs, tdb_int(&T, "SELECT count(*) FROM logs"));
	cJSON_Delete(j);
}

/* A cut summarised reply: the first limit items, and "truncated". */
static void test_logs_limit(void **state)
{
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM logs"), hi = tdb_int(&T, "SELECT max(ts) FROM logs");
	struct qry_window w = { lo, hi, 5000, 3, 0, 0, 0 };
	struct qry_error err = { 0 };
	const cJSON *all, *cut;
	cJSON *full, *part;
	struct jbuf b;

	(void)state;
	full = ask(logs_of, T.db, 0, lo, hi, 5000);
	jb_init(&b);
	assert_int_equal(qry_logs(T.db, &w, &b, &err), QRY_OK);
	jb_raw(&b, "", 1);
	part = cJSON_Parse(b.p);
	jb_fini(&b);
	assert_non_null(part);
	all = cJSON_GetObjectItemCaseSensitive(full, "logs");
	cut = cJSON_GetObjectItemCaseSensitive(part, "logs");
	assert_true(cJSON_GetArraySize(all) > 3);
	assert_int_equal(cJSON_GetArraySize(cut), 3);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(part, "truncated")));
	for (int i = 0; i < 3; i++)
		assert_true(cJSON_Compare(cJSON_GetArrayItem(all, i), cJSON_GetArrayItem(cut, i), 1));
	cJSON_Delete(full);
	cJSON_Delete(part);
}

/* The overview of [s, e] in n buckets counts exactly what a scan does. */
static void check_overview(int64_t s, int64_t e, uint32_t n)
{
	struct qry_window w = { s, e, 0, 1, 0, 0, 0 };
	struct qry_error err = { 0 };
	const cJSON *p;
	struct jbuf b;
	cJSON *j;

	jb_init(&b);
	assert_int_equal(qry_overview(T.db, &w, n, &b, &err), QRY_OK);
	jb_raw(&b, "", 1);
	j = cJSON_Parse(b.p);
	assert_non_null(j);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "processes")) {
		const cJSON *c;
		uint32_t i = 0;

		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(p, "counts")) {
			double span = (double)e - (double)s + 1;
			int64_t want = tdb_int(&T,
					       "SELECT count(*) FROM slices x JOIN tracks t ON t.id = x.track_id "
					       "WHERE t.pid = %lld AND x.ts BETWEEN %lld AND %lld AND "
					       "min(CAST((x.ts - %lld) * %u / %.1f AS INTEGER), %u) = %u",
					       (long long)num(p, "pid"), (long long)s, (long long)e, (long long)s, n,
					       span, n - 1, i);

			if ((int64_t)c->valuedouble != want)
				fail_msg("overview of [%lld, %lld] in %u: bucket %u has %lld, a scan counts %lld",
					 (long long)s, (long long)e, n, i, (long long)c->valuedouble, (long long)want);
			i++;
			if (n > 400 && i > 64)
				break; /* the scan per bucket is slow; 64 buckets are enough */
		}
	}
	cJSON_Delete(j);
	jb_fini(&b);
}

/* The overview from the level of detail counts exactly what a scan does. */
static void test_overview_matches_a_scan(void **state)
{
	static const uint32_t sizes[] = { 1, 7, 400, 4096 };
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM slices"), hi = tdb_int(&T, "SELECT max(ts) FROM slices");
	int pass = qry_overview_pass_rows;
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]) * 3 * 2; k++) {
		size_t j = k % 12;
		int64_t s = j < 4 ? lo : lo + (hi - lo) / (int64_t)(j + 1), e = j < 8 ? hi : s + (hi - s) / 3;

		/* every run from the level of detail, then sparse ones in a pass */
		qry_overview_pass_rows = k < 12 ? 0 : pass;
		check_overview(s, e, sizes[j % 4]);
	}
	qry_overview_pass_rows = pass;
}

/* Aligned buckets (2^L ns from a multiple of 2^L: every level-of-detail
 * group of level L or finer lies in one) count what a scan does too, at
 * levels stored and not, over the trace and inside it. */
static void test_overview_aligned_matches_a_scan(void **state)
{
	int64_t lo = tdb_int(&T, "SELECT min(ts) FROM slices"), hi = tdb_int(&T, "SELECT max(ts) FROM slices");
	int level = 10, checked = 0;

	int pass = qry_overview_pass_rows, k;

	(void)state;
	while (((hi >> level) - (lo >> level) + 1) > 4096)
		level++;
	for (k = 0; k < 2; k++) { /* every run from the level of detail, then sparse ones in a pass */
		qry_overview_pass_rows = k == 0 ? 0 : pass;
		for (checked = 0; level + checked < 40 && checked < 4; checked++) {
			int64_t w = INT64_C(1) << (level + checked), s = lo >> (level + checked) << (level + checked);
			uint32_t n = (uint32_t)((hi >> (level + checked)) - (lo >> (level + checked)) + 1);

			check_overview(s, s + (int64_t)n * w - 1, n);
			if (n > 4) /* a window inside the trace: its middle half */
				check_overview(s + (int64_t)(n / 4) * w, s + (int64_t)(n / 4 + n / 2) * w - 1, n / 2);
		}
	}
	qry_overview_pass_rows = pass;
}

/* A database locked by a writer answers QRY_EDB, never a short list. */
static void test_busy_database_is_an_error(void **state)
{
	struct qry_window w = { 0, INT64_MAX, 0, 1000000, 0, 0, 0 };
	struct qry_error err = { 0 };
	struct jbuf b;
	sqlite3 *rd, *wr;
	int64_t track = tdb_int(&T, "SELECT track_id FROM slices LIMIT 1");

	(void)state;
	assert_int_equal(sqlite3_open_v2(T.path, &rd, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_open_v2(T.path, &wr, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	jb_init(&b);
	assert_int_equal(qry_slices(rd, track, &w, &b, &err), QRY_OK); /* schema loaded */
	jb_fini(&b);
	assert_int_equal(sqlite3_exec(wr, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	jb_init(&b);
	assert_int_equal(qry_slices(rd, track, &w, &b, &err), QRY_EDB);
	assert_int_equal(qry_counters(rd, tdb_int(&T, "SELECT track_id FROM counters LIMIT 1"), &w, &b, &err), QRY_EDB);
	assert_int_equal(qry_sched(rd, 0, &w, &b, &err), QRY_EDB);
	assert_int_equal(qry_logs(rd, &w, &b, &err), QRY_EDB);
	assert_int_equal(qry_stats(rd, &w, &b, &err), QRY_EDB);
	jb_fini(&b);
	sqlite3_exec(wr, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(wr);
	sqlite3_close(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slices_small_window_exact),
		cmocka_unit_test(test_slices_property),
		cmocka_unit_test(test_slices_limit_keeps_first),
		cmocka_unit_test(test_counters_property),
		cmocka_unit_test(test_counters_64bit),
		cmocka_unit_test(test_sched_property),
		cmocka_unit_test(test_logs_property),
		cmocka_unit_test(test_logs_columns),
		cmocka_unit_test(test_logs_limit),
		cmocka_unit_test(test_overview_matches_a_scan),
		cmocka_unit_test(test_overview_aligned_matches_a_scan),
		cmocka_unit_test(test_busy_database_is_an_error),
	};

	return cmocka_run_group_tests_name("one extent a group", tests, setup, teardown) |
	       cmocka_run_group_tests_name("extents of 7 rows", tests, setup_extents, teardown);
}
