#!/bin/sh
# A throwaway PostgreSQL for the catalog's tests: a real server, on
# loopback, in a directory of the caller's, never a shared instance.
#
#   sh tests/catalog/pg.sh start DIR   initdb into DIR/data on the first start,
#                                      then start postgres on a free loopback
#                                      port (the same port on a restart), its
#                                      unix socket in DIR; writes DIR/url
#   sh tests/catalog/pg.sh stop DIR    stop it (fast shutdown), keep the data
#   sh tests/catalog/pg.sh kill DIR    stop it and remove DIR
#
# initdb refuses to run as root, so as root everything runs as the
# `postgres` user, which is given DIR. PG_BIN overrides where Debian keeps
# the binaries. The database is "trace", its owner the superuser "trace",
# trust authentication on loopback only (the cluster lives as long as the
# test).
set -eu
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: pg.sh start|stop|kill DIR" >&2; exit 2; }
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[ -x "$PG_BIN/initdb" ] || { echo "pg.sh: no PostgreSQL binaries in '$PG_BIN' (apt-get install postgresql)" >&2; exit 1; }

as_owner() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# A port below Linux's ephemeral range (32768-60999, where outgoing
# connections would take it) that no socket uses now.
free_port() {
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		p=$(( ( $(od -An -N2 -tu2 /dev/urandom) % 12000 ) + 20000 ))
		if ! ss -atnH 2>/dev/null | awk '{print $4}' | grep -q ":$p\$"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# Starts postgres on $port; 0 or 1 (its log says why).
run() {
	as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
		-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
}

start() {
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [ "$(id -u)" = 0 ]; then
		chown postgres "$dir"
		runuser -u postgres -- test -w "$dir" ||
			{ echo "pg.sh: the postgres user cannot reach $dir (a parent directory is private)" >&2; exit 1; }
	fi
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		as_owner "$PG_BIN/initdb" -D "$dir/data" -U trace --auth=trust -E UTF8 --locale=C.UTF-8 \
			>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
	fi
	if [ -f "$dir/port" ]; then
		# a restart keeps its port: the catalogs under test reconnect to it
		port=$(cat "$dir/port")
		run || { tail -n 20 "$dir/log" >&2; exit 1; }
	else
		# the first start tries other ports when one was taken meanwhile
		n=0
		until port=$(free_port) && run; do
			n=$((n + 1))
			[ "$n" -lt 5 ] || { tail -n 20 "$dir/log" >&2; exit 1; }
		done
		echo "$port" >"$dir/port"
	fi
	if [ ! -f "$dir/url" ]; then
		as_owner "$PG_BIN/createdb" -h "$dir" -p "$port" -U trace trace
		echo "postgres://trace@127.0.0.1:$port/trace" >"$dir/url"
	fi
}

stop() {
	[ -f "$dir/data/postmaster.pid" ] || return 0
	as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null
}

case "$cmd" in
start) start ;;
stop) stop ;;
kill) stop; rm -rf "$dir" ;;
*) echo "usage: pg.sh start|stop|kill DIR" >&2; exit 2 ;;
esac
