#!/bin/sh
# pcie_bw benchmark: Gen5 x16, MPS 256, 2x10^6 MWr of 256 B, trace off; median of
# three runs; writes the "pcie_bw" object {"tlps_per_s","tlps_per_cpu_s","tlps",
# "wall_s","cpu_s","target_tlps_per_s","config"} into reports/bench.json.
# Fails if any pcie_bw check fails.
#   sh scripts/bench.d/pcie_bw.sh BUILD_DIR
build=${1:-build}
exec "$build/bin/simrun" --quiet pcie_bw trace=0 size=256 count=2000000 bench_out=reports/bench.json
