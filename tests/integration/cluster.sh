#!/bin/bash
# Eight simulated nodes (tests/tools/nodesim, the real node module) report over loopback
# UDP to a real `vnoise-host collect`.
#  A. Round-robin over 8 nodes, 32 slots: each node sampled in exactly 1/8 of them; the collector's totals
#     equal each node's own; datagrams a node lost on purpose are counted lost, forged ones failed
#     authentication; /metrics passes promtool; the --pcap-out capture opens in tshark and replays into the
#     same totals; the store (SQLite) reloads into the same totals.
#  B. One node does twice the work while sampled: it is taken out of the rotation after its first slot.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
VH="$BUILD/vnoise-host"
SIM="$BUILD/tests/tools/nodesim"
[ -x "$VH" ] && [ -x "$SIM" ] || fail "vnoise-host or nodesim not built"
require_tools curl promtool tshark jq

KEY="$TMP/keys"
make_key "$KEY"

# --- bad input: one line, exit 2 (usage) or 5 (damaged capture)
expect_err 2 "key-file is required" "$VH" collect
expect_err 2 "invalid --listen 'example.com:1': want ADDR:PORT: 1.2.3.4:P, .::1.:P, localhost:P or :P" "$VH" collect -k "$KEY" --listen example.com:1
expect_err 2 "slot" "$VH" collect -k "$KEY" --slot 10us
cp "$KEY" "$TMP/openkey" && chmod 644 "$TMP/openkey"
expect_err 2 "group or others may read it" "$VH" collect -k "$TMP/openkey" --no-store
printf '1 abcd\n' >"$TMP/shortkey" && chmod 600 "$TMP/shortkey"
expect_err 2 "line 1: key must be" "$VH" collect -k "$TMP/shortkey" --no-store
head -c 300 /dev/urandom >"$TMP/junk.pcap"
expect_err 5 "capture" "$VH" collect -k "$KEY" --pcap-in "$TMP/junk.pcap"

stop_collector() {
	kill -TERM "$CPID"
	wait "$CPID" || fail "collector exited $?: $(tail -3 "$TMP/$1.err")"
	jq -e . "$TMP/$1.json" >/dev/null || fail "collector $1 printed no JSON report"
}
# run_nodes NAME EXTRA_FOR_NODE_ARGS: 8 nodes of job NAME, waits for them; node N's extra args in EX[N]
run_nodes() {
	local name=$1 n pids=()
	for n in 1 2 3 4 5 6 7 8; do
		# shellcheck disable=SC2086
		"$SIM" -c "127.0.0.1:$PORT" -k "$KEY" -n "$n" -j "$name" -i "$INTERVALS" -t 10ms -w 300 \
			--seed 42 ${EX[$n]:-} >"$TMP/$name.node$n.json" 2>>"$TMP/$name.nodes.err" &
		pids+=($!)
		PIDS+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || fail "a node of $name exited $?"; done
	ok "$name: 8 nodes done ($(cat "$TMP/$name".node*.json | jq -s 'map(.datagrams) | add') datagrams)"
}
node_json() { jq -c --argjson n "$2" '.nodes[] | select(.node == $n)' "$TMP/$1.json"; }

# ---------------- A: rotation over 8 good nodes
SLOTS=32
INTERVALS=950 # 9.5 s of 10 ms intervals; the 32 slots of 200 ms take 6.4 s once all 8 registered
start_collector A --slot 200ms --wait-nodes 8 --slots $SLOTS --exclude-min 5 --job A \
	--metrics 127.0.0.1:0 --pcap-out "$TMP/A.pcap" --store "$TMP/A.db"
MPORT=""
for _ in $(seq 100); do
	MPORT=$(sed -n 's/.*serving \/metrics on port \([0-9]*\).*/\1/p' "$TMP/A.err")
	[ -n "$MPORT" ] && break
	sleep 0.05
done
[ -n "$MPORT" ] || fail "no /metrics port: $(cat "$TMP/A.err")"
EX=()
EX[3]="--drop-every 50"
EX[4]="--forge 3"
run_nodes A &
RUNNER=$!
sleep 3
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt" || fail "curl /metrics failed"
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 ||
	fail "promtool rejects /metrics: $(head -5 "$TMP/promtool.out")"
