# The provider library (provider/, docs/PROVIDER.md): libtrace-provider.a,
# its tests, fuzz targets, example and benchmark. Included by the Makefile.
#   make provider          the library
#   make provider-check    its tests (plain; `check` runs them under ASan too)
#   make bench-provider    ns per zone and streaming throughput
#   make install           also installs trace.h, the library and trace-provider.pc

PROVIDER_SRC = provider/engine.c provider/writer.c provider/wire.c provider/transport.c
PROVIDER_HDR = provider/trace.h provider/provider_internal.h
PROVIDER_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS)
PROVIDER_TESTS = test_writer test_modes test_wire

.PHONY: provider provider-check bench-provider install-provider

provider: $(B)/libtrace-provider.a

$(B)/provider/%.o: provider/%.c $(PROVIDER_HDR)
	@mkdir -p $(@D)
	$(CC) $(PROVIDER_CFLAGS) $(SAN) -c -o $@ $<

$(B)/libtrace-provider.a: $(patsubst %.c,$(B)/%.o,$(PROVIDER_SRC))
	ar rcs $@ $^

PROVIDER_LIB = $(B)/libtrace-provider.a

# Tests link the provider library and, to read what it wrote with the
# server's own decoder, libtrace.a.
$(B)/tests/provider/%: tests/provider/%.c tests/provider/*.h $(PROVIDER_LIB) $(B)/libtrace.a $(WRITER) tests/*.h $(PROVIDER_HDR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(WRITER) $(PROVIDER_LIB) $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)
