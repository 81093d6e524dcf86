/* Training-step tests: set-up and report (tb/train_common.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cJSON.h"
#include "models/collective/collective.h"
#include "models/fabric/fabric.h"
#include "models/network/network.h"
#include "sim/sim.h"
#include "sim/tier.h"
#include "tb/train_common.h"

uint32_t train_layout_ep(const train_layout *L, unsigned s, unsigned d, unsigned t)
{
    unsigned r;
    switch (L->mapping) {
    case TRAIN_MAP_TP_ACROSS_NODES: r = d + L->dp * (s + L->pp * t); break;   /* TP slowest: its ranks far apart */
    case TRAIN_MAP_DP_INSIDE_NODE: r = d + L->dp * (t + L->tp * s); break;    /* DP fastest: replicas side by side */
    default: r = t + L->tp * (d + L->dp * s); break;                          /* Megatron: TP fastest, PP slowest */
    }
    return L->gpu_ep[r];
}

static const char *const shape_params[] = { "layers", "hidden", "heads", "kv_heads", "ffn", "seq", "vocab" };

static void read_model(sim_test_ctx *c, train_model *m)
{
    const sim_params *p = c->params;
    const char *name = sim_param_str(p, "model");
    if (!strcmp(name, "custom")) {
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "custom");
        m->layers = (unsigned)sim_param_int(p, "layers"), m->hidden = (unsigned)sim_param_int(p, "hidden");
        m->heads = (unsigned)sim_param_int(p, "heads"), m->kv_heads = (unsigned)sim_param_int(p, "kv_heads");
        m->ffn = (unsigned)sim_param_int(p, "ffn"), m->seq = (unsigned)sim_param_int(p, "seq"), m->vocab = (unsigned)sim_param_int(p, "vocab");
        m->learned_positions = m->tied_embeddings = true;   /* GPT-like */
        const char *bad = train_model_invalid(m);
        if (bad) sim_input_error("model=custom: %s (layers=%u hidden=%u heads=%u kv_heads=%u)", bad, m->layers, m->hidden, m->heads, m->kv_heads);
    } else {
        if (train_model_preset(name, m)) sim_fatal("train: preset %s missing", name);
        for (unsigned i = 0; i < sizeof shape_params / sizeof *shape_params; i++)
            sim_param_not_applicable(p, shape_params[i], "model=%s sets the shape (use model=custom to give it)", name);
    }
}

void train_knobs_read(sim_test_ctx *c, train_knobs *k, bool sweep)
{
    const sim_params *p = c->params;
    memset(k, 0, sizeof *k);
    read_model(c, &k->m);
    k->microbatch = (unsigned)sim_param_int(p, "microbatch");
    k->dt = (enum train_dtype)sim_param_enum(p, "dtype");
    k->recompute = sim_param_bool(p, "recompute");
    k->tp = (unsigned)sim_param_int(p, "tp"), k->pp = (unsigned)sim_param_int(p, "pp");
    k->mapping = (enum train_mapping)sim_param_enum(p, "mapping");
    k->interleave = (unsigned)sim_param_int(p, "interleave");
    k->cc.mfu_matmul = sim_param_double(p, "mfu_matmul");
    k->cc.mem_efficiency = sim_param_double(p, "mem_efficiency");
    k->bucket_mb = sim_param_double(p, "bucket_mb");
    k->overlap = sim_param_bool(p, "overlap");
    k->zero = sim_param_bool(p, "zero");
    snprintf(k->topo, sizeof k->topo, "%s", sim_param_str(p, "topo"));
    snprintf(k->gpu, sizeof k->gpu, "%s", sim_param_str(p, "gpu"));
    k->nodes = 1, k->dp = 1, k->global_batch = 1;
    if (!sweep) {
        k->nodes = (unsigned)sim_param_int(p, "nodes");
        k->dp = (unsigned)sim_param_int(p, "dp");
        k->global_batch = (uint64_t)sim_param_int(p, "global_batch");
    }
}

