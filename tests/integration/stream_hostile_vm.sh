#!/bin/bash
# A guest that trusts nothing bounds nothing: valid records in a hostile shape, written into a real TCG
# domain's region from the host (tests/tools/streamhostile: the bytes the guest's BAR2 shows, the clock
# exchange answered), while `vnoise-host top --guest --batch --json -p 1s` follows the domain. For each
# stream, STREAM_S seconds (default 10):
#   future   ends an hour ahead under a horizon creeping 1 ms a round: vnoise-host's anonymous RSS (its heap;
#            VmRSS also counts the region's pages it has read) stays within its
#            baseline + the domain's budget (--guest-budget, 64 MiB), the refused records are counted as
#            matcher drops;
#   falling  ends rising while starts fall: the same memory bound, and the period lines keep coming (no gap
#            of more than 3 s between them: one guest cannot stall the monitor thread);
#   flip     a new epoch every round, the layout version flipping: at most 1 + 3 epochs followed and,
#            once the first few are followed and the hold begun (5 s), at most one channel line per 10 s.
# The figures over 60 s are bench/stream_hostile.sh's. Run only under `flock /tmp/vnoise-vm.lock`.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
VH=$BUILD/vnoise-host
SH=$BUILD/tests/tools/streamhostile
[ -x "$VH" ] && [ -x "$SH" ] || fail "vnoise-host or streamhostile not built"
SECS=${STREAM_S:-10}
BUDGET_MIB=64

vm_setup || fail "vm_setup"
vm_start --pin0 0 --pin 1:1 || fail "vm_start"
vm_wait_ready 90 || fail "the guest did not come up"

stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s%N)" "$line"; done; }
# the heap: what vnoise-host allocates (VmRSS also counts the pages of the mapped region it has read)
rss_kb() { awk '$1 == "RssAnon:" { print $2 }' "/proc/$1/status" 2>/dev/null; }

# run MODE: vnoise-host following the domain while the stream runs; sets BASE_KB, MAX_KB, MAX_GAP_MS
run() {
	local mode=$1 vh sh r
	("$VH" top --guest --batch --json -p 1s -D "$VM_NAME" -d "$((SECS + 5))s" 2> >(stamp >"$TMP/$mode.err") |
		stamp >"$TMP/$mode.lines") &
	sleep 0.5
	vh=$(pgrep -n -f "vnoise-host top --guest --batch --json -p 1s -D $VM_NAME") || fail "$mode: vnoise-host did not start"
	sleep 3
	BASE_KB=$(rss_kb "$vh")
	T_START=$(date +%s%N)
	"$SH" "$VM_SHM" "$mode" "$SECS" 2 >"$TMP/$mode.tool" 2>&1 &
	sh=$!
	MAX_KB=$BASE_KB
	while kill -0 "$sh" 2>/dev/null; do
		r=$(rss_kb "$vh")
		[ -n "$r" ] && [ "$r" -gt "$MAX_KB" ] && MAX_KB=$r
		sleep 0.25
	done
	wait "$sh" || fail "$mode: streamhostile failed: $(cat "$TMP/$mode.tool")"
	wait
	[ -s "$TMP/$mode.lines" ] || fail "$mode: vnoise-host printed nothing: $(tail -5 "$TMP/$mode.err")"
	MAX_GAP_MS=$(awk 'NR > 1 { d = ($1 - p) / 1e6; if (d > m) m = d } { p = $1 } END { printf "%d", m }' "$TMP/$mode.lines")
	LAST=$(tail -1 "$TMP/$mode.lines" | cut -d' ' -f2-)
	echo "$mode: $(cat "$TMP/$mode.tool"); anonymous RSS $((BASE_KB / 1024)) -> max $((MAX_KB / 1024)) MiB; period lines $(wc -l <"$TMP/$mode.lines"), largest gap ${MAX_GAP_MS} ms"
	echo "$mode: channel $(jq -c '.domains[0].channel | {state, epochs, records, invalid, match_dropped}' <<<"$LAST")"
}

within_budget() {
	[ "$((MAX_KB - BASE_KB))" -le $((BUDGET_MIB * 1024)) ] ||
		fail "$1: RSS grew by $(((MAX_KB - BASE_KB) / 1024)) MiB, beyond the domain's budget of $BUDGET_MIB MiB"
}

run future
within_budget future
[ "$(jq '.domains[0].channel.match_dropped' <<<"$LAST")" -gt 0 ] || fail "future: no record refused over the budget"
ok "future: RSS +$(((MAX_KB - BASE_KB) / 1024)) MiB (budget $BUDGET_MIB MiB), records over it refused and counted"

run falling
within_budget falling
[ "$MAX_GAP_MS" -le 3000 ] || fail "falling: $MAX_GAP_MS ms without a period line"
ok "falling: RSS +$(((MAX_KB - BASE_KB) / 1024)) MiB, period lines at most $MAX_GAP_MS ms apart"

run flip
ep=$(jq '.domains[0].channel.epochs' <<<"$LAST")
flips=$(jq .epochs "$TMP/flip.tool")
[ "$ep" -le 4 ] || fail "flip: $ep epochs followed of $flips"
# after the first 5 s (the burst followed, the hold begun): at most one channel line per 10 s
lines=$(awk -v t="$((T_START + 5000000000))" '$1 > t && /guest channel/' "$TMP/flip.err" | wc -l)
[ "$lines" -le $((1 + (SECS - 5) / 10)) ] ||
	fail "flip: $lines channel lines in the last $((SECS - 5)) s: $(grep "guest channel" "$TMP/flip.err" | cut -c1-200)"
[ "$MAX_GAP_MS" -le 3000 ] || fail "flip: $MAX_GAP_MS ms without a period line"
ok "flip: $flips epochs and layout flips, $ep followed, $lines channel lines after the first 5 s of $SECS s"
exit 0
