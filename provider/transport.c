/*
 * The transport: one thread per process that keeps a connection to the
 * server (docs/PROVIDER-PROTOCOL.md), answers its requests by driving the
 * engine (INITIALIZE, START, STOP, TERMINATE, BUFFER_SAVED) and sends the
 * buffers. Traced threads never touch the socket: when a streaming buffer
 * fills, the writer that saw it writes one byte to a non-blocking pipe and
 * goes on; this thread does the rest.
 *
 * When no server answers, the engine stays uninitialized, every call site
 * stays off and the program runs untraced; the thread retries with a backoff
 * from 100 ms to 5 s. When the connection is lost while recording, the
 * buffers are freed (tracing off) and the thread reconnects; the server
 * starts it again.
 *
 * At exit (trace_provider_stop, registered with atexit) a provider that is
 * recording sends what its buffers hold as for STOP: DATA, STATS, STOPPED,
 * and closes only once the server has all of it (linger_out), within the
 * same exit timeout. The document does not say what a provider does when
 * its program ends during a capture; this is our reading of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "provider_internal.h"

#define ALERTS 16

struct transport {
	pthread_mutex_t lock;    /* everything below that other threads touch */
	pthread_cond_t cond;     /* started / thread state changes */
	pthread_t thread;
	int running;             /* the thread was created and not yet joined */
	int done;                /* the thread returned */
	_Atomic int stop_req;    /* trace_provider_stop asked the thread to end */
	struct timespec stop_by; /* CLOCK_REALTIME: when trace_provider_stop stops waiting */
	int wake[2];             /* non-blocking pipe: [1] written to wake the thread */
	int sock;                /* -1 when not connected */
	int connected;
	int unreachable;         /* the last attempt to connect failed (refused, no answer, HTTP error) */
	char host[256];
	unsigned port;
	char token[1100];
	char name[128];
	struct pconn_rx rx;      /* bytes received, not yet a whole frame (conn.h) */
	uint32_t outstanding;    /* wrapped count + 1 of the SAVE_BUFFER awaiting BUFFER_SAVED; 0 none */
	unsigned flush_ms;       /* streaming: records wait at most this long to be sent; 0 only full buffers */
	int64_t next_flush;      /* CLOCK_MONOTONIC ms of the next flush */
	char alerts[ALERTS][14]; /* queued alert names, NUL-padded */
	unsigned alert_head, alert_tail;
};

static struct transport tp = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.wake = {-1, -1},
	.sock = -1,
	.rx = {.max = FIFO_PACKET_SIZE + FIFO_MAX_PAYLOAD + 65536},
};

/* ---- Sending (the packets are conn.c's) ---------------------------------------- */

static int send_packet(uint16_t request, uint32_t data32, uint64_t data64)
{
	return pconn_send_packet(tp.sock, request, data32, data64);
}

/* Sends records as DATA frames of at most 64 MiB, cut between records. */
static int send_records(int kind, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t take = n <= FIFO_MAX_PAYLOAD ? n : eng_whole_records(p, (size_t)FIFO_MAX_PAYLOAD);

		if (take == 0 || pconn_send_data(tp.sock, kind, p, take) != 0)
			return -1;
		atomic_fetch_add_explicit(&eng.sent, take, memory_order_relaxed);
		p += take;
		n -= take;
	}
	return 0;
}

static int send_spans(const struct eng_span *s, size_t k)
{
	size_t i;

	for (i = 0; i < k; i++)
		if (send_records(s[i].kind, s[i].p, s[i].n) != 0)
			return -1;
	return 0;
}

/* Streaming: saves the buffer a writer found full, if any and if no save
 * is outstanding. */
