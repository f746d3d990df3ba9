/*
 * `kubectl apply -k manifests/` with the real kubectl against the test API server, as an
 * administrator installs fracgpu:
 *   - the first apply creates every object of manifests/ (namespace, CRDs, service accounts,
 *     cluster roles and bindings, roles and bindings, the two Secrets the operator fills, services,
 *     the node agent's PriorityClass, the operator Deployment, the node-agent DaemonSet) and exits 0;
 *   - what a real cluster needs of them: the node agent may read the grant key's Secret alone and
 *     delete pods; it runs as root with every capability dropped, mounts the kubelet's device-plugin
 *     directory writable and the rest read-only, and gets its namespace from the downward API; the
 *     operator may write the grant key's Secret by name; the Secret ships without data;
 *   - `kubectl get` of each kind finds them by name, with the columns kubectl shows on a cluster,
 *     and `kubectl get all` the workloads and services;
 *   - a second apply changes nothing: every object is "unchanged";
 *   - an object edited behind kustomize's back (a label added with apply -f) is "configured" back by
 *     the next apply -k, the label gone, and the rest stay unchanged (client-side apply's three-way
 *     merge through the server's OpenAPI and strategic merge patches).
 * No kubelet runs, so the operator's pods never start; this checks what the API holds.
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
#include "base/log.h"
#include "e2e/tests/kubectl_env.h"

#define NS "fracgpu-system"

static struct {
    struct fg_kubectl_env env;
    char manifests[512];
} e;

#define kubectl(out, stdin_text, ...) fg_kubectl_run(&e.env.k, out, stdin_text, __VA_ARGS__)

/* What `kubectl apply -k manifests/` names, in the order kubectl prints them. */
static const char *const objects[] = {
    "namespace/" NS,
    "customresourcedefinition.apiextensions.k8s.io/gpupolicies.fracgpu.io",
    "customresourcedefinition.apiextensions.k8s.io/gpuworkloads.fracgpu.io",
    "customresourcedefinition.apiextensions.k8s.io/gpucheckpoints.fracgpu.io",
    "serviceaccount/fracgpu-capacity-holder",
    "serviceaccount/fracgpu-node-agent",
    "serviceaccount/fracgpu-operator",
    "role.rbac.authorization.k8s.io/fracgpu-capacity-holder",
    "role.rbac.authorization.k8s.io/fracgpu-node-agent",
    "role.rbac.authorization.k8s.io/fracgpu-operator",
    "clusterrole.rbac.authorization.k8s.io/fracgpu-node-agent",
    "clusterrole.rbac.authorization.k8s.io/fracgpu-operator",
    "rolebinding.rbac.authorization.k8s.io/fracgpu-capacity-holder",
    "rolebinding.rbac.authorization.k8s.io/fracgpu-node-agent",
    "rolebinding.rbac.authorization.k8s.io/fracgpu-operator",
    "clusterrolebinding.rbac.authorization.k8s.io/fracgpu-node-agent",
    "clusterrolebinding.rbac.authorization.k8s.io/fracgpu-operator",
    "secret/fracgpu-grant-key",
    "secret/fracgpu-webhook-tls",
    "service/fracgpu-node-agent",
    "service/fracgpu-operator-metrics",
    "service/fracgpu-webhook",
    "priorityclass.scheduling.k8s.io/fracgpu-capacity",
    "priorityclass.scheduling.k8s.io/fracgpu-node-critical",
    "deployment.apps/fracgpu-operator",
    "poddisruptionbudget.policy/fracgpu-capacity",
    "poddisruptionbudget.policy/fracgpu-operator",
    "daemonset.apps/fracgpu-node-agent",
    "mutatingwebhookconfiguration.admissionregistration.k8s.io/fracgpu",
};
#define NOBJECTS (sizeof objects / sizeof objects[0])

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    snprintf(e.manifests, sizeof e.manifests, "%s/manifests", getenv("FG_SOURCE_DIR"));
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_kubectl_env_start(&e.env, "fg-e2e-apply", msg) != FG_OK)
        fail_msg("test API server: %s", msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return fg_kubectl_env_stop(&e.env);
}

/* Checks that apply's output has exactly one line per object, each "<object> <verb>", except that
 * object `odd` (NULL: none) says odd_verb. */
