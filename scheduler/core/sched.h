/*
 * sched — the placement core: a cluster snapshot, pod requests and the scheduling cycle.
 *
 * The core is pure: it never reads a file, a socket or the clock. The operator's adapter, the trace
 * replay and the benchmarks all fill a `struct fg_sched_cluster` and call fg_sched_schedule(); the
 * same code decides everywhere.
 *
 * Model. A cluster owns its nodes and a table of GPU model names (at most FG_SCHED_MAX_MODELS,
 * referenced by index so that a model check is one bit test; append-only, so an index keeps its
 * meaning). A node owns its name, labels, taints and GPUs. A GPU has compute in milli (1000 = whole
 * GPU), memory in MiB, the sharing mode of the tenants on it and, when a dedicated workload holds it,
 * that owner's name.
 *
 * Dynamic nodes. Nodes are added, updated (capacity, labels, taints, cordon, GPU count, model and
 * memory) and removed at any time. Nodes live in slots: a node's id (its slot's index) never changes
 * while it exists, and a removed node's slot may be reused by a later node. Every change takes a new
 * cluster version, and a node's `version` is the cluster version of its last change, so versions are
 * unique across the whole cluster: a cache keyed by (slot, version) can never mistake a slot's new
 * node for the one before it. A node's `uid` (the version at which it was added) tells them apart
 * for state that is not a cache (a placement to undo, a placement policy's own per-node state). The
 * cluster-wide counts (GPU compute, free compute per model, most GPUs on a node, nodes without GPUs
 * or with hard taints) stay exact through every change.
 *
 * Charges through changes. An update keeps every pod charged to the node, and changes capacity
 * only: free CPU, memory, pods and GPU memory are capacity less charges and go negative when an
 * update shrinks capacity below what is charged — the node then fits nothing that asks for that
 * resource, until the charges are released or the capacity comes back. A GPU beyond a reduced GPU
 * count keeps its charges out of sight (not counted, not schedulable) and shows them again if the
 * count grows back; unreserving a pod on it releases them. The live adapter can therefore rebuild a
 * node's charges from its bound pods (fg_sched_framework_add_bound) in whatever order node and pod
 * events come.
 * Removing a node drops it with its charges: undoing a placement on a removed node
 * (fg_sched_framework_unreserve) changes nothing in the cluster.
 *
 * Pods are views: `struct fg_sched_pod` is filled by the caller and borrowed for the duration of a
 * call; the core copies what it keeps (a dedicated owner's name).
 *
 * Cycle (kube-scheduler framework, see framework.h): PreFilter (pod-level checks, model
 * resolution) → Filter (every live node, plugin by plugin) → PostFilter (when none passed) → Score
 * (one placement policy) → NormalizeScore → Reserve (the snapshot is charged) → Permit (pod groups
 * wait until enough members are reserved) → Bind. A placement outcome — unschedulable, waiting — is
 * a status in the result, never an error; enum fg_err is for bad input (negative or over-1000
 * milli, more GPUs than any node can have, …).
 */
#ifndef FG_SCHEDULER_CORE_SCHED_H
#define FG_SCHEDULER_CORE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"

#define FG_SCHED_MAX_GPUS 16
#define FG_SCHED_MAX_MODELS 32
#define FG_SCHED_MILLI 1000
#define FG_SCHED_MODELS_ANY UINT32_MAX
#define FG_SCHED_MEM_SHORT (1u << 31)  /* in fg_sched_node.tenant_modes: a GPU's free memory is negative */

/* Status of one extension point or of a whole cycle (kube-scheduler's codes). */
enum fg_sched_code {
    FG_SCHED_SUCCESS,
    FG_SCHED_UNSCHEDULABLE,   /* no node fits now; may fit after the cluster changes */
    FG_SCHED_UNRESOLVABLE,    /* can never fit as asked (unknown model, no GPU nodes, …) */
    FG_SCHED_WAIT,            /* reserved, waiting for the rest of its pod group */
    FG_SCHED_ERROR,           /* a plugin failed (a bind): nothing stays reserved, the pod may retry */
};

enum fg_sched_sharing { FG_SCHED_SHARE_NONE, FG_SCHED_SHARE_TIMESLICE, FG_SCHED_SHARE_MPS };
enum fg_sched_isolation { FG_SCHED_ISO_SHARED, FG_SCHED_ISO_DEDICATED };
enum fg_sched_effect { FG_SCHED_NO_SCHEDULE = 1, FG_SCHED_PREFER_NO_SCHEDULE = 2, FG_SCHED_NO_EXECUTE = 4 };
enum fg_sched_op { FG_SCHED_OP_IN, FG_SCHED_OP_NOT_IN, FG_SCHED_OP_EXISTS, FG_SCHED_OP_DOES_NOT_EXIST };

struct fg_sched_kv {
    const char *key;
    const char *value;
};

struct fg_sched_taint {
    const char *key;
    const char *value;
    enum fg_sched_effect effect;
};

