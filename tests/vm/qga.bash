# Debian's qemu-guest-agent for the test guest (sourced by build-guest.sh; the guest runs the real
# qemu-ga on org.qemu.guest_agent.0, as a cloud image does). Never installed on the host: its service must
# not run there.
# qga_fetch CACHE: downloads the package (apt-get download, cached as a .deb in CACHE; `apt-get update -qq`
# once when the package index is missing) and unpacks it once into CACHE/qga-<deb name>. Sets QGA_ROOT (the
# unpacked tree) and QGA_BIN (its qemu-ga). Offline, a .deb already in CACHE is used. Returns 1 with a message
# on stderr when it cannot.
# qga_libs BINARY: prints the shared libraries BINARY needs on this host, one absolute path a line, the
# dynamic loader included (ldd); returns 1 with a message when one is missing.
qga_fetch() {
	local cache=$1 deb
	mkdir -p "$cache" || return 1
	deb=$(find "$cache" -maxdepth 1 -name 'qemu-guest-agent_*.deb' | sort -V | tail -1)
	if [ -z "$deb" ]; then
		if ! (cd "$cache" && apt-get download qemu-guest-agent >/dev/null 2>&1); then
			# no package index yet (a fresh machine whose packages were all present): fetch it once
			apt-get update -qq >/dev/null 2>&1
			(cd "$cache" && apt-get download qemu-guest-agent >/dev/null 2>&1)
		fi
		deb=$(find "$cache" -maxdepth 1 -name 'qemu-guest-agent_*.deb' | sort -V | tail -1)
	fi
	if [ -z "$deb" ]; then
		echo "apt-get download qemu-guest-agent failed" >&2
		return 1
	fi
	QGA_ROOT=$cache/qga-$(basename "$deb" .deb)
	if [ ! -d "$QGA_ROOT" ]; then
		rm -rf "$QGA_ROOT.tmp"
		if ! { mkdir -p "$QGA_ROOT.tmp" && dpkg-deb -x "$deb" "$QGA_ROOT.tmp" && mv "$QGA_ROOT.tmp" "$QGA_ROOT"; }; then
			echo "cannot unpack $deb" >&2
			return 1
		fi
	fi
	QGA_BIN=$(find "$QGA_ROOT/usr/sbin" "$QGA_ROOT/usr/bin" -maxdepth 1 -name qemu-ga 2>/dev/null | head -1)
	if [ -z "$QGA_BIN" ]; then
		echo "no qemu-ga in $deb" >&2
		return 1
	fi
}

qga_libs() {
	local out missing
	out=$(ldd "$1" 2>&1) || {
		echo "ldd $1: $out" >&2
		return 1
	}
	missing=$(awk '/not found/ { print $1 }' <<<"$out" | tr '\n' ' ')
	if [ -n "$missing" ]; then
		echo "libraries qemu-ga needs are missing on this host: $missing(install the packages" \
			"qemu-guest-agent depends on: dpkg-deb -f qemu-guest-agent_*.deb Depends)" >&2
		return 1
	fi
	# "libx.so.1 => /lib/.../libx.so.1 (0x...)" and the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)"
	awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }' <<<"$out"
}
