#!/bin/bash
# Every command's --help and --version, and the program level. Each --help exits 0 with its usage
# on stdout and nothing on stderr, has no literal "%%" and no internal names ("Seed 003"), knows every
# option it lists and lists none that the command refuses or ignores; --version (and -V) prints
# "PROG VERSION" from the VERSION file, at the top and after every command; no or an unknown command is one
# line that names every command of the program's table; `inject --every` takes units. No root needed.
. "$(dirname "$0")/lib.bash"
VH=$BUILD/vnoise-host
VB=$BUILD/vnoise-bench
for b in "$VH" "$VB"; do [ -x "$b" ] || fail "$b not built"; done
version=$(head -1 "$ROOT/VERSION")
[ -n "$version" ] || fail "no version in $ROOT/VERSION"

# name CMD...: the command line without the build directory
name() {
	local b=${1##*/}
	shift
	echo "$b $*"
}

# check_help CMD...: CMD --help is a usage on stdout ($TMP/h.out), exit 0, nothing on stderr, no %% or Seed
check_help() {
	local rc
	"$@" --help >"$TMP/h.out" 2>"$TMP/h.err"
	rc=$?
	[ "$rc" -eq 0 ] || fail "'$* --help' exited $rc: $(head -3 "$TMP/h.err")"
	[ ! -s "$TMP/h.err" ] || fail "'$* --help' wrote on stderr: $(head -3 "$TMP/h.err")"
	head -1 "$TMP/h.out" | grep -q '^usage: ' || fail "'$* --help' does not start with usage: $(head -1 "$TMP/h.out")"
	! grep -n '%%' "$TMP/h.out" || fail "'$* --help' has a literal %%"
	! grep -n -i 'seed [0-9]' "$TMP/h.out" || fail "'$* --help' names an internal seed"
}

# The long options on the option lines of $TMP/h.out ("  -x, --name ..." or "      --name ...").
listed() { sed -n 's/^  \(-[A-Za-z0-9], \|    \)--\([a-z][a-z0-9-]*\).*/\2/p' "$TMP/h.out"; }

# lacks CMD... -- OPT...: CMD --help lists none of the OPTs (options the command refuses or ignores)
lacks() {
	local cmd=() o
	while [ "$1" != -- ]; do
		cmd+=("$1")
		shift
	done
	shift
	for o in "$@"; do
		! listed | grep -qx -- "$o" || fail "'$(name "${cmd[@]}") --help' lists --$o, which it does not take"
	done
}

# knows CMD...: every option CMD --help lists is one CMD knows. Two unknown options follow it, so that the
# parse always ends in an error (a value option takes the first as its value) and nothing runs.
knows() {
	local o
	for o in $(listed); do
		case "$o" in help | version) continue ;; esac
		"$@" "--$o" --zz-hm-1 --zz-hm-2 >/dev/null 2>"$TMP/k.err" </dev/null
		! grep -q "unknown option '--$o'" "$TMP/k.err" || fail "'$(name "$@") --help' lists --$o, unknown to it"
	done
}

# check_version CMD...: CMD --version and CMD -V print "PROG VERSION[ (git REV)]", exit 0, nothing else
check_version() {
	local prog=$1 rc flag
	shift
	for flag in --version -V; do
		"$@" "$flag" >"$TMP/v.out" 2>"$TMP/v.err"
		rc=$?
		[ "$rc" -eq 0 ] || fail "'$* $flag' exited $rc: $(cat "$TMP/v.err")"
		[ ! -s "$TMP/v.err" ] || fail "'$* $flag' wrote on stderr: $(cat "$TMP/v.err")"
		[ "$(wc -l <"$TMP/v.out")" -eq 1 ] || fail "'$* $flag' printed $(wc -l <"$TMP/v.out") lines"
		grep -Eqx "$prog $(printf '%s' "$version" | sed 's/\./\\./g')( \(git [0-9a-f]+(-dirty)?\))?" \
			"$TMP/v.out" || fail "'$* $flag' printed '$(cat "$TMP/v.out")', want '$prog $version'"
	done
}

