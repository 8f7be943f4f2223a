/*
 * The build stage's writing (build.h): every table of schema/trace.sql, the
 * slices' through slicewrite.c (write.h).
 * Slices are grouped by (track, depth) and ordered by time, counter points
 * by track, cpu runs by cpu, and table extents says where each group's rows
 * lie (extents.h), so the database needs no secondary index to answer
 * viewport queries; a stable counting sort gives that order without moving
 * the slices. By default each group is one extent and the tables are in
 * cluster order. Each (track, depth) group and each counter and cpu track
 * gets its level of detail (lod.h) as it is written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "build.h"
#include "commit.h"
#include "commit_sched.h"
#include "extents.h"
#include "lod.h"
#include "write.h"

static const char *const track_kinds[] = { "thread", "async", "counter", "cpu" };

static int log_cmp(const void *a, const void *b)
{
	const struct mdl_log *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- writing ---------------------------------------------------------- */

int write_marks_of(struct vec *mb, uint64_t n, int64_t (*ts_of)(const void *ctx, uint64_t ord), const void *ctx,
		   size_t *off, size_t *len)
{
	uint64_t k, count = tracedb_marks(n);
	int64_t prev = 0;

	if (vec_reserve(mb, mb->len + (size_t)count * TRACEDB_MARK_MAX) != 0)
		return -1;
	*off = mb->len;
	for (k = 0; k < count; k++)
		mb->len += tracedb_mark_put((uint8_t *)mb->data + mb->len, &prev, ts_of(ctx, tracedb_mark_ord(n, k)));
	*len = mb->len - *off;
	return 0;
}

/* The ts of the ordinals time marks keep, of n rows whose every 1024th ts
 * is in marks and whose last ts is last (write_marks_kept). */
struct kept_marks {
	const struct vec *marks; /* int64_t */
	uint64_t n;
	int64_t last;
};

static int64_t kept_ts(const void *ctx, uint64_t ord)
{
	const struct kept_marks *k = ctx;

	return ord == k->n - 1 ? k->last : *VEC_AT(k->marks, int64_t, ord / TRACEDB_MARK_ROWS);
}

int write_marks_kept(struct vec *mb, const struct vec *marks, uint64_t n, int64_t last, size_t *off, size_t *len)
{
	struct kept_marks k = { marks, n, last };

	return write_marks_of(mb, n, kept_ts, &k, off, len);
}

static int64_t item_ts(const void *ctx, uint64_t ord)
{
	return ((const struct lod_item *)ctx)[ord].ts;
}

int write_marks(struct vec *mb, const struct lod_item *it, uint64_t n, size_t *off, size_t *len)
{
	return write_marks_of(mb, n, item_ts, it, off, len);
}

/* Writes an arg set through the arguments' writer (args.h). */
static uint32_t arg_set(struct build *b, uint32_t first, unsigned n)
{
	uint32_t set = argw_set(&b->args, first, n, 0, 0);

	if (b->args.overflow)
		b->oom = 1;
	return set;
}

int write_sorted_failed(struct build *b, const struct runsort *rs)
{
	if (!rs->failed)
		return 0;
	if (rs->sp == NULL || !rs->sp->failed)
		b->oom = 1;
	return -1;
}

int write_progress(struct build *b, struct ingest_opts_view *v, uint64_t done)
{
	if (v->fn && !b->cancel && v->fn(v->ctx, INGEST_PHASE_WRITE, v->base + done, v->total, 0) != 0)
		__atomic_store_n(&b->cancel, 1, __ATOMIC_RELAXED); /* the name index's thread reads it too */
	return b->cancel;
}

/* id 0: the next rowid (one extent per track, points in id order). */
static void write_point(struct bins *cb, uint64_t id, const struct bpoint *p)
{
	if (id)
		bins_i64(cb, (int64_t)id);
	else
		bins_null(cb);
	bins_i64(cb, p->track + 1);
	bins_i64(cb, p->ts);
	if (p->is_int)
		bins_i64(cb, p->v.i);
	else if (p->is_u64)
		bins_u64(cb, (uint64_t)p->v.i);
	else
		bins_dbl(cb, p->v.d);
	bins_row(cb);
}

