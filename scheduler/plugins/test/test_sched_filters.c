/* Filter plugins, one by one: each answers its own question about one node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/test/fixture.h"

static void node_fit_checks_cpu_memory_pods_and_cordon(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "a", 4, 8, 1, "T4");
    struct fg_sched_pod p = fx_pod("p", 4, 0, 0);
    assert_int_equal(fx_filter(&fg_sched_plugin_node_fit, &c, &p, n), FG_SCHED_SUCCESS);
    p.cpu_milli = 4001;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_fit, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    p = fx_pod("p", 1, 0, 0);
    p.mem_mib = 8 * 1024 + 1;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_fit, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    p = fx_pod("p", 1, 0, 0);
    c.nodes[n].pods = c.nodes[n].max_pods;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_fit, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    c.nodes[n].pods = 0;
    c.nodes[n].unschedulable = true;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_fit, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    fg_sched_cluster_cleanup(&c);
}

static void taints_need_matching_tolerations(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_taint taints[] = { { "gpu", "true", FG_SCHED_NO_SCHEDULE },
                                       { "soft", NULL, FG_SCHED_PREFER_NO_SCHEDULE } };
    struct fg_sched_node_spec s = { .name = "t", .cpu_milli = 8000, .mem_mib = 8192, .max_pods = 10,
                                    .model = "T4", .n_gpus = 1, .taints = taints, .n_taints = 2 };
    char errmsg[FG_ERRMSG_MAX];
    int n;
    assert_int_equal(fg_sched_cluster_add_node(&c, &s, &n, errmsg), FG_OK);
    struct fg_sched_pod p = fx_pod("p", 1, 0, 0);
    assert_int_equal(fx_filter(&fg_sched_plugin_taints, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    struct fg_sched_toleration wrong_value = { "gpu", "false", false, 0 };
    p.tolerations = &wrong_value;
    p.n_tolerations = 1;
    assert_int_equal(fx_filter(&fg_sched_plugin_taints, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    struct fg_sched_toleration wrong_effect = { "gpu", "true", false, FG_SCHED_NO_EXECUTE };
    p.tolerations = &wrong_effect;
    assert_int_equal(fx_filter(&fg_sched_plugin_taints, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    struct fg_sched_toleration equal = { "gpu", "true", false, FG_SCHED_NO_SCHEDULE };
    p.tolerations = &equal;
    assert_int_equal(fx_filter(&fg_sched_plugin_taints, &c, &p, n), FG_SCHED_SUCCESS);
    struct fg_sched_toleration exists = { "gpu", NULL, true, 0 };
    p.tolerations = &exists;
    assert_int_equal(fx_filter(&fg_sched_plugin_taints, &c, &p, n), FG_SCHED_SUCCESS);
    struct fg_sched_toleration all = { NULL, NULL, true, 0 };
    p.tolerations = &all;
    assert_int_equal(fx_filter(&fg_sched_plugin_taints, &c, &p, n), FG_SCHED_SUCCESS);
    fg_sched_cluster_cleanup(&c);
}

static void node_selector_and_required_affinity(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_kv labels[] = { { "zone", "a" }, { "pool", "gpu" } };
    struct fg_sched_node_spec s = { .name = "l", .cpu_milli = 8000, .mem_mib = 8192, .max_pods = 10,
                                    .labels = labels, .n_labels = 2 };
    char errmsg[FG_ERRMSG_MAX];
    int n;
    assert_int_equal(fg_sched_cluster_add_node(&c, &s, &n, errmsg), FG_OK);
    struct fg_sched_pod p = fx_pod("p", 1, 0, 0);
    assert_int_equal(fx_filter(&fg_sched_plugin_node_affinity, &c, &p, n), FG_SCHED_SUCCESS);
    struct fg_sched_kv sel_ok = { "zone", "a" }, sel_bad = { "zone", "b" };
    p.node_selector = &sel_ok;
    p.n_node_selector = 1;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_affinity, &c, &p, n), FG_SCHED_SUCCESS);
    p.node_selector = &sel_bad;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_affinity, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    p.n_node_selector = 0;

    const char *zones_bc[] = { "b", "c" }, *zones_a[] = { "a" };
    struct fg_sched_expr in_bc = { "zone", FG_SCHED_OP_IN, zones_bc, 2 };
    struct fg_sched_expr notin_a = { "zone", FG_SCHED_OP_NOT_IN, zones_a, 1 };
    struct fg_sched_expr has_pool = { "pool", FG_SCHED_OP_EXISTS, NULL, 0 };
    struct fg_sched_expr no_spot = { "spot", FG_SCHED_OP_DOES_NOT_EXIST, NULL, 0 };
    struct fg_sched_term t_fail = { &in_bc, 1 }, t_notin = { &notin_a, 1 };
    struct fg_sched_expr both[] = { has_pool, no_spot };
    struct fg_sched_term t_pass = { both, 2 };
    p.affinity = &t_fail;
    p.n_affinity = 1;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_affinity, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    p.affinity = &t_notin;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_affinity, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    struct fg_sched_term or_terms[] = { t_fail, t_pass };  /* terms are ORed */
    p.affinity = or_terms;
    p.n_affinity = 2;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_affinity, &c, &p, n), FG_SCHED_SUCCESS);
    struct fg_sched_term empty = { NULL, 0 };
    p.affinity = &empty;
    p.n_affinity = 1;
    assert_int_equal(fx_filter(&fg_sched_plugin_node_affinity, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    fg_sched_cluster_cleanup(&c);
}

static void gpu_model_filter_and_unknown_models(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int t4 = fx_node(&c, "a", 8, 32, 1, "T4"), v100 = fx_node(&c, "b", 8, 32, 1, "V100");
    int bare = fx_node(&c, "c", 8, 32, 0, NULL);
    struct fg_sched_pod p = fx_pod("p", 1, 1, 500);
    const char *want[] = { "V100" }, *unknown[] = { "H100" };
    p.models = want;
    p.n_models = 1;
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_model, &c, &p, t4), FG_SCHED_UNSCHEDULABLE);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_model, &c, &p, v100), FG_SCHED_SUCCESS);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_model, &c, &p, bare), FG_SCHED_UNSCHEDULABLE);
    p.models = unknown;
    struct fg_sched_cycle cy = { &c, &p, fg_sched_pod_model_mask(&c, &p), NULL };
    assert_int_equal(fg_sched_plugin_gpu_model.prefilter(&cy), FG_SCHED_UNRESOLVABLE);
    assert_non_null(cy.reason);
    struct fg_sched_pod cpu = fx_pod("cpu", 1, 0, 0);
    cpu.models = unknown;  /* ignored without GPUs */
    cpu.n_models = 1;
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_model, &c, &cpu, bare), FG_SCHED_SUCCESS);
    fg_sched_cluster_cleanup(&c);
}

