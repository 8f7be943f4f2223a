/*
 * FXT writer: builds Fuchsia Trace Format archives in memory for tests,
 * fuzz seeds and benchmarks (see fxt_writer.h for the specification link
 * and the readings we chose).
 *
 * Each record function first computes the record's size in words, then
 * writes the header and the atoms in the order the specification lists
 * them. The size helpers (str_words, thr_words, fxtw_arg_words) and the
 * put helpers must agree; fxtw_end_record() asserts that they did.
 */
#include "fxt_writer.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_WORDS = 0xfff,          /* 12-bit record and argument size fields */
	MAX_STR = 0x7fff,           /* 15-bit string lengths */
	MAX_ARGS = 15,              /* 4-bit argument counts */
	MAGIC = 0x16547846
};

/* Bits v placed at [lo ..]; asserts that v fits in width bits. */
static uint64_t field(uint64_t v, unsigned lo, unsigned width)
{
	assert(width == 64 || v < (UINT64_C(1) << width));
	return v << lo;
}

static size_t pad_words(size_t len)
{
	return (len + 7) / 8;
}

static void reserve(struct fxtw *w, size_t n)
{
	size_t cap;

	if (w->cap - w->len >= n)
		return;
	cap = w->cap ? w->cap : 4096;
	while (cap - w->len < n)
		cap *= 2;
	w->buf = realloc(w->buf, cap);
	if (!w->buf)
		abort();
	w->cap = cap;
}

static void store_word(uint8_t *q, uint64_t v, int big_endian)
{
	int i;

	for (i = 0; i < 8; i++)
		q[big_endian ? 7 - i : i] = (uint8_t)(v >> (8 * i));
}

void fxtw_init(struct fxtw *w, int big_endian)
{
	w->buf = NULL;
	w->len = 0;
	w->cap = 0;
	w->big_endian = big_endian;
}

void fxtw_fini(struct fxtw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = 0;
	w->cap = 0;
}

