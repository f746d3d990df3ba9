/* The table-driven integer sigmoid equals FGD's expression: on random deltas over the whole range
 * scores take, on deltas packed around every step (the last ulps, the fallback margin, its edges),
 * and far out on both sides. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "scheduler/core/rng.h"
#include "scheduler/policies/sigmoid_int.h"

static void check(const struct fg__sigmoid *sg, double d)
{
    assert_int_equal(fg__sigmoid_score(sg, d), fg__sigmoid_exact(d));
}

static void table_scores_as_the_expression(void **state)
{
    (void)state;
    struct fg__sigmoid sg;
    fg__sigmoid_init(&sg);
    /* The steps are where the expression says: 1000 · ln(s / (100 − s)), to within a micro-milli. */
    for (int s = 1; s < 100; s++)
        assert_true(fabs(sg.step[s] - 1000.0 * log(s / (100.0 - s))) < 1e-6);
    for (int s = 1; s < 100; s++)  /* the table's premise: at most one step in a 32-milli bucket */
        assert_true(sg.step[s + 1] - sg.step[s] > 32);
    assert_true(sg.step[100] > 30000);
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 5);
    for (int k = 0; k < 1000000; k++)
        check(&sg, -6000.0 + 46000.0 * (double)fg_sched_rng_below(&rng, 1u << 30) / (double)(1u << 30));
    static const double offsets[] = { 0, 1e-9, 5e-7, 1e-6, 2e-6, 1e-3, 0.5, 16, 31.9 };
    for (int s = 1; s <= 100; s++) {
        double d = sg.step[s];
        for (int u = 0; u < 64; u++) {  /* the 64 doubles either side of the step */
            check(&sg, d);
            check(&sg, nextafter(d, -INFINITY));
            d = nextafter(d, INFINITY);
        }
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
            check(&sg, sg.step[s] + offsets[o]);
            check(&sg, sg.step[s] - offsets[o]);
        }
    }
    static const double far[] = { -1e300, -1e6, -4700, 0, 4700, 1e5, 1e300, INFINITY, -INFINITY };
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++)
        check(&sg, far[i]);
    assert_int_equal(fg__sigmoid_score(&sg, 0), 50);
    fg__sigmoid_cleanup(&sg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_scores_as_the_expression),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
