/*
 * A growing trace's commits (commit.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "commit.h"
#include "commit_flows.h"
#include "commit_sched.h"
#include "extents.h"
#include "lod.h"
#include "write.h"

/* What the commits know of one group of the slice store. */
struct cm_group {
	uint64_t done;        /* ordinals 0 .. done - 1 are final and written */
	struct depth_facts facts; /* of the final ones (write.h) */
	int64_t last_ts;      /* the last final one's ts */
	struct vec marks;     /* int64_t: the ts of ordinals 0, 1024, 2048 ... */
	int open;             /* ordinal done is open, written as such this commit */
	int was_open;         /* ... at the last commit */
	uint64_t open_id;     /* the row in the database as open (dur -1), which
			       * the next row of its id replaces; 0: none */
	struct commit_open o; /* the open one */
	int touched;          /* to write at this commit */
	uint64_t prev_done;   /* done at the last commit: this one's items start there */
	uint64_t extents;     /* the rows its extents in the database cover */
	uint64_t lod_levels;
	struct lod_state lod; /* the level of detail so far (lod.h) */
	int lod_init;
	struct vec items;     /* struct lod_item: this commit's final ones, from prev_done */
};

/* What the commits know of one counter track. */
struct cm_counter {
	uint64_t count;       /* points written */
	uint64_t extents;     /* the points its extents in the database cover */
	struct vec marks;     /* int64_t: the ts of points 0, 1024, 2048 ... */
	int64_t last_ts;
	int touched;
	struct lod_state lod;
	int lod_init;
	struct vec items;     /* struct lod_item: this commit's, from count on */
};

/* A slice's row, until the commit's rows are in id order. */
struct cm_row {
	uint64_t id, parent;  /* parent 0: none */
	uint32_t track, depth;
	int64_t ts, dur;
	uint32_t name, cat, set;
	int replaces;         /* its id is in the database, as an open row */
};

struct commit {
	struct build *b;
	struct vec journal;   /* struct ss_packed: the store's (slicestore.h) */
	struct vec points;    /* struct bpoint: matching's, made since the last commit */
	struct vec groups;    /* struct cm_group, by store group */
	struct vec counters;  /* struct cm_counter, by track index */
	struct vec rows;      /* struct cm_row: this commit's slices */
	struct vec touched;   /* uint32_t: groups touched, in the order touched */
	struct vec touched_counters; /* uint32_t: counter tracks touched */
	size_t strings;       /* strings written */
	uint64_t points_total; /* counter points written */
	struct lod_sink sink; /* the level of detail's rows, to the database in place */
	struct dbw_stmt *lod_put, *lod_drop;
	struct dbw_stmt *ext_drop; /* a group's extents from an ordinal on */
	sqlite3 *reader;      /* the writer's connection, where items written before are read back */
	sqlite3_stmt *ext, *back; /* extents, rows: items read back */
	enum { READ_SLICES, READ_POINTS, READ_RUNS } reading; /* what back reads */
	uint32_t lod_group;   /* the slice group whose level of detail is made (group_facts), else MDL_NONE */
	struct ss_reader rd;  /* its slices read back from the store, while rd_open */
	int rd_open;
	uint64_t rd_next;     /* the ordinal rd reads next */
	struct vec fetched;   /* struct lod_item: the items handed to the builder */
	struct logs_grown logs; /* the logs written, and those waiting (write.h) */
	struct cm_flows flows; /* the arrows, written once their from-slice is final */
	struct cm_sched sched; /* the cpu runs so far (commit_sched.h) */
};

/* ---- the level of detail's sink (lod.h): rows in place, items read back -- */

static int sink_put(void *ctx, const struct lod_key *k, int level, int64_t first_bucket, int64_t last_bucket,
		    uint8_t *blob, size_t len)
{
	struct commit *c = ctx;

	if (c->lod_put == NULL &&
	    (c->lod_put = dbw_prepare(c->b->s, "INSERT OR REPLACE INTO lod VALUES (?, ?, ?, ?, ?, ?)")) == NULL) {
		free(blob);
		return -1;
	}
	return lod_submit_put(c->b->s, c->lod_put, k, level, first_bucket, last_bucket, blob, len);
}

static int sink_drop(void *ctx, const struct lod_key *k, int level, int64_t from_bucket)
{
	struct commit *c = ctx;

	if (c->lod_drop == NULL &&
	    (c->lod_drop = dbw_prepare(c->b->s, "DELETE FROM lod WHERE track_id = ?1 AND depth = ?2 AND level = ?3 "
						"AND first_bucket >= ?4")) == NULL)
		return -1;
	return lod_submit_drop(c->b->s, c->lod_drop, k, level, from_bucket);
}

