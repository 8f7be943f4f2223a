/*
 * The FXT record writer: turns a macro's event into the words of an FXT
 * record in a buffer the engine reserved, and keeps each thread's string and
 * thread caches (the spec's notes: a string or thread is registered once, in
 * the durable buffer, and referred to by index after that). A thread's
 * cache is keyed by the string's address; on a miss the process's table,
 * keyed by content, gives the index another thread registered, so a string
 * is registered once per trace however many threads use it.
 *
 * Specification: ../shared/spec/fuchsia-trace-format.txt,
 * https://fuchsia.dev/fuchsia-src/reference/tracing/trace-format
 *
 * What we write (words are little-endian 64-bit, [lo .. hi] bit fields):
 *   initialization (type 1)   header; ticks per second
 *   string (type 2)           header [16..30] index, [32..46] length; stream
 *   thread (type 3)           header [16..23] index; process koid; thread koid
 *   event (type 4)            header [16..19] event type, [20..23] argument
 *                             count, [24..31] thread ref, [32..47] category
 *                             ref, [48..63] name ref; timestamp; (pid, tid
 *                             when the thread ref is 0); inline category and
 *                             name streams; arguments; the event type's word
 *                             (counter id, end time, async or flow id)
 *   kernel object (type 7)    header [16..23] object type, [24..39] name ref,
 *                             [40..43] argument count; koid; inline name;
 *                             for threads a koid argument "process"
 *   argument                  header [0..3] type, [4..15] size in words,
 *                             [16..31] name ref, [32..63] the 32-bit value,
 *                             the bool, or [32..47] a string value's ref;
 *                             inline name; value word or inline value stream
 * A string ref is 0 for "", 0x8000 | length for a stream inline in the
 * record, else an index; a thread ref is 0 for inline pid and tid words.
 *
 * Where we knowingly depart from it: none in the layout. Strings fall back to
 * inline streams once the 32767 indexes are used up (the spec's own advice),
 * and threads to inline koids past 255. Names and keys longer than 1000
 * bytes, and string values longer than 2000, are cut (at a UTF-8 boundary)
 * so that a record never passes the 32760-byte limit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "provider_internal.h"

#define MAX_NAME 1000u
#define MAX_VALUE 2000u
#define REF_FAIL 0xffffffffu /* the durable buffer is full: drop the record */

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Writes a zero-padded stream at p; returns the words written. */
static size_t put_stream(uint64_t *p, const char *s, size_t n)
{
	size_t words = pad8(n) / 8;

	if (words) {
		p[words - 1] = 0;
		memcpy(p, s, n);
	}
	return words;
}

size_t fxt_init_record(uint64_t *p, uint64_t tps)
{
	if (p) {
		p[0] = 1 | (UINT64_C(2) << 4);
		p[1] = tps;
	}
	return 16;
}

size_t fxt_kobj_record(uint64_t *p, unsigned objtype, uint64_t koid, const char *name, uint64_t process_koid)
{
	static const char key[] = "process";
	size_t n = utf8_cut(name, strlen(name), 63);
	size_t words = 2 + pad8(n) / 8 + (process_koid ? 3 : 0);

	if (p == NULL)
		return words * 8;
	p[0] = 7 | (uint64_t)words << 4 | (uint64_t)(objtype & 0xff) << 16 | (uint64_t)(n ? 0x8000 | n : 0) << 24 |
	       (uint64_t)(process_koid ? 1 : 0) << 40;
	p[1] = koid;
	p += 2 + put_stream(p + 2, name, n);
	if (process_koid) {
		p[0] = 8 | UINT64_C(3) << 4 | (uint64_t)(0x8000 | (sizeof(key) - 1)) << 16;
		put_stream(p + 1, key, sizeof(key) - 1);
		p[2] = process_koid;
	}
	return words * 8;
}

/* ---- Per-thread caches ---------------------------------------------------- */

static unsigned cache_slot(const char *s)
{
	uint64_t h = (uint64_t)(uintptr_t)s * UINT64_C(0x9e3779b97f4a7c15);

	return (unsigned)(h >> 56) & (TLS_CACHE_SIZE - 1);
}

/* Registers string s (n bytes) in the table: a string record in the durable
 * buffer. Returns the index, 0 when the indexes ran out, REF_FAIL when the
 * durable buffer is full. */
