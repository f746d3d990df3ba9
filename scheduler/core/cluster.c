/*
 * cluster — the snapshot the scheduler decides on: building it, validating requests, charging pods.
 *
 * The cluster owns every node and every string in it; fg_sched_cluster_cleanup frees them all.
 * fg_sched_reserve/fg_sched_unreserve are the only functions that change capacity, and they bump
 * the node's version and the cluster's change count so that policies caching per-node values or
 * cluster-wide counts notice the change.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/core/sched.h"
#include "scheduler/core/states_int.h"

void fg_sched_cluster_init(struct fg_sched_cluster *c)
{
    memset(c, 0, sizeof *c);
}

static void node_cleanup(struct fg_sched_node *n)
{
    for (size_t i = 0; i < n->n_labels; i++) {
        free((char *)n->labels[i].key);
        free((char *)n->labels[i].value);
    }
    for (size_t i = 0; i < n->n_taints; i++) {
        free((char *)n->taints[i].key);
        free((char *)n->taints[i].value);
    }
    for (int g = 0; g < n->n_gpus; g++)
        free(n->gpus[g].owner);
    free(n->labels);
    free(n->taints);
    free(n->name);
}

void fg_sched_cluster_cleanup(struct fg_sched_cluster *c)
{
    for (size_t i = 0; i < c->n_nodes; i++)
        node_cleanup(&c->nodes[i]);
    free(c->nodes);
    fg__sched_states_free(c->states);
    for (int m = 0; m < c->n_models; m++)
        free(c->models[m]);
    memset(c, 0, sizeof *c);
}

int fg_sched_cluster_model(const struct fg_sched_cluster *c, const char *name)
{
    for (int m = 0; m < c->n_models; m++)
        if (!strcmp(c->models[m], name))
            return m;
    return -1;
}

static char *dup_or_null(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

/* Recomputes the node's GPU summary (what filters read instead of every GPU) and interned state. */
static void summarize(struct fg_sched_cluster *c, struct fg_sched_node *n)
{
    n->tenant_modes = 0;
    n->owned_gpus = n->idle_gpus = n->max_free_milli = 0;
    for (int g = 0; g < n->n_gpus; g++) {
        const struct fg_sched_gpu *u = &n->gpus[g];
        if (u->tenants)
            n->tenant_modes |= 1u << u->sharing;
        n->owned_gpus += u->owner != NULL;
        n->idle_gpus += u->free_milli == FG_SCHED_MILLI;
        if (u->free_milli > n->max_free_milli)
            n->max_free_milli = u->free_milli;
    }
    fg__sched_states_update(c, n);
}

static enum fg_err check_node_spec(const struct fg_sched_cluster *c, const struct fg_sched_node_spec *s,
                                   char *errmsg)
{
    if (!s->name || !*s->name)
        return fg_errmsg(errmsg, FG_E_INVAL, "node without a name");
    if (s->cpu_milli < 0 || s->mem_mib < 0 || s->max_pods < 0 || s->gpu_mem_mib < 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "node %s: negative capacity", s->name);
    if (s->n_gpus < 0 || s->n_gpus > FG_SCHED_MAX_GPUS)
        return fg_errmsg(errmsg, FG_E_INVAL, "node %s: %d GPUs (0..%d allowed)", s->name, s->n_gpus,
                         FG_SCHED_MAX_GPUS);
    if (s->n_gpus > 0 && (!s->model || !*s->model))
        return fg_errmsg(errmsg, FG_E_INVAL, "node %s: GPUs without a model", s->name);
    for (size_t i = 0; i < c->n_nodes; i++)
        if (!strcmp(c->nodes[i].name, s->name))
            return fg_errmsg(errmsg, FG_E_INVAL, "node %s: duplicate name", s->name);
    for (size_t i = 0; i < s->n_labels; i++)
        if (!s->labels[i].key || !s->labels[i].value)
            return fg_errmsg(errmsg, FG_E_INVAL, "node %s: label without key or value", s->name);
    for (size_t i = 0; i < s->n_taints; i++)
        if (!s->taints[i].key)
            return fg_errmsg(errmsg, FG_E_INVAL, "node %s: taint without key", s->name);
    return FG_OK;
}

