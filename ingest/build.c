/*
 * The build stage: from the decoded model to the rows of schema/trace.sql.
 *
 * It resolves thread pids from kernel objects, sorts events by (ns, file
 * position), walks them once to match durations, async operations, flows and
 * counter series (docs/API.md, Meaning 3-8), and writes every table in
 * cluster order: slices grouped by (track, depth) and ordered by time, so
 * the database needs no secondary index to answer viewport queries. A
 * stable counting sort gives that order without moving the slices.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ingest_internal.h"
#include "lod.h"
#include "store.h"

enum track_kind { TK_THREAD, TK_ASYNC, TK_COUNTER, TK_CPU };
static const char *const track_kinds[] = { "thread", "async", "counter", "cpu" };

struct btrack {
	uint8_t kind;         /* enum track_kind */
	uint8_t has_values;   /* min and max are set */
	uint64_t pid;
	uint32_t thread;      /* thread row id - 1 (TK_THREAD) */
	uint32_t name, cat, series;
	uint64_t counter_id;
	uint32_t cpu;
	uint32_t max_depth;
	uint64_t lod_levels;  /* levels of detail stored for a counter track (lod.h) */
	uint64_t first_row, last_row; /* counters and sched rows; 0 when none */
	double min, max;
};

struct bslice {
	int64_t ts;
	int64_t dur;      /* -1 while open */
	uint32_t track;   /* index into tracks */
	uint32_t depth;
	uint32_t name, cat;
	uint32_t parent;  /* slice index or MDL_NONE */
	uint32_t args_a;  /* first argument of the begin (index into m->args) */
	uint32_t args_b;  /* first argument of the end, whose arguments join */
	uint8_t nargs_a, nargs_b;
	uint8_t async_op; /* an async operation (its depth is a lane) */
	uint8_t children; /* has async instants inside */
};

struct bflow {
	uint64_t flow_id;
	uint32_t cat, name;
	uint32_t from, to; /* slice indexes */
};

struct bpoint {
	int64_t ts;
	uint32_t track;
	uint8_t is_int;
	union {
		int64_t i;
		double d;
	} v;
};

struct open_slice {
	uint32_t slice;
	uint8_t complete; /* a complete event: closes by itself at end */
	int64_t end;
};

/* A complete event in a run of equal timestamps, and the place it held. */
struct complete_tie {
	struct mdl_ev ev;
	uint32_t row; /* thread row: ties are broken per thread */
	size_t pos;   /* index in the sorted events */
};

struct thread_row {
	uint64_t pid, tid;
	uint32_t track; /* thread track index + 1, 0 = none yet */
	struct vec stack; /* struct open_slice, innermost last */
};

struct build {
	struct model *m;
	struct store *s;
	struct ingest_result *res;
	uint32_t *row_of;      /* model thread -> thread row */
	struct vec rows;       /* struct thread_row */
	struct kmap row_map;   /* (pid, tid) -> thread row */
	struct kmap kobj_map;  /* koid -> last kernel object record */
	struct vec tracks;     /* struct btrack */
	struct kmap track_map; /* (kind | a, b, c, d) -> track */
	struct vec slices;     /* struct bslice, in creation (= time) order */
	struct vec flows;      /* struct bflow */
	struct vec points;     /* struct bpoint, time order */
	struct kmap async_open;/* (pid, cat | name << 32, id) -> slice */
	struct kmap flow_last; /* (cat, name, id) -> slice of the last bound event */
	uint32_t *slice_id;    /* slice index -> row id */
	int64_t start_ns, end_ns;
	int have_time;
	int oom;
	int cancel;    /* the progress callback asked to stop */
};

static void build_time(struct build *b, int64_t ts)
{
	if (!b->have_time) {
		b->start_ns = b->end_ns = ts;
		b->have_time = 1;
	}
	if (ts < b->start_ns)
		b->start_ns = ts;
	if (ts > b->end_ns)
		b->end_ns = ts;
}

/* ---- sorting ---------------------------------------------------------- */

static int ev_cmp(const void *a, const void *b)
{
	const struct mdl_ev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Sorts events by (ts, seq). Real archives are mostly in order with a tail
 * out of order (writers append the outermost begins at the end), so the
 * sorted prefix stays in place and only the rest is sorted and merged.
 */
static int sort_events(struct mdl_ev *ev, size_t n)
{
	size_t p = 1, tail, i, j, k;
	struct mdl_ev *tmp;

	while (p < n && ev_cmp(&ev[p - 1], &ev[p]) <= 0)
		p++;
	if (p >= n)
		return 0;
	tail = n - p;
	if (tail > n / 2 || (tmp = malloc(tail * sizeof(*tmp))) == NULL) {
		qsort(ev, n, sizeof(*ev), ev_cmp);
		return 0;
	}
	memcpy(tmp, ev + p, tail * sizeof(*tmp));
	qsort(tmp, tail, sizeof(*tmp), ev_cmp);
	i = p, j = tail, k = n;
	while (j > 0) {
		if (i > 0 && ev_cmp(&ev[i - 1], &tmp[j - 1]) > 0)
			ev[--k] = ev[--i];
		else
			ev[--k] = tmp[--j];
	}
	free(tmp);
	return 0;
}

/* A thread's complete events by end, latest first, then file order. */
static int complete_tie_cmp(const void *a, const void *b)
{
	const struct complete_tie *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->ev.extra != y->ev.extra)
		return (int64_t)x->ev.extra > (int64_t)y->ev.extra ? -1 : 1;
	return x->ev.seq < y->ev.seq ? -1 : x->ev.seq > y->ev.seq;
}

