/*
 * bench_exporter — what a node with 8 GPUs and 64 GPU processes on each costs the node agent's exporter.
 *
 * Starts the test API server (HTTPS with a bearer token, like a real cluster's) with the pods, writes a fake NVML state (8 GPUs x 64 processes, fresh
 * per-process samples every call) and a fake proc tree (one cgroup file per process, systemd v2
 * paths), runs `fracgpu node-agent` on them, and prints: scrape latency over HTTP (keep-alive,
 * p50/p99/max, and the body size), sampling cost (the exporter's own sample duration and its CPU
 * time per sample) and the node agent process's RSS (current and peak) and PSS. Figures are for the build it
 * runs from: use a release build without sanitizers. Usage: fg_bench_exporter [GPUS [PROCS [SCRAPES]]].
 */
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
#include "bench/args.h"
#include "e2e/tests/harness.h"
#include "fake_state.h"

extern char **environ;

#define NODE "bench-node"
#define NPODS 128

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
    static const char usage[] = "[GPUS (1..16, default 8) [PROCS (1..1024, default 64) [SCRAPES (1..1000000, default 1000)]]]";
    bench_args_check(argc, argv, 3, usage);
    int gpus = (int)bench_arg_long(argc, argv, 1, 8, 1, 16, usage);
    int procs = (int)bench_arg_long(argc, argv, 2, 64, 1, 1024, usage);
    int scrapes = (int)bench_arg_long(argc, argv, 3, 1000, 1, 1000000, usage);
    fg_log_set_level(FG_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char dir[64], msg[FG_ERRMSG_MAX] = "";
    fg_test_fake_dir(dir);
    /* HTTPS with a bearer token, as a real API server serves the exporter's pod watch */
    struct fg_harness h;
    struct fg_harness_opts hopts = { .tls = true };
    if (fg_harness_start(&h, &hopts, msg) != FG_OK) {
        fprintf(stderr, "harness: %s\n", msg);
        return 1;
    }

    /* pods, and one cgroup file per process pointing at pod (pid % NPODS) */
    char *uids[NPODS];
    for (int i = 0; i < NPODS; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"inference-%d\",\"namespace\":"
                 "\"default\"},\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"server\",\"image\":\"x\"}]}}",
                 i);
        json_object *obj = NULL, *out = NULL;
        if (fg_json_parse(json, strlen(json), 0, &obj, NULL) != FG_OK ||
            fg_kube_create(h.client, "/api/v1/namespaces/default/pods", obj, &out, NULL) != FG_OK) {
            fprintf(stderr, "cannot create pod %d\n", i);
            return 1;
        }
        uids[i] = strdup(fg_json_get_str(out, "metadata", "uid", NULL));
        json_object_put(obj);
        json_object_put(out);
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
                            NULL };
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

    printf("exporter, %d GPUs x %d processes (%d pods), fake NVML, %d scrapes over HTTP keep-alive\n", gpus, procs,
           NPODS, scrapes);
    printf("  scrape latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms (body %zu bytes, %zu lines, %zu per-pod series)"
           "   target <= 5 ms\n", (double)lat[scrapes / 2] / 1e6, (double)lat[scrapes * 99 / 100] / 1e6,
           (double)lat[scrapes - 1] / 1e6, bytes, lines, pod_series);
    printf("  sampling: %.3f ms per sample (worst of 6, wall), %.2f ms CPU per sample (incl. 1 scrape/s)\n",
           worst * 1e3, per_sample_ms);
    long pss = pss_of(pid);
    printf("  node agent RSS: %.2f MiB now (%.2f anonymous, %.2f file-backed: libraries), %.2f MiB peak, PSS %.2f MiB"
           "   target <= 16 MiB RSS, <= 6 MiB anonymous\n", (double)rss / 1024, (double)anon / 1024, (double)file / 1024,
           (double)hwm / 1024, (double)pss / 1024);

    curl_easy_cleanup(c);
    free(lat);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    for (int i = 0; i < NPODS; i++)
        free(uids[i]);
    fg_buf_cleanup(&b);
    fg_harness_stop(&h);
    fg_test_fake_rm(dir);
    curl_global_cleanup();
    return 0;
}
