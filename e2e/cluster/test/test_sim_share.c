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
 *      and creates no capacity pod.
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
#include <time.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/checker/checker.h"
#include "e2e/tests/simcluster.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"

#define NS "team"
#define SYSTEM_NS "fracgpu-system"

static struct {
    struct fg_simcluster sim;
    struct fg_checker *checker;
    uint64_t start_ns;
} e;

#define OK(out, stdin_text, ...)                                                                     \
    do {                                                                                             \
        int rc_ = fg_kubectl_run(&e.sim.k, out, stdin_text, __VA_ARGS__, NULL);                      \
        if (rc_ != 0)                                                                                \
            fail_msg("kubectl %s: exit %d\n%s", #__VA_ARGS__, rc_, fg_buf_str(out));                \
    } while (0)

/* A Deployment asking for whole GPUs, automated (its template labelled as the operator would label
 * it, so that even its first pods are mutated), with a fixed fraction and the CPU asked. */
#define SHARED_APP(name, replicas, extra_ann, cpu)                                                           \
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " name "\n  namespace: " NS "\n"                 \
    "  annotations: {fracgpu.io/automate: \"true\", fracgpu.io/gpu-compute: \"300\", "                         \
    "fracgpu.io/gpu-memory: 10Gi" extra_ann "}\n"                                                              \
    "spec:\n  replicas: " replicas "\n  selector:\n    matchLabels: {app: " name "}\n  template:\n"             \
    "    metadata:\n      labels: {app: " name ", fracgpu.io/automate: \"true\"}\n    spec:\n"                  \
    "      containers:\n        - name: main\n          image: registry.example.com/vllm:1\n"                  \
    "          resources: {requests: {cpu: " cpu ", memory: 256Mi}, limits: {nvidia.com/gpu: \"1\"}}\n"

static json_object *list(const struct fg_kube_resource *res, const char *ns, const char *selector)
{
    struct fg_buf q;
    fg_buf_init(&q, 0);
    if (selector && fg_kube_query_add(&q, "labelSelector", selector) != FG_OK)
        fail();
    char *path = fg_kube_path(res, ns, NULL, NULL, selector ? fg_buf_str(&q) : NULL);
    fg_buf_cleanup(&q);
    json_object *l = NULL;
    enum fg_err err = fg_kube_get(e.sim.client, path, &l, NULL);
    free(path);
    return err ? NULL : l;
}

static bool ready(json_object *p)
{
    json_object *conds = fg_json_get(p, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "Ready"))
            return fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
    }
    return false;
}

static bool live(json_object *p)
{
    return !fg_json_get(p, "metadata", "deletionTimestamp", NULL) &&
           !fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Failed") &&
           !fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Succeeded");
}

static const char *ann(json_object *p, const char *key)
{
    return fg_json_get_str(p, "metadata", "annotations", key, NULL);
}

/* The live pods of app (ns NS), and how many of them run Ready. */
struct app_view {
    json_object *l;
    json_object *pods[64];
    size_t n, running;
};

static void app_view(const char *app, struct app_view *v)
{
    char sel[128];
    snprintf(sel, sizeof sel, "app=%s", app);
    memset(v, 0, sizeof(*v));
    v->l = list(&fg_kube_pods, NS, sel);
    json_object *items = fg_json_get(v->l, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items) && v->n < 64; i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (!live(p))
            continue;
        v->pods[v->n++] = p;
        v->running += fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") && ready(p);
    }
}

static void app_view_cleanup(struct app_view *v)
{
    json_object_put(v->l);
}

struct want_running {
    const char *app;
    size_t n;
};

static bool all_running(void *ud)
{
    struct want_running *w = ud;
    struct app_view v;
    app_view(w->app, &v);
    bool ok = v.n == w->n && v.running == w->n;
    app_view_cleanup(&v);
    return ok;
}

/* Capacity pods not being deleted. */
static size_t capacity_pods(void)
{
    json_object *l = list(&fg_kube_pods, SYSTEM_NS, FG_LABEL_ROLE "=" FG_ROLE_CAPACITY);
    size_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(fg_json_get(l, "items", NULL)); i++)
        n += live(json_object_array_get_idx(fg_json_get(l, "items", NULL), i));
    json_object_put(l);
    return n;
}

static size_t nodes(void)
{
    json_object *l = list(&fg_kube_nodes, NULL, NULL);
    size_t n = fg_json_array_len(fg_json_get(l, "items", NULL));
    json_object_put(l);
    return n;
}

