#!/bin/sh
# tests/xray/run.sh: our XRay decoder against LLVM's own reader, on logs that
# clang's runtime writes for a real program.
#
#   sh tests/xray/run.sh             (from anywhere; paths are the repository's)
#
# Installs Debian's clang, llvm (for llvm-xray) and compiler-rt's XRay
# runtime (libclang-rt-N-dev, N the clang major version) when missing, then
# builds tests/xray/demo.c with -fxray-instrument and runs it in Flight Data
# Recorder mode twice:
#   defaults  the runtime's defaults: 16 KiB buffers, calls under 5 us elided;
#   ring      4 KiB buffers, at most 16 of them, nothing elided: the ring of
#             buffers wraps, so threads begin mid-stack and each thread's
#             buffers reach the file out of time order.
# For each log it compares every thread's slices (name, depth, start and
# duration) as `llvm-xray convert --output-format=trace_event --symbolize`
# shows them with what our decoder (ingest/xray.c) and symbol tables
# (ingest/symbols.c) give, printed by tests/xray/dump.c and compared by
# tests/xray/check.c. It also checks that the map `llvm-xray extract
# --symbolize` prints (YAML) names every slice as the binary does, that
# feeding the log in odd-sized chunks changes nothing, and that we count as
# many calls with arguments and custom events as llvm-xray's YAML output.
# Then the same comparison on synthetic logs of versions 2 to 5 from
# tests/xray/gen_xray.c (ring order, lost buffers, TSC wraps, tail exits,
# arguments, custom and typed events), which clang 14's runtime cannot all
# write (it writes version 5; its typed-event trampoline crashes). Version
# 1 is left out: llvm-xray reads v1 filler as records and rejects it.
#
# Exits 0 when everything agrees, 1 otherwise. Environment: CC (cc) builds
# our side; KEEP=1 keeps the work directory; ITERATIONS (300) per thread.

set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CC=${CC:-cc}
SERVER=${TRACE_SERVER:-$ROOT/build/rel/trace-server}
ITERATIONS=${ITERATIONS:-300}
WARN="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wcast-qual -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/xray-test.XXXXXX")
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- tools --------------------------------------------------------------
runtime_present() {
	ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.xray-fdr-*.a >/dev/null 2>&1
}

clang_major() {
	if command -v clang >/dev/null 2>&1; then
		clang --version | sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' | head -n 1
	else
		apt-cache policy clang 2>/dev/null | sed -n 's/.*Candidate: [0-9]*:\([0-9][0-9]*\).*/\1/p' | head -n 1
	fi
}

install_tools() {
	missing=""
	command -v clang >/dev/null 2>&1 || missing="$missing clang"
	command -v llvm-xray >/dev/null 2>&1 || missing="$missing llvm"
	runtime_present || missing="$missing libclang-rt-$(clang_major)-dev"
	pkg-config --exists libcjson 2>/dev/null || missing="$missing libcjson-dev pkg-config"
	[ -n "$missing" ] || return 0
	echo "installing:$missing"
	SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
	$SUDO apt-get update -qq
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
	runtime_present || { echo "run.sh: the XRay runtime is still missing" >&2; exit 1; }
}

# the decoder's sources, as the Makefile lists them (its one list)
XRAY_DECODER_SRC=${XRAY_DECODER_SRC:-$(make -s -C "$ROOT" print-XRAY_DECODER_SRC)}

build() {
	(cd "$ROOT" &&
		$CC $WARN -O2 -g -o "$WORK/dump" tests/xray/dump.c $XRAY_DECODER_SRC -lstdc++ &&
		$CC $WARN -O2 -o "$WORK/gen_xray" tests/xray/gen_xray.c tests/xray_writer.c &&
		$CC $WARN -O2 -g $(pkg-config --cflags libcjson) -o "$WORK/check" tests/xray/check.c \
			$(pkg-config --libs libcjson) &&
		$CC $WARN -O2 -g $(pkg-config --cflags libcjson) -o "$WORK/api_dump" tests/xray/api_dump.c \
			$(pkg-config --libs libcjson) &&
		{ [ -x "$SERVER" ] || make -s build/rel/trace-server; } &&
		clang -O2 -g -Wall -Werror -fxray-instrument -fxray-instruction-threshold=1 -o "$WORK/demo" \
			tests/xray/demo.c -lpthread)
	llvm-xray extract --symbolize "$WORK/demo" >"$WORK/map.yaml"
}

# ---- one run --------------------------------------------------------------
FAILED=0

fail() {
	echo "FAIL ($1): $2"
	FAILED=1
}

