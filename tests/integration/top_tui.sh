#!/bin/bash
# vnoise-host top's interactive screen against a real QEMU TCG domain, driven in a
# detached tmux session: vCPU 0 pinned to host CPU 0 and kept busy by a guest sampler, a host hog with a
# distinctive comm pinned to CPU 0 (3 ms every 10 ms).
#  - 120x40: the header (host CPU, vnoise's cost, losses) and a row for the domain; the default sort (prmpt%▼)
#    on the state line, no mark between two headers; Enter expands the domain to its vCPU rows; N sorts by name (marker on "domain", vCPU 0 above
#    vCPU 1), N again reverses it (vCPU 1 above vCPU 0); the selected vCPU 0 opens the detail pane, where the
#    hog is the top preemptor (and in the row's top-preemptor column); p pauses, + and - change the period,
#    / filters by name, h shows the help.
#  - resized to 80x24 (SIGWINCH): still the header, the row and the pane, no line past 80 cells; the status
#    line whole (with its key hint) or cut with an ellipsis.
#  - q, SIGTERM, ^C and SIGSEGV: the terminal is back (no alternate screen, the same stty settings, icanon and
#    echo on, tput answers).
#  - --guest: the guest columns; g hides them.
#  - with a pipe and with --batch: the line format, no alternate screen.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
require_tools tmux
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"
SOCK=vntui$$
T="tmux -L $SOCK"
trap '$T kill-server 2>/dev/null; cleanup_lib' EXIT
START=$(date +%s)

vm_setup || fail "vm_setup"
vm_start --pin0 0 --pin 1:1 || fail "vm_start"
vm_wait_ready 90 || fail "guest not ready"
vm_exec "/bin/vnoise-guest measure --cpus 0 --duration 80s --helper proc -q >/dev/null 2>&1 &" ||
	fail "cannot start the guest load"
hog="vnhog$$"
hog=${hog:0:11}
"$VG" inject --cpu 0 --comm "$hog" --spike 3ms --every 10ms --duration 80s --quiet >"$TMP/hog.out" 2>&1 &
PIDS+=($!)
dom=$VM_NAME
# a row of the name column: the name may be cut in the middle (an ellipsis), its start and end shown
row="${VM_NAME:0:4}[^ ]*${VM_NAME: -2}"

. "$ROOT/tests/integration/tmux.bash"
# the terminal is back: no alternate screen, the settings from before, canonical mode with echo
restored() {
	local what=$1
	[ "$(alt)" = 0 ] || fail "$what: the pane is still on the alternate screen"
	keys "stty -g >$TMP/stty.after; stty -a >$TMP/stty.a; tput cols >$TMP/tput.out; echo RESTORED-\$?" Enter
	wait_for "RESTORED-0" 10
	cmp -s "$TMP/stty.before" "$TMP/stty.after" || fail "$what: stty settings changed: $(cat "$TMP/stty.after")"
	{ grep -qE '(^| )icanon( |$)' "$TMP/stty.a" && grep -qE '(^| )echo( |$)' "$TMP/stty.a"; } ||
		fail "$what: not in canonical mode with echo: $(cat "$TMP/stty.a")"
	[ "$(cat "$TMP/tput.out")" -gt 0 ] || fail "$what: tput does not answer"
	keys "clear" Enter
	ok "$what: terminal restored (no alternate screen, stty as before, icanon echo, tput cols $(cat "$TMP/tput.out"))"
}

$T new-session -d -s top -x 120 -y 40 -e LANG=C.UTF-8 -e LC_ALL= "bash --norc --noprofile" ||
	fail "cannot start tmux"
keys "PS1='$ '; ulimit -c 0; stty -g >$TMP/stty.before; echo READY" Enter
wait_for "^READY"
keys "clear" Enter

# ---- 120x40 ----
keys "$VH top -D $VM_NAME --period 1s 2>$TMP/top.err; echo TOP-EXIT=\$?" Enter
wait_for "lost: dispatch [0-9]+, events"
wait_for "[▸+] $row"
[ "$(alt)" = 1 ] || fail "the screen is not on the alternate screen"
screen | grep -q "vnoise-host top - qemu:///system  period 1s" || fail "no title line"
wait_for "host CPU [0-9.<]+% of [0-9]+ \| vnoise [0-9.<]+% \(BPF [0-9.<]+%\)" # from the 2nd period
screen | grep -qE "domain +steal% +out% +prmpt% top preemptor +exits/s +hirq% prmpt% history" ||
	fail "column header missing (or the sort mark glued between two columns)"
screen | grep -qE "sort prmpt%▼" || fail "the state line does not say the sort and its direction (prmpt%▼)"
screen | grep -q "vCPU 0" && fail "vCPU rows shown before the domain was expanded"
screen | sed 's/^/    | /'
ok "120x40: header, cost line, column header, the sort (prmpt%▼) on the state line, a row for $VM_NAME"

keys Enter
wait_for "^ +vCPU 1 "
wait_for "^ +vCPU 0 "
ok "Enter expands the domain: vCPU rows"
keys N
wait_for "domain▲"
[ "$(line_of '^ +vCPU 0 ')" -lt "$(line_of '^ +vCPU 1 ')" ] || fail "sorted by name: vCPU 0 is not above vCPU 1"
keys N
wait_for "domain▼"
[ "$(line_of '^ +vCPU 1 ')" -lt "$(line_of '^ +vCPU 0 ')" ] || fail "reversed: vCPU 1 is not above vCPU 0"
ok "N sorts by name (▲, vCPU 0 first), N again reverses it (▼, vCPU 1 first)"
keys N Down
wait_for "vCPU 0 of $dom"
wait_for "preemptors \(% out-time\)"
# the hog: first in the pane's preemptor list and in the vCPU 0 row's top-preemptor column
wait_for "^ +vCPU 0 .* $hog\[" 10
wait_for "^$hog\[[0-9]+\] +[0-9.]+%" 10
screen | sed 's/^/    | /'
ok "vCPU 0 selected: detail pane, $hog the top preemptor (row and pane)"

