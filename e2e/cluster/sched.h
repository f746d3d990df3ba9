/*
 * sched — the simulated cluster's default scheduler, kube-scheduler's default profile (v1.32) for
 * what the simulated cluster needs; the parts and what they share.
 *
 * The core is pure: a snapshot of nodes and the pods bound (or assumed) to them, decoded once from
 * their JSON, and the functions that place one pod on it. No I/O, no locks, no clock; the caller
 * serializes every use (scheduler.c holds one mutex around the snapshot and the queue).
 *   sched_pod.c       a pod decoded from its JSON once;
 *   sched_snapshot.c  nodes decoded from JSON, the snapshot kept up to date one object at a time,
 *                     nominated pods, PodDisruptionBudgets;
 *   sched_filter.c    the Filter plugins in kube's order (NodeUnschedulable, NodeName,
 *                     TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, PodTopologySpread,
 *                     InterPodAffinity), the reasons they give and the FitError message;
 *   sched_affinity.c  InterPodAffinity: terms, its PreFilter counts, Filter and preferred Score;
 *   sched_spread.c    PodTopologySpread's DoNotSchedule constraints as a filter;
 *   sched_score.c     the Score plugins with kube's weights and normalisation, and selectHost;
 *   sched_cycle.c     one scheduling cycle: the nominated node first, then a rotating search for
 *                     kube's number of feasible nodes, scores, and the PostFilter on failure;
 *   sched_preempt.c   DefaultPreemption: victims per node, the node chosen, the nomination;
 *   sched_queue.c     the scheduling queue (active, backoff, unschedulable) with explicit time.
 * Around it, with I/O: scheduler.c (informers, the queue fed from them, the scheduling thread) and
 * sched_writes.c (the API writes, made by worker threads so that no cycle waits on a round trip).
 *
 * Ownership: pods are reference-counted (fg_sim_sched_pod_ref/unref, not atomic: only under the
 * caller's lock); a pod and its JSON never change after fg_sim_sched_pod_new. The snapshot owns its
 * nodes and holds a reference to every pod it places or nominates. What is left out of kube's
 * default profile is listed in scheduler.c's essay.
 */
#ifndef FG_SIM_SCHED_H
#define FG_SIM_SCHED_H

#include <json-c/json.h>
#include <json-c/linkhash.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/kube/resources.h"
#include "operator/kube/selector.h"

#define FG_SIM_SCHED_NAME "default-scheduler"
#define FG_SIM_SCHED_MAX_SCORE 100

/* ---- pods ---- */

/* One PodAffinityTerm (the weight is a preferred term's). */
struct fg_sim_sched_term {
    struct fg_selector selector;
    bool matches_nothing;           /* no labelSelector */
    bool all_namespaces;            /* namespaceSelector {} */
    json_object *namespaces;        /* borrowed from the pod; NULL/empty with no selector: the pod's own */
    const char *ns;                 /* the owning pod's namespace */
    const char *topology_key;
    int64_t weight;
};

struct fg_sim_sched_terms {
    struct fg_sim_sched_term *v;
    size_t n;
};

struct fg_sim_sched_port {
    char protocol[8];
    char ip[48];
    int64_t port;
};

struct fg_sim_sched_node;

struct fg_sim_sched_pod {
    unsigned refs;
    json_object *obj;               /* owned; what every borrowed string below points into */
    char *key;                      /* "namespace/name" */
    const char *ns, *name, *uid;
    const char *scheduler_name, *node_name, *nominated;  /* spec.schedulerName, spec.nodeName, status.nominatedNodeName */
    int64_t priority, created_ms, started_ms;
    struct fg_resources requests;   /* fg_pod_requests */
    int64_t cpu, memory;            /* millicores and bytes requested, for scoring */
    int64_t nonzero_cpu, nonzero_memory;     /* with kube's defaults for containers that set none */
    struct fg_sim_sched_port *ports;        /* host ports */
    size_t nports;
    /* read once, for the filters' fast paths */
    json_object *tolerations;       /* borrowed from obj, or NULL */
    bool node_constraints;          /* a nodeSelector or required node affinity to check */
    int64_t storage;                /* ephemeral-storage requested (milli) */
    bool extended;                  /* requests a resource other than cpu, memory, ephemeral-storage */
    struct fg_sim_sched_terms affinity, anti_affinity, preferred_affinity, preferred_anti_affinity;
    bool gated, terminating, finished, preempt_never;
    bool terminating_by_preemption; /* deleted, with condition DisruptionTarget reason PreemptionByScheduler */
    uint64_t spec_hash;             /* fg_sim_sched_pod_spec_hash's, once computed (0: not yet) */
    /* its place in a snapshot */
    struct fg_sim_sched_node *node;
    size_t slot;
    bool assumed;
};

