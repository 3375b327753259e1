#!/bin/bash
# Hit-to-action latency of vnoise-guest's --on-threshold (target: p99 < 1 ms): a SCHED_FIFO spike of 2 ms
# every 100 ms on the last CPU, measure -s 1ms --on-threshold signal,...,continue for SECONDS; the receiver
# (bench/hit_waiter) takes each signal's delay from the hit gap's end (carried in si_value) to its receipt.
# Figures only. Usage (root): bench/hit_action.sh [SECONDS]
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${VNOISE_BUILD:-build}
SECS=${1:-30}
VG=$BUILD/vnoise-guest
W=$BUILD/bench/hit_waiter
cpu=$(sed 's/.*[,-]//' /sys/devices/system/cpu/online)
echo "# hit_action: ${SECS} s of 2 ms FIFO spikes every 100 ms on CPU $cpu (reproduce: make && sudo bench/hit_action.sh $SECS)"
[ -x "$VG" ] && [ -x "$W" ] || {
	echo "hit_action: not measured: $VG or $W not built (make)"
	exit 1
}
out=$(mktemp)
"$W" $((SECS + 30)) >"$out" &
wpid=$!
sleep 0.2
"$VG" inject --cpu "$cpu" --spike 2ms --every 100ms --priority fifo:50 --duration "$((SECS + 2))s" -q >/dev/null 2>&1 &
ipid=$!
sleep 0.3
"$VG" measure --cpus "$cpu" --duration "${SECS}s" --stop-single 1ms -q \
	--on-threshold "signal,num=10,pid=$wpid" --on-threshold continue >/dev/null 2>"$out.err"
rc=$?
kill "$ipid" 2>/dev/null
wait "$ipid" 2>/dev/null
sleep 0.2
kill -TERM "$wpid"
wait "$wpid"
[ "$rc" = 0 ] || echo "hit_action: measure exited $rc: $(cat "$out.err")"
read -r _ n _ p50 _ p99 _ max < <(grep '^hits' "$out")
echo "hit to signal received: $n hits, p50 $p50 us, p99 $p99 us, max $max us (target p99 < 1000 us)"
rm -f "$out" "$out.err"