keys p
wait_for "\[PAUSED\]"
keys p
wait_for "resumed"
keys +
wait_for "period 2s  up"
keys -
wait_for "period 1s  up"
keys / z z z Enter
wait_for "no domain matches the filter"
keys / Escape
wait_for "[▾-] $row"
keys h
wait_for "vnoise-host top: keys"
keys Space
wait_for "lost: dispatch"
keys h
wait_for "vnoise-host top: keys"
keys q # any key leaves the help, q too: top goes on
wait_for "lost: dispatch"
screen | grep -q "TOP-EXIT=" && fail "q on the help screen quit top"
ok "p pauses and resumes, + and - change the period, / filters, h shows the help, q leaves it"

# ---- 80x24 (SIGWINCH) ----
$T resize-window -t top -x 80 -y 24 || fail "cannot resize the pane"
wait_for "vCPU 0 of $dom"
sleep 1.5 # a period drawn at the new size
screen >"$TMP/s80"
sed 's/^/    | /' "$TMP/s80"
grep -q "lost: dispatch" "$TMP/s80" || fail "80x24: no header"
grep -qE "[▾-] $row" "$TMP/s80" || fail "80x24: no row for the domain (its name's start and end)"
grep -qE "domain. +steal% +out% +prmpt% top preemp[a-z]* +exits/s +hirq%( |$)" "$TMP/s80" ||
	fail "80x24: the host columns are not all there"
grep -qE "^$hog\[" "$TMP/s80" || fail "80x24: the detail pane lost the hog"
[ "$(LC_ALL=C.UTF-8 wc -L <"$TMP/s80")" -le 80 ] || fail "80x24: a line is wider than 80 cells"
[ "$(wc -l <"$TMP/s80")" -le 24 ] || fail "80x24: more than 24 lines"
# the status line: whole with the key hint, or a long message cut with an ellipsis (never mid-word silently)
tail -n 1 "$TMP/s80" | grep -qE "h help q quit *$|…$|^ *$" ||
	fail "80x24: the status line is cut with no ellipsis: $(tail -n 1 "$TMP/s80")"
ok "80x24: header, row, columns and pane fit, no line past 80 cells"

keys q
wait_for "TOP-EXIT=0"
restored "q"

# ---- SIGTERM, ^C, then a fatal signal ----
for sig in TERM INT SEGV; do
	keys "sh -c 'echo \$\$ >$TMP/top.pid; exec $VH top -D $VM_NAME --period 1s 2>/dev/null'; echo TOP-EXIT=\$?" Enter
	wait_for "lost: dispatch"
	[ "$(alt)" = 1 ] || fail "SIG$sig run: not on the alternate screen"
	case $sig in
	TERM) kill -TERM "$(cat "$TMP/top.pid")" ;;
	INT) keys C-c ;; # from the terminal: cbreak mode keeps ^C a signal
	SEGV) kill -SEGV "$(cat "$TMP/top.pid")" ;;
	esac
	if [ "$sig" = SEGV ]; then
		wait_for "TOP-EXIT=139"
	else
		wait_for "TOP-EXIT=0"
	fi
	restored "SIG$sig"
done

# ---- --guest: the guest columns, g hides them (no agent here: no guest data, shown as -) ----
$T resize-window -t top -x 120 -y 40
keys "$VH top -D $VM_NAME --period 1s --guest 2>/dev/null; echo TOP-EXIT=\$?" Enter
wait_for "hirq% +guest% +hyp% +hw% prmpt% history"
wait_for "\[guest view\]"
keys g
wait_for "hirq% prmpt% history"
screen | grep -q "guest%" && fail "g did not hide the guest columns"
keys q
wait_for "TOP-EXIT=0"
ok "--guest: guest%, hyp%, hw% columns; g hides them"
keys "clear" Enter

# ---- not interactive: a pipe, --batch ----
keys "$VH top -D $VM_NAME --period 1s -d 2.5s | cat >$TMP/pipe.out; echo PIPE-EXIT=\$?" Enter
wait_for "PIPE-EXIT=0" 20
[ "$(alt)" = 0 ] || fail "pipe: the alternate screen was used"
grep -q "^domain $VM_NAME (qemu" "$TMP/pipe.out" || fail "pipe: no line output: $(head -5 "$TMP/pipe.out")"
grep -qE "^ +vCPU +tid +pCPU" "$TMP/pipe.out" || fail "pipe: no vCPU table"
grep -q $'\033' "$TMP/pipe.out" && fail "pipe: terminal escapes in the output"
ok "with a pipe: the line format ($(grep -c "^domain $VM_NAME" "$TMP/pipe.out") periods)"
keys "clear" Enter
keys "$VH top -D $VM_NAME --period 1s -d 2.5s --batch; echo BATCH-EXIT=\$?" Enter
sleep 1
[ "$(alt)" = 0 ] || fail "--batch: the alternate screen was used"
wait_for "BATCH-EXIT=0" 20
# a period's lines can be longer than the pane: the domain line may have scrolled into the history
$T capture-pane -p -S - -t top | grep -qE "^domain $dom" ||
	fail "--batch: no domain line in the pane or its history: $($T capture-pane -p -S - -t top | tail -20)"
ok "--batch on the terminal: the line format"
echo "top_tui: $(($(date +%s) - START)) s"
exit 0
