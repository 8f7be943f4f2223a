#!/bin/sh
# Library benchmark: search across a library of 1,000 traces and search
# inside a trace of about 10 million slices, against the same answers
# computed without the server's indexes, in the same run.
#
#   sh bench/library/run.sh      (from anywhere; B=build/rel by default)
#
# What is divided by what:
#  - across: GET /api/search?q=TEXT latency (HTTP on loopback included),
#    answered from the catalog's name index, next to base-across: opening
#    each of the 1,000 trace databases and computing the same figures
#    (count, total, exact p50/p95, max) from its slices. speedup =
#    base-across p50 / across p50.
#  - inside: the first page (1,000 slices in time order) of
#    GET /api/traces/ID/search?q=TEXT, read through the name_index table
#    index, next to base-inside: the same page by a scan of the slices
#    table. speedup = base-inside p50 / inside p50.
#  - trend: GET /api/trends of one name over the 1,000 traces (the
#    catalog's index alone).
#  - many: POST /api/query (one statement on each of the 1,000 traces, a
#    worker per core) next to base-many: the same statement on each trace
#    database opened one after another in one process. speedup =
#    base-many p50 / many p50.
#  - notes: GET /api/traces/1/notes, each right after a note was saved.
# Targets: across p95 <= 100 ms over 1,000 traces; inside p95 <= 50 ms on
# the 10M-slice trace; trend p95 <= 100 ms; many <= 2 s; notes <= 10 ms.
#
# Environment: B, OUT (default build/bench-library), TRACES (default
# 1000), EVENTS (events of the big trace, default 18000000: about 10.1 M
# slices; the file is shared with bench/query when present), SAMPLES
# (default 20).
set -eu
cd "$(dirname "$0")/../.."
B=${B:-build/rel}
OUT=${OUT:-build/bench-library}
TRACES=${TRACES:-1000}
EVENTS=${EVENTS:-18000000}
SAMPLES=${SAMPLES:-20}

mkdir -p "$OUT/small"
OUT=$(cd "$OUT" && pwd)
. bench/lib.sh

make -s "$B/trace-server" "$B/gen_fxt"
cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -o "$OUT/library_bench" bench/library/library_bench.c \
	$(pkg-config --cflags --libs sqlite3) -lm
server_binary "$B" "$OUT"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the library: TRACES small traces, each with its own seed ------------------
t0=$(now)
i=1
while [ "$i" -le "$TRACES" ]; do
	f="$OUT/small/t$i.fxt"
	[ -s "$f" ] || "$B/gen_fxt" --events 4000 --threads 4 --seed "$i" "$f" >/dev/null
	i=$((i + 1))
done
echo "generated $TRACES traces of 4000 events in $(since "$t0") s"

