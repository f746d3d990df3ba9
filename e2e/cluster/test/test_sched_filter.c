/* Tests of the default scheduler's filters on small clusters: each filter's reason and status, and
 * kube's FailedScheduling message with its counted, string-sorted reasons. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/cluster/sched.h"
#include "e2e/cluster/test/sched_fixture.h"

/* Schedules pod (dropping the reference) and checks that it fits nowhere with exactly `message`. */
static void expect_message(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *message)
{
    struct fg_sim_sched_result r;
    const char *node = fixture_schedule(s, pod, &r);
    if (node)
        fail_msg("scheduled on %s, expected: %s", node, message);
    assert_string_equal(r.message, message);
    fg_sim_sched_result_cleanup(&r);
    fg_sim_sched_pod_unref(pod);
}

/* Schedules pod (dropping the reference) and checks the node chosen. */
static void expect_node(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *want)
{
    struct fg_sim_sched_result r;
    const char *node = fixture_schedule(s, pod, &r);
    if (!node)
        fail_msg("not scheduled (%s), expected %s", r.message, want);
    assert_string_equal(node, want);
    fg_sim_sched_result_cleanup(&r);
    fg_sim_sched_pod_unref(pod);
}

static void test_no_nodes(void **state)
{
    expect_message(*state, fixture_pod("p", "100m", NULL, 0, NULL), "no nodes available to schedule pods");
}

/* The brief's example, where every node is unresolvable: 4 CPUs is more than the node has. */
static void test_message_unresolvable_everywhere(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "2", "4Gi", 110, "{'metadata':{'labels':{'zone':'a'}}}");
    fixture_node(s, "b", "8", "4Gi", 110, "{'metadata':{'labels':{'zone':'b'}}}");
    fixture_node(s, "c", "8", "4Gi", 110, "{'metadata':{'labels':{'zone':'b'}}}");
    expect_message(s, fixture_pod("p", "4", NULL, 0, "{'spec':{'nodeSelector':{'zone':'a'}}}"),
                   "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node "
                   "affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for "
                   "scheduling.");
}

/* A node short of room (not of size) is a preemption candidate without victims. */
static void test_message_no_victims(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "1", "4Gi", 110, "{'metadata':{'labels':{'zone':'a'}}}");
    fixture_node(s, "b", "8", "4Gi", 110, "{'metadata':{'labels':{'zone':'b'}}}");
    fixture_node(s, "c", "8", "4Gi", 110, "{'metadata':{'labels':{'zone':'b'}}}");
    fixture_place(s, fixture_pod("busy", "800m", NULL, 0, NULL), "a");
    expect_message(s, fixture_pod("p", "500m", NULL, 0, "{'spec':{'nodeSelector':{'zone':'a'}}}"),
                   "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node "
                   "affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for "
                   "incoming pod, 2 Preemption is not helpful for scheduling.");
}

/* Counts sort as strings: "10 ..." before "2 ...". */
static void test_reasons_sorted_as_strings(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    char name[16];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "t%d", i);
        fixture_node(s, name, "4", "4Gi", 110, "{'spec':{'taints':[{'key':'dedicated','value':'gpu','effect':'NoSchedule'}]}}");
    }
    fixture_node(s, "u1", "4", "4Gi", 110, "{'spec':{'unschedulable':true}}");
    fixture_node(s, "u2", "4", "4Gi", 110, "{'spec':{'unschedulable':true}}");
    expect_message(s, fixture_pod("p", "100m", NULL, 0, NULL),
                   "0/12 nodes are available: 10 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) were "
                   "unschedulable. preemption: 0/12 nodes are available: 12 Preemption is not helpful for "
                   "scheduling.");
}

static void test_unschedulable_node(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "cordoned", "4", "4Gi", 110, "{'spec':{'unschedulable':true}}");
    expect_message(s, fixture_pod("p", "100m", NULL, 0, NULL),
                   "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: "
                   "1 Preemption is not helpful for scheduling.");
    /* a pod that tolerates node.kubernetes.io/unschedulable goes there anyway */
    expect_node(s, fixture_pod("ds", "100m", NULL, 0,
                               "{'spec':{'tolerations':[{'key':'node.kubernetes.io/unschedulable','operator':'Exists',"
                               "'effect':'NoSchedule'}]}}"),
                "cordoned");
}

