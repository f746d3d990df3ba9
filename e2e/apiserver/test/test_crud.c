/* CRUD, resourceVersion semantics, patches over HTTP, selectors, paging and bad input, against an
 * in-process server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"
#include "client.h"

#define BASE tc_srv.base
#define PODS "/api/v1/namespaces/default/pods"

static void version_and_headers(void **state)
{
    (void)state;
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "GET", "/version?timeout=5s", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "major", NULL), "1");
    assert_string_equal(fg_json_get_str(r.json, "minor", NULL), "32");
    assert_string_equal(fg_json_get_str(r.json, "gitVersion", NULL), "v1.32.5");
    assert_string_equal(r.cache_control, "no-cache, private");
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request(BASE, "GET", "/api/v1/nope", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 404);
    assert_string_equal(r.cache_control, "no-cache, private");
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request(BASE, "GET", "/apis/apps/v1", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "kind", NULL), "APIResourceList");
    assert_true(strstr(r.body, "\"deployments\"") != NULL);
    tc_reply_cleanup(&r);
}

static void create_get_and_metadata(void **state)
{
    (void)state;
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "POST", PODS, NULL,
                                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"},\"spec\":{}}",
                                &r), CURLE_OK);
    assert_int_equal(r.code, 201);
    const char *uid = fg_json_get_str(r.json, "metadata", "uid", NULL);
    assert_non_null(uid);
    assert_int_equal(strlen(uid), 36);
    assert_non_null(fg_json_get_str(r.json, "metadata", "creationTimestamp", NULL));
    assert_string_equal(fg_json_get_str(r.json, "metadata", "namespace", NULL), "default");
    int64_t gen = 0;
    assert_true(fg_json_get_int64(r.json, &gen, "metadata", "generation", NULL));
    assert_int_equal(gen, 1);
    char *rv = fg_strdup(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL));
    tc_reply_cleanup(&r);

    assert_int_equal(tc_request(BASE, "GET", PODS "/web", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL), rv);
    assert_string_equal(fg_json_get_str(r.json, "kind", NULL), "Pod");
    tc_reply_cleanup(&r);
    free(rv);

    tc_expect_status(BASE, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"web\"}}", 409, "AlreadyExists",
                  "pods \"web\" already exists");
    tc_expect_status(BASE, "GET", PODS "/nope", NULL, NULL, 404, "NotFound", "pods \"nope\" not found");
    tc_expect_status(BASE, "POST", "/api/v1/namespaces/ghost/pods", NULL, "{\"metadata\":{\"name\":\"x\"}}", 404, "NotFound",
                  "namespaces \"ghost\" not found");
    tc_expect_status(BASE, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"x\",\"namespace\":\"other\"}}", 400, "BadRequest",
                  "does not match the namespace");
    tc_expect_status(BASE, "POST", PODS, NULL, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"x\"}}", 400, "BadRequest", "kind");

    /* generateName */
    assert_int_equal(tc_request(BASE, "POST", PODS, NULL, "{\"metadata\":{\"generateName\":\"gen-\"}}", &r), CURLE_OK);
    assert_int_equal(r.code, 201);
    const char *name = fg_json_get_str(r.json, "metadata", "name", NULL);
    assert_true(strncmp(name, "gen-", 4) == 0 && strlen(name) == 9);
    tc_reply_cleanup(&r);

    /* 422 with causes */
    assert_int_equal(tc_request(BASE, "POST", PODS, NULL, "{\"metadata\":{}}", &r), CURLE_OK);
    assert_int_equal(r.code, 422);
    assert_string_equal(tc_reason(&r), "Invalid");
    json_object *cause = json_object_array_get_idx(fg_json_get(r.json, "details", "causes", NULL), 0);
    assert_string_equal(fg_json_get_str(cause, "field", NULL), "metadata.name");
    assert_string_equal(fg_json_get_str(cause, "reason", NULL), "FieldValueRequired");
    tc_reply_cleanup(&r);
    tc_expect_status(BASE, "POST", PODS, NULL, "{\"metadata\":{\"name\":\"Bad_Name\"}}", 422, "Invalid", "metadata.name");

    /* cluster-scoped types and other groups */
    tc_create(BASE, "/api/v1/nodes", "{\"metadata\":{\"name\":\"node-1\"}}");
    tc_create(BASE, "/apis/apps/v1/namespaces/default/deployments", "{\"metadata\":{\"name\":\"d\"}}");
    tc_create(BASE, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", "{\"metadata\":{\"name\":\"l\"}}");
    assert_int_equal(tc_request(BASE, "GET", "/apis/apps/v1/deployments", NULL, NULL, &r), CURLE_OK);
    assert_string_equal(fg_json_get_str(r.json, "kind", NULL), "DeploymentList");
    assert_int_equal(json_object_array_length(fg_json_get(r.json, "items", NULL)), 1);
    tc_reply_cleanup(&r);
}

