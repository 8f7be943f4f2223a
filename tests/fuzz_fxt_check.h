/*
 * The FXT decoder's properties, shared by two libFuzzer targets:
 * tests/fuzz_fxt_decode.c (the decoder alone, at decoder speed) and
 * tests/fuzz_fxt.c (the decoder, then the build into SQLite). Static
 * functions in a header so that each target is one file; the including
 * file defines FZ_NAME and includes fuzz_util.h first.
 *
 * fz_fxt_check() decodes an input three times in memory:
 *   A. whole, in one fxt_feed() call;
 *   B. in up to five chunks whose split points come from a hash of the
 *      input (one byte at a time for some small inputs), so that the carry
 *      path joining records split across chunks runs on every record type;
 *   C. one fxt_feed() call per record, cut at the record boundaries found by
 *      an independent framing walk (fz_walk).
 * These properties must hold, or it abort()s with a message:
 *   P1 A, B and C agree: same return code and, for a trace, the same
 *      statistics, diagnostics and model, compared part by part by digest.
 *   P2 Framing: A counted exactly the records, by type, that the walk found,
 *      consumed every byte, and counted as truncated or oversized exactly
 *      the bytes and records the walk did; the return code is the one the
 *      first word calls for (empty, not a trace, or ok).
 *   P3 Accounting, record by record (in C): each record is counted once; a
 *      record counted unknown or malformed leaves no item, argument or
 *      arena byte behind; a decoded record of types 0-3 adds no item, any
 *      other decoded record exactly one (an event, switch, log, object,
 *      blob or profiler record).
 */
#ifndef TESTS_FUZZ_FXT_CHECK_H
#define TESTS_FUZZ_FXT_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../ingest/fxt.h"
#include "../ingest/reader.h"

#define FZ_MAGIC UINT64_C(0x0016547846040010)

enum {
	FZ_MAX_CUTS = 4, /* split points of decode B */
	FZ_BYTEWISE_MAX = 1024
};


/* One decode: the model, the decoder (finished) and its return code. */
struct fz_decode {
	struct model m;
	struct fxt_decoder d;
	int rc; /* first error of fxt_feed, else fxt_finish's result */
};

/* What the framing walk finds, from record headers alone. */
struct fz_frames {
	int rc;               /* INGEST_OK, INGEST_EEMPTY or INGEST_ENOTTRACE */
	int big_endian;       /* the first word is the byte-swapped magic */
	uint64_t records[16]; /* whole records by type, oversized ones excluded */
	uint64_t oversized;   /* whole records over FXT_MAX_RECORD */
	uint64_t truncated;   /* bytes from where framing stops to the end */
};

/* The parts of a decode compared between A, B and C. */
enum {
	PART_STATS,
	PART_DIAG,
	PART_STRINGS,
	PART_THREADS,
	PART_EVENTS,
	PART_ARGS,
	PART_BYTES,
	PART_SCHED,
	PART_LOGS,
	PART_OBJECTS,
	PART_BLOBS,
	PART_PROFILER,
	PART_PROVIDERS,
	NPARTS
};
static const char *const part_names[NPARTS] = { "stats",  "diagnostics", "strings", "threads", "events",
						"args",   "byte arena",  "sched",   "logs",    "objects",
						"blobs",  "profiler",    "providers" };

/* ---- framing walk -------------------------------------------------------- */

/* The size in bytes the header at p declares, or 0 when fewer than 8 bytes
 * remain or the size is 0: framing stops there. */
static uint64_t fz_record_size(const uint8_t *p, size_t left, int big_endian)
{
	uint64_t h;

	if (left < 8)
		return 0;
	h = rd_load64(p, big_endian);
	return ((h & 0xf) == 15 ? rd_bits(h, 4, 35) : rd_bits(h, 4, 15)) * 8;
}

/* Walks the record headers as the specification frames them (and as the
 * decoder's header comment says it departs): no field is decoded. */
static void fz_walk(const uint8_t *p, size_t n, struct fz_frames *f)
{
	uint64_t size;
	size_t pos = 0;

	memset(f, 0, sizeof(*f));
	if (n < 8 || !fxt_detect(p, 8)) {
		f->rc = n == 0 ? INGEST_EEMPTY : INGEST_ENOTTRACE;
		return;
	}
	f->big_endian = rd_load64(p, 1) == FZ_MAGIC;
	while ((size = fz_record_size(p + pos, n - pos, f->big_endian)) != 0 && size <= n - pos) {
		if (size > FXT_MAX_RECORD)
			f->oversized++;
		else
			f->records[p[pos + (f->big_endian ? 7 : 0)] & 0xf]++;
		pos += (size_t)size;
	}
	f->truncated = n - pos;
}

/* The name of a decoder return code (ingest_strerror() is the driver's,
 * which the decoder target does not link). */
