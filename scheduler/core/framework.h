/*
 * framework — the scheduling cycle and its plugin interfaces.
 *
 * A cycle for one pod (kube-scheduler's extension points, each named for what plugs in):
 *
 *   PreFilter   filter plugins see the pod once (and may fail it as unresolvable)
 *   Filter      filter plugins see every live node and read only that node
 *   PostFilter  only when no node passed (UNSCHEDULABLE): what would make room plugs in here —
 *               capacity requests, preemption; the default does nothing
 *   Score       the placement policy (one Score plugin with optional NormalizeScore, below) ranks
 *               the feasible nodes, the lowest node rank breaking ties; exactly one feasible node
 *               is taken without scoring
 *   Reserve     the winner is charged on the snapshot, and the placement policy told
 *   Permit      members of a pod group wait (WAIT, reserved) until group_min of them are reserved
 *   Bind        the one write, for a permitted pod: the live adapter's bind plugs in here; the
 *               default binds nothing (the placement is the record). A failed bind unreserves.
 *
 * A filter that says from the pod alone that it passes every node (a pod without node selector or
 * affinity, the GPU filters for a CPU-only pod) is left out of that cycle: at 10,000 GPUs the
 * filters are a third of a decision. Plugins with nothing to do at an extension point use the
 * no-op defaults declared here, so the cycle calls every extension point without testing for NULL.
 *
 * The framework owns only scratch arrays (the live node list, the feasible list, the scores) and
 * pod-group counters; the cluster, the profile and the placement policy are borrowed and must
 * outlive it. One framework serves one cluster and one thread.
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

/* PostFilter: runs only when no node passed the filters. It reads the snapshot and never changes it;
 * it may act outside it (ask for capacity, choose pods to preempt) and returns the pod's outcome,
 * UNSCHEDULABLE or UNRESOLVABLE, setting cy->reason when it has a better one. ctx is the plugin's. */
struct fg_sched_post_filter_plugin {
    const char *name;
    enum fg_sched_code (*post_filter)(const struct fg_sched_post_filter_plugin *pl, struct fg_sched_cycle *cy);
    void *ctx;
};

/* Bind: the one write, for a pod reserved at p->node (p->gpus) and permitted. Returns SUCCESS, or
 * the code the pod's cycle ends with (ERROR, or UNSCHEDULABLE when the node turned out gone); the
 * framework then unreserves the pod. ctx is the plugin's. */
struct fg_sched_bind_plugin {
    const char *name;
    enum fg_sched_code (*bind)(const struct fg_sched_bind_plugin *pl, const struct fg_sched_cluster *c,
                               const struct fg_sched_pod *pod, const struct fg_sched_placement *p);
    void *ctx;
};

/* The defaults: PostFilter leaves the pod unschedulable; Bind binds nothing and succeeds. */
extern const struct fg_sched_post_filter_plugin fg_sched_post_filter_none;
extern const struct fg_sched_bind_plugin fg_sched_bind_none;

/* The plugins of a framework, in the order they run (kube-scheduler's profile); borrowed. NULL
 * post_filter or bind take the defaults above. The built-in filters and the default profile are in
 * plugins/plugins.h. */
struct fg_sched_profile {
    const struct fg_sched_filter_plugin *const *filters;
    size_t n_filters;
    const struct fg_sched_post_filter_plugin *post_filter;
    const struct fg_sched_bind_plugin *bind;
};

/* A placement policy: the Score plugin that ranks the nodes that passed every filter — a vtable plus
 * its state. The placement policies themselves and their registry are in policies/policy.h.
 *
 * score() returns an integer for one feasible node (higher is better) and may choose the GPU a
 * sharing pod should take there (*gpu, -1 = the framework's default choice). normalize(), NULL when
 * the placement policy has none, rescales the scores of all feasible nodes of a cycle
 * (NormalizeScore). observe() sees every pod once per cycle before any score, placed or not: online
 * placement policies learn from it, and a placement policy grows its per-node state there to the
 * cluster's slots (so scores are asked only after observe). reserve() and unreserve() see each pod
 * charged to a node and released from it — by the cycle, fg_sched_framework_add_bound and
 * fg_sched_framework_unreserve — so that a placement policy's own per-node state follows the pods
 * on the node. A placement policy never depends on the cluster it was first used with: nodes come
 * and go between cycles, and per-node state is keyed by node id and checked against the node's
 * version or uid (sched.h). Hooks with nothing to do are the _none defaults below. */
struct fg_sched_policy;

struct fg_sched_policy_ops {
    const char *name;
    int64_t (*score)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                     const struct fg_sched_node *n, int *gpu);
    void (*normalize)(struct fg_sched_policy *pol, int64_t *scores, size_t n);
    void (*observe)(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy);
    void (*reserve)(struct fg_sched_policy *pol, const struct fg_sched_cluster *c, const struct fg_sched_pod *pod,
                    const struct fg_sched_placement *p);
    void (*unreserve)(struct fg_sched_policy *pol, const struct fg_sched_cluster *c, const struct fg_sched_pod *pod,
                      const struct fg_sched_placement *p);
    void (*free)(struct fg_sched_policy *pol);
};

