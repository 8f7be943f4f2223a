# trace-server: one plain Makefile.
#   make            build ./trace-server
#   make test       install what is missing, build, run every test (also under ASan+UBSan)
#   make asan|ubsan sanitized builds in build/asan, build/ubsan
#   make bench      run the benchmarks in bench/
#   make fuzz       run the libFuzzer targets (FUZZ_SECONDS each)

CC ?= cc
PKGS = libmicrohttpd libcjson sqlite3 zlib libpq libcrypto libcurl libzstd
WARN = -Wall -Wextra -Wshadow -Wcast-qual -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lstdc++ -lpthread -lm
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)
SAN_asan = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_ubsan = -fsanitize=undefined -fno-sanitize-recover=all
SAN_tsan = -fsanitize=thread
FUZZ_SECONDS ?= 30

# The decoders and the model they fill, which the decoder fuzz targets link alone.
FXT_DECODER_SRC = ingest/fxt.c ingest/model.c ingest/runsort.c ingest/spill.c ingest/behind.c ingest/util.c
XRAY_DECODER_SRC = ingest/xray.c ingest/symbols.c ingest/model.c ingest/runsort.c ingest/spill.c ingest/behind.c ingest/util.c
INGEST_SRC = ingest/util.c ingest/model.c ingest/fxt.c ingest/xray.c ingest/symbols.c \
	ingest/args.c ingest/fxtrec.c ingest/resolve.c ingest/spill.c ingest/behind.c ingest/runsort.c ingest/sorter.c ingest/match.c ingest/slicestore.c ingest/extents.c ingest/write.c ingest/slicewrite.c ingest/names.c ingest/stacks.c ingest/build.c ingest/commit.c ingest/commit_flows.c ingest/commit_sched.c ingest/dbwriter.c \
	ingest/lod.c ingest/ingest.c ingest/child.c ingest/grow.c
QUERY_SRC = query/query.c query/cursor.c query/window.c query/slices.c query/slice.c query/counters.c query/sched.c \
	query/lists.c query/keymap.c query/stats.c query/sql.c query/extents.c query/column.c query/export.c query/area.c query/flame.c query/overview.c query/search.c \
	query/compare.c query/meta.c query/threadstate.c
TRACEDB_SRC = tracedb/tracedb.c tracedb/sketch.c
LIB_SRC = $(TRACEDB_SRC) json/jbuf.c $(INGEST_SRC) $(QUERY_SRC) build/gen/schema.c
# The object store client: SigV4 signing (libcrypto) and S3 over libcurl.
STORE_SRC = store/sigv4.c store/s3.c
CATALOG_SRC = $(STORE_SRC) catalog/catalog.c catalog/record.c catalog/meta.c catalog/json.c catalog/notes.c catalog/trends.c catalog/live.c catalog/grow.c catalog/stats.c catalog/list.c catalog/names.c catalog/retention.c catalog/storage.c \
	catalog/storage_s3.c catalog/source.c catalog/warm.c catalog/worker.c catalog/sync.c catalog/migrate.c catalog/catdb_sqlite.c catalog/catdb_sqlite_notes.c catalog/catdb_pg.c catalog/catdb_pg_index.c catalog/catdb_pg_notes.c catalog/catdb_pg_jobs.c catalog/jobs.c build/gen/catalog.c build/gen/catalog_pg.c
# `trace-server record` (client/record.c over the one HTTP client, libcurl
# and cJSON), which tests/client/test_record.c and the provider's end-to-end
# test link alone.
RECORD_SRC = client/record.c client/http.c
RECORD_HDR = client/client.h client/client_internal.h
SERVER_SRC = server/main.c server/http.c server/routes.c server/reply.c server/upload.c server/static.c server/dbpool.c \
	server/options.c server/params.c server/cache.c server/gzip.c server/captures.c server/notes.c server/library.c server/metrics.c client/http.c client/stream.c client/provide.c client/record.c \
	capture/capture.c capture/session.c capture/reader.c capture/writer.c capture/modes.c capture/json.c $(CATALOG_SRC)
