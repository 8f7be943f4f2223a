/*
 * make_corpus: writes the seed corpus of the FXT fuzz target into a
 * directory, one small file per record family or kind of damage.
 *
 * The seeds give libFuzzer a start on every branch of ingest/fxt.c and
 * ingest/match.c and ingest/write.c: each file is a valid archive head (magic, provider,
 * strings, threads) followed by the records of one family, or a file
 * damaged in one way. The output is deterministic, so the committed files
 * in tests/corpus/fxt can be regenerated and compared. Every file stays
 * under 8 KB and most under FZ_BUILD_MAX (4 KB, tests/fuzz_fxt.c), so that
 * the build stage runs on them too.
 *
 * Regenerate (no Makefile needed), from the repository root:
 *   cc -std=c11 -O1 -o /tmp/make_corpus tests/make_corpus.c tests/fxt_writer.c
 *   /tmp/make_corpus tests/corpus/fxt
 *
 * Exits 0, 1 when a file cannot be written, 2 on usage.
 */
#include "fxt_writer.h"

#include <stdio.h>
#include <string.h>

enum {
	PID = 1000,
	TID1 = 1001,
	TID2 = 1002,
	TID3 = 1003,
	/* string indexes of the common head */
	S_CAT = 1,
	S_NAME,
	S_CHILD,
	S_ARG,
	S_PROCESS,
	S_WEIGHT,
	S_PATH,
	S_END
};

static const char *const head_strings[S_END] = { NULL, "cat", "Frame", "Child", "count", "process",
						 "incoming_weight", "/tmp/x" };

#define T1 FXTW_TIDX(1)
#define T2 FXTW_TIDX(2)
#define CAT FXTW_IDX(S_CAT)
#define NAME FXTW_IDX(S_NAME)
#define CHILD FXTW_IDX(S_CHILD)
#define ARG FXTW_IDX(S_ARG)

/* Magic, provider 1, 1 GHz clock, the string table and threads 1-2. */
static void head(struct fxtw *w)
{
	unsigned i;

	fxtw_magic(w);
	fxtw_provider_info(w, 1, "corpus");
	fxtw_init_record(w, 1000000000u);
	for (i = 1; i < S_END; i++)
		fxtw_string(w, (uint16_t)i, head_strings[i]);
	fxtw_thread(w, 1, PID, TID1);
	fxtw_thread(w, 2, PID, TID2);
}

/* A raw two-word record: header h and one word v. */
static void words2(struct fxtw *w, uint64_t h, uint64_t v)
{
	fxtw_word(w, h);
	fxtw_word(w, v);
}

static void c_magic_only(struct fxtw *w)
{
	fxtw_magic(w);
}

static void c_basic(struct fxtw *w)
{
	struct fxtw_arg a = fxtw_arg_i32(ARG, 7);

	head(w);
	fxtw_begin(w, T1, CAT, NAME, 100, &a, 1);
	fxtw_instant(w, T1, CAT, FXTW_INL("tick"), 150, NULL, 0);
	fxtw_complete(w, T1, CAT, CHILD, 200, 300, NULL, 0);
	fxtw_end(w, T1, CAT, NAME, 400, NULL, 0);
	fxtw_begin(w, T2, CAT, NAME, 120, NULL, 0);
	fxtw_end(w, T2, CAT, NAME, 500, NULL, 0);
}

static void c_big_endian(struct fxtw *w)
{
	c_basic(w); /* the writer is in big-endian mode: every word swapped */
}

static void c_headerless(struct fxtw *w)
{
	fxtw_provider_info(w, 7, "no-magic");
	fxtw_string(w, 1, "cat");
	fxtw_thread(w, 1, 1, 2);
	fxtw_begin(w, T1, FXTW_IDX(1), FXTW_INL("x"), 10, NULL, 0);
	fxtw_end(w, T1, FXTW_IDX(1), FXTW_INL("x"), 20, NULL, 0);
}

