/* What the server adds for kubectl, checked over plain HTTP against an in-process server, with the
 * bad inputs the kubectl suite does not reach: CRD admission errors, structural-schema validation
 * (defaults, pruning, nullable, every cause listed), CRD deletion (objects gone, watchers told),
 * OpenAPI v3 (index hashes, PATCH operations with fieldValidation, schemas, /openapi/v2 404),
 * aggregated discovery, Tables, new pods Pending, bearer tokens, and webhooks that cannot be reached
 * or have a broken caBundle under both failure policies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/json.h"
#include "client.h"

#define BASE tc_srv.base
#define CRDS "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define GADGETS "/apis/e2e.fracgpu.io/v1/namespaces/default/gadgets"
#define TABLE "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

static const char crd_json[] =
    "{\"metadata\":{\"name\":\"gadgets.e2e.fracgpu.io\"},"
    "\"spec\":{\"group\":\"e2e.fracgpu.io\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"gadgets\",\"singular\":\"gadget\",\"kind\":\"Gadget\",\"shortNames\":[\"gdg\"]},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},"
    "\"additionalPrinterColumns\":[{\"name\":\"Size\",\"type\":\"string\",\"jsonPath\":\".spec.size\"},"
    "{\"name\":\"Parts\",\"type\":\"string\",\"jsonPath\":\".spec.parts[*].name\"},"
    "{\"name\":\"Phase\",\"type\":\"string\",\"jsonPath\":\".status.phase\"}],"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
    "\"required\":[\"size\"],\"properties\":{\"size\":{\"type\":\"string\",\"enum\":[\"small\",\"large\"]},"
    "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"default\":3},"
    "\"note\":{\"type\":\"string\",\"nullable\":true},"
    "\"parts\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}},"
    "\"free\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}},"
    "\"status\":{\"type\":\"object\",\"properties\":{\"phase\":{\"type\":\"string\"}}}}}}}]}}";

/* The cause fields of a 422 reply, comma-joined, into buf. */
static void causes(const struct tc_reply *r, char *buf, size_t cap)
{
    json_object *list = fg_json_get(r->json, "details", "causes", NULL);
    buf[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        const char *f = fg_json_get_str(json_object_array_get_idx(list, i), "field", NULL);
        strncat(buf, i ? "," : "", cap - strlen(buf) - 1);
        strncat(buf, f ? f : "?", cap - strlen(buf) - 1);
    }
}

static void crd_admission_errors(void **state)
{
    (void)state;
    tc_expect_status(BASE, "POST", CRDS, NULL, "{\"metadata\":{\"name\":\"x.y\"},\"spec\":{}}", 422, "Invalid",
                     "spec.group: Required value");
    tc_expect_status(BASE, "POST", CRDS, NULL,
                     "{\"metadata\":{\"name\":\"wrong.e2e.io\"},\"spec\":{\"group\":\"e2e.io\",\"scope\":\"Cluster\","
                     "\"names\":{\"plural\":\"things\",\"kind\":\"Thing\"},\"versions\":[]}}",
                     422, "Invalid", "metadata.name");
    tc_expect_status(BASE, "POST", CRDS, NULL,
                     "{\"metadata\":{\"name\":\"things.e2e.io\"},\"spec\":{\"group\":\"e2e.io\",\"scope\":\"Global\","
                     "\"names\":{\"plural\":\"things\",\"kind\":\"Thing\"},\"versions\":[]}}",
                     422, "Invalid", "spec.scope");
    tc_expect_status(BASE, "POST", CRDS, NULL,
                     "{\"metadata\":{\"name\":\"things.e2e.io\"},\"spec\":{\"group\":\"e2e.io\",\"scope\":\"Cluster\","
                     "\"names\":{\"plural\":\"things\",\"kind\":\"Thing\"},\"versions\":[{\"name\":\"v1\","
                     "\"served\":true,\"storage\":true}]}}",
                     422, "Invalid", "schemas are required");
    /* nothing was registered */
    tc_expect_status(BASE, "GET", "/apis/e2e.io/v1/things", NULL, NULL, 404, "NotFound", NULL);
}

