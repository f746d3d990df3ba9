/* Tests of the default scheduler's preemption: which pods are victims on a node, which node is
 * chosen, budgets, eligibility, and the snapshot left as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/cluster/sched.h"
#include "e2e/cluster/test/sched_fixture.h"

/* Runs a cycle for pod (reference dropped); the pod must not fit now. */
static void preempt(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, struct fg_sim_sched_result *r)
{
    assert_null(fixture_schedule(s, pod, r));
    fg_sim_sched_pod_unref(pod);
}

static void assert_victims(const struct fg_sim_sched_result *r, const char *node, const char *const *names, size_t n)
{
    assert_true(r->set_nomination);
    assert_string_equal(r->nominated, node);
    assert_int_equal(r->nvictims, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(r->victims[i]->name, names[i]);
}

/* Everything lower goes first, then the most important come back while the pod still fits. */
static void test_victims_minimal(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "n", "4", "8Gi", 110, NULL);
    fixture_place(s, fixture_pod("p1", "1", NULL, 1, NULL), "n");
    fixture_place(s, fixture_pod("p2", "1", NULL, 2, NULL), "n");
    fixture_place(s, fixture_pod("p3", "2", NULL, 3, NULL), "n");
    fixture_place(s, fixture_pod("vip", "0", NULL, 100, NULL), "n");   /* higher: never a victim */
    struct fg_sim_sched_result r;
    preempt(s, fixture_pod("big", "1", NULL, 10, NULL), &r);
    /* p3 (2 CPUs) and p2 come back; p1 does not */
    assert_victims(&r, "n", (const char *[]){ "p1" }, 1);
    /* the message is the filters' alone when preemption found room */
    assert_string_equal(r.message, "0/1 nodes are available: 1 Insufficient cpu.");
    fg_sim_sched_result_cleanup(&r);
    /* the dry run left the node as it was */
    struct fg_sim_sched_node *n = fg_sim_sched_node_get(s, "n");
    assert_int_equal(n->npods, 4);
    assert_int_equal(n->req_cpu, 4000);

    preempt(s, fixture_pod("huge", "3", NULL, 10, NULL), &r);
    assert_victims(&r, "n", (const char *[]){ "p3", "p1" }, 2);   /* most important first */
    fg_sim_sched_result_cleanup(&r);
}

/* Kube's order: fewest budget violations, lowest highest victim, smallest sum, fewest victims. */
static void test_node_choice(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "2", "8Gi", 110, NULL);
    fixture_node(s, "b", "2", "8Gi", 110, NULL);
    fixture_node(s, "c", "2", "8Gi", 110, NULL);
    fixture_place(s, fixture_pod("a1", "2", NULL, 5, NULL), "a");
    /* of equal priority, the one started first is the more important */
    fixture_place(s, fixture_pod("b1", "1", NULL, 3, "{'status':{'startTime':'2025-01-01T00:00:00Z'}}"), "b");
    fixture_place(s, fixture_pod("b2", "1", NULL, 3, "{'status':{'startTime':'2025-01-02T00:00:00Z'}}"), "b");
    fixture_place(s, fixture_pod("c1", "1", NULL, 4, NULL), "c");
    fixture_place(s, fixture_pod("c2", "1", NULL, 1, NULL), "c");
    struct fg_sim_sched_result r;
    /* needs 2 CPUs: a's victim has priority 5, b's highest 3, c's highest 4 */
    preempt(s, fixture_pod("p", "2", NULL, 10, NULL), &r);
    assert_victims(&r, "b", (const char *[]){ "b1", "b2" }, 2);
    fg_sim_sched_result_cleanup(&r);
    /* needs 1 CPU: c loses c2 (priority 1), the lowest highest-victim */
    preempt(s, fixture_pod("q", "1", NULL, 10, NULL), &r);
    assert_victims(&r, "c", (const char *[]){ "c2" }, 1);
    fg_sim_sched_result_cleanup(&r);
}

