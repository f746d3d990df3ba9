/*
 * test_e2e — the exporter as a process (`fracgpu node-agent`): the test API server holds this node's pods (one with no GPU
 * request), the fake NVML reports their processes, a fake proc tree maps PIDs to pods through
 * several cgroup formats, and the test checks /metrics and /healthz, runs promtool on the scrape,
 * has a real Prometheus scrape the exporter and finds the per-pod series through its query API, then
 * breaks NVML under the running exporter and stops it with SIGTERM (a clean exit, ASan included).
 * With --dcgm-aliases the DCGM families are per GPU: a GPU of two pods, of one pod, a MIG instance and
 * an idle GPU each once. A second exporter sees MPS GPUs: servers in capacity pods, clients of one
 * pod and of two. A third starts without NVML: alive (/healthz 200) but not ready (/readyz 503 naming
 * why) until the library appears, the driver loads and a device count succeeds.
 * Every wait is bounded; every server listens on 127.0.0.1 with a port picked by the kernel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "e2e/tests/harness.h"
#include "fake_state.h"

extern char **environ;

#define NODE "gpu-node-1"
#define CID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define CID_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static struct fg_harness h;
static char dir[64];
static pid_t exporter_pid, prometheus_pid;   /* killed by the teardown when a check failed first */

/* GET url into body; returns the HTTP status (0 on transport failure). */
static long http_get(const char *url, struct fg_buf *body)
{
    fg_buf_reset(body);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fg_test_curl_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return code;
}

/* Polls url every 100 ms until it answers `code` with a body that contains want; bounded. */
static bool wait_for_code(const char *url, long code, const char *want, unsigned timeout_ms, struct fg_buf *body)
{
    for (unsigned t = 0; t < timeout_ms; t += 100) {
        if (http_get(url, body) == code && strstr(fg_buf_str(body), want))
            return true;
        fg_test_sleep_ms(100);
    }
    return false;
}

static bool wait_for(const char *url, const char *want, unsigned timeout_ms, struct fg_buf *body)
{
    return wait_for_code(url, 200, want, timeout_ms, body);
}

/* Creates a pod on `node` with one container and its status; returns its UID (caller frees). */
static char *make_pod(const char *ns, const char *name, const char *node, const char *container, const char *cid)
{
    char json[1024], path[256];
    snprintf(json, sizeof json,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"%s\",\"image\":\"cuda\"}]}}",
             name, ns, node, container);
    json_object *obj = NULL, *out = NULL;
    assert_int_equal(fg_json_parse(json, strlen(json), 0, &obj, NULL), FG_OK);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    assert_int_equal(fg_kube_create(h.client, path, obj, &out, NULL), FG_OK);
    char *uid = strdup(fg_json_get_str(out, "metadata", "uid", NULL));
    json_object_put(obj);
    json_object_put(out);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/status", ns, name);
    snprintf(json, sizeof json,
             "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"%s\",\"containerID\":"
             "\"containerd://%s\",\"ready\":true,\"restartCount\":0,\"image\":\"cuda\",\"imageID\":\"\"}]}}",
             container, cid);
    assert_int_equal(fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE, json, NULL, NULL), FG_OK);
    return uid;
}

