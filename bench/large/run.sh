#!/bin/sh
# Large-archive benchmark (issue: size independence): a generated FXT
# archive of about 4 GB (EVENTS 160000000 over 64 threads) uploaded to the
# real server, then read as a viewer and a user would. Not in CI.
#
#   sh bench/large/run.sh        (from anywhere; B=build/rel by default)
#
# Environment: B (build dir), OUT (work dir, default build/bench-large: it
# holds the archive, kept for the next run, and the server's data, removed
# at the end: about 10 GB at the peak), EVENTS (160000000), SAMPLES
# (viewport requests per zoom level, default 50), ARCHIVE (an archive to
# use instead of generating one).
#
# Figures, each with what it divides by what:
#   upload      archive MB / seconds of `curl -T` to POST /api/traces (the
#               body streamed from disk)
#   readable    seconds from the upload's end to the first 200 of GET
#               .../tracks (the trace can be viewed, from its first byte:
#               it grows while it is ingested), target <= 2 s
#   growth      polled every 0.5 s while it grows, from 20% of the
#               archive read on: preview.visible_bytes (what the view
#               holds) / progress.bytes_done (what ingest has read), the
#               median and the least, target >= 0.9; and how many polls
#               found the view starting at byte 0 (preview.from_byte)
#   batch       seconds of `trace-server ingest` of the same archive in
#               one go, after the rest, and the server's ingest divided by
#               them, target <= 1: the same work on both sides, the
#               server's seconds being its log's "ingested in" less the
#               steps after the database is made that the CLI does not
#               take (storing, search index, first view; the log names
#               them). The batch writes one extent per group, the growing
#               ingest ids a chunk at a time (other ids, the same rows
#               otherwise), so the same again with `--extent-rows 4096`
#               ("same rows"): the growing ingest's seconds divided by
#               those of a batch that writes exactly its rows
#   phases      the growing ingest's seconds until it had read the whole
#               archive (the first poll whose progress.bytes_done is its
#               size, the upload included) and archive MB / those, beside
#               the batch's archive MB / its seconds; then the seconds from
#               there to ready (for gen_fxt's archives, whose late records
#               make it start again, the archive ingested again in one go)
#   ingest      archive MB / the server's own ingest seconds (its
#               /metrics trace_server_ingest_duration_seconds_sum), target
#               >= 50 MB/s; peak RSS of the server process (VmHWM) over
#               the whole run and of the ingest's own process (the
#               server logs it), target <= 1 GB; the server's RSS (VmRSS)
#               before the upload and once the trace is ready, target
#               within 10%; scratch disk: the file
#               system's most used bytes during ingest minus its used bytes
#               once ready (df, every second: ingest's scratch files are
#               unlinked at once, so no directory listing sees them; other
#               work on the machine shows in it too)
#   first view  seconds of the requests the viewer makes to open the trace
#               (trace object, tracks, the minimap's overview in the
#               viewer's aligned buckets, and /slices of the 20
#               first thread tracks over the whole trace at 1500 px), one
#               after another, target <= 1 s (the viewer sends them at once)
#   viewport    bench/query/query_bench at every zoom: p99, target <= 20 ms
#   search      GET .../search?q=... (a common name, a rare one, none):
#               seconds of the first request of each, as a user waits
#               for it (the trace just ingested, its pages on the disk), and
#               of a second asking another page size (not a reply the
#               server's reply cache kept), target <= 50 ms
#   area, flame GET .../area and .../flame over the whole trace on the 20
#               first thread tracks: seconds of the first request of
#               each (the second would be the reply cache's), target <= 1 s;
#               the flame graph twice: with the default limit (10000 nodes
#               built) and as the viewer asks it (limit 1000000, so that
#               a graph is cut only past a million nodes)
#   writes      bytes the server had written to storage during the upload
#               (the archive it keeps) and after it, until ready (the
#               database, scratch pages written back): /proc/PID/io
#               write_bytes less cancelled_write_bytes; and the seconds the
#               disk needs for the latter at the baseline's rate, i.e. the
#               ingest rate this disk allows
# Baselines measured in the same run: `cat ARCHIVE > /dev/null` (reading
# the archive once, MB/s) and writing 2 GiB with `dd conv=fdatasync` (MB/s),
# so that upload and ingest rates can be read against what this machine's
# disk gives now.
set -eu
cd "$(dirname "$0")/../.."
B=${B:-build/rel}
OUT=${OUT:-build/bench-large}
EVENTS=${EVENTS:-160000000}
SAMPLES=${SAMPLES:-50}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
. bench/lib.sh

make -s "$B/trace-server" "$B/gen_fxt"
cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $(pkg-config --cflags libcjson) \
	-o "$OUT/query_bench" bench/query/query_bench.c $(pkg-config --libs libcjson) -lm
