/* Crossbar variants Verilated on first use (xbar_rtl_variant.h).
 *
 * A variant not built into the binary is built by rtl/variant/CMakeLists.txt
 * (the same Verilation and glue as the prebuilt ones, with the main build's
 * generator, compiler, flags and Verilator, written into xbar_rtl_build_cfg.h
 * by rtl/CMakeLists.txt) into a shared object, cached as
 *   <dir>/<prefix>/<hash>.so   (+ <hash>.log, the build's output)
 * where the hash covers the parameters, every file the build reads
 * (k_build_inputs: the RTL, the glue, Verilator's version header) and the
 * configure arguments, so an edit, a Verilator upgrade or other flags never
 * reuse a stale build. Concurrent first uses (ctest -j) serialise on
 * <hash>.lock (flock); the build goes to a private temporary tree and the
 * object is renamed into place, so a reader sees it whole or not at all, and
 * a crashed build leaves nothing that looks finished. */
#define _GNU_SOURCE
#include "xbar_rtl_variant.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xbar_rtl_build_cfg.h"
#include "xbar_rtl_models.h"

extern char **environ;

#define N_ARGS (sizeof k_configure_args / sizeof k_configure_args[0])
#define N_INPUTS (sizeof k_build_inputs / sizeof k_build_inputs[0])

const char *xbar_rtl_variant_dir(void)
{
    const char *e = getenv("LINKSTACK_RTL_VARIANT_DIR");
    return e && *e ? e : XBAR_RTL_VARIANT_DIR_DEFAULT;
}

static void prefix_of(const xbar_rtl_variant *v, char *buf, size_t n)
{
    snprintf(buf, n, "Vxbar_p%u_l%u_i%u_f%u", v->ports, v->latency, v->iters_max, v->fanout_read);
}

/* FNV-1a, 64 bits: detects change, not tampering. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

int xbar_rtl_variant_key(const xbar_rtl_variant *v, char *stem, size_t n)
{
    char params[96];
    snprintf(params, sizeof params, "xbar-rtl-variant 1 %u:%u:%u:%u:%u:%u", v->ports, v->latency, v->iters_max,
             v->fanout_read, v->depth, v->flit_bits);
    uint64_t h = fnv(0xcbf29ce484222325ULL, params, strlen(params) + 1);
    for (size_t a = 0; a < N_ARGS; a++) h = fnv(h, k_configure_args[a], strlen(k_configure_args[a]) + 1);
    for (size_t f = 0; f < N_INPUTS; f++) {
        FILE *fp = fopen(k_build_inputs[f], "rb");
        if (!fp) return snprintf(stem, n, "%s: %s", k_build_inputs[f], strerror(errno)), -1;
        char buf[8192];
        size_t got, total = 0;
        while ((got = fread(buf, 1, sizeof buf, fp)) > 0) {
            h = fnv(h, buf, got);
            total += got;
        }
        fclose(fp);
        h = fnv(h, &total, sizeof total);
    }
    char prefix[64];
    prefix_of(v, prefix, sizeof prefix);
    snprintf(stem, n, "%s-%016llx", prefix, (unsigned long long)h);
    return 0;
}

/* A path into `b`; a path longer than the buffer ends the run (exit 2, the
 * cache directory is the user's choice). */
__attribute__((format(printf, 3, 4))) static void pathf(char *b, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int len = vsnprintf(b, n, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "error: RTL variant cache: path too long: %s...\n", b);
        exit(2);
    }
}

static int mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}
static void rm_tree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The environment minus an outer make's jobserver (make sim runs us from a
 * recipe): the build's make must not wait on a jobserver it cannot reach. */
static char **child_env(void)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **e = calloc(n + 1, sizeof *e);
    if (!e) return environ;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "MAKEFLAGS=", 10) && strncmp(environ[i], "MFLAGS=", 7) && strncmp(environ[i], "MAKELEVEL=", 10))
            e[k++] = environ[i];
    return e;
}

/* Runs argv with stdout and stderr appended to log_fd; the exit status, or
 * -1 when it could not start (errno set). */
