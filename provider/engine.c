/*
 * The trace engine: the buffers records are written into, the three
 * buffering modes, call sites and their categories, the threads' state and
 * the clock. It follows ../shared/spec/fuchsia-trace-engine-buffering.txt:
 *
 *   oneshot    one buffer; durable and other records share it; when it is
 *              full every further record is dropped and counted.
 *   circular   a durable buffer (string, thread and name records) and two
 *              rolling buffers; when one fills, writing goes on in the other,
 *              which is cleared: the oldest half is lost, the wraps counted.
 *   streaming  as circular, but a full rolling buffer is sent to the server
 *              (with the durable records written since the last save) and
 *              written again only once the server answers BUFFER_SAVED; while
 *              both are full records are dropped and counted. Between saves
 *              the transport flushes what was written since it last sent
 *              (eng_flush_spans), so a slow program is seen live.
 *   In every mode, once the durable buffer is full tracing stops (as the
 *   spec's notes choose): later records are dropped and counted.
 *
 * Reservation is lock-free: one atomic fetch-and-add on a word holding the
 * offset and the wrapped count of the current rolling buffer, as the spec's
 * AllocRecord does. Only switching buffers takes the mutex.
 *
 * Knowing that writers are done. A record is reserved and then written; the
 * engine may read a buffer (to send it) or free it only when every writer
 * that reserved space in it has finished. Each thread keeps a counter, odd
 * while it is inside a record (eng_enter/eng_leave: two plain stores).
 * eng_quiesce() waits for every thread seen odd to move on. The counter is
 * stored before the reservation's fetch-and-add, which releases it: whoever
 * sees a buffer full (and so switches it) sees the counters of everyone who
 * reserved in it. For START, where a writer must see the new generation of
 * the string and thread tables before it reserves, the engine issues
 * membarrier(2) (a fence on every thread of the process) so that writers
 * need no fence of their own.
 *
 * Where we knowingly depart from the spec's engine:
 *   - The first offset that did not fit is kept as the minimum over the
 *     threads that failed (the spec keeps the first to compare-and-swap),
 *     so no never-written bytes are ever sent.
 *   - Thread and process name records (kernel objects) go in the durable
 *     buffer with the thread records, so that circular mode keeps them.
 *   - Circular mode, like the spec's, does not wait for writers before it
 *     writes over a buffer again: a writer stalled for a whole rolling
 *     buffer's worth of other threads' records may finish its record in a
 *     buffer already being rewritten.
 *   - In streaming mode START with "retain" acts as "clear nondurable": the
 *     records already sent are not sent twice. In oneshot mode "clear
 *     nondurable" clears the whole buffer, the durable records with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "provider_internal.h"

struct engine eng = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.rolling = ENG_CLOSED,
	.durable = ENG_CLOSED,
	.ticks_per_second = 1000000000u,
	.wake_fd = -1,
};

__thread struct trace_tls *eng_tls_self;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static int have_membarrier;

/* ---- The clock -------------------------------------------------------- */

struct trace_clock_ trace_clock_;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static int cpu_has_invariant_tsc(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	int ok = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "flags", 5) == 0) {
			ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
			break;
		}
	fclose(f);
	return ok;
}

/* A CLOCK_MONOTONIC reading and the TSC at that moment. The TSC is read on
 * both sides of the clock and, of five tries, the one whose two reads are
 * closest gives its midpoint: a thread preempted between a clock read and
 * a TSC read would otherwise shift every timestamp of the process by the
 * time it was off the CPU. */
static void tsc_pair(uint64_t *ns, uint64_t *tsc)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 5; i++) {
		uint64_t a = __builtin_ia32_rdtsc(), t = mono_ns(), b = __builtin_ia32_rdtsc();

		if (i == 0 || (b >= a && b - a < best)) {
			best = b >= a ? b - a : UINT64_MAX;
			*ns = t;
			*tsc = a + (b >= a ? (b - a) / 2 : 0);
		}
	}
}

/* Measures the TSC against CLOCK_MONOTONIC over 20 ms; the base makes
 * (tsc - base) / tps read as seconds since boot, like CLOCK_MONOTONIC. */
