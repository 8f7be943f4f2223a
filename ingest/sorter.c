/*
 * Event order with bounded memory (sorter.h): sorts the model's events in
 * runs of at most a budget, spills all but the last run to one temporary
 * file, and merges the runs back in (ts, seq) order for matching (or
 * (thread, ts, seq), model.h by_thread: ev_before).
 *
 * A run is its events packed one after another (run_put): each field as a
 * varint of its difference from the same field of the event before, so
 * that a sorted run of 40-byte events takes 10 to 15 bytes an event; the
 * page cache a spill fills costs more than the packing. The file lives
 * only as long as this process (it is unlinked at creation), so its layout
 * needs no version or byte order. Runs are read back through a buffer each
 * with pread, unpacked an event at a time, and merged with a binary heap on
 * the events at their heads. A trace within the budget never touches the
 * file: its one run is sorted in place and handed out from the model's own
 * array, whose pages are given back as matching moves on.
 *
 * Sorting and writing a run take a thread of their own, so that they
 * overlap decoding (the second core is idle while the decoder runs): at a
 * spill, the model's full array is handed to that thread and the model goes
 * on filling a second one, the array of the run spilled before, which is
 * reused. One spill runs at a time; the next waits for it. The spill thread
 * touches only the array it was given, the file and the list of runs; the
 * decoding thread reads the list only after waiting for it.
 *
 * The merge, too, runs on a thread of its own while matching consumes its
 * batches: it fills one batch while the caller holds the other, and only
 * the two flags of which batch is ready pass between them (under a mutex).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sorter.h"
#include "spill.h"
#include "../tracedb/tracedb.h" /* varints */

enum {
	SORTER_BATCH = 1 << 16,          /* events a batch holds, before it is extended to a ts change */
	SORTER_READ = 256 << 10,         /* bytes of read buffer per spilled run */
	SORTER_WRITE = 1 << 20,          /* bytes packed before each write of a run */
	RUN_EV_MAX = 52,                 /* bytes a packed event takes at most */
};

/* One sorted run in the spill file. */
struct sorter_run {
	uint64_t off;   /* byte offset of its first event */
	uint64_t bytes; /* its packed length */
	size_t n;       /* its events */
	size_t late;    /* streaming: its events at or before the last one
			 * handed on when it was spilled (sorter.h, LATE) */
	int64_t late_min; /* the lowest ts of those, when late > 0 */
};

/* A run being merged: its next event, and what is left of it. */
struct merge_src {
	struct mdl_ev *cur;  /* the run's next event; valid while in the heap */
	struct mdl_ev *end;  /* the run in memory: one past its last event */
	uint8_t *buf;        /* a spilled run: bytes read ahead; NULL for the run in memory */
	size_t cap;          /* buf's size: SORTER_READ, or the whole run when shorter */
	size_t pos, len;     /* the bytes of buf not yet unpacked */
	struct mdl_ev head;  /* a spilled run: its next event (cur points here), and the base of the next */
	uint64_t next;       /* file offset of the first byte not yet read */
	uint64_t bytes_left; /* bytes of the run not yet read */
	size_t left;         /* events of the run not yet unpacked */
	int gone;            /* its last event was taken: out of the heap */
};

/* An array of events: the one being spilled, or the spare. */
struct ev_array {
	struct mdl_ev *ev;
	size_t n, cap;
};

struct sorter {
	struct model *m;
	struct spill sp;         /* where runs go (spill.h) */
	struct spill side;       /* where the model's context switches go in
				  * runs (m->sched): a file of their own, since
				  * they come while the spill thread writes sp */
	size_t budget;           /* events held before a spill */
	struct vec runs;         /* struct sorter_run, in file order; the spill thread's while busy */
	pthread_t th;            /* the spill thread, while busy */
	int busy;                /* a spill is running on th, or ran inline: wait for it */
	int job_failed;          /* that spill failed (its sentence is in sp.why) */
	struct ev_array job;     /* the events it sorts and writes */
	uint8_t *pack;           /* SORTER_WRITE bytes: the spill thread's packing buffer */
	struct ev_array spare;   /* the array the model fills next (ev NULL: none yet) */
	int failed;              /* sticky: a spill or a read back failed */
	char why[320];           /* the sentence for sorter_failed() */
	int finished;            /* sorter_finish() succeeded */
	size_t pos;              /* no spill: next event of m->events to hand out */
	size_t released;         /* events of m->events whose pages went back */
	size_t dropped;          /* events handed on since the arguments' pages went back */
	struct merge_src *src;   /* the runs merged, the in-memory one last */
	struct merge_src **heap; /* sources with events left, by their next event */
	size_t nheap;
	struct mdl_ev *out;      /* the batch being merged into (one of outs), grown to a ts change */
	size_t out_cap;
	struct ev_array outs[2]; /* the merge thread fills one while the caller holds the other */
	pthread_t mth;           /* the merge thread, while merge_running */
	int merge_running;
	pthread_mutex_t mmu;     /* guards ready, got, stop */
	pthread_cond_t mcv;
	int ready[2];            /* outs[i] holds a batch (or the end) not yet given back */
	long got[2];             /* its events; 0 at the end, -1 when the merge failed */
	int cons;                /* the batch the caller takes next */
	int held;                /* the batch the caller holds, or -1 */
	int stop;                /* sorter_free: the merge thread ends */
	/* streaming (sorter_release): the decoding thread's alone */
	int streaming;           /* sorter_release was called: no full merge */
	int final;               /* the last release: every event goes */
	int have_last;           /* an event was handed on: last_ts is set */
	int64_t last_ts;         /* the ts of the last event handed on */
	int64_t limit;           /* events below it are handed on */
	struct ev_array kept;    /* events decoded and not handed on, sorted */
	struct merge_src mem;    /* held as a source of the merge */
	struct vec ssrc;         /* struct merge_src *: spilled runs being merged */
	size_t runs_taken;       /* runs already among ssrc */
	uint64_t window;         /* B, bytes (sorter_window); 0: none yet */
	uint64_t slot_bytes;     /* window / SLOTS: the ring's grain */
	struct ev_slot *slots;   /* SLOTS + 1 of them, by slot number mod */
	size_t mark_pos;         /* m->events before it are folded into pend */
	uint64_t mark_end;       /* input bytes decoded at the last mark */
	int64_t pend_min;        /* the lowest ts since the last mark */
	int pend_has;
	int64_t ts_max;          /* the highest ts decoded */
	int have_max;
	uint64_t late;           /* late events seen by the releases */
	uint64_t rel_end;        /* mark_end at the last release that handed on */
	struct vec hist;         /* int64_t: the lowest ts of the events whose records
				  * end in each hist_grain bytes of the input from
				  * byte 0 (INT64_MAX: none), for sorter_late_window */
	unsigned hist_shift;     /* hist_grain = slot_bytes << hist_shift */
	uint64_t late_need;      /* the window the last late events needed */
	uint64_t handed;         /* events handed on by next_stream */
};

