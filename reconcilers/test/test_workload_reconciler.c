/* The workload reconciler against the test API server, with the policy reconciler beside it as in
 * `fracgpu operator`: an annotated Deployment gets its GPUWorkload (class, policy, allocation,
 * eligibility, conditions in its status) and the template label, which goes again when the
 * annotation does (the GPUWorkload stays); a namespace label automates its GPU workloads and "false"
 * opts one out; anti-affinity and two GPUs are reported not eligible with their reasons; a workload's
 * own fraction reaches the status; a fine-tuning Job trains under the training built-in, which is
 * created for it; a policy that does not exist is a PolicyFound=False condition; a Deployment without
 * GPUs gets nothing; a status once written is not written again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "e2e/tests/harness.h"
#include "reconcilers/policy.h"
#include "reconcilers/workload_reconciler.h"

static struct fg_harness h;
static struct fg_manager *m;

#define DEPLOYMENTS "/apis/apps/v1/namespaces/%s/deployments"
#define GPUWORKLOAD "/apis/fracgpu.io/v1alpha1/namespaces/%s/gpuworkloads/%s"

static void create(const char *path, const char *body)
{
    json_object *obj = json_tokener_parse(body);
    struct fg_kube_status st = { 0 };
    if (!obj)
        fail_msg("test JSON: %s", body);
    if (fg_kube_create(h.client, path, obj, NULL, &st) != FG_OK)
        fail_msg("create %s: %s", path, st.message);
    fg_kube_status_cleanup(&st);
    json_object_put(obj);
}

/* A Deployment in ns: annotations and extra spec members of its pod spec as JSON members. */
static void deployment(const char *ns, const char *name, const char *annotations, const char *containers,
                       const char *pod_extra)
{
    char path[128], body[2048];
    snprintf(path, sizeof(path), DEPLOYMENTS, ns);
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\",\"annotations\":{%s}},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":"
             "\"%s\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":{\"containers\":[%s]%s}}}}",
             name, annotations, name, name, containers, pod_extra);
    create(path, body);
}

#define GPU_CONTAINER "{\"name\":\"main\",\"image\":\"vllm\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}"

static json_object *get(const char *path)
{
    json_object *o = NULL;
    struct fg_kube_status st = { 0 };
    if (fg_kube_get(h.client, path, &o, &st) != FG_OK)
        o = NULL;
    fg_kube_status_cleanup(&st);
    return o;
}

struct want {
    const char *path;
    const char *const *keys;    /* a path into the object, NULL-terminated */
    const char *value;          /* NULL: the member must be absent (or the object) */
};

static bool holds(void *ud)
{
    struct want *w = ud;
    json_object *o = get(w->path), *v = o;
    for (const char *const *k = w->keys; v && *k; k++)
        v = fg_json_get(v, *k, NULL);
    bool ok = w->value ? v && !strcmp(json_object_get_string(v), w->value) : !v;
    json_object_put(o);
    return ok;
}

static void expect(const char *path, const char *const *keys, const char *value)
{
    struct want w = { path, keys, value };
    if (!fg_harness_wait(holds, &w, 15000)) {
        json_object *o = get(path);
        fail_msg("%s: %s is not %s:\n%s", path, keys[0] ? keys[0] : "(the object)", value ? value : "absent",
                 o ? json_object_to_json_string(o) : "(none)");
    }
}

static void expect_status(const char *ns, const char *gw, const char *const *keys, const char *value)
{
    char path[256];
    snprintf(path, sizeof(path), GPUWORKLOAD, ns, gw);
    expect(path, keys, value);
}

static const char *const TEMPLATE_LABEL[] = { "spec", "template", "metadata", "labels", "fracgpu.io/automate", NULL };
static const char *const ANY[] = { NULL };
static const char *const CLASS[] = { "status", "detectedClass", NULL };
static const char *const POLICY[] = { "status", "policy", NULL };
static const char *const TARGET[] = { "status", "target", NULL };
static const char *const REASON[] = { "status", "eligibility", "reason", NULL };
static const char *const COMPUTE[] = { "status", "allocation", "compute", NULL };
static const char *const ACTION[] = { "status", "lastAction", NULL };

