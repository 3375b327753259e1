#!/bin/bash
# Dead code: lists the symbols the project's libraries export that no product binary holds, and fails on any
# that tests/deadcode.allow does not name. Usage: scripts/deadcode.sh DIR ALLOW
#   DIR    a build of the products only (make deadcode builds one: `make all` with -ffunction-sections
#          -fdata-sections -O0 and -Wl,--gc-sections), so a binary holds exactly what its entry points reach
#   ALLOW  lines "SYMBOL REASON" ('#' starts a comment); a line without a reason is an error
# Exports: the defined global symbols of every member of DIR/libvnoise{,-guest,-host,-bench}.a. Used: every
# symbol defined (global or local: the preload library hides its own) in a product: DIR/vnoise-*,
# DIR/libvnoise-preload.so, DIR/bench/*, DIR/tests/tools/*, DIR/tests/vm/* (never DIR/tests/unit: the unit
# suites do not make a symbol live). An unused export of member X.o that an X_priv.h of the tree declares is a
# test-only internal (STYLE.md 12), not dead. Prints "deadcode: unused: SYMBOL (ARCHIVE:MEMBER)" per other unused
# export the allowlist does not name and "deadcode: stale: SYMBOL" per allowlisted one that is used or gone;
# exit 0 when there is neither, 1 when there is either, 2 on a usage or input error.
set -u
export LC_ALL=C # sort and join agree on the order
[ $# -eq 2 ] || { echo "usage: $0 DIR ALLOW" >&2; exit 2; }
dir=$1 allow=$2
[ -f "$allow" ] || { echo "deadcode: no allowlist $allow" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd) # the source tree, for its _priv.h headers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

libs=()
for l in libvnoise.a libvnoise-guest.a libvnoise-host.a libvnoise-bench.a; do
	[ -f "$dir/$l" ] || { echo "deadcode: $dir/$l missing (run make deadcode)" >&2; exit 2; }
	libs+=("$dir/$l")
done
mapfile -t bins < <(find "$dir" -path "$dir/tests/unit" -prune -o -type f \
	\( -name 'vnoise-*' -o -name '*.so' -o -path "$dir/bench/*" -o -path "$dir/tests/tools/*" \
	-o -path "$dir/tests/vm/*" \) ! -name '*.[oad]' -print | sort)
for b in vnoise-guest vnoise-host vnoise-bench libvnoise-preload.so; do
	[ -f "$dir/$b" ] || { echo "deadcode: $dir/$b missing (run make deadcode)" >&2; exit 2; }
done

# exports: "SYMBOL ARCHIVE:MEMBER", one per defined global symbol (nm -A prefixes "DIR/ARCHIVE:MEMBER:")
nm -A -g --defined-only "${libs[@]}" |
	sed -nE 's|^(.*/)?([^/]*):[0-9a-f]* +[A-Za-z] +([^ ]+)$|\3 \2|p' | sort -u >"$tmp/exports"
[ -s "$tmp/exports" ] || { echo "deadcode: no symbols in ${libs[*]}" >&2; exit 2; }
for b in "${bins[@]}"; do nm --defined-only "$b"; done | awk 'NF >= 3 { print $3 }' | sort -u >"$tmp/used"
[ -s "$tmp/used" ] || { echo "deadcode: no symbols in the products under $dir" >&2; exit 2; }

if ! awk '!/^[[:space:]]*(#|$)/ && NF < 2 { print FILENAME ":" FNR ": no reason: " $0; bad = 1 }
	END { exit bad }' "$allow" >&2; then
	exit 2
fi
awk '!/^[[:space:]]*(#|$)/ { print $1 }' "$allow" | sort -u >"$tmp/allow"

# Test-only internals are not dead: a symbol of member X.o declared in an X_priv.h of the tree (STYLE.md 12).
join -v1 "$tmp/exports" "$tmp/used" | while read -r sym member; do
	m=${member##*:}
	m=${m##*/}
	mapfile -t priv < <(find "$root/guest" "$root/host" "$root/shared" "$root/bench" -name "${m%.o}_priv.h")
	if [ ${#priv[@]} -gt 0 ] && grep -qw -- "$sym" "${priv[@]}"; then
		echo "$sym $member" >>"$tmp/priv"
	else
		echo "$sym $member"
	fi
done >"$tmp/dead"
touch "$tmp/priv"
rc=0
join -v1 "$tmp/dead" "$tmp/allow" | while read -r sym member; do
	m=${member##*:}
	echo "deadcode: unused: $sym ($member): no product uses it; remove it, or declare it in ${m%.o}_priv.h" \
		"if only tests need it"
done | tee "$tmp/unused"
[ -s "$tmp/unused" ] && rc=1
cut -d' ' -f1 "$tmp/dead" | sort -u | join -v1 "$tmp/allow" - | while read -r sym; do
	echo "deadcode: stale: $sym: in $allow but used or gone; remove its line"
done | tee "$tmp/stale"
[ -s "$tmp/stale" ] && rc=1
echo "deadcode: $(wc -l <"$tmp/exports") exports; unused by the products: $(wc -l <"$tmp/priv") test-only" \
	"(in a _priv.h), $(wc -l <"$tmp/dead") others: $(wc -l <"$tmp/allow") allowlisted," \
	"$(wc -l <"$tmp/unused") not; $(wc -l <"$tmp/stale") stale allowlist lines"
exit $rc
