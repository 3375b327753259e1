#!/bin/bash
# vnoise-host's documents without a VM: `list --json` is one vnoise.list/1 document (schema, then
# version, uri, domains) and the text list still works; a record file carries version= and the recording
# process's thread ids, and `report --json` has "version" right after "schema"; --wide is taken by top,
# record and report. Against libvirt's built-in test driver (test:///default): no libvirtd, no root.
. "$(dirname "$0")/lib.bash"
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"
URI=test:///default
version=$(cat "$ROOT/VERSION")

"$VH" list --json --connect "$URI" >"$TMP/list.json" 2>"$TMP/list.err" ||
	fail "list --json failed: $(cat "$TMP/list.err")"
[ "$(wc -l <"$TMP/list.json")" -eq 1 ] || fail "list --json is not one document: $(cat "$TMP/list.json")"
jq -e --arg v "$version" '(keys_unsorted[0:4] == ["schema", "version", "uri", "domains"]) and
	.schema == "vnoise.list/1" and (.version | startswith($v)) and .uri == "test:///default" and
	(.domains | type == "array") and
	all(.domains[]; (.vcpus | type == "array") and (.taps | type == "array") and has("qemu_pid"))' \
	"$TMP/list.json" >/dev/null || fail "list --json: $(cat "$TMP/list.json")"
ok "list --json: $(cat "$TMP/list.json")"
"$VH" list --connect "$URI" >"$TMP/list.txt" 2>"$TMP/list.err" || fail "list failed: $(cat "$TMP/list.err")"
! grep -q '^{' "$TMP/list.txt" || fail "list without --json printed JSON"

"$VH" record --no-dispatch --connect "$URI" -p 100ms -d 350ms -o "$TMP/r.rec" -q --wide 2>"$TMP/r.err" ||
	fail "record failed: $(cat "$TMP/r.err")"
grep -aq "^version=$version" "$TMP/r.rec" || fail "the record file has no version= line"
grep -aq "^self_tids=[0-9]" "$TMP/r.rec" || fail "the record file has no self_tids= line"
"$VH" report "$TMP/r.rec" --json >"$TMP/r.json" || fail "report --json failed"
jq -e --arg v "$version" 'keys_unsorted[0:2] == ["schema", "version"] and .schema == "vnoise.host/1" and
	(.version | startswith($v))' "$TMP/r.json" >/dev/null || fail "report --json: $(head -c 300 "$TMP/r.json")"
"$VH" report "$TMP/r.rec" --wide >"$TMP/r.txt" || fail "report --wide failed"
awk 'length > 80 { bad = 1 } END { exit bad }' "$TMP/r.txt" || fail "report text over 80 columns"
"$VH" top --no-dispatch --connect "$URI" -d 150ms --wide --json >"$TMP/t.json" 2>"$TMP/t.err" ||
	fail "top --wide failed: $(cat "$TMP/t.err")"
jq -e '.schema == "vnoise.host/1" and .version != null' "$TMP/t.json" >/dev/null || fail "top --json"
ok "record/report/top: version in the file and in vnoise.host/1, --wide taken"