static bool nodes_are(void *ud)
{
    return nodes() == *(size_t *)ud;
}

static bool eventually(bool (*cond)(void *), void *ud, unsigned timeout_s)
{
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_s * FG_NS_PER_S;
    while (!cond(ud)) {
        if (fg_clock_mono_ns() > deadline)
            return false;
        nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
    }
    return true;
}

static void show_and_fail(const char *what)
{
    struct fg_buf out;
    fg_buf_init(&out, 0);
    fg_kubectl_run(&e.sim.k, &out, NULL, "get", "pods,nodes", "-A", "-o", "wide", NULL);
    fail_msg("%s\n%s", what, fg_buf_str(&out));
}

/* The distinct values of annotation key among v's pods (at most 16), into names; returns how many. */
static size_t distinct(struct app_view *v, const char *key, const char *names[16])
{
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++) {
        const char *s = ann(v->pods[i], key);
        bool seen = !s;
        for (size_t j = 0; j < k && !seen; j++)
            seen = !strcmp(names[j], s);
        if (!seen && k < 16)
            names[k++] = s;
    }
    return k;
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    e.start_ns = fg_clock_mono_ns();
    char config[512], msg[FG_ERRMSG_MAX] = "";
    snprintf(config, sizeof config, "%s/e2e/cluster/testdata/share-e2e.yaml", getenv("FG_SOURCE_DIR"));
    if (fg_simcluster_start(&e.sim, config, NULL, 90, msg) != FG_OK) {
        fprintf(stderr, "cannot start the simulated cluster: %s\n", msg);
        return -1;
    }
    e.sim.k.timeout_s = 150;
    struct fg_checker_opts o = FG_CHECKER_OPTS_DEFAULT;
    o.grace_ms = 10000;
    if (fg_checker_start(e.sim.kubeconfig, &o, &e.checker, msg) != FG_OK || !fg_checker_wait_synced(e.checker, 30000)) {
        fprintf(stderr, "cannot start the sharing checker: %s\n", msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    int rc = 0;
    if (e.checker) {
        fg_checker_stop(e.checker);
        char *summary = fg_checker_summary(e.checker);
        printf("%s\n", summary);
        free(summary);
        struct fg_checker_stats s;
        fg_checker_stats(e.checker, &s);
        for (size_t i = 0; i < 8; i++) {
            char *m = fg_checker_message(e.checker, i);
            if (!m)
                break;
            fprintf(stderr, "checker: %s\n", m);
            free(m);
        }
        rc = s.violations ? -1 : 0;
        fg_checker_free(e.checker);
    }
    size_t reports = fg_simcluster_sanitizer_reports(&e.sim);
    fg_simcluster_stop(&e.sim, reports > 0 || rc);
    printf("e2e_sim_share: %.1f s in all\n", (double)(fg_clock_mono_ns() - e.start_ns) / 1e9);
    return reports || rc ? -1 : 0;
}

/* ---- 1. install ---- */

static bool agents_ready(void *ud)
{
    size_t want = *(size_t *)ud, n = 0;
    json_object *l = list(&fg_kube_pods, SYSTEM_NS, "app.kubernetes.io/component=node-agent");
    for (size_t i = 0; i < fg_json_array_len(fg_json_get(l, "items", NULL)); i++) {
        json_object *p = json_object_array_get_idx(fg_json_get(l, "items", NULL), i);
        n += live(p) && ready(p);
    }
    json_object_put(l);
    return n == want;
}

static void test_install(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    char manifests[512];
    snprintf(manifests, sizeof manifests, "%s/manifests", getenv("FG_SOURCE_DIR"));
    OK(&out, NULL, "apply", "-k", manifests);
    if (fg_simcluster_operator_arg(&e.sim, "--capacity-idle-grace=3s", &out) != 0)
        fail_msg("cannot set the capacity idle grace: %s", fg_buf_str(&out));
    size_t one = 1;
    if (!eventually(agents_ready, &one, 60))
        show_and_fail("the node agent is not Ready on the GPU node");
    OK(&out, NULL, "create", "namespace", NS);
    fg_buf_cleanup(&out);
}

/* ---- 2. nine pods, three GPUs ---- */

static void test_nine_on_three(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, SHARED_APP("llm", "9", "", "100m"), "apply", "-f", "-");
    struct want_running w = { "llm", 9 };
    if (!eventually(all_running, &w, 120))
        show_and_fail("the nine llm pods do not all run");
    struct app_view v;
    app_view("llm", &v);
    const char *caps[16], *nodes_used[16];
    for (size_t i = 0; i < v.n; i++) {
        assert_string_equal(fg_json_get_str(v.pods[i], "spec", "schedulerName", NULL), FG_SCHEDULER_NAME);
        assert_string_equal(ann(v.pods[i], FG_ANN_COMPUTE_MILLI), "300");
        assert_non_null(ann(v.pods[i], FG_ANN_GRANT));
    }
    assert_int_equal(distinct(&v, FG_ANN_CAPACITY_POD, caps), 3);
    assert_int_equal(distinct(&v, FG_ANN_GPU_UUID, caps), 3);
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
    app_view_cleanup(&v);
    assert_int_equal(capacity_pods(), 3);
    assert_int_equal(nodes(), 1);
    OK(&out, NULL, "get", "pods", "-n", SYSTEM_NS, "-l", FG_LABEL_ROLE "=" FG_ROLE_CAPACITY, "-o",
       "jsonpath={.items[*].spec.priorityClassName}");
    assert_string_equal(fg_buf_str(&out), "fracgpu-capacity fracgpu-capacity fracgpu-capacity");
    fg_buf_cleanup(&out);
}

