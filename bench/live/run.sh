#!/bin/sh
# Live benchmark: a generated archive streamed into POST /api/traces?live=1
# at RATE MB/s for SECONDS while a watcher follows what is visible and a
# viewer asks for viewports (bench/live/live_bench.c says what each figure
# divides by what).
#
#   sh bench/live/run.sh         (from anywhere; B=build/rel by default)
#
# Environment: B (build dir), OUT (work dir, default build/bench-live), VIEWER
# (0: no viewport requests, the ingest's visibility alone),
# RATE (MB/s, default 40), SECONDS (default 120), EVENTS (generator events
# of the archive streamed, looped when the run outlasts it; by default as
# many as the run streams, about 44,000 a MB, so that it does not loop: a
# loop starts its times again, which a growing trace meets as late events
# and answers by ingesting it again from its first byte, docs/API.md).
# The archive ends with its threads' root begins at time 0 (tests/gen_fxt.c),
# late too: the trace is ingested again once the stream ends, after what
# is measured.
set -eu
cd "$(dirname "$0")/../.."
B=${B:-build/rel}
OUT=${OUT:-build/bench-live}
RATE=${RATE:-40}
SECONDS_=${SECONDS:-120}
EVENTS=${EVENTS:-$((RATE * SECONDS_ * 44000))}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
. bench/lib.sh

make -s "$B/trace-server" "$B/gen_fxt"
cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $(pkg-config --cflags libcjson) \
	-o "$OUT/live_bench" bench/live/live_bench.c $(pkg-config --libs libcjson) -lpthread -lm
server_binary "$B" "$OUT"
[ -f "$OUT/archive-$EVENTS.fxt" ] || "$B/gen_fxt" --events "$EVENTS" --threads 8 "$OUT/archive-$EVENTS.fxt" >/dev/null
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "archive: $(du -m "$OUT/archive-$EVENTS.fxt" | cut -f1) MB ($EVENTS events), streamed at $RATE MB/s for $SECONDS_ s"
server_start "$OUT" --max-upload 1024G # a stream of 10 minutes at 40 MB/s is 24 GB
trap 'kill $SPID 2>/dev/null' EXIT
"$OUT/live_bench" "$SPID" "$PORT" "$OUT/archive-$EVENTS.fxt" "$RATE" "$SECONDS_"
