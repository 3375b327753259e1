#!/bin/bash
# A host task on the pCPU of a halted vCPU is not its preemptor. QEMU TCG domain, vCPU 1 pinned to host CPU 1,
# a host task `vnhog...` pinned to CPU 1 (5 ms of CPU every 10 ms, `vnoise-guest inject` run on the host; its
# own thread CPU time, busy_ns, is the ground truth), `vnoise-host top --json` around it (one document per
# 1 s period: each period's preemptor table starts empty, so the other tasks of a busy host do not crowd the
# task into "<other>"):
#  1. the guest idle on CPU 1 (vCPU 1 halted: its thread sleeps): the task holds at most a quarter of its CPU
#     time as a preemptor of vCPU 1 (preemptors[].total_ns); the rest is reported apart, while the vCPU was
#     halted (halted_tasks[].halted_ns), and the two together account for >= 85% of it;
#  2. the guest busy on CPU 1 (a sampler): the same task holds >= 85% of its CPU time as a preemptor.
# In both, vCPU 1's out-time split adds up: out_ns = preempted + waiting + halted + exits + irq.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"

vm_setup || fail "vm_setup"
vm_start --pin0 0 --pin 1:1 || fail "vm_start"
vm_wait_ready 90 || fail "guest not ready"

hog="vnhog$$"
hog=${hog:0:15}
v1='.domains[] | select(.name == "'"$VM_NAME"'") | .vcpus[] | select(.vcpu == 1)'

# phase NAME: top for 12 s; inside it the task runs 8 s pinned to CPU 1. Sets busy (its CPU time), pre (as
# vCPU 1's preemptor), halted (while vCPU 1 was halted), all ns, summed over the periods.
phase() {
	local name=$1 rec
	"$VH" top -D "$VM_NAME" -p 1s -d 12s -n 1000 --json -q >"$TMP/$name.jsonl" 2>"$TMP/$name.err" &
	rec=$!
	PIDS+=($rec)
	sleep 2
	"$VG" inject --cpu 1 --comm "$hog" --spike 5000 --every 10ms -d 8s --quiet >"$TMP/$name.hog" 2>&1 ||
		fail "$name: the host task failed: $(cat "$TMP/$name.hog")"
	wait "$rec" || {
		cat "$TMP/$name.err"
		fail "$name: top failed"
	}
	[ "$(wc -l <"$TMP/$name.jsonl")" -ge 10 ] || fail "$name: top printed $(wc -l <"$TMP/$name.jsonl") periods"
	# the periods summed into one document of vCPU 1's figures
	jq -s "[.[] | $v1] | {preemptors: [.[].preemptors[]], halted_tasks: [.[].halted_tasks[]],
		out_ns: (map(.out_ns) | add), out_preempted_ns: (map(.out_preempted_ns) | add),
		out_waiting_ns: (map(.out_waiting_ns) | add), out_halted_ns: (map(.out_halted_ns) | add),
		out_exits_ns: (map(.out_exits_ns) | add), out_irq_ns: (map(.out_irq_ns) | add),
		steal_ns: (map(.steal_ns) | add)}" "$TMP/$name.jsonl" >"$TMP/$name.json" || fail "$name: top's JSON"
	jq -se "map($v1 | .out_ns == .out_preempted_ns + .out_waiting_ns + .out_halted_ns + .out_exits_ns +
		.out_irq_ns) | all" "$TMP/$name.jsonl" >/dev/null || fail "$name: a period's out-time split of vCPU 1 does not add up"
	busy=$(sed -n 's/.*busy_ns=\([0-9]*\).*/\1/p' "$TMP/$name.hog")
	[ -n "$busy" ] && [ "$busy" -gt 1000000000 ] || fail "$name: the task's ground truth: $(cat "$TMP/$name.hog")"
	pre=$(jq "[.preemptors[] | select(.comm == \"$hog\") | .total_ns] | add // 0" "$TMP/$name.json")
	halted=$(jq "[.halted_tasks[] | select(.comm == \"$hog\") | .halted_ns] | add // 0" "$TMP/$name.json")
	echo "$name: task CPU ${busy} ns; as vCPU 1's preemptor ${pre} ns," \
		"$(awk -v p="$pre" -v b="$busy" 'BEGIN { printf "%.1f", 100 * p / b }')%;" \
		"while it was halted ${halted} ns; vCPU 1: $(jq -c "del(.preemptors, .halted_tasks)" "$TMP/$name.json")"
}

# ---- 1: vCPU 1 halted (nothing runs on guest CPU 1) ----
phase idle
awk -v p="$pre" -v b="$busy" 'BEGIN { exit !(p <= 0.25 * b) }' ||
	fail "idle vCPU: the task holds $pre of its $busy ns as a preemptor (> 25%)"
awk -v p="$pre" -v h="$halted" -v b="$busy" 'BEGIN { exit !(p + h >= 0.85 * b) }' ||
	fail "idle vCPU: preempted $pre + halted $halted ns account for < 85% of the task's $busy ns"
ok "a task beside a halted vCPU holds <= 25% of its CPU time as its preemptor; the rest is reported as halted"

# ---- 2: vCPU 1 busy (a guest sampler on CPU 1) ----
vm_exec "/bin/vnoise-guest measure --cpus 1 --duration 40s --helper proc -q >/dev/null 2>&1 &" ||
	fail "cannot start the guest load"
sleep 2
phase busy
awk -v p="$pre" -v b="$busy" 'BEGIN { exit !(p >= 0.85 * b) }' ||
	fail "busy vCPU: the task holds $pre of its $busy ns as a preemptor (< 85%)"
ok "the same task beside a busy vCPU holds >= 85% of its CPU time as its preemptor"
