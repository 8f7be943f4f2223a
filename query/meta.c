/*
 * What the catalog keeps of a trace, read from the trace's own tables here,
 * the one module that reads them: its providers and the names of its first
 * processes (the summary the library lists), and its per-name statistics
 * (copied into the catalog's index for search across traces; read here for
 * a trace still growing, which the index holds only once it is ready).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tracedb/sketch.h"
#include "cursor.h"

enum { META_PROCESSES = 64 }; /* processes named in the summary, by pid */

/* Appends one array of rows (key: name) from sql, each column as the given
 * JSON member; QRY_OK, or QRY_EDB when a step fails. */
static int rows_json(sqlite3 *db, const char *key, const char *sql, const char *const *members, const int *is_u64,
		     int ncol, struct jbuf *b, struct qry_error *err)
{
	struct qcur c;
	int i;

	jb_key(b, key);
	jb_arr(b);
	if (qcur_open(&c, db, sql, err) != QRY_OK)
		return err->code;
	while (qcur_step(&c)) {
		jb_obj(b);
		for (i = 0; i < ncol; i++) {
			jb_key(b, members[i]);
			if (is_u64[i])
				jb_u64(b, (uint64_t)qcur_int(&c, i));
			else
				qcur_put(&c, b, i);
		}
		jb_obj_end(b);
	}
	jb_arr_end(b);
	return qcur_done(QRY_OK, qcur_close(&c, 0), err);
}

int qry_trace_metadata(sqlite3 *db, struct jbuf *b, struct qry_error *err)
{
	static const char *const prov[] = { "id", "name", "ticks_per_second", "buffer_overflows" };
	static const int prov_u64[] = { 1, 0, 1, 1 };
	static const char *const proc[] = { "pid", "name" };
	static const int proc_u64[] = { 1, 0 };
	char sql[96];
	int rc;

	rc = rows_json(db, "providers", "SELECT id, name, ticks_per_second, buffer_overflows FROM providers ORDER BY id",
		       prov, prov_u64, 4, b, err);
	if (rc != QRY_OK)
		return rc;
	/* pids are unsigned (docs/API.md): those of 2^63 and more, stored
	 * negative, come after the others */
	snprintf(sql, sizeof(sql), "SELECT pid, name FROM processes ORDER BY pid < 0, pid LIMIT %d", META_PROCESSES);
	return rows_json(db, "processes", sql, proc, proc_u64, 2, b, err);
}

/* Hands on the rows of name_stats that sql selects (its one parameter q,
 * when q is not NULL), each with its name; QRY_OK, or QRY_EDB. */
static int stored_stats(sqlite3 *db, const char *sql, const char *q,
			int (*fn)(void *ctx, const struct qry_name_stat *s), void *ctx, struct qry_error *err)
{
	struct qcur c;
	int rc = qcur_open(&c, db, sql, err);

	if (rc == QRY_OK && q != NULL)
		qcur_bind_text(&c, 1, q);
	while (rc == QRY_OK && qcur_step(&c)) {
		struct qry_name_stat n;
		int len;

		if (qcur_is_null(&c, 0))
			continue;
		n.name = qcur_text(&c, 0);
		n.count = qcur_int(&c, 1);
		n.ended = qcur_int(&c, 2);
		n.total_ns = qcur_int(&c, 3);
		n.max_ns = qcur_int(&c, 4);
		n.sketch = qcur_blob(&c, 5, &len);
		n.sketch_len = (size_t)len;
		if (c.err == 0 && fn(ctx, &n) != 0) /* a value SQLite could not hand over is not handed on */
			rc = qry_fail(err, QRY_EDB, "the name statistics could not be kept");
	}
	return qcur_done(rc, qcur_close(&c, 0), err);
}

#define STORED_STATS_SQL                                                                                  \
	"SELECT s.str, n.count, n.ended, n.total_ns, n.max_ns, n.sketch FROM name_stats n "               \
	"JOIN strings s ON s.id = n.name_id"

int qry_name_stats(sqlite3 *db, int (*fn)(void *ctx, const struct qry_name_stat *s), void *ctx,
		   struct qry_error *err)
{
	return stored_stats(db, STORED_STATS_SQL, NULL, fn, ctx, err);
}

