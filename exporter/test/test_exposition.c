/*
 * test_exposition — the exposition the exporter serves: families with HELP and TYPE once, escaping,
 * no timestamps, a final newline, unknown values left out, DCGM aliases only when asked and then one
 * series per GPU (an idle GPU, a GPU of one pod, of one pod's two containers, of two pods, and MIG
 * instances), health metrics with no NVML at all, readiness and recovery once NVML appears, and
 * `promtool check metrics` on it.
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
#include "base/log.h"
#include "exporter/exporter.h"
#include "exporter/exposition.h"
#include "fake_state.h"

static char dir[64], proc_root[96];

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_OFF);
    fg_test_fake_dir(dir);
    snprintf(proc_root, sizeof proc_root, "%s/proc", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_test_fake_rm(dir);
    return 0;
}

static const char *const STATE =
    "{\"gpus\":[{\"uuid\":\"GPU-1\",\"name\":\"Weird \\\"model\\\" \\\\ with\\nnewline\",\"total\":1000,\"used\":300,"
    "\"reserved\":20,\"util\":42,\"procs\":[{\"pid\":50,\"used\":100},{\"pid\":51,\"used\":200}],"
    "\"samples\":[{\"pid\":50,\"ts\":10,\"sm\":30},{\"pid\":51,\"ts\":11,\"sm\":25}]},"
    "{\"uuid\":\"GPU-2\",\"name\":\"NVIDIA L4\",\"total\":1000,\"used\":0}]}";

static char *scrape_once(bool dcgm, const char *nvml_lib)
{
    struct fg_exporter_opts o = { .node = "node-\"a\"", .nvml_lib = nvml_lib, .proc_root = proc_root,
                                  .dcgm_aliases = dcgm };
    struct fg_exporter *e = fg_exporter_new(&o, NULL);
    fg_exporter_sample(e);
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_exporter_scrape(e, &b);
    fg_exporter_free(e);
    return fg_buf_take(&b);
}

/* Every "# HELP x" and "# TYPE x" appears once, and each family's samples are contiguous. */
static void check_structure(const char *text)
{
    assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
    char seen[64][96];
    size_t nseen = 0;
    char current[96] = "";
    const char *line = text;
    while (*line) {
        const char *nl = strchr(line, '\n');
        assert_non_null(nl);
        char l[2048];
        snprintf(l, sizeof l, "%.*s", (int)(nl - line), line);
        if (strncmp(l, "# TYPE ", 7) == 0) {
            char name[96];
            assert_int_equal(sscanf(l + 7, "%95s", name), 1);
            for (size_t i = 0; i < nseen; i++)
                if (strcmp(seen[i], name) == 0)
                    fail_msg("TYPE %s twice", name);
            snprintf(seen[nseen++], sizeof seen[0], "%s", name);
            snprintf(current, sizeof current, "%s", name);
        } else if (l[0] != '#') {
            size_t n = strcspn(l, "{ ");
            if (strlen(current) != n || strncmp(l, current, n) != 0)
                fail_msg("sample outside its family: %s", l);
            /* name{labels} value — no timestamp after the value */
            const char *close = strrchr(l, '}');
            const char *val = close ? close + 1 : l + n;
            assert_int_equal(*val, ' ');
            assert_null(strchr(val + 1, ' '));
        }
        line = nl + 1;
    }
}

/* promtool check metrics on text: clean, but for the one lint the DCGM aliases earn by keeping
 * dcgm-exporter's label names (modelName is camelCase). */
static void promtool(const char *text)
{
    if (access("/usr/bin/promtool", X_OK) != 0)
        skip();
    char path[128];
    snprintf(path, sizeof path, "%s/metrics.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s > %s/promtool.out 2>&1", path, dir);
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "grep -qv \"^DCGM_FI_DEV_[A-Z_]* label names should be written in 'snake_case' not "
                              "'camelCase'$\" %s/promtool.out", dir);
    if (rc != 0 && system(cmd) == 0) {
        snprintf(cmd, sizeof cmd, "cat %s/promtool.out >&2", dir);
        assert_int_equal(system(cmd), 0);
        fail_msg("promtool check metrics failed");
    }
}

