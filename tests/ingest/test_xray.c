/*
 * Unit tests for the XRay FDR decoder (ingest/xray.c) and the function-name
 * tables (ingest/symbols.c), at the model level: logs written record by
 * record with tests/xray_writer.c are decoded through xray_create / feed /
 * finish into a struct model, which is rendered as text (one line per
 * event, see render()) and compared with what the log must mean.
 *
 * Build (from the repository root):
 *   cc -std=c11 -D_GNU_SOURCE -Wall -Wextra ... tests/test_xray.c
 *      tests/xray_writer.c ingest/xray.c ingest/symbols.c ingest/model.c ingest/util.c
 *      -lcmocka -lstdc++ -o /tmp/test_xray
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../ingest/ingest.h"
#include "../../ingest/symbols.h"
#include "../../ingest/xray.h"
#include "../xray_writer.h"

enum { FREQ = 2000000000u }; /* 2 GHz: ns = ticks / 2 */

/* ---- decoding and rendering ------------------------------------------ */

/* Decodes n bytes fed in chunks of chunk bytes (0: one call). Returns the
 * first error of xray_feed, else xray_finish's result. */
static int decode(struct model *m, const uint8_t *p, size_t n, size_t chunk)
{
	struct xray_decoder *d;
	size_t i, k;
	int rc = INGEST_OK;

	assert_int_equal(model_init(m), 0);
	d = xray_create(m);
	assert_non_null(d);
	assert_string_equal(m->format, "xray-fdr");
	for (i = 0; i < n && rc == INGEST_OK; i += k) {
		k = chunk == 0 || chunk > n - i ? n - i : chunk;
		rc = xray_feed(d, p + i, k);
	}
	if (rc == INGEST_OK)
		rc = xray_finish(d);
	xray_destroy(d);
	return rc;
}

struct text {
	char s[16384];
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->s + t->len, sizeof(t->s) - t->len, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(t->s) - t->len);
	t->len += (size_t)n;
}

static void render_args(struct text *t, const struct model *m, const struct mdl_ev *e)
{
	unsigned i, k;

	if (e->nargs == 0)
		return;
	put(t, " {");
	for (i = 0; i < e->nargs; i++) {
		const struct mdl_arg *a = VEC_AT(&m->args, struct mdl_arg, e->args + i);

		put(t, "%s%s=", i ? " " : "", model_str(m, a->key));
		if (a->type == MDL_ARG_U64) {
			put(t, "%llu", (unsigned long long)a->v.u);
		} else if (a->type == MDL_ARG_BLOB) {
			assert_true(a->v.u + a->len <= m->bytes.len);
			for (k = 0; k < a->len; k++)
				put(t, "%02x", ((const uint8_t *)m->bytes.data)[a->v.u + k]);
		} else {
			put(t, "?%u", a->type);
		}
	}
	put(t, "}");
}

/*
 * The model as text, one event per line, in file order (seq: a call's
 * event is appended when the call exits, but keeps the place of its enter):
 *   C cat name T<thread> ts end {args}    complete
 *   B cat name T<thread> ts {args}        begin (a call never exited)
 *   I cat name T<thread> ts {args}        instant
 *   N cat name T<thread> ts id=<extra> {args}  counter
 * then "threads:" with pid/tid of each thread and "diag:" with each
 * counter that is not zero.
 */
/* e as matching reads it: a call's end comes from m->ends (model.h). */
static struct mdl_ev resolved(const struct model *m, const struct mdl_ev *e)
{
	struct mdl_ev r = *e;
	int64_t end;

	if (r.kind != MDL_EV_CALL)
		return r;
	end = r.extra < m->ends.len ? *VEC_AT(&m->ends, int64_t, r.extra) : INT64_MIN;
	r.kind = end == INT64_MIN ? MDL_EV_BEGIN : MDL_EV_COMPLETE;
	r.extra = end == INT64_MIN ? 0 : (uint64_t)end;
	return r;
}

