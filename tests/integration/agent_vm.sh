#!/bin/bash
# vnoise-guest agent in a real TCG guest, spoken to by libvirt (issue 4 deliverable 2, the QGA part):
# `virsh qemu-agent-command` works (libvirt first sends a plain guest-sync), guest-info lists vnoise's
# downstream command, unknown commands and guest-shutdown get CommandNotFound, and the agent survives the host
# side going away (libvirtd restarted) and coming back.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_tools virsh

vm_setup || fail "vm_setup"
vm_start || fail "vm_start"
vm_wait_ready 90 || fail "guest not ready"
vm_exec '/bin/vnoise-guest agent --cpus 0 --idle >/tmp/agent.log 2>&1 &' || fail "cannot start the agent"
agent() { virsh -q -c qemu:///system qemu-agent-command "$VM_NAME" "$1" 2>&1; }

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
out=$(agent '{"execute":"__com.vnoise_status"}')
pub=$(jq '.return.published' <<<"$out")
[ "$pub" -gt 0 ] || fail "nothing published while running: $out"
out=$(agent '{"execute":"__com.vnoise_stop"}') || fail "__com.vnoise_stop: $out"
jq -e '.return.state == "paused"' <<<"$out" >/dev/null || fail "__com.vnoise_stop: $out"
vm_exec 'pidof vnoise-guest; ls /proc/$(pidof vnoise-guest)/task | wc -l' >"$TMP/tasks"
[ "$(tail -1 "$TMP/tasks")" -le 3 ] || fail "threads left after __com.vnoise_stop: $(tail -1 "$TMP/tasks")"
ok "__com.vnoise_start / _stop: running ($pub records published in 2 s), then paused with its samplers gone"
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
