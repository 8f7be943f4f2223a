/*
 * A writer for the Fuchsia Trace Format (FXT), for tests, fuzz seeds and
 * benchmarks.
 *
 * The ingest decoder has to be tested on archives we control bit for bit, so
 * this module builds them in memory, one record per call. Each call
 * computes the record's size exactly as the specification does (words,
 * header included; streams padded with zeros to 8 bytes; arguments
 * including their inline name and value streams). Nothing is validated
 * beyond what the encoding needs: a field too small for its value is a
 * programmer error (assert); anything else, such as string index 0, thread
 * index 0 or unknown types, is written as given so that tests can produce
 * odd but well-formed input. Tests that need malformed input write good
 * records and then patch bytes (fxtw_mark, fxtw_patch_word) or emit raw
 * words (fxtw_word, fxtw_bytes).
 *
 * Specification: https://fuchsia.dev/fuchsia-src/reference/tracing/trace-format
 * (copy in shared/spec/fuchsia-trace-format.txt).
 *
 * Where we knowingly depart from it or choose between readings:
 *  - FXTW_INL("") is written as the inline ref 0x8000 (length 0, no stream),
 *    not as the empty ref 0; use FXTW_EMPTY for the empty string.
 *  - Backtrace frames are written as words (in the writer's byte order),
 *    though the specification calls the frame data a "stream".
 *  - In big-endian mode every word is byte-swapped, including the double
 *    argument value and the large blob size word; streams never are.
 *  - Allocation failure calls abort(): this is test code.
 */
#ifndef TESTS_FXT_WRITER_H
#define TESTS_FXT_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* A growable output buffer; caller-owned, see fxtw_init/fxtw_fini. */
struct fxtw {
	uint8_t *buf;   /* the archive so far; NULL until the first write */
	size_t len;     /* bytes written; always a multiple of 8 after a record */
	size_t cap;     /* bytes allocated; len <= cap */
	int big_endian; /* write every 64-bit word big-endian (streams stay byte order) */
};

/*
 * String ref: ref is the index (1..0x7fff) for an indexed string; inl != NULL
 * means an inline string (ref ignored); ref 0 and inl NULL is the empty
 * string.
 */
struct fxtw_str {
	uint16_t ref;    /* string table index; 0 = empty */
	const char *inl; /* NUL-terminated inline content, or NULL */
};
#define FXTW_IDX(i) ((struct fxtw_str){ (uint16_t)(i), NULL })
#define FXTW_INL(s) ((struct fxtw_str){ 0, (s) })
#define FXTW_EMPTY ((struct fxtw_str){ 0, NULL })

/* Thread ref: ref 1..255 is an indexed thread; ref 0 means inline pid/tid. */
struct fxtw_thr {
	uint8_t ref;  /* thread table index; 0 = inline */
	uint64_t pid; /* process koid, written only when ref == 0 */
	uint64_t tid; /* thread koid, written only when ref == 0 */
};
#define FXTW_TIDX(i) ((struct fxtw_thr){ (uint8_t)(i), 0, 0 })
#define FXTW_TINL(p, t) ((struct fxtw_thr){ 0, (p), (t) })

enum fxtw_arg_type {
	FXTW_ARG_NULL = 0,
	FXTW_ARG_I32 = 1,
	FXTW_ARG_U32 = 2,
	FXTW_ARG_I64 = 3,
	FXTW_ARG_U64 = 4,
	FXTW_ARG_DOUBLE = 5,
	FXTW_ARG_STR = 6,
	FXTW_ARG_PTR = 7,
	FXTW_ARG_KOID = 8,
	FXTW_ARG_BOOL = 9,
	FXTW_ARG_BLOB = 10
};

/* One argument. An unknown type is written as its header and name only. */
struct fxtw_arg {
	int type;             /* enum fxtw_arg_type, 0..15 */
	struct fxtw_str name; /* argument name */
	int64_t i;            /* value of I32 (low 32 bits) and I64 */
	uint64_t u;           /* value of U32 (low 32 bits), U64, PTR, KOID, BOOL (bit 0) */
	double d;             /* value of DOUBLE */
	struct fxtw_str s;    /* value of STR */
	const void *blob;     /* payload of BLOB; may be NULL when blob_len is 0 */
	uint32_t blob_len;    /* payload bytes of BLOB; the record must stay under 32 KB */
};