static void test_exposition(void **state)
{
    (void)state;
    fg_test_fake_state(dir, STATE);
    fg_test_fake_cgroup(dir, 50, "0::/system.slice/some-daemon.service\n");
    fg_test_fake_cgroup(dir, 51, "0::/user.slice\n");
    char *text = scrape_once(false, FG_FAKE_NVML_PATH);
    check_structure(text);
    assert_non_null(strstr(text, "model=\"Weird \\\"model\\\" \\\\ with\\nnewline\""));
    assert_non_null(strstr(text, "node=\"node-\\\"a\\\"\""));
    assert_non_null(strstr(text, "fracgpu_gpu_memory_reserved_bytes{node=\"node-\\\"a\\\"\",gpu=\"0\",uuid=\"GPU-1\""));
    assert_non_null(strstr(text, "fracgpu_gpu_utilization_ratio{node=\"node-\\\"a\\\"\",gpu=\"0\""));
    assert_non_null(strstr(text, "duty cycle"));
    /* GPU-2 reports no utilization: no series rather than a zero */
    assert_null(strstr(text, "fracgpu_gpu_utilization_ratio{node=\"node-\\\"a\\\"\",gpu=\"1\""));
    /* host processes: one row without pod labels, their sums */
    assert_non_null(strstr(text, "fracgpu_pod_gpu_memory_used_bytes{node=\"node-\\\"a\\\"\",gpu=\"0\",uuid=\"GPU-1\","
                                 "model=\"Weird \\\"model\\\" \\\\ with\\nnewline\"} 300\n"));
    assert_non_null(strstr(text, "fracgpu_pod_gpu_utilization_ratio{node=\"node-\\\"a\\\"\",gpu=\"0\""));
    assert_non_null(strstr(text, "} 0.55\n"));
    assert_null(strstr(text, "DCGM_FI_DEV"));
    assert_non_null(strstr(text, "fracgpu_exporter_nvml_up{node=\"node-\\\"a\\\"\"} 1\n"));
    promtool(text);
    free(text);
}

/* The aliases as served from NVML: every GPU, the idle one too; host processes give no pod labels. */
static void test_dcgm_aliases(void **state)
{
    (void)state;
    fg_test_fake_state(dir, STATE);
    char *text = scrape_once(true, FG_FAKE_NVML_PATH);
    check_structure(text);
    assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"));
    assert_non_null(strstr(text, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",device=\"nvidia0\",modelName=\"Weird "
                                 "\\\"model\\\" \\\\ with\\nnewline\",Hostname=\"node-\\\"a\\\"\"} 42\n"));
    assert_non_null(strstr(text, "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-2\",device=\"nvidia1\","
                                 "modelName=\"NVIDIA L4\",Hostname=\"node-\\\"a\\\"\"} 0\n"));
    assert_non_null(strstr(text, "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-2\""));
    assert_null(strstr(text, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""));   /* GPU-2 reports no utilization */
    promtool(text);
    free(text);
}

#define MIB (1024ull * 1024)
#define GIB (1024 * MIB)

/* Counts the lines of text that start with prefix. */
static size_t lines_starting(const char *text, const char *prefix)
{
    size_t n = 0;
    for (const char *l = text; *l; l = strchr(l, '\n') + 1)
        n += strncmp(l, prefix, strlen(prefix)) == 0;
    return n;
}

static struct fg_pod_usage pod_row(const char *ns, const char *pod, const char *container, uint64_t mem, int util)
{
    struct fg_pod_usage r = { .in_pod = true, .mem_known = true, .mem_used = mem, .util = util };
    snprintf(r.ref.ns, sizeof r.ref.ns, "%s", ns);
    snprintf(r.ref.name, sizeof r.ref.name, "%s", pod);
    snprintf(r.ref.container, sizeof r.ref.container, "%s", container);
    return r;
}

#define DCGM(family, gpu, uuid, model)                                                                   \
    family "{gpu=\"" gpu "\",UUID=\"" uuid "\",device=\"nvidia" gpu "\",modelName=\"" model "\""

/* The aliases are device-level: one series per GPU whoever uses it, pod labels only for a GPU that one
 * pod alone uses, a GPU in MIG mode through its instances under its own UUID. */