static void crd_established_and_validation(void **state)
{
    (void)state;
    tc_create(BASE, CRDS, crd_json);
    json_object *crd = tc_get_json(BASE, CRDS "/gadgets.e2e.fracgpu.io");
    json_object *conds = fg_json_get(crd, "status", "conditions", NULL);
    bool established = false;
    for (size_t i = 0; i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        established |= fg_str_eq(fg_json_get_str(c, "type", NULL), "Established") &&
                       fg_str_eq(fg_json_get_str(c, "status", NULL), "True");
    }
    assert_true(established);
    json_object_put(crd);

    /* defaults applied, unknown fields pruned except under preserve-unknown-fields, null allowed */
    tc_create(BASE, GADGETS, "{\"apiVersion\":\"e2e.fracgpu.io/v1\",\"kind\":\"Gadget\",\"metadata\":{\"name\":\"g1\"},"
                             "\"spec\":{\"size\":\"small\",\"note\":null,\"bogus\":1,\"free\":{\"any\":true},"
                             "\"parts\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"extra\":{}}");
    json_object *g = tc_get_json(BASE, GADGETS "/g1");
    int64_t count = 0;
    assert_true(fg_json_get_int64(g, &count, "spec", "count", NULL));
    assert_int_equal(count, 3);
    assert_null(fg_json_get(g, "spec", "bogus", NULL));
    assert_null(fg_json_get(g, "extra", NULL));
    assert_non_null(fg_json_get(g, "spec", "free", "any", NULL));
    json_object_put(g);

    /* every problem is one cause */
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "POST", GADGETS, NULL,
                                "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"count\":0,\"parts\":[{\"name\":5}],"
                                "\"size\":null}}", &r), CURLE_OK);
    assert_int_equal(r.code, 422);
    char fields[512];
    causes(&r, fields, sizeof(fields));
    assert_string_equal(fields, "spec.count,spec.parts[0].name,spec.size"); /* in the body's order */
    assert_non_null(strstr(fg_json_get_str(r.json, "message", NULL), "Gadget.e2e.fracgpu.io \"bad\" is invalid"));
    assert_string_equal(fg_json_get_str(r.json, "details", "kind", NULL), "Gadget");
    tc_reply_cleanup(&r);
    /* a patch is validated too, and the stored object is untouched */
    tc_expect_status(BASE, "PATCH", GADGETS "/g1", "application/merge-patch+json", "{\"spec\":{\"size\":\"huge\"}}",
                     422, "Invalid", "Unsupported value: \"huge\"");
    g = tc_get_json(BASE, GADGETS "/g1");
    assert_string_equal(fg_json_get_str(g, "spec", "size", NULL), "small");
    json_object_put(g);
}

static void crd_table_columns(void **state)
{
    (void)state;
    struct tc_reply r;
    assert_int_equal(tc_request_with(BASE, "GET", GADGETS, NULL, TABLE, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.content_type, "application/json;as=Table;v=v1;g=meta.k8s.io");
    json_object *defs = fg_json_get(r.json, "columnDefinitions", NULL);
    assert_int_equal(json_object_array_length(defs), 4);
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(defs, 2), "name", NULL), "Parts");
    json_object *row = json_object_array_get_idx(fg_json_get(r.json, "rows", NULL), 0);
    json_object *cells = fg_json_get(row, "cells", NULL);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cells, 0)), "g1");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cells, 1)), "small");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cells, 2)), "a,b");
    assert_null(json_object_array_get_idx(cells, 3)); /* no status yet */
    assert_string_equal(fg_json_get_str(row, "object", "kind", NULL), "PartialObjectMetadata");
    assert_string_equal(fg_json_get_str(row, "object", "metadata", "namespace", NULL), "default");
    tc_reply_cleanup(&r);
}

