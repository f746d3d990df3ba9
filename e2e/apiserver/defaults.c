/*
 * defaults — one function per built-in kind, as kube's SetDefaults_* (see defaults.h).
 *
 * Deployment: replicas 1, strategy RollingUpdate with maxUnavailable and maxSurge 25% (when the type
 * is RollingUpdate or unset), revisionHistoryLimit 10, progressDeadlineSeconds 600. ReplicaSet:
 * replicas 1. StatefulSet: replicas 1, podManagementPolicy OrderedReady, updateStrategy
 * RollingUpdate (partition 0 once it has a rollingUpdate), revisionHistoryLimit 10,
 * persistentVolumeClaimRetentionPolicy Retain/Retain. DaemonSet: updateStrategy RollingUpdate with
 * maxUnavailable 1 and maxSurge 0, revisionHistoryLimit 10. Job: parallelism 1 (and completions 1
 * when neither was set), backoffLimit 6 (the int32 maximum with backoffLimitPerIndex),
 * completionMode NonIndexed, suspend false, podReplacementPolicy TerminatingOrFailed (Failed with a
 * podFailurePolicy, whose onPodConditions get status True), the template's labels as the Job's when
 * it has none; manualSelector stays unset. CronJob: concurrencyPolicy Allow, suspend false,
 * successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1. Every pod template as defaults_pod.c
 * says. Service: type ClusterIP, sessionAffinity None (ClientIP gets a 10800 s timeout), ports'
 * protocol TCP and targetPort = port, externalTrafficPolicy Cluster for NodePort and LoadBalancer,
 * internalTrafficPolicy Cluster unless ExternalName, allocateLoadBalancerNodePorts true for a
 * LoadBalancer. PriorityClass: preemptionPolicy PreemptLowerPriority. StorageClass: reclaimPolicy
 * Delete, volumeBindingMode Immediate. PersistentVolumeClaim: volumeMode Filesystem,
 * status.phase Pending. Namespace: the label
 * kubernetes.io/metadata.name. Secret: type Opaque. Node: status.allocatable = capacity when absent.
 * EndpointSlice: ports' name "" and protocol TCP. Webhook configurations: failurePolicy Fail,
 * matchPolicy Equivalent, empty namespace and object selectors, timeoutSeconds 10, reinvocationPolicy
 * Never (mutating), rules' scope "*", clientConfig.service.port 443.
 */
#include "e2e/apiserver/defaults.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"

#define INT32_MAX_VALUE 2147483647

static bool is_object(const struct fg__cow_node *n)
{
    return json_object_is_type(n->obj, json_type_object);
}

static bool str_is(const struct fg__cow_node *n, const char *key, const char *want)
{
    return fg_str_eq(fg_json_get_str(n->obj, key, NULL), want);
}

/* spec.template.spec of a workload's spec node. */
static void template(struct fg__cow *c, struct fg__cow_node *spec)
{
    struct fg__cow_node tpl = fg__cow_child(spec, "template");
    struct fg__cow_node pod_spec = fg__cow_child(&tpl, "spec");
    fg__defaults_pod_spec(c, &pod_spec, false);
}

static void pod(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    fg__defaults_pod_spec(c, &spec, true);
}

/* An IntOrString default: a percentage as a string, else an integer. */
static void int_or_string(struct fg__cow *c, struct fg__cow_node *n, const char *key, const char *value)
{
    if (strchr(value, '%'))
        fg__cow_default_str(c, n, key, FG__COW_IF_NIL, value);
    else
        fg__cow_default_int(c, n, key, FG__COW_IF_NIL, atoi(value));
}

/* A Deployment's or DaemonSet's strategy (under key): type RollingUpdate when unset, and then
 * rollingUpdate's maxUnavailable and maxSurge. */
static void rolling_update(struct fg__cow *c, struct fg__cow_node *spec, const char *key, const char *max_unavailable,
                           const char *max_surge)
{
    struct fg__cow_node strategy = fg__cow_child(spec, key);
    fg__cow_default_str(c, &strategy, "type", FG__COW_IF_ZERO, "RollingUpdate");
    if (!str_is(&strategy, "type", "RollingUpdate"))
        return;
    struct fg__cow_node rolling = fg__cow_child(&strategy, "rollingUpdate");
    int_or_string(c, &rolling, "maxUnavailable", max_unavailable);
    int_or_string(c, &rolling, "maxSurge", max_surge);
}