static void deployment_path(const char *ns, const char *name, char *out, size_t size)
{
    snprintf(out, size, DEPLOYMENTS "/%s", ns, name);
}

static void opt_in_and_out(void **state)
{
    (void)state;
    char path[256];
    deployment("ml", "llm", "\"fracgpu.io/automate\":\"true\"", GPU_CONTAINER, "");
    deployment_path("ml", "llm", path, sizeof(path));
    expect(path, TEMPLATE_LABEL, "true");
    expect_status("ml", "deployment-llm", TARGET, "Deployment/llm");
    expect_status("ml", "deployment-llm", CLASS, "inference");
    expect_status("ml", "deployment-llm", POLICY, "real-time");
    expect_status("ml", "deployment-llm", REASON, "Eligible");
    expect_status("ml", "deployment-llm", COMPUTE, "1");
    expect_status("ml", "deployment-llm", ACTION, "LabelledTemplate");
    json_object *gw = get("/apis/fracgpu.io/v1alpha1/namespaces/ml/gpuworkloads/deployment-llm");
    json_object *owner = json_object_array_get_idx(fg_json_get(gw, "metadata", "ownerReferences", NULL), 0);
    assert_string_equal(fg_json_get_str(owner, "kind", NULL), "Deployment");
    assert_false(json_object_get_boolean(fg_json_get(owner, "blockOwnerDeletion", NULL)));
    json_object_put(gw);

    /* automation removed: the label goes, the GPUWorkload stays */
    struct fg_kube_status st = { 0 };
    assert_int_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE,
                                   "{\"metadata\":{\"annotations\":{\"fracgpu.io/automate\":null}}}", NULL, &st),
                     FG_OK);
    fg_kube_status_cleanup(&st);
    expect(path, TEMPLATE_LABEL, NULL);
    expect_status("ml", "deployment-llm", ACTION, "RemovedTemplateLabel");
}

static void namespace_label_and_opt_out(void **state)
{
    (void)state;
    char path[256];
    deployment("team", "serve", "", GPU_CONTAINER, "");
    deployment("team", "keep-whole", "\"fracgpu.io/automate\":\"false\"", GPU_CONTAINER, "");
    deployment("team", "web", "", "{\"name\":\"main\",\"image\":\"nginx\"}", "");
    deployment_path("team", "serve", path, sizeof(path));
    expect(path, TEMPLATE_LABEL, "true");
    expect_status("team", "deployment-serve", POLICY, "real-time");
    /* the opted-out and the GPU-less ones get nothing (checked after the others were done) */
    deployment_path("team", "keep-whole", path, sizeof(path));
    expect(path, TEMPLATE_LABEL, NULL);
    expect_status("team", "deployment-keep-whole", ANY, NULL);
    expect_status("team", "deployment-web", ANY, NULL);
}