/* Lines of text starting with prefix. */
static size_t count_lines(const char *text, const char *prefix)
{
    size_t n = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n += strncmp(l, prefix, strlen(prefix)) == 0;
    return n;
}

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static pid_t spawn(char *const argv[], const char *log_path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* SIGTERM, then up to timeout_ms for the exit; SIGKILL after that. Returns the wait status. */
static int stop(pid_t pid, unsigned timeout_ms)
{
    kill(pid, SIGTERM);
    int st = 0;
    for (unsigned t = 0; t < timeout_ms; t += 50) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        fg_test_sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

static void read_file(const char *path, struct fg_buf *b)
{
    fg_buf_reset(b);
    assert_int_equal(fg_buf_read_file(b, path, NULL), FG_OK);
}

/* The test API server, a client of it, and a fake NVML and proc tree in dir. */
static void start_cluster(void)
{
    fg_log_set_level(FG_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fg_test_fake_dir(dir);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
}

static void stop_cluster(void)
{
    fg_harness_stop(&h);
    fg_test_fake_rm(dir);
    curl_global_cleanup();
}

/* Starts `fracgpu node-agent` on them (exporter_pid) with NVML from nvml_lib, sampling every 200 ms,
 * logging to log_path (128 bytes); returns the port it serves on. */
static unsigned start_exporter(const char *nvml_lib, bool dcgm_aliases, char *log_path)
{
    char proc_root[96];
    snprintf(proc_root, sizeof proc_root, "%s/proc", dir);
    snprintf(log_path, 128, "%s/exporter.log", dir);
    char *const argv[] = { FG_FRACGPU, "node-agent", "--node-name", NODE, "--kubeconfig", h.kubeconfig,
                           "--nvml-lib", (char *)nvml_lib, "--proc-root", proc_root, "--listen", "127.0.0.1:0",
                           "--interval", "200ms", dcgm_aliases ? "--dcgm-aliases" : NULL, NULL };
    exporter_pid = spawn(argv, log_path);
    unsigned port = fg_test_exporter_port(log_path);
    assert_true(port > 0);
    return port;
}

static void prometheus_check(unsigned port, struct fg_buf *body)
{
    if (access("/usr/bin/prometheus", X_OK) != 0) {
        fprintf(stderr, "prometheus not installed: the scrape check is skipped\n");
        return;
    }
    char cfg[128], data[128], log[128], listen[64], url[256];
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", dir);
    snprintf(data, sizeof data, "--storage.tsdb.path=%s/tsdb", dir);
    snprintf(log, sizeof log, "%s/prometheus.log", dir);
    uint16_t pport = free_port();
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%u", pport);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
               "  - job_name: fracgpu-exporter\n    static_configs:\n      - targets: ['127.0.0.1:%u']\n", port);
    fclose(f);
    char cfgarg[160];
    snprintf(cfgarg, sizeof cfgarg, "--config.file=%s", cfg);
    char *const argv[] = { "/usr/bin/prometheus", cfgarg, data, listen, "--log.level=warn", NULL };
    pid_t pid = prometheus_pid = spawn(argv, log);
    snprintf(url, sizeof url,
             "http://127.0.0.1:%u/api/v1/query?query=fracgpu_pod_gpu_memory_used_bytes%%7Bpod%%3D%%22trainer-0%%22%%7D",
             pport);
    bool found = wait_for(url, "\"pod\":\"trainer-0\"", 30000, body);
    if (found) {
        assert_non_null(strstr(fg_buf_str(body), "\"namespace\":\"ml\""));
        assert_non_null(strstr(fg_buf_str(body), "\"container\":\"trainer\""));
        assert_non_null(strstr(fg_buf_str(body), "\"node\":\"" NODE "\""));
        assert_non_null(strstr(fg_buf_str(body), "\"1073741824\""));
    }
    snprintf(url, sizeof url,
             "http://127.0.0.1:%u/api/v1/query?query=count(fracgpu_pod_gpu_utilization_ratio%%7Bnamespace%%3D%%22ml%%22%%7D)",
             pport);
    bool counted = found && wait_for(url, "\"value\":[", 5000, body);
    stop(pid, 10000);
    prometheus_pid = 0;
    if (!found || !counted) {
        struct fg_buf l;
        fg_buf_init(&l, 0);
        read_file(log, &l);
        fprintf(stderr, "prometheus log:\n%s\nlast reply: %s\n", fg_buf_str(&l), fg_buf_str(body));
        fg_buf_cleanup(&l);
        fail_msg("Prometheus did not return the per-pod series");
    }
}

static void test_exporter_process(void **state)
{
    (void)state;
    start_cluster();
    assert_int_equal(fg_harness_namespace(&h, "ml"), FG_OK);

    char *uid_a = make_pod("ml", "trainer-0", NODE, "trainer", CID_A);        /* holds no GPU request */
    char *uid_b = make_pod("default", "notebook", NODE, "jupyter", CID_B);
    char *uid_c = make_pod("ml", "elsewhere", "other-node", "x", CID_C);     /* not this node's */

    char cg[512], uid_us[40];
    snprintf(uid_us, sizeof uid_us, "%s", uid_a);
    for (char *p = uid_us; *p; p++)
        *p = *p == '-' ? '_' : *p;
    snprintf(cg, sizeof cg, "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/"
                            "cri-containerd-" CID_A ".scope\n", uid_us);
    fg_test_fake_cgroup(dir, 100, cg);
    fg_test_fake_cgroup(dir, 101, cg);   /* a second process of the same container */
    snprintf(cg, sizeof cg, "11:memory:/kubepods/burstable/pod%s/" CID_B "\n", uid_b);
    fg_test_fake_cgroup(dir, 102, cg);
    fg_test_fake_cgroup(dir, 107, cg);   /* the same container, on a MIG instance of GPU 1 */
    snprintf(cg, sizeof cg, "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/"
                            "cri-containerd-" CID_A ".scope\n", uid_us);
    fg_test_fake_cgroup(dir, 109, cg);   /* trainer-0 alone on GPU 3 */
    snprintf(cg, sizeof cg, "0::/kubepods/pod%s/" CID_C "\n", uid_c);
    fg_test_fake_cgroup(dir, 103, cg);
    fg_test_fake_cgroup(dir, 104, "0::/system.slice/nvidia-persistenced.service\n");
    fg_test_fake_cgroup(dir, 105, "\xff\xfe garbage \x01\n");
    /* 106 has exited: no /proc entry; 108's cgroup cannot be read (a directory, whoever reads it) */
    char d108[160];
    snprintf(d108, sizeof d108, "%s/proc/108", dir);
    mkdir(d108, 0755);
    snprintf(d108, sizeof d108, "%s/proc/108/cgroup", dir);
    mkdir(d108, 0755);
    fg_test_fake_state(dir,
        "{\"gpus\":[{\"uuid\":\"GPU-e2e\",\"name\":\"NVIDIA A100-SXM4-40GB\",\"total\":42949672960,"
        "\"used\":3221225472,\"reserved\":536870912,\"util\":64,\"procs\":["
        "{\"pid\":100,\"used\":536870912},{\"pid\":101,\"used\":536870912},{\"pid\":102,\"used\":1048576},"
        "{\"pid\":103,\"used\":2097152},{\"pid\":104,\"used\":4194304},{\"pid\":105,\"used\":1},{\"pid\":106,\"used\":1},"
        "{\"pid\":108,\"used\":1}],"
        "\"samples\":[{\"pid\":100,\"ts\":0,\"sm\":30},{\"pid\":101,\"ts\":0,\"sm\":20},{\"pid\":102,\"ts\":0,\"sm\":5}]},"
        "{\"uuid\":\"GPU-mig\",\"name\":\"NVIDIA H100 80GB HBM3\",\"total\":85899345920,\"gpm\":true,"
        "\"procs\":[{\"pid\":107,\"used\":2048,\"gi\":1,\"ci\":0}],"
        "\"mig\":[{\"gi\":1,\"uuid\":\"MIG-e2e\",\"total\":10737418240,\"used\":4096,\"sm\":77}]},"
        "{\"uuid\":\"GPU-idle\",\"name\":\"NVIDIA L4\",\"total\":24152899584,\"used\":0,\"reserved\":0,\"util\":0},"
        "{\"uuid\":\"GPU-solo\",\"name\":\"NVIDIA L4\",\"total\":24152899584,\"used\":536870912,\"reserved\":0,"
        "\"util\":90,\"procs\":[{\"pid\":109,\"used\":536870912}]}]}");

    char log_path[128];
    unsigned port = start_exporter(FG_FAKE_NVML_PATH, true, log_path);

    struct fg_buf body;
    fg_buf_init(&body, 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/healthz", port);
    assert_int_equal(http_get(url, &body), 200);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/nope", port);
    assert_int_equal(http_get(url, &body), 404);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", port);
    assert_true(wait_for(url, "pod=\"notebook\"", 10000, &body));
    assert_true(wait_for(url, "pod=\"trainer-0\"", 10000, &body));
    /* MIG with GPM: the instance's SM activity is its only pod's, from the second sample on */
    assert_true(wait_for(url, "fracgpu_pod_gpu_utilization_ratio{node=\"" NODE "\",gpu=\"1\",uuid=\"MIG-e2e\","
                              "model=\"NVIDIA H100 80GB HBM3\",gpu_instance=\"1\",namespace=\"default\",pod=\"notebook\","
                              "container=\"jupyter\"} 0.77\n", 10000, &body));
    const char *t = fg_buf_str(&body);
    assert_non_null(strstr(t, "fracgpu_pod_gpu_memory_used_bytes{node=\"" NODE "\",gpu=\"0\",uuid=\"GPU-e2e\","
                              "model=\"NVIDIA A100-SXM4-40GB\",namespace=\"ml\",pod=\"trainer-0\",container=\"trainer\"} "
                              "1073741824\n"));
    assert_non_null(strstr(t, "fracgpu_pod_gpu_utilization_ratio{node=\"" NODE "\",gpu=\"0\",uuid=\"GPU-e2e\","
                              "model=\"NVIDIA A100-SXM4-40GB\",namespace=\"ml\",pod=\"trainer-0\",container=\"trainer\"} "
                              "0.5\n"));
    assert_non_null(strstr(t, "namespace=\"default\",pod=\"notebook\",container=\"jupyter\"} 1048576\n"));
    assert_null(strstr(t, "pod=\"elsewhere\""));   /* another node's pod is not known here */
    /* host process, the other node's pod and the unreadable ones: one row without pod labels */
    assert_non_null(strstr(t, "model=\"NVIDIA A100-SXM4-40GB\"} 6291459\n"));
    /* DCGM aliases, one series per GPU: GPU 0 runs two pods (and host processes), so it names none */
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-e2e\",device=\"nvidia0\","
                              "modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"" NODE "\"} 3072\n"));
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-e2e\",device=\"nvidia0\","
                              "modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"" NODE "\"} 64\n"));
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-e2e\",device=\"nvidia0\","
                              "modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"" NODE "\"} 37376\n"));
    /* GPU 1 in MIG mode: its instance alone, under the GPU's UUID, with its one pod */
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-mig\",device=\"nvidia1\","
                              "modelName=\"NVIDIA H100 80GB HBM3\",GPU_I_ID=\"1\",Hostname=\"" NODE "\","
                              "namespace=\"default\",pod=\"notebook\",container=\"jupyter\"} 0\n"));
    /* GPU 2 is idle and served all the same; GPU 3 runs trainer-0 alone, which it names */
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-idle\",device=\"nvidia2\","
                              "modelName=\"NVIDIA L4\",Hostname=\"" NODE "\"} 0\n"));
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_FB_FREE{gpu=\"2\",UUID=\"GPU-idle\",device=\"nvidia2\","
                              "modelName=\"NVIDIA L4\",Hostname=\"" NODE "\"} 23034\n"));
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_GPU_UTIL{gpu=\"3\",UUID=\"GPU-solo\",device=\"nvidia3\","
                              "modelName=\"NVIDIA L4\",Hostname=\"" NODE "\",namespace=\"ml\",pod=\"trainer-0\","
                              "container=\"trainer\"} 90\n"));
    assert_non_null(strstr(t, "\nDCGM_FI_DEV_FB_USED{gpu=\"3\",UUID=\"GPU-solo\",device=\"nvidia3\","
                              "modelName=\"NVIDIA L4\",Hostname=\"" NODE "\",namespace=\"ml\",pod=\"trainer-0\","
                              "container=\"trainer\"} 512\n"));
    assert_int_equal(count_lines(t, "DCGM_FI_DEV_FB_USED{"), 4);
    assert_int_equal(count_lines(t, "DCGM_FI_DEV_FB_FREE{"), 4);
    assert_int_equal(count_lines(t, "DCGM_FI_DEV_GPU_UTIL{"), 3);   /* none for a MIG instance */
    assert_non_null(strstr(t, "fracgpu_gpu_memory_reserved_bytes{node=\"" NODE "\",gpu=\"0\",uuid=\"GPU-e2e\","
                              "model=\"NVIDIA A100-SXM4-40GB\"} 536870912\n"));
    assert_non_null(strstr(t, "fracgpu_exporter_unattributed_processes{node=\"" NODE "\"} 3\n"));
    assert_non_null(strstr(t, "fracgpu_exporter_pods_synced{node=\"" NODE "\"} 1\n"));

    /* promtool on what was served */
    char path[128];
    snprintf(path, sizeof path, "%s/scrape.txt", dir);
    FILE *f = fopen(path, "w");
    fputs(t, f);
    fclose(f);
    /* fracgpu's own families pass clean; the DCGM aliases keep DCGM's label names (UUID, modelName,
     * Hostname) for its dashboards, and the only thing promtool may say about them is that lint */
    char cmd[512];
    if (access("/usr/bin/promtool", X_OK) == 0) {
        snprintf(cmd, sizeof cmd, "grep -v DCGM_FI_ %s | promtool check metrics", path);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1 | grep -v "
                 "\"^DCGM_FI_DEV_[A-Z_]* label names should be written in 'snake_case' not 'camelCase'$\"", path);
        assert_int_not_equal(system(cmd), 0);   /* grep found no other line */
    }

    prometheus_check(port, &body);

    /* NVML breaks under the running exporter: still serving, health says so, a clear log line */
    fg_test_fake_state(dir, "{\"count_error\":\"gpu_is_lost\",\"gpus\":[]}");
    assert_true(wait_for(url, "fracgpu_exporter_nvml_up{node=\"" NODE "\"} 0\n", 5000, &body));
    assert_null(strstr(fg_buf_str(&body), "pod=\"trainer-0\""));
    fg_test_fake_state(dir, "{\"gpus\":[{\"uuid\":\"GPU-e2e\",\"error\":\"gpu_is_lost\"}]}");
    assert_true(wait_for(url, "fracgpu_exporter_nvml_up{node=\"" NODE "\"} 1\n", 5000, &body));
    snprintf(url, sizeof url, "http://127.0.0.1:%u/healthz", port);
    assert_int_equal(http_get(url, &body), 200);

    int st = stop(exporter_pid, 10000);
    exporter_pid = 0;
    struct fg_buf log;
    fg_buf_init(&log, 0);
    read_file(log_path, &log);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        fail_msg("exporter did not exit cleanly (status %d); log:\n%s", st, fg_buf_str(&log));
    assert_non_null(strstr(fg_buf_str(&log), "NVML unavailable"));
    assert_non_null(strstr(fg_buf_str(&log), "GPU is lost"));
    assert_non_null(strstr(fg_buf_str(&log), "pid 105: cannot tell its pod"));
    assert_non_null(strstr(fg_buf_str(&log), "pid 108: cannot tell its pod"));
    fg_buf_cleanup(&log);
    fg_buf_cleanup(&body);
    free(uid_a);
    free(uid_b);
    free(uid_c);
    stop_cluster();
}

