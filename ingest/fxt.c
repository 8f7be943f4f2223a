/*
 * The Fuchsia Trace Format (FXT) decoder.
 *
 * A push parser: fxt_feed() takes the archive in chunks of any size, keeps a
 * record split across chunks until it is whole, and decodes each record
 * through a bounded sub-reader that ends at the record's declared size. It
 * resolves string and thread references against the current provider's
 * tables as they stand at that record (docs/API.md, Meaning 1) and appends
 * neutral model records (model.h). It never allocates per event.
 *
 * Specification: ../shared/spec/fuchsia-trace-format.txt, or
 * https://fuchsia.dev/fuchsia-src/reference/tracing/trace-format
 *
 * Record header word (every record):
 *   bits   size  meaning
 *   0..3     4   record type (0 metadata .. 10 profiler, 15 large)
 *   4..15   12   record size in 8-byte words, header included
 *   4..35   32   record size, large records (type 15) only
 *   16..63  48   varies by record type
 * Argument header word: 0..3 type, 4..15 size in words, 16..31 name ref,
 * 32..63 inline value or reserved.
 * String ref (16 bits): 0 empty, 0x8000|len inline stream, else table index.
 * Thread ref (8 bits): 0 inline pid and tid words, else table index.
 *
 * Where we knowingly depart from the text, to read what real writers emit:
 * - Trailing words past the fields we know are ignored in every record
 *   (an instant event's "scope" word, a 4-word initialization record).
 * - Unknown record types, subtypes and argument types are skipped by their
 *   size and counted; a record whose fields do not fit its size is dropped
 *   and counted as malformed.
 * - A zero-size record, or one running past the end of the data, ends the
 *   archive: what came before is kept, the rest counts as truncated bytes.
 * - Records larger than FXT_MAX_RECORD are skipped without being buffered.
 * - Big-endian archives (magic word bytes reversed) are read word by word.
 *   Backtrace frames are words, not a stream: they are stored little-endian
 *   (as schema/trace.sql says) whatever the archive's byte order.
 * - An archive must start with the magic record (the text: "generally it
 *   should appear at the start"), a provider-info record or an
 *   initialization record (a provider's buffer as its engine writes it);
 *   anything else is not a trace, unless the caller named the format
 *   (fxt_decoder.forced).
 * - An initialization record with 0 ticks per second is malformed.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fxt.h"
#include "reader.h"

#define FXT_MAGIC UINT64_C(0x0016547846040010)
#define FXT_INIT_HEADER UINT64_C(0x21) /* initialization record: 2 words, reserved bits zero */

enum { DEC_OK = 0, DEC_MALFORMED = -1, DEC_NOMEM = -2, DEC_UNKNOWN = -3 };

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static uint64_t rec_words(uint64_t h)
{
	return (h & 0xf) == 15 ? rd_bits(h, 4, 35) : rd_bits(h, 4, 15);
}

/* Ticks to nanoseconds, truncated and exact for every 64-bit tick count;
 * with sub, also the remainder in 1/256 ns where the clock ticks faster
 * than 1 GHz (two ticks can then fall in one nanosecond; 1/256 ns tells
 * any two ticks apart up to 256 GHz), else 0. */
static int64_t fxt_ns_sub(struct fxt_decoder *d, uint64_t ticks, uint8_t *sub)
{
	uint64_t tps = d->cur ? d->cur->ticks_per_second : 1000000000u;
	unsigned __int128 ns, scaled;

	if (sub != NULL)
		*sub = 0;
	if (tps == 1000000000u) {
		ns = ticks;
	} else {
		scaled = (unsigned __int128)ticks * 1000000000u;
		ns = scaled / tps;
		if (sub != NULL && tps > 1000000000u)
			*sub = (uint8_t)((unsigned __int128)(uint64_t)(scaled % tps) * 256 / tps);
	}
	if (ns > INT64_MAX) {
		d->m->diag.timestamp_overflows++;
		if (sub != NULL)
			*sub = 0;
		return INT64_MAX;
	}
	return (int64_t)ns;
}

static int64_t fxt_ns(struct fxt_decoder *d, uint64_t ticks)
{
	return fxt_ns_sub(d, ticks, NULL);
}

static struct mdl_provider *fxt_provider(struct fxt_decoder *d)
{
	if (d->cur == NULL)
		d->cur = model_provider(d->m, 0, 0);
	return d->cur;
}

static uint32_t fxt_unknown_string(struct fxt_decoder *d, unsigned idx)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "<unknown string %u>", idx);

	d->m->diag.unresolved_string_refs++;
	return model_intern(d->m, buf, (size_t)n);
}

