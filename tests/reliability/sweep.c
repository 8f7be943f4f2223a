/*
 * sweep: damaged archives through ingest, in-process and through the server.
 *
 *   sweep [--quick] [--work DIR] [--limit SECONDS] [--server BIN --sample N] FILE|DIR...
 *
 * For each input archive (a file, or every file of a directory: generated
 * FXT and XRay logs and the committed corpora) it makes variants, each from
 * a seed so that a run is repeatable:
 *   trunc    the archive cut at an offset: header edges, record edges and
 *            their neighbours, random places;
 *   flip     1 to 8 bits flipped, half of them in the first 256 bytes;
 *   stomp    1 to 4 aligned 8-byte words set to 0, all ones or random;
 *   inflate  a record's size made larger than it is: the FXT header's size
 *            field (+1 word, doubled, the largest), XRay BufferExtents,
 *            custom and typed event sizes (+1, +8, doubled, 2^31 - 1,
 *            2^32 - 1, negative), the XRay header's buffer size;
 *   dup      a record, a run of records, or the whole body duplicated in
 *            place;
 * and every fourth variant is also ingested with the format forced to the
 * other decoder. Each one goes through ingest_file() in this process,
 * which must end in one of two ways:
 *   INGEST_OK      a database at the output path with the schema version,
 *                  passing PRAGMA quick_check, holding as many slices as the
 *                  result says, with the diagnostics counters filled in, and
 *                  no temporary file left;
 *   an error       INGEST_ENOTTRACE or INGEST_EEMPTY with a sentence in
 *                  res.error and no file at the output path.
 * Anything else is a violation: another error code (out of memory or a
 * database error from a small file), a crash (ASan/UBSan abort, the case is
 * named), a case slower than --limit seconds (a watchdog names it and exits
 * 3), or a leak (LeakSanitizer, when linked in, is asked every 16 cases and
 * names the last of them; its report has the allocation's stack).
 * Each violating input is kept in the work directory as fail-N.bin with a
 * line telling how to replay it.
 *
 * With --server BIN (the trace-server binary) it then starts the server on
 * a loopback port with a fresh --data and uploads about N cases drawn at
 * random (from a fixed seed) with ?wait=1 (every fifth with format= forced):
 * each must answer 201 with a ready trace whose /tracks answers 200 JSON, or
 * 422 with a failed trace whose error has a code and a message; the server
 * must still answer and stop cleanly (exit 0) afterwards, and its log must
 * hold no sanitizer report.
 *
 * --quick makes fewer variants per archive (for CI). Prints a table by
 * variant kind and "sweep: N cases, ..., V violations" last; exits 0 when
 * there were none, 1 otherwise, 2 on usage, 3 on a hang.
 *
 * Build (ASan + UBSan + LSan):
 *   make build/asan/libtrace.a B=build/asan SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" CFLAGS="-O1 -g"
 *   cc -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
 *     $(pkg-config --cflags libcjson sqlite3) -o build/reliability/sweep tests/reliability/sweep.c \
 *     build/asan/libtrace.a $(pkg-config --libs libmicrohttpd libcjson sqlite3) -lstdc++ -lpthread -lm
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "../../ingest/ingest.h"
#include "../server_util.h"

enum vkind { V_TRUNC, V_FLIP, V_STOMP, V_INFLATE, V_DUP, V_NKINDS };
static const char *const kind_names[V_NKINDS] = { "trunc", "flip", "stomp", "inflate", "dup" };
/* variants per archive and kind: quick, full */
static const unsigned per_kind[2][V_NKINDS] = { { 6, 6, 4, 5, 4 }, { 48, 64, 24, 40, 24 } };

enum fmt { F_OTHER, F_FXT, F_XRAY };

struct rec {
	size_t off, len;
	unsigned size_kind; /* which size field inflate may touch; 0 none */
};

/* One input archive. */
struct base {
	char *path;
	uint8_t *p;
	size_t n;
	int fmt;
	struct rec *recs; /* record boundaries as far as a walk finds them */
	size_t nrec;
};

struct buf {
	uint8_t *p;
	size_t n, cap;
};

/* A variant: which archive, which kind, which seed. */
struct vcase {
	unsigned base, kind, k;
};