static void c_nested(struct fxtw *w)
{
	struct fxtw_arg a = fxtw_arg_u64(ARG, 1), b = fxtw_arg_str(FXTW_INL("end_arg"), FXTW_INL("v"));
	unsigned i;

	head(w);
	for (i = 0; i < 8; i++)
		fxtw_begin(w, T1, CAT, i % 2 ? CHILD : NAME, 100 + i * 10, i == 3 ? &a : NULL, i == 3);
	fxtw_complete(w, T1, CAT, FXTW_INL("inner"), 190, 195, NULL, 0);
	fxtw_complete(w, T1, CAT, FXTW_INL("overhang"), 200, 900, NULL, 0);
	for (i = 0; i < 6; i++)
		fxtw_end(w, T1, CAT, NAME, 300 + i * 10, i == 0 ? &b : NULL, i == 0);
	fxtw_complete(w, T1, CAT, FXTW_INL("negative"), 500, 400, NULL, 0);
	fxtw_end(w, T2, CAT, NAME, 600, NULL, 0); /* unmatched */
	fxtw_begin(w, T1, CAT, FXTW_INL("root"), 0, NULL, 0); /* out of order */
	fxtw_begin(w, T2, CAT, FXTW_INL("open"), 50, NULL, 0); /* never ends */
}

static void c_args(struct fxtw *w)
{
	static const uint8_t blob[13] = "blob-payload";
	struct fxtw_arg a[15];
	unsigned n = 0;

	head(w);
	a[n++] = fxtw_arg_null(FXTW_INL("null"));
	a[n++] = fxtw_arg_i32(FXTW_INL("i32"), -5);
	a[n++] = fxtw_arg_u32(FXTW_INL("u32"), 4000000000u);
	a[n++] = fxtw_arg_i64(FXTW_INL("i64"), INT64_MIN);
	a[n++] = fxtw_arg_u64(FXTW_INL("u64"), UINT64_MAX);
	a[n++] = fxtw_arg_double(FXTW_INL("dbl"), 3.25);
	a[n++] = fxtw_arg_str(FXTW_INL("str"), FXTW_IDX(S_PATH));
	a[n++] = fxtw_arg_str(FXTW_INL("istr"), FXTW_INL("inline value"));
	a[n++] = fxtw_arg_ptr(FXTW_INL("ptr"), 0xdeadbeef);
	a[n++] = fxtw_arg_koid(FXTW_INL("koid"), 42);
	a[n++] = fxtw_arg_bool(FXTW_INL("bool"), 1);
	a[n++] = fxtw_arg_blob(FXTW_INL("blob"), blob, sizeof(blob));
	a[n] = fxtw_arg_null(FXTW_IDX(S_ARG));
	a[n++].type = 13; /* unknown argument type */
	a[n++] = fxtw_arg_str(FXTW_EMPTY, FXTW_EMPTY);
	a[n++] = fxtw_arg_i32(FXTW_IDX(999), 1); /* unresolved name */
	fxtw_instant(w, T1, CAT, NAME, 10, a, n);
	fxtw_begin(w, T1, CAT, NAME, 20, a, 6);
	fxtw_end(w, T1, CAT, NAME, 30, a + 6, 6);
}

static void c_counters(struct fxtw *w)
{
	struct fxtw_arg a[3];
	unsigned i;

	head(w);
	for (i = 0; i < 6; i++) {
		a[0] = fxtw_arg_i64(FXTW_INL("mem"), 1000 + i * 10);
		a[1] = fxtw_arg_double(FXTW_INL("load"), 0.5 * i);
		a[2] = fxtw_arg_str(FXTW_INL("label"), FXTW_INL("not a number"));
		fxtw_counter(w, i % 2 ? T1 : T2, CAT, FXTW_INL("usage"), 100 * i, i % 3, a, i == 5 ? 3 : 2);
	}
	a[0] = fxtw_arg_u64(FXTW_INL("big"), UINT64_MAX);
	a[1] = fxtw_arg_u32(FXTW_INL("small"), 3);
	fxtw_counter(w, T1, CAT, FXTW_INL("usage"), 50, 0, a, 2);
	fxtw_counter(w, T1, CAT, FXTW_INL("empty"), 60, 9, NULL, 0);
}

