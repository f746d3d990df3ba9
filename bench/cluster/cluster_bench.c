/*
 * cluster_bench — the simulated cluster at scale: how fast pods reach Running through its own
 * default scheduler and kubelets, and how many watch events the test API server delivers while the
 * cluster's informers are attached, with the CPU each process used.
 *
 * It starts `fracgpu-sim-cluster` (beside this program's build: ../bin) with N nodes of 16 CPU,
 * 64Gi and 110 pods (autoscaler off), then:
 *   1. Running: P pods of about 4 KiB (managedFields included), unbound, 100m CPU each, created by
 *      8 keep-alive connections; a watch on status.phase=Running counts them arriving. Prints
 *      creates/s and pods Running/s (first create to last Running).
 *   2. Watch: 10 watch streams on the pods' namespace while 4 writers PATCH the pods' labels E
 *      times; every part of the cluster watches pods too. Prints the events the 10 streams received
 *      per second and the total the server delivered to every watcher (its stats), per second.
 * After each phase: the CPU seconds of every process (API server, each part, this program) and
 * its share of the phase's wall time (2.0 = both cores).
 *
 * Usage: fg_bench_sim_cluster [nodes=1000] [pods=5000] [events=20000]
 */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "bench/apiserver/bench_http.h"
#include "bench/args.h"
#include "e2e/cluster/pidfile.h"
#include "e2e/tests/harness.h"
#include "e2e/tests/simcluster.h"

#define CREATORS 8
#define WRITERS 4
#define WATCHERS 10
#define MAX_PROCS 16
#define NODE_PODS 110            /* pods a node takes */

/* ---- CPU per process ---- */

struct proc_cpu {
    int pid;
    char name[48];
    double seconds;
};

static double stat_seconds(int pid)
{
    struct fg_sim_proc_stat st;
    return fg_sim_proc_stat(pid, &st) ? (double)(st.utime + st.stime) / (double)sysconf(_SC_CLK_TCK) : 0;
}

/* The supervisor's children (the API server and each part), named from their command lines. */
static size_t cluster_procs(int supervisor, struct proc_cpu *out)
{
    size_t n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < MAX_PROCS) {
        int pid = atoi(e->d_name);
        struct fg_sim_proc_stat st;
        if (pid <= 0 || !fg_sim_proc_stat(pid, &st) || st.ppid != supervisor)
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        FILE *f = fopen(path, "r");
        char cmd[512] = "";
        size_t len = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
        if (f)
            fclose(f);
        cmd[len] = '\0';
        const char *name = strstr(cmd, "test-apiserver") ? "test API server" : NULL;
        for (size_t i = 0; !name && i + 1 < len; i++)   /* argv[2] of "... component NAME" */
            if (!strcmp(cmd + i, "component") && cmd[i - 1] == '\0')
                name = cmd + i + strlen("component") + 1;
        out[n].pid = pid;
        snprintf(out[n].name, sizeof out[n].name, "%s", name ? name : "?");
        out[n++].seconds = stat_seconds(pid);
    }
    if (d)
        closedir(d);
    return n;
}

static double self_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void print_cpu(const char *phase, int supervisor, const struct proc_cpu *before, size_t nbefore, double self0,
                      double wall)
{
    struct proc_cpu after[MAX_PROCS];
    size_t n = cluster_procs(supervisor, after);
    printf("  CPU during %s (%.2f s wall; share 1.0 = one core):\n", phase, wall);
    for (size_t i = 0; i < n; i++) {
        double was = 0;
        for (size_t j = 0; j < nbefore; j++)
            if (before[j].pid == after[i].pid)
                was = before[j].seconds;
        printf("    %-18s %7.2f s  %.2f\n", after[i].name, after[i].seconds - was, (after[i].seconds - was) / wall);
    }
    double mine = self_seconds() - self0;
    printf("    %-18s %7.2f s  %.2f\n", "this benchmark", mine, mine / wall);
}

/* ---- pods ---- */