/* A thread's places, in order. */
static int tie_place_cmp(const void *a, const void *b)
{
	const struct complete_tie *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Reorders the complete events among ev[i .. j) in the places they hold;
 * evs and places have room for all of them. */
static void order_tie_run(const struct build *b, struct mdl_ev *ev, size_t i, size_t j, struct complete_tie *evs,
			  struct complete_tie *places)
{
	size_t k, c = 0;

	for (k = i; k < j; k++) {
		if (ev[k].kind != MDL_EV_COMPLETE)
			continue;
		evs[c].ev = ev[k];
		evs[c].row = b->row_of[ev[k].thread];
		evs[c++].pos = k;
	}
	memcpy(places, evs, c * sizeof(*evs));
	qsort(evs, c, sizeof(*evs), complete_tie_cmp);
	qsort(places, c, sizeof(*places), tie_place_cmp);
	for (k = 0; k < c; k++)
		ev[places[k].pos] = evs[k].ev;
}

/*
 * Writers that emit a complete event when its scope exits write the inner
 * one first. When complete events of one thread start at the same time, the
 * one ending last encloses the others (Meaning 4: depth is the nesting
 * level), so within each run of equal timestamps a thread's complete events
 * are reordered by end, latest first, in the places they already hold.
 * Every other event keeps its place. Returns 0, or -1 when out of memory.
 */
static int order_complete_ties(struct build *b)
{
	struct mdl_ev *ev = b->m->events.data;
	struct complete_tie *scratch = NULL, *grown;
	size_t i, j, c, cap = 0, n = b->m->events.len;

	for (i = 0; i < n; i = j) {
		for (j = i, c = 0; j < n && ev[j].ts == ev[i].ts; j++)
			c += ev[j].kind == MDL_EV_COMPLETE;
		if (c < 2)
			continue;
		if (c > cap) {
			if ((grown = realloc(scratch, 2 * c * sizeof(*scratch))) == NULL) {
				free(scratch);
				return -1;
			}
			scratch = grown;
			cap = c;
		}
		order_tie_run(b, ev, i, j, scratch, scratch + c);
	}
	free(scratch);
	return 0;
}

static int sched_cmp(const void *a, const void *b)
{
	const struct mdl_sched *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int log_cmp(const void *a, const void *b)
{
	const struct mdl_log *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- threads, processes and tracks ----------------------------------- */

static const struct mdl_kobj *kobj_find(const struct build *b, uint64_t koid)
{
	const struct kmap_entry *e = kmap_find(&b->kobj_map, koid, 0, 0, 0);

	return e ? VEC_AT(&b->m->kobjs, struct mdl_kobj, e->val) : NULL;
}

/* Kernel objects form one table; the last record for a koid wins. */
static int build_kobjs(struct build *b)
{
	size_t i;

	for (i = 0; i < b->m->kobjs.len; i++) {
		struct mdl_kobj *o = VEC_AT(&b->m->kobjs, struct mdl_kobj, i);
		struct kmap_entry *e = kmap_get(&b->kobj_map, o->koid, 0, 0, 0);

		if (e == NULL)
			return -1;
		e->val = (uint32_t)i;
	}
	return 0;
}

/* Gives every model thread its row: pids still unknown come from the thread's
 * kernel object ("process" argument), else 0; equal pairs share a row. */
static int build_threads(struct build *b)
{
	size_t i, n = b->m->threads.len;

	if ((b->row_of = calloc(n ? n : 1, sizeof(uint32_t))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		struct mdl_thread *t = VEC_AT(&b->m->threads, struct mdl_thread, i);
		uint64_t pid = t->pid;
		struct kmap_entry *e;
		struct thread_row *r;

		if (pid == MDL_PID_UNRESOLVED) {
			const struct mdl_kobj *o = kobj_find(b, t->tid);

			pid = o && o->type == 2 && o->process != MDL_PID_UNRESOLVED ? o->process : 0;
		}
		if ((e = kmap_get(&b->row_map, pid, t->tid, 0, 0)) == NULL)
			return -1;
		if (e->val == MDL_NONE) {
			if ((r = vec_push(&b->rows)) == NULL)
				return -1;
			r->pid = pid;
			r->tid = t->tid;
			vec_init(&r->stack, sizeof(struct open_slice));
			e->val = (uint32_t)b->rows.len - 1;
		}
		b->row_of[i] = e->val;
	}
	return 0;
}

static uint32_t track_get(struct build *b, struct btrack *proto, uint64_t k1, uint64_t k2, uint64_t k3)
{
	struct kmap_entry *e = kmap_get(&b->track_map, (uint64_t)proto->kind << 56 ^ k1, k2, k3, proto->pid);
	struct btrack *t;

	if (e == NULL)
		goto out_oom;
	if (e->val == MDL_NONE) {
		if ((t = vec_push(&b->tracks)) == NULL)
			goto out_oom;
		*t = *proto;
		e->val = (uint32_t)b->tracks.len - 1;
	}
	return e->val;
out_oom:
	b->oom = 1;
	return 0;
}

static uint32_t thread_track(struct build *b, uint32_t row)
{
	struct thread_row *r = VEC_AT(&b->rows, struct thread_row, row);
	struct btrack proto = { 0 };

	if (r->track == 0) {
		proto.kind = TK_THREAD;
		proto.pid = r->pid;
		proto.thread = row;
		r->track = track_get(b, &proto, row, 0, 0) + 1;
	}
	return r->track - 1;
}

/* ---- slices ----------------------------------------------------------- */

static uint32_t slice_add(struct build *b, const struct mdl_ev *e, uint32_t track, uint32_t depth, uint32_t parent)
{
	struct bslice *s = vec_push(&b->slices);

	if (s == NULL || b->slices.len >= UINT32_MAX - 1) {
		b->oom = 1;
		return MDL_NONE;
	}
	s->ts = e->ts;
	s->dur = -1;
	s->track = track;
	s->depth = depth;
	s->name = e->name;
	s->cat = e->cat;
	s->parent = parent;
	s->args_a = e->args;
	s->nargs_a = e->nargs;
	return (uint32_t)b->slices.len - 1;
}

/* Drops finished complete events from the top of a thread's stack. */
static struct vec *thread_stack(struct build *b, uint32_t row, int64_t ts)
{
	struct vec *st = &VEC_AT(&b->rows, struct thread_row, row)->stack;

	while (st->len > 0) {
		struct open_slice *o = VEC_AT(st, struct open_slice, st->len - 1);

		if (!o->complete || o->end > ts)
			break;
		st->len--;
	}
	return st;
}

static uint32_t stack_top(const struct vec *st)
{
	return st->len ? VEC_AT(st, struct open_slice, st->len - 1)->slice : MDL_NONE;
}

static void on_duration(struct build *b, const struct mdl_ev *e)
{
	uint32_t row = b->row_of[e->thread];
	struct vec *st = thread_stack(b, row, e->ts);
	uint32_t track = thread_track(b, row), top = stack_top(st), s;
	struct open_slice *o;

	if (e->kind == MDL_EV_COMPLETE && (int64_t)e->extra < e->ts) {
		b->m->diag.negative_durations++;
		return;
	}
	/* one below the enclosing slice: an end may have closed a slice
	 * under a complete event still open, so depths can skip a level */
	s = slice_add(b, e, track, top == MDL_NONE ? 0 : VEC_AT(&b->slices, struct bslice, top)->depth + 1, top);
	if (s == MDL_NONE)
		return;
	if (e->kind == MDL_EV_INSTANT) {
		VEC_AT(&b->slices, struct bslice, s)->dur = 0;
		return;
	}
	if ((o = vec_push(st)) == NULL) {
		b->oom = 1;
		return;
	}
	o->slice = s;
	if (e->kind == MDL_EV_COMPLETE) {
		o->complete = 1;
		o->end = (int64_t)e->extra;
		VEC_AT(&b->slices, struct bslice, s)->dur = (int64_t)e->extra - e->ts;
		build_time(b, (int64_t)e->extra);
	}
}

/* An end closes the innermost open slice of its thread, whatever its name. */
static void on_end(struct build *b, const struct mdl_ev *e)
{
	struct vec *st = thread_stack(b, b->row_of[e->thread], e->ts);
	struct open_slice *o = st->data;
	struct bslice *s;
	size_t i = st->len;

	while (i > 0 && o[i - 1].complete)
		i--;
	if (i == 0) {
		b->m->diag.unmatched_ends++;
		return;
	}
	s = VEC_AT(&b->slices, struct bslice, o[i - 1].slice);
	s->dur = e->ts - s->ts;
	s->args_b = e->args;
	s->nargs_b = e->nargs;
	memmove(&o[i - 1], &o[i], (st->len - i) * sizeof(*o));
	st->len--;
}

static uint32_t async_track(struct build *b, const struct mdl_ev *e)
{
	struct btrack proto = { 0 };

	proto.kind = TK_ASYNC;
	proto.pid = VEC_AT(&b->rows, struct thread_row, b->row_of[e->thread])->pid;
	proto.name = e->name;
	proto.cat = e->cat;
	return track_get(b, &proto, e->cat, e->name, 0);
}

/* Async begin, instant and end with the same (pid, category, name, id) are
 * one operation on the async track of (pid, category, name). */
static void on_async(struct build *b, const struct mdl_ev *e)
{
	uint32_t track = async_track(b, e);
	uint64_t pid = VEC_AT(&b->rows, struct thread_row, b->row_of[e->thread])->pid;
	struct kmap_entry *k = kmap_get(&b->async_open, pid, (uint64_t)e->cat | (uint64_t)e->name << 32, e->extra, 0);
	struct bslice *op;
	uint32_t s;

	if (k == NULL) {
		b->oom = 1;
		return;
	}
	if (e->kind == MDL_EV_ASYNC_BEGIN) {
		if ((s = slice_add(b, e, track, 0, MDL_NONE)) != MDL_NONE)
			VEC_AT(&b->slices, struct bslice, s)->async_op = 1;
		k->val = s;
		return;
	}
	if (k->val == MDL_NONE) {
		if (e->kind == MDL_EV_ASYNC_END) {
			b->m->diag.unmatched_ends++;
		} else if ((s = slice_add(b, e, track, 0, MDL_NONE)) != MDL_NONE) {
			b->m->diag.unmatched_async_instants++;
			VEC_AT(&b->slices, struct bslice, s)->async_op = 1;
			VEC_AT(&b->slices, struct bslice, s)->dur = 0;
		}
		return;
	}
	if (e->kind == MDL_EV_ASYNC_INSTANT) {
		uint32_t parent = k->val;

		if ((s = slice_add(b, e, track, 0, parent)) != MDL_NONE) {
			VEC_AT(&b->slices, struct bslice, s)->dur = 0;
			VEC_AT(&b->slices, struct bslice, parent)->children = 1;
		}
		return;
	}
	op = VEC_AT(&b->slices, struct bslice, k->val);
	op->dur = e->ts - op->ts;
	op->args_b = e->args;
	op->nargs_b = e->nargs;
	k->val = MDL_NONE;
}

/* Flow events bind to the innermost slice open on their thread; consecutive
 * events of one (category, name, id) give arrows. */
static void on_flow(struct build *b, const struct mdl_ev *e)
{
	struct vec *st = thread_stack(b, b->row_of[e->thread], e->ts);
	uint32_t s = stack_top(st);
	struct kmap_entry *k;
	struct bflow *f;

	if (s == MDL_NONE) {
		b->m->diag.flow_no_enclosing_slice++;
		return;
	}
	if ((k = kmap_get(&b->flow_last, e->cat, e->name, e->extra, 0)) == NULL) {
		b->oom = 1;
		return;
	}
	if (e->kind != MDL_EV_FLOW_BEGIN && k->val == MDL_NONE)
		b->m->diag.unmatched_flow_steps++;
	if (e->kind != MDL_EV_FLOW_BEGIN && k->val != MDL_NONE) {
		if ((f = vec_push(&b->flows)) == NULL) {
			b->oom = 1;
			return;
		}
		f->flow_id = e->extra;
		f->cat = e->cat;
		f->name = e->name;
		f->from = k->val;
		f->to = s;
	}
	k->val = e->kind == MDL_EV_FLOW_END ? MDL_NONE : s;
}

static int arg_numeric(const struct mdl_arg *a, struct bpoint *p)
{
	switch (a->type) {
	case MDL_ARG_I32:
	case MDL_ARG_I64:
		p->is_int = 1;
		p->v.i = a->v.i;
		return 1;
	case MDL_ARG_U32:
	case MDL_ARG_U64:
		p->is_int = a->v.u <= INT64_MAX;
		if (p->is_int)
			p->v.i = (int64_t)a->v.u;
		else
			p->v.d = (double)a->v.u;
		return 1;
	case MDL_ARG_DOUBLE:
		p->v.d = a->v.d;
		return 1;
	default:
		return 0;
	}
}

static void track_value(struct btrack *t, double v)
{
	if (!t->has_values || v < t->min)
		t->min = v;
	if (!t->has_values || v > t->max)
		t->max = v;
	t->has_values = 1;
}

/* Each numeric argument of a counter event is a point of the series
 * (pid, event name, argument name, counter id). */
static void on_counter(struct build *b, const struct mdl_ev *e)
{
	struct btrack proto = { 0 };
	struct bpoint pt = { 0 }, *p;
	unsigned i;

	proto.kind = TK_COUNTER;
	proto.pid = VEC_AT(&b->rows, struct thread_row, b->row_of[e->thread])->pid;
	proto.name = e->name;
	proto.cat = e->cat;
	proto.counter_id = e->extra;
	for (i = 0; i < e->nargs; i++) {
		const struct mdl_arg *a = VEC_AT(&b->m->args, struct mdl_arg, e->args + i);

		memset(&pt, 0, sizeof(pt));
		if (!arg_numeric(a, &pt)) {
			b->m->diag.non_numeric_counter_args++;
			continue;
		}
		proto.series = a->key;
		pt.ts = e->ts;
		pt.track = track_get(b, &proto, e->name, a->key, e->extra);
		if (b->oom || (p = vec_push(&b->points)) == NULL) {
			b->oom = 1;
			return;
		}
		*p = pt;
		track_value(VEC_AT(&b->tracks, struct btrack, pt.track), pt.is_int ? (double)pt.v.i : pt.v.d);
	}
}

/*
 * Gives the pages of events already matched back to the system: slices grow
 * while events are consumed, and without this the peak would hold both.
 * The rest of the array is freed after matching.
 */
static void release_events(struct mdl_ev *ev, size_t upto, size_t *released)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)(ev + *released) + page - 1) & ~(page - 1);
	uintptr_t hi = (uintptr_t)(ev + upto) & ~(page - 1);

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
	*released = upto;
}

static void build_events(struct build *b)
{
	struct mdl_ev *ev = b->m->events.data;
	size_t i, n = b->m->events.len, released = 0;

	for (i = 0; i < n && !b->oom; i++) {
		if ((i & 0xffff) == 0xffff)
			release_events(ev, i, &released);
		build_time(b, ev[i].ts);
		switch (ev[i].kind) {
		case MDL_EV_INSTANT:
		case MDL_EV_BEGIN:
		case MDL_EV_COMPLETE:
			on_duration(b, &ev[i]);
			break;
		case MDL_EV_END:
			on_end(b, &ev[i]);
			break;
		case MDL_EV_COUNTER:
			on_counter(b, &ev[i]);
			break;
		case MDL_EV_ASYNC_BEGIN:
		case MDL_EV_ASYNC_INSTANT:
		case MDL_EV_ASYNC_END:
			on_async(b, &ev[i]);
			break;
		default:
			on_flow(b, &ev[i]);
		}
	}
}

/* Async operations overlap freely; each gets the first lane (depth) free at
 * its start, two lanes when it has instants inside (drawn one deeper), so
 * that slices of one (track, depth) never overlap. */
static int build_async_lanes(struct build *b)
{
	struct vec *lanes = calloc(b->tracks.len ? b->tracks.len : 1, sizeof(struct vec));
	struct bslice *s = b->slices.data;
	size_t i, t, n = b->slices.len;

	if (lanes == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		struct vec *l = &lanes[s[i].track];
		int64_t end = s[i].dur < 0 ? INT64_MAX : s[i].ts + s[i].dur;
		uint32_t h = s[i].children ? 2 : 1, d = 0, k;

		if (!s[i].async_op)
			continue;
		if (l->size == 0)
			vec_init(l, sizeof(int64_t));
		for (;; d++) {
			for (k = 0; k < h && d + k < l->len && *VEC_AT(l, int64_t, d + k) <= s[i].ts; k++)
				;
			if (k == h || d + k >= l->len)
				break;
		}
		while (l->len < d + h)
			if (vec_push(l) == NULL)
				goto out_free;
		for (k = 0; k < h; k++)
			*VEC_AT(l, int64_t, d + k) = end;
		s[i].depth = d;
	}
	for (i = 0; i < n; i++)
		if (s[i].parent != MDL_NONE && s[s[i].parent].async_op)
			s[i].depth = s[s[i].parent].depth + 1;
out_free:
	for (t = 0; t < b->tracks.len; t++)
		vec_fini(&lanes[t]);
	free(lanes);
	return i < n ? -1 : 0;
}

static void build_unterminated(struct build *b)
{
	struct bslice *s = b->slices.data;
	size_t i;

	for (i = 0; i < b->slices.len; i++)
		if (s[i].dur < 0)
			b->m->diag.unterminated_slices++;
}

/* ---- writing ---------------------------------------------------------- */

struct depth_range {
	uint32_t track, depth;
	uint64_t first, count; /* position of the first slice, number of slices */
	int64_t max_dur;
	int overlap;           /* some slice starts before the one before it ends */
	uint64_t lod_levels;   /* levels of detail stored (lod.h) */
};

static int td_cmp(const void *a, const void *b)
{
	const struct depth_range *x = a, *y = b;

	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Gives each slice's (track, depth) a dense key, in first-seen order; fills
 * keys (track, depth pairs by key). A flat table serves when tracks x depths
 * is small, a hash map otherwise. Returns the number of keys, or -1. */
static long depth_keys(struct build *b, uint32_t *key, struct vec *keys)
{
	struct bslice *s = b->slices.data;
	size_t i, n = b->slices.len, maxd = 0, cells;
	uint32_t *flat = NULL;
	struct kmap map;

	for (i = 0; i < n; i++)
		maxd = s[i].depth > maxd ? s[i].depth : maxd;
	cells = b->tracks.len * (maxd + 1);
	kmap_init(&map);
	if (cells <= (1u << 22) && (flat = malloc((cells ? cells : 1) * sizeof(uint32_t))) != NULL)
		memset(flat, 0xff, (cells ? cells : 1) * sizeof(uint32_t));
	for (i = 0; i < n; i++) {
		uint32_t *slot;
		struct kmap_entry *e = NULL;

		if (flat) {
			slot = &flat[s[i].track * (maxd + 1) + s[i].depth];
		} else if ((e = kmap_get(&map, s[i].track, s[i].depth, 0, 0)) != NULL) {
			slot = &e->val;
		} else {
			break;
		}
		if (*slot == MDL_NONE) {
			uint32_t *td = vec_push(keys);

			if (td == NULL)
				break;
			td[0] = s[i].track;
			td[1] = s[i].depth;
			*slot = (uint32_t)keys->len - 1;
		}
		key[i] = *slot;
	}
	free(flat);
	kmap_fini(&map);
	return i < n ? -1 : (long)keys->len;
}

/*
 * Orders slices by (track, depth) with a stable counting sort: slices were
 * created in time order, so each (track, depth) group comes out sorted by
 * time. Fills b->slice_id and returns the ranges (count in *nranges) and the
 * permutation (*perm: position -> slice index).
 */
static struct depth_range *order_slices(struct build *b, uint32_t **perm, size_t *nranges)
{
	size_t i, n = b->slices.len;
	struct depth_range *r = NULL;
	uint32_t *key = NULL, *pos = NULL;
	struct vec keys;
	long nk;

	vec_init(&keys, 2 * sizeof(uint32_t));
	b->slice_id = malloc((n ? n : 1) * sizeof(uint32_t));
	key = malloc((n ? n : 1) * sizeof(uint32_t));
	*perm = malloc((n ? n : 1) * sizeof(uint32_t));
	if (b->slice_id == NULL || key == NULL || *perm == NULL || (nk = depth_keys(b, key, &keys)) < 0)
		goto out_fail;
	*nranges = (size_t)nk;
	if ((r = calloc(*nranges ? *nranges : 1, sizeof(*r))) == NULL ||
	    (pos = calloc(*nranges ? *nranges : 1, sizeof(*pos))) == NULL)
		goto out_fail;
	for (i = 0; i < *nranges; i++) {
		r[i].track = VEC_AT(&keys, uint32_t, 2 * i)[0];
		r[i].depth = VEC_AT(&keys, uint32_t, 2 * i)[1];
	}
	for (i = 0; i < n; i++)
		r[key[i]].count++;
	/* sort the ranges, remembering where each key went */
	for (i = 0; i < *nranges; i++)
		r[i].first = i;
	qsort(r, *nranges, sizeof(*r), td_cmp);
	for (i = 0; i < *nranges; i++)
		pos[r[i].first] = (uint32_t)i;
	for (i = 0; i < n; i++)
		key[i] = pos[key[i]];
	for (i = 0; i < *nranges; i++)
		r[i].first = i ? r[i - 1].first + r[i - 1].count : 0;
	memset(pos, 0, *nranges * sizeof(*pos));
	for (i = 0; i < n; i++) {
		uint64_t p = r[key[i]].first + pos[key[i]]++;

		(*perm)[p] = (uint32_t)i;
		b->slice_id[i] = (uint32_t)p + 1;
	}
	free(key);
	free(pos);
	vec_fini(&keys);
	return r;
out_fail:
	free(r);
	free(key);
	free(pos);
	free(*perm);
	*perm = NULL;
	vec_fini(&keys);
	return NULL;
}

static void write_arg(struct build *b, struct bins *a, uint64_t set, uint32_t seq, const struct mdl_arg *x)
{
	++b->res->counts.args;
	bins_null(a); /* rows go in id order from 1: SQLite's next rowid is the id */
	bins_i64(a, (int64_t)set);
	bins_i64(a, seq);
	bins_i64(a, x->key);
	bins_i64(a, x->type);
	if (x->type == MDL_ARG_NULL || x->type == MDL_ARG_DOUBLE || x->type == MDL_ARG_STRING ||
	    x->type == MDL_ARG_BLOB)
		bins_null(a);
	else
		bins_i64(a, x->v.i);
	if (x->type == MDL_ARG_DOUBLE)
		bins_dbl(a, x->v.d);
	else
		bins_null(a);
	if (x->type == MDL_ARG_STRING)
		bins_i64(a, x->v.str);
	else
		bins_null(a);
	if (x->type == MDL_ARG_BLOB)
		bins_blob(a, (const char *)b->m->bytes.data + x->v.u, (int)x->len);
	else
		bins_null(a);
	bins_row(a);
}

/* Writes args[first .. first + n) into arg set `set` from seq on; returns the next seq. */
static uint32_t write_args(struct build *b, struct bins *a, uint64_t set, uint32_t seq, uint32_t first, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		write_arg(b, a, set, seq++, VEC_AT(&b->m->args, struct mdl_arg, first + i));
	return seq;
}

struct ingest_opts_view {
	ingest_progress_fn fn;
	void *ctx;
	uint64_t total; /* rows to write, for the progress bar */
	uint64_t base;  /* rows written before the current table */
};

/* Reports rows written; a cancel request sticks in b->cancel. */
static int progress(struct build *b, struct ingest_opts_view *v, uint64_t done)
{
	if (v->fn && !b->cancel && v->fn(v->ctx, INGEST_PHASE_WRITE, v->base + done, v->total, 0) != 0)
		b->cancel = 1;
	return b->cancel;
}

static void write_slice(struct build *b, struct bins *sb, struct bins *ab, uint32_t i)
{
	struct bslice *s = VEC_AT(&b->slices, struct bslice, i);
	uint64_t set = 0;
	uint32_t seq = 0;

	/* the id: slices go in id order from 1, so SQLite's next rowid is it,
	 * and taking the next rowid is cheaper than checking a given one */
	bins_null(sb);
	bins_i64(sb, s->track + 1);
	bins_i64(sb, s->ts);
	bins_i64(sb, s->dur);
	bins_i64(sb, s->depth);
	bins_i64(sb, s->name);
	bins_i64(sb, s->cat);
	if (s->parent == MDL_NONE)
		bins_null(sb);
	else
		bins_i64(sb, b->slice_id[s->parent]);
	if (s->nargs_a == 0 && s->nargs_b == 0)
		bins_null(sb);
	else
		bins_i64(sb, (int64_t)(set = b->res->counts.args + 1));
	bins_row(sb);
	seq = write_args(b, ab, set, seq, s->args_a, s->nargs_a);
	write_args(b, ab, set, seq, s->args_b, s->nargs_b);
}

static int write_depths(struct build *b, const struct depth_range *r, size_t n)
{
	struct bins db;
	size_t i;

	if (bins_init(&db, b->s, "track_depths", 8) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		struct btrack *t = VEC_AT(&b->tracks, struct btrack, r[i].track);

		if (r[i].depth > t->max_depth)
			t->max_depth = r[i].depth;
		bins_i64(&db, r[i].track + 1);
		bins_i64(&db, r[i].depth);
		bins_i64(&db, (int64_t)r[i].first + 1);
		bins_i64(&db, (int64_t)(r[i].first + r[i].count));
		bins_i64(&db, r[i].max_dur);
		bins_i64(&db, (int64_t)r[i].count);
		bins_i64(&db, !r[i].overlap);
		bins_i64(&db, (int64_t)r[i].lod_levels);
		bins_row(&db);
	}
	return bins_fini(&db);
}

/* The slices of one (track, depth), their summaries (level of detail) and
 * the facts readers need about the run: longest slice, overlap. */
static int write_range(struct build *b, struct bins *bb, struct lod_writer *lw, struct depth_range *r,
		       const uint32_t *perm, struct ingest_opts_view *pv)
{
	struct lod_item *it = calloc(r->count ? r->count : 1, sizeof(*it));
	struct lod_key key = { r->track + 1, r->depth, r->first + 1 };
	int64_t prev_end = INT64_MIN;
	uint64_t i;
	int rc;

	if (it == NULL)
		return -1;
	for (i = 0; i < r->count; i++) {
		struct bslice *s = VEC_AT(&b->slices, struct bslice, perm[r->first + i]);
		int64_t end;

		/* slices are read in (track, depth) order but stored in time
		 * order: fetch ahead to hide the cache misses */
		if (i + 16 < r->count)
			__builtin_prefetch(VEC_AT(&b->slices, struct bslice, perm[r->first + i + 16]));
		end = s->dur < 0 ? (b->end_ns > s->ts ? b->end_ns : s->ts) : s->ts + s->dur;
		if (end - s->ts > r->max_dur)
			r->max_dur = end - s->ts;
		if (s->ts < prev_end)
			r->overlap = 1;
		prev_end = s->dur < 0 ? INT64_MAX : end;
		it[i].ts = s->ts;
		it[i].end = end;
		it[i].open = s->dur < 0;
		it[i].name = s->name;
		it[i].cat = s->cat;
		write_slice(b, &bb[0], &bb[1], perm[r->first + i]);
		if (((r->first + i) & 0xffff) == 0)
			progress(b, pv, r->first + i);
	}
	rc = lod_build(lw, &key, it, r->count, 0, &r->lod_levels);
	free(it);
	return rc;
}

static int write_slices(struct build *b, struct ingest_opts_view *pv)
{
	struct depth_range *r;
	struct bins *bb = calloc(2, sizeof(struct bins));
	struct lod_writer *lw = calloc(1, sizeof(*lw));
	uint32_t *perm = NULL;
	size_t nr = 0, k;
	int rc = -1;

	if (bb == NULL || lw == NULL || (r = order_slices(b, &perm, &nr)) == NULL) {
		free(bb);
		free(lw);
		return -1;
	}
	if (bins_init(&bb[0], b->s, "slices", 9) != 0 || bins_init(&bb[1], b->s, "args", 9) != 0 ||
	    lod_writer_init(lw, b->s) != 0)
		goto out_fini;
	rc = 0;
	for (k = 0; k < nr && rc == 0 && !b->cancel; k++)
		rc = write_range(b, bb, lw, &r[k], perm, pv);
out_fini:
	for (k = 0; k < 2; k++)
		if (bins_fini(&bb[k]) != 0)
			rc = -1;
	if (lod_writer_fini(lw) != 0)
		rc = -1;
	free(bb);
	free(lw);
	if (rc == 0)
		rc = write_depths(b, r, nr);
	pv->base += b->slices.len;
	b->res->counts.slices = b->slices.len;
	free(perm);
	free(r);
	return rc;
}

/*
 * A stable counting sort by key (0 .. nkeys - 1): returns the permutation
 * (position -> item) and fills first[key] with the position of the key's
 * first item (first has nkeys + 1 entries). NULL when out of memory.
 */
static uint32_t *counting_perm(const uint32_t *key, size_t n, size_t nkeys, uint64_t *first)
{
	uint32_t *perm = malloc((n ? n : 1) * sizeof(uint32_t));
	uint64_t *next = calloc(nkeys + 1, sizeof(uint64_t));
	size_t i;

	if (perm == NULL || next == NULL) {
		free(perm);
		free(next);
		return NULL;
	}
	memset(first, 0, (nkeys + 1) * sizeof(uint64_t));
	for (i = 0; i < n; i++)
		first[key[i] + 1]++;
	for (i = 0; i < nkeys; i++)
		first[i + 1] += first[i];
	memcpy(next, first, nkeys * sizeof(uint64_t));
	for (i = 0; i < n; i++)
		perm[next[key[i]]++] = (uint32_t)i;
	free(next);
	return perm;
}

static void write_point(struct bins *cb, uint64_t id, const struct bpoint *p)
{
	bins_null(cb); /* = id, as for slices */
	(void)id;
	bins_i64(cb, p->track + 1);
	bins_i64(cb, p->ts);
	if (p->is_int)
		bins_i64(cb, p->v.i);
	else
		bins_dbl(cb, p->v.d);
	bins_row(cb);
}

/* Row ranges and summaries (level of detail) of every counter track. */
static int counter_lods(struct build *b, const struct bpoint *p, const uint32_t *perm, const uint64_t *first)
{
	struct lod_item *it = NULL;
	struct lod_writer *lw = calloc(1, sizeof(*lw));
	size_t i, k, n;
	int rc = 0;

	if (lw == NULL || lod_writer_init(lw, b->s) != 0) {
		free(lw);
		return -1;
	}
	for (i = 0; i < b->tracks.len && rc == 0; i++) {
		struct btrack *t = VEC_AT(&b->tracks, struct btrack, i);
		struct lod_key key = { (int64_t)i + 1, 0, first[i] + 1 };

		if (t->kind != TK_COUNTER || (n = first[i + 1] - first[i]) == 0)
			continue;
		t->first_row = first[i] + 1;
		t->last_row = first[i + 1];
		free(it);
		if ((it = calloc(n, sizeof(*it))) == NULL) {
			rc = -1;
			break;
		}
		for (k = 0; k < n; k++) {
			const struct bpoint *x = &p[perm[first[i] + k]];

			it[k].ts = it[k].end = x->ts;
			it[k].is_int = x->is_int;
			it[k].ivalue = x->is_int ? x->v.i : 0;
			it[k].value = x->is_int ? (double)x->v.i : x->v.d;
		}
		rc = lod_build(lw, &key, it, n, 1, &t->lod_levels);
	}
	free(it);
	rc |= lod_writer_fini(lw);
	free(lw);
	return rc;
}

/* Counter points, grouped by track; points were made in time order and the
 * sort is stable, so each track's points stay in time (then file) order. */
static int write_counters(struct build *b, struct ingest_opts_view *pv)
{
	struct bpoint *p = b->points.data;
	size_t i, n = b->points.len, nt = b->tracks.len;
	uint32_t *key = malloc((n ? n : 1) * sizeof(uint32_t)), *perm = NULL;
	uint64_t *first = malloc((nt + 1) * sizeof(uint64_t));
	struct bins cb;
	int rc = -1;

	if (key == NULL || first == NULL)
		goto out_free;
	for (i = 0; i < n; i++)
		key[i] = p[i].track;
	if ((perm = counting_perm(key, n, nt, first)) == NULL || bins_init(&cb, b->s, "counters", 4) != 0)
		goto out_free;
	for (i = 0; i < n; i++) {
		write_point(&cb, i + 1, &p[perm[i]]);
		if ((i & 0xffff) == 0 && progress(b, pv, i) != 0)
			break;
	}
	rc = bins_fini(&cb);
	if (rc == 0)
		rc = counter_lods(b, p, perm, first);
	pv->base += n;
	b->res->counts.counters = n;
out_free:
	free(key);
	free(first);
	free(perm);
	return rc;
}

/* An arrow leaves where its from-slice ends and arrives where its to-slice
 * begins (the FXT text: a flow "begins where the enclosing duration event
 * ends" and "resumes where the enclosing duration event begins"); an
 * unterminated from-slice gives its start. */
static int write_flows(struct build *b)
{
	struct bflow *f = b->flows.data;
	struct bslice *s = b->slices.data;
	size_t i;
	struct bins fb;

	if (bins_init(&fb, b->s, "flows", 8) != 0)
		return -1;
	for (i = 0; i < b->flows.len; i++) {
		bins_i64(&fb, (int64_t)i + 1);
		bins_i64(&fb, (int64_t)f[i].flow_id);
		bins_i64(&fb, f[i].cat);
		bins_i64(&fb, f[i].name);
		bins_i64(&fb, b->slice_id[f[i].from]);
		bins_i64(&fb, b->slice_id[f[i].to]);
		bins_i64(&fb, s[f[i].from].dur < 0 ? s[f[i].from].ts : s[f[i].from].ts + s[f[i].from].dur);
		bins_i64(&fb, s[f[i].to].ts);
		bins_row(&fb);
	}
	b->res->counts.flows = b->flows.len;
	return bins_fini(&fb);
}

static const char *const thread_states[] = { "new", "running", "suspended", "blocked", "dying", "dead" };

struct cpu_run {
	int open;
	int64_t ts;
	uint32_t row; /* thread row */
	int32_t priority;
};

/* What write_sched carries from row to row of one cpu. */
struct sched_out {
	struct bins rows;
	struct vec runs;        /* struct lod_item of the cpu's runs so far */
	struct lod_writer *lw;  /* their level of detail */
};

static void sched_row(struct build *b, struct sched_out *o, uint16_t cpu, const struct cpu_run *r, int64_t end,
		      const char *state)
{
	struct thread_row *t = VEC_AT(&b->rows, struct thread_row, r->row);
	struct bins *sb = &o->rows;
	struct lod_item *it;

	bins_i64(sb, (int64_t)++b->res->counts.sched);
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
	if ((it = vec_push(&o->runs)) == NULL) {
		b->oom = 1;
		return;
	}
	it->ts = r->ts;
	it->end = end < 0 ? (b->end_ns > r->ts ? b->end_ns : r->ts) : end;
	it->open = end < 0;
	it->name = r->row + 1; /* the thread row stands in for a name */
}

/* Closes the run on the cpu (if any) at a switch and opens the next one. */
static void cpu_switch(struct build *b, struct sched_out *o, struct cpu_run *run, const struct mdl_sched *x)
{
	if (run->open)
		sched_row(b, o, x->cpu, run, x->ts, x->out_state < 6 ? thread_states[x->out_state] : "unknown");
	run->open = !x->in_idle;
	run->ts = x->ts;
	run->row = b->row_of[x->in_thread];
	run->priority = x->in_priority;
}

/* The cpu's track: its row range and the level of detail of its runs. */
static int cpu_track(struct build *b, struct sched_out *o, uint16_t cpu, uint64_t first, uint64_t last)
{
	struct btrack proto = { 0 };
	struct lod_key key;
	uint32_t t;
	int rc = 0;

	if (last >= first) {
		proto.kind = TK_CPU;
		proto.cpu = cpu;
		t = track_get(b, &proto, cpu, 0, 0);
		if (!b->oom) {
			struct btrack *tr = VEC_AT(&b->tracks, struct btrack, t);

			tr->first_row = first;
			tr->last_row = last;
			key.track_id = (int64_t)t + 1;
			key.depth = 0;
			key.first_id = first;
			rc = lod_build(o->lw, &key, o->runs.data, o->runs.len, 0, &tr->lod_levels);
		}
	}
	o->runs.len = 0;
	return rc;
}

/* A context switch on cpu C at t starts the incoming thread's run; the next
 * switch on C ends it with that switch's outgoing state. */
static int write_sched(struct build *b)
{
	struct mdl_sched *x = b->m->sched.data;
	size_t i, n = b->m->sched.len;
	struct cpu_run run = { 0 };
	struct sched_out o;
	uint64_t first = 1;
	int rc = 0;

	if (n > 1) /* x is NULL when there are none */
		qsort(x, n, sizeof(*x), sched_cmp);
	memset(&o, 0, sizeof(o));
	vec_init(&o.runs, sizeof(struct lod_item));
	if ((o.lw = calloc(1, sizeof(*o.lw))) == NULL || lod_writer_init(o.lw, b->s) != 0 ||
	    bins_init(&o.rows, b->s, "sched", 9) != 0) {
		free(o.lw);
		vec_fini(&o.runs);
		return -1;
	}
	for (i = 0; i < n && rc == 0; i++) {
		if (i > 0 && x[i].cpu != x[i - 1].cpu) {
			if (run.open)
				sched_row(b, &o, x[i - 1].cpu, &run, -1, NULL);
			rc = cpu_track(b, &o, x[i - 1].cpu, first, b->res->counts.sched);
			first = b->res->counts.sched + 1;
			run.open = 0;
		}
		cpu_switch(b, &o, &run, &x[i]);
	}
	if (n > 0 && rc == 0) {
		if (run.open)
			sched_row(b, &o, x[n - 1].cpu, &run, -1, NULL);
		rc = cpu_track(b, &o, x[n - 1].cpu, first, b->res->counts.sched);
	}
	rc |= bins_fini(&o.rows);
	rc |= lod_writer_fini(o.lw);
	free(o.lw);
	vec_fini(&o.runs);
	return rc || b->oom ? -1 : 0;
}

static int write_logs(struct build *b)
{
	struct mdl_log *l = b->m->logs.data;
	size_t i, n = b->m->logs.len;
	struct bins lb;

	if (n > 1) /* l is NULL when there are none */
		qsort(l, n, sizeof(*l), log_cmp);
	if (bins_init(&lb, b->s, "logs", 6) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		struct thread_row *t = VEC_AT(&b->rows, struct thread_row, b->row_of[l[i].thread]);

		bins_i64(&lb, (int64_t)i + 1);
		bins_i64(&lb, l[i].ts);
		bins_i64(&lb, b->row_of[l[i].thread] + 1);
		bins_i64(&lb, (int64_t)t->pid);
		bins_i64(&lb, (int64_t)t->tid);
		bins_i64(&lb, l[i].msg);
		bins_row(&lb);
	}
	b->res->counts.logs = n;
	return bins_fini(&lb);
}

/* Writes an arg set for n args from first on; returns its id or 0 (none). */
static uint64_t write_arg_set(struct build *b, struct bins *ab, uint32_t first, unsigned n)
{
	uint64_t set;

	if (n == 0)
		return 0;
	set = b->res->counts.args + 1;
	write_args(b, ab, set, 0, first, n);
	return set;
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

static int write_kobjs(struct build *b, struct bins *ab)
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
		bins_opt(&kb, write_arg_set(b, ab, o->args, o->nargs));
		bins_row(&kb);
	}
	b->res->counts.objects += b->kobj_map.ents.len;
	return bins_fini(&kb);
}

static int write_uobjs(struct build *b, struct bins *ab)
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
		bins_opt(&ub, write_arg_set(b, ab, o[i].args, o[i].nargs));
		bins_row(&ub);
	}
	b->res->counts.objects += b->m->uobjs.len;
	return bins_fini(&ub);
}

