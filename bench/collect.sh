#!/bin/bash
# The cluster collector end to end over loopback UDP ("collector datagrams/s on one core", target
# >= 100 k): the real `vnoise-host collect` pinned to the last CPU, SENDERS simulated nodes
# (tests/tools/nodesim --flood: sealed interval reports as fast as they go, no work, no sleep) pinned
# together to another CPU. Sizes: nodesim -r 1, 3, 6 = 4, 12, 24 records (312, 696, 1272 bytes), counters
# only (--slot 0: no SAMPLE command makes a node send detail). A fresh collector per size, two phases:
#  flood  N datagrams in all as fast as the senders go.
#    accepted/s    datagrams the collector used / the phase's wall time, from the senders' start to the
#                  status line (--period 20ms, timestamped as it is read) where the collector's "used" count
#                  reached its final value (+-20 ms); sent/s: the senders' datagrams / their own wall time
#    busy          the collector's CPU during the phase / its wall time: near 100% the collector is saturated
#                  and accepted/s is its capacity; well below it, the senders were the bottleneck
#    CPU/100k      the collector's CPU seconds per 100 000 datagrams used (schedstat run time of all its
#                  threads, its idle cost before the phase taken off; /proc/PID/stat utime+stime, 10 ms ticks,
#                  as a cross-check) and dgrams/CPU-s, the inverse. Unsaturated, each poll() wakeup carries
#                  few datagrams to recvmmsg(), so this is the expensive way to take them
#    drops, lost   the kernel's drops on the collector's socket (SO_RXQ_OVFL, from the status line), and the
#                  sequence gaps the collector counted (every drop shows there too)
#  burst  what one core takes when saturated, which two CPUs cannot show by flooding: BURSTS times, the
#         collector is stopped (SIGSTOP), the senders put B datagrams in its receive buffer, it is resumed
#         (SIGCONT) and drains them in full recvmmsg() batches; its CPU time from SIGCONT until the socket's
#         receive queue is empty (/proc/net/udp) + 5 ms, its idle cost taken off, over the datagrams used,
#         median over the bursts, is ns/dgram, and its inverse the saturated datagrams/s.
# On loopback the kernel's receive path (softirq) runs on the sending CPU, not the collector's: the
# collector's CPU is its syscalls, the copy out of the socket and the engine. Figures only, never pass/fail.
# Usage: bench/collect.sh [N [SENDERS [B [BURSTS]]]]
#   (defaults 200000 datagrams per size, 2 senders, bursts of 3000 datagrams, 5 bursts; needs 2 CPUs)
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${VNOISE_BUILD:-build}
N=${1:-200000}
SENDERS=${2:-2}
B=${3:-3000}
BURSTS=${4:-5}
VH=$BUILD/vnoise-host
SIM=$BUILD/tests/tools/nodesim
PERIOD_MS=20
num() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
if ! num "$N" 1000 100000000 || ! num "$SENDERS" 1 16 || ! num "$B" 100 100000 || ! num "$BURSTS" 1 51; then
	echo "usage: bench/collect.sh [DATAGRAMS >= 1000 [SENDERS 1..16 [BURST >= 100 [BURSTS 1..51]]]]" >&2
	exit 2
fi
echo "# collect: vnoise-host collect over loopback UDP, per size $N datagrams from $SENDERS nodesim --flood," \
	"then $BURSTS bursts of $B (reproduce: make && bench/collect.sh $N $SENDERS $B $BURSTS)"
for f in "$VH" "$SIM"; do
	[ -x "$f" ] || {
		echo "collect: not measured: $f not built (make)"
		exit 1
	}
done
for t in taskset jq perl; do
	command -v "$t" >/dev/null || {
		echo "collect: not measured: $t missing"
		exit 1
	}
done
mapfile -t CPUS < <(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' |
	awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }')
if [ "${#CPUS[@]}" -lt 2 ]; then
	echo "collect: not measured: needs 2 CPUs (one for the collector, one for the senders)"
	exit 1
fi
CCPU=${CPUS[-1]} # the collector
SCPU=${CPUS[-2]} # the senders, the status-line reader and this script (its awk, jq, sleep)
taskset -cp "$SCPU" $$ >/dev/null || exit 1

