/* bench_check: every comparison `make bench` promises is in reports/bench.json.
 * A benchmark that could not run (a comparison program not built, a run that
 * failed) leaves its keys out; this names each one missing and exits 1, so
 * `make bench` never passes with a comparison silently dropped.
 *   bench_check FILE OBJECT:KEY[,KEY...] ...
 * A key must hold a finite number or a boolean. Objects in FILE that no
 * argument names are an error too (a benchmark whose results nobody checks). */
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_check FILE OBJECT:KEY[,KEY...] ...\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "bench_check: %s not written: every benchmark failed before writing its results\n", argv[1]);
        return 1;
    }
    fclose(f);
    cJSON *root = sim_json_read_file(argv[1]);
    if (!cJSON_IsObject(root)) {
        fprintf(stderr, "bench_check: %s is not a JSON object\n", argv[1]);
        return 1;
    }
    int missing = 0, checked = 0;
    for (int a = 2; a < argc; a++) {
        char spec[1024];
        snprintf(spec, sizeof spec, "%s", argv[a]);
        char *colon = strchr(spec, ':');
        if (!colon) {
            fprintf(stderr, "bench_check: '%s': expected OBJECT:KEY[,KEY...]\n", argv[a]);
            return 2;
        }
        *colon = 0;
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, spec);
        if (!cJSON_IsObject(obj)) {
            fprintf(stderr, "bench: MISSING \"%s\": the benchmark did not write its object (it failed or did not run; see its output above)\n",
                    spec);
            missing++;
            continue;
        }
        for (char *key = strtok(colon + 1, ","); key; key = strtok(NULL, ",")) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
            checked++;
            if (!v) {
                fprintf(stderr, "bench: MISSING %s.%s: that comparison did not run (see the benchmark's output above)\n", spec, key);
                missing++;
            } else if (!(cJSON_IsBool(v) || (cJSON_IsNumber(v) && isfinite(v->valuedouble)))) {
                fprintf(stderr, "bench: %s.%s is not a finite number or a boolean\n", spec, key);
                missing++;
            }
        }
    }
    const cJSON *obj;
    cJSON_ArrayForEach(obj, root) {
        int named = 0;
        for (int a = 2; a < argc && !named; a++) {
            size_t len = strcspn(argv[a], ":");
            named = strlen(obj->string) == len && strncmp(obj->string, argv[a], len) == 0;
        }
        if (!named) {
            fprintf(stderr, "bench: \"%s\" in %s has no list of comparisons to check (scripts/bench.sh)\n", obj->string, argv[1]);
            missing++;
        }
    }
    cJSON_Delete(root);
    if (missing) {
        fprintf(stderr, "bench: %d comparison(s) missing or unchecked in %s\n", missing, argv[1]);
        return 1;
    }
    printf("bench: all %d comparisons present in %s\n", checked, argv[1]);
    return 0;
}