static uint32_t string_register(const char *s, size_t n)
{
	uint16_t idx = eng_alloc_string();
	size_t words;
	uint64_t *p;

	if (idx == 0)
		return 0;
	n = utf8_cut(s, n, MAX_NAME);
	words = 1 + pad8(n) / 8;
	if ((p = eng_alloc_durable(words * 8)) == NULL)
		return REF_FAIL;
	p[0] = 2 | (uint64_t)words << 4 | (uint64_t)idx << 16 | (uint64_t)n << 32;
	put_stream(p + 1, s, n);
	return idx;
}

/*
 * The process's string table, by content: a thread that misses its own
 * cache finds here a string another thread (or another copy of the same
 * literal: compilers need not merge them) registered, so each distinct
 * string takes one index and one durable record per trace, however many
 * threads use it. Only cache misses come here, under a mutex. Entries
 * point at the first copy registered, which lives as long as the process.
 */
#define STRTAB_SIZE 65536 /* twice the 32767 indexes: probes stay short */
static pthread_mutex_t strtab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const char *s;
	uint16_t idx;
} strtab[STRTAB_SIZE];
static uint32_t strtab_gen;   /* the engine generation the entries belong to */
static uint32_t strtab_count; /* entries in use */

static uint32_t content_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The index of s in this generation's table, registered when new: as
 * string_register returns. */
static uint32_t string_lookup(uint32_t gen, const char *s)
{
	uint32_t h, idx = 0;

	pthread_mutex_lock(&strtab_lock);
	if (gen > strtab_gen) { /* a new trace: forget the old table */
		if (strtab_count)
			memset(strtab, 0, sizeof(strtab));
		strtab_count = 0;
		strtab_gen = gen;
	}
	if (gen != strtab_gen) { /* a writer of a trace that has ended */
		pthread_mutex_unlock(&strtab_lock);
		return string_register(s, strlen(s));
	}
	for (h = content_hash(s) & (STRTAB_SIZE - 1); strtab[h].s; h = (h + 1) & (STRTAB_SIZE - 1))
		if (strcmp(strtab[h].s, s) == 0) {
			idx = strtab[h].idx;
			goto out_unlock;
		}
	idx = string_register(s, strlen(s));
	if (idx != 0 && idx != REF_FAIL) {
		strtab[h].s = s;
		strtab[h].idx = (uint16_t)idx;
		strtab_count++;
	}
out_unlock:
	pthread_mutex_unlock(&strtab_lock);
	return idx;
}

/* The ref of literal s for this thread: cached index, new index, or
 * 0x8000 | length (inline) when the indexes ran out; REF_FAIL as above. */
static uint32_t string_ref(struct trace_tls *t, const char *s)
{
	unsigned slot;
	uint32_t idx;

	if (s == NULL || s[0] == '\0')
		return 0;
	slot = cache_slot(s);
	if (__builtin_expect(t->cache[slot].key == s, 1))
		return t->cache[slot].ref;
	idx = string_lookup(t->gen, s);
	if (idx == REF_FAIL)
		return REF_FAIL;
	if (idx == 0)
		return 0x8000 | (uint32_t)utf8_cut(s, strlen(s), MAX_NAME);
	t->cache[slot].key = s;
	t->cache[slot].ref = (uint16_t)idx;
	return idx;
}

static void write_thread_name(struct trace_tls *t)
{
	uint64_t *p;
	size_t n = fxt_kobj_record(NULL, 2, t->tid, t->name, eng.pid);

	if ((p = eng_alloc_durable(n)) != NULL)
		fxt_kobj_record(p, 2, t->tid, t->name, eng.pid);
}

/* A new generation of the tables: forget the caches, register the thread. */
static int tls_reset(struct trace_tls *t, uint32_t gen)
{
	uint64_t *p;

	memset(t->cache, 0, sizeof(t->cache));
	t->gen = gen;
	t->thread_ref = eng_alloc_thread();
	if (t->thread_ref) {
		if ((p = eng_alloc_durable(24)) == NULL)
			return -1;
		p[0] = 3 | UINT64_C(3) << 4 | (uint64_t)t->thread_ref << 16;
		p[1] = eng.pid;
		p[2] = t->tid;
	}
	if (t->name[0])
		write_thread_name(t);
	return 0;
}

/*
 * The refs of a site's category and of name, from the site's cache when it
 * holds them for this generation (one load and a compare: no hashing), else
 * through the thread's cache, then kept in the site for the next record.
 * Only the first name written at a site is cached there (site->name never
 * changes once set, so the cached word always speaks of it); inline refs
 * (the indexes ran out) are not cached. Returns 0, or -1 when the durable
 * buffer is full (the record is dropped).
 */
