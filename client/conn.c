/*
 * A small HTTP/1.1 client for the command line's own requests: one
 * request per connection ("Connection: close"), replies read to the end.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

int cl_parse_url(const char *url, struct cl_server *s, char *err, size_t errlen)
{
	const char *h = url, *end, *colon;
	size_t hl;

	if (strncmp(h, "http://", 7) == 0)
		h += 7;
	else if (strstr(h, "://") != NULL) {
		snprintf(err, errlen, "%s: only http:// servers are supported", url);
		return -1;
	}
	end = h + strcspn(h, "/");
	colon = memchr(h, ':', (size_t)(end - h));
	hl = (size_t)((colon ? colon : end) - h);
	if (hl == 0 || hl >= sizeof(s->host)) {
		snprintf(err, errlen, "%s: no host", url);
		return -1;
	}
	memcpy(s->host, h, hl);
	s->host[hl] = '\0';
	s->port = 80;
	if (colon) {
		char *e;
		long p = strtol(colon + 1, &e, 10);

		if (e != end || p < 1 || p > 65535) {
			snprintf(err, errlen, "%s: bad port", url);
			return -1;
		}
		s->port = (int)p;
	}
	return 0;
}

int cl_read_token(const char *path, struct cl_server *s, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");

	if (f == NULL || fgets(s->token, sizeof(s->token), f) == NULL) {
		snprintf(err, errlen, "cannot read the token from %s: %s", path, f ? "empty" : strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	s->token[strcspn(s->token, "\r\n")] = '\0';
	return 0;
}

int cl_connect(const struct cl_server *s, char *err, size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL, *a;
	char port[16];
	int fd = -1, rc, one = 1;

	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", s->port);
	if ((rc = getaddrinfo(s->host, port, &hints, &res)) != 0) {
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

int cl_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int cl_query_escape(char *out, size_t n, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t len = strlen(out);

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			    ch == '-' || ch == '_' || ch == '.' || ch == '~';

		if (len + (plain ? 1 : 3) >= n)
			return -1;
		if (plain) {
			out[len++] = (char)ch;
		} else {
			out[len++] = '%';
			out[len++] = hex[ch >> 4];
			out[len++] = hex[ch & 15];
		}
	}
	out[len] = '\0';
	return 0;
}

int cl_get(const struct cl_server *s, const char *method, const char *path, char *out, size_t n, char *err,
	   size_t errlen)
{
	char head[1024], *buf = NULL, *body;
	size_t len = 0, cap = 0;
	int fd, status = -1;

	if ((fd = cl_connect(s, err, errlen)) < 0)
		return -1;
	snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n%s%s%s\r\n", method,
		 path, s->host, s->port, s->token[0] ? "Authorization: Bearer " : "", s->token,
		 s->token[0] ? "\r\n" : "");
	if (cl_write_all(fd, head, strlen(head)) != 0) {
		snprintf(err, errlen, "cannot send to %s:%d", s->host, s->port);
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t k;

		if (len + 4096 > cap) {
			char *p = realloc(buf, cap = cap ? cap * 2 : 16384);

			if (p == NULL)
				break;
			buf = p;
		}
		k = read(fd, buf + len, cap - len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (buf) {
		buf[len] = '\0';
		if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
			status = -1;
		body = strstr(buf, "\r\n\r\n");
		snprintf(out, n, "%s", body ? body + 4 : "");
	}
	if (status < 0)
		snprintf(err, errlen, "no reply from %s:%d", s->host, s->port);
	free(buf);
	return status;
}
