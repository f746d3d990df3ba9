/* Tests of the simulated cluster's configuration: defaults, a full file, the round trip through
 * JSON that hands it to the components, every kind of bad input refused with its field named, and
 * the command line's overrides (--nodes, the --gpu-* flags), bad values refused with the flag named
 * and the configuration left as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/yaml.h"
#include "e2e/cluster/config.h"

static json_object *yaml(const char *text)
{
    json_object *o = NULL;
    char msg[FG_ERRMSG_MAX];
    if (fg_yaml_parse(text, strlen(text), &o, msg) != FG_OK)
        fail_msg("%s", msg);
    return o;
}

static void test_defaults(void **state)
{
    (void)state;
    struct fg_sim_config c;
    fg_sim_config_default(&c);
    assert_int_equal(c.ngroups, 1);
    assert_string_equal(c.groups[0].name, "gpu");
    assert_int_equal(fg_resources_get(&c.groups[0].capacity, "nvidia.com/gpu"), 4000);
    assert_int_equal(c.groups[0].gpus, 4);
    assert_int_equal(c.kubelet.gpu_state, FG_SIM_GPU_STATE_FILES);
    assert_int_equal(c.usage.interval_ns, FG_NS_PER_S);
    assert_true(c.usage.time_scale == 60);
    assert_string_equal(fg_json_get_str(c.groups[0].labels, "nvidia.com/gpu.present", NULL), "true");
    assert_true(c.controllers && c.scheduler && c.kubelets && c.autoscaler);
    assert_true(fg_sim_config_is_fracgpu_image(&c, "ghcr.io/fracgpu/fracgpu:0.1.0"));
    assert_true(fg_sim_config_is_fracgpu_image(&c, "ghcr.io/fracgpu/fracgpu@sha256:abc"));
    assert_true(fg_sim_config_is_fracgpu_image(&c, "ghcr.io/fracgpu/fracgpu:0.1.0@sha256:abc"));
    assert_true(fg_sim_config_is_fracgpu_image(&c, "ghcr.io/fracgpu/fracgpu"));
    assert_false(fg_sim_config_is_fracgpu_image(&c, "ghcr.io/fracgpu/fracgpu-other:1"));
    assert_false(fg_sim_config_is_fracgpu_image(&c, "nginx"));
    assert_false(fg_sim_config_is_fracgpu_image(&c, NULL));
    fg_sim_config_cleanup(&c);
}

static const char *const full =
    "nodeGroups:\n"
    "  - name: gpu\n    minSize: 1\n    maxSize: 4\n    initialSize: 2\n"
    "    capacity: {cpu: \"8\", memory: 32Gi, pods: 110, nvidia.com/gpu: 4}\n"
    "    labels: {nvidia.com/gpu.present: \"true\"}\n"
    "    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
    "    gpu: {model: NVIDIA H100 80GB HBM3, memory: 80Gi, deviceListStrategy: cdi-cri}\n"
    "  - name: big\n    maxSize: 2\n    capacity: {cpu: 64, memory: 256Gi, pods: 110}\n"
    "  - name: plain-gpu\n    maxSize: 1\n    capacity: {cpu: 8, memory: 32Gi, pods: 110, nvidia.com/gpu: 2}\n"
    "autoscaler: {scanInterval: 500ms, scaleUpDelay: 1s, provisionDelay: 1s, scaleDownUnneeded: 5s,"
    " scaleDownDelayAfterAdd: 0s}\n"
    "kubelet: {podStartDelay: 500ms, jobDuration: 2s, crashLoopBackoff: 1s, gpuState: memory}\n"
    "usage: {interval: 250ms, timeScale: 600, traceDir: /data/gentd26}\n"
    "scheduler: {enabled: false}\n"
    "fracgpuImages: [example.com/fracgpu]\n"
    "clientQPS: 0\n";

static void test_full(void **state)
{
    (void)state;
    struct fg_sim_config c;
    fg_sim_config_default(&c);
    json_object *doc = yaml(full);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_sim_config_apply(&c, doc, msg) != FG_OK)
        fail_msg("%s", msg);
    json_object_put(doc);
    assert_int_equal(c.ngroups, 3);
    assert_int_equal(c.groups[0].initial_size, 2);
    assert_int_equal(c.groups[0].gpus, 4);
    assert_int_equal(c.groups[1].gpus, 0);
    assert_string_equal(c.groups[1].gpu_model, "");
    assert_int_equal(c.groups[2].gpus, 2);   /* GPUs without a gpu section: an A100 80GB */
    assert_string_equal(c.groups[2].gpu_model, "NVIDIA A100-SXM4-80GB");
    assert_int_equal(c.groups[2].gpu_memory_mib, 81920);
    assert_int_equal(c.kubelet.gpu_state, FG_SIM_GPU_STATE_MEMORY);
    assert_int_equal(c.usage.interval_ns, 250 * FG_NS_PER_MS);
    assert_true(c.usage.time_scale == 600);
    assert_string_equal(c.usage.trace_dir, "/data/gentd26");
    assert_int_equal(c.groups[1].initial_size, 0);   /* minSize when not given */
    assert_int_equal(c.groups[0].gpu_memory_mib, 81920);
    assert_string_equal(c.groups[0].gpu_model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(c.groups[0].device_list, FG_SIM_DEVICE_LIST_CDI);
    assert_int_equal(c.groups[2].device_list, FG_SIM_DEVICE_LIST_ENVVAR);   /* the default */
    assert_int_equal(json_object_array_length(c.groups[0].taints), 1);
    assert_int_equal(c.autoscale.scan_ns, 500 * FG_NS_PER_MS);
    assert_int_equal(c.autoscale.scale_down_delay_after_add_ns, 0);
    assert_int_equal(c.kubelet.pod_start_ns, 500 * FG_NS_PER_MS);
    assert_false(c.scheduler);
    assert_true(fg_sim_config_is_fracgpu_image(&c, "example.com/fracgpu:1"));
    assert_false(fg_sim_config_is_fracgpu_image(&c, "ghcr.io/fracgpu/fracgpu:1"));
    assert_non_null(fg_sim_config_group(&c, "big"));
    assert_null(fg_sim_config_group(&c, "small"));

    /* what the supervisor hands the components reads back the same */
    json_object *out = fg_sim_config_to_json(&c);
    struct fg_sim_config back;
    fg_sim_config_default(&back);
    assert_int_equal(fg_sim_config_apply(&back, out, msg), FG_OK);
    json_object *again = fg_sim_config_to_json(&back);
    assert_true(json_object_equal(out, again));
    for (size_t i = 0; i < c.ngroups; i++) {   /* every field, not only what both sides print */
        assert_int_equal(back.groups[i].device_list, c.groups[i].device_list);
        assert_int_equal(back.groups[i].gpu_memory_mib, c.groups[i].gpu_memory_mib);
        assert_string_equal(back.groups[i].gpu_model, c.groups[i].gpu_model);
    }
    json_object_put(again);
    json_object_put(out);
    fg_sim_config_cleanup(&back);
    fg_sim_config_cleanup(&c);
}

