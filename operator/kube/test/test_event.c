/* Tests of the Event object built for an involved object. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "operator/kube/event.h"

static json_object *parse(const char *s)
{
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(s, strlen(s), 0, &o, NULL), FG_OK);
    return o;
}

static void test_namespaced(void **state)
{
    (void)state;
    json_object *pod = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1\",\"namespace\":\"ml\","
                             "\"uid\":\"u-1\",\"resourceVersion\":\"42\"}}");
    struct fg_kube_event ev = { "Warning", "FailedScheduling", "0/3 nodes are available", "default-scheduler", NULL };
    json_object *e = fg_kube_event_build(pod, &ev, 1767225600123ll);
    assert_string_equal(fg_json_get_str(e, "metadata", "namespace", NULL), "ml");
    assert_true(fg_str_has_prefix(fg_json_get_str(e, "metadata", "name", NULL), "web-1."));
    assert_string_equal(fg_json_get_str(e, "involvedObject", "kind", NULL), "Pod");
    assert_string_equal(fg_json_get_str(e, "involvedObject", "uid", NULL), "u-1");
    assert_string_equal(fg_json_get_str(e, "involvedObject", "resourceVersion", NULL), "42");
    assert_string_equal(fg_json_get_str(e, "type", NULL), "Warning");
    assert_string_equal(fg_json_get_str(e, "reason", NULL), "FailedScheduling");
    assert_string_equal(fg_json_get_str(e, "source", "component", NULL), "default-scheduler");
    assert_null(fg_json_get(e, "source", "host", NULL));
    assert_string_equal(fg_json_get_str(e, "lastTimestamp", NULL), "2026-01-01T00:00:00Z");
    int64_t count = 0;
    assert_true(fg_json_get_int64(e, &count, "count", NULL));
    assert_int_equal(count, 1);
    json_object_put(e);
    json_object_put(pod);
}

static void test_cluster_scoped(void **state)
{
    (void)state;
    json_object *node = parse("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\"}}");
    struct fg_kube_event ev = { NULL, "ScaleDown", "removing empty node", "cluster-autoscaler", "sim" };
    json_object *e = fg_kube_event_build(node, &ev, 0);
    assert_string_equal(fg_json_get_str(e, "metadata", "namespace", NULL), "default");
    assert_null(fg_json_get(e, "involvedObject", "namespace", NULL));
    assert_string_equal(fg_json_get_str(e, "type", NULL), "Normal");
    assert_string_equal(fg_json_get_str(e, "reportingInstance", NULL), "sim");
    json_object_put(e);
    json_object_put(node);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_namespaced), cmocka_unit_test(test_cluster_scoped) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
