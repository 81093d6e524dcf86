#!/bin/sh
# Headless GTKWave picture of a test's waves with its committed save file.
#   scripts/wave_shot.sh TEST OUT.png [START_PS END_PS]
# Needs gtkwave, xvfb-run (scripts/bootstrap.sh waves).
set -eu
test_name=$1 out=$2 start=${3:-0} end=${4:-0}
[ -f "waves/$test_name.fst" ] || { echo "waves/$test_name.fst not found: run 'make sim TEST=$test_name' first" >&2; exit 2; }
tcl=$(mktemp --suffix=.tcl)
trap 'rm -f "$tcl"' EXIT
{
  if [ "$end" != 0 ]; then echo "gtkwave::setZoomRangeTimes $start $end"; else echo "gtkwave::/Time/Zoom/Zoom_Full"; fi
  echo 'gtkwave::/File/Grab_To_File $::env(SHOT)'
  echo 'gtkwave::/File/Quit'
} > "$tcl"
SHOT=$out xvfb-run -a -s "-screen 0 1400x900x24" gtkwave -S "$tcl" "waves/$test_name.fst" "waves/$test_name.gtkw" >/dev/null 2>&1
[ -s "$out" ] || { echo "wave_shot: no picture written" >&2; exit 1; }
echo "wrote $out"
