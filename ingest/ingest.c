/*
 * The ingest driver: maps (or reads) an archive in chunks, feeds the decoder, builds
 * the database under a temporary name and renames it into place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "behind.h"
#include "build.h"
#include "fxt.h"
#include "sorter.h"
#include "dbwriter.h"
#include "symbols.h"
#include "xray.h"

enum { CHUNK = 1 << 20 };

const char *ingest_strerror(int err)
{
	switch (err) {
	case INGEST_OK:
		return "ok";
	case INGEST_ENOTTRACE:
		return "not a trace";
	case INGEST_EIO:
		return "cannot read the input";
	case INGEST_ENOMEM:
		return "out of memory";
	case INGEST_EDB:
		return "cannot write the database";
	case INGEST_ECANCEL:
		return "cancelled";
	case INGEST_EEMPTY:
		return "the input is empty";
	case INGEST_ECRASH:
		return "the ingest process ended abnormally";
	default:
		return "unknown error";
	}
}

const char *ingest_detect(const uint8_t *buf, size_t n)
{
	if (fxt_detect(buf, n))
		return "fxt";
	if (xray_detect(buf, n))
		return "xray-fdr";
	return NULL;
}

/* One decoder of the formats we read, chosen by content or by the caller. */
struct decoder {
	const char *format;        /* "fxt" or "xray-fdr" */
	struct fxt_decoder fxt;
	struct xray_decoder *xray;
};

/* forced: the caller named the format, which is then not checked. */
static int dec_open(struct decoder *d, struct model *m, const char *format, int forced)
{
	memset(d, 0, sizeof(*d));
	if (strcmp(format, "fxt") == 0) {
		d->format = "fxt";
		fxt_init(&d->fxt, m);
		d->fxt.forced = forced;
		return INGEST_OK;
	}
	if (strcmp(format, "xray-fdr") == 0 || strcmp(format, "xray") == 0) {
		d->format = "xray-fdr";
		d->xray = xray_create(m);
		return d->xray ? INGEST_OK : INGEST_ENOMEM;
	}
	return INGEST_ENOTTRACE;
}

static int dec_feed(struct decoder *d, const uint8_t *p, size_t n)
{
	return d->xray ? xray_feed(d->xray, p, n) : fxt_feed(&d->fxt, p, n);
}

static int dec_finish(struct decoder *d)
{
	return d->xray ? xray_finish(d->xray) : fxt_finish(&d->fxt);
}

static void dec_close(struct decoder *d)
{
	if (d->xray)
		xray_destroy(d->xray);
	else if (d->format)
		fxt_fini(&d->fxt);
	d->xray = NULL;
	d->format = NULL;
}

static int set_error(struct ingest_result *res, int rc, const char *detail)
{
	switch (rc) {
	case INGEST_ENOTTRACE:
		snprintf(res->error, sizeof(res->error),
			 "not a trace: the file is neither a Fuchsia trace (FXT, starting with the magic record "
			 "10 00 04 46 78 54 16 00, a provider or an initialization record) nor an XRay flight-data-recorder log "
			 "(a 32-byte header of version 1 to 5, type 1)");
		break;
	case INGEST_EEMPTY:
		snprintf(res->error, sizeof(res->error), "the file is empty: there is no trace to read");
		break;
	default:
		snprintf(res->error, sizeof(res->error), "%s%s%.200s", ingest_strerror(rc), detail ? ": " : "",
			 detail ? detail : "");
	}
	return rc;
}

/* Feeds one piece of the input and reports progress; returns INGEST_OK or
 * an error. */
static int decode_piece(struct decoder *d, struct model *m, const struct ingest_opts *o, const uint8_t *p, size_t n,
			uint64_t *done, uint64_t size)
{
	int rc = dec_feed(d, p, n);

	*done += n;
	if (rc == INGEST_OK && o && o->progress &&
	    o->progress(o->progress_ctx, INGEST_PHASE_DECODE, *done, size, m->events_total) != 0)
		rc = INGEST_ECANCEL;
	return rc;
}

/*
 * Decodes a regular file through a read-only mapping, CHUNK bytes at a
 * time, without copying it: the decoders read the mapped pages directly,
 * and the pages decoded are dropped behind them so that the input never
 * sits in memory whole. Returns INGEST_OK or an error; -1 when the file
 * cannot be mapped (then it is read instead).
 */
