/* Tests for the token bucket, stepped with the fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/clock.h"
#include "base/tokenbucket.h"

static void burst_then_qps(void **state)
{
    (void)state;
    fg_clock_fake_set(100 * FG_NS_PER_S);
    struct fg_token_bucket rl;
    fg_token_bucket_init(&rl, 10, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(fg_token_bucket_try_take(&rl), 0);
    uint64_t d = fg_token_bucket_try_take(&rl);
    assert_true(d > 99 * FG_NS_PER_MS && d <= 101 * FG_NS_PER_MS);
    fg_clock_fake_advance(50 * FG_NS_PER_MS);
    d = fg_token_bucket_try_take(&rl);
    assert_true(d > 49 * FG_NS_PER_MS && d <= 51 * FG_NS_PER_MS);
    fg_clock_fake_advance(50 * FG_NS_PER_MS);
    assert_int_equal(fg_token_bucket_try_take(&rl), 0);
    assert_true(fg_token_bucket_try_take(&rl) > 0);
    /* A long idle period refills only up to the burst. */
    fg_clock_fake_advance(3600 * FG_NS_PER_S);
    for (int i = 0; i < 3; i++)
        assert_int_equal(fg_token_bucket_try_take(&rl), 0);
    assert_true(fg_token_bucket_try_take(&rl) > 0);
    fg_token_bucket_cleanup(&rl);
    fg_clock_fake_clear();
}

static void disabled_and_zero_burst(void **state)
{
    (void)state;
    fg_clock_fake_set(FG_NS_PER_S);
    struct fg_token_bucket rl;
    fg_token_bucket_init(&rl, 0, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(fg_token_bucket_try_take(&rl), 0);
    fg_token_bucket_cleanup(&rl);
    fg_token_bucket_init(&rl, 1, 0); /* burst 0 means 1 */
    assert_int_equal(fg_token_bucket_try_take(&rl), 0);
    assert_true(fg_token_bucket_try_take(&rl) > 900 * FG_NS_PER_MS);
    fg_token_bucket_cleanup(&rl);
    fg_clock_fake_clear();
}

static void wait_blocks_for_the_real_interval(void **state)
{
    (void)state;
    struct fg_token_bucket rl;
    fg_token_bucket_init(&rl, 100, 1);
    uint64_t t0 = fg_clock_mono_ns();
    for (int i = 0; i < 6; i++)
        fg_token_bucket_wait(&rl);
    uint64_t took = fg_clock_mono_ns() - t0;
    assert_true(took >= 45 * FG_NS_PER_MS);   /* 5 refills at 10 ms each */
    assert_true(took < 2 * FG_NS_PER_S);
    fg_token_bucket_cleanup(&rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(burst_then_qps),
        cmocka_unit_test(disabled_and_zero_burst),
        cmocka_unit_test(wait_blocks_for_the_real_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
