#!/bin/bash
# vnoise-host against a real libvirtd and a QEMU TCG domain:
#  1. vCPU 0 pinned to host CPU 0 and kept busy by a guest sampler; a host hog with a distinctive comm pinned
#     to CPU 0 at 50% duty (5 ms every 10 ms). vnoise-host must attribute >= 90% of the time vCPU 0's thread
#     was switched out to the hog, and its steal (libvirt vcpu.0.delay) must equal schedstat run_delay within
#     1%; the record file's report must equal the live summary.
#  2. Lifecycle: during one `record`, the domain is destroyed and started again (same UUID) and libvirtd is
#     restarted: the file keeps the data from before, vnoise-host re-attaches to the new QEMU process and
#     reconnects to the new libvirtd.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"

vm_setup || fail "vm_setup"
vm_start --pin0 0 --pin 1:1 || fail "vm_start"
vm_wait_ready 90 || fail "guest not ready"

# ---- mapping ----
"$VH" list -D "$VM_NAME" >"$TMP/list" || fail "vnoise-host list failed"
cat "$TMP/list"
qpid=$(cat "/var/run/libvirt/qemu/$VM_NAME.pid")
tid0=$(awk '$1 == "vcpu" && $2 == 0 { print $4 }' "$TMP/list")
[ -n "$tid0" ] && [ "$(cat "/proc/$qpid/task/$tid0/comm")" = "CPU 0/TCG" ] ||
	fail "vCPU 0 tid '$tid0' is not QEMU's 'CPU 0/TCG' thread"
grep -q "shmem=$VM_SHM_NAME shmem_size=4194304" "$TMP/list" || fail "shmem not mapped from the live XML"
ok "vCPU threads, QEMU pid and shmem mapped"

# ---- 1: a host hog pinned with vCPU 0 ----
vm_exec "/bin/vnoise-guest measure --cpus 0 --duration 60s --helper proc -q >/dev/null 2>&1 &" ||
	fail "cannot start the guest load"
sleep 2
hog="vnhog$$"
hog=${hog:0:15}
"$VG" inject --cpu 0 --comm "$hog" --spike 5000 --every 10ms --quiet >"$TMP/hog.out" 2>&1 &
PIDS+=($!)
sleep 1
read -r _ rd0 _ <"/proc/$qpid/task/$tid0/schedstat"
"$VH" record -D "$VM_NAME" -d 10s -o "$TMP/hog.rec" --json >"$TMP/hog.json" 2>"$TMP/rec.err" ||
	{ cat "$TMP/rec.err"; fail "record failed"; }
read -r _ rd1 _ <"/proc/$qpid/task/$tid0/schedstat"
# top: one JSON document per period, each naming the hog on vCPU 0
"$VH" top -D "$VM_NAME" -p 1s -d 3.5s --json -q >"$TMP/top.jsonl" || fail "top failed"
[ "$(wc -l <"$TMP/top.jsonl")" -ge 3 ] || fail "top printed $(wc -l <"$TMP/top.jsonl") periods in 3.5 s"
jq -se "map(.domains[0].vcpus[] | select(.vcpu == 0) | .preemptors[0].comm == \"$hog\") | all" \
	"$TMP/top.jsonl" >/dev/null || fail "a top period does not show the hog first on vCPU 0"
ok "top: $(wc -l <"$TMP/top.jsonl") periods, the hog first on vCPU 0 in each"
kill "${PIDS[-1]}"
wait "${PIDS[-1]}" 2>/dev/null
"$VH" report "$TMP/hog.rec" >"$TMP/hog.txt" || fail "report of the record failed"
cat "$TMP/hog.txt"
v0='.domains[] | select(.name == "'"$VM_NAME"'") | .vcpus[] | select(.vcpu == 0)'
# the time its thread was switched out (out_ns also holds host IRQs and exits, which no task holds)
out=$(jq "$v0 | .out_switched_ns" "$TMP/hog.json")
hogns=$(jq "[$v0 | .preemptors[] | select(.comm == \"$hog\") | .total_ns] | add // 0" "$TMP/hog.json")
steal=$(jq "$v0 | .steal_ns" "$TMP/hog.json")
rdelay=$(jq "$v0 | .schedstat_run_delay_ns" "$TMP/hog.json")
wait_ns=$(jq "$v0 | .wait_ns" "$TMP/hog.json")
echo "vCPU0: out_ns=$out hog_ns=$hogns steal_ns=$steal schedstat_run_delay_ns=$rdelay wait_ns=$wait_ns" \
	"(external schedstat delta around the record: $((rd1 - rd0)))"
