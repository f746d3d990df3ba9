/*
 * test_fake_nvml — what the fake NVML adds for the capacity holder: device visibility
 * ($FG_FAKE_NVML_VISIBLE: count, handles, indices over the visible GPUs only, minor numbers kept),
 * compute modes that outlive the process that set them (the modes file beside the state, which the
 * state file's owner never has to write), the deprecated mode refused, and the injected failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "exporter/nvml.h"
#include "exporter/test/fake_state.h"

static char dir[64];

#define STATE                                                                                                     \
    "{\"gpus\":[{\"uuid\":\"GPU-0\",\"name\":\"NVIDIA A100\",\"total\":42949672960},"                            \
    "{\"uuid\":\"GPU-1\",\"name\":\"NVIDIA A100\",\"total\":42949672960,\"minor\":7,\"compute_mode\":\"prohibited\"}," \
    "{\"uuid\":\"GPU-2\",\"name\":\"NVIDIA A100\",\"total\":42949672960,\"set_compute_mode_error\":\"no_permission\"}]}"

static int setup(void **state)
{
    (void)state;
    fg_test_fake_dir(dir);
    fg_test_fake_state(dir, STATE);
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

static void open_nvml(struct fg_nvml *nv)
{
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_nvml_open(FG_FAKE_NVML_PATH, nv, msg) != FG_OK)
        fail_msg("open: %s", msg);
    assert_non_null(nv->get_compute_mode);
    assert_non_null(nv->set_compute_mode);
    assert_non_null(nv->get_index);
    assert_non_null(nv->get_minor_number);
}

static nvmlDevice_t device(struct fg_nvml *nv, unsigned i, const char *want_uuid)
{
    nvmlDevice_t dev;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(nv->get_handle(i, &dev), NVML_SUCCESS);
    assert_int_equal(nv->get_uuid(dev, uuid, sizeof uuid), NVML_SUCCESS);
    assert_string_equal(uuid, want_uuid);
    return dev;
}

static void test_visibility(void **state)
{
    (void)state;
    struct fg_nvml nv;
    unsigned n = 0, idx = 9, minor = 9;

    open_nvml(&nv);   /* unset: every GPU */
    assert_int_equal(nv.get_count(&n), NVML_SUCCESS);
    assert_int_equal(n, 3);
    fg_nvml_close(&nv);

    setenv("FG_FAKE_NVML_VISIBLE", "GPU-2,GPU-1,GPU-9", 1);   /* the state's order; unknown UUIDs absent */
    open_nvml(&nv);
    assert_int_equal(nv.get_count(&n), NVML_SUCCESS);
    assert_int_equal(n, 2);
    nvmlDevice_t d1 = device(&nv, 0, "GPU-1"), d2 = device(&nv, 1, "GPU-2");
    nvmlDevice_t none;
    assert_int_equal(nv.get_handle(2, &none), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nv.get_index(d1, &idx), NVML_SUCCESS);
    assert_int_equal(idx, 0);
    assert_int_equal(nv.get_index(d2, &idx), NVML_SUCCESS);
    assert_int_equal(idx, 1);
    assert_int_equal(nv.get_minor_number(d1, &minor), NVML_SUCCESS);
    assert_int_equal(minor, 7);   /* the host's device node */
    assert_int_equal(nv.get_minor_number(d2, &minor), NVML_SUCCESS);
    assert_int_equal(minor, 2);   /* default: the position in the state */
    fg_nvml_close(&nv);

    setenv("FG_FAKE_NVML_VISIBLE", "", 1);   /* empty: none */
    open_nvml(&nv);
    assert_int_equal(nv.get_count(&n), NVML_SUCCESS);
    assert_int_equal(n, 0);
    fg_nvml_close(&nv);
}

