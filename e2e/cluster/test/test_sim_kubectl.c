/*
 * The simulated cluster end to end, driven by the machine's real kubectl as a person would drive a
 * cluster (testdata/kubectl-e2e.yaml: two GPU nodes and an autoscaled group of big nodes):
 *   - `kubectl apply -k manifests/` installs fracgpu (its scheduler turned off with a patched flag:
 *     mutated pods stay Pending here, sharing is e2e_sim_share's); the operator Deployment's pods run as real
 *     `fracgpu operator` processes that become Ready through their readiness probe (/readyz on the
 *     pod's IP) and create the built-in GPUPolicies; the node-agent DaemonSet runs on both GPU nodes;
 *   - `kubectl annotate deployment/llm fracgpu.io/automate=true`: its GPUWorkload appears in
 *     `kubectl get gpuworkloads`, the Deployment rolls and its new pod is created mutated through the
 *     webhook's Service (the operator keeps the certificates); a Deployment not annotated stays whole,
 *     and removing the annotation brings a whole-GPU pod back;
 *   - a namespace label automates its GPU workloads, "false" opts one out, anti-affinity and two GPUs
 *     are reported not eligible, a workload's own fraction reaches its pod; with every operator replica
 *     stopped a pod is still created whole, and the operator back rolls it to a mutated one;
 *   - with short certificate lifetimes, pods created all along the renewals and a staged CA rotation
 *     are every one admitted mutated;
 *   - `kubectl create namespace|deployment|job|priorityclass` work; a Deployment of 3 runs 3 Ready
 *     pods and a Job completes;
 *   - a pod bound to a node it does not fit is refused by the node's kubelet (Failed, OutOfcpu, with
 *     the Event), and a Deployment's pod with an init container runs it once, then its containers;
 *   - `kubectl rollout restart` replaces the pods within maxSurge and maxUnavailable (checked by a
 *     poller through the API all along) and `kubectl rollout status` returns;
 *   - deleting the Deployment removes its ReplicaSets and pods (the garbage collector); deleting one
 *     with --cascade=orphan leaves its ReplicaSet, which --cascade=foreground then deletes after
 *     its pods;
 *   - a pod too big for every node is Unschedulable, the autoscaler adds a big node and it runs; once
 *     it is deleted the node goes again;
 *   - `kubectl drain` evicts a node's pods, is held back by a PodDisruptionBudget until the first
 *     replacement runs, and the pods end up on the other node.
 * At the end no log holds a sanitizer report or secret material.
 */
#include <pthread.h>
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
#include "e2e/cluster/test/share_fixture.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/simcluster.h"
#include "operator/kube/resource.h"

static struct {
    struct fg_simcluster sim;
} e;

/* Runs kubectl with the arguments and fails the test, showing its output, unless it exits 0. */
#define OK(out, stdin_text, ...)                                                                     \
    do {                                                                                             \
        int rc_ = fg_kubectl_run(&e.sim.k, out, stdin_text, __VA_ARGS__, NULL);                      \
        if (rc_ != 0)                                                                                \
            fail_msg("kubectl %s: exit %d\n%s", #__VA_ARGS__, rc_, fg_buf_str(out));                \
    } while (0)

static json_object *list(const struct fg_kube_resource *res, const char *ns, const char *selector)
{
    json_object *l = share_list(&e.sim, res, ns, selector);
    if (!l)
        fail_msg("cannot list %s", res->plural);
    return l;
}

static size_t count(const struct fg_kube_resource *res, const char *ns, const char *selector)
{
    json_object *l = list(res, ns, selector);
    size_t n = fg_json_array_len(fg_json_get(l, "items", NULL));
    json_object_put(l);
    return n;
}

static bool condition_true(json_object *obj, const char *type)
{
    json_object *conds = fg_json_get(obj, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), type))
            return fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
    }
    return false;
}

/* Pods matching selector (and on node, when not NULL), not terminating: all of them and those Running
 * and Ready. False when the API did not answer; another thread than the test's may call it
 * (cmocka's checks belong to the test's thread). */
static bool try_pod_counts(const char *ns, const char *selector, const char *node, size_t *all, size_t *ready)
{
    struct fg_buf q;
    fg_buf_init(&q, 0);
    bool ok = fg_kube_query_add(&q, "labelSelector", selector) == FG_OK;
    char *path = fg_kube_path(&fg_kube_pods, ns, NULL, NULL, selector ? fg_buf_str(&q) : NULL);
    fg_buf_cleanup(&q);
    json_object *l = NULL;
    ok = ok && fg_kube_get(e.sim.client, path, &l, NULL) == FG_OK;
    free(path);
    json_object *items = fg_json_get(l, "items", NULL);
    *all = *ready = 0;
    for (size_t i = 0; ok && i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (fg_json_get(p, "metadata", "deletionTimestamp", NULL) ||
            (node && !fg_str_eq(fg_json_get_str(p, "spec", "nodeName", NULL), node)))
            continue;
        (*all)++;
        *ready += fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") && condition_true(p, "Ready");
    }
    json_object_put(l);
    return ok;
}