[ "$out" -gt 1000000000 ] || fail "vCPU 0 out-time $out ns: the hog did not preempt it"
awk -v h="$hogns" -v o="$out" 'BEGIN { exit !(h >= 0.90 * o) }' ||
	fail "hog has $hogns of $out ns switched-out time (< 90%)"
ok "hog $hog holds $(awk -v h="$hogns" -v o="$out" 'BEGIN { printf "%.1f", 100 * h / o }')% of vCPU 0's switched-out time"
awk -v s="$steal" -v r="$rdelay" 'BEGIN { d = s - r; if (d < 0) d = -d; exit !(r > 0 && d <= 0.01 * r) }' ||
	fail "steal $steal vs schedstat run_delay $rdelay: more than 1% apart"
awk -v s="$wait_ns" -v r="$rdelay" 'BEGIN { d = s - r; if (d < 0) d = -d; exit !(r > 0 && d <= 0.02 * r) }' ||
	fail "dispatch-log wait $wait_ns vs schedstat run_delay $rdelay: more than 2% apart"
ok "steal = schedstat run_delay within 1%; the dispatch log's run delay within 2%"
jq -e "$v0 | .exits == []" "$TMP/hog.json" >/dev/null || fail "exits reported for a TCG domain"
jq -e '.domains[0].exits_note | test("TCG")' "$TMP/hog.json" >/dev/null || fail "no TCG note on exits"
"$VH" report "$TMP/hog.rec" --json | jq -S '.domains' >"$TMP/rep.dom"
jq -S '.domains' "$TMP/hog.json" >"$TMP/live.dom"
cmp -s "$TMP/rep.dom" "$TMP/live.dom" || {
	diff "$TMP/live.dom" "$TMP/rep.dom" | head -20
	fail "report of the file differs from the live summary"
}
ok "report FILE --json equals the live summary"

# ---- 2: lifecycle during one record ----
virsh -q -c qemu:///system dumpxml "$VM_NAME" >"$TMP/dom.xml" || fail "dumpxml"
uuid=$(virsh -q -c qemu:///system domuuid "$VM_NAME")
"$VH" record -D "$VM_NAME" -d 45s -o "$TMP/life.rec" --json >"$TMP/life.json" 2>"$TMP/life.err" &
rec=$!
PIDS+=($rec)
sleep 5
virsh -q -c qemu:///system destroy "$VM_NAME" >/dev/null || fail "destroy"
sleep 2
virsh -q -c qemu:///system create "$TMP/dom.xml" >/dev/null || fail "create again"
[ "$(virsh -q -c qemu:///system domuuid "$VM_NAME")" = "$uuid" ] || fail "restarted domain has another UUID"
vm_wait_ready 90 || fail "restarted guest not ready"
qpid2=$(cat "/var/run/libvirt/qemu/$VM_NAME.pid")
sleep 3
vm_restart_libvirtd || fail "cannot restart libvirtd"
sleep 5
vm_exec "/bin/vnoise-guest measure --cpus 0 --duration 60s --helper proc -q >/dev/null 2>&1 &" || true
wait "$rec"
rc=$?
cat "$TMP/life.err"
[ "$rc" -eq 0 ] || fail "record across the lifecycle exited $rc"
d='.domains[] | select(.uuid == "'"$uuid"'")'
jq -e "[.domains[] | select(.uuid == \"$uuid\")] | length == 1" "$TMP/life.json" >/dev/null ||
	fail "the restarted domain is not the same domain in the summary"
jq -e "$d | .stops >= 1 and .starts >= 2 and .running" "$TMP/life.json" >/dev/null ||
	fail "lifecycle not followed: $(jq -c "$d | {starts, stops, running}" "$TMP/life.json")"
jq -e "$d | .qemu_pid == $qpid2" "$TMP/life.json" >/dev/null || fail "not re-attached to the new QEMU"
jq -e '.reconnects >= 1' "$TMP/life.json" >/dev/null || fail "no reconnect after the libvirtd restart"
grep -q "connection re-established" "$TMP/life.err" || fail "no reconnect message"
"$VH" report "$TMP/life.rec" --json >"$TMP/life.rep" || fail "report of the lifecycle record failed"
# data before the destroy and after both restarts is in the file
first=$(jq "[$d | .vcpus[0].periods] | add" "$TMP/life.rep")
[ "$first" -ge 35 ] || fail "only $first periods for vCPU 0 in 45 s"
"$VH" report "$TMP/life.rec" | grep -q "restarted" || fail "report does not say the domain restarted"
ok "destroy + start and a libvirtd restart during record: kept, re-attached, reconnected"
exit 0
