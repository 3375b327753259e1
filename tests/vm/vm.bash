# Test-VM harness (sourced by tests): libvirt + QEMU TCG guests running Debian's kernel with the static
# vnoise-guest and the vmshd exec daemon in a busybox initramfs (REFERENCE.md §1, tests/vm/README.md).
#
#   vm_setup                  host daemons up (setup-host.sh), guest built (build-guest.sh), teardown hooked on
#                             EXIT/INT/TERM/HUP (chained after an EXIT trap already set, e.g. lib.bash's)
#   vm_start [--vcpus N] [--mem MIB] [--pin0 HOSTCPU] [--pin VCPU:HOSTCPUS]... [--net] [--reboot]
#                             start a transient domain with a unique name; sets the VM_* variables below;
#                             --net adds a virtio NIC on a tap (<interface type='ethernet'>): guest eth0
#                             VM_GUEST_IP/24, host tap VM_TAP with VM_HOST_IP/24 (a 10.199.N.0/24 per VM);
#                             --reboot: a guest reboot restarts it in the same QEMU (default: it is destroyed,
#                             so that a guest panic ends the domain)
#   vm_wait_ready [TIMEOUT_S] wait (default 120 s) until vmshd answers; prints and sets VM_BOOT_SECS (the
#                             readiness check uses only vmshd's port, not org.qemu.guest_agent.0)
#   vm_qga_ping [TIMEOUT_S]   wait (default 30 s) until the guest's qemu-ga answers guest-ping through libvirt
#                             (`virsh qemu-agent-command`); its reply on stdout
#   vm_qga_stop / vm_qga_start  stop the guest's qemu-ga and keep it stopped (org.qemu.guest_agent.0 free for
#                             a test), and let init's qemu-ga-run start it again (build-guest.sh)
#   vm_agent_running [TIMEOUT_S]  wait (default 60 s) until the guest's vnoise-guest agent measures and publishes
#   vm_start_agent ARGS -- VM_START_ARGS   vm_start + vm_wait_ready + agent ARGS + vm_agent_running, once more
#                             on a fresh VM if the TCG guest locked up while the agent attached eBPF
#   vm_exec [--timeout S] [--] CMD...
#                             run CMD under the guest's /bin/sh -c; its output on stdout (stderr merged), its
#                             exit code as status (124 timeout, 125 vmexec could not talk to the guest)
#   vm_destroy [NAME]         virsh destroy (idempotent), remove its /dev/shm file and sockets
#   vm_restart_libvirtd       stop and start libvirtd; domains keep running, teardown still stops it if the
#                             harness started it
#   vm_stop_libvirtd / vm_start_libvirtd  libvirtd stopped and left stopped (domains keep running; virsh
#                             cannot reach them meanwhile), then started again (waits until virsh answers);
#                             the same ownership rule as vm_restart_libvirtd; teardown starts it first if a
#                             test ends while it is stopped (so that its domains can be destroyed)
#   vm_teardown               destroy every domain vm_start made, remove their files, stop the daemons
#                             setup-host.sh started for us and restore qemu.conf (runs on every exit path)
# Exported by vm_setup: VM_STATE_DIR, VM_GUEST_DIR (vmlinuz, initrd.img), VM_KREL (guest `uname -r`),
# VM_STARTED_PIDS (daemons this setup started, "pid ..."). By vm_start, for the newest domain: VM_NAME,
# VM_XML, VM_CONSOLE (serial console file), VM_AGENT_SOCK (org.qemu.guest_agent.0), VM_VNOISE_SOCK
# (org.vnoise.0), VM_BELL_SOCK (org.vnoise.bell.0; empty with VM_BELL=0), VM_EXEC_SOCK (org.vnoise.test.0),
# VM_SHM_NAME, VM_SHM (/dev/shm/<name>, 4 MiB ivshmem), VM_TAP, VM_GUEST_IP, VM_HOST_IP (with --net; else
# empty).
# Knobs: VM_CMDLINE_EXTRA (kernel cmdline), VM_EXTRA_FILES / VM_EXTRA_MODULES (build-guest.sh), VM_MEM_MIB
# (default 640), VM_VCPUS (default 2), VM_BELL=0 (no bell port: the host reads the channel every 5 ms), VM_EXEC_TIMEOUT (vm_exec's default, 60 s), VM_GUEST_DIR (where the
# guest is built; default $TMP/guest), VM_NO_MAKE=1 (do not run make for the guest tools), VM_KEEP=1 (leave
# the domain and files for debugging). Functions return non-zero with a message on stderr on failure.
# The guest tools come from build/ (static, whatever BUILD the test uses): vm_setup runs make for them.