static int ev_seq_cmp(const void *a, const void *b)
{
	const struct mdl_ev *x = *(const struct mdl_ev *const *)a, *y = *(const struct mdl_ev *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *render(const struct model *m)
{
	static struct text t;
	const struct mdl_ev **order = calloc(m->events.len + 1, sizeof(*order));
	size_t i;

	assert_non_null(order);
	for (i = 0; i < m->events.len; i++)
		order[i] = VEC_AT(&m->events, struct mdl_ev, i);
	qsort(order, m->events.len, sizeof(*order), ev_seq_cmp);
	t.len = 0;
	t.s[0] = '\0';
	for (i = 0; i < m->events.len; i++) {
		struct mdl_ev ev = resolved(m, order[i]), *e = &ev;
		const char *k = e->kind == MDL_EV_COMPLETE ? "C" : e->kind == MDL_EV_BEGIN ? "B" : e->kind == MDL_EV_INSTANT ? "I" : e->kind == MDL_EV_COUNTER ? "N" : "?";
		put(&t, "%s %s %s T%u %lld", k, model_str(m, e->cat), model_str(m, e->name), e->thread, (long long)e->ts);
		if (e->kind == MDL_EV_COMPLETE)
			put(&t, " %lld", (long long)e->extra);
		if (e->kind == MDL_EV_COUNTER)
			put(&t, " id=%llu", (unsigned long long)e->extra);
		render_args(&t, m, e);
		put(&t, "\n");
	}
	free(order);
	put(&t, "threads:");
	for (i = 0; i < m->threads.len; i++)
		put(&t, " %llu/%llu", (unsigned long long)VEC_AT(&m->threads, struct mdl_thread, i)->pid,
		    (unsigned long long)VEC_AT(&m->threads, struct mdl_thread, i)->tid);
	put(&t, "\ndiag:");
#define X(n)                                                                                                           \
	if (m->diag.n)                                                                                                 \
		put(&t, " %s=%llu", #n, (unsigned long long)m->diag.n);
	MDL_DIAG_LIST(X)
#undef X
	put(&t, "\n");
	return t.s;
}

/* Decodes w's log in one call and compares the rendered model. */
static void expect_model(const struct xrw *w, int rc, const char *want)
{
	struct model m;

	assert_int_equal(decode(&m, w->buf, w->len, 0), rc);
	if (strcmp(render(&m), want) != 0)
		fprintf(stderr, "got:\n%swant:\n%s", render(&m), want);
	assert_string_equal(render(&m), want);
	model_fini(&m);
}

/* ---- detection and headers ---------------------------------------------- */

static void test_detect(void **state)
{
	struct xrw w;
	uint16_t v;

	(void)state;
	for (v = 0; v <= 6; v++) {
		xrw_init(&w, v, 4096);
		xrw_header(&w, FREQ);
		assert_int_equal(xray_detect(w.buf, w.len), v >= 1 && v <= 5);
		assert_int_equal(xray_detect(w.buf, w.len - 1), 0);
		xrw_buffer_begin(&w, 1, 2, 0, 0, 0, 1);
		/* the first record must be extents (v2+) or NewBuffer (v1) */
		assert_int_equal(xray_detect(w.buf, w.len), v >= 1 && v <= 5);
		w.buf[32] = v >= 2 ? 0x01 : 0x0f;
		assert_int_equal(xray_detect(w.buf, w.len), 0);
		xrw_fini(&w);
	}
	xrw_init(&w, 5, 4096);
	xrw_header_raw(&w, 5, 0, 3, FREQ, 4096); /* basic mode, not FDR */
	assert_int_equal(xray_detect(w.buf, w.len), 0);
	xrw_fini(&w);
	assert_int_equal(xray_detect((const uint8_t *)"\x10\x00\x04\x46\x78\x54\x16\x00", 8), 0);
}

static void test_not_trace(void **state)
{
	struct model m;
	struct xrw w;

	(void)state;
	assert_int_equal(decode(&m, NULL, 0, 0), INGEST_EEMPTY);
	model_fini(&m);
	xrw_init(&w, 5, 4096);
	xrw_header(&w, FREQ);
	assert_int_equal(decode(&m, w.buf, 31, 0), INGEST_ENOTTRACE);
	model_fini(&m);
	assert_int_equal(decode(&m, w.buf, 32, 5), INGEST_OK); /* a header and no buffer */
	assert_int_equal(m.events.len + m.threads.len, 0);
	model_fini(&m);
	xrw_patch8(&w, 0, 6);
	assert_int_equal(decode(&m, w.buf, w.len, 3), INGEST_ENOTTRACE);
	model_fini(&m);
	xrw_fini(&w);
}

/* ---- every version, every record ---------------------------------------- */

/* Thread 100 of process 7: f1 encloses f2. */
static void write_basic(struct xrw *w, uint16_t version)
{
	xrw_init(w, version, 512);
	xrw_header(w, FREQ);
	xrw_buffer_begin(w, 100, 7, 10, 5, 3, 1000);
	xrw_enter(w, 1, 1000);
	xrw_enter(w, 2, 1100);
	xrw_exit(w, 2, 1300);
	xrw_exit(w, 1, 2000);
	xrw_buffer_end(w);
}

static void test_basic_every_version(void **state)
{
	char want[512];
	struct xrw w;
	uint16_t v;

	(void)state;
	for (v = 1; v <= 5; v++) {
		write_basic(&w, v);
		w.junk = 0xee;
		snprintf(want, sizeof(want),
			 "N xray cpu T0 500 id=100 {cpu=3}\n"
			 "C xray fn#1 T0 500 1000\n"
			 "C xray fn#2 T0 550 650\n"
			 "threads: %u/100\n"
			 "diag:\n",
			 v >= 3 ? 7 : 0);
		expect_model(&w, INGEST_OK, want);
		xrw_fini(&w);
	}
}

/* Every record kind of the version, in one buffer. */
static void write_every_kind(struct xrw *w, uint16_t version)
{
	static const uint64_t args[2] = { 11, 22 };
	const uint64_t far = 10000 + (UINT64_C(1) << 33);

	xrw_init(w, version, 512);
	w->junk = 0xa5;
	xrw_header(w, FREQ);
	xrw_buffer_begin(w, 5, 9, 1, 2, 0, 10000);
	xrw_enter_args(w, 3, 10010, args, 2);
	xrw_custom(w, 10020, 0, "hello", 5);
	xrw_new_cpu(w, 1, 10030);
	xrw_typed(w, 10040, 42, "xy", 2);
	xrw_enter(w, 4, 10050);
	xrw_tail_exit(w, 4, 10060);
	xrw_enter(w, 5, far); /* a TSCWrap first: the delta needs 34 bits */
	xrw_exit(w, 5, far + 100);
	xrw_exit(w, 3, far + 200);
	xrw_buffer_end(w);
}

static void test_every_kind_every_version(void **state)
{
	char want[1024];
	struct xrw w;
	uint16_t v;

	(void)state;
	for (v = 1; v <= 5; v++) {
		write_every_kind(&w, v);
		snprintf(want, sizeof(want),
			 "N xray cpu T0 5000 id=5 {cpu=0}\n"
			 "C xray fn#3 T0 5005 4294972396 {arg0=11 arg1=22}\n"
			 "I xray custom-event T0 5010 {size=5 payload=68656c6c6f}\n"
			 "N xray cpu T0 5015 id=5 {cpu=1}\n"
			 "I xray typed-event T0 5020 {size=2 type=42 payload=7879}\n"
			 "C xray fn#4 T0 5025 5030\n"
			 "C xray fn#5 T0 4294972296 4294972346\n"
			 "threads: %u/5\n"
			 "diag:\n",
			 v >= 3 ? 9 : 0);
		expect_model(&w, INGEST_OK, want);
		xrw_fini(&w);
	}
}

/* v1: EndOfBuffer and filler of any length, then the next fixed buffer;
 * a buffer whose records fill it to its end needs no EndOfBuffer. */
static void test_v1_framing(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 1, 83); /* odd size: the filler breaks every alignment */
	w.junk = 0xff;
	xrw_header(&w, FREQ);
	xrw_buffer_begin(&w, 1, 0, 0, 0, 0, 100);
	xrw_buffer_end(&w); /* 48 bytes, EndOfBuffer, 19 bytes of filler */
	xrw_buffer_open(&w);
	xrw_new_buffer(&w, 1);
	xrw_walltime(&w, 0, 0);
	xrw_new_cpu(&w, 0, 200);
	xrw_enter(&w, 1, 210);
	xrw_exit(&w, 1, 220);
	xrw_custom(&w, 230, 0, "abc", 3); /* 48 + 16 + 19 = 83: full */
	w.open = SIZE_MAX;
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 50 id=1 {cpu=0}\n"
		     "N xray cpu T0 100 id=1 {cpu=0}\n"
		     "C xray fn#1 T0 105 110\n"
		     "I xray custom-event T0 115 {size=3 payload=616263}\n"
		     "threads: 0/1\n"
		     "diag:\n");
	xrw_fini(&w);
}

static void test_v1_bad_buffer_size(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 1, 8);
	xrw_header(&w, FREQ);
	xrw_new_buffer(&w, 1);
	expect_model(&w, INGEST_OK, "threads:\ndiag: malformed_records=1\n");
	xrw_fini(&w);
}