/* Argument constructors, for brevity in tests. */
struct fxtw_arg fxtw_arg_null(struct fxtw_str name);
struct fxtw_arg fxtw_arg_i32(struct fxtw_str name, int32_t v);
struct fxtw_arg fxtw_arg_u32(struct fxtw_str name, uint32_t v);
struct fxtw_arg fxtw_arg_i64(struct fxtw_str name, int64_t v);
struct fxtw_arg fxtw_arg_u64(struct fxtw_str name, uint64_t v);
struct fxtw_arg fxtw_arg_double(struct fxtw_str name, double v);
struct fxtw_arg fxtw_arg_str(struct fxtw_str name, struct fxtw_str v);
struct fxtw_arg fxtw_arg_ptr(struct fxtw_str name, uint64_t v);
struct fxtw_arg fxtw_arg_koid(struct fxtw_str name, uint64_t v);
struct fxtw_arg fxtw_arg_bool(struct fxtw_str name, int v);
struct fxtw_arg fxtw_arg_blob(struct fxtw_str name, const void *p, uint32_t len);

/* Lifecycle. fxtw_fini frees the buffer; the struct may be reused after
 * fxtw_init. */
void fxtw_init(struct fxtw *w, int big_endian);
void fxtw_fini(struct fxtw *w);
/* Writes the buffer to path (created or truncated). Returns 0, or -1 when
 * the file cannot be opened, written or closed (errno says why). */
int fxtw_save(const struct fxtw *w, const char *path);

/* Raw output, for building malformed input. */
void fxtw_word(struct fxtw *w, uint64_t v);                  /* one word, endian-aware */
void fxtw_bytes(struct fxtw *w, const void *p, size_t len);  /* stream padded to 8 bytes */
size_t fxtw_mark(const struct fxtw *w);                      /* current length in bytes */
/* Overwrites the word at byte offset off (< len - 7), endian-aware. */
void fxtw_patch_word(struct fxtw *w, size_t off, uint64_t v);
/* Reads back the word at byte offset off (< len - 7), endian-aware. */
uint64_t fxtw_peek_word(const struct fxtw *w, size_t off);

/* Encodings, for tests computing expected headers. */
uint16_t fxtw_str_ref(struct fxtw_str s);   /* 16-bit string ref */
size_t fxtw_str_words(struct fxtw_str s);   /* inline stream words, 0 if not inline */
size_t fxtw_arg_words(const struct fxtw_arg *a); /* argument size, header included */

/* Metadata records (type 0). The provider name is at most 255 bytes. */
void fxtw_magic(struct fxtw *w); /* 0x0016547846040010 */
void fxtw_provider_info(struct fxtw *w, uint32_t id, const char *name);
void fxtw_provider_section(struct fxtw *w, uint32_t id);
void fxtw_provider_event(struct fxtw *w, uint32_t id, unsigned event);

/* Initialization (type 1), string (type 2) and thread (type 3) records. */
void fxtw_init_record(struct fxtw *w, uint64_t ticks_per_second);
void fxtw_string(struct fxtw *w, uint16_t idx, const char *s);
void fxtw_thread(struct fxtw *w, uint8_t idx, uint64_t pid, uint64_t tid);

/*
 * Event record (type 4). evtype 0..15 (0..10 defined); nargs <= 15; extra
 * are the event-type specific words (counter id, end time, async or flow
 * correlation id), written after the arguments; nextra is normally 0 or 1.
 */
void fxtw_event(struct fxtw *w, unsigned evtype, struct fxtw_thr th,
		struct fxtw_str cat, struct fxtw_str name, uint64_t ts,
		const struct fxtw_arg *args, unsigned nargs,
		const uint64_t *extra, unsigned nextra);

/* Convenience wrappers around fxtw_event. */
void fxtw_instant(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		  struct fxtw_str name, uint64_t ts,
		  const struct fxtw_arg *args, unsigned nargs);