grep -q '^vnoise_node_datagrams_total{node="5",' "$TMP/metrics.txt" || fail "/metrics lacks node 5"
grep -q '^vnoise_job_info{job="[0-9a-f]*",name="A"} 1$' "$TMP/metrics.txt" || fail "/metrics lacks the job's name"
ok "/metrics mid-run: $(wc -l <"$TMP/metrics.txt") lines, promtool check metrics passes"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/nope")" = 404 ] || fail "/nope not 404"
wait "$RUNNER" || fail "nodes of A failed"
stop_collector A
grep -q "rotation done after $SLOTS slots" "$TMP/A.err" || fail "rotation did not finish: $(cat "$TMP/A.err")"

# every node: the collector's totals are the node's, lost = dropped, sampled in exactly 1/8 of the slots
for n in 1 2 3 4 5 6 7 8; do
	N="$TMP/A.node$n.json"
	C=$(node_json A $n)
	[ -n "$C" ] || fail "collector knows nothing of node $n"
	for f in datagrams noise_ns compute_ns intervals.sampled intervals.counters records \
		class_ns.irq class_ns.softirq class_ns.thread; do
		[ "$(jq ".$f" <<<"$C")" = "$(jq ".$f" "$N")" ] ||
			fail "node $n: collector $f $(jq ".$f" <<<"$C") != node's $(jq ".$f" "$N")"
	done
	[ "$(jq .lost <<<"$C")" = "$(jq .send_errors "$N")" ] ||
		fail "node $n: collector lost $(jq .lost <<<"$C") != node's unsent $(jq .send_errors "$N")"
	[ "$(jq .slots_sampled <<<"$C")" = $((SLOTS / 8)) ] ||
		fail "node $n sampled in $(jq .slots_sampled <<<"$C") of $SLOTS slots, want $((SLOTS / 8))"
	[ "$(jq .commands "$N")" = $((SLOTS / 8)) ] || fail "node $n took $(jq .commands "$N") commands"
	[ "$(jq .excluded <<<"$C")" = false ] || fail "node $n excluded though it does not slow down"
	s=$(jq .intervals.sampled "$N")
	# a 200 ms slot is ~20 intervals of 10 ms: 4 slots ~ 80 of the node's intervals
	[ "$s" -ge 60 ] && [ "$s" -le 100 ] || fail "node $n: $s intervals sampled, want ~80 (4 slots)"
done
[ "$(jq .dropped "$TMP/A.node3.json")" -gt 10 ] || fail "node 3 dropped too few on purpose"
[ "$(node_json A 3 | jq .lost)" = "$(jq .dropped "$TMP/A.node3.json")" ] || fail "node 3: lost != dropped"
[ "$(jq .datagrams.lost "$TMP/A.json")" = "$(jq .dropped "$TMP/A.node3.json")" ] || fail "total lost != dropped"
[ "$(jq '.datagrams["bad-mac"]' "$TMP/A.json")" = 3 ] || fail "forged datagrams: $(jq -c .datagrams "$TMP/A.json")"
[ "$(node_json A 5 | jq '.sources | length')" -ge 3 ] || fail "sampled intervals brought no sources"
[ "$(jq '.jobs[0].ranking | length' "$TMP/A.json")" = 8 ] || fail "no ranking of 8 nodes"
[ "$(jq -r '.jobs[0].job' "$TMP/A.json")" = A ] || fail "the job's name (--job A) is not in the report"
ok "A: 8 nodes x $((SLOTS / 8)) of $SLOTS slots; totals equal the nodes'; lost $(jq .datagrams.lost "$TMP/A.json") = dropped; 3 forged counted"

# the capture: tshark reads it; a replay gives the same totals
tshark -r "$TMP/A.pcap" -T fields -e udp.dstport >"$TMP/tshark.out" 2>"$TMP/tshark.err" ||
	fail "tshark cannot read the capture: $(head -3 "$TMP/tshark.err")"
[ "$(wc -l <"$TMP/tshark.out")" = "$(jq .datagrams.received "$TMP/A.json")" ] ||
	fail "tshark sees $(wc -l <"$TMP/tshark.out") packets, the collector received $(jq .datagrams.received "$TMP/A.json")"
[ "$(sort -u "$TMP/tshark.out")" = "$PORT" ] || fail "capture holds packets to other ports"
"$VH" collect -k "$KEY" --pcap-in "$TMP/A.pcap" --json >"$TMP/R.json" 2>"$TMP/R.err" ||
	fail "replay failed: $(cat "$TMP/R.err")"