/* ---- the statistics of the names matching a text ------------------------- */

/* One name's figures, as ingest/names.c makes them (put_stats). */
struct nm_name {
	int64_t id;
	int64_t count, ended, total, max;
};

/* Open addressing: names by string id, and (name, bucket) counts. */
struct nm_acc {
	struct nm_name *name;
	uint32_t *name_slot; /* index in name + 1; 0: empty */
	size_t nname, name_mask;
	uint64_t *key;       /* (name index + 1) << 16 | bucket; 0: empty */
	int64_t *cnt;
	size_t nkey, key_mask;
};

static size_t nm_hash(uint64_t k, size_t mask)
{
	return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 29) & mask;
}

/* Doubles the names' table (or makes it); 0, or -1 when out of memory. */
static int nm_grow_names(struct nm_acc *a)
{
	size_t mask = a->name_mask ? a->name_mask * 2 + 1 : 63, i, j;
	uint32_t *slot = calloc(mask + 1, sizeof(*slot));
	struct nm_name *name = realloc(a->name, (mask + 1) / 2 * sizeof(*name));

	if (slot == NULL || name == NULL) {
		free(slot);
		if (name != NULL)
			a->name = name;
		return -1;
	}
	for (i = 0; i < a->nname; i++) {
		for (j = nm_hash((uint64_t)name[i].id, mask); slot[j]; j = (j + 1) & mask)
			;
		slot[j] = (uint32_t)i + 1;
	}
	free(a->name_slot);
	a->name_slot = slot;
	a->name = name;
	a->name_mask = mask;
	return 0;
}

/* The same for the (name, bucket) counts. */
static int nm_grow_keys(struct nm_acc *a)
{
	size_t mask = a->key_mask ? a->key_mask * 2 + 1 : 1023, i, j;
	uint64_t *key = calloc(mask + 1, sizeof(*key));
	int64_t *cnt = calloc(mask + 1, sizeof(*cnt));

	if (key == NULL || cnt == NULL) {
		free(key);
		free(cnt);
		return -1;
	}
	for (i = 0; i <= a->key_mask && a->key; i++) {
		if (a->key[i] == 0)
			continue;
		for (j = nm_hash(a->key[i], mask); key[j]; j = (j + 1) & mask)
			;
		key[j] = a->key[i];
		cnt[j] = a->cnt[i];
	}
	free(a->key);
	free(a->cnt);
	a->key = key;
	a->cnt = cnt;
	a->key_mask = mask;
	return 0;
}

/* A slice of name id lasting dur (-1: never ended); 0, or -1 when out of memory. */
static int nm_add(struct nm_acc *a, int64_t id, int64_t dur)
{
	struct nm_name *n;
	uint64_t k;
	size_t j;

	if (2 * (a->nname + 1) > a->name_mask + 1 && nm_grow_names(a) != 0)
		return -1;
	for (j = nm_hash((uint64_t)id, a->name_mask); a->name_slot[j]; j = (j + 1) & a->name_mask)
		if (a->name[a->name_slot[j] - 1].id == id)
			break;
	if (a->name_slot[j] == 0) {
		n = &a->name[a->nname++];
		memset(n, 0, sizeof(*n));
		n->id = id;
		a->name_slot[j] = (uint32_t)a->nname;
	}
	n = &a->name[a->name_slot[j] - 1];
	n->count++;
	if (dur < 0)
		return 0;
	n->ended++;
	n->total = dur > INT64_MAX - n->total ? INT64_MAX : n->total + dur;
	if (dur > n->max)
		n->max = dur;
	if (2 * (a->nkey + 1) > a->key_mask + 1 && nm_grow_keys(a) != 0)
		return -1;
	k = (uint64_t)a->name_slot[j] << 16 | sketch_bucket(dur);
	for (j = nm_hash(k, a->key_mask); a->key[j] && a->key[j] != k; j = (j + 1) & a->key_mask)
		;
	if (a->key[j] == 0) {
		a->key[j] = k;
		a->nkey++;
	}
	a->cnt[j]++;
	return 0;
}

struct nm_pair {
	uint64_t key;
	int64_t cnt;
};

static int nm_pair_cmp(const void *x, const void *y)
{
	uint64_t a = ((const struct nm_pair *)x)->key, b = ((const struct nm_pair *)y)->key;

	return a < b ? -1 : a > b;
}

