/*
 * framework — the scheduling cycle and its plugin interfaces.
 *
 * A cycle for one pod: PreFilter plugins see the pod once (and may fail it as unresolvable); Filter
 * plugins see every node and read only that node; the policy (one Score plugin with optional
 * NormalizeScore, see policy.h) ranks the feasible nodes, the lowest node rank breaking ties; the
 * winner is reserved on the snapshot; Permit holds members of a pod group until group_min of them
 * are reserved. Exactly one feasible node is taken without scoring. A filter that says from the pod
 * alone that it passes every node (a pod without node selector or affinity, the GPU filters for a
 * CPU-only pod) is left out of that cycle: at 10,000 GPUs the filters are a third of a decision.
 *
 * The framework owns only scratch arrays and pod-group counters; the cluster and the policy are
 * borrowed and must outlive it. One framework serves one thread.
 */
#ifndef FG_SCHEDULER_FRAMEWORK_H
#define FG_SCHEDULER_FRAMEWORK_H

#include "scheduler/sched.h"

struct fg_sched_policy;

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

/* The built-in filter plugins, in the order the default profile runs them (cheap and selective first). */
extern const struct fg_sched_filter_plugin fg_sched_plugin_node_fit;
extern const struct fg_sched_filter_plugin fg_sched_plugin_gpu_model;
extern const struct fg_sched_filter_plugin fg_sched_plugin_taints;
extern const struct fg_sched_filter_plugin fg_sched_plugin_node_affinity;
extern const struct fg_sched_filter_plugin fg_sched_plugin_gpu_fit;
extern const struct fg_sched_filter_plugin fg_sched_plugin_sharing;

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

/* Default profile: all six filter plugins, then `policy` (borrowed). */
void fg_sched_framework_init(struct fg_sched_framework *fw, struct fg_sched_policy *policy);
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

/* Whether GPU g may host pod at all: memory, sharing mode and dedicated owner (not compute). */
bool fg_sched_gpu_admits(const struct fg_sched_gpu *g, const struct fg_sched_pod *pod);

#endif
