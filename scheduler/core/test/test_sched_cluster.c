/* Cluster snapshot and request validation: bad input is refused with a clear message, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/test/fixture.h"

static void add_node_validates(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_node_spec s = { .name = "n1", .cpu_milli = -1, .mem_mib = 1024, .max_pods = 10 };
    assert_int_equal(fg_sched_cluster_add_node(&c, &s, NULL, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "negative"));
    s.cpu_milli = 1000;
    s.n_gpus = FG_SCHED_MAX_GPUS + 1;
    s.model = "A100";
    assert_int_equal(fg_sched_cluster_add_node(&c, &s, NULL, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "GPUs"));
    s.n_gpus = 2;
    s.model = "";
    assert_int_equal(fg_sched_cluster_add_node(&c, &s, NULL, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "without a model"));
    s.name = "";
    assert_int_equal(fg_sched_cluster_add_node(&c, &s, NULL, errmsg), FG_E_INVAL);
    assert_int_equal(c.n_nodes, 0);
    fx_node(&c, "n1", 8, 32, 2, "A100");
    s = (struct fg_sched_node_spec){ .name = "n1", .cpu_milli = 1000, .mem_mib = 1, .max_pods = 1 };
    assert_int_equal(fg_sched_cluster_add_node(&c, &s, NULL, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "duplicate"));
    assert_int_equal(c.n_nodes, 1);
    assert_int_equal(c.gpu_milli_total, 2000);
    assert_int_equal(c.max_node_gpus, 2);
    fg_sched_cluster_cleanup(&c);
}

static void zero_gpu_node_runs_cpu_pods_only(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "cpu-only", 16, 64, 0, NULL);
    assert_int_equal(c.nodes[n].model, -1);
    struct fg_sched_pod cpu = fx_pod("c", 4, 0, 0), gpu = fx_pod("g", 1, 1, 500);
    assert_true(fx_fits(&c, &cpu, n));
    assert_false(fx_fits(&c, &gpu, n));
    fg_sched_cluster_cleanup(&c);
}

static void pod_validation_rejects_bad_requests(void **state)
{
    (void)state;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_pod p = fx_pod("p", 1, 1, 500);
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_OK);
    p.gpu_milli = -5;
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "outside 1..1000"));
    p.gpu_milli = 1001;
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    p.gpu_milli = 0;
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    p = fx_pod("p", 1, 0, 300);
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "without GPUs"));
    p = fx_pod("p", 1, 2, 500);
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "whole"));
    p = fx_pod("p", 1, -1, 1000);
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    p = fx_pod("p", 1, 1, 1000);
    p.cpu_milli = -1;
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "negative"));
    p = fx_pod("p", 1, 1, 1000);
    p.isolation = FG_SCHED_ISO_DEDICATED;
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "owner"));
    p = fx_pod("p", 1, 1, 1000);
    const char *models[] = { "" };
    p.models = models;
    p.n_models = 1;
    assert_int_equal(fg_sched_pod_validate(&p, errmsg), FG_E_INVAL);
}

static void model_mask_resolves_known_names(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    fx_node(&c, "a", 8, 32, 1, "T4");
    fx_node(&c, "b", 8, 32, 1, "V100");
    fx_node(&c, "c", 8, 32, 1, "T4");
    assert_int_equal(c.n_models, 2);
    struct fg_sched_pod p = fx_pod("p", 1, 1, 500);
    assert_int_equal(fg_sched_pod_model_mask(&c, &p), FG_SCHED_MODELS_ANY);
    const char *v100[] = { "V100", "H100" }, *unknown[] = { "H100" };
    p.models = v100;
    p.n_models = 2;
    assert_int_equal(fg_sched_pod_model_mask(&c, &p), 1u << fg_sched_cluster_model(&c, "V100"));
    p.models = unknown;
    p.n_models = 1;
    assert_int_equal(fg_sched_pod_model_mask(&c, &p), 0);
    fg_sched_cluster_cleanup(&c);
}

static void reserve_and_unreserve_are_inverse(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int n = fx_node(&c, "a", 8, 32, 2, "T4");
    struct fg_sched_pod p = fx_pod("p", 2, 1, 300);
    p.gpu_mem_mib = 4096;
    p.isolation = FG_SCHED_ISO_DEDICATED;
    p.owner = "team-a";
    int g = 1;
    uint64_t v = c.nodes[n].version;
    fg_sched_reserve(&c, &p, n, &g, 1);
    assert_int_equal(c.nodes[n].free_cpu, 6000);
    assert_int_equal(c.nodes[n].gpus[1].free_milli, 700);
    assert_int_equal(c.nodes[n].gpus[1].free_mem_mib, 16384 - 4096);
    assert_string_equal(c.nodes[n].gpus[1].owner, "team-a");
    assert_int_equal(c.gpu_milli_used, 300);
    assert_int_equal(c.model_free_milli[c.nodes[n].model], 1700);
    assert_true(c.nodes[n].version != v);
    fg_sched_unreserve(&c, &p, n, &g, 1);
    assert_int_equal(c.nodes[n].free_cpu, 8000);
    assert_int_equal(c.nodes[n].gpus[1].free_milli, 1000);
    assert_null(c.nodes[n].gpus[1].owner);
    assert_int_equal(c.nodes[n].gpus[1].sharing, FG_SCHED_SHARE_NONE);
    assert_int_equal(c.gpu_milli_used, 0);
    assert_int_equal(c.model_free_milli[c.nodes[n].model], 2000);
    assert_int_equal(c.nodes[n].pods, 0);
    fg_sched_cluster_cleanup(&c);
}

/* The GPU summary and interned states follow every change: equal ids exactly when states are equal,
 * also after many changes have forced the state table to start over (renumbering every node). */
