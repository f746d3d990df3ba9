/*
 * e2e_sim_priority — who gets a shared GPU when there are not enough: pod groups, preemption and
 * drains on a simulated cluster that cannot grow (testdata/priority-e2e.yaml: two nodes of two GPUs,
 * the autoscaler at its limit), driven by the machine's real kubectl with real node agents:
 *   1. `kubectl apply -k manifests/` installs fracgpu; the operator runs with a capacity idle grace
 *      of 3 s, a preemption delay of 3 s and a pod-group timeout of 8 s;
 *   2. a gang of four (fracgpu.io/pod-group, pod-group-size 4) with three members binds none of them,
 *      through a timeout that releases their reservations; the fourth member binds all four;
 *   3. four low-priority pods of 700 milli hold the four GPUs; a high-priority pod of 700 milli
 *      waits for capacity that cannot come, and once the preemption delay passed it evicts one of
 *      them — but not while a PodDisruptionBudget protects them all: it waits until the budget goes;
 *   4. `kubectl drain` of the node where a Deployment's tenants run: they are evicted, placed again on
 *      the other node, and the drained node's capacity pods go, which lets the drain finish.
 * All along, the independent checker (e2e/checker) judges every GPU's tenants after each event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "e2e/cluster/test/share_fixture.h"
#include "reconcilers/podcontract.h"

#define NS "team"

static struct share_env e;

#define OK(out, stdin_text, ...) SHARE_OK(&e, out, stdin_text, __VA_ARGS__)

/* A Deployment asking for whole GPUs, automated, with a fixed fraction; pod_ann: more annotations of
 * its pods, spec: more fields of its pod spec (each a YAML flow mapping's members, or ""). */
#define APP(name, replicas, milli, pod_ann, spec)                                                            \
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " name "\n  namespace: " NS "\n"                 \
    "  annotations: {fracgpu.io/automate: \"true\", fracgpu.io/gpu-compute: \"" milli "\", "                   \
    "fracgpu.io/gpu-memory: 10Gi}\n"                                                                           \
    "spec:\n  replicas: " replicas "\n  selector:\n    matchLabels: {app: " name "}\n  template:\n"             \
    "    metadata:\n      labels: {app: " name ", fracgpu.io/automate: \"true\"}\n"                            \
    "      annotations: {" pod_ann "}\n    spec:\n" spec                                                        \
    "      containers:\n        - name: main\n          image: registry.example.com/vllm:1\n"                  \
    "          resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {nvidia.com/gpu: \"1\"}}\n"

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    return share_setup(&e, "priority-e2e.yaml", "e2e_sim_priority");
}

static int teardown(void **state)
{
    (void)state;
    return share_teardown(&e);
}

/* ---- 1. install ---- */

static void test_install(void **state)
{
    (void)state;
    static const char *const args[] = { "--capacity-idle-grace=3s", "--preemption-delay=3s", "--pod-group-timeout=8s",
                                        NULL };
    share_install(&e, args, 2, NS);
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out,
       "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 100\n---\n"
       "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n",
       "apply", "-f", "-");
    fg_buf_cleanup(&out);
}

/* ---- 2. a gang binds all or none ---- */

static size_t bound(const char *app)
{
    struct share_app v;
    share_app(&e.sim, NS, app, &v);
    size_t k = 0;
    for (size_t i = 0; i < v.n; i++)
        k += fg_json_get_str(v.pods[i], "spec", "nodeName", NULL) != NULL;
    share_app_cleanup(&v);
    return k;
}

#define GANG_ANN "fracgpu.io/pod-group: train, fracgpu.io/pod-group-size: \"4\""

static void test_gang(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, APP("gang", "3", "250", GANG_ANN, ""), "apply", "-f", "-");
    /* three of four: none binds, through the 8 s timeout that releases their reservations */
    uint64_t until = fg_clock_mono_ns() + 14ull * FG_NS_PER_S;
    while (fg_clock_mono_ns() < until) {
        if (bound("gang"))
            share_show_and_fail(&e.sim, "a member of an incomplete pod group was bound");
        nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
    }
    OK(&out, APP("gang", "4", "250", GANG_ANN, ""), "apply", "-f", "-");
    struct share_want_running w = { &e.sim, NS, "gang", 4 };
    if (!share_eventually(share_all_running, &w, 120))
        share_show_and_fail(&e.sim, "the complete pod group does not run");
    OK(&out, NULL, "delete", "deployment", "gang", "-n", NS);
    fg_buf_cleanup(&out);
}

