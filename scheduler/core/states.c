/*
 * states — interned node states: nodes in identical states share one small integer id.
 *
 * A node's score under the FGD-family placement policies depends only on its model, free CPU and
 * each GPU's free compute, free memory and tenants' mode (dedicated owners aside, which they never
 * cache). The cluster keeps one record per distinct such state and gives every node the id of its
 * record, re-interned on every change of the node (cluster.c), so a placement policy's
 * node-equivalence cache (policies/equiv.c) is one array index per node instead of a hash and a
 * GPU-by-GPU comparison on every cycle.
 *
 * Design: records are appended and looked up through an open-addressing index keyed by a hash of
 * the state, equality confirmed field by field at intern time (once per change, not per cycle).
 * Records are never removed one by one: when the table is full every node is re-interned from
 * scratch (ids are renumbered; live states are at most the node count, the table holds twice the
 * slot count plus slack, so this happens at most once per node-count-many new states; a removed
 * node's slot holds no state). Ids are therefore only meaningful between two changes of the
 * cluster, which is exactly the life of a scheduling cycle.
 * Ownership: the table belongs to the cluster (freed by fg_sched_cluster_cleanup).
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/core/states_int.h"

struct state_gpu {
    int free_milli, mode;           /* mode: sharing << 1 | has tenants */
    int64_t free_mem_mib;
};

struct state_rec {
    uint64_t hash;
    int model, n_gpus;
    int64_t free_cpu;
    struct state_gpu gpus[FG_SCHED_MAX_GPUS];
};

struct fg__sched_states {
    struct state_rec *recs;
    uint32_t n, cap;                /* records used / allocated */
    uint32_t *index;                /* record id + 1, 0 = empty */
    size_t mask;
};

static uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static void state_of(const struct fg_sched_node *n, struct state_rec *r)
{
    memset(r, 0, sizeof *r);
    r->model = n->model;
    r->n_gpus = n->n_gpus;
    r->free_cpu = n->free_cpu;
    uint64_t h = mix64((uint64_t)(n->model + 1), (uint64_t)n->free_cpu);
    h = mix64(h, (uint64_t)n->n_gpus);
    for (int g = 0; g < n->n_gpus; g++) {
        const struct fg_sched_gpu *u = &n->gpus[g];
        r->gpus[g] = (struct state_gpu){ u->free_milli, (int)u->sharing << 1 | (u->tenants > 0), u->free_mem_mib };
        h = mix64(h, (uint64_t)r->gpus[g].free_milli | (uint64_t)r->gpus[g].mode << 16);
        h = mix64(h, (uint64_t)u->free_mem_mib);
    }
    r->hash = h;
}

static bool same(const struct state_rec *a, const struct state_rec *b)
{
    if (a->hash != b->hash || a->model != b->model || a->n_gpus != b->n_gpus || a->free_cpu != b->free_cpu)
        return false;
    for (int g = 0; g < a->n_gpus; g++)
        if (a->gpus[g].free_milli != b->gpus[g].free_milli || a->gpus[g].mode != b->gpus[g].mode ||
            a->gpus[g].free_mem_mib != b->gpus[g].free_mem_mib)
            return false;
    return true;
}

/* Empties the table, sized for a cluster of n_slots node slots. */
static void reset(struct fg__sched_states *s, size_t n_slots)
{
    uint32_t cap = (uint32_t)(2 * n_slots + 64);
    if (cap != s->cap) {
        free(s->recs);
        free(s->index);
        s->cap = cap;
        s->recs = fg_malloc(cap * sizeof *s->recs);
        size_t slots = 64;
        while (slots < 2 * (size_t)cap)
            slots *= 2;
        s->index = fg_malloc(slots * sizeof *s->index);
        s->mask = slots - 1;
    }
    memset(s->index, 0, (s->mask + 1) * sizeof *s->index);
    s->n = 0;
}

/* The id of r's state, appended when new; UINT32_MAX when the table is full. */
static uint32_t intern(struct fg__sched_states *s, const struct state_rec *r)
{
    for (size_t i = r->hash & s->mask;; i = (i + 1) & s->mask) {
        uint32_t id = s->index[i];
        if (id == 0) {
            if (s->n == s->cap)
                return UINT32_MAX;
            s->recs[s->n] = *r;
            s->index[i] = ++s->n;
            return s->n - 1;
        }
        if (same(&s->recs[id - 1], r))
            return id - 1;
    }
}

static void intern_all(struct fg_sched_cluster *c)
{
    reset(c->states, c->n_slots);
    struct state_rec r;
    for (size_t i = 0; i < c->n_slots; i++) {
        if (c->nodes[i].removed)
            continue;
        state_of(&c->nodes[i], &r);
        c->nodes[i].state = intern(c->states, &r);
    }
}

void fg__sched_states_update(struct fg_sched_cluster *c, struct fg_sched_node *n)
{
    if (!c->states) {
        c->states = fg_calloc(1, sizeof *c->states);
        reset(c->states, c->n_slots);
    }
    struct state_rec r;
    state_of(n, &r);
    n->state = intern(c->states, &r);
    if (n->state == UINT32_MAX)
        intern_all(c);  /* full of dead states, or the cluster grew: start over (renumbers every node) */
}

uint32_t fg_sched_cluster_state_cap(const struct fg_sched_cluster *c)
{
    return c->states ? c->states->cap : 0;
}

void fg__sched_states_free(struct fg__sched_states *s)
{
    if (!s)
        return;
    free(s->recs);
    free(s->index);
    free(s);
}
