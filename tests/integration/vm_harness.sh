#!/bin/bash
# The test-VM harness (tests/vm/vm.bash) end to end: a libvirt + QEMU TCG domain boots Debian's kernel with
# our initramfs; the guest has the expected kernel, CPUs, virtio channels and ivshmem BAR; Debian's qemu-ga
# runs on org.qemu.guest_agent.0 and answers guest-ping through libvirt (the readiness check itself uses only
# vmshd's port), and a test can stop it and start it again (vm_qga_stop/vm_qga_start); vmshd runs
# commands (exit codes, output, background jobs, timeouts, large output); vnoise-guest measures inside; a
# second harness user interrupted with SIGINT mid-boot leaves nothing behind; libvirtd restarts under a
# running domain; a second domain gets a pinned vCPU and a tap; teardown removes the domains, their
# /dev/shm files and the daemons it started. Prints the boot-to-ready time.
# shellcheck source-path=SCRIPTDIR source=lib.bash
. "$(dirname "$0")/lib.bash"
require_root
# shellcheck source=../vm/vm.bash
. "$ROOT/tests/vm/vm.bash"

vm_setup || fail "vm_setup"
vm_start --vcpus 2 || fail "vm_start"
vm_wait_ready 120 || fail "the guest did not answer"
echo "boot-to-ready: $VM_BOOT_SECS s"
boot=$VM_BOOT_SECS name=$VM_NAME shm=$VM_SHM sock=$VM_EXEC_SOCK

# Kernel, CPUs, channels, ivshmem.
out=$(vm_exec uname -r) || fail "uname -r (rc $?)"
[ "$out" = "$VM_KREL" ] || fail "guest kernel '$out', expected '$VM_KREL'"
ok "guest kernel $out"
out=$(vm_exec 'cat /sys/devices/system/cpu/online; nproc') || fail "cpu online"
[ "$out" = "0-1"$'\n'"2" ] || fail "guest CPUs: '$out', expected 0-1 and 2"
ok "2 CPUs online in the guest"
ports=$(vm_exec 'cat /sys/class/virtio-ports/*/name') || fail "virtio-ports"
for p in org.qemu.guest_agent.0 org.vnoise.0 org.vnoise.test.0; do
	grep -qx "$p" <<<"$ports" || fail "virtio port $p missing (have: $(echo "$ports" | tr '\n' ' '))"
done
ok "virtio ports: $(echo "$ports" | tr '\n' ' ')"
# qemu-ga, as in a cloud image: up by the time vmshd answers or shortly after
out=$(vm_qga_ping 30) || fail "qemu-ga does not answer guest-ping"
qga=$(vm_exec 'cat /proc/$(pidof qemu-ga)/cmdline | tr "\0" " "') || fail "no qemu-ga process in the guest"
grep -q '^/usr/sbin/qemu-ga -m virtio-serial -p /dev/vport[0-9]*p[0-9]* $' <<<"$qga" || fail "qemu-ga runs as '$qga'"
vm_qga_stop || fail "vm_qga_stop"
sleep 1
vm_exec 'pidof qemu-ga' >/dev/null && fail "qemu-ga came back after vm_qga_stop"
virsh -q -c qemu:///system qemu-agent-command "$VM_NAME" '{"execute":"guest-ping"}' >/dev/null 2>&1 &&
	fail "guest-ping answered with qemu-ga stopped"
vm_qga_start || fail "vm_qga_start"
vm_qga_ping 30 >/dev/null || fail "qemu-ga does not answer guest-ping after vm_qga_start"
ok "qemu-ga ($qga) answers guest-ping: $out; stopped and started again"
# shellcheck disable=SC2016 # expanded by the guest's shell
out=$(vm_exec 'for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor):$(cat $d/device)" = 0x1af4:0x1110 ] && stat -c "${d##*/} %s" $d/resource2; done; true') ||
	fail "ivshmem scan"
{ [ "$(wc -l <<<"$out")" -eq 1 ] && [ "${out#* }" = 4194304 ]; } || fail "ivshmem 1af4:1110 BAR2: '$out'"
ok "ivshmem at ${out% *}, resource2 4 MiB"
{ [ -f "$shm" ] && [ "$(stat -c %s "$shm")" -eq 4194304 ]; } || fail "$shm missing or not 4 MiB"
# vnoise-guest's own device scan (guest/agent/guestdev) finds the same BAR2 and both channel ports
probe=$(vm_exec '/bin/vnoise-guest agent --probe') || fail "agent --probe: $probe"
grep -qx "ivshmem: /sys/bus/pci/devices/${out% *}/resource2 4194304" <<<"$probe" ||
	fail "agent --probe did not find the ivshmem BAR2: $probe"
grep -q '^port org.qemu.guest_agent.0: /dev/vport[0-9]*p[0-9]*$' <<<"$probe" &&
	grep -q '^port org.vnoise.0: /dev/vport[0-9]*p[0-9]*$' <<<"$probe" ||
	fail "agent --probe did not find the ports: $probe"
ok "vnoise-guest agent --probe: $(tr '\n' ';' <<<"$probe")"

