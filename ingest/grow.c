/*
 * A trace that grows as its bytes arrive, in a process of its own
 * (grow.h): both sides of its protocol.
 *
 * The request, parent to child, is child.c's: lines "<key> <value>" up to
 * "go" (in, out, format, sort_budget, extent_rows, order_window,
 * expect_bytes, commit_ms, pause_ms); then, for
 * as long as the source grows, lines "size <N>" and at last "end". The
 * child reports each commit as the result's lines ("r <field> <value>",
 * child.c) then "c <bytes>", the source's bytes the commit holds (a
 * pause's: "c <bytes> exact", the trace as a file of them); and at
 * the end the result's lines then "rc <code>".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tracedb/tracedb.h"
#include "child.h"
#include "grow.h"
#include "util.h"

enum {
	LINE = 8192,
	PIECE = 1 << 20,        /* bytes fed at a time */
	FED_EVERY = 4 << 20,    /* the bytes read are told the parent this often */
	GROW_NICE = 10,         /* the child's niceness (ingest_grow_child_main) */
	COMMIT_MS = 200,        /* by default, a commit at most this often while bytes arrive */
	GAP_MAX_MS = 1000,      /* and at least this often */
	PAUSE_MS = 300,         /* by default, a pause this long shows the trace as a file's */
	ORDER_WINDOW = 256 << 10, /* the order's window to start with (sorter.h): at each
				   * start again doubled, or widened to the disorder
				   * seen (up to sorter.h's SORTER_WIDEN_MAX), so a
				   * stream out of order by more finds its own at once */
};

/* Lines read from a descriptor without blocking: what came is kept until
 * its line is whole. */
struct lines {
	int fd;
	char buf[LINE];
	size_t len;
	size_t used;   /* the line handed out last, which the next call drops */
	int eof;
};

/* The next whole line (its newline cut), valid until the next call; or
 * NULL: none whole yet (or the descriptor ended, l->eof). Reads what is
 * there first, without waiting. */
