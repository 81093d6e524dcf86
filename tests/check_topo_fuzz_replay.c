/* Replays, without libFuzzer, every committed fuzz seed, example topology and
 * past crash (tests/fuzz/crashes/) through the fuzzer's own harness, so a
 * crash once found stays fixed in every build, with or without clang. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_topo_one.h"
#include "check_run.h"

static unsigned replay_dir(const char *rel)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", LINKSTACK_SOURCE_DIR, rel);
    DIR *d = opendir(dir);
    ck_assert_msg(d, "cannot open %s", dir);
    unsigned n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f, "cannot open %s", path);
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        fuzz_topo_one(buf, len);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(test_replay)
{
    ck_assert_uint_ge(replay_dir("topologies"), 3);
    ck_assert_uint_ge(replay_dir("tests/fuzz/seeds"), 9);
    replay_dir("tests/fuzz/crashes");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo_fuzz_replay");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_replay);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
