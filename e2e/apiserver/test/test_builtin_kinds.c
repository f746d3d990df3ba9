/* The built-in kinds fracgpu's manifests use, served as kube-apiserver serves them: discovery (short
 * names, scope, status subresources), OpenAPI v3 definitions with the strategic-merge metadata
 * kubectl apply reads, Table columns and cells as `kubectl get` prints them on a real cluster, and
 * the bad inputs: a cluster-scoped kind under a namespace, Services of every type with and without
 * ports, node ports, external IPs and load-balancer addresses, status changed through the main
 * endpoint, missing fields where printers would read Go zero values, long address lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "client.h"

#define BASE tc_srv.base
#define TABLE "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

/* GETs path as a Table and checks its column names and the cells of its one row ("|"-joined; Age and
 * Created At cells, which depend on the clock, are checked for presence and shown as "T"). */
static void expect_table(const char *path, const char *columns, const char *cells)
{
    struct tc_reply r;
    assert_int_equal(tc_request_with(BASE, "GET", path, NULL, TABLE, NULL, &r), CURLE_OK);
    if (r.code != 200)
        fail_msg("GET %s: %ld %s", path, r.code, r.body);
    json_object *defs = fg_json_get(r.json, "columnDefinitions", NULL);
    json_object *row = json_object_array_get_idx(fg_json_get(r.json, "rows", NULL), 0);
    struct fg_buf names = FG_BUF_INIT, got = FG_BUF_INIT;
    for (size_t i = 0; i < json_object_array_length(defs); i++) {
        const char *name = fg_json_get_str(json_object_array_get_idx(defs, i), "name", NULL);
        json_object *cell = json_object_array_get_idx(fg_json_get(row, "cells", NULL), i);
        bool clock = !strcmp(name, "Age") || !strcmp(name, "Created At");
        if (clock)
            assert_non_null(cell);
        if (!strcmp(name, "Created At")) { /* the RFC 3339 timestamp itself, as kube prints it, not an age */
            const char *ts = json_object_get_string(cell);
            assert_int_equal(strlen(ts), strlen("2026-01-01T00:00:00Z"));
            assert_true(ts[10] == 'T' && ts[19] == 'Z');
        }
        const char *text = clock ? "T" : cell ? json_object_get_string(cell) : "<none>";
        assert_int_equal(fg_buf_printf(&names, "%s%s", i ? "|" : "", name), FG_OK);
        assert_int_equal(fg_buf_printf(&got, "%s%s", i ? "|" : "", text), FG_OK);
    }
    assert_string_equal(fg_buf_str(&names), columns);
    assert_string_equal(fg_buf_str(&got), cells);
    fg_buf_cleanup(&names);
    fg_buf_cleanup(&got);
    tc_reply_cleanup(&r);
}

/* Merge-patches an object's status subresource and expects 200. */
static void merge_status(const char *path, const char *patch)
{
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "PATCH", path, "application/merge-patch+json", patch, &r), CURLE_OK);
    if (r.code != 200)
        fail_msg("PATCH %s: %ld %s", path, r.code, r.body);
    tc_reply_cleanup(&r);
}

/* The legacy discovery entry of plural in a group/version document. */
static json_object *discovery_entry(json_object *doc, const char *plural)
{
    json_object *list = fg_json_get(doc, "resources", NULL);
    for (size_t i = 0; i < json_object_array_length(list); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(list, i), "name", NULL), plural))
            return json_object_array_get_idx(list, i);
    return NULL;
}

static void expect_discovery(const char *gv_path, const char *plural, const char *kind, bool namespaced,
                             const char *short_name, bool status)
{
    json_object *doc = tc_get_json(BASE, gv_path);
    json_object *e = discovery_entry(doc, plural);
    if (!e)
        fail_msg("%s not in %s", plural, gv_path);
    assert_string_equal(fg_json_get_str(e, "kind", NULL), kind);
    assert_int_equal(json_object_get_boolean(fg_json_get(e, "namespaced", NULL)), namespaced);
    json_object *shorts = fg_json_get(e, "shortNames", NULL);
    if (short_name)
        assert_string_equal(json_object_get_string(json_object_array_get_idx(shorts, 0)), short_name);
    else
        assert_true(!shorts || !json_object_array_length(shorts));
    char sub[128];
    snprintf(sub, sizeof(sub), "%s/status", plural);
    assert_int_equal(discovery_entry(doc, sub) != NULL, status);
    json_object_put(doc);
}