static void tsc_calibrate(void)
{
	struct timespec d = {0, 20 * 1000 * 1000};
	uint64_t t0, c0, t1, c1, tps, at_zero;

	if (!cpu_has_invariant_tsc())
		return;
	tsc_pair(&t0, &c0);
	nanosleep(&d, NULL);
	tsc_pair(&t1, &c1);
	if (t1 <= t0 || c1 <= c0)
		return;
	tps = (uint64_t)((unsigned __int128)(c1 - c0) * 1000000000u / (t1 - t0));
	tps = (tps + 500) / 1000 * 1000; /* to the kHz: the rest is noise */
	at_zero = (uint64_t)((unsigned __int128)t0 * tps / 1000000000u);
	trace_clock_.base = c0 > at_zero ? c0 - at_zero : 0;
	eng.ticks_per_second = tps;
	/* the base is stored before the flag the inline reader tests */
	__atomic_store_n(&trace_clock_.tsc, 1, __ATOMIC_RELEASE);
}
#endif

void eng_clock_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
	pthread_once(&once, tsc_calibrate);
#else
	(void)once;
#endif
}

uint64_t eng_now(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(__atomic_load_n(&trace_clock_.tsc, __ATOMIC_RELAXED) != 0, 1))
		return __builtin_ia32_rdtsc() - trace_clock_.base;
#endif
	return mono_ns();
}

uint64_t trace_now(void)
{
	return eng_now();
}

uint64_t trace_ticks_per_second(void)
{
	return eng.ticks_per_second;
}

/* ---- Threads ------------------------------------------------------------ */

/* The thread is exiting: its block goes back for reuse. A record written
 * by a later destructor of the same thread registers a block again. */
static void tls_release(void *p)
{
	struct trace_tls *t = p;

	eng_tls_self = NULL;
	atomic_store_explicit(&t->in_use, 0, memory_order_release);
}

static void tls_key_create(void)
{
	pthread_key_create(&tls_key, tls_release);
}

/* The slow path of eng_tls: a block for this thread, reused from a thread
 * that exited when one is free. NULL when out of memory. */
struct trace_tls *eng_tls_register(void)
{
	struct trace_tls *t;

	pthread_once(&tls_once, tls_key_create);
	pthread_mutex_lock(&eng.lock);
	for (t = eng.threads; t; t = t->next)
		if (atomic_load_explicit(&t->in_use, memory_order_acquire) == 0)
			break;
	if (t == NULL && (t = calloc(1, sizeof(*t))) != NULL) {
		t->next = eng.threads;
		eng.threads = t;
	}
	if (t) {
		atomic_store_explicit(&t->in_use, 1, memory_order_relaxed);
		t->gen = 0;
		t->name[0] = '\0';
		t->tid = (uint64_t)syscall(SYS_gettid);
	}
	pthread_mutex_unlock(&eng.lock);
	if (t) {
		pthread_setspecific(tls_key, t);
		eng_tls_self = t;
	}
	return t;
}

void eng_quiesce(void)
{
	struct trace_tls *t;
	struct timespec nap = {0, 50 * 1000};

	if (have_membarrier)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	else
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	/* Not under the lock: a writer inside a record may need it to switch
	 * buffers. Blocks are only ever pushed at the head and never freed, so
	 * the list from a snapshot of the head stays valid; threads registered
	 * after it began after us. */
	pthread_mutex_lock(&eng.lock);
	t = eng.threads;
	pthread_mutex_unlock(&eng.lock);
	for (; t; t = t->next) {
		uint64_t b = atomic_load_explicit(&t->busy, memory_order_acquire);
		int spins;

		/* a record takes well under a microsecond; a thread preempted in
		 * one is waited for up to a second, then given up on */
		for (spins = 0; (b & 1) && spins < 20000; spins++) {
			if (atomic_load_explicit(&t->busy, memory_order_acquire) != b)
				break;
			if (spins < 64)
				sched_yield();
			else
				nanosleep(&nap, NULL);
		}
	}
}