static void gpu_fit_fractional_and_whole(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "a", 32, 64, 4, "T4");
    struct fg_sched_pod filler = fx_pod("f", 0, 1, 700);
    for (int g = 0; g < 3; g++)
        fg_sched_reserve(&c, &filler, n, &g, 1);  /* free: 300, 300, 300, 1000 */
    struct fg_sched_pod p = fx_pod("p", 1, 1, 300);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &p, n), FG_SCHED_SUCCESS);
    p.gpu_milli = 301;  /* only the idle GPU */
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &p, n), FG_SCHED_SUCCESS);
    p = fx_pod("p", 1, 2, 1000);  /* needs two completely free GPUs */
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    p = fx_pod("p", 1, 1, 1000);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &p, n), FG_SCHED_SUCCESS);
    int last = 3;
    fg_sched_reserve(&c, &filler, n, &last, 1);
    p = fx_pod("p", 1, 1, 301);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    p.gpu_mem_mib = 20000;  /* more GPU memory than any GPU has */
    p.gpu_milli = 100;
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &p, n), FG_SCHED_UNSCHEDULABLE);
    struct fg_sched_pod eight = fx_pod("p", 1, 8, 1000);
    struct fg_sched_cycle cy = { &c, &eight, FG_SCHED_MODELS_ANY, NULL };
    assert_int_equal(fg_sched_plugin_gpu_fit.prefilter(&cy), FG_SCHED_UNRESOLVABLE);
    fg_sched_cluster_cleanup(&c);
}

static void sharing_mode_and_dedicated_isolation(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "a", 32, 64, 1, "T4");
    struct fg_sched_pod ts = fx_pod("ts", 1, 1, 300), mps = fx_pod("mps", 1, 1, 300);
    mps.sharing = FG_SCHED_SHARE_MPS;
    int g = 0;
    fg_sched_reserve(&c, &ts, n, &g, 1);
    assert_int_equal(fx_filter(&fg_sched_plugin_sharing, &c, &ts, n), FG_SCHED_SUCCESS);
    assert_int_equal(fx_filter(&fg_sched_plugin_sharing, &c, &mps, n), FG_SCHED_UNSCHEDULABLE);
    assert_false(fx_fits(&c, &mps, n));
    struct fg_sched_pod ded = fx_pod("ded", 1, 1, 300);
    ded.isolation = FG_SCHED_ISO_DEDICATED;
    ded.owner = "team-a";
    assert_int_equal(fx_filter(&fg_sched_plugin_sharing, &c, &ded, n), FG_SCHED_UNSCHEDULABLE);  /* GPU shared */
    fg_sched_unreserve(&c, &ts, n, &g, 1);
    assert_int_equal(fx_filter(&fg_sched_plugin_sharing, &c, &mps, n), FG_SCHED_SUCCESS);  /* idle again */
    fg_sched_reserve(&c, &ded, n, &g, 1);
    struct fg_sched_pod same = ded, other = ded;
    other.owner = "team-b";
    assert_int_equal(fx_filter(&fg_sched_plugin_sharing, &c, &same, n), FG_SCHED_SUCCESS);
    assert_int_equal(fx_filter(&fg_sched_plugin_sharing, &c, &other, n), FG_SCHED_UNSCHEDULABLE);
    assert_int_equal(fx_filter(&fg_sched_plugin_sharing, &c, &ts, n), FG_SCHED_UNSCHEDULABLE);
    fg_sched_unreserve(&c, &ded, n, &g, 1);
    fg_sched_cluster_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(node_fit_checks_cpu_memory_pods_and_cordon),
        cmocka_unit_test(taints_need_matching_tolerations),
        cmocka_unit_test(node_selector_and_required_affinity),
        cmocka_unit_test(gpu_model_filter_and_unknown_models),
        cmocka_unit_test(gpu_fit_fractional_and_whole),
        cmocka_unit_test(sharing_mode_and_dedicated_isolation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
