/* The gap histogram of fracgpu's sum-of-squares term: it follows reserve and unreserve exactly (checked
 * against a recount from the cluster after every step), its sign fills common gap sizes and keeps rare
 * ones, and out-of-range input changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/gaps.h"
#include "scheduler/rng.h"
#include "scheduler/test/fixture.h"

static struct fg_sched_mix_type types[] = {
    { 4000, 500, 1, FG_SCHED_MODELS_ANY, 0.4 },  /* gaps of 500 and more on nodes with 4 cores free */
    { 1000, 250, 1, FG_SCHED_MODELS_ANY, 0.2 },  /* gaps of 250 and more on nodes with 1 core free */
    { 8000, 1000, 1, FG_SCHED_MODELS_ANY, 0.3 }, /* whole GPU: never fills a gap */
    { 100, 0, 0, FG_SCHED_MODELS_ANY, 0.1 },     /* CPU-only */
};
static const struct fg_sched_mix mix = { types, 4 };

/* The histogram by definition: every partly used GPU whose gap some sharing type of mix fits. */
static void recount(const struct fg_sched_cluster *c, int count[FG_SCHED_MAX_MODELS][FG__GAP_BUCKETS])
{
    memset(count, 0, sizeof(int) * FG_SCHED_MAX_MODELS * FG__GAP_BUCKETS);
    for (size_t i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++) {
            int f = c->nodes[i].gpus[g].free_milli;
            bool fits = false;
            for (size_t t = 0; t < mix.n; t++)
                fits |= types[t].n_gpus == 1 && types[t].gpu_milli < FG_SCHED_MILLI && types[t].gpu_milli <= f &&
                        types[t].cpu_milli <= c->nodes[i].free_cpu;
            if (f > 0 && f < FG_SCHED_MILLI && fits)
                count[c->nodes[i].model][f / FG__GAP_STEP]++;
        }
}

/* Adds sign times node i's gaps as it stands. */
static void add_node(struct fg__gaps *gp, const struct fg_sched_cluster *c, int i, int sign)
{
    const struct fg_sched_node *n = &c->nodes[i];
    int free[FG_SCHED_MAX_GPUS];
    for (int g = 0; g < n->n_gpus; g++)
        free[g] = n->gpus[g].free_milli;
    fg__gaps_add(gp, n->model, n->free_cpu, free, n->n_gpus, sign);
}

static void histogram_follows_reserve_and_unreserve(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%02d", i);
        fx_node(&c, name, 8 + 8 * (i % 3), 256, i % 2 ? 8 : 4, i % 3 ? "G2" : "T4");
    }
    struct fg__gaps gp, fresh;
    fg__gaps_count(&gp, &mix, &c);
    static const int millis[] = { 100, 250, 300, 500, 750, 1000 };
    struct {
        struct fg_sched_pod pod;
        int node, gpus[FG_SCHED_MAX_GPUS], n_gpus;
    } live[128];
    int n_live = 0, most = 0, want[FG_SCHED_MAX_MODELS][FG__GAP_BUCKETS];
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 7);
    for (int step = 0; step < 4000; step++) {
        if (n_live == 128 || (n_live && fg_sched_rng_below(&rng, 3) == 0)) {
            int k = (int)fg_sched_rng_below(&rng, (uint64_t)n_live);
            add_node(&gp, &c, live[k].node, -1);
            fg_sched_unreserve(&c, &live[k].pod, live[k].node, live[k].gpus, live[k].n_gpus);
            add_node(&gp, &c, live[k].node, 1);
            live[k] = live[--n_live];
        } else {
            int kind = (int)fg_sched_rng_below(&rng, 8);  /* mostly sharing pods, some whole and CPU-only */
            int milli = kind == 0 ? 0 : millis[fg_sched_rng_below(&rng, 6)];
            struct fg_sched_pod p = fx_pod("p", 1 + (int)fg_sched_rng_below(&rng, 5), milli ? 1 : 0, milli);
            int i = (int)fg_sched_rng_below(&rng, c.n_nodes);
            if (!fx_fits(&c, &p, i))
                continue;
            live[n_live].pod = p;
            live[n_live].node = i;
            live[n_live].n_gpus = fg_sched_pick_gpus(&c.nodes[i], &p, live[n_live].gpus);
            add_node(&gp, &c, i, -1);
            fg_sched_reserve(&c, &p, i, live[n_live].gpus, live[n_live].n_gpus);
            add_node(&gp, &c, i, 1);
            n_live++;
        }
        recount(&c, want);
        assert_memory_equal(gp.count, want, sizeof want);
        for (int m = 0; m < 2; m++)
            for (int b = 0; b < FG__GAP_BUCKETS; b++)
                most = want[m][b] > most ? want[m][b] : most;
    }
    assert_true(most >= 3);  /* the histogram was exercised, not left empty */
    fg__gaps_count(&fresh, &mix, &c);
    assert_memory_equal(fresh.count, gp.count, sizeof gp.count);
    fg_sched_cluster_cleanup(&c);
}