/* ---- sorting ---------------------------------------------------------- */

/*
 * The order: (ts, sub, seq) (model.h: sub breaks ties of a clock faster
 * than 1 GHz); or, for a model whose events come thread after
 * thread (model.h, by_thread), (thread, ts, seq), the threads in the order
 * they came. Each thread's events are appended together there, so between
 * two threads seq says which came first: the order is (the thread's place,
 * ts, seq), total, and needs no table of places.
 */
static inline int ev_before(const struct mdl_ev *x, const struct mdl_ev *y, int by_thread)
{
	if (by_thread && x->thread != y->thread)
		return x->seq < y->seq;
	if (x->ts != y->ts)
		return x->ts < y->ts;
	return x->sub < y->sub || (x->sub == y->sub && x->seq < y->seq);
}

/* Streaming: the lowest ts of the events whose records end in a slot of
 * the input (sorter_mark). */
struct ev_slot {
	uint64_t no;  /* the slot's number: its first byte / slot_bytes */
	int64_t min;
	int has;      /* an event ended in it */
};

enum { SLOTS = 16, HIST_MAX = 1 << 20 };

int64_t sorter_test_skew;
int sorter_test_no_late;
size_t sorter_test_hist_max;
uint64_t sorter_test_widen_max;

static int ev_cmp(const void *a, const void *b)
{
	const struct mdl_ev *x = a, *y = b;

	return ev_before(x, y, 0) ? -1 : ev_before(y, x, 0);
}

static int ev_cmp_by_thread(const void *a, const void *b)
{
	const struct mdl_ev *x = a, *y = b;

	return ev_before(x, y, 1) ? -1 : ev_before(y, x, 1);
}

/* The events taken out of order by sort_events, up to a cap. */
struct ev_rest {
	struct mdl_ev *v;
	size_t len, max;
};

static int rest_push(struct ev_rest *r, const struct mdl_ev *e)
{
	if (r->len >= r->max)
		return -1;
	r->v[r->len++] = *e;
	return 0;
}

/*
 * Room for n events to sort with, mapped apart from the heap: its pages
 * cost nothing until touched, and freeing it leaves malloc's threshold for
 * mapping large blocks alone (glibc raises it to the size of a mapped block
 * freed, and the heap would then keep every later block of up to that size
 * after its free). NULL when out of memory.
 */
static struct mdl_ev *scratch_map(size_t n)
{
	void *p = mmap(NULL, n * sizeof(struct mdl_ev), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void scratch_unmap(struct mdl_ev *p, size_t n)
{
	if (p != NULL)
		munmap(p, n * sizeof(struct mdl_ev));
}

/*
 * Splits ev[0 .. n) into a sorted run, compacted in place at the front, and
 * the events out of its order, in r. An event that sorts before the last
 * one kept goes to r, unless only that last one is out of place (a lone
 * early event with a late time): then the last one goes. Returns the length
 * of the run, or n + 1 when r would outgrow its cap (ev then holds every
 * event, in some order).
 */
static size_t split_runs(struct mdl_ev *ev, size_t n, struct ev_rest *r, int by_thread)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (k == 0 || !ev_before(&ev[i], &ev[k - 1], by_thread)) {
			ev[k++] = ev[i];
			continue;
		}
		if (k >= 2 && !ev_before(&ev[i], &ev[k - 2], by_thread)) {
			if (rest_push(r, &ev[k - 1]) != 0)
				break;
			ev[k - 1] = ev[i];
			continue;
		}
		if (rest_push(r, &ev[i]) != 0)
			break;
	}
	if (i == n)
		return k;
	memcpy(&ev[k], r->v, r->len * sizeof(*ev)); /* the room the scan freed */
	return n + 1;
}

/*
 * Sorts ev[0 .. n) by (ts, seq) with tmp, room for n / 2 events: a merge
 * sort whose halves already in order cost one comparison. qsort would do,
 * but glibc's moves a 40-byte event with a call to memcpy and compares
 * through a pointer, and events that writers append as scopes exit
 * (complete events) can be half out of order: then the sort is a large
 * part of the build.
 */
static void ev_msort(struct mdl_ev *ev, size_t n, struct mdl_ev *tmp, int by_thread)
{
	size_t h = n / 2, i, j, k;
	struct mdl_ev x;

	if (n <= 16) {
		for (i = 1; i < n; i++) {
			x = ev[i];
			for (j = i; j > 0 && ev_before(&x, &ev[j - 1], by_thread); j--)
				ev[j] = ev[j - 1];
			ev[j] = x;
		}
		return;
	}
	ev_msort(ev, h, tmp, by_thread);
	ev_msort(ev + h, n - h, tmp, by_thread);
	if (!ev_before(&ev[h], &ev[h - 1], by_thread))
		return;
	memcpy(tmp, ev, h * sizeof(*ev));
	for (i = 0, j = h, k = 0; i < h && j < n;) /* k <= j: never overtakes */
		ev[k++] = ev_before(&ev[j], &tmp[i], by_thread) ? ev[j++] : tmp[i++];
	memcpy(&ev[k], &tmp[i], (h - i) * sizeof(*ev));
}

