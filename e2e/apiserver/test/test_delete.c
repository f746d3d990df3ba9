/* DELETE against an in-process server: graceful deletion of pods (grace period from the options, the
 * query, the pod or the default; only shortened afterwards; the final DELETE with grace 0), pods that
 * go at once (unbound, Succeeded), eviction of a bound pod, finalizers together with a grace period,
 * propagationPolicy's finalizers, and bad options (unknown policy, garbage grace period, wrong JSON
 * types). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "base/json.h"
#include "client.h"

#define BASE tc_srv.base
#define PODS "/api/v1/namespaces/default/pods"
#define CMS "/api/v1/namespaces/default/configmaps"
#define WAIT_MS 5000

static time_t parse_time(const char *s)
{
    struct tm tm = { 0 };
    assert_non_null(s);
    assert_non_null(strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm));
    return timegm(&tm);
}

/* DELETEs path (body may be NULL), asserts the code and returns the reply's JSON (caller puts). */
static json_object *delete(const char *path, const char *body, long code)
{
    return tc_expect_json(BASE, "DELETE", path, body ? "application/json" : NULL, body, code);
}

/* Empties the object's finalizers by a merge patch; returns the reply (caller puts). */
static json_object *drop_finalizers(const char *path)
{
    return tc_expect_json(BASE, "PATCH", path, "application/merge-patch+json", "{\"metadata\":{\"finalizers\":null}}",
                          200);
}

static int64_t grace_of(json_object *o)
{
    int64_t g = -1;
    assert_true(fg_json_get_int64(o, &g, "metadata", "deletionGracePeriodSeconds", NULL));
    return g;
}

static void expect_event(struct tc_watch *w, const char *type, const char *name)
{
    json_object *ev = tc_watch_next(w, WAIT_MS);
    assert_non_null(ev);
    assert_string_equal(fg_json_get_str(ev, "type", NULL), type);
    assert_string_equal(fg_json_get_str(ev, "object", "metadata", "name", NULL), name);
    json_object_put(ev);
}

static void bound_pod_terminates_gracefully(void **state)
{
    (void)state;
    long rv = tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"g1\"},\"spec\":{\"nodeName\":\"n1\"}}");
    char path[160];
    snprintf(path, sizeof(path), PODS "?watch=true&fieldSelector=metadata.name%%3Dg1&resourceVersion=%ld", rv);
    struct tc_watch w;
    tc_watch_start(&w, BASE, path, 20000);
    assert_true(tc_wait_watchers(BASE, 1));

    time_t before = time(NULL);
    json_object *o = delete(PODS "/g1?gracePeriodSeconds=20", NULL, 200);
    assert_int_equal(grace_of(o), 20);
    time_t first = parse_time(fg_json_get_str(o, "metadata", "deletionTimestamp", NULL));
    assert_true(first >= before + 19 && first <= time(NULL) + 21);
    json_object_put(o);
    expect_event(&w, "MODIFIED", "g1");
    o = tc_get_json(BASE, PODS "/g1"); /* still there, terminating */
    assert_int_equal(grace_of(o), 20);
    const char *stored_rv = fg_json_get_str(o, "metadata", "resourceVersion", NULL);
    char rv_copy[32];
    snprintf(rv_copy, sizeof(rv_copy), "%s", stored_rv);
    json_object_put(o);

    /* a longer grace period is ignored: the object comes back unchanged */
    o = delete(PODS "/g1", "{\"gracePeriodSeconds\":40}", 200);
    assert_int_equal(grace_of(o), 20);
    assert_string_equal(fg_json_get_str(o, "metadata", "resourceVersion", NULL), rv_copy);
    json_object_put(o);
    o = delete(PODS "/g1", NULL, 200); /* none at all: pending, unchanged */
    assert_int_equal(grace_of(o), 20);
    json_object_put(o);

    /* a shorter one moves the deadline back by the difference */
    o = delete(PODS "/g1", "{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"gracePeriodSeconds\":5}", 200);
    assert_int_equal(grace_of(o), 5);
    assert_int_equal(parse_time(fg_json_get_str(o, "metadata", "deletionTimestamp", NULL)), first - 15);
    json_object_put(o);
    expect_event(&w, "MODIFIED", "g1");

    /* an update cannot move the deadline, nor does it end the grace period */
    o = tc_expect_json(BASE, "PATCH", PODS "/g1", "application/merge-patch+json",
                       "{\"metadata\":{\"deletionGracePeriodSeconds\":0,\"labels\":{\"a\":\"b\"}}}", 200);
    assert_int_equal(grace_of(o), 5);
    json_object_put(o);
    expect_event(&w, "MODIFIED", "g1");

    /* the kubelet's final DELETE */
    o = delete(PODS "/g1?gracePeriodSeconds=0", NULL, 200);
    assert_string_equal(fg_json_get_str(o, "metadata", "name", NULL), "g1");
    json_object_put(o);
    expect_event(&w, "DELETED", "g1");
    tc_expect_status(BASE, "GET", PODS "/g1", NULL, NULL, 404, "NotFound", NULL);
    tc_watch_stop(&w);
}

