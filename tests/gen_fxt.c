/*
 * gen_fxt: writes a realistic synthetic FXT archive, deterministically from
 * a seed, for the unit tests, the fuzz seeds, the integration tests and the
 * benchmarks.
 *
 *   gen_fxt [--events N] [--threads T] [--seed S] [--tps TPS] [--args K] [--big-endian] OUT.fxt
 *
 * The archive opens like a real one: magic, provider info, initialization,
 * string records, thread records and kernel objects naming every process
 * and thread (plus a few userspace objects for pointer arguments). Then T
 * simulated threads, spread over several processes, act in global
 * timestamp order: nested duration begin/end (up to MAX_DEPTH deep),
 * complete events, instants, two counter series, flows across threads
 * inside slices, async operations, arguments of every type on about a
 * quarter of the events (with --args K, K of them, 1 to 3, on every event
 * that may carry some: an argument-heavy archive), and now and then log
 * records and context
 * switches. Like a real provider, each thread's "whole-run" root slice
 * begins at time 0 but its begin event is written at the very end of the
 * file, so the archive is not in timestamp order.
 *
 * --no-roots leaves those root slices out (an archive in time order).
 *
 * Exactly N event records (type 4) are written: the generator keeps a
 * reserve of the events it still owes (an end for every open slice, flow
 * and async operation, and the root begins and ends) and stops opening
 * things when the budget is used. Root slices are left out when N < 4 T.
 * With more than 255 threads, threads 254 and up use inline thread refs
 * (even) or share index 255, re-registered whenever its owner changes (odd).
 *
 * Prints "events=N bytes=B" on success; exits 1 on I/O error, 2 on usage.
 */
#include "fxt_writer.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_DEPTH = 6,      /* open non-root slices per thread */
	MAX_PENDING = 64,   /* open flows; open async operations */
	NCPU = 8,           /* simulated CPUs for context switches */
	NUSER_OBJ = 8,      /* userspace objects, for pointer arguments */
	PROVIDER_ID = 1,
	COUNTER_MEM = 1,    /* counter ids of the two series */
	COUNTER_CPU = 2,
	SHARED_SLOT = 255,  /* thread index shared by threads 255, 257, ... */
	MAX_THREADS = 65535
};

static const char *const g_strings[] = {
	/* categories */
	"gfx", "input", "io", "net", "app", "sched", "async", "memory",
	/* slice names */
	"Frame", "Render", "Layout", "Paint", "Composite", "DecodeImage",
	"ReadFile", "WriteFile", "Compile", "Parse", "HandleInput", "Dispatch",
	"Wait", "Lock", "GC", "Serialize", "Deserialize", "RPC", "Send", "Recv",
	"Flush", "Commit", "Present", "Upload", "Hash", "Sort", "Lookup",
	"Allocate", "Poll", "Callback",
	/* other event names */
	"whole-run", "message", "AsyncLoad", "memory_usage", "cpu_load", "tick",
	/* argument names */
	"count", "size", "ratio", "path", "object", "handle", "ok", "payload",
	"note", "process", "allocated", "free", "load", "elapsed",
	"incoming_weight",
};

/* String indices: position in g_strings plus one. */
enum {
	S_CAT0 = 1,
	NCAT = 8,
	S_NAME0 = S_CAT0 + NCAT,
	NNAME = 30,
	S_WHOLE_RUN = S_NAME0 + NNAME,
	S_MESSAGE, S_ASYNC_LOAD, S_MEM_USAGE, S_CPU_LOAD, S_TICK,
	S_A_COUNT, S_A_SIZE, S_A_RATIO, S_A_PATH, S_A_OBJECT, S_A_HANDLE,
	S_A_OK, S_A_PAYLOAD, S_A_NOTE, S_A_PROCESS, S_A_ALLOCATED, S_A_FREE,
	S_A_LOAD, S_A_ELAPSED, S_A_IN_WEIGHT,
	S_END
};
_Static_assert(sizeof g_strings / sizeof g_strings[0] == S_END - 1,
	       "g_strings and the S_ indices disagree");

