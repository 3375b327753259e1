#!/bin/bash
# One vnoise sampler per CPU (guest/measure/cpuclaim), with the real commands on this machine:
#  - a second `measure` (and `top --batch`, `record`) on a CPU a `measure` samples refuses, in one line that
#    names the first (what it is, its pid), exit 8, before anything is attached; on another CPU it runs;
#  - with --force it measures, says so, and marks the figures: JSON shared_cpus names the first, and the
#    first's sampler thread, whose time shows as thread noise, is marked "vnoise" among the sources;
#  - the claim goes with its process, even killed -9: the next run takes the CPU.
# The agent's case (the guest agent sampling vCPU 0, `measure -c 0` beside it) is in tests/integration/agent_vm.sh.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
[ "$cpu" -ge 1 ] || skip "needs 2 CPUs (one shared, one not)"
other=$((cpu - 1))

# the first sampler: measure on $cpu for a while
"$VG" measure -c "$cpu" -d 30s -q >/dev/null 2>"$TMP/first.err" &
first=$!
PIDS+=("$first")
# its claim names it, then (once its sampler thread runs) that thread
for _ in $(seq 200); do
	read -r pid tid what <"/run/vnoise-sampler-cpu$cpu.lock" 2>/dev/null
	[ "${pid:-}" = "$first" ] && [ "${tid:-0}" != 0 ] && break
	sleep 0.05
done
[ "${pid:-}" = "$first" ] && [ "${tid:-0}" != 0 ] && [ "${what:-}" = measure ] ||
	fail "the claim of CPU $cpu says '${pid:-} ${tid:-} ${what:-}', want pid $first, a thread, measure"

for cmd in "measure -d 1s" "top -d 1s" "record -d 1s -o $TMP/r.vnr"; do
	rc=0
	"$VG" $cmd -c "$cpu" >"$TMP/second.out" 2>"$TMP/second.err" || rc=$?
	[ "$rc" = 8 ] || fail "${cmd%% *} on a CPU measure samples: exit $rc, want 8: $(cat "$TMP/second.err")"
	[ "$(wc -l <"$TMP/second.err")" = 1 ] || fail "${cmd%% *}: not one line: $(cat "$TMP/second.err")"
	grep -q "CPU $cpu is sampled by vnoise-guest measure (pid $first)" "$TMP/second.err" ||
		fail "${cmd%% *}: the line does not name the first: $(cat "$TMP/second.err")"
	[ ! -e "$TMP/r.vnr" ] || fail "record wrote a file though it refused"
done
ok "measure, top and record on CPU $cpu refuse in one line, exit 8: $(cat "$TMP/second.err")"
"$VG" measure -c "$other" -d 1s -q >/dev/null 2>"$TMP/free.err" || fail "measure on free CPU $other: $(cat "$TMP/free.err")"
ok "CPU $other (not sampled) is measured"

"$VG" measure -c "$cpu" -d 2s --force --json --top 100 >"$TMP/f.json" 2>"$TMP/f.err" ||
	fail "measure --force failed: $(cat "$TMP/f.err")"
grep -q "CPU $cpu is sampled by vnoise-guest measure (pid $first) too (--force)" "$TMP/f.err" ||
	fail "--force does not say it: $(cat "$TMP/f.err")"
[ "$(jq -c '.shared_cpus' "$TMP/f.json")" = "[{\"cpu\":$cpu,\"pid\":$first,\"by\":\"measure\"}]" ] ||
	fail "shared_cpus: $(jq -c '.shared_cpus' "$TMP/f.json")"
marked=$(jq --argjson t "$tid" '[.cpus[0].sources[] | select(.class == "thread" and .pid == $t)] | first' "$TMP/f.json")
[ "$(jq .vnoise <<<"$marked")" = true ] || fail "the first's sampler thread $tid is not marked vnoise: $marked"
share=$(jq --argjson t "$tid" '.cpus[0].sources[] | select(.pid == $t) | .total_ns / 2e7 | . * 10 | round / 10' "$TMP/f.json")
ok "measure --force: said, shared_cpus names pid $first, its sampler thread $tid marked vnoise ($share% of the run as thread noise)"
"$VG" measure -c "$cpu" -d 1s --force >"$TMP/f.txt" 2>/dev/null || fail "measure --force (text) failed"
grep -q "^CPU $cpu shared with vnoise-guest measure (pid $first, --force)" "$TMP/f.txt" ||
	fail "the text header does not say it: $(head -5 "$TMP/f.txt")"
ok "the text header says the CPU was shared"

kill -9 "$first"
wait "$first" 2>/dev/null
"$VG" measure -c "$cpu" -d 1s -q >/dev/null 2>"$TMP/after.err" || fail "after kill -9 of the first: $(cat "$TMP/after.err")"
ok "the first killed (-9): CPU $cpu is taken again"
