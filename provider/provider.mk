# The provider library (provider/, docs/PROVIDER.md): libtrace-provider.a,
# its tests, fuzz targets, example and benchmark. Included by the Makefile.
#   make provider          the library
#   make provider-check    its tests (plain; `check` runs them under ASan too)
#   make bench-provider    ns per zone and streaming throughput
#   make install           also installs trace.h, the library and trace-provider.pc

PROVIDER_SRC = provider/engine.c provider/writer.c provider/wire.c provider/conn.c provider/transport.c
PROVIDER_HDR = provider/trace.h provider/provider_internal.h provider/conn.h provider/utf8.h provider/protocol.h
PROVIDER_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS)
PROVIDER_TESTS = test_writer test_modes test_wire test_cxx

.PHONY: provider provider-unit provider-check bench-provider install-provider examples

provider: $(B)/libtrace-provider.a

$(B)/provider/%.o: provider/%.c $(PROVIDER_HDR)
	@mkdir -p $(@D)
	$(CC) $(PROVIDER_CFLAGS) $(SAN) -c -o $@ $<

$(B)/libtrace-provider.a: $(patsubst %.c,$(B)/%.o,$(PROVIDER_SRC))
	rm -f $@ && ar rcs $@ $^

PROVIDER_LIB = $(B)/libtrace-provider.a

# Tests link the provider library and, to read what it wrote with the
# server's own decoder, libtrace.a.
$(B)/tests/provider/%: tests/provider/%.c tests/provider/*.h $(PROVIDER_LIB) $(B)/libtrace.a $(WRITER) tests/*.h $(PROVIDER_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(WRITER) $(PROVIDER_LIB) $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)

# trace.h from C++.
CXX ?= c++
$(B)/tests/provider/test_cxx: tests/provider/test_cxx.cc tests/provider/peer.h $(PROVIDER_LIB) provider/trace.h
	@mkdir -p $(@D)
	$(CXX) -std=gnu++11 -Wall -Wextra -Werror $(CFLAGS) $(SAN) -o $@ $< $(PROVIDER_LIB) -lpthread

# Everything the library parses from the network has a fuzz target; its
# corpus replays in provider-unit.
$(B)/fuzz_replay_provider_wire: tests/provider/fuzz_wire.c tests/fuzz_replay.c provider/wire.c $(PROVIDER_HDR)
	@mkdir -p $(@D)
	$(CC) $(PROVIDER_CFLAGS) $(SAN) -o $@ tests/provider/fuzz_wire.c tests/fuzz_replay.c provider/wire.c

build/fuzz/fuzz_provider_wire: tests/provider/fuzz_wire.c provider/wire.c $(PROVIDER_HDR)
	@mkdir -p $(@D)
	$(FUZZ_CC) -o $@ tests/provider/fuzz_wire.c provider/wire.c

FUZZ_TARGETS += provider_wire
fuzz: build/fuzz/fuzz_provider_wire

provider-unit: $(addprefix $(B)/tests/provider/,$(PROVIDER_TESTS)) $(B)/fuzz_replay_provider_wire
	@set -e; for t in $(PROVIDER_TESTS); do echo "== provider/$$t ($(B))"; $(B)/tests/provider/$$t; done
	$(B)/fuzz_replay_provider_wire tests/corpus/provider_wire

# check runs the provider's tests plain and under ASan+UBSan, like unit.
provider-check: deps
	$(MAKE) provider-unit B=build/rel
	$(MAKE) provider-unit B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g"

check: provider-check

# Figures, not pass/fail: ns per zone (on, streaming; off) and streaming
# throughput from 2 threads.
$(B)/bench_provider: bench/provider/bench.c tests/provider/peer.h $(PROVIDER_LIB)
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< $(PROVIDER_LIB) -lpthread

bench-provider: $(B)/bench_provider $(B)/trace-server
	$(B)/bench_provider
	B=$(B) sh bench/provider/server.sh

# The example, built the way a user builds against the installed library.
$(B)/examples/hello: examples/hello.c $(PROVIDER_LIB) provider/trace.h
	@mkdir -p $(@D)
	$(CC) $(PROVIDER_CFLAGS) $(SAN) -Iprovider -o $@ $< $(PROVIDER_LIB) -lpthread

examples: $(B)/examples/hello

# make install: trace.h in PREFIX/include/trace-provider, the library in
# PREFIX/lib, trace-provider.pc in PREFIX/lib/pkgconfig.
install: install-provider
install-provider: $(PROVIDER_LIB)
	install -D -m 644 provider/trace.h $(DESTDIR)$(PREFIX)/include/trace-provider/trace.h
	install -D -m 644 $(PROVIDER_LIB) $(DESTDIR)$(PREFIX)/lib/libtrace-provider.a
	mkdir -p $(DESTDIR)$(PREFIX)/lib/pkgconfig
	sed 's|@PREFIX@|$(PREFIX)|' provider/trace-provider.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/trace-provider.pc

# End to end through the real server: a multi-threaded program recorded
# by `trace-server record` (record_main), its trace checked event by event.
# Part of `integration` (plain, and under ASan+UBSan in integration-asan).
$(B)/tests/provider/e2e_prog: tests/provider/e2e_prog.c $(PROVIDER_LIB) provider/trace.h
	@mkdir -p $(@D)
	$(CC) $(PROVIDER_CFLAGS) $(SAN) -o $@ $< $(PROVIDER_LIB) -lpthread

# `trace-server record` is a command-line client (RECORD_SRC, in the
# Makefile), not part of the library: the test links it alone.
$(B)/tests/provider/test_e2e: tests/provider/test_e2e.c $(RECORD_SRC) $(RECORD_HDR) tests/server_util.h $(PROVIDER_LIB) $(PROVIDER_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(RECORD_SRC) $(PROVIDER_LIB) $(LIBS)

.PHONY: provider-e2e
provider-e2e: $(B)/trace-server $(B)/tests/provider/e2e_prog $(B)/tests/provider/test_e2e
	E2E_SERVER=$(B)/trace-server E2E_PROG=$(B)/tests/provider/e2e_prog $(B)/tests/provider/test_e2e

integration: provider-e2e
