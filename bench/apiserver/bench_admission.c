/*
 * bench_admission — pod creates per second through the test API server, without a webhook and with
 * a mutating admission webhook in the path, and what share of a core the server spends on them.
 *
 * The server runs in a child process (so its CPU time is its own: utime+stime from /proc), the
 * HTTPS test webhook (e2e/kubectl/test/webhook_server.h, answering after DELAY_MS with a JSONPatch)
 * and the clients in this one. C clients, each on a keep-alive connection of its own, POST
 * distinct ~4 KiB pods back to back for a fixed time; every create waits for its reply, so the
 * figure is what the server sustains with C creates in flight. All of them share the machine's
 * cores, so each phase also prints the CPU time (user + system) per create of the server, of the
 * clients (their threads' own clocks) and of the webhook (the rest of this process), and the
 * server's page faults per create and resident memory: every pod created stays in its store.
 * Usage: fg_bench_apiserver_admission [seconds] [clients] [webhook-delay-ms]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "bench/apiserver/bench_http.h"
#include "bench/args.h"
#include "e2e/apiserver/apiserver.h"
#include "e2e/kubectl/test/webhook_server.h"

#define PODS_PATH "/api/v1/namespaces/bench/pods"

struct creator {
    pthread_t th;
    char prefix[16];
    int index;
    double until;
    long done;
    bool failed;
    double cpu_s; /* this thread's CPU time */
};

static double seconds(const struct timespec *ts)
{
    return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

/* CPU seconds (user + system) of the calling thread, or of this whole process. */
static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return seconds(&ts);
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return seconds(&ts);
}

static void *create_loop(void *arg)
{
    struct creator *c = arg;
    double cpu0 = thread_cpu_s();
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    while (!c->failed && bench_now_s() < c->until) {
        char name[64];
        snprintf(name, sizeof(name), "%s-%d-%ld", c->prefix, c->index, c->done);
        char *pod = bench_pod_json(name);
        c->failed = bench_request(fd, &b, "POST", PODS_PATH, "application/json", pod) != 201;
        free(pod);
        c->done += !c->failed;
    }
    fg_buf_cleanup(&b);
    close(fd);
    c->cpu_s = thread_cpu_s() - cpu0;
    return NULL;
}

/* The child's CPU seconds so far (user + system), minor page faults and resident memory. */
struct proc_sample {
    double cpu_s;
    unsigned long faults;
    double rss_mib;
};

static struct proc_sample sample(pid_t pid)
{
    struct proc_sample out = { 0 };
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')');
    unsigned long ut = 0, st = 0;
    long rss_pages = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lu %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %*u %*u %ld",
                     &out.faults, &ut, &st, &rss_pages) != 4)
        return out;
    out.cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    out.rss_mib = (double)rss_pages * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
    return out;
}

/* Runs the clients for `seconds` and prints creates/s and the CPU time per create of the server, the
 * clients and the webhook (this process's threads other than the clients and this one). */
static void phase(const char *label, const char *prefix, pid_t server, int clients, double seconds)
{
    struct creator *c = fg_calloc((size_t)clients, sizeof(*c));
    struct proc_sample s0 = sample(server);
    double t0 = bench_now_s(), self0 = process_cpu_s(), main0 = thread_cpu_s();
    for (int i = 0; i < clients; i++) {
        c[i].index = i;
        c[i].until = t0 + seconds;
        snprintf(c[i].prefix, sizeof(c[i].prefix), "%s", prefix);
        pthread_create(&c[i].th, NULL, create_loop, &c[i]);
    }
    long done = 0;
    double clients_cpu = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(c[i].th, NULL);
        done += c[i].done;
        clients_cpu += c[i].cpu_s;
        if (c[i].failed) {
            fprintf(stderr, "%s: a create failed\n", label);
            exit(1);
        }
    }
    struct proc_sample s1 = sample(server);
    double elapsed = bench_now_s() - t0, cpu = s1.cpu_s - s0.cpu_s;
    double webhook_cpu = process_cpu_s() - self0 - clients_cpu - (thread_cpu_s() - main0);
    printf("%-28s %d clients: %ld creates in %.2f s = %.0f creates/s\n", label, clients, done, elapsed,
           (double)done / elapsed);
    printf("%-28s CPU per create (share of a core): server %.0f us (%.0f%%), clients %.0f us (%.0f%%), "
           "webhook %.0f us (%.0f%%)\n", "", 1e6 * cpu / (double)done, 100.0 * cpu / elapsed,
           1e6 * clients_cpu / (double)done, 100.0 * clients_cpu / elapsed, 1e6 * webhook_cpu / (double)done,
           100.0 * webhook_cpu / elapsed);
    printf("%-28s server: %.1f page faults per create, %.0f MiB resident after\n", "",
           (double)(s1.faults - s0.faults) / (double)done, s1.rss_mib);
    free(c);
}

