#!/bin/bash
# make install / make uninstall (DESTDIR, PREFIX), the systemd units and the man pages, as a packager and an
# admin would check them: install into a scratch root, every file in place and runnable; uninstall leaves
# nothing; `systemd-analyze verify` on the installed units (against a root holding this system's units, so
# the units' binaries and dependencies are checked); each man page renders with `man -l` and groff without a
# warning. The units name binaries by their installed paths, so the verify root is installed with PREFIX=/usr.
. "$(dirname "$0")/lib.bash"
require_tools make systemd-analyze man groff
cd "$ROOT" || exit 1
root=$TMP/root
make -s BUILD="${BUILD#"$ROOT"/}" install DESTDIR="$root" PREFIX=/usr >"$TMP/install.log" 2>&1 ||
	fail "make install: $(tail -5 "$TMP/install.log")"
for f in usr/sbin/vnoise-guest usr/sbin/vnoise-host usr/bin/vnoise-bench usr/lib/vnoise/libvnoise-preload.so \
	usr/share/man/man8/vnoise-guest.8 usr/share/man/man8/vnoise-host.8 usr/share/man/man1/vnoise-bench.1 \
	lib/systemd/system/vnoise-host.service lib/systemd/system/vnoise-guest-agent.service \
	lib/udev/rules.d/60-vnoise-guest-agent.rules etc/default/vnoise-host etc/default/vnoise-guest-agent; do
	[ -f "$root/$f" ] || fail "make install did not install /$f"
done
for b in usr/sbin/vnoise-guest usr/sbin/vnoise-host usr/bin/vnoise-bench; do
	"$root/$b" --version | grep -q "^$(basename "$b") $(head -1 VERSION)" || fail "/$b --version"
done
ok "make install: $(find "$root" -type f | wc -l) files, the binaries run"

# An admin's edited default file is kept by uninstall; everything else goes, directories included.
echo 'VNOISE_HOST_OPTS="--period 5s"' >>"$root/etc/default/vnoise-host"
make -s BUILD="${BUILD#"$ROOT"/}" uninstall DESTDIR="$root" PREFIX=/usr >"$TMP/uninstall.log" 2>&1 ||
	fail "make uninstall: $(tail -5 "$TMP/uninstall.log")"
left=$(find "$root" -type f)
[ "$left" = "$root/etc/default/vnoise-host" ] || fail "make uninstall left: $left"
rm -f "$root/etc/default/vnoise-host"
rmdir -p "$root/etc/default" 2>/dev/null
[ -z "$(find "$root" -mindepth 1 ! -path "$root/etc" 2>/dev/null)" ] || fail "directories left: $(find "$root" -mindepth 1)"
ok "make uninstall removes every file it installed (an edited /etc/default file is kept)"

vroot=$TMP/vroot
make -s BUILD="${BUILD#"$ROOT"/}" install DESTDIR="$vroot" PREFIX=/usr >/dev/null 2>&1 || fail "install for verify"
cp -an /lib/systemd/system/. "$vroot/lib/systemd/system/"
for u in vnoise-host.service vnoise-guest-agent.service; do
	out=$(SYSTEMD_LOG_LEVEL=err systemd-analyze verify --man=no --root="$vroot" "$vroot/lib/systemd/system/$u" 2>&1) ||
		fail "systemd-analyze verify $u: $out"
	[ -z "$out" ] || fail "systemd-analyze verify $u warns: $out"
done
ok "systemd-analyze verify: both units clean"

for m in man/vnoise-guest.8 man/vnoise-host.8 man/vnoise-bench.1; do
	w=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "man -l $m warns: $w"
	w=$(groff -man -ww -z "$m" 2>&1)
	[ -z "$w" ] || fail "groff $m warns: $w"
	MANWIDTH=80 man -l "$m" 2>/dev/null | grep -q "EXIT STATUS" || fail "$m has no EXIT STATUS section"
done
ok "man -l renders the three pages without warnings"
