/*
 * e2e_sim_share — GPUs shared for real: fracgpu's scheduler and capacity pods on a simulated cluster
 * (testdata/share-e2e.yaml: one GPU node of four GPUs, room for two more that the autoscaler adds and
 * removes), driven by the machine's real kubectl, with real node agents and capacity holders:
 *   1. `kubectl apply -k manifests/` installs fracgpu; the operator's capacity idle grace is set to 3 s
 *      with `kubectl patch`;
 *   2. nine pods of a Deployment with a manual fraction of 300 milli (and 10 GiB) run on three GPUs,
 *      each held by one capacity pod, all on the one node there is;
 *   3. a pod whose CPU fits no node waits WaitingForCapacity; its capacity pod, reserving that CPU,
 *      makes the autoscaler add a node; the pod runs there once the capacity pod was shrunk;
 *   4. when that pod leaves, its capacity pod goes after the grace period and the autoscaler removes
 *      the empty node;
 *   5. a real-time-mps workload gets a GPU of its own, held by an mps capacity pod;
 *   6. a busy GPU's capacity pod deleted by hand: its tenants are evicted and their replacements
 *      placed again, on a GPU that is held;
 *   7. the operator's pods deleted: the new leader rebuilds everything from the pods, moves nothing
 *      and creates no capacity pod; `kubectl get gpuworkloads` shows the llm Deployment's 9 GPUs
 *      before and 2.7 after (consolidation runs every 2 s, and moves none of these pods: their
 *      policies are not updateMode Auto);
 *   8. consolidation: under batch (Auto), two 600-milli pods hold a GPU each and a 300-milli pod
 *      shares one; when the big pod beside it leaves, the small pod is evicted and its replacement
 *      placed on the other big pod's GPU, whose pod is not touched, and the emptied GPU is given back;
 *   9. every metric that monitoring/alerts.yaml and monitoring/dashboard.json query is in the /metrics
 *      of the operator's replicas or the node agents, and every dashboard panel has a query;
 *  10. `kubectl fracgpu gpus -o json`, run through the real kubectl as a plugin on the PATH, lists
 *      every GPU of every node, and each GPU the checker sees tenants on with the same tenants and
 *      compute; `workloads` and `explain POD` say what they should.
 * All along, an independent checker (e2e/checker) watches every pod and asserts after each event that
 * no GPU's tenants exceed its compute or memory and that no tenant runs without its capacity pod.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/test/share_fixture.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/simcluster.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"

#define NS "team"

static struct share_env e;

#define OK(out, stdin_text, ...) SHARE_OK(&e, out, stdin_text, __VA_ARGS__)

/* A Deployment asking for whole GPUs, automated (its template labelled as the operator would label
 * it, so that even its first pods are mutated), with a fixed fraction and the CPU asked. */
