/*
 * Built-in policies: every one valid, the ordering docs/policies.md promises, the objects written for them,
 * and the upgrade rule (only never-edited objects from older defaults are upgraded).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "crds/builtin.h"


/* Specs are equal when their canonical encodings are (the structs have padding). */
static void assert_spec_equal(const struct fg_gpupolicy_spec *a, const struct fg_gpupolicy_spec *b)
{
    json_object *ja = fg_gpupolicy_encode(a), *jb = fg_gpupolicy_encode(b);
    assert_string_equal(json_object_to_json_string(ja), json_object_to_json_string(jb));
    json_object_put(ja);
    json_object_put(jb);
}
static const struct fg_gpupolicy_spec *spec_of(const char *name)
{
    const struct fg_builtin_policy *b = fg_builtin_policy_find(name);
    assert_non_null(b);
    return &b->spec;
}

static void test_all_valid_and_findable(void **state)
{
    (void)state;
    assert_int_equal(fg_builtin_policies_count, 6);
    size_t always = 0;
    for (size_t i = 0; i < fg_builtin_policies_count; i++) {
        const struct fg_builtin_policy *b = &fg_builtin_policies[i];
        const char *reason = NULL;
        char msg[FG_ERRMSG_MAX] = "";
        if (fg_gpupolicy_validate(&b->spec, &reason, msg) != FG_OK)
            fail_msg("%s: %s", b->name, msg);
        assert_ptr_equal(fg_builtin_policy_find(b->name), b);
        always += b->always;
    }
    assert_int_equal(always, 4);
    assert_true(fg_builtin_policy_find("real-time")->always);
    assert_true(fg_builtin_policy_find("batch")->always);
    assert_false(fg_builtin_policy_find("training")->always);
    assert_false(fg_builtin_policy_find("build")->always);
    assert_null(fg_builtin_policy_find("nope"));
    assert_null(fg_builtin_policy_find(NULL));
}

static void test_design_ordering(void **state)
{
    (void)state;
    const struct fg_gpupolicy_spec *rt = spec_of("real-time"), *mps = spec_of("real-time-mps"),
                                    *nrt = spec_of("near-real-time"), *batch = spec_of("batch");
    /* real-time is the most conservative: highest percentile and headroom of all. */
    for (size_t i = 0; i < fg_builtin_policies_count; i++) {
        const struct fg_gpupolicy_spec *s = &fg_builtin_policies[i].spec;
        assert_true(rt->compute.percentile >= s->compute.percentile);
        assert_true(rt->compute.headroom_percent >= s->compute.headroom_percent);
        /* batch: the longest window and the least headroom. */
        assert_true(batch->history_window_ms >= s->history_window_ms);
        assert_true(batch->compute.headroom_percent <= s->compute.headroom_percent);
        assert_true(batch->memory.headroom_percent <= s->memory.headroom_percent);
    }
    assert_true(rt->history_window_ms > nrt->history_window_ms);
    assert_true(rt->compute.headroom_percent > nrt->compute.headroom_percent);
    assert_int_equal(mps->sharing, FG_SHARING_MPS);
    assert_int_equal(mps->isolation, FG_ISOLATION_DEDICATED);
    assert_int_equal(rt->sharing, FG_SHARING_TIMESLICE);
    assert_int_equal(spec_of("training")->workload_class, FG_CLASS_TRAINING);
    assert_int_equal(spec_of("build")->workload_class, FG_CLASS_BUILD);
    assert_int_equal(batch->workload_class, FG_CLASS_BATCH);
}

static void test_class_mapping(void **state)
{
    (void)state;
    assert_string_equal(fg_builtin_policy_for_class(FG_CLASS_INFERENCE), "real-time");
    assert_string_equal(fg_builtin_policy_for_class(FG_CLASS_TRAINING), "training");
    assert_string_equal(fg_builtin_policy_for_class(FG_CLASS_BATCH), "batch");
    assert_string_equal(fg_builtin_policy_for_class(FG_CLASS_BUILD), "build");
}