/* An item as the builder has it, from a row read back. */
static void row_item(struct commit *c, sqlite3_stmt *st, struct lod_item *it)
{
	int64_t ts = sqlite3_column_int64(st, 0);

	memset(it, 0, sizeof(*it));
	it->ts = ts;
	if (c->reading == READ_POINTS) {
		it->end = ts;
		switch (sqlite3_column_type(st, 1)) {
		case SQLITE_INTEGER:
			it->is_int = 1;
			it->ivalue = sqlite3_column_int64(st, 1);
			it->value = (double)it->ivalue;
			break;
		case SQLITE_TEXT: /* a uint64 past INT64_MAX (tracedb.h) */
			it->value = (double)strtoull((const char *)sqlite3_column_text(st, 1), NULL, 10);
			break;
		default:
			it->value = sqlite3_column_double(st, 1);
		}
		return;
	}
	it->end = write_item_end(c->b, ts, sqlite3_column_int64(st, 1));
	it->open = sqlite3_column_int64(st, 1) < 0;
	it->name = (uint32_t)sqlite3_column_int64(st, 2);
	it->cat = c->reading == READ_RUNS ? 0 : (uint32_t)sqlite3_column_int64(st, 3);
}

/* Items [first, first + n) of the slice group c->lod_group, committed
 * before: read from the slice store, which holds every slice packed until
 * the end (slicestore.h), so that the writer is not waited for. The
 * builder asks for them in order from the first (lod.c, rebuild): one
 * reader goes on from call to call of a group's commit. */
static const struct lod_item *store_items(struct commit *c, uint64_t first, size_t n)
{
	const struct ss_group *g = ss_group(&c->b->ss, c->lod_group);
	struct ss_slice s;

	if (first + n > g->packed)
		return NULL; /* committed final, so packed: never */
	if (c->rd_open && c->rd_next > first) {
		ss_read_done(&c->rd);
		c->rd_open = 0;
	}
	if (!c->rd_open) {
		ss_read_group(&c->rd, &c->b->ss, g);
		c->rd_open = 1;
		c->rd_next = 0;
	}
	c->fetched.len = 0;
	if (vec_reserve(&c->fetched, n) != 0)
		return NULL;
	for (; c->rd_next < first; c->rd_next++)
		if (!ss_read(&c->rd, &s))
			return NULL;
	for (; c->fetched.len < n; c->rd_next++) {
		if (!ss_read(&c->rd, &s))
			return NULL;
		*VEC_AT(&c->fetched, struct lod_item, c->fetched.len++) = (struct lod_item){
			.ts = s.ts, .end = write_item_end(c->b, s.ts, s.dur), .name = s.name, .cat = s.cat, .open = s.dur < 0
		};
	}
	return c->fetched.data;
}

/* Ends store_items' reading of a group (the store may move its bytes once
 * matching goes on). */
static void store_items_done(struct commit *c)
{
	if (c->rd_open)
		ss_read_done(&c->rd);
	c->rd_open = 0;
	c->lod_group = MDL_NONE;
}

/* Items [first, first + n) of a group, committed before: a slice group's
 * from the store (store_items), a counter track's or a cpu's (whose
 * tracks come after the others: commit_sched.h) read back from the last
 * commit through the track's extents. */
