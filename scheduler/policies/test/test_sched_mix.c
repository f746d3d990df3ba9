/* Reference mix building and the fragmentation measure; the fast gradient equals the definition. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/core/rng.h"
#include "scheduler/policies/gradient_int.h"
#include "scheduler/test/fixture.h"

static void add(struct fg_sched_mix_counter *mc, int64_t cpu, int milli, int gpus, const char *spec, int times)
{
    struct fg_sched_shape s = { cpu, milli, gpus, FG_SCHED_MODELS_ANY, spec };
    for (int i = 0; i < times; i++)
        fg_sched_mix_counter_add(mc, &s);
}

static void mix_covers_95_percent_and_normalises(void **state)
{
    (void)state;
    struct fg_sched_mix_counter mc;
    fg_sched_mix_counter_init(&mc);
    add(&mc, 4000, 500, 1, "", 60);
    add(&mc, 0, 0, 0, "", 30);    /* CPU-only, cpu 0 counted as 100 */
    add(&mc, 100, 0, 0, "", 5);   /* same group as the line above */
    add(&mc, 8000, 1000, 2, "", 3);
    add(&mc, 2000, 300, 1, "T4", 2);
    struct fg_sched_mix mix = { 0 };
    fg_sched_mix_build(&mc, &mix);
    assert_int_equal(mix.n, 2);  /* 60 + 35 = 95 of 100 */
    assert_int_equal(mix.types[0].gpu_milli, 500);
    assert_int_equal(mix.types[1].cpu_milli, 100);
    assert_true(fabs(mix.types[0].p - 60.0 / 95.0) < 1e-12);
    assert_true(fabs(mix.types[0].p + mix.types[1].p - 1.0) < 1e-12);
    fg_sched_mix_build_all(&mc, &mix);  /* every shape, the rare ones too, shares of all 100 pods */
    assert_int_equal(mix.n, 4);
    assert_int_equal(mix.types[3].gpu_milli, 300);
    assert_true(fabs(mix.types[0].p - 0.60) < 1e-12 && fabs(mix.types[3].p - 0.02) < 1e-12);
    struct fg_sched_mix_counter empty;
    fg_sched_mix_counter_init(&empty);
    fg_sched_mix_build(&empty, &mix);  /* replaces: empty */
    assert_int_equal(mix.n, 0);
    fg_sched_mix_cleanup(&mix);
    fg_sched_mix_counter_cleanup(&mc);
}

static void frag_follows_the_definition(void **state)
{
    (void)state;
    struct fg_sched_mix_type t[] = { { 100, 0, 0, FG_SCHED_MODELS_ANY, 0.25 },   /* CPU-only: all idle */
                                     { 4000, 500, 1, 1u << 0, 0.25 },            /* model 0 only */
                                     { 2000, 1000, 2, FG_SCHED_MODELS_ANY, 0.5 } };
    struct fg_sched_mix mix = { t, 3 };
    int free[] = { 1000, 600, 200, 1000 };  /* idle 2800 */
    /* model 0, ample CPU: t0 2800; t1 fits (3 GPUs ≥ 500), fragment 200; t2 fits (2 whole), 800. */
    double f = fg_sched_frag(&mix, 0, 64000, free, 4);
    assert_true(fabs(f - (0.25 * 2800 + 0.25 * 200 + 0.5 * 800)) < 1e-9);
    /* model 1: t1 cannot run there at all. */
    f = fg_sched_frag(&mix, 1, 64000, free, 4);
    assert_true(fabs(f - (0.25 * 2800 + 0.25 * 2800 + 0.5 * 800)) < 1e-9);
    /* CPU below t1's and t2's needs: everything idle is fragment. */
    f = fg_sched_frag(&mix, 0, 1000, free, 4);
    assert_true(fabs(f - 2800) < 1e-9);
    int none[] = { 0, 0 };
    assert_true(fg_sched_frag(&mix, 0, 64000, none, 2) == 0);
}

