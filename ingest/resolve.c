/*
 * The build stage's resolution (build.h): kernel objects by koid, thread
 * rows (pids still unknown come from the threads' kernel objects, else from
 * the events' thread references), and the tracks slices, counters and cpus
 * are drawn on.
 */
#include <stdlib.h>

#include "build.h"


const struct mdl_kobj *build_kobj_find(const struct build *b, uint64_t koid)
{
	const struct kmap_entry *e = kmap_find(&b->kobj_map, koid, 0, 0, 0);

	return e ? VEC_AT(&b->m->kobjs, struct mdl_kobj, e->val) : NULL;
}

/* Kernel objects form one table; the last record for a koid wins. */
int build_kobjs(struct build *b)
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

/* For pids_by_tid: a tid the events' references give two different pids. */
#define TID_AMBIGUOUS (MDL_NONE - 1)

/* Fills by_tid: tid -> the model thread whose reference gave it a pid (an
 * event's thread record or inline reference), or TID_AMBIGUOUS when two gave
 * it different pids. 0, or -1 when out of memory. */
static int pids_by_tid(const struct build *b, struct kmap *by_tid)
{
	size_t i;

	for (i = 0; i < b->m->threads.len; i++) {
		const struct mdl_thread *t = VEC_AT(&b->m->threads, struct mdl_thread, i);
		struct kmap_entry *e;

		if (t->pid == MDL_PID_UNRESOLVED)
			continue;
		if ((e = kmap_get(by_tid, t->tid, 0, 0, 0)) == NULL)
			return -1;
		if (e->val == MDL_NONE)
			e->val = (uint32_t)i;
		else if (e->val != TID_AMBIGUOUS && VEC_AT(&b->m->threads, struct mdl_thread, e->val)->pid != t->pid)
			e->val = TID_AMBIGUOUS;
	}
	return 0;
}

/* The pid of a thread known by its koid alone (a context switch's or a
 * wakeup's tid): its kernel object's "process" argument, else the one pid
 * the events' thread references give that tid, else 0. */
static uint64_t pid_of_tid(const struct build *b, const struct kmap *by_tid, uint64_t tid)
{
	const struct mdl_kobj *o = build_kobj_find(b, tid);
	const struct kmap_entry *e;

	if (o && o->type == 2 && o->process != MDL_PID_UNRESOLVED)
		return o->process;
	e = kmap_find(by_tid, tid, 0, 0, 0);
	return e && e->val != TID_AMBIGUOUS ? VEC_AT(&b->m->threads, struct mdl_thread, e->val)->pid : 0;
}

/* Gives every model thread its row (pids still unknown from pid_of_tid);
 * equal pairs share a row. */
int build_threads(struct build *b)
{
	size_t i, n = b->m->threads.len;
	struct kmap by_tid;
	int rc = -1;

	kmap_init(&by_tid);
	if ((b->row_of = calloc(n ? n : 1, sizeof(uint32_t))) == NULL || pids_by_tid(b, &by_tid) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		struct mdl_thread *t = VEC_AT(&b->m->threads, struct mdl_thread, i);
		uint64_t pid = t->pid == MDL_PID_UNRESOLVED ? pid_of_tid(b, &by_tid, t->tid) : t->pid;
		struct kmap_entry *e;
		struct thread_row *r;

		if ((e = kmap_get(&b->row_map, pid, t->tid, 0, 0)) == NULL)
			goto out;
		if (e->val == MDL_NONE) {
			if ((r = vec_push(&b->rows)) == NULL)
				goto out;
			r->pid = pid;
			r->tid = t->tid;
			e->val = (uint32_t)b->rows.len - 1;
		}
		b->row_of[i] = e->val;
	}
	rc = 0;
out:
	kmap_fini(&by_tid);
	return rc;
}

uint32_t build_track(struct build *b, struct btrack *proto, uint64_t k1, uint64_t k2, uint64_t k3)
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

uint32_t build_thread_track(struct build *b, uint32_t row)
{
	struct thread_row *r = VEC_AT(&b->rows, struct thread_row, row);
	struct btrack proto = { 0 };

	if (r->track == 0) {
		proto.kind = TK_THREAD;
		proto.pid = r->pid;
		proto.thread = row;
		r->track = build_track(b, &proto, row, 0, 0) + 1;
	}
	return r->track - 1;
}
