#!/bin/sh
# Scale benchmark (issue 25's targets): servers on a shared PostgreSQL
# catalog and S3 store (s3rver) against the embedded mode, on loopback.
# Not part of CI: `make bench-scale` prints the figures.
#
#   sh bench/scale/run.sh          (from anywhere; B=build/rel by default)
#
# The figures, and what each divides by what:
#   viewport p99      bench/query/query_bench --against: /slices viewport
#                     requests (every zoom, a 1500-pixel resolution, SAMPLES
#                     each) on one trace, each sent to an embedded server
#                     (--data alone) and to a server on PG+S3 that has the
#                     same file's trace cached, one right after the other
#                     (the order alternating), so that other work on the
#                     machine falls on both alike. Per zoom: p99 shared / p99
#                     embedded over the same positions, and the median over
#                     the pairs of (shared - embedded) in us, the cost the
#                     shared path adds to a request whatever the noise. The
#                     figures (target <= 1.10): the sum of the zooms' p99s,
#                     shared / embedded, and the worst zoom's ratio (at
#                     sub-millisecond p99s a few scheduling delays move it
#                     either way). ROUNDS such runs: each printed, the
#                     medians of both over the runs, and per zoom the median
#                     of the runs' ratios, the largest of those held to the
#                     target too.
#   first read        seconds from sending GET /api/traces/ID/tracks to its
#                     reply, through a server whose cache lacks the trace: it
#                     downloads the trace's database (trace-<token>.db, about 100 MB, its size printed) from
#                     the store, opens it and answers. Median of RUNS, each
#                     with the cache emptied (target <= 2 s). The MB/s printed
#                     is trace.db's size / that median.
#   search            ms per GET /api/search?q=Q (curl's time_total), over
#                     NTRACES traces in the catalog (the same small archive
#                     uploaded NTRACES times, so every trace holds the names):
#                     p50 and max of SEARCHES requests, through the PG+S3
#                     server and through the embedded one (SQLite); target
#                     <= 100 ms.
#
# Environment: B, OUT (default build/bench-scale), EVENTS (the big trace,
# default 2300000: a trace.db of about 100 MB), SAMPLES (default 200), ROUNDS (default 3),
# RUNS (default 3), NTRACES (default 1000), SEARCHES (default 20), Q
# (default "frame"). Needs PostgreSQL (tests/catalog/pg.sh) and node with
# the npm packages (make deps-e2e).
set -eu
cd "$(dirname "$0")/../.."
B=${B:-build/rel}
OUT=${OUT:-build/bench-scale}
EVENTS=${EVENTS:-2300000}
SAMPLES=${SAMPLES:-200}
RUNS=${RUNS:-3}
ROUNDS=${ROUNDS:-3}
NTRACES=${NTRACES:-1000}
SEARCHES=${SEARCHES:-20}
Q=${Q:-frame}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
. bench/lib.sh

make -s "$B/trace-server" "$B/gen_fxt"
cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wshadow -Wcast-qual -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla -Werror $(pkg-config --cflags libcjson) \
	-o "$OUT/query_bench" bench/query/query_bench.c $(pkg-config --libs libcjson) -lm
server_binary "$B" "$OUT"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the stores ------------------------------------------------------------------
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	sh tests/catalog/pg.sh kill "$OUT/pg" >/dev/null 2>&1 || true
	rm -rf "$OUT/s3rver" "$OUT"/srv-* "$OUT/emb"
}
trap cleanup EXIT INT TERM
rm -rf "$OUT/pg" "$OUT/s3rver" "$OUT"/srv-* "$OUT/emb"
chmod 711 "$OUT"
sh tests/catalog/pg.sh start "$OUT/pg"
PGURL=$(cat "$OUT/pg/url")
mkdir -p "$OUT/s3rver"
node tests/store/s3rver.mjs "$OUT/s3rver" traces 0 >"$OUT/s3rver.out" 2>"$OUT/s3rver.log" &
PIDS="$PIDS $!"
S3PORT=""
for _ in $(seq 100); do
	S3PORT=$(sed -n 's/^port //p' "$OUT/s3rver.out")
	[ -n "$S3PORT" ] && break
	sleep 0.1
