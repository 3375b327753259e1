#!/bin/bash
# The two views of the same gaps agree, with real libvirtd, QEMU TCG and eBPF on both sides:
#   - on the host, a hog `vnhog...` pinned with vCPU 0 (3 ms every 10 ms) and `vnoise-host record --guest`
#     for 10 s (the combined view: host/match, each matched gap kept in the file);
#   - in the guest, `vnoise-guest agent --cpus 0 -o FILE` measuring vCPU 0, publishing into the ivshmem
#     region and splitting the same gaps itself with the host's dispatch trace log (guest/measure/hypsplit).
# `vnoise-guest report FILE --gaps` (in the guest) and `vnoise-host report FILE --gaps` are joined gap by gap
# (same CPU, start within the clock uncertainty the host reports). A gap the guest left unsplit (it holds
# unexplained time: it began before the host's log covered it) is named apart, and every such gap must come
# before the first gap the guest split. Over the gaps both split, per gap the hypervisor part of the two
# splits from the host's intervals (host_preempt + host_wait) agrees within 2x the clock uncertainty (the final one;
# in the first second the guest splits, while the model settles, the largest of the run) and the totals
# within 1%; each line's classes add up to its duration_ns; and the hog is seen (the host's per-gap
# host_preempt holds >= 85% of the host_preempt its period records give vCPU 0). vmexit and host_irq come from
# per-period aggregates without timestamps: the guest apportions them into its gaps, the host's lines keep
# them in hw (vnoise-host(8), --gaps); their per-gap total on the guest's side is printed, not compared.
# Run only under `flock /tmp/vnoise-vm.lock` (one VM at a time on the test machine).
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
VH=$BUILD/vnoise-host
VG=$BUILD/vnoise-guest
[ -x "$VH" ] || fail "$VH not built"

vm_setup || fail "vm_setup"
vm_start_agent --cpus 0 --duration 90s -o /tmp/agent.rec -- --pin0 0 --pin 1:1 ||
	fail "the agent does not run"

hog="vnhog$$"
hog=${hog:0:15}
"$VG" inject --cpu 0 --comm "$hog" --spike 3000 --every 10ms --quiet >"$TMP/hog.out" 2>&1 &
PIDS+=($!)
sleep 1
"$VH" record --guest -D "$VM_NAME" -d 10s -o "$TMP/m.rec" --json >"$TMP/m.json" 2>"$TMP/m.err" ||
	{ cat "$TMP/m.err"; fail "record --guest failed"; }
kill "${PIDS[-1]}" 2>/dev/null
vm_hagent stop >/dev/null || fail "agent stop failed (its record is sealed when it stops measuring)"
sleep 2
vm_exec --timeout 120 "vnoise-guest report /tmp/agent.rec --gaps >/tmp/g.jsonl 2>/tmp/g.err; echo rc=\$?" \
	>"$TMP/g.rc" || fail "report --gaps in the guest did not answer"
grep -q "rc=0" "$TMP/g.rc" || fail "guest report --gaps: $(cat "$TMP/g.rc") $(vm_exec 'cat /tmp/g.err')"
# read in pieces of 10000 lines (one reply of the exec channel is bounded), the count checked against the guest's
gn=$(vm_exec --timeout 60 "wc -l </tmp/g.jsonl" | tr -dc 0-9) || fail "cannot count the guest's lines"
: >"$TMP/g.jsonl"
for ((i = 1; i <= ${gn:-0}; i += 10000)); do
	vm_exec --timeout 120 "sed -n '$i,$((i + 9999))p' /tmp/g.jsonl" >>"$TMP/g.jsonl" ||
		fail "cannot read the guest's lines from $i"
done
[ "$(wc -l <"$TMP/g.jsonl")" = "${gn:-x}" ] ||
	fail "read $(wc -l <"$TMP/g.jsonl") of the guest's ${gn:-?} lines"
"$VH" report "$TMP/m.rec" --gaps >"$TMP/h.jsonl" 2>"$TMP/h.err" || fail "host report --gaps: $(cat "$TMP/h.err")"

