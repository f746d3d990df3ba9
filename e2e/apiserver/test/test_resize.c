/* pods/resize and pods/ephemeralcontainers against an in-process server: a resize by merge patch,
 * strategic merge patch and PUT changes only the containers' resources (other changes in the same
 * request are dropped, as kube-apiserver drops them), refuses other resources than cpu/memory and
 * removed requests/limits with 422, 404 for a missing pod; ephemeralcontainers is not served (404
 * without details, which kubectl debug reports as "ephemeral containers are disabled"); discovery
 * lists pods/resize. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "client.h"

#define BASE tc_srv.base
#define PODS "/api/v1/namespaces/default/pods"
#define MERGE "application/merge-patch+json"
#define STRATEGIC "application/strategic-merge-patch+json"

static void make_pod(const char *name)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"a\"}},\"spec\":{\"nodeName\":\"n1\",\"containers\":["
             "{\"name\":\"main\",\"image\":\"img:1\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\","
             "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}},"
             "{\"name\":\"side\",\"image\":\"side:1\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}", name);
    tc_create(BASE, PODS, body);
}

static const char *container_field(json_object *pod, size_t i, const char *a, const char *b, const char *c)
{
    json_object *ctr = json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), i);
    assert_non_null(ctr);
    return c ? fg_json_get_str(ctr, a, b, c, NULL) : fg_json_get_str(ctr, a, NULL);
}

static void resize_changes_only_resources(void **state)
{
    (void)state;
    make_pod("r1");
    /* the image and label changes ride along and are dropped; the cpu change is taken */
    json_object *o = tc_expect_json(BASE, "PATCH", PODS "/r1/resize", STRATEGIC,
                             "{\"metadata\":{\"labels\":{\"app\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"main\","
                             "\"image\":\"img:2\",\"resources\":{\"requests\":{\"cpu\":\"1500m\"},"
                             "\"limits\":{\"cpu\":\"3\"}}}]}}", 200);
    assert_string_equal(container_field(o, 0, "resources", "requests", "cpu"), "1500m");
    assert_string_equal(container_field(o, 0, "resources", "limits", "cpu"), "3");
    assert_string_equal(container_field(o, 0, "resources", "requests", "memory"), "1Gi");
    assert_string_equal(container_field(o, 0, "resources", "requests", "nvidia.com/gpu"), "1");
    assert_string_equal(container_field(o, 0, "image", NULL, NULL), "img:1");
    assert_string_equal(fg_json_get_str(o, "metadata", "labels", "app", NULL), "a");
    assert_string_equal(container_field(o, 1, "resources", "requests", "cpu"), "100m");
    json_object_put(o);
    o = tc_get_json(BASE, PODS "/r1/resize"); /* GET on the subresource is the pod */
    assert_string_equal(container_field(o, 0, "resources", "requests", "cpu"), "1500m");
    json_object_put(o);

    /* merge patch and PUT (the whole pod) work the same way */
    o = tc_expect_json(BASE, "PATCH", PODS "/r1/resize", "application/json-patch+json",
                "[{\"op\":\"replace\",\"path\":\"/spec/containers/1/resources/requests/cpu\",\"value\":\"200m\"},"
                "{\"op\":\"replace\",\"path\":\"/spec/nodeName\",\"value\":\"n2\"}]", 200);
    assert_string_equal(container_field(o, 1, "resources", "requests", "cpu"), "200m");
    assert_string_equal(fg_json_get_str(o, "spec", "nodeName", NULL), "n1");
    json_object_object_del(fg_json_get(o, "metadata", NULL), "resourceVersion");
    json_object *c = json_object_array_get_idx(fg_json_get(o, "spec", "containers", NULL), 1);
    json_object_object_add(fg_json_get(c, "resources", "requests", NULL), "memory",
                           json_object_new_string("64Mi"));
    json_object *put = tc_expect_json(BASE, "PUT", PODS "/r1/resize", NULL, json_object_to_json_string(o), 200);
    assert_string_equal(container_field(put, 1, "resources", "requests", "memory"), "64Mi");
    json_object_put(put);
    json_object_put(o);
}

