#!/bin/sh
# Plots the cxl_contention latency histogram (one curve per D2H request
# opcode, plus local hits) from <reports>/cxl_contention_hist.dat into
# <reports>/cxl_contention.png. Usage: scripts/plot_cxl_contention.sh [reports_dir]
set -e
dir=${1:-reports}
dat="$dir/cxl_contention_hist.dat"
[ -f "$dat" ] || { echo "plot_cxl_contention: $dat not found: run 'make sim TEST=cxl_contention' first" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plot_cxl_contention: gnuplot not installed" >&2; exit 2; }
cols=$(grep '^# lo_ns' "$dat" | sed 's/^# lo_ns //')
title=$(head -1 "$dat" | sed 's/^# //; s/;.*//')
plot=""
i=2
for c in $cols; do
  [ -n "$plot" ] && plot="$plot, "
  plot="$plot'$dat' using 1:$i with steps lw 2 title '$c'"
  i=$((i + 1))
done
gnuplot <<GP
set terminal pngcairo size 1000,600 noenhanced
set output '$dir/cxl_contention.png'
set title "$title"
set xlabel 'access latency (ns)'
set ylabel 'accesses per bin'
set logscale y
set grid
set key top right
plot $plot
GP
echo "wrote $dir/cxl_contention.png"
