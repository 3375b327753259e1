#!/bin/bash
# Acceptance 1: injected noise of known size is attributed to the injector thread, for several injection
# models (duty-cycle at normal priority, periodic spikes with and without SCHED_FIFO). Real eBPF, real threads.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
[ "$cpu" -ge 1 ] || skip "needs 2 CPUs (one measured, one for housekeeping)"
DUR=${GT_DURATION:-10}

# case NAME NOMINAL_PCT TOLERANCE_PCT CHECK_NOMINAL INJECT_ARGS...
# For the acceptance cases (CHECK_NOMINAL 1) the attribution is also held to the nominal level. That only
# tests vnoise when the injector itself used about its nominal share: when this VM's host makes it
# overshoot (its wake-ups cost 10-70 us here, more when the host is busy; seen: 1.34% at nominal 1%), the
# case is run again, and if it overshoots again the nominal check is left out, said, and the attribution
# is held to the injector's own bounds (below).
run_case() {
	run_once 1 "$@" && return 0
	echo "again: the injector used $truth%, not its nominal $2 +- $3%"
	run_once 2 "$@"
}

# run_once ATTEMPT NAME ...: 0 done; 1 on the first attempt when the injector missed its nominal level
run_once() {
	local attempt=$1 name=$2 exp=$3 tol=$4 nominal=$5
	shift 5
	start_injector vngt "$TMP/inj.out" --duration "$((DUR + 3))s" "$@"
	local ipid=$INJ_PID
	"$VG" measure --cpus "$cpu" --duration "${DUR}s" --json --top 100 -q >"$TMP/m.json" 2>"$TMP/m.err" ||
		fail "$name: measure failed: $(cat "$TMP/m.err")"
	kill "$ipid" 2>/dev/null
	wait "$ipid" 2>/dev/null
	jq -e '.kernel_helper == "bpf"' "$TMP/m.json" >/dev/null || fail "$name: kernel helper is not bpf"
	local rt noise sum tot
	rt=$(jq '.cpus[0].runtime_ns' "$TMP/m.json")
	noise=$(jq '.cpus[0].noise_ns' "$TMP/m.json")
	sum=$(jq '[.cpus[0].by_class_ns[]] | add' "$TMP/m.json")
	[ "$sum" = "$noise" ] || fail "$name: by_class_ns adds up to $sum, noise_ns is $noise"
	tot=$(jq --arg c "$comm" '[.cpus[0].sources[] | select(.class == "thread" and .name == $c) | .total_ns] | add // 0' "$TMP/m.json")
	pct=$(awk -v t="$tot" -v r="$rt" 'BEGIN { printf "%.4f", 100 * t / r }')
	# Ground truth, two bounds the injector measures itself (its summary line), both as shares of its wall
	# time: busy_ns, its busy loops, is interference for certain (the floor); cpu_ns, all its CPU time, is
	# the ceiling. cpu_ns overstates what the thread took from the CPU: when a wake-up preempts, the kernel
	# skips the back-to-back run-queue clock update (rq_clock_skip_update in wakeup_preempt), so the
	# thread's CPU clock starts at its wake-up inside the timer interrupt, not at the switch; that tail of
	# the interrupt is irq time here, and it is 10-25 us per wake on this VM's host (perf sched_stat_runtime:
	# the first slice after the switch reports ~39 us run in 19 us of wall time). Short spikes at normal
	# priority pay it 100 times a second: 0.1-0.25 points of the 1% case. The attribution is held inside
	# [floor - tol, ceiling + tol]; the nominal level is checked too for the acceptance cases.
	read -r truth floor < <(awk '/cpu_ns=/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "%.4f %.4f\n", 100 * v["cpu_ns"] / v["wall_ns"], 100 * v["busy_ns"] / v["wall_ns"] }' "$TMP/inj.out") || true
	[ -n "$truth" ] && [ -n "$floor" ] || fail "$name: the injector printed no summary: $(cat "$TMP/inj.out")"
	echo "$name: attributed $pct% of runtime to thread:$comm; injector thread: busy loops $floor%, all its CPU $truth% of its time; nominal $exp% (tolerance $tol)"
	between "$pct" "$floor" "$truth" "$tol" ||
		fail "$name: attributed $pct%, outside the injector's busy loops $floor% .. all its CPU $truth% (+- $tol)"
	if [ "$nominal" = 1 ]; then
		if within "$truth" "$exp" "$tol"; then
			within "$pct" "$exp" "$tol" || fail "$name: attributed $pct%, nominal $exp +- $tol"
		elif [ "$attempt" = 1 ]; then
			return 1
		else
			echo "NOTE: $name: the injector's CPU time overshot its nominal level twice (wake-ups charged from the timer interrupt, host noise): attribution held to its own bounds only"
		fi
	fi
	# The injector's time must not hide in another class.
	local others
	others=$(jq --arg c "$comm" '[.cpus[0].sources[] | select(.class == "thread" and .name != $c) | .total_ns] | add // 0' "$TMP/m.json")
	ok "$name (other threads: $others ns)"
}

run_case "spike 200us/20ms fifo:50" 1.0 0.2 1 --spike 200 --every 20ms -P fifo:50
run_case "duty-cycle 0.1% normal" 0.1 0.03 1 --level 0.1
run_case "duty-cycle 0.5% normal" 0.5 0.1 0 --level 0.5
run_case "spike 500us/50ms fifo:10" 1.0 0.2 0 --spike 500 --every 50ms -P fifo:10
run_case "spike 100us/10ms normal" 1.0 0.2 0 --spike 100 --every 10ms
run_case "spike 1000us/100ms fifo:90" 1.0 0.2 0 --spike 1000 --every 100ms -P fifo:90
echo "all ground-truth cases hold"
