#!/bin/bash
# Acceptance 4: bad input gets one clear line and a distinct exit code; not root falls back to /proc with a
# clear message; an offline CPU is named; signals end a run through the normal exit path and nothing the
# tool set up (BPF programs and links, BPF run-time stats, CPU online state) is left behind.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
require_tools bpftool setpriv
cpu=$(test_cpu)

expect_err 2 "unknown command" "$VG" bogus
expect_err 2 "--cpus" "$VG" measure --cpus x
expect_err 2 "--cpus" "$VG" measure --cpus 1-
expect_err 2 "--period" "$VG" measure --period 0
expect_err 2 "--threshold" "$VG" measure --threshold 5q
expect_err 2 "--duration" "$VG" measure --duration -1
# Overflow is named as such; combined units are taken, largest first
expect_err 2 "invalid --duration '99999999999999999999': out of range" "$VG" measure -d 99999999999999999999
grep -q "want a time" "$TMP/err" && fail "overflow reported as a malformed time: $(cat "$TMP/err")"
expect_err 2 "invalid --duration '30m1h': want a time such as" "$VG" measure -d 30m1h
expect_err 2 "invalid --period '1h2m3s4ms'" "$VG" measure -d 1h2m -p 1h2m3s4ms
expect_err 2 "--priority" "$VG" measure --priority fifo:100
expect_err 2 "unknown option" "$VG" measure --bogus
expect_err 2 "needs a value" "$VG" measure --cpus
expect_err 2 "runtime" "$VG" measure --runtime 2s --period 1s
expect_err 2 "-o FILE" "$VG" record --duration 1s
expect_err 2 "FILE" "$VG" report
# report --gaps: a file without gaps is one line and exit 4 (nothing to print); the option is report's alone
"$VG" record --cpus "$cpu" --duration 0.3s --threshold 1s --helper proc -o "$TMP/nogap.rec" -q >/dev/null 2>&1 ||
	fail "record with a 1 s threshold failed"
expect_err 4 "holds no gaps" "$VG" report "$TMP/nogap.rec" --gaps
expect_err 2 "--gaps and --json: choose one" "$VG" report "$TMP/nogap.rec" --gaps --json
expect_err 2 "--gaps is for report only" "$VG" measure --gaps
expect_err 2 "no -o" "$VG" agent --passive -o "$TMP/a.rec"
expect_err 2 "--level" "$VG" inject --cpu "$cpu" --level 0
expect_err 2 "error" "$VG" inject --level 1
expect_err 4 "CPU 1000 is not present" "$VG" measure --cpus 1000 --duration 1s
# A missing CPU is the same exit code and line in inject as in measure (it was exit 2 in inject)
expect_err 4 "^vnoise-guest: error: CPU 1000 is not present on this machine$" "$VG" inject --cpu 1000 --level 1
# A job command that cannot be started is one line, a shell's exit code and no summary
expect_err 127 "^vnoise-guest: error: cannot run '/nonexistent': command not found$" "$VG" mpi -- /nonexistent
expect_err 127 "cannot run 'vnoise-no-such-command': command not found" "$VG" mpi --no-helper -- vnoise-no-such-command -np 2
expect_err 126 "cannot run '/tmp': Permission denied" "$VG" mpi --no-helper -- /tmp

# A CPU that exists but is offline (real hotplug, restored on every exit path of this test).
if [ -w "/sys/devices/system/cpu/cpu$cpu/online" ] && [ "$cpu" -ge 1 ]; then
	trap 'echo 1 >/sys/devices/system/cpu/cpu'"$cpu"'/online 2>/dev/null; cleanup_lib' EXIT
	echo 0 >"/sys/devices/system/cpu/cpu$cpu/online" || fail "cannot take CPU $cpu offline"
	expect_err 4 "CPU $cpu is offline" "$VG" measure --cpus "$cpu" --duration 1s
	expect_err 4 "CPU $cpu is offline" "$VG" inject --cpu "$cpu" --level 1 --duration 1s
	echo 1 >"/sys/devices/system/cpu/cpu$cpu/online" || fail "cannot bring CPU $cpu back"
	sleep 0.5
else
	echo "note: CPU hotplug not available here; offline CPU case covered by the absent CPU above"
fi

# A run with combined units (1 s)
"$VG" measure --helper proc --cpus "$cpu" -d 0m1s -q --json >"$TMP/cu.json" 2>"$TMP/cu.err" ||
	fail "measure -d 0m1s: $(cat "$TMP/cu.err")"
jq -e '.cpus[0].runtime_ns > 500000000' "$TMP/cu.json" >/dev/null || fail "measure -d 0m1s did not run for 1 s"
ok "measure -d 0m1s (combined units) ran"

# Not root: a clear message and the counters-only fallback, never a crash.
setpriv --reuid=65534 --regid=65534 --clear-groups "$VG" measure --cpus "$cpu" --duration 2s --json \
	>"$TMP/np.json" 2>"$TMP/np.err" || fail "unprivileged measure failed: $(cat "$TMP/np.err")"
