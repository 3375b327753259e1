#!/bin/bash
# --stop-single / --stop-total stop the run, print the lead-up naming the cause, and exit 3 (not an error
# code); top refreshes every period; hist prints the percentiles per class.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
start_injector vnstop /dev/null --spike 3000 --every 200ms -P fifo:30 --duration 120s
start=$(date +%s)
"$VG" measure --cpus "$cpu" --stop-single 2000 --duration 15s >"$TMP/s.out" 2>"$TMP/s.err"
rc=$?
[ "$rc" -eq 3 ] || fail "--stop-single: exit $rc, want 3: $(cat "$TMP/s.err")"
[ $(($(date +%s) - start)) -lt 10 ] || fail "--stop-single did not stop early"
grep -q "^stop: --stop-single" "$TMP/s.out" || fail "no stop line"
grep -A12 "^stop:" "$TMP/s.out" | grep -q "thread:$comm" || fail "lead-up does not name the injector: $(cat "$TMP/s.out")"
ok "--stop-single: exit 3, lead-up names thread:$comm"
"$VG" measure --cpus "$cpu" --stop-total 10ms --duration 15s >"$TMP/t.out" 2>"$TMP/t.err"
rc=$?
[ "$rc" -eq 3 ] || fail "--stop-total: exit $rc, want 3"
grep -q "^stop: --stop-total" "$TMP/t.out" || fail "no stop-total line"
ok "--stop-total: exit 3"

"$VG" top --cpus "$cpu" --period 1s --duration 3500ms >"$TMP/top.out" 2>&1 || fail "top failed: $(cat "$TMP/top.out")"
n=$(grep -c "^vnoise top" "$TMP/top.out")
[ "$n" -ge 3 ] || fail "top refreshed $n times in 3.5 s, want >= 3"
grep -q "thread:$comm" "$TMP/top.out" || fail "top does not show the injector"
ok "top refreshed $n times"

"$VG" hist --cpus "$cpu" --duration 3s >"$TMP/h.out" 2>&1 || fail "hist failed"
for row in p50 p90 p99 p99.9 p99.99 max count; do
	grep -q "^$row " "$TMP/h.out" || fail "hist lacks row $row"
done
grep -q "THREAD" "$TMP/h.out" || fail "hist lacks the THREAD column"
ok "hist rows p50..max per class"
