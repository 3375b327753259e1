#!/bin/bash
# What the host survives on the guest's side (the agent killed, the region's file removed, a reboot), in one
# VM boot (about 2-3 min under TCG; run it only under `flock /tmp/vnoise-vm.lock`). The guest agent
# measures vCPU 0 with the procfs helper (no eBPF: every record it publishes is a sample, i.e. a gap);
# before each fault it is paused so that its own counter of published records (`vnoise-host agent status`)
# is final for its epoch.
#  1. `vnoise-host record --guest -o F` runs across (a) the agent killed (-9) and restarted, (b) the domain's
#     ivshmem file removed (/dev/shm/<name>), (c) a guest reboot: the record keeps running, logs each new epoch
#     with the epoch that ended (records read, lost, missed: read + lost + missed <= what that agent published,
#     so nothing is read twice), logs the clock aligned again in each new epoch (bound <= 2 ms), says once that
#     the file is gone and goes on reading the mapping (the epoch after the removal is read); its summary has
#     the last epoch, 3 epochs, the clock aligned, matched gaps <= the records the agents published, gap time
#     <= span per vCPU and the hypervisor share <= the gap time. A second vnoise-host started after the removal
#     finds the region through QEMU's mapping.
#  2. libvirtd stopped for 30 s under `serve --json --metrics` and `top --batch`; meanwhile the domain's QEMU
#     is killed; once libvirtd is back the same domain (same name and UUID) is started again: both keep
#     running, reconnect (log, JSON, metrics), drop the dead QEMU and follow the new one; no counter of the
#     exporter goes backwards; serve's open fds are the same within 2.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
require_tools virsh curl
HOST=$BUILD/vnoise-host
[ -x "$HOST" ] || fail "$HOST not built"
URI=qemu:///system
AGENT="vnoise-guest agent --cpus 0 --helper proc"

vm_setup || fail "vm_setup"
vm_start_agent --cpus 0 --helper proc -- --reboot --pin0 0 --pin 1:1 || fail "the agent does not run"
# pause_count: pause the agent (its rings keep what it published); sets PE (epoch) and PP (published)
pause_count() {
	local o
	o=$(vm_hagent --timeout 5s stop 2>&1) && grep -q '^state: paused$' <<<"$o" || fail "agent stop: $o"
	vm_agent_status || fail "status after stop: $out"
	PE=$(vm_epoch_of <<<"$out")
	PP=$(jq .published <<<"$out")
	[ -n "$PE" ] && [ "${PP:-0}" -gt 0 ] || fail "agent status after stop: $out"
}
# start_agent: the agent again (after a kill or a reboot) until it publishes; sets NE (its epoch)
start_agent() {
	vm_exec "$AGENT >/tmp/agent.log 2>&1 &" >/dev/null || fail "cannot start the agent"
	vm_agent_running 40 || fail "the agent does not run: $(vm_exec 'cat /tmp/agent.log')"
	vm_agent_status && NE=$(vm_epoch_of <<<"$out") || fail "status: $out"
}
# wait_log FILE PATTERN WHAT: until FILE has a line matching PATTERN (20 s)
wait_log() {
	local _
	for _ in $(seq 100); do
		grep -q -- "$2" "$1" && return 0
		sleep 0.2
	done
	fail "$3: no '$2' in $1: $(tail -5 "$1")"
}
# epoch_end EPOCH: "R L M" of the ended epoch's log line (records read, lost, missed)
epoch_end() {
	sed -n "s/.*epoch $1 ended: \([0-9]*\) records read, \([0-9]*\) lost, \([0-9]*\) missed.*/\1 \2 \3/p" \
		"$TMP/f.err" | head -1
}
# realigned EPOCH: the bound (us) of the clock's first alignment in that epoch
realigned() { sed -n "s/.*epoch $1: clock aligned again within \([0-9.]*\) us.*/\1/p" "$TMP/f.err" | head -1; }

# ---- 1: record --guest across an agent kill, the region file removed and a guest reboot ----
"$HOST" record --guest -D "$VM_NAME" --connect "$URI" -p 1s -o "$TMP/f.rec" --json >"$TMP/f.json" \
	2>"$TMP/f.err" &
