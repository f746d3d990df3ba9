/*
 * adapter_int — the scheduler adapter's state, shared by its files (adapter.h has the essay).
 *
 * Everything here lives on the kube loop thread: informer handlers, the scheduling pass, the
 * capacity pass and every write's callback run there, so nothing is locked.
 *
 *   pods     every pod of the cluster by "ns/name" (struct sa_pod): what it charges, and for
 *            fracgpu's pods whether it waits, is being bound or is placed
 *   nodes    every node by name (struct sa_node): its slot in the core's snapshot and its GPU bins,
 *            one per capacity pod held there
 *
 * Charges. A pod with a node charges the snapshot through the framework (add_bound / unreserve), so
 * the placement policy follows the pods: other pods their CPU and memory, tenants also their share of
 * the bin their capacity pod holds. A GPU slot of a node without a live capacity pod carries a
 * "phantom" charge — all its compute, owned by a name no workload has — so nothing lands where no
 * GPU is held. A node is rebuilt (removed from the snapshot, added again, every pod on it charged
 * again) when the node object or its bins change; pods change their own charges only.
 */
#ifndef FG_SCHEDULER_ADAPTER_INT_H
#define FG_SCHEDULER_ADAPTER_INT_H

#include <json-c/json.h>
#include <json-c/linkhash.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/metrics.h"
#include "operator/cache/informer.h"
#include "operator/cache/transform.h"
#include "operator/kube/loop.h"
#include "reconcilers/grant_keys.h"
#include "scheduler/adapter/adapter.h"
#include "scheduler/adapter/podinfo.h"
#include "scheduler/core/framework.h"

#define SA_COMPONENT "scheduler"
#define SA_PHANTOM_OWNER "fracgpu.io/no-capacity-pod"

struct sa_node;
struct bind_op;
struct sa_preemption;

/* One pod of the cluster. */
struct sa_pod {
    char *key;                  /* "ns/name" */
    char *ns, *name, *uid;
    struct fg_sa_podinfo info;  /* strings borrow from json */
    json_object *json;          /* the pod as last seen, while the scheduler may read more than info
                                   (pods.c: kept_whole); NULL otherwise */
    char *strings;              /* info's strings when json is not kept: an owned copy */
    /* charge */
    struct sa_node *on;         /* the node it is on (assumed or bound), NULL: none */
    struct fg_sched_pod charge; /* what is charged (strings borrowed from json or the want) */
    struct fg_sched_placement pl;   /* SUCCESS or WAIT while charged in the snapshot */
    int charged_slot;           /* the bin's slot for a tenant charged on a GPU, -1 otherwise */
    size_t node_pos;            /* index in on->pods */
    /* fracgpu's pods */
    struct fg_sa_want want;     /* built while it waits */
    bool want_ok;
    char want_error[FG_ERRMSG_MAX];
    bool waiting;               /* in the pending set */
    bool binding;               /* a bind (or the resizes before it) in flight */
    uint64_t bind_sent_ns;      /* when its Binding was sent, 0: not (bind.c: the node's admission gate) */
    char bound_gpu[96];         /* the GPU UUID its Binding names */
    bool assumed;               /* placed by this scheduler, not yet confirmed by the watch */
    bool group_wait;            /* reserved, waiting for its pod group in Permit */
    char assumed_node[256];
    char assumed_cap[256];
    int assumed_slot;
    uint64_t next_try_ns;       /* backoff */
    uint64_t backoff_ns;
    uint64_t failed_epoch;      /* the cluster epoch of its last failure (0: never failed) */
    uint64_t group_since_ns;    /* when it started waiting in Permit */
    const char *last_reason;    /* static: the PodScheduled=False reason written last */
    uint64_t capacity_since_ns; /* when it first waited for capacity (0: never) */
    struct sa_preemption *preempt;   /* its victims while room is made for it (preempt.c) */
    uint64_t spared_until_ns;   /* a budget refused its eviction: not asked again until then */
    /* capacity pods */
    uint64_t idle_since_ns;     /* 0: not idle */
    int64_t target_cpu, target_mem;   /* requests asked through pods/resize, when target_set */
    int64_t sent_cpu, sent_mem;       /* the target last accepted by the API server (0: none) */
    bool target_set;
    bool resize_inflight;       /* one resize at a time (resize.c) */
    uint64_t draining_since_ns; /* consolidation empties its GPU (consolidate.c); 0: not */
    bool deleting_sent;
};

