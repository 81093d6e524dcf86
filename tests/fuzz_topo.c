/* libFuzzer target over the topology reader and the generator strings
 * (built with clang -fsanitize=fuzzer,address,undefined; see CMakeLists.txt).
 * The topology layer uses only these two of the kernel's functions; here
 * both abort so that libFuzzer reports them: the reader must refuse input by
 * returning NULL, never by exiting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/kernel.h"
#include "fuzz_topo_one.h"

_Noreturn void sim_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

_Noreturn void sim_input_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sim_input_error from the topology reader: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_topo_one(data, size);
    return 0;
}
