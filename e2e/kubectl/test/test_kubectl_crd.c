/*
 * The real kubectl against the test API server: a CustomResourceDefinition from apply to delete.
 *
 * Covers what kubectl needs for custom resources: apply of a CRD and waiting for Established,
 * client-side apply of custom resources twice (created, then unchanged: the last-applied annotation
 * is kept byte for byte), server-side Tables with printer columns (-o wide adds the priority-1
 * column, -A adds NAMESPACE), -o yaml with defaults applied, -o jsonpath, explain from the served
 * OpenAPI v3, annotate, label, patch --subresource=status (generation unchanged), get -w seeing
 * ADDED/MODIFIED/DELETED, delete with wait, schema validation errors in kubectl's "is invalid" form,
 * and deleting the CRD deleting its resources.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/kubectl/test/kc.h"

#define CRD "gadgets.e2e.fracgpu.io"

static void assert_contains(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("expected \"%s\" in:\n%s", want, text);
}

/* Applies the CRD and the two gadgets, checking kubectl's words. */
static void apply_all(struct kc_env *env)
{
    char *out = NULL;
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("crd.yaml")), 0);
    assert_contains(out, "customresourcedefinition.apiextensions.k8s.io/" CRD " created");
    free(out);
    assert_int_equal(kc_run(env, &out, "wait --for=condition=Established crd/" CRD " --timeout=10s"), 0);
    assert_contains(out, "condition met");
    free(out);
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("gadgets.yaml")), 0);
    assert_contains(out, "gadget.e2e.fracgpu.io/alpha created");
    assert_contains(out, "gadget.e2e.fracgpu.io/beta created");
    free(out);
}

static void test_apply_twice_and_read(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    apply_all(env);
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("gadgets.yaml")), 0);
    assert_contains(out, "gadget.e2e.fracgpu.io/alpha unchanged");
    assert_contains(out, "gadget.e2e.fracgpu.io/beta unchanged");
    free(out);

    assert_int_equal(kc_run(env, &out, "get gadgets"), 0);
    assert_contains(out, "NAME    SIZE    COUNT   PHASE   AGE");
    assert_contains(out, "beta    large   7");
    assert_contains(out, "alpha   small   3"); /* count defaulted by the schema */
    if (strstr(out, "READY"))
        fail_msg("a priority-1 column shown without -o wide:\n%s", out);
    free(out);
    assert_int_equal(kc_run(env, &out, "get gdg -o wide"), 0); /* short name */
    assert_contains(out, "READY");
    free(out);
    assert_int_equal(kc_run(env, &out, "get gadgets -A"), 0);
    assert_contains(out, "NAMESPACE   NAME");
    assert_contains(out, "default     alpha");
    free(out);
    assert_int_equal(kc_run(env, &out, "get gadget alpha -o yaml"), 0);
    assert_contains(out, "count: 3");
    assert_contains(out, "kubectl.kubernetes.io/last-applied-configuration");
    assert_contains(out, "generation: 1");
    free(out);
    assert_int_equal(kc_run(env, &out, "get gadget beta -o jsonpath='{.spec.label}/{.spec.count}'"), 0);
    assert_string_equal(out, "shiny/7");
    free(out);
    assert_int_equal(kc_run(env, &out, "explain gadget.spec.size"), 0);
    assert_contains(out, "How big the gadget is.");
    assert_contains(out, "medium");
    free(out);
}

static void test_annotate_label_status_delete(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    apply_all(env);
    assert_int_equal(kc_run(env, &out, "annotate gadget alpha e2e.fracgpu.io/owner=team-a"), 0);
    assert_contains(out, "gadget.e2e.fracgpu.io/alpha annotated");
    free(out);
    assert_int_equal(kc_run(env, &out, "label gadget alpha tier=gold"), 0);
    assert_contains(out, "gadget.e2e.fracgpu.io/alpha labeled");
    free(out);
    assert_int_equal(kc_run(env, &out, "patch gadget alpha --subresource=status --type=merge "
                                       "-p '{\"status\":{\"phase\":\"Running\",\"conditions\":"
                                       "[{\"type\":\"Ready\",\"status\":\"True\"}]},\"spec\":{\"size\":\"large\"}}'"),
                     0);
    assert_contains(out, "gadget.e2e.fracgpu.io/alpha patched");
    free(out);
    /* the status endpoint changed only .status; metadata changes never bump the generation */
    assert_int_equal(kc_run(env, &out, "get gadget alpha -o jsonpath='{.metadata.annotations.e2e\\.fracgpu\\.io/owner}"
                                       " {.metadata.labels.tier} {.status.phase} {.spec.size} {.metadata.generation}'"),
                     0);
    assert_string_equal(out, "team-a gold Running small 1");
    free(out);
    assert_int_equal(kc_run(env, &out, "get gadgets -o wide -l tier=gold"), 0);
    assert_contains(out, "alpha   small   3       Running   True");
    free(out);
    /* wait --for=jsonpath reads the status just written */
    assert_int_equal(kc_run(env, &out, "wait --for=jsonpath='{.status.phase}'=Running gadget/alpha --timeout=10s"), 0);
    assert_contains(out, "condition met");
    free(out);

    assert_int_equal(kc_run(env, &out, "delete gadget alpha --wait=true --timeout=10s"), 0);
    assert_contains(out, "gadget.e2e.fracgpu.io \"alpha\" deleted");
    free(out);
    assert_int_equal(kc_run(env, &out, "wait --for=delete gadget/alpha --timeout=5s"), 0);
    free(out);
    assert_int_not_equal(kc_run(env, &out, "get gadget alpha"), 0);
    assert_contains(out, "NotFound");
    free(out);
}