/*
 * Sorts events by (ts, seq), which are unique, so the order is total and
 * ties in ts keep file order. Events come mostly in order: each thread's
 * are (almost) in time order and FXT writers append the outermost begins
 * at the end. So the events in order stay in place, the few out of order
 * are sorted apart and merged in from the back: linear time plus the sort
 * of the rest. When more than half are out of order (complete events
 * written as scopes exit, not as they start), everything is sorted in place instead,
 * the room taken by the rest serving the merge sort. Scratch: n * 3 / 4
 * events at most, only as many as are out of order touched; qsort when
 * there is none.
 */
static int sort_events(struct mdl_ev *ev, size_t n, int by_thread)
{
	size_t room = n / 2 + n / 4 + 1, k, j, out;
	struct ev_rest r = { NULL, 0, n / 2 };

	if (n < 2)
		return 0;
	if ((r.v = scratch_map(room)) == NULL) {
		qsort(ev, n, sizeof(*ev), by_thread ? ev_cmp_by_thread : ev_cmp);
		return 0;
	}
	if ((k = split_runs(ev, n, &r, by_thread)) > n) {
		ev_msort(ev, n, r.v, by_thread);
		goto out_unmap;
	}
	ev_msort(r.v, r.len, r.v + n / 2, by_thread); /* the rest's merges use the last quarter */
	for (j = r.len, out = n; j > 0;) {
		if (k > 0 && ev_before(&r.v[j - 1], &ev[k - 1], by_thread))
			ev[--out] = ev[--k];
		else
			ev[--out] = r.v[--j];
	}
out_unmap:
	scratch_unmap(r.v, room);
	return 0;
}

static void merge_start(struct sorter *so);
static void merge_stop(struct sorter *so);

/* ---- spilling --------------------------------------------------------- */

/* Records the first failure, in a sentence; later ones keep it. */
static void sorter_fail(struct sorter *so, const char *why)
{
	if (so->failed)
		return;
	so->failed = 1;
	snprintf(so->why, sizeof(so->why), "%s", why);
	so->m->spill_at = SIZE_MAX; /* the events stay in memory from now on */
}

/* ---- the packed run ---------------------------------------------------- */

/* Packs e after prev (the event before it in the run; zeros for the
 * first) at out; returns the bytes written, at most RUN_EV_MAX. Every field
 * is kept, in differences that wrap: ts never decreases in a run (but
 * where a by_thread run moves on to the next thread), seq and
 * the argument index mostly step by one, and a call's extra (its index in
 * the model's ends) too. */
static size_t run_put(uint8_t *out, const struct mdl_ev *prev, const struct mdl_ev *e)
{
	uint8_t *o = out;

	/* kinds fit in 7 bits: the top one says that sub and end_sub follow */
	if (e->sub | e->end_sub) {
		*o++ = e->kind | 0x80;
		*o++ = e->nargs;
		*o++ = e->sub;
		*o++ = e->end_sub;
	} else {
		*o++ = e->kind;
		*o++ = e->nargs;
	}
	o += tracedb_put_varint(o, (uint64_t)e->ts - (uint64_t)prev->ts);
	o += tracedb_put_varint(o, tracedb_zigzag((uint64_t)((int64_t)e->seq - (int64_t)prev->seq)));
	o += tracedb_put_varint(o, e->thread);
	o += tracedb_put_varint(o, e->cat);
	o += tracedb_put_varint(o, e->name);
	o += tracedb_put_varint(o, tracedb_zigzag((uint64_t)((int64_t)e->args - (int64_t)prev->args)));
	o += tracedb_put_varint(o, tracedb_zigzag(e->extra - prev->extra));
	return (size_t)(o - out);
}

/* A varint, most often one byte here. */
static inline int run_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	if (*p < end && **p < 0x80) {
		*v = *(*p)++;
		return 0;
	}
	return tracedb_get_varint(p, end, v);
}

/* Unpacks the event after *e (in place: *e is the one before) from
 * [*p, end); 0, or -1 when the bytes end first. */
static int run_get(const uint8_t **p, const uint8_t *end, struct mdl_ev *e)
{
	uint64_t v[7];
	int i;

	if (end - *p < 2)
		return -1;
	e->kind = (*p)[0] & 0x7f;
	e->nargs = (*p)[1];
	e->sub = e->end_sub = 0;
	if ((*p)[0] & 0x80) {
		if (end - *p < 4)
			return -1;
		e->sub = (*p)[2];
		e->end_sub = (*p)[3];
		*p += 2;
	}
	*p += 2;
	for (i = 0; i < 7; i++)
		if (run_varint(p, end, &v[i]) != 0)
			return -1;
	e->ts = (int64_t)((uint64_t)e->ts + v[0]);
	e->seq = (uint32_t)((uint64_t)e->seq + tracedb_unzigzag(v[1]));
	e->thread = (uint32_t)v[2];
	e->cat = (uint32_t)v[3];
	e->name = (uint32_t)v[4];
	e->args = (uint32_t)((uint64_t)e->args + tracedb_unzigzag(v[5]));
	e->extra += tracedb_unzigzag(v[6]);
	return 0;
}

/* Sorts the job's events and appends them to the file as one run, packed;
 * on the spill thread, or inline when it could not start. The run's writes
 * follow one another: nothing else writes to the file while decoding. */
