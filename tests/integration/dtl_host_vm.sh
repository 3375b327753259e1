#!/bin/bash
# The host side of the dispatch trace log, with real libvirtd, QEMU TCG and eBPF:
#   - the guest runs only the clock responder (`vnoise-guest agent --passive`), no sampler, no guest view;
#   - on the host, a hog `vnhog...` pinned with vCPU 0 (2 ms every 10 ms) and `vnoise-host top --json`
#     WITHOUT --guest, for every domain (no -D).
# Checked: the domain's channel publishes (its JSON "dtl": state on, detail class, entries published) while
# the output stays the host view (vnoise.host/1, no matching keys); the clock exchange through the DTL
# mailbox works (the host area's status carries a clock mapping); with the default --dtl-detail class neither
# the hog's comm nor its pid's name is anywhere in the region, with --dtl-detail task (record) the hog's comm
# is in the host half; the same running vnoise-host follows a domain that goes away and a new one that comes
# (a new channel, publishing again). Run only under `flock /tmp/vnoise-vm.lock`.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
require_tools od
VH=$BUILD/vnoise-host
VG=$BUILD/vnoise-guest
[ -x "$VH" ] || fail "$VH not built"

vm_setup || fail "vm_setup"

# start_vm: a VM pinned like the others, with the clock responder only
start_vm() {
	vm_start --pin0 0 --pin 1:1 || fail "vm_start"
	vm_wait_ready 90 || fail "the guest did not come up"
	# on vCPU 1, as the other DTL tests' responders: vCPU 0 shares host CPU 0 with the hog (and vnoise-host's
	# main thread), where answers came late enough once in ~10 runs to keep the clock bound over 1 ms for 60 s
	vm_exec "taskset -c 1 vnoise-guest agent --passive -d 600s >/tmp/agent.log 2>&1 &" ||
		fail "cannot start the responder"
}

# dtl_u64 OFFSET: a u64 of the host area's header in the region file
dtl_u64() {
	local size half
	size=$(stat -c %s "$VM_SHM")
	half=$((size / 2))
	od -A n -t u8 -j $((half + $1)) -N 8 "$VM_SHM" | tr -d ' '
}
dtl_magic() {
	local size
	size=$(stat -c %s "$VM_SHM")
	dd if="$VM_SHM" bs=1 skip=$((size / 2)) count=8 2>/dev/null
}

# wait_on NAME FILE: until the last JSON line of FILE shows domain NAME's DTL on and published > 0 (60 s)
wait_on() {
	local _ st
	for _ in $(seq 120); do
		st=$(tail -1 "$2" 2>/dev/null | jq -r --arg n "$1" \
			'.domains[] | select(.name == $n) | "\(.dtl.state) \(.dtl.published)"' 2>/dev/null)
		[[ $st =~ ^on\ [1-9] ]] && return 0
		kill -0 "$TOP" 2>/dev/null || fail "vnoise-host top exited: $(tail -5 "$TMP/top.err")"
		sleep 0.5
	done
	fail "domain $1: DTL not published after 60 s: '$st'; $(tail -3 "$TMP/top.err"); guest: $(vm_exec 'tail -5 /tmp/agent.log')"
}

start_vm
VM1=$VM_NAME
SHM1=$VM_SHM
hog="vnhog$$"
hog=${hog:0:15}
"$VG" inject --cpu 0 --comm "$hog" --spike 2000 --every 10ms --quiet >"$TMP/hog.out" 2>&1 &
PIDS+=($!)
sleep 0.5

"$VH" top --json -p 500ms -d 600s >"$TMP/top.json" 2>"$TMP/top.err" &
TOP=$!
PIDS+=("$TOP")
wait_on "$VM1" "$TMP/top.json"
sleep 3
last=$(tail -1 "$TMP/top.json")
d=".domains[] | select(.name == \"$VM1\")"
jq -e '.schema == "vnoise.host/1"' <<<"$last" >/dev/null || fail "top without --guest is not vnoise.host/1"
jq -e "$d | has(\"channel\") or has(\"clock\") | not" <<<"$last" >/dev/null ||
	fail "top without --guest shows matching keys: $(jq -c "$d | keys" <<<"$last")"
jq -e "$d | .dtl.state == \"on\" and .dtl.detail == \"class\" and .dtl.published > 100" <<<"$last" >/dev/null ||
	fail "DTL not published: $(jq -c "$d.dtl" <<<"$last")"
ok "top (no --guest): $(jq -c "$d.dtl" <<<"$last")"

# the host area: magic, a host epoch, a clock mapping from the guest responder, a horizon
[ "$(dtl_magic)" = VNOISDTL ] || fail "no DTL magic in the host half of $VM_SHM"
ep=$(dtl_u64 24)
flags=$(od -A n -t u4 -j $(($(stat -c %s "$VM_SHM") / 2 + 132)) -N 4 "$VM_SHM" | tr -d ' ')
horizon=$(dtl_u64 136)
[ "$ep" -gt 0 ] || fail "host epoch 0"
[ $((flags & 1)) = 1 ] || fail "no clock mapping in the DTL status (flags $flags): the exchange through the DTL mailbox failed"
[ "$horizon" -gt 0 ] || fail "horizon 0"
ok "host area: epoch $ep, status flags $flags (clock), horizon $horizon"
# detail class: the hog's name is nowhere in the region
! grep -a -q "$hog" "$VM_SHM" || fail "detail class: the hog's comm is in the region"
ok "detail class: no host task name in the region"

# the domain goes away and another comes: the same vnoise-host follows it
vm_destroy "$VM1"
start_vm
VM2=$VM_NAME
[ "$VM2" != "$VM1" ] || fail "same domain name twice"
wait_on "$VM2" "$TMP/top.json"
ep2=$(dtl_u64 24)
[ "$ep2" -gt "$ep" ] || fail "the new domain's host epoch $ep2 is not newer than $ep"
ok "a new domain ($VM2) publishes again: $(tail -1 "$TMP/top.json" | jq -c ".domains[] | select(.name == \"$VM2\") | .dtl")"
kill -INT "$TOP"
wait "$TOP" 2>/dev/null

# detail task (record): the hog's comm is published in the host half
"$VH" record -D "$VM2" --dtl-detail task -p 500ms -d 8s -o "$TMP/t.rec" --json >"$TMP/t.json" 2>"$TMP/t.err" ||
	fail "record --dtl-detail task failed: $(tail -3 "$TMP/t.err")"
jq -e '.domains[0].dtl.detail == "task" and .domains[0].dtl.published > 0' "$TMP/t.json" >/dev/null ||
	fail "record: $(jq -c '.domains[0].dtl' "$TMP/t.json")"
size=$(stat -c %s "$VM_SHM")
tail -c $((size / 2)) "$VM_SHM" | grep -a -q "$hog" || fail "detail task: the hog's comm is not in the host half"
ok "detail task: the hog's comm published; $(jq -c '.domains[0].dtl' "$TMP/t.json")"
exit 0