static void reasons_fractions_and_policies(void **state)
{
    (void)state;
    deployment("ml", "anti", "\"fracgpu.io/automate\":\"true\"", GPU_CONTAINER,
               ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
               "\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":\"anti\"}}}]}}");
    deployment("ml", "two", "\"fracgpu.io/automate\":\"true\"",
               "{\"name\":\"main\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}", "");
    deployment("ml", "frac", "\"fracgpu.io/automate\":\"true\",\"fracgpu.io/gpu-compute\":\"300\"", GPU_CONTAINER, "");
    deployment("ml", "typo", "\"fracgpu.io/automate\":\"true\",\"fracgpu.io/policy\":\"no-such-policy\"", GPU_CONTAINER,
               "");
    create("/apis/batch/v1/namespaces/ml/jobs",
           "{\"metadata\":{\"name\":\"llama-finetune\",\"annotations\":{\"fracgpu.io/automate\":\"true\"}},\"spec\":{"
           "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[" GPU_CONTAINER "]}}}}");
    expect_status("ml", "deployment-anti", REASON, "podAntiAffinity");
    expect_status("ml", "deployment-two", REASON, "multipleGPUs");
    expect_status("ml", "deployment-frac", COMPUTE, "300m");
    expect_status("ml", "deployment-typo", POLICY, "no-such-policy");
    json_object *gw = get("/apis/fracgpu.io/v1alpha1/namespaces/ml/gpuworkloads/deployment-typo");
    json_object *conds = fg_json_get(gw, "status", "conditions", NULL);
    bool not_found = false;
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        not_found = not_found || (!strcmp(fg_json_get_str(c, "type", NULL), "PolicyFound") &&
                                  !strcmp(fg_json_get_str(c, "status", NULL), "False") &&
                                  !strcmp(fg_json_get_str(c, "reason", NULL), "PolicyNotFound"));
    }
    json_object_put(gw);
    assert_true(not_found);
    expect_status("ml", "job-llama-finetune", CLASS, "training");
    expect_status("ml", "job-llama-finetune", POLICY, "training");
    /* a Job's template cannot change: it is left as it is, and the status says why */
    expect_status("ml", "job-llama-finetune", ACTION, "TemplateImmutable");
    static const char *const job_label[] = { "spec", "template", "metadata", "labels", "fracgpu.io/automate", NULL };
    expect("/apis/batch/v1/namespaces/ml/jobs/llama-finetune", job_label, NULL);
    static const char *const exists[] = { "metadata", "name", NULL };
    expect("/apis/fracgpu.io/v1alpha1/gpupolicies/training", exists, "training");
}

/* A pod created from the labelled template while no webhook answered, and bound since: counted, and
 * the Deployment rolled once (the roll is not repeated for the same pod). */
static void pods_that_missed_the_webhook_are_rolled(void **state)
{
    (void)state;
    char path[256], body[1024];
    deployment("ml", "missed", "\"fracgpu.io/automate\":\"true\"", GPU_CONTAINER, "");
    deployment_path("ml", "missed", path, sizeof(path));
    expect(path, TEMPLATE_LABEL, "true");
    json_object *d = get(path);
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"missed-1\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
             "\"Deployment\",\"name\":\"missed\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"selector\":{"
             "\"matchLabels\":{\"app\":\"missed\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"missed\"}},"
             "\"spec\":{\"containers\":[" GPU_CONTAINER "]}}}}",
             fg_json_get_str(d, "metadata", "uid", NULL));
    json_object_put(d);
    create("/apis/apps/v1/namespaces/ml/replicasets", body);
    json_object *rs = get("/apis/apps/v1/namespaces/ml/replicasets/missed-1");
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"missed-1-abc\",\"labels\":{\"app\":\"missed\",\"fracgpu.io/automate\":"
             "\"true\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":"
             "\"missed-1\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"nodeName\":\"gpu-1\",\"containers\":["
             GPU_CONTAINER "]}}",
             fg_json_get_str(rs, "metadata", "uid", NULL));
    json_object_put(rs);
    create("/api/v1/namespaces/ml/pods", body);
    static const char *const unmutated[] = { "status", "unmutatedPods", NULL };
    static const char *const pods[] = { "status", "pods", NULL };
    static const char *const before[] = { "status", "gpusBefore", NULL }, *const held[] = { "status", "gpusAfter", NULL };
    static const char *const saved[] = { "status", "gpusSaved", NULL };
    expect_status("ml", "deployment-missed", unmutated, "1");
    expect_status("ml", "deployment-missed", pods, "1");
    expect_status("ml", "deployment-missed", ACTION, "RolledUnmutatedPods");
    expect_status("ml", "deployment-missed", before, "1");   /* the whole GPU it holds */
    expect_status("ml", "deployment-missed", held, "1");
    expect_status("ml", "deployment-missed", saved, "0");
    /* a pod fracgpu took, holding 300 milli: two GPUs asked for, 1.3 held */
    rs = get("/apis/apps/v1/namespaces/ml/replicasets/missed-1");
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"missed-1-fg\",\"labels\":{\"app\":\"missed\",\"fracgpu.io/automate\":"
             "\"true\",\"fracgpu.io/managed\":\"true\"},\"annotations\":{\"fracgpu.io/compute-milli\":\"300\","
             "\"fracgpu.io/memory-mib\":\"10240\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
             "\"ReplicaSet\",\"name\":\"missed-1\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"containers\":["
             "{\"name\":\"main\",\"image\":\"vllm\",\"resources\":{\"limits\":{\"fracgpu.io/gpu-share\":\"1\"}}}]}}",
             fg_json_get_str(rs, "metadata", "uid", NULL));
    json_object_put(rs);
    create("/api/v1/namespaces/ml/pods", body);
    expect_status("ml", "deployment-missed", before, "2");
    expect_status("ml", "deployment-missed", held, "1.3");
    expect_status("ml", "deployment-missed", saved, "0.7");
    static const char *const restarted[] = { "spec", "template", "metadata", "annotations", "fracgpu.io/restarted-at",
                                             NULL };
    json_object *after = NULL;
    for (int i = 0; i < 100 && !after; i++) {
        json_object *o = get(path);
        if (fg_json_get(o, "spec", "template", "metadata", "annotations", "fracgpu.io/restarted-at", NULL))
            after = o;
        else
            json_object_put(o);
        usleep(50000);
    }
    assert_non_null(after);
    char first[64];
    snprintf(first, sizeof(first), "%s",
             fg_json_get_str(after, "spec", "template", "metadata", "annotations", "fracgpu.io/restarted-at", NULL));
    json_object_put(after);
    /* the same pod again (a label changed): no second roll */
    struct fg_kube_status st = { 0 };
    assert_int_equal(fg_kube_patch(h.client, "/api/v1/namespaces/ml/pods/missed-1-abc", FG_KUBE_PATCH_MERGE,
                                   "{\"metadata\":{\"labels\":{\"touched\":\"yes\"}}}", NULL, &st),
                     FG_OK);
    fg_kube_status_cleanup(&st);
    usleep(1500000);
    expect(path, restarted, first);
}

