/*
 * The neutral trace model shared by the decoders and the build stage.
 *
 * Decoders (fxt.h, xray.h) turn bytes into model records: strings are
 * interned to dense ids, threads to dense indexes, events are appended to one
 * compact array (no allocation per event; at checkpoints between records
 * the sorter, sorter.h, takes a full array away as a sorted run) and
 * everything else to arrays of its own. The build stage (build.h) then
 * resolves, matches the events in order and writes the rows. Nothing here
 * knows about file formats or SQLite.
 */
#ifndef INGEST_MODEL_H
#define INGEST_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ingest.h"
#include "runsort.h"
#include "util.h"

#define MDL_PID_UNRESOLVED UINT64_MAX /* pid to be found from kernel objects */

enum mdl_ev_kind {
	MDL_EV_INSTANT,
	MDL_EV_COUNTER,
	MDL_EV_BEGIN,
	MDL_EV_END,
	MDL_EV_COMPLETE,
	MDL_EV_ASYNC_BEGIN,
	MDL_EV_ASYNC_INSTANT,
	MDL_EV_ASYNC_END,
	MDL_EV_FLOW_BEGIN,
	MDL_EV_FLOW_STEP,
	MDL_EV_FLOW_END,
	MDL_EV_CALL,   /* a complete event appended before its end is known:
			* extra indexes m->ends (see there) */
	MDL_EV_KIND_COUNT
};

/* One timestamped event. 40 bytes; millions of them live in one array. */
struct mdl_ev {
	int64_t ts;     /* nanoseconds on the trace clock */
	uint64_t extra; /* end ns (complete), correlation id (async), flow id, counter id */
	uint32_t seq;   /* position in the file; ties in ts keep file order */
	uint32_t thread;/* index into the model's thread table */
	uint32_t cat;   /* string id */
	uint32_t name;  /* string id */
	uint32_t args;  /* index of the first argument in the argument array */
	uint8_t kind;   /* enum mdl_ev_kind */
	uint8_t nargs;  /* arguments args .. args + nargs - 1 */
	uint8_t sub;    /* ts's sub-nanosecond remainder, in 1/256 ns, from a
			 * clock ticking faster than 1 GHz (else 0): ties in ts
			 * are broken by it before seq (docs/API.md, Meaning 3) */
	uint8_t end_sub;/* the same for a complete event's end (extra) */
};

enum mdl_arg_type {
	MDL_ARG_NULL = 0,
	MDL_ARG_I32 = 1,
	MDL_ARG_U32 = 2,
	MDL_ARG_I64 = 3,
	MDL_ARG_U64 = 4,
	MDL_ARG_DOUBLE = 5,
	MDL_ARG_STRING = 6,
	MDL_ARG_POINTER = 7,
	MDL_ARG_KOID = 8,
	MDL_ARG_BOOL = 9,
	MDL_ARG_BLOB = 10
};

struct mdl_arg {
	uint32_t key;  /* string id of the argument name */
	uint32_t len;  /* blob length in bytes */
	uint8_t type;  /* enum mdl_arg_type */
	union {
		int64_t i;     /* I32, I64 */
		uint64_t u;    /* U32, U64, POINTER, KOID, BOOL, blob offset in the byte arena */
		double d;      /* DOUBLE */
		uint32_t str;  /* STRING: string id */
	} v;
};

/* A (pid, tid) pair; pid may be MDL_PID_UNRESOLVED until kernel objects are known. */
struct mdl_thread {
	uint64_t pid;
	uint64_t tid;
};

struct mdl_sched {
	int64_t ts;
	uint32_t seq;
	uint16_t cpu;
	uint8_t out_state;
	uint8_t legacy;       /* legacy record: pids and priorities given */
	uint32_t out_thread;  /* thread index */
	uint32_t in_thread;   /* thread index */
	int32_t in_priority;  /* legacy priority or incoming_weight */
	uint8_t in_idle;      /* incoming thread is the idle thread */
};

