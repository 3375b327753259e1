#!/bin/bash
# Host daemon cost, measured on a harness VM (tests/vm/vm.bash): a 2-vCPU QEMU TCG
# guest with vCPU 0 pinned to host CPU 0 and vCPU 1 to CPU 1, monitored by `vnoise-host record -p 1s`.
#  1. Idle guest: the daemon's CPU per monitored vCPU (target <= 0.1% of a core per vCPU with the dispatch
#     log on), with the dispatch log, with --no-irqs and with --no-dispatch (counters only). Both the whole
#     run (self_cpu_ns / duration_ns, startup included: BPF load and verification, libvirt connection) and
#     the steady state (the daemon threads' schedstat run time sampled 1 s after start and 1 s before the
#     end, startup and exit excluded); wait4's user+sys of the daemon (bash `times`) cross-checks
#     self_cpu_ns. Next to it the kernel-side cost of the dispatch log (bpf_run_ns / duration): paid by the
#     host in the traced contexts, not by the daemon. It counts the programs' run time only (not the
#     tracepoint call or the BPF_ENABLE_STATS clock reads around each run), so it is a lower bound.
#  2. Dispatch log ns/event per program (run_time_ns / run_cnt): in the idle run; under a pipe storm on
#     CPU 0 while the guest keeps vCPU 0 busy (every switch on CPU 0 is emitted: vCPU 0 is either running
#     there or out from there); and under the same storm after vCPU 0 is re-pinned to CPU 1 (no vCPU on or
#     out from CPU 0: the filter's fast path).
# Figures only, never pass/fail. Usage: bench/host_cost.sh [SECONDS]   (root; default 20 s per idle run,
# storms max(6, SECONDS/2) s; about 4 x SECONDS + 25 s in all). Needs build/vnoise-host, build/bench/storm.
set -u
# shellcheck source-path=SCRIPTDIR source=lib/vmbench.bash
. "$(dirname "$0")/lib/vmbench.bash"
vmbench_init host_cost 6 "$@"
STORM=$BUILD/bench/storm
SETTLE=5
URI=qemu:///system
SSECS=$((SECS / 2 > 6 ? SECS / 2 : 6))

echo "# host_cost: vnoise-host on a 2-vCPU TCG guest (vCPU 0 -> CPU 0, vCPU 1 -> CPU 1), -p 1s," \
	"$SECS s per idle run, $SSECS s per storm run"
echo "# reproduce: make && sudo bench/host_cost.sh $SECS"
vmbench_need_root host_cost
for f in "$VH" "$STORM"; do
	[ -x "$f" ] || {
		echo "host_cost: not measured: $f not built (make)"
		exit 1
	}
done

