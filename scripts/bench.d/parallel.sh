#!/bin/sh
# The "parallel" object of reports/bench.json: the cost of a sweep point beyond
# its own run (bench/parallel_bench.c runs simrun --sweep).
set -eu
build=${1:-build}
exe=$build/bin/parallel_bench
[ -x "$exe" ] || { echo "parallel bench: $exe not built" >&2; exit 1; }
"$exe" "$build/bin/simrun" reports/bench.json
