/*
 * cluster — the snapshot the scheduler decides on: nodes coming, changing and going, and pods charged.
 *
 * The cluster owns every node and every string in it; fg_sched_cluster_cleanup frees them all. Nodes
 * live in slots (sched.h): a removed node's slot goes on a stack of free slots and the next add takes
 * the last one freed. Every change — add, update, remove, reserve, unreserve — takes a new cluster
 * version for the node's `version`, so per-node caches keyed by version notice it, reused slots
 * included, and re-interns the node's state (states.c).
 *
 * The cluster-wide counts are kept by one function, account(), which adds or subtracts a node's
 * share (its GPUs in sight, their free compute per model, its GPU count, its hard taints): an update
 * subtracts the node as it was and adds it as it is, a removal only subtracts, so the counts stay
 * exact whatever the order of changes. GPUs beyond a node's count keep their charges (sched.h), so
 * every GPU slot of a node is initialised when the node is added, idle, and keeps its memory
 * capacity current through updates.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/core/sched.h"
#include "scheduler/core/states_int.h"

/* A node is a whole number of cache lines (12, as when the latency figures of docs/placement.md were
 * taken): every filter pass strides over the nodes reading their first 64 bytes, so each one starts
 * at the same offset in its line. */
_Static_assert(sizeof(struct fg_sched_node) % 64 == 0, "a node is a whole number of cache lines");

void fg_sched_cluster_init(struct fg_sched_cluster *c)
{
    memset(c, 0, sizeof *c);
}

static void free_labels(struct fg_sched_node *n)
{
    for (size_t i = 0; i < n->n_labels; i++) {
        free((char *)n->labels[i].key);
        free((char *)n->labels[i].value);
    }
    FG_FREE(n->labels);
    n->n_labels = 0;
}

static void free_taints(struct fg_sched_node *n)
{
    for (size_t i = 0; i < n->n_taints; i++) {
        free((char *)n->taints[i].key);
        free((char *)n->taints[i].value);
    }
    FG_FREE(n->taints);
    n->n_taints = 0;
}

static void node_cleanup(struct fg_sched_node *n)
{
    free_labels(n);
    free_taints(n);
    for (int g = 0; g < FG_SCHED_MAX_GPUS; g++)
        FG_FREE(n->gpus[g].owner);
    FG_FREE(n->name);
}

void fg_sched_cluster_cleanup(struct fg_sched_cluster *c)
{
    for (size_t i = 0; i < c->n_slots; i++)
        node_cleanup(&c->nodes[i]);
    free(c->nodes);
    free(c->free_slots);
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

int fg_sched_cluster_find(const struct fg_sched_cluster *c, const char *name)
{
    for (size_t i = 0; i < c->n_slots; i++)
        if (!c->nodes[i].removed && !strcmp(c->nodes[i].name, name))
            return (int)i;
    return -1;
}

static char *dup_or_null(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

static bool hard_tainted(const struct fg_sched_node *n)
{
    for (size_t i = 0; i < n->n_taints; i++)
        if (n->taints[i].effect != FG_SCHED_PREFER_NO_SCHEDULE)
            return true;
    return false;
}

/* Adds (sign 1) or subtracts (sign -1) live node n's share of the cluster-wide counts. */
static void account(struct fg_sched_cluster *c, const struct fg_sched_node *n, int sign)
{
    c->n_nodes += (size_t)sign;
    c->nodes_by_gpus[n->n_gpus] += (size_t)sign;
    c->hard_tainted_nodes += (size_t)(sign * hard_tainted(n));
    c->gpu_milli_total += sign * (int64_t)n->n_gpus * FG_SCHED_MILLI;
    for (int g = 0; g < n->n_gpus; g++) {
        c->gpu_milli_used += sign * (FG_SCHED_MILLI - n->gpus[g].free_milli);
        c->model_free_milli[n->model] += sign * n->gpus[g].free_milli;   /* a node with GPUs has a model */
    }
    int most = FG_SCHED_MAX_GPUS;
    while (most > 0 && c->nodes_by_gpus[most] == 0)
        most--;
    c->max_node_gpus = most;
}

/* Recomputes the node's GPU summary (what filters read instead of every GPU), takes a new version
 * and re-interns its state. */
static void touch(struct fg_sched_cluster *c, struct fg_sched_node *n)
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
        if (u->free_mem_mib < 0)  /* it admits no pod (sched.h): in the field filters read anyway */
            n->tenant_modes |= FG_SCHED_MEM_SHORT;
    }
    n->version = ++c->version;
    fg__sched_states_update(c, n);
}

