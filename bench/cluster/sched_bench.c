/*
 * sched_bench — the simulated cluster's default scheduler at the size the e2e clusters reach: how
 * many pods it binds per second onto 1,000 nodes, and whose CPU that costs.
 *
 * The test API server runs in this process (the harness) and is filled first with 1,000 Ready nodes
 * (16 CPU, 64Gi, 110 pods each) and N pending pods of one container requesting 100m CPU. Then the
 * scheduler component starts on a manager of its own, exactly as `fracgpu-sim-cluster component
 * scheduler` builds it (without a client rate limit), and the program waits until the server lists
 * no pod without a node (polled every 100 ms). It prints when the scheduler's caches had synced (the
 * initial lists of nodes and pods), the time to bind every pod from the manager's start, pods bound
 * per second over that time and after the sync, and the CPU seconds each thread used over that time (from /proc/self/task/TID/stat): the
 * server's thread, the threads the scheduler's manager started (its loop, where informer events
 * are decoded, the scheduling thread and the binding writers), and the rest (this program's polling
 * and the harness's idle manager).
 *
 * Usage: fg_bench_sim_scheduler [PODS [LATENCY_MS]] (default 10000 pods, no latency). LATENCY_MS delays
 * every reply of the server once the cluster is filled (its /fracgpu-test/latency lever), standing in
 * for the round trip to a real API server: what binding from several threads is for. Figures are
 * for the build it runs from: use a release build without sanitizers.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "bench/args.h"
#include "e2e/cluster/sim.h"
#include "e2e/tests/harness.h"
#include "operator/kube/resource.h"

#define NODES 1000
#define NS "bench"
#define MAX_THREADS 256

struct thread_cpu {
    int tid;
    char name[32];
    double cpu_s;
};

/* Every thread of this process with its name and CPU seconds so far; returns how many. */
static size_t threads(struct thread_cpu *out, size_t max)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    size_t n = 0;
    long hz = sysconf(_SC_CLK_TCK);
    while (d && (e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool ok = fgets(line, sizeof line, f) != NULL;
        fclose(f);
        char *open = strchr(line, '('), *close = strrchr(line, ')');
        unsigned long utime = 0, stime = 0;
        if (!ok || !open || !close ||
            sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
            continue;
        struct thread_cpu *t = &out[n++];
        t->tid = atoi(e->d_name);
        snprintf(t->name, sizeof t->name, "%.*s", (int)(close - open - 1), open + 1);
        t->cpu_s = (double)(utime + stime) / (double)hz;
    }
    if (d)
        closedir(d);
    return n;
}

static const struct thread_cpu *find(const struct thread_cpu *v, size_t n, int tid)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].tid == tid)
            return &v[i];
    return NULL;
}

