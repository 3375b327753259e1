#!/bin/bash
# The worst gap explained, the tail, and the threshold actions, against injected noise of known size (guest
# only; real eBPF, real threads, real signals). On the test CPU: a SCHED_FIFO spike of 2 ms every 500 ms
# beside SCHED_FIFO spikes of 100 us every 10 ms.
#  - the tail (record, report --json): p99 within the histogram's bound of the exact order statistic of the
#    same gaps (report --gaps) and among the small spikes' gaps (below), max the 2 ms spike's within 10%;
#  - the worst gap: its parts add up to its duration_ns and name the 2 ms thread for >= 90% of it; the text
#    (record live, report FILE) shows the same worst gap and the tail in 80 columns, no tabs;
#  - --on-threshold signal,...,pid=P with continue and -s 1ms: the waiting process gets one signal per hit,
#    the hits are the 2 ms spikes (one each); shell sees the hit in its environment; trace writes the worst
#    gap's parts and the lead-up, and without continue the run stops (exit 3); a failing action stops its
#    chain (one error line, the signal after it not sent); --on-end runs once at the end.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
[ "$cpu" -ge 1 ] || skip "needs 2 CPUs (one measured, one for housekeeping)"

start_injector vnbig "$TMP/big.out" --spike 2ms --every 500ms --priority fifo:50 --duration 40s -q
big=$comm
start_injector vnsml "$TMP/sml.out" --spike 100us --every 10ms --priority fifo:40 --duration 40s -q
small=$comm

# ---- the worst gap and the tail: record, then the JSON, the gaps and the text of the file ----
# The ground truth of the tail: the small spikes' gaps as this machine makes them (the spike, the timer
# interrupt that wakes it and two switches: ~120 us here for 100 us busy), their median taken from the gaps
# themselves (report --gaps); the exact order statistics of the same gaps check the estimate's bound. The
# samples' top 1% holds the ten 2 ms gaps and the top ~2% of the small spikes' own gaps, which this host
# stretches (its wake-ups cost 10-70 us more when it is busy): p99 is held to the small spikes' gaps,
# 0.8x to 1.6x their median (seen: 1.09x-1.46x), not to the 2 ms ones nor to the timer ticks.
# This machine's host stalls the vCPU for up to ~2.2 ms now and then (no guest event explains them: the
# worst gap is then ~100% unexplained, rightly, and max is the stall's): such a run is taken again (seen: one
# run in four; twice in a row once).
record_once() {
	"$VG" record --cpus "$cpu" --duration 5s -o "$TMP/r.vnr" -q >"$TMP/rec.txt" 2>"$TMP/rec.err" ||
		fail "record failed: $(cat "$TMP/rec.err")"
	"$VG" report "$TMP/r.vnr" --json >"$TMP/m.json" 2>"$TMP/m.err" || fail "report -j failed: $(cat "$TMP/m.err")"
	! jq -e '.cpus[0].worst.parts[0] | .class == "unexplained" and .share_pct > 90' "$TMP/m.json" >/dev/null
}
for try in 1 2 3; do
	record_once && break
	echo "again: the worst gap was a host stall ($(jq -c '.cpus[0].worst | {duration_ns, parts: .parts[:2]}' "$TMP/m.json"))"
	[ "$try" = 3 ] && fail "three runs in a row had a host stall longer than the 2 ms spike as their worst gap"
done
"$VG" report "$TMP/r.vnr" --gaps >"$TMP/gaps.jsonl" 2>"$TMP/g.err" || fail "report --gaps failed"
"$VG" report "$TMP/r.vnr" >"$TMP/rep.txt" 2>"$TMP/rep.err" || fail "report failed: $(cat "$TMP/rep.err")"
jq -r '.duration_ns' "$TMP/gaps.jsonl" | sort -n >"$TMP/d.txt"
read -r p99 max < <(jq -r '.cpus[0].percentiles_ns | "\(.p99) \(.max)"' "$TMP/m.json")
exact99=$(awk '{ a[NR] = $1 } END { r = int(0.99 * NR); if (r < 0.99 * NR) r++; print a[r] }' "$TMP/d.txt")
spike=$(awk '$1 > 90000 && $1 < 1000000 { a[++n] = $1 } END { print a[int((n + 1) / 2)] }' "$TMP/d.txt")
ratio=$(awk -v p="$p99" -v s="$spike" 'BEGIN { printf "%.2f", p / s }')
echo "tail: p99 $p99 ns (exact $exact99 ns from the $(wc -l <"$TMP/d.txt") gaps), max $max ns; the small spikes' median gap $spike ns (p99 = ${ratio}x)"
awk -v r="$ratio" 'BEGIN { exit !(r >= 0.8 && r <= 1.6) }' ||
	fail "p99 $p99 ns is not a small spike's gap (${ratio}x their median $spike ns; want 0.8x-1.6x)"
