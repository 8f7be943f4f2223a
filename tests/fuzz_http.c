/*
 * libFuzzer target for what the server takes from a URL before anything
 * else sees it (server/params.c): srv_parse_i64, the bounded integers of
 * query parameters and Content-Length, and srv_route_match, the matching of an
 * API path against the route table's patterns. It asserts properties against an independent oracle written
 * here from docs/API.md and server_internal.h, not only "no crash".
 *
 * Input layout: a C string S (the bytes up to the first NUL, or all of
 * them), then optionally, after that NUL, 16 bytes giving one more pair of
 * bounds (two little-endian int64, ordered) and one byte giving the size
 * (a byte after them is ignored).
 *
 * Every string is copied into a heap block of exactly strlen + 1 bytes and
 * the sub buffer into one of exactly its size, so a read or write past
 * either shows under ASan.
 *
 * Properties (a violation abort()s with a message):
 *   H1 srv_parse_i64(S, min, max) accepts exactly the strings of the form
 *      -?[0-9]+ whose value fits in int64 and lies in [min, max], for the
 *      API's bound pairs and the input's own, and then gives that value;
 *      it never writes *out when it refuses.
 *   H2 Round trip: the value printed with %lld parses back to itself, and
 *      a canonical string (no leading zero, not "-0") prints back to S.
 *   H3 srv_route_match(P, S) returns 0, -1 or -2 exactly as an oracle
 *      written here says, for every route pattern P of the server: the
 *      segments match one by one, "{id}" taking a decimal from 1 to
 *      INT64_MAX (-2 when it is not one), one trailing '/' taken only by
 *      a pattern ending in "/?"; the ids it gives are the oracle's.
 *   H4 A match rebuilds: P with the ids printed matches again, giving
 *      the same ids.
 *
 * Build with libFuzzer (clang):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
 *     tests/fuzz_http.c server/params.c
 * or replay a corpus without it: link tests/fuzz_replay.c instead of
 * -fsanitize=fuzzer and run it on tests/corpus/http.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../server/server_internal.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((format(printf, 1, 2), noreturn)) static void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_http: property violated: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* s made printable for a message: control bytes as \xNN, cut at 120 bytes;
 * returns a static buffer (one message at a time). */
static const char *fz_show(const char *s)
{
	static char out[512];
	size_t o = 0;

	for (; *s && o + 8 < sizeof(out) && o < 480; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
	return out;
}

/* The oracle's decimal: -?[0-9]+ of n bytes within int64. 0 with *v set,
 * -1 when s is not one. */
static int fz_decimal(const char *s, size_t n, int64_t *v)
{
	int neg = n > 0 && s[0] == '-';
	uint64_t acc = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	size_t i = (size_t)neg;

	if (i == n)
		return -1;
	for (; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || acc > (lim - d) / 10)
			return -1;
		acc = acc * 10 + d;
	}
	*v = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	return 0;
}

/* A copy of n bytes plus a NUL in a block of exactly n + 1 bytes. */
static char *fz_cstr(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p == NULL)
		abort();
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* H1 and H2 for one bound pair. */
static void fz_check_i64(const char *s, size_t n, int64_t min, int64_t max)
{
	const int64_t canary = INT64_C(0x5a5a5a5a5a5a5a5a);
	int64_t got = canary, want = 0;
	int ok_want = fz_decimal(s, n, &want) == 0 && want >= min && want <= max;
	int rc = srv_parse_i64(s, min, max, &got);
	char back[32];

	if (rc != 0 && rc != -1)
		fz_fail("srv_parse_i64(\"%s\") returned %d", fz_show(s), rc);
	if ((rc == 0) != ok_want)
		fz_fail("srv_parse_i64(\"%s\", %" PRId64 ", %" PRId64 ") %s it", fz_show(s), min, max,
			rc == 0 ? "accepted" : "refused");
	if (rc != 0) {
		if (got != canary)
			fz_fail("srv_parse_i64(\"%s\") refused but wrote %" PRId64, fz_show(s), got);
		return;
	}
	if (got != want)
		fz_fail("srv_parse_i64(\"%s\") gave %" PRId64 ", not %" PRId64, fz_show(s), got, want);
	snprintf(back, sizeof(back), "%" PRId64, got);
	if (srv_parse_i64(back, min, max, &want) != 0 || want != got)
		fz_fail("%" PRId64 " does not round-trip through \"%s\"", got, back);
	if (!(s[0] == '0' && n > 1) && !(s[0] == '-' && s[1] == '0') && strcmp(back, s) != 0)
		fz_fail("canonical \"%s\" printed back as \"%s\"", fz_show(s), back);
}

