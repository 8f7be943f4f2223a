/*
 * The build stage's matching (build.h): takes events in (ns, file
 * position) order from the sorter (sorter.h), with a thread's complete
 * events of one timestamp ordered so that the longest encloses the rest,
 * and walks them once to make slices
 * (durations, async operations and their lanes), flows and counter points
 * (docs/API.md, Meaning 3-8). The walk resumes: its state (struct matcher)
 * lives in the build between build_match_more calls, so that a stream
 * matches the events the sorter's watermark releases as its bytes arrive
 * (sorter.h), and build_match_end finishes what only the end can.
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "build.h"
#include "commit.h"
#include "sorter.h"

/*
 * An async operation or instant, kept whole until its lane (depth) is
 * known: operations get lanes in the order they start, and an operation's
 * lanes depend on its own end and instants, so it waits until it ends and
 * every operation started before it has its lane. An instant inside an
 * operation goes to the store with it.
 */
struct bslice {
	int64_t ts;
	int64_t dur;      /* -1 while open */
	uint64_t made;    /* creation order among all slices */
	uint32_t track;   /* index into tracks */
	uint32_t depth;
	uint32_t name, cat;
	uint32_t parent;  /* the operation of an instant inside one (an async
			   * index, see struct matcher), or MDL_NONE */
	uint32_t next;    /* the operation's next instant, or MDL_NONE */
	uint32_t last;    /* an operation's last instant so far, or MDL_NONE */
	uint32_t args_a;  /* first argument of the begin (index into m->args) */
	uint32_t set;     /* arg set id, written when the slice closes (an end's
			   * arguments join the begin's); 0 = none, or not yet */
	struct ss_ref ref;/* its place in the slice store, once stored */
	uint8_t nargs_a;
	uint8_t async_op; /* an async operation (its depth is a lane) */
	uint8_t children; /* has async instants inside */
};

/* A slice on a thread's stack: open, or a complete event (finished in the
 * slice store already) that still encloses what starts before its end. */
struct open_slice {
	struct ss_ref ref;
	struct ss_ref parent;
	int64_t ts;
	int64_t end;      /* complete events */
	uint64_t made;    /* creation order among all slices */
	uint32_t depth;
	uint32_t name, cat;
	uint32_t args_a;  /* the begin's arguments (index into m->args) */
	uint8_t nargs_a;
	uint8_t complete; /* a complete event: closes by itself at end */
	uint8_t end_sub;  /* end's sub-nanosecond remainder (model.h) */
	uint8_t anchored; /* a flow's anchor named it (commit_flows.h) */
};

/*
 * Matching's own state, for as long as it runs; what it makes goes to the
 * build (struct build: the slice store, flows, counter points, tracks, the
 * time range) and arg sets to the arguments' writer.
 */
struct matcher {
	struct build *b;
	struct vec stacks;     /* struct vec of struct open_slice per thread row, innermost last */
	struct vec async;      /* struct bslice: async slices not yet stored, in
				* creation order; async index i is at i - async_base */
	uint32_t async_base;
	uint32_t async_head;   /* the next operation to store, an async index */
	struct vec lanes;      /* struct vec of int64_t per track: each lane's end */
	uint64_t made;         /* slices made so far */
	struct vec anchors;    /* struct ss_ref: flow_last's slices */
	struct vec spare;      /* uint32_t: anchors of ended flows, to reuse,
				* so that anchors follows the flows open at
				* once rather than every flow */
	struct kmap async_open;/* (pid, cat | name << 32, id) -> index into async */
	struct kmap flow_last; /* (cat, name, id) -> anchor of the last bound slice */
	size_t async_closed;   /* entries of async_open, flows_ended of flow_last,
				* closed since they were last pruned */
	size_t flows_ended;
	int have_time;         /* b->start_ns, b->end_ns are set */
	uint32_t thread;       /* by_thread (model.h): the model thread being
				* matched, MDL_NONE before the first */
	uint64_t matched;      /* by_thread: events matched, for progress */
	uint64_t since_commit; /* events matched since the last commit (commit.h) */
};