static const char *const blob_kinds[] = { "blob", "large_blob", "large_blob_data" };

static int write_blobs(struct build *b, struct bins *ab)
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
		bins_opt(&bb, write_arg_set(b, ab, x[i].args, x[i].nargs));
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

static int write_objects(struct build *b)
{
	struct bins ab;
	int rc;

	if (bins_init(&ab, b->s, "args", 9) != 0)
		return -1;
	rc = write_kobjs(b, &ab);
	rc |= write_uobjs(b, &ab);
	rc |= write_blobs(b, &ab);
	rc |= bins_fini(&ab);
	return rc | write_profiler(b);
}

static int write_strings(struct build *b)
{
	struct bins sb;
	size_t i;

	if (bins_init(&sb, b->s, "strings", 2) != 0)
		return -1;
	for (i = 0; i < b->m->soff.len; i++) {
		bins_i64(&sb, (int64_t)i);
		bins_text(&sb, model_str(b->m, (uint32_t)i), -1);
		bins_row(&sb);
	}
	return bins_fini(&sb);
}

static const char *kobj_name(const struct build *b, uint64_t koid, uint32_t type)
{
	const struct mdl_kobj *o = kobj_find(b, koid);

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

static void write_track(struct bins *tb, uint64_t id, const struct btrack *t)
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
	bins_opt(tb, t->first_row);
	bins_opt(tb, t->last_row);
	if (t->has_values) {
		bins_dbl(tb, t->min);
		bins_dbl(tb, t->max);
	} else {
		bins_null(tb);
		bins_null(tb);
	}
	bins_opt(tb, t->kind == TK_COUNTER || t->kind == TK_CPU ? t->lod_levels : 0);
	bins_row(tb);
}

