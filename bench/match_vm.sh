#!/bin/bash
# The guest<->host channel end to end (issue 4, acceptance 3: latency; and what --guest costs), on a harness
# VM (tests/vm/vm.bash): a 2-vCPU QEMU TCG guest, vCPU 0 on host CPU 0, vCPU 1 on CPU 1; in the guest
# `vnoise-guest agent --cpus 0` (sampler on vCPU 0, kernel helper, publishing into the ivshmem region, clock
# thread on vCPU 1); on the host `vnoise-host record --guest` for SECONDS. Two runs: an idle host, then a host
# hog pinned with vCPU 0 at 50% duty (5 ms every 10 ms). Per run it prints:
#   - latency guest sample -> host report: a gap's end (converted to host time) to the moment the matcher
#     has split it, over every gap that ended after the channel was attached (latency.avg_ns, max_ns);
#   - clock: uncertainty bound at the end, smallest round trip, exchanges;
#   - records read, lost, and gaps matched; the daemon's CPU (self_cpu_ns / duration);
#   - the guest agent's CPU on vCPU 1 (its threads other than the sampler, from /proc in the guest).
# Figures only, never pass/fail. Usage: bench/match_vm.sh [SECONDS]   (root; default 20)
set -u
# shellcheck source-path=SCRIPTDIR source=lib/vmbench.bash
. "$(dirname "$0")/lib/vmbench.bash"
vmbench_init match_vm 5 "$@"
VG=$BUILD/vnoise-guest
echo "# match_vm: vnoise-host record --guest on a 2-vCPU TCG guest running vnoise-guest agent --cpus 0," \
	"$SECS s per run"
echo "# reproduce: make && sudo bench/match_vm.sh $SECS"
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
vm_start_agent --cpus 0 --duration $((2 * SECS + 60))s -- --pin0 0 --pin 1:1 >/dev/null || exit 1
agent_cpu() { # guest agent CPU ticks (utime+stime, all threads but the sampler's)
	vm_exec 'p=$(pidof vnoise-guest); t=0; for s in /proc/$p/task/*/stat; do
		set -- $(sed "s/.*) //" $s); [ "${37}" = 0 ] && continue; t=$((t + ${12} + ${13})); done; echo $t'
}
for mode in idle hog; do
	if [ "$mode" = hog ]; then
		"$VG" inject --cpu 0 --comm vnhog_bench --spike 5000 --every 10ms --quiet >/dev/null 2>&1 &
		HOG=$!
		sleep 1
	fi
	a0=$(agent_cpu)
	"$VH" record --guest -D "$VM_NAME" -d "${SECS}s" -o "$tmp/$mode.rec" --json >"$tmp/$mode.json" 2>"$tmp/$mode.err" ||
		{ echo "match_vm: record failed:"; tail -3 "$tmp/$mode.err"; exit 1; }
	a1=$(agent_cpu)
	jq -r --arg mode "$mode" --argjson secs "$SECS" --argjson tk "$(( ${a1:-0} - ${a0:-0} ))" '
		.domains[0] as $d | ($d.vcpus[] | select(.vcpu == 0)) as $v |
		"\($mode): latency guest sample -> host report avg \($v.latency.avg_ns / 1e6 * 100 | floor / 100) ms, " +
		"max \($v.latency.max_ns / 1e6 * 100 | floor / 100) ms over \($v.latency.gaps) gaps; " +
		"clock +- \($d.clock.uncertainty_ns / 1e3 * 10 | floor / 10) us (min rtt \($d.clock.min_rtt_ns / 1e3 * 10 | floor / 10) us, " +
		"\($d.clock.exchanges) exchanges); records \($d.channel.records), lost \($d.channel.lost + $d.channel.guest_dropped + $d.channel.unsynced); " +
		"gaps matched \($v.gaps) (>1 ms: \($v.big_gaps.matched)/\($v.big_gaps.count) to host time); " +
		"vnoise-host CPU \(.self_cpu_ns / .duration_ns * 10000 | floor / 100)%; " +
		"guest agent (clock, drain, QGA threads) \($tk / $secs) % of vCPU 1"' "$tmp/$mode.json"
done