VM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_STATE_DIR=${VM_STATE_DIR:-/run/vnoise-vm}
export VM_STATE_DIR
VM_URI=qemu:///system
VM_BIN_DIR=${VM_BIN_DIR:-$VM_ROOT/build}
VMEXEC=$VM_BIN_DIR/tests/vm/vmexec
_VM_DOMAINS=()
_VM_SETUP=0
_VM_OWN_GUEST_DIR=
_VM_START_NS=0
_VM_USER=vm-$$

_vm_log() { echo "vm: $*" >&2; }
_vm_virsh() { virsh -q -c "$VM_URI" "$@"; }
_vm_now_ns() { date +%s%N; }
_vm_xml_escape() {
	local s=$1
	s=${s//&/&amp;}
	s=${s//</&lt;}
	s=${s//>/&gt;}
	s=${s//\'/&apos;}
	printf '%s' "$s"
}

# Chains our EXIT handler after the one already installed; INT/TERM/HUP exit, which runs it.
_vm_trap_install() {
	local t
	t=$(trap -p EXIT)
	case "$t" in *_vm_on_exit*) return 0 ;; esac
	t=${t#trap -- }
	t=${t% EXIT}
	_VM_PREV_EXIT=
	[ -n "$t" ] && eval "_VM_PREV_EXIT=$t"
	trap '_vm_on_exit' EXIT
	trap '_vm_on_signal 129' HUP
	trap '_vm_on_signal 130' INT
	trap '_vm_on_signal 143' TERM
}

_vm_on_signal() {
	trap '' INT TERM HUP
	_vm_log "signal: tearing down"
	exit "$1"
}

_vm_on_exit() {
	local rc=$?
	trap '' INT TERM HUP
	vm_teardown "$rc"
	if [ -n "${_VM_PREV_EXIT:-}" ]; then eval "$_VM_PREV_EXIT"; fi
	exit "$rc"
}

# Domains and files left by harness runs whose shell is gone (killed with SIGKILL).
_vm_reap_stale() {
	local n pid d
	for n in $(_vm_virsh list --all --name 2>/dev/null); do
		[[ $n =~ ^vnoise-test-([0-9]+)-[0-9]+$ ]] || continue
		pid=${BASH_REMATCH[1]}
		{ [ "$pid" = $$ ] || kill -0 "$pid" 2>/dev/null; } && continue
		_vm_log "removing stale domain $n"
		_vm_virsh destroy "$n" >/dev/null 2>&1
	done
	for d in "$VM_STATE_DIR"/vm-vnoise-test-* /dev/shm/vnoise-vnoise-test-* \
		/var/log/libvirt/qemu/vnoise-test-*.log; do
		[ -e "$d" ] || continue
		[[ $d =~ vnoise-test-([0-9]+)-[0-9]+(\.log)?$ ]] || continue
		pid=${BASH_REMATCH[1]}
		{ [ "$pid" = $$ ] || kill -0 "$pid" 2>/dev/null; } && continue
		rm -rf "$d"
	done
}

vm_setup() {
	local out
	if [ "$(id -u)" -ne 0 ]; then
		_vm_log "vm_setup needs root"
		return 1
	fi
	_VM_SETUP=1
	_vm_trap_install
	if [ "${VM_NO_MAKE:-0}" != 1 ] && command -v make >/dev/null; then
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$VM_ROOT" SANITIZE= BUILD=build \
			build/vnoise-guest build/tests/vm/vmshd build/tests/vm/vmexec build/tests/vm/tcgwatch >&2 || {
			_vm_log "building the guest tools failed"
			return 1
		}
		VM_BIN_DIR=$VM_ROOT/build
		VMEXEC=$VM_BIN_DIR/tests/vm/vmexec
	fi
	[ -x "$VMEXEC" ] || {
		_vm_log "$VMEXEC not built"
		return 1
	}
	out=$(VM_SETUP_OWNER=$$ "$VM_ROOT/tests/vm/setup-host.sh" --user "$_VM_USER") || {
		_vm_log "setup-host.sh failed"
		return 1
	}
	VM_STARTED_PIDS=$(awk '$1 == "started" { printf "%s%s", sep, $3; sep = " " }' <<<"$out")
	export VM_STARTED_PIDS
	_vm_reap_stale
	if [ -z "${VM_GUEST_DIR:-}" ]; then
		if [ -n "${TMP:-}" ] && [ -d "$TMP" ]; then
			VM_GUEST_DIR=$TMP/guest
		else
			VM_GUEST_DIR=$(mktemp -d /tmp/vnoise-guest-dir.XXXXXX) && _VM_OWN_GUEST_DIR=$VM_GUEST_DIR
		fi
	fi
	VM_BIN_DIR=$VM_BIN_DIR "$VM_ROOT/tests/vm/build-guest.sh" "$VM_GUEST_DIR" || {
		_vm_log "build-guest.sh failed"
		return 1
	}
	VM_KREL=$(cat "$VM_GUEST_DIR/kernel.release")
	export VM_GUEST_DIR VM_KREL
}

# vm_xml_boot CMDLINE CONSOLE [ON_REBOOT]: the part of a test domain's XML from <os> to the serial console
# (direct kernel boot of the harness's guest, TCG's qemu64 CPU, destroy on every exit but a reboot when
# ON_REBOOT is restart), ending inside <devices>.
vm_xml_boot() {
	cat <<EOF
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$(_vm_xml_escape "$VM_GUEST_DIR/vmlinuz")</kernel>
    <initrd>$(_vm_xml_escape "$VM_GUEST_DIR/initrd.img")</initrd>
    <cmdline>$(_vm_xml_escape "$1")</cmdline>
  </os>
  <features><acpi/></features>
  <cpu mode='custom' match='exact'><model fallback='allow'>qemu64</model></cpu>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>${3:-destroy}</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='file'>
      <source path='$(_vm_xml_escape "$2")'/>
      <target port='0'/>
    </serial>
EOF
}

# Writes the domain XML to stdout. Arguments: name, vcpus, mem MiB, pin spec ("vcpu:cpu ...").
_vm_xml() {
	local name=$1 vcpus=$2 mem=$3 pins=$4 net=$5 onreboot=$6 p cmdline
	cmdline="console=ttyS0 quiet panic=-1${VM_CMDLINE_EXTRA:+ $VM_CMDLINE_EXTRA}"
	[ "$net" = 1 ] && cmdline="$cmdline vnoise.ip=$VM_GUEST_IP/24"
	cat <<EOF
<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$name</name>
  <memory unit='MiB'>$mem</memory>
  <vcpu placement='static'>$vcpus</vcpu>
EOF
	if [ -n "$pins" ]; then
		echo "  <cputune>"
		for p in $pins; do echo "    <vcpupin vcpu='${p%%:*}' cpuset='${p#*:}'/>"; done
		echo "  </cputune>"
	fi
	vm_xml_boot "$cmdline" "$VM_CONSOLE" "$onreboot"
	cat <<EOF
    <channel type='unix'>
      <source mode='bind' path='$(_vm_xml_escape "$VM_AGENT_SOCK")'/>
      <target type='virtio' name='org.qemu.guest_agent.0'/>
    </channel>
    <channel type='unix'>
      <source mode='bind' path='$(_vm_xml_escape "$VM_VNOISE_SOCK")'/>
      <target type='virtio' name='org.vnoise.0'/>
    </channel>
    <channel type='unix'>
      <source mode='bind' path='$(_vm_xml_escape "$VM_EXEC_SOCK")'/>
      <target type='virtio' name='org.vnoise.test.0'/>
    </channel>
EOF
	[ -n "$VM_BELL_SOCK" ] && cat <<EOF
    <channel type='unix'>
      <source mode='bind' path='$(_vm_xml_escape "$VM_BELL_SOCK")'/>
      <target type='virtio' name='org.vnoise.bell.0'/>
    </channel>
EOF
	cat <<EOF
    <shmem name='$VM_SHM_NAME'>
      <model type='ivshmem-plain'/>
      <size unit='M'>4</size>
    </shmem>
EOF
	[ "$net" = 1 ] && cat <<EOF
    <interface type='ethernet'>
      <model type='virtio'/>
    </interface>
EOF
	cat <<EOF
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-monitor'/>
    <qemu:arg value='unix:$(_vm_xml_escape "$VM_HMP_SOCK"),server=on,wait=off'/>
  </qemu:commandline>
</domain>
EOF
}

vm_start() {
	local vcpus=${VM_VCPUS:-2} mem=${VM_MEM_MIB:-640} pins='' net=0 onreboot=destroy dir p net_id others
	while [ $# -gt 0 ]; do
		case "$1" in
		--net) net=1 ;;
		--reboot) onreboot=restart ;;
		--vcpus) vcpus=${2:-} && shift ;;
		--mem) mem=${2:-} && shift ;;
		--pin0) pins="$pins 0:${2:-}" && shift ;;
		--pin) pins="$pins ${2:-}" && shift ;;
		*)
			_vm_log "vm_start: unknown option '$1'"
			return 1
			;;
		esac
		shift
	done
	if ! [[ $vcpus =~ ^[1-9][0-9]*$ && $mem =~ ^[1-9][0-9]*$ ]]; then
		_vm_log "vm_start: bad --vcpus '$vcpus' or --mem '$mem'"
		return 1
	fi
	for p in $pins; do
		[[ $p =~ ^[0-9]+:[0-9,-]+$ ]] || {
			_vm_log "vm_start: bad pinning '$p' (VCPU:HOSTCPUS)"
			return 1
		}
	done
	if [ "$_VM_SETUP" != 1 ]; then
		_vm_log "vm_start: call vm_setup first"
		return 1
	fi
	VM_NAME=vnoise-test-$$-$RANDOM
	dir=$VM_STATE_DIR/vm-$VM_NAME
	VM_XML=$dir/domain.xml
	VM_CONSOLE=$dir/console.log
	VM_AGENT_SOCK=$dir/agent.sock
	VM_VNOISE_SOCK=$dir/vnoise.sock
	VM_EXEC_SOCK=$dir/exec.sock
	VM_HMP_SOCK=$dir/hmp.sock
	VM_BELL_SOCK=
	[ "${VM_BELL:-1}" = 0 ] || VM_BELL_SOCK=$dir/bell.sock
	VM_SHM_NAME=vnoise-$VM_NAME
	VM_SHM=/dev/shm/$VM_SHM_NAME
	export VM_NAME VM_XML VM_CONSOLE VM_AGENT_SOCK VM_VNOISE_SOCK VM_BELL_SOCK VM_EXEC_SOCK VM_HMP_SOCK VM_SHM_NAME \
		VM_SHM
	if [ ${#VM_AGENT_SOCK} -ge 108 ]; then
		_vm_log "socket path too long: $VM_AGENT_SOCK (shorten VM_STATE_DIR)"
		return 1
	fi
	mkdir -p "$dir" || return 1
	_VM_DOMAINS+=("$VM_NAME")
	VM_TAP='' VM_GUEST_IP='' VM_HOST_IP=''
	if [ "$net" = 1 ]; then
		for _ in 1 2 3 4 5 6 7 8; do # a /24 no other interface uses
			net_id=$((RANDOM % 250 + 1))
			ip -o addr | grep -q " 10\.199\.$net_id\." || break
		done
		VM_GUEST_IP=10.199.$net_id.2 VM_HOST_IP=10.199.$net_id.1
	fi
	export VM_TAP VM_GUEST_IP VM_HOST_IP
	_vm_xml "$VM_NAME" "$vcpus" "$mem" "$pins" "$net" "$onreboot" >"$VM_XML" || return 1
	_VM_START_NS=$(_vm_now_ns)
	if ! _vm_virsh create "$VM_XML" >/dev/null; then
		_vm_log "virsh create failed (domain $VM_NAME, $VM_XML)"
		_vm_show_logs "$VM_NAME"
		return 1
	fi
	if [ "$net" = 1 ]; then
		VM_TAP=$(_vm_virsh domiflist "$VM_NAME" | awk '$2 == "ethernet" { print $1; exit }')
		if [ -z "$VM_TAP" ] || ! ip addr add "$VM_HOST_IP/24" dev "$VM_TAP" ||
			! ip link set "$VM_TAP" up; then
			_vm_log "cannot configure the tap '$VM_TAP' of $VM_NAME"
			return 1
		fi
	fi
	_vm_log "started $VM_NAME ($vcpus vCPUs, $mem MiB${pins:+, pinned$pins}${VM_TAP:+, tap $VM_TAP})"
	_vm_tcg_watch --boot # the guest kernel patches its text while it boots, too
	# Another guest on this 2-CPU machine takes the same CPUs (a test's timing and the clock exchange with
	# them): said, so a failure meanwhile is read with it in mind.
	others=$(_vm_virsh list --name 2>/dev/null | grep -vx -e "$VM_NAME" -e '' | tr '\n' ' ')
	[ -z "$others" ] || _vm_log "note: other domains running beside $VM_NAME: $others(they share the CPUs)"
}

# _vm_tcg_watch [--boot]: once per domain, tests/vm/tcgwatch in the background: it frees vCPUs that QEMU TCG
# left on a stale int3 (tests/vm/README.md, "TCG's stale int3"), saying so on stderr and in the domain's
# tcg.log; it ends with the domain (its monitor closes). The guest kernel's int3 symbols are read once per
# kernel release into .cache/vm (their offsets from one another do not change with KASLR): vm_start starts
# the watch from the boot on (--boot) when they are there, vm_wait_ready otherwise, reading them first.
_vm_tcg_watch() {
	local dir=$VM_STATE_DIR/vm-$VM_NAME syms tool=$VM_BIN_DIR/tests/vm/tcgwatch
	[ -x "$tool" ] && [ -S "$dir/hmp.sock" ] || return 0 # a domain of vm_start's XML
	[ -e "$dir/tcgwatch.pid" ] && kill -0 "$(cat "$dir/tcgwatch.pid")" 2>/dev/null && return 0
	syms=$VM_ROOT/.cache/vm/int3-$VM_KREL.syms
	[ "${1:-}" = --boot ] && [ ! -s "$syms" ] && return 0
	if [ ! -s "$syms" ]; then
		mkdir -p "${syms%/*}" &&
			"$VMEXEC" "$VM_EXEC_SOCK" --timeout 20 -- \
				"grep -E ' (asm_exc_int3|exc_int3|poke_int3_handler|kprobe_int3_handler)\$' /proc/kallsyms" \
				>"$syms.tmp" 2>/dev/null && [ "$(wc -l <"$syms.tmp")" = 4 ] && mv "$syms.tmp" "$syms" || {
			rm -f "$syms.tmp"
			_vm_log "warning: cannot read the guest's int3 symbols: no TCG watch for $VM_NAME"
			return 0
		}
	fi
	# not the caller's stdout (a command substitution would wait for it), not a job the test's `wait` waits for
	"$tool" "$dir/hmp.sock" "$dir/gdb.sock" "$syms" --log "$dir/tcg.log" >/dev/null 9>&- &
	echo $! >"$dir/tcgwatch.pid"
	disown $!
}

# Prints the end of a domain's console and QEMU log on stderr.
_vm_show_logs() {
	local name=$1 f
	[ -s "$VM_STATE_DIR/vm-$name/tcg.log" ] && { echo "---- $VM_STATE_DIR/vm-$name/tcg.log" && cat "$VM_STATE_DIR/vm-$name/tcg.log"; } >&2
	for f in "$VM_STATE_DIR/vm-$name/console.log" "/var/log/libvirt/qemu/$name.log"; do
		[ -s "$f" ] || continue
		echo "---- $f (last 25 lines, QEMU's command line left out)" >&2
		grep -v -e ' \\$' -e '^-' "$f" | tail -n 25 | tr -d '\r' >&2
	done
}

_vm_running() { [ "$(_vm_virsh domstate "$1" 2>/dev/null)" = running ]; }

vm_wait_ready() {
	local timeout=${1:-120} deadline now start=$_VM_START_NS qstart
	deadline=$(($(_vm_now_ns) + timeout * 1000000000))
	# a domain (re)created outside vm_start: count from its QEMU's start (libvirt's pid file)
	qstart=$(stat -c %.9Y "/run/libvirt/qemu/$VM_NAME.pid" 2>/dev/null | tr -d .)
	[ -n "$qstart" ] && [ "$qstart" -gt $((start + 5000000000)) ] && start=$qstart
	while :; do
		if "$VMEXEC" "$VM_EXEC_SOCK" --ping --timeout 1 2>/dev/null; then
			now=$(_vm_now_ns)
			VM_BOOT_SECS=$(awk -v d=$((now - start)) 'BEGIN { printf "%.1f", d / 1e9 }')
			export VM_BOOT_SECS
			echo "vm: $VM_NAME ready ${VM_BOOT_SECS} s after start"
			_vm_tcg_watch
			return 0
		fi
		now=$(_vm_now_ns)
		if ! _vm_running "$VM_NAME"; then
			_vm_log "$VM_NAME is not running any more"
			_vm_show_logs "$VM_NAME"
			return 1
		fi
		if [ "$now" -ge "$deadline" ]; then
			_vm_log "$VM_NAME not ready after $timeout s"
			_vm_show_logs "$VM_NAME"
			return 1
		fi
		sleep 0.2
	done
}

vm_qga_ping() {
	local timeout=${1:-30} deadline out
	deadline=$(($(date +%s) + timeout))
	while :; do
		out=$(_vm_virsh qemu-agent-command "$VM_NAME" '{"execute":"guest-ping"}' 2>&1) &&
			[ "$out" = '{"return":{}}' ] && {
			echo "$out"
			return 0
		}
		[ "$(date +%s)" -ge "$deadline" ] && break
		sleep 0.3
	done
	_vm_log "qemu-ga in $VM_NAME does not answer guest-ping after $timeout s: $out"
	return 1
}

vm_qga_stop() {
	# shellcheck disable=SC2016 # expanded by the guest's shell
	vm_exec 'touch /tmp/no-qemu-ga; for i in 1 2 3 4 5 6 7 8 9 10; do
		pid=$(pidof qemu-ga) || exit 0; kill $pid; sleep 0.3; done; echo "qemu-ga still runs"; exit 1' >&2
}

vm_qga_start() { vm_exec 'rm -f /tmp/no-qemu-ga' >&2; }

# _vm_host_bin: the vnoise-host of the test's build (lib.bash's BUILD, relative to the tree), else build/.
_vm_host_bin() {
	local b=${BUILD:-build}
	[[ $b == /* ]] || b=$VM_ROOT/$b
	printf '%s/vnoise-host' "$b"
}

# vm_agent_running [TIMEOUT_S]: wait until the guest's `vnoise-guest agent` measures and has published (its
# status through vnoise's own channel org.vnoise.0, `vnoise-host agent -D $VM_NAME status --json`, says
# running, published > 0; the QGA port org.qemu.guest_agent.0 is not needed: qemu-ga may hold it). Start loads
# after it: the agent attaches its eBPF programs at start (live kernel text patching, see guest/bpf/ktrace.c).
vm_agent_running() {
	local timeout=${1:-60} out deadline host
	host=$(_vm_host_bin)
	[ -x "$host" ] || {
		_vm_log "$host not built"
		return 1
	}
	deadline=$(($(date +%s) + timeout))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		out=$("$host" agent -D "$VM_NAME" --connect "$VM_URI" --timeout 5s status --json 2>&1) &&
			jq -e '.state == "running" and .published > 0' <<<"$out" >/dev/null 2>&1 &&
			return 0
		sleep 0.3
	done
	_vm_log "the agent in $VM_NAME is not running after $timeout s: ${out:-no answer}"
	return 1
}

# vm_start_agent ARGS -- VM_START_ARGS...: start a VM (vm_start + vm_wait_ready) and `vnoise-guest agent ARGS`
# in it, and wait until the agent runs (vm_agent_running). Under QEMU TCG the guest sometimes locks up while
# the agent attaches its eBPF programs (tests/vm/README.md, "Known issue under QEMU TCG"): when the guest stops answering
# altogether, say so and do it once more on a fresh VM. An agent that fails in a live guest is a failure.
vm_start_agent() {
	local args=() attempt
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	for attempt in 1 2; do
		vm_start "$@" || return 1
		vm_wait_ready 90 || return 1
		vm_exec "vnoise-guest agent ${args[*]} >/tmp/agent.log 2>&1 &" || return 1
		vm_agent_running 40 && return 0
		vm_exec --timeout 10 true >/dev/null 2>&1 && { vm_exec 'cat /tmp/agent.log'; return 1; }
		[ "$attempt" = 2 ] && { _vm_log "the guest locked up twice while the agent started"; return 1; }
		_vm_log "note: the TCG guest locked up while the agent attached its eBPF programs" \
			"(known issue); once more on a fresh VM"
		grep -m1 "soft lockup" "$VM_CONSOLE" >&2
		vm_destroy
	done
	return 1
}

# vm_hagent ARGS...: `vnoise-host agent` for the harness domain (the build's vnoise-host)
vm_hagent() { "$(_vm_host_bin)" agent -D "$VM_NAME" --connect "$VM_URI" "$@"; }

# vm_agent_status: until `vnoise-host agent status --json` answers (10 s); its output in $out
vm_agent_status() {
	local _
	for _ in $(seq 50); do
		out=$(vm_hagent --timeout 2s status --json 2>&1) && return 0
		sleep 0.2
	done
	return 1
}

# vm_epoch_of: the first "epoch" of the JSON on stdin, as text (jq 1.6 reads numbers as doubles: epochs are
# nanosecond times, consecutive ones compare equal there)
vm_epoch_of() { grep -o '"epoch":[0-9]*' | head -1 | cut -d: -f2; }

# vm_mpi_files ML: " SRC:DST ..." to put OpenMPI into the busybox initramfs: everything ldd lists for mpirun,
# orted, ML and every OpenMPI/PMIx plugin, at its path (links resolved), their data directories and mpirun;
# returns 1 when ldd finds nothing
vm_mpi_files() {
	local libs l
	# shellcheck disable=SC2046 # word lists
	libs=$({
		for f in /usr/bin/orterun /usr/bin/orted "$1" $(find /usr/lib/x86_64-linux-gnu/openmpi/lib \
			/usr/lib/x86_64-linux-gnu/pmix2 /usr/lib/x86_64-linux-gnu/hwloc -name '*.so*' -type f 2>/dev/null); do
			ldd "$f" 2>/dev/null | awk '/=> \//{ print $3 } /^\t\/.*ld-linux/{ print $1 }'
		done
	} | sort -u)
	[ -n "$libs" ] || return 1
	for l in $libs; do printf ' %s:%s' "$(readlink -f "$l")" "$l"; done
	for d in /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix \
		/usr/lib/x86_64-linux-gnu/pmix2/share /usr/share/openmpi /etc/openmpi /usr/lib/x86_64-linux-gnu/hwloc; do
		[ -e "$d" ] && printf ' %s:%s' "$d" "$d"
	done
	printf ' %s' /usr/bin/orterun:/usr/bin/orterun /usr/bin/orted:/usr/bin/orted /usr/bin/orterun:/usr/bin/mpirun
}

# vm_reboot: reboot -f the guest and wait (60 s of wall time) until it answers with a new boot id; 1 if it
# did not come back. Under QEMU TCG the guest sometimes spins in its reset and never boots again (both vCPU
# threads busy, nothing on the console): then say so and reset it once more through libvirt (`virsh reset`,
# the same QEMU and the same ivshmem region, as reboot -f), as vm_start_agent does for the agent start.
# A guest that does not answer is probed with --ping (1 s): a command waits its timeout plus 10 s.
vm_reboot() {
	local boot attempt
	rm -f "$VM_STATE_DIR/vm-$VM_NAME/hung" # a reboot, and a reset, start the guest afresh
	boot=$(vm_exec 'cat /proc/sys/kernel/random/boot_id')
	"$VMEXEC" "$VM_EXEC_SOCK" --timeout 5 -- '(sleep 0.5; reboot -f) >/dev/null 2>&1 &' >/dev/null
	for attempt in 1 2; do
		_vm_new_boot "$boot" 60 && return 0
		[ "$attempt" = 2 ] && break
		_vm_log "note: the TCG guest did not come back from reboot -f in 60 s (known issue); virsh reset"
		_vm_virsh reset "$VM_NAME" >/dev/null || return 1
	done
	_vm_log "$VM_NAME did not come back from its reboot"
	return 1
}

# _vm_new_boot OLD_BOOT_ID SECONDS: until the guest answers with another boot id (0) or SECONDS pass (1)
_vm_new_boot() {
	local deadline b
	deadline=$(($(_vm_now_ns) + $2 * 1000000000))
	while [ "$(_vm_now_ns)" -lt "$deadline" ]; do
		if "$VMEXEC" "$VM_EXEC_SOCK" --ping --timeout 1 2>/dev/null; then
			b=$("$VMEXEC" "$VM_EXEC_SOCK" --timeout 2 -- 'cat /proc/sys/kernel/random/boot_id' 2>/dev/null) &&
				[ -n "$b" ] &&
				[ "$b" != "$1" ] && return 0
		fi
		sleep 0.5
	done
	return 1
}

vm_exec() {
	local timeout=${VM_EXEC_TIMEOUT:-60} hung=$VM_STATE_DIR/vm-${VM_NAME:-}/hung rc
	if [ "${1:-}" = --timeout ]; then
		timeout=${2:-}
		shift 2
	fi
	[ "${1:-}" = -- ] && shift
	# A TCG guest that locked up (tests/vm/README.md, "Known issue under QEMU TCG") answers nothing again: once a command
	# got no reply and a ping got no PONG either, every later command fails at once with the same words
	# (run-all retries the test on a fresh VM), instead of each waiting its timeout: a probe loop of 30
	# tries took 36 minutes. vm_reboot clears it.
	if [ -e "$hung" ]; then
		echo "vmexec: no reply from the guest (it stopped answering at $(cat "$hung"); not asked again)" >&2
		return 124
	fi
	"$VMEXEC" "$VM_EXEC_SOCK" --timeout "$timeout" -- "$@"
	rc=$?
	if [ "$rc" -eq 124 ] && [ -n "${VM_NAME:-}" ] && [ -d "${hung%/hung}" ] &&
		! "$VMEXEC" "$VM_EXEC_SOCK" --ping --timeout 10 2>/dev/null; then
		date -u +%T >"$hung"
		_vm_log "$VM_NAME stopped answering (no reply, no PONG in 10 s): later commands fail at once"
	fi
	return "$rc"
}

# _vm_wait_gone NAME: until libvirt no longer lists it (a transient domain vanishes when it stops), 15 s.
_vm_wait_gone() {
	local _
	for _ in $(seq 150); do
		_vm_virsh domstate "$1" >/dev/null 2>&1 || return 0
		sleep 0.1
	done
	return 1
}

vm_destroy() {
	local name=${1:-${VM_NAME:-}} dir
	[ -n "$name" ] || return 0
	if _vm_virsh domstate "$name" >/dev/null 2>&1; then
		_vm_virsh destroy "$name" >/dev/null 2>&1
		_vm_wait_gone "$name" || _vm_log "warning: $name still listed after destroy"
	fi
	dir=$VM_STATE_DIR/vm-$name
	[ -e "$dir/tcgwatch.pid" ] && kill "$(cat "$dir/tcgwatch.pid")" 2>/dev/null
	rm -f "/dev/shm/vnoise-$name" "$dir/agent.sock" "$dir/vnoise.sock" "$dir/exec.sock"
}

vm_restart_libvirtd() {
	"$VM_ROOT/tests/vm/setup-host.sh" --restart-libvirtd || return 1
	[ -z "${VM_NAME:-}" ] || _vm_running "$VM_NAME" || {
		_vm_log "$VM_NAME is not running after the libvirtd restart"
		return 1
	}
}

# _vm_alive PID: the process exists and is not a zombie (this sandbox reaps slowly)
_vm_alive() {
	local st
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ]
}

# vm_stop_libvirtd: stop libvirtd (TERM, KILL after 10 s); remembers whether host.state names it (ours).
_VM_LIBVIRTD_STOPPED=0
_VM_LIBVIRTD_LINE=
vm_stop_libvirtd() {
	local pid st _
	pid=$(pidof -s libvirtd) || {
		_vm_log "vm_stop_libvirtd: libvirtd does not run"
		return 1
	}
	st=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f20)
	_VM_LIBVIRTD_LINE=$(grep -x "daemon libvirtd $pid $st" "$VM_STATE_DIR/host.state" 2>/dev/null)
	_VM_LIBVIRTD_STOPPED=1
	kill -TERM "$pid" || return 1
	for _ in $(seq 100); do
		_vm_alive "$pid" || break
		sleep 0.1
	done
	_vm_alive "$pid" && kill -KILL "$pid" 2>/dev/null
	rm -f /run/libvirtd.pid
	_vm_log "libvirtd (pid $pid) stopped"
}

# vm_start_libvirtd: start libvirtd again after vm_stop_libvirtd, without any fd of ours (a held flock, e.g.
# /tmp/vnoise-vm.lock, would outlive the test), and wait (30 s) until virsh answers.
vm_start_libvirtd() {
	local pid _
	[ "$_VM_LIBVIRTD_STOPPED" = 1 ] || return 0
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			[ "$fd" -gt 2 ] && eval "exec $fd>&-"
		done
		LIBVIRT_LOG_OUTPUTS="3:file:/var/log/libvirt/libvirtd.log" exec libvirtd -d -p /run/libvirtd.pid \
			</dev/null >/dev/null 2>&1
	) || {
		_vm_log "libvirtd -d failed (see /var/log/libvirt/libvirtd.log)"
		return 1
	}
	for _ in $(seq 50); do
		pid=$(cat /run/libvirtd.pid 2>/dev/null)
		[ -n "$pid" ] && [ -d "/proc/$pid" ] && break
		pid=
		sleep 0.1
	done
	[ -n "$pid" ] || {
		_vm_log "libvirtd did not write /run/libvirtd.pid"
		return 1
	}
	_VM_LIBVIRTD_STOPPED=0
	if [ -n "$_VM_LIBVIRTD_LINE" ]; then
		flock -w 120 "$VM_STATE_DIR/lock" sed -i "s/^$_VM_LIBVIRTD_LINE\$/daemon libvirtd $pid $(sed \
			's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f20)/" "$VM_STATE_DIR/host.state"
	fi
	_VM_LIBVIRTD_LINE=
	for _ in $(seq 300); do
		virsh -c "$VM_URI" version >/dev/null 2>&1 && {
			_vm_log "libvirtd started again (pid $pid)"
			return 0
		}
		sleep 0.1
	done
	_vm_log "libvirtd does not answer after 30 s"
	return 1
}

vm_teardown() {
	local rc=${1:-0} name
	[ "$_VM_SETUP" = 1 ] || return 0
	[ "$_VM_LIBVIRTD_STOPPED" = 1 ] && vm_start_libvirtd
	_VM_SETUP=0
	if [ "${VM_KEEP:-0}" = 1 ]; then
		_vm_log "VM_KEEP=1: leaving ${_VM_DOMAINS[*]:-no domain} and the daemons running"
		return 0
	fi
	for name in "${_VM_DOMAINS[@]}"; do
		[ "$rc" -ne 0 ] && _vm_show_logs "$name"
		vm_destroy "$name"
		rm -rf "${VM_STATE_DIR:?}/vm-$name"
		rm -f "/var/log/libvirt/qemu/$name.log"
	done
	_VM_DOMAINS=()
	VM_SETUP_OWNER=$$ "$VM_ROOT/tests/vm/setup-host.sh" --teardown --user "$_VM_USER"
	[ -n "$_VM_OWN_GUEST_DIR" ] && rm -rf "$_VM_OWN_GUEST_DIR"
	_VM_OWN_GUEST_DIR=
	return 0
}
