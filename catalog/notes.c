/*
 * Notes on traces (notes.h): checks, the catalog database's rows (catdb.h)
 * and their JSON. The records' lock (c->mu) is taken only to read a
 * trace's state and name, never while the database is asked: a row
 * callback copies what it needs, and the JSON is written afterwards.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog_internal.h"

/* A note read from the database, its strings its own. */
struct note_row {
	struct catdb_note n;
	char *strs;            /* text, author, created_at, edited_at, back to back */
};

struct note_rows {
	struct note_row *v;
	size_t n, cap;
	int oom;
};

static int note_copy(void *ctx, const struct catdb_note *n)
{
	struct note_rows *rows = ctx;
	const char *src[4] = { n->text, n->author, n->created_at, n->edited_at ? n->edited_at : "" };
	size_t len[4], total = 0, i;
	struct note_row *r;
	char *p;

	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? 2 * rows->cap : 16;
		struct note_row *v = realloc(rows->v, cap * sizeof(*v));

		if (v == NULL)
			return rows->oom = 1;
		rows->v = v;
		rows->cap = cap;
	}
	for (i = 0; i < 4; i++)
		total += (len[i] = strlen(src[i] ? src[i] : "")) + 1;
	if ((p = malloc(total)) == NULL)
		return rows->oom = 1;
	r = &rows->v[rows->n++];
	r->n = *n;
	r->strs = p;
	for (i = 0; i < 4; i++) {
		memcpy(p, src[i] ? src[i] : "", len[i] + 1);
		src[i] = p;
		p += len[i] + 1;
	}
	r->n.text = src[0];
	r->n.author = src[1];
	r->n.created_at = src[2];
	r->n.edited_at = n->edited_at ? src[3] : NULL;
	return 0;
}

static void note_rows_free(struct note_rows *rows)
{
	size_t i;

	for (i = 0; i < rows->n; i++)
		free(rows->v[i].strs);
	free(rows->v);
}

/* A catdb error as the catalog's (the note calls'), err already set. */
static int note_err(int rc)
{
	switch (rc) {
	case CATDB_OK:
		return 0;
	case CATDB_EDOWN:
		return CAT_EUNAVAILABLE;
	case CATDB_ENOENT:
		return CAT_ENONOTE;
	default:
		return CAT_EFAIL;
	}
}

static int note_read(struct catalog *c, const struct cat_note_query *q, struct note_rows *rows, char *err,
		     size_t errlen)
{
	int rc;

	memset(rows, 0, sizeof(*rows));
	rc = c->db->ops->note_list(c->db, q, note_copy, rows, err, errlen);
	if (rc == CATDB_OK && rows->oom) {
		snprintf(err, errlen, "out of memory");
		rc = CATDB_EFAIL;
	}
	if (rc != CATDB_OK)
		note_rows_free(rows);
	return note_err(rc);
}

static void i64_or_null(struct jbuf *out, int64_t v, int present)
{
	if (present)
		jb_i64(out, v);
	else
		jb_null(out);
}

/* The note object (docs/API.md, Notes); under mu, for the trace's name. */
static void note_json_locked(struct catalog *c, const struct catdb_note *n, struct jbuf *out)
{
	const struct trace_rec *r = cat_find(c, n->trace);

	jb_obj(out);
	JB_KEY(out, "id");
	jb_i64(out, n->id);
	JB_KEY(out, "trace_id");
	jb_i64(out, n->trace);
	JB_KEY(out, "trace_name");
	jb_str(out, r ? r->meta.name : NULL);
	JB_KEY(out, "kind");
	jb_str(out, n->slice ? "slice" : n->has_range ? "range" : "trace");
	JB_KEY(out, "start_ns");
	i64_or_null(out, n->start_ns, n->has_range);
	JB_KEY(out, "end_ns");
	i64_or_null(out, n->end_ns, n->has_range);
	JB_KEY(out, "track_id");
	i64_or_null(out, n->track, n->track != 0);
	JB_KEY(out, "slice_id");
	i64_or_null(out, n->slice, n->slice != 0);
	JB_KEY(out, "text");
	jb_str(out, n->text);
	JB_KEY(out, "author");
	jb_str(out, n->author);
	JB_KEY(out, "created_at");
	jb_str(out, n->created_at);
	JB_KEY(out, "edited_at");
	jb_str(out, n->edited_at);
	jb_obj_end(out);
}