static void resize_refusals(void **state)
{
    (void)state;
    make_pod("r2");
    json_object *before = tc_get_json(BASE, PODS "/r2");
    /* an extended resource (fracgpu's own GPUs) may not be resized */
    tc_expect_status(BASE, "PATCH", PODS "/r2/resize", STRATEGIC,
                     "{\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}"
                     ",\"requests\":{\"nvidia.com/gpu\":\"2\"}}}]}}",
                     422, "Invalid",
                     "Pod \"r2\" is invalid: spec: Forbidden: only cpu and memory resources are mutable");
    tc_expect_status(BASE, "PATCH", PODS "/r2/resize", "application/json-patch+json",
                     "[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/claims\",\"value\":[{\"name\":\"x\"}]}]",
                     422, "Invalid", "only cpu and memory resources are mutable");
    /* removing a request or a limit is refused */
    tc_expect_status(BASE, "PATCH", PODS "/r2/resize", STRATEGIC,
                     "{\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"memory\":null}}}]}}",
                     422, "Invalid",
                     "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed");
    tc_expect_status(BASE, "PATCH", PODS "/r2/resize", "application/json-patch+json",
                     "[{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/limits\"}]",
                     422, "Invalid", "resource limits cannot be removed");
    /* a missing pod, a stale resourceVersion, a bad patch, methods the subresource has not */
    tc_expect_status(BASE, "PATCH", PODS "/nope/resize", MERGE, "{}", 404, "NotFound", "pods \"nope\" not found");
    tc_expect_status(BASE, "PATCH", PODS "/r2/resize", MERGE, "{\"metadata\":{\"resourceVersion\":\"1\"}}", 409,
                     "Conflict", NULL);
    tc_expect_status(BASE, "PATCH", PODS "/r2/resize", MERGE, "{\"spec\":", 400, "BadRequest", NULL);
    tc_expect_status(BASE, "PATCH", PODS "/r2/resize", "text/plain", "{}", 415, "UnsupportedMediaType", NULL);
    tc_expect_status(BASE, "DELETE", PODS "/r2/resize", NULL, NULL, 405, "MethodNotAllowed", NULL);
    tc_expect_status(BASE, "POST", PODS "/r2/resize", NULL, "{}", 405, "MethodNotAllowed", NULL);
    tc_expect_status(BASE, "PATCH", "/api/v1/nodes/n1/resize", MERGE, "{}", 404, "NotFound", NULL);
    /* nothing changed */
    json_object *after = tc_get_json(BASE, PODS "/r2");
    assert_true(json_object_equal(before, after));
    json_object_put(before);
    json_object_put(after);
}

static void ephemeral_containers_not_served(void **state)
{
    (void)state;
    make_pod("r3");
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "PATCH", PODS "/r3/ephemeralcontainers", STRATEGIC,
                                "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"debugger\",\"image\":\"busybox\"}]}}",
                                &r), CURLE_OK);
    assert_int_equal(r.code, 404);
    assert_string_equal(tc_reason(&r), "NotFound");
    /* no details.name: what kubectl debug takes for "ephemeral containers are disabled" */
    assert_null(fg_json_get_str(r.json, "details", "name", NULL));
    tc_reply_cleanup(&r);
    json_object *pod = tc_get_json(BASE, PODS "/r3");
    assert_null(fg_json_get(pod, "spec", "ephemeralContainers", NULL));
    json_object_put(pod);
}

static void discovery_lists_resize(void **state)
{
    (void)state;
    json_object *list = tc_get_json(BASE, "/api/v1");
    json_object *resources = fg_json_get(list, "resources", NULL);
    bool resize = false, ephemeral = false;
    for (size_t i = 0; i < json_object_array_length(resources); i++) {
        json_object *res = json_object_array_get_idx(resources, i);
        const char *name = fg_json_get_str(res, "name", NULL);
        if (fg_str_eq(name, "pods/resize")) {
            resize = true;
            assert_string_equal(fg_json_get_str(res, "kind", NULL), "Pod");
            assert_string_equal(json_object_to_json_string(fg_json_get(res, "verbs", NULL)),
                                "[ \"get\", \"patch\", \"update\" ]");
        }
        ephemeral |= fg_str_eq(name, "pods/ephemeralcontainers");
    }
    assert_true(resize);
    assert_false(ephemeral);
    json_object_put(list);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resize_changes_only_resources),
        cmocka_unit_test(resize_refusals),
        cmocka_unit_test(ephemeral_containers_not_served),
        cmocka_unit_test(discovery_lists_resize),
    };
    int rc = cmocka_run_group_tests(tests, tc_setup, tc_teardown);
    curl_global_cleanup();
    return rc;
}
