#!/bin/sh
# cxl_random benchmark: 10^6 random CXL.cache accesses (2 devices + 2 cores,
# 8 lines in 2x2 caches, jitter 20 ns, every checker on); writes the
# "cxl_random" object {"ops_per_s","ops","wall_s","violations","seed"} into
# reports/bench.json. Fails if any check fails (violations, deadlocks).
#   sh scripts/bench.d/cxl_random.sh BUILD_DIR
build=${1:-build}
exec "$build/bin/simrun" --quiet cxl_random ops=1000000 seed=1 trace=0 bench=1
