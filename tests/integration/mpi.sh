#!/bin/bash
# A real OpenMPI job (Debian's) under `vnoise-guest mpi`. tests/tools/mpiloop runs an
# iterative kernel (fixed arithmetic per iteration, then MPI_Barrier) on 2 ranks pinned to CPUs 0 and 1. An
# injector process (SCHED_FIFO, "vn-injector") preempts rank 1 for 4 ms in iterations 10, 20 and 30; rank 0
# gets 2.5x the work in iterations 40-44. The reports must name rank 1, exactly those injected iterations
# (as interval numbers) and the injector as the cause, and call rank 0's iterations imbalance, not noise.
# Then: 4 ranks on 2 CPUs with --all (every interval reported once, none lost), UDP output, bad input.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
require_tools mpirun
ML=$BUILD/tests/tools/mpiloop
UC=$BUILD/tests/tools/udpcat
[ -x "$ML" ] && [ -x "$UC" ] && [ -f "$BUILD/libvnoise-preload.so" ] || fail "mpiloop, udpcat or the preload library not built"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
touch "$TMP/start"

expect_err 2 "no command" "$VG" mpi
expect_err 2 "--classes: bad list" "$VG" mpi --classes irq,bogus -- true
expect_err 2 "invalid --udp 'nowhere': want ADDR:PORT" "$VG" mpi --udp nowhere -- true
expect_err 2 "exclude each other" "$VG" mpi --output x --udp 127.0.0.1:9 -- true

# --- acceptance: 2 ranks, injected noise and imbalance --------------------------------------------------
INJ=10,20,30
"$VG" mpi --job accept --delay-pct 20 --output "$TMP/rep.jsonl" -- "${MPIRUN[@]}" -np 2 "$ML" --pin \
	--iters 60 --work-us 3000 --inject 1:4000:$INJ --imbalance 0:2.5:40-44 >"$TMP/job.out" 2>"$TMP/job.err" ||
	fail "the job failed: $(tail -5 "$TMP/job.err") $(tail -3 "$TMP/job.out")"
cat "$TMP/job.out"
grep "job 'accept'" "$TMP/job.err" || fail "no summary: $(cat "$TMP/job.err")"
grep "^vnoise-guest: rank" "$TMP/job.err"
k0=$(sed -n 's/^mpiloop: .*first_interval=\([0-9]*\).*/\1/p' "$TMP/job.out")
[ -n "$k0" ] || fail "mpiloop printed no first_interval"
grep -q "registered" "$TMP/job.err" && grep -q "2 ranks registered" "$TMP/job.err" || fail "not both ranks registered"
grep -q "overrun 0," "$TMP/job.err" || fail "intervals lost (overrun): $(grep job "$TMP/job.err")"
jq -se 'all(.schema == "vnoise.interval/1" and .job == "accept" and .ranks == 2)' "$TMP/rep.jsonl" >/dev/null ||
	fail "bad report lines: $(head -2 "$TMP/rep.jsonl")"
echo "reports: $(wc -l <"$TMP/rep.jsonl") lines"
jq -c '{interval, fastest, slowest, rank: [.rank[] | {rank, verdict, delay_ns, noise_total_ns, cause: (.cause.comm // .cause.class)}]}' "$TMP/rep.jsonl"

