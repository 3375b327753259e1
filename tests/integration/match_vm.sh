#!/bin/bash
# Guest<->host matching over the shared-memory channel, with real libvirtd, QEMU TCG,
# the guest agent and eBPF on both sides:
#   - in the guest, `vnoise-guest agent` measures vCPU 0 and publishes into the ivshmem region; a guest
#     injector `vninj...` spikes 500 us every 20 ms on vCPU 0;
#   - on the host, a hog `vnhog...` pinned with vCPU 0 at 50% duty (5 ms every 10 ms);
#   - `vnoise-host record --guest` for 10 s.
# Ground truth: the hog's run time on vCPU 0's pCPU as the same file's host view sees it (dispatch log), the
# injector's spike count and size and its own CPU time, the hog's burst count. The combined view must give
# the hog's time to host_preempt:<hog> (>= 85% of it, and a gap above 1 ms matched to host time for >= 85%
# of its bursts), the injector's to thread:<injector>, net of the host time inside its spikes (at most the
# injector's own CPU time); the same run's guest-only view must show the
# hog's time as unexplained. Clock uncertainty <= 50 us. `report --guest` of the file equals the live view.
# vCPU 0's worst gap (split by source) adds up, its largest part one of the vCPU's sources.
# The bell: heard in that run; held by another client it stays silent and the channel is read every round,
# every spike still matched; with the agent stopped the monitor keeps to the 50 ms grid.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
VH=$BUILD/vnoise-host
VG=$BUILD/vnoise-guest
[ -x "$VH" ] || fail "$VH not built"

vm_setup || fail "vm_setup"
vm_start_agent --cpus 0 --duration 90s -- --pin0 0 --pin 1:1 || fail "the agent does not run"

inj="vninj$$"
inj=${inj:0:15}
hog="vnhog$$"
hog=${hog:0:15}
vm_exec "vnoise-guest inject --cpu 0 --comm $inj --spike 500 --every 20ms >/tmp/inj.log 2>&1 &" ||
	fail "cannot start the guest injector"
sleep 1
"$VG" inject --cpu 0 --comm "$hog" --spike 5000 --every 10ms --quiet >"$TMP/hog.out" 2>&1 &
PIDS+=($!)
sleep 1
# the injector thread's own CPU time (schedstat, ns) in the guest: read around the record below
inj_cpu() {
	vm_exec "for t in /proc/[0-9]*/task/*; do [ \"\$(cat \$t/comm 2>/dev/null)\" = $inj ] && \
		read -r c _ <\$t/schedstat && echo \$c; done" | head -1
}
icpu0=$(inj_cpu)
"$VH" record --guest -D "$VM_NAME" -d 10s -o "$TMP/m.rec" --json >"$TMP/m.json" 2>"$TMP/m.err" ||
	{ cat "$TMP/m.err"; fail "record --guest failed"; }
icpu1=$(inj_cpu)
kill "${PIDS[-1]}" 2>/dev/null
wait "${PIDS[-1]}" 2>/dev/null # its summary (bursts, wall time) written
[ -n "$icpu0" ] && [ -n "$icpu1" ] && [ "$icpu1" -gt "$icpu0" ] ||
	fail "cannot read the injector's CPU time in the guest ('$icpu0', '$icpu1')"
icpu=$((icpu1 - icpu0))
"$VH" report --guest "$TMP/m.rec" >"$TMP/m.txt" || fail "report --guest failed"
cat "$TMP/m.txt"

jq -e '.schema == "vnoise.match/1"' "$TMP/m.json" >/dev/null || fail "schema is not vnoise.match/1"
d='.domains[0]'
v0="$d.vcpus[] | select(.vcpu == 0)"
jq -e "$d.channel.state == \"ok\" and $d.channel.records > 0" "$TMP/m.json" >/dev/null ||
	fail "channel not ok: $(jq -c "$d.channel" "$TMP/m.json")"