static void c_async(struct fxtw *w)
{
	struct fxtw_arg a = fxtw_arg_i32(ARG, 1);
	unsigned i;

	head(w);
	for (i = 0; i < 4; i++)
		fxtw_async(w, 5, T1, CAT, FXTW_INL("Load"), 100 + i * 10, i, &a, 1);
	fxtw_async(w, 6, T2, CAT, FXTW_INL("Load"), 125, 1, NULL, 0);
	fxtw_async(w, 6, T1, CAT, FXTW_INL("Load"), 126, 2, &a, 1);
	fxtw_async(w, 7, T2, CAT, FXTW_INL("Load"), 150, 0, &a, 1);
	fxtw_async(w, 7, T1, CAT, FXTW_INL("Load"), 200, 1, NULL, 0);
	fxtw_async(w, 7, T1, CAT, FXTW_INL("Load"), 210, 77, NULL, 0); /* unmatched end */
	fxtw_async(w, 6, T1, CAT, FXTW_INL("Load"), 220, 78, NULL, 0); /* unmatched instant */
	fxtw_async(w, 5, T1, CAT, FXTW_INL("Load"), 230, 0, NULL, 0); /* id reused */
	fxtw_async(w, 5, FXTW_TINL(2000, 2001), CAT, FXTW_INL("Load"), 240, 0, NULL, 0);
}

static void c_flows(struct fxtw *w)
{
	head(w);
	fxtw_begin(w, T1, CAT, NAME, 100, NULL, 0);
	fxtw_flow(w, 8, T1, CAT, FXTW_INL("msg"), 110, 5);
	fxtw_end(w, T1, CAT, NAME, 120, NULL, 0);
	fxtw_complete(w, T2, CAT, CHILD, 130, 200, NULL, 0);
	fxtw_flow(w, 9, T2, CAT, FXTW_INL("msg"), 140, 5);
	fxtw_flow(w, 10, T2, CAT, FXTW_INL("msg"), 150, 5);
	fxtw_flow(w, 9, T2, CAT, FXTW_INL("msg"), 160, 6); /* unmatched step */
	fxtw_flow(w, 8, T1, CAT, FXTW_INL("msg"), 300, 7); /* no enclosing slice */
	fxtw_begin(w, T1, CAT, NAME, 400, NULL, 0);
	fxtw_flow(w, 8, T1, CAT, FXTW_INL("msg"), 410, 8);
	fxtw_flow(w, 10, T1, CAT, FXTW_INL("msg"), 420, 8); /* same slice */
	fxtw_flow(w, 10, T1, CAT, FXTW_INL("msg"), 430, 8); /* already ended */
}

static void c_sched(struct fxtw *w)
{
	struct fxtw_arg wt = fxtw_arg_i32(FXTW_IDX(S_WEIGHT), 3), idle = fxtw_arg_i32(FXTW_IDX(S_WEIGHT), INT32_MIN);
	struct fxtw_arg proc = fxtw_arg_koid(FXTW_IDX(S_PROCESS), PID);

	head(w);
	fxtw_kernel_object(w, 1, FXTW_INL("proc"), PID, NULL, 0);
	fxtw_kernel_object(w, 2, FXTW_INL("worker"), TID3, &proc, 1);
	fxtw_context_switch(w, 0, 3, 100, 0, TID1, &wt, 1);
	fxtw_context_switch(w, 0, 2, 200, TID1, TID3, NULL, 0);
	fxtw_context_switch(w, 1, 1, 150, 0, TID2, NULL, 0);
	fxtw_context_switch(w, 0, 9, 300, TID3, 0, &idle, 1);
	fxtw_context_switch(w, 1, 5, 120, TID2, TID3, NULL, 0); /* out of order */
	fxtw_wakeup(w, 2, 90, TID3, &wt, 1);
	fxtw_legacy_switch(w, 3, 3, T1, T2, 10, 20, 400);
	fxtw_legacy_switch(w, 3, 1, T2, FXTW_TINL(0, 0), 20, 0, 500);
	fxtw_legacy_switch(w, 3, 1, FXTW_TINL(0, 0), FXTW_TIDX(9), 0, 5, 600);
}