# The value after word $2 in the "calls ..." line of dump output $1.
dump_count() {
	sed -n "s/^calls .*$2 \\([0-9]*\\).*/\\1/p" "$1"
}

run_case() {
	name=$1
	config=$2
	XRAY_OPTIONS="patch_premain=false xray_mode=xray-fdr verbosity=0 xray_logfile_base=$WORK/$name-" \
		"$WORK/demo" "$ITERATIONS" "$config" 2>"$WORK/$name.stderr" || {
		cat "$WORK/$name.stderr" >&2
		fail "$name" "the demo failed"
		return
	}
	log=$(ls "$WORK/$name-"* 2>/dev/null | head -n 1)
	[ -n "$log" ] || { fail "$name" "no log written"; return; }
	echo "== $name: $(wc -c <"$log") bytes, header: $(od -An -tu2 -N4 "$log" | awk '{ print "version " $1 ", type " $2 }')"
	llvm-xray convert --output-format=trace_event --symbolize --instr_map="$WORK/demo" -o "$WORK/$name.json" "$log"
	llvm-xray convert --output-format=yaml --symbolize --instr_map="$WORK/demo" -o "$WORK/$name.yaml" "$log"
	"$WORK/dump" --symbols "$WORK/demo" "$log" >"$WORK/$name.txt"
	"$WORK/dump" --symbols "$WORK/map.yaml" --chunk 4093 "$log" >"$WORK/$name.y.txt"
	sed -n '1,2p; /^diag/p' "$WORK/$name.txt"
	cmp -s "$WORK/$name.txt" "$WORK/$name.y.txt" ||
		fail "$name" "names from the YAML map or chunked feeding differ from the binary's"
	if "$WORK/check" "$WORK/$name.json" "$WORK/$name.txt" >"$WORK/$name.check"; then
		tail -n 4 "$WORK/$name.check"
	else
		tail -n 30 "$WORK/$name.check"
		fail "$name" "slices differ from llvm-xray's"
	fi
	# the same through the server: upload log and binary, read slices back
	if "$WORK/api_dump" "$SERVER" "$log" "$WORK/demo" >"$WORK/$name.api.txt" 2>"$WORK/$name.api.err" &&
		"$WORK/check" "$WORK/$name.json" "$WORK/$name.api.txt" >"$WORK/$name.api.check"; then
		echo "through the server: $(tail -n 1 "$WORK/$name.api.check")"
	else
		tail -n 20 "$WORK/$name.api.err" "$WORK/$name.api.check" 2>/dev/null
		fail "$name" "slices uploaded to the server differ from llvm-xray's"
	fi
	args_llvm=$(grep -c 'kind: function-enter-arg' "$WORK/$name.yaml" || true)
	events_llvm=$(grep -c 'kind: custom-event' "$WORK/$name.yaml" || true)
	args_ours=$(dump_count "$WORK/$name.txt" with_args)
	events_ours=$(dump_count "$WORK/$name.txt" instants)
	echo "calls with arguments: llvm-xray $args_llvm, ours $args_ours; custom events: llvm-xray $events_llvm, ours $events_ours"
	[ "$args_llvm" = "$args_ours" ] || fail "$name" "calls with arguments differ"
	[ "$events_llvm" = "$events_ours" ] || fail "$name" "custom events differ"
	[ "$args_ours" -gt 0 ] && [ "$events_ours" -gt 0 ] || fail "$name" "no arguments or custom events decoded"
}

# A synthetic log of version $1, compared with llvm-xray without symbols.
synthetic_case() {
	log="$WORK/synthetic-v$1.xray"
	"$WORK/gen_xray" --version "$1" --records 300000 --threads 4 --drop 5 --seed "$1" "$log"
	llvm-xray convert --output-format=trace_event -o "$WORK/synthetic.json" "$log"
	"$WORK/dump" "$log" >"$WORK/synthetic.txt"
	echo "== synthetic v$1: $(wc -c <"$log") bytes; $(sed -n '2p' "$WORK/synthetic.txt")"
	if "$WORK/check" "$WORK/synthetic.json" "$WORK/synthetic.txt" >"$WORK/synthetic.check"; then
		tail -n 1 "$WORK/synthetic.check"
	else
		tail -n 30 "$WORK/synthetic.check"
		fail "synthetic v$1" "slices differ from llvm-xray's"
	fi
}

install_tools
build
run_case defaults ""
run_case ring "buffer_size=4096 buffer_max=16 func_duration_threshold_us=0"
for v in 2 3 4 5; do
	synthetic_case "$v"
done
if [ "$FAILED" = 0 ]; then echo "PASS: tests/xray/run.sh"; else echo "FAIL: tests/xray/run.sh"; fi
exit "$FAILED"
