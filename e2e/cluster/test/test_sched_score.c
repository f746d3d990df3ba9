/* Tests of the default scheduler's scores: each plugin's normalised value on small clusters, the
 * spreading LeastAllocated gives, and ties broken at random. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/cluster/sched.h"
#include "e2e/cluster/test/sched_fixture.h"

/* Scores every listed node for pod (the reference is dropped) into out. */
static void score_all(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, struct fg_sim_sched_score *out)
{
    struct fg_sim_sched_cycle c;
    fg_sim_sched_cycle_init(&c, s, pod);
    fg_sim_sched_score_nodes(&c, s->nodes, s->nnodes, out);
    fg_sim_sched_cycle_cleanup(&c);
    fg_sim_sched_pod_unref(pod);
}

static const char *schedule_and_place(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod)
{
    struct fg_sim_sched_result r;
    const char *node = fixture_schedule(s, pod, &r);
    assert_non_null(node);
    fg_sim_sched_place(s, pod, node);
    fg_sim_sched_result_cleanup(&r);
    fg_sim_sched_pod_unref(pod);
    return node;
}

static void test_least_allocated_values(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "empty", "4", "8Gi", 110, NULL);
    fixture_node(s, "half", "4", "8Gi", 110, NULL);
    fixture_place(s, fixture_pod("x", "2", "4Gi", 0, NULL), "half");
    struct fg_sim_sched_score sc[2];
    score_all(s, fixture_pod("p", "1", "2Gi", 0, NULL), sc);
    /* (4 - 1) / 4 of cpu and (8 - 2) / 8 of memory left: 75; on half, 25 of each */
    assert_int_equal(sc[0].fit, 75);
    assert_int_equal(sc[1].fit, 25);
    /* cpu and memory equally used: perfectly balanced */
    assert_int_equal(sc[0].balanced, 100);
    assert_int_equal(sc[1].balanced, 100);
    /* no PreferNoSchedule taints anywhere: every node gets TaintToleration's 100 */
    assert_int_equal(sc[0].taints, 100);
    assert_int_equal(sc[0].total, 75 + 100 + 3 * 100);
}

/* Pods without requests count kube's 100m and 200Mi for LeastAllocated, nothing for balance. */
static void test_nonzero_defaults(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "n", "1", "1000Mi", 110, NULL);
    struct fg_sim_sched_score sc[1];
    score_all(s, fixture_pod("p", NULL, NULL, 0, NULL), sc);
    assert_int_equal(sc[0].fit, (90 + 80) / 2);
    assert_int_equal(sc[0].balanced, 100);
    fixture_place(s, fixture_pod("cpu", "500m", NULL, 0, NULL), "n");
    score_all(s, fixture_pod("p", NULL, NULL, 0, NULL), sc);
    /* cpu half used, memory not at all: std 0.25 */
    assert_int_equal(sc[0].balanced, 75);
}

static void test_spreads_evenly(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "4", "8Gi", 110, NULL);
    fixture_node(s, "b", "4", "8Gi", 110, NULL);
    fixture_node(s, "c", "4", "8Gi", 110, NULL);
    char name[16];
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof name, "p%d", i);
        schedule_and_place(s, fixture_pod(name, "100m", "100Mi", 0, NULL));
    }
    for (size_t i = 0; i < s->nnodes; i++)
        assert_int_equal(s->nodes[i]->npods, 3);
}

static void test_node_affinity_preferred(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "4", "8Gi", 110, "{'metadata':{'labels':{'zone':'z1'}}}");
    fixture_node(s, "b", "4", "8Gi", 110, "{'metadata':{'labels':{'zone':'z2','disk':'ssd'}}}");
    fixture_node(s, "c", "4", "8Gi", 110, "{'metadata':{'labels':{'zone':'z2'}}}");
    const char *prefer = "{'spec':{'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':["
                         "{'weight':20,'preference':{'matchExpressions':[{'key':'zone','operator':'In','values':['z2']}]}},"
                         "{'weight':60,'preference':{'matchExpressions':[{'key':'disk','operator':'Exists'}]}}]}}}}";
    struct fg_sim_sched_score sc[3];
    score_all(s, fixture_pod("p", "100m", NULL, 0, prefer), sc);
    assert_int_equal(sc[0].node_affinity, 0);
    assert_int_equal(sc[1].node_affinity, 100);        /* 80 of 80 */
    assert_int_equal(sc[2].node_affinity, 100 * 20 / 80);
    /* b wins even when busier */
    fixture_place(s, fixture_pod("x", "2", NULL, 0, NULL), "b");
    assert_string_equal(schedule_and_place(s, fixture_pod("p", "100m", NULL, 0, prefer)), "b");
}