static void deployment(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    fg__cow_default_int(c, &spec, "replicas", FG__COW_IF_NIL, 1);
    rolling_update(c, &spec, "strategy", "25%", "25%");
    fg__cow_default_int(c, &spec, "revisionHistoryLimit", FG__COW_IF_NIL, 10);
    fg__cow_default_int(c, &spec, "progressDeadlineSeconds", FG__COW_IF_NIL, 600);
    template(c, &spec);
}

static void replica_set(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    fg__cow_default_int(c, &spec, "replicas", FG__COW_IF_NIL, 1);
    template(c, &spec);
}

static void stateful_set(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    fg__cow_default_str(c, &spec, "podManagementPolicy", FG__COW_IF_ZERO, "OrderedReady");
    struct fg__cow_node strategy = fg__cow_child(&spec, "updateStrategy");
    struct fg__cow_node rolling = fg__cow_child(&strategy, "rollingUpdate");
    if (fg__cow_default_str(c, &strategy, "type", FG__COW_IF_ZERO, "RollingUpdate") && !rolling.obj)
        fg__cow_own(c, &rolling); /* {}, to take the defaults below */
    if (str_is(&strategy, "type", "RollingUpdate") && is_object(&rolling))
        fg__cow_default_int(c, &rolling, "partition", FG__COW_IF_NIL, 0);
    struct fg__cow_node retention = fg__cow_child(&spec, "persistentVolumeClaimRetentionPolicy");
    fg__cow_default_str(c, &retention, "whenDeleted", FG__COW_IF_ZERO, "Retain");
    fg__cow_default_str(c, &retention, "whenScaled", FG__COW_IF_ZERO, "Retain");
    fg__cow_default_int(c, &spec, "replicas", FG__COW_IF_NIL, 1);
    fg__cow_default_int(c, &spec, "revisionHistoryLimit", FG__COW_IF_NIL, 10);
    template(c, &spec);
}

static void daemon_set(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    rolling_update(c, &spec, "updateStrategy", "1", "0");
    fg__cow_default_int(c, &spec, "revisionHistoryLimit", FG__COW_IF_NIL, 10);
    template(c, &spec);
}

/* SetDefaults_PodFailurePolicyOnPodConditionsPattern: status True. */
static void pod_failure_policy(struct fg__cow *c, struct fg__cow_node *job_spec)
{
    struct fg__cow_node policy = fg__cow_child(job_spec, "podFailurePolicy");
    struct fg__cow_node rules = fg__cow_child(&policy, "rules");
    for (size_t i = 0; i < fg__cow_len(&rules); i++) {
        struct fg__cow_node rule = fg__cow_elem(&rules, i);
        struct fg__cow_node patterns = fg__cow_child(&rule, "onPodConditions");
        for (size_t k = 0; k < fg__cow_len(&patterns); k++) {
            struct fg__cow_node pattern = fg__cow_elem(&patterns, k);
            fg__cow_default_str(c, &pattern, "status", FG__COW_IF_ZERO, "True");
        }
    }
}

static void job(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    if (fg__cow_unset(&spec, "completions", FG__COW_IF_NIL) && fg__cow_unset(&spec, "parallelism", FG__COW_IF_NIL))
        fg__cow_default_int(c, &spec, "completions", FG__COW_IF_NIL, 1);
    fg__cow_default_int(c, &spec, "parallelism", FG__COW_IF_NIL, 1);
    bool per_index = !fg__cow_unset(&spec, "backoffLimitPerIndex", FG__COW_IF_NIL);
    fg__cow_default_int(c, &spec, "backoffLimit", FG__COW_IF_NIL, per_index ? INT32_MAX_VALUE : 6);
    json_object *labels = fg_json_get(spec.obj, "template", "metadata", "labels", NULL);
    struct fg__cow_node meta = fg__cow_child(root, "metadata");
    json_object *own_labels = fg_json_get(meta.obj, "labels", NULL);
    if (json_object_is_type(labels, json_type_object) &&
        (!json_object_is_type(own_labels, json_type_object) || !json_object_object_length(own_labels)))
        fg__cow_set(c, &meta, "labels", json_object_get(labels));
    fg__cow_default_str(c, &spec, "completionMode", FG__COW_IF_NIL, "NonIndexed");
    fg__cow_default_bool(c, &spec, "suspend", false);
    pod_failure_policy(c, &spec);
    bool failure_policy = !fg__cow_unset(&spec, "podFailurePolicy", FG__COW_IF_NIL);
    fg__cow_default_str(c, &spec, "podReplacementPolicy", FG__COW_IF_NIL,
                        failure_policy ? "Failed" : "TerminatingOrFailed");
    template(c, &spec);
}