static void pod_counts(const char *ns, const char *selector, const char *node, size_t *all, size_t *ready)
{
    if (!try_pod_counts(ns, selector, node, all, ready))
        fail_msg("cannot list the pods of %s", ns);
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    char config[512], msg[FG_ERRMSG_MAX] = "";
    snprintf(config, sizeof config, "%s/e2e/cluster/testdata/kubectl-e2e.yaml", getenv("FG_SOURCE_DIR"));
    if (fg_simcluster_start(&e.sim, config, NULL, 90, msg) != FG_OK) {
        fprintf(stderr, "cannot start the simulated cluster: %s\n", msg);
        return -1;
    }
    e.sim.k.timeout_s = 150;
    return 0;
}

/* Fails when a log holds a sanitizer report or secret material. */
static int teardown(void **state)
{
    (void)state;
    size_t reports = fg_simcluster_log_problems(&e.sim);
    fg_simcluster_stop(&e.sim, reports > 0);
    return reports ? -1 : 0;
}

/* ---- install ---- */

static bool policies_created(void *ud)
{
    (void)ud;
    static const struct fg_kube_resource gpupolicies = { "fracgpu.io", "v1alpha1", "gpupolicies", "GPUPolicy", false };
    return count(&gpupolicies, NULL, NULL) >= 4;
}

static bool node_agents_ready(void *ud)
{
    (void)ud;
    size_t all, ready;
    pod_counts("fracgpu-system", "app.kubernetes.io/component=node-agent", NULL, &all, &ready);
    return all == 2 && ready == 2;
}

static void test_install(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    char manifests[512];
    snprintf(manifests, sizeof manifests, "%s/manifests", getenv("FG_SOURCE_DIR"));
    OK(&out, NULL, "apply", "-k", manifests);
    /* This test is about kubectl and admission: mutated pods stay Pending, as they always did here,
     * so that GPUs and nodes are what the whole-GPU and autoscaler cases expect. Sharing on the
     * cluster is e2e_sim_share's. */
    if (fg_simcluster_operator_arg(&e.sim, "--no-scheduler", &out) != 0)
        fail_msg("cannot turn the operator's scheduler off: %s", fg_buf_str(&out));
    assert_non_null(strstr(fg_buf_str(&out), "successfully rolled out"));

    /* two operator replicas, Ready through their readiness probe: /readyz answers on each pod's IP */
    json_object *l = list(&fg_kube_pods, "fracgpu-system", "app.kubernetes.io/component=operator");
    json_object *items = fg_json_get(l, "items", NULL);
    size_t ready = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (fg_json_get(p, "metadata", "deletionTimestamp", NULL) || !condition_true(p, "Ready"))
            continue;
        const char *ip = fg_json_get_str(p, "status", "podIP", NULL);
        assert_non_null(ip);
        struct fg_buf body;
        fg_buf_init(&body, 0);
        assert_int_equal(fg_harness_http(ip, 8080, "GET", "/readyz", &body), 200);
        assert_string_equal(fg_buf_str(&body), "ok\n");
        fg_buf_cleanup(&body);
        ready++;
    }
    json_object_put(l);
    assert_int_equal(ready, 2);

    /* the leader created the built-in policies */
    if (!share_eventually(policies_created, NULL, 60))
        fail_msg("the operator did not create the built-in GPUPolicies");
    OK(&out, NULL, "get", "gpupolicies");
    assert_non_null(strstr(fg_buf_str(&out), "real-time"));
    assert_non_null(strstr(fg_buf_str(&out), "near-real-time"));
    assert_non_null(strstr(fg_buf_str(&out), "batch"));

    /* the node agent runs on both GPU nodes */
    if (!share_eventually(node_agents_ready, NULL, 60)) {
        fg_kubectl_run(&e.sim.k, &out, NULL, "get", "pods", "-n", "fracgpu-system", "-o", "wide", NULL);
        fail_msg("the node agents are not Ready on both GPU nodes:\n%s", fg_buf_str(&out));
    }
    OK(&out, NULL, "get", "daemonset", "fracgpu-node-agent", "-n", "fracgpu-system");
    fg_buf_cleanup(&out);
}

/* ---- the admission webhook, as installed ---- */

static bool bundle_written(void *ud)
{
    (void)ud;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    int rc = fg_kubectl_run(&e.sim.k, &out, NULL, "get", "mutatingwebhookconfiguration", "fracgpu", "-o",
                            "jsonpath={.webhooks[0].clientConfig.caBundle}", NULL);
    bool ok = rc == 0 && out.len > 100;
    fg_buf_cleanup(&out);
    return ok;
}

/* The newest pod not being deleted labelled app=APP in namespace NS, for "NS/APP" (a new tree), or
 * NULL. */
static json_object *current_pod(const char *ns_app)
{
    char ns[64], selector[96];
    const char *slash = strchr(ns_app, '/');
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - ns_app), ns_app);
    snprintf(selector, sizeof selector, "app=%s", slash + 1);
    json_object *l = list(&fg_kube_pods, ns, selector), *items = fg_json_get(l, "items", NULL), *found = NULL;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *t = fg_json_get_str(p, "metadata", "creationTimestamp", NULL);
        const char *best = fg_json_get_str(found, "metadata", "creationTimestamp", NULL);
        if (!fg_json_get(p, "metadata", "deletionTimestamp", NULL) && (!best || strcmp(t, best) >= 0))
            found = p;
    }
    json_object_get(found);
    json_object_put(l);
    return found;
}