static int save_pending(void)
{
	uint32_t w1 = atomic_load_explicit(&eng.save_wrap, memory_order_acquire);
	struct eng_span spans[2];
	uint64_t dend;
	size_t k;

	if (w1 == 0 || tp.outstanding != 0)
		return 0;
	atomic_store_explicit(&eng.save_wrap, 0, memory_order_relaxed);
	k = eng_save_spans(w1 - 1, spans, &dend);
	if (send_spans(spans, k) != 0 || send_packet(FIFO_SAVE_BUFFER, w1 - 1, dend) != 0)
		return -1;
	tp.outstanding = w1;
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Streaming: every flush_ms, sends what was written since the last send,
 * so that a program that fills its buffer slowly is seen live and not
 * only at STOP (docs/PROVIDER-PROTOCOL.md). 0, or -1 when the connection
 * failed. */
static int flush_due(void)
{
	struct eng_span spans[2];
	int64_t now;

	if (tp.flush_ms == 0 || eng.mode != ENG_STREAMING || !atomic_load(&eng.recording))
		return 0;
	if ((now = mono_ms()) < tp.next_flush)
		return 0;
	tp.next_flush = now + tp.flush_ms;
	return send_spans(spans, eng_flush_spans(spans));
}

/* How long the session's poll may sleep: until the next flush while one
 * can be due (streaming, recording), 1 s at most. */
static int poll_ms(void)
{
	int64_t left = tp.next_flush - mono_ms();

	if (tp.flush_ms == 0 || eng.mode != ENG_STREAMING || !atomic_load(&eng.recording))
		return 1000;
	return left < 0 ? 0 : left > 1000 ? 1000 : (int)left;
}

/* STOP: every record the buffers hold, then STATS and STOPPED. */
static int stop_and_send(void)
{
	struct eng_span spans[3];
	struct trace_stats st;
	size_t k;

	if (eng.mem == NULL)
		return 0;
	eng_stop();
	if (eng.mode == ENG_STREAMING && save_pending() != 0)
		return -1;
	k = eng_stop_spans(spans);
	if (send_spans(spans, k) != 0)
		return -1;
	trace_get_stats(&st);
	if (eng.mode == ENG_CIRCULAR && send_packet(FIFO_OVERWRITTEN, 0, st.records_overwritten) != 0)
		return -1;
	if (send_packet(FIFO_STATS, st.wrapped_count, st.records_dropped) != 0 || send_packet(FIFO_STOPPED, 0, 0) != 0)
		return -1;
	return 0;
}

static int send_alerts(void)
{
	char name[14];

	for (;;) {
		pthread_mutex_lock(&tp.lock);
		if (tp.alert_head == tp.alert_tail) {
			pthread_mutex_unlock(&tp.lock);
			return 0;
		}
		memcpy(name, tp.alerts[tp.alert_head % ALERTS], 14);
		tp.alert_head++;
		pthread_mutex_unlock(&tp.lock);
		if (pconn_send_alert(tp.sock, name) != 0) /* name: NUL-padded, 14 bytes */
			return -1;
	}
}

/*
 * At exit, after the last frame: ends our side of the connection and
 * waits, reading and dropping what the server sends, until the server has
 * every byte we sent (the socket's send queue is empty: all of it
 * acknowledged, so in the server's kernel), the server closed, or
 * trace_provider_stop's deadline.
 *
 * Closing at once is not enough. Once the process has closed the socket,
 * any byte that reaches it (the server's STOP or TERMINATE, sent when the
 * program's end ends the capture) makes the kernel reset the connection
 * and throw away what it had not yet sent: under load, the frames the
 * server's reader had not yet taken in, often all of a circular or
 * oneshot buffer.
 */
static void linger_out(void)
{
	struct pollfd pf = {tp.sock, POLLIN, 0};
	struct timespec now;
	char scratch[4096];

	shutdown(tp.sock, SHUT_WR);
	for (;;) {
		int unsent = 0;
		long ms;

		if (ioctl(tp.sock, SIOCOUTQ, &unsent) == 0 && unsent == 0) {
			/* what the server sent meanwhile, taken so that close()
			 * ends quietly (a reset now would lose nothing: the
			 * server's kernel holds our frames for its reader) */
			while (recv(tp.sock, scratch, sizeof(scratch), MSG_DONTWAIT) > 0)
				;
			return;
		}
		clock_gettime(CLOCK_REALTIME, &now);
		ms = (tp.stop_by.tv_sec - now.tv_sec) * 1000 + (tp.stop_by.tv_nsec - now.tv_nsec) / 1000000;
		if (ms <= 0)
			return;
		if (poll(&pf, 1, ms < 10 ? (int)ms : 10) < 0 && errno != EINTR)
			return;
		if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t k = recv(tp.sock, scratch, sizeof(scratch), MSG_DONTWAIT);

			if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
				return; /* the server closed: it read everything */
		}
	}
}

