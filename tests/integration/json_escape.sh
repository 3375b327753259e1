#!/bin/bash
# Every JSON goes through the JSON writer. A process whose comm holds '"', '\' and a control byte
# (a shell renames itself through /proc/self/comm; the kernel keeps the bytes as they are) is followed by
# `vnoise-guest monitor --pid P --json` while an injector with such a comm preempts it: every line must parse
# with jq and give back both names exactly (the target's comm and the injector as a cause).
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
[ "$cpu" -ge 1 ] || skip "needs 2 CPUs (one for the target, one for housekeeping)"

# shellcheck disable=SC2016 # the single quotes are for the inner shell
taskset -c "$cpu" bash -c 'printf "t\"q\\\\b\001x" >/proc/self/comm; while :; do :; done' &
TGT=$!
PIDS+=("$TGT")
icomm=$'i"n\\j\002'
"$VG" inject --cpu "$cpu" --comm "$icomm" --spike 2000 --every 20ms -P fifo:10 --duration 8s \
	>"$TMP/inj.out" 2>&1 &
PIDS+=("$!")
sleep 0.3
tcomm=$(cat "/proc/$TGT/comm")
[ "$tcomm" = $'t"q\\b\001x' ] || skip "the kernel changed the comm to '$tcomm'"

"$VG" monitor --pid "$TGT" --period 1s --duration 3s --json >"$TMP/mon.json" 2>"$TMP/mon.err" ||
	fail "monitor failed: $(cat "$TMP/mon.err")"
n=0
while IFS= read -r line; do
	jq -e . >/dev/null 2>&1 <<<"$line" || fail "not JSON: $line"
	n=$((n + 1))
done <"$TMP/mon.json"
[ "$n" -ge 2 ] || fail "want period lines and a summary, got $n lines"
got=$(jq -r 'select(.kind == "summary") | .targets[0].comm' "$TMP/mon.json")
[ "$got" = "$tcomm" ] || fail "comm '$got' (from JSON) differs from '$tcomm'"
ok "monitor --json: $n lines parse, the comm with '\"', '\\' and \\001 comes back exactly"
jq -e --arg s "thread:${icomm}[" \
	'select(.kind == "summary") | [.targets[0].causes[].source | startswith($s)] | any' \
	"$TMP/mon.json" >/dev/null || fail "the injector '$icomm' is not among the causes: $(tail -1 "$TMP/mon.json")"
ok "the injector's comm with '\"', '\\' and \\002 comes back exactly as a cause"
