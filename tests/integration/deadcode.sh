#!/bin/bash
# make deadcode: it passes on the tree, and in a scratch copy of the tree (the deadcode build copied along,
# so only what a change touches is rebuilt) it fails and names a new exported function that no product
# calls, while a test-only one declared in the module's _priv.h passes. The allowlist's own rules: a line
# without a reason is an input error (exit 2), an allowlisted symbol that is used is stale (exit 1). No root.
. "$(dirname "$0")/lib.bash"
require_tools nm make
DC=build-deadcode

make -s -j2 -C "$ROOT" deadcode >"$TMP/tree.log" 2>&1 || fail "make deadcode fails on the tree: $(tail -20 "$TMP/tree.log")"
grep -q '^deadcode: .* 0 not; 0 stale' "$TMP/tree.log" || fail "unexpected summary: $(tail -3 "$TMP/tree.log")"
ok "tree: $(tail -1 "$TMP/tree.log")"

# the allowlist's rules, on the tree's deadcode build
sym=$(awk '!/^[[:space:]]*(#|$)/ { print $1; exit }' "$ROOT/tests/deadcode.allow")
if [ -n "$sym" ]; then
	echo "$sym" >"$TMP/noreason.allow"
	"$ROOT/scripts/deadcode.sh" "$ROOT/$DC" "$TMP/noreason.allow" >"$TMP/nr.log" 2>&1
	rc=$?
	[ "$rc" -eq 2 ] && grep -q 'no reason' "$TMP/nr.log" || fail "a line without a reason: exit $rc: $(cat "$TMP/nr.log")"
fi
{ cat "$ROOT/tests/deadcode.allow"; echo "log_err used by every binary"; } >"$TMP/stale.allow"
"$ROOT/scripts/deadcode.sh" "$ROOT/$DC" "$TMP/stale.allow" >"$TMP/st.log" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q '^deadcode: stale: log_err' "$TMP/st.log" ||
	fail "an allowlisted used symbol: exit $rc: $(cat "$TMP/st.log")"
ok "allowlist: a line without a reason is refused, a used symbol is stale"

# a scratch copy with two new exported functions in shared/util/log.c (a member every binary links)
S=$TMP/tree
mkdir -p "$S"
tar -C "$ROOT" --exclude='./build*' --exclude=./.git --exclude=./.cache -cf - . | tar -xf - -C "$S" || fail "cannot copy the tree"
cp -a "$ROOT/$DC" "$S/$DC" || fail "cannot copy $DC"
cat >>"$S/shared/util/log.c" <<'C'

int deadcode_probe_unused(int x)
{
	return x + 1;
}

int deadcode_probe_testonly(int x)
{
	return x + 2;
}
C
cat >"$S/shared/util/log_priv.h" <<'C'
int deadcode_probe_testonly(int x);
C
make -s -j2 -C "$S" deadcode >"$TMP/probe.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] || fail "make deadcode passed with an unused export: $(tail -5 "$TMP/probe.log")"
grep -q '^deadcode: unused: deadcode_probe_unused (libvnoise.a:log.o)' "$TMP/probe.log" ||
	fail "the unused export is not named: $(tail -10 "$TMP/probe.log")"
! grep -q 'deadcode: unused: deadcode_probe_testonly' "$TMP/probe.log" ||
	fail "a function declared in log_priv.h is reported: $(grep probe "$TMP/probe.log")"
[ "$(grep -c '^deadcode: unused:' "$TMP/probe.log")" -eq 1 ] ||
	fail "more than the probe is reported: $(grep '^deadcode: unused:' "$TMP/probe.log")"
ok "scratch copy: make deadcode exits $rc naming deadcode_probe_unused; the _priv.h one passes"