static int site_refs(struct trace_tls *t, struct trace_site *site, const char *name, uint32_t *cat, uint32_t *nref)
{
	uint64_t w = __atomic_load_n(&site->refs, __ATOMIC_RELAXED);
	const char *first = __atomic_load_n(&site->name, __ATOMIC_RELAXED);

	if (__builtin_expect(w >> 32 == t->gen && first == name, 1) && name != NULL) {
		*cat = (uint32_t)(w >> 16) & 0xffff;
		*nref = (uint32_t)w & 0xffff;
		return 0;
	}
	if ((*cat = string_ref(t, site->category)) == REF_FAIL || (*nref = string_ref(t, name)) == REF_FAIL)
		return -1;
	if (first == NULL && name != NULL)
		__atomic_compare_exchange_n(&site->name, &first, name, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	if (__atomic_load_n(&site->name, __ATOMIC_RELAXED) == name && name != NULL && t->gen != 0 &&
	    !(*cat & 0x8000) && !(*nref & 0x8000))
		__atomic_store_n(&site->refs, (uint64_t)t->gen << 32 | (uint64_t)*cat << 16 | *nref, __ATOMIC_RELAXED);
	return 0;
}

/* ---- Events ----------------------------------------------------------------- */

/* What an event's strings resolved to. */
struct refs {
	uint32_t cat, name;
	uint32_t key[TRACE_MAX_ARGS];
	uint32_t val[TRACE_MAX_ARGS]; /* string values: ref */
};

static size_t inline_bytes(uint32_t ref)
{
	return (ref & 0x8000) ? pad8(ref & 0x7fff) : 0;
}

static size_t arg_words(const struct trace_arg *a, uint32_t key, uint32_t val)
{
	size_t w = 1 + inline_bytes(key) / 8;

	switch (a->type) {
	case TRACE_ARG_I64:
	case TRACE_ARG_U64:
	case TRACE_ARG_DOUBLE:
	case TRACE_ARG_POINTER:
	case TRACE_ARG_KOID:
		return w + 1;
	case TRACE_ARG_STRING:
		return w + inline_bytes(val) / 8;
	default:
		return w;
	}
}

/* Resolves every string of the event; returns the record's size in words,
 * or 0 when it must be dropped. */
static size_t resolve(struct trace_tls *t, struct trace_site *site, const char *name, unsigned type,
		      const struct trace_arg *args, size_t nargs, struct refs *r)
{
	size_t words = 2 + (t->thread_ref ? 0 : 2), i;

	if (site_refs(t, site, name, &r->cat, &r->name) != 0)
		return 0;
	words += inline_bytes(r->cat) / 8 + inline_bytes(r->name) / 8;
	for (i = 0; i < nargs; i++) {
		const struct trace_arg *a = &args[i];

		if ((r->key[i] = string_ref(t, a->key)) == REF_FAIL)
			return 0;
		r->val[i] = 0;
		if (a->type == TRACE_ARG_STRING && a->v.s != NULL) {
			if (a->interned)
				r->val[i] = string_ref(t, a->v.s);
			else if (a->v.s[0])
				r->val[i] = 0x8000 | (uint32_t)utf8_cut(a->v.s, strlen(a->v.s), MAX_VALUE);
			if (r->val[i] == REF_FAIL)
				return 0;
		}
		words += arg_words(a, r->key[i], r->val[i]);
	}
	if (type == TRACE_EV_COUNTER || type >= TRACE_EV_DURATION_COMPLETE)
		words++;
	return words * 8 <= ENG_MAX_RECORD ? words : 0;
}

/* The stream of an inline ref's string s; returns words written. */
static size_t put_ref_stream(uint64_t *p, uint32_t ref, const char *s)
{
	return (ref & 0x8000) ? put_stream(p, s, ref & 0x7fff) : 0;
}

static uint64_t *put_arg(uint64_t *p, const struct trace_arg *a, uint32_t key, uint32_t val)
{
	uint64_t h = a->type | (uint64_t)arg_words(a, key, val) << 4 | (uint64_t)key << 16;
	uint64_t *q = p + 1;

	q += put_ref_stream(q, key, a->key);
	switch (a->type) {
	case TRACE_ARG_I32:
	case TRACE_ARG_U32:
		h |= (uint64_t)(uint32_t)a->v.u << 32;
		break;
	case TRACE_ARG_BOOL:
		h |= (uint64_t)(a->v.u ? 1 : 0) << 32;
		break;
	case TRACE_ARG_I64:
	case TRACE_ARG_U64:
	case TRACE_ARG_POINTER:
	case TRACE_ARG_KOID:
		*q++ = a->v.u;
		break;
	case TRACE_ARG_DOUBLE:
		memcpy(q++, &a->v.d, 8);
		break;
	case TRACE_ARG_STRING:
		h |= (uint64_t)val << 32;
		q += put_ref_stream(q, val, a->v.s);
		break;
	default:
		break;
	}
	p[0] = h;
	return q;
}

static void put_event(uint64_t *p, size_t words, struct trace_tls *t, const struct trace_site *site,
		      const char *name, unsigned type, uint64_t ts, uint64_t extra, const struct trace_arg *args,
		      size_t nargs, const struct refs *r)
{
	uint64_t *q = p + 2;
	size_t i;

	p[0] = 4 | (uint64_t)words << 4 | (uint64_t)type << 16 | (uint64_t)nargs << 20 | (uint64_t)t->thread_ref << 24 |
	       (uint64_t)r->cat << 32 | (uint64_t)r->name << 48;
	p[1] = ts;
	if (t->thread_ref == 0) {
		*q++ = eng.pid;
		*q++ = t->tid;
	}
	q += put_ref_stream(q, r->cat, site->category);
	q += put_ref_stream(q, r->name, name);
	for (i = 0; i < nargs; i++)
		q = put_arg(q, &args[i], r->key[i], r->val[i]);
	if (type == TRACE_EV_COUNTER || type >= TRACE_EV_DURATION_COMPLETE)
		*q = extra;
}

void trace_emit_(struct trace_site *site, unsigned type, const char *name, uint64_t ts, uint64_t extra,
		 const struct trace_arg *args, size_t nargs)
{
	struct trace_tls *t = eng_tls();
	uint64_t now = eng_now(), *p;
	struct refs r;
	uint32_t gen;
	size_t words;

	if (t == NULL)
		return;
	if (type == TRACE_EV_DURATION_COMPLETE)
		extra = now;
	else
		ts = now;
	if (nargs > TRACE_MAX_ARGS)
		nargs = TRACE_MAX_ARGS;
	eng_enter(t);
	gen = atomic_load_explicit(&eng.gen, memory_order_relaxed);
	if (__builtin_expect(t->gen != gen, 0) && tls_reset(t, gen) != 0)
		goto out_leave;
	if ((words = resolve(t, site, name, type, args, nargs, &r)) == 0)
		goto out_leave;
	if ((p = eng_alloc_record(words * 8)) != NULL) {
		put_event(p, words, t, site, name, type, ts, extra, args, nargs, &r);
		eng_count_record(t);
	}
out_leave:
	eng_leave(t);
}

void trace_scope_end_(struct trace_scope *s)
{
	/* the category may have gone off since the start: the zone still ends */
	trace_emit_(s->site, TRACE_EV_DURATION_COMPLETE, s->name, s->start, 0, s->args, s->nargs);
}

void trace_set_thread_name(const char *name)
{
	struct trace_tls *t = eng_tls();
	uint32_t gen;

	if (t == NULL || name == NULL)
		return;
	eng_enter(t);
	utf8_copy(t->name, sizeof(t->name), name);
	gen = atomic_load_explicit(&eng.gen, memory_order_relaxed);
	if (name[0] && atomic_load_explicit(&eng.recording, memory_order_relaxed)) {
		if (t->gen != gen)
			tls_reset(t, gen); /* writes the name */
		else
			write_thread_name(t);
	}
	eng_leave(t);
}

void trace_set_process_name(const char *name)
{
	struct trace_tls *t = eng_tls();
	uint64_t *p;
	size_t n;

	if (t == NULL || name == NULL)
		return;
	eng_enter(t);
	utf8_copy(eng.process_name, sizeof(eng.process_name), name);
	if (atomic_load_explicit(&eng.recording, memory_order_relaxed)) {
		n = fxt_kobj_record(NULL, 1, eng.pid, eng.process_name, 0);
		if ((p = eng_alloc_durable(n)) != NULL)
			fxt_kobj_record(p, 1, eng.pid, eng.process_name, 0);
	}
	eng_leave(t);
}
