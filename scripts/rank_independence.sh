#!/bin/sh
# Same results at any number of ranks: runs TEST in one process and over 2
# and 4 MPI ranks (scripts/mpirun.sh: --oversubscribe on a 2-core machine),
# then compares each ranked report with the one-process report field by
# field (report_same: everything but wall-clock times, ranks, partition).
#   scripts/rank_independence.sh SIMRUN REPORT_SAME OUT_DIR TEST [--regress] [k=v ...]
# Extra runs: RANKS_EXTRA="4:partition=nodes 2:partition=nodes" (np:args).
set -eu
# shellcheck disable=SC2086
simrun=$1 same=$2 out=$3 test=$4; shift 4
here=$(cd "$(dirname "$0")" && pwd)
opts=""
if [ "${1:-}" = --regress ]; then opts=--regress; shift; fi
rm -rf "$out"; mkdir -p "$out"
"$simrun" $opts --quiet --out "$out/np1" "$test" "$@" trace=0 > "$out/np1.log" 2>&1 || { cat "$out/np1.log"; exit 1; }
rc=0
run() {   # np tag extra-args...
    np=$1 tag=$2; shift 2
    if ! "$here/mpirun.sh" "$np" "$simrun" $opts --quiet --out "$out/$tag" "$test" "$@" > "$out/$tag.log" 2>&1; then
        echo "$test over $np ranks ($*) failed:"; cat "$out/$tag.log"; rc=1; return
    fi
    "$same" "$out/np1/reports/$test.json" "$out/$tag/reports/$test.json" || rc=1
}
run 2 np2 "$@" trace=0
run 4 np4 "$@" trace=0
for extra in ${RANKS_EXTRA:-}; do
    np=${extra%%:*} args=${extra#*:}
    # shellcheck disable=SC2086
    run "$np" "np$np-$(echo "$args" | tr '=,' '__')" "$@" $args trace=0
done
exit $rc
