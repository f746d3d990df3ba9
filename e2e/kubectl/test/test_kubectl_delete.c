/*
 * The real kubectl against the test API server: graceful deletion of a pod.
 *
 * A pod bound to a node (through pods/binding, as a scheduler binds it) and deleted with
 * `--grace-period=5 --wait=false` stays, shown as Terminating by `kubectl get` with its
 * deletionGracePeriodSeconds of 5, until a DELETE with grace 0 (`--grace-period=0 --force`, what the
 * kubelet sends when the containers have stopped) removes it.
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

static void test_graceful_pod_delete(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    free(out);
    assert_int_equal(kc_run(env, &out, "create --raw /api/v1/namespaces/default/pods/web/binding -f - < %s",
                            kc_testdata("binding.json")), 0);
    free(out);

    assert_int_equal(kc_run(env, &out, "delete pod web --grace-period=5 --wait=false"), 0);
    assert_contains(out, "pod \"web\" deleted");
    free(out);
    assert_int_equal(kc_run(env, &out, "get pods"), 0);
    assert_contains(out, "NAME   READY   STATUS        RESTARTS   AGE");
    assert_contains(out, "web    0/1     Terminating   0");
    free(out);
    assert_int_equal(kc_run(env, &out, "get pod web -o jsonpath='{.metadata.deletionGracePeriodSeconds}'"), 0);
    assert_string_equal(out, "5");
    free(out);
    /* a longer grace period does not extend it */
    assert_int_equal(kc_run(env, &out, "delete pod web --grace-period=60 --wait=false"), 0);
    free(out);
    assert_int_equal(kc_run(env, &out, "get pod web -o jsonpath='{.metadata.deletionGracePeriodSeconds}'"), 0);
    assert_string_equal(out, "5");
    free(out);

    /* the final DELETE with grace 0 */
    assert_int_equal(kc_run(env, &out, "delete pod web --grace-period=0 --force"), 0);
    assert_contains(out, "pod \"web\" force deleted");
    free(out);
    assert_int_not_equal(kc_run(env, &out, "get pod web"), 0);
    assert_contains(out, "pods \"web\" not found");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_graceful_pod_delete, kc_setup, kc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
