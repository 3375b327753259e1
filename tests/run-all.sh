#!/bin/bash
# Runs the Check unit suites given as arguments, then every tests/integration/*.sh, and ends with one line
# "N passed, N failed, N skipped" (unit checks + integration tests). Exit status 1 if anything failed.
# An integration test exits 0 (pass), 77 (skip: it prints "SKIP: <reason>") or anything else (fail).
set -u
here=$(cd "$(dirname "$0")" && pwd)
passed=0 failed=0 skipped=0
failures=()
for t in "$@"; do
	out=$("$t" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks' | sed "s|^|$(basename "$t"): |"
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks' | tail -1)
	checks=$(printf '%s' "$line" | sed -nE 's/.*Checks: ([0-9]+).*/\1/p')
	fails=$(printf '%s' "$line" | sed -nE 's/.*Failures: ([0-9]+), Errors: ([0-9]+).*/\1+\2/p')
	checks=${checks:-0}
	fails=$((${fails:-1}))
	if [ "$rc" -ne 0 ] && [ "$fails" -eq 0 ]; then fails=1; fi
	passed=$((passed + checks - fails))
	failed=$((failed + fails))
	if [ "$rc" -ne 0 ]; then
		failures+=("$(basename "$t")")
		printf '%s\n' "$out" | grep -vE '^[0-9]+%: Checks' | tail -20
	fi
done
if [ "${VNOISE_UNIT_ONLY:-0}" != 1 ]; then
	for t in "$here"/integration/*.sh; do
		[ -e "$t" ] || continue
		name=$(basename "$t" .sh)
		log=$(mktemp)
		start=$(date +%s)
		"$t" >"$log" 2>&1
		rc=$?
		secs=$(($(date +%s) - start))
		if [ "$rc" -eq 0 ]; then
			passed=$((passed + 1))
			echo "PASS: $name (${secs}s)"
		elif [ "$rc" -eq 77 ]; then
			skipped=$((skipped + 1))
			echo "SKIP: $name: $(grep -m1 '^SKIP:' "$log" | sed 's/^SKIP: //')"
		else
			failed=$((failed + 1))
			failures+=("$name")
			echo "FAIL: $name (exit $rc, ${secs}s); its output:"
			sed 's/^/    /' "$log" | tail -40
		fi
		rm -f "$log"
	done
fi
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
