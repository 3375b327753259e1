#!/bin/bash
# Prepares this host to run libvirt + QEMU TCG test VMs without systemd (REFERENCE.md §1), and undoes it.
#   tests/vm/setup-host.sh [--user ID]              set up (idempotent), register user ID
#   tests/vm/setup-host.sh --teardown [--user ID]   unregister ID; when no live user is left, stop the
#                                                   daemons this script started and restore qemu.conf
#   tests/vm/setup-host.sh --restart-libvirtd       stop and start libvirtd (domains keep running)
# Setting up installs packages through scripts/deps.sh only when a binary is missing, creates libvirt's
# directories and the libvirt-qemu user, writes the settings libvirtd needs into /etc/libvirt/qemu.conf
# (backing up the original; never while a libvirtd we did not start is running), starts virtlogd and
# libvirtd only when they are not running, and waits until `virsh -c qemu:///system version` answers.
# Setup prints "started NAME PID" on stdout for each daemon this run started. State lives in $VM_STATE_DIR
# (default /run/vnoise-vm): host.state lists what was started or changed ("daemon NAME PID STARTTIME",
# "qemu_conf created|backup FILE"), users/ID one file per user holding the pid and start time of the
# process that keeps it alive ($VM_SETUP_OWNER, default the caller; "none" for ID "manual", the default of
# standalone use). Only what host.state names is undone, so daemons that were already running are never
# stopped. Signals during setup are acted on once what was started is recorded.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${VM_STATE_DIR:-/run/vnoise-vm}
CONF=/etc/libvirt/qemu.conf
URI=qemu:///system
KEYS_RE='^[[:space:]]*(user|group|cgroup_controllers|namespaces|security_driver)[[:space:]]*='

log() { echo "setup-host: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# The settings block we add to qemu.conf, after removing any earlier setting of the same keys.
conf_wanted() {
	if [ -f "$CONF" ]; then
		awk -v re="$KEYS_RE" '
			skip { if ($0 ~ /\]/) skip = 0; next }
			$0 ~ re { if ($0 ~ /\[/ && $0 !~ /\]/) skip = 1; next }
			$0 == "# vnoise test VMs (tests/vm/setup-host.sh)" { next }
			{ print }' "$CONF"
	fi
	cat <<'EOF'
# vnoise test VMs (tests/vm/setup-host.sh)
user = "root"
group = "root"
cgroup_controllers = [ ]
namespaces = [ ]
security_driver = "none"
EOF
}

# pid_alive PID STARTTIME COMM: the process still runs (a zombie does not count) and is the one we recorded.
pid_alive() {
	local f
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$3" ] || return 1
	read -ra f < <(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null)
	[ "${f[0]:-Z}" != Z ] && [ "${f[19]:-}" = "$2" ]
}

# running_pid NAME: the pid of a live (not zombie) process called NAME, if any.
running_pid() {
	local c pid f
	for c in /proc/[0-9]*/comm; do
		[ "$(cat "$c" 2>/dev/null)" = "$1" ] || continue
		pid=${c#/proc/}
		pid=${pid%/comm}
		read -ra f < <(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null)
		[ "${f[0]:-Z}" = Z ] && continue
		echo "$pid"
		return 0
	done
	return 1
}

starttime() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

# start_daemon NAME [norecord]: start NAME -d unless a process of that name runs; record it when we
# started it (unless norecord; the pid is then in $started_pid).
start_daemon() {
	local name=$1 pidfile=/run/$1.pid pid _
	started_pid=
	if pid=$(running_pid "$name"); then
		log "$name already running (pid $pid), leaving it alone"
		return 0
	fi
	rm -f "$pidfile"
	LIBVIRT_LOG_OUTPUTS="3:file:/var/log/libvirt/$name.log" "$name" -d -p "$pidfile" 9>&- ||
		die "$name -d failed (see /var/log/libvirt/$name.log)"
	for _ in $(seq 50); do
		pid=$(cat "$pidfile" 2>/dev/null)
		[ -n "$pid" ] && [ -d "/proc/$pid" ] && break
		pid=
		sleep 0.1
	done
	[ -n "$pid" ] || die "$name did not write $pidfile"
	started_pid=$pid
	[ "${2:-}" = norecord ] && return 0
	echo "daemon $name $pid $(starttime "$pid")" >>"$STATE/host.state"
	log "started $name (pid $pid)"
	echo "started $name $pid"
}

# stop_daemon NAME PID STARTTIME: TERM, then KILL after 10 s; only if it is still the process we started.
stop_daemon() {
	local name=$1 pid=$2 st=$3 _
	pid_alive "$pid" "$st" "$name" || {
		log "$name (pid $pid) already gone"
		return 0
	}
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 100); do
		pid_alive "$pid" "$st" "$name" || break
		sleep 0.1
	done
	if pid_alive "$pid" "$st" "$name"; then
		log "$name (pid $pid) ignored SIGTERM, killing it"
		kill -KILL "$pid" 2>/dev/null
	fi
	rm -f "/run/$name.pid"
	log "stopped $name (pid $pid)"
}

ensure_packages() {
	local t missing=
	for t in libvirtd virtlogd virsh qemu-system-x86_64 cpio; do
		command -v "$t" >/dev/null || missing="$missing $t"
	done
	[ -x /bin/busybox ] || missing="$missing busybox"
	[ -z "$missing" ] && return 0
	log "missing:$missing; installing with scripts/deps.sh"
	"$ROOT/scripts/deps.sh" >&2 || die "scripts/deps.sh failed"
}

ensure_user() {
	getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu || die "groupadd libvirt-qemu failed"
	getent passwd libvirt-qemu >/dev/null ||
		useradd -r -g libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu ||
		die "useradd libvirt-qemu failed"
}