# every injected iteration: rank 1 delayed by noise, the injector as cause
for it in ${INJ//,/ }; do
	n=$((k0 + it))
	line=$(jq -c --argjson n "$n" 'select(.interval == $n)' "$TMP/rep.jsonl")
	[ -n "$line" ] || fail "iteration $it (interval $n) was not reported"
	jq -e '.slowest == 1 and any(.rank[]; .rank == 1 and .verdict == "noise" and .cause.class == "thread" and .cause.comm == "vn-injector" and .cause.ns >= 3000000)' <<<"$line" >/dev/null ||
		fail "iteration $it: rank 1 not reported as noise caused by vn-injector: $line"
done
ok "iterations $INJ: rank 1 delayed by noise, cause thread vn-injector (>= 3 ms each)"
# the injector appears nowhere else
others=$(jq -c --argjson a "[$INJ]" --argjson k "$k0" 'select((.interval - $k) as $i | $a | index($i) | not) | select(any(.rank[]; .cause.comm == "vn-injector"))' "$TMP/rep.jsonl")
[ -z "$others" ] || fail "vn-injector named outside its iterations: $others"
ok "vn-injector is named in no other interval"
# imbalance: rank 0 in iterations 40-44
for it in 40 41 42 43 44; do
	n=$((k0 + it))
	line=$(jq -c --argjson n "$n" 'select(.interval == $n)' "$TMP/rep.jsonl")
	[ -n "$line" ] || fail "imbalanced iteration $it (interval $n) was not reported"
	jq -e 'any(.rank[]; .rank == 0 and .verdict == "imbalance")' <<<"$line" >/dev/null ||
		fail "iteration $it: rank 0 not reported as imbalance: $line"
done
ok "iterations 40-44: rank 0 reported as imbalance, not noise"
# few other reports: real noise on this VM may delay an interval now and then, not many
n_other=$(jq -s --argjson k "$k0" '[.[] | select((.interval - $k) as $i | [10,20,30,40,41,42,43,44] | index($i) | not)] | length' "$TMP/rep.jsonl")
echo "other intervals reported: $n_other of 60"
[ "$n_other" -le 10 ] || fail "$n_other other intervals reported (> 10 of 60): the rule flags ordinary iterations"
ok "the filter keeps quiet intervals out ($n_other of 52 others reported)"
# the end table: rank 1 delayed in (at least) the injected intervals, mostly by the injector
grep -E "^vnoise-guest: rank 1 \(pid [0-9]+\): delayed in ([0-9]+)/([0-9]+) intervals, mostly thread:vn-injector\[[0-9]+\] \([0-9]+% of the causes' time\), [0-9.]+ ms in all$" \
	"$TMP/job.err" >"$TMP/rank1" || fail "the end table does not name rank 1 and vn-injector: $(grep 'rank ' "$TMP/job.err")"
d1=$(sed -n 's|.*delayed in \([0-9]*\)/.*|\1|p' "$TMP/rank1")
[ "$d1" -ge 3 ] && [ "$d1" -le $((3 + n_other)) ] || fail "rank 1 delayed in $d1 intervals, injected 3 (+ $n_other others)"
# its worst interval: one of the injected ones (4 ms), rank 0 waiting on it, the injector its cause
grep -E "^vnoise-guest: rank 1: worst interval [0-9]+, [0-9.]+ ms behind rank 0 \(who waited on it\): thread:vn-injector\[[0-9]+\] [0-9.]+ ms$" \
	"$TMP/job.err" >"$TMP/worst1" || fail "no worst interval of rank 1 naming vn-injector: $(grep 'rank 1' "$TMP/job.err")"
wi=$(sed -n 's|.*worst interval \([0-9]*\), \([0-9.]*\) ms behind.*|\2|p' "$TMP/worst1")
awk -v w="$wi" 'BEGIN { exit !(w >= 2.5 && w <= 8) }' || fail "rank 1's worst interval is $wi ms behind (the injection: ~4 ms)"
ok "end table: $(cat "$TMP/rank1"); $(cat "$TMP/worst1")"

# --- the reports on stdout (| jq), the job's own output apart -----------------------------------------
"$VG" mpi --job pipe --delay-pct 20 -- "${MPIRUN[@]}" -np 2 "$ML" --pin --iters 30 --work-us 3000 \
	--inject 1:4000:10,20 >"$TMP/pipe.out" 2>"$TMP/pipe.err" || fail "the job (reports on stdout) failed: $(tail -5 "$TMP/pipe.err")"
jq -ce . <"$TMP/pipe.out" >/dev/null || fail "stdout is not JSON lines only: $(grep -vn '^{' "$TMP/pipe.out" | head -3)"
[ "$(grep -c '"schema":"vnoise.interval/1"' "$TMP/pipe.out")" -ge 1 ] || fail "no report on stdout: $(head -3 "$TMP/pipe.out")"
grep -q '^mpiloop: ranks=2 ' "$TMP/pipe.err" || fail "the job's own line is not on stderr: $(head -5 "$TMP/pipe.err")"
grep -q 'the reports go to stdout, the job.s own output to stderr' "$TMP/pipe.err" || fail "not said: $(head -3 "$TMP/pipe.err")"
ok "reports on stdout: $(wc -l <"$TMP/pipe.out") JSON lines, jq reads them all; the job's output on stderr"

# --- 4 ranks on 2 CPUs, every interval reported, UDP output ----------------------------------------------
"$UC" 5 >"$TMP/udp.out" &
UPID=$!
PIDS+=("$UPID")
for _ in $(seq 50); do grep -q '^port' "$TMP/udp.out" && break; sleep 0.1; done
port=$(sed -n 's/^port //p' "$TMP/udp.out")
[ -n "$port" ] || fail "udpcat did not start"
"$VG" mpi --job four --all --udp "127.0.0.1:$port" -- "${MPIRUN[@]}" -np 4 "$ML" --iters 40 --work-us 1000 \
	>"$TMP/job4.out" 2>"$TMP/job4.err" || fail "the 4-rank job failed: $(tail -5 "$TMP/job4.err")"
wait "$UPID"
grep "job 'four'" "$TMP/job4.err"
grep -q "4 ranks registered" "$TMP/job4.err" || fail "not 4 ranks registered"
tail -n +2 "$TMP/udp.out" >"$TMP/udp.jsonl"
filtered=$(sed -n "s/.*intervals filtered \([0-9]*\).*/\1/p" "$TMP/job4.err")
reported=$(sed -n "s/.*reported \([0-9]*\),.*/\1/p" "$TMP/job4.err")
lines=$(wc -l <"$TMP/udp.jsonl")
echo "4 ranks: filtered $filtered, reported $reported, datagrams received $lines"
[ "$filtered" -ge 40 ] || fail "only $filtered intervals filtered for 40 iterations"
[ "$reported" = "$filtered" ] || fail "--all: reported $reported of $filtered"
[ "$lines" = "$reported" ] || fail "$lines datagrams received, $reported reported"
jq -se 'all(.job == "four" and .ranks == 4 and (.rank | length) == 4) and ([.[].interval] | sort == (. | unique))' "$TMP/udp.jsonl" >/dev/null ||
	fail "bad or duplicated datagrams: $(head -2 "$TMP/udp.jsonl")"
ok "4 ranks: every interval filtered and reported once over UDP, 4 ranks in each"

# --- the registration directory is gone ------------------------------------------------------------------
left=$(find /tmp -maxdepth 1 -name 'vnoise-mpi.*' -newer "$TMP/start")
[ -z "$left" ] || fail "a registration directory was left behind: $left"
ok "no registration directory left"