enum { CAT_APP = S_CAT0 + 4, CAT_SCHED = S_CAT0 + 5, CAT_ASYNC = S_CAT0 + 6, CAT_MEMORY = S_CAT0 + 7 };

struct opts {
	uint64_t events;   /* event records to write */
	uint64_t threads;  /* simulated threads, 1..MAX_THREADS */
	uint64_t seed;     /* PRNG seed; same seed, same bytes */
	uint64_t tps;      /* ticks per second in the initialization record */
	int big_endian;    /* write words big-endian */
	uint64_t args;     /* 0, or arguments on every event that may carry some */
	const char *out;   /* output path */
	int no_roots;      /* no whole-run root slices: the archive is in time order */
};

struct gthread {
	uint64_t pid, tid;         /* koids */
	uint64_t next;             /* ticks: time of this thread's next action */
	unsigned depth;            /* open non-root slices, <= MAX_DEPTH */
	uint16_t stack[MAX_DEPTH]; /* slice name id of each open slice (0 = inline name) */
};

/* An open flow or async operation: its correlation id and the thread that began it. */
struct pending {
	uint64_t id;
	unsigned origin;
};

struct gen {
	struct fxtw w;
	uint64_t rng;            /* splitmix64 state */
	double scale;            /* ticks per nanosecond */
	struct gthread *th;      /* nth threads */
	unsigned nth;
	unsigned nproc;          /* thread i belongs to process i % nproc */
	unsigned *heap;          /* thread indices, min-heap on (next, index) */
	uint64_t target;         /* event records to write */
	uint64_t emitted;        /* event records written */
	uint64_t reserve;        /* event records still owed; emitted + reserve <= target */
	int roots;               /* whether threads get a whole-run root slice */
	unsigned args;           /* 0, or arguments on every event (--args) */
	struct pending flows[MAX_PENDING];
	unsigned nflows;
	struct pending asyncs[MAX_PENDING];
	unsigned nasyncs;
	uint64_t next_id;        /* last flow or async correlation id used */
	unsigned slot_owner;     /* thread registered at SHARED_SLOT, or UINT_MAX */
	uint64_t cpu_tid[NCPU];  /* thread running on each CPU, 0 = idle */
	int64_t mem;             /* counter series state */
	double load;
};

static const uint8_t g_blob[24] = "\x01\x02\x03\x04payload-bytes\xfe\xff";

/* ---- randomness and time ---------------------------------------------- */