# clock
unc=$(jq "$d.clock.uncertainty_ns" "$TMP/m.json")
[ "$unc" != null ] && [ "$unc" -le 50000 ] ||
	fail "clock uncertainty $unc ns (> 50 us): $(jq -c "$d.clock" "$TMP/m.json")"
ok "clock aligned: offset $(jq "$d.clock.offset_ns" "$TMP/m.json") ns +- $unc ns"

# the hog: host truth from the same file's host view
"$VH" report "$TMP/m.rec" --json >"$TMP/h.json" || fail "host report of the record failed"
hog_host=$(jq "[.domains[0].vcpus[] | select(.vcpu == 0) | .preemptors[] | select(.comm == \"$hog\") | .total_ns] | add // 0" "$TMP/h.json")
hog_match=$(jq "[$v0 | .sources[] | select(.class == \"host_preempt\" and .comm == \"$hog\") | .total_ns] | add // 0" "$TMP/m.json")
top_h=$(jq -r "[$v0 | .sources[] | select(.kind == \"hypervisor\")][0].comm" "$TMP/m.json")
echo "hog: host view $hog_host ns, matched host_preempt:$hog $hog_match ns; top hypervisor source $top_h"
[ "$hog_host" -gt 2000000000 ] || fail "the hog ran only $hog_host ns on vCPU 0's CPU"
[ "$top_h" = "$hog" ] || fail "top hypervisor source is $top_h, not the hog"
awk -v m="$hog_match" -v h="$hog_host" 'BEGIN { exit !(m >= 0.85 * h && m <= 1.05 * h) }' ||
	fail "host_preempt:$hog holds $hog_match ns of the hog's $hog_host ns"
# gaps above 1 ms matched to host time: at least one per hog burst in the record's 10 s (85% of them; the
# hog counts its own bursts). Not a share of all the gaps above 1 ms the guest does not explain: under TCG
# with vCPU 0's pCPU half taken, QEMU's own stalls (the vCPU thread running, not guest code) make 10-25% of
# those and the dispatch log has nothing to place them with (hw%); the share ran 82.5-92.1% in 8 runs of
# this boot, with and without the bell, so a fixed 85% of it failed on the machine, not on vnoise.
big=$(jq "$v0 | .big_gaps.count - .big_gaps.guest" "$TMP/m.json")
bigm=$(jq "$v0 | .big_gaps.matched" "$TMP/m.json")
read -r hcount hwall < <(awk '/count=/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	print v["count"], v["wall_ns"] }' "$TMP/hog.out")
[ -n "$hcount" ] && [ "${hwall:-0}" -gt 0 ] || fail "the hog did not report its bursts: $(cat "$TMP/hog.out")"
hb=$(awk -v c="$hcount" -v w="$hwall" 'BEGIN { printf "%d", c * 10e9 / w }')
echo "gaps above 1 ms: $(jq -c "$v0 | .big_gaps" "$TMP/m.json"); hog: $hcount bursts in $hwall ns, $hb in 10 s"
[ "$hb" -ge 500 ] || fail "the hog made only $hb bursts in 10 s (1000 expected)"
awk -v m="$bigm" -v n="$hb" 'BEGIN { exit !(m >= 0.85 * n) }' ||
	fail "$bigm guest gaps above 1 ms matched to host time for the hog's $hb bursts (< 85%)"
ok "hog: host_preempt:$hog holds $(awk -v m="$hog_match" -v h="$hog_host" 'BEGIN { printf "%.1f", 100 * m / h }')% of its run time; $bigm gaps > 1 ms matched for its $hb bursts ($(awk -v m="$bigm" -v n="$big" 'BEGIN { printf "%.1f", 100 * m / n }')% of the $big the guest does not explain)"

