#!/bin/bash
# vnoise-guest report FILE --html: the report of a real record file (an injector of
# known spikes, 300 us every 20 ms, on the test CPU for 4 s) as one self-contained HTML page, rendered by
# Debian's headless Chromium at 1280x800: a real PNG, no console error, the page's script ran, the SVG plots
# exist and carry the file's data: the number of CPUs and the CPU, the injector as the top source with the
# same count as report --json, its ~200 spikes in the 262-524 us bin of the histogram, a timeline per CPU with
# THREAD time. Atomic and one-line errors: --html with --json or --hist is a usage error (2), an unwritable
# path one line and exit 1 with nothing left behind; a truncated file gives a page marked partial and exit 5.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/html.bash"
require_root
require_bpf
html_require
cpu=$(test_cpu)
# a hostile thread name: markup must reach the page as text
start_injector 'v<b>&' /dev/null --spike 300 --every 20ms -P fifo:20 --duration 6s
esc() { printf '%s' "$1" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g'; }
ecomm=$(esc "$comm")
"$VG" record -o "$TMP/r.vnr" --cpus "$cpu" --duration 4s -q >/dev/null 2>"$TMP/rec.err" ||
	fail "record failed: $(cat "$TMP/rec.err")"
"$VG" report "$TMP/r.vnr" --json --top 100 >"$TMP/r.json" || fail "report --json failed"
read -r icount itotal < <(jq -r --arg c "$comm" '[.cpus[0].sources[] | select(.class == "thread" and .name == $c)][0] | "\(.count) \(.total_ns)"' "$TMP/r.json")
echo "the file: injector $comm $icount times, $itotal ns"
[ "$icount" != null ] && [ "$icount" -ge 150 ] || fail "the injector's spikes are not in the file ($icount)"

"$VG" report "$TMP/r.vnr" --html "$TMP/r.html" >"$TMP/out" 2>"$TMP/err" || fail "report --html failed: $(cat "$TMP/err")"
[ ! -s "$TMP/out" ] && [ ! -s "$TMP/err" ] || fail "report --html printed something: $(cat "$TMP/out" "$TMP/err")"
ls "$TMP"/r.html.tmp.* >/dev/null 2>&1 && fail "a temporary file was left behind"
html_self_contained "$TMP/r.html"
html_render "$TMP/r.html" guest
dom=$TMP/guest.dom
grep -q "<td>CPUs</td><td>1 ($cpu)</td>" "$dom" || fail "the page does not say 1 CPU ($cpu)"
grep -q "CPU $cpu: noise by class" "$dom" || fail "no timeline of CPU $cpu"
[ "$(grep -c '<svg class="plot timeline"' "$dom")" -eq 1 ] || fail "want one timeline (one CPU)"
grep -q "<title>THREAD [0-9.]*% at" "$dom" || fail "the timeline has no THREAD time"
# the top sources: the file's largest first (the injector, unless a stranger ran on the CPU), the injector
# with the file's count
top=$(jq -r '.cpus[0].sources | max_by(.total_ns) | "\(.class):\(.name)" + (if .pid then "[\(.pid)]" else "" end)' "$TMP/r.json")
first=$(sed -n '/>top noise sources</,$p' "$dom" | grep -o '<title>[^<]*</title>' | head -1)
# (the tooltip names the source's class after it: "thread:x[1] (THREAD)"; its bar has the class's colour)
case "$first" in
"<title>$(esc "$top") ("*")</title>") ;;
*) fail "the first top source is $first, the file's is $top" ;;
esac
grep -qF "<title>thread:$ecomm[" "$dom" || fail "the injector $comm is not among the top sources"
! grep -q "<b>" "$TMP/r.html" "$dom" || fail "the thread name $comm made markup"
grep -q "($icount times, max" "$dom" || fail "the injector's count $icount is not on the page"
# the histogram: every sample of the file, the ~200 spikes of 300-340 us in the 262-524 us bin (a spike cut by
# the sampler's own run falls below: at least half of them must be there)
total=$(sed -n '/class="plot histogram"/,/<\/svg>/p' "$dom" | grep -o '<title>[^<]* \.\. [^<]*: [0-9]*</title>' |
	sed 's/.*: \([0-9]*\)<.*/\1/' | awk '{ s += $1 } END { print s + 0 }')
