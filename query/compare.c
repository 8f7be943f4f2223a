/*
 * Comparing two traces: per slice name (or per process name, thread name
 * and slice name), the count, total, p50, p95 and max duration in each trace and the
 * difference b - a, largest regression first.
 *
 * A side's groups are keyed by text: the slice's name, or its process's
 * name, its thread's name and its name, so that the threads of one name in
 * a process of one name (a pool's workers) make one row, and run 2's
 * "app-1 > main" meets run 1's "app-1 > main" whatever their pids, but not
 * "compositor > main". The slices starting inside the
 * window are read once into their groups: count, ended, total, longest,
 * and the ended durations, kept as they come while a group has few of
 * them and counted in a histogram past that. A group's percentiles are
 * exact (nearest rank): the histogram says which of its buckets holds the
 * rank, and a second read keeps only the durations that fall in those
 * buckets. So memory follows the groups (4 KB a group at most), not the
 * slices: it was 24 bytes a slice, 2.3 GB for the 1 GB benchmark trace
 * against itself.
 *
 * The groups of the two sides are then joined by their text, since the
 * two databases number their strings differently.
 */
#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "keymap.h"

struct group {
	char *text;   /* "name", or "process\x1fthread\x1fname" */
	uint64_t count, ended;
	int64_t total, p50, p95, max;
	int64_t slowest; /* slice id, 0 when none ended */
};

struct side {
	struct group *g;
	size_t n;
};

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

/* ---- a group's durations ----------------------------------------------- */

/* Durations a group keeps as they come; past that, a histogram. */
enum { ACC_SMALL = 512 };

/* Histogram buckets: 0-31 one each, then 16 a power of two. Buckets never
 * decrease with the duration, so a rank's bucket holds the rank's value. */
enum { ACC_BUCKETS = 32 + 58 * 16 };

static unsigned acc_bucket(int64_t d)
{
	int e;

	if (d < 32)
		return (unsigned)d;
	e = 63 - __builtin_clzll((unsigned long long)d);
	return 32 + (unsigned)(e - 5) * 16 + (unsigned)((d >> (e - 4)) & 15);
}

/* The rank of the nearest-rank pct-th percentile of n values, from 1. */
static uint64_t rank_of(uint64_t n, unsigned pct)
{
	uint64_t r = n / 100 * pct + (n % 100 * pct + 99) / 100;

	return r ? r : 1;
}

struct acc {
	uint64_t key;        /* place (struct places) << 32 | name id */
	uint64_t count, ended;
	int64_t total, max, slowest;
	int64_t *v;          /* the durations while ended <= ACC_SMALL; then those
			      * of the percentiles' buckets (second read) */
	size_t nv, capv;
	uint32_t *hist;      /* past ACC_SMALL: ended durations by bucket */
	unsigned b[2];       /* the buckets of p50 and p95 */
	uint64_t k[2];       /* their ranks inside them, from 1 */
};

struct accs {
	struct acc *a;
	size_t n, cap;
	struct qkeymap map;  /* key -> acc + 1 */
	int hists;           /* some group has a histogram: a second read */
};

static void accs_free(struct accs *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->a[i].v);
		free(t->a[i].hist);
	}
	free(t->a);
	qkm_free(&t->map);
}

/* The group of key, or NULL: made when new and make is set (NULL then
 * means out of memory). */
static struct acc *acc_of(struct accs *t, uint64_t key, int make)
{
	uint32_t i;

	if (!make)
		return (i = qkm_find(&t->map, key)) != 0 ? &t->a[i - 1] : NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct acc *grown = cap < UINT32_MAX ? realloc(t->a, cap * sizeof(*grown)) : NULL;

		if (grown == NULL)
			return NULL;
		t->a = grown;
		t->cap = cap;
	}
	if ((i = qkm_intern(&t->map, key, (uint32_t)t->n + 1)) == 0)
		return NULL;
	if (i == t->n + 1) { /* new */
		memset(&t->a[t->n], 0, sizeof(t->a[t->n]));
		t->a[t->n++].key = key;
	}
	return &t->a[i - 1];
}