static void *spill_run(void *ctx)
{
	struct sorter *so = ctx;
	struct sorter_run *run;
	struct mdl_ev zero;
	const struct mdl_ev *prev = &zero;
	size_t i, len = 0;
	uint64_t off;

	memset(&zero, 0, sizeof(zero));
	sort_events(so->job.ev, so->job.n, so->m->by_thread);
	if ((so->pack == NULL && (so->pack = malloc(SORTER_WRITE)) == NULL) || (run = vec_push(&so->runs)) == NULL) {
		snprintf(so->sp.why, sizeof(so->sp.why), "out of memory spilling sorted events");
		so->job_failed = 1;
		return NULL;
	}
	run->off = so->sp.len;
	run->bytes = 0;
	run->n = so->job.n;
	run->late = 0;
	for (i = 0; so->have_last && i < so->job.n && so->job.ev[i].ts <= so->last_ts; i++)
		run->late++;
	run->late_min = run->late > 0 ? so->job.ev[0].ts : 0;
	for (i = 0; i <= so->job.n; i++) {
		if (len > 0 && (i == so->job.n || len > SORTER_WRITE - RUN_EV_MAX)) {
			if (spill_write(&so->sp, so->pack, len, &off) != 0) {
				so->runs.len--;
				so->job_failed = 1;
				return NULL;
			}
			run->bytes += len;
			len = 0;
		}
		if (i < so->job.n) {
			len += run_put(so->pack + len, prev, &so->job.ev[i]);
			prev = &so->job.ev[i];
		}
	}
	return NULL;
}

/* spill_run on a thread of its own, which gives back what it held as it
 * ends (util.h, heap_release): a trace's last spill would keep its sort's
 * memory otherwise. */
static void *spill_thread(void *ctx)
{
	spill_run(ctx);
	heap_release();
	return NULL;
}

/* Waits for the spill in progress, if any; its array becomes the spare.
 * Returns 0, or -1 when it (or one before) failed. */
static int spill_wait(struct sorter *so)
{
	if (so->busy) {
		if (so->busy == 2)
			pthread_join(so->th, NULL);
		so->busy = 0;
		so->spare = so->job;
		so->spare.n = 0;
		memset(&so->job, 0, sizeof(so->job));
		if (so->job_failed)
			sorter_fail(so, so->sp.why);
	}
	return so->failed ? -1 : 0;
}

/* Folds the lowest ts of the events appended since the last fold into
 * pend_min (streaming's watermark, sorter_mark). */
static void fold_marks(struct sorter *so)
{
	const struct mdl_ev *ev = so->m->events.data;
	size_t i, n = so->m->events.len;

	if (so->window == 0)
		return;
	for (i = so->mark_pos; i < n; i++) {
		if (!so->pend_has || ev[i].ts < so->pend_min)
			so->pend_min = ev[i].ts;
		so->pend_has = 1;
		if (!so->have_max || ev[i].ts > so->ts_max)
			so->ts_max = ev[i].ts;
		so->have_max = 1;
	}
	so->mark_pos = n; /* back to 0 whenever the array is emptied */
}

/* The model's spill hook: hands its full array to the spill thread and
 * gives it the spare to fill. */
static int sorter_spill(void *ctx, struct model *m)
{
	struct sorter *so = ctx;

	if (m->events.len == 0 || spill_wait(so) != 0)
		return so->failed ? -1 : 0;
	fold_marks(so); /* before the events leave the array */
	vec_drop(&m->args); /* nothing before this point changes again */
	if (so->spare.ev == NULL && (so->spare.ev = malloc(m->events.cap * sizeof(struct mdl_ev))) != NULL)
		so->spare.cap = m->events.cap;
	if (so->spare.ev == NULL) { /* no second array: the model's own is spilled inline, and reused */
		so->job.ev = m->events.data;
		so->job.n = m->events.len;
		spill_run(so);
		memset(&so->job, 0, sizeof(so->job));
		m->events.len = 0;
		so->mark_pos = 0;
		if (so->job_failed)
			sorter_fail(so, so->sp.why);
		return so->failed ? -1 : 0;
	}
	so->job.ev = m->events.data;
	so->job.n = m->events.len;
	so->job.cap = m->events.cap;
	m->events.data = so->spare.ev;
	m->events.cap = so->spare.cap;
	m->events.len = 0;
	so->mark_pos = 0;
	memset(&so->spare, 0, sizeof(so->spare));
	so->busy = 2;
	if (pthread_create(&so->th, NULL, spill_thread, so) != 0) {
		so->busy = 1; /* no thread: the same work, inline */
		spill_run(so);
	}
	return 0;
}

/* The model's arguments live in a scratch file of their own (util.h,
 * vec_map) once they take more than ARGS_MAP_FROM bytes, so that memory
 * holds only those in use, as for the events; a small trace's stay on the
 * heap and take no room on the disk, and so do all when there is no file.
 * (XRay's call ends, 8 bytes a call, stay on the heap: patched at random
 * as calls return, they would cost more in page faults than they save.) */
enum { ARGS_MAP_FROM = 4 << 20 };

static void map_scratch(struct vec *v, const char *dir)
{
	int fd = spill_tmpfile(dir);

	if (fd >= 0 && vec_map(v, fd, ARGS_MAP_FROM) != 0)
		close(fd);
}

struct sorter *sorter_attach(struct model *m, const char *dir, size_t budget)
{
	struct sorter *so = calloc(1, sizeof(*so));

	if (so == NULL)
		return NULL;
	if (spill_init(&so->sp, dir, "sorted events") != 0) {
		free(so);
		return NULL;
	}
	if (spill_init(&so->side, dir, "sorted context switches") != 0) {
		spill_fini(&so->sp);
		free(so);
		return NULL;
	}
	so->m = m;
	so->budget = budget ? budget : 1;
	rs_spill_to(&m->sched, &so->side, sorter_run_bytes(so));
	map_scratch(&m->args, dir);
	vec_init(&so->runs, sizeof(struct sorter_run));
	vec_init(&so->ssrc, sizeof(struct merge_src *));
	vec_init(&so->hist, sizeof(int64_t));
	m->spill = sorter_spill;
	m->spill_ctx = so;
	m->spill_at = budget ? budget : 1;
	return so;
}

int sorter_failed(struct sorter *so, const char **why)
{
	merge_stop(so); /* asked when matching is over: nothing more is merged */
	spill_wait(so);
	if (!so->failed && (so->sp.failed || so->side.failed)) { /* a stage sharing the file, or m->sched */
		if (why != NULL)
			*why = so->sp.failed ? so->sp.why : so->side.why;
		return 1;
	}
	if (so->failed && why != NULL)
		*why = so->why;
	return so->failed;
}

struct spill *sorter_scratch(struct sorter *so)
{
	return &so->sp;
}

