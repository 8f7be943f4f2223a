/*
 * libFuzzer target for what the server takes from a URL before anything
 * else sees it (server/params.c): srv_parse_i64, the bounded integers of
 * query parameters and Content-Length, and srv_route_parse, the split of an
 * API path. It asserts properties against an independent oracle written
 * here from docs/API.md and server_internal.h, not only "no crash".
 *
 * Input layout: a C string S (the bytes up to the first NUL, or all of
 * them), then optionally, after that NUL, 16 bytes giving one more pair of
 * bounds (two little-endian int64, ordered) and one byte giving the size
 * of the route's sub buffer (1..80).
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
 *   H3 srv_route_parse(S) returns 0, -1 or -2 exactly as the oracle does:
 *      "/api/traces" and "/api/traces/" are the list; "/api/traces/{id}"
 *      with id a decimal from 1 (-2 when it is not one, -1 when the
 *      segment is empty or 32 bytes or more); then "/{sub}" shorter than
 *      the sub buffer; then "/{sub_id}" only after "slices", sub_id a
 *      decimal from 1. On success id, sub and sub_id are what the oracle
 *      says; sub is a NUL-terminated string without '/' that fits the
 *      buffer, and ids are >= 1 or -1.
 *   H4 A successful route rebuilds the path: "/api/traces/" + id segment +
 *      "/" + sub + "/" + sub_id segment equals S (as far as S goes).
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

enum {
	FZ_IDBUF = 32,  /* srv_route_parse's id segment limit (server/params.c) */
	FZ_MAX_SUB = 80 /* largest sub buffer tried */
};

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

struct fz_route {
	int rc;
	int64_t id, sub_id;
	const char *sub;     /* into the url, sublen bytes; NULL = "" (no sub) */
	size_t sublen;
	const char *id_seg;  /* into the url */
	size_t id_len;
	const char *sid_seg; /* into the url; NULL when none */
};

/* The oracle for srv_route_parse (H3). */
static void fz_route_oracle(const char *url, size_t subn, struct fz_route *o)
{
	static const char pre[] = "/api/traces";
	const char *p = url + sizeof(pre) - 1, *q;

	memset(o, 0, sizeof(*o));
	o->id = -1;
	o->sub_id = -1;
	o->rc = -1;
	if (strncmp(url, pre, sizeof(pre) - 1) != 0 || (*p != '\0' && *p != '/'))
		return;
	if (*p == '\0' || strcmp(p, "/") == 0) {
		o->rc = 0;
		return;
	}
	o->id_seg = ++p;
	o->id_len = strcspn(p, "/");
	if (o->id_len == 0 || o->id_len >= FZ_IDBUF)
		return;
	if (fz_decimal(p, o->id_len, &o->id) != 0 || o->id < 1) {
		o->id = -1;
		o->rc = -2;
		return;
	}
	p += o->id_len;
	o->rc = 0;
	if (*p == '\0')
		return;
	o->sub = ++p;
	o->sublen = strcspn(p, "/");
	if (o->sublen >= subn) {
		o->rc = -1;
		return;
	}
	p += o->sublen;
	if (*p == '\0')
		return;
	q = p + 1;
	if (o->sublen != 6 || memcmp(o->sub, "slices", 6) != 0 || fz_decimal(q, strlen(q), &o->sub_id) != 0 ||
	    o->sub_id < 1) {
		o->sub_id = -1;
		o->rc = -1;
		return;
	}
	o->sid_seg = q;
}

/* H3 and H4 for one sub buffer size. */
static void fz_check_route(const char *url, size_t subn)
{
	struct srv_route rt;
	struct fz_route o;
	char *sub = malloc(subn), *re;
	size_t need;
	int rc;

	if (sub == NULL)
		abort();
	memset(sub, 'Z', subn);
	fz_route_oracle(url, subn, &o);
	rc = srv_route_parse(url, &rt, sub, subn);
	if (rc != o.rc)
		fz_fail("srv_route_parse(\"%s\", subn %zu) returned %d, the oracle %d", fz_show(url), subn, rc, o.rc);
	if (rc != 0)
		goto out_free;
	if (rt.id != o.id || rt.sub_id != o.sub_id)
		fz_fail("srv_route_parse(\"%s\"): id %" PRId64 " sub_id %" PRId64 ", the oracle %" PRId64 " %" PRId64,
			fz_show(url), rt.id, rt.sub_id, o.id, o.sub_id);
	if ((rt.id != -1 && rt.id < 1) || (rt.sub_id != -1 && rt.sub_id < 1) || rt.sub == NULL)
		fz_fail("srv_route_parse(\"%s\"): ids out of range or sub NULL", fz_show(url));
	if (o.sub == NULL ? rt.sub[0] != '\0'
			  : rt.sub != sub || memchr(sub, '\0', subn) == NULL || strlen(sub) != o.sublen ||
				    memcmp(sub, o.sub, o.sublen) != 0 || strchr(sub, '/') != NULL)
		fz_fail("srv_route_parse(\"%s\"): sub \"%.80s\" is not the path's", fz_show(url), rt.sub);
	/* H4: rebuild the path */
	if (rt.id < 0)
		goto out_free;
	need = 12 + o.id_len + 1 + strlen(rt.sub) + 1 + (o.sid_seg ? strlen(o.sid_seg) : 0) + 1;
	if ((re = malloc(need)) == NULL)
		abort();
	snprintf(re, need, "/api/traces/%.*s%s%s%s%s", (int)o.id_len, o.id_seg, o.sub ? "/" : "", rt.sub,
		 o.sid_seg ? "/" : "", o.sid_seg ? o.sid_seg : "");
	if (strcmp(re, url) != 0)
		fz_fail("srv_route_parse(\"%s\") does not rebuild it: \"%.120s\"", fz_show(url), re);
	free(re);
out_free:
	free(sub);
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
	size_t subn = 64;

	for (i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++)
		fz_check_i64(s, n, bounds[i][0], bounds[i][1]);
	if (nul && size - n - 1 >= 16) {
		int64_t a = fz_le64(nul + 1), b = fz_le64(nul + 9);

		fz_check_i64(s, n, a < b ? a : b, a < b ? b : a);
		if (size - n - 1 >= 17)
			subn = 1 + nul[17] % FZ_MAX_SUB;
	}
	fz_check_route(s, subn);
	if (subn != 64)
		fz_check_route(s, 64); /* the size http.c uses */
	free(s);
	return 0;
}