static void update_conflicts_and_generation(void **state)
{
    (void)state;
    long rv = tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"upd\"},\"spec\":{\"a\":1}}");
    char body[256];
    /* stale RV: 409 Conflict */
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"upd\",\"resourceVersion\":\"%ld\"},\"spec\":{\"a\":2}}",
             rv - 1);
    tc_expect_status(BASE, "PUT", PODS "/upd", NULL, body, 409, "Conflict", "the object has been modified");
    /* current RV: accepted, generation bumped because spec changed */
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"upd\",\"resourceVersion\":\"%ld\"},\"spec\":{\"a\":2}}", rv);
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "PUT", PODS "/upd", NULL, body, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    int64_t gen = 0;
    fg_json_get_int64(r.json, &gen, "metadata", "generation", NULL);
    assert_int_equal(gen, 2);
    long rv2 = atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL));
    assert_true(rv2 > rv);
    tc_reply_cleanup(&r);
    /* no RV: unconditional; only labels change, so generation stays */
    assert_int_equal(tc_request(BASE, "PUT", PODS "/upd", NULL,
                                "{\"metadata\":{\"labels\":{\"x\":\"y\"}},\"spec\":{\"a\":2}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    fg_json_get_int64(r.json, &gen, "metadata", "generation", NULL);
    assert_int_equal(gen, 2);
    tc_reply_cleanup(&r);
    tc_expect_status(BASE, "PUT", PODS "/ghost", NULL, "{\"metadata\":{\"name\":\"ghost\"}}", 404, "NotFound", NULL);
    tc_expect_status(BASE, "PUT", PODS "/upd", NULL, "{\"metadata\":{\"name\":\"other\"}}", 400, "BadRequest", "name");

    /* delete: 200 with the object, then 404; preconditions */
    tc_expect_status(BASE, "DELETE", PODS "/upd", NULL, "{\"preconditions\":{\"uid\":\"not-it\"}}", 409, "Conflict",
                  "Precondition failed");
    assert_int_equal(tc_request(BASE, "DELETE", PODS "/upd", NULL, "{\"propagationPolicy\":\"Background\"}", &r),
                     CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "metadata", "name", NULL), "upd");
    tc_reply_cleanup(&r);
    tc_expect_status(BASE, "DELETE", PODS "/upd", NULL, NULL, 404, "NotFound", NULL);
}

/* A write that changes nothing is not a write: the same resourceVersion, and no watch event. */
static void unchanged_writes_store_nothing(void **state)
{
    (void)state;
    long rv = tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"same\",\"labels\":{\"a\":\"1\"}},\"spec\":{\"a\":1}}");
    char path[128];
    snprintf(path, sizeof(path), PODS "?watch=1&resourceVersion=%ld&fieldSelector=metadata.name%%3Dsame", rv);
    struct tc_watch w;
    tc_watch_start(&w, BASE, path, 3000);
    assert_true(tc_wait_watchers(BASE, 1));
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "PATCH", PODS "/same", "application/merge-patch+json",
                                "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_int_equal(atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL)), rv);
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request(BASE, "PATCH", PODS "/same", "application/merge-patch+json",
                                "{\"metadata\":{\"labels\":{\"a\":\"2\"}}}", &r), CURLE_OK);
    long rv2 = atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL));
    assert_true(rv2 > rv);
    tc_reply_cleanup(&r);
    json_object *ev = tc_watch_next(&w, 2000);   /* the first event is the change, not the no-op */
    assert_non_null(ev);
    assert_string_equal(fg_json_get_str(ev, "object", "metadata", "labels", "a", NULL), "2");
    json_object_put(ev);
    tc_watch_stop(&w);
}