static int write_tracks(struct build *b)
{
	struct bins tb;
	size_t i;

	if (bins_init(&tb, b->s, "tracks", 15) != 0)
		return -1;
	for (i = 0; i < b->tracks.len; i++)
		write_track(&tb, i + 1, VEC_AT(&b->tracks, struct btrack, i));
	b->res->counts.tracks = b->tracks.len;
	return bins_fini(&tb);
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

	rc |= store_meta(b->s, "format", b->m->format, 0);
	rc |= store_meta(b->s, "start_ns", NULL, r->start_ns);
	rc |= store_meta(b->s, "end_ns", NULL, r->end_ns);
	rc |= store_meta(b->s, "events", NULL, (int64_t)r->counts.events);
	rc |= store_meta(b->s, "input_bytes", NULL, (int64_t)r->bytes);
	return rc;
}

static void build_fini(struct build *b)
{
	size_t i;

	for (i = 0; i < b->rows.len; i++)
		vec_fini(&VEC_AT(&b->rows, struct thread_row, i)->stack);
	vec_fini(&b->rows);
	kmap_fini(&b->row_map);
	kmap_fini(&b->kobj_map);
	vec_fini(&b->tracks);
	kmap_fini(&b->track_map);
	vec_fini(&b->slices);
	vec_fini(&b->flows);
	vec_fini(&b->points);
	kmap_fini(&b->async_open);
	kmap_fini(&b->flow_last);
	free(b->row_of);
	free(b->slice_id);
}