/* An EndOfBuffer in a v2+ buffer ends its records; an empty extents is a
 * buffer with nothing in it. */
static void test_v5_end_of_buffer_and_empty(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, FREQ);
	xrw_extents(&w, 0);
	xrw_buffer_begin(&w, 1, 2, 0, 0, 0, 100);
	xrw_enter(&w, 1, 110);
	xrw_end_of_buffer(&w);
	xrw_bytes(&w, "garbage!", 8);
	xrw_buffer_end(&w);
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 50 id=1 {cpu=0}\n"
		     "B xray fn#1 T0 55\n"
		     "threads: 2/1\n"
		     "diag:\n");
	xrw_fini(&w);
}

/* ---- time --------------------------------------------------------------- */

static void test_frequency_zero(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, 0);
	xrw_buffer_begin(&w, 1, 2, 0, 0, 0, 1000);
	xrw_enter(&w, 1, 1001);
	xrw_exit(&w, 1, 1003);
	xrw_buffer_end(&w);
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 1000 id=1 {cpu=0}\n"
		     "C xray fn#1 T0 1001 1003\n"
		     "threads: 2/1\n"
		     "diag: malformed_records=1\n");
	xrw_fini(&w);
}

/* ns = ticks * 1e9 / frequency, exact for 64-bit ticks; past INT64_MAX ns
 * the time is clamped and counted. */
static void test_frequency_exact(void **state)
{
	const uint64_t freq = 2399987654u, tsc = UINT64_C(0xFFFFFFFFFFFF0000);
	unsigned __int128 ns = (unsigned __int128)tsc * 1000000000u / freq;
	struct model m;
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, freq);
	xrw_buffer_begin(&w, 1, 2, 0, 0, 0, tsc);
	xrw_enter(&w, 1, tsc + 7);
	xrw_buffer_end(&w);
	assert_int_equal(decode(&m, w.buf, w.len, 0), INGEST_OK);
	assert_int_equal(m.events.len, 2);
	assert_int_equal(VEC_AT(&m.events, struct mdl_ev, 0)->ts, (int64_t)ns);
	assert_int_equal(VEC_AT(&m.events, struct mdl_ev, 1)->ts,
			 (int64_t)((unsigned __int128)(tsc + 7) * 1000000000u / freq));
	assert_int_equal(m.diag.timestamp_overflows, 0);
	model_fini(&m);
	xrw_fini(&w);

	xrw_init(&w, 5, 4096);
	xrw_header(&w, 1000000); /* 1 MHz: 1e16 ticks are 1e19 ns */
	xrw_buffer_begin(&w, 1, 2, 0, 0, 0, UINT64_C(10000000000000000));
	xrw_buffer_end(&w);
	assert_int_equal(decode(&m, w.buf, w.len, 0), INGEST_OK);
	assert_int_equal(VEC_AT(&m.events, struct mdl_ev, 0)->ts, INT64_MAX);
	assert_int_equal(m.diag.timestamp_overflows, 1);
	model_fini(&m);
	xrw_fini(&w);
}

/* ---- stacks ---------------------------------------------------------------- */

/* A thread whose first buffer begins mid-stack: exits without entries. */
static void test_mid_stack_start(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, FREQ);
	xrw_buffer_begin(&w, 1, 2, 0, 0, 0, 100);
	xrw_exit(&w, 6, 110);
	xrw_enter(&w, 7, 120);
	xrw_exit(&w, 7, 130);
	xrw_tail_exit(&w, 5, 140);
	xrw_buffer_end(&w);
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 50 id=1 {cpu=0}\n"
		     "C xray fn#7 T0 60 65\n"
		     "threads: 2/1\n"
		     "diag: unmatched_ends=2\n");
	xrw_fini(&w);
}

/* An exit closes its call and every call above it that never exited;
 * calls open at the end stay begins; recursion matches the innermost. */
static void test_stack_matching(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, FREQ);
	xrw_buffer_begin(&w, 1, 2, 0, 0, 0, 100);
	xrw_enter(&w, 1, 100);
	xrw_enter(&w, 2, 110);
	xrw_enter(&w, 2, 120);
	xrw_enter(&w, 3, 130);
	xrw_enter(&w, 4, 140);
	xrw_exit(&w, 2, 150); /* closes 4 and 3 (never exited) and the inner 2 */
	xrw_exit(&w, 2, 160);
	xrw_enter(&w, 5, 170);
	xrw_buffer_end(&w);
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 50 id=1 {cpu=0}\n"
		     "B xray fn#1 T0 50\n"
		     "C xray fn#2 T0 55 80\n"
		     "C xray fn#2 T0 60 75\n"
		     "C xray fn#3 T0 65 75\n"
		     "C xray fn#4 T0 70 75\n"
		     "B xray fn#5 T0 85\n"
		     "threads: 2/1\n"
		     "diag: unterminated_slices=2\n");
	xrw_fini(&w);
}