/* ---- Reservation --------------------------------------------------------- */

static void eng_drop(void)
{
	atomic_fetch_add_explicit(&eng.dropped, 1, memory_order_relaxed);
}

/* Keeps the smallest offset that did not fit in buffer b (stored + 1). */
static void mark_full(_Atomic uint64_t *mark, uint64_t off)
{
	uint64_t cur = atomic_load_explicit(mark, memory_order_relaxed);

	while ((cur == 0 || off + 1 < cur) &&
	       !atomic_compare_exchange_weak_explicit(mark, &cur, off + 1, memory_order_relaxed, memory_order_relaxed))
		;
}

/* Brings an offset that keeps growing while records drop back to the end. */
static void snap_offset(uint64_t v)
{
	uint64_t cur;

	if ((v & ENG_OFF_MASK) < ENG_SNAP_LIMIT)
		return;
	pthread_mutex_lock(&eng.lock);
	cur = atomic_load_explicit(&eng.rolling, memory_order_relaxed);
	if ((cur & ~ENG_OFF_MASK) == (v & ~ENG_OFF_MASK) && (cur & ENG_OFF_MASK) >= ENG_SNAP_LIMIT)
		atomic_store_explicit(&eng.rolling, (cur & ~ENG_OFF_MASK) | eng.rolling_size, memory_order_relaxed);
	pthread_mutex_unlock(&eng.lock);
}

static void wake_transport(void)
{
	char c = 1;

	if (eng.wake_fd >= 0 && write(eng.wake_fd, &c, 1) < 0) {
		/* full pipe: the transport is already woken */
	}
}

/* Switches from the buffer of wrapped count wrap to the other, under the
 * lock. Returns 1 when writing may go on (switched, by us or another
 * thread), 0 when the record must be dropped. */
static int switch_buffer(uint32_t wrap)
{
	uint64_t cur;
	uint32_t next = wrap + 1;
	int ok = 0;

	pthread_mutex_lock(&eng.lock);
	cur = atomic_load_explicit(&eng.rolling, memory_order_relaxed);
	if (cur & ENG_CLOSED)
		goto out_unlock;
	if ((uint32_t)((cur & ENG_WRAP_MASK) >> ENG_OFF_BITS) != wrap) {
		ok = 1; /* someone else switched */
		goto out_unlock;
	}
	if (eng.mode == ENG_STREAMING) {
		if (!atomic_load_explicit(&eng.ready[next & 1], memory_order_acquire))
			goto out_unlock;
		atomic_store_explicit(&eng.ready[wrap & 1], 0, memory_order_relaxed);
		atomic_store_explicit(&eng.save_wrap, wrap + 1, memory_order_relaxed);
	}
	atomic_store_explicit(&eng.full_mark[next & 1], 0, memory_order_relaxed);
	atomic_store_explicit(&eng.rolling, ((uint64_t)next << ENG_OFF_BITS) & ENG_WRAP_MASK, memory_order_release);
	ok = 1;
	if (eng.mode == ENG_STREAMING)
		wake_transport();
out_unlock:
	pthread_mutex_unlock(&eng.lock);
	return ok;
}

uint64_t *eng_alloc_record(size_t n)
{
	int iter;

	for (iter = 0; iter < 2; iter++) {
		uint64_t v = atomic_fetch_add_explicit(&eng.rolling, n, memory_order_acq_rel);
		uint32_t wrap = (uint32_t)((v & ENG_WRAP_MASK) >> ENG_OFF_BITS);
		uint64_t off = v & ENG_OFF_MASK;

		if (__builtin_expect(v & ENG_CLOSED, 0)) {
			if (atomic_load_explicit(&eng.recording, memory_order_relaxed))
				eng_drop();
			return NULL;
		}
		if (__builtin_expect(off + n <= eng.rolling_size, 1))
			return (uint64_t *)(void *)(eng.rolling_buf[wrap & 1] + off);
		/* The smallest offset that failed ends the buffer's records, so
		 * every writer that failed marks it, even after the switch
		 * (whoever reads the buffer waits for us first). Only one late
		 * by two switches, whose buffer is in use again, must not. */
		if ((uint32_t)((atomic_load_explicit(&eng.rolling, memory_order_relaxed) & ENG_WRAP_MASK) >>
			       ENG_OFF_BITS) - wrap <= 1)
			mark_full(&eng.full_mark[wrap & 1], off);
		if (eng.mode == ENG_ONESHOT || iter == 1 ||
		    (eng.mode == ENG_STREAMING &&
		     !atomic_load_explicit(&eng.ready[(wrap + 1) & 1], memory_order_relaxed))) {
			eng_drop();
			snap_offset(v + n);
			return NULL;
		}
		if (!switch_buffer(wrap)) {
			eng_drop();
			return NULL;
		}
	}
	return NULL;
}

