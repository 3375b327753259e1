#!/bin/bash
# vnoise-host under a guest whose records are valid but whose stream is hostile, for SECONDS per stream
# (default 60): tests/integration/stream_hostile_vm.sh run longer (STREAM_S), on a harness VM (2-vCPU QEMU
# TCG guest, no agent; tests/tools/streamhostile writes the region from the host). Per stream (future:
# far-future ends under a creeping horizon; falling: ends rising, starts falling; flip: a new epoch and a
# layout flip every round) it prints vnoise-host's anonymous RSS at the start and its peak against the
# domain's budget (64 MiB), the largest gap between its 1 s period lines, the records read and refused, and
# the epochs followed. The test's bounds still apply (it fails when one does not hold).
# Usage: bench/stream_hostile.sh [SECONDS]   (root; under `flock /tmp/vnoise-vm.lock`)
set -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-60}
echo "# bench/stream_hostile.sh $secs ($(date -u +%F), $(nproc) CPUs)"
STREAM_S=$secs bash "$here/../tests/integration/stream_hostile_vm.sh" 2>&1 |
	grep -E '^(future|falling|flip): |^ok: |^FAIL'