static void gaps_count_only_where_a_sharing_type_fits(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "n", 16, 64, 4, "G2");
    struct fg__gaps gp;
    fg__gaps_count(&gp, &mix, &c);
    /* 300 free with 16 cores: the 250 type fits; 200 free: nothing fits; 1000 free: not a gap. */
    assert_int_equal(fg__gaps_delta(&gp, 0, 16000, 1000, 16000, 300), 1);
    assert_int_equal(fg__gaps_delta(&gp, 0, 16000, 1000, 16000, 200), 0);
    assert_int_equal(fg__gaps_delta(&gp, 0, 16000, 1000, 16000, 1000), 0);
    /* 600 free but only 500 CPU milli left: no type of the mix can take it. */
    assert_int_equal(fg__gaps_delta(&gp, 0, 16000, 1000, 500, 600), 0);
    /* Placing a pod that takes the node's last CPU closes its gaps. */
    int g = 0;
    struct fg_sched_pod p = fx_pod("p", 2, 1, 400);
    fg_sched_reserve(&c, &p, n, &g, 1);
    fg__gaps_count(&gp, &mix, &c);
    assert_int_equal(gp.count[0][600 / FG__GAP_STEP], 1);
    assert_int_equal(fg__gaps_delta(&gp, 0, 14000, 600, 500, 600), -1);
    fg_sched_cluster_cleanup(&c);
}

static void sum_of_squares_fills_common_gaps_and_keeps_rare_ones(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        fx_node(&c, name, 32, 256, 4, "G2");
    }
    /* Five GPUs with 250 free (a common gap), one with 500 free (a rare one). */
    struct fg_sched_pod p750 = fx_pod("p", 1, 1, 750), p500 = fx_pod("q", 1, 1, 500);
    for (int i = 0; i < 5; i++) {
        int g = 0;
        fg_sched_reserve(&c, &p750, i, &g, 1);
    }
    int g = 0;
    fg_sched_reserve(&c, &p500, 5, &g, 1);
    struct fg__gaps gp;
    fg__gaps_count(&gp, &mix, &c);
    assert_int_equal(gp.count[0][25], 5);
    assert_int_equal(gp.count[0][50], 1);
    /* A 250 pod: filling a common 250 gap exactly beats opening a new 750 gap on an idle GPU ... */
    int fill = fg__gaps_delta(&gp, 0, 31000, 250, 30000, 0), open = fg__gaps_delta(&gp, 0, 31000, 1000, 30000, 750);
    assert_int_equal(fill, -9);
    assert_int_equal(open, 1);
    /* ... and turning the rare 500 gap into a sixth 250 one is worse than opening a 750 gap. */
    int merge = fg__gaps_delta(&gp, 0, 31000, 500, 30000, 250);
    assert_int_equal(merge, -1 + 11);
    assert_true(merge > open);
    /* The per-GPU bias of node 0 (GPU 0: 250 free, GPUs 1-3 idle): a negative scale rewards the fill. */
    struct fg_sched_pod p250 = fx_pod("r", 1, 1, 250);
    struct fg__gap_term t = { &gp, p250.cpu_milli, p250.gpu_milli, -5.0 };
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 0) > 0 && fg__gaps_gpu_bias(&t, &c.nodes[0], 1) < 0);
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 0) == -5.0 * fill);
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 1) == -5.0 * open);
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 3) == -5.0 * open);
    t = (struct fg__gap_term){ &gp, 1000, 600, -10.0 };   /* 600 fits only node 5's idle GPUs */
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[5], 1) == -10.0 * fg__gaps_delta(&gp, 0, 31000, 1000, 30000, 400));
    /* The node changes: its bias follows (GPU 1 now has 250 free, a sixth common gap to fill). */
    g = 1;
    fg_sched_reserve(&c, &p750, 0, &g, 1);
    fg__gaps_count(&gp, &mix, &c);
    t = (struct fg__gap_term){ &gp, p250.cpu_milli, p250.gpu_milli, -10.0 };
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 1) == -10.0 * -11);
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 0) == -10.0 * -11);
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 2) == -10.0 * 1);
    fg_sched_cluster_cleanup(&c);
}

static void bad_input_changes_nothing(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    fx_node(&c, "cpu", 16, 64, 0, NULL);  /* no GPUs, model -1 */
    struct fg_sched_mix none = { NULL, 0 };
    struct fg__gaps gp;
    fg__gaps_count(&gp, &none, &c);
    int free[] = { 300, -5, 2000, 0, 1000 };
    fg__gaps_add(&gp, -1, 1000, free, 5, 1);
    fg__gaps_add(&gp, FG_SCHED_MAX_MODELS, 1000, free, 5, 1);
    fg__gaps_add(&gp, 0, 1000, free, 5, 1);  /* empty mix: no gap counts */
    struct fg__gaps zero;
    memset(zero.count, 0, sizeof zero.count);
    assert_memory_equal(gp.count, zero.count, sizeof zero.count);
    fg__gaps_count(&gp, &mix, &c);
    assert_int_equal(fg__gaps_delta(&gp, -1, 1000, 500, 0, 300), 0);
    assert_int_equal(fg__gaps_delta(&gp, 99, 1000, 500, 0, 300), 0);
    assert_int_equal(fg__gaps_delta(&gp, 0, 1000, -7, -1000, 5000), 0);
    assert_int_equal(fg__gaps_delta(&gp, 0, INT64_MAX, 1001, INT64_MIN, -1), 0);
    struct fg__gap_term t = { &gp, 1000, 100, -1 };
    assert_true(fg__gaps_gpu_bias(&t, &c.nodes[0], 0) == 0);  /* a model-less node: no term */
    fg_sched_cluster_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(histogram_follows_reserve_and_unreserve),
        cmocka_unit_test(gaps_count_only_where_a_sharing_type_fits),
        cmocka_unit_test(sum_of_squares_fills_common_gaps_and_keeps_rare_ones),
        cmocka_unit_test(bad_input_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
