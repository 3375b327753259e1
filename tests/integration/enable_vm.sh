#!/bin/bash
# vnoise-host enable/disable on a defined TCG domain without vnoise devices: --dry-run
# prints the device XML and changes nothing; enable --config adds the ivshmem-plain <shmem>, the
# org.vnoise.0 channel and the org.vnoise.bell.0 one (the bell), twice changes nothing; the started guest
# sees the BAR and both ports (agent --probe, /sys/class/virtio-ports); --live hot-unplugs and hot-plugs the
# three; a --live change libvirt refuses is one line, exit 4 (EXIT_CANNOT), the domain unchanged; disable
# --config restores the original definition (libvirt-assigned <address> elements aside); a domain enabled
# before the bell existed (shmem and org.vnoise.0 only) gets only the bell, in its definition and live;
# bad input: one line each, distinct exit codes (2 usage, 6 unreachable, 7 unknown domain, 8 conflicting
# <shmem> or a bell that is not a unix socket).
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_tools virsh
VH="$BUILD/vnoise-host"
[ -x "$VH" ] || fail "$VH not built"
V() { virsh -q -c qemu:///system "$@"; }
BELL=org.vnoise.bell.0
# guest_port NAME [absent]: within 10 s the guest has (or no longer has) the virtio-serial port NAME; else
# the guest's port names on stdout, status 1.
guest_port() {
	local ports _
	for _ in $(seq 20); do
		ports=$(vm_exec 'cat /sys/class/virtio-ports/*/name 2>/dev/null; true')
		if grep -qx "$1" <<<"$ports"; then [ "${2:-}" != absent ] && return 0; else [ "${2:-}" = absent ] && return 0; fi
		sleep 0.5
	done
	tr '\n' ' ' <<<"$ports"
	return 1
}

# ---- command line only (no libvirt needed) ----
expect_err 2 "-D DOMAIN is required" "$VH" enable --config
expect_err 2 "want a power of two" "$VH" enable -D x --size 3
expect_err 2 "unknown option '--size'" "$VH" disable -D x --size 4
expect_err 6 "unreachable" "$VH" enable -D x --connect 'qemu+unix:///system?socket=/nonexistent/sock'
ok "bad command lines: exit 2; libvirt unreachable: exit 6"

vm_setup || fail "vm_setup"
DOMS=()
_en_cleanup() {
	local d
	for d in "${DOMS[@]}"; do
		V destroy "$d" >/dev/null 2>&1
		V undefine "$d" >/dev/null 2>&1
		rm -f "/dev/shm/vnoise-$d"
	done
}
# our persistent domains go before the harness stops the daemons (vm_teardown)
trap '_en_rc=$?; _en_cleanup; (exit $_en_rc); _vm_on_exit' EXIT

# A persistent domain like the harness's, with only the exec channel (vmshd): no vnoise devices.
define_plain() {
	local name=$1 extra=${2:-} dir=$VM_STATE_DIR/vm-$1
	mkdir -p "$dir"
	DOMS+=("$name")
	_VM_DOMAINS+=("$name")
	cat >"$dir/domain.xml" <<EOF
<domain type='qemu'>
  <name>$name</name>
  <memory unit='MiB'>640</memory>
  <vcpu placement='static'>2</vcpu>
$(vm_xml_boot "console=ttyS0 quiet panic=-1" "$dir/console.log")
    <channel type='unix'>
      <source mode='bind' path='$dir/exec.sock'/>
      <target type='virtio' name='org.vnoise.test.0'/>
    </channel>
$extra
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
	V define "$dir/domain.xml" >/dev/null || fail "virsh define $name"
}
# The inactive XML without what libvirt assigns: <address> elements and the PCI controllers (root ports,
# bridges) it adds to give a device an address.
inactive() {
	V dumpxml --inactive "$1" | grep -v -e '<address ' -e '^$' |
		awk "/<controller type='pci'/ { skip = !/\\/>/; next } skip { skip = !/<\\/controller>/; next } { print }"
}

D=vnoise-test-$$-$RANDOM
define_plain "$D"
inactive "$D" >"$TMP/before.xml"
grep -q "<shmem\|org.vnoise.0\|$BELL" "$TMP/before.xml" && fail "the plain domain already has vnoise devices"

expect_err 7 "no domain 'vnoise-test-none-$$'" "$VH" enable -D "vnoise-test-none-$$" --config
ok "unknown domain: exit 7"

"$VH" enable -D "$D" --dry-run >"$TMP/dry" 2>"$TMP/err" || fail "--dry-run: $(cat "$TMP/err")"
grep -q "<shmem name='vnoise-$D'>" "$TMP/dry" && grep -q "ivshmem-plain" "$TMP/dry" &&
	grep -q "<size unit='M'>4</size>" "$TMP/dry" && grep -q "name='org.vnoise.0'" "$TMP/dry" &&
	grep -q "name='$BELL'" "$TMP/dry" ||
	fail "--dry-run output: $(cat "$TMP/dry")"
inactive "$D" | cmp -s - "$TMP/before.xml" || fail "--dry-run changed the domain"
ok "--dry-run prints the shmem (4 MiB for 2 vCPUs), the channel and the bell, changes nothing"

"$VH" enable -D "$D" --config >"$TMP/out" 2>"$TMP/err" || fail "enable --config: $(cat "$TMP/err")"
inactive "$D" >"$TMP/enabled.xml"
grep -q "<shmem name='vnoise-$D'>" "$TMP/enabled.xml" && grep -q "name='org.vnoise.0'" "$TMP/enabled.xml" &&
	grep -q "name='$BELL'" "$TMP/enabled.xml" ||
	fail "enable --config did not add the devices: $(cat "$TMP/enabled.xml")"
grep -q "(3 device changes)" "$TMP/out" || fail "enable --config says: $(cat "$TMP/out")"
"$VH" enable -D "$D" >"$TMP/out" 2>&1 || fail "enable twice: $(cat "$TMP/out")"
grep -q "nothing to do" "$TMP/out" || fail "enable twice says: $(cat "$TMP/out")"
inactive "$D" | cmp -s - "$TMP/enabled.xml" || fail "enabling twice changed the domain"
ok "enable --config adds the shmem, the channel and the bell; enabling twice changes nothing"

expect_err 8 "already has <shmem name='vnoise-$D'> of 4 MiB, not 16" "$VH" enable -D "$D" --config --size 16
# conflict NAME DEVICE_XML MESSAGE WHAT: a domain NAME defined with DEVICE_XML refuses enable with exit 8 and
# MESSAGE, and is left as it was
conflict() {
	define_plain "$1" "$2"
	inactive "$1" >"$TMP/$1.xml"
	expect_err 8 "$3" "$VH" enable -D "$1" --config
	inactive "$1" | cmp -s - "$TMP/$1.xml" || fail "a conflicting enable ($4) changed the domain"
	ok "$4: exit 8, domain unchanged"
}
D2=vnoise-test-$$-$RANDOM
conflict "$D2" "    <shmem name='vnoise-$D2'><model type='ivshmem-doorbell'/><server path='/run/vnoise-x.sock'/></shmem>" \
	"not ivshmem-plain" "a different <shmem> of the same name"
# A bell that is not a unix socket: a conflict too, nothing added (not even the shmem).
D7=vnoise-test-$$-$RANDOM
conflict "$D7" "    <channel type='pty'><target type='virtio' name='$BELL'/></channel>" \
	"already has a channel $BELL that is not a unix socket" "a $BELL channel that is not a unix socket"

# ---- the guest sees the devices ----
VM_NAME=$D VM_EXEC_SOCK=$VM_STATE_DIR/vm-$D/exec.sock VM_CONSOLE=$VM_STATE_DIR/vm-$D/console.log
_VM_START_NS=$(_vm_now_ns)
V start "$D" >/dev/null || fail "virsh start $D"
vm_wait_ready 90 || fail "guest not ready"
out=$(vm_exec 'vnoise-guest agent --probe') || fail "agent --probe: $out"
grep -q "^port org.vnoise.0: /dev/vport" <<<"$out" && grep -q "^ivshmem: .* 4194304$" <<<"$out" ||
	fail "agent --probe: $out"
ports=$(guest_port "$BELL") || fail "the guest has no $BELL port: $ports"
ok "the guest sees the port, the bell and the 4 MiB ivshmem BAR: $(tr '\n' ';' <<<"$out") $BELL"

expect_err 2 "is running: say --live" "$VH" disable -D "$D"
ok "a running domain without --live or --config: exit 2"
"$VH" disable -D "$D" --live --config --dry-run >"$TMP/dry" 2>"$TMP/err" || fail "disable --dry-run: $(cat "$TMP/err")"
[ "$(grep -c "<shmem name='vnoise-$D'>" "$TMP/dry")" = 2 ] && [ "$(grep -c "name='org.vnoise.0'" "$TMP/dry")" = 2 ] &&
	[ "$(grep -c "name='$BELL'" "$TMP/dry")" = 2 ] ||
	fail "disable --live --config --dry-run: $(cat "$TMP/dry")"
inactive "$D" | cmp -s - "$TMP/enabled.xml" || fail "disable --dry-run changed the domain"
# --dry-run alone on a running domain changes nothing: it shows both sides, as --live --config does
"$VH" disable -D "$D" --dry-run >"$TMP/dry1" 2>"$TMP/err" || fail "disable --dry-run alone: $(cat "$TMP/err")"
cmp -s "$TMP/dry" "$TMP/dry1" || fail "disable --dry-run alone differs from --live --config --dry-run: $(diff "$TMP/dry" "$TMP/dry1")"
"$VH" enable -D "$D" --live --config >"$TMP/out" 2>&1 && grep -q "nothing to do" "$TMP/out" ||
	fail "enable --live --config on an enabled running domain: $(cat "$TMP/out")"
ok "disable --live --config --dry-run (and --dry-run alone) lists both sides' devices; enable on both sides again: nothing to do"

# ---- live changes: libvirt 9.0 / QEMU 7.2 hot-plug and hot-unplug the devices (q35, TCG) ----
"$VH" disable -D "$D" --live >"$TMP/out" 2>"$TMP/err" || fail "disable --live: $(cat "$TMP/err")"
grep -q "(3 device changes)" "$TMP/out" || fail "disable --live says: $(cat "$TMP/out")"
V dumpxml "$D" >"$TMP/live.xml"
grep -q "<shmem\|org.vnoise.0\|$BELL" "$TMP/live.xml" && fail "disable --live left a device: $(cat "$TMP/live.xml")"
out=$(vm_exec 'vnoise-guest agent --probe')
grep -q "^port org.vnoise.0: absent" <<<"$out" && grep -q "^ivshmem: absent" <<<"$out" ||
	fail "after disable --live the guest still sees: $out"
ports=$(guest_port "$BELL" absent) || fail "after disable --live the guest still has $BELL: $ports"
"$VH" enable -D "$D" --live >"$TMP/out" 2>"$TMP/err" || fail "enable --live: $(cat "$TMP/err")"
grep -q "(3 device changes)" "$TMP/out" || fail "enable --live says: $(cat "$TMP/out")"
V dumpxml "$D" | grep -q "name='$BELL'" || fail "enable --live did not hot-plug $BELL"
out=$(vm_exec 'vnoise-guest agent --probe') || fail "agent --probe after enable --live: $out"
grep -q "^port org.vnoise.0: /dev/vport" <<<"$out" && grep -q "^ivshmem: .* 4194304$" <<<"$out" ||
	fail "after enable --live: $out"
ports=$(guest_port "$BELL") || fail "after enable --live the guest has no $BELL: $ports"
ok "disable --live and enable --live hot-unplug and hot-plug the shmem, the channel and the bell; the guest follows"
# Enabled by a vnoise before the bell: only the bell goes (libvirt's own detach), and enable --live puts
# back only the bell.
V dumpxml "$D" | awk -v b="name='$BELL'" '/<channel /{c = ""; in_c = 1} in_c {c = c $0 "\n"} /<\/channel>/ && in_c {
	in_c = 0; if (index(c, b)) printf "%s", c }' | grep -v '<address ' >"$TMP/bell.xml"