# Exec: exit codes and output round trip, signals, stderr, large output.
out=$(vm_exec 'echo hi; exit 3')
rc=$?
{ [ "$rc" -eq 3 ] && [ "$out" = hi ]; } || fail "'echo hi; exit 3' gave rc $rc, output '$out'"
out=$(vm_exec 'echo out; echo err >&2; kill -9 $$')
rc=$?
{ [ "$rc" -eq 137 ] && [ "$out" = "out"$'\n'"err" ]; } || fail "signal: rc $rc, output '$out'"
out=$(vm_exec printf "'%s|'" a "'b c'" -n) || fail "argument joining"
[ "$out" = "a|b c|-n|" ] || fail "argument joining: '$out'"
vm_exec 'seq 1 200000' >"$TMP/seq" || fail "seq 200000"
seq 1 200000 | cmp -s - "$TMP/seq" || fail "200000 lines did not round-trip"
ok "exit codes, signals, stderr and 1.3 MB of output round-trip"

# Background jobs: the reply does not wait for them, with or without redirections, and they keep running.
start=$(date +%s%N)
vm_exec 'sleep 41 & (sleep 1; echo bgdone >/tmp/bg.txt) >/dev/null 2>&1 & echo started' >"$TMP/bg" ||
	fail "background start"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$(cat "$TMP/bg")" = started ] || fail "background: output '$(cat "$TMP/bg")'"
[ "$ms" -lt 5000 ] || fail "background command took $ms ms: vmshd waited for its children"
sleep 2
out=$(vm_exec 'cat /tmp/bg.txt; ps -o args | grep -c "^sleep 41"') || fail "background check"
[ "$out" = "bgdone"$'\n'"1" ] || fail "background job results: '$out'"
ok "background jobs (reply in $ms ms, jobs finished/still running)"

# Timeouts kill the whole process group.
start=$(date +%s)
out=$(vm_exec --timeout 2 'sleep 42 & sleep 43; echo never')
rc=$?
secs=$(($(date +%s) - start))
{ [ "$rc" -eq 124 ] && [ "$secs" -lt 8 ]; } || fail "timeout: rc $rc after $secs s, output '$out'"
grep -q 'timed out' <<<"$out" || fail "timeout note missing: '$out'"
out=$(vm_exec 'ps -o args | grep -c "^sleep 4[23]"')
[ "$out" = 0 ] || fail "timed-out process group still has $out sleeps"
ok "timeout: rc 124 after $secs s, process group killed"

# vmexec's own errors.
"$VMEXEC" "$TMP/no-such.sock" --ping 2>"$TMP/err"
rc=$?
{ [ "$rc" -eq 125 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]; } || fail "vmexec on a missing socket: rc $rc"
ok "vmexec connection error: rc 125, $(cat "$TMP/err")"

# vnoise-guest measures inside and prints valid JSON.
vm_exec --timeout 60 '/bin/vnoise-guest measure --cpus 0 --duration 1s --json 2>/tmp/measure.err' \
	>"$TMP/measure.json"
rc=$?
[ "$rc" -eq 0 ] || fail "vnoise-guest measure in the guest: rc $rc, $(vm_exec cat /tmp/measure.err)"
jq -e 'type == "object"' "$TMP/measure.json" >/dev/null ||
	fail "measure output is not JSON: $(head -c 300 "$TMP/measure.json")"
ok "vnoise-guest measure --json in the guest ($(wc -c <"$TMP/measure.json") bytes of JSON)"

# A second harness user interrupted with SIGINT while its guest boots cleans up its domain and files.
cat >"$TMP/child.sh" <<EOF
. "$ROOT/tests/integration/lib.bash"
. "$ROOT/tests/vm/vm.bash"
VM_GUEST_DIR="$VM_GUEST_DIR" VM_NO_MAKE=1
vm_setup || exit 1
vm_start || exit 1
echo "\$VM_NAME" >"$TMP/child.name"
vm_wait_ready 120
sleep 100
EOF
env --default-signal=INT bash "$TMP/child.sh" >"$TMP/child.log" 2>&1 &
child=$!
for _ in $(seq 300); do
	[ -s "$TMP/child.name" ] && break
	kill -0 "$child" 2>/dev/null || break
	sleep 0.1
done
cname=$(cat "$TMP/child.name" 2>/dev/null)
[ -n "$cname" ] || fail "the child harness did not start a domain: $(cat "$TMP/child.log")"
sleep 1
kill -INT "$child"
wait "$child"
rc=$?
[ "$rc" -eq 130 ] || fail "the interrupted child exited $rc: $(cat "$TMP/child.log")"
virsh -q -c qemu:///system list --all --name | grep -qx "$cname" && fail "domain $cname left after SIGINT"
[ -e "/dev/shm/vnoise-$cname" ] && fail "/dev/shm/vnoise-$cname left after SIGINT"
[ -e "$VM_STATE_DIR/vm-$cname" ] && fail "$VM_STATE_DIR/vm-$cname left after SIGINT"
vm_exec true || fail "our guest suffered from the child's teardown"
ok "SIGINT during another user's boot: $cname and its files are gone, our daemons still serve"

