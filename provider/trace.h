/*
 * trace.h: instrument a C or C++ program; its trace streams to a trace-server.
 *
 * The one public header of libtrace-provider (docs/PROVIDER.md is the manual).
 * A program marks what it does with the TRACE_* macros; the library writes
 * Fuchsia Trace Format (FXT) records into the buffers of the trace engine
 * (../shared/spec/fuchsia-trace-engine-buffering.txt: a durable buffer for
 * string and thread records, two rolling buffers for the rest, in oneshot,
 * circular or streaming mode) and a thread of its own speaks the FIFO packets
 * of docs/PROVIDER-PROTOCOL.md with the server, which starts and stops it.
 *
 * Cost: every macro first reads its call site's category state with one
 * relaxed atomic load and branches; while the category is off (or no server
 * is connected) nothing else runs, not even the evaluation of its arguments.
 *
 * Strings: categories, event names and argument keys must be string literals
 * (or otherwise live and unchanged until the process exits): they are
 * interned by address into each thread's string cache. String argument
 * values (TA_STRING) are copied into the record.
 *
 * The header is C11 and C++11 with GNU extensions (gcc or clang): the
 * atomics are the __atomic builtins, C's TRACE_DURATION uses the cleanup
 * attribute (C++'s a destructor), and a macro given no arguments after its
 * name leaves the variadic part empty, which -Wpedantic reports.
 */
#ifndef TRACE_PROVIDER_TRACE_H
#define TRACE_PROVIDER_TRACE_H

#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#include <initializer_list>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Starting and stopping ---------------------------------------------- */

/*
 * Where the provider connects and what it calls itself. A NULL or 0 field is
 * taken from the environment, then from the default:
 *   server            TRACE_SERVER           (none: the library stays off)
 *                     "http://127.0.0.1:8080"; only http:// is supported
 *   token             TRACE_TOKEN            (none)
 *   name              TRACE_PROVIDER_NAME    the program's name
 *   start_timeout_ms  TRACE_START_TIMEOUT_MS 0: trace_provider_start returns at once;
 *                                            else it waits up to this long for the
 *                                            server to start tracing
 */
struct trace_provider_config {
	const char *server;
	const char *token;
	const char *name;
	unsigned start_timeout_ms;
};

/*
 * Starts the provider's thread, which connects to the server (and reconnects
 * when the connection is lost). Returns 0, or -1 when no server is configured
 * or the thread cannot be created (the program then runs untraced). Called
 * automatically when the library is loaded if TRACE_SERVER is set. Calling it
 * while the provider runs does nothing and returns 0.
 */
int trace_provider_start(const struct trace_provider_config *cfg);

/*
 * Sends what the buffers hold if tracing (as for a STOP from the server),
 * closes the connection and joins the provider's thread. Waits at most
 * TRACE_EXIT_TIMEOUT_MS (default 5000) for the server. Registered with
 * atexit() by trace_provider_start.
 */
void trace_provider_stop(void);

/* Waits up to timeout_ms for tracing to be on. Returns 1 when it is, else 0. */
int trace_provider_wait_started(unsigned timeout_ms);

/* 1 while the server has this provider recording, else 0. */
int trace_is_enabled(void);

/* Sends an alert (the controller's WatchAlert). name: 1 to 14 bytes, longer
 * names are cut. Returns 0, or -1 when not connected or the queue is full. */
int trace_alert(const char *name);

/* Names the calling thread / the process in the trace (kernel object
 * records, kept in the durable buffer). name is copied; up to 63 bytes. */
void trace_set_thread_name(const char *name);
void trace_set_process_name(const char *name);

/* Ticks of the trace clock now, and ticks per second (the initialization
 * record's value). The clock is the CPU's invariant TSC when it has one,
 * else CLOCK_MONOTONIC in nanoseconds; either way it counts from boot. */
uint64_t trace_now(void);
uint64_t trace_ticks_per_second(void);

/* The clock as the macros read it, inline: the engine sets tsc (once, at
 * the provider's start, after calibrating the TSC against CLOCK_MONOTONIC)
 * and base; never written by the program. */
struct trace_clock_ {
	uint64_t tsc;  /* 1: ticks are (TSC - base); 0: trace_now() is CLOCK_MONOTONIC */
	uint64_t base; /* the TSC's value at boot, as CLOCK_MONOTONIC counts it */
};
extern struct trace_clock_ trace_clock_;

static inline uint64_t trace_now_(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(__atomic_load_n(&trace_clock_.tsc, __ATOMIC_RELAXED) != 0, 1))
		return __builtin_ia32_rdtsc() - trace_clock_.base;