struct fg_sched_policy {
    const struct fg_sched_policy_ops *ops;
};

void fg_sched_policy_observe_none(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy);
/* For reserve and unreserve alike. */
void fg_sched_policy_reserve_none(struct fg_sched_policy *pol, const struct fg_sched_cluster *c,
                                  const struct fg_sched_pod *pod, const struct fg_sched_placement *p);

struct fg__sched_group;

struct fg_sched_framework {
    const struct fg_sched_filter_plugin *const *filters;
    size_t n_filters;
    const struct fg_sched_post_filter_plugin *post_filter;
    const struct fg_sched_bind_plugin *bind;
    const struct fg_sched_filter_plugin **active;  /* scratch: the filters of the current cycle */
    size_t cap_active;
    struct fg_sched_policy *policy;
    int *live;                      /* the live nodes' ids, ascending: the list a cycle starts from */
    size_t n_live;
    uint64_t slots_version;         /* the cluster's slots_version that live[] was made for */
    int *feasible;                  /* scratch, one per slot */
    int64_t *scores;
    size_t cap;
    struct fg__sched_group *groups; /* pod groups with reserved members */
    size_t n_groups;
};

/* A framework running profile's plugins and the placement policy `policy` (both borrowed). */
void fg_sched_framework_init(struct fg_sched_framework *fw, const struct fg_sched_profile *profile,
                             struct fg_sched_policy *policy);
void fg_sched_framework_cleanup(struct fg_sched_framework *fw);

/* Runs one cycle for pod on c. Returns FG_E_INVAL (errmsg) for an invalid pod and changes nothing;
 * otherwise FG_OK with the outcome in *out: SUCCESS (reserved and bound), WAIT (reserved, group
 * incomplete: see fg_sched_framework_bind), UNSCHEDULABLE (after PostFilter) or UNRESOLVABLE
 * (nothing changed, out->reason says why), or the failed bind's code (nothing stays reserved). */
enum fg_err fg_sched_schedule(struct fg_sched_framework *fw, struct fg_sched_cluster *c,
                              const struct fg_sched_pod *pod, struct fg_sched_placement *out,
                              char *errmsg) FG_MUST_USE;

/* Binds a WAIT placement whose pod group is now permitted: SUCCESS, or the bind's failure (the pod
 * is unreserved), in p->code; UNSCHEDULABLE when its node was removed meanwhile. FG_E_INVAL
 * (errmsg, nothing changed) when p is not WAIT or its group is not permitted. */
enum fg_err fg_sched_framework_bind(struct fg_sched_framework *fw, struct fg_sched_cluster *c,
                                    const struct fg_sched_pod *pod, struct fg_sched_placement *p,
                                    char *errmsg) FG_MUST_USE;

/* Charges a pod bound without this framework (found bound by the live adapter) to live node `node`,
 * GPUs gpus[0..n_gpus) — without checking the fit: the node may end up overcommitted (sched.h) —
 * and counts it as a reserved member of its pod group. *out is then a SUCCESS placement to undo
 * with fg_sched_framework_unreserve when the pod goes. FG_E_INVAL (errmsg, nothing changed) for an
 * invalid pod, a node that is not live, a GPU count other than the pod's, or GPU indices outside
 * the node's GPUs or repeated. */
enum fg_err fg_sched_framework_add_bound(struct fg_sched_framework *fw, struct fg_sched_cluster *c,
                                         const struct fg_sched_pod *pod, int node, const int *gpus, int n_gpus,
                                         struct fg_sched_placement *out, char *errmsg) FG_MUST_USE;

/* Releases a SUCCESS or WAIT placement (a failed bind, a rejected group, a pod that went away):
 * idempotent per placement, it sets p->code to UNSCHEDULABLE so that a second call does nothing.
 * When the placement's node was removed since (its slot maybe reused: p->node_uid tells), its
 * charges went with it and only the pod group's count changes. */
void fg_sched_framework_unreserve(struct fg_sched_framework *fw, struct fg_sched_cluster *c,
                                  const struct fg_sched_pod *pod, struct fg_sched_placement *p);

/* Whether the members of `group` waiting in Permit may now bind. */
bool fg_sched_group_permitted(const struct fg_sched_framework *fw, const char *group);

/* Default GPU choice on node n for a pod that fits there: whole-GPU pods take the lowest-index
 * completely free GPUs; sharing pods the tightest GPU (smallest free ≥ milli, lowest index on ties).
 * Returns the count written to gpus (0 for CPU-only pods). */
int fg_sched_pick_gpus(const struct fg_sched_node *n, const struct fg_sched_pod *pod, int *gpus);

#endif
