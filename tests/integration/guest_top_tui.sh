#!/bin/bash
# vnoise-guest top's screen, driven in a detached tmux session on this machine (no VM: the guest side runs
# here), with an injector of known size on CPU 1 (2 ms every 10 ms, a distinctive comm):
#  - 120x40: the alternate screen, the header (title, helper, state line with the sort), a row per CPU; the
#    injector is CPU 1's top source; every key of the help does what it says: s and r sort (CPU 0 above CPU 1
#    by CPU, below it reversed), j/k and the arrows select, d and Enter open and close the detail (parts and
#    the injector among the sources), p pauses, h and ? show the help and any key (q too) leaves it;
#  - resized to 80x24 (SIGWINCH): the header stays, the rows are there, no line past 80 cells or 24 lines;
#  - q, ^C, SIGTERM and SIGSEGV: the terminal is back (no alternate screen, stty -g and stty -a as before); q
#    and ^C print the run's summary;
#  - with a pipe and with --batch: the stream of tables, no alternate screen, no escapes in a pipe.
. "$(dirname "$0")/lib.bash"
require_root
require_bpf
require_tools tmux
SOCK=vngtop$$
T="tmux -L $SOCK"
trap '$T kill-server 2>/dev/null; cleanup_lib' EXIT
START=$(date +%s)
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"

inj="vntop$$"
inj=${inj:0:12}
"$VG" inject --cpu 1 --comm "$inj" --spike 2ms --every 10ms --duration 300s --quiet >"$TMP/inj.out" 2>&1 &
PIDS+=($!)
INJ=$!

. "$ROOT/tests/integration/tmux.bash"
restored() {
	local what=$1
	[ "$(alt)" = 0 ] || fail "$what: the pane is still on the alternate screen"
	keys "stty -g >$TMP/stty.after; stty -a >$TMP/stty.a2; echo RESTORED-\$?" Enter
	wait_for "RESTORED-0" 10
	cmp -s "$TMP/stty.before" "$TMP/stty.after" || fail "$what: stty -g changed: $(cat "$TMP/stty.after")"
	# stty -a but its first line (the window's size, which the test changes)
	cmp -s <(tail -n +2 "$TMP/stty.a1") <(tail -n +2 "$TMP/stty.a2") ||
		fail "$what: stty -a changed: $(diff "$TMP/stty.a1" "$TMP/stty.a2")"
	keys "clear" Enter
	ok "$what: terminal restored (no alternate screen, stty -g and stty -a as before)"
}
start_top() {
	keys "clear" Enter
	keys "$VG top --cpus 0,1 $* 2>$TMP/top.err; echo TOP-EXIT=\$?" Enter
	wait_for "^vnoise-guest top - 2 CPUs"
	[ "$(alt)" = 1 ] || fail "the screen is not on the alternate screen"
}

$T new-session -d -s top -x 120 -y 40 -e LANG=C.UTF-8 -e LC_ALL= "bash --norc --noprofile" ||
	fail "cannot start tmux"
keys "PS1='$ '; ulimit -c 0; stty -g >$TMP/stty.before; stty -a >$TMP/stty.a1; echo READY" Enter
wait_for "^READY"

# ---- 120x40 ----
keys "clear" Enter
keys "$VG top --cpus 0,1 2>$TMP/top.err >$TMP/top.out; echo TOP-EXIT=\$?" Enter
sleep 2
[ "$(alt)" = 0 ] || fail "top into a pipe used the alternate screen"
keys C-c
wait_for "TOP-EXIT=0"
grep -q "top noise sources in the period" "$TMP/top.out" || fail "top into a pipe: no stream of tables"
grep -q $'\033' "$TMP/top.out" && fail "top into a pipe: terminal escapes in the output"
ok "top into a pipe: the stream of tables, no escapes"

start_top
wait_for "^helper [a-z]+ \| threshold 5.0 us \| host log [a-z-]+ \| own cost"
wait_for "^sort noise%▼"
wait_for "CPU +noise% +max\(us\) +top source \(of noise\) +noise% history"
wait_for "^ +1 +[0-9.]+ +[0-9.]+ +thread:$inj\[$INJ\] [0-9]+%" 10
wait_for "^ +0 +[0-9.]+ +[0-9.]+ "
screen | sed 's/^/    | /'
ok "120x40: title, helper line, sort state, a row per CPU; CPU 1's top source is $inj[$INJ]"

keys s
wait_for "^sort max\(us\)▼"
keys s
wait_for "^sort CPU▲"
[ "$(line_of '^ +0 ')" -lt "$(line_of '^ +1 ')" ] || fail "sorted by CPU: CPU 0 is not above CPU 1"
keys r
wait_for "^sort CPU▼"
[ "$(line_of '^ +1 ')" -lt "$(line_of '^ +0 ')" ] || fail "reversed: CPU 1 is not above CPU 0"
keys r
wait_for "^sort CPU▲"
ok "s sorts by the next column (noise%, max(us), CPU), r reverses (CPU 1 above CPU 0)"

