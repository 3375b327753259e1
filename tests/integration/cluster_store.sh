#!/bin/bash
# The collector's SQLite store. Eight simulated nodes (tests/tools/nodesim) report over
# loopback UDP to a real `vnoise-host collect --store`.
#  A. `vnoise-host query` gives the collector's final ranking (same definition, same figures) and the store's
#     node table its totals, equal to /metrics; `sqlite3 ... PRAGMA integrity_check` is ok; a new collector
#     on the store starts from the same totals.
#  B. kill -9 of the collector mid-run: the store opens again (integrity ok) and holds every datagram that was
#     accepted more than ~1 s before the kill (its status lines say how many), and no more than were sent.
#  C. A damaged copy (pages overwritten), a newer schema and a foreign file: one line, exit 5, file untouched.
#  D. A store of the old format (a capture) is imported into FILE.db, the capture kept, the same totals.
#  E. Durability: the store a collector writes is in WAL mode (read back with the sqlite3 shell), its WAL is
#     synced (fdatasync, seen with strace) after each commit while it runs, and a kill -9 once the nodes'
#     datagrams were committed (> 1 s before) loses none of them.
#  F. Retention: with --retain 3s the rows older than 3 s are deleted while the collector runs (counted:
#     status line, exit line, /metrics), younger ones kept; a bare number is refused.
#  A also: a restart starts from the state snapshot (no datagram replayed) with the report a start that
#     replays the whole history (the snapshot removed) gives.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
VH="$BUILD/vnoise-host"
SIM="$BUILD/tests/tools/nodesim"
[ -x "$VH" ] && [ -x "$SIM" ] || fail "vnoise-host or nodesim not built"
require_tools curl sqlite3 jq strace

KEY="$TMP/keys"
make_key "$KEY"

