#!/bin/bash
# Passive mode: `vnoise-guest monitor` follows a busy target process with no sampler.
# Ground truth: an injector of known size on the target's CPU (SCHED_FIFO spikes, then a SCHED_OTHER duty
# cycle) must appear as THREAD noise of the target with the injector as its cause, in --pid and in --cgroup
# mode; --cpus mode must see the CPU's user task run and its interrupts; bad input gets one line and exit 2.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
[ "$cpu" -ge 1 ] || skip "needs 2 CPUs (one for the target, one for housekeeping)"
DUR=5

expect_err 2 "no target" "$VG" monitor --duration 1s
expect_err 2 "no process" "$VG" monitor --pid 999999999 --duration 1s
expect_err 2 "bad CPU list" "$VG" monitor --cpus 0-x
expect_err 2 "not a cgroup v2 directory" "$VG" monitor --cgroup /nonexistent
expect_err 2 "invalid --duration" "$VG" monitor --pid 1 --duration soon

taskset -c "$cpu" sh -c 'while :; do :; done' &
TGT=$!
PIDS+=("$TGT")
sleep 0.2

# check_case NAME EXPECTED_PCT TOL MONITOR_ARGS...: run monitor for DUR s and compare the injector's share
check_case() {
	local name=$1 exp=$2 tol=$3
	shift 3
	"$VG" monitor "$@" --duration "${DUR}s" --json -q >"$TMP/mon.json" 2>"$TMP/mon.err" ||
		fail "$name: monitor failed: $(cat "$TMP/mon.err")"
	jq -e '.schema == "vnoise.monitor/1" and .kind == "summary"' "$TMP/mon.json" >/dev/null ||
		fail "$name: no summary line: $(cat "$TMP/mon.json")"
	local run thr cause pct tot sum
	run=$(jq '.targets[0].run_ns' "$TMP/mon.json")
	thr=$(jq '.targets[0].noise_ns.thread' "$TMP/mon.json")
	tot=$(jq '.targets[0].noise_total_ns' "$TMP/mon.json")
	sum=$(jq '[.targets[0].noise_ns[]] | add' "$TMP/mon.json")
	[ "$sum" = "$tot" ] || fail "$name: noise_ns adds up to $sum, noise_total_ns is $tot"
	cause=$(jq --arg c "$comm" '[.targets[0].causes[] | select(.class == "thread" and (.source | startswith("thread:" + $c + "["))) | .ns] | add // 0' "$TMP/mon.json")
	pct=$(awk -v c="$cause" -v d="$DUR" 'BEGIN { printf "%.2f", 100 * c / (d * 1e9) }')
	echo "$name: target ran $((run / 1000000)) ms, thread noise $((thr / 1000)) us, injector $((cause / 1000)) us = $pct% of ${DUR}s (nominal $exp% +- $tol)"
	within "$pct" "$exp" "$tol" || fail "$name: injector charged $pct% of the time, want $exp +- $tol"
	[ "$cause" -le "$thr" ] || fail "$name: the cause ($cause) exceeds the thread class ($thr)"
	ok "$name"
}

start_injector vnmon "$TMP/inj1.out" --duration "$((DUR + 3))s" --spike 2000 --every 20ms -P fifo:10
check_case "pid, FIFO spikes 2ms/20ms" 10 1.5 --pid "$TGT"
kill "$INJ_PID" 2>/dev/null
wait "$INJ_PID" 2>/dev/null

start_injector vnmon "$TMP/inj2.out" --duration "$((DUR + 3))s" --level 20
check_case "pid, SCHED_OTHER duty cycle 20%" 20 3 --pid "$TGT"
kill "$INJ_PID" 2>/dev/null
wait "$INJ_PID" 2>/dev/null

CG=""
for base in /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -f "$base/cgroup.procs" ] && grep -q cgroup2 <<<"$(stat -f -c %T "$base")" && CG="$base/vnoise-test-$$" && break
done
if [ -n "$CG" ] && mkdir "$CG"; then
	trap 'echo "$TGT" > "$(dirname "$CG")/cgroup.procs" 2>/dev/null; kill "$TGT" 2>/dev/null; sleep 0.1; rmdir "$CG" 2>/dev/null; cleanup_lib' EXIT
	echo "$TGT" >"$CG/cgroup.procs" || fail "cannot move the target into $CG"
	start_injector vnmon "$TMP/inj3.out" --duration "$((DUR + 3))s" --spike 2000 --every 20ms -P fifo:10
	check_case "cgroup, FIFO spikes 2ms/20ms" 10 1.5 --cgroup "$CG"
	kill "$INJ_PID" 2>/dev/null
	wait "$INJ_PID" 2>/dev/null
else
	fail "no cgroup v2 hierarchy to test --cgroup"
fi

# A small periodic cause beside three larger ones keeps its name: a 0.2% injector (one burst a second) while
# three 2% injectors and the timer interrupt hit the same target; it must be charged what it really ran
# (its own thread CPU time, +-30%), not lost to the causes that come and go between its bursts.
big=()
for i in 1 2 3; do
	"$VG" inject --cpu "$cpu" --comm "vnbig$i" --level 2 --duration "$((DUR + 3))s" -q >/dev/null 2>&1 &
	big+=($!)
	PIDS+=($!)
done
start_injector vnsml "$TMP/inj4.out" --duration "$((DUR + 2))s" --level 0.2 -q
"$VG" monitor --pid "$TGT" --duration "${DUR}s" --json -q >"$TMP/small.json" 2>"$TMP/small.err" ||
	fail "small cause: monitor failed: $(cat "$TMP/small.err")"
