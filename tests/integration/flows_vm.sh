#!/bin/bash
# vnoise-host --flows against a real libvirt TCG guest with a virtio NIC on a tap:
# the guest runs `vnoise-guest agent` on vCPU 0 with virtio-net's receive interrupt pinned there; the host
# sends a known number of UDP datagrams of a known size to the guest's address (tests/tools/udpsend, one
# unconnected socket: one flow) while vnoise-host captures on the domain's tap.
#   1. top --guest --flows --json, 1 s periods: the periods' flows add up to exactly the datagrams sent into
#      the guest (packets, bytes = Ethernet frame length), no capture drops, and the guest's NET_RX softirq
#      noise is non-zero in the periods that carried them (or the one after: gaps are matched once both
#      sides have published past them);
#   2. record --guest --flows: the same exactness over the run, and report --guest of the file equals it;
#   3. record --flows (host view, vnoise.host/1): exact again; directions: the datagrams are "to_guest"
#      (outgoing, PCAP_D_OUT, on the host's tap), the guest's ICMP port unreachables "from_guest", and the
#      tap's own tx counter covers what was captured into the guest;
#   4. the domain is destroyed and started again during one record: the new tap is captured, exactly.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/vm/vm.bash"
require_root
require_bpf
require_tools ip
VH=$BUILD/vnoise-host
US=$BUILD/tests/tools/udpsend
[ -x "$VH" ] || fail "$VH not built"
[ -x "$US" ] || fail "$US not built"
[ -c /dev/net/tun ] || skip "no /dev/net/tun: the guest NIC needs a tap"
PORT=5555

vm_setup || fail "vm_setup"
vm_start_agent --cpus 0 --duration 150s -- --net --pin0 0 --pin 1:1 || fail "the agent does not run"
echo "guest $VM_GUEST_IP on tap $VM_TAP (host $VM_HOST_IP)"

# virtio-net's receive interrupts (and so NET_RX) on the measured vCPU 0
irqs=$(vm_exec "grep -E 'virtio[0-9]+-input' /proc/interrupts" | cut -d: -f1 | tr -d ' ')
[ -n "$irqs" ] || fail "no virtio-net input interrupt in the guest"
for i in $irqs; do
	vm_exec "echo 1 >/proc/irq/$i/smp_affinity" >/dev/null || fail "cannot pin guest IRQ $i"
	[ "$(vm_exec "cat /proc/irq/$i/smp_affinity" | tr -d '\r')" = 1 ] || fail "guest IRQ $i not on vCPU 0"
done
# both neighbour tables filled before counting
vm_exec "ping -c 1 -W 5 $VM_HOST_IP" >/dev/null || fail "the guest cannot reach the host's tap"
ok "guest NIC up; virtio-net input IRQ(s) $irqs on vCPU 0"

# flow JSON selectors: the datagrams of source port $1, and their sum over a list of documents
sel() { echo ".dir == \"to_guest\" and .proto == \"udp\" and .src == \"$VM_HOST_IP\" and .dst == \"$VM_GUEST_IP\" and .sport == $1 and .dport == $PORT"; }