/* What write_counters carries from one counter track to the next. */
struct counter_out {
	struct bins rows;
	struct bins extents;
	struct lod_writer *lw;
	struct vec items;      /* struct lod_item: the track's points so far */
	uint64_t first;        /* the position of the track's first point */
};

/* A counter track's extents and level of detail, once its points are written. */
static int counter_track(struct build *b, struct counter_out *o, uint32_t track)
{
	struct btrack *t = VEC_AT(&b->tracks, struct btrack, track);
	const struct id_group *ids = b->extent_rows ? VEC_AT(&b->point_ids, struct id_group, track) : NULL;
	struct lod_key key = { (int64_t)track + 1, 0 };
	size_t n = o->items.len;
	int rc;

	extents_write(&o->extents, key.track_id, 0, &b->point_chunks, ids, o->first + 1, n);
	if (write_marks(&b->track_marks, o->items.data, n, &t->marks_off, &t->marks_len) != 0)
		b->oom = 1;
	rc = lod_build(o->lw, &key, o->items.data, n, 1, &t->lod_levels);
	o->first += n;
	o->items.len = 0; /* the next track's, in the same memory */
	return rc;
}

/* Notes a point for its track's level of detail; 0, or -1 when out of memory. */
static int counter_item(struct counter_out *o, const struct bpoint *p)
{
	struct lod_item *it = vec_push(&o->items);

	if (it == NULL)
		return -1;
	*it = (struct lod_item){ .ts = p->ts, .end = p->ts, .is_int = p->is_int, .ivalue = p->is_int ? p->v.i : 0,
				 .value = bpoint_value(p) };
	return 0;
}

/* Counter points, grouped by track, each track's in time (then file)
 * order: merged from their runs (build.points), each track's extents and
 * level of detail written as it ends. */
static int write_counters(struct build *b, struct ingest_opts_view *pv)
{
	struct counter_out o;
	const struct bpoint *p;
	uint32_t track = MDL_NONE;
	uint64_t i = 0;
	int rc = -1;

	if (b->committed) /* the commits wrote them */
		return 0;

	memset(&o, 0, sizeof(o));
	vec_init(&o.items, sizeof(struct lod_item));
	if ((o.lw = calloc(1, sizeof(*o.lw))) == NULL || lod_writer_init(o.lw, b->s) != 0)
		goto out_free;
	if (bins_init(&o.rows, b->s, "counters", 4) != 0)
		goto out_lod;
	if (bins_init(&o.extents, b->s, "extents", 5) != 0)
		goto out_rows;
	rc = rs_finish(&b->points);
	while (rc == 0 && (p = rs_next(&b->points)) != NULL) {
		if (p->track != track && track != MDL_NONE)
			rc = counter_track(b, &o, track);
		track = p->track;
		write_point(&o.rows, b->extent_rows ? p->order : 0, p);
		if (counter_item(&o, p) != 0)
			b->oom = 1;
		if ((i++ & 0xffff) == 0 && write_progress(b, pv, i - 1) != 0)
			break;
	}
	rc |= write_sorted_failed(b, &b->points);
	if (rc == 0 && track != MDL_NONE)
		rc = counter_track(b, &o, track);
	pv->base += b->points.count;
	b->res->counts.counters = b->points.count;
	rs_fini(&b->points);
	rc |= bins_fini(&o.extents);
out_rows:
	rc |= bins_fini(&o.rows);
out_lod:
	rc |= lod_writer_fini(o.lw);
out_free:
	free(o.lw);
	vec_fini(&o.items);
	return rc || b->oom ? -1 : 0;
}

/* An arrow leaves where its from-slice ends and arrives where its to-slice
 * begins (the FXT text: a flow "begins where the enclosing duration event
 * ends" and "resumes where the enclosing duration event begins"); an
 * unterminated from-slice gives its start. */
void write_flow_row(struct bins *fb, const struct build *b, const struct bflow *f, int with_id)
{
	if (with_id)
		bins_i64(fb, (int64_t)f->n + 1);
	else
		bins_null(fb); /* = n + 1: ids from 1 in order, so SQLite's next rowid (as for slices) */
	bins_i64(fb, (int64_t)f->flow_id);
	bins_i64(fb, f->cat);
	bins_i64(fb, f->name);
	bins_i64(fb, (int64_t)ss_id(&b->ss, f->from));
	bins_i64(fb, (int64_t)ss_id(&b->ss, f->to));
	bins_i64(fb, f->from_ts);
	bins_i64(fb, f->to_ts);
	bins_row(fb);
}

