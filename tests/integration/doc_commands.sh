#!/bin/bash
# The commands the docs show a user run, as shown. Extracted from the files themselves, not copied: the
# code blocks of README.md's "## Quick starts" and "## Developing" sections, docs/CLI.md's `$ command`
# examples (with the line each says it prints) and the EXAMPLES of the man pages. Every extracted command
# must have a row in the table below, and every row a command in the docs (a new or changed command fails
# until the table says how to run it here). Each runnable command runs here — guest commands on this
# machine, host commands against a test VM (real libvirtd, QEMU TCG, the guest agent measuring), make
# targets as typed — with these changes only (adapt()): a duration with a unit becomes 3 s, a command that
# would run until Ctrl-C gets -d 3s, the README's example domain becomes the test VM, an address of another
# network becomes loopback, a key file and an ./app of the test's own, MPI on 2 ranks as root. It must exit as
# the table says and print the table's line (ERE, stdout and stderr together). A command that cannot run on
# a test machine is listed with the reason. The checker itself is tested first: a quick-start command broken
# on purpose (a duration without its unit) and a command missing from the table must both fail.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
require_tools mpirun make awk sed
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"

# The table: command as the docs write it | exit status | how | line it must print (ERE) or why it is skipped.
# how: run (here), vm (against the test VM), bg (in the background until the next vm row or the end,
# checked then), skip.
TABLE=$(
	cat <<'EOF'
vnoise-guest measure -c all -d 10s | 0 | run | ^ CPU  RUNTIME\(us\)  +NOISE\(us\)  %CPU_AVAIL
vnoise-guest top -c all | 0 | run | ^vnoise top: the last period
vnoise-guest monitor --pid $(pidof myapp) -d 60s | 0 | run | pid:[0-9]+ \(myapp\)$
vnoise-guest mpi -- mpirun -np 8 ./app | 0 | run | ^vnoise-guest: job 'mpi': 2 ranks registered, 0 refused
vnoise-guest mpi -- mpirun -np 4 ./app | 0 | run | ^vnoise-guest: job 'mpi': 2 ranks registered, 0 refused
vnoise-host collect -k /etc/vnoise.key --listen 10.0.0.1:7361 | 0 | bg | ^datagrams: [1-9][0-9]* received, [1-9][0-9]* used, 0 lost
vnoise-guest mpi --job cfd --collector 10.0.0.1:7361 -k /etc/vnoise.key -- mpirun -np 8 ./app | 0 | run | ^vnoise-guest: job 'cfd': 2 ranks registered
vnoise-guest record -c 0 -d 1m -o noise.vnr && vnoise-guest report noise.vnr | 0 | run | ^ CPU  RUNTIME\(us\)
vnoise-guest report noise.vnr --html noise.html | 0 | run | ^$
mpirun -np 4 vnoise-bench detect --op allreduce --runs 20 | 0 | run | ^summary: n 3, mean
vnoise-bench sweep --quick | 0 | run | ^Noise level +0% +1%$
make deps measure | 0 | run | ^ CPU  RUNTIME\(us\)  +NOISE\(us\)  %CPU_AVAIL
make deps check | 0 | skip | the whole suite, of which this test is a part
vnoise-guest measure -d 99999999999999999999 | 2 | run | =
vnoise-guest measure -d 10 | 2 | run | =
vnoise-guest --version | 0 | run | ^vnoise-guest [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]+(-dirty)?\)$
apt install ./vnoise-guest_*_amd64.deb | 0 | skip | installs a package into this system: deb.sh builds the packages and installs them into a scratch root
apt install ./vnoise-host_*_amd64.deb | 0 | skip | installs a package into this system: deb.sh builds the packages and installs them into a scratch root
apt install ./vnoise-guest_*.deb ./vnoise-mpi_*.deb | 0 | skip | installs packages into this system: deb.sh builds the packages and installs them into a scratch root
systemctl enable --now vnoise-host | 0 | skip | systemd is not PID 1 on the test machines: shipped_config.sh runs the unit's ExecStart with its options, install.sh verifies the unit
vnoise-host list | 0 | vm | ^  vcpu 0 
vnoise-host top -D web1 | 0 | vm | ^  vCPU +tid pCPU +cpu% +steal%
vnoise-host enable -D web1 --config | 0 | vm | : enabled \([0-9]+ device changes\)$
vnoise-host top --guest -D web1 | 0 | vm | ^  channel ok, epoch [0-9]+, agent running
vnoise-host top | 0 | vm | ^  vCPU +tid pCPU +cpu% +steal%
vnoise-host top --guest -D vm1 | 0 | vm | ^  channel ok, epoch [0-9]+, agent running
vnoise-host record --guest -d 10m -o host.vhr && vnoise-host report --guest host.vhr | 0 | vm | ^vnoise-host host.vhr --guest: 3.0 s
vnoise-host report --guest host.vhr --html host.html | 0 | vm | ^$
vnoise-host serve --metrics 127.0.0.1:9464 | 0 | vm | serving /metrics on port [0-9]+
EOF
)

