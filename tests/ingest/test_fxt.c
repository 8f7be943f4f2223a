/*
 * Unit tests of the FXT decoder (ingest/fxt.c).
 *
 * Archives are built bit for bit with the test writer (fxt_writer.h), or
 * word by word where the writer cannot produce the damage we want. Most
 * tests decode straight into a model (fxt_init/fxt_feed/fxt_finish) and
 * check every field against values written here; the argument, object,
 * blob and profiler tests also read the result back from the database that
 * ingest_file() writes, since that is what users see. Properties that must
 * hold for any input shape (chunking, truncation at every byte, byte order)
 * are checked by comparing whole models field by field.
 */
#include <inttypes.h>
#include <math.h>

/* testutil.h builds "<fxt>.db" into a buffer as large as <fxt>'s: gcc -O2
 * warns though the temporary name is far shorter. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "../testutil.h"

#include "../../ingest/fxt.h"
#include "../../ingest/reader.h"

/* Field v placed at bit lo of a header word. */
#define F(v, lo) ((uint64_t)(v) << (lo))

/* ---- decoding into a model ---------------------------------------------- */

struct dec {
	struct model m;
	struct fxt_decoder d;
	int rc; /* the first error of fxt_feed, else fxt_finish's result */
};

/* Decodes n bytes fed in chunks of `chunk` bytes (0: all at once). */
static void dec_run(struct dec *x, const void *p, size_t n, size_t chunk)
{
	const uint8_t *q = p;
	size_t off = 0, k;

	assert_int_equal(model_init(&x->m), 0);
	fxt_init(&x->d, &x->m);
	x->rc = INGEST_OK;
	while (off < n && x->rc == INGEST_OK) {
		k = chunk == 0 || n - off < chunk ? n - off : chunk;
		x->rc = fxt_feed(&x->d, q + off, k);
		off += k;
	}
	if (x->rc == INGEST_OK)
		x->rc = fxt_finish(&x->d);
	fxt_fini(&x->d);
}

static void dec_w(struct dec *x, const struct fxtw *w)
{
	dec_run(x, w->buf, w->len, 0);
	assert_int_equal(x->rc, INGEST_OK);
}

static void dec_done(struct dec *x)
{
	model_fini(&x->m);
}

static const struct mdl_ev *ev_at(const struct dec *x, size_t i)
{
	assert_true(i < x->m.events.len);
	return VEC_AT(&x->m.events, struct mdl_ev, i);
}

static const struct mdl_arg *arg_at(const struct dec *x, size_t i)
{
	assert_true(i < x->m.args.len);
	return VEC_AT(&x->m.args, struct mdl_arg, i);
}

static const char *str_of(const struct dec *x, uint32_t id)
{
	assert_true(id < x->m.soff.len);
	return model_str(&x->m, id);
}

static const struct mdl_thread *thr_at(const struct dec *x, uint32_t i)
{
	assert_true(i < x->m.threads.len);
	return VEC_AT(&x->m.threads, struct mdl_thread, i);
}

static void assert_thread(const struct dec *x, uint32_t i, uint64_t pid, uint64_t tid)
{
	assert_int_equal(thr_at(x, i)->pid, pid);
	assert_int_equal(thr_at(x, i)->tid, tid);
}

static const struct mdl_provider *prov_at(const struct dec *x, size_t i)
{
	assert_true(i < x->m.providers.len);
	return *VEC_AT(&x->m.providers, struct mdl_provider *, i);
}

static const uint8_t *bytes_at(const struct dec *x, uint64_t off, uint64_t len)
{
	assert_true(off + len <= x->m.bytes.len);
	return (const uint8_t *)x->m.bytes.data + off;
}

/* ---- comparing two models field by field --------------------------------- */

typedef int (*eq_fn)(const struct model *, const struct model *, const void *, const void *);

static int vec_eq(const struct model *ma, const struct model *mb, const struct vec *a, const struct vec *b, eq_fn eq)
{
	size_t i;

	if (a->len != b->len)
		return 0;
	for (i = 0; i < a->len; i++)
		if (!eq(ma, mb, (const char *)a->data + i * a->size, (const char *)b->data + i * b->size))
			return 0;
	return 1;
}

/* The records of a runsort never spilled (the decoder's, without a
 * sorter), as a vec in push order. */
static struct vec rs_view(const struct runsort *rs)
{
	struct vec v = { 0 };

	v.data = rs->buf;
	v.len = v.cap = rs->len;
	v.size = rs->size;
	return v;
}

static int sid_eq(const struct model *ma, const struct model *mb, uint32_t a, uint32_t b)
{
	return a == b && strcmp(model_str(ma, a), model_str(mb, b)) == 0;
}

static int thread_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_thread *a = pa, *b = pb;

	(void)ma, (void)mb;
	return a->pid == b->pid && a->tid == b->tid;
}

static int ev_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_ev *a = pa, *b = pb;

	return a->ts == b->ts && a->extra == b->extra && a->seq == b->seq && a->thread == b->thread &&
	       sid_eq(ma, mb, a->cat, b->cat) && sid_eq(ma, mb, a->name, b->name) && a->args == b->args &&
	       a->kind == b->kind && a->nargs == b->nargs;
}

static int arg_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_arg *a = pa, *b = pb;

	if (a->type != b->type || !sid_eq(ma, mb, a->key, b->key) || a->len != b->len)
		return 0;
	switch (a->type) {
	case MDL_ARG_NULL:
		return 1;
	case MDL_ARG_DOUBLE:
		return memcmp(&a->v.d, &b->v.d, sizeof(double)) == 0;
	case MDL_ARG_STRING:
		return sid_eq(ma, mb, a->v.str, b->v.str);
	default:
		return a->v.u == b->v.u;
	}
}

static int sched_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_sched *a = pa, *b = pb;

	(void)ma, (void)mb;
	return a->ts == b->ts && a->seq == b->seq && a->cpu == b->cpu && a->out_state == b->out_state &&
	       a->legacy == b->legacy && a->out_thread == b->out_thread && a->in_thread == b->in_thread &&
	       a->in_priority == b->in_priority && a->in_idle == b->in_idle;
}

static int log_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_log *a = pa, *b = pb;

	return a->ts == b->ts && a->seq == b->seq && a->thread == b->thread && sid_eq(ma, mb, a->msg, b->msg);
}

static int kobj_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_kobj *a = pa, *b = pb;

	return a->koid == b->koid && a->process == b->process && a->type == b->type &&
	       sid_eq(ma, mb, a->name, b->name) && a->args == b->args && a->nargs == b->nargs;
}

static int uobj_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_uobj *a = pa, *b = pb;

	return a->pid == b->pid && a->ptr == b->ptr && sid_eq(ma, mb, a->name, b->name) && a->args == b->args &&
	       a->nargs == b->nargs;
}

static int blob_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_blob *a = pa, *b = pb;

	return a->ts == b->ts && a->off == b->off && a->len == b->len && a->thread == b->thread &&
	       sid_eq(ma, mb, a->cat, b->cat) && sid_eq(ma, mb, a->name, b->name) && a->args == b->args &&
	       a->nargs == b->nargs && a->kind == b->kind && a->type == b->type;
}

static int prof_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_prof *a = pa, *b = pb;

	return a->ts == b->ts && a->thread == b->thread && a->kind == b->kind && a->flags == b->flags &&
	       a->module == b->module && sid_eq(ma, mb, a->name, b->name) && a->off == b->off && a->len == b->len &&
	       a->start == b->start && a->range == b->range && a->vaddr == b->vaddr;
}

static int prov_eq(const struct model *ma, const struct model *mb, const void *pa, const void *pb)
{
	const struct mdl_provider *a = *(struct mdl_provider *const *)pa, *b = *(struct mdl_provider *const *)pb;
	size_t i;

	if (a->id != b->id || !sid_eq(ma, mb, a->name, b->name) || a->ticks_per_second != b->ticks_per_second ||
	    a->overflows != b->overflows || memcmp(a->threads, b->threads, sizeof(a->threads)) != 0)
		return 0;
	for (i = 0; i < sizeof(a->strings) / sizeof(a->strings[0]); i++) {
		if ((a->strings[i] == NULL) != (b->strings[i] == NULL))
			return 0;
		if (a->strings[i] && memcmp(a->strings[i], b->strings[i], 256 * sizeof(uint32_t)) != 0)
			return 0;
	}
	return 1;
}

static int diag_eq(const struct mdl_diag *a, const struct mdl_diag *b, int ignore_truncated)
{
	int eq = 1;

#define X(n) eq &= a->n == b->n || (ignore_truncated && strcmp(#n, "truncated_bytes") == 0);
	MDL_DIAG_LIST(X)
#undef X
	return eq;
}

/* Returns NULL when the models hold the same content, else what differs. */
static const char *model_diff(const struct model *a, const struct model *b, int ignore_truncated)
{
	struct vec sa, sb;
	size_t i;

	if (a->soff.len != b->soff.len)
		return "string count";
	for (i = 0; i < a->soff.len; i++)
		if (strcmp(model_str(a, (uint32_t)i), model_str(b, (uint32_t)i)) != 0)
			return "strings";
	if (!vec_eq(a, b, &a->threads, &b->threads, thread_eq))
		return "threads";
	if (!vec_eq(a, b, &a->events, &b->events, ev_eq))
		return "events";
	if (!vec_eq(a, b, &a->args, &b->args, arg_eq))
		return "args";
	if (a->bytes.len != b->bytes.len || (a->bytes.len && memcmp(a->bytes.data, b->bytes.data, a->bytes.len) != 0))
		return "bytes";
	sa = rs_view(&a->sched);
	sb = rs_view(&b->sched);
	if (!vec_eq(a, b, &sa, &sb, sched_eq))
		return "sched";
	if (!vec_eq(a, b, &a->logs, &b->logs, log_eq))
		return "logs";
	if (!vec_eq(a, b, &a->kobjs, &b->kobjs, kobj_eq))
		return "kernel objects";
	if (!vec_eq(a, b, &a->uobjs, &b->uobjs, uobj_eq))
		return "userspace objects";
	if (!vec_eq(a, b, &a->blobs, &b->blobs, blob_eq))
		return "blobs";
	if (!vec_eq(a, b, &a->profs, &b->profs, prof_eq))
		return "profiler";
	if (!vec_eq(a, b, &a->providers, &b->providers, prov_eq))
		return "providers";
	if (a->seq != b->seq)
		return "seq";
	if (a->oom || b->oom)
		return "oom";
	if (!diag_eq(&a->diag, &b->diag, ignore_truncated))
		return "diagnostics";
	return NULL;
}

/* ---- a mixed archive with every record type ------------------------------ */

struct mixed {
	size_t n;          /* records written */
	size_t end[64];    /* byte offset after record i */
	unsigned nev[64];  /* model events produced by records 0 .. i */
};

static void rec(struct mixed *x, const struct fxtw *w, unsigned events)
{
	assert_true(x->n < 64);
	x->end[x->n] = w->len;
	x->nev[x->n] = (x->n ? x->nev[x->n - 1] : 0) + events;
	x->n++;
}