static void build_topology(sim_test_ctx *c, train_setup *s, const train_knobs *k, unsigned gpus)
{
    if (k->nodes > 1 && !strchr(k->topo, '.') && !strchr(k->topo, ':')) snprintf(s->spec, sizeof s->spec, "%s:nodes=%u", k->topo, k->nodes);
    else if (k->nodes > 1) sim_input_error("%s: nodes=%u goes with a preset (topo=dgx-h100), not with topo=%s", c->test_name, k->nodes, k->topo);
    else snprintf(s->spec, sizeof s->spec, "%s", k->topo);
    fabric_register_kinds();
    collective_register_kinds();
    network_register_kinds();
    char err[512];
    s->t = topo_from_string(s->spec, "nvlink4", err, sizeof err);
    if (!s->t) sim_input_error("%s: topo=%s: %s", c->test_name, s->spec, err);
    s->routes = topo_routes_new(s->t, TOPO_ROUTE_ECMP, err, sizeof err);
    if (!s->routes) sim_input_error("%s: topo=%s: %s", c->test_name, s->spec, err);
    s->gpu_ep = calloc(s->t->n_endpoints ? s->t->n_endpoints : 1, sizeof *s->gpu_ep);
    if (!s->gpu_ep) sim_fatal("out of memory");
    unsigned n = 0;
    for (uint32_t e = 0; e < s->t->n_endpoints; e++)
        if (!strcmp(s->t->nodes[s->t->endpoint_node[e]].kind->name, "nvgpu")) s->gpu_ep[n++] = e;
    s->nodes = k->nodes;
    s->gpus_per_node = n / k->nodes;
    if (gpus) {
        if (gpus > n) sim_fatal("%s: %u GPUs asked of %s, which has %u", c->test_name, gpus, s->spec, n);
        n = gpus;
    }
    s->lay.gpu_ep = s->gpu_ep;
    s->lay.n_gpus = n;
}

unsigned train_gpus_per_node(sim_test_ctx *c, const train_knobs *k)
{
    train_knobs one = *k;
    one.nodes = 1;
    train_setup s;
    memset(&s, 0, sizeof s);
    build_topology(c, &s, &one, 0);
    unsigned n = s.lay.n_gpus;
    train_setup_free(&s);
    return n;
}

static const char *dtype_name(enum train_dtype d) { return d == TRAIN_FP8 ? "fp8" : d == TRAIN_FP16 ? "fp16" : "bf16"; }