/* The Deployment's current pod has been created by fracgpu's webhook. */
static bool mutated_pod(void *ud)
{
    json_object *p = current_pod(ud);
    const char *s = fg_json_get_str(p, "spec", "schedulerName", NULL);
    bool ok = s && !strcmp(s, "fracgpu-scheduler");
    json_object_put(p);
    return ok;
}

static bool whole_pod(void *ud)
{
    json_object *p = current_pod(ud);
    const char *s = fg_json_get_str(p, "spec", "schedulerName", NULL);
    bool ok = s && !strcmp(s, "default-scheduler");
    json_object_put(p);
    return ok;
}

/* A Deployment of `replicas` pods in ns whose container asks for `gpus` nvidia.com/gpu, with the
 * metadata lines `meta` and the pod spec lines `pod` (YAML, indented for their place). */
#define GPU_WORKLOAD(ns, name, replicas, gpus, meta, pod)                                                      \
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " name "\n  namespace: " ns "\n" meta             \
    "spec:\n  replicas: " replicas "\n  selector:\n    matchLabels: {app: " name "}\n  template:\n    metadata:\n"  \
    "      labels: {app: " name "}\n    spec:\n" pod "      containers:\n"                                      \
    "        - name: main\n          image: registry.example.com/vllm:1\n"                                       \
    "          resources: {limits: {nvidia.com/gpu: \"" gpus "\"}}\n"
#define GPU_DEPLOYMENT(name) GPU_WORKLOAD("gpu-apps", name, "1", "1", "", "")

/* As a user opts a workload in: `kubectl annotate deployment/llm fracgpu.io/automate=true`. The
 * operator creates its GPUWorkload and labels its template, the Deployment rolls, and the new pod is
 * created mutated through the webhook's Service (the operator keeps its certificates); a Deployment
 * that is not annotated keeps whole GPUs; removing the annotation brings a whole-GPU pod back. */
static void test_webhook(void **state)
{
    (void)state;
    if (!share_eventually(bundle_written, NULL, 60))
        fail_msg("the operator did not write the webhook configuration's caBundle");
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "create", "namespace", "gpu-apps");
    OK(&out, GPU_DEPLOYMENT("llm") "---\n" GPU_DEPLOYMENT("plain"), "apply", "-f", "-");
    if (!share_eventually(whole_pod, "gpu-apps/llm", 60))
        fail_msg("the Deployment made no whole-GPU pod before it was automated");
    OK(&out, NULL, "annotate", "deployment/llm", "-n", "gpu-apps", "fracgpu.io/automate=true");
    if (!share_eventually(mutated_pod, "gpu-apps/llm", 90)) {
        fg_kubectl_run(&e.sim.k, &out, NULL, "get", "pods,gpuworkloads", "-n", "gpu-apps", "-o", "wide", NULL);
        fail_msg("no mutated pod for the automated Deployment:\n%s", fg_buf_str(&out));
    }
    OK(&out, NULL, "get", "gpuworkloads", "-n", "gpu-apps");
    assert_non_null(strstr(fg_buf_str(&out), "deployment-llm"));
    assert_non_null(strstr(fg_buf_str(&out), "real-time"));
    OK(&out, NULL, "get", "gpuworkload", "deployment-llm", "-n", "gpu-apps", "-o",
       "jsonpath={.status.detectedClass} {.status.policy} {.status.eligibility.eligible}");
    assert_string_equal(fg_buf_str(&out), "inference real-time true");
    json_object *llm = current_pod("gpu-apps/llm");
    json_object *limits = fg_json_get(json_object_array_get_idx(fg_json_get(llm, "spec", "containers", NULL), 0),
                                      "resources", "limits", NULL);
    assert_null(fg_json_get(limits, "nvidia.com/gpu", NULL));
    assert_string_equal(fg_json_get_str(limits, "fracgpu.io/gpu-share", NULL), "1");
    assert_string_equal(fg_json_get_str(llm, "metadata", "annotations", "fracgpu.io/workload", NULL), "deployment-llm");
    json_object_put(llm);
    char jsonpath[256];
    snprintf(jsonpath, sizeof jsonpath, "jsonpath={.spec.schedulerName} {.metadata.annotations.fracgpu\\.io/compute-milli}");
    json_object *p = current_pod("gpu-apps/llm");
    OK(&out, NULL, "get", "pod", fg_json_get_str(p, "metadata", "name", NULL), "-n", "gpu-apps", "-o", jsonpath);
    json_object_put(p);
    assert_string_equal(fg_buf_str(&out), "fracgpu-scheduler 1000");
    assert_true(whole_pod("gpu-apps/plain"));

    /* opting out rolls the workload back to whole GPUs */
    OK(&out, NULL, "annotate", "deployment/llm", "-n", "gpu-apps", "fracgpu.io/automate-");
    if (!share_eventually(whole_pod, "gpu-apps/llm", 90))
        fail_msg("removing the annotation did not bring a whole-GPU pod back");
    OK(&out, NULL, "get", "gpuworkloads", "-n", "gpu-apps", "deployment-llm");
    OK(&out, NULL, "delete", "namespace", "gpu-apps", "--wait=false");
    fg_buf_cleanup(&out);
}

static bool gpuworkload_rot_exists(void *ud)
{
    (void)ud;
    json_object *o = NULL;
    bool ok = fg_kube_get(e.sim.client, "/apis/fracgpu.io/v1alpha1/namespaces/gpu-rot/gpuworkloads/statefulset-rot", &o,
                          NULL) == FG_OK;
    json_object_put(o);
    return ok;
}

static bool no_operator_pods(void *ud)
{
    (void)ud;
    json_object *l = list(&fg_kube_pods, "fracgpu-system", "app.kubernetes.io/component=operator");
    bool none = fg_json_array_len(fg_json_get(l, "items", NULL)) == 0;
    json_object_put(l);
    return none;
}

/* `kubectl get gpuworkload NAME -n gpu-team -o jsonpath=PATH` prints want. */
static bool gpuworkload_says(const char *name, const char *path, const char *want)
{
    struct fg_buf out;
    fg_buf_init(&out, 0);
    char jsonpath[128];
    snprintf(jsonpath, sizeof jsonpath, "jsonpath=%s", path);
    int rc = fg_kubectl_run(&e.sim.k, &out, NULL, "get", "gpuworkload", name, "-n", "gpu-team", "-o", jsonpath, NULL);
    bool ok = rc == 0 && !strcmp(fg_buf_str(&out), want);
    fg_buf_cleanup(&out);
    return ok;
}

struct says {
    const char *name, *path, *want;
};

static bool says(void *ud)
{
    struct says *s = ud;
    return gpuworkload_says(s->name, s->path, s->want);
}

#define EXPECT_SAYS(gw, path, want)                                                                           \
    do {                                                                                                      \
        struct says s_ = { gw, path, want };                                                                  \
        if (!share_eventually(says, &s_, 60))                                                                       \
            fail_msg("gpuworkload %s: %s is not %s", gw, path, want);                                         \
    } while (0)

/* A namespace label automates its GPU workloads and "false" opts one out; anti-affinity and two GPUs
 * stay whole with their reasons in the GPUWorkload's status; a workload's own fraction reaches its
 * pod. With every operator replica stopped, a pod is still created — unmutated, with its whole GPU —
 * and once the operator is back the workload is rolled to a mutated pod. */
static void test_opt_in_scenarios(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "create", "namespace", "gpu-team");
    OK(&out, NULL, "label", "namespace", "gpu-team", "fracgpu.io/automate=true");
    OK(&out,
       GPU_WORKLOAD("gpu-team", "serve", "1", "1", "", "") "---\n"
       GPU_WORKLOAD("gpu-team", "keep", "1", "1", "  annotations: {fracgpu.io/automate: \"false\"}\n", "") "---\n"
       GPU_WORKLOAD("gpu-team", "frac", "1", "1",
                    "  annotations: {fracgpu.io/gpu-compute: \"300\", fracgpu.io/gpu-memory: 10Gi}\n", "") "---\n"
       GPU_WORKLOAD("gpu-team", "anti", "0", "1", "",
                    "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
                    "            - topologyKey: kubernetes.io/hostname\n"
                    "              labelSelector: {matchLabels: {app: anti}}\n") "---\n"
       GPU_WORKLOAD("gpu-team", "two", "0", "2", "", ""),
       "apply", "-f", "-");
    if (!share_eventually(mutated_pod, "gpu-team/serve", 90) || !share_eventually(mutated_pod, "gpu-team/frac", 90)) {
        fg_kubectl_run(&e.sim.k, &out, NULL, "get", "pods,rs,gpuworkloads", "-n", "gpu-team", "-o", "wide", NULL);
        fail_msg("the namespace's workloads were not automated:\n%s", fg_buf_str(&out));
    }
    json_object *frac = current_pod("gpu-team/frac");
    assert_string_equal(fg_json_get_str(frac, "metadata", "annotations", "fracgpu.io/compute-milli", NULL), "300");
    assert_string_equal(fg_json_get_str(frac, "metadata", "annotations", "fracgpu.io/memory-mib", NULL), "10240");
    json_object_put(frac);
    EXPECT_SAYS("deployment-frac", "{.status.allocation.compute} {.status.allocation.memory}", "300m 10Gi");
    assert_true(share_eventually(whole_pod, "gpu-team/keep", 30));
    EXPECT_SAYS("deployment-anti", "{.status.eligibility.reason}", "podAntiAffinity");
    EXPECT_SAYS("deployment-two", "{.status.eligibility.reason}", "multipleGPUs");
    OK(&out, NULL, "get", "gpuworkload", "deployment-keep", "-n", "gpu-team", "--ignore-not-found");
    assert_string_equal(fg_buf_str(&out), "");

    /* every replica stopped: pods are still created, whole; back, the operator rolls them */
    /* (kubectl scale needs deployments/scale, which the test API server does not serve yet) */
    OK(&out, NULL, "patch", "deployment/fracgpu-operator", "-n", "fracgpu-system", "-p", "{\"spec\":{\"replicas\":0}}");
    if (!share_eventually(no_operator_pods, NULL, 60))
        fail_msg("the operator's pods did not go");
    OK(&out, NULL, "rollout", "restart", "deployment/serve", "-n", "gpu-team");
    if (!share_eventually(whole_pod, "gpu-team/serve", 60))
        fail_msg("no pod was created while the webhook did not answer");
    OK(&out, NULL, "patch", "deployment/fracgpu-operator", "-n", "fracgpu-system", "-p", "{\"spec\":{\"replicas\":2}}");
    OK(&out, NULL, "rollout", "status", "deployment/fracgpu-operator", "-n", "fracgpu-system", "--timeout=120s");
    if (!share_eventually(mutated_pod, "gpu-team/serve", 120)) {
        fg_kubectl_run(&e.sim.k, &out, NULL, "get", "gpuworkload/deployment-serve", "-n", "gpu-team", "-o",
                       "jsonpath={.status.pods} {.status.unmutatedPods} {.status.lastAction}", NULL);
        fprintf(stderr, "serve status: %s\n", fg_buf_str(&out));
        fg_kubectl_run(&e.sim.k, &out, NULL, "get", "pods", "-n", "gpu-team", "-l", "app=serve", "-o",
                       "jsonpath={range .items[*]}{.metadata.name} {.metadata.labels} {.spec.schedulerName} "
                       "{.metadata.ownerReferences[0].name}{\"\\n\"}{end}",
                       NULL);
        fail_msg("the operator did not roll the pods created while it was away:\n%s", fg_buf_str(&out));
    }
    EXPECT_SAYS("deployment-serve", "{.status.lastAction}", "RolledUnmutatedPods");
    OK(&out, NULL, "delete", "namespace", "gpu-team", "--wait=false");
    fg_buf_cleanup(&out);
}

