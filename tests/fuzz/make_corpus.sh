#!/bin/bash
# Seed corpora of the record-file targets:
#   make_corpus.sh DIR VNOISE-GUEST           fuzz_recfile: small real record files made by vnoise-guest (root) or,
#                                             without root, none;
#   make_corpus.sh --host DIR FUZZ-HOSTREC    fuzz_hostrec: small host record files (and their sealed programs)
#                                             that the target writes through the record writer (a real one needs
#                                             root, eBPF and libvirt domains).
set -u
if [ "${1:-}" = --host ]; then
	mkdir -p "$2"
	VNOISE_FUZZ_SEEDS=$2 "$3"
	exit
fi
out=$1
vg=$2
mkdir -p "$out"
if [ "$(id -u)" -eq 0 ] && [ -x "$vg" ]; then
	"$vg" record -o "$out/seed1.vnr" --cpus 0 --duration 300ms -q >/dev/null 2>&1
	"$vg" record -o "$out/seed2.vnr" --cpus all --duration 200ms --threshold 1us -q >/dev/null 2>&1
fi
exit 0
