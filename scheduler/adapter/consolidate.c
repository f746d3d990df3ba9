/*
 * consolidate — fewer GPUs for the same pods: a held GPU whose every tenant fits on the other held
 * GPUs is emptied, so that its capacity pod goes, and with the last one its node.
 *
 * Why. Placement is online: a pod goes where it fits best when it comes, and nothing moves after. As
 * pods leave and allocations shrink, GPUs are left partly filled, and pods that would fit on fewer
 * GPUs keep more. Consolidation repacks, one GPU at a time, as Karpenter and the descheduler do
 * for nodes. On the GenTD26 trace it takes batch from 73 GPUs at the peak to 66
 * (docs/rightsizing.md; `fracgpu simulate` models this file).
 *
 * When. On the tick, once per consolidation interval (--consolidation-interval, default 1m; 0:
 * never), and only at rest: no GPU pod that can be placed waits or is being bound, none is nominated
 * for a preemption, and no GPU is being emptied.
 *
 * Which. Every held GPU — a live capacity pod on a node that stays — whose tenants are all movable
 * (fg_sa_podinfo.movable: their workload's updateMode is Auto and a controller makes them again; and
 * bound, Running, not leaving, not spared by a budget a moment ago), in order: fewest tenants, then
 * least memory allocated, then name. A GPU with a tenant larger than any GPU's free room is passed
 * over at once; of the next MAX_TRIED at most (a look costs little on a large cluster), the first
 * whose tenants, largest memory first, can each be put on another GPU is chosen. A destination
 * already has tenants (an idle GPU gains nothing), is held by a capacity pod made for the tenant's
 * own node-level signature (so the node's selectors, affinity and taints are ones the tenant
 * accepts), and passes the core's GPU admission and room checks on the snapshot as the tenants
 * before it would leave it; of those the one with the least memory left wins (best fit). The trial reservations are undone after (the core's reserve and unreserve are
 * exact inverses), so the snapshot is as it was.
 *
 * How. The chosen capacity pod is marked draining: its GPU takes no new tenant (a phantom charge on
 * top of its tenants, nodes.c), and giveback.c evicts the tenants through the Eviction API — budgets
 * honoured, a refusal asked again later — and deletes the capacity pod once they are gone. Their
 * controllers make them again and the scheduler places them like any pod, on the room found here. A
 * drain not finished within DRAIN_TIMEOUT (a budget that keeps refusing) is given up: the GPU takes
 * tenants again. The mark lives in memory only: a new leader finds a GPU partly emptied, which its
 * next consolidation weighs like any other.
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "scheduler/adapter/adapter_int.h"
#include "scheduler/plugins/plugins.h"

#define DRAIN_TIMEOUT_NS (10ull * 60 * FG_NS_PER_S)
#define MAX_TENANTS 64
/* GPUs tried per look, emptiest first: what a look costs stays bounded on a large cluster */
#define MAX_TRIED 32

/* A held GPU that could be emptied. */
struct source {
    struct sa_pod *cap;
    struct sa_node *node;
    int slot;
    struct sa_pod *tenants[MAX_TENANTS];
    size_t n;
    int64_t mem_mib;
};

/* A GPU that may take a moved tenant: held, with tenants, on a node that stays. */
struct dest {
    const struct sa_pod *cap;
    int node, slot;
};

struct look {
    struct source *src;
    size_t n_src;
    struct dest *dst;
    size_t n_dst;
    int max_free_milli;         /* the most any destination has free */
    int64_t max_free_mem_mib;
};

/* A trial reservation, undone after the check. */
struct trial {
    const struct fg_sched_pod *pod;
    int node, slot;
};

/* Whether the scheduler has nothing in flight that a move would race with. */
static bool at_rest(struct fg__sched_adapter *a)
{
    if (a->n_awaiting)
        return false;
    struct lh_entry *e;
    lh_foreach(a->pods, e) {
        const struct sa_pod *p = (const struct sa_pod *)lh_entry_v(e);
        if (p->info.role == FG_SA_FRACGPU && p->info.has_gpu &&
            ((p->waiting && !p->want_error[0]) || p->binding || p->assumed || p->preempt))
            return false;
    }
    return true;
}

