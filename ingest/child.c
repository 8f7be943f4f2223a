/*
 * An ingest in a process of its own (child.h): both sides of the protocol.
 *
 * The request, parent to child, is lines "<key> <value>" up to a line "go":
 *   in, out        the paths of ingest_file
 *   format, symbols            optional
 *   sort_budget, extent_rows, max_bytes   numbers
 * The report, child to parent, is lines too:
 *   p <phase> <done> <total> <events>     a progress report
 *   r <field> <value>                      a field of the result
 *   rc <code>                              the end: ingest_file's return
 * The result's fields are ingest_result's, and peak_rss the child's own.
 * Values are text to the end of the line; the child replaces newlines in
 * the sentences it sends. A report without "rc" is a child that died.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "model.h"
#include "util.h"

enum { LINE = 8192 };

/* ---- the result's fields, by name (one list for both sides) ------------ */

#define COUNT_LIST(X)                                                                                                  \
	X(events) X(slices) X(counters) X(flows) X(sched) X(logs) X(threads) X(processes) X(blobs) X(objects)        \
		X(profiler) X(args) X(tracks)

/* The diagnostics' names are the model's (static strings, which the parent
 * points at as an in-process ingest would); a name the parent does not
 * know is dropped. */
static const char *const diag_names[] = {
#define X(n) #n,
	MDL_DIAG_LIST(X)
#undef X
};

static const char *diag_intern(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(diag_names) / sizeof(diag_names[0]); i++)
		if (strcmp(diag_names[i], name) == 0)
			return diag_names[i];
	return NULL;
}

static const char *format_intern(const char *f)
{
	static const char *const known[] = { "fxt", "xray-fdr" };
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i], f) == 0)
			return known[i];
	return "unknown";
}

/* A sentence on one line. */
static void put_text(FILE *out, const char *key, const char *s)
{
	fprintf(out, "r %s ", key);
	for (; *s; s++)
		fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
	fputc('\n', out);
}

void ingest_result_put(FILE *out, const struct ingest_result *r)
{
	unsigned i;

	put_text(out, "format", r->format ? r->format : "unknown");
	fprintf(out, "r start_ns %" PRId64 "\nr end_ns %" PRId64 "\nr bytes %" PRIu64 "\nr nproviders %u\n",
		r->start_ns, r->end_ns, r->bytes, r->nproviders);
#define X(n) fprintf(out, "r count_" #n " %" PRIu64 "\n", r->counts.n);
	COUNT_LIST(X)
#undef X
	for (i = 0; i < r->ndiag; i++)
		fprintf(out, "r diag %s %" PRIu64 "\n", r->diag_name[i], r->diag_value[i]);
	put_text(out, "error", r->error);
	fprintf(out, "r symbols_named %" PRIu64 "\n", r->symbols_named);
	put_text(out, "symbols_error", r->symbols_error);
	for (i = 0; i < INGEST_PHASES; i++)
		fprintf(out, "r phase%u %.9g\n", i, r->phase_seconds[i]);
	fprintf(out, "r peak_rss %" PRIu64 "\n", r->peak_rss);
	fprintf(out, "r order_restarts %" PRIu64 "\nr order_late %" PRIu64 "\nr order_streamed %" PRIu64 "\n",
		r->order_restarts, r->order_late, r->order_streamed);
}

uint64_t ingest_child_num(const char *s)
{
	return strtoull(s, NULL, 10);
}