static void pod_grace_period_sources(void **state)
{
    (void)state;
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"g2\"},\"spec\":{\"nodeName\":\"n1\","
                          "\"terminationGracePeriodSeconds\":7}}");
    json_object *o = delete(PODS "/g2", NULL, 200);
    assert_int_equal(grace_of(o), 7);
    json_object_put(o);
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"g3\"},\"spec\":{\"nodeName\":\"n1\"}}");
    o = delete(PODS "/g3", NULL, 200);
    assert_int_equal(grace_of(o), 30);
    json_object_put(o);
    /* a negative grace period counts as 1 s, as kube-apiserver treats it */
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"g4\"},\"spec\":{\"nodeName\":\"n1\"}}");
    o = delete(PODS "/g4", "{\"gracePeriodSeconds\":-5}", 200);
    assert_int_equal(grace_of(o), 1);
    json_object_put(o);
    /* the body wins over the query */
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"g5\"},\"spec\":{\"nodeName\":\"n1\"}}");
    o = delete(PODS "/g5?gracePeriodSeconds=3", "{\"gracePeriodSeconds\":9}", 200);
    assert_int_equal(grace_of(o), 9);
    json_object_put(o);
    for (const char *const *n = (const char *const[]){ "g2", "g3", "g4", "g5", NULL }; *n; n++) {
        char path[96];
        snprintf(path, sizeof(path), PODS "/%s?gracePeriodSeconds=0", *n);
        json_object_put(delete(path, NULL, 200));
        snprintf(path, sizeof(path), PODS "/%s", *n);
        tc_expect_status(BASE, "GET", path, NULL, NULL, 404, "NotFound", NULL);
    }
}

static void pods_that_go_at_once(void **state)
{
    (void)state;
    /* not bound to a node: no kubelet will ever confirm, so it goes now whatever the grace period */
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"unbound\"},\"spec\":{\"terminationGracePeriodSeconds\":60}}");
    json_object_put(delete(PODS "/unbound?gracePeriodSeconds=30", NULL, 200));
    tc_expect_status(BASE, "GET", PODS "/unbound", NULL, NULL, 404, "NotFound", NULL);
    /* terminated: nothing to wait for */
    static const char *const phases[] = { "Succeeded", "Failed" };
    for (size_t i = 0; i < 2; i++) {
        char body[160], path[96];
        snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"done-%zu\"},\"spec\":{\"nodeName\":\"n1\"},"
                 "\"status\":{\"phase\":\"%s\"}}", i, phases[i]);
        tc_create(BASE, PODS, body);
        snprintf(path, sizeof(path), PODS "/done-%zu/status", i);
        json_object_put(tc_expect_json(BASE, "PATCH", path, "application/merge-patch+json", body, 200));
        snprintf(path, sizeof(path), PODS "/done-%zu", i);
        json_object_put(delete(path, NULL, 200));
        tc_expect_status(BASE, "GET", path, NULL, NULL, 404, "NotFound", NULL);
    }
    /* other kinds ignore the grace period */
    tc_create(BASE, CMS, "{\"metadata\":{\"name\":\"plain\"}}");
    json_object_put(delete(CMS "/plain?gracePeriodSeconds=30", NULL, 200));
    tc_expect_status(BASE, "GET", CMS "/plain", NULL, NULL, 404, "NotFound", NULL);
}

