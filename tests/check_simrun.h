/* Unit tests that drive build/bin/simrun as a user would (exit status, the
 * message, the report): include after <check.h>. Not a test. */
#ifndef CHECK_SIMRUN_H
#define CHECK_SIMRUN_H

#include <stdio.h>
#include <sys/wait.h>

#ifndef LINKSTACK_SIMRUN
#error "CMake passes LINKSTACK_SIMRUN, the path of build/bin/simrun"
#endif

/* Runs simrun --quiet --out outdir <args>; its stdout and stderr go into out.
 * Returns its exit status. */
static inline int check_simrun(const char *outdir, const char *args, char *out, size_t out_n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' --quiet --out '%s' %s 2>&1", LINKSTACK_SIMRUN, outdir, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, out_n - 1, p);
    out[n] = 0;
    int st = pclose(p);
    ck_assert_msg(WIFEXITED(st), "simrun %s did not exit normally", args);
    return WEXITSTATUS(st);
}

#endif