static _Atomic uint64_t durable_mark;
/* The rolling and durable words as they were when closed: writers that
 * find them closed still add to them, so their offsets mean nothing after. */
static _Atomic uint64_t rolling_at_close, durable_at_close;

static void close_words(void)
{
	uint64_t r = atomic_fetch_or_explicit(&eng.rolling, ENG_CLOSED, memory_order_acq_rel);
	uint64_t d = atomic_fetch_or_explicit(&eng.durable, ENG_CLOSED, memory_order_acq_rel);

	if (!(r & ENG_CLOSED))
		atomic_store(&rolling_at_close, r);
	if (!(d & ENG_CLOSED))
		atomic_store(&durable_at_close, d);
}

static uint64_t rolling_word(void)
{
	uint64_t v = atomic_load_explicit(&eng.rolling, memory_order_acquire);

	return (v & ENG_CLOSED) ? atomic_load(&rolling_at_close) : v;
}

static uint64_t durable_word(void)
{
	uint64_t v = atomic_load_explicit(&eng.durable, memory_order_acquire);

	return (v & ENG_CLOSED) ? atomic_load(&durable_at_close) : v;
}

/* The durable buffer is full: tracing stops (spec), drops are counted. */
static void durable_filled(uint64_t off)
{
	mark_full(&durable_mark, off);
	if (!atomic_exchange_explicit(&eng.durable_full, 1, memory_order_relaxed)) {
		uint64_t r = atomic_fetch_or_explicit(&eng.rolling, ENG_CLOSED, memory_order_acq_rel);

		if (!(r & ENG_CLOSED))
			atomic_store(&rolling_at_close, r);
		fprintf(stderr, "trace: durable buffer full at %llu bytes; tracing stopped\n", (unsigned long long)off);
	}
}

uint64_t *eng_alloc_durable(size_t n)
{
	uint64_t v;

	if (eng.mode == ENG_ONESHOT)
		return eng_alloc_record(n);
	v = atomic_fetch_add_explicit(&eng.durable, n, memory_order_acq_rel);
	if (__builtin_expect(v & ENG_CLOSED, 0)) {
		if (atomic_load_explicit(&eng.recording, memory_order_relaxed))
			eng_drop();
		return NULL;
	}
	if (__builtin_expect(v + n <= eng.durable_size, 1))
		return (uint64_t *)(void *)(eng.durable_buf + v);
	durable_filled(v);
	eng_drop();
	return NULL;
}

uint16_t eng_alloc_string(void)
{
	uint32_t i = atomic_fetch_add_explicit(&eng.next_string, 1, memory_order_relaxed);

	return i <= 0x7fff ? (uint16_t)i : 0;
}

uint8_t eng_alloc_thread(void)
{
	uint32_t i = atomic_fetch_add_explicit(&eng.next_thread, 1, memory_order_relaxed);

	return i <= 0xff ? (uint8_t)i : 0;
}

/* ---- What has been written --------------------------------------------- */

/* Where the records of rolling buffer b end, once writers are quiet. */
static uint64_t rolling_end(int b)
{
	uint64_t v = rolling_word();
	uint64_t mark = atomic_load_explicit(&eng.full_mark[b], memory_order_relaxed);
	uint64_t end = eng.rolling_size;

	if ((int)(((v & ENG_WRAP_MASK) >> ENG_OFF_BITS) & 1) == b && (v & ENG_OFF_MASK) < end)
		end = v & ENG_OFF_MASK;
	if (mark != 0 && mark - 1 < end)
		end = mark - 1;
	return end;
}

