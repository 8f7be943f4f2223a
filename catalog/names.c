/*
 * The name index and search across traces.
 *
 * When a trace becomes ready, its per-name statistics (the count, the
 * total and longest duration and a duration sketch, tracedb/sketch.h),
 * which ingest wrote into the trace's own name_stats table, are copied
 * into catalog.db (names, name_stats), a row per name. A search
 * reads only them: the names table is scanned for the text (a few
 * thousand distinct names, not millions of slices) and name_stats is read
 * by name, so it costs the same whatever the traces' sizes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "catalog_internal.h"
#include "../tracedb/sketch.h"

/* Copies the trace's name statistics (its name_stats table, which ingest
 * wrote) into the catalog, in one transaction. */
static int write_rows(sqlite3 *cat, sqlite3 *db, int64_t trace)
{
	sqlite3_stmt *src = NULL, *ins_name = NULL, *get_name = NULL, *ins = NULL, *del = NULL;
	int rc = -1, step;

	if (sqlite3_exec(cat, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT s.str, n.count, n.ended, n.total_ns, n.max_ns, n.sketch FROM name_stats n "
			       "JOIN strings s ON s.id = n.name_id",
			       -1, &src, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(cat, "INSERT OR IGNORE INTO names (name) VALUES (?)", -1, &ins_name, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(cat, "SELECT id FROM names WHERE name = ?", -1, &get_name, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(cat, "DELETE FROM name_stats WHERE trace_id = ?", -1, &del, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(cat,
			       "INSERT INTO name_stats (name_id, trace_id, count, ended, total_ns, max_ns, sketch) "
			       "VALUES (?, ?, ?, ?, ?, ?, ?)",
			       -1, &ins, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(del, 1, trace);
	if (sqlite3_step(del) != SQLITE_DONE)
		goto out;
	while ((step = sqlite3_step(src)) == SQLITE_ROW) {
		const unsigned char *name = sqlite3_column_text(src, 0);
		int i;

		if (name == NULL)
			continue;
		sqlite3_bind_text(ins_name, 1, (const char *)name, -1, SQLITE_STATIC);
		sqlite3_bind_text(get_name, 1, (const char *)name, -1, SQLITE_STATIC);
		if (sqlite3_step(ins_name) != SQLITE_DONE || sqlite3_step(get_name) != SQLITE_ROW)
			goto out;
		sqlite3_bind_int64(ins, 1, sqlite3_column_int64(get_name, 0));
		sqlite3_reset(ins_name);
		sqlite3_reset(get_name);
		sqlite3_bind_int64(ins, 2, trace);
		for (i = 1; i <= 4; i++)
			sqlite3_bind_int64(ins, i + 2, sqlite3_column_int64(src, i));
		sqlite3_bind_blob(ins, 7, sqlite3_column_blob(src, 5), sqlite3_column_bytes(src, 5), SQLITE_STATIC);
		/* strings are distinct (ingest interns them): one row per name */
		if (sqlite3_step(ins) != SQLITE_DONE)
			goto out;
		sqlite3_reset(ins);
	}
	rc = step == SQLITE_DONE ? 0 : -1;
out:
	sqlite3_finalize(src);
	sqlite3_finalize(ins_name);
	sqlite3_finalize(get_name);
	sqlite3_finalize(ins);
	sqlite3_finalize(del);
	if (sqlite3_exec(cat, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		rc = -1;
	return rc;
}

int cat_index_trace(struct catalog *c, int64_t id, const char *db_path)
{
	sqlite3 *db = NULL, *cat = NULL;
	const char *why;
	char path[4096];
	int rc = -1;

	snprintf(path, sizeof(path), "%s/catalog.db", c->dir);
	if ((db = tracedb_open_readonly(db_path, &why)) != NULL &&
	    sqlite3_open_v2(path, &cat, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(cat, 10000);
		rc = write_rows(cat, db, id);
	}
	if (rc != 0)
		fprintf(stderr, "trace-server: the name index of trace %" PRId64 " was not built: %s\n", id,
			cat ? sqlite3_errmsg(cat) : "cannot open");
	sqlite3_close(db);
	sqlite3_close(cat);
	return rc;
}

void cat_unindex_locked(struct catalog *c, int64_t id)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(c->db, "DELETE FROM name_stats WHERE trace_id = ?", -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_step(st);
	sqlite3_finalize(st);
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
};

static void hit_free(struct hit *h, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < h[i].nnames; j++)
			free(h[i].names[j]);
	free(h);
}

/* Reads every matching row, one hit per trace (rows come in trace order).
 * CROSS JOIN keeps names the outer loop: left to itself the planner walks
 * name_stats in trace order to spare the sort, reading every row. */
static int search_rows(sqlite3 *db, const char *q, struct hit **out, size_t *nout)
{
	sqlite3_stmt *st;
	struct hit *v = NULL, *h = NULL;
	struct sketch *sk = calloc(1, sizeof(*sk));
	size_t n = 0, cap = 0;
	int rc;

	if (sk == NULL || sqlite3_prepare_v2(db,
				       "SELECT s.trace_id, n.name, s.count, s.ended, s.total_ns, s.max_ns, s.sketch "
				       "FROM names n CROSS JOIN name_stats s ON s.name_id = n.id "
				       "WHERE instr(lower(n.name), lower(?1)) > 0 ORDER BY s.trace_id, n.name",
				       -1, &st, NULL) != SQLITE_OK) {
		free(sk);
		return -1;
	}
	sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t trace = sqlite3_column_int64(st, 0);

		if (h == NULL || h->trace != trace) {
			if (h) {
				h->p50 = sketch_quantile(sk, 0.50, 0, h->max);
				h->p95 = sketch_quantile(sk, 0.95, 0, h->max);
			}
			if (n == cap) {
				struct hit *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

				if (nv == NULL)
					break;
				v = nv;
			}
			h = &v[n++];
			memset(h, 0, sizeof(*h));
			memset(sk, 0, sizeof(*sk));
			h->trace = trace;
		}
		h->count += (uint64_t)sqlite3_column_int64(st, 2);
		h->ended += (uint64_t)sqlite3_column_int64(st, 3);
		h->total += sqlite3_column_int64(st, 4);
		if (sqlite3_column_int64(st, 5) > h->max)
			h->max = sqlite3_column_int64(st, 5);
		if (sketch_merge(sk, sqlite3_column_blob(st, 6), (size_t)sqlite3_column_bytes(st, 6)) != 0) {
			rc = SQLITE_CORRUPT;
			break;
		}
		if (h->nnames < SEARCH_NAMES_SHOWN)
			h->names[h->nnames++] = strdup((const char *)sqlite3_column_text(st, 1));
		else
			h->more_names++;
	}
	if (h) {
		h->p50 = sketch_quantile(sk, 0.50, 0, h->max);
		h->p95 = sketch_quantile(sk, 0.95, 0, h->max);
	}
	sqlite3_finalize(st);
	free(sk);
	if (rc != SQLITE_DONE) {
		hit_free(v, n);
		return -1;
	}
	*out = v;
	*nout = n;
	return 0;
}

int cat_search_json(struct catalog *c, const char *q, size_t limit, struct jbuf *out, char *err, size_t errlen)
{
	struct hit *hits = NULL;
	size_t n = 0, i, j, shown = 0, unindexed = 0;
	int rc;

	pthread_mutex_lock(&c->read_mu);
	rc = search_rows(c->reader, q, &hits, &n);
	if (rc != 0)
		snprintf(err, errlen, "the catalog could not be searched: %s", sqlite3_errmsg(c->reader));
	pthread_mutex_unlock(&c->read_mu);
	if (rc != 0)
		return -1;
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < c->n; i++)
		unindexed += c->v[i]->status == TS_READY && c->v[i]->indexed != 1;
	jb_obj(out);
	jb_key(out, "query");
	jb_str(out, q);
	jb_key(out, "traces");
	jb_arr(out);
	/* newest trace first: rows came in id order */
	for (i = n; i > 0 && shown < limit; i--) {
		const struct hit *h = &hits[i - 1];
		const struct trace_rec *r = cat_find(c, h->trace);

		if (r == NULL || r->status != TS_READY)
			continue;
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, r->id);
		jb_key(out, "name");
		jb_str(out, r->name);
		jb_key(out, "created_at");
		jb_str(out, r->created_at);
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
		shown++;
	}
	jb_arr_end(out);
	/* cut only when a ready trace is left over: others are never shown */
	for (; i > 0; i--) {
		const struct trace_rec *r = cat_find(c, hits[i - 1].trace);

		if (r != NULL && r->status == TS_READY)
			break;
	}
	jb_key(out, "truncated");
	jb_bool(out, i > 0);
	jb_key(out, "unindexed");
	jb_u64(out, unindexed);
	jb_obj_end(out);
	pthread_mutex_unlock(&c->mu);
	hit_free(hits, n);
	return 0;
}
