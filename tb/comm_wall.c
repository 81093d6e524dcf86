/* comm_wall: the communication wall (issue 21; seed 001: "compute grows
 * ~O(N), communication ~O(N log N) or O(N^2)"). The same model and the same
 * batch per DP replica (weak scaling: every GPU's compute stays the same)
 * over GPU counts gpus_min, 2x, ... gpus_max, tp and pp held, dp growing;
 * each point is one training step simulated as train_step does (flow level,
 * every collective on the cluster's links). Scaling efficiency = step time at
 * the first point / step time here (each series against its own first point). remedies=1 runs every point again with
 * each of the seeds' remedies alone: overlap (DP all-reduce during the
 * backward), fp8_gradients (gradient compression: 1 byte per element on the
 * wire), hierarchical (DP collectives inside the node, across nodes on 1/k,
 * inside again) and mixed_precision (fp8 tensor cores). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cJSON.h"
#include "sim/sim.h"
#include "tb/train_common.h"

static const sim_param_def wall_params[] = {
    TRAIN_SHAPE_PARAMS("0"),
    SIM_PARAM_INT("replica_batch", "8", "", 1, 1 << 20, "sequences per DP replica per step (global_batch = replica_batch x dp)"),
    SIM_PARAM_INT("gpus_min", "8", "", 1, 1 << 16, "first point (a multiple of tp x pp)"),
    SIM_PARAM_INT("gpus_max", "1024", "", 1, 1 << 16, "last point (points double from gpus_min)"),
    SIM_PARAM_BOOL("remedies", "0", "each point again with every remedy alone: overlap, fp8_gradients, hierarchical, mixed_precision"),
    SIM_PARAM_END,
};

enum { SERIES_BASE = 0, SERIES_OVERLAP, SERIES_FP8_GRADS, SERIES_HIER, SERIES_MIXED, SERIES_N };
static const char *const series_name[SERIES_N] = { "baseline", "overlap", "fp8_gradients", "hierarchical", "mixed_precision" };

#define MAX_POINTS 20

typedef struct point {
    unsigned gpus;
    bool ran;
    double step_ms, compute_ms, exposed_ms, dp_exposed_ms, efficiency;
} point;

static void write_plot(sim_test_ctx *c, point pts[][MAX_POINTS], const bool *on, unsigned np)
{
    char dat[1024], png[1024], root[900], script[1000], cmd[4096], names[256] = "";
    const char *out = c->out_dir ? c->out_dir : ".";
    snprintf(dat, sizeof dat, "%s/reports/%s.dat", out, c->test_name);
    snprintf(png, sizeof png, "%s/reports/%s.png", out, c->test_name);
    sim_mkdir_parents(dat);
    FILE *f = fopen(dat, "w");
    if (!f) return;
    fprintf(f, "# comm_wall: gpus step_ms compute_ms exposed_comm_ms scaling_efficiency, one block per series\n");
    unsigned blocks = 0;
    for (unsigned s = 0; s < SERIES_N; s++) {
        if (!on[s]) continue;
        if (blocks++) fprintf(f, "\n\n");
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", blocks > 1 ? " " : "", series_name[s]);
        for (unsigned i = 0; i < np; i++)
            if (pts[s][i].ran)
                fprintf(f, "%u %.6f %.6f %.6f %.6f\n", pts[s][i].gpus, pts[s][i].step_ms, pts[s][i].compute_ms, pts[s][i].exposed_ms,
                        pts[s][i].efficiency);
    }
    fclose(f);
    sim_source_root(root, sizeof root);
    snprintf(script, sizeof script, "%s/scripts/plot_comm_wall.gp", root);
    struct stat st;
    if (stat(script, &st) != 0) return;
    snprintf(cmd, sizeof cmd, "gnuplot -e \"datafile='%s'; outfile='%s'; series='%s'\" '%s' 2>&1", dat, png, names, script);
    if (system(cmd) == 0) sim_report_metric_json(c->report, "plot", cJSON_CreateString(png));
    else fprintf(stderr, "%s: gnuplot failed; %s not written\n", c->test_name, png);
}

static cJSON *rows_json(const point *pts, unsigned np)
{
    cJSON *a = cJSON_CreateArray();
    for (unsigned i = 0; i < np; i++) {
        if (!pts[i].ran) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "gpus", pts[i].gpus);
        cJSON_AddNumberToObject(o, "step_time_ms", pts[i].step_ms);
        cJSON_AddNumberToObject(o, "compute_ms", pts[i].compute_ms);
        cJSON_AddNumberToObject(o, "exposed_comm_ms", pts[i].exposed_ms);
        cJSON_AddNumberToObject(o, "scaling_efficiency", pts[i].efficiency);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* One step at `gpus`, with series s's remedy; false (with why) if a model's own check failed. */