void fxtw_begin(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		struct fxtw_str name, uint64_t ts,
		const struct fxtw_arg *args, unsigned nargs);
void fxtw_end(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
	      struct fxtw_str name, uint64_t ts,
	      const struct fxtw_arg *args, unsigned nargs);
void fxtw_complete(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		   struct fxtw_str name, uint64_t ts, uint64_t end_ts,
		   const struct fxtw_arg *args, unsigned nargs);
void fxtw_counter(struct fxtw *w, struct fxtw_thr th, struct fxtw_str cat,
		  struct fxtw_str name, uint64_t ts, uint64_t counter_id,
		  const struct fxtw_arg *args, unsigned nargs);
/* evtype 5 (begin), 6 (instant) or 7 (end). */
void fxtw_async(struct fxtw *w, unsigned evtype, struct fxtw_thr th,
		struct fxtw_str cat, struct fxtw_str name, uint64_t ts,
		uint64_t id, const struct fxtw_arg *args, unsigned nargs);
/* evtype 8 (begin), 9 (step) or 10 (end). */
void fxtw_flow(struct fxtw *w, unsigned evtype, struct fxtw_thr th,
	       struct fxtw_str cat, struct fxtw_str name, uint64_t ts,
	       uint64_t id);

/* BLOB record (type 5); len <= 0x7fff and the record under 32 KB. */
void fxtw_blob(struct fxtw *w, struct fxtw_str name, unsigned blob_type,
	       const void *data, uint32_t len);
/* Userspace object record (type 6); proc's pid is used only if inline. */
void fxtw_userspace_object(struct fxtw *w, struct fxtw_thr proc,
			   struct fxtw_str name, uint64_t ptr,
			   const struct fxtw_arg *args, unsigned nargs);
/* Kernel object record (type 7); obj_type is a ZX_OBJ_TYPE (1 process, 2 thread). */
void fxtw_kernel_object(struct fxtw *w, unsigned obj_type,
			struct fxtw_str name, uint64_t koid,
			const struct fxtw_arg *args, unsigned nargs);

/* Scheduling records (type 8): subtype 1, 2 and 0. */
void fxtw_context_switch(struct fxtw *w, uint16_t cpu, unsigned out_state,
			 uint64_t ts, uint64_t out_tid, uint64_t in_tid,
			 const struct fxtw_arg *args, unsigned nargs);
void fxtw_wakeup(struct fxtw *w, uint16_t cpu, uint64_t ts, uint64_t tid,
		 const struct fxtw_arg *args, unsigned nargs);
void fxtw_legacy_switch(struct fxtw *w, uint8_t cpu, unsigned out_state,
			struct fxtw_thr out, struct fxtw_thr in,
			uint8_t out_prio, uint8_t in_prio, uint64_t ts);

/* Log record (type 9); msg is at most 0x7fff bytes. */
void fxtw_log(struct fxtw *w, struct fxtw_thr th, uint64_t ts, const char *msg);

/* Profiler records (type 10): module (name <= 255 bytes), mmap, backtrace. */
void fxtw_prof_module(struct fxtw *w, struct fxtw_thr th, uint16_t module_id,
		      uint64_t ts, const char *name, const void *build_id,
		      uint8_t build_len);
void fxtw_prof_mmap(struct fxtw *w, struct fxtw_thr th, uint16_t module_id,
		    unsigned flags, uint64_t ts, uint64_t start,
		    uint64_t range, uint64_t vaddr);
void fxtw_prof_backtrace(struct fxtw *w, struct fxtw_thr th, uint64_t ts,
			 const uint64_t *frames, uint8_t nframes);

/* Large BLOB records (type 15, large type 0): format 0 with metadata,
 * format 1 without. */
void fxtw_large_blob_meta(struct fxtw *w, struct fxtw_str cat,
			  struct fxtw_str name, struct fxtw_thr th, uint64_t ts,
			  const struct fxtw_arg *args, unsigned nargs,
			  const void *data, uint64_t len);
void fxtw_large_blob(struct fxtw *w, struct fxtw_str cat, struct fxtw_str name,
		     const void *data, uint64_t len);

#endif /* TESTS_FXT_WRITER_H */
