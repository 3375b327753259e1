# shellcheck shell=bash
# soaklib: what bench/soak.sh needs that holds no VM and no process of its own, so that
# tests/integration/soak_cli.sh can check it cheaply. Source it, then:
#   soak_usage                       the usage text of bench/soak.sh on stdout
#   soak_args "$@"                   parse [--warmup MIN] MINUTES (or -h/--help): sets SOAK_MINUTES,
#                                    SOAK_WARMUP (minutes excluded from the trends; default 6 from 20 minutes,
#                                    3 from 10, else 1) and SOAK_HELP=1 for --help; a bad command line: one
#                                    line on stderr, return 2
#   soak_trend FILE WARMUP_S         FILE: lines "T_S KEY RSS_KB FDS"; per KEY, over the samples at T_S >=
#                                    WARMUP_S, the least-squares slope of RSS and of fds as growth per 10 min
#                                    in % of the first such sample: "KEY N RSS0 RSS1 RSS_PCT FDS0 FDS1
#                                    FDS_PCT VERDICT" (VERDICT flat when neither grows > 1% per 10 min,
#                                    grows when one does, n/a under 2 samples)
#   soak_prom FILE METRIC [REGEX]    sum of METRIC's samples in the exposition text FILE (those whose labels
#                                    match REGEX); 0 when there are none
#   soak_host_proc PID               "RSS_KB FDS TICKS" of a host process (TICKS: utime + stime); return 1
#                                    when it is gone
#   soak_guest_procs                 the guest-side sh script (busybox) printing "NAME PID RSS_KB FDS TICKS"
#                                    per vnoise process: agent, mpi (the wrapper), rank (mpiloop with the
#                                    preload library), injector
#   soak_mpi_files ML PRE            VM_EXTRA_FILES entries ("src:dst ...") that put this host's OpenMPI,
#                                    mpiloop (/bin/mpiloop) and the preload library
#                                    (/lib/vnoise/libvnoise-preload.so) into the test guest
#                                    (as tests/integration/dtl_mpi_vm.sh does); return 1 when ldd finds none

