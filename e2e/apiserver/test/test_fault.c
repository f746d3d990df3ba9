/* Fault injection over /fracgpu-test/, restarts in-process, and the state file across processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "client.h"

#define WAIT_MS 3000

static struct tc_server server;
static char state_path[256];
#define BASE server.base

static int setup(void **state)
{
    (void)state;
    snprintf(state_path, sizeof(state_path), "/tmp/fg-apiserver-test-%ld.state", (long)getpid());
    unlink(state_path);
    struct fg_apiserver_opts o = { .state_file = state_path };
    tc_server_start(&server, &o);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tc_server_stop(&server);
    unlink(state_path);
    return 0;
}

static json_object *admin(const char *path, long want_code)
{
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "POST", path, NULL, NULL, &r), CURLE_OK);
    if (r.code != want_code)
        fail_msg("%s: want %ld, got %ld %s", path, want_code, r.code, r.body);
    json_object *o = json_object_get(r.json);
    tc_reply_cleanup(&r);
    return o;
}

static int64_t admin_int(const char *path, const char *key)
{
    json_object *o = admin(path, 200);
    int64_t v = -1;
    assert_true(fg_json_get_int64(o, &v, key, NULL));
    json_object_put(o);
    return v;
}

static long get_code(const char *path)
{
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "GET", path, NULL, NULL, &r), CURLE_OK);
    long code = r.code;
    tc_reply_cleanup(&r);
    return code;
}

static void drop_and_expire_watches(void **state)
{
    (void)state;
    struct tc_watch w;
    tc_watch_start(&w, BASE, "/api/v1/namespaces?watch=true&resourceVersion=0", 20000);
    assert_true(tc_wait_watchers(BASE, 1));
    assert_int_equal(admin_int("/fracgpu-test/drop-watches", "dropped"), 1);
    assert_true(tc_watch_wait_done(&w, WAIT_MS));
    tc_watch_stop(&w);
    assert_true(tc_wait_watchers(BASE, 0));

    tc_watch_start(&w, BASE, "/api/v1/namespaces?watch=true&resourceVersion=0", 20000);
    assert_true(tc_wait_watchers(BASE, 1));
    for (int i = 0; i < 4; i++) /* default, kube-node-lease, kube-public, kube-system */
        json_object_put(tc_watch_next(&w, WAIT_MS));
    assert_int_equal(admin_int("/fracgpu-test/expire-watches", "expired"), 1);
    json_object *ev = tc_watch_next(&w, WAIT_MS);
    assert_non_null(ev);
    assert_string_equal(fg_json_get_str(ev, "type", NULL), "ERROR");
    int64_t code = 0;
    assert_true(fg_json_get_int64(ev, &code, "object", "code", NULL));
    assert_int_equal(code, 410);
    json_object_put(ev);
    assert_true(tc_watch_wait_done(&w, WAIT_MS));
    tc_watch_stop(&w);
}

static void injected_errors(void **state)
{
    (void)state;
    assert_int_equal(admin_int("/fracgpu-test/fail?count=2&code=429&retryAfter=3", "armed"), 2);
    for (int i = 0; i < 2; i++) {
        struct tc_reply r;
        assert_int_equal(tc_request(BASE, "GET", "/api/v1/namespaces", NULL, NULL, &r), CURLE_OK);
        assert_int_equal(r.code, 429);
        assert_string_equal(tc_reason(&r), "TooManyRequests");
        assert_string_equal(r.retry_after, "3");
        tc_reply_cleanup(&r);
        /* control paths are never failed */
        assert_int_equal(get_code("/fracgpu-test/stats"), 200);
    }
    assert_int_equal(get_code("/api/v1/namespaces"), 200);

    admin_int("/fracgpu-test/fail?count=1&code=500&method=POST&path=/api/v1/namespaces/default/configmaps", "armed");
    assert_int_equal(get_code("/api/v1/namespaces/default/configmaps"), 200);
    tc_create(BASE, "/api/v1/namespaces/default/pods", "{\"metadata\":{\"name\":\"unaffected\"}}");
    struct tc_reply r;
    assert_int_equal(tc_request(BASE, "POST", "/api/v1/namespaces/default/configmaps", NULL,
                                "{\"metadata\":{\"name\":\"cm\"}}", &r), CURLE_OK);
    assert_int_equal(r.code, 500);
    assert_string_equal(tc_reason(&r), "InternalError");
    tc_reply_cleanup(&r);
    tc_create(BASE, "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"cm\"}}");

    json_object_put(admin("/fracgpu-test/fail?count=x", 400));
    json_object_put(admin("/fracgpu-test/fail?code=200", 400));
    json_object_put(admin("/fracgpu-test/latency?ms=-5", 400));
    json_object_put(admin("/fracgpu-test/frobnicate", 404));
}