static uint64_t durable_end(void)
{
	uint64_t v = durable_word() & ENG_OFF_MASK;
	uint64_t mark = atomic_load_explicit(&durable_mark, memory_order_relaxed);

	if (v > eng.durable_size)
		v = eng.durable_size;
	if (mark != 0 && mark - 1 < v)
		v = mark - 1;
	return v;
}

static uint32_t current_wrap(void)
{
	return (uint32_t)((rolling_word() & ENG_WRAP_MASK) >> ENG_OFF_BITS);
}

/* Length of the longest prefix of p[0..n) that is whole records; their
 * number in *count when count is not NULL. */
static size_t walk_records(const uint8_t *p, size_t n, uint64_t *count)
{
	size_t off = 0;
	uint64_t k = 0;

	while (n - off >= 8) {
		uint64_t h, words;

		memcpy(&h, p + off, 8);
		words = (h & 0xf) == 15 ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfff;
		if (words == 0 || words > (n - off) / 8)
			break;
		off += (size_t)words * 8;
		k++;
	}
	if (count)
		*count = k;
	return off;
}

size_t eng_whole_records(const uint8_t *p, size_t n)
{
	return walk_records(p, n, NULL);
}

/* The event records every thread placed, ever (their own counters). */
static uint64_t records_placed(void)
{
	struct trace_tls *t;
	uint64_t sum = 0;

	pthread_mutex_lock(&eng.lock);
	t = eng.threads;
	pthread_mutex_unlock(&eng.lock);
	for (; t; t = t->next) /* blocks are pushed at the head, never freed */
		sum += atomic_load_explicit(&t->records, memory_order_relaxed);
	return sum;
}

/* Circular, at stop: the records placed since START that are not in the
 * spans sent (every one there is an event record) were written over. */
static void count_overwritten(const struct eng_span *s, size_t k)
{
	uint64_t placed = records_placed() - eng.records_base, sent = 0, n;
	size_t i;

	for (i = 0; i < k; i++)
		if (s[i].kind == 3) {
			walk_records(s[i].p, s[i].n, &n);
			sent += n;
		}
	atomic_store(&eng.overwritten, placed > sent ? placed - sent : 0);
}

static size_t add_span(struct eng_span *out, size_t k, const uint8_t *p, uint64_t n, int kind)
{
	size_t whole = eng_whole_records(p, (size_t)n);

	if (whole == 0)
		return k;
	out[k].p = p;
	out[k].n = whole;
	out[k].kind = kind;
	return k + 1;
}

/* Where the unsent records of the rolling buffer of wrapped count wrap
 * begin: past what flushes sent of it. */
static uint64_t flushed_to(uint32_t wrap)
{
	return eng.flushed_wrap == wrap + 1 ? eng.flushed_end : 0;
}

size_t eng_flush_spans(struct eng_span *out)
{
	uint64_t v = rolling_word(), dend = durable_end(), end, from, mark;
	uint32_t wrap = (uint32_t)((v & ENG_WRAP_MASK) >> ENG_OFF_BITS);
	int b = (int)(wrap & 1);
	size_t k = 0;

	/* v before save_wrap: a switch to the buffer v names had set it */
	if (eng.mode != ENG_STREAMING || eng.mem == NULL || atomic_load_explicit(&eng.save_wrap, memory_order_acquire))
		return 0;
	from = flushed_to(wrap);
	end = (v & ENG_OFF_MASK) < eng.rolling_size ? v & ENG_OFF_MASK : eng.rolling_size;
	if (end <= from && dend <= eng.durable_sent)
		return 0;
	eng_quiesce(); /* every record reserved below v and dend is now whole */
	mark = atomic_load_explicit(&eng.full_mark[b], memory_order_relaxed);
	if (mark != 0 && mark - 1 < end)
		end = mark - 1;
	k = add_span(out, k, eng.durable_buf + eng.durable_sent, dend - eng.durable_sent, 2);
	eng.durable_sent = dend;
	if (end > from)
		k = add_span(out, k, eng.rolling_buf[b] + from, end - from, 3);
	eng.flushed_wrap = wrap + 1;
	eng.flushed_end = end > from ? end : from;
	return k;
}