REC=$!
PIDS+=("$REC")
wait_log "$TMP/f.err" "aligned within" "record --guest"
sleep 2
# (a) the agent killed and restarted
pause_count
E1=$PE P1=$PP
vm_exec 'kill -9 $(pidof vnoise-guest)' >/dev/null
start_agent
E2=$NE
[ "$E2" != "$E1" ] || fail "the restarted agent has the old epoch $E1"
wait_log "$TMP/f.err" "new epoch $E2" "the agent killed and restarted"
wait_log "$TMP/f.err" "epoch $E2: clock aligned again" "the agent killed and restarted"
ok "agent killed (-9) and restarted: record --guest follows epoch $E1 -> $E2"
# (b) the region file removed under the running host
[ -f "$VM_SHM" ] || fail "no $VM_SHM"
rm "$VM_SHM"
wait_log "$TMP/f.err" "region file was removed" "the region file removed"
"$HOST" record --guest -D "$VM_NAME" --connect "$URI" -d 3s -o "$TMP/g.rec" --json >"$TMP/g.json" \
	2>"$TMP/g.err" || fail "record --guest after the removal: $(cat "$TMP/g.err")"
grep -q "region file was removed; mapping it through QEMU" "$TMP/g.err" &&
	jq -e '.domains[0].channel | .state == "ok" and .records > 0' "$TMP/g.json" >/dev/null ||
	fail "a new record --guest after the removal: $(jq -c '.domains[0].channel' "$TMP/g.json") $(cat "$TMP/g.err")"
ok "region file removed: a new vnoise-host maps it through QEMU: $(jq -c '.domains[0].channel | {state, records}' "$TMP/g.json")"
# (c) a guest reboot
pause_count
[ "$PE" = "$E2" ] || fail "agent epoch $PE before the reboot, want $E2"
P2=$PP
vm_reboot || fail "the guest did not come back from its reboot"
kill -0 "$REC" 2>/dev/null || fail "record --guest died with the guest's reboot: $(cat "$TMP/f.err")"
start_agent
E3=$NE
wait_log "$TMP/f.err" "new epoch $E3" "the guest rebooted"
wait_log "$TMP/f.err" "epoch $E3: clock aligned again" "the guest rebooted"
sleep 3
pause_count
[ "$PE" = "$E3" ] || fail "agent epoch $PE at the end, want $E3"
P3=$PP
sleep 1.5 # the host reads what the agent published last
kill -TERM "$REC"
wait "$REC"
rc=$?
[ "$rc" -eq 0 ] || fail "record --guest exited $rc: $(cat "$TMP/f.err")"
grep -E "new epoch|aligned|removed" "$TMP/f.err"

# the file says so too
"$HOST" report --guest "$TMP/f.rec" --json >"$TMP/f.rep" || fail "report of the record failed"
[ "$(grep -c "region file was removed" "$TMP/f.err")" = 1 ] ||
	fail "the removal is not said exactly once: $(grep "removed" "$TMP/f.err")"
ch=$(grep -o '"channel":{"state":"[a-z]*","epoch":[0-9]*' "$TMP/f.json" | head -1)
[ "$ch" = "\"channel\":{\"state\":\"ok\",\"epoch\":$E3" ] || fail "summary channel: $ch, want ok and epoch $E3"
jq -e '.domains[0] | .channel.epochs == 3 and .clock.aligned and .clock.uncertainty_ns <= 2000000' \
	"$TMP/f.json" >/dev/null || fail "summary: $(jq -c '.domains[0] | {channel, clock}' "$TMP/f.json")"
for e in "$E2" "$E3"; do
	u=$(realigned "$e")
	awk -v u="${u:-x}" 'BEGIN { exit !(u + 0 == u && u <= 1000) }' || fail "epoch $e aligned within '$u' us"
done
ok "new epochs $E2, $E3 logged and the clock aligned again in each ($(realigned "$E2") us, $(realigned "$E3") us);" \
	"summary: $(jq -c '.domains[0] | {epochs: .channel.epochs, aligned: .clock.aligned, unc: .clock.uncertainty_ns}' "$TMP/f.json")"