static void test_bad_input(void **state)
{
    (void)state;
    static const struct { const char *yaml, *says; } bad[] = {
        { "nodegroups: []\n", "config.nodegroups: unknown field" },
        { "nodeGroups: []\n", "nodeGroups: a list of 1 to" },
        { "nodeGroups: [{name: a}]\n", "nodeGroups[0].capacity" },
        { "nodeGroups: [{name: A, capacity: {cpu: 1, memory: 1Gi, pods: 1}}]\n", "nodeGroups[0].name" },
        { "nodeGroups: [{name: a, capacity: {cpu: lots, memory: 1Gi, pods: 1}}]\n", "nodeGroups[0].capacity: cpu" },
        { "nodeGroups: [{name: a, capacity: {cpu: 0, memory: 1Gi, pods: 1}}]\n", "must be positive" },
        { "nodeGroups: [{name: a, minSize: 3, maxSize: 2, capacity: {cpu: 1, memory: 1Gi, pods: 1}}]\n", "minSize <=" },
        { "nodeGroups: [{name: a, maxSize: -1, capacity: {cpu: 1, memory: 1Gi, pods: 1}}]\n", "nodeGroups[0].maxSize" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}}, {name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}}]\n",
          "is used twice" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, labels: {x: 1}}]\n", "labels.x" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, taints: [{key: k, effect: Sometimes}]}]\n",
          "taints[0]" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, taints: [{key: k, effect: NoSchedule, x: 1}]}]\n",
          "taints[0].x: unknown field" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, gpu: {memory: -1}}]\n", "gpu.memory" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, gpu: {deviceListStrategy: cdi}}]\n",
          "gpu.deviceListStrategy: envvar, volume-mounts or cdi-cri" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, gpu: {deviceListStrategy: [x]}}]\n",
          "gpu.deviceListStrategy" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1, nvidia.com/gpu: 17}}]\n",
          "nodeGroups[0].capacity.nvidia.com/gpu: a whole number of GPUs from 0 to 16" },
        { "nodeGroups: [{name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1, nvidia.com/gpu: 500m}}]\n",
          "capacity.nvidia.com/gpu" },
        { "kubelet: {gpuState: disk}\n", "kubelet.gpuState: files or memory" },
        { "usage: {interval: 0s}\n", "usage.interval: must be positive" },
        { "usage: {timeScale: 0}\n", "usage.timeScale" },
        { "usage: {timeScale: fast}\n", "usage.timeScale" },
        { "usage: {every: 1s}\n", "usage.every: unknown field" },
        { "kubelet: {leaseInterval: 10}\n", "kubelet.leaseInterval: a duration" },
        { "kubelet: {leaseInterval: 0s}\n", "must be positive" },
        { "kubelet: {crashLoopBackoff: 0s}\n", "must be positive" },
        { "autoscaler: {scanInterval: soon}\n", "autoscaler.scanInterval" },
        { "autoscaler: {enabled: yes}\n", "autoscaler.enabled: true or false" },
        { "fracgpuImages: example.com/x\n", "fracgpuImages" },
        { "clientQPS: -1\n", "clientQPS" },
        { "[1, 2]\n", "config: must be a mapping" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct fg_sim_config c;
        fg_sim_config_default(&c);
        json_object *doc = yaml(bad[i].yaml);
        char msg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_sim_config_apply(&c, doc, msg), FG_E_PARSE);
        if (!strstr(msg, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, msg, bad[i].says);
        assert_int_equal(c.ngroups, 1);   /* the defaults stay whole */
        assert_string_equal(c.groups[0].name, "gpu");
        json_object_put(doc);
        fg_sim_config_cleanup(&c);
    }
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/fg-sim-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, full, strlen(full)), (ssize_t)strlen(full));
    close(fd);
    struct fg_sim_config c;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_sim_config_load(&c, path, msg), FG_OK);
    assert_int_equal(c.ngroups, 3);
    fg_sim_config_cleanup(&c);
    FILE *f = fopen(path, "w");
    fputs("kubelet: {jobDuration: forever}\n", f);
    fclose(f);
    assert_int_equal(fg_sim_config_load(&c, path, msg), FG_E_PARSE);
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, "kubelet.jobDuration"));
    fg_sim_config_cleanup(&c);
    unlink(path);
    assert_int_equal(fg_sim_config_load(&c, path, msg), FG_E_IO);
    fg_sim_config_cleanup(&c);
}

