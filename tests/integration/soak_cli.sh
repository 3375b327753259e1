#!/bin/bash
# bench/soak.sh without a VM (a few seconds): its --help, its bad command lines (one line on
# stderr, exit 2, nothing on stdout), exit 4 when not root, and the helpers of bench/lib/soaklib.bash that
# decide its verdicts, on synthetic data of known growth: the RSS/fd trend after the warm-up (flat <= 1% per
# 10 min, least squares), the sums of /metrics counters, a host process's RSS/fds/CPU ticks and the guest-side
# script's syntax. The soak itself (a VM for 30 minutes) is run by hand: bench/soak.sh --help.
# shellcheck disable=SC2015 # "A && B || fail ...": fail exits
# shellcheck source-path=SCRIPTDIR source=lib.bash
. "$(dirname "$0")/lib.bash"
SOAK=$ROOT/bench/soak.sh
[ -x "$SOAK" ] || fail "$SOAK missing or not executable"

# --- the command line
"$SOAK" --help >"$TMP/help" 2>"$TMP/help.err" || fail "--help exited $?"
grep -q '^usage: bench/soak.sh \[--warmup MIN\] MINUTES' "$TMP/help" || fail "--help: $(head -2 "$TMP/help")"
grep -q '^Exit: 0 every criterion met' "$TMP/help" || fail "--help lacks the exit codes"
[ ! -s "$TMP/help.err" ] || fail "--help wrote on stderr: $(cat "$TMP/help.err")"
ok "--help: usage on stdout, exit 0"
expect_err 2 "MINUTES is required" "$SOAK"
expect_err 2 "from 3 to 10080, got 'abc'" "$SOAK" abc
expect_err 2 "from 3 to 10080, got '2'" "$SOAK" 2
expect_err 2 "from 3 to 10080, got '99999'" "$SOAK" 99999
expect_err 2 "from 3 to 10080, got '1.5'" "$SOAK" 1.5
expect_err 2 "one MINUTES only" "$SOAK" 5 6
expect_err 2 "unknown option '--bogus'" "$SOAK" --bogus 5
expect_err 2 "--warmup needs a number" "$SOAK" 5 --warmup
expect_err 2 "--warmup must be a whole number" "$SOAK" --warmup x 5
expect_err 2 "leaves under 2 minutes of 4" "$SOAK" --warmup 3 4
if command -v setpriv >/dev/null && setpriv --reuid 65534 --regid 65534 --clear-groups test -r "$SOAK" 2>/dev/null; then
	setpriv --reuid 65534 --regid 65534 --clear-groups "$SOAK" 3 >"$TMP/np.out" 2>"$TMP/np.err"
	rc=$?
	[ "$rc" -eq 4 ] || fail "not root: exit $rc, want 4: $(cat "$TMP/np.err")"
	[ "$(wc -l <"$TMP/np.err")" -eq 1 ] && grep -q "needs root" "$TMP/np.err" ||
		fail "not root: stderr $(cat "$TMP/np.err")"
	grep -q "^# reproduce: make && sudo .*flock -o /tmp/vnoise-vm.lock bench/soak.sh --warmup 1 3$" "$TMP/np.out" ||
		fail "no reproduce line: $(cat "$TMP/np.out")"
	ok "not root: exit 4, $(cat "$TMP/np.err")"
else
	echo "note: cannot run as nobody here: exit 4 not checked"
fi

# --- the trend: "T KEY RSS FDS" samples every minute; warm-up 180 s
# shellcheck source=../../bench/lib/soaklib.bash
. "$ROOT/bench/lib/soaklib.bash"
soak_args 12 && [ "$SOAK_MINUTES" = 12 ] && [ "$SOAK_WARMUP" = 3 ] || fail "soak_args 12: $SOAK_MINUTES/$SOAK_WARMUP"
soak_args 5 && [ "$SOAK_WARMUP" = 1 ] || fail "soak_args 5: warm-up $SOAK_WARMUP, want 1"
soak_args 30 && [ "$SOAK_WARMUP" = 6 ] || fail "soak_args 30: warm-up $SOAK_WARMUP, want 6"
soak_args --warmup=2 08 && [ "$SOAK_MINUTES" = 8 ] && [ "$SOAK_WARMUP" = 2 ] || fail "soak_args --warmup=2 08"
for m in $(seq 0 12); do
	t=$((m * 60))
	echo "$t flat $((10000 + (m % 3) * 4 - 4)) 12" # +-4 kB of noise around 10000 kB
	echo "$t leak $((10000 + m * 20)) 12"           # 20 kB per minute: 2% of 10000 kB per 10 min
	echo "$t warm $((m < 3 ? 8000 + m * 500 : 9500)) $((m < 3 ? 5 + m : 8))" # grows in the warm-up only
	echo "$t fdleak 5000 $((20 + m / 3))"         # an fd every 3 minutes
	[ "$m" -eq 12 ] && echo "$t late 4000 9"      # one sample after the warm-up
