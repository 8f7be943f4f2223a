/*
 * trace-server stream --provider: a file as it grows (or standard input)
 * sent into the server's captures as a provider (docs/PROVIDER-PROTOCOL.md).
 *
 * It registers, waits for a capture to start it, answers STARTED and sends
 * the input's whole records as DATA frames as they come (in streaming mode
 * each frame followed by SAVE_BUFFER, the next only once BUFFER_SAVED
 * came back); on STOP it sends what it holds, STATS and STOPPED, and waits
 * for the next START; TERMINATE ends it. The input's own provider records
 * are left to the server, which places everything in this provider's
 * section: an input holding several providers' records is not split.
 *
 * Its socket is written by hand, unlike every other request of client/
 * (http.c): the provider protocol runs on the connection after an HTTP
 * Upgrade (101), which libcurl does not hand over. This file makes the TCP
 * connection; the upgrade and the packets in and out are the provider
 * library's own (provider/conn.h, conn.c and wire.c, linked from
 * libtrace-provider.a), so that the two programs that play a provider
 * speak the protocol through one piece of code.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../ingest/fxtrec.h"
#include "../provider/conn.h"
#include "client_internal.h"

enum { FRAME_MAX = 1 << 20, FRAME_MIN = 64 * 1024, PEND_MAX = 8 << 20 };

struct prov {
	int sock, in, follow;
	int mode, started, saving, eof;
	uint32_t wraps;
	uint8_t *pend;          /* input bytes read, whole records first */
	size_t npend;
	struct pconn_rx rx;     /* from the server; a category list of 100 names of 100 bytes fits */
	uint64_t sent;
};