tmp=$(mktemp -d /tmp/vnoise-collect-bench.XXXXXX)
CPID='' RPID='' SPIDS=()
cleanup() {
	local p
	[ -n "$CPID" ] && kill -CONT "$CPID" 2>/dev/null
	for p in "${SPIDS[@]}" $CPID $RPID; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

KEY=$tmp/keys
(
	umask 077
	printf '1 %s\n' "$(head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$KEY"
)

now() { echo "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a - b }'; }
# cpu_of PID: its CPU time so far, all threads: "schedstat_ns stat_ticks"
cpu_of() {
	echo "$(awk '{ s += $1 } END { printf "%d", s }' /proc/"$1"/task/*/schedstat 2>/dev/null)" \
		"$(sed 's/.*) //' /proc/"$1"/stat | awk '{ print $12 + $13 }')"
}
# status FILE: "used lost socket-drops" of the last status line in FILE
status() {
	awk '/ used / { for (i = 1; i < NF; i++) { if ($i == "used") u = $(i + 1); if ($i == "lost") l = $(i + 1)
		if ($i == "socket-drops") d = $(i + 1) } } END { print u + 0, l + 0, d + 0 }' "$1"
}
# drained FILE STABLE: wait until the used count stayed the same over STABLE status periods; prints it
drained() {
	local last=-1 stable=0 u _
	for _ in $(seq 1000); do
		read -r u _ < <(status "$1")
		if [ "$u" = "$last" ]; then stable=$((stable + 1)); else stable=0 last=$u; fi
		[ "$stable" -ge "$2" ] && break
		sleep "$(awk -v p="$PERIOD_MS" 'BEGIN { printf "%.3f", p / 1000 }')"
	done
	echo "$last"
}
# rxq PORT: the bytes waiting in the receive queue of the UDP socket on 127.0.0.1:PORT, in hex ("" if none)
rxq() {
	awk -v p="$(printf '0100007F:%04X' "$1")" '$2 == p { split($5, q, ":"); print q[2]; exit }' /proc/net/udp
}
# senders PORT RANKS COUNT FIRST_ID NAME: SENDERS nodes sending COUNT datagrams in all, until they end
senders() {
	local i rc=0
	SPIDS=()
	for i in $(seq "$SENDERS"); do
		taskset -c "$SCPU" "$SIM" -c "127.0.0.1:$1" -k "$KEY" -n "$(($4 + i))" -j collect-bench -r "$2" \
			--flood "$(($3 / SENDERS))" >"$tmp/$5.node$i.json" 2>>"$tmp/$5.nodes.err" &
		SPIDS+=($!)
	done
	for i in "${SPIDS[@]}"; do wait "$i" || rc=$?; done
	SPIDS=()
	[ "$rc" = 0 ] || echo "collect: a sender exited $rc: $(tail -c 300 "$tmp/$5.nodes.err")" >&2
	return "$rc"
}

# run RANKS: one size; appends a line to $tmp/flood and $tmp/burst
run() {
	local r=$1 name=r$1 port='' i k ta tb ca cb idle t0 t1 td tc c0 s0 c1 s1 used lost drops sent serr
	local u0 u1 d0 d1 x q
	mkfifo "$tmp/$name.fifo"
	# shellcheck disable=SC2016 # perl's variables
	taskset -c "$SCPU" perl -MTime::HiRes=time -ne '$| = 1; printf "%.6f %s", time, $_' \
		<"$tmp/$name.fifo" >"$tmp/$name.err" &
	RPID=$!
	taskset -c "$CCPU" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 --no-store --slot 0 \
		--period "${PERIOD_MS}ms" --json >"$tmp/$name.json" 2>"$tmp/$name.fifo" &
	CPID=$!
	for i in $(seq 100); do
		port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/$name.err")
		[ -n "$port" ] && break
		sleep 0.05
	done
	if [ -z "$port" ]; then
		echo "collect: the collector did not start: $(head -c 300 "$tmp/$name.err")" >&2
		return 1
	fi
	# its idle cost (poll timeouts, status lines), ns of CPU per s, to take off the phases' waits
	sleep 0.1
	ta=$(now) && read -r ca _ < <(cpu_of "$CPID")
	sleep 0.5
	tb=$(now) && read -r cb _ < <(cpu_of "$CPID")
	idle=$(awk -v c="$((cb - ca))" -v t="$(sub "$tb" "$ta")" 'BEGIN { printf "%.0f", c / t }')

	# flood
	read -r c0 s0 < <(cpu_of "$CPID")
	t0=$(now)
	senders "$port" "$r" "$N" 0 "$name" || return 1
	t1=$(now)
	used=$(drained "$tmp/$name.err" 10)
	tc=$(now) && read -r c1 s1 < <(cpu_of "$CPID")
	read -r _ lost drops < <(status "$tmp/$name.err")
	# the first status line with the final count ends the phase (not before the senders ended)
	td=$(awk -v u="$used" '/ used / { for (i = 1; i < NF; i++) if ($i == "used" && $(i + 1) == u) { print $1; exit } }' \
		"$tmp/$name.err")
	td=$(awk -v a="${td:-0}" -v b="$t1" 'BEGIN { print (a > b ? a : b) }')
	read -r sent serr < <(cat "$tmp/$name".node*.json | jq -s -r '"\(map(.datagrams) | add) \(map(.send_errors) | add)"')
	echo "$r $sent $serr $used $lost $drops $(sub "$t1" "$t0") $(sub "$td" "$t0") $((c1 - c0)) $((s1 - s0))" \
		"$idle $(sub "$tc" "$td")" >>"$tmp/flood"

	# bursts: the CPU from SIGCONT until the receive queue is empty, plus 5 ms for the last batch
	for k in $(seq "$BURSTS"); do
		read -r u0 _ d0 < <(status "$tmp/$name.err")
		kill -STOP "$CPID"
		senders "$port" "$r" "$B" $((k * 100)) "$name.b$k" || return 1
		ta=$(now) && read -r ca _ < <(cpu_of "$CPID")
		kill -CONT "$CPID"
		for _ in $(seq 5000); do
			q=$(rxq "$port")
			[[ -z $q || $q =~ ^0+$ ]] && break
		done
		sleep 0.005
		tb=$(now) && read -r cb _ < <(cpu_of "$CPID")
		u1=$(drained "$tmp/$name.err" 3)
		read -r _ _ d1 < <(status "$tmp/$name.err")
		echo "$((cb - ca)) $(sub "$tb" "$ta") $((u1 - u0)) $((d1 - d0))"
	done >"$tmp/$name.bursts"
	x=$(awk -v idle="$idle" '{ ns = ($1 - idle * $2) / $3; print ns, $3, $4 }' "$tmp/$name.bursts" | sort -n |
		awk '{ v[NR] = $1; n += $2; d += $3 } END { print v[int((NR + 1) / 2)], v[1], v[NR], n / NR, d }')
	echo "$r $x" >>"$tmp/burst"

	kill -TERM "$CPID"
	wait "$CPID" || echo "collect: the collector exited $?" >&2
	CPID=''
	wait "$RPID"
	RPID=''
	jq -e .datagrams "$tmp/$name.json" >/dev/null 2>&1 ||
		echo "collect: no JSON report from the collector: $(tail -c 300 "$tmp/$name.err")" >&2
	jq -r --arg r "$r" '.datagrams | "\($r) \(.received) \(.ok) \(.lost)"' "$tmp/$name.json" >>"$tmp/totals"
}