struct stats {
	unsigned long cases, ok, failed, violations;
	double max_s, total_s;
};

static struct {
	const char *work;
	double limit;
	int quick;
	const char *server;
	unsigned sample;
	struct base *bases;
	size_t nbases;
	struct vcase *cases;
	size_t ncases, capcases;
	struct stats by_kind[V_NKINDS], forced, all;
	unsigned long fail_files;
	unsigned long ran; /* cases run so far */
	int leaked;        /* a leak was found: no more leak checks */
} G = { .work = NULL, .limit = 20 };

/* The case running now, for the watchdog and the crash handlers. */
static char g_desc[700];
static _Atomic double g_started; /* 0 when no case runs */
static char g_input[4096];

/* LeakSanitizer's interface, when linked in (weak: absent without it). */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

/* ---- bytes ------------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = UINT64_C(1469598103934665603);

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return h;
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void st64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void st32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void buf_set(struct buf *b, const uint8_t *p, size_t n)
{
	if (n + 16 > b->cap) {
		b->cap = n + 16 > 2 * b->cap ? n + 16 : 2 * b->cap;
		if ((b->p = realloc(b->p, b->cap)) == NULL)
			abort();
	}
	memcpy(b->p, p, n);
	b->n = n;
}

/* Inserts n bytes at off (the bytes may lie in b itself). */
static void buf_insert(struct buf *b, size_t off, const uint8_t *p, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);

	if (copy == NULL)
		abort();
	memcpy(copy, p, n);
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		if ((b->p = realloc(b->p, b->cap)) == NULL)
			abort();
	}
	memmove(b->p + off + n, b->p + off, b->n - off);
	memcpy(b->p + off, copy, n);
	b->n += n;
	free(copy);
}

/* ---- record walks ----------------------------------------------------------- */

static void rec_add(struct base *b, size_t off, size_t len, unsigned size_kind)
{
	if (b->nrec % 256 == 0 && (b->recs = realloc(b->recs, (b->nrec + 256) * sizeof(*b->recs))) == NULL)
		abort();
	b->recs[b->nrec++] = (struct rec){ off, len, size_kind };
}

enum { SK_FXT = 1, SK_FXT_LARGE, SK_XR_EXTENTS, SK_XR_EVENT };

/* FXT little-endian: header word, size in words at bits 4..15 (4..35 for
 * large records, type 15). Stops at the first record that does not fit. */
static void walk_fxt(struct base *b)
{
	size_t off = 0;

	while (b->n - off >= 8) {
		uint64_t h = ld64(b->p + off);
		int large = (h & 0xf) == 15;
		uint64_t words = large ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfff;

		if (words == 0 || words > (b->n - off) / 8)
			break;
		rec_add(b, off, (size_t)words * 8, large ? SK_FXT_LARGE : SK_FXT);
		off += (size_t)words * 8;
	}
}

/* XRay: a 32-byte header, then 16-byte metadata records (byte 0 odd) and
 * 8-byte function records; custom (kind 5) and typed (kind 8) events carry
 * a payload of the size in data bytes 0..3. Version 1 filler after
 * EndOfBuffer is walked as records too, which is good enough here. */
static void walk_xray(struct base *b)
{
	size_t off = 32;

	while (off < b->n) {
		unsigned kind = b->p[off] >> 1;
		size_t len = 8;
		unsigned sk = 0;

		if (b->p[off] & 1) {
			len = 16;
			if (b->n - off >= 16 && (kind == 5 || kind == 8)) {
				int32_t sz = (int32_t)ld32(b->p + off + 1);

				if (sz > 0 && (size_t)sz <= b->n - off - 16)
					len += (size_t)sz;
				sk = SK_XR_EVENT;
			} else if (kind == 7) {
				sk = SK_XR_EXTENTS;
			}
		}
		if (len > b->n - off)
			break;
		rec_add(b, off, len, sk);
		off += len;
	}
}

static int detect(const uint8_t *p, size_t n)
{
	const char *f = ingest_detect(p, n);

	return f == NULL ? F_OTHER : strcmp(f, "fxt") == 0 ? F_FXT : F_XRAY;
}

/* ---- variants --------------------------------------------------------------- */

