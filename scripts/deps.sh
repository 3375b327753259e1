#!/bin/sh
# Install every build and test dependency of vnoise with apt. Idempotent: does nothing when all are present.
set -eu
PKGS="make gcc libc6-dev clang pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
      check libsubunit-dev clang-format jq util-linux procps libclang-rt-14-dev
      libvirt-dev libxml2-dev libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86
      busybox-static cpio libopenmpi-dev openmpi-bin
      libmicrohttpd-dev libpcap-dev libncurses-dev libsqlite3-dev sqlite3 strace libsnappy-dev libcurl4-openssl-dev
      prometheus tshark curl iproute2 socat
      tmux chromium
      systemd man-db groff-base
      libglib2.0-0 libnuma1 liburing2 libudev1
      build-essential dpkg-dev debhelper fakeroot lintian"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "deps: all present"
	exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"