size_t eng_stop_spans(struct eng_span *out)
{
	uint32_t wrap = current_wrap();
	uint64_t dend = eng.mode == ENG_ONESHOT ? 0 : durable_end(), from;
	size_t k = 0;

	if (eng.mem == NULL)
		return 0;
	switch (eng.mode) {
	case ENG_ONESHOT:
		k = add_span(out, k, eng.rolling_buf[0], rolling_end(0), 3);
		break;
	case ENG_CIRCULAR:
		k = add_span(out, k, eng.durable_buf, dend, 2);
		if (wrap > 0)
			k = add_span(out, k, eng.rolling_buf[(wrap + 1) & 1], rolling_end((int)((wrap + 1) & 1)), 3);
		k = add_span(out, k, eng.rolling_buf[wrap & 1], rolling_end((int)(wrap & 1)), 3);
		count_overwritten(out, k);
		break;
	case ENG_STREAMING:
		k = add_span(out, k, eng.durable_buf + eng.durable_sent, dend - eng.durable_sent, 2);
		eng.durable_sent = dend;
		from = flushed_to(wrap);
		k = add_span(out, k, eng.rolling_buf[wrap & 1] + from, rolling_end((int)(wrap & 1)) - from, 3);
		eng.flushed_wrap = 0;
		break;
	}
	return k;
}

size_t eng_save_spans(uint32_t wrap, struct eng_span *out, uint64_t *dend_out)
{
	uint64_t dend = durable_end(); /* before waiting: every record below it is then whole */
	uint64_t from = flushed_to(wrap);
	size_t k = 0;

	eng_quiesce();
	k = add_span(out, k, eng.durable_buf + eng.durable_sent, dend - eng.durable_sent, 2);
	eng.durable_sent = dend;
	k = add_span(out, k, eng.rolling_buf[wrap & 1] + from, rolling_end((int)(wrap & 1)) - from, 3);
	eng.flushed_wrap = 0;
	*dend_out = dend;
	return k;
}

int eng_mark_saved(uint32_t wrap)
{
	int b = (int)(wrap & 1);

	pthread_mutex_lock(&eng.lock);
	if (eng.mode != ENG_STREAMING || atomic_load_explicit(&eng.ready[b], memory_order_relaxed) ||
	    (current_wrap() & 1) == (uint32_t)b) {
		pthread_mutex_unlock(&eng.lock);
		return -1;
	}
	atomic_store_explicit(&eng.full_mark[b], 0, memory_order_relaxed);
	atomic_store_explicit(&eng.ready[b], 1, memory_order_release);
	pthread_mutex_unlock(&eng.lock);
	return 0;
}

/* ---- The lifecycle ------------------------------------------------------ */

int eng_initialize(int mode, uint64_t size)
{
	uint64_t d;

	if (mode < ENG_ONESHOT || mode > ENG_STREAMING || size < ENG_MIN_SIZE || size % 4096 != 0)
		return -1;
	if (size > ENG_MAX_SIZE)
		size = ENG_MAX_SIZE;
	if (eng.mem)
		eng_terminate();
	/* every page faulted in now, on the transport's thread, not on first
	 * touch by a traced one */
	eng.mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (eng.mem == MAP_FAILED) {
		eng.mem = NULL;
		return -1;
	}
	eng.size = size;
	eng.mode = mode;
	if (mode == ENG_ONESHOT) {
		eng.durable_buf = NULL;
		eng.durable_size = 0;
		eng.rolling_buf[0] = eng.mem;
		eng.rolling_buf[1] = NULL;
		eng.rolling_size = size;
	} else {
		d = size / 16 & ~(uint64_t)7;
		d = d < 512 ? 512 : d > ENG_MAX_DURABLE ? ENG_MAX_DURABLE : d;
		eng.rolling_size = (size - d) / 2 & ~(uint64_t)7;
		eng.durable_size = size - 2 * eng.rolling_size;
		eng.durable_buf = eng.mem;
		eng.rolling_buf[0] = eng.mem + eng.durable_size;
		eng.rolling_buf[1] = eng.rolling_buf[0] + eng.rolling_size;
	}
	eng.durable_sent = 0;
	eng.flushed_wrap = 0;
	eng.fresh = 1;
	atomic_store(&eng.rolling, ENG_CLOSED);
	atomic_store(&eng.durable, ENG_CLOSED);
	atomic_store(&rolling_at_close, 0);
	atomic_store(&durable_at_close, 0);
	atomic_store(&eng.gen, atomic_load(&eng.gen) + 1); /* START with retain keeps no stale tables */
	return 0;
}