static void c_objects(struct fxtw *w)
{
	struct fxtw_arg a[2] = { fxtw_arg_koid(FXTW_IDX(S_PROCESS), PID), fxtw_arg_str(ARG, FXTW_INL("v")) };
	struct fxtw_arg bad = fxtw_arg_u32(FXTW_IDX(S_PROCESS), 77);

	head(w);
	fxtw_kernel_object(w, 1, FXTW_INL("app"), PID, NULL, 0);
	fxtw_kernel_object(w, 2, FXTW_INL("main"), TID1, a, 2);
	fxtw_kernel_object(w, 2, FXTW_INL("renamed"), TID1, a, 1);
	fxtw_kernel_object(w, 2, FXTW_EMPTY, TID3, &bad, 1);
	fxtw_kernel_object(w, 9, FXTW_INL("vmo"), 5000, NULL, 0);
	fxtw_userspace_object(w, T1, FXTW_INL("obj"), 0x1000, a + 1, 1);
	fxtw_userspace_object(w, FXTW_TINL(PID, 0), FXTW_IDX(S_PATH), 0x2000, NULL, 0);
	fxtw_context_switch(w, 0, 3, 10, 0, TID3, NULL, 0);
	fxtw_instant(w, FXTW_TINL(0, TID1), CAT, NAME, 20, NULL, 0);
}

static void c_logs(struct fxtw *w)
{
	char long_msg[600];

	memset(long_msg, 'L', sizeof(long_msg) - 1);
	long_msg[sizeof(long_msg) - 1] = '\0';
	head(w);
	fxtw_log(w, T1, 100, "hello");
	fxtw_log(w, FXTW_TINL(PID, TID3), 50, "inline thread");
	fxtw_log(w, T2, 100, "");
	fxtw_log(w, FXTW_TIDX(200), 70, "unresolved thread");
	fxtw_log(w, T1, 80, long_msg);
	fxtw_begin(w, T1, CAT, NAME, 10, NULL, 0);
	fxtw_log(w, T1, 5000, "after every event"); /* widens the trace end */
}

static void c_blobs(struct fxtw *w)
{
	static const uint8_t data[40] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };

	head(w);
	fxtw_blob(w, FXTW_INL("data"), 1, data, 9);
	fxtw_blob(w, FXTW_IDX(S_PATH), 2, data, 40);
	fxtw_blob(w, FXTW_EMPTY, 255, NULL, 0);
	fxtw_blob(w, FXTW_IDX(500), 3, data, 1);
}

static void c_large_blobs(struct fxtw *w)
{
	static const uint8_t data[300] = { 0xfe, 0xed };
	struct fxtw_arg a = fxtw_arg_i64(ARG, 3);

	head(w);
	fxtw_large_blob_meta(w, CAT, FXTW_INL("attachment"), T1, 100, &a, 1, data, sizeof(data));
	fxtw_large_blob_meta(w, CAT, NAME, FXTW_TINL(PID, TID3), 200, NULL, 0, data, 5);
	fxtw_large_blob(w, CAT, FXTW_INL("raw"), data, 17);
	fxtw_large_blob(w, FXTW_EMPTY, FXTW_EMPTY, NULL, 0);
}

static void c_profiler(struct fxtw *w)
{
	static const uint8_t build_id[20] = { 0xab, 0xcd };
	static const uint64_t frames[5] = { 0x1000, 0x2000, 0x3000, 0x4000, UINT64_MAX };

	head(w);
	fxtw_prof_module(w, T1, 1, 10, "libc.so", build_id, sizeof(build_id));
	fxtw_prof_module(w, T1, 2, 11, "", NULL, 0);
	fxtw_prof_mmap(w, T1, 1, 5, 20, 0x7f0000, 0x1000, 0);
	fxtw_prof_mmap(w, FXTW_TINL(PID, TID3), 2, 7, 21, 0x800000, 0x2000, 0x100);
	fxtw_prof_backtrace(w, T1, 30, frames, 5);
	fxtw_prof_backtrace(w, T2, 31, NULL, 0);
}