static void openapi_documents(void **state)
{
    (void)state;
    tc_expect_status(BASE, "GET", "/openapi/v2", NULL, NULL, 404, "NotFound", NULL);
    tc_expect_status(BASE, "GET", "/openapi/v3/apis/nope/v1", NULL, NULL, 404, "NotFound", NULL);
    json_object *index = tc_get_json(BASE, "/openapi/v3");
    const char *url = fg_json_get_str(index, "paths", "apis/e2e.fracgpu.io/v1", "serverRelativeURL", NULL);
    assert_non_null(url);
    assert_non_null(strstr(url, "?hash="));
    assert_non_null(fg_json_get(index, "paths", "api/v1", NULL));
    json_object *doc = tc_get_json(BASE, url);
    json_object *patch = fg_json_get(doc, "paths", "/apis/e2e.fracgpu.io/v1/namespaces/{namespace}/gadgets/{name}",
                                     "patch", NULL);
    assert_string_equal(fg_json_get_str(patch, "x-kubernetes-group-version-kind", "kind", NULL), "Gadget");
    json_object *params = fg_json_get(patch, "parameters", NULL);
    bool field_validation = false;
    for (size_t i = 0; i < json_object_array_length(params); i++)
        field_validation |= fg_str_eq(fg_json_get_str(json_object_array_get_idx(params, i), "name", NULL),
                                      "fieldValidation");
    assert_true(field_validation);
    json_object *schema = fg_json_get(doc, "components", "schemas", "io.fracgpu.e2e.v1.Gadget", NULL);
    assert_non_null(fg_json_get(schema, "properties", "spec", "properties", "size", "enum", NULL));
    assert_string_equal(fg_json_get_str(schema, "properties", "metadata", "$ref", NULL),
                        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    json_object_put(doc);
    /* built-in definitions are the strategic-merge data, references rewritten */
    doc = tc_get_json(BASE, "/openapi/v3/api/v1");
    assert_string_equal(fg_json_get_str(doc, "components", "schemas", "io.k8s.api.core.v1.PodSpec", "properties",
                                        "containers", "x-kubernetes-patch-merge-key", NULL), "name");
    assert_string_equal(fg_json_get_str(doc, "components", "schemas", "io.k8s.api.core.v1.Pod", "properties",
                                        "spec", "$ref", NULL), "#/components/schemas/io.k8s.api.core.v1.PodSpec");
    json_object_put(doc);
    json_object_put(index);
}

static void crd_delete_removes_objects(void **state)
{
    (void)state;
    struct tc_watch w;
    tc_watch_start(&w, BASE, GADGETS "?watch=true", 5000);
    json_object *ev = tc_watch_next(&w, 3000);
    assert_non_null(ev); /* ADDED g1 */
    json_object_put(ev);
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "DELETE", CRDS "/gadgets.e2e.fracgpu.io", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    ev = tc_watch_next(&w, 3000);
    assert_non_null(ev);
    assert_string_equal(fg_json_get_str(ev, "type", NULL), "DELETED");
    assert_string_equal(fg_json_get_str(ev, "object", "metadata", "name", NULL), "g1");
    json_object_put(ev);
    tc_watch_stop(&w);
    tc_expect_status(BASE, "GET", GADGETS, NULL, NULL, 404, "NotFound", NULL);
    json_object *index = tc_get_json(BASE, "/openapi/v3");
    assert_null(fg_json_get(index, "paths", "apis/e2e.fracgpu.io/v1", NULL));
    json_object_put(index);
    /* re-created, it is served again, empty */
    tc_create(BASE, CRDS, crd_json);
    json_object *list = tc_get_json(BASE, GADGETS);
    assert_int_equal(json_object_array_length(fg_json_get(list, "items", NULL)), 0);
    json_object_put(list);
}

static void aggregated_discovery_and_pods(void **state)
{
    (void)state;
    struct tc_reply r;
    assert_int_equal(tc_request_with(BASE, "GET", "/apis", NULL,
                                     "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                                     "application/json", NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.content_type, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    assert_string_equal(fg_json_get_str(r.json, "kind", NULL), "APIGroupDiscoveryList");
    bool found = false;
    json_object *items = fg_json_get(r.json, "items", NULL);
    for (size_t i = 0; i < json_object_array_length(items); i++)
        found |= fg_str_eq(fg_json_get_str(json_object_array_get_idx(items, i), "metadata", "name", NULL),
                           "e2e.fracgpu.io");
    assert_true(found);
    tc_reply_cleanup(&r);
    tc_create(BASE, "/api/v1/namespaces/default/pods", "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[]}}");
    json_object *pod = tc_get_json(BASE, "/api/v1/namespaces/default/pods/p");
    assert_string_equal(fg_json_get_str(pod, "status", "phase", NULL), "Pending");
    json_object_put(pod);
}

/* A webhook that cannot be called: Fail refuses with 500, Ignore lets the write through. */
static void unreachable_webhooks(void **state)
{
    (void)state;
    static const char fmt[] =
        "{\"metadata\":{\"name\":\"%s\"},\"webhooks\":[{\"name\":\"%s.e2e.io\",\"failurePolicy\":\"%s\","
        "\"timeoutSeconds\":1,\"clientConfig\":{\"url\":\"https://127.0.0.1:1/x\"%s},\"rules\":[{\"operations\":"
        "[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"]}]}]}";
    char body[1024];
    snprintf(body, sizeof(body), fmt, "ignore", "ignore", "Ignore", "");
    tc_create(BASE, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", body);
    tc_create(BASE, "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"c1\"}}");
    snprintf(body, sizeof(body), fmt, "broken", "broken", "Fail", ",\"caBundle\":\"%%%\"");
    tc_create(BASE, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", body);
    tc_expect_status(BASE, "POST", "/api/v1/namespaces/default/configmaps", NULL, "{\"metadata\":{\"name\":\"c2\"}}",
                     500, "InternalError", "failed calling webhook \"broken.e2e.io\": caBundle is not base64");
    tc_expect_status(BASE, "GET", "/api/v1/namespaces/default/configmaps/c2", NULL, NULL, 404, "NotFound", NULL);
}

static void bearer_token(void **state)
{
    (void)state;
    struct tc_server s;
    struct fg_apiserver_opts opts = { .token = "t0ken" };
    tc_server_start(&s, &opts);
    tc_expect_status(s.base, "GET", "/api/v1/pods", NULL, NULL, 401, "Unauthorized", NULL);
    struct tc_reply r;
    assert_int_equal(tc_request_with(s.base, "GET", "/api/v1/pods", NULL, "Authorization: Bearer wrong", NULL, &r),
                     CURLE_OK);
    assert_int_equal(r.code, 401);
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request_with(s.base, "GET", "/api/v1/pods", NULL, "Authorization: Bearer t0ken", NULL, &r),
                     CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    /* the test control paths need no token */
    assert_int_equal(tc_request(s.base, "GET", "/fracgpu-test/stats", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    tc_server_stop(&s);
}

/* Custom resources survive a state file: their CRDs are loaded (and registered) first. */
static void state_file_keeps_custom_resources(void **state)
{
    (void)state;
    char path[] = "/tmp/fg-state-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    struct tc_server s;
    struct fg_apiserver_opts opts = { .state_file = path };
    tc_server_start(&s, &opts);
    tc_create(s.base, CRDS, crd_json);
    tc_create(s.base, GADGETS, "{\"metadata\":{\"name\":\"kept\"},\"spec\":{\"size\":\"large\"}}");
    char msg[FG_ERRMSG_MAX];
    fg_apiserver_stop(s.srv);
    assert_int_equal(fg_apiserver_save_state(s.srv, msg), FG_OK);
    tc_server_stop(&s);
    tc_server_start(&s, &opts);
    json_object *g = tc_get_json(s.base, GADGETS "/kept");
    assert_string_equal(fg_json_get_str(g, "spec", "size", NULL), "large");
    json_object_put(g);
    tc_server_stop(&s);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crd_admission_errors),
        cmocka_unit_test(crd_established_and_validation),
        cmocka_unit_test(crd_table_columns),
        cmocka_unit_test(openapi_documents),
        cmocka_unit_test(aggregated_discovery_and_pods),
        cmocka_unit_test(crd_delete_removes_objects),
        cmocka_unit_test(unreachable_webhooks),
        cmocka_unit_test(bearer_token),
        cmocka_unit_test(state_file_keeps_custom_resources),
    };
    return cmocka_run_group_tests(tests, tc_setup, tc_teardown);
}
