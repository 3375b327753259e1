#!/bin/bash
# A hostile guest: while an ASan+UBSan build of vnoise-host reads a real domain's
# shared-memory region (record --guest), tests/vm/shmscribble writes random and adversarial contents into it
# for 12 s (bad indices, lengths and sequence numbers, torn records, a changing header, epoch games, garbage
# in the mailbox and status), through /dev/shm/<name>: the very bytes the guest's BAR2 shows. Then the real
# guest agent starts (a new epoch). vnoise-host must not crash or report a sanitizer error, must mark the
# channel corrupt and count it, and must recover: channel ok, clock aligned, the new epoch's records read
# and matched.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
VHS=$ROOT/build-san/vnoise-host
SCRIB=$BUILD/tests/vm/shmscribble
[ -x "$VHS" ] || fail "$VHS not built (make check builds it)"
[ -x "$SCRIB" ] || fail "$SCRIB not built"

vm_setup || fail "vm_setup"
export ASAN_OPTIONS=abort_on_error=0:halt_on_error=1:detect_leaks=1:exitcode=99
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=98

# returns 3 when the TCG guest locked up while the agent attached its eBPF programs (tests/vm/README.md, "Known issue under QEMU TCG")
scribble_then_agent() {
	vm_start --pin0 0 --pin 1:1 || fail "vm_start"
	vm_wait_ready 90 || fail "guest not ready"
	"$VHS" record --guest -D "$VM_NAME" -d 30s -o "$TMP/h.rec" --json >"$TMP/h.json" 2>"$TMP/h.err" &
	vh=$!
	sleep 2
	"$SCRIB" "$VM_SHM" 12 "$$" >"$TMP/scrib.out" || { cat "$TMP/scrib.out"; fail "shmscribble failed"; }
	cat "$TMP/scrib.out"
	kill -0 "$vh" 2>/dev/null || { cat "$TMP/h.err"; fail "vnoise-host died while the guest scribbled"; }
	ok "vnoise-host (ASan+UBSan) survived 12 s of hostile writes"
	# the real agent: a new epoch; vnoise-host must follow it
	vm_exec "vnoise-guest agent --cpus 0 --duration 40s >/tmp/agent.log 2>&1 &" || fail "cannot start the agent"
	if ! vm_agent_running 40; then
		vm_exec --timeout 10 true >/dev/null 2>&1 && fail "the agent does not run"
		echo "note: the TCG guest locked up while the agent attached its eBPF programs; once more"
		wait "$vh"
		vm_destroy
		return 3
	fi
	return 0
}
scribble_then_agent || { [ $? -eq 3 ] && scribble_then_agent; } || fail "the guest locked up twice"
wait "$vh"
rc=$?
grep -E "ERROR: AddressSanitizer|runtime error|LeakSanitizer" "$TMP/h.err" && fail "sanitizer report"
[ "$rc" -eq 0 ] || { tail -20 "$TMP/h.err"; fail "vnoise-host exited $rc"; }
d='.domains[0]'
jq -c "$d.channel, $d.clock" "$TMP/h.json"
corrupt=$(jq "$d.channel.corrupt" "$TMP/h.json")
epochs=$(jq "$d.channel.epochs" "$TMP/h.json")
[ "$corrupt" -ge 1 ] || fail "the channel was never marked corrupt"
[ "$(jq "$d.channel.invalid + $d.channel.torn" "$TMP/h.json")" -ge 1 ] || fail "no invalid or torn record counted"
[ "$epochs" -ge 2 ] || fail "only $epochs epochs attached"
ok "hostile contents counted: corrupt $corrupt times, $(jq "$d.channel.invalid" "$TMP/h.json") invalid, $(jq "$d.channel.torn" "$TMP/h.json") torn records, $epochs epochs"
jq -e "$d.channel.state == \"ok\" and $d.channel.agent_state == \"running\"" "$TMP/h.json" >/dev/null ||
	fail "the channel did not recover: $(jq -c "$d.channel" "$TMP/h.json")"
jq -e "$d.clock.aligned" "$TMP/h.json" >/dev/null || {
	tail -15 "$TMP/h.err"
	vm_exec 'cat /tmp/agent.log'
	jq -c "$d.dtl" "$TMP/h.json"
	fail "no clock after recovery"
}
gaps=$(jq "[$d.vcpus[] | select(.vcpu == 0) | .gaps][0] // 0" "$TMP/h.json")
[ "$gaps" -gt 1000 ] || fail "only $gaps guest gaps matched after recovery"
grep -q "new epoch" "$TMP/h.err" || fail "no 'new epoch' message"
ok "recovered on the agent's new epoch: channel ok, clock aligned, $gaps gaps matched on vCPU 0"
exit 0