static void discovery(void **state)
{
    (void)state;
    expect_discovery("/api/v1", "serviceaccounts", "ServiceAccount", true, "sa", false);
    expect_discovery("/api/v1", "resourcequotas", "ResourceQuota", true, "quota", true);
    expect_discovery("/api/v1", "limitranges", "LimitRange", true, "limits", false);
    expect_discovery("/api/v1", "endpoints", "Endpoints", true, "ep", false);
    expect_discovery("/apis/apps/v1", "daemonsets", "DaemonSet", true, "ds", true);
    expect_discovery("/apis/apps/v1", "replicasets", "ReplicaSet", true, "rs", true);
    expect_discovery("/apis/rbac.authorization.k8s.io/v1", "roles", "Role", true, NULL, false);
    expect_discovery("/apis/rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", true, NULL, false);
    expect_discovery("/apis/rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", false, NULL, false);
    expect_discovery("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", false, NULL,
                     false);
    expect_discovery("/apis/scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", false, "pc", false);
    expect_discovery("/api/v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, "pvc", true);
    expect_discovery("/apis/storage.k8s.io/v1", "storageclasses", "StorageClass", false, "sc", false);
    expect_discovery("/apis/discovery.k8s.io/v1", "endpointslices", "EndpointSlice", true, NULL, false);
    expect_discovery("/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations",
                     "ValidatingWebhookConfiguration", false, NULL, false);
    /* `kubectl get all` is the category kube gives workloads and services, and nothing else */
    json_object *doc = tc_get_json(BASE, "/apis/apps/v1");
    /* sorted by name as kube-apiserver lists them (kubectl get all prints kinds in this order) */
    json_object *list = fg_json_get(doc, "resources", NULL);
    for (size_t i = 1; i < json_object_array_length(list); i++)
        assert_true(strcmp(fg_json_get_str(json_object_array_get_idx(list, i - 1), "name", NULL),
                           fg_json_get_str(json_object_array_get_idx(list, i), "name", NULL)) < 0);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(
        fg_json_get(discovery_entry(doc, "daemonsets"), "categories", NULL), 0)), "all");
    assert_null(fg_json_get(discovery_entry(doc, "daemonsets/status"), "categories", NULL));
    json_object_put(doc);
    doc = tc_get_json(BASE, "/api/v1");
    assert_null(fg_json_get(discovery_entry(doc, "serviceaccounts"), "categories", NULL));
    assert_non_null(fg_json_get(discovery_entry(doc, "services"), "categories", NULL));
    json_object_put(doc);
}