static void cron_job(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    fg__cow_default_str(c, &spec, "concurrencyPolicy", FG__COW_IF_ZERO, "Allow");
    fg__cow_default_bool(c, &spec, "suspend", false);
    fg__cow_default_int(c, &spec, "successfulJobsHistoryLimit", FG__COW_IF_NIL, 3);
    fg__cow_default_int(c, &spec, "failedJobsHistoryLimit", FG__COW_IF_NIL, 1);
    struct fg__cow_node job_template = fg__cow_child(&spec, "jobTemplate");
    struct fg__cow_node job_spec = fg__cow_child(&job_template, "spec");
    pod_failure_policy(c, &job_spec);
    template(c, &job_spec);
}

static void service(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    fg__cow_default_str(c, &spec, "sessionAffinity", FG__COW_IF_ZERO, "None");
    fg__cow_default_str(c, &spec, "type", FG__COW_IF_ZERO, "ClusterIP");
    if (str_is(&spec, "sessionAffinity", "ClientIP")) {
        struct fg__cow_node config = fg__cow_child(&spec, "sessionAffinityConfig");
        struct fg__cow_node client_ip = fg__cow_child(&config, "clientIP");
        fg__cow_default_int(c, &client_ip, "timeoutSeconds", FG__COW_IF_NIL, 10800);
    }
    struct fg__cow_node ports = fg__cow_child(&spec, "ports");
    for (size_t i = 0; i < fg__cow_len(&ports); i++) {
        struct fg__cow_node port = fg__cow_elem(&ports, i);
        fg__cow_default_str(c, &port, "protocol", FG__COW_IF_ZERO, "TCP");
        json_object *number = fg_json_get(port.obj, "port", NULL);
        if (number && fg__cow_unset(&port, "targetPort", FG__COW_IF_ZERO))
            fg__cow_set(c, &port, "targetPort", json_object_get(number));
    }
    bool node_ports = str_is(&spec, "type", "NodePort") || str_is(&spec, "type", "LoadBalancer");
    if (node_ports)
        fg__cow_default_str(c, &spec, "externalTrafficPolicy", FG__COW_IF_ZERO, "Cluster");
    if (node_ports || str_is(&spec, "type", "ClusterIP"))
        fg__cow_default_str(c, &spec, "internalTrafficPolicy", FG__COW_IF_NIL, "Cluster");
    if (str_is(&spec, "type", "LoadBalancer"))
        fg__cow_default_bool(c, &spec, "allocateLoadBalancerNodePorts", true);
}

static void priority_class(struct fg__cow *c, struct fg__cow_node *root)
{
    fg__cow_default_str(c, root, "preemptionPolicy", FG__COW_IF_NIL, "PreemptLowerPriority");
}

static void storage_class(struct fg__cow *c, struct fg__cow_node *root)
{
    fg__cow_default_str(c, root, "reclaimPolicy", FG__COW_IF_NIL, "Delete");
    fg__cow_default_str(c, root, "volumeBindingMode", FG__COW_IF_NIL, "Immediate");
}

static void persistent_volume_claim(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node spec = fg__cow_child(root, "spec");
    fg__cow_default_str(c, &spec, "volumeMode", FG__COW_IF_NIL, "Filesystem");
    struct fg__cow_node status = fg__cow_child(root, "status");
    fg__cow_default_str(c, &status, "phase", FG__COW_IF_NIL, "Pending");
}

static void namespace(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node meta = fg__cow_child(root, "metadata");
    const char *name = fg_json_get_str(meta.obj, "name", NULL);
    struct fg__cow_node labels = fg__cow_child(&meta, "labels");
    if (name && *name && !str_is(&labels, "kubernetes.io/metadata.name", name))
        fg__cow_set(c, &labels, "kubernetes.io/metadata.name", json_object_new_string(name));
}

static void secret(struct fg__cow *c, struct fg__cow_node *root)
{
    fg__cow_default_str(c, root, "type", FG__COW_IF_ZERO, "Opaque");
}

