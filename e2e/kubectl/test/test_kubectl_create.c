/*
 * The real kubectl against the test API server: `kubectl create` generators, whose objects kubectl
 * sends as protobuf (application/vnd.kubernetes.protobuf), and what `kubectl get` then shows of them.
 *
 * Covers namespace, configmap --from-literal, secret generic --from-literal (data as base64), deployment
 * --image --replicas --port (selector, template labels, container image and port), job --image --
 * command (restartPolicy Never, the command), serviceaccount, priorityclass, quota, and the four rbac
 * kinds (rules, role references, subjects).
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

static void test_create_access_and_scheduling_kinds(void **state)
{
    struct kc_env *env = *state;
    run_ok(env, "create serviceaccount sa", "serviceaccount/sa created");
    get_equals(env, "serviceaccount sa", "{.kind} {.metadata.namespace}", "ServiceAccount default");

    run_ok(env, "create priorityclass high --value=1000 --description=urgent", "priorityclass.scheduling.k8s.io/high created");
    get_equals(env, "priorityclass high", "{.value} {.description}", "1000 urgent");

    run_ok(env, "create quota q --hard=pods=2,cpu=1", "resourcequota/q created");
    get_equals(env, "resourcequota q", "{.spec.hard.pods} {.spec.hard.cpu}", "2 1");

    run_ok(env, "create role r --verb=get --verb=list --resource=pods", "role.rbac.authorization.k8s.io/r created");
    get_equals(env, "role r", "{.rules[0].verbs[0]} {.rules[0].verbs[1]} {.rules[0].resources[0]}", "get list pods");

    run_ok(env, "create rolebinding rb --role=r --serviceaccount=default:sa",
           "rolebinding.rbac.authorization.k8s.io/rb created");
    get_equals(env, "rolebinding rb", "{.roleRef.kind} {.roleRef.name} {.subjects[0].kind} {.subjects[0].name}",
               "Role r ServiceAccount sa");

    run_ok(env, "create clusterrole cr --verb=list --resource=nodes", "clusterrole.rbac.authorization.k8s.io/cr created");
    get_equals(env, "clusterrole cr", "{.rules[0].verbs[0]} {.rules[0].resources[0]}", "list nodes");

    run_ok(env, "create clusterrolebinding crb --clusterrole=cr --user=u",
           "clusterrolebinding.rbac.authorization.k8s.io/crb created");
    get_equals(env, "clusterrolebinding crb", "{.roleRef.name} {.subjects[0].kind} {.subjects[0].name}", "cr User u");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_core_kinds, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_create_workloads, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_create_access_and_scheduling_kinds, kc_setup, kc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
