/*
 * adapter — fracgpu's scheduler on a live cluster: the placement core fed by the shared informers,
 * its decisions carried out through the API (a leader-only runnable of `fracgpu operator`).
 *
 * Queue. Pods with spec.schedulerName fracgpu-scheduler and no node wait, ordered by priority, then
 * age; pods with scheduling gates are skipped until the gates go. A pod that does not fit backs off
 * (1 s doubling to 10 s) and is tried again once its backoff has passed and the cluster has changed
 * in a way that may let it fit (a node, a capacity pod, a pod that leaves), or after 30 s anyway.
 *
 * Snapshot. Every node, and every pod's CPU and memory on it (the default scheduler places other
 * pods on the same nodes); a GPU exists for fracgpu once a capacity pod holding it is Running and
 * its holder has reported the GPU's UUID and memory. See adapter_int.h for how charges follow pods.
 *
 * Cycle. The core's framework with the built-in filters and fracgpu's online placement policy; a
 * placement counts at once (kube-scheduler's assume cache), is confirmed by the watch, and is
 * forgotten if its write fails. One write per pod: the pods/binding subresource, carrying
 * fracgpu.io/gpu-uuid, gpu-index, capacity-pod and the grant (reconcilers/grant.h) signed with the
 * key of Secret fracgpu-grant-key. When the node's CPU or memory is held by a capacity pod's
 * reservation for its tenants, that capacity pod is first shrunk through pods/resize by what the
 * tenant needs; the tenant is bound only after the resize is accepted. A pod the kubelet then
 * rejects (OutOfcpu, UnexpectedAdmissionError) ends Failed and charges nothing; its controller makes
 * the next one.
 *
 * Capacity (capacity.c). When nothing fits, the pending pods with the same node-level signature are
 * packed by the same core into the fewest new GPUs, counting the capacity pods already on their way,
 * and a capacity pod is created for each GPU still missing: named after the first pod it is made for
 * (a retried create finds it there), with that pod's node selector, node affinity and tolerations, a
 * preferred pod affinity to nodes holding capacity pods already (held GPUs gather on few nodes, so an
 * autoscaler can remove the rest), PriorityClass fracgpu-capacity, `nvidia.com/gpu: 1`, and the CPU and memory of its tenants
 * reserved. The pods wait with PodScheduled=False, reason WaitingForCapacity (never Unschedulable,
 * which autoscalers would provision for a second time), and are tried again as soon as the
 * cluster changes. A capacity pod with no tenants is deleted
 * after the idle grace period, and never while it has one; a tenant whose capacity pod is gone,
 * failed or being deleted is evicted at once.
 *
 * Preemption (preempt.c). A pod that waited for capacity past the preemption delay evicts tenants
 * of lower priority from one GPU (Eviction API, a dry run first so that PodDisruptionBudgets are
 * honoured for all or none), and the room is nominated to it until they are gone.
 *
 * Consolidation (consolidate.c). Once a minute, when nothing waits, the first GPU whose tenants —
 * all of workloads under updateMode Auto — fit on the other GPUs is emptied: its capacity pod takes no
 * new tenant, its tenants are evicted (budgets honoured) and placed again by their controllers' new
 * pods, and the capacity pod goes.
 *
 * Restart. Nothing lives only in memory but a consolidation's drain: placements are the pods'
 * annotations, GPUs are the capacity pods, and reservations are the capacity pods' requests.
 */
#ifndef FG_SCHEDULER_ADAPTER_ADAPTER_H
#define FG_SCHEDULER_ADAPTER_ADAPTER_H

#include <stdint.h>

#include "base/err.h"
#include "operator/manager/manager.h"

struct fg_sa_opts {
    const char *ns;                 /* fracgpu's namespace: capacity pods, the grant key */
    const char *policy;             /* placement policy (policies/policy.h), default "fracgpu" */
    const char *image;              /* the capacity holder's image; NULL: this operator's own pod's image */
    const char *owner;              /* the Deployment that owns capacity pods (default fracgpu-operator) */
    const char *priority_class;     /* default fracgpu-capacity */
    uint64_t idle_grace_ms;         /* how long a capacity pod stays without tenants (default 5 min) */
    uint64_t group_timeout_ms;      /* how long a pod group's reserved members wait for the rest (default 60 s) */
    uint64_t preemption_delay_ms;   /* how long a pod waits for new capacity before it preempts (default 30 s) */
    uint64_t consolidation_interval_ms;   /* how often one GPU may be emptied onto the others (default 1 min; 0: never) */
};

#define FG_SA_OPTS_DEFAULT                                                                                   \
    { .ns = "fracgpu-system", .policy = "fracgpu", .owner = "fracgpu-operator",                             \
      .priority_class = "fracgpu-capacity", .idle_grace_ms = 5 * 60 * 1000, .group_timeout_ms = 60 * 1000,      \
      .preemption_delay_ms = 30 * 1000, .consolidation_interval_ms = 60 * 1000 }

/* Registers the scheduler with m: its informers (pods, nodes, the grant key's Secret), its handlers
 * and a leader-only runnable. */
enum fg_err fg_sa_setup(struct fg_manager *m, const struct fg_sa_opts *opts, char *errmsg) FG_MUST_USE;

#endif
