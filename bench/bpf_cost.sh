#!/bin/bash
# Kernel helper cost per event (BPF_ENABLE_STATS run time / run count per program), measured while an event
# storm runs on the monitored CPU so the VM's own preemptions do not dominate the mean (REFERENCE.md §5).
# Prints figures only. Usage: bench/bpf_cost.sh [CPU] [SECONDS]   (root; STORMS="pipe udp" picks storms)
set -u
BUILD=${VNOISE_BUILD:-build}
CPU=${1:-$(sed 's/.*[,-]//' /sys/devices/system/cpu/online)}
SECS=${2:-6}
VG=$BUILD/vnoise-guest
STORM=$BUILD/bench/storm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# bpf_cost: kernel helper ns/event under event storms on CPU $CPU ($SECS s each)"
echo "# reproduce: make && sudo bench/bpf_cost.sh $CPU $SECS"
for storm in ${STORMS:-pipe pipe-cross udp}; do
	"$VG" measure --cpus "$CPU" --duration "${SECS}s" --json -q >"$tmp/$storm.json" 2>"$tmp/$storm.err" &
	mpid=$!
	sleep 1
	"$STORM" "$storm" "$CPU" $((SECS - 2))
	wait "$mpid" || { echo "measure failed: $(cat "$tmp/$storm.err")"; continue; }
	jq -r --arg s "$storm" '.overhead as $o |
		"storm \($s): all programs \($o.bpf_run_ns_per_event | floor) ns/event over \($o.bpf_runs) runs, " +
		"\($o.bpf_events) records, dropped \($o.dropped)",
		($o.bpf_programs[] | select(.runs >= 1000) |
			"  \(.name | .[0:34] | . + (" " * (34 - length))) \(.runs | tostring | . + (" " * (10 - length))) runs  \(.run_ns_per_event * 10 | floor / 10) ns/event")' \
		"$tmp/$storm.json"
done
