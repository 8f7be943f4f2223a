/*
 * Helpers for programs that talk to the real server over HTTP: the
 * integration test (tests/server/test_server.c) and the query benchmark
 * (bench/query/query_bench.c).
 *
 * su_server_* starts `trace-server serve --port 0 ...` as a child process,
 * reads the port from its "listening on http://127.0.0.1:PORT/" line and
 * stops it again. su_exchange is a small HTTP/1.1 client on a raw socket:
 * it sends one request (body with Content-Length, or chunked) while reading
 * the reply, so that a server answering before the body is in (413) is
 * still heard, and it understands Content-Length, chunked and read-to-close
 * replies, skipping 1xx interim ones. Keep-alive works by passing the same
 * socket again.
 *
 * Header-only and free of cmocka: every function returns -1 (or NULL) on
 * error and the caller asserts. Not meant for hostile servers: header and
 * chunk parsing is strict but minimal.
 */
#ifndef TESTS_SERVER_UTIL_H
#define TESTS_SERVER_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static inline double su_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void su_sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- the server process ------------------------------------------------ */

struct su_server {
	pid_t pid;  /* the child; 0 when not running */
	int port;   /* the port it said it listens on */
	int out_fd; /* read end of its stdout, kept open so it never gets EPIPE */
};

/* Reads the child's first stdout line (up to n - 1 bytes) within timeout
 * seconds. Returns 0, or -1 when it ended, timed out or failed. */
static inline int su_read_line(int fd, char *buf, size_t n, double timeout)
{
	double deadline = su_now() + timeout;
	size_t len = 0;

	while (len + 1 < n) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int ms = (int)((deadline - su_now()) * 1000), rc;
		ssize_t k;

		if (ms <= 0)
			return -1;
		rc = poll(&pf, 1, ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			return -1;
		k = read(fd, buf + len, 1);
		if (k <= 0)
			return -1;
		if (buf[len] == '\n')
			break;
		len++;
	}
	buf[len] = '\0';
	return 0;
}

/*
 * Starts argv[0] with argv (NULL-terminated), stdout to a pipe and stderr
 * appended to log (inherited when log is NULL), and waits up to timeout
 * seconds for the "listening on http://HOST:PORT/" line. The child dies with
 * this process (PR_SET_PDEATHSIG). Returns 0 with s filled in, or -1 (the
 * child, if any, is reaped; su_server_stop is not needed).
 */
