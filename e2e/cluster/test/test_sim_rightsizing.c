/*
 * e2e_sim_rightsizing — the loop closed on a simulated cluster (testdata/rightsizing-e2e.yaml: GPU
 * nodes of two GPUs, one that stays and room for two more): the usage driver's GPU use → the node
 * agents' exporters → the operator's collector → the recommender → the webhook → fracgpu's scheduler.
 * Driven by the machine's real kubectl, with test policies of minute-scale windows (labelled
 * fracgpu.io/test-policy, for tests only):
 *   1. `kubectl apply -k manifests/`; the operator collects and decides every 2 s, the node agents
 *      sample every second; GPUPolicies e2e-auto (Auto) and e2e-off (Off) created;
 *   2. an automated Deployment of four pods asking for whole GPUs, using 10% and 2 GiB each, starts
 *      on four GPUs (three nodes, with a fifth GPU for an Off-mode Deployment);
 *   3. once its history covers minHistory its pods are rolled, one eviction at a time, to the
 *      recommendation and packed onto one GPU: three capacity pods go, and so does every node left
 *      with DaemonSet pods only (the operator's replicas keep theirs: the simulated autoscaler removes
 *      empty nodes, and where the pods are packed decides which node empties); the Off-mode
 *      workload gets a recommendation in its status, and its pod is the same pod, still whole;
 *   4. a usage jump (a new template: 60% and 6 GiB) raises the allocation within a collection
 *      interval plus the roll: memory overused → memory bumped at once, the pods rolled to it;
 *   5. containers OOM-killed raise memory at once (an OutOfMemory Event, memory ≥ 1.2 × before);
 *   6. the operator's pods deleted: the new leader restores the history from the GPUCheckpoint (its
 *      samples do not start over, the recommendation stays), and `kubectl get gpucheckpoints` shows it;
 *   7. the Deployment deleted (its GPUWorkload goes with it, its GPUCheckpoint stays) and created
 *      again: its history continues from the checkpoint.
 * An independent checker (e2e/checker) watches every pod all along: no GPU's tenants above its
 * compute or memory, no tenant without its capacity pod.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/test/share_fixture.h"
#include "e2e/tests/simcluster.h"
#include "operator/kube/client.h"
#include "reconcilers/podcontract.h"

#define NS "serving"

static struct share_env e;

#define OK(out, stdin_text, ...) SHARE_OK(&e, out, stdin_text, __VA_ARGS__)

#define TEST_POLICY(name, mode)                                                                                 \
    "apiVersion: fracgpu.io/v1alpha1\nkind: GPUPolicy\nmetadata:\n  name: " name "\n"                           \
    "  labels: {fracgpu.io/test-policy: \"true\"}\n"                                                           \
    "  annotations: {fracgpu.io/description: \"minute-scale windows, for end-to-end tests only\"}\n"              \
    "spec:\n  workloadClass: inference\n  sharing: timeslice\n  historyWindow: 3m\n  minHistory: 20s\n"          \
    "  compute: {percentile: 90, headroomPercent: 20, minMilli: 50, maxMilli: 1000}\n"                          \
    "  memory: {percentile: 100, headroomPercent: 25, minMiB: 256, maxMiB: 81920}\n"                            \
    "  updateMode: " mode "\n  cooldown: 20s\n  changeThresholdPercent: 10\n"

/* A Deployment asking for whole GPUs, automated under `policy`, its pods using sm % and memory. */
#define APP(name, replicas, policy, sm, memory, extra_ann)                                                      \
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " name "\n  namespace: " NS "\n"                 \
    "  annotations: {fracgpu.io/automate: \"true\", fracgpu.io/policy: " policy "}\n"                           \
    "spec:\n  replicas: " replicas "\n  selector:\n    matchLabels: {app: " name "}\n  template:\n"             \
    "    metadata:\n      labels: {app: " name ", fracgpu.io/automate: \"true\"}\n"                             \
    "      annotations: {sim.fracgpu.io/gpu-sm: \"" sm "\", sim.fracgpu.io/gpu-memory: " memory extra_ann "}\n" \
    "    spec:\n      containers:\n        - name: main\n          image: registry.example.com/sd:1\n"        \
    "          resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {nvidia.com/gpu: \"1\"}}\n"

/* ---- reading the cluster ---- */

static json_object *gpuworkload(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/fracgpu.io/v1alpha1/namespaces/%s/gpuworkloads/%s", NS, name);
    json_object *o = NULL;
    if (fg_kube_get(e.sim.client, path, &o, NULL) != FG_OK)
        return NULL;
    return o;
}

static int64_t status_int(const char *gw, const char *a, const char *b)
{
    json_object *o = gpuworkload(gw);
    int64_t v = -1;
    if (!o || !fg_json_get_int64(o, &v, "status", a, b, NULL))
        v = -1;
    json_object_put(o);
    return v;
}

/* The app's live pods all hold an allocation that satisfies want (and there are n of them). */
struct want_pods {
    const char *app;
    size_t n;
    int64_t compute_below, memory_at_least;   /* -1: not checked */
    size_t gpus;                               /* distinct GPUs at most (0: not checked) */
};

static bool pods_are(void *ud)
{
    const struct want_pods *w = ud;
    struct share_app v;
    share_app(&e.sim, NS, w->app, &v);
    bool ok = v.n == w->n && v.running == w->n;
    for (size_t i = 0; ok && i < v.n; i++) {
        const char *c = share_ann(v.pods[i], FG_ANN_COMPUTE_MILLI), *m = share_ann(v.pods[i], FG_ANN_MEMORY_MIB);
        if (!c || !m)
            ok = false;
        else if (w->compute_below >= 0 && atoll(c) >= w->compute_below)
            ok = false;
        else if (w->memory_at_least >= 0 && (!strcmp(m, "whole") || atoll(m) < w->memory_at_least))
            ok = false;
    }
    const char *gpus[16];
    if (ok && w->gpus && share_distinct(&v, FG_ANN_GPU_UUID, gpus) > w->gpus)
        ok = false;
    share_app_cleanup(&v);
    return ok;
}

static bool daemon_pod(json_object *pod)
{
    json_object *refs = fg_json_get(pod, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; i < fg_json_array_len(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        json_object *controller = fg_json_get(r, "controller", NULL);
        if (controller && json_object_get_boolean(controller))
            return fg_str_eq(fg_json_get_str(r, "kind", NULL), "DaemonSet");
    }
    return false;
}

/* Whether a pod on node keeps the autoscaler from removing it: anything running but DaemonSet pods
 * (the simulated autoscaler removes empty nodes only: e2e/cluster/autoscaler_down.c). */
static bool keeps_node(json_object *pods, const char *node)
{
    json_object *items = fg_json_get(pods, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *phase = fg_json_get_str(p, "status", "phase", NULL);
        if (fg_str_eq(fg_json_get_str(p, "spec", "nodeName", NULL), node) && !fg_str_eq(phase, "Succeeded") &&
            !fg_str_eq(phase, "Failed") && !daemon_pod(p))
            return true;
    }
    return false;
}

/* The emptied GPUs given back: *want capacity pods left; and their nodes: none is left holding only
 * DaemonSet pods (a node an operator replica runs on stays, whichever GPUs it held). */
static bool given_back(void *ud)
{
    if (share_capacity_pods(&e.sim, NULL) != *(const size_t *)ud)
        return false;
    json_object *nodes = share_list(&e.sim, &fg_kube_nodes, NULL, NULL), *pods = share_list(&e.sim, &fg_kube_pods, NULL, NULL);
    json_object *items = fg_json_get(nodes, "items", NULL);
    bool ok = nodes && pods;
    for (size_t i = 0; ok && i < fg_json_array_len(items); i++)
        ok = keeps_node(pods, fg_json_get_str(json_object_array_get_idx(items, i), "metadata", "name", NULL));
    json_object_put(nodes);
    json_object_put(pods);
    return ok;
}

struct want_status {
    const char *gw, *a, *b;
    int64_t at_least;
};

static bool status_reaches(void *ud)
{
    const struct want_status *w = ud;
    return status_int(w->gw, w->a, w->b) >= w->at_least;
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    return share_setup(&e, "rightsizing-e2e.yaml", "e2e_sim_rightsizing");
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
    static const char *const args[] = { "--capacity-idle-grace=3s", "--collect-interval=2s",
                                        "--rightsizing-interval=2s", "--checkpoint-interval=2s", NULL };
    share_install(&e, args, 1, NS);
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "patch", "daemonset/fracgpu-node-agent", "-n", SHARE_SYSTEM_NS, "--type=json", "-p",
       "[{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--interval=1s\"}]");
    OK(&out, NULL, "rollout", "status", "daemonset/fracgpu-node-agent", "-n", SHARE_SYSTEM_NS, "--timeout=120s");
    OK(&out, TEST_POLICY("e2e-auto", "Auto"), "apply", "-f", "-");
    OK(&out, TEST_POLICY("e2e-off", "\"Off\""), "apply", "-f", "-");
    fg_buf_cleanup(&out);
}

/* ---- 2. whole GPUs first ---- */

static void test_whole_first(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, APP("sd", "4", "e2e-auto", "10", "2Gi", ""), "apply", "-f", "-");
    OK(&out, APP("watch", "1", "e2e-off", "10", "2Gi", ""), "apply", "-f", "-");
    struct want_pods sd = { "sd", 4, -1, -1, 0 }, watch = { "watch", 1, -1, -1, 0 };
    if (!share_eventually(pods_are, &sd, 120) || !share_eventually(pods_are, &watch, 60))
        share_show_and_fail(&e.sim, "the pods do not all run");
    struct share_app v;
    share_app(&e.sim, NS, "sd", &v);
    for (size_t i = 0; i < v.n; i++)
        assert_string_equal(share_ann(v.pods[i], FG_ANN_COMPUTE_MILLI), "1000");   /* no history: whole */
    share_app_cleanup(&v);
    assert_int_equal(share_capacity_pods(&e.sim, NULL), 5);
    assert_int_equal(share_nodes(&e.sim), 3);
    fg_buf_cleanup(&out);
}