#define FRACTION_APP(name, replicas, milli, memory, extra_ann, cpu)                                          \
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " name "\n  namespace: " NS "\n"                 \
    "  annotations: {fracgpu.io/automate: \"true\", fracgpu.io/gpu-compute: \"" milli "\", "                   \
    "fracgpu.io/gpu-memory: " memory extra_ann "}\n"                                                           \
    "spec:\n  replicas: " replicas "\n  selector:\n    matchLabels: {app: " name "}\n  template:\n"             \
    "    metadata:\n      labels: {app: " name ", fracgpu.io/automate: \"true\"}\n    spec:\n"                  \
    "      containers:\n        - name: main\n          image: registry.example.com/vllm:1\n"                  \
    "          resources: {requests: {cpu: " cpu ", memory: 256Mi}, limits: {nvidia.com/gpu: \"1\"}}\n"
#define SHARED_APP(name, replicas, extra_ann, cpu) FRACTION_APP(name, replicas, "300", "10Gi", extra_ann, cpu)

static bool nodes_are(void *ud)
{
    return share_nodes(&e.sim) == *(size_t *)ud;
}

static size_t capacity_pods(void)
{
    return share_capacity_pods(&e.sim, NULL);
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    return share_setup(&e, "share-e2e.yaml", "e2e_sim_share");
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
    static const char *const args[] = { "--capacity-idle-grace=3s", "--consolidation-interval=2s", NULL };
    share_install(&e, args, 1, NS);
}

/* ---- 2. nine pods, three GPUs ---- */

static void test_nine_on_three(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, SHARED_APP("llm", "9", "", "100m"), "apply", "-f", "-");
    struct share_want_running w = { &e.sim, NS, "llm", 9 };
    if (!share_eventually(share_all_running, &w, 120))
        share_show_and_fail(&e.sim, "the nine llm pods do not all run");
    struct share_app v;
    share_app(&e.sim, NS, "llm", &v);
    const char *caps[16], *nodes_used[16];
    for (size_t i = 0; i < v.n; i++) {
        assert_string_equal(fg_json_get_str(v.pods[i], "spec", "schedulerName", NULL), FG_SCHEDULER_NAME);
        assert_string_equal(share_ann(v.pods[i], FG_ANN_COMPUTE_MILLI), "300");
        assert_non_null(share_ann(v.pods[i], FG_ANN_GRANT));
    }
    assert_int_equal(share_distinct(&v, FG_ANN_CAPACITY_POD, caps), 3);
    assert_int_equal(share_distinct(&v, FG_ANN_GPU_UUID, caps), 3);
    size_t k = 0;
    for (size_t i = 0; i < v.n; i++) {
        const char *node = fg_json_get_str(v.pods[i], "spec", "nodeName", NULL);
        bool seen = false;
        for (size_t j = 0; j < k; j++)
            seen = seen || !strcmp(nodes_used[j], node);
        if (!seen)
            nodes_used[k++] = node;
    }
    assert_int_equal(k, 1);   /* the fewest nodes: the one there is */
    share_app_cleanup(&v);
    assert_int_equal(capacity_pods(), 3);
    assert_int_equal(share_nodes(&e.sim), 1);
    OK(&out, NULL, "get", "pods", "-n", SHARE_SYSTEM_NS, "-l", FG_LABEL_ROLE "=" FG_ROLE_CAPACITY, "-o",
       "jsonpath={.items[*].spec.priorityClassName}");
    assert_string_equal(fg_buf_str(&out), "fracgpu-capacity fracgpu-capacity fracgpu-capacity");
    fg_buf_cleanup(&out);
}

/* ---- 3. a new node for a pod that fits nowhere ---- */

static bool waiting_for_capacity(void *ud)
{
    (void)ud;
    struct share_app v;
    share_app(&e.sim, NS, "wide", &v);
    bool ok = false;
    for (size_t i = 0; i < v.n; i++)
        ok = ok || share_sched_reason(v.pods[i], "WaitingForCapacity");
    share_app_cleanup(&v);
    return ok;
}

static void test_scale_up(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, SHARED_APP("wide", "1", "", "\"7\""), "apply", "-f", "-");
    if (!share_eventually(waiting_for_capacity, NULL, 30))
        share_show_and_fail(&e.sim, "the wide pod never waited WaitingForCapacity");
    struct share_want_running w = { &e.sim, NS, "wide", 1 };
    if (!share_eventually(share_all_running, &w, 120))
        share_show_and_fail(&e.sim, "the wide pod does not run on a new node");
    size_t two = 2;
    assert_true(nodes_are(&two));
    struct share_app v;
    share_app(&e.sim, NS, "wide", &v);
    const char *node = fg_json_get_str(v.pods[0], "spec", "nodeName", NULL);
    const char *cap = share_ann(v.pods[0], FG_ANN_CAPACITY_POD);
    assert_non_null(cap);
    /* its capacity pod reserved the 7 CPUs, then gave them to it: shrunk back to the holder's own */
    OK(&out, NULL, "get", "pod", cap, "-n", SHARE_SYSTEM_NS, "-o",
       "jsonpath={.spec.nodeName} {.spec.containers[0].resources.requests.cpu}");
    char want[256];
    snprintf(want, sizeof want, "%s 10m", node);
    assert_string_equal(fg_buf_str(&out), want);
    share_app_cleanup(&v);
    fg_buf_cleanup(&out);
}

/* ---- 4. given back ---- */

static bool capacity_is(void *ud)
{
    return capacity_pods() == *(size_t *)ud;
}