static const uint8_t build_id[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
static const uint64_t frames[3] = { UINT64_C(0x1122334455667788), UINT64_C(0xffffffff00000001), 0x10 };
static const char lbm_data[] = "large-blob-13";       /* 13 bytes */
static const char lb_data[] = "twenty bytes payload"; /* 20 bytes */
#define MIXED_EVENTS 15

/*
 * 42 records: metadata, initialization, strings, threads, every event type,
 * blob, objects, scheduling, log, profiler, large blobs, a second provider,
 * an unknown record type and an instant with a trailing scope word.
 * Provider 7 runs at 2e9 ticks/s (ns = ticks / 2), provider 8 at 1000.
 */
static void build_mixed(struct fxtw *w, struct mixed *x)
{
	struct fxtw_arg a[3];
	uint64_t scope = 1;

	x->n = 0;
	fxtw_magic(w), rec(x, w, 0);
	fxtw_provider_info(w, 7, "prov"), rec(x, w, 0);
	fxtw_init_record(w, 2000000000), rec(x, w, 0);
	fxtw_string(w, 1, "cat"), rec(x, w, 0);
	fxtw_string(w, 2, "name"), rec(x, w, 0);
	fxtw_string(w, 3, "key"), rec(x, w, 0);
	fxtw_thread(w, 1, 10, 11), rec(x, w, 0);
	fxtw_thread(w, 2, 10, 12), rec(x, w, 0);
	fxtw_kernel_object(w, 1, FXTW_INL("proc10"), 10, NULL, 0), rec(x, w, 0);
	a[0] = fxtw_arg_koid(FXTW_INL("process"), 10);
	fxtw_kernel_object(w, 2, FXTW_INL("t11"), 11, a, 1), rec(x, w, 0);
	a[0] = fxtw_arg_i32(FXTW_IDX(3), -5);
	a[1] = fxtw_arg_str(FXTW_INL("s"), FXTW_INL("str"));
	fxtw_instant(w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(2), 200, a, 2), rec(x, w, 1);
	a[0] = fxtw_arg_u64(FXTW_IDX(3), UINT64_MAX);
	fxtw_begin(w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("outer"), 400, a, 1), rec(x, w, 1);
	a[0] = fxtw_arg_i64(FXTW_INL("v"), 7);
	a[1] = fxtw_arg_double(FXTW_INL("d"), 1.5);
	fxtw_counter(w, FXTW_TIDX(2), FXTW_IDX(1), FXTW_INL("cnt"), 500, 5, a, 2), rec(x, w, 1);
	a[0] = fxtw_arg_blob(FXTW_INL("bl"), "xyz", 3);
	fxtw_complete(w, FXTW_TINL(10, 13), FXTW_IDX(1), FXTW_INL("cmp"), 600, 1000, a, 1), rec(x, w, 1);
	fxtw_async(w, 5, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("op"), 620, 77, NULL, 0), rec(x, w, 1);
	fxtw_async(w, 6, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("op"), 640, 77, NULL, 0), rec(x, w, 1);
	fxtw_async(w, 7, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("op"), 660, 77, NULL, 0), rec(x, w, 1);
	fxtw_flow(w, 8, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("fl"), 680, 99), rec(x, w, 1);
	fxtw_flow(w, 9, FXTW_TIDX(2), FXTW_IDX(1), FXTW_INL("fl"), 700, 99), rec(x, w, 1);
	fxtw_flow(w, 10, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("fl"), 720, 99), rec(x, w, 1);
	a[0] = fxtw_arg_bool(FXTW_INL("ok"), 1);
	fxtw_end(w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("outer"), 800, a, 1), rec(x, w, 1);
	fxtw_blob(w, FXTW_INL("blobname"), 1, "abcdefghij", 10), rec(x, w, 0);
	a[0] = fxtw_arg_ptr(FXTW_INL("p"), 0xdeadbeef);
	fxtw_userspace_object(w, FXTW_TIDX(1), FXTW_INL("obj"), 0xdeadbeef, a, 1), rec(x, w, 0);
	fxtw_userspace_object(w, FXTW_TINL(20, 0), FXTW_INL("obj2"), 0x1234, NULL, 0), rec(x, w, 0);
	a[0] = fxtw_arg_i32(FXTW_INL("incoming_weight"), 5);
	fxtw_context_switch(w, 3, 2, 820, 11, 12, a, 1), rec(x, w, 0);
	a[0] = fxtw_arg_u32(FXTW_INL("reason"), 3);
	fxtw_wakeup(w, 3, 840, 11, a, 1), rec(x, w, 1);
	fxtw_legacy_switch(w, 1, 3, FXTW_TIDX(1), FXTW_TINL(0, 99), 4, 0, 860), rec(x, w, 0);
	fxtw_log(w, FXTW_TIDX(2), 880, "hello log"), rec(x, w, 0);
	fxtw_prof_module(w, FXTW_TIDX(1), 3, 900, "libfoo.so", build_id, 20), rec(x, w, 0);
	fxtw_prof_mmap(w, FXTW_TINL(10, 0), 3, 5, 920, UINT64_C(0x7f0000000000), 0x2000, 0x1000), rec(x, w, 0);
	fxtw_prof_backtrace(w, FXTW_TIDX(1), 940, frames, 3), rec(x, w, 0);
	a[0] = fxtw_arg_u32(FXTW_INL("n"), 42);
	fxtw_large_blob_meta(w, FXTW_IDX(1), FXTW_INL("lbm"), FXTW_TIDX(1), 960, a, 1, lbm_data, 13), rec(x, w, 0);
	fxtw_large_blob(w, FXTW_IDX(1), FXTW_INL("lb"), lb_data, 20), rec(x, w, 0);
	fxtw_provider_event(w, 7, 0), rec(x, w, 0);
	fxtw_provider_info(w, 8, "second"), rec(x, w, 0);
	fxtw_init_record(w, 1000), rec(x, w, 0);
	fxtw_string(w, 1, "cat8"), rec(x, w, 0);
	fxtw_thread(w, 1, 30, 31), rec(x, w, 0);
	fxtw_instant(w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("p8"), 1, NULL, 0), rec(x, w, 1);
	fxtw_provider_section(w, 7), rec(x, w, 0);
	a[0] = fxtw_arg_koid(FXTW_INL("k"), 11);
	a[1] = fxtw_arg_null(FXTW_INL("nul"));
	fxtw_instant(w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(2), 1000, a, 2), rec(x, w, 1);
	fxtw_word(w, 12 | F(3, 4)), fxtw_word(w, 0x1234), fxtw_word(w, 0x5678), rec(x, w, 0);
	fxtw_event(w, 0, FXTW_TIDX(2), FXTW_IDX(1), FXTW_INL("scoped"), 1100, NULL, 0, &scope, 1), rec(x, w, 1);
	assert_int_equal(x->nev[x->n - 1], MIXED_EVENTS);
}

/* ---- every record type, decoded into the model ---------------------------- */

static void test_mixed_model(void **state)
{
	static const uint8_t kinds[MIXED_EVENTS] = {
		MDL_EV_INSTANT,      MDL_EV_BEGIN,      MDL_EV_COUNTER,   MDL_EV_COMPLETE,
		MDL_EV_ASYNC_BEGIN,  MDL_EV_ASYNC_INSTANT, MDL_EV_ASYNC_END, MDL_EV_FLOW_BEGIN,
		MDL_EV_FLOW_STEP,    MDL_EV_FLOW_END,   MDL_EV_END,       MDL_EV_INSTANT,
		MDL_EV_INSTANT,      MDL_EV_INSTANT,    MDL_EV_INSTANT,
	};
	static const int64_t ts[MIXED_EVENTS] = { 100, 200, 250, 300, 310, 320, 330, 340,
						  350, 360, 400, 420, 1000000, 500, 550 };
	/* file order; the context switch, legacy switch and log take 11, 13, 14 */
	static const uint32_t seq[MIXED_EVENTS] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 16, 17 };
	struct fxtw w;
	struct mixed mx;
	struct dec x;
	const struct mdl_ev *e;
	const struct mdl_arg *a;
	const struct mdl_sched *s;
	const struct mdl_log *l;
	const struct mdl_kobj *ko;
	const struct mdl_uobj *uo;
	const struct mdl_blob *b;
	const struct mdl_prof *p;
	uint8_t le_frames[24];
	size_t i;

	(void)state;
	fxtw_init(&w, 0);
	build_mixed(&w, &mx);
	dec_w(&x, &w);

	/* events: kinds, times (2e9 ticks/s: ns = ticks / 2), extras */
	assert_int_equal(x.m.events.len, MIXED_EVENTS);
	for (i = 0; i < MIXED_EVENTS; i++) {
		e = ev_at(&x, i);
		assert_int_equal(e->kind, kinds[i]);
		assert_int_equal(e->ts, ts[i]);
		assert_int_equal(e->seq, seq[i]);
	}
	assert_int_equal(x.m.seq, 18);
	e = ev_at(&x, 14);
	assert_int_equal(e->kind, MDL_EV_INSTANT);
	assert_int_equal(e->ts, 550);
	assert_string_equal(str_of(&x, e->name), "scoped");
	assert_thread(&x, e->thread, 10, 12);
	assert_int_equal(e->nargs, 0);

	e = ev_at(&x, 0);
	assert_string_equal(str_of(&x, e->cat), "cat");
	assert_string_equal(str_of(&x, e->name), "name");
	assert_thread(&x, e->thread, 10, 11);
	assert_int_equal(e->extra, 0);
	assert_int_equal(e->nargs, 2);
	assert_int_equal(arg_at(&x, e->args)->type, MDL_ARG_I32);
	assert_int_equal(arg_at(&x, e->args)->v.i, -5);
	assert_string_equal(str_of(&x, arg_at(&x, e->args)->key), "key");
	assert_int_equal(arg_at(&x, e->args + 1)->type, MDL_ARG_STRING);
	assert_string_equal(str_of(&x, arg_at(&x, e->args + 1)->v.str), "str");

	e = ev_at(&x, 2); /* counter: id stays raw */
	assert_int_equal(e->extra, 5);
	assert_thread(&x, e->thread, 10, 12);
	assert_string_equal(str_of(&x, e->name), "cnt");
	a = arg_at(&x, e->args + 1);
	assert_int_equal(a->type, MDL_ARG_DOUBLE);
	assert_true(a->v.d == 1.5);
	e = ev_at(&x, 3); /* complete: end converted to ns; inline thread */
	assert_int_equal(e->extra, 500);
	assert_thread(&x, e->thread, 10, 13);
	a = arg_at(&x, e->args);
	assert_int_equal(a->type, MDL_ARG_BLOB);
	assert_int_equal(a->len, 3);
	assert_memory_equal(bytes_at(&x, a->v.u, 3), "xyz", 3);
	for (i = 4; i < 7; i++)
		assert_int_equal(ev_at(&x, i)->extra, 77);
	for (i = 7; i < 10; i++)
		assert_int_equal(ev_at(&x, i)->extra, 99);
	assert_thread(&x, ev_at(&x, 8)->thread, 10, 12);

	/* wakeup: an instant "sched"/"wakeup" of the woken thread, cpu appended */
	e = ev_at(&x, 11);
	assert_string_equal(str_of(&x, e->cat), "sched");
	assert_string_equal(str_of(&x, e->name), "wakeup");
	assert_thread(&x, e->thread, MDL_PID_UNRESOLVED, 11);
	assert_int_equal(e->nargs, 2);
	assert_string_equal(str_of(&x, arg_at(&x, e->args)->key), "reason");
	assert_int_equal(arg_at(&x, e->args)->v.u, 3);
	assert_string_equal(str_of(&x, arg_at(&x, e->args + 1)->key), "cpu");
	assert_int_equal(arg_at(&x, e->args + 1)->type, MDL_ARG_U32);
	assert_int_equal(arg_at(&x, e->args + 1)->v.u, 3);

	/* second provider: its own string and thread tables and tick rate */
	e = ev_at(&x, 12);
	assert_string_equal(str_of(&x, e->cat), "cat8");
	assert_thread(&x, e->thread, 30, 31);
	e = ev_at(&x, 13); /* back on provider 7 */
	assert_string_equal(str_of(&x, e->cat), "cat");
	assert_string_equal(str_of(&x, e->name), "name");
	assert_thread(&x, e->thread, 10, 11);
	assert_int_equal(arg_at(&x, e->args)->type, MDL_ARG_KOID);
	assert_int_equal(arg_at(&x, e->args + 1)->type, MDL_ARG_NULL);

	/* kernel objects */
	assert_int_equal(x.m.kobjs.len, 2);
	ko = VEC_AT(&x.m.kobjs, struct mdl_kobj, 0);
	assert_int_equal(ko->koid, 10);
	assert_int_equal(ko->type, 1);
	assert_string_equal(str_of(&x, ko->name), "proc10");
	assert_int_equal(ko->process, MDL_PID_UNRESOLVED);
	assert_int_equal(ko->nargs, 0);
	ko = VEC_AT(&x.m.kobjs, struct mdl_kobj, 1);
	assert_int_equal(ko->koid, 11);
	assert_int_equal(ko->type, 2);
	assert_string_equal(str_of(&x, ko->name), "t11");
	assert_int_equal(ko->process, 10);
	assert_int_equal(ko->nargs, 1);

	/* userspace objects: indexed process and inline pid */
	assert_int_equal(x.m.uobjs.len, 2);
	uo = VEC_AT(&x.m.uobjs, struct mdl_uobj, 0);
	assert_int_equal(uo->pid, 10);
	assert_int_equal(uo->ptr, 0xdeadbeef);
	assert_string_equal(str_of(&x, uo->name), "obj");
	assert_int_equal(uo->nargs, 1);
	assert_int_equal(arg_at(&x, uo->args)->type, MDL_ARG_POINTER);
	assert_int_equal(arg_at(&x, uo->args)->v.u, 0xdeadbeef);
	uo = VEC_AT(&x.m.uobjs, struct mdl_uobj, 1);
	assert_int_equal(uo->pid, 20);
	assert_int_equal(uo->ptr, 0x1234);
	assert_string_equal(str_of(&x, uo->name), "obj2");
	assert_int_equal(uo->nargs, 0);

	/* scheduling: context switch and legacy context switch */
	assert_int_equal(x.m.sched.len, 2);
	s = &((const struct mdl_sched *)x.m.sched.buf)[0];
	assert_int_equal(s->ts, 410);
	assert_int_equal(s->seq, 11);
	assert_int_equal(s->cpu, 3);
	assert_int_equal(s->out_state, 2);
	assert_int_equal(s->legacy, 0);
	assert_thread(&x, s->out_thread, MDL_PID_UNRESOLVED, 11);
	assert_thread(&x, s->in_thread, MDL_PID_UNRESOLVED, 12);
	assert_int_equal(s->in_priority, 5);
	assert_int_equal(s->in_idle, 0);
	s = &((const struct mdl_sched *)x.m.sched.buf)[1];
	assert_int_equal(s->ts, 430);
	assert_int_equal(s->seq, 13);
	assert_int_equal(s->cpu, 1);
	assert_int_equal(s->out_state, 3);
	assert_int_equal(s->legacy, 1);
	assert_thread(&x, s->out_thread, 10, 11);
	assert_thread(&x, s->in_thread, 0, 99);
	assert_int_equal(s->in_priority, 0);
	assert_int_equal(s->in_idle, 1);

	/* log */
	assert_int_equal(x.m.logs.len, 1);
	l = VEC_AT(&x.m.logs, struct mdl_log, 0);
	assert_int_equal(l->ts, 440);
	assert_int_equal(l->seq, 14);
	assert_thread(&x, l->thread, 10, 12);
	assert_string_equal(str_of(&x, l->msg), "hello log");

	/* profiler: module, mmap, backtrace (frames little-endian) */
	assert_int_equal(x.m.profs.len, 3);
	p = VEC_AT(&x.m.profs, struct mdl_prof, 0);
	assert_int_equal(p->kind, MDL_PROF_MODULE);
	assert_int_equal(p->ts, 450);
	assert_thread(&x, p->thread, 10, 11);
	assert_int_equal(p->module, 3);
	assert_string_equal(str_of(&x, p->name), "libfoo.so");
	assert_int_equal(p->len, 20);
	assert_memory_equal(bytes_at(&x, p->off, 20), build_id, 20);
	p = VEC_AT(&x.m.profs, struct mdl_prof, 1);
	assert_int_equal(p->kind, MDL_PROF_MMAP);
	assert_int_equal(p->ts, 460);
	assert_thread(&x, p->thread, 10, 0);
	assert_int_equal(p->module, 3);
	assert_int_equal(p->flags, 5);
	assert_int_equal(p->start, UINT64_C(0x7f0000000000));
	assert_int_equal(p->range, 0x2000);
	assert_int_equal(p->vaddr, 0x1000);
	p = VEC_AT(&x.m.profs, struct mdl_prof, 2);
	assert_int_equal(p->kind, MDL_PROF_BACKTRACE);
	assert_int_equal(p->ts, 470);
	assert_thread(&x, p->thread, 10, 11);
	assert_int_equal(p->len, 24);
	for (i = 0; i < 24; i++)
		le_frames[i] = (uint8_t)(frames[i / 8] >> (8 * (i % 8)));
	assert_memory_equal(bytes_at(&x, p->off, 24), le_frames, 24);

	/* blobs: small, large with metadata, large without */
	assert_int_equal(x.m.blobs.len, 3);
	b = VEC_AT(&x.m.blobs, struct mdl_blob, 0);
	assert_int_equal(b->kind, MDL_BLOB);
	assert_int_equal(b->type, 1);
	assert_string_equal(str_of(&x, b->name), "blobname");
	assert_int_equal(b->len, 10);
	assert_memory_equal(bytes_at(&x, b->off, 10), "abcdefghij", 10);
	assert_int_equal(b->thread, MDL_NONE);
	b = VEC_AT(&x.m.blobs, struct mdl_blob, 1);
	assert_int_equal(b->kind, MDL_LARGE_BLOB_META);
	assert_int_equal(b->ts, 480);
	assert_thread(&x, b->thread, 10, 11);
	assert_string_equal(str_of(&x, b->cat), "cat");
	assert_string_equal(str_of(&x, b->name), "lbm");
	assert_int_equal(b->nargs, 1);
	assert_int_equal(arg_at(&x, b->args)->v.u, 42);
	assert_int_equal(b->len, 13);
	assert_memory_equal(bytes_at(&x, b->off, 13), lbm_data, 13);
	b = VEC_AT(&x.m.blobs, struct mdl_blob, 2);
	assert_int_equal(b->kind, MDL_LARGE_BLOB);
	assert_int_equal(b->ts, 0);
	assert_int_equal(b->thread, MDL_NONE);
	assert_string_equal(str_of(&x, b->cat), "cat");
	assert_string_equal(str_of(&x, b->name), "lb");
	assert_int_equal(b->nargs, 0);
	assert_int_equal(b->len, 20);
	assert_memory_equal(bytes_at(&x, b->off, 20), lb_data, 20);

	/* providers and diagnostics */
	assert_int_equal(x.m.providers.len, 2);
	assert_int_equal(prov_at(&x, 0)->id, 7);
	assert_string_equal(str_of(&x, prov_at(&x, 0)->name), "prov");
	assert_int_equal(prov_at(&x, 0)->ticks_per_second, 2000000000);
	assert_int_equal(prov_at(&x, 0)->overflows, 1);
	assert_int_equal(prov_at(&x, 1)->id, 8);
	assert_string_equal(str_of(&x, prov_at(&x, 1)->name), "second");
	assert_int_equal(prov_at(&x, 1)->ticks_per_second, 1000);
	assert_int_equal(x.m.diag.unknown_records, 1);
	assert_int_equal(x.m.diag.buffer_overflows, 1);
	{
		struct mdl_diag want = { 0 };

		want.unknown_records = 1;
		want.buffer_overflows = 1;
		assert_true(diag_eq(&x.m.diag, &want, 0));
	}
	assert_int_equal(x.d.st.bytes, w.len);
	assert_int_equal(x.d.st.records[12], 1);
	for (i = 0; i < 11; i++)
		assert_int_equal(x.d.st.events[i], i == 0 ? 4 : 1);
	assert_int_equal(x.d.st.sched[0], 1);
	assert_int_equal(x.d.st.sched[1], 1);
	assert_int_equal(x.d.st.sched[2], 1);
	dec_done(&x);
	fxtw_fini(&w);
}