int fxtw_save(const struct fxtw *w, const char *path)
{
	FILE *f;
	int rc = 0;

	f = fopen(path, "wb");
	if (!f)
		return -1;
	if (w->len && fwrite(w->buf, 1, w->len, f) != w->len)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

void fxtw_word(struct fxtw *w, uint64_t v)
{
	reserve(w, 8);
	store_word(w->buf + w->len, v, w->big_endian);
	w->len += 8;
}

void fxtw_bytes(struct fxtw *w, const void *p, size_t len)
{
	size_t padded = pad_words(len) * 8;

	reserve(w, padded);
	if (len)
		memcpy(w->buf + w->len, p, len);
	memset(w->buf + w->len + len, 0, padded - len);
	w->len += padded;
}

size_t fxtw_mark(const struct fxtw *w)
{
	return w->len;
}

void fxtw_patch_word(struct fxtw *w, size_t off, uint64_t v)
{
	assert(off <= w->len && w->len - off >= 8);
	store_word(w->buf + off, v, w->big_endian);
}

uint64_t fxtw_peek_word(const struct fxtw *w, size_t off)
{
	uint64_t v = 0;
	size_t i;

	assert(off <= w->len && w->len - off >= 8);
	for (i = 0; i < 8; i++)
		v |= (uint64_t)w->buf[off + (w->big_endian ? 7 - i : i)] << (8 * i);
	return v;
}

/* ---- strings, threads, arguments ------------------------------------- */

uint16_t fxtw_str_ref(struct fxtw_str s)
{
	size_t n;

	if (!s.inl) {
		assert(s.ref <= MAX_STR);
		return s.ref;
	}
	n = strlen(s.inl);
	assert(n <= MAX_STR);
	return (uint16_t)(0x8000 | n);
}

size_t fxtw_str_words(struct fxtw_str s)
{
	return s.inl ? pad_words(strlen(s.inl)) : 0;
}

static void put_str(struct fxtw *w, struct fxtw_str s)
{
	if (s.inl)
		fxtw_bytes(w, s.inl, strlen(s.inl));
}

static size_t thr_words(struct fxtw_thr th)
{
	return th.ref ? 0 : 2;
}

static void put_thr(struct fxtw *w, struct fxtw_thr th)
{
	if (th.ref)
		return;
	fxtw_word(w, th.pid);
	fxtw_word(w, th.tid);
}

size_t fxtw_arg_words(const struct fxtw_arg *a)
{
	size_t n = 1 + fxtw_str_words(a->name);

	switch (a->type) {
	case FXTW_ARG_I64:
	case FXTW_ARG_U64:
	case FXTW_ARG_DOUBLE:
	case FXTW_ARG_PTR:
	case FXTW_ARG_KOID:
		return n + 1;
	case FXTW_ARG_STR:
		return n + fxtw_str_words(a->s);
	case FXTW_ARG_BLOB:
		return n + pad_words(a->blob_len);
	default:
		return n;
	}
}

static size_t args_words(const struct fxtw_arg *args, unsigned nargs)
{
	size_t n = 0;
	unsigned k;

	assert(nargs <= MAX_ARGS);
	for (k = 0; k < nargs; k++)
		n += fxtw_arg_words(&args[k]);
	return n;
}

/* Bits [32 .. 63] of an argument header. */
static uint64_t arg_inline_value(const struct fxtw_arg *a)
{
	switch (a->type) {
	case FXTW_ARG_I32:
		return (uint64_t)(uint32_t)(int32_t)a->i << 32;
	case FXTW_ARG_U32:
		return (uint64_t)(uint32_t)a->u << 32;
	case FXTW_ARG_STR:
		return (uint64_t)fxtw_str_ref(a->s) << 32;
	case FXTW_ARG_BOOL:
		return (a->u & 1) << 32;
	case FXTW_ARG_BLOB:
		return (uint64_t)a->blob_len << 32;
	default:
		return 0;
	}
}

static void put_arg(struct fxtw *w, const struct fxtw_arg *a)
{
	size_t words = fxtw_arg_words(a);
	uint64_t bits;

	assert(a->type >= 0 && a->type <= 15);
	bits = (uint64_t)a->type | field(words, 4, 12) |
	       (uint64_t)fxtw_str_ref(a->name) << 16 | arg_inline_value(a);
	fxtw_word(w, bits);
	put_str(w, a->name);
	switch (a->type) {
	case FXTW_ARG_I64:
		fxtw_word(w, (uint64_t)a->i);
		break;
	case FXTW_ARG_U64:
	case FXTW_ARG_PTR:
	case FXTW_ARG_KOID:
		fxtw_word(w, a->u);
		break;
	case FXTW_ARG_DOUBLE: {
		uint64_t v;

		memcpy(&v, &a->d, sizeof v);
		fxtw_word(w, v);
		break;
	}
	case FXTW_ARG_STR:
		put_str(w, a->s);
		break;
	case FXTW_ARG_BLOB:
		fxtw_bytes(w, a->blob, a->blob_len);
		break;
	default:
		break;
	}
}

static void put_args(struct fxtw *w, const struct fxtw_arg *args, unsigned nargs)
{
	unsigned k;

	for (k = 0; k < nargs; k++)
		put_arg(w, &args[k]);
}

/* ---- argument constructors -------------------------------------------- */

static struct fxtw_arg arg_make(int type, struct fxtw_str name)
{
	struct fxtw_arg a;

	memset(&a, 0, sizeof a);
	a.type = type;
	a.name = name;
	return a;
}

struct fxtw_arg fxtw_arg_null(struct fxtw_str name)
{
	return arg_make(FXTW_ARG_NULL, name);
}

struct fxtw_arg fxtw_arg_i32(struct fxtw_str name, int32_t v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_I32, name);

	a.i = v;
	return a;
}

struct fxtw_arg fxtw_arg_u32(struct fxtw_str name, uint32_t v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_U32, name);

	a.u = v;
	return a;
}

struct fxtw_arg fxtw_arg_i64(struct fxtw_str name, int64_t v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_I64, name);

	a.i = v;
	return a;
}

struct fxtw_arg fxtw_arg_u64(struct fxtw_str name, uint64_t v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_U64, name);

	a.u = v;
	return a;
}

struct fxtw_arg fxtw_arg_double(struct fxtw_str name, double v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_DOUBLE, name);

	a.d = v;
	return a;
}

struct fxtw_arg fxtw_arg_str(struct fxtw_str name, struct fxtw_str v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_STR, name);

	a.s = v;
	return a;
}

struct fxtw_arg fxtw_arg_ptr(struct fxtw_str name, uint64_t v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_PTR, name);

	a.u = v;
	return a;
}

struct fxtw_arg fxtw_arg_koid(struct fxtw_str name, uint64_t v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_KOID, name);

	a.u = v;
	return a;
}

struct fxtw_arg fxtw_arg_bool(struct fxtw_str name, int v)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_BOOL, name);

	a.u = v != 0;
	return a;
}

struct fxtw_arg fxtw_arg_blob(struct fxtw_str name, const void *p, uint32_t len)
{
	struct fxtw_arg a = arg_make(FXTW_ARG_BLOB, name);

	a.blob = p;
	a.blob_len = len;
	return a;
}