static size_t pick_rec_off(const struct base *b, uint64_t *rng)
{
	return b->nrec ? b->recs[rng_next(rng) % b->nrec].off : (size_t)(rng_next(rng) % (b->n ? b->n : 1));
}

static void var_trunc(const struct base *b, unsigned k, uint64_t *rng, struct buf *o, char *d, size_t dn)
{
	static const size_t edges[] = { 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 47, 48 };
	size_t off;

	if (k < sizeof(edges) / sizeof(edges[0]) && edges[k] < b->n)
		off = edges[k];
	else if (k % 3 == 0)
		off = b->n - 1 - rng_next(rng) % (b->n < 64 ? b->n : 64);
	else if (k % 3 == 1 && b->nrec)
		off = pick_rec_off(b, rng) + (size_t)(rng_next(rng) % 3) - 1;
	else
		off = (size_t)(rng_next(rng) % b->n);
	if (off >= b->n)
		off = b->n - 1;
	buf_set(o, b->p, off);
	snprintf(d, dn, "trunc@%zu", off);
}

static void var_flip(const struct base *b, uint64_t *rng, struct buf *o, char *d, size_t dn)
{
	unsigned i, flips = 1 + (unsigned)(rng_next(rng) % 8);
	size_t first = 0;

	buf_set(o, b->p, b->n);
	for (i = 0; i < flips; i++) {
		size_t span = rng_next(rng) % 2 && b->n > 256 ? 256 : b->n, at = (size_t)(rng_next(rng) % span);

		o->p[at] ^= (uint8_t)(1u << (rng_next(rng) % 8));
		if (i == 0)
			first = at;
	}
	snprintf(d, dn, "flip %u bits, first @%zu", flips, first);
}

static void var_stomp(const struct base *b, uint64_t *rng, struct buf *o, char *d, size_t dn)
{
	unsigned i, words = 1 + (unsigned)(rng_next(rng) % 4);
	size_t at = 0;

	buf_set(o, b->p, b->n);
	for (i = 0; i < words && b->n >= 8; i++) {
		uint64_t how = rng_next(rng) % 3;

		at = (size_t)(rng_next(rng) % (b->n / 8)) * 8;
		st64(o->p + at, how == 0 ? 0 : how == 1 ? UINT64_MAX : rng_next(rng));
	}
	snprintf(d, dn, "stomp %u words, last @%zu", words, at);
}

/* The records whose size field inflate can change, or all when none. */
static const struct rec *pick_sized(const struct base *b, uint64_t *rng)
{
	size_t i, n = 0, want;

	for (i = 0; i < b->nrec; i++)
		n += b->recs[i].size_kind != 0;
	if (n == 0)
		return NULL;
	want = (size_t)(rng_next(rng) % n);
	for (i = 0; i < b->nrec; i++)
		if (b->recs[i].size_kind != 0 && want-- == 0)
			return &b->recs[i];
	return NULL;
}

