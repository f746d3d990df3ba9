/*
 * sched_api_bench — fracgpu's scheduler through the API: pods created as a user creates them, mutated
 * by the operator's webhook and bound by fracgpu-scheduler onto 1,000 GPU nodes of 8 GPUs each.
 *
 * The test API server runs in this process (the harness) and is filled with the GPU farm
 * (e2e/tests/gpufarm.h, its kubelets admitting each pod bound: the scheduler binds a node's tenants
 * of different GPUs one admission apart): 1,000 nodes (96 CPUs, 768 GiB, 110 pods, 8 GPUs of 80,000 MiB for tenants)
 * and 8,000 live capacity pods, which carry a signature no pod has, so the scheduler's idle
 * bookkeeping runs for every one of them as for capacity pods it made and nobody waits for (SIGNED 0:
 * none, as capacity pods made by hand, which it never gives back and skips). Four automated
 * Deployments (gpuwork.h) give fractions of 100, 250 and 500 milli (8, 20 and 40 GiB) and whole GPUs;
 * then the real `fracgpu operator` binary starts (operator_proc.h: webhook served, leader at once,
 * default placement policy, its client limited to QPS requests/s with as large a burst: every
 * Binding is a request, so the default 50/s would be the figure) and the program waits until each workload's pods are
 * mutated. Pods (1 CPU, 4 GiB, `nvidia.com/gpu: 1`, the workloads in turn) are created through this
 * process's client with WINDOW creates in flight, and a watch on their namespace notes when each one
 * is first seen bound. Printed: pods/s from the first create to the last Binding seen, create→bound
 * latency p50/p99/max (from sending the create to the watch event), the CPU seconds over that time
 * of the API server's thread, the operator process and the rest of this process (its client, watch
 * and the harness), and decisions/s of the placement core alone on the same cluster and pods
 * (core_rate.c).
 *
 * Usage: fg_bench_sched_api [PODS [WINDOW [SIGNED [QPS]]]] (default 3000 pods, 32 in flight, signed, 5000/s); the operator is the
 * fracgpu binary of this build ($FG_BIN_DIR overrides it). Figures are for the build it runs from:
 * use a release build without sanitizers (`make bench` builds one).
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
#include "bench/sched_api/core_rate.h"
#include "e2e/tests/gpufarm.h"
#include "e2e/tests/gpuwork.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/operator_proc.h"
#include "operator/kube/resource.h"

#define NS "bench"

static struct fg_gpufarm_opts farm = {
    .nodes = 1000, .gpus = 8, .cpu_milli = 96000, .mem_mib = 786432, .max_pods = 110,
    .product = "NVIDIA-H100-80GB-HBM3", .gpu_mem_mib = 80000, .signature = "0000000000000000",
};

struct run {
    struct fg_harness *h;
    unsigned pods, window;
    unsigned sent, answered, failed, bound;
    uint64_t *created_ns, *bound_ns;
    uint64_t first_ns, last_bound_ns;
    struct fg_gpuwork works[BENCH_SHAPES];
    struct fg_kube_call *watch;
    bool watch_ended;
};

static void send_next(struct run *r);

static void created(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct run *r = ud;
    r->answered++;
    if (err) {
        __atomic_fetch_add(&r->failed, 1, __ATOMIC_RELEASE);
        fprintf(stderr, "create: %s\n", st && st->message ? st->message : fg_err_str(err));
    }
    send_next(r);
}

static void send_next(struct run *r)
{
    while (r->sent < r->pods && r->sent - r->answered < r->window) {
        unsigned i = r->sent++;
        char name[32];
        snprintf(name, sizeof name, "pod-%06u", i);
        json_object *pod = fg_gpuwork_pod(&r->works[i % BENCH_SHAPES], name, BENCH_POD_CPU_MILLI, BENCH_POD_MEM_MIB);
        const char *text = json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN);
        char *path = fg_kube_path(&fg_kube_pods, NS, NULL, NULL, NULL);
        r->created_ns[i] = fg_clock_mono_ns();
        if (!i)
            r->first_ns = r->created_ns[i];
        fg_kube_loop_request(r->h->loop, "POST", path, "application/json", text, strlen(text), created, r);
        free(path);
        json_object_put(pod);
    }
}

static bool on_event(void *ud, enum fg_watch_type type, json_object *pod)
{
    (void)type;
    struct run *r = ud;
    const char *name = fg_json_get_str(pod, "metadata", "name", NULL);
    if (!name || strncmp(name, "pod-", 4) || !fg_json_get_str(pod, "spec", "nodeName", NULL))
        return true;
    unsigned i = (unsigned)atoi(name + 4);
    if (i < r->pods && !r->bound_ns[i]) {
        r->bound_ns[i] = fg_clock_mono_ns();
        r->last_bound_ns = r->bound_ns[i];
        __atomic_fetch_add(&r->bound, 1, __ATOMIC_RELEASE);
    }
    return true;
}

static void on_end(void *ud, enum fg_err err, const struct fg_kube_status *st, const char *errmsg)
{
    (void)st;
    struct run *r = ud;
    __atomic_store_n(&r->watch_ended, true, __ATOMIC_RELEASE);
    fprintf(stderr, "the watch ended: %s %s\n", fg_err_str(err), errmsg ? errmsg : "");
}

static void start_on_loop(void *ud)
{
    struct run *r = ud;
    char *path = fg_kube_path(&fg_kube_pods, NS, NULL, NULL, "watch=1&timeoutSeconds=3600");
    r->watch = fg_kube_loop_watch(r->h->loop, path, 1 << 20, on_event, on_end, r);
    free(path);
}

static void send_on_loop(void *ud)
{
    send_next(ud);
}

static void stop_on_loop(void *ud)
{
    struct run *r = ud;
    if (!r->watch_ended)
        fg_kube_call_cancel(r->watch);
}

/* CPU seconds of a task under /proc (a thread "self/task/TID" or a process "PID"). */
static double cpu_s(const char *which)
{
    char path[128], line[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", which);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    char *close = strrchr(line, ')');
    unsigned long utime = 0, stime = 0;
    if (!ok || !close || sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* The API server's thread (named fg-apiserver), as "self/task/TID" in out. */
static void server_thread(char *out, size_t size)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    out[0] = '\0';
    while (d && (e = readdir(d))) {
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (f && fgets(name, sizeof name, f) && !strncmp(name, "fg-apiserver", 12))
            snprintf(out, size, "self/task/%s", e->d_name);
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "%s: %s\n", what, msg);
    return 1;
}

int main(int argc, char **argv)
{
    static const char usage[] = "[PODS (1..50000, default 3000) [WINDOW (1..1024, default 32) [SIGNED (0 or 1, "
                                "default 1) [QPS (1..100000, default 5000)]]]]";
    bench_args_check(argc, argv, 4, usage);
    struct run r = { .pods = (unsigned)bench_arg_long(argc, argv, 1, 3000, 1, 50000, usage),
                     .window = (unsigned)bench_arg_long(argc, argv, 2, 32, 1, 1024, usage) };
    if (!bench_arg_long(argc, argv, 3, 1, 0, 1, usage))
        farm.signature = NULL;
    long qps = bench_arg_long(argc, argv, 4, 5000, 1, 100000, usage);
    char qps_flag[48], burst_flag[48];
    snprintf(qps_flag, sizeof qps_flag, "--kube-api-qps=%ld", qps);
    snprintf(burst_flag, sizeof burst_flag, "--kube-api-burst=%ld", qps);
    const char *const op_flags[] = { qps_flag, burst_flag, NULL };
    fg_log_set_level(FG_LOG_ERROR);
    setenv("FG_SOURCE_DIR", FG_SOURCE_DIR_DEFAULT, 0);
    setenv("FG_BIN_DIR", FG_BIN_DIR_DEFAULT, 0);
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_harness h;
    struct fg_harness_opts ho = { .history = 8 * (size_t)r.pods + 4 * 8000 + 10000 };
    if (fg_harness_start(&h, &ho, msg))
        return fail("harness", msg);
    r.h = &h;
    uint64_t t0 = fg_clock_mono_ns();
    struct fg_gpufarm_admitter kubelets;
    if (fg_gpufarm_fill(h.client, &farm, msg) || fg_harness_namespace(&h, NS) ||
        fg_gpufarm_admit_start(&kubelets, h.loop, msg))
        return fail("farm", msg);
    for (unsigned s = 0; s < BENCH_SHAPES; s++)
        if (fg_gpuwork_create(h.client, NS, bench_shapes[s].name, bench_shapes[s].milli, bench_shapes[s].mem_mib,
                              &r.works[s], msg))
            return fail("workload", msg);
    printf("filled: %u nodes, %u capacity pods, %d workloads in %.1f s\n", farm.nodes, farm.nodes * farm.gpus,
           BENCH_SHAPES, (double)(fg_clock_mono_ns() - t0) / 1e9);
    struct fg_operator_proc op;
    t0 = fg_clock_mono_ns();
    if (fg_operator_proc_start(&h, &op, op_flags, 300, msg))
        return fail("operator", msg);
    for (unsigned s = 0; s < BENCH_SHAPES; s++)
        if (fg_gpuwork_wait_admitted(h.client, &r.works[s], 60000, msg))
            return fail("webhook", msg);
    printf("operator ready and admitting in %.1f s, client limit %ld requests/s (log %s)\n",
           (double)(fg_clock_mono_ns() - t0) / 1e9, qps, op.log);
    fflush(stdout);

    r.created_ns = fg_calloc(r.pods, sizeof *r.created_ns);
    r.bound_ns = fg_calloc(r.pods, sizeof *r.bound_ns);
    char server[300], opid[32];
    server_thread(server, sizeof server);
    snprintf(opid, sizeof opid, "%d", (int)op.pid);
    if (fg_kube_loop_call_wait(h.loop, start_on_loop, &r, 10000))
        return fail("watch", "did not start");
    usleep(200 * 1000);   /* the watch is open before the first create */
    double server0 = cpu_s(server), op0 = cpu_s(opid), self0 = cpu_s("self");
    if (fg_kube_loop_call_wait(h.loop, send_on_loop, &r, 10000))
        return fail("creates", "did not start");
    uint64_t deadline = fg_clock_mono_ns() + 600 * FG_NS_PER_S;
    while (__atomic_load_n(&r.bound, __ATOMIC_ACQUIRE) + __atomic_load_n(&r.failed, __ATOMIC_ACQUIRE) < r.pods &&
           !__atomic_load_n(&r.watch_ended, __ATOMIC_ACQUIRE) && fg_clock_mono_ns() < deadline)
        usleep(20 * 1000);
    double server_s = cpu_s(server) - server0, op_s = cpu_s(opid) - op0, self_s = cpu_s("self") - self0 - server_s;
    if (fg_kube_loop_call_wait(h.loop, stop_on_loop, &r, 10000))
        fprintf(stderr, "the watch was not stopped\n");

    unsigned bound = r.bound;
    double wall_s = (double)(r.last_bound_ns - r.first_ns) / 1e9;
    uint64_t *lat = fg_calloc(r.pods, sizeof *lat);
    size_t n = 0;
    for (unsigned i = 0; i < r.pods; i++)
        if (r.bound_ns[i])
            lat[n++] = r.bound_ns[i] - r.created_ns[i];
    qsort(lat, n, sizeof *lat, cmp_u64);
    printf("%u of %u pods bound (%u creates failed) in %.2f s from the first create to the last Binding: %.0f pods/s\n",
           bound, r.pods, r.failed, wall_s, wall_s > 0 ? bound / wall_s : 0);
    if (n)
        printf("create -> bound: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", lat[n / 2] / 1e6, lat[n * 99 / 100] / 1e6,
               lat[n - 1] / 1e6);
    printf("CPU seconds: API server thread %.2f, operator process %.2f, this process otherwise %.2f\n", server_s, op_s,
           self_s);
    printf("placement core alone, same cluster and pods: %.0f decisions/s\n",
           bench_core_rate(farm.nodes, farm.gpus, fg_gpufarm_tenant_cpu(&farm), fg_gpufarm_tenant_mem(&farm),
                           farm.gpu_mem_mib, r.pods));
    int status = fg_operator_proc_stop(&op, false);
    fg_gpufarm_admit_stop(&kubelets);
    fg_harness_stop(&h);
    free(lat);
    free(r.created_ns);
    free(r.bound_ns);
    return bound == r.pods && status == 0 ? 0 : 1;
}