size_t sorter_budget_bytes(const struct sorter *so)
{
	return 2 * so->budget * sizeof(struct mdl_ev); /* the model's array and the one spilled */
}

size_t sorter_run_bytes(const struct sorter *so)
{
	return so->budget * sizeof(struct mdl_ev) / 4; /* 5 MiB by default */
}

/* ---- merging ---------------------------------------------------------- */

/* Unpacks a spilled run's next event into src->head, reading on when
 * fewer bytes than the largest event are left in its buffer; 0, or -1 when
 * a read fails or the run's bytes do not hold its events. */
static int src_next(struct sorter *so, struct merge_src *src)
{
	const uint8_t *p, *end;
	char why[320];
	size_t want;

	if (src->len - src->pos < RUN_EV_MAX && src->bytes_left > 0) {
		memmove(src->buf, src->buf + src->pos, src->len - src->pos);
		src->len -= src->pos;
		src->pos = 0;
		want = src->cap - src->len;
		if (want > src->bytes_left)
			want = (size_t)src->bytes_left;
		/* the slice store may be appending to the file meanwhile */
		if (spill_read_apart(&so->sp, src->buf + src->len, want, src->next, why, sizeof(why)) != 0) {
			sorter_fail(so, why);
			return -1;
		}
		src->next += want;
		src->bytes_left -= want;
		src->len += want;
	}
	p = src->buf + src->pos;
	end = src->buf + src->len;
	if (run_get(&p, end, &src->head) != 0) {
		sorter_fail(so, "the scratch file of sorted events reads back damaged");
		return -1;
	}
	src->pos = (size_t)(p - src->buf);
	src->left--;
	return 0;
}

static int src_before(const struct merge_src *x, const struct merge_src *y, int by_thread)
{
	return ev_before(x->cur, y->cur, by_thread);
}

/* Restores the heap order of h[0 .. n) from position i down. */
static void heap_down(struct merge_src **h, size_t n, size_t i, int by_thread)
{
	struct merge_src *x = h[i];
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && src_before(h[c + 1], h[c], by_thread))
			c++;
		if (!src_before(h[c], x, by_thread))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/*
 * Gives the pages of events already handed out back to the system: slices
 * grow while events are consumed, and without this the peak would hold
 * both. The rest of the array is freed with the model.
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

/* Sets up the merge of the spilled runs and the sorted run in memory;
 * 0, or -1 when out of memory or a read fails. */
static int merge_init(struct sorter *so)
{
	struct sorter_run *runs = so->runs.data;
	size_t i, k = so->runs.len;

	so->src = calloc(k + 1, sizeof(*so->src));
	so->heap = calloc(k + 1, sizeof(*so->heap));
	for (i = 0; i < 2; i++)
		if ((so->outs[i].ev = malloc(SORTER_BATCH * sizeof(struct mdl_ev))) != NULL)
			so->outs[i].cap = SORTER_BATCH;
	if (so->src == NULL || so->heap == NULL || so->outs[0].ev == NULL || so->outs[1].ev == NULL)
		return -1;
	for (i = 0; i < k; i++) {
		if (runs[i].n == 0)
			continue;
		so->src[i].cap = runs[i].bytes < SORTER_READ ? (size_t)runs[i].bytes : SORTER_READ;
		if ((so->src[i].buf = malloc(so->src[i].cap)) == NULL)
			return -1;
		so->src[i].next = runs[i].off;
		so->src[i].bytes_left = runs[i].bytes;
		so->src[i].left = runs[i].n;
		so->src[i].cur = &so->src[i].head; /* unpacked after a zero event */
		if (src_next(so, &so->src[i]) != 0)
			return -1;
		so->heap[so->nheap++] = &so->src[i];
	}
	so->src[k].cur = so->m->events.data;
	so->src[k].end = so->src[k].cur + so->m->events.len;
	if (so->src[k].cur != so->src[k].end)
		so->heap[so->nheap++] = &so->src[k];
	for (i = so->nheap / 2; i-- > 0;)
		heap_down(so->heap, so->nheap, i, so->m->by_thread);
	return 0;
}

int sorter_finish(struct sorter *so)
{
	struct model *m = so->m;
	size_t tail;

	if (spill_wait(so) != 0)
		return -1;
	free(so->spare.ev); /* no spill comes now: its memory goes before the merge's */
	memset(&so->spare, 0, sizeof(so->spare));
	m->spill_at = SIZE_MAX; /* whatever comes now is handed out, not spilled */
	sort_events(m->events.data, m->events.len, m->by_thread);
	if (so->runs.len > 0) {
		/* earlier runs filled the array further than the last one: give
		 * those pages back now rather than with the model */
		tail = m->events.len;
		release_events(m->events.data, m->events.cap, &tail);
		if (merge_init(so) != 0)
			return -1;
		merge_start(so);
	}
	so->finished = 1;
	return 0;
}

/* Nothing spilled: the next batch is a slice of the model's own array. */
static long next_in_place(struct sorter *so, struct mdl_ev **ev)
{
	struct mdl_ev *a = so->m->events.data;
	size_t len = so->m->events.len, i = so->pos, n;

	if (len == 0) /* and maybe no array at all */
		return 0;
	if (i - so->released >= SORTER_BATCH)
		release_events(a, i, &so->released);
	if (i >= len)
		return 0;
	n = len - i < SORTER_BATCH ? len - i : SORTER_BATCH;
	while (i + n < len && a[i + n].ts == a[i + n - 1].ts)
		n++;
	so->pos = i + n;
	*ev = a + i;
	return (long)n;
}

/* Moves the head of the earliest run into the batch, refilling or dropping
 * that run; 0, or -1 when a read fails. */
static int merge_take(struct sorter *so, size_t n)
{
	struct merge_src *s = so->heap[0];

	so->out[n] = *s->cur;
	if (s->buf == NULL ? ++s->cur == s->end : s->left == 0) {
		s->gone = 1;
		so->heap[0] = so->heap[--so->nheap];
	}
	else if (s->buf != NULL && src_next(so, s) != 0)
		return -1;
	if (so->nheap > 1)
		heap_down(so->heap, so->nheap, 0, so->m->by_thread);
	return 0;
}