static void test_taints(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "master", "4", "4Gi", 110,
                 "{'spec':{'taints':[{'key':'node-role.kubernetes.io/control-plane','effect':'NoSchedule'}]}}");
    fixture_node(s, "gone", "4", "4Gi", 110, "{'spec':{'taints':[{'key':'evict','value':'now','effect':'NoExecute'}]}}");
    fixture_node(s, "soft", "4", "4Gi", 110, "{'spec':{'taints':[{'key':'x','effect':'PreferNoSchedule'}]}}");
    struct fg_sim_sched_result r;
    struct fg_sim_sched_pod *pod = fixture_pod("p", "100m", NULL, 0, NULL);
    /* PreferNoSchedule never filters */
    assert_string_equal(fixture_schedule(s, pod, &r), "soft");
    fg_sim_sched_result_cleanup(&r);
    fg_sim_sched_pod_unref(pod);
    fixture_node(s, "soft", "4", "4Gi", 110, "{'spec':{'unschedulable':true}}");
    expect_message(s, fixture_pod("p", "100m", NULL, 0, NULL),
                   "0/3 nodes are available: 1 node(s) had untolerated taint {evict: now}, 1 node(s) had "
                   "untolerated taint {node-role.kubernetes.io/control-plane: }, 1 node(s) were unschedulable. "
                   "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.");
    expect_node(s, fixture_pod("t", "100m", NULL, 0,
                               "{'spec':{'tolerations':[{'key':'evict','operator':'Equal','value':'now'}]}}"),
                "gone");
}

/* A node whose Ready condition is not True is tainted as kube's node lifecycle controller taints it. */
static void test_not_ready(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "down", "4", "4Gi", 110, "{'status':{'conditions':[{'type':'Ready','status':'False'}]}}");
    fixture_node(s, "lost", "4", "4Gi", 110, "{'status':{'conditions':[{'type':'Ready','status':'Unknown'}]}}");
    expect_message(s, fixture_pod("p", "100m", NULL, 0, NULL),
                   "0/2 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 "
                   "node(s) had untolerated taint {node.kubernetes.io/unreachable: }. preemption: 0/2 nodes are "
                   "available: 2 Preemption is not helpful for scheduling.");
    expect_node(s, fixture_pod("ds", "100m", NULL, 0,
                               "{'spec':{'tolerations':[{'key':'node.kubernetes.io/not-ready','operator':'Exists'}]}}"),
                "down");
}

static void test_node_affinity(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "cpu", "4", "4Gi", 110, "{'metadata':{'labels':{'kind':'cpu'}}}");
    fixture_node(s, "gpu", "4", "4Gi", 110, "{'metadata':{'labels':{'kind':'gpu'}}}");
    expect_node(s,
                fixture_pod("p", "100m", NULL, 0,
                            "{'spec':{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                            "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'kind','operator':'In','values':['gpu']}]}]}}}}}"),
                "gpu");
    expect_message(s, fixture_pod("p", "100m", NULL, 0, "{'spec':{'nodeSelector':{'kind':'tpu'}}}"),
                   "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 "
                   "nodes are available: 2 Preemption is not helpful for scheduling.");
}

static void test_host_ports(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "n", "4", "4Gi", 110, NULL);
    fixture_place(s, fixture_pod("web", "100m", NULL, 0,
                                 "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,'hostPort':8080}]}]}}"),
                  "n");
    expect_message(s,
                   fixture_pod("p", "100m", NULL, 0,
                               "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,'hostPort':8080,"
                               "'hostIP':'127.0.0.1'}]}]}}"),
                   "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. "
                   "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.");
    /* another protocol, or another port, is free */
    expect_node(s, fixture_pod("udp", "100m", NULL, 0,
                               "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,'hostPort':8080,"
                               "'protocol':'UDP'}]}]}}"),
                "n");
    expect_node(s, fixture_pod("other", "100m", NULL, 0,
                               "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,'hostPort':8081}]}]}}"),
                "n");
}

