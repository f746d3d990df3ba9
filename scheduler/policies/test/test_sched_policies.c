/* Score plugins: the exact integer scores of the published policies, fracgpu's choices, and the
 * exactness of the score caches (node-equivalence within a cycle, per-node memo across cycles). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/policies/mix.h"
#include "scheduler/policies/policy.h"
#include "scheduler/test/fixture.h"

static int64_t score_of(struct fg_sched_policy *pol, const struct fg_sched_cluster *c, const struct fg_sched_pod *p,
                        int node, int *gpu)
{
    struct fg_sched_cycle cy = { c, p, fg_sched_pod_model_mask(c, p), NULL };
    *gpu = -1;
    pol->ops->observe(pol, &cy);  /* as the framework does before scoring */
    return pol->ops->score(pol, &cy, &c->nodes[node], gpu);
}

static struct fg_sched_policy *make(const char *name, const struct fg_sched_mix *mix)
{
    struct fg_sched_policy *pol;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_policy_new(name, mix, 7, &pol, errmsg), FG_OK);
    return pol;
}

static void dotprod_and_bestfit_values(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "a", 64, 256, 2, "T4");
    struct fg_sched_pod p = fx_pod("p", 8, 1, 500);
    struct fg_sched_policy *dp = make("dotprod", NULL), *bf = make("bestfit", NULL);
    int gpu;
    /* 1 − ½[(64/128)(8/128) + (2000/8000)(500/8000)] = 0.9766 */
    assert_int_equal(score_of(dp, &c, &p, n, &gpu), 97);
    /* 1 − [½·56000/128000 + ½·1500/8000] = 0.6875 */
    assert_int_equal(score_of(bf, &c, &p, n, &gpu), 68);
    int64_t s[] = { 10, 60, 35, 60 };
    bf->ops->normalize(bf, s, 4);
    assert_int_equal(s[0], 0);
    assert_int_equal(s[1], 100);
    assert_int_equal(s[2], 50);
    int64_t same[] = { 7, 7 };
    bf->ops->normalize(bf, same, 2);
    assert_int_equal(same[0], 0);
    assert_int_equal(same[1], 0);
    fg_sched_policy_free(dp);
    fg_sched_policy_free(bf);
    fg_sched_cluster_cleanup(&c);
}

static void packing_cases(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int eight = fx_node(&c, "e8", 64, 256, 8, "T4"), two = fx_node(&c, "e2", 64, 256, 2, "T4");
    int used = fx_node(&c, "u", 64, 256, 2, "T4");
    struct fg_sched_pod filler = fx_pod("f", 0, 1, 400);
    int g0 = 0;
    fg_sched_reserve(&c, &filler, used, &g0, 1);  /* free 600, 1000 */
    struct fg_sched_policy *pk = make("packing", NULL);
    int gpu;
    struct fg_sched_pod share = fx_pod("s", 1, 1, 500), whole = fx_pod("w", 1, 1, 1000), cpu = fx_pod("c", 1, 0, 0);
    assert_int_equal(score_of(pk, &c, &share, eight, &gpu), 25);  /* max(33 − 8, 8) */
    assert_int_equal(score_of(pk, &c, &share, two, &gpu), 31);
    assert_int_equal(score_of(pk, &c, &share, used, &gpu), 94);   /* 100 − 60/10 */
    assert_int_equal(score_of(pk, &c, &whole, used, &gpu), 49);   /* 50 − 1 fully free GPU used */
    assert_int_equal(score_of(pk, &c, &cpu, used, &gpu), 0);
    fg_sched_policy_free(pk);
    fg_sched_cluster_cleanup(&c);
}

static void clustering_groups_pod_kinds(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    fx_node(&c, "a", 64, 256, 8, "T4");
    fx_node(&c, "b", 64, 256, 8, "T4");
    struct fg_sched_policy *cl = make("clustering", NULL);
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, cl);
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_pod share = fx_pod("s", 1, 1, 500), whole = fx_pod("w", 1, 1, 1000);
    assert_int_equal(fg_sched_schedule(&fw, &c, &share, &pl, errmsg), FG_OK);
    int a = pl.node, b = 1 - a, gpu;
    assert_int_equal(score_of(cl, &c, &share, a, &gpu), 75 + 25 * 500 / 8000);
    assert_int_equal(score_of(cl, &c, &share, b, &gpu), 25);
    assert_int_equal(score_of(cl, &c, &whole, a, &gpu), 0 + 25 * 500 / 8000);
    assert_int_equal(fg_sched_schedule(&fw, &c, &whole, &pl, errmsg), FG_OK);
    assert_int_equal(pl.node, b);  /* keeps kinds apart */
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(cl);
    fg_sched_cluster_cleanup(&c);
}