soak_usage() {
	cat <<'EOF'
usage: bench/soak.sh [--warmup MIN] MINUTES      (root; MINUTES >= 3)
Runs the whole vnoise stack for MINUTES on a harness VM (QEMU TCG, tests/vm/vm.bash) with noise injected
the whole time, and prints every minute the RSS, open fds and CPU of each vnoise process and every
drop/loss counter; at the end the RSS/fd trend per process after the warm-up (growth per 10 min, flat
when <= 1%) and the loss totals (unexplained = losses nobody caused on purpose), then one verdict line
per criterion.
  host:  vnoise-host serve --guest --json --quiet --period 10s --metrics 127.0.0.1:PORT (the systemd
         unit's command plus --guest); vnoise-host collect --store --metrics with 8 simulated nodes
         (tests/tools/nodesim, node 3 drops every 100th datagram on purpose) and the guest's MPI job;
         a hog pinned with vCPU 0 (vnoise-guest inject, 5 ms every 50 ms)
  guest: vnoise-guest agent --cpus 0; vnoise-guest mpi --collector around mpiloop on 2 ranks (OpenMPI,
         the preload library); a guest injector on vCPU 1 (2 ms every 100 ms)
      --warmup MIN   minutes left out of the trends (default 6 from 20 minutes on, 3 from 10, else 1:
                     the collector's SQLite page cache, 64 MiB, fills in about 5 minutes here)
  -h, --help         this help
Environment: VNOISE_BUILD (default build; its vnoise-guest, vnoise-host, libvnoise-preload.so,
tests/tools/nodesim, tests/tools/mpiloop, tests/vm/vmshd and vmexec must be built); SOAK_KEEP=1 keeps the
run's files (serve's JSON lines and stderr, the collector's, the guest's logs) and says where.
Run it alone on the machine's VMs: flock -o /tmp/vnoise-vm.lock bench/soak.sh 30
Exit: 0 every criterion met; 1 the soak could not be set up; 2 usage; 3 a criterion failed (growth,
unexplained loss, a process that died); 4 this machine cannot run it (not root, no mpirun, no tap).
EOF
}

_soak_bad() {
	echo "soak: error: $* (see bench/soak.sh --help)" >&2
	return 2
}

# shellcheck disable=SC2034 # SOAK_* are for the sourcing script
soak_args() {
	local warm=''
	SOAK_MINUTES='' SOAK_WARMUP='' SOAK_HELP=0
	while [ $# -gt 0 ]; do
		case "$1" in
		-h | --help)
			SOAK_HELP=1
			return 0
			;;
		--warmup)
			[ $# -ge 2 ] || { _soak_bad "--warmup needs a number of minutes"; return; }
			warm=$2
			shift
			;;
		--warmup=*) warm=${1#--warmup=} ;;
		-*) _soak_bad "unknown option '$1'"; return ;;
		*)
			[ -z "$SOAK_MINUTES" ] || { _soak_bad "one MINUTES only, got '$SOAK_MINUTES' and '$1'"; return; }
			SOAK_MINUTES=$1
			;;
		esac
		shift
	done
	[ -n "$SOAK_MINUTES" ] || { _soak_bad "MINUTES is required"; return; }
	if ! [[ $SOAK_MINUTES =~ ^[0-9]{1,5}$ ]] || [ "$((10#$SOAK_MINUTES))" -lt 3 ] ||
		[ "$((10#$SOAK_MINUTES))" -gt 10080 ]; then
		_soak_bad "MINUTES must be a whole number of minutes from 3 to 10080, got '$SOAK_MINUTES'"
		return
	fi
	SOAK_MINUTES=$((10#$SOAK_MINUTES))
	if [ -z "$warm" ]; then # the collector's SQLite page cache (64 MiB) fills in ~5 min here
		SOAK_WARMUP=6
		[ "$SOAK_MINUTES" -lt 20 ] && SOAK_WARMUP=3
		[ "$SOAK_MINUTES" -lt 10 ] && SOAK_WARMUP=1
	else
		[[ $warm =~ ^[0-9]{1,5}$ ]] || { _soak_bad "--warmup must be a whole number of minutes, got '$warm'"; return; }
		SOAK_WARMUP=$((10#$warm))
		[ "$SOAK_WARMUP" -le $((SOAK_MINUTES - 2)) ] ||
			{ _soak_bad "--warmup $SOAK_WARMUP leaves under 2 minutes of $SOAK_MINUTES for the trends"; return; }
	fi
	return 0
}

soak_trend() {
	awk -v w="$2" '
	$1 >= w {
		k = $2
		if (!(k in n)) { order[++nk] = k; r0[k] = $3; f0[k] = $4 }
		n[k]++; st[k] += $1; stt[k] += $1 * $1
		sr[k] += $3; str[k] += $1 * $3; sf[k] += $4; stf[k] += $1 * $4
		r1[k] = $3; f1[k] = $4
	}
	function pct(k, sy, sty, base,   d, b) {
		d = n[k] * stt[k] - st[k] * st[k]
		if (d <= 0 || base <= 0) return 0
		b = (n[k] * sty - st[k] * sy) / d  # units per second
		return b * 600 / base * 100
	}
	END {
		for (i = 1; i <= nk; i++) {
			k = order[i]
			rp = pct(k, sr[k], str[k], r0[k]); fp = pct(k, sf[k], stf[k], f0[k])
			v = n[k] < 2 ? "n/a" : (rp > 1 || fp > 1 ? "grows" : "flat")
			printf "%s %d %d %d %.2f %d %d %.2f %s\n", k, n[k], r0[k], r1[k], rp, f0[k], f1[k], fp, v
		}
	}' "$1"
}

soak_prom() {
	awk -v m="$2" -v re="${3:-}" '
	/^#/ { next }
	{
		name = $1; sub(/\{.*/, "", name)
		if (name != m) next
		if (re != "" && $1 !~ re) next
		s += $NF
	}
	END { printf "%.0f\n", s }' "$1" 2>/dev/null || echo 0
}

soak_host_proc() {
	local p=$1 rss fds ticks
	[ -r "/proc/$p/status" ] || return 1
	rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$p/status" 2>/dev/null)
	fds=$(find "/proc/$p/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	# fields after the comm's closing parenthesis: utime and stime are the 12th and 13th
	ticks=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }')
	[ -n "$rss" ] && [ -n "$ticks" ] || return 1
	echo "$rss $fds $ticks"
}

soak_guest_procs() {
	# shellcheck disable=SC2016 # expanded by the guest's shell
	printf '%s\n' 'for d in /proc/[0-9]*; do
	c=$(tr "\0" " " 2>/dev/null <$d/cmdline) || continue
	case "$c" in
	"vnoise-guest agent "*) n=agent ;;
	"vnoise-guest mpi "*) n=mpi ;;
	"vnoise-guest inject "*) n=injector ;;
	"/bin/mpiloop "*) n=rank ;;
	*) continue ;;
	esac
	r=$(awk "\$1 == \"VmRSS:\" { print \$2 }" $d/status 2>/dev/null)
	f=$(ls $d/fd 2>/dev/null | wc -l)
	t=$(sed "s/.*) //" $d/stat 2>/dev/null | awk "{ print \$12 + \$13 }")
	[ -n "$r" ] && [ -n "$t" ] && echo "$n ${d#/proc/} $r $f $t"
done'
}

soak_mpi_files() {
	local ml=$1 pre=$2 extra
	extra=$(vm_mpi_files "$ml") || return 1
	printf '%s\n' "$extra $ml:/bin/mpiloop $pre:/lib/vnoise/libvnoise-preload.so"
}
