#!/bin/bash
# Soak: the whole vnoise stack for MINUTES on a harness VM (tests/vm/vm.bash: a 2-vCPU
# QEMU TCG guest, vCPU 0 on host CPU 0, vCPU 1 on CPU 1, a virtio NIC on a tap), noise injected the whole
# time:
#   host   vnoise-host serve --guest --json --quiet --period 10s --metrics 127.0.0.1:PORT (the systemd unit's
#          command, contrib/systemd/vnoise-host.service with /etc/default's --period 10s, plus --guest);
#          vnoise-host collect --store --metrics, fed by 8 simulated nodes (tests/tools/nodesim, job "soak",
#          one report every 50 ms each; node 3 drops every 100th datagram on purpose) and by the guest's job;
#          a hog pinned with vCPU 0 (vnoise-guest inject, 5 ms every 50 ms)
#   guest  vnoise-guest agent --cpus 0 (publishing into the ivshmem region, answering the clock exchange);
#          vnoise-guest mpi --collector HOST_TAP_IP:PORT (job "soakvm", node 100) around tests/tools/mpiloop
#          on 2 ranks (OpenMPI copied into the initramfs, the preload library), sized to outlast the soak;
#          a guest injector on vCPU 1 (2 ms every 100 ms)
# Every minute it prints one line per vnoise process (RSS kB, open fds, CPU over that minute = utime+stime
# delta / wall; host from /proc, guest through vm_exec) and one line per component with every drop/loss
# counter (serve: JSON and /metrics; agent: `vnoise-host agent status --json`; collector: /metrics; the MPI
# job: the collector's view of node 100). At the end: per process the RSS and fd trend after the warm-up
# (least-squares growth per 10 min; flat when <= 1%), the mean CPU, the total of every loss counter with the
# unexplained ones (not nodesim's deliberate drops; not the records a channel drops before its first clock
# model, counted up to the start of the soak), the command to reproduce, and one verdict line per criterion.
# Figures, but it exits 3 when a criterion fails (growth > 1% per 10 min, an unexplained loss, a process that
# died or restarted). Everything started is stopped and removed on every exit path (Ctrl-C included).
#   usage: bench/soak.sh [--warmup MIN] MINUTES    (root; see --help)
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
# shellcheck source-path=SCRIPTDIR source=lib/soaklib.bash
. "$ROOT/bench/lib/soaklib.bash"
soak_args "$@" || exit 2
if [ "$SOAK_HELP" = 1 ]; then
	soak_usage
	exit 0
