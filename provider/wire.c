/*
 * The provider's wire format (docs/PROVIDER-PROTOCOL.md): the HTTP upgrade
 * that registers it, the reply to it, and the 16-byte packets that follow.
 * Pure functions over bytes, so that the fuzz targets reach everything the
 * library parses from the network (tests/provider/fuzz_*.c).
 * The packets and their codec are the protocol's one definition,
 * protocol.h, which the server includes too.
 *
 * Where we knowingly depart from the document: the reply's head is read up
 * to WIRE_MAX_HEAD bytes (8 KiB) and a longer one is refused; header lines
 * may end in LF as well as CRLF; X-Provider-Id is read when present and
 * taken as 0 when not (the id is informational to the provider).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "provider_internal.h"

const char *wire_strerror(int err)
{
	switch (err) {
	case WIRE_OK:
		return "ok";
	case WIRE_MORE:
		return "incomplete";
	case WIRE_EUNKNOWN:
		return "unknown packet";
	case WIRE_ERESERVED:
		return "reserved field not zero";
	case WIRE_EPAYLOAD:
		return "payload too large";
	case WIRE_EHTTP:
		return "the server did not upgrade the connection";
	case WIRE_ETOOBIG:
		return "reply head too large";
	}
	return "unknown error";
}

int wire_decode_server(const uint8_t *buf, size_t n, struct fifo_packet *pkt, const uint8_t **payload, size_t *used)
{
	if (n < FIFO_PACKET_SIZE)
		return WIRE_MORE;
	fifo_decode(buf, pkt);
	if (!fifo_server_request(pkt->request))
		return WIRE_EUNKNOWN;
	if (pkt->reserved != 0)
		return WIRE_ERESERVED;
	*payload = NULL;
	*used = 16;
	if (pkt->request != FIFO_DATA)
		return WIRE_OK;
	if (pkt->data64 > FIFO_MAX_PAYLOAD)
		return WIRE_EPAYLOAD;
	if (n - 16 < pkt->data64)
		return WIRE_MORE;
	*payload = buf + 16;
	*used = 16 + (size_t)pkt->data64;
	return WIRE_OK;
}

/* The next line of [p, end): returns its length without the line end and
 * sets *next past it; -1 when no line end is left. */
static long next_line(const char *p, const char *end, const char **next)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	long n;

	if (nl == NULL)
		return -1;
	*next = nl + 1;
	n = (long)(nl - p);
	if (n > 0 && p[n - 1] == '\r')
		n--;
	return n;
}

/* A header line's value if its name is `name` (case-insensitive), trimmed;
 * NULL otherwise. */
static const char *header_value(const char *line, long n, const char *name, long *vlen)
{
	long k = (long)strlen(name), a, b;

	if (n <= k || line[k] != ':' || strncasecmp(line, name, (size_t)k) != 0)
		return NULL;
	for (a = k + 1; a < n && (line[a] == ' ' || line[a] == '\t'); a++)
		;
	for (b = n; b > a && (line[b - 1] == ' ' || line[b - 1] == '\t'); b--)
		;
	*vlen = b - a;
	return line + a;
}

/* "HTTP/1.x NNN ..." -> NNN, or 0. */
static int status_code(const char *line, long n)
{
	int code = 0, i;

	if (n < 12 || memcmp(line, "HTTP/1.", 7) != 0 || line[8] != ' ')
		return 0;
	for (i = 9; i < 12; i++) {
		if (line[i] < '0' || line[i] > '9')
			return 0;
		code = code * 10 + (line[i] - '0');
	}
	return n == 12 || line[12] == ' ' ? code : 0;
}