static int run(char *const argv[], int log_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, log_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
    char **env = child_env();
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    if (env != environ) free(env);
    if (rc != 0) return errno = rc, -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* A build that ran and failed: the RTL or the glue is wrong for these
 * parameters (or the toolchain broke). Shows the end of the log. */
static _Noreturn void build_failed(const char *what, const char *log, const char *params)
{
    fputc('\n', stderr);
    FILE *fp = fopen(log, "r");
    if (fp) {
        static char tail[40][512];
        unsigned n = 0;
        while (fgets(tail[n % 40], sizeof tail[0], fp)) n++;
        fclose(fp);
        fprintf(stderr, "--- last lines of %s ---\n", log);
        for (unsigned i = n > 40 ? n - 40 : 0; i < n; i++) fputs(tail[i % 40], stderr);
    }
    fprintf(stderr, "error: building the RTL crossbar variant %s failed: %s; the full log is %s\n", params, what, log);
    exit(1);
}

/* Estimated first-use build time (CPU s; measured 20 s at 7 ports, 140 s at 64):
 * the Verilator runtime is a fixed cost, the model grows with ports^2. */
static unsigned build_estimate_s(const xbar_rtl_variant *v)
{
    const double n = v->ports;
    return (unsigned)(18.0 + n * n * (0.012 + 0.004 * v->iters_max) + 0.3 * v->latency);
}

/* Removes other builds of the same prefix (stale hashes). */
static void remove_stale(const char *dir, const char *hash)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || strncmp(e->d_name, hash, strlen(hash)) == 0) continue;
        if (strcmp(dot, ".so") && strcmp(dot, ".log")) continue;
        char p[4096];
        pathf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    closedir(d);
}

/* Removes the temporary build trees of `hash` (a failed build keeps its
 * tree for the log's references until the next attempt). */
static void remove_tmp(const char *dir, const char *hash)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char pre[64];
    snprintf(pre, sizeof pre, "tmp-%s-", hash);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, pre, strlen(pre)) != 0) continue;
        char p[4096];
        pathf(p, sizeof p, "%s/%s", dir, e->d_name);
        rm_tree(p);
    }
    closedir(d);
}

static void build(const xbar_rtl_variant *v, const char *params, const char *dir, const char *hash, const char *so)
{
    char tmp[4096], log[4096], spec[64], var[96], par[16];
    pathf(tmp, sizeof tmp, "%s/tmp-%s-%ld", dir, hash, (long)getpid());
    pathf(log, sizeof log, "%s/%s.log", dir, hash);
    remove_tmp(dir, hash); /* trees of failed or killed builds of this hash: the lock is ours */
    int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (lfd < 0) {
        fprintf(stderr, "error: RTL variant %s: cannot write %s: %s\n", params, log, strerror(errno));
        exit(2);
    }
    fprintf(stderr, "verilating xbar variant %s (first use, about %u s) ...", params, build_estimate_s(v));
    fflush(stderr);
    const double t0 = now_s();
    snprintf(spec, sizeof spec, "%u:%u:%u:%u", v->ports, v->latency, v->iters_max, v->fanout_read);
    snprintf(var, sizeof var, "-DXBAR_RTL_VARIANT=%s", spec);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(par, sizeof par, "%ld", ncpu < 1 ? 1 : ncpu > 8 ? 8 : ncpu);
    char *conf[N_ARGS + 8];
    size_t k = 0;
    conf[k++] = (char *)XBAR_RTL_CMAKE;
    conf[k++] = (char *)"-S";
    conf[k++] = (char *)XBAR_RTL_PROJECT_DIR;
    conf[k++] = (char *)"-B";
    conf[k++] = tmp;
    for (size_t a = 0; a < N_ARGS; a++) conf[k++] = (char *)k_configure_args[a];
    conf[k++] = var;
    conf[k] = NULL;
    char what[9000];
    int rc = run(conf, lfd);
    if (rc != 0) {
        snprintf(what, sizeof what, rc < 0 ? "cannot run cmake" : "Verilator or cmake failed in the configure step (status %d)", rc);
        close(lfd);
        build_failed(what, log, params);
    }
    char *bld[] = { (char *)XBAR_RTL_CMAKE, (char *)"--build", tmp, (char *)"--parallel", par, NULL };
    rc = run(bld, lfd);
    close(lfd);
    if (rc != 0) {
        snprintf(what, sizeof what, rc < 0 ? "cannot run cmake --build" : "verilator or the compiler failed (cmake --build exited with status %d)", rc);
        build_failed(what, log, params);
    }
    char built[4096];
    pathf(built, sizeof built, "%s/variant.so", tmp);
    if (rename(built, so) != 0) {
        snprintf(what, sizeof what, "cannot move %s to %s: %s", built, so, strerror(errno));
        build_failed(what, log, params);
    }
    rm_tree(tmp);
    remove_stale(dir, hash);
    fprintf(stderr, " done in %.0f s\n", now_s() - t0);
}