static void test_give_back(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "delete", "deployment", "wide", "-n", NS);
    size_t three = 3, one = 1;
    if (!share_eventually(capacity_is, &three, 30))
        share_show_and_fail(&e.sim, "the idle capacity pod was not given back");
    if (!share_eventually(nodes_are, &one, 60))
        share_show_and_fail(&e.sim, "the autoscaler did not remove the empty node");
    fg_buf_cleanup(&out);
}

/* ---- 5. real-time-mps: a GPU of its own ---- */

static void test_mps_dedicated(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, SHARED_APP("rt", "2", ", fracgpu.io/policy: real-time-mps", "100m"), "apply", "-f", "-");
    struct share_want_running w = { &e.sim, NS, "rt", 2 };
    if (!share_eventually(share_all_running, &w, 120))
        share_show_and_fail(&e.sim, "the real-time-mps pods do not run");
    struct share_app v, llm;
    share_app(&e.sim, NS, "rt", &v);
    share_app(&e.sim, NS, "llm", &llm);
    const char *caps[16], *llm_caps[16];
    size_t n = share_distinct(&v, FG_ANN_CAPACITY_POD, caps), m = share_distinct(&llm, FG_ANN_CAPACITY_POD, llm_caps);
    assert_int_equal(n, 1);
    for (size_t j = 0; j < m; j++)
        assert_string_not_equal(caps[0], llm_caps[j]);   /* no other workload on its GPU */
    assert_string_equal(share_ann(v.pods[0], FG_ANN_SHARING), "mps");
    OK(&out, NULL, "get", "pod", caps[0], "-n", SHARE_SYSTEM_NS, "-o",
       "jsonpath={.metadata.annotations.fracgpu\\.io/sharing}");
    assert_string_equal(fg_buf_str(&out), "mps");
    share_app_cleanup(&v);
    share_app_cleanup(&llm);
    fg_buf_cleanup(&out);
}

/* ---- 6. a busy GPU's capacity pod deleted by hand ---- */

struct replaced {
    char uids[3][64];
    size_t n;
};

static bool replaced_and_running(void *ud)
{
    struct replaced *r = ud;
    struct share_app v;
    share_app(&e.sim, NS, "llm", &v);
    bool ok = v.n == 9 && v.running == 9;
    for (size_t i = 0; ok && i < v.n; i++)
        for (size_t j = 0; j < r->n; j++)
            ok = ok && !fg_str_eq(fg_json_get_str(v.pods[i], "metadata", "uid", NULL), r->uids[j]);
    share_app_cleanup(&v);
    return ok;
}

static void test_capacity_lost(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    struct share_app v;
    share_app(&e.sim, NS, "llm", &v);
    const char *cap = share_ann(v.pods[0], FG_ANN_CAPACITY_POD);
    char victim[128];
    snprintf(victim, sizeof victim, "%s", cap);
    struct replaced r = { .n = 0 };
    for (size_t i = 0; i < v.n; i++)
        if (fg_str_eq(share_ann(v.pods[i], FG_ANN_CAPACITY_POD), victim) && r.n < 3)
            snprintf(r.uids[r.n++], sizeof r.uids[0], "%s", fg_json_get_str(v.pods[i], "metadata", "uid", NULL));
    share_app_cleanup(&v);
    assert_int_equal(r.n, 3);
    OK(&out, NULL, "get", "pod", victim, "-n", SHARE_SYSTEM_NS, "-o", "jsonpath={.metadata.uid}");
    char victim_uid[64];
    snprintf(victim_uid, sizeof victim_uid, "%s", fg_buf_str(&out));
    OK(&out, NULL, "delete", "pod", victim, "-n", SHARE_SYSTEM_NS, "--wait=false");
    if (!share_eventually(replaced_and_running, &r, 120))
        share_show_and_fail(&e.sim, "the tenants of the deleted capacity pod were not evicted and placed again");
    /* the replacements run on GPUs held now: a capacity pod made again under the same name is another pod */
    share_app(&e.sim, NS, "llm", &v);
    for (size_t i = 0; i < v.n; i++) {
        OK(&out, NULL, "get", "pod", share_ann(v.pods[i], FG_ANN_CAPACITY_POD), "-n", SHARE_SYSTEM_NS, "-o", "jsonpath={.metadata.uid}");
        assert_string_not_equal(fg_buf_str(&out), victim_uid);
    }
    share_app_cleanup(&v);
    fg_buf_cleanup(&out);
}

