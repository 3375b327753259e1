#!/bin/bash
# Kill -9 at random moments (VNOISE_SEED replays them and the cuts' places; 4 moments per
# program: at the file's birth, within its first 100 ms, then anywhere in 2 s) of
#  A. vnoise-guest record -o F and B. vnoise-host record -o F (a real libvirtd, no domain needed: the META and
#     STATS chunks, and the periods of whatever domains run): `report F` prints everything up to the last
#     whole chunk (its gap count, or the end of its run, equals what the file's whole chunks hold, read apart
#     from vnoise: tests/integration/faults.bash), says where the file was cut
#     in one line ("truncated at offset O after N chunks: ...", O and N as the file holds them), exits 5;
#     files cut at random bytes of a clean recording (a kill mid-write) the same; a new run on the same path
#     overwrites it, exits 0 and reports cleanly.
#  C. vnoise-host collect --store DB with 4 simulated nodes (killed as its store appears, then at random):
#     the store opens again (integrity_check ok), and a second collector on the same port and store reloads
#     exactly what was stored and carries on: at its end the store holds what it counted as used.
# About 35 s.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
# shellcheck source=faults.bash
. "$(dirname "$0")/faults.bash"
require_root
require_tools sqlite3 od awk
SEED=${VNOISE_SEED:-$(($(date +%s%N) / 1000 % 1000000))}
RANDOM=$SEED
echo "seed $SEED (replay: VNOISE_SEED=$SEED $0)"
cpu=$(test_cpu)
BPF=1
[ -r /sys/kernel/btf/vmlinux ] || BPF=0

# moment I: MS, the kill's delay after the file appears (0: at once, 1: < 100 ms, else < 2 s). Drawn in
# this shell, never in a subshell (bash reseeds RANDOM there): the seed replays the same moments.
moment() {
	case $1 in
	0) MS=0 ;;
	1) MS=$((RANDOM % 100)) ;;
	*) MS=$((100 + RANDOM % 1900)) ;;
	esac
}
sleep_ms() { [ "$1" -eq 0 ] || sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }')"; }

# check_cut KIND FILE WHAT: FILE (cut short) reports its whole chunks, says where it was cut, exits 5
check_cut() {
	local kind=$1 f=$2 what=$3 chunks off gaps endns ended rc want
	read -r chunks off gaps endns ended < <(walk "$f")
	[ "$ended" = 0 ] || fail "$what: the file has its END chunk: the cut came too late"
	if [ "$kind" = guest ]; then
		"$VG" report "$f" --json >"$TMP/rep.json" 2>"$TMP/rep.err"
	else
		"$VH" report "$f" --json >"$TMP/rep.json" 2>"$TMP/rep.err"
	fi
	rc=$?
	[ "$rc" -eq 5 ] || fail "$what: report exited $rc, want 5: $(cat "$TMP/rep.err")"
	want="truncated at offset $off after $chunks chunks: "
	[ "$(grep -c "$want" "$TMP/rep.err")" -eq 1 ] ||
		fail "$what: no one line '$want...' ($(stat -c %s "$f") bytes): $(cat "$TMP/rep.err")"
	if [ "$chunks" -eq 0 ]; then
		[ ! -s "$TMP/rep.json" ] || fail "$what: a report of a file without chunks"
	elif [ "$kind" = guest ]; then
		[ "$(gap_samples "$TMP/rep.json")" = "$gaps" ] ||
			fail "$what: report counted $(gap_samples "$TMP/rep.json") gaps, the whole chunks hold $gaps"
		jq -e '.partial == true' "$TMP/rep.json" >/dev/null || fail "$what: JSON not marked partial"
	elif [ "$endns" != 0 ]; then
		[ "$(jq .end_ns "$TMP/rep.json")" = "$endns" ] ||
			fail "$what: report ends at $(jq .end_ns "$TMP/rep.json"), the whole chunks at $endns"
	fi
	CUT="$chunks chunks, $off of $(stat -c %s "$f") bytes, $gaps gaps"
}