static void node(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node status = fg__cow_child(root, "status");
    json_object *capacity = fg_json_get(status.obj, "capacity", NULL);
    if (is_object(&status) && capacity && fg__cow_unset(&status, "allocatable", FG__COW_IF_NIL))
        fg__cow_set(c, &status, "allocatable", json_object_get(capacity));
}

static void endpoint_slice(struct fg__cow *c, struct fg__cow_node *root)
{
    struct fg__cow_node ports = fg__cow_child(root, "ports");
    for (size_t i = 0; i < fg__cow_len(&ports); i++) {
        struct fg__cow_node port = fg__cow_elem(&ports, i);
        fg__cow_default_str(c, &port, "name", FG__COW_IF_NIL, "");
        fg__cow_default_str(c, &port, "protocol", FG__COW_IF_NIL, "TCP");
    }
}

static void webhooks(struct fg__cow *c, struct fg__cow_node *root, bool mutating)
{
    struct fg__cow_node hooks = fg__cow_child(root, "webhooks");
    for (size_t i = 0; i < fg__cow_len(&hooks); i++) {
        struct fg__cow_node hook = fg__cow_elem(&hooks, i);
        fg__cow_default_str(c, &hook, "failurePolicy", FG__COW_IF_NIL, "Fail");
        fg__cow_default_str(c, &hook, "matchPolicy", FG__COW_IF_NIL, "Equivalent");
        static const char *const selectors[] = { "namespaceSelector", "objectSelector" };
        for (size_t s = 0; s < sizeof(selectors) / sizeof(*selectors); s++) {
            struct fg__cow_node sel = fg__cow_child(&hook, selectors[s]);
            if (!sel.obj)
                fg__cow_own(c, &sel); /* {} */
        }
        fg__cow_default_int(c, &hook, "timeoutSeconds", FG__COW_IF_NIL, 10);
        if (mutating)
            fg__cow_default_str(c, &hook, "reinvocationPolicy", FG__COW_IF_NIL, "Never");
        struct fg__cow_node rules = fg__cow_child(&hook, "rules");
        for (size_t r = 0; r < fg__cow_len(&rules); r++) {
            struct fg__cow_node rule = fg__cow_elem(&rules, r);
            fg__cow_default_str(c, &rule, "scope", FG__COW_IF_NIL, "*");
        }
        struct fg__cow_node config = fg__cow_child(&hook, "clientConfig");
        struct fg__cow_node svc = fg__cow_child(&config, "service");
        if (svc.obj)
            fg__cow_default_int(c, &svc, "port", FG__COW_IF_NIL, 443);
    }
}

static void mutating_webhooks(struct fg__cow *c, struct fg__cow_node *root)
{
    webhooks(c, root, true);
}

static void validating_webhooks(struct fg__cow *c, struct fg__cow_node *root)
{
    webhooks(c, root, false);
}

static const struct {
    const char *group, *plural;
    void (*apply)(struct fg__cow *c, struct fg__cow_node *root);
} kinds[] = {
    { "", "pods", pod },
    { "", "services", service },
    { "", "namespaces", namespace },
    { "", "secrets", secret },
    { "", "nodes", node },
    { "apps", "deployments", deployment },
    { "apps", "replicasets", replica_set },
    { "apps", "statefulsets", stateful_set },
    { "apps", "daemonsets", daemon_set },
    { "batch", "jobs", job },
    { "batch", "cronjobs", cron_job },
    { "", "persistentvolumeclaims", persistent_volume_claim },
    { "scheduling.k8s.io", "priorityclasses", priority_class },
    { "storage.k8s.io", "storageclasses", storage_class },
    { "discovery.k8s.io", "endpointslices", endpoint_slice },
    { "admissionregistration.k8s.io", "mutatingwebhookconfigurations", mutating_webhooks },
    { "admissionregistration.k8s.io", "validatingwebhookconfigurations", validating_webhooks },
};

void fg__defaults_apply(const struct fg__type *type, json_object *obj)
{
    if (type->crd || !json_object_is_type(obj, json_type_object))
        return;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++) {
        if (strcmp(kinds[i].plural, type->plural) || strcmp(kinds[i].group, type->group))
            continue;
        struct fg__cow c;
        struct fg__cow_node root;
        fg__cow_init(&c, &root, obj);
        kinds[i].apply(&c, &root);
        fg__cow_cleanup(&c);
        return;
    }
}
