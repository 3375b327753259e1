#!/bin/bash
# Prometheus remote-write to a real receiver (Debian's prometheus with
# --web.enable-remote-write-receiver, no scraping), no VM, no root.
#  A. `collect --remote-write URL --remote-write-period 1s` with 8 simulated nodes (tests/tools/nodesim):
#     PromQL over the HTTP API returns the collector's final totals per node (noise seconds, datagrams);
#     every sample the collector says it delivered is in the TSDB, and nothing is dropped.
#  B. The receiver is stopped for 30 s while the nodes keep sending, then restarted: the collector's
#     /metrics shows retries and buffered requests meanwhile, and after the restart the samples stamped
#     inside the outage are in the TSDB (buffered and delivered, in order), the totals still equal.
#  C. `serve --connect test:///default --no-dispatch --remote-write URL`: the per-host exporter's series
#     arrive. A receiver refusing (404) has every request counted as dropped. Bad URLs: one line, exit 2.
# shellcheck source=lib.bash
. "$(dirname "$0")/lib.bash"
VH="$BUILD/vnoise-host"
SIM="$BUILD/tests/tools/nodesim"
[ -x "$VH" ] && [ -x "$SIM" ] || fail "vnoise-host or nodesim not built"
require_tools prometheus curl jq
KEY="$TMP/keys"
make_key "$KEY"

# --- bad input: one line, exit 2
expect_err 2 "not an http:// URL" "$VH" collect -k "$KEY" --no-store --remote-write https://127.0.0.1:1/w
expect_err 2 "bad port" "$VH" collect -k "$KEY" --no-store --remote-write http://h:0/w
expect_err 2 "remote-write" "$VH" serve --connect test:///default --remote-write ftp://x/

# --- the receiver
printf 'global:\n  scrape_interval: 1m\n' >"$TMP/prom.yml"
PPID_=""
PP=""
start_prom() { # start_prom [PORT]: a fresh port unless given; sets PPID_ and PP
	local want=${1:-}
	for _ in 1 2 3 4 5; do
		PP=${want:-$((20000 + RANDOM % 30000))}
		prometheus --config.file "$TMP/prom.yml" --storage.tsdb.path "$TMP/tsdb" \
			--web.listen-address "127.0.0.1:$PP" --web.enable-remote-write-receiver \
			>>"$TMP/prom.log" 2>&1 &
		PPID_=$!
		PIDS+=("$PPID_")
		for _ in $(seq 100); do
			curl -sf "http://127.0.0.1:$PP/-/ready" >/dev/null 2>&1 && return 0
			kill -0 "$PPID_" 2>/dev/null || break
			sleep 0.1
		done
		kill "$PPID_" 2>/dev/null
		wait "$PPID_" 2>/dev/null
		[ -z "$want" ] || sleep 1
	done
	fail "prometheus did not start: $(tail -3 "$TMP/prom.log")"
}
stop_prom() {
	kill -TERM "$PPID_"
	wait "$PPID_" 2>/dev/null
}
promql() { # promql QUERY: the JSON result array
	curl -sf "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" | jq -c '.data.result' ||
		fail "PromQL '$1' failed"
}
# samples_stored SELECTOR: how many samples the TSDB holds for SELECTOR (a range query over an hour)
samples_stored() { promql "$1[1h]" | jq '[.[].values | length] | add // 0'; }
# summary ERRFILE: "delivered_requests delivered_samples retries dropped_requests dropped_samples"
summary() {
	sed -n 's/.*remote write to .*: \([0-9]*\) requests (\([0-9]*\) samples) delivered, \([0-9]*\) retries, \([0-9]*\) requests (\([0-9]*\) samples) dropped$/\1 \2 \3 \4 \5/p' "$1"
}
start_prom
URL="http://127.0.0.1:$PP/api/v1/write"
ok "prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') receiving on $URL"

# --- A + B: 8 nodes, 40 s of 10 ms intervals; the receiver is down from ~5 s to ~35 s
start_collector RW --no-store --metrics 127.0.0.1:0 --remote-write "$URL" --remote-write-period 1s
metrics_port "$TMP/RW.err"
for n in 1 2 3 4 5 6 7 8; do
	"$SIM" -c "127.0.0.1:$PORT" -k "$KEY" -n "$n" -j RW -i 4000 -t 10ms -w 300 --seed 42 \
		>"$TMP/node$n.json" 2>>"$TMP/nodes.err" &
	NODES+=($!)
	PIDS+=($!)
done
sleep 4
[ "$(promql 'count(vnoise_node_datagrams_total)' | jq -r '.[0].value[1]')" = 8 ] ||
	fail "after 4 s the receiver lacks the 8 nodes' series: $(promql 'vnoise_node_datagrams_total')"
ok "A: the 8 nodes' series are in prometheus while they run"

stop_prom
T_DOWN=$(date +%s.%N)
sleep 25
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/down.txt" || fail "collector /metrics failed"
retries=$(sed -n 's/^vnoise_collect_remote_write_retries_total \([0-9]*\)$/\1/p' "$TMP/down.txt")
buffered=$(sed -n 's/^vnoise_collect_remote_write_buffered_requests \([0-9]*\)$/\1/p' "$TMP/down.txt")
[ "${retries:-0}" -gt 3 ] && [ "${buffered:-0}" -ge 20 ] ||
	fail "receiver down 25 s: retries '$retries', buffered requests '$buffered' (want > 3, >= 20)"