TEST_NAMES = tracedb/test_tracedb tracedb/test_sketch ingest/test_util ingest/test_fxt ingest/test_resolve ingest/test_match \
	ingest/test_sorter ingest/test_names ingest/test_runsort ingest/test_behind ingest/test_dbwriter ingest/test_slicestore ingest/test_write ingest/test_lod ingest/test_lod_inc ingest/test_stacks ingest/test_ingest ingest/test_child ingest/test_commit ingest/test_reader ingest/test_xray ingest/test_stream query/test_cursor query/test_window query/test_lod query/test_area query/test_compare query/test_stats query/test_export query/test_query json/test_jbuf \
	catalog/test_catalog catalog/test_source store/test_sigv4 client/test_http client/test_record capture/test_modes
WRITER = tests/fxt_writer.c

B ?= build/rel

OBJ = $(patsubst %.c,$(B)/%.o,$(LIB_SRC))

.PHONY: all deps deps-e2e test test-pg check e2e integration integration-asan integration-tsan xray-real asan ubsan clean bench bench-xray bench-query bench-library bench-live bench-large bench-viewer bench-scale fuzz run install unit

all: trace-server

# Installs the Debian packages the build and tests need, when missing.
DEB_PKGS = build-essential pkg-config zlib1g-dev libmicrohttpd-dev libsqlite3-dev libcjson-dev libcmocka-dev sqlite3 clang time \
	libpq-dev postgresql libssl-dev libcurl4-openssl-dev libzstd-dev
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; fi

