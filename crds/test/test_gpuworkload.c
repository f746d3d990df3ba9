/*
 * GPUWorkload spec decoding (required targetRef, enums, unknown fields, hostile input) and the policy
 * a workload resolves to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "crds/gpuworkload.h"

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &o, NULL), FG_OK);
    return o;
}

static void expect_invalid(const char *text, const char *needle)
{
    json_object *o = parse(text);
    struct fg_gpuworkload_spec s;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_gpuworkload_decode(o, &s, msg), FG_E_INVAL);
    if (!strstr(msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
    json_object_put(o);
}

static void test_decode(void **state)
{
    (void)state;
    json_object *o = parse("{\"targetRef\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm\"},"
                           "\"policy\":\"batch\",\"updateMode\":\"Off\"}");
    struct fg_gpuworkload_spec s;
    assert_int_equal(fg_gpuworkload_decode(o, &s, NULL), FG_OK);
    assert_string_equal(s.target_api_version, "apps/v1");
    assert_string_equal(s.target_kind, "Deployment");
    assert_string_equal(s.target_name, "llm");
    assert_string_equal(s.policy, "batch");
    assert_true(s.has_update_mode);
    assert_int_equal(s.update_mode, FG_UPDATE_OFF);
    fg_gpuworkload_spec_cleanup(&s);
    json_object_put(o);

    o = parse("{\"targetRef\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"t\"},\"policy\":\"\"}");
    assert_int_equal(fg_gpuworkload_decode(o, &s, NULL), FG_OK);
    assert_null(s.policy);
    assert_false(s.has_update_mode);
    fg_gpuworkload_spec_cleanup(&s);
    json_object_put(o);
}

static void test_hostile(void **state)
{
    (void)state;
    struct fg_gpuworkload_spec s;
    assert_int_equal(fg_gpuworkload_decode(NULL, &s, NULL), FG_E_INVAL);
    expect_invalid("{}", "spec.targetRef: required");
    expect_invalid("{\"targetRef\":{\"kind\":\"Deployment\",\"name\":\"x\"}}", "spec.targetRef.apiVersion: required");
    expect_invalid("{\"targetRef\":{\"apiVersion\":\"v1\",\"name\":\"x\"}}", "spec.targetRef.kind: required");
    /* Failures after some strings were taken leak nothing (ASan checks). */
    expect_invalid("{\"targetRef\":{\"apiVersion\":\"v1\",\"kind\":\"K\"}}", "spec.targetRef.name: required");
    expect_invalid("{\"targetRef\":{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"n\"},\"policy\":7}",
                   "spec.policy: must be a string");
    expect_invalid("{\"targetRef\":{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"n\",\"uid\":\"u\"}}",
                   "spec.targetRef.uid: unknown field");
    expect_invalid("{\"targetRef\":{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"n\"},\"extra\":{}}",
                   "spec.extra: unknown field");
    expect_invalid("{\"targetRef\":{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"n\"},\"updateMode\":\"auto\"}",
                   "spec.updateMode");
    expect_invalid("{\"targetRef\":[]}", "spec.targetRef: must be an object");
    expect_invalid("{\"targetRef\":{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"\"}}", "spec.targetRef.name");
    expect_invalid("[1]", "spec: must be an object");
    char big[600];
    memset(big, 'a', sizeof big);
    char text[800];
    snprintf(text, sizeof text, "{\"targetRef\":{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"%.300s\"}}", big);
    expect_invalid(text, "must be 1 to 253 characters, got 300");
}

static void test_policy_resolution(void **state)
{
    (void)state;
    json_object *o = parse("{\"spec\":{\"policy\":\"mine\"},\"status\":{\"policy\":\"batch\",\"detectedClass\":\"build\"}}");
    assert_string_equal(fg_gpuworkload_policy_get(o), "mine");
    json_object_put(o);
    o = parse("{\"spec\":{\"policy\":\"\"},\"status\":{\"policy\":\"batch\",\"detectedClass\":\"build\"}}");
    assert_string_equal(fg_gpuworkload_policy_get(o), "batch");
    json_object_put(o);
    o = parse("{\"spec\":{},\"status\":{\"detectedClass\":\"training\"}}");
    assert_string_equal(fg_gpuworkload_policy_get(o), "training");
    json_object_put(o);
    o = parse("{\"spec\":{},\"status\":{\"detectedClass\":\"inference\"}}");
    assert_string_equal(fg_gpuworkload_policy_get(o), "real-time");
    json_object_put(o);
    o = parse("{\"spec\":{},\"status\":{\"detectedClass\":\"quantum\"}}");
    assert_null(fg_gpuworkload_policy_get(o));
    json_object_put(o);
    o = parse("{\"spec\":{\"policy\":5}}");
    assert_null(fg_gpuworkload_policy_get(o));
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_policy_resolution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
