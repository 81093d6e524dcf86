#!/bin/sh
# Checks for what linkstack needs to build and test; on a Debian machine where
# we are root with apt-get, installs what is missing. Otherwise names the
# packages to install and stops.
#   scripts/bootstrap.sh          build + test needs
#   scripts/bootstrap.sh bench    also SystemC (for the side-by-side benchmark)
#   scripts/bootstrap.sh waves    also GTKWave (+ xvfb for headless pictures)
set -eu

need_pkgs=""
want() {   # want <command-or-file-test> <debian-package>
  if ! eval "$1" >/dev/null 2>&1; then need_pkgs="$need_pkgs $2"; fi
}
want "command -v cmake" cmake
want "command -v gcc" gcc
want "command -v g++" g++
want "command -v make" make
want "command -v pkg-config" pkg-config
want "command -v verilator" verilator
want "pkg-config --exists check" check
want "test -f /usr/include/zlib.h" zlib1g-dev
want "pkg-config --exists libcjson" libcjson-dev
want "command -v iverilog" iverilog
want "command -v yosys" yosys
want "command -v gnuplot" gnuplot-nox
want "command -v dot" graphviz
want "command -v mpirun && command -v mpicc" "openmpi-bin libopenmpi-dev"
want "command -v clang && ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" "clang libclang-rt-14-dev"
for extra in "$@"; do
  case "$extra" in
    bench) want "test -f /usr/include/systemc.h" libsystemc-dev ;;
    waves) want "command -v gtkwave" gtkwave; want "command -v xvfb-run" xvfb; want "command -v xauth" xauth ;;
    *) echo "bootstrap: unknown option '$extra' (allowed: bench, waves)" >&2; exit 2 ;;
  esac
done

[ -z "$need_pkgs" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "bootstrap: installing Debian packages:$need_pkgs"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $need_pkgs >/dev/null
  exit 0
fi

echo "bootstrap: missing packages:$need_pkgs" >&2
echo "install them with: sudo apt-get install$need_pkgs" >&2
exit 1
