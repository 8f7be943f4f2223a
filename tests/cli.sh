#!/bin/sh
# tests/cli.sh: the command line of trace-server, as a user meets it.
#
#   B=build/rel sh tests/cli.sh        (what `make unit` runs)
#
# Uses $B/trace-server and $B/gen_fxt on files in a temporary directory:
# a generated trace ingests (exit 0, a summary with the event count) and
# `info` prints its record counts; a big-endian and a truncated trace still
# ingest; a text file, an empty file and a missing file each fail with a
# clear message and leave no database behind; serve refuses object store
# options it cannot use (no keys, no endpoint, a cache without a store);
# the source compression's child process answers. Prints one line per check and
# "N passed, M failed" last; exits 1 when a check failed.

set -u

B=${B:-build/rel}
SERVER=$B/trace-server
GEN=$B/gen_fxt
pass=0
fail=0

for tool in "$SERVER" "$GEN"; do
	if [ ! -x "$tool" ]; then
		echo "tests/cli.sh: $tool is missing; build it first (make unit)" >&2
		echo "0 passed, 1 failed"
		exit 1
	fi
done

T=$(mktemp -d "${TMPDIR:-/tmp}/cli-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

ok() {
	pass=$((pass + 1))
	echo "ok   $1"
}

not_ok() {
	fail=$((fail + 1))
	echo "FAIL $1"
	if [ -s "$T/out" ] || [ -s "$T/err" ]; then
		sed 's/^/     stdout: /' "$T/out"
		sed 's/^/     stderr: /' "$T/err"
	fi
}

# run CMD...: runs CMD with stdout in $T/out, stderr in $T/err; sets RC.
run() {
	"$@" >"$T/out" 2>"$T/err"
	RC=$?
}

# check DESCRIPTION TEST...: one check; TEST is a command that succeeds.
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

has_out() { grep -Eq "$1" "$T/out"; }
has_err() { grep -Eiq "$1" "$T/err"; }
no_db() { [ ! -e "$1" ] && [ ! -e "$1.tmp" ]; }

# ---- a generated trace ------------------------------------------------------

"$GEN" --events 3000 --threads 6 --seed 7 "$T/gen.fxt" >/dev/null
"$GEN" --events 500 --threads 3 --seed 8 --big-endian "$T/be.fxt" >/dev/null

run "$SERVER" ingest "$T/gen.fxt" -o "$T/gen.db"
check "ingest of a generated trace exits 0" [ "$RC" -eq 0 ]
check "ingest prints a summary line 'ingested fxt'" has_out '^ingested fxt '
# gen_fxt writes exactly 3000 event records; wakeups add instants of their own
events=$(awk '$1 == "events" && $2 ~ /^[0-9]+$/ { print $2; exit }' "$T/out")
check "the summary counts the events (>= 3000): ${events:-none}" [ "${events:-0}" -ge 3000 ]
check "the summary gives the seconds of each phase" \
	has_out '^  seconds +decoding [0-9.]+ matching [0-9.]+ writing [0-9.]+ indexing [0-9.]+$'
check "ingest writes the database" [ -s "$T/gen.db" ]
check "ingest leaves no temporary file" [ ! -e "$T/gen.db.tmp" ]

run "$SERVER" ingest "$T/gen.fxt"
check "ingest without -o exits 0" [ "$RC" -eq 0 ]
check "ingest without -o writes FILE.db" [ -s "$T/gen.fxt.db" ]

run "$SERVER" info "$T/gen.fxt"
check "info of a generated trace exits 0" [ "$RC" -eq 0 ]
check "info prints the event records: 3000" has_out '^ *record +event +3000$'
check "info prints the string and thread records" has_out '^ *record +string +[0-9]+$'
check "info names the byte order" has_out '^format +fxt \(little-endian\)'

run "$SERVER" info "$T/be.fxt"
check "info reads a big-endian trace" has_out '^format +fxt \(big-endian\)'
run "$SERVER" ingest "$T/be.fxt" -o "$T/be.db"
check "ingest of a big-endian trace exits 0" [ "$RC" -eq 0 ]

# a trace cut inside a record keeps what came before
size=$(wc -c <"$T/gen.fxt")
head -c $((size / 2 + 3)) "$T/gen.fxt" >"$T/cut.fxt"
run "$SERVER" ingest "$T/cut.fxt" -o "$T/cut.db"
check "ingest of a truncated trace exits 0" [ "$RC" -eq 0 ]
check "the summary reports the truncated bytes" has_out 'diagnostic truncated_bytes: [1-9]'

# ---- inputs that are not traces ---------------------------------------------

printf 'hello, this is not a trace\nat all\n' >"$T/text.txt"
run "$SERVER" ingest "$T/text.txt" -o "$T/text.db"
check "ingest of a text file exits non-zero" [ "$RC" -ne 0 ]
check "the message says 'not a trace'" has_err 'not a trace'
check "no database is left behind" no_db "$T/text.db"
run "$SERVER" ingest "$T/text.txt"
check "nor under the default name" no_db "$T/text.txt.db"
run "$SERVER" info "$T/text.txt"
check "info of a text file fails: not a trace" has_err 'not a trace'

: >"$T/empty.fxt"
run "$SERVER" ingest "$T/empty.fxt" -o "$T/empty.db"
check "ingest of an empty file exits non-zero" [ "$RC" -ne 0 ]
check "the message says the file is empty" has_err 'empty'
check "no database is left for the empty file" no_db "$T/empty.db"

run "$SERVER" ingest "$T/missing.fxt" -o "$T/missing.db"
check "ingest of a missing file exits non-zero" [ "$RC" -ne 0 ]
check "the message names the file and the reason" has_err 'missing\.fxt.*(no such file|cannot open)'
check "no database is left for the missing file" no_db "$T/missing.db"

# ---- serve's options for an object store (a server never starts here) ------

run "$SERVER" serve --port 0 --data "$T/d1" --cache-max 1G
check "--cache-max without --store: exit 2" [ "$RC" -eq 2 ]
check "the message says it needs --store" has_err 'needs --store'
run "$SERVER" serve --port 0 --data "$T/d2" --store 'http://bucket'
check "--store takes only s3:// URLs: exit 2" [ "$RC" -eq 2 ]
run env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$SERVER" serve --port 0 --data "$T/d3" \
	--store 's3://traces?endpoint=http://127.0.0.1:9'
check "--store without keys in the environment: exit 1" [ "$RC" -eq 1 ]
check "the message names the variables" has_err 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY'
run env AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s "$SERVER" serve --port 0 --data "$T/d4" \
	--store 's3://traces'
check "--store without an endpoint: exit 1" [ "$RC" -eq 1 ]
check "the message shows the URL's form" has_err 'endpoint=http://host:port'

mkdir -p "$T/d5/traces/1" && : >"$T/d5/traces/1/source"
run env AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s "$SERVER" serve --port 0 --data "$T/d5" \
	--store 's3://traces?endpoint=http://127.0.0.1:9'
check "--store on a directory library: exit 1" [ "$RC" -eq 1 ]
check "its files are left as they were" [ -e "$T/d5/traces/1/source" ]
check "the message says why" has_err 'holds the traces of a library kept in the directory'

run "$SERVER" serve --help
check "serve --help exits 0" [ "$RC" -eq 0 ]
# docs/API.md: --live-window "is accepted and changes nothing"; --preview-min
# is where an upload starts to grow while it is ingested
check "serve --help says --live-window is accepted and ignored" \
	grep -q 'live-window SIZE accepted and ignored' "$T/out" "$T/err"
check "serve --help says a big upload grows in place (--preview-min, 64M)" \
	grep -q 'grows in place while it is ingested' "$T/out" "$T/err"
run "$SERVER" serve --live-window 1K --data "$T/lw"
check "--live-window below 4K is still refused: exit 2" [ "$RC" -eq 2 ]
check "the message names it" has_err "bad --live-window"


# the server compresses a ready trace's source in a process of its own
# (catalog/source.c): "source-child FROM SPOOL" answers on stdout
: >"$T/spool.zst"
run "$SERVER" source-child "$T/gen.fxt" "$T/spool.zst"
gen_bytes=$(wc -c <"$T/gen.fxt" | tr -d ' ')
zst_bytes=$(wc -c <"$T/spool.zst" | tr -d ' ')
check "source-child exits 0" [ "$RC" -eq 0 ]
check "source-child says 'ok' with both sizes" has_out "^ok $gen_bytes $zst_bytes\$"
check "source-child wrote a smaller zstd frame ($zst_bytes of $gen_bytes bytes)" \
	[ "$zst_bytes" -gt 0 ] && [ "$zst_bytes" -lt "$gen_bytes" ] && [ "$(od -An -tx1 -N4 "$T/spool.zst" | tr -d ' ')" = 28b52ffd ]
run "$SERVER" source-child "$T/missing.fxt" "$T/spool.zst"
check "source-child of a missing file exits 1" [ "$RC" -eq 1 ]
check "... and says why on stdout" has_out '^error .*missing.fxt: No such file or directory$'

# ... and warms a ready trace's pages in another (catalog/warm.c)
run "$SERVER" warm-child first "$T/gen.db" 0 1000000000
check "warm-child first exits 0" [ "$RC" -eq 0 ]
run "$SERVER" warm-child lod "$T/gen.db"
check "warm-child lod exits 0" [ "$RC" -eq 0 ]
run "$SERVER" warm-child lod
check "warm-child without its database: usage, exit 2" [ "$RC" -eq 2 ] && has_err 'usage: trace-server warm-child'

run "$SERVER"
check "no arguments: usage on stderr, exit 2" [ "$RC" -eq 2 ]
check "the usage names the ingest command" has_err 'trace-server ingest FILE'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