/* Whether t, a tenant of the GPU, may be moved now. */
static bool movable_now(const struct sa_pod *t, uint64_t now)
{
    return t->info.movable && t->info.role == FG_SA_FRACGPU && t->pl.code == FG_SCHED_SUCCESS && !t->assumed &&
           !t->binding && !t->info.deleting && !t->deleting_sent && !strcmp(t->info.phase, "Running") &&
           t->spared_until_ns <= now;
}

/* The tenants of GPU slot of n into s; false when it has none or one may not be moved. */
static bool gather(struct sa_node *n, int slot, struct source *s, uint64_t now)
{
    s->n = 0;
    s->mem_mib = 0;
    for (size_t i = 0; i < n->n_pods; i++) {
        struct sa_pod *t = n->pods[i];
        if (t->charged_slot != slot)
            continue;
        if (!movable_now(t, now) || s->n == MAX_TENANTS)
            return false;
        s->tenants[s->n++] = t;
        s->mem_mib += t->charge.gpu_mem_mib;
    }
    return s->n > 0;
}

static int by_fill(const void *x, const void *y)
{
    const struct source *p = x, *q = y;
    if (p->n != q->n)
        return p->n < q->n ? -1 : 1;
    if (p->mem_mib != q->mem_mib)
        return p->mem_mib < q->mem_mib ? -1 : 1;
    return strcmp(p->cap->name, q->cap->name);
}

static int by_memory_desc(const void *x, const void *y)
{
    const struct sa_pod *p = *(struct sa_pod *const *)x, *q = *(struct sa_pod *const *)y;
    if (p->charge.gpu_mem_mib != q->charge.gpu_mem_mib)
        return p->charge.gpu_mem_mib > q->charge.gpu_mem_mib ? -1 : 1;
    return strcmp(p->key, q->key);
}

/* Whether pod fits GPU slot of node id now: the node's room (the core's NodeResourcesFit filter
 * alone: the node constraints are the signature's, checked apart) and the GPU's admission and room. */
static bool room(const struct fg_sched_cluster *c, const struct fg_sched_pod *pod, int id, int slot)
{
    struct fg_sched_cycle cy = { c, pod, fg_sched_pod_model_mask(c, pod), NULL };
    int fit = -1;
    if (fg_sched_plugin_node_fit.filter(&cy, &id, 1, &fit) != 1)
        return false;
    const struct fg_sched_gpu *g = &c->nodes[id].gpus[slot];
    return fg_sched_gpu_admits(g, pod) && g->free_milli >= pod->gpu_milli;
}

/* The best GPU of l other than src's for tenant t; false when there is none. */
static bool destination(struct fg__sched_adapter *a, const struct look *l, const struct source *src,
                        const struct sa_pod *t, struct trial *out)
{
    int64_t best_left = INT64_MAX;
    for (size_t i = 0; i < l->n_dst; i++) {
        const struct dest *d = &l->dst[i];
        const struct fg_sched_gpu *g = &a->cluster.nodes[d->node].gpus[d->slot];
        if (d->cap == src->cap || !fg_str_eq(d->cap->info.sig, t->info.signature) ||
            !room(&a->cluster, &t->charge, d->node, d->slot))
            continue;
        int64_t left = g->free_mem_mib - t->charge.gpu_mem_mib;
        if (left < best_left) {
            best_left = left;
            *out = (struct trial){ &t->charge, d->node, d->slot };
        }
    }
    return best_left != INT64_MAX;
}

/* Whether no GPU of l has room for some tenant of src: a check that costs nothing, before one that
 * costs the destinations times the tenants. */
static bool plainly_stuck(const struct look *l, const struct source *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (src->tenants[i]->charge.gpu_milli > l->max_free_milli ||
            src->tenants[i]->charge.gpu_mem_mib > l->max_free_mem_mib)
            return true;
    return false;
}

/* Whether every tenant of src fits elsewhere at once; the snapshot is left as it was. */
static bool fits_elsewhere(struct fg__sched_adapter *a, const struct look *l, struct source *src)
{
    qsort(src->tenants, src->n, sizeof(*src->tenants), by_memory_desc);
    struct trial trials[MAX_TENANTS];
    size_t k = 0;
    for (; k < src->n; k++) {
        if (!destination(a, l, src, src->tenants[k], &trials[k]))
            break;
        fg_sched_reserve(&a->cluster, trials[k].pod, trials[k].node, &trials[k].slot, 1);
    }
    bool fits = k == src->n;
    while (k--)
        fg_sched_unreserve(&a->cluster, trials[k].pod, trials[k].node, &trials[k].slot, 1);
    return fits;
}