/* ---- 3. rightsized and packed ---- */

static char watch_uid[64];

static void test_rightsized(void **state)
{
    (void)state;
    struct share_app v;
    share_app(&e.sim, NS, "watch", &v);
    assert_int_equal(v.n, 1);
    snprintf(watch_uid, sizeof watch_uid, "%s", fg_json_get_str(v.pods[0], "metadata", "uid", NULL));
    share_app_cleanup(&v);
    uint64_t t0 = fg_clock_mono_ns();
    /* 10% → p90's bucket ends near 108 milli, × 1.2; 2 GiB × 1.25 = 2560 MiB */
    struct want_pods sd = { "sd", 4, 200, 2048, 1 };
    if (!share_eventually(pods_are, &sd, 150))
        share_show_and_fail(&e.sim, "the sd pods were not rolled to a rightsized allocation on one GPU");
    printf("# rightsized and packed onto one GPU %.1f s after the first pods ran\n",
           (double)(fg_clock_mono_ns() - t0) / 1e9);
    assert_true(status_int("deployment-sd", "recommendation", "computeMilli") < 200);
    assert_int_equal(status_int("deployment-sd", "recommendation", "memoryMiB"), 2560);
    /* capacity pods of the emptied GPUs go, and the nodes left empty: sd's GPU and watch's stay */
    size_t want_caps = 2;
    if (!share_eventually(given_back, &want_caps, 60))
        share_show_and_fail(&e.sim, "the emptied GPUs and nodes were not given back");
    /* Off: a recommendation in status, the same pod still whole */
    assert_true(status_int("deployment-watch", "recommendation", "computeMilli") > 0);
    share_app(&e.sim, NS, "watch", &v);
    assert_int_equal(v.n, 1);
    assert_string_equal(fg_json_get_str(v.pods[0], "metadata", "uid", NULL), watch_uid);
    assert_string_equal(share_ann(v.pods[0], FG_ANN_COMPUTE_MILLI), "1000");
    share_app_cleanup(&v);
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "get", "events", "-n", NS, "--field-selector", "involvedObject.name=deployment-sd", "-o",
       "jsonpath={.items[*].reason}");
    assert_non_null(strstr(fg_buf_str(&out), "FirstRecommendation"));
    assert_non_null(strstr(fg_buf_str(&out), "RollingToNewAllocation"));
    fg_buf_cleanup(&out);
}