# run_nodes NAME INTERVALS: 8 nodes of job NAME in the background; their pids in NPIDS
run_nodes() {
	local name=$1 n
	NPIDS=()
	for n in 1 2 3 4 5 6 7 8; do
		"$SIM" -c "127.0.0.1:$PORT" -k "$KEY" -n "$n" -j "$name" -i "$2" -t 10ms -w 300 \
			--seed "$n" >"$TMP/$name.node$n.json" 2>>"$TMP/$name.nodes.err" &
		NPIDS+=($!)
		PIDS+=($!)
	done
}
wait_nodes() {
	local p
	for p in "${NPIDS[@]}"; do wait "$p" || fail "a node exited $?: $(tail -3 "$TMP/$1.nodes.err")"; done
}
integrity() { [ "$(sqlite3 "$1" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check of $1: $(sqlite3 "$1" 'PRAGMA integrity_check' 2>&1 | head -3)"; }
RANK='[.jobs[] | {job_id, ranking}]'

# ---------------- A: the store equals the collector's report and /metrics
start_collector A --slot 200ms --wait-nodes 8 --job A --metrics 127.0.0.1:0 --store "$TMP/A.db" \
	--pcap-out "$TMP/A.pcap"
metrics_port "$TMP/A.err"
run_nodes A 300
wait_nodes A
sleep 1.2 # the last snapshot of the accounting (every second)
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/A.metrics" || fail "curl /metrics failed"
# mid-run the store is readable by another process (WAL): a query while the collector runs
"$VH" query --store "$TMP/A.db" ranking >"$TMP/A.live.txt" || fail "query while the collector runs failed"
kill -TERM "$CPID"
wait "$CPID" || fail "collector A exited $?: $(tail -3 "$TMP/A.err")"
integrity "$TMP/A.db"
"$VH" query --store "$TMP/A.db" ranking --json >"$TMP/A.q.json" || fail "query ranking failed"
[ "$(jq -c '.jobs[0].ranking | length' "$TMP/A.json")" = 8 ] || fail "the collector ranked $(jq -c '.jobs[0].ranking | length' "$TMP/A.json") nodes"
[ "$(jq -cS "$RANK" "$TMP/A.json")" = "$(jq -cS "$RANK" "$TMP/A.q.json")" ] ||
	fail "query ranking differs from the collector's: $(diff <(jq -S "$RANK" "$TMP/A.json") <(jq -S "$RANK" "$TMP/A.q.json") | head -20)"
ok "A: query ranking = the collector's (8 nodes, mean delay, slowest, intervals, noise, hypervisor)"
# per node: the node table = the report; datagrams and noise also = /metrics; interval rows = intervals
for n in 1 2 3 4 5 6 7 8; do
	C=$(jq -c --argjson n $n '.nodes[] | select(.node == $n)' "$TMP/A.json")
	S=$(sqlite3 -json "$TMP/A.db" "SELECT datagrams, lost, noise_ns, compute_ns, records,
		intervals_sampled, intervals_counters FROM node WHERE node_id = $n" | jq -c '.[0]')
	for f in datagrams lost noise_ns compute_ns records; do
		[ "$(jq ".$f" <<<"$C")" = "$(jq ".$f" <<<"$S")" ] || fail "node $n: store $f $(jq ".$f" <<<"$S") != collector's $(jq ".$f" <<<"$C")"
	done
	[ "$(jq .intervals_sampled <<<"$S")" = "$(jq .intervals.sampled <<<"$C")" ] &&
		[ "$(jq .intervals_counters <<<"$S")" = "$(jq .intervals.counters <<<"$C")" ] || fail "node $n: intervals $S vs $C"
	iv=$(sqlite3 "$TMP/A.db" "SELECT count(*) || ' ' || sum(noise_ns) || ' ' || sum(sampled) FROM interval WHERE node_id = $n")
	[ "$iv" = "$(jq -r '"\(.intervals.sampled + .intervals.counters) \(.noise_ns) \(.intervals.sampled)"' <<<"$C")" ] ||
		fail "node $n: interval rows (count noise sampled) $iv vs the collector's $(jq -c '{intervals, noise_ns}' <<<"$C")"
	m=$(sed -n "s/^vnoise_node_datagrams_total{node=\"$n\",[^}]*} \([0-9]*\)$/\1/p" "$TMP/A.metrics")
	[ "$m" = "$(jq .datagrams <<<"$S")" ] || fail "node $n: /metrics datagrams '$m' != store's $(jq .datagrams <<<"$S")"
done
used=$(jq '.datagrams.ok' "$TMP/A.json")
[ "$(sqlite3 "$TMP/A.db" 'SELECT count(*) FROM datagram')" = "$used" ] || fail "store holds $(sqlite3 "$TMP/A.db" 'SELECT count(*) FROM datagram') datagrams, the collector used $used"
[ "$(sqlite3 "$TMP/A.db" "SELECT value FROM counter WHERE name = 'ok'")" = "$used" ] || fail "counter ok != $used"
mt=$(sed -n 's/^vnoise_collect_datagrams_total{result="ok"} \([0-9]*\)$/\1/p' "$TMP/A.metrics")
[ "$mt" = "$used" ] || fail "/metrics used '$mt' != $used"
[ "$(sqlite3 "$TMP/A.db" 'PRAGMA user_version')" = 2 ] && [ "$(sqlite3 "$TMP/A.db" "SELECT value FROM meta WHERE key = 'schema'")" = 2 ] ||
	fail "schema version not recorded"
[ "$(sqlite3 "$TMP/A.db" 'PRAGMA journal_mode')" = wal ] || fail "not in WAL mode"
"$VH" query --store "$TMP/A.db" causes A --json >"$TMP/A.c.json" || fail "query causes failed"
[ "$(jq '.causes | length' "$TMP/A.c.json")" -ge 3 ] && [ "$(jq .noise_ns "$TMP/A.c.json")" = "$(jq '[.nodes[].noise_ns] | add' "$TMP/A.json")" ] ||
	fail "causes: $(jq -c '{noise_ns, n: (.causes | length)}' "$TMP/A.c.json")"
# a node's cause name holding terminal controls and bytes >= 0x80 (a copy of the store): the text shows
# it escaped, nothing raw reaches the terminal
sqlite3 "$TMP/A.db" ".backup '$TMP/H.db'" || fail "cannot copy the store"
sqlite3 "$TMP/H.db" "UPDATE cause SET name = CAST(x'1b5d303b70776e071b5b324a0dff' AS TEXT) WHERE rowid = (SELECT rowid FROM cause ORDER BY noise_ns DESC LIMIT 1)" ||
	fail "cannot set a hostile cause name"
"$VH" query --store "$TMP/H.db" causes A >"$TMP/H.txt" || fail "query causes (text) failed"
LC_ALL=C grep -q '[^[:print:]]' "$TMP/H.txt" && fail "query causes: raw control bytes in the text: $(od -c "$TMP/H.txt" | head -20)"
grep -qF '\x1b]0;pwn\x07\x1b[2J\x0d\xff' "$TMP/H.txt" || fail "query causes: the hostile name not shown escaped: $(cat "$TMP/H.txt")"
ok "query causes: a cause name with ESC, BEL, CR and 0xff shows escaped"
"$VH" query --store "$TMP/A.db" timeline 5 --json >"$TMP/A.t.json" || fail "query timeline failed"
[ "$(jq '.intervals | length' "$TMP/A.t.json")" = 300 ] || fail "timeline of node 5: $(jq '.intervals | length' "$TMP/A.t.json") intervals, want 300"
ok "A: store = report = /metrics for 8 nodes ($used datagrams); integrity ok; WAL; causes, timeline of 300 intervals"
# a new collector on the store starts from the same totals, and its ranking is the same
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/A.db" --duration 0.1s --json >"$TMP/S.json" \
	2>"$TMP/S.err" || fail "collector on the store failed: $(cat "$TMP/S.err")"
STORED='[.nodes[] | {node, datagrams, lost, noise_ns, compute_ns, class_ns, intervals}]'
[ "$(jq -cS "$STORED" "$TMP/A.json")" = "$(jq -cS "$STORED" "$TMP/S.json")" ] || fail "the store did not reload the totals"
[ "$(jq -cS "$RANK" "$TMP/A.json")" = "$(jq -cS "$RANK" "$TMP/S.json")" ] || fail "the reloaded ranking differs"
ok "A: a collector restarted on the store goes on from the same totals and ranking"
grep -q "state snapshot of .* loaded (8 nodes)" "$TMP/S.err" && grep -q ": 0 datagrams after the snapshot replayed" "$TMP/S.err" ||
	fail "the restart did not start from the state snapshot: $(cat "$TMP/S.err")"
# the same start without the snapshot replays every stored datagram and reports the same
sqlite3 "$TMP/A.db" ".backup '$TMP/R.db'" && sqlite3 "$TMP/R.db" 'DELETE FROM state' || fail "cannot copy the store"
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/R.db" --duration 0.1s --json >"$TMP/R.json" \
	2>"$TMP/R.err" || fail "collector on the store without a snapshot failed: $(cat "$TMP/R.err")"
grep -q ": $used datagrams replayed" "$TMP/R.err" || fail "without a snapshot: not every datagram replayed: $(cat "$TMP/R.err")"
# but for the rotation (commands sent, slots), which a replay cannot rebuild and the snapshot keeps
NOROT='del(.commands, .jobs[].rotation, .jobs[].slots, .nodes[].commands, .nodes[].slots_sampled)'
[ "$(jq -cS "$NOROT" "$TMP/S.json")" = "$(jq -cS "$NOROT" "$TMP/R.json")" ] ||
	fail "start from the snapshot != start replaying the history: $(diff <(jq -S "$NOROT" "$TMP/S.json") <(jq -S "$NOROT" "$TMP/R.json") | head -20)"
[ "$(jq .commands.sent "$TMP/S.json")" -gt 0 ] && [ "$(jq .commands.sent "$TMP/S.json")" = "$(jq .commands.sent "$TMP/A.json")" ] ||
	fail "the snapshot did not keep the rotation's commands: $(jq -c .commands "$TMP/S.json") vs $(jq -c .commands "$TMP/A.json")"
ok "A: the restart loaded the state snapshot (0 datagrams replayed); its report = a full replay's ($used datagrams), and it keeps the rotation's $(jq .commands.sent "$TMP/A.json") commands"

# the tables for people: 80 columns by default, pos not rank, a legend, verdict words, local times, names
fits80() { awk -v w="$2" 'length > 80 { print w ": " length ": " $0; bad = 1 } END { exit bad }' "$1" || fail "$2 over 80 columns"; }
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/A.db" --job A --duration 0.1s >"$TMP/S.txt" 2>/dev/null ||
	fail "collector (text) on the store failed"
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/A.db" --job A --duration 0.1s --wide >"$TMP/S.wide" 2>/dev/null ||
	fail "collector --wide on the store failed"
cat "$TMP/S.txt"
fits80 "$TMP/S.txt" "the collector's table"
grep -qE "^pos +node +delay_us +slowest +noise_ms +hyp_ms +lost +st +top source$" "$TMP/S.txt" ||
	fail "the collector's table has not its columns: $(grep -m1 node "$TMP/S.txt")"
grep -q "^job A (" "$TMP/S.txt" || fail "the job is not named as given: $(grep -m1 '^job' "$TMP/S.txt")"
grep -q "^pos: place in the ranking (1 = the slowest)" "$TMP/S.txt" || fail "no legend under the collector's table"
[ "$(grep -cE '^ *[1-8] +[1-8] ' "$TMP/S.txt")" = 8 ] || fail "the collector's table has not 8 node rows"
grep -qE "^ +pos +node .* s_ivs +c_ivs .* temp_cv .* state +top source$" "$TMP/S.wide" ||
	fail "--wide: not every column: $(grep -m1 node "$TMP/S.wide")"
grep -q "s_ivs, c_ivs: intervals reported in detail" "$TMP/S.wide" || fail "--wide: no legend of s_ivs c_ivs temp_cv"
"$VH" query --store "$TMP/A.db" ranking >"$TMP/A.r.txt" || fail "query ranking (text) failed"
fits80 "$TMP/A.r.txt" "query ranking"
grep -qE "^ +pos +node +delay_us" "$TMP/A.r.txt" && grep -q "over the stored intervals in the range" "$TMP/A.r.txt" ||
	fail "query ranking: no pos column or no word on its window: $(cat "$TMP/A.r.txt")"
"$VH" query --store "$TMP/A.db" timeline 5 >"$TMP/A.t.txt" || fail "query timeline (text) failed"
fits80 "$TMP/A.t.txt" "query timeline"
grep -qE "^-- [0-9]{4}-[0-9]{2}-[0-9]{2} " "$TMP/A.t.txt" || fail "query timeline: no day line"
awk 'NR > 2 && $1 ~ /^[0-9]+$/ { n++; if ($2 !~ /^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9][0-9][0-9]$/ || $3 != "A" ||
	$NF !~ /^(none|noise|imbalance|unexplained)$/) bad++ } END { exit !(n == 300 && !bad) }' "$TMP/A.t.txt" ||
	fail "query timeline: not 300 rows of local time, job A, verdict word: $(sed -n 1,5p "$TMP/A.t.txt")"