static uint64_t rng_next(struct gen *g)
{
	uint64_t z = (g->rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static unsigned rng_below(struct gen *g, unsigned n)
{
	return (unsigned)(rng_next(g) % n);
}

/* Nanoseconds to ticks, at least one tick. */
static uint64_t ticks(const struct gen *g, uint64_t ns)
{
	uint64_t t = (uint64_t)((double)ns * g->scale);

	return t ? t : 1;
}

static uint64_t gap(struct gen *g)
{
	return ticks(g, 200 + rng_below(g, 20000));
}

/* ---- scheduling of simulated threads ----------------------------------- */

static int heap_less(const struct gen *g, unsigned a, unsigned b)
{
	uint64_t ta = g->th[a].next, tb = g->th[b].next;

	return ta < tb || (ta == tb && a < b);
}

static void heap_down(struct gen *g, unsigned i)
{
	unsigned n = g->nth, c, tmp;

	for (; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && heap_less(g, g->heap[c + 1], g->heap[c]))
			c++;
		if (!heap_less(g, g->heap[c], g->heap[i]))
			break;
		tmp = g->heap[i];
		g->heap[i] = g->heap[c];
		g->heap[c] = tmp;
	}
}

static void heap_build(struct gen *g)
{
	unsigned i;

	for (i = 0; i < g->nth; i++)
		g->heap[i] = i;
	for (i = g->nth / 2; i-- > 0;)
		heap_down(g, i);
}

/* ---- refs and emission -------------------------------------------------- */

/* The thread ref for thread t; may first write a thread record. */
static struct fxtw_thr thr_ref(struct gen *g, unsigned t)
{
	const struct gthread *th = &g->th[t];

	if (g->nth <= 255 || t < 254)
		return FXTW_TIDX(t + 1);
	if (t % 2 == 0)
		return FXTW_TINL(th->pid, th->tid);
	if (g->slot_owner != t) {
		fxtw_thread(&g->w, SHARED_SLOT, th->pid, th->tid);
		g->slot_owner = t;
	}
	return FXTW_TIDX(SHARED_SLOT);
}

static struct fxtw_str slice_name(uint16_t id)
{
	return id ? FXTW_IDX(id) : FXTW_INL("inline_work");
}

static struct fxtw_str slice_cat(uint16_t id)
{
	return FXTW_IDX(S_CAT0 + (id ? id % 6 : 4));
}

/* Writes one event record on thread t and counts it. extra may be NULL. */
static void ev(struct gen *g, unsigned evtype, unsigned t, struct fxtw_str cat,
	       struct fxtw_str name, uint64_t ts, const struct fxtw_arg *args,
	       unsigned nargs, const uint64_t *extra)
{
	struct fxtw_thr th = thr_ref(g, t);

	fxtw_event(&g->w, evtype, th, cat, name, ts, args, nargs, extra, extra ? 1 : 0);
	g->emitted++;
}

static uint64_t budget_left(const struct gen *g)
{
	return g->target - g->emitted - g->reserve;
}

/* ---- arguments ------------------------------------------------------------ */

static struct fxtw_arg random_arg(struct gen *g, const char *path)
{
	switch (rng_below(g, 12)) {
	case 0: return fxtw_arg_i32(FXTW_IDX(S_A_COUNT), (int32_t)rng_below(g, 2000) - 1000);
	case 1: return fxtw_arg_u32(FXTW_IDX(S_A_SIZE), (uint32_t)rng_next(g));
	case 2: return fxtw_arg_i64(FXTW_IDX(S_A_ELAPSED), -(int64_t)(rng_next(g) >> 20));
	case 3: return fxtw_arg_u64(FXTW_IDX(S_A_SIZE), rng_next(g) | UINT64_C(1) << 40);
	case 4: return fxtw_arg_double(FXTW_IDX(S_A_RATIO), rng_below(g, 100000) / 1000.0);
	case 5: return fxtw_arg_str(FXTW_IDX(S_A_PATH), FXTW_INL(path));
	case 6: return fxtw_arg_str(FXTW_IDX(S_A_NOTE), FXTW_IDX(S_NAME0 + rng_below(g, NNAME)));
	case 7: return fxtw_arg_ptr(FXTW_IDX(S_A_OBJECT), UINT64_C(0x7f0000001000) + 0x40 * rng_below(g, NUSER_OBJ));
	case 8: return fxtw_arg_koid(FXTW_IDX(S_A_HANDLE), g->th[rng_below(g, g->nth)].tid);
	case 9: return fxtw_arg_bool(FXTW_IDX(S_A_OK), (int)rng_below(g, 2));
	case 10: return fxtw_arg_null(FXTW_INL("marker"));
	default:
		if (rng_below(g, 8) == 0)
			return fxtw_arg_blob(FXTW_IDX(S_A_PAYLOAD), g_blob, 5 + rng_below(g, 19));
		return fxtw_arg_i32(FXTW_INL("inline_count"), (int32_t)rng_below(g, 100));
	}
}

/* Fills args (room for 3) for about a quarter of the events (every one with
 * --args); returns the count.
 * path: OUT: buffer for an inline string value, must outlive the record. */
static unsigned random_args(struct gen *g, struct fxtw_arg *args, char *path, size_t pathsz)
{
	unsigned n, k;

	if (g->args == 0 && rng_below(g, 4) != 0)
		return 0;
	snprintf(path, pathsz, "/data/file%u.bin", rng_below(g, 1000));
	n = g->args ? g->args : 1 + rng_below(g, 3);
	for (k = 0; k < n; k++)
		args[k] = random_arg(g, path);
	return n;
}

/* ---- actions: each writes records for thread t at time now ---------------- */

static void slice_end(struct gen *g, unsigned t, uint64_t now)
{
	struct gthread *th = &g->th[t];
	uint16_t id = th->stack[--th->depth];

	ev(g, 3, t, slice_cat(id), slice_name(id), now, NULL, 0, NULL);
	g->reserve--;
}

static void remove_pending(struct pending *p, unsigned *n, unsigned i)
{
	p[i] = p[--*n];
}

/* Steps or ends a flow begun on another thread; returns 0 if there was none. */
static int flow_next(struct gen *g, unsigned t, uint64_t now)
{
	unsigned k, i, start;

	if (!g->nflows)
		return 0;
	start = rng_below(g, g->nflows);
	for (k = 0; k < g->nflows; k++) {
		i = (start + k) % g->nflows;
		if (g->flows[i].origin != t)
			break;
	}
	if (k == g->nflows)
		return 0;
	if (rng_below(g, 10) < 4 && budget_left(g) >= 1) {
		ev(g, 9, t, FXTW_IDX(CAT_APP), FXTW_IDX(S_MESSAGE), now, NULL, 0, &g->flows[i].id);
		return 1;
	}
	ev(g, 10, t, FXTW_IDX(CAT_APP), FXTW_IDX(S_MESSAGE), now, NULL, 0, &g->flows[i].id);
	remove_pending(g->flows, &g->nflows, i);
	g->reserve--;
	return 1;
}

static void slice_begin(struct gen *g, unsigned t, uint64_t now)
{
	struct gthread *th = &g->th[t];
	struct fxtw_arg args[3];
	char path[32];
	unsigned nargs = random_args(g, args, path, sizeof path);
	uint16_t id = rng_below(g, 50) ? (uint16_t)(S_NAME0 + rng_below(g, NNAME)) : 0;

	th->stack[th->depth++] = id;
	ev(g, 2, t, slice_cat(id), slice_name(id), now, args, nargs, NULL);
	g->reserve++;
	if (rng_below(g, 10) < 3)
		flow_next(g, t, now);
}

/* Returns the duration in ticks. */
static uint64_t complete(struct gen *g, unsigned t, uint64_t now)
{
	struct fxtw_arg args[3];
	char path[32];
	unsigned nargs = random_args(g, args, path, sizeof path);
	uint16_t id = (uint16_t)(S_NAME0 + rng_below(g, NNAME));
	uint64_t end = now + ticks(g, 500 + rng_below(g, 200000));

	ev(g, 4, t, slice_cat(id), slice_name(id), now, args, nargs, &end);
	return end - now;
}

static void instant(struct gen *g, unsigned t, uint64_t now)
{
	struct fxtw_arg args[3];
	char path[32];
	unsigned nargs = random_args(g, args, path, sizeof path);
	uint16_t id = rng_below(g, 3) ? S_TICK : (uint16_t)(S_NAME0 + rng_below(g, NNAME));

	ev(g, 0, t, slice_cat(id), FXTW_IDX(id), now, args, nargs, NULL);
}

static void counter(struct gen *g, unsigned t, uint64_t now)
{
	struct fxtw_arg args[2];
	uint64_t id;

	if (rng_below(g, 2)) {
		g->mem += (int64_t)rng_below(g, 1 << 20) - (1 << 19);
		if (g->mem < 0)
			g->mem = -g->mem;
		args[0] = fxtw_arg_i64(FXTW_IDX(S_A_ALLOCATED), g->mem);
		args[1] = fxtw_arg_i32(FXTW_IDX(S_A_FREE), (int32_t)rng_below(g, 1 << 30));
		id = COUNTER_MEM;
		ev(g, 1, t, FXTW_IDX(CAT_MEMORY), FXTW_IDX(S_MEM_USAGE), now, args, 2, &id);
		return;
	}
	g->load += (rng_below(g, 2001) - 1000.0) / 10000.0;
	if (g->load < 0.0)
		g->load = -g->load;
	if (g->load > 1.0)
		g->load = 2.0 - g->load;
	args[0] = fxtw_arg_double(FXTW_IDX(S_A_LOAD), g->load);
	id = COUNTER_CPU;
	ev(g, 1, t, FXTW_IDX(CAT_MEMORY), FXTW_IDX(S_CPU_LOAD), now, args, 1, &id);
}

static void flow_begin(struct gen *g, unsigned t, uint64_t now)
{
	struct pending *p = &g->flows[g->nflows++];

	p->id = ++g->next_id;
	p->origin = t;
	ev(g, 8, t, FXTW_IDX(CAT_APP), FXTW_IDX(S_MESSAGE), now, NULL, 0, &p->id);
	g->reserve++;
}

static void async_begin(struct gen *g, unsigned t, uint64_t now)
{
	struct pending *p = &g->asyncs[g->nasyncs++];
	struct fxtw_arg args[3];
	char path[32];
	unsigned nargs = random_args(g, args, path, sizeof path);

	p->id = ++g->next_id;
	p->origin = t;
	ev(g, 5, t, FXTW_IDX(CAT_ASYNC), FXTW_IDX(S_ASYNC_LOAD), now, args, nargs, &p->id);
	g->reserve++;
}

/* An async instant (end = 0) or end (end = 1) of a random open operation. */
static void async_next(struct gen *g, unsigned t, uint64_t now, int end)
{
	unsigned i = rng_below(g, g->nasyncs);
	uint64_t id = g->asyncs[i].id;

	/* an operation lives in one process: (pid, category, name, id) */
	if (g->th[t].pid != g->th[g->asyncs[i].origin].pid)
		t = g->asyncs[i].origin;
	ev(g, end ? 7 : 6, t, FXTW_IDX(CAT_ASYNC), FXTW_IDX(S_ASYNC_LOAD), now, NULL, 0, &id);
	if (!end)
		return;
	remove_pending(g->asyncs, &g->nasyncs, i);
	g->reserve--;
}

static void flow_or_instant(struct gen *g, unsigned t, uint64_t now)
{
	if (!flow_next(g, t, now))
		instant(g, t, now);
}

/* Log records and context switches: not event records, not counted. */
static void side_records(struct gen *g, unsigned t, uint64_t now)
{
	const struct gthread *th = &g->th[t];
	unsigned cpu = t % NCPU, r = rng_below(g, 1000);
	struct fxtw_arg arg;
	char msg[64];

	if (r < 3) {
		snprintf(msg, sizeof msg, "frame %u presented %u us late",
			 rng_below(g, 100000), rng_below(g, 5000));
		fxtw_log(&g->w, thr_ref(g, t), now, msg);
	}
	if (r >= 25 || g->cpu_tid[cpu] == th->tid)
		return;
	if (r < 10)
		fxtw_wakeup(&g->w, (uint16_t)cpu, now, th->tid, NULL, 0);
	arg = fxtw_arg_i32(FXTW_IDX(S_A_IN_WEIGHT), (int32_t)rng_below(g, 64));
	fxtw_context_switch(&g->w, (uint16_t)cpu, 2 + rng_below(g, 2), now,
			    g->cpu_tid[cpu], th->tid, &arg, r % 2);
	g->cpu_tid[cpu] = th->tid;
}

/* Writes what thread t does at time now; returns ticks it stays busy. */
static uint64_t act(struct gen *g, unsigned t, uint64_t now)
{
	unsigned d = g->th[t].depth, r = rng_below(g, 1000);
	uint64_t left = budget_left(g);

	side_records(g, t, now);
	if (d == MAX_DEPTH || (d > 0 && r < 150 + 60 * d)) {
		slice_end(g, t, now);
		return 0;
	}
	r = rng_below(g, 1000);
	if (r < 400 && left >= 2)
		slice_begin(g, t, now);
	else if (r < 580)
		return complete(g, t, now);
	else if (r < 640)
		counter(g, t, now);
	else if (r < 690 && left >= 2 && d > 0 && g->nflows < MAX_PENDING)
		flow_begin(g, t, now);
	else if (r < 760 && d > 0 && g->nflows)
		flow_or_instant(g, t, now);
	else if (r < 800 && left >= 2 && g->nasyncs < MAX_PENDING)
		async_begin(g, t, now);
	else if (r < 880 && g->nasyncs)
		async_next(g, t, now, r >= 820);
	else
		instant(g, t, now);
	return 0;
}

/* ---- archive layout --------------------------------------------------------- */

static void write_kernel_objects(struct gen *g)
{
	struct fxtw_arg arg;
	char name[32];
	unsigned i;

	for (i = 0; i < g->nproc; i++) {
		snprintf(name, sizeof name, i ? "app-%u" : "compositor", i);
		fxtw_kernel_object(&g->w, 1, FXTW_INL(name), g->th[i].pid, NULL, 0);
	}
	for (i = 0; i < g->nth; i++) {
		snprintf(name, sizeof name, i < g->nproc ? "main" : "worker-%u", i / g->nproc);
		arg = fxtw_arg_koid(FXTW_IDX(S_A_PROCESS), g->th[i].pid);
		fxtw_kernel_object(&g->w, 2, FXTW_INL(name), g->th[i].tid, &arg, 1);
	}
}

static void write_preamble(struct gen *g, uint64_t tps)
{
	struct fxtw_arg arg;
	char name[32];
	unsigned i;

	fxtw_magic(&g->w);
	fxtw_provider_info(&g->w, PROVIDER_ID, "gen_fxt");
	fxtw_init_record(&g->w, tps);
	for (i = 1; i < S_END; i++)
		fxtw_string(&g->w, (uint16_t)i, g_strings[i - 1]);
	for (i = 0; i < g->nth && i < (g->nth <= 255 ? 255u : 254u); i++)
		fxtw_thread(&g->w, (uint8_t)(i + 1), g->th[i].pid, g->th[i].tid);
	write_kernel_objects(g);
	for (i = 0; i < NUSER_OBJ; i++) {
		snprintf(name, sizeof name, "Widget#%u", i);
		arg = fxtw_arg_u32(FXTW_IDX(S_A_SIZE), 64 * (i + 1));
		fxtw_userspace_object(&g->w, thr_ref(g, i % g->nproc), FXTW_INL(name),
				      UINT64_C(0x7f0000001000) + 0x40 * i, &arg, 1);
	}
}

static uint64_t latest_time(const struct gen *g)
{
	uint64_t tf = 0;
	unsigned i;

	for (i = 0; i < g->nth; i++)
		if (g->th[i].next > tf)
			tf = g->th[i].next;
	return tf;
}

/* Closes everything still open, then appends the root begins at time 0. */
static void finish(struct gen *g)
{
	uint64_t tf = latest_time(g);
	unsigned i;

	while (g->nflows) {
		i = (g->flows[0].origin + 1) % g->nth;
		ev(g, 10, i, FXTW_IDX(CAT_APP), FXTW_IDX(S_MESSAGE), tf, NULL, 0, &g->flows[0].id);
		remove_pending(g->flows, &g->nflows, 0);
		g->reserve--;
	}
	while (g->nasyncs)
		async_next(g, g->asyncs[0].origin, tf, 1);
	for (i = 0; i < g->nth; i++)
		while (g->th[i].depth) {
			tf += ticks(g, 100);
			slice_end(g, i, tf);
		}
	for (i = 0; g->roots && i < g->nth; i++, g->reserve--)
		ev(g, 3, i, FXTW_IDX(CAT_APP), FXTW_IDX(S_WHOLE_RUN), tf, NULL, 0, NULL);
	for (i = 0; g->roots && i < g->nth; i++, g->reserve--)
		ev(g, 2, i, FXTW_IDX(CAT_APP), FXTW_IDX(S_WHOLE_RUN), 0, NULL, 0, NULL);
}

static void run(struct gen *g)
{
	unsigned t;
	uint64_t now;

	heap_build(g);
	while (budget_left(g) > 0) {
		t = g->heap[0];
		now = g->th[t].next;
		g->th[t].next = now + act(g, t, now) + gap(g);
		heap_down(g, 0);
	}
	finish(g);
}

/* Several processes: 1 for up to 3 threads, else 2..16, about 8 threads each. */
static unsigned process_count(unsigned nth)
{
	if (nth < 4)
		return 1;
	if (nth / 8 < 2)
		return 2;
	return nth / 8 > 16 ? 16 : nth / 8;
}

static void gen_init(struct gen *g, const struct opts *o)
{
	unsigned i;

	memset(g, 0, sizeof *g);
	fxtw_init(&g->w, o->big_endian);
	g->rng = o->seed;
	g->args = (unsigned)o->args;
	g->scale = (double)o->tps / 1e9;
	g->nth = (unsigned)o->threads;
	g->nproc = process_count(g->nth);
	g->th = calloc(g->nth, sizeof *g->th);
	g->heap = calloc(g->nth, sizeof *g->heap);
	if (!g->th || !g->heap)
		abort();
	g->target = o->events;
	g->roots = !o->no_roots && o->events >= 4 * o->threads;
	g->reserve = g->roots ? 2 * (uint64_t)g->nth : 0;
	g->slot_owner = UINT_MAX;
	g->mem = 1 << 24;
	for (i = 0; i < g->nth; i++) {
		g->th[i].pid = 1000 * (uint64_t)(i % g->nproc + 1);
		g->th[i].tid = 1000000 + (uint64_t)i;
		g->th[i].next = ticks(g, 1000 + rng_below(g, 50000));
	}
}

static void gen_fini(struct gen *g)
{
	fxtw_fini(&g->w);
	free(g->th);
	free(g->heap);
}

/* ---- command line ------------------------------------------------------------ */

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Accepts "24000000" as well as "24e6". */
static int parse_tps(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 1 && v <= 1e18) ||
	    v != (double)(uint64_t)v)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: gen_fxt [--events N] [--threads T] [--seed S] "
			"[--tps TPS] [--args K] [--big-endian] [--no-roots] OUT.fxt\n");
	return 2;
}