fi
MIN=$SOAK_MINUTES
WARM=$SOAK_WARMUP
BUILD=${VNOISE_BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
VG=$BUILD/vnoise-guest
VH=$BUILD/vnoise-host
SIM=$BUILD/tests/tools/nodesim
ML=$BUILD/tests/tools/mpiloop
PRE=$BUILD/libvnoise-preload.so
REPRO="flock -o /tmp/vnoise-vm.lock bench/soak.sh --warmup $WARM $MIN"
[ -n "${VNOISE_BUILD:-}" ] && REPRO="VNOISE_BUILD=$VNOISE_BUILD $REPRO"
GUEST_NODE=100
NODES=8
MPIENV="OMPI_MCA_plm=isolated OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none"
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"

say() { echo "soak: $*" >&2; }
die() { # die CODE MESSAGE: one line, exit CODE
	local rc=$1
	shift
	say "error: $*"
	exit "$rc"
}

echo "# soak: $MIN min (trends after $WARM min) of serve --guest + agent + guest MPI job + collector with $NODES" \
	"simulated nodes, host hog and guest injector, on a 2-vCPU TCG guest"
echo "# reproduce: make && sudo $REPRO"
[ "$(id -u)" -eq 0 ] || die 4 "needs root (libvirt, eBPF, the tap)"
for f in "$VG" "$VH" "$SIM" "$ML" "$PRE" "$BUILD/tests/vm/vmshd" "$BUILD/tests/vm/vmexec"; do
	[ -e "$f" ] || die 1 "$f not built (make BUILD=${BUILD#"$ROOT"/})"
done
for t in jq curl ss mpirun virsh; do
	command -v "$t" >/dev/null || die 4 "needs $t (scripts/deps.sh)"
done
[ -c /dev/net/tun ] || die 4 "no /dev/net/tun: the guest's NIC needs a tap"
[ -r /sys/kernel/btf/vmlinux ] || die 4 "the host kernel has no BTF: no host tracing"
[ "$(nproc)" -ge 2 ] || die 4 "needs 2 CPUs (vCPU 0 on CPU 0, vCPU 1 on CPU 1)"
HZ=$(getconf CLK_TCK)

T=$(mktemp -d /tmp/vnoise-soak.XXXXXX) || die 1 "mktemp failed"
SERVE='' CPID='' HOG='' SLEEPER=''
SIMS=()
declare -A PID0=() TICKS=()
T0=0 TPREV=0 FAILED=() INCOMPLETE=''

# stop_pid PID...: TERM, then KILL after 10 s; reaped
stop_pid() {
	local p _
	for p in "$@"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
	for p in "$@"; do
		[ -n "$p" ] || continue
		for _ in $(seq 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}
# shellcheck disable=SC2317 # the EXIT trap's
cleanup() {
	[ -n "$SLEEPER" ] && kill "$SLEEPER" 2>/dev/null
	stop_pid "${SIMS[@]}" "$CPID" "$SERVE" "$HOG"
	SIMS=() CPID='' SERVE='' HOG=''
	if [ "${SOAK_KEEP:-0}" = 1 ]; then
		rm -rf "$T/guest"
		say "SOAK_KEEP=1: the run's files are in $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
# the harness: this build's static guest tools, no make; OpenMPI, mpiloop and the preload library in the guest
export VM_GUEST_DIR=$T/guest VM_NO_MAKE=1 VM_BIN_DIR=$BUILD
# shellcheck source=tests/vm/vm.bash
. "$ROOT/tests/vm/vm.bash"
VM_EXTRA_FILES="${VM_EXTRA_FILES:-} $(soak_mpi_files "$ML" "$PRE")" || die 4 "ldd finds no library of OpenMPI"
export VM_EXTRA_FILES

# A free loopback TCP port (serve runs with --quiet, as its unit does: it would not say which port 0 took).
free_port() {
	local p _
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		[ -z "$(ss -Hltn "sport = :$p")" ] && echo "$p" && return 0
	done
	return 1
}

# wait_line FILE SED_EXPR: the first match of SED_EXPR (sed -n 's/../\1/p') in FILE within 10 s
wait_line() {
	local v _
	for _ in $(seq 200); do
		v=$(sed -n "$2" "$1" | head -1)
		[ -n "$v" ] && echo "$v" && return 0
		sleep 0.05
	done
	return 1
}

start_serve() {
	SPORT=$(free_port) || die 1 "no free port for serve's /metrics"
	"$VH" serve --guest --json --quiet --period 10s --metrics "127.0.0.1:$SPORT" >"$T/serve.jsonl" \
		2>"$T/serve.err" &
	SERVE=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$SPORT/metrics" >/dev/null && return 0
		kill -0 "$SERVE" 2>/dev/null || die 1 "vnoise-host serve exited: $(tail -3 "$T/serve.err")"
		sleep 0.1
	done
	die 1 "vnoise-host serve does not answer on 127.0.0.1:$SPORT/metrics"
}

start_collector() {
	printf '# soak key\n7 %s\n' "$(head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/key"
	chmod 600 "$T/key"
	"$VH" collect -k "$T/key" --listen "$VM_HOST_IP:0" --metrics 127.0.0.1:0 --store "$T/collect.db" \
		--job soak --job soakvm --period 60s --json >"$T/collect.json" 2>"$T/collect.err" &
	CPID=$!
	if ! CPORT=$(wait_line "$T/collect.err" 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p') ||
		! MPORT=$(wait_line "$T/collect.err" 's/.*serving \/metrics on port \([0-9]*\).*/\1/p'); then
		die 1 "the collector did not start: $(tail -3 "$T/collect.err")"
	fi
}

start_nodes() {
	local n ex
	for n in $(seq "$NODES"); do
		ex=()
		[ "$n" = 3 ] && ex=(--drop-every 100)
		"$SIM" -c "$VM_HOST_IP:$CPORT" -k "$T/key" -n "$n" -j soak -i 1000000000 -t 50ms -w 200 --seed "$n" \
			"${ex[@]}" >"$T/node$n.json" 2>>"$T/nodes.err" &
		SIMS+=($!)
	done
}

# The guest's MPI job, sized to outlast the soak many times over (stop_load ends it): the work per
# iteration is calibrated once at the start, under TCG as fast as 14.5 ms for a nominal 20 ms, and a job
# sized for 20 ms iterations ended at minute 29 of a 30-minute soak.
start_guest_job() {
	local key iters=$(((MIN + 10) * 60 * 500))
	key=$(sed -n 's/^7 //p' "$T/key")
	vm_exec "umask 077; echo '7 $key' >/tmp/soak.key" >/dev/null || die 1 "cannot write the key into the guest"
	vm_exec "vnoise-guest inject --cpu 1 --comm vn-injector --spike 2ms --every 100ms >/tmp/inj.out 2>&1 &" \
		>/dev/null || die 1 "cannot start the guest injector"
	vm_exec "cd /tmp && $MPIENV vnoise-guest mpi --job soakvm --collector $VM_HOST_IP:$CPORT -k /tmp/soak.key \
		--node-id $GUEST_NODE --preload /lib/vnoise/libvnoise-preload.so -- $MPIRUN /bin/mpiloop \
		--iters $iters --work-us 20000 >/tmp/mpi.out 2>&1 &" >/dev/null || die 1 "cannot start the guest's MPI job"
}

metrics() { curl -sf --max-time 10 "http://127.0.0.1:$1/metrics"; }

# serve's last complete JSON line (a line being written does not parse)
serve_last() { tail -n 3 "$T/serve.jsonl" | jq -c 'select(.schema)' 2>/dev/null | tail -n 1; }

# Everything up: serve shows the domain's channel ok with the clock aligned, the collector knows every node
# (the 8 simulated and the guest's), the guest runs its agent, injector, MPI wrapper and both ranks.
wait_ready() {
	local deadline=$(($(date +%s) + 240)) ok_s ok_c ok_g
	while [ "$(date +%s)" -lt "$deadline" ]; do
		ok_s=$(serve_last | jq -r --arg d "$VM_NAME" '[.domains[] | select(.name == $d) |
			.channel.state == "ok" and .clock.aligned] | any' 2>/dev/null)
		metrics "$MPORT" >"$T/m.txt" 2>/dev/null
		ok_c=$(soak_prom "$T/m.txt" vnoise_collect_nodes)
		ok_g=$(vm_exec --timeout 30 "$(soak_guest_procs)" 2>/dev/null | awk '{ n[$1]++ }
			END { print (n["agent"] == 1 && n["mpi"] == 1 && n["rank"] == 2 && n["injector"] == 1) }')
		[ "$ok_s" = true ] && [ "$ok_c" -ge $((NODES + 1)) ] && [ "$ok_g" = 1 ] && return 0
		for p in "$SERVE" "$CPID" "$HOG" "${SIMS[@]}"; do
			kill -0 "$p" 2>/dev/null || die 1 "a host process (pid $p) exited during the start"
		done
		sleep 3
	done
	vm_exec 'tail -5 /tmp/mpi.out; tail -3 /tmp/agent.log' >&2
	die 1 "not ready after 240 s: serve channel ok+aligned '$ok_s', collector nodes $ok_c of $((NODES + 1)), guest processes complete '$ok_g'"
}

# ---- the per-minute sample ---------------------------------------------------------------------------------

# procs_now: "KEY PID RSS FDS TICKS" of every vnoise process, host and guest; return 1 when the guest does not
# answer
procs_now() {
	local key p v out
	for key in serve collect hog; do
		case $key in serve) p=$SERVE ;; collect) p=$CPID ;; hog) p=$HOG ;; esac
		v=$(soak_host_proc "$p") && echo "host:$key $p $v"
	done
	out=$(vm_exec --timeout 60 "$(soak_guest_procs)") ||
		out=$(vm_exec --timeout 60 "$(soak_guest_procs)") || return 1
	awk '$1 == "rank" { $1 = "rank." $2 } { print "guest:" $0 }' <<<"$out" | sort -k2,2n
}

# One line per process; samples into $T/samples ("T KEY RSS FDS"); a process of the first sample that is
# gone or has another pid is a failure.
sample_procs() {
	local t=$1 key pid rss fds ticks cpu seen=' '
	procs_now >"$T/procs" || {
		INCOMPLETE="the TCG guest stopped answering vm_exec at $(((t - T0) / 60)) min (known QEMU TCG lock-up)"
		return 1
	}
	while read -r key pid rss fds ticks; do
		seen+="$key "
		if [ -z "${PID0[$key]:-}" ] && [ "$t" = "$T0" ]; then
			PID0[$key]=$pid
		elif [ "${PID0[$key]:-}" != "$pid" ]; then
			FAILED+=("alive: $key pid $pid appeared at $(((t - T0) / 60)) min (pid at start: ${PID0[$key]:-none})")
			continue
		fi
		cpu=-
		[ -n "${TICKS[$key]:-}" ] && [ "$t" -gt "$TPREV" ] &&
			cpu=$(awk -v d=$((ticks - TICKS[$key])) -v w=$((t - TPREV)) -v hz="$HZ" \
				'BEGIN { printf "%.2f%%", 100 * d / hz / w }')
		TICKS[$key]=$ticks
		printf 'proc  %-18s pid %-7s rss_kb %-8s fds %-4s cpu %s\n' "$key" "$pid" "$rss" "$fds" "$cpu"
		echo "$((t - T0)) $key $rss $fds" >>"$T/samples"
		echo "$key $((t - T0)) $ticks" >>"$T/ticks"
	done <"$T/procs"
	for key in "${!PID0[@]}"; do
		[[ $seen == *" $key "* ]] && continue
		FAILED+=("alive: $key (pid ${PID0[$key]}) gone at $(((t - T0) / 60)) min")
		unset "PID0[$key]"
	done
	TPREV=$t
	return 0
}

# losses_now: "NAME VALUE CLASS" per counter; CLASS loss (every unit unexplained), startup (unexplained only
# past its value at the start of the soak: records dropped before the first clock model or the attach),
# drops (collector's lost: the deliberate drops of node 3 subtracted at the end) or info (not a loss)
losses_now() {
	local j
	metrics "$SPORT" >"$T/sm.txt" 2>/dev/null || : >"$T/sm.txt"
	metrics "$MPORT" >"$T/cm.txt" 2>/dev/null || : >"$T/cm.txt"
	echo "serve.dispatch_records_lost $(soak_prom "$T/sm.txt" vnoise_host_dispatch_records_lost_total) loss"
	echo "serve.lifecycle_events_lost $(soak_prom "$T/sm.txt" vnoise_host_lifecycle_events_lost_total) loss"
	echo "serve.bad_records $(soak_prom "$T/sm.txt" vnoise_host_bad_records_total) loss"
	echo "serve.domains_evicted $(soak_prom "$T/sm.txt" vnoise_host_exporter_domains_evicted_total) loss"
	echo "serve.dispatch_anomalies $(soak_prom "$T/sm.txt" vnoise_host_dispatch_anomalies_total) info"
	echo "serve.libvirt_reconnects $(soak_prom "$T/sm.txt" vnoise_host_libvirt_reconnects_total) info"
	j=$(serve_last | jq -c --arg d "$VM_NAME" '.domains[] | select(.name == $d)' 2>/dev/null)
	[ -n "$j" ] || j='{}'
	jq -r '.channel // {} | "serve.channel_lost \(.lost // 0) loss", "serve.channel_torn \(.torn // 0) loss",
		"serve.channel_invalid \(.invalid // 0) loss", "serve.channel_corrupt \(.corrupt // 0) loss",
		"serve.channel_guest_dropped \(.guest_dropped // 0) loss", "serve.channel_late \(.late // 0) loss",
		"serve.channel_match_dropped \(.match_dropped // 0) loss", "serve.channel_missed \(.missed // 0) startup",
		"serve.channel_unsynced \(.unsynced // 0) startup"' <<<"$j"
	jq -r '"serve.dtl_dropped \(.dtl.dropped // 0) startup", "serve.clock_rejected \(.clock.rejected // 0) info",
		"serve.clock_uncertainty_us \((.clock.uncertainty_ns // -1000) / 1000 | floor) info",
		"serve.gaps_matched_10s \([.vcpus[]?.gaps] | add // 0) info"' <<<"$j"
	if j=$("$VH" agent -D "$VM_NAME" --timeout 10s status --json 2>/dev/null) && jq -e .ports <<<"$j" >/dev/null 2>&1; then
		jq -r '"agent.port_write_drops \([.ports[].write_drops] | add // 0) loss",
			"agent.published \(.published // 0) info"' <<<"$j"
	else
		echo "agent.status_unanswered 1 loss"
	fi
	for r in not-report version malformed unknown-key bad-mac duplicate stale wrong-kind too-many-nodes too-many-jobs; do
		echo "collect.datagrams_$r $(soak_prom "$T/cm.txt" vnoise_collect_datagrams_total "result=\"$r\"") loss"
	done
	echo "collect.lost $(soak_prom "$T/cm.txt" vnoise_collect_lost_datagrams_total) drops"
	echo "collect.lost_node3 $(soak_prom "$T/cm.txt" vnoise_node_lost_datagrams_total 'node="3"') info"
	echo "collect.command_errors $(soak_prom "$T/cm.txt" vnoise_collect_command_errors_total) loss"
	echo "collect.socket_drops $(soak_prom "$T/cm.txt" vnoise_collect_socket_drops_total) loss"
	echo "collect.store_errors $(soak_prom "$T/cm.txt" vnoise_collect_store_errors_total) loss"
	echo "collect.datagrams_ok $(soak_prom "$T/cm.txt" vnoise_collect_datagrams_total 'result="ok"') info"
	echo "mpi.collector_datagrams $(soak_prom "$T/cm.txt" vnoise_node_datagrams_total "node=\"$GUEST_NODE\"") info"
	echo "mpi.collector_lost $(soak_prom "$T/cm.txt" vnoise_node_lost_datagrams_total "node=\"$GUEST_NODE\"") info"
}

