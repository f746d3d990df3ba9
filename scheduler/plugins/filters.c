/*
 * filters — the Filter plugins of the default profile.
 *
 * Each plugin answers one question about one node and reads nothing else: resources (node fit),
 * taints against tolerations, node selector plus required node affinity, the GPU model, whether the
 * GPUs' sharing mode and dedicated owners admit the pod, and whether enough GPU compute is free
 * (fractional: one GPU with free ≥ milli; whole: that many completely free GPUs). GPU checks
 * share fg_sched_gpu_admits so that the filter and the GPU choice can never disagree. Each check is a
 * per-node predicate that FG_SCHED_FILTER_EACH turns into the plugin's pass over a node list.
 */
#include <string.h>

#include "scheduler/plugins/plugins.h"

static inline bool node_fits(const struct fg_sched_cycle *cy, const struct fg_sched_node *n)
{
    const struct fg_sched_pod *p = cy->pod;
    return !n->unschedulable & (n->free_cpu >= p->cpu_milli) & (n->free_mem >= p->mem_mib) & (n->pods < n->max_pods);
}

FG_SCHED_FILTER_EACH(node_fit, node_fits)

const struct fg_sched_filter_plugin fg_sched_plugin_node_fit = { "NodeResourcesFit", NULL, node_fit, NULL };

static bool tolerates(const struct fg_sched_pod *p, const struct fg_sched_taint *t)
{
    for (size_t i = 0; i < p->n_tolerations; i++) {
        const struct fg_sched_toleration *o = &p->tolerations[i];
        if (o->effect && !(o->effect & (int)t->effect))
            continue;
        if (!o->key) {
            if (o->exists)
                return true;
            continue;
        }
        if (strcmp(o->key, t->key))
            continue;
        if (o->exists || !strcmp(o->value ? o->value : "", t->value ? t->value : ""))
            return true;
    }
    return false;
}

static inline bool taints_tolerated(const struct fg_sched_cycle *cy, const struct fg_sched_node *n)
{
    for (size_t i = 0; i < n->n_taints; i++)
        if (n->taints[i].effect != FG_SCHED_PREFER_NO_SCHEDULE && !tolerates(cy->pod, &n->taints[i]))
            return false;
    return true;
}

FG_SCHED_FILTER_EACH(taints, taints_tolerated)

/* Only NoSchedule and NoExecute taints refuse a pod: without them in the cluster, every node passes. */
static bool taints_skips(const struct fg_sched_cycle *cy)
{
    return cy->cluster->hard_tainted_nodes == 0;
}

const struct fg_sched_filter_plugin fg_sched_plugin_taints = { "TaintToleration", NULL, taints, taints_skips };

static const char *label(const struct fg_sched_node *n, const char *key)
{
    for (size_t i = 0; i < n->n_labels; i++)
        if (!strcmp(n->labels[i].key, key))
            return n->labels[i].value;
    return NULL;
}

static bool expr_matches(const struct fg_sched_node *n, const struct fg_sched_expr *e)
{
    const char *v = label(n, e->key);
    bool in = false;
    for (size_t i = 0; v && i < e->n_values; i++)
        in = in || !strcmp(v, e->values[i]);
    switch (e->op) {
    case FG_SCHED_OP_IN: return in;
    case FG_SCHED_OP_NOT_IN: return !in;
    case FG_SCHED_OP_EXISTS: return v != NULL;
    case FG_SCHED_OP_DOES_NOT_EXIST: return v == NULL;
    }
    return false;
}

static bool term_matches(const struct fg_sched_node *n, const struct fg_sched_term *t)
{
    for (size_t i = 0; i < t->n_exprs; i++)
        if (!expr_matches(n, &t->exprs[i]))
            return false;
    return t->n_exprs > 0;  /* an empty term matches nothing, as in Kubernetes */
}

static bool affinity_matches(const struct fg_sched_cycle *cy, const struct fg_sched_node *n)
{
    const struct fg_sched_pod *p = cy->pod;
    for (size_t i = 0; i < p->n_node_selector; i++) {
        const char *v = label(n, p->node_selector[i].key);
        if (!v || strcmp(v, p->node_selector[i].value))
            return false;
    }
    if (p->n_affinity == 0)
        return true;
    for (size_t i = 0; i < p->n_affinity; i++)
        if (term_matches(n, &p->affinity[i]))
            return true;
    return false;
}

FG_SCHED_FILTER_EACH(node_affinity, affinity_matches)

