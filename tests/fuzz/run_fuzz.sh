#!/bin/sh
# Runs the topology fuzzer for a bounded time over the committed seeds.
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS
# New corpus entries stay in BUILD_DIR/fuzz_corpus; a crash is written to
# BUILD_DIR/fuzz-crash-*: copy it to tests/fuzz/crashes/ so that the unit test
# check_topo_fuzz_replay replays it from then on.
set -eu
build=$1
seconds=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build/bin/fuzz_topo
if [ ! -x "$bin" ]; then
  echo "fuzz_topo skipped: $bin not built (no clang with libFuzzer: apt-get install clang libclang-rt-14-dev)"
  exit 77
fi
mkdir -p "$build/fuzz_corpus"
exec "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
  -artifact_prefix="$build/fuzz-crash-" "$build/fuzz_corpus" \
  "$src/topologies" "$src/tests/fuzz/seeds" "$src/tests/fuzz/crashes"
