/*
 * dump: decodes an XRay FDR log with ingest/xray.c into the neutral model
 * and prints every thread's slices, named with ingest/symbols.c. It is the
 * checker's view of what we decode (tests/xray/run.sh compares it with
 * `llvm-xray convert`) and the timed side of bench/xray/run.sh, until
 * `trace-server ingest` reads XRay.
 *
 *   dump [--symbols BINARY|YAML] [--chunk BYTES] [--summary] LOG
 *
 * Output, one line each:
 *   format xray-fdr threads N events N args N         (always)
 *   calls N with_args N instants N counters N         (always)
 *   diag NAME VALUE                                   (non-zero counters)
 *   thread PID TID SLICES                             (not with --summary)
 *   TS DUR DEPTH NAME                                 (each slice of it)
 * TS is in ns; DUR is -1 for a call still open at the end. Slices are in
 * (ts, longest first, file order) order and DEPTH is the nesting the build
 * stage gives them: a slice encloses the ones that start before it ends.
 * The log is read in chunks of --chunk bytes (default 1 MiB), as ingest
 * streams it. Exits 0, 1 when the log or the symbols cannot be read or
 * decoded, 2 on usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ingest/symbols.h"
#include "../../ingest/xray.h"

/* One slice of the thread being printed. */
struct dslice {
	int64_t ts, end; /* end = INT64_MAX while open */
	uint32_t seq, name;
};

struct dopts {
	const char *symbols, *log;
	size_t chunk;
	int summary;
};

/* The ingest error codes this program can see (ingest.c is not linked). */
static const char *dump_strerror(int rc)
{
	switch (rc) {
	case INGEST_ENOTTRACE:
		return "not an XRay FDR log";
	case INGEST_EIO:
		return "read error";
	case INGEST_ENOMEM:
		return "out of memory";
	case INGEST_EEMPTY:
		return "empty file";
	default:
		return "error";
	}
}

