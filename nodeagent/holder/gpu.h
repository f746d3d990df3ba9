/*
 * gpu — which GPU this capacity pod holds, and how much of its memory tenants may have, from NVML.
 *
 * Never from the environment: NVIDIA_VISIBLE_DEVICES may be "void" (CDI and hardened installs), an
 * index, or absent. Inside the holder's container the runtime mounted the device nodes of exactly the
 * GPU the kubelet granted, and NVML enumerates exactly those, so one visible device is the answer;
 * none, or more than one, is an error that names what NVML showed (a container started outside
 * Kubernetes, a device plugin that handed out more than was asked for, a MIG strategy).
 *
 * Memory for tenants (the capacity pod's fracgpu.io/gpu-memory-mib) is
 *     total − reserved − overhead
 * where reserved is what the driver keeps for itself (nvmlDeviceGetMemoryInfo_v2's `reserved`: ECC,
 * page tables, the firmware's heap) and overhead is one CUDA context's device memory, which no
 * tenant's own measured usage pays for (the MPS server's context on an mps GPU). Drivers before 510
 * have no v2: v1's `used` then counts the reservation, and a GPU the holder just got has nothing else
 * on it, so total − free stands in for `reserved`; were a process already on it, that overstates the
 * reservation — the safe side, a bin never bigger than the GPU.
 *
 * Overhead: a context's own allocations (its local-memory stacks, the printf and malloc heaps, the
 * loaded modules of the CUDA libraries) come to roughly 250–500 MiB on current data-centre GPUs with
 * CUDA 12 — more with many SMs and eager module loading, less with CUDA_MODULE_LOADING=LAZY, the
 * default since 12.2 — so FG_HOLDER_OVERHEAD_MIB_DEFAULT takes the top of that range; the flag
 * --context-overhead-mib changes it for a fleet whose contexts were measured.
 */
#ifndef FG_NODEAGENT_HOLDER_GPU_H
#define FG_NODEAGENT_HOLDER_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "exporter/nvml.h"

#define FG_HOLDER_OVERHEAD_MIB_DEFAULT 500

struct fg_holder_gpu {
    nvmlDevice_t dev;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    uint64_t total_mib;
    uint64_t reserved_mib;      /* the driver's, from v2; or v1's total − free */
    bool reserved_from_v2;
    uint64_t usable_mib;        /* total − reserved − overhead; 0 when that is not positive */
    bool has_minor;
    unsigned minor;             /* /dev/nvidiaN on the host, when the driver says */
};

/* Finds the one GPU NVML shows and sizes it. FG_E_NOT_FOUND_LOCAL when it shows none,
 * FG_E_INVAL when it shows more than one (errmsg lists their UUIDs), FG_E_IO when an NVML call fails
 * (errmsg names the call and NVML's reason). */
enum fg_err fg_holder_gpu_discover(const struct fg_nvml *nv, uint64_t overhead_mib, struct fg_holder_gpu *gpu,
                                   char *errmsg) FG_MUST_USE;

#endif
