/* report_same A.json B.json: are two reports of one test the same, field by
 * field, apart from what depends on how the run was made (wall-clock times,
 * the number of ranks and the partition)? Prints every difference by its
 * path; exit 0 the same, 1 different, 2 unreadable. The rank-independence
 * regression (scripts/rank_independence.sh) runs it. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sim/report.h"

static unsigned differences;

/* Fields of how the run was made, not of what was simulated. */
static bool run_shape(const char *path)
{
    static const char *const exact[] = { "sim.wall_s", "sim.ranks", "sim.per_rank", "sim.partition", "sim.lookahead_ns", "sim.cut_links",
                                         "params.partition", "params.not_applicable.partition",
                                         "metrics.plot" /* a file under the run's --out directory */, NULL };
    for (unsigned i = 0; exact[i]; i++)
        if (!strcmp(path, exact[i])) return true;
    return !strncmp(path, "metrics.", 8) && strstr(path, "wall") != NULL;   /* wall_s, hops_per_wall_s, ... */
}

static void compare(const cJSON *a, const cJSON *b, const char *path)
{
    if (run_shape(path)) return;
    if (!a || !b || (a->type & 0xff) != (b->type & 0xff)) {
        printf("  %s: %s\n", path, !a ? "only in the second" : !b ? "only in the first" : "of different types");
        differences++;
        return;
    }
    if (cJSON_IsObject(a)) {
        for (const cJSON *x = a->child; x; x = x->next) {
            char p[1024];
            snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", x->string);
            compare(x, cJSON_GetObjectItemCaseSensitive(b, x->string), p);
        }
        for (const cJSON *y = b->child; y; y = y->next)
            if (!cJSON_GetObjectItemCaseSensitive(a, y->string)) {
                char p[1024];
                snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", y->string);
                compare(NULL, y, p);
            }
    } else if (cJSON_IsArray(a)) {
        int n = cJSON_GetArraySize(a);
        if (n != cJSON_GetArraySize(b)) {
            printf("  %s: %d entries vs %d\n", path, n, cJSON_GetArraySize(b));
            differences++;
            return;
        }
        for (int i = 0; i < n; i++) {
            char p[1024];
            snprintf(p, sizeof p, "%s[%d]", path, i);
            compare(cJSON_GetArrayItem(a, i), cJSON_GetArrayItem(b, i), p);
        }
    } else if (cJSON_IsNumber(a)) {
        if (a->valuedouble != b->valuedouble) {   /* bit-identical: no tolerance */
            printf("  %s: %.17g vs %.17g\n", path, a->valuedouble, b->valuedouble);
            differences++;
        }
    } else if (cJSON_IsString(a)) {
        if (strcmp(a->valuestring, b->valuestring)) {
            printf("  %s: \"%s\" vs \"%s\"\n", path, a->valuestring, b->valuestring);
            differences++;
        }
    } else if ((a->type & 0xff) != (b->type & 0xff)) {   /* booleans, null */
        printf("  %s: differs\n", path);
        differences++;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: report_same A.json B.json\n");
        return 2;
    }
    cJSON *a = sim_json_read_file(argv[1]), *b = sim_json_read_file(argv[2]);
    if (!a || !b) {
        fprintf(stderr, "report_same: cannot read %s\n", !a ? argv[1] : argv[2]);
        return 2;
    }
    compare(a, b, "");
    printf("%s vs %s: %s (%u difference%s)\n", argv[1], argv[2], differences ? "DIFFERENT" : "the same", differences,
           differences == 1 ? "" : "s");
    cJSON_Delete(a);
    cJSON_Delete(b);
    return differences ? 1 : 0;
}