# the injector: count and size of its spikes, net of host time
read -r icount itotal imax < <(jq -r "[$v0 | .sources[] | select(.class == \"thread\" and .comm == \"$inj\")][0] | \"\(.count) \(.total_ns) \(.max_ns)\"" "$TMP/m.json")
gtotal=$(jq "[$v0 | .guest_only.sources[] | select(.comm == \"$inj\") | .total_ns] | add // 0" "$TMP/m.json")
# the largest guest thread (under TCG the guest's local timer interrupt, ~170 us each, weighs as much as
# the injector: 4.0-5.2% against 3.9-4.2% in two runs, so it is not compared with interrupts)
top_g=$(jq -r "[$v0 | .sources[] | select(.kind == \"guest\" and .class == \"thread\")][0].comm" "$TMP/m.json")
echo "injector: $icount spikes, $itotal ns net (guest-only view: $gtotal ns), max $imax ns; top guest source $top_g"
[ "$top_g" = "$inj" ] || fail "top guest thread is $top_g, not the injector"
# 10 s / 20 ms = 500 spikes; one spike can span two gaps (the sampler may run in between)
[ "$icount" -ge 450 ] && [ "$icount" -le 1000 ] || fail "injector seen in $icount gaps (500 spikes)"
# net per spike: its 500 us busy loop, less host time inside it, plus its wake-up and sleep in the guest
# kernel (slow under TCG). The ceiling is the injector's own CPU time over a window a little wider than the
# record's (the guest's clock counts the host's preemptions inside its spikes, which the net time does not):
# a fixed ceiling (2 x 500 x 500 us) failed on this machine with or without the bell (506, 535 ms).
awk -v t="$itotal" -v c="$icpu" 'BEGIN { exit !(t >= 0.3 * 500 * 500000 && t <= 1.05 * c) }' ||
	fail "injector net time $itotal ns for 500 spikes of 500 us (its own CPU time: $icpu ns)"
[ "$itotal" -le "$gtotal" ] || fail "net injector time $itotal above the guest-only $gtotal"
ok "injector: thread:$inj in $icount gaps, $(awk -v t="$itotal" 'BEGIN { printf "%.0f", t / 500 / 1000 }') us net per spike (its own CPU time $(awk -v c="$icpu" 'BEGIN { printf "%.0f", c / 500 / 1000 }') us)"

# the guest-only view of the same run: the hog is unexplained there
gun=$(jq "$v0 | .guest_only.classes.unexplained" "$TMP/m.json")
awk -v u="$gun" -v m="$hog_match" 'BEGIN { exit !(u >= 0.9 * m) }' ||
	fail "guest-only unexplained $gun ns < the hog's matched $hog_match ns"
jq -e "[$v0 | .guest_only.sources[] | select(.comm == \"$hog\")] | length == 0" "$TMP/m.json" >/dev/null ||
	fail "the guest-only view names the host hog"
ok "guest-only view: $gun ns unexplained (the hog's $hog_match ns among it)"

# parts add up; the file gives the same combined view
jq -e "$v0 | (.guest | add) + (.hypervisor | add) + .residual_ns == .gap_ns" "$TMP/m.json" >/dev/null ||
	fail "classes do not add up to the gap time"
"$VH" report --guest "$TMP/m.rec" --json | jq -S '.domains' >"$TMP/rep.dom"
jq -S '.domains' "$TMP/m.json" >"$TMP/live.dom"
cmp -s "$TMP/rep.dom" "$TMP/live.dom" || { diff "$TMP/live.dom" "$TMP/rep.dom" | head; fail "report --guest differs from the live view"; }
lat=$(jq "$v0 | .latency.avg_ns" "$TMP/m.json")
ok "classes add up; report --guest equals the live view; latency avg $lat ns"

# The host's worst gap of vCPU 0 (the matcher's split by source): its parts add up to it, and its largest
# part is one of the vCPU's sources with at least that much in one gap (max_ns). What the worst gap is
# varies here: the hog's preemption, vnoise-host's own period work on that pCPU (6 ms once), or a guest
# kernel thread under TCG (khugepaged, 6 ms once). report --guest gives it too (the comparison above) and its
# text shows it.
wj=$(jq -c "$v0 | .worst" "$TMP/m.json")
echo "host worst gap: $(jq -c '{duration_ns, parts: .parts[:3]}' <<<"$wj")"
jq -e '([.parts[].ns] | add) == .duration_ns' <<<"$wj" >/dev/null || fail "the worst gap's parts do not add up: $wj"
read -r wsrc wns < <(jq -r '.parts[0] | "\(.source) \(.ns)"' <<<"$wj")
jq -e --arg s "$wsrc" --argjson n "$wns" "[$v0 | .sources[] | select(.source == \$s and .max_ns >= \$n)] | length == 1" "$TMP/m.json" >/dev/null ||
	fail "the worst gap's largest part $wsrc ($wns ns) is not a source of the vCPU with that much in one gap: $(jq -c "[$v0 | .sources[] | {source, max_ns}]" "$TMP/m.json")"
