#!/bin/sh
# Query benchmark: /slices latency at every zoom level on a trace of about
# 10 million slices, then requests/s of one typical /slices request under
# wrk next to nginx serving a file of the same bytes, in the same run.
#
#   sh bench/query/run.sh            (from anywhere; B=build/rel by default)
#
# Environment: B (build dir), OUT (work dir, default build/bench-query),
# EVENTS (generator events, default 18000000: about 10.1 M slices),
# SAMPLES (requests per zoom level and mode, default 200), ROUNDS (wrk
# rounds of each server, alternating, default 2), DURATION (wrk seconds,
# default 10), CONNS (wrk connections, default 32).
#
# Targets printed next to the figures: p99 <= 20 ms at every zoom with a
# resolution (query_bench), and API requests/s >= 0.5 x nginx.
# Installs wrk and nginx (Debian packages) when missing.
set -eu
cd "$(dirname "$0")/../.."
B=${B:-build/rel}
OUT=${OUT:-build/bench-query}
EVENTS=${EVENTS:-18000000}
SAMPLES=${SAMPLES:-200}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10}
CONNS=${CONNS:-32}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

. bench/lib.sh

# ---- tools ------------------------------------------------------------------
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
[ -x "$NGINX" ] || missing="$missing nginx"
if [ -n "$missing" ]; then
	echo "installing:$missing"
	SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
	# keep the package from starting a system nginx on port 80
	policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
		$SUDO chmod 755 /usr/sbin/policy-rc.d
		policy=1
	fi
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
	[ -z "$policy" ] || $SUDO rm -f /usr/sbin/policy-rc.d
	NGINX=$(command -v nginx || echo /usr/sbin/nginx)
fi

make -s "$B/trace-server" "$B/gen_fxt"
cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wshadow -Wcast-qual -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla -Werror $(pkg-config --cflags libcjson) \
	-o "$OUT/query_bench" bench/query/query_bench.c $(pkg-config --libs libcjson) -lm
server_binary "$B" "$OUT"

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2); $($NGINX -v 2>&1)"

# ---- the trace ----------------------------------------------------------------
TRACE="$OUT/trace-$EVENTS.fxt"
if [ ! -s "$TRACE" ]; then
	t0=$(now)
	"$B/gen_fxt" --events "$EVENTS" --threads 8 --seed 1 "$TRACE.tmp" >/dev/null
	mv "$TRACE.tmp" "$TRACE"
	echo "generated $TRACE ($(du -m "$TRACE" | cut -f1) MB) in $(since "$t0") s"
fi

# ---- the server -----------------------------------------------------------------
SPID=""
NPID=""
cleanup() {
	[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
	[ -z "$NPID" ] || kill "$NPID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$OUT/data" # the ingested trace (about 0.8 GB); the .fxt is kept for the next run
}
trap cleanup EXIT INT TERM

server_start "$OUT"

t0=$(now)
curl -sS -f -o "$OUT/trace.json" -H 'Content-Type: application/octet-stream' \
	--data-binary "@$TRACE" "http://127.0.0.1:$PORT/api/traces?wait=1&name=bench"
ID=$(sed -n 's/^{"id":\([0-9]*\),.*/\1/p' "$OUT/trace.json")
grep -q '"status":"ready"' "$OUT/trace.json" || { echo "ingest failed: $(cat "$OUT/trace.json")"; exit 1; }
echo "uploaded and ingested in $(since "$t0") s: $(grep -o '"slices":[0-9]*' "$OUT/trace.json")"

# ---- latency --------------------------------------------------------------------
echo
echo "== latency of /slices viewport requests"
"$OUT/query_bench" --port "$PORT" --trace "$ID" --samples "$SAMPLES" \
	--typical-out "$OUT/typical.json" | tee "$OUT/latency.txt"
TPATH=$(sed -n 's/^typical_path=//p' "$OUT/latency.txt")
TBYTES=$(sed -n 's/^typical_bytes=//p' "$OUT/latency.txt")

# ---- nginx beside it ---------------------------------------------------------------
NG="$OUT/nginx"
NPORT=$("$OUT/query_bench" --free-port)
rm -rf "$NG"
mkdir -p "$NG/www" "$NG/tmp"
cp "$OUT/typical.json" "$NG/www/slices.json"
chmod -R a+rX "$NG"
cat >"$NG/nginx.conf" <<EOF
daemon off;
worker_processes auto;
pid $NG/nginx.pid;
error_log $NG/error.log warn;
events { worker_connections 4096; }
http {
	types { application/json json; }
	access_log $NG/access.log;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	client_body_temp_path $NG/tmp/body;
	proxy_temp_path $NG/tmp/proxy;
	fastcgi_temp_path $NG/tmp/fastcgi;
	uwsgi_temp_path $NG/tmp/uwsgi;
	scgi_temp_path $NG/tmp/scgi;
	server {
		listen 127.0.0.1:$NPORT;
		root $NG/www;
	}
}
EOF
"$NGINX" -p "$NG" -c "$NG/nginx.conf" -e "$NG/error.log" &
NPID=$!
for _ in $(seq 100); do
	curl -s -o /dev/null "http://127.0.0.1:$NPORT/slices.json" && break
	sleep 0.05
done
NBYTES=$(curl -s "http://127.0.0.1:$NPORT/slices.json" | wc -c)
[ "$NBYTES" = "$TBYTES" ] || { echo "nginx serves $NBYTES bytes, the API $TBYTES"; exit 1; }

# ---- throughput ---------------------------------------------------------------------
# Requests/s of one wrk run; fails on any non-2xx reply or socket error.
rps() {
	wrk -t2 -c"$CONNS" -d"${DURATION}s" "$1" >"$OUT/wrk.txt" 2>&1
	if grep -q -E 'Non-2xx|Socket errors' "$OUT/wrk.txt"; then
		cat "$OUT/wrk.txt" >&2
		echo "errors under load" >&2
		exit 1
	fi
	sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$OUT/wrk.txt"
}

echo
echo "== throughput: wrk -t2 -c$CONNS -d${DURATION}s, $ROUNDS rounds alternating"
echo "   API   GET $TPATH ($TBYTES bytes)"
echo "   nginx GET /slices.json (the same bytes)"
api=""
ngx=""
for r in $(seq "$ROUNDS"); do
	a=$(rps "http://127.0.0.1:$PORT$TPATH")
	n=$(rps "http://127.0.0.1:$NPORT/slices.json")
	printf "   round %d: API %10.0f req/s   nginx %10.0f req/s\n" "$r" "$a" "$n"
	api="$api $a"
	ngx="$ngx $n"
done
echo "$api|$ngx" | awk -F'|' '{
	na = split($1, a, " "); nn = split($2, n, " ")
	for (i = 1; i <= na; i++) sa += a[i]
	for (i = 1; i <= nn; i++) sn += n[i]
	r = sa / sn
	printf "   mean:    API %10.0f req/s   nginx %10.0f req/s   ratio %.3f (target >= 0.5: %s)\n",
		sa / na, sn / nn, r, (r >= 0.5 ? "MET" : "MISSED")
}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
