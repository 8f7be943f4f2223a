/*
 * trace.h from C++ (C++11, GNU extensions): every macro compiles with
 * -Wall -Wextra -Werror, arguments are not evaluated while off, and the
 * records a C++ program writes arrive as they should: a zone (ended by a
 * destructor, its arguments copied at its start), an instant with a string
 * and a double. A test peer (peer.h) plays the server.
 */
#include <cassert>
#include <cstdio>
#include <cstring>
#include <string>

#include "../../provider/trace.h"
#include "peer.h"

static struct peer P;
static int evaluated;

static int side_effect()
{
	return ++evaluated;
}

/* Every macro, once. */
static void every_macro(int i)
{
	std::string s = "value-" + std::to_string(i);
	uint64_t t0 = trace_now();

	TRACE_DURATION("cxx", "zone", TA_I32("i", i), TA_STRING("s", "zone-arg"));
	TRACE_INSTANT("cxx", "instant", TA_STRING("s", s.c_str()), TA_DOUBLE("d", 0.25), TA_BOOL("b", true),
		      TA_POINTER("p", &s), TA_NULL("n"), TA_U64("u", 1), TA_I64("l", -1), TA_U32("w", 2),
		      TA_KOID("k", 3), TA_STRING_LITERAL("lit", "x"));
	TRACE_COUNTER("cxx", "counter", 1, TA_I32("v", i));
	TRACE_DURATION_BEGIN("cxx", "begin");
	TRACE_DURATION_END("cxx", "begin");
	TRACE_DURATION_COMPLETE("cxx", "complete", t0);
	TRACE_ASYNC_BEGIN("cxx", "async", 7);
	TRACE_ASYNC_INSTANT("cxx", "async", 7);
	TRACE_ASYNC_END("cxx", "async", 7);
	TRACE_FLOW_BEGIN("cxx", "flow", 8);
	TRACE_FLOW_STEP("cxx", "flow", 8);
	TRACE_FLOW_END("cxx", "flow", 8);
	if (TRACE_CATEGORY_ENABLED("cxx"))
		TRACE_INSTANT("cxx", "enabled");
}

#define CHECK(c)                                                                                                       \
	do {                                                                                                           \
		if (!(c)) {                                                                                            \
			fprintf(stderr, "test_cxx: %s:%d: %s\n", __FILE__, __LINE__, #c);                              \
			return 1;                                                                                      \
		}                                                                                                      \
	} while (0)

int main()
{
	struct trace_provider_config cfg = {NULL, NULL, "cxx", 0};
	struct peer_frame f;
	std::string got;
	size_t off, events = 0, zone_args = 0;

	/* off: nothing evaluated */
	{
		TRACE_DURATION("cxx", "off", TA_I32("v", side_effect()));
		TRACE_INSTANT("cxx", "off", TA_I32("v", side_effect()));
	}
	CHECK(evaluated == 0);
	CHECK(peer_listen(&P) == 0);
	cfg.server = P.url;
	CHECK(trace_provider_start(&cfg) == 0);
	CHECK(peer_accept(&P, 5000, NULL) == 0);
	peer_send(&P, 0x8100, 1, 65536, NULL, 0);
	peer_send(&P, 0x8101, 1, 0, NULL, 0);
	CHECK(peer_recv(&P, &f, 5000) == 0 && f.request == 1);
	every_macro(1);
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	for (;;) {
		CHECK(peer_recv(&P, &f, 5000) == 0);
		if (f.request == 0x8000)
			got.append((const char *)f.payload, f.data64);
		peer_frame_free(&f);
		if (f.request == 0x0003)
			break;
	}
	/* the event records: 13 events, the zone (complete, type 4) with its 2 arguments */
	for (off = 0; off + 8 <= got.size();) {
		uint64_t h;
		size_t words;

		memcpy(&h, got.data() + off, 8);
		words = (size_t)(h >> 4 & 0xfff);
		CHECK(words > 0 && off + words * 8 <= got.size());
		if ((h & 0xf) == 4) {
			events++;
			if ((h >> 16 & 0xf) == 4 && (h >> 20 & 0xf) == 2)
				zone_args++;
		}
		off += words * 8;
	}
	CHECK(off == got.size());
	CHECK(events == 13);
	CHECK(zone_args == 1);
	CHECK(got.find("zone-arg") != std::string::npos);
	CHECK(got.find("value-1") != std::string::npos);
	trace_provider_stop();
	peer_fini(&P);
	printf("test_cxx: ok (%zu events)\n", events);
	return 0;
}
