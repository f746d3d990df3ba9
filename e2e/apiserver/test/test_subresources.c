/* Subresources and deletion semantics against an in-process server: status, binding, eviction with
 * PodDisruptionBudgets (unready pods and unhealthyPodEvictionPolicy included), dry runs, finalizers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "client.h"

#define BASE tc_srv.base
#define PODS "/api/v1/namespaces/default/pods"

static void status_subresource(void **state)
{
    (void)state;
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"st\"},\"spec\":{\"x\":1},\"status\":{\"phase\":\"Pending\"}}");
    struct tc_reply r;
    /* main endpoint: .status changes are ignored, the rest applies */
    assert_int_equal(tc_request(BASE, "PUT", PODS "/st", NULL, "{\"metadata\":{\"name\":\"st\",\"labels\":{\"l\":\"1\"}},"
                                "\"spec\":{\"x\":1},\"status\":{\"phase\":\"Running\"}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "status", "phase", NULL), "Pending");
    assert_string_equal(fg_json_get_str(r.json, "metadata", "labels", "l", NULL), "1");
    long rv = atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL));
    tc_reply_cleanup(&r);
    /* status endpoint: only .status changes; generation stays */
    assert_int_equal(tc_request(BASE, "PATCH", PODS "/st/status", "application/merge-patch+json",
                                "{\"metadata\":{\"labels\":{\"z\":\"1\"}},\"spec\":{\"x\":2},"
                                "\"status\":{\"phase\":\"Running\"}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "status", "phase", NULL), "Running");
    assert_null(fg_json_get(r.json, "metadata", "labels", "z", NULL));
    int64_t x = 0, gen = 0;
    fg_json_get_int64(r.json, &x, "spec", "x", NULL);
    fg_json_get_int64(r.json, &gen, "metadata", "generation", NULL);
    assert_int_equal(x, 1);
    assert_int_equal(gen, 1);
    tc_reply_cleanup(&r);
    char body[256];
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"st\",\"resourceVersion\":\"%ld\"},"
             "\"status\":{\"phase\":\"Failed\"}}", rv);
    tc_expect_status(BASE, "PUT", PODS "/st/status", NULL, body, 409, "Conflict", NULL);
    json_object *o = tc_get_json(BASE, PODS "/st/status");
    assert_string_equal(fg_json_get_str(o, "status", "phase", NULL), "Running");
    json_object_put(o);
    tc_expect_status(BASE, "DELETE", PODS "/st/status", NULL, NULL, 405, "MethodNotAllowed", NULL);
}

