#!/bin/bash
# `vnoise-host agent` command lines, no libvirt or VM needed: every invalid one gives exactly one line on
# stderr and exit 2 before anything is contacted; --help lists the actions and the start options. The VM part
# (status/start/stop against a real guest agent, a domain without the channel: exit 4, an unknown domain: 7,
# an agent that does not answer: 1) is tests/integration/agent_vm.sh.
. "$(dirname "$0")/lib.bash"
VH=$BUILD/vnoise-host
[ -x "$VH" ] || fail "$VH not built"

expect_err 2 "-D/--domain is required" "$VH" agent status
expect_err 2 "an action is required: status, start or stop" "$VH" agent -D dom
expect_err 2 "unknown action 'launch': want status, start or stop" "$VH" agent -D dom launch
expect_err 2 "unexpected argument 'stop'" "$VH" agent -D dom status stop
expect_err 2 "measure options apply to start only" "$VH" agent -D dom status -c 0
expect_err 2 "measure options apply to start only" "$VH" agent -D dom stop --no-hypercall
expect_err 2 "timeout" "$VH" agent -D dom --timeout 0 status
expect_err 2 "period" "$VH" agent -D dom start -p banana
expect_err 2 "unknown option" "$VH" agent -D dom status --bogus
out=$("$VH" agent --help) || fail "agent --help exited $?"
for w in status start stop org.vnoise.0 --cpus --period --timeout --json; do
	grep -q -- "$w" <<<"$out" || fail "agent --help lacks $w"
done
awk 'length > 80 { exit 1 }' <<<"$out" || fail "agent --help is wider than 80 columns"
ok "agent --help lists the actions, the channel and the options"
exit 0