/* Spilled runs: merges the next batch into b; its events, 0 after the
 * last, -1 when out of memory or a read fails. */
static long merge_batch(struct sorter *so, struct ev_array *b)
{
	struct merge_src *mem = &so->src[so->runs.len];
	struct mdl_ev *grown;
	size_t n = 0;

	so->out = b->ev;
	so->out_cap = b->cap;
	if (mem->buf == NULL && mem->cur != NULL)
		release_events(so->m->events.data, (size_t)(mem->cur - (struct mdl_ev *)so->m->events.data),
			       &so->released);
	while (so->nheap > 0 && (n < SORTER_BATCH || so->heap[0]->cur->ts == so->out[n - 1].ts)) {
		if (n == so->out_cap) {
			if ((grown = realloc(so->out, 2 * so->out_cap * sizeof(*grown))) == NULL)
				return -1;
			b->ev = so->out = grown;
			b->cap = so->out_cap *= 2;
		}
		if (merge_take(so, n++) != 0)
			return -1;
	}
	return (long)n;
}

/* The merge thread: fills the batches in turn, each once the caller has
 * given it back, until the end, a failure or sorter_free(). */
static void *merge_main(void *ctx)
{
	struct sorter *so = ctx;
	int k = 0;
	long n;

	for (;;) {
		pthread_mutex_lock(&so->mmu);
		while (so->ready[k] && !so->stop)
			pthread_cond_wait(&so->mcv, &so->mmu);
		if (so->stop) {
			pthread_mutex_unlock(&so->mmu);
			break;
		}
		pthread_mutex_unlock(&so->mmu);
		n = merge_batch(so, &so->outs[k]);
		pthread_mutex_lock(&so->mmu);
		so->got[k] = n;
		so->ready[k] = 1;
		pthread_cond_broadcast(&so->mcv);
		pthread_mutex_unlock(&so->mmu);
		if (n <= 0)
			break;
		k ^= 1;
	}
	heap_release(); /* what the merge held (util.h) */
	return NULL;
}

/* Starts the merge thread; without one, sorter_next() merges itself. */
static void merge_start(struct sorter *so)
{
	so->held = -1;
	if (pthread_mutex_init(&so->mmu, NULL) != 0)
		return;
	if (pthread_cond_init(&so->mcv, NULL) != 0) {
		pthread_mutex_destroy(&so->mmu);
		return;
	}
	if (pthread_create(&so->mth, NULL, merge_main, so) != 0) {
		pthread_cond_destroy(&so->mcv);
		pthread_mutex_destroy(&so->mmu);
		return;
	}
	so->merge_running = 1;
}

/* Spilled runs: gives back the batch held, takes the next one. */
static long next_merged(struct sorter *so, struct mdl_ev **ev)
{
	long n;

	if (!so->merge_running) { /* merged here, into one batch */
		if (so->failed)
			return -1;
		n = merge_batch(so, &so->outs[0]);
		*ev = so->outs[0].ev;
		return n;
	}
	pthread_mutex_lock(&so->mmu);
	if (so->held >= 0) {
		so->ready[so->held] = 0;
		so->held = -1;
		pthread_cond_broadcast(&so->mcv);
	}
	while (!so->ready[so->cons])
		pthread_cond_wait(&so->mcv, &so->mmu);
	n = so->got[so->cons]; /* the end and a failure stay ready: later calls see them too */
	if (n > 0) {
		*ev = so->outs[so->cons].ev;
		so->held = so->cons;
		so->cons ^= 1;
	}
	pthread_mutex_unlock(&so->mmu);
	return n;
}

/* The model's arguments are written once and read back about in the order
 * their events come, so past every budget of events their pages go back to
 * the page cache (vec_map, sorter_attach). */
static void drop_pages(struct sorter *so, long n)
{
	if (n <= 0 || (so->dropped += (size_t)n) < so->budget)
		return;
	vec_drop(&so->m->args);
	so->dropped = 0;
}

/* ---- streaming (sorter.h, the watermark) -------------------------------- */

void sorter_window(struct sorter *so, uint64_t bytes)
{
	if (so->slots == NULL && (so->slots = calloc(SLOTS + 1, sizeof(*so->slots))) == NULL)
		return; /* no window: nothing is handed on before the last release */
	so->window = bytes ? bytes : 1;
	so->slot_bytes = so->window / SLOTS ? so->window / SLOTS : 1;
}

uint64_t sorter_slot_bytes(const struct sorter *so)
{
	return so->window ? so->slot_bytes : 0;
}

/* Notes min as the lowest ts of slot no in the history, whose grain
 * doubles (two entries become one) whenever it would pass HIST_MAX
 * entries. */
static void hist_note(struct sorter *so, uint64_t no, int64_t min)
{
	size_t i, idx, max = sorter_test_hist_max ? sorter_test_hist_max : HIST_MAX;
	int64_t *h;

	while ((idx = (size_t)(no >> so->hist_shift)) >= max) {
		h = so->hist.data;
		for (i = 0; i < so->hist.len; i += 2)
			h[i / 2] = i + 1 < so->hist.len && h[i + 1] < h[i] ? h[i + 1] : h[i];
		so->hist.len = (so->hist.len + 1) / 2;
		so->hist_shift++;
	}
	while (so->hist.len <= idx) {
		if ((h = vec_push(&so->hist)) == NULL)
			return; /* no history: sorter_late_window says 0, and the window doubles */
		*h = INT64_MAX;
	}
	h = so->hist.data;
	if (min < h[idx])
		h[idx] = min;
}

void sorter_mark(struct sorter *so, uint64_t end)
{
	struct ev_slot *sl;
	uint64_t no;

	if (so->window == 0 || end == 0)
		return;
	fold_marks(so);
	so->mark_end = end;
	if (!so->pend_has)
		return;
	no = (end - 1) / so->slot_bytes;
	sl = &so->slots[no % (SLOTS + 1)];
	if (!sl->has || sl->no != no) {
		sl->no = no;
		sl->min = so->pend_min;
		sl->has = 1;
	} else if (so->pend_min < sl->min) {
		sl->min = so->pend_min;
	}
	hist_note(so, no, so->pend_min);
	so->pend_has = 0;
}