done >"$TMP/samples"
soak_trend "$TMP/samples" 180 >"$TMP/trend"
cat "$TMP/trend"
row() { awk -v k="$1" '$1 == k' "$TMP/trend"; }
read -r _ n r0 r1 rp _ _ fp v < <(row flat)
[ "$n" = 10 ] && [ "$v" = flat ] && within "$rp" 0 0.2 && [ "$fp" = 0.00 ] || fail "flat: $(row flat)"
read -r _ n r0 r1 rp _ _ fp v < <(row leak)
[ "$v" = grows ] && [ "$r0" = 10060 ] && [ "$r1" = 10240 ] && within "$rp" 1.99 0.02 || fail "leak: $(row leak)"
read -r _ _ r0 _ rp f0 _ fp v < <(row warm)
[ "$v" = flat ] && [ "$r0" = 9500 ] && [ "$f0" = 8 ] && [ "$rp" = 0.00 ] || fail "warm-up growth counted: $(row warm)"
read -r _ _ _ _ rp f0 f1 fp v < <(row fdleak)
[ "$v" = grows ] && [ "$f0" = 21 ] && [ "$f1" = 24 ] && within "$fp" 16 1 || fail "fd leak: $(row fdleak)"
[ "$(row late | awk '{ print $2, $NF }')" = "1 n/a" ] || fail "one sample: $(row late)"
ok "trend: flat with noise, a 2%/10 min leak, warm-up growth left out, an fd leak, too few samples"

# --- /metrics sums
cat >"$TMP/m.txt" <<'EOF'
# HELP vnoise_collect_datagrams_total Report datagrams received, by what became of them
# TYPE vnoise_collect_datagrams_total counter
vnoise_collect_datagrams_total{result="ok"} 1234
vnoise_collect_datagrams_total{result="bad-mac"} 3
vnoise_collect_datagrams_total{result="malformed"} 0
vnoise_collect_lost_datagrams_total 17
vnoise_node_lost_datagrams_total{node="3",job="a1"} 12
vnoise_node_lost_datagrams_total{node="30",job="a1"} 5
vnoise_collect_lost_datagrams_total_x 99
EOF
[ "$(soak_prom "$TMP/m.txt" vnoise_collect_datagrams_total)" = 1237 ] || fail "prom sum of a family"
[ "$(soak_prom "$TMP/m.txt" vnoise_collect_datagrams_total 'result="bad-mac"')" = 3 ] || fail "prom label filter"
[ "$(soak_prom "$TMP/m.txt" vnoise_collect_lost_datagrams_total)" = 17 ] || fail "prom: a longer name matched"
[ "$(soak_prom "$TMP/m.txt" vnoise_node_lost_datagrams_total 'node="3"')" = 12 ] || fail "prom: node 30 matched node 3"
[ "$(soak_prom "$TMP/m.txt" vnoise_nothing)" = 0 ] || fail "prom: an absent family is not 0"
[ "$(soak_prom "$TMP/none.txt" vnoise_nothing)" = 0 ] || fail "prom: a missing file is not 0"
ok "/metrics sums: families, label filters, exact names"

# --- a host process; the guest script
read -r rss fds ticks < <(soak_host_proc $$) || fail "soak_host_proc of this shell"
[ "$rss" -gt 100 ] && [ "$fds" -ge 3 ] && [ "$ticks" -ge 0 ] || fail "soak_host_proc: '$rss $fds $ticks'"
! soak_host_proc 999999999 >/dev/null || fail "soak_host_proc of no process"
soak_guest_procs >"$TMP/g.sh"
sh -n "$TMP/g.sh" || fail "the guest script does not parse: $(cat "$TMP/g.sh")"
sh "$TMP/g.sh" >"$TMP/g.out" || fail "the guest script fails here"
ok "host process: rss $rss kB, $fds fds, $ticks ticks; the guest script parses and runs ($(wc -l <"$TMP/g.out") vnoise processes here)"
exit 0