TOTALS='{datagrams: .datagrams, nodes: [.nodes[] | del(.slots_sampled, .commands, .excluded)], ranking: .jobs[0].ranking}'
[ "$(jq -cS "$TOTALS" "$TMP/A.json")" = "$(jq -cS "$TOTALS" "$TMP/R.json")" ] ||
	fail "replay totals differ: $(diff <(jq -S "$TOTALS" "$TMP/A.json") <(jq -S "$TOTALS" "$TMP/R.json") | head -10)"
ok "capture: tshark reads $(wc -l <"$TMP/tshark.out") packets; --pcap-in gives identical totals"

# the store: a new collector on it starts with the accepted reports (not the rejected ones)
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/A.db" --duration 0.1s --json >"$TMP/S.json" \
	2>"$TMP/S.err" || fail "collector on the store failed: $(cat "$TMP/S.err")"
STORED='[.nodes[] | {node, datagrams, lost, noise_ns, compute_ns, class_ns, intervals}]'
[ "$(jq -cS "$STORED" "$TMP/A.json")" = "$(jq -cS "$STORED" "$TMP/S.json")" ] ||
	fail "the store did not reload the totals"
ok "store: reloaded into the same per-node totals"
# a file that is neither a database nor a capture is refused and left as it was (the SQLite store's own
# damage, kill -9 and import: tests/integration/cluster_store.sh)
cp "$TMP/junk.pcap" "$TMP/junk.store"
expect_err 5 "store" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/junk.store" --duration 0.1s -q
cmp -s "$TMP/junk.pcap" "$TMP/junk.store" || fail "a foreign file given as store was changed"
ok "store: a foreign file refused, untouched"

# --period without --json: the tables every period (a dashboard), the status line on stderr
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --no-store --slot 100ms --period 300ms --duration 2s \
	>"$TMP/D.txt" 2>"$TMP/D.err" &
DPID=$!
PIDS+=("$DPID")
for _ in $(seq 100); do
	DPORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/D.err")
	[ -n "$DPORT" ] && break
	sleep 0.05
done
[ -n "$DPORT" ] || fail "collector D did not start: $(cat "$TMP/D.err")"
for n in 1 2; do "$SIM" -c "127.0.0.1:$DPORT" -k "$KEY" -n $n -j D -i 100 -t 10ms -w 100 >/dev/null & done
wait "$DPID" || fail "collector D exited $?"
tables=$(grep -c '^job ' "$TMP/D.txt")
lines=$(grep -c '^nodes 2 jobs 1 ' "$TMP/D.err")
[ "$tables" -ge 4 ] && [ "$lines" -ge 3 ] || fail "--period: $tables tables, $lines status lines: $(head -20 "$TMP/D.txt")"
ok "--period: $tables tables on stdout (the last one at the end), $lines status lines with both nodes"

# ---------------- B: node 6 slows down while sampled
start_collector B --slot 200ms --wait-nodes 8 --slots 24 --exclude-min 5 --exclude-pct 20 --no-store
EX=()
EX[6]="--slow-pct 100"
INTERVALS=700
run_nodes B
stop_collector B
[ "$(node_json B 6 | jq .excluded)" = true ] || fail "slow node 6 was not excluded: $(node_json B 6 | jq -c '{slots_sampled, compute_median_ns}')"
[ "$(node_json B 6 | jq .slots_sampled)" = 1 ] || fail "node 6 sampled in $(node_json B 6 | jq .slots_sampled) slots, want 1"
grep -q "node 6 taken out of the rotation" "$TMP/B.err" || fail "no message about node 6"
for n in 1 2 3 4 5 7 8; do
	C=$(node_json B $n)
	[ "$(jq .excluded <<<"$C")" = false ] || fail "node $n excluded: $(jq -c .compute_median_ns <<<"$C")"
	s=$(jq .slots_sampled <<<"$C")
	[ "$s" -ge 3 ] && [ "$s" -le 4 ] || fail "node $n sampled in $s slots, want 3-4 (23 slots over 7)"
done
ok "B: node 6 ($(node_json B 6 | jq -c .compute_median_ns)) excluded after 1 slot; 7 others rotate"