/* The webhook configuration trusts exactly the CAs the Secret holds. */
static bool bundle_in_step(void *ud)
{
    (void)ud;
    struct fg_buf a, b;
    fg_buf_init(&a, 0);
    fg_buf_init(&b, 0);
    bool ok = fg_kubectl_run(&e.sim.k, &a, NULL, "get", "secret", "fracgpu-webhook-tls", "-n", "fracgpu-system", "-o",
                             "jsonpath={.data.ca\\.crt}", NULL) == 0 &&
              fg_kubectl_run(&e.sim.k, &b, NULL, "get", "mutatingwebhookconfiguration", "fracgpu", "-o",
                             "jsonpath={.webhooks[0].clientConfig.caBundle}", NULL) == 0 &&
              a.len > 100 && !strcmp(fg_buf_str(&a), fg_buf_str(&b));
    fg_buf_cleanup(&a);
    fg_buf_cleanup(&b);
    return ok;
}

static int events_with_reason(const char *reason)
{
    json_object *l = list(&fg_kube_events, "fracgpu-system", NULL), *items = fg_json_get(l, "items", NULL);
    int n = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        const char *r = fg_json_get_str(json_object_array_get_idx(items, i), "reason", NULL);
        n += r && !strcmp(r, reason);
    }
    json_object_put(l);
    return n;
}

