# The topology fuzzer: clang -fsanitize=fuzzer,address,undefined over the
# topology sources alone (they need nothing of the kernel but its two error
# functions, which the harness defines). Skipped, and said so, without clang.
set(FUZZ_SECONDS 60 CACHE STRING "seconds the ctest fuzz_topo entry fuzzes")
find_program(LINKSTACK_CLANG NAMES clang clang-16 clang-15 clang-14)
set(LINKSTACK_FUZZ_OK OFF)
if(LINKSTACK_CLANG)
  file(WRITE ${CMAKE_BINARY_DIR}/fuzzprobe.c
    "#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\n"
    "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${LINKSTACK_CLANG} -fsanitize=fuzzer,address,undefined ${CMAKE_BINARY_DIR}/fuzzprobe.c
                  -o ${CMAKE_BINARY_DIR}/fuzzprobe RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(probe_rc EQUAL 0)
    set(LINKSTACK_FUZZ_OK ON)
  endif()
endif()
if(LINKSTACK_FUZZ_OK)
  message(STATUS "fuzz_topo: libFuzzer with ${LINKSTACK_CLANG}")
  set(FUZZ_SRCS sim/topo.c sim/topo_json.c sim/topo_gen.c sim/topo_route.c sim/topo_cut.c sim/presets.c tests/fuzz_topo.c)
  list(TRANSFORM FUZZ_SRCS PREPEND ${CMAKE_SOURCE_DIR}/)
  set(FUZZ_BIN ${CMAKE_BINARY_DIR}/bin/fuzz_topo)
  add_custom_command(OUTPUT ${FUZZ_BIN}
    COMMAND ${LINKSTACK_CLANG} -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
            -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
            -I${CMAKE_SOURCE_DIR} -I${CMAKE_SOURCE_DIR}/tests ${FUZZ_SRCS} -lcjson -lm -o ${FUZZ_BIN}
    DEPENDS ${FUZZ_SRCS} ${CMAKE_SOURCE_DIR}/tests/fuzz_topo_one.h ${CMAKE_SOURCE_DIR}/sim/topo.h ${CMAKE_SOURCE_DIR}/sim/presets.h
    COMMENT "clang libFuzzer target fuzz_topo" VERBATIM)
  add_custom_target(fuzz_topo ALL DEPENDS ${FUZZ_BIN})
  add_test(NAME fuzz_topo COMMAND ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz.sh ${CMAKE_BINARY_DIR} ${FUZZ_SECONDS})
else()
  message(STATUS "fuzz_topo: skipped (no clang with libFuzzer; Debian: clang libclang-rt-14-dev)")
  add_test(NAME fuzz_topo COMMAND ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz.sh ${CMAKE_BINARY_DIR} ${FUZZ_SECONDS})
endif()
set_tests_properties(fuzz_topo PROPERTIES TIMEOUT 600 LABELS fuzz SKIP_RETURN_CODE 77)