grep -q "worst gap: " <("$VH" report --guest "$TMP/m.rec") || fail "report --guest (text) has no worst gap"
ok "host worst gap $(($(jq '.duration_ns' <<<"$wj") / 1000)) us: its largest part $wsrc ($((wns / 1000)) us), a source of the vCPU"

# The bell (org.vnoise.bell.0): the agent rang it, so the run above slept between gaps; its rounds are the
# 50 ms grid's plus at most one per ring (figures, not bounds: the cost is bench/match_vm.sh's).
jq -e "$d.bell.state == \"heard\" and $d.bell.rings > 0 and $d.bell.arms >= $d.bell.rings" \
	"$TMP/m.json" >/dev/null || fail "the bell was not heard: $(jq -c "$d.bell" "$TMP/m.json")"
ok "bell heard: $(jq -c "$d.bell" "$TMP/m.json"), $(jq .rounds "$TMP/m.json") rounds in 10 s"

# A bell someone else holds (QEMU serves one client: vnoise-host's connection waits in the backlog and
# never hears a ring): the monitor reads the channel every round and still matches every spike.
command -v socat >/dev/null || fail "socat missing (make deps)"
socat -d -d -u UNIX-CONNECT:"$VM_BELL_SOCK" STDOUT >/dev/null 2>"$TMP/holder.out" &
PIDS+=($!)
for _ in $(seq 50); do grep -q "starting data transfer" "$TMP/holder.out" && break; sleep 0.1; done
grep -q "starting data transfer" "$TMP/holder.out" || fail "cannot hold the bell socket: $(cat "$TMP/holder.out")"
"$VH" record --guest -D "$VM_NAME" -d 5s -o "$TMP/s.rec" --json >"$TMP/s.json" 2>"$TMP/s.err" ||
	{ cat "$TMP/s.err"; fail "record --guest with a held bell failed"; }
kill "${PIDS[-1]}" 2>/dev/null
jq -e "$d.bell.state == \"silent\" and $d.bell.rings == 0" "$TMP/s.json" >/dev/null ||
	fail "a held bell is not silent: $(jq -c "$d.bell" "$TMP/s.json")"
scount=$(jq "[$v0 | .sources[] | select(.class == \"thread\" and .comm == \"$inj\") | .count] | add // 0" "$TMP/s.json")
# 5 s / 20 ms = 250 spikes
[ "$scount" -ge 200 ] || fail "with a silent bell the injector was matched in $scount gaps (250 spikes)"
ok "a held bell: silent, $(jq .rounds "$TMP/s.json") rounds in 5 s (the 5 ms round), injector in $scount gaps"

# The agent not measuring: nothing to match, the monitor sleeps to the 50 ms grid (60 rounds in 3 s, with
# the period ends; the 5 ms round would be 600).
vm_hagent stop >/dev/null || fail "agent stop failed"
"$VH" record --guest -D "$VM_NAME" -d 3s -o "$TMP/q.rec" --json >"$TMP/q.json" 2>"$TMP/q.err" ||
	{ cat "$TMP/q.err"; fail "record --guest with the agent stopped failed"; }
qr=$(jq .rounds "$TMP/q.json")
[ "$qr" -le 150 ] || fail "$qr rounds in 3 s with the agent not measuring (the 50 ms grid: 60)"
ok "agent not measuring: $qr rounds in 3 s"
exit 0