awk -v e="$p99" -v x="$exact99" 'BEGIN { exit !(e >= x && e <= x * 1.0625) }' ||
	fail "p99 $p99 ns is not within the histogram's bound of the exact $exact99 ns (never below, < 6.25% above)"
within "$max" 2000000 200000 || fail "max $max ns: want the 2 ms spike's within 10%"
[ "$max" = "$(tail -n 1 "$TMP/d.txt")" ] || fail "max is not the longest gap"
[ "$max" = "$(jq '.cpus[0].max_single_ns' "$TMP/m.json")" ] || fail "max is not max_single_ns"
jq -e '.cpus[0].percentiles_by_class_ns.thread.max > 1500000' "$TMP/m.json" >/dev/null ||
	fail "no thread tail in percentiles_by_class_ns"
ok "tail: p99 $p99 ns (exact $exact99; ${ratio}x the small spikes' gap $spike), max $max ns"

jq -e '.cpus[0].worst.parts | length > 0' "$TMP/m.json" >/dev/null || fail "no worst gap parts"
dur=$(jq '.cpus[0].worst.duration_ns' "$TMP/m.json")
sum=$(jq '[.cpus[0].worst.parts[].ns] | add' "$TMP/m.json")
[ "$sum" = "$dur" ] || fail "the worst gap's parts add up to $sum, its duration_ns is $dur"
[ "$dur" = "$max" ] || fail "the worst gap is $dur ns, the longest $max ns"
bigns=$(jq --arg c "$big" '[.cpus[0].worst.parts[] | select(.class == "thread" and (.source | startswith("thread:" + $c + "["))) | .ns] | add // 0' "$TMP/m.json")
share=$(awk -v b="$bigns" -v d="$dur" 'BEGIN { printf "%.1f", 100 * b / d }')
echo "worst gap: $dur ns, thread:$big $bigns ns ($share%)"
jq -c '.cpus[0].worst.parts[:4]' "$TMP/m.json"
awk -v s="$share" 'BEGIN { exit !(s >= 90) }' || fail "the 2 ms thread is $share% of the worst gap (want >= 90%)"
ok "worst gap: its parts add up to it, $share% the 2 ms thread"

sed -n '/^worst gap on CPU/,/^tail of/p' "$TMP/rec.txt" >"$TMP/w.rec"
sed -n '/^worst gap on CPU/,/^tail of/p' "$TMP/rep.txt" >"$TMP/w.rep"
sed 's/^/    | /' "$TMP/w.rec"
grep -q "thread $big\[" "$TMP/w.rec" || fail "record: the worst gap does not name thread $big"
cmp -s "$TMP/w.rec" "$TMP/w.rep" || fail "report shows another worst gap: $(diff "$TMP/w.rec" "$TMP/w.rep")"
grep -A1 '^tail of' "$TMP/rep.txt" | grep -qE "^CPU +samples +p50 +p90 +p99 +p999 +p9999 +max" ||
	fail "no tail table in the text"
! grep -q "$(printf '\t')" "$TMP/rep.txt" || fail "the text has tabs"
[ "$(LC_ALL=C.UTF-8 wc -L <"$TMP/rep.txt")" -le 80 ] || fail "the text runs past 80 columns"
ok "text: the worst gap and the tail in 80 columns; report shows the record's worst gap"

# ---- actions ----
# a waiting process that counts SIGUSR1 and says how many at SIGTERM
waiter() {
	bash -c 'n=0; trap "n=\$((n+1))" USR1; trap "echo \$n >\"$1\"; exit 0" TERM
		while :; do sleep 0.05; done' waiter "$1" &
	WPID=$!
	PIDS+=("$WPID")
	sleep 0.2
}
stop_waiter() {
	kill -TERM "$WPID"
	wait "$WPID" 2>/dev/null
}