/* A CallArgument after a plain entry has no call to go to. */
static void test_orphan_argument(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, FREQ);
	xrw_buffer_begin(&w, 1, 2, 0, 0, 0, 100);
	xrw_enter(&w, 1, 100);
	xrw_call_arg(&w, 5);
	xrw_exit(&w, 1, 104);
	xrw_buffer_end(&w);
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 50 id=1 {cpu=0}\n"
		     "C xray fn#1 T0 50 52\n"
		     "threads: 2/1\n"
		     "diag: ignored_records=1\n");
	xrw_fini(&w);
}

/* ---- buffers in ring order, lost and damaged -------------------------- */

/* Buffer k of a thread: calls fn#(10 k + 1) at ticks base .. base + 10.
 * Returns the offset where the buffer began. */
static size_t write_call_buffer(struct xrw *w, uint32_t tid, unsigned k, uint64_t base)
{
	size_t at = xrw_mark(w);

	xrw_buffer_begin(w, tid, 1, 0, 0, 0, base);
	xrw_enter(w, 10 * k + 1, base);
	xrw_exit(w, 10 * k + 1, base + 10);
	xrw_buffer_end(w);
	return at;
}

/* Two threads; each thread's buffers written latest first, as the ring
 * flushes them; a call of thread 2 spans its two buffers. */
static void test_ring_order(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, FREQ);
	write_call_buffer(&w, 1, 2, 3000);
	xrw_buffer_begin(&w, 2, 1, 0, 0, 0, 2000);
	xrw_exit(&w, 9, 2100);
	xrw_buffer_end(&w);
	write_call_buffer(&w, 1, 1, 1000);
	xrw_buffer_begin(&w, 2, 1, 0, 0, 0, 1500);
	xrw_enter(&w, 9, 1500);
	xrw_buffer_end(&w);
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 500 id=1 {cpu=0}\n"
		     "C xray fn#11 T0 500 505\n"
		     "N xray cpu T0 1500 id=1 {cpu=0}\n"
		     "C xray fn#21 T0 1500 1505\n"
		     "N xray cpu T1 750 id=2 {cpu=0}\n"
		     "C xray fn#9 T1 750 1050\n"
		     "N xray cpu T1 1000 id=2 {cpu=0}\n"
		     "threads: 1/1 1/2\n"
		     "diag:\n");
	xrw_fini(&w);
}

/* A lost buffer: the calls it closed stay open, its calls' exits are
 * unmatched; nothing else changes. */
static void test_lost_buffer(void **state)
{
	struct xrw w;

	(void)state;
	xrw_init(&w, 5, 4096);
	xrw_header(&w, FREQ);
	xrw_buffer_begin(&w, 1, 1, 0, 0, 0, 100);
	xrw_enter(&w, 1, 100);
	xrw_enter(&w, 2, 110);
	xrw_buffer_end(&w);
	/* lost: exit 2, exit 1, enter 3 */
	xrw_buffer_begin(&w, 1, 1, 0, 0, 0, 300);
	xrw_exit(&w, 3, 300);
	xrw_enter(&w, 4, 310);
	xrw_exit(&w, 4, 320);
	xrw_buffer_end(&w);
	expect_model(&w,
		     INGEST_OK,
		     "N xray cpu T0 50 id=1 {cpu=0}\n"
		     "B xray fn#1 T0 50\n"
		     "B xray fn#2 T0 55\n"
		     "N xray cpu T0 150 id=1 {cpu=0}\n"
		     "C xray fn#4 T0 155 160\n"
		     "threads: 1/1\n"
		     "diag: unmatched_ends=1\n");
	xrw_fini(&w);
}

/* Three buffers; the middle one is damaged in the given way. */
static void write_damaged(struct xrw *w, int how)
{
	static const uint8_t junk[15] = { 0 };
	size_t mid;

	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
	write_call_buffer(w, 1, 1, 1000);
	mid = write_call_buffer(w, 1, 2, 2000);
	write_call_buffer(w, 1, 3, 3000);
	switch (how) {
	case 0: /* an unknown metadata kind in place of NewCPUId */
		xrw_patch8(w, mid + 16 + 48, 1 | 50 << 1);
		break;
	case 1: /* a function record of kind 5 */
		xrw_patch8(w, mid + 16 + 64, 5 << 1 | 1 << 4);
		break;
	case 2: /* extents past the header's buffer size: resynchronize */
		xrw_patch64(w, mid + 1, 5000);
		break;
	case 3: /* not an extents record at all */
		xrw_patch8(w, mid, 0x55);
		break;
	case 4: /* extents ending inside the entry: it runs past them */
		xrw_patch64(w, mid + 1, 64 + 4);
		break;
	case 5: /* a buffer that does not start with NewBuffer */
		xrw_patch8(w, mid + 16, 1 | 4 << 1);
		break;
	case 6: /* a custom event larger than its buffer */
		xrw_fini(w);
		xrw_init(w, 5, 4096);
		xrw_header(w, FREQ);
		write_call_buffer(w, 1, 1, 1000);
		xrw_buffer_begin(w, 1, 1, 0, 0, 0, 2000);
		xrw_custom(w, 2000, 0, "abc", 3);
		xrw_patch64(w, w->len - 3 - 15, 1000);
		xrw_buffer_end(w);
		write_call_buffer(w, 1, 3, 3000);
		break;
	default: /* an extents record inside a buffer */
		xrw_fini(w);
		xrw_init(w, 5, 4096);
		xrw_header(w, FREQ);
		write_call_buffer(w, 1, 1, 1000);
		xrw_buffer_begin(w, 1, 1, 0, 0, 0, 2000);
		xrw_meta(w, 7, junk);
		xrw_buffer_end(w);
		write_call_buffer(w, 1, 3, 3000);
		break;
	}
}