void train_setup_build(sim_test_ctx *c, train_setup *s, const train_knobs *k, unsigned gpus, unsigned grad_bytes, bool check_unused)
{
    const sim_params *p = c->params;
    memset(s, 0, sizeof *s);
    s->m = k->m;
    s->microbatch = k->microbatch;
    s->global_batch = k->global_batch ? k->global_batch : (uint64_t)k->microbatch * k->dp * 2 * k->pp;   /* 0: 2 x pp micro-batches each */
    s->dt = k->dt;
    s->recompute = k->recompute;
    s->lay.tp = k->tp, s->lay.pp = k->pp, s->lay.dp = k->dp;
    s->lay.mapping = k->mapping;
    unsigned v = k->interleave;
    s->cc = k->cc;
    build_topology(c, s, k, gpus);
    const char *gpu = k->gpu;
    if (!strcmp(gpu, "auto")) gpu = strstr(s->spec, "a100") ? "a100" : "h100";
    if (train_gpu_preset(gpu, &s->g)) sim_fatal("train: GPU preset %s missing", gpu);
    if (train_gpu_peak_tflops(&s->g, s->dt) <= 0)
        sim_input_error("%s: dtype=%s: the %s has no such tensor cores; allowed: bf16, fp16", c->test_name, dtype_name(s->dt), s->g.name);

    const train_layout *L = &s->lay;
    const train_model *m = &s->m;
    if ((uint64_t)L->tp * L->pp * L->dp != L->n_gpus)
        sim_input_error("%s: tp x pp x dp = %u x %u x %u = %llu, but topo=%s has %u GPUs; allowed: a product equal to the GPUs", c->test_name,
                        L->tp, L->pp, L->dp, (unsigned long long)L->tp * L->pp * L->dp, s->spec, L->n_gpus);
    if (m->heads % L->tp) sim_input_error("%s: tp=%u must divide heads=%u (Megatron splits attention by heads)", c->test_name, L->tp, m->heads);
    if (m->layers % (L->pp * v)) sim_input_error("%s: layers=%u must split evenly over pp x interleave = %u", c->test_name, m->layers, L->pp * v);
    if (s->global_batch % ((uint64_t)s->microbatch * L->dp))
        sim_input_error("%s: global_batch=%llu must be a multiple of microbatch x dp = %u", c->test_name, (unsigned long long)s->global_batch,
                        s->microbatch * L->dp);
    unsigned mbs = (unsigned)(s->global_batch / ((uint64_t)s->microbatch * L->dp));
    if (v > 1 && (L->pp < 2 || mbs % L->pp))
        sim_input_error("%s: interleave=%u needs pp >= 2 and micro-batches per replica (%u) a multiple of pp=%u", c->test_name, v, mbs, L->pp);
    if (check_unused) {
        if (L->dp == 1) {
            sim_param_not_applicable(p, "bucket_mb", "dp=1: no gradient all-reduce");
            sim_param_not_applicable(p, "overlap", "dp=1: no gradient all-reduce");
            sim_param_not_applicable(p, "zero", "dp=1: no optimizer state to shard");
        }
        if (v == 1 && L->pp == 1) sim_param_not_applicable(p, "interleave", "pp=1: no pipeline");
    }

    /* the schedule's inputs, from the workload model */
    s->layer = train_layer(m, s->microbatch, L->tp, s->dt);
    s->output = train_output_layer(m, s->microbatch, L->tp, s->dt);
    s->layer_fwd_ns = train_layer_fwd_ns(&s->layer, &s->g, s->dt, &s->cc);
    s->layer_bwd_ns = train_layer_bwd_ns(&s->layer, &s->g, s->dt, &s->cc, s->recompute);
    s->output_fwd_ns = train_layer_fwd_ns(&s->output, &s->g, s->dt, &s->cc);
    s->output_bwd_ns = train_layer_bwd_ns(&s->output, &s->g, s->dt, &s->cc, false);
    if (!grad_bytes) grad_bytes = s->dt == TRAIN_FP8 ? 2 : train_dtype_bytes(s->dt);
    train_sched_cfg *sc = &s->sc;
    sc->pp = L->pp, sc->tp = L->tp, sc->microbatches = mbs, sc->interleave = v, sc->layers = m->layers;
    sc->layer_fwd_ns = s->layer_fwd_ns, sc->layer_bwd_ns = s->layer_bwd_ns;
    sc->attn_share = s->layer.fwd_matmul_flops > 0 ? s->layer.fwd_attn_flops / s->layer.fwd_matmul_flops : 0.5;
    sc->output_fwd_ns = s->output_fwd_ns, sc->output_bwd_ns = s->output_bwd_ns;
    sc->tp_bytes = s->layer.tp_allreduce_bytes;
    sc->pp_bytes = train_pp_message_bytes(m, s->microbatch, s->dt);
    sc->dp_layer_bytes = train_layer_params(m) / L->tp * grad_bytes;
    sc->dp_first_bytes = train_embedding_params(m) / L->tp * grad_bytes;
    sc->dp_last_bytes = (uint64_t)m->vocab * m->hidden / L->tp * grad_bytes;   /* the output layer (a tied copy on the last stage) */
    sc->bucket_bytes = L->dp > 1 ? (uint64_t)(k->bucket_mb * 1e6) : 1;
    sc->dp = L->dp > 1;
    sc->overlap = L->dp > 1 && k->overlap;
    sc->zero = L->dp > 1 && k->zero;
}

void train_setup_read(sim_test_ctx *c, train_setup *s)
{
    train_knobs k;
    train_knobs_read(c, &k, false);
    train_setup_build(c, s, &k, 0, 0, true);
}

void train_setup_free(train_setup *s)
{
    topo_routes_free(s->routes);
    topo_free(s->t);
    free(s->gpu_ep);
}

/* ---- the report ---- */

/* A stage's compute from the workload alone: what the schedule must have spent. */
static double predicted_compute_ns(const train_setup *s, unsigned stage)
{
    const train_sched_cfg *sc = &s->sc;
    double per_vs = (double)(sc->layers / (sc->pp * sc->interleave)) * (s->layer_fwd_ns + s->layer_bwd_ns);
    double ns = (double)sc->microbatches * sc->interleave * per_vs;
    if (stage == sc->pp - 1) ns += (double)sc->microbatches * (s->output_fwd_ns + s->output_bwd_ns);
    return ns;
}

