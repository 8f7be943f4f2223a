# trace-server: one plain Makefile.
#   make            build ./trace-server
#   make test       install what is missing, build, run every test (also under ASan+UBSan)
#   make asan|ubsan sanitized builds in build/asan, build/ubsan
#   make bench      run the benchmarks in bench/
#   make fuzz       run the libFuzzer targets (FUZZ_SECONDS each)

CC ?= cc
PKGS = libmicrohttpd libcjson sqlite3
WARN = -Wall -Wextra -Wshadow -Wcast-qual -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)
SAN_asan = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_ubsan = -fsanitize=undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 30

INGEST_SRC = ingest/fxt.c ingest/model.c ingest/build.c ingest/store.c ingest/ingest.c ingest/lod.c
QUERY_SRC = query/query.c query/json.c query/export.c
LIB_SRC = $(INGEST_SRC) $(QUERY_SRC) build/gen/schema.c
SERVER_SRC = server/main.c server/http.c server/library.c server/options.c build/gen/catalog.c
TEST_NAMES = test_fxt test_ingest test_reader
WRITER = tests/fxt_writer.c

B ?= build/rel

OBJ = $(patsubst %.c,$(B)/%.o,$(LIB_SRC))

.PHONY: all deps test check asan ubsan clean bench fuzz run corpus

all: trace-server

# Installs the Debian packages the build and tests need, when missing.
DEB_PKGS = build-essential pkg-config libmicrohttpd-dev libsqlite3-dev libcjson-dev libcmocka-dev sqlite3 clang
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; fi

build/gen/schema.c: schema/trace.sql
	@mkdir -p $(@D)
	{ echo 'const char schema_trace_sql[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@

$(B)/%.o: %.c ingest/*.h query/*.h server/*.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -c -o $@ $<

$(B)/libtrace.a: $(OBJ)
	ar rcs $@ $^

$(B)/trace-server: $(patsubst %.c,$(B)/%.o,$(SERVER_SRC)) $(B)/libtrace.a
	$(CC) $(SAN) -o $@ $^ $(LIBS)

trace-server: $(B)/trace-server
	cp $< $@.tmp && mv -f $@.tmp $@

# Tests: cmocka unit tests link the library; tools generate archives.
$(B)/tests/%: tests/%.c $(B)/libtrace.a $(WRITER) tests/*.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(WRITER) $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)

$(B)/gen_fxt: tests/gen_fxt.c $(WRITER) tests/fxt_writer.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/gen_fxt.c $(WRITER)

$(B)/fuzz_replay: tests/fuzz_fxt.c tests/fuzz_replay.c $(B)/libtrace.a
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_fxt.c tests/fuzz_replay.c $(B)/libtrace.a $(LIBS)

unit: $(addprefix $(B)/tests/,$(TEST_NAMES)) $(B)/fuzz_replay $(B)/trace-server $(B)/gen_fxt
	@set -e; for t in $(TEST_NAMES); do echo "== $$t ($(B))"; $(B)/tests/$$t; done
	$(B)/fuzz_replay tests/corpus/fxt
	B=$(B) sh tests/cli.sh

check: deps
	$(MAKE) unit B=build/rel
	$(MAKE) unit B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g"

test: check

asan:
	$(MAKE) B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g" build/asan/trace-server

ubsan:
	$(MAKE) B=build/ubsan SAN="$(SAN_ubsan)" CFLAGS="-O1 -g" build/ubsan/trace-server

# libFuzzer (clang): make fuzz FUZZ_SECONDS=60
build/fuzz/fuzz_fxt: tests/fuzz_fxt.c $(INGEST_SRC) build/gen/schema.c ingest/*.h
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(shell pkg-config --cflags $(PKGS)) -o $@ tests/fuzz_fxt.c $(INGEST_SRC) build/gen/schema.c $(LIBS)

fuzz: build/fuzz/fuzz_fxt
	@mkdir -p build/fuzz/corpus-fxt
	build/fuzz/fuzz_fxt -max_total_time=$(FUZZ_SECONDS) -max_len=65536 build/fuzz/corpus-fxt tests/corpus/fxt

bench: $(B)/trace-server $(B)/gen_fxt $(B)/bench_ceiling
	B=$(B) sh bench/ingest

$(B)/bench_ceiling: bench/ceiling.c
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBS)

clean:
	rm -rf build trace-server

build/gen/catalog.c: schema/catalog.sql
	@mkdir -p $(@D)
	{ echo 'const char schema_catalog_sql[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@