/* ---- 7. the operator restarted ---- */

static char *placements(void)
{
    struct fg_buf b;
    fg_buf_init(&b, 0);
    const char *apps[] = { "llm", "rt" };
    for (size_t a = 0; a < 2; a++) {
        struct share_app v;
        share_app(&e.sim, NS, apps[a], &v);
        for (size_t i = 0; i < v.n; i++)
            if (fg_buf_printf(&b, "%s %s %s\n", fg_json_get_str(v.pods[i], "metadata", "name", NULL),
                           share_ann(v.pods[i], FG_ANN_CAPACITY_POD), share_ann(v.pods[i], FG_ANN_GPU_INDEX)) != FG_OK)
                fail();
        share_app_cleanup(&v);
    }
    return fg_buf_take(&b);
}

static void test_restart(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    char *before = placements();
    size_t caps = capacity_pods();
    OK(&out, NULL, "delete", "pods", "-n", SHARE_SYSTEM_NS, "-l", "app.kubernetes.io/component=operator");
    OK(&out, NULL, "rollout", "status", "deployment/fracgpu-operator", "-n", SHARE_SYSTEM_NS, "--timeout=120s");
    nanosleep(&(struct timespec){ 5, 0 }, NULL);   /* a new leader's first passes and ticks */
    char *after = placements();
    assert_string_equal(before, after);
    assert_int_equal(capacity_pods(), caps);
    OK(&out, NULL, "get", "gpuworkloads", "-n", NS);
    assert_non_null(strstr(fg_buf_str(&out), "deployment-llm"));
    printf("%s", fg_buf_str(&out));
    /* nine pods that asked for a GPU each hold 300 milli of one: 9 GPUs before, 2.7 after */
    OK(&out, NULL, "get", "gpuworkload", "deployment-llm", "-n", NS, "-o",
       "jsonpath={.status.gpusBefore} {.status.gpusAfter} {.status.gpusSaved}");
    assert_string_equal(fg_buf_str(&out), "9 2.7 6.3");
    free(before);
    free(after);
    fg_buf_cleanup(&out);
}

/* ---- 8. consolidation: a GPU emptied onto another ---- */

#define BATCH ", fracgpu.io/policy: batch"   /* updateMode Auto: fracgpu may move its pods */

/* The one live pod of app: its uid and capacity pod into uid and cap; false unless exactly one runs. */
static bool one_pod(const char *app, char uid[64], char cap[128])
{
    struct share_app v;
    share_app(&e.sim, NS, app, &v);
    bool ok = v.n == 1 && v.running == 1 && share_ann(v.pods[0], FG_ANN_CAPACITY_POD);
    if (ok) {
        snprintf(uid, 64, "%s", fg_json_get_str(v.pods[0], "metadata", "uid", NULL));
        snprintf(cap, 128, "%s", share_ann(v.pods[0], FG_ANN_CAPACITY_POD));
    }
    share_app_cleanup(&v);
    return ok;
}

struct moved {
    const char *old_uid, *onto;
};

/* small runs again as another pod, on the capacity pod `onto`. */
static bool small_moved(void *ud)
{
    const struct moved *m = ud;
    char uid[64], cap[128];
    return one_pod("small", uid, cap) && strcmp(uid, m->old_uid) && !strcmp(cap, m->onto);
}

