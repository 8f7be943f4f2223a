/*
 * What the provider library's files share and trace.h does not show: the
 * engine (engine.c: buffers, reservation, modes, threads' state, sites), the
 * FXT writer (writer.c), the wire format (wire.c, conn.h) and the
 * transport (transport.c, over conn.c). The tests include it to look inside.
 */
#ifndef PROVIDER_INTERNAL_H
#define PROVIDER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "protocol.h"
#include "trace.h"
#include "utf8.h"

/* ---- The engine ------------------------------------------------------- */

enum eng_mode { ENG_ONESHOT = 1, ENG_CIRCULAR = 2, ENG_STREAMING = 3 };
enum eng_disposition { ENG_CLEAR_ENTIRE = 1, ENG_CLEAR_NONDURABLE = 2, ENG_RETAIN = 3 };

/*
 * A rolling reservation word: bits 0..35 the offset in the current rolling
 * buffer, 36..62 the wrapped count (the current buffer is wrapped & 1), 63
 * set while the buffers are closed (not recording). The durable word uses
 * the offset and the closed bit only.
 */
#define ENG_OFF_BITS 36
#define ENG_OFF_MASK ((UINT64_C(1) << ENG_OFF_BITS) - 1)
#define ENG_WRAP_MASK (((UINT64_C(1) << 63) - 1) & ~ENG_OFF_MASK)
#define ENG_CLOSED (UINT64_C(1) << 63)
/* a failed reservation that finds the offset past this snaps it back */
#define ENG_SNAP_LIMIT (UINT64_C(1) << 35)

#define ENG_MIN_SIZE 4096u
#define ENG_MAX_SIZE (UINT64_C(1) << 30)
#define ENG_MAX_DURABLE (UINT64_C(1) << 20)
#define ENG_MAX_RECORD 32760u /* 4095 words */

/* Every thread that wrote a record has one; never freed, reused after the
 * thread exits. */
#define TLS_CACHE_SIZE 256
struct trace_tls {
	_Atomic uint64_t busy;   /* odd while the thread is inside a record */
	_Atomic int in_use;      /* 1 while a live thread owns the block */
	_Atomic uint64_t records; /* event records it placed in a rolling buffer, ever; written by the owner only */
	struct trace_tls *next;  /* the registry's list; written once */
	uint32_t gen;            /* the engine generation the caches below belong to */
	uint8_t thread_ref;      /* 0: inline (the 255 indexes ran out) */
	uint8_t named;           /* the name record was written for gen */
	uint64_t tid;
	char name[64];           /* trace_set_thread_name; "" when none */
	struct {
		const char *key; /* the string's address; NULL: empty slot */
		uint16_t ref;    /* its index in the string table */
	} cache[TLS_CACHE_SIZE];
};

struct engine {
	pthread_mutex_t lock;       /* buffer switches, mode changes, site registration */
	_Atomic uint64_t rolling;   /* the rolling reservation word (above) */
	_Atomic uint64_t durable;   /* the durable reservation word */
	_Atomic uint64_t full_mark[2]; /* first offset that did not fit, +1 (0: not full) */
	_Atomic int ready[2];       /* streaming: 1 when the buffer may be written again */
	_Atomic uint64_t dropped;   /* records dropped since START */
	_Atomic uint64_t sent;      /* bytes of records sent to the server since START */
	_Atomic uint64_t written_final; /* bytes written by the run the last TERMINATE ended (its buffers gone) */
	_Atomic uint64_t overwritten; /* circular: records written over in the last run, counted at its stop */
	uint64_t records_base;      /* the threads' records summed at START */
	_Atomic uint32_t gen;       /* bumped when the string and thread tables restart */
	_Atomic uint32_t next_string; /* next string index to give out */
	_Atomic uint32_t next_thread; /* next thread index to give out */
	_Atomic int recording;      /* 1 between START and STOP */
	_Atomic int durable_full;   /* the durable buffer filled: tracing stopped */
	_Atomic uint32_t save_wrap; /* streaming: wrapped count + 1 of a buffer to save; 0 none */
	int mode;                   /* enum eng_mode; 0 when not initialized */
	int fresh;                  /* initialized and not yet started: START clears all */
	uint8_t *mem;               /* the whole buffer (size bytes) */
	uint64_t size;
	uint8_t *durable_buf;       /* NULL in oneshot mode */
	uint64_t durable_size;
	uint8_t *rolling_buf[2];    /* [1] NULL in oneshot mode */
	uint64_t rolling_size;
	uint64_t durable_sent;      /* streaming: durable bytes already sent */
	uint32_t flushed_wrap;      /* streaming: wrapped count + 1 of the buffer flushed up to flushed_end; 0 none */
	uint64_t flushed_end;       /* its records below this offset were sent (eng_flush_spans) */
	uint64_t ticks_per_second;
	uint64_t pid;
	char process_name[64];
	char categories[10240];     /* enabled categories, comma-separated; "" all (100 of 100 bytes fit) */
	struct trace_site *sites;   /* registered call sites */
	struct trace_tls *threads;  /* registered threads */
	int wake_fd;                /* written (non-blocking) when a buffer needs saving; -1 none */
};

