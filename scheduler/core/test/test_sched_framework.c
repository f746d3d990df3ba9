/* The scheduling cycle end to end: outcomes, tie-breaks, GPU choice, reserve/unreserve, pod groups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/policies/policy.h"
#include "scheduler/test/fixture.h"

struct env {
    struct fg_sched_cluster c;
    struct fg_sched_policy *pol;
    struct fg_sched_framework fw;
};

static void env_open(struct env *e, const char *policy)
{
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_policy_new(policy, NULL, 1, &e->pol, errmsg), FG_OK);
    fg_sched_framework_init(&e->fw, &fg_sched_profile_default, e->pol);
}

static void env_close(struct env *e)
{
    fg_sched_framework_cleanup(&e->fw);
    fg_sched_policy_free(e->pol);
    fg_sched_cluster_cleanup(&e->c);
}

static void invalid_pod_is_an_error_and_changes_nothing(void **state)
{
    (void)state;
    struct env e;
    fg_sched_cluster_init(&e.c);
    fx_node(&e.c, "a", 8, 32, 1, "T4");
    env_open(&e, "bestfit");
    struct fg_sched_pod p = fx_pod("bad", 1, 1, 1500);
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "bad"));
    assert_int_equal(e.c.gpu_milli_used, 0);
    assert_int_equal(e.c.nodes[0].pods, 0);
    env_close(&e);
}

static void outcomes_are_statuses_not_errors(void **state)
{
    (void)state;
    struct env e;
    fg_sched_cluster_init(&e.c);
    fx_node(&e.c, "a", 8, 32, 1, "T4");
    env_open(&e, "fracgpu");
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_pod big = fx_pod("big", 64, 0, 0);
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &big, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
    assert_int_equal(pl.node, -1);
    struct fg_sched_pod h100 = fx_pod("h", 1, 1, 500);
    const char *models[] = { "H100" };
    h100.models = models;
    h100.n_models = 1;
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &h100, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_UNRESOLVABLE);
    assert_non_null(pl.reason);
    struct fg_sched_pod ok = fx_pod("ok", 2, 1, 500);
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &ok, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);
    assert_int_equal(pl.node, 0);
    assert_int_equal(pl.n_gpus, 1);
    assert_int_equal(e.c.nodes[0].gpus[0].free_milli, 500);
    env_close(&e);
}

static void equal_scores_go_to_the_lowest_rank(void **state)
{
    (void)state;
    struct env e;
    fg_sched_cluster_init(&e.c);
    for (int i = 0; i < 4; i++) {
        char name[8] = { 'n', (char)('0' + i), 0 };
        fx_node(&e.c, name, 8, 32, 2, "T4");
    }
    e.c.nodes[0].rank = 3;
    e.c.nodes[1].rank = 2;
    e.c.nodes[2].rank = 0;
    e.c.nodes[3].rank = 1;
    env_open(&e, "packing");  /* identical empty nodes score the same */
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_pod p = fx_pod("p", 1, 2, 1000);
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);
    assert_int_equal(pl.node, 2);
    assert_int_equal(pl.feasible, 4);
    env_close(&e);
}

static void default_gpu_choice(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "a", 32, 64, 4, "T4");
    struct fg_sched_pod a = fx_pod("a", 0, 1, 200), b = fx_pod("b", 0, 1, 600);
    int g0 = 0, g2 = 2;
    fg_sched_reserve(&c, &a, n, &g0, 1);  /* free 800, 1000, 400, 1000 */
    fg_sched_reserve(&c, &b, n, &g2, 1);
    int gpus[FG_SCHED_MAX_GPUS];
    struct fg_sched_pod share = fx_pod("s", 0, 1, 300), whole = fx_pod("w", 0, 2, 1000);
    assert_int_equal(fg_sched_pick_gpus(&c.nodes[n], &share, gpus), 1);
    assert_int_equal(gpus[0], 2);  /* tightest: 400 free */
    assert_int_equal(fg_sched_pick_gpus(&c.nodes[n], &whole, gpus), 2);
    assert_int_equal(gpus[0], 1);
    assert_int_equal(gpus[1], 3);
    struct fg_sched_pod cpu = fx_pod("c", 1, 0, 0);
    assert_int_equal(fg_sched_pick_gpus(&c.nodes[n], &cpu, gpus), 0);
    fg_sched_cluster_cleanup(&c);
}

