#!/bin/bash
# A hostile host: tests/tools/dtlhostile writes random and adversarial dispatch trace
# log contents into a tmpfs region's host half for 6 s (bad cause, vCPU and head indices, entries out of order
# and in the future, torn entries left behind, stale and lapped slots, a header changed under its epoch, a
# horizon going back, garbage status / causes / aggregates, random bytes, 3.5 s of a frozen horizon and
# heartbeat), then publishes a clean new epoch for 2 s, while the guest reader (shared/channel/dtlreader,
# built with ASan+UBSan) syncs, polls every vCPU, reads status, causes and aggregates and answers clock
# requests every millisecond. The reader must not crash or report a sanitizer error, every round must stay
# short and its CPU and memory bounded, every kind of anomaly must be counted, and after the clean epoch it
# must read exactly the entries published, with their causes, and answer the host's clock requests.
. "$(dirname "$0")/lib.bash"
W=$BUILD/tests/tools/dtlhostile
R=$ROOT/build-san/tests/tools/dtlhostile
[ -x "$W" ] || fail "$W not built"
make -s -C "$ROOT" SANITIZE=address,undefined build-san/tests/tools/dtlhostile >"$TMP/build.log" 2>&1 ||
	fail "cannot build the ASan reader: $(tail -5 "$TMP/build.log")"
export ASAN_OPTIONS=abort_on_error=0:halt_on_error=1:detect_leaks=1:exitcode=99
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=98
REGION=/dev/shm/vnoise-dtlhostile-$$
trap 'rm -f "$REGION"; cleanup_lib' EXIT
truncate -s 1M "$REGION" || fail "cannot create $REGION"
WSECS=8
RSECS=9.5

timeout 60 "$R" read "$REGION" "$RSECS" >"$TMP/r.json" 2>"$TMP/r.err" &
rpid=$!
PIDS+=("$rpid")
sleep 0.3
timeout 60 "$W" write "$REGION" "$WSECS" "$$" >"$TMP/w.json" 2>"$TMP/w.err" || fail "the hostile writer failed: $(cat "$TMP/w.err")"
wait "$rpid"
rc=$?
cat "$TMP/w.json" "$TMP/r.json"
grep -E "ERROR: AddressSanitizer|runtime error|LeakSanitizer" "$TMP/r.err" && fail "sanitizer report"
[ "$rc" -eq 0 ] || { tail -20 "$TMP/r.err"; fail "the reader exited $rc"; }
r() { jq -r ".$1" "$TMP/r.json"; }
w() { jq -r ".$1" "$TMP/w.json"; }
[ "$(r rounds)" -ge 1000 ] || fail "only $(r rounds) reader rounds in ${RSECS}s (a hang?)"
[ "$(r max_round_us)" -le 100000 ] || fail "a reader round took $(r max_round_us) us"
cpu_cap=$(awk -v s="$RSECS" 'BEGIN { printf "%d", s * 1000 / 2 }')
[ "$(r cpu_ms)" -le "$cpu_cap" ] || fail "the reader used $(r cpu_ms) ms of CPU in ${RSECS}s"
growth=$(($(r rss_kb_end) - $(r rss_kb_1s)))
[ "$growth" -le 16384 ] || fail "the reader's RSS grew by $growth KiB"
ok "ASan+UBSan reader survived: $(r rounds) rounds, longest $(r max_round_us) us, $(r cpu_ms) ms CPU, RSS $(r rss_kb_1s) -> $(r rss_kb_end) KiB"
for c in epochs lost torn bad backwards bad_header bad_status frozen causes_gone bad_causes bad_aggs; do
	[ "$(r $c)" -ge 1 ] || fail "anomaly not counted: $c = $(r $c)"
done
[ "$(r epochs)" -ge 3 ] || fail "only $(r epochs) epochs followed"
ok "counted: $(jq -c '{epochs, lost, torn, bad, backwards, bad_header, bad_status, frozen, causes_gone, bad_causes, bad_aggs}' "$TMP/r.json")"
[ "$(w clean_put)" -ge 100 ] || fail "the clean epoch published only $(w clean_put) entries"
[ "$(r clean_bad)" -eq 0 ] || fail "$(r clean_bad) wrong entries read in the clean epoch"
[ "$(r clean_ok)" -eq "$(w clean_put)" ] || fail "clean epoch: read $(r clean_ok) of $(w clean_put) entries"
[ "$(r clean_status)" -ge 100 ] || fail "clean epoch: only $(r clean_status) valid status reads"
[ "$(w replies)" -ge 1 ] && [ "$(r replies)" -ge "$(w replies)" ] ||
	fail "clock requests not answered: host $(w requests) / $(w replies), guest $(r requests) / $(r replies)"
ok "recovered on the new epoch: $(r clean_ok) entries read exactly as published, $(w replies) of $(w requests) clock requests answered"
