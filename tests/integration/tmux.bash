# The pane of an interactive-screen test: a detached tmux session "top" on the server $T
# ("tmux -L SOCKET"), sourced after lib.bash.
screen() { $T capture-pane -p -t top; }
alt() { $T display -p -t top '#{alternate_on}'; }
keys() { $T send-keys -t top "$@"; }
# wait_for PATTERN [SECONDS]: until the pane shows PATTERN (grep -E); the screen on failure
wait_for() {
	for _ in $(seq $((${2:-15} * 10))); do
		screen | grep -qE -- "$1" && return 0
		sleep 0.1
	done
	screen | sed 's/^/    | /'
	fail "the screen never showed '$1'"
}
# wait_gone PATTERN [SECONDS]: until the pane no longer shows PATTERN
wait_gone() {
	for _ in $(seq $((${2:-15} * 10))); do
		screen | grep -qE -- "$1" || return 0
		sleep 0.1
	done
	screen | sed 's/^/    | /'
	fail "the screen still shows '$1'"
}
# line number of the first line matching PATTERN (0: none)
line_of() { screen | grep -nE -- "$1" | head -1 | cut -d: -f1; }