[ "$(jq -r '.intervals[0].verdict_name' "$TMP/A.t.json")" != null ] || fail "timeline --json: no verdict_name"
# why is node 5 slow: its causes alone; their intervals are its timeline's
"$VH" query --store "$TMP/A.db" causes A --node 5 --json >"$TMP/A.c5.json" || fail "query causes --node failed"
[ "$(jq .node "$TMP/A.c5.json")" = 5 ] && [ "$(jq .intervals "$TMP/A.c5.json")" = 300 ] &&
	[ "$(jq .nodes "$TMP/A.c5.json")" = 1 ] ||
	fail "causes --node 5: $(jq -c '{node, intervals, nodes}' "$TMP/A.c5.json"), want node 5, 300 intervals, 1 node"
"$VH" query --store "$TMP/A.db" causes A --node 5 >"$TMP/A.c5.txt" || fail "query causes --node (text) failed"
head -1 "$TMP/A.c5.txt" | grep -q "^job A ([0-9a-f]*), node 5$" || fail "causes --node: heading $(head -1 "$TMP/A.c5.txt")"
fits80 "$TMP/A.c5.txt" "query causes --node"
expect_err 2 "--node is for causes" "$VH" query --store "$TMP/A.db" ranking --node 5
ok "tables: the collector's and query's within 80 columns (pos, legend, verdict words, local times, the job's name); causes --node 5"