static void test_object(void **state)
{
    (void)state;
    const struct fg_builtin_policy *b = fg_builtin_policy_find("near-real-time");
    json_object *o = fg_builtin_policy_object(b);
    assert_string_equal(fg_json_get_str(o, "apiVersion", NULL), "fracgpu.io/v1alpha1");
    assert_string_equal(fg_json_get_str(o, "kind", NULL), "GPUPolicy");
    assert_string_equal(fg_json_get_str(o, "metadata", "name", NULL), "near-real-time");
    assert_string_equal(fg_json_get_str(o, "metadata", "labels", FG_LABEL_BUILTIN, NULL), "true");
    char version[16];
    snprintf(version, sizeof version, "%d", FG_BUILTIN_DEFAULTS_VERSION);
    assert_string_equal(fg_json_get_str(o, "metadata", "annotations", FG_ANN_DEFAULTS_VERSION, NULL), version);
    struct fg_gpupolicy_spec s;
    assert_int_equal(fg_gpupolicy_decode(fg_json_get(o, "spec", NULL), &s, NULL), FG_OK);
    assert_spec_equal(&s, &b->spec);
    /* Freshly written: current version, nothing to do. */
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_KEEP);
    json_object_put(o);
}

/* An object as an older release would have written it: version 0, digest of its own spec. */
static json_object *old_object(const char *name, int64_t window_ms)
{
    const struct fg_builtin_policy *b = fg_builtin_policy_find(name);
    struct fg_gpupolicy_spec old = b->spec;
    old.history_window_ms = window_ms;
    char digest[17];
    fg_gpupolicy_digest(&old, digest);
    json_object *o = fg_builtin_policy_object(b);
    json_object *ann = fg_json_get(o, "metadata", "annotations", NULL);
    fg_json_set_str(ann, FG_ANN_DEFAULTS_VERSION, "0");
    fg_json_set_str(ann, FG_ANN_DEFAULTS_DIGEST, digest);
    json_object_object_add(o, "spec", fg_gpupolicy_encode(&old));
    return o;
}

static void test_upgrade_rule(void **state)
{
    (void)state;
    /* Older defaults, untouched: upgrade. */
    json_object *o = old_object("batch", 100ll * 3600 * 1000);
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_UPGRADE);
    /* Key order does not count as an edit: the spec is compared decoded. */
    json_object *spec = fg_json_get(o, "spec", NULL);
    json_object_object_del(spec, "priority");
    json_object *p = json_object_new_object();
    json_object_object_foreach(spec, k, v) json_object_object_add(p, k, json_object_get(v));
    json_object_object_add(p, "priority", json_object_new_int(100));
    json_object_object_add(o, "spec", p);
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_UPGRADE);
    /* A user's edit: keep. */
    json_object_object_add(fg_json_get(o, "spec", "compute", NULL), "headroomPercent", json_object_new_int(50));
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_KEEP);
    json_object_put(o);

    /* An edit that no longer decodes: keep. */
    o = old_object("batch", 100ll * 3600 * 1000);
    json_object_object_add(fg_json_get(o, "spec", NULL), "sharing", json_object_new_string("bogus"));
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_KEEP);
    json_object_put(o);

    /* Not written by fracgpu (no annotations), or garbage in them: keep. */
    o = old_object("real-time", 100ll * 3600 * 1000);
    json_object_object_del(fg_json_get(o, "metadata", NULL), "annotations");
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_KEEP);
    json_object_put(o);
    o = old_object("real-time", 100ll * 3600 * 1000);
    fg_json_set_str(fg_json_get(o, "metadata", "annotations", NULL), FG_ANN_DEFAULTS_VERSION, "0x");
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_KEEP);
    json_object_put(o);
    /* From a newer release: keep. */
    o = old_object("real-time", 100ll * 3600 * 1000);
    fg_json_set_str(fg_json_get(o, "metadata", "annotations", NULL), FG_ANN_DEFAULTS_VERSION, "99");
    assert_int_equal(fg_builtin_policy_check(o), FG_BUILTIN_KEEP);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_valid_and_findable),
        cmocka_unit_test(test_design_ordering),
        cmocka_unit_test(test_class_mapping),
        cmocka_unit_test(test_object),
        cmocka_unit_test(test_upgrade_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