#endif
	return trace_now();
}

/* What the engine counted since the last START (STATS sends the same). */
struct trace_stats {
	uint64_t records_dropped; /* records not written: buffer full, durable buffer full */
	uint32_t wrapped_count;   /* rolling buffer switches */
	uint64_t bytes_written;   /* bytes of records written into the buffers */
	uint64_t bytes_sent;      /* bytes of records sent to the server */
	uint64_t records_overwritten; /* circular mode: records written over by newer ones, counted at stop */
};
void trace_get_stats(struct trace_stats *out);

/* ---- Arguments -------------------------------------------------------- */

enum trace_arg_type {
	TRACE_ARG_NULL = 0,
	TRACE_ARG_I32 = 1,
	TRACE_ARG_U32 = 2,
	TRACE_ARG_I64 = 3,
	TRACE_ARG_U64 = 4,
	TRACE_ARG_DOUBLE = 5,
	TRACE_ARG_STRING = 6,
	TRACE_ARG_POINTER = 7,
	TRACE_ARG_KOID = 8,
	TRACE_ARG_BOOL = 9,
};

/* One argument; built by the TA_* macros, never by hand. */
struct trace_arg {
	const char *key;   /* a literal; NULL only in the array's hidden first slot */
	uint32_t type;     /* enum trace_arg_type */
	uint32_t interned; /* TRACE_ARG_STRING: 1 = intern the value by address (a literal) */
	union {
		int64_t i;
		uint64_t u;
		double d;
		const char *s;
	} v;
};

/* Builds an argument; the TA_* macros below are the interface. */
static inline struct trace_arg trace_arg_u_(const char *k, uint32_t type, uint64_t u)
{
	struct trace_arg a;

	a.key = k;
	a.type = type;
	a.interned = 0;
	a.v.u = u;
	return a;
}
static inline struct trace_arg trace_arg_d_(const char *k, double d)
{
	struct trace_arg a = trace_arg_u_(k, TRACE_ARG_DOUBLE, 0);

	a.v.d = d;
	return a;
}
static inline struct trace_arg trace_arg_s_(const char *k, const char *s, uint32_t interned)
{
	struct trace_arg a = trace_arg_u_(k, TRACE_ARG_STRING, 0);

	a.v.s = s;
	a.interned = interned;
	return a;
}

#define TA_NULL(k) trace_arg_u_((k), TRACE_ARG_NULL, 0)
#define TA_I32(k, x) trace_arg_u_((k), TRACE_ARG_I32, (uint64_t)(int64_t)(int32_t)(x))
#define TA_U32(k, x) trace_arg_u_((k), TRACE_ARG_U32, (uint64_t)(uint32_t)(x))
#define TA_I64(k, x) trace_arg_u_((k), TRACE_ARG_I64, (uint64_t)(int64_t)(x))
#define TA_U64(k, x) trace_arg_u_((k), TRACE_ARG_U64, (uint64_t)(x))
#define TA_DOUBLE(k, x) trace_arg_d_((k), (double)(x))
/* A NUL-terminated string, copied into the record (at most 2000 bytes kept). */
#define TA_STRING(k, x) trace_arg_s_((k), (x), 0)
/* A string literal, interned like names: cheaper when it repeats. */
#define TA_STRING_LITERAL(k, x) trace_arg_s_((k), (x), 1)
#define TA_POINTER(k, x) trace_arg_u_((k), TRACE_ARG_POINTER, (uint64_t)(uintptr_t)(x))
#define TA_KOID(k, x) trace_arg_u_((k), TRACE_ARG_KOID, (uint64_t)(x))
#define TA_BOOL(k, x) trace_arg_u_((k), TRACE_ARG_BOOL, (x) ? 1u : 0u)

/* At most this many arguments per event (FXT's 4-bit count); more are dropped. */
#define TRACE_MAX_ARGS 15

/* ---- Call sites and categories ---------------------------------------- */

/* One per macro use, static. state: 0 off, 1 on, 2 not yet registered;
 * read and written with the __atomic builtins only. The last two fields
 * are the site's string refs, so that a record written from it looks
 * nothing up (writer.c). */
struct trace_site {
	uint32_t state;
	const char *category;
	struct trace_site *next; /* the engine's list of registered sites */
	const char *name;        /* the first event name written here; set once, then never changed */
	uint64_t refs;           /* generation << 32 | category ref << 16 | ref of name; 0: none */
};
#define TRACE_SITE_INIT_(cat) {2u, (cat), NULL, NULL, 0}

/* Registers a site on its first use; returns whether it is on. */
int trace_site_register_(struct trace_site *site);

