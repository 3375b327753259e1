#!/bin/bash
# Builds the test VM's guest: OUTDIR/vmlinuz (Debian's kernel, REFERENCE.md §1), OUTDIR/initrd.img and
# OUTDIR/kernel.release (what the guest's `uname -r` prints).
#   tests/vm/build-guest.sh OUTDIR
# The initramfs holds busybox-static (applet links), the virtio modules in dependency order (virtio_ring,
# virtio, virtio_pci_modern_dev, virtio_pci_legacy_dev, virtio_pci, virtio_console, then virtio_net and
# $VM_EXTRA_MODULES with what they depend on; order from each .ko's depends= string, .ko.xz/.ko.zst/.ko.gz
# unpacked here), /bin/vnoise-guest, /bin/vmshd, Debian's qemu-ga (/usr/sbin/qemu-ga from the package
# qemu-guest-agent, fetched by tests/vm/qga.bash, with every shared library ldd lists and the dynamic loader,
# copied from this host at their paths) and the files of $VM_EXTRA_FILES ("src:dst ...", dst
# absolute in the guest). Its /init mounts proc, sys, devtmpfs, tracefs (/sys/kernel/tracing), debugfs,
# bpffs, tmpfs on /tmp and /dev/shm, loads the modules, brings up lo (and eth0 with the address of
# vnoise.ip=A.B.C.D/N from the kernel cmdline, if given), then becomes busybox init, which respawns
# `vmshd -n org.vnoise.test.0` and /bin/qemu-ga-run (qemu-ga on org.qemu.guest_agent.0, as in a cloud
# image: `qemu-ga -m virtio-serial -p /dev/vportNpM`, the port found by name in /sys/class/virtio-ports; it
# waits while the guest has no such port or while /tmp/no-qemu-ga exists, so that a test can stop qemu-ga
# and keep it stopped: `touch /tmp/no-qemu-ga; kill $(pidof qemu-ga)`), reaps orphans and makes `poweroff`
# work. The kernel and the qemu-guest-agent package are cached in $VM_CACHE_DIR (default .cache/vm), the
# initramfs too, keyed by a hash of everything that goes into it (qemu-ga and its libraries included).
# The guest binaries are taken from $VM_BIN_DIR (default build/; they must be static): $VNOISE_GUEST and
# $VMSHD override each.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${VM_CACHE_DIR:-$ROOT/.cache/vm}
BIN=${VM_BIN_DIR:-$ROOT/build}
VG=${VNOISE_GUEST:-$BIN/vnoise-guest}
VMSHD=${VMSHD:-$BIN/tests/vm/vmshd}
MODS="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_console virtio_net
      ${VM_EXTRA_MODULES:-}"
EXEC_PORT=org.vnoise.test.0
KEEP_INITRDS=6