/* Places a record the engine writes itself while the buffers are closed. */
static uint64_t place(uint64_t *off, uint64_t cap, size_t n)
{
	uint64_t at = *off;

	if (at + n > cap)
		return UINT64_MAX;
	*off += n;
	return at;
}

/* Writes the initialization record and the process name at *off. */
static void write_preamble(uint8_t *buf, uint64_t *off, uint64_t cap)
{
	uint64_t at;

	if ((at = place(off, cap, fxt_init_record(NULL, eng.ticks_per_second))) != UINT64_MAX)
		fxt_init_record((uint64_t *)(void *)(buf + at), eng.ticks_per_second);
	if (eng.process_name[0] &&
	    (at = place(off, cap, fxt_kobj_record(NULL, 1, eng.pid, eng.process_name, 0))) != UINT64_MAX)
		fxt_kobj_record((uint64_t *)(void *)(buf + at), 1, eng.pid, eng.process_name, 0);
}

/* What START keeps of the last run (spec: BufferDisposition), with this
 * mode's exceptions (the top of this file). */
static int start_disposition(int disposition)
{
	if (eng.mode == ENG_ONESHOT && disposition == ENG_CLEAR_NONDURABLE)
		disposition = ENG_CLEAR_ENTIRE;
	if (eng.mode == ENG_STREAMING && disposition == ENG_RETAIN)
		disposition = ENG_CLEAR_NONDURABLE;
	if (eng.fresh || eng.durable_full)
		disposition = ENG_CLEAR_ENTIRE;
	eng.fresh = 0;
	return disposition;
}

/* Resets what the disposition clears; *doff and *rword are where the
 * durable and rolling words open. */
static void start_reset(int disposition, uint64_t *doff, uint64_t *rword)
{
	uint32_t wrap = current_wrap();
	uint64_t roff = 0;

	*doff = disposition == ENG_CLEAR_ENTIRE ? 0 : durable_end();
	*rword = disposition == ENG_RETAIN ? ((uint64_t)wrap << ENG_OFF_BITS) | rolling_end((int)(wrap & 1)) : 0;
	if (disposition != ENG_RETAIN) {
		atomic_store(&eng.full_mark[0], 0);
		atomic_store(&eng.full_mark[1], 0);
		atomic_store(&eng.ready[0], 1);
		atomic_store(&eng.ready[1], 1);
		atomic_store(&eng.save_wrap, 0);
		eng.flushed_wrap = 0;
	}
	if (disposition != ENG_CLEAR_ENTIRE)
		return;
	atomic_store(&durable_mark, 0);
	atomic_store(&eng.durable_full, 0);
	atomic_store(&eng.next_string, 1);
	atomic_store(&eng.next_thread, 1);
	atomic_store(&eng.gen, atomic_load(&eng.gen) + 1); /* every thread's caches start again */
	eng.durable_sent = 0;
	if (eng.mode == ENG_ONESHOT)
		write_preamble(eng.rolling_buf[0], &roff, eng.rolling_size);
	else
		write_preamble(eng.durable_buf, doff, eng.durable_size);
	*rword = roff;
}

