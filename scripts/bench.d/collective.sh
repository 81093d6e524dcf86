#!/bin/sh
# The "collective" object of reports/bench.json: a 64 MiB ring all_reduce on 128 GPUs (dgx-h100 nodes=16)
# at packet level (bench/collective_bench.c runs simrun nccl_tests).
set -eu
build=${1:-build}
exe=$build/bin/collective_bench
[ -x "$exe" ] || { echo "collective bench: $exe not built" >&2; exit 1; }
"$exe" "$build/bin/simrun" reports/bench.json
