#!/bin/bash
# What the packages ship runs with the options it passes, so that a change of convention that breaks a
# shipped file fails here:
#  1. Each systemd unit's ExecStart, with the variables of its EnvironmentFile read from contrib/default/
#     (the /etc/default file it installs) and /usr/sbin/ read as the build: vnoise-host.service on this host
#     (against the test VM's libvirtd; it must print a vnoise.host/1 line for its period), and
#     vnoise-guest-agent.service inside the test VM (the host's `agent status` must answer). Each option the
#     default file gives as an example is run the same way, once.
#  2. The udev rule: the device its SUBSYSTEM and ATTR{name} match exists in the guest, the unit it wants is
#     shipped, and that unit is bound to the device systemd makes of that port (BindsTo=).
#  3. bench/run.sh: every benchmark it runs, with the options it gives (its $BUILD and $CPU), for at most a
#     few seconds each: a benchmark must be running or have finished without an error line; the ones that
#     boot a VM for minutes are listed as skipped, with the reason.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
require_tools systemd-escape timeout
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"
C=$ROOT/contrib

# unit_key UNIT KEY: the value of KEY= in UNIT (the first), "-" of EnvironmentFile dropped
unit_key() { sed -n "s/^$2=-\{0,1\}//p" "$1" | head -1; }
# exec_line UNIT: the unit's ExecStart as a shell word list, its EnvironmentFile's variables expanded (as
# systemd does for $VAR: split on white space), /usr/sbin/ and /usr/bin/ replaced by PREFIX (the second
# argument)
exec_line() {
	local unit=$1 prefix=$2 envf exe
	envf=$(unit_key "$unit" EnvironmentFile)
	[ -n "$envf" ] || fail "$unit has no EnvironmentFile"
	[ -f "$C/default/${envf##*/}" ] || fail "$unit reads $envf, which contrib/default/ does not ship"
	exe=$(unit_key "$unit" ExecStart)
	(
		set -a
		# shellcheck disable=SC1090
		. "$C/default/${envf##*/}"
		eval "printf '%s ' $(sed -E 's#/usr/s?bin/#'"$prefix"'#' <<<"$exe")"
	)
}
# examples FILE: the options a default file gives as examples (its comments from "Examples:" on, text in
# parentheses left out), one a line; NAME and URI read as the test domain and its libvirt, a port as 0
examples() {
	grep '^#' "$1" | sed 's/^# *//' | sed -n '/Examples:/,$p' | sed 's/.*Examples://; s/([^)]*)//g' |
		grep -oE -- '(^|[ ,])--?[A-Za-z][a-z-]*( (NAME|URI|all|[0-9][0-9a-z.:]*))?' | sed -E 's/^[ ,]+//' |
		sed -E -e 's/\.$//' -e "s/ NAME$/ $VM_NAME/" -e 's# URI$# qemu:///system#' -e 's/:[0-9]+$/:0/'
}