/* The operator run with short certificate lifetimes (a 24 s CA, 8 s serving certificates): while the
 * serving certificate is renewed and the CA rotated in stages, pods keep being created, and every one
 * of them is admitted mutated — none meets a certificate kube-apiserver does not trust. */
static void test_certificate_rotation(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "patch", "deployment/fracgpu-operator", "-n", "fracgpu-system", "--type=json", "-p",
       "[{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--webhook-ca-lifetime=24s\"},"
       "{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--webhook-cert-lifetime=8s\"},"
       "{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--webhook-switch-delay=1s\"}]");
    OK(&out, NULL, "rollout", "status", "deployment/fracgpu-operator", "-n", "fracgpu-system", "--timeout=120s");
    /* certificates are issued with the lifetimes in force: start over from an empty Secret */
    OK(&out, NULL, "patch", "secret", "fracgpu-webhook-tls", "-n", "fracgpu-system", "--type=json", "-p",
       "[{\"op\":\"remove\",\"path\":\"/data\"}]");
    if (!share_eventually(bundle_in_step, NULL, 60))
        fail_msg("the webhook configuration does not trust the new CA");
    OK(&out, NULL, "create", "namespace", "gpu-rot");
    OK(&out,
       "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: rot\n  namespace: gpu-rot\n"
       "  annotations: {fracgpu.io/automate: \"true\"}\nspec:\n  replicas: 0\n  serviceName: rot\n"
       "  selector:\n    matchLabels: {app: rot}\n  template:\n    metadata:\n      labels: {app: rot}\n"
       "    spec:\n      containers:\n        - name: main\n          image: registry.example.com/vllm:1\n"
       "          resources: {limits: {nvidia.com/gpu: \"1\"}}\n",
       "apply", "-f", "-");
    json_object *sts = NULL;
    for (int i = 0; i < 100 && !sts; i++) {
        if (fg_kube_get(e.sim.client, "/apis/apps/v1/namespaces/gpu-rot/statefulsets/rot", &sts, NULL) != FG_OK)
            nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
    }
    assert_non_null(sts);
    char uid[64];
    snprintf(uid, sizeof uid, "%s", fg_json_get_str(sts, "metadata", "uid", NULL));
    json_object_put(sts);
    if (!share_eventually(gpuworkload_rot_exists, NULL, 60))
        fail_msg("the StatefulSet was not automated");
    int created = 0;
    uint64_t until = fg_clock_mono_ns() + 24 * FG_NS_PER_S;
    for (int i = 0; fg_clock_mono_ns() < until; i++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"metadata\":{\"name\":\"rot-load-%d\",\"labels\":{\"app\":\"rot\",\"fracgpu.io/automate\":"
                 "\"true\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":"
                 "\"rot\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"containers\":[{\"name\":\"main\","
                 "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
                 i, uid);
        json_object *pod = json_tokener_parse(body), *got = NULL;
        struct fg_kube_status st = { 0 };
        enum fg_err err = fg_kube_create(e.sim.client, "/api/v1/namespaces/gpu-rot/pods", pod, &got, &st);
        const char *sched = fg_json_get_str(got, "spec", "schedulerName", NULL);
        if (err != FG_OK || !sched || strcmp(sched, "fracgpu-scheduler"))
            fail_msg("pod %d was not admitted mutated (%s): %s", i, fg_err_str(err),
                     got ? json_object_to_json_string(got) : (st.message ? st.message : ""));
        fg_kube_status_cleanup(&st);
        json_object_put(got);
        json_object_put(pod);
        created++;
        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    }
    fprintf(stderr, "%d pods admitted mutated while the webhook's certificates turned over\n", created);
    assert_true(created > 50);
    assert_true(events_with_reason("RenewedServing") >= 1);
    assert_true(events_with_reason("RotatingCA") >= 1);
    assert_true(events_with_reason("SwitchedServing") >= 1);
    assert_true(events_with_reason("RetiredCA") >= 1);
    OK(&out, NULL, "delete", "namespace", "gpu-rot", "--wait=false");
    fg_buf_cleanup(&out);
}