/* 0, or -1 when out of memory (then matcher_fini frees what was made). */
static int matcher_init(struct matcher *mt, struct build *b)
{
	size_t i;

	memset(mt, 0, sizeof(*mt));
	mt->b = b;
	mt->thread = MDL_NONE;
	if (b->m->by_thread && b->m->ts_timed) { /* writing begins before matching ends */
		b->start_ns = b->m->ts_first;
		b->end_ns = b->m->ts_last;
		mt->have_time = 1;
	}
	vec_init(&mt->stacks, sizeof(struct vec));
	vec_init(&mt->async, sizeof(struct bslice));
	vec_init(&mt->lanes, sizeof(struct vec));
	vec_init(&mt->anchors, sizeof(struct ss_ref));
	vec_init(&mt->spare, sizeof(uint32_t));
	kmap_init(&mt->async_open);
	kmap_init(&mt->flow_last);
	for (i = 0; i < b->rows.len; i++) { /* every thread row is made before matching */
		struct vec *st = vec_push(&mt->stacks);

		if (st == NULL)
			return -1;
		vec_init(st, sizeof(struct open_slice));
	}
	return 0;
}

static void matcher_fini(struct matcher *mt)
{
	size_t i;

	for (i = 0; i < mt->stacks.len; i++)
		vec_fini(VEC_AT(&mt->stacks, struct vec, i));
	vec_fini(&mt->stacks);
	vec_fini(&mt->async);
	for (i = 0; i < mt->lanes.len; i++)
		vec_fini(VEC_AT(&mt->lanes, struct vec, i));
	vec_fini(&mt->lanes);
	vec_fini(&mt->anchors);
	vec_fini(&mt->spare);
	kmap_fini(&mt->async_open);
	kmap_fini(&mt->flow_last);
}

/* Writes an arg set through the build's writer (args.h). */
static uint32_t arg_set(struct matcher *mt, uint32_t first1, unsigned n1, uint32_t first2, unsigned n2)
{
	uint32_t set = argw_set(&mt->b->args, first1, n1, first2, n2);

	if (mt->b->args.overflow)
		mt->b->oom = 1;
	return set;
}

/* A complete event in a run of equal timestamps, and the place it held. */
struct complete_tie {
	struct mdl_ev ev;
	uint32_t row; /* thread row: ties are broken per thread */
	size_t pos;   /* index in the batch of sorted events */
};


static void note_time(struct matcher *mt, int64_t ts)
{
	struct build *b = mt->b;

	if (!mt->have_time) {
		b->start_ns = b->end_ns = ts;
		mt->have_time = 1;
	}
	if (ts < b->start_ns)
		b->start_ns = ts;
	if (ts > b->end_ns)
		b->end_ns = ts;
}

/* ---- ties ------------------------------------------------------------- */

/* Calls appended before their ends were known (model.h, ends) become
 * complete events, or begins when they never returned. */
static void resolve_calls(const struct build *b, struct mdl_ev *ev, size_t n)
{
	const int64_t *ends = b->m->ends.data;
	size_t i;

	for (i = 0; i < n; i++) {
		if (ev[i].kind != MDL_EV_CALL)
			continue;
		if (ev[i].extra >= b->m->ends.len || ends[ev[i].extra] == INT64_MIN) {
			ev[i].kind = MDL_EV_BEGIN;
			ev[i].extra = 0;
		} else {
			ev[i].kind = MDL_EV_COMPLETE;
			ev[i].extra = (uint64_t)ends[ev[i].extra];
		}
	}
}

