/*
 * test_process — `fracgpu capacity-holder` as a process against the test API server, the fake NVML
 * (the container's view through FG_FAKE_NVML_VISIBLE) and the stand-in MPS control daemon:
 *   - it annotates its pod with the one visible GPU's UUID and memory, becomes ready, leaves the pod's
 *     other annotations alone, changes nothing when restarted, and ends on SIGTERM within a second;
 *   - no GPU, two GPUs, a driver that is not loaded: exit 1 with a line saying what NVML showed;
 *   - mps: EXCLUSIVE_PROCESS while it runs, the daemon on the GPU's own directories with the
 *     workload's limits, a killed daemon noticed and started again with them, and on SIGTERM the
 *     daemon quit and the compute mode restored;
 *   - the compute mode refused, the daemon unable to start: exit 1, nothing left changed, the pod not
 *     announced as a bin; a mode a crashed mps holder left is given back by the next holder;
 *   - its pod not there yet and the API refusing the patch: retried, logged, not ready meanwhile,
 *     done once the server lets it; a SIGTERM ends the retrying, or a request the server is slow to
 *     answer, at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "exporter/test/fake_state.h"
#include "holder_env.h"

#define STOP_MS 1000u   /* a holder ends within this of SIGTERM */

#define TWO_GPUS                                                                                               \
    "{\"gpus\":[{\"uuid\":\"GPU-a\",\"name\":\"NVIDIA A100-SXM4-40GB\",\"total\":42949672960,\"reserved\":629145600}," \
    "{\"uuid\":\"GPU-b\",\"name\":\"NVIDIA A100-SXM4-40GB\",\"total\":42949672960,\"reserved\":629145600}]}"

static struct holder_env env;
static struct holder_proc proc;

static int setup(void **state)
{
    (void)state;
    holder_env_start(&env);
    proc.pid = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsigned ms;
    if (proc.pid > 0)
        holder_term(&proc, &ms);
    holder_env_stop(&env);
    return 0;
}

static void set_visible(const char *visible)
{
    if (visible)
        setenv("FG_FAKE_NVML_VISIBLE", visible, 1);
    else
        unsetenv("FG_FAKE_NVML_VISIBLE");
}

/* Spawns with FG_FAKE_NVML_VISIBLE = visible (NULL: unset) in the holder's environment only. */
#define SPAWN(visible, name, ...)                                                    \
    do {                                                                             \
        set_visible(visible);                                                        \
        holder_spawn(&env, &proc, (name), __VA_ARGS__);                              \
        unsetenv("FG_FAKE_NVML_VISIBLE");                                            \
    } while (0)

static void expect_log(const char *text, unsigned timeout_ms)
{
    if (!holder_log_has(&proc, text, timeout_ms)) {
        char *log = holder_log(&proc);
        fail_msg("no \"%s\" in the holder's log:\n%s", text, log);
    }
}

static void expect_annotation(const char *pod, const char *key, const char *want)
{
    char *v = holder_pod_annotation(&env, pod, key);
    if (!fg_str_eq(v, want))
        fail_msg("%s: %s is %s, want %s", pod, key, v ? v : "absent", want ? want : "absent");
    free(v);
}

static long readyz(unsigned port, struct fg_buf *body)
{
    return fg_harness_http(NULL, port, "GET", "/readyz", body);
}

/* SIGTERM: exit 0 within STOP_MS. */
static void expect_clean_stop(void)
{
    unsigned ms = 0;
    int status = holder_term(&proc, &ms);
    if (status != 0) {
        char *log = holder_log(&proc);
        fail_msg("exit status %d after SIGTERM; log:\n%s", status, log);
    }
    fprintf(stderr, "the holder stopped %u ms after SIGTERM\n", ms);
    assert_true(ms < STOP_MS);
}

