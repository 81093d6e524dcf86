/* What the benchmarks that time simrun share: run it as a child process and
 * read numbers from the report it wrote. Not a benchmark itself. */
#ifndef BENCH_SIMRUN_H
#define BENCH_SIMRUN_H

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* argv[0] is simrun's path; 0 when it exited 0, else -1 (said why). */
static inline int bench_simrun(const char *who, char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execv(argv[0], argv);
        fprintf(stderr, "%s: cannot run %s: %s\n", who, argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: %s failed (status %d)\n", who, argv[0], status);
        return -1;
    }
    return 0;
}

/* The child's output folder, and its removal afterwards. */
static inline void bench_remove_dir(const char *who, const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "%s: could not remove %s\n", who, dir);
}

/* A number of a JSON object, or -1. */
static inline double bench_number(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

#endif
