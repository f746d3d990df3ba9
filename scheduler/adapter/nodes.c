/*
 * nodes — the snapshot's nodes and their GPU bins.
 *
 * A node enters the core's snapshot with its allocatable CPU, memory, pods and nvidia.com/gpu, its
 * labels, taints and cordon. Its GPU slots are bins: a slot is held by one live capacity pod (the
 * one a tenant's fracgpu.io/gpu-index names, when there is one, so that a restarted scheduler puts
 * tenants back on the slots they were bound to) or carries a phantom charge that lets nothing in; so
 * does a held GPU being emptied by consolidation, on top of the tenants it still has.
 * A change of the node object or of its bins marks it dirty; sa_nodes_flush rebuilds dirty nodes
 * before each pass: removed from the snapshot, added again, every pod on it charged again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/quantity.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"
#include "scheduler/adapter/adapter_int.h"

struct sa_node *sa_node_get(struct fg__sched_adapter *a, const char *name, bool create)
{
    struct sa_node *n = NULL;
    if (lh_table_lookup_ex(a->nodes, name, (void **)&n) || !create)
        return n;
    n = fg_calloc(1, sizeof(*n));
    n->name = fg_strdup(name);
    n->id = -1;
    lh_table_insert(a->nodes, n->name, n);
    return n;
}

/* The parts of a node object the snapshot reads, compared to tell a change from a heartbeat. */
static bool same_node(json_object *x, json_object *y)
{
    if (!x || !y)
        return false;
    static const char *const paths[][3] = {
        { "metadata", "labels", NULL }, { "spec", "taints", NULL }, { "spec", "unschedulable", NULL },
        { "status", "allocatable", NULL },
    };
    for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
        json_object *u = fg_json_get(x, paths[i][0], paths[i][1], NULL), *v = fg_json_get(y, paths[i][0], paths[i][1], NULL);
        if (!json_object_equal(u, v))
            return false;
    }
    return true;
}

void sa_node_seen(struct fg__sched_adapter *a, json_object *node)
{
    const char *name = fg_json_get_str(node, "metadata", "name", NULL);
    if (!name)
        return;
    struct sa_node *n = sa_node_get(a, name, true);
    bool same = same_node(n->json, node);
    json_object_put(n->json);
    n->json = json_object_get(node);
    if (!same) {
        n->dirty = true;
        a->epoch++;
    }
}

void sa_node_gone(struct fg__sched_adapter *a, const char *name)
{
    struct sa_node *n = sa_node_get(a, name, false);
    if (!n)
        return;
    json_object_put(n->json);
    n->json = NULL;
    n->dirty = true;
    a->epoch++;
}

enum sa_leaving sa_node_leaving(const struct sa_node *n)
{
    /* the taints cluster-autoscaler and Karpenter (v1, and before v1) put on nodes they remove */
    static const char *const removing[] = { "ToBeDeletedByClusterAutoscaler", "karpenter.sh/disrupted",
                                            "karpenter.sh/disruption" };
    json_object *taints = fg_json_get(n->json, "spec", "taints", NULL);
    for (size_t i = 0; i < fg_json_array_len(taints); i++) {
        const char *key = fg_json_get_str(json_object_array_get_idx(taints, i), "key", NULL);
        for (size_t j = 0; j < sizeof(removing) / sizeof(*removing); j++)
            if (fg_str_eq(key, removing[j]))
                return SA_REMOVED;
    }
    json_object *unsched = fg_json_get(n->json, "spec", "unschedulable", NULL);
    return unsched && json_object_get_boolean(unsched) ? SA_CORDONED : SA_STAYING;
}

void sa_nodes_forget_cap(struct fg__sched_adapter *a, const struct sa_pod *cap)
{
    /* a walk over every node: capacity pods go rarely, and one may sit in a bin of a node it has
     * left (its node changed, or it was unbound), which its own node pointer would not find */
    struct lh_entry *e;
    lh_foreach(a->nodes, e) {
        struct sa_node *n = (struct sa_node *)lh_entry_v(e);
        for (int s = 0; s < FG_SCHED_MAX_GPUS; s++)
            if (n->bins[s].cap == cap) {
                n->bins[s].cap = NULL;
                n->dirty = true;
            }
    }
}

int sa_node_slot_of(const struct sa_node *n, const char *cap_name)
{
    for (int s = 0; cap_name && s < n->n_gpus; s++)
        if (n->bins[s].cap && !strcmp(n->bins[s].cap->name, cap_name))
            return s;
    return -1;
}