/* ---- 4. a usage jump ---- */

static void test_usage_jump(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    uint64_t t0 = fg_clock_mono_ns();
    OK(&out, APP("sd", "4", "e2e-auto", "60", "6Gi", ""), "apply", "-f", "-");
    /* the new pods start on the old allocation, overrun it, and memory goes up at once */
    struct want_status mem = { "deployment-sd", "recommendation", "memoryMiB", 6144 };
    if (!share_eventually(status_reaches, &mem, 60))
        share_show_and_fail(&e.sim, "the memory recommendation did not follow the jump");
    double recommended_s = (double)(fg_clock_mono_ns() - t0) / 1e9;
    struct want_pods sd = { "sd", 4, -1, 6144, 0 };
    if (!share_eventually(pods_are, &sd, 120))
        share_show_and_fail(&e.sim, "the sd pods were not rolled to the raised allocation");
    printf("# usage jump: memory raised %.1f s after the new template, pods rolled to it after %.1f s\n",
           recommended_s, (double)(fg_clock_mono_ns() - t0) / 1e9);
    OK(&out, NULL, "get", "events", "-n", NS, "--field-selector", "involvedObject.name=deployment-sd", "-o",
       "jsonpath={.items[*].reason}");
    assert_non_null(strstr(fg_buf_str(&out), "MemoryOveruse"));
    fg_buf_cleanup(&out);
}

/* ---- 5. out-of-memory kills ---- */