/* self: the id of the node being updated (its name is taken), -1 for a new node. */
static enum fg_err check_node_spec(const struct fg_sched_cluster *c, const struct fg_sched_node_spec *s, int self,
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
    int found = fg_sched_cluster_find(c, s->name);
    if (self >= 0 && found != self)
        return fg_errmsg(errmsg, FG_E_INVAL, "node %s: an update of node %s cannot rename it", s->name,
                         c->nodes[self].name);
    if (self < 0 && found >= 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "node %s: duplicate name", s->name);
    if (s->n_labels > UINT32_MAX || s->n_taints > UINT32_MAX)
        return fg_errmsg(errmsg, FG_E_INVAL, "node %s: more than %u labels or taints", s->name, UINT32_MAX);
    for (size_t i = 0; i < s->n_labels; i++)
        if (!s->labels[i].key || !s->labels[i].value)
            return fg_errmsg(errmsg, FG_E_INVAL, "node %s: label without key or value", s->name);
    for (size_t i = 0; i < s->n_taints; i++)
        if (!s->taints[i].key)
            return fg_errmsg(errmsg, FG_E_INVAL, "node %s: taint without key", s->name);
    if (s->n_gpus > 0 && fg_sched_cluster_model(c, s->model) < 0 && c->n_models == FG_SCHED_MAX_MODELS)
        return fg_errmsg(errmsg, FG_E_INVAL, "node %s: more than %d GPU models", s->name, FG_SCHED_MAX_MODELS);
    return FG_OK;
}

/* The model index of a checked spec, the model added to the table when new; -1 without GPUs. */
static int spec_model(struct fg_sched_cluster *c, const struct fg_sched_node_spec *s)
{
    if (s->n_gpus == 0)
        return -1;
    int m = fg_sched_cluster_model(c, s->model);
    if (m < 0) {
        m = c->n_models++;
        c->models[m] = fg_strdup(s->model);
    }
    return m;
}

/* Sets n's capacity, labels, taints, cordon and GPUs from a checked spec, keeping every charge:
 * free = capacity − charged, for CPU, memory and each GPU slot's memory. */
static void apply_spec(struct fg_sched_cluster *c, struct fg_sched_node *n, const struct fg_sched_node_spec *s)
{
    n->free_cpu += s->cpu_milli - n->cpu_milli;
    n->free_mem += s->mem_mib - n->mem_mib;
    n->cpu_milli = s->cpu_milli;
    n->mem_mib = s->mem_mib;
    n->max_pods = s->max_pods;
    n->unschedulable = s->unschedulable;
    n->model = spec_model(c, s);
    n->n_gpus = s->n_gpus;
    for (int g = 0; g < FG_SCHED_MAX_GPUS; g++) {
        n->gpus[g].free_mem_mib += s->gpu_mem_mib - n->gpus[g].mem_mib;
        n->gpus[g].mem_mib = s->gpu_mem_mib;
    }
    free_labels(n);
    free_taints(n);
    if (s->n_labels) {
        n->labels = fg_calloc(s->n_labels, sizeof *n->labels);
        for (size_t i = 0; i < s->n_labels; i++)
            n->labels[i] = (struct fg_sched_kv){ fg_strdup(s->labels[i].key), fg_strdup(s->labels[i].value) };
        n->n_labels = (uint32_t)s->n_labels;
    }
    if (s->n_taints) {
        n->taints = fg_calloc(s->n_taints, sizeof *n->taints);
        for (size_t i = 0; i < s->n_taints; i++)
            n->taints[i] = (struct fg_sched_taint){ fg_strdup(s->taints[i].key),
                                                    dup_or_null(s->taints[i].value), s->taints[i].effect };
        n->n_taints = (uint32_t)s->n_taints;
    }
}

