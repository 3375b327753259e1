#!/bin/bash
# The progress line of long runs on a terminal. Under a pseudo terminal (script(1)):
# `measure -d 11s` and `record -d 11s` (the latter in a 60-column terminal) show "\r" + "what: elapsed /
# total, left - what is being done" + "\033[K" on stderr, cut to the width - 1, erased before what follows
# (the summary on stdout, the "recorded to" log line), which is then the last line on the screen; with stderr
# to a file, with -q, and for a 3 s run: no progress text at all. `vnoise-bench sweep` (2 levels, ~11 s): the
# steps line "sweep: level 1/2 ... level 2/2 (50%), ... left", erased at the end.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
require_tools script mpirun
VB=$BUILD/vnoise-bench
[ -x "$VB" ] || fail "$VB not built"
ESC=$'\033'
CR=$'\r'

# tty NAME CMD: run CMD (a shell command line) under a pseudo terminal; its terminal output in $TMP/NAME.tty
tty() {
	script -qfec "$2" /dev/null </dev/null >"$TMP/$1.tty" 2>&1
}

# The screen's lines as a terminal shows them: what a "\r" went back over is overwritten, "\033[K" erases.
render() {
	sed -e "s/$CR\$//" -e "s/.*$CR//" -e "s/$ESC\\[K//g" "$1"
}

# The progress texts drawn: each "\r...\033[K" segment's text, one a line.
segments() {
	grep -ao "${CR}[^${CR}${ESC}]*${ESC}\\[K" "$1" | sed -e "s/^${CR}//" -e "s/${ESC}\\[K\$//"
}

# no_progress NAME FILE...: none of the files holds a progress text, an erase or a carriage return
no_progress() {
	local name=$1 f
	shift
	for f in "$@"; do
		if grep -aq -e " left" -e " elapsed" -e "$ESC\\[K" "$f"; then
			fail "$name: progress text in $(basename "$f"): $(cat -v "$f" | head -c 300)"
		fi
	done
	ok "$name: no progress text"
}

cpu=$(test_cpu)
other=0 # record and two of the silent runs: CPU 0 (the same as $cpu on a 1-CPU machine)
# runs side by side on one CPU take turns on it (each counts the other as noise): --force lets them
# (whichever claims the CPU first)
same=
[ "$cpu" = "$other" ] && same=--force

# --- on a terminal: measure and record, side by side ------------------------------------------------------
start=$(date +%s)
tty measure "$VG measure -c $cpu $same -d 11s" &
m=$!
tty record "stty cols 60; $VG record -c $other $same -d 11s -o $TMP/r.vnr" &
r=$!
wait $m || fail "measure under a terminal failed: $(tail -5 "$TMP/measure.tty")"
wait $r || fail "record under a terminal failed: $(tail -5 "$TMP/record.tty")"
echo "measure and record under a terminal: $(($(date +%s) - start)) s"

segments "$TMP/measure.tty" >"$TMP/measure.seg"
n=$(grep -c "^measure: 00:[01][0-9] / 00:11, 00:[01][0-9] left - measuring CPU $cpu\$" "$TMP/measure.seg")
[ "$n" -ge 20 ] || fail "measure: $n progress lines, want >= 20 (4 a second): $(head -3 "$TMP/measure.seg")"
if ! grep -q "^measure: 00:0[0-2] / 00:11, 00:1[01] left" "$TMP/measure.seg" ||
	! grep -q "^measure: 00:1[01] / 00:11, 00:0[01] left" "$TMP/measure.seg"; then
	fail "measure: the line does not count from 00:00 to 00:11: $(sed -n '1p;$p' "$TMP/measure.seg")"
fi
ok "measure: $n redraws, from '$(grep -m1 . "$TMP/measure.seg")' to '$(grep -v '^$' "$TMP/measure.seg" | tail -1)'"
grep -aqF "$CR${ESC}[K""vnoise " "$TMP/measure.tty" ||
	fail "measure: the summary is not preceded by an erase: $(cat -v "$TMP/measure.tty" | tail -c 600)"
render "$TMP/measure.tty" >"$TMP/measure.screen"
grep -q " left" "$TMP/measure.screen" && fail "measure: a progress line stayed on the screen: $(cat "$TMP/measure.screen")"
last=$(tail -1 "$TMP/measure.screen")
grep -q "^overhead: sampler loop" <<<"$last" || fail "measure: the last line is '$last', not the summary's"
grep -qE "^ +$cpu +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+\$" "$TMP/measure.screen" || fail "measure: no summary row on the screen"
ok "measure: erased before the summary, whose last line is the screen's: '$last'"