static void var_inflate(const struct base *b, unsigned k, uint64_t *rng, struct buf *o, char *d, size_t dn)
{
	static const uint32_t big32[] = { 0x7fffffffu, 0xffffffffu, 0x80000000u, 0x10000u };
	const struct rec *r = pick_sized(b, rng);

	buf_set(o, b->p, b->n);
	if (b->fmt == F_XRAY && (k % 5 == 4 || r == NULL) && b->n >= 32) {
		uint64_t v = k % 3 == 0 ? 0 : k % 3 == 1 ? 1 : UINT64_MAX / 2;

		st64(o->p + 16, v);
		snprintf(d, dn, "inflate xray header buffer size to %" PRIu64, v);
	} else if (r && (r->size_kind == SK_FXT || r->size_kind == SK_FXT_LARGE)) {
		uint64_t h = ld64(o->p + r->off), words = r->len / 8, w;
		unsigned how = (unsigned)(rng_next(rng) % 3);

		if (r->size_kind == SK_FXT_LARGE) {
			w = how == 0 ? words + 1 : how == 1 ? words * 2 : 0xffffffffu;
			h = (h & ~(UINT64_C(0xffffffff) << 4)) | (w & 0xffffffffu) << 4;
		} else {
			w = how == 0 ? words + 1 : how == 1 ? words * 2 : 0xfff;
			h = (h & ~(UINT64_C(0xfff) << 4)) | (w & 0xfff) << 4;
		}
		st64(o->p + r->off, h);
		snprintf(d, dn, "inflate fxt record @%zu from %" PRIu64 " to %" PRIu64 " words", r->off, words, w);
	} else if (r && r->size_kind == SK_XR_EXTENTS) {
		uint64_t v = ld64(o->p + r->off + 1), w;
		unsigned how = (unsigned)(rng_next(rng) % 4);

		w = how == 0 ? v + 1 : how == 1 ? v + 8 : how == 2 ? v * 2 : UINT64_MAX;
		memcpy(o->p + r->off + 1, &w, 8); /* little-endian host */
		snprintf(d, dn, "inflate xray extents @%zu from %" PRIu64 " to %" PRIu64, r->off, v, w);
	} else if (r && r->size_kind == SK_XR_EVENT) {
		uint32_t v = ld32(o->p + r->off + 1), w;
		unsigned how = (unsigned)(rng_next(rng) % 7);

		w = how == 0 ? v + 1 : how == 1 ? v + 8 : how == 2 ? v * 2 : big32[how - 3];
		st32(o->p + r->off + 1, w);
		snprintf(d, dn, "inflate xray event size @%zu from %u to %u", r->off, v, w);
	} else {
		size_t at = b->n >= 4 ? (size_t)(rng_next(rng) % (b->n / 4)) * 4 : 0;

		if (b->n >= 4)
			st32(o->p + at, big32[k % 4]);
		snprintf(d, dn, "inflate a word @%zu to %u", at, big32[k % 4]);
	}
}

static void var_dup(const struct base *b, unsigned k, uint64_t *rng, struct buf *o, char *d, size_t dn)
{
	buf_set(o, b->p, b->n);
	if (k % 6 == 5 || b->nrec == 0) {
		size_t body = b->fmt == F_XRAY ? 32 : b->nrec ? b->recs[0].len : 0;

		if (body > b->n)
			body = 0;
		buf_insert(o, b->n, b->p + body, b->n - body);
		snprintf(d, dn, "dup the body after %zu bytes", body);
	} else {
		size_t i = (size_t)(rng_next(rng) % b->nrec), j = i + (k % 3 == 0 ? (size_t)(rng_next(rng) % 16) : 0);
		size_t off, len;

		if (j >= b->nrec)
			j = b->nrec - 1;
		off = b->recs[i].off;
		len = b->recs[j].off + b->recs[j].len - off;
		buf_insert(o, off + len, b->p + off, len);
		snprintf(d, dn, "dup records %zu..%zu (@%zu, %zu bytes)", i, j, off, len);
	}
}

/* Makes case c's bytes and description. */
static void make_case(const struct vcase *c, struct buf *o, char *d, size_t dn)
{
	const struct base *b = &G.bases[c->base];
	uint64_t rng = hash_str(b->path) ^ (uint64_t)c->kind * UINT64_C(0x1000193) ^ (uint64_t)c->k << 32;
	char what[384];

	switch (c->kind) {
	case V_TRUNC:
		var_trunc(b, c->k, &rng, o, what, sizeof(what));
		break;
	case V_FLIP:
		var_flip(b, &rng, o, what, sizeof(what));
		break;
	case V_STOMP:
		var_stomp(b, &rng, o, what, sizeof(what));
		break;
	case V_INFLATE:
		var_inflate(b, c->k, &rng, o, what, sizeof(what));
		break;
	default:
		var_dup(b, c->k, &rng, o, what, sizeof(what));
	}
	snprintf(d, dn, "%s: %s #%u: %s", b->path, kind_names[c->kind], c->k, what);
}

/* The format forced on every fourth case: the other decoder. */
static const char *forced_format(const struct vcase *c)
{
	if (c->k % 4 != 3)
		return NULL;
	return G.bases[c->base].fmt == F_FXT ? "xray-fdr" : "fxt";
}

/* ---- checks ------------------------------------------------------------------ */

static int file_exists(const char *p)
{
	return access(p, F_OK) == 0;
}