static void test_dcgm_aliases_per_gpu(void **state)
{
    (void)state;
    struct fg_device_sample devs[6] = {
        { .index = 0, .uuid = "GPU-one-pod", .model = "NVIDIA L4", .mem_known = true, .mem_total = 24 * GIB,
          .mem_used = 2 * GIB, .reserved_known = true, .mem_reserved = 512 * MIB, .util = 37 },
        { .index = 1, .uuid = "GPU-shared", .model = "NVIDIA L4", .mem_known = true, .mem_total = 1000 * MIB,
          .mem_used = 300 * MIB, .util = 80 },   /* memory v1: no reservation apart */
        { .index = 2, .uuid = "GPU-idle", .model = "NVIDIA L4", .mem_known = true, .mem_total = 16 * GIB,
          .reserved_known = true, .util = 0 },
        { .index = 3, .uuid = "GPU-two-containers", .model = "NVIDIA L4", .mem_known = true, .mem_total = 16 * GIB,
          .mem_used = GIB, .util = -1 },
        { .index = 4, .uuid = "GPU-mig", .model = "NVIDIA H100", .mem_known = true, .mem_total = 80 * GIB, .util = -1 },
        { .index = 4, .mig = true, .gpu_instance = 3, .uuid = "MIG-x", .model = "NVIDIA H100", .mem_known = true,
          .mem_total = 10 * GIB, .mem_used = GIB, .util = 50 },
    };
    struct fg_pod_usage one[] = { pod_row("ml", "llm-0", "server", 2 * GIB - MIB, 37),
                                  { .in_pod = false, .mem_known = true, .mem_used = MIB, .util = 0 } };
    struct fg_pod_usage shared[] = { pod_row("ml", "a", "c", 100 * MIB, 30), pod_row("ml", "b", "c", 200 * MIB, 50) };
    struct fg_pod_usage two[] = { pod_row("ml", "train", "main", GIB / 2, -1),
                                  pod_row("ml", "train", "side", GIB / 2, -1) };
    struct fg_pod_usage mig[] = { pod_row("ml", "mig-0", "c", GIB, 50) };
    struct fg_device_usage du[6] = {
        { .dev = &devs[0], .rows = one, .nrows = 2 },     { .dev = &devs[1], .rows = shared, .nrows = 2 },
        { .dev = &devs[2] },                               { .dev = &devs[3], .rows = two, .nrows = 2 },
        { .dev = &devs[4] },                               { .dev = &devs[5], .rows = mig, .nrows = 1 },
    };
    for (size_t i = 0; i < 6; i++)
        devs[i].gpu_instance = devs[i].mig ? devs[i].gpu_instance : FG_NO_GPU_INSTANCE;
    struct fg_sample smp = { .devs = devs, .ndevs = 6 };
    struct fg_usage u = { .devs = du, .ndevs = 6 };
    struct fg_exporter_health h = { .nvml_up = true };
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_exposition_render(&b, "n1", &smp, &u, true, &h);
    const char *t = fg_buf_str(&b);
    check_structure(t);

    /* one pod: its labels on the GPU's series, the device's figures (not the pod's) */
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_GPU_UTIL", "0", "GPU-one-pod", "NVIDIA L4")
                              ",Hostname=\"n1\",namespace=\"ml\",pod=\"llm-0\",container=\"server\"} 37\n"));
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_USED", "0", "GPU-one-pod", "NVIDIA L4")
                              ",Hostname=\"n1\",namespace=\"ml\",pod=\"llm-0\",container=\"server\"} 2048\n"));
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_FREE", "0", "GPU-one-pod", "NVIDIA L4")
                              ",Hostname=\"n1\",namespace=\"ml\",pod=\"llm-0\",container=\"server\"} 22016\n"));
    /* two pods: the GPU once, no pod's name; their own shares stay in fracgpu's per-pod families */
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_GPU_UTIL", "1", "GPU-shared", "NVIDIA L4") ",Hostname=\"n1\"} 80\n"));
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_USED", "1", "GPU-shared", "NVIDIA L4") ",Hostname=\"n1\"} 300\n"));
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_FREE", "1", "GPU-shared", "NVIDIA L4") ",Hostname=\"n1\"} 700\n"));
    assert_non_null(strstr(t, "fracgpu_pod_gpu_memory_used_bytes{node=\"n1\",gpu=\"1\",uuid=\"GPU-shared\","
                              "model=\"NVIDIA L4\",namespace=\"ml\",pod=\"a\",container=\"c\"} 104857600\n"));
    assert_non_null(strstr(t, "fracgpu_pod_gpu_utilization_ratio{node=\"n1\",gpu=\"1\",uuid=\"GPU-shared\","
                              "model=\"NVIDIA L4\",namespace=\"ml\",pod=\"b\",container=\"c\"} 0.5\n"));
    /* idle: served all the same */
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_GPU_UTIL", "2", "GPU-idle", "NVIDIA L4") ",Hostname=\"n1\"} 0\n"));
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_USED", "2", "GPU-idle", "NVIDIA L4") ",Hostname=\"n1\"} 0\n"));
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_FREE", "2", "GPU-idle", "NVIDIA L4") ",Hostname=\"n1\"} 16384\n"));
    /* one pod's two containers: the pod, no container; utilization unknown: no series */
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_USED", "3", "GPU-two-containers", "NVIDIA L4")
                              ",Hostname=\"n1\",namespace=\"ml\",pod=\"train\"} 1024\n"));
    assert_null(strstr(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\""));
    /* MIG: the instance under its GPU's UUID with GPU_I_ID and its one pod; no utilization alias (DCGM has
     * none for an instance), and no series for the GPU itself */
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_USED", "4", "GPU-mig", "NVIDIA H100") ",GPU_I_ID=\"3\","
                              "Hostname=\"n1\",namespace=\"ml\",pod=\"mig-0\",container=\"c\"} 1024\n"));
    assert_non_null(strstr(t, DCGM("DCGM_FI_DEV_FB_FREE", "4", "GPU-mig", "NVIDIA H100") ",GPU_I_ID=\"3\","
                              "Hostname=\"n1\",namespace=\"ml\",pod=\"mig-0\",container=\"c\"} 9216\n"));
    assert_null(strstr(t, "DCGM_FI_DEV_GPU_UTIL{gpu=\"4\""));
    /* one series per GPU (five: the MIG GPU through its one instance), so sums count each GPU once */
    assert_int_equal(lines_starting(t, "DCGM_FI_DEV_GPU_UTIL{"), 3);
    assert_int_equal(lines_starting(t, "DCGM_FI_DEV_FB_USED{"), 5);
    assert_int_equal(lines_starting(t, "DCGM_FI_DEV_FB_FREE{"), 5);
    promtool(t);

    /* off by default: no alias at all */
    fg_buf_reset(&b);
    fg_exposition_render(&b, "n1", &smp, &u, false, &h);
    assert_null(strstr(fg_buf_str(&b), "DCGM_FI_"));
    fg_buf_cleanup(&b);
}

