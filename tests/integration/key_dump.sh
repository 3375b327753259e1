#!/bin/bash
# The cluster key stays out of core dumps: under `vnoise-guest mpi --collector -k KEY` (a real OpenMPI job of
# 2 ranks), the interval pipeline's header page, which holds the key, is marked "dd" (VM_DONTDUMP) in
# /proc/PID/smaps of vnoise-guest and of each registered rank.
. "$(dirname "$0")/lib.bash"
require_root
require_tools mpirun
ML=$BUILD/tests/tools/mpiloop
[ -x "$ML" ] && [ -f "$BUILD/libvnoise-preload.so" ] || fail "mpiloop or the preload library not built"
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
KEY="$TMP/keys"
printf '5 %s\n' "$(head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$KEY"
chmod 600 "$KEY"

# header_flags PID: the VmFlags of the pipeline's first mapping in PID (the header page), "none" without one
header_flags() {
	awk '/memfd:vnoise-pipe/ { m = 1; next } m && /^VmFlags:/ { sub(/^VmFlags: */, ""); print; exit }
		END { if (!m) print "none" }' "/proc/$1/smaps" 2>/dev/null
}
# the processes below PID
descendants() {
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

"$VG" mpi --no-helper --job keydump --collector 127.0.0.1:9 -k "$KEY" -- "${MPIRUN[@]}" -np 2 "$ML" \
	--iters 2000 --work-us 2000 >"$TMP/job.out" 2>"$TMP/job.err" &
VGPID=$!
PIDS+=("$VGPID")
ranks=()
for _ in $(seq 100); do # until both ranks have mapped the pipeline
	ranks=()
	for p in $(descendants "$VGPID"); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = mpiloop ] && [ "$(header_flags "$p")" != none ] && ranks+=("$p")
	done
	[ "${#ranks[@]}" -ge 2 ] && break
	sleep 0.1
done
[ "${#ranks[@]}" -ge 2 ] || fail "the ranks never mapped the pipeline: $(cat "$TMP/job.err")"
for p in "$VGPID" "${ranks[@]}"; do
	f=$(header_flags "$p")
	grep -qw dd <<<"$f" || fail "$(cat /proc/"$p"/comm) (pid $p): the pipeline's header page may be dumped (VmFlags: $f)"
	ok "$(cat /proc/"$p"/comm) (pid $p): the pipeline's header page is left out of core dumps (VmFlags: $f)"
done
wait "$VGPID" || fail "the job failed: $(tail -5 "$TMP/job.err")"
exit 0