# One line per component: its counters as NAME VALUE
print_losses() {
	local c
	for c in serve agent collect mpi; do
		awk -v c="$c" 'index($1, c ".") == 1 { sub(/^[a-z]*\./, "", $1); s = s " " $1 " " $2 }
			END { printf "loss  %-7s%s\n", c, s }' "$1"
	done
}

sample() {
	local t=$1
	echo "== minute $(((t - T0) / 60)) of $MIN ($(date -u +%H:%M:%S) UTC)"
	sample_procs "$t" || return 1
	losses_now >"$T/loss.now"
	print_losses "$T/loss.now"
	[ "$t" = "$T0" ] && cp "$T/loss.now" "$T/loss.t0"
	# so far: every loss, the startup ones past their value at the start, the collector's outside node 3
	awk 'NR == FNR { b[$1] = $2; next }
		$3 == "loss" { u += $2 } $3 == "startup" { u += $2 - b[$1] }
		$1 == "collect.lost" { u += $2 } $1 == "collect.lost_node3" { u -= $2 }
		END { printf "loss  unexplained so far: %d (node 3 drops on purpose: not counted)\n", u }' \
		"$T/loss.t0" "$T/loss.now"
	return 0
}

# ---- the end ----------------------------------------------------------------------------------------------

# Stops the simulated nodes and the guest's job (their own totals), then takes the final counters.
stop_load() {
	local mpid ipid _
	stop_pid "${SIMS[@]}"
	SIMS=()
	sleep 2 # the nodes' last HELLO shows the collector any loss at the tail
	mpid=$(awk '$1 == "guest:mpi" { print $2 }' "$T/procs")
	ipid=$(awk '$1 == "guest:injector" { print $2 }' "$T/procs")
	[ -n "$ipid" ] && vm_exec --timeout 20 "kill -INT $ipid" >/dev/null
	if [ -n "$mpid" ] && vm_exec --timeout 20 "kill -INT $mpid" >/dev/null; then
		for _ in $(seq 60); do
			vm_exec --timeout 20 "[ -d /proc/$mpid ]" >/dev/null 2>&1 || break
			sleep 1
		done
	fi
	vm_exec --timeout 20 'cat /tmp/mpi.out' >"$T/mpi.out" 2>&1
	vm_exec --timeout 20 'cat /tmp/inj.out' >"$T/inj.out" 2>&1
	vm_exec --timeout 20 'cat /tmp/agent.log' >"$T/agent.log" 2>&1
	sleep 1
	losses_now >"$T/loss.end"
	stop_pid "$CPID" "$SERVE" "$HOG"
	CPID='' SERVE='' HOG=''
}

