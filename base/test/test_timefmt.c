/* Tests of RFC 3339 timestamps: the two forms the API writes, and every form a reader may meet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/timefmt.h"

static void test_format(void **state)
{
    (void)state;
    char out[FG_TIME_MAX];
    fg_time_format(0, out);
    assert_string_equal(out, "1970-01-01T00:00:00Z");
    fg_time_format(1767225600123ll, out);
    assert_string_equal(out, "2026-01-01T00:00:00Z");
    fg_time_format_micro(1767225600123ll, out);
    assert_string_equal(out, "2026-01-01T00:00:00.123000Z");
    fg_time_format_micro(-1, out);
    assert_string_equal(out, "1969-12-31T23:59:59.999000Z");
}

static void test_parse(void **state)
{
    (void)state;
    int64_t ms = 0;
    assert_true(fg_time_parse("2026-01-01T00:00:00Z", &ms));
    assert_int_equal(ms, 1767225600000ll);
    assert_true(fg_time_parse("2026-01-01T00:00:00.123456789z", &ms));
    assert_int_equal(ms, 1767225600123ll);
    assert_true(fg_time_parse("2026-01-01t02:30:00+02:30", &ms));
    assert_int_equal(ms, 1767225600000ll);
    assert_true(fg_time_parse("2024-02-29T00:00:00Z", &ms));

    char out[FG_TIME_MAX];
    fg_time_format_micro(1767225600123ll, out);
    assert_true(fg_time_parse(out, &ms));
    assert_int_equal(ms, 1767225600123ll);
}

static void test_parse_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "2026-01-01", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "2026-13-01T00:00:00Z",
        "2025-02-29T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00.1234567890Z", "2026-01-01T00:00:00+2:00", "2026-01-01T00:00:00Zjunk",
    };
    int64_t ms = 42;
    assert_false(fg_time_parse(NULL, &ms));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(fg_time_parse(bad[i], &ms));
    assert_int_equal(ms, 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
