#!/bin/sh
# Throughput and latency vs offered load of the nvswitch model, FIFO vs VOQ
# (iSLIP-1, iSLIP-4, PIM-1), 16 ports, uniform Bernoulli cells: runs
# nvswitch_uniform per point, then gnuplot writes docs/models/nvswitch.png.
#   scripts/plot_nvswitch.sh [build dir] [cycles]
set -eu
build=${1:-build}
cycles=${2:-20000}
simrun=$build/bin/simrun
[ -x "$simrun" ] || { echo "plot_nvswitch: $simrun not built (make build)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
data=$out/points.dat
loads="0.05 0.1 0.2 0.3 0.4 0.5 0.55 0.6 0.65 0.7 0.8 0.85 0.9 0.95 1.0"
# metric NAME FILE: the number after "NAME": in a report
metric() { awk -v k="\"$1\":" '$1 == k { gsub(/,/, "", $2); print $2; exit }' "$2"; }
for cfg in "fifo islip 1" "voq islip 1" "voq islip 4" "voq pim 1"; do
  set -- $cfg
  echo "# queue=$1 alloc=$2 iters=$3" >> "$data"
  for load in $loads; do
    "$simrun" --quiet --out "$out/run" nvswitch_uniform ports=16 queue=$1 alloc=$2 iters=$3 depth=64 \
      load=$load cycles=$cycles warmup=$((cycles / 10)) trace=0 > /dev/null || true
    r=$out/run/reports/nvswitch_uniform.json
    echo "$load $(metric throughput "$r") $(metric latency_avg_cycles "$r") $(metric latency_p99_cycles "$r")" >> "$data"
  done
  printf '\n\n' >> "$data"
done
zero=$(awk 'NR==2 { print $3 }' "$data")   # the lightest-load latency of the first curve: the pipeline
mkdir -p docs/models
gnuplot <<GP
set terminal pngcairo size 1200,480 font "sans,10"
set output "docs/models/nvswitch.png"
set multiplot layout 1,2 title "nvswitch model, 16 ports, uniform Bernoulli cells, 64-flit queues, ${cycles} cycles"
set xlabel "offered load (flits/cycle/input)"
set ylabel "delivered (flits/cycle/output)"
set key left top
set xrange [0:1]
set yrange [0:1.05]
set grid
plot x title "offered" lc rgb "#bbbbbb" dt 2, \
     2-sqrt(2) title "2-sqrt(2) (Karol, N->inf)" lc rgb "#cc6666" dt 3, \
     1-(15./16)**16 title "1-(1-1/N)^N (PIM-1)" lc rgb "#6666cc" dt 3, \
     "$data" index 0 using 1:2 with linespoints pt 7 title "FIFO", \
     "" index 1 using 1:2 with linespoints pt 5 title "VOQ iSLIP-1", \
     "" index 2 using 1:2 with linespoints pt 9 title "VOQ iSLIP-4", \
     "" index 3 using 1:2 with linespoints pt 11 title "VOQ PIM-1"
set ylabel "mean latency (cycles, log)"
set logscale y
set yrange [5:20000]
set key left top
plot $zero + (15./16)*x/(2*(1-x)) title "pipeline + output-queued wait (Karol)" lc rgb "#888888" dt 2, \
     "$data" index 0 using 1:3 with linespoints pt 7 title "FIFO", \
     "" index 1 using 1:3 with linespoints pt 5 title "VOQ iSLIP-1", \
     "" index 2 using 1:3 with linespoints pt 9 title "VOQ iSLIP-4", \
     "" index 3 using 1:3 with linespoints pt 11 title "VOQ PIM-1"
unset multiplot
GP
cp "$data" docs/models/nvswitch_points.dat
echo "wrote docs/models/nvswitch.png and docs/models/nvswitch_points.dat"