static void injected_latency(void **state)
{
    (void)state;
    assert_int_equal(admin_int("/fracgpu-test/latency?ms=300", "latencyMs"), 300);
    long t0 = tc_now_ms();
    assert_int_equal(get_code("/version"), 200);
    long slow = tc_now_ms() - t0;
    assert_true(slow >= 290);
    t0 = tc_now_ms();
    assert_int_equal(get_code("/fracgpu-test/stats"), 200);
    assert_true(tc_now_ms() - t0 < 250);
    admin_int("/fracgpu-test/latency?ms=0", "latencyMs");
    t0 = tc_now_ms();
    assert_int_equal(get_code("/version"), 200);
    assert_true(tc_now_ms() - t0 < 250);
}

static void delayed_requests_survive_restart_and_hangups(void **state)
{
    (void)state;
    admin_int("/fracgpu-test/latency?ms=2000", "latencyMs");
    /* a client that hangs up while its request waits out the latency */
    struct tc_watch gone;
    tc_watch_start(&gone, BASE, "/api/v1/namespaces", 20000);
    tc_sleep_ms(100);
    tc_watch_stop(&gone);
    /* a request still waiting when the server restarts: its connection closes with the rest */
    struct tc_watch waiting;
    long t0 = tc_now_ms();
    tc_watch_start(&waiting, BASE, "/version", 20000);
    tc_sleep_ms(100);
    json_object_put(admin("/fracgpu-test/restart?downMs=100", 200));
    assert_true(tc_watch_wait_done(&waiting, WAIT_MS));
    assert_true(tc_now_ms() - t0 < 1900); /* cut by the restart, not answered after the latency */
    tc_watch_stop(&waiting);
    long deadline = tc_now_ms() + 5000;
    struct tc_reply r;
    while (tc_request(BASE, "POST", "/fracgpu-test/latency?ms=0", NULL, NULL, &r) != CURLE_OK && tc_now_ms() < deadline) {
        tc_reply_cleanup(&r);
        tc_sleep_ms(50);
    }
    assert_int_equal(r.code, 200);
    tc_reply_cleanup(&r);
    tc_sleep_ms(2000); /* the hung-up request's timer fires with nobody listening */
    assert_int_equal(get_code("/version"), 200);
}

static void compaction_expires_old_rvs(void **state)
{
    (void)state;
    long rv = tc_create(BASE, "/api/v1/namespaces/default/pods", "{\"metadata\":{\"name\":\"compact\"}}");
    tc_create(BASE, "/api/v1/namespaces/default/pods", "{\"metadata\":{\"name\":\"compact2\"}}");
    assert_true(admin_int("/fracgpu-test/compact", "historyFloor") > rv);
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods?watch=true&resourceVersion=%ld", rv);
    struct tc_watch w;
    tc_watch_start(&w, BASE, path, 20000);
    json_object *ev = tc_watch_next(&w, WAIT_MS);
    assert_non_null(ev);
    assert_string_equal(fg_json_get_str(ev, "object", "reason", NULL), "Expired");
    json_object_put(ev);
    assert_true(tc_watch_wait_done(&w, WAIT_MS));
    tc_watch_stop(&w);
}

