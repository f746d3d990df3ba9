/*
 * cache_bench — one cache however many consumers: the operator's manager with 10,000 realistic pods.
 *
 * The test API server (in this process) is filled with N realistic pods (fake_pods.h: over 4 KiB of
 * JSON each, managedFields and a last-applied annotation included). Then, for each configuration, a
 * fresh process (this program re-executed, so no page of the server is counted) builds the operator
 * exactly as `fracgpu operator` does — a manager with fg_policy_reconciler_setup — adds C consumers
 * of the pod informer, each declaring the fields it reads as the scheduler, the pod-mutation logic
 * and the workload reconciler will (the last two read subsets of the first), starts, waits until
 * every informer has listed, trims malloc and reports: informers made, pods cached, bytes cached,
 * VmRSS and RssAnon. Configurations: 1 consumer, 3 consumers, and 3 consumers with a typed decode
 * of each pod (the cost of keeping a decoded struct beside each cached object).
 *
 * Usage: fg_bench_manager_cache [PODS] (default 10000). Figures are for the build it runs from: use a
 * release build without sanitizers. The fracgpu CRDs are not installed, so the operator's own
 * informers keep retrying their lists; they hold nothing either way.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "bench/args.h"
#include "e2e/tests/harness.h"
#include "operator/cache/fake_pods.h"
#include "operator/cache/transform.h"
#include "operator/manager/manager.h"
#include "reconcilers/policy.h"

/* What the future consumers of the pod informer read: the scheduler all of it, the pod-mutation
 * logic and the workload reconciler subsets. */
static const char *const mutation_fields[] = { "metadata.labels", "metadata.annotations", "metadata.ownerReferences",
                                               "spec.schedulerName", "spec.containers[].resources", NULL };
static const char *const workload_fields[] = { "metadata.labels", "metadata.ownerReferences", "spec.nodeName",
                                               "status.phase", NULL };

/* A decoded pod: what the scheduler would read on every cycle. */
struct pod_value {
    int64_t priority;
    char phase[16];
    char node[64], scheduler[64];
};

static void decode_pod(void *ud, json_object *obj, void *value)
{
    (void)ud;
    struct pod_value *p = value;
    const char *node = fg_json_get_str(obj, "spec", "nodeName", NULL);
    const char *sched = fg_json_get_str(obj, "spec", "schedulerName", NULL);
    const char *phase = fg_json_get_str(obj, "status", "phase", NULL);
    snprintf(p->node, sizeof p->node, "%s", node ? node : "");
    snprintf(p->scheduler, sizeof p->scheduler, "%s", sched ? sched : "");
    if (!fg_json_get_int64(obj, &p->priority, "spec", "priority", NULL))
        p->priority = 0;
    snprintf(p->phase, sizeof p->phase, "%s", phase ? phase : "");
}