enum fg_err fg_sched_cluster_add_node(struct fg_sched_cluster *c, const struct fg_sched_node_spec *s,
                                      int *id_out, char *errmsg)
{
    enum fg_err err = check_node_spec(c, s, errmsg);
    if (err)
        return err;
    int model = -1;
    if (s->n_gpus > 0) {
        model = fg_sched_cluster_model(c, s->model);
        if (model < 0) {
            if (c->n_models == FG_SCHED_MAX_MODELS)
                return fg_errmsg(errmsg, FG_E_INVAL, "node %s: more than %d GPU models", s->name,
                                 FG_SCHED_MAX_MODELS);
            model = c->n_models++;
            c->models[model] = fg_strdup(s->model);
        }
    }
    if (c->n_nodes == c->cap_nodes) {
        c->cap_nodes = c->cap_nodes ? 2 * c->cap_nodes : 64;
        c->nodes = fg_realloc(c->nodes, c->cap_nodes * sizeof *c->nodes);
    }
    struct fg_sched_node *n = &c->nodes[c->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = fg_strdup(s->name);
    n->cpu_milli = n->free_cpu = s->cpu_milli;
    n->mem_mib = n->free_mem = s->mem_mib;
    n->max_pods = s->max_pods;
    n->model = model;
    n->n_gpus = s->n_gpus;
    for (int g = 0; g < s->n_gpus; g++) {
        n->gpus[g].free_milli = FG_SCHED_MILLI;
        n->gpus[g].mem_mib = n->gpus[g].free_mem_mib = s->gpu_mem_mib;
    }
    if (s->n_labels) {
        n->labels = fg_calloc(s->n_labels, sizeof *n->labels);
        for (size_t i = 0; i < s->n_labels; i++)
            n->labels[i] = (struct fg_sched_kv){ fg_strdup(s->labels[i].key), fg_strdup(s->labels[i].value) };
        n->n_labels = s->n_labels;
    }
    if (s->n_taints) {
        n->taints = fg_calloc(s->n_taints, sizeof *n->taints);
        for (size_t i = 0; i < s->n_taints; i++)
            n->taints[i] = (struct fg_sched_taint){ fg_strdup(s->taints[i].key),
                                                    dup_or_null(s->taints[i].value), s->taints[i].effect };
        n->n_taints = s->n_taints;
    }
    n->rank = (uint32_t)c->n_nodes;
    c->gpu_milli_total += (int64_t)s->n_gpus * FG_SCHED_MILLI;
    if (model >= 0)
        c->model_free_milli[model] += (int64_t)s->n_gpus * FG_SCHED_MILLI;
    if (s->n_gpus > c->max_node_gpus)
        c->max_node_gpus = s->n_gpus;
    c->gpuless_nodes += model < 0;
    for (size_t i = 0; i < s->n_taints; i++)
        if (s->taints[i].effect != FG_SCHED_PREFER_NO_SCHEDULE) {
            c->hard_tainted_nodes++;
            break;
        }
    if (id_out)
        *id_out = (int)c->n_nodes;
    c->n_nodes++;
    summarize(c, n);
    return FG_OK;
}

enum fg_err fg_sched_pod_validate(const struct fg_sched_pod *p, char *errmsg)
{
    const char *name = p->name ? p->name : "(unnamed)";
    if (p->cpu_milli < 0 || p->mem_mib < 0 || p->gpu_mem_mib < 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: negative request", name);
    if (p->n_gpus < 0 || p->n_gpus > FG_SCHED_MAX_GPUS)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: %d GPUs (0..%d allowed)", name, p->n_gpus,
                         FG_SCHED_MAX_GPUS);
    if (p->n_gpus == 0 && p->gpu_milli != 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: gpu milli %d without GPUs", name, p->gpu_milli);
    if (p->n_gpus > 0 && (p->gpu_milli < 1 || p->gpu_milli > FG_SCHED_MILLI))
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: gpu milli %d outside 1..1000", name, p->gpu_milli);
    if (p->n_gpus > 1 && p->gpu_milli != FG_SCHED_MILLI)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: %d GPUs must be whole (milli %d)", name, p->n_gpus,
                         p->gpu_milli);
    if (p->isolation == FG_SCHED_ISO_DEDICATED && (!p->owner || !*p->owner))
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: dedicated isolation without an owner", name);
    if (p->group && p->group_min < 1)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: pod group %s with min %d", name, p->group, p->group_min);
    for (size_t i = 0; i < p->n_models; i++)
        if (!p->models[i] || !*p->models[i])
            return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: empty GPU model name", name);
    return FG_OK;
}

uint32_t fg_sched_pod_model_mask(const struct fg_sched_cluster *c, const struct fg_sched_pod *p)
{
    if (p->n_models == 0)
        return FG_SCHED_MODELS_ANY;
    uint32_t mask = 0;
    for (size_t i = 0; i < p->n_models; i++) {
        int m = fg_sched_cluster_model(c, p->models[i]);
        if (m >= 0)
            mask |= 1u << m;
    }
    return mask;
}

static void charge(struct fg_sched_cluster *c, const struct fg_sched_pod *p, int node, const int *gpus,
                   int n_gpus, int sign)
{
    struct fg_sched_node *n = &c->nodes[node];
    n->free_cpu -= sign * p->cpu_milli;
    n->free_mem -= sign * p->mem_mib;
    n->pods += sign;
    for (int i = 0; i < n_gpus; i++) {
        struct fg_sched_gpu *g = &n->gpus[gpus[i]];
        g->free_milli -= sign * p->gpu_milli;
        g->free_mem_mib -= sign * p->gpu_mem_mib;
        g->tenants += sign;
        c->gpu_milli_used += sign * p->gpu_milli;
        c->model_free_milli[n->model] -= sign * p->gpu_milli;   /* a node with GPUs has a model */
        if (sign > 0) {
            g->sharing = p->sharing;
            if (p->isolation == FG_SCHED_ISO_DEDICATED && !g->owner)
                g->owner = fg_strdup(p->owner);
        } else if (g->tenants == 0) {
            g->sharing = FG_SCHED_SHARE_NONE;
            FG_FREE(g->owner);
        }
    }
    summarize(c, n);
    n->version++;
    c->changes++;
}

void fg_sched_reserve(struct fg_sched_cluster *c, const struct fg_sched_pod *p, int node, const int *gpus,
                      int n_gpus)
{
    charge(c, p, node, gpus, n_gpus, 1);
}

void fg_sched_unreserve(struct fg_sched_cluster *c, const struct fg_sched_pod *p, int node, const int *gpus,
                        int n_gpus)
{
    charge(c, p, node, gpus, n_gpus, -1);
}