/* The child: serves until SIGTERM; sends its port up the pipe first. */
static int serve(int out)
{
    struct fg_apiserver_opts opts = { .history = 1000 };
    struct fg_apiserver *srv = NULL;
    char msg[FG_ERRMSG_MAX];
    if (fg_apiserver_new(&opts, &srv, msg) != FG_OK) {
        fprintf(stderr, "server: %s\n", msg);
        return 1;
    }
    uint16_t port = fg_apiserver_port(srv);
    if (write(out, &port, sizeof(port)) != sizeof(port))
        return 1;
    close(out);
    enum fg_err err = fg_apiserver_run(srv, 1, msg);
    fg_apiserver_free(srv);
    return err ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const char usage[] = "[SECONDS (0.1..600, default 3) [CLIENTS (1..256, default 8) "
                                "[WEBHOOK_DELAY_MS (0..10000, default 1)]]]";
    bench_args_check(argc, argv, 3, usage);
    double seconds = bench_arg_double(argc, argv, 1, 3.0, 0.1, 600, usage);
    int clients = (int)bench_arg_long(argc, argv, 2, 8, 1, 256, usage);
    unsigned delay_ms = (unsigned)bench_arg_long(argc, argv, 3, 1, 0, 10000, usage);
    fg_log_set_level(FG_LOG_WARN);
    int pipefd[2];
    if (pipe(pipefd))
        return 1;
    pid_t server = fork();
    if (server == 0) {
        close(pipefd[0]);
        _exit(serve(pipefd[1]));
    }
    close(pipefd[1]);
    if (server < 0 || read(pipefd[0], &bench_port, sizeof(bench_port)) != sizeof(bench_port)) {
        fprintf(stderr, "the server did not start\n");
        return 1;
    }
    close(pipefd[0]);
    char dir[] = "/tmp/fg-bench-admission-XXXXXX";
    struct kcw_server wh;
    if (!mkdtemp(dir) || !kcw_start(&wh, dir, KCW_MUTATE)) {
        kill(server, SIGTERM);
        return 1;
    }
    kcw_set_mode(&wh, KCW_MUTATE, delay_ms);
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    bench_request(fd, &b, "POST", "/api/v1/namespaces", "application/json", "{\"metadata\":{\"name\":\"bench\"}}");

    phase("create, no webhook:", "plain", server, clients, seconds);
    char *cfg = fg_asprintf(
        "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"MutatingWebhookConfiguration\","
        "\"metadata\":{\"name\":\"bench\"},\"webhooks\":[{\"name\":\"pods.bench.fracgpu.io\","
        "\"admissionReviewVersions\":[\"v1\"],\"sideEffects\":\"None\",\"failurePolicy\":\"Fail\","
        "\"timeoutSeconds\":10,\"clientConfig\":{\"url\":\"https://127.0.0.1:%u/mutate\",\"caBundle\":\"%s\"},"
        "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
        "\"resources\":[\"pods\"]}]}]}", wh.port, wh.ca_b64);
    if (bench_request(fd, &b, "POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                      "application/json", cfg) != 201) {
        fprintf(stderr, "cannot register the webhook\n");
        return 1;
    }
    free(cfg);
    char label[64];
    snprintf(label, sizeof(label), "create, webhook %u ms:", delay_ms);
    unsigned before = kcw_reviews(&wh);
    phase(label, "hooked", server, clients, seconds);
    printf("webhook reviews answered: %u\n", kcw_reviews(&wh) - before);

    fg_buf_cleanup(&b);
    close(fd);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    kcw_stop(&wh);
    return fg_remove_tree(dir) ? 1 : 0;
}
