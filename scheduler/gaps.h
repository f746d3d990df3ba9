/*
 * gaps — the gap histogram behind fracgpu's sum-of-squares term (module-internal).
 *
 * Csirik et al.'s Sum-of-Squares rule for online bin packing keeps N(g), the number of bins whose
 * free space is g, and puts each item where Σ N(g)² grows least: it fills a gap of a size that is
 * common, leaves behind gaps of sizes that are rare, and so keeps the gaps varied enough that later
 * items find one that they fill exactly. Here a bin is a partly used GPU and its gap the free
 * compute, in GAP_STEP-milli buckets, counted per GPU model (a pod that may only run on one model
 * cannot use a gap on another). A gap counts only where some sharing type of the reference mix
 * could take it, in compute (milli ≤ gap) and in its node's free CPU (the smallest CPU of such a
 * type ≤ the node's free CPU): a gap no expected pod can fill is waste already, and pairing it up
 * with others gains nothing.
 *
 * The histogram follows the cluster: fg__gaps_count recounts it from scratch (when the mix changes,
 * since the mix decides which gaps count), fg__gaps_add adds or removes one node's gaps (before and
 * after a reserve or an unreserve). A candidate GPU's change of Σ N² is O(1): two buckets move.
 * The per-candidate functions are inline: fracgpu calls them for every node state it scores, and
 * a call per node was a measurable share of the term's cost.
 */
#ifndef FG_SCHEDULER_GAPS_H
#define FG_SCHEDULER_GAPS_H

#include "scheduler/mix.h"

#define FG__GAP_STEP 10
#define FG__GAP_BUCKETS (FG_SCHED_MILLI / FG__GAP_STEP)

struct fg__gaps {
    int64_t min_cpu[FG_SCHED_MILLI + 1];  /* per gap: smallest CPU of a sharing type fitting it, INT64_MAX none */
    int count[FG_SCHED_MAX_MODELS][FG__GAP_BUCKETS];  /* per model and bucket: counted gaps */
};

/* Recounts the gaps of every node of c for mix (which decides the counted sizes). */
void fg__gaps_count(struct fg__gaps *gp, const struct fg_sched_mix *mix, const struct fg_sched_cluster *c);

/* Adds sign (+1 or −1) times the counted gaps of a node of `model` with free CPU free_cpu and free
 * compute free[0..n); a model outside the table changes nothing. */
void fg__gaps_add(struct fg__gaps *gp, int model, int64_t free_cpu, const int *free, int n, int sign);

/* The bucket of a gap of f milli on a node with free_cpu, or -1 when it does not count. */
static inline int fg__gaps_bucket(const struct fg__gaps *gp, int64_t free_cpu, int f)
{
    if (f <= 0 || f >= FG_SCHED_MILLI || free_cpu < gp->min_cpu[f])
        return -1;
    return f / FG__GAP_STEP;
}

/* The change of Σ N² of model's histogram when one GPU goes from f0 to f1 free milli while its node's
 * free CPU goes from cpu0 to cpu1 (values outside 0..FG_SCHED_MILLI count as no gap). */
static inline int fg__gaps_delta(const struct fg__gaps *gp, int model, int64_t cpu0, int f0, int64_t cpu1, int f1)
{
    if (model < 0 || model >= FG_SCHED_MAX_MODELS)
        return 0;
    int b0 = fg__gaps_bucket(gp, cpu0, f0), b1 = fg__gaps_bucket(gp, cpu1, f1);
    if (b0 == b1)
        return 0;
    const int *n = gp->count[model];
    int d = 0;
    if (b0 >= 0)
        d -= 2 * n[b0] - 1;  /* (N − 1)² − N² */
    if (b1 >= 0)
        d += 2 * n[b1] + 1;  /* (N + 1)² − N² */
    return d;
}

/* What the sum-of-squares term of one decision needs: a sharing pod of (cpu, milli), and the term's
 * weight on the node scored (GPU-milli per unit of Σ N²). */
struct fg__gap_term {
    const struct fg__gaps *gaps;
    int64_t cpu;
    int milli;
    double weight;
};

/* The term for the pod taking GPU g of node n (free compute ≥ milli): weight · fg__gaps_delta. Scoring
 * asks it only for a node's candidate GPUs (the first of each distinct free value). */
static inline double fg__gaps_gpu_bias(const struct fg__gap_term *t, const struct fg_sched_node *n, int g)
{
    int f = n->gpus[g].free_milli;
    return t->weight * fg__gaps_delta(t->gaps, n->model, n->free_cpu, f, n->free_cpu - t->cpu, f - t->milli);
}

#endif