/* Resolves a string ref; an inline string is read from r. */
static uint32_t fxt_str(struct fxt_decoder *d, struct rd *r, unsigned ref)
{
	struct mdl_provider *p;
	const uint8_t *q;
	size_t len;

	if (ref == 0)
		return 0;
	if (ref & 0x8000) {
		len = ref & 0x7fff;
		q = rd_bytes(r, pad8(len));
		return q ? model_intern(d->m, (const char *)q, len) : 0;
	}
	p = fxt_provider(d);
	if (p == NULL)
		return MDL_NONE;
	if (p->strings[ref >> 8] == NULL || p->strings[ref >> 8][ref & 0xff] == 0)
		return fxt_unknown_string(d, ref);
	return p->strings[ref >> 8][ref & 0xff] - 1;
}

/* Resolves a thread ref; inline pid and tid words are read from r. */
static uint32_t fxt_thread(struct fxt_decoder *d, struct rd *r, unsigned ref)
{
	struct mdl_provider *p;
	uint64_t pid, tid;

	if (ref == 0) {
		pid = rd_u64(r);
		tid = rd_u64(r);
		return model_thread(d->m, pid, tid);
	}
	p = fxt_provider(d);
	if (p == NULL)
		return MDL_NONE;
	if (p->threads[ref] == 0) {
		d->m->diag.unresolved_thread_refs++;
		return model_thread(d->m, 0, 0);
	}
	return p->threads[ref] - 1;
}

static int fxt_arg_value(struct fxt_decoder *d, struct rd *a, uint64_t h, struct mdl_arg *arg)
{
	const uint8_t *q;

	switch (arg->type) {
	case MDL_ARG_NULL:
		break;
	case MDL_ARG_I32:
		arg->v.i = (int32_t)(uint32_t)rd_bits(h, 32, 63);
		break;
	case MDL_ARG_U32:
		arg->v.u = rd_bits(h, 32, 63);
		break;
	case MDL_ARG_I64:
	case MDL_ARG_U64:
	case MDL_ARG_DOUBLE:
	case MDL_ARG_POINTER:
	case MDL_ARG_KOID:
		arg->v.u = rd_u64(a);
		break;
	case MDL_ARG_STRING:
		arg->v.str = fxt_str(d, a, (unsigned)rd_bits(h, 32, 47));
		break;
	case MDL_ARG_BOOL:
		arg->v.u = rd_bits(h, 32, 32);
		break;
	case MDL_ARG_BLOB:
		arg->len = (uint32_t)rd_bits(h, 32, 63);
		q = rd_bytes(a, arg->len);
		arg->v.u = q ? model_bytes(d->m, q, arg->len) : 0;
		break;
	default:
		return DEC_UNKNOWN;
	}
	return a->err ? DEC_MALFORMED : DEC_OK;
}

/*
 * Decodes n arguments from r into the model's argument array. Returns DEC_OK
 * with *first and *count set (unknown argument types are skipped and
 * counted), or DEC_MALFORMED when an argument does not fit.
 */
static int fxt_args(struct fxt_decoder *d, struct rd *r, unsigned n, uint32_t *first, uint8_t *count)
{
	struct mdl_arg *arg;
	struct rd a;
	uint64_t h, words;
	unsigned i;
	int rc;

	*first = (uint32_t)d->m->args.len;
	*count = 0;
	for (i = 0; i < n; i++) {
		h = rd_u64(r);
		words = rd_bits(h, 4, 15);
		if (r->err || words == 0)
			return DEC_MALFORMED;
		a = rd_sub(r, (size_t)(words - 1) * 8);
		if (a.err)
			return DEC_MALFORMED;
		arg = vec_push(&d->m->args);
		if (arg == NULL)
			return DEC_NOMEM;
		arg->type = (uint8_t)(h & 0xf);
		arg->key = fxt_str(d, &a, (unsigned)rd_bits(h, 16, 31));
		rc = fxt_arg_value(d, &a, h, arg);
		if (rc == DEC_UNKNOWN) {
			d->m->diag.unknown_args++;
			d->m->args.len--;
			continue;
		}
		if (rc != DEC_OK)
			return rc;
		(*count)++;
	}
	d->st.args += *count;
	return DEC_OK;
}

