/*
 * A test peer that plays the server's side of docs/PROVIDER-PROTOCOL.md on
 * a loopback port: it accepts the provider's upgrade request, answers 101,
 * sends the server's packets and reads the provider's frames. Written from
 * the document, not from provider/wire.c, so that the tests check the
 * library against the contract. Header-only, for the tests in tests/provider/
 * (and tests/client/, whose fake servers answer plain HTTP through it).
 */
#ifndef TESTS_PROVIDER_PEER_H
#define TESTS_PROVIDER_PEER_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct peer {
	int lfd;            /* listening socket, 127.0.0.1:port */
	int fd;             /* the provider's connection; -1 none */
	unsigned port;
	char url[64];       /* http://127.0.0.1:port */
	char request[4096]; /* the last upgrade request's head */
	uint8_t *buf;       /* received, not yet taken */
	size_t len, cap;
};

struct peer_frame {
	uint16_t request, reserved;
	uint32_t data32;
	uint64_t data64;
	uint8_t raw[16];
	uint8_t *payload; /* DATA only; malloc'd, freed by peer_frame_free */
};

static inline int peer_listen(struct peer *p)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int one = 1;

	memset(p, 0, sizeof(*p));
	memset(&a, 0, sizeof(a));
	p->fd = -1;
	if ((p->lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(p->lfd, 8) != 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &al) != 0)
		return -1;
	p->port = ntohs(a.sin_port);
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%u", p->port);
	return 0;
}

/* Waits up to ms for fd to be readable: 1, 0 on timeout. */
static inline int peer_wait(int fd, int ms)
{
	struct pollfd pf;

	pf.fd = fd;
	pf.events = POLLIN;
	pf.revents = 0;

	return poll(&pf, 1, ms) > 0;
}

/* Reads into p->buf; 0, or -1 on EOF, error or timeout. */
static inline int peer_fill(struct peer *p, int ms)
{
	ssize_t k;

	if (p->cap - p->len < 65536) {
		p->cap = p->cap ? p->cap * 2 : 1 << 20;
		p->buf = (uint8_t *)realloc(p->buf, p->cap);
		if (p->buf == NULL)
			abort();
	}
	if (!peer_wait(p->fd, ms))
		return -1;
	k = recv(p->fd, p->buf + p->len, p->cap - p->len, 0);
	if (k <= 0)
		return -1;
	p->len += (size_t)k;
	return 0;
}

static inline void peer_take(struct peer *p, size_t n)
{
	memmove(p->buf, p->buf + n, p->len - n);
	p->len -= n;
}

/* Accepts a connection and reads its request head (kept in p->request).
 * reply: the whole reply to send, or NULL for the 101 of the document.
 * Returns 0, or -1 on timeout. */
static inline int peer_accept(struct peer *p, int ms, const char *reply)
{
	static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\n"
				 "Upgrade: fxt-provider/1\r\n"
				 "Connection: Upgrade\r\n"
				 "X-Provider-Id: 7\r\n\r\n";
	char *end;

	if (!peer_wait(p->lfd, ms) || (p->fd = accept(p->lfd, NULL, NULL)) < 0)
		return -1;
	p->len = 0;
	while ((end = p->len ? (char *)memmem(p->buf, p->len, "\r\n\r\n", 4) : NULL) == NULL)
		if (peer_fill(p, ms) != 0)
			return -1;
	snprintf(p->request, sizeof(p->request), "%.*s", (int)((uint8_t *)end - p->buf), (char *)p->buf);
	peer_take(p, (size_t)((uint8_t *)end + 4 - p->buf));
	reply = reply ? reply : ok;
	return send(p->fd, reply, strlen(reply), MSG_NOSIGNAL) == (ssize_t)strlen(reply) ? 0 : -1;
}

static inline void peer_put(uint8_t *b, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++, v >>= 8)
		b[i] = (uint8_t)v;
}

static inline int peer_send(struct peer *p, uint16_t request, uint32_t data32, uint64_t data64, const void *payload,
			    size_t n)
{
	uint8_t b[16];

	peer_put(b, request, 2);
	peer_put(b + 2, 0, 2);
	peer_put(b + 4, data32, 4);
	peer_put(b + 8, data64, 8);
	if (send(p->fd, b, 16, MSG_NOSIGNAL) != 16)
		return -1;
	return n == 0 || send(p->fd, payload, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static inline uint64_t peer_le(const uint8_t *b, int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | b[n];
	return v;
}

/* Reads one frame within ms. 0, or -1 on timeout or EOF. */
static inline int peer_recv(struct peer *p, struct peer_frame *f, int ms)
{
	memset(f, 0, sizeof(*f));
	while (p->len < 16)
		if (peer_fill(p, ms) != 0)
			return -1;
	memcpy(f->raw, p->buf, 16);
	f->request = (uint16_t)peer_le(p->buf, 2);
	f->reserved = (uint16_t)peer_le(p->buf + 2, 2);
	f->data32 = (uint32_t)peer_le(p->buf + 4, 4);
	f->data64 = peer_le(p->buf + 8, 8);
	if (f->request != 0x8000) {
		peer_take(p, 16);
		return 0;
	}
	if (f->data64 > (64u << 20))
		return -1;
	while (p->len < 16 + f->data64)
		if (peer_fill(p, ms) != 0)
			return -1;
	f->payload = (uint8_t *)malloc(f->data64 ? f->data64 : 1);
	memcpy(f->payload, p->buf + 16, f->data64);
	peer_take(p, 16 + (size_t)f->data64);
	return 0;
}

static inline void peer_frame_free(struct peer_frame *f)
{
	free(f->payload);
	f->payload = NULL;
}

/* 1 when the provider closed the connection within ms (anything it sent
 * before is discarded). */
static inline int peer_closed(struct peer *p, int ms)
{
	for (;;) {
		if (!peer_wait(p->fd, ms))
			return 0;
		p->len = 0;
		if (recv(p->fd, p->buf, p->cap, 0) <= 0)
			return 1;
	}
}

static inline void peer_hangup(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->len = 0;
}

static inline void peer_fini(struct peer *p)
{
	peer_hangup(p);
	close(p->lfd);
	free(p->buf);
}

#endif
