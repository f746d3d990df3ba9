/*
 * latency — placement-decision latency of the scheduler core at 1,000, 10,000 and 50,000 GPUs.
 *
 *   fg_bench_sched_latency [PODS.csv] [decisions] [policy] [GPUs]
 *
 * Each cluster has 8-GPU nodes (96 cores, 768 GiB; models 70% G2, 20% T4, 10% V100M32). It is first
 * filled to about 60% of its GPU compute with pods drawn from the trace (default: the Alibaba
 * `default` pod list in build/data/alibaba-gpu-v2023, run from the repository's root), which
 * leaves a realistic mix of idle, partly used and full GPUs. Then `decisions` further pods drawn from the trace are each scheduled
 * (one full cycle: filters on every node, scoring, reserve) and unreserved again, so every decision
 * sees the same cluster; each is timed with the monotonic clock. Prints p50/p99/max per size and
 * placement policy (a placement policy or GPU count given runs only that one). Not a pass/fail test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "bench/args.h"
#include "scheduler/core/rng.h"
#include "scheduler/plugins/plugins.h"
#include "scheduler/policies/policy.h"
#include "scheduler/replay/replay.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int build(struct fg_sched_cluster *c, int n_gpus)
{
    static const char *const models[10] = { "G2", "G2", "G2", "G2", "G2", "G2", "G2", "T4", "T4", "V100M32" };
    fg_sched_cluster_init(c);
    for (int i = 0; i < n_gpus / 8; i++) {
        char name[32], errmsg[FG_ERRMSG_MAX];
        snprintf(name, sizeof name, "node-%05d", i);
        struct fg_sched_node_spec s = { .name = name, .cpu_milli = 96000, .mem_mib = 786432, .max_pods = 110,
                                        .model = models[i % 10], .n_gpus = 8 };
        if (fg_sched_cluster_add_node(c, &s, NULL, errmsg)) {
            fprintf(stderr, "%s\n", errmsg);
            return -1;
        }
    }
    return 0;
}

static int run(const struct fg_sched_trace *t, const char *policy, int n_gpus, int decisions)
{
    struct fg_sched_cluster c;
    if (build(&c, n_gpus))
        return -1;
    struct fg_sched_mix mix = { 0 };
    fg_sched_replay_mix(t, &mix);
    struct fg_sched_policy *pol;
    char errmsg[FG_ERRMSG_MAX];
    if (fg_sched_policy_new(policy, &mix, 1, &pol, errmsg)) {
        fprintf(stderr, "%s\n", errmsg);
        return -1;
    }
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, 42);
    int rc = -1;
    uint64_t *ns = calloc((size_t)decisions, sizeof *ns);
    for (int tries = 0; c.gpu_milli_used < c.gpu_milli_total * 6 / 10 && tries < 10 * n_gpus; tries++) {
        struct fg_sched_pod req;
        struct fg_sched_placement pl;
        fg_sched_trace_pod_request(&t->pods[fg_sched_rng_below(&rng, t->n_pods)], &req);
        if (fg_sched_schedule(&fw, &c, &req, &pl, errmsg))
            goto out;
    }
    for (int k = 0; k < decisions; k++) {
        struct fg_sched_pod req;
        struct fg_sched_placement pl;
        fg_sched_trace_pod_request(&t->pods[fg_sched_rng_below(&rng, t->n_pods)], &req);
        uint64_t t0 = fg_clock_mono_ns();
        if (fg_sched_schedule(&fw, &c, &req, &pl, errmsg))
            goto out;
        ns[k] = fg_clock_mono_ns() - t0;
        fg_sched_framework_unreserve(&fw, &c, &req, &pl);
    }
    qsort(ns, (size_t)decisions, sizeof *ns, cmp_u64);
    printf("%-9s %6d GPUs %5zu nodes  allocated %5.1f%%  p50 %8.1f us  p99 %8.1f us  max %8.1f us\n", policy,
           n_gpus, c.n_nodes, 100.0 * (double)c.gpu_milli_used / (double)c.gpu_milli_total,
           (double)ns[decisions / 2] / 1e3, (double)ns[decisions * 99 / 100] / 1e3, (double)ns[decisions - 1] / 1e3);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "%s\n", errmsg);
    free(ns);
    fg_sched_framework_cleanup(&fw);
    fg_sched_policy_free(pol);
    fg_sched_mix_cleanup(&mix);
    fg_sched_cluster_cleanup(&c);
    return rc;
}

int main(int argc, char **argv)
{
    static const char usage[] = "[PODS.csv [DECISIONS (100..10000000, default 2000) [POLICY [GPUS]]]]";
    bench_args_check(argc, argv, 4, usage);
    const char *pods = argc > 1 ? argv[1] : "build/data/alibaba-gpu-v2023/openb_pod_list_default.csv";
    int decisions = (int)bench_arg_long(argc, argv, 2, 2000, 100, 10000000, usage);
    long only_gpus = bench_arg_long(argc, argv, 4, 0, 1, 1000000, usage);
    struct fg_sched_trace t;
    fg_sched_trace_init(&t);
    char errmsg[FG_ERRMSG_MAX];
    if (fg_sched_trace_load_pods(&t, pods, errmsg)) {
        fprintf(stderr, "%s\n", errmsg);
        return 1;
    }
    static const char *const policies[] = { "fracgpu", "fgd", "bestfit" };
    static const int sizes[] = { 1000, 10000, 50000 };
    int rc = 0;
    for (size_t s = 0; s < 3 && !rc; s++)
        for (size_t p = 0; p < 3 && !rc; p++)
            if ((argc <= 3 || !strcmp(argv[3], policies[p])) && (argc <= 4 || only_gpus == sizes[s]))
                rc = run(&t, policies[p], sizes[s], decisions);
    fg_sched_trace_cleanup(&t);
    return rc ? 1 : 0;
}