static int decode_mapped(FILE *f, uint64_t size, struct decoder *d, struct model *m, const struct ingest_opts *o,
			 struct ingest_result *res)
{
	const char *format = o ? o->format : NULL;
	uint64_t from = o && o->from_byte < size ? o->from_byte : 0;
	size_t plen = o && o->prefix ? o->prefix_len : 0;
	uint64_t done = 0, off, dropped = from;
	int whole = from == 0 && !(o && o->max_bytes); /* a live trace's snapshots read it again */
	uint8_t *map;
	int rc = INGEST_OK;

	if (size == 0 || size > SIZE_MAX ||
	    (map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fileno(f), 0)) == MAP_FAILED)
		return -1;
	madvise(map, (size_t)size, MADV_SEQUENTIAL);
	if (format == NULL && plen > 0)
		format = ingest_detect(o->prefix, plen < CHUNK ? plen : CHUNK);
	else if (format == NULL)
		format = ingest_detect(map, size < CHUNK ? (size_t)size : CHUNK);
	if (format == NULL)
		rc = INGEST_ENOTTRACE;
	if (rc == INGEST_OK && (rc = dec_open(d, m, format, o && o->format)) == INGEST_OK)
		res->format = d->format;
	if (rc == INGEST_OK && d->xray && (plen > 0 || from > 0))
		rc = INGEST_ENOTTRACE; /* a window is FXT's (ingest.h) */
	if (rc == INGEST_OK && d->xray) /* its buffers are read in place, until dec_finish */
		xray_stable_file(d->xray, map);
	if (rc == INGEST_OK && plen > 0)
		rc = decode_piece(d, m, o, o->prefix, plen, &done, size);
	for (off = from; rc == INGEST_OK && off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;

		rc = decode_piece(d, m, o, map + off, n, &done, size);
		if (!d->xray && off - dropped >= 4 * (uint64_t)CHUNK) { /* the FXT decoder copies what it keeps */
			madvise(map + dropped, (size_t)(off - dropped), MADV_DONTNEED);
			if (whole) /* read once: out of the page cache too (behind.h) */
				behind_forget(fileno(f), dropped, off);
			dropped = off;
		}
	}
	if (rc == INGEST_OK)
		rc = dec_finish(d);
	munmap(map, (size_t)size);
	res->bytes = done;
	return rc == INGEST_OK ? rc : set_error(res, rc, NULL);
}

/* Decodes the whole file into the model; the format comes from the first
 * chunk unless the caller forced one. A regular file is mapped; anything
 * else (a pipe, a file that cannot be mapped) is read in chunks. */
static int decode_file(FILE *f, uint64_t size, struct decoder *d, struct model *m, const struct ingest_opts *o,
		       struct ingest_result *res)
{
	uint8_t *buf;
	const char *format = o ? o->format : NULL;
	uint64_t done = 0;
	size_t n;
	int rc = INGEST_OK;

	if ((rc = decode_mapped(f, size, d, m, o, res)) != -1)
		return rc;
	rc = INGEST_OK;
	if (o && (o->prefix || o->from_byte)) /* windows are read from regular files only */
		return set_error(res, INGEST_EIO, "the input cannot be mapped");
	if ((buf = malloc(CHUNK)) == NULL)
		return set_error(res, INGEST_ENOMEM, NULL);
	n = fread(buf, 1, CHUNK, f);
	if (format == NULL && (format = ingest_detect(buf, n)) == NULL)
		rc = ferror(f) ? INGEST_EIO : n == 0 ? INGEST_EEMPTY : INGEST_ENOTTRACE;
	if (rc == INGEST_OK && (rc = dec_open(d, m, format, o && o->format)) == INGEST_OK)
		res->format = d->format;
	while (rc == INGEST_OK && n > 0) {
		rc = decode_piece(d, m, o, buf, n, &done, size);
		if (rc == INGEST_OK)
			n = fread(buf, 1, CHUNK, f);
	}
	if (rc == INGEST_OK && ferror(f))
		rc = INGEST_EIO;
	if (rc == INGEST_OK)
		rc = dec_finish(d);
	free(buf);
	res->bytes = done;
	return rc == INGEST_OK ? rc : set_error(res, rc, rc == INGEST_EIO ? strerror(errno) : NULL);
}

/* Reads a whole small file (a symbol map) into memory. */
static uint8_t *read_all(const char *path, size_t max, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *p;
	size_t cap = 0, len = 0, k;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			if (cap > max || (p = realloc(buf, cap)) == NULL) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = p;
		}
		if ((k = fread(buf + len, 1, cap - len, f)) == 0)
			break;
		len += k;
	}
	fclose(f);
	*n = len;
	return buf;
}