samples=$(jq '.cpus[0].samples' "$TMP/r.json")
[ "$total" -eq "$samples" ] || fail "the histogram counts $total samples, the file has $samples"
n=$(grep -o '<title>262 us .. 524 us: [0-9]*</title>' "$dom" | sed 's/.*: \([0-9]*\)<.*/\1/')
echo "histogram: $total samples, ${n:-none} in 262 us .. 524 us"
[ -n "$n" ] && [ "$n" -ge 100 ] && [ "$n" -le 260 ] || fail "histogram bin 262-524 us holds ${n:-nothing}, want ~200"
ok "page carries the file: 1 CPU ($cpu), top source $top, injector $comm ($icount times), $n spikes in the 262-524 us bin"

expect_err 2 "--html and --json: choose one" "$VG" report "$TMP/r.vnr" --html "$TMP/x.html" --json
expect_err 2 "--html and --hist: choose one" "$VG" report "$TMP/r.vnr" --hist --html "$TMP/x.html"
expect_err 2 "--html is for report only" "$VG" measure -d 1s --html "$TMP/x.html"
expect_err 1 "cannot write '$TMP/no/such/dir/x.html'" "$VG" report "$TMP/r.vnr" --html "$TMP/no/such/dir/x.html"
expect_err 2 "is the record file itself" "$VG" report "$TMP/r.vnr" --html "$TMP/../$(basename "$TMP")/r.vnr"
jq -e '.cpus[0].samples > 0' <("$VG" report "$TMP/r.vnr" --json) >/dev/null || fail "the record file was harmed"
# root ignores permissions: a path below a regular file cannot be written by anyone
expect_err 1 "cannot write '$TMP/r.vnr/x.html'" "$VG" report "$TMP/r.vnr" --html "$TMP/r.vnr/x.html"
[ ! -e "$TMP/x.html" ] || fail "a failed report left $TMP/x.html"

size=$(stat -c %s "$TMP/r.vnr")
head -c $((size * 2 / 3)) "$TMP/r.vnr" >"$TMP/trunc.vnr"
"$VG" report "$TMP/trunc.vnr" --html "$TMP/trunc.html" >/dev/null 2>"$TMP/trunc.err"
rc=$?
[ "$rc" -eq 5 ] || fail "truncated file: exit $rc, want 5"
grep -q "<td>partial file</td><td>the file ends at chunk [0-9]* (truncated)" "$TMP/trunc.html" ||
	fail "truncated file: the page is not marked partial"
ok "truncated file: exit 5, a page marked partial"

# vnoise-host report --html without a VM: libvirt's test driver, no domain monitored: a page with empty
# plots; the same rules and errors as the guest's
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"
"$VH" record --no-dispatch --connect test:///default -p 100ms -d 300ms -o "$TMP/e.rec" -q >/dev/null 2>"$TMP/e.err" ||
	fail "host record failed: $(cat "$TMP/e.err")"
"$VH" report "$TMP/e.rec" --html "$TMP/e.html" >"$TMP/out" 2>"$TMP/err" || fail "host report --html failed: $(cat "$TMP/err")"
[ ! -s "$TMP/out" ] || fail "host report --html printed on stdout"
html_self_contained "$TMP/e.html"
html_render "$TMP/e.html" host-empty
grep -q "<td>vCPUs</td><td>0</td>" "$TMP/host-empty.dom" || fail "empty host page: no vCPU count 0"
grep -q ">no data<" "$TMP/host-empty.dom" || fail "empty host page: the histogram does not say no data"
expect_err 2 "--html and --json: choose one" "$VH" report "$TMP/e.rec" --html "$TMP/x.html" -j
expect_err 2 "--html is for report only" "$VH" top --html "$TMP/x.html"
expect_err 1 "cannot write '$TMP/e.rec/x.html'" "$VH" report "$TMP/e.rec" --html "$TMP/e.rec/x.html"
expect_err 2 "is the record file itself" "$VH" report "$TMP/e.rec" --html "$TMP/e.rec"
expect_err 1 "no combined guest + host data" "$VH" report --guest "$TMP/e.rec" --html "$TMP/x.html"
[ ! -e "$TMP/x.html" ] || fail "a failed host report left $TMP/x.html"
ok "host report --html of a file without domains; its usage and write errors"
