/* Tests for the rate limiters: the exponential backoff sequence and its cap, per-key counts and
 * forget, the token bucket's burst and refill on the fake clock, the max-of combination and the
 * default limiter, and rejection of bad parameters and keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>

#include "base/clock.h"
#include "operator/workqueue/ratelimit.h"

#define MS FG_NS_PER_MS

static uint64_t when(struct fg_rate_limiter *rl, const char *key)
{
    uint64_t d = 0;
    assert_int_equal(fg_rate_limiter_when(rl, key, &d), FG_OK);
    return d;
}

static unsigned requeues(struct fg_rate_limiter *rl, const char *key)
{
    unsigned n = 0;
    assert_int_equal(fg_rate_limiter_num_requeues(rl, key, &n), FG_OK);
    return n;
}

static void backoff_doubles_per_failure_up_to_cap(void **state)
{
    (void)state;
    struct fg_rate_limiter *rl;
    assert_int_equal(fg_rate_limiter_new_backoff(5 * MS, 1000 * FG_NS_PER_S, &rl), FG_OK);
    uint64_t want = 5 * MS;
    for (unsigned i = 0; i < 18; i++) {     /* 5 ms · 2^17 = 655.36 s, still under the cap */
        assert_int_equal(when(rl, "ns/a"), want);
        assert_int_equal(requeues(rl, "ns/a"), i + 1);
        want *= 2;
    }
    assert_int_equal(when(rl, "ns/a"), 1000 * FG_NS_PER_S);   /* 1310.72 s capped */
    /* Far past 2^64 the delay stays at the cap instead of wrapping. */
    for (unsigned i = 0; i < 100; i++)
        assert_int_equal(when(rl, "ns/a"), 1000 * FG_NS_PER_S);
    assert_int_equal(requeues(rl, "ns/a"), 119);
    fg_rate_limiter_free(rl);
}

static void backoff_is_per_key_and_forget_resets(void **state)
{
    (void)state;
    struct fg_rate_limiter *rl;
    assert_int_equal(fg_rate_limiter_new_backoff(5 * MS, 1000 * FG_NS_PER_S, &rl), FG_OK);
    assert_int_equal(when(rl, "ns/a"), 5 * MS);
    assert_int_equal(when(rl, "ns/a"), 10 * MS);
    assert_int_equal(when(rl, "ns/a"), 20 * MS);
    assert_int_equal(when(rl, "ns/b"), 5 * MS);     /* b has its own count */
    assert_int_equal(requeues(rl, "ns/b"), 1);
    assert_int_equal(requeues(rl, "ns/never"), 0);
    assert_int_equal(fg_rate_limiter_forget(rl, "ns/a"), FG_OK);
    assert_int_equal(requeues(rl, "ns/a"), 0);
    assert_int_equal(when(rl, "ns/a"), 5 * MS);
    assert_int_equal(requeues(rl, "ns/b"), 1);      /* untouched by a's forget */
    assert_int_equal(fg_rate_limiter_forget(rl, "ns/never"), FG_OK);
    fg_rate_limiter_free(rl);
}

static void small_cap_applies_from_the_start(void **state)
{
    (void)state;
    struct fg_rate_limiter *rl;
    assert_int_equal(fg_rate_limiter_new_backoff(7 * MS, 20 * MS, &rl), FG_OK);
    assert_int_equal(when(rl, "k"), 7 * MS);
    assert_int_equal(when(rl, "k"), 14 * MS);
    assert_int_equal(when(rl, "k"), 20 * MS);
    assert_int_equal(when(rl, "k"), 20 * MS);
    fg_rate_limiter_free(rl);
}

static void bucket_allows_burst_then_spaces_by_qps(void **state)
{
    (void)state;
    fg_clock_fake_set(500 * FG_NS_PER_S);
    struct fg_rate_limiter *rl;
    assert_int_equal(fg_rate_limiter_new_bucket(10.0, 100, &rl), FG_OK);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "ns/%d", i);
        assert_int_equal(when(rl, key), 0);
    }
    /* Burst spent: each further call waits for the next token, 100 ms apart. */
    assert_int_equal(when(rl, "ns/x"), 100 * MS);
    assert_int_equal(when(rl, "ns/y"), 200 * MS);
    assert_int_equal(when(rl, "ns/z"), 300 * MS);
    /* One second refills ten tokens, three of which were already promised. */
    fg_clock_fake_advance(FG_NS_PER_S);
    for (int i = 0; i < 7; i++)
        assert_int_equal(when(rl, "ns/x"), 0);
    assert_int_equal(when(rl, "ns/x"), 100 * MS);
    /* A long idle period refills to the burst, never beyond it. */
    fg_clock_fake_advance(3600 * FG_NS_PER_S);
    for (int i = 0; i < 100; i++)
        assert_int_equal(when(rl, "ns/x"), 0);
    assert_int_equal(when(rl, "ns/x"), 100 * MS);
    /* The bucket keeps no per-key state. */
    assert_int_equal(requeues(rl, "ns/x"), 0);
    assert_int_equal(fg_rate_limiter_forget(rl, "ns/x"), FG_OK);
    assert_int_equal(when(rl, "ns/x"), 200 * MS);
    fg_rate_limiter_free(rl);
    fg_clock_fake_clear();
}