static void test_resources(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "small", "1", "1Gi", 1, "{'status':{'allocatable':{'nvidia.com/gpu':'1','fracgpu.io/gpu-share':'4'}}}");
    fixture_place(s, fixture_pod("there", NULL, NULL, 0, "{'spec':{'containers':[{'name':'c','resources':"
                                 "{'requests':{'cpu':'500m','memory':'512Mi','nvidia.com/gpu':'1'}}}]}}"),
                  "small");
    /* every resource short is a reason of its own, and one pod fills the node's pod count */
    expect_message(s,
                   fixture_pod("p", "600m", "768Mi", 0,
                               "{'spec':{'containers':[{'name':'c','resources':{'requests':{'cpu':'600m','memory':'768Mi',"
                               "'nvidia.com/gpu':'1','fracgpu.io/gpu-share':'5','ephemeral-storage':'1Gi'}}}]}}"),
                   "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient ephemeral-storage, 1 Insufficient "
                   "fracgpu.io/gpu-share, 1 Insufficient memory, 1 Insufficient nvidia.com/gpu, 1 Too many pods. "
                   "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.");
}

/* Pods of other schedulers take room once bound. */
static void test_other_schedulers_counted(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "2", "4Gi", 110, NULL);
    fixture_node(s, "b", "2", "4Gi", 110, NULL);
    fixture_place(s, fixture_pod("frac", "1500m", NULL, 0, "{'spec':{'schedulerName':'fracgpu-scheduler','nodeName':'a'}}"),
                  "a");
    struct fg_sim_sched_pod *ours = fixture_pod("p", "1", NULL, 0, NULL);
    struct fg_sim_sched_pod *theirs = fixture_pod("q", "1", NULL, 0, "{'spec':{'schedulerName':'fracgpu-scheduler'}}");
    assert_true(fg_sim_sched_pod_wanted(ours));
    assert_false(fg_sim_sched_pod_wanted(theirs));
    fg_sim_sched_pod_unref(theirs);
    expect_node(s, ours, "b");
    fixture_place(s, fixture_pod("q2", "1500m", NULL, 0, NULL), "b");
    expect_message(s, fixture_pod("p", "1", NULL, 0, NULL),
                   "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No "
                   "preemption victims found for incoming pod.");
}

static void test_pod_affinity(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "4", "4Gi", 110, "{'metadata':{'labels':{'zone':'z1'}}}");
    fixture_node(s, "b", "4", "4Gi", 110, "{'metadata':{'labels':{'zone':'z2'}}}");
    const char *with_db = "{'spec':{'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                          "[{'labelSelector':{'matchLabels':{'app':'db'}},'topologyKey':'zone'}]}}}}";
    /* no db anywhere, and the pod is no db itself */
    expect_message(s, fixture_pod("p", "100m", NULL, 0, with_db),
                   "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. preemption: 0/2 nodes are "
                   "available: 2 Preemption is not helpful for scheduling.");
    /* the first db of a group with affinity to itself may go anywhere */
    struct fg_sim_sched_pod *first = fixture_pod("db0", "100m", NULL, 0, "{'metadata':{'labels':{'app':'db'}},"
        "'spec':{'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
        "[{'labelSelector':{'matchLabels':{'app':'db'}},'topologyKey':'zone'}]}}}}");
    struct fg_sim_sched_result r;
    assert_non_null(fixture_schedule(s, first, &r));
    fg_sim_sched_result_cleanup(&r);
    fg_sim_sched_pod_unref(first);
    fixture_place(s, fixture_pod("db", "100m", NULL, 0, "{'metadata':{'labels':{'app':'db'}}}"), "b");
    expect_node(s, fixture_pod("p", "100m", NULL, 0, with_db), "b");
    /* anti-affinity to the db keeps the pod out of its zone */
    expect_node(s, fixture_pod("p", "100m", NULL, 0, "{'spec':{'affinity':{'podAntiAffinity':"
                               "{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':{'matchLabels':"
                               "{'app':'db'}},'topologyKey':'zone'}]}}}}"),
                "a");
    /* and a placed pod's own anti-affinity keeps matching pods out of its domain */
    fixture_place(s, fixture_pod("loner", "100m", NULL, 0, "{'spec':{'affinity':{'podAntiAffinity':"
                                 "{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':{'matchLabels':"
                                 "{'app':'noisy'}},'topologyKey':'kubernetes.io/hostname'}]}}}}"),
                  "a");
    expect_node(s, fixture_pod("noisy", "100m", NULL, 0, "{'metadata':{'labels':{'app':'noisy'}}}"), "b");
    fixture_node(s, "b", "4", "4Gi", 110, "{'metadata':{'labels':{'zone':'z2'}},'spec':{'unschedulable':true}}");
    expect_message(s, fixture_pod("noisy", "100m", NULL, 0, "{'metadata':{'labels':{'app':'noisy'}}}"),
                   "0/2 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, 1 node(s) "
                   "were unschedulable. preemption: 0/2 nodes are available: 1 No preemption victims found for "
                   "incoming pod, 1 Preemption is not helpful for scheduling.");
}

