/*
 * podcontract — the names through which fracgpu's parts speak about a pod.
 *
 * The workload reconciler, the admission webhook, the scheduler, the device plugin and the users who
 * read `kubectl get pod -o yaml` meet on these labels, annotations and resource names (docs/admission.md:
 * pod mutation). A workload opts in with FG_KEY_AUTOMATE (annotation on the workload, label on its namespace);
 * the reconciler stamps the same key as a label into the pod template, where the webhook's
 * objectSelector sees it. A mutated pod carries FG_LABEL_MANAGED and the allocation annotations; a workload
 * chooses its own fraction with FG_ANN_GPU_COMPUTE / FG_ANN_GPU_MEMORY and its policy with FG_ANN_POLICY.
 * A capacity pod (FG_LABEL_ROLE = FG_ROLE_CAPACITY, in fracgpu-system) learns its GPU from NVML and
 * writes FG_ANN_GPU_UUID and FG_ANN_GPU_MEMORY_MIB onto itself (nodeagent/holder): the GPU it holds and
 * the MiB tenants may have of it. Every part uses these macros, never the strings.
 */
#ifndef FG_RECONCILERS_PODCONTRACT_H
#define FG_RECONCILERS_PODCONTRACT_H

/* Opting in: "true" / "false" on a workload (annotation) or a namespace (label); the template label. */
#define FG_KEY_AUTOMATE "fracgpu.io/automate"
/* On a workload: the GPUPolicy it uses, and a fixed fraction ("300" milli, "20Gi"). */
#define FG_ANN_POLICY "fracgpu.io/policy"
#define FG_ANN_GPU_COMPUTE "fracgpu.io/gpu-compute"
#define FG_ANN_GPU_MEMORY "fracgpu.io/gpu-memory"

/* On a mutated pod: the label, and the annotations that say what it was granted and why. */
#define FG_LABEL_MANAGED "fracgpu.io/managed"
#define FG_ANN_WORKLOAD "fracgpu.io/workload"
#define FG_ANN_COMPUTE_MILLI "fracgpu.io/compute-milli"
#define FG_ANN_MEMORY_MIB "fracgpu.io/memory-mib"
#define FG_ANN_SHARING "fracgpu.io/sharing"
#define FG_ANN_ISOLATION "fracgpu.io/isolation"
#define FG_ANN_ORIGINAL_REQUEST "fracgpu.io/original-request"
/* On a mutated pod: its workload's updateMode. "Auto" lets fracgpu move the pod (a roll, or
 * consolidation onto fewer GPUs); any other mode, never. */
#define FG_ANN_UPDATE_MODE "fracgpu.io/update-mode"
/* On a pod bound by fracgpu's scheduler (the Binding's annotations): the GPU it was placed on
 * (FG_ANN_GPU_UUID, below), its index on the node, the capacity pod holding that GPU, and the grant
 * that proves the placement (grant.h). */
#define FG_ANN_GPU_INDEX "fracgpu.io/gpu-index"
#define FG_ANN_CAPACITY_POD "fracgpu.io/capacity-pod"
#define FG_ANN_GRANT "fracgpu.io/grant"
/* On a pod template: when fracgpu last rolled the workload because pods missed the webhook. */
#define FG_ANN_RESTARTED_AT "fracgpu.io/restarted-at"

/* On a capacity pod: its role label, and what its holder reports — the GPU's UUID (which its tenants
 * carry too) and the memory
 * (MiB, decimal) left for tenants once the driver's reservation and a context's overhead are taken. On
 * an mps GPU the pod also carries FG_ANN_SHARING "mps" and the workload's per-pod FG_ANN_COMPUTE_MILLI
 * and FG_ANN_MEMORY_MIB, which its holder gives the MPS daemon as limits. */
#define FG_LABEL_ROLE "fracgpu.io/role"
#define FG_ROLE_CAPACITY "capacity"
#define FG_ANN_GPU_UUID "fracgpu.io/gpu-uuid"
#define FG_ANN_GPU_MEMORY_MIB "fracgpu.io/gpu-memory-mib"

/* The resource a whole-GPU pod asks for, the one fracgpu's device plugin serves instead, and the
 * scheduler that places mutated pods. */
#define FG_RES_NVIDIA_GPU "nvidia.com/gpu"
#define FG_RES_GPU_SHARE "fracgpu.io/gpu-share"
#define FG_SCHEDULER_NAME "fracgpu-scheduler"
#define FG_DEFAULT_SCHEDULER "default-scheduler"

#endif