static int64_t quantity_units(json_object *list, const char *name, int64_t div)
{
    int64_t milli = 0;
    char why[FG_ERRMSG_MAX];
    json_object *v = fg_json_get(list, name, NULL);
    if (!v || fg_quantity_json(v, &milli, why) != FG_OK || milli < 0)
        return 0;
    return milli / div;
}

/* The bins of n: the live capacity pods among its pods, each on its slot. */
static void assign_bins(struct fg__sched_adapter *a, struct sa_node *n)
{
    bool live[FG_SCHED_MAX_GPUS] = { false };
    for (int s = 0; s < FG_SCHED_MAX_GPUS; s++) {
        struct sa_pod *c = n->bins[s].cap;
        bool keep = c && s < n->n_gpus && c->info.role == FG_SA_CAPACITY && c->info.cap_live && !c->deleting_sent &&
                    c->on == n;
        if (!keep)
            n->bins[s].cap = NULL;
        live[s] = keep;
    }
    for (size_t i = 0; i < n->n_pods; i++) {
        struct sa_pod *c = n->pods[i];
        if (c->info.role != FG_SA_CAPACITY || !c->info.cap_live || c->deleting_sent || sa_node_slot_of(n, c->name) >= 0)
            continue;
        int want = -1;   /* the slot its tenants were bound to */
        for (size_t j = 0; j < n->n_pods && want < 0; j++) {
            struct sa_pod *t = n->pods[j];
            if (t->info.role == FG_SA_FRACGPU && fg_str_eq(t->info.cap_name, c->name) && t->info.gpu_index >= 0 &&
                t->info.gpu_index < n->n_gpus && !live[t->info.gpu_index])
                want = t->info.gpu_index;
        }
        for (int s = 0; want < 0 && s < n->n_gpus; s++)
            if (!live[s])
                want = s;
        if (want < 0) {
            fg_log(FG_LOG_WARN, SA_COMPONENT, "node %s: capacity pod %s has no GPU slot left of %d", n->name, c->name,
                   n->n_gpus);
            continue;
        }
        n->bins[want].cap = c;
        live[want] = true;
    }
    n->gpu_mem_mib = 0;
    for (int s = 0; s < n->n_gpus; s++) {
        struct sa_pod *c = n->bins[s].cap;
        if (c && (!n->gpu_mem_mib || c->info.cap_gpu_mem_mib < n->gpu_mem_mib))
            n->gpu_mem_mib = c->info.cap_gpu_mem_mib;
        if (c && c->info.cap_gpu_mem_mib > a->gpu_mem_max)
            a->gpu_mem_max = c->info.cap_gpu_mem_mib;
    }
}

static void charge_phantom(struct fg__sched_adapter *a, struct sa_node *n, int s)
{
    const struct fg_sched_pod ph = { .name = SA_PHANTOM_OWNER, .n_gpus = 1, .gpu_milli = FG_SCHED_MILLI,
                                     .sharing = FG_SCHED_SHARE_TIMESLICE, .isolation = FG_SCHED_ISO_DEDICATED,
                                     .owner = SA_PHANTOM_OWNER };
    char why[FG_ERRMSG_MAX];
    if (fg_sched_framework_add_bound(&a->fw, &a->cluster, &ph, n->id, &s, 1, &n->bins[s].phantom, why) != FG_OK)
        fg_log(FG_LOG_ERROR, SA_COMPONENT, "node %s: cannot mark GPU slot %d unheld: %s", n->name, s, why);
}