static void unreserve_restores_and_is_idempotent(void **state)
{
    (void)state;
    struct env e;
    fg_sched_cluster_init(&e.c);
    fx_node(&e.c, "a", 8, 32, 2, "T4");
    fx_node(&e.c, "b", 8, 32, 2, "T4");
    env_open(&e, "bestfit");
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_pod p = fx_pod("p", 3, 1, 400);
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);
    assert_int_equal(e.c.gpu_milli_used, 400);
    fg_sched_framework_unreserve(&e.fw, &e.c, &p, &pl);
    assert_int_equal(e.c.gpu_milli_used, 0);
    assert_int_equal(e.c.nodes[0].free_cpu + e.c.nodes[1].free_cpu, 16000);
    fg_sched_framework_unreserve(&e.fw, &e.c, &p, &pl);  /* second call: nothing */
    assert_int_equal(e.c.gpu_milli_used, 0);
    assert_int_equal(e.c.nodes[0].free_cpu + e.c.nodes[1].free_cpu, 16000);
    env_close(&e);
}

static void pod_group_waits_for_its_minimum(void **state)
{
    (void)state;
    struct env e;
    fg_sched_cluster_init(&e.c);
    fx_node(&e.c, "a", 32, 64, 4, "T4");
    env_open(&e, "fracgpu");
    struct fg_sched_placement pl[3];
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_pod p = fx_pod("m", 1, 1, 1000);
    p.group = "job-1";
    p.group_min = 3;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl[i], errmsg), FG_OK);
        assert_int_equal(pl[i].code, FG_SCHED_WAIT);
        assert_false(fg_sched_group_permitted(&e.fw, "job-1"));
    }
    fg_sched_framework_unreserve(&e.fw, &e.c, &p, &pl[1]);  /* one member's bind failed */
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl[1], errmsg), FG_OK);
    assert_int_equal(pl[1].code, FG_SCHED_WAIT);
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl[2], errmsg), FG_OK);
    assert_int_equal(pl[2].code, FG_SCHED_SUCCESS);
    assert_true(fg_sched_group_permitted(&e.fw, "job-1"));
    assert_false(fg_sched_group_permitted(&e.fw, "job-2"));
    assert_int_equal(e.c.gpu_milli_used, 3000);
    env_close(&e);
}

/* A placement policy made before the cluster has any node follows the nodes as they come and go. */
static void placement_policy_follows_the_nodes(void **state)
{
    (void)state;
    const char *const names[] = { "fracgpu", "clustering", "bestfit" };
    for (size_t k = 0; k < 3; k++) {
        struct env e;
        fg_sched_cluster_init(&e.c);
        env_open(&e, names[k]);
        struct fg_sched_placement pl;
        char errmsg[FG_ERRMSG_MAX];
        struct fg_sched_pod p = fx_pod("p", 1, 1, 1000);
        assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_OK);
        assert_int_equal(pl.code, FG_SCHED_UNRESOLVABLE);  /* no GPU at all yet */
        int a = fx_node(&e.c, "a", 8, 32, 1, "T4");
        assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_OK);
        assert_int_equal(pl.code, FG_SCHED_SUCCESS);
        assert_int_equal(pl.node, a);
        int b = fx_node(&e.c, "b", 8, 32, 1, "T4");
        assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_OK);
        assert_int_equal(pl.node, b);
        assert_int_equal(fg_sched_cluster_remove_node(&e.c, a, errmsg), FG_OK);
        int c = fx_node(&e.c, "c", 8, 32, 1, "T4");
        assert_int_equal(c, a);  /* the slot is reused */
        assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_OK);
        assert_int_equal(pl.code, FG_SCHED_SUCCESS);
        assert_int_equal(pl.node, c);
        assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &p, &pl, errmsg), FG_OK);
        assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
        env_close(&e);
    }
}

static void unknown_policy_and_missing_mix(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_policy *pol;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_policy_new("nope", NULL, 1, &pol, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "nope"));
    assert_null(pol);
    assert_int_equal(fg_sched_policy_new("fgd", NULL, 1, &pol, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "mix"));
    fg_sched_cluster_cleanup(&c);
}

/* Filters a pod leaves out of its cycle (skips) would have passed every node; a pod that has a node
 * selector, or GPUs, keeps the filters that can refuse it, in the cycle as well. */