/* Each damage loses the middle buffer only. A short extents record costs
 * two counts: the buffer, then the framing, found again at the next one. */
static void test_damaged_buffer(void **state)
{
	char want[512];
	struct xrw w;
	int how;

	(void)state;
	for (how = 0; how <= 7; how++) {
		write_damaged(&w, how);
		snprintf(want, sizeof(want),
			 "N xray cpu T0 500 id=1 {cpu=0}\n"
			 "C xray fn#11 T0 500 505\n"
			 "N xray cpu T0 1500 id=1 {cpu=0}\n"
			 "C xray fn#31 T0 1500 1505\n"
			 "threads: 1/1\n"
			 "diag: malformed_records=%d\n",
			 how == 4 ? 2 : 1);
		expect_model(&w, INGEST_OK, want);
		xrw_fini(&w);
	}
}

/* Record ends of a small log of three buffers, two threads, calls inside
 * buffers: for each call, where its entry and exit records end. */
struct cut_log {
	struct xrw w;
	size_t buf_at[3], buf_end[3]; /* extents record, end of data */
	size_t rec_end[3][8];         /* ends of each buffer's records */
	unsigned nrec[3];
};

static void cut_record(struct cut_log *c, unsigned b)
{
	c->rec_end[b][c->nrec[b]++] = xrw_mark(&c->w);
}

static void write_cut_log(struct cut_log *c)
{
	unsigned b;

	memset(c, 0, sizeof(*c));
	xrw_init(&c->w, 5, 4096);
	xrw_header(&c->w, FREQ);
	for (b = 0; b < 3; b++) {
		c->buf_at[b] = xrw_mark(&c->w);
		xrw_buffer_open(&c->w);
		xrw_new_buffer(&c->w, 1 + b % 2);
		cut_record(c, b);
		xrw_walltime(&c->w, 1, b);
		cut_record(c, b);
		xrw_pid(&c->w, 7);
		cut_record(c, b);
		xrw_new_cpu(&c->w, 0, 1000 * (b + 1));
		cut_record(c, b); /* 3: the counter */
		xrw_enter(&c->w, b + 1, 1000 * (b + 1) + 1);
		cut_record(c, b); /* 4: the entry */
		xrw_custom(&c->w, 1000 * (b + 1) + 2, 0, "pay", 3);
		cut_record(c, b); /* 5: the instant */
		xrw_exit(&c->w, b + 1, 1000 * (b + 1) + 3);
		cut_record(c, b); /* 6: the exit */
		xrw_buffer_end(&c->w);
		c->buf_end[b] = xrw_mark(&c->w);
	}
}

/* What a log cut after n bytes must decode to. */
static void expect_cut(const struct cut_log *c, size_t n, const struct model *m)
{
	size_t want_events = 0, begins = 0, completes = 0, i, trunc = 0;
	unsigned b, r;

	for (b = 0; b < 3; b++) {
		size_t last = c->buf_at[b];

		for (r = 0; r < c->nrec[b]; r++)
			if (c->rec_end[b][r] <= n)
				last = c->rec_end[b][r];
		if (n > c->buf_at[b] && n < c->buf_end[b])
			trunc = n - last;
		want_events += (c->rec_end[b][3] <= n) + (c->rec_end[b][4] <= n) + (c->rec_end[b][5] <= n);
		completes += c->rec_end[b][6] <= n;
		begins += c->rec_end[b][4] <= n && c->rec_end[b][6] > n;
	}
	assert_int_equal(m->events.len, want_events);
	for (i = 0; i < m->events.len; i++) {
		struct mdl_ev e = resolved(m, VEC_AT(&m->events, struct mdl_ev, i));

		completes -= e.kind == MDL_EV_COMPLETE;
		begins -= e.kind == MDL_EV_BEGIN;
	}
	assert_int_equal(completes, 0);
	assert_int_equal(begins, 0);
	assert_int_equal(m->diag.truncated_bytes, trunc);
	assert_int_equal(m->diag.malformed_records + m->diag.unmatched_ends + m->diag.ignored_records, 0);
}

static void test_truncated_every_offset(void **state)
{
	struct cut_log c;
	struct model m;
	size_t n;
	int rc;

	(void)state;
	write_cut_log(&c);
	for (n = 0; n <= c.w.len; n++) {
		rc = decode(&m, c.w.buf, n, n % 7 + 1);
		assert_int_equal(rc, n == 0 ? INGEST_EEMPTY : n < 32 ? INGEST_ENOTTRACE : INGEST_OK);
		if (rc == INGEST_OK)
			expect_cut(&c, n, &m);
		model_fini(&m);
	}
	xrw_fini(&c.w);
}

/* ---- chunked feeding ------------------------------------------------------ */

static void assert_same_vec(const struct vec *a, const struct vec *b)
{
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->size, b->size);
	if (a->len > 0)
		assert_memory_equal(a->data, b->data, a->len * a->size);
}

static void assert_same_model(const struct model *a, const struct model *b)
{
	assert_same_vec(&a->events, &b->events);
	assert_same_vec(&a->args, &b->args);
	assert_same_vec(&a->bytes, &b->bytes);
	assert_same_vec(&a->threads, &b->threads);
	assert_same_vec(&a->soff, &b->soff);
	assert_int_equal(a->slen, b->slen);
	assert_memory_equal(a->sdata, b->sdata, a->slen);
	assert_memory_equal(&a->diag, &b->diag, sizeof(a->diag));
}