typedef struct loaded {
    xbar_rtl_variant v;
    const xbar_rtl_variant_desc *d;
} loaded;
static loaded g_loaded[32];
static unsigned g_n_loaded;

static bool same_variant(const xbar_rtl_variant *a, const xbar_rtl_variant *b)
{
    return a->ports == b->ports && a->latency == b->latency && a->iters_max == b->iters_max && a->depth == b->depth &&
           a->flit_bits == b->flit_bits && a->fanout_read == b->fanout_read;
}

const xbar_rtl_variant_desc *xbar_rtl_variant_load(const xbar_rtl_variant *want, char *why, size_t n)
{
    for (unsigned i = 0; i < g_n_loaded; i++)
        if (same_variant(&g_loaded[i].v, want)) return g_loaded[i].d;
    char params[128];
    snprintf(params, sizeof params, "ports=%u latency=%u iters=%u fanout_read=%u", want->ports, want->latency,
             want->iters_max, want->fanout_read);
    if (want->depth != XBAR_RTL_DEPTH || want->flit_bits != XBAR_RTL_FLIT_W)
        return snprintf(why, n, "RTL variant %s: depth %u and flit width %u are fixed at %u and %u", params, want->depth,
                        want->flit_bits, XBAR_RTL_DEPTH, XBAR_RTL_FLIT_W), NULL;
    char stem[4096];
    if (xbar_rtl_variant_key(want, stem, sizeof stem) != 0)
        return snprintf(why, n, "RTL variant %s: not prebuilt, and a source to build it is unreadable: %s", params, stem),
               NULL;
    const char *hash = strrchr(stem, '-') + 1;
    char dir[4096], so[4096], lock[4096];
    pathf(dir, sizeof dir, "%s/%.*s", xbar_rtl_variant_dir(), (int)(hash - 1 - stem), stem);
    pathf(so, sizeof so, "%s/%s.so", dir, hash);
    pathf(lock, sizeof lock, "%s/%s.lock", dir, hash);
    if (access(so, R_OK) != 0) {
        const char *off = getenv("LINKSTACK_RTL_BUILD");
        if (off && strcmp(off, "0") == 0)
            return snprintf(why, n, "RTL variant %s: not prebuilt, not cached, and LINKSTACK_RTL_BUILD=0 forbids building it", params),
                   NULL;
        const char *tools[] = { XBAR_RTL_VERILATOR_BIN, XBAR_RTL_CMAKE, XBAR_RTL_CXX };
        for (unsigned t = 0; t < 3; t++)
            if (access(tools[t], X_OK) != 0)
                return snprintf(why, n, "RTL variant %s: not prebuilt, and building it needs %s (%s; scripts/bootstrap.sh installs it)", params, tools[t], strerror(errno)), NULL;
        if (mkdir_p(dir) != 0)
            return snprintf(why, n, "RTL variant %s: cannot create the cache directory %s: %s (set LINKSTACK_RTL_VARIANT_DIR)",
                            params, dir, strerror(errno)), NULL;
        int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (lfd < 0) return snprintf(why, n, "RTL variant %s: cannot open %s: %s", params, lock, strerror(errno)), NULL;
        if (flock(lfd, LOCK_EX | LOCK_NB) != 0) {
            fprintf(stderr, "waiting for another process verilating xbar variant %s ...\n", params);
            while (flock(lfd, LOCK_EX) != 0)
                if (errno != EINTR) return close(lfd), snprintf(why, n, "flock %s: %s", lock, strerror(errno)), NULL;
        }
        if (access(so, R_OK) != 0) build(want, params, dir, hash, so); /* else the other process built it */
        close(lfd); /* releases the lock */
    }
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "error: RTL variant %s: cannot load %s: %s\n", params, so, dlerror());
        exit(1);
    }
    xbar_rtl_variant_entry_fn entry;
    *(void **)&entry = dlsym(h, XBAR_RTL_VARIANT_ENTRY);
    const xbar_rtl_variant_desc *d = entry ? entry() : NULL;
    if (!d || !same_variant(&d->v, want)) {
        fprintf(stderr, "error: RTL variant %s: %s does not hold that variant (%s)\n", params, so,
                d ? "other parameters" : "no " XBAR_RTL_VARIANT_ENTRY);
        exit(1);
    }
    if (g_n_loaded < sizeof g_loaded / sizeof g_loaded[0]) g_loaded[g_n_loaded++] = (loaded){ *want, d };
    return d;
}