static void restart_keeps_data(void **state)
{
    (void)state;
    long rv = tc_create(BASE, "/api/v1/namespaces/default/pods", "{\"metadata\":{\"name\":\"survivor\"}}");
    struct tc_watch w;
    tc_watch_start(&w, BASE, "/api/v1/namespaces/default/pods?watch=true", 20000);
    assert_true(tc_wait_watchers(BASE, 1));
    json_object_put(admin("/fracgpu-test/restart?downMs=600", 200));
    assert_true(tc_watch_wait_done(&w, WAIT_MS)); /* the restart closed the watch */
    tc_watch_stop(&w);

    /* down: connections are refused */
    struct tc_reply r;
    tc_sleep_ms(100);
    assert_int_not_equal(tc_request(BASE, "GET", "/version", NULL, NULL, &r), CURLE_OK);
    tc_reply_cleanup(&r);
    /* back on the same port, bounded wait */
    long deadline = tc_now_ms() + 5000;
    CURLcode rc;
    while ((rc = tc_request(BASE, "GET", "/api/v1/namespaces/default/pods/survivor", NULL, NULL, &r)) != CURLE_OK &&
           tc_now_ms() < deadline) {
        tc_reply_cleanup(&r);
        tc_sleep_ms(50);
    }
    assert_int_equal(rc, CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_int_equal(atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL)), rv);
    tc_reply_cleanup(&r);
    /* the restart also wrote the state file */
    assert_int_equal(access(state_path, R_OK), 0);
    /* history is gone: watching from before the restart gets 410 */
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods?watch=true&resourceVersion=%ld", rv - 1);
    tc_watch_start(&w, BASE, path, 20000);
    json_object *ev = tc_watch_next(&w, WAIT_MS);
    assert_non_null(ev);
    assert_string_equal(fg_json_get_str(ev, "type", NULL), "ERROR");
    json_object_put(ev);
    tc_watch_stop(&w);
    assert_true(tc_create(BASE, "/api/v1/namespaces/default/pods", "{\"metadata\":{\"name\":\"after\"}}") > rv);
}

/* Starts the executable on port 0 and returns its pid; fills base from the line it prints. */
static pid_t spawn_server(const char *state, const char *kubeconfig, char *base, size_t cap)
{
    const char *bin_dir = getenv("FG_BIN_DIR");
    assert_non_null(bin_dir);
    char *bin = fg_asprintf("%s/fracgpu-test-apiserver", bin_dir);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = { bin, "--listen", "127.0.0.1:0", "--state-file", (char *)state, "--kubeconfig-out",
                     (char *)kubeconfig, "--log-level", "warn", NULL };
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, bin, &fa, NULL, argv, NULL), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[64] = "";
    assert_non_null(fgets(line, sizeof(line), f)); /* blocks until it listens; the test timeout bounds it */
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    assert_true(strncmp(line, "127.0.0.1:", 10) == 0);
    snprintf(base, cap, "http://%s", line);
    free(bin);
    return pid;
}

static void stop_process(pid_t pid)
{
    kill(pid, SIGTERM);
    int status = 0;
    long deadline = tc_now_ms() + 10000;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (tc_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("server did not exit on SIGTERM");
        }
        tc_sleep_ms(20);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void state_file_across_processes(void **state)
{
    (void)state;
    char st[256], kc[256], base[64];
    snprintf(st, sizeof(st), "/tmp/fg-apiserver-proc-%ld.state", (long)getpid());
    snprintf(kc, sizeof(kc), "/tmp/fg-apiserver-proc-%ld.kubeconfig", (long)getpid());
    unlink(st);
    pid_t pid = spawn_server(st, kc, base, sizeof(base));

    struct fg_buf b = FG_BUF_INIT;
    assert_int_equal(fg_buf_read_file(&b, kc, NULL), FG_OK);
    json_object *cfg = NULL;
    assert_int_equal(fg_json_parse(b.data, b.len, 0, &cfg, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(cfg, "current-context", NULL), "fracgpu-test");
    json_object *cluster = json_object_array_get_idx(fg_json_get(cfg, "clusters", NULL), 0);
    assert_string_equal(fg_json_get_str(cluster, "cluster", "server", NULL), base);
    json_object_put(cfg);
    fg_buf_cleanup(&b);

    tc_create(base, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"kept\"}}");
    long rv = tc_create(base, "/apis/apps/v1/namespaces/kept/deployments", "{\"metadata\":{\"name\":\"d\"}}");
    struct tc_reply r;
    assert_int_equal(tc_request(base, "GET", "/apis/apps/v1/namespaces/kept/deployments/d", NULL, NULL, &r), CURLE_OK);
    char *uid = fg_strdup(fg_json_get_str(r.json, "metadata", "uid", NULL));
    tc_reply_cleanup(&r);
    stop_process(pid);

    pid = spawn_server(st, kc, base, sizeof(base));
    assert_int_equal(tc_request(base, "GET", "/apis/apps/v1/namespaces/kept/deployments/d", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(fg_json_get_str(r.json, "metadata", "uid", NULL), uid);
    assert_int_equal(atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL)), rv);
    tc_reply_cleanup(&r);
    assert_true(tc_create(base, "/api/v1/namespaces/kept/pods", "{\"metadata\":{\"name\":\"p\"}}") > rv);
    stop_process(pid);
    free(uid);
    unlink(st);
    unlink(kc);
}

static void save_state_between_instances(void **state)
{
    (void)state;
    char st[256];
    snprintf(st, sizeof(st), "/tmp/fg-apiserver-inproc-%ld.state", (long)getpid());
    unlink(st);
    struct fg_apiserver_opts o = { .state_file = st };
    struct tc_server s;
    tc_server_start(&s, &o);
    long rv = tc_create(s.base, "/api/v1/namespaces/default/secrets", "{\"metadata\":{\"name\":\"s\"}}");
    fg_apiserver_stop(s.srv);
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_apiserver_save_state(s.srv, msg), FG_OK);
    tc_server_stop(&s);
    tc_server_start(&s, &o);
    struct tc_reply r;
    assert_int_equal(tc_request(s.base, "GET", "/api/v1/namespaces/default/secrets/s", NULL, NULL, &r), CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_int_equal(atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL)), rv);
    tc_reply_cleanup(&r);
    /* the list revision continues from the saved one */
    assert_int_equal(tc_request(s.base, "GET", "/api/v1/namespaces", NULL, NULL, &r), CURLE_OK);
    assert_true(atol(fg_json_get_str(r.json, "metadata", "resourceVersion", NULL)) >= rv);
    tc_reply_cleanup(&r);
    tc_server_stop(&s);
    unlink(st);
    /* without a state file there is nothing to save to */
    tc_server_start(&s, NULL);
    fg_apiserver_stop(s.srv);
    assert_int_equal(fg_apiserver_save_state(s.srv, msg), FG_E_INVAL);
    tc_server_stop(&s);
}