server_binary "$B" "$OUT"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

ARCHIVE=${ARCHIVE:-$OUT/large-$EVENTS.fxt}
if [ ! -s "$ARCHIVE" ]; then
	t0=$(now)
	"$B/gen_fxt" --events "$EVENTS" --threads 64 --seed 1 "$ARCHIVE.tmp" >/dev/null
	mv "$ARCHIVE.tmp" "$ARCHIVE"
	echo "generated $ARCHIVE in $(since "$t0") s"
fi
BYTES=$(stat -c %s "$ARCHIVE")
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.0f", b / 1e6 }')
echo "archive: $MB MB ($EVENTS events)"
t0=$(now)
cat "$ARCHIVE" >/dev/null
echo "baseline: reading the archive once: $(awk -v m="$MB" -v s="$(since "$t0")" 'BEGIN { printf "%.0f MB/s (%.1f s)", m / s, s }')"

SPID=""
MPID=""
cleanup() {
	[ -z "$MPID" ] || kill "$MPID" 2>/dev/null || true
	[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$OUT/data"
}
trap cleanup EXIT INT TERM
server_start "$OUT" --max-upload 64G
API="http://127.0.0.1:$PORT/api"

# the file system's used bytes, every second, while the run goes on
# the disk's write rate, measured now: ingest writes its database and
# scratch through it, so it bounds the ingest rate (below, "writes")
t0=$(now)
dd if=/dev/zero of="$OUT/dd.tmp" bs=1M count=2048 conv=fdatasync 2>/dev/null
WRATE=$(awk -v s="$(since "$t0")" 'BEGIN { printf "%.0f", 2048 * 1.048576 / s }')
rm -f "$OUT/dd.tmp"
echo "baseline: writing 2 GiB to the disk (fdatasync): $WRATE MB/s"
# bytes the server has had written to storage (less what was dropped unwritten)
written() { awk '/^write_bytes/ { w = $2 } /^cancelled_write_bytes/ { c = $2 } END { printf "%.0f\n", w - c }' "/proc/$SPID/io"; }
W0=$(written)
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SPID/status"; }
anon() { sed -n 's/^RssAnon:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SPID/status"; }
RSS0=$(rss)
ANON0=$(anon)
: >"$OUT/disk.txt"
(while :; do df -B1 --output=used "$OUT" | tail -1 >>"$OUT/disk.txt"; sleep 1; done) &
MPID=$!

t0=$(now)
curl -sS -f -o "$OUT/upload.json" -X POST -T "$ARCHIVE" -H 'Content-Type: application/octet-stream' \
	"$API/traces?name=large"
UP=$(since "$t0")
WUP=$(written)
ID=$(sed -n 's/^{"id":\([0-9]*\),.*/\1/p' "$OUT/upload.json")
[ -n "$ID" ] || { echo "upload failed: $(cat "$OUT/upload.json")"; exit 1; }
echo "upload:     $(awk -v m="$MB" -v s="$UP" 'BEGIN { printf "%.0f MB/s (%.1f s)", m / s, s }')"

t0=$(now)
while [ "$(curl -s -o /dev/null -w '%{http_code}' "$API/traces/$ID/tracks")" != 200 ]; do sleep 0.2; done
READABLE=$(since "$t0")
# while it grows (docs/API.md, "Uploads that grow while they are ingested"):
# every half second, what the view holds (preview.visible_bytes, from
# preview.from_byte) and what ingest has read (progress.bytes_done)
: >"$OUT/growth.txt"
while :; do
	curl -s "$API/traces/$ID" >"$OUT/poll.json"
	grep -q '"status":"\(ready\|failed\)"' "$OUT/poll.json" && break
	echo "$(since "$t0") $(sed -n 's/.*"bytes_done":\([0-9]*\).*/\1/p' "$OUT/poll.json") $(sed -n 's/.*"preview":{"visible_bytes":\([0-9]*\),"from_byte":\([0-9]*\)}.*/\1 \2/p' "$OUT/poll.json")" >>"$OUT/growth.txt"
	sleep 0.5
done
curl -s "$API/traces/$ID" >"$OUT/trace.json"
GROWN=$(since "$t0")
grep -q '"status":"ready"' "$OUT/trace.json" || { echo "ingest failed: $(cat "$OUT/trace.json")"; exit 1; }
kill "$MPID" 2>/dev/null || true
MPID=""
FINAL=$(df -B1 --output=used "$OUT" | tail -1)
PEAK=$(sort -n "$OUT/disk.txt" | tail -1)
ISECS=$(curl -s "http://127.0.0.1:$PORT/metrics" | sed -n 's/^trace_server_ingest_duration_seconds_sum //p')
W1=$(written)
# its source is compressed once it is ready (catalog/source.c): the data
# directory is measured after (the figures above are the ingest's)
for _ in $(seq 600); do
	grep -q "^trace-server: trace $ID's source kept compressed" "$OUT/server.log" && break
	sleep 1
done
DATA=$(du -sb "$OUT/data" | cut -f1)
HWM=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SPID/status")
sleep 2 # what the worker does once the trace is ready (warming its first view) is over
RSS1=$(rss)
ANON1=$(anon)
# the ingest ran in a process of its own (ingest/child.h), which the server
# logs with its peak
CHWM=$(sed -n 's/.*its process peaked at \([0-9]*\) MB.*/\1/p' "$OUT/server.log" | tail -1)
echo "readable:   $READABLE s after the upload ended, from its first byte (target <= 2 s)"
# from 20% of the archive read on: the share of what ingest had read that
# the view held (visible_bytes / bytes_done, each poll), and where it began
awk -v b="$BYTES" '$2 >= 0.2 * b && NF >= 4 { print $3 / $2, ($4 == 0) }' "$OUT/growth.txt" | sort -n |
	awk '{ n++; v[n] = $1; z += $2 }
	END { if (n == 0) { print "growth:     no poll past 20% of the archive while it grew"; exit }
	      printf "growth:     from 20%% read on (%d polls): the view held %.3f of what ingest had read at the median, %.3f at the least (target >= 0.9), from byte 0 in %d of %d\n", n, v[int((n + 1) / 2)], v[1], z, n }'
awk -v m="$MB" -v s="$ISECS" -v h="$HWM" -v c="${CHWM:-?}" -v r0="$RSS0" -v r1="$RSS1" -v a0="$ANON0" -v a1="$ANON1" -v a="$((WUP - W0))" -v w="$((W1 - WUP))" -v r="$WRATE" -v p="$PEAK" -v f="$FINAL" -v d="$DATA" 'BEGIN {
	printf "ingest:     %.1f MB/s (%.1f s; target >= 50 MB/s), peak RSS: server %.0f MB, ingest process %s MB (target <= 1000 MB)\n", m / s, s, h / 1024, c
	printf "memory:     server RSS %.1f MB before the upload, %.1f MB once ready: %+.1f%% (target within 10%%: %s); of which anonymous (not the program'"'"'s mapped files) %.1f and %.1f MB\n", r0 / 1024, r1 / 1024, (r1 - r0) * 100 / r0, (r1 - r0) * 100 / r0 <= 10 ? "met" : "MISSED", a0 / 1024, a1 / 1024
	printf "writes:     %.2f GB to storage during the upload (the archive kept); %.2f GB after it (database, scratch written back); at the baseline'"'"'s %d MB/s those take %.0f s: ingest cannot beat %.0f MB/s here\n", a / 1e9, w / 1e9, r, w / 1e6 / r, m / (w / 1e6 / r)
	printf "disk:       data directory %.2f GB once ready and its source compressed (source and database); %.2f GB more used at the peak of ingest (scratch)\n", d / 1e9, (p - f) / 1e9 }'
