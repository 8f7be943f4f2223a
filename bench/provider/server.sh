#!/bin/sh
# bench-provider against the real server: trace-server serve on a free
# loopback port, a streaming capture with category "bench" on (16 MB of
# buffer), and bench_provider --external as its provider; then the
# provider's stats as the server counted them. Run from the repository root
# by `make bench-provider` (B is the build directory).
set -e
B=${B:-build/rel}
. bench/lib.sh
OUT=$(mktemp -d /tmp/bench-provider-XXXXXX)
trap 'kill $SPID 2>/dev/null; rm -rf "$OUT"' EXIT
server_binary "$B" "$OUT"
server_start "$OUT"
URL=http://127.0.0.1:$PORT
ID=$(curl -sf -X POST -d '{"name": "bench-provider", "categories": ["bench"], "buffering_mode": "streaming",
	"buffer_size_megabytes_hint": 16}' "$URL/api/captures" | jq -r .id)
curl -sf -X POST -d '{}' "$URL/api/captures/$ID/start" >/dev/null
TRACE_SERVER=$URL TRACE_PROVIDER_NAME=bench "$B/bench_provider" --external
curl -sf -X POST -d '{"write_results": true}' "$URL/api/captures/$ID/stop" |
	jq -r '.provider_stats[] | "the server counted: \(.records_dropped) records dropped (\(.records_dropped_by_server) by the server), \(.non_durable_bytes_written / 1e6 | floor) MB written, \(.buffer_wrapped_count) buffer switches"'
curl -sf -X DELETE "$URL/api/captures/$ID" >/dev/null
