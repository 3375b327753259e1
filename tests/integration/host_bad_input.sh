#!/bin/bash
# vnoise-host bad input: an unknown domain, libvirt unreachable and no permission each
# give one clear line on stderr and their own exit code (7, 6, 4); invalid command lines give 2; damaged,
# truncated and foreign record files give 5 after printing what could be read. Against a real libvirtd.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_tools setpriv
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"

# command lines (no libvirt needed)
expect_err 2 "unknown command 'bogus' (want top, record, report, list, serve, collect, query, agent, enable or disable;" "$VH" bogus
expect_err 2 "--period" "$VH" top --period 0
expect_err 2 "--duration" "$VH" record -o "$TMP/x" --duration -1
# Overflow is named as such; combined units are taken, largest first
expect_err 2 "invalid --duration '99999999999999999999': out of range" "$VH" top -d 99999999999999999999
expect_err 2 "out of range" "$VH" collect -k "$TMP/none.key" -d 99999999999999999999
expect_err 2 "invalid --duration '30m1h': want a time such as" "$VH" record -o "$TMP/x" -d 30m1h
expect_err 2 "invalid --period '0s0ms'" "$VH" top -d 1h2m -p 0s0ms
expect_err 2 "needs -o FILE" "$VH" record
expect_err 2 "report needs a FILE" "$VH" report
expect_err 2 "do not apply" "$VH" report "$TMP/x" --domain a
expect_err 2 "unknown option" "$VH" top --bogus
expect_err 2 "needs a value" "$VH" top --domain

# libvirt unreachable: a socket nobody listens on
expect_err 6 "libvirt unreachable" "$VH" top --connect "qemu+unix:///system?socket=$TMP/none.sock" -d 1s
expect_err 6 "libvirt unreachable" "$VH" list --connect "qemu+unix:///system?socket=$TMP/none.sock"

vm_setup || fail "vm_setup"
expect_err 7 "domain 'no-such-domain-$$' not found" "$VH" top -D "no-such-domain-$$" -d 1s
expect_err 7 "not found" "$VH" record -D "no-such-domain-$$" -d 1s -o "$TMP/nd.rec"
[ ! -e "$TMP/nd.rec" ] || fail "record created its file although the domain does not exist"
# no permission: not root (libvirtd refuses us; host tracing would need root too)
expect_err 4 "no permission" setpriv --reuid=nobody --regid=nogroup --clear-groups "$VH" list
expect_err 4 "no permission" setpriv --reuid=nobody --regid=nogroup --clear-groups "$VH" top -d 1s
# a file that cannot be written
expect_err 1 "cannot create" "$VH" record -d 1s -o /proc/no/such/file

# record files: a good one, then damaged, truncated and foreign ones
"$VH" record -p 200ms -d 1.2s -o "$TMP/good.rec" -q || fail "record of an idle host failed"
"$VH" report "$TMP/good.rec" --json | jq -e '.schema == "vnoise.host/1"' >/dev/null || fail "good file"
size=$(stat -c %s "$TMP/good.rec")
head -c $((size - 40)) "$TMP/good.rec" >"$TMP/trunc.rec"
"$VH" report "$TMP/trunc.rec" --json >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 5 ] || fail "truncated file: exit $rc, want 5"
jq -e '.schema == "vnoise.host/1"' "$TMP/out" >/dev/null || fail "truncated file: nothing reported"
ok "truncated file: exit 5, $(cat "$TMP/err")"
cp "$TMP/good.rec" "$TMP/bad.rec"
printf 'XXXXXXXX' | dd of="$TMP/bad.rec" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$VH" report "$TMP/bad.rec" >/dev/null 2>"$TMP/err"
rc=$?
[ "$rc" -eq 5 ] || fail "damaged file: exit $rc, want 5"
ok "damaged file: exit 5, $(head -1 "$TMP/err")"
head -c 4096 /dev/urandom >"$TMP/random.rec"
expect_err 5 "not a vnoise record file" "$VH" report "$TMP/random.rec"
"$VG" record --cpus 0 --duration 1s --helper proc -o "$TMP/guest.rec" -q >/dev/null 2>&1 ||
	fail "vnoise-guest record failed"
expect_err 5 "a vnoise-guest record file (a guest's view): read it with 'vnoise-guest report $TMP/guest.rec'" \
	"$VH" report "$TMP/guest.rec"
# and the other way round: vnoise-guest names the tool of a host record
expect_err 5 "a vnoise-host record file (the host's view): read it with 'vnoise-host report $TMP/good.rec'" \
	"$VG" report "$TMP/good.rec"
expect_err 1 "cannot read" "$VH" report "$TMP/does-not-exist.rec"
# --gaps: a host file without --guest has no matched gaps (exit 4, one line); not with --json
expect_err 4 "no matched guest gaps: recorded without --guest" "$VH" report "$TMP/good.rec" --gaps
expect_err 2 "--gaps and --json: choose one" "$VH" report "$TMP/good.rec" --gaps --json
expect_err 2 "--gaps is for report only" "$VH" record -d 1s -o "$TMP/x.rec" --gaps

# signals end a run through the normal exit path (file closed with its END chunk); nothing stays loaded
# ids of the BPF programs process $1 holds; still_loaded IDS...: how many of them still exist
# (from the fds' fdinfo: bpftool's pid listing needs BPF iterators, absent on some kernels)
progs_of() { grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u; }
still_loaded() {
	local id n=0
	for id in "$@"; do bpftool prog show id "$id" >/dev/null 2>&1 && n=$((n + 1)); done
	echo "$n"
}
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
for sig in INT TERM HUP KILL; do
	"$VH" record -p 200ms -o "$TMP/sig.rec" -q >/dev/null 2>&1 &
	pid=$!
	PIDS+=("$pid")
	sleep 1.5
	mapfile -t ids < <(progs_of "$pid")
	[ "${#ids[@]}" -gt 0 ] || fail "no dispatch programs loaded during record"
	kill -s "$sig" "$pid"
	wait "$pid"
	rc=$?
	if [ "$sig" = KILL ]; then
		"$VH" report "$TMP/sig.rec" >/dev/null 2>&1
		[ $? -eq 5 ] || fail "SIGKILLed record: report should say truncated (exit 5)"
	else
		[ "$rc" -eq 0 ] || fail "record ended by SIG$sig exited $rc"
		"$VH" report "$TMP/sig.rec" >/dev/null || fail "record ended by SIG$sig left an unclosed file"
	fi
	sleep 0.3
	[ "$(still_loaded "${ids[@]}")" -eq 0 ] || fail "dispatch programs still loaded after SIG$sig"
	[ "$(sysctl -n kernel.bpf_stats_enabled)" = "$stats_before" ] || fail "bpf_stats_enabled changed"
	ok "SIG$sig: ${#ids[@]} programs gone after exit; file closed (or truncated after KILL)"
done
exit 0