static void test_consolidation(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "delete", "deployment", "llm", "rt", "-n", NS);
    size_t zero = 0;
    if (!share_eventually(capacity_is, &zero, 60))
        share_show_and_fail(&e.sim, "the capacity pods of the deleted Deployments were not given back");
    /* two pods of 600 milli need a GPU each; a third of 300 milli shares one of them */
    OK(&out, FRACTION_APP("big-a", "1", "600", "20Gi", BATCH, "100m") "---\n"
             FRACTION_APP("big-b", "1", "600", "20Gi", BATCH, "100m"), "apply", "-f", "-");
    struct share_want_running wa = { &e.sim, NS, "big-a", 1 }, wb = { &e.sim, NS, "big-b", 1 };
    if (!share_eventually(share_all_running, &wa, 120) || !share_eventually(share_all_running, &wb, 120))
        share_show_and_fail(&e.sim, "the two 600-milli pods do not run");
    OK(&out, FRACTION_APP("small", "1", "300", "10Gi", BATCH, "100m"), "apply", "-f", "-");
    struct share_want_running ws = { &e.sim, NS, "small", 1 };
    if (!share_eventually(share_all_running, &ws, 120))
        share_show_and_fail(&e.sim, "the 300-milli pod does not run");
    char small_uid[64], small_cap[128], a_uid[64], a_cap[128], b_uid[64], b_cap[128];
    assert_true(one_pod("small", small_uid, small_cap));
    assert_true(one_pod("big-a", a_uid, a_cap));
    assert_true(one_pod("big-b", b_uid, b_cap));
    assert_string_not_equal(a_cap, b_cap);
    assert_int_equal(capacity_pods(), 2);
    /* the big pod beside small leaves: small (300 milli, 10 GiB) and the other big pod (600, 20 GiB)
     * are alone on a GPU each, and both fit on one */
    bool beside_a = !strcmp(small_cap, a_cap);
    assert_true(beside_a || !strcmp(small_cap, b_cap));
    OK(&out, NULL, "delete", "deployment", beside_a ? "big-a" : "big-b", "-n", NS);
    const char *stays_uid = beside_a ? b_uid : a_uid, *stays_cap = beside_a ? b_cap : a_cap;
    /* consolidation moves small, the GPU with less memory allocated, onto the other big pod's GPU */
    struct moved m = { small_uid, stays_cap };
    if (!share_eventually(small_moved, &m, 120))
        share_show_and_fail(&e.sim, "consolidation did not move the small pod onto the other GPU");
    size_t one = 1;
    if (!share_eventually(capacity_is, &one, 60))
        share_show_and_fail(&e.sim, "the emptied GPU's capacity pod was not given back");
    char uid[64], cap[128];
    assert_true(one_pod(beside_a ? "big-b" : "big-a", uid, cap));
    assert_string_equal(uid, stays_uid);   /* the pod that stayed was not touched */
    assert_string_equal(cap, stays_cap);
    OK(&out, NULL, "get", "pods", "-n", NS, "-l", "app=small", "-o",
       "jsonpath={.items[0].metadata.annotations.fracgpu\\.io/update-mode}");
    assert_string_equal(fg_buf_str(&out), "Auto");
    fg_buf_cleanup(&out);
}

/* ---- 9. every metric the dashboard and the alerts query exists ---- */

#define MAX_NAMES 128

/* The fracgpu_* names text mentions, each once, into names; returns how many. */
static size_t metric_names(const char *text, char names[MAX_NAMES][96])
{
    size_t n = 0;
    for (const char *at = strstr(text, "fracgpu_"); at; at = strstr(at, "fracgpu_")) {
        size_t len = strspn(at, "abcdefghijklmnopqrstuvwxyz0123456789_");
        bool seen = len >= 96;
        for (size_t i = 0; i < n && !seen; i++)
            seen = strlen(names[i]) == len && !strncmp(names[i], at, len);
        if (!seen) {
            assert_true(n < MAX_NAMES);
            snprintf(names[n++], 96, "%.*s", (int)len, at);
        }
        at += len;
    }
    return n;
}

/* Whether a /metrics body has family name: its TYPE line, or for a histogram's _bucket, _sum or _count
 * series the histogram's. */
static bool exposed(const char *metrics, const char *name)
{
    char line[160];
    snprintf(line, sizeof line, "# TYPE %s ", name);
    if (strstr(metrics, line))
        return true;
    static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
    size_t len = strlen(name);
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && !strcmp(name + len - sl, suffixes[i])) {
            snprintf(line, sizeof line, "# TYPE %.*s histogram", (int)(len - sl), name);
            if (strstr(metrics, line))
                return true;
        }
    }
    return false;
}

