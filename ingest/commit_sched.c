/*
 * A growing trace's scheduling (commit_sched.h).
 */
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "commit_sched.h"

/* Switches a commit leaves waiting at most: past them it takes the oldest
 * whatever the time matched (those that then arrive behind them on their
 * cpu wait for the end, as late ones do). */
enum { CMS_PENDING_MAX = 1 << 20 };

/* A run's row, until the commit's rows are in id order. */
struct cms_row {
	uint64_t id;
	struct cpu_run run;
	int64_t end;       /* -1: still on its cpu */
	const char *state; /* a static string, or NULL */
	uint16_t cpu;
};

static int sched_order(const void *x, const void *y)
{
	const struct mdl_sched *a = x, *b = y;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int row_order(const void *x, const void *y)
{
	const struct cms_row *a = x, *b = y;

	return a->id < b->id ? -1 : a->id > b->id;
}

void cms_init(struct cm_sched *cs, uint64_t extent_rows)
{
	memset(cs, 0, sizeof(*cs));
	vec_init(&cs->pending, sizeof(struct mdl_sched));
	vec_init(&cs->cpus, sizeof(struct cms_cpu *));
	vec_init(&cs->rows, sizeof(struct cms_row));
	cs->chunks.rows = extent_rows;
	cs->chunks.next = 1;
}

void cms_fini(struct cm_sched *cs)
{
	size_t i;

	for (i = 0; i < cs->cpus.len; i++) {
		struct cms_cpu *c = cms_cpu_of(cs, i);

		if (c == NULL)
			continue;
		idg_fini(&c->ids);
		vec_fini(&c->marks);
		vec_fini(&c->items);
		if (c->lod_init)
			lod_state_fini(&c->lod);
		free(c);
	}
	vec_fini(&cs->pending);
	vec_fini(&cs->cpus);
	vec_fini(&cs->rows);
}

/* Gives each cpu with a run its track's id now: after the trace's other
 * tracks, in cpu order. Ids only move up (tracks and cpus are only
 * added), so the level of detail's rows move from the highest id down,
 * each to an id no row has. 0, or -1. */
static int renumber(struct cm_sched *cs, struct build *b)
{
	int64_t id = (int64_t)b->tracks.len + 1 + (int64_t)cs->ntracks;
	size_t i;

	for (i = cs->cpus.len; i-- > 0;) {
		struct cms_cpu *c = cms_cpu_of(cs, i);

		if (c == NULL || c->ids.count == 0)
			continue;
		id--;
		if (c->track_id == id)
			continue;
		if (c->lod_init && dbw_queue_sql2(b->s, "UPDATE main.lod SET track_id = ?1 WHERE track_id = ?2", id,
						  c->track_id) != 0)
			return -1;
		c->track_id = id;
		c->lod.key.track_id = id;
	}
	b->grown_cpu_first = (uint32_t)b->tracks.len + 1;
	b->grown_cpu_n = (uint32_t)cs->ntracks;
	return 0;
}

/* Runs sql (?1, ?2: a range of track ids) over the cpu tracks the last
 * commit wrote. */
static int grown_tracks(struct build *b, const char *sql)
{
	return dbw_queue_sql2(b->s, sql, b->grown_cpu_first, (int64_t)b->grown_cpu_first + b->grown_cpu_n - 1);
}

int cms_begin(struct cm_sched *cs, struct build *b)
{
	if (b->grown_cpu_n > 0 &&
	    grown_tracks(b, "DELETE FROM main.extents WHERE track_id BETWEEN ?1 AND ?2") != 0)
		return -1;
	return renumber(cs, b);
}

int cms_drop_grown(struct build *b)
{
	if (b->grown_cpu_n == 0)
		return 0;
	if (dbw_queue_sql(b->s, "DELETE FROM main.sched") != 0 ||
	    grown_tracks(b, "DELETE FROM main.extents WHERE track_id BETWEEN ?1 AND ?2") != 0 ||
	    grown_tracks(b, "DELETE FROM main.lod WHERE track_id BETWEEN ?1 AND ?2") != 0)
		return -1;
	b->grown_cpu_n = 0;
	return 0;
}

/* The cpu's state, made when new; NULL when out of memory. */
static struct cms_cpu *cpu_at(struct cm_sched *cs, uint16_t cpu)
{
	struct cms_cpu **slot, *c;

	while (cs->cpus.len <= cpu) {
		if ((slot = vec_push(&cs->cpus)) == NULL)
			return NULL;
		*slot = NULL;
	}
	slot = VEC_AT(&cs->cpus, struct cms_cpu *, cpu);
	if (*slot == NULL) {
		if ((c = calloc(1, sizeof(*c))) == NULL)
			return NULL;
		c->last_ts = INT64_MIN;
		idg_init(&c->ids);
		vec_init(&c->marks, sizeof(int64_t));
		vec_init(&c->items, sizeof(struct lod_item));
		*slot = c;
	}
	return *slot;
}

/* A run's row, and its item for the level of detail. */
static int push_row(struct cm_sched *cs, const struct build *b, struct cms_cpu *c, uint16_t cpu,
		    const struct cpu_run *r, int64_t end, const char *state)
{
	struct cms_row *w = vec_push(&cs->rows);
	struct lod_item *it = vec_push(&c->items);

	if (w == NULL || it == NULL)
		return -1;
	*w = (struct cms_row){ .id = r->id, .run = *r, .end = end, .state = state, .cpu = cpu };
	*it = write_run_item(b, r, end);
	return 0;
}

/* One switch, in its cpu's (ts, seq) order: the run it ends is a row; the
 * run it starts takes its id (and, every 1024th, a time mark). */
static int take_switch(struct cm_sched *cs, struct build *b, const struct mdl_sched *x)
{
	struct cms_cpu *c = cpu_at(cs, x->cpu);
	struct cpu_run ended;
	const char *state;

	if (c == NULL)
		return -1;
	if (x->ts < c->last_ts) { /* out of time order on its cpu: left to the end */
		b->res->sched_late++;
		return 0;
	}
	c->last_ts = x->ts;
	if (cpu_run_switch(b, &c->run, x, &ended, &state) && push_row(cs, b, c, x->cpu, &ended, x->ts, state) != 0)
		return -1;
	if (c->run.open) {
		if (c->ids.count == 0)
			cs->ntracks++;
		if (c->ids.count % TRACEDB_MARK_ROWS == 0) {
			int64_t *m = vec_push(&c->marks);

			if (m == NULL)
				return -1;
			*m = x->ts;
		}
		if ((c->run.id = idg_take(&cs->chunks, &c->ids)) == 0)
			return -1;
		c->last_run_ts = x->ts;
	}
	return 0;
}

/* The commit's rows: the runs that ended since the last, and those on
 * their cpus now (replacing what the last wrote of them), in id order. */
static int write_rows(struct cm_sched *cs, struct build *b)
{
	struct bins sb;
	size_t i;

	for (i = 0; i < cs->cpus.len; i++) {
		struct cms_cpu *c = cms_cpu_of(cs, i);

		if (c != NULL && c->run.open && push_row(cs, b, c, (uint16_t)i, &c->run, -1, NULL) != 0)
			return -1;
	}
	if (cs->rows.len == 0)
		return 0;
	qsort(cs->rows.data, cs->rows.len, sizeof(struct cms_row), row_order);
	if (bins_init_replace(&sb, b->s, "sched", 9) != 0)
		return -1;
	for (i = 0; i < cs->rows.len; i++) {
		const struct cms_row *w = VEC_AT(&cs->rows, struct cms_row, i);

		write_sched_row(&sb, b, w->id, w->cpu, &w->run, w->end, w->state);
	}
	cs->rows.len = 0;
	return bins_fini(&sb);
}

/* Each cpu with a run: its track's extents and marks. */
static int write_tracks(struct cm_sched *cs, struct build *b)
{
	uint64_t runs = 0;
	struct bins eb;
	size_t i;
	int rc = 0;

	if (bins_init(&eb, b->s, "extents", 5) != 0)
		return -1;
	for (i = 0; i < cs->cpus.len && rc == 0; i++) {
		struct cms_cpu *c = cms_cpu_of(cs, i);

		if (c == NULL || c->ids.count == 0)
			continue;
		extents_write(&eb, c->track_id, 0, &cs->chunks, &c->ids, 0, c->ids.count);
		rc = write_marks_kept(&b->track_marks, &c->marks, c->ids.count, c->last_run_ts, &c->marks_off,
				      &c->marks_len);
		runs += c->ids.count;
	}
	rc |= bins_fini(&eb);
	b->res->counts.sched = runs;
	return rc;
}

int cms_write(struct cm_sched *cs, struct build *b, int64_t upto)
{
	struct vec *grown = &b->m->sched_grown;
	struct mdl_sched *p;
	size_t i, n;
	int rc = 0;

	if (grown->len > 0) { /* those decoded since: in (ts, seq) order with those waiting */
		if (vec_reserve(&cs->pending, cs->pending.len + grown->len) != 0)
			return -1;
		memcpy((struct mdl_sched *)cs->pending.data + cs->pending.len, grown->data,
		       grown->len * sizeof(struct mdl_sched));
		cs->pending.len += grown->len;
		grown->len = 0;
		qsort(cs->pending.data, cs->pending.len, sizeof(struct mdl_sched), sched_order);
	}
	p = cs->pending.data;
	for (n = 0; n < cs->pending.len && p[n].ts <= upto; n++)
		;
	if (cs->pending.len - n > CMS_PENDING_MAX) /* memory's bound: a trace of switches alone matches no event */
		n = cs->pending.len - CMS_PENDING_MAX;
	if (n > 0 && build_threads(b) != 0) /* every switch's threads have rows */
		return -1;
	for (i = 0; i < n && rc == 0; i++)
		rc = take_switch(cs, b, &p[i]);
	if (rc != 0)
		return -1;
	if (n > 0) { /* p is NULL while nothing ever waited */
		memmove(p, p + n, (cs->pending.len - n) * sizeof(*p));
		cs->pending.len -= n;
	}
	/* a cpu seen for the first time moves the ids of those after it */
	if (renumber(cs, b) != 0 || write_rows(cs, b) != 0 || write_tracks(cs, b) != 0)
		return -1;
	return 0;
}

int cms_tracks_push(struct cm_sched *cs, struct build *b)
{
	size_t i;

	for (i = 0; i < cs->cpus.len; i++) {
		const struct cms_cpu *c = cms_cpu_of(cs, i);
		struct btrack *t;

		if (c == NULL || c->ids.count == 0)
			continue;
		if ((t = vec_push(&b->tracks)) == NULL)
			return -1; /* cms_tracks_pop takes off those pushed */
		memset(t, 0, sizeof(*t));
		t->kind = TK_CPU;
		t->cpu = (uint32_t)i;
		t->lod_levels = c->lod_levels;
		t->marks_off = c->marks_off;
		t->marks_len = c->marks_len;
	}
	return 0;
}

void cms_tracks_pop(struct build *b)
{
	b->tracks.len = b->grown_cpu_first - 1;
}