static void skipped_filters_pass_every_node(void **state)
{
    (void)state;
    struct env e;
    fg_sched_cluster_init(&e.c);
    fx_node(&e.c, "a", 8, 32, 1, "T4");
    fx_node(&e.c, "b", 8, 32, 2, "V100");
    fx_node(&e.c, "c", 8, 32, 0, NULL);
    env_open(&e, "bestfit");
    static const struct fg_sched_kv zone = { "zone", "a" };  /* no node has the label */
    struct fg_sched_pod pods[4] = { fx_pod("cpu", 1, 0, 0), fx_pod("frac", 1, 1, 500), fx_pod("whole", 1, 2, 1000),
                                    fx_pod("zoned", 1, 0, 0) };
    pods[3].node_selector = &zone;
    pods[3].n_node_selector = 1;
    int skipped = 0;
    for (int k = 0; k < 4; k++) {
        struct fg_sched_cycle cy = { &e.c, &pods[k], fg_sched_pod_model_mask(&e.c, &pods[k]), NULL };
        for (size_t f = 0; f < e.fw.n_filters; f++) {
            const struct fg_sched_filter_plugin *pl = e.fw.filters[f];
            if (!pl->skips || !pl->skips(&cy))
                continue;
            skipped++;
            for (int i = 0; i < (int)e.c.n_nodes; i++)
                assert_int_equal(fx_filter(pl, &e.c, &pods[k], i), FG_SCHED_SUCCESS);
        }
    }
    /* taints (no node is tainted) for all four; affinity and the 3 GPU filters; affinity; affinity; the
     * GPU ones; the model filter runs for GPU pods: node c has no GPU */
    assert_int_equal(skipped, 4 + 4 + 1 + 1 + 3);
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &pods[3], &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &pods[2], &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);
    assert_int_equal(pl.node, 1);  /* the only node with two GPUs */
    env_close(&e);
}

/* Whether a filter plugin is left out of pod's cycle. */
static bool skipped_for(const struct fg_sched_cluster *c, const struct fg_sched_filter_plugin *pl,
                        const struct fg_sched_pod *pod)
{
    struct fg_sched_cycle cy = { c, pod, fg_sched_pod_model_mask(c, pod), NULL };
    return pl->skips && pl->skips(&cy);
}

static void add_tainted(struct fg_sched_cluster *c, const char *name, enum fg_sched_effect effect)
{
    struct fg_sched_taint taint = { "gpu", "busy", effect };
    struct fg_sched_node_spec s = { .name = name, .cpu_milli = 8000, .mem_mib = 32768, .max_pods = 110,
                                    .model = "T4", .n_gpus = 1, .gpu_mem_mib = 16384, .taints = &taint,
                                    .n_taints = 1 };
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_add_node(c, &s, NULL, errmsg), FG_OK);
}

/* The taint and model filters are left out when the cluster's nodes make them pass every node, and
 * come back as soon as one node could refuse the pod. */
static void cluster_wide_skips_follow_the_nodes(void **state)
{
    (void)state;
    struct env e;
    fg_sched_cluster_init(&e.c);
    fx_node(&e.c, "t4", 8, 32, 1, "T4");
    fx_node(&e.c, "v100", 8, 32, 1, "V100");
    add_tainted(&e.c, "soft", FG_SCHED_PREFER_NO_SCHEDULE);
    struct fg_sched_pod any = fx_pod("any", 1, 1, 500), t4 = fx_pod("t4", 1, 1, 500);
    static const char *const t4_only[] = { "T4" };
    t4.models = t4_only;
    t4.n_models = 1;
    assert_true(skipped_for(&e.c, &fg_sched_plugin_taints, &any));  /* PreferNoSchedule never refuses */
    assert_true(skipped_for(&e.c, &fg_sched_plugin_gpu_model, &any));
    assert_false(skipped_for(&e.c, &fg_sched_plugin_gpu_model, &t4));
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_model, &e.c, &t4, 1), FG_SCHED_UNSCHEDULABLE);

    add_tainted(&e.c, "hard", FG_SCHED_NO_SCHEDULE);
    assert_false(skipped_for(&e.c, &fg_sched_plugin_taints, &any));
    assert_int_equal(fx_filter(&fg_sched_plugin_taints, &e.c, &any, 3), FG_SCHED_UNSCHEDULABLE);
    fx_node(&e.c, "cpu", 8, 32, 0, NULL);
    assert_false(skipped_for(&e.c, &fg_sched_plugin_gpu_model, &any));
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_model, &e.c, &any, 4), FG_SCHED_UNSCHEDULABLE);

    /* End to end: with the other GPUs taken, a whole-GPU pod does not go to the NoSchedule node. */
    env_open(&e, "bestfit");
    struct fg_sched_pod whole = fx_pod("whole", 1, 1, 1000);
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    for (int k = 0; k < 3; k++) {
        assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &whole, &pl, errmsg), FG_OK);
        assert_int_equal(pl.code, FG_SCHED_SUCCESS);
        assert_int_not_equal(pl.node, 3);
    }
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &whole, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(invalid_pod_is_an_error_and_changes_nothing),
        cmocka_unit_test(outcomes_are_statuses_not_errors),
        cmocka_unit_test(equal_scores_go_to_the_lowest_rank),
        cmocka_unit_test(default_gpu_choice),
        cmocka_unit_test(unreserve_restores_and_is_idempotent),
        cmocka_unit_test(pod_group_waits_for_its_minimum),
        cmocka_unit_test(placement_policy_follows_the_nodes),
        cmocka_unit_test(unknown_policy_and_missing_mix),
        cmocka_unit_test(skipped_filters_pass_every_node),
        cmocka_unit_test(cluster_wide_skips_follow_the_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
