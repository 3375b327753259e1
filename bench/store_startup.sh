#!/bin/bash
# The collector's start on a big store: a real `vnoise-host collect --store` on a store of ROWS datagram
# (and interval) rows, made by `store_bench -G` (sealed counters reports of 128 nodes, one every 30 s, in
# the store's schema, inserted directly in one transaction; no state snapshot, as a collector that never
# saved one left it). The start is timed from the exec to the "listening on" line on stderr (polled every
# 10 ms): opening (quick_check of the small tables), loading the snapshot, replaying the datagrams after it.
#  replay    the first start: no snapshot, every datagram replayed (the old start, less its whole-file
#            quick_check, timed apart with the sqlite3 shell); at its exit it saves a snapshot
#  snapshot  the next starts (3; the median): the snapshot and the datagrams after it (none: a clean exit)
#  tail      a start after D more datagrams were stored after the snapshot (nodesim over UDP, then kill -9:
#            the snapshot is every 30 s, so a crash leaves at most 30 s of datagrams to replay)
#  retention then, on that store, 200 steps of the retention as the collector runs them (1000 rows a table,
#            and the commit; store_bench -R): a step's time is how long the receive loop waits
# Figures only, never pass/fail. The store (about 420 bytes a row) is in $TMPDIR (default /tmp), removed at
# the end unless KEEP=1.
# Usage: bench/store_startup.sh [ROWS [D]]   (defaults 10000000 rows, 30000 tail datagrams)
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${VNOISE_BUILD:-build}
ROWS=${1:-10000000}
D=${2:-30000}
VH=$BUILD/vnoise-host
SIM=$BUILD/tests/tools/nodesim
GEN=$BUILD/bench/store_bench
for x in "$VH" "$SIM" "$GEN"; do
	[ -x "$x" ] || { echo "store_startup: $x not built (make -j2)" >&2; exit 1; }
done
command -v sqlite3 >/dev/null || { echo "store_startup: needs the sqlite3 shell" >&2; exit 1; }
DIR=$(mktemp -d "${TMPDIR:-/tmp}/store_startup.XXXXXX")
DB=$DIR/store.db
KEY=$DIR/keys
printf '3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n' >"$KEY"
chmod 600 "$KEY"
CPID=
cleanup() {
	[ -n "$CPID" ] && kill -9 "$CPID" 2>/dev/null
	[ "${KEEP:-0}" = 1 ] && echo "kept: $DB" || rm -rf "$DIR"
}
trap cleanup EXIT

# start ARGS...: a collector on the store in the background; START_S: seconds to its "listening on" line
start() {
	local t0 t1
	: >"$DIR/err"
	t0=$(date +%s%N)
	"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$DB" --slot 0 --retain forever "$@" \
		>/dev/null 2>"$DIR/err" &
	CPID=$!
	until grep -q "listening on" "$DIR/err"; do
		kill -0 "$CPID" 2>/dev/null || { echo "collector failed: $(cat "$DIR/err")" >&2; exit 1; }
		sleep 0.01
	done
	t1=$(date +%s%N)
	START_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$DIR/err" | head -1)
}
stop() {
	kill -TERM "$CPID"
	wait "$CPID" 2>/dev/null
	CPID=
}
replayed() { sed -n 's/.*: \([0-9]*\) datagrams\( after the snapshot\)\? replayed in \([0-9.]*\) s.*/\1 datagrams in \3 s/p' "$DIR/err"; }

echo "# bench/store_startup.sh $ROWS $D ($(nproc) CPUs, SQLite $(sqlite3 --version | cut -d' ' -f1), store in $DIR)"
"$GEN" -G "$DB" -r "$ROWS" -N 128 -p 30 || exit 1
echo "store file: $(du -m "$DB" | cut -f1) MB"
sync
cat "$DB" >/dev/null # the page cache warm for every start alike
t0=$(date +%s%N)
qc=$(sqlite3 "$DB" 'PRAGMA quick_check')
t1=$(date +%s%N)
echo "whole-file quick_check (the old start ran it): $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s ($qc)"

start
echo "start, no snapshot (every datagram replayed): $START_S s to listening ($(replayed))"
stop
S=()
for i in 1 2 3; do
	start
	S+=("$START_S")
	[ "$i" = 1 ] && echo "  (first snapshot start: $(replayed) replayed)"
	stop
done
med=$(printf '%s\n' "${S[@]}" | sort -n | sed -n 2p)
echo "start from the snapshot: ${S[*]} s to listening (median $med s; target <= 2 s)"

start
"$SIM" -c "127.0.0.1:$PORT" -k "$KEY" -n 900 -j bench --flood "$D" >/dev/null 2>&1
sleep 1.5 # committed (batches of 0.5 s)
kill -9 "$CPID"
wait "$CPID" 2>/dev/null
CPID=
start
echo "start after kill -9 with $D datagrams after the snapshot: $START_S s to listening ($(replayed))"
stop
"$GEN" -R "$DB" # the retention's steps on the big store (it keeps the last 20 of its 27 days)
echo "# reproduce: bench/store_startup.sh $ROWS $D"
