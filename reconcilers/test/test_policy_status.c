/*
 * The GPUPolicy status the reconciler writes: Ready for a valid policy, Ready=False plus Invalid with
 * an actionable reason for one that breaks a rule, stable transition times (no rewrite when nothing
 * changed), and the workload index that counts a policy's users.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "reconcilers/policy.h"
#include "reconcilers/policy_status.h"

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &o, NULL), FG_OK);
    return o;
}

static json_object *cond(json_object *status, size_t i)
{
    json_object *conds = fg_json_get(status, "conditions", NULL);
    assert_true(json_object_is_type(conds, json_type_array));
    assert_true(i < json_object_array_length(conds));
    return json_object_array_get_idx(conds, i);
}

static void test_valid_policy(void **state)
{
    (void)state;
    json_object *p = parse("{\"metadata\":{\"name\":\"p\",\"generation\":3},\"spec\":{\"compute\":{\"maxMilli\":500}}}");
    bool valid = false;
    json_object *st = fg_policy_status_build(p, 4, "2026-01-01T00:00:00Z", &valid);
    assert_true(valid);
    int64_t v = 0;
    assert_true(fg_json_get_int64(st, &v, "workloads", NULL));
    assert_int_equal(v, 4);
    assert_true(fg_json_get_int64(st, &v, "observedGeneration", NULL));
    assert_int_equal(v, 3);
    assert_int_equal(json_object_array_length(fg_json_get(st, "conditions", NULL)), 1);
    assert_string_equal(fg_json_get_str(cond(st, 0), "type", NULL), "Ready");
    assert_string_equal(fg_json_get_str(cond(st, 0), "status", NULL), "True");
    assert_string_equal(fg_json_get_str(cond(st, 0), "reason", NULL), "Valid");
    assert_string_equal(fg_json_get_str(cond(st, 0), "lastTransitionTime", NULL), "2026-01-01T00:00:00Z");
    assert_true(fg_policy_status_changed(p, st));
    json_object_put(st);
    json_object_put(p);
}

static void test_cross_field_invalid(void **state)
{
    (void)state;
    json_object *p = parse("{\"metadata\":{\"name\":\"p\",\"generation\":1},"
                           "\"spec\":{\"compute\":{\"minMilli\":900,\"maxMilli\":100}}}");
    bool valid = true;
    json_object *st = fg_policy_status_build(p, 0, "2026-01-01T00:00:00Z", &valid);
    assert_false(valid);
    assert_string_equal(fg_json_get_str(cond(st, 0), "type", NULL), "Ready");
    assert_string_equal(fg_json_get_str(cond(st, 0), "status", NULL), "False");
    assert_string_equal(fg_json_get_str(cond(st, 1), "type", NULL), "Invalid");
    assert_string_equal(fg_json_get_str(cond(st, 1), "status", NULL), "True");
    assert_string_equal(fg_json_get_str(cond(st, 1), "reason", NULL), "ComputeMinAboveMax");
    assert_non_null(strstr(fg_json_get_str(cond(st, 1), "message", NULL), "lower minMilli or raise maxMilli"));
    json_object_put(st);
    json_object_put(p);
}

static void test_schema_invalid(void **state)
{
    (void)state;
    /* Stored by a server that does not validate, or written before a schema change. */
    json_object *p = parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"sharing\":\"teleport\",\"extra\":1}}");
    bool valid = true;
    json_object *st = fg_policy_status_build(p, 0, "t", &valid);
    assert_false(valid);
    assert_string_equal(fg_json_get_str(cond(st, 1), "reason", NULL), "InvalidField");
    assert_non_null(strstr(fg_json_get_str(cond(st, 1), "message", NULL), "spec."));
    json_object_put(st);
    json_object_put(p);
}

static void test_unchanged_status_is_stable(void **state)
{
    (void)state;
    json_object *p = parse("{\"metadata\":{\"name\":\"p\",\"generation\":2},\"spec\":{}}");
    bool valid;
    json_object *st = fg_policy_status_build(p, 1, "2026-01-01T00:00:00Z", &valid);
    json_object_object_add(p, "status", st);
    /* Later, nothing changed: the transition time is kept and there is nothing to write. */
    json_object *again = fg_policy_status_build(p, 1, "2026-06-01T00:00:00Z", &valid);
    assert_false(fg_policy_status_changed(p, again));
    json_object_put(again);
    /* One more workload: a change, but the Ready condition keeps its transition time. */
    again = fg_policy_status_build(p, 2, "2026-06-01T00:00:00Z", &valid);
    assert_true(fg_policy_status_changed(p, again));
    assert_string_equal(fg_json_get_str(cond(again, 0), "lastTransitionTime", NULL), "2026-01-01T00:00:00Z");
    json_object_put(again);
    /* Broken now: Ready flips, with the new time. */
    json_object_object_add(p, "spec", parse("{\"memory\":{\"minMiB\":9,\"maxMiB\":1}}"));
    again = fg_policy_status_build(p, 2, "2026-06-01T00:00:00Z", &valid);
    assert_false(valid);
    assert_string_equal(fg_json_get_str(cond(again, 0), "lastTransitionTime", NULL), "2026-06-01T00:00:00Z");
    json_object_put(again);
    json_object_put(p);
}

static void test_workload_index(void **state)
{
    (void)state;
    const char *values[4];
    json_object *w = parse("{\"spec\":{\"policy\":\"batch\"}}");
    assert_int_equal(fg_policy_index_workload(NULL, w, values, 4), 1);
    assert_string_equal(values[0], "batch");
    assert_int_equal(fg_policy_index_workload(NULL, w, values, 0), 0);
    json_object_put(w);
    w = parse("{\"spec\":{},\"status\":{\"detectedClass\":\"build\"}}");
    assert_int_equal(fg_policy_index_workload(NULL, w, values, 4), 1);
    assert_string_equal(values[0], "build");
    json_object_put(w);
    w = parse("{\"spec\":{}}");
    assert_int_equal(fg_policy_index_workload(NULL, w, values, 4), 0);
    json_object_put(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_policy),
        cmocka_unit_test(test_cross_field_invalid),
        cmocka_unit_test(test_schema_invalid),
        cmocka_unit_test(test_unchanged_status_is_stable),
        cmocka_unit_test(test_workload_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
