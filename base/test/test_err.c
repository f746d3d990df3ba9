#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "base/err.h"

static void every_code_has_a_distinct_string(void **state)
{
    (void)state;
    for (int i = 0; i < FG_ERR__COUNT; i++) {
        assert_non_null(fg_err_str((enum fg_err)i));
        assert_true(strncmp(fg_err_name((enum fg_err)i), "FG_", 3) == 0);
        for (int j = i + 1; j < FG_ERR__COUNT; j++)
            assert_string_not_equal(fg_err_name((enum fg_err)i), fg_err_name((enum fg_err)j));
    }
    assert_string_equal(fg_err_name(FG_E_KUBE_CONFLICT), "FG_E_KUBE_CONFLICT");
}

static void out_of_range_codes_are_safe(void **state)
{
    (void)state;
    assert_string_equal(fg_err_str((enum fg_err)9999), "unknown error");
    assert_string_equal(fg_err_name((enum fg_err)-1), "FG_E_UNKNOWN");
}

static void errmsg_formats_and_returns_code(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_errmsg(msg, FG_E_PARSE, "line %d: %s", 7, "bad"), FG_E_PARSE);
    assert_string_equal(msg, "line 7: bad");
    assert_int_equal(fg_errmsg(NULL, FG_E_IO, "ignored"), FG_E_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_has_a_distinct_string),
        cmocka_unit_test(out_of_range_codes_are_safe),
        cmocka_unit_test(errmsg_formats_and_returns_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
