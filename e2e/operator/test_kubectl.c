/*
 * The operator and its CRDs with the real kubectl against the test API server:
 *   - manifests/ renders with kubectl kustomize; the CRDs it includes (crds/) apply cleanly and
 *     become Established, and `kubectl explain` describes their fields;
 *   - the operator, started as its own process, ensures the four always-present built-ins, upgrades
 *     one an older release wrote and nobody edited, and leaves an edited one alone;
 *   - `kubectl get gpupolicies` lists them with the printer columns;
 *   - a policy the schema refuses is rejected with kubectl's usual message; one that passes the
 *     schema but breaks a cross-field rule is stored and gets an Invalid condition;
 *   - training appears with the first workload that uses it; a GPUWorkload without targetRef is refused;
 *   - a user's edit to a built-in survives an operator restart; a deleted built-in is recreated;
 *   - the overlay docs/exporter.md gives for GPU nodes labelled otherwise renders the node agent with
 *     its node affinity and without the default nodeSelector; the shipped overlays (overlays/: cdi,
 *     gke, prometheus-operator) render with what they change.
 * Every kubectl call has its own cache directory and a timeout; every wait is bounded.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "crds/builtin.h"
#include "e2e/apiserver/apiserver.h"
#include "e2e/tests/kubectl_env.h"

#define TEXT(x) #x
#define DEFAULTS_VERSION(v) TEXT(v)   /* the current built-in defaults version, as the annotation says it */

static struct {
    struct fg_kubectl_env env;
    pid_t operator_pid;
} e;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

#define kubectl(out, stdin_text, ...) fg_kubectl_run(&e.env.k, out, stdin_text, __VA_ARGS__)

