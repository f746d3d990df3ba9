/*
 * equiv — node-equivalence cache for the FGD-family scores (module-internal, see policy_int.h).
 *
 * Within one cycle a node's score depends only on its model, free CPU and the state of each GPU
 * (free compute and memory, tenants' mode; never a dedicated owner, those nodes are not cached), so
 * nodes in identical states score identically and choose the same GPU index. The cluster interns
 * those states (states.c): equal ids, equal states. The cache is an array indexed by that id whose
 * entries carry the cycle that filled them; entries of older cycles are simply ignored, so starting
 * a cycle costs nothing and a lookup is one array access. Exact: it returns what scoring the node
 * would return.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/policies/policy_int.h"

struct fg__equiv_slot {
    uint64_t cycle;
    int64_t score;
    int gpu;
};

void fg__equiv_init(struct fg__equiv *eq)
{
    memset(eq, 0, sizeof *eq);
    eq->cycle = 1;
}

void fg__equiv_cleanup(struct fg__equiv *eq)
{
    free(eq->slots);
    memset(eq, 0, sizeof *eq);
}

void fg__equiv_next_cycle(struct fg__equiv *eq)
{
    eq->cycle++;
}

int64_t fg__equiv_score(struct fg__equiv *eq, const struct fg_sched_cluster *c, const struct fg_sched_node *n,
                        int *gpu, int64_t (*score)(void *ctx, const struct fg_sched_node *n, int *gpu), void *ctx)
{
    if (n->owned_gpus)
        return score(ctx, n, gpu);
    if (n->state >= eq->n) {
        size_t cap = fg_sched_cluster_state_cap(c);
        eq->slots = fg_realloc(eq->slots, cap * sizeof *eq->slots);
        memset(eq->slots + eq->n, 0, (cap - eq->n) * sizeof *eq->slots);
        eq->n = cap;
    }
    struct fg__equiv_slot *s = &eq->slots[n->state];
    if (s->cycle != eq->cycle) {
        s->cycle = eq->cycle;
        s->gpu = -1;
        s->score = score(ctx, n, &s->gpu);
    }
    *gpu = s->gpu;
    return s->score;
}