ensure_conf() {
	local want
	want=$(conf_wanted)
	if [ -f "$CONF" ] && [ "$(cat "$CONF")" = "$want" ]; then
		return 0
	fi
	if running_pid libvirtd >/dev/null; then
		log "warning: a libvirtd we did not start is running and $CONF lacks our settings; not touching it"
		return 0
	fi
	mkdir -p "$(dirname "$CONF")"
	if [ -f "$CONF" ]; then
		cp -p "$CONF" "$CONF.vnoise-orig" || die "cannot back up $CONF"
		echo "qemu_conf backup $CONF.vnoise-orig" >>"$STATE/host.state"
		log "backed up $CONF to $CONF.vnoise-orig"
	else
		echo "qemu_conf created" >>"$STATE/host.state"
	fi
	{ printf '%s\n' "$want" >"$CONF.vnoise-tmp" && mv "$CONF.vnoise-tmp" "$CONF"; } || die "cannot write $CONF"
	cp "$CONF" "$STATE/qemu.conf.ours"
	log "wrote $CONF"
}

wait_virsh() {
	local _
	for _ in $(seq 300); do
		virsh -c "$URI" version >/dev/null 2>&1 && return 0
		check_interrupt
		sleep 0.1
	done
	virsh -c "$URI" version >&2
	die "libvirtd does not answer on $URI after 30 s (see /var/log/libvirt/libvirtd.log)"
}

# Registered users whose process is gone (or whose pid was reused) are dropped.
users_prune() {
	local f pid st
	for f in "$STATE"/users/*; do
		[ -e "$f" ] || continue
		read -r pid st <"$f"
		[ "$pid" = none ] && continue
		if [ -z "$pid" ] || [ "$(starttime "$pid")" != "$st" ]; then rm -f "$f"; fi
	done
}

users_left() { [ -n "$(ls -A "$STATE/users" 2>/dev/null)" ]; }

# A signal during setup is acted on between steps, so whatever was started is recorded first.
interrupted=
check_interrupt() {
	[ -z "$interrupted" ] && return 0
	log "interrupted; '$0 --teardown --user $user' undoes what was done"
	exit 130
}

do_setup() {
	ensure_packages
	mkdir -p /var/log/libvirt /var/run/libvirt /var/lib/libvirt/qemu /var/cache/libvirt || die "mkdir failed"
	ensure_user
	ensure_conf
	check_interrupt
	start_daemon virtlogd
	check_interrupt
	start_daemon libvirtd
	check_interrupt
	wait_virsh
	if [ "$user" = manual ]; then echo none; else echo "$owner $(starttime "$owner")"; fi >"$STATE/users/$user"
	log "ready ($URI)"
}

# libvirtd stopped and started again (its domains keep running; it reconnects to them). When the old one was
# ours, host.state names the new one instead, so teardown still stops it; when it was not, it is not either.
do_restart_libvirtd() {
	local pid st line
	if pid=$(running_pid libvirtd); then
		st=$(starttime "$pid")
		line=$(grep -x "daemon libvirtd $pid $st" "$STATE/host.state" 2>/dev/null)
		stop_daemon libvirtd "$pid" "$st"
	fi
	start_daemon libvirtd norecord
	if [ -n "${line:-}" ]; then
		sed -i "s/^$line\$/daemon libvirtd $started_pid $(starttime "$started_pid")/" "$STATE/host.state"
	fi
	log "libvirtd restarted (pid $started_pid${line:+, ours})"
	wait_virsh
}

do_teardown() {
	local kind a b c
	rm -f "$STATE/users/$user"
	users_prune
	if users_left; then
		log "other users still registered ($(cd "$STATE/users" && echo *)); leaving the daemons running"
		return 0
	fi
	[ -f "$STATE/host.state" ] || return 0
	# libvirtd first, then virtlogd: reverse order of starting.
	tac "$STATE/host.state" | while read -r kind a b c; do
		case "$kind" in
		daemon) stop_daemon "$a" "$b" "$c" ;;
		qemu_conf)
			if [ -f "$STATE/qemu.conf.ours" ] && ! cmp -s "$CONF" "$STATE/qemu.conf.ours"; then
				log "warning: $CONF changed since we wrote it; leaving it (original: ${b:-none})"
			elif [ "$a" = created ]; then
				rm -f "$CONF"
				log "removed $CONF (it did not exist before)"
			else
				cp -p "$b" "$CONF" && rm -f "$b"
				log "restored $CONF"
			fi
			rm -f "$STATE/qemu.conf.ours"
			;;
		esac
	done
	rm -f "$STATE/host.state"
}

mode=setup user=manual owner=${VM_SETUP_OWNER:-$PPID}
while [ $# -gt 0 ]; do
	case "$1" in
	--teardown) mode=teardown ;;
	--restart-libvirtd) mode=restart ;;
	--user)
		user=${2:?--user needs an ID}
		shift
		;;
	-h | --help)
		sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
case "$user" in */* | .*) die "bad user ID '$user'" ;; esac
[ "$(id -u)" -eq 0 ] || die "needs root"
{ mkdir -p "$STATE/users" && chmod 700 "$STATE"; } || die "cannot create $STATE"
exec 9>"$STATE/lock"
flock -w 120 9 || die "cannot lock $STATE/lock within 120 s"
case "$mode" in
setup)
	trap 'interrupted=1' INT TERM HUP
	do_setup
	;;
restart)
	trap '' INT TERM HUP
	do_restart_libvirtd
	;;
*)
	trap '' INT TERM HUP
	do_teardown
	;;
esac