static void eviction_is_graceful(void **state)
{
    (void)state;
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"ev\"},\"spec\":{\"nodeName\":\"n1\"}}");
    json_object_put(tc_expect_json(BASE, "POST", PODS "/ev/eviction", NULL,
                                   "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"ev\"},"
                                   "\"deleteOptions\":{\"gracePeriodSeconds\":12}}", 201));
    json_object *o = tc_get_json(BASE, PODS "/ev"); /* terminating, with the eviction's grace period */
    assert_int_equal(grace_of(o), 12);
    json_object_put(o);
    tc_expect_status(BASE, "POST", PODS "/ev/eviction", NULL,
                     "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"ev\"},"
                     "\"deleteOptions\":{\"propagationPolicy\":\"Never\"}}", 422, "Invalid", "propagationPolicy");
    json_object_put(delete(PODS "/ev?gracePeriodSeconds=0", NULL, 200));
    tc_expect_status(BASE, "GET", PODS "/ev", NULL, NULL, 404, "NotFound", NULL);
}

static void finalizers_and_grace(void **state)
{
    (void)state;
    /* grace period over but a finalizer left: stays until the finalizer goes */
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"f1\",\"finalizers\":[\"fracgpu.io/x\"]},"
                          "\"spec\":{\"nodeName\":\"n1\"}}");
    json_object_put(delete(PODS "/f1", "{\"gracePeriodSeconds\":10}", 200));
    json_object *o = delete(PODS "/f1?gracePeriodSeconds=0", NULL, 200);
    assert_int_equal(grace_of(o), 0);
    json_object_put(o);
    json_object_put(drop_finalizers(PODS "/f1"));
    tc_expect_status(BASE, "GET", PODS "/f1", NULL, NULL, 404, "NotFound", NULL);

    /* finalizer gone during the grace period: the pod still waits for its final DELETE */
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"f2\",\"finalizers\":[\"fracgpu.io/x\"]},"
                          "\"spec\":{\"nodeName\":\"n1\"}}");
    json_object_put(delete(PODS "/f2", "{\"gracePeriodSeconds\":10}", 200));
    json_object *kept = drop_finalizers(PODS "/f2");
    assert_int_equal(grace_of(kept), 10);
    json_object_put(kept);
    json_object_put(delete(PODS "/f2?gracePeriodSeconds=0", NULL, 200));
    tc_expect_status(BASE, "GET", PODS "/f2", NULL, NULL, 404, "NotFound", NULL);
}

/* The object's finalizers as one comma-joined string. */
static void finalizers_of(json_object *o, char *out, size_t n)
{
    json_object *f = fg_json_get(o, "metadata", "finalizers", NULL);
    out[0] = '\0';
    for (size_t i = 0; json_object_is_type(f, json_type_array) && i < json_object_array_length(f); i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", i ? "," : "", json_object_get_string(json_object_array_get_idx(f, i)));
    }
}

static void propagation_policy(void **state)
{
    (void)state;
    char fin[128];
    tc_create(BASE, CMS, "{\"metadata\":{\"name\":\"orphan\"}}");
    json_object *o = delete(CMS "/orphan?propagationPolicy=Orphan", NULL, 200);
    finalizers_of(o, fin, sizeof(fin));
    assert_string_equal(fin, "orphan");
    assert_non_null(fg_json_get_str(o, "metadata", "deletionTimestamp", NULL));
    assert_int_equal(grace_of(o), 0);
    json_object_put(o);
    o = tc_get_json(BASE, CMS "/orphan"); /* waits for the garbage collector */
    json_object_put(o);
    json_object_put(drop_finalizers(CMS "/orphan"));
    tc_expect_status(BASE, "GET", CMS "/orphan", NULL, NULL, 404, "NotFound", NULL);

    /* Foreground keeps the object's own finalizers and adds foregroundDeletion */
    tc_create(BASE, CMS, "{\"metadata\":{\"name\":\"fg\",\"finalizers\":[\"fracgpu.io/x\",\"orphan\"]}}");
    o = delete(CMS "/fg", "{\"propagationPolicy\":\"Foreground\"}", 200);
    finalizers_of(o, fin, sizeof(fin));
    assert_string_equal(fin, "fracgpu.io/x,foregroundDeletion");
    json_object_put(o);
    /* a deletion pending: later options change nothing */
    o = delete(CMS "/fg?propagationPolicy=Orphan", NULL, 200);
    finalizers_of(o, fin, sizeof(fin));
    assert_string_equal(fin, "fracgpu.io/x,foregroundDeletion");
    json_object_put(o);

    /* Background drops the collector's finalizers: an object held only by them goes */
    tc_create(BASE, CMS, "{\"metadata\":{\"name\":\"bg\",\"finalizers\":[\"orphan\"]}}");
    json_object_put(delete(CMS "/bg", "{\"propagationPolicy\":\"Background\"}", 200));
    tc_expect_status(BASE, "GET", CMS "/bg", NULL, NULL, 404, "NotFound", NULL);

    /* with no policy the object's own choice stays */
    tc_create(BASE, CMS, "{\"metadata\":{\"name\":\"keep\",\"finalizers\":[\"orphan\"]}}");
    o = delete(CMS "/keep", NULL, 200);
    finalizers_of(o, fin, sizeof(fin));
    assert_string_equal(fin, "orphan");
    json_object_put(o);

    /* a bound pod with Foreground: graceful and held */
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"fgpod\"},\"spec\":{\"nodeName\":\"n1\"}}");
    o = delete(PODS "/fgpod?propagationPolicy=Foreground&gracePeriodSeconds=0", NULL, 200);
    finalizers_of(o, fin, sizeof(fin));
    assert_string_equal(fin, "foregroundDeletion");
    json_object_put(o);
    o = tc_get_json(BASE, PODS "/fgpod");
    json_object_put(o);
}

