/*
 * mix — the reference pod mix and the fragmentation measure of the FGD paper.
 *
 * A reference mix is the distribution of pod shapes a cluster expects: groups keyed by (cpu with
 * 0 → 100, GPU milli, GPU count, allowed-model string and its resolved mask), the most frequent groups covering 95% of the
 * pods, each with a share p (shares sum to 1). The fragmentation of a node for a shape is the idle
 * GPU compute that shape could not use there; F_n = Σ p · frag. Memory never enters either.
 *
 * F is summed in fixed point: each share is rounded once to an integer weight w = round(p · 2^39)
 * (fg_sched_mix_weight), and F = (Σ w · frag) · 2^-39 with the sum in 64-bit integers. A node's frag
 * is at most 16 GPUs × 1000 milli < 2^14 and the weights sum to at most 2^39 + types / 2, so the sum
 * stays below 2^53: it converts to a double exactly, and so does F(before) − F(after). Integer
 * addition is associative, which frees the fast paths (gradient_int.h) to sum the types in any order and
 * to merge the types that behave alike on a node, and still equal fg_sched_frag bit for bit; a double
 * sum had to follow mix order, type by type. The rounding moves F by at most types · 2^-40 · frag,
 * under 10^-6 milli with 35 types.
 *
 * A counter accumulates shapes (the whole trace up front, or pod by pod for an online policy) and
 * builds a mix from what it has seen. Both own their arrays; the mix does not point into the counter.
 */
#ifndef FG_SCHEDULER_POLICIES_MIX_H
#define FG_SCHEDULER_POLICIES_MIX_H

#include "scheduler/core/sched.h"

/* One pod shape. spec is the allowed-model string as written ("" = any); mask its resolution. */
struct fg_sched_shape {
    int64_t cpu_milli;
    int gpu_milli;
    int n_gpus;
    uint32_t mask;
    const char *spec;
};

struct fg_sched_mix_type {
    int64_t cpu_milli;              /* 0 already mapped to 100 */
    int gpu_milli;
    int n_gpus;
    uint32_t mask;
    double p;
};

struct fg_sched_mix {
    struct fg_sched_mix_type *types;
    size_t n;
};

struct fg__mix_group;

struct fg_sched_mix_counter {
    struct fg__mix_group *groups;
    size_t n, cap;
    int64_t total;
};

void fg_sched_mix_counter_init(struct fg_sched_mix_counter *mc);
void fg_sched_mix_counter_cleanup(struct fg_sched_mix_counter *mc);
void fg_sched_mix_counter_add(struct fg_sched_mix_counter *mc, const struct fg_sched_shape *s);

/* Builds *mix (replacing and freeing its previous contents) from the counted shapes: groups sorted by
 * count, ties by (cpu, milli, count, spec) descending, taken until they cover ≥ 95% of the pods
 * (FGD's reference mix). An empty counter gives an empty mix. */
void fg_sched_mix_build(const struct fg_sched_mix_counter *mc, struct fg_sched_mix *mix);
/* The same with every counted shape: the whole distribution, rare shapes included. */
void fg_sched_mix_build_all(const struct fg_sched_mix_counter *mc, struct fg_sched_mix *mix);
void fg_sched_mix_cleanup(struct fg_sched_mix *mix);


/* Bits of F's fixed point: a share p weighs fg_sched_mix_weight(p) = round(p · 2^FG_SCHED_FRAG_BITS). */
#define FG_SCHED_FRAG_BITS 39

int64_t fg_sched_mix_weight(double p);

/* F from its fixed-point sum Σ w · frag (exact: the sum is below 2^53). */
static inline double fg_sched_frag_value(int64_t sum)
{
    return (double)sum * (1.0 / (double)(1ll << FG_SCHED_FRAG_BITS));
}

/* The fragmentation F of a node of GPU model `model` (-1 without GPUs) with free cpu `free_cpu` and
 * free GPU compute free[0..n) for the mix: Σ_t p_t · frag(t), summed in fixed point. */
double fg_sched_frag(const struct fg_sched_mix *mix, int model, int64_t free_cpu, const int *free, int n);

/* fg_sched_frag of node n as it stands. */
double fg_sched_frag_node(const struct fg_sched_mix *mix, const struct fg_sched_node *n);

/* The fragmentation of a whole cluster for a mix — Σ fg_sched_frag_node over its live nodes — kept
 * as a running sum: a node's F is recomputed only when the caller says the node changed. The sum is
 * in double, in the order of the changes (the placement experiment's curves are defined so). */
struct fg_sched_frag_sum {
    const struct fg_sched_mix *mix; /* borrowed */
    double *node;                   /* per slot: the node's F in the sum, 0 for a free slot */
    size_t n_slots;
    double total;
};

void fg_sched_frag_sum_init(struct fg_sched_frag_sum *fs, const struct fg_sched_mix *mix,
                            const struct fg_sched_cluster *c);
/* Node id of c changed: charged, released, updated, added or removed. */
void fg_sched_frag_sum_update(struct fg_sched_frag_sum *fs, const struct fg_sched_cluster *c, int id);
void fg_sched_frag_sum_cleanup(struct fg_sched_frag_sum *fs);

#endif
