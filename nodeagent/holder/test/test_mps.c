/*
 * test_mps — the holder's MPS daemon against the stand-in (fracgpu-sim-mps-control): started with
 * the GPU's own pipe and log directories (and shm made), limits given and read back from the
 * daemon's limits file, a running daemon adopted rather than started twice, a killed daemon noticed
 * and started again with its limits, quit; a daemon that cannot start, a missing binary and a hung
 * control run each end in a clear error.
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
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "nodeagent/holder/mps.h"

#define UUID "GPU-6f1c2a9e-0000-4000-8000-000000000001"

static char root[64];

static int setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);   /* as the holder's kube client leaves it */
    snprintf(root, sizeof root, "/tmp/fg-holder-mps-XXXXXX");
    assert_non_null(mkdtemp(root));
    unsetenv("FG_SIM_MPS_START_ERROR");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsetenv("FG_SIM_MPS_START_ERROR");
    fg_remove_tree(root);
    return 0;
}

static json_object *limits_file(const struct fg_holder_mps *m)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/fracgpu-sim-limits.json", m->pipe_dir);
    return json_object_from_file(path);
}

static json_object *field(json_object *o, const char *k)
{
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(o, k, &v));
    return v;
}

static bool gone(pid_t pid)
{
    for (int i = 0; i < 300 && kill(pid, 0) == 0; i++) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return kill(pid, 0) != 0;
}

static void init(struct fg_holder_mps *m, const char *bin)
{
    const struct fg_mps_limits limits = { 25, 8192 };
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_holder_mps_init(m, root, bin, UUID, &limits, msg) != FG_OK)
        fail_msg("init: %s", msg);
}

static void test_daemon(void **state)
{
    (void)state;
    struct fg_holder_mps m;
    char msg[FG_ERRMSG_MAX] = "", path[256];
    init(&m, FG_SIM_MPS_CONTROL);
    snprintf(path, sizeof path, "%s/" UUID "/pipe", root);
    assert_string_equal(m.pipe_dir, path);
    struct stat st;
    snprintf(path, sizeof path, "%s/" UUID "/shm", root);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_not_equal(fg_holder_mps_check(&m, msg), FG_OK);   /* none yet */

    bool adopted = true;
    if (fg_holder_mps_start(&m, &adopted, msg) != FG_OK)
        fail_msg("start: %s", msg);
    assert_false(adopted);
    json_object *l = limits_file(&m);
    assert_non_null(l);
    pid_t pid = json_object_get_int(field(l, "pid"));
    assert_int_equal((int)json_object_get_double(field(l, "default_active_thread_percentage")), 25);
    assert_string_equal(json_object_get_string(field(field(l, "default_device_pinned_mem_limit"), UUID)), "8192M");
    assert_string_equal(json_object_get_string(field(l, "visible_devices")), UUID);
    assert_string_equal(json_object_get_string(field(l, "log_directory")), m.log_dir);
    json_object_put(l);
    assert_int_equal(fg_holder_mps_check(&m, msg), FG_OK);

    /* a second start adopts the running daemon */
    assert_int_equal(fg_holder_mps_start(&m, &adopted, msg), FG_OK);
    assert_true(adopted);
    l = limits_file(&m);
    assert_int_equal(json_object_get_int(field(l, "pid")), pid);
    json_object_put(l);

    /* killed: the check says so, and a start brings it back with its limits */
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_true(gone(pid));
    msg[0] = '\0';
    assert_int_equal(fg_holder_mps_check(&m, msg), FG_E_CONNECT);
    assert_non_null(strstr(msg, "get_server_list"));
    assert_int_equal(fg_holder_mps_start(&m, &adopted, msg), FG_OK);
    assert_false(adopted);
    l = limits_file(&m);
    pid_t pid2 = json_object_get_int(field(l, "pid"));
    assert_int_not_equal(pid2, pid);
    assert_int_equal((int)json_object_get_double(field(l, "default_active_thread_percentage")), 25);
    json_object_put(l);

    assert_int_equal(fg_holder_mps_quit(&m, 2000, msg), FG_OK);
    assert_true(gone(pid2));
    assert_int_not_equal(fg_holder_mps_check(&m, msg), FG_OK);
    assert_int_equal(fg_holder_mps_quit(&m, 500, msg), FG_OK);   /* none running: fine */
    fg_holder_mps_cleanup(&m);
}

static void test_failures(void **state)
{
    (void)state;
    struct fg_holder_mps m;
    char msg[FG_ERRMSG_MAX] = "";
    bool adopted;
    init(&m, FG_SIM_MPS_CONTROL);
    setenv("FG_SIM_MPS_START_ERROR", "MPS is not supported on this GPU", 1);
    fg_holder_mps_cleanup(&m);   /* the environment is captured at init */
    init(&m, FG_SIM_MPS_CONTROL);
    assert_int_equal(fg_holder_mps_start(&m, &adopted, msg), FG_E_IO);
    assert_non_null(strstr(msg, "-d exited with 1: MPS is not supported on this GPU"));
    fg_holder_mps_cleanup(&m);
    unsetenv("FG_SIM_MPS_START_ERROR");

    init(&m, "/nonexistent/nvidia-cuda-mps-control");
    assert_int_equal(fg_holder_mps_start(&m, &adopted, msg), FG_E_IO);
    assert_non_null(strstr(msg, "not found"));
    fg_holder_mps_cleanup(&m);

    /* a control program that never answers is killed at its timeout */
    struct fg_mps_control c;
    fg_mps_control_init(&c, "sleep", "/tmp", "/tmp", NULL);
    struct fg_buf out = FG_BUF_INIT;
    int status = 0;
    assert_int_equal(fg_mps_control_run(&c, "10", NULL, 200, &out, &status, msg), FG_E_TIMEOUT);
    assert_non_null(strstr(msg, "did not finish within 200 ms"));
    /* and one that says no is an error that quotes it */
    fg_mps_control_cleanup(&c);
    fg_mps_control_init(&c, "false", "/tmp", "/tmp", NULL);
    assert_int_equal(fg_mps_control_command(&c, "get_server_list", 2000, &out, msg), FG_E_CONNECT);
    assert_non_null(strstr(msg, "exited with 1"));
    fg_mps_control_cleanup(&c);
    fg_buf_cleanup(&out);

    /* a bad root */
    const struct fg_mps_limits limits = { 25, 8192 };
    char file[128];
    snprintf(file, sizeof file, "%s/file", root);
    FILE *f = fopen(file, "w");
    fclose(f);
    assert_int_equal(fg_holder_mps_init(&m, file, "x", UUID, &limits, msg), FG_E_IO);
    assert_non_null(strstr(msg, "cannot create"));
    assert_int_equal(fg_holder_mps_init(&m, root, "x", "../x", &limits, msg), FG_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_daemon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
