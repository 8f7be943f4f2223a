/*
 * The build stage's resolution (build.h): kernel objects by koid, thread
 * rows (pids still unknown come from the threads' kernel objects, else from
 * the events' thread references), and the tracks slices, counters and cpus
 * are drawn on.
 */
#include <stdlib.h>
#include <string.h>

#include "build.h"


const struct mdl_kobj *build_kobj_find(const struct build *b, uint64_t koid)
{
	const struct kmap_entry *e = kmap_find(&b->kobj_map, koid, 0, 0, 0);

	return e ? VEC_AT(&b->m->kobjs, struct mdl_kobj, e->val) : NULL;
}

/* Kernel objects form one table; the last record for a koid wins. Those
 * decoded since the last call are added. */
int build_kobjs(struct build *b)
{
	size_t i;

	for (i = b->kobjs_done; i < b->m->kobjs.len; i++) {
		struct mdl_kobj *o = VEC_AT(&b->m->kobjs, struct mdl_kobj, i);
		struct kmap_entry *e = kmap_get(&b->kobj_map, o->koid, 0, 0, 0);

		if (e == NULL)
			return -1;
		e->val = (uint32_t)i;
	}
	b->kobjs_done = i;
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

/* Thread i's pid: its own, else pid_of_tid's. */
static uint64_t thread_pid(const struct build *b, const struct kmap *by_tid, size_t i)
{
	const struct mdl_thread *t = VEC_AT(&b->m->threads, struct mdl_thread, i);

	return t->pid == MDL_PID_UNRESOLVED ? pid_of_tid(b, by_tid, t->tid) : t->pid;
}

/* Gives thread i the row of (pid, its tid) in rows and map, made when new;
 * its row, or MDL_NONE when out of memory. */
static uint32_t thread_row(struct build *b, struct vec *rows, struct kmap *map, size_t i, uint64_t pid)
{
	uint64_t tid = VEC_AT(&b->m->threads, struct mdl_thread, i)->tid;
	struct kmap_entry *e = kmap_get(map, pid, tid, 0, 0);
	struct thread_row *r;

	if (e == NULL)
		return MDL_NONE;
	if (e->val == MDL_NONE) {
		if ((r = vec_push(rows)) == NULL)
			return MDL_NONE;
		r->pid = pid;
		r->tid = tid;
		r->track = 0;
		e->val = (uint32_t)rows->len - 1;
	}
	return e->val;
}

/*
 * Gives every model thread decoded since the last call its row (pids
 * still unknown from pid_of_tid, with what is known now); equal pairs
 * share a row. Rows come in the order of the threads, as a batch makes
 * them. A thread's own pid never changes; one found from others (a
 * context switch's or a wakeup's tid) may, when a kernel object or a
 * thread reference decoded later names it: build_threads_final settles it.
 */
int build_threads(struct build *b)
{
	size_t i, n = b->m->threads.len, cap;
	struct kmap by_tid;
	uint32_t *grown;
	int rc = -1;

	if (b->row_of != NULL && n == b->threads_done)
		return 0;
	kmap_init(&by_tid);
	if (n > b->row_cap || b->row_of == NULL) {
		cap = n > 2 * b->row_cap ? n : 2 * b->row_cap;
		if ((grown = realloc(b->row_of, (cap ? cap : 1) * sizeof(uint32_t))) == NULL)
			goto out;
		b->row_of = grown;
		b->row_cap = cap;
	}
	if (pids_by_tid(b, &by_tid) != 0)
		goto out;
	for (i = b->threads_done; i < n; i++)
		if ((b->row_of[i] = thread_row(b, &b->rows, &b->row_map, i, thread_pid(b, &by_tid, i))) == MDL_NONE)
			goto out;
	b->threads_done = n;
	rc = 0;
out:
	kmap_fini(&by_tid);
	return rc;
}

/*
 * After matching: the rows as a batch makes them, from everything known
 * (thread order, pids from the last kernel objects and every reference),
 * replace those made as threads came; thread tracks follow their rows.
 * Returns 0; 1 when a row that matching drew on (its thread track exists)
 * got a pid that the end revises, so that the slices on it are not where
 * a batch puts them (the caller starts again); -1 when out of memory.
 */
int build_threads_final(struct build *b)
{
	size_t i, n = b->m->threads.len;
	struct vec rows;
	struct kmap map, by_tid;
	uint32_t *row_of = NULL;
	int rc = -1;

	if (build_kobjs(b) != 0 || build_threads(b) != 0)
		return -1;
	vec_init(&rows, sizeof(struct thread_row));
	kmap_init(&map);
	kmap_init(&by_tid);
	if ((row_of = malloc((n ? n : 1) * sizeof(uint32_t))) == NULL || pids_by_tid(b, &by_tid) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		struct thread_row *old = VEC_AT(&b->rows, struct thread_row, b->row_of[i]), *r;
		uint64_t pid = thread_pid(b, &by_tid, i);

		if ((row_of[i] = thread_row(b, &rows, &map, i, pid)) == MDL_NONE)
			goto out;
		if (old->pid != pid && old->track != 0) {
			rc = 1;
			goto out;
		}
		r = VEC_AT(&rows, struct thread_row, row_of[i]);
		if (old->pid == pid && old->track != 0) {
			r->track = old->track;
			VEC_AT(&b->tracks, struct btrack, old->track - 1)->thread = row_of[i];
		}
	}
	vec_fini(&b->rows);
	kmap_fini(&b->row_map);
	b->rows = rows;
	b->row_map = map;
	memcpy(b->row_of, row_of, n * sizeof(uint32_t));
	vec_init(&rows, sizeof(struct thread_row));
	kmap_init(&map);
	rc = 0;
out:
	free(row_of);
	vec_fini(&rows);
	kmap_fini(&map);
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