static void random_spreads_over_feasible_nodes_and_gpus(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    for (int i = 0; i < 4; i++) {
        char name[4] = { 'n', (char)('0' + i), 0 };
        fx_node(&c, name, 64, 256, 4, "T4");
    }
    struct fg_sched_pod filler = fx_pod("f", 0, 1, 900);
    int g1 = 1;
    fg_sched_reserve(&c, &filler, 0, &g1, 1);
    struct fg_sched_policy *rnd = make("random", NULL);
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, rnd);
    int hits[4] = { 0 }, gpu_hits[4] = { 0 };
    struct fg_sched_pod p = fx_pod("p", 0, 1, 200);
    for (int k = 0; k < 400; k++) {
        int gpu;
        score_of(rnd, &c, &p, 0, &gpu);
        assert_true(gpu >= 0 && gpu < 4);
        gpu_hits[gpu]++;
        struct fg_sched_placement pl;
        char errmsg[FG_ERRMSG_MAX];
        assert_int_equal(fg_sched_schedule(&fw, &c, &p, &pl, errmsg), FG_OK);
        hits[pl.node]++;
        fg_sched_framework_unreserve(&fw, &c, &p, &pl);
    }
    for (int i = 0; i < 4; i++)
        assert_true(hits[i] > 50);
    assert_int_equal(gpu_hits[1], 0);  /* 100 free < 200 */
    assert_true(gpu_hits[0] > 80 && gpu_hits[2] > 80 && gpu_hits[3] > 80);
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(rnd);
    fg_sched_cluster_cleanup(&c);
}

static void fgd_prefers_filling_unusable_space(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int a = fx_node(&c, "a", 64, 256, 2, "T4"), b = fx_node(&c, "b", 64, 256, 1, "T4");
    struct fg_sched_pod filler = fx_pod("f", 0, 1, 1000), half = fx_pod("h", 0, 1, 500);
    int g0 = 0;
    fg_sched_reserve(&c, &filler, a, &g0, 1);
    int g1 = 1;
    fg_sched_reserve(&c, &half, a, &g1, 1);  /* a: free 0, 500; b: free 1000 */
    struct fg_sched_mix_type only = { 1000, 600, 1, FG_SCHED_MODELS_ANY, 1.0 };
    struct fg_sched_mix mix = { &only, 1 };
    struct fg_sched_policy *fgd = make("fgd", &mix);
    struct fg_sched_pod p = fx_pod("p", 1, 1, 500);
    int gpu;
    /* a: the 500 left is useless to the 600-milli type (F 500 → 0): Δ = +500 → int(100·σ(0.5)) = 62. */
    assert_int_equal(score_of(fgd, &c, &p, a, &gpu), 62);
    assert_int_equal(gpu, 1);
    /* b: a whole GPU would be cut to 500 (F 0 → 500): Δ = −500 → 37. */
    assert_int_equal(score_of(fgd, &c, &p, b, &gpu), 37);
    fg_sched_policy_free(fgd);
    fg_sched_cluster_cleanup(&c);
}

static void fracgpu_keeps_scarce_models_for_restricted_pods(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int t4 = fx_node(&c, "t4", 64, 256, 1, "T4"), g2 = fx_node(&c, "g2", 64, 256, 1, "G2");
    fx_node(&c, "t4b", 64, 256, 1, "T4");
    c.nodes[t4].rank = 0;  /* t4 wins ties */
    c.nodes[g2].rank = 1;
    c.nodes[2].rank = 2;
    struct fg_sched_pod any = fx_pod("any", 1, 1, 1000), only_t4 = fx_pod("t4-only", 1, 1, 1000);
    const char *t4_name[] = { "T4" };
    only_t4.models = t4_name;
    only_t4.n_models = 1;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_placement pl;

    struct fg_sched_policy *pol = make("fracgpu", NULL);
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    assert_int_equal(fg_sched_schedule(&fw, &c, &any, &pl, errmsg), FG_OK);
    assert_int_equal(pl.node, t4);  /* nothing restricted seen yet: a plain tie */
    fg_sched_framework_unreserve(&fw, &c, &any, &pl);
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(pol);

    pol = make("fracgpu", NULL);
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    c.nodes[2].rank = 0;  /* the restricted pod takes t4b */
    c.nodes[t4].rank = 1;
    c.nodes[g2].rank = 2;
    assert_int_equal(fg_sched_schedule(&fw, &c, &only_t4, &pl, errmsg), FG_OK);
    assert_int_equal(pl.node, 2);
    c.nodes[t4].rank = 0;
    c.nodes[2].rank = 2;
    assert_int_equal(fg_sched_schedule(&fw, &c, &any, &pl, errmsg), FG_OK);
    assert_int_equal(pl.node, g2);  /* T4 demand seen: the pod that can run anywhere leaves T4 free */
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(pol);
    fg_sched_cluster_cleanup(&c);
}