void eng_start(int disposition, const char *categories)
{
	uint64_t doff, rword;

	if (eng.mem == NULL || atomic_load(&eng.recording))
		return;
	if (categories)
		utf8_copy(eng.categories, sizeof(eng.categories), categories);
	eng.pid = (uint64_t)getpid();
	start_reset(start_disposition(disposition), &doff, &rword);
	atomic_store(&eng.dropped, 0);
	atomic_store(&eng.sent, 0);
	atomic_store(&eng.written_final, 0);
	atomic_store(&eng.overwritten, 0);
	eng.records_base = records_placed(); /* the buffers are closed: no one is placing one */
	atomic_store(&eng.recording, 1);
	/* writers that may have read the old generation finish before we open */
	eng_quiesce();
	atomic_store_explicit(&eng.durable, doff, memory_order_release);
	atomic_store_explicit(&eng.rolling, rword, memory_order_release);
	eng_update_sites();
}

void eng_stop(void)
{
	if (!atomic_load(&eng.recording))
		return;
	atomic_store(&eng.recording, 0);
	eng_update_sites();
	close_words();
	eng_quiesce();
}

/* Bytes of records written since START, while the buffers exist. */
static uint64_t bytes_written(void)
{
	uint32_t wrap = current_wrap();
	uint64_t w;

	if (eng.mem == NULL)
		return atomic_load_explicit(&eng.written_final, memory_order_relaxed);
	w = rolling_end((int)(wrap & 1)) + (eng.mode == ENG_ONESHOT ? 0 : durable_end());
	if (wrap > 0)
		w += (uint64_t)wrap * eng.rolling_size; /* about: each wrap filled a buffer */
	return w;
}

void eng_terminate(void)
{
	eng_stop();
	eng_quiesce();
	/* what trace_get_stats says once the buffers are gone (the server
	 * vanished, say): beside bytes_sent, not 0 */
	atomic_store_explicit(&eng.written_final, bytes_written(), memory_order_relaxed);
	if (eng.mem)
		munmap(eng.mem, eng.size);
	eng.mem = NULL;
	eng.durable_buf = NULL;
	eng.rolling_buf[0] = eng.rolling_buf[1] = NULL;
	eng.rolling_size = eng.durable_size = 0;
	eng.mode = 0;
}

void eng_membarrier_init(void)
{
	have_membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void trace_get_stats(struct trace_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->records_dropped = atomic_load_explicit(&eng.dropped, memory_order_relaxed);
	out->wrapped_count = current_wrap();
	out->bytes_written = bytes_written();
	out->records_overwritten = atomic_load_explicit(&eng.overwritten, memory_order_relaxed);
	out->bytes_sent = atomic_load_explicit(&eng.sent, memory_order_relaxed);
}

/* ---- Sites and categories ------------------------------------------------ */

static uint32_t site_eval(const struct trace_site *s)
{
	return atomic_load(&eng.recording) && wire_category_match(eng.categories, s->category ? s->category : "");
}

int trace_site_register_(struct trace_site *site)
{
	uint32_t st;

	pthread_mutex_lock(&eng.lock);
	if (__atomic_load_n(&site->state, __ATOMIC_RELAXED) == 2) {
		site->next = eng.sites;
		eng.sites = site;
		__atomic_store_n(&site->state, site_eval(site), __ATOMIC_RELAXED);
	}
	st = __atomic_load_n(&site->state, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&eng.lock);
	return st == 1;
}

void eng_update_sites(void)
{
	struct trace_site *s;

	pthread_mutex_lock(&eng.lock);
	for (s = eng.sites; s; s = s->next)
		__atomic_store_n(&s->state, site_eval(s), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&eng.lock);
}

int trace_is_enabled(void)
{
	return atomic_load_explicit(&eng.recording, memory_order_relaxed);
}

/* A program started with TRACE_SERVER set (by `trace-server record`, say)
 * connects without a line of code; this object is linked whenever a macro
 * is used. */
__attribute__((constructor)) static void eng_auto_start(void)
{
	if (getenv("TRACE_SERVER"))
		trace_provider_start(NULL);
}