static void pod_binding(void **state)
{
    (void)state;
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"bindme\"},\"spec\":{\"schedulerName\":\"fracgpu\"}}");
    const char *binding = "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"bindme\","
                          "\"annotations\":{\"fracgpu.io/gpu-index\":\"3\"}},\"target\":{\"kind\":\"Node\",\"name\":\"n7\"}}";
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "POST", PODS "/bindme/binding?dryRun=All", NULL, binding, &r), CURLE_OK);
    assert_int_equal(r.code, 201);
    tc_reply_cleanup(&r);
    json_object *unbound = tc_get_json(BASE, PODS "/bindme");
    assert_null(fg_json_get(unbound, "spec", "nodeName", NULL)); /* a dry run binds nothing */
    json_object_put(unbound);
    assert_int_equal(tc_request(BASE, "POST", PODS "/bindme/binding", NULL, binding, &r), CURLE_OK);
    assert_int_equal(r.code, 201);
    assert_string_equal(fg_json_get_str(r.json, "status", NULL), "Success");
    tc_reply_cleanup(&r);
    json_object *pod = tc_get_json(BASE, PODS "/bindme");
    assert_string_equal(fg_json_get_str(pod, "spec", "nodeName", NULL), "n7");
    assert_string_equal(fg_json_get_str(pod, "spec", "schedulerName", NULL), "fracgpu");
    assert_string_equal(fg_json_get_str(pod, "metadata", "annotations", "fracgpu.io/gpu-index", NULL), "3");
    json_object *cond = json_object_array_get_idx(fg_json_get(pod, "status", "conditions", NULL), 0);
    assert_string_equal(fg_json_get_str(cond, "type", NULL), "PodScheduled");
    assert_string_equal(fg_json_get_str(cond, "status", NULL), "True");
    json_object_put(pod);
    tc_expect_status(BASE, "POST", PODS "/bindme/binding", NULL, binding, 409, "Conflict", "already assigned");
    tc_expect_status(BASE, "POST", PODS "/bindme/binding?dryRun=All", NULL, binding, 409, "Conflict",
                     "already assigned"); /* a dry run is checked all the same */
    tc_expect_status(BASE, "POST", PODS "/ghost/binding", NULL, binding, 404, "NotFound", NULL);
    tc_expect_status(BASE, "POST", PODS "/bindme/binding", NULL, "{\"target\":{}}", 422, "Invalid", "target.name");
    tc_expect_status(BASE, "GET", PODS "/bindme/binding", NULL, NULL, 405, "MethodNotAllowed", NULL);
    tc_expect_status(BASE, "POST", "/api/v1/namespaces/default/configmaps/x/binding", NULL, binding, 404, "NotFound", NULL);
    json_object *disc = tc_get_json(BASE, "/api/v1");
    const char *text = json_object_to_json_string(disc);
    assert_non_null(strstr(text, "\"pods\\/binding\""));
    assert_non_null(strstr(text, "\"pods\\/status\""));
    json_object_put(disc);
}

static void make_pod(const char *ns, const char *name, const char *app, bool ready)
{
    char path[128], body[512];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}},\"status\":"
             "{\"phase\":\"%s\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             name, app, ready ? "Running" : "Pending", ready ? "True" : "False");
    tc_create(BASE, path, body);
}

/* POSTs an Eviction of pod `name` in ns with `more` (",\"deleteOptions\":{...}" or "") in its body
 * and `query` ("?dryRun=All" or "") on its path; the reply's code, its reason or "Success" in reason. */
static long evict_with(const char *ns, const char *name, const char *query, const char *more, char *reason,
                       size_t cap)
{
    char path[160], body[256];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction%s", ns, name, query);
    snprintf(body, sizeof(body), "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\"%s}", more);
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "POST", path, NULL, body, &r), CURLE_OK);
    long code = r.code;
    snprintf(reason, cap, "%s", code == 201 ? fg_json_get_str(r.json, "status", NULL) : tc_reason(&r));
    if (code == 429) {
        json_object *cause = json_object_array_get_idx(fg_json_get(r.json, "details", "causes", NULL), 0);
        assert_string_equal(fg_json_get_str(cause, "reason", NULL), "DisruptionBudget");
    }
    tc_reply_cleanup(&r);
    return code;
}

static long evict(const char *name, char *reason, size_t cap)
{
    return evict_with("evns", name, "", "", reason, cap);
}