SPID=""
cleanup() {
	[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$OUT/data"
}
trap cleanup EXIT INT TERM
server_start "$OUT"
URL="http://127.0.0.1:$PORT"

t0=$(now)
i=1
while [ "$i" -le "$TRACES" ]; do
	curl -sS -f -o /dev/null --data-binary "@$OUT/small/t$i.fxt" "$URL/api/traces?name=t$i&label=build=$i"
	i=$((i + 1))
done
while :; do
	ready=$(curl -sS "$URL/api/traces?status=ready&limit=1" | sed -n 's/.*"total":\([0-9]*\).*/\1/p')
	[ "$ready" -ge "$TRACES" ] && break
	sleep 0.5
done
echo "uploaded and ingested $TRACES traces in $(since "$t0") s"

echo
echo "== search across $TRACES traces"
for q in Frame load e nosuchname; do
	"$OUT/library_bench" across --port "$PORT" --q "$q" --samples "$SAMPLES" | tee -a "$OUT/across.txt"
done
for q in Frame load; do
	"$OUT/library_bench" base-across --data "$OUT/data" --q "$q" --samples 3 | tee -a "$OUT/across.txt"
done

# ---- the team's memory: trends, one query over the library, notes ---------------
echo
echo "== the team's memory over $TRACES traces"
"$OUT/library_bench" trend --port "$PORT" --q Frame --samples "$SAMPLES" | tee -a "$OUT/memory.txt"
MSQL="SELECT count(*), sum(dur) FROM slice_view WHERE name = 'Frame'"
"$OUT/library_bench" many --port "$PORT" --q "$MSQL" --samples 5 | tee -a "$OUT/memory.txt"
"$OUT/library_bench" base-many --data "$OUT/data" --q "$MSQL" --samples 3 | tee -a "$OUT/memory.txt"
"$OUT/library_bench" notes --port "$PORT" --trace 1 --samples "$SAMPLES" | tee -a "$OUT/memory.txt"

# ---- the big trace ---------------------------------------------------------------
BIG=build/bench-query/trace-$EVENTS.fxt
if [ ! -s "$BIG" ]; then
	BIG="$OUT/trace-$EVENTS.fxt"
	[ -s "$BIG" ] || "$B/gen_fxt" --events "$EVENTS" --threads 8 --seed 1 "$BIG" >/dev/null
fi
t0=$(now)
curl -sS -f -o "$OUT/big.json" --data-binary "@$BIG" "$URL/api/traces?wait=1&name=big"
ID=$(sed -n 's/^{"id":\([0-9]*\),.*/\1/p' "$OUT/big.json")
echo
echo "big trace ingested in $(since "$t0") s: $(grep -o '"slices":[0-9]*' "$OUT/big.json")"
echo "== search inside the big trace (first page of 1000)"
for q in Frame e Wait nosuchname; do
	"$OUT/library_bench" inside --port "$PORT" --trace "$ID" --q "$q" --samples "$SAMPLES" | tee -a "$OUT/inside.txt"
done
for q in Frame e; do
	"$OUT/library_bench" base-inside --db "$OUT/data/traces/$ID/trace.db" --q "$q" --samples 3 | tee -a "$OUT/inside.txt"
done

echo
P95A=$(awk '/^across/ { split($5, a, "="); if (a[2] + 0 > m) m = a[2] + 0 } END { print m }' "$OUT/across.txt")
P95I=$(awk '/^inside/ { split($5, a, "="); if (a[2] + 0 > m) m = a[2] + 0 } END { print m }' "$OUT/inside.txt")
A50=$(awk '/^across/ && $2 == "q=Frame" { split($4, a, "="); print a[2] }' "$OUT/across.txt" | tail -1)
BA50=$(awk '/^base-across/ && $2 == "q=Frame" { split($4, a, "="); print a[2] }' "$OUT/across.txt" | tail -1)
I50=$(awk '/^inside/ && $2 == "q=Frame" { split($4, a, "="); print a[2] }' "$OUT/inside.txt" | tail -1)
BI50=$(awk '/^base-inside/ && $2 == "q=Frame" { split($4, a, "="); print a[2] }' "$OUT/inside.txt" | tail -1)
echo "search across $TRACES traces: worst p95 $P95A ms (target <= 100 ms); q=Frame $A50 ms vs $BA50 ms opening every trace: $(awk -v a="$A50" -v b="$BA50" 'BEGIN { printf "%.0f", b / a }')x"
echo "search inside the big trace: worst p95 $P95I ms (target <= 50 ms); q=Frame $I50 ms vs $BI50 ms by a scan: $(awk -v a="$I50" -v b="$BI50" 'BEGIN { printf "%.0f", b / a }')x"
T95=$(awk '/^trend/ { split($5, a, "="); print a[2] }' "$OUT/memory.txt")
M50=$(awk '/^many/ { split($4, a, "="); print a[2] }' "$OUT/memory.txt")
BM50=$(awk '/^base-many/ { split($4, a, "="); print a[2] }' "$OUT/memory.txt")
N95=$(awk '/^notes/ { split($5, a, "="); print a[2] }' "$OUT/memory.txt")
echo "trend of one name across $TRACES traces: p95 $T95 ms (target <= 100 ms)"
echo "one query over $TRACES traces: p50 $M50 ms (target <= 2000 ms) vs $BM50 ms opening each one after another: $(awk -v a="$M50" -v b="$BM50" 'BEGIN { printf "%.2f", b / a }')x"
echo "a trace's notes: p95 $N95 ms (target <= 10 ms), each request made right after a note was saved and holding it"
rm -f "$OUT/across.txt" "$OUT/inside.txt" "$OUT/memory.txt"
