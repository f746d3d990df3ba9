/*
 * test_units — the holder's pieces one at a time, against the fake NVML: the MPS path scheme; the
 * pod's asks and the report patch; the thread percentage; finding the one GPU (its memory with the
 * driver's reservation from v2 or v1, no GPU, two GPUs named, a driver that is not loaded); taking
 * and giving back the compute mode (the record that survives a crash, a refusal that changes nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "exporter/test/fake_state.h"
#include "nodeagent/holder/compute_mode.h"
#include "nodeagent/holder/gpu.h"
#include "nodeagent/holder/mps.h"
#include "nodeagent/holder/mps_paths.h"
#include "nodeagent/holder/pod.h"

#define GIB "1073741824"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    fg_test_fake_dir(dir);
    unsetenv("FG_FAKE_NVML_VISIBLE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsetenv("FG_FAKE_NVML_VISIBLE");
    fg_test_fake_rm(dir);
    return 0;
}

static void test_mps_paths(void **state)
{
    (void)state;
    char p[64], msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_mps_dir("/run/fracgpu/mps", "GPU-1", "pipe", p, sizeof p, msg), FG_OK);
    assert_string_equal(p, "/run/fracgpu/mps/GPU-1/pipe");
    assert_int_equal(fg_mps_dir("/r", "GPU-1", "log", p, sizeof p, msg), FG_OK);
    assert_string_equal(p, "/r/GPU-1/log");
    assert_int_equal(fg_mps_dir("/r", "GPU-1", "shm", p, sizeof p, msg), FG_OK);
    assert_string_equal(p, "/r/GPU-1/shm");
    assert_int_equal(fg_mps_dir("/r", "GPU-1", NULL, p, sizeof p, msg), FG_OK);
    assert_string_equal(p, "/r/GPU-1");
    assert_int_equal(fg_mps_dir("/r", "GPU-1", FG_MPS_PREVIOUS_MODE, p, sizeof p, msg), FG_OK);
    assert_string_equal(p, "/r/GPU-1/previous-compute-mode");
    assert_int_equal(fg_mps_dir("/r", "../etc", "pipe", p, sizeof p, msg), FG_E_INVAL);
    assert_int_equal(fg_mps_dir("/r", "..", "pipe", p, sizeof p, msg), FG_E_INVAL);
    assert_int_equal(fg_mps_dir("/r", "", "pipe", p, sizeof p, msg), FG_E_INVAL);
    assert_int_equal(fg_mps_dir("", "GPU-1", "pipe", p, sizeof p, msg), FG_E_INVAL);
    assert_int_equal(fg_mps_dir("/r", "GPU-1", "sock", p, sizeof p, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "sock"));
    assert_int_equal(fg_mps_dir("/a-rather-long-root-directory/of/many/parts", "GPU-1", "pipe", p, 16, msg), FG_E_TOO_BIG);
}

static json_object *pod_with(const char *annotations)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"metadata\":{\"name\":\"c\",\"annotations\":{%s}}}", annotations);
    json_object *pod = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &pod, NULL), FG_OK);
    return pod;
}

static void test_pod_want(void **state)
{
    (void)state;
    struct fg_holder_want w;
    char msg[FG_ERRMSG_MAX] = "";
    json_object *pod = pod_with("");
    assert_int_equal(fg_holder_pod_want(pod, &w, msg), FG_OK);
    assert_false(w.mps);
    json_object_put(pod);
    pod = pod_with("\"fracgpu.io/sharing\":\"timeslice\",\"fracgpu.io/compute-milli\":\"250\"");
    assert_int_equal(fg_holder_pod_want(pod, &w, msg), FG_OK);
    assert_false(w.mps);
    json_object_put(pod);
    pod = pod_with("\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"250\",\"fracgpu.io/memory-mib\":\"8192\"");
    assert_int_equal(fg_holder_pod_want(pod, &w, msg), FG_OK);
    assert_true(w.mps);
    assert_int_equal(w.compute_milli, 250);
    assert_int_equal(w.memory_mib, 8192);
    json_object_put(pod);
    static const char *const bad[] = {
        "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/memory-mib\":\"8192\"",
        "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"0\",\"fracgpu.io/memory-mib\":\"8192\"",
        "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"1001\",\"fracgpu.io/memory-mib\":\"8192\"",
        "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"25%\",\"fracgpu.io/memory-mib\":\"8192\"",
        "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"250\",\"fracgpu.io/memory-mib\":\"8Gi\"",
        "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"250\",\"fracgpu.io/memory-mib\":\"0\"",
        "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"250\",\"fracgpu.io/memory-mib\":\"-5\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pod = pod_with(bad[i]);
        msg[0] = '\0';
        assert_int_equal(fg_holder_pod_want(pod, &w, msg), FG_E_INVAL);
        assert_non_null(strstr(msg, "fracgpu.io/"));
        json_object_put(pod);
    }
}

static void test_pod_report(void **state)
{
    (void)state;
    char *patch = fg_holder_pod_patch("GPU-1", 39960);
    assert_string_equal(patch, "{\"metadata\":{\"annotations\":{\"fracgpu.io/gpu-uuid\":\"GPU-1\","
                               "\"fracgpu.io/gpu-memory-mib\":\"39960\"}}}");
    free(patch);
    json_object *pod = pod_with("\"fracgpu.io/gpu-uuid\":\"GPU-1\",\"fracgpu.io/gpu-memory-mib\":\"39960\"");
    assert_true(fg_holder_pod_reported(pod, "GPU-1", 39960));
    assert_false(fg_holder_pod_reported(pod, "GPU-1", 39959));
    assert_false(fg_holder_pod_reported(pod, "GPU-2", 39960));
    json_object_put(pod);
    pod = pod_with("\"fracgpu.io/gpu-uuid\":\"GPU-1\"");
    assert_false(fg_holder_pod_reported(pod, "GPU-1", 39960));
    json_object_put(pod);
}

static void test_thread_percentage(void **state)
{
    (void)state;
    assert_int_equal(fg_mps_thread_percentage(1), 1);
    assert_int_equal(fg_mps_thread_percentage(9), 1);
    assert_int_equal(fg_mps_thread_percentage(10), 1);
    assert_int_equal(fg_mps_thread_percentage(255), 25);
    assert_int_equal(fg_mps_thread_percentage(1000), 100);
    assert_int_equal(fg_mps_thread_percentage(5000), 100);
}

static enum fg_err discover(const char *json, uint64_t overhead, struct fg_holder_gpu *gpu, char *msg)
{
    struct fg_nvml nv;
    fg_test_fake_state(dir, json);
    enum fg_err err = fg_nvml_open(FG_FAKE_NVML_PATH, &nv, msg);
    if (!err) {
        err = fg_holder_gpu_discover(&nv, overhead, gpu, msg);
        fg_nvml_close(&nv);
    }
    return err;
}

static void test_gpu(void **state)
{
    (void)state;
    struct fg_holder_gpu gpu;
    char msg[FG_ERRMSG_MAX] = "";
    /* v2: 40 GiB total, the driver keeps 600 MiB, a context 500 */
    assert_int_equal(discover("{\"gpus\":[{\"uuid\":\"GPU-a\",\"name\":\"NVIDIA A100-SXM4-40GB\",\"total\":42949672960,"
                              "\"reserved\":629145600,\"minor\":3}]}", 500, &gpu, msg), FG_OK);
    assert_string_equal(gpu.uuid, "GPU-a");
    assert_string_equal(gpu.name, "NVIDIA A100-SXM4-40GB");
    assert_int_equal(gpu.total_mib, 40960);
    assert_int_equal(gpu.reserved_mib, 600);
    assert_true(gpu.reserved_from_v2);
    assert_int_equal(gpu.usable_mib, 40960 - 600 - 500);
    assert_true(gpu.has_minor);
    assert_int_equal(gpu.minor, 3);
    /* no v2: v1's total - free stands in, which counts what is already used (the safe side) */
    assert_int_equal(discover("{\"gpus\":[{\"uuid\":\"GPU-b\",\"total\":42949672960,\"reserved\":629145600,"
                              "\"used\":104857600,\"memory_v2\":false}]}", 0, &gpu, msg), FG_OK);
    assert_false(gpu.reserved_from_v2);
    assert_int_equal(gpu.reserved_mib, 700);
    assert_int_equal(gpu.usable_mib, 40960 - 700);
    /* the container sees one of the node's GPUs */
    setenv("FG_FAKE_NVML_VISIBLE", "GPU-2", 1);
    assert_int_equal(discover("{\"gpus\":[{\"uuid\":\"GPU-1\",\"total\":" GIB "},{\"uuid\":\"GPU-2\",\"total\":" GIB "}]}",
                              0, &gpu, msg), FG_OK);
    assert_string_equal(gpu.uuid, "GPU-2");
    assert_int_equal(gpu.usable_mib, 1024);
    /* none */
    setenv("FG_FAKE_NVML_VISIBLE", "", 1);
    assert_int_equal(discover("{\"gpus\":[{\"uuid\":\"GPU-1\",\"total\":" GIB "}]}", 0, &gpu, msg), FG_E_NOT_FOUND_LOCAL);
    assert_non_null(strstr(msg, "NVML shows no GPU"));
    /* two, named */
    unsetenv("FG_FAKE_NVML_VISIBLE");
    assert_int_equal(discover("{\"gpus\":[{\"uuid\":\"GPU-1\",\"total\":" GIB "},{\"uuid\":\"GPU-2\",\"total\":" GIB "}]}",
                              0, &gpu, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "NVML shows 2 GPUs in this container (GPU-1, GPU-2)"));
    /* NVML failing */
    assert_int_equal(discover("{\"init\":\"driver_not_loaded\",\"gpus\":[]}", 0, &gpu, msg), FG_E_CONNECT);
    assert_non_null(strstr(msg, "Driver Not Loaded"));
    assert_int_equal(discover("{\"count_error\":\"unknown\",\"gpus\":[]}", 0, &gpu, msg), FG_E_IO);
    assert_non_null(strstr(msg, "nvmlDeviceGetCount_v2"));
    assert_int_equal(discover("{\"gpus\":[{\"uuid\":\"GPU-1\",\"error\":\"gpu_is_lost\"}]}", 0, &gpu, msg), FG_E_IO);
    assert_non_null(strstr(msg, "GPU is lost"));
    /* nothing left once the overhead is taken */
    assert_int_equal(discover("{\"gpus\":[{\"uuid\":\"GPU-1\",\"total\":" GIB "}]}", 1024, &gpu, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "nothing is left for tenants"));
}