static int write_flows(struct build *b)
{
	const struct bflow *f;
	struct bins fb;
	int rc;

	if (rs_finish(&b->flows_by_id) != 0)
		return write_sorted_failed(b, &b->flows_by_id);
	if (bins_init(&fb, b->s, "flows", 8) != 0)
		return -1;
	while ((f = rs_next(&b->flows_by_id)) != NULL) {
		/* a growing trace's commits wrote those whose from-slice ended
		 * (commit_flows.h): the others go in between */
		if (b->commit == NULL || !commit_flow_written(b->commit, f->n))
			write_flow_row(&fb, b, f, b->commit != NULL);
	}
	b->res->counts.flows = b->flows_by_id.count;
	rc = write_sorted_failed(b, &b->flows_by_id);
	rc |= bins_fini(&fb);
	rs_fini(&b->flows_by_id);
	return rc;
}

static const char *const thread_states[] = { "new", "running", "suspended", "blocked", "dying", "dead" };

int cpu_run_switch(const struct build *b, struct cpu_run *run, const struct mdl_sched *x, struct cpu_run *ended,
		   const char **state)
{
	int closed = run->open;

	if (closed) {
		*ended = *run;
		*state = x->out_state < 6 ? thread_states[x->out_state] : "unknown";
	}
	run->open = !x->in_idle;
	run->ts = x->ts;
	run->row = b->row_of[x->in_thread];
	run->priority = x->in_priority;
	run->id = 0;
	return closed;
}

void write_sched_row(struct bins *sb, const struct build *b, uint64_t id, uint16_t cpu, const struct cpu_run *r,
		     int64_t end, const char *state)
{
	const struct thread_row *t = VEC_AT(&b->rows, struct thread_row, r->row);

	if (id)
		bins_i64(sb, (int64_t)id);
	else
		bins_null(sb); /* SQLite's next rowid */
	bins_i64(sb, cpu);
	bins_i64(sb, r->ts);
	bins_i64(sb, end < 0 ? -1 : end - r->ts);
	bins_i64(sb, r->row + 1);
	bins_i64(sb, (int64_t)t->pid);
	bins_i64(sb, (int64_t)t->tid);
	bins_i64(sb, r->priority);
	if (state)
		bins_text(sb, state, -1);
	else
		bins_null(sb);
	bins_row(sb);
}

/* What write_sched carries from row to row of one cpu. */
struct sched_out {
	struct bins rows;
	struct bins extents;
	struct vec runs;        /* struct lod_item of the cpu's runs so far */
	struct lod_writer *lw;  /* their level of detail */
	struct id_chunks chunks;/* rows > 0: ids reserved as runs come (extents.h) */
	struct id_group ids;    /* the cpu's, then */
};

static void sched_row(struct build *b, struct sched_out *o, uint16_t cpu, const struct cpu_run *r, int64_t end,
		      const char *state)
{
	struct lod_item *it;
	uint64_t id = 0;

	++b->res->counts.sched;
	if (o->chunks.rows && (id = idg_take(&o->chunks, &o->ids)) == 0)
		b->oom = 1;
	write_sched_row(&o->rows, b, id, cpu, r, end, state);
	if ((it = vec_push(&o->runs)) == NULL) {
		b->oom = 1;
		return;
	}
	*it = write_run_item(b, r, end);
}

/* Closes the run on the cpu (if any) at a switch and opens the next one. */
static void cpu_switch(struct build *b, struct sched_out *o, struct cpu_run *run, const struct mdl_sched *x)
{
	struct cpu_run ended;
	const char *state;

	if (cpu_run_switch(b, run, x, &ended, &state))
		sched_row(b, o, x->cpu, &ended, x->ts, state);
}