waiter "$TMP/sigs"
"$VG" measure --cpus "$cpu" --duration 5s --stop-single 1ms \
	--on-threshold "signal,num=10,pid=$WPID" \
	--on-threshold "shell,command=echo \$VNOISE_HIT_CPU \$VNOISE_HIT_NS >>$TMP/hits" \
	--on-threshold continue --on-end "shell,command=echo end >>$TMP/end" \
	>"$TMP/a.txt" 2>"$TMP/a.err"
rc=$?
sleep 0.2
stop_waiter
[ "$rc" = 0 ] || fail "continue: exit $rc (want 0: the run went on): $(cat "$TMP/a.err")"
nhits=$(sed -n 's/.*--on-threshold: \([0-9]*\) hits\{0,1\}, the chain ran \([0-9]*\) time.*/\1 \2/p' "$TMP/a.err")
read -r hits chains <<<"$nhits"
sigs=$(cat "$TMP/sigs")
echo "continue: $hits hits, the chain ran $chains times, the waiter got $sigs signals, $(wc -l <"$TMP/hits") shell runs"
[ -n "$hits" ] || fail "no hit count on stderr: $(cat "$TMP/a.err")"
[ "$hits" -ge 9 ] && [ "$hits" -le 12 ] || fail "$hits hits in 5 s of 2 ms spikes every 500 ms (want 9..12)"
[ "$sigs" = "$hits" ] || fail "the waiter got $sigs signals for $hits hits"
[ "$(wc -l <"$TMP/hits")" = "$hits" ] || fail "the shell ran $(wc -l <"$TMP/hits") times for $hits hits"
awk -v c="$cpu" '$1 != c || $2 < 1000000 { exit 1 }' "$TMP/hits" || fail "shell: a hit's environment is wrong: $(cat "$TMP/hits")"
[ "$(cat "$TMP/end")" = end ] || fail "--on-end did not run once: $(cat "$TMP/end" 2>/dev/null)"
ok "continue: one signal and one shell run per hit ($hits), --on-end once"

"$VG" measure --cpus "$cpu" --duration 10s --stop-single 1ms \
	--on-threshold "trace,file=$TMP/trace.txt" >"$TMP/t.txt" 2>"$TMP/t.err"
rc=$?
[ "$rc" = 3 ] || fail "trace without continue: exit $rc (want 3: stopped): $(cat "$TMP/t.err")"
sed 's/^/    | /' "$TMP/trace.txt" | head -20
grep -q "^vnoise-guest --on-threshold trace: CPU $cpu, a [0-9.]* us gap" "$TMP/trace.txt" ||
	fail "trace: no hit line"
# (the first hit is a 2 ms spike, or now and then one of this host's stalls: its worst gap then says so)
grep -q "^worst gap on CPU $cpu: [0-9.]* us at" "$TMP/trace.txt" || fail "trace: no worst gap"
grep -qE "^ +[0-9.]+ us +[0-9.]+%  (thread $big\[|unexplained)" "$TMP/trace.txt" ||
	fail "trace: the worst gap's parts name neither thread $big nor a stall"
grep -q "last events inside noise" "$TMP/trace.txt" || fail "trace: no lead-up"
ok "trace: the hit, the worst gap's parts and the lead-up written; the run stopped (exit 3)"

waiter "$TMP/sigs2"
"$VG" measure --cpus "$cpu" --duration 10s --stop-single 1ms --on-threshold "shell,command=exit 7" \
	--on-threshold "signal,num=10,pid=$WPID" --on-threshold continue >"$TMP/f.txt" 2>"$TMP/f.err"
rc=$?
sleep 0.2
stop_waiter
[ "$rc" = 3 ] || fail "a failing action: exit $rc (want 3: the chain stopped before continue)"
[ "$(grep -c 'error: --on-threshold: shell command exited with status 7 (the chain stops)' "$TMP/f.err")" = 1 ] ||
	fail "a failing action: want one error line: $(cat "$TMP/f.err")"
[ "$(cat "$TMP/sigs2")" = 0 ] || fail "the signal after the failing action was sent"
ok "a failing action stops its chain: one line, nothing after it, the run stopped"
