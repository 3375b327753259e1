# The Debian guest kernel of the test VMs (sourced by build-guest.sh and boot-check.sh; REFERENCE.md §1).
# kernel_fetch CACHE: downloads the package linux-image-amd64 depends on (apt-get download, cached as a .deb
# in CACHE) and unpacks it once into CACHE/kroot-<package>. Sets KROOT (the unpacked tree), KERNEL (its
# vmlinuz) and KREL (its release, as the guest's `uname -r` prints it). Without apt metadata (offline) it
# falls back to the newest tree already unpacked. Returns 1 with a message on stderr when it cannot.
kernel_fetch() {
	local cache=$1 pkg deb
	mkdir -p "$cache" || return 1
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)
	if [ -z "$pkg" ] && [ -z "$(find "$cache" -maxdepth 1 -type d -name 'kroot-linux-image-*' 2>/dev/null)" ]; then
		# no package lists yet (a fresh machine whose packages were all present): fetch them once
		apt-get update -qq >/dev/null 2>&1
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
			sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)
	fi
	if [ -z "$pkg" ]; then
		KROOT=$(find "$cache" -maxdepth 1 -type d -name 'kroot-linux-image-*' 2>/dev/null | sort -V | tail -1)
		if [ -z "$KROOT" ]; then
			echo "cannot resolve the Debian kernel package (apt-get update?)" >&2
			return 1
		fi
		pkg=${KROOT##*/kroot-}
	fi
	KROOT=$cache/kroot-$pkg
	if [ ! -d "$KROOT" ]; then
		deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | head -1)
		if [ -z "$deb" ]; then
			(cd "$cache" && apt-get download "$pkg" >/dev/null 2>&1)
			deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | head -1)
		fi
		if [ -z "$deb" ]; then
			echo "apt-get download $pkg failed" >&2
			return 1
		fi
		rm -rf "$KROOT.tmp"
		if ! { mkdir -p "$KROOT.tmp" && dpkg-deb -x "$deb" "$KROOT.tmp" && mv "$KROOT.tmp" "$KROOT"; }; then
			echo "cannot unpack $deb" >&2
			return 1
		fi
	fi
	KERNEL=$(find "$KROOT/boot" -maxdepth 1 -name 'vmlinuz-*' | head -1)
	if [ -z "$KERNEL" ]; then
		echo "no vmlinuz in $KROOT/boot" >&2
		return 1
	fi
	# shellcheck disable=SC2034 # used by the callers
	KREL=${KERNEL##*/vmlinuz-}
}