/* The one check every macro makes: a relaxed load and a predictable branch
 * when off; on, a second compare. */
static inline int trace_site_on_(struct trace_site *site)
{
	uint32_t s = __atomic_load_n(&site->state, __ATOMIC_RELAXED);

	if (__builtin_expect(s == 0, 1))
		return 0;
	if (__builtin_expect(s == 1, 1))
		return 1;
	return trace_site_register_(site);
}
#define TRACE_SITE_ON_(site) trace_site_on_(site)

#define TRACE_CAT2_(a, b) a##b
#define TRACE_CAT_(a, b) TRACE_CAT2_(a, b)
#define TRACE_UNIQ_(x) TRACE_CAT_(x, __LINE__)

/* The arguments as (array, count); the array's first slot is a placeholder
 * so that an empty argument list still makes a valid initializer. In C a
 * compound literal, alive until the enclosing block ends; in C++ an
 * initializer_list named in the macro's own block. */
#ifndef __cplusplus
#define TRACE_ARGV_(...) ((const struct trace_arg[]){{0}, __VA_ARGS__} + 1)
#define TRACE_ARGC_(...) (sizeof((const struct trace_arg[]){{0}, __VA_ARGS__}) / sizeof(struct trace_arg) - 1)
#define TRACE_ARGS_(...) TRACE_ARGV_(__VA_ARGS__), TRACE_ARGC_(__VA_ARGS__)
#endif

/* Event types of the FXT event record. */
enum trace_event_type {
	TRACE_EV_INSTANT = 0,
	TRACE_EV_COUNTER = 1,
	TRACE_EV_DURATION_BEGIN = 2,
	TRACE_EV_DURATION_END = 3,
	TRACE_EV_DURATION_COMPLETE = 4,
	TRACE_EV_ASYNC_BEGIN = 5,
	TRACE_EV_ASYNC_INSTANT = 6,
	TRACE_EV_ASYNC_END = 7,
	TRACE_EV_FLOW_BEGIN = 8,
	TRACE_EV_FLOW_STEP = 9,
	TRACE_EV_FLOW_END = 10,
};

/* Out of line; reached only when the site is on. */
void trace_emit_(struct trace_site *site, unsigned type, const char *name, uint64_t ts, uint64_t extra,
		 const struct trace_arg *args, size_t nargs);

#ifndef __cplusplus
#define TRACE_EMIT_(cat, type, name, ts, extra, ...)                                                                   \
	do {                                                                                                           \
		static struct trace_site trace_site_ = TRACE_SITE_INIT_(cat);                                          \
		if (TRACE_SITE_ON_(&trace_site_))                                                                      \
			trace_emit_(&trace_site_, (type), (name), (ts), (extra), TRACE_ARGS_(__VA_ARGS__));            \
	} while (0)
#else
#define TRACE_EMIT_(cat, type, name, ts, extra, ...)                                                                   \
	do {                                                                                                           \
		static struct trace_site trace_site_ = TRACE_SITE_INIT_(cat);                                          \
		if (TRACE_SITE_ON_(&trace_site_)) {                                                                    \
			const std::initializer_list<struct trace_arg> trace_il_ = {trace_arg(), __VA_ARGS__};          \
			trace_emit_(&trace_site_, (type), (name), (ts), (extra), trace_il_.begin() + 1,                \
				    trace_il_.size() - 1);                                                             \
		}                                                                                                      \
	} while (0)
#endif

/* ---- The macros --------------------------------------------------------- */

/* 1 when category cat is being recorded (same cost as any macro when off). */
#define TRACE_CATEGORY_ENABLED(cat)                                                                                    \
	__extension__({                                                                                                \
		static struct trace_site trace_site_ = TRACE_SITE_INIT_(cat);                                          \
		TRACE_SITE_ON_(&trace_site_);                                       \
	})

#define TRACE_INSTANT(cat, name, ...) TRACE_EMIT_(cat, TRACE_EV_INSTANT, name, 0, 0, __VA_ARGS__)
/* A sample of each argument (integers or doubles), a series of the counter
 * (name, id). */
#define TRACE_COUNTER(cat, name, id, ...) TRACE_EMIT_(cat, TRACE_EV_COUNTER, name, 0, (id), __VA_ARGS__)
#define TRACE_DURATION_BEGIN(cat, name, ...) TRACE_EMIT_(cat, TRACE_EV_DURATION_BEGIN, name, 0, 0, __VA_ARGS__)
#define TRACE_DURATION_END(cat, name, ...) TRACE_EMIT_(cat, TRACE_EV_DURATION_END, name, 0, 0, __VA_ARGS__)
/* A duration whose start was taken earlier with trace_now(); ends now. */
#define TRACE_DURATION_COMPLETE(cat, name, start_ticks, ...)                                                           \
	TRACE_EMIT_(cat, TRACE_EV_DURATION_COMPLETE, name, (start_ticks), 0, __VA_ARGS__)