/* ---- kubectl create ---- */

static bool job_complete(void *ud)
{
    (void)ud;
    json_object *l = list(&fg_kube_jobs, "team-b", NULL), *items = fg_json_get(l, "items", NULL);
    bool done = fg_json_array_len(items) == 1 && condition_true(json_object_array_get_idx(items, 0), "Complete");
    json_object_put(l);
    return done;
}

static void test_create(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "create", "namespace", "team-b");
    OK(&out, NULL, "create", "priorityclass", "high", "--value=1000", "--description=team b's serving");
    OK(&out, NULL, "get", "priorityclass", "high");
    assert_non_null(strstr(fg_buf_str(&out), "1000"));
    OK(&out, NULL, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "-n", "team-b");
    OK(&out, NULL, "rollout", "status", "deployment/web", "-n", "team-b", "--timeout=60s");
    size_t all, ready;
    pod_counts("team-b", "app=web", NULL, &all, &ready);
    assert_int_equal(all, 3);
    assert_int_equal(ready, 3);
    OK(&out, NULL, "get", "deployment", "web", "-n", "team-b");
    assert_non_null(strstr(fg_buf_str(&out), "3/3"));
    OK(&out, NULL, "create", "job", "pi", "--image=busybox", "-n", "team-b", "--", "sh", "-c", "echo 3.14");
    OK(&out, NULL, "wait", "--for=condition=complete", "job/pi", "-n", "team-b", "--timeout=60s");
    assert_true(job_complete(NULL));
    OK(&out, NULL, "get", "job", "pi", "-n", "team-b");
    assert_non_null(strstr(fg_buf_str(&out), "Complete"));
    assert_non_null(strstr(fg_buf_str(&out), "1/1"));
    fg_buf_cleanup(&out);
}

/* ---- kubelet admission, init containers ---- */

static const char *const init_app =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: with-init, namespace: team-b}\n"
    "spec:\n  replicas: 1\n  selector: {matchLabels: {app: with-init}}\n  template:\n"
    "    metadata: {labels: {app: with-init}}\n    spec:\n"
    "      initContainers: [{name: migrate, image: busybox}]\n"
    "      containers: [{name: app, image: nginx:1.27}]\n";

static void test_admission_and_init(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    json_object *nodes = list(&fg_kube_nodes, NULL, NULL);
    const char *node = fg_json_get_str(json_object_array_get_idx(fg_json_get(nodes, "items", NULL), 0), "metadata",
                                       "name", NULL);
    assert_non_null(node);
    char *too_big = fg_asprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: too-big, namespace: team-b}\n"
                                "spec:\n  nodeName: %s\n  containers:\n  - name: app\n    image: busybox\n"
                                "    resources: {requests: {cpu: \"9\"}}\n", node);
    json_object_put(nodes);
    OK(&out, too_big, "apply", "-f", "-");
    free(too_big);
    OK(&out, NULL, "wait", "--for=jsonpath={.status.phase}=Failed", "pod/too-big", "-n", "team-b", "--timeout=30s");
    OK(&out, NULL, "get", "pod", "too-big", "-n", "team-b");
    assert_non_null(strstr(fg_buf_str(&out), "OutOfcpu"));
    OK(&out, NULL, "get", "events", "-n", "team-b", "--field-selector", "involvedObject.name=too-big,reason=OutOfcpu");
    assert_non_null(strstr(fg_buf_str(&out), "Node didn't have enough resource: cpu, requested: 9000"));
    OK(&out, NULL, "delete", "pod", "too-big", "-n", "team-b", "--wait=true", "--timeout=30s");

    OK(&out, init_app, "apply", "-f", "-");
    OK(&out, NULL, "rollout", "status", "deployment/with-init", "-n", "team-b", "--timeout=60s");
    OK(&out, NULL, "get", "pods", "-n", "team-b", "-l", "app=with-init", "-o",
       "jsonpath={.items[0].status.initContainerStatuses[0].state.terminated.reason} "
       "{.items[0].status.initContainerStatuses[0].restartCount} {.items[0].status.phase}");
    assert_string_equal(fg_buf_str(&out), "Completed 0 Running");
    OK(&out, NULL, "delete", "deployment", "with-init", "-n", "team-b", "--wait=true", "--timeout=30s");
    fg_buf_cleanup(&out);
}

