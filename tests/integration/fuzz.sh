#!/bin/bash
# The record reader and merge engine, the collector's engine, the QGA protocol (agent dispatcher, host reply parser) and the
# shared-memory reader, the dispatch trace log reader, the UDP report datagram and the interval pipeline, the host's matcher
# under structured guest and host streams, and `vnoise-host report` on host record files, under libFuzzer (ASan+UBSan) for a
# short, bounded time: hostile input must never crash them, and every attributed gap's parts must add up (the target aborts otherwise).
. "$(dirname "$0")/lib.bash"
command -v clang >/dev/null || fail "clang missing (make deps)"
secs=${FUZZ_SECONDS:-20}
qsecs=$(((secs + 1) / 2))
fsecs=$(((secs + 3) / 4))

# every target at once: their shared library is compiled once, on both CPUs
targets=(fuzz_recfile fuzz_qga fuzz_shm fuzz_dtl fuzz_datagram fuzz_collect fuzz_match fuzz_hostrec)
make -s -j2 -C "$ROOT" "${targets[@]/#/build-fuzz/}" >"$TMP/build.log" 2>&1 ||
	fail "cannot build the fuzz targets: $(tail -5 "$TMP/build.log")"

# fuzz TARGET SECONDS CORPUS [libFuzzer options...]: run for SECONDS, fail on any crash
fuzz() {
	local t=$1 s=$2 corpus=$3 rc runs
	shift 3
	mkdir -p "$corpus"
	"$ROOT/build-fuzz/$t" -max_total_time="$s" -print_final_stats=1 "$@" "$corpus" >"$TMP/$t.log" 2>&1
	rc=$?
	runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$TMP/$t.log" | grep -o '[0-9]*$')
	[ "$rc" -eq 0 ] || fail "$t found a crash (exit $rc): $(grep -m5 -E 'ERROR|SUMMARY|abort' "$TMP/$t.log")"
	ok "$t: ${runs:-?} inputs in ${s}s, no crash"
}

# Record files: a corpus of real recordings made by vnoise-guest
"$ROOT/tests/fuzz/make_corpus.sh" "$TMP/corpus" "$VG"
cd "$TMP" || exit 1
fuzz fuzz_recfile "$secs" "$TMP/corpus" -max_len=65536

# QGA: framer + dispatcher fed in random chunks, hostile replies through the host parser
mkdir -p "$TMP/corpus_qga"
printf '{"execute":"guest-sync","arguments":{"id":1}}' >"$TMP/corpus_qga/sync"
printf '\377{"execute":"guest-info"}{"return":{}}' >"$TMP/corpus_qga/info"
fuzz fuzz_qga "$qsecs" "$TMP/corpus_qga" -max_len=70000 -dict="$ROOT/tests/fuzz/qga.dict"

# Shared-memory reader: region images, scripted producer/damage programs, XOR-damaged valid regions
fuzz fuzz_shm "$qsecs" "$TMP/corpus_shm" -max_len=20000

# Dispatch trace log reader (guest side): host area images, scripted host/damage programs, XOR-damaged areas
fuzz fuzz_dtl "$qsecs" "$TMP/corpus_dtl" -max_len=20000

# UDP report datagrams (raw, and re-sealed so the field checks are reached) and a hostile interval pipeline
fuzz fuzz_datagram "$qsecs" "$TMP/corpus_datagram" -max_len=40000

# The collector's engine under a program of raw datagrams, authentic ones from a malicious node, ticks
fuzz fuzz_collect "$qsecs" "$TMP/corpus_collect" -max_len=20000

# The matcher and the guest-only view under a program of valid, adversarial guest and host streams and horizons:
# the budget, every gap's split and the counters are checked after every operation (the target aborts otherwise)
fuzz fuzz_match "$fsecs" "$TMP/corpus_match" -max_len=20000

# vnoise-host report, every view, on host record files: raw (the reader) and sealed chunk programs (the views)
"$ROOT/tests/fuzz/make_corpus.sh" --host "$TMP/corpus_hostrec" "$ROOT/build-fuzz/fuzz_hostrec" ||
	fail "cannot make the host record seeds"
fuzz fuzz_hostrec "$fsecs" "$TMP/corpus_hostrec" -max_len=65536