/* ---- record framing ---------------------------------------------------- */

/* Writes a normal header: type, 12-bit size in words, and bits [16 .. 63].
 * Returns the offset where the record ends, for fxtw_end_record(). */
static size_t begin_record(struct fxtw *w, unsigned type, size_t words, uint64_t bits)
{
	assert(words >= 1 && words <= MAX_WORDS);
	fxtw_word(w, (uint64_t)type | field(words, 4, 12) | bits);
	return w->len - 8 + words * 8;
}

/* Checks that the record written matches the size in its header. */
static void end_record(const struct fxtw *w, size_t end)
{
	assert(w->len == end);
	(void)w;
	(void)end;
}

/* ---- metadata, initialization, string and thread records --------------- */

void fxtw_magic(struct fxtw *w)
{
	/* metadata, 1 word, trace info (4), magic info type (0): 0x0016547846040010 */
	fxtw_word(w, field(1, 4, 12) | field(4, 16, 4) | field(MAGIC, 24, 32));
}

void fxtw_provider_info(struct fxtw *w, uint32_t id, const char *name)
{
	size_t n = strlen(name);
	size_t end;

	end = begin_record(w, 0, 1 + pad_words(n),
			   field(1, 16, 4) | field(id, 20, 32) | field(n, 52, 8));
	fxtw_bytes(w, name, n);
	end_record(w, end);
}

void fxtw_provider_section(struct fxtw *w, uint32_t id)
{
	begin_record(w, 0, 1, field(2, 16, 4) | field(id, 20, 32));
}

void fxtw_provider_event(struct fxtw *w, uint32_t id, unsigned event)
{
	begin_record(w, 0, 1, field(3, 16, 4) | field(id, 20, 32) | field(event, 52, 4));
}

void fxtw_init_record(struct fxtw *w, uint64_t ticks_per_second)
{
	begin_record(w, 1, 2, 0);
	fxtw_word(w, ticks_per_second);
}

void fxtw_string(struct fxtw *w, uint16_t idx, const char *s)
{
	size_t n = strlen(s);
	size_t end;

	end = begin_record(w, 2, 1 + pad_words(n), field(idx, 16, 15) | field(n, 32, 15));
	fxtw_bytes(w, s, n);
	end_record(w, end);
}

void fxtw_thread(struct fxtw *w, uint8_t idx, uint64_t pid, uint64_t tid)
{
	begin_record(w, 3, 3, field(idx, 16, 8));
	fxtw_word(w, pid);
	fxtw_word(w, tid);
}

/* ---- event records ------------------------------------------------------ */

void fxtw_event(struct fxtw *w, unsigned evtype, struct fxtw_thr th,
		struct fxtw_str cat, struct fxtw_str name, uint64_t ts,
		const struct fxtw_arg *args, unsigned nargs,
		const uint64_t *extra, unsigned nextra)
{
	size_t words, end;
	unsigned k;

	words = 2 + thr_words(th) + fxtw_str_words(cat) + fxtw_str_words(name) +
		args_words(args, nargs) + nextra;
	end = begin_record(w, 4, words,
			   field(evtype, 16, 4) | field(nargs, 20, 4) | field(th.ref, 24, 8) |
			   (uint64_t)fxtw_str_ref(cat) << 32 | (uint64_t)fxtw_str_ref(name) << 48);
	fxtw_word(w, ts);
	put_thr(w, th);
	put_str(w, cat);
	put_str(w, name);
	put_args(w, args, nargs);
	for (k = 0; k < nextra; k++)
		fxtw_word(w, extra[k]);
	end_record(w, end);
}

void fxtw_instant(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		  struct fxtw_str name, uint64_t ts,
		  const struct fxtw_arg *args, unsigned nargs)
{
	fxtw_event(w, 0, th, cat, name, ts, args, nargs, NULL, 0);
}

void fxtw_begin(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		struct fxtw_str name, uint64_t ts,
		const struct fxtw_arg *args, unsigned nargs)
{
	fxtw_event(w, 2, th, cat, name, ts, args, nargs, NULL, 0);
}

void fxtw_end(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
	      struct fxtw_str name, uint64_t ts,
	      const struct fxtw_arg *args, unsigned nargs)
{
	fxtw_event(w, 3, th, cat, name, ts, args, nargs, NULL, 0);
}

void fxtw_complete(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		   struct fxtw_str name, uint64_t ts, uint64_t end_ts,
		   const struct fxtw_arg *args, unsigned nargs)
{
	fxtw_event(w, 4, th, cat, name, ts, args, nargs, &end_ts, 1);
}