/* Checks a database ingest said it wrote; NULL when fine, else why. */
static const char *check_db(const char *path, const struct ingest_result *res)
{
	static char why[256];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	const char *r = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		r = "the database does not open";
		goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT (SELECT user_version FROM pragma_user_version), "
				   "(SELECT quick_check FROM pragma_quick_check), (SELECT count(*) FROM slices)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		snprintf(why, sizeof(why), "the database cannot be read: %s", sqlite3_errmsg(db));
		r = why;
	} else if (sqlite3_column_int(st, 0) != TRACEDB_SCHEMA_VERSION) {
		snprintf(why, sizeof(why), "schema version %d, not %d", sqlite3_column_int(st, 0), TRACEDB_SCHEMA_VERSION);
		r = why;
	} else if (strcmp((const char *)sqlite3_column_text(st, 1), "ok") != 0) {
		snprintf(why, sizeof(why), "quick_check: %.200s", sqlite3_column_text(st, 1));
		r = why;
	} else if ((uint64_t)sqlite3_column_int64(st, 2) != res->counts.slices) {
		snprintf(why, sizeof(why), "%lld slices stored, %" PRIu64 " counted", sqlite3_column_int64(st, 2),
			 res->counts.slices);
		r = why;
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}

/* Checks one ingest's outcome; NULL when it is one of the two allowed. */
static const char *check_outcome(int rc, const struct ingest_result *res, const char *db, const char *tmp)
{
	static char why[512];

	if (file_exists(tmp))
		return "a temporary database was left behind";
	if (rc == INGEST_OK) {
		if (!file_exists(db))
			return "INGEST_OK but no database";
		if (res->ndiag == 0 || res->format == NULL)
			return "INGEST_OK without diagnostics or format";
		return check_db(db, res);
	}
	if (file_exists(db))
		return "an error, yet a database at the output path";
	if (res->error[0] == '\0' || strlen(res->error) < 10)
		return "an error without a sentence";
	if (rc != INGEST_ENOTTRACE && rc != INGEST_EEMPTY) {
		snprintf(why, sizeof(why), "unexpected error %d (%s): %s", rc, ingest_strerror(rc), res->error);
		return why;
	}
	return NULL;
}

static void keep_failure(const struct buf *in, const char *desc, const char *why, const char *fmt)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/fail-%lu.bin", G.work, ++G.fail_files);
	if ((f = fopen(path, "wb")) != NULL) {
		fwrite(in->p, 1, in->n, f);
		fclose(f);
	}
	fprintf(stderr, "VIOLATION: %s\n  %s\n  input kept: %s (replay: trace-server ingest %s%s%s -o /tmp/x.db)\n",
		desc, why, path, path, fmt ? " --format " : "", fmt ? fmt : "");
}

static void stats_add(struct stats *s, int ok, int violation, double dt)
{
	s->cases++;
	s->ok += ok && !violation;
	s->failed += !ok && !violation;
	s->violations += violation != 0;
	s->total_s += dt;
	if (dt > s->max_s)
		s->max_s = dt;
}

/* LeakSanitizer is asked every 16 cases (a check scans the heap, which
 * costs more than a small ingest) and after the last one. */
static int leak_check_due(const struct vcase *c)
{
	G.ran++;
	return __lsan_do_recoverable_leak_check != NULL && !G.leaked &&
	       (G.ran % 16 == 0 || c == &G.cases[G.ncases - 1]);
}

