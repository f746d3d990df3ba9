/*
 * test_exposition — the exposition the exporter serves: families with HELP and TYPE once, escaping,
 * no timestamps, a final newline, unknown values left out, DCGM aliases only when asked, health
 * metrics with no NVML at all and recovery once it appears, and `promtool check metrics` on it.
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
    if (rc != 0) {
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

static void test_dcgm_aliases(void **state)
{
    (void)state;
    fg_test_fake_state(dir, STATE);
    char *text = scrape_once(true, FG_FAKE_NVML_PATH);
    check_structure(text);
    /* aliases exist only for pod rows; with no pods they are empty families */
    assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"));
    assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
    promtool(text);
    free(text);
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
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_exporter_sample(e);
    fg_exporter_scrape(e, &b);
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_nvml_up{node=\"n\"} 0\n"));
    /* the driver loads: the next sample opens NVML again */
    fg_test_fake_state(dir, STATE);
    fg_exporter_sample(e);
    fg_buf_reset(&b);
    fg_exporter_scrape(e, &b);
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_nvml_up{node=\"n\"} 1\n"));
    assert_non_null(strstr(fg_buf_str(&b), "uuid=\"GPU-1\""));
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_samples_total{node=\"n\"} 2\n"));
    /* the device count starts failing: health says so, nothing crashes, GPU series go away */
    fg_test_fake_state(dir, "{\"count_error\":\"unknown\",\"gpus\":[]}");
    fg_exporter_sample(e);
    fg_buf_reset(&b);
    fg_exporter_scrape(e, &b);
    assert_non_null(strstr(fg_buf_str(&b), "fracgpu_exporter_nvml_up{node=\"n\"} 0\n"));
    assert_null(strstr(fg_buf_str(&b), "uuid=\"GPU-1\""));
    fg_buf_cleanup(&b);
    fg_exporter_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exposition), cmocka_unit_test(test_dcgm_aliases), cmocka_unit_test(test_no_nvml),
        cmocka_unit_test(test_recovery),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