/* Every record kind and some damage, fed in chunks of every small size. */
static void test_chunked_equals_one_shot(void **state)
{
	static const size_t chunks[] = { 1, 2, 3, 5, 7, 8, 15, 16, 17, 33, 100, 4096 };
	struct model one, part;
	struct cut_log c;
	struct xrw w[4];
	size_t i, k;

	(void)state;
	write_every_kind(&w[0], 5);
	write_every_kind(&w[1], 1);
	write_damaged(&w[2], 2);
	write_cut_log(&c);
	w[3] = c.w;
	for (k = 0; k < 4; k++) {
		assert_int_equal(decode(&one, w[k].buf, w[k].len, 0), INGEST_OK);
		for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
			assert_int_equal(decode(&part, w[k].buf, w[k].len, chunks[i]), INGEST_OK);
			assert_same_model(&one, &part);
			model_fini(&part);
		}
		model_fini(&one);
		xrw_fini(&w[k]);
	}
}

/* ---- symbols ------------------------------------------------------------------ */

/* A minimal ELF64 shared object: xray_instr_map, .symtab, .strtab,
 * .shstrtab and .rela.dyn, then the section header table. */
struct elfb {
	uint8_t b[4096];
	size_t len;
};

static void le(uint8_t *q, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		q[i] = (uint8_t)(v >> (8 * i));
}

static size_t eb_put(struct elfb *e, const void *p, size_t n)
{
	size_t at = (e->len + 7) & ~(size_t)7;

	assert_true(at + n <= sizeof(e->b));
	memcpy(e->b + at, p, n);
	e->len = at + n;
	return at;
}

static void eb_sled(uint8_t *q, uint64_t addr, uint64_t fn, uint8_t kind, uint8_t version)
{
	memset(q, 0, 32);
	le(q, addr, 8);
	le(q + 8, fn, 8);
	q[16] = kind;
	q[18] = version;
}

static void eb_sym(uint8_t *q, uint32_t name, uint8_t info, uint64_t value, uint64_t size)
{
	memset(q, 0, 24);
	le(q, name, 4);
	q[4] = info;
	le(q + 6, 1, 2);
	le(q + 8, value, 8);
	le(q + 16, size, 8);
}

static void eb_shdr(uint8_t *q, uint32_t name, uint32_t type, uint64_t addr, uint64_t off, uint64_t size,
		    uint32_t link, uint64_t entsize)
{
	memset(q, 0, 64);
	le(q, name, 4);
	le(q + 4, type, 4);
	le(q + 16, addr, 8);
	le(q + 24, off, 8);
	le(q + 32, size, 8);
	le(q + 40, link, 4);
	le(q + 56, entsize, 8);
}

enum { MAP_ADDR = 0x4000 };

/* Sleds: f1 (0x1000) entry and exit, f2, f3 absolute (version 0), f4 from
 * a RELATIVE relocation (version 1, field 0), f1 again (a new id). */
static void build_elf(struct elfb *e, int with_map)
{
	static const char strtab[] = "\0main\0_ZN3foo3barEi\0helper\0helper_alias\0inner";
	static const char shstr[] = "\0xray_instr_map\0.symtab\0.strtab\0.shstrtab\0.rela.dyn";
	uint8_t map[6 * 32], syms[6 * 24], rela[24], sh[6 * 64], h[64] = { 0 };
	size_t o_map, o_sym, o_str, o_shs, o_rel, o_sh;

	eb_sled(map, 0x1005 - MAP_ADDR, 0x1000 - (MAP_ADDR + 8), 0, 2);
	eb_sled(map + 32, 0x1050 - (MAP_ADDR + 32), 0x1000 - (MAP_ADDR + 32 + 8), 1, 2);
	eb_sled(map + 64, 0x1105 - (MAP_ADDR + 64), 0x1100 - (MAP_ADDR + 64 + 8), 0, 2);
	eb_sled(map + 96, 0x1205, 0x1200, 0, 0);
	eb_sled(map + 128, 0x1305, 0, 0, 1);
	eb_sled(map + 160, 0x1060 - (MAP_ADDR + 160), 0x1000 - (MAP_ADDR + 160 + 8), 1, 2);
	memset(syms, 0, 24);
	eb_sym(syms + 24, 1, 0x12, 0x1000, 0x100);  /* main: GLOBAL FUNC */
	eb_sym(syms + 48, 6, 0x12, 0x1100, 0x50);   /* _ZN3foo3barEi */
	eb_sym(syms + 72, 20, 0x02, 0x1200, 0x20);  /* helper: LOCAL */
	eb_sym(syms + 96, 27, 0x12, 0x1200, 0x20);  /* helper_alias: GLOBAL wins */
	eb_sym(syms + 120, 40, 0x02, 0x12f0, 0x40); /* inner holds 0x1300 */
	le(rela, MAP_ADDR + 128 + 8, 8);
	le(rela + 8, 8, 8); /* R_X86_64_RELATIVE */
	le(rela + 16, 0x1300, 8);
	e->len = 64;
	o_map = eb_put(e, map, sizeof(map));
	o_sym = eb_put(e, syms, sizeof(syms));
	o_str = eb_put(e, strtab, sizeof(strtab));
	o_shs = eb_put(e, shstr, sizeof(shstr));
	o_rel = eb_put(e, rela, sizeof(rela));
	memset(sh, 0, 64);
	eb_shdr(sh + 64, with_map ? 1 : 2, 1, MAP_ADDR, o_map, sizeof(map), 0, 0);
	eb_shdr(sh + 128, 16, 2, 0, o_sym, sizeof(syms), 3, 24);
	eb_shdr(sh + 192, 24, 3, 0, o_str, sizeof(strtab), 0, 0);
	eb_shdr(sh + 256, 32, 3, 0, o_shs, sizeof(shstr), 0, 0);
	eb_shdr(sh + 320, 42, 4, 0, o_rel, sizeof(rela), 2, 24);
	o_sh = eb_put(e, sh, sizeof(sh));
	memcpy(h, "\x7f" "ELF\x02\x01\x01", 7);
	le(h + 16, 3, 2);  /* ET_DYN */
	le(h + 18, 62, 2); /* x86-64 */
	le(h + 20, 1, 4);
	le(h + 40, o_sh, 8);
	le(h + 52, 64, 2);
	le(h + 58, 64, 2);
	le(h + 60, 6, 2);
	le(h + 62, 4, 2);
	memcpy(e->b, h, sizeof(h));
}

