/*
 * `fracgpu operator` command line: bad usage exits 2 with a message, an unusable kubeconfig exits 1,
 * and neither starts anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/log.h"
#include "operator/run/cmd_operator.h"

static void test_usage_errors(void **state)
{
    (void)state;
    char *a1[] = { "operator", "--listen", "nonsense", NULL };
    assert_int_equal(fg_cmd_operator(3, a1), 2);
    char *a2[] = { "operator", "--listen", "127.0.0.1:99999", NULL };
    assert_int_equal(fg_cmd_operator(3, a2), 2);
    char *a3[] = { "operator", "--workers", "0", NULL };
    assert_int_equal(fg_cmd_operator(3, a3), 2);
    char *a4[] = { "operator", "--workers", "9x", NULL };
    assert_int_equal(fg_cmd_operator(3, a4), 2);
    char *a5[] = { "operator", "--log-level", "loud", NULL };
    assert_int_equal(fg_cmd_operator(3, a5), 2);
    char *a6[] = { "operator", "--bogus", NULL };
    assert_int_equal(fg_cmd_operator(2, a6), 2);
    char *a7[] = { "operator", "extra", NULL };
    assert_int_equal(fg_cmd_operator(2, a7), 2);
    char *a8[] = { "operator", "--help", NULL };
    assert_int_equal(fg_cmd_operator(2, a8), 0);
}

static void test_bad_kubeconfig(void **state)
{
    (void)state;
    char *a[] = { "operator", "--kubeconfig", "/nonexistent/kubeconfig", "--listen", "127.0.0.1:0", NULL };
    assert_int_equal(fg_cmd_operator(5, a), 1);
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_bad_kubeconfig),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