struct mdl_log {
	int64_t ts;
	uint32_t seq;
	uint32_t thread;
	uint32_t msg; /* string id */
};

struct mdl_kobj {
	uint64_t koid;
	uint64_t process;   /* "process" koid argument of a thread, or MDL_PID_UNRESOLVED */
	uint32_t type;
	uint32_t name;
	uint32_t args, nargs;
};

struct mdl_uobj {
	uint64_t pid;
	uint64_t ptr;
	uint32_t name;
	uint32_t args, nargs;
};

enum mdl_blob_kind { MDL_BLOB = 0, MDL_LARGE_BLOB_META = 1, MDL_LARGE_BLOB = 2 };

struct mdl_blob {
	int64_t ts;        /* 0 without metadata */
	uint64_t off;      /* payload offset in the byte arena */
	uint64_t len;      /* payload bytes */
	uint32_t thread;   /* MDL_NONE without metadata */
	uint32_t cat, name;
	uint32_t args, nargs;
	uint8_t kind;      /* enum mdl_blob_kind */
	uint8_t type;      /* blob type of a small blob record */
};

enum mdl_prof_kind { MDL_PROF_MODULE = 0, MDL_PROF_MMAP = 1, MDL_PROF_BACKTRACE = 2 };

struct mdl_prof {
	int64_t ts;
	uint32_t thread;
	uint8_t kind;     /* enum mdl_prof_kind */
	uint8_t flags;    /* mmap flags */
	uint16_t module;  /* module id */
	uint32_t name;    /* module name (string id) */
	uint64_t off, len;/* build id or frames in the byte arena */
	uint64_t start, range, vaddr;
};

struct mdl_provider {
	uint32_t id;
	uint32_t name;         /* string id */
	uint64_t ticks_per_second;
	uint64_t overflows;    /* provider buffer-overflow events */
	uint32_t *strings[128];/* string index -> id, pages of 256, allocated on use */
	uint32_t threads[256]; /* thread index -> model thread + 1, 0 = unset */
};

/* Counters of damaged or unusual input, named as in docs/API.md. */
#define MDL_DIAG_LIST(X)                                                                                               \
	X(unknown_records)                                                                                             \
	X(malformed_records)                                                                                           \
	X(truncated_bytes)                                                                                             \
	X(unresolved_string_refs)                                                                                      \
	X(unresolved_thread_refs)                                                                                      \
	X(unmatched_ends)                                                                                              \
	X(unterminated_slices)                                                                                         \
	X(flow_no_enclosing_slice)                                                                                     \
	X(negative_durations)                                                                                          \
	X(unknown_args)                                                                                                \
	X(non_numeric_counter_args)                                                                                    \
	X(oversized_records)                                                                                           \
	X(timestamp_overflows)                                                                                         \
	X(unmatched_flow_steps)                                                                                        \
	X(unmatched_async_instants)                                                                                    \
	X(buffer_overflows)                                                                                            \
	X(ignored_records)

struct mdl_diag {
#define X(n) uint64_t n;
	MDL_DIAG_LIST(X)
#undef X
};

struct model {
	/* strings */
	char *sdata;        /* all interned strings, each NUL terminated */
	size_t slen, scap;
	struct vec soff;    /* uint64_t offset of string id i in sdata; id 0 is "" */
	uint32_t *shash;    /* string id + 1, 0 = empty slot */
	size_t shash_mask;