static char *pod_json(long i)
{
    char *s = NULL;
    struct fg_buf b = FG_BUF_INIT;
    bool ok = fg_buf_printf(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%ld\",\"labels\":"
                                "{\"app\":\"bench\"},\"managedFields\":[", i) == FG_OK;
    for (int m = 0; m < 6 && ok; m++)
        ok = fg_buf_printf(&b, "%s{\"manager\":\"bench-%d\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
                               "\"2026-11-21T08:00:0%dZ\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":"
                               "{\".\":{},\"f:app\":{}}},\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},"
                               "\"f:image\":{},\"f:imagePullPolicy\":{},\"f:name\":{},\"f:resources\":{\".\":{},\"f:requests\":"
                               "{\".\":{},\"f:cpu\":{},\"f:memory\":{}}}}}}}}", m ? "," : "", m, m) == FG_OK;
    ok = ok && fg_buf_puts(&b, "]},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/ml/serve:1.4.2\","
                               "\"args\":[\"--port=8080\",\"--model=/models/sd\"],\"resources\":{\"requests\":{\"cpu\":\"100m\","
                               "\"memory\":\"128Mi\"}}}]}}") == FG_OK;
    if (!ok)
        abort();
    s = fg_buf_take(&b);
    return s;
}

struct creator {
    pthread_t th;
    int index;
    long pods;
};

static void *create_loop(void *arg)
{
    struct creator *c = arg;
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    for (long i = c->index; i < c->pods; i += CREATORS) {
        char *pod = pod_json(i);
        if (bench_request(fd, &b, "POST", "/api/v1/namespaces/bench/pods", "application/json", pod) != 201) {
            fprintf(stderr, "create failed: %s\n", fg_buf_str(&b));
            exit(1);
        }
        free(pod);
    }
    fg_buf_cleanup(&b);
    close(fd);
    return NULL;
}

/* Counts the watch events of one stream (lines ending a JSON object) until `want` arrived. */
static void count_events(int fd, long want, long *seen)
{
    char buf[1 << 16], prev = 0;
    while (*seen < want) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got <= 0) {
            fprintf(stderr, "watch stream ended after %ld events\n", *seen);
            exit(1);
        }
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] == '\n' && prev == '}')
                (*seen)++;
            prev = buf[i];
        }
    }
}

static void phase_running(int supervisor, long pods)
{
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    bench_request(fd, &b, "POST", "/api/v1/namespaces", "application/json", "{\"metadata\":{\"name\":\"bench\"}}");
    int watch = bench_dial();
    static const char req[] = "GET /api/v1/namespaces/bench/pods?watch=true&fieldSelector=status.phase%3DRunning "
                              "HTTP/1.1\r\nHost: bench\r\n\r\n";
    bench_send_all(watch, req, sizeof req - 1);
    usleep(200000);
    struct proc_cpu before[MAX_PROCS];
    size_t nbefore = cluster_procs(supervisor, before);
    double self0 = self_seconds(), t0 = bench_now_s();
    struct creator cr[CREATORS];
    for (int i = 0; i < CREATORS; i++) {
        cr[i] = (struct creator){ .index = i, .pods = pods };
        pthread_create(&cr[i].th, NULL, create_loop, &cr[i]);
    }
    for (int i = 0; i < CREATORS; i++)
        pthread_join(cr[i].th, NULL);
    double created = bench_now_s();
    long seen = 0;
    count_events(watch, pods, &seen);
    double running = bench_now_s();
    printf("Running: %ld pods created in %.2f s (%.0f creates/s); all Running %.2f s after the first create: "
           "%.0f pods Running/s\n",
           pods, created - t0, (double)pods / (created - t0), running - t0, (double)pods / (running - t0));
    print_cpu("the Running phase", supervisor, before, nbefore, self0, running - t0);
    close(watch);
    fg_buf_cleanup(&b);
    close(fd);
}

/* ---- watch fan-out ---- */

struct writer {
    pthread_t th;
    int index;
    long events, pods;
};

static void *write_loop(void *arg)
{
    struct writer *w = arg;
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    for (long e = 0; e < w->events; e++) {
        char path[96], body[96];
        snprintf(path, sizeof path, "/api/v1/namespaces/bench/pods/pod-%ld", (e * WRITERS + w->index) % w->pods);
        snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"seq\":\"%ld\"}}}", e);
        if (bench_request(fd, &b, "PATCH", path, "application/merge-patch+json", body) != 200) {
            fprintf(stderr, "patch failed: %s\n", fg_buf_str(&b));
            exit(1);
        }
    }
    fg_buf_cleanup(&b);
    close(fd);
    return NULL;
}

struct reader {
    pthread_t th;
    int fd;
    long want, seen;
};

static void *read_loop(void *arg)
{
    struct reader *r = arg;
    count_events(r->fd, r->want, &r->seen);
    return NULL;
}