grep -q "name='$BELL'" "$TMP/bell.xml" || fail "cannot find the live $BELL element: $(cat "$TMP/bell.xml")"
V detach-device "$D" "$TMP/bell.xml" --live >"$TMP/virsh.out" 2>&1 || fail "detach-device $BELL: $(cat "$TMP/virsh.out")"
for _ in $(seq 50); do V dumpxml "$D" | grep -q "name='$BELL'" || break; sleep 0.1; done
V dumpxml "$D" | grep -q "name='$BELL'" && fail "virsh detach-device left $BELL"
ports=$(guest_port "$BELL" absent) || fail "after detach-device the guest still has $BELL: $ports"
"$VH" enable -D "$D" --live --dry-run >"$TMP/dry" 2>"$TMP/err" || fail "enable --live --dry-run: $(cat "$TMP/err")"
grep -q "name='$BELL'" "$TMP/dry" && ! grep -q "<shmem\|name='org.vnoise.0'\|<controller" "$TMP/dry" ||
	fail "enable --live --dry-run on a domain without the bell: $(cat "$TMP/dry")"
"$VH" enable -D "$D" --live >"$TMP/out" 2>"$TMP/err" || fail "enable --live (bell only): $(cat "$TMP/err")"
grep -q "enabled (1 device change)" "$TMP/out" || fail "enable --live (bell only) says: $(cat "$TMP/out")"
[ "$(V dumpxml "$D" | grep -c "<shmem name='vnoise-$D'>")" = 1 ] &&
	[ "$(V dumpxml "$D" | grep -c "name='org.vnoise.0'")" = 1 ] &&
	[ "$(V dumpxml "$D" | grep -c "name='$BELL'")" = 1 ] || fail "after enable --live (bell only): $(V dumpxml "$D")"