	struct vec threads; /* struct mdl_thread */
	struct kmap thread_map;
	struct vec events;  /* struct mdl_ev: those since the last spill (sorter.h) */
	struct vec ends;    /* int64_t: the end of each MDL_EV_CALL event, filled
			     * in when the call returns; INT64_MIN while it has
			     * not (for good: then the event is a begin). A
			     * decoder whose calls' ends come late (XRay) appends
			     * them at their start, in time order, without
			     * holding them or patching events the sorter may
			     * have spilled */
	struct vec args;    /* struct mdl_arg */
	struct vec bytes;   /* uint8_t arena for blobs, build ids, frames */
	struct runsort sched; /* struct mdl_sched, put in (cpu, ts, seq) order,
			     * the sched table's; once a sorter is attached
			     * (sorter.h), in runs of sorter_run_bytes()
			     * spilled to a scratch file, so that they take a
			     * buffer's memory whatever the trace's size */
	int64_t sched_first, sched_last; /* their time range, once sched.count > 0 */
	int sched_keep;     /* a growing trace's: each is also appended to sched_grown */
	struct vec sched_grown; /* struct mdl_sched decoded since a growing trace's
			     * last commit took them (commit_sched.h) */
	struct vec logs;    /* struct mdl_log */
	struct vec kobjs;   /* struct mdl_kobj, file order */
	struct vec uobjs;   /* struct mdl_uobj */
	struct vec blobs;   /* struct mdl_blob */
	struct vec profs;   /* struct mdl_prof */
	struct vec providers; /* struct mdl_provider * */
	uint32_t seq;       /* next file-order sequence number */
	uint64_t events_total; /* events ever appended, those spilled included;
				* a decoder rolling events.len back rolls this back too */
	int (*spill)(void *ctx, struct model *m); /* takes every event out of
				* events (events.len = 0); 0, or -1 on failure.
				* NULL: events stay in memory until the build */
	void *spill_ctx;    /* spill's first argument */
	size_t spill_at;    /* events held before a checkpoint spills them */
	int oom;            /* sticky: an allocation failed */
	struct mdl_diag diag;
	const char *format; /* "fxt", "xray-fdr" */
	/*
	 * by_thread: the decoder appends every event of a thread before any of
	 * the next thread's (XRay), and makes no flow, async or cross-thread
	 * event. Events are then ordered thread after thread, each thread's by
	 * (ts, seq) (sorter.h), so that each thread's slices can be written
	 * while the next is matched (build.h). ts_first and ts_last are the
	 * events' time range then (ts_timed: there is one), which matching
	 * would otherwise learn only at its end.
	 */
	int by_thread;
	int ts_timed;
	int64_t ts_first, ts_last;
};

/* A by_thread decoder notes each event's ts. */
static inline void model_note_ts(struct model *m, int64_t ts)
{
	if (!m->ts_timed) {
		m->ts_first = m->ts_last = ts;
		m->ts_timed = 1;
	}
	if (ts < m->ts_first)
		m->ts_first = ts;
	if (ts > m->ts_last)
		m->ts_last = ts;
}

int model_init(struct model *m);
void model_fini(struct model *m);
/* Returns the id of the string (0 for the empty string), MDL_NONE when out of memory. */
uint32_t model_intern(struct model *m, const char *s, size_t n);
const char *model_str(const struct model *m, uint32_t id);
/* Returns the index of the thread (pid, tid), adding it when new. */
uint32_t model_thread(struct model *m, uint64_t pid, uint64_t tid);
/* Appends an event; its args must already be in m->args from ev->args on. */
struct mdl_ev *model_event(struct model *m);
/*
 * A point between records, where no event appended so far will be changed
 * or rolled back: events may be handed to m->spill here (when set, and once
 * events.len reaches spill_at). Decoders call it after every record; the
 * index of an event is meaningless after a checkpoint.
 */
void model_checkpoint(struct model *m);
/* Adds a context switch, giving it the next sequence number; 0, or -1 when
 * out of memory or its runs' scratch file failed. */
int model_sched(struct model *m, const struct mdl_sched *s);
/* Copies n bytes into the byte arena; returns the offset. */
uint64_t model_bytes(struct model *m, const void *p, size_t n);
/* Returns the provider with this id, registering an empty one when unknown;
 * reset clears its tables (a provider-info record). NULL when out of memory. */
struct mdl_provider *model_provider(struct model *m, uint32_t id, int reset);

#endif