/* Takes one "r <field> <value>" line (without "r ") into r. */
void ingest_result_take(struct ingest_result *r, char *line)
{
	char *v = strchr(line, ' ');
	unsigned i;

	if (v == NULL)
		return;
	*v++ = '\0';
	if (strcmp(line, "format") == 0) {
		r->format = format_intern(v);
	} else if (strcmp(line, "start_ns") == 0) {
		r->start_ns = strtoll(v, NULL, 10);
	} else if (strcmp(line, "end_ns") == 0) {
		r->end_ns = strtoll(v, NULL, 10);
	} else if (strcmp(line, "bytes") == 0) {
		r->bytes = ingest_child_num(v);
	} else if (strcmp(line, "nproviders") == 0) {
		r->nproviders = (unsigned)ingest_child_num(v);
	} else if (strcmp(line, "diag") == 0) {
		char *val = strchr(v, ' ');
		const char *name;

		if (val == NULL || r->ndiag >= INGEST_MAX_DIAG)
			return;
		*val++ = '\0';
		if ((name = diag_intern(v)) != NULL) {
			r->diag_name[r->ndiag] = name;
			r->diag_value[r->ndiag++] = ingest_child_num(val);
		}
	} else if (strcmp(line, "error") == 0) {
		snprintf(r->error, sizeof(r->error), "%s", v);
	} else if (strcmp(line, "order_restarts") == 0) {
		r->order_restarts = ingest_child_num(v);
	} else if (strcmp(line, "order_late") == 0) {
		r->order_late = ingest_child_num(v);
	} else if (strcmp(line, "order_streamed") == 0) {
		r->order_streamed = ingest_child_num(v);
	} else if (strcmp(line, "peak_rss") == 0) {
		r->peak_rss = ingest_child_num(v);
	} else if (strcmp(line, "symbols_named") == 0) {
		r->symbols_named = ingest_child_num(v);
	} else if (strcmp(line, "symbols_error") == 0) {
		snprintf(r->symbols_error, sizeof(r->symbols_error), "%s", v);
	} else if (strncmp(line, "phase", 5) == 0 && (i = (unsigned)ingest_child_num(line + 5)) < INGEST_PHASES) {
		r->phase_seconds[i] = strtod(v, NULL);
	}
#define X(n)                                                                                                           \
	else if (strcmp(line, "count_" #n) == 0) r->counts.n = ingest_child_num(v);
	COUNT_LIST(X)
#undef X
}

/* ---- the child -------------------------------------------------------------- */

static int child_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	FILE *out = ctx;

	fprintf(out, "p %d %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", (int)phase, done, total, events);
	/* a parent that went away reads no more: stop (its death kills this
	 * process too, PR_SET_PDEATHSIG, but a closed pipe comes first) */
	return fflush(out) != 0;
}

int ingest_child_main(void)
{
	static char in[LINE], out_db[LINE], format[64], symbols[LINE];
	struct ingest_opts o = { 0 };
	struct ingest_result *res = calloc(1, sizeof(*res));
	char *line = malloc(LINE);
	int rc;

	signal(SIGPIPE, SIG_IGN);
	if (res == NULL || line == NULL)
		return 1;
	while (fgets(line, LINE, stdin) != NULL) {
		char *v = strchr(line, ' ');

		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "go") == 0)
			break;
		if (v == NULL)
			continue;
		*v++ = '\0';
		if (strcmp(line, "in") == 0)
			snprintf(in, sizeof(in), "%s", v);
		else if (strcmp(line, "out") == 0)
			snprintf(out_db, sizeof(out_db), "%s", v);
		else if (strcmp(line, "format") == 0)
			snprintf(format, sizeof(format), "%s", v), o.format = format;
		else if (strcmp(line, "symbols") == 0)
			snprintf(symbols, sizeof(symbols), "%s", v), o.symbols = symbols;
		else if (strcmp(line, "sort_budget") == 0)
			o.sort_budget = (size_t)ingest_child_num(v);
		else if (strcmp(line, "extent_rows") == 0)
			o.extent_rows = (size_t)ingest_child_num(v);
		else if (strcmp(line, "max_bytes") == 0)
			o.max_bytes = ingest_child_num(v);
	}
	if (in[0] == '\0' || out_db[0] == '\0')
		return 2;
	o.progress = child_progress;
	o.progress_ctx = stdout;
	rc = ingest_file(in, out_db, &o, res);
	{
		struct rusage ru;

		if (getrusage(RUSAGE_SELF, &ru) == 0)
			res->peak_rss = (uint64_t)ru.ru_maxrss * 1024; /* kB */
	}
	ingest_result_put(stdout, res);
	fprintf(stdout, "rc %d\n", rc);
	fflush(stdout);
	free(res);
	free(line);
	return 0;
}

/* ---- the parent ------------------------------------------------------------- */

/* Writes the request; 0, or -1 when the child is gone. */
static int put_request(FILE *w, const char *in_path, const char *out_db, const struct ingest_opts *o)
{
	fprintf(w, "in %s\nout %s\n", in_path, out_db);
	if (o && o->format)
		fprintf(w, "format %s\n", o->format);
	if (o && o->symbols)
		fprintf(w, "symbols %s\n", o->symbols);
	if (o)
		fprintf(w, "sort_budget %zu\nextent_rows %zu\nmax_bytes %" PRIu64 "\n", o->sort_budget, o->extent_rows,
			o->max_bytes);
	fputs("go\n", w);
	return fclose(w) == 0 ? 0 : -1;
}