/* A thread's complete events by end, latest first, then file order. */
static int complete_tie_cmp(const void *a, const void *b)
{
	const struct complete_tie *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->ev.extra != y->ev.extra)
		return (int64_t)x->ev.extra > (int64_t)y->ev.extra ? -1 : 1;
	if (x->ev.end_sub != y->ev.end_sub)
		return x->ev.end_sub > y->ev.end_sub ? -1 : 1;
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
static int order_complete_ties(struct build *b, struct mdl_ev *ev, size_t n)
{
	struct complete_tie *scratch = NULL, *grown;
	size_t i, j, c, cap = 0;

	for (i = 0; i < n; i = j) {
		for (j = i, c = 0; j < n && ev[j].ts == ev[i].ts && ev[j].sub == ev[i].sub; j++)
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

/* ---- slices ----------------------------------------------------------- */

/* Drops the complete events that have ended by e's time from the top of
 * its thread's stack: [ts, end), ties in ns broken by the sub-nanosecond
 * remainders (model.h, sub). */
static struct vec *thread_stack(struct matcher *mt, uint32_t row, const struct mdl_ev *e)
{
	struct vec *st = VEC_AT(&mt->stacks, struct vec, row);

	while (st->len > 0) {
		struct open_slice *o = VEC_AT(st, struct open_slice, st->len - 1);

		if (!o->complete || o->end > e->ts || (o->end == e->ts && o->end_sub > e->sub))
			break;
		st->len--;
	}
	return st;
}

static struct open_slice *stack_top(const struct vec *st)
{
	return st->len ? VEC_AT(st, struct open_slice, st->len - 1) : NULL;
}

/* Hands a finished thread slice to the store. */
static void slice_finish(struct matcher *mt, const struct open_slice *o, int64_t dur, uint32_t set)
{
	struct build *b = mt->b;
	struct ss_slice s = { o->ts, dur, o->name, o->cat, set, o->parent, o->anchored };

	if (ss_finish(&b->ss, o->ref, &s) != 0)
		b->oom = 1;
}

static void on_duration(struct matcher *mt, const struct mdl_ev *e)
{
	struct build *b = mt->b;
	uint32_t row = b->row_of[e->thread];
	struct vec *st = thread_stack(mt, row, e);
	uint32_t track = build_thread_track(b, row);
	const struct open_slice *top = stack_top(st);
	struct open_slice o = { 0 }, *pushed;
	uint32_t set = 0;

	if (e->kind == MDL_EV_COMPLETE && (int64_t)e->extra < e->ts) {
		b->m->diag.negative_durations++;
		return;
	}
	/* one below the enclosing slice: an end may have closed a slice
	 * under a complete event still open, so depths can skip a level */
	o.depth = top == NULL ? 0 : top->depth + 1;
	o.parent = top == NULL ? (struct ss_ref){ MDL_NONE, 0 } : top->ref;
	o.ref = ss_new(&b->ss, track, o.depth);
	if (o.ref.group == MDL_NONE) {
		b->oom = 1;
		return;
	}
	o.made = mt->made++;
	o.ts = e->ts;
	o.name = e->name;
	o.cat = e->cat;
	o.args_a = e->args;
	o.nargs_a = e->nargs;
	if (e->kind != MDL_EV_BEGIN) /* nothing will join its arguments */
		set = arg_set(mt, e->args, e->nargs, 0, 0);
	if (e->kind == MDL_EV_INSTANT) {
		slice_finish(mt, &o, 0, set);
		return;
	}
	if (e->kind == MDL_EV_COMPLETE) {
		o.complete = 1;
		o.end = (int64_t)e->extra;
		o.end_sub = e->end_sub;
		slice_finish(mt, &o, o.end - o.ts, set);
		note_time(mt, o.end);
	}
	if ((pushed = vec_push(st)) == NULL) {
		b->oom = 1;
		return;
	}
	*pushed = o;
}

/* An end closes the innermost open slice of its thread, whatever its name. */
static void on_end(struct matcher *mt, const struct mdl_ev *e)
{
	struct build *b = mt->b;
	struct vec *st = thread_stack(mt, b->row_of[e->thread], e);
	struct open_slice *o = st->data;
	size_t i = st->len;

	while (i > 0 && o[i - 1].complete)
		i--;
	if (i == 0) {
		b->m->diag.unmatched_ends++;
		return;
	}
	slice_finish(mt, &o[i - 1], e->ts - o[i - 1].ts,
		     arg_set(mt, o[i - 1].args_a, o[i - 1].nargs_a, e->args, e->nargs));
	memmove(&o[i - 1], &o[i], (st->len - i) * sizeof(*o));
	st->len--;
}

/* The async slice of async index i (struct matcher). */
static struct bslice *async_at(struct matcher *mt, uint32_t i)
{
	return VEC_AT(&mt->async, struct bslice, i - mt->async_base);
}

/*
 * Counts one more entry of map closed for good (val MDL_NONE): an async
 * operation ended, a flow's last step. Ids are seldom used again, so once
 * most entries are closed they are dropped, and the maps' memory follows
 * what is open rather than every id the trace ever used. (An id used again
 * after its entry went makes a new entry, as it would have found MDL_NONE.)
 */
static void forget_closed(struct kmap *map, size_t *closed)
{
	if (++*closed < 65536 || *closed * 2 < map->ents.len)
		return;
	kmap_prune(map);
	*closed = 0;
}

/* A new async slice, inside the operation parent (an async index) or not;
 * its async index, or MDL_NONE when out of memory. */
static uint32_t async_add(struct matcher *mt, const struct mdl_ev *e, uint32_t track, uint32_t parent)
{
	struct build *b = mt->b;
	uint32_t i = mt->async_base + (uint32_t)mt->async.len;
	struct bslice *s;

	if (i >= UINT32_MAX - 1 || (s = vec_push(&mt->async)) == NULL) {
		b->oom = 1;
		return MDL_NONE;
	}
	s->ts = e->ts;
	s->dur = -1;
	s->made = mt->made++;
	s->track = track;
	s->name = e->name;
	s->cat = e->cat;
	s->parent = parent;
	s->next = s->last = MDL_NONE;
	s->args_a = e->args;
	s->nargs_a = e->nargs;
	if (parent != MDL_NONE) { /* the operation's instants, in order */
		struct bslice *op = async_at(mt, parent);

		if (op->last == MDL_NONE)
			op->next = i;
		else
			async_at(mt, op->last)->next = i;
		op->last = i;
		op->children = 1;
	}
	return i;
}

/* Gives the operation s the first lane free at its start, two when it has
 * instants inside (drawn one deeper), so that slices of one (track, depth)
 * never overlap; an operation still open holds its lanes to the end.
 * Returns 0, or -1 when out of memory. */
static int async_lane(struct matcher *mt, struct bslice *s)
{
	int64_t end = s->dur < 0 ? INT64_MAX : s->ts + s->dur;
	uint32_t h = s->children ? 2 : 1, d = 0, k;
	struct vec *l;

	while (mt->lanes.len <= s->track)
		if (vec_push(&mt->lanes) == NULL)
			return -1;
	l = VEC_AT(&mt->lanes, struct vec, s->track);
	if (l->size == 0)
		vec_init(l, sizeof(int64_t));
	for (;; d++) {
		for (k = 0; k < h && d + k < l->len && *VEC_AT(l, int64_t, d + k) <= s->ts; k++)
			;
		if (k == h || d + k >= l->len)
			break;
	}
	while (l->len < d + h)
		if (vec_push(l) == NULL)
			return -1;
	for (k = 0; k < h; k++)
		*VEC_AT(l, int64_t, d + k) = end;
	s->depth = d;
	return 0;
}

/* Hands one async slice, its lane known, to the store. */
static int async_store(struct matcher *mt, struct bslice *s, struct ss_ref parent)
{
	struct build *b = mt->b;
	struct ss_slice x = { s->ts, s->dur, s->name, s->cat, s->set, parent, 0 };

	s->ref = ss_new(&b->ss, s->track, s->depth);
	if (s->ref.group == MDL_NONE)
		return -1;
	return ss_finish(&b->ss, s->ref, &x);
}

/*
 * Stores the operations that can be: in the order they started, each once
 * it has ended (all of them when `all`, at the end of the trace), with the
 * instants inside it; then forgets what was stored. Returns 0, or -1 when
 * out of memory.
 */
static int async_flush(struct matcher *mt, int all)
{
	uint32_t end = mt->async_base + (uint32_t)mt->async.len, i;
	size_t gone;

	for (; mt->async_head < end; mt->async_head++) {
		struct bslice *op = async_at(mt, mt->async_head);

		if (op->parent != MDL_NONE) /* an instant: stored with its operation */
			continue;
		if (op->dur < 0 && !all)
			break;
		if (async_lane(mt, op) != 0 || async_store(mt, op, (struct ss_ref){ MDL_NONE, 0 }) != 0)
			return -1;
		for (i = op->next; i != MDL_NONE; i = async_at(mt, i)->next) {
			struct bslice *in = async_at(mt, i);

			in->depth = op->depth + 1;
			if (async_store(mt, in, op->ref) != 0)
				return -1;
		}
	}
	/* everything before the head is stored: drop it once it is most */
	gone = mt->async_head - mt->async_base;
	if (gone > 4096 && gone >= mt->async.len / 2) {
		memmove(mt->async.data, async_at(mt, mt->async_head), (mt->async.len - gone) * sizeof(struct bslice));
		mt->async.len -= gone;
		mt->async_base = mt->async_head;
	}
	return 0;
}

static uint32_t async_track(struct matcher *mt, const struct mdl_ev *e)
{
	struct build *b = mt->b;
	struct btrack proto = { 0 };

	proto.kind = TK_ASYNC;
	proto.pid = VEC_AT(&b->rows, struct thread_row, b->row_of[e->thread])->pid;
	proto.name = e->name;
	proto.cat = e->cat;
	return build_track(b, &proto, e->cat, e->name, 0);
}

/* Async begin, instant and end with the same (pid, category, name, id) are
 * one operation on the async track of (pid, category, name). */
static void on_async(struct matcher *mt, const struct mdl_ev *e)
{
	struct build *b = mt->b;
	uint32_t track = async_track(mt, e);
	uint64_t pid = VEC_AT(&b->rows, struct thread_row, b->row_of[e->thread])->pid;
	struct kmap_entry *k = kmap_get(&mt->async_open, pid, (uint64_t)e->cat | (uint64_t)e->name << 32, e->extra, 0);
	struct bslice *op;
	uint32_t s;

	if (k == NULL) {
		b->oom = 1;
		return;
	}
	if (e->kind == MDL_EV_ASYNC_BEGIN) {
		if ((s = async_add(mt, e, track, MDL_NONE)) != MDL_NONE)
			async_at(mt, s)->async_op = 1;
		k->val = s;
		return;
	}
	if (k->val == MDL_NONE) {
		if (e->kind == MDL_EV_ASYNC_END) {
			b->m->diag.unmatched_ends++;
		} else if ((s = async_add(mt, e, track, MDL_NONE)) != MDL_NONE) {
			b->m->diag.unmatched_async_instants++;
			async_at(mt, s)->async_op = 1;
			async_at(mt, s)->dur = 0;
			async_at(mt, s)->set = arg_set(mt, e->args, e->nargs, 0, 0);
			if (async_flush(mt, 0) != 0)
				b->oom = 1;
		}
		return;
	}
	if (e->kind == MDL_EV_ASYNC_INSTANT) {
		if ((s = async_add(mt, e, track, k->val)) != MDL_NONE) {
			async_at(mt, s)->dur = 0;
			async_at(mt, s)->set = arg_set(mt, e->args, e->nargs, 0, 0);
		}
		return;
	}
	op = async_at(mt, k->val);
	op->dur = e->ts - op->ts;
	op->set = arg_set(mt, op->args_a, op->nargs_a, e->args, e->nargs);
	k->val = MDL_NONE;
	forget_closed(&mt->async_open, &mt->async_closed);
	if (async_flush(mt, 0) != 0)
		b->oom = 1;
}

/* An anchor for a flow begun: an ended flow's, or a new one; MDL_NONE when
 * out of memory. */
static uint32_t flow_anchor(struct matcher *mt)
{
	if (mt->spare.len > 0)
		return *VEC_AT(&mt->spare, uint32_t, --mt->spare.len);
	if (vec_push(&mt->anchors) == NULL || mt->anchors.len >= MDL_NONE)
		return MDL_NONE;
	return (uint32_t)mt->anchors.len - 1;
}

/* Flow events bind to the innermost slice open on their thread; consecutive
 * events of one (category, name, id) give arrows. */
static void on_flow(struct matcher *mt, const struct mdl_ev *e)
{
	struct build *b = mt->b;
	struct vec *st = thread_stack(mt, b->row_of[e->thread], e);
	struct open_slice *top = stack_top(st);
	struct kmap_entry *k;
	struct bflow *f;
	uint32_t *spare;

	if (top == NULL) {
		b->m->diag.flow_no_enclosing_slice++;
		return;
	}
	if ((k = kmap_get(&mt->flow_last, e->cat, e->name, e->extra, 0)) == NULL) {
		b->oom = 1;
		return;
	}
	if (e->kind != MDL_EV_FLOW_BEGIN && k->val == MDL_NONE)
		b->m->diag.unmatched_flow_steps++;
	if (e->kind != MDL_EV_FLOW_BEGIN && k->val != MDL_NONE) {
		if ((f = rs_push(&b->flows)) == NULL) {
			b->oom = 1; /* or the scratch file failed: sorter_failed() tells */
			return;
		}
		f->flow_id = e->extra;
		f->n = b->flows.count - 1;
		f->cat = e->cat;
		f->name = e->name;
		f->from = *VEC_AT(&mt->anchors, struct ss_ref, k->val);
		f->from_track = ss_group(&b->ss, f->from.group)->track;
		f->from_depth = ss_group(&b->ss, f->from.group)->depth;
		f->to = top->ref;
		f->to_ts = top->ts;
		if (b->commit != NULL) /* written once its from-slice is final (commit_flows.h) */
			commit_flow(b->commit, f);
	}
	if (k->val != MDL_NONE && b->commit != NULL) /* the anchor moves on, or goes */
		commit_anchor(b->commit, *VEC_AT(&mt->anchors, struct ss_ref, k->val), -1);
	if (e->kind == MDL_EV_FLOW_END) {
		if (k->val != MDL_NONE && (spare = vec_push(&mt->spare)) != NULL)
			*spare = k->val; /* else it is only not reused */
		k->val = MDL_NONE;
		forget_closed(&mt->flow_last, &mt->flows_ended);
		return;
	}
	if (k->val == MDL_NONE && (k->val = flow_anchor(mt)) == MDL_NONE) {
		b->oom = 1;
		return;
	}
	*VEC_AT(&mt->anchors, struct ss_ref, k->val) = top->ref;
	if (b->commit != NULL) {
		commit_anchor(b->commit, top->ref, 1);
		top->anchored = 1;
	}
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
		p->is_u64 = !p->is_int;
		p->v.i = (int64_t)a->v.u;
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

/* A new point's order (struct bpoint) on its track; 0 when out of memory. */
static uint64_t point_order(struct build *b, uint32_t track)
{
	struct id_group *g;

	if (!b->extent_rows)
		return b->points.count + 1;
	while (b->point_ids.len <= track) {
		if ((g = vec_push(&b->point_ids)) == NULL)
			return 0;
		idg_init(g);
	}
	return idg_take(&b->point_chunks, VEC_AT(&b->point_ids, struct id_group, track));
}

/* Each numeric argument of a counter event is a point of the series
 * (pid, event name, argument name, counter id). */
static void on_counter(struct matcher *mt, const struct mdl_ev *e)
{
	struct build *b = mt->b;
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
		pt.track = build_track(b, &proto, e->name, a->key, e->extra);
		if (b->oom || (pt.order = point_order(b, pt.track)) == 0 ||
		    (p = b->journal_points != NULL ? vec_push(b->journal_points) : rs_push(&b->points)) == NULL) {
			b->oom = 1; /* or the scratch file failed: sorter_failed() tells */
			return;
		}
		*p = pt;
		track_value(VEC_AT(&b->tracks, struct btrack, pt.track), bpoint_value(&pt));
	}
}

/* Matches one batch of events, in (ts, seq) order. */
static void match_events(struct matcher *mt, const struct mdl_ev *ev, size_t n)
{
	struct build *b = mt->b;
	size_t i;

	for (i = 0; i < n && !b->oom; i++) {
		note_time(mt, ev[i].ts);
		switch (ev[i].kind) {
		case MDL_EV_INSTANT:
		case MDL_EV_BEGIN:
		case MDL_EV_COMPLETE:
			on_duration(mt, &ev[i]);
			break;
		case MDL_EV_END:
			on_end(mt, &ev[i]);
			break;
		case MDL_EV_COUNTER:
			on_counter(mt, &ev[i]);
			break;
		case MDL_EV_ASYNC_BEGIN:
		case MDL_EV_ASYNC_INSTANT:
		case MDL_EV_ASYNC_END:
			on_async(mt, &ev[i]);
			break;
		default:
			on_flow(mt, &ev[i]);
		}
	}
}

/* A slice never closed: an open one on a thread's stack, or an async one. */
struct unterminated {
	uint64_t made;
	struct open_slice *o; /* or NULL */
	struct bslice *a;     /* or NULL */
};

static int unterminated_cmp(const void *x, const void *y)
{
	const struct unterminated *p = x, *q = y;

	return p->made < q->made ? -1 : p->made > q->made;
}

/* Slices never closed are counted, and their arg sets written now, in the
 * order the slices were made; thread ones go to the store. Those of thread
 * row `row` only, or (MDL_NONE) of every row and async track. */
static int match_unterminated(struct matcher *mt, uint32_t row)
{
	struct build *b = mt->b;
	struct vec u;
	size_t i, j;
	int rc = -1;

	vec_init(&u, sizeof(struct unterminated));
	for (i = 0; i < mt->stacks.len; i++) {
		struct vec *st = VEC_AT(&mt->stacks, struct vec, i);

		if (row != MDL_NONE && i != row)
			continue;
		for (j = 0; j < st->len; j++) {
			struct open_slice *o = VEC_AT(st, struct open_slice, j);
			struct unterminated *x;

			if (o->complete)
				continue;
			if ((x = vec_push(&u)) == NULL)
				goto out;
			x->made = o->made;
			x->o = o;
		}
	}
	for (i = 0; i < mt->async.len && row == MDL_NONE; i++) { /* the operations not yet stored */
		struct bslice *a = VEC_AT(&mt->async, struct bslice, i);
		struct unterminated *x;

		if (a->dur >= 0)
			continue;
		if ((x = vec_push(&u)) == NULL)
			goto out;
		x->made = a->made;
		x->a = a;
	}
	if (u.len > 1)
		qsort(u.data, u.len, sizeof(struct unterminated), unterminated_cmp);
	for (i = 0; i < u.len; i++) {
		struct unterminated *x = VEC_AT(&u, struct unterminated, i);

		b->m->diag.unterminated_slices++;
		if (x->a != NULL)
			x->a->set = arg_set(mt, x->a->args_a, x->a->nargs_a, 0, 0);
		else
			slice_finish(mt, x->o, -1, arg_set(mt, x->o->args_a, x->o->nargs_a, 0, 0));
	}
	for (i = 0; i < mt->stacks.len; i++)
		if (row == MDL_NONE || i == row)
			VEC_AT(&mt->stacks, struct vec, i)->len = 0;
	rc = 0;
out:
	vec_fini(&u);
	return rc;
}

/* By_thread (model.h): the thread being matched is over. Its slices never
 * closed are finished (a thread's events all came) and its slices written
 * while the next thread is matched. 0, or -1 when out of memory, writing
 * failed (b->write_failed) or the progress callback cancelled. */
static int thread_done(struct matcher *mt)
{
	struct build *b = mt->b;

	if (mt->thread == MDL_NONE)
		return 0;
	if (match_unterminated(mt, b->row_of[mt->thread]) != 0 || b->oom)
		return -1;
	if (build_write_thread(b) != 0) {
		b->write_failed = 1;
		return -1;
	}
	/* progress, and a chance to cancel, at each thread (on this thread only) */
	if (b->pv != NULL && b->pv->fn != NULL && !b->cancel &&
	    b->pv->fn(b->pv->ctx, INGEST_PHASE_BUILD, mt->matched, b->m->events_total, b->m->events_total) != 0)
		__atomic_store_n(&b->cancel, 1, __ATOMIC_RELAXED); /* the writer thread reads it */
	return b->cancel ? -1 : 0;
}

/* By_thread: matches a batch, which may end one thread and begin another. */
static int match_by_thread(struct matcher *mt, const struct mdl_ev *ev, size_t n)
{
	size_t i = 0, j;

	while (i < n && !mt->b->oom) {
		if (ev[i].thread != mt->thread) {
			if (thread_done(mt) != 0)
				return -1;
			mt->thread = ev[i].thread;
		}
		for (j = i; j < n && ev[j].thread == mt->thread; j++)
			;
		match_events(mt, ev + i, j - i);
		mt->matched += j - i;
		i = j;
	}
	return mt->b->oom ? -1 : 0;
}

/* The trace's time range covers scheduling and log records too; it is known
 * before slices are written, since unterminated ones count up to its end. */
static void time_records(struct matcher *mt)
{
	struct build *b = mt->b;
	size_t i;

	if (b->m->sched.count > 0) {
		note_time(mt, b->m->sched_first);
		note_time(mt, b->m->sched_last);
	}
	for (i = 0; i < b->m->logs.len; i++)
		note_time(mt, VEC_AT(&b->m->logs, struct mdl_log, i)->ts);
}

/* Slices a growing trace's commit holds in memory at most (commit.h): past
 * them they go to the writer, a few MB at a time, so that it writes while
 * matching goes on rather than all at the next commit. */
enum { COMMIT_ROWS_MAX = 1 << 16 };

/* A growing trace's commit between two batches (commit.h, commit_write):
 * with the slices open on the threads' stacks now. 0, or -1. */
static int match_commit(struct matcher *mt, enum commit_how how, uint64_t *queued)
{
	struct build *b = mt->b;
	size_t i, j;

	for (i = 0; how != COMMIT_ROWS && i < mt->stacks.len; i++) { /* what readers see: not an unpublished write's */
		const struct vec *st = VEC_AT(&mt->stacks, struct vec, i);

		for (j = 0; j < st->len; j++) {
			const struct open_slice *o = VEC_AT(st, struct open_slice, j);
			struct commit_open co = { o->ref, o->parent, o->ts, o->name, o->cat };

			if (!o->complete && commit_open_slice(b->commit, &co) != 0) {
				b->oom = 1;
				return -1;
			}
		}
	}
	if (commit_write(b->commit, how, queued) != 0) {
		b->write_failed = 1;
		return -1;
	}
	return 0;
}

/* One stack per thread row: rows are made as threads are decoded
 * (resolve.c), so a call may find new ones. 0, or -1 when out of memory. */
static int grow_stacks(struct matcher *mt)
{
	struct vec *st;

	while (mt->stacks.len < mt->b->rows.len) {
		if ((st = vec_push(&mt->stacks)) == NULL)
			return -1;
		vec_init(st, sizeof(struct open_slice));
	}
	return 0;
}

int build_match_begin(struct build *b)
{
	if ((b->mt = malloc(sizeof(*b->mt))) == NULL)
		return -1;
	if (matcher_init(b->mt, b) != 0) {
		build_match_abandon(b);
		return -1;
	}
	return 0;
}

/*
 * Matches the events as the sorter hands them on, a batch at a time: a
 * batch ends at a change of ts, so the ties order_complete_ties reorders
 * are all in one. Streaming, it stops where the sorter's release does.
 */
int build_match_more(struct build *b)
{
	struct matcher *mt = b->mt;
	struct mdl_ev *ev;
	long n = 0;

	if (grow_stacks(mt) != 0)
		return -1;
	while (!b->oom && (n = sorter_next(b->so, &ev)) > 0) {
		resolve_calls(b, ev, (size_t)n);
		if (order_complete_ties(b, ev, (size_t)n) != 0)
			return -1;
		b->matched_ts = ev[n - 1].ts; /* events come in time order */
		if (!b->m->by_thread)
			match_events(mt, ev, (size_t)n);
		else if (match_by_thread(mt, ev, (size_t)n) != 0)
			return -1;
		if (b->commit != NULL && b->commit_every && (mt->since_commit += (uint64_t)n) >= b->commit_every) {
			mt->since_commit = 0; /* tests: a commit every so many events */
			if (match_commit(mt, COMMIT_PUBLISH, NULL) != 0)
				return -1;
		} else if (b->commit != NULL && b->ss.journal != NULL &&
			   b->ss.journal->len >= (b->commit_rows ? b->commit_rows : COMMIT_ROWS_MAX)) {
			/* what a commit holds in memory is bounded: past it, the
			 * rows are written now and shown at the next commit */
			if (match_commit(mt, COMMIT_ROWS, NULL) != 0)
				return -1;
		}
	}
	return b->oom || n < 0 ? -1 : 0;
}

int build_commit(struct build *b, enum commit_how how, uint64_t *queued)
{
	return b->mt != NULL && b->commit != NULL ? match_commit(b->mt, how, queued) : 0;
}

int build_match_end(struct build *b)
{
	struct matcher *mt = b->mt;
	int rc = -1;

	if (build_match_more(b) != 0)
		goto out;
	sorter_done(b->so);
	if (thread_done(mt) != 0) /* the last thread's */
		goto out;
	time_records(mt);
	if (b->oom || match_unterminated(mt, MDL_NONE) != 0 || async_flush(mt, 1) != 0)
		goto out;
	rc = b->oom ? -1 : 0;
out:
	build_match_abandon(b);
	return rc;
}

void build_match_abandon(struct build *b)
{
	if (b->mt == NULL)
		return;
	matcher_fini(b->mt);
	free(b->mt);
	b->mt = NULL;
}
