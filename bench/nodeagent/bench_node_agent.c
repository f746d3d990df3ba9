/*
 * bench_node_agent — what a node with 8 GPUs and 64 GPU processes on each costs the node agent, its
 * exporter and its device plugin both at work.
 *
 * Starts the test API server (HTTPS with a bearer token, like a real cluster's) with the pods, writes
 * a fake NVML state (8 GPUs x 64 processes, fresh per-process samples every call) and a fake proc tree
 * (one cgroup file per process, systemd v2 paths), plays the kubelet's device manager over the real
 * device-plugin gRPC (e2e/devicemanager), runs `fracgpu node-agent` on all of it, and prints: scrape
 * latency over HTTP (keep-alive, p50/p99/max, and the body size), Allocate latency as the kubelet
 * sees it (GetPreferredAllocation then Allocate, for ALLOCS granted pods admitted one after another,
 * each with the plugin's PodResources audit), sampling cost (the exporter's own sample duration and
 * its CPU time per sample) and the node agent process's RSS (current and peak), anonymous memory and
 * PSS, measured after the allocations. Figures are for the build it runs from: use a release build
 * without sanitizers. Usage: fg_bench_node_agent [GPUS [PROCS [SCRAPES [ALLOCS]]]].
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "bench/args.h"
#include "base/base64.h"
#include "e2e/devicemanager/devicemanager.h"
#include "e2e/tests/harness.h"
#include "reconcilers/grant.h"
#include "reconcilers/podcontract.h"
#include "fake_state.h"

extern char **environ;

#define NODE "bench-node"
#define NPODS 128
#define SHARE "fracgpu.io/gpu-share"

static const unsigned char grant_key[32] = "the benchmark's grant key, 32 B!";
static struct fg_dm *dm;
static char dp_dir[128], podres_sock[128];

static struct fg_harness h;

static void dm_new_on_loop(void *ud)
{
    struct fg_dm_opts o = { dp_dir, podres_sock };
    *(enum fg_err *)ud = fg_dm_new(fg_kube_loop_base(h.loop), &o, &dm, NULL);
}

static void dm_free_on_loop(void *ud)
{
    (void)ud;
    fg_dm_free(dm);
}

static void dm_probe_on_loop(void *ud)
{
    size_t healthy = 0;
    *(bool *)ud = fg_dm_resource(dm, SHARE, NULL, &healthy) && healthy > 0;
}

/* Creates pod `name` on NODE (asking for a share when share), returns its UID (caller frees). */
static char *create_pod(const char *name, bool share)
{
    char json[768];
    snprintf(json, sizeof json,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
             "\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"server\",\"image\":\"x\"%s}]}}",
             name, share ? ",\"resources\":{\"limits\":{\"" SHARE "\":\"1\"}}" : "");
    json_object *obj = NULL, *out = NULL;
    char *uid = NULL;
    if (fg_json_parse(json, strlen(json), 0, &obj, NULL) == FG_OK &&
        fg_kube_create(h.client, "/api/v1/namespaces/default/pods", obj, &out, NULL) == FG_OK)
        uid = strdup(fg_json_get_str(out, "metadata", "uid", NULL));
    json_object_put(obj);
    json_object_put(out);
    return uid;
}

/* The scheduler's placement annotations on pod `name`, granted on gpu. */
static bool place(const char *name, const char *uid, const char *gpu)
{
    struct fg_grant g = { uid, NODE, gpu, 250, 4096 };
    char grant[FG_GRANT_MAX], patch[512], path[160];
    if (fg_grant_sign(&g, grant_key, sizeof grant_key, grant) != FG_OK)
        return false;
    snprintf(patch, sizeof patch,
             "{\"metadata\":{\"annotations\":{\"" FG_ANN_GPU_UUID "\":\"%s\",\"" FG_ANN_COMPUTE_MILLI "\":\"250\",\""
             FG_ANN_MEMORY_MIB "\":\"4096\",\"" FG_ANN_GRANT "\":\"%s\"}}}", gpu, grant);
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", name);
    return fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE, patch, NULL, NULL) == FG_OK;
}

static bool put_key_secret(void)
{
    char *k = fg_base64_encode(grant_key, sizeof grant_key);
    char json[512];
    snprintf(json, sizeof json, "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\""
             FG_SECRET_GRANT_KEY "\",\"namespace\":\"default\"},\"data\":{\"key\":\"%s\"}}", k);
    free(k);
    json_object *obj = NULL;
    bool ok = fg_json_parse(json, strlen(json), 0, &obj, NULL) == FG_OK &&
              fg_kube_create(h.client, "/api/v1/namespaces/default/secrets", obj, NULL, NULL) == FG_OK;
    json_object_put(obj);
    return ok;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Proportional set size of pid in KiB (shared library pages divided among their users), -1 if unknown. */
static long pss_of(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    long pss = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %ld", &pss) == 1)
            break;
    if (f)
        fclose(f);
    return pss;
}

/* VmRSS / VmHWM / RssAnon / RssFile of pid in KiB. */
static void rss_of(pid_t pid, long *rss, long *hwm, long *anon, long *file)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    *rss = *hwm = *anon = *file = -1;
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld", rss);
        sscanf(line, "VmHWM: %ld", hwm);
        sscanf(line, "RssAnon: %ld", anon);
        sscanf(line, "RssFile: %ld", file);
    }
    if (f)
        fclose(f);
}

