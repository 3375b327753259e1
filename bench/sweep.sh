#!/bin/bash
# Seed 003's sensitivity study on this machine: `vnoise-bench sweep --quick`, the collective noise
# detector (2 ranks, barrier loop, runs of ~1 s) at injection levels 0, 0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 1%
# (`vnoise-guest inject --level`, one burst per second on the last CPU), with what `vnoise-guest monitor`
# charged to the injector thread in the same runs beside it. Prints the table in the layout of the paper's
# Tables 3-6, the two sensitivity verdicts, the sweep's duration and the command that reproduces it; the
# lines on stderr are the progress per job. Figures only (never pass/fail); as root, or the vnoise row is
# n/a. Usage: bench/sweep.sh [more vnoise-bench sweep options, e.g. --op alltoall]
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${VNOISE_BUILD:-build}
VB=$BUILD/vnoise-bench
echo "# sweep: the collective detector vs vnoise at injection levels 0..1% (reproduce: make && bench/sweep.sh $*)"
[ -x "$VB" ] && [ -x "$BUILD/vnoise-guest" ] || {
	echo "sweep: not measured: $VB or $BUILD/vnoise-guest not built (make)"
	exit 1
}
command -v mpirun >/dev/null || {
	echo "sweep: not measured: no mpirun (make deps)"
	exit 1
}
# The detector's figures depend on what else runs here: say so.
echo "machine: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
start=$(date +%s)
"$VB" sweep --quick "$@"
rc=$?
echo "sweep duration: $(($(date +%s) - start)) s (exit $rc)"
exit "$rc"