/* The rule of sorter.h: the lowest ts among the events whose records end
 * in the last SLOTS + 1 slots of the input (the current one and the SLOTS
 * before: B to B + B / SLOTS bytes); with none there, the highest ts
 * decoded; INT64_MIN when nothing is known. */
static int64_t watermark(const struct sorter *so)
{
	uint64_t cur;
	int64_t w = 0;
	int has = 0, i;

	if (so->window == 0 || so->mark_end == 0)
		return INT64_MIN;
	cur = (so->mark_end - 1) / so->slot_bytes;
	for (i = 0; i <= SLOTS; i++) {
		const struct ev_slot *sl = &so->slots[i];

		if (!sl->has || sl->no > cur || sl->no + SLOTS < cur)
			continue;
		if (!has || sl->min < w)
			w = sl->min;
		has = 1;
	}
	if (so->pend_has && (!has || so->pend_min < w)) /* decoded since the last mark */
		w = so->pend_min, has = 1;
	if (!has)
		return so->have_max ? so->ts_max : INT64_MIN;
	if (sorter_test_skew > 0 && w < INT64_MAX - sorter_test_skew)
		w += sorter_test_skew;
	return w;
}

/* The runs spilled since the last release join the merge; 0, or -1. */
static int stream_take_runs(struct sorter *so)
{
	struct sorter_run *runs = so->runs.data;
	struct merge_src *src, **slot;

	for (; so->runs_taken < so->runs.len; so->runs_taken++) {
		const struct sorter_run *r = &runs[so->runs_taken];

		if (r->n == 0)
			continue;
		if ((src = calloc(1, sizeof(*src))) == NULL)
			return -1;
		if ((slot = vec_push(&so->ssrc)) == NULL) {
			free(src);
			return -1;
		}
		*slot = src;
		src->cap = r->bytes < SORTER_READ ? (size_t)r->bytes : SORTER_READ;
		if ((src->buf = malloc(src->cap)) == NULL)
			return -1;
		src->next = r->off;
		src->bytes_left = r->bytes;
		src->left = r->n;
		src->cur = &src->head;
		if (src_next(so, src) != 0)
			return -1;
	}
	return 0;
}

/*
 * The events kept and those the model decoded since (sorted) become the
 * one sorted array kept, in place: what was handed on is dropped from its
 * front (once it is the larger part), the array grows by doubling, and
 * the new events are merged in from the back, so that events newer than
 * every one kept (the common case) cost a copy each and the kept ones
 * none. 0, or -1 when out of memory.
 */
static int stream_take_events(struct sorter *so)
{
	struct model *m = so->m;
	const struct mdl_ev *nv = m->events.data;
	size_t q = m->events.len, c = 0, r = 0, cap, i, j, out;
	struct mdl_ev *a = so->kept.ev, *grown;

	if (q == 0)
		return 0;
	if (a != NULL) {
		c = (size_t)(so->mem.cur - a);
		r = (size_t)(so->mem.end - so->mem.cur);
	}
	if (c > 0 && (c >= r || c + r + q > so->kept.cap)) {
		memmove(a, a + c, r * sizeof(*a));
		c = 0;
	}
	if (c + r + q > so->kept.cap) {
		cap = so->kept.cap ? so->kept.cap : 4096;
		while (cap < r + q)
			cap *= 2;
		if ((grown = realloc(a, cap * sizeof(*a))) == NULL)
			return -1;
		so->kept.ev = a = grown;
		so->kept.cap = cap;
	}
	for (i = c + r, j = q, out = c + r + q; j > 0;) /* out > i: never overtakes */
		a[--out] = i > c && ev_before(&nv[j - 1], &a[i - 1], 0) ? a[--i] : nv[--j];
	so->kept.n = c + r + q;
	so->mem.cur = a + c;
	so->mem.end = a + c + r + q;
	so->mem.gone = 0;
	m->events.len = 0;
	so->mark_pos = 0;
	return 0;
}

/* The heap of the merge, remade from the sources with events left: the
 * runs not used up (those used up are freed) and the array held. 0, or -1. */