static void test_symbols_elf(void **state)
{
	struct xray_symbols *s = NULL;
	struct elfb e;
	char err[256];

	(void)state;
	build_elf(&e, 1);
	assert_int_equal(xray_symbols_load(e.b, e.len, &s, err, sizeof(err)), INGEST_OK);
	assert_int_equal(xray_symbols_max_id(s), 5);
	assert_string_equal(xray_symbols_name(s, 1), "main");
	assert_string_equal(xray_symbols_name(s, 2), "foo::bar(int)");
	assert_string_equal(xray_symbols_name(s, 3), "helper_alias");
	assert_string_equal(xray_symbols_name(s, 4), "inner");
	assert_string_equal(xray_symbols_name(s, 5), "main");
	assert_null(xray_symbols_name(s, 0));
	assert_null(xray_symbols_name(s, 6));
	xray_symbols_free(s);
}

static void test_symbols_elf_errors(void **state)
{
	struct xray_symbols *s = NULL;
	struct elfb e;
	char err[256];
	size_t n;

	(void)state;
	build_elf(&e, 0);
	assert_int_equal(xray_symbols_load(e.b, e.len, &s, err, sizeof(err)), INGEST_ENOTTRACE);
	assert_null(s);
	assert_non_null(strstr(err, "xray_instr_map"));
	build_elf(&e, 1);
	e.b[4] = 1;
	assert_int_equal(xray_symbols_load(e.b, e.len, &s, err, sizeof(err)), INGEST_ENOTTRACE);
	assert_non_null(strstr(err, "64-bit little-endian"));
	assert_int_equal(xray_symbols_load((const uint8_t *)"hello", 5, &s, err, sizeof(err)), INGEST_ENOTTRACE);
	assert_non_null(strstr(err, "not an ELF"));
	/* cut at every length: an error or a table, never a read out of bounds */
	build_elf(&e, 1);
	for (n = 0; n < e.len; n++) {
		uint8_t *copy = malloc(n ? n : 1);

		memcpy(copy, e.b, n);
		if (xray_symbols_load(copy, n, &s, err, sizeof(err)) == INGEST_OK) {
			assert_true(xray_symbols_max_id(s) <= 5);
			xray_symbols_free(s);
		} else {
			assert_null(s);
			assert_true(strlen(err) > 0);
		}
		free(copy);
	}
}

static void test_symbols_yaml(void **state)
{
	static const char yaml[] =
		"---\n"
		"- { id: 1, address: 0x401000, function: 0x401000, kind: function-enter, always-instrument: false, "
		"function-name: main, version: 2 }\n"
		"- { id: 1, address: 0x401010, function: 0x401000, kind: function-exit, always-instrument: false, "
		"function-name: main, version: 2 }\r\n"
		"- { id: 2, address: 0x401020, function: 0x401020, kind: function-enter, always-instrument: false, "
		"function-name: 'foo(int, char) ''x''', version: 2 }\n"
		"- { id: 7, address: 0x401030, function: 0x401030, kind: function-enter, always-instrument: true, "
		"function-name: \"quoted \\\"y\\\"\", version: 2 }\n"
		"- { id: 3, address: 0x401040, function: 0x401040, kind: function-enter, always-instrument: false, "
		"function-name: '', version: 2 }\n"
		"...\n";
	struct xray_symbols *s = NULL;
	char err[256];

	(void)state;
	assert_int_equal(xray_symbols_load((const uint8_t *)yaml, strlen(yaml), &s, err, sizeof(err)), INGEST_OK);
	assert_int_equal(xray_symbols_max_id(s), 7);
	assert_string_equal(xray_symbols_name(s, 1), "main");
	assert_string_equal(xray_symbols_name(s, 2), "foo(int, char) 'x'");
	assert_string_equal(xray_symbols_name(s, 7), "quoted \"y\"");
	assert_null(xray_symbols_name(s, 3));
	assert_null(xray_symbols_name(s, 4));
	xray_symbols_free(s);
}

static void test_symbols_yaml_errors(void **state)
{
	static const char *const bad[] = {
		"---\n- { id: 1, function-name: a }\n- { id: x }\n",
		"---\n- { id: 1, function-name: 'unterminated }\n",
		"---\n- id: 1\n",
		"---\n- { function-name: a }\n",
		"---\n- { id: 4294967296 }\n",
		"---\n...\n",
	};
	struct xray_symbols *s = NULL;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(xray_symbols_load((const uint8_t *)bad[i], strlen(bad[i]), &s, err, sizeof(err)),
				 INGEST_ENOTTRACE);
		assert_null(s);
	}
	xray_symbols_load((const uint8_t *)bad[0], strlen(bad[0]), &s, err, sizeof(err));
	assert_non_null(strstr(err, "line 3"));
}

/* ---- ingest: spilled, file-mapped and piped give the same rows --------- */

static uint32_t lcg_state = 12345;

static unsigned lcg(unsigned n)
{
	lcg_state = lcg_state * 1103515245u + 12345u;
	return (lcg_state >> 16) % n;
}

/*
 * A v5 log of 4 threads in 60 buffers of 200 to 1700 records (a few
 * hundred bytes to 13 KiB: buffers inside a page, across two, across many,
 * none page-aligned), each thread's buffers overlapping the others' in
 * time and flushed out of order; nested calls, some with arguments, some
 * never exited, custom and typed events, and one damaged buffer.
 */