/* ---- every record type, read back from the database ----------------------- */

static void test_mixed_db(void **state)
{
	struct fxtw w;
	struct mixed mx;
	struct tdb t;

	(void)state;
	fxtw_init(&w, 0);
	build_mixed(&w, &mx);
	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(t.res.counts.events, MIXED_EVENTS);
	assert_int_equal(t.res.bytes, w.len);
	assert_string_equal(tdb_rows(&t, "SELECT id, name, ticks_per_second, buffer_overflows FROM providers ORDER BY id"),
			    "7|prov|2000000000|1\n8|second|1000|0");
	assert_string_equal(tdb_rows(&t, "SELECT koid, type, name, quote(process_koid) FROM kernel_objects ORDER BY koid"),
			    "10|1|proc10|NULL\n11|2|t11|10");
	assert_string_equal(tdb_rows(&t, "SELECT k.key, k.type, k.value FROM kernel_objects o JOIN arg_view k "
					 "ON k.arg_set_id = o.arg_set_id ORDER BY o.koid, k.seq"),
			    "process|8|10");
	assert_string_equal(tdb_rows(&t, "SELECT pid, pointer, name, arg_set_id IS NOT NULL FROM userspace_objects "
					 "ORDER BY id"),
			    "10|3735928559|obj|1\n20|4660|obj2|0");
	assert_string_equal(tdb_rows(&t, "SELECT a.key, a.type, a.value FROM userspace_objects o JOIN arg_view a "
					 "ON a.arg_set_id = o.arg_set_id"),
			    "p|7|3735928559");
	assert_string_equal(tdb_rows(&t, "SELECT b.kind, quote(b.blob_type), quote(b.ts), b.thread_id IS NOT NULL, "
					 "quote(c.str), n.str, b.size, hex(b.data) FROM blobs b "
					 "LEFT JOIN strings c ON c.id = b.category_id JOIN strings n ON n.id = b.name_id "
					 "ORDER BY b.id"),
			    "blob|1|NULL|0|NULL|blobname|10|6162636465666768696A\n"
			    "large_blob|NULL|480|1|'cat'|lbm|13|6C617267652D626C6F622D3133\n"
			    "large_blob_data|NULL|NULL|0|'cat'|lb|20|7477656E7479206279746573207061796C6F6164");
	assert_string_equal(tdb_rows(&t, "SELECT a.key, a.type, a.value FROM blobs b JOIN arg_view a "
					 "ON a.arg_set_id = b.arg_set_id"),
			    "n|2|42");
	assert_string_equal(tdb_rows(&t, "SELECT p.kind, p.ts, t.pid, t.tid, quote(p.module_id), quote(p.name), "
					 "hex(p.build_id), quote(p.flags), quote(p.start_address), "
					 "quote(p.address_range), quote(p.vaddr), hex(p.frames) "
					 "FROM profiler p JOIN threads t ON t.id = p.thread_id ORDER BY p.id"),
			    "module|450|10|11|3|'libfoo.so'|0102030405060708090A0B0C0D0E0F1011121314|NULL|NULL|NULL|"
			    "NULL|\n"
			    "mmap|460|10|0|3|NULL||5|139637976727552|8192|4096|\n"
			    "backtrace|470|10|11|NULL|NULL||NULL|NULL|NULL|NULL|"
			    "887766554433221101000000FFFFFFFF1000000000000000");
	assert_string_equal(tdb_rows(&t, "SELECT l.ts, l.pid, l.tid, s.str FROM logs l JOIN strings s "
					 "ON s.id = l.message_id"),
			    "440|10|12|hello log");
	assert_string_equal(tdb_rows(&t, "SELECT ts, name, category FROM slice_view WHERE name IN "
					 "('wakeup', 'scoped', 'p8', 'cmp') ORDER BY ts"),
			    "300|cmp|cat\n420|wakeup|sched\n550|scoped|cat\n1000000|p8|cat8");
	assert_int_equal(tdb_int(&t, "SELECT dur FROM slice_view WHERE name = 'cmp'"), 200);
	assert_int_equal(tdb_diag(&t, "unknown_records"), 1);
	assert_int_equal(tdb_diag(&t, "buffer_overflows"), 1);
	assert_int_equal(tdb_diag(&t, "malformed_records"), 0);
	assert_int_equal(tdb_diag(&t, "truncated_bytes"), 0);
	tdb_close(&t);
	fxtw_fini(&w);
}