/* utime + stime of pid, in clock ticks. */
static long cpu_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    long ut = 0, st = 0;
    if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st) == 2)
        return ut + st;
    return -1;
}

static size_t count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static double metric(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    if (!p)
        return -1;
    p = strchr(p, '}');
    return p ? atof(p + 1) : -1;
}

int main(int argc, char **argv)
{
    static const char usage[] = "[GPUS (1..16, default 8) [PROCS (1..1024, default 64) [SCRAPES (1..1000000, default "
                                "1000) [ALLOCS (1..2000, default 200)]]]]";
    bench_args_check(argc, argv, 4, usage);
    int gpus = (int)bench_arg_long(argc, argv, 1, 8, 1, 16, usage);
    int procs = (int)bench_arg_long(argc, argv, 2, 64, 1, 1024, usage);
    int scrapes = (int)bench_arg_long(argc, argv, 3, 1000, 1, 1000000, usage);
    int allocs = (int)bench_arg_long(argc, argv, 4, 200, 1, 2000, usage);
    fg_log_set_level(FG_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char dir[64], msg[FG_ERRMSG_MAX] = "";
    fg_test_fake_dir(dir);
    /* HTTPS with a bearer token, as a real API server serves the exporter's pod watch */
    struct fg_harness_opts hopts = { .tls = true };
    if (fg_harness_start(&h, &hopts, msg) != FG_OK) {
        fprintf(stderr, "harness: %s\n", msg);
        return 1;
    }

    /* pods, and one cgroup file per process pointing at pod (pid % NPODS) */
    char *uids[NPODS];
    for (int i = 0; i < NPODS; i++) {
        char name[32];
        snprintf(name, sizeof name, "inference-%d", i);
        if (!(uids[i] = create_pod(name, false))) {
            fprintf(stderr, "cannot create pod %d\n", i);
            return 1;
        }
    }
    /* the kubelet's device manager, on the harness's loop, and the grant key */
    snprintf(dp_dir, sizeof dp_dir, "%s/device-plugins", dir);
    snprintf(podres_sock, sizeof podres_sock, "%s/pod-resources.sock", dir);
    enum fg_err dm_err = FG_E_IO;
    if (mkdir(dp_dir, 0700) != 0 || fg_kube_loop_call_wait(h.loop, dm_new_on_loop, &dm_err, 5000) != FG_OK || dm_err ||
        !put_key_secret()) {
        fprintf(stderr, "cannot set up the device manager or the grant key\n");
        return 1;
    }
    struct fg_buf st;
    fg_buf_init(&st, 0);
    if (fg_buf_puts(&st, "{\"gpus\":["))
        return 1;
    for (int g = 0; g < gpus; g++) {
        if (fg_buf_printf(&st, "%s{\"uuid\":\"GPU-%08d-0000-0000-0000-000000000000\",\"name\":\"NVIDIA H100 80GB HBM3\","
                          "\"total\":85899345920,\"used\":42949672960,\"reserved\":536870912,\"util\":71,\"procs\":[",
                          g ? "," : "", g))
            return 1;
        for (int p = 0; p < procs; p++)
            if (fg_buf_printf(&st, "%s{\"pid\":%d,\"used\":%d}", p ? "," : "", 10000 + g * procs + p, (p + 1) << 20))
                return 1;
        if (fg_buf_puts(&st, "],\"samples\":["))
            return 1;
        for (int p = 0; p < procs; p++)
            if (fg_buf_printf(&st, "%s{\"pid\":%d,\"ts\":0,\"sm\":%d}", p ? "," : "", 10000 + g * procs + p, p % 100))
                return 1;
        if (fg_buf_puts(&st, "]}"))
            return 1;
    }
    if (fg_buf_puts(&st, "]}"))
        return 1;
    fg_test_fake_state(dir, fg_buf_str(&st));
    fg_buf_cleanup(&st);
    for (int g = 0; g < gpus; g++)
        for (int p = 0; p < procs; p++) {
            int pid = 10000 + g * procs + p;
            char uid[40], cg[256];
            snprintf(uid, sizeof uid, "%s", uids[pid % NPODS]);
            for (char *c = uid; *c; c++)
                *c = *c == '-' ? '_' : *c;
            snprintf(cg, sizeof cg, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/"
                                    "cri-containerd-%064x.scope\n", uid, pid);
            fg_test_fake_cgroup(dir, (unsigned)pid, cg);
        }

    char proc_root[96], log_path[128];
    snprintf(proc_root, sizeof proc_root, "%s/proc", dir);
    snprintf(log_path, sizeof log_path, "%s/exporter.log", dir);
    char *const xargv[] = { FG_FRACGPU, "node-agent", "--node-name", NODE, "--kubeconfig", h.kubeconfig, "--nvml-lib",
                            FG_FAKE_NVML_PATH, "--proc-root", proc_root, "--listen", "127.0.0.1:0", "--interval", "1s",
                            "--device-plugin-dir", dp_dir, "--pod-resources-socket", podres_sock,
                            "--grant-key-namespace", "default", "--device-list-strategy", "cdi-cri", NULL };
    /* as the image (Dockerfile) runs it: GnuTLS, loaded only as a dependency of libcurl's LDAP and RTMP
     * support, skips its initialization */
    setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    if (posix_spawn(&pid, xargv[0], &fa, NULL, xargv, environ) != 0) {
        fprintf(stderr, "cannot start %s\n", xargv[0]);
        return 1;
    }
    posix_spawn_file_actions_destroy(&fa);

    unsigned port = fg_test_exporter_port(log_path);
    struct fg_buf b;
    fg_buf_init(&b, 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", port);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fg_test_curl_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    /* wait until every process is attributed (a sample after the whole pod list arrived) */
    bool ready = false;
    for (int i = 0; port && i < 100 && !ready; i++) {
        fg_buf_reset(&b);
        ready = curl_easy_perform(c) == CURLE_OK && count(fg_buf_str(&b), ",pod=\"") == (size_t)(2 * gpus * procs);
        if (!ready)
            fg_test_sleep_ms(100);
    }
    if (!ready) {
        fprintf(stderr, "exporter not ready; its log is in %s\n", log_path);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 1;
    }

    uint64_t *lat = calloc((size_t)scrapes, sizeof *lat);
    size_t bytes = 0;
    for (int i = 0; i < scrapes; i++) {
        fg_buf_reset(&b);
        uint64_t t0 = fg_clock_mono_ns();
        if (curl_easy_perform(c) != CURLE_OK) {
            fprintf(stderr, "scrape %d failed\n", i);
            return 1;
        }
        lat[i] = fg_clock_mono_ns() - t0;
        bytes = b.len;
    }
    size_t pod_series = count(fg_buf_str(&b), ",pod=\"");
    if (getenv("FG_BENCH_DUMP")) {
        FILE *df = fopen(getenv("FG_BENCH_DUMP"), "w");
        if (df) {
            fputs(fg_buf_str(&b), df);
            fclose(df);
        }
    }
    size_t lines = count(fg_buf_str(&b), "\n");
    qsort(lat, (size_t)scrapes, sizeof *lat, cmp_u64);

    /* the device plugin: registered, then ALLOCS granted pods admitted one after another */
    bool registered = false;
    for (int i = 0; i < 200 && !registered; i++) {
        if (fg_kube_loop_call_wait(h.loop, dm_probe_on_loop, &registered, 5000) != FG_OK)
            break;
        if (!registered)
            fg_test_sleep_ms(50);
    }
    /* tenants arrive in batches of BATCH, as a scheduler binds them; each batch is admitted once the
     * agent's watch has it (as the kubelet's has before it admits), so a decision weighs the pods
     * waiting at that moment, not every tenant of the run */
    enum { BATCH = 10 };
    char **tenant_uids = calloc((size_t)allocs, sizeof *tenant_uids);
    uint64_t *alat = calloc((size_t)allocs, sizeof *alat);
    int granted = 0;
    for (int first = 0; registered && first < allocs && granted == first; first += BATCH) {
        int last = first + BATCH < allocs ? first + BATCH : allocs;
        for (int i = first; i < last; i++) {
            char name[32], gpu[48];
            snprintf(name, sizeof name, "tenant-%d", i);
            snprintf(gpu, sizeof gpu, "GPU-%08d-0000-0000-0000-000000000000", i % gpus);
            if (!(tenant_uids[i] = create_pod(name, true)) || !place(name, tenant_uids[i], gpu)) {
                fprintf(stderr, "cannot create tenant %d\n", i);
                return 1;
            }
        }
        fg_test_sleep_ms(300);
        for (int i = first; i < last; i++) {
            char name[32];
            snprintf(name, sizeof name, "tenant-%d", i);
            struct fg_dm_result r;
            uint64_t t0 = fg_clock_mono_ns();
            if (fg_dm_allocate_wait(h.loop, dm, "default", name, tenant_uids[i], "server", SHARE, 1, 10000, &r) != FG_OK)
                break;
            alat[granted] = fg_clock_mono_ns() - t0;
            granted += r.status == FG_GRPC_OK;
            fg_dm_result_cleanup(&r);
        }
    }
    if (granted != allocs) {
        fprintf(stderr, "device plugin: %s, %d of %d allocations granted; the agent's log is in %s\n",
                registered ? "registered" : "never registered", granted, allocs, log_path);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 1;
    }
    qsort(alat, (size_t)allocs, sizeof *alat, cmp_u64);
    /* the plugin's own view: its histogram, from the call's arrival to its answer */
    double plugin_p50 = -1, plugin_p99 = -1;
    fg_buf_reset(&b);
    if (curl_easy_perform(c) == CURLE_OK) {
        static const char bucket[] = "fracgpu_device_plugin_allocate_seconds_bucket{le=\"";
        for (const char *q = strstr(fg_buf_str(&b), bucket); q; q = strstr(q + 1, bucket)) {
            double le = atof(q + strlen(bucket)), n = atof(strchr(q, '}') + 1);
            if (plugin_p50 < 0 && n >= 0.50 * allocs)
                plugin_p50 = le;
            if (plugin_p99 < 0 && n >= 0.99 * allocs)
                plugin_p99 = le;
        }
    }

    /* sampling: the exporter's own figure over a few samples, and its CPU time per sample */
    double samples0 = metric(fg_buf_str(&b), "fracgpu_exporter_samples_total{");
    long ticks0 = cpu_ticks(pid);
    double worst = 0;
    for (int i = 0; i < 6; i++) {
        fg_test_sleep_ms(1000);
        fg_buf_reset(&b);
        if (curl_easy_perform(c) == CURLE_OK) {
            double d = metric(fg_buf_str(&b), "fracgpu_exporter_sample_duration_seconds{");
            worst = d > worst ? d : worst;
        }
    }
    double samples1 = metric(fg_buf_str(&b), "fracgpu_exporter_samples_total{");
    long ticks1 = cpu_ticks(pid);
    long rss, hwm, anon, file;
    rss_of(pid, &rss, &hwm, &anon, &file);
    double per_sample_ms = samples1 > samples0
        ? (double)(ticks1 - ticks0) * 1000.0 / (double)sysconf(_SC_CLK_TCK) / (samples1 - samples0) : -1;

    printf("node agent (exporter + device plugin), %d GPUs x %d processes (%d pods + %d tenants), fake NVML, %d scrapes "
           "over HTTP keep-alive\n", gpus, procs, NPODS, allocs, scrapes);
    printf("  scrape latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms (body %zu bytes, %zu lines, %zu per-pod series)"
           "   target <= 5 ms\n", (double)lat[scrapes / 2] / 1e6, (double)lat[scrapes * 99 / 100] / 1e6,
           (double)lat[scrapes - 1] / 1e6, bytes, lines, pod_series);
    printf("  sampling: %.3f ms per sample (worst of 6, wall), %.2f ms CPU per sample (incl. 1 scrape/s)\n",
           worst * 1e3, per_sample_ms);
    printf("  Allocate as the kubelet sees it (GetPreferredAllocation + Allocate): p50 %.3f ms, "
           "p99 %.3f ms, max %.3f ms over %d granted pods admitted in batches of 10\n", (double)alat[allocs / 2] / 1e6,
           (double)alat[allocs * 99 / 100] / 1e6, (double)alat[allocs - 1] / 1e6, allocs);
    printf("  Allocate inside the plugin (its histogram: arrival to answer): p50 <= %.3f ms, p99 <= %.3f ms\n",
           plugin_p50 * 1e3, plugin_p99 * 1e3);
    long pss = pss_of(pid);
    printf("  node agent RSS: %.2f MiB now (%.2f anonymous, %.2f file-backed: libraries), %.2f MiB peak, PSS %.2f MiB"
           "   target <= 16 MiB RSS, <= 6 MiB anonymous\n", (double)rss / 1024, (double)anon / 1024, (double)file / 1024,
           (double)hwm / 1024, (double)pss / 1024);

    curl_easy_cleanup(c);
    free(lat);
    free(alat);
    for (int i = 0; i < allocs; i++)
        free(tenant_uids[i]);
    free(tenant_uids);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    for (int i = 0; i < NPODS; i++)
        free(uids[i]);
    fg_buf_cleanup(&b);
    if (fg_kube_loop_call_wait(h.loop, dm_free_on_loop, NULL, 5000) != FG_OK)
        fprintf(stderr, "the device manager did not stop\n");
    fg_harness_stop(&h);
    fg_test_fake_rm(dir);
    curl_global_cleanup();
    return 0;
}