static void bad_delete_options(void **state)
{
    (void)state;
    tc_create(BASE, CMS, "{\"metadata\":{\"name\":\"bad\"}}");
    tc_create(BASE, PODS, "{\"metadata\":{\"name\":\"badpod\"},\"spec\":{\"nodeName\":\"n1\"}}");
    tc_expect_status(BASE, "DELETE", CMS "/bad?propagationPolicy=Sideways", NULL, NULL, 422, "Invalid",
                     "Unsupported value: \"Sideways\"");
    tc_expect_status(BASE, "DELETE", CMS "/bad", "application/json", "{\"propagationPolicy\":\"orphan\"}", 422,
                     "Invalid", "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy");
    tc_expect_status(BASE, "DELETE", CMS "/bad", "application/json", "{\"propagationPolicy\":3}", 400,
                     "BadRequest", "propagationPolicy");
    tc_expect_status(BASE, "DELETE", PODS "/badpod?gracePeriodSeconds=soon", NULL, NULL, 400, "BadRequest",
                     "\"soon\"");
    tc_expect_status(BASE, "DELETE", PODS "/badpod?gracePeriodSeconds=", NULL, NULL, 400, "BadRequest", NULL);
    tc_expect_status(BASE, "DELETE", PODS "/badpod?gracePeriodSeconds=5s", NULL, NULL, 400, "BadRequest", NULL);
    tc_expect_status(BASE, "DELETE", PODS "/badpod?gracePeriodSeconds=%205", NULL, NULL, 400, "BadRequest", NULL);
    tc_expect_status(BASE, "DELETE", PODS "/badpod?gracePeriodSeconds=-", NULL, NULL, 400, "BadRequest", NULL);
    tc_expect_status(BASE, "DELETE", PODS "/badpod?gracePeriodSeconds=99999999999999999999", NULL, NULL, 400,
                     "BadRequest", "invalid gracePeriodSeconds");
    tc_expect_status(BASE, "DELETE", PODS "/badpod", "application/json", "{\"gracePeriodSeconds\":\"5\"}", 400,
                     "BadRequest", "gracePeriodSeconds");
    tc_expect_status(BASE, "DELETE", PODS "/badpod", "application/json", "[1]", 400, "BadRequest", NULL);
    tc_expect_status(BASE, "DELETE", PODS "/missing?gracePeriodSeconds=1", NULL, NULL, 404, "NotFound", NULL);
    /* nothing was lost: both objects are there, not being deleted */
    static const char *const paths[] = { CMS "/bad", PODS "/badpod" };
    for (size_t i = 0; i < 2; i++) {
        json_object *o = tc_get_json(BASE, paths[i]);
        assert_null(fg_json_get(o, "metadata", "deletionTimestamp", NULL));
        assert_null(fg_json_get(o, "metadata", "finalizers", NULL));
        json_object_put(o);
    }
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bound_pod_terminates_gracefully),
        cmocka_unit_test(pod_grace_period_sources),
        cmocka_unit_test(pods_that_go_at_once),
        cmocka_unit_test(eviction_is_graceful),
        cmocka_unit_test(finalizers_and_grace),
        cmocka_unit_test(propagation_policy),
        cmocka_unit_test(bad_delete_options),
    };
    int rc = cmocka_run_group_tests(tests, tc_setup, tc_teardown);
    curl_global_cleanup();
    return rc;
}