/* ---- metadata -------------------------------------------------------------- */

static void test_metadata(void **state)
{
	struct fxtw w;
	struct tdb t;
	struct dec x;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "alpha");
	fxtw_string(&w, 1, "one");
	fxtw_provider_info(&w, 2, "beta");
	fxtw_string(&w, 1, "two");
	fxtw_provider_event(&w, 1, 0);
	fxtw_provider_event(&w, 1, 0);
	fxtw_provider_event(&w, 2, 0);
	fxtw_provider_event(&w, 5, 0); /* unknown provider: registered empty */
	fxtw_provider_event(&w, 1, 1); /* unknown provider event */
	fxtw_provider_section(&w, 1);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_IDX(1), FXTW_IDX(1), 10, NULL, 0);
	fxtw_provider_section(&w, 2);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_IDX(1), FXTW_IDX(1), 20, NULL, 0);
	fxtw_provider_section(&w, 9); /* unknown provider: registered empty */
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_IDX(1), FXTW_IDX(1), 30, NULL, 0);
	fxtw_magic(&w);                      /* trace info mid-file: fine */
	fxtw_provider_info(&w, 1, "alpha2"); /* re-registration empties the tables */
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_IDX(1), FXTW_IDX(1), 40, NULL, 0);
	fxtw_word(&w, 0 | F(1, 4) | F(4, 16) | F(0x12345678, 24)); /* trace info, wrong magic */
	fxtw_word(&w, 0 | F(1, 4) | F(4, 16) | F(1, 20) | F(0x16547846, 24)); /* trace info type 1 */
	fxtw_word(&w, 0 | F(1, 4) | F(7, 16));                                  /* metadata type 7 */
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_IDX(1), FXTW_IDX(1), 50, NULL, 0);

	dec_w(&x, &w);
	assert_int_equal(x.m.events.len, 5);
	assert_string_equal(str_of(&x, ev_at(&x, 0)->name), "one");
	assert_string_equal(str_of(&x, ev_at(&x, 1)->name), "two");
	assert_string_equal(str_of(&x, ev_at(&x, 2)->name), "<unknown string 1>");
	assert_string_equal(str_of(&x, ev_at(&x, 3)->name), "<unknown string 1>");
	assert_string_equal(str_of(&x, ev_at(&x, 4)->name), "<unknown string 1>");
	assert_int_equal(x.m.diag.unresolved_string_refs, 6);
	assert_int_equal(x.m.diag.buffer_overflows, 4);
	assert_int_equal(x.m.diag.unknown_records, 3);
	assert_int_equal(x.m.diag.malformed_records, 1);
	assert_int_equal(x.d.st.metadata[1], 3);
	assert_int_equal(x.d.st.metadata[2], 3);
	assert_int_equal(x.d.st.metadata[3], 5);
	assert_int_equal(x.d.st.metadata[4], 4);
	assert_int_equal(x.d.st.metadata[7], 1);
	dec_done(&x);

	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_string_equal(tdb_rows(&t, "SELECT id, name, ticks_per_second, buffer_overflows FROM providers ORDER BY id"),
			    "1|alpha2|1000000000|2\n2|beta|1000000000|1\n5||1000000000|1\n9||1000000000|0");
	assert_int_equal(t.res.nproviders, 4);
	assert_int_equal(tdb_diag(&t, "buffer_overflows"), 4);
	assert_int_equal(tdb_diag(&t, "unknown_records"), 3);
	assert_int_equal(tdb_diag(&t, "malformed_records"), 1);
	assert_string_equal(tdb_rows(&t, "SELECT ts, name FROM slice_view ORDER BY ts"),
			    "10|one\n20|two\n30|<unknown string 1>\n40|<unknown string 1>\n50|<unknown string 1>");
	tdb_close(&t);
	fxtw_fini(&w);
}

/* An archive may start with a provider-info record instead of the magic. */
static void test_headerless(void **state)
{
	struct fxtw w;
	struct dec x;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_provider_info(&w, 3, "p");
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("n"), 5, NULL, 0);
	assert_true(fxt_detect(w.buf, w.len));
	dec_w(&x, &w);
	assert_int_equal(x.m.events.len, 1);
	assert_int_equal(prov_at(&x, 0)->id, 3);
	dec_done(&x);
	fxtw_fini(&w);
}

/* The magic "generally" starts an archive: a provider's buffer as its engine
 * writes it starts with the initialization record, and is read as a trace. */
static void test_headerless_init(void **state)
{
	struct fxtw w;
	struct tdb t;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_init_record(&w, 2000000000);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("n"), 10, NULL, 0);
	assert_true(fxt_detect(w.buf, w.len));
	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_string_equal(t.res.format, "fxt");
	assert_int_equal(tdb_int(&t, "SELECT ts FROM slices"), 5);
	assert_int_equal(tdb_int(&t, "SELECT ticks_per_second FROM providers"), 2000000000);
	tdb_close(&t);
	fxtw_fini(&w);
}

/* format=fxt skips detection (docs/API.md): an archive that starts with
 * neither the magic nor a provider or initialization record is read. */
static void test_forced_format(void **state)
{
	struct ingest_opts o = { 0 };
	struct fxtw w;
	struct tdb t;

	(void)state;
	o.format = "fxt";
	fxtw_init(&w, 0);
	fxtw_string(&w, 1, "named");
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_IDX(1), 10, NULL, 0);
	assert_false(fxt_detect(w.buf, w.len));
	tdb_ingest_opts(&t, w.buf, w.len, &o);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name = 'named' AND ts = 10"), 1);
	tdb_close(&t);
	tdb_ingest_bytes(&t, w.buf, w.len); /* detected: still not a trace */
	assert_int_equal(t.rc, INGEST_ENOTTRACE);
	tdb_close(&t);
	fxtw_fini(&w);
}

/* ---- initialization: tick conversion ------------------------------------- */

static void test_initialization(void **state)
{
	static const int64_t want[] = {
		3333333333,                  /* 10 ticks at 3/s: truncated */
		INT64_MAX,                   /* UINT64_MAX ticks at 3/s: clamped */
		INT64_C(6148914691236517205), /* UINT64_MAX at 3e9/s: exact past 64-bit products */
		1000000000,                  /* 3000000001 at 3e9/s: truncated */
		7000000,                     /* 7 at 1000/s from a 4-word record */
		7000000,                     /* tps 0 was malformed: still 1000/s */
		INT64_MAX,                   /* 2^63 at 1e9/s: clamped */
		INT64_MAX - 1,               /* 2^63 - 2 at 1e9/s */
	};
	struct fxtw w;
	struct tdb t;
	struct dec x;
	size_t i;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 3);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("a"), 10, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("b"), UINT64_MAX, NULL, 0);
	fxtw_init_record(&w, 3000000000u);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("c"), UINT64_MAX, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("d"), 3000000001u, NULL, 0);
	fxtw_word(&w, 1 | F(4, 4)), fxtw_word(&w, 1000), fxtw_word(&w, 0), fxtw_word(&w, 0);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("e"), 7, NULL, 0);
	fxtw_init_record(&w, 0);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("f"), 7, NULL, 0);
	fxtw_init_record(&w, 1000000000);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("g"), UINT64_C(1) << 63, NULL, 0);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("h"), (UINT64_C(1) << 63) - 2, NULL, 0);
	fxtw_word(&w, 1 | F(1, 4)); /* 1 word: no room for ticks per second */

	dec_w(&x, &w);
	assert_int_equal(x.m.events.len, 8);
	for (i = 0; i < 8; i++)
		assert_int_equal(ev_at(&x, i)->ts, want[i]);
	assert_int_equal(x.m.diag.timestamp_overflows, 2);
	assert_int_equal(x.m.diag.malformed_records, 2);
	assert_int_equal(x.m.providers.len, 1);
	assert_int_equal(prov_at(&x, 0)->id, 0);
	assert_int_equal(prov_at(&x, 0)->ticks_per_second, 1000000000);
	assert_int_equal(x.d.st.records[1], 6);
	dec_done(&x);

	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_string_equal(tdb_rows(&t, "SELECT name, ts FROM slice_view ORDER BY name"),
			    "a|3333333333\nb|9223372036854775807\nc|6148914691236517205\nd|1000000000\n"
			    "e|7000000\nf|7000000\ng|9223372036854775807\nh|9223372036854775806");
	assert_int_equal(tdb_diag(&t, "timestamp_overflows"), 2);
	tdb_close(&t);
	fxtw_fini(&w);
}