# The deliberate drops of the simulated nodes and their unplanned send errors, from their totals.
node_totals() {
	cat "$T"/node*.json 2>/dev/null | jq -s -r '"\(map(.dropped) | add // 0) \(map(.send_errors - .dropped) | add // 0) \(map(.datagrams) | add // 0) \(length)"'
}

# The MPI job's own losses, from its summary on stderr: "NAME VALUE" lines.
mpi_losses() {
	local f=$T/mpi.out
	sed -n "s/.*job 'soakvm'.* overrun \([0-9]*\), output errors \([0-9]*\),.*/mpi.overrun \1\nmpi.output_errors \2/p" "$f"
	sed -n 's/.*dispatch trace log: .* lost \([0-9]*\) (journal \([0-9]*\)).* torn \([0-9]*\), bad \([0-9]*\);.*/mpi.dtl_lost \1\nmpi.dtl_journal_lost \2\nmpi.dtl_torn \3\nmpi.dtl_bad \4/p' "$f"
	echo "mpi.trace_records_lost $(sed -n 's/.*: \([0-9]*\) trace records lost.*/\1/p' "$f" | awk '{ s += $1 } END { print s + 0 }')"
}

print_trends() {
	local key n r0 r1 rp f0 f1 fp v cpu
	echo "== trends after $WARM min (growth per 10 min, least squares; flat <= 1%), mean CPU over the soak"
	printf '%-18s %3s %9s %9s %8s %5s %5s %8s %7s  %s\n' process samples rss0_kb rss1_kb rss_%/10m fds0 fds1 \
		fds_%/10m cpu verdict
	soak_trend "$T/samples" $((WARM * 60)) >"$T/trend"
	while read -r key n r0 r1 rp f0 f1 fp v; do
		cpu=$(awk -v k="$key" -v hz="$HZ" '$1 == k { if (!s) { s = 1; t0 = $2; c0 = $3 } t1 = $2; c1 = $3 }
			END { printf "%.2f%%", (t1 > t0 ? 100 * (c1 - c0) / hz / (t1 - t0) : 0) }' "$T/ticks")
		printf '%-18s %3s %9s %9s %8s %5s %5s %8s %7s  %s\n' "$key" "$n" "$r0" "$r1" "$rp" "$f0" "$f1" "$fp" "$cpu" "$v"
		[ "$v" = grows ] && FAILED+=("growth: $key grows (rss ${rp}%, fds ${fp}% per 10 min; $r0 -> $r1 kB, $f0 -> $f1 fds)")
		[ "$v" = n/a ] && INCOMPLETE=${INCOMPLETE:-"too few samples after the warm-up for $key"}
	done <"$T/trend"
}

# Totals of every counter; unexplained per class; the verdict line of the losses.
print_losses_end() {
	local dropped senderr sent nn unexpl=0 name v cls base u
	read -r dropped senderr sent nn < <(node_totals)
	dropped=${dropped:-0} senderr=${senderr:-0}
	echo "== loss counters at the end (unexplained: not caused on purpose)"
	while read -r name v cls; do
		base=$(awk -v n="$name" '$1 == n { print $2 }' "$T/loss.t0")
		case $cls in
		loss) u=$v ;;
		startup) u=$((v - ${base:-0})) ;;
		drops) u=$((v - dropped)) && [ "$u" -lt 0 ] && u=$((-u)) ;;
		*) u=0 ;;
		esac
		[ "$cls" = info ] && printf '  %-32s %10s  (not a loss)\n' "$name" "$v" && continue
		unexpl=$((unexpl + u))
		case $cls in
		startup) printf '  %-32s %10s  unexplained %s (%s before the soak started: no clock model/attach yet)\n' \
			"$name" "$v" "$u" "${base:-0}" ;;
		drops) printf '  %-32s %10s  unexplained %s (%s dropped on purpose by node 3)\n' "$name" "$v" "$u" "$dropped" ;;
		*) printf '  %-32s %10s  unexplained %s\n' "$name" "$v" "$u" ;;
		esac
	done <"$T/loss.end"
	printf '  %-32s %10s  unexplained %s (%s nodes sent %s datagrams)\n' nodesim.send_errors "$senderr" \
		"$senderr" "${nn:-0}" "${sent:-0}"
	unexpl=$((unexpl + senderr))
	if ! grep -q "job 'soakvm'" "$T/mpi.out"; then
		echo "  mpi: no summary from vnoise-guest mpi: $(tail -c 300 "$T/mpi.out" | tr '\n' ' ')"
		FAILED+=("losses: the guest's MPI job printed no summary")
	fi
	while read -r name v; do
		printf '  %-32s %10s  unexplained %s\n' "$name" "$v" "$v"
		unexpl=$((unexpl + v))
	done < <(mpi_losses)
	grep -h "job 'soakvm'\|collector:\|dispatch trace log:" "$T/mpi.out" | sed 's/^/  mpi summary: /'
	grep -h '^inject:' "$T/hog.out" | sed 's/^/  host hog: /'
	grep -h '^inject: busy' "$T/inj.out" | sed 's/^/  guest injector: /'
	# serve's own account of what it refused or skipped and why (one warning per 10 s at most)
	grep -h 'refused .* records out of order' "$T/serve.err" | sed 's/^/  serve: /'
	[ "$unexpl" -eq 0 ] || FAILED+=("losses: $unexpl unexplained")
}