static void c_providers(struct fxtw *w)
{
	head(w);
	fxtw_begin(w, T1, CAT, NAME, 1000, NULL, 0);
	fxtw_provider_info(w, 2, "second");
	fxtw_init_record(w, 3); /* 3 ticks per second */
	fxtw_string(w, 1, "other-cat");
	fxtw_thread(w, 1, 2000, 2001);
	fxtw_begin(w, T1, CAT, NAME, 3, NULL, 0);
	fxtw_provider_event(w, 2, 0); /* buffer overflow */
	fxtw_provider_event(w, 2, 5); /* unknown provider event */
	fxtw_provider_section(w, 1); /* back to provider 1's tables */
	fxtw_end(w, T1, CAT, NAME, 2000, NULL, 0);
	fxtw_provider_section(w, 2);
	fxtw_end(w, T1, CAT, NAME, 4, NULL, 0);
	fxtw_provider_section(w, 3); /* never introduced */
	fxtw_instant(w, T1, CAT, NAME, 5, NULL, 0);
	fxtw_provider_info(w, 1, "corpus again"); /* resets provider 1 */
	fxtw_instant(w, T1, CAT, NAME, 6, NULL, 0);
}

static void c_string_tables(struct fxtw *w)
{
	head(w);
	fxtw_string(w, 255, "s255");
	fxtw_string(w, 256, "s256");
	fxtw_string(w, 0x7fff, "last");
	fxtw_string(w, 0, "ignored");
	fxtw_string(w, 2, "redefined");
	fxtw_thread(w, 255, 9, 10);
	fxtw_thread(w, 0, 9, 11); /* ignored */
	fxtw_instant(w, FXTW_TIDX(255), FXTW_IDX(255), FXTW_IDX(256), 10, NULL, 0);
	fxtw_instant(w, FXTW_TIDX(255), FXTW_IDX(0x7fff), FXTW_IDX(2), 11, NULL, 0);
	fxtw_instant(w, FXTW_TIDX(3), FXTW_IDX(0x1234), FXTW_INL(""), 12, NULL, 0);
	fxtw_instant(w, FXTW_TINL(9, 12), FXTW_EMPTY, FXTW_INL("x\001\377y"), 13, NULL, 0);
}

static void c_timestamps(struct fxtw *w)
{
	head(w);
	fxtw_complete(w, T1, CAT, NAME, 10, 5, NULL, 0); /* ends before it begins */
	fxtw_instant(w, T1, CAT, NAME, UINT64_MAX, NULL, 0);
	fxtw_init_record(w, 1); /* 1 tick per second: overflows */
	fxtw_instant(w, T1, CAT, CHILD, UINT64_C(1) << 40, NULL, 0);
	fxtw_complete(w, T2, CAT, CHILD, 1, UINT64_MAX, NULL, 0);
	fxtw_init_record(w, UINT64_MAX);
	fxtw_instant(w, T1, CAT, CHILD, UINT64_MAX, NULL, 0);
	fxtw_instant(w, T1, CAT, CHILD, 0, NULL, 0);
}

static void c_truncated(struct fxtw *w)
{
	c_basic(w);
	w->len -= 12; /* cut inside the last record */
}

static void c_zero_size(struct fxtw *w)
{
	head(w);
	fxtw_instant(w, T1, CAT, NAME, 10, NULL, 0);
	fxtw_word(w, 4); /* an event header of size 0 ends the archive */
	fxtw_instant(w, T1, CAT, NAME, 20, NULL, 0);
}

static void c_oversized(struct fxtw *w)
{
	head(w);
	fxtw_instant(w, T1, CAT, NAME, 10, NULL, 0);
	fxtw_word(w, 15 | (UINT64_C(0x1000000) << 4)); /* a 128 MB large record, cut short */
	fxtw_word(w, 0);
	fxtw_word(w, 0);
}

