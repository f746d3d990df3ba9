/* The decaying histogram against hand-computed cases: bucket edges, percentiles, decay by half-lives,
 * the reference moving forward, and the samples it refuses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rightsizing/histogram.h"

/* Buckets start at 0, 10, 30, 70, 150, 310, 630 (and the last ends at 1270): seven cover 0..1000. */
static const struct fg_hist_opts OPTS = { .first = 10, .ratio = 2, .max = 1000, .half_life_ms = 1000 };

static void buckets_grow_by_the_ratio(void **state)
{
    (void)state;
    struct fg_hist h;
    assert_true(fg_hist_init(&h, &OPTS));
    assert_int_equal(h.n, 7);
    static const double starts[] = { 0, 10, 30, 70, 150, 310, 630, 1270 };
    for (int i = 0; i <= 7; i++)
        assert_true(fabs(fg_hist_bucket_start(&h, i) - starts[i]) < 1e-9);
    assert_int_equal(fg_hist_bucket(&h, 0), 0);
    assert_int_equal(fg_hist_bucket(&h, 9.999), 0);
    assert_int_equal(fg_hist_bucket(&h, 10), 1);
    assert_int_equal(fg_hist_bucket(&h, 29.999), 1);
    assert_int_equal(fg_hist_bucket(&h, 30), 2);
    assert_int_equal(fg_hist_bucket(&h, 630), 6);
    assert_int_equal(fg_hist_bucket(&h, 1000), 6);
}

static void percentiles_are_bucket_ends(void **state)
{
    (void)state;
    struct fg_hist h;
    assert_true(fg_hist_init(&h, &OPTS));
    assert_true(fg_hist_percentile(&h, 0.9) == 0);   /* empty */
    static const double values[] = { 5, 50, 100, 200 };   /* buckets 0, 2, 3, 4 */
    for (int i = 0; i < 4; i++)
        assert_int_equal(fg_hist_add(&h, values[i], 1, 0), FG_HIST_OK);
    assert_true(fg_hist_percentile(&h, 0.25) == 10);    /* 1 of 4 reached in bucket 0 */
    assert_true(fg_hist_percentile(&h, 0.5) == 70);     /* 2 of 4 in bucket 2 */
    assert_true(fg_hist_percentile(&h, 0.75) == 150);
    assert_true(fg_hist_percentile(&h, 1) == 310);
    assert_int_equal(fg_hist_add(&h, 999, 4, 0), FG_HIST_OK);   /* the last bucket's end is past max */
    assert_true(fg_hist_percentile(&h, 1) == 1000);
}

static void old_samples_fade_by_half_lives(void **state)
{
    (void)state;
    struct fg_hist h;
    assert_true(fg_hist_init(&h, &OPTS));
    assert_int_equal(fg_hist_add(&h, 5, 1, 0), FG_HIST_OK);       /* weighs 1 */
    assert_int_equal(fg_hist_add(&h, 200, 1, 1000), FG_HIST_OK);  /* one half-life later: weighs 2 */
    assert_true(fabs(h.total - 3) < 1e-12);
    assert_true(fg_hist_percentile(&h, 0.33) == 10);    /* 0.99 ≤ 1: the old sample's bucket */
    assert_true(fg_hist_percentile(&h, 0.34) == 310);   /* 1.02 > 1 */
    assert_true(fabs(fg_hist_weight_at(&h, 2000) - 0.75) < 1e-12);   /* 3 at t=0, two half-lives on */
    assert_true(fabs(fg_hist_weight_at(&h, 1000) - 1.5) < 1e-12);
}

static void the_reference_moves_forward(void **state)
{
    (void)state;
    struct fg_hist h;
    assert_true(fg_hist_init(&h, &OPTS));
    assert_int_equal(fg_hist_add(&h, 5, 1, 0), FG_HIST_OK);
    assert_int_equal(fg_hist_add(&h, 200, 1, 40 * 1000), FG_HIST_OK);   /* 40 half-lives: rescaled */
    assert_true(h.reference_ms == 40 * 1000);
    assert_true(fabs(h.weight[4] - 1) < 1e-12);
    assert_true(fabs(h.weight[0] - exp2(-40)) < 1e-24);
    assert_true(fg_hist_percentile(&h, 0.5) == 310);
    assert_true(fabs(fg_hist_weight_at(&h, 40 * 1000) - (1 + exp2(-40))) < 1e-12);
}

static void bad_samples_are_refused(void **state)
{
    (void)state;
    struct fg_hist h;
    assert_true(fg_hist_init(&h, &OPTS));
    assert_int_equal(fg_hist_add(&h, NAN, 1, 0), FG_HIST_BAD_VALUE);
    assert_int_equal(fg_hist_add(&h, INFINITY, 1, 0), FG_HIST_BAD_VALUE);
    assert_int_equal(fg_hist_add(&h, -1, 1, 0), FG_HIST_BAD_VALUE);
    assert_int_equal(fg_hist_add(&h, 1000.5, 1, 0), FG_HIST_BAD_VALUE);   /* above what a GPU has */
    assert_int_equal(fg_hist_add(&h, 5, 0, 0), FG_HIST_BAD_WEIGHT);
    assert_int_equal(fg_hist_add(&h, 5, -1, 0), FG_HIST_BAD_WEIGHT);
    assert_int_equal(fg_hist_add(&h, 5, NAN, 0), FG_HIST_BAD_WEIGHT);
    assert_true(h.empty && h.total == 0);   /* nothing stored */
    assert_int_equal(fg_hist_add(&h, 5, 1, 10000), FG_HIST_OK);
    assert_int_equal(fg_hist_add(&h, 5, 1, 8000), FG_HIST_TIME_BACKWARDS);   /* two half-lives back */
    assert_int_equal(fg_hist_add(&h, 5, 1, 9500), FG_HIST_OK);   /* late by less than a half-life */
    assert_true(h.last_ms == 10000);
    assert_true(fabs(h.total - (1 + exp2(-0.5))) < 1e-12);
}

static void invalid_options_are_refused(void **state)
{
    (void)state;
    struct fg_hist h;
    struct fg_hist_opts o = OPTS;
    o.first = 0;
    assert_false(fg_hist_init(&h, &o));
    o = OPTS;
    o.ratio = 1;
    assert_false(fg_hist_init(&h, &o));
    o = OPTS;
    o.half_life_ms = 0;
    assert_false(fg_hist_init(&h, &o));
    o = OPTS;
    o.max = NAN;
    assert_false(fg_hist_init(&h, &o));
    o = (struct fg_hist_opts){ .first = 1e-6, .ratio = 1.01, .max = 1e9, .half_life_ms = 1 };   /* too many buckets */
    assert_false(fg_hist_init(&h, &o));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buckets_grow_by_the_ratio),   cmocka_unit_test(percentiles_are_bucket_ends),
        cmocka_unit_test(old_samples_fade_by_half_lives), cmocka_unit_test(the_reference_moves_forward),
        cmocka_unit_test(bad_samples_are_refused),     cmocka_unit_test(invalid_options_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