static void big_log(struct xrw *w)
{
	uint32_t stack[4][40];
	unsigned depth[4] = { 0 }, b, i, t, nrec;
	uint64_t tsc[4] = { 100000, 100500, 101000, 101500 }, args[2] = { 11, 22 };

	xrw_init(w, 5, 0);
	xrw_header(w, FREQ);
	for (b = 0; b < 60; b++) {
		t = (b * 3 + b / 7) % 4; /* not round robin: flush order is not time order */
		nrec = 200 + lcg(1500);
		xrw_buffer_begin(w, 100 + t, 7, 1, b, (uint16_t)t, tsc[t]);
		for (i = 0; i < nrec; i++) {
			tsc[t] += 1 + lcg(40);
			if (depth[t] < 40 && (depth[t] == 0 || lcg(2) == 0)) {
				stack[t][depth[t]] = 1 + lcg(30);
				if (lcg(5) == 0)
					xrw_enter_args(w, stack[t][depth[t]], tsc[t], args, 1 + lcg(2));
				else
					xrw_enter(w, stack[t][depth[t]], tsc[t]);
				depth[t]++;
			} else if (lcg(30) == 0) {
				xrw_custom(w, tsc[t], (uint16_t)t, "hello", 5);
			} else if (lcg(40) == 0) {
				xrw_typed(w, tsc[t], 3, "typed!", 6);
			} else {
				xrw_exit(w, stack[t][--depth[t]], tsc[t]);
			}
		}
		if (b == 31) /* damaged: a metadata record of an unknown kind */
			xrw_meta(w, 13, (const uint8_t[15]){ 0 });
		xrw_buffer_end(w);
	}
}

/* Every table of the database at path, each row as text, in rowid order. */
static char *all_rows(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st, *rows;
	char sql[256], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int i;

	assert_non_null(f);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1,
					    &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(sql, sizeof(sql), "SELECT * FROM \"%s\"", (const char *)sqlite3_column_text(st, 0));
		fprintf(f, "table %s\n", (const char *)sqlite3_column_text(st, 0));
		assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &rows, NULL), SQLITE_OK);
		while (sqlite3_step(rows) == SQLITE_ROW) {
			for (i = 0; i < sqlite3_column_count(rows); i++) {
				const unsigned char *v = sqlite3_column_text(rows, i);

				fprintf(f, "%s%s", i ? "|" : "", v ? (const char *)v : "NULL");
			}
			fputc('\n', f);
		}
		sqlite3_finalize(rows);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	fclose(f);
	return out;
}

struct pipe_feed {
	const char *path;
	const uint8_t *p;
	size_t n;
};

/* Writes the log into the FIFO the ingest reads. */
static void *pipe_writer(void *arg)
{
	const struct pipe_feed *pf = arg;
	int fd = open(pf->path, O_WRONLY);
	size_t off = 0;
	ssize_t k;

	if (fd < 0)
		return NULL;
	while (off < pf->n && (k = write(fd, pf->p + off, pf->n - off)) > 0)
		off += (size_t)k;
	close(fd);
	return NULL;
}

/*
 * The same log ingested three ways gives the same database, every table
 * row for row: (0) from a file, the events sorted in memory; (1) from the
 * file with a budget of 50 events, so that the events go through dozens of
 * spilled runs and the slice store through its spill, while the decoder
 * gives back the pages of the mapped input as it walks them
 * (xray_stable_file); (2) the same budget, from a pipe: the buffers
 * copied into the decoder's arena instead.
 */
static void test_ingest_spilled_equals_in_memory(void **state)
{
	char in[] = "/tmp/xr-test-XXXXXX", fifo[64], db[3][64];
	struct ingest_opts o = { 0 };
	struct ingest_result res;
	struct pipe_feed pf;
	pthread_t th;
	char *rows[3];
	struct xrw w;
	int fd, i;

	(void)state;
	big_log(&w);
	assert_true(w.len > 200000);
	assert_true((fd = mkstemp(in)) >= 0);
	close(fd);
	assert_int_equal(xrw_save(&w, in), 0);
	snprintf(fifo, sizeof(fifo), "%s.fifo", in);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (i = 0; i < 3; i++) {
		snprintf(db[i], sizeof(db[i]), "%s.%d.db", in, i);
		o.sort_budget = i ? 50 : 0;
		if (i == 2) {
			pf = (struct pipe_feed){ fifo, w.buf, w.len };
			assert_int_equal(pthread_create(&th, NULL, pipe_writer, &pf), 0);
		}
		if (ingest_file(i == 2 ? fifo : in, db[i], &o, &res) != INGEST_OK)
			fail_msg("way %d: %s", i, res.error);
		if (i == 2)
			pthread_join(th, NULL);
		assert_string_equal(res.format, "xray-fdr");
		assert_true(res.counts.slices > 20000);
		rows[i] = all_rows(db[i]);
	}
	assert_non_null(strstr(rows[0], "table slices\n1|"));
	assert_non_null(strstr(rows[0], "malformed_records"));
	for (i = 1; i < 3; i++)
		if (strcmp(rows[0], rows[i]) != 0)
			fail_msg("way %d differs:\n%.1500s\n----\n%.1500s", i, rows[0], rows[i]);
	for (i = 0; i < 3; i++) {
		free(rows[i]);
		remove(db[i]);
	}
	remove(fifo);
	remove(in);
	xrw_fini(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_not_trace),
		cmocka_unit_test(test_basic_every_version),
		cmocka_unit_test(test_every_kind_every_version),
		cmocka_unit_test(test_v1_framing),
		cmocka_unit_test(test_v1_bad_buffer_size),
		cmocka_unit_test(test_v5_end_of_buffer_and_empty),
		cmocka_unit_test(test_frequency_zero),
		cmocka_unit_test(test_frequency_exact),
		cmocka_unit_test(test_mid_stack_start),
		cmocka_unit_test(test_stack_matching),
		cmocka_unit_test(test_orphan_argument),
		cmocka_unit_test(test_ring_order),
		cmocka_unit_test(test_lost_buffer),
		cmocka_unit_test(test_damaged_buffer),
		cmocka_unit_test(test_truncated_every_offset),
		cmocka_unit_test(test_chunked_equals_one_shot),
		cmocka_unit_test(test_symbols_elf),
		cmocka_unit_test(test_symbols_elf_errors),
		cmocka_unit_test(test_symbols_yaml),
		cmocka_unit_test(test_symbols_yaml_errors),
		cmocka_unit_test(test_ingest_spilled_equals_in_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