# libvirtd restarted under a running domain: the domain stays, teardown still knows the new daemon.
vm_restart_libvirtd || fail "vm_restart_libvirtd"
vm_exec true || fail "the guest did not survive the libvirtd restart"
ok "libvirtd restarted, $name still runs"

# A second domain beside the first: one vCPU pinned to host CPU 0, a virtio NIC on a tap.
vm_start --vcpus 1 --pin0 0 --net || fail "vm_start --vcpus 1 --pin0 0 --net"
vm_wait_ready 120 || fail "the second guest did not answer"
name2=$VM_NAME
[ "$(vm_exec nproc)" = 1 ] || fail "second guest: $(vm_exec nproc) CPUs, expected 1"
pin=$(virsh -q -c qemu:///system vcpupin "$name2" | awk '{ print $1 ":" $2 }')
[ "$pin" = 0:0 ] || fail "vcpupin of $name2: '$pin', expected 0:0"
out=$(vm_exec "ping -c 1 -W 5 $VM_HOST_IP") ||
	fail "guest $VM_GUEST_IP cannot ping the host's tap $VM_TAP ($VM_HOST_IP): $out"
ok "second domain: 1 vCPU pinned to host CPU 0, guest $VM_GUEST_IP pings $VM_HOST_IP on $VM_TAP"
tap=$VM_TAP
vm_destroy "$name2" || fail "vm_destroy $name2"
ip link show "$tap" >/dev/null 2>&1 && fail "tap $tap left after vm_destroy"
"$VMEXEC" "$sock" -- true || fail "the first guest went with the second"

# tcgwatch (tests/vm/README.md, "TCG's stale int3"): it watches each domain, has not acted on this healthy
# one, ends with its domain, and its recovery (a gdbstub session stepping every vCPU) leaves the guest running
# and answering.
w=$VM_STATE_DIR/vm-$name
wpid=$(cat "$w/tcgwatch.pid" 2>/dev/null)
[ -n "$wpid" ] && kill -0 "$wpid" 2>/dev/null || fail "no tcgwatch runs for $name"
[ ! -s "$w/tcg.log" ] || fail "tcgwatch acted on a healthy guest: $(cat "$w/tcg.log")"
[ ! -e "$VM_STATE_DIR/vm-$name2/tcgwatch.pid" ] || ! kill -0 "$(cat "$VM_STATE_DIR/vm-$name2/tcgwatch.pid")" 2>/dev/null ||
	fail "the tcgwatch of $name2 outlived its domain"
kill "$wpid" # the monitor serves one client
for _ in $(seq 50); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
up0=$("$VMEXEC" "$sock" -- 'cut -d" " -f1 /proc/uptime') || fail "uptime"
out=$("$VM_BIN_DIR/tests/vm/tcgwatch" "$w/hmp.sock" "$w/gdb.sock" "$ROOT/.cache/vm/int3-$VM_KREL.syms" --step-once) ||
	fail "tcgwatch --step-once: $out"
# (libvirt learns of the stop and the resume from QEMU's events, a moment later)
for _ in $(seq 50); do
	st=$(virsh -q -c qemu:///system domstate "$name")
	[ "$st" = running ] && break
	sleep 0.1
done
[ "$st" = running ] || fail "$name $st 5 s after the steps"
up1=$("$VMEXEC" "$sock" -- 'cut -d" " -f1 /proc/uptime') || fail "the guest does not answer after the steps"
awk -v a="$up0" -v b="$up1" 'BEGIN { exit !(b > a) }' || fail "guest uptime $up0 then $up1"
ok "tcgwatch watched $name, acted on nothing, ended with $name2; $out; the guest runs on (uptime $up0 -> $up1 s)"

# Teardown: domain, shared memory file, sockets, daemons we started.
vm_destroy "$name" || fail "vm_destroy"
virsh -q -c qemu:///system list --all --name | grep -qx "$name" && fail "domain $name still listed"
vm_destroy "$name" || fail "vm_destroy is not idempotent"
started=$VM_STARTED_PIDS
vm_teardown
[ -e "$shm" ] && fail "$shm left behind"
[ -e "$VM_STATE_DIR/vm-$name" ] && fail "$VM_STATE_DIR/vm-$name left behind"
pgrep -f "guest=$name," >/dev/null && fail "a QEMU of $name still runs"
others=$(cd "$VM_STATE_DIR/users" && find . -mindepth 1 -printf '%f ')
daemons="we started ${started:-none}; gone"
if [ -n "$others" ]; then
	daemons="left running for the other harness users: $others"
else
	for pid in $started; do
		[ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat")" != Z ] && fail "daemon pid $pid still runs"
	done
	# and the libvirtd started by the restart above
	[ -n "$started" ] && pgrep -x -r R,S,D libvirtd >/dev/null && fail "a libvirtd still runs after teardown"
fi
if [ -z "$started" ] || [ -n "$others" ]; then
	virsh -q -c qemu:///system list --all --name | grep -qx "$name" && fail "domain $name listed after teardown"
fi
ok "teardown: no domain, no $shm; daemons: $daemons"
echo "PASS: vm_harness (boot-to-ready $boot s, second domain $VM_BOOT_SECS s)"