/* ---- 3. a new node for a pod that fits nowhere ---- */

static bool waiting_for_capacity(void *ud)
{
    (void)ud;
    struct app_view v;
    app_view("wide", &v);
    bool ok = false;
    for (size_t i = 0; i < v.n; i++) {
        json_object *conds = fg_json_get(v.pods[i], "status", "conditions", NULL);
        for (size_t j = 0; j < fg_json_array_len(conds); j++) {
            json_object *c = json_object_array_get_idx(conds, j);
            ok = ok || (fg_str_eq(fg_json_get_str(c, "type", NULL), "PodScheduled") &&
                        fg_str_eq(fg_json_get_str(c, "reason", NULL), "WaitingForCapacity"));
        }
    }
    app_view_cleanup(&v);
    return ok;
}

static void test_scale_up(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, SHARED_APP("wide", "1", "", "\"7\""), "apply", "-f", "-");
    if (!eventually(waiting_for_capacity, NULL, 30))
        show_and_fail("the wide pod never waited WaitingForCapacity");
    struct want_running w = { "wide", 1 };
    if (!eventually(all_running, &w, 120))
        show_and_fail("the wide pod does not run on a new node");
    size_t two = 2;
    assert_true(nodes_are(&two));
    struct app_view v;
    app_view("wide", &v);
    const char *node = fg_json_get_str(v.pods[0], "spec", "nodeName", NULL);
    const char *cap = ann(v.pods[0], FG_ANN_CAPACITY_POD);
    assert_non_null(cap);
    /* its capacity pod reserved the 7 CPUs, then gave them to it: shrunk back to the holder's own */
    OK(&out, NULL, "get", "pod", cap, "-n", SYSTEM_NS, "-o",
       "jsonpath={.spec.nodeName} {.spec.containers[0].resources.requests.cpu}");
    char want[256];
    snprintf(want, sizeof want, "%s 10m", node);
    assert_string_equal(fg_buf_str(&out), want);
    app_view_cleanup(&v);
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
    if (!eventually(capacity_is, &three, 30))
        show_and_fail("the idle capacity pod was not given back");
    if (!eventually(nodes_are, &one, 60))
        show_and_fail("the autoscaler did not remove the empty node");
    fg_buf_cleanup(&out);
}

/* ---- 5. real-time-mps: a GPU of its own ---- */

