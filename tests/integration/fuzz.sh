#!/bin/bash
# The record reader and merge engine, the QGA protocol (agent dispatcher, host reply parser) and the
# shared-memory reader, the UDP report datagram and the interval pipeline, under libFuzzer (ASan+UBSan) for a
# short, bounded time: hostile input must never crash them, and every attributed gap's parts must add up (the target aborts otherwise).
. "$(dirname "$0")/lib.bash"
command -v clang >/dev/null || fail "clang missing (make deps)"
secs=${FUZZ_SECONDS:-20}
make -s -C "$ROOT" build-fuzz/fuzz_report >"$TMP/build.log" 2>&1 || fail "cannot build the fuzz target: $(tail -5 "$TMP/build.log")"
"$ROOT/tests/fuzz/make_corpus.sh" "$TMP/corpus" "$VG"
cd "$TMP" || exit 1
"$ROOT/build-fuzz/fuzz_report" -max_total_time="$secs" -max_len=65536 -print_final_stats=1 "$TMP/corpus" \
	>"$TMP/fuzz.log" 2>&1
rc=$?
runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$TMP/fuzz.log" | grep -o '[0-9]*$')
[ "$rc" -eq 0 ] || fail "fuzzer found a crash (exit $rc): $(grep -m5 -E 'ERROR|SUMMARY|abort' "$TMP/fuzz.log")"
ok "fuzz_report: ${runs:-?} inputs in ${secs}s, no crash"

# QGA: framer + dispatcher fed in random chunks, hostile replies through the host parser
make -s -C "$ROOT" build-fuzz/fuzz_qga >"$TMP/build.log" 2>&1 || fail "cannot build fuzz_qga: $(tail -5 "$TMP/build.log")"
mkdir -p "$TMP/corpus_qga"
printf '{"execute":"guest-sync","arguments":{"id":1}}' >"$TMP/corpus_qga/sync"
printf '\377{"execute":"guest-info"}{"return":{}}' >"$TMP/corpus_qga/info"
qsecs=$(((secs + 1) / 2))
"$ROOT/build-fuzz/fuzz_qga" -max_total_time="$qsecs" -max_len=70000 -dict="$ROOT/tests/fuzz/qga.dict" \
	-print_final_stats=1 "$TMP/corpus_qga" >"$TMP/fuzz_qga.log" 2>&1
rc=$?
runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$TMP/fuzz_qga.log" | grep -o '[0-9]*$')
[ "$rc" -eq 0 ] || fail "fuzz_qga found a crash (exit $rc): $(grep -m5 -E 'ERROR|SUMMARY|abort' "$TMP/fuzz_qga.log")"
ok "fuzz_qga: ${runs:-?} inputs in ${qsecs}s, no crash"

# Shared-memory reader: region images, scripted producer/damage programs, XOR-damaged valid regions
make -s -C "$ROOT" build-fuzz/fuzz_shm >"$TMP/build.log" 2>&1 || fail "cannot build fuzz_shm: $(tail -5 "$TMP/build.log")"
mkdir -p "$TMP/corpus_shm"
"$ROOT/build-fuzz/fuzz_shm" -max_total_time="$qsecs" -max_len=20000 -print_final_stats=1 "$TMP/corpus_shm" \
	>"$TMP/fuzz_shm.log" 2>&1
rc=$?
runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$TMP/fuzz_shm.log" | grep -o '[0-9]*$')
[ "$rc" -eq 0 ] || fail "fuzz_shm found a crash (exit $rc): $(grep -m5 -E 'ERROR|SUMMARY|abort' "$TMP/fuzz_shm.log")"
ok "fuzz_shm: ${runs:-?} inputs in ${qsecs}s, no crash"

# UDP report datagrams (raw, and re-sealed so the field checks are reached) and a hostile interval pipeline
make -s -C "$ROOT" build-fuzz/fuzz_vnreport >"$TMP/build.log" 2>&1 || fail "cannot build fuzz_vnreport: $(tail -5 "$TMP/build.log")"
mkdir -p "$TMP/corpus_vnreport"
"$ROOT/build-fuzz/fuzz_vnreport" -max_total_time="$qsecs" -max_len=40000 -print_final_stats=1 "$TMP/corpus_vnreport" \
	>"$TMP/fuzz_vnreport.log" 2>&1
rc=$?
runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$TMP/fuzz_vnreport.log" | grep -o '[0-9]*$')
[ "$rc" -eq 0 ] || fail "fuzz_vnreport found a crash (exit $rc): $(grep -m5 -E 'ERROR|SUMMARY|abort' "$TMP/fuzz_vnreport.log")"
ok "fuzz_vnreport: ${runs:-?} inputs in ${qsecs}s, no crash"