/* key NULL with exists = tolerates every taint; effect 0 = every effect. */
struct fg_sched_toleration {
    const char *key;
    const char *value;
    bool exists;
    int effect;
};

struct fg_sched_expr {
    const char *key;
    enum fg_sched_op op;
    const char *const *values;
    size_t n_values;
};

/* Required node affinity: the node must match at least one term; a term matches when all its
 * expressions do (nodeSelectorTerms semantics). */
struct fg_sched_term {
    const struct fg_sched_expr *exprs;
    size_t n_exprs;
};

struct fg_sched_gpu {
    int free_milli;
    int64_t mem_mib, free_mem_mib;
    int tenants;
    enum fg_sched_sharing sharing;  /* mode of the tenants, NONE when idle */
    char *owner;                    /* dedicated owner, NULL when none; owned */
};

struct fg_sched_node {
    /* The fields every filter and score reads come first (the first 64 bytes), the GPUs last: one
     * pass over the nodes touches as few cache lines as possible. Free amounts are capacity less
     * charges: negative after an update shrank the capacity below the charges. */
    int64_t free_cpu, free_mem;
    int max_pods, pods;
    int model;                      /* index into the cluster's model table, -1 without GPUs */
    int n_gpus;
    uint32_t tenant_modes;          /* bit (1 << sharing) for each mode among GPUs with tenants, and
                                       FG_SCHED_MEM_SHORT: both mean some GPU refuses some pods */
    int owned_gpus;                 /* GPUs held by a dedicated owner */
    int idle_gpus;                  /* GPUs with all their compute free */
    int max_free_milli;             /* the largest free compute of one GPU */
    uint32_t state;                 /* interned state (model, free CPU, GPUs): equal ids, equal states */
    uint32_t rank;                  /* tie-break: among equal scores the lowest rank wins */
    bool unschedulable;             /* cordoned (or a free slot) */
    bool removed;                   /* a free slot: no node, never in a cycle */
    uint64_t version;               /* the cluster's version at the node's last change (see above) */
    uint64_t uid;                   /* the cluster's version when the node was added */
    int64_t cpu_milli, mem_mib;     /* capacity */
    struct fg_sched_kv *labels;     /* owned, strings owned */
    struct fg_sched_taint *taints;  /* owned, strings owned */
    uint32_t n_labels, n_taints;    /* 32 bits, so that a node stays 12 cache lines (cluster.c) */
    char *name;                     /* NULL in a free slot */
    struct fg_sched_gpu gpus[FG_SCHED_MAX_GPUS];  /* [n_gpus, MAX): out of sight, keeping their charges */
};

/* Node description for fg_sched_cluster_add_node and _update_node (borrowed; the cluster copies it). */
struct fg_sched_node_spec {
    const char *name;
    int64_t cpu_milli, mem_mib;
    int max_pods;
    const char *model;              /* NULL or "" when n_gpus is 0 */
    int n_gpus;
    int64_t gpu_mem_mib;
    const struct fg_sched_kv *labels;
    size_t n_labels;
    const struct fg_sched_taint *taints;
    size_t n_taints;
    bool unschedulable;             /* cordoned */
};

struct fg_sched_pod {
    const char *name;
    int64_t cpu_milli, mem_mib;
    int n_gpus;                     /* 0 = CPU-only */
    int gpu_milli;                  /* per GPU, 1..1000 when n_gpus > 0 */
    int64_t gpu_mem_mib;            /* per GPU */
    const char *const *models;      /* allowed models; none = any */
    size_t n_models;
    const struct fg_sched_toleration *tolerations;
    size_t n_tolerations;
    const struct fg_sched_kv *node_selector;
    size_t n_node_selector;
    const struct fg_sched_term *affinity;
    size_t n_affinity;
    int priority;
    enum fg_sched_sharing sharing;
    enum fg_sched_isolation isolation;
    const char *owner;              /* workload that owns dedicated GPUs; required when dedicated */
    const char *group;              /* pod group name, NULL = none */
    int group_min;                  /* members that must be reserved before any is permitted */
};

struct fg__sched_states;

struct fg_sched_cluster {
    struct fg_sched_node *nodes;    /* slots, index = node id; nodes[i].removed marks a free one */
    size_t n_slots, cap_slots;      /* slots in use or freed, allocated */
    size_t n_nodes;                 /* live nodes */
    int *free_slots;                /* removed slots, reused last freed first */
    size_t n_free, cap_free;
    char *models[FG_SCHED_MAX_MODELS];
    int n_models;
    /* Over live nodes and their GPUs in sight: */
    int64_t gpu_milli_total;        /* Σ 1000 · GPUs */
    int64_t gpu_milli_used;
    int64_t model_free_milli[FG_SCHED_MAX_MODELS];  /* free GPU milli per model */
    int max_node_gpus;              /* most GPUs on any one node */
    size_t nodes_by_gpus[FG_SCHED_MAX_GPUS + 1];   /* nodes per GPU count ([0]: nodes without GPUs) */
    size_t hard_tainted_nodes;      /* nodes with a NoSchedule or NoExecute taint */
    uint64_t version;               /* bumped by every change (node versions are drawn from it) */
    uint64_t slots_version;         /* bumped when a node is added or removed */
    struct fg__sched_states *states; /* owned: the interned node states (states.c) */
};