static const char *fz_rc_name(int rc)
{
	switch (rc) {
	case INGEST_OK:
		return "ok";
	case INGEST_ENOTTRACE:
		return "not a trace";
	case INGEST_ENOMEM:
		return "out of memory";
	case INGEST_EEMPTY:
		return "empty";
	default:
		return "other";
	}
}

/* P2: decode A against the walk. */
static void fz_check_frames(const struct fz_decode *z, const struct fz_frames *f, size_t n)
{
	unsigned i;

	if (z->rc != f->rc)
		fz_fail("decode returned %d (%s), the first word calls for %d (%s)", z->rc, fz_rc_name(z->rc), f->rc,
			fz_rc_name(f->rc));
	if (f->rc != INGEST_OK)
		return;
	for (i = 0; i < 16; i++)
		if (z->d.st.records[i] != f->records[i])
			fz_fail("%llu records of type %u decoded, %llu framed", (unsigned long long)z->d.st.records[i],
				i, (unsigned long long)f->records[i]);
	if (z->m.diag.truncated_bytes != f->truncated)
		fz_fail("truncated_bytes %llu, framing leaves %llu", (unsigned long long)z->m.diag.truncated_bytes,
			(unsigned long long)f->truncated);
	if (z->m.diag.oversized_records != f->oversized)
		fz_fail("oversized_records %llu, framed %llu", (unsigned long long)z->m.diag.oversized_records,
			(unsigned long long)f->oversized);
	if (z->d.st.bytes != n)
		fz_fail("%llu bytes consumed of %zu", (unsigned long long)z->d.st.bytes, n);
}

/* ---- decodes ------------------------------------------------------------- */

static void fz_begin(struct fz_decode *z)
{
	if (model_init(&z->m) != 0)
		fz_fail("model_init: out of memory");
	fxt_init(&z->d, &z->m);
	z->rc = INGEST_OK;
}

/* Feeds like ingest's decode_file: nothing more after the first error. */
static void fz_feed(struct fz_decode *z, const uint8_t *p, size_t n)
{
	if (z->rc == INGEST_OK)
		z->rc = fxt_feed(&z->d, p, n);
}

static void fz_end(struct fz_decode *z)
{
	if (z->rc == INGEST_OK)
		z->rc = fxt_finish(&z->d);
	fxt_fini(&z->d);
}

/* Decode B: chunks cut where a hash of the input says, possibly empty. */
static void fz_decode_chunks(struct fz_decode *z, const uint8_t *p, size_t n)
{
	uint64_t s = fz_hash(p, n);
	size_t cut[FZ_MAX_CUTS + 1], ncut = (size_t)(fz_next(&s) % (FZ_MAX_CUTS + 1)), i, at = 0;

	fz_begin(z);
	if (n <= FZ_BYTEWISE_MAX && fz_next(&s) % 8 == 0) {
		for (i = 0; i < n; i++)
			fz_feed(z, p + i, 1);
		fz_end(z);
		return;
	}
	for (i = 0; i < ncut; i++)
		cut[i] = (size_t)(fz_next(&s) % (n + 1));
	qsort(cut, ncut, sizeof(cut[0]), fz_size_cmp);
	cut[ncut] = n;
	for (i = 0; i <= ncut; i++) {
		fz_feed(z, p + at, cut[i] - at);
		at = cut[i];
	}
	fz_end(z);
}

/* Items one record may add to the model. */
static size_t fz_items(const struct model *m)
{
	return m->events.len + m->sched.len + m->logs.len + m->kobjs.len + m->uobjs.len + m->blobs.len +
	       m->profs.len;
}

/* P3: feeds one whole record of n bytes and checks what it left behind. */
static void fz_feed_record(struct fz_decode *z, const uint8_t *p, size_t n, unsigned type)
{
	const struct model *m = &z->m;
	size_t items = fz_items(m), args = m->args.len, bytes = m->bytes.len;
	uint64_t failed = m->diag.unknown_records + m->diag.malformed_records, seen = z->d.st.records[type];
	uint64_t now_failed;

	fz_feed(z, p, n);
	if (z->rc != INGEST_OK)
		return;
	now_failed = m->diag.unknown_records + m->diag.malformed_records;
	if (z->d.st.records[type] != seen + 1 || now_failed - failed > 1)
		fz_fail("a record of type %u was counted %llu times, %llu times as failed", type,
			(unsigned long long)(z->d.st.records[type] - seen), (unsigned long long)(now_failed - failed));
	if ((now_failed != failed || type <= 3) && (fz_items(m) != items || m->args.len != args || m->bytes.len != bytes))
		fz_fail("a %s record of type %u left %zu items, %zu args, %zu arena bytes behind",
			now_failed != failed ? "failed" : "decoded", type, fz_items(m) - items, m->args.len - args,
			m->bytes.len - bytes);
	if (now_failed == failed && type > 3 && fz_items(m) != items + 1)
		fz_fail("a decoded record of type %u added %zu items, not 1", type, fz_items(m) - items);
}

