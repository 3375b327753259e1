#!/bin/bash
# The region file of a real domain (libvirtd, QEMU TCG), under `vnoise-host serve --json` (no --guest):
#   - owned by another user (nobody; as if created before the domain started): refused, one line however
#     long it runs, the domain's "region" key says refused and why, counted; nothing published into it;
#   - truncated to 0 under a running serve: serve lives, says the channel is lost (one line, counted), and
#     once the file has its size back maps it again and publishes again.
# Run only under `flock /tmp/vnoise-vm.lock`.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"
id nobody >/dev/null 2>&1 || skip "no user nobody"

vm_setup || fail "vm_setup"
vm_start --pin0 0 --pin 1:1 || fail "vm_start"
size=$(stat -c %s "$VM_SHM")
[ "$(stat -c %u "$VM_SHM")" = 0 ] || fail "the region is not root's to begin with: $(stat -c '%U %a' "$VM_SHM")"
d='.domains[0]'

# --- another user's file: refused -------------------------------------------------------------------------
chown nobody "$VM_SHM" || fail "chown"
"$VH" serve --json -D "$VM_NAME" -p 500ms -d 4s >"$TMP/r.json" 2>"$TMP/r.err" ||
	fail "serve exited $?: $(tail -3 "$TMP/r.err")"
chown root "$VM_SHM" || fail "chown back"
n=$(grep -c "refused: owner uid $(id -u nobody), not root" "$TMP/r.err")
[ "$n" = 1 ] || fail "$n refusal lines, want 1: $(cat "$TMP/r.err")"
last=$(tail -1 "$TMP/r.json")
jq -e "$d.region.state == \"refused\" and $d.region.refused == 1 and ($d.region.why | startswith(\"owner uid\")) and
	$d.dtl.state == \"refused\" and $d.dtl.published == 0" <<<"$last" >/dev/null ||
	fail "refusal not shown: $(jq -c "$d | {dtl, region}" <<<"$last")"
! dd if="$VM_SHM" bs=1 skip=$((size / 2)) count=8 2>/dev/null | grep -q VNOISDTL ||
	fail "the dispatch trace log was published into the refused file"
ok "refused: $(grep -o 'refused: .*' "$TMP/r.err" | head -c 120); $(jq -c "$d.region" <<<"$last")"

# --- truncated under a running serve: lost, then mapped again -----------------------------------------------
"$VH" serve --json -D "$VM_NAME" -p 500ms -d 14s >"$TMP/t.json" 2>"$TMP/t.err" &
SV=$!
PIDS+=("$SV")
for _ in $(seq 40); do
	[ "$(tail -1 "$TMP/t.json" 2>/dev/null | jq -r "$d.dtl.state" 2>/dev/null)" = on ] && break
	sleep 0.25
done
[ "$(tail -1 "$TMP/t.json" | jq -r "$d.dtl.state")" = on ] || fail "not publishing: $(tail -3 "$TMP/t.err")"
truncate -s 0 "$VM_SHM" || fail "truncate"
sleep 3
kill -0 "$SV" 2>/dev/null || fail "serve died after the truncation: $(tail -3 "$TMP/t.err")"
jq -e "$d.region.state == \"lost\" and $d.region.lost == 1 and $d.dtl.state == \"lost\"" \
	<<<"$(tail -1 "$TMP/t.json")" >/dev/null || fail "not lost: $(tail -1 "$TMP/t.json" | jq -c "$d.region")"
ok "truncated: serve alive; $(tail -1 "$TMP/t.json" | jq -c "$d.region")"
truncate -s "$size" "$VM_SHM" || fail "truncate back"
wait "$SV"
rc=$?
[ "$rc" = 0 ] || fail "serve exited $rc: $(tail -3 "$TMP/t.err")"
[ "$(grep -c 'shrank to 0 bytes under the mapping' "$TMP/t.err")" = 1 ] || fail "want one lost line: $(cat "$TMP/t.err")"
grep -q 'whole and valid again' "$TMP/t.err" || fail "not mapped again: $(tail -3 "$TMP/t.err")"
last=$(tail -1 "$TMP/t.json")
jq -e "$d.region.state == \"mapped\" and $d.region.lost == 1 and $d.dtl.state == \"on\"" <<<"$last" >/dev/null ||
	fail "not back: $(jq -c "$d | {dtl, region}" <<<"$last")"
ok "file back: mapped and publishing again; $(jq -c "$d | {dtl, region}" <<<"$last")"
exit 0