static void pod_eviction(void **state)
{
    (void)state;
    char reason[64];
    tc_create(BASE, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"evns\"}}");
    make_pod("evns", "db-1", "db", true);
    make_pod("evns", "db-2", "db", true);
    make_pod("evns", "db-3", "db", true);
    make_pod("evns", "db-sick", "db", false);
    make_pod("evns", "loner", "none", true);
    /* computed budget: 3 healthy, minAvailable 2 -> one disruption */
    tc_create(BASE, "/apis/policy/v1/namespaces/evns/poddisruptionbudgets",
              "{\"metadata\":{\"name\":\"db\"},\"spec\":{\"minAvailable\":2,\"selector\":{\"matchLabels\":{\"app\":\"db\"}}}}");
    /* a dry run, asked in the query or in deleteOptions, is checked and answered but evicts nothing */
    assert_int_equal(evict_with("evns", "db-1", "?dryRun=All", "", reason, sizeof(reason)), 201);
    assert_int_equal(evict_with("evns", "db-1", "", ",\"deleteOptions\":{\"dryRun\":[\"All\"]}", reason,
                                sizeof(reason)), 201);
    json_object_put(tc_get_json(BASE, "/api/v1/namespaces/evns/pods/db-1")); /* still there */
    assert_int_equal(evict("db-1", reason, sizeof(reason)), 201);
    assert_string_equal(reason, "Success");
    tc_expect_status(BASE, "GET", "/api/v1/namespaces/evns/pods/db-1", NULL, NULL, 404, "NotFound", NULL);
    assert_int_equal(evict("db-2", reason, sizeof(reason)), 429);
    assert_string_equal(reason, "TooManyRequests");
    json_object_put(tc_get_json(BASE, "/api/v1/namespaces/evns/pods/db-2")); /* still there */
    assert_int_equal(evict("db-sick", reason, sizeof(reason)), 201); /* unhealthy pods may always go */
    assert_int_equal(evict("loner", reason, sizeof(reason)), 201);  /* no budget selects it */
    assert_int_equal(evict("ghost", reason, sizeof(reason)), 404);

    /* a budget with a status for its generation is trusted and consumed */
    make_pod("evns", "web-1", "web", true);
    make_pod("evns", "web-2", "web", true);
    tc_create(BASE, "/apis/policy/v1/namespaces/evns/poddisruptionbudgets",
              "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"maxUnavailable\":\"50%\",\"selector\":"
              "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"web\"]}]}},"
              "\"status\":{\"observedGeneration\":1,\"disruptionsAllowed\":1}}");
    assert_int_equal(evict_with("evns", "web-1", "?dryRun=All", "", reason, sizeof(reason)), 201);
    json_object *pdb = tc_get_json(BASE, "/apis/policy/v1/namespaces/evns/poddisruptionbudgets/web");
    int64_t allowed = -1;
    assert_true(fg_json_get_int64(pdb, &allowed, "status", "disruptionsAllowed", NULL));
    assert_int_equal(allowed, 1); /* not consumed by the dry run */
    json_object_put(pdb);
    assert_int_equal(evict("web-1", reason, sizeof(reason)), 201);
    pdb = tc_get_json(BASE, "/apis/policy/v1/namespaces/evns/poddisruptionbudgets/web");
    assert_true(fg_json_get_int64(pdb, &allowed, "status", "disruptionsAllowed", NULL));
    assert_int_equal(allowed, 0);
    json_object_put(pdb);
    assert_int_equal(evict("web-2", reason, sizeof(reason)), 429);

    /* two budgets over one pod: refused as kube-apiserver does */
    tc_create(BASE, "/apis/policy/v1/namespaces/evns/poddisruptionbudgets",
              "{\"metadata\":{\"name\":\"all\"},\"spec\":{\"maxUnavailable\":5,\"selector\":{}}}");
    assert_int_equal(evict("db-3", reason, sizeof(reason)), 500);
    tc_expect_status(BASE, "GET", "/api/v1/namespaces/evns/pods/db-3/eviction", NULL, NULL, 405, "MethodNotAllowed", NULL);
}

/* A running pod with a Ready condition of this status (none when NULL) and label app=`app`. */
static void make_running_pod(const char *name, const char *app, const char *ready)
{
    char body[512];
    char conditions[96] = "";
    if (ready)
        snprintf(conditions, sizeof(conditions), ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]", ready);
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}},\"status\":"
             "{\"phase\":\"Running\"%s}}", name, app, conditions);
    tc_create(BASE, "/api/v1/namespaces/evq/pods", body);
}

/* Only pods whose Ready condition is True count as healthy; a pod that is not Ready goes without
 * consuming the budget under unhealthyPodEvictionPolicy AlwaysAllow, or under the default
 * IfHealthyBudget only while the budget is met. */
