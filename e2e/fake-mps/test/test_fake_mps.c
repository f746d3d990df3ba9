/*
 * test_fake_mps — the stand-in MPS control daemon as its callers meet it: `-d` starts one daemon per
 * pipe directory and refuses a second; the client relays commands and fails without a daemon; the
 * limits it holds are read back through the client and from its limits file; bad values change
 * nothing; unknown commands get no reply; quit ends it and removes its files; a killed daemon's stale
 * socket does not stop the next one; the start-failure injection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"

static char dir[64], pipe_dir[96], log_dir[96];

/* Runs `printf input | stand-in [arg]`; returns the exit status, stdout into out. */
static int run(const char *arg, const char *input, struct fg_buf *out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "printf '%s' | %s %s 2>&1", input ? input : "", FG_SIM_MPS_CONTROL, arg ? arg : "");
    return fg_buf_run_command(out, cmd);
}

static json_object *limits(void)
{
    char path[160];
    snprintf(path, sizeof path, "%s/fracgpu-sim-limits.json", pipe_dir);
    return json_object_from_file(path);
}

static int field_int(json_object *o, const char *k)
{
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(o, k, &v));
    return json_object_get_int(v);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/fg-mps-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe", dir);
    snprintf(log_dir, sizeof log_dir, "%s/log", dir);
    mkdir(pipe_dir, 0755);
    mkdir(log_dir, 0755);
    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", log_dir, 1);
    setenv("CUDA_VISIBLE_DEVICES", "GPU-fake-1", 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    run(NULL, "quit\\n", &out);   /* a daemon left by a failed check */
    fg_buf_cleanup(&out);
    fg_remove_tree(dir);
    return 0;
}

static void test_lifecycle(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    assert_int_equal(run(NULL, "get_server_list\\n", &out), 1);   /* no daemon yet */
    assert_non_null(strstr(fg_buf_str(&out), "Cannot find MPS control daemon"));
    assert_int_equal(run("-d", NULL, &out), 0);
    assert_int_equal(run("-d", NULL, &out), 1);
    assert_non_null(strstr(fg_buf_str(&out), "already running"));

    json_object *l = limits();
    assert_non_null(l);
    pid_t pid = field_int(l, "pid");
    assert_true(pid > 0 && kill(pid, 0) == 0);
    assert_int_equal(field_int(l, "default_active_thread_percentage"), 100);
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(l, "visible_devices", &v));
    assert_string_equal(json_object_get_string(v), "GPU-fake-1");
    json_object_put(l);

    assert_int_equal(run(NULL, "get_server_list\\n", &out), 0);
    assert_string_equal(fg_buf_str(&out), "");
    assert_int_equal(run(NULL, "set_default_active_thread_percentage 30\\nset_default_device_pinned_mem_limit "
                               "GPU-fake-1 4096M\\n", &out), 0);
    assert_int_equal(run(NULL, "get_default_active_thread_percentage\\n", &out), 0);
    assert_string_equal(fg_buf_str(&out), "30.0\n");
    assert_int_equal(run(NULL, "get_default_device_pinned_mem_limit GPU-fake-1\\n", &out), 0);
    assert_string_equal(fg_buf_str(&out), "4096M\n");
    /* bad values: a line saying so, nothing changed */
    assert_int_equal(run(NULL, "set_default_active_thread_percentage 0\\n", &out), 0);
    assert_non_null(strstr(fg_buf_str(&out), "Invalid"));
    assert_int_equal(run(NULL, "set_default_device_pinned_mem_limit GPU-fake-1 4096\\n", &out), 0);
    assert_non_null(strstr(fg_buf_str(&out), "Invalid"));
    /* unknown: no reply */
    assert_int_equal(run(NULL, "frobnicate 1\\n", &out), 0);
    assert_string_equal(fg_buf_str(&out), "");

    l = limits();
    assert_int_equal(field_int(l, "default_active_thread_percentage"), 30);
    assert_true(json_object_object_get_ex(l, "default_device_pinned_mem_limit", &v));
    json_object *mem = NULL;
    assert_true(json_object_object_get_ex(v, "GPU-fake-1", &mem));
    assert_string_equal(json_object_get_string(mem), "4096M");
    json_object_put(l);

    struct fg_buf log = FG_BUF_INIT;
    char path[160];
    snprintf(path, sizeof path, "%s/control.log", log_dir);
    assert_int_equal(fg_buf_read_file(&log, path, NULL), FG_OK);
    assert_non_null(strstr(fg_buf_str(&log), "Starting control daemon using socket"));
    assert_non_null(strstr(fg_buf_str(&log), "Cmd:set_default_active_thread_percentage 30"));
    assert_non_null(strstr(fg_buf_str(&log), "Unknown command frobnicate"));
    fg_buf_cleanup(&log);

    assert_int_equal(run(NULL, "quit\\n", &out), 0);
    for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
        sleep_ms(10);
    assert_int_not_equal(kill(pid, 0), 0);
    assert_null(limits());
    assert_int_equal(run(NULL, "get_server_list\\n", &out), 1);
    fg_buf_cleanup(&out);
}

/* A daemon killed outright leaves its socket; the next -d starts all the same, with fresh limits. */
static void test_restart_after_kill(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    assert_int_equal(run("-d", NULL, &out), 0);
    assert_int_equal(run(NULL, "set_default_active_thread_percentage 12\\n", &out), 0);
    json_object *l = limits();
    pid_t pid = field_int(l, "pid");
    json_object_put(l);
    assert_int_equal(kill(pid, SIGKILL), 0);
    for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
        sleep_ms(10);
    char sock[160];
    snprintf(sock, sizeof sock, "%s/control", pipe_dir);
    assert_int_equal(access(sock, F_OK), 0);   /* stale */
    assert_int_equal(run(NULL, "get_server_list\\n", &out), 1);
    assert_int_equal(run("-d", NULL, &out), 0);
    assert_int_equal(run(NULL, "get_default_active_thread_percentage\\n", &out), 0);
    assert_string_equal(fg_buf_str(&out), "100.0\n");
    l = limits();
    assert_int_not_equal(field_int(l, "pid"), pid);
    json_object_put(l);
    /* SIGTERM: a clean end, files removed */
    l = limits();
    pid = field_int(l, "pid");
    json_object_put(l);
    kill(pid, SIGTERM);
    for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
        sleep_ms(10);
    assert_null(limits());
    assert_int_not_equal(access(sock, F_OK), 0);
    fg_buf_cleanup(&out);
}

static void test_start_error(void **state)
{
    (void)state;
    struct fg_buf out = FG_BUF_INIT;
    setenv("FG_SIM_MPS_START_ERROR", "no CUDA-capable device is detected", 1);
    assert_int_equal(run("-d", NULL, &out), 1);
    unsetenv("FG_SIM_MPS_START_ERROR");
    assert_non_null(strstr(fg_buf_str(&out), "no CUDA-capable device"));
    assert_int_equal(run(NULL, "get_server_list\\n", &out), 1);
    assert_int_equal(run("-x", NULL, &out), 2);
    fg_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_after_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_error, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