/* A status once written is left alone: every field the reconciler writes is one the GPUWorkload CRD
 * keeps (a field the API server prunes would make each status differ from the stored one, and each
 * write, seen by the watch, would reconcile and write again). */
static void status_written_once(void **state)
{
    (void)state;
    deployment("ml", "steady", "\"fracgpu.io/automate\":\"true\"", GPU_CONTAINER, "");
    expect_status("ml", "deployment-steady", ACTION, "LabelledTemplate");
    char path[256];
    snprintf(path, sizeof(path), GPUWORKLOAD, "ml", "deployment-steady");
    usleep(500000);   /* the writes that follow the template label's roll */
    json_object *before = get(path);
    usleep(1000000);
    json_object *after = get(path);
    assert_string_equal(fg_json_get_str(after, "metadata", "resourceVersion", NULL),
                        fg_json_get_str(before, "metadata", "resourceVersion", NULL));
    json_object_put(before);
    json_object_put(after);
}

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK || fg_harness_crds(&h, msg) != FG_OK ||
        fg_harness_namespace(&h, "ml") != FG_OK)
        fail_msg("harness: %s", msg);
    create("/api/v1/namespaces", "{\"metadata\":{\"name\":\"team\",\"labels\":{\"fracgpu.io/automate\":\"true\"}}}");
    struct fg_manager_opts o = FG_MANAGER_OPTS_DEFAULT;
    o.component = "operator";
    o.kubeconfig = h.kubeconfig;
    o.listen = "127.0.0.1:0";
    o.leader.enabled = false;
    if (fg_manager_new(&o, &m, msg) != FG_OK || fg_policy_reconciler_setup(m, 2, msg) != FG_OK ||
        fg_workload_reconciler_setup(m, &fg_workload_builtin_kinds, 2, msg) != FG_OK ||
        fg_manager_start(m, msg) != FG_OK)
        fail_msg("manager: %s", msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_manager_free(m);
    fg_harness_stop(&h);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opt_in_and_out),
        cmocka_unit_test(namespace_label_and_opt_out),
        cmocka_unit_test(reasons_fractions_and_policies),
        cmocka_unit_test(pods_that_missed_the_webhook_are_rolled),
        cmocka_unit_test(status_written_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