# per epoch: read + lost + missed <= published (the last epoch: the summary's totals minus the two before)
read -r R1 L1 M1 <<<"$(epoch_end "$E1")"
read -r R2 L2 M2 <<<"$(epoch_end "$E2")"
[ -n "${R1:-}" ] && [ -n "${R2:-}" ] || fail "no 'epoch ... ended' line for $E1 or $E2: $(grep ended "$TMP/f.err")"
read -r RT LT MT <<<"$(jq -r '.domains[0].channel | "\(.records) \(.lost) \(.missed)"' "$TMP/f.json")"
R3=$((RT - R1 - R2)) L3=$((LT - L1 - L2)) M3=$((MT - M1 - M2))
RS=("$R1" "$R2" "$R3") LS=("$L1" "$L2" "$L3") MS=("$M1" "$M2" "$M3") PS=("$P1" "$P2" "$P3") ES=("$E1" "$E2" "$E3")
for k in 0 1 2; do
	r=${RS[k]} l=${LS[k]} m=${MS[k]} p=${PS[k]} e=${ES[k]}
	echo "epoch $e: published $p; read $r, lost $l, missed $m"
	[ $((r + l + m)) -le "$p" ] || fail "epoch $e: read $r + lost $l + missed $m > published $p (read twice)"
	[ $((2 * r)) -ge "$p" ] || fail "epoch $e: only $r of $p published records read"
done
ok "per epoch, read + lost + missed <= published: $R1+$L1+$M1 <= $P1, $R2+$L2+$M2 <= $P2, $R3+$L3+$M3 <= $P3"
gaps=$(jq '[.domains[0].vcpus[].gaps] | add // 0' "$TMP/f.json")
gonly=$(jq '[.domains[0].vcpus[].guest_only.gaps] | add // 0' "$TMP/f.json")
[ "$gaps" -gt 0 ] && [ "$gaps" -le $((P1 + P2 + P3)) ] && [ "$gonly" -le $((P1 + P2 + P3)) ] ||
	fail "matched gaps $gaps, guest-only gaps $gonly vs $((P1 + P2 + P3)) published"
dur=$(jq .duration_ns "$TMP/f.json")
jq -e --argjson d "$dur" '.domains[0].vcpus | map(.gap_ns <= .span_ns and .span_ns <= $d + 1000000000 and
	([.hypervisor[]] | add) <= .gap_ns) | all' "$TMP/f.json" >/dev/null ||
	fail "gap time above span or hypervisor share above gap time: $(jq -c --argjson d "$dur" \
		'.domains[0].vcpus | map({vcpu, gaps, gap_ns, span_ns, hyp: ([.hypervisor[]] | add)})' "$TMP/f.json")"
jq -e --argjson g "$gaps" '[.domains[0].vcpus[].gaps] | add == $g' "$TMP/f.rep" >/dev/null ||
	fail "report of the file: $(jq -c '[.domains[0].vcpus[].gaps]' "$TMP/f.rep"), summary $gaps gaps"
ok "matched gaps $gaps, guest-only $gonly <= $((P1 + P2 + P3)) published; gap time <= span <= wall per vCPU"

# ---- 2: libvirtd stopped for 30 s under serve and top, the domain's QEMU killed and started again ----
virsh -q -c "$URI" dumpxml "$VM_NAME" >"$TMP/dom.xml" || fail "dumpxml"
uuid=$(virsh -q -c "$URI" domuuid "$VM_NAME")
qpid=$(cat "/run/libvirt/qemu/$VM_NAME.pid")
"$HOST" serve --json -p 1s --metrics 127.0.0.1:0 -D "$VM_NAME" --connect "$URI" >"$TMP/s.jsonl" \
	2>"$TMP/s.err" &
SRV=$!
PIDS+=("$SRV")
"$HOST" top --batch -p 1s -D "$VM_NAME" --connect "$URI" >"$TMP/t.out" 2>"$TMP/t.err" &
TOP=$!
PIDS+=("$TOP")
metrics_port "$TMP/s.err"
sleep 3
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/m1.txt" || fail "scrape before"
fd1=$(ls "/proc/$SRV/fd" | wc -l)
vm_stop_libvirtd || fail "cannot stop libvirtd"
t0=$(date +%s)
sleep 3
kill -9 "$qpid"
while [ $(($(date +%s) - t0)) -lt 30 ]; do sleep 0.5; done
kill -0 "$SRV" 2>/dev/null && kill -0 "$TOP" 2>/dev/null ||
	fail "serve or top died without libvirtd: $(tail -3 "$TMP/s.err") $(tail -3 "$TMP/t.err")"