static void test_report(void **state)
{
    (void)state;
    fg_test_fake_state(env.dir, TWO_GPUS);
    holder_pod_create(&env, "capacity-1", "\"example.com/keep\":\"me\"");
    SPAWN("GPU-b", "capacity-1", NULL);
    expect_log("annotated with GPU GPU-b and 39860 MiB for tenants", 15000);
    expect_log("holding GPU GPU-b (NVIDIA A100-SXM4-40GB): 40960 MiB, the driver keeps 600 MiB", 0);
    expect_annotation("capacity-1", "fracgpu.io/gpu-uuid", "GPU-b");
    expect_annotation("capacity-1", "fracgpu.io/gpu-memory-mib", "39860");   /* 40960 - 600 - 500 */
    expect_annotation("capacity-1", "example.com/keep", "me");
    unsigned port = holder_port(&proc);
    assert_true(port > 0);
    struct fg_buf body = FG_BUF_INIT;
    assert_int_equal(readyz(port, &body), 200);
    assert_int_equal(fg_harness_http(NULL, port, "GET", "/healthz", &body), 200);
    assert_int_equal(holder_compute_mode("GPU-b"), 0);   /* not an mps pod: the mode is not touched */
    expect_clean_stop();

    /* restarted: nothing to write */
    SPAWN("GPU-b", "capacity-1", NULL);
    expect_log("already annotated with GPU GPU-b and 39860 MiB", 15000);
    port = holder_port(&proc);
    assert_int_equal(readyz(port, &body), 200);
    expect_clean_stop();

    /* another overhead: a new figure, written over the old one */
    SPAWN("GPU-b", "capacity-1", "--context-overhead-mib", "1000", NULL);
    expect_log("annotated with GPU GPU-b and 39360 MiB for tenants", 15000);
    expect_annotation("capacity-1", "fracgpu.io/gpu-memory-mib", "39360");
    expect_clean_stop();
    fg_buf_cleanup(&body);
}

/* Exit 1 on its own, with `text` in the log. */
static void expect_gives_up(const char *text)
{
    int status = holder_wait_exit(&proc, 15000);
    char *log = holder_log(&proc);
    if (status != 1 || !strstr(log, text))
        fail_msg("want exit 1 with \"%s\"; got %d, log:\n%s", text, status, log);
    free(log);
}

static void test_wrong_gpus(void **state)
{
    (void)state;
    fg_test_fake_state(env.dir, TWO_GPUS);
    holder_pod_create(&env, "capacity-2", "");
    SPAWN("", "capacity-2", NULL);
    expect_gives_up("NVML shows no GPU in this container");
    SPAWN(NULL, "capacity-2", NULL);
    expect_gives_up("NVML shows 2 GPUs in this container (GPU-a, GPU-b); a capacity pod holds exactly one");
    fg_test_fake_state(env.dir, "{\"init\":\"driver_not_loaded\",\"gpus\":[]}");
    SPAWN(NULL, "capacity-2", NULL);
    expect_gives_up("nvmlInit_v2: Driver Not Loaded");
    expect_annotation("capacity-2", "fracgpu.io/gpu-uuid", NULL);
}

#define MPS_GPU "GPU-6f1c2a9e-0000-4000-8000-00000000000m"
#define MPS_POD_ANNOTATIONS \
    "\"fracgpu.io/sharing\":\"mps\",\"fracgpu.io/compute-milli\":\"250\",\"fracgpu.io/memory-mib\":\"8192\""

static int limits_int(json_object *l, const char *k)
{
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(l, k, &v));
    return json_object_get_int(v);
}

static const char *limits_str(json_object *l, const char *k, const char *k2)
{
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(l, k, &v));
    if (k2)
        assert_true(json_object_object_get_ex(v, k2, &v));
    return json_object_get_string(v);
}