/* In a child process: opens the fake and sets GPU-0 to `mode`; exits with the NVML return. */
static int set_in_child(nvmlComputeMode_t mode)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct fg_nvml nv;
        if (fg_nvml_open(FG_FAKE_NVML_PATH, &nv, NULL) != FG_OK)
            _exit(100);
        nvmlDevice_t dev;
        nvmlReturn_t r = nv.get_handle(0, &dev);
        if (r == NVML_SUCCESS)
            r = nv.set_compute_mode(dev, mode);
        fg_nvml_close(&nv);
        _exit((int)r);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_modes_persist(void **state)
{
    (void)state;
    struct fg_nvml nv;
    open_nvml(&nv);
    nvmlDevice_t d0 = device(&nv, 0, "GPU-0"), d1 = device(&nv, 1, "GPU-1");
    nvmlComputeMode_t m;
    assert_int_equal(nv.get_compute_mode(d0, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_DEFAULT);
    assert_int_equal(nv.get_compute_mode(d1, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_PROHIBITED);   /* the state's */

    /* another process sets it; this one sees it, and so does one that loads the fake afresh */
    assert_int_equal(set_in_child(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS), NVML_SUCCESS);
    assert_int_equal(nv.get_compute_mode(d0, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
    assert_int_equal(nv.set_compute_mode(d1, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS), NVML_SUCCESS);

    /* the state's owner rewrites its file: the modes stay */
    fg_test_fake_state(dir, STATE);
    assert_int_equal(nv.get_compute_mode(d0, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
    assert_int_equal(nv.get_compute_mode(d1, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);

    /* what the file holds */
    struct fg_buf b = FG_BUF_INIT;
    char path[128];
    snprintf(path, sizeof path, "%s/state.json.modes.json", dir);
    assert_int_equal(fg_buf_read_file(&b, path, NULL), FG_OK);
    assert_non_null(strstr(fg_buf_str(&b), "\"GPU-0\":3"));
    assert_non_null(strstr(fg_buf_str(&b), "\"GPU-1\":3"));
    fg_buf_cleanup(&b);

    assert_int_equal(set_in_child(NVML_COMPUTEMODE_DEFAULT), NVML_SUCCESS);
    assert_int_equal(nv.get_compute_mode(d0, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_DEFAULT);
    assert_int_equal(nv.get_compute_mode(d1, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);   /* the other GPU's record kept */
    /* deleting the file resets every GPU to the state's mode */
    unlink(path);
    assert_int_equal(nv.get_compute_mode(d1, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_PROHIBITED);
    fg_nvml_close(&nv);
}

static void test_failures(void **state)
{
    (void)state;
    struct fg_nvml nv;
    open_nvml(&nv);
    nvmlDevice_t d0 = device(&nv, 0, "GPU-0"), d2 = device(&nv, 2, "GPU-2");
    nvmlComputeMode_t m;
    assert_int_equal(nv.set_compute_mode(d2, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS), NVML_ERROR_NO_PERMISSION);
    assert_int_equal(nv.get_compute_mode(d2, &m), NVML_SUCCESS);
    assert_int_equal(m, NVML_COMPUTEMODE_DEFAULT);   /* unchanged */
    assert_int_equal(nv.set_compute_mode(d0, NVML_COMPUTEMODE_EXCLUSIVE_THREAD), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nv.set_compute_mode(d0, (nvmlComputeMode_t)9), NVML_ERROR_INVALID_ARGUMENT);
    assert_string_equal(fg_nvml_strerror(&nv, NVML_ERROR_NO_PERMISSION), "Insufficient Permissions");
    assert_string_equal(fg_nvml_compute_mode_name(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS), "EXCLUSIVE_PROCESS");
    assert_string_equal(fg_nvml_compute_mode_name((nvmlComputeMode_t)42), "UNKNOWN");

    /* a lost GPU and a count that fails */
    fg_test_fake_state(dir, "{\"count_error\":\"unknown\",\"gpus\":[{\"uuid\":\"GPU-0\",\"error\":\"gpu_is_lost\","
                            "\"compute_mode_error\":\"not_supported\"}]}");
    unsigned n;
    assert_int_equal(nv.get_count(&n), NVML_ERROR_UNKNOWN);
    assert_int_equal(nv.get_compute_mode(d0, &m), NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(nv.set_compute_mode(d0, NVML_COMPUTEMODE_DEFAULT), NVML_ERROR_GPU_IS_LOST);
    fg_test_fake_state(dir, "{\"gpus\":[{\"uuid\":\"GPU-0\",\"compute_mode_error\":\"not_supported\"}]}");
    assert_int_equal(nv.get_count(&n), NVML_SUCCESS);
    assert_int_equal(nv.get_compute_mode(d0, &m), NVML_ERROR_NOT_SUPPORTED);
    fg_nvml_close(&nv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_visibility, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_persist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
