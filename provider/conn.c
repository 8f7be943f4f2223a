/*
 * The provider's end of its connection (conn.h): the upgrade handshake
 * and the packets in and out of the socket, for the library's transport
 * and for `trace-server stream --provider` alike. Nothing here knows the
 * engine or a file: a side hands in its socket and its packet handler.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn.h"

enum { MAX_HEAD = 8192, RX_FIRST = 65536, RX_ROOM = 4096 };

int pconn_send_all(int sock, const void *p, size_t n)
{
	const uint8_t *c = p;

	while (n > 0) {
		ssize_t k = send(sock, c, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int pconn_send_packet(int sock, uint16_t request, uint32_t data32, uint64_t data64)
{
	struct fifo_packet pk = { request, 0, data32, data64 };
	uint8_t raw[FIFO_PACKET_SIZE];

	fifo_encode(raw, &pk);
	return pconn_send_all(sock, raw, sizeof(raw));
}

int pconn_send_data(int sock, int kind, const void *p, size_t n)
{
	return pconn_send_packet(sock, FIFO_DATA, (uint32_t)kind, n) != 0 || pconn_send_all(sock, p, n) != 0 ? -1 : 0;
}

int pconn_send_alert(int sock, const char *name)
{
	uint8_t raw[FIFO_PACKET_SIZE];

	fifo_alert_encode(raw, name);
	return pconn_send_all(sock, raw, sizeof(raw));
}

/* Makes room in rx: its buffer doubles (from RX_FIRST) up to rx->max.
 * 0, or -1 when it cannot grow (at max, or memory ran out). */
static int rx_grow(struct pconn_rx *rx)
{
	size_t cap = rx->cap ? rx->cap * 2 : RX_FIRST;
	uint8_t *b;

	if (cap > rx->max)
		cap = rx->max;
	if (cap <= rx->cap || (b = realloc(rx->buf, cap)) == NULL)
		return -1;
	rx->buf = b;
	rx->cap = cap;
	return 0;
}

int pconn_upgrade(int sock, const char *req, size_t len, struct pconn_rx *rx, pconn_wait_fn wait, void *arg,
		  int *status, char *reason, size_t reason_cap)
{
	char head[MAX_HEAD];
	size_t n = 0, used = 0;
	uint64_t id;
	int rc = WIRE_MORE;

	*status = 0;
	if (pconn_send_all(sock, req, len) != 0)
		return -1;
	while (rc == WIRE_MORE && n < sizeof(head)) {
		ssize_t k;

		if ((wait && wait(arg, sock) != 1) || (k = recv(sock, head + n, sizeof(head) - n, 0)) <= 0)
			return -1;
		n += (size_t)k;
		rc = wire_parse_upgrade(head, n, sizeof(head), &used, &id, status);
	}
	if (rc != WIRE_OK) {
		if (*status && reason_cap > 0) {
			size_t r = rc == WIRE_EHTTP ? n - used : 0;

			r = r < reason_cap - 1 ? r : reason_cap - 1;
			memcpy(reason, head + used, r);
			reason[r] = '\0';
		}
		return -1;
	}
	rx->len = 0;
	while (rx->cap == 0 || rx->cap < n - used)
		if (rx_grow(rx) != 0)
			return -1;
	memcpy(rx->buf, head + used, n - used); /* packets sent right behind the head */
	rx->len = n - used;
	return 0;
}

int pconn_dispatch(struct pconn_rx *rx, pconn_packet_fn on_packet, void *arg, const char **why)
{
	struct fifo_packet pk;
	const uint8_t *payload;
	size_t used, off = 0;
	int rc;

	*why = NULL;
	while ((rc = wire_decode_server(rx->buf + off, rx->len - off, &pk, &payload, &used)) == WIRE_OK) {
		if (on_packet(arg, &pk, payload) != 0)
			return -1;
		off += used;
	}
	if (rc != WIRE_MORE) {
		*why = wire_strerror(rc);
		return -1;
	}
	memmove(rx->buf, rx->buf + off, rx->len - off);
	rx->len -= off;
	return 0;
}

int pconn_receive(struct pconn_rx *rx, int sock, pconn_packet_fn on_packet, void *arg, const char **why)
{
	ssize_t k;

	*why = NULL;
	/* a packet larger than max never completes: once rx is full, the
	 * connection ends */
	if (rx->cap - rx->len < RX_ROOM && rx_grow(rx) != 0 && rx->len == rx->cap)
		return -1;
	k = recv(sock, rx->buf + rx->len, rx->cap - rx->len, 0);
	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (k <= 0)
		return -1;
	rx->len += (size_t)k;
	return pconn_dispatch(rx, on_packet, arg, why);
}

void pconn_rx_free(struct pconn_rx *rx)
{
	free(rx->buf);
	rx->buf = NULL;
	rx->len = rx->cap = 0;
}