/* The server's count of watch events delivered (its /fracgpu-test/stats), or -1. */
static long events_sent(void)
{
    struct fg_buf b = FG_BUF_INIT;
    long n = -1;
    if (fg_harness_http(NULL, bench_port, "GET", "/fracgpu-test/stats", &b) == 200) {
        json_object *o = NULL;
        int64_t v;
        if (fg_json_parse(fg_buf_str(&b), b.len, 0, &o, NULL) == FG_OK && fg_json_get_int64(o, &v, "eventsSent", NULL))
            n = (long)v;
        json_object_put(o);
    }
    fg_buf_cleanup(&b);
    return n;
}

static void phase_watch(int supervisor, long pods, long events)
{
    struct reader r[WATCHERS];
    for (int i = 0; i < WATCHERS; i++) {
        r[i] = (struct reader){ .fd = bench_dial(), .want = events };
        static const char req[] = "GET /api/v1/namespaces/bench/pods?watch=true&resourceVersion=999999999 HTTP/1.1\r\n"
                                  "Host: bench\r\n\r\n";
        bench_send_all(r[i].fd, req, sizeof req - 1);
        pthread_create(&r[i].th, NULL, read_loop, &r[i]);
    }
    usleep(300000);
    struct proc_cpu before[MAX_PROCS];
    size_t nbefore = cluster_procs(supervisor, before);
    long sent0 = events_sent();
    double self0 = self_seconds(), t0 = bench_now_s();
    struct writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (struct writer){ .index = i, .events = events / WRITERS + (i < events % WRITERS), .pods = pods };
        pthread_create(&w[i].th, NULL, write_loop, &w[i]);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i].th, NULL);
    for (int i = 0; i < WATCHERS; i++)
        pthread_join(r[i].th, NULL);
    double wall = bench_now_s() - t0;
    long sent = events_sent();
    printf("Watch: %ld patches, %d streams of this program: %.0f events/s received by them", events, WATCHERS,
           (double)events * WATCHERS / wall);
    if (sent0 >= 0 && sent >= sent0)
        printf("; the server delivered %.0f events/s to all its watchers (the cluster's informers included)",
               (double)(sent - sent0) / wall);
    printf("\n");
    print_cpu("the Watch phase", supervisor, before, nbefore, self0, wall);
    for (int i = 0; i < WATCHERS; i++)
        close(r[i].fd);
}

int main(int argc, char **argv)
{
    static const char usage[] = "[NODES (1..5000, default 1000) [PODS (1..110 a node, default 5000) "
                                "[EVENTS (1..10000000, default 20000)]]]";
    bench_args_check(argc, argv, 3, usage);
    long nodes = bench_arg_long(argc, argv, 1, 1000, 1, 5000, usage);
    long pods = bench_arg_long(argc, argv, 2, 5000, 1, nodes * NODE_PODS, usage);
    long events = bench_arg_long(argc, argv, 3, 20000, 1, 10000000, usage);
    fg_log_set_level(FG_LOG_WARN);
    char self[4096] = "", bin[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(bin, sizeof bin, "%s/../bin", self);
    setenv("FG_BIN_DIR", bin, 0);
    char config[] = "/tmp/fg-bench-cluster-XXXXXX";
    int cfd = mkstemp(config);
    dprintf(cfd, "nodeGroups:\n  - name: node\n    maxSize: %ld\n    initialSize: %ld\n"
                 "    capacity: {cpu: \"16\", memory: 64Gi, pods: %d}\nautoscaler: {enabled: false}\n",
            nodes, nodes, NODE_PODS);
    close(cfd);
    struct fg_simcluster sim;
    char msg[FG_ERRMSG_MAX] = "";
    double t0 = bench_now_s();
    if (fg_simcluster_start(&sim, config, NULL, 600, msg) != FG_OK) {
        fprintf(stderr, "cannot start the simulated cluster: %s\n", msg);
        unlink(config);
        return 1;
    }
    printf("fracgpu-sim-cluster: %ld nodes Ready in %.1f s\n", nodes, bench_now_s() - t0);
    const char *server = fg_kube_client_config(sim.client)->server;
    const char *colon = strrchr(server, ':');
    bench_port = (uint16_t)atoi(colon ? colon + 1 : "0");
    phase_running((int)sim.pid, pods);
    phase_watch((int)sim.pid, pods, events);
    fg_simcluster_stop(&sim, false);
    unlink(config);
    return 0;
}
