/*
 * SigV4 signing (sigv4.h). The steps follow the specification's names:
 * canonical request -> string to sign -> signing key -> signature. All
 * buffers are fixed and on the stack: a request to the store has a short
 * path, a short query and a handful of headers, and an oversized one is an
 * error, not a reason to allocate.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sigv4.h"

#define CANON_MAX 8192

static void to_hex(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

void sigv4_sha256_hex(const void *p, size_t n, char out[SIGV4_HASH_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
	to_hex(md, len, out);
}

static void hmac(const void *key, size_t keylen, const char *msg, unsigned char out[32])
{
	unsigned int len = 32;

	HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), out, &len);
}

size_t sigv4_uri_encode(const char *s, int keep_slash, char *out, size_t n)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t w = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			   c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && keep_slash);

		if (w + (keep ? 1 : 3) >= n)
			return (size_t)-1;
		if (keep) {
			out[w++] = (char)c;
		} else {
			out[w++] = '%';
			out[w++] = digits[c >> 4];
			out[w++] = digits[c & 15];
		}
	}
	if (n == 0)
		return (size_t)-1;
	out[w] = '\0';
	return w;
}

/* Appends to a fixed buffer; the error is sticky (*len past n) so that the
 * caller checks once. */
static void put(char *buf, size_t n, size_t *len, const char *s)
{
	size_t l = strlen(s);

	if (*len >= n || l >= n - *len) {
		*len = n;
		return;
	}
	memcpy(buf + *len, s, l + 1);
	*len += l;
}

/* The header indexes sorted by name (insertion sort: a handful of them). */
static void sort_headers(const struct sigv4_request *r, size_t *order)
{
	size_t i, j;

	for (i = 0; i < r->nheaders; i++) {
		size_t x = order[i] = i;

		for (j = i; j > 0 && strcmp(r->headers[order[j - 1]].name, r->headers[x].name) > 0; j--)
			order[j] = order[j - 1];
		order[j] = x;
	}
}

/* Writes the canonical request into canon and the signed header list into
 * signed_list; 0, or -1 when either does not fit. */
static int canonical_request(const struct sigv4_request *r, char *canon, size_t n, char *signed_list, size_t sn)
{
	size_t order[SIGV4_MAX_HEADERS], len = 0, slen = 0, i;

	sort_headers(r, order);
	signed_list[0] = '\0';
	put(canon, n, &len, r->method);
	put(canon, n, &len, "\n");
	put(canon, n, &len, r->path);
	put(canon, n, &len, "\n");
	put(canon, n, &len, r->query);
	put(canon, n, &len, "\n");
	for (i = 0; i < r->nheaders; i++) {
		const struct sigv4_header *h = &r->headers[order[i]];

		put(canon, n, &len, h->name);
		put(canon, n, &len, ":");
		put(canon, n, &len, h->value);
		put(canon, n, &len, "\n");
		if (i > 0)
			put(signed_list, sn, &slen, ";");
		put(signed_list, sn, &slen, h->name);
	}
	put(canon, n, &len, "\n");
	put(canon, n, &len, signed_list);
	put(canon, n, &len, "\n");
	put(canon, n, &len, r->payload_hash);
	return len >= n || slen >= sn ? -1 : 0;
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), "s3"), "aws4_request") */
static int signing_key(const struct sigv4_key *k, const char *date, unsigned char out[32])
{
	char first[256];
	unsigned char a[32], b[32];

	if (snprintf(first, sizeof(first), "AWS4%s", k->secret_key) >= (int)sizeof(first))
		return -1;
	hmac(first, strlen(first), date, a);
	hmac(a, 32, k->region, b);
	hmac(b, 32, "s3", a);
	hmac(a, 32, "aws4_request", out);
	memset(first, 0, sizeof(first));
	return 0;
}

int sigv4_authorization(const struct sigv4_key *k, const struct sigv4_request *r, char *out, size_t n,
			char *canon, size_t canonlen)
{
	char creq[CANON_MAX], slist[1024], chash[SIGV4_HASH_HEX], date[9], sts[512], sig[SIGV4_HASH_HEX];
	unsigned char key[32], mac[32];
	int w;

	if (n > 0)
		out[0] = '\0';
	if (r->nheaders > SIGV4_MAX_HEADERS || strlen(r->amz_date) != 16 ||
	    canonical_request(r, creq, sizeof(creq), slist, sizeof(slist)) != 0)
		return -1;
	if (canon && snprintf(canon, canonlen, "%s", creq) < 0)
		return -1;
	memcpy(date, r->amz_date, 8);
	date[8] = '\0';
	sigv4_sha256_hex(creq, strlen(creq), chash);
	w = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", r->amz_date, date, k->region,
		     chash);
	if (w < 0 || w >= (int)sizeof(sts) || signing_key(k, date, key) != 0)
		return -1;
	hmac(key, 32, sts, mac);
	to_hex(mac, 32, sig);
	w = snprintf(out, n, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, SignedHeaders=%s, Signature=%s",
		     k->access_key, date, k->region, slist, sig);
	if (w < 0 || (size_t)w >= n) {
		if (n > 0)
			out[0] = '\0';
		return -1;
	}
	return 0;
}
