/*
 * policy — Score plugins: how the framework ranks the nodes that passed every filter.
 *
 * A policy is a vtable plus its state. score() returns an integer for one feasible node (higher is
 * better) and may choose the GPU a sharing pod should take there (*gpu, -1 = the framework's
 * default choice); normalize(), when present, rescales the scores of all feasible nodes of a cycle
 * (NormalizeScore). observe() sees every pod once per cycle before scoring, placed or not — online
 * policies learn from it; bound() sees each placement after Reserve, so that a policy's own state
 * can follow the cluster. All hooks but score are optional.
 *
 * Policies available by name (fg_sched_policy_new): the six of the FGD paper — random, dotprod,
 * clustering, packing, bestfit, fgd — and fracgpu's own, `fracgpu` (online: learns its reference mix
 * from the pods seen so far; the operator's default) and `fracgpu-offline` (given the whole trace's
 * mix). `fgd` and `fracgpu-offline` need a reference mix (mix.h); the others ignore it.
 */
#ifndef FG_SCHEDULER_POLICY_H
#define FG_SCHEDULER_POLICY_H

#include "scheduler/framework.h"

struct fg_sched_mix;

struct fg_sched_policy_ops {
    const char *name;
    int64_t (*score)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                     const struct fg_sched_node *n, int *gpu);
    void (*normalize)(struct fg_sched_policy *pol, int64_t *scores, size_t n);
    void (*observe)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy);
    void (*bound)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy, int node,
                  const struct fg_sched_placement *p);
    void (*free)(struct fg_sched_policy *pol);
};

struct fg_sched_policy {
    const struct fg_sched_policy_ops *ops;
    size_t n_nodes;                 /* the node count it was created for (set by fg_sched_policy_new) */
};

/* Creates policy `name` for cluster c (borrowed, must outlive the policy). Policies keep per-node
 * state, so c's node set must not change afterwards: when it does, create a new policy
 * (fg_sched_schedule refuses a cluster whose node count differs). mix (borrowed, may be
 * NULL unless the policy needs one) is the whole-trace reference mix; seed drives the random policy.
 * FG_E_INVAL (errmsg) for an unknown name or a missing mix. */
enum fg_err fg_sched_policy_new(const char *name, const struct fg_sched_cluster *c,
                                const struct fg_sched_mix *mix, uint64_t seed,
                                struct fg_sched_policy **out, char *errmsg) FG_MUST_USE;
void fg_sched_policy_free(struct fg_sched_policy *pol);

/* Names accepted by fg_sched_policy_new, NULL-terminated. */
extern const char *const fg_sched_policy_names[];

#endif