for r in 1 3 6; do
	run "$r" || exit 1
done

HZ=$(getconf CLK_TCK)
echo "## flood: collector on CPU $CCPU, $SENDERS senders (and the status reader) on CPU $SCPU"
printf '%-7s %5s %8s %8s %8s %9s %10s %5s %8s %12s %6s %5s\n' records bytes sent used elapsed sent/s \
	accepted/s busy CPU/100k dgrams/CPU-s drops lost
awk -v hz="$HZ" '{
	nrec = 4 * $1; cpu = ($9 - $11 * $12) / 1e9   # the idle wait after the last datagram taken off
	printf "%-7d %5d %8d %8d %7.2fs %9.0f %10.0f %4.0f%% %8.3f %12.0f %6d %5d\n", nrec, 88 + 48 * nrec + 32,
		$2, $4, $8, $2 / $7, $4 / $8, 100 * cpu / $8, ($4 > 0 ? cpu * 1e5 / $4 : 0), (cpu > 0 ? $4 / cpu : 0),
		$6, $5
	x[NR] = sprintf("%d records: utime+stime %.2f s, schedstat %.3f s, idle cost %.2f ms/s (taken off: %.1f ms)",
		nrec, $10 / hz, $9 / 1e9, $11 / 1e6, $11 * $12 / 1e6)
	if ($3 > 0) x[NR] = x[NR] sprintf("; %d send errors at the senders", $3)
} END { for (i = 1; i <= NR; i++) printf "#  %s\n", x[i] }' "$tmp/flood"
echo "#  sent and used include each node's HELLOs (one at start, one a second, one at the end)"
echo "#  busy well below 100%: the senders were the bottleneck and accepted/s is theirs, not the collector's"
echo
echo "## burst: $BURSTS x $B datagrams put in the stopped collector's receive buffer, then drained (median, min..max)"
printf '%-7s %5s %18s %16s %12s %6s\n' records bytes ns/dgram dgrams/CPU-s used/burst drops
awk '{ nrec = 4 * $1
	printf "%-7d %5d %6.0f (%4.0f..%4.0f) %16.0f %12.0f %6d\n", nrec, 88 + 48 * nrec + 32, $2, $3, $4,
		($2 > 0 ? 1e9 / $2 : 0), $5, $6 }' "$tmp/burst"
echo "#  drops > 0: the burst did not fit in the receive buffer (give a smaller B); the cost counts used ones"
awk '$2 != $3 { printf "#  %d records: %d datagrams received, %d used\n", 4 * $1, $2, $3 }' "$tmp/totals"
echo "#  reproduce one size: taskset -c $CCPU $VH collect -k KEYFILE --listen 127.0.0.1:0 --no-store --slot 0" \
	"--period ${PERIOD_MS}ms --json"
echo "#    then $SENDERS x: taskset -c $SCPU $SIM -c 127.0.0.1:PORT -k KEYFILE -n I -j collect-bench -r RANKS" \
	"--flood $((N / SENDERS))   (burst: kill -STOP the collector before, kill -CONT after, --flood $((B / SENDERS)));" \
	"the collector's CPU: /proc/PID/schedstat; kill -TERM it for the JSON report"