/* The cpu's track: where its rows lie and the level of detail of its runs. */
static int cpu_track(struct build *b, struct sched_out *o, uint16_t cpu, uint64_t first, uint64_t last)
{
	struct btrack proto = { 0 };
	struct lod_key key;
	uint32_t t;
	int rc = 0;

	if (last >= first) {
		proto.kind = TK_CPU;
		proto.cpu = cpu;
		t = build_track(b, &proto, cpu, 0, 0);
		if (!b->oom) {
			struct btrack *tr = VEC_AT(&b->tracks, struct btrack, t);

			extents_write(&o->extents, (int64_t)t + 1, 0, &o->chunks, &o->ids, first, last - first + 1);
			if (write_marks(&b->track_marks, o->runs.data, o->runs.len, &tr->marks_off, &tr->marks_len) != 0)
				b->oom = 1;
			key.track_id = (int64_t)t + 1;
			key.depth = 0;
			rc = lod_build(o->lw, &key, o->runs.data, o->runs.len, 0, &tr->lod_levels);
		}
	}
	o->runs.len = 0;
	idg_clear(&o->ids);
	return rc;
}

/* A context switch on cpu C at t starts the incoming thread's run; the next
 * switch on C ends it with that switch's outgoing state. The switches come
 * merged from their runs (model.h), by cpu then time. */
static int write_sched(struct build *b)
{
	const struct mdl_sched *x;
	int cpu = -1; /* the cpu of the switch before, -1 before the first */
	struct cpu_run run = { 0 };
	struct sched_out o;
	uint64_t first = 1;
	int rc = -1;

	memset(&o, 0, sizeof(o));
	vec_init(&o.runs, sizeof(struct lod_item));
	idg_init(&o.ids);
	o.chunks.rows = b->extent_rows;
	o.chunks.next = 1;
	if ((o.lw = calloc(1, sizeof(*o.lw))) == NULL || lod_writer_init(o.lw, b->s) != 0)
		goto out_free;
	if (bins_init(&o.rows, b->s, "sched", 9) != 0)
		goto out_lod;
	if (bins_init(&o.extents, b->s, "extents", 5) != 0)
		goto out_rows;
	b->res->counts.sched = 0; /* not the runs a growing trace's commits wrote */
	rc = rs_finish(&b->m->sched);
	while (rc == 0 && (x = rs_next(&b->m->sched)) != NULL) {
		if (cpu >= 0 && x->cpu != cpu) {
			if (run.open)
				sched_row(b, &o, (uint16_t)cpu, &run, -1, NULL);
			rc = cpu_track(b, &o, (uint16_t)cpu, first, b->res->counts.sched);
			first = b->res->counts.sched + 1;
			run.open = 0;
		}
		cpu_switch(b, &o, &run, x);
		cpu = x->cpu;
	}
	rc |= write_sorted_failed(b, &b->m->sched);
	if (cpu >= 0 && rc == 0) {
		if (run.open)
			sched_row(b, &o, (uint16_t)cpu, &run, -1, NULL);
		rc = cpu_track(b, &o, (uint16_t)cpu, first, b->res->counts.sched);
	}
	rs_fini(&b->m->sched);
	rc |= bins_fini(&o.extents);
out_rows:
	rc |= bins_fini(&o.rows);
out_lod:
	rc |= lod_writer_fini(o.lw);
out_free:
	free(o.lw);
	vec_fini(&o.runs);
	idg_fini(&o.ids);
	return rc || b->oom ? -1 : 0;
}

static void log_row(struct build *b, struct bins *lb, const struct mdl_log *l)
{
	struct thread_row *t = VEC_AT(&b->rows, struct thread_row, b->row_of[l->thread]);

	bins_null(lb); /* the next rowid: logs take their ids in (ts, seq) order */
	bins_i64(lb, l->ts);
	bins_i64(lb, b->row_of[l->thread] + 1);
	bins_i64(lb, (int64_t)t->pid);
	bins_i64(lb, (int64_t)t->tid);
	bins_i64(lb, l->msg);
	bins_row(lb);
}

static int write_logs(struct build *b)
{
	struct mdl_log *l = b->m->logs.data;
	size_t i, n = b->m->logs.len;
	struct bins lb;

	if (n > 1) /* l is NULL when there are none */
		qsort(l, n, sizeof(*l), log_cmp);
	/* a growing trace's commits wrote some (write_logs_growing): all
	 * of them are made again, in order */
	if (b->committed && dbw_queue_sql(b->s, "DELETE FROM main.logs") != 0)
		return -1;
	if (bins_init(&lb, b->s, "logs", 6) != 0)
		return -1;
	for (i = 0; i < n; i++)
		log_row(b, &lb, &l[i]);
	b->res->counts.logs = n;
	return bins_fini(&lb);
}

