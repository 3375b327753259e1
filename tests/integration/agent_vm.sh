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
vm_exec '/bin/vnoise-guest agent >/tmp/agent.log 2>&1 &' || fail "cannot start the agent"
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