static int fxt_metadata(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	unsigned type = (unsigned)rd_bits(h, 16, 19);
	uint32_t id = (uint32_t)rd_bits(h, 20, 51);
	struct mdl_provider *p;
	size_t len;
	const uint8_t *q;

	d->st.metadata[type]++;
	switch (type) {
	case 1: /* provider info */
		len = (size_t)rd_bits(h, 52, 59);
		q = rd_bytes(r, pad8(len));
		if (q == NULL)
			return DEC_MALFORMED;
		if ((p = model_provider(d->m, id, 1)) == NULL)
			return DEC_NOMEM;
		p->name = model_intern(d->m, (const char *)q, len);
		d->cur = p;
		return DEC_OK;
	case 2: /* provider section */
		d->cur = model_provider(d->m, id, 0);
		return d->cur ? DEC_OK : DEC_NOMEM;
	case 3: /* provider event */
		if (rd_bits(h, 52, 55) != 0)
			return DEC_UNKNOWN;
		if ((p = model_provider(d->m, id, 0)) == NULL)
			return DEC_NOMEM;
		p->overflows++;
		d->m->diag.buffer_overflows++;
		return DEC_OK;
	case 4: /* trace info */
		if (rd_bits(h, 20, 23) != 0)
			return DEC_UNKNOWN;
		return rd_bits(h, 24, 55) == 0x16547846 ? DEC_OK : DEC_MALFORMED;
	default:
		return DEC_UNKNOWN;
	}
}

static int fxt_initialization(struct fxt_decoder *d, struct rd *r)
{
	uint64_t tps = rd_u64(r);
	struct mdl_provider *p;

	if (r->err || tps == 0)
		return DEC_MALFORMED;
	if ((p = fxt_provider(d)) == NULL)
		return DEC_NOMEM;
	p->ticks_per_second = tps;
	return DEC_OK;
}

static int fxt_string_record(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	unsigned idx = (unsigned)rd_bits(h, 16, 30);
	size_t len = (size_t)rd_bits(h, 32, 46);
	const uint8_t *q = rd_bytes(r, pad8(len));
	struct mdl_provider *p;
	uint32_t id;

	if (q == NULL)
		return DEC_MALFORMED;
	if (idx == 0) {
		d->m->diag.ignored_records++;
		return DEC_OK;
	}
	if ((p = fxt_provider(d)) == NULL || (id = model_intern(d->m, (const char *)q, len)) == MDL_NONE)
		return DEC_NOMEM;
	if (p->strings[idx >> 8] == NULL && (p->strings[idx >> 8] = calloc(256, sizeof(uint32_t))) == NULL)
		return DEC_NOMEM;
	p->strings[idx >> 8][idx & 0xff] = id + 1;
	return DEC_OK;
}

static int fxt_thread_record(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	unsigned idx = (unsigned)rd_bits(h, 16, 23);
	uint64_t pid = rd_u64(r), tid = rd_u64(r);
	struct mdl_provider *p;
	uint32_t t;

	if (r->err)
		return DEC_MALFORMED;
	if (idx == 0) {
		d->m->diag.ignored_records++;
		return DEC_OK;
	}
	if ((p = fxt_provider(d)) == NULL || (t = model_thread(d->m, pid, tid)) == MDL_NONE)
		return DEC_NOMEM;
	p->threads[idx] = t + 1;
	return DEC_OK;
}

static const uint8_t ev_kinds[11] = {
	MDL_EV_INSTANT,     MDL_EV_COUNTER,       MDL_EV_BEGIN,     MDL_EV_END,
	MDL_EV_COMPLETE,    MDL_EV_ASYNC_BEGIN,   MDL_EV_ASYNC_INSTANT,
	MDL_EV_ASYNC_END,   MDL_EV_FLOW_BEGIN,    MDL_EV_FLOW_STEP, MDL_EV_FLOW_END,
};

static int fxt_event(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	unsigned type = (unsigned)rd_bits(h, 16, 19);
	struct mdl_ev ev = { 0 };
	struct mdl_ev *e;
	uint64_t ticks;
	int rc;

	if (type > 10)
		return DEC_UNKNOWN;
	d->st.events[type]++;
	ev.kind = ev_kinds[type];
	ticks = rd_u64(r);
	ev.thread = fxt_thread(d, r, (unsigned)rd_bits(h, 24, 31));
	ev.cat = fxt_str(d, r, (unsigned)rd_bits(h, 32, 47));
	ev.name = fxt_str(d, r, (unsigned)rd_bits(h, 48, 63));
	if (r->err)
		return DEC_MALFORMED;
	if (ev.thread == MDL_NONE || ev.cat == MDL_NONE || ev.name == MDL_NONE)
		return DEC_NOMEM;
	ev.ts = fxt_ns_sub(d, ticks, &ev.sub);
	rc = fxt_args(d, r, (unsigned)rd_bits(h, 20, 23), &ev.args, &ev.nargs);
	if (rc != DEC_OK)
		return rc;
	if (type != 0 && type != 2 && type != 3)
		ev.extra = rd_u64(r);
	if (r->err)
		return DEC_MALFORMED;
	if (type == 4)
		ev.extra = (uint64_t)fxt_ns_sub(d, ev.extra, &ev.end_sub);
	if ((e = model_event(d->m)) == NULL)
		return DEC_NOMEM;
	ev.seq = e->seq;
	*e = ev;
	return DEC_OK;
}

