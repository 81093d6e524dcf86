/* The fixture of the kernel unit tests that run one kernel per test: a fresh
 * kernel and an empty log before each test, the kernel freed after it (Check
 * runs each test in a child process of its own). Not a test itself. */
#ifndef CHECK_FIXTURE_H
#define CHECK_FIXTURE_H

#include "check_log.h"

static sim_kernel *k;

static void setup(void)
{
    log_reset();
    k = sim_kernel_new();
}

static void teardown(void)
{
    sim_kernel_free(k);
    k = NULL;
}

#endif