ports=$(guest_port "$BELL") || fail "after enable --live (bell only) the guest has no $BELL: $ports"
ok "a running domain with the shmem and org.vnoise.0 but no bell: enable --live adds only the bell"

# define_bare NAME [EXTRA]: a plain domain without any channel (no virtio-serial controller either), started.
define_bare() {
	define_plain "$1" "${2:-}"
	sed -i '/<channel /,/<\/channel>/d' "$VM_STATE_DIR/vm-$1/domain.xml"
	V undefine "$1" >/dev/null && V define "$VM_STATE_DIR/vm-$1/domain.xml" >/dev/null || fail "define $1"
	grep -q virtio-serial <(V dumpxml --inactive "$1") && fail "$1 has a virtio-serial controller"
	V start "$1" >/dev/null || fail "virsh start $1"
	V dumpxml "$1" | grep -v '<address ' >"$TMP/$1.xml"
}
# --live refused: one line, exit 4, the running domain as it was.
live_refused() {
	local d=$1 pat=$2
	expect_err 4 "$pat" "$VH" enable -D "$d" --live
	V dumpxml "$d" | grep -v '<address ' | diff "$TMP/$d.xml" - >"$TMP/diff" ||
		fail "the refused --live changed $d: $(cat "$TMP/diff")"
	V destroy "$d" >/dev/null
}
# A q35 domain started without any conventional PCI slot (no pcie-to-pci-bridge): libvirt cannot hot-plug
# the ivshmem-plain device (a PCI device) and cannot hot-plug a bridge.
D3=vnoise-test-$$-$RANDOM
define_plain "$D3"
V start "$D3" >/dev/null || fail "virsh start $D3"
V dumpxml "$D3" | grep -v '<address ' >"$TMP/$D3.xml"
live_refused "$D3" "cannot hot-plug the ivshmem-plain <shmem>.*nothing changed.*--config"
ok "--live on a q35 domain without a free PCI slot: exit 4, one line, unchanged"
# With a free PCI slot (a pcie-to-pci-bridge) but no virtio-serial controller: libvirt cannot hot-plug
# one ("'virtio-serial' controller cannot be hot plugged"): refused before any change.
BRIDGE="    <controller type='pci' index='1' model='pcie-root-port'/>
    <controller type='pci' index='2' model='pcie-to-pci-bridge'/>"