/* ---- rollout restart ---- */

struct poller {
    pthread_t thread;
    volatile bool stop;
    size_t max_pods, min_ready;
    bool saw_rollout;
};

static void *poll_web(void *ud)
{
    struct poller *p = ud;
    while (!p->stop) {
        size_t all, ready;
        if (!try_pod_counts("team-b", "app=web", NULL, &all, &ready))
            continue;
        p->max_pods = all > p->max_pods ? all : p->max_pods;
        p->min_ready = ready < p->min_ready ? ready : p->min_ready;
        p->saw_rollout = p->saw_rollout || all > 3;
        nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
    }
    return NULL;
}

static void test_rollout_restart(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    json_object *before = list(&fg_kube_pods, "team-b", "app=web");
    struct poller p = { .min_ready = 1000 };
    pthread_create(&p.thread, NULL, poll_web, &p);
    int restarted = fg_kubectl_run(&e.sim.k, &out, NULL, "rollout", "restart", "deployment/web", "-n", "team-b", NULL);
    int rolled = restarted ? -1
                           : fg_kubectl_run(&e.sim.k, &out, NULL, "rollout", "status", "deployment/web", "-n", "team-b",
                                            "--timeout=90s", NULL);
    p.stop = true;
    pthread_join(p.thread, NULL);
    if (restarted || rolled)
        fail_msg("kubectl rollout restart/status: exit %d/%d\n%s", restarted, rolled, fg_buf_str(&out));
    assert_non_null(strstr(fg_buf_str(&out), "successfully rolled out"));
    /* 3 replicas with the default 25% / 25%: maxSurge 1, maxUnavailable 0 */
    assert_true(p.saw_rollout);
    assert_true(p.max_pods <= 4);
    assert_int_equal(p.min_ready, 3);
    json_object *after = list(&fg_kube_pods, "team-b", "app=web");
    json_object *old_items = fg_json_get(before, "items", NULL), *new_items = fg_json_get(after, "items", NULL);
    size_t fresh = 0;
    for (size_t i = 0; i < fg_json_array_len(new_items); i++) {
        const char *name = fg_json_get_str(json_object_array_get_idx(new_items, i), "metadata", "name", NULL);
        bool old = false;
        for (size_t j = 0; j < fg_json_array_len(old_items); j++)
            old = old || fg_str_eq(name, fg_json_get_str(json_object_array_get_idx(old_items, j), "metadata", "name", NULL));
        fresh += !old;
    }
    assert_int_equal(fresh, 3);   /* every pod was replaced */
    json_object_put(before);
    json_object_put(after);
    assert_int_equal(count(&fg_kube_replicasets, "team-b", "app=web"), 2);   /* the old set stays, scaled to 0 */
    fg_buf_cleanup(&out);
}

/* ---- garbage collection ---- */

static bool web_gone(void *ud)
{
    (void)ud;
    return count(&fg_kube_replicasets, "team-b", "app=web") == 0 && count(&fg_kube_pods, "team-b", "app=web") == 0;
}

static void test_delete_deployment(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    OK(&out, NULL, "delete", "deployment", "web", "-n", "team-b", "--wait=false");
    if (!share_eventually(web_gone, NULL, 60))
        fail_msg("the ReplicaSets and pods of the deleted Deployment are still there");

    /* orphaned: the ReplicaSet stays, without its owner; then deleted in the foreground, after its pods */
    OK(&out, NULL, "create", "deployment", "kept", "--image=nginx:1.27", "--replicas=2", "-n", "team-b");
    OK(&out, NULL, "rollout", "status", "deployment/kept", "-n", "team-b", "--timeout=60s");
    OK(&out, NULL, "delete", "deployment", "kept", "-n", "team-b", "--cascade=orphan", "--timeout=30s");
    OK(&out, NULL, "get", "replicasets", "-n", "team-b", "-l", "app=kept", "-o",
       "jsonpath={.items[0].status.readyReplicas}/{.items[0].metadata.ownerReferences}");
    assert_string_equal(fg_buf_str(&out), "2/");
    OK(&out, NULL, "delete", "replicasets", "-n", "team-b", "-l", "app=kept", "--cascade=foreground", "--timeout=60s");
    assert_int_equal(count(&fg_kube_pods, "team-b", "app=kept"), 0);   /* gone before their owner went */
    assert_int_equal(count(&fg_kube_replicasets, "team-b", "app=kept"), 0);
    fg_buf_cleanup(&out);
}

/* ---- autoscaling ---- */

static const char *const big_pod =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: team-b}\n"
    "spec:\n  containers:\n  - name: app\n    image: busybox\n    resources: {requests: {cpu: \"40\", memory: 8Gi}}\n";

static bool big_unschedulable(void *ud)
{
    json_object **pod = ud;
    char *path = fg_kube_path(&fg_kube_pods, "team-b", "big", NULL, NULL);
    json_object_put(*pod);
    *pod = NULL;
    enum fg_err err = fg_kube_get(e.sim.client, path, pod, NULL);
    free(path);
    if (err)
        return false;
    json_object *conds = fg_json_get(*pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "PodScheduled") &&
            fg_str_eq(fg_json_get_str(c, "reason", NULL), "Unschedulable"))
            return true;
    }
    return false;
}

