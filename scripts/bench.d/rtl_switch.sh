#!/bin/sh
# The "rtl_switch" object of reports/bench.json: the Verilated 16-port crossbar
# driven from C (bare loop, traced loop) and inside the nvswitch component
# with model=rtl and model=both (rtl/xbar_rtl_bench.c, built by rtl/CMakeLists.txt).
#   sh scripts/bench.d/rtl_switch.sh BUILD_DIR
set -eu
build=${1:-build}
exec "$build/bin/rtl_bench" 1000000 reports/bench.json
