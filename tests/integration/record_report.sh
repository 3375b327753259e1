#!/bin/bash
# record -o FILE and report FILE [--json|--hist] give the same views offline as the live run; a truncated or
# damaged file reports what it could read, says what it could not, and exits 5.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
start_injector vnrec /dev/null --spike 300 --every 20ms -P fifo:20 --duration 6s
"$VG" record -o "$TMP/r.vnr" --cpus "$cpu" --duration 4s --json --top 100 -q >"$TMP/live.json" 2>"$TMP/rec.err" ||
	fail "record failed: $(cat "$TMP/rec.err")"
[ -s "$TMP/r.vnr" ] || fail "no record file"
"$VG" report "$TMP/r.vnr" --json --top 100 >"$TMP/off.json" 2>"$TMP/rep.err" || fail "report failed: $(cat "$TMP/rep.err")"
for k in runtime_ns noise_ns samples max_single_ns; do
	a=$(jq ".cpus[0].$k" "$TMP/live.json")
	b=$(jq ".cpus[0].$k" "$TMP/off.json")
	[ "$a" = "$b" ] || fail "$k: live $a, report $b"
done
for c in nmi irq softirq thread hypercall steal unexplained; do
	a=$(jq ".cpus[0].by_class_ns.$c" "$TMP/live.json")
	b=$(jq ".cpus[0].by_class_ns.$c" "$TMP/off.json")
	[ "$a" = "$b" ] || fail "by_class_ns.$c: live $a, report $b"
done
a=$(jq --arg c "$comm" '[.cpus[0].sources[] | select(.name == $c) | .total_ns] | add' "$TMP/live.json")
b=$(jq --arg c "$comm" '[.cpus[0].sources[] | select(.name == $c) | .total_ns] | add' "$TMP/off.json")
[ "$a" = "$b" ] && [ "$a" != null ] && [ "$a" -gt 0 ] || fail "injector total: live $a, report $b"
jq -e '.overhead.bpf_events > 0 and .kernel_helper == "bpf"' "$TMP/off.json" >/dev/null || fail "report lost the overhead block"
# A pid names one thread: a frame closed by another task's switch would show the pid under two comms.
dup=$(jq '[.cpus[] | [.sources[] | select(.class == "thread") | .pid] | group_by(.) | map(select(length > 1)) | length] | add' "$TMP/off.json")
[ "$dup" -eq 0 ] || fail "$dup thread pids appear under more than one name"
ok "report equals the live run (noise $(jq '.cpus[0].noise_ns' "$TMP/off.json") ns, injector $a ns)"

"$VG" report "$TMP/r.vnr" >"$TMP/off.txt" || fail "text report failed"
grep -q "thread:$comm" "$TMP/off.txt" || fail "text report lacks thread:$comm"
"$VG" report "$TMP/r.vnr" --hist >"$TMP/off.hist" || fail "hist report failed"
grep -q "^p99.99" "$TMP/off.hist" || fail "hist report lacks p99.99"
ok "text and hist reports"

size=$(stat -c %s "$TMP/r.vnr")
head -c $((size * 2 / 3)) "$TMP/r.vnr" >"$TMP/trunc.vnr"
"$VG" report "$TMP/trunc.vnr" --json >"$TMP/trunc.json" 2>"$TMP/trunc.err"
rc=$?
[ "$rc" -eq 5 ] || fail "truncated file: exit $rc, want 5"
grep -qi "truncated" "$TMP/trunc.err" || fail "truncated file: stderr does not say so: $(cat "$TMP/trunc.err")"
jq -e '.cpus[0].samples > 0' "$TMP/trunc.json" >/dev/null || fail "truncated file: nothing reported"
ok "truncated: exit 5, $(jq '.cpus[0].samples' "$TMP/trunc.json") samples reported; $(tr '\n' ' ' <"$TMP/trunc.err")"

cp "$TMP/r.vnr" "$TMP/bad.vnr"
printf 'XXXXXXXXXXXXXXXX' | dd of="$TMP/bad.vnr" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$VG" report "$TMP/bad.vnr" --json >"$TMP/bad.json" 2>"$TMP/bad.err"
rc=$?
[ "$rc" -eq 5 ] || fail "damaged file: exit $rc, want 5"
grep -qiE "crc|damaged|mismatch" "$TMP/bad.err" || fail "damaged file: stderr does not say so: $(cat "$TMP/bad.err")"
jq -e '.cpus[0].samples > 0' "$TMP/bad.json" >/dev/null || fail "damaged file: nothing reported"
ok "damaged: exit 5; $(head -1 "$TMP/bad.err")"

head -c 4096 /dev/urandom >"$TMP/junk.vnr"
"$VG" report "$TMP/junk.vnr" >/dev/null 2>"$TMP/junk.err"
rc=$?
[ "$rc" -eq 5 ] || fail "junk file: exit $rc, want 5"
grep -q "not a vnoise record file" "$TMP/junk.err" || fail "junk file: $(cat "$TMP/junk.err")"
"$VG" report "$TMP/does-not-exist" >/dev/null 2>"$TMP/ne.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "cannot open" "$TMP/ne.err" || fail "missing file: exit $rc: $(cat "$TMP/ne.err")"
ok "junk and missing files"
