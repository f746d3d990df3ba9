/* The prices behind fracgpu's price term: on mixes whose optimal packing is known by hand the LP's
 * dual gives the prices that packing implies and the gap values and losses follow from them; on a
 * mix whose dual is not unique (any split of a GPU between a 333 and a 667) the duality invariants
 * hold; a mix with nothing to price, and arguments outside a loss's domain, give no term. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "scheduler/policies/prices_int.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)

static struct fg__prices prices;  /* 16 KB: kept off the test's stack */

/* 810s, which only the small 160s can join, as many 470s, and half as many 160s. Each 810 needs a
 * GPU of its own and the 470s go two to a GPU, so 1.5 GPUs per 810 are optimal, and the only dual
 * reaching 1.5 prices the 810 at a whole GPU, the 470 at half and the 160 at nothing. */
static void a_known_packing_gives_its_prices(void **state)
{
    (void)state;
    struct fg_sched_mix_type t[] = { { 8000, 810, 1, FG_SCHED_MODELS_ANY, 0.4 },
                                     { 4000, 470, 1, FG_SCHED_MODELS_ANY, 0.4 },
                                     { 2000, 160, 1, FG_SCHED_MODELS_ANY, 0.2 } };
    struct fg_sched_mix mix = { t, 3 };
    assert_true(fg__prices_set_mix(&prices, &mix));
    assert_true(prices.valid);
    assert_true(NEAR(prices.floor[810], 1000) && NEAR(prices.floor[470], 500) && NEAR(prices.floor[160], 0));
    assert_true(NEAR(prices.value[1000], 1000));  /* the sets an optimal packing uses fill a GPU's worth */
    assert_true(NEAR(prices.value[530], 500) && NEAR(prices.value[469], 0) && NEAR(prices.value[940], 1000));
    /* A 160 beside an 810 (190 free) or on an idle GPU loses nothing: an 810 still fits there. Put in
     * the 530 a 470 leaves, it takes the place of the second 470. */
    assert_true(NEAR(fg__prices_loss(&prices, 190, 160), 0));
    assert_true(NEAR(fg__prices_loss(&prices, 1000, 160), 0));
    assert_true(NEAR(fg__prices_loss(&prices, 530, 160), 500));
    /* Two 470s pair, on an idle GPU or beside another 470; a 470 in the gap of a 160 (840 free)
     * takes an 810's place. */
    assert_true(NEAR(fg__prices_loss(&prices, 1000, 470), 0));
    assert_true(NEAR(fg__prices_loss(&prices, 530, 470), 0));
    assert_true(NEAR(fg__prices_loss(&prices, 840, 470), 500));
    /* A size outside the mix is charged against its own best gap: a 230 loses nothing in 250 free,
     * a 470's worth in the 530 beside a 470, and on an idle GPU it blocks the 810. */
    assert_true(NEAR(prices.floor[230], 0));
    assert_true(NEAR(fg__prices_loss(&prices, 250, 230), 0));
    assert_true(NEAR(fg__prices_loss(&prices, 530, 230), 500));
    assert_true(NEAR(fg__prices_loss(&prices, 1000, 230), 500));
    /* Whole GPUs and CPU-only types are not priced; the sharing types' CPU does not matter. */
    struct fg_sched_mix_type u[] = { { 8000, 810, 1, FG_SCHED_MODELS_ANY, 0.2 },
                                     { 1000, 810, 1, FG_SCHED_MODELS_ANY, 0.2 },
                                     { 4000, 470, 1, FG_SCHED_MODELS_ANY, 0.4 },
                                     { 2000, 160, 1, FG_SCHED_MODELS_ANY, 0.2 },
                                     { 16000, 1000, 2, FG_SCHED_MODELS_ANY, 0.3 },
                                     { 3000, 0, 0, FG_SCHED_MODELS_ANY, 0.3 } };
    static struct fg__prices again;
    struct fg_sched_mix mix2 = { u, 6 };
    assert_true(fg__prices_set_mix(&again, &mix2));
    for (int f = 0; f <= FG_SCHED_MILLI; f++)
        assert_true(NEAR(again.value[f], prices.value[f]) && NEAR(again.floor[f], prices.floor[f]));
}

/* 333 and 667 in equal numbers: a pair fills a GPU to the milli (the LP works in 1-milli steps),
 * one GPU per pair is optimal, and every split of 1000 with the 333 at most a third of it is an
 * optimal dual. Whichever the solver returns: the pair is worth a GPU, no set of pods more, and
 * pairing loses nothing. */
static void duality_holds_where_the_prices_are_not_unique(void **state)
{
    (void)state;
    struct fg_sched_mix_type t[] = { { 4000, 333, 1, FG_SCHED_MODELS_ANY, 0.5 },
                                     { 4000, 667, 1, FG_SCHED_MODELS_ANY, 0.5 } };
    struct fg_sched_mix mix = { t, 2 };
    assert_true(fg__prices_set_mix(&prices, &mix));
    double y333 = prices.floor[333], y667 = prices.floor[667];
    assert_true(NEAR(y333 + y667, 1000));
    assert_true(y333 >= -1e-9 && y333 <= 1000.0 / 3 + 1e-6 && y667 >= -1e-9);
    assert_true(prices.value[1000] <= 1000 + 1e-6);
    assert_true(NEAR(fg__prices_loss(&prices, 667, 667), 0) && NEAR(fg__prices_loss(&prices, 333, 333), 0));
    for (int f = 1; f <= FG_SCHED_MILLI; f++) {  /* values grow with the gap, losses are never negative */
        assert_true(prices.value[f] >= prices.value[f - 1]);
        for (int s = 1; s <= f; s += 37)
            assert_true(fg__prices_loss(&prices, f, s) >= -1e-9);
    }
}

static void nothing_to_price_gives_no_term(void **state)
{
    (void)state;
    struct fg_sched_mix empty = { NULL, 0 };
    assert_false(fg__prices_set_mix(&prices, &empty));
    assert_false(prices.valid);
    assert_true(fg__prices_loss(&prices, 530, 160) == 0);
    struct fg_sched_mix_type whole[] = { { 8000, 1000, 1, FG_SCHED_MODELS_ANY, 0.5 },
                                         { 16000, 1000, 4, FG_SCHED_MODELS_ANY, 0.3 },
                                         { 2000, 0, 0, FG_SCHED_MODELS_ANY, 0.2 },
                                         { 2000, 300, 1, FG_SCHED_MODELS_ANY, 0 } };  /* a share of 0 */
    struct fg_sched_mix only_whole = { whole, 4 };
    assert_false(fg__prices_set_mix(&prices, &only_whole));
    assert_true(fg__prices_loss(&prices, 1000, 300) == 0);
    /* Valid prices, arguments outside a loss's domain. */
    struct fg_sched_mix_type t[] = { { 4000, 470, 1, FG_SCHED_MODELS_ANY, 1 } };
    struct fg_sched_mix mix = { t, 1 };
    assert_true(fg__prices_set_mix(&prices, &mix));
    assert_true(fg__prices_loss(&prices, 300, 470) == 0);    /* does not fit */
    assert_true(fg__prices_loss(&prices, 1001, 470) == 0);   /* more than a GPU */
    assert_true(fg__prices_loss(&prices, 500, 0) == 0);
    assert_true(fg__prices_loss(&prices, 500, -20) == 0);
    assert_true(fg__prices_loss(&prices, -5, -20) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_known_packing_gives_its_prices),
        cmocka_unit_test(duality_holds_where_the_prices_are_not_unique),
        cmocka_unit_test(nothing_to_price_gives_no_term),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