/* A connected TCP socket to the server, or -1 with err set. */
static int cl_connect(const struct cl_server *s, char *err, size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL, *a;
	char port[16], host[256];
	int fd = -1, rc, one = 1;

	/* a URL's "[::1]" is getaddrinfo's "::1" */
	snprintf(host, sizeof(host), "%.*s", (int)strcspn(s->host + (s->host[0] == '['), "]"),
		 s->host + (s->host[0] == '['));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", s->port);
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s: %s", s->host, gai_strerror(rc));
		return -1;
	}
	for (a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
			rc = errno;
			close(fd);
			fd = -1;
			errno = rc;
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s:%d: %s", s->host, s->port, strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int send_packet(struct prov *p, uint16_t req, uint32_t d32, uint64_t d64)
{
	return pconn_send_packet(p->sock, req, d32, d64);
}

/* Bytes of whole records at the front of pend (at most max). */
static size_t whole_records(const struct prov *p, size_t max)
{
	uint64_t records;
	size_t good = 0, n = p->npend < max ? p->npend : max;

	fxt_framing(p->pend, n, &records, &good);
	if (good == 0 && p->npend >= 8) {
		/* one record larger than max: send it whole if it is all here */
		uint64_t k = fxt_record_bytes(p->pend);

		if (k && k <= p->npend && k <= FIFO_MAX_PAYLOAD)
			good = (size_t)k;
	}
	return good;
}

/* Sends whole records held (all of them when flush, else a frame's worth
 * once there is one); 0, or -1 when the connection failed. */
static int send_records(struct prov *p, int flush)
{
	while (!p->saving) {
		size_t n = whole_records(p, FRAME_MAX);

		if (n == 0 || (!flush && n < FRAME_MIN && !p->eof))
			return 0;
		if (pconn_send_data(p->sock, FIFO_DATA_ROLLING, p->pend, n) != 0)
			return -1;
		p->sent += n;
		memmove(p->pend, p->pend + n, p->npend - n);
		p->npend -= n;
		if (p->mode == FIFO_MODE_STREAMING) {
			if (send_packet(p, FIFO_SAVE_BUFFER, p->wraps++, 0) != 0)
				return -1;
			p->saving = 1;
		}
	}
	return 0;
}

/* One packet from the server (a pconn_packet_fn); -1 to end (TERMINATE,
 * or an error). */
static int on_packet(void *arg, const struct fifo_packet *pk, const uint8_t *payload)
{
	struct prov *p = arg;

	(void)payload; /* the categories (DATA): the input is sent whole */
	switch (pk->request) {
	case FIFO_INITIALIZE:
		p->mode = (int)pk->data32;
		return 0;
	case FIFO_START:
		p->started = 1;
		p->saving = 0;
		return send_packet(p, FIFO_STARTED, FIFO_PROTOCOL_VERSION, 0);
	case FIFO_BUFFER_SAVED:
		p->saving = 0;
		return 0;
	case FIFO_STOP:
		if (!p->started)
			return 0;
	{
		int mode = p->mode;

		p->saving = 0; /* what is left goes as DATA before STOPPED, unsaved */
		p->mode = FIFO_MODE_ONESHOT;
		if (send_records(p, 1) != 0)
			return -1;
		p->mode = mode;
		p->started = 0;
	}
		return send_packet(p, FIFO_STATS, 0, 0) || send_packet(p, FIFO_STOPPED, 0, 0) ? -1 : 0;
	case FIFO_TERMINATE:
		return -1;
	default:
		return 0;
	}
}

/* Reads what the server sent and acts on every whole packet; -1 to end. */
static int read_server(struct prov *p)
{
	const char *why;

	if (pconn_receive(&p->rx, p->sock, on_packet, p, &why) == 0)
		return 0;
	if (why)
		fprintf(stderr, "trace-server stream: closing the provider connection: %s\n", why);
	return -1;
}

static int read_input(struct prov *p)
{
	ssize_t k;

	if (p->npend >= PEND_MAX || p->eof)
		return 0;
	k = read(p->in, p->pend + p->npend, PEND_MAX - p->npend);
	if (k > 0)
		p->npend += (size_t)k;
	else if (k == 0 && !p->follow)
		p->eof = 1;
	else if (k < 0 && errno != EAGAIN && errno != EINTR)
		p->eof = 1;
	return 0;
}

/* Connects and upgrades; 0, or -1 with a message printed. */
static int provider_connect(struct prov *p, const struct cl_server *srv, const char *name, const char *cats)
{
	char hostport[300], req[16384], err[512], reason[1024];
	size_t len;
	int status;

	snprintf(hostport, sizeof(hostport), "%s:%d", srv->host, srv->port);
	len = wire_format_upgrade(req, sizeof(req), hostport, name, (uint64_t)getpid(), cats ? cats : "", srv->token);
	if (len == 0) {
		fprintf(stderr, "trace-server stream: a provider's name is 1 to 100 bytes and its categories at most "
				"4000\n");
		return -1;
	}
	if ((p->sock = cl_connect(srv, err, sizeof(err))) < 0) {
		fprintf(stderr, "trace-server stream: %s\n", err);
		return -1;
	}
	if (pconn_upgrade(p->sock, req, len, &p->rx, NULL, NULL, &status, reason, sizeof(reason)) == 0)
		return 0;
	if (status == 0)
		fprintf(stderr, "trace-server stream: no reply to the provider connection\n");
	else
		fprintf(stderr, "trace-server stream: the server refused the provider: %s\n", reason);
	return -1;
}

int cl_provide(const struct cl_server *srv, const char *name, const char *cats, int in, int follow,
	       volatile sig_atomic_t *stop)
{
	struct prov p = { 0 };
	const char *why;
	int rc = 0, done;

	p.in = in;
	p.follow = follow;
	p.mode = FIFO_MODE_STREAMING;
	p.rx.max = FIFO_PACKET_SIZE + 10240;
	if ((p.pend = malloc(PEND_MAX)) == NULL || provider_connect(&p, srv, name, cats) != 0) {
		free(p.pend);
		pconn_rx_free(&p.rx);
		return 1;
	}
	fprintf(stderr, "trace-server stream: provider \"%s\" registered; waiting for a capture to start it\n", name);
	if (!follow)
		fcntl(in, F_SETFL, fcntl(in, F_GETFL) | O_NONBLOCK);
	/* the packets that came with the reply (INITIALIZE, perhaps START) */
	if ((done = pconn_dispatch(&p.rx, on_packet, &p, &why) != 0) && why)
		fprintf(stderr, "trace-server stream: closing the provider connection: %s\n", why);
	while (!done && !*stop) {
		struct pollfd pf = { p.sock, POLLIN, 0 };

		if (poll(&pf, 1, 100) > 0 && read_server(&p) != 0)
			break;
		if (p.started) {
			read_input(&p);
			if (send_records(&p, p.mode != FIFO_MODE_STREAMING || p.eof) != 0) {
				rc = 1;
				break;
			}
		}
	}
	fprintf(stderr, "trace-server stream: provider \"%s\" done; %lu bytes sent\n", name, (unsigned long)p.sent);
	close(p.sock);
	free(p.pend);
	pconn_rx_free(&p.rx);
	return rc;
}
