# Thin front end over CMake + CTest. The commands users type:
#   make sim TEST=nvswitch_fanout [ARGS="k=v ..."]   build (Release) and run one test
#   make sim TEST=list                               list the tests
#   make sim TEST=pcie_bw ARGS=help                  a test's parameters
#   make test                                        unit tests + regression (+ lint)
#   make bench                                       benchmarks -> reports/bench.json
#   make sweep TEST=name ARGS="k=v1,v2 j=a,b" [NP=4]  every point of the cross product -> reports/name.sweep.json, .csv
#   make waves TEST=name                             open waves/name.fst in GTKWave
#   make lint                                        Verilator lint + Yosys synthesis of rtl/
#   make fuzz [FUZZ_SECONDS=600]                     fuzz the topology reader (libFuzzer, clang)
BUILD ?= build
TYPE  ?= Release
TEST  ?= nvswitch_fanout
ARGS  ?=
NP    ?= 1
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += --no-print-directory
SIMRUN = $(BUILD)/bin/simrun

.PHONY: all deps configure build sim sweep test bench waves lint asan fuzz clean
all: build

deps:
	@scripts/bootstrap.sh

# Makefile, not CMakeCache.txt: a configure that failed (a package missing)
# leaves a cache but no Makefile, and must run again.
configure: deps
	@if [ ! -f $(BUILD)/Makefile ]; then cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(TYPE); fi

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

sim: configure
	@cmake --build $(BUILD) -j $(JOBS) --target simrun
	@if [ "$(TEST)" = list ]; then $(SIMRUN) list; else $(SIMRUN) $(TEST) $(ARGS); fi

# NP > 1: the points spread over NP Open MPI ranks (configured again first, so a
# build made before Open MPI was installed finds it).
sweep: configure
	@if [ "$(NP)" -gt 1 ]; then cmake -S . -B $(BUILD) >/dev/null; fi
	@cmake --build $(BUILD) -j $(JOBS) --target simrun
	@if [ "$(NP)" -gt 1 ]; then scripts/mpirun.sh $(NP) $(SIMRUN) --sweep $(TEST) $(ARGS); \
	else $(SIMRUN) --sweep $(TEST) $(ARGS); fi

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Configured again every time: bootstrap may just have installed SystemC, and a
# cache made before (make sim, make test) holds SYSTEMC-NOTFOUND, which CMake
# searches again only when it configures. bench.sh fails if a comparison is missing.
bench:
	@scripts/bootstrap.sh bench
	@if [ ! -f $(BUILD)/Makefile ]; then cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(TYPE); else cmake -S . -B $(BUILD) >/dev/null; fi
	@cmake --build $(BUILD) -j $(JOBS)
	@scripts/bench.sh $(BUILD)

waves:
	@scripts/bootstrap.sh waves
	@test -f waves/$(TEST).fst || { echo "waves/$(TEST).fst not found: run 'make sim TEST=$(TEST)' first" >&2; exit 2; }
	gtkwave waves/$(TEST).fst waves/$(TEST).gtkw

lint: configure
	@cmake --build $(BUILD) -j $(JOBS) --target lint

FUZZ_SECONDS ?= 600
fuzz: configure
	@cmake --build $(BUILD) --target fuzz_topo
	@tests/fuzz/run_fuzz.sh $(BUILD) $(FUZZ_SECONDS)

# The sanitizer build CI runs: unit tests and the regression under ASan + UBSan (not RTL lint).
asan: deps
	@if [ ! -f $(BUILD)-asan/Makefile ]; then cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DLINKSTACK_SANITIZE=ON; fi
	@cmake --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS) -LE lint

clean:
	rm -rf $(BUILD) $(BUILD)-asan
