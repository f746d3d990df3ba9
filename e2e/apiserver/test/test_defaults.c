/*
 * Defaulting of built-in objects as kube-apiserver's SetDefaults_* functions do it, kind by kind:
 * each case gives an object as sent and the whole object expected back. Every case also shares the
 * sent object's members with the defaulted one, as a write does, and checks that the sent object
 * did not change (copy on write), and that defaulting the result again changes nothing. Over HTTP:
 * updates and patches are defaulted as creates are (so re-sending an object bumps no generation),
 * and a new Job gets kube's generated selector and labels from its uid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"
#include "client.h"
#include "e2e/apiserver/defaults.h"
#include "e2e/apiserver/patch.h"


/* Defaults `sent` as a type of group/plural and compares with `want`. */
static void expect(const char *group, const char *plural, const char *sent, const char *want)
{
    const struct fg__type *type = fg__registry_find(&tc_reg, group, "v1", plural);
    assert_non_null(type);
    json_object *body = tc_parse(sent), *before = fg__json_dup(body);
    json_object *obj = fg__json_shallow_dup(body); /* a private root sharing every member, as a write's */
    fg__defaults_apply(type, obj);
    json_object *expected = tc_parse(want);
    if (!json_object_equal(obj, expected))
        fail_msg("%s: got\n%s\nwant\n%s", plural, json_object_to_json_string(obj), want);
    if (!json_object_equal(body, before))
        fail_msg("%s: the sent object changed: %s", plural, json_object_to_json_string(body));
    json_object *again = fg__json_dup(obj);
    fg__defaults_apply(type, obj);
    assert_true(json_object_equal(obj, again));
    json_object_put(again);
    json_object_put(expected);
    json_object_put(obj);
    json_object_put(before);
    json_object_put(body);
}

#define POD_SPEC_DEFAULTS \
    "\"dnsPolicy\":\"ClusterFirst\",\"restartPolicy\":\"Always\",\"securityContext\":{}," \
    "\"terminationGracePeriodSeconds\":30,\"schedulerName\":\"default-scheduler\""
#define CONTAINER_DEFAULTS "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\""
#define TEMPLATE_DEFAULTS                                                                                            \
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"app:v1\",\"imagePullPolicy\":\"IfNotPresent\"," \
    CONTAINER_DEFAULTS "}]," POD_SPEC_DEFAULTS "}}"
#define TEMPLATE_SENT "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"app:v1\"}]}}"

