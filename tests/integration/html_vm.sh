#!/bin/bash
# vnoise-host report FILE --html of a real record against a QEMU TCG test VM: a host hog
# `vnhog...` pinned with vCPU 0 at 50% duty while `vnoise-host record --guest` records 15 s with the guest
# agent measuring vCPU 0. Both pages (the host view and --guest, the combined view) are rendered by headless
# Chromium at 1280x800: a real PNG, no console error, the page's script ran, the SVG plots exist and carry the
# file's data: the hog as the top preemptor / hypervisor source, the domain's name and its vCPU count; the
# combined page has the guest vs hypervisor timeline and the clock uncertainty. The files refer to nothing
# outside themselves.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
. "$(dirname "$0")/html.bash"
require_root
require_bpf
html_require
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"

vm_setup || fail "vm_setup"
vm_start_agent --cpus 0 --duration 60s -- --pin0 0 --pin 1:1 || fail "the agent does not run"
hog="vnhog$$"
hog=${hog:0:15}
"$VG" inject --cpu 0 --comm "$hog" --spike 5000 --every 10ms --quiet >"$TMP/hog.out" 2>&1 &
PIDS+=($!)
sleep 1
"$VH" record --guest -D "$VM_NAME" -d 15s -o "$TMP/h.rec" -q >/dev/null 2>"$TMP/h.err" ||
	{ cat "$TMP/h.err"; fail "record --guest failed"; }
kill "${PIDS[-1]}" 2>/dev/null
[ -z "${HTML_KEEP_DIR:-}" ] || cp "$TMP/h.rec" "$HTML_KEEP_DIR/" # to look at
"$VH" report "$TMP/h.rec" --json >"$TMP/h.json" || fail "report --json failed"
nv=$(jq '.domains[0].vcpus | length' "$TMP/h.json")
top=$(jq -r '[.domains[0].vcpus[] | select(.vcpu == 0) | .preemptors[]] | sort_by(-.total_ns) | .[0].comm' "$TMP/h.json")
echo "the file: $nv vCPUs, top preemptor of vCPU 0: $top"
[ "$top" = "$hog" ] || fail "the host view's top preemptor is $top, not the hog $hog"

"$VH" report "$TMP/h.rec" --html "$TMP/h.html" >"$TMP/h.out" 2>"$TMP/h.rerr" || fail "report --html failed: $(cat "$TMP/h.rerr")"
[ ! -s "$TMP/h.out" ] || fail "report --html printed on stdout: $(head -3 "$TMP/h.out")"
html_self_contained "$TMP/h.html"
html_render "$TMP/h.html" host
grep -q "<td>vCPUs</td><td>$nv</td>" "$TMP/host.dom" || fail "host page: no vCPU count $nv"
grep -q "$VM_NAME vCPU 0: out-time by cause" "$TMP/host.dom" || fail "host page: no timeline of vCPU 0"
[ "$(grep -c '<svg class="plot timeline"' "$TMP/host.dom")" -ge "$nv" ] || fail "host page: fewer timelines than vCPUs"
grep -q 'class="plot histogram"' "$TMP/host.dom" || fail "host page: no histogram"
# the preemptor list: the file's largest preemptor over all vCPUs first (the hog, unless the host was busier)
want=$(jq -r '[.domains[].vcpus[].preemptors[] | select(.comm != "<other>")] | group_by("\(.comm)[\(.pid)]") |
	map({n: "\(.[0].comm)[\(.[0].pid)]", t: (map(.total_ns) | add)}) | max_by(.t) | .n' "$TMP/h.json")
first=$(sed -n '/class="plot bars"/,$p' "$TMP/host.dom" | grep -o '<title>[^<]*</title>' | head -1)
[ "$first" = "<title>$want</title>" ] || fail "host page: the first preemptor is $first, the file's is $want"
grep -q "<title>$hog\[[0-9]*\]</title>" "$TMP/host.dom" || fail "host page: the hog is not among the preemptors"
hogn=$(jq --arg h "$hog" '[.domains[].vcpus[].preemptors[] | select(.comm == $h) | .count] | add' "$TMP/h.json")
grep -q "<title>$hog\[[0-9]*\]</title>$hog\[[0-9]*\]</text>.*($hogn times)" "$TMP/host.dom" ||
	fail "host page: the hog's bar does not carry its $hogn out intervals"
ok "host page: $nv vCPU timelines, $want first among the preemptors, the hog $hog among them"

"$VH" report --guest "$TMP/h.rec" --html "$TMP/m.html" 2>"$TMP/m.rerr" || fail "report --guest --html failed: $(cat "$TMP/m.rerr")"
html_self_contained "$TMP/m.html"
html_render "$TMP/m.html" combined
grep -q "guest vs hypervisor" "$TMP/combined.dom" || fail "combined page: no guest vs hypervisor timeline"
grep -q "clock uncertainty" "$TMP/combined.dom" || fail "combined page: no clock uncertainty plot"
grep -q "host_preempt:$hog" "$TMP/combined.dom" || fail "combined page: the hog is not a hypervisor source"
grep -q "<td>vCPUs</td><td>$nv</td>" "$TMP/combined.dom" || fail "combined page: no vCPU count $nv"
ok "combined page: guest vs hypervisor timelines, clock uncertainty, host_preempt:$hog"

expect_err 2 "--html and --json: choose one" "$VH" report "$TMP/h.rec" --html "$TMP/x.html" --json
expect_err 1 "cannot write '$TMP/h.rec/x.html'" "$VH" report "$TMP/h.rec" --html "$TMP/h.rec/x.html"
size=$(stat -c %s "$TMP/h.rec")
head -c $((size * 2 / 3)) "$TMP/h.rec" >"$TMP/trunc.rec"
"$VH" report "$TMP/trunc.rec" --html "$TMP/trunc.html" >/dev/null 2>"$TMP/trunc.err"
rc=$?
[ "$rc" -eq 5 ] || fail "truncated file: exit $rc, want 5: $(cat "$TMP/trunc.err")"
grep -q "<td>partial file</td><td>the file ends early (truncated)" "$TMP/trunc.html" ||
	fail "truncated file: the page is not marked partial"
ls "$TMP"/*.tmp.* >/dev/null 2>&1 && fail "a temporary file was left behind"
ok "usage and write errors; a truncated file gives a page marked partial and exit 5"
