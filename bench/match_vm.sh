#!/bin/bash
# The guest<->host channel end to end (its latency, and what --guest costs), on a
# harness VM (tests/vm/vm.bash): a 2-vCPU QEMU TCG guest, vCPU 0 on host CPU 0, vCPU 1 on CPU 1; in the guest
# `vnoise-guest agent --cpus 0` (sampler on vCPU 0, kernel helper, publishing into the ivshmem region, clock
# thread on vCPU 1); on the host `vnoise-host serve --guest --json -p 1s` (record's engine, one JSON line per
# period) for SECONDS. Two runs: an idle host, then a host hog pinned with vCPU 0 at 50% duty (5 ms every
# 10 ms). Per run it prints:
#   - latency guest sample -> host report: a gap's end (converted to host time) to the moment the matcher
#     has split it, over every gap that ended after the channel was attached: the average, the max over the
#     whole run and the max after the first second (the first period: the first rounds after attaching);
#   - clock: uncertainty bound at the end, smallest round trip, exchanges;
#   - records read, lost, and gaps matched;
#   - the daemon's CPU (self_cpu_ns): over the whole run (eBPF load and attach included) and in the steady
#     state (from the end of the third period to the last);
#   - the guest agent's CPU on vCPU 1 (its threads other than the sampler, from /proc in the guest);
#   - the monitor's rounds a second and the bell (org.vnoise.bell.0: heard, its rings; none without one);
#   - the floor under any 5 ms poll here: build/bench/tick_floor, an empty loop sleeping to the same 5 ms
#     grid for 10 s in the same state (guest and hog running), after serve has ended.
#   - plain `vnoise-host serve` (no --guest) for the same time right after, its steady CPU: what --guest adds.
# Figures only, never pass/fail. Usage: bench/match_vm.sh [SECONDS [THRESHOLD]]   (root; default 20, at
# least 5; THRESHOLD: the agent's -T, its default otherwise: under TCG the default sees ~6000 gaps a second,
# a gap every round; -T 500us a few dozen, what the bell is for)
set -u
# shellcheck source-path=SCRIPTDIR source=lib/vmbench.bash
. "$(dirname "$0")/lib/vmbench.bash"
vmbench_init match_vm 5 "$@"
THR=${2:-}
if [ -n "$THR" ] && ! [[ $THR =~ ^[0-9]+(ns|us|ms)$ ]]; then
	echo "usage: bench/match_vm.sh [SECONDS [THRESHOLD, e.g. 500us]]" >&2
	exit 2
fi
TARGS=()
[ -n "$THR" ] && TARGS=(-T "$THR")
VG=$BUILD/vnoise-guest
echo "# match_vm: vnoise-host serve --guest --json -p 1s on a 2-vCPU TCG guest running" \
	"vnoise-guest agent --cpus 0${THR:+ -T $THR}, $SECS s per run"