static int fxt_blob(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	struct mdl_blob b = { 0 };
	struct mdl_blob *out;
	const uint8_t *q;

	b.kind = MDL_BLOB;
	b.type = (uint8_t)rd_bits(h, 48, 55);
	b.thread = MDL_NONE;
	b.name = fxt_str(d, r, (unsigned)rd_bits(h, 16, 31));
	b.len = rd_bits(h, 32, 46);
	q = rd_bytes(r, pad8((size_t)b.len));
	if (q == NULL)
		return DEC_MALFORMED;
	b.off = model_bytes(d->m, q, (size_t)b.len);
	if (b.name == MDL_NONE || (out = vec_push(&d->m->blobs)) == NULL)
		return DEC_NOMEM;
	*out = b;
	return DEC_OK;
}

static int fxt_userspace_object(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	unsigned ref = (unsigned)rd_bits(h, 16, 23);
	struct mdl_uobj o = { 0 };
	struct mdl_uobj *out;
	uint8_t n;
	int rc;

	o.ptr = rd_u64(r);
	if (ref == 0) {
		o.pid = rd_u64(r);
	} else {
		uint32_t t = fxt_thread(d, r, ref);

		if (t == MDL_NONE)
			return DEC_NOMEM;
		o.pid = VEC_AT(&d->m->threads, struct mdl_thread, t)->pid;
	}
	o.name = fxt_str(d, r, (unsigned)rd_bits(h, 24, 39));
	if (r->err)
		return DEC_MALFORMED;
	rc = fxt_args(d, r, (unsigned)rd_bits(h, 40, 43), &o.args, &n);
	if (rc != DEC_OK)
		return rc;
	o.nargs = n;
	if ((out = vec_push(&d->m->uobjs)) == NULL)
		return DEC_NOMEM;
	*out = o;
	return DEC_OK;
}

/* The "process" koid argument of a thread object, or MDL_PID_UNRESOLVED. */
static uint64_t fxt_process_arg(struct fxt_decoder *d, uint32_t first, unsigned n)
{
	uint32_t process = model_intern(d->m, "process", 7);
	unsigned i;

	for (i = 0; i < n; i++) {
		struct mdl_arg *a = VEC_AT(&d->m->args, struct mdl_arg, first + i);

		if (a->key == process && (a->type == MDL_ARG_KOID || a->type == MDL_ARG_U64 || a->type == MDL_ARG_U32))
			return a->v.u;
	}
	return MDL_PID_UNRESOLVED;
}

static int fxt_kernel_object(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	struct mdl_kobj o = { 0 };
	struct mdl_kobj *out;
	uint8_t n;
	int rc;

	o.type = (uint32_t)rd_bits(h, 16, 23);
	o.koid = rd_u64(r);
	o.name = fxt_str(d, r, (unsigned)rd_bits(h, 24, 39));
	if (r->err)
		return DEC_MALFORMED;
	rc = fxt_args(d, r, (unsigned)rd_bits(h, 40, 43), &o.args, &n);
	if (rc != DEC_OK)
		return rc;
	o.nargs = n;
	o.process = fxt_process_arg(d, o.args, n);
	if ((out = vec_push(&d->m->kobjs)) == NULL)
		return DEC_NOMEM;
	*out = o;
	return DEC_OK;
}

/* The incoming_weight argument of a context switch; *found tells if present. */
static int32_t fxt_weight_arg(struct fxt_decoder *d, uint32_t first, unsigned n, const char *key, int *found)
{
	uint32_t k = model_intern(d->m, key, strlen(key));
	unsigned i;

	*found = 0;
	for (i = 0; i < n; i++) {
		struct mdl_arg *a = VEC_AT(&d->m->args, struct mdl_arg, first + i);

		if (a->key == k && (a->type == MDL_ARG_I32 || a->type == MDL_ARG_I64)) {
			*found = 1;
			return (int32_t)a->v.i;
		}
	}
	return 0;
}