void fxtw_counter(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		  struct fxtw_str name, uint64_t ts, uint64_t counter_id,
		  const struct fxtw_arg *args, unsigned nargs)
{
	fxtw_event(w, 1, th, cat, name, ts, args, nargs, &counter_id, 1);
}

void fxtw_async(struct fxtw *w, unsigned evtype, struct fxtw_thr th,
		struct fxtw_str cat, struct fxtw_str name, uint64_t ts,
		uint64_t id, const struct fxtw_arg *args, unsigned nargs)
{
	fxtw_event(w, evtype, th, cat, name, ts, args, nargs, &id, 1);
}

void fxtw_flow(struct fxtw *w, unsigned evtype, struct fxtw_thr th,
	       struct fxtw_str cat, struct fxtw_str name, uint64_t ts,
	       uint64_t id)
{
	fxtw_event(w, evtype, th, cat, name, ts, NULL, 0, &id, 1);
}

/* ---- blob and object records -------------------------------------------- */

void fxtw_blob(struct fxtw *w, struct fxtw_str name, unsigned blob_type,
	       const void *data, uint32_t len)
{
	size_t words = 1 + fxtw_str_words(name) + pad_words(len);
	size_t end;

	end = begin_record(w, 5, words,
			   (uint64_t)fxtw_str_ref(name) << 16 | field(len, 32, 15) |
			   field(blob_type, 48, 8));
	put_str(w, name);
	fxtw_bytes(w, data, len);
	end_record(w, end);
}

void fxtw_userspace_object(struct fxtw *w, struct fxtw_thr proc,
			   struct fxtw_str name, uint64_t ptr,
			   const struct fxtw_arg *args, unsigned nargs)
{
	size_t words, end;

	words = 2 + (proc.ref ? 0u : 1u) + fxtw_str_words(name) + args_words(args, nargs);
	end = begin_record(w, 6, words,
			   field(proc.ref, 16, 8) | (uint64_t)fxtw_str_ref(name) << 24 |
			   field(nargs, 40, 4));
	fxtw_word(w, ptr);
	if (!proc.ref)
		fxtw_word(w, proc.pid);
	put_str(w, name);
	put_args(w, args, nargs);
	end_record(w, end);
}

void fxtw_kernel_object(struct fxtw *w, unsigned obj_type,
			struct fxtw_str name, uint64_t koid,
			const struct fxtw_arg *args, unsigned nargs)
{
	size_t words, end;

	words = 2 + fxtw_str_words(name) + args_words(args, nargs);
	end = begin_record(w, 7, words,
			   field(obj_type, 16, 8) | (uint64_t)fxtw_str_ref(name) << 24 |
			   field(nargs, 40, 4));
	fxtw_word(w, koid);
	put_str(w, name);
	put_args(w, args, nargs);
	end_record(w, end);
}

/* ---- scheduling records -------------------------------------------------- */

void fxtw_context_switch(struct fxtw *w, uint16_t cpu, unsigned out_state,
			 uint64_t ts, uint64_t out_tid, uint64_t in_tid,
			 const struct fxtw_arg *args, unsigned nargs)
{
	size_t end;

	end = begin_record(w, 8, 4 + args_words(args, nargs),
			   field(nargs, 16, 4) | field(cpu, 20, 16) |
			   field(out_state, 36, 4) | field(1, 60, 4));
	fxtw_word(w, ts);
	fxtw_word(w, out_tid);
	fxtw_word(w, in_tid);
	put_args(w, args, nargs);
	end_record(w, end);
}

void fxtw_wakeup(struct fxtw *w, uint16_t cpu, uint64_t ts, uint64_t tid,
		 const struct fxtw_arg *args, unsigned nargs)
{
	size_t end;

	end = begin_record(w, 8, 3 + args_words(args, nargs),
			   field(nargs, 16, 4) | field(cpu, 20, 16) | field(2, 60, 4));
	fxtw_word(w, ts);
	fxtw_word(w, tid);
	put_args(w, args, nargs);
	end_record(w, end);
}

void fxtw_legacy_switch(struct fxtw *w, uint8_t cpu, unsigned out_state,
			struct fxtw_thr out, struct fxtw_thr in,
			uint8_t out_prio, uint8_t in_prio, uint64_t ts)
{
	size_t end;

	end = begin_record(w, 8, 2 + thr_words(out) + thr_words(in),
			   field(cpu, 16, 8) | field(out_state, 24, 4) |
			   field(out.ref, 28, 8) | field(in.ref, 36, 8) |
			   field(out_prio, 44, 8) | field(in_prio, 52, 8));
	fxtw_word(w, ts);
	put_thr(w, out);
	put_thr(w, in);
	end_record(w, end);
}

