/* The main() tail every Check unit test shares: run the suite, return 1 on
 * any failure. Not a test itself. */
#ifndef CHECK_RUN_H
#define CHECK_RUN_H

#include <check.h>

static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

#endif
