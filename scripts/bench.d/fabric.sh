#!/bin/sh
# The "fabric" object of reports/bench.json: fattree:8, 400 GbE, uniform load
# 0.7, 4 KB packets (bench/fabric_bench.c runs simrun fabric_traffic twice).
set -eu
build=${1:-build}
exe=$build/bin/fabric_bench
[ -x "$exe" ] || { echo "fabric bench: $exe not built" >&2; exit 1; }
"$exe" "$build/bin/simrun" reports/bench.json "${FABRIC_BENCH_US:-50}"