/* ---- log and profiler records -------------------------------------------- */

void fxtw_log(struct fxtw *w, struct fxtw_thr th, uint64_t ts, const char *msg)
{
	size_t n = strlen(msg);
	size_t end;

	end = begin_record(w, 9, 2 + thr_words(th) + pad_words(n),
			   field(n, 16, 15) | field(th.ref, 32, 8));
	fxtw_word(w, ts);
	put_thr(w, th);
	fxtw_bytes(w, msg, n);
	end_record(w, end);
}

void fxtw_prof_module(struct fxtw *w, struct fxtw_thr th, uint16_t module_id,
		      uint64_t ts, const char *name, const void *build_id,
		      uint8_t build_len)
{
	size_t n = strlen(name);
	size_t end;

	end = begin_record(w, 10, 2 + thr_words(th) + pad_words(n) + pad_words(build_len),
			   field(0, 16, 4) | field(th.ref, 20, 8) | field(module_id, 28, 16) |
			   field(n, 44, 8) | field(build_len, 52, 8));
	fxtw_word(w, ts);
	put_thr(w, th);
	fxtw_bytes(w, name, n);
	fxtw_bytes(w, build_id, build_len);
	end_record(w, end);
}

void fxtw_prof_mmap(struct fxtw *w, struct fxtw_thr th, uint16_t module_id,
		    unsigned flags, uint64_t ts, uint64_t start,
		    uint64_t range, uint64_t vaddr)
{
	size_t end;

	end = begin_record(w, 10, 5 + thr_words(th),
			   field(1, 16, 4) | field(th.ref, 20, 8) | field(module_id, 28, 16) |
			   field(flags, 44, 3));
	fxtw_word(w, ts);
	put_thr(w, th);
	fxtw_word(w, start);
	fxtw_word(w, range);
	fxtw_word(w, vaddr);
	end_record(w, end);
}

void fxtw_prof_backtrace(struct fxtw *w, struct fxtw_thr th, uint64_t ts,
			 const uint64_t *frames, uint8_t nframes)
{
	size_t end;
	unsigned k;

	end = begin_record(w, 10, 2 + thr_words(th) + nframes,
			   field(2, 16, 4) | field(th.ref, 20, 8) | field(nframes, 28, 8));
	fxtw_word(w, ts);
	put_thr(w, th);
	for (k = 0; k < nframes; k++)
		fxtw_word(w, frames[k]);
	end_record(w, end);
}

/* ---- large records --------------------------------------------------------- */

/* Writes a large header: type 15, 32-bit size, large type and blob format. */
static size_t begin_large(struct fxtw *w, uint64_t words, unsigned large_type, unsigned format)
{
	fxtw_word(w, 15 | field(words, 4, 32) | field(large_type, 36, 4) | field(format, 40, 4));
	return w->len - 8 + (size_t)words * 8;
}

void fxtw_large_blob_meta(struct fxtw *w, struct fxtw_str cat,
			  struct fxtw_str name, struct fxtw_thr th, uint64_t ts,
			  const struct fxtw_arg *args, unsigned nargs,
			  const void *data, uint64_t len)
{
	uint64_t words;
	size_t end;

	words = 3 + fxtw_str_words(cat) + fxtw_str_words(name) + thr_words(th) +
		args_words(args, nargs) + 1 + pad_words(len);
	end = begin_large(w, words, 0, 0);
	fxtw_word(w, (uint64_t)fxtw_str_ref(cat) | (uint64_t)fxtw_str_ref(name) << 16 |
			     field(nargs, 32, 4) | field(th.ref, 36, 8));
	put_str(w, cat);
	put_str(w, name);
	fxtw_word(w, ts);
	put_thr(w, th);
	put_args(w, args, nargs);
	fxtw_word(w, len);
	fxtw_bytes(w, data, len);
	end_record(w, end);
}

void fxtw_large_blob(struct fxtw *w, struct fxtw_str cat, struct fxtw_str name,
		     const void *data, uint64_t len)
{
	uint64_t words;
	size_t end;

	words = 2 + fxtw_str_words(cat) + fxtw_str_words(name) + 1 + pad_words(len);
	end = begin_large(w, words, 0, 1);
	fxtw_word(w, (uint64_t)fxtw_str_ref(cat) | (uint64_t)fxtw_str_ref(name) << 16);
	put_str(w, cat);
	put_str(w, name);
	fxtw_word(w, len);
	fxtw_bytes(w, data, len);
	end_record(w, end);
}
