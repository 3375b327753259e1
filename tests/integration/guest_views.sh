#!/bin/bash
# The guest's text views on real runs over every online CPU: every line fits 80 columns and every table's rows
# have its heading's columns; vnoise's own threads (its main thread, which runs on a measured CPU when every
# CPU is measured) are labelled "(vnoise)" in the source lists and marked "vnoise": true in JSON, live and in
# the report of a record (whose META names them: vnoise_tids=).
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"

# check_shape FILE: under each heading (a line of names: CPU ..., COUNT ...), every row (first cell a number)
# has the heading's columns; in source tables the last column (SOURCE) is free text.
check_shape() {
	awk '
	$1 == "CPU" && $2 !~ /^[0-9]+$/ { nh = NF; free = 0; next }
	$1 == "COUNT" { nh = NF; free = 1; next }
	nh && $1 ~ /^[0-9]+$/ {
		if (free ? NF < nh : NF != nh) { print "row of " NF " columns under " nh ": " $0; bad = 1; exit }
		for (i = 2; i < (free ? nh : NF + 1); i++)
			if ($i !~ /^[0-9.\/-]+$/ && $i != "partial") { print "bad cell " i ": " $0; bad = 1; exit }
		rows++; next }
	{ nh = 0 }
	END { if (!bad && !rows) print "no table rows"; exit bad || !rows }' "$1" || fail "$1: table shape: $(cat "$1")"
}

"$VG" measure --cpus all --duration 2s --top 1000 >"$TMP/m.txt" 2>"$TMP/m.err" &
pid=$!
wait "$pid" || fail "measure failed: $(cat "$TMP/m.err")"
[ "$(wc -L <"$TMP/m.txt")" -le 80 ] || fail "measure is $(wc -L <"$TMP/m.txt") columns wide: $(awk 'length > 80' "$TMP/m.txt" | head -3)"
check_shape "$TMP/m.txt"
grep -q "thread:vnoise-guest\[$pid\] (vnoise)$" "$TMP/m.txt" || fail "vnoise's main thread ($pid) is not labelled: $(grep vnoise-guest "$TMP/m.txt")"
! grep "thread:vnoise-guest\[$pid\]$" "$TMP/m.txt" || fail "vnoise's main thread listed without its label"
ok "measure over all CPUs: 80 columns, tables in shape, $(grep -c "(vnoise)$" "$TMP/m.txt") of vnoise's own listed as (vnoise)"

"$VG" top --cpus all --duration 2500ms >"$TMP/top.txt" 2>&1 || fail "top failed: $(cat "$TMP/top.txt")"
[ "$(wc -L <"$TMP/top.txt")" -le 80 ] || fail "top is $(wc -L <"$TMP/top.txt") columns wide"
check_shape "$TMP/top.txt"
"$VG" hist --cpus all --duration 1s >"$TMP/hist.txt" 2>&1 || fail "hist failed"
[ "$(wc -L <"$TMP/hist.txt")" -le 80 ] || fail "hist is $(wc -L <"$TMP/hist.txt") columns wide"
ok "top and hist over all CPUs: 80 columns"

"$VG" record -o "$TMP/r.vnr" --cpus all --duration 2s --top 1000 --json -q >"$TMP/live.json" 2>"$TMP/rec.err" &
pid=$!
wait "$pid" || fail "record failed: $(cat "$TMP/rec.err")"
"$VG" report "$TMP/r.vnr" --json --top 1000 >"$TMP/off.json" || fail "report failed"
for f in live off; do
	marks=$(jq -c --argjson p "$pid" '[.cpus[].sources[] | select(.class == "thread" and .pid == $p) | .vnoise]' "$TMP/$f.json")
	case $marks in '[true'*) ;; *) fail "$f.json: vnoise's main thread $pid marked $marks" ;; esac
	[ "$(jq '[.cpus[].sources[] | select(.vnoise == true)] | length' "$TMP/$f.json")" -eq "$(jq '[.cpus[].sources[] | select(.vnoise == true and .name == "vnoise-guest")] | length' "$TMP/$f.json")" ] ||
		fail "$f.json: a thread not of vnoise marked vnoise"
done
"$VG" report "$TMP/r.vnr" --top 1000 >"$TMP/off.txt" || fail "text report failed"
grep -q "thread:vnoise-guest\[$pid\] (vnoise)$" "$TMP/off.txt" || fail "report does not label vnoise's main thread $pid"
ok "record + report: vnoise's own threads marked from the file's vnoise_tids"