/* The route patterns of server/routes.c and http.c. */
static const char *const fz_patterns[] = {
	"/api/traces/?",
	"/api/traces/{id}/?",
	"/api/traces/{id}/slices",
	"/api/traces/{id}/slices/{id}",
	"/api/traces/{id}/symbols",
	"/api/search",
	"/api/compare",
};

/* The oracle for srv_route_match (H3): segment by segment. */
static int fz_match_oracle(const char *pattern, const char *url, int64_t *ids)
{
	size_t plen = strlen(pattern), ulen = strlen(url), nid = 0;
	int slash = plen >= 2 && strcmp(pattern + plen - 2, "/?") == 0, bad = 0;
	char pat[128];
	const char *p = pat, *q = url;

	snprintf(pat, sizeof(pat), "%.*s", (int)(plen - (slash ? 2 : 0)), pattern);
	/* "/?" patterns take one trailing '/' on the path */
	if (slash && ulen > 1 && url[ulen - 1] == '/')
		ulen--;
	while (*p) {
		size_t pn, qn;

		if (*p != '/' || (size_t)(q - url) >= ulen || *q != '/')
			return -1;
		p++;
		q++;
		pn = strcspn(p, "/");
		qn = 0;
		while ((size_t)(q - url) + qn < ulen && q[qn] != '/')
			qn++;
		if (pn == 4 && memcmp(p, "{id}", 4) == 0) {
			int64_t v;

			if (qn == 0)
				return -1;
			if (qn >= 32 || fz_decimal(q, qn, &v) != 0 || v < 1 || q[0] == '-')
				bad = 1;
			else
				ids[nid] = v;
			nid++;
		} else if (pn != qn || memcmp(p, q, pn) != 0) {
			return -1;
		}
		p += pn;
		q += qn;
	}
	if ((size_t)(q - url) != ulen)
		return -1;
	return bad ? -2 : 0;
}

/* H3 and H4 for one pattern. */
static void fz_check_route(const char *pattern, const char *url)
{
	int64_t got[SRV_ROUTE_MAX_IDS] = { -7, -7 }, want[SRV_ROUTE_MAX_IDS] = { -7, -7 }, again[SRV_ROUTE_MAX_IDS];
	int rc = srv_route_match(pattern, url, got), orc = fz_match_oracle(pattern, url, want);
	char re[512];
	const char *p;
	size_t o = 0, k = 0;

	if (rc != orc)
		fz_fail("srv_route_match(\"%s\", \"%s\") returned %d, the oracle %d", pattern, fz_show(url), rc, orc);
	if (rc != 0)
		return;
	for (k = 0; k < SRV_ROUTE_MAX_IDS; k++)
		if (want[k] != -7 && got[k] != want[k])
			fz_fail("srv_route_match(\"%s\", \"%s\"): id %zu is %" PRId64 ", the oracle %" PRId64, pattern,
				fz_show(url), k, got[k], want[k]);
	/* H4: the pattern with the ids printed matches again, with the same ids */
	for (p = pattern, k = 0; *p && o + 32 < sizeof(re);) {
		if (strcmp(p, "/?") == 0) {
			p += 2;
		} else if (strncmp(p, "{id}", 4) == 0) {
			o += (size_t)snprintf(re + o, sizeof(re) - o, "%" PRId64, got[k++]);
			p += 4;
		} else {
			re[o++] = *p++;
		}
	}
	re[o] = '\0';
	if (srv_route_match(pattern, re, again) != 0 || (k > 0 && again[0] != got[0]) || (k > 1 && again[1] != got[1]))
		fz_fail("srv_route_match(\"%s\"): \"%s\" does not match back", pattern, re);
}

static int64_t fz_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return (int64_t)v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the API's bounds (server/http.c), the extremes and a few near them */
	static const int64_t bounds[][2] = {
		{ INT64_MIN, INT64_MAX }, { 0, INT64_MAX },  { 1, INT64_MAX }, { 0, INT64_C(1) << 62 },
		{ 1, 1000000 },           { 0, 65535 },      { -1, 1 },        { INT64_MAX, INT64_MAX },
		{ INT64_MIN, INT64_MIN }, { INT64_MIN, -1 }, { 5, 4 },
	};
	const uint8_t *nul = memchr(data, 0, size);
	size_t n = nul ? (size_t)(nul - data) : size, i;
	char *s = fz_cstr((const char *)data, n);
	size_t k;

	for (i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++)
		fz_check_i64(s, n, bounds[i][0], bounds[i][1]);
	if (nul && size - n - 1 >= 16) {
		int64_t a = fz_le64(nul + 1), b = fz_le64(nul + 9);

		fz_check_i64(s, n, a < b ? a : b, a < b ? b : a);
	}
	for (k = 0; k < sizeof(fz_patterns) / sizeof(fz_patterns[0]); k++)
		fz_check_route(fz_patterns[k], s);
	free(s);
	return 0;
}