static void default_is_max_of_backoff_and_bucket(void **state)
{
    (void)state;
    fg_clock_fake_set(500 * FG_NS_PER_S);
    struct fg_rate_limiter *rl = fg_rate_limiter_new_default();
    /* While the bucket has tokens the per-key backoff decides. */
    assert_int_equal(when(rl, "ns/a"), 5 * MS);
    assert_int_equal(when(rl, "ns/a"), 10 * MS);
    char key[16];
    for (int i = 0; i < 98; i++) {
        snprintf(key, sizeof key, "ns/%d", i);
        assert_int_equal(when(rl, key), 5 * MS);
    }
    /* 100 tokens spent: the bucket's 100 ms beats a first failure's 5 ms... */
    assert_int_equal(when(rl, "ns/b"), 100 * MS);
    /* ...but not a key deep in backoff. */
    for (int i = 0; i < 10; i++)
        (void)when(rl, "ns/c");
    assert_int_equal(when(rl, "ns/c"), 5 * MS << 10);
    assert_int_equal(requeues(rl, "ns/c"), 11);
    assert_int_equal(fg_rate_limiter_forget(rl, "ns/c"), FG_OK);
    assert_int_equal(requeues(rl, "ns/c"), 0);
    fg_rate_limiter_free(rl);
    fg_clock_fake_clear();
}

static void bad_parameters_are_rejected(void **state)
{
    (void)state;
    struct fg_rate_limiter *rl = NULL;
    assert_int_equal(fg_rate_limiter_new_backoff(0, 10, &rl), FG_E_INVAL);
    assert_int_equal(fg_rate_limiter_new_backoff(10, 5, &rl), FG_E_INVAL);
    assert_int_equal(fg_rate_limiter_new_bucket(0.0, 10, &rl), FG_E_INVAL);
    assert_int_equal(fg_rate_limiter_new_bucket(-1.0, 10, &rl), FG_E_INVAL);
    assert_int_equal(fg_rate_limiter_new_bucket(NAN, 10, &rl), FG_E_INVAL);
    assert_int_equal(fg_rate_limiter_new_bucket(INFINITY, 10, &rl), FG_E_INVAL);
    assert_int_equal(fg_rate_limiter_new_bucket(10.0, 0, &rl), FG_E_INVAL);
    assert_null(rl);
    assert_int_equal(fg_rate_limiter_new_max_of(NULL, 0, &rl), FG_E_INVAL);
    /* A NULL child fails the call and the valid children are still freed (no leak under ASan). */
    struct fg_rate_limiter *children[2] = { NULL, NULL };
    assert_int_equal(fg_rate_limiter_new_backoff(1, 2, &children[0]), FG_OK);
    assert_int_equal(fg_rate_limiter_new_max_of(children, 2, &rl), FG_E_INVAL);
    assert_null(rl);
    fg_rate_limiter_free(NULL);
}

static void bad_keys_are_rejected(void **state)
{
    (void)state;
    struct fg_rate_limiter *rl = fg_rate_limiter_new_default();
    char long_key[600];
    for (size_t i = 0; i < sizeof long_key - 1; i++)
        long_key[i] = 'k';
    long_key[sizeof long_key - 1] = '\0';
    const char *bad[] = { NULL, "", long_key };
    for (size_t i = 0; i < 3; i++) {
        uint64_t d = 77;
        unsigned n = 77;
        assert_int_equal(fg_rate_limiter_when(rl, bad[i], &d), FG_E_INVAL);
        assert_int_equal(fg_rate_limiter_forget(rl, bad[i]), FG_E_INVAL);
        assert_int_equal(fg_rate_limiter_num_requeues(rl, bad[i], &n), FG_E_INVAL);
        assert_int_equal(d, 77);
        assert_int_equal(n, 77);
    }
    fg_rate_limiter_free(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backoff_doubles_per_failure_up_to_cap),
        cmocka_unit_test(backoff_is_per_key_and_forget_resets),
        cmocka_unit_test(small_cap_applies_from_the_start),
        cmocka_unit_test(bucket_allows_burst_then_spaces_by_qps),
        cmocka_unit_test(default_is_max_of_backoff_and_bucket),
        cmocka_unit_test(bad_parameters_are_rejected),
        cmocka_unit_test(bad_keys_are_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