/* A pod decoded from its JSON (taken: the pod owns obj afterwards), with one reference. FG_E_PARSE
 * (errmsg) for a pod without metadata.name or with malformed quantities; obj is released then. */
enum fg_err fg_sim_sched_pod_new(json_object *obj, struct fg_sim_sched_pod **out, char *errmsg) FG_MUST_USE;
struct fg_sim_sched_pod *fg_sim_sched_pod_ref(struct fg_sim_sched_pod *p);
void fg_sim_sched_pod_unref(struct fg_sim_sched_pod *p);
/* A hash of p's spec and labels: an update that changes it may change where p fits. Computed on
 * first use (an update compared), since most pods never need it. */
uint64_t fg_sim_sched_pod_spec_hash(struct fg_sim_sched_pod *p);
/* Is p one this scheduler places: addressed to it, unbound, not terminating or finished, not gated? */
bool fg_sim_sched_pod_wanted(const struct fg_sim_sched_pod *p);
/* Does p carry any inter-pod affinity or anti-affinity term? */
bool fg_sim_sched_pod_has_affinity(const struct fg_sim_sched_pod *p);

/* FNV-1a over s (NULL: nothing), then a terminator, from h; over o's compact text; the seed. */
#define FG_SIM_SCHED_HASH_SEED 14695981039346656037ull
uint64_t fg_sim_sched_hash(uint64_t h, const char *s);
uint64_t fg_sim_sched_hash_json(uint64_t h, json_object *o);
/* A memory amount in thousandths of a byte as bytes, rounded up as kube's Value(). */
int64_t fg_sim_sched_bytes(int64_t milli);

/* ---- the snapshot ---- */

struct fg_sim_sched_node {
    char *name;
    json_object *obj;               /* owned: the Node (labels, taints) with status.allocatable */
    json_object *taints;            /* owned: spec.taints plus the taint of a node that is not Ready */
    bool hard_taints;               /* some taint of effect NoSchedule or NoExecute */
    bool soft_taints;               /* some taint of effect PreferNoSchedule */
    bool listed;                    /* the Node exists (else a placeholder holding pods bound to it) */
    size_t index;                   /* in the snapshot's node list, when listed */
    bool unschedulable;
    struct fg_resources allocatable, requested;
    int64_t alloc_cpu, alloc_memory, alloc_pods;   /* millicores, bytes, pods */
    int64_t req_cpu, req_memory, nonzero_cpu, nonzero_memory;
    uint64_t props_hash;            /* of what the filters read: a change may make pods fit */
    struct fg_sim_sched_pod **pods;
    size_t npods, cap;
    size_t naffinity;               /* pods here with inter-pod (anti-)affinity terms */
};

struct fg_sim_sched_nomination {
    struct fg_sim_sched_pod *pod;   /* a reference */
    char *node;
};

struct fg_sim_sched_snapshot {
    struct fg_sim_sched_node **nodes;   /* the listed nodes, in the order they came */
    size_t nnodes, cap;
    struct lh_table *by_name;       /* name → node, placeholders included */
    struct lh_table *pods;          /* key → placed pod */
    size_t naffinity;               /* placed pods with inter-pod (anti-)affinity terms */
    struct fg_sim_sched_nomination *nominated;
    size_t nnominated, nom_cap;
    json_object *pdbs;              /* key → PodDisruptionBudget */
    size_t next_start;              /* where the next search for feasible nodes starts */
};

void fg_sim_sched_snapshot_init(struct fg_sim_sched_snapshot *s);
void fg_sim_sched_snapshot_cleanup(struct fg_sim_sched_snapshot *s);

/* Adds or replaces a Node (taken: never changed afterwards). *changed (may be NULL) says whether
 * anything a filter reads changed (always true for a new node). FG_E_PARSE (errmsg) for a nameless
 * node or a bad allocatable quantity; node is released then. */
enum fg_err fg_sim_sched_node_set(struct fg_sim_sched_snapshot *s, json_object *node, bool *changed,
                                  char *errmsg) FG_MUST_USE;
/* Removes a Node; pods still bound to it stay counted on a placeholder until they go. */
void fg_sim_sched_node_remove(struct fg_sim_sched_snapshot *s, const char *name);
/* The node called name (placeholders included), or NULL. */
struct fg_sim_sched_node *fg_sim_sched_node_get(const struct fg_sim_sched_snapshot *s, const char *name);

/* Places pod on the node called node (a placeholder when unknown), replacing a placed pod of the
 * same key; takes a reference. */
