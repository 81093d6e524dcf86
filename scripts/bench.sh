#!/bin/sh
# make bench: every benchmark, one after another on this machine, each writing
# its object into reports/bench.json. Compare ratios within one run: the
# machine is shared and absolute numbers move between runs.
#   scripts/bench.sh BUILD_DIR
set -u
build=${1:-build}
bin=$build/bin
mkdir -p reports
status=0
run() {   # run NAME COMMAND...
  name=$1; shift
  echo "== bench $name"
  if ! "$@"; then echo "bench $name: FAILED" >&2; status=1; fi
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
run kernel_ring "$bin/bench_report" "$bin"
# Model benchmarks register here as they land (each writes its own object).
for extra in scripts/bench.d/*.sh; do
  [ -f "$extra" ] || continue
  run "$(basename "$extra" .sh)" sh "$extra" "$build"
done
echo "reports/bench.json:"
cat reports/bench.json
exit $status