echo "# reproduce: make && sudo bench/match_vm.sh $SECS${THR:+ $THR}"
vmbench_need_root match_vm
tmp=$(mktemp -d /tmp/vnoise-match-vm.XXXXXX)
HOG=''
cleanup() {
	[ -n "$HOG" ] && kill "$HOG" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
export VM_GUEST_DIR=$tmp/guest
. "$ROOT/tests/vm/vm.bash"
vm_setup >/dev/null || exit 1
vm_start_agent --cpus 0 "${TARGS[@]}" --duration $((4 * SECS + 60))s -- --pin0 0 --pin 1:1 >/dev/null ||
	exit 1
agent_cpu() { # guest agent CPU ticks (utime+stime, all threads but the sampler's)
	vm_exec 'p=$(pidof vnoise-guest); t=0; for s in /proc/$p/task/*/stat; do
		set -- $(sed "s/.*) //" $s); [ "${37}" = 0 ] && continue; t=$((t + ${12} + ${13})); done; echo $t'
}
# shellcheck disable=SC2016 # jq's variables, not the shell's
# One JSON line per period (the period's figures; channel, clock and self_cpu_ns are totals so far).
summary='
	def v0: .domains[0].vcpus[] | select(.vcpu == 0);
	def ms(x): x / 1e6 * 100 | floor / 100;
	def pct(x): x * 10000 | floor / 100;
	. as $l | ($l | length) as $n | $l[$n - 1] as $e | ($l[$n - 1].domains[0]) as $d |
	([$l[] | v0 | .latency.gaps] | add) as $lg |
	([$l[] | v0 | .latency.avg_ns * .latency.gaps] | add) as $ls |
	([$l[] | v0 | .latency.max_ns] | max) as $lmax |
	([$l[1:][] | v0 | .latency.max_ns] | max // 0) as $lmax1 |
	(if $n > 3 then ($e.self_cpu_ns - $l[2].self_cpu_ns) / ($e.end_ns - $l[2].end_ns) else null end) as $steady |
	"\($mode): latency guest sample -> host report avg \(ms(if $lg > 0 then $ls / $lg else 0 end)) ms, " +
	"max \(ms($lmax)) ms over \($lg) gaps, max after the first second \(ms($lmax1)) ms; " +
	"clock +- \($d.clock.uncertainty_ns / 1e3 * 10 | floor / 10) us (min rtt \($d.clock.min_rtt_ns / 1e3 * 10 | floor / 10) us, " +
	"\($d.clock.exchanges) exchanges); records \($d.channel.records), lost \($d.channel.lost + $d.channel.guest_dropped + $d.channel.unsynced); " +
	"gaps matched \([$l[] | v0 | .gaps] | add) (>1 ms: \([$l[] | v0 | .big_gaps.matched] | add)/\([$l[] | v0 | .big_gaps.count] | add) to host time); " +
	"vnoise-host CPU \(pct($e.self_cpu_ns / ($e.end_ns - $l[0].start_ns)))% whole run, " +
	"\(if $steady then pct($steady) else "-" end)% steady; " +
	"rounds \(if $e.rounds then ($e.rounds / (($e.end_ns - $l[0].start_ns) / 1e9) | floor) else "-" end)/s, " +
	"bell \($d.bell.state // "-") (\($d.bell.rings // 0) rings); " +
	"guest agent (clock, drain, QGA threads) \($tk / $secs) % of vCPU 1\n" +
	"\($mode): latency max per second (ms): \([$l[] | v0 | ms(.latency.max_ns)] | map(tostring) | join(" "))"'
for mode in idle hog; do
	if [ "$mode" = hog ]; then
		"$VG" inject --cpu 0 --comm vnhog_bench --spike 5000 --every 10ms --quiet >/dev/null 2>&1 &
		HOG=$!
		sleep 1
	fi
	a0=$(agent_cpu)
	"$VH" serve --guest -D "$VM_NAME" -p 1s -d "${SECS}s" --json >"$tmp/$mode.json" 2>"$tmp/$mode.err" ||
		{ echo "match_vm: serve failed:"; tail -3 "$tmp/$mode.err"; exit 1; }
	a1=$(agent_cpu)
	[ -s "$tmp/$mode.json" ] || { echo "match_vm: serve printed nothing:"; tail -3 "$tmp/$mode.err"; exit 1; }
	jq -rs --arg mode "$mode" --argjson secs "$SECS" --argjson tk "$((${a1:-0} - ${a0:-0}))" "$summary" \
		"$tmp/$mode.json"
	"$VH" serve -D "$VM_NAME" -p 1s -d "${SECS}s" --json >"$tmp/$mode.plain.json" 2>"$tmp/$mode.plain.err" ||
		{ echo "match_vm: plain serve failed:"; tail -3 "$tmp/$mode.plain.err"; exit 1; }
	jq -rs --arg mode "$mode" --slurpfile g <(jq -s . "$tmp/$mode.json") '
		def steady(l): (l | length) as $n | if $n > 3 then
			(l[$n - 1].self_cpu_ns - l[2].self_cpu_ns) / (l[$n - 1].end_ns - l[2].end_ns) else null end;
		steady(.) as $p | steady($g[0]) as $q |
		if $p and $q then "\($mode): plain serve (no --guest) \($p * 10000 | floor / 100)% steady; " +
			"--guest adds \(($q - $p) * 10000 | floor / 100) points" else "\($mode): plain serve: too short" end' \
		"$tmp/$mode.plain.json"
	echo "$mode: the floor, an empty 5 ms sleep loop (tick_floor 10 5):" \
		"$("$BUILD/bench/tick_floor" 10 5 | sed -n 's/^period *5.0 ms: //p')"
done