# join_or A B C: "A, B or C"
join_or() {
	local out=$1
	shift
	while [ $# -gt 1 ]; do
		out="$out, $1"
		shift
	done
	[ $# -eq 1 ] && out="$out or $1"
	echo "$out"
}

# The program level: help, version, no command, unknown command (the list comes from the command table).
for p in "vnoise-guest:$VG:measure top hist record report inject agent monitor mpi" \
	"vnoise-host:$VH:top record report list serve collect query agent enable disable" "vnoise-bench:$VB:detect sweep"; do
	prog=${p%%:*}
	rest=${p#*:}
	bin=${rest%%:*}
	cmds=${rest#*:}
	check_help "$bin"
	for c in $cmds; do
		grep -q "^  $c " "$TMP/h.out" || fail "'$prog --help' does not list $c"
	done
	awk 'length > 80 { exit 1 }' "$TMP/h.out" || fail "'$prog --help' is wider than 80 columns"
	"$bin" help >"$TMP/h2.out" 2>&1 || fail "'$prog help' failed"
	cmp -s "$TMP/h.out" "$TMP/h2.out" || fail "'$prog help' differs from '$prog --help'"
	check_version "$prog" "$bin"
	# shellcheck disable=SC2086
	list=$(join_or $cmds)
	expect_err 2 "no command (want $list; see '$prog --help')" "$bin"
	expect_err 2 "unknown command 'bogus' (want $list; see '$prog --help')" "$bin" bogus
	ok "$prog: --help, --version, -V, no command, unknown command"
done

# Every command: its help, its version, the options it lists and those it must not list.
guest_cmds=(measure top hist record report inject agent monitor mpi)
host_cmds=(top record report list serve collect query agent enable disable)
for c in "${guest_cmds[@]}"; do
	check_help "$VG" "$c"
	check_version vnoise-guest "$VG" "$c"
	knows "$VG" "$c"
done
for c in "${host_cmds[@]}"; do
	check_help "$VH" "$c"
	check_version vnoise-host "$VH" "$c"
	knows "$VH" "$c"
done
for c in detect sweep; do
	check_help "$VB" "$c"
	check_version vnoise-bench "$VB" "$c"
	knows "$VB" "$c"
done
ok "every command: --help on stdout, exit 0, no %%, no Seed; --version and -V"

# Every help of the three programs, and of each command: within 80 columns; each command's has one
# exit-code line, and a TIME line (when it has one) in the one wording (cli/cliopt.h CLIOPT_TIME_LINE).
time_line='TIME: a number and a unit (ns us ms s m h d), e.g. 2s; without one: us'
fits() {
	"$@" --help >"$TMP/h.out" 2>/dev/null
	awk 'length > 80 { print; bad = 1 } END { exit bad }' "$TMP/h.out" >"$TMP/long" ||
		fail "'$(name "$@") --help' has lines over 80 columns: $(head -2 "$TMP/long")"
}
for b in "$VG" "$VH" "$VB"; do fits "$b"; done
for cmd in "${guest_cmds[@]/#/$VG }" "${host_cmds[@]/#/$VH }" "$VB detect" "$VB sweep"; do
	# shellcheck disable=SC2086 # "PROG COMMAND"
	fits $cmd
	[ "$(grep -c '^exit: ' "$TMP/h.out")" = 1 ] || fail "'${cmd##*/} --help' has no (or more than one) exit-code line"
	! grep '^TIME' "$TMP/h.out" | grep -qvxF "$time_line" ||
		fail "'${cmd##*/} --help': another TIME line: $(grep '^TIME' "$TMP/h.out")"
done
ok "every --help within 80 columns; every command's with an exit-code line and the one TIME line"

# What each command refuses or ignores is not in its help.
check_help "$VG" measure
lacks "$VG" measure -- output batch bucket-size entries
check_help "$VG" top
lacks "$VG" top -- json output bucket-size entries
check_help "$VG" hist
lacks "$VG" hist -- json output top batch
# each lists its own: top --batch, hist --bucket-size and --entries, collect --wide, query --node
"$VG" top --help | grep -q -- "--batch" || fail "top --help lacks --batch"
"$VG" hist --help | grep -q -- "--bucket-size" && "$VG" hist --help | grep -q -- "--entries" ||
	fail "hist --help lacks --bucket-size or --entries"
"$VH" collect --help | grep -q -- "--wide" || fail "collect --help lacks --wide"
"$VH" query --help | grep -q -- "--node" || fail "query --help lacks --node"
check_help "$VG" report
lacks "$VG" report -- cpus period runtime threshold duration priority output
check_help "$VG" inject
lacks "$VG" inject -- cpus period json output
check_help "$VG" agent
lacks "$VG" agent -- json stop-single stop-total
check_help "$VG" monitor
lacks "$VG" monitor -- runtime threshold output priority
check_help "$VG" mpi
lacks "$VG" mpi -- cpus period duration
check_help "$VH" top
lacks "$VH" top -- output metrics html
check_help "$VH" serve
lacks "$VH" serve -- output batch html
check_help "$VH" report
lacks "$VH" report -- connect domain duration period no-dispatch no-irqs qmp flows output batch metrics
check_help "$VH" list
lacks "$VH" list -- period duration guest flows flows-top top output no-dispatch no-irqs
check_help "$VH" collect
lacks "$VH" collect -- connect domain cpus guest
check_help "$VH" query
lacks "$VH" query -- connect domain cpus guest period duration key-file output
check_help "$VB" detect
lacks "$VB" detect -- levels np cpu quick mpirun passes run-length quiet
check_help "$VB" sweep
lacks "$VB" sweep -- gate
ok "no command's help lists an option it refuses or ignores"

# spikes MIN MAX: the count= of inject's summary in $out is in [MIN, MAX]
spikes() {
	count=$(echo "$out" | sed -n 's/.*count=\([0-9]*\).*/\1/p')
	[ -n "$count" ] || return 1
	[ "$count" -ge "$1" ] && [ "$count" -le "$2" ]
}

# inject --every takes units like every other TIME (a bare number, once milliseconds, is refused)
cpu=$(test_cpu)
out=$("$VG" inject --cpu "$cpu" --spike 1ms --every 10ms -d 100ms -q 2>"$TMP/e") || fail "inject --every 10ms: $(cat "$TMP/e")"
spikes 5 12 || fail "inject --every 10ms -d 100ms: '$out', want about 10 spikes"
ok "inject --spike 1ms --every 10ms -d 100ms: $count spikes"
out=$("$VG" inject --cpu "$cpu" --spike 500us --every 0s20ms -d 0m0.1s -q 2>"$TMP/e") ||
	fail "inject with combined units: $(cat "$TMP/e")"
spikes 2 7 || fail "inject --every 0s20ms -d 0m0.1s: '$out', want about 5 spikes"
ok "inject --every 0s20ms -d 0m0.1s (combined units): $count spikes"
expect_err 2 "--every 10: a time without a unit is in microseconds; write 10ms" "$VG" inject --cpu "$cpu" --spike 1ms --every 10
