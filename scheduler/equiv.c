/*
 * equiv — node-equivalence cache for the FGD-family scores (module-internal, see policy_int.h).
 *
 * Within one cycle a node's score depends only on its model, free CPU and the state of each GPU
 * (free compute and memory, tenants' mode; never a dedicated owner, those nodes are not cached), so
 * nodes in identical states score identically and choose the same GPU index. The cache is an
 * open-addressing table keyed by a hash of that state and confirmed by comparing with the node that
 * filled the slot; entries of older cycles are simply ignored, so starting a cycle costs nothing.
 * Exact: it returns what scoring the node would return.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/policy_int.h"

struct fg__equiv_slot {
    uint64_t cycle, hash;
    const struct fg_sched_node *node;
    int64_t score;
    int gpu;
};

void fg__equiv_init(struct fg__equiv *eq, size_t n_nodes)
{
    memset(eq, 0, sizeof *eq);
    size_t cap = 64;
    while (cap < 2 * n_nodes)
        cap *= 2;
    eq->slots = fg_calloc(cap, sizeof *eq->slots);
    eq->mask = cap - 1;
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

static bool cacheable(const struct fg_sched_node *n)
{
    for (int g = 0; g < n->n_gpus; g++)
        if (n->gpus[g].owner)
            return false;
    return true;
}

static bool same_state(const struct fg_sched_node *a, const struct fg_sched_node *b)
{
    if (a->model != b->model || a->free_cpu != b->free_cpu || a->n_gpus != b->n_gpus)
        return false;
    for (int g = 0; g < a->n_gpus; g++) {
        const struct fg_sched_gpu *u = &a->gpus[g], *v = &b->gpus[g];
        if (u->free_milli != v->free_milli || u->free_mem_mib != v->free_mem_mib || u->sharing != v->sharing ||
            (u->tenants > 0) != (v->tenants > 0))
            return false;
    }
    return true;
}

int64_t fg__equiv_score(struct fg__equiv *eq, const struct fg_sched_node *n, int *gpu,
                        int64_t (*score)(void *ctx, const struct fg_sched_node *n, int *gpu), void *ctx)
{
    if (!cacheable(n))
        return score(ctx, n, gpu);
    uint64_t h = n->state_hash;
    for (size_t i = h & eq->mask;; i = (i + 1) & eq->mask) {
        struct fg__equiv_slot *s = &eq->slots[i];
        if (s->cycle != eq->cycle) {
            *s = (struct fg__equiv_slot){ eq->cycle, h, n, 0, -1 };
            s->score = score(ctx, n, &s->gpu);
            *gpu = s->gpu;
            return s->score;
        }
        if (s->hash == h && same_state(s->node, n)) {
            *gpu = s->gpu;
            return s->score;
        }
    }
}