/* Payload capacity of every link out of endpoint ep (NVLink 128-byte packets). */
static double gpu_out_GBps(const topo *t, uint32_t ep, enum sim_tier tier)
{
    uint32_t node = t->endpoint_node[ep];
    double sum = 0;
    for (unsigned q = 0; q < t->nodes[node].nports; q++) {
        int32_t li = t->nodes[node].port_link[q];
        if (li < 0) continue;
        const topo_link *l = &t->links[li];
        if (sim_tier_of_preset(l->preset) == tier) sum += l->GBps * 128.0 / (128.0 + l->overhead_bytes);
    }
    return sum;
}

typedef struct busy_chan { uint32_t c; sim_time_ps busy; } busy_chan;
static int busier(const void *a, const void *b)
{
    const busy_chan *x = a, *y = b;
    if (x->busy != y->busy) return x->busy > y->busy ? -1 : 1;
    return x->c < y->c ? -1 : x->c > y->c;
}

static void chan_name(const topo *t, uint32_t c, char *buf, size_t n)
{
    const topo_link *l = &t->links[c / 2];
    char a[TOPO_NAME_MAX + 8], b[TOPO_NAME_MAX + 8];
    bool rev = c & 1;
    topo_port_name(t, rev ? l->b : l->a, rev ? l->b_port : l->a_port, a, sizeof a);
    topo_port_name(t, rev ? l->a : l->b, rev ? l->a_port : l->b_port, b, sizeof b);
    snprintf(buf, n, "%s->%s", a, b);
}

static void bottleneck(sim_test_ctx *c, const train_setup *s, sim_flownet *net, sim_time_ps step, unsigned top)
{
    const topo *t = s->t;
    uint32_t n_chan = 2 * t->n_links;
    busy_chan *b = malloc((n_chan ? n_chan : 1) * sizeof *b);
    if (!b) sim_fatal("out of memory");
    double tier_bytes[SIM_TIERS] = { 0 };
    for (uint32_t i = 0; i < n_chan; i++) {
        b[i] = (busy_chan){ i, sim_flownet_channel_busy_ps(net, i) };
        tier_bytes[sim_tier_of_preset(t->links[i / 2].preset)] += sim_flownet_channel_bytes(net, i);
    }
    qsort(b, n_chan, sizeof *b, busier);
    cJSON *tiers = cJSON_CreateObject(), *fid = cJSON_CreateObject(), *rows = cJSON_CreateArray();
    for (unsigned k = 0; k < SIM_TIERS; k++) {
        cJSON_AddNumberToObject(tiers, sim_tier_name((enum sim_tier)k), tier_bytes[k]);
        if (tier_bytes[k] > 0) cJSON_AddStringToObject(fid, sim_tier_name((enum sim_tier)k), "flow");
    }
    if (!c->quiet) printf("\n  %-44s %-8s %9s %6s %9s\n", "busiest links (flow level: busy time)", "tier", "busy_ms", "util", "GB/s");
    for (unsigned k = 0; k < top && k < n_chan && b[k].busy; k++) {
        char name[2 * TOPO_NAME_MAX + 24];
        chan_name(t, b[k].c, name, sizeof name);
        double busy_ms = (double)b[k].busy / 1e9, util = step ? (double)b[k].busy / (double)step : 0;
        double GBps = b[k].busy ? sim_flownet_channel_bytes(net, b[k].c) / ((double)b[k].busy / 1000.0) : 0;
        const char *tier = sim_tier_name(sim_tier_of_preset(t->links[b[k].c / 2].preset));
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "link", name);
        cJSON_AddStringToObject(r, "tier", tier);
        cJSON_AddNumberToObject(r, "busy_ms", busy_ms);
        cJSON_AddNumberToObject(r, "util", util);
        cJSON_AddNumberToObject(r, "GBps_while_busy", GBps);
        cJSON_AddItemToArray(rows, r);
        if (!c->quiet) printf("  %-44s %-8s %9.3f %6.3f %9.2f\n", name, tier, busy_ms, util, GBps);
    }
    sim_report_metric_json(c->report, "bytes_per_tier", tiers);
    sim_report_metric_json(c->report, "bottleneck", rows);
    sim_report_metric_json(c->report, "fidelity", fid);
    free(b);
}