static void test_no_nvml(void **state)
{
    (void)state;
    char *text = scrape_once(false, "/nonexistent/libnvidia-ml.so.1");
    check_structure(text);
    assert_null(strstr(text, "fracgpu_gpu_info"));
    assert_non_null(strstr(text, "fracgpu_exporter_nvml_up{node=\"node-\\\"a\\\"\"} 0\n"));
    assert_non_null(strstr(text, "fracgpu_exporter_sample_failures_total{node=\"node-\\\"a\\\"\"} 1\n"));
    promtool(text);
    free(text);
}

static void test_recovery(void **state)
{
    (void)state;
    fg_test_fake_state(dir, "{\"init\":\"driver_not_loaded\"}");
    struct fg_exporter_opts o = { .node = "n", .nvml_lib = FG_FAKE_NVML_PATH, .proc_root = proc_root };
    struct fg_exporter *e = fg_exporter_new(&o, NULL);
    char why[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_exporter_ready(e, why), FG_E_BUSY);   /* nothing read yet */
    assert_string_equal(why, "NVML not sampled yet");
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_exporter_sample(e);
    fg_exporter_scrape(e, &b);
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_nvml_up{node=\"n\"} 0\n"));
    /* not ready, and the reason names the driver */
    assert_int_equal(fg_exporter_ready(e, why), FG_E_BUSY);
    assert_non_null(strstr(why, "NVML unavailable: nvmlInit_v2: Driver Not Loaded"));
    /* the driver loads: the next sample opens NVML again */
    fg_test_fake_state(dir, STATE);
    fg_exporter_sample(e);
    fg_buf_reset(&b);
    fg_exporter_scrape(e, &b);
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_nvml_up{node=\"n\"} 1\n"));
    assert_non_null(strstr(fg_buf_str(&b), "uuid=\"GPU-1\""));
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_samples_total{node=\"n\"} 2\n"));
    assert_int_equal(fg_exporter_ready(e, why), FG_OK);
    /* the device count starts failing: health says so, nothing crashes, GPU series go away */
    fg_test_fake_state(dir, "{\"count_error\":\"unknown\",\"gpus\":[]}");
    fg_exporter_sample(e);
    fg_buf_reset(&b);
    fg_exporter_scrape(e, &b);
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_nvml_up{node=\"n\"} 0\n"));
    assert_null(strstr(fg_buf_str(&b), "uuid=\"GPU-1\""));
    assert_int_equal(fg_exporter_ready(e, why), FG_E_BUSY);
    assert_non_null(strstr(why, "nvmlDeviceGetCount_v2"));
    fg_buf_cleanup(&b);
    fg_exporter_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exposition), cmocka_unit_test(test_dcgm_aliases),
        cmocka_unit_test(test_dcgm_aliases_per_gpu), cmocka_unit_test(test_no_nvml),
        cmocka_unit_test(test_recovery),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
