/*
 * The Priority admission plugin on pod creates, as kube-apiserver runs it: spec.priority and
 * spec.preemptionPolicy from the named PriorityClass, the global default class (the lowest value
 * when several) for a pod naming none, else 0; 403 Forbidden with kube's messages for an unknown
 * class and for a priority or preemptionPolicy other than the computed one; updates keep both.
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

#define BASE tc_srv.base
#define PODS "/api/v1/namespaces/default/pods"
#define CLASSES "/apis/scheduling.k8s.io/v1/priorityclasses"

/* POSTs a pod whose spec holds `extra` (JSON members, maybe empty) and returns the reply (caller puts). */
static json_object *create_pod(const char *name, const char *extra, long code)
{
    char *body = fg_asprintf("{\"metadata\":{\"name\":\"%s\"},\"spec\":{%s%s\"containers\":[{\"name\":\"c\","
                             "\"image\":\"busybox\"}]}}", name, extra, *extra ? "," : "");
    json_object *o = tc_expect_json(BASE, "POST", PODS, "application/json", body, code);
    free(body);
    return o;
}

static void expect_priority(json_object *pod, const char *class_name, int64_t value, const char *policy)
{
    int64_t got = -1;
    assert_true(fg_json_get_int64(pod, &got, "spec", "priority", NULL));
    assert_int_equal(got, value);
    const char *name = fg_json_get_str(pod, "spec", "priorityClassName", NULL);
    if (class_name)
        assert_string_equal(name, class_name);
    else
        assert_null(name);
    assert_string_equal(fg_json_get_str(pod, "spec", "preemptionPolicy", NULL), policy);
}

static void expect_forbidden(const char *name, const char *extra, const char *message)
{
    json_object *st = create_pod(name, extra, 403);
    assert_string_equal(fg_json_get_str(st, "reason", NULL), "Forbidden");
    assert_string_equal(fg_json_get_str(st, "message", NULL), message);
    assert_string_equal(fg_json_get_str(st, "details", "name", NULL), name);
    assert_string_equal(fg_json_get_str(st, "details", "kind", NULL), "pods");
    json_object_put(st);
    char *path = fg_asprintf(PODS "/%s", name);
    tc_expect_status(BASE, "GET", path, NULL, NULL, 404, "NotFound", NULL);
    free(path);
}

static void no_class_and_no_default(void **state)
{
    (void)state;
    json_object *pod = create_pod("plain", "", 201);
    expect_priority(pod, NULL, 0, "PreemptLowerPriority");
    json_object_put(pod);
    pod = create_pod("zero", "\"priority\":0", 201); /* the computed value may be given */
    expect_priority(pod, NULL, 0, "PreemptLowerPriority");
    json_object_put(pod);
}

static void named_classes(void **state)
{
    (void)state;
    tc_create(BASE, CLASSES, "{\"metadata\":{\"name\":\"batch\"},\"value\":-5,\"preemptionPolicy\":\"Never\"}");
    json_object *pod = create_pod("b", "\"priorityClassName\":\"batch\"", 201);
    expect_priority(pod, "batch", -5, "Never");
    json_object_put(pod);
    pod = create_pod("node-agent", "\"priorityClassName\":\"system-node-critical\"", 201);
    expect_priority(pod, "system-node-critical", 2000001000, "PreemptLowerPriority");
    json_object_put(pod);
    json_object *stored = tc_get_json(BASE, PODS "/b");
    expect_priority(stored, "batch", -5, "Never");
    json_object_put(stored);
}

static void refusals(void **state)
{
    (void)state;
    expect_forbidden("lost", "\"priorityClassName\":\"nope\"",
                     "pods \"lost\" is forbidden: no PriorityClass with name nope was found");
    expect_forbidden("eager", "\"priorityClassName\":\"system-cluster-critical\",\"priority\":7",
                     "pods \"eager\" is forbidden: the integer value of priority (7) must not be provided in pod spec; "
                     "priority admission controller computed 2000000000 from the given PriorityClass name");
    expect_forbidden("self", "\"priority\":100",
                     "pods \"self\" is forbidden: the integer value of priority (100) must not be provided in pod spec; "
                     "priority admission controller computed 0 from the given PriorityClass name");
    expect_forbidden("polite", "\"priorityClassName\":\"system-node-critical\",\"preemptionPolicy\":\"Never\"",
                     "pods \"polite\" is forbidden: the string value of PreemptionPolicy (Never) must not be provided "
                     "in pod spec; priority admission controller computed PreemptLowerPriority from the given "
                     "PriorityClass name");
    /* admission runs before the name is generated: kube names the generateName prefix */
    tc_expect_status(BASE, "POST", PODS, "application/json",
                     "{\"metadata\":{\"generateName\":\"gen-\"},\"spec\":{\"priorityClassName\":\"nope\","
                     "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", 403, "Forbidden",
                     "pods \"gen-\" is forbidden: no PriorityClass with name nope was found");
}

static void global_default(void **state)
{
    (void)state;
    tc_create(BASE, CLASSES, "{\"metadata\":{\"name\":\"usual\"},\"value\":10,\"globalDefault\":true}");
    tc_create(BASE, CLASSES, "{\"metadata\":{\"name\":\"cheap\"},\"value\":3,\"globalDefault\":true,"
                             "\"preemptionPolicy\":\"Never\"}");
    json_object *pod = create_pod("d", "", 201);
    expect_priority(pod, "cheap", 3, "Never");
    json_object_put(pod);
    pod = create_pod("other", "\"priorityClassName\":\"usual\"", 201); /* a named class wins */
    int64_t got = 0;
    assert_true(fg_json_get_int64(pod, &got, "spec", "priority", NULL));
    assert_int_equal(got, 10);
    json_object_put(pod);
}

static void updates_keep_priority(void **state)
{
    (void)state;
    json_object_put(create_pod("kept", "\"priorityClassName\":\"system-cluster-critical\"", 201));
    json_object *put = tc_expect_json(BASE, "PUT", PODS "/kept", "application/json",
                                      "{\"metadata\":{\"name\":\"kept\",\"labels\":{\"a\":\"b\"}},\"spec\":{"
                                      "\"priorityClassName\":\"system-cluster-critical\",\"containers\":[{\"name\":\"c\","
                                      "\"image\":\"busybox\"}]}}", 200);
    expect_priority(put, "system-cluster-critical", 2000000000, "PreemptLowerPriority");
    assert_string_equal(fg_json_get_str(put, "metadata", "labels", "a", NULL), "b");
    json_object_put(put);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_class_and_no_default, tc_setup, tc_teardown),
        cmocka_unit_test_setup_teardown(named_classes, tc_setup, tc_teardown),
        cmocka_unit_test_setup_teardown(refusals, tc_setup, tc_teardown),
        cmocka_unit_test_setup_teardown(global_default, tc_setup, tc_teardown),
        cmocka_unit_test_setup_teardown(updates_keep_priority, tc_setup, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