d='.domains[0]'
jq -e "$d.channel.state == \"ok\"" "$TMP/m.json" >/dev/null ||
	fail "channel not ok: $(jq -c "$d.channel" "$TMP/m.json")"
# the clock exchange's bound as the host reports it at the end (clock.uncertainty_ns); the largest over the
# matched gaps (uncertainty_max_ns) is printed beside it: the first gaps of an epoch wait for a fresh model
unc=$(jq "$d.clock.uncertainty_ns" "$TMP/m.json")
umax=$(jq "[$d.vcpus[] | .uncertainty_max_ns // 0] | max" "$TMP/m.json")
[ "$unc" != null ] || fail "no clock model: $(jq -c "$d.clock" "$TMP/m.json")"
echo "clock uncertainty: $unc ns (the largest over the matched gaps: $umax ns)"
ng=$(wc -l <"$TMP/g.jsonl")
nh=$(wc -l <"$TMP/h.jsonl")
echo "lines: guest $ng, host $nh"
[ "$nh" -ge 200 ] || fail "the host matched only $nh gaps in 10 s (the hog makes 1000)"

# every line adds up, on both sides
for f in g h; do
	bad=$(jq -s "[.[] | select(([.classes[]] | add) != .duration_ns)] | length" "$TMP/$f.jsonl")
	[ "$bad" = 0 ] || fail "$bad $f lines whose classes do not add up: $(jq -c "select(([.classes[]] | add) != .duration_ns)" "$TMP/$f.jsonl" | head -2)"
done
ok "every line's classes add up to duration_ns (guest $ng, host $nh lines)"
echo "apportioned from the aggregates: guest vmexit + host_irq $(jq -s '[.[] | (.classes.vmexit // 0) + (.classes.host_irq // 0)] | add' "$TMP/g.jsonl") ns, host (per period, not in its lines) $(jq "[$d.vcpus[] | .hypervisor.vmexit + .hypervisor.host_irq] | add" "$TMP/m.json") ns"

# cpu start duration hypervisor hw unexplained guest-classes, per side
hyp='((.classes.host_preempt // 0) + (.classes.host_wait // 0))'
gst='((.classes.nmi // 0) + (.classes.irq // 0) + (.classes.softirq // 0) + (.classes.thread // 0) + (.classes.hypercall // 0))'
for f in g h; do
	jq -r "[.cpu, .start_ns, .duration_ns, $hyp, (.classes.hw // 0), (.classes.unexplained // 0), $gst] | @tsv" \
		"$TMP/$f.jsonl" >"$TMP/$f.tsv"