static void pod(void **state)
{
    (void)state;
    expect("", "pods",
           "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"hostNetwork\":true,\"containers\":[{\"name\":\"a\","
           "\"image\":\"busybox\",\"ports\":[{\"containerPort\":80},{\"containerPort\":53,\"protocol\":\"UDP\","
           "\"hostPort\":5353}],\"resources\":{\"limits\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"},"
           "\"requests\":{\"cpu\":\"500m\"}},\"livenessProbe\":{\"httpGet\":{\"port\":8080}},"
           "\"readinessProbe\":{\"exec\":{\"command\":[\"true\"]},\"periodSeconds\":5},"
           "\"lifecycle\":{\"preStop\":{\"httpGet\":{\"port\":80,\"path\":\"/quit\"}}},"
           "\"env\":[{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}}]},"
           "{\"name\":\"b\",\"image\":\"reg.io:5000/team/app:latest\",\"imagePullPolicy\":\"Never\"},"
           "{\"name\":\"c\",\"image\":\"app@sha256:abc\"},{\"name\":\"d\",\"image\":\"localhost:5000/app\"}],"
           "\"initContainers\":[{\"name\":\"i\",\"image\":\"init:1.0\",\"resources\":{\"limits\":{\"memory\":\"1Gi\"}}}],"
           "\"restartPolicy\":\"Never\",\"serviceAccount\":\"old\"}}",
           "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"hostNetwork\":true,\"containers\":[{\"name\":\"a\","
           "\"image\":\"busybox\",\"imagePullPolicy\":\"Always\",\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\","
           "\"hostPort\":80},{\"containerPort\":53,\"protocol\":\"UDP\",\"hostPort\":5353}],"
           "\"resources\":{\"limits\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"},\"requests\":{\"cpu\":\"500m\","
           "\"nvidia.com/gpu\":\"1\"}},\"livenessProbe\":{\"httpGet\":{\"port\":8080,\"path\":\"/\",\"scheme\":\"HTTP\"},"
           "\"timeoutSeconds\":1,\"periodSeconds\":10,\"successThreshold\":1,\"failureThreshold\":3},"
           "\"readinessProbe\":{\"exec\":{\"command\":[\"true\"]},\"periodSeconds\":5,\"timeoutSeconds\":1,"
           "\"successThreshold\":1,\"failureThreshold\":3},"
           "\"lifecycle\":{\"preStop\":{\"httpGet\":{\"port\":80,\"path\":\"/quit\",\"scheme\":\"HTTP\"}}},"
           "\"env\":[{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\","
           "\"apiVersion\":\"v1\"}}}]," CONTAINER_DEFAULTS "},"
           "{\"name\":\"b\",\"image\":\"reg.io:5000/team/app:latest\",\"imagePullPolicy\":\"Never\"," CONTAINER_DEFAULTS
           "},{\"name\":\"c\",\"image\":\"app@sha256:abc\",\"imagePullPolicy\":\"IfNotPresent\"," CONTAINER_DEFAULTS "},"
           "{\"name\":\"d\",\"image\":\"localhost:5000/app\",\"imagePullPolicy\":\"Always\"," CONTAINER_DEFAULTS "}],"
           "\"initContainers\":[{\"name\":\"i\",\"image\":\"init:1.0\",\"imagePullPolicy\":\"IfNotPresent\","
           "\"resources\":{\"limits\":{\"memory\":\"1Gi\"},\"requests\":{\"memory\":\"1Gi\"}}," CONTAINER_DEFAULTS "}],"
           "\"restartPolicy\":\"Never\",\"serviceAccount\":\"old\",\"serviceAccountName\":\"old\","
           "\"dnsPolicy\":\"ClusterFirst\",\"securityContext\":{},\"terminationGracePeriodSeconds\":30,"
           "\"schedulerName\":\"default-scheduler\",\"enableServiceLinks\":true}}");
    /* no spec at all: a Pod still gets every spec default (kube's PodSpec is a struct, never nil) */
    expect("", "pods", "{\"metadata\":{\"name\":\"bare\"}}",
           "{\"metadata\":{\"name\":\"bare\"},\"spec\":{" POD_SPEC_DEFAULTS ",\"serviceAccountName\":\"default\","
           "\"serviceAccount\":\"default\",\"enableServiceLinks\":true}}");
}

static void workloads(void **state)
{
    (void)state;
    expect("apps", "deployments", "{\"spec\":{" TEMPLATE_SENT "}}",
           "{\"spec\":{\"replicas\":1,\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":"
           "\"25%\",\"maxSurge\":\"25%\"}},\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600,"
           TEMPLATE_DEFAULTS "}}");
    expect("apps", "deployments",
           "{\"spec\":{\"replicas\":0,\"strategy\":{\"type\":\"Recreate\"},\"revisionHistoryLimit\":2," TEMPLATE_SENT "}}",
           "{\"spec\":{\"replicas\":0,\"strategy\":{\"type\":\"Recreate\"},\"revisionHistoryLimit\":2,"
           "\"progressDeadlineSeconds\":600," TEMPLATE_DEFAULTS "}}");
    expect("apps", "deployments", "{\"spec\":{\"strategy\":{\"rollingUpdate\":{\"maxSurge\":0}}," TEMPLATE_SENT "}}",
           "{\"spec\":{\"replicas\":1,\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":0,"
           "\"maxUnavailable\":\"25%\"}},\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600,"
           TEMPLATE_DEFAULTS "}}");
    expect("apps", "replicasets", "{\"spec\":{" TEMPLATE_SENT "}}", "{\"spec\":{\"replicas\":1," TEMPLATE_DEFAULTS "}}");
    expect("apps", "statefulsets", "{\"spec\":{" TEMPLATE_SENT "}}",
           "{\"spec\":{\"podManagementPolicy\":\"OrderedReady\",\"updateStrategy\":{\"type\":\"RollingUpdate\","
           "\"rollingUpdate\":{\"partition\":0}},\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":\"Retain\","
           "\"whenScaled\":\"Retain\"},\"replicas\":1,\"revisionHistoryLimit\":10," TEMPLATE_DEFAULTS "}}");
    expect("apps", "statefulsets", "{\"spec\":{\"updateStrategy\":{\"type\":\"OnDelete\"}," TEMPLATE_SENT "}}",
           "{\"spec\":{\"podManagementPolicy\":\"OrderedReady\",\"updateStrategy\":{\"type\":\"OnDelete\"},"
           "\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":\"Retain\",\"whenScaled\":\"Retain\"},"
           "\"replicas\":1,\"revisionHistoryLimit\":10," TEMPLATE_DEFAULTS "}}");
    expect("apps", "daemonsets", "{\"spec\":{" TEMPLATE_SENT "}}",
           "{\"spec\":{\"updateStrategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":1,"
           "\"maxSurge\":0}},\"revisionHistoryLimit\":10," TEMPLATE_DEFAULTS "}}");
}