static const struct lod_item *sink_items(void *ctx, const struct lod_key *k, uint64_t first, size_t n)
{
	static const char *const back_sql[] = {
		[READ_SLICES] = "SELECT ts, dur, name_id, category_id FROM slices WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
		[READ_POINTS] = "SELECT ts, value FROM counters WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
		[READ_RUNS] = "SELECT ts, dur, thread_id FROM sched WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
	};
	struct commit *c = ctx;
	int reading = READ_SLICES;
	int rc;

	if (k->depth == 0 && (size_t)(k->track_id - 1) >= c->b->tracks.len)
		reading = READ_RUNS;
	else if (k->depth == 0 && VEC_AT(&c->b->tracks, struct btrack, k->track_id - 1)->kind == TK_COUNTER)
		reading = READ_POINTS;
	if (reading == READ_SLICES && c->lod_group != MDL_NONE)
		return store_items(c, first, n);

	/* read on the writer's own connection, once it ran what was queued: it
	 * sees the rows of its open transaction too (a commit held back,
	 * commit_write's publish 0), which another connection would not */
	if (dbw_drain(c->b->s) != 0)
		return NULL;
	if (c->reader != c->b->s->db) { /* a pause's copy: its own connection (dbw_reopen_child) */
		c->ext = c->back = NULL; /* the old connection's, not this process's to finalize */
		c->reader = c->b->s->db;
	}
	if (c->ext == NULL) {
		if (sqlite3_prepare_v2(c->reader,
				       "SELECT first_ord, first_id, count FROM extents WHERE track_id = ?1 AND depth = ?2 "
				       "AND first_ord + count > ?3 ORDER BY first_ord",
				       -1, &c->ext, NULL) != SQLITE_OK)
			return NULL;
	}
	if (c->back == NULL || (int)c->reading != reading) {
		sqlite3_finalize(c->back);
		c->back = NULL;
		c->reading = reading;
		if (sqlite3_prepare_v2(c->reader, back_sql[reading], -1, &c->back, NULL) != SQLITE_OK)
			return NULL;
	}
	c->fetched.len = 0;
	if (vec_reserve(&c->fetched, n) != 0)
		return NULL;
	sqlite3_bind_int64(c->ext, 1, k->track_id);
	sqlite3_bind_int64(c->ext, 2, k->depth);
	sqlite3_bind_int64(c->ext, 3, (int64_t)first);
	while (c->fetched.len < n && (rc = sqlite3_step(c->ext)) == SQLITE_ROW) {
		uint64_t ord = (uint64_t)sqlite3_column_int64(c->ext, 0), id = (uint64_t)sqlite3_column_int64(c->ext, 1);
		uint64_t cnt = (uint64_t)sqlite3_column_int64(c->ext, 2), from = first + c->fetched.len;
		uint64_t skip = from > ord ? from - ord : 0, take = cnt - skip;

		if (take > n - c->fetched.len)
			take = n - c->fetched.len;
		sqlite3_bind_int64(c->back, 1, (int64_t)(id + skip));
		sqlite3_bind_int64(c->back, 2, (int64_t)(id + skip + take - 1));
		while (c->fetched.len < n && (rc = sqlite3_step(c->back)) == SQLITE_ROW)
			row_item(c, c->back, VEC_AT(&c->fetched, struct lod_item, c->fetched.len++));
		sqlite3_reset(c->back);
		if (rc == SQLITE_ROW)
			rc = SQLITE_DONE;
		if (rc != SQLITE_DONE)
			break;
	}
	sqlite3_reset(c->ext);
	return c->fetched.len == n ? c->fetched.data : NULL;
}

struct commit *commit_new(struct build *b)
{
	struct commit *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->b = b;
	vec_init(&c->journal, sizeof(struct ss_packed));
	vec_init(&c->points, sizeof(struct bpoint));
	vec_init(&c->groups, sizeof(struct cm_group));
	vec_init(&c->counters, sizeof(struct cm_counter));
	vec_init(&c->rows, sizeof(struct cm_row));
	vec_init(&c->touched, sizeof(uint32_t));
	vec_init(&c->touched_counters, sizeof(uint32_t));
	vec_init(&c->fetched, sizeof(struct lod_item));
	vec_init(&c->logs.pending, sizeof(struct mdl_log));
	cmf_init(&c->flows);
	cms_init(&c->sched, b->extent_rows);
	c->sink.ctx = c;
	c->sink.put = sink_put;
	c->sink.drop = sink_drop;
	c->sink.items = sink_items;
	c->lod_group = MDL_NONE;
	b->ss.journal = &c->journal;
	b->journal_points = &c->points;
	b->committed = 1;
	return c;
}

void commit_free(struct commit *c)
{
	size_t i;

	if (c == NULL)
		return;
	if (c->b->ss.journal == &c->journal)
		c->b->ss.journal = NULL;
	if (c->b->journal_points == &c->points)
		c->b->journal_points = NULL;
	for (i = 0; i < c->groups.len; i++) {
		struct cm_group *cg = VEC_AT(&c->groups, struct cm_group, i);

		vec_fini(&cg->marks);
		vec_fini(&cg->items);
		if (cg->lod_init)
			lod_state_fini(&cg->lod);
	}
	for (i = 0; i < c->counters.len; i++) {
		struct cm_counter *ct = VEC_AT(&c->counters, struct cm_counter, i);

		vec_fini(&ct->marks);
		vec_fini(&ct->items);
		if (ct->lod_init)
			lod_state_fini(&ct->lod);
	}
	if (c->lod_put)
		dbw_finalize(c->b->s, c->lod_put);
	if (c->lod_drop)
		dbw_finalize(c->b->s, c->lod_drop);
	if (c->ext_drop)
		dbw_finalize(c->b->s, c->ext_drop);
	/* the writer's connection: its statements go before it closes */
	if (c->ext != NULL || c->back != NULL)
		dbw_drain(c->b->s);
	sqlite3_finalize(c->ext);
	sqlite3_finalize(c->back);
	vec_fini(&c->fetched);
	vec_fini(&c->logs.pending);
	cmf_fini(&c->flows);
	cms_fini(&c->sched);
	vec_fini(&c->journal);
	vec_fini(&c->points);
	vec_fini(&c->groups);
	vec_fini(&c->counters);
	vec_fini(&c->rows);
	vec_fini(&c->touched);
	vec_fini(&c->touched_counters);
	free(c);
}

