#!/bin/bash
# --stop-single / --stop-total stop the run, print the lead-up naming the cause in time from the start of the
# run ("+1.234567 s", as rtla shows it), and exit 3 (not an error code); top refreshes every period and shows
# the last period; hist prints the percentiles per class; the text views fit 80 columns (--wide: wider).
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
start_injector vnstop /dev/null --spike 3000 --every 200ms -P fifo:30 --duration 120s
start=$(date +%s)
# the samplers at SCHED_FIFO 10, below the injector's 30: a 2 ms gap can only be the injector's (or an interrupt's),
# never a busy neighbour's (seen: `as` of a build running beside the test took the stop); runtime 900 ms of
# each second stays under the kernel's RT throttling (950 ms)
"$VG" measure --cpus "$cpu" --stop-single 2000 --duration 15s -P fifo:10 -r 900ms >"$TMP/s.out" 2>"$TMP/s.err"
rc=$?
[ "$rc" -eq 3 ] || fail "--stop-single: exit $rc, want 3: $(cat "$TMP/s.err")"
[ $(($(date +%s) - start)) -lt 10 ] || fail "--stop-single did not stop early"
grep -q "^stop: --stop-single" "$TMP/s.out" || fail "no stop line"
grep -A12 "^stop:" "$TMP/s.out" | grep -q "thread:$comm" || fail "lead-up does not name the injector: $(cat "$TMP/s.out")"
ok "--stop-single: exit 3, lead-up names thread:$comm"
# The lead-up's times: seconds from the start of the run, never raw CLOCK_MONOTONIC nanoseconds.
sed -n '/^stop:/,/^vnoise /p' "$TMP/s.out" | sed '$d' >"$TMP/lead.out"
grep -Eq '^CPU [0-9]+ last noise sample at \+[0-9]+\.[0-9]{6} s, [0-9.]+ us; last events inside noise:$' "$TMP/lead.out" ||
	fail "lead-up: no 'last noise sample at +S.UUUUUU s' line: $(cat "$TMP/lead.out")"
ev=$(grep -Ec '^  [-+][0-9]+\.[0-9]{6} s  net +[0-9.]+ us  [a-z]' "$TMP/lead.out")
[ "$ev" -ge 1 ] && [ "$ev" -eq "$(grep -c '^  ' "$TMP/lead.out")" ] || fail "lead-up: event lines not '+S.UUUUUU s  net X us  NAME': $(cat "$TMP/lead.out")"
! grep -Eq '[0-9]{10}' "$TMP/lead.out" || fail "lead-up shows raw clock values: $(cat "$TMP/lead.out")"
last=$(grep -Eo 'sample at \+[0-9.]+' "$TMP/lead.out" | head -1 | cut -d+ -f2)
awk -v t="$last" 'BEGIN { exit !(t > 0 && t < 15) }' || fail "lead-up: the stopping sample at +$last s is not within the run"
ok "lead-up in time from the start: $(grep -m1 "thread:$comm" "$TMP/lead.out")"
"$VG" measure --cpus "$cpu" --stop-total 10ms --duration 15s >"$TMP/t.out" 2>"$TMP/t.err"
rc=$?
[ "$rc" -eq 3 ] || fail "--stop-total: exit $rc, want 3"
grep -q "^stop: --stop-total" "$TMP/t.out" || fail "no stop-total line"
ok "--stop-total: exit 3"

"$VG" top --cpus "$cpu" --period 1s --duration 3500ms >"$TMP/top.out" 2>&1 || fail "top failed: $(cat "$TMP/top.out")"
n=$(grep -c "^vnoise top" "$TMP/top.out")
[ "$n" -ge 3 ] || fail "top refreshed $n times in 3.5 s, want >= 3"
grep -q "thread:$comm" "$TMP/top.out" || fail "top does not show the injector"
[ "$(grep -c "^vnoise top: the last period" "$TMP/top.out")" -eq "$n" ] || fail "top's header does not say it shows the last period"
# Each refresh shows about one period of runtime (totals since the start would reach 3 s by the third).
runs=$(awk '/^vnoise top/ { t = 1 } t && /RUNTIME\(us\)/ { getline; print $2; t = 0 }' "$TMP/top.out" | tr '\n' ' ')
for r in $runs; do
	[ "$r" -le 1300000 ] || fail "top shows $r us of runtime in one refresh (totals?): $runs"
done
ok "top refreshed $n times, each the last period (runtime us: $runs)"

"$VG" hist --cpus "$cpu" --duration 3s >"$TMP/h.out" 2>&1 || fail "hist failed"
for row in p50 p90 p99 p99.9 p99.99 max count; do
	grep -q "^$row " "$TMP/h.out" || fail "hist lacks row $row"
done
grep -q "THREAD" "$TMP/h.out" || fail "hist lacks the THREAD column"
ok "hist rows p50..max per class"

for f in s.out top.out h.out; do
	[ "$(wc -L <"$TMP/$f")" -le 80 ] || fail "$f is $(wc -L <"$TMP/$f") columns wide, want <= 80: $(awk 'length > 80' "$TMP/$f" | head -3)"
done
"$VG" measure --cpus "$cpu" --duration 1s --wide >"$TMP/w.out" 2>&1 || fail "measure --wide failed"
[ "$(wc -L <"$TMP/w.out")" -gt 80 ] && grep -q "THREAD(n/us)" "$TMP/w.out" || fail "measure --wide is not the wide table"
ok "text views fit 80 columns, --wide gives $(wc -L <"$TMP/w.out")"
