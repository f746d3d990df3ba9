/*
 * policy_baseline — the five simple placement policies of the FGD paper, exactly as its experiment
 * scores them.
 *
 * Random picks a uniformly random feasible node (and GPU); DotProd and BestFit score the node's free
 * CPU and GPU against the request (BestFit rescales across the feasible nodes); GpuPacking prefers
 * shared GPUs, then used nodes, then empty ones; GpuClustering keeps pods of one kind (sharing or
 * k-GPU) together and tracks which kinds each node hosts: pods per kind per node, counted by Reserve
 * and Unreserve, so that a kind leaves a node with its last pod there (the experiment never releases
 * a pod, where this equals the paper's tags) and a reused slot starts empty (the counts are of the
 * node whose uid they carry). Scores use the pod's CPU with 0 taken as 100 milli, as the experiment
 * does. Capacity constants (128 cores, 8 GPUs) are the paper's.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/core/rng.h"
#include "scheduler/policies/policy_int.h"

#define CPU_SCALE 128000.0
#define GPU_SCALE 8000.0

static int64_t score_cpu(const struct fg_sched_pod *p)
{
    return p->cpu_milli ? p->cpu_milli : 100;
}

static int node_free_gpu(const struct fg_sched_node *n)
{
    int s = 0;
    for (int g = 0; g < n->n_gpus; g++)
        s += n->gpus[g].free_milli;
    return s;
}

static void free_plain(struct fg_sched_policy *pol)
{
    free(pol);
}

/* ---- random ---- */

struct random_policy {
    struct fg_sched_policy base;
    struct fg_sched_rng rng;
};

static int64_t random_score(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                            const struct fg_sched_node *n, int *gpu)
{
    struct random_policy *rp = (struct random_policy *)pol;
    const struct fg_sched_pod *p = cy->pod;
    if (p->n_gpus == 1 && p->gpu_milli < FG_SCHED_MILLI) {
        int fit[FG_SCHED_MAX_GPUS], k = 0;
        for (int g = 0; g < n->n_gpus; g++)
            if (n->gpus[g].free_milli >= p->gpu_milli && fg_sched_gpu_admits(&n->gpus[g], p))
                fit[k++] = g;
        *gpu = k ? fit[fg_sched_rng_below(&rp->rng, (uint64_t)k)] : -1;
    }
    return (int64_t)(fg_sched_rng_next(&rp->rng) >> 1);
}

/* The ops of a placement policy that scores from the cluster alone. */
#define PLAIN_OPS(name, score, normalize)                                                                  \
    { name, score, normalize, fg_sched_policy_observe_none, fg_sched_policy_reserve_none,                  \
      fg_sched_policy_reserve_none, free_plain }

static const struct fg_sched_policy_ops random_ops = PLAIN_OPS("random", random_score, NULL);

struct fg_sched_policy *fg__sched_random_new(uint64_t seed)
{
    struct random_policy *rp = fg_calloc(1, sizeof *rp);
    rp->base.ops = &random_ops;
    fg_sched_rng_seed(&rp->rng, seed);
    return &rp->base;
}

/* ---- dotprod ---- */

static int64_t dotprod_score(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                             const struct fg_sched_node *n, int *gpu)
{
    (void)pol;
    (void)gpu;
    const struct fg_sched_pod *p = cy->pod;
    double d = ((double)n->free_cpu / CPU_SCALE) * ((double)score_cpu(p) / CPU_SCALE) +
               ((double)node_free_gpu(n) / GPU_SCALE) * ((double)p->n_gpus * p->gpu_milli / GPU_SCALE);
    return (int64_t)(100.0 * (1.0 - 0.5 * d));
}

static const struct fg_sched_policy_ops dotprod_ops = PLAIN_OPS("dotprod", dotprod_score, NULL);

struct fg_sched_policy *fg__sched_dotprod_new(void)
{
    struct fg_sched_policy *pol = fg_calloc(1, sizeof *pol);
    pol->ops = &dotprod_ops;
    return pol;
}

/* ---- bestfit ---- */

static int64_t bestfit_score(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                             const struct fg_sched_node *n, int *gpu)
{
    (void)pol;
    (void)gpu;
    const struct fg_sched_pod *p = cy->pod;
    double left = 0.5 * (double)(n->free_cpu - score_cpu(p)) / CPU_SCALE +
                  0.5 * (double)(node_free_gpu(n) - p->n_gpus * p->gpu_milli) / GPU_SCALE;
    return (int64_t)(100.0 * (1.0 - left));
}

static void bestfit_normalize(struct fg_sched_policy *pol, int64_t *s, size_t n)
{
    (void)pol;
    int64_t lo = s[0], hi = s[0];
    for (size_t i = 1; i < n; i++) {
        lo = s[i] < lo ? s[i] : lo;
        hi = s[i] > hi ? s[i] : hi;
    }
    for (size_t i = 0; i < n; i++)
        s[i] = hi == lo ? 0 : (s[i] - lo) * 100 / (hi - lo);
}

static const struct fg_sched_policy_ops bestfit_ops = PLAIN_OPS("bestfit", bestfit_score, bestfit_normalize);

struct fg_sched_policy *fg__sched_bestfit_new(void)
{
    struct fg_sched_policy *pol = fg_calloc(1, sizeof *pol);
    pol->ops = &bestfit_ops;
    return pol;
}

/* ---- packing ---- */