echo "trace:      $(grep -o '"slices":[0-9]*' "$OUT/trace.json" | head -1), $(grep -o '"tracks":[0-9]*' "$OUT/trace.json" | head -1)"

# ---- reading it -----------------------------------------------------------------
curl -s "$API/traces/$ID/tracks" >"$OUT/tracks.json"
START=$(sed -n 's/.*"start_ns":\([0-9]*\).*/\1/p' "$OUT/trace.json" | head -1)
END=$(sed -n 's/.*"end_ns":\([0-9]*\).*/\1/p' "$OUT/trace.json" | head -1)
TRACKS=$(grep -o '"track_id":[0-9][0-9]*' "$OUT/tracks.json" | head -20 | cut -d: -f2 | paste -sd, -)
RES=$(( (END - START) / 1500 ))
[ "$RES" -gt 0 ] || RES=1
# the minimap's overview as the viewer asks it (static/js/timeline.js,
# alignedWindow): at most 512 buckets of 2^L ns, the first at a multiple of 2^L
L=10
while [ $(( (END >> L) - (START >> L) + 1 )) -gt 512 ]; do L=$((L + 1)); done
OV_START=$(( START >> L << L ))
OV_N=$(( (END >> L) - (START >> L) + 1 ))
OV_END=$(( OV_START + OV_N * (1 << L) - 1 ))
# t URL: the seconds of one GET, which must answer 200
t() {
	r=$(curl -s -o "$OUT/reply.json" -w '%{http_code} %{time_total}' "$1")
	[ "${r%% *}" = 200 ] || { echo "GET $1: ${r%% *} $(head -c 300 "$OUT/reply.json")" >&2; exit 1; }
	echo "${r#* }"
}
{
	t "$API/traces/$ID"
	t "$API/traces/$ID/tracks"
	t "$API/traces/$ID/overview?start=$OV_START&end=$OV_END&buckets=$OV_N"
	for k in $(echo "$TRACKS" | tr , ' '); do
		t "$API/traces/$ID/slices?track=$k&start=$START&end=$END&resolution=$RES"
	done
} >"$OUT/first.txt"
echo "first view: $(awk '{ s += $1 } END { printf "%.3f s", s }' "$OUT/first.txt") for $(wc -l <"$OUT/first.txt") requests (target <= 1 s)"