void fg_sim_sched_place(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node);
/* The placed pod under key (borrowed), or NULL. */
struct fg_sim_sched_pod *fg_sim_sched_placed(const struct fg_sim_sched_snapshot *s, const char *key);
/* Removes the placed pod under key; false when there was none. */
bool fg_sim_sched_unplace(struct fg_sim_sched_snapshot *s, const char *key);

/* Counts pod on node (and removes it again): how placing works, and how preemption's dry runs
 * take victims off a node and put them back. Keeps pod->slot; leaves pod->node alone. */
void fg_sim_sched_node_add_pod(struct fg_sim_sched_node *n, struct fg_sim_sched_pod *pod);
void fg_sim_sched_node_remove_pod(struct fg_sim_sched_node *n, struct fg_sim_sched_pod *pod);

/* Records that pod (a pending pod) is nominated to node, or with node NULL that it is not; takes a
 * reference, replacing an earlier nomination of the same key. */
void fg_sim_sched_nominate(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node);
/* The node pod's key is nominated to (borrowed), or NULL. */
const char *fg_sim_sched_nominated_node(const struct fg_sim_sched_snapshot *s, const char *key);

/* PodDisruptionBudgets by key (taken). */
void fg_sim_sched_pdb_set(struct fg_sim_sched_snapshot *s, json_object *pdb);
void fg_sim_sched_pdb_remove(struct fg_sim_sched_snapshot *s, const char *key);

/* ---- filters ---- */

enum fg_sim_sched_code { FG_SIM_SCHED_SUCCESS, FG_SIM_SCHED_UNSCHEDULABLE, FG_SIM_SCHED_UNRESOLVABLE };

/* The filters, as bits (which rejected a pod decides which cluster events retry it). */
enum {
    FG_SIM_SCHED_NODE_UNSCHEDULABLE = 1u << 0,
    FG_SIM_SCHED_NODE_NAME = 1u << 1,
    FG_SIM_SCHED_TAINTS = 1u << 2,
    FG_SIM_SCHED_NODE_AFFINITY = 1u << 3,
    FG_SIM_SCHED_NODE_PORTS = 1u << 4,
    FG_SIM_SCHED_RESOURCES = 1u << 5,
    FG_SIM_SCHED_SPREAD = 1u << 6,
    FG_SIM_SCHED_POD_AFFINITY = 1u << 7,
};

#define FG_SIM_SCHED_MAX_REASONS (FG_RESOURCES_MAX + 2)

/* One node's verdict (kube's Status): a code, the failing filter and its reasons. */
struct fg_sim_sched_status {
    enum fg_sim_sched_code code;
    unsigned plugin;
    size_t n;
    const char *reasons[FG_SIM_SCHED_MAX_REASONS];
    char buf[1024];                 /* formatted reasons live here */
    size_t used;
};

