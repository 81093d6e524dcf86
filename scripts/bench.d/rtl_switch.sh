#!/bin/sh
# The "rtl_switch" object of reports/bench.json: the Verilated crossbar driven
# from C (bare loop, traced loop) and inside the nvswitch component with
# model=rtl and model=both, at 16 ports (prebuilt variant) and 64 ports (built
# on first use into BUILD_DIR/rtl-variants: the first bench run Verilates it,
# outside the timed loops). Each figure names the variant that ran
# (model_rtl_variant); model_rtl_overhead_floor is what the component costs
# around a core that costs nothing (rtl/xbar_rtl_bench.c).
#   sh scripts/bench.d/rtl_switch.sh BUILD_DIR
set -eu
build=${1:-build}
exec "$build/bin/rtl_bench" 1000000 reports/bench.json