# ---------------- B: kill -9 mid-run
start_collector B --slot 200ms --job B --store "$TMP/B.db" --period 100ms
run_nodes B 600 # 6 s
sleep 3
before=$(grep '^nodes ' "$TMP/B.err" | tail -1 | sed 's/.* used \([0-9]*\) .*/\1/')
sleep 1.2
last=$(grep '^nodes ' "$TMP/B.err" | tail -1 | sed 's/.* used \([0-9]*\) .*/\1/')
kill -KILL "$CPID"
wait "$CPID" 2>/dev/null
wait_nodes B
sent=$(cat "$TMP"/B.node*.json | jq -s 'map(.datagrams) | add')
integrity "$TMP/B.db"
kept=$(sqlite3 "$TMP/B.db" 'SELECT count(*) FROM datagram')
[ -n "$before" ] && [ "$before" -gt 0 ] || fail "no status line before the kill: $(tail -3 "$TMP/B.err")"
[ "$kept" -ge "$before" ] || fail "kill -9: the store kept $kept datagrams, $before were accepted 1.2 s before the kill"
[ "$kept" -le "$sent" ] || fail "kill -9: the store kept $kept datagrams, the nodes sent $sent"
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/B.db" --duration 0.1s --json >"$TMP/B2.json" \
	2>"$TMP/B2.err" || fail "collector on the store after kill -9 failed: $(cat "$TMP/B2.err")"
