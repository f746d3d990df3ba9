/*
 * replay — one run of the placement experiment (see replay.h for the recipe).
 *
 * Random draws come from one generator seeded with the run's seed, in a fixed order: node ranks,
 * shuffle, inflation or thinning (none of them in order); the random placement policy gets its own
 * stream. Pods never leave,
 * so the cluster's fragmentation is kept as a running sum that changes only on the node a pod lands
 * on (mix.h's fg_sched_frag_sum).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "scheduler/core/rng.h"
#include "scheduler/plugins/plugins.h"
#include "scheduler/policies/mix.h"
#include "scheduler/policies/policy.h"
#include "scheduler/replay/replay.h"

static int cmp_name(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* Indexes of rows sorted by their name (the first member of both row types is the name). */
static size_t *sorted_by_name(const void *rows, size_t n, size_t stride)
{
    char ***keys = fg_malloc((n ? n : 1) * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = (char **)((const char *)rows + i * stride);
    qsort(keys, n, sizeof *keys, cmp_name);
    size_t *idx = fg_malloc((n ? n : 1) * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = (size_t)((const char *)keys[i] - (const char *)rows) / stride;
    free(keys);
    return idx;
}

static uint32_t spec_mask(const struct fg_sched_cluster *c, const struct fg_sched_trace_pod *p)
{
    struct fg_sched_pod req;
    fg_sched_trace_pod_request(p, &req);
    return fg_sched_pod_model_mask(c, &req);
}

static enum fg_err build_cluster(const struct fg_sched_trace *t, const size_t *order, struct fg_sched_cluster *c,
                                 char *errmsg)
{
    fg_sched_cluster_init(c);
    for (size_t i = 0; i < t->n_nodes; i++) {
        const struct fg_sched_trace_node *tn = &t->nodes[order[i]];
        struct fg_sched_node_spec s = { .name = tn->name, .cpu_milli = tn->cpu_milli, .mem_mib = tn->mem_mib,
                                        .max_pods = 1001, .model = tn->model, .n_gpus = tn->n_gpus,
                                        .gpu_mem_mib = tn->gpu_mem_mib };
        int id;
        enum fg_err err = fg_sched_cluster_add_node(c, &s, &id, errmsg);
        if (err)
            return err;
    }
    return FG_OK;
}

void fg_sched_replay_mix(const struct fg_sched_trace *t, struct fg_sched_mix *mix)
{
    struct fg_sched_cluster c;
    size_t *order = sorted_by_name(t->nodes, t->n_nodes, sizeof *t->nodes);
    char errmsg[FG_ERRMSG_MAX];
    if (build_cluster(t, order, &c, errmsg))
        fg_sched_cluster_cleanup(&c);  /* models stay unknown: masks come out empty */
    struct fg_sched_mix_counter mc;
    fg_sched_mix_counter_init(&mc);
    for (size_t i = 0; i < t->n_pods; i++) {
        const struct fg_sched_trace_pod *p = &t->pods[i];
        struct fg_sched_shape s = { p->cpu_milli, p->gpu_milli, p->n_gpus, spec_mask(&c, p), p->spec };
        fg_sched_mix_counter_add(&mc, &s);
    }
    fg_sched_mix_build(&mc, mix);
    fg_sched_mix_counter_cleanup(&mc);
    fg_sched_cluster_cleanup(&c);
    free(order);
}

/* The pods once each, in the order listed. */
static size_t *as_listed(const struct fg_sched_trace *t, size_t *n_out)
{
    size_t *list = fg_malloc((t->n_pods ? t->n_pods : 1) * sizeof *list);
    for (size_t i = 0; i < t->n_pods; i++)
        list[i] = i;
    *n_out = t->n_pods;
    return list;
}

/* The submission list of one seed: indexes into t->pods (the submission order of docs/benchmarks.md,
 * "Placement quality"). */
static size_t *submission(const struct fg_sched_trace *t, struct fg_sched_rng *rng, int64_t capacity, double tune,
                          size_t *n_out)
{
    size_t n = t->n_pods, cap = 2 * n + 16;
    size_t *sorted = sorted_by_name(t->pods, n, sizeof *t->pods);
    size_t *list = fg_malloc(cap * sizeof *list);
    memcpy(list, sorted, n * sizeof *list);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)fg_sched_rng_below(rng, i);
        size_t tmp = list[i - 1];
        list[i - 1] = list[j];
        list[j] = tmp;
    }
    int64_t s = 0, target = (int64_t)llround(tune * (double)capacity);
    for (size_t i = 0; i < n; i++)
        s += (int64_t)t->pods[i].n_gpus * t->pods[i].gpu_milli;
    while (n > 0 && s < target) {
        const struct fg_sched_trace_pod *p = &t->pods[sorted[fg_sched_rng_below(rng, t->n_pods)]];
        if (s + p->gpu_milli > target)
            break;
        if (n == cap) {
            cap *= 2;
            list = fg_realloc(list, cap * sizeof *list);
        }
        list[n++] = (size_t)(p - t->pods);
        s += (int64_t)p->n_gpus * p->gpu_milli;
    }
    while (n > 0 && s > target) {
        size_t j = (size_t)fg_sched_rng_below(rng, n);
        s -= (int64_t)t->pods[list[j]].n_gpus * t->pods[list[j]].gpu_milli;
        memmove(&list[j], &list[j + 1], (n - j - 1) * sizeof *list);
        n--;
    }
    free(sorted);
    *n_out = n;
    return list;
}

