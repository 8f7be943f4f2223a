/*
 * Parameters from HTTP: bounded integers and the API's routes.
 *
 * Everything a client sends is checked here against explicit bounds before
 * it reaches the library or the query module; kept apart from http.c so
 * the fuzz target (tests/fuzz_http.c) can reach it without a server.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

int srv_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (s == NULL || !(*s == '-' || (*s >= '0' && *s <= '9')))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int srv_route_parse(const char *url, struct srv_route *rt, char *sub, size_t subn)
{
	const char *p = url + strlen("/api/traces");
	char idbuf[32];
	size_t n;

	rt->id = -1;
	rt->sub = "";
	rt->sub_id = -1;
	if (strncmp(url, "/api/traces", 11) != 0 || (*p != '\0' && *p != '/'))
		return -1;
	if (*p == '\0' || strcmp(p, "/") == 0)
		return 0;
	p++;
	n = strcspn(p, "/");
	if (n == 0 || n >= sizeof(idbuf))
		return -1;
	memcpy(idbuf, p, n);
	idbuf[n] = '\0';
	if (srv_parse_i64(idbuf, 1, INT64_MAX, &rt->id) != 0)
		return -2;
	p += n;
	if (*p == '\0')
		return 0;
	p++;
	n = strcspn(p, "/");
	if (n >= subn)
		return -1;
	memcpy(sub, p, n);
	sub[n] = '\0';
	rt->sub = sub;
	p += n;
	if (*p == '\0')
		return 0;
	if (strcmp(sub, "slices") != 0 || srv_parse_i64(p + 1, 1, INT64_MAX, &rt->sub_id) != 0)
		return -1;
	return 0;
}