static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n))
            kib = strtol(line + n, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* The child: the operator plus `consumers` pod consumers, reported once synced. */
static int child(const char *kubeconfig, int consumers, bool typed)
{
    fg_log_set_level(FG_LOG_ERROR);   /* the CRD informers' retries are expected */
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = "operator";
    mo.kubeconfig = kubeconfig;
    mo.leader.enabled = false;
    struct fg_manager *m;
    if (fg_manager_new(&mo, &m, msg) != FG_OK || fg_policy_reconciler_setup(m, 2, msg) != FG_OK) {
        fprintf(stderr, "child: %s\n", msg);
        return 1;
    }
    const char *const *fields[] = { fg_transform_pod_paths, mutation_fields, workload_fields };
    struct fg_informer *pods = NULL;
    for (int i = 0; i < consumers; i++) {
        struct fg_informer_want w = { .resource = &fg_kube_pods, .fields = fields[i % 3] };
        if (fg_informer_factory_get(fg_manager_informers(m), &w, &pods, msg) != FG_OK) {
            fprintf(stderr, "child: %s\n", msg);
            return 1;
        }
    }
    if (typed && fg_informer_factory_decode(fg_manager_informers(m), pods, decode_pod, NULL,
                                                sizeof(struct pod_value)) != FG_OK)
        return 1;
    if (fg_manager_start(m, msg) != FG_OK) {
        fprintf(stderr, "child: %s\n", msg);
        return 1;
    }
    uint64_t t0 = fg_clock_mono_ns();
    /* The GPUPolicy and GPUWorkload informers keep retrying: their CRDs are not installed here. */
    while (!fg_informer_has_synced(pods) && fg_clock_mono_ns() - t0 < 120 * FG_NS_PER_S) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    double sync_s = (double)(fg_clock_mono_ns() - t0) / 1e9;
    struct fg_kobj_list all;
    fg_store_list(fg_informer_store(pods), &all);
    size_t bytes = 0;
    for (size_t i = 0; i < all.n; i++)
        bytes += fg_kobj_size(all.items[i]);
    size_t cached = all.n;
    fg_kobj_list_cleanup(&all);
    malloc_trim(0);
    printf("%d consumer%s%-13s informers %zu  pods cached %zu (%.0f B each)  VmRSS %.1f MiB  RssAnon %.1f MiB"
           "  (listed in %.1f s)\n",
           consumers, consumers == 1 ? " " : "s", typed ? " + typed" : "", fg_informer_factory_len(fg_manager_informers(m)),
           cached, cached ? (double)bytes / (double)cached : 0.0, status_kib("VmRSS:") / 1024.0,
           status_kib("RssAnon:") / 1024.0, sync_s);
    fflush(stdout);
    fg_manager_free(m);
    return 0;
}

static int fill(struct fg_harness *h, unsigned n)
{
    if (fg_harness_namespace(h, "ml") != FG_OK)
        return 1;
    uint64_t t0 = fg_clock_mono_ns();
    size_t bytes = 0;
    for (unsigned i = 0; i < n; i++) {
        json_object *pod = fg_fake_pod_new("ml", "llm", i, i % 3 ? "node-1" : NULL);
        json_object *meta = fg_json_get(pod, "metadata", NULL);
        json_object_object_del(meta, "resourceVersion");
        json_object_object_del(meta, "uid");
        bytes += strlen(fg_json_text(pod, NULL));
        struct fg_kube_status st = { 0 };
        enum fg_err err = fg_kube_create(h->client, "/api/v1/namespaces/ml/pods", pod, NULL, &st);
        json_object_put(pod);
        if (err) {
            fprintf(stderr, "create pod %u: %s %s\n", i, fg_err_str(err), st.message ? st.message : "");
            fg_kube_status_cleanup(&st);
            return 1;
        }
    }
    printf("%u pods created in %.1f s, %.0f B of JSON each on average\n", n,
           (double)(fg_clock_mono_ns() - t0) / 1e9, (double)bytes / n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--child"))
        return child(argv[2], atoi(argv[3]), !strcmp(argv[4], "typed"));
    static const char usage[] = "[PODS (1..200000, default 10000)]";
    bench_args_check(argc, argv, 1, usage);
    unsigned n = (unsigned)bench_arg_long(argc, argv, 1, 10000, 1, 200000, usage);
    fg_log_set_level(FG_LOG_WARN);
    struct fg_harness h;
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_harness_opts ho = { .history = 1000 };
    if (fg_harness_start(&h, &ho, msg) != FG_OK) {
        fprintf(stderr, "harness: %s\n", msg);
        return 1;
    }
    int rc = fill(&h, n);
    static const struct {
        const char *consumers, *typed;
    } runs[] = { { "1", "plain" }, { "3", "plain" }, { "3", "typed" } };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0] && !rc; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            execl("/proc/self/exe", argv[0], "--child", h.kubeconfig, runs[i].consumers, runs[i].typed, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status))
            rc = 1;
    }
    fg_harness_stop(&h);
    return rc;
}