static int64_t packing_score(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                             const struct fg_sched_node *n, int *gpu)
{
    (void)pol;
    (void)gpu;
    const struct fg_sched_pod *p = cy->pod;
    if (p->n_gpus == 0)
        return 0;
    int fully_free = 0;
    for (int g = 0; g < n->n_gpus; g++)
        fully_free += n->gpus[g].free_milli == FG_SCHED_MILLI;
    if (fully_free == n->n_gpus)
        return 33 - fully_free > fully_free ? 33 - fully_free : fully_free;
    /* The GPUs it would use: tightest first among those with free ≥ milli. */
    bool used[FG_SCHED_MAX_GPUS] = { false };
    int need = p->n_gpus, free_used = 0, ratio = 0;
    while (need > 0) {
        int pick = -1;
        for (int g = 0; g < n->n_gpus; g++)
            if (!used[g] && n->gpus[g].free_milli >= p->gpu_milli &&
                (pick < 0 || n->gpus[g].free_milli < n->gpus[pick].free_milli))
                pick = g;
        if (pick < 0)
            return 0;
        used[pick] = true;
        free_used += n->gpus[pick].free_milli == FG_SCHED_MILLI;
        ratio += n->gpus[pick].free_milli * 100 / FG_SCHED_MILLI;
        need--;
    }
    if (free_used > 0)
        return 50 - free_used > 33 ? 50 - free_used : 33;
    return 100 - ratio / 10 > 50 ? 100 - ratio / 10 : 50;
}

static const struct fg_sched_policy_ops packing_ops = PLAIN_OPS("packing", packing_score, NULL);

struct fg_sched_policy *fg__sched_packing_new(void)
{
    struct fg_sched_policy *pol = fg_calloc(1, sizeof *pol);
    pol->ops = &packing_ops;
    return pol;
}

/* ---- clustering ---- */

/* What one node slot hosts: pods per kind (0 sharing, k k-GPU) of the node with uid `uid`. */
struct clustering_node {
    uint64_t uid;
    uint32_t tags;                  /* bit k: count[k] > 0 */
    int count[FG_SCHED_MAX_GPUS + 1];
};

struct clustering_policy {
    struct fg_sched_policy base;
    struct clustering_node *nodes;  /* per slot */
    size_t cap;
};

static int pod_kind(const struct fg_sched_pod *p)
{
    return p->gpu_milli < FG_SCHED_MILLI ? 0 : p->n_gpus;
}

/* Slots for c's nodes, grown when nodes were added (new slots host nothing). */
static void clustering_grow(struct clustering_policy *cp, const struct fg_sched_cluster *c)
{
    if (c->n_slots <= cp->cap)
        return;
    size_t cap = c->n_slots > 2 * cp->cap ? c->n_slots : 2 * cp->cap;
    cp->nodes = fg_realloc(cp->nodes, cap * sizeof *cp->nodes);
    memset(cp->nodes + cp->cap, 0, (cap - cp->cap) * sizeof *cp->nodes);
    cp->cap = cap;
}

/* The kinds node n hosts; none when its slot's counts are of another node (or of none yet). */
static uint32_t clustering_tags(const struct clustering_policy *cp, const struct fg_sched_cluster *c,
                                const struct fg_sched_node *n)
{
    const struct clustering_node *cn = &cp->nodes[n - c->nodes];
    return cn->uid == n->uid ? cn->tags : 0;
}

static int64_t clustering_score(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                                const struct fg_sched_node *n, int *gpu)
{
    (void)gpu;
    struct clustering_policy *cp = (struct clustering_policy *)pol;
    const struct fg_sched_pod *p = cy->pod;
    if (p->n_gpus == 0)
        return 0;
    uint32_t have = clustering_tags(cp, cy->cluster, n), mine = 1u << pod_kind(p);
    int64_t s = !have ? 25 : have == mine ? 75 : (have & mine) ? 50 : 0;
    return s + 25 * (8000 - node_free_gpu(n)) / 8000;
}

static void clustering_observe(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy)
{
    clustering_grow((struct clustering_policy *)pol, cy->cluster);
}

/* Counts (sign 1) or uncounts (-1) a GPU pod on placement pl's node. */
static void clustering_count(struct fg_sched_policy *pol, const struct fg_sched_cluster *c,
                             const struct fg_sched_pod *p, const struct fg_sched_placement *pl, int sign)
{
    struct clustering_policy *cp = (struct clustering_policy *)pol;
    if (p->n_gpus == 0)
        return;
    clustering_grow(cp, c);
    struct clustering_node *cn = &cp->nodes[pl->node];
    if (cn->uid != c->nodes[pl->node].uid)
        *cn = (struct clustering_node){ .uid = c->nodes[pl->node].uid };
    int k = pod_kind(p);
    cn->count[k] += sign;
    if (cn->count[k] > 0)
        cn->tags |= 1u << k;
    else
        cn->tags &= ~(1u << k);
}

static void clustering_reserve(struct fg_sched_policy *pol, const struct fg_sched_cluster *c,
                               const struct fg_sched_pod *p, const struct fg_sched_placement *pl)
{
    clustering_count(pol, c, p, pl, 1);
}

static void clustering_unreserve(struct fg_sched_policy *pol, const struct fg_sched_cluster *c,
                                 const struct fg_sched_pod *p, const struct fg_sched_placement *pl)
{
    clustering_count(pol, c, p, pl, -1);
}

static void clustering_free(struct fg_sched_policy *pol)
{
    struct clustering_policy *cp = (struct clustering_policy *)pol;
    free(cp->nodes);
    free(cp);
}

static const struct fg_sched_policy_ops clustering_ops = {
    "clustering", clustering_score, NULL, clustering_observe, clustering_reserve, clustering_unreserve, clustering_free,
};

struct fg_sched_policy *fg__sched_clustering_new(void)
{
    struct clustering_policy *cp = fg_calloc(1, sizeof *cp);
    cp->base.ops = &clustering_ops;
    return &cp->base;
}