/* The draining capacity pod, if any; a drain that took too long is given up. */
static bool draining(struct fg__sched_adapter *a, uint64_t now)
{
    bool any = false;
    struct lh_entry *e;
    lh_foreach(a->pods, e) {
        struct sa_pod *p = (struct sa_pod *)lh_entry_v(e);
        if (!sa_draining(p))
            continue;
        if (now - p->draining_since_ns < DRAIN_TIMEOUT_NS) {
            any = true;
            continue;
        }
        fg_log(FG_LOG_WARN, SA_COMPONENT, "consolidation gives up emptying capacity pod %s after %llu s: its GPU takes "
               "tenants again", p->key, (unsigned long long)(DRAIN_TIMEOUT_NS / FG_NS_PER_S));
        p->draining_since_ns = 0;
        if (p->on)
            p->on->dirty = true;
        a->epoch++;
        sa_pass_soon(a);
    }
    return any;
}

/* The GPUs that could be emptied, and those that could take their tenants, as the snapshot is now. */
static void survey(struct fg__sched_adapter *a, struct look *l, uint64_t now)
{
    size_t cap_src = 0, cap_dst = 0;
    struct lh_entry *e;
    lh_foreach(a->nodes, e) {
        struct sa_node *node = (struct sa_node *)lh_entry_v(e);
        if (node->id < 0 || sa_node_leaving(node) != SA_STAYING)
            continue;
        for (int s = 0; s < node->n_gpus; s++) {
            struct sa_pod *c = node->bins[s].cap;
            if (!c || c->deleting_sent || sa_draining(c) || !c->info.sig ||
                a->cluster.nodes[node->id].gpus[s].tenants == 0)
                continue;
            if (l->n_dst == cap_dst)
                l->dst = fg_realloc(l->dst, (cap_dst = cap_dst ? 2 * cap_dst : 16) * sizeof(*l->dst));
            l->dst[l->n_dst++] = (struct dest){ c, node->id, s };
            const struct fg_sched_gpu *g = &a->cluster.nodes[node->id].gpus[s];
            if (g->free_milli > l->max_free_milli)
                l->max_free_milli = g->free_milli;
            if (g->free_mem_mib > l->max_free_mem_mib)
                l->max_free_mem_mib = g->free_mem_mib;
            if (l->n_src == cap_src)
                l->src = fg_realloc(l->src, (cap_src = cap_src ? 2 * cap_src : 16) * sizeof(*l->src));
            l->src[l->n_src] = (struct source){ .cap = c, .node = node, .slot = s };
            if (gather(node, s, &l->src[l->n_src], now))
                l->n_src++;
        }
    }
}

void sa_consolidate_tick(struct fg__sched_adapter *a)
{
    uint64_t now = fg_clock_mono_ns(), every = a->o.consolidation_interval_ms * 1000000ull;
    if (!every || now - a->consolidated_ns < every || draining(a, now) || !at_rest(a))
        return;
    a->consolidated_ns = now;
    sa_nodes_flush(a);   /* the snapshot as the pods are now */
    struct look l = { 0 };
    survey(a, &l, now);
    if (l.n_src)   /* qsort wants an array, even of none */
        qsort(l.src, l.n_src, sizeof(*l.src), by_fill);
    for (size_t i = 0, tried = 0; i < l.n_src && tried < MAX_TRIED; i++) {
        if (plainly_stuck(&l, &l.src[i]))
            continue;
        tried++;
        if (!fits_elsewhere(a, &l, &l.src[i]))
            continue;
        struct sa_pod *c = l.src[i].cap;
        fg_log(FG_LOG_INFO, SA_COMPONENT, "consolidation empties capacity pod %s on node %s: its tenants (%zu) fit "
               "on other GPUs", c->key, l.src[i].node->name, l.src[i].n);
        fg_counter_add(a->consolidations, 1);
        c->draining_since_ns = now;
        l.src[i].node->dirty = true;
        sa_pass_soon(a);
        break;
    }
    free(l.src);
    free(l.dst);
}
