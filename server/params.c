/*
 * Parameters from HTTP: bounded integers and the API's routes.
 *
 * Everything a client sends is checked here against explicit bounds before
 * it reaches the catalog or the query module; kept apart from http.c so
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

int srv_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

int srv_route_match(const char *pattern, const char *path, int64_t *ids)
{
	size_t plen = strlen(pattern);
	int slash_ok = plen >= 2 && strcmp(pattern + plen - 2, "/?") == 0;
	char pat[256];
	const char *p = pat, *q = path;
	char idbuf[32];
	size_t nid = 0;
	int bad_id = 0;

	if (plen >= sizeof(pat))
		return -1;
	memcpy(pat, pattern, plen - (slash_ok ? 2 : 0));
	pat[plen - (slash_ok ? 2 : 0)] = '\0';
	for (;;) {
		size_t pn, qn;

		if (*p != '/' || *q != '/')
			return -1;
		p++;
		q++;
		pn = strcspn(p, "/");
		qn = strcspn(q, "/");
		if (pn == 4 && memcmp(p, "{id}", 4) == 0) {
			if (nid == SRV_ROUTE_MAX_IDS || qn == 0)
				return -1;
			if (qn >= sizeof(idbuf) || (memcpy(idbuf, q, qn), idbuf[qn] = '\0',
						   srv_parse_i64(idbuf, 1, INT64_MAX, &ids[nid]) != 0))
				bad_id = 1;
			nid++;
		} else if (pn != qn || memcmp(p, q, pn) != 0) {
			return -1;
		}
		p += pn;
		q += qn;
		if (*p == '\0')
			break;
	}
	if (*q != '\0' && !(slash_ok && strcmp(q, "/") == 0))
		return -1;
	return bad_id ? -2 : 0;
}