static int create(struct fg_harness *h, const struct fg_kube_resource *res, const char *json)
{
    json_object *obj = NULL;
    if (fg_json_parse(json, strlen(json), 0, &obj, NULL) != FG_OK)
        return 1;
    char *path = fg_kube_path(res, res->namespaced ? NS : NULL, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(h->client, path, obj, NULL, &st);
    if (err)
        fprintf(stderr, "create: %s\n", st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(obj);
    return err != FG_OK;
}

static int fill(struct fg_harness *h, unsigned pods)
{
    char json[1024];
    for (unsigned i = 0; i < NODES; i++) {
        snprintf(json, sizeof json,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%04u\",\"labels\":"
                 "{\"kubernetes.io/hostname\":\"node-%04u\",\"topology.kubernetes.io/zone\":\"zone-%u\"}},"
                 "\"status\":{\"capacity\":{\"cpu\":\"16\",\"memory\":\"64Gi\",\"pods\":\"110\"},\"allocatable\":"
                 "{\"cpu\":\"16\",\"memory\":\"64Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
                 "\"status\":\"True\"}]}}",
                 i, i, i % 3);
        if (create(h, &fg_kube_nodes, json))
            return 1;
    }
    for (unsigned i = 0; i < pods; i++) {
        snprintf(json, sizeof json,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%05u\",\"namespace\":\"" NS
                 "\",\"labels\":{\"app\":\"bench\"}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":"
                 "\"registry.example/app:1\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}",
                 i);
        if (create(h, &fg_kube_pods, json))
            return 1;
    }
    return 0;
}

/* Whether some pod has no node yet (1), none (0), or the list failed (-1). */
static long pending(struct fg_harness *h)
{
    json_object *list = NULL;
    char *path = fg_kube_path(&fg_kube_pods, NS, NULL, NULL, "fieldSelector=spec.nodeName%3D&limit=1");
    long n = -1;
    if (fg_kube_get(h->client, path, &list, NULL) == FG_OK)
        n = (long)fg_json_array_len(fg_json_get(list, "items", NULL));
    json_object_put(list);
    free(path);
    return n;
}

int main(int argc, char **argv)
{
    static const char usage[] = "[PODS (1..100000, default 10000) [LATENCY_MS (0..1000, default 0)]]";
    bench_args_check(argc, argv, 2, usage);
    unsigned pods = (unsigned)bench_arg_long(argc, argv, 1, 10000, 1, 100000, usage);
    unsigned latency_ms = (unsigned)bench_arg_long(argc, argv, 2, 0, 0, 1000, usage);
    fg_log_set_level(FG_LOG_ERROR);
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_harness h;
    struct fg_harness_opts ho = { .history = 4 * (size_t)pods + 4 * NODES };
    if (fg_harness_start(&h, &ho, errmsg) || fg_harness_namespace(&h, NS)) {
        fprintf(stderr, "harness: %s\n", errmsg);
        return 1;
    }
    uint64_t t0 = fg_clock_mono_ns();
    if (fill(&h, pods))
        return 1;
    printf("created %d nodes and %u pods in %.1f s\n", NODES, pods, (double)(fg_clock_mono_ns() - t0) / 1e9);
    char lever[64];
    snprintf(lever, sizeof lever, "latency?ms=%u", latency_ms);
    if (latency_ms && fg_harness_fault(&h, lever) != FG_OK)
        return 1;
    if (latency_ms)
        printf("every reply delayed by %u ms\n", latency_ms);

    struct thread_cpu *before = fg_calloc(MAX_THREADS, sizeof *before), *after = fg_calloc(MAX_THREADS, sizeof *after);
    size_t nbefore = threads(before, MAX_THREADS);
    struct fg_sim_config cfg;
    fg_sim_config_default(&cfg);
    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = "sim-scheduler";
    mo.kubeconfig = h.kubeconfig;
    mo.leader.enabled = false;
    mo.client.qps = 0;
    struct fg_manager *m = NULL;
    uint64_t start = fg_clock_mono_ns();
    if (fg_manager_new(&mo, &m, errmsg) || fg_sim_scheduler_setup(m, &cfg, errmsg) || fg_manager_start(m, errmsg)) {
        fprintf(stderr, "scheduler: %s\n", errmsg);
        return 1;
    }
    while (!fg_informer_factory_synced(fg_manager_informers(m)) && fg_clock_mono_ns() - start < 600 * FG_NS_PER_S) {
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    double synced_s = (double)(fg_clock_mono_ns() - start) / 1e9;
    printf("caches synced in %.2f s (lists of the nodes and pods, decoded)\n", synced_s);
    fflush(stdout);
    long left;
    while ((left = pending(&h)) != 0 && fg_clock_mono_ns() - start < 600 * FG_NS_PER_S) {
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    double total_s = (double)(fg_clock_mono_ns() - start) / 1e9;
    size_t nafter = threads(after, MAX_THREADS);
    if (left)
        printf("gave up with pods unbound\n");
    printf("%u pods bound in %.2f s from the start: %.0f pods/s (%.0f pods/s after the sync)\n", pods, total_s,
           (double)pods / total_s, (double)pods / (total_s - synced_s));

    double server = 0, scheduler = 0, other = 0;
    printf("CPU seconds by thread over that time:\n");
    for (size_t i = 0; i < nafter; i++) {
        const struct thread_cpu *was = find(before, nbefore, after[i].tid);
        double used = after[i].cpu_s - (was ? was->cpu_s : 0);
        bool is_server = !strcmp(after[i].name, "fg-apiserver");
        const char *whose = is_server ? "server" : was ? "other" : "scheduler";
        *(is_server ? &server : was ? &other : &scheduler) += used;
        if (used >= 0.01)
            printf("  %-16s %-9s %6.2f\n", after[i].name, whose, used);
    }
    printf("total: scheduler %.2f s, API server %.2f s, other %.2f s (wall %.2f s)\n", scheduler, server, other,
           total_s);
    fg_manager_free(m);
    fg_sim_config_cleanup(&cfg);
    fg_harness_stop(&h);
    free(before);
    free(after);
    return left != 0;
}