done
[ -n "$S3PORT" ] || { echo "s3rver did not start; see $OUT/s3rver.log"; exit 1; }
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
STORE="s3://traces/bench?endpoint=http://127.0.0.1:$S3PORT&region=us-east-1"

shared() { # NAME: a server on the shared catalog and store
	d="$OUT/$1"
	mkdir -p "$d"
	rm -rf "$d/data"
	"$OUT/trace-server" serve --port 0 --data "$d/data" --catalog "$PGURL" --store "$STORE" \
		--cache-dir "$d/cache" >"$d/server.out" 2>"$d/server.log" &
	PIDS="$PIDS $!"
	eval "PID_$1=$!"
	PORT=""
	for _ in $(seq 200); do
		PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$d/server.out")
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { echo "server $1 did not start; see $d/server.log"; exit 1; }
}

embedded() {
	d="$OUT/emb"
	rm -rf "$d"
	mkdir -p "$d"
	"$OUT/trace-server" serve --port 0 --data "$d/data" >"$d/server.out" 2>"$d/server.log" &
	PIDS="$PIDS $!"
	PORT=""
	for _ in $(seq 200); do
		PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$d/server.out")
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { echo "the embedded server did not start; see $d/server.log"; exit 1; }
}

upload() { # PORT FILE NAME: uploads and waits; prints the id
	curl -sS -f -H 'Content-Type: application/octet-stream' --data-binary "@$2" \
		"http://127.0.0.1:$1/api/traces?wait=1&name=$3" >"$OUT/up.json"
	grep -q '"status":"ready"' "$OUT/up.json" || { echo "ingest failed: $(head -c 300 "$OUT/up.json")" >&2; exit 1; }
	sed -n 's/^{"id":\([0-9]*\),.*/\1/p' "$OUT/up.json"
}

# ---- the trace -------------------------------------------------------------------
TRACE="$OUT/trace-$EVENTS.fxt"
if [ ! -s "$TRACE" ]; then
	"$B/gen_fxt" --events "$EVENTS" --threads 8 --seed 1 "$TRACE.tmp" >/dev/null
	mv "$TRACE.tmp" "$TRACE"
fi
SMALL="$OUT/small.fxt"
[ -s "$SMALL" ] || "$B/gen_fxt" --events 400 --threads 2 --seed 3 "$SMALL" >/dev/null

embedded
EPORT=$PORT
shared a
APORT=$PORT
t0=$(now)
EID=$(upload "$EPORT" "$TRACE" big)
echo "embedded: ingested $(du -m "$TRACE" | cut -f1) MB in $(since "$t0") s"
t0=$(now)
AID=$(upload "$APORT" "$TRACE" big)
echo "shared:   ingested and stored in $(since "$t0") s"

# ---- viewport p99 ------------------------------------------------------------------
echo
echo "== viewport p99 (ms): embedded (port) and shared, PG+S3 with the trace cached (against),"
echo "   $SAMPLES request pairs per zoom, $ROUNDS runs"
: >"$OUT/worst.txt"
: >"$OUT/sum.txt"
for r in $(seq "$ROUNDS"); do
	"$OUT/query_bench" --port "$EPORT" --trace "$EID" --against "$APORT" --against-trace "$AID" \
		--samples "$SAMPLES" --seed "$r" >"$OUT/pair.$r.txt"
	sed -n '/requests per row/,$p' "$OUT/pair.$r.txt"
	sed -n 's/^worst p99 ratio.*: //p' "$OUT/pair.$r.txt" >>"$OUT/worst.txt"
	sed -n 's/^sum of the p99s.*: //p' "$OUT/pair.$r.txt" >>"$OUT/sum.txt"
