/*
 * libFuzzer target for the XRay FDR decoder (ingest/xray.c) and the
 * function-name tables (ingest/symbols.c). It asserts properties, not only
 * "no crash".
 *
 * Each input is decoded three times in memory:
 *   A. whole, in one xray_feed() call;
 *   B. in up to five chunks whose split points come from a hash of the
 *      input (one byte at a time for some small inputs), so that every
 *      partial header, extents record and buffer is carried across calls,
 *      the input declared stable (xray_stable_input: buffers read in place,
 *      not copied);
 *   C. in chunks of 16 bytes, the size of a metadata record.
 * These properties must hold, or the target abort()s with a message:
 *   P1 A, B and C agree: the same return code and the same model (events,
 *      arguments, byte arena, strings, threads, diagnostics).
 *   P2 The return code is the one the header calls for: empty, not a trace
 *      (fewer than 32 bytes, or a version other than 1-5, or a type other
 *      than 1), else ok.
 *   P3 The model is well formed: every event is a complete or begin event
 *      "fn#<id>", an instant "custom-event" / "typed-event", or a "cpu"
 *      counter, all in category "xray", on a known thread; arguments and
 *      blob payloads lie inside their arrays, and the payloads tile the
 *      byte arena exactly; no more calls than 8-byte records fit in the
 *      input, no more arguments than bytes; truncated bytes fit in it.
 *   P4 xray_symbols_load() on the same bytes returns a table and no error,
 *      or an error string and no table; every name it gives is a C string
 *      (strlen runs under ASan).
 *
 * Build with libFuzzer (clang):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
 *     tests/fuzz_xray.c ingest/xray.c ingest/symbols.c ingest/model.c ingest/util.c -lstdc++
 * or replay a corpus without it: link tests/fuzz_replay.c instead of
 * -fsanitize=fuzzer and run it on tests/corpus/xray.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ingest/symbols.h"
#include "../ingest/xray.h"
#include "../ingest/reader.h"
#define FZ_NAME "fuzz_xray"
#include "fuzz_util.h"

enum {
	FZ_MAX_CUTS = 4,     /* split points of decode B */
	FZ_BYTEWISE_MAX = 2048,
	FZ_NAMES_CHECKED = 256
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_decode {
	struct model m;
	int rc; /* first error of xray_feed, else xray_finish's result */
};

/* Decodes p, feeding the pieces between the sorted cuts[0 .. ncut); p is
 * declared stable when asked. */
static void fz_decode(struct fz_decode *z, const uint8_t *p, size_t n, const size_t *cuts, size_t ncut,
		      int stable)
{
	struct xray_decoder *d;
	size_t i, at = 0;

	if (model_init(&z->m) != 0 || (d = xray_create(&z->m)) == NULL)
		fz_fail("out of memory");
	if (stable)
		xray_stable_input(d, p);
	z->rc = INGEST_OK;
	for (i = 0; i <= ncut && z->rc == INGEST_OK; i++) {
		size_t to = i < ncut ? cuts[i] : n;

		z->rc = xray_feed(d, p + at, to - at);
		at = to;
	}
	if (z->rc == INGEST_OK)
		z->rc = xray_finish(d);
	xray_destroy(d);
}

/* Decode B's split points: a few from the hash, or every byte. */
static size_t *fz_cuts_b(const uint8_t *p, size_t n, size_t *ncut)
{
	uint64_t s = fz_hash(p, n);
	size_t *cuts, i;

	if (n <= FZ_BYTEWISE_MAX && fz_next(&s) % 8 == 0) {
		*ncut = n;
		if ((cuts = calloc(n + 1, sizeof(*cuts))) == NULL)
			fz_fail("out of memory");
		for (i = 0; i < n; i++)
			cuts[i] = i;
		return cuts;
	}
	*ncut = (size_t)(fz_next(&s) % (FZ_MAX_CUTS + 1));
	if ((cuts = calloc(FZ_MAX_CUTS + 1, sizeof(*cuts))) == NULL)
		fz_fail("out of memory");
	for (i = 0; i < *ncut; i++)
		cuts[i] = (size_t)(fz_next(&s) % (n + 1));
	qsort(cuts, *ncut, sizeof(*cuts), fz_size_cmp);
	return cuts;
}

static size_t *fz_cuts_c(size_t n, size_t *ncut)
{
	size_t *cuts = calloc(n / 16 + 1, sizeof(*cuts)), i;

	if (cuts == NULL)
		fz_fail("out of memory");
	for (i = 0, *ncut = 0; i + 16 < n; i += 16)
		cuts[(*ncut)++] = i + 16;
	return cuts;
}

static void fz_same_vec(const char *what, const struct vec *a, const struct vec *b)
{
	if (a->len != b->len || (a->len > 0 && memcmp(a->data, b->data, a->len * a->size) != 0))
		fz_fail("%s differ between whole and chunked decodes (%zu, %zu items)", what, a->len, b->len);
}

/* P1 */
static void fz_same(const struct fz_decode *a, const struct fz_decode *b, const char *how)
{
	if (a->rc != b->rc)
		fz_fail("decode %s returned %d, the whole decode %d", how, b->rc, a->rc);
	if (a->rc != INGEST_OK)
		return;
	fz_same_vec("events", &a->m.events, &b->m.events);
	fz_same_vec("arguments", &a->m.args, &b->m.args);
	fz_same_vec("byte arenas", &a->m.bytes, &b->m.bytes);
	fz_same_vec("threads", &a->m.threads, &b->m.threads);
	fz_same_vec("string offsets", &a->m.soff, &b->m.soff);
	if (a->m.slen != b->m.slen || memcmp(a->m.sdata, b->m.sdata, a->m.slen) != 0)
		fz_fail("strings differ between whole and chunked (%s) decodes", how);
	if (memcmp(&a->m.diag, &b->m.diag, sizeof(a->m.diag)) != 0)
		fz_fail("diagnostics differ between whole and chunked (%s) decodes", how);
}

