/*
 * The provider's end of its connection to the trace manager
 * (docs/PROVIDER-PROTOCOL.md): the upgrade request and its reply, then the
 * packets out (STARTED, DATA frames, SAVE_BUFFER, STATS, STOPPED, ALERT)
 * and the server's packets in. Written once, for both programs that play
 * a provider: the provider library's transport (transport.c) and
 * `trace-server stream --provider` (client/provide.c), which links these
 * two files of the library (wire.c, conn.c) and nothing else of it. The
 * packets and their codec are protocol.h's, which the server includes too.
 *
 * What each side keeps: making the TCP connection and waiting on the
 * socket (the library gives up when its program stops, through its wake
 * pipe, and bounds every send and receive by 5 s; the command line blocks
 * like any command-line client), and what a packet means to it.
 *
 * The socket is written by hand: the protocol runs on the connection after
 * an HTTP Upgrade (101), which libcurl does not hand over, and the
 * provider library links nothing.
 */
#ifndef PROVIDER_CONN_H
#define PROVIDER_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

/* ---- The wire (wire.c): pure functions over bytes -------------------------- */

enum wire_err {
	WIRE_OK = 0,
	WIRE_MORE = 1,       /* need more bytes */
	WIRE_EUNKNOWN = -1,  /* unknown request code */
	WIRE_ERESERVED = -2, /* reserved field not zero */
	WIRE_EPAYLOAD = -3,  /* payload too large, or on a packet that has none */
	WIRE_EHTTP = -4,     /* not a 101 upgrade to fxt-provider/1 */
	WIRE_ETOOBIG = -5,   /* the reply head is larger than we read */
};
const char *wire_strerror(int err);

/*
 * Decodes one server-to-provider frame from buf[0..n). Returns WIRE_OK with
 * *pkt and *payload (pointing into buf, pkt->data64 bytes for DATA, else
 * NULL) and *used (16 + payload) set; WIRE_MORE when buf holds less than a
 * whole frame; or a negative wire_err (the connection must be closed).
 */
int wire_decode_server(const uint8_t *buf, size_t n, struct fifo_packet *pkt, const uint8_t **payload, size_t *used);
/*
 * Parses the reply to the upgrade request in buf[0..n). Returns WIRE_OK with
 * *used (bytes up to and including the blank line) and *provider_id set;
 * WIRE_MORE when the head is not complete; WIRE_ETOOBIG when n reached
 * max without a complete head; WIRE_EHTTP for any reply other than a 101
 * with Upgrade: fxt-provider/1 (*status then holds the HTTP status, or 0).
 */
int wire_parse_upgrade(const char *buf, size_t n, size_t max, size_t *used, uint64_t *provider_id, int *status);
/*
 * Writes the upgrade request into out (size cap): GET
 * /api/providers/connect?name=NAME&pid=PID, and &categories=CATEGORIES
 * when categories is not NULL, to host ("host:port", an IPv6 address in
 * brackets), with "Authorization: Bearer TOKEN" when token is neither NULL
 * nor "". Returns its length, or 0 when it does not fit or a field is
 * invalid (name not 1 to 100 bytes, categories over 4000 bytes, a control
 * character in host or token, a token over 1024 bytes).
 */
size_t wire_format_upgrade(char *out, size_t cap, const char *host, const char *name, uint64_t pid,
			   const char *categories, const char *token);
/* 1 when category cat is enabled by list, the categories the server sent
 * (DATA kind 1): "" enables all; else comma-separated names, spaces and
 * tabs around each ignored, a name ending in '*' matching as a prefix. */
int wire_category_match(const char *list, const char *cat);
/* Parses "http://host[:port][/]" into host (cap bytes) and port. 0 or -1. */
int wire_parse_url(const char *url, char *host, size_t cap, unsigned *port);

/* ---- The connection (conn.c): the socket ------------------------------------ */

/* Bytes received from the server that are not yet a whole packet. Zeroed,
 * with max set, is empty; pconn_rx_free frees it. */
struct pconn_rx {
	uint8_t *buf; /* len bytes used of cap */
	size_t len, cap;
	size_t max;   /* cap grows up to this: 16 + the largest DATA payload taken */
};

/* Waits until fd can be read: 1 ready, else give up (0 or -1). */
typedef int (*pconn_wait_fn)(void *arg, int fd);

/*
 * Sends the upgrade request req[0..len) (wire_format_upgrade) on sock and
 * reads the reply's head, calling wait(arg, sock) before each read unless
 * wait is NULL (then the reads block). Returns 0 when the connection was
 * upgraded, with the packets that came right behind the head in rx; -1
 * otherwise, with *status the reply's HTTP status (0 when none came) and
 * reason the start of what followed its head (the server's JSON error),
 * NUL-terminated, when status is not 0.
 */
int pconn_upgrade(int sock, const char *req, size_t len, struct pconn_rx *rx, pconn_wait_fn wait, void *arg,
		  int *status, char *reason, size_t reason_cap);

/* Writes all n bytes. 0, or -1 when the connection failed. */
int pconn_send_all(int sock, const void *p, size_t n);
/* Sends a packet (DATA's payload goes with pconn_send_data). 0, or -1. */
int pconn_send_packet(int sock, uint16_t request, uint32_t data32, uint64_t data64);
/* Sends one DATA frame of kind (FIFO_DATA_DURABLE or FIFO_DATA_ROLLING)
 * holding the whole records p[0..n), n at most FIFO_MAX_PAYLOAD. 0, or -1. */
int pconn_send_data(int sock, int kind, const void *p, size_t n);
/* Sends an ALERT named name (its first 14 bytes). 0, or -1. */
int pconn_send_alert(int sock, const char *name);

/* What a side does with one packet from the server (payload: DATA's
 * data64 bytes, else NULL). 0 to go on, else the connection ends. */
typedef int (*pconn_packet_fn)(void *arg, const struct fifo_packet *pk, const uint8_t *payload);

/*
 * Hands every whole packet in rx to on_packet, in order, and keeps what is
 * left. Returns 0; -1 when on_packet ended the connection, or when the
 * server sent bytes the protocol does not allow (*why then says what, a
 * static string; else NULL).
 */
int pconn_dispatch(struct pconn_rx *rx, pconn_packet_fn on_packet, void *arg, const char **why);
/*
 * Reads what sock has (one recv: call it when poll says it can be read)
 * and dispatches it. Returns 0 (also when the read was interrupted or
 * found nothing); -1 when the connection ended or broke, when rx is full
 * of a packet larger than rx->max, or as pconn_dispatch.
 */
int pconn_receive(struct pconn_rx *rx, int sock, pconn_packet_fn on_packet, void *arg, const char **why);
void pconn_rx_free(struct pconn_rx *rx);

#endif