/* ---- Receiving --------------------------------------------------------------- */

/* One packet from the server (a pconn_packet_fn). Returns 0, or -1 to
 * close the connection. */
static int handle_packet(void *arg, const struct fifo_packet *pkt, const uint8_t *payload)
{
	(void)arg;
	switch (pkt->request) {
	case FIFO_DATA:
		if (pkt->data32 == 1) {
			size_t n = utf8_cut((const char *)payload, (size_t)pkt->data64, sizeof(eng.categories) - 1);

			pthread_mutex_lock(&eng.lock);
			memcpy(eng.categories, payload, n);
			eng.categories[n] = '\0';
			pthread_mutex_unlock(&eng.lock);
			if (atomic_load(&eng.recording))
				eng_update_sites();
		}
		return 0;
	case FIFO_INITIALIZE:
		if (atomic_load(&eng.recording) && stop_and_send() != 0)
			return -1;
		tp.outstanding = 0;
		return eng_initialize((int)pkt->data32, pkt->data64);
	case FIFO_START:
		if (eng.mem == NULL || atomic_load(&eng.recording))
			return 0;
		eng_start(pkt->data32 >= 1 && pkt->data32 <= 3 ? (int)pkt->data32 : ENG_CLEAR_ENTIRE, NULL);
		tp.outstanding = 0;
		if (send_packet(FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0) != 0)
			return -1;
		pthread_mutex_lock(&tp.lock);
		pthread_cond_broadcast(&tp.cond);
		pthread_mutex_unlock(&tp.lock);
		return 0;
	case FIFO_STOP:
		return atomic_load(&eng.recording) ? stop_and_send() : 0;
	case FIFO_TERMINATE:
		if (atomic_load(&eng.recording) && stop_and_send() != 0)
			return -1;
		eng_terminate();
		tp.outstanding = 0;
		return 0;
	case FIFO_BUFFER_SAVED:
		/* a BUFFER_SAVED that answers no outstanding SAVE_BUFFER is ignored */
		if (tp.outstanding != pkt->data32 + 1)
			return 0;
		tp.outstanding = 0;
		eng_mark_saved(pkt->data32);
		return save_pending();
	}
	return -1;
}

/* Reads what the socket has and handles every whole frame. Returns 0, or
 * -1 when the connection is closed or broken. */
static int receive(void)
{
	const char *why;

	if (pconn_receive(&tp.rx, tp.sock, handle_packet, NULL, &why) == 0)
		return 0;
	if (why)
		fprintf(stderr, "trace: closing the connection to %s:%u: %s\n", tp.host, tp.port, why);
	return -1;
}

/* ---- Connecting -------------------------------------------------------------- */

static void drain_wake(void)
{
	char b[64];

	while (read(tp.wake[0], b, sizeof(b)) > 0)
		;
}

/* Waits for fd to be ready for events, or for the provider to stop.
 * 1 ready, 0 timeout or stop, -1 error. */