/* P2 */
static void fz_check_rc(const struct fz_decode *z, const uint8_t *p, size_t n)
{
	int want = INGEST_OK;

	if (n == 0)
		want = INGEST_EEMPTY;
	else if (n < 32 || rd_load16(p, 0) < 1 || rd_load16(p, 0) > 5 || rd_load16(p + 2, 0) != 1)
		want = INGEST_ENOTTRACE;
	if (z->rc != want)
		fz_fail("decode returned %d, the header calls for %d", z->rc, want);
	if (want == INGEST_OK && !xray_detect(p, 32))
		fz_fail("a header the decoder took is not detected");
}

/* P3: one event. Returns the payload bytes it holds. */
static uint64_t fz_check_event(const struct model *m, const struct mdl_ev *e, uint64_t *calls)
{
	const char *name = model_str(m, e->name);
	uint64_t payload = 0;
	unsigned i;

	if (strcmp(model_str(m, e->cat), "xray") != 0 || e->thread >= m->threads.len)
		fz_fail("event %u: category %s, thread %u of %zu", e->seq, model_str(m, e->cat), e->thread, m->threads.len);
	if ((uint64_t)e->args + e->nargs > m->args.len)
		fz_fail("event %u: arguments %u+%u past %zu", e->seq, e->args, e->nargs, m->args.len);
	/* calls come at their enter, their ends in m->ends (model.h) */
	if (e->kind == MDL_EV_CALL && e->extra >= m->ends.len)
		fz_fail("event %u: end %llu past %zu", e->seq, (unsigned long long)e->extra, m->ends.len);
	if (e->kind == MDL_EV_CALL)
		*calls += 1;
	if ((e->kind == MDL_EV_CALL && strncmp(name, "fn#", 3) != 0) ||
	    (e->kind == MDL_EV_COUNTER && (strcmp(name, "cpu") != 0 || e->nargs != 1)) ||
	    (e->kind == MDL_EV_INSTANT && strcmp(name, "custom-event") != 0 && strcmp(name, "typed-event") != 0) ||
	    (e->kind != MDL_EV_CALL && e->kind != MDL_EV_COUNTER && e->kind != MDL_EV_INSTANT))
		fz_fail("event %u: kind %u named %s", e->seq, e->kind, name);
	for (i = 0; i < e->nargs; i++) {
		const struct mdl_arg *a = VEC_AT(&m->args, struct mdl_arg, e->args + i);

		if (a->type == MDL_ARG_BLOB) {
			if (a->v.u + a->len > m->bytes.len)
				fz_fail("event %u: payload %llu+%u past %zu", e->seq, (unsigned long long)a->v.u, a->len,
					m->bytes.len);
			payload += a->len;
		} else if (a->type != MDL_ARG_U64) {
			fz_fail("event %u: argument of type %u", e->seq, a->type);
		}
	}
	return payload;
}

static void fz_check_model(const struct fz_decode *z, size_t n)
{
	const struct model *m = &z->m;
	uint64_t payload = 0, calls = 0;
	size_t i;

	if (z->rc != INGEST_OK)
		return;
	for (i = 0; i < m->events.len; i++)
		payload += fz_check_event(m, VEC_AT(&m->events, struct mdl_ev, i), &calls);
	if (payload != m->bytes.len)
		fz_fail("payloads hold %llu bytes, the arena %zu", (unsigned long long)payload, m->bytes.len);
	if (calls != m->ends.len)
		fz_fail("%llu calls, %zu ends", (unsigned long long)calls, m->ends.len);
	if (calls > n / 8)
		fz_fail("%llu calls from %zu bytes", (unsigned long long)calls, n);
	if (m->diag.truncated_bytes > n)
		fz_fail("%llu truncated bytes of %zu", (unsigned long long)m->diag.truncated_bytes, n);
	if (m->args.len > n)
		fz_fail("%zu arguments from %zu bytes", m->args.len, n);
}

/* P4 */
static void fz_check_symbols(const uint8_t *p, size_t n)
{
	struct xray_symbols *s = NULL;
	char err[256] = "";
	uint32_t id, max;
	size_t total = 0;
	int rc = xray_symbols_load(p, n, &s, err, sizeof(err));

	if (rc != INGEST_OK) {
		if (s != NULL || err[0] == '\0' || strlen(err) >= sizeof(err))
			fz_fail("symbols: error %d without a message, or with a table", rc);
		return;
	}
	max = xray_symbols_max_id(s);
	for (id = 0; id <= max && id < FZ_NAMES_CHECKED; id++) {
		const char *name = xray_symbols_name(s, id);

		total += name != NULL ? strlen(name) : 0;
	}
	if (max > 0 && total == SIZE_MAX)
		fz_fail("symbols: impossible name lengths");
	xray_symbols_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_decode a, b, c;
	size_t *cuts, ncut;

	fz_decode(&a, data, size, NULL, 0, 0);
	fz_check_rc(&a, data, size);
	fz_check_model(&a, size);
	cuts = fz_cuts_b(data, size, &ncut);
	fz_decode(&b, data, size, cuts, ncut, 1);
	free(cuts);
	fz_same(&a, &b, "B");
	cuts = fz_cuts_c(size, &ncut);
	fz_decode(&c, data, size, cuts, ncut, 0);
	free(cuts);
	fz_same(&a, &c, "C");
	model_fini(&a.m);
	model_fini(&b.m);
	model_fini(&c.m);
	fz_check_symbols(data, size);
	return 0;
}
