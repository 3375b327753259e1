#!/bin/bash
# A tree of collectors. Two leaf collectors (`collect --forward PARENT`) take 4
# simulated nodes each (tests/tools/nodesim, the real node module) and rotate their sampling; every report a
# leaf accepts goes on verbatim to one parent collector (--slot 0: the leaves sample), which authenticates it
# with the nodes' own keys. The parent's totals are the sum of the leaves': per node the same datagrams, noise,
# compute, classes, intervals and lost sequence numbers as the leaf that node reported to, datagrams used =
# the two leaves' sum, and one ranking over the 8 nodes. Reports forged at a leaf are refused there and never
# reach the parent; a forged datagram sent to the parent itself is refused by it.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
VH="$BUILD/vnoise-host"
SIM="$BUILD/tests/tools/nodesim"
[ -x "$VH" ] && [ -x "$SIM" ] || fail "vnoise-host or nodesim not built"
require_tools jq

KEY="$TMP/keys"
make_key "$KEY"

expect_err 2 "forward" "$VH" collect -k "$KEY" --no-store --forward example.com:7361
expect_err 2 "forward" "$VH" collect -k "$KEY" --pcap-in /dev/null --forward 127.0.0.1:7361

start_collector P --slot 0 --no-store --job T
PPID_=$CPID
PPORT=$PORT
start_collector L1 --no-store --slot 200ms --wait-nodes 4 --slots 8 --forward "127.0.0.1:$PPORT"
L1=$CPID
L1PORT=$PORT
start_collector L2 --no-store --slot 200ms --wait-nodes 4 --slots 8 --forward "127.0.0.1:$PPORT"
L2=$CPID
L2PORT=$PORT
grep -q "forwarding accepted reports to 127.0.0.1:$PPORT" "$TMP/L1.err" || fail "leaf 1 does not say where it forwards: $(cat "$TMP/L1.err")"

# nodes 1-4 report to leaf 1, 5-8 to leaf 2; node 3 drops some on purpose, node 6 forges 3 reports
pids=()
for n in 1 2 3 4 5 6 7 8; do
	port=$L1PORT
	[ "$n" -gt 4 ] && port=$L2PORT
	ex=
	[ "$n" = 3 ] && ex="--drop-every 40"
	[ "$n" = 6 ] && ex="--forge 3"
	# shellcheck disable=SC2086
	"$SIM" -c "127.0.0.1:$port" -k "$KEY" -n "$n" -j T -i 300 -t 10ms -w 200 --seed 7 $ex \
		>"$TMP/node$n.json" 2>>"$TMP/nodes.err" &
	pids+=($!)
	PIDS+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a node exited $?: $(tail -3 "$TMP/nodes.err")"; done
# forged reports straight to the parent (nodesim --forge: sealed with a wrong key), from a node of another job
"$SIM" -c "127.0.0.1:$PPORT" -k "$KEY" -n 9 -j X -i 4 -t 10ms -w 10 --forge 2 >/dev/null 2>&1
for c in L1 L2; do
	kill -TERM "${!c}"
	wait "${!c}" || fail "leaf $c exited $?: $(tail -3 "$TMP/$c.err")"
done
sleep 0.3 # the last forwarded datagrams on loopback
kill -TERM "$PPID_"
wait "$PPID_" || fail "the parent exited $?: $(tail -3 "$TMP/P.err")"
for c in P L1 L2; do jq -e . "$TMP/$c.json" >/dev/null || fail "collector $c printed no JSON report"; done

F='{node, datagrams, lost, noise_ns, compute_ns, class_ns, intervals, records}'
for n in 1 2 3 4 5 6 7 8; do
	leaf=L1
	[ "$n" -gt 4 ] && leaf=L2
	want=$(jq -cS --argjson n "$n" ".nodes[] | select(.node == \$n) | $F" "$TMP/$leaf.json")
	got=$(jq -cS --argjson n "$n" ".nodes[] | select(.node == \$n) | $F" "$TMP/P.json")
	[ -n "$want" ] || fail "leaf $leaf knows nothing of node $n"
	[ "$got" = "$want" ] || fail "node $n: parent $got, leaf $leaf $want"
done
# (node 9 reported to the parent directly)
ok=$(jq '.datagrams.ok - ([.nodes[] | select(.node == 9) | .datagrams] | add // 0)' "$TMP/P.json")
sum=$(($(jq '.datagrams.ok' "$TMP/L1.json") + $(jq '.datagrams.ok' "$TMP/L2.json")))
[ "$ok" -eq "$sum" ] || fail "the parent used $ok datagrams of the leaves' nodes, the leaves $sum"
[ "$(jq '.datagrams.lost' "$TMP/P.json")" = "$(jq .dropped "$TMP/node3.json")" ] ||
	fail "parent lost $(jq '.datagrams.lost' "$TMP/P.json") != node 3's dropped $(jq .dropped "$TMP/node3.json")"
[ "$(jq '.datagrams["bad-mac"]' "$TMP/L2.json")" = 3 ] || fail "leaf 2 bad-mac: $(jq -c .datagrams "$TMP/L2.json")"
[ "$(jq '.datagrams["bad-mac"]' "$TMP/P.json")" -ge 1 ] || fail "the parent took the forged datagram: $(jq -c .datagrams "$TMP/P.json")"
[ "$(jq '[.jobs[] | select(.job == "T") | .ranking | length] | add' "$TMP/P.json")" = 8 ] ||
	fail "the parent has no ranking of the 8 nodes: $(jq -c '.jobs' "$TMP/P.json" | head -c 400)"
ok "parent: per-node totals of all 8 nodes equal their leaf's; $ok datagrams = the leaves' $sum; lost $(jq '.datagrams.lost' "$TMP/P.json") = node 3's drops; forged ones refused at leaf 2 (3) and at the parent ($(jq '.datagrams["bad-mac"]' "$TMP/P.json")); one ranking of 8 nodes"