/* Chrome trace (chrome://tracing, Perfetto) and a gnuplot timeline: a row per stage, a lane per kind. */
static void timeline(sim_test_ctx *c, const train_sched *sch, unsigned pp)
{
    unsigned n;
    const train_span *sp = train_sched_spans(sch, &n);
    char json[1024], dat[1024], png[1024], root[900], cmd[4096];
    const char *out = c->out_dir ? c->out_dir : ".";
    snprintf(json, sizeof json, "%s/reports/%s_trace.json", out, c->test_name);
    snprintf(dat, sizeof dat, "%s/reports/%s_timeline.dat", out, c->test_name);
    snprintf(png, sizeof png, "%s/reports/%s_timeline.png", out, c->test_name);
    sim_mkdir_parents(json);
    FILE *f = fopen(json, "w"), *d = fopen(dat, "w");
    if (!f || !d) {
        if (f) fclose(f);
        if (d) fclose(d);
        return;
    }
    static const unsigned lane[TRAIN_SPAN_KINDS] = { 0, 0, 1, 2, 3, 2 };   /* compute | tp | pp | dp */
    fprintf(f, "{\"traceEvents\": [\n");
    for (unsigned i = 0; i < n; i++) {
        double ts = (double)sp[i].start_ps / 1e6, dur = (double)(sp[i].end_ps - sp[i].start_ps) / 1e6;
        fprintf(f, "%s{\"name\": \"%s mb%u c%u\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %u, \"tid\": %u}\n",
                i ? "," : "", train_span_kind_name(sp[i].kind), sp[i].microbatch, sp[i].chunk, train_span_kind_name(sp[i].kind), ts, dur,
                sp[i].stage, lane[sp[i].kind]);
        if (dur > 0) fprintf(d, "%.6f %.3f %.6f %u\n", (ts + dur / 2) / 1000.0, sp[i].stage + 0.2 * lane[sp[i].kind], dur / 2000.0, sp[i].kind);
    }
    fprintf(f, "], \"displayTimeUnit\": \"ms\"}\n");
    fclose(f);
    fclose(d);
    sim_report_metric_json(c->report, "trace", cJSON_CreateString(json));
    sim_source_root(root, sizeof root);
    char script[1000];
    snprintf(script, sizeof script, "%s/scripts/plot_train_step.gp", root);
    struct stat st;
    if (stat(script, &st) != 0) return;
    snprintf(cmd, sizeof cmd, "gnuplot -e \"datafile='%s'; outfile='%s'; stages=%u\" '%s' 2>&1", dat, png, pp, script);
    if (system(cmd) == 0) sim_report_metric_json(c->report, "timeline", cJSON_CreateString(png));
    else fprintf(stderr, "%s: gnuplot failed; %s not written\n", c->test_name, png);
}

