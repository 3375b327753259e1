# shellcheck shell=bash
# vmbench: the start shared by the benchmarks that run on a harness VM (bench/host_cost.sh,
# bench/match_vm.sh). Source it from bench/NAME.sh, then:
#   vmbench_init NAME MIN_SECS "$@"   cd to the repository root; set ROOT (that root), BUILD ($VNOISE_BUILD
#                                     or build, made absolute), SECS (the first argument, default 20; not a
#                                     number or below MIN_SECS: usage on stderr, exit 2) and VH (vnoise-host)
#   vmbench_need_root NAME            exit 1 with "NAME: not measured: needs root" unless run as root

vmbench_init() {
	local name=$1 min=$2
	shift 2
	cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
	ROOT=$PWD
	BUILD=${VNOISE_BUILD:-build}
	case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
	SECS=${1:-20}
	# shellcheck disable=SC2034 # for the sourcing script
	VH=$BUILD/vnoise-host
	if ! [[ $SECS =~ ^[0-9]+$ ]] || [ "$SECS" -lt "$min" ]; then
		echo "usage: bench/$name.sh [SECONDS >= $min]" >&2
		exit 2
	fi
}

vmbench_need_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	echo "$1: not measured: needs root"
	exit 1
}