static char *line_next(struct lines *l)
{
	char *nl;

	if (l->used > 0) {
		memmove(l->buf, l->buf + l->used, l->len - l->used);
		l->len -= l->used;
		l->used = 0;
	}
	for (;;) {
		ssize_t n;

		if ((nl = memchr(l->buf, '\n', l->len)) != NULL) {
			*nl = '\0';
			l->used = (size_t)(nl - l->buf) + 1;
			return l->buf;
		}
		if (l->eof || l->len == sizeof(l->buf)) /* a line too long for the protocol ends it */
			return NULL;
		n = read(l->fd, l->buf + l->len, sizeof(l->buf) - l->len);
		if (n > 0) {
			l->len += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			l->eof = 1;
		return NULL;
	}
}

/* Waits up to ms (-1: for ever) for fd to be readable. */
static void wait_readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	while (poll(&p, 1, ms) < 0 && errno == EINTR)
		;
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- the child -------------------------------------------------------------- */

struct follow {
	struct ingest_stream *s;
	struct ingest_result *res;
	int src;              /* the source, read with pread */
	uint64_t size;        /* bytes the parent said it holds */
	uint64_t fed;         /* bytes fed to the stream */
	uint64_t committed;   /* bytes fed at the last commit */
	uint64_t said_fed;    /* bytes fed when the parent was last told ("f") */
	int ended;            /* the parent said it ends at size */
	int64_t commit_ms, last_commit;
	int64_t took;         /* the last commit's time, from its start until it was in the file */
	int held;             /* the last commit was held back: the stream started
			       * again and has not caught up (ingest_stream_commit) */
	int64_t pause_ms;     /* a pause this long shows the trace as a file's; 0: never */
	int64_t grew_ms;      /* when the size told last grew */
	pid_t layer;          /* the copy writing a pause's layer, 0: none */
	int layered;          /* a layer ended (or was stopped): to be undone */
	uint64_t layer_at;    /* the bytes fed when the last layer started */
	char undo[LINE + 16], report[LINE + 16]; /* the layer's files, beside the database */
	uint8_t *buf;
	/* a commit queued (ingest_stream_commit_queued) and not yet in the
	 * file: reported once it is (report_commit) */
	int pending;
	uint64_t pending_ticket, pending_bytes;
	int64_t pending_t0;             /* when it began */
	struct ingest_result *pending_res; /* what it holds */
};

/* Takes the parent's lines that came: 0, or -1 when its pipe closed (it is
 * gone: nothing more will come). */
static int take_orders(struct follow *f, struct lines *in)
{
	char *l;

	while ((l = line_next(in)) != NULL) {
		if (strncmp(l, "size ", 5) == 0) {
			uint64_t n = ingest_child_num(l + 5);

			if (n > f->size)
				f->size = n;
		} else if (strcmp(l, "end") == 0) {
			f->ended = 1;
		}
	}
	return in->eof && !f->ended ? -1 : 0;
}

/* Feeds up to one piece of the bytes not fed yet; INGEST_OK or an error. */
static int feed_piece(struct follow *f)
{
	size_t n = f->size - f->fed > PIECE ? PIECE : (size_t)(f->size - f->fed);
	ssize_t got = pread(f->src, f->buf, n, (off_t)f->fed);

	if (got <= 0) {
		snprintf(f->res->error, sizeof(f->res->error), "cannot read the trace's file: %s",
			 got == 0 ? "it is shorter than its size" : strerror(errno));
		return INGEST_EIO;
	}
	f->fed += (uint64_t)got;
	if (f->fed - f->said_fed >= FED_EVERY || f->fed == f->size) { /* how far it has read */
		fprintf(stdout, "f %" PRIu64 "\n", f->fed);
		fflush(stdout);
		f->said_fed = f->fed;
	}
	return ingest_stream_feed(f->s, f->buf, (size_t)got);
}

/* A commit's time, from its start until it was in the file (commit_due). */
static void commit_took(struct follow *f, int64_t t0)
{
	f->took = now_ms() - t0;
}

/* A commit's time grows with what came since the last one, mostly rows the
 * batch writes too, and each also rewrites what is not final yet (the
 * groups' last level-of-detail rows, their last pages): a fixed cost of
 * its own. So the wait before the next commit, from the start of the
 * last, depends on whether the stream keeps up. While it does (at most a
 * piece of bytes waits to be fed), what the commits cost is spare time:
 * the next one starts as soon as the last is in the file, and not before
 * commit_ms, so that what arrived shows as soon as it can. While bytes
 * wait (an upload, or a stream faster than its ingest), commits take at
 * most about a third of the time: the next waits twice what the last one
 * took (a longer wait must not make the next longer still). Never more
 * than GAP_MAX_MS, unless commit_ms is. commit_ms 0 (tests) makes one
 * after every piece. When it is due, on now_ms's clock: */
static int64_t commit_due(const struct follow *f)
{
	int64_t gap;

	if (f->commit_ms == 0) /* tests: after every piece matched */
		return f->last_commit;
	gap = f->size - f->fed <= PIECE ? f->took : 2 * f->took;
	gap = gap < GAP_MAX_MS ? gap : GAP_MAX_MS;
	return f->last_commit + (gap > f->commit_ms ? gap : f->commit_ms);
}

/* Reports the commit queued once it is in the file (wait: waits for it);
 * INGEST_OK or an error. */
static int report_commit(struct follow *f, int wait)
{
	int seen, rc;

	if (!f->pending)
		return INGEST_OK;
	if ((rc = ingest_stream_published(f->s, f->pending_ticket, wait, &seen)) != INGEST_OK || !seen)
		return rc;
	f->pending = 0;
	commit_took(f, f->pending_t0);
	ingest_result_put(stdout, f->pending_res);
	fprintf(stdout, "c %" PRIu64 "\n", f->pending_bytes);
	fflush(stdout);
	return INGEST_OK;
}

/* A commit, reported once it is in the file (report_commit). */
static int commit_now(struct follow *f)
{
	int64_t t0 = now_ms();
	uint64_t ticket;
	int committed, rc;

	if ((rc = report_commit(f, 1)) != INGEST_OK) /* the one before first */
		return rc;
	rc = ingest_stream_commit_queued(f->s, &committed, &ticket);
	f->last_commit = now_ms();
	commit_took(f, t0); /* until it is reported */
	f->held = rc == INGEST_OK && !committed; /* started again, not caught up (ingest.h) */
	if (rc != INGEST_OK || !committed)
		return rc;
	f->committed = f->fed;
	*f->pending_res = *f->res;
	f->pending = 1;
	f->pending_ticket = ticket;
	f->pending_bytes = f->fed;
	f->pending_t0 = t0;
	return report_commit(f, 0);
}

/* ---- a pause: the trace as a file's, by a copy of this process --------- */

/* Starts the layer of a pause (ingest.h, ingest_stream_pause) in a copy of
 * this process, right after a commit: it writes its report (the result's
 * lines, then "c <bytes>") to f->report, which this process hands on once
 * the copy ends well. */
static void layer_start(struct follow *f)
{
	pid_t pid;

	if (report_commit(f, 1) != INGEST_OK)
		return; /* the error comes back next */
	fflush(stdout);
	if (ingest_stream_pause_mark(f->s) != INGEST_OK)
		return; /* no layer: the trace shows its last commit (the error comes back next) */
	if ((pid = fork()) < 0) {
		f->layered = 1; /* nothing to undo: the unpause begins the stream's next transaction */
		f->layer_at = f->fed;
		return;
	}
	if (pid == 0) {
		FILE *out;
		int rc = ingest_stream_pause(f->s, f->undo);

		if (rc == INGEST_OK && (out = fopen(f->report, "w")) != NULL) {
			ingest_result_put(out, f->res);
			fprintf(out, "c %" PRIu64 " exact\n", f->fed);
			rc = fclose(out) == 0 ? INGEST_OK : INGEST_EIO;
		}
		if (rc != INGEST_OK) /* the trace shows its last commit: said in the server's log */
			fprintf(stderr, "trace-server: a paused trace's layer was not written: %s\n", f->res->error);
		_exit(rc == INGEST_OK ? 0 : 1); /* nothing of the parent's is flushed or freed */
	}
	f->layer = pid;
	f->layer_at = f->fed;
}

/* Hands on the report of a layer that ended well. */
static void layer_report(struct follow *f)
{
	char line[LINE];
	FILE *in = fopen(f->report, "r");

	if (in == NULL)
		return;
	while (fgets(line, sizeof(line), in) != NULL)
		fputs(line, stdout);
	fclose(in);
	remove(f->report);
	fflush(stdout);
}

/* Whether the layer running ended (reported when it ended well). */
static void layer_poll(struct follow *f)
{
	int status;
	pid_t got;

	if (f->layer <= 0 || (got = waitpid(f->layer, &status, WNOHANG)) == 0)
		return;
	f->layer = 0;
	if (got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		f->layered = 1;
		layer_report(f);
	} else {
		f->layered = 1; /* whatever it committed, the unpause undoes */
	}
}

/* Bytes came, or the end: the layer stops (killed when still running) and
 * what it committed is undone in the stream's next commit. */
static int layer_stop(struct follow *f)
{
	if (f->layer > 0) {
		kill(f->layer, SIGKILL);
		while (waitpid(f->layer, NULL, 0) < 0 && errno == EINTR)
			;
		f->layer = 0;
		f->layered = 1;
	}
	if (!f->layered)
		return INGEST_OK;
	f->layered = 0;
	remove(f->report);
	return ingest_stream_unpause(f->s, f->undo);
}

/* Follows the source until it ends; INGEST_OK or an error. */
static int follow(struct follow *f, struct lines *in)
{
	int rc = INGEST_OK;

	while (rc == INGEST_OK) {
		int64_t now = now_ms(), due = commit_due(f) - now;
		uint64_t size = f->size;

		if (take_orders(f, in) != 0)
			return INGEST_ECANCEL; /* the parent went away */
		if ((rc = report_commit(f, 0)) != INGEST_OK)
			break;
		if (f->size != size)
			f->grew_ms = now;
		layer_poll(f);
		if ((f->fed < f->size || f->ended) && (f->layer > 0 || f->layered) && (rc = layer_stop(f)) != INGEST_OK)
			break;
		if (f->fed < f->size) {
			/* each piece matched as it is fed: decoding runs far
			 * ahead of matching and writing, and a commit due must
			 * not wait for all that it decoded meanwhile */
			rc = feed_piece(f);
			/* the whole input known (the end told): the last piece is
			 * matched by the end, and a stream that started again
			 * with a window that may not hold its disorder matches
			 * nothing more before it (it would likely do it all
			 * twice): the end writes it whole (ingest.c,
			 * stream_fresh). One whose window was widened to its
			 * disorder (sorter.h, LATE) grows on, and shows it */
			if (f->ended && (f->fed == f->size || !ingest_stream_settled(f->s)))
				continue;
			if (rc == INGEST_OK)
				rc = ingest_stream_match(f->s);
			if (rc == INGEST_OK && commit_due(f) <= now_ms())
				rc = commit_now(f);
			continue;
		}
		if (f->ended)
			return report_commit(f, 1);
		/* caught up: what came is committed at once, unless one was
		 * made a moment ago (then when it is due), or a pause's layer
		 * is being written or shown (nothing else writes meanwhile) */
		if (f->committed != f->fed && due <= 0 && f->layer == 0 && !f->layered) {
			rc = commit_now(f);
			continue;
		}
		/* paused: the trace as a file of every byte received, once */
		if (f->pause_ms > 0 && f->layer == 0 && !f->layered && (f->committed == f->fed || f->held) && f->fed > 0 &&
		    f->layer_at != f->fed && now - f->grew_ms >= f->pause_ms) {
			layer_start(f);
			continue;
		}
		{
			int64_t wait = f->committed != f->fed && f->layer == 0 && !f->layered ? due : -1;

			if (f->layer > 0) /* looked at again soon */
				wait = 20;
			else if (f->pause_ms > 0 && !f->layered && f->layer_at != f->fed && f->fed > 0)
				wait = f->grew_ms + f->pause_ms - now > 0 ? f->grew_ms + f->pause_ms - now : 0;
			if (f->pending && (wait < 0 || wait > 20)) /* reported soon after it is in the file */
				wait = 20;
			wait_readable(in->fd, (int)wait);
		}
	}
	return rc;
}

int ingest_grow_child_main(void)
{
	static char in_path[LINE], out_db[LINE], format[64];
	struct ingest_opts o = { 0 };
	struct follow f = { 0 };
	struct lines in = { 0 };
	char *l;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	f.commit_ms = COMMIT_MS;
	f.pause_ms = PAUSE_MS;
	in.fd = 0;
	for (;;) {
		if ((l = line_next(&in)) == NULL) {
			if (in.eof)
				return 2;
			wait_readable(0, -1);
			continue;
		}
		if (strcmp(l, "go") == 0)
			break;
		if (strncmp(l, "in ", 3) == 0)
			snprintf(in_path, sizeof(in_path), "%s", l + 3);
		else if (strncmp(l, "out ", 4) == 0)
			snprintf(out_db, sizeof(out_db), "%s", l + 4);
		else if (strncmp(l, "format ", 7) == 0)
			snprintf(format, sizeof(format), "%s", l + 7), o.format = format;
		else if (strncmp(l, "sort_budget ", 12) == 0)
			o.sort_budget = (size_t)ingest_child_num(l + 12);
		else if (strncmp(l, "extent_rows ", 12) == 0)
			o.extent_rows = (size_t)ingest_child_num(l + 12);
		else if (strncmp(l, "commit_ms ", 10) == 0)
			f.commit_ms = (int64_t)ingest_child_num(l + 10);
		else if (strncmp(l, "order_window ", 13) == 0)
			o.order_window = ingest_child_num(l + 13);
		else if (strncmp(l, "expect_bytes ", 13) == 0)
			o.expect_bytes = ingest_child_num(l + 13);
		else if (strncmp(l, "pause_ms ", 9) == 0)
			f.pause_ms = (int64_t)ingest_child_num(l + 9);
	}
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	/* the trace's readers come first: a request that reads it while it
	 * grows waits for no core behind its ingest (its threads, made from
	 * this one, are niced too); alone on the machine, it loses nothing */
	setpriority(PRIO_PROCESS, 0, GROW_NICE);
	if (in_path[0] == '\0' || out_db[0] == '\0' || (f.res = calloc(1, sizeof(*f.res))) == NULL ||
	    (f.buf = malloc(PIECE)) == NULL || (f.pending_res = calloc(1, sizeof(*f.pending_res))) == NULL)
		return 2;
	o.growing = 1;
	o.follows = in_path; /* started again, it reads the source again: no copy of it */
	snprintf(f.undo, sizeof(f.undo), "%s-undo", out_db);
	snprintf(f.report, sizeof(f.report), "%s-layer", out_db);
	if (o.order_window == 0) /* a slow stream's events wait for this many bytes after them */
		o.order_window = ORDER_WINDOW;
	if ((f.src = open(in_path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(f.res->error, sizeof(f.res->error), "cannot open the trace's file: %s", strerror(errno));
		rc = INGEST_EIO;
	} else if ((f.s = ingest_stream_open(out_db, &o, f.res)) == NULL) {
		rc = INGEST_EDB;
	} else {
		rc = follow(&f, &in);
		if (f.layer > 0 || f.layered) { /* ended, or stopped: a layer is undone first */
			int urc = layer_stop(&f);

			rc = rc == INGEST_OK ? urc : rc;
		}
		if (rc == INGEST_OK)
			rc = ingest_stream_end(f.s);
	}
	{
		struct rusage ru;

		if (getrusage(RUSAGE_SELF, &ru) == 0)
			f.res->peak_rss = (uint64_t)ru.ru_maxrss * 1024; /* kB */
	}
	ingest_result_put(stdout, f.res);
	fprintf(stdout, "rc %d\n", rc);
	fflush(stdout);
	ingest_stream_free(f.s);
	if (f.src >= 0)
		close(f.src);
	free(f.buf);
	free(f.res);
	free(f.pending_res);
	return 0;
}

/* ---- the parent ------------------------------------------------------------- */

struct ingest_grow {
	pid_t pid;
	FILE *w;               /* its standard input */
	struct lines out;      /* its standard output */
	struct ingest_result res; /* the report being read */
	uint64_t fed;          /* the bytes of the source it has read ("f") */
	char db[4096];
	int done;
};

struct ingest_grow *ingest_grow_start(const char *exe, const char *src, const char *db, const struct ingest_opts *o,
				      int64_t pause_ms, int64_t commit_ms, char *err, size_t errlen)
{
	static char arg1[] = "grow-child";
	char exe_buf[4096], *argv[] = { exe_buf, arg1, NULL };
	int to[2] = { -1, -1 }, from[2] = { -1, -1 };
	struct ingest_grow *g;

	if (strchr(src, '\n') || strchr(db, '\n') || (o && o->format && strchr(o->format, '\n'))) {
		snprintf(err, errlen, "a path holds a line break");
		return NULL;
	}
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(exe_buf, sizeof(exe_buf), "%s", exe);
	snprintf(g->db, sizeof(g->db), "%s", db);
	if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0 ||
	    (g->pid = spawn_apart(exe, argv, to[0], from[1])) < 0) {
		snprintf(err, errlen, "cannot start an ingest: %s", strerror(errno));
		goto fail;
	}
	close(to[0]);
	close(from[1]);
	to[0] = from[1] = -1;
	if ((g->w = fdopen(to[1], "w")) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	to[1] = -1;
	g->out.fd = from[0];
	fcntl(from[0], F_SETFL, fcntl(from[0], F_GETFL) | O_NONBLOCK);
	fprintf(g->w, "in %s\nout %s\n", src, db);
	if (o && o->format)
		fprintf(g->w, "format %s\n", o->format);
	if (o)
		fprintf(g->w, "sort_budget %zu\nextent_rows %zu\norder_window %" PRIu64 "\nexpect_bytes %" PRIu64 "\n",
			o->sort_budget, o->extent_rows, o->order_window, o->expect_bytes);
	if (pause_ms >= 0)
		fprintf(g->w, "pause_ms %" PRId64 "\n", pause_ms);
	if (commit_ms >= 0)
		fprintf(g->w, "commit_ms %" PRId64 "\n", commit_ms);
	fputs("go\n", g->w);
	fflush(g->w);
	g->res.format = "unknown";
	return g;
fail:
	if (g->pid > 0) {
		kill(g->pid, SIGKILL);
		waitpid(g->pid, NULL, 0);
	}
	for (int i = 0; i < 2; i++) {
		if (to[i] >= 0)
			close(to[i]);
		if (from[i] >= 0)
			close(from[i]);
	}
	free(g);
	return NULL;
}

int ingest_grow_size(struct ingest_grow *g, uint64_t size)
{
	fprintf(g->w, "size %" PRIu64 "\n", size);
	return fflush(g->w) == 0 ? 0 : -1;
}

int ingest_grow_end(struct ingest_grow *g)
{
	fputs("end\n", g->w);
	return fflush(g->w) == 0 ? 0 : -1;
}

int ingest_grow_fd(const struct ingest_grow *g)
{
	return g->out.fd;
}

/* The process ended without a result: why, as ingest_file_apart says it. */
static enum grow_report died(struct ingest_grow *g, struct ingest_result *res, int *rc)
{
	int status = 0;

	while (waitpid(g->pid, &status, 0) < 0 && errno == EINTR)
		;
	g->pid = 0;
	g->done = 1;
	memset(res, 0, sizeof(*res));
	res->format = "unknown";
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		snprintf(res->error, sizeof(res->error), "out of memory: the ingest process was killed (by the system, for memory)");
		*rc = INGEST_ENOMEM;
	} else {
		snprintf(res->error, sizeof(res->error), "%s (%s %d): the file is damaged in a way this server does not handle",
			 ingest_strerror(INGEST_ECRASH), WIFSIGNALED(status) ? "signal" : "exit status",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		*rc = INGEST_ECRASH;
	}
	return GROW_DIED;
}

enum grow_report ingest_grow_read(struct ingest_grow *g, int wait_ms, struct ingest_result *res, uint64_t *bytes,
				  int *exact, int *rc)
{
	char *l;

	if (g->done)
		return GROW_NONE;
	for (;;) {
		if ((l = line_next(&g->out)) == NULL) {
			if (g->out.eof)
				return died(g, res, rc);
			if (wait_ms <= 0)
				return GROW_NONE;
			wait_readable(g->out.fd, wait_ms);
			wait_ms = 0;
			continue;
		}
		if (l[0] == 'r' && l[1] == ' ') {
			ingest_result_take(&g->res, l + 2);
		} else if (l[0] == 'f' && l[1] == ' ') {
			g->fed = ingest_child_num(l + 2);
		} else if (l[0] == 'c' && l[1] == ' ') {
			*bytes = ingest_child_num(l + 2);
			if (*bytes > g->fed) /* read since its last "f", which comes every FED_EVERY */
				g->fed = *bytes;
			*exact = strstr(l + 2, " exact") != NULL;
			*res = g->res;
			memset(&g->res, 0, sizeof(g->res));
			g->res.format = "unknown";
			return GROW_COMMIT;
		} else if (strncmp(l, "rc ", 3) == 0) {
			*rc = atoi(l + 3);
			*res = g->res;
			g->done = 1;
			while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
				;
			g->pid = 0;
			return GROW_DONE;
		}
	}
}

uint64_t ingest_grow_fed(const struct ingest_grow *g)
{
	return g->fed;
}

void ingest_grow_free(struct ingest_grow *g, int kill_it)
{
	if (g == NULL)
		return;
	if (g->pid > 0) {
		char tmp[sizeof(g->db) + sizeof(INGEST_TMP_SUFFIX)];

		kill(g->pid, SIGKILL);
		while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
			;
		/* what it wrote whole after starting again at its end (ingest.c,
		 * stream_restart), not yet renamed into place */
		snprintf(tmp, sizeof(tmp), "%s%s", g->db, INGEST_TMP_SUFFIX);
		tracedb_remove(tmp);
	}
	if (g->w)
		fclose(g->w);
	if (g->out.fd >= 0)
		close(g->out.fd);
	if (kill_it)
		tracedb_remove(g->db);
	free(g);
}
