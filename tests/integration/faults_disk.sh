#!/bin/bash
# A full disk (a 16 MiB tmpfs, filled with dd) under
#  A. vnoise-guest record -o: full from the start (-d 1s), one page left for a short --duration run, full in
#     the middle of a run (it stops by itself) and full then SIGTERM: exit 4 without hanging, one error line
#     naming the file and "No space left on device" (and what was not written); the file ends after its
#     last whole chunk (the partial one is cut off), `report` gives those chunks (gap count as the file
#     holds) and exits 5; with room again the same path records and reports cleanly;
#  B. vnoise-host record -o (a real libvirtd): full from the start, full in the middle (one line, recording
#     stops there, SIGTERM ends it), the file reads up to its last whole chunk;
#  C. vnoise-host collect --store: full from the start is one line and exit 4; full while 4 simulated nodes
#     report: one warning line, the ranking and /metrics go on (vnoise_collect_store_errors_total and the
#     status line's store-failed count what is not stored), storing goes on by itself when there is room
#     again, exit 4 at the end, integrity_check ok, and no silent loss: stored + not stored = accepted.
# About 30 s.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
# shellcheck source=faults.bash
. "$(dirname "$0")/faults.bash"
require_root
require_tools sqlite3 od awk curl mountpoint dd
cpu=$(test_cpu)
NOSPC="No space left on device"
# vnoise-host record's exit code for a full disk: 4, as vnoise-guest's
HOST_FULL_RC=4

FAULTS_MNT=$TMP/full
mkdir -p "$FAULTS_MNT"
mount -t tmpfs -o size=16m,mode=0755 vnoise-faults "$FAULTS_MNT" || fail "cannot mount a tmpfs on $FAULTS_MNT"
M=$FAULTS_MNT
# fill [KEEP_KB]: the tmpfs full, but KEEP_KB (default 0) free
fill() {
	local keep=${1:-0}
	[ "$keep" -eq 0 ] || dd if=/dev/zero of="$M/spare" bs=1k count="$keep" status=none
	dd if=/dev/zero of="$M/fill" bs=64k status=none 2>/dev/null
	[ "$keep" -eq 0 ] || rm -f "$M/spare"
	[ "$(stat -f -c %a "$M")" -le $((keep / 4)) ] || fail "the tmpfs is not full: $(stat -f -c %a "$M") blocks free"
}
unfill() { rm -f "$M/fill" "$M/spare"; }
# one_error ERRFILE PATTERN: ERRFILE has exactly one "error:" line, and it matches PATTERN
one_error() {
	[ "$(grep -c 'error:' "$1")" -eq 1 ] || fail "want one error line, got: $(cat "$1")"
	grep 'error:' "$1" | grep -q -- "$2" || fail "the error line lacks '$2': $(cat "$1")"
}
# whole KIND FILE: FILE ends after its last whole chunk; its report gives them, says where it ends, exits 5
whole() {
	local kind=$1 f=$2 chunks off gaps rc prog=$VG
	[ "$kind" = guest ] || prog=$VH
	read -r chunks off gaps _ _ < <(walk "$f")
	[ "$off" -eq "$(stat -c %s "$f")" ] || fail "$f: a partial chunk was left after offset $off ($(stat -c %s "$f") bytes)"
	"$prog" report "$f" --json >"$TMP/rep.json" 2>"$TMP/rep.err"
	rc=$?
	[ "$rc" -eq 5 ] || fail "report $f exited $rc, want 5: $(cat "$TMP/rep.err")"
	grep -q "truncated at offset $off after $chunks chunks: no end marker" "$TMP/rep.err" ||
		fail "report $f does not say where it ends ($chunks chunks, $off bytes): $(cat "$TMP/rep.err")"
	if [ "$kind" = guest ] && [ "$chunks" -gt 0 ]; then
		[ "$(gap_samples "$TMP/rep.json")" = "$gaps" ] ||
			fail "report $f counted $(gap_samples "$TMP/rep.json") gaps, the file holds $gaps"
	fi
	WHOLE="$chunks whole chunks ($off bytes, $gaps gaps), report exit 5"
}