static int stream_heap(struct sorter *so)
{
	struct merge_src **v = so->ssrc.data, **h;
	size_t i, k = 0;

	for (i = 0; i < so->ssrc.len; i++) {
		if (v[i]->gone) {
			free(v[i]->buf);
			free(v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	so->ssrc.len = k;
	if ((h = realloc(so->heap, (k + 1) * sizeof(*h))) == NULL)
		return -1;
	so->heap = h;
	if (k > 0)
		memcpy(h, v, k * sizeof(*h));
	so->nheap = k;
	if (so->mem.cur != NULL && so->mem.cur != so->mem.end)
		h[so->nheap++] = &so->mem;
	for (i = so->nheap / 2; i-- > 0;)
		heap_down(h, so->nheap, i, 0);
	return 0;
}

/*
 * The window that keeps every event of ts above t from being handed on
 * before the input reaches mark_end (sorter_late_window): the bytes from
 * the start of the last part of the input, whole before the last release,
 * where an event of ts t or lower ends (the history's grain, rounded
 * down) up to mark_end. With it, the watermark stays at or below t until
 * then. The whole input so far when no event of ts t or lower came before
 * the last release.
 */
static uint64_t late_window(const struct sorter *so, int64_t t)
{
	const int64_t *h = so->hist.data;
	uint64_t grain = so->slot_bytes << so->hist_shift;
	size_t i = (size_t)(so->rel_end / grain);

	if (so->hist.len == 0 && so->rel_end > 0)
		return 0; /* no history kept (out of memory) */
	if (i > so->hist.len)
		i = so->hist.len;
	while (i-- > 0)
		if (h[i] <= t)
			return so->mark_end - (uint64_t)i * grain;
	return so->mark_end;
}

int sorter_release(struct sorter *so, int final, uint64_t *late)
{
	struct model *m = so->m;
	const struct mdl_ev *ev;
	const struct sorter_run *runs;
	size_t i, n = 0;
	int64_t late_min = INT64_MAX;

	*late = 0;
	if (so->finished && !so->streaming) /* sorter_finish came first */
		return -1;
	if (spill_wait(so) != 0)
		return -1;
	ev = m->events.data; /* after the spill: it may have added a run, or swapped the events */
	runs = so->runs.data;
	fold_marks(so);
	sort_events(m->events.data, m->events.len, 0);
	for (i = 0; so->have_last && i < m->events.len && ev[i].ts <= so->last_ts; i++)
		n++;
	if (n > 0)
		late_min = ev[0].ts;
	for (i = so->runs_taken; i < so->runs.len; i++) {
		n += runs[i].late;
		if (runs[i].late > 0 && runs[i].late_min < late_min)
			late_min = runs[i].late_min;
	}
	so->late += n;
	if (n > 0 && !sorter_test_no_late) {
		*late = n;
		so->late_need = late_window(so, late_min);
		return 1;
	}
	if (stream_take_runs(so) != 0 || stream_take_events(so) != 0 || stream_heap(so) != 0) {
		sorter_fail(so, "out of memory ordering the events");
		return -1;
	}
	so->streaming = so->finished = 1;
	so->final = final;
	so->rel_end = so->mark_end;
	if (final)
		m->spill_at = SIZE_MAX; /* nothing more comes */
	so->limit = final ? INT64_MAX : watermark(so);
	return 0;
}

uint64_t sorter_late_window(const struct sorter *so)
{
	uint64_t max = sorter_test_widen_max ? sorter_test_widen_max : SORTER_WIDEN_MAX;

	return so->late_need <= max ? so->late_need : 0;
}

/* Streaming: the next batch of the events below the watermark. */
static long next_stream(struct sorter *so, struct mdl_ev **ev)
{
	struct ev_array *b = &so->outs[0];
	struct mdl_ev *grown;
	size_t n = 0;

	if (so->failed)
		return -1;
	if (b->ev == NULL && (b->ev = malloc(SORTER_BATCH * sizeof(*b->ev))) != NULL)
		b->cap = SORTER_BATCH;
	if (b->ev == NULL)
		return -1;
	so->out = b->ev;
	so->out_cap = b->cap;
	while (so->nheap > 0) {
		const struct mdl_ev *h = so->heap[0]->cur;

		if ((n >= SORTER_BATCH && h->ts != so->out[n - 1].ts) || (!so->final && h->ts >= so->limit))
			break; /* a batch ends at a change of ts, all of it below the limit */
		if (n == so->out_cap) {
			if ((grown = realloc(so->out, 2 * so->out_cap * sizeof(*grown))) == NULL)
				return -1;
			b->ev = so->out = grown;
			b->cap = so->out_cap *= 2;
		}
		if (merge_take(so, n++) != 0)
			return -1;
	}
	if (n > 0) {
		so->last_ts = so->out[n - 1].ts;
		so->have_last = 1;
		so->handed += n;
	}
	*ev = b->ev;
	return (long)n;
}

int sorter_streaming(const struct sorter *so)
{
	return so->streaming;
}

uint64_t sorter_handed(const struct sorter *so)
{
	return so->handed;
}

/* Frees the streaming merge's sources and the array held. */
static void stream_free(struct sorter *so)
{
	size_t i;

	for (i = 0; i < so->ssrc.len; i++) {
		struct merge_src *src = *VEC_AT(&so->ssrc, struct merge_src *, i);

		free(src->buf);
		free(src);
	}
	so->ssrc.len = 0;
	free(so->kept.ev);
	memset(&so->kept, 0, sizeof(so->kept));
	so->mem.cur = so->mem.end = NULL;
}

long sorter_next(struct sorter *so, struct mdl_ev **ev)
{
	long n;

	if (!so->finished)
		return -1;
	if (so->streaming)
		n = next_stream(so, ev);
	else if (so->runs.len > 0)
		n = next_merged(so, ev);
	else
		n = so->failed ? -1 : next_in_place(so, ev);
	drop_pages(so, n);
	return n;
}

/* Ends the merge thread, if it runs. */
static void merge_stop(struct sorter *so)
{
	if (!so->merge_running)
		return;
	pthread_mutex_lock(&so->mmu);
	so->stop = 1;
	pthread_cond_broadcast(&so->mcv);
	pthread_mutex_unlock(&so->mmu);
	pthread_join(so->mth, NULL);
	pthread_cond_destroy(&so->mcv);
	pthread_mutex_destroy(&so->mmu);
	so->merge_running = 0;
}

void sorter_done(struct sorter *so)
{
	size_t i;

	merge_stop(so);
	if (so->src != NULL)
		for (i = 0; i < so->runs.len; i++) {
			free(so->src[i].buf);
			so->src[i].buf = NULL;
		}
	free(so->outs[0].ev);
	free(so->outs[1].ev);
	so->outs[0].ev = so->outs[1].ev = NULL;
	so->outs[0].cap = so->outs[1].cap = 0;
	stream_free(so);
}

void sorter_free(struct sorter *so)
{
	size_t i;

	if (so == NULL)
		return;
	merge_stop(so);
	spill_wait(so);
	free(so->spare.ev);
	free(so->pack);
	if (so->m->spill_ctx == so) {
		so->m->spill = NULL;
		so->m->spill_ctx = NULL;
		so->m->spill_at = 0;
	}
	if (so->src != NULL)
		for (i = 0; i < so->runs.len; i++)
			free(so->src[i].buf);
	free(so->src);
	free(so->heap);
	free(so->outs[0].ev);
	free(so->outs[1].ev);
	stream_free(so);
	vec_fini(&so->ssrc);
	vec_fini(&so->hist);
	free(so->slots);
	vec_fini(&so->runs);
	spill_fini(&so->sp);
	spill_fini(&so->side);
	free(so);
}
