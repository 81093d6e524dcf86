#!/bin/sh
# The "nvswitch" object of reports/bench.json: 64-port crossbar at full load
# (bench/nvswitch_bench.c; bench/CMakeLists.txt builds it as nvswitch_bench).
set -eu
build=${1:-build}
exe=$build/bin/nvswitch_bench
[ -x "$exe" ] || { echo "nvswitch bench: $exe not built (bench/CMakeLists.txt: add_executable(nvswitch_bench nvswitch_bench.c))" >&2; exit 1; }
"$exe" reports/bench.json 200000
