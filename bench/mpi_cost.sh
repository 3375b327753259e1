#!/bin/bash
# Cost of the MPI side of libvnoise-preload.so (issue 5), from tests/tools/mpiloop's loop_ns (rank 0's wall
# time of its iteration loop), median of 5 runs each. Figures only.
#   (a) per wrapped MPI_Barrier, untracked: 1 rank, --barrier-only N, plain vs LD_PRELOAD
#   (b) per wrapped MPI_Barrier, tracked (each call closes an interval): the same under vnoise-guest mpi
#   (c) whole job, 2 ranks, 1000 iterations: ~1000 us of work (rounds calibrated once) and --barrier-only,
#       plain vs vnoise-guest mpi
#       (barriers alone also with -D 10000: no interval reported, the cost of tracking without reporting)
# (b) and (c) need `vnoise-guest mpi`; without root it runs with --no-helper (no noise counters).
# Usage: bench/mpi_cost.sh [N]   (N: barriers of (a) and (b), default 200000)
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${VNOISE_BUILD:-build}
N=${1:-200000}
PL=$PWD/$BUILD/libvnoise-preload.so
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
# Barriers alone: nearly every interval has a rank 10% slower than the other, and is reported; a threshold
# no interval reaches shows the tracking alone.
VGQUIET="$VG mpi ${VGOPT:+$VGOPT }-D 10000 -o /dev/null --"
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
# shellcheck disable=SC2086
{
	cw_plain=$(median5 $C_WORK) && cw_trk=$(median5 $VGRUN $C_WORK) &&
		cb_plain=$(median5 $C_BAR) && cb_trk=$(median5 $VGRUN $C_BAR) &&
		cq_trk=$(median5 $VGQUIET $C_BAR)
} || exit 1
echo "(c) 2 ranks, $I iterations${VGOPT:+, tracked with $VGOPT}:"
printf '    %-28s %14s %14s %14s %10s\n' "loop" "plain ns/iter" "tracked" "delta" "slowdown"
printf '    %-28s %14s %14s %14s %10s\n' "~1000 us work + barrier" "$(per "$cw_plain" $I)" \
	"$(per "$cw_trk" $I)" "$(delta "$cw_plain" "$cw_trk" $I)" "$(pct "$cw_plain" "$cw_trk")"
printf '    %-28s %14s %14s %14s %10s\n' "--barrier-only" "$(per "$cb_plain" $I)" \
	"$(per "$cb_trk" $I)" "$(delta "$cb_plain" "$cb_trk" $I)" "$(pct "$cb_plain" "$cb_trk")"
printf '    %-28s %14s %14s %14s %10s\n' "--barrier-only, no reports" "$(per "$cb_plain" $I)" \
	"$(per "$cq_trk" $I)" "$(delta "$cb_plain" "$cq_trk" $I)" "$(pct "$cb_plain" "$cq_trk")"