static void summaries_and_states_follow_changes(void **state)
{
    (void)state;
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    int a = fx_node(&c, "a", 8, 64, 4, "T4"), b = fx_node(&c, "b", 8, 64, 4, "T4");
    int other = fx_node(&c, "c", 8, 64, 4, "G2");
    assert_int_equal(c.nodes[a].state, c.nodes[b].state);
    assert_true(c.nodes[a].state != c.nodes[other].state);  /* same free resources, another model */
    assert_int_equal(c.nodes[a].idle_gpus, 4);
    assert_int_equal(c.nodes[a].max_free_milli, 1000);
    struct fg_sched_pod p = fx_pod("p", 1, 1, 300);
    int g = 2;
    for (int round = 0; round < 200; round++) {  /* > 2 · nodes + 64 new states: several restarts */
        p.cpu_milli = 10 + round;                 /* a new free CPU value, hence a new state, each round */
        fg_sched_reserve(&c, &p, a, &g, 1);
        assert_int_equal(c.nodes[a].idle_gpus, 3);
        assert_int_equal(c.nodes[a].max_free_milli, 1000);
        assert_true(c.nodes[a].state != c.nodes[b].state);
        assert_true(c.nodes[a].state < fg_sched_cluster_state_cap(&c));
        fg_sched_reserve(&c, &p, b, &g, 1);
        assert_int_equal(c.nodes[a].state, c.nodes[b].state);
        fg_sched_unreserve(&c, &p, a, &g, 1);
        fg_sched_unreserve(&c, &p, b, &g, 1);
        assert_int_equal(c.nodes[a].state, c.nodes[b].state);
        assert_true(c.nodes[a].state != c.nodes[other].state);
    }
    struct fg_sched_pod whole = fx_pod("w", 1, 4, 1000);
    int all[4] = { 0, 1, 2, 3 };
    fg_sched_reserve(&c, &whole, a, all, 4);
    assert_int_equal(c.nodes[a].idle_gpus, 0);
    assert_int_equal(c.nodes[a].max_free_milli, 0);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &p, a), FG_SCHED_UNSCHEDULABLE);
    fg_sched_unreserve(&c, &whole, a, all, 4);
    assert_int_equal(fx_filter(&fg_sched_plugin_gpu_fit, &c, &whole, a), FG_SCHED_SUCCESS);
    fg_sched_cluster_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_node_validates),
        cmocka_unit_test(zero_gpu_node_runs_cpu_pods_only),
        cmocka_unit_test(pod_validation_rejects_bad_requests),
        cmocka_unit_test(model_mask_resolves_known_names),
        cmocka_unit_test(reserve_and_unreserve_are_inverse),
        cmocka_unit_test(summaries_and_states_follow_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