static int fxt_push_sched(struct fxt_decoder *d, const struct mdl_sched *s)
{
	return model_sched(d->m, s) == 0 ? DEC_OK : DEC_NOMEM;
}

static int fxt_context_switch(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	struct mdl_sched s = { 0 };
	uint64_t ticks = rd_u64(r), out_tid = rd_u64(r), in_tid = rd_u64(r);
	uint32_t first;
	uint8_t n;
	int rc, found;

	if (r->err)
		return DEC_MALFORMED;
	rc = fxt_args(d, r, (unsigned)rd_bits(h, 16, 19), &first, &n);
	if (rc != DEC_OK)
		return rc;
	s.ts = fxt_ns(d, ticks);
	s.cpu = (uint16_t)rd_bits(h, 20, 35);
	s.out_state = (uint8_t)rd_bits(h, 36, 39);
	s.out_thread = model_thread(d->m, MDL_PID_UNRESOLVED, out_tid);
	s.in_thread = model_thread(d->m, MDL_PID_UNRESOLVED, in_tid);
	s.in_priority = fxt_weight_arg(d, first, n, "incoming_weight", &found);
	s.in_idle = found && s.in_priority == INT32_MIN;
	if (s.out_thread == MDL_NONE || s.in_thread == MDL_NONE)
		return DEC_NOMEM;
	return fxt_push_sched(d, &s);
}

static int fxt_legacy_switch(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	struct mdl_sched s = { 0 };
	uint64_t ticks = rd_u64(r);

	s.out_thread = fxt_thread(d, r, (unsigned)rd_bits(h, 28, 35));
	s.in_thread = fxt_thread(d, r, (unsigned)rd_bits(h, 36, 43));
	if (r->err)
		return DEC_MALFORMED;
	if (s.out_thread == MDL_NONE || s.in_thread == MDL_NONE)
		return DEC_NOMEM;
	s.ts = fxt_ns(d, ticks);
	s.legacy = 1;
	s.cpu = (uint16_t)rd_bits(h, 16, 23);
	s.out_state = (uint8_t)rd_bits(h, 24, 27);
	s.in_priority = (int32_t)rd_bits(h, 52, 59);
	s.in_idle = s.in_priority == 0 && VEC_AT(&d->m->threads, struct mdl_thread, s.in_thread)->pid == 0;
	return fxt_push_sched(d, &s);
}

/* A wakeup is kept as an instant "wakeup" (category "sched") of the woken
 * thread, with its arguments and a "cpu" argument. */
static int fxt_wakeup(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	struct mdl_ev ev = { 0 };
	struct mdl_ev *e;
	struct mdl_arg *cpu;
	uint64_t ticks = rd_u64(r), tid = rd_u64(r);
	int rc;

	if (r->err)
		return DEC_MALFORMED;
	rc = fxt_args(d, r, (unsigned)rd_bits(h, 16, 19), &ev.args, &ev.nargs);
	if (rc != DEC_OK)
		return rc;
	if (ev.nargs == 255 || (cpu = vec_push(&d->m->args)) == NULL)
		return ev.nargs == 255 ? DEC_MALFORMED : DEC_NOMEM;
	cpu->type = MDL_ARG_U32;
	cpu->key = model_intern(d->m, "cpu", 3);
	cpu->v.u = rd_bits(h, 20, 35);
	ev.nargs++;
	ev.kind = MDL_EV_INSTANT;
	ev.ts = fxt_ns_sub(d, ticks, &ev.sub);
	ev.thread = model_thread(d->m, MDL_PID_UNRESOLVED, tid);
	ev.cat = model_intern(d->m, "sched", 5);
	ev.name = model_intern(d->m, "wakeup", 6);
	if ((e = model_event(d->m)) == NULL)
		return DEC_NOMEM;
	ev.seq = e->seq;
	*e = ev;
	return DEC_OK;
}

static int fxt_scheduling(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	unsigned type = (unsigned)rd_bits(h, 60, 63);

	d->st.sched[type]++;
	switch (type) {
	case 0:
		return fxt_legacy_switch(d, r, h);
	case 1:
		return fxt_context_switch(d, r, h);
	case 2:
		return fxt_wakeup(d, r, h);
	default:
		return DEC_UNKNOWN;
	}
}