die() {
	echo "build-guest: error: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
OUT=$1
# shellcheck source=tests/vm/kernel.bash
. "$ROOT/tests/vm/kernel.bash"
kernel_fetch "$CACHE" || die "no guest kernel"
# shellcheck source=tests/vm/qga.bash
. "$ROOT/tests/vm/qga.bash"
qga_fetch "$CACHE" || die "no qemu-ga for the guest"
QGA_LIBS=$(qga_libs "$QGA_BIN") || die "qemu-ga cannot run here"
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "$BUSYBOX missing (busybox-static; scripts/deps.sh)"
for f in "$VG" "$VMSHD"; do
	[ -x "$f" ] || die "$f not built (make build/vnoise-guest build/tests/vm/vmshd)"
	if command -v readelf >/dev/null && readelf -lW "$f" | grep -q 'program interpreter'; then
		die "$f is not static: it cannot run in the busybox initramfs"
	fi
done

work=$(mktemp -d /tmp/vnoise-guest.XXXXXX) || die "mktemp failed"
trap 'rm -rf "$work"' EXIT

# Modules: find each (maybe compressed), unpack into $work/mod, order so that depends= come first.
moddir=$KROOT/lib/modules/$KREL
declare -A MODFILE=()
ORDER=()
mod_find() {
	local m=$1 f
	f=$(find "$moddir" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" -o -name "$m.ko.gz" \) |
		head -1)
	[ -n "$f" ] || die "module $m not in $moddir"
	mkdir -p "$work/mod"
	case "$f" in
	*.ko) cp "$f" "$work/mod/$m.ko" ;;
	*.xz) xz -dc "$f" >"$work/mod/$m.ko" ;;
	*.zst) zstd -qdc "$f" >"$work/mod/$m.ko" ;;
	*.gz) gzip -dc "$f" >"$work/mod/$m.ko" ;;
	esac || die "cannot unpack $f"
	MODFILE[$m]=$f
}
mod_add() {
	local m=$1 d deps seen
	for seen in "${ORDER[@]}"; do [ "$seen" = "$m" ] && return 0; done
	[ -n "${MODFILE[$m]:-}" ] || mod_find "$m"
	deps=$(tr '\0' '\n' <"$work/mod/$m.ko" | sed -n 's/^depends=//p' | head -1)
	for d in ${deps//,/ }; do
		[ "$d" = "$m" ] && continue
		mod_add "$d"
	done
	ORDER+=("$m")
}
for m in $MODS; do mod_add "$m"; done

for e in ${VM_EXTRA_FILES:-}; do
	case "$e" in *:/*) ;; *) die "VM_EXTRA_FILES: '$e' is not src:/dst" ;; esac
	[ -e "${e%%:*}" ] || die "VM_EXTRA_FILES: ${e%%:*} does not exist"
done

# The key of the initramfs: this script, the kernel helper, and every input file.
key=$({
	# shellcheck disable=SC2086 # one path a line
	sha256sum "$0" "$ROOT/tests/vm/kernel.bash" "$ROOT/tests/vm/qga.bash" "$BUSYBOX" "$VG" "$VMSHD" \
		"$QGA_BIN" $QGA_LIBS | cut -d' ' -f1
	echo "qemu-ga" $QGA_LIBS
	echo "$KREL ${ORDER[*]}"
	for m in "${ORDER[@]}"; do sha256sum "$work/mod/$m.ko" | cut -d' ' -f1; done
	for e in ${VM_EXTRA_FILES:-}; do
		src=${e%%:*}
		echo "extra ${e#*:}"
		find "$src" -type f -print0 | sort -z | xargs -0 sha256sum | cut -d' ' -f1
	done
} | sha256sum | cut -c1-16)
cached=$CACHE/initrd-$key.img

if [ ! -f "$cached" ]; then
	ird=$work/root
	mkdir -p "$ird"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,root,lib/modules/vnoise} ||
		die "mkdir failed"
	cp "$BUSYBOX" "$ird/bin/busybox"
	# applet links; bin/busybox is in the list and must not become a link to itself (ELOOP panic)
	for a in $("$BUSYBOX" --list-full); do
		case "$a" in bin/busybox | linuxrc) continue ;; esac
		mkdir -p "$ird/$(dirname "$a")"
		ln -sf /bin/busybox "$ird/$a"
	done
	cp "$VG" "$ird/bin/vnoise-guest"
	cp "$VMSHD" "$ird/bin/vmshd"
	{ mkdir -p "$ird/usr/sbin" "$ird/run" "$ird/var" "$ird/etc/qemu" && ln -s /run "$ird/var/run" &&
		cp "$QGA_BIN" "$ird/usr/sbin/qemu-ga"; } || die "cannot copy qemu-ga"
	for l in $QGA_LIBS; do # at their paths, symbolic links resolved
		{ mkdir -p "$ird$(dirname "$l")" && cp -L "$l" "$ird$l"; } || die "cannot copy $l"
	done
	for m in "${ORDER[@]}"; do cp "$work/mod/$m.ko" "$ird/lib/modules/vnoise/"; done
	echo "${ORDER[*]}" >"$ird/lib/modules/vnoise/order"
	for e in ${VM_EXTRA_FILES:-}; do
		src=${e%%:*} dst=${e#*:}
		{ mkdir -p "$ird$(dirname "$dst")" && cp -a "$src" "$ird$dst"; } || die "cannot copy $src"
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$ird/etc/passwd"
	echo 'root:x:0:' >"$ird/etc/group"
	cat >"$ird/etc/inittab" <<EOF
::respawn:/bin/vmshd -n $EXEC_PORT
::respawn:/bin/qemu-ga-run
::ctrlaltdel:/sbin/reboot -f
::shutdown:/bin/sync
EOF
	cat >"$ird/init" <<'EOF'
#!/bin/sh
# vnoise test VM init (tests/vm/build-guest.sh): mounts, modules, lo, then busybox init runs vmshd.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
mount -t tmpfs tmp /tmp
mkdir -p /dev/shm /dev/pts
mount -t tmpfs shm /dev/shm
mount -t devpts devpts /dev/pts
for m in $(cat /lib/modules/vnoise/order); do
	insmod "/lib/modules/vnoise/$m.ko" || echo "init: insmod $m failed"
done
ip link set lo up
for a in $(cat /proc/cmdline); do
	case "$a" in vnoise.ip=*) ip link set eth0 up && ip addr add "${a#vnoise.ip=}" dev eth0 ;; esac
done
hostname vnoise-guest
echo "init: up after $(cut -d' ' -f1 /proc/uptime) s"
exec /sbin/init
EOF
	chmod +x "$ird/init"
	cat >"$ird/bin/qemu-ga-run" <<'EOF'
#!/bin/sh
# qemu-ga on org.qemu.guest_agent.0 (tests/vm/build-guest.sh), respawned by init. Waits while the port is
# absent or /tmp/no-qemu-ga exists (a test stopped qemu-ga and wants the port free); runs qemu-ga as its
# child, as a service manager would.
name=org.qemu.guest_agent.0
while :; do
	port=
	if [ ! -e /tmp/no-qemu-ga ]; then
		for f in /sys/class/virtio-ports/*/name; do
			[ "$(cat "$f" 2>/dev/null)" = "$name" ] || continue
			f=${f%/name}
			port=/dev/${f##*/}
		done
	fi
	[ -n "$port" ] && [ -c "$port" ] && break
	sleep 0.5
done
/usr/sbin/qemu-ga -m virtio-serial -p "$port"
sleep 1 # a qemu-ga that cannot start (the port busy) is not respawned in a tight loop
EOF
	chmod +x "$ird/bin/qemu-ga-run"
	mkdir -p "$CACHE"
	{ (cd "$ird" && find . | sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$cached.tmp.$$" &&
		mv "$cached.tmp.$$" "$cached"; } || die "cannot build the initramfs"
	# keep the newest few
	find "$CACHE" -maxdepth 1 -name 'initrd-*.img' -printf '%T@ %p\n' | sort -rn |
		tail -n +$((KEEP_INITRDS + 1)) | cut -d' ' -f2- | xargs -r rm -f
	echo "build-guest: built $cached (${ORDER[*]})" >&2
fi

mkdir -p "$OUT" || die "cannot create $OUT"
{ cp "$KERNEL" "$OUT/vmlinuz.tmp" && mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"; } || die "cannot copy the kernel"
{ cp "$cached" "$OUT/initrd.img.tmp" && mv "$OUT/initrd.img.tmp" "$OUT/initrd.img"; } ||
	die "cannot copy the initramfs"
echo "$KREL" >"$OUT/kernel.release"
