#!/bin/bash
# Cost of the MPI side of libvnoise-preload.so, from tests/tools/mpiloop's loop_ns (rank 0's wall
# time of its iteration loop), median of 5 runs each. Figures only.
#   (a) per wrapped MPI_Barrier, untracked: 1 rank, --barrier-only N, plain vs LD_PRELOAD
#   (b) per wrapped MPI_Barrier, tracked (each call closes an interval): the same under vnoise-guest mpi
#   (c) whole job, 2 ranks, 1000 iterations: ~1000 us of work (rounds calibrated once) and --barrier-only,
#       plain vs vnoise-guest mpi
#       (barriers alone also with -D 10000: no interval reported, the cost of tracking without reporting)
#   (d) the plain loops of (c) while `vnoise-guest monitor --cpus all` runs (passive eBPF helper only)
# (b) and (c) need `vnoise-guest mpi`; without root it runs with --no-helper (no noise counters).
# Usage: bench/mpi_cost.sh [N]   (N: barriers of (a) and (b), default 200000)
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${VNOISE_BUILD:-build}
N=${1:-200000}
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
PL=$BUILD/libvnoise-preload.so
ML=$BUILD/tests/tools/mpiloop
VG=$BUILD/vnoise-guest
MPIRUN="mpirun --oversubscribe --allow-run-as-root --bind-to core"
echo "# mpi_cost: MPI wrapper and interval tracking, median of 5 runs (reproduce: make && bench/mpi_cost.sh $N)"
if ! [ -f "$PL" ] || ! [ -x "$ML" ] || ! command -v mpirun >/dev/null; then
	echo "mpi_cost: not measured: $PL, $ML or mpirun missing (make deps && make)"
	exit 1
fi

# median5 CMD...: median of the loop_ns that 5 runs of CMD print
median5() {
	local v
	for _ in 1 2 3 4 5; do
		v=$("$@" 2>/dev/null | sed -n 's/^mpiloop: ranks=.* loop_ns=\([0-9]*\).*/\1/p' | head -1)
		[ -n "$v" ] || {
			echo "mpi_cost: run failed: $*" >&2
			return 1
		}
		echo "$v"
	done | sort -n | sed -n 3p
}
per() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.1f", a / n }'; }
delta() { awk -v p="$1" -v t="$2" -v n="$3" 'BEGIN { printf "%+.1f", (t - p) / n }'; }
pct() { awk -v p="$1" -v t="$2" 'BEGIN { printf "%+.2f%%", (t - p) * 100 / p }'; }

A_PLAIN="$MPIRUN -np 1 $ML --barrier-only --iters $N"
A_WRAP="$MPIRUN -np 1 -x LD_PRELOAD=$PL -x VNOISE_PRELOAD_OUT=/dev/null $ML --barrier-only --iters $N"
echo "(a) $A_PLAIN"
echo "    $A_WRAP"
# shellcheck disable=SC2086
a_plain=$(median5 $A_PLAIN) || exit 1
# shellcheck disable=SC2086
a_wrap=$(median5 $A_WRAP) || exit 1
echo "(a) MPI_Barrier, 1 rank, untracked: $(per "$a_plain" "$N") ns plain, $(per "$a_wrap" "$N") ns wrapped:" \
	"$(delta "$a_plain" "$a_wrap" "$N") ns per wrapped call"

if ! "$VG" mpi --help >/dev/null 2>&1; then
	echo "SKIP (b)/(c): vnoise-guest mpi not built"
	exit 0
fi
VGOPT=""
[ "$(id -u)" -eq 0 ] || VGOPT="--no-helper"
VGRUN="$VG mpi ${VGOPT:+$VGOPT }-o /dev/null --"
# Barriers alone: intervals of ~1 us, below --min-delay (10 us) so rarely reported; a threshold
# no interval reaches shows the tracking alone.
VGQUIET="$VG mpi ${VGOPT:+$VGOPT }--delay-pct 10000 -o /dev/null --"
export VNOISE_PRELOAD_OUT=/dev/null # the ranks' per-thread lines
B_TRK="$VGRUN $MPIRUN -np 1 $ML --barrier-only --iters $N"
echo "(b) $B_TRK"
# shellcheck disable=SC2086
b_trk=$(median5 $B_TRK) || exit 1
echo "(b) MPI_Barrier, 1 rank, tracked${VGOPT:+ ($VGOPT)}: $(per "$b_trk" "$N") ns:" \
	"$(delta "$a_plain" "$b_trk" "$N") ns per call over plain, $(delta "$a_wrap" "$b_trk" "$N") over untracked"