struct sa_bin {
    struct sa_pod *cap;         /* the live capacity pod holding this slot's GPU, NULL: none */
    struct fg_sched_placement phantom;   /* SUCCESS while the phantom charge is on */
};

struct sa_node {
    char *name;
    int id;                     /* slot in the snapshot, -1 while the node object is unknown */
    json_object *json;          /* the node as last seen (NULL while unknown) */
    int n_gpus;
    int64_t gpu_mem_mib;        /* the smallest tenant memory its capacity pods report, 0 before any */
    struct sa_bin bins[FG_SCHED_MAX_GPUS];
    struct sa_pod **pods;       /* pods charged here */
    size_t n_pods, cap_pods;
    bool dirty;                 /* to rebuild before the next pass */
    unsigned gate_waiters;      /* Bindings to it held by its admission gate, shrinks applied (bind.c) */
    uint64_t held_pass;         /* the bind.c pass that found one of them held */
};

struct fg__sched_adapter {
    struct fg_sa_opts o;
    struct fg_kube_loop *loop;
    struct event_base *base;
    struct fg_informer *pods_inf, *nodes_inf;
    struct fg_fieldset *kept;   /* what of a pod the scheduler keeps (adapter.c) */
    struct fg_grant_watch *keys;
    bool running;
    lh_table *pods;             /* key → struct sa_pod * (owned) */
    lh_table *nodes;            /* name → struct sa_node * (owned) */
    lh_table *creating;         /* capacity pods created, not yet seen: name → signature (both owned) */
    struct fg_sched_cluster cluster;
    struct fg_sched_framework fw;
    struct fg_sched_policy *policy;
    struct fg_sched_profile profile;
    struct fg_sched_post_filter_plugin post_filter;
    struct fg_sched_bind_plugin bind;
    struct sa_pod *cycle_pod;   /* the pod of the cycle running */
    size_t n_group_wait;        /* pods waiting in Permit for their group (group_wait) */
    uint64_t epoch;             /* bumped by every change that may let a waiting pod fit */
    int64_t gpu_mem_max;        /* the largest bin memory seen: what "whole" memory asks */
    struct event *pass_ev, *tick_ev;
    bool pass_armed;
    struct bind_op **awaiting;  /* binds waiting for shrinks or their node's admission gate, oldest first */
    size_t n_awaiting, cap_awaiting;
    uint64_t bind_pass;         /* counts sa_bind_resume's passes */
    uint64_t consolidated_ns;   /* when consolidation last looked (consolidate.c) */
    struct sa_pod **unschedulable;   /* GPU pods the last pass could not place */
    size_t n_unschedulable, cap_unschedulable;
    char image[256];            /* the capacity pods' image */
    char self_key[320];         /* "ns/name" of the operator's own pod ($POD_NAMESPACE, $POD_NAME), or "" */
    char owner_uid[64];         /* the Deployment that owns capacity pods ("" when unknown) */
    char owner_name[128];
    bool owner_checked;         /* the owner was looked up (found or not): capacity pods may be made */
    /* metrics */
    struct fg_counter *scheduled, *unschedulable_ctr, *bind_errors, *capacity_created, *capacity_deleted,
        *tenants_evicted, *resizes, *preemptions, *consolidations, *consolidation_moves;
    struct fg_histogram *cycle_seconds, *binding_wait;
    struct fg_gauge *pending, *capacity_wait;
};

/* ---- nodes.c: the snapshot's nodes and bins ---- */
struct sa_node *sa_node_get(struct fg__sched_adapter *a, const char *name, bool create);
void sa_node_seen(struct fg__sched_adapter *a, json_object *node);
void sa_node_gone(struct fg__sched_adapter *a, const char *name);
/* Rebuilds every dirty node. */
void sa_nodes_flush(struct fg__sched_adapter *a);
/* Whether node n is leaving: cordoned, or being removed by an autoscaler (its taints). */
enum sa_leaving { SA_STAYING, SA_CORDONED, SA_REMOVED };
enum sa_leaving sa_node_leaving(const struct sa_node *n);
/* Clears every bin that holds capacity pod cap (about to be freed), marking its node dirty. */
void sa_nodes_forget_cap(struct fg__sched_adapter *a, const struct sa_pod *cap);
/* The bin slot holding capacity pod cap on node n, -1 when none. */
int sa_node_slot_of(const struct sa_node *n, const char *cap_name);
void sa_nodes_free(struct fg__sched_adapter *a);