/* The complete event's end time is converted like its start. */
static void test_complete_end_ticks(void **state)
{
	struct fxtw w;
	struct dec x;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 3);
	fxtw_complete(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("n"), 1, 2, NULL, 0);
	fxtw_complete(&w, FXTW_TINL(1, 2), FXTW_INL("c"), FXTW_INL("n"), 1, UINT64_MAX, NULL, 0);
	dec_w(&x, &w);
	assert_int_equal(ev_at(&x, 0)->ts, 333333333);
	assert_int_equal(ev_at(&x, 0)->extra, 666666666);
	assert_int_equal(ev_at(&x, 1)->extra, INT64_MAX);
	assert_int_equal(x.m.diag.timestamp_overflows, 1);
	dec_done(&x);
	fxtw_fini(&w);
}

/* ---- string and thread records ------------------------------------------- */

static void test_string_thread(void **state)
{
	char longname[400];
	struct fxtw w;
	struct dec x;
	const struct mdl_ev *e;

	(void)state;
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_string(&w, 1, "hello");
	fxtw_string(&w, 0x7fff, longname);
	fxtw_string(&w, 0, "ignored");
	fxtw_string(&w, 2, "");
	fxtw_thread(&w, 1, 100, 101);
	fxtw_thread(&w, 255, UINT64_MAX, UINT64_C(0x8000000000000001));
	fxtw_thread(&w, 0, 5, 6);
	fxtw_instant(&w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(0x7fff), 1, NULL, 0);
	fxtw_instant(&w, FXTW_TIDX(255), FXTW_IDX(2), FXTW_EMPTY, 2, NULL, 0);
	fxtw_instant(&w, FXTW_TIDX(7), FXTW_IDX(9), FXTW_INL(""), 3, NULL, 0);
	fxtw_string(&w, 1, "rebound"); /* later records see the new binding */
	fxtw_thread(&w, 1, 200, 201);
	fxtw_instant(&w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("n4"), 4, NULL, 0);

	dec_w(&x, &w);
	assert_int_equal(x.m.events.len, 4);
	e = ev_at(&x, 0);
	assert_string_equal(str_of(&x, e->cat), "hello");
	assert_string_equal(str_of(&x, e->name), longname);
	assert_thread(&x, e->thread, 100, 101);
	e = ev_at(&x, 1);
	assert_string_equal(str_of(&x, e->cat), "");
	assert_string_equal(str_of(&x, e->name), "");
	assert_thread(&x, e->thread, UINT64_MAX, UINT64_C(0x8000000000000001));
	e = ev_at(&x, 2);
	assert_string_equal(str_of(&x, e->cat), "<unknown string 9>");
	assert_string_equal(str_of(&x, e->name), "");
	assert_thread(&x, e->thread, 0, 0);
	e = ev_at(&x, 3);
	assert_string_equal(str_of(&x, e->cat), "rebound");
	assert_string_equal(str_of(&x, e->name), "n4");
	assert_thread(&x, e->thread, 200, 201);
	assert_int_equal(x.m.diag.ignored_records, 2);
	assert_int_equal(x.m.diag.unresolved_string_refs, 1);
	assert_int_equal(x.m.diag.unresolved_thread_refs, 1);
	assert_int_equal(x.m.diag.malformed_records, 0);
	dec_done(&x);
	fxtw_fini(&w);
}

/* ---- all eleven event types ----------------------------------------------- */

static void test_event_types(void **state)
{
	static const uint8_t kinds[11] = {
		MDL_EV_INSTANT,     MDL_EV_COUNTER,     MDL_EV_BEGIN,        MDL_EV_END,
		MDL_EV_COMPLETE,    MDL_EV_ASYNC_BEGIN, MDL_EV_ASYNC_INSTANT, MDL_EV_ASYNC_END,
		MDL_EV_FLOW_BEGIN,  MDL_EV_FLOW_STEP,   MDL_EV_FLOW_END,
	};
	struct fxtw_arg arg;
	struct fxtw w;
	struct dec x;
	char name[8];
	unsigned k;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_init_record(&w, 500000000); /* 2 ns per tick */
	fxtw_string(&w, 1, "cat");
	fxtw_thread(&w, 1, 100, 101);
	for (k = 0; k < 11; k++) {
		uint64_t extra = 5000 + k;
		int has_extra = k == 1 || k >= 4;

		snprintf(name, sizeof(name), "e%u", k);
		arg = fxtw_arg_u32(FXTW_INL("k"), k);
		fxtw_event(&w, k, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL(name), 1000 + k, &arg, 1, &extra,
			   has_extra ? 1 : 0);
	}
	dec_w(&x, &w);
	assert_int_equal(x.m.events.len, 11);
	for (k = 0; k < 11; k++) {
		const struct mdl_ev *e = ev_at(&x, k);

		snprintf(name, sizeof(name), "e%u", k);
		assert_int_equal(e->kind, kinds[k]);
		assert_int_equal(e->ts, 2 * (1000 + k));
		assert_int_equal(e->seq, k);
		assert_string_equal(str_of(&x, e->cat), "cat");
		assert_string_equal(str_of(&x, e->name), name);
		assert_thread(&x, e->thread, 100, 101);
		assert_int_equal(e->nargs, 1);
		assert_int_equal(arg_at(&x, e->args)->v.u, k);
		if (k == 4)
			assert_int_equal(e->extra, 2 * (5000 + k));
		else if (k == 1 || k >= 4)
			assert_int_equal(e->extra, 5000 + k);
		else
			assert_int_equal(e->extra, 0);
		assert_int_equal(x.d.st.events[k], 1);
	}
	assert_int_equal(x.m.diag.malformed_records, 0);
	assert_int_equal(x.m.diag.unknown_records, 0);
	dec_done(&x);
	fxtw_fini(&w);
}

/* ---- every argument type, read back from the args table ------------------- */

