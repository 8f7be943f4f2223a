/*
 * SigV4 against AWS's published examples ("Signature Calculations for the
 * Authorization Header: Transferring Payload in a Single Chunk", S3 API
 * reference): the same key, date and requests must give the same
 * signatures byte for byte. The test store (s3rver) checks no signatures,
 * so this is what stands between us and a real S3 refusing every request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "../../store/sigv4.h"

static const struct sigv4_key example_key = {
	"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1",
};

#define HOST "examplebucket.s3.amazonaws.com"
#define DATE "20130524T000000Z"

static const char *signature_of(const char *auth)
{
	const char *p = strstr(auth, "Signature=");

	assert_non_null(p);
	return p + strlen("Signature=");
}

/* GET Object, with a Range header and no payload. */
static void test_get_object(void **state)
{
	const struct sigv4_header h[] = {
		{ "x-amz-date", DATE },
		{ "range", "bytes=0-9" },
		{ "host", HOST },
		{ "x-amz-content-sha256", SIGV4_EMPTY_SHA256 },
	};
	struct sigv4_request r = { "GET", "/test.txt", "", h, 4, SIGV4_EMPTY_SHA256, DATE };
	char auth[1024], canon[2048];

	(void)state;
	assert_int_equal(sigv4_authorization(&example_key, &r, auth, sizeof(auth), canon, sizeof(canon)), 0);
	assert_string_equal(canon, "GET\n/test.txt\n\n"
				   "host:" HOST "\nrange:bytes=0-9\n"
				   "x-amz-content-sha256:" SIGV4_EMPTY_SHA256 "\nx-amz-date:" DATE "\n\n"
				   "host;range;x-amz-content-sha256;x-amz-date\n" SIGV4_EMPTY_SHA256);
	assert_string_equal(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
				  "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
				  "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

/* PUT Object: a signed payload, a key with '$' and two more headers. */
static void test_put_object(void **state)
{
	static const char body[] = "Welcome to Amazon S3.";
	char hash[SIGV4_HASH_HEX], path[64], auth[1024];
	struct sigv4_header h[] = {
		{ "host", HOST },
		{ "date", "Fri, 24 May 2013 00:00:00 GMT" },
		{ "x-amz-date", DATE },
		{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
		{ "x-amz-content-sha256", hash },
	};
	struct sigv4_request r = { "PUT", path, "", h, 5, hash, DATE };

	(void)state;
	sigv4_sha256_hex(body, strlen(body), hash);
	assert_string_equal(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
	assert_int_equal(sigv4_uri_encode("/test$file.text", 1, path, sizeof(path)), strlen("/test%24file.text"));
	assert_string_equal(path, "/test%24file.text");
	assert_int_equal(sigv4_authorization(&example_key, &r, auth, sizeof(auth), NULL, 0), 0);
	assert_non_null(strstr(auth, "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"));
	assert_string_equal(signature_of(auth), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

/* GET Bucket Lifecycle and GET Bucket (list objects): queries. */
static void test_bucket_queries(void **state)
{
	const struct sigv4_header h[] = {
		{ "host", HOST },
		{ "x-amz-content-sha256", SIGV4_EMPTY_SHA256 },
		{ "x-amz-date", DATE },
	};
	struct sigv4_request r = { "GET", "/", "lifecycle=", h, 3, SIGV4_EMPTY_SHA256, DATE };
	char auth[1024];

	(void)state;
	assert_int_equal(sigv4_authorization(&example_key, &r, auth, sizeof(auth), NULL, 0), 0);
	assert_string_equal(signature_of(auth), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
	r.query = "max-keys=2&prefix=J";
	assert_int_equal(sigv4_authorization(&example_key, &r, auth, sizeof(auth), NULL, 0), 0);
	assert_string_equal(signature_of(auth), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_uri_encode(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(sigv4_uri_encode("a b/c~d_e-f.g", 1, out, sizeof(out)), 15);
	assert_string_equal(out, "a%20b/c~d_e-f.g");
	sigv4_uri_encode("p/q=r+s", 0, out, sizeof(out));
	assert_string_equal(out, "p%2Fq%3Dr%2Bs");
	sigv4_uri_encode("\xc3\xa9", 0, out, sizeof(out));
	assert_string_equal(out, "%C3%A9");
	assert_int_equal(sigv4_uri_encode("abc", 0, out, 3), (size_t)-1); /* no room for the NUL */
	assert_int_equal(sigv4_uri_encode("a b", 0, out, 5), (size_t)-1);
	assert_int_equal(sigv4_uri_encode("a b", 0, out, 6), 5);
}

/* A buffer too small is an error with an empty result, not a cut header. */
static void test_too_small(void **state)
{
	const struct sigv4_header h[] = { { "host", HOST } };
	struct sigv4_request r = { "GET", "/", "", h, 1, SIGV4_EMPTY_SHA256, DATE };
	char auth[64];

	(void)state;
	assert_int_equal(sigv4_authorization(&example_key, &r, auth, sizeof(auth), NULL, 0), -1);
	assert_string_equal(auth, "");
	r.amz_date = "20130524";
	assert_int_equal(sigv4_authorization(&example_key, &r, auth, sizeof(auth), NULL, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_object), cmocka_unit_test(test_put_object),
		cmocka_unit_test(test_bucket_queries), cmocka_unit_test(test_uri_encode),
		cmocka_unit_test(test_too_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
