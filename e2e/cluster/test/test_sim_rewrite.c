/* Tests of kube's variable expansion and the simulated cluster's mount path mapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/cluster/rewrite.h"

static const char *vars(void *ud, const char *name)
{
    (void)ud;
    if (!strcmp(name, "NODE_NAME"))
        return "gpu-1";
    if (!strcmp(name, "EMPTY"))
        return "";
    return NULL;
}

static void expect_expand(const char *in, const char *want)
{
    char *got = fg_sim_expand(in, vars, NULL);
    assert_string_equal(got, want);
    free(got);
}

static void test_expand(void **state)
{
    (void)state;
    expect_expand("--node-name=$(NODE_NAME)", "--node-name=gpu-1");
    expect_expand("$(NODE_NAME)-$(NODE_NAME)", "gpu-1-gpu-1");
    expect_expand("$$(NODE_NAME)", "$(NODE_NAME)");
    expect_expand("$(UNKNOWN) stays", "$(UNKNOWN) stays");
    expect_expand("a$(EMPTY)b", "ab");
    expect_expand("$(NODE_NAME", "$(NODE_NAME");
    expect_expand("$", "$");
    expect_expand("", "");
    expect_expand("cost: $5", "cost: $5");
}

static const struct fg_sim_mount mounts[] = {
    { "/host/proc", "/sim/nodes/n1/proc" },
    { "/var/lib/kubelet/", "/sim/nodes/n1/var/lib/kubelet" },
    { "/var/lib/kubelet/device-plugins", "/sim/nodes/n1/dp" },
    { "/", "/sim/root" },
};

static void expect_map(const char *in, const char *want)
{
    char *got = fg_sim_map_paths(mounts, sizeof mounts / sizeof mounts[0], in);
    assert_string_equal(got, want);
    free(got);
}

static void test_map(void **state)
{
    (void)state;
    expect_map("--proc-root=/host/proc", "--proc-root=/sim/nodes/n1/proc");
    expect_map("/host/proc/1/cgroup", "/sim/nodes/n1/proc/1/cgroup");
    expect_map("/var/lib/kubelet/device-plugins/kubelet.sock", "/sim/nodes/n1/dp/kubelet.sock");   /* longest wins */
    expect_map("/var/lib/kubelet/pods", "/sim/nodes/n1/var/lib/kubelet/pods");
    expect_map("a:/host/proc,/host/proc", "a:/sim/nodes/n1/proc,/sim/nodes/n1/proc");
    expect_map("/host/process", "/sim/root/host/process");   /* a word of its own, else the root mount */
    expect_map("x/host/proc", "x/host/proc");                /* not where a path starts */
    expect_map("operator", "operator");
    expect_map(":8080", ":8080");
    char *got = fg_sim_map_paths(NULL, 0, "/host/proc");
    assert_string_equal(got, "/host/proc");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_expand), cmocka_unit_test(test_map) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