/* ---- charges.c ---- */
/* Makes p's charge match what it is now (its info, or its assumed placement). */
void sa_charge_sync(struct fg__sched_adapter *a, struct sa_pod *p);
void sa_uncharge(struct fg__sched_adapter *a, struct sa_pod *p);
/* Puts p on n's list of pods (p->on = n); charges nothing. */
void sa_node_list_add(struct sa_node *n, struct sa_pod *p);
/* Charges p on node n (rebuilt), which must be its node. */
void sa_charge_on(struct fg__sched_adapter *a, struct sa_pod *p, struct sa_node *n);

/* ---- pods.c: the pod table and the informer's events ---- */
struct sa_pod *sa_pod_get(struct fg__sched_adapter *a, const char *key);
void sa_pod_seen(struct fg__sched_adapter *a, json_object *pod);
void sa_pod_gone(struct fg__sched_adapter *a, const char *key);
void sa_pods_free(struct fg__sched_adapter *a);
/* The queue's order: priority, then age, then key. */
int sa_pod_order(const struct sa_pod *p, const struct sa_pod *q);
/* Drops the assumption of a placement (a failed bind): uncharge, back to waiting with backoff. */
void sa_pod_forget(struct fg__sched_adapter *a, struct sa_pod *p, const char *why);
void sa_pod_backoff(struct fg__sched_adapter *a, struct sa_pod *p);

/* ---- cycle.c: the scheduling pass ---- */
void sa_pass_soon(struct fg__sched_adapter *a);
void sa_pass(struct fg__sched_adapter *a);
enum fg_err sa_cycle_init(struct fg__sched_adapter *a, char *errmsg);
void sa_cycle_cleanup(struct fg__sched_adapter *a);

/* ---- bind.c: the writes of a placement ---- */
enum fg_sched_code sa_bind_start(struct fg__sched_adapter *a, struct sa_pod *p, const struct fg_sched_placement *pl);
/* Sends the Binding of every bind to node (NULL: every node) whose shrinks the kubelet has applied
 * and whose node's admission gate is open; forgets those that waited too long. On the events of
 * capacity pods and tenants, and the tick. */
void sa_bind_resume(struct fg__sched_adapter *a, const char *node);
void sa_bind_drop_awaiting(struct fg__sched_adapter *a);
/* Forgets the placements whose binds wait on capacity pod cap_key's shrink, which failed (why). */
void sa_bind_fail_waiting_on(struct fg__sched_adapter *a, const char *cap_key, const char *why);
/* PodScheduled=False with reason and message, written once per change of reason. */
void sa_set_unscheduled(struct fg__sched_adapter *a, struct sa_pod *p, const char *reason, const char *message);

/* ---- resize.c: capacity pods' reservations shrunk ---- */
/* What capacity pod p reserves for tenants, by its target when it has one. */
void sa_resize_reserved(const struct sa_pod *p, int64_t *cpu, int64_t *mem);
/* Lowers p's target requests by cpu and mem (sent by sa_resize_send). */
void sa_resize_shrink(struct sa_pod *p, int64_t cpu, int64_t mem);
/* Sends p's target unless one is in flight or the spec has it already. */
void sa_resize_send(struct fg__sched_adapter *a, struct sa_pod *cap);
/* Whether p's spec is its target and the kubelet applied it. */
bool sa_resize_applied(const struct sa_pod *p);

/* ---- preempt.c: room made by evicting pods of lower priority ---- */
/* Nominates p, which waited too long for capacity, to a GPU that evicting lower-priority tenants
 * makes room on, and starts the evictions; false when no GPU would do. */
bool sa_preempt_try(struct fg__sched_adapter *a, struct sa_pod *p);
/* Binds the nominated pods whose victims are gone; drops nominations that waited too long. */
void sa_preempt_tick(struct fg__sched_adapter *a);
void sa_preempt_free(struct sa_preemption *pr);

/* ---- consolidate.c: a GPU emptied onto the others ---- */
/* On the tick: once per consolidation interval, when nothing waits, marks draining the capacity pod
 * of the first GPU whose every tenant fits on other GPUs (giveback.c then evicts them); stops a
 * drain that takes too long. */
void sa_consolidate_tick(struct fg__sched_adapter *a);
/* Whether capacity pod p's GPU is being emptied: it takes no new tenant. */
static inline bool sa_draining(const struct sa_pod *p)
{
    return p && p->draining_since_ns != 0;
}

/* ---- capacity.c: capacity pods asked for ---- */
void sa_capacity_plan(struct fg__sched_adapter *a);
/* giveback.c: idle capacity pods deleted, leaving nodes emptied, stranded tenants evicted. */
void sa_giveback_tick(struct fg__sched_adapter *a);

#endif
