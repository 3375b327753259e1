#!/bin/bash
# A node's sessions at the collector, over loopback UDP with a real `vnoise-host collect --store` and
# simulated nodes (tests/tools/nodesim):
#  A. A node restarted with its clock set back (an older session than the one it had: its session id is its
#     start time) is taken again within seconds, with one line, and its intervals are counted from then on.
#  B. A forged session (2^64-1, sealed with the cluster key) locks its node out for at most 10 s after the
#     forger's last datagram, across a collector restart on the same store (the store used to bring the
#     lockout back at every start).
#  C. The old session's and the forger's datagrams, replayed as they were sent, stay refused (counted stale
#     or duplicate) and change no session.
# No root.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
VH="$BUILD/vnoise-host"
SIM="$BUILD/tests/tools/nodesim"
[ -x "$VH" ] && [ -x "$SIM" ] || fail "vnoise-host or nodesim not built"
require_tools jq sqlite3

KEY="$TMP/keys"
make_key "$KEY"
LOCKOUT_MAX_S=10 # CS_LOCKOUT_MAX_NS (host/collect/clusteragg.h)

# sim ARGS...: one node of job "s" against the collector at $PORT, 100 ms intervals
sim() { "$SIM" -c "127.0.0.1:$PORT" -k "$KEY" -j s -t 100ms -w 200 "$@"; }
# wait_line FILE TEXT SECONDS: until TEXT is in FILE
wait_line() {
	local i
	for i in $(seq $(($3 * 20))); do
		grep -qF "$2" "$1" && return 0
		sleep 0.05
	done
	fail "no '$2' in $3 s: $(tail -5 "$1")"
}
node() { jq -c --argjson n "$2" '.nodes[] | select(.node == $n)' "$1"; }
# session FILE [NODE]: the session id in a nodesim line, or of NODE in a collector's report, as written (jq
# reads numbers as doubles: 64-bit ids lose their last digits)
session() {
	if [ $# = 1 ]; then
		grep -o '"session":[0-9]*' "$1" | cut -d: -f2
	else
		grep -o "\"node\":$2,\"job_id\":\"[0-9a-f]*\",\"session\":[0-9]*" "$1" | sed 's/.*://'
	fi
}

# ---------------- A: restarted with its clock set back
start_collector A --store "$TMP/s.db"
ahead=$(($(date +%s%N) + 3600000000000))
sim -n 1 -i 20 --session "$ahead" --record "$TMP/ahead.rec" >"$TMP/ahead.json" || fail "node 1 (ahead) failed"
sim -n 1 -i 60 >"$TMP/right.json" || fail "node 1 (right) failed"
right=$(session "$TMP/right.json")
[ "$right" -lt "$ahead" ] || fail "the second session $right is not older than $ahead"
wait_line "$TMP/A.err" "node 1 came back behind its sequence (session $right" 2
[ "$(grep -c "node 1 came back" "$TMP/A.err")" = 1 ] || fail "more than one line: $(grep "node 1" "$TMP/A.err")"

# ---------------- B: a forged session, then the collector restarted on its store
sim -n 2 -i 5 >/dev/null || fail "node 2 failed"
sim -n 2 -i 10 --session 18446744073709551615 --record "$TMP/forged.rec" >"$TMP/forged.json" ||
	fail "the forger failed"
forged_end=$(date +%s%N)
kill -TERM "$CPID"
wait "$CPID" || fail "collector A exited $?: $(tail -3 "$TMP/A.err")"
A1=$(node "$TMP/A.json" 1)
[ "$(session "$TMP/A.json" 1)" = "$right" ] && [ "$(jq .resumed <<<"$A1")" = 1 ] ||
	fail "node 1 at the collector: $A1 (want session $right, resumed 1)"
# the quiet period (3 s) of the old session refused about 30 of its 100 ms intervals; the rest counted
taken=$(jq '.intervals.counters + .intervals.sampled' <<<"$A1")
[ "$taken" -ge 20 ] && [ "$taken" -le 80 ] || fail "node 1: $taken intervals taken of 20 + 60: $A1"
[ "$(session "$TMP/A.json" 2)" = 18446744073709551615 ] ||
	fail "the forged session was not taken (a key holder's restart, as far as anyone can tell)"
ok "A: a node restarted with an older session is taken again ($(jq .stale <<<"$A1") datagrams stale during the old one's 3 s quiet), one line"

start_collector B --store "$TMP/s.db"
sim -n 2 -i 150 >"$TMP/real.json" &
RPID=$!
PIDS+=("$RPID")
wait_line "$TMP/B.err" "node 2 came back behind its sequence" $((LOCKOUT_MAX_S + 2))
back=$(date +%s%N)
lock=$(awk -v a="$forged_end" -v b="$back" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
awk -v l="$lock" -v m="$LOCKOUT_MAX_S" 'BEGIN { exit !(l <= m + 0.5) }' ||
	fail "node 2 was locked out $lock s after the forger's last datagram (bound $LOCKOUT_MAX_S s)"
ok "B: the forged session locked node 2 out $lock s after its last datagram, across a restart on the store (bound $LOCKOUT_MAX_S s)"

# ---------------- C: replays stay refused
sleep 1.2 # the store's node table (every second)
before=$(sqlite3 "$TMP/s.db" "SELECT sum(stale + duplicate) FROM node WHERE node_id IN (1, 2)")
r1=$(sim -n 1 --replay "$TMP/ahead.rec" | jq .replayed)
r2=$(sim -n 2 --replay "$TMP/forged.rec" | jq .replayed)
[ "$r1" -ge 20 ] && [ "$r2" -ge 10 ] || fail "replayed $r1 and $r2 datagrams"
wait "$RPID" || fail "node 2 (real) failed"
real=$(session "$TMP/real.json")
kill -TERM "$CPID"
wait "$CPID" || fail "collector B exited $?: $(tail -3 "$TMP/B.err")"
B1=$(node "$TMP/B.json" 1)
B2=$(node "$TMP/B.json" 2)
[ "$(session "$TMP/B.json" 1)" = "$right" ] && [ "$(session "$TMP/B.json" 2)" = "$real" ] ||
	fail "a replay moved a session: node 1 $(session "$TMP/B.json" 1) (want $right), node 2 $(session "$TMP/B.json" 2) (want $real)"
after=$(jq -s 'map(.stale + .duplicate) | add' <<<"$B1 $B2")
[ $((after - before)) -ge $((r1 + r2)) ] ||
	fail "$((r1 + r2)) datagrams replayed, $((after - before)) counted stale or duplicate"
grep -q "session 18446744073709551615" "$TMP/B.err" && ! grep -q "restarted (session 18446744073709551615" "$TMP/B.err" ||
	fail "the forger's replay was not said, or was taken: $(grep "node 2" "$TMP/B.err")"
taken=$(jq '.intervals.counters + .intervals.sampled' <<<"$B2")
ok "C: $r1 + $r2 replayed datagrams refused ($((after - before)) stale or duplicate), no session moved; node 2's real session kept ($taken intervals)"