static double tdb_real(struct tdb *t, const char *sql)
{
	sqlite3_stmt *st;
	double v = NAN;

	assert_int_equal(sqlite3_prepare_v2(t->db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_FLOAT)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void test_arg_types(void **state)
{
	static const uint8_t blob[5] = { 0x00, 0x01, 'a', 'b', 0xff };
	struct fxtw_arg a[15];
	char want[2048];
	struct fxtw w;
	struct tdb t;
	struct dec x;
	double d;

	(void)state;
	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_string(&w, 1, "cat");
	fxtw_string(&w, 3, "key");
	fxtw_string(&w, 4, "value");
	a[0] = fxtw_arg_null(FXTW_INL("n"));
	a[1] = fxtw_arg_i32(FXTW_INL("i32"), -123456);
	a[2] = fxtw_arg_u32(FXTW_INL("u32"), 0xfffffff0u);
	a[3] = fxtw_arg_i64(FXTW_INL("i64"), INT64_MIN + 1);
	a[4] = fxtw_arg_u64(FXTW_INL("u64"), UINT64_C(0xfedcba9876543210));
	a[5] = fxtw_arg_double(FXTW_INL("dbl"), -0.1);
	a[6] = fxtw_arg_str(FXTW_IDX(3), FXTW_IDX(4));
	a[7] = fxtw_arg_str(FXTW_INL("sinl"), FXTW_INL("inline value!"));
	a[8] = fxtw_arg_ptr(FXTW_INL("ptr"), UINT64_C(0xffff800012345678));
	a[9] = fxtw_arg_koid(FXTW_INL("koid"), UINT64_C(0x8000000000000000));
	a[10] = fxtw_arg_bool(FXTW_INL("b"), 1);
	a[11] = fxtw_arg_blob(FXTW_INL("blob"), blob, 5);
	a[12] = fxtw_arg_i32(FXTW_INL("imin"), INT32_MIN);
	a[13] = fxtw_arg_bool(FXTW_INL("f"), 0);
	a[14] = fxtw_arg_str(FXTW_INL("empty"), FXTW_EMPTY);
	fxtw_instant(&w, FXTW_TINL(1, 2), FXTW_IDX(1), FXTW_INL("argev"), 10, a, 15);

	/* in the model */
	dec_w(&x, &w);
	assert_int_equal(x.m.args.len, 15);
	assert_int_equal(ev_at(&x, 0)->nargs, 15);
	assert_int_equal(arg_at(&x, 1)->v.i, -123456);
	assert_int_equal(arg_at(&x, 2)->v.u, 0xfffffff0u);
	assert_int_equal(arg_at(&x, 3)->v.i, INT64_MIN + 1);
	assert_int_equal(arg_at(&x, 4)->v.u, UINT64_C(0xfedcba9876543210));
	assert_true(arg_at(&x, 5)->v.d == -0.1);
	assert_int_equal(arg_at(&x, 12)->v.i, INT32_MIN);
	assert_int_equal(x.d.st.args, 15);
	dec_done(&x);

	/* in the database */
	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	snprintf(want, sizeof(want),
		 "0|n|0|NULL|NULL|NULL|NULL\n"
		 "1|i32|1|-123456|NULL|NULL|NULL\n"
		 "2|u32|2|4294967280|NULL|NULL|NULL\n"
		 "3|i64|3|%" PRId64 "|NULL|NULL|NULL\n"
		 "4|u64|4|%" PRId64 "|NULL|NULL|NULL\n"
		 "5|dbl|5|NULL|-0.1|NULL|NULL\n"
		 "6|key|6|NULL|NULL|value|NULL\n"
		 "7|sinl|6|NULL|NULL|inline value!|NULL\n"
		 "8|ptr|7|%" PRId64 "|NULL|NULL|NULL\n"
		 "9|koid|8|%" PRId64 "|NULL|NULL|NULL\n"
		 "10|b|9|1|NULL|NULL|NULL\n"
		 "11|blob|10|NULL|NULL|NULL|X'00016162FF'\n"
		 "12|imin|1|-2147483648|NULL|NULL|NULL\n"
		 "13|f|9|0|NULL|NULL|NULL\n"
		 "14|empty|6|NULL|NULL||NULL",
		 INT64_MIN + 1, (int64_t)UINT64_C(0xfedcba9876543210), (int64_t)UINT64_C(0xffff800012345678),
		 (int64_t)UINT64_C(0x8000000000000000));
	assert_string_equal(tdb_rows(&t, "SELECT a.seq, k.str, a.type, quote(a.int_value), quote(a.real_value), "
					 "v.str, quote(a.blob_value) FROM args a JOIN strings k ON k.id = a.key_id "
					 "LEFT JOIN strings v ON v.id = a.string_id WHERE a.arg_set_id = "
					 "(SELECT arg_set_id FROM slice_view WHERE name = 'argev') ORDER BY a.seq"),
			    want);
	d = tdb_real(&t, "SELECT real_value FROM args WHERE type = 5");
	assert_memory_equal(&d, &(double){ -0.1 }, sizeof(double));
	assert_int_equal(tdb_int(&t, "SELECT int_value = -9223372036854775807 - 1 FROM args WHERE type = 8"), 1);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM args"), 15);
	tdb_close(&t);
	fxtw_fini(&w);
}

/* ---- real-writer variants and unknown types -------------------------------- */

static void good_instant(struct fxtw *w, uint64_t ts)
{
	struct fxtw_arg a = fxtw_arg_u32(FXTW_IDX(3), (uint32_t)ts);

	fxtw_instant(w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(2), ts, &a, 1);
}

static void good_head(struct fxtw *w)
{
	fxtw_magic(w);
	fxtw_provider_info(w, 1, "p");
	fxtw_string(w, 1, "cat");
	fxtw_string(w, 2, "name");
	fxtw_string(w, 3, "key");
	fxtw_thread(w, 1, 100, 101);
}

/* Every event is a good instant whose timestamp is 1, 2, 3, ... */
static void assert_good_instants(const struct dec *x, size_t n)
{
	size_t i;

	assert_int_equal(x->m.events.len, n);
	assert_int_equal(x->m.args.len, n);
	for (i = 0; i < n; i++) {
		const struct mdl_ev *e = ev_at(x, i);

		assert_int_equal(e->kind, MDL_EV_INSTANT);
		assert_int_equal(e->ts, (int64_t)i + 1);
		assert_string_equal(str_of(x, e->name), "name");
		assert_string_equal(str_of(x, e->cat), "cat");
		assert_thread(x, e->thread, 100, 101);
		assert_int_equal(e->nargs, 1);
		assert_int_equal(e->args, i);
		assert_int_equal(arg_at(x, e->args)->v.u, i + 1);
	}
}

static void test_unknown_types(void **state)
{
	static const uint64_t unknown[] = {
		11 | F(1, 4), 12 | F(3, 4), 13 | F(2, 4), 14 | F(1, 4),          /* record types */
		4 | F(2, 4) | F(11, 16) | F(1, 24) | F(1, 32) | F(2, 48),        /* event type 11 */
		4 | F(3, 4) | F(15, 16) | F(1, 24) | F(1, 32) | F(2, 48),        /* event type 15 */
		0 | F(1, 4),                                                     /* metadata type 0 */
		0 | F(1, 4) | F(15, 16),                                         /* metadata type 15 */
		8 | F(3, 4) | F(3, 60),                                          /* scheduling type 3 */
		8 | F(1, 4) | F(15, 60),                                         /* scheduling type 15 */
		10 | F(2, 4) | F(3, 16) | F(1, 20),                              /* profiler subtype 3 */
		15 | F(2, 4) | F(1, 36),                                         /* large type 1 */
		15 | F(3, 4) | F(2, 40),                                         /* large blob format 2 */
	};
	size_t n = sizeof(unknown) / sizeof(unknown[0]), i, k, words;
	struct fxtw w;
	struct dec x;

	(void)state;
	fxtw_init(&w, 0);
	good_head(&w);
	for (i = 0; i < n; i++) {
		words = (size_t)rd_bits(unknown[i], 4, (unknown[i] & 0xf) == 15 ? 35 : 15);
		fxtw_word(&w, unknown[i]);
		for (k = 1; k < words; k++)
			fxtw_word(&w, UINT64_C(0x0123456789abcdef)); /* junk a decoder must not read */
		good_instant(&w, i + 1);
	}
	dec_w(&x, &w);
	assert_good_instants(&x, n);
	assert_int_equal(x.m.diag.unknown_records, n);
	assert_int_equal(x.m.diag.malformed_records, 0);
	assert_int_equal(x.m.diag.truncated_bytes, 0);
	assert_int_equal(x.d.st.records[12], 1);
	dec_done(&x);
	fxtw_fini(&w);
}

static void test_unknown_args(void **state)
{
	struct fxtw_arg a[4];
	struct fxtw w;
	struct tdb t;
	struct dec x;
	size_t mark;

	(void)state;
	fxtw_init(&w, 0);
	good_head(&w);
	/* writer: unknown type 11 is a header and an inline name only */
	a[0] = fxtw_arg_i32(FXTW_INL("first"), -1);
	memset(&a[1], 0, sizeof(a[1]));
	a[1].type = 11;
	a[1].name = FXTW_INL("unknown name");
	a[2] = fxtw_arg_i32(FXTW_INL("last"), -2);
	fxtw_instant(&w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_INL("w"), 1, a, 3);
	/* by hand: unknown type 13 carrying two payload words */
	mark = fxtw_mark(&w);
	fxtw_word(&w, 4 | F(7, 4) | F(0, 16) | F(2, 20) | F(1, 24) | F(1, 32) | F(2, 48));
	fxtw_word(&w, 2);
	fxtw_word(&w, 13 | F(3, 4) | F(3, 16) | F(0xdeadbeef, 32));
	fxtw_word(&w, UINT64_MAX);
	fxtw_word(&w, UINT64_MAX);
	fxtw_word(&w, 1 | F(1, 4) | F(3, 16) | F(0xfffffff9, 32)); /* i32 -7 */
	fxtw_word(&w, 1 | F(1, 4) | F(3, 16));                     /* record ends one word past: ignored */
	assert_int_equal(fxtw_mark(&w) - mark, 7 * 8);
	good_instant(&w, 3);

	dec_w(&x, &w);
	assert_int_equal(x.m.events.len, 3);
	assert_int_equal(x.m.diag.unknown_args, 2);
	assert_int_equal(x.m.diag.malformed_records, 0);
	assert_int_equal(ev_at(&x, 0)->nargs, 2);
	assert_string_equal(str_of(&x, arg_at(&x, 0)->key), "first");
	assert_string_equal(str_of(&x, arg_at(&x, 1)->key), "last");
	assert_int_equal(arg_at(&x, 1)->v.i, -2);
	assert_int_equal(ev_at(&x, 1)->nargs, 1);
	assert_int_equal(ev_at(&x, 1)->ts, 2);
	assert_int_equal(arg_at(&x, 2)->v.i, -7);
	assert_int_equal(ev_at(&x, 2)->ts, 3);
	assert_int_equal(arg_at(&x, 3)->v.u, 3);
	dec_done(&x);

	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(tdb_diag(&t, "unknown_args"), 2);
	assert_string_equal(tdb_rows(&t, "SELECT s.ts, a.seq, a.key, a.value FROM slice_view s JOIN arg_view a "
					 "ON a.arg_set_id = s.arg_set_id ORDER BY s.ts, a.seq"),
			    "1|0|first|-1\n1|1|last|-2\n2|0|key|-7\n3|0|key|3");
	tdb_close(&t);
	fxtw_fini(&w);
}

/* An instant with the trailing scope word real writers emit. */
static void test_instant_scope_word(void **state)
{
	uint64_t scope[2] = { 2, 9 };
	struct fxtw_arg a1 = fxtw_arg_u32(FXTW_IDX(3), 1), a2 = fxtw_arg_u32(FXTW_IDX(3), 2);
	struct fxtw w;
	struct dec x;

	(void)state;
	fxtw_init(&w, 0);
	good_head(&w);
	fxtw_event(&w, 0, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(2), 1, &a1, 1, scope, 1);
	fxtw_event(&w, 0, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(2), 2, &a2, 1, scope, 2);
	good_instant(&w, 3);
	dec_w(&x, &w);
	assert_good_instants(&x, 3);
	assert_int_equal(ev_at(&x, 0)->extra, 0);
	assert_int_equal(x.m.diag.malformed_records, 0);
	dec_done(&x);
	fxtw_fini(&w);
}

/* ---- malformed records ----------------------------------------------------- */

/* One record too small for its fields (or otherwise invalid), by hand. */
struct bad {
	const char *what;
	uint64_t w[6];
	unsigned n; /* words; the header's size field matches n */
};

static void test_malformed(void **state)
{
	static const struct bad bad[] = {
		{ "event, inline thread, size 2", { 4 | F(2, 4) | F(1, 32) | F(2, 48), 1 }, 2 },
		{ "event, one argument missing", { 4 | F(2, 4) | F(1, 20) | F(1, 24) | F(1, 32) | F(2, 48), 1 }, 2 },
		{ "event, argument of size 0", { 4 | F(3, 4) | F(1, 20) | F(1, 24) | F(1, 32) | F(2, 48), 1,
						 1 | F(0, 4) | F(3, 16) }, 3 },
		{ "event, argument past the record",
		  { 4 | F(3, 4) | F(1, 20) | F(1, 24) | F(1, 32) | F(2, 48), 1, 3 | F(2, 4) | F(3, 16) }, 3 },
		{ "event, inline category past the record", { 4 | F(3, 4) | F(1, 24) | F(0x801e, 32) | F(2, 48), 1, 0 }, 3 },
		{ "event, counter id missing", { 4 | F(2, 4) | F(1, 16) | F(1, 24) | F(1, 32) | F(2, 48), 1 }, 2 },
		{ "event, string argument value past the record",
		  { 4 | F(3, 4) | F(1, 20) | F(1, 24) | F(1, 32) | F(2, 48), 1, 6 | F(1, 4) | F(3, 16) | F(0x8010, 32) },
		  3 },
		{ "event, blob argument larger than its size",
		  { 4 | F(4, 4) | F(1, 20) | F(1, 24) | F(1, 32) | F(2, 48), 1, 10 | F(2, 4) | F(3, 16) | F(9, 32), 0 },
		  4 },
		{ "initialization, size 1", { 1 | F(1, 4) }, 1 },
		{ "initialization, 0 ticks per second", { 1 | F(2, 4), 0 }, 2 },
		{ "string, longer than the record", { 2 | F(2, 4) | F(5, 16) | F(20, 32), 0 }, 2 },
		{ "thread, size 2", { 3 | F(2, 4) | F(5, 16), 1 }, 2 },
		{ "provider info, name past the record", { 0 | F(2, 4) | F(1, 16) | F(1, 20) | F(30, 52), 0 }, 2 },
		{ "trace info, wrong magic", { 0 | F(1, 4) | F(4, 16) | F(0x16547847, 24) }, 1 },
		{ "blob, payload past the record", { 5 | F(2, 4) | F(1, 16) | F(100, 32) | F(1, 48), 0 }, 2 },
		{ "userspace object, no pointer", { 6 | F(1, 4) | F(1, 24) }, 1 },
		{ "userspace object, no pid word", { 6 | F(2, 4) | F(1, 24), 5 }, 2 },
		{ "kernel object, no koid", { 7 | F(1, 4) | F(1, 16) | F(1, 24) }, 1 },
		{ "kernel object, argument missing", { 7 | F(2, 4) | F(1, 16) | F(1, 24) | F(1, 40), 5 }, 2 },
		{ "context switch, size 3", { 8 | F(3, 4) | F(1, 60), 1, 2 }, 3 },
		{ "wakeup, size 2", { 8 | F(2, 4) | F(2, 60), 1 }, 2 },
		{ "legacy switch, inline threads, size 3", { 8 | F(3, 4), 1, 2 }, 3 },
		{ "log, message past the record", { 9 | F(3, 4) | F(50, 16) | F(1, 32), 1, 0 }, 3 },
		{ "log, inline thread missing", { 9 | F(2, 4), 1 }, 2 },
		{ "profiler module, name past the record", { 10 | F(2, 4) | F(0, 16) | F(1, 20) | F(40, 44), 1 }, 2 },
		{ "profiler mmap, size 4", { 10 | F(4, 4) | F(1, 16) | F(1, 20), 1, 2, 3 }, 4 },
		{ "profiler backtrace, frames past the record", { 10 | F(3, 4) | F(2, 16) | F(1, 20) | F(5, 28), 1, 2 }, 3 },
		{ "large blob, size word too large", { 15 | F(3, 4) | F(1, 40), 1 | F(2, 16), 100 }, 3 },
		{ "large blob with metadata, no timestamp", { 15 | F(2, 4), 1 | F(2, 16) | F(1, 36) }, 2 },
		{ "large blob, size word missing", { 15 | F(2, 4) | F(1, 40), 1 | F(2, 16) }, 2 },
	};
	size_t n = sizeof(bad) / sizeof(bad[0]), i, k;
	struct fxtw w;
	struct dec x, one;

	(void)state;
	fxtw_init(&w, 0);
	good_head(&w);
	for (i = 0; i < n; i++) {
		assert_int_equal(rd_bits(bad[i].w[0], 4, (bad[i].w[0] & 0xf) == 15 ? 35 : 15), bad[i].n);
		for (k = 0; k < bad[i].n; k++)
			fxtw_word(&w, bad[i].w[k]);
		good_instant(&w, i + 1);
	}
	dec_w(&x, &w);
	assert_good_instants(&x, n);
	assert_int_equal(x.m.diag.malformed_records, n);
	assert_int_equal(x.m.diag.unknown_records, 0);
	assert_int_equal(x.m.bytes.len, 0);
	assert_int_equal(x.m.blobs.len + x.m.logs.len + x.m.sched.len + x.m.profs.len + x.m.kobjs.len + x.m.uobjs.len, 0);
	dec_done(&x);

	/* each alone, so that a miscount cannot hide behind another */
	for (i = 0; i < n; i++) {
		fxtw_fini(&w);
		fxtw_init(&w, 0);
		good_head(&w);
		for (k = 0; k < bad[i].n; k++)
			fxtw_word(&w, bad[i].w[k]);
		good_instant(&w, 1);
		dec_w(&one, &w);
		if (one.m.diag.malformed_records != 1 || one.m.events.len != 1)
			fail_msg("%s: malformed %" PRIu64 ", events %zu", bad[i].what, one.m.diag.malformed_records,
				 one.m.events.len);
		assert_good_instants(&one, 1);
		dec_done(&one);
	}
	fxtw_fini(&w);
}

/* A record dropped as malformed leaves no partial output behind. */
static void test_malformed_rollback(void **state)
{
	struct fxtw_arg a[3];
	struct fxtw w;
	struct tdb t;
	struct dec x;

	(void)state;
	fxtw_init(&w, 0);
	good_head(&w);
	a[0] = fxtw_arg_blob(FXTW_INL("b"), "0123456789", 10);
	a[1] = fxtw_arg_str(FXTW_INL("s"), FXTW_INL("kept?"));
	a[2] = fxtw_arg_i32(FXTW_INL("z"), 1);
	fxtw_instant(&w, FXTW_TIDX(1), FXTW_IDX(1), FXTW_IDX(2), 1, a, 3);
	/* the third argument's header (before its one-word inline name): size 0 */
	assert_int_equal(fxtw_peek_word(&w, w.len - 16), 1 | F(2, 4) | F(0x8001, 16) | F(1, 32));
	fxtw_patch_word(&w, w.len - 16, fxtw_peek_word(&w, w.len - 16) & ~F(0xfff, 4));
	good_instant(&w, 1);
	dec_w(&x, &w);
	assert_good_instants(&x, 1);
	assert_int_equal(x.m.bytes.len, 0);
	assert_int_equal(x.m.seq, 1);
	assert_int_equal(x.m.diag.malformed_records, 1);
	dec_done(&x);

	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(tdb_diag(&t, "malformed_records"), 1);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices"), 1);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM args"), 1);
	tdb_close(&t);
	fxtw_fini(&w);
}