static bool run_point(sim_test_ctx *c, const train_knobs *base, unsigned s, unsigned gpus, unsigned per_node, uint64_t chunk_bytes,
                      uint64_t replica_batch, double progress, point *pt, char *why, size_t why_n)
{
    train_knobs k = *base;
    k.dp = gpus / (k.tp * k.pp);
    k.nodes = (gpus + per_node - 1) / per_node;
    k.global_batch = replica_batch * k.dp;
    if (s == SERIES_OVERLAP) k.overlap = true;
    if (s == SERIES_MIXED) k.dt = TRAIN_FP8;
    train_setup ts;
    train_setup_build(c, &ts, &k, gpus, s == SERIES_FP8_GRADS ? 1 : 0, false);
    sim_kernel *kern = sim_kernel_new();
    train_run *r = train_run_step(c, kern, &ts, chunk_bytes, s == SERIES_HIER, progress);
    bool ok = train_run_conserved(r, why, why_n);
    const train_sched *sch = train_run_sched(r);
    unsigned crit = 0;
    for (unsigned i = 1; i < ts.sc.pp; i++)
        if (train_sched_stage(sch, i)->end_ns > train_sched_stage(sch, crit)->end_ns) crit = i;
    const train_stage_times *T = train_sched_stage(sch, crit);
    *pt = (point){ gpus, true, (double)train_run_step_ps(r) / 1e9, T->compute_ns / 1e6, (T->tp_ns + T->pp_wait_ns + T->dp_exposed_ns) / 1e6,
                   T->dp_exposed_ns / 1e6, 0 };
    train_run_free(r);
    sim_kernel_free(kern);
    train_setup_free(&ts);
    return ok;
}

