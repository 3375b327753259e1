#!/bin/bash
# The guest's text views on real runs over every online CPU: every line fits 80 columns and every table's rows
# have its heading's columns; vnoise's own threads (its main thread, which runs on a measured CPU when every
# CPU is measured) are labelled "(vnoise)" in the source lists and marked "vnoise": true in JSON, live and in
# the report of a record (whose META names them: vnoise_tids=).
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"

# check_classes FILE: the class table (CLASS CPU<n>... TOTAL %NOISE) of each CPU adds up to its NOISE: the parts
# to the TOTAL row, the TOTAL row to the NOISE(us) of the CPU's first-table row (within the cells' rounding);
# and the footer has a STEAL / UNEXPL line exactly when that row's TOTAL is over 1% of the table's (a share
# within 0.05 of 1% is not judged). Prints "<steal%> <unexpl%>".
check_classes() {
	awk '
	$1 == "CPU" && $2 == "RUNTIME(us)" { first = 1; next }
	first && $1 ~ /^[0-9]+$/ { noise[$1] = $3; next }
	{ first = 0 }
	$1 == "CLASS" && $2 ~ /^CPU/ { nh = NF; for (i = 2; i <= NF; i++) col[i] = $i; delete sum; nrow = 0; next }
	nh && $1 == "TOTAL" {
		for (i = 2; i <= NF; i++) {
			if ($i - sum[i] > 0.06 * nrow + 0.1 || sum[i] - $i > 0.06 * nrow + 0.1) {
				print col[i] ": parts " sum[i] ", TOTAL " $i; bad = 1 }
			c = col[i]; sub(/^CPU/, "", c)
			if (col[i] ~ /^CPU/ && (noise[c] - $i > 0.6 || $i - noise[c] > 0.6)) {
				print col[i] ": TOTAL " $i ", NOISE " noise[c]; bad = 1 }
			if (col[i] == "TOTAL") total = $i
		}
		nh = 0; tables++; next }
	nh { if (NF != nh) { print "row of " NF " columns under " nh ": " $0; bad = 1 }
		for (i = 2; i <= NF; i++) sum[i] += $i
		nrow++
		if ($1 == "STEAL" || $1 == "UNEXPL") part[$1] = $(nh - 1)
		next }
	/^STEAL [0-9.]+%: / { said["STEAL"] = 1 }
	/^UNEXPL [0-9.]+%: / { said["UNEXPL"] = 1 }
	END {
		if (!tables) { print "no class table"; exit 1 }
		for (k in part) {
			pct = total > 0 ? 100 * part[k] / total : 0
			if (pct > 1.05 && !said[k]) { print k " is " pct "% and the footer does not say it"; bad = 1 }
			if (pct < 0.95 && said[k]) { print k " is " pct "% and the footer says it"; bad = 1 }
			out = out sprintf("%s %.2f%% ", k, pct)
		}
		print out
		exit bad }' "$1" >"$1.classes" || fail "$1: class table: $(cat "$1.classes"): $(cat "$1")"
	cat "$1.classes"
}

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
ok "measure: the class table adds up to NOISE, the footer as the shares say ($(check_classes "$TMP/m.txt"))"

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
ok "report: the class table adds up to NOISE, the footer as the shares say ($(check_classes "$TMP/off.txt"))"
# JSON: by_class_ns adds up to noise_ns exactly (integer ns); its notes are the text footer's lines
for f in live off; do
	jq -e '[.cpus[] | (.by_class_ns | add) == .noise_ns] | all' "$TMP/$f.json" >/dev/null ||
		fail "$f.json: by_class_ns does not add up to noise_ns: $(jq -c '[.cpus[] | {noise_ns, s: (.by_class_ns | add)}]' "$TMP/$f.json")"
done
jq -r '.notes[] | split(":")[0]' "$TMP/off.json" >"$TMP/notes.json.txt"
grep -oE '^(STEAL|UNEXPL|HW) [0-9.]+%' "$TMP/off.txt" >"$TMP/notes.txt.txt" || true
cmp -s "$TMP/notes.json.txt" "$TMP/notes.txt.txt" ||
	fail "report --json notes ($(tr '\n' ' ' <"$TMP/notes.json.txt")) are not the text footer ($(tr '\n' ' ' <"$TMP/notes.txt.txt"))"
ok "JSON: by_class_ns adds up to noise_ns on every CPU, live and in the report; notes as the footer ($(tr '\n' ' ' <"$TMP/notes.txt.txt"))"
