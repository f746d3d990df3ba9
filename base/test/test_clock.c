#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/clock.h"

static void real_clock_is_monotonic(void **state)
{
    (void)state;
    uint64_t a = fg_clock_mono_ns();
    uint64_t b = fg_clock_mono_ns();
    assert_true(b >= a);
    assert_true(fg_clock_wall_ms() > 1700000000000LL);
}

static void fake_clock_moves_only_when_advanced(void **state)
{
    (void)state;
    fg_clock_fake_set(5 * FG_NS_PER_S);
    assert_true(fg_clock_is_fake());
    assert_int_equal(fg_clock_mono_ns(), 5 * FG_NS_PER_S);
    assert_int_equal(fg_clock_mono_ns(), 5 * FG_NS_PER_S);
    fg_clock_fake_advance(250 * FG_NS_PER_MS);
    assert_int_equal(fg_clock_mono_ns(), 5 * FG_NS_PER_S + 250 * FG_NS_PER_MS);
    assert_int_equal(fg_clock_sleep_until_hint(100 * FG_NS_PER_S), FG_NS_PER_MS);
    fg_clock_fake_clear();
    assert_false(fg_clock_is_fake());
    assert_int_equal(fg_clock_sleep_until_hint(0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_clock_is_monotonic),
        cmocka_unit_test(fake_clock_moves_only_when_advanced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