#define TRACE_ASYNC_BEGIN(cat, name, id, ...) TRACE_EMIT_(cat, TRACE_EV_ASYNC_BEGIN, name, 0, (id), __VA_ARGS__)
#define TRACE_ASYNC_INSTANT(cat, name, id, ...) TRACE_EMIT_(cat, TRACE_EV_ASYNC_INSTANT, name, 0, (id), __VA_ARGS__)
#define TRACE_ASYNC_END(cat, name, id, ...) TRACE_EMIT_(cat, TRACE_EV_ASYNC_END, name, 0, (id), __VA_ARGS__)
#define TRACE_FLOW_BEGIN(cat, name, id, ...) TRACE_EMIT_(cat, TRACE_EV_FLOW_BEGIN, name, 0, (id), __VA_ARGS__)
#define TRACE_FLOW_STEP(cat, name, id, ...) TRACE_EMIT_(cat, TRACE_EV_FLOW_STEP, name, 0, (id), __VA_ARGS__)
#define TRACE_FLOW_END(cat, name, id, ...) TRACE_EMIT_(cat, TRACE_EV_FLOW_END, name, 0, (id), __VA_ARGS__)

/*
 * A zone: the rest of the enclosing block as one duration, written as a
 * single duration-complete record when the block is left (by any path).
 * The arguments are evaluated at the start and written at the end: a
 * TA_STRING value must stay valid until then.
 */
struct trace_scope {
	struct trace_site *site; /* NULL: the category was off at the start */
	const char *name;
	const struct trace_arg *args;
	size_t nargs;
	uint64_t start;
};
void trace_scope_end_(struct trace_scope *s);
static inline struct trace_scope trace_scope_begin_(struct trace_site *site, const char *name,
						    const struct trace_arg *args, size_t nargs)
{
	struct trace_scope s = {site, name, args, nargs, trace_now_()};

	return s;
}
static inline void trace_scope_end(struct trace_scope *s)
{
	if (__builtin_expect(s->site != NULL, 0))
		trace_scope_end_(s);
}
#ifndef __cplusplus
#define TRACE_DURATION(cat, name, ...)                                                                                 \
	static struct trace_site TRACE_UNIQ_(trace_site_) = TRACE_SITE_INIT_(cat);                                     \
	struct trace_scope TRACE_UNIQ_(trace_scope_) __attribute__((cleanup(trace_scope_end))) =                       \
		TRACE_SITE_ON_(&TRACE_UNIQ_(trace_site_))                                                              \
			? trace_scope_begin_(&TRACE_UNIQ_(trace_site_), (name), TRACE_ARGS_(__VA_ARGS__))              \
			: (struct trace_scope){NULL, NULL, NULL, 0, 0}
#endif

#ifdef __cplusplus
}

/* C++: the zone is an object whose destructor ends it; it keeps a copy of
 * the arguments, taken only when the category is on. */
class trace_zone_ {
public:
	explicit trace_zone_(struct trace_site *site) : on_(trace_site_on_(site)), site_(site)
	{
		s_.site = NULL;
	}
	~trace_zone_()
	{
		trace_scope_end(&s_);
	}
	void begin(const char *name, std::initializer_list<struct trace_arg> il)
	{
		size_t n = 0;

		for (const struct trace_arg *a = il.begin() + 1; a != il.end() && n < TRACE_MAX_ARGS; a++)
			args_[n++] = *a;
		s_ = trace_scope_begin_(site_, name, args_, n);
	}
	const int on_;

private:
	trace_zone_(const trace_zone_ &);
	trace_zone_ &operator=(const trace_zone_ &);
	struct trace_site *site_;
	struct trace_scope s_;
	struct trace_arg args_[TRACE_MAX_ARGS];
};
#define TRACE_DURATION(cat, name, ...)                                                                                 \
	static struct trace_site TRACE_UNIQ_(trace_site_) = TRACE_SITE_INIT_(cat);                                     \
	trace_zone_ TRACE_UNIQ_(trace_zone_)(&TRACE_UNIQ_(trace_site_));                                               \
	if (TRACE_UNIQ_(trace_zone_).on_)                                                                              \
	TRACE_UNIQ_(trace_zone_).begin((name), {trace_arg(), __VA_ARGS__})
#endif

#endif
