#!/bin/bash
# The Grafana dashboard: contrib/grafana/vnoise.json is valid JSON and a Grafana
# dashboard (title, uid, unique panel ids, panels inside the 24-column grid, every query panel with a
# datasource and PromQL targets), and every metric name its panels and variables query is one that is really
# exported: the cluster collector's names from a real scrape of `vnoise-host collect --metrics`, the per-host
# exporter's from its family table in host/export/hostmetrics.c (tests/integration/exporter_vm.sh checks them
# against a real scrape of `vnoise-host serve --metrics` through --check-names).
#   grafana.sh                   the whole check (make check)
#   grafana.sh --check-names F   only: every name the dashboard queries is in file F (one per line)
. "$(dirname "$0")/lib.bash"
DASH=$ROOT/contrib/grafana/vnoise.json
VH=$BUILD/vnoise-host

# the metric names the dashboard queries (panel targets and variable definitions)
queried() {
	jq -r '.. | objects | (.expr?, .definition?) // empty' "$DASH" | grep -o 'vnoise_[a-zA-Z0-9_:]*' | sort -u
}

check_names() {
	local missing
	missing=$(queried | grep -vxF -f "$1")
	[ -z "$missing" ] || {
		echo "queried but not exported: $(tr '\n' ' ' <<<"$missing")"
		return 1
	}
	return 0
}

if [ "${1:-}" = --check-names ]; then
	check_names "$2"
	exit
fi

require_tools curl
[ -x "$VH" ] || fail "$VH not built"
[ -f "$DASH" ] || fail "no $DASH"
jq -e . "$DASH" >/dev/null || fail "$DASH is not valid JSON"
jq -e '(.title | length > 0) and (.uid | length > 0) and (.schemaVersion >= 30) and (.panels | length > 0)' \
	"$DASH" >/dev/null || fail "not a Grafana dashboard (title, uid, schemaVersion, panels)"
jq -e '[.panels[].id] | length == (unique | length)' "$DASH" >/dev/null || fail "panel ids not unique"
jq -e 'all(.panels[]; .gridPos.x >= 0 and .gridPos.w > 0 and .gridPos.x + .gridPos.w <= 24 and .gridPos.h > 0)' \
	"$DASH" >/dev/null || fail "a panel outside the 24-column grid"
jq -e 'all(.panels[] | select(.type != "row"); .datasource != null and (.targets | length > 0) and
	all(.targets[]; (.expr | length > 0) and (.refId | length > 0)))' "$DASH" >/dev/null ||
	fail "a panel without datasource or PromQL targets"
n=$(queried | wc -l)
[ "$n" -ge 10 ] || fail "only $n metric names queried"
queried | grep -q '^vnoise_host_' || fail "no exporter panel"
queried | grep -q '^vnoise_node_' || fail "no collector panel"
ok "$DASH: valid JSON, $(jq '.panels | length' "$DASH") panels, $n metric names queried"

# the collector's names: a real scrape (families are announced even before any node reports)
KEY="$TMP/keys"
make_key "$KEY"
start_collector C --metrics 127.0.0.1:0 --no-store
metrics_port "$TMP/C.err"
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/collector.txt" || fail "curl the collector's /metrics"
sed -n 's/^# TYPE \([a-zA-Z_:][a-zA-Z0-9_:]*\) .*/\1/p' "$TMP/collector.txt" >"$TMP/names"
# the exporter's family table
grep -o '"vnoise_host_[a-z0-9_]*"' "$ROOT/host/export/hostmetrics.c" | tr -d '"' >>"$TMP/names"
sort -u -o "$TMP/names" "$TMP/names"
check_names "$TMP/names" || fail "the dashboard queries names neither the collector nor the exporter exports"
ok "every queried name is exported ($(grep -c '^vnoise_node_\|^vnoise_job_\|^vnoise_collect_' "$TMP/names") collector families scraped)"
exit 0