# ---------------- A: vnoise-guest record
# The kernel helper's events (a thread switch per injected spike) make each 50 ms flush larger than the page
# its file has left when the disk fills. Without BTF, the sampler's gaps only: a run may then fit there.
HELPER=bpf
[ -r /sys/kernel/btf/vmlinux ] || HELPER=proc
start_injector vnfull /dev/null --spike 20us --every 200us -P fifo:20 --duration 60s
G=$M/g.rec
REC=("$VG" record -o "$G" --cpus "$cpu" --helper "$HELPER" -q)
# the disk is full at a flush (what was not written is counted) or, when the last data fitted in the file's
# last page, at the close (only the end marker is not written)
FULL_LINE="writing '$G': $NOSPC\(; the file ends after [0-9]* whole chunks ([0-9]* bytes) and reads as not closed; [0-9]* samples, [0-9]* events and [0-9]* DTL records not written\| while closing it (every record and the STATS chunk were written before)\)$"
# full_run WHAT RC: a record that met the full disk exits 4 with one line, its file whole up to the cut (with
# the proc helper it may have written less than its file's last page held: exit 0 and a complete file)
full_run() {
	local off ended
	if [ "$2" -eq 0 ] && [ "$HELPER" = proc ]; then
		read -r _ off _ _ ended < <(walk "$G")
		[ "$ended" = 1 ] && [ "$off" -eq "$(stat -c %s "$G")" ] || fail "$1: exit 0 but its file is not whole"
		FULL="exit 0: what it wrote fitted in its file's last page (proc helper, no BTF)"
		return 0
	fi
	[ "$2" -eq 4 ] || fail "$1 exited $2, want 4: $(cat "$TMP/g.err")"
	one_error "$TMP/g.err" "$FULL_LINE"
	whole guest "$G"
	FULL="exit 4, $(grep -o "$NOSPC.*" "$TMP/g.err"); $WHOLE"
}
fill
expect_err 4 "cannot create '$G': $NOSPC" timeout 20 "${REC[@]}" -d 1s
"$VG" report "$G" >/dev/null 2>"$TMP/rep.err"
[ $? -eq 5 ] && grep -q "truncated at offset 0 after 0 chunks: an empty file" "$TMP/rep.err" ||
	fail "the file of a record that could not write its header: $(cat "$TMP/rep.err")"
unfill
ok "A: full from the start: exit 4, one line; the empty file reports as cut at offset 0"

fill 4
timeout 20 "${REC[@]}" -d 500ms >/dev/null 2>"$TMP/g.err"
full_run "record -d 500ms with 4 KiB free" $?
unfill
ok "A: -d 500ms with 4 KiB free ($HELPER): $FULL"

for how in self TERM; do
	rm -f "$G" # wait_grown waits for the new file
	"${REC[@]}" >/dev/null 2>"$TMP/g.err" &
	pid=$!
	PIDS+=("$pid")
	wait_grown "$G" 8192
	fill
	[ "$how" = TERM ] && kill -TERM "$pid"
	wait_exit "$pid" 10
	full_run "record filled mid-run ($how)" $?
	unfill
	ok "A: full mid-run ($HELPER), stopped by $([ "$how" = TERM ] && echo SIGTERM || echo itself): $FULL"
done
"${REC[@]}" -d 300ms >/dev/null 2>"$TMP/g.err" || fail "record with room again failed: $(cat "$TMP/g.err")"
"$VG" report "$G" >/dev/null 2>"$TMP/rep.err" || fail "report of the new file failed: $(cat "$TMP/rep.err")"
ok "A: room again: the same path records and reports cleanly"
kill "$INJ_PID" 2>/dev/null
rm -f "$G"

# ---------------- B: vnoise-host record
libvirt_up
H=$M/h.rec
fill
"$VH" record -p 100ms -d 1s -o "$H" -q >/dev/null 2>"$TMP/h.err"
rc=$?
[ "$rc" -eq "$HOST_FULL_RC" ] || fail "host record on a full disk exited $rc, want $HOST_FULL_RC: $(cat "$TMP/h.err")"
one_error "$TMP/h.err" "$H.*$NOSPC"
unfill
ok "B: full from the start: exit $rc, $(cat "$TMP/h.err")"
rm -f "$H"
"$VH" record -p 100ms -o "$H" -q >/dev/null 2>"$TMP/h.err" &
pid=$!
PIDS+=("$pid")
wait_grown "$H" 1024
fill
for ((k = 0; k < 100; k++)); do
	grep -q "$NOSPC" "$TMP/h.err" && break
	sleep 0.05