done
median() { # FILE WHAT
	sort -n "$1" | awk -v runs="$(tr '\n' ' ' <"$1")" -v what="$2" '{ v[NR] = $1 }
		END { m = v[int((NR + 1) / 2)]; printf "%s, median of the runs (%s): %.2f (target <= 1.10): %s\n",
			what, runs, m, m <= 1.10 ? "met" : "MISSED" }'
}
median "$OUT/sum.txt" "sum of the zooms' p99s, shared / embedded"
median "$OUT/worst.txt" "worst zoom's p99 ratio"
# per zoom, the median of the runs' p99 ratios (a window is two words,
# "6.44 s"; the ratio is the 7th field), and the largest of those
for r in $(seq "$ROUNDS"); do
	awk '/^[0-9.]+ (s|ms|us|ns) / { print $1 $2, $7 }' "$OUT/pair.$r.txt"
done | awk '
	{ if (!($1 in v)) order[++nz] = $1; v[$1] = v[$1] " " $2 }
	END { printf "per zoom, the median of the runs'"'"' p99 ratios:"
		for (z = 1; z <= nz; z++) { k = split(substr(v[order[z]], 2), a, " ");
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			m = a[int((k + 1) / 2)]; if (m > worst) worst = m; printf " %s %.2f", order[z], m }
		printf "\nthe largest of them: %.2f (target <= 1.10): %s\n", worst, worst <= 1.10 ? "met" : "MISSED" }'

# ---- first read from the store --------------------------------------------------------
echo
echo "== first read of an uncached trace.db from the store"
: >"$OUT/first.txt"
for i in $(seq "$RUNS"); do
	# a new server with an empty cache each time (the reply cache too)
	[ -z "${PID_b:-}" ] || { kill "$PID_b"; wait "$PID_b" 2>/dev/null || true; }
	rm -rf "$OUT/b/cache"
	shared b
	BPORT=$PORT
	curl -sS -f -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$BPORT/api/traces/$AID/tracks" >>"$OUT/first.txt"
	# the database the record names: trace-<token>.db with shared ingest jobs
	SIZE=$(stat -c %s "$(ls "$OUT/b/cache/traces/$AID/"*.db | head -1)")
done
AGAIN=$(curl -sS -o /dev/null -w '%{time_total}' "http://127.0.0.1:$BPORT/api/traces/$AID/tracks")
MED=$(sort -n "$OUT/first.txt" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
awk -v m="$MED" -v s="$SIZE" -v a="$AGAIN" -v runs="$(tr '\n' ' ' <"$OUT/first.txt")" 'BEGIN {
	printf "trace.db %.1f MB: first read %.2f s (median; runs: %s), %.0f MB/s; once cached %.1f ms\n",
		s / 1e6, m, runs, s / 1e6 / m, a * 1000
	printf "target <= 2 s: %s\n", m <= 2 ? "met" : "MISSED" }'

# ---- search over NTRACES traces ----------------------------------------------------------
echo
echo "== search over $NTRACES traces"
t0=$(now)
for port in "$APORT" "$EPORT"; do
	# one curl, one keep-alive connection: ingest runs behind, in order
	curl -sS -f -o /dev/null -H 'Content-Type: application/octet-stream' --data-binary "@$SMALL" \
		"http://127.0.0.1:$port/api/traces?name=s[1-$NTRACES]"
	upload "$port" "$SMALL" last >/dev/null
	curl -sS -f "http://127.0.0.1:$port/api/traces?limit=1" | grep -q "\"total\":$((NTRACES + 2))" ||
		{ echo "the library on port $port does not hold $((NTRACES + 2)) traces"; exit 1; }
done
echo "uploaded $NTRACES small traces to each in $(since "$t0") s"
search() { # PORT: p50 and max in ms
	for i in $(seq "$SEARCHES"); do
		curl -sS -f -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$1/api/search?q=$Q"
	done | sort -n | awk '{ v[NR] = $1 * 1000 } END { printf "p50 %.1f ms, max %.1f ms", v[int((NR + 1) / 2)], v[NR] }'
}
echo
printf 'PostgreSQL: %s\n' "$(search "$APORT")"
printf 'SQLite:     %s\n' "$(search "$EPORT")"
echo "target: <= 100 ms in PostgreSQL"