"$OUT/query_bench" --port "$PORT" --trace "$ID" --samples "$SAMPLES" >"$OUT/latency.txt"
grep -E 'p99|target|zoom' "$OUT/latency.txt" | head -40

# the first request of each text is the one a user waits for; the second
# asks another page size, so that it is not the first's reply from the
# server's reply cache but reads the pages the first brought in
for q in "async" "zzz-no-such-name" "Load"; do
	echo "search:     q=$q: first $(t "$API/traces/$ID/search?q=$q&limit=100") s," \
		"again $(t "$API/traces/$ID/search?q=$q&limit=99") s (target <= 0.05 s)"
done
echo "area:       $(t "$API/traces/$ID/area?tracks=$TRACKS&start=$START&end=$END") s (target <= 1 s)"
echo "flame:      $(t "$API/traces/$ID/flame?tracks=$TRACKS&start=$START&end=$END") s (target <= 1 s)"
echo "flame:      $(t "$API/traces/$ID/flame?tracks=$TRACKS&start=$START&end=$END&limit=1000000") s as the viewer asks it, limit 1000000 (target <= 1 s)"

# the server's memory once the trace is read and then deleted
RSS2=$(rss)
curl -s -o /dev/null -X DELETE "$API/traces/$ID"
sleep 2
echo "memory:     server RSS $(awk -v r="$RSS2" 'BEGIN { printf "%.1f", r / 1024 }') MB after the reads above, $(awk -v r="$(rss)" 'BEGIN { printf "%.1f", r / 1024 }') MB once the trace is deleted (anonymous $(awk -v r="$(anon)" 'BEGIN { printf "%.1f", r / 1024 }') MB)"

# the same archive ingested in one go (what an upload below --preview-min
# gets, and what every upload got before they grew), in this run: the
# growing ingest's seconds above divided by these
t0=$(now)
"$B/trace-server" ingest "$ARCHIVE" -o "$OUT/batch.db" >/dev/null
BSECS=$(since "$t0")
rm -f "$OUT/batch.db"
GSECS=$(sed -n "s/.*trace $ID ingested in \([0-9.]*\) s .*then storing \([0-9.]*\), search index \([0-9.]*\), first view \([0-9.]*\);.*/\1 \2 \3 \4/p" "$OUT/server.log" |
	tail -1 | awk '{ printf "%.1f", $1 - $2 - $3 - $4 }')
awk -v g="$GSECS" -v b="$BSECS" 'BEGIN { printf "batch:      %.1f s for the same archive ingested in one go (trace-server ingest); the growing ingest took %.1f s (the server log'"'"'s, less its storing, search index and first view), %.2f times as long (target <= 1)\n", b, g, g / b }'
# and in one go with the growing layout (ids a chunk of 4096 at a time):
# the very rows the growing ingest makes (docs/API.md), so that this ratio
# compares the same rows written, not only the same archive read
t0=$(now)
"$B/trace-server" ingest "$ARCHIVE" -o "$OUT/batch.db" --extent-rows 4096 >/dev/null
LSECS=$(since "$t0")
rm -f "$OUT/batch.db"
awk -v g="$GSECS" -v b="$LSECS" 'BEGIN { printf "same rows:  %.1f s in one go with the growing layout (trace-server ingest --extent-rows 4096, the rows the growing ingest makes); the growing ingest took %.2f times as long\n", b, g / b }'
# where that time went: growing until ingest had read the whole archive
# (the first poll whose progress.bytes_done is its size, seconds since the
# upload ended, the upload's own seconds added), then the end, which for an
# archive whose late records make it start again (gen_fxt's: docs/API.md,
# "Order without the whole input") ingests it again in one go
awk -v size="$(wc -c <"$ARCHIVE")" -v up="$UP" -v grown="$GROWN" -v mb="$MB" -v b="$BSECS" '
	$2 == size && t == "" { t = $1 }
	END { if (t == "") { print "phases:     no poll saw the whole archive read"; exit }
	      printf "phases:     grown while reading it: %.1f s (upload and after), %.1f MB/s against the batch'"'"'s %.1f MB/s; its end: %.1f s more\n", up + t, mb / (up + t), mb / b, grown - t }' "$OUT/growth.txt"