vm_start_libvirtd || fail "cannot start libvirtd"
for _ in $(seq 100); do
	virsh -q -c "$URI" domstate "$VM_NAME" >/dev/null 2>&1 || break
	sleep 0.2
done
rm -f "$VM_AGENT_SOCK" "$VM_VNOISE_SOCK" "$VM_EXEC_SOCK" ${VM_BELL_SOCK:+"$VM_BELL_SOCK"}
virsh -q -c "$URI" create "$TMP/dom.xml" >"$TMP/virsh.out" 2>&1 || fail "create again: $(cat "$TMP/virsh.out")"
qpid2=$(cat "/run/libvirt/qemu/$VM_NAME.pid")
for _ in $(seq 100); do
	tail -1 "$TMP/s.jsonl" | jq -e --argjson p "$qpid2" '.domains[0].qemu_pid == $p and .domains[0].running' \
		>/dev/null 2>&1 && break
	sleep 0.2
done
sleep 2.5
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/m2.txt" || fail "scrape after"
fd2=$(ls "/proc/$SRV/fd" | wc -l)
kill -0 "$SRV" 2>/dev/null && kill -0 "$TOP" 2>/dev/null || fail "serve or top died"
kill -TERM "$SRV" "$TOP"
wait "$SRV" || fail "serve exited $?: $(tail -3 "$TMP/s.err")"
wait "$TOP" || fail "top exited $?: $(tail -3 "$TMP/t.err")"
for f in s t; do
	nl=$(grep -c "libvirt connection lost" "$TMP/$f.err")
	nr=$(grep -c "connection re-established" "$TMP/$f.err")
	[ "$nl" -ge 1 ] && [ "$nr" = "$nl" ] ||
		fail "$f: connection lost $nl times, re-established $nr times: $(grep -i "connection" "$TMP/$f.err")"
done
tail -1 "$TMP/s.jsonl" | jq -e --argjson p "$qpid2" --arg u "$uuid" '.reconnects >= 1 and
	(.domains | length) == 1 and .domains[0].uuid == $u and .domains[0].qemu_pid == $p and .domains[0].running' \
	>/dev/null || fail "serve's last period (want QEMU $qpid2): $(tail -1 "$TMP/s.jsonl" |
		jq -c '{reconnects, domains: [.domains[] | {name, qemu_pid, running, starts, stops}]}'); $(tail -8 "$TMP/s.err")"
grep -q "$VM_NAME" "$TMP/t.out" || fail "top --batch does not show $VM_NAME"
awk '$1 == "vnoise_host_libvirt_reconnects_total" && $2 >= 1 { f = 1 } END { exit !f }' "$TMP/m2.txt" ||
	fail "reconnects_total: $(grep reconnects "$TMP/m2.txt")"
# no counter series of the first scrape is lower in the second (series that are gone are listed)
awk 'NR == FNR { if ($1 ~ /_total({|$)/) a[$1] = $2; next }
	$1 in a { seen[$1] = 1; if ($2 + 0 < a[$1] + 0) { print "went back: " $1 " " a[$1] " -> " $2; bad = 1 } }
	END { for (k in a) if (!(k in seen)) print "gone: " k; exit bad }' "$TMP/m1.txt" "$TMP/m2.txt" >"$TMP/back" ||
	fail "counters: $(grep "went back" "$TMP/back" | head -5)"
ngone=$(grep -c '^gone' "$TMP/back")
[ "$ngone" = 0 ] || echo "note: $ngone counter series of the first scrape are not in the second: $(head -3 "$TMP/back")"
[ $((fd2 - fd1)) -le 2 ] && [ $((fd1 - fd2)) -le 2 ] || fail "serve's open fds $fd1 -> $fd2"
ok "libvirtd down 30 s, QEMU $qpid killed, $VM_NAME started again (QEMU $qpid2): serve and top reconnected" \
	"and follow it; $(grep -c '_total' "$TMP/m1.txt") counter lines none back; fds $fd1 -> $fd2"
exit 0