# ---- the run ----------------------------------------------------------------------------------------------
vm_setup >/dev/null || die 1 "vm_setup failed"
start_serve
vm_start_agent --cpus 0 -- --net --pin0 0 --pin 1:1 >"$T/vm.out" || die 1 "the VM or its agent did not start"
"$VG" inject --cpu 0 --comm vnsoakhog --spike 5ms --every 50ms >"$T/hog.out" 2>&1 &
HOG=$!
start_collector
start_nodes
start_guest_job
wait_ready
say "everything runs (guest $VM_NAME, serve pid $SERVE /metrics :$SPORT, collector pid $CPID :$CPORT)"
T0=$(date +%s)
sample "$T0" || die 1 "$INCOMPLETE"
for m in $(seq "$MIN"); do
	d=$((T0 + 60 * m - $(date +%s)))
	if [ "$d" -gt 0 ]; then
		sleep "$d" &
		SLEEPER=$!
		wait "$SLEEPER"
		SLEEPER=''
	fi
	sample "$(date +%s)" || break
	[ ${#FAILED[@]} -eq 0 ] || { say "a process died or restarted: ending the soak early"; break; }
done
stop_load
print_trends
print_losses_end
echo "== verdicts (reproduce: make && sudo $REPRO)"
fails() { printf '%s\n' "${FAILED[@]}" | grep "^$1: " | sed "s/^$1: //" | paste -sd';' -; }
v=$(fails alive)
echo "verdict alive:  ${v:+FAIL: }${v:-ok: every vnoise process ran the whole soak with the same pid}"
v=$(fails growth)
echo "verdict rss/fds: ${v:+FAIL: }${v:-flat: no process grows more than 1% per 10 min after $WARM min}"
v=$(fails losses)
echo "verdict losses: ${v:+FAIL: }${v:-ok: 0 unexplained}"
[ -n "$INCOMPLETE" ] && echo "verdict run:    INCOMPLETE: $INCOMPLETE"
[ ${#FAILED[@]} -eq 0 ] || exit 3
[ -z "$INCOMPLETE" ] || exit 1
exit 0
