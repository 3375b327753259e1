#!/bin/bash
# Seed corpus for fuzz_recfile: small real record files made by vnoise-guest (root) or, without root, none.
set -u
out=$1
vg=$2
mkdir -p "$out"
if [ "$(id -u)" -eq 0 ] && [ -x "$vg" ]; then
	"$vg" record -o "$out/seed1.vnr" --cpus 0 --duration 300ms -q >/dev/null 2>&1
	"$vg" record -o "$out/seed2.vnr" --cpus all --duration 200ms --threshold 1us -q >/dev/null 2>&1
fi
exit 0
