/* Tests of what a simulated node gives out: GPU UUIDs in NVIDIA's form, the same for the same node
 * and index in every run and different otherwise; container IDs and fake PIDs; and every runtime's
 * cgroup file for every QoS class, read back by the exporter's own parser (exporter/cgroup.c, the
 * real consumer) to the pod UID and container ID it was made from. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "e2e/cluster/runtime.h"
#include "e2e/cluster/simids.h"
#include "exporter/cgroup.h"

/* GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lower-case hex. */
static bool nvidia_form(const char *u)
{
    if (strlen(u) != FG_SIM_GPU_UUID_LEN || strncmp(u, "GPU-", 4))
        return false;
    for (size_t i = 4; u[i]; i++) {
        bool dash = i == 12 || i == 17 || i == 22 || i == 27;
        if (dash ? u[i] != '-' : !(isdigit((unsigned char)u[i]) || (u[i] >= 'a' && u[i] <= 'f')))
            return false;
    }
    return true;
}

static bool starts(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

static void test_gpu_uuids(void **state)
{
    (void)state;
    char a[FG_SIM_GPU_UUID_LEN + 1], b[FG_SIM_GPU_UUID_LEN + 1];
    fg_sim_gpu_uuid("gpu-x7k2p", 0, a);
    assert_true(nvidia_form(a));
    fg_sim_gpu_uuid("gpu-x7k2p", 0, b);
    assert_string_equal(a, b);                 /* the same GPU in every run */
    assert_string_equal(a, "GPU-801fba27-04de-25e4-e969-42e9b9d0a7bd");   /* and in every build: SHA-256 of its names */
    char seen[64][FG_SIM_GPU_UUID_LEN + 1];
    size_t n = 0;
    static const char *const nodes[] = { "gpu-x7k2p", "gpu-x7k2q", "gpu-x7k2", "gpu-x7k2p1" };
    for (size_t i = 0; i < 4; i++) {
        for (unsigned g = 0; g < 16; g++) {
            fg_sim_gpu_uuid(nodes[i], g, seen[n]);
            assert_true(nvidia_form(seen[n]));
            for (size_t j = 0; j < n; j++)
                assert_string_not_equal(seen[j], seen[n]);
            n++;
        }
    }
}

static void test_containers(void **state)
{
    (void)state;
    const char *uid = "0e6a4a3c-2b1f-4c8e-9d7a-5b3e2f1a0c01";
    char id[FG_SIM_CONTAINER_ID_LEN + 1], again[FG_SIM_CONTAINER_ID_LEN + 1];
    fg_sim_container_id(uid, "main", 0, id);
    assert_int_equal(strlen(id), 64);
    assert_int_equal(strspn(id, "0123456789abcdef"), 64);
    fg_sim_container_id(uid, "main", 0, again);
    assert_string_equal(id, again);
    fg_sim_container_id(uid, "main", 1, again);    /* a restart is a new container */
    assert_string_not_equal(id, again);
    fg_sim_container_id(uid, "mai", 0, again);
    assert_string_not_equal(id, again);
    unsigned pid = fg_sim_container_pid(uid, "main", 0);
    assert_true(pid >= FG_SIM_PID_MIN && pid < FG_SIM_PID_MAX);
    assert_int_equal(pid, fg_sim_container_pid(uid, "main", 0));
    assert_int_not_equal(pid, fg_sim_container_pid(uid, "main", 1));
}

static void test_cgroups_read_back(void **state)
{
    (void)state;
    const char *uid = "0e6a4a3c-2b1f-4c8e-9d7a-5b3e2f1a0c01";
    char id[FG_SIM_CONTAINER_ID_LEN + 1], text[2048], msg[FG_ERRMSG_MAX];
    fg_sim_container_id(uid, "main", 2, id);
    static const char *const qos[] = { "Guaranteed", "Burstable", "BestEffort" };
    for (int rt = 0; rt < FG_SIM_RUNTIME_COUNT; rt++) {
        for (size_t q = 0; q < 3; q++) {
            size_t len = fg_sim_runtime_cgroup((enum fg_sim_runtime)rt, qos[q], uid, id, text, sizeof text);
            assert_int_equal(len, strlen(text));
            assert_true(len > 0 && text[len - 1] == '\n');
            struct fg_cgroup_ident got;
            if (fg_cgroup_parse(text, len, &got, msg) != FG_OK)
                fail_msg("runtime %d, %s: %s\n%s", rt, qos[q], msg, text);
            assert_string_equal(got.pod_uid, uid);
            assert_string_equal(got.container_id, id);
        }
    }
    /* the shapes themselves, as the kubelet and the runtimes write them */
    fg_sim_runtime_cgroup(FG_SIM_RUNTIME_CONTAINERD_SYSTEMD, "Burstable", uid, id, text, sizeof text);
    assert_true(starts(text, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                             "0e6a4a3c_2b1f_4c8e_9d7a_5b3e2f1a0c01.slice/cri-containerd-"));
    fg_sim_runtime_cgroup(FG_SIM_RUNTIME_CRIO_SYSTEMD, "Guaranteed", uid, id, text, sizeof text);
    assert_true(starts(text, "0::/kubepods.slice/kubepods-pod0e6a4a3c_2b1f_4c8e_9d7a_5b3e2f1a0c01.slice/crio-"));
    fg_sim_runtime_cgroup(FG_SIM_RUNTIME_CONTAINERD_CGROUPFS, "BestEffort", uid, id, text, sizeof text);
    assert_non_null(strstr(text, "10:memory:/kubepods/besteffort/pod0e6a4a3c-2b1f-4c8e-9d7a-5b3e2f1a0c01/"));
    assert_non_null(strstr(text, "\n0::/\n"));
    assert_string_equal(fg_sim_runtime_scheme(FG_SIM_RUNTIME_CRIO_SYSTEMD), "cri-o");
    assert_string_equal(fg_sim_runtime_scheme(FG_SIM_RUNTIME_CONTAINERD_CGROUPFS), "containerd");
    /* a node keeps its runtime; a fleet has all three */
    bool had[FG_SIM_RUNTIME_COUNT] = { false };
    for (int i = 0; i < 30; i++) {
        char node[32];
        snprintf(node, sizeof node, "gpu-%d", i);
        assert_int_equal(fg_sim_runtime_of(node), fg_sim_runtime_of(node));
        had[fg_sim_runtime_of(node)] = true;
    }
    for (int rt = 0; rt < FG_SIM_RUNTIME_COUNT; rt++)
        assert_true(had[rt]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_uuids),
        cmocka_unit_test(test_containers),
        cmocka_unit_test(test_cgroups_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