static void test_oom_kill(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    /* settle the jump first: the same template, so nothing rolls */
    int64_t before = status_int("deployment-sd", "recommendation", "memoryMiB");
    assert_true(before >= 6144);
    OK(&out,
       APP("sd", "4", "e2e-auto", "60", "6Gi",
           ", sim.fracgpu.io/run-seconds: \"6\", sim.fracgpu.io/exit-code: \"137\", "
           "sim.fracgpu.io/exit-reason: OOMKilled"),
       "apply", "-f", "-");
    uint64_t t0 = fg_clock_mono_ns();
    struct want_status mem = { "deployment-sd", "recommendation", "memoryMiB", before * 6 / 5 };
    if (!share_eventually(status_reaches, &mem, 90))
        share_show_and_fail(&e.sim, "an OOM-killed container did not raise memory");
    printf("# OOM kills: memory %lld → %lld MiB %.1f s after the template that kills them\n", (long long)before,
           (long long)status_int("deployment-sd", "recommendation", "memoryMiB"),
           (double)(fg_clock_mono_ns() - t0) / 1e9);
    OK(&out, NULL, "get", "events", "-n", NS, "--field-selector", "involvedObject.name=deployment-sd", "-o",
       "jsonpath={.items[*].reason}");
    assert_non_null(strstr(fg_buf_str(&out), "OutOfMemory"));
    /* back to pods that live */
    OK(&out, APP("sd", "4", "e2e-auto", "60", "6Gi", ""), "apply", "-f", "-");
    fg_buf_cleanup(&out);
}

/* ---- 6. an operator restart keeps the history ---- */

static void test_restart_keeps_history(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "get", "gpucheckpoints", "-n", NS);
    assert_non_null(strstr(fg_buf_str(&out), "deployment-sd"));
    assert_non_null(strstr(fg_buf_str(&out), "Deployment/sd"));
    int64_t samples = status_int("deployment-sd", "usage", "samples");
    int64_t memory = status_int("deployment-sd", "recommendation", "memoryMiB");
    assert_true(samples > 40);
    OK(&out, NULL, "delete", "pods", "-n", SHARE_SYSTEM_NS, "-l", "app.kubernetes.io/component=operator");
    OK(&out, NULL, "rollout", "status", "deployment/fracgpu-operator", "-n", SHARE_SYSTEM_NS, "--timeout=120s");
    /* the new leader's first writes continue the count (a history started afresh would count from 0,
     * and would have no recommendation for minHistory) */
    struct want_status more = { "deployment-sd", "usage", "samples", samples + 8 };
    if (!share_eventually(status_reaches, &more, 60))
        share_show_and_fail(&e.sim, "the new leader does not add to the history");
    assert_true(status_int("deployment-sd", "recommendation", "memoryMiB") >= memory);
    assert_true(status_int("deployment-sd", "recommendation", "computeMilli") > 0);
    OK(&out, NULL, "get", "gpuworkloads", "-n", NS);
    printf("%s", fg_buf_str(&out));
    fg_buf_cleanup(&out);
}

/* ---- 7. the workload deleted and created again ---- */

static bool gone(void *ud)
{
    json_object *o = gpuworkload(ud);
    json_object_put(o);
    return !o;
}

static void test_recreated_keeps_history(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    int64_t samples = status_int("deployment-sd", "usage", "samples");
    OK(&out, NULL, "delete", "deployment", "sd", "-n", NS);
    if (!share_eventually(gone, "deployment-sd", 60))
        share_show_and_fail(&e.sim, "the GPUWorkload did not go with its Deployment");
    OK(&out, NULL, "get", "gpucheckpoint", "deployment-sd", "-n", NS, "-o", "jsonpath={.status.samples}");
    assert_true(atoll(fg_buf_str(&out)) >= samples - 8);   /* saved every 2 s: at most one save behind */
    OK(&out, APP("sd", "4", "e2e-auto", "60", "6Gi", ""), "apply", "-f", "-");
    /* a history started afresh would take minutes of four pods' samples to count this many */
    struct want_status more = { "deployment-sd", "usage", "samples", samples };
    if (!share_eventually(status_reaches, &more, 30))
        share_show_and_fail(&e.sim, "the recreated workload's history did not continue from its GPUCheckpoint");
    assert_true(status_int("deployment-sd", "recommendation", "memoryMiB") >= 6144);
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),
        cmocka_unit_test(test_whole_first),
        cmocka_unit_test(test_rightsized),
        cmocka_unit_test(test_usage_jump),
        cmocka_unit_test(test_oom_kill),
        cmocka_unit_test(test_restart_keeps_history),
        cmocka_unit_test(test_recreated_keeps_history),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
