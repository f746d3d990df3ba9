/* holder_env — the capacity holder's process tests' cluster, pods and processes; see holder_env.h. */
#include "holder_env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "exporter/nvml.h"
#include "exporter/test/fake_state.h"

extern char **environ;

void holder_sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

void holder_env_start(struct holder_env *e)
{
    memset(e, 0, sizeof *e);
    fg_log_set_level(FG_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fg_test_fake_dir(e->dir);
    snprintf(e->mps_root, sizeof e->mps_root, "%s/mps", e->dir);
    unsetenv("FG_FAKE_NVML_VISIBLE");
    unsetenv("FG_SIM_MPS_START_ERROR");
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&e->h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    assert_int_equal(fg_harness_namespace(&e->h, HOLDER_NS), FG_OK);
}

void holder_env_stop(struct holder_env *e)
{
    fg_harness_stop(&e->h);
    unsetenv("FG_FAKE_NVML_VISIBLE");
    unsetenv("FG_SIM_MPS_START_ERROR");
    fg_test_fake_rm(e->dir);
    curl_global_cleanup();
}

void holder_pod_create(struct holder_env *e, const char *name, const char *annotations)
{
    char *json = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"" HOLDER_NS "\","
        "\"labels\":{\"fracgpu.io/role\":\"capacity\"},\"annotations\":{%s}},"
        "\"spec\":{\"nodeName\":\"gpu-node-1\",\"containers\":[{\"name\":\"holder\",\"image\":\"fracgpu\","
        "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}", name, annotations);
    json_object *obj = NULL;
    assert_int_equal(fg_json_parse(json, strlen(json), 0, &obj, NULL), FG_OK);
    assert_int_equal(fg_kube_create(e->h.client, "/api/v1/namespaces/" HOLDER_NS "/pods", obj, NULL, NULL), FG_OK);
    json_object_put(obj);
    free(json);
}

char *holder_pod_annotation(struct holder_env *e, const char *name, const char *key)
{
    char *path = fg_asprintf("/api/v1/namespaces/" HOLDER_NS "/pods/%s", name);
    json_object *pod = NULL;
    char *v = NULL;
    if (fg_kube_get(e->h.client, path, &pod, NULL) == FG_OK) {
        const char *s = fg_json_get_str(pod, "metadata", "annotations", key, NULL);
        v = s ? fg_strdup(s) : NULL;
    }
    json_object_put(pod);
    free(path);
    return v;
}

void holder_spawn(struct holder_env *e, struct holder_proc *p, const char *name, ...)
{
    static unsigned n;
    snprintf(p->log, sizeof p->log, "%s/%s-%u.log", e->dir, name, ++n);
    const char *argv[40] = { FG_FRACGPU, "capacity-holder", "--kubeconfig", e->h.kubeconfig, "--pod-name", name,
                             "--pod-namespace", HOLDER_NS, "--nvml-lib", FG_FAKE_NVML_PATH,
                             "--mps-root", e->mps_root, "--mps-control", FG_SIM_MPS_CONTROL };
    size_t k = 14;
    bool listen = false, interval = false;
    va_list ap;
    va_start(ap, name);
    for (const char *a; (a = va_arg(ap, const char *)) && k < 36;) {
        listen = listen || !strcmp(a, "--listen");
        interval = interval || !strcmp(a, "--mps-health-interval");
        argv[k++] = a;
    }
    va_end(ap);
    if (!listen) {
        argv[k++] = "--listen";
        argv[k++] = "127.0.0.1:0";
    }
    if (!interval) {
        argv[k++] = "--mps-health-interval";
        argv[k++] = "200ms";
    }
    argv[k] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    assert_int_equal(posix_spawn(&p->pid, FG_FRACGPU, &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
}

static int status_of(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int holder_wait_exit(struct holder_proc *p, unsigned timeout_ms)
{
    int st = 0;
    for (unsigned t = 0; t <= timeout_ms; t += 10) {
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            return status_of(st);
        }
        holder_sleep_ms(10);
    }
    return -1;
}

int holder_term(struct holder_proc *p, unsigned *elapsed_ms)
{
    uint64_t t0 = fg_clock_real_ns();
    kill(p->pid, SIGTERM);
    int status = holder_wait_exit(p, 10000);
    *elapsed_ms = (unsigned)((fg_clock_real_ns() - t0) / FG_NS_PER_MS);
    if (status < 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        p->pid = 0;
    }
    return status;
}

char *holder_log(struct holder_proc *p)
{
    struct fg_buf b = FG_BUF_INIT;
    if (fg_buf_read_file(&b, p->log, NULL) != FG_OK)
        fg_buf_reset(&b);
    return fg_buf_take(&b);
}

bool holder_log_has(struct holder_proc *p, const char *text, unsigned timeout_ms)
{
    for (unsigned t = 0;; t += 20) {
        char *log = holder_log(p);
        bool has = strstr(log, text) != NULL;
        free(log);
        if (has || t >= timeout_ms)
            return has;
        holder_sleep_ms(20);
    }
}

unsigned holder_port(struct holder_proc *p)
{
    return fg_test_exporter_port(p->log);
}

int holder_compute_mode(const char *uuid)
{
    struct fg_nvml nv;
    char msg[FG_ERRMSG_MAX] = "";
    const char *visible = getenv("FG_FAKE_NVML_VISIBLE");
    char *saved = visible ? fg_strdup(visible) : NULL;
    unsetenv("FG_FAKE_NVML_VISIBLE");   /* the node's view: every GPU */
    if (fg_nvml_open(FG_FAKE_NVML_PATH, &nv, msg) != FG_OK)
        fail_msg("NVML: %s", msg);
    if (saved) {
        setenv("FG_FAKE_NVML_VISIBLE", saved, 1);
        free(saved);
    }
    unsigned n = 0;
    int mode = -1;
    assert_int_equal(nv.get_count(&n), NVML_SUCCESS);
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t dev;
        char u[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        nvmlComputeMode_t m;
        if (nv.get_handle(i, &dev) == NVML_SUCCESS && nv.get_uuid(dev, u, sizeof u) == NVML_SUCCESS &&
            !strcmp(u, uuid) && nv.get_compute_mode(dev, &m) == NVML_SUCCESS)
            mode = (int)m;
    }
    fg_nvml_close(&nv);
    return mode;
}

json_object *holder_mps_limits(struct holder_env *e, const char *uuid)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/pipe/fracgpu-sim-limits.json", e->mps_root, uuid);
    return access(path, F_OK) == 0 ? json_object_from_file(path) : NULL;
}