static void jobs(void **state)
{
    (void)state;
    expect("batch", "jobs", "{\"metadata\":{\"name\":\"j\"},\"spec\":{" TEMPLATE_SENT "}}",
           "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"completions\":1,\"parallelism\":1,\"backoffLimit\":6,"
           "\"completionMode\":\"NonIndexed\",\"suspend\":false,\"podReplacementPolicy\":\"TerminatingOrFailed\","
           TEMPLATE_DEFAULTS "}}");
    /* parallelism alone: no completions; template labels become the Job's; a failure policy */
    expect("batch", "jobs",
           "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":3,\"backoffLimitPerIndex\":1,"
           "\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{\"type\":\"DisruptionTarget\"}]}]},"
           "\"template\":{\"metadata\":{\"labels\":{\"app\":\"x\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
           "\"image\":\"app:v1\"}]}}}}",
           "{\"metadata\":{\"name\":\"j\",\"labels\":{\"app\":\"x\"}},\"spec\":{\"parallelism\":3,"
           "\"backoffLimitPerIndex\":1,\"backoffLimit\":2147483647,\"completionMode\":\"NonIndexed\",\"suspend\":false,"
           "\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{\"type\":\"DisruptionTarget\","
           "\"status\":\"True\"}]}]},\"podReplacementPolicy\":\"Failed\",\"template\":{\"metadata\":{\"labels\":"
           "{\"app\":\"x\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"app:v1\",\"imagePullPolicy\":"
           "\"IfNotPresent\"," CONTAINER_DEFAULTS "}]," POD_SPEC_DEFAULTS "}}}}");
    expect("batch", "cronjobs", "{\"spec\":{\"schedule\":\"* * * * *\",\"jobTemplate\":{\"spec\":{" TEMPLATE_SENT "}}}}",
           "{\"spec\":{\"schedule\":\"* * * * *\",\"concurrencyPolicy\":\"Allow\",\"suspend\":false,"
           "\"successfulJobsHistoryLimit\":3,\"failedJobsHistoryLimit\":1,\"jobTemplate\":{\"spec\":{"
           TEMPLATE_DEFAULTS "}}}}");
}