static bool big_running(void *ud)
{
    (void)ud;
    json_object *l = list(&fg_kube_pods, "team-b", NULL), *items = fg_json_get(l, "items", NULL);
    bool running = false;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *node = fg_json_get_str(p, "spec", "nodeName", NULL);
        running = running || (fg_str_eq(fg_json_get_str(p, "metadata", "name", NULL), "big") && node &&
                              fg_str_has_prefix(node, "big-") && condition_true(p, "Ready"));
    }
    json_object_put(l);
    return running;
}

static bool nodes_are(void *ud)
{
    return count(&fg_kube_nodes, NULL, NULL) == *(size_t *)ud;
}

static void test_autoscale(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    size_t two = 2, three = 3;
    assert_true(nodes_are(&two));
    OK(&out, big_pod, "apply", "-f", "-");
    json_object *pod = NULL;
    if (!share_eventually(big_unschedulable, &pod, 30))
        fail_msg("the big pod was never marked Unschedulable");
    const char *msg = NULL;
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(conds, i), "type", NULL), "PodScheduled"))
            msg = fg_json_get_str(json_object_array_get_idx(conds, i), "message", NULL);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "0/2 nodes are available"));
    assert_non_null(strstr(msg, "Insufficient cpu"));
    json_object_put(pod);
    if (!share_eventually(big_running, NULL, 60)) {
        fg_kubectl_run(&e.sim.k, &out, NULL, "get", "pods,nodes", "-A", "-o", "wide", NULL);
        fail_msg("the autoscaler did not bring a node the big pod runs on:\n%s", fg_buf_str(&out));
    }
    assert_true(nodes_are(&three));
    OK(&out, NULL, "get", "events", "-n", "team-b", "--field-selector", "involvedObject.name=big,reason=TriggeredScaleUp");
    assert_non_null(strstr(fg_buf_str(&out), "pod triggered scale-up: [{big 0->1 (max: 2)}]"));
    OK(&out, NULL, "delete", "pod", "big", "-n", "team-b", "--wait=true", "--timeout=60s");
    if (!share_eventually(nodes_are, &two, 60))
        fail_msg("the empty big node was not removed");
    OK(&out, NULL, "get", "events", "-n", "default", "--field-selector", "reason=ScaleDownEmpty");
    assert_non_null(strstr(fg_buf_str(&out), "removing empty node big-"));
    fg_buf_cleanup(&out);
}

/* ---- drain ---- */

static const char *const budget_app =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: steady, namespace: team-b}\n"
    "spec:\n  replicas: 2\n  selector: {matchLabels: {app: steady}}\n"
    "  template:\n    metadata: {labels: {app: steady}}\n"
    "    spec: {containers: [{name: app, image: nginx, resources: {requests: {cpu: 100m}}}]}\n"
    "---\n"
    "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: steady, namespace: team-b}\n"
    "spec: {minAvailable: 1, selector: {matchLabels: {app: steady}}}\n";

struct on_node {
    const char *node;
    size_t want;
};

static bool steady_on(void *ud)
{
    struct on_node *o = ud;
    size_t all, ready;
    pod_counts("team-b", "app=steady", o->node, &all, &ready);
    return ready == o->want;
}

static void test_drain(void **state)
{
    (void)state;
    struct fg_buf out;
    fg_buf_init(&out, 0);
    json_object *l = list(&fg_kube_nodes, NULL, "sim.fracgpu.io/node-group=gpu"), *items = fg_json_get(l, "items", NULL);
    assert_int_equal(fg_json_array_len(items), 2);
    char a[128], b[128];
    snprintf(a, sizeof a, "%s", fg_json_get_str(json_object_array_get_idx(items, 0), "metadata", "name", NULL));
    snprintf(b, sizeof b, "%s", fg_json_get_str(json_object_array_get_idx(items, 1), "metadata", "name", NULL));
    json_object_put(l);
    /* both replicas on a, so that draining it must wait on the budget */
    OK(&out, NULL, "cordon", b);
    OK(&out, budget_app, "apply", "-f", "-");
    OK(&out, NULL, "rollout", "status", "deployment/steady", "-n", "team-b", "--timeout=60s");
    struct on_node on_a = { a, 2 }, on_b = { b, 2 };
    assert_true(steady_on(&on_a));
    OK(&out, NULL, "uncordon", b);
    OK(&out, NULL, "drain", a, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s");
    const char *o = fg_buf_str(&out);
    assert_non_null(strstr(o, "evicted"));
    assert_non_null(strstr(o, "disruption budget"));   /* the second eviction had to wait */
    assert_non_null(strstr(o, "drained"));
    if (!share_eventually(steady_on, &on_b, 60))
        fail_msg("the evicted pods do not run on %s", b);
    OK(&out, NULL, "get", "node", a);
    assert_non_null(strstr(fg_buf_str(&out), "SchedulingDisabled"));
    size_t all, ready;
    pod_counts("fracgpu-system", "app.kubernetes.io/component=operator", a, &all, &ready);
    assert_int_equal(all, 0);   /* the operator's pods moved too */
    OK(&out, NULL, "uncordon", a);
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),
        cmocka_unit_test(test_webhook),
        cmocka_unit_test(test_opt_in_scenarios),
        cmocka_unit_test(test_certificate_rotation),
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_admission_and_init),
        cmocka_unit_test(test_rollout_restart),
        cmocka_unit_test(test_delete_deployment),
        cmocka_unit_test(test_autoscale),
        cmocka_unit_test(test_drain),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
