/*
 * Tests of provider/wire.c: the server URL, the upgrade request, the reply
 * and the packets, by examples from docs/PROVIDER-PROTOCOL.md. The fuzz
 * target (fuzz_wire.c) checks the parsers' properties on any input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../provider/provider_internal.h"

static void test_url(void **state)
{
	char host[64];
	unsigned port;

	(void)state;
	assert_int_equal(wire_parse_url("http://127.0.0.1:8080", host, sizeof(host), &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 8080);
	assert_int_equal(wire_parse_url("http://traces.example/", host, sizeof(host), &port), 0);
	assert_string_equal(host, "traces.example");
	assert_int_equal(port, 80);
	assert_int_equal(wire_parse_url("http://[::1]:9/x", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 9);
	assert_int_equal(wire_parse_url("https://h", host, sizeof(host), &port), -1);
	assert_int_equal(wire_parse_url("http://h:0", host, sizeof(host), &port), -1);
	assert_int_equal(wire_parse_url("http://h:65536", host, sizeof(host), &port), -1);
	assert_int_equal(wire_parse_url("http://h:8x", host, sizeof(host), &port), -1);
	assert_int_equal(wire_parse_url("http://:80", host, sizeof(host), &port), -1);
	assert_int_equal(wire_parse_url("http://[::1", host, sizeof(host), &port), -1);
}

static void test_request(void **state)
{
	char req[1024];
	char name[102];

	(void)state;
	assert_true(wire_format_upgrade(req, sizeof(req), "h:1", "my app/ä", 42, NULL, NULL) > 0);
	assert_string_equal(req, "GET /api/providers/connect?name=my%20app%2F%C3%A4&pid=42 HTTP/1.1\r\n"
				 "Host: h:1\r\nConnection: Upgrade\r\nUpgrade: fxt-provider/1\r\n\r\n");
	assert_true(wire_format_upgrade(req, sizeof(req), "h:1", "a", 1, NULL, "tok") > 0);
	assert_non_null(strstr(req, "\r\nAuthorization: Bearer tok\r\n\r\n"));
	assert_int_equal(wire_format_upgrade(req, sizeof(req), "h:1", "", 1, NULL, NULL), 0);
	memset(name, 'n', 101);
	name[101] = '\0';
	assert_int_equal(wire_format_upgrade(req, sizeof(req), "h:1", name, 1, NULL, NULL), 0); /* over 100 bytes */
	name[100] = '\0';
	assert_true(wire_format_upgrade(req, sizeof(req), "h:1", name, 1, NULL, NULL) > 0);
	assert_int_equal(wire_format_upgrade(req, sizeof(req), "h:1", "a", 1, NULL, "bad\r\nX: y"), 0);
	/* `trace-server stream --provider` announces its categories, encoded
	 * as libcurl's curl_easy_escape does; "" is sent as "" */
	assert_true(wire_format_upgrade(req, sizeof(req), "[::1]:8", "gpu", 7, "gfx,in put", "t") > 0);
	assert_string_equal(req, "GET /api/providers/connect?name=gpu&pid=7&categories=gfx%2Cin%20put HTTP/1.1\r\n"
				 "Host: [::1]:8\r\nConnection: Upgrade\r\nUpgrade: fxt-provider/1\r\n"
				 "Authorization: Bearer t\r\n\r\n");
	assert_true(wire_format_upgrade(req, sizeof(req), "h:1", "a", 1, "", NULL) > 0);
	assert_non_null(strstr(req, "?name=a&pid=1&categories= HTTP/1.1\r\n"));
	/* a request that does not fit is refused, never cut */
	assert_int_equal(wire_format_upgrade(req, 60, "h:1", "a", 1, "gfx", NULL), 0);
}

static void test_reply(void **state)
{
	static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: fxt-provider/1\r\n"
				 "Connection: Upgrade\r\nX-Provider-Id: 12\r\n\r\nFRAMES";
	static const char refused[] = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n{}";
	size_t used;
	uint64_t id;
	int status;

	(void)state;
	assert_int_equal(wire_parse_upgrade(ok, sizeof(ok) - 1, 8192, &used, &id, &status), WIRE_OK);
	assert_int_equal(used, sizeof(ok) - 1 - 6);
	assert_int_equal(id, 12);
	assert_int_equal(status, 101);
	assert_int_equal(wire_parse_upgrade(ok, 40, 8192, &used, &id, &status), WIRE_MORE);
	assert_int_equal(wire_parse_upgrade(ok, 40, 40, &used, &id, &status), WIRE_ETOOBIG);
	assert_int_equal(wire_parse_upgrade(refused, sizeof(refused) - 1, 8192, &used, &id, &status), WIRE_EHTTP);
	assert_int_equal(status, 401);
}

static void test_packets(void **state)
{
	uint8_t b[40] = {0};
	struct fifo_packet p = {FIFO_INITIALIZE, 0, 3, 1 << 20}, q;
	const uint8_t *payload;
	size_t used;

	(void)state;
	fifo_encode(b, &p);
	assert_memory_equal(b, "\x00\x81\x00\x00\x03\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00", 16);
	assert_int_equal(wire_decode_server(b, 16, &q, &payload, &used), WIRE_OK);
	assert_int_equal(q.request, FIFO_INITIALIZE);
	assert_int_equal(q.data32, 3);
	assert_int_equal(q.data64, 1 << 20);
	assert_null(payload);
	assert_int_equal(wire_decode_server(b, 15, &q, &payload, &used), WIRE_MORE);
	p = (struct fifo_packet){FIFO_DATA, 0, 1, 3};
	fifo_encode(b, &p);
	memcpy(b + 16, "a,b", 3);
	assert_int_equal(wire_decode_server(b, 18, &q, &payload, &used), WIRE_MORE);
	assert_int_equal(wire_decode_server(b, 19, &q, &payload, &used), WIRE_OK);
	assert_int_equal(used, 19);
	assert_memory_equal(payload, "a,b", 3);
	p = (struct fifo_packet){FIFO_STARTED, 0, 1, 0}; /* provider-to-server code: unknown here */
	fifo_encode(b, &p);
	assert_int_equal(wire_decode_server(b, 16, &q, &payload, &used), WIRE_EUNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_reply),
		cmocka_unit_test(test_packets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
