/*
 * The real kubectl against the test API server: built-in kinds.
 *
 * Covers apply of a Pod with kubectl's default strict validation (which needs the served OpenAPI v3
 * to declare fieldValidation on the Pod's PATCH operation), a new pod's Pending phase, the pod
 * Table (READY, STATUS, RESTARTS, AGE; -o wide adds IP and NODE), `wait --for=condition=Ready`
 * released by a status the test writes through pods/status, strategic-merge apply of a changed
 * manifest (a Deployment's env merged by name: configured, generation 2), and the node, namespace,
 * deployment and event Tables, and `create --raw` with a chunked body from stdin.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/kubectl/test/kc.h"

static void assert_contains(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("expected \"%s\" in:\n%s", want, text);
}

static void test_pod_wait_ready(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    assert_contains(out, "pod/web created");
    free(out);
    assert_int_equal(kc_run(env, &out, "get pods"), 0);
    assert_contains(out, "NAME   READY   STATUS    RESTARTS   AGE");
    assert_contains(out, "web    0/1     Pending   0");
    free(out);

    struct kc_bg wait;
    kc_start(env, &wait, "wait --for=condition=Ready pod/web --timeout=20s");
    assert_int_equal(kc_run(env, &out, "patch pod web --subresource=status --type=merge --patch-file=%s",
                            kc_testdata("pod-ready.json")), 0);
    assert_contains(out, "pod/web patched");
    free(out);
    assert_int_equal(kc_finish(&wait, &out), 0);
    assert_contains(out, "pod/web condition met");
    free(out);

    assert_int_equal(kc_run(env, &out, "get pods -o wide"), 0);
    assert_contains(out, "IP");
    assert_contains(out, "NODE");
    assert_contains(out, "web    1/1     Running   2");
    assert_contains(out, "10.0.0.7");
    free(out);
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    assert_contains(out, "pod/web unchanged");
    free(out);
}

static void test_nodes_and_namespaces(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    assert_int_equal(kc_run(env, &out, "get namespaces"), 0);
    assert_contains(out, "NAME              STATUS   AGE");
    assert_contains(out, "kube-node-lease   Active");
    assert_contains(out, "kube-system       Active");
    free(out);
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("node.yaml")), 0);
    assert_contains(out, "node/gpu-1 created");
    free(out);
    assert_int_equal(kc_run(env, &out, "get nodes"), 0);
    assert_contains(out, "NAME    STATUS     ROLES    AGE");
    assert_contains(out, "gpu-1   NotReady   worker");
    free(out);
    assert_int_equal(kc_run(env, &out, "get no gpu-1 -o "
                                       "jsonpath='{.metadata.labels.node-role\\.kubernetes\\.io/worker}'"), 0);
    assert_string_equal(out, "true");
    free(out);
}

static void test_deployments_and_events(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("deployment.yaml")), 0);
    assert_contains(out, "deployment.apps/llm created");
    free(out);
    /* a changed env value: a strategic merge patch, merging env by name */
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("deployment-v2.yaml")), 0);
    assert_contains(out, "deployment.apps/llm configured");
    free(out);
    assert_int_equal(kc_run(env, &out, "get deploy llm -o jsonpath='{.metadata.generation} "
                                       "{.spec.template.spec.containers[0].env[*].value}'"), 0);
    assert_string_equal(out, "2 slow yes");
    free(out);
    assert_int_equal(kc_run(env, &out, "get deployments -o wide"), 0);
    assert_contains(out, "NAME   READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS   IMAGES");
    assert_contains(out, "llm    0/2");
    assert_contains(out, "main         registry.example/llm:1");
    free(out);
    assert_int_equal(kc_run(env, &out, "create -f %s", kc_testdata("event.json")), 0);
    free(out);
    assert_int_equal(kc_run(env, &out, "get events"), 0);
    assert_contains(out, "LAST SEEN   TYPE     REASON      OBJECT    MESSAGE");
    assert_contains(out, "Normal   Scheduled   pod/web   assigned to gpu-1");
    free(out);
}

/* create --raw from stdin sends a chunked body */
static void test_create_raw(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    assert_int_equal(kc_run(env, &out, "create --raw /api/v1/namespaces/default/configmaps -f - < %s",
                            kc_testdata("configmap.json")), 0);
    assert_contains(out, "\"name\":\"raw\"");
    assert_contains(out, "\"resourceVersion\"");
    free(out);
    assert_int_equal(kc_run(env, &out, "get configmap raw -o jsonpath='{.data.model}'"), 0);
    assert_string_equal(out, "llama");
    free(out);
    assert_int_equal(kc_run(env, &out, "get configmaps"), 0);
    assert_contains(out, "NAME   AGE");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pod_wait_ready, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_nodes_and_namespaces, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_deployments_and_events, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_create_raw, kc_setup, kc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