static void gradient_matches_recomputation(void **state)
{
    (void)state;
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 99);
    struct fg_sched_mix_type t[6];
    for (int i = 0; i < 6; i++)
        t[i] = (struct fg_sched_mix_type){ (int64_t)fg_sched_rng_below(&rng, 16) * 1000, i == 0 ? 0 : 100 * (1 + (int)fg_sched_rng_below(&rng, 10)),
                                           i == 0 ? 0 : (i == 5 ? 2 : 1), i == 3 ? 2u : FG_SCHED_MODELS_ANY, 1.0 / 6 };
    t[5].gpu_milli = 1000;
    struct fg_sched_mix mix = { t, 6 };
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    fx_node(&c, "a", 16, 64, 8, "T4");
    fx_node(&c, "b", 16, 64, 4, "V100");
    struct fg__grad gr;
    fg__grad_init(&gr, &mix);
    fg__grad_fit_slots(&gr, c.n_slots);
    for (int round = 0; round < 300; round++) {
        size_t i = fg_sched_rng_below(&rng, 2);
        struct fg_sched_node *n = &c.nodes[i];
        int g = (int)fg_sched_rng_below(&rng, (uint64_t)n->n_gpus);
        int take = (int)fg_sched_rng_below(&rng, (uint64_t)n->gpus[g].free_milli + 1);
        struct fg_sched_pod p = fx_pod("p", 0, 1, take ? take : 1);
        p.cpu_milli = (int64_t)fg_sched_rng_below(&rng, 3000);
        if (take == 0 || n->free_cpu < p.cpu_milli) {  /* reset the node now and then */
            for (int k = 0; k < n->n_gpus; k++)
                n->gpus[k].free_milli = FG_SCHED_MILLI;
            n->free_cpu = n->cpu_milli;
            n->version = ++c.version;  /* what every change of a node does (cluster.c) */
            continue;
        }
        struct fg__grad_change ch = { n->gpus[g].free_milli, n->gpus[g].free_milli - take };
        double fast = fg__grad_frag_after(&gr, &c, i, p.cpu_milli, &ch, 1);
        fg_sched_reserve(&c, &p, (int)i, &g, 1);
        double slow = fg_sched_frag_node(&mix, n);
        assert_true(fabs(fast - slow) < 1e-6);
        assert_true(fabs(fg__grad_frag(&gr, &c, i) - slow) < 1e-6);
    }
    fg__grad_cleanup(&gr);
    fg_sched_cluster_cleanup(&c);
}

/* A random mix of n types over models 0..2, some needing no GPU, several sharing a CPU size, and
 * half of the GPU types on four milli values, so that gradient_int.h's groups often have several members
 * with different CPU requests and model masks. */
static void random_mix(struct fg_sched_rng *rng, struct fg_sched_mix_type *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int gpus = (int)fg_sched_rng_below(rng, 4);
        int milli = fg_sched_rng_below(rng, 2) ? 10 * (1 + (int)fg_sched_rng_below(rng, 100))
                                               : 250 * (1 + (int)fg_sched_rng_below(rng, 4));
        t[i] = (struct fg_sched_mix_type){ (int64_t)fg_sched_rng_below(rng, 12) * 1000, gpus ? milli : 0, gpus,
                                           fg_sched_rng_below(rng, 3) ? FG_SCHED_MODELS_ANY
                                                                      : 1u << fg_sched_rng_below(rng, 3),
                                           (1 + (double)fg_sched_rng_below(rng, 1000)) / (997.0 * (double)n) };
    }
}

/* fg__grad_frag_after_each, over random nodes, candidate lists and mixes of 7 to 45 types, gives every
 * F exactly (==, not within a tolerance) as the definition sums it, and as fg__grad_frag_after. */
