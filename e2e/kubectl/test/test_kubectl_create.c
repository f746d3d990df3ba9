/*
 * The real kubectl against the test API server: `kubectl create` generators, whose objects kubectl
 * sends as protobuf (application/vnd.kubernetes.protobuf), and what `kubectl get` then shows of them.
 *
 * Covers namespace, configmap --from-literal, secret generic --from-literal (data as base64), deployment
 * --image --replicas --port (selector, template labels, container image and port) and job --image --
 * command (restartPolicy Never, the command). The kinds this server's registry serves decide the list;
 * the decoder also knows serviceaccounts, priorityclasses, resourcequotas and the rbac kinds.
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

/* Runs `kubectl ARGS`, asserts success and that the output holds want. */
static void run_ok(struct kc_env *env, const char *args, const char *want)
{
    char *out = NULL;
    int rc = kc_run(env, &out, "%s", args);
    if (rc)
        fail_msg("kubectl %s: exit %d:\n%s", args, rc, out);
    assert_contains(out, want);
    free(out);
}

/* `kubectl get ... -o jsonpath=PATH` equals want exactly. */
static void get_equals(struct kc_env *env, const char *what, const char *path, const char *want)
{
    char *out = NULL;
    int rc = kc_run(env, &out, "get %s -o jsonpath='%s'", what, path);
    if (rc || strcmp(out, want))
        fail_msg("kubectl get %s -o jsonpath='%s': exit %d, want \"%s\", got \"%s\"", what, path, rc, want, out);
    free(out);
}

static void test_create_core_kinds(void **state)
{
    struct kc_env *env = *state;
    /* The body goes as protobuf: -v=8 prints the request's headers. */
    run_ok(env, "create namespace team-b -v=8", "application/vnd.kubernetes.protobuf");
    get_equals(env, "namespace team-b", "{.kind} {.metadata.name}", "Namespace team-b");

    run_ok(env, "create configmap c --from-literal=a=b", "configmap/c created");
    get_equals(env, "configmap c", "{.data.a}", "b");

    run_ok(env, "create secret generic s --from-literal=k=v", "secret/s created");
    get_equals(env, "secret s", "{.data.k}", "dg=="); /* kubectl leaves .type to the server's defaulting */
}

static void test_create_workloads(void **state)
{
    struct kc_env *env = *state;
    run_ok(env, "create deployment web --image=nginx --replicas=3 --port=8080", "deployment.apps/web created");
    get_equals(env, "deployment web",
               "{.spec.replicas} {.spec.selector.matchLabels.app} {.spec.template.metadata.labels.app} "
               "{.spec.template.spec.containers[0].name} {.spec.template.spec.containers[0].image} "
               "{.spec.template.spec.containers[0].ports[0].containerPort}",
               "3 web web nginx nginx 8080");
    run_ok(env, "get deployments", "web");

    run_ok(env, "create job j --image=busybox -- echo hi", "job.batch/j created");
    get_equals(env, "job j",
               "{.spec.template.spec.restartPolicy} {.spec.template.spec.containers[0].image} "
               "{.spec.template.spec.containers[0].command[0]} {.spec.template.spec.containers[0].command[1]}",
               "Never busybox echo hi");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_core_kinds, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_create_workloads, kc_setup, kc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
