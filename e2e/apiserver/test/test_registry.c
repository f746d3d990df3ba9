/* Tests of the data-driven resource registry: the built-in table, run-time additions, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "e2e/apiserver/registry.h"

static void builtin_types(void **state)
{
    (void)state;
    struct fg__registry reg;
    assert_int_equal(fg__registry_init_builtin(&reg, NULL), FG_OK);
    static const char *const want[][4] = {
        { "", "v1", "pods", "Pod" }, { "", "v1", "namespaces", "Namespace" }, { "", "v1", "nodes", "Node" },
        { "", "v1", "events", "Event" }, { "", "v1", "configmaps", "ConfigMap" }, { "", "v1", "secrets", "Secret" },
        { "", "v1", "services", "Service" }, { "coordination.k8s.io", "v1", "leases", "Lease" },
        { "apps", "v1", "deployments", "Deployment" }, { "apps", "v1", "statefulsets", "StatefulSet" },
        { "batch", "v1", "jobs", "Job" }, { "batch", "v1", "cronjobs", "CronJob" },
        { "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget" },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        const struct fg__type *t = fg__registry_find(&reg, want[i][0], want[i][1], want[i][2]);
        if (!t)
            fail_msg("missing %s/%s/%s", want[i][0], want[i][1], want[i][2]);
        assert_string_equal(t->kind, want[i][3]);
        assert_true(fg__registry_definition(&reg, t->definition) != NULL);
    }
    const struct fg__type *pods = fg__registry_find(&reg, "", "v1", "pods");
    assert_true(pods->namespaced);
    assert_string_equal(pods->list_kind, "PodList");
    assert_string_equal(pods->resource, "v1/pods");
    assert_false(fg__registry_find(&reg, "", "v1", "nodes")->namespaced);
    assert_true(fg__type_has_subresource(pods, "status"));
    assert_true(fg__type_has_subresource(pods, "binding"));
    assert_false(fg__type_has_subresource(fg__registry_find(&reg, "", "v1", "configmaps"), "status"));
    assert_string_equal(json_object_get_string(json_object_array_get_idx(pods->short_names, 0)), "po");
    assert_string_equal(fg__registry_find(&reg, "apps", "v1", "deployments")->api_version, "apps/v1");
    assert_ptr_equal(fg__registry_find_resource(&reg, "batch/v1/jobs"), fg__registry_find(&reg, "batch", "v1", "jobs"));
    assert_null(fg__registry_find(&reg, "apps", "v1", "pods"));
    /* the strategic merge metadata is in the definitions, as OpenAPI writes it */
    json_object *containers = fg_json_get(fg__registry_definition(&reg, "#/definitions/io.k8s.api.core.v1.PodSpec"),
                                          "properties", "containers", NULL);
    assert_string_equal(fg_json_get_str(containers, "x-kubernetes-patch-merge-key", NULL), "name");
    fg__registry_cleanup(&reg);
}

static void runtime_additions(void **state)
{
    (void)state;
    struct fg__registry reg;
    assert_int_equal(fg__registry_init_builtin(&reg, NULL), FG_OK);
    size_t before = reg.n;
    const char *row = "{\"group\":\"fracgpu.io\",\"version\":\"v1alpha1\",\"plural\":\"gpupolicies\","
                      "\"kind\":\"GPUPolicy\",\"namespaced\":true}";
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(row, strlen(row), 0, &o, NULL), FG_OK);
    const struct fg__type *t = NULL;
    assert_int_equal(fg__registry_add(&reg, o, &t, NULL), FG_OK);
    assert_int_equal(t->index, before);
    assert_string_equal(t->list_kind, "GPUPolicyList");
    assert_string_equal(t->api_version, "fracgpu.io/v1alpha1");
    assert_ptr_equal(fg__registry_find(&reg, "fracgpu.io", "v1alpha1", "gpupolicies"), t);
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg__registry_add(&reg, o, NULL, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "already registered"));
    json_object_put(o);
    const char *bad = "{\"group\":\"x\",\"version\":\"v1\",\"plural\":\"things\",\"kind\":\"Thing\"}";
    assert_int_equal(fg_json_parse(bad, strlen(bad), 0, &o, NULL), FG_OK);
    assert_int_equal(fg__registry_add(&reg, o, NULL, msg), FG_E_INVAL);
    json_object_put(o);
    assert_int_equal(reg.n, before + 1);
    fg__registry_cleanup(&reg);
}

static void malformed_tables(void **state)
{
    (void)state;
    struct fg__registry reg;
    char msg[FG_ERRMSG_MAX];
    static const char *const bad[] = {
        "{", "[]", "{\"resources\":[]}", "{\"resources\":{},\"definitions\":{}}",
        "{\"resources\":[{\"plural\":\"x\"}],\"definitions\":{}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        enum fg_err err = fg__registry_init(&reg, bad[i], strlen(bad[i]), msg);
        if (err == FG_OK)
            fail_msg("accepted %s", bad[i]);
        assert_int_equal(reg.n, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builtin_types),
        cmocka_unit_test(runtime_additions),
        cmocka_unit_test(malformed_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
