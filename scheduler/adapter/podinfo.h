/*
 * podinfo — what fracgpu's scheduler reads of one pod, read once per event and never from the API.
 *
 * The scheduler sees every pod of the cluster, since the default scheduler places other pods on the
 * nodes fracgpu packs. Of each it reads the node, its phase and CPU and memory requests (kube's
 * PodRequests: what the kubelet charges); of the pods it schedules (spec.schedulerName
 * fracgpu-scheduler) also the allocation the webhook wrote (podcontract.h: compute milli, memory MiB
 * or "whole", sharing, isolation, workload), priority, creation time, pod group and, once bound, the
 * GPU, its capacity pod and index; of capacity pods (FG_LABEL_ROLE in fracgpu's namespace) the GPU
 * and memory their holder reported and what they reserve for tenants.
 *
 * fg_sa_want_build turns a pending pod into the placement core's view (core/sched.h's
 * struct fg_sched_pod): node selector, required node affinity and tolerations with strings borrowed
 * from the pod's JSON tree, which the want keeps a reference to. Operators the core does not know
 * (Gt, Lt) and node affinity by field make the want fail with a reason: such a pod is not eligible
 * (the webhook never routes it here) and is reported Unschedulable rather than placed wrongly.
 *
 * The node-level signature (fg_sa_want.sig, and fg_sa_podinfo.signature of a movable pod) is a short hash of what decides which nodes and GPUs
 * a pod may use — node selector, node affinity, tolerations, sharing mode and, for dedicated
 * isolation, the workload — so that pods needing the same kind of new GPU are packed together and a
 * capacity pod on its way is counted for exactly the pods it can serve.
 */
#ifndef FG_SCHEDULER_ADAPTER_PODINFO_H
#define FG_SCHEDULER_ADAPTER_PODINFO_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "scheduler/core/sched.h"

#define FG_SA_SIG_LEN 16
/* What a capacity pod asks for itself, besides what it reserves for its tenants. */
#define FG_SA_HOLDER_CPU_MILLI 10
#define FG_SA_HOLDER_MEM_MIB 32

enum fg_sa_role {
    FG_SA_OTHER,        /* placed by another scheduler: charged to its node, nothing more */
    FG_SA_FRACGPU,      /* spec.schedulerName fracgpu-scheduler */
    FG_SA_CAPACITY,     /* a capacity pod in fracgpu's namespace */
};

struct fg_sa_podinfo {
    enum fg_sa_role role;
    const char *node;           /* spec.nodeName, NULL when unbound */
    const char *phase;          /* status.phase, "" when unset */
    bool terminal;              /* Succeeded or Failed: charges nothing */
    bool deleting;              /* metadata.deletionTimestamp */
    bool started;               /* status.startTime: the kubelet admitted it (a pod it refuses is Failed) */
    bool gated;                 /* spec.schedulingGates not empty */
    int64_t cpu_milli, mem_mib; /* requests */
    /* FG_SA_FRACGPU */
    int priority;
    bool never_preempts;        /* spec.preemptionPolicy Never */
    int64_t created_ms;
    bool has_gpu;               /* asks for FG_RES_GPU_SHARE */
    int milli;                  /* FG_ANN_COMPUTE_MILLI */
    int64_t gpu_mem_mib;        /* FG_ANN_MEMORY_MIB, 0 = whole */
    enum fg_sched_sharing sharing;
    enum fg_sched_isolation isolation;
    bool exclusive;             /* sharing "exclusive": dedicated to the pod itself */
    const char *workload;       /* FG_ANN_WORKLOAD */
    const char *group;          /* fracgpu.io/pod-group */
    int group_min;              /* fracgpu.io/pod-group-size */
    const char *cap_name;       /* FG_ANN_CAPACITY_POD once bound */
    const char *gpu_uuid;       /* FG_ANN_GPU_UUID once bound (capacity pods: the GPU held) */
    int gpu_index;              /* FG_ANN_GPU_INDEX once bound, -1 otherwise */
    const char *sched_reason;   /* reason of the PodScheduled condition, NULL without one */
    bool movable;               /* fracgpu may move it (consolidation): its workload's updateMode is Auto
                                   (FG_ANN_UPDATE_MODE), a controller makes it again, no pod group, not
                                   exclusive */
    char signature[FG_SA_SIG_LEN + 1];   /* a movable pod's node-level signature (as its want's), else "" */
    char problem[FG_ERRMSG_MAX]; /* why the allocation annotations cannot be used ("" when they can) */
    /* FG_SA_CAPACITY */
    bool cap_live;              /* Running, not being deleted, with the GPU and its memory reported */
    int64_t cap_gpu_mem_mib;    /* FG_ANN_GPU_MEMORY_MIB */
    int64_t reserved_cpu, reserved_mem_mib;   /* requests beyond the holder's own */
    const char *sig;            /* FG_ANN_SIGNATURE: the pods it was made for */
    const char *container;      /* its first container's name (the one resized) */
    bool resized;               /* the kubelet applied its CPU and memory requests (status equals spec) */
};

/* On a pod: gang scheduling. On a capacity pod: the node-level signature it serves. */
#define FG_ANN_POD_GROUP "fracgpu.io/pod-group"
#define FG_ANN_POD_GROUP_SIZE "fracgpu.io/pod-group-size"
#define FG_ANN_SIGNATURE "fracgpu.io/constraints"

/* Reads pod (borrowed; strings in *out borrow from it). cap_ns is fracgpu's namespace. */
void fg_sa_podinfo_read(json_object *pod, const char *cap_ns, struct fg_sa_podinfo *out);

/* A pending pod as the core sees it. */
struct fg_sa_want {
    struct fg_sched_pod pod;
    char sig[FG_SA_SIG_LEN + 1];
    json_object *json;                  /* the pod's tree, referenced: the strings below live in it */
    struct fg_sched_kv *selector;
    struct fg_sched_toleration *tolerations;
    struct fg_sched_term *terms;
    struct fg_sched_expr *exprs;
    const char **values;
    char *name;                         /* "ns/name" */
};

/* Builds w for pod (its tree referenced) whose podinfo is pi; gpu_mem_whole is what "whole" memory
 * asks for. FG_E_INVAL with the reason for a pod the core cannot place as asked (see the essay). */
enum fg_err fg_sa_want_build(json_object *pod, const struct fg_sa_podinfo *pi, int64_t gpu_mem_whole,
                             struct fg_sa_want *w, char *errmsg) FG_MUST_USE;
void fg_sa_want_cleanup(struct fg_sa_want *w);

/* A taint's or toleration's effect by name (enum fg_sched_effect); 0 for none or another. */
int fg_sa_effect(const char *name);

#endif