grep -q "not root" "$TMP/np.err" || fail "no 'not root' message: $(cat "$TMP/np.err")"
jq -e '.kernel_helper == "proc" and (.cpus[0].runtime_ns > 1000000000)' "$TMP/np.json" >/dev/null ||
	fail "unprivileged run is not a labelled proc fallback: $(head -c 400 "$TMP/np.json")"
jq -e '([.cpus[0].by_class_ns[]] | add) == .cpus[0].noise_ns' "$TMP/np.json" >/dev/null ||
	fail "proc fallback classes do not add up"
ok "not root -> $(cat "$TMP/np.err")"
"$VG" measure --helper bpf --cpus "$cpu" --duration 1s --json >/dev/null 2>"$TMP/e" || fail "--helper bpf as root failed"
setpriv --reuid=65534 --regid=65534 --clear-groups "$VG" measure --helper bpf --cpus "$cpu" --duration 1s \
	>/dev/null 2>"$TMP/e"
[ $? -eq 4 ] && grep -q "needs root" "$TMP/e" || fail "--helper bpf unprivileged: $(cat "$TMP/e")"
ok "--helper bpf unprivileged -> exit 4"
# monitor unprivileged: one line, exit 4; libbpf's own lines only with -v
rc=0
setpriv --reuid=65534 --regid=65534 --clear-groups "$VG" monitor --cpus "$cpu" -d 1s >/dev/null 2>"$TMP/e" || rc=$?
[ "$rc" = 4 ] && [ "$(wc -l <"$TMP/e")" = 1 ] && grep -q "not permitted to load eBPF" "$TMP/e" ||
	fail "monitor unprivileged: exit $rc, want 4 and one line: $(cat "$TMP/e")"
setpriv --reuid=65534 --regid=65534 --clear-groups "$VG" monitor --cpus "$cpu" -d 1s -v >/dev/null 2>"$TMP/ev"
grep -q '^libbpf: ' "$TMP/ev" || fail "monitor -v unprivileged: libbpf's lines not shown: $(cat "$TMP/ev")"
ok "monitor unprivileged -> exit 4, one line: $(cat "$TMP/e"); libbpf's lines with -v"

# Signals: the run ends through the normal path (summary printed) and leaves nothing behind.
# Programs of runs that just ended are freed asynchronously (RCU): count helpers until they are gone.
# Count loaded kernel helper programs. bpftool aborts a listing when a program vanishes under it (programs
# of other runs being freed), so retry until one listing succeeds.
kh_progs() {
	local out _
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		if out=$(bpftool prog show 2>/dev/null); then
			printf '%s\n' "$out" | grep -c ' name ktrace_'
			return 0
		fi
		sleep 0.05
	done
	echo -1
}
settle() {
	local _
	for _ in $(seq 100); do
		[ "$(kh_progs)" -eq 0 ] && return 0
		sleep 0.1
	done
	return 1
}
settle || fail "kernel helper programs of earlier runs are still loaded: is another vnoise-guest running?"
stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
progs_before=0
for sig in INT TERM HUP KILL; do
	"$VG" measure --cpus "$cpu" >"$TMP/sig.out" 2>"$TMP/sig.err" &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 300); do
		grep -q "measuring" "$TMP/sig.err" && [ "$(kh_progs)" -gt "$progs_before" ] && break
		sleep 0.1
	done
	if ! grep -q "measuring" "$TMP/sig.err" || [ "$(kh_progs)" -le "$progs_before" ]; then
		if kill -0 "$pid" 2>/dev/null; then
			state="still running after 30 s; kernel stacks: $(for t in /proc/$pid/task/*; do
				echo "[$(cat "$t/comm") $(cut -d' ' -f3 "$t/stat")]"; head -8 "$t/stack"; done 2>&1 | tr '\n' ' ')"
		else
			wait "$pid"
			state="exited with $?"
		fi
		fail "SIG$sig: helper never loaded (measure $state): $(cat "$TMP/sig.err")"
	fi
	sleep 1
	kill -s "$sig" "$pid"
	wait "$pid"
	rc=$?
	if [ "$sig" != KILL ]; then
		[ "$rc" -eq 0 ] || fail "SIG$sig: exit $rc: $(cat "$TMP/sig.err")"
		grep -q "RUNTIME" "$TMP/sig.out" || fail "SIG$sig: no summary printed"
	fi
	settle || fail "SIG$sig: $(kh_progs) kernel helper programs left loaded"
	[ "$(cat /proc/sys/kernel/bpf_stats_enabled)" = "$stats_before" ] || fail "SIG$sig: bpf_stats_enabled changed"
	ok "SIG$sig: exit $rc, programs unloaded, bpf_stats_enabled still $stats_before"
done