/* Adds n to the snapshot from its object; false (logged) when the core refuses it. */
static bool add_node(struct fg__sched_adapter *a, struct sa_node *n)
{
    json_object *alloc = fg_json_get(n->json, "status", "allocatable", NULL);
    json_object *labels = fg_json_get(n->json, "metadata", "labels", NULL);
    json_object *taints = fg_json_get(n->json, "spec", "taints", NULL);
    int64_t gpus = quantity_units(alloc, FG_RES_NVIDIA_GPU, 1000);
    n->n_gpus = gpus > FG_SCHED_MAX_GPUS ? FG_SCHED_MAX_GPUS : (int)gpus;
    assign_bins(a, n);
    size_t nl = fg_json_object_len(labels), nt = fg_json_array_len(taints), k = 0;
    struct fg_sched_kv *kv = fg_calloc(nl ? nl : 1, sizeof(*kv));
    if (labels && json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach(labels, key, val) {
            kv[k++] = (struct fg_sched_kv){ key, json_object_get_string(val) };
        }
    }
    struct fg_sched_taint *tt = fg_calloc(nt ? nt : 1, sizeof(*tt));
    size_t kt = 0;
    for (size_t i = 0; i < nt; i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        const char *key = fg_json_get_str(t, "key", NULL);
        int effect = fg_sa_effect(fg_json_get_str(t, "effect", NULL));
        if (key && effect)
            tt[kt++] = (struct fg_sched_taint){ key, fg_json_get_str(t, "value", NULL), effect };
    }
    int phantoms = 0;
    for (int s = 0; s < n->n_gpus; s++)
        phantoms += !n->bins[s].cap || sa_draining(n->bins[s].cap);
    const char *model = fg_json_get_str(labels, "nvidia.com/gpu.product", NULL);
    json_object *unsched = fg_json_get(n->json, "spec", "unschedulable", NULL);
    struct fg_sched_node_spec spec = {
        .name = n->name,
        .cpu_milli = quantity_units(alloc, "cpu", 1),
        .mem_mib = quantity_units(alloc, "memory", FG_MIB_MILLI),
        .max_pods = (int)quantity_units(alloc, "pods", 1000) + phantoms,   /* phantoms take no pod's room */
        .model = n->n_gpus ? (model && *model ? model : "gpu") : NULL,
        .n_gpus = n->n_gpus,
        .gpu_mem_mib = n->gpu_mem_mib,
        .labels = kv, .n_labels = k,
        .taints = tt, .n_taints = kt,
        .unschedulable = unsched && json_object_get_boolean(unsched),
    };
    char why[FG_ERRMSG_MAX];
    enum fg_err err = fg_sched_cluster_add_node(&a->cluster, &spec, &n->id, why);
    free(kv);
    free(tt);
    if (err) {
        fg_log(FG_LOG_ERROR, SA_COMPONENT, "node %s left out: %s", n->name, why);
        n->id = -1;
        return false;
    }
    for (int s = 0; s < n->n_gpus; s++)
        if (!n->bins[s].cap || sa_draining(n->bins[s].cap))   /* a draining GPU keeps its tenants, takes no new one */
            charge_phantom(a, n, s);
    return true;
}

static void rebuild(struct fg__sched_adapter *a, struct sa_node *n)
{
    n->dirty = false;
    if (n->id >= 0) {
        char why[FG_ERRMSG_MAX];
        for (size_t i = 0; i < n->n_pods; i++)
            fg_sched_framework_unreserve(&a->fw, &a->cluster, &n->pods[i]->charge, &n->pods[i]->pl);
        for (int s = 0; s < FG_SCHED_MAX_GPUS; s++)
            n->bins[s].phantom.code = FG_SCHED_UNSCHEDULABLE;
        if (fg_sched_cluster_remove_node(&a->cluster, n->id, why) != FG_OK)
            fg_log(FG_LOG_ERROR, SA_COMPONENT, "node %s: %s", n->name, why);
        n->id = -1;
    }
    if (n->json && add_node(a, n))
        for (size_t i = 0; i < n->n_pods; i++)
            sa_charge_on(a, n->pods[i], n);
    else
        for (size_t i = 0; i < n->n_pods; i++)
            n->pods[i]->charged_slot = -1;
}

void sa_nodes_flush(struct fg__sched_adapter *a)
{
    struct lh_entry *e, *next;
    for (e = a->nodes->head; e; e = next) {
        next = e->next;
        struct sa_node *n = (struct sa_node *)lh_entry_v(e);
        if (!n->dirty)
            continue;
        rebuild(a, n);
        if (!n->json && n->n_pods == 0) {
            lh_table_delete_entry(a->nodes, e);
            free(n->pods);
            free(n->name);
            free(n);
        }
    }
}

void sa_nodes_free(struct fg__sched_adapter *a)
{
    struct lh_entry *e;
    lh_foreach(a->nodes, e) {
        struct sa_node *n = (struct sa_node *)lh_entry_v(e);
        json_object_put(n->json);
        free(n->pods);
        free(n->name);
        free(n);
    }
    lh_table_free(a->nodes);
    a->nodes = NULL;
}