/* Renames "fn#<id>" strings to the functions' names and notes how many
 * functions are named in meta, in one transaction: all of it or, on any
 * error, nothing (*named 0). Functions that earlier symbols named keep their
 * names (their ids are gone with the "fn#<id>" strings) and stay counted:
 * *named is every named function, not only this map's, so that a later map
 * does not make the trace object say that nothing is named. */
static int apply_names(sqlite3 *db, const struct xray_symbols *sy, uint64_t *named, char *err, size_t errlen)
{
	sqlite3_stmt *sel = NULL, *upd = NULL, *meta = NULL, *prev = NULL;
	int rc = -1, step, begun = 0;

	*named = 0;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'symbols_named'", -1, &prev, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT id, str FROM strings WHERE str GLOB 'fn#[0-9]*'", -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE strings SET str = ? WHERE id = ?", -1, &upd, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta VALUES ('symbols_named', ?)", -1, &meta, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto out_finalize;
	begun = 1;
	if ((step = sqlite3_step(prev)) == SQLITE_ROW && sqlite3_column_int64(prev, 0) > 0)
		*named = (uint64_t)sqlite3_column_int64(prev, 0);
	else if (step != SQLITE_ROW && step != SQLITE_DONE)
		goto out_finalize;
	while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
		unsigned long id = strtoul((const char *)sqlite3_column_text(sel, 1) + 3, NULL, 10);
		const char *name = id <= UINT32_MAX ? xray_symbols_name(sy, (uint32_t)id) : NULL;

		if (name == NULL)
			continue;
		sqlite3_bind_text(upd, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(upd, 2, sqlite3_column_int64(sel, 0));
		if (sqlite3_step(upd) != SQLITE_DONE)
			goto out_finalize;
		sqlite3_reset(upd);
		(*named)++;
	}
	if (step != SQLITE_DONE) /* a read that failed ends the loop as the last row would */
		goto out_finalize;
	sqlite3_bind_int64(meta, 1, (int64_t)*named);
	if (sqlite3_step(meta) != SQLITE_DONE)
		goto out_finalize;
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
out_finalize:
	if (rc != 0) {
		snprintf(err, errlen, "cannot rename functions: %s", sqlite3_errmsg(db));
		if (begun)
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		*named = 0;
	}
	sqlite3_finalize(prev);
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	sqlite3_finalize(meta);
	return rc;
}

int ingest_symbolize(const char *db_path, const char *symbols_path, uint64_t *named, char *err, size_t errlen)
{
	struct xray_symbols *sy = NULL;
	sqlite3 *db = NULL;
	const char *why;
	uint8_t *buf;
	size_t n = 0;
	int rc = -1;

	*named = 0;
	if ((buf = read_all(symbols_path, (size_t)1 << 31, &n)) == NULL) {
		snprintf(err, errlen, "cannot read the symbol file (missing, unreadable or over 2 GiB)");
		return -1;
	}
	if (xray_symbols_load(buf, n, &sy, err, errlen) != 0)
		goto out_free;
	if ((db = tracedb_open_readwrite(db_path, &why)) == NULL) {
		snprintf(err, errlen, "%s", why);
		goto out_free;
	}
	rc = apply_names(db, sy, named, err, errlen);
out_free:
	sqlite3_close(db);
	xray_symbols_free(sy);
	free(buf);
	return rc;
}

static void symbolize_result(const char *db, const char *symbols, struct ingest_result *res)
{
	uint64_t named = 0;

	if (ingest_symbolize(db, symbols, &named, res->symbols_error, sizeof(res->symbols_error)) == 0)
		res->symbols_named = named;
}

/* The sorter's spill file failed: its sentence says which and why (the
 * input itself was read). */
static int spill_error(struct ingest_result *res, const char *why)
{
	snprintf(res->error, sizeof(res->error), "%s", why);
	return INGEST_EIO;
}

static int write_db(struct model *m, struct sorter *so, const char *tmp, const struct ingest_opts *o,
		    struct ingest_result *res)
{
	const char *why = NULL;
	struct dbwriter s;
	int rc = INGEST_OK;

