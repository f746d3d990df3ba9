/*
 * eligibility — which pods fracgpu takes on, and why it leaves the others whole. No I/O.
 *
 * fracgpu's scheduler replaces kube-scheduler for the pods it takes, so it takes only those whose every
 * scheduling need it implements. A pod (or a workload's pod template: the same {metadata, spec} shape)
 * is eligible when exactly one of its containers asks for exactly one nvidia.com/gpu — requests and
 * limits agreeing, no init or sidecar container asking for any — and it uses nothing outside the
 * supported set (node selector, node affinity, taints and tolerations, priority, resources). Each of
 * these leaves it whole, with a named reason for the GPUWorkload's status:
 *   nodeName                   already bound: nothing to schedule
 *   schedulerName              addressed to a scheduler other than the default or fracgpu's
 *   podAffinity, podAntiAffinity, topologySpreadConstraints, hostPort, resourceClaims,
 *   schedulingGates            the scheduling features fracgpu's scheduler does not implement yet
 *   WaitForFirstConsumer       a volume whose StorageClass binds when a pod is scheduled
 *   multipleGPUs, gpuInInitContainer, gpuInSeveralContainers, gpuRequestMismatch, badGPUQuantity
 * The supported set grows by issue, never by accident.
 *
 * The StorageClass question needs the cluster's PVCs and classes; the caller answers it through
 * struct fg_storage_view, so this module stays pure.
 */
#ifndef FG_RECONCILERS_ELIGIBILITY_H
#define FG_RECONCILERS_ELIGIBILITY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* Answers about the pod's namespace's storage. Either callback may be NULL (then nothing waits). */
struct fg_storage_view {
    /* Whether PVC `claim` of the pod's namespace is in a WaitForFirstConsumer StorageClass. */
    bool (*claim_waits)(void *ctx, const char *claim);
    /* Whether StorageClass `storage_class` (NULL: the cluster's default class) is WaitForFirstConsumer:
     * for a generic ephemeral volume, whose claim does not exist before the pod. */
    bool (*class_waits)(void *ctx, const char *storage_class);
    void *ctx;
};

enum fg_gpu_ask {
    FG_GPU_NONE,        /* no container asks for nvidia.com/gpu: nothing for fracgpu to do */
    FG_GPU_ELIGIBLE,    /* container `index` asks for one GPU and fracgpu can place the pod */
    FG_GPU_WHOLE,       /* it asks for GPUs but stays whole: see reason and message */
};

struct fg_eligibility {
    enum fg_gpu_ask ask;
    size_t index;                   /* ELIGIBLE: the container in spec.containers */
    const char *reason;             /* WHOLE: one of the names above (static) */
    char message[FG_ERRMSG_MAX];    /* WHOLE: the detail ("container app asks for 2 nvidia.com/gpu") */
};

/* Judges `pod` (borrowed; a Pod or a pod template). `storage` may be NULL. */
void fg_eligibility_check(json_object *pod, const struct fg_storage_view *storage, struct fg_eligibility *out);

/* The nvidia.com/gpu (or, with `resource`, another extended resource) container c asks for, in
 * milli-units: requests when present, else limits, as kube defaults requests from limits. *milli is 0
 * when it asks for none. FG_E_PARSE naming the container when a value is not a quantity, FG_E_INVAL when
 * requests and limits disagree. */
enum fg_err fg_container_ask(json_object *c, const char *resource, int64_t *milli, char *errmsg) FG_MUST_USE;

#endif