# ---- 1: top, per period ----
n1=300 s1=256
"$VH" top --guest --flows -D "$VM_NAME" -p 1s -d 8s --json -q >"$TMP/top.jsonl" 2>"$TMP/top.err" &
vh=$!
PIDS+=($vh)
sleep 2.5
"$US" "$VM_GUEST_IP" $PORT $n1 $s1 2000 >"$TMP/us1" || fail "udpsend failed: $(cat "$TMP/us1")"
sp1=$(awk '$1 == "port" { print $2 }' "$TMP/us1")
wait $vh || { cat "$TMP/top.err"; fail "top --guest --flows failed"; }
[ "$(wc -l <"$TMP/top.jsonl")" -ge 7 ] || fail "top printed $(wc -l <"$TMP/top.jsonl") periods in 8 s"
jq -se 'map(.schema == "vnoise.match/1") | all' "$TMP/top.jsonl" >/dev/null || fail "not vnoise.match/1 documents"
# per period: our packets, bytes, capture drops, NET_RX
jq -sc "map(.domains[0] | {p: ([.flows[]? | select($(sel "$sp1")) | .packets] | add // 0),
	b: ([.flows[]? | select($(sel "$sp1")) | .bytes] | add // 0),
	drop: ([.capture.taps[]? | .to_guest.dropped + .from_guest.dropped] | add // 0),
	rx: (.guest_net.net_rx_ns // 0), rxn: (.guest_net.net_rx_count // 0),
	dev: (.guest_net.device_irq_ns // 0)})" "$TMP/top.jsonl" >"$TMP/periods.json"
echo "periods (packets, bytes, drops, NET_RX ns, NET_RX gaps, device IRQ ns):"
jq -r '.[] | "  \(.p) \(.b) \(.drop) \(.rx) \(.rxn) \(.dev)"' "$TMP/periods.json"
p1=$(jq 'map(.p) | add' "$TMP/periods.json")
b1=$(jq 'map(.b) | add' "$TMP/periods.json")
[ "$p1" -eq "$n1" ] || fail "top: $p1 packets of the flow over the periods, $n1 sent"
[ "$b1" -eq $((n1 * (14 + 20 + 8 + s1))) ] || fail "top: $b1 bytes, want $((n1 * (42 + s1)))"
[ "$(jq 'map(.drop) | add' "$TMP/periods.json")" -eq 0 ] || fail "the capture dropped frames"
# NET_RX in the periods that carried the flow, each counted with the period after it
rx_busy=$(jq '. as $a | [range(0; length) | select($a[.].p > 0) | $a[.].rx + ($a[. + 1].rx // 0)] | add // 0' "$TMP/periods.json")
rxn_busy=$(jq '. as $a | [range(0; length) | select($a[.].p > 0) | $a[.].rxn + ($a[. + 1].rxn // 0)] | add // 0' "$TMP/periods.json")
nbusy=$(jq 'map(select(.p > 0)) | length' "$TMP/periods.json")
[ "$rx_busy" -gt 0 ] || fail "no guest NET_RX noise in the $nbusy periods with the flow"
ok "top: $p1 packets / $b1 bytes in $nbusy periods, exactly what was sent; guest NET_RX $rx_busy ns in $rxn_busy gaps there"

# ---- 2: record --guest, the run's totals, and the file ----
n2=200 s2=1000
"$VH" record --guest --flows -D "$VM_NAME" -d 7s -o "$TMP/g.rec" --json >"$TMP/g.json" 2>"$TMP/g.err" &
vh=$!
PIDS+=($vh)
sleep 2.5
"$US" "$VM_GUEST_IP" $PORT $n2 $s2 2000 >"$TMP/us2" || fail "udpsend failed: $(cat "$TMP/us2")"
sp2=$(awk '$1 == "port" { print $2 }' "$TMP/us2")
wait $vh || { cat "$TMP/g.err"; fail "record --guest --flows failed"; }
"$VH" report --guest "$TMP/g.rec" >"$TMP/g.txt" || fail "report --guest failed"
cat "$TMP/g.txt"
d='.domains[0]'
read -r p2 b2 < <(jq -r "[$d.flows[] | select($(sel "$sp2"))] | \"\(map(.packets) | add // 0) \(map(.bytes) | add // 0)\"" "$TMP/g.json")
[ "$p2" -eq "$n2" ] && [ "$b2" -eq $((n2 * (42 + s2))) ] ||
	fail "record --guest: $p2 packets / $b2 bytes, sent $n2 / $((n2 * (42 + s2)))"
jq -e "$d.capture.taps[0].tap == \"$VM_TAP\" and $d.capture.taps[0].to_guest.dropped == 0" "$TMP/g.json" >/dev/null ||
	fail "capture: $(jq -c "$d.capture" "$TMP/g.json")"
rx2=$(jq "$d.guest_net.net_rx_ns" "$TMP/g.json")
[ "$rx2" -gt 0 ] || fail "no guest NET_RX noise over the run: $(jq -c "$d.guest_net" "$TMP/g.json")"
grep -q "udp $VM_HOST_IP:$sp2 > $VM_GUEST_IP:$PORT" "$TMP/g.txt" || fail "the text view does not show the flow"
"$VH" report --guest "$TMP/g.rec" --json | jq -S '.domains' >"$TMP/rep.dom"
jq -S '.domains' "$TMP/g.json" >"$TMP/live.dom"
cmp -s "$TMP/rep.dom" "$TMP/live.dom" || { diff "$TMP/live.dom" "$TMP/rep.dom" | head; fail "report --guest differs from the live view"; }
ok "record --guest: $p2 packets / $b2 bytes exactly; guest NET_RX $rx2 ns ($(jq "$d.guest_net.net_rx_count" "$TMP/g.json") gaps), device IRQs $(jq "$d.guest_net.device_irq_ns" "$TMP/g.json") ns; report of the file equals it"

# ---- 3: host view, directions ----
n3=50 s3=64
read -r tx0 _ < <(cat "/sys/class/net/$VM_TAP/statistics/tx_packets")
"$VH" record --flows -D "$VM_NAME" -d 5s -o "$TMP/h.rec" --json >"$TMP/h.json" 2>"$TMP/h.err" &
vh=$!
PIDS+=($vh)
sleep 2
"$US" "$VM_GUEST_IP" $PORT $n3 $s3 5000 >"$TMP/us3" || fail "udpsend failed: $(cat "$TMP/us3")"
sp3=$(awk '$1 == "port" { print $2 }' "$TMP/us3")
wait $vh || { cat "$TMP/h.err"; fail "record --flows failed"; }
read -r tx1 _ < <(cat "/sys/class/net/$VM_TAP/statistics/tx_packets")
jq -e '.schema == "vnoise.host/1"' "$TMP/h.json" >/dev/null || fail "not vnoise.host/1"
read -r p3 b3 < <(jq -r "[$d.flows[] | select($(sel "$sp3"))] | \"\(map(.packets) | add // 0) \(map(.bytes) | add // 0)\"" "$TMP/h.json")
[ "$p3" -eq "$n3" ] && [ "$b3" -eq $((n3 * (42 + s3))) ] ||
	fail "record --flows: $p3 packets / $b3 bytes, sent $n3 / $((n3 * (42 + s3)))"
into=$(jq "[$d.capture.taps[].to_guest.packets] | add" "$TMP/h.json")
[ "$into" -ge "$n3" ] && [ "$into" -le $((tx1 - tx0)) ] ||
	fail "captured $into frames into the guest; the tap transmitted $((tx1 - tx0)) meanwhile"
jq -e "[$d.flows[] | select(.dir == \"from_guest\" and .proto == \"icmp\" and .src == \"$VM_GUEST_IP\" and .sport == 3 and .dport == 3)] | length == 1" "$TMP/h.json" >/dev/null ||
	fail "no ICMP port unreachable from the guest: $(jq -c "[$d.flows[] | select(.dir == \"from_guest\")]" "$TMP/h.json")"
jq -e "[$d.flows[] | select(.dir == \"to_guest\" and .src == \"$VM_GUEST_IP\")] | length == 0" "$TMP/h.json" >/dev/null ||
	fail "a flow from the guest's address counted into the guest"
"$VH" report "$TMP/h.rec" | sed -n '/^  tap /,$p'
"$VH" report "$TMP/h.rec" --json | jq -S '.domains' >"$TMP/rep.dom"
jq -S '.domains' "$TMP/h.json" >"$TMP/live.dom"
cmp -s "$TMP/rep.dom" "$TMP/live.dom" || { diff "$TMP/live.dom" "$TMP/rep.dom" | head; fail "report differs from the live view"; }
ok "record --flows: $p3 packets / $b3 bytes exactly; $into frames into the guest (tap tx counter $((tx1 - tx0))); the guest's ICMP replies counted from it"

# ---- 4: the domain restarts during one record: its (new) tap is captured again ----
n4=40 s4=128
virsh -q -c qemu:///system dumpxml "$VM_NAME" >"$TMP/dom.xml" || fail "dumpxml"
"$VH" record --flows -D "$VM_NAME" -d 90s -o "$TMP/r.rec" --json >"$TMP/r.json" 2>"$TMP/r.err" &
vh=$!
PIDS+=($vh)
sleep 2
virsh -q -c qemu:///system destroy "$VM_NAME" >/dev/null || fail "destroy"
virsh -q -c qemu:///system create "$TMP/dom.xml" >/dev/null || fail "create again"
tap2=$(virsh -q -c qemu:///system domiflist "$VM_NAME" | awk '$2 == "ethernet" { print $1; exit }')
[ -n "$tap2" ] && ip addr add "$VM_HOST_IP/24" dev "$tap2" && ip link set "$tap2" up ||
	fail "cannot configure the restarted domain's tap '$tap2'"
vm_wait_ready 90 || fail "restarted guest not ready"
vm_exec "ping -c 1 -W 5 $VM_HOST_IP" >/dev/null || fail "the restarted guest cannot reach the host"
"$US" "$VM_GUEST_IP" $PORT $n4 $s4 2000 >"$TMP/us4" || fail "udpsend failed: $(cat "$TMP/us4")"
sp4=$(awk '$1 == "port" { print $2 }' "$TMP/us4")
sleep 1.5
kill -INT $vh
wait $vh || { cat "$TMP/r.err"; fail "record across the restart failed"; }
grep "tap" "$TMP/r.err"
jq -e "$d.starts >= 2 and $d.stops >= 1" "$TMP/r.json" >/dev/null ||
	fail "restart not followed: $(jq -c "$d | {starts, stops}" "$TMP/r.json")"
read -r p4 b4 < <(jq -r "[$d.flows[] | select($(sel "$sp4") and .tap == \"$tap2\")] | \"\(map(.packets) | add // 0) \(map(.bytes) | add // 0)\"" "$TMP/r.json")
[ "$p4" -eq "$n4" ] && [ "$b4" -eq $((n4 * (42 + s4))) ] ||
	fail "after the restart: $p4 packets / $b4 bytes on $tap2, sent $n4 / $((n4 * (42 + s4)))"
ok "domain restarted (tap $VM_TAP -> $tap2): $p4 packets / $b4 bytes counted on the new tap"
exit 0