extern struct engine eng;

extern __thread struct trace_tls *eng_tls_self;
struct trace_tls *eng_tls_register(void);

/* The calling thread's state, registered on first use; NULL when out of
 * memory. */
static inline struct trace_tls *eng_tls(void)
{
	struct trace_tls *t = eng_tls_self;

	return __builtin_expect(t != NULL, 1) ? t : eng_tls_register();
}

/* Marks the thread inside / out of a record (engine.c explains why): two
 * plain stores; the reservation's fetch-and-add releases the first. */
static inline void eng_enter(struct trace_tls *t)
{
	uint64_t b = atomic_load_explicit(&t->busy, memory_order_relaxed);

	atomic_store_explicit(&t->busy, b + 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void eng_leave(struct trace_tls *t)
{
	uint64_t b = atomic_load_explicit(&t->busy, memory_order_relaxed);

	atomic_store_explicit(&t->busy, b + 1, memory_order_release);
}

/* Counts an event record t placed (circular mode's overwritten count is
 * the records placed less those sent): two plain moves, no atomic add. */
static inline void eng_count_record(struct trace_tls *t)
{
	uint64_t n = atomic_load_explicit(&t->records, memory_order_relaxed);

	atomic_store_explicit(&t->records, n + 1, memory_order_relaxed);
}

/* Space for a record of n bytes (a multiple of 8, at most ENG_MAX_RECORD),
 * or NULL when it is dropped (counted unless closed). */
uint64_t *eng_alloc_record(size_t n);
uint64_t *eng_alloc_durable(size_t n);
/* Allocates a string / thread index; 0 when they ran out. */
uint16_t eng_alloc_string(void);
uint8_t eng_alloc_thread(void);

/* The lifecycle, run by the transport's thread (and tests). */
int eng_initialize(int mode, uint64_t size);
void eng_start(int disposition, const char *categories);
void eng_stop(void);
void eng_terminate(void);
/* Waits until no thread is inside a record it began before the call. */
void eng_quiesce(void);
/* Streaming: the buffer of wrapped count `wrap` was saved. Returns 0, or -1
 * when no save of that buffer is outstanding. */
int eng_mark_saved(uint32_t wrap);

/* A run of whole records to send. */
struct eng_span {
	const uint8_t *p;
	size_t n;
	int kind; /* 2 durable, 3 rolling */
};
/* The spans STOP sends, in order (up to 3). */
size_t eng_stop_spans(struct eng_span *out);
/* Streaming: the spans a save of `wrap` sends (durable since the last save,
 * then the rolling buffer); *durable_end is SAVE_BUFFER's data64. */
size_t eng_save_spans(uint32_t wrap, struct eng_span *out, uint64_t *durable_end);
/* Streaming: the records written since anything was last sent (durable
 * records, then the current rolling buffer's from where the last flush
 * ended), so that a buffer that fills slowly still reaches the server.
 * None while a full buffer waits to be saved (it goes first, to keep the
 * order) or when nothing is new. The transport's thread only. */
size_t eng_flush_spans(struct eng_span *out);
/* Length of the longest prefix of p[0..n) that is whole FXT records. */
size_t eng_whole_records(const uint8_t *p, size_t n);

/* Sites: re-evaluates every site against eng.categories / recording. */
void eng_update_sites(void);

uint64_t eng_now(void);
void eng_clock_init(void);
/* Registers for membarrier(2); without it eng_quiesce sleeps 10 ms. */
void eng_membarrier_init(void);

/* ---- The writer (writer.c) ------------------------------------------------ */

/* The records the engine writes itself. Each returns the record's size in
 * bytes and writes it at p unless p is NULL. */
size_t fxt_init_record(uint64_t *p, uint64_t ticks_per_second);
/* A kernel object record: objtype 1 process, 2 thread (with a "process"
 * koid argument when process_koid is not 0). name is cut at 63 bytes. */
size_t fxt_kobj_record(uint64_t *p, unsigned objtype, uint64_t koid, const char *name, uint64_t process_koid);

/* ---- The wire and the connection ------------------------------------------ */

/* The upgrade's request and reply, the server's frames (wire.c) and the
 * packets in and out of the socket (conn.c) are conn.h's, which
 * `trace-server stream --provider` includes too. */

#endif