static int acc_keep(struct acc *g, int64_t d)
{
	if (g->nv == g->capv) {
		size_t cap = g->capv ? g->capv * 2 : 8;
		int64_t *grown = realloc(g->v, cap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		g->v = grown;
		g->capv = cap;
	}
	g->v[g->nv++] = d;
	return 0;
}

/* One slice of the group (first read). 0, or -1 when out of memory. */
static int acc_add(struct accs *t, struct acc *g, int64_t dur, int64_t id)
{
	size_t i;

	g->count++;
	if (dur < 0) /* never ended: counted, in no figure */
		return 0;
	g->ended++;
	g->total = dur > INT64_MAX - g->total ? INT64_MAX : g->total + dur; /* as name_stats' total */
	if (g->ended == 1 || dur > g->max || (dur == g->max && id > g->slowest)) {
		g->max = dur;
		g->slowest = id;
	}
	if (g->hist == NULL && g->nv < ACC_SMALL)
		return acc_keep(g, dur);
	if (g->hist == NULL) {
		if ((g->hist = calloc(ACC_BUCKETS, sizeof(*g->hist))) == NULL)
			return -1;
		for (i = 0; i < g->nv; i++)
			g->hist[acc_bucket(g->v[i])]++;
		free(g->v);
		g->v = NULL;
		g->nv = g->capv = 0;
		t->hists = 1;
	}
	g->hist[acc_bucket(dur)]++;
	return 0;
}

/* After the first read: where each percentile of a histogram lies. */
static void acc_locate(struct acc *g)
{
	static const unsigned pct[2] = { 50, 95 };
	uint64_t below = 0;
	unsigned b = 0;
	int p;

	for (p = 0; p < 2; p++) {
		uint64_t rank = rank_of(g->ended, pct[p]);

		while (below + g->hist[b] < rank)
			below += g->hist[b++];
		g->b[p] = b;
		g->k[p] = rank - below;
	}
}

/* A duration of the second read, kept when it falls in a percentile's
 * bucket. 0, or -1 when out of memory. */
static int acc_collect(struct acc *g, int64_t dur)
{
	unsigned b;

	if (dur < 0 || g->hist == NULL)
		return 0;
	b = acc_bucket(dur);
	return b == g->b[0] || b == g->b[1] ? acc_keep(g, dur) : 0;
}

static int dur_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The group's p50 and p95, once its durations are in (sorts them). */
static void acc_percentiles(struct acc *g, struct group *out)
{
	size_t lo;
	int p;

	if (g->ended == 0)
		return;
	qsort(g->v, g->nv, sizeof(*g->v), dur_cmp);
	if (g->hist == NULL) { /* every duration */
		out->p50 = g->v[rank_of(g->nv, 50) - 1];
		out->p95 = g->v[rank_of(g->nv, 95) - 1];
		return;
	}
	/* the durations of the two buckets, the lower one's first (the
	 * second read met what the first counted: one read transaction) */
	for (p = 0; p < 2 && g->nv > 0; p++) {
		lo = 0;
		while (lo < g->nv && acc_bucket(g->v[lo]) != g->b[p])
			lo++;
		lo += g->k[p] - 1;
		*(p ? &out->p95 : &out->p50) = g->v[lo < g->nv ? lo : g->nv - 1];
	}
}

/* ---- reading a side ---------------------------------------------------- */

/* Where a slice is, by name, each once: "process\x1fthread" for a thread
 * track's slices, "process\x1f" for an async track's (a track of no
 * process, or a process or thread without a name, has "" there). A
 * thread's row id, and an async track's pid, to that text's index. */
struct place {
	int64_t id;        /* threads.id, or processes.pid */
	uint32_t name;     /* its text's index in text */
};

struct places {
	struct place *th;  /* threads, by id */
	struct place *pr;  /* processes, by pid */
	char **text;       /* the distinct texts; index 0 is "\x1f" (no
			    * process, no thread) */
	size_t nth, npr, ntext;
	size_t capth, cappr;
};

static void places_free(struct places *t)
{
	size_t i;

	for (i = 0; i < t->ntext; i++)
		free(t->text[i]);
	free(t->text);
	free(t->th);
	free(t->pr);
}

static int place_cmp(const void *a, const void *b)
{
	const struct place *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Adds (id, the last text) to threads (kind 0) or processes (kind 1).
 * 0, or -1 when out of memory. */
static int places_add(struct places *t, int kind, int64_t id)
{
	struct place **a = kind ? &t->pr : &t->th;
	size_t *n = kind ? &t->npr : &t->nth, *cap = kind ? &t->cappr : &t->capth;

	if (*n == *cap) {
		struct place *grown = realloc(*a, (*cap = *cap ? *cap * 2 : 64) * sizeof(*grown));

		if (grown == NULL)
			return -1;
		*a = grown;
	}
	(*a)[*n].id = id;
	(*a)[(*n)++].name = (uint32_t)(t->ntext - 1);
	return 0;
}

/* Makes s the last text, unless it is the last one already (the texts
 * come in order): 0, or -1 when out of memory. */
static int places_text(struct places *t, size_t *tcap, const char *s)
{
	if (strcmp(s, t->text[t->ntext - 1]) == 0)
		return 0;
	if (t->ntext == *tcap) {
		char **grown = realloc(t->text, (*tcap * 2) * sizeof(*grown));

		if (grown == NULL)
			return -1;
		t->text = grown;
		*tcap *= 2;
	}
	if ((t->text[t->ntext] = strdup(s)) == NULL)
		return -1;
	t->ntext++;
	return 0;
}

/* Reads every thread's and process's text, in text order so that a new
 * text is one unlike the last. QRY_OK, QRY_EDB (failed holds the error)
 * or QRY_ENOMEM; the caller frees t either way. */
static int places_read(sqlite3 *db, struct places *t, int *failed)
{
	struct qry_error ignored; /* read_side tells the error */
	struct qcur c;
	size_t tcap = 1;
	int rc = QRY_OK;

	memset(t, 0, sizeof(*t));
	if ((t->text = malloc(tcap * sizeof(*t->text))) == NULL || (t->text[0] = strdup("\x1f")) == NULL)
		return QRY_ENOMEM;
	t->ntext = 1;
	if (qcur_open(&c, db,
		      "SELECT 0, t.id, coalesce(p.name, '') || char(31) || coalesce(t.name, '') AS k "
		      "FROM threads t LEFT JOIN processes p ON p.pid = t.pid UNION ALL SELECT 1, pid, "
		      "coalesce(name, '') || char(31) FROM processes ORDER BY 3, 1, 2",
		      &ignored) != QRY_OK) {
		*failed = c.err;
		return QRY_EDB;
	}
	while (rc == QRY_OK && qcur_step(&c))
		if (places_text(t, &tcap, qcur_is_null(&c, 2) ? "\x1f" : qcur_text(&c, 2)) != 0 ||
		    places_add(t, (int)qcur_int(&c, 0), qcur_int(&c, 1)) != 0)
			rc = QRY_ENOMEM;
	if ((*failed = qcur_close(&c, 0)) != 0 && rc == QRY_OK)
		rc = QRY_EDB;
	if (rc != QRY_OK)
		return rc;
	if (t->nth > 1) /* th is NULL without threads: qsort may not be given it */
		qsort(t->th, t->nth, sizeof(*t->th), place_cmp);
	if (t->npr > 1)
		qsort(t->pr, t->npr, sizeof(*t->pr), place_cmp);
	return QRY_OK;
}

/* The text index of id in a (n places by id): 0 ("\x1f") when absent. */
static uint32_t place_of(const struct place *a, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && a[lo].id == id ? a[lo].name : 0;
}

/* The text index of the slice row c is on: its thread's, else (an async
 * track) its process's. Columns: 0 thread id, 4 pid (NULL when none). */
static uint32_t place_of_row(const struct places *t, struct qcur *c)
{
	if (!qcur_is_null(c, 0))
		return place_of(t->th, t->nth, qcur_int(c, 0));
	if (!qcur_is_null(c, 4))
		return place_of(t->pr, t->npr, qcur_int(c, 4));
	return 0;
}

/* The text of a group (the caller frees it); NULL when out of memory or
 * when a read failed (then name holds its error). */
static char *group_text(struct qcur *name, const struct places *th, uint64_t key, int by_thread)
{
	const char *t = by_thread ? th->text[key >> 32] : "";
	const char *n;
	size_t ln, lt = by_thread ? strlen(t) + 1 : 0;
	char *out = NULL;

	qcur_bind(name, 1, (int64_t)(key & 0xffffffffu));
	n = qcur_step(name) ? qcur_text(name, 0) : "";
	if (name->err == 0) {
		ln = strlen(n);
		if ((out = malloc(lt + ln + 1)) != NULL) {
			if (by_thread) {
				memcpy(out, t, lt - 1);
				out[lt - 1] = '\x1f';
			}
			memcpy(out + lt, n, ln + 1);
		}
	}
	qcur_reset(name);
	return out;
}

/* Reads the window's slices through c into t: the first read (collect
 * 0), or the second, keeping the percentiles' buckets (collect 1).
 * Returns 0, c's SQLite error, or -1 when out of memory. */
static int read_slices(struct qcur *c, const struct places *th, int by_thread, struct accs *t, int collect)
{
	int rc = 0;

	while (rc == 0 && qcur_step(c)) {
		uint64_t tn = by_thread ? place_of_row(th, c) : 0;
		uint64_t key = tn << 32 | (uint32_t)qcur_int(c, 1);
		int64_t dur = qcur_int(c, 2);
		struct acc *g = acc_of(t, key, !collect);

		if (g == NULL) {
			if (!collect)
				rc = -1; /* else not read the first time: the database changed */
		} else if (collect ? acc_collect(g, dur) : acc_add(t, g, dur, qcur_int(c, 3))) {
			rc = -1;
		}
	}
	qcur_reset(c);
	return rc != 0 ? rc : c->err;
}

static int read_side(sqlite3 *db, const struct qry_window *w, int by_thread, struct side *out, struct qry_error *err)
{
	struct qcur st = { NULL, 0 }, name = { NULL, 0 };
	struct places th = { 0 };
	struct accs t = { 0 };
	size_t i;
	int rc, failed = 0;

	memset(out, 0, sizeof(*out));
	if (qcur_open(&st, db,
		      by_thread ? "SELECT k.thread_id, s.name_id, s.dur, s.id, k.pid FROM slices s JOIN "
				  "tracks k ON k.id = s.track_id WHERE s.ts BETWEEN ?1 AND ?2"
				: "SELECT 0, name_id, dur, id FROM slices WHERE ts BETWEEN ?1 AND ?2",
		      err) != QRY_OK ||
	    qcur_open(&name, db, "SELECT str FROM strings WHERE id = ?", err) != QRY_OK)
		goto db_fail;
	if (by_thread && (rc = places_read(db, &th, &failed)) != QRY_OK) {
		if (rc == QRY_ENOMEM)
			goto nomem;
		goto out_fail;
	}
	qcur_bind(&st, 1, w->start);
	qcur_bind(&st, 2, w->end);
	if ((rc = read_slices(&st, &th, by_thread, &t, 0)) != 0) {
		if (rc < 0)
			goto nomem;
		failed = rc;
		goto out_fail;
	}
	if (t.hists) {
		for (i = 0; i < t.n; i++)
			if (t.a[i].hist != NULL)
				acc_locate(&t.a[i]);
		if ((rc = read_slices(&st, &th, by_thread, &t, 1)) != 0) {
			if (rc < 0)
				goto nomem;
			failed = rc;
			goto out_fail;
		}
	}
	if (t.n > 0 && (out->g = calloc(t.n, sizeof(*out->g))) == NULL)
		goto nomem;
	for (i = 0; i < t.n; i++) {
		struct group *g = &out->g[out->n];

		if ((g->text = group_text(&name, &th, t.a[i].key, by_thread)) == NULL) {
			failed = name.err;
			goto out_fail;
		}
		out->n++;
		g->count = t.a[i].count;
		g->ended = t.a[i].ended;
		g->total = t.a[i].total;
		if (g->ended) {
			acc_percentiles(&t.a[i], g);
			g->max = t.a[i].max;
			g->slowest = t.a[i].slowest;
		}
	}
	if ((failed = qcur_close(&name, qcur_close(&st, 0))) != 0)
		goto out_fail;
	places_free(&th);
	accs_free(&t);
	if (out->n > 1) /* g is NULL without groups */
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
	qcur_close(&st, 0);
	qcur_close(&name, 0);
	places_free(&th);
	accs_free(&t);
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
		if (o->by_thread) { /* "process\x1fthread\x1fname" */
			jb_key(out, "process");
			jb_strn(out, text, (size_t)(sep - text));
			text = sep + 1;
			sep = strchr(text, '\x1f');
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