static void services_and_others(void **state)
{
    (void)state;
    expect("", "services", "{\"spec\":{\"ports\":[{\"port\":80},{\"port\":53,\"protocol\":\"UDP\",\"targetPort\":\"dns\"}]}}",
           "{\"spec\":{\"ports\":[{\"port\":80,\"protocol\":\"TCP\",\"targetPort\":80},{\"port\":53,\"protocol\":\"UDP\","
           "\"targetPort\":\"dns\"}],\"sessionAffinity\":\"None\",\"type\":\"ClusterIP\","
           "\"internalTrafficPolicy\":\"Cluster\"}}");
    expect("", "services", "{\"spec\":{\"type\":\"LoadBalancer\",\"sessionAffinity\":\"ClientIP\"}}",
           "{\"spec\":{\"type\":\"LoadBalancer\",\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":"
           "{\"clientIP\":{\"timeoutSeconds\":10800}},\"externalTrafficPolicy\":\"Cluster\","
           "\"internalTrafficPolicy\":\"Cluster\",\"allocateLoadBalancerNodePorts\":true}}");
    expect("", "services", "{\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"x.example\"}}",
           "{\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"x.example\",\"sessionAffinity\":\"None\"}}");
    expect("scheduling.k8s.io", "priorityclasses", "{\"value\":5}",
           "{\"value\":5,\"preemptionPolicy\":\"PreemptLowerPriority\"}");
    expect("", "namespaces", "{\"metadata\":{\"name\":\"team\",\"labels\":{\"a\":\"b\"}}}",
           "{\"metadata\":{\"name\":\"team\",\"labels\":{\"a\":\"b\",\"kubernetes.io/metadata.name\":\"team\"}}}");
    expect("", "secrets", "{\"data\":{}}", "{\"data\":{},\"type\":\"Opaque\"}");
    expect("", "nodes", "{\"status\":{\"capacity\":{\"cpu\":\"4\"}}}",
           "{\"status\":{\"capacity\":{\"cpu\":\"4\"},\"allocatable\":{\"cpu\":\"4\"}}}");
    expect("discovery.k8s.io", "endpointslices", "{\"ports\":[{\"port\":8443}]}",
           "{\"ports\":[{\"port\":8443,\"name\":\"\",\"protocol\":\"TCP\"}]}");
    expect("admissionregistration.k8s.io", "mutatingwebhookconfigurations",
           "{\"webhooks\":[{\"name\":\"h\",\"clientConfig\":{\"service\":{\"namespace\":\"ns\",\"name\":\"s\"}},"
           "\"rules\":[{\"operations\":[\"CREATE\"]}]}]}",
           "{\"webhooks\":[{\"name\":\"h\",\"clientConfig\":{\"service\":{\"namespace\":\"ns\",\"name\":\"s\","
           "\"port\":443}},\"rules\":[{\"operations\":[\"CREATE\"],\"scope\":\"*\"}],\"failurePolicy\":\"Fail\","
           "\"matchPolicy\":\"Equivalent\",\"namespaceSelector\":{},\"objectSelector\":{},\"timeoutSeconds\":10,"
           "\"reinvocationPolicy\":\"Never\"}]}");
    expect("", "configmaps", "{\"data\":{\"a\":\"b\"}}", "{\"data\":{\"a\":\"b\"}}");
}

#define BASE tc_srv.base
#define PODS "/api/v1/namespaces/default/pods"
#define JOBS "/apis/batch/v1/namespaces/default/jobs"

static int64_t generation(json_object *o)
{
    int64_t g = 0;
    assert_true(fg_json_get_int64(o, &g, "metadata", "generation", NULL));
    return g;
}

static void updates_and_patches(void **state)
{
    (void)state;
    static const char bare[] = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                               "\"image\":\"app:v2\"}]}}";
    tc_create(BASE, PODS, bare);
    json_object *o = tc_expect_json(BASE, "PUT", PODS "/p", "application/json", bare, 200);
    assert_string_equal(fg_json_get_str(o, "spec", "schedulerName", NULL), "default-scheduler");
    assert_int_equal(generation(o), 1); /* the same spec once defaulted */
    json_object_put(o);
    o = tc_expect_json(BASE, "PATCH", PODS "/p", "application/merge-patch+json",
                       "{\"spec\":{\"dnsPolicy\":null,\"restartPolicy\":\"\"}}", 200);
    assert_string_equal(fg_json_get_str(o, "spec", "dnsPolicy", NULL), "ClusterFirst");
    assert_string_equal(fg_json_get_str(o, "spec", "restartPolicy", NULL), "Always");
    assert_int_equal(generation(o), 1);
    json_object_put(o);
    o = tc_expect_json(BASE, "PATCH", PODS "/p", "application/json-patch+json",
                       "[{\"op\":\"remove\",\"path\":\"/spec/containers/0/imagePullPolicy\"}]", 200);
    json_object *ct = json_object_array_get_idx(fg_json_get(o, "spec", "containers", NULL), 0);
    assert_string_equal(fg_json_get_str(ct, "imagePullPolicy", NULL), "IfNotPresent");
    json_object_put(o);
}