/* Runs one case in this process. */
static void run_case(const struct vcase *c, struct buf *in)
{
	struct ingest_result *res = calloc(1, sizeof(*res));
	struct ingest_opts o = { 0 };
	char db[4200], tmp[4300], desc[600];
	const char *why;
	double t0, dt;
	FILE *f;
	int rc;

	if (res == NULL)
		abort();
	make_case(c, in, desc, sizeof(desc));
	o.format = forced_format(c);
	snprintf(g_desc, sizeof(g_desc), "%s%s%s%s", desc, o.format ? " (forced " : "", o.format ? o.format : "",
		 o.format ? ")" : "");
	if ((f = fopen(g_input, "wb")) == NULL || fwrite(in->p, 1, in->n, f) != in->n || fclose(f) != 0) {
		fprintf(stderr, "sweep: cannot write %s: %s\n", g_input, strerror(errno));
		exit(1);
	}
	snprintf(db, sizeof(db), "%s/case.db", G.work);
	snprintf(tmp, sizeof(tmp), "%s.tmp", db);
	unlink(db);
	t0 = su_now();
	atomic_store(&g_started, t0);
	rc = ingest_file(g_input, db, &o, res);
	dt = su_now() - t0;
	why = check_outcome(rc, res, db, tmp);
	atomic_store(&g_started, 0.0);
	if (leak_check_due(c) && __lsan_do_recoverable_leak_check() != 0) {
		G.leaked = 1; /* a leak stays leaked: later checks would report it again */
		if (why == NULL)
			why = "LeakSanitizer found a leak (report above) in this case or one of the 15 before it";
	}
	if (why)
		keep_failure(in, g_desc, why, o.format);
	stats_add(&G.by_kind[c->kind], rc == INGEST_OK, why != NULL, dt);
	if (o.format)
		stats_add(&G.forced, rc == INGEST_OK, why != NULL, dt);
	stats_add(&G.all, rc == INGEST_OK, why != NULL, dt);
	unlink(db);
	free(res);
}

/* ---- watchdog and crash reports ------------------------------------------- */

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		double t = atomic_load(&g_started);

		if (t > 0 && su_now() - t > G.limit) {
			fprintf(stderr, "HANG: a case ran over %.0f s: %s\n  input: %s\n", G.limit, g_desc, g_input);
			fprintf(stdout, "sweep: hang\n");
			fflush(NULL);
			_exit(3);
		}
		su_sleep_ms(100);
	}
	return NULL;
}

static void say(const char *s)
{
	ssize_t k = write(2, s, strlen(s));

	(void)k;
}

/* Called by ASan before its report; also the fatal signal handler. */
void __asan_on_error(void);
void __asan_on_error(void)
{
	if (atomic_load(&g_started) > 0) {
		say("CRASH in case: ");
		say(g_desc);
		say("\n  input: ");
		say(g_input);
		say("\n");
	}
}

static void on_fatal(int sig)
{
	__asan_on_error();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- inputs -------------------------------------------------------------------- */

static int add_file(const char *path)
{
	struct base b = { 0 };
	FILE *f = fopen(path, "rb");
	struct stat st;

	if (f == NULL || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		if (f)
			fclose(f);
		return f ? 0 : -1;
	}
	b.n = (size_t)st.st_size;
	b.p = malloc(b.n ? b.n : 1);
	if (b.p == NULL || fread(b.p, 1, b.n, f) != b.n) {
		fclose(f);
		return -1;
	}
	fclose(f);
	if (b.n == 0) {
		free(b.p);
		return 0;
	}
	b.path = strdup(path);
	b.fmt = detect(b.p, b.n);
	if (b.fmt == F_FXT)
		walk_fxt(&b);
	else if (b.fmt == F_XRAY)
		walk_xray(&b);
	if ((G.bases = realloc(G.bases, (G.nbases + 1) * sizeof(*G.bases))) == NULL)
		abort();
	G.bases[G.nbases++] = b;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_path(const char *path)
{
	struct stat st;
	struct dirent *e;
	char **names = NULL, full[4096];
	size_t n = 0, i;
	DIR *d;
	int rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "sweep: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return add_file(path);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
		names[n++] = strdup(full);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		rc |= add_file(names[i]);
		free(names[i]);
	}
	free(names);
	return rc;
}

static void plan_cases(void)
{
	size_t b;
	unsigned kind, k;

	for (b = 0; b < G.nbases; b++)
		for (kind = 0; kind < V_NKINDS; kind++)
			for (k = 0; k < per_kind[!G.quick][kind]; k++) {
				if (G.ncases == G.capcases) {
					G.capcases = G.capcases ? G.capcases * 2 : 1024;
					if ((G.cases = realloc(G.cases, G.capcases * sizeof(*G.cases))) == NULL)
						abort();
				}
				G.cases[G.ncases++] = (struct vcase){ (unsigned)b, kind, k };
			}
}

/* ---- through the server -------------------------------------------------------- */

static const cJSON *jget(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Checks the reply to an upload with ?wait=1; NULL when it is allowed. */
static const char *check_upload(int port, const struct su_resp *r, char *why, size_t wn)
{
	cJSON *j = r->body ? cJSON_Parse(r->body) : NULL;
	const cJSON *st = jget(j, "status"), *err = jget(j, "error");
	const char *out = NULL;

	if (j == NULL) {
		snprintf(why, wn, "status %d with a body that is not JSON: %.200s", r->status, r->body ? r->body : "");
		return why;
	}
	if (r->status == 201 && cJSON_IsString(st) && strcmp(st->valuestring, "ready") == 0 && cJSON_IsNull(err)) {
		char path[96];
		struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
		struct su_resp t;
		cJSON *tj;

		snprintf(path, sizeof(path), "/api/traces/%d/tracks", (int)cJSON_GetNumberValue(jget(j, "id")));
		if (su_request(port, &q, &t, 60000) != 0 || t.status != 200 || (tj = cJSON_Parse(t.body)) == NULL) {
			snprintf(why, wn, "ready, but /tracks answered %d", t.status);
			out = why;
		} else {
			cJSON_Delete(tj);
		}
		su_resp_free(&t);
	} else if (r->status == 422 && cJSON_IsString(st) && strcmp(st->valuestring, "failed") == 0 &&
		   cJSON_IsString(jget(err, "code")) && cJSON_IsString(jget(err, "message")) &&
		   strlen(jget(err, "message")->valuestring) >= 10 && strlen(jget(err, "code")->valuestring) > 0) {
		out = NULL;
	} else {
		snprintf(why, wn, "status %d: %.300s", r->status, r->body);
		out = why;
	}
	cJSON_Delete(j);
	return out;
}

static int log_has_report(const char *log)
{
	char line[1024];
	FILE *f = fopen(log, "r");
	int bad = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "ERROR: AddressSanitizer") || strstr(line, "runtime error:") ||
		    strstr(line, "ERROR: LeakSanitizer")) {
			fprintf(stderr, "server log: %s", line);
			bad = 1;
		}
	fclose(f);
	return bad;
}