	if ((o && o->commit_every && o->extent_rows ? dbw_open_growing : dbw_open)(&s, tmp, tracedb_page_size(res->bytes)) !=
	    0) {
		rc = set_error(res, INGEST_EDB, s.error);
		goto out_close;
	}
	rc = model_build(m, so, &s, res, o);
	if (rc == INGEST_EIO && sorter_failed(so, &why)) {
		rc = spill_error(res, why);
		goto out_close;
	}
	if (rc == INGEST_OK && o && o->progress && o->progress(o->progress_ctx, INGEST_PHASE_INDEX, 0, 1, 0) != 0)
		rc = INGEST_ECANCEL;
	if (rc == INGEST_OK && (dbw_index(&s) != 0 || dbw_commit(&s) != 0))
		rc = INGEST_EDB;
	if (rc != INGEST_OK)
		set_error(res, rc, rc == INGEST_EDB ? s.error : NULL);
out_close:
	dbw_close(&s);
	return rc;
}

/* The directory of path, where the spill file goes: next to the database,
 * on the disk meant to hold the trace. */
static void dir_of(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, n, ".");
	else if (slash == path)
		snprintf(dir, n, "/");
	else
		snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* Decoding ended; a spill that failed during it is the error to report. */
static int decode_spill_error(struct sorter *so, int rc, struct ingest_result *res)
{
	const char *why;

	if (!sorter_failed(so, &why))
		return rc;
	return spill_error(res, why);
}

/* Times the phases as they are reported, for res->phase_seconds, and
 * hands every report on to the caller's progress function. */
struct phase_clock {
	ingest_progress_fn fn; /* the caller's; may be NULL */
	void *ctx;
	struct ingest_result *res;
	int phase;             /* the phase being timed, -1 before the first */
	double t0;             /* when it began */
};

double ingest_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A report of a new phase (INGEST_PHASES: the ingest returned) closes the one before. */
static void clock_phase(struct phase_clock *c, int phase)
{
	double t;

	if (phase == c->phase)
		return;
	t = ingest_now_s();
	if (c->phase >= 0 && c->phase < INGEST_PHASES)
		c->res->phase_seconds[c->phase] += t - c->t0;
	c->phase = phase;
	c->t0 = t;
}

static int timed_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct phase_clock *c = ctx;

	if (phase >= 0 && phase < INGEST_PHASES)
		clock_phase(c, (int)phase);
	return c->fn ? c->fn(c->ctx, phase, done, total, events) : 0;
}

/* ingest_file's work; ingest_file times its phases. */
static int ingest_timed(const char *in_path, const char *out_db, const struct ingest_opts *opts,
			struct ingest_result *res)
{
	struct decoder d = { 0 };
	struct sorter *so;
	struct model m;
	struct stat st;
	char tmp[4096] = "";
	uint64_t size;
	FILE *f;
	int rc;

	memset(res, 0, sizeof(*res));
	res->format = "unknown";
	if ((f = fopen(in_path, "rb")) == NULL || fstat(fileno(f), &st) != 0) {
		snprintf(res->error, sizeof(res->error), "cannot open %s: %s", in_path, strerror(errno));
		if (f)
			fclose(f);
		return INGEST_EIO;
	}
	dir_of(out_db, tmp, sizeof(tmp));
	if (model_init(&m) != 0 ||
	    (so = sorter_attach(&m, tmp, opts && opts->sort_budget ? opts->sort_budget : SORTER_BUDGET)) == NULL) {
		model_fini(&m);
		fclose(f);
		return set_error(res, INGEST_ENOMEM, NULL);
	}
	tmp[0] = '\0';
	if (!(opts && (opts->max_bytes || opts->from_byte))) /* an archive read whole, maybe just uploaded */
		behind_settle(fileno(f), 0);
	size = (uint64_t)st.st_size;
	if (opts && opts->max_bytes && opts->max_bytes < size)
		size = opts->max_bytes;
	rc = decode_file(f, size, &d, &m, opts, res);
	rc = decode_spill_error(so, rc, res);
	fclose(f);
	dec_close(&d);
	if (rc == INGEST_OK && (size_t)snprintf(tmp, sizeof(tmp), "%s%s", out_db, INGEST_TMP_SUFFIX) >= sizeof(tmp))
		rc = set_error(res, INGEST_EIO, "output path too long");
	if (rc == INGEST_OK)
		rc = write_db(&m, so, tmp, opts, res);
	sorter_free(so);
	model_fini(&m);
	if (rc == INGEST_OK && opts && opts->symbols)
		symbolize_result(tmp, opts->symbols, res);
	if (rc == INGEST_OK && rename(tmp, out_db) != 0)
		rc = set_error(res, INGEST_EDB, strerror(errno));
	if (rc != INGEST_OK && tmp[0])
		remove(tmp); /* only what this call made: tmp is empty when decoding failed */
	return rc;
}