/* Writes pid's cgroup file: a container of pod uid, systemd driver, containerd. */
static void pod_cgroup(unsigned pid, const char *uid, const char *cid)
{
    char cg[512], uid_us[40];
    snprintf(uid_us, sizeof uid_us, "%s", uid);
    for (char *p = uid_us; *p; p++)
        *p = *p == '-' ? '_' : *p;
    snprintf(cg, sizeof cg, "0::/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%s.scope\n", uid_us, cid);
    fg_test_fake_cgroup(dir, pid, cg);
}

#define MPS_SERIES(family, gpu, uuid) family "{node=\"" NODE "\",gpu=\"" gpu "\",uuid=\"" uuid "\",model=\"NVIDIA H100\""

/* MPS GPUs: each server runs in its capacity pod; its memory is reported apart and never as that
 * pod's, and the device's utilization goes to the pod of its clients when there is one such pod. */
static void test_mps(void **state)
{
    (void)state;
    start_cluster();
    assert_int_equal(fg_harness_namespace(&h, "serve"), FG_OK);
    assert_int_equal(fg_harness_namespace(&h, "fracgpu-system"), FG_OK);
    char *uids[5];
    static const char *const pods[5][3] = {
        { "fracgpu-system", "capacity-a", "holder" }, { "fracgpu-system", "capacity-b", "holder" },
        { "serve", "llm-0", "server" }, { "serve", "llm-1", "server" }, { "serve", "llm-2", "server" },
    };
    static const char *const cids[5] = { CID_A, CID_B, CID_C,
                                         "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
                                         "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee" };
    for (int i = 0; i < 5; i++)
        uids[i] = make_pod(pods[i][0], pods[i][1], NODE, pods[i][2], cids[i]);
    /* GPU 0: capacity-a's server (300) serves llm-0's two clients (302 is in both of NVML's lists);
     * GPU 1: capacity-b's server serves llm-1 and llm-2; GPU 2: capacity-a's idle server, no client.
     * 303, not a client, only has a name like the server's. */
    static const unsigned servers[] = { 300, 310, 320 };
    for (int i = 0; i < 3; i++) {
        pod_cgroup(servers[i], uids[i == 1], cids[i == 1]);
        fg_test_fake_cmdline(dir, servers[i], "/usr/bin/nvidia-cuda-mps-server", "-d");
    }
    pod_cgroup(301, uids[2], cids[2]);
    pod_cgroup(302, uids[2], cids[2]);
    pod_cgroup(303, uids[2], cids[2]);
    fg_test_fake_cmdline(dir, 303, "/opt/nvidia-cuda-mps-server-probe", "x");
    pod_cgroup(311, uids[3], cids[3]);
    pod_cgroup(312, uids[4], cids[4]);
    fg_test_fake_state(dir,
        "{\"gpus\":[{\"uuid\":\"GPU-mps-1\",\"name\":\"NVIDIA H100\",\"total\":85899345920,\"used\":2000000000,"
        "\"util\":55,\"procs\":[{\"pid\":300,\"used\":314572800},{\"pid\":302,\"used\":536870912},"
        "{\"pid\":303,\"used\":1048576}],"
        "\"mps_procs\":[{\"pid\":301,\"used\":1073741824},{\"pid\":302,\"used\":536870912}],"
        "\"samples\":[{\"pid\":300,\"ts\":0,\"sm\":40}]},"
        "{\"uuid\":\"GPU-mps-2\",\"name\":\"NVIDIA H100\",\"total\":85899345920,\"used\":3500000000,"
        "\"util\":80,\"procs\":[{\"pid\":310,\"used\":268435456}],"
        "\"mps_procs\":[{\"pid\":311,\"used\":1073741824},{\"pid\":312,\"used\":2147483648}],"
        "\"samples\":[{\"pid\":310,\"ts\":0,\"sm\":80}]},"
        "{\"uuid\":\"GPU-mps-3\",\"name\":\"NVIDIA H100\",\"total\":85899345920,\"used\":134217728,"
        "\"procs\":[{\"pid\":320,\"used\":134217728}]}]}");

    char log_path[128];
    unsigned port = start_exporter(FG_FAKE_NVML_PATH, false, log_path);
    struct fg_buf body;
    fg_buf_init(&body, 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", port);
    /* A sample taken while the pod watch is still listing may know some pods and not others: wait for
     * one that was taken after it had listed them all. */
    assert_true(wait_for(url, "fracgpu_exporter_pods_synced{node=\"" NODE "\"} 1\n", 10000, &body));
    const char *t = fg_buf_str(&body);
    /* one pod's clients: its memory once per process, the device's utilization (not the server's 0.40) */
    assert_non_null(strstr(t, MPS_SERIES("fracgpu_pod_gpu_memory_used_bytes", "0", "GPU-mps-1")
                              ",namespace=\"serve\",pod=\"llm-0\",container=\"server\"} 1611661312\n"));
    assert_non_null(strstr(t, MPS_SERIES("fracgpu_pod_gpu_utilization_ratio", "0", "GPU-mps-1")
                              ",namespace=\"serve\",pod=\"llm-0\",container=\"server\"} 0.55\n"));
    /* two pods' clients: memory each, no utilization share invented */
    assert_non_null(strstr(t, MPS_SERIES("fracgpu_pod_gpu_memory_used_bytes", "1", "GPU-mps-2")
                              ",namespace=\"serve\",pod=\"llm-1\",container=\"server\"} 1073741824\n"));
    assert_non_null(strstr(t, MPS_SERIES("fracgpu_pod_gpu_memory_used_bytes", "1", "GPU-mps-2")
                              ",namespace=\"serve\",pod=\"llm-2\",container=\"server\"} 2147483648\n"));
    assert_null(strstr(t, "fracgpu_pod_gpu_utilization_ratio{node=\"" NODE "\",gpu=\"1\""));
    /* the servers' memory: apart, per device, and never the capacity pods' */
    assert_non_null(strstr(t, MPS_SERIES("fracgpu_gpu_mps_server_memory_bytes", "0", "GPU-mps-1") "} 314572800\n"));
    assert_non_null(strstr(t, MPS_SERIES("fracgpu_gpu_mps_server_memory_bytes", "1", "GPU-mps-2") "} 268435456\n"));
    assert_non_null(strstr(t, MPS_SERIES("fracgpu_gpu_mps_server_memory_bytes", "2", "GPU-mps-3") "} 134217728\n"));
    assert_null(strstr(t, "pod=\"capacity-"));
    assert_null(strstr(t, "fracgpu_pod_gpu_memory_used_bytes{node=\"" NODE "\",gpu=\"2\""));
    if (access("/usr/bin/promtool", X_OK) == 0) {
        char path[128], cmd[256];
        snprintf(path, sizeof path, "%s/scrape.txt", dir);
        FILE *f = fopen(path, "w");
        fputs(t, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "promtool check metrics < %s", path);
        assert_int_equal(system(cmd), 0);
    }
    int st = stop(exporter_pid, 10000);
    exporter_pid = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fg_buf_cleanup(&body);
    for (int i = 0; i < 5; i++)
        free(uids[i]);
    stop_cluster();
}

/* Readiness follows NVML, liveness does not: with no library, no driver or a device count that fails,
 * /readyz answers 503 naming why while /healthz stays 200; the first sample that reads NVML makes the
 * agent ready, without a restart. */
static void test_readiness(void **state)
{
    (void)state;
    start_cluster();
    char lib[128], log_path[128];
    snprintf(lib, sizeof lib, "%s/libnvidia-ml.so.1", dir);   /* not there yet: no driver installed */
    unsigned port = start_exporter(lib, false, log_path);
    struct fg_buf body;
    fg_buf_init(&body, 0);
    char readyz[128], healthz[128];
    snprintf(readyz, sizeof readyz, "http://127.0.0.1:%u/readyz", port);
    snprintf(healthz, sizeof healthz, "http://127.0.0.1:%u/healthz", port);

    /* the pod watch has synced, so NVML alone holds readiness back */
    assert_true(wait_for_code(readyz, 503, "[+]informers ok\n[-]nvml failed: NVML unavailable: cannot load NVML from",
                              10000, &body));
    assert_non_null(strstr(fg_buf_str(&body), lib));
    assert_int_equal(http_get(healthz, &body), 200);

    /* the library appears but the driver is not loaded */
    fg_test_fake_state(dir, "{\"init\":\"driver_not_loaded\"}");
    assert_int_equal(symlink(FG_FAKE_NVML_PATH, lib), 0);
    assert_true(wait_for_code(readyz, 503, "[-]nvml failed: NVML unavailable: nvmlInit_v2: Driver Not Loaded", 5000,
                              &body));
    assert_int_equal(http_get(healthz, &body), 200);

    /* the driver loads: ready */
    fg_test_fake_state(dir, "{\"gpus\":[{\"uuid\":\"GPU-r\",\"name\":\"NVIDIA L4\",\"total\":1073741824,\"used\":0}]}");
    assert_true(wait_for(readyz, "ok\n", 5000, &body));
    assert_string_equal(fg_buf_str(&body), "ok\n");

    /* the device count fails: not ready again, still alive */
    fg_test_fake_state(dir, "{\"count_error\":\"unknown\",\"gpus\":[]}");
    assert_true(wait_for_code(readyz, 503, "[-]nvml failed: NVML unavailable: nvmlDeviceGetCount_v2: Unknown Error",
                              5000, &body));
    assert_int_equal(http_get(healthz, &body), 200);

    int st = stop(exporter_pid, 10000);
    exporter_pid = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fg_buf_cleanup(&body);
    stop_cluster();
}

static void test_bad_usage(void **state)
{
    (void)state;
    char dir2[64], log_path[128];
    fg_test_fake_dir(dir2);
    snprintf(log_path, sizeof log_path, "%s/log", dir2);
    static const char *const cases[][4] = {
        { "--listen", "127.0.0.1:0", NULL, NULL },                            /* no node name */
        { "--node-name", "n", "--interval", "fast" },
        { "--node-name", "n", "--bogus", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[7] = { FG_FRACGPU, "node-agent" };
        for (int k = 0; k < 4 && cases[i][k]; k++)
            argv[k + 2] = (char *)cases[i][k];
        pid_t pid = spawn(argv, log_path);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 2);
    }
    fg_test_fake_rm(dir2);
}

static int teardown(void **state)
{
    (void)state;
    if (prometheus_pid > 0)
        stop(prometheus_pid, 5000);
    if (exporter_pid > 0)
        stop(exporter_pid, 5000);
    prometheus_pid = exporter_pid = 0;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_usage),
        cmocka_unit_test_teardown(test_exporter_process, teardown),
        cmocka_unit_test_teardown(test_mps, teardown),
        cmocka_unit_test_teardown(test_readiness, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
