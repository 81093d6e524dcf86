#!/bin/sh
# The "parallel" object of reports/bench.json: the cost of a sweep point beyond
# its own run, and fabric_traffic on fattree:16 over 2 MPI ranks against one
# process (bench/parallel_bench.c).
set -eu
build=${1:-build}
exe=$build/bin/parallel_bench
[ -x "$exe" ] || { echo "parallel bench: $exe not built" >&2; exit 1; }
if command -v mpirun >/dev/null 2>&1; then
    "$exe" "$build/bin/simrun" reports/bench.json scripts/mpirun.sh
else
    "$exe" "$build/bin/simrun" reports/bench.json
fi
