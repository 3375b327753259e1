# Shared helpers of the integration tests (sourced). Tests exit 0 = pass, 77 = skip (after "SKIP: reason").
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${VNOISE_BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
VG="$BUILD/vnoise-guest"
TMP=$(mktemp -d /tmp/vnoise-test.XXXXXX)
PIDS=()
cleanup_lib() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	# VNOISE_KEEP_TMP=1 keeps the test's files for a look after a failure
	if [ "${VNOISE_KEEP_TMP:-0}" = 1 ]; then echo "kept: $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup_lib EXIT

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

require_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
require_bpf() {
	[ -r /sys/kernel/btf/vmlinux ] || skip "kernel has no BTF (/sys/kernel/btf/vmlinux)"
}
require_tools() {
	local t
	for t in "$@"; do command -v "$t" >/dev/null || fail "missing tool $t (run make deps)"; done
}
[ -x "$VG" ] || fail "$VG not built"
require_tools jq

# expect_err EXIT PATTERN CMD...: CMD exits EXIT with exactly one stderr line matching PATTERN, nothing on stdout
expect_err() {
	local want=$1 pat=$2 rc
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ "$rc" -eq "$want" ] || fail "'$*' exited $rc, want $want; stderr: $(cat "$TMP/err")"
	[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$TMP/err") lines on stderr: $(cat "$TMP/err")"
	grep -q -- "$pat" "$TMP/err" || fail "'$*': stderr '$(cat "$TMP/err")' lacks '$pat'"
	[ ! -s "$TMP/out" ] || fail "'$*' printed data on stdout: $(head -3 "$TMP/out")"
	ok "exit $rc: $(cat "$TMP/err")"
}

# The CPU tests measure: the last online CPU (CPU 0 keeps the housekeeping).
test_cpu() {
	local last
	last=$(sed 's/.*[,-]//' /sys/devices/system/cpu/online)
	echo "$last"
}

# Float comparisons through awk: within VALUE EXPECTED TOL
within() { awk -v v="$1" -v e="$2" -v t="$3" 'BEGIN { d = v - e; if (d < 0) d = -d; exit !(d <= t) }'; }
# between VALUE LOW HIGH TOL: LOW - TOL <= VALUE <= HIGH + TOL
between() { awk -v v="$1" -v l="$2" -v h="$3" -v t="$4" 'BEGIN { exit !(v >= l - t && v <= h + t) }'; }

# start_injector PREFIX OUTFILE INJECT_ARGS...: run vnoise-guest inject on the test CPU in the background under
# a unique thread name (15 chars at most), set $comm to it, and let the EXIT trap stop it.
start_injector() {
	local prefix=$1 out=$2
	shift 2
	comm="$prefix$$_$RANDOM"
	comm=${comm:0:15}
	"$VG" inject --cpu "$(test_cpu)" --comm "$comm" "$@" >"$out" 2>&1 &
	INJ_PID=$!
	PIDS+=("$INJ_PID")
	sleep 0.3
}

# make_key FILE: a report key file for nodes and collectors (one random key, id 7, mode 600)
make_key() {
	printf '# test key\n7 %s\n' "$(head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$1"
	chmod 600 "$1"
}

# metrics_port ERRFILE: waits (5 s) for "serving /metrics on port N" in ERRFILE; sets MPORT
metrics_port() {
	local _
	MPORT=
	for _ in $(seq 100); do
		MPORT=$(sed -n 's/.*serving \/metrics on port \([0-9]*\).*/\1/p' "$1")
		[ -n "$MPORT" ] && return 0
		sleep 0.05
	done
	fail "no /metrics port: $(cat "$1")"
}

# start_collector NAME ARGS...: vnoise-host collect with key file $KEY in the background on a free loopback
# port, the JSON report to $TMP/NAME.json, stderr to $TMP/NAME.err; sets CPID and PORT
start_collector() {
	local name=$1 i
	shift
	"$BUILD/vnoise-host" collect -k "$KEY" --listen 127.0.0.1:0 --json "$@" >"$TMP/$name.json" 2>"$TMP/$name.err" &
	CPID=$!
	PIDS+=("$CPID")
	for i in $(seq 100); do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/$name.err" 2>/dev/null)
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	fail "collector $name did not start: $(cat "$TMP/$name.err")"
}