static bool is_dir(const char *kind)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/" MPS_GPU "/%s", env.mps_root, kind);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_mps(void **state)
{
    (void)state;
    fg_test_fake_state(env.dir, "{\"gpus\":[{\"uuid\":\"GPU-other\",\"total\":42949672960},"
                                "{\"uuid\":\"" MPS_GPU "\",\"name\":\"NVIDIA H100\",\"total\":85899345920}]}");
    holder_pod_create(&env, "capacity-mps", MPS_POD_ANNOTATIONS);
    SPAWN(MPS_GPU, "capacity-mps", NULL);
    expect_log("annotated with GPU " MPS_GPU, 15000);
    expect_log("MPS control daemon started", 0);
    assert_int_equal(holder_compute_mode(MPS_GPU), 3);        /* EXCLUSIVE_PROCESS */
    assert_int_equal(holder_compute_mode("GPU-other"), 0);    /* the node's other GPU untouched */
    assert_true(is_dir("pipe") && is_dir("log") && is_dir("shm"));
    json_object *l = holder_mps_limits(&env, MPS_GPU);
    assert_non_null(l);
    assert_int_equal(limits_int(l, "default_active_thread_percentage"), 25);
    assert_string_equal(limits_str(l, "default_device_pinned_mem_limit", MPS_GPU), "8192M");
    assert_string_equal(limits_str(l, "visible_devices", NULL), MPS_GPU);
    char logdir[256];
    snprintf(logdir, sizeof logdir, "%s/" MPS_GPU "/log", env.mps_root);
    assert_string_equal(limits_str(l, "log_directory", NULL), logdir);
    pid_t daemon = limits_int(l, "pid");
    json_object_put(l);
    unsigned port = holder_port(&proc);
    struct fg_buf body = FG_BUF_INIT;
    assert_int_equal(readyz(port, &body), 200);

    /* the daemon dies: noticed within a health interval, started again with the limits */
    assert_int_equal(kill(daemon, SIGKILL), 0);
    expect_log("MPS control daemon does not answer", 5000);
    expect_log("MPS control daemon running again with its limits (restart 1)", 10000);
    l = holder_mps_limits(&env, MPS_GPU);
    assert_non_null(l);
    assert_int_not_equal(limits_int(l, "pid"), daemon);
    assert_int_equal(limits_int(l, "default_active_thread_percentage"), 25);
    assert_string_equal(limits_str(l, "default_device_pinned_mem_limit", MPS_GPU), "8192M");
    daemon = limits_int(l, "pid");
    json_object_put(l);
    for (int i = 0; i < 100 && readyz(port, &body) != 200; i++)
        holder_sleep_ms(50);
    assert_int_equal(readyz(port, &body), 200);

    expect_clean_stop();
    assert_int_equal(holder_compute_mode(MPS_GPU), 0);        /* DEFAULT again */
    assert_null(holder_mps_limits(&env, MPS_GPU));             /* the daemon quit */
    for (int i = 0; i < 200 && kill(daemon, 0) == 0; i++)      /* (its exit may lag its socket) */
        holder_sleep_ms(10);
    assert_int_not_equal(kill(daemon, 0), 0);
    char record[256];
    snprintf(record, sizeof record, "%s/" MPS_GPU "/previous-compute-mode", env.mps_root);
    assert_int_not_equal(access(record, F_OK), 0);
    fg_buf_cleanup(&body);
}

static void test_mps_failures(void **state)
{
    (void)state;
    fg_test_fake_state(env.dir, "{\"gpus\":[{\"uuid\":\"" MPS_GPU "\",\"total\":85899345920,"
                                "\"set_compute_mode_error\":\"no_permission\"}]}");
    holder_pod_create(&env, "capacity-mps", MPS_POD_ANNOTATIONS);
    SPAWN(NULL, "capacity-mps", NULL);
    expect_gives_up("nvmlDeviceSetComputeMode(EXCLUSIVE_PROCESS): Insufficient Permissions");
    assert_null(holder_mps_limits(&env, MPS_GPU));             /* no daemon */
    expect_annotation("capacity-mps", "fracgpu.io/gpu-uuid", NULL);

    /* the mode is granted but the daemon cannot start: the mode is given back */
    fg_test_fake_state(env.dir, "{\"gpus\":[{\"uuid\":\"" MPS_GPU "\",\"total\":85899345920}]}");
    setenv("FG_SIM_MPS_START_ERROR", "MPS is not supported on this GPU", 1);
    SPAWN(NULL, "capacity-mps", NULL);
    unsetenv("FG_SIM_MPS_START_ERROR");
    expect_gives_up("cannot start the MPS control daemon");
    expect_log("MPS is not supported on this GPU", 0);
    assert_int_equal(holder_compute_mode(MPS_GPU), 0);
    expect_annotation("capacity-mps", "fracgpu.io/gpu-uuid", NULL);

    /* limits missing on an mps pod */
    holder_pod_create(&env, "capacity-nolimits", "\"fracgpu.io/sharing\":\"mps\"");
    SPAWN(NULL, "capacity-nolimits", NULL);
    expect_gives_up("an mps capacity pod needs fracgpu.io/compute-milli from 1 to 1000, got none");
    assert_int_equal(holder_compute_mode(MPS_GPU), 0);
}