static void eviction_of_unready_pods(void **state)
{
    (void)state;
    char reason[64];
    tc_create(BASE, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"evq\"}}");
    make_running_pod("q-ready", "q", "True");
    make_running_pod("q-unready", "q", "False");
    make_running_pod("q-unknown", "q", NULL); /* Running without a Ready condition: not healthy */
    tc_create(BASE, "/apis/policy/v1/namespaces/evq/poddisruptionbudgets",
              "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"minAvailable\":2,\"selector\":{\"matchLabels\":{\"app\":\"q\"}}}}");
    /* 1 healthy of 2 desired: the budget is not met, so nothing may go */
    assert_int_equal(evict_with("evq", "q-unready", "", "", reason, sizeof(reason)), 429);
    assert_int_equal(evict_with("evq", "q-unknown", "", "", reason, sizeof(reason)), 429);
    assert_int_equal(evict_with("evq", "q-ready", "", "", reason, sizeof(reason)), 429);
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "PATCH", "/apis/policy/v1/namespaces/evq/poddisruptionbudgets/q",
                                "application/merge-patch+json",
                                "{\"spec\":{\"unhealthyPodEvictionPolicy\":\"AlwaysAllow\"}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    assert_int_equal(evict_with("evq", "q-unready", "", "", reason, sizeof(reason)), 201);
    assert_int_equal(evict_with("evq", "q-unknown", "", "", reason, sizeof(reason)), 201);
    assert_int_equal(evict_with("evq", "q-ready", "", "", reason, sizeof(reason)), 429);

    /* IfHealthyBudget with the budget met: a pod that is not Ready goes, and the budget is untouched */
    make_running_pod("h-1", "h", "True");
    make_running_pod("h-2", "h", "True");
    make_running_pod("h-sick", "h", "False");
    tc_create(BASE, "/apis/policy/v1/namespaces/evq/poddisruptionbudgets",
              "{\"metadata\":{\"name\":\"h\"},\"spec\":{\"minAvailable\":2,\"unhealthyPodEvictionPolicy\":"
              "\"IfHealthyBudget\",\"selector\":{\"matchLabels\":{\"app\":\"h\"}}}}");
    assert_int_equal(evict_with("evq", "h-sick", "", "", reason, sizeof(reason)), 201);
    assert_int_equal(evict_with("evq", "h-1", "", "", reason, sizeof(reason)), 429);
}

static void finalizers_delay_deletion(void **state)
{
    (void)state;
    const char *cm = "/api/v1/namespaces/default/configmaps/fin";
    tc_create(BASE, "/api/v1/namespaces/default/configmaps",
              "{\"metadata\":{\"name\":\"fin\",\"finalizers\":[\"fracgpu.io/cleanup\"]}}");
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "DELETE", cm, NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_non_null(fg_json_get_str(r.json, "metadata", "deletionTimestamp", NULL));
    tc_reply_cleanup(&r);
    json_object *o = tc_get_json(BASE, cm); /* still there */
    assert_non_null(fg_json_get_str(o, "metadata", "deletionTimestamp", NULL));
    json_object_put(o);
    assert_int_equal(tc_request(BASE, "DELETE", cm, NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    /* removing the last finalizer completes the deletion */
    assert_int_equal(tc_request(BASE, "PATCH", cm, "application/merge-patch+json",
                                "{\"metadata\":{\"finalizers\":null}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    tc_expect_status(BASE, "GET", cm, NULL, NULL, 404, "NotFound", NULL);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_subresource),
        cmocka_unit_test(pod_binding),
        cmocka_unit_test(pod_eviction),
        cmocka_unit_test(eviction_of_unready_pods),
        cmocka_unit_test(finalizers_delay_deletion),
    };
    int rc = cmocka_run_group_tests(tests, tc_setup, tc_teardown);
    curl_global_cleanup();
    return rc;
}
