#!/bin/bash
# vnoise-guest agent in a real TCG guest.
# Part 1, beside Debian's qemu-ga, which the test guest runs on org.qemu.guest_agent.0 as a cloud image does
# (tests/vm/build-guest.sh): the agent serves its own port org.vnoise.0 and leaves the QGA port to qemu-ga
# (with --qga-port: one "busy" warning, the agent goes on); `virsh qemu-agent-command guest-ping` answers
# throughout (before, while the agent measures and publishes, after it is stopped, killed, restarted) and
# guest-info lists qemu-ga's commands, not vnoise's; `vnoise-host agent -D DOM status|start|stop` talks to the
# agent through the org.vnoise.0 host socket; `vnoise-host record --guest` gets channel ok, records > 0, the
# clock aligned; an agent killed and restarted, its port hot-unplugged and plugged back, and a guest reboot
# (the agent of the new boot has a new epoch) are survived; a domain without the channel and an unknown
# domain give one line and their exit codes. A record --guest across an agent kill and a guest reboot is
# faults_vm.sh's.
# Part 2, libvirt's agent path (qemu-ga stopped, agent --qga-port): `virsh qemu-agent-command` works (libvirt
# first sends a plain guest-sync), guest-info lists vnoise's downstream command, unknown commands and
# guest-shutdown get CommandNotFound, and the agent survives the host side going away (libvirtd restarted)
# and coming back.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_tools virsh
HOST=$BUILD/vnoise-host
[ -x "$HOST" ] || fail "$HOST not built"

vm_setup || fail "vm_setup"
vm_start --reboot || fail "vm_start"
vm_wait_ready 90 || fail "guest not ready"
agent() { virsh -q -c qemu:///system qemu-agent-command "$VM_NAME" "$1" 2>&1; }
# qga_ping WHEN: qemu-ga answers guest-ping through libvirt (it may be restarting after a reboot: 30 s)
qga_ping() { vm_qga_ping 30 >/dev/null || fail "qemu-ga does not answer guest-ping $1"; }
guest_agent_pid() { vm_exec 'pidof vnoise-guest' | tr -d '\r\n'; }

# ---- part 1: beside qemu-ga on org.qemu.guest_agent.0 ----
qport=$(vm_exec '/bin/vnoise-guest agent --probe' | sed -n 's/^port org.qemu.guest_agent.0: //p' | tr -d '\r')
[ -n "$qport" ] && [ "$qport" != absent ] || fail "no org.qemu.guest_agent.0 port in the guest"
qga_ping "before the agent starts"
out=$(vm_exec 'pidof qemu-ga >/dev/null && cat /proc/$(pidof qemu-ga)/cmdline | tr "\0" " "') ||
	fail "qemu-ga does not run in the guest"
grep -q "^/usr/sbin/qemu-ga -m virtio-serial -p $qport" <<<"$out" || fail "qemu-ga's command line: $out"
# guest_info WHEN: guest-info comes from qemu-ga: its commands, not vnoise's
guest_info() {
	local gi
	gi=$(agent '{"execute":"guest-info"}') || fail "guest-info $1: $gi"
	jq -e '.return.version and (.return.supported_commands | map(.name) |
		(index("guest-ping") and index("guest-get-osinfo") and (index("__com.vnoise_status") | not)))' \
		<<<"$gi" >/dev/null || fail "guest-info $1 is not qemu-ga's: $gi"
}
guest_info "before the agent starts"
ok "qemu-ga $(agent '{"execute":"guest-info"}' | jq -r .return.version) on $qport: guest-ping and guest-info answer"
vm_exec '/bin/vnoise-guest agent --cpus 0 --idle --qga-port >/tmp/agent.log 2>&1 &' ||
	fail "cannot start the agent"
vm_agent_status || fail "vnoise-host agent status with the QGA port held by another process: $out"
log=$(vm_exec 'cat /tmp/agent.log')
[ "$(grep -c 'org.qemu.guest_agent.0 is busy' <<<"$log")" = 1 ] ||
	fail "no single 'busy' warning for the held QGA port: $log"
jq -e '(.ports | map(select(.open) | .name)) == ["org.vnoise.0"]' <<<"$out" >/dev/null ||
	fail "ports with the QGA port held: $out"
qga_ping "while the agent with --qga-port runs"
ok "QGA port held by qemu-ga: the agent says '$(grep busy <<<"$log" | head -1)' and serves org.vnoise.0"
vm_exec 'kill $(pidof vnoise-guest); sleep 1' >/dev/null