int write_logs_growing(struct build *b, struct logs_grown *g, int64_t upto)
{
	struct mdl_log *p;
	size_t i, k, n;
	struct bins lb;
	int rc;

	if (b->m->logs.len > g->seen) { /* the logs decoded since: in (ts, seq) order with those waiting */
		n = b->m->logs.len - g->seen;
		if (vec_reserve(&g->pending, g->pending.len + n) != 0)
			return -1;
		memcpy((struct mdl_log *)g->pending.data + g->pending.len, VEC_AT(&b->m->logs, struct mdl_log, g->seen),
		       n * sizeof(struct mdl_log));
		g->pending.len += n;
		g->seen = b->m->logs.len;
		qsort(g->pending.data, g->pending.len, sizeof(struct mdl_log), log_cmp);
	}
	p = g->pending.data;
	for (n = 0; n < g->pending.len && p[n].ts <= upto; n++)
		;
	if (n == 0)
		return 0;
	if (build_threads(b) != 0 || bins_init(&lb, b->s, "logs", 6) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		/* one that sorts before the last written (late: decoded after
		 * it) is left to the end's write_logs, which makes them all */
		if (g->written > 0 && log_cmp(&p[i], &g->last) < 0)
			continue;
		log_row(b, &lb, &p[i]);
		g->last = p[i];
		g->written++;
	}
	rc = bins_fini(&lb);
	k = g->pending.len - n;
	memmove(p, p + n, k * sizeof(*p));
	g->pending.len = k;
	b->res->counts.logs = g->written;
	return rc;
}

static void bins_opt(struct bins *x, uint64_t v)
{
	if (v)
		bins_i64(x, (int64_t)v);
	else
		bins_null(x);
}

static void bins_text_opt(struct bins *x, const char *s)
{
	if (s)
		bins_text(x, s, -1);
	else
		bins_null(x);
}

static int write_kobjs(struct build *b)
{
	struct bins kb;
	size_t i;

	if (bins_init(&kb, b->s, "kernel_objects", 5) != 0)
		return -1;
	for (i = 0; i < b->kobj_map.ents.len; i++) {
		struct kmap_entry *e = VEC_AT(&b->kobj_map.ents, struct kmap_entry, i);
		struct mdl_kobj *o = VEC_AT(&b->m->kobjs, struct mdl_kobj, e->val);

		bins_i64(&kb, (int64_t)o->koid);
		bins_i64(&kb, o->type);
		bins_text(&kb, model_str(b->m, o->name), -1);
		if (o->process == MDL_PID_UNRESOLVED)
			bins_null(&kb);
		else
			bins_i64(&kb, (int64_t)o->process);
		bins_opt(&kb, arg_set(b, o->args, o->nargs));
		bins_row(&kb);
	}
	b->res->counts.objects += b->kobj_map.ents.len;
	return bins_fini(&kb);
}

static int write_uobjs(struct build *b)
{
	struct mdl_uobj *o = b->m->uobjs.data;
	struct bins ub;
	size_t i;

	if (bins_init(&ub, b->s, "userspace_objects", 5) != 0)
		return -1;
	for (i = 0; i < b->m->uobjs.len; i++) {
		bins_i64(&ub, (int64_t)i + 1);
		bins_i64(&ub, (int64_t)o[i].pid);
		bins_i64(&ub, (int64_t)o[i].ptr);
		bins_text(&ub, model_str(b->m, o[i].name), -1);
		bins_opt(&ub, arg_set(b, o[i].args, o[i].nargs));
		bins_row(&ub);
	}
	b->res->counts.objects += b->m->uobjs.len;
	return bins_fini(&ub);
}

static const char *const blob_kinds[] = { "blob", "large_blob", "large_blob_data" };