# doc_commands: "SOURCE<TAB>COMMAND<TAB>DOC_OUTPUT" for every command the docs show (DOC_OUTPUT: the line
# docs/CLI.md says the command prints, else empty). README: code blocks (fenced, or indented by 4) of the
# "Quick starts" and "Developing" sections, trailing "# comments" dropped; man pages: .nf/.fi blocks of
# EXAMPLES, roff's \- read as -.
doc_commands() {
	local readme=${1:-$ROOT/README.md}
	awk -v src=README.md '
		/^## / { sec = ($0 ~ /^## (Quick starts|Developing)/); fence = 0; next }
		!sec { next }
		/^```/ { fence = !fence; next }
		fence || /^    [^ ]/ {
			line = $0; sub(/^ +/, "", line); sub(/[ \t]+#.*$/, "", line); sub(/[ \t]+$/, "", line)
			if (line != "") printf "%s\t%s\t\n", src, line
		}' "$readme"
	awk -v src=docs/CLI.md '
		want { o = $0; sub(/^ +/, "", o); printf "%s\t%s\t%s\n", src, cmd, o; want = 0; next }
		/^    \$ / { cmd = $0; sub(/^    \$ /, "", cmd); want = 1 }' "$ROOT/docs/CLI.md"
	local m
	for m in "$ROOT"/man/*.[18]; do
		awk -v src="man/${m##*/}" '
			/^\.SH/ { ex = ($0 ~ /^\.SH EXAMPLES/); next }
			ex && /^\.nf/ { nf = 1; next }
			ex && /^\.fi/ { nf = 0; next }
			ex && nf && !/^\./ { line = $0; gsub(/\\-/, "-", line); printf "%s\t%s\t\n", src, line }' "$m"
	done
}

# row CMD: sets RC HOW WANT from the table's row for CMD; status 1 when there is none
row() {
	local line
	line=$(awk -F' [|] ' -v c="$1" '$1 == c { printf "%s\t%s\t%s", $2, $3, $4; exit }' <<<"$TABLE")
	[ -n "$line" ] || return 1
	IFS=$'\t' read -r RC HOW WANT <<<"$line"
}

# adapt CMD: the command as it runs here (see the header)
adapt() {
	local c=$1
	c=$(sed -E 's/(-d|--duration) [0-9]+(ms|s|m|h)\b/\1 3s/g' <<<"$c")
	if [[ $c =~ ^vnoise-(guest|host)\ (top|serve|collect)( |$) ]] && [[ ! $c =~ \ (-d|--duration)\  ]]; then
		c="$c -d 3s"
		[[ $c =~ collect ]] && c="${c% -d 3s} -d 8s --no-store"
	fi
	[[ $c =~ ^vnoise-host\ enable ]] && c=${c/-D web1/-D $PDOM}
	c=$(sed -E -e "s/-D (web1|vm1)\b/-D $VM_NAME_Q/g" \
		-e "s/10\.0\.0\.1:7361/127.0.0.1:$CPORT/g" -e "s/127\.0\.0\.1:9464/127.0.0.1:0/g" \
		-e "s|/etc/vnoise\.key|$TMP/vnoise.key|g" \
		-e 's/mpirun -np [0-9]+/mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2/g' \
		-e "s|\./app\b|$BUILD/tests/tools/mpiloop --iters 50|g" \
		-e 's/ --runs 20\b/ --runs 3/' \
		-e 's/sweep --quick$/sweep --quick --levels 0,1 --runs 2 --warmup 0 --run-length 200ms --passes 1/' <<<"$c")
	[[ $c == "vnoise-host top" ]] && c="vnoise-host top -d 3s"
	[[ $c =~ ^make\  ]] && c="make --no-print-directory -C $ROOT ${c#make }"
	printf '%s' "$c"
}

# check_cmd CMD RC WANT [DOC_OUTPUT]: runs CMD adapted, in $WORK with the build's binaries first in PATH;
# status 0 when it exits RC and prints a line matching WANT ("=": DOC_OUTPUT itself; "^$": nothing is
# asked); else a FAIL-style line on stdout, status 1
check_cmd() {
	local cmd run rc out
	cmd=$1
	run=$(adapt "$cmd")
	out=$(cd "$WORK" && PATH="$BUILD:$PATH" timeout 300 bash -c "$run" 2>&1 </dev/null)
	rc=$?
	printf '%s\n' "$out" >"$TMP/last.out"
	if [ "$rc" -ne "$2" ]; then
		echo "'$cmd' (run as '$run') exited $rc, want $2: $(tail -3 <<<"$out" | tr '\n' ' ')"
		return 1
	fi
	if [ "$3" = = ]; then
		grep -qxF -- "$4" <<<"$out" || {
			echo "'$cmd' does not print what the doc says ('$4'): $(head -3 <<<"$out" | tr '\n' ' ')"
			return 1
		}
	elif [ "$3" != '^$' ] && ! grep -qE -- "$3" <<<"$out"; then
		echo "'$cmd' (run as '$run') prints no line matching /$3/; it printed:"
		sed 's/^/    /' <<<"$out" | head -40
		return 1
	fi
	return 0
}

WORK=$TMP/work
mkdir -p "$WORK"
make_key "$TMP/vnoise.key"
CPORT=$((20000 + RANDOM % 20000))
VM_NAME_Q=none PDOM=none
cp /bin/sleep "$TMP/myapp"
"$TMP/myapp" 600 &
PIDS+=($!)

# ---- the checker itself ----
doc_commands >"$TMP/cmds"
[ "$(grep -c . "$TMP/cmds")" -ge 20 ] || fail "only $(grep -c . "$TMP/cmds") commands found in the docs"
first=$(awk -F'\t' '$1 == "README.md" && $2 ~ /^vnoise-guest / { print $2; exit }' "$TMP/cmds")
[ -n "$first" ] || fail "no vnoise-guest command in README.md's quick starts"
row "$first" || fail "the first quick-start command '$first' has no row"
broken=$(sed -E 's/(-d [0-9]+)[a-z]+/\1/' <<<"$first")
[ "$broken" != "$first" ] || fail "cannot break '$first' (it has no duration)"
msg=$(check_cmd "$broken" "$RC" "$WANT") && fail "the checker passes '$broken', a quick start broken on purpose"
ok "the checker fails a quick start broken on purpose: $msg"
sed 's/^vnoise-guest top -c all/vnoise-guest top -c all --no-such-option/' "$ROOT/README.md" >"$TMP/README.broken"
new=$(doc_commands "$TMP/README.broken" | cut -f2 | grep -- --no-such-option)
[ -n "$new" ] && ! row "$new" || fail "a changed README command is not told apart from the table's"
ok "a changed README command has no row, so it fails ('$new')"

# ---- coverage: every command has a row, every row a command ----
bad=0
while IFS=$'\t' read -r src cmd _; do
	row "$cmd" || {
		echo "FAIL: $src shows '$cmd' and the table of $0 does not say how to run it here"
		bad=1
	}
done <"$TMP/cmds"
while IFS= read -r cmd; do
	grep -qF -- "$(printf '\t%s\t' "$cmd")" "$TMP/cmds" || {
		echo "FAIL: the table has '$cmd', which no doc shows any more"
		bad=1
	}
done < <(awk -F' [|] ' 'NF >= 4 { print $1 }' <<<"$TABLE")
[ "$bad" = 0 ] || fail "the docs' commands and the table differ (above)"
ok "$(cut -f2 "$TMP/cmds" | sort -u | wc -l) distinct commands in README.md, docs/CLI.md and man/, each in the table"

# ---- run them: this machine first, then the VM ----
BG=()
run_phase() {
	local phase=$1 src cmd doc seen=" " n=0 msg p
	while IFS=$'\t' read -r src cmd doc; do
		row "$cmd"
		case "$HOW" in
		skip)
			[ "$phase" = run ] && [[ $seen != *"|$cmd|"* ]] && echo "skipped: '$cmd' ($src): $WANT"
			seen="$seen|$cmd|"
			continue
			;;
		vm) [ "$phase" = vm ] || continue ;;
		run | bg) [ "$phase" = run ] || continue ;;
		esac
		[[ $seen == *"|$cmd|"* ]] && continue
		seen="$seen|$cmd|"
		if [ "$HOW" = bg ]; then
			(msg=$(check_cmd "$cmd" "$RC" "$WANT" "$doc") || { echo "$msg" >"$TMP/bg.$BASHPID.fail"; }) &
			BG+=($!)
			sleep 1
			continue
		fi
		msg=$(check_cmd "$cmd" "$RC" "$WANT" "$doc") || fail "$src: $msg"
		n=$((n + 1))
		ok "$src: $cmd"
	done <"$TMP/cmds"
	for p in "${BG[@]}"; do
		wait "$p"
		[ -e "$TMP/bg.$p.fail" ] && fail "$(cat "$TMP/bg.$p.fail")"
		ok "in the background: $(awk -F' [|] ' '$3 == "bg" { print $1 }' <<<"$TABLE" | head -1)"
	done
	BG=()
}
run_phase run

vm_setup || fail "vm_setup"
vm_start_agent --cpus 0 --duration 600s -- --pin0 0 --pin 1:1 || fail "the guest agent does not run"
VM_NAME_Q=$VM_NAME
# `enable --config` changes a domain's definition: a defined domain like the harness's, without vnoise's
# devices (never started)
PDOM=vnoise-test-$$-$RANDOM
mkdir -p "$VM_STATE_DIR/vm-$PDOM"
cat >"$TMP/pdom.xml" <<XML
<domain type='qemu'>
  <name>$PDOM</name>
  <memory unit='MiB'>640</memory>
  <vcpu placement='static'>2</vcpu>
$(vm_xml_boot "console=ttyS0 quiet panic=-1" "$VM_STATE_DIR/vm-$PDOM/console.log")
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
</domain>
XML
virsh -q -c qemu:///system define "$TMP/pdom.xml" >/dev/null || fail "virsh define $PDOM"
trap '_dc_rc=$?; virsh -q -c qemu:///system undefine "$PDOM" >/dev/null 2>&1; rm -rf "$VM_STATE_DIR/vm-$PDOM"; (exit $_dc_rc); _vm_on_exit' EXIT
run_phase vm
exit 0
