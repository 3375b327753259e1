# Helpers of the fault tests (faults_kill.sh, faults_disk.sh; sourced after lib.bash): a record file's
# chunks read apart from vnoise (od + awk, not recreader), a real libvirtd for vnoise-host record, waits.
VH=$BUILD/vnoise-host
SIM=$BUILD/tests/tools/nodesim
[ -x "$VH" ] && [ -x "$SIM" ] || fail "vnoise-host or nodesim not built"
FAULTS_LV_USER=
FAULTS_MNT=

# walk FILE: the whole chunks of a record file (protocol/record.h), as "CHUNKS OFFSET GAPS END_NS ENDED":
# CHUNKS whole chunks, OFFSET the byte where they end (a reader reports the cut there), GAPS the gap records
# (vn_sample kind 0) of the whole SAMPLES chunks, END_NS where vnoise-host's run ends so far (the latest
# end_ns= of a whole STATS chunk or end of a HOST_PERIOD record; 0 if none), ENDED 1 with the END chunk.
# No CRC check: a cut file is not a damaged one.
walk() {
	od -An -v -tu1 -w32 "$1" | awk '
	function u32(o) { return b[o] + 256 * (b[o + 1] + 256 * (b[o + 2] + 256 * b[o + 3])) }
	{ for (i = 1; i <= NF; i++) b[n++] = $i + 0 }
	END {
		chunks = 0; off = 0; gaps = 0; endns = 0; ended = 0
		if (n >= 64)
			off = u32(12)
		while (n >= 64 && off + 32 <= n && u32(off) == 1262702166) {
			type = b[off + 4] + 256 * b[off + 5]
			len = u32(off + 8)
			p = off + 32
			if (p + len > n)
				break
			if (type == 2)
				for (k = 0; k + 24 <= len; k += 24)
					if (b[p + k + 18] == 0)
						gaps++
			if (type == 4) {
				s = ""
				for (k = 0; k < len && k < 64; k++)
					s = s sprintf("%c", b[p + k])
				if (match(s, /^end_ns=[0-9]+/) && substr(s, 8, RLENGTH - 7) + 0 > endns)
					endns = substr(s, 8, RLENGTH - 7) + 0
			}
			if (type == 18 && len >= 128) { # HOST_PERIOD: its last record ends the run so far
				t = u32(p + len - 120) + 4294967296 * u32(p + len - 116)
				if (t > endns)
					endns = t
			}
			if (type == 5)
				ended = 1
			chunks++
			off = p + len
		}
		printf "%d %d %d %.0f %d\n", chunks, off, gaps, endns, ended
	}'
}

# libvirt_up: a real libvirtd for vnoise-host record (tests/vm/setup-host.sh, undone by faults_cleanup)
libvirt_up() {
	FAULTS_LV_USER=faults-$$
	VM_SETUP_OWNER=$$ "$ROOT/tests/vm/setup-host.sh" --user "$FAULTS_LV_USER" >"$TMP/setup-host.out" 2>&1 ||
		fail "tests/vm/setup-host.sh failed: $(tail -3 "$TMP/setup-host.out")"
}

# faults_cleanup: everything started is stopped (so that the tmpfs can go), then the tmpfs, libvirtd's
# registration and lib.bash's cleanup. On every exit path.
faults_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -n "$FAULTS_MNT" ] && mountpoint -q "$FAULTS_MNT"; then
		umount "$FAULTS_MNT" 2>/dev/null || umount -l "$FAULTS_MNT"
	fi
	if [ -n "$FAULTS_LV_USER" ]; then
		VM_SETUP_OWNER=$$ "$ROOT/tests/vm/setup-host.sh" --teardown --user "$FAULTS_LV_USER" \
			>/dev/null 2>&1
	fi
	cleanup_lib
}
trap faults_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_file FILE: until FILE exists (10 s at most), polling without sleeping at first (a kill "at birth")
wait_file() {
	local i
	for ((i = 0; i < 20000; i++)); do [ -e "$1" ] && return 0; done
	for ((i = 0; i < 1000; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.01
	done
	fail "$1 was never created"
}

# wait_grown FILE BYTES: until FILE holds BYTES (15 s at most): a run underway, some chunks written
wait_grown() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "$1 holds $(stat -c %s "$1" 2>/dev/null || echo no) bytes after 15 s, want $2"
}

# wait_exit PID SECONDS: the exit status of PID (a child), or fail when it runs longer (a hang)
wait_exit() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$1" 2>/dev/null && fail "process $1 still runs $2 s later (a hang): $(cat "/proc/$1/stack" 2>/dev/null | head -5 | tr '\n' ' ')"
	wait "$1"
}

# sqlite_ok DB: PRAGMA integrity_check says ok
sqlite_ok() {
	local r
	r=$(sqlite3 "$1" 'PRAGMA integrity_check' 2>&1)
	[ "$r" = ok ] || fail "integrity_check of $1: $(head -3 <<<"$r")"
}

# gap_samples JSON: the gaps a guest report counted, over its CPUs
gap_samples() { jq '[.cpus[].samples] | add // 0' "$1"; }