static double round2(double v)
{
    return round(v * 100.0) / 100.0;
}

/* Per-x accumulators of a sampled curve. */
struct curve {
    double sum[FG_SCHED_CURVE_MAX + 2];
    int count[FG_SCHED_CURVE_MAX + 2];
};

static void curve_add(struct curve *cv, int x, double v)
{
    if (x >= 0 && x <= FG_SCHED_CURVE_MAX) {
        cv->sum[x] += v;
        cv->count[x]++;
    }
}

static double curve_at(const struct curve *cv, int x)
{
    if (cv->count[x])
        return round2(cv->sum[x] / cv->count[x]);
    int n = (x > 0 ? cv->count[x - 1] : 0) + cv->count[x + 1];
    if (!n)
        return NAN;
    return round2(((x > 0 ? cv->sum[x - 1] : 0) + cv->sum[x + 1]) / n);
}

enum fg_err fg_sched_replay_run(const struct fg_sched_trace *t, const struct fg_sched_replay_opts *opts,
                                struct fg_sched_replay_result *out, char *errmsg)
{
    memset(out, 0, sizeof *out);
    struct fg_sched_rng rng;
    fg_sched_rng_seed(&rng, opts->seed);
    size_t *order = sorted_by_name(t->nodes, t->n_nodes, sizeof *t->nodes);
    struct fg_sched_cluster c;
    struct fg_sched_mix mix = { 0 };
    struct fg_sched_policy *pol = NULL;
    size_t *list = NULL, n_list = 0;
    struct curve *alloc = fg_calloc(1, sizeof *alloc), *frag = fg_calloc(1, sizeof *frag);
    enum fg_err err = build_cluster(t, order, &c, errmsg);
    if (err)
        goto out_free_cluster;
    if (c.gpu_milli_total == 0) {
        err = fg_errmsg(errmsg, FG_E_INVAL, "the node list has no GPUs");
        goto out_free_cluster;
    }
    for (size_t i = c.n_slots; i > 1 && !opts->in_order; i--) {  /* a random permutation of ranks */
        size_t j = (size_t)fg_sched_rng_below(&rng, i);
        uint32_t tmp = c.nodes[i - 1].rank;
        c.nodes[i - 1].rank = c.nodes[j].rank;
        c.nodes[j].rank = tmp;
    }
    fg_sched_replay_mix(t, &mix);
    err = fg_sched_policy_new(opts->policy, &mix, opts->seed ^ 0x5eed5eed5eedull, &pol, errmsg);
    if (err)
        goto out_free_cluster;
    list = opts->in_order ? as_listed(t, &n_list) : submission(t, &rng, c.gpu_milli_total, opts->tune, &n_list);

    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
    struct fg_sched_frag_sum frag_sum;
    fg_sched_frag_sum_init(&frag_sum, &mix, &c);
    double unit = (double)c.gpu_milli_total / 100.0;
    int64_t arrived = 0;
    uint64_t t0 = fg_clock_mono_ns();
    for (size_t k = 0; k < n_list; k++) {
        const struct fg_sched_trace_pod *tp = &t->pods[list[k]];
        struct fg_sched_pod req;
        struct fg_sched_placement pl;
        fg_sched_trace_pod_request(tp, &req);
        arrived += (int64_t)tp->n_gpus * tp->gpu_milli;
        err = fg_sched_schedule(&fw, &c, &req, &pl, errmsg);
        if (err)
            break;
        if (pl.code == FG_SCHED_SUCCESS)
            fg_sched_frag_sum_update(&frag_sum, &c, pl.node);
        else
            out->pods_failed++;
        if (opts->on_pod)
            opts->on_pod(opts->ud, tp, &c, &pl);
        int x = (int)nearbyint((double)arrived / unit);
        curve_add(alloc, x, round2((double)c.gpu_milli_used * 100.0 / (double)c.gpu_milli_total));
        curve_add(frag, x, frag_sum.total * 100.0 / (double)c.gpu_milli_total);
    }
    out->elapsed_ms = (double)(fg_clock_mono_ns() - t0) / 1e6;
    out->pods_submitted = (int)n_list;
    for (int x = 0; x <= FG_SCHED_CURVE_MAX; x++)
        out->alloc_curve[x] = curve_at(alloc, x);
    out->unallocated_pct_at_100 = 100.0 - out->alloc_curve[100];
    out->alloc_pct_at_130 = out->alloc_curve[130];
    out->frag_pct_at_80 = curve_at(frag, 80);
    fg_sched_frag_sum_cleanup(&frag_sum);
    fg_sched_framework_cleanup(&fw);
out_free_cluster:
    free(list);
    fg_sched_policy_free(pol);
    fg_sched_mix_cleanup(&mix);
    fg_sched_cluster_cleanup(&c);
    free(order);
    free(alloc);
    free(frag);
    return err;
}