/* Appends the /metrics of every fracgpu-system pod with the component label to all; returns how many. */
static size_t scrape(const char *component, unsigned port, struct fg_buf *all)
{
    struct fg_buf out, body;
    fg_buf_init(&out, 0);
    fg_buf_init(&body, 0);
    char selector[96];
    snprintf(selector, sizeof selector, "app.kubernetes.io/component=%s", component);
    OK(&out, NULL, "get", "pods", "-n", SHARE_SYSTEM_NS, "-l", selector, "-o", "jsonpath={.items[*].status.podIP}");
    size_t n = 0;
    char *ips = fg_strdup(fg_buf_str(&out)), *save = NULL;
    for (char *ip = strtok_r(ips, " ", &save); ip; ip = strtok_r(NULL, " ", &save)) {
        long code = fg_harness_http(ip, port, "GET", "/metrics", &body);
        if (code != 200)
            fail_msg("GET http://%s:%u/metrics (%s): %ld", ip, port, component, code);
        fg_buf_put_str(all, fg_buf_str(&body));
        n++;
    }
    free(ips);
    fg_buf_cleanup(&out);
    fg_buf_cleanup(&body);
    return n;
}

static void test_monitoring(void **state)
{
    (void)state;
    struct fg_buf metrics, file;
    fg_buf_init(&metrics, 0);
    fg_buf_init(&file, 0);
    assert_true(scrape("operator", 8080, &metrics) >= 1);
    assert_true(scrape("node-agent", 9402, &metrics) >= 1);
    static const char *const files[] = { "monitoring/alerts.yaml", "monitoring/dashboard.json" };
    size_t checked = 0;
    for (size_t f = 0; f < 2; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", getenv("FG_SOURCE_DIR"), files[f]);
        fg_buf_reset(&file);   /* read_file appends */
        assert_int_equal(fg_buf_read_file(&file, path, NULL), FG_OK);
        if (f == 1) {   /* the dashboard: JSON whose every panel queries something */
            json_object *d = json_tokener_parse(fg_buf_str(&file));
            assert_non_null(d);
            json_object *panels = fg_json_get(d, "panels", NULL);
            assert_true(fg_json_array_len(panels) > 10);
            for (size_t i = 0; i < fg_json_array_len(panels); i++) {
                json_object *p = json_object_array_get_idx(panels, i);
                if (fg_str_eq(fg_json_get_str(p, "type", NULL), "row"))
                    continue;
                json_object *targets = fg_json_get(p, "targets", NULL);
                assert_true(fg_json_array_len(targets) > 0);
                for (size_t t = 0; t < fg_json_array_len(targets); t++)
                    assert_true(strlen(fg_json_get_str(json_object_array_get_idx(targets, t), "expr", NULL)) > 0);
            }
            json_object_put(d);
        }
        char names[MAX_NAMES][96];
        size_t n = metric_names(fg_buf_str(&file), names);
        assert_true(n > 5);
        for (size_t i = 0; i < n; i++, checked++)
            if (!exposed(fg_buf_str(&metrics), names[i]))
                fail_msg("%s queries %s, which neither the operator nor a node agent exposes", files[f], names[i]);
    }
    printf("monitoring: %zu metric names queried, every one exposed\n", checked);
    fg_buf_cleanup(&metrics);
    fg_buf_cleanup(&file);
}

/* ---- 10. kubectl fracgpu agrees with the checker ---- */

/* Runs `kubectl fracgpu ARGS` as a user would (the plugin found on the PATH, the cluster from
 * $KUBECONFIG) into out; returns its exit status. */
static int plugin(struct fg_buf *out, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "KUBECONFIG='%s' KUBECACHEDIR='%s/plugin-cache' PATH='%s':\"$PATH\" timeout 30 kubectl fracgpu %s 2>&1",
             e.sim.kubeconfig, e.sim.dir, getenv("FG_BIN_DIR"), args);
    return fg_buf_run_command(out, cmd);
}

struct agreement {
    json_object *items;         /* the plugin's GPUs */
    size_t checked;
};

