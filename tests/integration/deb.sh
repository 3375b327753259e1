#!/bin/bash
# The Debian packages as a user gets them: `make deb` (a build in build-deb/ is reused when its sources hash as
# the working tree's: make -s deb-hash; VNOISE_DEB_REBUILD=1 forces a build) gives vnoise-host, vnoise-guest and
# vnoise-mpi; lintian reports no error; the control data (versions, dependencies, conffiles, services not
# enabled) is right; each package extracted with dpkg -x into a scratch root holds its files, its binaries
# print the tree's VERSION and vnoise-guest measures from there; the installed programs find each other
# (vnoise-guest mpi the preload library in ../lib/vnoise, vnoise-bench sweep vnoise-guest in ../sbin).
. "$(dirname "$0")/lib.bash"
cd "$ROOT" || exit 1
command -v dpkg >/dev/null || skip "not a Debian system (no dpkg): the packages cannot be built"
[ "$(dpkg --print-architecture)" = amd64 ] || skip "the packages are for amd64, this is $(dpkg --print-architecture)"
require_tools dpkg-buildpackage dpkg-deb dh lintian readelf groff
ver=$(head -1 VERSION)
deb=$ROOT/build-deb

if [ -z "${VNOISE_DEB_REBUILD:-}" ] && [ -f "$deb/source.sha256" ] && ls "$deb"/*.deb >/dev/null 2>&1 &&
	[ "$(make -s --no-print-directory deb-hash)" = "$(cat "$deb/source.sha256")" ]; then
	ok "make deb: reusing build-deb/ (built from these sources)"
else
	start=$(date +%s)
	make -s --no-print-directory deb >"$TMP/deb.log" 2>&1 || fail "make deb: $(tail -40 "$TMP/deb.log")"
	ok "make deb: built in $(($(date +%s) - start)) s"
fi
host=$deb/vnoise-host_${ver}_amd64.deb guest=$deb/vnoise-guest_${ver}_amd64.deb mpi=$deb/vnoise-mpi_${ver}_amd64.deb
for f in "$host" "$guest" "$mpi"; do
	[ -f "$f" ] || fail "make deb did not build $f: $(ls "$deb")"
	[ "$(dpkg-deb -f "$f" Version)" = "$ver" ] || fail "$f: version $(dpkg-deb -f "$f" Version), VERSION is $ver"
done

lintian -I "$deb"/*.changes >"$TMP/lintian" 2>&1
rc=$?
grep -q '^E:' "$TMP/lintian" && fail "lintian errors: $(grep '^E:' "$TMP/lintian")"
[ "$rc" -eq 0 ] || fail "lintian exited $rc: $(tail -5 "$TMP/lintian")"
ok "lintian: no error ($(grep -c '^W:' "$TMP/lintian") warnings, $(grep -c '^I:' "$TMP/lintian") notes)"

# Control data: the guest package is static and needs nothing; the host links libvirt; the MPI tools go with
# their vnoise-guest. /etc/default files are conffiles; the services are not enabled by the package.
dep_g=$(dpkg-deb -f "$guest" Depends)
case "$dep_g" in *libvirt* | *libbpf* | *libc6*) fail "vnoise-guest depends on shared libraries: $dep_g" ;; esac
[ -n "$(dpkg-deb -f "$guest" Built-Using)" ] || fail "vnoise-guest (static) has no Built-Using"
dep_h=$(dpkg-deb -f "$host" Depends)
echo "$dep_h" | grep -q 'libvirt0' || fail "vnoise-host does not depend on libvirt0: $dep_h"
dep_m=$(dpkg-deb -f "$mpi" Depends)
echo "$dep_m" | grep -q "vnoise-guest (= $ver)" || fail "vnoise-mpi does not depend on vnoise-guest (= $ver): $dep_m"
dpkg-deb -e "$host" "$TMP/ctl-host"
dpkg-deb -e "$guest" "$TMP/ctl-guest"
grep -qx /etc/default/vnoise-host "$TMP/ctl-host/conffiles" || fail "vnoise-host: /etc/default/vnoise-host not a conffile"
grep -qx /etc/default/vnoise-guest-agent "$TMP/ctl-guest/conffiles" ||
	fail "vnoise-guest: /etc/default/vnoise-guest-agent not a conffile"
# --no-enable: the postinst enables the unit only when the admin had it enabled (a package reinstalled)
grep -q "deb-systemd-helper debian-installed 'vnoise-host.service'" "$TMP/ctl-host/postinst" ||
	fail "vnoise-host's postinst enables vnoise-host.service: $(cat "$TMP/ctl-host/postinst")"
ok "dependencies: vnoise-guest [${dep_g:-none}], vnoise-host [$dep_h], vnoise-mpi [$dep_m]; conffiles"

# Each package's files, extracted alone and together.
want() {
	case $1 in
	host) echo usr/sbin/vnoise-host usr/share/man/man8/vnoise-host.8.gz lib/systemd/system/vnoise-host.service \
		etc/default/vnoise-host usr/share/doc/vnoise-host/copyright ;;
	guest) echo usr/sbin/vnoise-guest usr/share/man/man8/vnoise-guest.8.gz \
		lib/systemd/system/vnoise-guest-agent.service lib/udev/rules.d/60-vnoise-guest-agent.rules \
		etc/default/vnoise-guest-agent usr/share/doc/vnoise-guest/copyright ;;
	mpi) echo usr/bin/vnoise-bench usr/lib/vnoise/libvnoise-preload.so usr/share/man/man1/vnoise-bench.1.gz \
		usr/share/doc/vnoise-mpi/copyright ;;
	esac
}
root=$TMP/root
for p in host guest mpi; do
	dpkg -x "${!p}" "$TMP/only-$p"
	dpkg -x "${!p}" "$root"
	for f in $(want $p); do [ -f "$TMP/only-$p/$f" ] || fail "vnoise-$p has no /$f"; done
done
grep -q '^ExecStart=/usr/sbin/vnoise-host ' "$root/lib/systemd/system/vnoise-host.service" ||
	fail "vnoise-host.service does not run /usr/sbin/vnoise-host"
grep -q '^ExecStart=/usr/sbin/vnoise-guest agent' "$root/lib/systemd/system/vnoise-guest-agent.service" ||
	fail "vnoise-guest-agent.service does not run /usr/sbin/vnoise-guest agent"
grep -q 'org.vnoise.0' "$root/lib/udev/rules.d/60-vnoise-guest-agent.rules" || fail "udev rule without org.vnoise.0"
readelf -l "$root/usr/sbin/vnoise-guest" | grep -q INTERP && fail "the packaged vnoise-guest is not static"
for m in usr/share/man/man8/vnoise-guest.8.gz usr/share/man/man8/vnoise-host.8.gz usr/share/man/man1/vnoise-bench.1.gz; do
	w=$(zcat "$root/$m" | groff -man -ww -z 2>&1)
	[ -z "$w" ] || fail "/$m: groff warns: $w"
done
ok "files: $(find "$root" -type f | wc -l) in the three packages, each where it belongs; static vnoise-guest"

# The binaries from the scratch root: the version, then a short measurement.
for b in usr/sbin/vnoise-guest usr/sbin/vnoise-host usr/bin/vnoise-bench; do
	out=$("$root/$b" --version 2>&1) || fail "/$b --version: $out"
	echo "$out" | grep -q "^$(basename "$b") $ver" || fail "/$b --version: '$out', want $(basename "$b") $ver"
done
cpu=$(test_cpu)
"$root/usr/sbin/vnoise-guest" measure -c "$cpu" -d 1s --json -q >"$TMP/measure.json" 2>"$TMP/measure.err" ||
	fail "extracted vnoise-guest measure: $(cat "$TMP/measure.err")"
jq -e --arg v "$ver" '(.version | startswith($v)) and .cpus[0].samples > 0' "$TMP/measure.json" >/dev/null ||
	fail "extracted vnoise-guest measure: $(head -c 400 "$TMP/measure.json")"
ok "the extracted binaries print $ver; vnoise-guest measure -c $cpu -d 1s: $(jq '.cpus[0].samples' \
	"$TMP/measure.json") samples, $(jq -r '.kernel_helper' "$TMP/measure.json") helper"

# Installed paths: vnoise-guest (sbin/) finds the preload library in ../lib/vnoise, vnoise-bench (bin/) finds
# vnoise-guest in ../sbin; with only vnoise-guest (or only vnoise-mpi) installed, each says what it misses.
# The job's stdout reaches vnoise-guest mpi's stderr (its stdout is the report).
# shellcheck disable=SC2016 # $LD_PRELOAD is the child's
pre=$(cd "$TMP" && env -u VNOISE_PRELOAD "$root/usr/sbin/vnoise-guest" mpi -- sh -c 'echo "PRELOAD=$LD_PRELOAD"' \
	2>&1 >/dev/null | sed -n 's/^PRELOAD=//p')
[ "$(readlink -f "${pre%% *}")" = "$root/usr/lib/vnoise/libvnoise-preload.so" ] ||
	fail "vnoise-guest mpi from /usr/sbin preloads '$pre', not /usr/lib/vnoise/libvnoise-preload.so"
(cd "$TMP" && env -u VNOISE_PRELOAD "$TMP/only-guest/usr/sbin/vnoise-guest" mpi -- true) >/dev/null 2>"$TMP/mpi.err" &&
	fail "vnoise-guest mpi without vnoise-mpi ran"
grep -q "libvnoise-preload.so not found" "$TMP/mpi.err" || fail "vnoise-guest mpi without the library: $(cat "$TMP/mpi.err")"
(cd "$TMP" && env -u VNOISE_GUEST "$root/usr/bin/vnoise-bench" sweep --mpirun false --levels 0 -q) 2>"$TMP/sweep.err"
grep -q "VNOISE_GUEST" "$TMP/sweep.err" && fail "vnoise-bench sweep from /usr/bin: $(cat "$TMP/sweep.err")"
(cd "$TMP" && env -u VNOISE_GUEST "$TMP/only-mpi/usr/bin/vnoise-bench" sweep --mpirun false --levels 0 -q) 2>"$TMP/sweep.err"
grep -q "no vnoise-guest beside .* or in ../sbin" "$TMP/sweep.err" ||
	fail "vnoise-bench sweep without vnoise-guest: $(cat "$TMP/sweep.err")"
ok "installed paths: vnoise-guest mpi preloads ../lib/vnoise/libvnoise-preload.so, vnoise-bench finds ../sbin/vnoise-guest"