I=1000
# one calibration of 1000 us of work, then the same rounds in every run (a calibration varies by a few %)
W=$($MPIRUN -np 2 "$ML" --iters 1 --work-us 1000 2>/dev/null | sed -n 's/^mpiloop: .* work_rounds=\([0-9]*\).*/\1/p')
[ -n "$W" ] || {
	echo "mpi_cost: calibration run failed: $MPIRUN -np 2 $ML --iters 1 --work-us 1000" >&2
	exit 1
}
C_WORK="$MPIRUN -np 2 $ML --iters $I --rounds $W"
C_BAR="$MPIRUN -np 2 $ML --barrier-only --iters $I"
echo "(c) $C_WORK"
echo "    $VGRUN $C_WORK"
echo "    $C_BAR"
echo "    $VGRUN $C_BAR"
echo "    $VGQUIET $C_BAR"
# Interleaved: plain and tracked runs alternate (this VM's noise drifts over seconds), R pairs, medians.
R=${MPI_COST_PAIRS:-7}
# pairs R PLAIN_CMD -- TRACKED_CMD: "plain_median tracked_median median_of_pair_ratios_pct"
one() { "$@" 2>/dev/null | sed -n 's/^mpiloop: ranks=.* loop_ns=\([0-9]*\).*/\1/p' | head -1; }
pairs() {
	local n=$1 p t i
	shift
	local plain=()
	while [ "$1" != "--" ]; do plain+=("$1"); shift; done
	shift
	for ((i = 0; i < n; i++)); do
		p=$(one "${plain[@]}") && t=$(one "$@") && [ -n "$p" ] && [ -n "$t" ] || {
			echo "mpi_cost: run failed" >&2
			return 1
		}
		echo "$p $t"
	done | awk '{ p[NR] = $1; t[NR] = $2; r[NR] = ($2 - $1) * 100 / $1 }
		function med(a, n,   i, j, x) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] < a[j-1]; j--) { x = a[j]; a[j] = a[j-1]; a[j-1] = x }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		END { lo = r[1]; hi = r[1]; for (i = 1; i <= NR; i++) { if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i] }
			printf "%.0f %.0f %.2f %.2f %.2f\n", med(p, NR), med(t, NR), med(r, NR), lo, hi }'
}
row() { # LABEL "plain tracked med lo hi"
	local l=$1 p t m lo hi
	read -r p t m lo hi <<<"$2"
	printf '    %-28s %14s %14s %10s %+9.2f%% %18s\n' "$l" "$(per "$p" $I)" "$(per "$t" $I)" \
		"$(delta "$p" "$t" $I)" "$m" "[$lo, $hi]"
}
hdr() { printf '    %-28s %14s %14s %10s %10s %18s\n' "loop" "plain ns/iter" "$1" "delta" "slowdown" "pairs min..max %"; }
# shellcheck disable=SC2086
{
	cw=$(pairs $R $C_WORK -- $VGRUN $C_WORK) && cb=$(pairs $R $C_BAR -- $VGRUN $C_BAR) &&
		cq=$(pairs $R $C_BAR -- $VGQUIET $C_BAR)
} || exit 1
echo "(c) 2 ranks, $I iterations, $R interleaved pairs${VGOPT:+, tracked with $VGOPT} (slowdown: median of the pairs):"
hdr tracked
row "~1000 us work + barrier" "$cw"
row "--barrier-only" "$cb"
row "--barrier-only, no reports" "$cq"

# (d) passive mode alone: the same loops, not preloaded, while `vnoise-guest monitor --cpus all` runs (the
# passive eBPF helper on every switch and interrupt of both CPUs; no wrapper, no pipeline).
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP (d): vnoise-guest monitor needs root"
	exit 0
fi
MON="$VG monitor --cpus all -q --duration 600s"
echo "(d) each monitored run inside: $MON"
# monitored CMD...: CMD while the monitor runs
monitored() {
	local mp
	$MON >/dev/null 2>&1 &
	mp=$!
	sleep 0.5 # loaded and attached
	"$@"
	kill -INT "$mp" 2>/dev/null
	wait "$mp" 2>/dev/null
}
# shellcheck disable=SC2086
{ dw=$(pairs $R $C_WORK -- monitored $C_WORK) && db=$(pairs $R $C_BAR -- monitored $C_BAR); } || exit 1
echo "(d) 2 ranks, $I iterations, plain loops, $R interleaved pairs, under vnoise-guest monitor --cpus all:"
hdr monitored
row "~1000 us work + barrier" "$dw"
row "--barrier-only" "$db"