segments "$TMP/record.tty" >"$TMP/record.seg"
grep -q "^record: 00:0[0-9] / 00:11, 00:[01][0-9] left - recording CPU $other to /tmp" "$TMP/record.seg" ||
	fail "record: no progress line naming the file: $(head -3 "$TMP/record.seg")"
long=$(awk 'length($0) > 59' "$TMP/record.seg" | head -1)
[ -z "$long" ] || fail "record: a progress line wider than 59 columns in a 60-column terminal: '$long'"
full=$(awk 'length($0) == 59' "$TMP/record.seg" | wc -l)
[ "$full" -ge 1 ] || fail "record: no line cut to 59 columns (the text is longer): $(head -2 "$TMP/record.seg")"
render "$TMP/record.tty" >"$TMP/record.screen"
grep -q " left" "$TMP/record.screen" && fail "record: a progress line stayed on the screen: $(cat "$TMP/record.screen")"
last=$(tail -1 "$TMP/record.screen")
[ "$last" = "vnoise-guest: recorded to $TMP/r.vnr" ] || fail "record: the last line is '$last'"
ok "record: cut to 59 columns in a 60-column terminal ('$(head -1 "$TMP/record.seg")'); the last line: '$last'"

# --- no progress: stderr to a file, -q, a 3 s run ---------------------------------------------------------
start=$(date +%s)
tty file "$VG measure -c $cpu $same -d 11s 2>$TMP/file.err" &
f=$!
tty quiet "$VG measure -q -c $other --force -d 11s" &
q=$!
tty short "$VG measure -c $other --force -d 3s" &
s=$!
wait $f || fail "measure with stderr to a file failed: $(cat "$TMP/file.err")"
wait $q || fail "measure -q failed: $(tail -5 "$TMP/quiet.tty")"
wait $s || fail "measure -d 3s failed: $(tail -5 "$TMP/short.tty")"
echo "stderr to a file, -q, -d 3s: $(($(date +%s) - start)) s"
grep -q "^noise by class" "$TMP/file.tty" || fail "stderr to a file: no summary"
no_progress "measure -d 11s 2>FILE" "$TMP/file.err" "$TMP/file.tty"
no_progress "measure -q -d 11s" "$TMP/quiet.tty"
no_progress "measure -d 3s" "$TMP/short.tty"

# --- vnoise-bench sweep: a steps line ---------------------------------------------------------------------
start=$(date +%s)
tty sweep "$VB sweep --levels 0,1 --runs 2 --warmup 0 --run-length 1s --json >$TMP/sweep.json" ||
	fail "sweep under a terminal failed: $(tail -5 "$TMP/sweep.tty")"
echo "sweep under a terminal: $(($(date +%s) - start)) s"
jq -e '.schema == "vnoise.sweep/1"' "$TMP/sweep.json" >/dev/null || fail "sweep: no vnoise.sweep/1 document"
segments "$TMP/sweep.tty" >"$TMP/sweep.seg"
grep -q "^sweep: level 1/2 (0%), 00:0[2-9] elapsed - level 0%: " "$TMP/sweep.seg" ||
	fail "sweep: no line for level 1/2 (after 2 s): $(head -3 "$TMP/sweep.seg")"
grep -q "^sweep: level 2/2 (50%), 00:[0-9][0-9] elapsed, 00:[0-9][0-9] left - level 1%: " "$TMP/sweep.seg" ||
	fail "sweep: no line for level 2/2 with the time left: $(grep -m3 2/2 "$TMP/sweep.seg")"
render "$TMP/sweep.tty" >"$TMP/sweep.screen"
grep -q " elapsed" "$TMP/sweep.screen" && fail "sweep: a progress line stayed on the screen: $(cat "$TMP/sweep.screen")"
grep -q "^vnoise-bench sweep: pass 1/1, level 1%: 2 runs" "$TMP/sweep.screen" ||
	fail "sweep: its per-job line is missing or glued: $(cat "$TMP/sweep.screen")"
ok "sweep: '$(grep -m1 "2/2 (50%)" "$TMP/sweep.seg")'; erased at the end, the per-job lines whole"
