#!/bin/sh
# The "network" object of reports/bench.json: 64:1 RoCE incast and a 128-host
# leaf-spine RoCE all-to-all (bench/network_bench.c runs simrun incast and net_alltoall).
set -eu
build=${1:-build}
exe=$build/bin/network_bench
[ -x "$exe" ] || { echo "network bench: $exe not built" >&2; exit 1; }
"$exe" "$build/bin/simrun" reports/bench.json