static void test_topology_spread(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "4", "4Gi", 110, "{'metadata':{'labels':{'topology.kubernetes.io/zone':'z1'}}}");
    fixture_node(s, "b", "4", "4Gi", 110, "{'metadata':{'labels':{'topology.kubernetes.io/zone':'z2'}}}");
    fixture_node(s, "bare", "4", "4Gi", 110, NULL);
    fixture_place(s, fixture_pod("w1", "100m", NULL, 0, "{'metadata':{'labels':{'app':'web'}}}"), "a");
    fixture_place(s, fixture_pod("w2", "100m", NULL, 0, "{'metadata':{'labels':{'app':'web'}}}"), "a");
    fixture_place(s, fixture_pod("w3", "100m", NULL, 0, "{'metadata':{'labels':{'app':'web'}}}"), "b");
    const char *spread = "{'metadata':{'labels':{'app':'web'}},'spec':{'topologySpreadConstraints':[{'maxSkew':1,"
                         "'topologyKey':'topology.kubernetes.io/zone','whenUnsatisfiable':'DoNotSchedule',"
                         "'labelSelector':{'matchLabels':{'app':'web'}}}]}}";
    expect_node(s, fixture_pod("w4", "100m", NULL, 0, spread), "b");
    fixture_place(s, fixture_pod("w4", "100m", NULL, 0, "{'metadata':{'labels':{'app':'web'}}}"), "b");
    fixture_node(s, "b", "4", "4Gi", 110,
                 "{'metadata':{'labels':{'topology.kubernetes.io/zone':'z2'}},'spec':{'unschedulable':true}}");
    /* z1 has 3, z2 has 2 (and takes no more): a fourth in z1 would be a skew of 2 */
    fixture_place(s, fixture_pod("w5", "100m", NULL, 0, "{'metadata':{'labels':{'app':'web'}}}"), "a");
    expect_message(s, fixture_pod("w6", "100m", NULL, 0, spread),
                   "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, 1 node(s) "
                   "didn't match pod topology spread constraints (missing required label), 1 node(s) were "
                   "unschedulable. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming "
                   "pod, 2 Preemption is not helpful for scheduling.");
}

/* The room a preemption freed is kept for the nominated pod against pods of lower or equal priority. */
static void test_nominated_room_reserved(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "n", "2", "4Gi", 110, NULL);
    fixture_place(s, fixture_pod("there", "1", NULL, 100, NULL), "n");
    fixture_nominate(s, fixture_pod("big", "1", NULL, 10, NULL), "n");
    expect_message(s, fixture_pod("low", "1", NULL, 5, NULL),
                   "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No "
                   "preemption victims found for incoming pod.");
    expect_message(s, fixture_pod("same", "1", NULL, 10, "{'spec':{'preemptionPolicy':'Never'}}"),
                   "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to "
                   "preemptionPolicy=Never.");
    expect_node(s, fixture_pod("higher", "1", NULL, 20, NULL), "n");
    expect_node(s, fixture_pod("big", "1", NULL, 10, NULL), "n");   /* the nominated pod itself */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_nodes, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_message_unresolvable_everywhere, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_message_no_victims, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_reasons_sorted_as_strings, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_unschedulable_node, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_taints, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_not_ready, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_node_affinity, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_host_ports, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_resources, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_other_schedulers_counted, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_pod_affinity, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_topology_spread, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_nominated_room_reserved, fixture_setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