/* ---- 3. preemption ---- */

static bool low_and_high(void *ud)
{
    (void)ud;
    struct share_app low;
    share_app(&e.sim, NS, "low", &low);
    bool ok = share_app_running(&e.sim, NS, "high", 1) && low.running == 3;
    share_app_cleanup(&low);
    return ok;
}

static void test_preemption(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, APP("low", "4", "700", "", "      priorityClassName: low\n"), "apply", "-f", "-");
    struct share_want_running w = { &e.sim, NS, "low", 4 };
    if (!share_eventually(share_all_running, &w, 120))
        share_show_and_fail(&e.sim, "the four low-priority pods do not run");
    OK(&out,
       "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: low, namespace: " NS "}\n"
       "spec: {minAvailable: 4, selector: {matchLabels: {app: low}}}\n",
       "apply", "-f", "-");
    OK(&out, APP("high", "1", "700", "", "      priorityClassName: high\n"), "apply", "-f", "-");
    /* the budget protects every low pod: the high one waits, and no low pod goes */
    uint64_t until = fg_clock_mono_ns() + 10ull * FG_NS_PER_S;
    while (fg_clock_mono_ns() < until) {
        if (bound("high") || !share_app_running(&e.sim, NS, "low", 4))
            share_show_and_fail(&e.sim, "a pod protected by its PodDisruptionBudget was preempted");
        nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
    }
    OK(&out, NULL, "delete", "pdb", "low", "-n", NS);
    if (!share_eventually(low_and_high, NULL, 90))
        share_show_and_fail(&e.sim, "the high-priority pod did not take a low one's GPU");
    struct share_app high, low;
    share_app(&e.sim, NS, "high", &high);
    share_app(&e.sim, NS, "low", &low);
    const char *gpu = share_ann(high.pods[0], FG_ANN_GPU_UUID);
    assert_non_null(gpu);
    for (size_t i = 0; i < low.n; i++)   /* it has the GPU to itself: 700 + 700 do not fit */
        assert_false(fg_str_eq(share_ann(low.pods[i], FG_ANN_GPU_UUID), gpu) &&
                     fg_json_get_str(low.pods[i], "spec", "nodeName", NULL));
    share_app_cleanup(&high);
    share_app_cleanup(&low);
    OK(&out, NULL, "get", "pods", "-n", NS, "-l", "app=high", "-o", "jsonpath={.items[0].status.nominatedNodeName}");
    assert_true(fg_buf_str(&out)[0] != '\0');
    OK(&out, NULL, "delete", "deployment", "low", "high", "-n", NS);
    fg_buf_cleanup(&out);
}

/* ---- 4. kubectl drain ---- */

struct moved {
    char from[128];
};

static bool moved_and_released(void *ud)
{
    struct moved *m = ud;
    struct share_app v;
    share_app(&e.sim, NS, "svc", &v);
    bool ok = v.n == 2 && v.running == 2;
    for (size_t i = 0; ok && i < v.n; i++)
        ok = !fg_str_eq(fg_json_get_str(v.pods[i], "spec", "nodeName", NULL), m->from);
    share_app_cleanup(&v);
    return ok && share_capacity_pods(&e.sim, m->from) == 0;
}

static void test_drain(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, APP("svc", "2", "300", "", ""), "apply", "-f", "-");
    struct share_want_running w = { &e.sim, NS, "svc", 2 };
    if (!share_eventually(share_all_running, &w, 120))
        share_show_and_fail(&e.sim, "the svc pods do not run");
    struct share_app v;
    share_app(&e.sim, NS, "svc", &v);
    struct moved m;
    snprintf(m.from, sizeof m.from, "%s", fg_json_get_str(v.pods[0], "spec", "nodeName", NULL));
    share_app_cleanup(&v);
    assert_true(share_capacity_pods(&e.sim, m.from) > 0);
    OK(&out, NULL, "drain", m.from, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=150s");
    if (!share_eventually(moved_and_released, &m, 60))
        share_show_and_fail(&e.sim, "the drained node's tenants did not move, or its GPUs were kept");
    OK(&out, NULL, "uncordon", m.from);
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),
        cmocka_unit_test(test_gang),
        cmocka_unit_test(test_preemption),
        cmocka_unit_test(test_drain),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