/* Decode C: one feed per whole record, then the rest in one piece. */
static void fz_decode_records(struct fz_decode *z, const uint8_t *p, size_t n, const struct fz_frames *f)
{
	uint64_t size;
	size_t pos = 0;

	fz_begin(z);
	while (f->rc == INGEST_OK && z->rc == INGEST_OK &&
	       (size = fz_record_size(p + pos, n - pos, f->big_endian)) != 0 && size <= n - pos &&
	       size <= FXT_MAX_RECORD) {
		fz_feed_record(z, p + pos, (size_t)size, p[pos + (f->big_endian ? 7 : 0)] & 0xf);
		pos += (size_t)size;
	}
	fz_feed(z, p + pos, n - pos);
	fz_end(z);
}

/* ---- digests --------------------------------------------------------------- */

static void mix(uint64_t *h, uint64_t v)
{
	*h = (*h ^ v) * UINT64_C(0x100000001B3);
	*h ^= *h >> 29;
}

static void digest_stats(const struct fxt_decoder *d, uint64_t *h)
{
	unsigned i;

	for (i = 0; i < 16; i++) {
		mix(h, d->st.records[i]);
		mix(h, d->st.events[i]);
		mix(h, d->st.metadata[i]);
		mix(h, d->st.sched[i]);
		mix(h, d->st.profiler[i]);
	}
	mix(h, d->st.args);
	mix(h, d->st.bytes);
	mix(h, (uint64_t)d->big_endian);
}

static void digest_diag(const struct model *m, uint64_t *h)
{
#define X(n) mix(h, m->diag.n);
	MDL_DIAG_LIST(X)
#undef X
	mix(h, m->seq);
	mix(h, (uint64_t)m->oom);
}

static void digest_strings(const struct model *m, uint64_t dig[NPARTS])
{
	uint64_t *h = &dig[PART_STRINGS], *t = &dig[PART_THREADS];
	size_t i;

	mix(h, m->slen);
	mix(h, fz_hash((const uint8_t *)m->sdata, m->slen));
	for (i = 0; i < m->soff.len; i++)
		mix(h, *VEC_AT(&m->soff, uint64_t, i));
	for (i = 0; i < m->threads.len; i++) {
		mix(t, VEC_AT(&m->threads, struct mdl_thread, i)->pid);
		mix(t, VEC_AT(&m->threads, struct mdl_thread, i)->tid);
	}
}

static void digest_events(const struct model *m, uint64_t dig[NPARTS])
{
	uint64_t *h = &dig[PART_EVENTS], *a8 = &dig[PART_ARGS], *by = &dig[PART_BYTES];
	size_t i;

	for (i = 0; i < m->events.len; i++) {
		const struct mdl_ev *e = VEC_AT(&m->events, struct mdl_ev, i);

		mix(h, (uint64_t)e->ts);
		mix(h, e->extra);
		mix(h, (uint64_t)e->seq << 32 | e->thread);
		mix(h, (uint64_t)e->cat << 32 | e->name);
		mix(h, (uint64_t)e->args << 16 | (uint64_t)e->kind << 8 | e->nargs);
	}
	for (i = 0; i < m->args.len; i++) {
		const struct mdl_arg *a = VEC_AT(&m->args, struct mdl_arg, i);

		mix(a8, (uint64_t)a->key << 32 | a->len);
		mix(a8, a->type);
		mix(a8, a->type == MDL_ARG_STRING ? a->v.str : a->v.u);
	}
	mix(by, m->bytes.len);
	mix(by, fz_hash(m->bytes.data, m->bytes.len));
}

static void digest_sched_logs(const struct model *m, uint64_t dig[NPARTS])
{
	uint64_t *h = &dig[PART_SCHED], *l8 = &dig[PART_LOGS];
	size_t i;

	for (i = 0; i < m->sched.len; i++) {
		const struct mdl_sched *s = &((const struct mdl_sched *)m->sched.buf)[i];

		mix(h, (uint64_t)s->ts);
		mix(h, (uint64_t)s->seq << 32 | (uint64_t)s->cpu << 16 | (uint64_t)s->out_state << 8 | s->legacy);
		mix(h, (uint64_t)s->out_thread << 32 | s->in_thread);
		mix(h, (uint64_t)(uint32_t)s->in_priority << 8 | s->in_idle);
	}
	for (i = 0; i < m->logs.len; i++) {
		const struct mdl_log *l = VEC_AT(&m->logs, struct mdl_log, i);

		mix(l8, (uint64_t)l->ts);
		mix(l8, (uint64_t)l->seq << 32 | l->thread);
		mix(l8, l->msg);
	}
}