/* A GPU an mps holder left in EXCLUSIVE_PROCESS (it crashed) is given back by the next holder,
 * here one without MPS. */
static void test_left_mode(void **state)
{
    (void)state;
    fg_test_fake_state(env.dir, "{\"gpus\":[{\"uuid\":\"GPU-left\",\"total\":42949672960,\"compute_mode\":3}]}");
    char path[256];
    snprintf(path, sizeof path, "%s/GPU-left", env.mps_root);
    assert_int_equal(fg_mkdir_p(path), 0);
    snprintf(path, sizeof path, "%s/GPU-left/previous-compute-mode", env.mps_root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("0 DEFAULT\n", f);
    fclose(f);
    assert_int_equal(holder_compute_mode("GPU-left"), 3);
    holder_pod_create(&env, "capacity-after", "");
    SPAWN(NULL, "capacity-after", NULL);
    expect_log("annotated with GPU GPU-left", 15000);
    expect_log("GPU GPU-left back in DEFAULT, the mode an mps holder before this one had taken it from", 0);
    assert_int_equal(holder_compute_mode("GPU-left"), 0);
    assert_int_not_equal(access(path, F_OK), 0);
    expect_clean_stop();
}

static void test_api_retries(void **state)
{
    (void)state;
    fg_test_fake_state(env.dir, "{\"gpus\":[{\"uuid\":\"GPU-r\",\"total\":42949672960}]}");
    /* its pod is not there yet: retried, not ready, done once it exists */
    SPAWN(NULL, "capacity-late", NULL);
    expect_log("cannot read its pod: not found (404)", 10000);
    unsigned port = holder_port(&proc);
    struct fg_buf body = FG_BUF_INIT;
    assert_int_equal(readyz(port, &body), 503);
    assert_non_null(strstr(fg_buf_str(&body), "cannot read the pod"));
    holder_pod_create(&env, "capacity-late", "");
    expect_log("annotated with GPU GPU-r", 15000);
    expect_annotation("capacity-late", "fracgpu.io/gpu-uuid", "GPU-r");
    assert_int_equal(readyz(port, &body), 200);
    expect_clean_stop();

    /* the server refuses the patch three times */
    holder_pod_create(&env, "capacity-refused", "");
    assert_int_equal(fg_harness_fault(&env.h, "fail?count=3&code=500&method=PATCH&path=/api/v1/namespaces/"
                                              HOLDER_NS "/pods/capacity-refused"), FG_OK);
    SPAWN(NULL, "capacity-refused", NULL);
    expect_log("cannot annotate its pod: internal server error (500)", 10000);
    expect_log("annotated with GPU GPU-r", 20000);
    expect_annotation("capacity-refused", "fracgpu.io/gpu-uuid", "GPU-r");
    expect_clean_stop();

    /* a stop while it waits to retry ends it at once */
    SPAWN(NULL, "capacity-never", NULL);
    expect_log("cannot read its pod: not found (404)", 10000);
    expect_clean_stop();

    /* and so does a stop while a request is still waiting for the server's reply */
    assert_int_equal(fg_harness_fault(&env.h, "latency?ms=5000"), FG_OK);
    SPAWN(NULL, "capacity-late", NULL);
    expect_log("started against", 10000);
    holder_sleep_ms(300);
    expect_clean_stop();
    assert_int_equal(fg_harness_fault(&env.h, "latency?ms=0"), FG_OK);
    fg_buf_cleanup(&body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_gpus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mps_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_retries, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