/* Hands on every name of a (its text read by id through c) with its
 * sketch; 0, or -1 (out of memory, a read or fn failed). */
static int nm_emit(struct nm_acc *a, struct qcur *text, int (*fn)(void *ctx, const struct qry_name_stat *s), void *ctx)
{
	struct sketch *sk = malloc(sizeof(*sk));
	uint8_t *enc = malloc(SKETCH_MAX_BYTES);
	struct nm_pair *p = malloc((a->nkey + 1) * sizeof(*p));
	size_t i, k = 0, at = 0;
	int rc = -1;

	if (sk == NULL || enc == NULL || p == NULL)
		goto out;
	for (i = 0; a->key && i <= a->key_mask; i++)
		if (a->key[i] != 0) {
			p[k].key = a->key[i];
			p[k++].cnt = a->cnt[i];
		}
	qsort(p, k, sizeof(*p), nm_pair_cmp); /* by name, then bucket */
	for (i = 0; i < a->nname; i++) {
		const struct nm_name *n = &a->name[i];
		struct qry_name_stat st;

		memset(sk, 0, sizeof(*sk));
		for (; at < k && p[at].key >> 16 == i + 1; at++) {
			sk->b[p[at].key & 0xFFFF] += (uint64_t)p[at].cnt;
			sk->n += (uint64_t)p[at].cnt;
		}
		qcur_bind(text, 1, n->id);
		if (!qcur_step(text)) {
			qcur_reset(text);
			if (text->err)
				goto out;
			continue; /* a name without its text: nothing search can match */
		}
		st.name = qcur_text(text, 0);
		st.count = n->count;
		st.ended = n->ended;
		st.total_ns = n->total;
		st.max_ns = n->max;
		st.sketch = enc;
		st.sketch_len = sketch_encode(sk, enc);
		if (text->err || fn(ctx, &st) != 0)
			goto out;
		qcur_reset(text);
	}
	rc = 0;
out:
	free(sk);
	free(enc);
	free(p);
	return rc;
}

/*
 * A growing trace between pauses has no name_stats yet (ingest/commit.h:
 * a pause's layer and the end write them): its committed slices are read
 * instead, once each, and their figures made as ingest makes them, so
 * that they equal those a file ingest of the same slices would write.
 */
int qry_name_stats_matching(sqlite3 *db, const char *q, int (*fn)(void *ctx, const struct qry_name_stat *s),
			    void *ctx, struct qry_error *err)
{
	struct nm_acc a = { 0 };
	struct qcur c, text = { 0 };
	int rc, failed, stored = 0;

	rc = qcur_open(&c, db, "SELECT EXISTS (SELECT 1 FROM name_stats)", err);
	if (rc == QRY_OK && qcur_step_required(&c))
		stored = (int)qcur_int(&c, 0);
	if ((failed = qcur_close(&c, 0)) != 0 || rc != QRY_OK)
		return qcur_done(rc, failed, err);
	if (stored)
		return stored_stats(db, STORED_STATS_SQL " WHERE instr(lower(s.str), lower(?1)) > 0", q, fn, ctx, err);
	rc = qcur_open(&c, db,
		       "SELECT name_id, dur FROM slices WHERE name_id IN "
		       "(SELECT id FROM strings WHERE instr(lower(str), lower(?1)) > 0)",
		       err);
	qcur_bind_text(&c, 1, q);
	while (rc == QRY_OK && qcur_step(&c))
		if (nm_add(&a, qcur_int(&c, 0), qcur_int(&c, 1)) != 0)
			rc = qry_fail(err, QRY_EDB, "out of memory for the name statistics");
	if (rc == QRY_OK && c.err == 0 && (rc = qcur_open(&text, db, "SELECT str FROM strings WHERE id = ?", err)) == QRY_OK &&
	    nm_emit(&a, &text, fn, ctx) != 0 && text.err == 0)
		rc = qry_fail(err, QRY_EDB, "the name statistics could not be kept");
	free(a.name);
	free(a.name_slot);
	free(a.key);
	free(a.cnt);
	return qcur_done(rc, qcur_close(&text, qcur_close(&c, 0)), err);
}