/* ---- byte order -------------------------------------------------------------- */

/* Every table; all but flows, track_depths and sched must have rows here. */
static const char *const table_sql[] = {
	"SELECT * FROM meta ORDER BY key",
	"SELECT * FROM strings ORDER BY id",
	"SELECT * FROM providers ORDER BY id",
	"SELECT * FROM processes ORDER BY pid",
	"SELECT * FROM threads ORDER BY id",
	"SELECT * FROM tracks ORDER BY id",
	"SELECT * FROM track_depths ORDER BY track_id, depth",
	"SELECT * FROM extents ORDER BY track_id, depth, first_ord",
	"SELECT * FROM slices ORDER BY id",
	"SELECT arg_set_id, seq, key_id, type, quote(int_value), quote(real_value), quote(string_id), "
	"quote(blob_value) FROM args ORDER BY arg_set_id, seq",
	"SELECT id, track_id, ts, quote(value) FROM counters ORDER BY id",
	"SELECT * FROM flows ORDER BY id",
	"SELECT * FROM sched ORDER BY id",
	"SELECT * FROM logs ORDER BY id",
	"SELECT id, kind, blob_type, ts, thread_id, category_id, name_id, arg_set_id, size, quote(data) "
	"FROM blobs ORDER BY id",
	"SELECT * FROM kernel_objects ORDER BY koid",
	"SELECT * FROM userspace_objects ORDER BY id",
	"SELECT id, kind, ts, thread_id, module_id, name, quote(build_id), flags, start_address, address_range, "
	"vaddr, quote(frames) FROM profiler ORDER BY id",
	"SELECT * FROM diagnostics ORDER BY name",
};

static void test_big_endian(void **state)
{
	struct fxtw le, be;
	struct mixed mx;
	struct dec xl, xb;
	struct tdb tl, tb;
	const char *why;
	size_t i;

	(void)state;
	fxtw_init(&le, 0);
	fxtw_init(&be, 1);
	build_mixed(&le, &mx);
	build_mixed(&be, &mx);
	assert_int_equal(le.len, be.len);
	assert_memory_not_equal(le.buf, be.buf, le.len);
	dec_w(&xl, &le);
	dec_w(&xb, &be);
	assert_int_equal(xl.d.big_endian, 0);
	assert_int_equal(xb.d.big_endian, 1);
	assert_int_equal(xb.m.events.len, MIXED_EVENTS);
	why = model_diff(&xl.m, &xb.m, 0);
	if (why)
		fail_msg("big-endian model differs in %s", why);
	dec_done(&xl);
	dec_done(&xb);

	tdb_ingest(&tl, &le);
	tdb_ingest(&tb, &be);
	assert_int_equal(tl.rc, INGEST_OK);
	assert_int_equal(tb.rc, INGEST_OK);
	for (i = 0; i < sizeof(table_sql) / sizeof(table_sql[0]); i++) {
		char *a = strdup(tdb_rows(&tl, "%s", table_sql[i]));

		assert_non_null(a);
		if (a[0] == '\0' && !strstr(table_sql[i], "track_depths") && !strstr(table_sql[i], "flows") &&
		    !strstr(table_sql[i], "sched"))
			fail_msg("no rows: %s", table_sql[i]);
		assert_string_equal(a, tdb_rows(&tb, "%s", table_sql[i]));
		free(a);
	}
	assert_int_equal(tdb_int(&tb, "SELECT count(*) FROM slices"), tdb_int(&tl, "SELECT count(*) FROM slices"));
	assert_true(tdb_int(&tb, "SELECT count(*) FROM slices") >= 8);
	tdb_close(&tl);
	tdb_close(&tb);
	fxtw_fini(&le);
	fxtw_fini(&be);
}

/* ---- chunked input ----------------------------------------------------------- */

static void test_chunked(void **state)
{
	static const size_t odd[] = { 65, 97, 127, 128, 255, 1000, 4093 };
	size_t sizes[64 + 7 + 2], nsizes = 0, c, i;
	struct fxtw w;
	struct mixed mx;
	struct dec whole, x;
	const char *why;

	(void)state;
	fxtw_init(&w, 0);
	build_mixed(&w, &mx);
	dec_w(&whole, &w);
	for (c = 1; c <= 64; c++)
		sizes[nsizes++] = c;
	for (c = 0; c < 7; c++)
		sizes[nsizes++] = odd[c];
	sizes[nsizes++] = w.len - 1;
	sizes[nsizes++] = w.len;
	for (c = 0; c < nsizes; c++) {
		size_t chunk = sizes[c];

		dec_run(&x, w.buf, w.len, chunk);
		assert_int_equal(x.rc, INGEST_OK);
		why = model_diff(&whole.m, &x.m, 0);
		if (why)
			fail_msg("chunks of %zu bytes: %s differ", chunk, why);
		assert_int_equal(x.m.events.len, MIXED_EVENTS);
		assert_int_equal(x.d.st.bytes, w.len);
		for (i = 0; i < 16; i++)
			assert_int_equal(x.d.st.records[i], whole.d.st.records[i]);
		dec_done(&x);
	}

	/* empty chunks in between change nothing */
	assert_int_equal(model_init(&x.m), 0);
	fxt_init(&x.d, &x.m);
	for (i = 0; i < w.len; i += 5) {
		assert_int_equal(fxt_feed(&x.d, w.buf + i, 0), INGEST_OK);
		assert_int_equal(fxt_feed(&x.d, w.buf + i, w.len - i < 5 ? w.len - i : 5), INGEST_OK);
	}
	assert_int_equal(fxt_finish(&x.d), INGEST_OK);
	fxt_fini(&x.d);
	why = model_diff(&whole.m, &x.m, 0);
	if (why)
		fail_msg("with empty chunks: %s differ", why);
	dec_done(&x);
	dec_done(&whole);
	fxtw_fini(&w);
}

/* ---- truncation at every byte ------------------------------------------------ */

static void test_truncation_sweep(void **state)
{
	struct fxtw w;
	struct mixed mx;
	struct dec cut_x, cut7, whole_x;
	const char *why;
	size_t cut, k, whole;

	(void)state;
	fxtw_init(&w, 0);
	build_mixed(&w, &mx);
	assert_true(mx.n >= 40);
	for (cut = 0; cut <= w.len; cut++) {
		for (k = 0; k < mx.n && mx.end[k] <= cut; k++)
			;
		whole = k ? mx.end[k - 1] : 0;
		dec_run(&cut_x, w.buf, cut, 0);
		dec_run(&cut7, w.buf, cut, 7);
		if (cut == 0) {
			assert_int_equal(cut_x.rc, INGEST_EEMPTY);
			assert_int_equal(cut7.rc, INGEST_EEMPTY);
		} else if (cut < 8) {
			assert_int_equal(cut_x.rc, INGEST_ENOTTRACE);
			assert_int_equal(cut7.rc, INGEST_ENOTTRACE);
		} else {
			if (cut_x.rc != INGEST_OK || cut7.rc != INGEST_OK)
				fail_msg("cut %zu: status %d / %d", cut, cut_x.rc, cut7.rc);
			if (cut_x.m.events.len != (k ? mx.nev[k - 1] : 0))
				fail_msg("cut %zu: %zu events, want %u", cut, cut_x.m.events.len, k ? mx.nev[k - 1] : 0);
			if (cut_x.m.diag.truncated_bytes != cut - whole || cut7.m.diag.truncated_bytes != cut - whole)
				fail_msg("cut %zu: truncated %" PRIu64 " / %" PRIu64 ", want %zu", cut,
					 cut_x.m.diag.truncated_bytes, cut7.m.diag.truncated_bytes, cut - whole);
			/* exactly what the whole records alone decode to */
			dec_run(&whole_x, w.buf, whole, 0);
			assert_int_equal(whole_x.rc, INGEST_OK);
			assert_int_equal(whole_x.m.diag.truncated_bytes, 0);
			if ((why = model_diff(&whole_x.m, &cut_x.m, 1)) != NULL ||
			    (why = model_diff(&whole_x.m, &cut7.m, 1)) != NULL)
				fail_msg("cut %zu: %s differ from the %zu whole records", cut, why, k);
			dec_done(&whole_x);
		}
		dec_done(&cut_x);
		dec_done(&cut7);
	}
	fxtw_fini(&w);
}