static int fxt_log(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	size_t len = (size_t)rd_bits(h, 16, 30);
	uint64_t ticks = rd_u64(r);
	struct mdl_log l = { 0 };
	struct mdl_log *out;
	const uint8_t *q;

	l.thread = fxt_thread(d, r, (unsigned)rd_bits(h, 32, 39));
	q = rd_bytes(r, pad8(len));
	if (q == NULL)
		return DEC_MALFORMED;
	l.ts = fxt_ns(d, ticks);
	l.msg = model_intern(d->m, (const char *)q, len);
	if (l.thread == MDL_NONE || l.msg == MDL_NONE || (out = vec_push(&d->m->logs)) == NULL)
		return DEC_NOMEM;
	l.seq = d->m->seq++;
	*out = l;
	return DEC_OK;
}

/* Copies n bytes of backtrace frames into the byte arena as little-endian
 * words, whatever the archive's byte order; returns the arena offset. */
static uint64_t fxt_frames(struct fxt_decoder *d, const uint8_t *q, size_t n)
{
	uint64_t off = model_bytes(d->m, q, n);
	uint8_t *out;
	size_t i;
	unsigned k;

	if (!d->big_endian || d->m->oom)
		return off;
	out = (uint8_t *)d->m->bytes.data + off;
	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t v = rd_load64(q + i, 1);

		for (k = 0; k < 8; k++)
			out[i + k] = (uint8_t)(v >> (8 * k));
	}
	return off;
}

/* The common head of profiler records: timestamp word and thread. */
static int fxt_prof_head(struct fxt_decoder *d, struct rd *r, uint64_t h, struct mdl_prof *p)
{
	uint64_t ticks = rd_u64(r);

	p->thread = fxt_thread(d, r, (unsigned)rd_bits(h, 20, 27));
	p->ts = fxt_ns(d, ticks);
	if (r->err)
		return DEC_MALFORMED;
	return p->thread == MDL_NONE ? DEC_NOMEM : DEC_OK;
}

static int fxt_profiler(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	struct mdl_prof p = { 0 };
	struct mdl_prof *out;
	size_t nlen, blen;
	const uint8_t *name, *bid;
	int rc;

	p.kind = (uint8_t)rd_bits(h, 16, 19);
	if (p.kind > MDL_PROF_BACKTRACE)
		return DEC_UNKNOWN;
	d->st.profiler[p.kind]++;
	if ((rc = fxt_prof_head(d, r, h, &p)) != DEC_OK)
		return rc;
	p.module = (uint16_t)rd_bits(h, 28, 43);
	if (p.kind == MDL_PROF_MODULE) {
		nlen = (size_t)rd_bits(h, 44, 51);
		blen = (size_t)rd_bits(h, 52, 59);
		name = rd_bytes(r, pad8(nlen));
		bid = rd_bytes(r, pad8(blen));
		if (name == NULL || bid == NULL)
			return DEC_MALFORMED;
		p.name = model_intern(d->m, (const char *)name, nlen);
		p.off = model_bytes(d->m, bid, blen);
		p.len = blen;
	} else if (p.kind == MDL_PROF_MMAP) {
		p.flags = (uint8_t)rd_bits(h, 44, 46);
		p.start = rd_u64(r);
		p.range = rd_u64(r);
		p.vaddr = rd_u64(r);
	} else {
		p.module = 0;
		blen = (size_t)rd_bits(h, 28, 35) * 8;
		bid = rd_bytes(r, blen);
		if (bid == NULL)
			return DEC_MALFORMED;
		p.off = fxt_frames(d, bid, blen);
		p.len = blen;
	}
	if (r->err)
		return DEC_MALFORMED;
	if ((out = vec_push(&d->m->profs)) == NULL)
		return DEC_NOMEM;
	*out = p;
	return DEC_OK;
}

/* Large BLOB record (type 15, large type 0), formats 0 and 1. */
static int fxt_large(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	unsigned format = (unsigned)rd_bits(h, 40, 43);
	struct mdl_blob b = { 0 };
	struct mdl_blob *out;
	uint64_t fh, ticks;
	const uint8_t *q;
	uint8_t n;
	int rc;

	if (rd_bits(h, 36, 39) != 0 || format > 1)
		return DEC_UNKNOWN;
	fh = rd_u64(r);
	b.cat = fxt_str(d, r, (unsigned)rd_bits(fh, 0, 15));
	b.name = fxt_str(d, r, (unsigned)rd_bits(fh, 16, 31));
	b.thread = MDL_NONE;
	b.kind = MDL_LARGE_BLOB;
	if (format == 0) {
		b.kind = MDL_LARGE_BLOB_META;
		ticks = rd_u64(r);
		b.thread = fxt_thread(d, r, (unsigned)rd_bits(fh, 36, 43));
		b.ts = fxt_ns(d, ticks);
		if (r->err)
			return DEC_MALFORMED;
		rc = fxt_args(d, r, (unsigned)rd_bits(fh, 32, 35), &b.args, &n);
		if (rc != DEC_OK)
			return rc;
		b.nargs = n;
	}
	b.len = rd_u64(r);
	if (r->err || b.len > rd_left(r))
		return DEC_MALFORMED;
	q = rd_bytes(r, (size_t)b.len);
	if (q == NULL)
		return DEC_MALFORMED;
	b.off = model_bytes(d->m, q, (size_t)b.len);
	if (b.cat == MDL_NONE || b.name == MDL_NONE || (format == 0 && b.thread == MDL_NONE))
		return DEC_NOMEM;
	if ((out = vec_push(&d->m->blobs)) == NULL)
		return DEC_NOMEM;
	*out = b;
	return DEC_OK;
}