/* The commits' facts of group g, made when new; NULL when out of memory. */
static struct cm_group *group_at(struct commit *c, uint32_t g)
{
	while (c->groups.len <= g) {
		struct cm_group *x = vec_push(&c->groups);

		if (x == NULL)
			return NULL;
		memset(x, 0, sizeof(*x));
		depth_facts_init(&x->facts);
		vec_init(&x->marks, sizeof(int64_t));
		vec_init(&x->items, sizeof(struct lod_item));
	}
	return VEC_AT(&c->groups, struct cm_group, g);
}

static struct cm_counter *counter_at(struct commit *c, uint32_t t)
{
	while (c->counters.len <= t) {
		struct cm_counter *x = vec_push(&c->counters);

		if (x == NULL)
			return NULL;
		memset(x, 0, sizeof(*x));
		vec_init(&x->marks, sizeof(int64_t));
		vec_init(&x->items, sizeof(struct lod_item));
	}
	return VEC_AT(&c->counters, struct cm_counter, t);
}

static int touch(struct vec *list, int *flag, uint32_t i)
{
	uint32_t *x;

	if (*flag)
		return 0;
	if ((x = vec_push(list)) == NULL)
		return -1;
	*x = i;
	*flag = 1;
	return 0;
}

/* A row of group's ordinal ord: a final one, or (open) the group's open
 * one, which stands in the database until a row of its id replaces it. */
static int add_row(struct commit *c, struct cm_group *cg, uint32_t group, uint32_t ord, const struct ss_slice *s,
		   int open)
{
	struct build *b = c->b;
	const struct ss_group *g = ss_group(&b->ss, group);
	struct cm_row *r = vec_push(&c->rows);

	if (r == NULL)
		return -1;
	r->id = ss_id(&b->ss, (struct ss_ref){ group, ord });
	r->replaces = r->id == cg->open_id;
	cg->open_id = open ? r->id : r->replaces ? 0 : cg->open_id;
	r->parent = s->parent.group == MDL_NONE ? 0 : ss_id(&b->ss, s->parent);
	r->track = g->track;
	r->depth = g->depth;
	r->ts = s->ts;
	r->dur = s->dur;
	r->name = s->name;
	r->cat = s->cat;
	r->set = s->set;
	return 0;
}

/* The slices packed since the last commit: final rows, and their groups'
 * facts. */
static int take_journal(struct commit *c)
{
	struct build *b = c->b;
	size_t i;

	for (i = 0; i < c->journal.len; i++) {
		const struct ss_packed *j = VEC_AT(&c->journal, struct ss_packed, i);
		struct cm_group *cg = group_at(c, j->group);
		struct lod_item *it;

		if (cg == NULL || add_row(c, cg, j->group, j->ord, &j->s, 0) != 0 ||
		    touch(&c->touched, &cg->touched, j->group) != 0)
			return -1;
		cmf_final(&c->flows, j);
		if (j->ord % TRACEDB_MARK_ROWS == 0) {
			int64_t *m = vec_push(&cg->marks);

			if (m == NULL)
				return -1;
			*m = j->s.ts;
		}
		cg->last_ts = j->s.ts;
		cg->done = (uint64_t)j->ord + 1;
		if ((it = vec_push(&cg->items)) == NULL)
			return -1;
		*it = depth_facts_add(&cg->facts, b, j->s.ts, j->s.dur, j->s.name, j->s.cat);
	}
	c->journal.len = 0;
	return 0;
}

void commit_anchor(struct commit *c, struct ss_ref r, int delta)
{
	cmf_anchor(&c->flows, r, delta);
}

void commit_flow(struct commit *c, const struct bflow *f)
{
	cmf_made(&c->flows, f);
}

int commit_flow_written(const struct commit *c, uint64_t n)
{
	return cmf_written(&c->flows, n);
}

int commit_open_slice(struct commit *c, const struct commit_open *o)
{
	struct cm_group *cg = group_at(c, o->ref.group);

	if (cg == NULL)
		return -1;
	cg->open = 1;
	cg->o = *o;
	return touch(&c->touched, &cg->touched, o->ref.group);
}

/* The open slices given: rows with dur -1, when each is its group's next
 * ordinal (a slice of a group whose earlier ones are not all finished
 * waits: it is not there yet). A group open at the last commit is
 * touched again: its open slice's length grows with the trace. */