static void test_watch(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    apply_all(env);
    struct kc_bg w;
    kc_start(env, &w, "get gadgets -w --output-watch-events --request-timeout=5s");
    char *header = kc_line(&w);
    assert_non_null(header);
    assert_contains(header, "EVENT");
    assert_contains(header, "SIZE");
    free(header);
    for (int i = 0; i < 2; i++) { /* the initial list */
        char *line = kc_line(&w);
        assert_non_null(line);
        assert_contains(line, "ADDED");
        free(line);
    }
    assert_int_equal(kc_run(env, NULL, "label gadget beta seen=yes"), 0);
    assert_int_equal(kc_run(env, NULL, "delete gadget beta"), 0);
    char *line = kc_line(&w);
    assert_non_null(line);
    assert_contains(line, "MODIFIED");
    assert_contains(line, "beta    large   7"); /* Table watch events carry the printer columns */
    free(line);
    line = kc_line(&w);
    assert_non_null(line);
    assert_contains(line, "DELETED");
    assert_contains(line, "beta");
    free(line);
    kc_finish(&w, &out);
    free(out);
}

static void test_invalid(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    apply_all(env);
    assert_int_not_equal(kc_run(env, &out, "apply -f %s", kc_testdata("bad-gadget.yaml")), 0);
    assert_contains(out, "The Gadget \"bad\" is invalid: spec.size: Unsupported value: \"huge\": supported values: "
                         "\"small\", \"medium\", \"large\"");
    free(out);
    assert_int_not_equal(kc_run(env, &out, "create -f %s", kc_testdata("bad-gadgets.yaml")), 0);
    assert_contains(out, "The Gadget \"worse\" is invalid:");
    assert_contains(out, "spec.size: Required value");
    assert_contains(out, "spec.count: Invalid value: 500: spec.count in body should be less than or equal to 100");
    assert_contains(out, "spec.label: Invalid value: \"UPPER\": spec.label in body should match '^[a-z]+$'");
    free(out);
    assert_int_not_equal(kc_run(env, &out, "patch gadget beta --type=merge -p '{\"spec\":{\"count\":\"many\"}}'"), 0);
    assert_contains(out, "spec.count: Invalid value: \"string\": spec.count in body must be of type integer");
    free(out);
    /* nothing invalid was stored */
    assert_int_equal(kc_run(env, &out, "get gadgets -o name"), 0);
    assert_string_equal(out, "gadget.e2e.fracgpu.io/alpha\ngadget.e2e.fracgpu.io/beta\n");
    free(out);
}

static void test_crd_delete_deletes_resources(void **state)
{
    struct kc_env *env = *state;
    char *out = NULL;
    apply_all(env);
    assert_int_equal(kc_run(env, &out, "delete crd " CRD " --timeout=10s"), 0);
    assert_contains(out, "deleted");
    free(out);
    /* kubectl may still know the type from its discovery cache; the server has forgotten it */
    assert_int_not_equal(kc_run(env, &out, "get gadgets"), 0);
    if (!strstr(out, "NotFound") && !strstr(out, "doesn't have a resource type"))
        fail_msg("gadgets still served after their CRD was deleted:\n%s", out);
    free(out);
    assert_int_equal(kc_run(env, &out, "apply -f %s", kc_testdata("crd.yaml")), 0);
    free(out);
    assert_int_equal(kc_run(env, &out, "get gadgets"), 0);
    assert_contains(out, "No resources found");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_apply_twice_and_read, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_annotate_label_status_delete, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_watch, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_invalid, kc_setup, kc_teardown),
        cmocka_unit_test_setup_teardown(test_crd_delete_deletes_resources, kc_setup, kc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
