#!/bin/sh
# The "server" object of reports/bench.json: an 8-GPU server's concurrent
# host-to-device copies (bench/server_bench.c runs simrun h2d_copy gpus=8).
set -eu
build=${1:-build}
exe=$build/bin/server_bench
[ -x "$exe" ] || { echo "server bench: $exe not built" >&2; exit 1; }
"$exe" "$build/bin/simrun" reports/bench.json