static int write_blobs(struct build *b)
{
	struct mdl_blob *x = b->m->blobs.data;
	struct bins bb;
	size_t i;

	if (bins_init(&bb, b->s, "blobs", 10) != 0)
		return -1;
	for (i = 0; i < b->m->blobs.len; i++) {
		int meta = x[i].kind == MDL_LARGE_BLOB_META;

		bins_i64(&bb, (int64_t)i + 1);
		bins_text(&bb, blob_kinds[x[i].kind], -1);
		if (x[i].kind == MDL_BLOB)
			bins_i64(&bb, x[i].type);
		else
			bins_null(&bb);
		if (meta)
			bins_i64(&bb, x[i].ts);
		else
			bins_null(&bb);
		bins_opt(&bb, meta ? b->row_of[x[i].thread] + 1 : 0);
		if (x[i].kind == MDL_BLOB)
			bins_null(&bb);
		else
			bins_i64(&bb, x[i].cat);
		bins_i64(&bb, x[i].name);
		bins_opt(&bb, arg_set(b, x[i].args, x[i].nargs));
		bins_i64(&bb, (int64_t)x[i].len);
		bins_blob(&bb, (const char *)b->m->bytes.data + x[i].off, (int)x[i].len);
		bins_row(&bb);
	}
	b->res->counts.blobs = b->m->blobs.len;
	return bins_fini(&bb);
}

static const char *const prof_kinds[] = { "module", "mmap", "backtrace" };

static void write_prof(struct build *b, struct bins *pb, uint64_t id, const struct mdl_prof *p)
{
	const char *bytes = b->m->bytes.data;
	int i;

	bins_i64(pb, (int64_t)id);
	bins_text(pb, prof_kinds[p->kind], -1);
	bins_i64(pb, p->ts);
	bins_i64(pb, b->row_of[p->thread] + 1);
	if (p->kind == MDL_PROF_BACKTRACE)
		bins_null(pb);
	else
		bins_i64(pb, p->module);
	if (p->kind == MDL_PROF_MODULE) {
		bins_text(pb, model_str(b->m, p->name), -1);
		bins_blob(pb, bytes + p->off, (int)p->len);
	} else {
		bins_null(pb);
		bins_null(pb);
	}
	if (p->kind == MDL_PROF_MMAP) {
		bins_i64(pb, p->flags);
		bins_i64(pb, (int64_t)p->start);
		bins_i64(pb, (int64_t)p->range);
		bins_i64(pb, (int64_t)p->vaddr);
	} else {
		for (i = 0; i < 4; i++)
			bins_null(pb);
	}
	if (p->kind == MDL_PROF_BACKTRACE)
		bins_blob(pb, bytes + p->off, (int)p->len);
	else
		bins_null(pb);
	bins_row(pb);
}

static int write_profiler(struct build *b)
{
	struct bins pb;
	size_t i;

	if (bins_init(&pb, b->s, "profiler", 12) != 0)
		return -1;
	for (i = 0; i < b->m->profs.len; i++)
		write_prof(b, &pb, i + 1, VEC_AT(&b->m->profs, struct mdl_prof, i));
	b->res->counts.profiler = b->m->profs.len;
	return bins_fini(&pb);
}

/* Objects and blobs, with their arg sets; then the args table is complete. */
static int write_objects(struct build *b)
{
	int rc = write_kobjs(b);

	rc |= write_uobjs(b);
	rc |= write_blobs(b);
	rc |= argw_close(&b->args);
	return rc | write_profiler(b);
}

int write_strings_from(struct build *b, size_t from)
{
	struct bins sb;
	size_t i;

	if (bins_init(&sb, b->s, "strings", 2) != 0)
		return -1;
	for (i = from; i < b->m->soff.len; i++) {
		bins_i64(&sb, (int64_t)i);
		bins_text(&sb, model_str(b->m, (uint32_t)i), -1);
		bins_row(&sb);
	}
	return bins_fini(&sb);
}

static const char *kobj_name(const struct build *b, uint64_t koid, uint32_t type)
{
	const struct mdl_kobj *o = build_kobj_find(b, koid);

	return o && o->type == type ? model_str(b->m, o->name) : NULL;
}