int cat_note_target(struct catalog *c, int64_t trace, int64_t *start_ns, int64_t *end_ns)
{
	struct trace_rec *r;
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	cat_sync_locked(c, 0);
	if ((r = cat_find(c, trace)) == NULL)
		rc = CAT_ENOTRACE;
	else if (r->state.status != TS_READY)
		rc = CAT_ENOTREADY;
	else {
		*start_ns = r->state.start_ns;
		*end_ns = r->state.end_ns;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int text_checks(const char *text, const char *author, int need_text, char *err, size_t errlen)
{
	if (text != NULL || need_text) {
		if (text == NULL || text[strspn(text, " \t\r\n")] == '\0') {
			snprintf(err, errlen, "a note's 'text' must hold something other than spaces");
			return CAT_EINVAL;
		}
		if (cat_text_check("note's text", text, CAT_MAX_NOTE, 1, err, errlen) != 0)
			return CAT_EINVAL;
	}
	if (author != NULL && cat_text_check("note's author", author, CAT_MAX_AUTHOR, 0, err, errlen) != 0)
		return CAT_EINVAL;
	return 0;
}

/* Appends note id, read again from the database. */
static int note_one_json(struct catalog *c, int64_t id, struct jbuf *out, char *err, size_t errlen)
{
	struct cat_note_query q = { .id = id };
	struct note_rows rows;
	int rc;

	if ((rc = note_read(c, &q, &rows, err, errlen)) != 0)
		return rc;
	if (rows.n == 0) {
		note_rows_free(&rows);
		snprintf(err, errlen, "there is no note %" PRId64, id);
		return CAT_ENONOTE;
	}
	pthread_mutex_lock(&c->mu);
	note_json_locked(c, &rows.v[0].n, out);
	pthread_mutex_unlock(&c->mu);
	note_rows_free(&rows);
	return 0;
}

int cat_note_add(struct catalog *c, int64_t trace, const struct cat_note_in *in, struct jbuf *out, char *err,
		 size_t errlen)
{
	struct catdb_note n = { 0 };
	int64_t start, end;
	char now[32];
	int rc;

	if ((rc = cat_note_target(c, trace, &start, &end)) != 0) {
		snprintf(err, errlen, rc == CAT_ENOTRACE ? "there is no trace with this id" :
			 "notes go on a ready trace; this one is not ready");
		return rc;
	}
	if ((rc = text_checks(in->text, in->author, 1, err, errlen)) != 0)
		return rc;
	if (in->has_range && (in->start_ns > in->end_ns || in->start_ns < start || in->end_ns > end)) {
		snprintf(err, errlen,
			 "a note's range must lie within the trace, [%" PRId64 ", %" PRId64 "], start before end; "
			 "not [%" PRId64 ", %" PRId64 "]",
			 start, end, in->start_ns, in->end_ns);
		return CAT_EINVAL;
	}
	cat_rfc3339(time(NULL), now, sizeof(now));
	n.trace = trace;
	n.has_range = in->has_range;
	n.start_ns = in->start_ns;
	n.end_ns = in->end_ns;
	n.track = in->has_range ? in->track : 0;
	n.slice = in->has_range ? in->slice : 0;
	n.text = in->text;
	n.author = in->author ? in->author : "";
	n.created_at = now;
	if ((rc = note_err(c->db->ops->note_add(c->db, &n, err, errlen))) != 0)
		return rc;
	/* a trace removed meanwhile takes its notes with it: this one too */
	if (cat_status(c, trace) < 0) {
		c->db->ops->note_remove(c->db, n.id, err, errlen);
		snprintf(err, errlen, "there is no trace with this id");
		return CAT_ENOTRACE;
	}
	return note_one_json(c, n.id, out, err, errlen);
}

int cat_note_edit(struct catalog *c, int64_t id, const char *text, const char *author, struct jbuf *out, char *err,
		  size_t errlen)
{
	char now[32];
	int rc;

	if (text == NULL && author == NULL) {
		snprintf(err, errlen, "send the note's new 'text' or 'author'");
		return CAT_EINVAL;
	}
	if ((rc = text_checks(text, author, 0, err, errlen)) != 0)
		return rc;
	cat_rfc3339(time(NULL), now, sizeof(now));
	if ((rc = note_err(c->db->ops->note_edit(c->db, id, text, author, now, err, errlen))) != 0)
		return rc;
	return note_one_json(c, id, out, err, errlen);
}

int cat_note_delete(struct catalog *c, int64_t id, char *err, size_t errlen)
{
	return note_err(c->db->ops->note_remove(c->db, id, err, errlen));
}

int cat_note_json(struct catalog *c, int64_t id, struct jbuf *out, char *err, size_t errlen)
{
	return note_one_json(c, id, out, err, errlen);
}

int cat_notes_json(struct catalog *c, const struct cat_note_query *q, struct jbuf *out, char *err, size_t errlen)
{
	struct cat_note_query page = *q;
	struct note_rows rows;
	size_t i, shown;
	int rc;

	/* one more than asked, to know whether a next page exists */
	if (page.limit > 0)
		page.limit++;
	if ((rc = note_read(c, &page, &rows, err, errlen)) != 0)
		return rc;
	shown = q->limit > 0 && rows.n > (size_t)q->limit ? (size_t)q->limit : rows.n;
	jb_obj(out);
	JB_KEY(out, "notes");
	jb_arr(out);
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < shown; i++)
		note_json_locked(c, &rows.v[i].n, out);
	pthread_mutex_unlock(&c->mu);
	jb_arr_end(out);
	JB_KEY(out, "next_before");
	if (shown < rows.n && !q->by_time)
		jb_i64(out, rows.v[shown - 1].n.id);
	else
		jb_null(out);
	jb_obj_end(out);
	note_rows_free(&rows);
	return 0;
}

/* ---- for the library's listing (list.c) ----------------------------------- */

static int count_copy(void *ctx, int64_t trace, int64_t count)
{
	struct cat_note_counts *nc = ctx;

	if (nc->n == nc->cap) {
		size_t cap = nc->cap ? 2 * nc->cap : 64;
		struct cat_note_count *v = realloc(nc->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		nc->v = v;
		nc->cap = cap;
	}
	nc->v[nc->n].trace = trace;
	nc->v[nc->n].matches = 0;
	nc->v[nc->n++].count = count;
	return 0;
}

static int count_cmp(const void *a, const void *b)
{
	const struct cat_note_count *x = a, *y = b;

	return x->trace < y->trace ? -1 : x->trace > y->trace;
}

int cat_note_counts(struct catalog *c, int64_t trace, const char *q, struct cat_note_counts *nc, char *err,
		    size_t errlen)
{
	struct cat_note_query nq = { .q = q };
	struct note_rows rows;
	size_t i;
	int rc;

	memset(nc, 0, sizeof(*nc));
	if ((rc = c->db->ops->note_counts(c->db, trace, count_copy, nc, err, errlen)) != CATDB_OK) {
		cat_note_counts_free(nc);
		return note_err(rc);
	}
	if (nc->n > 1)
		qsort(nc->v, nc->n, sizeof(*nc->v), count_cmp);
	if (q == NULL || q[0] == '\0')
		return 0;
	if ((rc = note_read(c, &nq, &rows, err, errlen)) != 0) {
		cat_note_counts_free(nc);
		return rc;
	}
	for (i = 0; i < rows.n; i++) {
		struct cat_note_count key = { rows.v[i].n.trace, 0, 0 }, *hit;

		if (nc->n > 0 && (hit = bsearch(&key, nc->v, nc->n, sizeof(*nc->v), count_cmp)) != NULL)
			hit->matches = 1;
	}
	note_rows_free(&rows);
	return 0;
}

const struct cat_note_count *cat_note_count_find(const struct cat_note_counts *nc, int64_t trace)
{
	struct cat_note_count key = { trace, 0, 0 };

	return nc->n ? bsearch(&key, nc->v, nc->n, sizeof(*nc->v), count_cmp) : NULL;
}

void cat_note_counts_free(struct cat_note_counts *nc)
{
	free(nc->v);
	memset(nc, 0, sizeof(*nc));
}