ok "B: receiver down 25 s: $retries retries, $buffered requests buffered"
sleep 5
T_UP=$(date +%s.%N)
start_prom "$PP"
for p in "${NODES[@]}"; do wait "$p" || fail "a node exited $?: $(tail -3 "$TMP/nodes.err")"; done
sleep 2
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/end.txt" || fail "collector /metrics failed"
kill -TERM "$CPID"
wait "$CPID" || fail "collector exited $?: $(tail -3 "$TMP/RW.err")"
! grep -q "not delivered at exit" "$TMP/RW.err" || fail "$(grep "not delivered" "$TMP/RW.err")"
read -r dreq dsamp retries dropreq dropsamp <<<"$(summary "$TMP/RW.err")"
[ -n "${dropsamp:-}" ] || fail "no remote-write summary line: $(tail -3 "$TMP/RW.err")"
[ "$dropreq" = 0 ] && [ "$dropsamp" = 0 ] || fail "$dropreq requests ($dropsamp samples) dropped"
[ "$(sed -n 's/^vnoise_collect_remote_write_dropped_samples_total //p' "$TMP/end.txt")" = 0 ] ||
	fail "/metrics counts dropped samples: $(grep remote_write "$TMP/end.txt")"

# the totals: PromQL's last value of each node's counters = the collector's final report
for n in 1 2 3 4 5 6 7 8; do
	C=$(jq -c --argjson n "$n" '.nodes[] | select(.node == $n)' "$TMP/RW.json")
	[ -n "$C" ] || fail "the collector's report has no node $n"
	noise=$(promql "vnoise_node_noise_seconds_total{node=\"$n\"}" | jq -r '.[0].value[1]')
	dg=$(promql "vnoise_node_datagrams_total{node=\"$n\"}" | jq -r '.[0].value[1]')
	awk -v p="$noise" -v c="$(jq .noise_ns <<<"$C")" 'BEGIN { d = p * 1e9 - c; exit !(d < 1 && d > -1) }' ||
		fail "node $n: PromQL noise ${noise}s != collector's $(jq .noise_ns <<<"$C") ns"
	[ "$dg" = "$(jq .datagrams <<<"$C")" ] || fail "node $n: PromQL datagrams $dg != $(jq .datagrams <<<"$C")"
	[ "$dg" = "$(jq .datagrams "$TMP/node$n.json")" ] || fail "node $n: $dg datagrams, the node sent $(jq .datagrams "$TMP/node$n.json")"
done
total=$(promql 'sum(vnoise_node_noise_seconds_total)' | jq -r '.[0].value[1]')
ok "A: PromQL totals = the collector's per node (noise, datagrams); sum of noise ${total}s"

# every delivered sample is stored; the outage's samples arrived late but with their own time
stored=$(samples_stored '{__name__=~"vnoise_.+"}')
[ "$stored" = "$dsamp" ] || fail "the TSDB holds $stored samples, the collector delivered $dsamp"
inside=$(promql 'vnoise_node_datagrams_total{node="1"}[1h]' |
	jq --argjson a "$T_DOWN" --argjson b "$T_UP" '[.[0].values[] | select(.[0] > $a + 1 and .[0] < $b - 1)] | length')
[ "$inside" -ge 25 ] || fail "only $inside samples of node 1 stamped inside the 30 s outage (want >= 25)"
increasing=$(promql 'vnoise_node_datagrams_total{node="1"}[1h]' |
	jq '[.[0].values | map(.[1] | tonumber) | . as $v | range(1; length) | select($v[.] < $v[. - 1])] | length')
[ "$increasing" = 0 ] || fail "node 1's datagram counter goes down $increasing times in the TSDB"
ok "B: after the outage: $dreq requests ($dsamp samples) delivered, $retries retries, 0 dropped; the TSDB holds all $stored; $inside samples of node 1 from inside the outage, in order"

# --- C: the per-host exporter (libvirt's test driver: no root, no libvirtd)
"$VH" serve --connect test:///default --no-dispatch --remote-write "$URL" -p 1s -d 4s >"$TMP/serve.out" \
	2>"$TMP/serve.err" || fail "serve --remote-write failed: $(tail -3 "$TMP/serve.err")"
read -r dreq dsamp retries dropreq dropsamp <<<"$(summary "$TMP/serve.err")"
[ "${dreq:-0}" -ge 3 ] && [ "$dropreq" = 0 ] || fail "serve: $(tail -2 "$TMP/serve.err")"
[ "$(promql 'vnoise_host_periods_total' | jq -r '.[0].value[1]')" -ge 3 ] ||
	fail "serve: no vnoise_host_periods_total >= 3 in prometheus: $(promql 'vnoise_host_periods_total')"
stored=$(samples_stored '{__name__=~"vnoise_host_.+"}')
[ "$stored" = "$dsamp" ] || fail "serve: the TSDB holds $stored samples, serve delivered $dsamp"
ok "C: serve --remote-write: $dreq requests ($dsamp samples) delivered and stored"

# --- refused (404: a wrong path): every request dropped and counted, said once
"$VH" collect -k "$KEY" --no-store --listen 127.0.0.1:0 --remote-write "http://127.0.0.1:$PP/nope" \
	--remote-write-period 200ms -d 1500ms >/dev/null 2>"$TMP/nope.err" || fail "collect to /nope: $(tail -2 "$TMP/nope.err")"
read -r dreq dsamp retries dropreq dropsamp <<<"$(summary "$TMP/nope.err")"
[ "${dreq:-x}" = 0 ] && [ "$retries" = 0 ] && [ "$dropreq" -ge 5 ] && [ "$dropsamp" -gt 0 ] ||
	fail "refused requests: $(tail -1 "$TMP/nope.err")"
[ "$(grep -c "HTTP 404.*refused: dropped (counted)" "$TMP/nope.err")" = 1 ] ||
	fail "the refusal is not said once: $(cat "$TMP/nope.err")"
ok "refused (404): $dropreq requests ($dropsamp samples) counted as dropped, 0 retried, said once"
stop_prom