static void build_init(struct build *b, struct model *m, struct store *s, struct ingest_result *res)
{
	memset(b, 0, sizeof(*b));
	b->m = m;
	b->s = s;
	b->res = res;
	vec_init(&b->rows, sizeof(struct thread_row));
	kmap_init(&b->row_map);
	kmap_init(&b->kobj_map);
	vec_init(&b->tracks, sizeof(struct btrack));
	kmap_init(&b->track_map);
	vec_init(&b->slices, sizeof(struct bslice));
	vec_init(&b->flows, sizeof(struct bflow));
	vec_init(&b->points, sizeof(struct bpoint));
	kmap_init(&b->async_open);
	kmap_init(&b->flow_last);
}

/* The trace's time range covers scheduling and log records too; it is known
 * before slices are written, since unterminated ones count up to its end. */
static void build_time_records(struct build *b)
{
	size_t i;

	for (i = 0; i < b->m->sched.len; i++)
		build_time(b, VEC_AT(&b->m->sched, struct mdl_sched, i)->ts);
	for (i = 0; i < b->m->logs.len; i++)
		build_time(b, VEC_AT(&b->m->logs, struct mdl_log, i)->ts);
}

/* Everything in memory: resolve, sort and match. */
static int build_memory(struct build *b)
{
	if (build_kobjs(b) != 0 || build_threads(b) != 0)
		return -1;
	sort_events(b->m->events.data, b->m->events.len);
	if (order_complete_ties(b) != 0)
		return -1;
	build_events(b);
	build_time_records(b);
	if (b->oom || build_async_lanes(b) != 0)
		return -1;
	build_unterminated(b);
	return 0;
}