keys d
wait_for "^CPU 0, last period: noise [0-9.]+ us of"
wait_for "^ parts:"
keys j
wait_for "^CPU 1, last period: noise [0-9.]+ us of"
wait_for "^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +thread:$inj\[$INJ\]" 10
wait_for "^ period's worst gap [0-9.]+ us at \+[0-9.]+ s:.* thread:$inj\[$INJ\] [0-9]+%" 10
wait_for "^ run's worst gap [0-9.]+ us at \+[0-9.]+ s:.* thread:$inj\[$INJ\] [0-9]+%" 10
keys k
wait_for "^CPU 0, last period"
keys Down
wait_for "^CPU 1, last period"
keys Up
wait_for "^CPU 0, last period"
keys d
wait_gone "last period: noise"
keys Down Enter
wait_for "^CPU 1, last period"
keys Enter
wait_gone "last period: noise"
ok "d and Enter open and close the detail; j/k and Down/Up move the selection; $inj among CPU 1's sources and among the parts of its period's and its run's worst gap"

keys p
wait_for "^sort CPU▲  PAUSED"
a=$(screen | head -1)
sleep 2.5
[ "$(screen | head -1)" = "$a" ] || fail "paused: the screen changed ($a)"
keys p
wait_gone "PAUSED"
ok "p pauses the screen (the title's clock stops) and resumes it"

keys h
wait_for "^vnoise-guest top: keys"
keys x
wait_for "^vnoise-guest top - 2 CPUs"
keys "?"
wait_for "^vnoise-guest top: keys"
keys q
wait_for "^vnoise-guest top - 2 CPUs"
screen | grep -q "TOP-EXIT" && fail "q on the help quit top"
ok "h and ? show the help, any key (q too) leaves it"

# ---- 80x24 ----
$T resize-window -t top -x 80 -y 24 || fail "cannot resize the pane"
sleep 2
screen >"$TMP/s80"
sed 's/^/    | /' "$TMP/s80"
head -1 "$TMP/s80" | grep -q "^vnoise-guest top - 2 CPUs" || fail "80x24: the title is not on the first line"
grep -qE "^ +1 +[0-9.]+ +[0-9.]+ +thread:" "$TMP/s80" || fail "80x24: no row for CPU 1"
grep -qE "CPU +noise% +max\(us\) +top source" "$TMP/s80" || fail "80x24: no column heads"
[ "$(LC_ALL=C.UTF-8 wc -L <"$TMP/s80")" -le 80 ] || fail "80x24: a line is wider than 80 cells"
[ "$(wc -l <"$TMP/s80")" -le 24 ] || fail "80x24: more than 24 lines"
keys d
wait_for "^CPU 1, last period" # the selection stayed on CPU 1
screen >"$TMP/s80d"
[ "$(LC_ALL=C.UTF-8 wc -L <"$TMP/s80d")" -le 80 ] || fail "80x24 detail: a line is wider than 80 cells"
head -1 "$TMP/s80d" | grep -q "^vnoise-guest top" || fail "80x24 detail: the title scrolled away"
ok "80x24: the header stays, rows, columns and the detail fit 80 cells and 24 lines"

keys q
wait_for "TOP-EXIT=0"
$T capture-pane -p -S - -t top >"$TMP/after-q" # before restored's clear
restored "q"
grep -q "top noise sources" "$TMP/after-q" || fail "q: no summary after the screen: $(tail -5 "$TMP/after-q")"
ok "q: exit 0 and the run's summary on the normal screen"

# ---- ^C, SIGTERM, SIGSEGV ----
for sig in INT TERM SEGV; do
	keys "clear" Enter
	keys "sh -c 'echo \$\$ >$TMP/top.pid; exec $VG top --cpus 0,1 2>/dev/null >/dev/tty'; echo TOP-EXIT=\$?" Enter
	wait_for "^vnoise-guest top - 2 CPUs"
	case $sig in
	INT) keys C-c ;;
	TERM) kill -TERM "$(cat "$TMP/top.pid")" ;;
	SEGV) kill -SEGV "$(cat "$TMP/top.pid")" ;;
	esac
	if [ "$sig" = SEGV ]; then wait_for "TOP-EXIT=139" 20; else wait_for "TOP-EXIT=0" 20; fi
	restored "SIG$sig"
done

# ---- --batch on the terminal ----
keys "$VG top --cpus 0,1 --batch -d 2500ms >/dev/tty 2>/dev/null; echo BATCH-EXIT=\$?" Enter
sleep 1.5
[ "$(alt)" = 0 ] || fail "--batch: the alternate screen was used"
wait_for "BATCH-EXIT=0" 20
$T capture-pane -p -S - -t top | grep -q "top noise sources in the period" ||
	fail "--batch: no stream of tables"
ok "--batch on the terminal: the stream of tables, no alternate screen"
expect_err 2 "--batch is for top only" "$VG" measure --batch -d 1s
echo "guest_top_tui: $(($(date +%s) - START)) s"
exit 0
