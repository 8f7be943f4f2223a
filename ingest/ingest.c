/*
 * The ingest driver: reads an archive in chunks, feeds the decoder, builds
 * the database under a temporary name and renames it into place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest_internal.h"
#include "store.h"

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
	default:
		return "unknown error";
	}
}

const char *ingest_detect(const uint8_t *buf, size_t n)
{
	return fxt_detect(buf, n) ? "fxt" : NULL;
}

static int set_error(struct ingest_result *res, int rc, const char *detail)
{
	switch (rc) {
	case INGEST_ENOTTRACE:
		snprintf(res->error, sizeof(res->error),
			 "not a trace: the file starts neither with the FXT magic record "
			 "(10 00 04 46 78 54 16 00) nor with a provider record");
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

/* Decodes the whole file into the model. */
static int decode_file(FILE *f, uint64_t size, struct fxt_decoder *d, const struct ingest_opts *o,
		       struct ingest_result *res)
{
	uint8_t *buf = malloc(CHUNK);
	uint64_t done = 0;
	size_t n;
	int rc = INGEST_OK;

	if (buf == NULL)
		return set_error(res, INGEST_ENOMEM, NULL);
	while (rc == INGEST_OK && (n = fread(buf, 1, CHUNK, f)) > 0) {
		rc = fxt_feed(d, buf, n);
		done += n;
		if (rc == INGEST_OK && o && o->progress &&
		    o->progress(o->progress_ctx, INGEST_PHASE_DECODE, done, size) != 0)
			rc = INGEST_ECANCEL;
	}
	if (rc == INGEST_OK && ferror(f))
		rc = INGEST_EIO;
	if (rc == INGEST_OK)
		rc = fxt_finish(d);
	free(buf);
	res->bytes = done;
	return rc == INGEST_OK ? rc : set_error(res, rc, rc == INGEST_EIO ? strerror(errno) : NULL);
}

static int write_db(struct model *m, const char *tmp, const struct ingest_opts *o, struct ingest_result *res)
{
	struct store s;
	int rc = INGEST_OK;

	if (store_open(&s, tmp) != 0) {
		rc = set_error(res, INGEST_EDB, s.error);
		goto out_close;
	}
	rc = model_build(m, &s, res, o ? o->progress : NULL, o ? o->progress_ctx : NULL);
	if (rc == INGEST_OK && o && o->progress && o->progress(o->progress_ctx, INGEST_PHASE_INDEX, 0, 1) != 0)
		rc = INGEST_ECANCEL;
	if (rc == INGEST_OK && (store_index(&s) != 0 || store_commit(&s) != 0))
		rc = INGEST_EDB;
	if (rc != INGEST_OK)
		set_error(res, rc, rc == INGEST_EDB ? s.error : NULL);
out_close:
	store_close(&s);
	return rc;
}

int ingest_file(const char *in_path, const char *out_db, const struct ingest_opts *opts, struct ingest_result *res)
{
	struct fxt_decoder d;
	struct model m;
	struct stat st;
	char tmp[4096];
	FILE *f;
	int rc;

	memset(res, 0, sizeof(*res));
	res->format = "fxt";
	if (opts && opts->format && strcmp(opts->format, "fxt") != 0)
		return set_error(res, INGEST_ENOTTRACE, NULL);
	if ((f = fopen(in_path, "rb")) == NULL || fstat(fileno(f), &st) != 0) {
		snprintf(res->error, sizeof(res->error), "cannot open %s: %s", in_path, strerror(errno));
		if (f)
			fclose(f);
		return INGEST_EIO;
	}
	if (model_init(&m) != 0) {
		fclose(f);
		return set_error(res, INGEST_ENOMEM, NULL);
	}
	fxt_init(&d, &m);
	rc = decode_file(f, (uint64_t)st.st_size, &d, opts, res);
	fclose(f);
	fxt_fini(&d);
	if (rc == INGEST_OK && (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", out_db) >= sizeof(tmp))
		rc = set_error(res, INGEST_EIO, "output path too long");
	if (rc == INGEST_OK)
		rc = write_db(&m, tmp, opts, res);
	model_fini(&m);
	if (rc == INGEST_OK && rename(tmp, out_db) != 0)
		rc = set_error(res, INGEST_EDB, strerror(errno));
	if (rc != INGEST_OK)
		remove(tmp);
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

static void info_print(FILE *out, const struct fxt_decoder *d, const struct model *m)
{
	size_t i;

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
#define X(n)                                                                                                           \
	if (m->diag.n)                                                                                                 \
		fprintf(out, "diagnostic %-26s %" PRIu64 "\n", #n, m->diag.n);
	MDL_DIAG_LIST(X)
#undef X
}

int ingest_info(const char *in_path, void *out_file, char *err, size_t errlen)
{
	struct ingest_result res;
	struct fxt_decoder d;
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
	fxt_init(&d, &m);
	rc = decode_file(f, 0, &d, NULL, &res);
	fclose(f);
	if (rc == INGEST_OK)
		info_print(out_file, &d, &m);
	else
		snprintf(err, errlen, "%s", res.error);
	fxt_fini(&d);
	model_fini(&m);
	return rc;
}