wait "$INJ_PID" 2>/dev/null
kill "${big[@]}" 2>/dev/null
wait "${big[@]}" 2>/dev/null
got=$(jq -s --arg c "$comm" '[.[] | select(.kind == "summary") | .targets[0].causes[] |
	select(.source | startswith("thread:" + $c + "[")) | .ns] | add // 0' "$TMP/small.json")
own=$(sed -n 's/.*cpu_ns=\([0-9]*\).*/\1/p' "$TMP/inj4.out")
[ -n "$own" ] && [ "$own" -gt 0 ] || fail "small cause: no ground truth from the injector: $(cat "$TMP/inj4.out")"
echo "small cause beside three larger ones: charged $((got / 1000)) us, the injector ran $((own / 1000)) us in $((DUR + 2)) s"
# the monitor covers DUR of the injector's DUR+2 s: between DUR/(DUR+2) of its time and all of it
lo=$((own * DUR * 7 / ((DUR + 2) * 10)))
[ "$got" -ge "$lo" ] && [ "$got" -le $((own * 13 / 10)) ] ||
	fail "small cause: charged $got ns, the injector ran $own ns (want $lo .. $((own * 13 / 10)))"
ok "a small periodic cause keeps its name beside three larger ones"

# CPU mode: the busy user task on the CPU is the target; it ran most of the time and took timer interrupts.
"$VG" monitor --cpus "$cpu" --duration 2s --json -q >"$TMP/cpu.json" 2>"$TMP/cpu.err" ||
	fail "cpu mode: $(cat "$TMP/cpu.err")"
run=$(jq '.targets[0].run_ns' "$TMP/cpu.json")
irqs=$(jq '.targets[0].count.irq' "$TMP/cpu.json")
echo "cpu mode: user tasks ran $((run / 1000000)) ms of 2000, $irqs interrupts"
[ "$run" -gt 1500000000 ] || fail "cpu mode: the busy task ran only $run ns of 2 s"
[ "$irqs" -gt 0 ] || fail "cpu mode: no interrupt seen while the busy task ran"
ok "cpu mode"

# A target that exits ends the run with a summary, marked exited.
sh -c 'sleep 1' &
short=$!
"$VG" monitor --pid "$short" --json -q >"$TMP/exit.json" 2>&1 || fail "monitor of an exiting process failed"
jq -e '.kind == "summary" and .targets[0].exited' "$TMP/exit.json" >/dev/null ||
	fail "no exited summary: $(cat "$TMP/exit.json")"
ok "stops with a summary when the process exits"

# The table: every row has the heading's columns (the target's name last), causes on lines of their own, 80
# columns; JSON lines carry the version right after the schema.
"$VG" monitor --pid "$TGT" --duration 2s >"$TMP/text.out" 2>"$TMP/text.err" || fail "text mode: $(cat "$TMP/text.err")"
rows=$(awk -v tgt="pid:$TGT" '
	$1 == "RUN(ms)" { nh = NF; next }
	$1 ~ /^[0-9.]+$/ && NF > 2 {
		if (!nh || NF < nh) { print "bad row: " $0; exit }
		for (i = 1; i < nh; i++) if ($i !~ /^[0-9.]+$/) { print "bad cell " i ": " $0; exit }
		if ($nh != tgt) { print "bad target: " $0; exit }
		n++; next }
	/^    cause / { if ($2 !~ /^[0-9.]+$/ || $3 != "us") { print "bad cause: " $0; exit } }
	END { print n + 0 }' "$TMP/text.out")
[ "$rows" -ge 3 ] 2>/dev/null || fail "text mode: $rows: $(cat "$TMP/text.out")"
[ "$(wc -L <"$TMP/text.out")" -le 80 ] || fail "text mode is $(wc -L <"$TMP/text.out") columns wide: $(cat "$TMP/text.out")"
jq -e '(keys_unsorted[0:2] == ["schema", "version"]) and .version != ""' "$TMP/exit.json" >/dev/null ||
	fail "JSON: no version right after the schema: $(head -c 200 "$TMP/exit.json")"
ok "text table: $rows rows with the heading's columns, 80 columns; JSON version $(jq -r .version "$TMP/exit.json")"

# monitor pinned beside its target preempts it every period: its own thread is a cause, marked vnoise.
taskset -c "$cpu" "$VG" monitor --pid "$TGT" --period 10ms --duration 1s --json >"$TMP/self.json" 2>&1 ||
	fail "pinned monitor failed: $(cat "$TMP/self.json")"
mine=$(tail -1 "$TMP/self.json" | jq -c '[.targets[0].causes[] | select(.source | startswith("thread:vnoise-guest[")) | .vnoise]')
[ "$mine" = "[true]" ] || fail "the monitor's own thread is not one cause marked vnoise: $mine; $(tail -1 "$TMP/self.json")"
taskset -c "$cpu" "$VG" monitor --pid "$TGT" --period 10ms --duration 1s >"$TMP/self.out" 2>&1 || fail "pinned monitor (text) failed"
grep -Eq '^    cause +[0-9.]+ us  thread:vnoise-guest\[[0-9]+\] \(vnoise\)$' "$TMP/self.out" ||
	fail "the monitor's own thread is not labelled (vnoise): $(tail -6 "$TMP/self.out")"
ok "the monitor's own thread is labelled (vnoise)"
