/*
 * prices — what a share of a GPU is worth in the best packing of the mix (module-internal).
 *
 * Pods that share GPUs are items of a bin-packing problem whose bins are GPUs of 1000 milli. The
 * cutting-stock linear program packs the reference mix's sharing pods (one GPU, under 1000 milli;
 * demand in proportion to their shares) into as few GPUs as possible, and its dual gives each pod
 * size s a price y(s) in GPU milli: what that size is worth in an optimal packing. On the Alibaba
 * traces a 470 is worth 500 (the best packings put two on a GPU), a 650 667 and a 320 333 (they
 * pair), an 810 1000 (only the rare small pods can join it, so those are worth 0). No set of pods
 * that fits one GPU is worth more than 1000, and the sets an optimal packing uses are worth exactly
 * 1000 (LP duality).
 *
 * V(f), the value of a gap of f free milli, is the most that pods fitting in it are worth (an
 * unbounded knapsack over the priced sizes). A pod of s milli put in a gap of f turns V(f) into
 * y(s) + V(f − s); what it loses, V(f) − V(f − s) − y(s), is never negative and is 0 exactly where
 * the placement extends a packing the LP would choose: the reduced cost of the placement. A 230
 * beside a 650 (350 free) loses 83: the gap was worth a 320 (333), the 230 is worth 250 and the 120
 * it leaves nothing. Where FGD's myopic measure sees a gap of 350 shrink to 120 and calls it less
 * fragmented, the loss sees the 320 that will not fit any more.
 *
 * For a size outside the mix y(s) is unknown; the floor min over f of V(f) − V(f − s) takes its
 * place (for a priced size it equals y(s) up to rounding, at f = 1000): every size's loss is 0 at
 * its best gap.
 *
 * The LP is the arc-flow formulation (Valério de Carvalho, 1999): nodes are fill levels 0..1000 in
 * steps of the greatest common divisor of the sizes and 1000, an arc from h to h + s for each size
 * s that fits, a loss arc from h to the next level; a unit of flow from 0 to 1000 is one GPU, and
 * each size's arcs carry at least its demand. Solved by COIN-OR Clp's dual simplex: about 1,400
 * columns and 120 rows for the 20 sizes of a trace in 10-milli steps, 3–4 ms, once per mix.
 */
#ifndef FG_SCHEDULER_POLICIES_PRICES_INT_H
#define FG_SCHEDULER_POLICIES_PRICES_INT_H

#include <stdbool.h>

#include "scheduler/core/sched.h"
#include "scheduler/policies/mix.h"

struct fg__prices {
    bool valid;                         /* false: no sharing type, or no solution; every loss is 0 */
    double value[FG_SCHED_MILLI + 1];   /* V(f), in GPU milli */
    double floor[FG_SCHED_MILLI + 1];   /* per size s: min over f ≥ s of V(f) − V(f − s) */
};

/* Prices the sharing types of mix (borrowed). Returns pr->valid. */
bool fg__prices_set_mix(struct fg__prices *pr, const struct fg_sched_mix *mix);

/* The loss of a pod of `milli` put in a gap of `free` milli (0 < milli ≤ free ≤ 1000; 0 outside that
 * or when the prices are not valid). */
static inline double fg__prices_loss(const struct fg__prices *pr, int free, int milli)
{
    if (!pr->valid || milli <= 0 || milli > free || free > FG_SCHED_MILLI)
        return 0;
    return pr->value[free] - pr->value[free - milli] - pr->floor[milli];
}

/* The price term of one decision: a sharing pod of `milli`, weighted (GPU-milli of score per milli
 * lost). */
struct fg__price_term {
    const struct fg__prices *prices;
    int milli;
    double weight;
};

#endif