static int build_write(struct build *b, struct ingest_opts_view *pv)
{
	int rc = write_slices(b, pv);

	rc = rc ? rc : write_counters(b, pv);
	rc = rc ? rc : write_flows(b);
	rc = rc ? rc : write_sched(b);
	rc = rc ? rc : write_logs(b);
	rc = rc ? rc : write_objects(b);
	rc = rc ? rc : write_threads(b);
	rc = rc ? rc : write_tracks(b);
	rc = rc ? rc : write_providers(b);
	rc = rc ? rc : write_strings(b);
	b->res->start_ns = b->start_ns;
	b->res->end_ns = b->end_ns;
	rc = rc ? rc : write_diagnostics(b);
	rc = rc ? rc : write_meta(b);
	return rc || b->oom ? -1 : 0;
}

int model_build(struct model *m, struct store *s, struct ingest_result *res, ingest_progress_fn fn, void *ctx)
{
	struct ingest_opts_view pv = { fn, ctx, 0, 0 };
	struct build b;
	int rc = INGEST_OK;

	build_init(&b, m, s, res);
	res->counts.events = m->events.len;
	if (fn && fn(ctx, INGEST_PHASE_BUILD, 0, m->events.len, m->events.len) != 0)
		rc = INGEST_ECANCEL;
	else if (build_memory(&b) != 0)
		rc = INGEST_ENOMEM;
	if (rc == INGEST_OK) {
		pv.total = b.slices.len + b.points.len;
		if (build_write(&b, &pv) != 0)
			rc = b.oom ? INGEST_ENOMEM : INGEST_EDB;
		else if (b.cancel)
			rc = INGEST_ECANCEL;
	}
	build_fini(&b);
	return rc;
}
