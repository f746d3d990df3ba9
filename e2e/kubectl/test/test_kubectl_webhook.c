/*
 * The real kubectl against the test API server with admission webhooks the test serves over HTTPS.
 *
 * A MutatingWebhookConfiguration applied with kubectl (caBundle = the webhook's certificate,
 * rules on pods CREATE, a namespaceSelector and an objectSelector) makes the server call the
 * webhook: a mutating one adds a label to pods created in a selected namespace and leaves others
 * alone; one that sleeps past timeoutSeconds lets the pod through unchanged under failurePolicy
 * Ignore and refuses it with kubectl's usual InternalError message under Fail; a denial reaches
 * kubectl as "admission webhook ... denied the request".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/mem.h"
#include "e2e/kubectl/test/kc.h"
#include "e2e/kubectl/test/webhook_server.h"

struct ctx {
    struct kc_env *env;
    struct kcw_server wh;
};

static void assert_contains(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("expected \"%s\" in:\n%s", want, text);
}

static int setup_mode(void **state, enum kcw_mode mode)
{
    struct ctx *c = fg_calloc(1, sizeof(*c));
    void *env = NULL;
    if (kc_setup(&env)) {
        free(c);
        return -1;
    }
    c->env = env;
    if (!kcw_start(&c->wh, c->env->dir, mode)) {
        kcw_stop(&c->wh);
        kc_teardown(&env);
        free(c);
        return -1;
    }
    *state = c;
    return 0;
}

static int setup_mutate(void **state) { return setup_mode(state, KCW_MUTATE); }
static int setup_slow(void **state) { return setup_mode(state, KCW_SLOW); }
static int setup_deny(void **state) { return setup_mode(state, KCW_DENY); }

static int teardown(void **state)
{
    struct ctx *c = *state;
    void *env = c->env;
    kcw_stop(&c->wh);
    kc_teardown(&env);
    free(c);
    return 0;
}

/* Writes and applies a MutatingWebhookConfiguration for pods in namespaces labelled webhooks=on. */
static void apply_config(struct ctx *c, const char *name, const char *policy, int timeout_s)
{
    char *path = fg_asprintf("%s/webhook.json", c->env->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"MutatingWebhookConfiguration\","
               "\"metadata\":{\"name\":\"e2e\"},\"webhooks\":[{\"name\":\"%s\",\"admissionReviewVersions\":[\"v1\"],"
               "\"sideEffects\":\"None\",\"failurePolicy\":\"%s\",\"timeoutSeconds\":%d,"
               "\"clientConfig\":{\"url\":\"https://127.0.0.1:%u/mutate\",\"caBundle\":\"%s\"},"
               "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
               "\"resources\":[\"pods\"]}],"
               "\"namespaceSelector\":{\"matchLabels\":{\"webhooks\":\"on\"}},"
               "\"objectSelector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\"}]}}]}\n",
            name, policy, timeout_s, c->wh.port, c->wh.ca_b64);
    fclose(f);
    char *out = NULL;
    assert_int_equal(kc_run(c->env, &out, "apply -f %s", path), 0);
    assert_contains(out, "mutatingwebhookconfiguration.admissionregistration.k8s.io/e2e created");
    free(out);
    assert_int_equal(kc_run(c->env, &out, "label namespace default webhooks=on"), 0);
    free(out);
    free(path);
}

static void test_mutating_webhook(void **state)
{
    struct ctx *c = *state;
    char *out = NULL;
    apply_config(c, "mutate.e2e.fracgpu.io", "Fail", 5);
    assert_int_equal(kc_run(c->env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    assert_contains(out, "pod/web created");
    free(out);
    assert_int_equal(kcw_reviews(&c->wh), 1);
    assert_string_equal(c->wh.last_op, "CREATE");
    assert_string_equal(c->wh.last_kind, "Pod");
    assert_int_equal(kc_run(c->env, &out, "get pod web -o jsonpath='{.metadata.labels.mutated-by}'"), 0);
    assert_string_equal(out, "e2e-webhook");
    free(out);
    /* a second apply is unchanged: the mutation did not touch the last-applied annotation */
    assert_int_equal(kc_run(c->env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    assert_contains(out, "pod/web unchanged");
    free(out);
    /* kube-system is not selected by the namespaceSelector */
    assert_int_equal(kc_run(c->env, &out, "apply -n kube-system -f %s", kc_testdata("pod.yaml")), 0);
    free(out);
    assert_int_equal(kcw_reviews(&c->wh), 1);
    assert_int_equal(kc_run(c->env, &out, "get pod web -n kube-system -o jsonpath='{.metadata.labels}'"), 0);
    assert_string_equal(out, "{\"app\":\"web\"}");
    free(out);
}

static void test_timeout_ignore(void **state)
{
    struct ctx *c = *state;
    char *out = NULL;
    apply_config(c, "slow.e2e.fracgpu.io", "Ignore", 1);
    assert_int_equal(kc_run(c->env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    assert_contains(out, "pod/web created");
    free(out);
    assert_int_equal(kc_run(c->env, &out, "get pod web -o jsonpath='{.metadata.labels}'"), 0);
    assert_string_equal(out, "{\"app\":\"web\"}");
    free(out);
}

static void test_timeout_fail(void **state)
{
    struct ctx *c = *state;
    char *out = NULL;
    apply_config(c, "slow.e2e.fracgpu.io", "Fail", 1);
    assert_int_not_equal(kc_run(c->env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    assert_contains(out, "Error from server (InternalError)");
    assert_contains(out, "Internal error occurred: failed calling webhook \"slow.e2e.fracgpu.io\"");
    assert_contains(out, "context deadline exceeded");
    free(out);
    assert_int_not_equal(kc_run(c->env, &out, "get pod web"), 0);
    assert_contains(out, "NotFound");
    free(out);
}

static void test_denied(void **state)
{
    struct ctx *c = *state;
    char *out = NULL;
    apply_config(c, "deny.e2e.fracgpu.io", "Fail", 5);
    assert_int_not_equal(kc_run(c->env, &out, "apply -f %s", kc_testdata("pod.yaml")), 0);
    assert_contains(out, "admission webhook \"deny.e2e.fracgpu.io\" denied the request: no pods today");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mutating_webhook, setup_mutate, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_ignore, setup_slow, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_fail, setup_slow, teardown),
        cmocka_unit_test_setup_teardown(test_denied, setup_deny, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