int ingest_file(const char *in_path, const char *out_db, const struct ingest_opts *opts, struct ingest_result *res)
{
	struct ingest_opts o = { 0 };
	struct phase_clock c = { NULL, NULL, res, -1, 0 };
	int rc;

	if (opts)
		o = *opts;
	c.fn = o.progress;
	c.ctx = o.progress_ctx;
	o.progress = timed_progress;
	o.progress_ctx = &c;
	rc = ingest_timed(in_path, out_db, &o, res);
	clock_phase(&c, INGEST_PHASES);
	return rc;
}

static void info_counts(FILE *out, const char *title, const char *const *names, const uint64_t *v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (v[i])
			fprintf(out, "  %-10s %-22s %" PRIu64 "\n", title, names[i] ? names[i] : "unknown", v[i]);
}

static const char *const record_names[16] = { "metadata", "initialization", "string", "thread", "event", "blob",
					      "userspace object", "kernel object", "scheduling", "log", "profiler",
					      NULL, NULL, NULL, NULL, "large" };
static const char *const event_names[16] = { "instant", "counter", "duration begin", "duration end",
					     "duration complete", "async begin", "async instant", "async end",
					     "flow begin", "flow step", "flow end" };
static const char *const meta_names[16] = { NULL, "provider info", "provider section", "provider event",
					    "trace info" };
static const char *const sched_names[16] = { "legacy switch", "context switch", "wakeup" };
static const char *const prof_names[16] = { "module", "mmap", "backtrace" };

static void info_print(FILE *out, const struct decoder *dec, const struct model *m, uint64_t bytes)
{
	const struct fxt_decoder *d = &dec->fxt;
	size_t i;

	if (dec->xray) {
		fprintf(out, "format     xray-fdr\nbytes      %" PRIu64 "\nevents     %" PRIu64 "\nthreads    %zu\n"
			     "arguments  %zu\n",
			bytes, m->events_total, m->threads.len, m->args.len);
		goto out_diag;
	}
	fprintf(out, "format     fxt (%s-endian)\nbytes      %" PRIu64 "\n", d->big_endian ? "big" : "little",
		d->st.bytes);
	info_counts(out, "record", record_names, d->st.records, 16);
	info_counts(out, "event", event_names, d->st.events, 16);
	info_counts(out, "metadata", meta_names, d->st.metadata, 16);
	info_counts(out, "sched", sched_names, d->st.sched, 16);
	info_counts(out, "profiler", prof_names, d->st.profiler, 16);
	fprintf(out, "arguments  %" PRIu64 "\nstrings    %zu distinct\nthreads    %zu\n", d->st.args, m->soff.len,
		m->threads.len);
	for (i = 0; i < m->providers.len; i++) {
		const struct mdl_provider *p = *VEC_AT(&m->providers, struct mdl_provider *, i);

		fprintf(out, "provider   %u \"%s\" ticks/s %" PRIu64 " buffer overflows %" PRIu64 "\n", p->id,
			model_str(m, p->name), p->ticks_per_second, p->overflows);
	}
out_diag:
#define X(n)                                                                                                           \
	if (m->diag.n)                                                                                                 \
		fprintf(out, "diagnostic %-26s %" PRIu64 "\n", #n, m->diag.n);
	MDL_DIAG_LIST(X)
#undef X
}

int ingest_info(const char *in_path, void *out_file, char *err, size_t errlen)
{
	struct ingest_result res;
	struct decoder d = { 0 };
	struct model m;
	FILE *f;
	int rc;

	memset(&res, 0, sizeof(res));
	if ((f = fopen(in_path, "rb")) == NULL) {
		snprintf(err, errlen, "cannot open %s: %s", in_path, strerror(errno));
		return INGEST_EIO;
	}
	if (model_init(&m) != 0) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return INGEST_ENOMEM;
	}
	rc = decode_file(f, 0, &d, &m, NULL, &res);
	fclose(f);
	if (rc == INGEST_OK)
		info_print(out_file, &d, &m, res.bytes);
	else
		snprintf(err, errlen, "%s", res.error);
	dec_close(&d);
	model_fini(&m);
	return rc;
}
