/*
 * AWS Signature Version 4 for S3: the Authorization header a request to an
 * S3-compatible store carries.
 *
 * The signature is an HMAC-SHA256 chain over a canonical form of the
 * request (method, path, query, the signed headers and the payload's
 * hash). One wrong byte in the canonical form gives a refusal that names
 * nothing, so this file does only that and is tested against AWS's own
 * published examples (tests/store/test_sigv4.c). Specification:
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
 *
 * Departures: the service is always "s3"; the caller passes the path and
 * query already in canonical form (sigv4_uri_encode), which S3 itself
 * needs on the wire anyway, so no path is encoded twice.
 */
#ifndef STORE_SIGV4_H
#define STORE_SIGV4_H

#include <stddef.h>

#define SIGV4_HASH_HEX 65 /* 64 hex digits and the terminating NUL */

/* SHA-256 of the empty payload, the hash every request without a body signs. */
#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct sigv4_key {
	const char *access_key; /* AWS_ACCESS_KEY_ID */
	const char *secret_key; /* AWS_SECRET_ACCESS_KEY; never leaves this file but as an HMAC key */
	const char *region;     /* "us-east-1" when the store does not care */
};

struct sigv4_header {
	const char *name;  /* lowercase, as it is signed */
	const char *value; /* without leading or trailing blanks */
};

/* The request to sign. Every header listed is signed; it must hold host,
 * x-amz-date (amz_date) and x-amz-content-sha256 (payload_hash). */
struct sigv4_request {
	const char *method;
	const char *path;         /* canonical: sigv4_uri_encode(key, keep '/') */
	const char *query;        /* canonical: names sorted, names and values encoded; "" if none */
	const struct sigv4_header *headers;
	size_t nheaders;          /* at most SIGV4_MAX_HEADERS */
	const char *payload_hash; /* hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
	const char *amz_date;     /* "YYYYMMDDTHHMMSSZ", UTC */
};

#define SIGV4_MAX_HEADERS 16

/* Hex SHA-256 of n bytes at p into out. */
void sigv4_sha256_hex(const void *p, size_t n, char out[SIGV4_HASH_HEX]);

/*
 * Percent-encodes s the way SigV4 wants it (RFC 3986 unreserved bytes
 * kept, every other byte as %XX in upper case); '/' kept when keep_slash.
 * The length written, or (size_t)-1 when out (n bytes) is too small.
 */
size_t sigv4_uri_encode(const char *s, int keep_slash, char *out, size_t n);

/*
 * Writes the Authorization header's value for r into out (n bytes):
 * "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=<hex>".
 * 0, or -1 when a field does not fit (out is then empty) or there are too
 * many headers. The canonical request goes to canon (may be NULL) for
 * tests and for a log line when a store refuses a signature.
 */
int sigv4_authorization(const struct sigv4_key *k, const struct sigv4_request *r, char *out, size_t n,
			char *canon, size_t canonlen);

#endif