static void openapi_definitions(void **state)
{
    (void)state;
    json_object *doc = tc_get_json(BASE, "/openapi/v3/apis/apps/v1");
    json_object *schemas = fg_json_get(doc, "components", "schemas", NULL);
    assert_string_equal(fg_json_get_str(schemas, "io.k8s.api.apps.v1.DaemonSetSpec", "properties", "template", "$ref",
                                        NULL), "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec");
    assert_string_equal(fg_json_get_str(schemas, "io.k8s.api.apps.v1.ReplicaSetSpec", "properties", "template", "$ref",
                                        NULL), "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec");
    assert_string_equal(fg_json_get_str(doc, "paths", "/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}",
                                        "patch", "x-kubernetes-group-version-kind", "kind", NULL), "DaemonSet");
    json_object_put(doc);
    doc = tc_get_json(BASE, "/openapi/v3/api/v1");
    assert_string_equal(fg_json_get_str(doc, "components", "schemas", "io.k8s.api.core.v1.ServiceAccount", "properties",
                                        "secrets", "x-kubernetes-patch-merge-key", NULL), "name");
    json_object_put(doc);
    /* PolicyRule and Subject lists are atomic in kube's definitions: no patch strategy */
    doc = tc_get_json(BASE, "/openapi/v3/apis/rbac.authorization.k8s.io/v1");
    json_object *role = fg_json_get(doc, "components", "schemas", "io.k8s.api.rbac.v1.ClusterRole", NULL);
    assert_non_null(role);
    assert_null(fg_json_get(role, "properties", "rules", "x-kubernetes-patch-strategy", NULL));
    assert_non_null(fg_json_get(doc, "paths", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}", NULL));
    json_object_put(doc);
}

static void tables(void **state)
{
    (void)state;
    tc_create(BASE, "/api/v1/namespaces/default/serviceaccounts",
              "{\"metadata\":{\"name\":\"op\"},\"secrets\":[{\"name\":\"a\"},{\"name\":\"b\"}]}");
    expect_table("/api/v1/namespaces/default/serviceaccounts", "Name|Secrets|Age", "op|2|T");

    tc_create(BASE, "/apis/apps/v1/namespaces/default/daemonsets",
              "{\"metadata\":{\"name\":\"agent\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"agent\"},"
              "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"b\",\"a\"]},"
              "{\"key\":\"gone\",\"operator\":\"DoesNotExist\"}]},\"template\":{\"spec\":{\"nodeSelector\":"
              "{\"zone\":\"z1\",\"gpu\":\"true\"},\"containers\":[{\"name\":\"agent\",\"image\":\"img:1\"}]}}}}");
    /* no status yet: every count prints 0, as kube's printer reads Go ints that are never absent */
    expect_table("/apis/apps/v1/namespaces/default/daemonsets",
                 "Name|Desired|Current|Ready|Up-to-date|Available|Node Selector|Age|Containers|Images|Selector",
                 "agent|0|0|0|0|0|gpu=true,zone=z1|T|agent|img:1|!gone,app=agent,tier in (a,b)");
    merge_status("/apis/apps/v1/namespaces/default/daemonsets/agent/status",
                 "{\"status\":{\"desiredNumberScheduled\":3,\"numberReady\":2}}");
    expect_table("/apis/apps/v1/namespaces/default/daemonsets",
                 "Name|Desired|Current|Ready|Up-to-date|Available|Node Selector|Age|Containers|Images|Selector",
                 "agent|3|0|2|0|0|gpu=true,zone=z1|T|agent|img:1|!gone,app=agent,tier in (a,b)");

    tc_create(BASE, "/apis/apps/v1/namespaces/default/replicasets",
              "{\"metadata\":{\"name\":\"rs1\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"x\"}},"
              "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"},{\"name\":\"d\",\"image\":\"j\"}]}}}}");
    expect_table("/apis/apps/v1/namespaces/default/replicasets",
                 "Name|Desired|Current|Ready|Age|Containers|Images|Selector", "rs1|1|0|0|T|c,d|i,j|app=x");

    tc_create(BASE, "/apis/rbac.authorization.k8s.io/v1/clusterroles",
              "{\"metadata\":{\"name\":\"reader\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],"
              "\"verbs\":[\"get\"]}]}");
    expect_table("/apis/rbac.authorization.k8s.io/v1/clusterroles", "Name|Created At", "reader|T");
    tc_create(BASE, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
              "{\"metadata\":{\"name\":\"things.e2e.io\"},\"spec\":{\"group\":\"e2e.io\",\"scope\":\"Namespaced\","
              "\"names\":{\"plural\":\"things\",\"kind\":\"Thing\"},\"versions\":[{\"name\":\"v1\",\"served\":true,"
              "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}");
    expect_table("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "Name|Created At", "things.e2e.io|T");

    tc_create(BASE, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
              "{\"metadata\":{\"name\":\"reader\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
              "\"kind\":\"ClusterRole\",\"name\":\"reader\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"op\","
              "\"namespace\":\"default\"},{\"kind\":\"User\",\"name\":\"alice\"},{\"kind\":\"Group\",\"name\":\"g1\"},"
              "{\"kind\":\"User\",\"name\":\"bob\"}]}");
    expect_table("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                 "Name|Role|Age|Users|Groups|ServiceAccounts", "reader|ClusterRole/reader|T|alice, bob|g1|default/op");
    tc_create(BASE, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
              "{\"metadata\":{\"name\":\"rb\"},\"roleRef\":{\"kind\":\"Role\",\"name\":\"leader\"}}");
    expect_table("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                 "Name|Role|Age|Users|Groups|ServiceAccounts", "rb|Role/leader|T|||");

    /* cluster-scoped: no namespaced path */
    tc_expect_status(BASE, "POST", "/apis/scheduling.k8s.io/v1/namespaces/default/priorityclasses", NULL,
                     "{\"metadata\":{\"name\":\"x\"},\"value\":1}", 404, "NotFound", NULL);
    tc_create(BASE, "/apis/scheduling.k8s.io/v1/priorityclasses", "{\"metadata\":{\"name\":\"high\"},\"value\":1000}");
    expect_table("/apis/scheduling.k8s.io/v1/priorityclasses", "Name|Value|Global-Default|Age|PreemptionPolicy",
                 "high|1000|false|T|PreemptLowerPriority");

    /* storage: what the webhook reads to tell a WaitForFirstConsumer claim */
    tc_create(BASE, "/apis/storage.k8s.io/v1/storageclasses",
              "{\"metadata\":{\"name\":\"local\"},\"provisioner\":\"kubernetes.io/no-provisioner\","
              "\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    expect_table("/apis/storage.k8s.io/v1/storageclasses",
                 "Name|Provisioner|ReclaimPolicy|VolumeBindingMode|AllowVolumeExpansion|Age",
                 "local|kubernetes.io/no-provisioner|Delete|WaitForFirstConsumer|false|T");
    tc_create(BASE, "/api/v1/namespaces/default/persistentvolumeclaims",
              "{\"metadata\":{\"name\":\"data\"},\"spec\":{\"storageClassName\":\"local\",\"accessModes\":"
              "[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}");
    expect_table("/api/v1/namespaces/default/persistentvolumeclaims", "Name|Status|Volume|Capacity|StorageClass|Age",
                 "data|Pending|||local|T");
    json_object *pvc = tc_get_json(BASE, "/api/v1/namespaces/default/persistentvolumeclaims/data");
    assert_string_equal(fg_json_get_str(pvc, "spec", "volumeMode", NULL), "Filesystem");
    json_object_put(pvc);

    /* Services: kube's defaults where nothing is set (no cluster IP is allocated here) */
    tc_create(BASE, "/api/v1/namespaces/default/services",
              "{\"metadata\":{\"name\":\"plain\"},\"spec\":{\"selector\":{\"app\":\"x\"},"
              "\"ports\":[{\"port\":80},{\"port\":53,\"protocol\":\"UDP\"}]}}");
    expect_table("/api/v1/namespaces/default/services?fieldSelector=metadata.name%3Dplain",
                 "Name|Type|Cluster-IP|External-IP|Port(s)|Age|Selector", "plain|ClusterIP|<none>|<none>|80/TCP,53/UDP|T|app=x");
    tc_create(BASE, "/api/v1/namespaces/default/services",
              "{\"metadata\":{\"name\":\"np\"},\"spec\":{\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.9\","
              "\"externalIPs\":[\"1.2.3.4\",\"5.6.7.8\"],\"ports\":[{\"port\":80,\"nodePort\":30080}]}}");
    expect_table("/api/v1/namespaces/default/services?fieldSelector=metadata.name%3Dnp",
                 "Name|Type|Cluster-IP|External-IP|Port(s)|Age|Selector",
                 "np|NodePort|10.96.0.9|1.2.3.4,5.6.7.8|80:30080/TCP|T|<none>");
    tc_create(BASE, "/api/v1/namespaces/default/services",
              "{\"metadata\":{\"name\":\"lb\"},\"spec\":{\"type\":\"LoadBalancer\"}}");
    expect_table("/api/v1/namespaces/default/services?fieldSelector=metadata.name%3Dlb",
                 "Name|Type|Cluster-IP|External-IP|Port(s)|Age|Selector", "lb|LoadBalancer|<none>|<pending>|<none>|T|<none>");
    merge_status("/api/v1/namespaces/default/services/lb/status",
                 "{\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"203.0.113.10\"},"
                 "{\"hostname\":\"lb.example.com\"}]}}}");
    expect_table("/api/v1/namespaces/default/services?fieldSelector=metadata.name%3Dlb",
                 "Name|Type|Cluster-IP|External-IP|Port(s)|Age|Selector",
                 "lb|LoadBalancer|<none>|203.0.113.10,lb.example.com|<none>|T|<none>");
    tc_create(BASE, "/api/v1/namespaces/default/services",
              "{\"metadata\":{\"name\":\"ext\"},\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"db.example.com\"}}");
    expect_table("/api/v1/namespaces/default/services?fieldSelector=metadata.name%3Dext",
                 "Name|Type|Cluster-IP|External-IP|Port(s)|Age|Selector",
                 "ext|ExternalName|<none>|db.example.com|<none>|T|<none>");

    tc_create(BASE, "/api/v1/namespaces/default/resourcequotas",
              "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"hard\":{\"pods\":\"10\"}}}");
    expect_table("/api/v1/namespaces/default/resourcequotas", "Name|Age|Request|Limit", "q|T||");
    merge_status("/api/v1/namespaces/default/resourcequotas/q/status",
                 "{\"status\":{\"hard\":{\"pods\":\"10\",\"limits.cpu\":\"4\",\"requests.cpu\":\"2\"},"
                 "\"used\":{\"pods\":\"3\",\"limits.cpu\":\"1\"}}}");
    expect_table("/api/v1/namespaces/default/resourcequotas", "Name|Age|Request|Limit",
                 "q|T|pods: 3/10, requests.cpu: 0/2|limits.cpu: 1/4");

    tc_create(BASE, "/api/v1/namespaces/default/limitranges",
              "{\"metadata\":{\"name\":\"lr\"},\"spec\":{\"limits\":[{\"type\":\"Container\"}]}}");
    expect_table("/api/v1/namespaces/default/limitranges", "Name|Created At", "lr|T");

    tc_create(BASE, "/api/v1/namespaces/default/endpoints",
              "{\"metadata\":{\"name\":\"svc\"},\"subsets\":[{\"addresses\":[{\"ip\":\"10.0.0.1\"},{\"ip\":\"10.0.0.2\"},"
              "{\"ip\":\"fd00::3\"}],\"ports\":[{\"port\":80},{\"port\":443}]}]}");
    expect_table("/api/v1/namespaces/default/endpoints", "Name|Endpoints|Age",
                 "svc|10.0.0.1:80,10.0.0.2:80,[fd00::3]:80 + 3 more...|T");
    tc_create(BASE, "/api/v1/namespaces/kube-system/endpoints", "{\"metadata\":{\"name\":\"empty\"}}");
    expect_table("/api/v1/namespaces/kube-system/endpoints", "Name|Endpoints|Age", "empty|<none>|T");

    tc_create(BASE, "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
              "{\"metadata\":{\"name\":\"svc-1\"},\"addressType\":\"IPv4\",\"ports\":[{\"port\":80},{\"name\":\"m\"}],"
              "\"endpoints\":[{\"addresses\":[\"10.0.0.1\"]},{\"addresses\":[\"10.0.0.2\"]}]}");
    expect_table("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                 "Name|AddressType|Ports|Endpoints|Age", "svc-1|IPv4|80,m|10.0.0.1,10.0.0.2|T");
    tc_create(BASE, "/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices",
              "{\"metadata\":{\"name\":\"bare\"},\"addressType\":\"IPv4\"}");
    expect_table("/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices",
                 "Name|AddressType|Ports|Endpoints|Age", "bare|IPv4|<unset>|<unset>|T");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(discovery),
        cmocka_unit_test(openapi_definitions),
        cmocka_unit_test(tables),
    };
    int rc = cmocka_run_group_tests(tests, tc_setup, tc_teardown);
    curl_global_cleanup();
    return rc;
}
