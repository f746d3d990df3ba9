/*
 * GPUPolicy decoding, defaulting and validation: the schema's rules, the cross-field rules, and
 * hostile input (wrong types, huge numbers, missing and unknown fields) refused with a message that
 * names the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "crds/gpupolicy.h"


/* Specs are equal when their canonical encodings are (the structs have padding). */
static void assert_spec_equal(const struct fg_gpupolicy_spec *a, const struct fg_gpupolicy_spec *b)
{
    json_object *ja = fg_gpupolicy_encode(a), *jb = fg_gpupolicy_encode(b);
    assert_string_equal(json_object_to_json_string(ja), json_object_to_json_string(jb));
    json_object_put(ja);
    json_object_put(jb);
}
static json_object *parse(const char *text)
{
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &o, NULL), FG_OK);
    return o;
}

/* Decodes text; returns the error and leaves the message in errmsg. */
static enum fg_err decode(const char *text, struct fg_gpupolicy_spec *s, char *errmsg)
{
    json_object *o = parse(text);
    enum fg_err err = fg_gpupolicy_decode(o, s, errmsg);
    json_object_put(o);
    return err;
}

static void expect_invalid(const char *text, const char *needle)
{
    struct fg_gpupolicy_spec s;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(decode(text, &s, msg), FG_E_INVAL);
    if (!strstr(msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
}

static void test_empty_spec_gets_defaults(void **state)
{
    (void)state;
    struct fg_gpupolicy_spec s, d;
    fg_gpupolicy_spec_defaults(&d);
    assert_int_equal(decode("{}", &s, NULL), FG_OK);
    assert_spec_equal(&s, &d);
    assert_int_equal(fg_gpupolicy_decode(NULL, &s, NULL), FG_OK);
    assert_spec_equal(&s, &d);
    assert_int_equal(s.history_window_ms, 7ll * 24 * 3600 * 1000);
    assert_int_equal(s.compute.percentile, 95);
    assert_int_equal(s.update_mode, FG_UPDATE_INITIAL);
    const char *reason = NULL;
    assert_int_equal(fg_gpupolicy_validate(&s, &reason, NULL), FG_OK);
}

static void test_full_spec(void **state)
{
    (void)state;
    struct fg_gpupolicy_spec s;
    assert_int_equal(decode("{\"workloadClass\":\"training\",\"sharing\":\"mps\",\"isolation\":\"dedicated\","
                            "\"historyWindow\":\"72h\",\"minHistory\":\"1h30m\",\"updateMode\":\"Auto\","
                            "\"cooldown\":\"90s\",\"changeThresholdPercent\":7,\"priority\":-3,"
                            "\"compute\":{\"percentile\":90,\"headroomPercent\":15,\"minMilli\":10,\"maxMilli\":500},"
                            "\"memory\":{\"percentile\":99,\"headroomPercent\":0,\"minMiB\":0,\"maxMiB\":40960}}",
                            &s, NULL),
                     FG_OK);
    assert_int_equal(s.workload_class, FG_CLASS_TRAINING);
    assert_int_equal(s.sharing, FG_SHARING_MPS);
    assert_int_equal(s.isolation, FG_ISOLATION_DEDICATED);
    assert_int_equal(s.history_window_ms, 72ll * 3600 * 1000);
    assert_int_equal(s.min_history_ms, 90ll * 60 * 1000);
    assert_int_equal(s.update_mode, FG_UPDATE_AUTO);
    assert_int_equal(s.cooldown_ms, 90000);
    assert_int_equal(s.change_threshold_percent, 7);
    assert_int_equal(s.priority, -3);
    assert_int_equal(s.compute.max, 500);
    assert_int_equal(s.memory.percentile, 99);
    assert_int_equal(s.memory.max, 40960);
}

static void test_partial_nested_keeps_other_defaults(void **state)
{
    (void)state;
    struct fg_gpupolicy_spec s;
    assert_int_equal(decode("{\"compute\":{\"maxMilli\":300}}", &s, NULL), FG_OK);
    assert_int_equal(s.compute.max, 300);
    assert_int_equal(s.compute.percentile, 95);
    assert_int_equal(s.memory.max, 81920);
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_invalid("{\"compute\":{\"percentile\":\"high\"}}", "spec.compute.percentile: must be an integer");
    expect_invalid("{\"compute\":{\"percentile\":95.5}}", "spec.compute.percentile");
    expect_invalid("{\"compute\":{\"percentile\":true}}", "spec.compute.percentile");
    expect_invalid("{\"compute\":{\"percentile\":null}}", "spec.compute.percentile: must not be null");
    expect_invalid("{\"sharing\":3}", "spec.sharing: must be one of");
    expect_invalid("{\"sharing\":\"MPS\"}", "\"timeslice\", \"mps\", \"exclusive\"");
    expect_invalid("{\"updateMode\":\"auto\"}", "spec.updateMode");
    expect_invalid("{\"compute\":[1,2]}", "spec.compute: must be an object");
    expect_invalid("{\"memory\":\"lots\"}", "spec.memory: must be an object");
    expect_invalid("{\"historyWindow\":168}", "spec.historyWindow: must be a duration string");
    expect_invalid("[]", "spec: must be an object");
    expect_invalid("\"spec\"", "spec: must be an object");
}

static void test_bounds_and_huge_numbers(void **state)
{
    (void)state;
    expect_invalid("{\"compute\":{\"percentile\":0}}", "between 1 and 100, got 0");
    expect_invalid("{\"compute\":{\"percentile\":101}}", "between 1 and 100");
    expect_invalid("{\"compute\":{\"maxMilli\":1001}}", "spec.compute.maxMilli");
    expect_invalid("{\"compute\":{\"minMilli\":-1}}", "spec.compute.minMilli");
    expect_invalid("{\"memory\":{\"maxMiB\":99999999999999999999999}}", "spec.memory.maxMiB");
    expect_invalid("{\"memory\":{\"maxMiB\":-99999999999999999999999}}", "spec.memory.maxMiB");
    expect_invalid("{\"memory\":{\"minMiB\":1e300}}", "spec.memory.minMiB");
    expect_invalid("{\"priority\":9223372036854775807}", "spec.priority");
    expect_invalid("{\"changeThresholdPercent\":1e2000}", "spec.changeThresholdPercent");
    /* An integral double within bounds is an integer (JSON does not distinguish 5 and 5.0). */
    struct fg_gpupolicy_spec s;
    assert_int_equal(decode("{\"compute\":{\"headroomPercent\":5.0}}", &s, NULL), FG_OK);
    assert_int_equal(s.compute.headroom_percent, 5);
}

static void test_unknown_fields(void **state)
{
    (void)state;
    expect_invalid("{\"windw\":\"1h\"}", "spec.windw: unknown field");
    expect_invalid("{\"compute\":{\"percentil\":90}}", "spec.compute.percentil: unknown field");
    expect_invalid("{\"memory\":{\"minMilli\":90}}", "spec.memory.minMilli: unknown field");
    /* An absurdly long key is cut in the message, not overflowing it. */
    char key[3001], big[3100];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    snprintf(big, sizeof big, "{\"%s\":1}", key);
    expect_invalid(big, "unknown field");
}

static void test_duration_fields(void **state)
{
    (void)state;
    expect_invalid("{\"minHistory\":\"3d\"}", "spec.minHistory: duration \"3d\": unit must be");
}

static void expect_rule(const char *text, const char *want_reason, const char *needle)
{
    struct fg_gpupolicy_spec s;
    assert_int_equal(decode(text, &s, NULL), FG_OK);
    const char *reason = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_gpupolicy_validate(&s, &reason, msg), FG_E_INVAL);
    assert_non_null(reason);
    assert_string_equal(reason, want_reason);
    if (!strstr(msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
}

static void test_cross_field_rules(void **state)
{
    (void)state;
    expect_rule("{\"compute\":{\"minMilli\":900,\"maxMilli\":100}}", "ComputeMinAboveMax",
                "spec.compute.minMilli (900) is above spec.compute.maxMilli (100)");
    expect_rule("{\"memory\":{\"minMiB\":2048,\"maxMiB\":1024}}", "MemoryMinAboveMax", "spec.memory.minMiB (2048)");
    expect_rule("{\"historyWindow\":\"2h\",\"minHistory\":\"3h\",\"cooldown\":\"1h\"}",
                "WindowShorterThanMinHistory", "spec.historyWindow (2h) is shorter than spec.minHistory (3h)");
    expect_rule("{\"historyWindow\":\"0s\",\"minHistory\":\"0s\",\"cooldown\":\"0s\"}", "EmptyHistoryWindow",
                "spec.historyWindow");
    expect_rule("{\"historyWindow\":\"2161h\"}", "HistoryWindowTooLong", "2161h");
    expect_rule("{\"historyWindow\":\"24h\",\"cooldown\":\"25h\"}", "CooldownLongerThanWindow", "spec.cooldown (25h)");
    expect_rule("{\"sharing\":\"exclusive\"}", "ExclusiveNeedsDedicated", "set isolation to dedicated");
    /* Equal bounds and a window equal to minHistory are fine. */
    struct fg_gpupolicy_spec s;
    const char *reason = NULL;
    assert_int_equal(decode("{\"compute\":{\"minMilli\":500,\"maxMilli\":500},\"historyWindow\":\"24h\","
                            "\"minHistory\":\"24h\",\"sharing\":\"exclusive\",\"isolation\":\"dedicated\"}",
                            &s, NULL),
                     FG_OK);
    assert_int_equal(fg_gpupolicy_validate(&s, &reason, NULL), FG_OK);
}

static void test_encode_roundtrip_and_digest(void **state)
{
    (void)state;
    struct fg_gpupolicy_spec s, back;
    assert_int_equal(decode("{\"sharing\":\"mps\",\"historyWindow\":\"1h30m\",\"compute\":{\"maxMilli\":250}}", &s,
                            NULL),
                     FG_OK);
    json_object *enc = fg_gpupolicy_encode(&s);
    assert_string_equal(fg_json_get_str(enc, "historyWindow", NULL), "1h30m");
    assert_string_equal(fg_json_get_str(enc, "sharing", NULL), "mps");
    int64_t v = 0;
    assert_true(fg_json_get_int64(enc, &v, "compute", "maxMilli", NULL));
    assert_int_equal(v, 250);
    assert_int_equal(fg_gpupolicy_decode(enc, &back, NULL), FG_OK);
    assert_spec_equal(&s, &back);
    json_object_put(enc);

    char d1[17], d2[17];
    fg_gpupolicy_digest(&s, d1);
    fg_gpupolicy_digest(&back, d2);
    assert_string_equal(d1, d2);
    assert_int_equal(strlen(d1), 16);
    back.compute.max = 251;
    fg_gpupolicy_digest(&back, d2);
    assert_string_not_equal(d1, d2);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(fg_workload_class_name(FG_CLASS_BUILD), "build");
    assert_string_equal(fg_sharing_name(FG_SHARING_EXCLUSIVE), "exclusive");
    assert_string_equal(fg_isolation_name(FG_ISOLATION_DEDICATED), "dedicated");
    assert_string_equal(fg_update_mode_name(FG_UPDATE_OFF), "Off");
    assert_null(fg_sharing_name((enum fg_sharing)7));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_spec_gets_defaults),
        cmocka_unit_test(test_full_spec),
        cmocka_unit_test(test_partial_nested_keeps_other_defaults),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_bounds_and_huge_numbers),
        cmocka_unit_test(test_unknown_fields),
        cmocka_unit_test(test_duration_fields),
        cmocka_unit_test(test_cross_field_rules),
        cmocka_unit_test(test_encode_roundtrip_and_digest),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
