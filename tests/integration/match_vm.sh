#!/bin/bash
# Guest<->host matching over the shared-memory channel (issue 4 acceptance 1), with real libvirtd, QEMU TCG,
# the guest agent and eBPF on both sides:
#   - in the guest, `vnoise-guest agent` measures vCPU 0 and publishes into the ivshmem region; a guest
#     injector `vninj...` spikes 500 us every 20 ms on vCPU 0;
#   - on the host, a hog `vnhog...` pinned with vCPU 0 at 50% duty (5 ms every 10 ms);
#   - `vnoise-host record --guest` for 10 s.
# Ground truth: the hog's run time on vCPU 0's pCPU as the same file's host view sees it (dispatch log), the
# injector's spike count and size. The combined view must give the hog's time to host_preempt:<hog> (>= 85%
# of it, and >= 85% of the guest gaps above 1 ms matched to host time), the injector's to
# thread:<injector>, net of the host time inside its spikes; the same run's guest-only view must show the
# hog's time as unexplained. Clock uncertainty <= 50 us. `report --guest` of the file equals the live view.
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
"$VH" record --guest -D "$VM_NAME" -d 10s -o "$TMP/m.rec" --json >"$TMP/m.json" 2>"$TMP/m.err" ||
	{ cat "$TMP/m.err"; fail "record --guest failed"; }
kill "${PIDS[-1]}" 2>/dev/null
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
# gaps above 1 ms that guest noise does not explain (the injector's spikes stretched by TCG are guest
# noise): at least 85% of them must be matched to host time
big=$(jq "$v0 | .big_gaps.count - .big_gaps.guest" "$TMP/m.json")
bigm=$(jq "$v0 | .big_gaps.matched" "$TMP/m.json")
echo "gaps above 1 ms: $(jq -c "$v0 | .big_gaps" "$TMP/m.json")"
[ "$big" -ge 300 ] || fail "only $big guest gaps above 1 ms"
awk -v m="$bigm" -v n="$big" 'BEGIN { exit !(m >= 0.85 * n) }' ||
	fail "$bigm of $big guest gaps above 1 ms matched to host time (< 85%)"
ok "hog: host_preempt:$hog holds $(awk -v m="$hog_match" -v h="$hog_host" 'BEGIN { printf "%.1f", 100 * m / h }')% of its run time; $bigm of $big gaps > 1 ms matched ($(awk -v m="$bigm" -v n="$big" 'BEGIN { printf "%.1f", 100 * m / n }')%)"

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
# kernel (slow under TCG)
awk -v t="$itotal" 'BEGIN { exit !(t >= 0.3 * 500 * 500000 && t <= 2.0 * 500 * 500000) }' ||
	fail "injector net time $itotal ns for 500 spikes of 500 us"
[ "$itotal" -le "$gtotal" ] || fail "net injector time $itotal above the guest-only $gtotal"
ok "injector: thread:$inj in $icount gaps, $(awk -v t="$itotal" 'BEGIN { printf "%.0f", t / 500 / 1000 }') us net per spike"

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
exit 0