static void digest_objects(const struct model *m, uint64_t *h)
{
	size_t i;

	for (i = 0; i < m->kobjs.len; i++) {
		const struct mdl_kobj *o = VEC_AT(&m->kobjs, struct mdl_kobj, i);

		mix(h, o->koid);
		mix(h, o->process);
		mix(h, (uint64_t)o->type << 32 | o->name);
		mix(h, (uint64_t)o->args << 32 | o->nargs);
	}
	for (i = 0; i < m->uobjs.len; i++) {
		const struct mdl_uobj *o = VEC_AT(&m->uobjs, struct mdl_uobj, i);

		mix(h, o->pid);
		mix(h, o->ptr);
		mix(h, o->name);
		mix(h, (uint64_t)o->args << 32 | o->nargs);
	}
}

static void digest_blobs(const struct model *m, uint64_t *h)
{
	size_t i;

	for (i = 0; i < m->blobs.len; i++) {
		const struct mdl_blob *b = VEC_AT(&m->blobs, struct mdl_blob, i);

		mix(h, (uint64_t)b->ts);
		mix(h, b->off);
		mix(h, b->len);
		mix(h, (uint64_t)b->thread << 32 | b->cat);
		mix(h, (uint64_t)b->name << 32 | b->args);
		mix(h, (uint64_t)b->nargs << 16 | (uint64_t)b->kind << 8 | b->type);
	}
}

static void digest_profiler(const struct model *m, uint64_t *h)
{
	size_t i;

	for (i = 0; i < m->profs.len; i++) {
		const struct mdl_prof *p = VEC_AT(&m->profs, struct mdl_prof, i);

		mix(h, (uint64_t)p->ts);
		mix(h, (uint64_t)p->thread << 32 | (uint64_t)p->kind << 24 | (uint64_t)p->flags << 16 | p->module);
		mix(h, p->name);
		mix(h, p->off);
		mix(h, p->len);
		mix(h, p->start);
		mix(h, p->range);
		mix(h, p->vaddr);
	}
}

static void digest_providers(const struct model *m, uint64_t *h)
{
	size_t i, j, k;

	for (i = 0; i < m->providers.len; i++) {
		const struct mdl_provider *p = *VEC_AT(&m->providers, struct mdl_provider *, i);

		mix(h, (uint64_t)p->id << 32 | p->name);
		mix(h, p->ticks_per_second);
		mix(h, p->overflows);
		for (j = 0; j < sizeof(p->strings) / sizeof(p->strings[0]); j++)
			for (k = 0; p->strings[j] && k < 256; k++)
				mix(h, p->strings[j][k]);
		for (j = 0; j < 256; j++)
			mix(h, p->threads[j]);
	}
}

static void fz_digest(const struct fz_decode *z, uint64_t dig[NPARTS])
{
	unsigned i;

	for (i = 0; i < NPARTS; i++)
		dig[i] = UINT64_C(14695981039346656037);
	digest_stats(&z->d, &dig[PART_STATS]);
	digest_diag(&z->m, &dig[PART_DIAG]);
	digest_strings(&z->m, dig);
	digest_events(&z->m, dig);
	digest_sched_logs(&z->m, dig);
	digest_objects(&z->m, &dig[PART_OBJECTS]);
	digest_blobs(&z->m, &dig[PART_BLOBS]);
	digest_profiler(&z->m, &dig[PART_PROFILER]);
	digest_providers(&z->m, &dig[PART_PROVIDERS]);
}

/* P1: decode `other` (B or C) against decode A. */
static void fz_check_same(const struct fz_decode *a, const struct fz_decode *other, const char *what)
{
	uint64_t da[NPARTS], db[NPARTS];
	unsigned i;

	if (a->rc != other->rc)
		fz_fail("decode %s returned %d, the whole decode %d", what, other->rc, a->rc);
	if (a->rc != INGEST_OK)
		return;
	fz_digest(a, da);
	fz_digest(other, db);
	for (i = 0; i < NPARTS; i++)
		if (da[i] != db[i])
			fz_fail("decode %s differs from the whole decode in its %s", what, part_names[i]);
}


/*
 * Checks P1-P3 on the input. Returns decode A in *a (its model is the
 * caller's to model_fini()); B and C are freed.
 */
static void fz_fxt_check(const uint8_t *data, size_t size, struct fz_decode *a)
{
	struct fz_decode b, c;
	struct fz_frames f;

	fz_walk(data, size, &f);
	fz_begin(a);
	fz_feed(a, data, size);
	fz_end(a);
	fz_check_frames(a, &f, size);
	fz_decode_chunks(&b, data, size);
	fz_check_same(a, &b, "in chunks");
	model_fini(&b.m);
	fz_decode_records(&c, data, size, &f);
	fz_check_same(a, &c, "record by record");
	model_fini(&c.m);
}

#endif