# without --qga-port the agent does not try the QGA port: qemu-ga keeps answering there
vm_exec '/bin/vnoise-guest agent --cpus 0 --idle >/tmp/agent.log 2>&1 &' || fail "cannot start the agent"
vm_agent_status || fail "vnoise-host agent status: $out"
jq -e '.state == "init" and .epoch > 0 and .rings == 2 and .ivshmem_bytes == 4194304 and
	(.ports | map(select(.open) | .name)) == ["org.vnoise.0"]' <<<"$out" >/dev/null ||
	fail "vnoise-host agent status --json: $out"
ok "vnoise-host agent status --json: $(jq -c '{version, state, epoch, rings}' <<<"$out")"
qga_ping "beside the agent"
guest_info "beside the agent"
[ "$(vm_exec 'grep -c busy /tmp/agent.log')" = 0 ] ||
	fail "the agent tried the QGA port: $(vm_exec 'cat /tmp/agent.log')"
ok "org.qemu.guest_agent.0 left to qemu-ga: guest-ping and guest-info (qemu-ga's commands) answer"
out=$(vm_hagent status) || fail "vnoise-host agent status: $out"
grep -q '^state: init$' <<<"$out" && grep -q '^version: ' <<<"$out" || fail "status as text: $out"
ok "status as text: $(tr '\n' ';' <<<"$out" | cut -c1-120)"
out=$(vm_hagent start -c 0 -p 100ms -r 60ms) || fail "vnoise-host agent start: $out"
grep -q '^state: running$' <<<"$out" || fail "vnoise-host agent start: $out"
sleep 2
vm_agent_status && jq -e '.state == "running" and .published > 0' <<<"$out" >/dev/null ||
	fail "nothing published after vnoise-host agent start: $out"
pub=$(jq .published <<<"$out")
qga_ping "while the agent measures and publishes"
guest_info "while the agent measures and publishes"
out=$(agent '{"execute":"guest-get-osinfo"}') && jq -e '.return["kernel-release"]' <<<"$out" >/dev/null ||
	fail "guest-get-osinfo while the agent measures: $out"