done
# The join: each host gap to the guest gap of its CPU whose start is nearest, within unc, and of the same
# length within 2 unc (a host gap whose start was moved up to keep samples in order is another length).
# A joined gap the guest did not split (unexplained time left in it) is counted apart, with its start.
awk -v unc="$unc" -v umax="$umax" -F'\t' '
	function abs(x) { return x < 0 ? -x : x }
	NR == FNR {
		n[$1]++; gs[$1, n[$1]] = $2; gd[$1, n[$1]] = $3; gh[$1, n[$1]] = $4; gu[$1, n[$1]] = $6
		if ($6 == 0 && (!first || $2 < first)) first = $2
		next
	}
	{
		c = $1; k = p[c] ? p[c] : 1
		while (k < n[c] && gs[c, k + 1] <= $2) k++
		p[c] = k; best = 0
		for (j = k - 1; j <= k + 1; j++)
			if (j >= 1 && j <= n[c] && abs(gs[c, j] - $2) <= unc && (!best || abs(gs[c, j] - $2) < abs(gs[c, best] - $2)))
				best = j
		if (!best) { um++; umns += $3; next }
		if (abs(gd[c, best] - $3) > 2 * unc) { ul++; ulns += $3; next }
		used[c, best] = 1
		if (gu[c, best] > 0) { us++; usns += $4; if (gs[c, best] > uslast) uslast = gs[c, best]; next }
		m++; th += $4; tg += gh[c, best]; d = gh[c, best] - $4; dd = abs(d)
		# the first second the guest splits, the model is still settling: its bound is the largest
		# uncertainty of the run, not the final one
		if (gs[c, best] < first + 1e9) { settle++; if (dd <= 2 * (umax > unc ? umax : unc)) next }
		if (dd > maxd) { maxd = dd; maxl = sprintf("cpu %d start %.0f: guest %.0f ns, host %.0f ns of %.0f", c, $2, gh[c, best], $4, $3) }
		if (dd <= 2 * unc) next
		over++
		if (over <= 3) printf "differs: cpu %d start %.0f dur %.0f: guest hyp %.0f, host hyp %.0f\n", c, $2, $3, gh[c, best], $4
	}
	END {
		for (key in gs) { split(key, a, SUBSEP); if (!used[a[1], a[2]] && gh[a[1], a[2]] > 0) { ug++; ugns += gh[a[1], a[2]] } }
		printf "joined %d gaps both split; host gaps unmatched: %d with no guest start within %d ns (%.0f ns), %d of another length (%.0f ns); guest gaps with hypervisor time and no host gap: %d (%.0f ns)\n", m, um, unc, umns, ul, ulns, ug, ugns
		printf "joined gaps the guest left unsplit (before the host log covered them): %d, host hypervisor time %.0f ns, the last at %.0f ns; the first gap the guest split at %.0f ns\n", us, usns, uslast, first
		printf "hypervisor part: guest %.0f ns, host %.0f ns, total difference %.3f%%; max per-gap difference after the first second %.0f ns (%s); %d gaps differ by more than 2x the uncertainty (%.0f ns; the %d gaps of the first second: 2x %.0f ns)\n", tg, th, th ? 100 * (tg - th) / th : 0, maxd, maxl, over, 2 * unc, settle, umax
		printf "%d %d %.0f %.0f %.0f %d %d %.0f %.0f %.0f\n", m, um + ul, th, tg, maxd, over, us, uslast, first, th + usns >"/dev/stderr"
	}' "$TMP/g.tsv" "$TMP/h.tsv" 2>"$TMP/join.out" | tee "$TMP/join.txt"
read -r m um th tg maxd over us uslast first hall <"$TMP/join.out"
[ "${m:-0}" -ge 200 ] || fail "only ${m:-0} gaps both split between the two views ($nh host lines)"
awk -v m="$m" -v u="$um" -v s="$us" 'BEGIN { exit !(u <= 0.05 * (m + u + s)) }' ||
	fail "$um of $((m + um + us)) host gaps have no guest gap within $unc ns"
ok "joined: $m gaps both split, $us the guest left unsplit, $um host gaps unmatched"
[ "$us" = 0 ] || awk -v l="$uslast" -v f="$first" 'BEGIN { exit !(l < f) }' ||
	fail "the guest left a gap unsplit at $uslast ns, after it had split one at $first ns"
ok "the gaps the guest left unsplit all came before its first split one"
# the hog is in the per-gap split: the host's matched host_preempt is mostly its
hp=$(jq "[$d.vcpus[] | select(.vcpu == 0) | .sources[] | select(.class == \"host_preempt\" and .comm == \"$hog\") | .total_ns] | add // 0" "$TMP/m.json")
awk -v t="$hall" -v h="$hp" 'BEGIN { exit !(h > 1e9 && t >= 0.85 * h) }' ||
	fail "per-gap host hypervisor time $hall ns for the hog's host_preempt $hp ns"
ok "the hog: per-gap host hypervisor time $hall ns, its host_preempt $hp ns"
[ "$over" = 0 ] || fail "$over gaps differ by more than 2x $unc ns (max $maxd ns)"
ok "per gap the two splits agree within 2x $unc ns (max difference $maxd ns)"
awk -v g="$tg" -v h="$th" 'BEGIN { d = g - h; if (d < 0) d = -d; exit !(h > 0 && d <= 0.01 * h) }' ||
	fail "totals differ by more than 1%: guest $tg ns, host $th ns"
ok "in total the two splits agree within 1%: guest $tg ns, host $th ns"