tmp=$(mktemp -d /tmp/vnoise-host-cost.XXXXXX)
REC_PID='' REC_JOB='' STORM_PID=''
cleanup() {
	local p
	for p in $REC_PID $REC_JOB $STORM_PID; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT # vm.bash chains its teardown before this
export VM_GUEST_DIR=$tmp/guest # the guest is built here (kernel and initramfs cached in .cache/vm)
# shellcheck source-path=SCRIPTDIR source=../tests/vm/vm.bash
. "$ROOT/tests/vm/vm.bash"

now_us() { echo "${EPOCHREALTIME/./}"; }
# The daemon's CPU time so far (ns), all threads: schedstat run time, which getrusage also reports.
cpu_ns() { awk '{ s += $1 } END { printf "%d\n", s }' "/proc/$REC_PID"/task/*/schedstat 2>/dev/null; }
# sleep_until S: until S seconds after the record started
sleep_until() {
	local us=$((REC_T0 + $1 * 1000000 - $(now_us)))
	[ "$us" -gt 0 ] && sleep "$(awk -v u="$us" 'BEGIN { printf "%.3f", u / 1e6 }')"
	return 0
}
# steady_sample NAME: append "time_us cpu_ns" to $tmp/NAME.steady
steady_sample() { echo "$(now_us) $(cpu_ns)" >>"$tmp/$1.steady"; }

# rec_start NAME SECONDS [vnoise-host options]: start `vnoise-host record` in the background and return
# once its startup is over (the record file is written); REC_T0 is then. Summary in $tmp/NAME.json,
# wait4 times of the daemon (bash `times`, children) in $tmp/NAME.times.
rec_start() {
	local name=$1 secs=$2 i
	shift 2
	(
		"$VH" record -D "$VM_NAME" -p 1s -d "${secs}s" -o "$tmp/$name.rec" --json "$@" \
			>"$tmp/$name.json" 2>"$tmp/$name.err" &
		echo $! >"$tmp/$name.pid"
		wait $!
		rc=$?
		times >"$tmp/$name.times"
		exit $rc
	) &
	REC_JOB=$!
	for i in $(seq 600); do
		[ -z "$REC_PID" ] && [ -s "$tmp/$name.pid" ] && REC_PID=$(cat "$tmp/$name.pid")
		[ -s "$tmp/$name.rec" ] && break
		kill -0 "$REC_JOB" 2>/dev/null || break
		[ "$i" = 600 ] && echo "host_cost: $name: no record file after 30 s" >&2
		sleep 0.05
	done
	REC_T0=$(now_us)
}
# rec_wait NAME: wait for the record to end; non-zero (with its stderr) when it failed
rec_wait() {
	local rc
	wait "$REC_JOB"
	rc=$?
	REC_JOB='' REC_PID=''
	if [ "$rc" -ne 0 ] || [ ! -s "$tmp/$1.json" ] || ! jq -e '.schema == "vnoise.host/1"' "$tmp/$1.json" >/dev/null 2>&1; then
		echo "host_cost: $1: vnoise-host record failed (exit $rc): $(head -c 600 "$tmp/$1.err")"
		echo '{}' >"$tmp/$1.json"
		return 1
	fi
}
# storm_run SECONDS: `storm pipe 0 SECONDS` in the background (killed on exit), output in $tmp/storm.out
storm_run() {
	"$STORM" pipe 0 "$1" >>"$tmp/storm.out" 2>&1 &
	STORM_PID=$!
	wait "$STORM_PID"
	STORM_PID=''
}

vm_setup >&2 || {
	echo "host_cost: not measured: vm_setup failed"
	exit 1
}
vm_start --pin0 0 --pin 1:1 >&2 || {
	echo "host_cost: not measured: vm_start failed"
	exit 1
}
vm_wait_ready 90 >&2 || {
	echo "host_cost: not measured: guest not ready"
	exit 1
}
echo "# guest $VM_NAME ready ${VM_BOOT_SECS} s after start, settling $SETTLE s"
sleep "$SETTLE"

# ---- 1: idle guest, three modes ----
for mode in dispatch no-irqs no-dispatch; do
	opt=()
	[ "$mode" != dispatch ] && opt=("--$mode")
	rec_start "$mode" "$SECS" "${opt[@]}"
	sleep_until 1
	steady_sample "$mode"
	sleep_until $((SECS - 1))
	steady_sample "$mode"
	rec_wait "$mode"
done

echo
echo "## idle guest: host daemon CPU per monitored vCPU, % of one core (target <= 0.1 with the dispatch log on)"
echo "#  whole run: self_cpu_ns / duration_ns / vCPUs (startup included);  steady: daemon threads' schedstat"
echo "#  run time from 1 s after start to 1 s before the end / vCPUs (startup excluded);  wait4: user+sys of"
echo "#  the exited daemon / duration / vCPUs (cross-check of whole run);  startup: self_cpu_ns - steady rate x"
echo "#  duration;  exit: wait4 - self_cpu_ns (after the summary: unload, exit);  kernel BPF: bpf_run_ns /"
echo "#  duration / vCPUs (the dispatch log's programs, paid by the host, not the daemon)"
printf '%-13s %9s %8s %8s %9s %6s %11s %9s %7s\n' mode "whole run" steady wait4 startup exit "kernel BPF" \
	"BPF runs" dropped
for mode in dispatch no-irqs no-dispatch; do
	j=$tmp/$mode.json
	read -r dur self nv bpfns bpfev drop < <(jq -r '[.duration_ns // 0, .self_cpu_ns // 0,
		([.domains[]?.vcpus | length] | add // 0), .dispatch.bpf_run_ns // "-", .dispatch.bpf_events // "-",
		.dispatch.dropped // "-"] | map(tostring) | join(" ")' "$j")
	read -r ta ca tb cb < <(tr '\n' ' ' <"$tmp/$mode.steady" 2>/dev/null)
	w4=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); n += p[1] * 60 + p[2] }
		printf "%d", n * 1e9 }' "$tmp/$mode.times" 2>/dev/null)
	[ "$mode" = no-dispatch ] && bpfns=- bpfev=- drop=-
	awk -v m="--$mode" -v d="$dur" -v s="$self" -v n="$nv" -v b="$bpfns" -v e="$bpfev" -v dr="$drop" \
		-v ta="${ta:-0}" -v ca="${ca:-0}" -v tb="${tb:-0}" -v cb="${cb:-0}" -v w="${w4:-0}" 'BEGIN {
		if (m == "--dispatch") m = "dispatch log"
		if (d <= 0 || n <= 0) { printf "%-13s not measured\n", m; exit }
		rate = (tb > ta && cb >= ca) ? (cb - ca) / ((tb - ta) * 1000) : -1   # ns of CPU per ns
		printf "%-13s %8.3f%% %8s %7.3f%% %6.0f ms %3.0f ms %11s %9s %7s\n", m, 100 * s / d / n,
			rate < 0 ? "-" : sprintf("%.3f%%", 100 * rate / n), 100 * w / d / n,
			rate < 0 ? 0 : (s - rate * d) / 1e6, (w - s) / 1e6,
			b == "-" ? "-" : sprintf("%.3f%%", 100 * b / d / n), e, dr }'
done
echo "#  vCPUs monitored: $(jq '[.domains[]?.vcpus | length] | add // 0' "$tmp/dispatch.json")." \
	"kernel BPF as % of one core for the whole host = vCPUs x the figure"
echo "#  reproduce: $VH record -D DOMAIN -p 1s -d ${SECS}s -o FILE --json [--no-irqs | --no-dispatch]"

# ---- 2: storms on CPU 0 ----
vm_exec "/bin/vnoise-guest measure --cpus 0 --duration $((SSECS + 3))s --helper proc -q >/dev/null 2>&1 &" \
	>/dev/null || echo "host_cost: could not start the guest load on vCPU 0"
sleep 1
rec_start busy "$SSECS"
sleep_until 1
steady_sample busy
storm_run $((SSECS - 3))
steady_sample busy
rec_wait busy
sleep 3 # the guest load ends

virsh -q -c "$URI" vcpupin "$VM_NAME" 0 1 >/dev/null || echo "host_cost: virsh vcpupin $VM_NAME 0 1 failed"
sleep 1
rec_start fast "$SSECS"
sleep_until 1
steady_sample fast
storm_run $((SSECS - 3))
steady_sample fast
rec_wait fast

echo
echo "## dispatch log ns/event per program: run_time_ns / run_cnt (BPF_ENABLE_STATS), runs = run_cnt"
echo "#  idle:  the idle run above ($SECS s)"
echo "#  busy+storm:  guest busy on vCPU 0 (vnoise-guest measure --cpus 0 --helper proc) and storm pipe 0 on its"
echo "#    CPU 0 ($SSECS s run): the emitting path (vCPU 0 is either running on CPU 0 or out from it)"
echo "#  fast path:  vCPU 0 re-pinned to CPU 1 (virsh vcpupin DOMAIN 0 1), storm pipe 0 on CPU 0 ($SSECS s run):"
echo "#    no vCPU on or out from CPU 0, its switches are filtered out"
jq -rn --slurpfile a "$tmp/dispatch.json" --slurpfile b "$tmp/busy.json" --slurpfile c "$tmp/fast.json" '
	def progs($x): [$x[0].dispatch.programs[]?] | map({key: .name, value: .}) | from_entries;
	(progs($a)) as $pa | (progs($b)) as $pb | (progs($c)) as $pc |
	((([$a[0], $b[0], $c[0]] | map(.dispatch.programs[]?.name)) |
	  reduce .[] as $n ([]; if any(.[]; . == $n) then . else . + [$n] end))[] as $n |
	 [$n, ($pa[$n].run_cnt // 0), ($pa[$n].run_time_ns // 0), ($pb[$n].run_cnt // 0), ($pb[$n].run_time_ns // 0),
	  ($pc[$n].run_cnt // 0), ($pc[$n].run_time_ns // 0)] | select(.[1] + .[3] + .[5] > 0) | map(tostring) | join(" ")),
	(["all-programs"] + ([$a[0], $b[0], $c[0]] | map(.dispatch.bpf_events // 0, .dispatch.bpf_run_ns // 0)) |
	 map(tostring) | join(" "))' >"$tmp/progs"
awk 'function ne(c, t) { return c > 0 ? sprintf("%.1f", t / c) : "-" }
	BEGIN { printf "%-31s %10s %8s %12s %8s %12s %8s\n", "program", "idle runs", "ns/ev", "busy+storm",
		"ns/ev", "fast path", "ns/ev" }
	{ if ($1 == "all-programs") $1 = "all programs"
	  printf "%-31s %10d %8s %12d %8s %12d %8s\n", $1, $2, ne($2, $3), $4, ne($4, $5), $6, ne($6, $7) }' \
	"$tmp/progs"
read -r rt_busy rt_fast < <(awk '/round trips/ { x = $NF; gsub(/[^0-9]/, "", x); printf "%s ", x } END { print "" }' \
	"$tmp/storm.out" 2>/dev/null)
for p in dispatch busy fast; do
	j=$tmp/$p.json
	read -r ta ca tb cb < <(tr '\n' ' ' <"$tmp/$p.steady" 2>/dev/null)
	jq -r '[.dispatch.dropped // "-", .duration_ns // 0,
		((.domains[]?.vcpus[]? | select(.vcpu == 0) | .schedstat_exec_ns) // 0), (.domains[]?.vcpus[0].cpu // "-")] |
		map(tostring) | join(" ")' "$j" |
		awk -v ta="${ta:-0}" -v ca="${ca:-0}" -v tb="${tb:-0}" -v cb="${cb:-0}" '{
			printf "%s %s %s %s\n", $1, (tb > ta ? sprintf("%.3f%%", 100 * (cb - ca) / ((tb - ta) * 1000)) : "-"),
			($2 > 0 ? sprintf("%.0f%%", 100 * $3 / $2) : "-"), $4 }'
done >"$tmp/rows"
awk -v rb="${rt_busy:-?}" -v rf="${rt_fast:-?}" '
	{ d[NR] = $1; c[NR] = $2; v[NR] = $3; p[NR] = $4 }
	END {
		printf "%-31s %10s %8s %12s %8s %12s %8s\n", "records dropped", d[1], "", d[2], "", d[3], ""
		printf "%-31s %10s %8s %12s %8s %12s %8s\n", "daemon CPU (steady, % of 1 core)", c[1], "", c[2], "", c[3], ""
		printf "%-31s %10s %8s %12s %8s %12s %8s\n", "vCPU 0 host CPU", p[1], "", p[2], "", p[3], ""
		printf "%-31s %10s %8s %12s %8s %12s %8s\n", "vCPU 0 ran (% of the run)", v[1], "", v[2], "", v[3], ""
		printf "%-31s %10s %8s %12s %8s %12s %8s\n", "storm round trips/s", "-", "", rb, "", rf, ""
	}' "$tmp/rows"
echo "#  reproduce: $VH record -D DOMAIN -p 1s -d ${SSECS}s -o FILE --json while $STORM pipe 0 $((SSECS - 3)) runs"
echo "#    (busy: vm_exec '/bin/vnoise-guest measure --cpus 0 --duration $((SSECS + 3))s --helper proc -q &' first)"
