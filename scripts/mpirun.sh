#!/bin/sh
# mpirun as this project runs it: --oversubscribe when more ranks than cores
# (the 2-core CI machine), and allowed as root (containers, CI).
#   scripts/mpirun.sh NP COMMAND...
set -eu
np=$1; shift
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: install openmpi-bin (scripts/bootstrap.sh does)" >&2; exit 2; }
over=""
[ "$np" -gt "$(nproc 2>/dev/null || echo 1)" ] && over="--oversubscribe"
# Under AddressSanitizer (make asan): Open MPI's plugins leave allocations at
# exit that LeakSanitizer reports (from unloaded modules, so no suppression can
# name them); leaks of our code are checked by the same code's one-process runs.
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# shellcheck disable=SC2086
exec mpirun $over -np "$np" "$@"