static int dslice_cmp(const void *a, const void *b)
{
	const struct dslice *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Reads a whole (small) file; NULL on failure. */
static uint8_t *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out_close;
	if ((buf = malloc((size_t)len + 1)) != NULL && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	*n = (size_t)len;
out_close:
	fclose(f);
	return buf;
}

static const char *slice_name(const struct model *m, const struct xray_symbols *sym, uint32_t name)
{
	const char *s = model_str(m, name), *n;

	if (sym != NULL && strncmp(s, "fn#", 3) == 0 && (n = xray_symbols_name(sym, (uint32_t)strtoul(s + 3, NULL, 10))))
		return n;
	return s;
}

/* Whether e is a call, and its end (INT64_MAX when it never returned):
 * XRay's calls come as MDL_EV_CALL, their ends in m->ends (model.h). */
static int call_end(const struct model *m, const struct mdl_ev *e, int64_t *end)
{
	if (e->kind == MDL_EV_COMPLETE) {
		*end = (int64_t)e->extra;
		return 1;
	}
	if (e->kind == MDL_EV_BEGIN) {
		*end = INT64_MAX;
		return 1;
	}
	if (e->kind != MDL_EV_CALL)
		return 0;
	*end = e->extra < m->ends.len ? *VEC_AT(&m->ends, int64_t, e->extra) : INT64_MIN;
	if (*end == INT64_MIN)
		*end = INT64_MAX;
	return 1;
}

/* Prints the slices of thread t. */
static int print_thread(const struct model *m, const struct xray_symbols *sym, uint32_t t, struct dslice *v)
{
	const struct mdl_thread *th = VEC_AT(&m->threads, struct mdl_thread, t);
	int64_t *stack;
	size_t i, n = 0, depth = 0;

	for (i = 0; i < m->events.len; i++) {
		const struct mdl_ev *e = VEC_AT(&m->events, struct mdl_ev, i);
		int64_t end;

		if (e->thread != t || !call_end(m, e, &end))
			continue;
		v[n].ts = e->ts;
		v[n].end = end;
		v[n].seq = e->seq;
		v[n++].name = e->name;
	}
	qsort(v, n, sizeof(*v), dslice_cmp);
	if ((stack = malloc((n + 1) * sizeof(*stack))) == NULL)
		return -1;
	printf("thread %llu %llu %zu\n", (unsigned long long)th->pid, (unsigned long long)th->tid, n);
	for (i = 0; i < n; i++) {
		while (depth > 0 && stack[depth - 1] <= v[i].ts)
			depth--;
		printf("%lld %lld %zu %s\n", (long long)v[i].ts,
		       v[i].end == INT64_MAX ? -1LL : (long long)(v[i].end - v[i].ts), depth,
		       slice_name(m, sym, v[i].name));
		stack[depth++] = v[i].end;
	}
	free(stack);
	return 0;
}

static void print_model(const struct model *m)
{
	size_t i, calls = 0, with_args = 0, instants = 0, counters = 0;

	for (i = 0; i < m->events.len; i++) {
		const struct mdl_ev *e = VEC_AT(&m->events, struct mdl_ev, i);
		int64_t end;
		int call = call_end(m, e, &end);

		calls += call;
		with_args += call && e->nargs > 0;
		instants += e->kind == MDL_EV_INSTANT;
		counters += e->kind == MDL_EV_COUNTER;
	}
	printf("format %s threads %zu events %zu args %zu\n", m->format, m->threads.len, m->events.len, m->args.len);
	printf("calls %zu with_args %zu instants %zu counters %zu\n", calls, with_args, instants, counters);
#define X(n)                                                                                                           \
	if (m->diag.n)                                                                                                 \
		printf("diag %s %llu\n", #n, (unsigned long long)m->diag.n);
	MDL_DIAG_LIST(X)
#undef X
}

/* Streams the log through the decoder. Returns an INGEST_ code. */
static int decode(struct model *m, const char *path, size_t chunk)
{
	struct xray_decoder *d = xray_create(m);
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(chunk);
	size_t k;
	int rc = INGEST_ENOMEM;

	if (d == NULL || buf == NULL)
		goto out;
	rc = INGEST_EIO;
	if (f == NULL)
		goto out;
	rc = INGEST_OK;
	while (rc == INGEST_OK && (k = fread(buf, 1, chunk, f)) > 0)
		rc = xray_feed(d, buf, k);
	if (rc == INGEST_OK)
		rc = ferror(f) ? INGEST_EIO : xray_finish(d);
out:
	if (f != NULL)
		fclose(f);
	free(buf);
	xray_destroy(d);
	return rc;
}

static struct xray_symbols *load_symbols(const char *path)
{
	struct xray_symbols *s = NULL;
	char err[256];
	size_t n = 0;
	uint8_t *buf = read_file(path, &n);

	if (buf == NULL) {
		fprintf(stderr, "dump: %s: cannot read\n", path);
		return NULL;
	}
	if (xray_symbols_load(buf, n, &s, err, sizeof(err)) != INGEST_OK)
		fprintf(stderr, "dump: %s: %s\n", path, err);
	free(buf);
	return s;
}

static int parse_args(int argc, char **argv, struct dopts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->chunk = 1 << 20;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--symbols") == 0 && i + 1 < argc)
			o->symbols = argv[++i];
		else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc)
			o->chunk = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--summary") == 0)
			o->summary = 1;
		else if (argv[i][0] != '-' && o->log == NULL)
			o->log = argv[i];
		else
			return -1;
	}
	return o->log == NULL || o->chunk == 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct xray_symbols *sym = NULL;
	struct dslice *v = NULL;
	struct model m;
	struct dopts o;
	uint32_t t;
	int rc, status = 1;

	if (parse_args(argc, argv, &o) != 0) {
		fprintf(stderr, "usage: dump [--symbols BINARY|YAML] [--chunk BYTES] [--summary] LOG\n");
		return 2;
	}
	if (o.symbols != NULL && (sym = load_symbols(o.symbols)) == NULL)
		return 1;
	if (model_init(&m) != 0)
		goto out_sym;
	if ((rc = decode(&m, o.log, o.chunk)) != INGEST_OK) {
		fprintf(stderr, "dump: %s: %s\n", o.log, dump_strerror(rc));
		goto out_model;
	}
	print_model(&m);
	if (!o.summary && (v = malloc((m.events.len + 1) * sizeof(*v))) == NULL)
		goto out_model;
	for (t = 0; !o.summary && t < m.threads.len; t++)
		if (print_thread(&m, sym, t, v) != 0)
			goto out_model;
	status = 0;
out_model:
	free(v);
	model_fini(&m);
out_sym:
	xray_symbols_free(sym);
	return status;
}
