#!/bin/bash
# libvnoise-preload.so on a pthread program of known shape (its pthread wrappers):
# tests/tools/ptload runs 4 threads x 200 iterations of (20 mutex lock/unlock pairs, a barrier); thread 0
# sleeps 3 ms before the barrier in every 10th iteration; main waits on a condition and joins them. The
# per-thread JSON lines must give the exact call counts, and the barrier time of the three threads that wait
# for the sleeper must hold its 20 x 3 ms of sleep (the sleeper's own barrier time must not). And the library
# leaves no symbol undefined that the C library or MPI does not give.
. "$(dirname "$0")/lib.bash"
PL=$BUILD/libvnoise-preload.so
PT=$BUILD/tests/tools/ptload
[ -f "$PL" ] && [ -x "$PT" ] || fail "$PL or $PT not built"
# every symbol the library needs is the C library's or MPI's (PMPI_*, resolved in an MPI program): a
# program loaded with it and bound at once (-z now, as the packages' hardening does) must not fail
undef=$(nm -D --undefined-only "$PL" | awk '$1 == "U" && $2 !~ /@GLIBC/ && $2 !~ /^PMPI_/ { print $2 }')
[ -z "$undef" ] || fail "libvnoise-preload.so leaves symbols undefined: $undef"
LD_BIND_NOW=1 LD_PRELOAD="$PL" sh -c true || fail "a program loaded with the library and bound at once failed"
ok "every symbol the library needs is the C library's or MPI's; bound at once it loads"

out=$(VNOISE_PRELOAD_OUT="$TMP/app.%p.jsonl" LD_PRELOAD="$PL" "$PT" work 4 200 20 3000) ||
	fail "ptload failed under the preload library"
grep -q "^expect: threads=4 barrier_per_thread=200 locks_per_thread=4001 joins=4 .*counter=16000" <<<"$out" ||
	fail "the program's own result changed: $out"
f=$(ls "$TMP"/app.*.jsonl) || fail "no output file (%p not expanded?)"
[ "$(wc -l <"$f")" -eq 5 ] || fail "$(wc -l <"$f") lines, want 5 (4 workers + main)"
jq -se 'all(.schema == "vnoise.app/1" and .rank == -1 and .comm == "ptload")' "$f" >/dev/null ||
	fail "bad line header: $(head -1 "$f")"
ev() { jq -s "[.[] | .events[] | select(.event == \"$1\") | .count]" "$f"; }
[ "$(ev pthread_barrier_wait | jq -c 'sort')" = "[200,200,200,200]" ] || fail "barrier counts $(ev pthread_barrier_wait)"
[ "$(ev pthread_mutex_lock | jq -c 'sort')" = "[1,4001,4001,4001,4001]" ] || fail "lock counts $(ev pthread_mutex_lock)"
[ "$(ev pthread_mutex_unlock | jq -c 'sort')" = "[1,4001,4001,4001,4001]" ] || fail "unlock counts"
[ "$(ev pthread_join | jq -c .)" = "[4]" ] || fail "join counts $(ev pthread_join)"
[ "$(ev pthread_cond_wait | jq 'add')" -ge 1 ] || fail "no cond_wait"
ok "exact counts: 4 x 200 barriers, 4 x 4001 lock/unlock pairs (+1 in main), 4 joins, cond_wait"
# barrier wait: the three waiters hold the sleeper's 20 x 3 ms; min <= avg <= max per line
read -r s0 s1 s2 s3 < <(jq -s -r '[.[] | .events[] | select(.event == "pthread_barrier_wait") | .total_ns] | sort | map(tostring) | join(" ")' "$f")
echo "barrier wait per thread (ns): $s0 $s1 $s2 $s3"
for w in $s1 $s2 $s3; do
	awk -v w="$w" 'BEGIN { exit !(w >= 0.9 * 60e6 && w <= 60e6 + 200 * 2e6) }' ||
		fail "a waiter's barrier time $w ns is not the sleeper's 60 ms"
done
awk -v s="$s0" -v w="$s1" 'BEGIN { exit !(s < 0.5 * w) }' || fail "the sleeper waited as long as the others"
jq -se 'all(.events[] | .min_ns <= .avg_ns and .avg_ns <= .max_ns and .total_ns >= .max_ns)' "$f" >/dev/null ||
	fail "min <= avg <= max <= total violated"
ok "barrier time: waiters $s1-$s3 ns for the sleeper's 60 ms, sleeper $s0 ns"
# without VNOISE_PRELOAD_OUT the lines go to stderr; the program's stdout stays its own
LD_PRELOAD="$PL" "$PT" work 2 10 1 0 >"$TMP/o" 2>"$TMP/e" || fail "ptload failed (stderr mode)"
[ "$(grep -c '"schema":"vnoise.app/1"' "$TMP/e")" -eq 3 ] || fail "stderr: $(cat "$TMP/e")"
grep -q vnoise "$TMP/o" && fail "lines on stdout"
ok "without VNOISE_PRELOAD_OUT: one line per thread on stderr, stdout untouched"
exit 0