static int wait_fd(int fd, short events, int ms)
{
	struct pollfd pf[2] = {{fd, events, 0}, {tp.wake[0], POLLIN, 0}};

	for (;;) {
		int r = poll(pf, 2, ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || atomic_load(&tp.stop_req))
			return r < 0 ? -1 : 0;
		if (pf[0].revents)
			return 1;
		drain_wake(); /* a wake for the session to come: alerts, saves */
	}
}

/* connect() that gives up after 3 s or when the provider stops. */
static int connect_fd(int fd, const struct sockaddr *sa, socklen_t len)
{
	int flags = fcntl(fd, F_GETFL), err = 0;
	socklen_t el = sizeof(err);

	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	if (connect(fd, sa, len) != 0 &&
	    (errno != EINPROGRESS || wait_fd(fd, POLLOUT, 3000) != 1 ||
	     getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0))
		return -1;
	fcntl(fd, F_SETFL, flags);
	return 0;
}

static int connect_tcp(void)
{
	struct addrinfo hints = {0}, *res, *ai;
	char port[16];
	int fd = -1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%u", tp.port);
	if (getaddrinfo(tp.host, port, &hints, &res) != 0)
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		struct timeval tv = {5, 0};
		int one = 1;

		if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol)) < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect_fd(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The reply to the upgrade may be read (a pconn_wait_fn): within 5 s, and
 * not once the provider stops. */
static int reply_ready(void *arg, int fd)
{
	(void)arg;
	return wait_fd(fd, POLLIN, 5000);
}

/* Connects and upgrades. Returns 0 with tp.sock set, or -1. */
static int connect_upgrade(void)
{
	char req[2048], reason[1];
	char hostport[300];
	size_t len;
	int status;

	snprintf(hostport, sizeof(hostport), strchr(tp.host, ':') ? "[%s]:%u" : "%s:%u", tp.host, tp.port);
	len = wire_format_upgrade(req, sizeof(req), hostport, tp.name, (uint64_t)getpid(), NULL, tp.token);
	if (len == 0 || (tp.sock = connect_tcp()) < 0)
		return -1;
	if (pconn_upgrade(tp.sock, req, len, &tp.rx, reply_ready, NULL, &status, reason, sizeof(reason)) == 0)
		return 0;
	if (status)
		fprintf(stderr, "trace: %s:%u refused the provider: HTTP %d\n", tp.host, tp.port, status);
	close(tp.sock);
	tp.sock = -1;
	return -1;
}

/* The frames already received with the head, then the connection until it
 * ends or the provider stops. */
static void session(void)
{
	struct pollfd pf[2] = {{tp.sock, POLLIN, 0}, {tp.wake[0], POLLIN, 0}};
	const char *why;

	if (pconn_dispatch(&tp.rx, handle_packet, NULL, &why) != 0) {
		if (why)
			fprintf(stderr, "trace: closing the connection to %s:%u: %s\n", tp.host, tp.port, why);
		return;
	}
	for (;;) {
		if (poll(pf, 2, poll_ms()) < 0 && errno != EINTR)
			return;
		if (pf[1].revents & POLLIN)
			drain_wake();
		if (atomic_load(&tp.stop_req)) {
			/* alerts trace_alert queued (and answered 0 for) go
			 * first: the program may end right after it */
			if (send_alerts() != 0)
				return;
			if (!atomic_load(&eng.recording) || stop_and_send() == 0)
				linger_out();
			return;
		}
		if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && receive() != 0)
			return;
		if (save_pending() != 0 || flush_due() != 0 || send_alerts() != 0)
			return;
	}
}

/* Sleeps ms, or less when woken. */
static void nap(int ms)
{
	struct pollfd pf = {tp.wake[0], POLLIN, 0};

	if (poll(&pf, 1, ms) > 0)
		drain_wake();
}