/* A reason, copied into st (formatted ones into st->buf). */
void fg_sim_sched_status_add(struct fg_sim_sched_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct fg_sim_sched_affinity;
struct fg_sim_sched_spread;

/* The state of one cycle (kube's CycleState): the pod and what PreFilter computed for it. */
struct fg_sim_sched_cycle {
    struct fg_sim_sched_snapshot *s;
    struct fg_sim_sched_pod *pod;
    struct fg_sim_sched_affinity *affinity;   /* NULL: no inter-pod affinity anywhere */
    struct fg_sim_sched_spread *spread;       /* NULL: no DoNotSchedule constraint */
};

/* PreFilter: fills c for pod on s. fg_sim_sched_cycle_cleanup frees it. */
void fg_sim_sched_cycle_init(struct fg_sim_sched_cycle *c, struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod);
void fg_sim_sched_cycle_cleanup(struct fg_sim_sched_cycle *c);

/* Runs the filters on n in kube's order until one fails, without nominated pods. st is filled. */
void fg_sim_sched_filter_node(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n,
                              struct fg_sim_sched_status *st);
/* The same with the pods nominated to n of at least the pod's priority counted on it, as kube's
 * RunFilterPluginsWithNominatedPods (their room is reserved for them). */
void fg_sim_sched_filter_with_nominated(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *n,
                                        struct fg_sim_sched_status *st);

/* What kube's FitError reports: every node's reasons counted, and the PostFilter's message. */
struct fg_sim_sched_reason {
    char *text;
    size_t count;
};

struct fg_sim_sched_diagnosis {
    struct fg_sim_sched_reason *v;
    size_t n, cap;
    unsigned plugins;               /* filters that rejected the pod somewhere */
};

void fg_sim_sched_diagnosis_add(struct fg_sim_sched_diagnosis *d, const struct fg_sim_sched_status *st);
/* Counts `count` more nodes under reason text. */
void fg_sim_sched_diagnosis_count(struct fg_sim_sched_diagnosis *d, const char *text, size_t count);
void fg_sim_sched_diagnosis_cleanup(struct fg_sim_sched_diagnosis *d);
/* "0/N nodes are available: <count reason, ... sorted as strings>." plus " <postfilter>." when
 * postfilter is not NULL (a new string). */
char *fg_sim_sched_fit_message(size_t nnodes, const struct fg_sim_sched_diagnosis *d, const char *postfilter);

/* ---- inter-pod affinity and topology spread (PreFilter state, Filter, Score) ---- */

/* Parses pod's four lists of terms (pod->obj borrowed). FG_E_PARSE for a bad label selector. */
enum fg_err fg_sim_sched_terms_parse(struct fg_sim_sched_pod *pod, char *errmsg) FG_MUST_USE;
void fg_sim_sched_terms_cleanup(struct fg_sim_sched_pod *pod);

/* NULL when neither pod nor any placed pod has a term that could matter. */
struct fg_sim_sched_affinity *fg_sim_sched_affinity_new(const struct fg_sim_sched_snapshot *s,
                                                        const struct fg_sim_sched_pod *pod);
void fg_sim_sched_affinity_free(struct fg_sim_sched_affinity *a);
/* Preemption's PreFilter extensions: victim leaves (sign -1) or comes back (+1) to node n. */
void fg_sim_sched_affinity_update(struct fg_sim_sched_affinity *a, const struct fg_sim_sched_pod *victim,
                                  const struct fg_sim_sched_node *n, int sign);
/* The filter: SUCCESS, or st filled. */
void fg_sim_sched_affinity_filter(const struct fg_sim_sched_affinity *a, const struct fg_sim_sched_node *n,
                                  struct fg_sim_sched_status *st);
/* The preferred terms' raw score of each node in feasible (out[i]); false when kube would skip the
 * plugin (nothing scores anywhere). */
bool fg_sim_sched_affinity_score(const struct fg_sim_sched_snapshot *s, const struct fg_sim_sched_pod *pod,
                                 struct fg_sim_sched_node *const *feasible, size_t n, int64_t *out);

struct fg_sim_sched_spread *fg_sim_sched_spread_new(const struct fg_sim_sched_snapshot *s,
                                                    const struct fg_sim_sched_pod *pod);
void fg_sim_sched_spread_free(struct fg_sim_sched_spread *sp);
void fg_sim_sched_spread_update(struct fg_sim_sched_spread *sp, const struct fg_sim_sched_pod *victim,
                                const struct fg_sim_sched_node *n, int sign);
void fg_sim_sched_spread_filter(const struct fg_sim_sched_spread *sp, const struct fg_sim_sched_node *n,
                                struct fg_sim_sched_status *st);

/* Does term (of a pod in term->ns) select pod? */
bool fg_sim_sched_term_matches(const struct fg_sim_sched_term *term, const struct fg_sim_sched_pod *pod);

/* ---- scores ---- */

/* Each plugin's normalised score and the weighted total, per feasible node. */
struct fg_sim_sched_score {
    int64_t fit, balanced, node_affinity, taints, pod_affinity;
    int64_t total;
};

/* Scores the feasible nodes for the cycle's pod (out: n entries). */
void fg_sim_sched_score_nodes(const struct fg_sim_sched_cycle *c, struct fg_sim_sched_node *const *feasible, size_t n,
                              struct fg_sim_sched_score *out);
/* kube's selectHost: the index of a highest total, ties broken uniformly at random with *rng. */
size_t fg_sim_sched_select(const struct fg_sim_sched_score *scores, size_t n, uint64_t *rng);
/* The next value of the xorshift generator at *rng (never 0), and one in [0, bound). */
uint64_t fg_sim_sched_rand(uint64_t *rng, uint64_t bound);

/* ---- one cycle ---- */

struct fg_sim_sched_result {
    struct fg_sim_sched_node *node;     /* where to bind; NULL when the pod does not fit */
    char *message;                      /* no node: the FailedScheduling message (owned) */
    unsigned rejected_by;               /* filters that rejected it */
    /* PostFilter (preemption) */
    bool set_nomination;                /* write status.nominatedNodeName = nominated ("" clears) */
    char *nominated;
    struct fg_sim_sched_pod **victims;  /* references: pods to preempt on the nominated node */
    size_t nvictims;
    struct fg_sim_sched_pod **demoted;  /* references: lower-priority pods nominated there, to clear */
    size_t ndemoted;
};

/* Schedules pod on s (read; preemption's dry runs change and restore it): the node, or why none,
 * with what preemption decided. Does not place the pod. */
void fg_sim_sched_schedule(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, uint64_t *rng,
                           struct fg_sim_sched_result *out);
void fg_sim_sched_result_cleanup(struct fg_sim_sched_result *r);

/* kube's numFeasibleNodesToFind with the adaptive percentage. */
size_t fg_sim_sched_nodes_to_find(size_t nnodes);

/* PostFilter: DefaultPreemption for the cycle's pod, which fits nowhere; d holds the filters'
 * verdicts and codes the code per listed node. Fills out's nomination, victims and returns the
 * PostFilter message (owned; NULL when preemption succeeded). */
char *fg_sim_sched_preempt(const struct fg_sim_sched_cycle *c, const enum fg_sim_sched_code *codes, uint64_t *rng,
                           struct fg_sim_sched_result *out);

/* ---- the queue ---- */

/* A pending pod's entry in the queue. */
struct fg_sim_sched_qpod {
    struct fg_sim_sched_pod *pod;       /* the newest version (a reference) */
    int where;                          /* which part of the queue holds it (sched_queue.c) */
    size_t heap;                        /* its index there */
    unsigned attempts;
    uint64_t backoff_until_ns, unschedulable_since_ns;
    uint64_t cycle;                     /* the cycle that last popped it */
    unsigned rejected_by;               /* filters that rejected it last */
    /* what was last written about it, so that the condition only changes with its message */
    char *written_message;
    int64_t written_ms;                 /* lastTransitionTime of the condition written */
    uint64_t event_ns;                  /* when the last FailedScheduling event went out */
};

/* A binary heap of entries (the unschedulable set uses the same array, unordered). */
struct fg_sim_sched_qheap {
    struct fg_sim_sched_qpod **v;
    size_t n, cap;
};

struct fg_sim_sched_queue {
    struct lh_table *by_key;            /* key → qpod */
    struct fg_sim_sched_qheap active;   /* by priority, then creation */
    struct fg_sim_sched_qheap backoff;  /* by the end of their backoff */
    struct fg_sim_sched_qheap unschedulable;
    uint64_t cycle;                     /* scheduling cycles started */
    uint64_t move_cycle;                /* the cycle of the last move request */
};

void fg_sim_sched_queue_init(struct fg_sim_sched_queue *q);
void fg_sim_sched_queue_cleanup(struct fg_sim_sched_queue *q);
/* A new or updated pending pod (a reference is taken). A new pod goes to active; an update of one
 * waiting as unschedulable moves it when its spec or labels changed. */
void fg_sim_sched_queue_upsert(struct fg_sim_sched_queue *q, struct fg_sim_sched_pod *pod, uint64_t now_ns);
/* The entry under key (borrowed), or NULL. */
struct fg_sim_sched_qpod *fg_sim_sched_queue_get(struct fg_sim_sched_queue *q, const char *key);
/* Forgets key (deleted, bound, no longer ours). */
void fg_sim_sched_queue_remove(struct fg_sim_sched_queue *q, const char *key);
/* The pod to schedule next (borrowed; its entry stays, popped), after moving due backoffs to active
 * and flushing entries unschedulable for over a minute; NULL when none is due. Starts a cycle. */
struct fg_sim_sched_qpod *fg_sim_sched_queue_pop(struct fg_sim_sched_queue *q, uint64_t now_ns);
/* A popped pod that did not fit: backoff, then unschedulable until a cluster event (or to backoff
 * at once when a move request came during its cycle). */
void fg_sim_sched_queue_unschedulable(struct fg_sim_sched_queue *q, struct fg_sim_sched_qpod *e, uint64_t now_ns);
/* A popped pod whose binding failed: back after its backoff. */
void fg_sim_sched_queue_backoff(struct fg_sim_sched_queue *q, struct fg_sim_sched_qpod *e, uint64_t now_ns);
/* A cluster event: every unschedulable pod that one of `filters` rejected (0: every one) goes to
 * backoff or, when its backoff is over, to active. */
void fg_sim_sched_queue_move(struct fg_sim_sched_queue *q, unsigned filters, uint64_t now_ns);
/* When the next pod falls due (UINT64_MAX: nothing waits but events). */
uint64_t fg_sim_sched_queue_next_ns(const struct fg_sim_sched_queue *q);
/* kube's backoff after `attempts` attempts: 1 s doubling to 10 s. */
uint64_t fg_sim_sched_backoff_ns(unsigned attempts);

#endif