static void operator_start(void)
{
    char bin[512];
    snprintf(bin, sizeof bin, "%s/fracgpu", getenv("FG_BIN_DIR"));
    char log[160];
    snprintf(log, sizeof log, "%s/operator.log", e.env.dir);
    e.operator_pid = fork();
    assert_true(e.operator_pid >= 0);
    if (e.operator_pid == 0) {
        int o = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(o, 1);
        dup2(o, 2);
        execl(bin, bin, "operator", "--kubeconfig", e.env.kubeconfig, "--listen", "127.0.0.1:0", "--webhook-listen",
              "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
}

static void operator_stop(void)
{
    if (e.operator_pid <= 0)
        return;
    kill(e.operator_pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200 && waitpid(e.operator_pid, &status, WNOHANG) == 0; i++)
        sleep_ms(50);
    if (waitpid(e.operator_pid, &status, WNOHANG) == 0) {
        kill(e.operator_pid, SIGKILL);
        waitpid(e.operator_pid, &status, 0);
        fail_msg("the operator did not stop on SIGTERM within 10 s");
    }
    e.operator_pid = 0;
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Polls `kubectl get ... -o jsonpath=TEMPLATE` for a GPUPolicy until its output equals want (20 s). */
static void wait_jsonpath(const char *name, const char *jsonpath, const char *want)
{
    struct fg_buf out = FG_BUF_INIT;
    char arg[256];
    snprintf(arg, sizeof arg, "-o=jsonpath=%s", jsonpath);
    for (int i = 0; i < 80; i++) {
        if (kubectl(&out, NULL, "get", "gpupolicy", name, arg, NULL) == 0 && !strcmp(fg_buf_str(&out), want))
            break;
        sleep_ms(250);
    }
    if (strcmp(fg_buf_str(&out), want))
        fail_msg("gpupolicy %s %s: want \"%s\", last saw \"%s\"", name, jsonpath, want, fg_buf_str(&out));
    fg_buf_cleanup(&out);
}

/* The JSON of built-in `name` as defaults version 0 wrote it (a 100h window), edited afterwards
 * (compute headroom 45) when `edited`. The caller frees. */
static char *old_builtin(const char *name, bool edited)
{
    const struct fg_builtin_policy *b = fg_builtin_policy_find(name);
    struct fg_gpupolicy_spec spec = b->spec;
    spec.history_window_ms = 100ll * 3600 * 1000;
    char digest[17];
    fg_gpupolicy_digest(&spec, digest);
    if (edited)
        spec.compute.headroom_percent = 45;
    json_object *o = fg_builtin_policy_object(b);
    json_object *ann = fg_json_get(o, "metadata", "annotations", NULL);
    fg_json_set_str(ann, FG_ANN_DEFAULTS_VERSION, "0");
    fg_json_set_str(ann, FG_ANN_DEFAULTS_DIGEST, digest);
    json_object_object_add(o, "spec", fg_gpupolicy_encode(&spec));
    char *text = fg_strdup(json_object_to_json_string(o));
    json_object_put(o);
    return text;
}

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_kubectl_env_start(&e.env, "fg-e2e-operator", msg) != FG_OK)
        fail_msg("test API server: %s", msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (e.operator_pid > 0) {
        kill(e.operator_pid, SIGKILL);
        waitpid(e.operator_pid, NULL, 0);
    }
    return fg_kubectl_env_stop(&e.env);
}

static void test_operator_with_kubectl(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    char crds[512];
    snprintf(crds, sizeof crds, "%s/crds", getenv("FG_SOURCE_DIR"));

    /* manifests/ renders (what `kubectl apply -k manifests/` sends), CRDs and operator included. */
    char manifests[512];
    snprintf(manifests, sizeof manifests, "%s/manifests", getenv("FG_SOURCE_DIR"));
    if (kubectl(&out, NULL, "kustomize", manifests, NULL) != 0)
        fail_msg("kubectl kustomize manifests: %s", fg_buf_str(&out));
    const char *rendered[] = { "name: gpupolicies.fracgpu.io", "name: gpuworkloads.fracgpu.io", "kind: Deployment",
                               "name: fracgpu-operator", "runAsNonRoot: true", "name: fracgpu-system" };
    for (size_t i = 0; i < sizeof rendered / sizeof rendered[0]; i++)
        if (!strstr(fg_buf_str(&out), rendered[i]))
            fail_msg("\"%s\" missing from the rendered manifests", rendered[i]);

    /* The namespace (where the operator's Lease lives) and the CRDs (manifests/ includes crds/) apply
     * cleanly and are served. */
    char ns[600];
    snprintf(ns, sizeof ns, "%s/namespace.yaml", manifests);
    if (kubectl(&out, NULL, "apply", "-f", ns, NULL) != 0)
        fail_msg("kubectl apply -f manifests/namespace.yaml: %s", fg_buf_str(&out));
    if (kubectl(&out, NULL, "apply", "-k", crds, NULL) != 0)
        fail_msg("kubectl apply -k crds: %s", fg_buf_str(&out));
    assert_non_null(strstr(fg_buf_str(&out), "customresourcedefinition.apiextensions.k8s.io/gpupolicies.fracgpu.io created"));
    if (kubectl(&out, NULL, "wait", "--for=condition=Established", "--timeout=20s",
                "crd/gpupolicies.fracgpu.io", "crd/gpuworkloads.fracgpu.io", NULL) != 0)
        fail_msg("kubectl wait Established: %s", fg_buf_str(&out));
    /* Each field explains itself. */
    static const char *const explained[][2] = {
        { "gpupolicy.spec.compute.percentile", "percentile of the decaying utilization histogram" },
        { "gpuworkload.status.recommendation", "before the policy's minHistory the pods keep whole GPUs" },
        { "gpuworkload.status.usage.memoryPeakMiB", "Peak GPU memory use in the window" },
    };
    for (size_t i = 0; i < sizeof explained / sizeof *explained; i++) {
        if (kubectl(&out, NULL, "explain", explained[i][0], NULL) != 0 || !strstr(fg_buf_str(&out), explained[i][1]))
            fail_msg("kubectl explain %s: %s", explained[i][0], fg_buf_str(&out));
    }

    /* Two built-ins as an older release wrote them: real-time untouched since, real-time-mps edited. */
    char *older = old_builtin("real-time", false);
    if (kubectl(&out, older, "apply", "-f", "-", NULL) != 0)
        fail_msg("apply old real-time: %s", fg_buf_str(&out));
    free(older);
    older = old_builtin("real-time-mps", true);
    if (kubectl(&out, older, "apply", "-f", "-", NULL) != 0)
        fail_msg("apply old real-time-mps: %s", fg_buf_str(&out));
    free(older);

    /* The operator ensures the four always-present built-ins, and marks them Ready. */
    operator_start();
    const char *always[] = { "real-time", "real-time-mps", "near-real-time", "batch" };
    for (size_t i = 0; i < 4; i++)
        wait_jsonpath(always[i], "{.status.conditions[?(@.type==\"Ready\")].status}", "True");
    assert_int_equal(kubectl(&out, NULL, "get", "gpupolicy", "training", NULL), 1);   /* not until used */
    /* The untouched one was upgraded to the current defaults; the edited one was left alone. */
    wait_jsonpath("real-time", "{.spec.historyWindow}", "168h");
    wait_jsonpath("real-time", "{.metadata.annotations.fracgpu\\.io/defaults-version}",
                  DEFAULTS_VERSION(FG_BUILTIN_DEFAULTS_VERSION));
    wait_jsonpath("real-time-mps", "{.spec.historyWindow}", "100h");
    wait_jsonpath("real-time-mps", "{.spec.compute.headroomPercent}", "45");
    wait_jsonpath("real-time-mps", "{.metadata.annotations.fracgpu\\.io/defaults-version}", "0");

    /* kubectl get lists them with their columns. */
    assert_int_equal(kubectl(&out, NULL, "get", "gpupolicies", NULL), 0);
    const char *table = fg_buf_str(&out);
    const char *cols[] = { "NAME", "CLASS", "SHARING", "WINDOW", "COMPUTE-P", "HEADROOM", "WORKLOADS", "AGE" };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (!strstr(table, cols[i]))
            fail_msg("column %s missing from:\n%s", cols[i], table);
    if (!strstr(table, "real-time-mps") || !strstr(table, "mps") || !strstr(table, "336h"))
        fail_msg("rows missing from:\n%s", table);
    assert_int_equal(kubectl(&out, NULL, "get", "gpol", "-o", "name", NULL), 0);
    assert_non_null(strstr(fg_buf_str(&out), "gpupolicy.fracgpu.io/near-real-time"));

    /* The schema refuses a bad enum, with kubectl's usual message. */
    const char *bad = "apiVersion: fracgpu.io/v1alpha1\nkind: GPUPolicy\nmetadata:\n  name: bad\n"
                      "spec:\n  sharing: teleport\n";
    assert_int_not_equal(kubectl(&out, bad, "apply", "-f", "-", NULL), 0);
    if (!strstr(fg_buf_str(&out), "The GPUPolicy \"bad\" is invalid") || !strstr(fg_buf_str(&out), "spec.sharing"))
        fail_msg("unexpected rejection: %s", fg_buf_str(&out));
    assert_int_not_equal(kubectl(&out, NULL, "get", "gpupolicy", "bad", NULL), 0);

    /* A cross-field break passes the schema and gets an Invalid condition that says why. */
    const char *cross = "apiVersion: fracgpu.io/v1alpha1\nkind: GPUPolicy\nmetadata:\n  name: cross\n"
                        "spec:\n  compute:\n    minMilli: 900\n    maxMilli: 100\n";
    if (kubectl(&out, cross, "apply", "-f", "-", NULL) != 0)
        fail_msg("apply cross: %s", fg_buf_str(&out));
    wait_jsonpath("cross", "{.status.conditions[?(@.type==\"Invalid\")].reason}", "ComputeMinAboveMax");
    wait_jsonpath("cross", "{.status.conditions[?(@.type==\"Ready\")].status}", "False");

    /* training is created when the first workload that uses it appears, and counts it. */
    const char *train = "apiVersion: fracgpu.io/v1alpha1\nkind: GPUWorkload\nmetadata:\n  name: job-train\n"
                        "  namespace: default\nspec:\n  targetRef: {apiVersion: batch/v1, kind: Job, name: train}\n"
                        "  policy: training\n";
    if (kubectl(&out, train, "apply", "-f", "-", NULL) != 0)
        fail_msg("apply workload: %s", fg_buf_str(&out));
    wait_jsonpath("training", "{.status.workloads}", "1");
    assert_int_not_equal(kubectl(&out, "apiVersion: fracgpu.io/v1alpha1\nkind: GPUWorkload\nmetadata:\n"
                                       "  name: no-target\n  namespace: default\nspec:\n  policy: batch\n",
                                 "apply", "-f", "-", NULL),
                         0);
    assert_non_null(strstr(fg_buf_str(&out), "spec.targetRef"));

    /* A user's edit to a built-in survives an operator restart. */
    if (kubectl(&out, NULL, "patch", "gpupolicy", "batch", "--type=merge", "-p",
                "{\"spec\":{\"compute\":{\"headroomPercent\":7}}}", NULL) != 0)
        fail_msg("patch batch: %s", fg_buf_str(&out));
    operator_stop();
    operator_start();

    /* A deleted built-in comes back (which also shows the restarted operator has synced). */
    assert_int_equal(kubectl(&out, NULL, "get", "gpupolicy", "near-real-time", "-o=jsonpath={.metadata.uid}", NULL), 0);
    char *old_uid = fg_strdup(fg_buf_str(&out));
    if (kubectl(&out, NULL, "delete", "gpupolicy", "near-real-time", "--wait=false", NULL) != 0)
        fail_msg("delete: %s", fg_buf_str(&out));
    bool back = false;
    for (int i = 0; i < 80 && !back; i++) {
        back = kubectl(&out, NULL, "get", "gpupolicy", "near-real-time", "-o=jsonpath={.metadata.uid}", NULL) == 0 &&
               fg_buf_str(&out)[0] && strcmp(fg_buf_str(&out), old_uid);
        if (!back)
            sleep_ms(250);
    }
    free(old_uid);
    assert_true(back);
    wait_jsonpath("batch", "{.spec.compute.headroomPercent}", "7");
    wait_jsonpath("batch", "{.metadata.annotations.fracgpu\\.io/defaults-version}",
                  DEFAULTS_VERSION(FG_BUILTIN_DEFAULTS_VERSION));

    operator_stop();
    fg_buf_cleanup(&out);
}

/* docs/exporter.md's overlay, beside a checkout of fracgpu, as an administrator writes it. */
static const char NODE_SELECTOR_OVERLAY[] =
    "apiVersion: kustomize.config.k8s.io/v1beta1\n"
    "kind: Kustomization\n"
    "resources:\n"
    "  - ../fracgpu/manifests\n"
    "patches:\n"
    "  - target:\n"
    "      kind: DaemonSet\n"
    "      name: fracgpu-node-agent\n"
    "    patch: |-\n"
    "      - op: remove\n"
    "        path: /spec/template/spec/nodeSelector\n"
    "      - op: add\n"
    "        path: /spec/template/spec/affinity\n"
    "        value:\n"
    "          nodeAffinity:\n"
    "            requiredDuringSchedulingIgnoredDuringExecution:\n"
    "              nodeSelectorTerms:\n"
    "                - matchExpressions:\n"
    "                    - key: cloud.google.com/gke-accelerator\n"
    "                      operator: Exists\n";

/* The node agent's node selector is the overlay's to change: the documented patch applies to the
 * shipped DaemonSet and leaves no trace of the default label. */
static void test_node_selector_overlay(void **state)
{
    (void)state;
    char checkout[128], overlay[128], file[160];
    snprintf(checkout, sizeof checkout, "%s/fracgpu", e.env.dir);
    snprintf(overlay, sizeof overlay, "%s/my-gpu-nodes", e.env.dir);
    snprintf(file, sizeof file, "%s/kustomization.yaml", overlay);
    assert_int_equal(symlink(getenv("FG_SOURCE_DIR"), checkout), 0);
    assert_int_equal(mkdir(overlay, 0755), 0);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    assert_true(fputs(NODE_SELECTOR_OVERLAY, f) >= 0);
    assert_int_equal(fclose(f), 0);

    struct fg_buf out = FG_BUF_INIT;
    if (kubectl(&out, NULL, "kustomize", overlay, NULL) != 0)
        fail_msg("kubectl kustomize the overlay: %s", fg_buf_str(&out));
    char *ds = strstr(fg_buf_str(&out), "kind: DaemonSet\n"), *next;
    assert_non_null(ds);
    if ((next = strstr(ds, "\n---\n")))
        *next = '\0';   /* the DaemonSet's document alone */
    assert_non_null(strstr(ds, "priorityClassName: fracgpu-node-critical"));
    assert_non_null(strstr(ds, "- key: cloud.google.com/gke-accelerator\n                operator: Exists\n"));
    assert_null(strstr(ds, "nvidia.com/gpu.present"));
    assert_null(strstr(ds, "nodeSelector:"));
    fg_buf_cleanup(&out);
}

/* The shipped overlays (overlays/) render over the manifests and change what they say they change. */
static void test_shipped_overlays(void **state)
{
    (void)state;
    static const struct {
        const char *overlay;
        const char *has[4];
        const char *lacks;
    } cases[] = {
        { "cdi", { "- --device-list-strategy=cdi-cri\n", NULL }, NULL },
        { "gke",
          { "- key: cloud.google.com/gke-accelerator\n", "- --nvml-lib=/usr/local/nvidia/lib64/libnvidia-ml.so.1\n",
            "path: /home/kubernetes/bin/nvidia\n", NULL },
          "nvidia.com/gpu.present" },   /* neither the node agent nor the operator's preference names it */
        { "prometheus-operator",
          { "kind: PrometheusRule\n", "alert: FracgpuNodeAgentDown\n", "name: fracgpu-operator\n",
            "release: prometheus\n" }, NULL },
    };
    struct fg_buf out = FG_BUF_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/overlays/%s", getenv("FG_SOURCE_DIR"), cases[i].overlay);
        if (kubectl(&out, NULL, "kustomize", dir, NULL) != 0)
            fail_msg("kubectl kustomize %s: %s", dir, fg_buf_str(&out));
        assert_non_null(strstr(fg_buf_str(&out), "kind: DaemonSet\n"));   /* the whole of fracgpu, changed */
        assert_non_null(strstr(fg_buf_str(&out), "kind: CustomResourceDefinition\n"));
        for (size_t k = 0; k < 4 && cases[i].has[k]; k++)
            if (!strstr(fg_buf_str(&out), cases[i].has[k]))
                fail_msg("overlays/%s renders without \"%s\"", cases[i].overlay, cases[i].has[k]);
        if (cases[i].lacks && strstr(fg_buf_str(&out), cases[i].lacks))
            fail_msg("overlays/%s still renders \"%s\"", cases[i].overlay, cases[i].lacks);
    }
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_operator_with_kubectl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_selector_overlay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shipped_overlays, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