static inline int su_server_start(struct su_server *s, char *const argv[], const char *log, double timeout)
{
	char line[512];
	const char *p;
	int pfd[2], status;

	memset(s, 0, sizeof(*s));
	s->out_fd = -1;
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -1;
	s->pid = fork();
	if (s->pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (s->pid == 0) {
		int lfd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		if (lfd >= 0)
			dup2(lfd, 2);
		execv(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	s->out_fd = pfd[0];
	if (su_read_line(s->out_fd, line, sizeof(line), timeout) == 0 && (p = strstr(line, "listening on http://")) &&
	    (p = strchr(p + 20, ':')) != NULL) {
		s->port = atoi(p + 1);
		if (s->port > 0 && s->port < 65536)
			return 0;
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &status, 0);
	close(s->out_fd);
	memset(s, 0, sizeof(*s));
	s->out_fd = -1;
	return -1;
}

/* Waits up to timeout seconds for the child to end. Returns its exit code
 * (128 + signal when killed), or -1 when it still runs. */
static inline int su_server_wait(struct su_server *s, double timeout)
{
	double deadline = su_now() + timeout;
	int status;

	for (;;) {
		pid_t r = waitpid(s->pid, &status, WNOHANG);

		if (r == s->pid)
			break;
		if (r < 0 || su_now() > deadline)
			return -1;
		su_sleep_ms(5);
	}
	s->pid = 0;
	if (s->out_fd >= 0)
		close(s->out_fd);
	s->out_fd = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Prints every thread's stack of the running process pid to stderr, with
 * gdb when the machine has it: what a server that does not stop is stuck
 * on, for a failure seen only on a CI machine.
 */
static inline void su_print_stacks(pid_t pid)
{
	char cmd[160];

	fprintf(stderr, "process %d did not stop; its threads:\n", (int)pid);
	fflush(stderr);
	snprintf(cmd, sizeof(cmd),
		 "command -v gdb >/dev/null && timeout 60 gdb -p %d -batch -ex 'thread apply all bt' 1>&2 </dev/null",
		 (int)pid);
	if (system(cmd) != 0)
		fprintf(stderr, "(no stacks: gdb is missing or could not attach)\n");
}

/*
 * Sends sig (SIGTERM for a clean stop, SIGKILL for a crash) and reaps the
 * child; one that does not end within 10 s has its stacks printed and is
 * killed. Returns its exit code as su_server_wait does, or -1 when it was
 * not running.
 */
static inline int su_server_stop(struct su_server *s, int sig)
{
	int rc;

	if (s->pid <= 0)
		return -1;
	kill(s->pid, sig);
	rc = su_server_wait(s, 10);
	if (rc < 0) {
		su_print_stacks(s->pid);
		kill(s->pid, SIGKILL);
		rc = su_server_wait(s, 10);
	}
	return rc;
}

/* ---- HTTP ---------------------------------------------------------------- */

/* Connects to 127.0.0.1:port; returns the socket or -1. */
static inline int su_connect(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

struct su_req {
	const char *method;  /* "GET", "POST", ... */
	const char *path;    /* as sent: already percent-encoded */
	const char *headers; /* extra header lines, each ending in "\r\n"; NULL for none */
	const void *body;    /* NULL for none */
	size_t body_len;
	int chunked;         /* send the body with Transfer-Encoding: chunked */
	int keep_alive;      /* leave out "Connection: close" */
};

struct su_resp {
	int status;      /* e.g. 200; 0 before a reply */
	char *head;      /* status line and headers, NUL-terminated, "\r\n" kept */
	char *body;      /* body_len bytes plus a NUL (chunked replies decoded) */
	size_t body_len;
	int closing;     /* the server said "Connection: close" or closed */
};

static inline void su_resp_free(struct su_resp *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* The value of header name (case-insensitive) copied to out, or NULL. */
static inline const char *su_header(const struct su_resp *r, const char *name, char *out, size_t n)
{
	size_t nl = strlen(name), k;
	const char *p;

	for (p = r->head ? strstr(r->head, "\r\n") : NULL; p && p[2]; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, name, nl) != 0 || p[2 + nl] != ':')
			continue;
		p += 3 + nl;
		p += strspn(p, " \t");
		k = strcspn(p, "\r\n");
		if (k >= n)
			k = n - 1;
		memcpy(out, p, k);
		out[k] = '\0';
		return out;
	}
	return NULL;
}

/* A growable byte buffer. */
struct su_buf {
	char *p;
	size_t len, cap;
};

static inline int su_buf_add(struct su_buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *q;

		while (cap < b->len + n + 1)
			cap *= 2;
		if ((q = realloc(b->p, cap)) == NULL)
			return -1;
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Decodes a chunked body from s (n bytes). Returns the bytes consumed when
 * complete (body in out), 0 when more is needed, -1 when malformed. */
static inline long su_dechunk(const char *s, size_t n, struct su_buf *out)
{
	size_t pos = 0;

	out->len = 0;
	for (;;) {
		const char *eol = memmem(s + pos, n - pos, "\r\n", 2);
		unsigned long size;
		char *end;

		if (eol == NULL)
			return 0;
		size = strtoul(s + pos, &end, 16);
		if (end == s + pos || (*end != '\r' && *end != ';'))
			return -1;
		pos = (size_t)(eol - s) + 2;
		if (size == 0)
			break;
		if (n - pos < size + 2)
			return 0;
		if (memcmp(s + pos + size, "\r\n", 2) != 0 || su_buf_add(out, s + pos, size) != 0)
			return -1;
		pos += size + 2;
	}
	for (;;) { /* trailer lines, up to an empty one */
		const char *eol = memmem(s + pos, n - pos, "\r\n", 2);

		if (eol == NULL)
			return 0;
		if (eol == s + pos)
			return (long)(pos + 2);
		pos = (size_t)(eol - s) + 2;
	}
}

/*
 * Tries to parse one complete reply from b (eof: the server has closed).
 * Returns 1 with r filled in, 0 when more bytes are needed, -1 when the
 * reply is malformed. Interim 1xx replies are dropped from b.
 */
static inline int su_parse(struct su_buf *b, int eof, int head_req, struct su_resp *r)
{
	char v[64];
	const char *end;
	size_t hlen;
	struct su_buf body = { 0 };

	for (;;) {
		if ((end = memmem(b->p, b->len, "\r\n\r\n", 4)) == NULL)
			return eof ? -1 : 0;
		hlen = (size_t)(end - b->p) + 4;
		if (b->len < 12 || strncmp(b->p, "HTTP/1.", 7) != 0)
			return -1;
		r->status = atoi(b->p + 9);
		if (r->status >= 200)
			break;
		memmove(b->p, b->p + hlen, b->len - hlen); /* 100 Continue */
		b->len -= hlen;
	}
	if ((r->head = strndup(b->p, hlen - 2)) == NULL)
		return -1;
	r->closing = eof || (su_header(r, "Connection", v, sizeof(v)) && strcasecmp(v, "close") == 0);
	if (head_req || r->status == 204 || r->status == 304) {
		su_buf_add(&body, "", 0);
	} else if (su_header(r, "Transfer-Encoding", v, sizeof(v)) && strcasecmp(v, "chunked") == 0) {
		long k = su_dechunk(b->p + hlen, b->len - hlen, &body);

		if (k <= 0) {
			free(body.p);
			free(r->head);
			r->head = NULL;
			return k < 0 || eof ? -1 : 0;
		}
	} else if (su_header(r, "Content-Length", v, sizeof(v))) {
		size_t cl = (size_t)strtoull(v, NULL, 10);

		if (b->len - hlen < cl) {
			free(r->head);
			r->head = NULL;
			return eof ? -1 : 0;
		}
		su_buf_add(&body, b->p + hlen, cl);
	} else if (!eof) {
		free(r->head);
		r->head = NULL;
		return 0;
	} else {
		su_buf_add(&body, b->p + hlen, b->len - hlen);
	}
	if (body.p == NULL)
		su_buf_add(&body, "", 0);
	r->body = body.p;
	r->body_len = body.len;
	return 1;
}

/* The request's bytes: request line, headers and body (chunk-encoded when
 * asked to). */
static inline int su_build(const struct su_req *q, struct su_buf *w)
{
	char line[512];
	size_t off;
	int n;

	/* the path goes in as it is: a long one (a cursor) is a test too */
	if (su_buf_add(w, q->method, strlen(q->method)) != 0 || su_buf_add(w, " ", 1) != 0 ||
	    su_buf_add(w, q->path, strlen(q->path)) != 0)
		return -1;
	n = snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: 127.0.0.1\r\n%s", q->keep_alive ? "" : "Connection: close\r\n");
	if (n < 0 || (size_t)n >= sizeof(line) || su_buf_add(w, line, (size_t)n) != 0)
		return -1;
	if (q->headers && su_buf_add(w, q->headers, strlen(q->headers)) != 0)
		return -1;
	if (q->chunked)
		n = snprintf(line, sizeof(line), "Transfer-Encoding: chunked\r\n\r\n");
	else if (q->body || strcmp(q->method, "POST") == 0 || strcmp(q->method, "PUT") == 0)
		n = snprintf(line, sizeof(line), "Content-Length: %zu\r\n\r\n", q->body_len);
	else
		n = snprintf(line, sizeof(line), "\r\n");
	if (su_buf_add(w, line, (size_t)n) != 0)
		return -1;
	if (!q->chunked)
		return q->body_len ? su_buf_add(w, q->body, q->body_len) : 0;
	for (off = 0; off < q->body_len; off += 16384) {
		size_t k = q->body_len - off < 16384 ? q->body_len - off : 16384;

		n = snprintf(line, sizeof(line), "%zx\r\n", k);
		if (su_buf_add(w, line, (size_t)n) != 0 || su_buf_add(w, (const char *)q->body + off, k) != 0 ||
		    su_buf_add(w, "\r\n", 2) != 0)
			return -1;
	}
	return su_buf_add(w, "0\r\n\r\n", 5);
}

/*
 * Sends q on the connected socket fd and reads one reply into r, within
 * timeout_ms. Sending stops quietly when the server closes or resets
 * (it may answer before reading the whole body). Returns 0, or -1 on
 * timeout, on a malformed reply, or when the connection ended without one.
 * r must be zeroed (or freed) before; free it with su_resp_free.
 */
static inline int su_exchange(int fd, const struct su_req *q, struct su_resp *r, int timeout_ms)
{
	double deadline = su_now() + timeout_ms / 1000.0;
	struct su_buf w = { 0 }, in = { 0 };
	size_t sent = 0;
	int send_dead = 0, rc = -1;
	char tmp[65536];

	memset(r, 0, sizeof(*r));
	if (su_build(q, &w) != 0)
		goto out;
	for (;;) {
		struct pollfd pf = { fd, (short)(POLLIN | (sent < w.len && !send_dead ? POLLOUT : 0)), 0 };
		int ms = (int)((deadline - su_now()) * 1000), k;
		ssize_t n;

		if (ms <= 0)
			goto out;
		k = poll(&pf, 1, ms);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			goto out;
		if ((pf.revents & POLLOUT) && sent < w.len && !send_dead) {
			n = send(fd, w.p + sent, w.len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				send_dead = 1;
		}
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n > 0 && su_buf_add(&in, tmp, (size_t)n) != 0)
			goto out;
		if (in.len == 0 && n <= 0)
			goto out; /* closed or reset without a reply */
		k = su_parse(&in, n <= 0, strcmp(q->method, "HEAD") == 0, r);
		if (k < 0)
			goto out;
		if (k == 1) {
			rc = 0;
			goto out;
		}
		if (n <= 0)
			goto out;
	}
out:
	if (rc != 0)
		su_resp_free(r);
	free(w.p);
	free(in.p);
	return rc;
}

/* One request on a new connection ("Connection: close"). 0 or -1. */
static inline int su_request(int port, const struct su_req *q, struct su_resp *r, int timeout_ms)
{
	struct su_req c = *q;
	int fd = su_connect(port), rc;

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return -1;
	c.keep_alive = 0;
	rc = su_exchange(fd, &c, r, timeout_ms);
	close(fd);
	return rc;
}

/* ---- a test's work directory ------------------------------------------- */

static inline int su_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes the directory tree at root (files first); 0, or -1 as nftw. */
static inline int su_rm_tree(const char *root)
{
	return nftw(root, su_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs `sh tests/catalog/pg.sh verb dir` (or $PG_SH's script), the tests'
 * throwaway PostgreSQL: its exit status. */
static inline int su_pg_ctl(const char *verb, const char *dir)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "sh %s %s %s", getenv("PG_SH") ? getenv("PG_SH") : "tests/catalog/pg.sh", verb, dir);
	return system(cmd);
}

#endif /* TESTS_SERVER_UTIL_H */