static void candidates_in_one_pass_equal_the_definition_exactly(void **state)
{
    (void)state;
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 7);
    static const char *const models[] = { "T4", "G2", "V100" };
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    for (int i = 0; i < 9; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        fx_node(&c, name, 32, 256, 1 + i % 8, models[i % 3]);
    }
    struct fg_sched_mix_type t[45];
    struct fg_sched_mix mix = { t, 7 };
    random_mix(&rng, t, mix.n);
    struct fg__grad gr;
    fg__grad_init(&gr, &mix);
    fg__grad_fit_slots(&gr, c.n_slots);
    int nonzero = 0;
    for (int round = 0; round < 2000; round++) {
        if (round % 200 == 199) {  /* a new mix, larger or smaller */
            mix.n = 7 + fg_sched_rng_below(&rng, 39);
            random_mix(&rng, t, mix.n);
            fg__grad_set_mix(&gr, &mix);
        }
        size_t i = fg_sched_rng_below(&rng, c.n_nodes);
        struct fg_sched_node *n = &c.nodes[i];
        for (int g = 0; g < n->n_gpus; g++)
            n->gpus[g].free_milli = 10 * (int)fg_sched_rng_below(&rng, 101);
        n->free_cpu = (int64_t)fg_sched_rng_below(&rng, 33) * 1000;
        n->version = ++c.version;
        int milli = 10 * (1 + (int)fg_sched_rng_below(&rng, 100)), free[FG_SCHED_MAX_GPUS], cand[FG_SCHED_MAX_GPUS];
        int n_cand = 0;
        for (int g = 0; g < n->n_gpus; g++) {
            free[g] = n->gpus[g].free_milli;
            if (free[g] >= milli)
                cand[n_cand++] = free[g];
        }
        int64_t cpu = (int64_t)fg_sched_rng_below(&rng, 8) * 1000;
        double out[FG_SCHED_MAX_GPUS];
        fg__grad_frag_after_each(&gr, &c, i, cpu, milli, cand, n_cand, out);
        for (int j = 0, g = 0; j < n_cand; j++, g++) {
            while (free[g] != cand[j] || free[g] < milli)
                g++;
            free[g] -= milli;
            double want = fg_sched_frag(&mix, n->model, n->free_cpu - cpu, free, n->n_gpus);
            free[g] += milli;
            struct fg__grad_change ch = { cand[j], cand[j] - milli };
            assert_true(out[j] == want);
            assert_true(fg__grad_frag_after(&gr, &c, i, cpu, &ch, 1) == want);
            nonzero += want > 0;
        }
        assert_true(fg__grad_frag(&gr, &c, i) == fg_sched_frag_node(&mix, n));
    }
    assert_true(nonzero > 2000);  /* most evaluations had fragments to sum */
    fg__grad_cleanup(&gr);
    fg_sched_cluster_cleanup(&c);
}

/* F is the fixed-point sum of mix.h: a whole number of 2^-39 steps below 2^53 of them, within the
 * rounding bound of the real Σ p · frag, and the same bits whatever the order of the mix's types,
 * where a double sum's last bits follow the order (counted, so that the check is not vacuous). */
static void frag_is_fixed_point_and_order_free(void **state)
{
    (void)state;
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 11);
    struct fg_sched_mix_type t[45], r[45];
    int order_matters = 0;
    for (int round = 0; round < 2000; round++) {
        struct fg_sched_mix mix = { t, 7 + fg_sched_rng_below(&rng, 39) }, rev = { r, mix.n };
        random_mix(&rng, t, mix.n);
        for (size_t k = 0; k < mix.n; k++)
            r[k] = t[mix.n - 1 - k];
        int n = 1 + (int)fg_sched_rng_below(&rng, FG_SCHED_MAX_GPUS), free[FG_SCHED_MAX_GPUS];
        for (int g = 0; g < n; g++)
            free[g] = 10 * (int)fg_sched_rng_below(&rng, 101);
        int model = (int)fg_sched_rng_below(&rng, 3);
        int64_t cpu = (int64_t)fg_sched_rng_below(&rng, 12) * 1000;
        double f = fg_sched_frag(&mix, model, cpu, free, n);
        assert_true(f == fg_sched_frag(&rev, model, cpu, free, n));
        double steps = ldexp(f, FG_SCHED_FRAG_BITS);
        assert_true(steps == floor(steps) && steps < ldexp(1, 53));
        /* The real sum in double, in mix order and in reverse, each type's frag recomputed here. */
        int idle = 0;
        for (int g = 0; g < n; g++)
            idle += free[g];
        double forward = 0, backward = 0;
        for (size_t k = 0; idle && k < mix.n; k++) {
            int frag[2];
            for (int d = 0; d < 2; d++) {
                const struct fg_sched_mix_type *ty = d ? &r[k] : &t[k];
                int fit = 0, small = 0;
                for (int g = 0; g < n; g++) {
                    fit += free[g] >= ty->gpu_milli;
                    small += free[g] >= ty->gpu_milli ? 0 : free[g];
                }
                bool runs = ty->gpu_milli > 0 && (ty->mask & (1u << model)) && cpu >= ty->cpu_milli;
                frag[d] = runs && fit >= ty->n_gpus ? small : idle;
            }
            forward += t[k].p * frag[0];
            backward += r[k].p * frag[1];
        }
        assert_true(fabs(f - forward) <= (double)mix.n * ldexp(16000, -40) + 1e-9);
        order_matters += forward != backward;
    }
    assert_true(order_matters > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mix_covers_95_percent_and_normalises),
        cmocka_unit_test(frag_follows_the_definition),
        cmocka_unit_test(gradient_matches_recomputation),
        cmocka_unit_test(candidates_in_one_pass_equal_the_definition_exactly),
        cmocka_unit_test(frag_is_fixed_point_and_order_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