done
kill -TERM "$pid"
wait_exit "$pid" 10
rc=$?
[ "$rc" -eq "$HOST_FULL_RC" ] || fail "host record filled mid-run exited $rc, want $HOST_FULL_RC: $(cat "$TMP/h.err")"
one_error "$TMP/h.err" "$H: $NOSPC"
line=$(grep error: "$TMP/h.err")
# and what it did not record is counted
grep -q "warning: $H: [0-9]* chunks (periods, statistics, the end marker) were not recorded after the error" "$TMP/h.err" ||
	fail "host record does not count what it did not record: $(cat "$TMP/h.err")"
whole host "$H"
unfill
"$VH" record -p 100ms -d 300ms -o "$H" -q >/dev/null 2>"$TMP/h.err" || fail "host record with room again: $(cat "$TMP/h.err")"
"$VH" report "$H" >/dev/null 2>"$TMP/rep.err" || fail "report of the new host file: $(cat "$TMP/rep.err")"
ok "B: full mid-run: exit $HOST_FULL_RC after SIGTERM, one line ($line); $WHOLE; room again: clean"
rm -f "$H"

# ---------------- C: the collector's store
KEY="$TMP/keys"
make_key "$KEY"
fill
expect_err 4 "store $M/new.db: .*$NOSPC" "$VH" collect -k "$KEY" --listen 127.0.0.1:0 --store "$M/new.db" \
	--duration 0.5s -q
rm -f "$M"/new.db*
unfill
ok "C: full from the start: exit 4, one line"

DB=$M/c.db
start_collector D --slot 200ms --job D --store "$DB" --metrics 127.0.0.1:0 --period 200ms
metrics_port "$TMP/D.err"
NPIDS=()
for n in 1 2 3 4; do
	"$SIM" -c "127.0.0.1:$PORT" -k "$KEY" -n "$n" -j D -i 500 -t 10ms -w 300 --seed "$n" \
		>/dev/null 2>>"$TMP/nodes.err" &
	NPIDS+=($!)
	PIDS+=($!)
done
for ((k = 0; k < 100; k++)); do
	[ "$(sqlite3 "$DB" 'SELECT count(*) FROM datagram' 2>/dev/null || echo 0)" -gt 0 ] && break
	sleep 0.05
done
fill
sleep 1.5
failed=$(curl -sf "http://127.0.0.1:$MPORT/metrics" | sed -n 's/^vnoise_collect_store_errors_total \([0-9]*\)$/\1/p')
[ -n "$failed" ] && [ "$failed" -gt 0 ] || fail "/metrics: store errors '$failed' while the disk is full"
[ "$(grep -c "warning: store $DB: $NOSPC" "$TMP/D.err")" -eq 1 ] ||
	fail "want one warning line for the full store: $(grep -v '^nodes ' "$TMP/D.err")"
grep '^nodes ' "$TMP/D.err" | tail -1 | grep -q 'store-failed [1-9]' || fail "the status line does not count store-failed: $(grep '^nodes ' "$TMP/D.err" | tail -1)"
unfill
for ((k = 0; k < 60; k++)); do
	grep -q "store $DB: storing again" "$TMP/D.err" && break
	sleep 0.05
done
grep -q "store $DB: storing again" "$TMP/D.err" || fail "the store did not go on with room again: $(grep -v '^nodes ' "$TMP/D.err")"
for p in "${NPIDS[@]}"; do wait "$p" || fail "a node exited $?: $(tail -3 "$TMP/nodes.err")"; done
sleep 0.6
kill -TERM "$CPID"
wait_exit "$CPID" 10
rc=$?
[ "$rc" -eq 4 ] || fail "the collector whose store was full exited $rc, want 4: $(grep -v '^nodes ' "$TMP/D.err")"
sqlite_ok "$DB"
stored=$(sqlite3 "$DB" 'SELECT count(*) FROM datagram')
notst=$(sed -n 's/.*, \([0-9]*\) not written to the store$/\1/p' "$TMP/D.err")
used=$(jq .datagrams.ok "$TMP/D.json")
[ -n "$notst" ] && [ "$notst" -gt 0 ] || fail "the collector does not say how many reports were not stored: $(grep -v '^nodes ' "$TMP/D.err")"
[ $((stored + notst)) -eq "$used" ] || fail "stored $stored + not stored $notst != accepted $used"
"$VH" query --store "$DB" ranking --json | jq -e '.jobs[0].ranking | length == 4' >/dev/null || fail "query of the store after the full disk"
ok "C: full store: one warning, /metrics and the status line counted, storing went on with room again, exit 4; stored $stored + not stored $notst = accepted $used; integrity ok"