static void test_mps_dedicated(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, SHARED_APP("rt", "2", ", fracgpu.io/policy: real-time-mps", "100m"), "apply", "-f", "-");
    struct want_running w = { "rt", 2 };
    if (!eventually(all_running, &w, 120))
        show_and_fail("the real-time-mps pods do not run");
    struct app_view v, llm;
    app_view("rt", &v);
    app_view("llm", &llm);
    const char *caps[16], *llm_caps[16];
    size_t n = distinct(&v, FG_ANN_CAPACITY_POD, caps), m = distinct(&llm, FG_ANN_CAPACITY_POD, llm_caps);
    assert_int_equal(n, 1);
    for (size_t j = 0; j < m; j++)
        assert_string_not_equal(caps[0], llm_caps[j]);   /* no other workload on its GPU */
    assert_string_equal(ann(v.pods[0], FG_ANN_SHARING), "mps");
    OK(&out, NULL, "get", "pod", caps[0], "-n", SYSTEM_NS, "-o",
       "jsonpath={.metadata.annotations.fracgpu\\.io/sharing}");
    assert_string_equal(fg_buf_str(&out), "mps");
    app_view_cleanup(&v);
    app_view_cleanup(&llm);
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
    struct app_view v;
    app_view("llm", &v);
    bool ok = v.n == 9 && v.running == 9;
    for (size_t i = 0; ok && i < v.n; i++)
        for (size_t j = 0; j < r->n; j++)
            ok = ok && !fg_str_eq(fg_json_get_str(v.pods[i], "metadata", "uid", NULL), r->uids[j]);
    app_view_cleanup(&v);
    return ok;
}

static void test_capacity_lost(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    struct app_view v;
    app_view("llm", &v);
    const char *cap = ann(v.pods[0], FG_ANN_CAPACITY_POD);
    char victim[128];
    snprintf(victim, sizeof victim, "%s", cap);
    struct replaced r = { .n = 0 };
    for (size_t i = 0; i < v.n; i++)
        if (fg_str_eq(ann(v.pods[i], FG_ANN_CAPACITY_POD), victim) && r.n < 3)
            snprintf(r.uids[r.n++], sizeof r.uids[0], "%s", fg_json_get_str(v.pods[i], "metadata", "uid", NULL));
    app_view_cleanup(&v);
    assert_int_equal(r.n, 3);
    OK(&out, NULL, "get", "pod", victim, "-n", SYSTEM_NS, "-o", "jsonpath={.metadata.uid}");
    char victim_uid[64];
    snprintf(victim_uid, sizeof victim_uid, "%s", fg_buf_str(&out));
    OK(&out, NULL, "delete", "pod", victim, "-n", SYSTEM_NS, "--wait=false");
    if (!eventually(replaced_and_running, &r, 120))
        show_and_fail("the tenants of the deleted capacity pod were not evicted and placed again");
    /* the replacements run on GPUs held now: a capacity pod made again under the same name is another pod */
    app_view("llm", &v);
    for (size_t i = 0; i < v.n; i++) {
        OK(&out, NULL, "get", "pod", ann(v.pods[i], FG_ANN_CAPACITY_POD), "-n", SYSTEM_NS, "-o", "jsonpath={.metadata.uid}");
        assert_string_not_equal(fg_buf_str(&out), victim_uid);
    }
    app_view_cleanup(&v);
    fg_buf_cleanup(&out);
}

/* ---- 7. the operator restarted ---- */

static char *placements(void)
{
    struct fg_buf b;
    fg_buf_init(&b, 0);
    const char *apps[] = { "llm", "rt" };
    for (size_t a = 0; a < 2; a++) {
        struct app_view v;
        app_view(apps[a], &v);
        for (size_t i = 0; i < v.n; i++)
            if (fg_buf_printf(&b, "%s %s %s\n", fg_json_get_str(v.pods[i], "metadata", "name", NULL),
                           ann(v.pods[i], FG_ANN_CAPACITY_POD), ann(v.pods[i], FG_ANN_GPU_INDEX)) != FG_OK)
                fail();
        app_view_cleanup(&v);
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
    OK(&out, NULL, "delete", "pods", "-n", SYSTEM_NS, "-l", "app.kubernetes.io/component=operator");
    OK(&out, NULL, "rollout", "status", "deployment/fracgpu-operator", "-n", SYSTEM_NS, "--timeout=120s");
    nanosleep(&(struct timespec){ 5, 0 }, NULL);   /* a new leader's first passes and ticks */
    char *after = placements();
    assert_string_equal(before, after);
    assert_int_equal(capacity_pods(), caps);
    OK(&out, NULL, "get", "gpuworkloads", "-n", NS);
    assert_non_null(strstr(fg_buf_str(&out), "deployment-llm"));
    free(before);
    free(after);
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),      cmocka_unit_test(test_nine_on_three), cmocka_unit_test(test_scale_up),
        cmocka_unit_test(test_give_back),    cmocka_unit_test(test_mps_dedicated), cmocka_unit_test(test_capacity_lost),
        cmocka_unit_test(test_restart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