static void test_prefer_no_schedule(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "clean", "4", "8Gi", 110, NULL);
    fixture_node(s, "one", "4", "8Gi", 110, "{'spec':{'taints':[{'key':'a','effect':'PreferNoSchedule'}]}}");
    fixture_node(s, "two", "4", "8Gi", 110,
                 "{'spec':{'taints':[{'key':'a','effect':'PreferNoSchedule'},{'key':'b','effect':'PreferNoSchedule'}]}}");
    struct fg_sim_sched_score sc[3];
    score_all(s, fixture_pod("p", "100m", NULL, 0, NULL), sc);
    assert_int_equal(sc[0].taints, 100);
    assert_int_equal(sc[1].taints, 50);
    assert_int_equal(sc[2].taints, 0);
    /* tolerating both leaves nothing to avoid */
    score_all(s, fixture_pod("p", "100m", NULL, 0, "{'spec':{'tolerations':[{'operator':'Exists'}]}}"), sc);
    assert_int_equal(sc[2].taints, 100);
    assert_string_equal(schedule_and_place(s, fixture_pod("q", "100m", NULL, 0, NULL)), "clean");
    fixture_node(s, "clean", "4", "8Gi", 110, "{'spec':{'unschedulable':true}}");
    assert_string_equal(schedule_and_place(s, fixture_pod("r", "100m", NULL, 0, NULL)), "one");
}

static void test_pod_affinity_preferred(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "4", "8Gi", 110, "{'metadata':{'labels':{'zone':'z1'}}}");
    fixture_node(s, "b", "4", "8Gi", 110, "{'metadata':{'labels':{'zone':'z2'}}}");
    fixture_node(s, "c", "4", "8Gi", 110, "{'metadata':{'labels':{'zone':'z2'}}}");
    fixture_place(s, fixture_pod("cache", "2", NULL, 0, "{'metadata':{'labels':{'app':'cache'}}}"), "b");
    const char *near = "{'spec':{'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':100,"
                       "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'cache'}},'topologyKey':'zone'}}]}}}}";
    struct fg_sim_sched_score sc[3];
    score_all(s, fixture_pod("p", "100m", NULL, 0, near), sc);
    assert_int_equal(sc[0].pod_affinity, 0);
    assert_int_equal(sc[1].pod_affinity, 100);   /* z2: the cache's zone, both of its nodes */
    assert_int_equal(sc[2].pod_affinity, 100);
    /* anti-affinity reverses it */
    const char *away = "{'spec':{'affinity':{'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':"
                       "[{'weight':100,'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'cache'}},"
                       "'topologyKey':'zone'}}]}}}}";
    score_all(s, fixture_pod("p", "100m", NULL, 0, away), sc);
    assert_int_equal(sc[0].pod_affinity, 100);
    assert_int_equal(sc[1].pod_affinity, 0);
    /* the placed pod's own preferred term pulls matching pods in (symmetry) */
    fixture_place(s, fixture_pod("sticky", "100m", NULL, 0, "{'spec':{'affinity':{'podAffinity':"
                  "{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':50,'podAffinityTerm':{'labelSelector':"
                  "{'matchLabels':{'app':'friend'}},'topologyKey':'kubernetes.io/hostname'}}]}}}}"), "a");
    assert_string_equal(schedule_and_place(s, fixture_pod("f", "100m", NULL, 0, "{'metadata':{'labels':{'app':'friend'}}}")),
                        "a");
    /* nothing scores anywhere: the plugin is skipped, every node 0 */
    struct fg_sim_sched_snapshot plain;
    fg_sim_sched_snapshot_init(&plain);
    fixture_node(&plain, "x", "4", "8Gi", 110, NULL);
    score_all(&plain, fixture_pod("p", "100m", NULL, 0, NULL), sc);
    assert_int_equal(sc[0].pod_affinity, 0);
    fg_sim_sched_snapshot_cleanup(&plain);
}

/* Equal totals are picked uniformly: over many draws each tied node comes up. */
static void test_ties_random(void **state)
{
    (void)state;
    struct fg_sim_sched_score sc[4] = { { .total = 5 }, { .total = 9 }, { .total = 9 }, { .total = 9 } };
    unsigned seen[4] = { 0 };
    uint64_t rng = 42;
    for (int i = 0; i < 3000; i++)
        seen[fg_sim_sched_select(sc, 4, &rng)]++;
    assert_int_equal(seen[0], 0);
    for (int i = 1; i < 4; i++)
        assert_in_range(seen[i], 800, 1200);
}

static void test_nodes_to_find(void **state)
{
    (void)state;
    assert_int_equal(fg_sim_sched_nodes_to_find(50), 50);
    assert_int_equal(fg_sim_sched_nodes_to_find(100), 100);
    assert_int_equal(fg_sim_sched_nodes_to_find(1000), 420);     /* 50% - 1000/125 = 42% */
    assert_int_equal(fg_sim_sched_nodes_to_find(5000), 500);     /* 10% */
    assert_int_equal(fg_sim_sched_nodes_to_find(10000), 500);    /* the 5% floor */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_least_allocated_values, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_nonzero_defaults, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_spreads_evenly, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_node_affinity_preferred, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_prefer_no_schedule, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_pod_affinity_preferred, fixture_setup, fixture_teardown),
        cmocka_unit_test(test_ties_random),
        cmocka_unit_test(test_nodes_to_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
