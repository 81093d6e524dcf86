#!/bin/sh
# Re-plots the credit sweep from a data file written by `make sim TEST=pcie_credit`.
#   scripts/plot_pcie_credit.sh [reports/pcie_credit.dat] [out.png]
set -e
dat=${1:-reports/pcie_credit.dat}
out=${2:-reports/pcie_credit.png}
link=$(sed -n 's/^# link_GBps \([0-9.]*\).*/\1/p' "$dat")
loop=$(sed -n 's/.*probe_loop_ns \([0-9.]*\).*/\1/p' "$dat")
title=$(sed -n '1s/^# pcie_credit: //p' "$dat")
xmax=$(awk '/^(pd|ph) / { if ($3 > m) m = $3 } END { printf "%.1f", m * 1.15 / 1024 }' "$dat")
gnuplot -e "datafile='$dat'; outfile='$out'; linkrate=$link; loopns=$loop; xmax=$xmax; title_text='$title'" "$(dirname "$0")/plot_pcie_credit.gp"
echo "wrote $out"
