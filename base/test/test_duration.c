/* The one duration syntax: what it accepts, what it refuses (leaving the output alone), how it prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/duration.h"

static void test_durations(void **state)
{
    (void)state;
    int64_t ms = -1;
    assert_int_equal(fg_duration_parse("1h30m", &ms, NULL), FG_OK);
    assert_int_equal(ms, 5400000);
    assert_int_equal(fg_duration_parse("250ms", &ms, NULL), FG_OK);
    assert_int_equal(ms, 250);
    assert_int_equal(fg_duration_parse("0s", &ms, NULL), FG_OK);
    assert_int_equal(ms, 0);
    const char *bad[] = { "", "7d", "h", "1", "1.5h", "-1h", "1h ", " 1h", "1H", "99999999999999999999h",
                          "87840h1ms" /* just past ten years */ };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char msg[FG_ERRMSG_MAX] = "";
        ms = 42;
        if (fg_duration_parse(bad[i], &ms, msg) != FG_E_PARSE)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_int_equal(ms, 42);
        assert_true(msg[0] != '\0');
    }
    char out[32];
    fg_duration_format(5400000, out, sizeof out);
    assert_string_equal(out, "1h30m");
    fg_duration_format(168ll * 3600 * 1000, out, sizeof out);
    assert_string_equal(out, "168h");
    fg_duration_format(1250, out, sizeof out);
    assert_string_equal(out, "1s250ms");
    fg_duration_format(0, out, sizeof out);
    assert_string_equal(out, "0s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