static void wall_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    unsigned tp = (unsigned)sim_param_int(p, "tp"), pp = (unsigned)sim_param_int(p, "pp");
    unsigned lo = (unsigned)sim_param_int(p, "gpus_min"), hi = (unsigned)sim_param_int(p, "gpus_max");
    bool remedies = sim_param_bool(p, "remedies");
    uint64_t chunk_bytes = (uint64_t)sim_param_int(p, "chunk_bytes");
    if (lo % (tp * pp)) sim_input_error("comm_wall: gpus_min=%u must be a multiple of tp x pp = %u", lo, tp * pp);
    if (hi < lo) sim_input_error("comm_wall: gpus_max=%u is below gpus_min=%u", hi, lo);
    uint64_t replica_batch = (uint64_t)sim_param_int(p, "replica_batch");
    train_knobs base;
    train_knobs_read(c, &base, true);
    if (pp == 1) sim_param_not_applicable(p, "interleave", "pp=1: no pipeline");
    unsigned per_node = train_gpus_per_node(c, &base);
    {   /* the first point's configuration, checked before the run (exit 2 on a bad combination) */
        train_knobs k = base;
        k.dp = lo / (tp * pp), k.global_batch = replica_batch * k.dp, k.nodes = (lo + per_node - 1) / per_node;
        train_setup probe;
        train_setup_build(c, &probe, &k, lo, 0, false);
        train_setup_free(&probe);
    }
    bool preset = !strchr(base.topo, '.');
    if (!preset && hi > per_node)
        sim_input_error("comm_wall: gpus_max=%u with topo=%s (%u GPUs): a file is one node; use a preset (dgx-h100, dgx-a100) to go further", hi,
                        base.topo, per_node);
    unsigned np = 0, g[MAX_POINTS];
    for (unsigned x = lo; x <= hi && np < MAX_POINTS; x *= 2) g[np++] = x;
    bool on[SERIES_N] = { true };
    if (remedies) {
        on[SERIES_OVERLAP] = !base.overlap;
        on[SERIES_FP8_GRADS] = on[SERIES_HIER] = true;
        train_gpu gp;
        const char *gpu = strcmp(base.gpu, "auto") ? base.gpu : strstr(base.topo, "a100") ? "a100" : "h100";
        on[SERIES_MIXED] = base.dt != TRAIN_FP8 && !train_gpu_preset(gpu, &gp) && train_gpu_peak_tflops(&gp, TRAIN_FP8) > 0;
    }
    sim_test_configured(c);

    static point pts[SERIES_N][MAX_POINTS];
    memset(pts, 0, sizeof pts);
    unsigned runs = 0, total = 0, bad = 0;
    for (unsigned s = 0; s < SERIES_N; s++) total += on[s] ? np : 0;
    char why[512] = "", first_bad[600] = "";
    for (unsigned i = 0; i < np; i++)
        for (unsigned s = 0; s < SERIES_N; s++) {
            if (!on[s]) continue;
            if (!run_point(c, &base, s, g[i], per_node, chunk_bytes, replica_batch, (double)runs / total, &pts[s][i], why, sizeof why) &&
                !bad++)
                snprintf(first_bad, sizeof first_bad, "%s at %u GPUs: %s", series_name[s], g[i], why);
            runs++;
            pts[s][i].efficiency = pts[s][i].step_ms > 0 ? pts[s][0].step_ms / pts[s][i].step_ms : 0;   /* against its own first point */
        }

    if (!c->quiet) {
        printf("# comm_wall: %s, tp=%u pp=%u, %llu sequences per replica, on %s%s\n", base.m.name, tp, pp,
               (unsigned long long)replica_batch, base.topo, remedies ? "; step time (ms) with each remedy alone" : "");
        printf("#%7s %6s %11s %11s %11s %10s", "gpus", "dp", "step_ms", "compute_ms", "exposed_ms", "efficiency");
        for (unsigned s = 1; s < SERIES_N; s++)
            if (on[s]) printf(" %15s", series_name[s]);
        printf("\n");
        for (unsigned i = 0; i < np; i++) {
            const point *b = &pts[SERIES_BASE][i];
            printf(" %7u %6u %11.3f %11.3f %11.3f %10.3f", b->gpus, b->gpus / (tp * pp), b->step_ms, b->compute_ms, b->exposed_ms, b->efficiency);
            for (unsigned s = 1; s < SERIES_N; s++)
                if (on[s]) printf(" %15.3f", pts[s][i].step_ms);
            printf("\n");
        }
    }
    sim_report_metric_json(c->report, "rows", rows_json(pts[SERIES_BASE], np));
    if (remedies) {
        cJSON *o = cJSON_CreateObject();
        for (unsigned s = 1; s < SERIES_N; s++)
            if (on[s]) cJSON_AddItemToObject(o, series_name[s], rows_json(pts[s], np));
        sim_report_metric_json(c->report, "remedies", o);
    }
    sim_report_metric(c->report, "points", np);
    sim_report_metric(c->report, "gpus_per_node", per_node);
    sim_report_metric(c->report, "last_scaling_efficiency", pts[SERIES_BASE][np - 1].efficiency);
    write_plot(c, pts, on, np);

    sim_check(c->report, "conservation", !bad, "%u of %u steps: every message arrived, every op ran, every flow delivered%s%s", runs - bad,
              runs, bad ? "; first failure: " : "", first_bad);
    /* weak scaling: the workload per GPU is the same at every point, so its compute is too */
    double worst = 0;
    for (unsigned i = 1; i < np; i++) worst = fmax(worst, fabs(pts[SERIES_BASE][i].compute_ms / pts[SERIES_BASE][0].compute_ms - 1));
    sim_check(c->report, "compute_constant_per_gpu", worst < 1e-9, "the critical stage's compute varies by %.2g over the points", worst);
    unsigned slower = 0;
    char slow_what[160] = "";
    for (unsigned s = 1; s < SERIES_N; s++) {
        if (!on[s] || s == SERIES_HIER) continue;   /* hierarchical trades bandwidth for more phases: it may lose */
        for (unsigned i = 0; i < np; i++)
            if (pts[s][i].step_ms > pts[SERIES_BASE][i].step_ms * (1 + 1e-9) && !slower++)
                snprintf(slow_what, sizeof slow_what, "; %s at %u GPUs: %.3f ms vs %.3f", series_name[s], g[i], pts[s][i].step_ms,
                         pts[SERIES_BASE][i].step_ms);
    }
    if (remedies)
        sim_check(c->report, "remedies_never_slower", !slower,
                  "overlap, fp8 gradients and fp8 compute only take work away: %u points slower than the baseline%s", slower, slow_what);
}

SIM_TEST(comm_wall, "the communication wall: one training step per GPU count (weak scaling), its exposed communication and scaling efficiency; remedies=1 adds overlap, gradient compression, hierarchical collectives, mixed precision",
         wall_params, "model=llama3-8b tp=2 pp=1 gpus_min=2 gpus_max=8 remedies=1", wall_run)
