/*
 * framework — the scheduling cycle and its plugin interfaces.
 *
 * A cycle for one pod: PreFilter plugins see the pod once (and may fail it as unresolvable); Filter
 * plugins see every node and read only that node; the placement policy (one Score plugin with
 * optional NormalizeScore, below) ranks the feasible nodes, the lowest node rank breaking ties; the
 * winner is reserved on the snapshot; Permit holds members of a pod group until group_min of them
 * are reserved. Exactly one feasible node is taken without scoring. A filter that says from the pod
 * alone that it passes every node (a pod without node selector or affinity, the GPU filters for a
 * CPU-only pod) is left out of that cycle: at 10,000 GPUs the filters are a third of a decision.
 *
 * The framework owns only scratch arrays and pod-group counters; the cluster, the profile and the
 * placement policy are borrowed and must outlive it. One framework serves one thread.
 */
#ifndef FG_SCHEDULER_CORE_FRAMEWORK_H
#define FG_SCHEDULER_CORE_FRAMEWORK_H

#include "scheduler/core/sched.h"

/* What the plugins of one cycle share (kube-scheduler's CycleState). */
struct fg_sched_cycle {
    const struct fg_sched_cluster *cluster;
    const struct fg_sched_pod *pod;
    uint32_t model_mask;            /* resolved allowed models */
    const char *reason;             /* set by the plugin that failed the pod */
};

struct fg_sched_filter_plugin {
    const char *name;
    /* NULL, or pod-level check: SUCCESS, UNSCHEDULABLE or UNRESOLVABLE (setting cy->reason). */
    enum fg_sched_code (*prefilter)(struct fg_sched_cycle *cy);
    /* Of the nodes in[0..n) (indices into cy->cluster->nodes), writes to out, in order, those that can
     * take the pod, and returns how many. out may be in. Reads only those nodes. The cycle runs each
     * filter over the survivors of the one before, so one pass over the list is one tight loop. */
    size_t (*filter)(const struct fg_sched_cycle *cy, const int *in, size_t n, int *out);
    /* NULL, or whether filter would pass every node for this pod, known from the pod and the
     * cluster's counts without looking at a node; the cycle then does not run it (kube-scheduler's
     * PreFilter Skip). */
    bool (*skips)(const struct fg_sched_cycle *cy);
};

/* A placement policy: the Score plugin that ranks the nodes that passed every filter — a vtable plus
 * its state. The policies themselves and their registry are in policies/policy.h.
 *
 * score() returns an integer for one feasible node (higher is better) and may choose the GPU a
 * sharing pod should take there (*gpu, -1 = the framework's default choice); normalize(), when
 * present, rescales the scores of all feasible nodes of a cycle (NormalizeScore). observe() sees
 * every pod once per cycle before scoring, placed or not — online policies learn from it; bound()
 * sees each placement after Reserve, so that a policy's own state can follow the cluster. All hooks
 * but score are optional. */
struct fg_sched_policy;

struct fg_sched_policy_ops {
    const char *name;
    int64_t (*score)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                     const struct fg_sched_node *n, int *gpu);
    void (*normalize)(struct fg_sched_policy *pol, int64_t *scores, size_t n);
    void (*observe)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy);
    void (*bound)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy, int node,
                  const struct fg_sched_placement *p);
    void (*free)(struct fg_sched_policy *pol);
};

struct fg_sched_policy {
    const struct fg_sched_policy_ops *ops;
    size_t n_nodes;                 /* the node count it was created for (set by fg_sched_policy_new) */
};

/* Defines `name` as a filter (above) that keeps the nodes for which the per-node predicate
 * `bool pred(const struct fg_sched_cycle *, const struct fg_sched_node *)` holds: written out
 * branch-free, with pred inlined into the loop. */
#define FG_SCHED_FILTER_EACH(name, pred)                                                                   \
    static size_t name(const struct fg_sched_cycle *cy, const int *in, size_t n, int *out)                 \
    {                                                                                                       \
        const struct fg_sched_node *nodes = cy->cluster->nodes;                                            \
        size_t k = 0;                                                                                       \
        for (size_t j = 0; j < n; j++) {                                                                    \
            int i = in[j];                                                                                  \
            out[k] = i;                                                                                     \
            k += pred(cy, &nodes[i]);                                                                       \
        }                                                                                                   \
        return k;                                                                                           \
    }

/* The plugins of a framework, in the order they run (kube-scheduler's profile); borrowed. The
 * built-in filters and the default profile are in plugins/plugins.h. */
struct fg_sched_profile {
    const struct fg_sched_filter_plugin *const *filters;
    size_t n_filters;
};

struct fg__sched_group;

struct fg_sched_framework {
    const struct fg_sched_filter_plugin *const *filters;
    size_t n_filters;
    const struct fg_sched_filter_plugin **active;  /* scratch: the filters of the current cycle */
    size_t cap_active;
    struct fg_sched_policy *policy;
    int *all;                       /* 0 .. cap - 1: the node list a cycle starts from */
    int *feasible;                  /* scratch, one per node */
    int64_t *scores;
    size_t cap;
    struct fg__sched_group *groups; /* pod groups with reserved members */
    size_t n_groups;
};

/* A framework running profile's plugins, then `policy` (both borrowed). */
void fg_sched_framework_init(struct fg_sched_framework *fw, const struct fg_sched_profile *profile,
                             struct fg_sched_policy *policy);
void fg_sched_framework_cleanup(struct fg_sched_framework *fw);

/* Runs one cycle for pod on c. Returns FG_E_INVAL (errmsg) for an invalid pod and changes nothing;
 * otherwise FG_OK with the outcome in *out: SUCCESS (reserved), WAIT (reserved, group incomplete),
 * UNSCHEDULABLE or UNRESOLVABLE (nothing changed, out->reason says why). */
enum fg_err fg_sched_schedule(struct fg_sched_framework *fw, struct fg_sched_cluster *c,
                              const struct fg_sched_pod *pod, struct fg_sched_placement *out,
                              char *errmsg) FG_MUST_USE;

/* Undoes a SUCCESS or WAIT placement (a failed bind, a rejected group); idempotent per placement:
 * it sets out->code to UNSCHEDULABLE so that a second call does nothing. Policies see the node's
 * version change. */
void fg_sched_framework_unreserve(struct fg_sched_framework *fw, struct fg_sched_cluster *c,
                                  const struct fg_sched_pod *pod, struct fg_sched_placement *p);

/* Whether the members of `group` waiting in Permit may now bind. */
bool fg_sched_group_permitted(const struct fg_sched_framework *fw, const char *group);

/* Default GPU choice on node n for a pod that fits there: whole-GPU pods take the lowest-index
 * completely free GPUs; sharing pods the tightest GPU (smallest free ≥ milli, lowest index on ties).
 * Returns the count written to gpus (0 for CPU-only pods). */
int fg_sched_pick_gpus(const struct fg_sched_node *n, const struct fg_sched_pod *pod, int *gpus);

#endif