static void *transport_main(void *arg)
{
	int backoff = 100;

	(void)arg;
	while (!atomic_load(&tp.stop_req)) {
		if (connect_upgrade() != 0) {
			pthread_mutex_lock(&tp.lock);
			tp.unreachable = 1;
			pthread_cond_broadcast(&tp.cond); /* a start timeout need not wait it out */
			pthread_mutex_unlock(&tp.lock);
			nap(backoff);
			backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
			continue;
		}
		backoff = 100;
		pthread_mutex_lock(&eng.lock);
		eng.categories[0] = '\0'; /* a new server: every category until it says */
		pthread_mutex_unlock(&eng.lock);
		pthread_mutex_lock(&tp.lock);
		tp.connected = 1;
		tp.unreachable = 0;
		pthread_mutex_unlock(&tp.lock);
		session();
		pthread_mutex_lock(&tp.lock);
		tp.connected = 0;
		pthread_mutex_unlock(&tp.lock);
		eng_terminate(); /* tracing off until the server starts us again */
		tp.outstanding = 0;
		shutdown(tp.sock, SHUT_RDWR);
		close(tp.sock);
		tp.sock = -1;
	}
	pthread_mutex_lock(&tp.lock);
	tp.done = 1;
	pthread_cond_broadcast(&tp.cond);
	pthread_mutex_unlock(&tp.lock);
	return NULL;
}

/* ---- The API ----------------------------------------------------------------- */

static const char *pick(const char *given, const char *env, const char *dflt)
{
	const char *e;

	if (given && given[0])
		return given;
	if ((e = getenv(env)) && e[0])
		return e;
	return dflt;
}

static void default_name(char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/comm", "r");

	if (f == NULL || fgets(out, (int)cap, f) == NULL)
		snprintf(out, cap, "provider");
	out[strcspn(out, "\n")] = '\0';
	if (f)
		fclose(f);
}

static void at_exit(void)
{
	trace_provider_stop();
}

static int configure(const struct trace_provider_config *cfg, unsigned *timeout)
{
	const char *server = pick(cfg ? cfg->server : NULL, "TRACE_SERVER", NULL);
	const char *e;

	if (server == NULL || wire_parse_url(server, tp.host, sizeof(tp.host), &tp.port) != 0) {
		if (server)
			fprintf(stderr, "trace: TRACE_SERVER must be http://host[:port], not \"%s\"\n", server);
		return -1;
	}
	snprintf(tp.token, sizeof(tp.token), "%s", pick(cfg ? cfg->token : NULL, "TRACE_TOKEN", ""));
	e = pick(cfg ? cfg->name : NULL, "TRACE_PROVIDER_NAME", NULL);
	if (e)
		utf8_copy(tp.name, sizeof(tp.name), e);
	else
		default_name(tp.name, sizeof(tp.name));
	e = getenv("TRACE_FLUSH_MS");
	tp.flush_ms = e && e[0] ? (unsigned)strtoul(e, NULL, 10) : 500;
	*timeout = cfg && cfg->start_timeout_ms ? cfg->start_timeout_ms : 0;
	if (*timeout == 0 && (e = getenv("TRACE_START_TIMEOUT_MS")))
		*timeout = (unsigned)strtoul(e, NULL, 10);
	if (eng.process_name[0] == '\0')
		default_name(eng.process_name, sizeof(eng.process_name));
	return 0;
}

/* In a child made by fork(): no provider thread came along, so the child
 * records nothing, never wakes the parent's thread, and exits at once. */
static void child_after_fork(void)
{
	tp.running = 0;
	tp.connected = 0;
	eng.wake_fd = -1;
	atomic_store(&eng.recording, 0);
	atomic_fetch_or(&eng.rolling, ENG_CLOSED);
	atomic_fetch_or(&eng.durable, ENG_CLOSED);
}

static void deadline_in(struct timespec *ts, unsigned ms);

/* Waits up to timeout_ms for the server to start tracing; with
 * until_unreachable, only until the first attempt to connect failed (the
 * start timeout: a server that refused the connection will not start us
 * within it). 1 when recording. */
