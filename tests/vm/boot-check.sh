#!/bin/bash
# Boots Debian's guest kernel under QEMU TCG with an initramfs holding the static vnoise-guest, runs a short
# measurement inside, and prints the guest's console. A first check that the kernel helper loads on the
# kernel the test VMs run (REFERENCE.md §1, §5); the libvirt harness proper comes with the vnoise-host issue.
# Usage (root): tests/vm/boot-check.sh [vnoise-guest args...]   (default: measure --cpus 1 --duration 3s --json)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=$ROOT/.cache/vm
VG=${VNOISE_GUEST:-$ROOT/build/vnoise-guest}
[ -x "$VG" ] || { echo "build vnoise-guest first (make)"; exit 1; }
for t in qemu-system-x86_64 cpio busybox; do
	command -v "$t" >/dev/null || [ -x /bin/busybox ] || { echo "missing $t"; exit 1; }
done
mkdir -p "$CACHE"
# shellcheck source=tests/vm/kernel.bash
. "$ROOT/tests/vm/kernel.bash"
kernel_fetch "$CACHE" || exit 1
kernel=$KERNEL
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ird=$work/root
mkdir -p "$ird"/{bin,sbin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$ird/bin/busybox"
for a in sh mount umount cat echo mkdir poweroff sleep ls dmesg; do ln -s busybox "$ird/bin/$a"; done
cp "$VG" "$ird/bin/vnoise-guest"
args=${*:-measure --cpus 1 --duration 3s --json}
cat >"$ird/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing
echo "== vnoise boot-check: \$(cat /proc/version)"
echo "== kallsyms steal_time: \$(grep -c ' steal_time\$' /proc/kallsyms)"
/bin/vnoise-guest $args
echo "== vnoise-guest exit \$?"
poweroff -f
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"
timeout 300 qemu-system-x86_64 -M q35 -accel tcg -cpu qemu64 -smp 2 -m 768 -kernel "$kernel" \
	-initrd "$work/initrd.gz" -append "console=ttyS0 quiet panic=-1" -nographic -no-reboot \
	-serial mon:stdio </dev/null 2>&1 | tr -d '\r'