static int fxt_dispatch(struct fxt_decoder *d, struct rd *r, uint64_t h)
{
	switch (h & 0xf) {
	case 0:
		return fxt_metadata(d, r, h);
	case 1:
		return fxt_initialization(d, r);
	case 2:
		return fxt_string_record(d, r, h);
	case 3:
		return fxt_thread_record(d, r, h);
	case 4:
		return fxt_event(d, r, h);
	case 5:
		return fxt_blob(d, r, h);
	case 6:
		return fxt_userspace_object(d, r, h);
	case 7:
		return fxt_kernel_object(d, r, h);
	case 8:
		return fxt_scheduling(d, r, h);
	case 9:
		return fxt_log(d, r, h);
	case 10:
		return fxt_profiler(d, r, h);
	case 15:
		return fxt_large(d, r, h);
	default:
		return DEC_UNKNOWN;
	}
}

/* Decodes one whole record of n bytes. A damaged record is counted and its
 * partial output rolled back, so every record is either decoded or counted. */
static int fxt_record(struct fxt_decoder *d, const uint8_t *p, size_t n)
{
	struct model *m = d->m;
	size_t args_len = m->args.len, bytes_len = m->bytes.len, events_len = m->events.len;
	uint64_t events_total = m->events_total;
	struct mdl_diag diag = m->diag;
	struct rd r;
	uint64_t h;
	int rc;

	rd_init(&r, p, n, d->big_endian);
	h = rd_u64(&r);
	d->st.records[h & 0xf]++;
	rc = fxt_dispatch(d, &r, h);
	if (rc == DEC_OK)
		return m->oom ? INGEST_ENOMEM : INGEST_OK;
	m->args.len = args_len;
	m->bytes.len = bytes_len;
	m->events.len = events_len;
	m->events_total = events_total;
	m->diag = diag; /* a dropped record counts once, as dropped */
	if (rc == DEC_NOMEM || m->oom) {
		m->oom = 1;
		return INGEST_ENOMEM;
	}
	if (rc == DEC_UNKNOWN)
		m->diag.unknown_records++;
	else
		m->diag.malformed_records++;
	return INGEST_OK;
}

int fxt_detect(const uint8_t *buf, size_t n)
{
	uint64_t le, be;

	if (n < 8)
		return 0;
	le = rd_load64(buf, 0);
	be = rd_load64(buf, 1);
	if (le == FXT_MAGIC || be == FXT_MAGIC || le == FXT_INIT_HEADER)
		return 1;
	/* headerless: a provider-info record with a sane size */
	return (le & 0xf) == 0 && rd_bits(le, 16, 19) == 1 && rec_words(le) >= 1 &&
	       rec_words(le) == 1 + pad8((size_t)rd_bits(le, 52, 59)) / 8 && rd_bits(le, 60, 63) == 0;
}

void fxt_init(struct fxt_decoder *d, struct model *m)
{
	memset(d, 0, sizeof(*d));
	d->m = m;
}

void fxt_fini(struct fxt_decoder *d)
{
	free(d->carry);
	d->carry = NULL;
}

/*
 * Looks at the header word of the next record: checks the first record,
 * returns the record's size in bytes, or 0 when the archive ends here (a
 * zero-size record). An oversized record switches to skipping.
 */
static uint64_t fxt_header(struct fxt_decoder *d, const uint8_t *hdr)
{
	uint64_t h, size;

	if (!d->started) {
		d->started = 1;
		d->big_endian = rd_load64(hdr, 1) == FXT_MAGIC;
		if (!d->forced && !fxt_detect(hdr, 8))
			d->not_trace = 1;
	}
	h = rd_load64(hdr, d->big_endian);
	size = rec_words(h) * 8;
	if (size == 0)
		d->ended = 1;
	return size;
}