static nvmlComputeMode_t mode_of(struct fg_nvml *nv, nvmlDevice_t dev)
{
    nvmlComputeMode_t m = NVML_COMPUTEMODE_COUNT;
    assert_int_equal(nv->get_compute_mode(dev, &m), NVML_SUCCESS);
    return m;
}

static void test_compute_mode(void **state)
{
    (void)state;
    fg_test_fake_state(dir, "{\"gpus\":[{\"uuid\":\"GPU-1\",\"total\":" GIB ",\"compute_mode\":\"prohibited\"},"
                            "{\"uuid\":\"GPU-2\",\"total\":" GIB ",\"set_compute_mode_error\":\"no_permission\"}]}");
    struct fg_nvml nv;
    char msg[FG_ERRMSG_MAX] = "", record[128];
    assert_int_equal(fg_nvml_open(FG_FAKE_NVML_PATH, &nv, msg), FG_OK);
    nvmlDevice_t d1, d2;
    assert_int_equal(nv.get_handle(0, &d1), NVML_SUCCESS);
    assert_int_equal(nv.get_handle(1, &d2), NVML_SUCCESS);
    snprintf(record, sizeof record, "%s/previous-compute-mode", dir);

    nvmlComputeMode_t prev = NVML_COMPUTEMODE_COUNT;
    assert_int_equal(fg_holder_mode_take(&nv, d1, record, &prev, msg), FG_OK);
    assert_int_equal(prev, NVML_COMPUTEMODE_PROHIBITED);
    assert_int_equal(mode_of(&nv, d1), NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
    struct fg_buf b = FG_BUF_INIT;
    assert_int_equal(fg_buf_read_file(&b, record, NULL), FG_OK);
    assert_string_equal(fg_buf_str(&b), "2 PROHIBITED\n");
    nvmlComputeMode_t rec = NVML_COMPUTEMODE_COUNT;
    assert_true(fg_holder_mode_recorded(record, &rec));
    assert_int_equal(rec, NVML_COMPUTEMODE_PROHIBITED);
    /* a holder that crashed and came back finds EXCLUSIVE_PROCESS, and still restores PROHIBITED */
    prev = NVML_COMPUTEMODE_COUNT;
    assert_int_equal(fg_holder_mode_take(&nv, d1, record, &prev, msg), FG_OK);
    assert_int_equal(prev, NVML_COMPUTEMODE_PROHIBITED);
    assert_int_equal(fg_holder_mode_restore(&nv, d1, record, prev, msg), FG_OK);
    assert_int_equal(mode_of(&nv, d1), NVML_COMPUTEMODE_PROHIBITED);
    assert_int_not_equal(access(record, F_OK), 0);
    assert_false(fg_holder_mode_recorded(record, &rec));

    /* refused: said clearly, the mode and the record untouched */
    msg[0] = '\0';
    assert_int_equal(fg_holder_mode_take(&nv, d2, record, &prev, msg), FG_E_IO);
    assert_non_null(strstr(msg, "nvmlDeviceSetComputeMode(EXCLUSIVE_PROCESS): Insufficient Permissions"));
    assert_non_null(strstr(msg, "privileged"));
    assert_int_equal(mode_of(&nv, d2), NVML_COMPUTEMODE_DEFAULT);
    assert_int_not_equal(access(record, F_OK), 0);
    /* a record that cannot be written: nothing changed either */
    char bad[128];
    snprintf(bad, sizeof bad, "%s/no-such-dir/previous-compute-mode", dir);
    assert_int_equal(fg_holder_mode_take(&nv, d1, bad, &prev, msg), FG_E_IO);
    assert_int_equal(mode_of(&nv, d1), NVML_COMPUTEMODE_PROHIBITED);
    fg_buf_cleanup(&b);
    fg_nvml_close(&nv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mps_paths),
        cmocka_unit_test(test_pod_want),
        cmocka_unit_test(test_pod_report),
        cmocka_unit_test(test_thread_percentage),
        cmocka_unit_test_setup_teardown(test_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_mode, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