build/gen/schema.c: schema/trace.sql
	@mkdir -p $(@D)
	{ echo 'const char schema_trace_sql[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@

$(B)/%.o: %.c tracedb/*.h json/*.h ingest/*.h query/*.h server/*.h catalog/*.h client/*.h capture/*.h store/*.h provider/utf8.h provider/protocol.h provider/conn.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -c -o $@ $<

$(B)/libtrace.a: $(OBJ)
	rm -f $@ && ar rcs $@ $^

# `trace-server stream --provider` (client/provide.c) speaks the provider
# protocol through the provider library's own connection code
# (provider/conn.c, wire.c): the link takes those two from the library.
$(B)/trace-server: $(patsubst %.c,$(B)/%.o,$(SERVER_SRC)) $(B)/libtrace.a $(B)/libtrace-provider.a
	$(CC) $(SAN) -o $@ $^ $(LIBS)

trace-server: $(B)/trace-server
	cp $< $@.tmp && mv -f $@.tmp $@

# Tests: cmocka unit tests link the library; tools generate archives.
$(B)/tests/%: tests/%.c $(B)/libtrace.a $(WRITER) tests/*.h tests/server/*.h query/*.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(WRITER) $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)

$(B)/tests/ingest/test_xray: tests/ingest/test_xray.c tests/xray_writer.c tests/xray_writer.h $(B)/libtrace.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/ingest/test_xray.c tests/xray_writer.c $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)

$(B)/tests/ingest/test_stream: tests/ingest/test_stream.c tests/xray_writer.c tests/xray_writer.h tests/gen_fxt.c $(B)/libtrace.a $(WRITER) tests/*.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/ingest/test_stream.c tests/xray_writer.c $(WRITER) $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)

$(B)/tests/ingest/test_ingest: tests/ingest/test_ingest.c tests/xray_writer.c tests/xray_writer.h $(B)/libtrace.a $(WRITER) tests/*.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/ingest/test_ingest.c tests/xray_writer.c $(WRITER) $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)

$(B)/tests/catalog/test_catalog: tests/catalog/test_catalog.c $(patsubst %.c,$(B)/%.o,$(CATALOG_SRC)) $(B)/libtrace.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $^ $(LIBS) $(CMOCKA_LIBS)

# catalog/source.c's files, included (its catalog glue links from the rest).
$(B)/tests/catalog/test_source: tests/catalog/test_source.c catalog/source.c $(filter-out $(B)/catalog/source.o,$(patsubst %.c,$(B)/%.o,$(CATALOG_SRC))) $(B)/libtrace.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(filter-out $(B)/catalog/source.o,$(patsubst %.c,$(B)/%.o,$(CATALOG_SRC))) $(B)/libtrace.a \
	  $(LIBS) $(CMOCKA_LIBS)

# The catalog's contract against catalog.db and a real PostgreSQL (tests/catalog/pg.sh).
$(B)/tests/catalog/test_catdb: tests/catalog/test_catdb.c $(patsubst %.c,$(B)/%.o,$(CATALOG_SRC)) $(B)/libtrace.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $^ $(LIBS) $(CMOCKA_LIBS)

# The catalog in PostgreSQL: its contract on both backends and two real
# servers sharing one catalog, each against a PostgreSQL the tests start,
# and ingest as shared jobs over PostgreSQL and s3rver (test_jobs, which
# needs node: deps-e2e); also under ASan (a leak or error at the servers'
# exit fails the test).
.PHONY: test-pg-run
test-pg: deps deps-e2e
	$(MAKE) test-pg-run B=build/rel
	$(MAKE) test-pg-run B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g"

test-pg-run: $(B)/tests/catalog/test_catdb $(B)/gen_fxt $(B)/trace-server $(B)/tests/server/test_catalog_pg \
	$(B)/tests/server/test_jobs
	GEN_FXT=$(B)/gen_fxt $(B)/tests/catalog/test_catdb
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_catalog_pg
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_jobs

$(B)/tests/store/test_sigv4: tests/store/test_sigv4.c $(B)/store/sigv4.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $^ $(LIBS) $(CMOCKA_LIBS)

# The command line's HTTP client against a fake server (tests/provider/peer.h).
$(B)/tests/client/test_http: tests/client/test_http.c client/http.c client/client_internal.h tests/provider/peer.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/client/test_http.c client/http.c $(LIBS) $(CMOCKA_LIBS)

# The trace manager's buffering modes, pure functions (capture/modes.c).
$(B)/tests/capture/test_modes: tests/capture/test_modes.c capture/modes.c capture/modes.h ingest/fxtrec.c ingest/fxtrec.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/capture/test_modes.c capture/modes.c ingest/fxtrec.c $(CMOCKA_LIBS)

# trace-server record against a fake capture API.
$(B)/tests/client/test_record: tests/client/test_record.c $(RECORD_SRC) $(RECORD_HDR) tests/provider/peer.h tests/ingest_util.h $(B)/libtrace.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(RECORD_SRC) $(B)/libtrace.a $(LIBS) $(CMOCKA_LIBS)

# The storage contract against the directory and s3rver (node, make deps-e2e).
$(B)/tests/store/test_storage: tests/store/test_storage.c tests/server_util.h tests/store/s3rver_util.h $(B)/catalog/storage.o $(B)/catalog/storage_s3.o \
	$(B)/store/s3.o $(B)/store/sigv4.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ $< $(B)/catalog/storage.o $(B)/catalog/storage_s3.o $(B)/store/s3.o $(B)/store/sigv4.o \
	  $(LIBS) $(CMOCKA_LIBS)

$(B)/fuzz_replay_xray: tests/fuzz_xray.c tests/fuzz_replay.c $(XRAY_DECODER_SRC) ingest/*.h
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_xray.c tests/fuzz_replay.c $(XRAY_DECODER_SRC) -lstdc++

$(B)/fuzz_replay_http: tests/fuzz_http.c tests/fuzz_replay.c server/params.c server/server_internal.h
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_http.c tests/fuzz_replay.c server/params.c

$(B)/fuzz_replay_symbols: tests/fuzz_symbols.c tests/fuzz_replay.c $(B)/libtrace.a
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_symbols.c tests/fuzz_replay.c $(B)/libtrace.a $(LIBS)

$(B)/gen_fxt: tests/gen_fxt.c $(WRITER) tests/fxt_writer.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/gen_fxt.c $(WRITER)

$(B)/fuzz_replay: tests/fuzz_fxt.c tests/fuzz_fxt_check.h tests/fuzz_replay.c $(B)/libtrace.a
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_fxt.c tests/fuzz_replay.c $(B)/libtrace.a $(LIBS)

$(B)/fuzz_replay_grow: tests/fuzz_grow.c tests/db_compare.h tests/fuzz_util.h tests/fuzz_replay.c $(B)/libtrace.a
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_grow.c tests/fuzz_replay.c $(B)/libtrace.a $(LIBS)

# The decoder targets link their decoder and the model only: no SQLite.
$(B)/fuzz_replay_fxt_decode: tests/fuzz_fxt_decode.c tests/fuzz_fxt_check.h tests/fuzz_replay.c $(FXT_DECODER_SRC) ingest/*.h
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_fxt_decode.c tests/fuzz_replay.c $(FXT_DECODER_SRC)

$(B)/fuzz_replay_fifo: tests/fuzz_fifo.c tests/fuzz_replay.c tests/fuzz_util.h capture/fifo.h provider/protocol.h ingest/fxtrec.c ingest/fxtrec.h ingest/reader.h
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/fuzz_fifo.c tests/fuzz_replay.c ingest/fxtrec.c

unit: $(addprefix $(B)/tests/,$(TEST_NAMES)) $(B)/fuzz_replay $(B)/fuzz_replay_fxt_decode $(B)/fuzz_replay_xray $(B)/fuzz_replay_http $(B)/fuzz_replay_fifo \
      $(B)/fuzz_replay_symbols $(B)/fuzz_replay_grow $(B)/trace-server $(B)/gen_fxt
	@set -e; for t in $(TEST_NAMES); do echo "== $$t ($(B))"; $(B)/tests/$$t; done
	$(B)/fuzz_replay tests/corpus/fxt
	$(B)/fuzz_replay_grow tests/corpus/fxt tests/corpus/grow
	$(B)/fuzz_replay_fxt_decode tests/corpus/fxt_decode
	$(B)/fuzz_replay_xray tests/corpus/xray
	$(B)/fuzz_replay_http tests/corpus/http
	$(B)/fuzz_replay_symbols tests/corpus/symbols
	$(B)/fuzz_replay_fifo tests/corpus/fifo
	B=$(B) sh tests/cli.sh

check: deps
	$(MAKE) unit B=build/rel
	$(MAKE) unit B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g"

# The server's integration test: the real binary on a loopback port.
$(B)/tests/server/test_capture: tests/server/test_capture.c tests/server/api_util.h capture/fifo.h provider/protocol.h ingest/fxtrec.c ingest/fxtrec.h ingest/reader.h tests/server_util.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN) -o $@ tests/server/test_capture.c ingest/fxtrec.c $(LIBS) $(CMOCKA_LIBS)

integration: deps trace-server $(B)/tests/server/test_server $(B)/tests/server/test_library $(B)/tests/server/test_notes $(B)/tests/server/test_trends $(B)/tests/server/test_live $(B)/tests/server/test_metrics \
	$(B)/tests/server/test_preview $(B)/tests/server/test_capture $(B)/gen_fxt $(B)/examples/hello
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_server
	TRACE_SERVER=$(B)/trace-server $(B)/tests/server/test_library
	TRACE_SERVER=$(B)/trace-server $(B)/tests/server/test_notes
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_trends
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_live
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_preview
	TRACE_SERVER=$(B)/trace-server $(B)/tests/server/test_metrics
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt EXAMPLE_HELLO=$(B)/examples/hello $(B)/tests/server/test_capture
	$(MAKE) $(B)/tests/server/test_gaps && TRACE_SERVER=$(B)/trace-server $(B)/tests/server/test_gaps
	$(MAKE) $(B)/tests/server/test_disk && TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_disk

# The viewer in headless Chromium (Debian's), driven by playwright-core.
deps-e2e:
	@missing=""; for p in chromium nodejs npm; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if ! command -v node >/dev/null; then :; else missing=$$(echo "$$missing" | sed 's/ nodejs//; s/ npm//'); fi; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; fi
	@if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; \
	  else npm install --no-audit --no-fund --loglevel=error; fi

e2e: deps deps-e2e trace-server $(B)/gen_fxt
	npm run --silent test:e2e

# A make variable's value, for the scripts that compile sources make lists.
print-%:
	@echo $($*)

# XRay against LLVM: a real instrumented program's logs, uploaded with its
# binary, compared slice by slice with llvm-xray convert.
xray-real: deps trace-server
	TRACE_SERVER=$(B)/trace-server XRAY_DECODER_SRC="$(XRAY_DECODER_SRC)" sh tests/xray/run.sh

# The same against the ASan+UBSan server and test programs: a report aborts
# the process that made it, and the test fails.
integration-asan: deps
	$(MAKE) integration B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g"

# The same against ThreadSanitizer's server and test programs: the first
# data race ends the process that made it (halt_on_error), and the test
# fails. The ingest worker, live snapshots, captures and queries run at
# once in one server; a race between two ingests once reordered a trace's
# slices. A growing trace's pause is written by a fork of its ingest
# process, which starts threads of its own (ingest/grow.h): die_after_fork=0
# lets ThreadSanitizer follow it. Where the kernel's address layout keeps ThreadSanitizer from
# starting at all (a probe program fails to run), it says so and skips.
integration-tsan: deps
	@mkdir -p build/tsan && printf '#include <pthread.h>\nstatic void *f(void *a) { return a; }\nint main(void) { pthread_t t; return pthread_create(&t, 0, f, 0) || pthread_join(t, 0); }\n' >build/tsan/probe.c
	@if $(CC) -fsanitize=thread -o build/tsan/probe build/tsan/probe.c -lpthread && build/tsan/probe; then \
	  TSAN_OPTIONS="halt_on_error=1 die_after_fork=0 $${TSAN_OPTIONS:-}" $(MAKE) integration B=build/tsan SAN="$(SAN_tsan)" CFLAGS="-O1 -g"; \
	else echo "integration-tsan: ThreadSanitizer cannot run here (its probe failed): skipped"; fi

test: check test-pg integration integration-asan integration-tsan xray-real reliability e2e test-store test-scale

# Three servers sharing one catalog (PostgreSQL) and one store (s3rver), as
# docs/DEPLOY.md deploys them (tests/scale/test_scale.c), and `trace-server
# migrate` moving a --data library there (tests/scale/test_migrate.c); also
# under ASan (a report in the migrate command fails its test).
.PHONY: test-scale
$(B)/tests/scale/test_scale $(B)/tests/scale/test_migrate: tests/scale/scale_util.h tests/server/api_util.h tests/store/s3rver_util.h
.PHONY: test-scale-run
test-scale: deps deps-e2e
	$(MAKE) test-scale-run B=build/rel
	$(MAKE) test-scale-run B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g"

test-scale-run: $(B)/tests/scale/test_scale $(B)/tests/scale/test_migrate $(B)/trace-server $(B)/gen_fxt
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/scale/test_scale
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/scale/test_migrate

# The object store (--store): the storage contract against the directory and
# s3rver, and the real server on s3rver losing its cache; also under ASan.
.PHONY: test-store test-store-run
test-store: deps deps-e2e
	$(MAKE) test-store-run B=build/rel
	$(MAKE) test-store-run B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g"

test-store-run: $(B)/tests/store/test_sigv4 $(B)/tests/store/test_storage $(B)/tests/server/test_s3 $(B)/trace-server $(B)/gen_fxt
	$(B)/tests/store/test_sigv4
	$(B)/tests/store/test_storage
	TRACE_SERVER=$(B)/trace-server GEN_FXT=$(B)/gen_fxt $(B)/tests/server/test_s3

# Hostile input, load and crashes (tests/reliability/run.sh; docs/RELIABILITY.md)
.PHONY: reliability reliability-full
reliability: deps
	sh tests/reliability/run.sh

reliability-full: deps
	sh tests/reliability/run.sh --full

# Sets everything up and runs the server with a demo trace, on http://127.0.0.1:8080/
PORT ?= 8080
run: deps trace-server $(B)/gen_fxt
	@test -f build/demo.fxt || $(B)/gen_fxt --events 200000 --threads 12 --seed 7 build/demo.fxt
	./trace-server serve --port $(PORT) --data ./data --demo build/demo.fxt $(RUN_ARGS)

PREFIX ?= /usr/local
install: trace-server
	install -D -m 755 trace-server $(DESTDIR)$(PREFIX)/bin/trace-server
	mkdir -p $(DESTDIR)$(PREFIX)/share/trace-server/static
	cp -R static/. $(DESTDIR)$(PREFIX)/share/trace-server/static/

asan:
	$(MAKE) B=build/asan SAN="$(SAN_asan)" CFLAGS="-O1 -g" build/asan/trace-server

ubsan:
	$(MAKE) B=build/ubsan SAN="$(SAN_ubsan)" CFLAGS="-O1 -g" build/ubsan/trace-server

# libFuzzer (clang): make fuzz FUZZ_SECONDS=60 runs each target that long,
# on a scratch copy of its committed corpus (new inputs stay in build/fuzz).
# fxt_decode and xray run a decoder alone (~11k inputs/s here under ASan);
# fxt runs the decoder and the build into SQLite (~1k/s); grow ingests each
# input twice, as a file and as a growing stream (~15/s; seeded from its own
# corpus, gen_fxt archives, and the fxt corpus).
FUZZ_TARGETS = fxt fxt_decode xray http symbols fifo grow
build/fuzz/fuzz_fifo: tests/fuzz_fifo.c tests/fuzz_util.h capture/fifo.h provider/protocol.h ingest/fxtrec.c ingest/fxtrec.h ingest/reader.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -o $@ tests/fuzz_fifo.c ingest/fxtrec.c
# fuzz_http reaches only server/params.c (the generic rule links ingest and query)
build/fuzz/fuzz_http: tests/fuzz_http.c server/params.c server/server_internal.h
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(shell pkg-config --cflags $(PKGS)) -o $@ tests/fuzz_http.c server/params.c
FUZZ_CC = clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
build/fuzz/fuzz_fxt_decode: tests/fuzz_fxt_decode.c tests/fuzz_fxt_check.h $(FXT_DECODER_SRC) ingest/*.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -o $@ tests/fuzz_fxt_decode.c $(FXT_DECODER_SRC)
build/fuzz/fuzz_xray: tests/fuzz_xray.c $(XRAY_DECODER_SRC) ingest/*.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -o $@ tests/fuzz_xray.c $(XRAY_DECODER_SRC) -lstdc++
build/fuzz/fuzz_%: tests/fuzz_%.c tests/*.h $(LIB_SRC) ingest/*.h tracedb/*.h json/*.h
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(shell pkg-config --cflags $(PKGS)) -o $@ $< $(LIB_SRC) $(LIBS)

fuzz: deps $(addprefix build/fuzz/fuzz_,$(FUZZ_TARGETS))
	@set -e; for t in $(FUZZ_TARGETS); do mkdir -p build/fuzz/corpus-$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    build/fuzz/corpus-$$t tests/corpus/$$t $$(test $$t = grow && echo tests/corpus/fxt) 2>&1 | grep -E 'stat::number_of_executed_units|Done|ERROR|SUMMARY' ; done

bench: $(B)/trace-server $(B)/gen_fxt $(B)/bench_ceiling
	B=$(B) sh bench/ingest

bench-xray: trace-server $(B)/bench_ceiling
	RUNS=$${RUNS:-3} OURS="$(B)/trace-server ingest -o build/bench-xray.db" CEILING=$(B)/bench_ceiling CEILING_DB=build/bench-xray.db \
	  XRAY_DECODER_SRC="$(XRAY_DECODER_SRC)" sh bench/xray/run.sh

bench-query: trace-server $(B)/gen_fxt
	B=$(B) sh bench/query/run.sh

bench-live: trace-server $(B)/gen_fxt
	B=$(B) sh bench/live/run.sh

bench-large: trace-server $(B)/gen_fxt
	B=$(B) sh bench/large/run.sh

bench-library: trace-server $(B)/gen_fxt
	B=$(B) sh bench/library/run.sh

# Servers on PostgreSQL and S3 against the embedded mode (issue 25's targets).
bench-scale: trace-server $(B)/gen_fxt deps-e2e
	B=$(B) sh bench/scale/run.sh

bench-viewer: trace-server $(B)/gen_fxt deps-e2e
	sh bench/viewer/run.sh --more

$(B)/bench_ceiling: bench/ceiling.c
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBS)

clean:
	rm -rf build trace-server

build/gen/catalog.c: schema/catalog.sql
	@mkdir -p $(@D)
	{ echo 'const char schema_catalog_sql[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@

build/gen/catalog_pg.c: schema/catalog_pg.sql
	@mkdir -p $(@D)
	{ echo 'const char schema_catalog_pg_sql[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@
include provider/provider.mk