static void oversized_body_beyond_every_limit(void **state)
{
    (void)state;
    /* Far past the 3 MiB limit and past libevent's own cap: refused, and the server keeps serving. */
    size_t n = 20u << 20;
    char *huge = fg_malloc(n + 64);
    strcpy(huge, "{\"metadata\":{\"name\":\"huge\"},\"data\":\"");
    size_t off = strlen(huge);
    memset(huge + off, 'x', n);
    strcpy(huge + off + n, "\"}");
    struct tc_reply r;
    CURLcode rc = tc_request(BASE, "POST", "/api/v1/namespaces/default/configmaps", NULL, huge, &r);
    assert_true(rc != CURLE_OK || r.code == 413);
    tc_reply_cleanup(&r);
    free(huge);
    assert_int_equal(get_code("/api/v1/namespaces/default/configmaps/huge"), 404);
    assert_int_equal(get_code("/version"), 200);
}

static void corrupt_state_file_is_refused(void **state)
{
    (void)state;
    char st[256];
    snprintf(st, sizeof(st), "/tmp/fg-apiserver-bad-%ld.state", (long)getpid());
    FILE *f = fopen(st, "w");
    assert_non_null(f);
    fputs("{\"resourceVersion\":\"5\",\"resources\":{\"v1/widgets\":[]}}", f);
    fclose(f);
    struct fg_apiserver_opts o = { .state_file = st };
    struct fg_apiserver *srv = NULL;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_apiserver_new(&o, &srv, msg), FG_E_PARSE);
    assert_null(srv);
    assert_non_null(strstr(msg, "widgets"));
    f = fopen(st, "w");
    fputs("{not json", f);
    fclose(f);
    assert_int_equal(fg_apiserver_new(&o, &srv, msg), FG_E_PARSE);
    unlink(st);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(drop_and_expire_watches),
        cmocka_unit_test(injected_errors),
        cmocka_unit_test(injected_latency),
        cmocka_unit_test(delayed_requests_survive_restart_and_hangups),
        cmocka_unit_test(compaction_expires_old_rvs),
        cmocka_unit_test(restart_keeps_data),
        cmocka_unit_test(state_file_across_processes),
        cmocka_unit_test(save_state_between_instances),
        cmocka_unit_test(oversized_body_beyond_every_limit),
        cmocka_unit_test(corrupt_state_file_is_refused),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