/* The same through ingest_file, at every record boundary and inside each record. */
static void test_truncation_db(void **state)
{
	struct fxtw w;
	struct mixed mx;
	struct tdb t;
	size_t r, j, cut, k, whole;

	(void)state;
	fxtw_init(&w, 0);
	build_mixed(&w, &mx);
	for (r = 0; r < mx.n; r++) {
		for (j = 0; j < 2; j++) {
			cut = mx.end[r] + j * 11;
			if (cut > w.len)
				continue;
			for (k = 0; k < mx.n && mx.end[k] <= cut; k++)
				;
			whole = k ? mx.end[k - 1] : 0;
			tdb_ingest_bytes(&t, w.buf, cut);
			if (t.rc != INGEST_OK)
				fail_msg("cut %zu: %s", cut, t.res.error);
			assert_int_equal(t.res.counts.events, k ? mx.nev[k - 1] : 0);
			assert_int_equal(tdb_diag(&t, "truncated_bytes"), (int64_t)(cut - whole));
			assert_int_equal(tdb_int(&t, "SELECT value FROM meta WHERE key = 'events'"),
					 k ? mx.nev[k - 1] : 0);
			tdb_close(&t);
		}
	}
	fxtw_fini(&w);
}

/* ---- end of data: zero-size records and sizes past the end -------------------- */

static void test_zero_size_record(void **state)
{
	static const uint64_t zero[] = { 0, 4, 4 | F(1, 32), 15 };
	struct fxtw w;
	struct dec x, xc;
	size_t i, z;

	(void)state;
	for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
		fxtw_init(&w, 0);
		good_head(&w);
		good_instant(&w, 1);
		good_instant(&w, 2);
		z = fxtw_mark(&w);
		fxtw_word(&w, zero[i]);
		good_instant(&w, 3);
		fxtw_word(&w, 0);
		good_instant(&w, 4);
		dec_w(&x, &w);
		dec_run(&xc, w.buf, w.len, 3);
		assert_int_equal(xc.rc, INGEST_OK);
		assert_good_instants(&x, 2);
		assert_good_instants(&xc, 2);
		assert_int_equal(x.m.diag.truncated_bytes, w.len - z);
		assert_int_equal(xc.m.diag.truncated_bytes, w.len - z);
		assert_int_equal(x.m.diag.malformed_records, 0);
		assert_true(x.d.ended);
		dec_done(&x);
		dec_done(&xc);
		fxtw_fini(&w);
	}
}

static void test_size_past_end(void **state)
{
	struct fxtw w;
	struct dec x, xc;
	struct tdb t;
	size_t z;

	(void)state;
	/* a record in the middle claims 0xfff words: it swallows the rest */
	fxtw_init(&w, 0);
	good_head(&w);
	good_instant(&w, 1);
	z = fxtw_mark(&w);
	good_instant(&w, 99);
	fxtw_patch_word(&w, z, fxtw_peek_word(&w, z) | F(0xfff, 4));
	good_instant(&w, 2);
	good_instant(&w, 3);
	dec_w(&x, &w);
	dec_run(&xc, w.buf, w.len, 13);
	assert_int_equal(xc.rc, INGEST_OK);
	assert_good_instants(&x, 1);
	assert_good_instants(&xc, 1);
	assert_int_equal(x.m.diag.truncated_bytes, w.len - z);
	assert_int_equal(xc.m.diag.truncated_bytes, w.len - z);
	dec_done(&x);
	dec_done(&xc);

	tdb_ingest(&t, &w);
	assert_int_equal(t.rc, INGEST_OK);
	assert_int_equal(tdb_diag(&t, "truncated_bytes"), (int64_t)(w.len - z));
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slices"), 1);
	tdb_close(&t);
	fxtw_fini(&w);

	/* the last record is one word short */
	fxtw_init(&w, 0);
	good_head(&w);
	good_instant(&w, 1);
	z = fxtw_mark(&w);
	good_instant(&w, 2);
	dec_run(&x, w.buf, w.len - 8, 0);
	assert_int_equal(x.rc, INGEST_OK);
	assert_good_instants(&x, 1);
	assert_int_equal(x.m.diag.truncated_bytes, w.len - 8 - z);
	dec_done(&x);
	fxtw_fini(&w);
}

/* ---- not a trace, empty ------------------------------------------------------ */

static void assert_rejected(const void *p, size_t n, int want)
{
	char tmp[80];
	struct tdb t;

	tdb_ingest_bytes(&t, p, n);
	assert_int_equal(t.rc, want);
	assert_true(t.res.error[0] != '\0');
	assert_null(t.db);
	assert_int_not_equal(access(t.path, F_OK), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", t.path);
	assert_int_not_equal(access(tmp, F_OK), 0);
	tdb_close(&t);
}

static void test_not_a_trace(void **state)
{
	static const char text[] = "hello, this is plain text and certainly not a trace\n";
	static const uint8_t png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
				       0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0, 0x90, 0x77, 0x53, 0xde };
	struct fxtw w;
	struct dec x;

	(void)state;
	assert_rejected(text, sizeof(text) - 1, INGEST_ENOTTRACE);
	assert_rejected(png, sizeof(png), INGEST_ENOTTRACE);
	assert_rejected(png, 5, INGEST_ENOTTRACE); /* shorter than one word */
	assert_rejected("", 0, INGEST_EEMPTY);
	assert_false(fxt_detect((const uint8_t *)text, sizeof(text) - 1));
	assert_false(fxt_detect(png, sizeof(png)));

	/* a valid record that is neither the magic nor a provider info */
	fxtw_init(&w, 0);
	good_instant(&w, 1);
	fxtw_magic(&w);
	assert_rejected(w.buf, w.len, INGEST_ENOTTRACE);
	dec_run(&x, w.buf, w.len, 3);
	assert_int_equal(x.rc, INGEST_ENOTTRACE);
	assert_int_equal(x.m.events.len, 0);
	dec_done(&x);
	fxtw_fini(&w);
}

/* ---- oversized records ------------------------------------------------------- */

/* Feeds `total` zero bytes through fxt_feed without allocating them. */
static void feed_zeros(struct fxt_decoder *d, uint64_t total)
{
	static const uint8_t zeros[1 << 20];
	size_t k;

	while (total > 0) {
		k = total < sizeof(zeros) ? (size_t)total : sizeof(zeros);
		assert_int_equal(fxt_feed(d, zeros, k), INGEST_OK);
		total -= k;
	}
}

static void test_oversized(void **state)
{
	const uint64_t words = UINT64_C(1) << 31;
	uint8_t hdr[8];
	struct fxtw w, tail;
	struct dec x;
	size_t split;
	int i;

	(void)state;
	fxtw_init(&w, 0);
	good_head(&w);
	fxtw_init(&tail, 0);
	good_instant(&tail, 1);
	for (i = 0; i < 8; i++)
		hdr[i] = (uint8_t)((15 | words << 4 | F(1, 40)) >> (8 * i));

	/* the whole 16 GiB record is present: skipped, counted, the next decodes */
	for (split = 0; split < 8; split += 3) {
		assert_int_equal(model_init(&x.m), 0);
		fxt_init(&x.d, &x.m);
		assert_int_equal(fxt_feed(&x.d, w.buf, w.len), INGEST_OK);
		assert_int_equal(fxt_feed(&x.d, hdr, split), INGEST_OK); /* header split across feeds */
		assert_int_equal(fxt_feed(&x.d, hdr + split, 8 - split), INGEST_OK);
		feed_zeros(&x.d, words * 8 - 8);
		assert_int_equal(fxt_feed(&x.d, tail.buf, tail.len), INGEST_OK);
		assert_int_equal(fxt_finish(&x.d), INGEST_OK);
		assert_good_instants(&x, 1);
		assert_int_equal(x.m.diag.oversized_records, 1);
		assert_int_equal(x.m.diag.truncated_bytes, 0);
		assert_int_equal(x.d.st.bytes, w.len + words * 8 + tail.len);
		assert_true(x.d.carry_cap <= 4096);
		assert_true(x.m.bytes.cap <= 4096);
		fxt_fini(&x.d);
		dec_done(&x);
	}

	/* cut short: the record runs past the end, so it is a truncation */
	fxtw_bytes(&w, hdr, 8);
	fxtw_bytes(&w, tail.buf, tail.len); /* inside the oversized record: not decoded */
	{
		struct tdb t;

		tdb_ingest(&t, &w);
		assert_int_equal(t.rc, INGEST_OK);
		assert_int_equal(t.res.counts.events, 0);
		assert_int_equal(tdb_diag(&t, "truncated_bytes"), (int64_t)(8 + tail.len));
		assert_int_equal(tdb_diag(&t, "oversized_records"), 0);
		tdb_close(&t);
	}
	dec_run(&x, w.buf, w.len, 5);
	assert_int_equal(x.rc, INGEST_OK);
	assert_int_equal(x.m.events.len, 0);
	assert_int_equal(x.m.diag.truncated_bytes, 8 + tail.len);
	dec_done(&x);
	fxtw_fini(&tail);
	fxtw_fini(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixed_model),
		cmocka_unit_test(test_mixed_db),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_headerless),
		cmocka_unit_test(test_headerless_init),
		cmocka_unit_test(test_forced_format),
		cmocka_unit_test(test_initialization),
		cmocka_unit_test(test_complete_end_ticks),
		cmocka_unit_test(test_string_thread),
		cmocka_unit_test(test_event_types),
		cmocka_unit_test(test_arg_types),
		cmocka_unit_test(test_unknown_types),
		cmocka_unit_test(test_unknown_args),
		cmocka_unit_test(test_instant_scope_word),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_malformed_rollback),
		cmocka_unit_test(test_big_endian),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_truncation_sweep),
		cmocka_unit_test(test_truncation_db),
		cmocka_unit_test(test_zero_size_record),
		cmocka_unit_test(test_size_past_end),
		cmocka_unit_test(test_not_a_trace),
		cmocka_unit_test(test_oversized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