/* A slot for a new node: the last one freed, or a new one at the end. */
static int take_slot(struct fg_sched_cluster *c)
{
    if (c->n_free)
        return c->free_slots[--c->n_free];
    if (c->n_slots == c->cap_slots) {
        c->cap_slots = c->cap_slots ? 2 * c->cap_slots : 64;
        c->nodes = fg_realloc(c->nodes, c->cap_slots * sizeof *c->nodes);
    }
    return (int)c->n_slots++;
}

enum fg_err fg_sched_cluster_add_node(struct fg_sched_cluster *c, const struct fg_sched_node_spec *s,
                                      int *id_out, char *errmsg)
{
    enum fg_err err = check_node_spec(c, s, -1, errmsg);
    if (err)
        return err;
    int id = take_slot(c);
    struct fg_sched_node *n = &c->nodes[id];
    memset(n, 0, sizeof *n);
    n->name = fg_strdup(s->name);
    for (int g = 0; g < FG_SCHED_MAX_GPUS; g++)
        n->gpus[g].free_milli = FG_SCHED_MILLI;
    apply_spec(c, n, s);
    n->rank = (uint32_t)id;
    c->slots_version++;
    account(c, n, 1);
    touch(c, n);
    n->uid = n->version;
    if (id_out)
        *id_out = id;
    return FG_OK;
}

static enum fg_err check_live(const struct fg_sched_cluster *c, int id, char *errmsg)
{
    if (!fg_sched_cluster_live(c, id))
        return fg_errmsg(errmsg, FG_E_INVAL, "no node with id %d", id);
    return FG_OK;
}

enum fg_err fg_sched_cluster_update_node(struct fg_sched_cluster *c, int id, const struct fg_sched_node_spec *s,
                                         char *errmsg)
{
    enum fg_err err = check_live(c, id, errmsg);
    if (!err)
        err = check_node_spec(c, s, id, errmsg);
    if (err)
        return err;
    struct fg_sched_node *n = &c->nodes[id];
    account(c, n, -1);
    apply_spec(c, n, s);
    account(c, n, 1);
    touch(c, n);
    return FG_OK;
}

enum fg_err fg_sched_cluster_remove_node(struct fg_sched_cluster *c, int id, char *errmsg)
{
    enum fg_err err = check_live(c, id, errmsg);
    if (err)
        return err;
    struct fg_sched_node *n = &c->nodes[id];
    account(c, n, -1);
    node_cleanup(n);
    memset(n, 0, sizeof *n);
    n->removed = n->unschedulable = true;
    if (c->n_free == c->cap_free) {
        c->cap_free = c->cap_free ? 2 * c->cap_free : 16;
        c->free_slots = fg_realloc(c->free_slots, c->cap_free * sizeof *c->free_slots);
    }
    c->free_slots[c->n_free++] = id;
    c->version++;
    c->slots_version++;
    return FG_OK;
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
        if (gpus[i] < n->n_gpus) {  /* a GPU out of sight counts nowhere */
            c->gpu_milli_used += sign * p->gpu_milli;
            c->model_free_milli[n->model] -= sign * p->gpu_milli;
        }
        if (sign > 0) {
            g->sharing = p->sharing;
            if (p->isolation == FG_SCHED_ISO_DEDICATED && !g->owner)
                g->owner = fg_strdup(p->owner);
        } else if (g->tenants == 0) {
            g->sharing = FG_SCHED_SHARE_NONE;
            FG_FREE(g->owner);
        }
    }
    touch(c, n);
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
