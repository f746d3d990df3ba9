/*
 * The real kubectl over HTTPS with a bearer token, as the operator's TLS and token paths meet a real
 * kube-apiserver: the server's generated certificate (SAN IP:127.0.0.1) is trusted through the
 * kubeconfig's certificate-authority-data, every request carries the token, and a wrong or missing
 * token is refused with 401, which kubectl reports as "You must be logged in to the server". The
 * CRD flow (apply, Established, apply twice, printer columns, invalid resource) runs unchanged.
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

static void test_crd_flow_over_https(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    assert_true(!strncmp(env->base_url, "https://", 8));
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("crd.yaml")), 0);
    assert_contains(out, "gadgets.e2e.fracgpu.io created");
    free(out);
    assert_int_equal(kc_run(env, &out, "wait --for=condition=Established crd/gadgets.e2e.fracgpu.io --timeout=10s"), 0);
    free(out);
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("gadgets.yaml")), 0);
    assert_contains(out, "gadget.e2e.fracgpu.io/beta created");
    free(out);
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("gadgets.yaml")), 0);
    assert_contains(out, "gadget.e2e.fracgpu.io/beta unchanged");
    free(out);
    assert_int_equal(kc_run(env, &out, "get gadgets"), 0);
    assert_contains(out, "beta    large   7");
    free(out);
    assert_int_not_equal(kc_run(env, &out, "apply -f %s", kc_testdata("bad-gadget.yaml")), 0);
    assert_contains(out, "The Gadget \"bad\" is invalid: spec.size: Unsupported value: \"huge\"");
    free(out);
}

static void test_token_required(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    assert_int_not_equal(kc_run(env, &out, "get pods --token=wrong"), 0);
    assert_contains(out, "You must be logged in to the server");
    free(out);
    /* the certificate is what kubectl trusts: without the CA it refuses the server */
    assert_int_not_equal(kc_run(env, &out, "get pods --server=%s --certificate-authority=/dev/null",
                                env->base_url), 0);
    assert_contains(out, "certificate");
    free(out);
    /* with the CA as a file (not the kubeconfig's data) and the right token it works */
    assert_int_equal(kc_run(env, &out, "get namespaces --certificate-authority=%s", env->ca_file), 0);
    assert_contains(out, "kube-system");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crd_flow_over_https, kc_setup_tls, kc_teardown),
        cmocka_unit_test_setup_teardown(test_token_required, kc_setup_tls, kc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
