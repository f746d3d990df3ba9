/* policy_int — what the placement policies share (module-internal). */
#ifndef FG_SCHEDULER_POLICIES_POLICY_INT_H
#define FG_SCHEDULER_POLICIES_POLICY_INT_H

#include "scheduler/policies/gradient_int.h"
#include "scheduler/policies/policy.h"
#include "scheduler/policies/prices_int.h"

/* Constructors behind fg_sched_policy_new (a NULL mix makes fracgpu learn its own: online mode). */
struct fg_sched_policy *fg__sched_random_new(uint64_t seed);
struct fg_sched_policy *fg__sched_dotprod_new(void);
struct fg_sched_policy *fg__sched_bestfit_new(void);
struct fg_sched_policy *fg__sched_packing_new(void);
struct fg_sched_policy *fg__sched_clustering_new(void);
struct fg_sched_policy *fg__sched_fgd_new(const struct fg_sched_mix *mix);
struct fg_sched_policy *fg__sched_fracgpu_new(const struct fg_sched_mix *mix);

/* FGD's integer score of node n: int(100 · sigmoid((F(before) + bias − F(after)) / 1000)), F from gr
 * (whose sigmoid table the policy has initialised).
 * Whole-GPU pods take GPUs with free ≥ milli in ascending-free order; a sharing pod tries every GPU
 * that admits it (one of each set of identical idle GPUs) and *gpu gets the lowest-index one reaching
 * the highest score. bias carries a policy's extra terms in GPU-milli; price (may be NULL) the
 * price term, which depends on the GPU a sharing pod takes: −weight · the placement's loss (prices_int.h). */
int64_t fg__sched_gradient_score(struct fg__grad *gr, const struct fg_sched_cycle *cy, const struct fg_sched_node *n,
                                 double bias, const struct fg__price_term *price, int *gpu);

struct fg__equiv_slot;

/* Node-equivalence cache of one policy: scores of nodes in identical states, per cycle (equiv.c). */
struct fg__equiv {
    struct fg__equiv_slot *slots;   /* indexed by interned node state */
    size_t n;
    uint64_t cycle;
};

void fg__equiv_init(struct fg__equiv *eq);
void fg__equiv_cleanup(struct fg__equiv *eq);
/* Forgets every entry: the cluster or the policy's state may have changed. */
void fg__equiv_next_cycle(struct fg__equiv *eq);
/* score(ctx, n, gpu) for node n of c, or the result it gave a node in the same state this cycle. */
int64_t fg__equiv_score(struct fg__equiv *eq, const struct fg_sched_cluster *c, const struct fg_sched_node *n,
                        int *gpu, int64_t (*score)(void *ctx, const struct fg_sched_node *n, int *gpu), void *ctx);

#endif