static int wait_started(unsigned timeout_ms, int until_unreachable)
{
	struct timespec ts;

	deadline_in(&ts, timeout_ms);
	pthread_mutex_lock(&tp.lock);
	while (tp.running && !atomic_load(&eng.recording) && !tp.done && !(until_unreachable && tp.unreachable) &&
	       pthread_cond_timedwait(&tp.cond, &tp.lock, &ts) == 0)
		;
	pthread_mutex_unlock(&tp.lock);
	return atomic_load(&eng.recording);
}

int trace_provider_start(const struct trace_provider_config *cfg)
{
	static int atexit_done;
	unsigned timeout = 0;

	pthread_mutex_lock(&tp.lock);
	if (tp.running) {
		pthread_mutex_unlock(&tp.lock);
		return 0;
	}
	if (configure(cfg, &timeout) != 0)
		goto out_fail;
	if (tp.wake[0] < 0 && pipe2(tp.wake, O_NONBLOCK | O_CLOEXEC) != 0)
		goto out_fail;
	eng.wake_fd = tp.wake[1];
	eng_clock_init();
	eng_membarrier_init();
	atomic_store(&tp.stop_req, 0);
	tp.done = 0;
	tp.unreachable = 0;
	if (pthread_create(&tp.thread, NULL, transport_main, NULL) != 0)
		goto out_fail;
	tp.running = 1;
	if (!atexit_done)
		atexit_done = atexit(at_exit) == 0 && pthread_atfork(NULL, NULL, child_after_fork) == 0;
	pthread_mutex_unlock(&tp.lock);
	if (timeout)
		wait_started(timeout, 1);
	return 0;
out_fail:
	pthread_mutex_unlock(&tp.lock);
	return -1;
}

static void deadline_in(struct timespec *ts, unsigned ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void trace_provider_stop(void)
{
	const char *e = getenv("TRACE_EXIT_TIMEOUT_MS");
	unsigned ms = e ? (unsigned)strtoul(e, NULL, 10) : 5000;
	struct timespec ts;
	int done;

	pthread_mutex_lock(&tp.lock);
	if (!tp.running) {
		pthread_mutex_unlock(&tp.lock);
		return;
	}
	deadline_in(&ts, ms);
	tp.stop_by = ts; /* before stop_req, which publishes it */
	atomic_store(&tp.stop_req, 1);
	if (write(tp.wake[1], "", 1) < 0) {
		/* the pipe is full: the thread is awake */
	}
	while (!tp.done && pthread_cond_timedwait(&tp.cond, &tp.lock, &ts) == 0)
		;
	done = tp.done;
	tp.running = 0;
	pthread_mutex_unlock(&tp.lock);
	if (done)
		pthread_join(tp.thread, NULL);
	else
		pthread_detach(tp.thread); /* the server is too slow: leave it */
}

int trace_provider_wait_started(unsigned timeout_ms)
{
	return wait_started(timeout_ms, 0);
}

/* 1 when name is 1 to 14 bytes of printable ASCII (what the server takes). */
static int alert_name_ok(const char *name)
{
	size_t i;

	for (i = 0; name[i] && i < 14; i++)
		if (name[i] < 0x20 || name[i] > 0x7e)
			return 0;
	return i > 0;
}

int trace_alert(const char *name)
{
	int rc = -1;

	if (name == NULL || !alert_name_ok(name))
		return -1;
	pthread_mutex_lock(&tp.lock);
	if (tp.connected && tp.alert_tail - tp.alert_head < ALERTS) {
		char *slot = tp.alerts[tp.alert_tail % ALERTS];

		memset(slot, 0, 14);
		memcpy(slot, name, strnlen(name, 14));
		tp.alert_tail++;
		rc = 0;
	}
	pthread_mutex_unlock(&tp.lock);
	if (rc == 0 && write(tp.wake[1], "", 1) < 0) {
		/* the pipe is full: the thread is awake */
	}
	return rc;
}