void train_report(sim_test_ctx *c, const train_setup *s, const train_sched *sch, sim_flownet *net, sim_time_ps step_ps, unsigned top,
                  bool conserved, const char *why)
{
    sim_report *rep = c->report;
    const train_sched_cfg *sc = &s->sc;
    unsigned crit = 0;
    for (unsigned i = 1; i < sc->pp; i++)
        if (train_sched_stage(sch, i)->end_ns > train_sched_stage(sch, crit)->end_ns) crit = i;
    const train_stage_times *T = train_sched_stage(sch, crit);
    double step_ms = (double)step_ps / 1e9, gpus = s->lay.n_gpus;
    double flops = train_megatron_flops(&s->m, s->global_batch, false);
    double mfu = step_ps ? flops / ((double)step_ps * 1e-12 * gpus * train_gpu_peak_tflops(&s->g, s->dt) * 1e12) : 0;
    double tokens_per_s = step_ps ? (double)s->global_batch * s->m.seq / ((double)step_ps * 1e-12) : 0;
    double exposed = T->tp_ns + T->pp_wait_ns + T->dp_exposed_ns;
    sim_report_metric(rep, "step_time_ms", step_ms);
    sim_report_metric(rep, "compute_ms", T->compute_ns / 1e6);
    sim_report_metric(rep, "tp_comm_ms", T->tp_ns / 1e6);
    sim_report_metric(rep, "tp_exposed_comm_ms", T->tp_ns / 1e6);
    sim_report_metric(rep, "pp_comm_ms", T->pp_ns / 1e6);
    sim_report_metric(rep, "pp_exposed_comm_ms", T->pp_wait_ns / 1e6);
    sim_report_metric(rep, "dp_comm_ms", T->dp_ns / 1e6);
    sim_report_metric(rep, "dp_exposed_comm_ms", T->dp_exposed_ns / 1e6);
    sim_report_metric(rep, "exposed_comm_ms", exposed / 1e6);
    sim_report_metric(rep, "bubble_ms", T->bubble_ns / 1e6);
    sim_report_metric(rep, "mfu", mfu);
    sim_report_metric(rep, "tokens_per_s", tokens_per_s);
    sim_report_metric(rep, "gpus", gpus);
    sim_report_metric(rep, "microbatches", sc->microbatches);
    sim_report_metric(rep, "critical_stage", crit);
    cJSON *stages = cJSON_CreateArray();
    for (unsigned i = 0; i < sc->pp; i++) {
        const train_stage_times *x = train_sched_stage(sch, i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "stage", i);
        cJSON_AddNumberToObject(o, "end_ms", x->end_ns / 1e6);
        cJSON_AddNumberToObject(o, "compute_ms", x->compute_ns / 1e6);
        cJSON_AddNumberToObject(o, "tp_ms", x->tp_ns / 1e6);
        cJSON_AddNumberToObject(o, "pp_wait_ms", x->pp_wait_ns / 1e6);
        cJSON_AddNumberToObject(o, "bubble_ms", x->bubble_ns / 1e6);
        cJSON_AddNumberToObject(o, "dp_exposed_ms", x->dp_exposed_ns / 1e6);
        cJSON_AddItemToArray(stages, o);
    }
    sim_report_metric_json(rep, "stages", stages);
    if (!c->quiet) {
        printf("# train_step: %s, %s on %s (%u GPUs): tp=%u pp=%u dp=%u, %u micro-batches of %u, interleave %u\n", s->m.name,
               s->g.name, s->spec, s->lay.n_gpus, s->lay.tp, s->lay.pp, s->lay.dp, sc->microbatches, s->microbatch, sc->interleave);
        printf("  %-22s %10.3f ms\n  %-22s %10.3f ms\n", "step", step_ms, "compute", T->compute_ns / 1e6);
        printf("  %-22s %10.3f ms (all exposed)\n", "tp all-reduce", T->tp_ns / 1e6);
        printf("  %-22s %10.3f ms (exposed %.3f)\n", "pp send/recv", T->pp_ns / 1e6, T->pp_wait_ns / 1e6);
        printf("  %-22s %10.3f ms (exposed %.3f)\n", "dp all-reduce", T->dp_ns / 1e6, T->dp_exposed_ns / 1e6);
        printf("  %-22s %10.3f ms\n  %-22s %10.3f\n  %-22s %10.0f\n", "bubble", T->bubble_ns / 1e6, "mfu", mfu, "tokens/s", tokens_per_s);
    }
    bottleneck(c, s, net, step_ps, top);
    timeline(c, sch, sc->pp);

    sim_check(rep, "conservation", conserved, "%s", conserved ? "every message arrived, every op ran, every flow delivered" : why);
    double worst = 0;
    for (unsigned i = 0; i < sc->pp; i++) {
        double want = predicted_compute_ns(s, i), got = train_sched_stage(sch, i)->compute_ns;
        worst = fmax(worst, fabs(got - want) / want);
    }
    sim_check(rep, "compute_matches_workload", worst < 1e-6, "every stage's compute within %.2g of the workload model's (layers x roofline)", worst);
    sim_check(rep, "mfu_below_matmul_efficiency", mfu <= s->cc.mfu_matmul * (1 + 1e-9), "mfu %.3f, matmuls run at %.3f of peak", mfu, s->cc.mfu_matmul);
    if (s->lay.tp > 1) {
        /* each all-reduce moves 2(tp-1)/tp of its bytes out of every GPU, at most at the GPU's link goodput */
        double out_GBps = gpu_out_GBps(s->t, train_layout_ep(&s->lay, crit, 0, 0), SIM_TIER_SCALE_UP);
        out_GBps += gpu_out_GBps(s->t, train_layout_ep(&s->lay, crit, 0, 0), SIM_TIER_NETWORK);
        double n_ar = 4.0 * sc->layers / sc->pp * sc->microbatches;
        double bound_ns = out_GBps > 0 ? n_ar * 2.0 * (s->lay.tp - 1) / s->lay.tp * (double)sc->tp_bytes / out_GBps : 0;
        sim_check(rep, "tp_not_faster_than_links", T->tp_ns >= bound_ns * (1 - 1e-9),
                  "TP all-reduces took %.3f ms; the GPU's links need at least %.3f ms for their bytes", T->tp_ns / 1e6, bound_ns / 1e6);
    }
}