/* Removes what a child stopped mid-way may have left: ingest writes under
 * out_db's temporary name (INGEST_TMP_SUFFIX), and renames it into place
 * only when complete. */
static void remove_partial(const char *out_db)
{
	char tmp[4200];

	snprintf(tmp, sizeof(tmp), "%s%s", out_db, INGEST_TMP_SUFFIX);
	remove(tmp);
}

int ingest_file_apart(const char *exe, const char *in_path, const char *out_db, const struct ingest_opts *opts,
		      struct ingest_result *res)
{
	static char arg1[] = "ingest-child";
	char exe_buf[4096], *argv[] = { exe_buf, arg1, NULL };
	int to[2] = { -1, -1 }, from[2] = { -1, -1 }, status = 0, rc = -1, cancelled = 0;
	char *line = NULL;
	FILE *w = NULL, *r = NULL;
	pid_t pid;

	if (exe == NULL)
		return ingest_file(in_path, out_db, opts, res);
	memset(res, 0, sizeof(*res));
	res->format = "unknown";
	if ((size_t)snprintf(exe_buf, sizeof(exe_buf), "%s", exe) >= sizeof(exe_buf)) {
		snprintf(res->error, sizeof(res->error), "the program's path is too long");
		return INGEST_EIO;
	}
	if (strchr(in_path, '\n') || strchr(out_db, '\n') || (opts && opts->symbols && strchr(opts->symbols, '\n')) ||
	    (opts && opts->format && strchr(opts->format, '\n'))) {
		snprintf(res->error, sizeof(res->error), "a path holds a line break");
		return INGEST_EIO;
	}
	if ((line = malloc(LINE)) == NULL || pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
		snprintf(res->error, sizeof(res->error), "cannot start an ingest: %s", strerror(errno));
		goto fail_pipes;
	}
	if ((pid = spawn_apart(exe, argv, to[0], from[1])) < 0) {
		snprintf(res->error, sizeof(res->error), "cannot start an ingest: %s", strerror(errno));
		goto fail_pipes;
	}
	close(to[0]);
	close(from[1]);
	to[0] = from[1] = -1;
	if ((w = fdopen(to[1], "w")) == NULL || (r = fdopen(from[0], "r")) == NULL) {
		if (w == NULL)
			close(to[1]);
		if (r == NULL)
			close(from[0]);
		if (w)
			fclose(w);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		snprintf(res->error, sizeof(res->error), "cannot start an ingest: out of memory");
		free(line);
		return INGEST_ENOMEM;
	}
	put_request(w, in_path, out_db, opts); /* a child gone says so below */
	while (fgets(line, LINE, r) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'p' && line[1] == ' ') {
			char *s = line + 2, *e;
			long phase = strtol(s, &e, 10);
			uint64_t done = strtoull(e, &e, 10), total = strtoull(e, &e, 10), events = strtoull(e, &e, 10);

			if (opts && opts->progress && phase >= 0 && phase < INGEST_PHASES &&
			    opts->progress(opts->progress_ctx, (enum ingest_phase)phase, done, total, events) != 0) {
				cancelled = 1;
				kill(pid, SIGKILL);
				break;
			}
		} else if (line[0] == 'r' && line[1] == ' ') {
			ingest_result_take(res, line + 2);
		} else if (strncmp(line, "rc ", 3) == 0) {
			rc = atoi(line + 3);
		}
	}
	fclose(r);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	free(line);
	if (cancelled) {
		remove_partial(out_db);
		snprintf(res->error, sizeof(res->error), "%s", ingest_strerror(INGEST_ECANCEL));
		return INGEST_ECANCEL;
	}
	if (rc < 0) {
		remove_partial(out_db);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			snprintf(res->error, sizeof(res->error),
				 "out of memory: the ingest process was killed (by the system, for memory)");
			return INGEST_ENOMEM;
		}
		if (WIFSIGNALED(status))
			snprintf(res->error, sizeof(res->error), "%s (signal %d): the file is damaged in a way this "
				 "server does not handle", ingest_strerror(INGEST_ECRASH), WTERMSIG(status));
		else
			snprintf(res->error, sizeof(res->error), "%s (exit status %d)", ingest_strerror(INGEST_ECRASH),
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return INGEST_ECRASH;
	}
	return rc;
fail_pipes:
	free(line);
	for (status = 0; status < 2; status++) {
		if (to[status] >= 0)
			close(to[status]);
		if (from[status] >= 0)
			close(from[status]);
	}
	return INGEST_EIO;
}