static void patches_over_http(void **state)
{
    (void)state;
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"pt\",\"labels\":{\"a\":\"1\"}},\"spec\":{\"containers\":"
                          "[{\"name\":\"c\",\"image\":\"i\"}],\"tolerations\":[{\"key\":\"t\"}]}}");
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "PATCH", PODS "/pt?fieldManager=kubectl-annotate", "application/merge-patch+json",
                                "{\"metadata\":{\"annotations\":{\"k\":\"v\"},\"labels\":{\"a\":null}}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "metadata", "annotations", "k", NULL), "v");
    assert_null(fg_json_get(r.json, "metadata", "labels", "a", NULL));
    int64_t gen = 0;
    fg_json_get_int64(r.json, &gen, "metadata", "generation", NULL);
    assert_int_equal(gen, 1);
    tc_reply_cleanup(&r);

    assert_int_equal(tc_request(BASE, "PATCH", PODS "/pt", "application/strategic-merge-patch+json; charset=utf-8",
                                "{\"spec\":{\"containers\":[{\"name\":\"d\",\"image\":\"j\"}]}}", &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_int_equal(json_object_array_length(fg_json_get(r.json, "spec", "containers", NULL)), 2);
    fg_json_get_int64(r.json, &gen, "metadata", "generation", NULL);
    assert_int_equal(gen, 2);
    tc_reply_cleanup(&r);

    assert_int_equal(tc_request(BASE, "PATCH", PODS "/pt", "application/json-patch+json",
                                "[{\"op\":\"test\",\"path\":\"/metadata/name\",\"value\":\"pt\"},"
                                "{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"k\"}]", &r),
                     CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(fg_json_get(r.json, "spec", "containers", NULL), 0),
                                        "image", NULL), "k");
    tc_reply_cleanup(&r);

    tc_expect_status(BASE, "PATCH", PODS "/pt", "application/json-patch+json",
                  "[{\"op\":\"test\",\"path\":\"/metadata/name\",\"value\":\"zz\"}]", 422, "Invalid", "test operation failed");
    tc_expect_status(BASE, "PATCH", PODS "/pt", "application/apply-patch+yaml", "{}", 415, "UnsupportedMediaType", NULL);
    tc_expect_status(BASE, "PATCH", PODS "/pt", "application/merge-patch+json", "{\"metadata\":{\"resourceVersion\":\"1\"}}",
                  409, "Conflict", NULL);
    tc_expect_status(BASE, "PATCH", PODS "/pt", "application/merge-patch+json", "{\"metadata\":{\"name\":\"renamed\"}}",
                  422, "Invalid", "immutable");
    tc_expect_status(BASE, "PATCH", PODS "/pt", "application/merge-patch+json", "{not json", 400, "BadRequest", "decoded");
    tc_expect_status(BASE, "PATCH", PODS "/ghost", "application/merge-patch+json", "{}", 404, "NotFound", NULL);
}

