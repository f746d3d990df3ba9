/* The REST descriptors of fracgpu's custom resources: the paths the client builds for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "reconcilers/resources.h"

static void expect_path(const struct fg_kube_resource *r, const char *ns, const char *name, const char *sub,
                        const char *want)
{
    char *path = fg_kube_path(r, ns, name, sub, NULL);
    assert_string_equal(path, want);
    free(path);
}

static void test_paths(void **state)
{
    (void)state;
    expect_path(&fg_crd_gpupolicies, NULL, "batch", "status", "/apis/fracgpu.io/v1alpha1/gpupolicies/batch/status");
    expect_path(&fg_crd_gpuworkloads, "ml", "deployment-llm", NULL,
                "/apis/fracgpu.io/v1alpha1/namespaces/ml/gpuworkloads/deployment-llm");
    expect_path(&fg_crd_gpuworkloads, NULL, NULL, NULL, "/apis/fracgpu.io/v1alpha1/gpuworkloads");
    assert_false(fg_crd_gpupolicies.namespaced);
    assert_true(fg_crd_gpuworkloads.namespaced);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