static int write_processes(struct build *b)
{
	struct kmap pids;
	struct bins pb;
	size_t i;

	kmap_init(&pids);
	for (i = 0; i < b->rows.len; i++)
		if (kmap_get(&pids, VEC_AT(&b->rows, struct thread_row, i)->pid, 0, 0, 0) == NULL)
			b->oom = 1;
	for (i = 0; i < b->tracks.len; i++)
		if (VEC_AT(&b->tracks, struct btrack, i)->kind != TK_CPU &&
		    kmap_get(&pids, VEC_AT(&b->tracks, struct btrack, i)->pid, 0, 0, 0) == NULL)
			b->oom = 1;
	if (bins_init(&pb, b->s, "processes", 2) != 0) {
		kmap_fini(&pids);
		return -1;
	}
	for (i = 0; i < pids.ents.len; i++) {
		uint64_t pid = VEC_AT(&pids.ents, struct kmap_entry, i)->k[0];

		bins_i64(&pb, (int64_t)pid);
		bins_text_opt(&pb, kobj_name(b, pid, 1));
		bins_row(&pb);
	}
	b->res->counts.processes = pids.ents.len;
	kmap_fini(&pids);
	return bins_fini(&pb);
}

static int write_threads(struct build *b)
{
	struct bins tb;
	size_t i;

	if (bins_init(&tb, b->s, "threads", 4) != 0)
		return -1;
	for (i = 0; i < b->rows.len; i++) {
		struct thread_row *t = VEC_AT(&b->rows, struct thread_row, i);

		bins_i64(&tb, (int64_t)i + 1);
		bins_i64(&tb, (int64_t)t->pid);
		bins_i64(&tb, (int64_t)t->tid);
		bins_text_opt(&tb, kobj_name(b, t->tid, 2));
		bins_row(&tb);
	}
	b->res->counts.threads = b->rows.len;
	return bins_fini(&tb) | write_processes(b);
}

static void write_track(struct bins *tb, uint64_t id, const struct btrack *t, const uint8_t *marks)
{
	int named = t->kind == TK_ASYNC || t->kind == TK_COUNTER;

	bins_i64(tb, (int64_t)id);
	bins_text(tb, track_kinds[t->kind], -1);
	if (t->kind == TK_CPU)
		bins_null(tb);
	else
		bins_i64(tb, (int64_t)t->pid);
	bins_opt(tb, t->kind == TK_THREAD ? t->thread + 1 : 0);
	if (named) {
		bins_i64(tb, t->name);
		bins_i64(tb, t->cat);
	} else {
		bins_null(tb);
		bins_null(tb);
	}
	if (t->kind == TK_COUNTER) {
		bins_i64(tb, t->series);
		bins_i64(tb, (int64_t)t->counter_id);
	} else {
		bins_null(tb);
		bins_null(tb);
	}
	if (t->kind == TK_CPU)
		bins_i64(tb, t->cpu);
	else
		bins_null(tb);
	bins_i64(tb, t->max_depth);
	if (t->has_values) {
		bins_dbl(tb, t->min);
		bins_dbl(tb, t->max);
	} else {
		bins_null(tb);
		bins_null(tb);
	}
	bins_opt(tb, t->kind == TK_COUNTER || t->kind == TK_CPU ? t->lod_levels : 0);
	if (t->kind == TK_COUNTER || t->kind == TK_CPU)
		bins_blob(tb, marks + t->marks_off, (int)t->marks_len);
	else
		bins_null(tb);
	bins_row(tb);
}

static int write_tracks(struct build *b)
{
	struct bins tb;
	size_t i;
	int rc;
	const uint8_t *marks = b->track_marks.data;
	uint8_t *copy = NULL;

	/* the marks' bytes are read until the queue has run: a growing
	 * trace's commits (commit.h) hand over a copy rather than wait */
	if (b->committed && b->track_marks.len > 0 && (copy = malloc(b->track_marks.len)) != NULL) {
		memcpy(copy, b->track_marks.data, b->track_marks.len);
		marks = copy;
	}
	if (bins_init(&tb, b->s, "tracks", 14) != 0) {
		free(copy);
		return -1;
	}
	for (i = 0; i < b->tracks.len; i++)
		write_track(&tb, i + 1, VEC_AT(&b->tracks, struct btrack, i), marks);
	b->res->counts.tracks = b->tracks.len;
	rc = bins_fini(&tb);
	if (copy != NULL && dbw_release(b->s, copy) == 0)
		return rc;
	rc |= dbw_drain(b->s);
	free(copy);
	return rc;
}