D4=vnoise-test-$$-$RANDOM
define_bare "$D4" "$BRIDGE"
live_refused "$D4" "no virtio-serial controller and libvirt cannot hot-plug one; nothing changed; use --config"
ok "--live without a virtio-serial controller: exit 4, one line, unchanged"
# A step that fails after one that worked: the shmem is hot-plugged, then QEMU cannot create the channel's
# socket (its directory replaced by a file), and the shmem is hot-unplugged again before the one error line.
D5=vnoise-test-$$-$RANDOM
define_plain "$D5" "$BRIDGE"
VM_NAME=$D5 VM_EXEC_SOCK=$VM_STATE_DIR/vm-$D5/exec.sock VM_CONSOLE=$VM_STATE_DIR/vm-$D5/console.log
_VM_START_NS=$(_vm_now_ns)
V start "$D5" >/dev/null || fail "virsh start $D5"
vm_wait_ready 90 || fail "guest $D5 not ready"
chdir=/var/lib/libvirt/qemu/channel/target/domain-$(V domid "$D5")-${D5:0:20}
rm -rf "$chdir" && touch "$chdir" || fail "cannot replace $chdir"
V dumpxml "$D5" | grep -v '<address ' >"$TMP/$D5.xml"
live_refused "$D5" "cannot hot-plug the org.vnoise.0 channel.*nothing changed; use --config"
rm -f "$chdir"
ok "--live failing at the channel: exit 4, one line, the hot-plugged shmem taken out again"

