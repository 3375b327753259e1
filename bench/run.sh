#!/bin/bash
# All vnoise benchmarks (guest and host), figures only (never pass/fail). Run as root: make bench
#   sampler loop ns/iteration   (target <= 40 ns)       vnoise-guest measure, overhead.sampler_loop_ns
#   kernel helper ns/event      (targets: sched_switch <= 150 ns, any handler <= 300 ns)   bench/bpf_cost.sh
#   merge throughput            (target >= 5 M events/s on one core)                      build/bench/merge_bench
#   host daemon CPU per vCPU    (target <= 0.1% of a core, idle guest, dispatch log on)   bench/host_cost.sh
#   host dispatch log ns/event  (idle, storm with a busy vCPU, storm on a vCPU-free CPU)   bench/host_cost.sh
#   shm producer ns/record, consumer records/s (targets <= 50 ns, >= 10 M/s)            build/bench/shm_bench
#   DTL host writer ns/entry, % of a core at 1 k out-intervals/s per vCPU (target <= 0.05%), guest reader ns/entry
#                                                                                       build/bench/dtl_bench
#   region fault guard ns per access, fstat ns per round, a caught truncation us        build/bench/regionguard_bench
#   clock alignment ns per update / conversion                                          build/bench/clocksync_bench
#   matcher intervals/s         (target >= 5 M on one core)                             build/bench/match_bench
#   collector store inserts/s (target >= 200 k rows/s), a day's ranking on 10 M rows (< 1 s)  build/bench/store_bench
#   remote-write series/s: encode on one core (parse+protobuf, snappy), end to end     build/bench/remotewrite_bench
#   per-host exporter CPU at a 1 s scrape, 4 domains x 2 vCPUs (target <= 0.2% of a core)   build/bench/hostmetrics_bench
#   preload wrapper ns per call (target <= 1 us)                                        bench/preload_cost.sh
#   MPI wrapper ns per call, interval tracking per call and job slowdown (2 ranks)       bench/mpi_cost.sh
#   collective detector vs vnoise at injection levels 0..1% (seed 003 Tables 3-6)     bench/sweep.sh
#   guest sample -> host report latency (target max <= 20 ms after the first second), --guest CPU (<= 0.3%)
#                                                                                       bench/match_vm.sh
#   vnoise-host's heap and period lines under hostile guest streams (<= baseline + 64 MiB) bench/stream_hostile.sh
#   soak: RSS/fds/CPU of every vnoise process and every loss counter over MINUTES  bench/soak.sh (by hand, not here)
#   SHA-256 / HMAC speed (SHA-NI and portable)                                          build/bench/sha256_bench
#   cluster collector datagrams/s on one core (target >= 100 k): engine, end to end    collect_bench, collect.sh
#   reporting rank's cost per interval sent to the collector                           build/bench/node_send_bench
set -u
BUILD=${VNOISE_BUILD:-build}
CPU=${1:-$(sed 's/.*[,-]//' /sys/devices/system/cpu/online)}
cd "$(dirname "$0")/.." || exit 1
echo "# vnoise benchmarks on $(uname -r), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "## sampler loop (reproduce: $BUILD/vnoise-guest measure --cpus $CPU --duration 5s --json)"
"$BUILD/vnoise-guest" measure --cpus "$CPU" --duration 5s --json -q | jq -r '
	"sampler loop: \(.overhead.sampler_loop_ns * 10 | floor / 10) ns/iteration; " +
	"kernel helper idle cost: \(.overhead.bpf_run_ns_per_event | floor) ns/event over \(.overhead.bpf_runs) runs"'
echo
echo "## kernel helper under event storms (reproduce: bench/bpf_cost.sh $CPU 6)"
bench/bpf_cost.sh "$CPU" 6
echo
echo "## merge throughput (reproduce: $BUILD/bench/merge_bench 5000000)"
"$BUILD/bench/merge_bench" 5000000
echo
echo "## shared-memory channel (reproduce: $BUILD/bench/shm_bench -n 20000000 -s 4096)"
"$BUILD/bench/shm_bench" -n 20000000 -s 4096
echo
echo "## dispatch trace log (reproduce: $BUILD/bench/dtl_bench -n 10000000)"
"$BUILD/bench/dtl_bench" -n 10000000
echo
echo "## region fault guard (reproduce: $BUILD/bench/regionguard_bench -n 10000000)"
"$BUILD/bench/regionguard_bench" -n 10000000
echo
echo "## guest clock responder (reproduce: $BUILD/bench/dtl_responder_bench -d 20)"
"$BUILD/bench/dtl_responder_bench" -d 20
echo
echo "## clock alignment (reproduce: $BUILD/bench/clocksync_bench 1000000)"
"$BUILD/bench/clocksync_bench" 1000000
echo
echo "## matcher throughput (reproduce: $BUILD/bench/match_bench 2000000)"
"$BUILD/bench/match_bench" 2000000
echo
echo "## per-host Prometheus exporter (reproduce: $BUILD/bench/hostmetrics_bench -n 300)"
"$BUILD/bench/hostmetrics_bench" -n 300
echo
echo "## collector store (reproduce: $BUILD/bench/store_bench)"
"$BUILD/bench/store_bench"
echo
echo "## remote-write (reproduce: $BUILD/bench/remotewrite_bench -n 1000)"
taskset -c "$CPU" "$BUILD/bench/remotewrite_bench" -n 1000 2>/dev/null
echo
echo "## LD_PRELOAD wrapper cost (reproduce: bench/preload_cost.sh 5000000)"
bench/preload_cost.sh 5000000
echo
echo "## MPI wrapper and interval tracking (reproduce: bench/mpi_cost.sh 200000)"
bench/mpi_cost.sh 200000
echo
echo "## SHA-256 and HMAC (reproduce: $BUILD/bench/sha256_bench 7)"
"$BUILD/bench/sha256_bench" 7
echo
echo "## cluster collector engine (reproduce: $BUILD/bench/collect_bench -c $CPU -k 64 -n 16384 -r 7)"
"$BUILD/bench/collect_bench" -c "$CPU" -k 64 -n 16384 -r 7
echo
echo "## cluster collector over loopback UDP (reproduce: bench/collect.sh 200000 2 3000 5)"
bench/collect.sh 200000 2 3000 5
echo
echo "## reporting rank, per interval to the collector (reproduce: $BUILD/bench/node_send_bench 20000 7)"
"$BUILD/bench/node_send_bench" 20000 7
echo
echo "## collective noise detector sensitivity sweep (reproduce: bench/sweep.sh)"
bench/sweep.sh
echo
echo "## host daemon cost on a harness VM (reproduce: bench/host_cost.sh 20)"
bench/host_cost.sh 20
echo
echo "## guest<->host channel end to end on a harness VM (reproduce: bench/match_vm.sh 20)"
bench/match_vm.sh 20
echo
echo "## hostile guest streams on a harness VM (reproduce: bench/stream_hostile.sh 60)"
bench/stream_hostile.sh 60
