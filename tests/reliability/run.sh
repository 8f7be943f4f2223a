#!/bin/sh
# tests/reliability/run.sh: the reliability and security suite (issue 6).
#
#   sh tests/reliability/run.sh           quick versions, a few minutes (CI)
#   sh tests/reliability/run.sh --full    the long versions (see docs/RELIABILITY.md)
#
# Builds what it needs (the release and ASan servers with make, its own
# programs into build/reliability/), then runs, each as one step:
#   fuzz-replay   the committed corpora of tests/fuzz_http.c and
#                 tests/fuzz_symbols.c under ASan+UBSan (properties asserted)
#   sweep         damaged FXT and XRay archives through ingest_file() under
#                 ASan+UBSan+LSan, and a sample through the ASan server
#   uploads       hostile clients: cut uploads, bad parameters, routes, big
#                 headers, slowloris (ASan server; runs alongside the others,
#                 as it waits 60 s for the server's connection timeout)
#   security      SQL, static files, token, bind (ASan server)
#   crash         kill -9 at random moments and restart; a full disk
#   soak          32 clients and a churning library (release server)
#   live          live streams: 1 byte a second, 16 at once beside 32
#                 readers, one that fills the disk (ASan server)
#   e2e-payloads  the viewer shows hostile trace strings as text (headless
#                 Chromium; skipped when chromium or playwright-core is missing)
# Every program prints its checks; the last line here is "N passed, M
# failed" over the steps, and the exit code is 1 when any step failed.
#
# Environment: CC (cc); SOAK_SECONDS (quick 30, full 300); CRASH_ROUNDS
# (quick 6, full 40); CRASH_SEED; REL_KEEP=1 keeps work directories;
# SKIP="step ..." leaves steps out.

set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
FULL=0
[ "${1:-}" = "--full" ] && FULL=1
CC=${CC:-cc}
B=build/reliability
mkdir -p "$B"
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/reliability.XXXXXX")
WARN="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wcast-qual -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
PKG_CFLAGS=$(pkg-config --cflags libmicrohttpd libcjson sqlite3)
PKG_LIBS="$(pkg-config --libs libmicrohttpd libcjson sqlite3 libzstd) -lstdc++ -lpthread -lm"

pass=0
fail=0
failed=""

skipped() {
	case " ${SKIP:-} " in *" $1 "*) return 0 ;; esac
	return 1
}

# step NAME COMMAND...: runs one step, counts it.
step() {
	name=$1
	shift
	if skipped "$name"; then
		echo "== $name: skipped (SKIP)"
		return
	fi
	echo "== $name"
	t0=$(date +%s)
	if "$@"; then
		pass=$((pass + 1))
		echo "== $name: ok ($(($(date +%s) - t0)) s)"
	else
		fail=$((fail + 1))
		failed="$failed $name"
		echo "== $name: FAILED ($(($(date +%s) - t0)) s)"
	fi
}

# ---- build ------------------------------------------------------------------
build() {
	make -s trace-server build/rel/gen_fxt >/dev/null &&
		make -s asan >/dev/null &&
		$CC $WARN -O2 -o $B/gen_xray tests/xray/gen_xray.c tests/xray_writer.c &&
		$CC $WARN -O1 -g $SAN $PKG_CFLAGS -o $B/sweep tests/reliability/sweep.c build/asan/libtrace.a $PKG_LIBS &&
		$CC $WARN -O1 -g $SAN $PKG_CFLAGS -o $B/fuzz_replay_http tests/fuzz_http.c tests/fuzz_replay.c server/params.c &&
		$CC $WARN -O1 -g $SAN $PKG_CFLAGS -o $B/fuzz_replay_symbols tests/fuzz_symbols.c tests/fuzz_replay.c \
			build/asan/libtrace.a $PKG_LIBS &&
		for p in uploads soak crash security live; do
			$CC $WARN -O1 -g $SAN $PKG_CFLAGS -o $B/$p tests/reliability/$p.c $PKG_LIBS || return 1
		done
}
step build build
if [ $fail -ne 0 ]; then
	echo "0 passed, 1 failed"
	exit 1
fi
export GEN_FXT="$ROOT/build/rel/gen_fxt" GEN_XRAY="$ROOT/$B/gen_xray" STATIC_DIR="$ROOT/static"
ASAN_SERVER="$ROOT/build/asan/trace-server"
REL_SERVER="$ROOT/build/rel/trace-server"

