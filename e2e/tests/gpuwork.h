/*
 * gpuwork — a user's GPU workload opted into fracgpu, and its pods as its controller would create
 * them, for tests and benchmarks that run the real operator (operator_proc.h) with nothing else.
 *
 * A workload is a Deployment annotated fracgpu.io/automate=true, with its own fraction when one is
 * given (fracgpu.io/gpu-compute in milli and fracgpu.io/gpu-memory in MiB; none: whole GPUs) and its
 * template already carrying the label fracgpu.io/automate=true that the workload reconciler stamps,
 * plus the ReplicaSet a Deployment controller would make for it. No controller runs: the caller
 * creates the pods, each exactly as that ReplicaSet would (its owner reference, the template's
 * labels), with one container asking for its CPU, its memory and one whole `nvidia.com/gpu`. The
 * webhook finds the Deployment through the ReplicaSet, as on a real cluster, and mutates the pod
 * into a fracgpu-scheduler pod asking for `fracgpu.io/gpu-share`.
 *
 * The webhook reads workloads from the operator's caches: fg_gpuwork_wait_admitted waits until a
 * dry-run create of one of the workload's pods comes back mutated, after which real creates are.
 */
#ifndef FG_E2E_GPUWORK_H
#define FG_E2E_GPUWORK_H

#include <stdint.h>

#include "base/err.h"
#include "operator/kube/client.h"

struct fg_gpuwork {
    char ns[64];
    char name[64];
    char rs_name[96];
    char rs_uid[64];
};

/* Creates Deployment ns/name and its ReplicaSet. compute_milli 0: no fraction (whole GPUs), else
 * 1..1000 with memory_mib > 0. */
enum fg_err fg_gpuwork_create(struct fg_kube_client *c, const char *ns, const char *name, int compute_milli,
                              int64_t memory_mib, struct fg_gpuwork *out, char *errmsg) FG_MUST_USE;

/* Pod `name` of w as its ReplicaSet would create it, asking cpu_milli and mem_mib (caller puts). */
json_object *fg_gpuwork_pod(const struct fg_gpuwork *w, const char *name, int64_t cpu_milli, int64_t mem_mib);

/* Waits up to timeout_ms for a dry-run create of a pod of w to come back mutated. */
enum fg_err fg_gpuwork_wait_admitted(struct fg_kube_client *c, const struct fg_gpuwork *w, unsigned timeout_ms,
                                     char *errmsg) FG_MUST_USE;

#endif