[ "$(jq .datagrams.ok "$TMP/B2.json")" = "$kept" ] || fail "reopened: $(jq .datagrams.ok "$TMP/B2.json") datagrams reloaded, $kept stored"
"$VH" query --store "$TMP/B.db" ranking --json | jq -e '.jobs[0].ranking | length == 8' >/dev/null || fail "query after kill -9"
ok "B: kill -9: the store opens again, integrity ok, $kept datagrams kept (>= $before accepted 1.2 s before; $last at the last status line ~0.1 s before; $sent sent in all)"

# ---------------- C: damage is reported, never repaired over
cp "$TMP/A.db" "$TMP/bad.db"
dd if=/dev/urandom of="$TMP/bad.db" bs=4096 seek=3 count=4 conv=notrunc status=none
cp "$TMP/bad.db" "$TMP/bad.orig"
expect_err 5 "damaged database" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/bad.db" --duration 0.1s -q
cmp -s "$TMP/bad.db" "$TMP/bad.orig" || fail "the damaged store was changed"
cp "$TMP/A.db" "$TMP/new.db"
sqlite3 "$TMP/new.db" 'PRAGMA user_version = 99'
expect_err 5 "newer" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/new.db" --duration 0.1s -q
expect_err 5 "newer" "$VH" query --store "$TMP/new.db" ranking
head -c 3000 /dev/urandom >"$TMP/junk.db"
cp "$TMP/junk.db" "$TMP/junk.orig"
expect_err 5 "not a database" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/junk.db" --duration 0.1s -q
expect_err 5 "not a database" "$VH" query --store "$TMP/junk.db" ranking
cmp -s "$TMP/junk.db" "$TMP/junk.orig" || fail "a foreign file given as store was changed"
sqlite3 "$TMP/other.db" 'CREATE TABLE t(x)'
expect_err 5 "not a vnoise store" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/other.db" --duration 0.1s -q
expect_err 2 "unknown query" "$VH" query --store "$TMP/A.db" slowest
expect_err 2 "is not a time" "$VH" query --store "$TMP/A.db" --from yesterday ranking
expect_err 4 "no interval" "$VH" query --store "$TMP/A.db" timeline 99
ok "C: damaged, newer, foreign and other databases: exit 5 in one line, files untouched"

# ---------------- D: a store of the old format (a capture) is imported
cp "$TMP/A.pcap" "$TMP/old.pcap"
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/old.pcap" --duration 0.1s --json >"$TMP/D.json" \
	2>"$TMP/D.err" || fail "import failed: $(cat "$TMP/D.err")"
grep -q "imported into $TMP/old.db" "$TMP/D.err" || fail "the import does not say where: $(cat "$TMP/D.err")"
cmp -s "$TMP/old.pcap" "$TMP/A.pcap" || fail "the old capture was not kept as it was"
integrity "$TMP/old.db"
[ "$(jq -cS "$STORED" "$TMP/A.json")" = "$(jq -cS "$STORED" "$TMP/D.json")" ] || fail "imported totals differ"
"$VH" query --store "$TMP/old.db" ranking --json >"$TMP/D.q.json" || fail "query on the imported store"
[ "$(jq -cS "$RANK" "$TMP/A.json")" = "$(jq -cS "$RANK" "$TMP/D.q.json")" ] || fail "imported ranking differs"
# given again, the capture is not imported twice: the database made from it is used
"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$TMP/old.pcap" --duration 0.1s --json >"$TMP/D2.json" \
	2>"$TMP/D2.err" || fail "second start on the capture failed: $(cat "$TMP/D2.err")"
[ "$(jq .datagrams.ok "$TMP/D2.json")" = "$(jq .datagrams.ok "$TMP/D.json")" ] || fail "the capture was imported twice"
ok "D: the old capture store imported into old.db ($(jq .datagrams.ok "$TMP/D.json") datagrams), kept, same totals and ranking"

# ---------------- E: durability
strace -f -qq -e trace=fdatasync,fsync -y -o "$TMP/E.strace" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 \
	--store "$TMP/E.db" --slot 0 --period 100ms >/dev/null 2>"$TMP/E.err" &
SPID=$!
PIDS+=("$SPID")
for _ in $(seq 200); do
	PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/E.err")
	[ -n "$PORT" ] && break
	sleep 0.05