static bool node_affinity_skips(const struct fg_sched_cycle *cy)
{
    return cy->pod->n_node_selector == 0 && cy->pod->n_affinity == 0;
}

const struct fg_sched_filter_plugin fg_sched_plugin_node_affinity = { "NodeAffinity", NULL, node_affinity,
                                                                       node_affinity_skips };

static enum fg_sched_code gpu_model_pre(struct fg_sched_cycle *cy)
{
    if (cy->pod->n_gpus > 0 && cy->model_mask == 0) {
        cy->reason = "no GPU of an allowed model in the cluster";
        return FG_SCHED_UNRESOLVABLE;
    }
    return FG_SCHED_SUCCESS;
}

static inline bool model_allowed(const struct fg_sched_cycle *cy, const struct fg_sched_node *n)
{
    return cy->pod->n_gpus == 0 || (n->model >= 0 && (cy->model_mask & (1u << n->model)));
}

FG_SCHED_FILTER_EACH(gpu_model, model_allowed)

/* The GPU filters pass every node for a CPU-only pod. */
static bool cpu_only(const struct fg_sched_cycle *cy)
{
    return cy->pod->n_gpus == 0;
}

/* The model filter passes every node for a CPU-only pod, and for a GPU pod that allows every model of
 * a cluster whose nodes all have GPUs. */
static bool gpu_model_skips(const struct fg_sched_cycle *cy)
{
    const struct fg_sched_cluster *c = cy->cluster;
    uint32_t all = (uint32_t)((1ull << c->n_models) - 1);
    return cpu_only(cy) || (c->nodes_by_gpus[0] == 0 && (cy->model_mask & all) == all);
}

const struct fg_sched_filter_plugin fg_sched_plugin_gpu_model = { "GPUModel", gpu_model_pre, gpu_model,
                                                                   gpu_model_skips };

/* Whether every GPU of n admits pod, known from the node's summary without looking at each GPU. */
static inline bool admits_all(const struct fg_sched_node *n, const struct fg_sched_pod *p)
{
    return p->isolation != FG_SCHED_ISO_DEDICATED && n->owned_gpus == 0 && p->gpu_mem_mib == 0 &&
           !(n->tenant_modes & ~(1u << p->sharing));  /* FG_SCHED_MEM_SHORT included */
}

static inline bool sharing_admits(const struct fg_sched_cycle *cy, const struct fg_sched_node *n)
{
    if (cy->pod->n_gpus == 0)
        return true;
    if (admits_all(n, cy->pod))
        return n->n_gpus >= cy->pod->n_gpus;
    int admitting = 0;
    for (int g = 0; g < n->n_gpus; g++)
        admitting += fg_sched_gpu_admits(&n->gpus[g], cy->pod);
    return admitting >= cy->pod->n_gpus;
}

FG_SCHED_FILTER_EACH(sharing, sharing_admits)

const struct fg_sched_filter_plugin fg_sched_plugin_sharing = { "GPUSharingIsolation", NULL, sharing, cpu_only };

static enum fg_sched_code gpu_fit_pre(struct fg_sched_cycle *cy)
{
    const struct fg_sched_pod *p = cy->pod;
    if (p->n_gpus == 0)
        return FG_SCHED_SUCCESS;
    if (cy->cluster->max_node_gpus < p->n_gpus) {
        cy->reason = "no node has that many GPUs";
        return FG_SCHED_UNRESOLVABLE;
    }
    return FG_SCHED_SUCCESS;
}

static inline bool gpus_fit(const struct fg_sched_cycle *cy, const struct fg_sched_node *n)
{
    const struct fg_sched_pod *p = cy->pod;
    if (p->n_gpus == 0)
        return true;
    int need = p->n_gpus > 1 ? FG_SCHED_MILLI : p->gpu_milli, fit = 0;
    if (admits_all(n, p))  /* the node's summary answers without looking at each GPU */
        return need == FG_SCHED_MILLI ? n->idle_gpus >= p->n_gpus : n->max_free_milli >= need;
    for (int g = 0; g < n->n_gpus; g++)
        fit += n->gpus[g].free_milli >= need && fg_sched_gpu_admits(&n->gpus[g], p);
    return fit >= p->n_gpus;
}

FG_SCHED_FILTER_EACH(gpu_fit, gpus_fit)

const struct fg_sched_filter_plugin fg_sched_plugin_gpu_fit = { "GPUFit", gpu_fit_pre, gpu_fit, cpu_only };