/* A budget with no disruption left makes its pods the last resort: on the node and across nodes. */
static void test_budgets(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "2", "8Gi", 110, NULL);
    fixture_node(s, "b", "2", "8Gi", 110, NULL);
    fixture_place(s, fixture_pod("guarded", "2", NULL, 1, "{'metadata':{'labels':{'app':'db'}}}"), "a");
    fixture_place(s, fixture_pod("free", "2", NULL, 4, NULL), "b");
    fg_sim_sched_pdb_set(s, fixture_json("{'metadata':{'name':'db','namespace':'default'},'spec':{'selector':"
                                         "{'matchLabels':{'app':'db'}}},'status':{'disruptionsAllowed':0}}"));
    struct fg_sim_sched_result r;
    preempt(s, fixture_pod("p", "2", NULL, 10, NULL), &r);
    assert_victims(&r, "b", (const char *[]){ "free" }, 1);
    fg_sim_sched_result_cleanup(&r);
    /* with a disruption allowed, the lower priority wins again */
    fg_sim_sched_pdb_set(s, fixture_json("{'metadata':{'name':'db','namespace':'default'},'spec':{'selector':"
                                         "{'matchLabels':{'app':'db'}}},'status':{'disruptionsAllowed':1}}"));
    preempt(s, fixture_pod("p", "2", NULL, 10, NULL), &r);
    assert_victims(&r, "a", (const char *[]){ "guarded" }, 1);
    fg_sim_sched_result_cleanup(&r);
    /* an empty selector covers nothing */
    fg_sim_sched_pdb_remove(s, "default/db");
    fg_sim_sched_pdb_set(s, fixture_json("{'metadata':{'name':'all','namespace':'default'},'spec':{'selector':{}},"
                                         "'status':{'disruptionsAllowed':0}}"));
    preempt(s, fixture_pod("p", "2", NULL, 10, NULL), &r);
    assert_string_equal(r.nominated, "a");
    fg_sim_sched_result_cleanup(&r);
}

static void test_not_eligible(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "n", "1", "8Gi", 110, NULL);
    fixture_place(s, fixture_pod("low", "1", NULL, 0, NULL), "n");
    struct fg_sim_sched_result r;
    preempt(s, fixture_pod("p", "1", NULL, 10, "{'spec':{'preemptionPolicy':'Never'}}"), &r);
    assert_string_equal(r.message, "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to "
                                   "preemptionPolicy=Never.");
    assert_int_equal(r.nvictims, 0);
    assert_false(r.set_nomination);
    fg_sim_sched_result_cleanup(&r);
    /* a victim still terminating on the nominated node: wait for it */
    fixture_place(s, fixture_pod("low", "1", NULL, 0,
                                 "{'metadata':{'deletionTimestamp':'2025-01-01T00:00:00Z'},'status':{'conditions':"
                                 "[{'type':'DisruptionTarget','status':'True','reason':'PreemptionByScheduler'}]}}"),
                  "n");
    preempt(s, fixture_pod("p", "1", NULL, 10, "{'status':{'nominatedNodeName':'n'}}"), &r);
    assert_string_equal(r.message, "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to a "
                                   "terminating pod on the nominated node.");
    fg_sim_sched_result_cleanup(&r);
}

/* Lower-priority pods nominated to the chosen node lose their nomination. */
static void test_demotes_lower_nominations(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "n", "2", "8Gi", 110, NULL);
    fixture_place(s, fixture_pod("low", "2", NULL, 0, NULL), "n");
    fixture_nominate(s, fixture_pod("mid", "1", NULL, 5, NULL), "n");
    struct fg_sim_sched_result r;
    preempt(s, fixture_pod("top", "1", NULL, 10, NULL), &r);
    assert_victims(&r, "n", (const char *[]){ "low" }, 1);
    assert_int_equal(r.ndemoted, 1);
    assert_string_equal(r.demoted[0]->name, "mid");
    fg_sim_sched_result_cleanup(&r);
}

/* No candidate: kube's message over the nodes tried and the others, and the nomination cleared. */
static void test_no_candidate(void **state)
{
    struct fg_sim_sched_snapshot *s = *state;
    fixture_node(s, "a", "1", "8Gi", 110, NULL);
    fixture_node(s, "b", "1", "8Gi", 110, NULL);
    fixture_node(s, "gpu", "8", "8Gi", 110, "{'spec':{'taints':[{'key':'gpu','effect':'NoSchedule'}]}}");
    fixture_place(s, fixture_pod("high", "1", NULL, 50, NULL), "a");
    fixture_place(s, fixture_pod("half", "500m", NULL, 50, NULL), "b");
    fixture_place(s, fixture_pod("small", "200m", NULL, 0, NULL), "b");
    struct fg_sim_sched_result r;
    preempt(s, fixture_pod("p", "800m", NULL, 10, "{'status':{'nominatedNodeName':'b'}}"), &r);
    /* a: only higher-priority pods; b: even without small, 800m does not fit beside half */
    assert_string_equal(r.message, "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: }, 2 Insufficient "
                                   "cpu. preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption "
                                   "victims found for incoming pod, 1 Preemption is not helpful for scheduling.");
    assert_true(r.set_nomination);
    assert_null(r.nominated);
    fg_sim_sched_result_cleanup(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_victims_minimal, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_node_choice, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_budgets, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_not_eligible, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_demotes_lower_nominations, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_no_candidate, fixture_setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
