# bench/lib.sh: what the benchmarks that run the real server share; sourced
# by bench/query/run.sh and bench/library/run.sh from the repository root.

now() { date +%s.%N; }
# since T0: seconds from T0 (a `now`), one decimal
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# server_binary B OUT: copies $B/trace-server to OUT, so that a rebuild
# during the run cannot swap the binary under it.
server_binary() {
	cp "$1/trace-server" "$2/trace-server.new"
	mv -f "$2/trace-server.new" "$2/trace-server"
}

# server_start OUT [OPTION...]: starts OUT/trace-server on a free loopback
# port with its data in OUT/data (emptied first) and the options given,
# output in OUT/server.out and OUT/server.log; sets SPID and PORT, or exits
# when it does not start. The caller's EXIT trap kills $SPID.
server_start() {
	sdir=$1
	shift
	rm -rf "$sdir/data"
	"$sdir/trace-server" serve --port 0 --data "$sdir/data" "$@" >"$sdir/server.out" 2>"$sdir/server.log" &
	SPID=$!
	PORT=""
	for _ in $(seq 100); do
		PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$sdir/server.out")
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { echo "the server did not start; see $sdir/server.log"; exit 1; }
}