/* The flags as the supervisor hands them over; each test case sets one or two. */
static void test_flags(void **state)
{
    (void)state;
    struct fg_sim_config c;
    fg_sim_config_default(&c);
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_sim_flags f = { .nodes = "3", .gpus_per_node = "8", .gpu_model = "NVIDIA H100 80GB HBM3",
                              .gpu_memory_gib = "80", .gpu_state = "memory" };
    if (fg_sim_config_override(&c, &f, msg) != FG_OK)
        fail_msg("%s", msg);
    const struct fg_sim_group *g = &c.groups[0];
    assert_int_equal(g->initial_size, 3);
    assert_true(g->min_size <= 3 && g->max_size >= 3);
    assert_int_equal(g->gpus, 8);
    assert_int_equal(fg_resources_get(&g->capacity, "nvidia.com/gpu"), 8000);
    assert_string_equal(g->gpu_model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(g->gpu_memory_mib, 80 * 1024);
    assert_int_equal(c.kubelet.gpu_state, FG_SIM_GPU_STATE_MEMORY);
    /* what the components read back is the same */
    json_object *out = fg_sim_config_to_json(&c);
    struct fg_sim_config back;
    fg_sim_config_default(&back);
    assert_int_equal(fg_sim_config_apply(&back, out, msg), FG_OK);
    assert_int_equal(back.groups[0].gpus, 8);
    assert_string_equal(back.groups[0].gpu_model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(back.kubelet.gpu_state, FG_SIM_GPU_STATE_MEMORY);
    json_object_put(out);
    fg_sim_config_cleanup(&back);

    /* no GPUs: the capacity and the label GPU feature discovery would set go */
    f = (struct fg_sim_flags){ .gpus_per_node = "0" };
    assert_int_equal(fg_sim_config_override(&c, &f, msg), FG_OK);
    assert_int_equal(c.groups[0].gpus, 0);
    assert_int_equal(fg_resources_get(&c.groups[0].capacity, "nvidia.com/gpu"), 0);
    assert_null(fg_json_get(c.groups[0].labels, "nvidia.com/gpu.present", NULL));
    fg_sim_config_cleanup(&c);

    static const struct { struct fg_sim_flags f; const char *says; } bad[] = {
        { { .nodes = "-1" }, "--nodes wants 0 to 100000, got \"-1\"" },
        { { .nodes = "2x" }, "--nodes wants" },
        { { .gpus_per_node = "17" }, "--gpus-per-node wants 0 to 16, got \"17\"" },
        { { .gpus_per_node = "" }, "--gpus-per-node wants" },
        { { .gpus_per_node = "four" }, "--gpus-per-node wants" },
        { { .gpu_memory_gib = "0" }, "--gpu-memory-gib wants a whole number of GiB from 1 to 4096, got \"0\"" },
        { { .gpu_memory_gib = "80Gi" }, "--gpu-memory-gib wants" },
        { { .gpu_model = "" }, "--gpu-model wants a name of 1 to 95 characters" },
        { { .gpu_model = "NVIDIA A100-SXM4-80GB NVIDIA A100-SXM4-80GB NVIDIA A100-SXM4-80GB NVIDIA A100-SXM4-80GB "
                         "NVIDIA A100" }, "--gpu-model wants" },
        { { .gpus_per_node = "0", .gpu_model = "NVIDIA L4" }, "which has none" },
        { { .gpu_state = "disk" }, "--gpu-state wants files or memory, got \"disk\"" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fg_sim_config_default(&c);
        msg[0] = '\0';
        assert_int_equal(fg_sim_config_override(&c, &bad[i].f, msg), FG_E_PARSE);
        if (!strstr(msg, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, msg, bad[i].says);
        /* left as it was */
        assert_int_equal(c.groups[0].gpus, 4);
        assert_int_equal(c.groups[0].initial_size, 1);
        assert_string_equal(c.groups[0].gpu_model, "NVIDIA A100-SXM4-80GB");
        assert_string_equal(fg_json_get_str(c.groups[0].labels, "nvidia.com/gpu.present", NULL), "true");
        assert_int_equal(c.kubelet.gpu_state, FG_SIM_GPU_STATE_FILES);
        fg_sim_config_cleanup(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
