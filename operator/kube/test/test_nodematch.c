/* Tests of node selectors, node affinity, taints and tolerations, as kube-scheduler filters them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "operator/kube/nodematch.h"

static json_object *parse(const char *s)
{
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX];
    if (fg_json_parse(s, strlen(s), 0, &o, msg) != FG_OK)
        fail_msg("%s: %s", s, msg);
    return o;
}

static const char *const node_text =
    "{\"metadata\":{\"name\":\"gpu-1\",\"labels\":{\"zone\":\"a\",\"gpus\":\"8\",\"nvidia.com/gpu.present\":\"true\"}},"
    "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"},"
    "{\"key\":\"spot\",\"value\":\"yes\",\"effect\":\"PreferNoSchedule\"}]}}";

static bool matches(const char *pod_spec)
{
    json_object *node = parse(node_text);
    char *text = NULL;
    assert_true(asprintf(&text, "{\"spec\":%s}", pod_spec) > 0);
    json_object *pod = parse(text);
    bool m = fg_node_matches_pod(pod, node);
    json_object_put(pod);
    json_object_put(node);
    free(text);
    return m;
}

static void test_selector_and_affinity(void **state)
{
    (void)state;
    assert_true(matches("{}"));
    assert_true(matches("{\"nodeSelector\":{\"zone\":\"a\"}}"));
    assert_false(matches("{\"nodeSelector\":{\"zone\":\"b\"}}"));
    assert_false(matches("{\"nodeSelector\":{\"missing\":\"\"}}"));
#define REQ(terms) "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":" terms "}}}}"
    assert_true(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\",\"a\"]}]}]")));
    assert_false(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}]")));
    assert_true(matches(REQ("[{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}]")));
    assert_true(matches(REQ("[{\"matchExpressions\":[{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"4\"]}]}]")));
    assert_false(matches(REQ("[{\"matchExpressions\":[{\"key\":\"gpus\",\"operator\":\"Lt\",\"values\":[\"4\"]}]}]")));
    assert_false(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Gt\",\"values\":[\"4\"]}]}]")));
    assert_true(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}]")));
    assert_false(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"DoesNotExist\"}]}]")));
    assert_false(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Near\",\"values\":[\"a\"]}]}]")));
    /* terms OR, requirements AND, an empty term nothing */
    assert_true(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\"]}]},"
                            "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"gpu-1\"]}]}]")));
    assert_false(matches(REQ("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}],"
                             "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"gpu-1\"]}]}]")));
    assert_false(matches(REQ("[{}]")));
    assert_false(matches(REQ("[]")));
    assert_false(matches("{\"nodeSelector\":{\"zone\":\"a\"}," "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                         "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\"]}]}]}}}}"));
}

static void test_preferred(void **state)
{
    (void)state;
    json_object *node = parse(node_text);
    json_object *pod = parse("{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
                             "{\"weight\":10,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]}},"
                             "{\"weight\":5,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\"]}]}},"
                             "{\"weight\":3,\"preference\":{\"matchExpressions\":[{\"key\":\"gpus\",\"operator\":\"Exists\"}]}}]}}}}");
    assert_int_equal(fg_node_preferred_affinity(pod, node), 13);
    json_object_put(pod);
    json_object_put(node);
}

static void test_taints(void **state)
{
    (void)state;
    json_object *node = parse(node_text);
    json_object *taints = fg_json_get(node, "spec", "taints", NULL);
    json_object *none = parse("[]");
    json_object *t = fg_untolerated_taint(taints, none, false);
    assert_non_null(t);
    assert_string_equal(fg_json_get_str(t, "key", NULL), "nvidia.com/gpu");
    assert_null(fg_untolerated_taint(taints, none, true));   /* no NoExecute taint */
    assert_int_equal(fg_untolerated_prefer_no_schedule(taints, none), 1);

    static const char *const tolerating[] = {
        "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]",
        "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]",
        "[{\"operator\":\"Exists\"}]",
        "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Equal\",\"value\":\"\"}]",
        "[{\"key\":\"nvidia.com/gpu\"}]",
    };
    for (size_t i = 0; i < sizeof tolerating / sizeof tolerating[0]; i++) {
        json_object *tol = parse(tolerating[i]);
        assert_null(fg_untolerated_taint(taints, tol, false));
        json_object_put(tol);
    }
    static const char *const not_tolerating[] = {
        "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]",
        "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Equal\",\"value\":\"x\"}]",
        "[{\"key\":\"other\",\"operator\":\"Exists\"}]",
        "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Sometimes\"}]",
    };
    for (size_t i = 0; i < sizeof not_tolerating / sizeof not_tolerating[0]; i++) {
        json_object *tol = parse(not_tolerating[i]);
        assert_non_null(fg_untolerated_taint(taints, tol, false));
        json_object_put(tol);
    }
    json_object *spot = parse("[{\"key\":\"spot\",\"operator\":\"Equal\",\"value\":\"yes\"}]");
    assert_int_equal(fg_untolerated_prefer_no_schedule(taints, spot), 0);
    json_object_put(spot);
    json_object_put(none);
    json_object_put(node);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selector_and_affinity),
        cmocka_unit_test(test_preferred),
        cmocka_unit_test(test_taints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