# domfsinfo goes through qemu-ga's guest-get-fsinfo: an empty list here (the guest has no block device)
out=$(virsh -q -c qemu:///system domfsinfo "$VM_NAME" 2>&1) || fail "virsh domfsinfo while the agent measures: $out"
ok "while vCPU 0 is measured and published: guest-ping, guest-info, guest-get-osinfo, domfsinfo answer"
# the host's combined view reads the agent's ivshmem channel beside qemu-ga
"$HOST" record --guest -D "$VM_NAME" --connect qemu:///system -d 5s -o "$TMP/r.rec" --json \
	>"$TMP/r.json" 2>"$TMP/r.err" || fail "record --guest: $(cat "$TMP/r.err")"
c=$(jq -c '.domains[0] | {channel: .channel | {state, records}, clock}' "$TMP/r.json")
# aligned: the clock exchange converged (the tight bound, 50 us, is match_vm.sh's, with pinned vCPUs; here
# an unpinned guest on a busy host gave up to 0.5 ms)
jq -e '.domains[0] | .channel.state == "ok" and .channel.records > 0 and .clock.aligned and
	.clock.uncertainty_ns <= 2000000' "$TMP/r.json" >/dev/null || fail "record --guest beside qemu-ga: $c"
ok "vnoise-host record --guest: $c"
# a second sampler on vCPU 0 (the agent samples it): refused in one line naming the agent, exit 8
rc=0
out=$(vm_exec 'vnoise-guest measure -c 0 -d 1s 2>&1 >/dev/null') || rc=$?
[ "$rc" = 8 ] && grep -q "^vnoise-guest: error: CPU 0 is sampled by vnoise-guest agent (pid $(guest_agent_pid))" <<<"$out" ||
	fail "measure -c 0 beside the agent: exit $rc: $out"
ok "measure -c 0 beside the agent: exit 8, '$out'"
qga_ping "after record --guest"
out=$(vm_hagent stop) || fail "vnoise-host agent stop: $out"
grep -q '^state: paused$' <<<"$out" || fail "vnoise-host agent stop: $out"
qga_ping "after vnoise-host agent stop"
out=$(vm_hagent start) && grep -q '^state: running$' <<<"$out" || fail "start again: $out"
# A stop right after a start answers once the measurement it stops has attached its eBPF programs: 0.7-0.9 s
# here, but the TCG guest has taken more than the default 10 s once in a make check (2026-11-29; the known
# attach stall of vm_start_agent): the answer is what is checked, not how fast it comes.
out=$(vm_hagent --timeout 60s stop) && grep -q '^state: paused$' <<<"$out" || fail "stop again: $out"
ok "vnoise-host agent start -c 0 -p 100ms -r 60ms / stop / start / stop ($pub records published)"
expect_err 1 "invalid --helper" vm_hagent start --helper nope
# a stopped agent: one line, exit 1, after --timeout
vm_exec 'kill -STOP $(pidof vnoise-guest)' >/dev/null
expect_err 1 "not answering on org.vnoise.0 .* within 1 s" vm_hagent --timeout 1s status -j
vm_exec 'kill -CONT $(pidof vnoise-guest)' >/dev/null
vm_agent_status || fail "status after SIGCONT: $out"

# killed and restarted: the host side gets "not answering", then the new agent
vm_exec 'kill -9 $(pidof vnoise-guest); sleep 0.5' >/dev/null
expect_err 1 "not answering" vm_hagent --timeout 1s status
vm_exec '/bin/vnoise-guest agent --cpus 0 --idle >/tmp/agent.log 2>&1 &' || fail "cannot restart the agent"
vm_agent_status || fail "status after the agent was killed and restarted: $out"
qga_ping "after the agent was killed and restarted"
ok "agent killed (-9) and restarted: vnoise-host agent status answers again, qemu-ga too"

# org.vnoise.0 hot-unplugged and plugged back: the agent closes it, stays up, and serves it again
cat >"$TMP/chan.xml" <<XML
<channel type='unix'>
  <source mode='bind' path='$(_vm_xml_escape "$VM_VNOISE_SOCK")'/>
  <target type='virtio' name='org.vnoise.0'/>
</channel>
XML
pid=$(guest_agent_pid)
virsh -q -c qemu:///system detach-device "$VM_NAME" "$TMP/chan.xml" --live >"$TMP/virsh.out" 2>&1 ||
	fail "detach-device org.vnoise.0: $(cat "$TMP/virsh.out")"
sleep 3
expect_err 4 "has no org.vnoise.0 channel (vnoise-host enable -D $VM_NAME)" vm_hagent status
virsh -q -c qemu:///system attach-device "$VM_NAME" "$TMP/chan.xml" --live >"$TMP/virsh.out" 2>&1 ||
	fail "attach-device org.vnoise.0: $(cat "$TMP/virsh.out")"
vm_agent_status || fail "status after org.vnoise.0 came back: $out $(vm_exec 'cat /tmp/agent.log')"
[ "$(guest_agent_pid)" = "$pid" ] || fail "the agent did not survive the hot-unplug: $(vm_exec 'cat /tmp/agent.log')"
log=$(vm_exec 'cat /tmp/agent.log')
grep -q 'org.vnoise.0 .* went away\|org.vnoise.0 .*: closed' <<<"$log" && grep -q 'serving org.vnoise.0 on .* again' <<<"$log" ||
	fail "the agent's log of the hot-unplug: $log"
ok "org.vnoise.0 hot-unplugged and plugged back: the same agent serves it again"

# a guest reboot: the host side survives; the agent started in the new boot answers with a new epoch
# (a record --guest across it: faults_vm.sh)
out=$(vm_hagent start -c 0) && grep -q '^state: running$' <<<"$out" || fail "start before the reboot: $out"
vm_agent_status && epoch0=$(vm_epoch_of <<<"$out") || fail "status before the reboot: $out"
vm_reboot || fail "the guest did not come back from its reboot"
vm_wait_ready 60 >/dev/null || fail "not ready after the reboot"
expect_err 1 "not answering" vm_hagent --timeout 1s status
qga_ping "after the guest's reboot"
vm_exec '/bin/vnoise-guest agent --cpus 0 >/tmp/agent.log 2>&1 &' || fail "cannot start the agent after the reboot"
vm_agent_running 40 || fail "the agent does not run after the reboot: $(vm_exec 'cat /tmp/agent.log')"
vm_agent_status && epoch1=$(vm_epoch_of <<<"$out") || fail "status after the reboot: $out"
[ "$epoch1" != "$epoch0" ] || fail "the agent of the new boot has the old epoch $epoch0"
qga_ping "after the agent of the new boot started"
ok "guest rebooted: the agent of the new boot has epoch $epoch1 (was $epoch0); status and guest-ping answer"

# bad input: an unknown domain, a domain without the channel
expect_err 7 "not found" "$HOST" agent -D "no-such-domain-$$" --connect qemu:///system status
nochan=vnoise-nochan-$$
cat >"$TMP/nochan.xml" <<XML
<domain type='qemu'><name>$nochan</name><memory unit='MiB'>64</memory>
<os><type arch='x86_64'>hvm</type></os></domain>
XML
virsh -q -c qemu:///system define "$TMP/nochan.xml" >/dev/null || fail "cannot define $nochan"
expect_err 4 "domain $nochan has no org.vnoise.0 channel (vnoise-host enable -D $nochan)" \
	"$HOST" agent -D "$nochan" --connect qemu:///system status
virsh -q -c qemu:///system undefine "$nochan" >/dev/null

# ---- part 2: libvirt's agent path, the agent on org.qemu.guest_agent.0 with --qga-port ----
vm_exec 'kill $(pidof vnoise-guest); sleep 1' >/dev/null
vm_qga_stop || fail "cannot stop qemu-ga"
out=$(agent '{"execute":"guest-ping"}') && fail "guest-ping answered with qemu-ga stopped: $out"
ok "qemu-ga stopped (vm_qga_stop), org.qemu.guest_agent.0 free: guest-ping says '$out'"
vm_exec '/bin/vnoise-guest agent --cpus 0 --idle --qga-port >/tmp/agent.log 2>&1 &' ||
	fail "cannot start the agent"
out=
for _ in $(seq 50); do
	out=$(agent '{"execute":"guest-ping"}') && break
	sleep 0.2
done
[ "$out" = '{"return":{}}' ] || fail "guest-ping through libvirt: '$out'"
ok "virsh qemu-agent-command guest-ping: $out"
out=$(agent '{"execute":"guest-info"}') || fail "guest-info: $out"
jq -e '.return.supported_commands | map(.name) | index("__com.vnoise_status") and index("guest-sync")' \
	<<<"$out" >/dev/null || fail "guest-info does not list the commands: $out"
ok "guest-info lists guest-sync and __com.vnoise_status"
out=$(agent '{"execute":"__com.vnoise_status"}') || fail "__com.vnoise_status: $out"
jq -e '.return.version and .return.ivshmem_bytes == 4194304 and
	(.return.ports | map(select(.open)) | length) == 2' <<<"$out" >/dev/null ||
	fail "__com.vnoise_status: $out"
ok "__com.vnoise_status: $(jq -c '.return | {version, ivshmem_bytes, requests}' <<<"$out")"
jq -e '.return.state == "init" and .return.epoch > 0 and .return.rings == 2' <<<"$out" >/dev/null ||
	fail "__com.vnoise_status before start: $out"
# measuring on and off through libvirt
out=$(agent '{"execute":"__com.vnoise_start"}') || fail "__com.vnoise_start: $out"
jq -e '.return.state == "running"' <<<"$out" >/dev/null || fail "__com.vnoise_start: $out"
sleep 2
# Starting attaches eBPF programs, which under TCG can take longer than libvirt's agent timeout: libvirt then
# reports the agent "not available for now" until its next guest-sync. Ask again for up to 20 s.
pub=0
for _ in $(seq 40); do
	out=$(agent '{"execute":"__com.vnoise_status"}') &&
		pub=$(jq '.return.published // 0' <<<"$out" 2>/dev/null) && [ "${pub:-0}" -gt 0 ] && break
	pub=0
	sleep 0.5
done
[ "$pub" -gt 0 ] || fail "nothing published while running: $out"
# The stop detaches the eBPF programs; under TCG each detach patches kernel text, and the answer once took
# more than libvirt's default 5 s ("not available for now", run 15): 60 s, as `vnoise-host agent` gets above.
t0=$(date +%s%N)
out=$(virsh -q -c qemu:///system qemu-agent-command --timeout 60 "$VM_NAME" '{"execute":"__com.vnoise_stop"}' 2>&1) ||
	fail "__com.vnoise_stop: $out"
stop_ms=$((($(date +%s%N) - t0) / 1000000))
jq -e '.return.state == "paused"' <<<"$out" >/dev/null || fail "__com.vnoise_stop: $out"
vm_exec 'pidof vnoise-guest; ls /proc/$(pidof vnoise-guest)/task | wc -l' >"$TMP/tasks"
[ "$(tail -1 "$TMP/tasks")" -le 3 ] || fail "threads left after __com.vnoise_stop: $(tail -1 "$TMP/tasks")"
ok "__com.vnoise_start / _stop: running ($pub records published in 2 s), then paused with its samplers gone (the stop answered in $stop_ms ms)"
out=$(agent '{"execute":"guest-no-such-command"}')
grep -q 'CommandNotFound\|not been found\|not supported' <<<"$out" || fail "unknown command: '$out'"
ok "unknown command: $out"
out=$(agent '{"execute":"guest-shutdown"}')
grep -q 'CommandNotFound\|not been found\|not supported' <<<"$out" || fail "guest-shutdown: '$out'"
virsh -q -c qemu:///system domstate "$VM_NAME" | grep -q running || fail "guest-shutdown stopped the guest"
ok "guest-shutdown refused, guest still running"

# the host side goes away and comes back: libvirtd restarts and reconnects to the agent's socket
vm_restart_libvirtd || fail "cannot restart libvirtd"
out=
for _ in $(seq 50); do
	out=$(agent '{"execute":"guest-ping"}') && break
	sleep 0.2
done
[ "$out" = '{"return":{}}' ] || fail "guest-ping after the libvirtd restart: '$out'"
vm_exec 'kill -0 $(pidof vnoise-guest)' >/dev/null || fail "the agent died when the host side went away"
ok "the agent survived libvirtd going away and answers again"
exit 0
