/* sim_fabric_write_svg: the system as a Graphviz picture, links coloured by
 * utilisation (the max of the two directions), the busiest one bold; a
 * partitioned system with each part (rank) boxed and filled in its colour,
 * and the cut links dashed. */
#include "sim/fabric.h"
#include "sim/fabric_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* green (0) -> yellow (0.5) -> red (1) */
static void util_colour(double u, char *buf, size_t n)
{
    if (u < 0) u = 0;
    if (u > 1) u = 1;
    int r = u < 0.5 ? (int)(510 * u) : 255, g = u < 0.5 ? 200 : (int)(200 * (1 - u) * 2);
    snprintf(buf, n, "#%02x%02x00", r, g);
}

/* A direction another rank sends on (a ranked fabric) is drawn idle here. */
static double util_of(const sim_fabric *f, uint32_t link, unsigned dir)
{
    sim_fabric_dir_stats s;
    return sim_fabric_dir_stats_get(f, link, dir, &s) ? s.util : 0;
}

int sim_fabric_write_svg(const sim_fabric *f, const char *path, const char *title, char *why, size_t why_n)
{
    const topo *t = sim_fabric_topo(f);
    bool coords = (!strncmp(t->generator, "mesh", 4) || !strncmp(t->generator, "torus", 5));
    for (uint32_t n = 0; coords && n < t->n_nodes; n++)
        if (t->nodes[n].kind->forwards && t->nodes[n].coord[0] < 0) coords = false;
    char dot_path[1024];
    snprintf(dot_path, sizeof dot_path, "%s.dot", path);
    FILE *o = fopen(dot_path, "w");
    if (!o) {
        snprintf(why, why_n, "cannot write %s", dot_path);
        return -1;
    }
    fprintf(o, "graph fabric {\n  label=\"%s\"; labelloc=t; fontname=Helvetica; overlap=false; splines=true;\n",
            title ? title : "");
    fprintf(o, "  node [fontname=Helvetica fontsize=10]; edge [fontname=Helvetica fontsize=8];\n");
    static const char *const part_fill[] = { "#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1" };
    const unsigned parts = f->ranked ? f->cfg.transport->size : f->pdes ? f->cfg.parts : 1;
    const uint32_t *node_part = parts > 1 ? f->cfg.node_part : NULL;
    for (unsigned part = 0; part < parts; part++) {
        if (node_part && !coords)   /* dot keeps a cluster together: one box per part */
            fprintf(o, "  subgraph cluster_part%u {\n  label=\"%s %u\"; style=rounded; color=\"#666666\";\n", part,
                    f->ranked ? "rank" : "part", part);
        for (uint32_t n = 0; n < t->n_nodes; n++) {
            const topo_node *nd = &t->nodes[n];
            if (node_part && node_part[n] != part) continue;
            const char *fill = node_part ? part_fill[part % 8] : nd->kind->forwards ? "#9ecae1" : "#eeeeee";
            if (nd->kind->forwards)
                fprintf(o, "  \"%s\" [shape=box style=filled fillcolor=\"%s\"", nd->name, fill);
            else
                fprintf(o, "  \"%s\" [shape=circle width=0.3 fixedsize=true fontsize=7 style=filled fillcolor=\"%s\"", nd->name,
                        fill);
            if (coords && nd->coord[0] >= 0) {
                /* endpoints sit just off their switch */
                double off = nd->kind->forwards ? 0 : 0.35;
                fprintf(o, " pos=\"%g,%g!\"", 1.2 * nd->coord[0] + off, 1.2 * (nd->coord[1] < 0 ? 0 : nd->coord[1]) + off);
            }
            fprintf(o, "];\n");
        }
        if (node_part && !coords) fprintf(o, "  }\n");
    }
    double best = -1;
    uint32_t bi = 0;
    for (uint32_t i = 0; i < t->n_links; i++) {
        double u0 = util_of(f, i, 0), u1 = util_of(f, i, 1);
        double u = u0 > u1 ? u0 : u1;
        if (u > best) best = u, bi = i;
    }
    for (uint32_t i = 0; i < t->n_links; i++) {
        const topo_link *tl = &t->links[i];
        double u0 = util_of(f, i, 0), u1 = util_of(f, i, 1);
        double u = u0 > u1 ? u0 : u1;
        char col[16];
        util_colour(u, col, sizeof col);
        bool busiest = i == bi && best > 0, cut = node_part && node_part[tl->a] != node_part[tl->b];
        fprintf(o, "  \"%s\" -- \"%s\" [color=\"%s\" label=\"%.2f%s\" penwidth=%s%s];\n", t->nodes[tl->a].name,
                t->nodes[tl->b].name, col, u, busiest ? " (max)" : "", busiest ? "4" : "1.5",
                busiest ? " style=bold fontcolor=red" : cut ? " style=dashed" : "");
    }
    fprintf(o, "}\n");
    fclose(o);
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", coords ? "neato" : "dot");
    if (system(cmd) != 0) {
        snprintf(why, why_n, "Graphviz '%s' is not installed (install graphviz); the graph is in %s", coords ? "neato" : "dot",
                 dot_path);
        return -1;
    }
    snprintf(cmd, sizeof cmd, "%s -q -Tsvg '%s' -o '%s' 2>&1", coords ? "neato" : "dot", dot_path, path);
    if (system(cmd) != 0) {
        snprintf(why, why_n, "%s -Tsvg %s failed", coords ? "neato" : "dot", dot_path);
        return -1;
    }
    return 0;
}