/* Returns 0, or -1 on a bad command line. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	int i, bad = 0;

	for (i = 1; i < argc && !bad; i++) {
		int more = i + 1 < argc;

		if (!strcmp(argv[i], "--events") && more)
			bad = parse_u64(argv[++i], 0, UINT64_C(1) << 40, &o->events);
		else if (!strcmp(argv[i], "--threads") && more)
			bad = parse_u64(argv[++i], 1, MAX_THREADS, &o->threads);
		else if (!strcmp(argv[i], "--seed") && more)
			bad = parse_u64(argv[++i], 0, UINT64_MAX, &o->seed);
		else if (!strcmp(argv[i], "--tps") && more)
			bad = parse_tps(argv[++i], &o->tps);
		else if (!strcmp(argv[i], "--args") && more)
			bad = parse_u64(argv[++i], 1, 3, &o->args);
		else if (!strcmp(argv[i], "--big-endian"))
			o->big_endian = 1;
		else if (!strcmp(argv[i], "--no-roots"))
			o->no_roots = 1;
		else if (argv[i][0] != '-' && !o->out)
			o->out = argv[i];
		else
			bad = -1;
	}
	return bad || !o->out ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o = { 100000, 8, 1, 1000000000, 0, 0, NULL, 0 };
	struct gen g;
	int rc = 0;

	if (parse_args(argc, argv, &o) < 0)
		return usage();
	gen_init(&g, &o);
	write_preamble(&g, o.tps);
	run(&g);
	if (fxtw_save(&g.w, o.out) < 0) {
		fprintf(stderr, "gen_fxt: %s: %s\n", o.out, strerror(errno));
		rc = 1;
		goto out_fini;
	}
	printf("events=%" PRIu64 " bytes=%zu\n", g.emitted, fxtw_mark(&g.w));
out_fini:
	gen_fini(&g);
	return rc;
}
