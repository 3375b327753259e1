#!/bin/bash
# Cost of libvnoise-preload.so per wrapped call (target: <= 1 us): tests/tools/ptload lockloop N
# (N pthread_mutex_lock/unlock pairs on one thread) without and with the library, best of 3 each; the
# difference per pair / 2 is the added cost of one wrapped call. Figures only. Usage: bench/preload_cost.sh [N]
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${VNOISE_BUILD:-build}
N=${1:-5000000}
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
PL=$BUILD/libvnoise-preload.so
PT=$BUILD/tests/tools/ptload
echo "# preload_cost: $N lock/unlock pairs, best of 3 (reproduce: make && bench/preload_cost.sh $N)"
[ -f "$PL" ] && [ -x "$PT" ] || {
	echo "preload_cost: not measured: $PL or $PT not built (make)"
	exit 1
}
best() {
	local b='' v
	for _ in 1 2 3; do
		v=$("$@" | sed -n 's/.*, \([0-9.]*\) ns per pair/\1/p')
		if [ -z "$b" ] || awk -v v="$v" -v b="$b" 'BEGIN { exit !(v < b) }'; then b=$v; fi
	done
	echo "$b"
}
plain=$(best "$PT" lockloop "$N")
wrapped=$(best env LD_PRELOAD="$PL" VNOISE_PRELOAD_OUT=/dev/null "$PT" lockloop "$N")
awk -v p="$plain" -v w="$wrapped" 'BEGIN { printf "lock/unlock pair: %.1f ns plain, %.1f ns wrapped: +%.1f ns per wrapped call (target <= 1000 ns)\n", p, w, (w - p) / 2 }'
