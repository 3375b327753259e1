# Helpers of the HTML report tests (sourced after lib.bash): render a page in Debian's headless Chromium.
HTML_CHROMIUM=${HTML_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}

# html_require: skip when the machine has no Chromium (make deps installs it).
html_require() {
	[ -n "$HTML_CHROMIUM" ] || skip "no chromium (run make deps)"
}

# html_render PAGE NAME: screenshot PAGE at 1280x800 into $TMP/NAME.png, the DOM after its script ran into
# $TMP/NAME.dom and the console log into $TMP/NAME.log; fails when the PNG is missing or trivial, or the
# console shows a script error. No network is needed: the page is a local file.
html_render() {
	local page=$1 name=$2 size
	timeout 60 "$HTML_CHROMIUM" --headless=new --no-sandbox --disable-gpu --user-data-dir="$TMP/chr-$name" \
		--window-size=1280,800 --screenshot="$TMP/$name.png" "file://$page" >/dev/null 2>"$TMP/$name.shot" ||
		fail "chromium screenshot of $page failed: $(tail -3 "$TMP/$name.shot")"
	size=$(stat -c %s "$TMP/$name.png" 2>/dev/null || echo 0)
	[ "$size" -gt 20000 ] || fail "$name.png is $size bytes (want a rendered page, > 20000)"
	timeout 60 "$HTML_CHROMIUM" --headless=new --no-sandbox --disable-gpu --user-data-dir="$TMP/chr-$name" \
		--enable-logging=stderr --v=0 --dump-dom "file://$page" >"$TMP/$name.dom" 2>"$TMP/$name.log" ||
		fail "chromium --dump-dom of $page failed: $(tail -3 "$TMP/$name.log")"
	! grep -E "Uncaught|ERROR:CONSOLE|CONSOLE\([0-9]+\).*[Ee]rror" "$TMP/$name.log" ||
		fail "$name: script errors in the console"
	grep -q 'data-plots="[1-9]' "$TMP/$name.dom" || fail "$name: the page's script did not run (no data-plots)"
	[ -z "${HTML_KEEP_DIR:-}" ] || cp "$page" "$TMP/$name.png" "$TMP/$name.dom" "$HTML_KEEP_DIR/" # to look at
	ok "$name: rendered at 1280x800 ($size bytes PNG), $(grep -o 'data-plots="[0-9]*"' "$TMP/$name.dom") plots, no console error"
}

# html_self_contained PAGE: no URL of any kind (nothing to fetch at view time), no external resource.
html_self_contained() {
	! grep -Eqi '://|<link|src=|@import|url\(' "$1" || fail "$1 refers to something outside itself: $(grep -Eoi '.{20}(://|<link|src=|@import|url\().{20}' "$1" | head -3)"
}