static int parse_id(const char *v, long n, uint64_t *id)
{
	uint64_t x = 0;
	long i;

	if (n < 1 || n > 20)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned d = (unsigned)(v[i] - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*id = x;
	return 0;
}

int wire_parse_upgrade(const char *buf, size_t n, size_t max, size_t *used, uint64_t *provider_id, int *status)
{
	const char *p = buf, *end = buf + (n < max ? n : max), *next;
	int upgraded = 0, bad_id = 0;
	long len, vlen;

	*status = 0;
	*provider_id = 0;
	if ((len = next_line(p, end, &next)) < 0)
		return n >= max ? WIRE_ETOOBIG : WIRE_MORE;
	*status = status_code(p, len);
	for (p = next; (len = next_line(p, end, &next)) > 0; p = next) {
		const char *v;

		if ((v = header_value(p, len, "Upgrade", &vlen)) && vlen == 14 && strncasecmp(v, "fxt-provider/1", 14) == 0)
			upgraded = 1;
		else if ((v = header_value(p, len, "X-Provider-Id", &vlen)) && parse_id(v, vlen, provider_id) != 0)
			bad_id = 1;
	}
	if (len < 0)
		return n >= max ? WIRE_ETOOBIG : WIRE_MORE;
	*used = (size_t)(next - buf);
	return *status == 101 && upgraded && !bad_id ? WIRE_OK : WIRE_EHTTP;
}

/* Appends s percent-encoded (all but A-Z a-z 0-9 - . _ ~, as libcurl's
 * curl_easy_escape) to out at *o, of cap bytes in all, NUL-terminated.
 * 0, or -1 when it does not fit. */
static int put_encoded(char *out, size_t cap, size_t *o, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (*o + 4 > cap)
			return -1;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c)) {
			out[(*o)++] = (char)c;
		} else {
			out[(*o)++] = '%';
			out[(*o)++] = hex[c >> 4];
			out[(*o)++] = hex[c & 15];
		}
	}
	if (*o >= cap)
		return -1;
	out[*o] = '\0';
	return 0;
}

/* Appends formatted text to out at *o, of cap bytes in all. 0, or -1 when
 * it does not fit. */
__attribute__((format(printf, 4, 5))) static int put_text(char *out, size_t cap, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out + *o, cap - *o, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *o)
		return -1;
	*o += (size_t)n;
	return 0;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

size_t wire_format_upgrade(char *out, size_t cap, const char *host, const char *name, uint64_t pid,
			   const char *categories, const char *token)
{
	size_t nlen = strlen(name), o = 0;
	int bearer = token && token[0];

	if (nlen < 1 || nlen > 100 || (categories && strlen(categories) > 4000) || !printable(host) ||
	    (token && (!printable(token) || strlen(token) > 1024)) || cap == 0)
		return 0;
	if (put_text(out, cap, &o, "GET /api/providers/connect?name=") != 0 || put_encoded(out, cap, &o, name) != 0 ||
	    put_text(out, cap, &o, "&pid=%llu", (unsigned long long)pid) != 0)
		return 0;
	if (categories && (put_text(out, cap, &o, "&categories=") != 0 || put_encoded(out, cap, &o, categories) != 0))
		return 0;
	if (put_text(out, cap, &o,
		     " HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Connection: Upgrade\r\n"
		     "Upgrade: fxt-provider/1\r\n"
		     "%s%s%s"
		     "\r\n",
		     host, bearer ? "Authorization: Bearer " : "", bearer ? token : "", bearer ? "\r\n" : "") != 0)
		return 0;
	return o;
}

int wire_parse_url(const char *url, char *host, size_t cap, unsigned *port)
{
	const char *p, *e, *colon;
	unsigned long v = 80;
	size_t hn;

	if (strncmp(url, "http://", 7) != 0)
		return -1;
	p = url + 7;
	e = p + strcspn(p, "/?#");
	if (*p == '[') { /* [v6]:port */
		const char *rb = memchr(p, ']', (size_t)(e - p));

		if (rb == NULL)
			return -1;
		hn = (size_t)(rb - p - 1);
		colon = rb + 1 < e && rb[1] == ':' ? rb + 1 : NULL;
		if (rb + 1 < e && colon == NULL)
			return -1;
		p++;
	} else {
		colon = memchr(p, ':', (size_t)(e - p));
		hn = (size_t)((colon ? colon : e) - p);
	}
	if (hn == 0 || hn >= cap)
		return -1;
	if (colon) {
		char *end;

		if (colon + 1 == e || colon[1] < '0' || colon[1] > '9')
			return -1;
		v = strtoul(colon + 1, &end, 10);
		if (end != e || v == 0 || v > 65535)
			return -1;
	}
	memcpy(host, p, hn);
	host[hn] = '\0';
	*port = (unsigned)v;
	return 0;
}

int wire_category_match(const char *list, const char *cat)
{
	const char *p = list;
	size_t clen = strlen(cat);

	if (list[0] == '\0')
		return 1;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		while (n > 0 && (*p == ' ' || *p == '\t'))
			p++, n--;
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n > 0 && (p[n - 1] == '*' ? clen >= n - 1 && memcmp(p, cat, n - 1) == 0
					       : n == clen && memcmp(p, cat, n) == 0))
			return 1; /* an empty item enables nothing */
		p += n;
		while (*p && *p != ',')
			p++;
		if (*p == ',')
			p++;
	}
	return 0;
}
