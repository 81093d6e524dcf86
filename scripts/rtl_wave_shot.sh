#!/bin/sh
# Regenerates docs/rtl_packet.png: one packet through the 4-port RTL next to
# the C model (save file scripts/rtl_packet.gtkw: seed 3 sends the first flit
# from input 3 to output 1), from the FST xbar_equiv writes, grabbed from GTKWave under
# xvfb-run (headless). Usage: scripts/rtl_wave_shot.sh [build-dir]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# Light load, unicast, so the first flit crosses an idle switch.
"$BUILD/bin/simrun" --quiet --out "$OUT" xbar_equiv configs=1 ports=4 depth=4 iters=1 load=0.04 mcast=0 \
    pattern=uniform cycles=40 ramp=0 thr_cycles=0 seed=3 > /dev/null
# The first input flit: zoom to a few cycles around it (times in ps, 1 cycle = 1000 ps).
FIRST=$(fst2vcd "$OUT/waves/xbar_equiv.fst" 2>/dev/null | awk '
    /\$var .* in_valid\[3:0\]/ && id == "" && /config0/ == 0 { }
    /\$scope module rtl/ { inrtl = 1 } /\$upscope/ { inrtl = 0 }
    inrtl && /\$var/ && $5 == "in_valid[3:0]" { id = $4 }
    /^#/ { t = substr($0, 2) }
    id != "" && /^b/ && $2 == id && $1 != "b0" && $1 != "b0000" { print t; exit }')
FIRST=${FIRST:-0}
START=$((FIRST > 1000 ? FIRST - 1000 : 0))
END=$((FIRST + 4000))
cat > "$OUT/shot.tcl" <<TCL
gtkwave::setZoomRangeTimes $START $END
gtkwave::/File/Grab_To_File $ROOT/docs/rtl_packet.png
gtkwave::/File/Quit
TCL
xvfb-run -a -s "-screen 0 1400x1100x24" gtkwave -S "$OUT/shot.tcl" "$OUT/waves/xbar_equiv.fst" "$ROOT/scripts/rtl_packet.gtkw" \
    > "$OUT/gtkwave.log" 2>&1 || { cat "$OUT/gtkwave.log"; exit 1; }
echo "docs/rtl_packet.png: cycles $((START / 1000))..$((END / 1000)), first flit presented at cycle $((FIRST / 1000))"