static void c_unknown(struct fxtw *w)
{
	unsigned t;

	head(w);
	for (t = 11; t <= 14; t++) /* reserved record types, 2 words */
		words2(w, t | 2 << 4, 0);
	fxtw_event(w, 11, T1, CAT, NAME, 10, NULL, 0, NULL, 0);
	fxtw_event(w, 15, T1, CAT, NAME, 10, NULL, 0, NULL, 0);
	fxtw_word(w, 0 | 1 << 4 | 9 << 16);                   /* metadata type 9 */
	fxtw_word(w, 0 | 1 << 4 | 4 << 16 | UINT64_C(1) << 20); /* trace info type 1 */
	fxtw_word(w, 8 | 1 << 4 | UINT64_C(7) << 60);           /* sched subtype 7 */
	words2(w, 10 | 2 << 4 | 5 << 16, 0);           /* profiler subtype 5 */
	words2(w, 15 | 2 << 4 | UINT64_C(3) << 36, 0); /* large type 3 */
	words2(w, 15 | 2 << 4 | UINT64_C(2) << 40, 0); /* blob format 2 */
	fxtw_instant(w, T1, CAT, NAME, 20, NULL, 0);
}

/* Records whose fields do not fit their declared size. */
static void c_malformed(struct fxtw *w)
{
	struct fxtw_arg a = fxtw_arg_i64(ARG, 1);
	size_t at;

	head(w);
	fxtw_word(w, 1 | 1 << 4);                        /* initialization without its word */
	fxtw_init_record(w, 0);                          /* 0 ticks per second */
	fxtw_word(w, 0 | 1 << 4 | 4 << 16 | UINT64_C(0x12345) << 24); /* trace info, bad magic */
	fxtw_word(w, 2 | 1 << 4 | 1 << 16 | UINT64_C(40) << 32);     /* string longer than its record */
	words2(w, 3 | 2 << 4 | 1 << 16, 1);                          /* thread missing its tid */
	at = fxtw_mark(w);
	fxtw_instant(w, T1, CAT, NAME, 10, &a, 1);
	/* one word short: the argument's value falls outside the record, and
	 * the value (1) then reads as a header of size 0, ending the archive */
	fxtw_patch_word(w, at, fxtw_peek_word(w, at) - (1 << 4));
}

/* An event header: thread index 1, category S_CAT, name S_NAME. */
static uint64_t ev_header(unsigned words, unsigned evtype, unsigned nargs)
{
	return 4 | (uint64_t)words << 4 | (uint64_t)evtype << 16 | (uint64_t)nargs << 20 | UINT64_C(1) << 24 |
	       (uint64_t)S_CAT << 32 | (uint64_t)S_NAME << 48;
}

/* Arguments whose sizes lie, inside records that are otherwise whole. */
static void c_bad_args(struct fxtw *w)
{
	head(w);
	fxtw_word(w, ev_header(4, 0, 1)); /* the argument says 0 words */
	fxtw_word(w, 10);
	fxtw_word(w, 3 | 0 << 4);
	fxtw_word(w, 0);
	fxtw_word(w, ev_header(4, 0, 1)); /* the argument says 9 words, the record holds 2 */
	fxtw_word(w, 10);
	fxtw_word(w, 3 | 9 << 4);
	fxtw_word(w, 0);
	fxtw_word(w, ev_header(4, 0, 1)); /* a blob argument longer than its words */
	fxtw_word(w, 10);
	fxtw_word(w, 10 | 2 << 4 | UINT64_C(100) << 32);
	fxtw_word(w, 0);
	fxtw_word(w, ev_header(2, 4, 0)); /* a complete event without its end word */
	fxtw_word(w, 10);
	fxtw_word(w, ev_header(2, 0, 2)); /* two arguments announced, none there */
	fxtw_word(w, 10);
	fxtw_instant(w, T1, CAT, NAME, 20, NULL, 0);
}