static int run_server_sample(void)
{
	char data[4200], log[4200], exe[4096], *argv[8];
	struct su_server s;
	struct buf in = { 0 };
	size_t i, step = G.ncases / (G.sample ? G.sample : 1);
	uint64_t pick = UINT64_C(0x5a3b1e);
	unsigned long up = 0, ready = 0, failed = 0, bad = 0;
	double t0 = su_now();
	int rc;

	snprintf(data, sizeof(data), "%s/server-data", G.work);
	snprintf(log, sizeof(log), "%s/server.log", G.work);
	snprintf(exe, sizeof(exe), "%s", G.server);
	argv[0] = exe;
	argv[1] = "serve";
	argv[2] = "--port";
	argv[3] = "0";
	argv[4] = "--data";
	argv[5] = data;
	argv[6] = NULL;
	unlink(log);
	if (su_server_start(&s, argv, log, 30) != 0) {
		fprintf(stderr, "sweep: the server did not start (log %s)\n", log);
		return 1;
	}
	for (i = 0; i < G.ncases && up < G.sample; i++) {
		const struct vcase *c;

		if (rng_next(&pick) % (step ? step : 1) != 0) /* one case in step, drawn, not aliased with the kinds */
			continue;
		c = &G.cases[i];
		const char *fmt = up % 5 == 4 ? (G.bases[c->base].fmt == F_XRAY ? "fxt" : "xray") : NULL;
		char desc[600], path[160], why[512];
		struct su_req q = { "POST", path, "Content-Type: application/octet-stream\r\n", NULL, 0, 0, 0 };
		struct su_resp r;

		make_case(c, &in, desc, sizeof(desc));
		if (in.n == 0)
			continue;
		snprintf(path, sizeof(path), "/api/traces?wait=1&name=sweep-%zu%s%s", i, fmt ? "&format=" : "",
			 fmt ? fmt : "");
		q.body = in.p;
		q.body_len = in.n;
		up++;
		if (su_request(s.port, &q, &r, 120000) != 0) {
			fprintf(stderr, "VIOLATION (server): %s%s%s: no reply within 120 s\n", desc,
				fmt ? " format=" : "", fmt ? fmt : "");
			bad++;
			continue;
		}
		if (check_upload(s.port, &r, why, sizeof(why)) != NULL) {
			fprintf(stderr, "VIOLATION (server): %s%s%s: %s\n", desc, fmt ? " format=" : "", fmt ? fmt : "",
				why);
			bad++;
		} else {
			ready += r.status == 201;
			failed += r.status == 422;
		}
		su_resp_free(&r);
	}
	{
		struct su_req q = { "GET", "/api/traces", NULL, NULL, 0, 0, 0 };
		struct su_resp r;

		if (su_request(s.port, &q, &r, 30000) != 0 || r.status != 200) {
			fprintf(stderr, "VIOLATION (server): the library list does not answer after the uploads\n");
			bad++;
		}
		su_resp_free(&r);
	}
	rc = su_server_stop(&s, SIGTERM);
	if (rc != 0) {
		fprintf(stderr, "VIOLATION (server): it exited with %d on SIGTERM\n", rc);
		bad++;
	}
	bad += (unsigned long)log_has_report(log);
	printf("server: %lu uploads in %.1f s: %lu ready, %lu failed with a reason, %lu violations\n", up,
	       su_now() - t0, ready, failed, bad);
	free(in.p);
	return bad ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------------ */

static void print_stats(const char *name, const struct stats *s)
{
	printf("  %-8s %7lu %7lu %7lu %5lu %9.3f %9.1f\n", name, s->cases, s->ok, s->failed, s->violations, s->max_s,
	       s->total_s);
}

static int usage(void)
{
	fprintf(stderr, "usage: sweep [--quick] [--work DIR] [--limit SECONDS] [--server BIN --sample N] FILE|DIR...\n");
	return 2;
}

int main(int argc, char **argv)
{
	char workbuf[] = "/tmp/sweep.XXXXXX";
	struct buf in = { 0 };
	pthread_t wd;
	size_t i;
	int a, rc = 0;

	for (a = 1; a < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "--quick") == 0)
			G.quick = 1;
		else if (strcmp(argv[a], "--work") == 0 && a + 1 < argc)
			G.work = argv[++a];
		else if (strcmp(argv[a], "--limit") == 0 && a + 1 < argc)
			G.limit = atof(argv[++a]);
		else if (strcmp(argv[a], "--server") == 0 && a + 1 < argc)
			G.server = argv[++a];
		else if (strcmp(argv[a], "--sample") == 0 && a + 1 < argc)
			G.sample = (unsigned)atoi(argv[++a]);
		else
			return usage();
	}
	if (a == argc || G.limit <= 0)
		return usage();
	if (G.work == NULL && (G.work = mkdtemp(workbuf)) == NULL)
		return 1;
	mkdir(G.work, 0755);
	snprintf(g_input, sizeof(g_input), "%s/case.in", G.work);
	for (; a < argc; a++)
		if (add_path(argv[a]) != 0)
			return 1;
	plan_cases();
	signal(SIGSEGV, on_fatal);
	signal(SIGABRT, on_fatal);
	signal(SIGBUS, on_fatal);
	pthread_create(&wd, NULL, watchdog, NULL);
	printf("sweep: %zu archives, %zu cases (%s), limit %.0f s a case, work %s\n", G.nbases, G.ncases,
	       G.quick ? "quick" : "full", G.limit, G.work);
	fflush(stdout);
	for (i = 0; i < G.ncases; i++)
		run_case(&G.cases[i], &in);
	printf("  %-8s %7s %7s %7s %5s %9s %9s\n", "kind", "cases", "ready", "failed", "bad", "max s", "total s");
	for (i = 0; i < V_NKINDS; i++)
		print_stats(kind_names[i], &G.by_kind[i]);
	print_stats("forced", &G.forced);
	print_stats("all", &G.all);
	if (G.server && G.sample)
		rc = run_server_sample();
	printf("sweep: %lu cases, %lu ready, %lu failed cleanly, %lu violations%s\n", G.all.cases, G.all.ok,
	       G.all.failed, G.all.violations, rc ? "; server sample FAILED" : "");
	free(in.p);
	for (i = 0; i < G.nbases; i++) {
		free(G.bases[i].p);
		free(G.bases[i].path);
		free(G.bases[i].recs);
	}
	free(G.bases);
	free(G.cases);
	return G.all.violations || rc ? 1 : 0;
}