static int write_providers(struct build *b)
{
	struct bins pb;
	size_t i;

	if (bins_init(&pb, b->s, "providers", 4) != 0)
		return -1;
	for (i = 0; i < b->m->providers.len; i++) {
		struct mdl_provider *p = *VEC_AT(&b->m->providers, struct mdl_provider *, i);

		bins_i64(&pb, p->id);
		bins_text(&pb, model_str(b->m, p->name), -1);
		bins_i64(&pb, (int64_t)p->ticks_per_second);
		bins_i64(&pb, (int64_t)p->overflows);
		bins_row(&pb);
	}
	b->res->nproviders = (unsigned)b->m->providers.len;
	return bins_fini(&pb);
}

/* Diagnostics go to the database and to the result, in API order. */
static int write_diagnostics(struct build *b)
{
	struct ingest_result *r = b->res;
	struct bins db;

	if (bins_init(&db, b->s, "diagnostics", 2) != 0)
		return -1;
	r->ndiag = 0;
#define X(n)                                                                                                           \
	bins_text(&db, #n, -1);                                                                                        \
	bins_i64(&db, (int64_t)b->m->diag.n);                                                                          \
	bins_row(&db);                                                                                                 \
	if (r->ndiag < INGEST_MAX_DIAG) {                                                                              \
		r->diag_name[r->ndiag] = #n;                                                                           \
		r->diag_value[r->ndiag++] = b->m->diag.n;                                                              \
	}
	MDL_DIAG_LIST(X)
#undef X
	return bins_fini(&db);
}

static int write_meta(struct build *b)
{
	struct ingest_result *r = b->res;
	int rc = 0;

	rc |= dbw_meta(b->s, "format", b->m->format, 0);
	rc |= dbw_meta(b->s, "start_ns", NULL, r->start_ns);
	rc |= dbw_meta(b->s, "end_ns", NULL, r->end_ns);
	rc |= dbw_meta(b->s, "events", NULL, (int64_t)r->counts.events);
	rc |= dbw_meta(b->s, "input_bytes", NULL, (int64_t)r->bytes);
	return rc;
}

/* The tables written whole each time (a growing trace's commits write
 * them again: again, then each is emptied first). */
int write_small_tables(struct build *b, int again)
{
	static const char *const tables[] = { "DELETE FROM threads", "DELETE FROM processes", "DELETE FROM tracks",
					      "DELETE FROM providers", "DELETE FROM diagnostics", "DELETE FROM meta" };
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(tables) / sizeof(tables[0]) && again && rc == 0; i++)
		rc = dbw_queue_sql(b->s, tables[i]);
	b->res->start_ns = b->start_ns;
	b->res->end_ns = b->end_ns;
	rc = rc ? rc : write_threads(b);
	rc = rc ? rc : write_tracks(b);
	rc = rc ? rc : write_providers(b);
	rc = rc ? rc : write_diagnostics(b);
	rc = rc ? rc : write_meta(b);
	return rc;
}

int build_write(struct build *b, struct ingest_opts_view *pv)
{
	/* slices already being written (by_thread) are written first */
	int slices_first = slices_begun(b);
	struct name_index ni;
	int rc, nrc;

	if (slices_order(b) != 0) /* slice ids from here on */
		return -1;
	/* the runs a growing trace's commits wrote, before tracks made since
	 * write under their cpu tracks' ids: write_sched writes them all */
	if (cms_drop_grown(b) != 0)
		return -1;
	name_index_start(&ni, b);
	/* counter points first and flows right after the slices, each
	 * merged from their runs and freed once written */
	rc = slices_first ? write_slices(b, pv) : write_counters(b, pv);
	rc = rc ? rc : slices_first ? write_counters(b, pv) : write_slices(b, pv);
	rs_fini(&b->flows); /* every flow went on to flows_by_id */
	rc = rc ? rc : write_flows(b);
	rc = rc ? rc : write_sched(b);
	rc = rc ? rc : write_logs(b);
	rc = rc ? rc : write_objects(b);
	rc = rc ? rc : write_strings_from(b, b->strings_written);
	nrc = name_index_end(&ni); /* waited for whatever happened before */
	rc = rc ? rc : nrc;
	rc = rc ? rc : write_small_tables(b, b->committed);
	return rc || b->oom ? -1 : 0;
}