# ---------------- A and B: the recorders
# run_kill KIND I: start the recorder, kill -9 at moment I, check the file; then a clean run on the path
run_kill() {
	local kind=$1 i=$2 f=$TMP/$1.rec ms pid rc helper=proc
	[ $((i % 2)) -eq 1 ] && [ "$BPF" = 1 ] && helper=bpf
	moment "$i"
	ms=$MS
	rm -f "$f"
	if [ "$kind" = guest ]; then
		"$VG" record -o "$f" --cpus "$cpu" --helper "$helper" -q >/dev/null 2>"$TMP/rec.err" &
	else
		"$VH" record -p 100ms -o "$f" -q >/dev/null 2>"$TMP/rec.err" &
	fi
	pid=$!
	PIDS+=("$pid")
	wait_file "$f"
	sleep_ms "$ms"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	check_cut "$kind" "$f" "$kind record killed ${ms} ms after its file appeared"
	[ "$kind" = guest ] || helper=dispatch
	ok "$kind record ($helper) killed at +${ms} ms: exit 5, $CUT"
	# a new run on the same path overwrites it
	if [ "$kind" = guest ]; then
		"$VG" record -o "$f" --cpus "$cpu" --helper proc -d 500ms -q >/dev/null 2>"$TMP/rec.err"
	else
		"$VH" record -p 100ms -d 500ms -o "$f" -q >/dev/null 2>"$TMP/rec.err"
	fi
	rc=$?
	[ "$rc" -eq 0 ] || fail "$kind record on the killed run's path exited $rc: $(cat "$TMP/rec.err")"
	read -r _ off _ _ ended < <(walk "$f")
	[ "$ended" = 1 ] && [ "$off" -eq "$(stat -c %s "$f")" ] || fail "$kind record's new file is not whole"
	if [ "$kind" = guest ]; then "$VG" report "$f" >/dev/null 2>"$TMP/rep.err"; else "$VH" report "$f" >/dev/null 2>"$TMP/rep.err"; fi
	rc=$?
	[ "$rc" -eq 0 ] || fail "report of the new $kind file exited $rc: $(cat "$TMP/rep.err")"
	cp "$f" "$TMP/$kind.clean"
}

# cut_at KIND N: N cuts of the last clean file at random bytes (a kill mid-write); the seed gives the same
# places relative to the file's length (the files themselves differ from run to run)
cut_at() {
	local kind=$1 k size cut ppm
	size=$(stat -c %s "$TMP/$kind.clean")
	for ((k = 0; k < $2; k++)); do
		ppm=$(((RANDOM * 32768 + RANDOM) % 1000000))
		cut=$((64 + (size - 64) * ppm / 1000000))
		head -c "$cut" "$TMP/$kind.clean" >"$TMP/$kind.cut"
		check_cut "$kind" "$TMP/$kind.cut" "$kind file cut at byte $cut of $size"
		ok "$kind file cut at byte $cut (${ppm} ppm of $size): exit 5, $CUT"
	done
}

for i in 0 1 2 3; do
	run_kill guest "$i"
	cut_at guest 2
done
libvirt_up
for i in 0 1 2 3; do
	run_kill host "$i"
	cut_at host 2
done

# ---------------- C: the collector
KEY="$TMP/keys"
make_key "$KEY"
# nodes PORT: 4 simulated nodes of job C report to PORT for 4 s (their pids in NPIDS)
nodes() {
	local n
	NPIDS=()
	for n in 1 2 3 4; do
		"$SIM" -c "127.0.0.1:$1" -k "$KEY" -n "$n" -j C -i 400 -t 10ms -w 300 --seed "$((SEED + n))" \
			>/dev/null 2>>"$TMP/nodes.err" &
		NPIDS+=($!)
		PIDS+=($!)
	done
}
for i in 0 1 2 3; do
	DB=$TMP/c$i.db
	moment "$i"
	ms=$MS
	if [ "$i" -eq 0 ]; then # at the store's birth: killed as soon as its file exists
		"$VH" collect -k "$KEY" --listen 127.0.0.1:0 --slot 200ms --job C --store "$DB" -q 2>/dev/null &
		CPID=$!
		PIDS+=("$CPID")
		wait_file "$DB"
	else
		start_collector C$i --slot 200ms --job C --store "$DB"
		nodes "$PORT"
		sleep_ms "$ms"
	fi
	kill -9 "$CPID"
	wait "$CPID" 2>/dev/null
	sqlite_ok "$DB"
	kept=$(sqlite3 "$DB" 'SELECT count(*) FROM datagram' 2>/dev/null || echo 0)
	# a second collector on the store (on the same port, while the nodes still send) carries on
	start_collector C$i.2 --listen "127.0.0.1:${PORT:-0}" --slot 200ms --job C --store "$DB"
	[ "$i" -eq 0 ] && nodes "$PORT"
	sleep 1.2
	kill -TERM "$CPID"
	wait "$CPID" || fail "collector $i: the second collector exited $?: $(cat "$TMP/C$i.2.err")"
	# all the stored datagrams replayed, or the state snapshot and the datagrams after it (the counts below
	# check that the two give the same engine)
	grep -Eq "store $DB: ($kept datagrams replayed in|state snapshot of .* loaded)" "$TMP/C$i.2.err" ||
		fail "collector $i: the second collector did not reload the $kept stored datagrams: $(cat "$TMP/C$i.2.err")"
	sqlite_ok "$DB"
	now=$(sqlite3 "$DB" 'SELECT count(*) FROM datagram')
	used=$(jq .datagrams.ok "$TMP/C$i.2.json")
	[ "$now" = "$used" ] || fail "collector $i: the store holds $now datagrams, the second collector used $used"
	[ "$now" -gt "$kept" ] || fail "collector $i: the second collector stored nothing new ($kept before, $now after)"
	for p in "${NPIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${NPIDS[@]}"; do wait "$p" 2>/dev/null; done
	when="+$ms ms"
	[ "$i" -eq 0 ] && when="as its store appeared"
	ok "collector killed $when: integrity ok, $kept datagrams kept; a second collector reloaded them and carried on to $now"
done
