#!/bin/bash
# record -o FILE and report FILE [--json|--hist] give the same views offline as the live run, with the recording's
# version (JSON "version" right after "schema"); a truncated or damaged file reports what it could read, marked
# "partial" (never a 0% CPU available row), says what it could not, and exits 5; a directory is a usage error.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
cpu=$(test_cpu)
start_injector vnrec "$TMP/inj.out" --spike 300 --every 20ms -P fifo:20 --duration 6s
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
# A frame closed by another task's switch would show the injector's pid under another comm or its comm under
# another pid. (Any pid may legitimately show two names: exec renames it - `cc` becomes `as` under a build -
# so only the injector, which never execs, is held to one name.)
ipid=$(sed -n 's/.*inject: pid [0-9]* tid \([0-9]*\).*/\1/p' "$TMP/inj.out" | head -1)
names=$(jq -r --arg c "$comm" --argjson p "${ipid:-0}" '[.cpus[] | .sources[] | select(.class == "thread") |
	select(.name == $c or .pid == $p) | "\(.name)[\(.pid)]"] | unique | join(" ")' "$TMP/off.json")
[ "$names" = "$comm[$ipid]" ] || fail "the injector thread ($comm[$ipid]) shows as: $names"
ok "report equals the live run (noise $(jq '.cpus[0].noise_ns' "$TMP/off.json") ns, injector $a ns)"
ver=$(jq -r .version "$TMP/live.json")
for f in live off; do
	jq -e '(keys_unsorted[0:2] == ["schema", "version"]) and .version != "" and .partial == false' "$TMP/$f.json" >/dev/null ||
		fail "$f.json: no version right after the schema, or marked partial: $(head -4 "$TMP/$f.json")"
done
jq -e --arg v "$ver" '.recorded_version == $v' "$TMP/off.json" >/dev/null || fail "report --json lacks recorded_version $ver"
ok "version $ver in both JSON documents and as the report's recorded_version"

"$VG" report "$TMP/r.vnr" >"$TMP/off.txt" || fail "text report failed"
grep -q "thread:$comm" "$TMP/off.txt" || fail "text report lacks thread:$comm"
[ "$(head -1 "$TMP/off.txt" | cut -d: -f1)" = "recorded by vnoise $ver" ] ||
	fail "report header does not name the recording's version $ver: $(head -1 "$TMP/off.txt")"
"$VG" report "$TMP/r.vnr" --hist >"$TMP/off.hist" || fail "hist report failed"
grep -q "^p99.99" "$TMP/off.hist" || fail "hist report lacks p99.99"
for f in off.txt off.hist; do
	[ "$(wc -L <"$TMP/$f")" -le 80 ] || fail "$f is $(wc -L <"$TMP/$f") columns wide, want <= 80"
done
"$VG" report "$TMP/r.vnr" --wide >"$TMP/wide.txt" || fail "report --wide failed"
[ "$(wc -L <"$TMP/wide.txt")" -gt 80 ] && grep -q "THREAD(n/us)" "$TMP/wide.txt" || fail "report --wide is not the wide table"
ok "text and hist reports (80 columns, --wide wider), header: $(head -1 "$TMP/off.txt")"

size=$(stat -c %s "$TMP/r.vnr")
head -c $((size * 2 / 3)) "$TMP/r.vnr" >"$TMP/trunc.vnr"
"$VG" report "$TMP/trunc.vnr" --json >"$TMP/trunc.json" 2>"$TMP/trunc.err"
rc=$?
[ "$rc" -eq 5 ] || fail "truncated file: exit $rc, want 5"
grep -qi "truncated" "$TMP/trunc.err" || fail "truncated file: stderr does not say so: $(cat "$TMP/trunc.err")"
jq -e '.cpus[0].samples > 0' "$TMP/trunc.json" >/dev/null || fail "truncated file: nothing reported"
jq -e '.partial == true' "$TMP/trunc.json" >/dev/null || fail "truncated file: JSON not marked partial"
ok "truncated: exit 5, $(jq '.cpus[0].samples' "$TMP/trunc.json") samples reported; $(tr '\n' ' ' <"$TMP/trunc.err")"
# A file cut inside its first period: its CPU has noise but no runtime yet: "partial", not 0% CPU available.
cells=""
for n in 2 3 4 6 8; do
	head -c $((size * n / 100)) "$TMP/r.vnr" >"$TMP/cut.vnr"
	"$VG" report "$TMP/cut.vnr" >"$TMP/cut.txt" 2>/dev/null
	rc=$?
	[ "$rc" -eq 5 ] || fail "file cut at $n%: exit $rc, want 5"
	grep -q "^partial: the file ends at chunk [0-9]* (truncated); the last period is incomplete$" "$TMP/cut.txt" ||
		fail "file cut at $n%: no partial line: $(head -5 "$TMP/cut.txt")"
	avail=$(awk '/RUNTIME\(us\)/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { print $4; next } { t = 0 }' "$TMP/cut.txt")
	[ -n "$avail" ] || continue # no CPU row survived
	case $avail in 0.000 | 0) fail "file cut at $n%: a 0% CPU available row: $(cat "$TMP/cut.txt")" ;; esac
	cells="$cells $n%:$avail"
done
ok "files cut short say partial (%CPU_AVAIL:$cells)"

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
expect_err 2 "'$TMP' is a directory, not a record file" "$VG" report "$TMP"
expect_err 2 "is a device, FIFO or socket" "$VG" report /dev/null