/* Where a pod went. gpus[] lists the GPU indexes charged (n_gpus of them). */
struct fg_sched_placement {
    enum fg_sched_code code;
    int node;                       /* -1 unless SUCCESS or WAIT */
    uint64_t node_uid;              /* the node's uid when it was reserved */
    int gpus[FG_SCHED_MAX_GPUS];
    int n_gpus;
    int feasible;                   /* nodes that passed every filter */
    const char *reason;             /* static text when not SUCCESS */
};

void fg_sched_cluster_init(struct fg_sched_cluster *c);
void fg_sched_cluster_cleanup(struct fg_sched_cluster *c);

/* Adds a node (copied) in a free slot, or a new one. Fails with FG_E_INVAL (detail in errmsg) and
 * changes nothing on a negative size, more than FG_SCHED_MAX_GPUS GPUs, GPUs without a model, a
 * duplicate name or a full model table. A node with zero GPUs is valid: it runs CPU-only pods. On
 * success *id_out (may be NULL) is the node's id. Its rank (tie-break) is its id until the caller
 * sets another. */
enum fg_err fg_sched_cluster_add_node(struct fg_sched_cluster *c, const struct fg_sched_node_spec *spec,
                                      int *id_out, char *errmsg) FG_MUST_USE;

/* Makes node id what spec describes (same name), keeping every charge on it (see "Charges through
 * changes" above) and its id, uid and rank. FG_E_INVAL and nothing changed for an id that is not a
 * live node, another name, or a spec add_node would refuse. */
enum fg_err fg_sched_cluster_update_node(struct fg_sched_cluster *c, int id, const struct fg_sched_node_spec *spec,
                                         char *errmsg) FG_MUST_USE;

/* Removes node id with its charges; its slot may be reused by a later add. FG_E_INVAL for an id that
 * is not a live node. */
enum fg_err fg_sched_cluster_remove_node(struct fg_sched_cluster *c, int id, char *errmsg) FG_MUST_USE;

/* The id of the live node named name, -1 when there is none (a scan over the slots). */
int fg_sched_cluster_find(const struct fg_sched_cluster *c, const char *name);

/* Whether id is a live node's id. */
static inline bool fg_sched_cluster_live(const struct fg_sched_cluster *c, int id)
{
    return id >= 0 && (size_t)id < c->n_slots && !c->nodes[id].removed;
}

/* Node state ids (fg_sched_node.state) are below this bound, until the cluster next changes. */
uint32_t fg_sched_cluster_state_cap(const struct fg_sched_cluster *c);

/* Index of a model name, -1 when the cluster has no such model. */
int fg_sched_cluster_model(const struct fg_sched_cluster *c, const char *name);

/* Checks a pod request: FG_E_INVAL with the reason in errmsg for negative CPU/memory, GPU count
 * outside 0..FG_SCHED_MAX_GPUS, gpu_milli outside 1..1000 for a GPU pod (or non-zero for a CPU-only
 * pod), several GPUs at less than 1000 milli each, dedicated without owner. */
enum fg_err fg_sched_pod_validate(const struct fg_sched_pod *pod, char *errmsg) FG_MUST_USE;

/* Allowed-model mask of a pod against the cluster's table: FG_SCHED_MODELS_ANY when the pod names
 * none; 0 when every name is unknown. */
uint32_t fg_sched_pod_model_mask(const struct fg_sched_cluster *c, const struct fg_sched_pod *pod);

/* Whether GPU g may host pod at all: memory, sharing mode and dedicated owner (not compute). Inline:
 * the filters call it in their loops. */
static inline bool fg_sched_gpu_admits(const struct fg_sched_gpu *g, const struct fg_sched_pod *p)
{
    if (g->free_mem_mib < p->gpu_mem_mib)
        return false;
    if (g->tenants > 0 && g->sharing != p->sharing)
        return false;
    if (g->owner)
        return p->isolation == FG_SCHED_ISO_DEDICATED && !strcmp(g->owner, p->owner);
    return p->isolation != FG_SCHED_ISO_DEDICATED || g->tenants == 0;
}

/* Charges pod to live node: CPU, memory, pod count and, for GPU pods, gpus[0..n_gpus) (below the
 * node's n_gpus) at gpu_milli and gpu_mem_mib each (sharing mode and dedicated owner recorded). The
 * caller has checked the fit (or charges a pod already bound, which may overcommit the node). */
void fg_sched_reserve(struct fg_sched_cluster *c, const struct fg_sched_pod *pod, int node,
                      const int *gpus, int n_gpus);
/* Exact inverse of fg_sched_reserve with the same arguments, on the same live node (a GPU out of
 * sight since is released out of sight). */
void fg_sched_unreserve(struct fg_sched_cluster *c, const struct fg_sched_pod *pod, int node,
                        const int *gpus, int n_gpus);

#endif
