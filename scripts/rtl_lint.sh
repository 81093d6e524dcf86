#!/bin/sh
# make lint: Verilator -Wall lint of the crossbar RTL over several parameter
# sets (no blanket waivers: the few in-source lint_off lines each say why),
# Icarus -g2012 elaboration, and Yosys synthesis with zero latches allowed;
# prints the cell counts. Exit 1 on any finding.
set -u
RTL=$(cd "$(dirname "$0")/../rtl" && pwd)
SRC="$RTL/xbar_rr_arbiter.sv $RTL/xbar_onehot_index.sv $RTL/xbar_bit_transpose.sv $RTL/xbar_islip_alloc.sv $RTL/xbar_input_buf.sv $RTL/xbar_fanout_join.sv $RTL/xbar_datapath.sv $RTL/xbar_top.sv"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0

# NPORTS DEPTH ITERS LATENCY FLIT_W FANOUT_READ
for p in "2 2 1 1 8 0" "4 2 1 1 64 1" "5 4 2 1 64 0" "8 64 4 3 64 1" "16 64 4 1 64 0" "16 64 4 1 64 1" "32 64 4 1 64 0" "12 8 3 2 16 1"; do
    set -- $p
    if verilator --lint-only -Wall --top-module xbar_top -GNPORTS=$1 -GDEPTH=$2 -GITERS=$3 -GLATENCY=$4 -GFLIT_W=$5 \
        -GFANOUT_READ=$6 $SRC > "$TMP/vl.log" 2>&1; then
        echo "lint: verilator -Wall NPORTS=$1 DEPTH=$2 ITERS=$3 LATENCY=$4 FLIT_W=$5 FANOUT_READ=$6: clean"
    else
        echo "lint: verilator -Wall NPORTS=$1 DEPTH=$2 ITERS=$3 LATENCY=$4 FLIT_W=$5 FANOUT_READ=$6: FAILED"; cat "$TMP/vl.log"; fail=1
    fi
done

if iverilog -g2012 -Wall -o "$TMP/tb.vvp" -s xbar_file_tb -Pxbar_file_tb.NPORTS=5 -Pxbar_file_tb.FANOUT_READ=1 "$RTL/tb/xbar_file_tb.sv" $SRC > "$TMP/iv.log" 2>&1 \
    && [ ! -s "$TMP/iv.log" ]; then
    echo "lint: iverilog -g2012 -Wall (RTL + file testbench): clean"
else
    echo "lint: iverilog -g2012 -Wall: FAILED or warnings"; cat "$TMP/iv.log"; fail=1
fi

# Synthesis of small configurations (the storage is flops; a 16-port switch
# with 32-deep 64-bit VOQs would be half a million of them).
for p in "4 2 2 1 8 0" "5 4 2 2 8 1"; do
    set -- $p
    if yosys -q -p "read_verilog -sv $SRC; chparam -set NPORTS $1 -set DEPTH $2 -set ITERS $3 -set LATENCY $4 -set FLIT_W $5 -set FANOUT_READ $6 xbar_top; \
        synth -top xbar_top -flatten; select -assert-count 0 t:\$_DLATCH_*; select -assert-count 0 t:\$dlatch; \
        tee -q -o $TMP/stat.txt stat" > "$TMP/ys.log" 2>&1; then
        cells=$(grep -m1 "Number of cells" "$TMP/stat.txt" | awk '{print $NF}')
        ffs=$(grep -E '\$_S?DFFE?_' "$TMP/stat.txt" | awk '{s += $NF} END {print s + 0}')
        echo "lint: yosys synth NPORTS=$1 DEPTH=$2 ITERS=$3 LATENCY=$4 FLIT_W=$5 FANOUT_READ=$6: 0 latches, $cells cells ($ffs flip-flops)"
        grep -E '^\s+\$_' "$TMP/stat.txt" | sed 's/^/      /'
    else
        echo "lint: yosys synth NPORTS=$1 ...: FAILED"; grep -v "^Warning: Replacing memory" "$TMP/ys.log" | tail -20; fail=1
    fi
done
[ $fail -eq 0 ] && echo "lint: all clean"
exit $fail