V destroy "$D" >/dev/null || fail "virsh destroy"
for _ in $(seq 50); do [ "$(V domstate "$D")" = "shut off" ] && break; sleep 0.1; done
"$VH" disable -D "$D" --config >"$TMP/out" 2>"$TMP/err" || fail "disable --config: $(cat "$TMP/err")"
inactive "$D" >"$TMP/after.xml"
diff "$TMP/before.xml" "$TMP/after.xml" >"$TMP/diff" || fail "disable did not restore the definition: $(cat "$TMP/diff")"
"$VH" disable -D "$D" >"$TMP/out" 2>&1 && grep -q "nothing to do" "$TMP/out" || fail "disable twice: $(cat "$TMP/out")"
ok "disable --config restores the original definition (addresses aside); twice changes nothing"

# A definition enabled by a vnoise before the bell (the shmem and org.vnoise.0 only): enable adds only the
# bell, disable takes out all three.
D6=vnoise-test-$$-$RANDOM
define_plain "$D6" "    <shmem name='vnoise-$D6'><model type='ivshmem-plain'/><size unit='M'>4</size></shmem>
    <channel type='unix'><source mode='bind'/><target type='virtio' name='org.vnoise.0'/></channel>"
"$VH" enable -D "$D6" --dry-run >"$TMP/dry" 2>"$TMP/err" || fail "enable --dry-run (old): $(cat "$TMP/err")"
grep -q "name='$BELL'" "$TMP/dry" && ! grep -q "<shmem\|name='org.vnoise.0'\|<controller" "$TMP/dry" ||
	fail "enable --dry-run on an older enabled domain: $(cat "$TMP/dry")"
"$VH" enable -D "$D6" --config >"$TMP/out" 2>"$TMP/err" || fail "enable --config (old): $(cat "$TMP/err")"
grep -q "enabled (1 device change)" "$TMP/out" || fail "enable --config (old) says: $(cat "$TMP/out")"
inactive "$D6" >"$TMP/d6.xml"
[ "$(grep -c "<shmem name='vnoise-$D6'>" "$TMP/d6.xml")" = 1 ] && [ "$(grep -c "name='org.vnoise.0'" "$TMP/d6.xml")" = 1 ] &&
	[ "$(grep -c "name='$BELL'" "$TMP/d6.xml")" = 1 ] || fail "after enable (old): $(cat "$TMP/d6.xml")"
"$VH" disable -D "$D6" --config >"$TMP/out" 2>"$TMP/err" || fail "disable --config (old): $(cat "$TMP/err")"
grep -q "disabled (3 device changes)" "$TMP/out" || fail "disable --config (old) says: $(cat "$TMP/out")"
grep -q "<shmem\|org.vnoise.0\|$BELL" <(inactive "$D6") && fail "disable (old) left a device: $(inactive "$D6")"
ok "a definition enabled before the bell: enable adds only the bell (1 change), disable removes all three"