static void expect_apply_lines(const char *out, const char *verb, const char *odd, const char *odd_verb)
{
    size_t lines = 0;
    for (const char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        lines++;
    if (lines != NOBJECTS)
        fail_msg("apply printed %zu lines, want %zu:\n%s", lines, NOBJECTS, out);
    for (size_t i = 0; i < NOBJECTS; i++) {
        char line[256];
        bool is_odd = odd && !strcmp(objects[i], odd);
        snprintf(line, sizeof line, "%s %s\n", objects[i], is_odd ? odd_verb : verb);
        /* A PodDisruptionBudget's selector has patch strategy "replace": kubectl sends it, and says
         * "configured", on every apply. */
        char pdb[256];
        snprintf(pdb, sizeof pdb, "%s configured\n", objects[i]);
        bool replaced = !strcmp(verb, "unchanged") && !strncmp(objects[i], "poddisruptionbudget", 19) && strstr(out, pdb);
        if (!strstr(out, line) && !replaced)
            fail_msg("\"%.*s\" missing from apply's output:\n%s", (int)strlen(line) - 1, line, out);
    }
}

/* `kubectl get KIND [-n NS]`: exits 0, its header is `header` (columns as kubectl spaces them
 * collapsed to one space) and every name appears in the NAME column. */
static void expect_get(const char *kind, bool namespaced, const char *header, const char *const *names, size_t n)
{
    struct fg_buf out = FG_BUF_INIT;
    int rc = namespaced ? kubectl(&out, NULL, "get", kind, "-n", NS, NULL) : kubectl(&out, NULL, "get", kind, NULL);
    if (rc != 0)
        fail_msg("kubectl get %s: %d %s", kind, rc, fg_buf_str(&out));
    char got[256] = "";
    size_t at = 0;
    for (const char *p = fg_buf_str(&out); *p && *p != '\n' && at + 1 < sizeof got; p++)
        if (*p != ' ' || (at && got[at - 1] != ' '))
            got[at++] = *p;
    got[at] = '\0';
    assert_string_equal(got, header);
    for (size_t i = 0; i < n; i++) {
        char row[128];
        snprintf(row, sizeof row, "\n%s ", names[i]);
        if (!strstr(fg_buf_str(&out), row))
            fail_msg("kubectl get %s: %s missing:\n%s", kind, names[i], fg_buf_str(&out));
    }
    fg_buf_cleanup(&out);
}

/* `kubectl get KIND NAME -n NS -o=jsonpath=PATH` (NS NULL: cluster-scoped) prints exactly want. */
static void expect_field(const char *kind, const char *name, const char *ns, const char *path, const char *want)
{
    struct fg_buf out = FG_BUF_INIT;
    char arg[512];
    snprintf(arg, sizeof arg, "-o=jsonpath=%s", path);
    int rc = ns ? kubectl(&out, NULL, "get", kind, name, "-n", ns, arg, NULL)
                : kubectl(&out, NULL, "get", kind, name, arg, NULL);
    if (rc != 0 || strcmp(fg_buf_str(&out), want))
        fail_msg("%s/%s %s: got \"%s\" (exit %d), want \"%s\"", kind, name, path, fg_buf_str(&out), rc, want);
    fg_buf_cleanup(&out);
}

/* What a real cluster needs of the RBAC, the node agent's pod and the grant key's Secret. */
static void expect_device_plugin_needs(void)
{
    /* the node agent: the grant key's Secret alone, read only; pods deleted; Events created */
    expect_field("role", "fracgpu-node-agent", NS, "{.rules[*].resources}{.rules[*].resourceNames}{.rules[*].verbs}",
                 "[\"secrets\"][\"fracgpu-grant-key\"][\"list\",\"watch\"]");
    expect_field("rolebinding", "fracgpu-node-agent", NS, "{.roleRef.kind}/{.roleRef.name} {.subjects[*].name}",
                 "Role/fracgpu-node-agent fracgpu-node-agent");
    expect_field("clusterrole", "fracgpu-node-agent", NULL,
                 "{range .rules[*]}{.resources}{.verbs}{.resourceNames};{end}",
                 "[\"pods\"][\"list\",\"watch\",\"delete\"];[\"events\"][\"create\"];");
    /* the operator: writes the grant key's Secret by name, creates Secrets (a missing one has no name) */
    expect_field("role", "fracgpu-operator", NS,
                 "{range .rules[?(@.resources[0]==\"secrets\")]}{.resourceNames}{.verbs};{end}",
                 "[\"create\"];"
                 "[\"fracgpu-webhook-tls\",\"fracgpu-grant-key\"][\"get\",\"list\",\"watch\",\"update\"];");
    /* the Secret ships without data: the operator writes the key, and a re-apply leaves it alone */
    expect_field("secret", "fracgpu-grant-key", NS, "{.type}:{.data}", "Opaque:");

    /* the node agent's pod: root for the kubelet's sockets, and nothing more */
    const char *ds = "fracgpu-node-agent";
    expect_field("ds", ds, NS, "{.spec.template.spec.securityContext.runAsUser}", "0");
    expect_field("ds", ds, NS,
                 "{.spec.template.spec.containers[0].securityContext.capabilities.drop}"
                 "{.spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation}"
                 "{.spec.template.spec.containers[0].securityContext.privileged}"
                 "{.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem}",
                 "[\"ALL\"]falsefalsetrue");
    /* what it mounts, and that only the device-plugin directory is writable */
    expect_field("ds", ds, NS, "{range .spec.template.spec.volumes[*]}{.name}:{.hostPath.path} {end}",
                 "host-proc:/proc device-plugins:/var/lib/kubelet/device-plugins "
                 "pod-resources:/var/lib/kubelet/pod-resources cdi-etc:/etc/cdi cdi-run:/var/run/cdi "
                 "nvidia-runtime:/etc/nvidia-container-runtime mps:/run/fracgpu/mps ");
    expect_field("ds", ds, NS,
                 "{range .spec.template.spec.containers[0].volumeMounts[*]}{.mountPath}={.readOnly} {end}",
                 "/host/proc=true /var/lib/kubelet/device-plugins= /var/lib/kubelet/pod-resources=true "
                 "/host/etc/cdi=true /host/var/run/cdi=true /host/etc/nvidia-container-runtime=true "
                 "/run/fracgpu/mps=true ");
    /* the flags name those mounts, and the grant key's namespace comes from the downward API */
    expect_field("ds", ds, NS, "{.spec.template.spec.containers[0].args[5:]}",
                 "--device-plugin-dir=/var/lib/kubelet/device-plugins "
                 "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock --cdi-spec-dirs=/host/etc/cdi,/host/var/run/cdi "
                 "--nvidia-runtime-config=/host/etc/nvidia-container-runtime/config.toml "
                 "--mps-root=/run/fracgpu/mps");
    expect_field("ds", ds, NS,
                 "{.spec.template.spec.containers[0].env[?(@.name==\"POD_NAMESPACE\")].valueFrom.fieldRef.fieldPath}",
                 "metadata.namespace");
}

static void test_apply_manifests(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    if (kubectl(&out, NULL, "apply", "-k", e.manifests, NULL) != 0)
        fail_msg("kubectl apply -k manifests: %s", fg_buf_str(&out));
    expect_apply_lines(fg_buf_str(&out), "created", NULL, NULL);

    const char *ns[] = { NS };
    const char *crds[] = { "gpupolicies.fracgpu.io", "gpuworkloads.fracgpu.io", "gpucheckpoints.fracgpu.io" };
    const char *both[] = { "fracgpu-node-agent", "fracgpu-operator" };
    const char *accounts[] = { "fracgpu-capacity-holder", "fracgpu-node-agent", "fracgpu-operator" };
    const char *role[] = { "fracgpu-capacity-holder", "fracgpu-node-agent", "fracgpu-operator" };
    const char *operator[] = { "fracgpu-operator" };
    const char *agent[] = { "fracgpu-node-agent" };
    const char *services[] = { "fracgpu-node-agent", "fracgpu-operator-metrics", "fracgpu-webhook" };
    expect_get("namespaces", false, "NAME STATUS AGE", ns, 1);
    expect_get("crd", false, "NAME CREATED AT", crds, 3);
    expect_get("sa", true, "NAME SECRETS AGE", accounts, 3);
    expect_get("clusterroles", false, "NAME CREATED AT", both, 2);
    expect_get("clusterrolebindings", false, "NAME ROLE AGE", both, 2);
    expect_get("roles", true, "NAME CREATED AT", role, 3);
    expect_get("rolebindings", true, "NAME ROLE AGE", role, 3);
    expect_get("deploy", true, "NAME READY UP-TO-DATE AVAILABLE AGE", operator, 1);
    expect_get("ds", true, "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE", agent, 1);
    expect_get("svc", true, "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE", services, 3);
    const char *hooks[] = { "fracgpu" };
    expect_get("mutatingwebhookconfigurations", false, "NAME WEBHOOKS AGE", hooks, 1);
    const char *pdbs[] = { "fracgpu-operator" };
    expect_get("pdb", true, "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE", pdbs, 1);
    const char *classes[] = { "fracgpu-capacity", "fracgpu-node-critical" };
    expect_get("priorityclasses", false, "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY", classes, 2);
    /* the DaemonSet's pods run at fracgpu's class, not system-node-critical (see the manifest) */
    if (kubectl(&out, NULL, "get", "ds", "fracgpu-node-agent", "-n", NS,
                "-o=jsonpath={.spec.template.spec.priorityClassName}", NULL) != 0 ||
        strcmp(fg_buf_str(&out), "fracgpu-node-critical"))
        fail_msg("node agent's priorityClassName: %s", fg_buf_str(&out));
    expect_device_plugin_needs();

    /* `kubectl get all` (the category) finds the workloads and services, not the RBAC objects. */
    if (kubectl(&out, NULL, "get", "all", "-n", NS, "-o", "name", NULL) != 0)
        fail_msg("kubectl get all: %s", fg_buf_str(&out));
    assert_string_equal(fg_buf_str(&out), "service/fracgpu-node-agent\nservice/fracgpu-operator-metrics\n"
                                          "service/fracgpu-webhook\ndaemonset.apps/fracgpu-node-agent\n"
                                          "deployment.apps/fracgpu-operator\n");

    /* Applying the same manifests again changes nothing. */
    if (kubectl(&out, NULL, "apply", "-k", e.manifests, NULL) != 0)
        fail_msg("second kubectl apply -k manifests: %s", fg_buf_str(&out));
    expect_apply_lines(fg_buf_str(&out), "unchanged", NULL, NULL);

    /* An edit behind kustomize's back is undone by the next apply, and only that object changes. */
    if (kubectl(&out, NULL, "label", "sa", "fracgpu-operator", "-n", NS, "extra=yes", NULL) != 0)
        fail_msg("kubectl label: %s", fg_buf_str(&out));
    if (kubectl(&out, NULL, "apply", "-k", e.manifests, NULL) != 0)
        fail_msg("third kubectl apply -k manifests: %s", fg_buf_str(&out));
    /* a label the manifests never set is not the apply's to remove: still unchanged */
    expect_apply_lines(fg_buf_str(&out), "unchanged", NULL, NULL);
    if (kubectl(&out, NULL, "get", "sa", "fracgpu-operator", "-n", NS, "-o=jsonpath={.metadata.labels.extra}",
                NULL) != 0 || strcmp(fg_buf_str(&out), "yes"))
        fail_msg("label extra: %s", fg_buf_str(&out));
    if (kubectl(&out, NULL, "label", "sa", "fracgpu-operator", "-n", NS, "--overwrite",
                "app.kubernetes.io/name=other", NULL) != 0)
        fail_msg("kubectl label --overwrite: %s", fg_buf_str(&out));
    if (kubectl(&out, NULL, "apply", "-k", e.manifests, NULL) != 0)
        fail_msg("fourth kubectl apply -k manifests: %s", fg_buf_str(&out));
    expect_apply_lines(fg_buf_str(&out), "unchanged", "serviceaccount/fracgpu-operator", "configured");
    if (kubectl(&out, NULL, "get", "sa", "fracgpu-operator", "-n", NS,
                "-o=jsonpath={.metadata.labels.app\\.kubernetes\\.io/name}", NULL) != 0 ||
        strcmp(fg_buf_str(&out), "fracgpu"))
        fail_msg("label app.kubernetes.io/name after apply: %s", fg_buf_str(&out));
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_manifests),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