static int take_open(struct commit *c)
{
	size_t i;

	for (i = 0; i < c->groups.len; i++) {
		struct cm_group *cg = VEC_AT(&c->groups, struct cm_group, i);

		if (cg->was_open && touch(&c->touched, &cg->touched, (uint32_t)i) != 0)
			return -1;
		if (!cg->open)
			continue;
		if (cg->o.ref.ord != cg->done) {
			cg->open = 0;
			continue;
		}
		{
			struct ss_slice s = { cg->o.ts, -1, cg->o.name, cg->o.cat, 0, cg->o.parent, 0 };

			if (add_row(c, cg, cg->o.ref.group, cg->o.ref.ord, &s, 1) != 0)
				return -1;
		}
	}
	return 0;
}

/*
 * The commit's rows in id order, as indexes into c->rows: a stable
 * counting sort by chunk of ids (extents.h). A group's rows come in
 * ordinal order, and a chunk is one group's consecutive ordinals, so
 * within a chunk they are in id order already. NULL when out of memory.
 */
static uint32_t *rows_by_id(struct commit *c)
{
	const struct cm_row *r = c->rows.data;
	uint64_t per = c->b->ss.ids.rows, lo = UINT64_MAX, hi = 0, k;
	size_t i, n = c->rows.len, *at;
	uint32_t *order;

	if ((order = malloc((n ? n : 1) * sizeof(*order))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		k = (r[i].id - 1) / per;
		lo = k < lo ? k : lo;
		hi = k > hi ? k : hi;
	}
	if (n == 0)
		return order;
	if ((at = calloc((size_t)(hi - lo + 2), sizeof(*at))) == NULL) {
		free(order);
		return NULL;
	}
	for (i = 0; i < n; i++)
		at[(r[i].id - 1) / per - lo + 1]++;
	for (k = 1; k <= hi - lo + 1; k++)
		at[k] += at[k - 1];
	for (i = 0; i < n; i++)
		order[at[(r[i].id - 1) / per - lo]++] = (uint32_t)i;
	free(at);
	return order;
}

static void put_row(struct bins *b, const struct cm_row *r)
{
	bins_i64(b, (int64_t)r->id);
	bins_i64(b, r->track + 1);
	bins_i64(b, r->ts);
	bins_i64(b, r->dur);
	bins_i64(b, r->depth);
	bins_i64(b, r->name);
	bins_i64(b, r->cat);
	if (r->parent)
		bins_i64(b, (int64_t)r->parent);
	else
		bins_null(b);
	if (r->set)
		bins_i64(b, r->set);
	else
		bins_null(b);
	bins_row(b);
}

/*
 * The commit's rows, in id order. A row whose id stands in the database
 * as an open slice replaces it (INSERT OR REPLACE); every other id is new,
 * and goes in through the growing writer's INSERT OR IGNORE, which fails
 * the ingest if a row is refused (dbwriter.h). Not REPLACE for all: a
 * multi-row REPLACE may abort midway (a NULL in a NOT NULL column), so
 * SQLite keeps a statement journal for it, a copy of every page it changes
 * that was in the file; at most one row a group replaces, and on the
 * 212 MB 8-thread archive the statement journal was 0.4 s of the writer's
 * 3.3 s of slices.
 */
static int write_rows(struct commit *c)
{
	uint32_t *order = rows_by_id(c);
	struct bins sb, rb;
	int replacing = 0, rc;
	size_t i;

	if (order == NULL)
		return -1;
	if (bins_init(&sb, c->b->s, "slices", 9) != 0) {
		free(order);
		return -1;
	}
	for (i = 0; i < c->rows.len; i++) {
		const struct cm_row *r = VEC_AT(&c->rows, struct cm_row, order[i]);

		if (!r->replaces) {
			put_row(&sb, r);
			continue;
		}
		if (!replacing && bins_init_replace(&rb, c->b->s, "slices", 9) != 0) {
			bins_fini(&sb);
			free(order);
			return -1;
		}
		replacing = 1;
		put_row(&rb, r);
	}
	free(order);
	c->rows.len = 0;
	rc = bins_fini(&sb);
	return (replacing && bins_fini(&rb) != 0) || rc != 0 ? -1 : 0;
}

/* One commit of a group's level of detail: its items from `from` on (the
 * last committed replaced when from is one before its count: an open one). */
static int group_lod(struct commit *c, struct lod_state *st, int *init, const struct lod_key *k, int counters,
		     struct vec *items, const struct lod_item *open, uint64_t from, uint64_t *levels)
{
	struct lod_item *o;
	int rc;

	if (!*init) {
		lod_state_init(st, k, counters);
		*init = 1;
	}
	if (open != NULL) {
		if ((o = vec_push(items)) == NULL)
			return -1;
		*o = *open;
	}
	rc = items->len == 0 ? 0 : lod_commit(st, items->data, from, items->len, &c->sink, levels);
	items->len = 0;
	return rc;
}

/* A touched group's row of track_depths, until the marks' bytes are all made. */
struct cm_depth {
	uint32_t group;
	uint64_t n;
	struct depth_facts facts; /* the final ones', and the open one's */
	size_t off, len;      /* its marks in the commit's marks bytes */
};

/* One touched group's facts and level of detail; its marks go to mb. */
static int group_facts(struct commit *c, uint32_t gi, struct vec *mb, struct cm_depth *d)
{
	struct build *b = c->b;
	struct cm_group *cg = VEC_AT(&c->groups, struct cm_group, gi);
	const struct ss_group *g = ss_group(&b->ss, gi);
	struct btrack *t = VEC_AT(&b->tracks, struct btrack, g->track);
	int64_t last = cg->last_ts;
	struct lod_item open;
	int rc;

	d->group = gi;
	d->n = cg->done + (cg->open != 0);
	d->facts = cg->facts;
	cg->touched = 0;
	cg->was_open = cg->open;
	if (d->n == 0)
		return 0;
	if (cg->open) {
		/* in this commit's facts, not the group's: it is not final */
		open = depth_facts_add(&d->facts, b, cg->o.ts, -1, cg->o.name, cg->o.cat);
		last = cg->o.ts;
		if (cg->done % TRACEDB_MARK_ROWS == 0) { /* a mark of its own while it is open */
			int64_t *m = vec_push(&cg->marks);

			if (m == NULL)
				return -1;
			*m = cg->o.ts;
		}
	}
	if (g->depth > t->max_depth)
		t->max_depth = g->depth;
	{
		struct lod_key key = { g->track + 1, g->depth };

		c->lod_group = gi;
		rc = group_lod(c, &cg->lod, &cg->lod_init, &key, 0, &cg->items, cg->open ? &open : NULL, cg->prev_done,
			       &cg->lod_levels);
		store_items_done(c);
		cg->prev_done = cg->done;
	}
	if (rc == 0 && write_marks_kept(mb, &cg->marks, d->n, last, &d->off, &d->len) != 0)
		rc = -1;
	if (cg->open && cg->done % TRACEDB_MARK_ROWS == 0)
		cg->marks.len--; /* the open one's mark goes until it is final */
	return rc;
}

/*
 * A group's extents once it holds n rows, where they held *had: those that
 * changed go (the last one grew) and are written again to eb, with the new
 * ones; *had becomes n. Not the group's every extent at every commit: a
 * group of a million rows has 245 of them, and a commit touches most groups.
 * 0, or -1 (out of memory, or the writer failed).
 */
static int write_extents(struct commit *c, struct bins *eb, int64_t track_id, int64_t depth,
			 const struct id_chunks *chunks, const struct id_group *ids, uint64_t *had, uint64_t n)
{
	struct dbwriter *s = c->b->s;
	struct bins_val v[3] = { { 0 } };
	uint64_t from;

	if (n == *had)
		return 0;
	from = extents_changed_from(chunks, *had, n);
	if (c->ext_drop == NULL &&
	    (c->ext_drop = dbw_prepare(s, "DELETE FROM extents WHERE track_id = ?1 AND depth = ?2 "
					  "AND first_ord >= ?3")) == NULL)
		return -1;
	v[0].type = v[1].type = v[2].type = SQLITE_INTEGER;
	v[0].i = track_id;
	v[1].i = depth;
	v[2].i = (int64_t)from;
	/* the rows eb holds go first: the drop must not take them */
	if (bins_flush(eb) != 0 || dbw_submit(s, c->ext_drop, v, 3, NULL) != 0)
		return -1;
	extents_write_from(eb, track_id, depth, chunks, ids, from, n);
	*had = n;
	return 0;
}

/* Each touched group's row of track_depths, extents and level of detail. */
static int write_groups(struct commit *c)
{
	struct build *b = c->b;
	struct vec mb, depths;
	struct bins db, eb;
	size_t i;
	int rc = 0;

	vec_init(&mb, 1);
	vec_init(&depths, sizeof(struct cm_depth));
	for (i = 0; i < c->touched.len && rc == 0; i++) {
		struct cm_depth *d = vec_push(&depths);

		rc = d == NULL ? -1 : group_facts(c, *VEC_AT(&c->touched, uint32_t, i), &mb, d);
	}
	c->touched.len = 0;
	if (rc != 0 || bins_init_replace(&db, b->s, "track_depths", 7) != 0) {
		rc = -1;
		goto out;
	}
	if (bins_init(&eb, b->s, "extents", 5) != 0) {
		bins_fini(&db);
		rc = -1;
		goto out;
	}
	for (i = 0; i < depths.len && rc == 0; i++) {
		const struct cm_depth *d = VEC_AT(&depths, struct cm_depth, i);
		const struct ss_group *g = ss_group(&b->ss, d->group);

		if (d->n == 0)
			continue;
		bins_i64(&db, g->track + 1);
		bins_i64(&db, g->depth);
		bins_i64(&db, d->facts.max_dur);
		bins_i64(&db, (int64_t)d->n);
		bins_i64(&db, !d->facts.overlap);
		bins_i64(&db, (int64_t)VEC_AT(&c->groups, struct cm_group, d->group)->lod_levels);
		bins_blob(&db, (const uint8_t *)mb.data + d->off, (int)d->len);
		bins_row(&db);
		rc = write_extents(c, &eb, g->track + 1, g->depth, &b->ss.ids, &g->ids,
				   &VEC_AT(&c->groups, struct cm_group, d->group)->extents, d->n);
	}
	rc |= bins_fini(&db);
	rc |= bins_fini(&eb);
	/* the marks' bytes are read until the rows ran: freed after them */
	if (dbw_release(b->s, mb.data) == 0)
		vec_init(&mb, 1);
	else
		rc |= dbw_drain(b->s);
out:
	vec_fini(&mb);
	vec_fini(&depths);
	return rc;
}

static int point_cmp(const void *x, const void *y)
{
	const struct bpoint *a = x, *b = y;

	return a->order < b->order ? -1 : a->order > b->order;
}

/* Counter points made since the last commit, and their tracks' extents,
 * marks and level of detail (the marks go to the track, written with the
 * small tables). */
static int write_points(struct commit *c)
{
	struct build *b = c->b;
	struct bins cb, eb;
	size_t i;
	int rc = 0;

	if (c->points.len > 1)
		qsort(c->points.data, c->points.len, sizeof(struct bpoint), point_cmp);
	if (bins_init(&cb, b->s, "counters", 4) != 0)
		return -1;
	for (i = 0; i < c->points.len && rc == 0; i++) {
		const struct bpoint *p = VEC_AT(&c->points, struct bpoint, i);
		struct cm_counter *ct = counter_at(c, p->track);
		struct lod_item *it;

		if (ct == NULL || touch(&c->touched_counters, &ct->touched, p->track) != 0 ||
		    (it = vec_push(&ct->items)) == NULL) {
			rc = -1;
			break;
		}
		*it = (struct lod_item){ .ts = p->ts, .end = p->ts, .is_int = p->is_int,
					 .ivalue = p->is_int ? p->v.i : 0, .value = bpoint_value(p) };
		bins_i64(&cb, (int64_t)p->order);
		bins_i64(&cb, p->track + 1);
		bins_i64(&cb, p->ts);
		if (p->is_int)
			bins_i64(&cb, p->v.i);
		else if (p->is_u64)
			bins_u64(&cb, (uint64_t)p->v.i);
		else
			bins_dbl(&cb, p->v.d);
		bins_row(&cb);
	}
	c->points_total += c->points.len;
	b->res->counts.counters = c->points_total;
	c->points.len = 0;
	rc |= bins_fini(&cb);
	if (rc != 0 || bins_init(&eb, b->s, "extents", 5) != 0)
		return -1;
	for (i = 0; i < c->touched_counters.len && rc == 0; i++) {
		uint32_t ti = *VEC_AT(&c->touched_counters, uint32_t, i);
		struct cm_counter *ct = VEC_AT(&c->counters, struct cm_counter, ti);
		struct btrack *t = VEC_AT(&b->tracks, struct btrack, ti);
		const struct id_group *ids = VEC_AT(&b->point_ids, struct id_group, ti);
		uint64_t k;

		ct->touched = 0;
		for (k = 0; k < ct->items.len; k++)
			if ((ct->count + k) % TRACEDB_MARK_ROWS == 0) {
				int64_t *m = vec_push(&ct->marks);

				if (m == NULL)
					return -1;
				*m = VEC_AT(&ct->items, struct lod_item, k)->ts;
			}
		ct->last_ts = VEC_AT(&ct->items, struct lod_item, ct->items.len - 1)->ts;
		{
			struct lod_key key = { (int64_t)ti + 1, 0 };
			uint64_t from = ct->count;

			ct->count += ct->items.len;
			rc = group_lod(c, &ct->lod, &ct->lod_init, &key, 1, &ct->items, NULL, from, &t->lod_levels);
		}
		if (rc == 0)
			rc = write_extents(c, &eb, (int64_t)ti + 1, 0, &b->point_chunks, ids, &ct->extents, ct->count);
	}
	c->touched_counters.len = 0;
	rc |= bins_fini(&eb);
	/* every counter track's marks, where write_tracks reads them */
	b->track_marks.len = 0;
	for (i = 0; i < c->counters.len && rc == 0; i++) {
		struct cm_counter *ct = VEC_AT(&c->counters, struct cm_counter, i);
		struct btrack *t = VEC_AT(&b->tracks, struct btrack, i);

		if (ct->count > 0 && write_marks_kept(&b->track_marks, &ct->marks, ct->count, ct->last_ts, &t->marks_off,
					       &t->marks_len) != 0)
			rc = -1;
	}
	return rc;
}

/* The cpus' runs since the last commit (commit_sched.h) into their level
 * of detail, as a slice group's. */
static int write_cpu_lod(struct commit *c)
{
	size_t i;

	for (i = 0; i < c->sched.cpus.len; i++) {
		struct cms_cpu *cpu = cms_cpu_of(&c->sched, i);
		struct lod_key key;
		uint64_t from;

		if (cpu == NULL || cpu->items.len == 0)
			continue;
		key = (struct lod_key){ cpu->track_id, 0 };
		from = cpu->lod_open ? cpu->lod_n - 1 : cpu->lod_n;
		cpu->lod_n = from + cpu->items.len;
		cpu->lod_open = cpu->run.open; /* the last item is the run on the cpu now */
		if (group_lod(c, &cpu->lod, &cpu->lod_init, &key, 0, &cpu->items, NULL, from, &cpu->lod_levels) != 0)
			return -1;
	}
	return 0;
}

int commit_write(struct commit *c, enum commit_how how, uint64_t *queued)
{
	struct build *b = c->b;
	int rc;

	rc = take_journal(c);
	if (how == COMMIT_ROWS) {
		/* memory's bound: the final rows go to the writer now, not
		 * waited for (its queue is bounded); the rest (open slices,
		 * groups' facts and level of detail, counter points, small
		 * tables) waits for the next commit readers see, which makes
		 * what this one would have: the level of detail's rows do not
		 * depend on where commits fall (lod.h) */
		rc = rc ? rc : write_rows(c);
		rc = rc ? rc : argw_flush(&b->args);
		return rc || b->oom ? -1 : 0;
	}
	rc = rc ? rc : take_open(c);
	rc = rc ? rc : cms_begin(&c->sched, b); /* before tracks made since write under their ids */
	rc = rc ? rc : write_rows(c);
	rc = rc ? rc : write_groups(c);
	rc = rc ? rc : write_points(c);
	rc = rc ? rc : cms_write(&c->sched, b, b->matched_ts); /* after write_points, which empties track_marks */
	rc = rc ? rc : write_cpu_lod(c);
	rc = rc ? rc : cmf_write(&c->flows, b);
	rc = rc ? rc : argw_flush(&b->args);
	rc = rc ? rc : write_logs_growing(b, &c->logs, b->matched_ts);
	rc = rc ? rc : write_strings_from(b, c->strings);
	if (rc == 0)
		c->strings = b->m->soff.len;
	if (rc == 0) { /* what the commit holds: the rows of the small tables tell the rest */
		size_t i;
		uint64_t n = 0;

		for (i = 0; i < c->groups.len; i++) {
			const struct cm_group *cg = VEC_AT(&c->groups, struct cm_group, i);

			n += cg->done + (cg->open != 0);
		}
		b->res->counts.slices = n;
		b->res->counts.flows = c->flows.written;
	}
	if (rc == 0) { /* the cpu tracks are written with the others, then taken off */
		rc = cms_tracks_push(&c->sched, b);
		rc = rc ? rc : write_small_tables(b, 1);
		cms_tracks_pop(b);
	}
	/* a pause's layer commits once, its undo kept first: a layer killed
	 * after a COMMIT of its own and before its undo was written would
	 * leave changes nothing undoes (ingest_stream_pause) */
	if (rc == 0 && !b->layer) {
		if (dbw_queue_sql(b->s, "COMMIT") != 0)
			rc = -1;
		else if (how == COMMIT_QUEUED && queued != NULL)
			*queued = dbw_ticket(b->s); /* the COMMIT's (the BEGIN after it may wait) */
		if (rc == 0 && dbw_queue_sql(b->s, "BEGIN") != 0)
			rc = -1;
	}
	/* a queued commit is not waited for: the rows of strings, threads,
	 * processes and providers bind texts where the model keeps them,
	 * which decoding moves as it interns more (model_sappend), but a
	 * growing trace's writer copies every text and blob it is given
	 * (dbwriter.h, growing) */
	if (how != COMMIT_QUEUED || !b->s->growing)
		rc |= dbw_drain(b->s);
	{
		size_t i;

		for (i = 0; i < c->groups.len; i++)
			VEC_AT(&c->groups, struct cm_group, i)->open = 0;
	}
	return rc || b->oom ? -1 : 0;
}