done
[ -n "$PORT" ] || fail "collector E did not start: $(cat "$TMP/E.err")"
grep -q "(WAL, synchronous=FULL)" "$TMP/E.err" || fail "the collector does not say it runs synchronous=FULL: $(cat "$TMP/E.err")"
[ "$(sqlite3 "$TMP/E.db" 'PRAGMA journal_mode')" = wal ] || fail "E: the store is not in WAL mode"
syncs0=$(grep -c 'E\.db-wal>' "$TMP/E.strace")
run_nodes E 200 # 2 s
wait_nodes E
sleep 1.2 # every datagram is in a committed batch (0.5 s) by now
syncs=$(($(grep -c 'E\.db-wal>' "$TMP/E.strace") - syncs0))
used=$(grep '^nodes ' "$TMP/E.err" | tail -1 | sed 's/.* used \([0-9]*\) .*/\1/')
sent=$(cat "$TMP"/E.node*.json | jq -s 'map(.datagrams) | add')
CPID=$(pgrep -P "$SPID" -x vnoise-host)
[ -n "$CPID" ] || fail "E: no collector under strace"
kill -KILL "$CPID"
wait "$SPID" 2>/dev/null
# a commit every 0.5 s of traffic and the accounting's every second: at least 4 in 3 s, each synced
[ "$syncs" -ge 4 ] || fail "E: the WAL was synced $syncs times in 3 s of commits (synchronous=FULL syncs each): $(grep -v resumed "$TMP/E.strace" | head -5)"
integrity "$TMP/E.db"
kept=$(sqlite3 "$TMP/E.db" 'SELECT count(*) FROM datagram')
[ "$used" = "$sent" ] || fail "E: the collector used $used of the $sent datagrams sent"
[ "$kept" = "$used" ] || fail "E: kill -9 1.2 s after the last datagram: the store kept $kept of the $used committed"
ok "E: WAL (sqlite3 shell), the WAL synced $syncs times in 3 s of commits (strace), kill -9 after the commits lost none ($kept datagrams)"

# ---------------- F: retention
expect_err 2 "needs a unit" "$VH" collect -k "$KEY" --retain 30 --store "$TMP/F.db"
expect_err 2 "not 0, forever or a time" "$VH" collect -k "$KEY" --retain 10ms --store "$TMP/F.db"
start_collector F --slot 0 --store "$TMP/F.db" --retain 3s --period 100ms --metrics 127.0.0.1:0
metrics_port "$TMP/F.err"
run_nodes F 100 # 1 s
wait_nodes F
first=$(cat "$TMP"/F.node*.json | jq -s 'map(.datagrams) | add')
sleep 0.7 # committed
[ "$(sqlite3 "$TMP/F.db" 'SELECT count(*) FROM datagram')" = "$first" ] || fail "F: rows deleted before they were 3 s old"
sleep 4 # 3 s old, then a step of the retention (one a second)
for t in datagram interval cause job_interval; do
	[ "$(sqlite3 "$TMP/F.db" "SELECT count(*) FROM $t")" = 0 ] || fail "F: $t keeps $(sqlite3 "$TMP/F.db" "SELECT count(*) FROM $t") rows older than --retain 3s"
done
deleted=$(grep '^nodes ' "$TMP/F.err" | tail -1 | sed 's/.* store-deleted \([0-9]*\).*/\1/')
[ -n "$deleted" ] && [ "$deleted" -gt "$first" ] || fail "F: store-deleted '$deleted', want > $first (the datagrams, their intervals...)"
m=$(curl -sf "http://127.0.0.1:$MPORT/metrics" | sed -n 's/^vnoise_collect_store_deleted_total \([0-9]*\)$/\1/p')
[ "$m" = "$deleted" ] || fail "F: /metrics store_deleted '$m' != the status line's $deleted"
[ "$(sqlite3 "$TMP/F.db" 'SELECT count(*) FROM node')" = 8 ] || fail "F: the node table lost rows to the retention"
run_nodes F2 100
wait_nodes F2
young=$(sqlite3 "$TMP/F.db" 'SELECT count(*) FROM datagram')
kill -TERM "$CPID"
wait "$CPID" || fail "collector F exited $?: $(tail -3 "$TMP/F.err")"
[ "$young" -gt 0 ] || fail "F: the young rows were deleted too"
grep -q "store $TMP/F.db: [0-9]* rows older than --retain deleted" "$TMP/F.err" || fail "F: no exit line with the rows deleted: $(tail -3 "$TMP/F.err")"
ok "F: --retain 3s: every row older deleted while running ($deleted rows, = /metrics), $young young datagrams kept, nodes kept"