/* A Job's selector and template cannot change (unless it is suspended); its metadata can. */
static void job_template_immutable(void **state)
{
    (void)state;
    json_object_put(tc_expect_json(BASE, "POST", JOBS, "application/json",
                                   "{\"metadata\":{\"name\":\"t\"},\"spec\":{" TEMPLATE_SENT "}}", 201));
    tc_expect_status(BASE, "PATCH", JOBS "/t", "application/merge-patch+json",
                     "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"fracgpu.io/automate\":\"true\"}}}}}", 422,
                     "Invalid", "spec.template");
    tc_expect_status(BASE, "PATCH", JOBS "/t", "application/merge-patch+json",
                     "{\"spec\":{\"selector\":{\"matchLabels\":{\"x\":\"y\"}}}}", 422, "Invalid", "spec.selector");
    json_object_put(tc_expect_json(BASE, "PATCH", JOBS "/t", "application/merge-patch+json",
                                   "{\"metadata\":{\"labels\":{\"team\":\"ml\"}}}", 200));
    json_object_put(tc_expect_json(BASE, "PATCH", JOBS "/t", "application/merge-patch+json",
                                   "{\"spec\":{\"suspend\":true}}", 200));
    json_object_put(tc_expect_json(BASE, "PATCH", JOBS "/t", "application/merge-patch+json",
                                   "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"fracgpu.io/automate\":"
                                   "\"true\"}}}}}",
                                   200));
}

static void expect_label(json_object *labels, const char *key, const char *want)
{
    assert_string_equal(fg_json_get_str(labels, key, NULL), want);
}

static void job_selector(void **state)
{
    (void)state;
    json_object *job = tc_expect_json(BASE, "POST", JOBS, "application/json",
                                      "{\"metadata\":{\"name\":\"pi\"},\"spec\":{" TEMPLATE_SENT "}}", 201);
    const char *uid = fg_json_get_str(job, "metadata", "uid", NULL);
    assert_non_null(uid);
    json_object *tpl_labels = fg_json_get(job, "spec", "template", "metadata", "labels", NULL);
    expect_label(tpl_labels, "job-name", "pi");
    expect_label(tpl_labels, "batch.kubernetes.io/job-name", "pi");
    expect_label(tpl_labels, "controller-uid", uid);
    expect_label(tpl_labels, "batch.kubernetes.io/controller-uid", uid);
    assert_int_equal(json_object_object_length(tpl_labels), 4);
    assert_true(json_object_equal(fg_json_get(job, "metadata", "labels", NULL), tpl_labels));
    json_object *match = fg_json_get(job, "spec", "selector", "matchLabels", NULL);
    assert_int_equal(json_object_object_length(match), 1);
    expect_label(match, "batch.kubernetes.io/controller-uid", uid);
    assert_null(fg_json_get(job, "spec", "manualSelector", NULL));
    json_object_put(job);

    /* labels of its own stay its own; a manual selector is left as given */
    job = tc_expect_json(BASE, "POST", JOBS, "application/json",
                         "{\"metadata\":{\"name\":\"mine\",\"labels\":{\"team\":\"a\"}},\"spec\":{"
                         "\"manualSelector\":true,\"selector\":{\"matchLabels\":{\"app\":\"m\"}},\"template\":{"
                         "\"metadata\":{\"labels\":{\"app\":\"m\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
                         "\"image\":\"app:v1\"}]}}}}", 201);
    assert_int_equal(json_object_object_length(fg_json_get(job, "metadata", "labels", NULL)), 1);
    assert_int_equal(json_object_object_length(fg_json_get(job, "spec", "template", "metadata", "labels", NULL)), 1);
    assert_int_equal(json_object_object_length(fg_json_get(job, "spec", "selector", "matchLabels", NULL)), 1);
    json_object_put(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod),
        cmocka_unit_test(workloads),
        cmocka_unit_test(jobs),
        cmocka_unit_test(services_and_others),
        cmocka_unit_test_setup_teardown(updates_and_patches, tc_setup, tc_teardown),
        cmocka_unit_test_setup_teardown(job_selector, tc_setup, tc_teardown),
        cmocka_unit_test_setup_teardown(job_template_immutable, tc_setup, tc_teardown),
    };
    return cmocka_run_group_tests(tests, tc_registry_setup, tc_registry_teardown);
}