static void c_mixed(struct fxtw *w)
{
	struct fxtw_arg a = fxtw_arg_u32(ARG, 1);
	uint64_t t = 1000;
	unsigned i;

	head(w);
	fxtw_kernel_object(w, 1, FXTW_INL("proc"), PID, NULL, 0);
	for (i = 0; i < 12; i++, t += 37) {
		fxtw_begin(w, i % 2 ? T1 : T2, CAT, NAME, t, &a, i % 3 == 0);
		fxtw_counter(w, T1, CAT, FXTW_INL("c"), t + 1, 1, &a, 1);
		if (i % 4 == 0)
			fxtw_flow(w, 8 + i % 3, i % 2 ? T1 : T2, CAT, FXTW_INL("f"), t + 2, 1);
		fxtw_async(w, 5 + i % 3, T1, CAT, FXTW_INL("op"), t + 3, i / 3, NULL, 0);
		fxtw_context_switch(w, (uint16_t)(i % 2), 2, t + 4, TID1, TID2, NULL, 0);
		fxtw_end(w, i % 2 ? T1 : T2, CAT, NAME, t + 20, NULL, 0);
	}
	fxtw_log(w, T1, t, "done");
	fxtw_begin(w, T1, CAT, FXTW_INL("whole-run"), 0, NULL, 0);
	fxtw_begin(w, T2, CAT, FXTW_INL("whole-run"), 0, NULL, 0);
}

static void c_not_trace(struct fxtw *w)
{
	static const char text[] = "this is a text file, not a trace\n";

	fxtw_bytes(w, text, sizeof(text) - 1);
	w->len = sizeof(text) - 1;
}

static void c_short(struct fxtw *w)
{
	fxtw_magic(w);
	w->len = 5;
}

struct seed {
	const char *name;
	void (*write)(struct fxtw *w);
	int big_endian;
};

static const struct seed seeds[] = {
	{ "magic_only.fxt", c_magic_only, 0 },	   { "basic.fxt", c_basic, 0 },
	{ "big_endian.fxt", c_big_endian, 1 },	   { "headerless.fxt", c_headerless, 0 },
	{ "nested_durations.fxt", c_nested, 0 },   { "args.fxt", c_args, 0 },
	{ "counters.fxt", c_counters, 0 },	   { "async.fxt", c_async, 0 },
	{ "flows.fxt", c_flows, 0 },		   { "sched.fxt", c_sched, 0 },
	{ "objects.fxt", c_objects, 0 },	   { "logs.fxt", c_logs, 0 },
	{ "blobs.fxt", c_blobs, 0 },		   { "large_blobs.fxt", c_large_blobs, 0 },
	{ "profiler.fxt", c_profiler, 0 },	   { "providers.fxt", c_providers, 0 },
	{ "string_tables.fxt", c_string_tables, 0 }, { "timestamps.fxt", c_timestamps, 0 },
	{ "truncated.fxt", c_truncated, 0 },	   { "zero_size.fxt", c_zero_size, 0 },
	{ "oversized.fxt", c_oversized, 0 },	   { "unknown_types.fxt", c_unknown, 0 },
	{ "malformed.fxt", c_malformed, 0 },	   { "bad_args.fxt", c_bad_args, 0 },
	{ "mixed.fxt", c_mixed, 0 },		   { "mixed_be.fxt", c_mixed, 1 },
	{ "not_trace.txt", c_not_trace, 0 },	   { "short.fxt", c_short, 0 },
};

int main(int argc, char **argv)
{
	char path[4096];
	struct fxtw w;
	size_t i;
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: make_corpus DIR\n");
		return 2;
	}
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		fxtw_init(&w, seeds[i].big_endian);
		seeds[i].write(&w);
		snprintf(path, sizeof(path), "%s/%s", argv[1], seeds[i].name);
		if (fxtw_save(&w, path) != 0) {
			perror(path);
			rc = 1;
		}
		fxtw_fini(&w);
	}
	return rc;
}