# ---- 3. bench/run.sh's benchmarks with their options: run beside the VM parts (no VM, nothing timed) ----
bench_section() {
	CPU=$(test_cpu)
	n=0
	while IFS= read -r line; do
		case "$line" in
		*host_cost.sh* | *match_vm.sh*)
			echo "skipped: '$line': boots its own VM and runs for minutes (make bench)"
			continue
			;;
		esac
		run=${line%% | *} # a pipe into jq: the benchmark's own command
		run=${run//\$BUILD/$BUILD}
		run=${run//\"/}
		run=${run//\$CPU/$CPU}
		run=${run% 2>/dev/null}
		# shellcheck disable=SC2086
		(cd "$ROOT" && VNOISE_BUILD=$BUILD timeout -s TERM 4 $run) >"$TMP/b.out" 2>&1
		rc=$?
		[ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || fail "bench/run.sh's '$line' exited $rc: $(tail -3 "$TMP/b.out")"
		grep -qiE '(^|: )(error|usage):' "$TMP/b.out" && fail "bench/run.sh's '$line': $(grep -iE 'error|usage' "$TMP/b.out" | head -2)"
		n=$((n + 1))
	done < <(grep -E '^("\$BUILD/|bench/|taskset )' "$ROOT/bench/run.sh")
	[ "$n" -ge 12 ] || fail "only $n benchmarks read from bench/run.sh"
	ok "bench/run.sh: $n benchmarks start with their options (4 s each at most), no error line"
}
bench_section >"$TMP/bench.log" 2>&1 &
BENCH=$!
PIDS+=("$BENCH")

vm_setup || fail "vm_setup"
vm_start --pin0 0 --pin 1:1 || fail "vm_start"
vm_wait_ready 90 || fail "guest not ready"

# ---- 1a. vnoise-host.service on this host ----
unit=$C/systemd/vnoise-host.service
cmd=$(exec_line "$unit" "$BUILD/")
echo "vnoise-host.service runs: $cmd"
[[ $cmd =~ --period\ ([0-9]+)s ]] || fail "the unit's options give no --period in seconds: $cmd"
per=${BASH_REMATCH[1]}
# shellcheck disable=SC2086 # the unit's word list
timeout -s TERM $((per + 4)) $cmd >"$TMP/serve.out" 2>"$TMP/serve.err"
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || fail "vnoise-host.service's command exited $rc: $(head -3 "$TMP/serve.err")"
grep -q '"schema":"vnoise.host/1"' "$TMP/serve.out" ||
	fail "vnoise-host.service's command printed no vnoise.host/1 line in $((per + 4)) s: $(head -c 300 "$TMP/serve.out"); $(head -3 "$TMP/serve.err")"
grep -q "\"name\":\"$VM_NAME\"" "$TMP/serve.out" || fail "its JSON does not show the test domain"
ok "vnoise-host.service: its period's vnoise.host/1 line, with the test domain"
n=0
while IFS= read -r ex; do
	# shellcheck disable=SC2086
	out=$($cmd $ex -d 2s 2>&1 >/dev/null)
	rc=$?
	[ "$rc" -eq 0 ] || fail "vnoise-host.service with the example '$ex' from /etc/default/vnoise-host exited $rc: $out"
	n=$((n + 1))
done < <(examples "$C/default/vnoise-host")
[ "$n" -ge 5 ] || fail "only $n examples read from contrib/default/vnoise-host"
ok "vnoise-host.service with each of the $n example options of /etc/default/vnoise-host: exit 0"

# ---- 1b. vnoise-guest-agent.service in the guest ----
unit=$C/systemd/vnoise-guest-agent.service
gcmd=$(exec_line "$unit" "/bin/")
echo "vnoise-guest-agent.service runs: $gcmd"
agent_try() {
	local what=$1 want=$2 out _
	vm_exec "$gcmd >/tmp/unit.log 2>&1 &" >/dev/null || fail "cannot start '$gcmd' in the guest"
	for _ in $(seq 40); do
		out=$(vm_hagent --timeout 3s status --json 2>&1) && jq -e "$want" <<<"$out" >/dev/null && break
		out="no answer: $out"
		sleep 0.5
	done
	jq -e "$want" <<<"$out" >/dev/null 2>&1 ||
		fail "vnoise-guest-agent.service ($what) in the guest: status $out; its log: $(vm_exec 'cat /tmp/unit.log')"
	ok "vnoise-guest-agent.service ($what): $(jq -c '{state}' <<<"$out")"
	# the port opens for one process at a time: wait until this one has gone (it detaches its eBPF first)
	vm_exec 'kill $(pidof vnoise-guest); for i in $(seq 100); do pidof vnoise-guest >/dev/null || exit 0; sleep 0.2; done; exit 1' \
		>/dev/null || fail "the guest agent ($what) did not stop within 20 s of SIGTERM"
}
agent_try "its default options" '.state != null'
base=$gcmd
n=0
while IFS= read -r ex; do
	gcmd="$base $ex"
	agent_try "the example '$ex'" '.state != null'
	n=$((n + 1))
done < <(examples "$C/default/vnoise-guest-agent")
[ "$n" -ge 2 ] || fail "only $n examples read from contrib/default/vnoise-guest-agent"

# ---- 2. the udev rule ----
rule=$C/udev/60-vnoise-guest-agent.rules
sub=$(grep -o 'SUBSYSTEM=="[^"]*"' "$rule" | cut -d'"' -f2)
name=$(grep -o 'ATTR{name}=="[^"]*"' "$rule" | cut -d'"' -f2)
want=$(grep -o 'SYSTEMD_WANTS}="[^"]*"' "$rule" | cut -d'"' -f2)
[ -n "$sub" ] && [ -n "$name" ] && [ -n "$want" ] || fail "cannot read the udev rule: $(cat "$rule")"
found=$(vm_exec "for d in /sys/class/$sub/*; do [ \"\$(cat \$d/name)\" = '$name' ] && echo \${d##*/}; done; true")
[ -n "$found" ] || fail "no $sub device named $name in the guest: $(vm_exec "cat /sys/class/$sub/*/name")"
[ -f "$C/systemd/$want" ] || fail "the rule wants $want, which contrib/systemd/ does not ship"
dev=$(systemd-escape --path --suffix=device "/dev/$sub/$name")
[ "$(unit_key "$C/systemd/$want" BindsTo)" = "$dev" ] ||
	fail "$want binds to '$(unit_key "$C/systemd/$want" BindsTo)', not to the port's device $dev"
ok "udev rule: the guest's $sub device $found is named $name; it wants $want, bound to $dev"

wait "$BENCH" || { cat "$TMP/bench.log"; fail "bench/run.sh's benchmarks (above)"; }
cat "$TMP/bench.log"
exit 0