static int fxt_carry(struct fxt_decoder *d, const uint8_t *p, size_t n)
{
	if (d->carry_len + n > d->carry_cap) {
		size_t cap = d->carry_cap ? d->carry_cap : 4096;
		uint8_t *c;

		while (cap < d->carry_len + n)
			cap *= 2;
		if ((c = realloc(d->carry, cap)) == NULL) {
			d->m->oom = 1;
			return INGEST_ENOMEM;
		}
		d->carry = c;
		d->carry_cap = cap;
	}
	memcpy(d->carry + d->carry_len, p, n);
	d->carry_len += n;
	return INGEST_OK;
}

/* Continues a record split across chunks; returns bytes taken from p. */
static size_t fxt_feed_carry(struct fxt_decoder *d, const uint8_t *p, size_t n, int *rc)
{
	size_t take;

	if (d->need == 0) {
		take = 8 - d->carry_len < n ? 8 - d->carry_len : n;
		if ((*rc = fxt_carry(d, p, take)) != INGEST_OK || d->carry_len < 8)
			return take;
		d->need = fxt_header(d, d->carry);
		if (d->not_trace || d->ended) {
			d->m->diag.truncated_bytes += d->carry_len;
			d->carry_len = 0;
			return take;
		}
		if (d->need > FXT_MAX_RECORD) {
			d->m->diag.oversized_records++;
			d->skip = d->need - 8;
			d->skip_done = 8;
			d->need = 0;
			d->carry_len = 0;
		} else if (d->need == d->carry_len) {
			*rc = fxt_record(d, d->carry, d->carry_len);
			d->carry_len = 0;
			d->need = 0;
		}
		return take;
	}
	take = d->need - d->carry_len < n ? (size_t)(d->need - d->carry_len) : n;
	if ((*rc = fxt_carry(d, p, take)) != INGEST_OK)
		return take;
	if (d->carry_len == d->need) {
		*rc = fxt_record(d, d->carry, d->carry_len);
		d->carry_len = 0;
		d->need = 0;
	}
	return take;
}

/* Decodes records straight from the chunk; returns bytes taken from p. */
static size_t fxt_feed_direct(struct fxt_decoder *d, const uint8_t *p, size_t n, int *rc)
{
	uint64_t size;

	if (n < 8) {
		*rc = fxt_carry(d, p, n);
		return n;
	}
	size = fxt_header(d, p);
	if (d->not_trace)
		return n;
	if (d->ended) {
		d->m->diag.truncated_bytes += n;
		return n;
	}
	if (size > FXT_MAX_RECORD) {
		d->m->diag.oversized_records++;
		d->skip = size;
		d->skip_done = 0;
		return 0;
	}
	if (size > n) {
		d->need = size;
		*rc = fxt_carry(d, p, n);
		return n;
	}
	*rc = fxt_record(d, p, (size_t)size);
	return (size_t)size;
}

int fxt_feed(struct fxt_decoder *d, const uint8_t *buf, size_t n)
{
	int rc = INGEST_OK;
	size_t k;

	while (n > 0 && rc == INGEST_OK && !d->not_trace) {
		if (d->ended) {
			d->m->diag.truncated_bytes += n;
			k = n;
		} else if (d->skip > 0) {
			k = d->skip < n ? (size_t)d->skip : n;
			d->skip -= k;
			d->skip_done += k;
		} else if (d->carry_len > 0) {
			k = fxt_feed_carry(d, buf, n, &rc);
		} else {
			k = fxt_feed_direct(d, buf, n, &rc);
		}
		buf += k;
		n -= k;
		d->pos += k;
		model_checkpoint(d->m); /* between records: fxt_record is done with its events */
	}
	d->st.bytes = d->pos;
	if (d->not_trace)
		return INGEST_ENOTTRACE;
	return rc;
}

int fxt_finish(struct fxt_decoder *d)
{
	if (d->not_trace)
		return INGEST_ENOTTRACE;
	if (!d->started && d->carry_len == 0)
		return INGEST_EEMPTY;
	if (!d->started)
		return INGEST_ENOTTRACE; /* fewer than 8 bytes */
	d->m->diag.truncated_bytes += d->carry_len;
	d->carry_len = 0;
	if (d->skip > 0) { /* an oversized record cut short is a truncation */
		d->m->diag.oversized_records--;
		d->m->diag.truncated_bytes += d->skip_done;
		d->skip = 0;
	}
	d->need = 0;
	return d->m->oom ? INGEST_ENOMEM : INGEST_OK;
}