static void selectors_and_paging(void **state)
{
    (void)state;
    tc_create(BASE, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"paging\"}}");
    for (int i = 0; i < 7; i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"p%d\",\"labels\":{\"i\":\"%d\",\"even\":\"%s\"}},"
                 "\"spec\":{\"nodeName\":\"n%d\"},\"status\":{\"phase\":\"%s\"}}",
                 i, i, i % 2 ? "no" : "yes", i % 3, i < 3 ? "Running" : "Pending");
        tc_create(BASE, "/api/v1/namespaces/paging/pods", body);
    }
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "GET", "/api/v1/namespaces/paging/pods?labelSelector=even%3Dyes,i%20notin%20(0)",
                                NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_int_equal(json_object_array_length(fg_json_get(r.json, "items", NULL)), 3); /* 2, 4, 6 */
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request(BASE, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,status.phase%21%3DRunning",
                                NULL, NULL, &r), CURLE_OK);
    assert_int_equal(json_object_array_length(fg_json_get(r.json, "items", NULL)), 1); /* p4 */
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(fg_json_get(r.json, "items", NULL), 0), "metadata",
                                        "name", NULL), "p4");
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request(BASE, "GET", "/api/v1/pods?fieldSelector=metadata.name%3Dp5", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(json_object_array_length(fg_json_get(r.json, "items", NULL)), 1);
    tc_reply_cleanup(&r);

    /* paging: pages of 3, with the list RV equal to the store's revision on every page */
    char path[512] = "/api/v1/namespaces/paging/pods?limit=3";
    int total = 0, pages = 0;
    char seen[8] = { 0 };
    for (;;) {
        assert_int_equal(tc_request(BASE, "GET", path, NULL, NULL, &r), CURLE_OK);
        assert_int_equal(r.code, 200);
        assert_non_null(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL));
        json_object *items = fg_json_get(r.json, "items", NULL);
        for (size_t i = 0; i < json_object_array_length(items); i++) {
            const char *n = fg_json_get_str(json_object_array_get_idx(items, i), "metadata", "name", NULL);
            assert_false(seen[n[1] - '0']);
            seen[n[1] - '0'] = 1;
            total++;
        }
        pages++;
        const char *cont = fg_json_get_str(r.json, "metadata", "continue", NULL);
        if (!cont) {
            tc_reply_cleanup(&r);
            break;
        }
        assert_int_equal(json_object_array_length(items), 3);
        snprintf(path, sizeof(path), "/api/v1/namespaces/paging/pods?limit=3&continue=%s", cont);
        tc_reply_cleanup(&r);
        assert_true(pages < 10);
    }
    assert_int_equal(total, 7);
    assert_int_equal(pages, 3);

    /* every page reports the first page's revision, even after writes in between ... */
    assert_int_equal(tc_request(BASE, "GET", "/api/v1/namespaces/paging/pods?limit=3", NULL, NULL, &r), CURLE_OK);
    char first_rv[32], cont[256];
    snprintf(first_rv, sizeof(first_rv), "%s", fg_json_get_str(r.json, "metadata", "resourceVersion", NULL));
    snprintf(cont, sizeof(cont), "%s", fg_json_get_str(r.json, "metadata", "continue", NULL));
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request(BASE, "POST", "/api/v1/namespaces/paging/pods", NULL,
                                "{\"metadata\":{\"name\":\"between-pages\"}}", &r), CURLE_OK);
    assert_int_equal(r.code, 201);
    tc_reply_cleanup(&r);
    snprintf(path, sizeof(path), "/api/v1/namespaces/paging/pods?limit=3&continue=%s", cont);
    assert_int_equal(tc_request(BASE, "GET", path, NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL), first_rv);
    tc_reply_cleanup(&r);
    /* ... until that revision leaves the history: then the token has expired */
    assert_int_equal(tc_request(BASE, "POST", "/fracgpu-test/compact", NULL, "{}", &r), CURLE_OK);
    tc_reply_cleanup(&r);
    tc_expect_status(BASE, "GET", path, NULL, NULL, 410, "Expired", "continue");

    /* deleting the namespace deletes its pods */
    assert_int_equal(tc_request(BASE, "DELETE", "/api/v1/namespaces/paging", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    assert_int_equal(tc_request(BASE, "GET", "/api/v1/namespaces/paging/pods", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(json_object_array_length(fg_json_get(r.json, "items", NULL)), 0);
    tc_reply_cleanup(&r);
}

static void bad_input_gives_status(void **state)
{
    (void)state;
    tc_expect_status(BASE, "POST", PODS, NULL, "{\"metadata\":", 400, "BadRequest", "truncated");
    tc_expect_status(BASE, "POST", PODS, NULL, "not json at all", 400, "BadRequest", "invalid JSON");
    tc_expect_status(BASE, "POST", PODS, NULL, "", 400, "BadRequest", NULL);
    tc_expect_status(BASE, "POST", PODS, NULL, "[1,2]", 400, "BadRequest", "JSON object");
    tc_expect_status(BASE, "POST", PODS, "application/cbor", "\xa0", 415, "UnsupportedMediaType",
                  "application/json, application/vnd.kubernetes.protobuf");
    tc_expect_status(BASE, "PUT", PODS "/x", "application/yaml", "a: b", 415, "UnsupportedMediaType", NULL);
    tc_expect_status(BASE, "POST", PODS, NULL, "{\"metadata\":\"str\"}", 400, "BadRequest", "metadata");
    tc_expect_status(BASE, "GET", "/api/v1/widgets", NULL, NULL, 404, "NotFound", NULL);
    tc_expect_status(BASE, "GET", "/apis/nope.io/v1/things", NULL, NULL, 404, "NotFound", NULL);
    tc_expect_status(BASE, "GET", "/api/v1/pods/needs-namespace", NULL, NULL, 404, "NotFound", NULL);
    tc_expect_status(BASE, "GET", PODS "/x/status", NULL, NULL, 404, "NotFound", NULL);
    tc_expect_status(BASE, "GET", PODS "/x/exec", NULL, NULL, 404, "NotFound", NULL);
    tc_expect_status(BASE, "GET", "/api/v1/namespaces/default/configmaps/x/status", NULL, NULL, 404, "NotFound", NULL);
    tc_expect_status(BASE, "PUT", PODS, NULL, "{}", 405, "MethodNotAllowed", NULL);
    tc_expect_status(BASE, "DELETE", PODS, NULL, NULL, 405, "MethodNotAllowed", NULL);
    tc_expect_status(BASE, "POST", "/api/v1/pods", NULL, "{\"metadata\":{\"name\":\"x\"}}", 405, "MethodNotAllowed", NULL);
    tc_expect_status(BASE, "GET", PODS "?labelSelector=a%3D%3D%3Db", NULL, NULL, 400, "BadRequest", "labelSelector");
    tc_expect_status(BASE, "GET", PODS "?fieldSelector=spec.bogus%3D1", NULL, NULL, 400, "BadRequest", "not supported");
    tc_expect_status(BASE, "GET", PODS "?limit=-1", NULL, NULL, 400, "BadRequest", "limit");
    tc_expect_status(BASE, "GET", PODS "?limit=1&continue=zz", NULL, NULL, 400, "BadRequest", "continue");
    tc_expect_status(BASE, "GET", PODS "?watch=true&resourceVersion=abc", NULL, NULL, 400, "BadRequest", "resource version");

    /* A body over the 3 MiB limit: 413 Status, and the server keeps serving. */
    size_t n = (4u << 20);
    char *huge = fg_malloc(n + 64);
    strcpy(huge, "{\"metadata\":{\"name\":\"huge\"},\"data\":\"");
    size_t off = strlen(huge);
    memset(huge + off, 'x', n);
    strcpy(huge + off + n, "\"}");
    tc_expect_status(BASE, "POST", "/api/v1/namespaces/default/configmaps", NULL, huge, 413, "RequestEntityTooLarge", "limit");
    free(huge);
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "GET", "/version", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
}

/* dryRun=All: a write is checked and answered as if done, and nothing is stored or deleted. */
static void dry_run_stores_nothing(void **state)
{
    (void)state;
    const char *cms = "/api/v1/namespaces/default/configmaps";
    const char *cm = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"dry\"},"
                     "\"data\":{\"a\":\"1\"}}";
    json_object *o = tc_expect_json(BASE, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                                    "application/json", cm, 201);
    assert_string_equal(fg_json_get_str(o, "data", "a", NULL), "1");
    json_object_put(o);
    tc_expect_status(BASE, "GET", "/api/v1/namespaces/default/configmaps/dry", NULL, NULL, 404, "NotFound", NULL);

    assert_true(tc_create(BASE, cms, cm) > 0);
    const char *changed = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"dry\"},"
                          "\"data\":{\"a\":\"2\"}}";
    o = tc_expect_json(BASE, "PUT", "/api/v1/namespaces/default/configmaps/dry?dryRun=All", "application/json",
                       changed, 200);
    assert_string_equal(fg_json_get_str(o, "data", "a", NULL), "2");
    json_object_put(o);
    o = tc_expect_json(BASE, "PATCH", "/api/v1/namespaces/default/configmaps/dry?dryRun=All",
                       "application/merge-patch+json", "{\"data\":{\"b\":\"3\"}}", 200);
    assert_string_equal(fg_json_get_str(o, "data", "b", NULL), "3");
    json_object_put(o);
    o = tc_expect_json(BASE, "DELETE", "/api/v1/namespaces/default/configmaps/dry?dryRun=All", NULL, NULL, 200);
    json_object_put(o);
    /* in the DeleteOptions body, as client-go sends it, and checked as a real delete is */
    o = tc_expect_json(BASE, "DELETE", "/api/v1/namespaces/default/configmaps/dry", "application/json",
                       "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"dryRun\":[\"All\"]}", 200);
    assert_string_equal(fg_json_get_str(o, "metadata", "name", NULL), "dry");
    json_object_put(o);
    tc_expect_status(BASE, "DELETE", "/api/v1/namespaces/default/configmaps/dry", "application/json",
                     "{\"dryRun\":[\"All\"],\"preconditions\":{\"uid\":\"nope\"}}", 409, "Conflict", "Precondition");
    tc_expect_status(BASE, "DELETE", "/api/v1/namespaces/default/configmaps/dry", "application/json",
                     "{\"dryRun\":[\"Some\"]}", 400, "BadRequest", "dryRun");
    o = tc_get_json(BASE, "/api/v1/namespaces/default/configmaps/dry");
    assert_string_equal(fg_json_get_str(o, "data", "a", NULL), "1");   /* untouched by all of them */
    assert_null(fg_json_get(o, "data", "b", NULL));
    json_object_put(o);
    tc_expect_status(BASE, "POST", "/api/v1/namespaces/default/configmaps?dryRun=Some", "application/json", cm, 400,
                     "BadRequest", "dryRun");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_and_headers),
        cmocka_unit_test(create_get_and_metadata),
        cmocka_unit_test(update_conflicts_and_generation),
        cmocka_unit_test(unchanged_writes_store_nothing),
        cmocka_unit_test(patches_over_http),
        cmocka_unit_test(selectors_and_paging),
        cmocka_unit_test(bad_input_gives_status),
        cmocka_unit_test(dry_run_stores_nothing),
    };
    int rc = cmocka_run_group_tests(tests, tc_setup, tc_teardown);
    curl_global_cleanup();
    return rc;
}