# ---- uploads, in the background (it spends a minute waiting on a timeout) ---
uploads_bg() {
	TRACE_SERVER=$ASAN_SERVER $B/uploads $([ $FULL = 1 ] && echo --full) >"$LOGS/uploads.log" 2>&1
	echo $? >"$LOGS/uploads.rc"
}
if ! skipped uploads; then
	uploads_bg &
	UPLOADS_PID=$!
fi

# ---- fuzz corpora -------------------------------------------------------------
replay() {
	$B/fuzz_replay_http tests/corpus/http 2>"$LOGS/replay-http.err" &&
		$B/fuzz_replay_symbols tests/corpus/symbols 2>"$LOGS/replay-symbols.err" ||
		{ tail -5 "$LOGS"/replay-*.err; return 1; }
}
step fuzz-replay replay

# ---- sweep -------------------------------------------------------------------------
sweep() {
	in=$B/sweep-inputs
	rm -rf "$in" && mkdir -p "$in" &&
		build/rel/gen_fxt --events 3000 --threads 3 --seed 11 "$in/gen-small.fxt" >/dev/null &&
		build/rel/gen_fxt --events 20000 --threads 6 --seed 5 "$in/gen-medium.fxt" >/dev/null &&
		build/rel/gen_fxt --events 2000 --threads 2 --seed 7 --big-endian "$in/gen-be.fxt" >/dev/null &&
		for v in 1 2 3 4 5; do
			$B/gen_xray --version $v --threads 3 --records 2000 --buffer-size 2048 --seed $v "$in/gen-v$v.xray" || return 1
		done || return 1
	if [ $FULL = 1 ]; then
		build/rel/gen_fxt --events 200000 --threads 12 --seed 9 "$in/gen-large.fxt" >/dev/null &&
			$B/gen_xray --version 5 --threads 8 --records 100000 --seed 9 "$in/gen-large.xray" || return 1
		$B/sweep --limit 60 --server "$ASAN_SERVER" --sample 400 "$in" tests/corpus/fxt tests/corpus/xray
	else
		$B/sweep --quick --server "$ASAN_SERVER" --sample 60 "$in" tests/corpus/fxt tests/corpus/xray
	fi 2>"$LOGS/sweep.err"
	rc=$?
	grep -E "VIOLATION|HANG|CRASH|ERROR|SUMMARY" -A3 "$LOGS/sweep.err" | head -40
	return $rc
}
step sweep sweep

# ---- security, crash, soak --------------------------------------------------------
step security env TRACE_SERVER="$ASAN_SERVER" $B/security
step live env TRACE_SERVER="$ASAN_SERVER" $B/live $([ $FULL = 1 ] && echo --full)
if [ $FULL = 1 ]; then
	step crash env TRACE_SERVER="$REL_SERVER" CRASH_ROUNDS="${CRASH_ROUNDS:-40}" $B/crash
	step soak env TRACE_SERVER="$REL_SERVER" SOAK_SECONDS="${SOAK_SECONDS:-300}" $B/soak
else
	step crash env TRACE_SERVER="$REL_SERVER" CRASH_ROUNDS="${CRASH_ROUNDS:-6}" $B/crash
	step soak env TRACE_SERVER="$REL_SERVER" SOAK_SECONDS="${SOAK_SECONDS:-30}" $B/soak
fi

# ---- the viewer ------------------------------------------------------------------------
e2e() {
	if ! command -v node >/dev/null 2>&1 || [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] ||
		[ ! -d node_modules/playwright-core ]; then
		echo "skip - e2e-payloads: needs node, chromium and playwright-core (make deps-e2e)"
		return 0
	fi
	TRACE_SERVER=$REL_SERVER node --test tests/e2e/payloads.test.mjs
}
step e2e-payloads e2e

# ---- uploads ------------------------------------------------------------------------------
uploads_wait() {
	wait "$UPLOADS_PID"
	cat "$LOGS/uploads.log"
	[ "$(cat "$LOGS/uploads.rc" 2>/dev/null)" = 0 ]
}
if ! skipped uploads; then
	step uploads uploads_wait
fi

[ "${REL_KEEP:-0}" = 1 ] && echo "logs kept in $LOGS" || rm -rf "$LOGS"
[ -n "$failed" ] && echo "failed steps:$failed"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
