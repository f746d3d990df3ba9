/* Tests for REST paths and query escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>

#include "operator/kube/resource.h"

static void check_path(const struct fg_kube_resource *r, const char *ns, const char *name, const char *sub,
                       const char *query, const char *want)
{
    char *p = fg_kube_path(r, ns, name, sub, query);
    assert_string_equal(p, want);
    free(p);
}

static void core_and_group_paths(void **state)
{
    (void)state;
    check_path(&fg_kube_pods, "ml", "llm-0", NULL, NULL, "/api/v1/namespaces/ml/pods/llm-0");
    check_path(&fg_kube_pods, "ml", "llm-0", "binding", NULL, "/api/v1/namespaces/ml/pods/llm-0/binding");
    check_path(&fg_kube_pods, NULL, NULL, NULL, "watch=true", "/api/v1/pods?watch=true");
    check_path(&fg_kube_nodes, "ignored", "n1", "status", NULL, "/api/v1/nodes/n1/status");
    check_path(&fg_kube_namespaces, NULL, "ml", NULL, NULL, "/api/v1/namespaces/ml");
    check_path(&fg_kube_leases, "kube-system", "fracgpu", NULL, NULL,
               "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/fracgpu");
    check_path(&fg_kube_deployments, "a", NULL, NULL, "", "/apis/apps/v1/namespaces/a/deployments");
    check_path(&fg_kube_statefulsets, "a", "s", "scale", NULL, "/apis/apps/v1/namespaces/a/statefulsets/s/scale");
    check_path(&fg_kube_jobs, "a", NULL, NULL, NULL, "/apis/batch/v1/namespaces/a/jobs");
    check_path(&fg_kube_cronjobs, NULL, NULL, NULL, NULL, "/apis/batch/v1/cronjobs");
    check_path(&fg_kube_poddisruptionbudgets, "a", "p", NULL, NULL,
               "/apis/policy/v1/namespaces/a/poddisruptionbudgets/p");
    check_path(&fg_kube_events, "a", NULL, NULL, NULL, "/api/v1/namespaces/a/events");
    check_path(&fg_kube_configmaps, "a", "c", NULL, NULL, "/api/v1/namespaces/a/configmaps/c");
    check_path(&fg_kube_secrets, "a", "s", NULL, NULL, "/api/v1/namespaces/a/secrets/s");
    check_path(&fg_kube_services, "a", "s", NULL, NULL, "/api/v1/namespaces/a/services/s");
    assert_string_equal(fg_kube_pods.kind, "Pod");
    assert_false(fg_kube_nodes.namespaced);
}

static void segments_are_escaped(void **state)
{
    (void)state;
    /* A name can never add a path segment or start a query. */
    check_path(&fg_kube_pods, "a/b", "x?y=1 z", NULL, NULL, "/api/v1/namespaces/a%2Fb/pods/x%3Fy%3D1%20z");
    check_path(&fg_kube_configmaps, "ns", "..", NULL, NULL, "/api/v1/namespaces/ns/configmaps/..");
}

static void query_values_are_escaped(void **state)
{
    (void)state;
    struct fg_buf q = FG_BUF_INIT;
    assert_int_equal(fg_kube_query_add(&q, "labelSelector", "app in (a,b),tier!=x"), FG_OK);
    assert_int_equal(fg_kube_query_add(&q, "fieldSelector", NULL), FG_OK);
    assert_int_equal(fg_kube_query_add(&q, "continue", "eyJ2Ijoi+/="), FG_OK);
    assert_int_equal(fg_kube_query_add(&q, "limit", "500"), FG_OK);
    assert_string_equal(q.data, "labelSelector=app%20in%20%28a%2Cb%29%2Ctier%21%3Dx&continue=eyJ2Ijoi%2B%2F%3D&limit=500");
    assert_int_equal(fg_kube_query_add(&q, "", "v"), FG_E_INVAL);
    fg_buf_cleanup(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(core_and_group_paths),
        cmocka_unit_test(segments_are_escaped),
        cmocka_unit_test(query_values_are_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