/* Pods placed and undone (failed binds) leave fracgpu scoring as a policy that only saw them. */
static void fracgpu_scarcity_follows_unreserve(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int t4 = fx_node(&c, "t4", 64, 256, 2, "T4"), g2 = fx_node(&c, "g2", 64, 256, 2, "G2");
    struct fg_sched_pod any = fx_pod("any", 1, 1, 1000), only_t4 = fx_pod("t4-only", 1, 1, 500);
    const char *t4_name[] = { "T4" };
    only_t4.models = t4_name;
    only_t4.n_models = 1;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_placement pl;
    struct fg_sched_policy *pol = make("fracgpu", NULL), *seen_only = make("fracgpu", NULL);
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    for (int i = 0; i < 7; i++) {
        const struct fg_sched_pod *p = i % 2 ? &any : &only_t4;
        assert_int_equal(fg_sched_schedule(&fw, &c, p, &pl, errmsg), FG_OK);
        assert_int_equal(pl.code, FG_SCHED_SUCCESS);
        fg_sched_framework_unreserve(&fw, &c, p, &pl);
        struct fg_sched_cycle cy = { &c, p, fg_sched_pod_model_mask(&c, p), NULL };
        seen_only->ops->observe(seen_only, &cy);
    }
    assert_int_equal(c.model_free_milli[c.nodes[t4].model], 2000);
    assert_int_equal(c.model_free_milli[c.nodes[g2].model], 2000);
    int gpu;
    int64_t on_t4 = score_of(pol, &c, &any, t4, &gpu), on_g2 = score_of(pol, &c, &any, g2, &gpu);
    assert_true(on_t4 < on_g2);   /* T4 demand seen: the scarcity term is at work */
    assert_int_equal(on_t4, score_of(seen_only, &c, &any, t4, &gpu));
    assert_int_equal(on_g2, score_of(seen_only, &c, &any, g2, &gpu));
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(pol);
    fg_sched_policy_free(seen_only);
    fg_sched_cluster_cleanup(&c);
}

static void equivalence_cache_is_exact(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int a = fx_node(&c, "a", 32, 64, 4, "T4"), b = fx_node(&c, "b", 32, 64, 4, "T4");
    struct fg_sched_mix_type t[] = { { 4000, 500, 1, FG_SCHED_MODELS_ANY, 0.5 }, { 8000, 1000, 2, FG_SCHED_MODELS_ANY, 0.5 } };
    struct fg_sched_mix mix = { t, 2 };
    const char *names[] = { "fgd", "fracgpu-offline" };
    for (int k = 0; k < 2; k++) {
        struct fg_sched_policy *cached = make(names[k], &mix);
        struct fg_sched_pod p = fx_pod("p", 2, 1, 300);
        struct fg_sched_cycle cy = { &c, &p, FG_SCHED_MODELS_ANY, NULL };
        int ga, gb, gf;
        cached->ops->observe(cached, &cy);
        int64_t sa = cached->ops->score(cached, &cy, &c.nodes[a], &ga);
        int64_t sb = cached->ops->score(cached, &cy, &c.nodes[b], &gb);
        assert_int_equal(sa, sb);
        assert_int_equal(ga, gb);
        int g = 0;
        fg_sched_reserve(&c, &p, a, &g, 1);  /* a changes: a new cycle must not reuse b's entry */
        cached->ops->observe(cached, &cy);
        sa = cached->ops->score(cached, &cy, &c.nodes[a], &ga);
        struct fg_sched_policy *fresh = make(names[k], &mix);
        fresh->ops->observe(fresh, &cy);
        assert_int_equal(sa, fresh->ops->score(fresh, &cy, &c.nodes[a], &gf));
        assert_int_equal(ga, gf);
        assert_int_equal(ga, 0);  /* the partly used GPU: 700 left suits the 500-milli type */
        struct fg_sched_pod q = fx_pod("q", 2, 1, 800);  /* another shape on the same node state */
        struct fg_sched_cycle cq = { &c, &q, FG_SCHED_MODELS_ANY, NULL };
        cached->ops->observe(cached, &cq);
        fresh->ops->observe(fresh, &cq);
        int gq, gfq;
        assert_int_equal(cached->ops->score(cached, &cq, &c.nodes[a], &gq), fresh->ops->score(fresh, &cq, &c.nodes[a], &gfq));
        assert_int_equal(gq, gfq);
        assert_true(gq != 0);  /* 800 does not fit in the 700 left */
        fg_sched_unreserve(&c, &p, a, &g, 1);
        fg_sched_policy_free(fresh);
        fg_sched_policy_free(cached);
    }
    fg_sched_cluster_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dotprod_and_bestfit_values),
        cmocka_unit_test(packing_cases),
        cmocka_unit_test(clustering_groups_pod_kinds),
        cmocka_unit_test(random_spreads_over_feasible_nodes_and_gpus),
        cmocka_unit_test(fgd_prefers_filling_unusable_space),
        cmocka_unit_test(fracgpu_keeps_scarce_models_for_restricted_pods),
        cmocka_unit_test(fracgpu_scarcity_follows_unreserve),
        cmocka_unit_test(equivalence_cache_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