/* The checker's GPU g must be the plugin's: same node and UUID, same tenants and compute. */
static void agrees(void *ud, const struct fg_checker_gpu *g)
{
    struct agreement *a = ud;
    for (size_t i = 0; i < json_object_array_length(a->items); i++) {
        json_object *it = json_object_array_get_idx(a->items, i);
        if (!fg_str_eq(fg_json_get_str(it, "node", NULL), g->node) || !fg_str_eq(fg_json_get_str(it, "uuid", NULL), g->uuid))
            continue;
        int64_t milli = -1;
        fg_json_get_int64(it, &milli, "allocated", "computeMilli", NULL);
        if ((size_t)json_object_array_length(fg_json_get(it, "tenants", NULL)) != g->tenants || milli != g->compute_milli)
            fail_msg("GPU %s/%s: the checker sees %zu tenants and %lld milli, kubectl fracgpu %zu and %lld", g->node,
                     g->uuid, g->tenants, (long long)g->compute_milli,
                     json_object_array_length(fg_json_get(it, "tenants", NULL)), (long long)milli);
        a->checked++;
        return;
    }
    fail_msg("the checker's GPU %s/%s (%zu tenants) is not in kubectl fracgpu gpus", g->node, g->uuid, g->tenants);
}

static void test_kubectl_plugin(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    if (plugin(&out, "gpus -o json") != 0)
        fail_msg("kubectl fracgpu gpus -o json: %s", fg_buf_str(&out));
    json_object *list = json_tokener_parse(fg_buf_str(&out));
    if (!list)
        fail_msg("kubectl fracgpu gpus -o json is not JSON: %s", fg_buf_str(&out));
    struct agreement a = { fg_json_get(list, "items", NULL), 0 };
    fg_checker_gpus(e.checker, agrees, &a);
    assert_true(a.checked >= 1);
    /* every GPU of every node is listed, held or not */
    size_t with_tenants = 0;
    for (size_t i = 0; i < json_object_array_length(a.items); i++)
        with_tenants += json_object_array_length(fg_json_get(json_object_array_get_idx(a.items, i), "tenants", NULL)) > 0;
    assert_int_equal(with_tenants, a.checked);
    OK(&out, NULL, "get", "nodes", "-o", "jsonpath={.items[*].status.allocatable.nvidia\\.com/gpu}");
    size_t gpus = 0;
    for (char *s = (char *)fg_buf_str(&out), *end; *s; s = end) {
        gpus += (size_t)strtoul(s, &end, 10);
        if (end == s)
            break;
    }
    assert_int_equal(json_object_array_length(a.items), gpus);
    printf("kubectl fracgpu gpus: %zu GPUs, %zu with tenants, each as the checker sees it\n", gpus, a.checked);
    json_object_put(list);

    /* the table, the workloads and one pod explained */
    assert_int_equal(plugin(&out, "gpus"), 0);
    assert_non_null(strstr(fg_buf_str(&out), "CAPACITY-POD"));
    assert_int_equal(plugin(&out, "workloads -n " NS), 0);
    assert_non_null(strstr(fg_buf_str(&out), "deployment-small"));
    assert_non_null(strstr(fg_buf_str(&out), "GPUs before"));
    struct share_app v;
    share_app(&e.sim, NS, "small", &v);
    assert_int_equal(v.n, 1);
    char args[256];
    snprintf(args, sizeof args, "explain %s -n " NS, fg_json_get_str(v.pods[0], "metadata", "name", NULL));
    char cap[128];
    snprintf(cap, sizeof cap, "held by capacity pod " SHARE_SYSTEM_NS "/%s", share_ann(v.pods[0], FG_ANN_CAPACITY_POD));
    share_app_cleanup(&v);
    assert_int_equal(plugin(&out, args), 0);
    if (!strstr(fg_buf_str(&out), cap) || !strstr(fg_buf_str(&out), "Update mode: Auto"))
        fail_msg("kubectl fracgpu %s: %s", args, fg_buf_str(&out));
    assert_int_equal(plugin(&out, "explain no-such-pod -n " NS), 1);
    assert_non_null(strstr(fg_buf_str(&out), "pods \"no-such-pod\" not found"));
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),      cmocka_unit_test(test_nine_on_three), cmocka_unit_test(test_scale_up),
        cmocka_unit_test(test_give_back),    cmocka_unit_test(test_mps_dedicated), cmocka_unit_test(test_capacity_lost),
        cmocka_unit_test(test_restart),      cmocka_unit_test(test_consolidation), cmocka_unit_test(test_monitoring),
        cmocka_unit_test(test_kubectl_plugin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
