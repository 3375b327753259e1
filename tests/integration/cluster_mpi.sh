#!/bin/bash
# `vnoise-guest mpi --collector` (OpenMPI job, the passive kernel helper, the
# preload library's reporter) and one simulated node form a job at a real `vnoise-host collect`. The
# collector alternates detailed sampling between the two; the real node must report every interval (lost
# none), in detail only while sampled (then with the injector as a cause), from counters otherwise.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
require_tools mpirun
VH="$BUILD/vnoise-host"
SIM="$BUILD/tests/tools/nodesim"
ML=$BUILD/tests/tools/mpiloop
[ -x "$VH" ] && [ -x "$SIM" ] && [ -x "$ML" ] || fail "vnoise-host, nodesim or mpiloop not built"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)

KEY="$TMP/keys"
printf '5 %s\n' "$(head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$KEY"
chmod 600 "$KEY"
expect_err 2 "needs --key-file" "$VG" mpi --collector 127.0.0.1:9 -- true
expect_err 2 "excludes --udp" "$VG" mpi --collector 127.0.0.1:9 -k "$KEY" --udp 127.0.0.1:9 -- true

start_collector c --slot 300ms --wait-nodes 2 --no-store --exclude-pct 1000
"$SIM" -c "127.0.0.1:$PORT" -k "$KEY" -n 1 -j real -i 600 -t 10ms -w 100 >"$TMP/sim.json" 2>"$TMP/sim.err" &
SPID=$!
PIDS+=("$SPID")
INJ=$(seq -s, 10 10 790)
"$VG" mpi --job real --collector "127.0.0.1:$PORT" -k "$KEY" --node-id 2 -o "$TMP/copy.jsonl" -- "${MPIRUN[@]}" -np 2 "$ML" \
	--pin --iters 800 --work-us 3000 --inject 1:2000:$INJ >"$TMP/job.out" 2>"$TMP/job.err" ||
	fail "the job failed: $(tail -5 "$TMP/job.err")"
wait "$SPID"
kill -TERM "$CPID"
wait "$CPID" || fail "collector exited $?"
grep "job 'real'\|collector:" "$TMP/job.err"
N=$(jq -c '.nodes[] | select(.node == 2)' "$TMP/c.json")
[ -n "$N" ] || fail "the collector knows nothing of the real node: $(cat "$TMP/c.err")"
jq -c '{datagrams, lost, intervals, slots_sampled, sources: [.sources[] | {class, name, noise_ns}]}' <<<"$N"
reported=$(sed -n "s/.*job 'real'.* reported \([0-9]*\),.*/\1/p" "$TMP/job.err")
sent=$(sed -n 's/.*collector: \([0-9]*\) report datagrams sent, \([0-9]*\) HELLOs.*/\1 \2/p' "$TMP/job.err")
[ -n "$reported" ] && [ -n "$sent" ] || fail "no summary from vnoise-guest mpi: $(cat "$TMP/job.err")"
grep -q "overrun 0," "$TMP/job.err" || fail "intervals overrun: $(grep "job 'real'" "$TMP/job.err")"
grep -q "output errors 0," "$TMP/job.err" || fail "output errors: $(grep "job 'real'" "$TMP/job.err")"
[ "$(jq .lost <<<"$N")" = 0 ] || fail "the collector lost $(jq .lost <<<"$N") datagrams of the real node"
[ "$(jq .datagrams <<<"$N")" = $((${sent% *} + ${sent#* })) ] ||
	fail "collector has $(jq .datagrams <<<"$N") datagrams, the node sent $sent (reports, HELLOs)"
ivs=$(jq '.intervals.sampled + .intervals.counters' <<<"$N")
# -o beside --collector: every interval sent is a JSON line of the file too
jq -se 'all(.schema == "vnoise.interval/1" and .job == "real")' "$TMP/copy.jsonl" >/dev/null ||
	fail "-o with --collector: bad lines: $(head -c 300 "$TMP/copy.jsonl")"
[ "$(wc -l <"$TMP/copy.jsonl")" = "$reported" ] ||
	fail "-o with --collector: $(wc -l <"$TMP/copy.jsonl") lines, $reported intervals reported"
ok "-o with --collector: $reported intervals in the file as JSON lines"
[ "$ivs" = "$reported" ] || fail "collector has $ivs intervals, the node reported $reported"
[ "$ivs" -ge 790 ] || fail "only $ivs intervals reported of 800 iterations"
s=$(jq .intervals.sampled <<<"$N")
c=$(jq .intervals.counters <<<"$N")
[ "$s" -ge $((ivs / 5)) ] && [ "$c" -ge $((ivs / 5)) ] ||
	fail "sampling did not alternate: $s sampled, $c counters-only of $ivs"
[ "$(jq .slots_sampled <<<"$N")" -ge 3 ] || fail "the real node was sampled in $(jq .slots_sampled <<<"$N") slots"
jq -e '[.sources[] | select(.class == "thread" and .name == "vn-injector")] | length == 1' <<<"$N" >/dev/null ||
	fail "sampled intervals did not name the injector: $(jq -c .sources <<<"$N")"
ok "real node: $ivs intervals ($s sampled, $c from counters), $(jq .datagrams <<<"$N") datagrams, none lost; the injector named in detail"
